// Remote atomic operations on 8-byte operands: the operation as a host posts
// it (operands and address given directly or by the result of an earlier
// operation of the same thread), the functional store of the operand words
// with the log of the order operations performed in, and the per-thread
// results dependent operations read.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "cxlcore/coherence/protocol.hpp"
#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

enum class AtomicCode : uint8_t { Fetch, FetchAdd, Add, Cas, Swap };
const char* atomicName(AtomicCode c);

// One operation. The element index is `index`, or the result of operation
// addrDep (modulo the region's length); an operand is its immediate plus the
// results of up to two earlier operations. FETCH_ADD and ADD add a; SWAP
// stores a; CAS stores b when the word equals a. Every operation returns the
// word's previous value.
struct AtomicOp {
    AtomicCode code = AtomicCode::Fetch;
    uint8_t region = 0;  // 0: the array, 1: the index array
    uint64_t index = 0;
    int64_t addrDep = -1;
    int64_t aDep[2] = {-1, -1};
    uint64_t aImm = 0;
    int64_t bDep[2] = {-1, -1};
    uint64_t bImm = 0;
    bool writes() const { return code != AtomicCode::Fetch; }
};

// The word an operation leaves, from the word it found.
constexpr uint64_t atomicResult(AtomicCode c, uint64_t old, uint64_t a, uint64_t b) {
    return c == AtomicCode::FetchAdd || c == AtomicCode::Add ? old + a
           : c == AtomicCode::Cas                             ? (old == a ? b : old)
           : c == AtomicCode::Swap                            ? a
                                                              : old;
}

// The operand words of two regions, 8 bytes each, at their base addresses.
class AtomicMemory {
  public:
    struct Entry {
        uint32_t thread;
        uint64_t op;
        AtomicCode code;
        uint8_t region;
        uint64_t index, a, b, result;
    };
    AtomicMemory(uint64_t arrayBase, uint64_t arrayWords, uint64_t idxBase, std::vector<uint64_t> idx, bool record);
    uint64_t words(uint8_t region) const { return w_[region].size(); }
    uint64_t line(uint8_t region, uint64_t index) const { return lineOf(base_[region] + index * 8); }
    // Performs one resolved operation now; returns the previous value.
    uint64_t perform(uint32_t thread, uint64_t op, AtomicCode code, uint8_t region, uint64_t index, uint64_t a,
                     uint64_t b);
    const std::vector<uint64_t>& contents(uint8_t region) const { return w_[region]; }
    const std::vector<Entry>& log() const { return log_; }
    uint64_t performed() const { return performed_; }

  private:
    uint64_t base_[2];
    std::vector<uint64_t> w_[2];
    bool record_;
    std::vector<Entry> log_;
    uint64_t performed_ = 0;
};

// How far back an operation's inputs may be in its thread's stream.
constexpr size_t kMaxDepDistance = 8;

// Results of one thread's recent operations, for those that depend on them:
// a ring as long as twice the operations a thread can have outstanding plus
// the farthest input, so an entry outlives every operation that may read it.
inline size_t resultsRing(uint32_t outstanding) { return 2 * size_t(outstanding) + kMaxDepDistance; }

class ThreadResults {
  public:
    explicit ThreadResults(size_t cap = 0) : v_(cap), tag_(cap, ~0ull) {}
    void set(uint64_t op, uint64_t value) {
        v_[op % v_.size()] = value;
        tag_[op % v_.size()] = op;
    }
    bool ready(int64_t op) const { return op < 0 || tag_[uint64_t(op) % v_.size()] == uint64_t(op); }
    uint64_t get(int64_t op) const { return op < 0 ? 0 : v_[uint64_t(op) % v_.size()]; }
    // The element index and operands of o, when every result it needs is in.
    bool resolve(const AtomicOp& o, uint64_t words, uint64_t& index, uint64_t& a, uint64_t& b) const {
        for (int64_t d : {o.addrDep, o.aDep[0], o.aDep[1], o.bDep[0], o.bDep[1]})
            if (!ready(d)) return false;
        index = (o.addrDep >= 0 ? get(o.addrDep) : o.index) % words;
        a = o.aImm + get(o.aDep[0]) + get(o.aDep[1]);
        b = o.bImm + get(o.bDep[0]) + get(o.bDep[1]);
        return true;
    }

  private:
    std::vector<uint64_t> v_;
    std::vector<uint64_t> tag_;
};

// An operation in a NIC's engine.
struct AtomicSlot {
    uint32_t ring = 0;
    uint64_t op = 0;
    AtomicOp o;
    bool known = false;  // descriptor arrived
    uint64_t index = 0, a = 0, b = 0, line = 0, result = 0;
    Tick admitted = 0;
    void* user = nullptr;  // the executor's own state (a DMA transfer)
};

// The ordering rules of a NIC's atomic engine. Operations of one ring (one
// host thread) learn their addresses in program order, so each takes its
// place in its line's queue behind every earlier operation of its thread on
// that line; operations on one line execute one at a time, in queue order;
// an operation runs once the results its operands name are in. Everything
// else overlaps. `ready` is told when an operation may execute; the executor
// calls finish once its result is known (its line is free for the next).
class AtomicOrdering {
  public:
    AtomicOrdering(uint32_t rings, size_t resultCap, const AtomicMemory& mem, std::function<void(AtomicSlot*)> ready);
    void admit(AtomicSlot* s);   // in program order of its ring
    void arrive(AtomicSlot* s);  // its descriptor is known
    void finish(AtomicSlot* s);
    const ThreadResults& results(uint32_t ring) const { return rings_[ring].results; }
    size_t maxLineQueue() const { return maxLineQ_; }
    size_t maxPending() const { return maxPending_; }
    size_t lines() const { return lineQ_.size(); }
    bool idle() const;

  private:
    struct Ring {
        std::deque<AtomicSlot*> pending;  // no line yet, program order
        std::vector<AtomicSlot*> heads;   // at the head of their line, waiting for operands
        ThreadResults results;
    };
    void advance(Ring& r);
    void tryRun(AtomicSlot* s);
    const AtomicMemory& mem_;
    std::function<void(AtomicSlot*)> ready_;
    std::vector<Ring> rings_;
    std::unordered_map<uint64_t, std::deque<AtomicSlot*>> lineQ_;
    size_t maxLineQ_ = 0, maxPending_ = 0;
};

}  // namespace cxlcore
