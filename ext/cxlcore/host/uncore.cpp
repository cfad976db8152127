#include "cxlcore/host/uncore.hpp"

#include <algorithm>

namespace cxlcore {

Uncore::Uncore(Host& host, const HostParams& p, Target* memory, Target* pageTables) : Component(host) {
    routes_[0].target = memory;
    nRoutes_ = 1;
    if (pageTables != memory) {
        routes_[1].target = pageTables;
        nRoutes_ = 2;
    }
    routes_[0].out.name("host.uncore (LLC miss path to memory)");
    routes_[1].out.name("host.uncore (LLC miss path to the page tables)");
    // A miss leaves the core once the LLC lookup has failed.
    reqLat_ = nsToTicks(p.llc_latency_ns + p.uncore_req_latency_ns);
    respLat_ = nsToTicks(p.uncore_resp_latency_ns);
}

bool Uncore::tryReq(Txn* t) {
    Route& r = routes_[(t->addr & kPageTableFlag) && nRoutes_ == 2 ? 1 : 0];
    t->addr &= ~kPageTableFlag;
    const Tick ready = std::max(t->birth, now()) + reqLat_;
    r.out.push(ready, t);
    if (!r.blocked) requestWake(ready);
    return true;
}

bool Uncore::tryResp(Txn* t) {
    // t->mark: when the response reaches the memory port; the core has it later.
    t->stage[kStageUncore] += respLat_;
    t->mark += respLat_;
    return up_->tryResp(t);  // cores always take their own responses
}

void Uncore::retryReq() {
    // A target that had no room calls this when it has, often from inside its
    // own process(): drain on a wake-up of our own at the same tick rather than
    // re-enter it with a request.
    for (int i = 0; i < nRoutes_; ++i) routes_[i].blocked = false;
    requestWake(now());
}

void Uncore::process() {
    const Tick t = now();
    Tick w = kNever;
    for (int i = 0; i < nRoutes_; ++i) {
        Route& r = routes_[i];
        while (!r.blocked && r.out.headReady() <= t) {
            Txn* x = r.out.front();
            x->leave(kStageUncore, t);
            if (!r.target->tryReq(x)) {
                r.blocked = true;
                break;
            }
            r.out.pop();
        }
        if (!r.blocked) w = std::min(w, r.out.headReady());
    }
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
