// Hosts sharing one device's memory (HDM-DB): threads on each host load and
// store lines of a region every one of them maps, through a coherent cache
// of the host's own (host/shared_cache.hpp), kept coherent by the device's
// back-invalidate snoops (devices/dcoh.hpp), under the coherence checker.
#pragma once

#include <string>
#include <vector>

#include "cxlcore/host/shared_cache.hpp"
#include "cxlcore/workloads/memory.hpp"

namespace cxlcore {

struct SharedConfig {
    std::string device;              // the shared Type-3 device ("": the system's one shared device)
    std::vector<std::string> hosts;  // the hosts taking part, in order (empty: every host reaching it)
    uint32_t threads = 1;            // per host
    // random: each access a random line, a store with store_fraction;
    // sequential: each thread walks the lines in turn, from its own start;
    // pingpong: one access at a time in all, each host in turn storing to
    // every line (rounds times), so each line's ownership moves host to host.
    std::string pattern = "random";
    uint64_t lines = 1024;           // the shared region: lines from the device's first byte
    double store_fraction = 0.5;
    uint64_t accesses = 100000;      // in all (pingpong: rounds x hosts x lines)
    uint64_t rounds = 10;            // pingpong
    double think_ns = 0;             // pause between a thread's accesses
    bool check = true;               // run the coherence checker
    SharedCacheParams cache{16384, 16, -1, -1};  // each host's coherent cache (latencies < 0: its LLC's)
    uint64_t seed = 1;
};

// `detail`: the checker's first violation, if any.
Report runShared(const SystemParams& sys, const SharedConfig& cfg, const Progress& progress,
                 std::string* detail = nullptr);

}  // namespace cxlcore
