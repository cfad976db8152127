// Speed of the CXL.cache path in the C++ core alone (no Python): one Type-1
// accelerator with default parameters, random loads over a footprint much
// larger than its cache, so nearly every access misses to host memory
// through the home agent (the `simcxl run accel` shape).
// (args: accesses, footprint MiB, and "check" to run under the coherence
// checker). Build as engine_bench (benchmarks/README.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cxlcore/workloads/accelerator.hpp"

int main(int argc, char** argv) {
    using namespace cxlcore;
    SystemParams p;
    p.accelerators.emplace_back();
    AccelConfig c;
    c.requests = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
    c.footprint_bytes = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024) << 20;
    c.check = argc > 3 && std::string(argv[3]) == "check";
    auto t0 = std::chrono::steady_clock::now();
    Report r = runAccel(p, c, nullptr);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double lat = 0, hit = 0;
    for (auto& kv : r) {
        if (kv.first == "latency_mean_ns") lat = kv.second;
        if (kv.first == "hit_rate") hit = kv.second;
    }
    std::printf("%llu accesses%s in %.3f s: %.2f M accesses/s, %.4f ns mean latency, hit rate %.4f\n",
                (unsigned long long)c.requests, c.check ? " (checked)" : "", s, double(c.requests) / s / 1e6, lat, hit);
}
