// Host-managed device memory (HDM) decoding: a host window interleaved over
// root ports.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cxlcore {
namespace cxlio {
struct CommittedDecoder;
}

// Host-managed device memory decoder: the host window [base, base + size)
// interleaved over root ports at a granularity, with the 3/6/12-way modes CXL
// allows. The way is the chunk index modulo the ways, which is the
// specification's rule: for 3 x 2^k ways, HPA[IG+8+k-1 : IG+8] picks within a
// group of 2^k and HPA[51 : IG+8+k] modulo 3 picks the group.
class HdmDecoder {
  public:
    // The whole physical address space a 52-bit host can address: the
    // standalone engine's window, where nothing else shares the map.
    static constexpr uint64_t kMaxWindow = 1ull << 52;
    // The way counts CXL's decoders allow (1, 2, 4, 8, 16 and 3, 6, 12), as words for messages.
    static bool waysAllowed(uint64_t ways) { return ways && ways <= 16 && (0x1115Eull >> ways & 1); }
    static constexpr const char* kWaysAllowed = "1, 2, 3, 4, 6, 8, 12 or 16";
    // What each of `ways` ports receives of [0, window) interleaved at `gran`.
    static uint64_t share(uint64_t window, uint64_t ways, uint64_t gran) {
        return (window / (ways * gran) + (window % (ways * gran) != 0)) * gran;
    }
    // `where`: the bridge or switch it decodes for, as its errors name it.
    HdmDecoder(const std::string& where, uint64_t base, uint64_t size, uint32_t ways, uint32_t granularity);
    struct Target {
        uint32_t port;
        uint64_t dpa;
    };
    bool contains(uint64_t hpa) const { return hpa >= base_ && hpa - base_ < size_; }
    // An address outside the window is a configuration error (a trace or a
    // host map that sends it here), not a device access.
    // Every request decodes once per bridge and switch on its path: the
    // granularity is a power of two, and so are most way counts, so shifts
    // and masks stand in for divisions where they can.
    Target decode(uint64_t hpa) const {
        if (!contains(hpa)) outside(hpa);
        const uint64_t off = hpa - base_;
        const uint64_t chunk = off >> granShift_;
        const uint64_t row = waysShift_ >= 0 ? chunk >> waysShift_ : chunk / ways_;
        return Target{uint32_t(chunk - row * ways_), (row << granShift_) | (off & (gran_ - 1))};
    }
    uint64_t encode(uint32_t port, uint64_t dpa) const {
        return base_ + ((((dpa >> granShift_) * ways_ + port) << granShift_) | (dpa & (gran_ - 1)));
    }
    uint64_t base() const { return base_; }
    uint64_t size() const { return size_; }

  private:
    [[noreturn]] void outside(uint64_t hpa) const;
    uint64_t base_, size_;
    uint32_t ways_, gran_;
    int granShift_ = 0, waysShift_ = -1;  // log2 of each (-1: ways not a power of two)
};

// One host bridge HDM decoder as software committed it, with the decoder of
// the device below each of its ways (CXL 3.1 section 8.2.4.20): the bridge
// picks the way's root port, the device's decoder gives the DPA, its skip and
// the decoders before it plus the offset with the interleave bits removed.
// With no switch between them both levels decode the same ways and
// granularity, so one HdmDecoder does both steps.
//
// Below a switch the levels differ (Linux's cxl_port_setup_targets: each
// port's granularity is its parent's times the parent's ways), so a way may
// name the device decoder's own ways, granularity and the device's position
// in the region, which give the DPA; and a way whose port leads to a switch
// passes the host address on (kThrough), the switch decoding it in turn.
struct CommittedRegion {
    static constexpr uint64_t kThrough = ~0ull;
    uint64_t base = 0, size = 0;
    uint32_t ways = 1, granularity = 256;
    std::vector<uint32_t> ports;    // the root port (index in the bridge) of each way
    std::vector<uint64_t> dpaBase;  // where that way's device decoder begins in its DPA (or kThrough)
    // Per way, or empty: the device decoder's ways (0: this decoder's), granularity and the device's position.
    std::vector<uint32_t> dpaWays, dpaGranularity, position;
};

// What root port number `n` of a host bridge leads to: its index among the
// bridge's ports and the decoders the Type-3 device there committed.
struct RootPortDecoders {
    uint32_t index = 0;
    const std::vector<cxlio::CommittedDecoder>* device = nullptr;
    bool through = false;  // a switch with committed decoders sits there: the host address goes on
};

