// simcxl._core.TraceSink: request traces (ext/cxlcore/kernel/trace.hpp).
// Python makes a sink, makes it current on its thread around the engine
// calls of one command (a context manager), then reads the records back as
// columns: one row per span or mark (simcxl/trace.py writes the files).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <fstream>
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

// Every record's rows (kernel/trace.hpp) as a dict of columns.
py::dict rows(const TraceSink& s) {
    TraceRows t = traceRows(s);
    py::dict d;
    d["run"] = t.run;
    d["request"] = t.request;
    d["address"] = t.address;
    d["op"] = t.op;
    d["source"] = t.source;
    d["issued_ps"] = t.issued;
    d["done_ps"] = t.done;
    d["stream"] = t.stream;
    d["finished"] = t.finished;
    d["component"] = t.component;
    d["kind"] = t.kind;
    d["stage"] = t.stage;
    d["start_ps"] = t.start;
    d["end_ps"] = t.end;
    d["value"] = t.value;
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
        .def("write_rows",
             [](const PySink& p, const std::string& path) {
                 std::ofstream f(path);
                 if (!f) throw ConfigError("trace rows: cannot write " + path);
                 writeTraceRows(p.sink, f);
             },
             py::arg("path"), "The rows as CSV (what gem5's host bridge writes for simcxl.engine.reqtrace).")
        .def("requests", [](const PySink& p) { return requests(p.sink); },
             "One row per recorded request: its stages as its statistics counted them (ps).");
}
