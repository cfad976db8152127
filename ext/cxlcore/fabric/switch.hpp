// A CXL switch on the CXL.mem path: one upstream port (one virtual CXL
// switch bound to one host) and its downstream ports, each with a link to a
// Type-3 device or to a further switch. Requests are routed by the upstream
// port's HDM decoder (CXL 2.0 hierarchy-based routing), which interleaves the
// addresses it receives over the downstream ports.
//
// Every port has bounded queues and the links' credits, so a full egress
// queue holds requests in the upstream receive buffers (and their credits),
// and the upstream port, which every response crosses, is shared by all the
// devices below: its link is the narrowest point a flow through it sees.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cxlcore/fabric/hdm_decoder.hpp"
#include "cxlcore/link/link.hpp"

namespace cxlcore {

// A downstream port's share: requests it sent down, responses it sent up,
// and how long those responses waited for their turn (after the traversal).
struct PortStats {
    uint64_t requests = 0, responses = 0;
    Tick responseWait = 0;
};

struct SwitchStats {
    uint64_t requests = 0, responses = 0;
    uint64_t egressFull = 0;  // times a request waited because its downstream egress queue was full
    uint64_t creditWaits = 0;  // times a port had a message ready but no credit of its link
};

class CxlSwitch final : public Component, public MemEndpoint {
  public:
    // `up`: the link above the switch, whose M2S messages arrive here. The
    // switch decodes [0, window) of the addresses that arrive (the share of
    // the window the port above sends it).
    CxlSwitch(Host& host, const SwitchParams& p, const std::string& where, CxlLink& up, uint64_t window);
    // One downstream port with its link and what sits below it; the switch
    // does not own them. Its S2M receive buffer (port_queue entries) is a
    // credit the device takes per response, as at a root port.
    void addPort(CxlLink* link, MemEndpoint* below);
    // The decoder interleaves over the ports added so far: call once all are.
    void finish();

    void attach(LinkReceiver* up) override { upPort_ = up; }
    // An M2S request from the upstream link, fully received at `arrival`.
    void receive(Txn* t, Tick arrival) override;

    const std::string& where() const { return where_; }
    const SwitchStats& stats() const { return stats_; }
    uint32_t ports() const { return uint32_t(ports_.size()); }
    const PortStats& portStats(uint32_t i) const { return ports_[i]->stats; }
    void resetStats() {
        stats_ = SwitchStats();
        for (auto& p : ports_) p->stats = PortStats();
    }

  protected:
    void process() override;

  private:
    struct Port final : LinkReceiver {
        Port(CxlSwitch& s, uint32_t i) : sw(s), index(i) {}
        void receive(Txn* t, Tick arrival) override { sw.fromBelow(*this, t, arrival); }
        CxlSwitch& sw;
        uint32_t index;
        CxlLink* link = nullptr;
        MemEndpoint* below = nullptr;
        TimedFifo<Txn*> egress;  // M2S requests routed to this port, waiting for its link's credits
        TimedFifo<Txn*> in;      // S2M responses received, crossing the switch toward the upstream port
        uint32_t weight = 1;     // responses it may send in one turn of the arbiter
        PortStats stats;
    };
    void fromBelow(Port& p, Txn* t, Tick arrival);
    bool sendDown(Port& p, Txn* x, Tick t);
    bool sendUp(Txn* x, Tick t);
    // Sends what waits for the upstream link; true when it is left waiting for a credit.
    bool flushUp(Tick t);
    // Upstream receive buffers -> each port's egress, in arrival order per class.
    void route(Tick t);
    // Responses from the downstream ports onto the upstream egress queue, in turns.
    void arbitrate(Tick t);
    uint32_t next(uint32_t mask, uint32_t from) const;

    SwitchParams p_;
    std::string where_;
    const char* name_;
    CxlLink& up_;
    LinkReceiver* upPort_ = nullptr;
    uint64_t window_;
    std::unique_ptr<HdmDecoder> hdm_;
    std::vector<std::unique_ptr<Port>> ports_;
    TimedFifo<Txn*> usIn_[2];  // M2S receive buffers of the upstream port (Req, RwD), sized by its credits
    TimedFifo<Txn*> usOut_;    // S2M responses waiting for the upstream link
    Tick lat_;
    uint32_t rr_ = 0, grants_ = 0;  // the downstream port whose turn it is, and what is left of its turn
    // Ports whose `in` (bit i: port i) or egress queue holds something: each
    // wake-up visits only these, so idle ports cost nothing.
    uint32_t inBusy_ = 0, egBusy_ = 0;
    bool egressBlocked_[2] = {false, false};
    SwitchStats stats_;
};

}  // namespace cxlcore
