// A CXL switch on the CXL.mem path: upstream ports, each one virtual CXL
// switch bound to the hosts that reach the switch through it, and downstream
// ports, each with a link to a Type-3 device or to a further switch. Every
// upstream port's virtual switch binds every downstream port (a multi-logical
// device below one gives each host a logical device of its own). Requests are
// routed by the upstream port's HDM decoder (CXL 2.0 hierarchy-based routing),
// which interleaves the addresses it receives over the downstream ports;
// responses go back up the port their host came by.
//
// Every port has bounded queues and the links' credits, so a full egress
// queue holds requests in the upstream receive buffers (and their credits),
// and an upstream port, which every response to its hosts crosses, is shared
// by all the devices below: its link is the narrowest point a flow through it
// sees. Upstream ports take turns at a full downstream egress queue, and
// downstream ports at the upstream ones (round-robin, or weighted by lanes).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cxlcore/fabric/hdm_decoder.hpp"
#include "cxlcore/link/link.hpp"

namespace cxlcore {

// The host-to-device channels of CXL.mem, which are also their indices (kM2SReq, kM2SRwD, kM2SBIRsp).
constexpr int kM2SChannels = 3;
static_assert(kM2SReq == 0 && kM2SRwD == 1 && kM2SBIRsp == 2, "M2S channels index the switch's queues");

// A downstream port's share: requests it sent down, responses it sent up,
// and how long those responses waited for their turn (after the traversal).
struct PortStats {
    uint64_t requests = 0, responses = 0;
    Tick responseWait = 0;
    Tick backpressured = 0;  // time its egress held a message waiting for its link (egress_congestion only)
};

// Egress-port congestion (SwitchParams::egress_congestion): how long a port's
// egress queue held something over the current interval. The switch queues a
// message only when its link has no credit for it (or one queued before it
// waits), so a non-empty egress queue is a backpressured port.
struct Backpressure {
    Tick since = kNever, busy = 0;  // the current stretch's start (kNever: empty), the interval's sum before it
    uint8_t level = 0;              // the DevLoad floor the last closed interval set (0, 2 or 3)
    void start(Tick t) {
        if (since == kNever) since = t;
    }
    void stop(Tick t, PortStats& s, Tick statsFrom) {
        if (since == kNever) return;
        busy += t - since;
        s.backpressured += t - std::max(since, statsFrom);
        since = kNever;
    }
    // Its backpressured time since `statsFrom`, the stretch under way included.
    Tick total(const PortStats& s, Tick t, Tick statsFrom) const {
        return s.backpressured + (since == kNever ? 0 : t - std::max(since, statsFrom));
    }
    // Closes the interval [from, t): its backpressured share against the thresholds.
    void close(Tick from, Tick t, double moderate, double severe, PortStats& s, Tick statsFrom) {
        if (since != kNever) {
            busy += t - since;
            s.backpressured += t - std::max(since, statsFrom);
            since = t;
        }
        const double f = double(busy) / double(t - from);
        level = f >= severe ? 3 : f >= moderate ? 2 : 0;
        busy = 0;
    }
};

struct SwitchStats {
    uint64_t requests = 0, responses = 0;
    uint64_t egressFull = 0;  // times a request waited because its downstream egress queue was full
    uint64_t creditWaits = 0;  // times a port had a message ready but no credit of its link
    uint64_t devLoadRaised = 0;  // responses whose DevLoad egress congestion raised (egress_congestion)
    // Requests no decoder committed at its upstream port covers (routing by committed decoders only):
    // reads answered with all ones (or poison), writes dropped, by the switch itself.
    uint64_t unroutedReads = 0, unroutedWrites = 0, poisoned = 0;
};

class CxlSwitch final : public Component {
  public:
    CxlSwitch(Host& host, const SwitchParams& p, const std::string& where);
    // One downstream port with its link and what sits below it; the switch
    // does not own them. Its S2M receive buffer (port_queue entries) is a
    // credit the device takes per response, as at a root port.
    void addPort(CxlLink* link, MemEndpoint* below);
    // An upstream port with the link above it, whose M2S messages arrive
    // there; `name` is what its queues are called. Add every downstream port first.
    MemEndpoint& addUpstream(CxlLink& link, const std::string& name);

