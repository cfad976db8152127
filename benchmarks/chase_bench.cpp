// Speed of the lat_mem_rd pointer chase in the C++ core alone (no Python):
// one working set on a CXL Type-3 expander behind the default host with the
// cxl-asic preset's cache and TLB geometry. Most of a large working set's
// time is the functional walk that settles the host's caches.
// (args: working-set MiB, timed loads). Build as engine_bench (benchmarks/README.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_system.hpp"
#include "cxlcore/workloads/memory.hpp"

int main(int argc, char** argv) {
    using namespace cxlcore;
    HostParams h;  // the cxl-asic preset's host (a Sapphire Rapids socket)
    h.l1_bytes = 49152;
    h.l1_assoc = 12;
    h.l2_bytes = 2097152;
    h.l2_assoc = 16;
    h.llc_bytes = 102236160;
    h.llc_assoc = 15;
    h.llc_bimodal_insert_prob = 0.0625;
    h.llc_inclusive = 0;
    h.dtlb_entries = 96;
    h.dtlb_assoc = 6;
    h.stlb_entries = 2048;
    h.stlb_assoc = 16;
    h.page_bytes = 4096;
    h.frame_run_pages = 8;
    const SystemParams p = bench::cxlSystem(1, [&h](Node& n) { n.params.HostParams_ = h; });
    ChaseConfig c;
    const uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
    c.working_sets = {mib << 20};
    if (argc > 2) c.accesses = std::strtoull(argv[2], nullptr, 10);
    auto t0 = std::chrono::steady_clock::now();
    Report r = runChase(p, c, 0, nullptr);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double lat = 0;
    for (auto& kv : r)
        if (kv.first == "latency_ns") lat = kv.second;
    std::printf("%llu MiB working set, %llu timed loads: %.3f s, %.4f ns simulated latency\n",
                (unsigned long long)mib, (unsigned long long)c.accesses, s, lat);
}
