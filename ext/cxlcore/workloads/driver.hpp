// What the host-side workload generators share: a driver on a host's cores
// that issues misses into its uncore, and how a run reports what it moved.
// Internal to the workloads (memory.cpp, chase.cpp, mixed.cpp, trace.cpp).
#pragma once

#include <algorithm>
#include <string>

#include "cxlcore/kernel/stats.hpp"
#include "cxlcore/system/system.hpp"
#include "cxlcore/workloads/memory.hpp"

namespace cxlcore {
namespace memload {

// A stream's read latency under `k`: mean, percentiles and stages.
inline void reportLatency(Report& r, const LatencyStats& st, const std::string& k) {
    r.emplace_back(k + "_latency_ns_mean", st.meanNs());
    st.tails(r, k + "_");
    r.emplace_back(k + "_latency_ns_max", st.maxNs());
    for (int s = 0; s < kNumStages; ++s) r.emplace_back(k + ".stage." + stageName(Stage(s)) + "_ns", st.stageNs(s));
    if (TraceSink* t = TraceSink::current()) t->label(&st, k);
}

// Requests reach the memory system through the uncore; LLC miss detection
// is part of that path for every core.
class Driver : public Component, public Requester {
  public:
    // On the cores of host `host`.
    explicit Driver(System& s, size_t host = 0) : Component(s.loop), sys_(s), host_(s.host(host)) {
        host_.uncore->setRequester(this);
        llcLat_ = nsToTicks(host_.p.host.llc_latency_ns);
    }
    void retryReq() override {}  // the uncore never refuses
    // x->mark: when the response reaches the core (it may be later than now).
    bool tryResp(Txn* x) override {
        complete(x, std::max(x->mark, now()));
        sys_.pool.put(x);
        return true;
    }

  protected:
    // A miss leaving the core at `at` (now or later): a MemRd or MemWr.
    Txn* issue(uint16_t core, Opc op, uint64_t addr, uint8_t tag, Tick at, bool own = false) {
        Txn* x = sys_.pool.get();
        x->opc = op;
        x->own = own;
        // Page-table reads carry their own physical address.
        x->addr = x->hostAddr = (addr & kPageTableFlag) || physical_ ? addr : place_(addr);
        x->src = core;
        x->tag = tag;
        x->birth = x->mark = at;
        if (sys_.trace) x->trace = sys_.trace->admit(*x);
        host_.uncore->tryReq(x);
        return x;
    }
    virtual void complete(Txn* x, Tick done) = 0;
    System& sys_;
    HostPart& host_;
    Tick llcLat_;

  public:
    // Where the workload's virtual addresses lie (default: host physical).
    PagePlacement place_;
    bool physical_ = false;  // addresses are host physical already
};

// What one host's workload moved over a window of `span`, under `k`, beside
// the most its windows' media could.
inline void rates(Report& r, const std::string& k, const System& s, const PagePlacement& place, size_t host, Tick span,
           uint64_t readBytes, uint64_t writeBytes) {
    const double secs = double(span) * 1e-12;
    r.emplace_back(k + "read_gbps", secs > 0 ? readBytes / secs / 1e9 : 0);
    r.emplace_back(k + "write_gbps", secs > 0 ? writeBytes / secs / 1e9 : 0);
    r.emplace_back(k + "total_gbps", secs > 0 ? (readBytes + writeBytes) / secs / 1e9 : 0);
    r.emplace_back(k + "media_peak_gbps", s.mediaPeakBytesPerSec(place.windows(), host) / 1e9);
}

inline void commonReport(Report& r, System& s, const PagePlacement& place, Tick start, Tick end, uint64_t readBytes,
                  uint64_t writeBytes) {
    if (end < start) throw std::logic_error("internal error: measurement window ends before it starts");
    r.emplace_back("window_ns", ticksToNs(end - start));
    rates(r, "", s, place, 0, end - start, readBytes, writeBytes);
    s.report(r, start, end);
    r.emplace_back("txn_pool_size", double(s.pool.allocated()));
    r.emplace_back("txn_pool_peak", double(s.pool.peak()));
    r.emplace_back("events", double(s.loop.events()));
}

inline void checkThreads(const std::string& workload, uint32_t threads, const HostDesc& h) {
    if (threads < 1 || threads > h.host.cores)
        throw ConfigError(workload + ".threads = " + fmtNum(threads) + " is out of range; allowed: 1 to host.cores (" +
                          fmtNum(h.host.cores) + ")");
}

}  // namespace memload
}  // namespace cxlcore