// The regions a host bridge routes by: each committed bridge decoder every way
// of which reaches a device decoder mapping exactly its range with the same
// ways and granularity (CXL 3.1 section 8.2.4.20; others route nowhere), moved
// down by `offset` for a bridge addressed by offsets into its window.
// `below(n, out)` is false where the bridge has no root port number n.
std::vector<CommittedRegion> committedRegions(const std::vector<cxlio::CommittedDecoder>& bridge,
                                              const std::function<bool(uint32_t, RootPortDecoders&)>& below,
                                              uint64_t offset = 0);

// The regions a switch's upstream port routes by: each committed decoder of
// `usp` every target of which reaches a device decoder mapping the same range
// (or, `through`, a switch below with decoders of its own), moved down by
// `offset` as committedRegions. `place(d, positions)` gives each way's device
// its position in the region (for the address of responses), or is false
// where no decoder above reaches `d` (it then routes nowhere).
std::vector<CommittedRegion> switchCommittedRegions(
    const std::vector<cxlio::CommittedDecoder>& usp, const std::function<bool(uint32_t, RootPortDecoders&)>& below,
    const std::function<bool(const cxlio::CommittedDecoder&, std::vector<uint32_t>&)>& place, uint64_t offset = 0);

// The position in its region of the device below way `way` of switch decoder
// `usp`, the switch being below root port number `rootPort` of host bridge
// decoder `bridge`, the device decoding `device` (the region's ways and
// granularity): the region-level chunk among the first `device.ways` that both
// decoders send there. False if none does (the decoders disagree).
bool positionBelowSwitch(const cxlio::CommittedDecoder& bridge, uint32_t rootPort, const cxlio::CommittedDecoder& usp,
                         uint32_t way, const cxlio::CommittedDecoder& device, uint32_t& position);

// The regions of a switch right below root port number `rootPort` of a host
// bridge whose committed decoders are `bridge`: switchCommittedRegions over
// the switch's upstream decoders `usp`, downstream port n leading to a Type-3
// device whose committed decoders are devices[n], each placed by
// positionBelowSwitch.
std::vector<CommittedRegion> switchRegionsBelowBridge(const std::vector<cxlio::CommittedDecoder>& bridge,
                                                      uint32_t rootPort,
                                                      const std::vector<cxlio::CommittedDecoder>& usp,
                                                      const std::vector<std::vector<cxlio::CommittedDecoder>>& devices,
                                                      uint64_t offset = 0);

// A host bridge's routes by its committed decoders. An address none of them
// covers routes nowhere: the bridge answers it itself (HostBridge::unrouted).
class CommittedRoutes {
  public:
    CommittedRoutes(const std::string& where, const std::vector<CommittedRegion>& regions, bool poison);
    bool route(uint64_t hpa, HdmDecoder::Target& out) const {
        for (const Region& r : r_)
            if (r.hdm.contains(hpa)) {
                out = r.hdm.decode(hpa);
                const Way& w = r.way[out.port];
                out.port = w.port;
                if (w.dpaBase == CommittedRegion::kThrough) out.dpa = hpa;
                else out.dpa = w.dpaBase + (w.dev ? w.dev->decode(hpa).dpa : out.dpa);
                return true;
            }
        return false;
    }
    // Whether route() would find a decoder for `hpa`, without decoding it.
    bool covers(uint64_t hpa) const {
        for (const Region& r : r_)
            if (r.hdm.contains(hpa)) return true;
        return false;
    }
    // The host address of a response from root port (or downstream port) `port` at `dpa`.
    uint64_t hpaOf(uint32_t port, uint64_t dpa) const;
    // Poison On Decode Error Enable (HDM Decoder Global Control bit 0): an
    // unrouted read answers poison rather than all ones.
    bool poison() const { return poison_; }
    // What the bridge or switch answers for a request none of them covers
    // (CXL 3.1 section 8.2.4.20.2): a read gets poison when software enabled
    // it, all ones otherwise; a write is dropped. Counted in `c`.
    template <class Txn, class Counts>
    void answerUnrouted(Txn* t, Counts& c) const {
        if (t->isRead()) {
            ++c.unroutedReads;
            c.poisoned += poison_;
            t->value = ~uint64_t(0);
        } else {
            ++c.unroutedWrites;
        }
    }

  private:
    struct Way {
        uint32_t port = 0, pos = 0;
        uint64_t dpaBase = 0, dpaSize = 0;
        std::shared_ptr<const HdmDecoder> dev;  // the device decoder's interleave, when not the region's
    };
    struct Region {
        HdmDecoder hdm;
        std::vector<Way> way;
    };
    std::vector<Region> r_;
    bool poison_;
};

}  // namespace cxlcore
