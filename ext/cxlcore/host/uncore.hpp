// The uncore: from a core's LLC miss to the memory port and back.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cxlcore/kernel/sim.hpp"
#include "cxlcore/config/params.hpp"
#include "cxlcore/host/page_tables.hpp"

namespace cxlcore {

// What the uncore counts for each window of the address map.
struct WindowStats {
    uint64_t reads = 0, writes = 0;
};

// From the cores' LLC misses to the memory targets and back: the LLC miss
// and the mesh/home-agent latency each way. Bounded by the cores' own MSHRs.
// Other agents of the host (the CXL.cache home agent) enter through inputs
// of their own, each with its own latency each way; every response goes
// back through the input its request came in by (Txn::route).
// Requests may be issued for a time in the future (a core reacting to a
// response that lands then), so each route is ordered by ready time; the
// response latency is added on the way through, without an event.
//
// The host physical address map: each request goes to the window holding its
// address (a small table sorted by base; one window needs one compare), and
// page-table reads (kPageTableFlag) to the local DRAM.
class Uncore : public Component, public Target, public Requester {
  public:
    Uncore(Host& host, const HostParams& p);
    // A window [base, end) served by `target`; `rebase`: the target sees
    // addresses relative to the base (a DRAM controller), else host physical
    // addresses (a host bridge decodes its own window). `path` names its
    // queue in stall reports. The first window is looked up first.
    // `full`: the stage a request is in while it waits because the target
    // has no room (a DRAM's full queue is media queueing, a host bridge's
    // full tracker is the host port's).
    // `home`: the target is the home agent of its lines on this socket (a
    // memory controller, a CXL host bridge), so a core's write is globally
    // observed once the target takes it (Requester::posted); a remote
    // socket's lines are homed across the inter-socket link, and a core's
    // write to them stays the core's until it completes.
    void addWindow(const std::string& name, const std::string& path, uint64_t base, uint64_t end, Target* target,
                   bool rebase, Stage full, bool home = true);
    // The host it belongs to: every request leaving it carries the number (Txn::host).
    void setHost(uint8_t h) { host_ = h; }
    // Where page-table reads go (after the windows: a target of its own is the last route).
    void setPageTables(Target* target);
    bool tryReq(Txn* t) override;  // t->birth: when the miss leaves the core (>= now)
    bool tryResp(Txn* t) override;
    void retryReq() override;
    Component* retrier() override { return this; }
    // Another input: a Target its agent sends requests to, whose responses
    // go to `agent` after `respNs`; requests take `reqNs` to reach memory.
    Target& addInput(Requester* agent, double reqNs, double respNs);

    const std::vector<WindowStats>& windowStats() const { return stats_; }
    void resetStats() { for (auto& s : stats_) s = WindowStats(); }

  protected:
    void process() override;

  private:
    class Input : public Target {
      public:
        Input(Uncore& u, uint8_t index, Tick req, Tick resp) : u_(u), index_(index), req_(req), resp_(resp) {}
        bool tryReq(Txn* t) override { return u_.accept(t, index_, req_); }
        Uncore& u_;
        uint8_t index_;
        Tick req_, resp_;
    };
    bool accept(Txn* t, uint8_t input, Tick reqLat);
    struct Route {
        Target* target = nullptr;
        TimedQueue<Txn*> out;
        bool blocked = false;
        Stage full = kStageUncore;  // where the wait for room in the target is counted
        bool home = false;          // the target is its lines' home agent (addWindow)
    };
    struct Window {
        uint64_t base, end, rebase;  // rebase: subtracted from the address (0 or base)
        uint32_t route, index;
        std::string name;
    };
    uint32_t routeOf(Target* t, Stage full);
    // A core's write to a home target: posted once the target takes it (Requester::posted).
    static bool postable(const Route& r, const Txn* t) { return r.home && t->route == 0 && !t->isRead(); }
    [[noreturn]] void outside(uint64_t addr) const;
    const Window& find(uint64_t addr) const {
        // The common case first: one window, or the address in the first.
        if (addr - windows_[0].base < windows_[0].end - windows_[0].base) return windows_[0];
        for (size_t i = 1; i < windows_.size(); ++i)
            if (addr - windows_[i].base < windows_[i].end - windows_[i].base) return windows_[i];
        outside(addr);
    }
    std::vector<Route> routes_;
    std::vector<Window> windows_;
    std::vector<WindowStats> stats_;
    uint32_t ptRoute_ = 0;
    uint8_t host_ = 0;
    Tick reqLat_, respLat_;
    std::vector<std::unique_ptr<Input>> inputs_;  // 1, 2, ...: input 0 is the cores' (this)
};

}  // namespace cxlcore
