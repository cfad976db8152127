// simcxl._core: the CXL-NIC's remote atomic operation (RAO) kernels and their
// baselines, and the kernels' operation streams for independent checks.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cxlcore/devices/protobuf.hpp"
#include "cxlcore/system/graph.hpp"
#include "cxlcore/workloads/rao.hpp"
#include "cxlcore/workloads/rpc.hpp"

namespace py = pybind11;
using namespace cxlcore;

namespace {

py::dict opDict(const AtomicOp& o) {
    py::dict d;
    d["code"] = atomicName(o.code);
    d["region"] = o.region;
    d["index"] = o.index;
    d["addr_dep"] = o.addrDep;
    d["a_deps"] = py::make_tuple(o.aDep[0], o.aDep[1]);
    d["a_imm"] = o.aImm;
    d["b_deps"] = py::make_tuple(o.bDep[0], o.bDep[1]);
    d["b_imm"] = o.bImm;
    return d;
}

RaoConfig readRao(const std::string& kernel, const std::string& op, const std::string& mechanism, uint32_t threads,
                  uint64_t iters, uint64_t elements, uint64_t stride, uint32_t noise, bool check, bool record) {
    RaoConfig c;
    c.kernel = kernel;
    c.op = op;
    c.mechanism = mechanism;
    c.threads = threads;
    c.iters = iters;
    c.elements = elements;
    c.stride = stride;
    c.noise_threads = noise;
    c.check = check;
    c.record = record;
    return c;
}

}  // namespace

void bindNic(py::module_& m, Graph (*graphOf)(const py::dict&), Progress (*progress)(py::handle),
             py::dict (*report)(const Report&)) {
    m.def("run_rao",
          [=](py::dict sys, std::string kernel, std::string op, std::string mechanism, uint32_t threads,
              uint64_t iters, uint64_t elements, uint64_t stride, uint32_t noise, bool check, bool record,
              py::object cb) {
              const Graph g = graphOf(sys);
              const SystemParams p = g.system();
              const NicParams n = g.nic();
              RaoConfig c = readRao(kernel, op, mechanism, threads, iters, elements, stride, noise, check, record);
              checkRao(p, n, c);
              Progress pr = progress(cb);
              RaoResult r;
              {
                  py::gil_scoped_release nogil;
                  r = runRao(p, n, c, pr);
              }
              py::dict out = report(r.report);
              if (record) {
                  py::list log;
                  for (const auto& e : r.log)
                      log.append(py::make_tuple(e.thread, e.op, atomicName(e.code), e.region, e.index, e.a, e.b,
                                                e.result));
                  out["log"] = log;
                  out["array"] = r.array;
                  out["index"] = r.index;
              }
              return out;
          },
          py::arg("system"), py::arg("kernel"), py::arg("op"), py::arg("mechanism"),
          py::arg("threads"), py::arg("iters"), py::arg("elements"), py::arg("stride") = 9,
          py::arg("noise_threads") = 0, py::arg("check") = false, py::arg("record") = false,
          py::arg("progress") = py::none(),
          "One RAO kernel by one mechanism (cxl-nic, pcie-nic, host). With record: the order the operations "
          "performed in (thread, op, code, region, index, a, b, previous value) and the final memory.");
    m.def("run_rpc",
          [=](py::dict sys, std::string shape, std::string direction, std::string mechanism,
              bool check) {
              const Graph g = graphOf(sys);
              const SystemParams p = g.system();
              const NicParams n = g.nic();
              RpcConfig c{shape, direction, mechanism, check};
              Report r;
              {
                  py::gil_scoped_release nogil;
                  r = runRpc(p, n, c);
              }
              return report(r);
          },
          py::arg("system"), py::arg("shape"), py::arg("direction"), py::arg("mechanism"),
          py::arg("check") = false,
          "One message of a shape (de)serialised by one mechanism (cxl-nic, pcie-nic, host).");
    m.def("rpc_message",
          [](std::string shape, uint64_t seed) {
              const auto tree = makeMessage(pbShape(shape), seed, 0);
              py::list out;
              for (const auto& msg : tree) {
                  py::list fs;
                  for (const auto& f : msg.fields) {
                      py::dict d;
                      d["kind"] = f.kind == PbField::Varint   ? "varint"
                                  : f.kind == PbField::String ? "string"
                                  : f.kind == PbField::Nested ? "nested"
                                                              : "packed";
                      d["number"] = f.number;
                      d["value"] = f.value;
                      d["child"] = f.child;
                      d["elems"] = f.elems;
                      fs.append(d);
                  }
                  out.append(fs);
              }
              py::dict d;
              d["messages"] = out;
              d["wire_bytes"] = wireBytes(tree);
              return d;
          },
          py::arg("shape"), py::arg("seed") = 1,
          "A shape's message tree (fields of each message, index 0 the root) and its wire size.");
    m.def("rpc_shapes", [] {
        py::list out;
        for (const auto& s : pbShapes())
            out.append(py::dict(py::arg("shape") = s.name, py::arg("bytes") = s.bytes, py::arg("fields") = s.fields,
                                py::arg("depth") = s.depth, py::arg("string_fraction") = s.stringFraction));
        return out;
    }, "The RPC message shapes: target wire size, fields per message, nesting depth, share of bytes in strings.");
    m.def("rao_stream",
          [=](py::dict sys, std::string kernel, std::string op, uint32_t threads, uint64_t iters, uint64_t elements,
              uint64_t stride) {
              const SystemParams p = graphOf(sys).system();
              RaoConfig c = readRao(kernel, op, "host", threads, iters, elements, stride, 0, false, false);
              checkRao(p, NicParams(), c);
              RaoKernel k(c, p.seed);
              py::list streams;
              for (uint32_t t = 0; t < threads; ++t) {
                  py::list s;
                  for (uint64_t i = 0; i < k.opsPerThread(); ++i) s.append(opDict(k.op(t, i)));
                  streams.append(s);
              }
              py::dict out;
              out["streams"] = streams;
              out["index"] = k.index();
              return out;
          },
          py::arg("system"), py::arg("kernel"), py::arg("op"), py::arg("threads"), py::arg("iters"),
          py::arg("elements"), py::arg("stride") = 9,
          "A kernel's operation streams (one list per thread) and its index array's initial contents.");
}
