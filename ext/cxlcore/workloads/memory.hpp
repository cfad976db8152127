// Workload generators of the standalone engine. Each run builds a fresh
// System, so identical inputs give identical outputs.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cxlcore/host/cache_hierarchy.hpp"
#include "cxlcore/system/placement.hpp"

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
    // lat_mem_rd's `len`: the buffer a random chase's pages are drawn from
    // (lat_mem_rd allocates it once and measures every size up to it);
    // 0 = the largest working set of the list.
    uint64_t region_bytes = 0;
    MemTarget target;
};

struct StreamConfig {
    std::string kernel = "triad";  // copy, scale, add, triad
    uint32_t threads = 8;
    uint64_t lines_per_thread = 20000;  // cache lines of each array per thread
    // Where the arrays' pages lie in physical memory: "first-touch" (each
    // thread's initialisation loop faults a page of a, b and c in turn, and the
    // OS hands it consecutive frames) or "contiguous" (each array in one piece).
    std::string placement = "first-touch";
    // How a store reaches memory: "write-allocate" (its line is read for
    // ownership, then written back when evicted) or "non-temporal" (the full
    // line is written without a read, as movnt stores or memcpy's streaming
    // path do; it holds a fill buffer until the write completes).
    std::string stores = "write-allocate";
    MemTarget target;
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
    MemTarget target;
    // How a store reaches memory: "non-temporal" (a full-line write, no read)
    // or "write-allocate" (a read for ownership now, the write-back of the
    // line its fill evicts later), as in StreamConfig. read_fraction counts
    // memory traffic, so with write-allocate it is at least 0.5.
    std::string stores = "non-temporal";
    // A fixed cycle of a thread's accesses, 'L' a load and 'S' a store (MLC's
    // -W modes); empty: each access is drawn at random to give read_fraction.
    std::string ops;
    // Open loop: "periodic" (each thread at a fixed interval) or "poisson"
    // (exponential gaps of that mean: the sum of the threads is a Poisson
    // stream, as queueing theory's M/x/1 servers assume).
    std::string arrivals = "periodic";
    // Several hosts (runHosts): every access goes to a line of the host's
    // dynamic-capacity LD that the host holds at that moment, so its memory
    // grows and shrinks with the extents the fabric manager adds and releases
    // (footprint_bytes is then unused).
    bool follow_extents = false;
};

struct TraceConfig {
    std::string path;
    uint32_t max_outstanding = 64;
    // Empty: the trace's addresses are host physical addresses, routed by the
    // map; else they are virtual, placed in the target's windows.
    MemTarget target;
};

// One timed load of a pointer chase: its address and where the translation
// (0: DTLB, 1: STLB, 2: page walk), the leaf PTE and the data were found
// (CacheHierarchy::Level).
struct ChaseLoad {
    uint64_t addr = 0;
    uint8_t translate = 0, pte = 0, data = 0;
};

// Cache outcomes of lmbench runs, kept by the caller between runs: they
// depend only on the host's cache geometry and the working set, not on any
// latency, so runs that differ in timing parameters alone (a calibration)
// walk the caches once.
// Runs on several threads may share one (a curve's points run side by side).
class WarmCache {
  public:
    explicit WarmCache(size_t capacity = 4) : cap_(capacity ? capacity : 1) {}
    struct Entry {
        std::string key;
        std::shared_ptr<const std::vector<ChaseLoad>> loads;
    };
    std::shared_ptr<const std::vector<ChaseLoad>> find(const std::string& key) const;
    void put(std::string key, std::shared_ptr<const std::vector<ChaseLoad>> loads);
    size_t size() const {
        std::lock_guard<std::mutex> g(m_);
        return entries_.size();
    }
    size_t capacity() const { return cap_; }
    std::deque<Entry> entries() const {
        std::lock_guard<std::mutex> g(m_);
        return entries_;
    }
    void update(const WarmCache& other) {
        for (const Entry& e : other.entries())
            if (!find(e.key)) put(e.key, e.loads);
    }

  private:
    size_t cap_;
    mutable std::mutex m_;
    std::deque<Entry> entries_;  // most recent last
};

Report runChase(const SystemParams& sys, const ChaseConfig& cfg, uint64_t wsIndex, WarmCache* cache = nullptr);
Report runStream(const SystemParams& sys, const StreamConfig& cfg, const Progress& progress);
Report runTraffic(const SystemParams& sys, const TrafficConfig& cfg, const Progress& progress);
Report runTrace(const SystemParams& sys, const TraceConfig& cfg, const Progress& progress);

// One host's part of a run on several hosts at once.
struct HostTraffic {
    std::string host;  // its component name
    TrafficConfig cfg;
};
// Traffic on several hosts of one system at once. The first host listed
// paces the measurement window (10 % to 90 % of its requests); the others
// issue throughout it, whatever their `requests`. Each host's bandwidth and
// latency under its name, every component's counters once.
// A fabric manager's command, by names (applied at at_ns): "add" or "release"
// an extent, "bind" LD `ld` to the host or "unbind" the host's LD.
struct DcRequest {
    double at_ns = 0;
    std::string op = "add";
    std::string device, host;
    uint64_t start = 0, bytes = 0;
    uint32_t ld = 0;
    double notice_ns = -1;  // when the host learns of it (below 0: at at_ns)
};
Report runHosts(const SystemParams& sys, const std::vector<HostTraffic>& runs, const Progress& progress,
                const std::vector<DcRequest>& fm = {});

}  // namespace cxlcore