    // Port-based routing: the graph port each role sits on (its name in the
    // stats), a host edge's PID, and the tables routing by PID. `devices`
    // are the fabric's devices in the order every host's decoder interleaves
    // over them, `devicePids` their PIDs; `toPort[pid]` is the downstream
    // role requests to that PID leave by, `toUsp[pid]` the upstream role
    // responses to it leave by.
    struct PbrTables {
        std::vector<MemEndpoint*> devices;
        std::vector<uint16_t> devicePids;
        std::vector<uint8_t> devIndex, toPort, toUsp;  // by PID
    };
    void setPbr(PbrTables t) { pbr_ = std::make_unique<PbrTables>(std::move(t)); }
    void labelPort(uint32_t i, const std::string& label, int pid) {
        ports_[i]->label = label;
        ports_[i]->pid = pid;
    }
    void labelUpstream(uint32_t i, const std::string& label, int pid) {
        usps_[i]->label = label;
        usps_[i]->pid = pid;
    }
    bool portBased() const { return pbr_ != nullptr; }
    // Routes by the HDM decoders software committed at its upstream port
    // (one host, hierarchy-based routing) instead of its own interleave over
    // every downstream port; call before the first bind.
    void routeBy(std::unique_ptr<CommittedRoutes> r) { routes_ = std::move(r); }
    const CommittedRoutes* routes() const { return routes_.get(); }
    const std::string& portLabel(uint32_t i) const { return ports_[i]->label; }
    const std::string& upstreamLabel(uint32_t i) const { return usps_[i]->label; }
    int portPid(uint32_t i) const { return ports_[i]->pid; }
    int upstreamPid(uint32_t i) const { return usps_[i]->pid; }

    const std::string& where() const { return where_; }
    const SwitchStats& stats() const { return stats_; }
    uint32_t ports() const { return uint32_t(ports_.size()); }
    uint32_t upstreamPorts() const { return uint32_t(usps_.size()); }
    const PortStats& portStats(uint32_t i) const { return ports_[i]->stats; }
    const PortStats& upstreamStats(uint32_t i) const { return usps_[i]->stats; }
    const std::string& upstreamName(uint32_t i) const { return usps_[i]->name; }
    const CxlLink& upstreamLink(uint32_t i) const { return usps_[i]->link; }
    bool measuresCongestion() const { return cong_; }
    // Time downstream port i's egress (M2S) and upstream port i's (S2M) were backpressured since the stats began.
    Tick portBackpressure(uint32_t i) const { return ports_[i]->bp.total(ports_[i]->stats, now(), statsFrom_); }
    Tick upstreamBackpressure(uint32_t i) const { return usps_[i]->bp.total(usps_[i]->stats, now(), statsFrom_); }
    void resetStats() {
        statsFrom_ = now();
        stats_ = SwitchStats();
        for (auto& p : ports_) p->stats = PortStats();
        for (auto& u : usps_) u->stats = PortStats();
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
        // M2S messages routed to this port, waiting for its link's credits,
        // one queue per channel (Req, RwD, BIRsp): the channels make progress
        // independently, so a write-back or a snoop's answer never waits
        // behind the reads it would let go on.
        TimedFifo<Txn*> egress[kM2SChannels];
        TimedFifo<Txn*> in;      // S2M responses received, crossing the switch toward an upstream port
        uint32_t weight = 1;     // responses it may send in one turn of the arbiter
        std::string label;       // its graph port (port-based routing)
        int pid = -1;            // a device edge's PBR ID (-1: an inter-switch link)
        PortStats stats;
        Backpressure bp;         // of its egress queues (M2S, toward its device)
    };
    struct Usp final : MemEndpoint {
        Usp(CxlSwitch& s, uint32_t i, CxlLink& l) : sw(s), index(i), link(l) {}
        void attach(LinkReceiver* up) override { port = up; }
        void receive(Txn* t, Tick arrival) override { sw.fromAbove(*this, t, arrival); }
        void bind(uint8_t host, uint64_t window, const LdQos& qos) override { sw.bind(*this, host, window, qos); }
        CxlSwitch& sw;
        uint32_t index;
        CxlLink& link;
        LinkReceiver* port = nullptr;
        std::string name;
        uint64_t window = 0;
        std::unique_ptr<HdmDecoder> hdm;
        TimedFifo<Txn*> in[kM2SChannels];  // M2S receive buffers (Req, RwD, BIRsp), sized by the link's credits
        TimedFifo<Txn*> out;    // S2M responses waiting for the link
        bool blocked[kM2SChannels] = {};  // the class's head waits for a full egress queue
        uint32_t weight = 1;    // requests it may move in one turn at a downstream port
        std::string label;      // its graph port (port-based routing)
        int pid = -1;           // a host edge's PBR ID (port-based routing; -1: an inter-switch link)
        PortStats stats;        // requests it routed down, responses it sent up
        Backpressure bp;        // of `out` (S2M, toward its hosts)
    };
    void bind(Usp& u, uint8_t host, uint64_t window, const LdQos& qos);
    void bindPbr(Usp& u, uint8_t host, uint64_t window, const LdQos& qos);
    // Where a request at upstream port u goes: the downstream port, its address there, and its destination PID.
    struct Target {
        uint32_t port;
        uint64_t addr;
        uint16_t dpid;
    };
    Target target(const Usp& u, const Txn* t) const {
        if (routes_) {  // fromAbove answered what no committed decoder covers
            HdmDecoder::Target tg;
            routes_->route(t->addr, tg);
            return {tg.port, tg.dpa, 0};
        }
        if (!pbr_) {
            const HdmDecoder::Target tg = u.hdm->decode(t->addr);
            return {tg.port, tg.dpa, 0};
        }
        if (!u.hdm) return {pbr_->toPort[t->dpid], t->addr, t->dpid};  // from another switch: routed already
        const HdmDecoder::Target tg = u.hdm->decode(t->addr);
        const uint16_t d = pbr_->devicePids[tg.port];
        return {pbr_->toPort[d], tg.dpa, d};
    }
    void retarget(const Usp& u, Txn* t, const Target& tg) const {
        t->addr = tg.addr;
        if (pbr_ && u.hdm) {
            t->dpid = tg.dpid;
            t->spid = uint16_t(u.pid);
        }
    }
    void fromAbove(Usp& u, Txn* t, Tick arrival);
    // A request no committed decoder covers: answered here at `ready`, never sent down.
    void unrouted(Usp& u, Txn* t, Tick ready);
    void answerUnrouted(Tick t);
    void fromBelow(Port& p, Txn* t, Tick arrival);
    bool sendDown(Port& p, Txn* x, Tick t);
    bool sendUp(Usp& u, Txn* x, Tick t);
    // Sends what waits for each upstream link; sets `waiting` for those left waiting for a credit.
    void flushUp(Tick t);
    // Upstream receive buffers -> the downstream egress queues, the upstream ports in turns;
    // leaves usMin_ the earliest head still waiting (later than t, or kNever).
    void route(Tick t);
    // One request of u's down to its egress queue (false: none due, or each due class blocked);
    // moveOne also brings usHead_ up to date.
    bool moveOne(Usp& u, Tick t);
    bool moveHead(Usp& u, Tick t);
    // Upstream port u's earliest head of a class not blocked (kNever: none), as usHead_ keeps it.
    Tick headOf(const Usp& u) const {
        Tick h = kNever;
        for (int k = 0; k < kM2SChannels; ++k)
            if (!u.blocked[k]) h = std::min(h, u.in[k].headReady());
        return h;
    }
    // Responses from the downstream ports onto the upstream egress queues, in turns.
    void arbitrate(Tick t);
    uint32_t next(uint32_t mask, uint32_t from) const;
    // Egress congestion: the DevLoad a response from `p` to `u` leaves with
    // (at least the level of either port's backpressure over the last
    // interval), closing the interval when it has ended.
    void raiseDevLoad(Port& p, Usp& u, Txn* x, Tick t);
    void closeCongestionInterval(Tick t);

