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
//
// What the lines hold is the NicData's business: the standalone engine's
// hold version numbers (the operations themselves live in NicRing::desc and
// AtomicMemory); inside gem5 they hold the guest's bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cxlcore/config/params.hpp"
#include "cxlcore/devices/atomic_ops.hpp"
#include "cxlcore/devices/line_access.hpp"
#include "cxlcore/devices/net_port.hpp"

namespace cxlcore {

// One host thread's rings, several descriptors (and completions) to a line.
// A line's data is a version number (the coherence model's): a descriptor
// line holds op + 1 of the last operation written into it, the doorbell the
// tail; a completion line the version of the NIC's last write to it, and a
// completion is in a version once the version is at least the one that
// wrote it (cqVersion). The operations themselves live in `desc`.
struct NicRing {
    uint64_t descBase = 0, cqBase = 0, doorbell = 0;
    uint32_t entries = 0, perDesc = 1, perCq = 1;
    std::vector<AtomicOp> desc;
    std::vector<uint64_t> cqOp, cqVersion;  // per entry: the operation completed there, by which write
    uint64_t descLine(uint64_t op) const { return descBase + (op / perDesc % (entries / perDesc)) * kLineBytes; }
    uint64_t cqLine(uint64_t op) const { return cqBase + (op / perCq % (entries / perCq)) * kLineBytes; }
    bool completedIn(uint64_t op, uint64_t version) const {
        const uint64_t e = op % entries;
        return cqOp[e] == op && cqVersion[e] <= version;
    }
};

// An access from the pool for one load or store of a line issued now.
inline Txn* newAccess(TxnPool& pool, Txn::Kind k, uint64_t line, uint64_t value, Tick now) {
    Txn* a = pool.get();
    a->kind = k;
    a->addr = line;
    a->value = value;
    a->birth = now;
    return a;
}

// The rings of every host thread, placed from `base` in host memory.
std::vector<NicRing> makeRings(uint32_t threads, const NicParams& p, uint64_t base);

// The data side of the NIC's accesses, consulted as each is issued or done.
class NicData {
  public:
    // The descriptor of s.op from the line read x, into s.o; false when the
    // host's write of it is not visible in that line.
    virtual bool descriptor(AtomicSlot& s, const Txn& x) = 0;
    // The tail the doorbell read x saw.
    virtual uint64_t tail(uint32_t ring, const Txn& x) = 0;
    // The access a (s's operand line, ownership when it writes) is about to be issued.
    virtual void operand(Txn& a, const AtomicSlot& s) = 0;
    // s performed on its line, held now (x is the access): its previous value.
    virtual uint64_t perform(AtomicSlot& s, const Txn& x) = 0;
    // A write (a) of one completion line of `ring`, with these operations' completions, is about to be issued.
    virtual void completions(Txn& a, uint32_t ring, const std::vector<AtomicSlot*>& ops) = 0;
    // That write is done.
    virtual void completed(uint32_t ring, const std::vector<AtomicSlot*>& ops, const Txn& x) = 0;

  protected:
    ~NicData() = default;
};

// The standalone engine's data: version numbers on the lines.
class NicVersions final : public NicData {
  public:
    NicVersions(std::vector<NicRing>& rings, AtomicMemory& mem, uint64_t& storeSeq)
        : rings_(rings), mem_(mem), storeSeq_(storeSeq) {}
    bool descriptor(AtomicSlot& s, const Txn& x) override;
    uint64_t tail(uint32_t, const Txn& x) override { return x.value; }
    void operand(Txn& a, const AtomicSlot& s) override { a.value = s.o.writes() ? ++storeSeq_ : 0; }
    uint64_t perform(AtomicSlot& s, const Txn& x) override;
    void completions(Txn& a, uint32_t, const std::vector<AtomicSlot*>&) override { a.value = ++storeSeq_; }
    void completed(uint32_t ring, const std::vector<AtomicSlot*>& ops, const Txn& x) override;

  private:
    std::vector<NicRing>& rings_;
    AtomicMemory& mem_;
    uint64_t& storeSeq_;
};

struct NicStats {
    uint64_t ops = 0, polls = 0, doorbellChanges = 0, descriptors = 0, ringErrors = 0, hits = 0;
    Tick executing = 0;  // summed: an operation's line access, from ready (and on the far side of the wire) to held
    size_t maxInFlight = 0;
};

class CxlNic : public Component, public Client {
  public:
    // `data` null: the standalone engine's version numbers.
    CxlNic(Host& host, const NicParams& p, LineAccess& cache, std::vector<NicRing>& rings, AtomicMemory& mem,
           uint64_t& storeSeq, TxnPool& pool, NicData* data = nullptr);
    // One of its cache accesses is done.
    void done(Txn* x) override;
    void start();
    // The host has seen every completion it waits for: polling stops.
    void stop() { stopped_ = true; }
    const NicStats& stats() const { return stats_; }
    const AtomicOrdering& ordering() const { return order_; }
    const NetWire& wireOut() const { return out_; }
    size_t inFlight() const { return inFlight_; }
    // What the NIC knows of a ring, for stall reports.
    std::string describe(uint32_t ring) const {
        return "NIC ring " + std::to_string(ring) + ": fetched " + std::to_string(rs_[ring].head) + " of tail " +
               std::to_string(rs_[ring].tail) + (rs_[ring].polling ? ", doorbell read outstanding" : "");
    }

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
    // A completion line: one write at a time, so its versions follow the
    // order its completions land in; completions that arrive meanwhile go
    // together in the next write.
    struct CqLine {
        std::vector<AtomicSlot*> writing, waiting;
    };
    // What an access is for (its tag; ctx: the slot, ring index or completion line).
    enum Done : uint8_t { Descriptor, Doorbell, Operand, Completions };
    Txn* access(Txn::Kind k, uint64_t line, Done what, void* ctx);
    void fetch();
    void execute(AtomicSlot* s);
    void performed(AtomicSlot* s);
    void aluDone(AtomicSlot* s);
    void complete(AtomicSlot* s);
    void writeCompletions(uint32_t ring, CqLine& l);
    void at(Tick t, EvKind k, AtomicSlot* s);

    NicParams p_;
    LineAccess& cache_;
    std::vector<NicRing>& rings_;
    NicVersions versions_;
    NicData& data_;
    TxnPool& pool_;
    std::vector<RingState> rs_;
    std::vector<std::vector<CqLine>> cq_;
    AtomicOrdering order_;
    ObjectPool<AtomicSlot> slots_;
    TimedQueue<Ev> ev_;
    NetWire out_, back_;
    Tick poll_, alu_;
    size_t inFlight_ = 0;
    uint32_t rr_ = 0;
    bool stopped_ = false, scanQueued_ = false;
    NicStats stats_;
};

}  // namespace cxlcore
