// A CXL switch below a home agent's root port, carrying CXL.cache (CXL 3.x:
// up to 16 CXL.cache devices share one root port, each with its CacheID),
// and the Type-2 devices' CXL.mem and DMA engines' CXL.io with it.
//
// Messages toward the devices (H2D, M2S, CXL.io down) are routed to the
// downstream port of the device they are for: its CacheID, which the home
// gives each as Txn::dev (for CXL.mem to a Type-2 device's memory the home
// picked that device by its address, as a decoder would). Messages from the
// devices go up. Each crossing costs the switch's latency_ns, and a message
// keeps its receive buffer (its credit of the link it came by) until it
// leaves: each downstream port's egress queue waits for its link's credits
// in order (the home's order to one device is kept), and the upstream
// egress waits for the upstream link's, one queue per channel, so every
// device's traffic shares the upstream link's flits and credits.
#pragma once

#include <string>
#include <vector>

#include "cxlcore/coherence/wire.hpp"
#include "cxlcore/fabric/switch.hpp"

namespace cxlcore {

class CacheSwitch final : public Endpoint {
  public:
    // `up`: the link from the home's root port (the caller sets its
    // credits); `home`: what receives from it.
    CacheSwitch(Host& host, const SwitchParams& p, CxlLink& up, Endpoint& home, const std::string& where);
    // Downstream port `port` (in index order) with its link and the device
    // whose CacheID is `dev`.
    void addPort(CxlLink& link, Endpoint& device, uint16_t dev);

    const std::string& where() const { return where_; }
    uint32_t ports() const { return uint32_t(ports_.size()); }
    const SwitchStats& stats() const { return stats_; }
    // Downstream port i's share (requests: messages it sent down, responses:
    // messages from its device it sent up), and the upstream port's.
    const PortStats& portStats(uint32_t i) const { return ports_[i].stats; }
    const PortStats& upstreamStats() const { return upStats_; }
    bool quiet() const;
    // The oldest request a message it holds serves (stall reports).
    void oldest(Oldest& o) const;
    void resetStats() {
        stats_ = SwitchStats();
        upStats_ = PortStats();
        for (Port& p : ports_) p.stats = PortStats();
    }

  protected:
    void process() override;

  private:
    struct Port {
        CxlLink* link;
        Endpoint* device;
        TimedQueue<Txn*> egress;  // toward the device, in the home's order
        PortStats stats;
    };
    void arrive(Txn* m, Tick arrival);
    SwitchParams p_;
    std::string where_;
    const char* name_;
    CxlLink& up_;
    Endpoint& home_;
    Tick lat_;
    std::vector<Port> ports_;
    std::vector<int> portOf_;                // CacheID -> downstream port
    TimedQueue<Txn*> upEgress_[kNumChannels];  // toward the home, one queue per channel
    PortStats upStats_;
    SwitchStats stats_;
};

}  // namespace cxlcore
