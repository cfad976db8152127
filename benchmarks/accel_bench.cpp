// Speed of the CXL.cache path in the C++ core alone (no Python): one Type-1
// accelerator with default parameters, random loads over a footprint much
// larger than its cache, so nearly every access misses to host memory
// through the home agent (the `simcxl run accel` shape).
//
//   accel_bench [ACCESSES [FOOTPRINT_MIB [OPTION ...]]]
//
// Options: check (under the coherence checker), store (RdOwn instead of
// RdShared), type2 (a Type-2 device in host bias), threads=N (N host cores on
// the same footprint), ber=X (the link's bit error rate: flit replays),
// flit256 (256-byte flits), dump (every statistic of the run, exactly, one a line:
// diff two builds' dumps to show results unchanged). Prints the run's figure
// in M accesses per second of CPU time (what a loaded machine can measure)
// and of wall time. Build as engine_bench (benchmarks/README.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "cxlcore/workloads/accelerator.hpp"

int main(int argc, char** argv) {
    using namespace cxlcore;
    SystemParams p;
    p.accelerators.emplace_back();
    AccelConfig c;
    c.requests = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
    c.footprint_bytes = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024) << 20;
    bool dump = false;
    for (int i = 3; i < argc; ++i) {
        const std::string o = argv[i];
        if (o == "check") c.check = true;
        else if (o == "store") c.op = "store";
        else if (o == "type2") p.accelerators[0].accel.type = 2;
        else if (o.rfind("threads=", 0) == 0) c.host_threads = uint32_t(std::strtoul(o.c_str() + 8, nullptr, 10));
        else if (o.rfind("ber=", 0) == 0) p.accelerators[0].link.bit_error_rate = std::strtod(o.c_str() + 4, nullptr);
        else if (o == "flit256") p.accelerators[0].link.flit_bytes = 256;
        else if (o == "dump") dump = true;
        else {
            std::fprintf(stderr, "unknown option '%s'; allowed: check, store, type2, threads=N, ber=X, flit256, dump\n", o.c_str());
            return 2;
        }
    }
    const std::clock_t c0 = std::clock();
    const auto t0 = std::chrono::steady_clock::now();
    Report r = runAccel(p, c, nullptr);
    const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double lat = 0, hit = 0;
    for (auto& kv : r) {
        if (kv.first == "latency_mean_ns") lat = kv.second;
        if (kv.first == "hit_rate") hit = kv.second;
        if (dump) std::printf("%s %.17g\n", kv.first.c_str(), kv.second);
    }
    const double n = double(c.requests);
    std::printf("%llu accesses%s: %.3f s CPU, %.3f s wall: %.3f M accesses per CPU second (%.3f per wall second), "
                "%.4f ns mean latency, hit rate %.4f\n",
                (unsigned long long)c.requests, c.check ? " (checked)" : "", cpu, wall, n / cpu / 1e6,
                n / wall / 1e6, lat, hit);
}
