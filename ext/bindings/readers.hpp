// simcxl._core: reading Python's descriptions (a system's graph, a workload's
// target and streams) into the core's structs, and running a workload without
// the GIL. Shared by the binding files.
#pragma once

#include <pybind11/pybind11.h>

#include <cmath>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "cxlcore/system/graph.hpp"
#include "cxlcore/workloads/accelerator.hpp"

namespace binding {

namespace py = pybind11;
using namespace cxlcore;

// Reads one field, checking range and integrality before any narrowing cast.
template <typename T>
T field(py::handle v, const std::string& where, const char* name, double lo, double hi) {
    double d;
    try {
        if (py::isinstance<py::bool_>(v)) throw py::cast_error();
        d = v.cast<double>();
    } catch (const py::cast_error&) {
        throw ConfigError(where + "." + name + " = " + std::string(py::str(py::repr(v))) +
                          " is not a number; allowed: " + fmtNum(lo) + " to " + fmtNum(hi));
    }
    if (!(d >= lo && d <= hi))
        throw ConfigError(where + "." + name + " = " + fmtNum(d) + " is out of range; allowed: " + fmtNum(lo) +
                          " to " + fmtNum(hi));
    if (std::is_integral<T>::value && d != std::floor(d))
        throw ConfigError(where + "." + name + " = " + fmtNum(d) + " is not allowed; allowed: a whole number from " +
                          fmtNum(lo) + " to " + fmtNum(hi));
    return static_cast<T>(d);
}

// Rejects keys outside `allowed`, naming the key and listing what is allowed.
void onlyKeys(const py::dict& d, const std::set<std::string>& allowed, const std::string& where,
              const char* what = "parameter");

#define CXL_DECLARE_READER(Struct, LIST) Struct read##Struct(const py::dict& d, const std::string& where);
// A reader readHostParams, readDramParams, ... for every group.
CXL_PARAM_GROUPS(CXL_DECLARE_READER)
#undef CXL_DECLARE_READER

// A whole system: {name?, seed?, components: {name: {...}}, connections: [{from, to, base?, size?}]}.
Graph readGraph(const py::dict& d);
SystemParams readSystem(const py::dict& d);
// A workload's target: [(window, weight), ...]; empty: the first window.
MemTarget readTarget(py::handle v);
// An accelerator run's streams, one per device: {op, pattern, target,
// requesters, depth, footprint_bytes, requests}, each defaulting to `base`.
std::vector<DeviceStream> readStreams(py::handle v, const DeviceStream& base);
py::dict toDict(const Report& r);
// Calls back into Python with the GIL; Ctrl-C and a False return cancel.
// Captures a borrowed handle: copies of the std::function are made without
// the GIL, and the caller keeps `cb` alive for the whole run.
Progress wrap(py::handle cb);

// A run that returns one report per point, as a list of dicts.
template <typename F>
py::list runRowsReleased(F&& f) {
    std::vector<Report> rows;
    {
        py::gil_scoped_release nogil;
        rows = f();
    }
    py::list out;
    for (auto& r : rows) out.append(toDict(r));
    return out;
}

template <typename F>
py::dict runReleased(F&& f) {
    Report r;
    {
        py::gil_scoped_release nogil;
        r = f();
    }
    return toDict(r);
}

}  // namespace binding
