// What the coherent workloads (accelerator.cpp, coherence_runs.cpp,
// dma_vs_cache.cpp) share: where host buffers lie, injected protocol bugs by
// name, and how a stream's latency is reported. Internal to the workloads.
#pragma once

#include <string>

#include "cxlcore/kernel/stats.hpp"
#include "cxlcore/workloads/accelerator.hpp"

namespace cxlcore {
namespace accelwl {

constexpr uint64_t kHostBase = 1ull << 32;  // host buffers start at 4 GiB

inline void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

inline Accelerator::Bug bugOf(const std::string& inject, const char* where) {
    if (inject == "snpinv-keeps-copy") return Accelerator::SnpInvKeepsCopy;
    if (inject == "drop-dirty-data") return Accelerator::DropDirtyData;
    if (inject == "drop-snoops") return Accelerator::DropSnoops;
    if (inject == "defer-snoops") return Accelerator::DeferSnoops;
    need(inject.empty(), std::string(where) + " = '" + inject +
                             "' is not allowed; allowed values: '' (none), snpinv-keeps-copy, drop-dirty-data, "
                             "drop-snoops, defer-snoops");
    return Accelerator::None;
}

// A stream's accesses under `prefix`: latency, hit rate and stages.
inline void reportLatency(Report& r, const LatencyStats& st, const std::string& prefix) {
    r.emplace_back(prefix + "latency_mean_ns", st.meanNs());
    st.tails(r, prefix);
    r.emplace_back(prefix + "latency_max_ns", st.maxNs());
    r.emplace_back(prefix + "hit_rate", st.hitRate());
    for (int s = 0; s < kNumStages; ++s)
        r.emplace_back(prefix + "stage_" + stageName(Stage(s)) + "_ns", st.stageNs(s));
    // Traces name the stream by its prefix ("device_" -> "device"; none: "accesses").
    if (TraceSink* t = TraceSink::current())
        t->label(&st, prefix.empty() ? std::string("accesses") : prefix.substr(0, prefix.size() - 1));
}

}  // namespace accelwl
}  // namespace cxlcore
