// Workload generators of the standalone engine. Each run builds a fresh
// System, so identical inputs give identical outputs.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "system.hpp"

namespace cxlcore {

// Progress in [0, 1]; returning false cancels the run (throws Cancelled).
using Progress = std::function<bool(double)>;

class Cancelled : public std::runtime_error {
  public:
    Cancelled() : std::runtime_error("run cancelled") {}
};

struct ChaseConfig {
    std::vector<uint64_t> working_sets;  // bytes
    uint64_t stride = 0;                 // 0: random order over 64 B lines (lat_mem_rd -t)
    uint64_t accesses = 20000;           // timed loads per working set
    uint64_t warmup = 0;                 // untimed loads; 0 = enough to fill the caches
};

struct StreamConfig {
    std::string kernel = "triad";  // copy, scale, add, triad
    uint32_t threads = 8;
    uint64_t lines_per_thread = 20000;  // cache lines of each array per thread
};

struct TrafficConfig {
    uint32_t threads = 8;
    double read_fraction = 1.0;
    std::string pattern = "random";  // random, sequential
    uint64_t footprint_bytes = 1ull << 30;
    uint64_t requests = 200000;       // traffic requests to complete
    double rate_gbps = 0;             // open loop at this total rate; 0 = as fast as MSHRs allow
    double inject_delay_ns = 0;       // closed loop: pause between a thread's requests (MLC -d)
    bool probe = false;               // add a dependent-load latency probe (MLC loaded latency)
};

struct TraceConfig {
    std::string path;
    uint32_t max_outstanding = 64;
};

// Warmed host caches, kept by the caller between lmbench runs: the warm-up
// depends only on the host and the working set, not on the memory's timing,
// so runs that differ in memory parameters alone (a calibration) warm once.
class WarmCache {
  public:
    explicit WarmCache(size_t capacity = 4) : cap_(capacity ? capacity : 1) {}
    struct Entry {
        std::string key;
        std::unique_ptr<CacheHierarchy> caches;
        uint64_t position;  // where the chase stands after the warm-up
    };
    const Entry* find(const std::string& key) const;
    void put(std::string key, const CacheHierarchy& caches, uint64_t position);
    size_t size() const { return entries_.size(); }

  private:
    size_t cap_;
    std::deque<Entry> entries_;  // most recent last
};

Report runChase(const SystemParams& sys, const ChaseConfig& cfg, uint64_t wsIndex, WarmCache* cache = nullptr);
Report runStream(const SystemParams& sys, const StreamConfig& cfg, const Progress& progress);
Report runTraffic(const SystemParams& sys, const TrafficConfig& cfg, const Progress& progress);
Report runTrace(const SystemParams& sys, const TraceConfig& cfg, const Progress& progress);

}  // namespace cxlcore
