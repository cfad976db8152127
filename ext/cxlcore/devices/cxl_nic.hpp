// A CXL-NIC: a Type-1 device whose coherent cache (an Accelerator with its
// MSHRs) carries an atomic engine and a network port.
//
// The host talks to it only through coherent host memory: per host thread a
// ring of descriptor lines, a ring of completion lines and a doorbell line
// holding the ring's tail. The NIC polls the doorbell by reading it: while
// the host has not written it the read hits the NIC's cached copy; the host's
// write snoops that copy away, so the next poll misses and fetches the new
// tail. It then reads the descriptors, executes each operation on its
// operand's line (held in the NIC's cache: FETCH with a shared copy, the
// others with ownership, so operations on lines it owns complete in its
// cache), and writes the result into the completion line the host polls.
#pragma once

#include <cstdint>
#include <vector>

#include "cxlcore/config/params.hpp"
#include "cxlcore/coherence/access.hpp"
#include "cxlcore/devices/accelerator.hpp"
#include "cxlcore/devices/atomic_ops.hpp"
#include "cxlcore/devices/net_port.hpp"

namespace cxlcore {

// One host thread's rings. A line's data is a version number (the coherence
// model's): a descriptor line holds op + 1 of the operation in it, a
// completion line op + 1 of the operation it completes, the doorbell the
// tail. The operation itself lives in `desc`, written with the line.
struct NicRing {
    uint64_t descBase = 0, cqBase = 0, doorbell = 0;
    uint32_t entries = 0;
    std::vector<AtomicOp> desc;
    uint64_t descLine(uint64_t op) const { return descBase + (op % entries) * kLineBytes; }
    uint64_t cqLine(uint64_t op) const { return cqBase + (op % entries) * kLineBytes; }
};

// A recycled access, reset, for one load or store of a line issued now.
inline Access* newAccess(ObjectPool<Access>& pool, Access::Kind k, uint64_t line, uint64_t value, Tick now) {
    Access* a = pool.get();
    *a = Access();
    a->kind = k;
    a->line = line;
    a->value = value;
    a->issued = now;
    return a;
}

// The rings of every host thread, placed from `base` in host memory.
std::vector<NicRing> makeRings(uint32_t threads, uint32_t entries, uint64_t base);

struct NicStats {
    uint64_t ops = 0, polls = 0, doorbellChanges = 0, descriptors = 0, ringErrors = 0;
    size_t maxInFlight = 0;
};

class CxlNic : public Component {
  public:
    CxlNic(Host& host, const NicParams& p, Accelerator& cache, std::vector<NicRing>& rings, AtomicMemory& mem,
           uint64_t& storeSeq);
    void start();
    // The host has seen every completion it waits for: polling stops.
    void stop() { stopped_ = true; }
    const NicStats& stats() const { return stats_; }
    const AtomicOrdering& ordering() const { return order_; }
    const NetWire& wireOut() const { return out_; }
    size_t inFlight() const { return inFlight_; }

  protected:
    void process() override;

  private:
    enum EvKind : uint8_t { Scan, Arrived, AluDone, Returned };
    struct Ev {
        EvKind kind;
        AtomicSlot* s;
    };
    struct RingState {
        uint64_t head = 0, tail = 0;
        bool polling = false;
    };
    Access* access(Access::Kind k, uint64_t line, uint64_t value);
    void fetch();
    void execute(AtomicSlot* s);
    void performed(AtomicSlot* s);
    void aluDone(AtomicSlot* s);
    void complete(AtomicSlot* s);
    void at(Tick t, EvKind k, AtomicSlot* s);

    NicParams p_;
    Accelerator& cache_;
    std::vector<NicRing>& rings_;
    AtomicMemory& mem_;
    uint64_t& storeSeq_;
    std::vector<RingState> rs_;
    AtomicOrdering order_;
    ObjectPool<AtomicSlot> slots_;
    ObjectPool<Access> accesses_;
    TimedQueue<Ev> ev_;
    NetWire out_, back_;
    Tick poll_, alu_;
    size_t inFlight_ = 0;
    uint32_t rr_ = 0;
    bool stopped_ = false, scanQueued_ = false;
    NicStats stats_;
};

}  // namespace cxlcore