    SwitchParams p_;
    std::string where_;
    const char* name_;
    std::vector<std::unique_ptr<Port>> ports_;
    std::vector<std::unique_ptr<Usp>> usps_;
    uint8_t hostUsp_[kMaxHosts];  // the upstream port each host's responses go back by
    Tick lat_;
    uint32_t rr_ = 0, grants_ = 0;    // the downstream port whose turn it is, and what is left of its turn
    uint32_t urr_ = 0, ugrants_ = 0;  // the same for the upstream ports at the egress queues
    // Ports whose `in` (bit i: port i) or egress queue holds something: each
    // wake-up visits only these, so idle ports cost nothing.
    uint32_t inBusy_ = 0, egBusy_ = 0;
    // Upstream ports whose receive buffers hold something, and those waiting for a credit of their link.
    uint32_t usBusy_ = 0, usWaiting_ = 0;
    // Each upstream port's headOf(), kept as its buffers and blocked classes
    // change: a wake-up reads one word a busy port to find those due, where a
    // scan of every port's three classes was most of the top switch's cost
    // with 16 hosts.
    Tick usHead_[32];
    Tick usMin_ = kNever;  // the earliest of usHead_ (every port not busy holds kNever)
    // Each downstream port's in.headReady(), kept as responses arrive and
    // leave: the arbiter's and the wake-up's scans read one array, not each port.
    Tick inHead_[32];
    uint32_t outBusy_ = 0;  // upstream ports whose S2M queue holds responses
    uint32_t allUsps_ = 0;  // a bit for each upstream port
    SwitchStats stats_;
    std::unique_ptr<PbrTables> pbr_;  // routing = pbr
    std::unique_ptr<CommittedRoutes> routes_;  // decoders software committed at the upstream port
    TimedQueue<Txn*> unrouted_;  // completions of requests no committed decoder covers
    bool cong_ = false;  // egress_congestion
    Tick congInterval_ = 0, congStart_ = 0, statsFrom_ = 0;
};

}  // namespace cxlcore
