// A coherent access (a load or store of one line by a device thread or host
// core), where its time went, the functional line values, and what the
// watchdog sees of accesses outstanding.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

// Where an accelerator or host access spent its time.
enum AStage : uint8_t {
    kAQueue,      // waiting for an MSHR, a tracker entry or an earlier request to the line
    kACache,      // device (or host) cache lookup
    kALinkUp,     // link device->host
    kAHome,       // home agent pipeline
    kASnoop,      // waiting for snoop responses from other caches
    kAMemory,     // memory read (host DRAM or device memory)
    kALinkDown,   // link host->device
    kABiasFlip,   // Type-2 bias flips
    kABackInv,    // CXL 3.x back-invalidate snoops
    kNumAStages
};
inline const char* stageName(AStage s) {
    static const char* n[] = {"queue", "cache", "link_up", "home", "snoop", "memory",
                              "link_down", "bias_flip", "back_invalidate"};
    return n[s];
}

// Progress of a coherent run, for the watchdog: requests (accesses and DMA
// transfers) outstanding and the last time anything completed.
struct CoherentProgress {
    uint64_t outstanding = 0;
    Tick lastProgress = 0;
    void progress(Tick now) { lastProgress = now; }
};

// The oldest outstanding request found in a system, and where it waits.
struct Oldest {
    Tick issued = kNever;
    std::string where;
    template <typename F>
    void see(Tick t, F&& describe) {
        if (t < issued) {
            issued = t;
            where = describe();
        }
    }
};

// A load or store of one line by a requester (device thread or host core).
struct Access {
    enum Kind : uint8_t { Load, Store, LoadCurrent, StoreNoAlloc, StoreWrInv, LoadAny };
    Kind kind = Load;
    uint64_t line = 0;
    uint64_t value = 0;   // store: value written; load: value read
    uint32_t agent = 0;   // device index, or the host
    Tick issued = 0, mark = 0, done = 0;
    Tick stage[kNumAStages] = {};
    bool hit = false;     // served by the first cache lookup
    bool missed = false;
    std::function<void(Access*)> onDone;
    void leave(AStage s, Tick now) {
        stage[s] += now - mark;
        mark = now;
    }
};

inline bool isWrite(Access::Kind k) {
    return k == Access::Store || k == Access::StoreNoAlloc || k == Access::StoreWrInv;
}

// Runs an access's completion callback. The callback may recycle the access
// (and with it the callback itself), so it is moved out first.
inline void finishAccess(Access* a) {
    if (!a->onDone) return;
    auto f = std::move(a->onDone);
    a->onDone = nullptr;
    f(a);
}

// Functional memory contents: a version number per line, 0 until written.
using Values = std::unordered_map<uint64_t, uint64_t>;

// Reads do not grow the functional store: unwritten lines read as 0.
inline uint64_t valueOf(const Values& v, uint64_t line) {
    auto it = v.find(line);
    return it == v.end() ? 0 : it->second;
}

}  // namespace cxlcore
