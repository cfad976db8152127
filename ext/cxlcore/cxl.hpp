// CXL.mem path: host bridge with HDM decoding over root ports, and a Type-3
// memory expander (controller pipeline, DevLoad, DRAM media).
#pragma once

#include <memory>
#include <vector>

#include "dram.hpp"
#include "link.hpp"

namespace cxlcore {

// Host-managed device memory decoder: a host window interleaved over root
// ports at a granularity, with the 3/6/12-way modes CXL allows.
class HdmDecoder {
  public:
    HdmDecoder(uint64_t base, uint32_t ways, uint32_t granularity);
    struct Target {
        uint32_t port;
        uint64_t dpa;
    };
    Target decode(uint64_t hpa) const {
        uint64_t off = hpa - base_;
        uint64_t chunk = off / gran_;
        return Target{uint32_t(chunk % ways_), (chunk / ways_) * gran_ + off % gran_};
    }
    uint64_t encode(uint32_t port, uint64_t dpa) const {
        return base_ + ((dpa / gran_) * ways_ + port) * gran_ + dpa % gran_;
    }

  private:
    uint64_t base_;
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
};

struct BridgeStats {
    uint64_t reads = 0, writes = 0, refused = 0;
};

class HostBridge : public Component, public Target {
  public:
    HostBridge(Host& host, const BridgeParams& p, const std::string& where);
    // One root port with its link and device; the bridge does not own them.
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
    Tick reqLat_, respLat_;
    CreditPool tracker_;  // requests outstanding to CXL
    bool needRetry_ = false, respBlocked_ = false;
    BridgeStats stats_;
};

}  // namespace cxlcore
