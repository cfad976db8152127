// simcxl._core: the standalone engine. Python hands over a whole system and
// a workload in one call; the run releases the GIL and returns plain dicts.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <type_traits>

#include "cxlcore/kernel/stats.hpp"
#include "cxlcore/workloads/accelerator.hpp"
#include "cxlcore/workloads/mixed.hpp"
#include "cxlcore/host/cache_hierarchy.hpp"
#include "cxlcore/mem/dram_replay.hpp"
#include "cxlcore/system/graph.hpp"
#include "cxlcore/workloads/memory.hpp"

namespace py = pybind11;
using namespace cxlcore;

namespace {

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

#define CXL_READ_FIELD(type, name, def, lo, hi)                             \
    if (d.contains(#name)) {                                                \
        s.name = field<type>(d[#name], where, #name, lo, hi);               \
        known.insert(#name);                                                \
    }

// Rejects keys outside `allowed`, naming the key and listing what is allowed.
void onlyKeys(const py::dict& d, const std::set<std::string>& allowed, const std::string& where,
              const char* what = "parameter") {
    for (auto kv : d) {
        std::string k = py::str(kv.first);
        if (!allowed.count(k)) {
            std::string list;
            for (auto& n : allowed) list += (list.empty() ? "" : ", ") + n;
            throw ConfigError((where.empty() ? k : where + "." + k) + " is not a " + what + "; allowed: " + list);
        }
    }
}

#define CXL_DEFINE_READER(Struct, LIST)                                          \
    Struct read##Struct(const py::dict& d, const std::string& where) {           \
        Struct s;                                                                \
        std::set<std::string> known;                                             \
        LIST(CXL_READ_FIELD)                                                     \
        onlyKeys(d, known, where);                                               \
        return s;                                                                \
    }

// A reader readHostParams, readDramParams, ... for every group.
CXL_PARAM_GROUPS(CXL_DEFINE_READER)

py::dict sub(const py::dict& d, const char* key, const std::string& where) {
    if (!d.contains(key)) throw ConfigError(where + "." + key + " is missing");
    py::object v = d[key];
    if (!py::isinstance<py::dict>(v)) throw ConfigError(where + "." + key + " must be a table of parameters");
    return v.cast<py::dict>();
}

// "comp.port" or "comp.port[i]".
PortRef readPortRef(py::handle v, const std::string& at) {
    if (!py::isinstance<py::str>(v)) throw ConfigError(at + " must be a port: 'component.port' or 'component.port[i]'");
    const std::string s = v.cast<std::string>();
    PortRef r;
    const size_t dot = s.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == s.size())
        throw ConfigError(at + " = '" + s + "' is not a port; allowed: 'component.port' or 'component.port[i]'");
    r.comp = s.substr(0, dot);
    r.port = s.substr(dot + 1);
    const size_t br = r.port.find('[');
    if (br != std::string::npos) {
        const std::string idx = r.port.substr(br + 1);
        r.port = r.port.substr(0, br);
        if (idx.size() < 2 || idx.size() > 4 || idx.back() != ']' ||
            idx.find_first_not_of("0123456789") != idx.size() - 1)
            throw ConfigError(at + " = '" + s + "': the index is a whole number from 0 to 999 in brackets");
        r.index = std::stoi(idx.substr(0, idx.size() - 1));
    }
    return r;
}

#define CXL_READ_GROUP(Struct, LIST) \
    if (schema == #Struct) {         \
        cp.Struct##_ = read##Struct(d, where); \
        return;                      \
    }

void readGroup(const std::string& schema, const py::dict& d, const std::string& where, ComponentParams& cp) {
    CXL_PARAM_GROUPS(CXL_READ_GROUP)
    throw ConfigError(where + ": no parameter group " + schema);
}

// One component: {type, description?, its top-level group's fields, its other groups as tables}.
Node readComponent(const std::string& name, py::handle v) {
    if (!py::isinstance<py::dict>(v)) throw ConfigError(name + " must be a table (type and parameters)");
    py::dict d = v.cast<py::dict>();
    Node c;
    c.name = name;
    if (!d.contains("type") || !py::isinstance<py::str>(d["type"]))
        throw ConfigError(name + ".type is missing; allowed: a component type (simcxl topology types)");
    c.type = d["type"].cast<std::string>();
    const TypeSpec* t = &typeOf(name, c.type);
    py::dict top;
    std::set<std::string> keys{"type", "description"};
    for (const GroupSpec& g : t->groups)
        if (!g.key.empty()) {
            keys.insert(g.key);
            readGroup(g.schema, sub(d, g.key.c_str(), name), name + "." + g.key, c.params);
        }
    for (auto kv : d) {
        const std::string k = py::str(kv.first);
        if (keys.count(k)) continue;
        for (const auto& der : t->derived)
            if (der.first == k) throw ConfigError(name + "." + k + " is derived: " + der.second + "; leave it out");
        top[kv.first] = kv.second;
    }
    bool flat = false;
    for (const GroupSpec& g : t->groups)
        if (g.key.empty()) {
            flat = true;
            readGroup(g.schema, top, name, c.params);
        }
    if (!flat) {
        keys.erase("type");
        keys.erase("description");
        onlyKeys(top, keys, name, "parameter group");
    }
    return c;
}

// Committed HDM decoders: {component: {poison_on_decode_error, committed: [what
// committed_decoders() lists]}}, as simcxl.topology.regions reads them from the registers.
void readDecoders(const py::dict& d, Graph& g) {
    const double space = double(1ull << kPhysAddrBits);
    for (auto kv : d) {
        const std::string comp = py::str(kv.first), at = "decoders." + comp;
        py::dict c = sub(d, comp.c_str(), "decoders");
        onlyKeys(c, {"poison_on_decode_error", "committed"}, at, "key");
        ComponentDecoders& out = g.decoders[comp];
        if (c.contains("poison_on_decode_error")) out.poison = c["poison_on_decode_error"].cast<bool>();
        if (!c.contains("committed")) continue;
        size_t i = 0;
        for (py::handle item : c["committed"]) {
            const std::string w = at + ".committed[" + std::to_string(i++) + "]";
            if (!py::isinstance<py::dict>(item)) throw ConfigError(w + " must be a table (base, size, ways, ...)");
            py::dict e = item.cast<py::dict>();
            onlyKeys(e, {"index", "base", "size", "ways", "granularity", "targets", "dpa_base", "dpa_size", "locked",
                         "host_only"}, w, "key");
            for (const char* k : {"base", "size", "ways", "granularity"})
                if (!e.contains(k)) throw ConfigError(w + "." + k + " is missing");
            cxlio::CommittedDecoder x;
            x.index = e.contains("index") ? field<uint32_t>(e["index"], w, "index", 0, 31) : uint32_t(i - 1);
            x.base = field<uint64_t>(e["base"], w, "base", 0, space);
            x.size = field<uint64_t>(e["size"], w, "size", 0, space);
            x.ways = field<uint32_t>(e["ways"], w, "ways", 1, 16);
            x.granularity = field<uint32_t>(e["granularity"], w, "granularity", 256, 16384);
            if (e.contains("targets"))
                for (py::handle t : e["targets"]) x.targets.push_back(field<uint32_t>(t, w, "targets", 0, 255));
            if (e.contains("dpa_base")) x.dpaBase = field<uint64_t>(e["dpa_base"], w, "dpa_base", 0, space);
            x.dpaSize = e.contains("dpa_size") ? field<uint64_t>(e["dpa_size"], w, "dpa_size", 0, space)
                                               : x.size / x.ways;
            out.committed.push_back(x);
        }
    }
}

// A whole system: {name?, seed?, components: {name: {...}}, connections: [{from, to, base?, size?}]}.
Graph readGraph(const py::dict& d) {
    onlyKeys(d, {"name", "description", "source", "seed", "components", "connections", "fault", "lone_device_unnamed",
                 "decoders"},
             "", "system key");
    Graph g;
    if (d.contains("name")) g.name = py::str(d["name"]);
    if (d.contains("seed")) g.seed = field<uint64_t>(d["seed"], "system", "seed", 0, 9007199254740991.0);
    if (d.contains("lone_device_unnamed")) g.loneDeviceUnnamed = d["lone_device_unnamed"].cast<bool>();
    if (d.contains("fault")) {  // tests only: see SystemParams
        py::dict f = sub(d, "fault", "system");
        onlyKeys(f, {"device_stops_after"}, "fault", "fault");
        if (f.contains("device_stops_after"))
            g.fault_device_stops_after =
                field<uint64_t>(f["device_stops_after"], "fault", "device_stops_after", 0, 9007199254740991.0);
    }
    py::dict comps = sub(d, "components", "system");
    for (auto kv : comps) g.components.push_back(readComponent(py::str(kv.first), kv.second));
    if (!d.contains("connections") || (!py::isinstance<py::list>(d["connections"]) &&
                                       !py::isinstance<py::tuple>(d["connections"])))
        throw ConfigError("system.connections must be a list of {from, to}");
    const double space = double(1ull << kPhysAddrBits);
    size_t i = 0;
    for (py::handle item : d["connections"]) {
        const std::string at = "connections[" + std::to_string(i++) + "]";
        if (!py::isinstance<py::dict>(item)) throw ConfigError(at + " must be a table {from, to}");
        py::dict k = item.cast<py::dict>();
        onlyKeys(k, {"from", "to", "base", "size", "qos_limit", "qos_allocation"}, at, "connection key");
        if (!k.contains("from") || !k.contains("to")) throw ConfigError(at + ": from and to are both needed");
        Connection c;
        c.from = readPortRef(k["from"], at + ".from");
        c.to = readPortRef(k["to"], at + ".to");
        const bool base = k.contains("base") && !k["base"].is_none(), size = k.contains("size") && !k["size"].is_none();
        if (base != size) throw ConfigError(at + ": base and size come together (a window)");
        if (base) {
            c.window = true;
            c.base = field<uint64_t>(k["base"], at, "base", 0, space);
            c.size = field<uint64_t>(k["size"], at, "size", 64, space);
        }
        for (const char* q : {"qos_limit", "qos_allocation"}) {
            if (!k.contains(q) || k[q].is_none()) continue;
            c.hasQos = true;
            (q[4] == 'l' ? c.qos.limit : c.qos.allocation) = field<double>(k[q], at, q, 0.0, 1.0);
        }
        g.connections.push_back(c);
    }
    if (d.contains("decoders")) readDecoders(sub(d, "decoders", "system"), g);
    return g;  // Graph::system() checks it before building
}

SystemParams readSystem(const py::dict& d) { return readGraph(d).system(); }

// A workload's target: [(window, weight), ...]; empty: the first window.
MemTarget readTarget(py::handle v) {
    MemTarget t;
    if (v.is_none()) return t;
    for (py::handle item : v) {
        auto pair = item.cast<py::tuple>();
        if (pair.size() != 2) throw ConfigError("target: each entry is (window, weight)");
        t.windows.push_back(pair[0].cast<std::string>());
        t.weights.push_back(field<uint32_t>(pair[1], "target", "weight", 1, 255));
    }
    return t;
}

// An accelerator run's streams, one per device: {op, pattern, target,
// requesters, depth, footprint_bytes, requests}, each defaulting to `base`.
std::vector<DeviceStream> readStreams(py::handle v, const DeviceStream& base) {
    std::vector<DeviceStream> out;
    if (v.is_none()) return out;
    size_t i = 0;
    for (py::handle item : v) {
        const std::string at = "accel.streams[" + std::to_string(i++) + "]";
        if (!py::isinstance<py::dict>(item)) throw ConfigError(at + " must be a table of workload settings");
        py::dict d = item.cast<py::dict>();
        onlyKeys(d, {"op", "pattern", "target", "requesters", "depth", "footprint_bytes", "requests"}, at, "setting");
        DeviceStream s = base;
        if (d.contains("op")) s.op = py::str(d["op"]);
        if (d.contains("pattern")) s.pattern = py::str(d["pattern"]);
        if (d.contains("target")) s.target = py::str(d["target"]);
        if (d.contains("requesters")) s.requesters = field<uint32_t>(d["requesters"], at, "requesters", 0, 1024);
        if (d.contains("depth")) s.depth = field<uint32_t>(d["depth"], at, "depth", 1, 4096);
        if (d.contains("footprint_bytes"))
            s.footprint_bytes = field<uint64_t>(d["footprint_bytes"], at, "footprint_bytes", 64, 1099511627776.0);
        if (d.contains("requests")) s.requests = field<uint64_t>(d["requests"], at, "requests", 1, 9007199254740991.0);
        out.push_back(s);
    }
    return out;
}

py::dict toDict(const Report& r) {
    py::dict d;
    for (auto& kv : r) d[py::str(kv.first)] = kv.second;
    return d;
}

// Calls back into Python with the GIL; Ctrl-C and a False return cancel.
// Captures a borrowed handle: copies of the std::function are made without
// the GIL, and the caller keeps `cb` alive for the whole run.
Progress wrap(py::handle cb) {
    return [cb](double f) -> bool {
        py::gil_scoped_acquire g;
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        if (cb.is_none()) return true;
        py::object r = cb(f);
        return r.is_none() || r.cast<bool>();
    };
}

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

// A host that refuses every response until `unblockAt`, as gem5's port does
// while it waits for a retry: the host bridge must hold them within its
// response buffer and deliver each once the host takes them.
py::list bridgeBehindBlockedHost(const py::dict& sys, uint32_t reads, double unblockNs) {
    SystemParams sp = readSystem(sys);
    if (sp.kind != MemoryKind::CxlType3 || !sp.windows.empty())
        throw ConfigError("system.kind must be cxl-type3 for this probe");
    struct Up : Requester {
        EventLoop* loop;
        TxnPool* pool;
        Tick unblock;
        py::list done;
        bool tryResp(Txn* t) override {
            if (loop->now() < unblock) return false;
            done.append(py::make_tuple(t->id, t->addr, ticksToNs(std::max(t->mark, loop->now()))));
            pool->put(t);
            return true;
        }
        void retryReq() override {}
    };
    struct Unblocker : Component {
        HostBridge& b;
        Unblocker(Host& h, HostBridge& br) : Component(h), b(br) {}
        void process() override { b.retryResp(); }
    };
    // The system's own bridge, links and devices, with this host in place of its uncore.
    System s(sp);
    Up up;
    up.loop = &s.loop;
    up.pool = &s.pool;
    up.unblock = nsToTicks(unblockNs);
    HostBridge& bridge = *s.host().windows[0].bridge;
    bridge.setRequester(&up);
    Unblocker unblocker(s.loop, bridge);
    unblocker.requestWake(up.unblock);
    for (uint32_t i = 0; i < reads; ++i) {
        Txn* t = s.pool.get();
        t->addr = t->hostAddr = uint64_t(i) * kLineBytes;
        if (!bridge.tryReq(t)) throw ConfigError("probe: the bridge's tracker (cxl.bridge.req_queue) is below reads");
    }
    s.run();
    return up.done;
}

// Components that attach to the event loop while it runs (the loop's arrays
// grow under it): every one of them must fire once.
uint64_t attachDuringRun(uint32_t spawn) {
    struct Child : Component {
        uint64_t& fired;
        Child(Host& h, uint64_t& f) : Component(h), fired(f) {}
        void process() override { ++fired; }
    };
    struct Parent : Component {
        EventLoop& loop;
        uint32_t spawn;
        uint64_t fired = 0;
        std::vector<std::unique_ptr<Child>> kids;
        Parent(EventLoop& l, uint32_t n) : Component(l), loop(l), spawn(n) {}
        void process() override {
            for (uint32_t i = 0; i < spawn; ++i) {
                kids.push_back(std::make_unique<Child>(loop, fired));
                kids.back()->requestWake(now() + 1000 * (i + 1));
            }
        }
    };
    EventLoop loop;
    Parent p(loop, spawn);
    p.requestWake(0);
    loop.run();
    return p.fired;
}

// Components that follow a script, for the event loop's property test: the
// k-th event of the run (whichever component fires) performs actions[k], each
// (kind, target, delay): "wake" asks component `target` for a wake-up at
// now + delay (clamped at 0), "spawn" attaches a new component and wakes it
// so, "detach" takes `target` off the loop, "stop" stops the run. The loop
// then runs once per entry of `untils` (None: no limit).
using LoopActions = std::vector<std::vector<std::tuple<std::string, uint32_t, int64_t>>>;

class LoopScript : public Watch {
  public:
    explicit LoopScript(const LoopActions& a) : actions_(a) {}
    EventLoop loop;
    py::list fired, checks;

    void check(Tick now) override { checks.append(py::make_tuple(loop.events(), now)); }
    void add() {
        comps_.push_back(std::make_unique<Scripted>(loop, *this, comps_.size()));
        gone_.push_back(false);
        if (comps_.back()->slot != comps_.size() - 1) throw std::logic_error("event loop: slots out of order");
    }
    void wake(uint32_t i, int64_t delay) {
        Scripted& c = at(i);
        if (gone_[i]) return;
        const Tick n = loop.now();
        c.requestWake(delay < 0 && Tick(-delay) > n ? 0 : n + Tick(delay));
    }

  private:
    struct Scripted : Component {
        LoopScript& s;
        size_t index;
        Scripted(Host& h, LoopScript& sc, size_t i) : Component(h), s(sc), index(i) {}
        void process() override { s.fire(index); }
    };
    Scripted& at(uint32_t i) {
        if (i >= comps_.size())
            throw ConfigError("event loop script: component " + std::to_string(i) + " does not exist; allowed: 0 to " +
                              std::to_string(comps_.size() - 1));
        return *comps_[i];
    }
    void fire(size_t i) {
        fired.append(py::make_tuple(i, loop.now()));
        const size_t k = events_++;
        if (k >= actions_.size()) return;
        for (auto& [kind, target, delay] : actions_[k]) {
            if (kind == "wake") {
                wake(target, delay);
            } else if (kind == "spawn") {
                add();
                wake(uint32_t(comps_.size() - 1), delay);
            } else if (kind == "detach") {
                // Off the loop at once (the destructor's detach, which runs
                // later, finds it gone): the firing component may detach itself.
                loop.detach(&at(target));
                gone_[target] = true;
            } else if (kind == "stop") {
                loop.stop();
            } else {
                throw ConfigError("event loop script: action '" + kind +
                                  "' is not allowed; allowed: wake, spawn, detach, stop");
            }
        }
    }
    const LoopActions& actions_;
    std::vector<std::unique_ptr<Scripted>> comps_;
    std::vector<bool> gone_;
    size_t events_ = 0;
};

py::dict eventLoopScript(uint32_t components, const std::vector<std::pair<uint32_t, int64_t>>& initial,
                         const LoopActions& actions, const std::vector<std::optional<uint64_t>>& untils, bool watch) {
    LoopScript s(actions);
    for (uint32_t i = 0; i < components; ++i) s.add();
    for (auto& [i, t] : initial) s.wake(i, t);
    if (watch) s.loop.watch(&s);
    py::list stops;
    for (auto& u : untils) {
        s.loop.run(u ? *u : kNever);
        stops.append(s.loop.now());
    }
    py::dict d;
    d["fired"] = s.fired;
    d["stops"] = stops;
    d["checks"] = s.checks;
    d["events"] = s.loop.events();
    return d;
}

}  // namespace

void bindAcpi(py::module_& parent, Graph (*graphOf)(const py::dict&));  // acpi.cpp
void bindCxlio(py::module_& parent, Graph (*graphOf)(const py::dict&));  // cxlio.cpp
void bindTrace(py::module_& m);  // trace.cpp
void bindNic(py::module_& m, Graph (*graphOf)(const py::dict&), Progress (*progress)(py::handle),
             py::dict (*report)(const Report&));  // nic.cpp
void bindShared(py::module_& m, Graph (*graphOf)(const py::dict&), Progress (*progress)(py::handle),
                py::dict (*report)(const Report&));  // shared.cpp

PYBIND11_MODULE(_core, m) {
    m.doc() = "SimCXL standalone engine (C++ timing core)";
    static py::exception<ConfigError> configError(m, "ConfigError", PyExc_ValueError);
    // A cancel asked for by a progress callback is an ordinary error: code that
    // catches Exception must see it (Ctrl-C still arrives as KeyboardInterrupt).
    static py::exception<Cancelled> cancelled(m, "Cancelled", PyExc_RuntimeError);
    static py::exception<StallError> stallError(m, "StallError", PyExc_RuntimeError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const ConfigError& e) {
            PyErr_SetString(configError.ptr(), e.what());
        } catch (const Cancelled& e) {
            PyErr_SetString(cancelled.ptr(), e.what());
        } catch (const StallError& e) {
            PyErr_SetString(stallError.ptr(), e.what());
        }
    });

