// Request traces: the path of sampled requests through the components, as
// spans (a component held the request from one time to another, charged to
// one latency stage) and marks (a flit sent, a credit taken or waited for).
//
// A request is traced when its issuer asks the run's sink to admit it (every
// Nth request, up to a cap on records); from then on its Txn points at its
// record, and every Txn::leave records a span there. An untraced request pays
// one null-pointer check per stage it closes; a run without a sink pays
// nothing more.
//
// The spans of a request are exactly its stage accounting: each change of
// Txn::stage[] goes through leave(), absorb() or restore(), and each records
// the same amount it adds (spans of zero length are not kept). So for every
// traced request, the spans of a stage sum to its stage[] entry, in ticks.
#pragma once

#include <cstdint>
#include <deque>
#include <iosfwd>
#include <string>
#include <vector>

#include "cxlcore/kernel/txn.hpp"

namespace cxlcore {

struct TraceSpan {
    const char* who = nullptr;  // the component, as it names itself (interned)
    Tick start = 0, end = 0;
    uint8_t stage = 0;
};

// An instant on the request's path: "flit" (a message of it left on a link;
// value: the flit half-slots it took), "credit" (a link credit was taken for
// it), "credit_wait" (it had to wait for one).
struct TraceMark {
    const char* who = nullptr;
    const char* what = nullptr;
    Tick at = 0;
    uint32_t value = 0;
};

struct TraceRecord {
    uint32_t run = 0;   // the run (a System) of the sink it belongs to, from 0
    uint64_t id = 0;    // the request's id, unique within its run
    uint64_t addr = 0;  // the address the issuer gave it
    Opc opc = Opc::MemRd;
    uint8_t kind = 0;   // Txn::Kind (CXL.cache accesses)
    uint16_t src = 0;   // issuing core or device
    Tick birth = 0, done = 0;
    bool finished = false;
    // Counted in a run's latency statistics: which (its report key, once the
    // run has reported) and the stages those statistics summed.
    const void* counted = nullptr;
    std::string stream;
    Tick stage[kNumStages] = {};
    std::vector<TraceSpan> spans;
    std::vector<TraceMark> marks;
    // Requests made on this one's behalf (a memory read of a CXL.cache
    // access): their spans wait here until absorbed, or are dropped.
    struct Child {
        uint64_t id;
        std::vector<TraceSpan> spans;
        std::vector<TraceMark> marks;
    };
    std::vector<Child> children;
};

class TraceSink {
  public:
    // every: trace the 1st, (every+1)th, ... request offered; maxRequests: at
    // most this many records (then admit says no).
    TraceSink(uint64_t every, uint64_t maxRequests);

    // A run starts: records from now on carry the next run number.
    void beginRun() { ++run_; }
    // The record for a request being issued now, or nullptr when it is not
    // sampled (or the cap is reached).
    TraceRecord* admit(const Txn& t);
    // The issuer took t back before any component saw it (refused: it will
    // be offered again): its record, if any, and its place in the sampling go.
    void retract(Txn& t);
    // Statistics `stats` counted request t (finished at `done`).
    static void counted(const Txn& t, Tick done, const void* stats);
    // Those statistics are reported under `key` (run to run, their address may repeat).
    void label(const void* stats, const std::string& key);
    // Those statistics were reset: the requests they counted so far are no longer theirs.
    void uncount(const void* stats);

    const std::deque<TraceRecord>& records() const { return records_; }
    uint64_t offered() const { return offered_; }
    uint64_t every() const { return every_; }
    uint64_t maxRequests() const { return max_; }
    bool full() const { return records_.size() >= max_; }

    // The sink of the runs started on this thread (nullptr: not tracing).
    static TraceSink* current();
    // Makes a sink current on this thread for its lifetime.
    class Scope {
      public:
        explicit Scope(TraceSink* s);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

      private:
        TraceSink* prev_;
    };
    // For a System: the current sink, told that a run starts.
    static TraceSink* enterRun() {
        TraceSink* s = current();
        if (s) s->beginRun();
        return s;
    }

  private:
    uint64_t every_, max_, offered_ = 0;
    int64_t run_ = -1;
    std::deque<TraceRecord> records_;  // a deque: transactions point at records
};

// Every record as rows of one table: the request itself (kind "request",
// component "requests", issue to completion), then each span and mark.
// Columns of equal length; stage -1 for rows that are not spans.
struct TraceRows {
    std::vector<uint32_t> run;
    std::vector<uint64_t> request, address, issued, done;
    std::vector<std::string> op, stream, component, kind;
    std::vector<uint16_t> source;
    std::vector<int16_t> stage;
    std::vector<uint64_t> start, end, value;
    std::vector<bool> finished;
};
TraceRows traceRows(const TraceSink& s);
// The same rows as CSV with a header (the columns of simcxl.engine.reqtrace's
// frame, times in ps): how an engine without Python (gem5) hands a trace over.
void writeTraceRows(const TraceSink& s, std::ostream& out);

// A request made on behalf of `parent` (a memory read for a CXL.cache access)
// records into the parent's record, to be absorbed with its stages.
inline void traceChild(Txn* child, const Txn* parent) {
    if (parent && parent->trace) child->trace = parent->trace;
}

}  // namespace cxlcore
