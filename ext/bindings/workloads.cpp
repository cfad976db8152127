// simcxl._core: the standalone engine's memory and accelerator workloads.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include "cxlcore/workloads/memory.hpp"
#include "cxlcore/workloads/mixed.hpp"
#include "readers.hpp"

using namespace binding;

namespace {

// A mixed run's RAO settings: {kernel, op, mechanism, threads, iters, elements, stride, noise_threads}.
RaoConfig readRaoSettings(py::handle v) {
    const std::string at = "mixed.rao";
    if (!py::isinstance<py::dict>(v)) throw ConfigError(at + " must be a table of workload settings");
    py::dict d = v.cast<py::dict>();
    onlyKeys(d, {"kernel", "op", "mechanism", "threads", "iters", "elements", "stride", "noise_threads"}, at, "setting");
    RaoConfig c;
    if (d.contains("kernel")) c.kernel = py::str(d["kernel"]);
    if (d.contains("op")) c.op = py::str(d["op"]);
    if (d.contains("mechanism")) c.mechanism = py::str(d["mechanism"]);
    if (d.contains("threads")) c.threads = field<uint32_t>(d["threads"], at, "threads", 1, 256);
    if (d.contains("iters")) c.iters = field<uint64_t>(d["iters"], at, "iters", 1, 4294967296.0);
    if (d.contains("elements")) c.elements = field<uint64_t>(d["elements"], at, "elements", 8, 1073741824.0);
    if (d.contains("stride")) c.stride = field<uint64_t>(d["stride"], at, "stride", 1, 1073741824.0);
    if (d.contains("noise_threads")) c.noise_threads = field<uint32_t>(d["noise_threads"], at, "noise_threads", 0, 64);
    return c;
}

}  // namespace