    m.def("schema", [] {
        py::dict out;
        for (auto& s : schema()) {
            py::list fields;
            for (auto& f : s.second) fields.append(py::make_tuple(f.name, f.integer, f.def, f.lo, f.hi));
            out[py::str(s.first)] = fields;
        }
        return out;
    }, "Parameter names, integrality, defaults and ranges of every C++ struct.");

    m.def("validate", [](py::dict sys) { readSystem(sys); },
          "Checks a system (a graph: components and connections); raises ConfigError.");
    m.def("component_types", [] {
        py::list out;
        for (const TypeSpec& t : componentTypes()) {
            py::list groups, ports;
            for (const GroupSpec& g : t.groups) groups.append(py::make_tuple(g.key, g.schema));
            for (const PortSpec& p : t.ports)
                ports.append(py::dict(py::arg("name") = p.name, py::arg("channel") = p.channel == PortChannel::Mem ? "mem" : "cxl",
                                      py::arg("protocols") = p.protocols, py::arg("faces") = p.down ? "down" : "up",
                                      py::arg("multi") = p.multi, py::arg("required") = p.required,
                                      py::arg("doc") = p.doc));
            py::dict derived;
            for (const auto& d : t.derived) derived[py::str(d.first)] = d.second;
            out.append(py::dict(py::arg("name") = t.name, py::arg("doc") = t.doc, py::arg("groups") = groups,
                                py::arg("ports") = ports, py::arg("derived") = derived));
        }
        return out;
    }, "The registered component types: their parameter groups (key, schema struct), ports and derived parameters.");

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
             std::string stores, py::object target, py::object streams, uint64_t accelRequests, py::object cb) {
              SystemParams p = readSystem(sys);
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
              Progress pr = wrap(cb);
              return runReleased([&] { return runMixed(p, c, pr); });
          },
          py::arg("system"), py::arg("host"), py::arg("kernel"), py::arg("threads"), py::arg("lines_per_thread"),
          py::arg("placement") = "first-touch", py::arg("stores") = "write-allocate", py::arg("target") = py::none(),
          py::arg("streams") = py::none(), py::arg("accel_requests") = 200000, py::arg("progress") = py::none(),
          "The host's STREAM and the accelerators' streams (one per device: op, pattern, target (a window, device "
          "or a Type-2 device's name), requesters, depth, footprint_bytes) at once in one system; host False: the "
          "accelerators alone, measured over accel_requests accesses.");

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

    bindAcpi(m, readGraph);
    bindCxlio(m, readGraph);
    bindTrace(m);
    bindNic(m, readGraph, wrap, toDict);
    bindShared(m, readGraph, wrap, toDict);
    py::module_ testing = m.def_submodule("_testing", "Probes of single components, for the tests.");
    testing.def("bridge_behind_blocked_host", &bridgeBehindBlockedHost, py::arg("system"), py::arg("reads"),
                py::arg("unblock_ns"),
                "Reads at t=0 through a host bridge whose host refuses responses until unblock_ns: "
                "[(txn id, host address, done ns)] in delivery order.");
    testing.def("histogram", [](const std::vector<uint64_t>& values, const std::vector<double>& qs) {
        LogHistogram h;
        for (uint64_t v : values) h.add(v);
        py::dict d;
        d["count"] = h.count();
        d["sum"] = h.sum();
        d["min"] = h.min();
        d["max"] = h.max();
        d["mean"] = h.mean();
        std::vector<double> p;
        for (double q : qs) p.push_back(h.percentile(q));
        d["percentiles"] = p;
        d["bytes"] = h.bytes();
        d["relative_error"] = LogHistogram::kRelativeError;
        return d;
    }, py::arg("values"), py::arg("quantiles"), "The statistics histogram (kernel/stats.hpp) of the values.");
    testing.def("histogram_bytes", [](uint64_t n, uint64_t maxValue) {
        // n pseudo-random values in [0, maxValue), without passing them through Python.
        LogHistogram h;
        uint64_t x = 88172645463325252ull;
        for (uint64_t i = 0; i < n; ++i) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            h.add(x % maxValue);
        }
        return h.bytes();
    }, py::arg("n"), py::arg("max_value"), "Memory the histogram holds after n values below max_value.");
    testing.def("attach_during_run", &attachDuringRun, py::arg("spawn"),
                "A component that attaches `spawn` more while the loop runs; how many of them fired.");
    testing.def("event_loop_script", &eventLoopScript, py::arg("components"), py::arg("initial"), py::arg("actions"),
                py::arg("untils"), py::arg("watch") = false,
                "Scripted components on an EventLoop: action list k runs at the k-th event ((kind, target, delay); "
                "kind wake, spawn, detach or stop); one run per entry of untils (None: no limit). Returns the "
                "firings [(component, time)], the time after each run, the Watch checks [(events, time)] and the "
                "event count.");

    m.def("link_info", [](py::dict link) {
        LinkParams lp = readLinkParams(link, "cxl.link");
        CxlLink l(lp, "cxl.link", 1);
        py::dict d;
        d["raw_gbps"] = l.rawBytesPerSec() / 1e9;
        d["flit_ns"] = ticksToNs(l.m2s_.flitTime());
        d["units_per_flit"] = l.unitsPerFlit();
        d["read_data_peak_gbps"] = l.peakDataBytesPerSec(kS2MDrs) / 1e9;
        d["write_data_peak_gbps"] = l.peakDataBytesPerSec(kM2SRwD) / 1e9;
        return d;
    }, "Derived link figures: raw rate, flit time, best-case data bandwidth per direction.");

    m.def("message_sizes", [] {
        py::dict d;
        for (uint32_t c = 0; c < kNumCacheMemChannels; ++c) {
            const MessageFormat& f = kMessageFormats[c];
            py::dict e;
            e["header_bits"] = f.headerBits;
            e["data_bytes"] = f.dataBytes;
            e["units"] = messageUnits(Channel(c));
            d[f.name] = e;
        }
        return d;
    }, "The link's message-size table: each CXL.cachemem channel's header bits, data bytes and half-slots.");
    m.def("commands", [] {
        py::list l;
        for (const Command& c : kCommands.c) {
            py::dict e;
            e["name"] = c.name;
            e["opcode"] = int(c.opc);
            e["channel"] = c.chan < kNumChannels ? py::object(py::str(channelName(c.chan))) : py::object(py::none());
            e["upstream"] = c.chan < kNumChannels ? py::object(py::bool_(isUpstream(c.chan))) : py::object(py::none());
            e["request"] = c.isRequest();
            e["response"] = c.isResponse();
            e["read"] = c.isRead();
            e["write"] = c.isWrite();
            e["data"] = c.hasData();
            e["data_bytes"] = int(c.dataBytes);
            e["payload"] = c.is(kHasPayload);
            e["units"] = int(c.units);
            e["link_bytes"] = int(c.units * kHalfSlotBytes);
            e["leaves_invalid"] = c.is(kLeavesI);
            e["leaves_shared"] = c.is(kLeavesS);
            e["data_follows"] = c.is(kDataFollows);
            py::list rsp;
            for (uint32_t r = 0; r < kNumOpcodes; ++r)
                if (c.responses >> r & 1) rsp.append(kCommands.c[r].name);
            e["responses"] = rsp;
            l.append(e);
        }
        return l;
    }, "The command table, one dict per opcode in opcode order: its channel (None: never on a link), request or "
       "response, memory read or write, a line of data (data_bytes) or a TLP payload, half-slots on the link "
       "(units; 0 for a TLP, sized by its payload), snoop-response facts and the opcodes that may answer it.");
    {
        py::list stages;
        for (int s = 0; s < kNumStages; ++s) stages.append(stageName(Stage(s)));
        m.attr("STAGES") = py::tuple(stages);
    }
    m.attr("TXN_POOL_CHUNK") = py::int_(TxnPool::kChunk);
    m.attr("MAX_HOSTS") = py::int_(kMaxHosts);
    m.def("tlp_units", &tlpUnits, py::arg("overhead_bytes"), py::arg("payload_bytes"),
          "Half-slots a CXL.io TLP takes on a link.");

    m.def("dram_info", [](py::dict dram, std::vector<uint64_t> addrs) {
        DramParams dp = readDramParams(dram, "dram");
        EventLoop loop;
        DramController c(loop, dp, "dram");
        py::dict d;
        d["peak_gbps"] = c.peakBytesPerSec() / 1e9;
        py::list locs;
        for (uint64_t a : addrs) {
            auto l = c.decode(a);
            locs.append(py::make_tuple(l.channel, l.rank, l.bank, l.row));
        }
        d["decode"] = locs;
        return d;
    }, "Derived DRAM figures and the (channel, rank, bank, row) of addresses.");

    m.def("cache_replay", [](py::dict host, std::vector<uint64_t> addrs, uint64_t seed) {
        HostParams hp = readHostParams(host, "host");
        std::vector<int> out;
        out.reserve(addrs.size());
        {
            py::gil_scoped_release nogil;
            CacheHierarchy h(hp, seed);
            for (uint64_t a : addrs) out.push_back(h.access(a));
        }
        return out;
    }, py::arg("host"), py::arg("addresses"), py::arg("seed") = 1,
       "The level (0 L1, 1 L2, 2 LLC, 3 memory) that answers each physical address, in order, through the "
       "host's caches from cold (tests derive cache policies by hand).");

    m.def("dram_replay", [](py::dict dram, std::vector<std::tuple<double, std::string, uint64_t>> reqs) {
        DramParams dp = readDramParams(dram, "dram");
        std::vector<DramRequest> rs;
        for (const auto& [at, op, addr] : reqs) {
            if (op != "R" && op != "W") throw ConfigError("dram_replay: op '" + op + "' is not allowed; allowed: R, W");
            rs.push_back(DramRequest{nsToTicks(at), op == "W", addr});
        }
        DramReplay r;
        {
            py::gil_scoped_release nogil;
            r = replayDram(dp, rs);
        }
        py::dict d;
        py::list done;
        for (Tick t : r.done) done.append(t == kNever ? -1.0 : ticksToNs(t));
        d["done_ns"] = done;
        const DramStats& s = r.stats;
        for (const auto& [k, v] : {std::pair<const char*, uint64_t>{"reads", s.reads}, {"writes", s.writes},
                                   {"row_hits", s.rowHits}, {"row_misses", s.rowMisses},
                                   {"row_conflicts", s.rowConflicts}, {"refreshes", s.refreshes},
                                   {"refreshes_postponed", s.refreshesPostponed}, {"turnarounds", s.turnarounds},
                                   {"rank_switches", s.rankSwitches}, {"write_bursts", s.writeBursts}})
            d[k] = v;
        return d;
    }, py::arg("dram"), py::arg("requests"),
       "Replays (time_ns, 'R' or 'W', address) requests on one DRAM controller: completion times and counters.");

    m.def("hdm_decode", [](uint32_t ways, uint32_t gran, std::vector<uint64_t> hpas, uint64_t base, uint64_t size) {
        BridgeParams bp;
        bp.root_ports = std::max<uint32_t>(ways, 1);
        bp.interleave_ways = ways;
        bp.interleave_bytes = gran;
        bp.validate("cxl.bridge");
        const uint64_t unit = uint64_t(ways) * gran, rest = base < HdmDecoder::kMaxWindow ? HdmDecoder::kMaxWindow - base : 0;
        HdmDecoder h("cxl.bridge", base, size ? size : rest / unit * unit, ways, gran);
        py::list out;
        for (uint64_t a : hpas) {
            auto t = h.decode(a);
            out.append(py::make_tuple(t.port, t.dpa, h.encode(t.port, t.dpa)));
        }
        return out;
    }, py::arg("ways"), py::arg("granularity"), py::arg("hpas"), py::arg("base") = 0, py::arg("size") = 0,
    "HDM decoding of host addresses in the window [base, base + size) (size 0: to the end of the 52-bit "
    "space): (root port, device address, re-encoded host address).");
}
