// The one message of the core. Every access a core or device thread issues,
// and every request, response and protocol message on every CXL channel
// (CXL.mem, CXL.cache with back-invalidate, CXL.io TLPs), is a Txn drawn
// from one pool; components key in-flight work by its id, never by address.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "cxlcore/kernel/commands.hpp"
#include "cxlcore/kernel/time.hpp"

namespace cxlcore {

// Line states of a coherent cache.
enum class MState : uint8_t { I, S, E, M };
const char* stateName(MState s);

// Where a request's latency went: the one breakdown every workload reports.
// Stages are contiguous (each component closes its stage when it hands the
// request on), so they always add up to the total latency.
enum Stage : uint8_t {
    kStageQueue,        // waiting for an MSHR, a tracker entry or an earlier request to the line
    kStageCache,        // device (or coherent host) cache lookup
    kStageUncore,       // host: LLC miss path, mesh and home agent
    kStageHostPort,     // CXL host bridge / root port (both directions)
    kStageLinkDown,     // link host -> device (or inter-socket link out), every hop
    kStageSwitch,       // CXL switches on the path (both directions)
    kStageDevice,       // device controller pipeline (both directions)
    kStageSnoop,        // waiting for snoop responses from other caches
    kStageBiasFlip,     // Type-2 bias flips
    kStageBackInv,      // CXL 3.x back-invalidate snoops
    kStageMediaQueue,   // waiting in a DRAM controller's queue
    kStageMediaService, // DRAM commands and data burst
    kStageLinkUp,       // link device -> host (or inter-socket link back)
    kNumStages
};
const char* stageName(Stage s);

struct Txn;
struct HTxn;
struct DmaJob;
struct TraceRecord;

// Request traces (kernel/trace.hpp): what a traced request's stage
// accounting records, out of line so that untraced requests pay one check.
void traceSpan(Txn& t, Stage s, Tick from, Tick to, const char* who);
void traceUndo(Txn& t, Tick mark);
void traceAbsorb(Txn& t, const Txn& child, const Tick* cut, const char* who);
void traceMark(Txn& t, const char* what, Tick at, const char* who, uint32_t value);
void traceRelease(Txn& t);

// Told when a request it issued completes. A workload keeps one per kind of
// request and tells requests apart by Txn::ctx: nothing is allocated per request.
class Client {
  public:
    virtual void done(Txn* t) = 0;

  protected:
    ~Client() = default;
};

// A Client forwarding to a callable the workload holds for the whole run.
template <typename F>
class ClientFn final : public Client {
  public:
    explicit ClientFn(F f) : f_(std::move(f)) {}
    void done(Txn* t) override { f_(t); }

  private:
    F f_;
};
template <typename F>
ClientFn<F> makeClient(F f) {
    return ClientFn<F>(std::move(f));
}

struct alignas(64) Txn {
    // An access by a core or device thread (CXL.cache agents).
    enum Kind : uint8_t { Load, Store, LoadCurrent, StoreNoAlloc, StoreWrInv, LoadAny };

    // Laid out by use, line-aligned: what every request's path touches (the
    // first cache line, then the stages), then what only CXL.cache and CXL.io
    // messages use. With many devices a request's Txn is cold at each hop, so
    // every line a hop reads is a miss.
    TraceRecord* trace = nullptr;  // sampled for a request trace (kernel/trace.hpp); read at every stage
    uint64_t addr = 0;     // address as seen by the component holding it (a line on CXL.cache)
    uint64_t hostAddr = 0; // address the core issued
    const char* at = "issued"; // the queue holding it (interned name), for stall reports
    Tick birth = 0;
    Tick mark = 0;         // time the current stage began
    uint32_t size = kLineBytes;  // bytes (a CXL.io TLP: its payload)
    uint16_t src = 0;      // issuing core or device
    Opc opc = Opc::MemRd;  // its channel, size and direction are the command table's
    uint8_t devLoad = 0;   // CXL DevLoad field of the response (0..3)
    uint8_t tag = 0;       // private to whoever made it (a workload's access, a component's message)
    uint8_t route = 0;     // the input of the uncore it entered by, where its response goes back
    uint8_t host = 0;      // the host whose uncore it left: switches route its response by it, an MLD its LD
    bool own = false;      // a read for ownership (a store's write-allocate)
    bool internal = false; // made by a component for itself (never reaches a core)
    bool live = false;     // handed out by a TxnPool and not yet returned
    uint16_t dpid = 0;     // port-based routing: the PBR ID of the device it goes to (12 bits)
    Tick stage[kNumStages] = {};
    uint64_t id = 0;
    // CXL.cache and CXL.io
    uint64_t value = 0;    // the line's data, as a version number
    Txn* parent = nullptr; // the request whose latency this message carries
    HTxn* htxn = nullptr;  // home transaction a snoop, write-pull or memory read belongs to
    DmaJob* job = nullptr; // CXL.io: the DMA transfer a TLP belongs to
    Client* client = nullptr;  // told when this request completes
    void* ctx = nullptr;       // the client's own context (its stream, thread, ...)
    Tick done = 0;
    uint16_t dev = 0;      // the device a message travels to or from
    uint16_t spid = 0;     // port-based routing: the PBR ID of the host edge it came in by (its response goes there)
    // HDM-DB: the number of the grant a MemData carries, or of the last grant
    // a BISnp's host was sent (a host that has not yet received it waits for it).
    uint32_t seq = 0;
    MState state = MState::I;  // GO, MemRdFwd and MemRd: the state granted or asked for
    Kind kind = Load;
    bool bogus = false;    // D2H data of a line snooped away during its eviction
    bool hit = false;      // served by the first cache lookup
    bool missed = false;

