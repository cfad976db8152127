// CXL.cache workloads of the standalone engine: accelerator load/store
// streams, host-device sharing, a randomised coherence stress test, and the
// DMA-versus-CXL.cache transfer comparison.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cxlcore/system/system.hpp"
#include "cxlcore/workloads/memory.hpp"

namespace cxlcore {

// An accelerator stream's op by name (load, store, rdcurr, rdany, itomwr,
// wrinv); `where` names the setting in the error.
Txn::Kind accessKind(const std::string& op, const std::string& where);

// What each copy of one device description runs in an accelerator stream.
struct DeviceStream {
    std::string op = "load";          // load (RdShared), store (RdOwn), rdcurr, rdany, itomwr, wrinv
    std::string pattern = "random";   // single, sequential, random
    std::string target = "host";      // host memory, "device" (its own memory), or a device's name (its memory)
    uint32_t requesters = 4;          // per device; 0 in `streams`: the device stays idle
    uint32_t depth = 8;               // accesses each requester keeps in flight
    uint64_t footprint_bytes = 1ull << 22;
    uint64_t requests = 100000;       // per device
};

struct AccelConfig {
    std::string op = "load";          // as DeviceStream, for every device without a stream of its own
    std::string pattern = "random";
    std::string target = "host";      // also the host threads' target ("device": device 0's memory)
    uint32_t requesters = 4;
    uint32_t depth = 8;
    uint64_t footprint_bytes = 1ull << 22;
    uint64_t requests = 100000;
    uint32_t host_threads = 0;        // host cores touching the same footprint
    double host_store_fraction = 0.5;
    bool check = false;
    std::vector<DeviceStream> streams;  // one per device description, or empty: the fields above for all
};

struct SharingConfig {
    std::string mode = "pingpong";  // pingpong, producer-consumer
    uint64_t rounds = 1000;         // ping-pong handoffs
    uint64_t lines = 1024;          // producer-consumer buffer
    uint32_t depth = 16;            // outstanding accesses of producer and consumer
    bool check = true;
};

struct StressConfig {
    uint64_t lines = 8;
    uint32_t host_threads = 4;
    uint32_t device_requesters = 4;  // per device
    uint64_t ops = 1000000;          // in total
    double store_fraction = 0.4;
    double uncached_fraction = 0.1;  // RdCurr / ItoMWr / WrInv among device accesses
    double device_memory_fraction = 0.5;  // Type-2: share of lines in device memory
    std::string inject;              // "", "snpinv-keeps-copy", "drop-dirty-data", "drop-snoops", "defer-snoops"
};

struct DmaVsCacheConfig {
    std::vector<uint64_t> sizes;
    std::string cache_op = "load";    // load (RdShared) or rdcurr
    uint64_t stream_bytes = 1ull << 20;  // at least this much moves in the bandwidth runs
    uint32_t min_transfers = 4;
};

// One request at a time, each issued when the previous one completed: for
// directed tests whose expected timing is worked out by hand.
struct ScriptStep {
    int agent = -1;               // -1: a host core; otherwise the device index
    std::string op = "load";      // an AccelConfig op, or "dma" (the device reads a host buffer over CXL.io)
    std::string target = "host";  // host memory or device 0's memory
    uint64_t offset = 0;          // bytes into the target
    uint64_t bytes = 64;          // dma: transfer size
};
struct ScriptResult {
    std::vector<Report> steps;
    Report system;
};
ScriptResult runScript(const SystemParams& p, const std::vector<ScriptStep>& steps, bool check,
                       const std::string& inject = "");

Report runAccel(const SystemParams& p, const AccelConfig& c, const Progress& progress);
Report runSharing(const SystemParams& p, const SharingConfig& c);
// `detail` receives the first violation or, after a deadlock, what is stuck.
Report runStress(const SystemParams& p, const StressConfig& c, const Progress& progress,
                 std::string* detail = nullptr);
// lmbench's lat_mem_rd on a coherent system: one agent (a device, or -1 a
// host core) chases a random cyclic permutation of the lines of a working set
// in host memory or a device's memory, each load issued when the previous
// one completed; one report per working set (latency per load and stages).
struct CoherentChaseConfig {
    int agent = 0;                 // the device (index of the copy) that chases, or -1: a host core
    std::string target = "host";   // host, "device" (the agent's own memory; device 0's for the host), or a name
    std::vector<uint64_t> sizes;   // working sets, bytes
    uint64_t loads = 2000;         // timed loads per working set, after up to twice the agent's cache in warm-up
};
std::vector<Report> runCoherentChase(const SystemParams& p, const CoherentChaseConfig& c, const Progress& progress);

std::vector<Report> runDmaVsCache(const SystemParams& p, const DmaVsCacheConfig& c, const Progress& progress);

}  // namespace cxlcore
