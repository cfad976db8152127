#include "cxlcore/kernel/trace.hpp"

#include <algorithm>
#include <cstring>
#include <ostream>

#include "cxlcore/config/params.hpp"

namespace cxlcore {

namespace {

thread_local TraceSink* tlsSink = nullptr;

// Where spans of t go: its own record's, or those of a child made on behalf
// of the record's request.
TraceRecord::Child* childOf(TraceRecord& r, uint64_t id, bool create) {
    for (auto& c : r.children)
        if (c.id == id) return &c;
    if (!create) return nullptr;
    r.children.push_back(TraceRecord::Child{id, {}, {}});
    return &r.children.back();
}

std::vector<TraceSpan>& spansOf(Txn& t) {
    TraceRecord& r = *t.trace;
    return t.id == r.id ? r.spans : childOf(r, t.id, true)->spans;
}

}  // namespace

void traceSpan(Txn& t, Stage s, Tick from, Tick to, const char* who) {
    if (to == from) return;  // nothing charged
    spansOf(t).push_back(TraceSpan{who ? who : "?", from, to, uint8_t(s)});
}

void traceUndo(Txn& t, Tick mark) {
    // Spans are never empty, so those recorded since `mark` was the mark are
    // exactly the trailing ones that start at or after it.
    std::vector<TraceSpan>& v = spansOf(t);
    while (!v.empty() && v.back().start >= mark) v.pop_back();
}

void traceMark(Txn& t, const char* what, Tick at, const char* who, uint32_t value) {
    TraceRecord& r = *t.trace;
    std::vector<TraceMark>& v = t.id == r.id ? r.marks : childOf(r, t.id, true)->marks;
    // A request retried while it waits for a credit notes the wait once.
    if (!v.empty() && v.back().who == who && std::strcmp(what, "credit_wait") == 0 &&
        std::strcmp(v.back().what, what) == 0)
        return;
    v.push_back(TraceMark{who ? who : "?", what, at, value});
}

void traceAbsorb(Txn& t, const Txn& child, const Tick* cut, const char* who) {
    TraceRecord& r = *t.trace;
    if (t.id != r.id) return;  // a child absorbing a grandchild: not made here
    TraceRecord::Child* c = childOf(r, child.id, false);
    if (!c) {
        // The child was not traced: its stages, laid end to end from when
        // it began, on the absorbing component.
        Tick at = std::max(child.birth, t.mark);
        for (int s = 0; s < kNumStages; ++s) {
            const Tick d = child.stage[s] - cut[s];
            if (!d) continue;
            r.spans.push_back(TraceSpan{who ? who : "?", at, at + d, uint8_t(s)});
            at += d;
        }
        return;
    }
    // What the parent already counted is cut from the child's earliest
    // stages, in the enum's order, as Txn::absorb does: each stage's spans
    // lose it from their start, earliest span first.
    for (int s = 0; s < kNumStages; ++s) {
        Tick left = cut[s];
        for (TraceSpan& sp : c->spans) {
            if (!left) break;
            if (sp.stage != s) continue;
            const Tick d = std::min(left, sp.end - sp.start);
            sp.start += d;
            left -= d;
        }
    }
    for (const TraceSpan& sp : c->spans)
        if (sp.end > sp.start) r.spans.push_back(sp);
    r.marks.insert(r.marks.end(), c->marks.begin(), c->marks.end());
    r.children.erase(r.children.begin() + (c - r.children.data()));
}

void traceRelease(Txn& t) {
    TraceRecord& r = *t.trace;
    t.trace = nullptr;
    if (t.id != r.id) {  // a child never absorbed: its time was counted elsewhere
        for (size_t i = 0; i < r.children.size(); ++i)
            if (r.children[i].id == t.id) {
                r.children.erase(r.children.begin() + long(i));
                break;
            }
        return;
    }
    if (!r.finished) {
        r.finished = true;
        if (!r.done) r.done = std::max(t.mark, t.done);
    }
}

TraceSink::TraceSink(uint64_t every, uint64_t maxRequests) : every_(every), max_(maxRequests) {
    if (every < 1 || every > (1ull << 40))
        throw ConfigError("trace.sample = " + fmtNum(double(every)) +
                          " is out of range; allowed: 1 to 1099511627776 (every Nth request)");
    if (maxRequests < 1 || maxRequests > 100000000)
        throw ConfigError("trace.max_requests = " + fmtNum(double(maxRequests)) +
                          " is out of range; allowed: 1 to 100000000");
}

TraceRecord* TraceSink::admit(const Txn& t) {
    const uint64_t n = offered_++;
    if (n % every_ || records_.size() >= max_) return nullptr;
    records_.emplace_back();
    TraceRecord& r = records_.back();
    r.run = uint32_t(run_ < 0 ? 0 : run_);
    r.id = t.id;
    r.addr = t.hostAddr ? t.hostAddr : t.addr;
    r.opc = t.opc;
    r.kind = uint8_t(t.kind);
    r.src = t.src;
    r.birth = t.birth;
    return &r;
}

void TraceSink::retract(Txn& t) {
    if (offered_) --offered_;
    if (t.trace && !records_.empty() && t.trace == &records_.back()) records_.pop_back();
    t.trace = nullptr;
}

void TraceSink::counted(const Txn& t, Tick done, const void* stats) {
    TraceRecord& r = *t.trace;
    // Counted twice (a run's whole stream, then one device's part of it): the first names it.
    if (t.id != r.id || r.counted) return;
    r.counted = stats;
    r.done = done;
    std::copy(t.stage, t.stage + kNumStages, r.stage);
}

void TraceSink::label(const void* stats, const std::string& key) {
    for (TraceRecord& r : records_)
        if (int64_t(r.run) == run_ && r.counted == stats && r.stream.empty()) r.stream = key;
}

void TraceSink::uncount(const void* stats) {
    for (TraceRecord& r : records_)
        if (r.counted == stats && r.stream.empty()) r.counted = nullptr;
}

TraceRows traceRows(const TraceSink& s) {
    TraceRows t;
    auto row = [&](const TraceRecord& r, const char* component, const char* kind, int stage, Tick start, Tick end,
                   uint64_t value) {
        t.run.push_back(r.run);
        t.request.push_back(r.id);
        t.address.push_back(r.addr);
        t.op.push_back(command(r.opc).name);
        t.source.push_back(r.src);
        t.issued.push_back(r.birth);
        t.done.push_back(r.done);
        t.stream.push_back(r.stream);
        t.finished.push_back(r.finished);
        t.component.push_back(component);
        t.kind.push_back(kind);
        t.stage.push_back(int16_t(stage));
        t.start.push_back(start);
        t.end.push_back(end);
        t.value.push_back(value);
    };
    for (const TraceRecord& r : s.records()) {
        // The request itself, issue to completion (to issue when it never completed).
        row(r, "requests", "request", -1, r.birth, std::max(r.birth, r.done), 0);
        for (const TraceSpan& sp : r.spans) row(r, sp.who, "span", sp.stage, sp.start, sp.end, 0);
        for (const TraceMark& m : r.marks) row(r, m.who, m.what, -1, m.at, m.at, m.value);
    }
    return t;
}

namespace {

// A CSV field: quoted when it holds a separator, a quote or a line break.
void csvField(std::ostream& out, const std::string& v) {
    if (v.find_first_of(",\"\r\n") == std::string::npos) {
        out << v;
        return;
    }
    out << '"';
    for (char c : v) out << (c == '"' ? "\"\"" : std::string(1, c));
    out << '"';
}

}  // namespace

void writeTraceRows(const TraceSink& s, std::ostream& out) {
    const TraceRows t = traceRows(s);
    out << "run,request,address,op,source,issued_ps,done_ps,stream,finished,component,kind,stage,start_ps,end_ps,"
           "value\n";
    for (size_t i = 0; i < t.run.size(); ++i) {
        out << t.run[i] << ',' << t.request[i] << ',' << t.address[i] << ',';
        csvField(out, t.op[i]);
        out << ',' << t.source[i] << ',' << t.issued[i] << ',' << t.done[i] << ',';
        csvField(out, t.stream[i]);
        out << ',' << (t.finished[i] ? "True" : "False") << ',';
        csvField(out, t.component[i]);
        out << ',';
        csvField(out, t.kind[i]);
        out << ',' << t.stage[i] << ',' << t.start[i] << ',' << t.end[i] << ',' << t.value[i] << '\n';
    }
}

TraceSink* TraceSink::current() { return tlsSink; }

TraceSink::Scope::Scope(TraceSink* s) : prev_(tlsSink) { tlsSink = s; }
TraceSink::Scope::~Scope() { tlsSink = prev_; }

}  // namespace cxlcore