void bindWorkloads(py::module_& m) {
    py::class_<WarmCache>(m, "WarmCache",
                          "Cache outcomes of lmbench runs, reused between runs of the same host geometry. "
                          "Picklable, so worker processes can share one.")
        .def(py::init<size_t>(), py::arg("capacity") = 4)
        .def("__len__", &WarmCache::size)
        .def("update", &WarmCache::update, py::arg("other"), "Adds the entries of another cache.")
        .def(py::pickle(
            [](const WarmCache& c) {
                py::list entries;
                for (const auto& e : c.entries())
                    entries.append(py::make_tuple(
                        py::bytes(e.key),
                        py::bytes(reinterpret_cast<const char*>(e.loads->data()), e.loads->size() * sizeof(ChaseLoad))));
                return py::make_tuple(c.capacity(), entries);
            },
            [](py::tuple t) {
                auto c = std::make_unique<WarmCache>(t[0].cast<size_t>());
                for (auto item : t[1].cast<py::list>()) {
                    auto pair = item.cast<py::tuple>();
                    std::string key = pair[0].cast<std::string>(), raw = pair[1].cast<std::string>();
                    auto loads = std::make_shared<std::vector<ChaseLoad>>(raw.size() / sizeof(ChaseLoad));
                    std::memcpy(loads->data(), raw.data(), loads->size() * sizeof(ChaseLoad));
                    c->put(std::move(key), std::move(loads));
                }
                return c;
            }));

    m.def("run_lmbench",
          [](py::dict sys, std::vector<uint64_t> ws, uint64_t stride, uint64_t accesses, uint64_t warmup,
             size_t index, WarmCache* cache, uint64_t region, py::object target) {
              SystemParams p = readSystem(sys);
              ChaseConfig c{ws, stride, accesses, warmup, region, readTarget(target)};
              return runReleased([&] { return runChase(p, c, index, cache); });
          },
          py::arg("system"), py::arg("working_sets"), py::arg("stride"), py::arg("accesses"), py::arg("warmup"),
          py::arg("index"), py::arg("cache") = nullptr, py::arg("region") = 0, py::arg("target") = py::none(),
          "Dependent pointer chase (lat_mem_rd) at working_sets[index]; a random chase draws its pages "
          "from a buffer of `region` bytes (0: the largest working set). target: [(window, weight), ...] "
          "of the address map (None: its first window).");

    m.def("run_stream",
          [](py::dict sys, std::string kernel, uint32_t threads, uint64_t lines, std::string placement,
             std::string stores, py::object cb, py::object target) {
              SystemParams p = readSystem(sys);
              StreamConfig c{kernel, threads, lines, placement, stores, readTarget(target)};
              Progress pr = wrap(cb);
              return runReleased([&] { return runStream(p, c, pr); });
          },
          py::arg("system"), py::arg("kernel"), py::arg("threads"), py::arg("lines_per_thread"),
          py::arg("placement") = "first-touch", py::arg("stores") = "write-allocate",
          py::arg("progress") = py::none(), py::arg("target") = py::none());

    m.def("run_traffic",
          [](py::dict sys, uint32_t threads, double readFraction, std::string pattern, uint64_t footprint,
             uint64_t requests, double rate, double delay, bool probe, py::object cb, py::object target,
             std::string stores, std::string ops, std::string arrivals) {
              SystemParams p = readSystem(sys);
              TrafficConfig c{threads, readFraction, pattern, footprint, requests, rate, delay, probe,
                              readTarget(target), stores, ops, arrivals};
              Progress pr = wrap(cb);
              return runReleased([&] { return runTraffic(p, c, pr); });
          },
          py::arg("system"), py::arg("threads"), py::arg("read_fraction"), py::arg("pattern"),
          py::arg("footprint_bytes"), py::arg("requests"), py::arg("rate_gbps") = 0.0,
          py::arg("inject_delay_ns") = 0.0, py::arg("probe") = false, py::arg("progress") = py::none(),
          py::arg("target") = py::none(), py::arg("stores") = "non-temporal", py::arg("ops") = "",
          py::arg("arrivals") = "periodic");

    m.def("run_hosts",
          [](py::dict sys, py::list runs, py::object cb, py::list fm) {
              SystemParams p = readSystem(sys);
              std::vector<DcRequest> cmds;
              for (py::handle h : fm) {
                  py::dict d = py::cast<py::dict>(h);
                  const std::string at = "fm[" + std::to_string(cmds.size()) + "]";
                  onlyKeys(d, {"at_ns", "notice_ns", "op", "device", "host", "start", "bytes", "ld"}, at,
                           "fabric manager key");
                  DcRequest q;
                  q.at_ns = field<double>(d["at_ns"], at, "at_ns", 0, 1e15);
                  if (d.contains("notice_ns")) q.notice_ns = field<double>(d["notice_ns"], at, "notice_ns", 0, 1e15);
                  q.op = py::str(d["op"]);
                  q.device = py::str(d["device"]);
                  q.host = py::str(d["host"]);
                  if (q.op == "add" || q.op == "release") {
                      q.start = field<uint64_t>(d["start"], at, "start", 0, double(1ull << kPhysAddrBits));
                      q.bytes = field<uint64_t>(d["bytes"], at, "bytes", 64, double(1ull << kPhysAddrBits));
                  } else if (q.op == "bind") {
                      q.ld = field<uint32_t>(d["ld"], at, "ld", 0, kMaxLds - 1);
                  }
                  cmds.push_back(q);
              }
              std::vector<HostTraffic> v;
              const char* keys[] = {"host", "threads", "read_fraction", "pattern", "footprint_bytes", "requests",
                                    "rate_gbps", "inject_delay_ns", "probe", "target", "stores", "ops", "arrivals",
                                    "follow_extents"};
              for (py::handle h : runs) {
                  py::dict d = py::cast<py::dict>(h);
                  for (auto kv : d) {
                      const std::string k = py::str(kv.first);
                      if (std::find(std::begin(keys), std::end(keys), k) == std::end(keys))
                          throw ConfigError("hosts[" + std::to_string(v.size()) + "]." + k +
                                            " is not a traffic setting; allowed: host, threads, read_fraction, "
                                            "pattern, footprint_bytes, requests, rate_gbps, inject_delay_ns, probe, "
                                            "target, stores, ops, arrivals, follow_extents");
                  }
                  HostTraffic t;
                  t.host = d["host"].cast<std::string>();
                  TrafficConfig& c = t.cfg;
                  auto get = [&d](const char* k, auto& field) {
                      if (d.contains(k)) field = d[k].cast<std::decay_t<decltype(field)>>();
                  };
                  get("threads", c.threads);
                  get("read_fraction", c.read_fraction);
                  get("pattern", c.pattern);
                  get("footprint_bytes", c.footprint_bytes);
                  get("requests", c.requests);
                  get("rate_gbps", c.rate_gbps);
                  get("inject_delay_ns", c.inject_delay_ns);
                  get("probe", c.probe);
                  get("stores", c.stores);
                  get("ops", c.ops);
                  get("arrivals", c.arrivals);
                  get("follow_extents", c.follow_extents);
                  if (d.contains("target")) c.target = readTarget(d["target"]);
                  v.push_back(t);
              }
              Progress pr = wrap(cb);
              return runReleased([&] { return runHosts(p, v, pr, cmds); });
          },
          py::arg("system"), py::arg("runs"), py::arg("progress") = py::none(), py::arg("fm") = py::list(),
          "Traffic on several hosts at once: one dict per host (host, and any traffic setting); the first paces "
          "the measurement window, the others run throughout it.");

    m.def("run_trace",
          [](py::dict sys, std::string path, uint32_t maxOutstanding, py::object cb, py::object target) {
              SystemParams p = readSystem(sys);
              TraceConfig c{path, maxOutstanding, readTarget(target)};
              Progress pr = wrap(cb);
              return runReleased([&] { return runTrace(p, c, pr); });
          },
          py::arg("system"), py::arg("path"), py::arg("max_outstanding") = 64, py::arg("progress") = py::none(),
          py::arg("target") = py::none(),
          "Trace replay; target None: the addresses are host physical, else virtual, placed in the target.");

    m.def("run_mixed",
          [](py::dict sys, bool host, std::string kernel, uint32_t threads, uint64_t lines, std::string placement,
             std::string stores, py::object target, py::object streams, uint64_t accelRequests, py::object cb,
             py::object rao, std::string nicDevice) {
              const Graph g = readGraph(sys);
              SystemParams p = g.system();
              MixedConfig c;
              c.host = host;
              c.stream = StreamConfig{kernel, threads, lines, placement, stores, readTarget(target)};
              const size_t n = p.accelerators.size();
              // Each device's stream: its own settings over the defaults of an accelerator stream.
              c.accel = readStreams(streams, DeviceStream{});
              if (!streams.is_none() && c.accel.size() != n)
                  throw ConfigError("accel.streams holds " + std::to_string(c.accel.size()) +
                                    " streams; allowed: one per device (" + std::to_string(n) + ")");
              c.accel_requests = accelRequests;
              if (!rao.is_none()) {
                  c.rao = true;
                  c.rao_cfg = readRaoSettings(rao);
                  c.nic = g.nic();
                  c.nic_device = nicDevice;
              }
              Progress pr = wrap(cb);
              return runReleased([&] { return runMixed(p, c, pr); });
          },
          py::arg("system"), py::arg("host"), py::arg("kernel"), py::arg("threads"), py::arg("lines_per_thread"),
          py::arg("placement") = "first-touch", py::arg("stores") = "write-allocate", py::arg("target") = py::none(),
          py::arg("streams") = py::none(), py::arg("accel_requests") = 200000, py::arg("progress") = py::none(),
          py::arg("rao") = py::none(), py::arg("nic_device") = "",
          "The host's STREAM, the accelerators' streams (one per device: op, pattern, target (a window, device "
          "or a Type-2 device's name), requesters, depth, footprint_bytes) and the NIC's RAO (rao: kernel, op, "
          "mechanism, threads, iters, elements, stride, noise_threads; on the device nic_device) at once in one "
          "system; host False: the accelerators (over accel_requests accesses) or the NIC alone.");

    m.def("run_accel",
          [](py::dict sys, std::string op, std::string pattern, std::string target, uint32_t requesters,
             uint32_t depth, uint64_t footprint, uint64_t requests, uint32_t hostThreads, double hostStores,
             bool check, py::object cb, py::object streams) {
              SystemParams p = readSystem(sys);
              AccelConfig c{op, pattern, target, requesters, depth, footprint, requests, hostThreads, hostStores, check, {}};
              c.streams = readStreams(streams, DeviceStream{op, pattern, target, requesters, depth, footprint, requests});
              Progress pr = wrap(cb);
              return runReleased([&] { return runAccel(p, c, pr); });
          },
          py::arg("system"), py::arg("op"), py::arg("pattern"), py::arg("target"), py::arg("requesters"),
          py::arg("depth"), py::arg("footprint_bytes"), py::arg("requests"), py::arg("host_threads") = 0,
          py::arg("host_store_fraction") = 0.5, py::arg("check") = false, py::arg("progress") = py::none(),
          py::arg("streams") = py::none(),
          "Accelerator load/store streams through the device's coherent cache (streams: one per device).");

    m.def("run_chase",
          [](py::dict sys, int agent, std::string target, std::vector<uint64_t> sizes, uint64_t loads, py::object cb) {
              SystemParams p = readSystem(sys);
              CoherentChaseConfig c{agent, target, sizes, loads};
              Progress pr = wrap(cb);
              return runRowsReleased([&] { return runCoherentChase(p, c, pr); });
          },
          py::arg("system"), py::arg("agent"), py::arg("target"), py::arg("sizes"), py::arg("loads") = 2000,
          py::arg("progress") = py::none(),
          "lmbench's pointer chase by one agent (a device, or -1 a host core) over working sets in a memory.");

    m.def("run_sharing",
          [](py::dict sys, std::string mode, uint64_t rounds, uint64_t lines, uint32_t depth, bool check) {
              SystemParams p = readSystem(sys);
              SharingConfig c{mode, rounds, lines, depth, check};
              return runReleased([&] { return runSharing(p, c); });
          },
          py::arg("system"), py::arg("mode"), py::arg("rounds") = 1000, py::arg("lines") = 1024,
          py::arg("depth") = 16, py::arg("check") = true,
          "Host-device sharing: ping-pong on one line, or producer-consumer both ways.");

    m.def("run_stress",
          [](py::dict sys, uint64_t lines, uint32_t hostThreads, uint32_t devReq, uint64_t ops, double stores,
             double uncached, double devMem, std::string inject, py::object cb) {
              SystemParams p = readSystem(sys);
              StressConfig c{lines, hostThreads, devReq, ops, stores, uncached, devMem, inject};
              Progress pr = wrap(cb);
              std::string detail;
              Report r;
              {
                  py::gil_scoped_release nogil;
                  r = runStress(p, c, pr, &detail);
              }
              py::dict out = toDict(r);
              out["detail"] = detail;
              return out;
          },
          py::arg("system"), py::arg("lines") = 8, py::arg("host_threads") = 4, py::arg("device_requesters") = 4,
          py::arg("ops") = 1000000, py::arg("store_fraction") = 0.4, py::arg("uncached_fraction") = 0.1,
          py::arg("device_memory_fraction") = 0.5, py::arg("inject") = "", py::arg("progress") = py::none(),
          "Randomised coherence stress test under the checker (optionally with an injected protocol bug).");

    m.def("run_script",
          [](py::dict sys, py::list steps, bool check, std::string inject) {
              SystemParams p = readSystem(sys);
              std::vector<ScriptStep> st;
              for (size_t i = 0; i < steps.size(); ++i) {
                  py::dict d = steps[i].cast<py::dict>();
                  const std::string at = "script step " + std::to_string(i);
                  onlyKeys(d, {"agent", "op", "target", "offset", "bytes"}, at, "key");
                  ScriptStep s;
                  if (d.contains("agent")) s.agent = field<int>(d["agent"], at, "agent", -1, 15);
                  if (d.contains("op")) s.op = d["op"].cast<std::string>();
                  if (d.contains("target")) s.target = d["target"].cast<std::string>();
                  if (d.contains("offset")) s.offset = field<uint64_t>(d["offset"], at, "offset", 0, 1099511627776.0);
                  if (d.contains("bytes")) s.bytes = field<uint64_t>(d["bytes"], at, "bytes", 1, 1073741824.0);
                  st.push_back(s);
              }
              ScriptResult r;
              {
                  py::gil_scoped_release nogil;
                  r = runScript(p, st, check, inject);
              }
              py::list rows;
              for (auto& x : r.steps) rows.append(toDict(x));
              return py::make_tuple(rows, toDict(r.system));
          },
          py::arg("system"), py::arg("steps"), py::arg("check") = true, py::arg("inject") = "",
          "Directed run: each step (agent, op, target, offset, bytes) issued when the previous one completed.");

    m.def("run_dma_vs_cache",
          [](py::dict sys, std::vector<uint64_t> sizes, std::string cacheOp, uint64_t streamBytes,
             uint32_t minTransfers, py::object cb) {
              SystemParams p = readSystem(sys);
              DmaVsCacheConfig c{sizes, cacheOp, streamBytes, minTransfers};
              Progress pr = wrap(cb);
              return runRowsReleased([&] { return runDmaVsCache(p, c, pr); });
          },
          py::arg("system"), py::arg("sizes"), py::arg("cache_op") = "load", py::arg("stream_bytes") = 1 << 20,
          py::arg("min_transfers") = 4, py::arg("progress") = py::none(),
          "Device reads of host buffers by DMA and by CXL.cache: latency alone and bandwidth back to back.");
}