    const Command& cmd() const { return command(opc); }
    Channel channel() const { return channelOf(opc); }
    // Which way a memory access's data goes (a response keeps its request's).
    bool isRead() const { return isReadOpc(opc); }
    bool isWrite() const { return isWriteOpc(opc); }

    // Closes the current stage at `now`: `who` (the component's own name)
    // held the request since `mark`, charged to stage s.
    // Inlined everywhere: several calls per request, a few instructions each.
    [[gnu::always_inline]] void leave(Stage s, Tick now, const char* who) {
        if (trace) traceSpan(*this, s, mark, now, who);
        stage[s] += now - mark;
        mark = now;
    }
    // Takes back the latest leave() (its target refused the request): the
    // mark and stage s as they were before it.
    void restore(Stage s, Tick oldMark, Tick oldStage) {
        if (trace) traceUndo(*this, oldMark);
        mark = oldMark;
        stage[s] = oldStage;
    }
    // A flit or credit event on the request's path (traces only).
    void note(const char* what, Tick at, const char* who, uint32_t value = 0) {
        if (trace) traceMark(*this, what, at, who, value);
    }
    // A request this one waited for (a memory read on its behalf) ends at
    // `now`: its stages become this one's, the time before it began stays
    // `before`'s, and time it spent before this one's current stage began
    // (already counted there) is dropped from its earliest stages, which
    // the enum lists in path order.
    void absorb(const Txn& child, Stage before, Tick now, const char* who) {
        Tick overlap = mark > child.birth ? mark - child.birth : 0;
        leave(before, child.birth > mark ? child.birth : mark, who);
        Tick cut[kNumStages];
        if (!overlap) {
            // Nearly always: the child began as this one's stage did (a
            // memory read issued at once), so nothing is cut.
            for (int s = 0; s < kNumStages; ++s) stage[s] += child.stage[s];
            if (trace) {
                for (Tick& c : cut) c = 0;
                traceAbsorb(*this, child, cut, who);
            }
            mark = now;
            return;
        }
        for (int s = 0; s < kNumStages; ++s) {
            cut[s] = child.stage[s] < overlap ? child.stage[s] : overlap;
            overlap -= cut[s];
            stage[s] += child.stage[s] - cut[s];
        }
        if (trace) traceAbsorb(*this, child, cut, who);
        mark = now;
    }
};

inline bool isWrite(Txn::Kind k) { return k == Txn::Store || k == Txn::StoreNoAlloc || k == Txn::StoreWrInv; }

// Tells a request's client that it is done. The client may recycle it.
inline void notifyDone(Txn* t) {
    if (t->client) t->client->done(t);
}

// Names of queues, kept for the whole process: transactions point at them.
inline const char* internName(const std::string& name) {
    static std::mutex m;
    static std::set<std::string> names;
    std::lock_guard<std::mutex> g(m);
    return names.insert(name).first->c_str();
}

static_assert(std::is_trivially_destructible<Txn>::value && std::is_trivially_copyable<Txn>::value,
              "TxnPool resets transactions by copying a blank one over them");

// Transactions are recycled so memory stays flat however long a run is. The
// pool knows which are in flight, so a stalled run can say where the oldest is.
class TxnPool {
  public:
    Txn* get() {
        if (free_.empty()) grow();
        Txn* t = free_.back();
        free_.pop_back();
        // A copy of a blank one: GCC clears a value-initialised Txn (256 B)
        // with `rep stos`, slow to start on every request; a copy is plain
        // vector moves.
        *t = kBlank;
        t->id = nextId_++;
        t->live = true;
        const size_t live = allocated_ - free_.size();
        if (live > peak_) peak_ = live;
        return t;
    }
    void put(Txn* t) {
        if (t->trace) traceRelease(*t);
        t->live = false;
        ++returned_;
        free_.push_back(t);
    }
    size_t allocated() const { return allocated_; }
    size_t live() const { return allocated_ - free_.size(); }
    // The most transactions ever live at once (the pool grows by whole chunks).
    size_t peak() const { return peak_; }
    uint64_t returned() const { return returned_; }
    // The live request issued first (nullptr when none is live). Protocol
    // messages that carry a request's latency (parent set) are not requests.
    const Txn* oldest() const {
        const Txn* o = nullptr;
        for (size_t i = 0; i < allocated_; ++i) {
            const Txn* t = &chunks_[i / kChunk][i % kChunk];
            if (t->live && !t->parent && (!o || t->birth < o->birth || (t->birth == o->birth && t->id < o->id)))
                o = t;
        }
        return o;
    }

    // Transactions live in chunks, side by side: a run's few hundred in
    // flight stay within as few cache lines as they can.
    static constexpr size_t kChunk = 64;

  private:
    static inline const Txn kBlank{};
    // Out of line: get() stays small enough to inline on every path.
    [[gnu::noinline, gnu::cold]] void grow() {
        chunks_.emplace_back(new Txn[kChunk]);
        for (size_t i = kChunk; i-- > 0;) free_.push_back(&chunks_.back()[i]);
        allocated_ += kChunk;
    }
    std::vector<std::unique_ptr<Txn[]>> chunks_;
    std::vector<Txn*> free_;
    size_t allocated_ = 0, peak_ = 0;
    uint64_t nextId_ = 1, returned_ = 0;
};

// Queues of transactions stamp each one with their name as it enters.
inline void stampQueue(Txn* t, const char* name) {
    if (name) t->at = name;
}
template <typename T>
inline void stampQueue(const T&, const char*) {}

}  // namespace cxlcore
