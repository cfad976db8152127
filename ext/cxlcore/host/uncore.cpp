#include "cxlcore/host/uncore.hpp"

#include <algorithm>
#include <sstream>

namespace cxlcore {

namespace {
// The name the uncore goes by in stall reports, and so in traces.
const char* const kName = "host.uncore";
}  // namespace

Uncore::Uncore(Host& host, const HostParams& p) : Component(host) {
    // A miss leaves the core once the LLC lookup has failed.
    reqLat_ = nsToTicks(p.llc_latency_ns + p.uncore_req_latency_ns);
    respLat_ = nsToTicks(p.uncore_resp_latency_ns);
}

uint32_t Uncore::routeOf(Target* t, Stage full) {
    for (size_t i = 0; i < routes_.size(); ++i)
        if (routes_[i].target == t) return uint32_t(i);
    routes_.emplace_back();
    routes_.back().target = t;
    routes_.back().full = full;
    return uint32_t(routes_.size() - 1);
}

void Uncore::addWindow(const std::string& name, const std::string& path, uint64_t base, uint64_t end,
                       Target* target, bool rebase, Stage full, bool home) {
    const size_t before = routes_.size();
    const uint32_t r = routeOf(target, full);
    routes_[r].home = home;
    if (routes_.size() > before) routes_[r].out.name("host.uncore (LLC miss path to " + path + ")");
    windows_.push_back(Window{base, end, rebase ? base : 0, r, uint32_t(windows_.size()), name});
    stats_.emplace_back();
}

void Uncore::setPageTables(Target* target) {
    const size_t before = routes_.size();
    ptRoute_ = routeOf(target, kStageMediaQueue);
    if (routes_.size() > before) routes_[ptRoute_].out.name("host.uncore (LLC miss path to the page tables)");
}

void Uncore::outside(uint64_t addr) const {
    std::ostringstream os;
    os << "address 0x" << std::hex << addr << " is outside every window of the host address map; windows:";
    for (size_t i = 0; i < windows_.size(); ++i)
        os << (i ? ", " : " ") << windows_[i].name << " [0x" << windows_[i].base << ", 0x" << windows_[i].end << ")";
    throw ConfigError(os.str());
}

Target& Uncore::addInput(Requester* agent, double reqNs, double respNs) {
    if (inputs_.size() >= 254) throw ConfigError("host.uncore: more than 254 agents besides the cores; allowed: at most 254 devices and windows on a host");
    inputs_.emplace_back(new Input(*this, uint8_t(inputs_.size() + 1), nsToTicks(reqNs), nsToTicks(respNs)));
    inputs_.back()->setRequester(agent);
    return *inputs_.back();
}

bool Uncore::tryReq(Txn* t) { return accept(t, 0, reqLat_); }

bool Uncore::accept(Txn* t, uint8_t input, Tick reqLat) {
    t->route = input;
    t->host = host_;
    uint32_t route;
    if (t->addr & kPageTableFlag) {
        t->addr &= ~kPageTableFlag;
        route = ptRoute_;
    } else {
        const Window& w = find(t->addr);
        t->addr -= w.rebase;
        route = w.route;
        ++(t->isRead() ? stats_[w.index].reads : stats_[w.index].writes);
    }
    Route& r = routes_[route];
    const Tick ready = std::max(t->birth, now()) + reqLat;
    // Nothing ahead and no latency to add (the home agent's own pipeline is
    // its whole cost): the target sees it at once, as a direct port would.
    if (ready == now() && r.out.empty() && !r.blocked) {
        t->leave(kStageUncore, ready, kName);
        const bool post = postable(r, t);
        if (r.target->tryReq(t)) {
            if (post) up_->posted(t, now() + respLat_);
            return true;
        }
        r.blocked = true;
    }
    r.out.push(ready, t);
    if (!r.blocked) requestWake(ready);
    return true;
}

bool Uncore::tryResp(Txn* t) {
    // t->mark: when the response reaches the memory port; the agent has it later.
    if (t->route) {
        const Input& in = *inputs_[t->route - 1];
        t->leave(kStageUncore, t->mark + in.resp_, kName);
        return in.requester()->tryResp(t);  // agents take responses as they come
    }
    t->leave(kStageUncore, t->mark + respLat_, kName);
    return up_->tryResp(t);  // cores always take their own responses
}

void Uncore::retryReq() {
    // A target that had no room calls this when it has, often from inside its
    // own process(): drain on a wake-up of our own at the same tick rather than
    // re-enter it with a request.
    for (Route& r : routes_) r.blocked = false;
    requestWake(now());
}

void Uncore::process() {
    const Tick t = now();
    // A target that would have woken to call retryReq by now: its retry, taken here.
    bool retry = false;
    for (Route& r : routes_)
        if (r.blocked && r.target->retryAt() <= t) {
            r.target->retried();
            retry = true;
        }
    if (retry)
        for (Route& r : routes_) r.blocked = false;
    Tick w = kNever;
    for (Route& r : routes_) {
        while (!r.blocked && r.out.headReady() <= t) {
            Txn* x = r.out.front();
            // Past its ready time it waited for room in the target (a refused
            // try already closed its uncore stage).
            if (x->mark < r.out.headReady()) x->leave(kStageUncore, r.out.headReady(), kName);
            // Time it waited here for room in the target counts in the target's first
            // stage (as before); its span is on the uncore's track, where it waited.
            x->leave(r.full, t, kName);
            const bool post = postable(r, x);
            if (!r.target->tryReq(x)) {
                r.blocked = true;
                break;
            }
            r.out.pop();
            if (post) up_->posted(x, t + respLat_);
        }
        w = std::min(w, r.blocked ? r.target->retryAt() : r.out.headReady());
    }
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
