#include "readers.hpp"

#include <optional>

namespace binding {

#define CXL_READ_FIELD(type, name, def, lo, hi)                             \
    if (d.contains(#name)) {                                                \
        s.name = field<type>(d[#name], where, #name, lo, hi);               \
        known.insert(#name);                                                \
    }

// Rejects keys outside `allowed`, naming the key and listing what is allowed.
void onlyKeys(const py::dict& d, const std::set<std::string>& allowed, const std::string& where,
              const char* what) {
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
    if (!d.contains(key)) throw ConfigError(where + "." + key + " is missing; add its table of parameters ('simcxl topology types' lists them)");
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
    throw ConfigError(where + ": no parameter group " + schema + "; allowed: the groups 'simcxl topology types' lists");
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
                if (!e.contains(k)) throw ConfigError(w + "." + k + " is missing; add " + k + " to it (every committed decoder gives base, size, ways, granularity)");
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
        onlyKeys(k, {"from", "to", "base", "size", "qos_limit", "qos_allocation", "pid"}, at, "connection key");
        if (!k.contains("from") || !k.contains("to")) throw ConfigError(at + ": from and to are both needed; add the missing one, e.g. {from = 'host.mem', to = 'ddr.up'}");
        Connection c;
        c.from = readPortRef(k["from"], at + ".from");
        c.to = readPortRef(k["to"], at + ".to");
        const bool base = k.contains("base") && !k["base"].is_none(), size = k.contains("size") && !k["size"].is_none();
        if (base != size) throw ConfigError(at + ": base and size come together (a window); give both or neither");
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
        if (k.contains("pid") && !k["pid"].is_none()) c.pid = int(field<uint32_t>(k["pid"], at, "pid", 0, kPbrPids - 1));
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
        if (pair.size() != 2) throw ConfigError("target: each entry is (window, weight); allowed: pairs such as ('cxl0', 1)");
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

}  // namespace binding
