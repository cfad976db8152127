// CXL.mem path: host bridge with HDM decoding over root ports, and a Type-3
// memory expander (controller pipeline, DevLoad, DRAM media).
#pragma once

#include <memory>
#include <vector>

#include "dram.hpp"
#include "link.hpp"

namespace cxlcore {

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
    HdmDecoder(uint64_t base, uint64_t size, uint32_t ways, uint32_t granularity);
    struct Target {
        uint32_t port;
        uint64_t dpa;
    };
    bool contains(uint64_t hpa) const { return hpa >= base_ && hpa - base_ < size_; }
    // An address outside the window is a configuration error (a trace or a
    // host map that sends it here), not a device access.
    Target decode(uint64_t hpa) const {
        if (!contains(hpa)) outside(hpa);
        uint64_t off = hpa - base_;
        uint64_t chunk = off / gran_;
        return Target{uint32_t(chunk % ways_), (chunk / ways_) * gran_ + off % gran_};
    }
    uint64_t encode(uint32_t port, uint64_t dpa) const {
        return base_ + ((dpa / gran_) * ways_ + port) * gran_ + dpa % gran_;
    }
    uint64_t base() const { return base_; }
    uint64_t size() const { return size_; }

  private:
    [[noreturn]] void outside(uint64_t hpa) const;
    uint64_t base_, size_;
    uint32_t ways_, gran_;
};

class HostBridge;

struct DeviceStats {
    uint64_t reads = 0, writes = 0, mediaRetries = 0;
    uint64_t devLoad[4] = {0, 0, 0, 0};
};

class Type3Device : public Component, public Requester {
  public:
    Type3Device(Host& host, const DeviceParams& p, const DramParams& media, CxlLink& link, const std::string& where);
    // Names its queues (and its media's) in stall reports.
    void name(const std::string& n);
    // Fault injection (tests of the watchdog): no response after n (0: off).
    void stopAfter(uint64_t n) { stopAfter_ = n; }
    void attach(HostBridge* bridge, uint32_t port) {
        bridge_ = bridge;
        port_ = port;
    }
    // A message from the link, fully received at `arrival`.
    void deliver(Txn* t, Tick arrival);

    bool tryResp(Txn* t) override;
    void retryReq() override;

    DramController& media() { return media_; }
    const DeviceStats& stats() const { return stats_; }
    void resetStats(Tick now) {
        stats_ = DeviceStats();
        occ_.reset(now);
        media_.resetStats(now);
    }
    double meanOccupancy(Tick s, Tick e) const { return occ_.mean(s, e); }
    void checkpoint(StateVisitor& v, const std::string& n) {
        v(n + ".outstanding", outstanding_);
        v(n + ".mediaBlocked", mediaBlocked_[0]);
        v(n + ".mediaBlockedWrite", mediaBlocked_[1]);
        v(n + ".respRefused", respRefused_);
        media_.checkpoint(v, n + ".media");
    }

  protected:
    void process() override;

  private:
    uint8_t devLoad() const;

    DeviceParams p_;
    CxlLink& link_;
    DramController media_;
    HostBridge* bridge_ = nullptr;
    uint32_t port_ = 0;
    // The controller pipeline, one per M2S class (0: Req reads, 1: RwD
    // writes): the classes have their own channels and credits, so a write
    // waiting for a full media write queue does not hold up the reads.
    TimedFifo<Txn*> rx_, ctrl_[2], tx_;
    Tick reqLat_, respLat_;
    uint32_t outstanding_ = 0, loadAt_[3] = {0, 0, 0};
    bool mediaBlocked_[2] = {false, false}, respRefused_ = false;
    DeviceStats stats_;
    Occupancy occ_;
    uint64_t stopAfter_ = 0, sent_ = 0;
};

struct BridgeStats {
    uint64_t reads = 0, writes = 0, refused = 0;
};

class HostBridge : public Component, public Target {
  public:
    // The host window it decodes; by default [0, HdmDecoder::kMaxWindow).
    HostBridge(Host& host, const BridgeParams& p, const std::string& where, uint64_t windowBase = 0,
               uint64_t windowSize = HdmDecoder::kMaxWindow);
    // One root port with its link and device; the bridge does not own them.
    // Its response buffer (resp_queue entries) is a credit the device takes
    // for each response it sends, returned when the host takes the response.
    void addPort(CxlLink* link, Type3Device* dev);

    bool tryReq(Txn* t) override;
    void retryResp() override;
    // A response from port `port`, fully received at `arrival`.
    void deliverResp(uint32_t port, Txn* t, Tick arrival);

    const HdmDecoder& decoder() const { return hdm_; }
    const BridgeStats& stats() const { return stats_; }
    void resetStats() { stats_ = BridgeStats(); }
    void checkpoint(StateVisitor& v, const std::string& n) {
        tracker_.checkpoint(v, n + ".tracker");
        v(n + ".needRetry", needRetry_);
        v(n + ".respBlocked", respBlocked_);
    }

  protected:
    void process() override;

  private:
    struct Port {
        CxlLink* link;
        Type3Device* dev;
        TimedFifo<Txn*> out, in;
        uint32_t targetPortIndex;
    };
    bool respond(Port& p, Txn* x, Tick ready);
    bool send(Port& p, Txn* x, Tick at);

    BridgeParams p_;
    HdmDecoder hdm_;
    std::vector<std::unique_ptr<Port>> ports_;
    std::string where_;
    Tick reqLat_, respLat_;
    CreditPool tracker_;  // requests outstanding to CXL
    bool needRetry_ = false, respBlocked_ = false;
    BridgeStats stats_;
};

}  // namespace cxlcore
