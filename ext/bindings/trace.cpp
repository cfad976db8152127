// simcxl._core.TraceSink: request traces (ext/cxlcore/kernel/trace.hpp).
// Python makes a sink, makes it current on its thread around the engine
// calls of one command (a context manager), then reads the records back as
// columns: one row per span or mark (simcxl/trace.py writes the files).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>

#include "cxlcore/kernel/stats.hpp"
#include "cxlcore/kernel/trace.hpp"

namespace py = pybind11;
using namespace cxlcore;

namespace {

struct PySink {
    PySink(uint64_t every, uint64_t maxRequests) : sink(every, maxRequests) {}
    TraceSink sink;
    std::unique_ptr<TraceSink::Scope> scope;
};

// Every record (a row of kind "request"), its spans and marks, as columns of equal length.
py::dict rows(const TraceSink& s) {
    std::vector<uint32_t> run;
    std::vector<uint64_t> id, addr, birth, done;
    std::vector<std::string> op, stream, component, kind;
    std::vector<uint16_t> src;
    std::vector<int16_t> stage;  // -1: a mark
    std::vector<uint64_t> start, end, value;
    std::vector<bool> finished;
    auto req = [&](const TraceRecord& r) {
        run.push_back(r.run);
        id.push_back(r.id);
        addr.push_back(r.addr);
        op.push_back(command(r.opc).name);
        src.push_back(r.src);
        birth.push_back(r.birth);
        done.push_back(r.done);
        stream.push_back(r.stream);
        finished.push_back(r.finished);
    };
    for (const TraceRecord& r : s.records()) {
        // The request itself, issue to completion (to issue when it never completed).
        req(r);
        component.push_back("requests");
        kind.push_back("request");
        stage.push_back(-1);
        start.push_back(r.birth);
        end.push_back(std::max(r.birth, r.done));
        value.push_back(0);
        for (const TraceSpan& sp : r.spans) {
            req(r);
            component.push_back(sp.who);
            kind.push_back("span");
            stage.push_back(int16_t(sp.stage));
            start.push_back(sp.start);
            end.push_back(sp.end);
            value.push_back(0);
        }
        for (const TraceMark& m : r.marks) {
            req(r);
            component.push_back(m.who);
            kind.push_back(m.what);
            stage.push_back(-1);
            start.push_back(m.at);
            end.push_back(m.at);
            value.push_back(m.value);
        }
    }
    py::dict d;
    d["run"] = run;
    d["request"] = id;
    d["address"] = addr;
    d["op"] = op;
    d["source"] = src;
    d["issued_ps"] = birth;
    d["done_ps"] = done;
    d["stream"] = stream;
    d["finished"] = finished;
    d["component"] = component;
    d["kind"] = kind;
    d["stage"] = stage;
    d["start_ps"] = start;
    d["end_ps"] = end;
    d["value"] = value;
    return d;
}

// One row per record: the request and the stages its statistics counted.
py::dict requests(const TraceSink& s) {
    std::vector<uint32_t> run;
    std::vector<uint64_t> id, birth, done;
    std::vector<std::string> stream;
    std::vector<std::vector<uint64_t>> stages;
    for (const TraceRecord& r : s.records()) {
        run.push_back(r.run);
        id.push_back(r.id);
        birth.push_back(r.birth);
        done.push_back(r.done);
        stream.push_back(r.stream);
        stages.emplace_back(r.stage, r.stage + kNumStages);
    }
    py::dict d;
    d["run"] = run;
    d["request"] = id;
    d["issued_ps"] = birth;
    d["done_ps"] = done;
    d["stream"] = stream;
    d["stage_ps"] = stages;
    return d;
}

}  // namespace

struct PyHistograms {
    HistogramSink sink;
    std::unique_ptr<HistogramSink::Scope> scope;
};

// Every stream's histogram, its non-empty buckets as [lo, hi) in ns.
py::list histograms(const HistogramSink& s) {
    py::list out;
    for (const HistogramSink::Entry& e : s.entries()) {
        std::vector<double> lo, hi;
        std::vector<uint64_t> count;
        const auto& c = e.hist.counts();
        for (size_t i = 0; i < c.size(); ++i) {
            if (!c[i]) continue;
            lo.push_back(double(LogHistogram::lower(i)) / 1000.0);
            hi.push_back(double(LogHistogram::lower(i) + LogHistogram::width(i)) / 1000.0);
            count.push_back(c[i]);
        }
        out.append(py::dict(py::arg("run") = e.run, py::arg("stream") = e.stream, py::arg("lo_ns") = lo,
                            py::arg("hi_ns") = hi, py::arg("count") = count));
    }
    return out;
}

// `with sink:` makes the sink current on this thread for the runs in the block.
template <typename P, typename Scope>
void scoped(py::class_<P>& c, const char* what) {
    c.def("__enter__",
          [what](P& p) -> P& {
              if (p.scope) throw ConfigError(std::string(what) + ": this sink is already recording");
              p.scope.reset(new Scope(&p.sink));
              return p;
          },
          py::return_value_policy::reference)
        .def("__exit__", [](P& p, py::args) { p.scope.reset(); });
}

void bindTrace(py::module_& m) {
    m.def("recording", [] { return TraceSink::current() != nullptr || HistogramSink::current() != nullptr; },
          "Whether a trace or histogram sink is current on this thread (runs on other threads go unrecorded).");
    py::class_<PyHistograms> hs(m, "HistogramSink",
                                "Keeps the latency histogram of every stream the runs made while it is current "
                                "(with sink: ...) report.");
    scoped<PyHistograms, HistogramSink::Scope>(hs, "histograms");
    hs.def(py::init<>())
        .def("histograms", [](const PyHistograms& p) { return histograms(p.sink); },
             "[{run, stream, lo_ns, hi_ns, count}]: each stream's non-empty buckets [lo_ns, hi_ns).");
    py::class_<PySink> ts(m, "TraceSink",
                          "Records sampled requests of the runs made while it is current (with sink: ...): the "
                          "1st, (sample+1)th, ... request issued, at most max_requests of them.");
    scoped<PySink, TraceSink::Scope>(ts, "trace");
    ts.def(py::init<uint64_t, uint64_t>(), py::arg("sample"), py::arg("max_requests"))
        .def_property_readonly("offered", [](const PySink& p) { return p.sink.offered(); },
                               "Requests issued while it recorded (sampled or not).")
        .def_property_readonly("recorded", [](const PySink& p) { return p.sink.records().size(); })
        .def_property_readonly("sample", [](const PySink& p) { return p.sink.every(); })
        .def_property_readonly("max_requests", [](const PySink& p) { return p.sink.maxRequests(); })
        .def("rows", [](const PySink& p) { return rows(p.sink); },
             "Every span and mark: columns of equal length (stage -1: a mark).")
        .def("requests", [](const PySink& p) { return requests(p.sink); },
             "One row per recorded request: its stages as its statistics counted them (ps).");
}
