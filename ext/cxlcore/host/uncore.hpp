// The uncore: from a core's LLC miss to the memory port and back.
#pragma once

#include "cxlcore/kernel/sim.hpp"
#include "cxlcore/config/params.hpp"
#include "cxlcore/host/page_tables.hpp"

namespace cxlcore {

// From the cores' LLC misses to the memory targets and back: the LLC miss
// and the mesh/home-agent latency each way. Bounded by the cores' own MSHRs.
// Requests may be issued for a time in the future (a core reacting to a
// response that lands then), so each route is ordered by ready time; the
// response latency is added on the way through, without an event.
class Uncore : public Component, public Target, public Requester {
  public:
    Uncore(Host& host, const HostParams& p, Target* memory, Target* pageTables);
    bool tryReq(Txn* t) override;  // t->birth: when the miss leaves the core (>= now)
    bool tryResp(Txn* t) override;
    void retryReq() override;

  protected:
    void process() override;

  private:
    struct Route {
        Target* target = nullptr;
        TimedQueue<Txn*> out;
        bool blocked = false;
    };
    Route routes_[2];
    int nRoutes_;
    Tick reqLat_, respLat_;
};

}  // namespace cxlcore
