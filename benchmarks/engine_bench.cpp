// Speed of the C++ core alone (no Python): the `simcxl bench` workload,
// random 64 B reads from 16 threads to a default Type-3 expander
// (args: requests, threads, root ports).
// Build: see benchmarks/README.md.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench_system.hpp"
#include "cxlcore/workloads/memory.hpp"

int main(int argc, char** argv) {
    using namespace cxlcore;
    TrafficConfig c;
    c.threads = argc > 2 ? uint32_t(std::atoi(argv[2])) : 16;
    c.footprint_bytes = 1ull << 34;
    c.requests = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000000;
    // A third argument spreads the window over that many root ports (one expander each).
    const uint32_t ports = argc > 3 ? uint32_t(std::atoi(argv[3])) : 1;
    const SystemParams p = bench::cxlSystem(ports, [&c](Node& n) {
        n.params.HostParams_.cores = c.threads;
        n.params.LinkParams_.lanes = 8;
        n.params.DramParams_.channels = 4;
    });
    auto t0 = std::chrono::steady_clock::now();
    Report r = runTraffic(p, c, nullptr);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double done = double(c.requests - c.requests / 10), events = 0, bw = 0;
    for (auto& kv : r) {
        if (kv.first == "events") events = kv.second;
        if (kv.first == "read_gbps") bw = kv.second;
    }
    std::printf("%.0f requests in %.3f s: %.2f M requests/s, %.2f events/request, %.1f GB/s simulated\n", done, s,
                done / s / 1e6, events / done, bw);
}
