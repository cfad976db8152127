// simcxl._core: hosts sharing one device's memory, coherent by HDM-DB back-invalidate.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cxlcore/system/graph.hpp"
#include "cxlcore/workloads/shared.hpp"

namespace py = pybind11;
using namespace cxlcore;

void bindShared(py::module_& m, Graph (*graphOf)(const py::dict&), Progress (*progress)(py::handle),
                py::dict (*report)(const Report&)) {
    m.def("run_shared",
          [=](py::dict sys, std::string device, std::vector<std::string> hosts, uint32_t threads, std::string pattern,
              uint64_t lines, double storeFraction, uint64_t accesses, uint64_t rounds, double thinkNs, bool check,
              uint64_t cacheLines, uint32_t cacheWays, double hitNs, double snoopNs, uint64_t seed, py::object cb) {
              const SystemParams p = graphOf(sys).system();
              SharedConfig c;
              c.device = device;
              c.hosts = hosts;
              c.threads = threads;
              c.pattern = pattern;
              c.lines = lines;
              c.store_fraction = storeFraction;
              c.accesses = accesses;
              c.rounds = rounds;
              c.think_ns = thinkNs;
              c.check = check;
              c.cache = SharedCacheParams{cacheLines, cacheWays, hitNs, snoopNs};
              c.seed = seed;
              Progress pr = progress(cb);
              Report r;
              std::string detail;
              {
                  py::gil_scoped_release nogil;
                  r = runShared(p, c, pr, &detail);
              }
              py::dict out = report(r);
              out["detail"] = detail;
              return out;
          },
          py::arg("system"), py::arg("device") = "", py::arg("hosts") = std::vector<std::string>(),
          py::arg("threads") = 1, py::arg("pattern") = "random", py::arg("lines") = 1024,
          py::arg("store_fraction") = 0.5, py::arg("accesses") = 100000, py::arg("rounds") = 10,
          py::arg("think_ns") = 0.0, py::arg("check") = true, py::arg("cache_lines") = 16384,
          py::arg("cache_ways") = 16, py::arg("hit_ns") = -1.0, py::arg("snoop_ns") = -1.0, py::arg("seed") = 1,
          py::arg("progress") = py::none(),
          "Hosts sharing a shared Type-3 device's memory (HDM-DB): loads and stores through each host's "
          "coherent cache, the device's snoop filter and back-invalidates; 'detail' names the checker's first "
          "violation, if any.");
}
