// A Type-3 memory expander: controller pipeline, DevLoad, DRAM media.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <memory>

#include "cxlcore/devices/dcoh.hpp"
#include "cxlcore/link/link.hpp"
#include "cxlcore/mem/dram.hpp"

namespace cxlcore {

class HostBridge;

// Logical devices one Type-3 device may hold (an MLD, CXL 2.0: up to 16).
constexpr uint32_t kMaxLds = 16;

struct DeviceStats {
    uint64_t reads = 0, writes = 0, mediaRetries = 0;
    uint64_t devLoad[4] = {0, 0, 0, 0};
    // Per logical device; index kMaxLds counts hosts whose LD the fabric manager unbound.
    uint64_t ldReads[kMaxLds + 1] = {}, ldWrites[kMaxLds + 1] = {};  // responses sent
    uint64_t ldDevLoad[kMaxLds + 1][4] = {};                           // the DevLoad each LD's responses carried
    uint64_t dcPoison[kMaxLds + 1] = {}, dcDropped[kMaxLds + 1] = {};  // reads and writes outside every extent
    uint64_t deniedReads = 0, deniedWrites = 0;  // from hosts with no LD bound: poison, dropped
};

class Type3Device final : public Component, public Requester, public MemEndpoint {
  public:
    Type3Device(Host& host, const DeviceParams& p, const DramParams& media, CxlLink& link, const std::string& where);
    // Names its queues (and its media's) in stall reports.
    void name(const std::string& n);
    // Fault injection (tests of the watchdog): no response after n (0: off).
    void stopAfter(uint64_t n) { stopAfter_ = n; }
    // The port at the link's host end (root port or switch port), which its responses go to.
    void attach(LinkReceiver* port) override { port_ = port; }
    // The next logical device goes to `host` (an SLD has one, for one host), with `qos`.
    void bind(uint8_t host, uint64_t window, const LdQos& qos) override;
    // Where each logical device's DPA range begins: far enough apart that no
    // window a host may decode reaches the next one, so LDs never share a line.
    static constexpr uint64_t kLdSpan = 1ull << 44;
    uint32_t boundLds() const { return nextLd_; }
    // Dynamic capacity (device.dynamic_capacity): host `host`'s LD gains or
    // loses the extent [start, start + bytes) of its DPA, as its host accepted
    // it; a ConfigError for an extent that overlaps one held, or a release of
    // what was not added.
    void addExtent(uint8_t host, uint64_t start, uint64_t bytes);
    void releaseExtent(uint8_t host, uint64_t start, uint64_t bytes);
    uint32_t ldOf(uint8_t host) const { return ldOf_[host]; }
    // The fabric manager (CXL 2.0 FM API, Bind/Unbind vPPB) binds logical
    // device `ld` to host `host`, which reaches the device and holds none of
    // its LDs, or unbinds the LD host `host` holds: until it is bound again,
    // the host's reads return poison and its writes are dropped (counted),
    // and no access of it reaches any LD's lines. A ConfigError for a binding
    // the device cannot make (an SLD, a busy LD, a host holding one already).
    void bindLd(uint8_t host, uint32_t ld);
    void unbindLd(uint8_t host);
    bool ldFree(uint32_t ld) const { return ld < p_.logical_devices && ldHost_[ld] == kFree; }
    bool holdsLd(uint8_t host) const { return host < kMaxHosts && (bound_ >> host & 1); }
    bool reaches(uint8_t host) const { return host < kMaxHosts && (reach_ >> host & 1); }
    uint32_t logicalDevices() const { return p_.logical_devices; }
    // The extents host `host`'s LD holds now, sorted [start, end) of its DPA.
    const std::vector<std::pair<uint64_t, uint64_t>>& extents(uint8_t host) const { return dc_[ldOf_[host]]; }
    // A shared device (device.shared): its coherency engine, made with the
    // run's pool (its snoops are messages like any other); else nullptr.
    void share(TxnPool& pool, uint64_t seed);
    Dcoh* dcoh() { return dcoh_.get(); }
    const Dcoh* dcoh() const { return dcoh_.get(); }
    bool dynamicCapacity() const { return p_.dynamic_capacity != 0; }
    const std::string& where() const { return where_; }
    // The unloaded time from the root port's send to the response's arrival
    // back at it (request flit out, response header and data flits back, the
    // controller both ways, a media row hit), ns: gem5's atomic mode.
    double idleLatencyNs() const;
    // A message from the link, fully received at `arrival`.
    void receive(Txn* t, Tick arrival) override;

    bool tryResp(Txn* t) override;
    void retryReq() override;

    DramController& media() { return media_; }
    const DramController& media() const { return media_; }
    const DeviceParams& params() const { return p_; }
    const DeviceStats& stats() const { return stats_; }
    std::string describe() const;  // its queues and coherency engine, for stall reports
    void resetStats(Tick now) {
        stats_ = DeviceStats();
        qosArea_ -= occ_.area(now);  // the QoS interval's part so far, on the restarted integral
        occ_.reset(now);
        media_.resetStats(now);
        if (dcoh_) dcoh_->resetStats();
    }
    double meanOccupancy(Tick s, Tick e) const { return occ_.mean(s, e); }
    void checkpoint(StateVisitor& v, const std::string& n) {
        v(n + ".outstanding", outstanding_);
        v(n + ".writes", writes_);
        v(n + ".mediaBlocked", mediaBlocked_[0]);
        v(n + ".mediaBlockedWrite", mediaBlocked_[1]);
        v(n + ".respRefused", respRefused_);
        v(n + ".qosStart", qosStart_);
        v(n + ".loadNow", load_);
        for (uint32_t i = 0; i < nextLd_; ++i) {
            v(n + ".qosCount" + std::to_string(i), qosCount_[i]);
            v(n + ".qosLast" + std::to_string(i), qosLast_[i]);
        }
        media_.checkpoint(v, n + ".media");
    }

  protected:
    void process() override;

  private:
    // The DevLoad of a response of logical device `ld` sent at t, which it counts.
    uint8_t devLoad(uint32_t ld, Tick t);

    DeviceParams p_;
    CxlLink& link_;
    DramController media_;
    LinkReceiver* port_ = nullptr;
    // The controller pipeline, one per M2S class (0: Req reads, 1: RwD
    // writes): the classes have their own channels and credits, so a write
    // waiting for a full media write queue does not hold up the reads.
    // The link's receive buffers, one per M2S class (Req, RwD), each with
    // its channel's credits: a write waiting for the write tracker holds
    // its RwD buffer and credit, and reads pass it.
    TimedFifo<Txn*> rx_[2], ctrl_[2], tx_;
    Tick reqLat_, respLat_;
    uint32_t outstanding_ = 0, writes_ = 0, writeCap_, loadAt_[3] = {0, 0, 0};
    bool mediaBlocked_[2] = {false, false}, respRefused_ = false;
    DeviceStats stats_;
    Occupancy occ_;
    uint64_t stopAfter_ = 0, sent_ = 0;
    const char* name_;  // its controller's name (<device>.device): trace spans carry it
    std::string where_;
    // Each host's logical device and where its DPA range begins (requests
    // arrive with offsets into it, and leave with them).
    // Unbound hosts (a device built without a graph) use LD 0.
    uint8_t ldOf_[kMaxHosts] = {};
    uint64_t ldBase_[kMaxHosts] = {};
    uint32_t nextLd_ = 0, bound_ = 0, reach_ = 0;  // bound_: bit h, host h has its LD; reach_: it reaches the device
    static constexpr uint8_t kFree = 0xff;
    uint8_t ldHost_[kMaxLds];  // the host each LD is bound to, or kFree
    // An MLD's requests carry their LD in the DPA's bits above kLdSpan
    // (index kMaxLds: an unbound host's, outside every LD).
    uint32_t ldOfAddr(uint64_t dpa) const { return p_.logical_devices > 1 ? uint32_t(dpa / kLdSpan) : 0; }
    // QoS telemetry (CXL 2.0), measured over intervals of qos_interval_ns,
    // each closed by the first response after its end: the device's load is
    // its mean occupancy over the last one (a refresh's burst of queueing
    // does not read as overload; occ_'s integral at the interval's start is
    // qosArea_), and each LD's completions in it, per
    // interval, are held against its limit and allocation of qosBasis_, the
    // completions the media could make in an interval at its peak.
    LdQos qos_[kMaxLds + 1];
    bool qosOn_ = false;
    Tick qosInterval_, qosStart_ = 0;
    uint8_t load_ = 0;
    double qosArea_ = 0;
    uint64_t qosCount_[kMaxLds + 1] = {}, qosLast_[kMaxLds + 1] = {};  // the last: per qosInterval_
    double qosBasis_;
    // Each LD's extents, sorted and disjoint [start, end) of its own DPA.
    // Outside them a read returns poison and a write is dropped; neither ever
    // reaches another LD's lines.
    std::vector<std::pair<uint64_t, uint64_t>> dc_[kMaxLds];
    // HDM-DB: the snoop filter, the hosts' BIRsps as they arrive, and
    // whether reads wait for it to release one (it holds all it can).
    std::unique_ptr<Dcoh> dcoh_;
    TimedFifo<Txn*> birsp_;
    bool readsHeld_ = false;
    void coherent(Tick t);
    void sendSnoops(Tick t);
    bool backed(uint32_t ld, uint64_t dpa) const;
    uint32_t ldOfHost(uint8_t host, const char* what) const;
};

}  // namespace cxlcore
