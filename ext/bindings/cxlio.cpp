// simcxl._core.cxlio: the CXL.io side of devices and ports (ext/cxlcore/cxlio):
// configuration space, component and device registers, the mailbox and the
// decoders the OS commits. Tests drive them as Linux's drivers would; a gem5
// PCI wrapper forwards its config and BAR accesses the same way.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cxlcore/cxlio/function.hpp"
#include "cxlcore/system/graph.hpp"

namespace py = pybind11;
using namespace cxlcore;
using namespace cxlcore::cxlio;

namespace {

// Checkpoint state as Python bytes.
constexpr const char* kSaveStateDoc = "What software left in the registers, as bytes (a simulator checkpoint's part).";
constexpr const char* kLoadStateDoc = "Restores save_state's bytes; another kind or size of function's is a ConfigError.";

template <class T>
py::bytes stateBytes(const T& regs) {
    const std::vector<uint8_t> s = saveState(regs);
    return py::bytes(reinterpret_cast<const char*>(s.data()), s.size());
}

template <class T>
void loadStateBytes(T& regs, const py::bytes& b) {
    const std::string s = b;
    loadState(regs, std::vector<uint8_t>(s.begin(), s.end()), "load_state");
}

using ReadGraph = Graph (*)(const py::dict&);

// A whole number in [lo, hi], or a ConfigError naming it and the range.
uint64_t ranged(py::handle v, const char* name, uint64_t lo, uint64_t hi) {
    if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
        throw ConfigError(std::string(name) + " = " + std::string(py::repr(v)) + " is not a whole number; allowed: " +
                          std::to_string(lo) + " to " + std::to_string(hi));
    const py::int_ i = v.cast<py::int_>();
    if (i < py::int_(lo) || i > py::int_(hi))
        throw ConfigError(std::string(name) + " = " + std::string(py::str(i)) + " is out of range; allowed: " +
                          std::to_string(lo) + " to " + std::to_string(hi));
    return i.cast<uint64_t>();
}

// An access's offset and width as the hardware sees them: anything that does
// not fit is passed on as a malformed access (counted, never raised).
uint64_t offsetOf(py::handle v) { return ranged(v, "offset", 0, ~0ull >> 1); }
unsigned sizeOf(py::handle v) { return unsigned(ranged(v, "size", 0, 64)); }

// The node `component` of type `type` in a system, checked.
const Node& nodeOf(const Graph& g, const std::string& component, const char* type) {
    const Node* n = g.find(component);
    if (!n || n->type != type)
        throw ConfigError("component = '" + component + "' is not a " + type + " component of system " + g.name);
    return *n;
}

// The link above a device or port: the link component whose down port reaches it.
LinkParams linkAbove(const Graph& g, const std::string& component) {
    for (const Connection& c : g.connections)
        if (c.to.comp == component) {
            const Node* up = g.find(c.from.comp);
            if (up && up->type == "link") return up->params.LinkParams_;
        }
    return LinkParams{};
}

py::dict statsDict(const IoStats& s) {
    return py::dict(py::arg("config_reads") = s.configReads, py::arg("config_writes") = s.configWrites,
                    py::arg("bad_config_accesses") = s.badConfigAccesses, py::arg("mmio_reads") = s.mmioReads,
                    py::arg("mmio_writes") = s.mmioWrites, py::arg("bad_mmio_accesses") = s.badMmioAccesses,
                    py::arg("locked_writes") = s.lockedWrites, py::arg("commits") = s.commits,
                    py::arg("commit_errors") = s.commitErrors, py::arg("doe_requests") = s.doeRequests,
                    py::arg("doe_errors") = s.doeErrors, py::arg("mailbox_commands") = s.mailboxCommands,
                    py::arg("mailbox_failures") = s.mailboxFailures);
}

py::list decodersList(const std::vector<CommittedDecoder>& ds) {
    py::list out;
    for (const CommittedDecoder& d : ds)
        out.append(py::dict(py::arg("index") = d.index, py::arg("base") = d.base, py::arg("size") = d.size,
                            py::arg("ways") = d.ways, py::arg("granularity") = d.granularity,
                            py::arg("targets") = d.targets, py::arg("dpa_base") = d.dpaBase,
                            py::arg("dpa_size") = d.dpaSize, py::arg("locked") = d.locked,
                            py::arg("host_only") = d.hostOnly));
    return out;
}

// Runs one mailbox command through the registers, as cxl_pci's
// __cxl_pci_mbox_send_cmd does: payload, command register, doorbell, then the
// return code, the output length and the output.
py::tuple mailbox(Type3Function& f, py::handle opcode, py::bytes payload, py::object length) {
    const uint16_t op = uint16_t(ranged(opcode, "opcode", 0, 0xFFFF));
    const std::string in = payload;
    if (in.size() > kPayloadBytes)
        throw ConfigError("payload is " + std::to_string(in.size()) + " bytes; allowed: at most " +
                          std::to_string(kPayloadBytes) + " (the mailbox's payload size)");
    const uint64_t len = length.is_none() ? in.size() : ranged(length, "length", 0, (1u << 21) - 1);
    const uint64_t mb = Type3Function::kDeviceRegsOffset + kMailboxOffset;
    for (size_t i = 0; i < in.size(); ++i) f.mmioWrite(mb + kMbPayload + i, 1, uint8_t(in[i]));
    f.mmioWrite(mb + kMbCmd, 8, op | len << 16);
    f.mmioWrite(mb + kMbCtrl, 4, 1);
    const uint16_t rc = uint16_t(f.mmioRead(mb + kMbStatus, 8) >> 32);
    const uint64_t outLen = std::min<uint64_t>(f.mmioRead(mb + kMbCmd, 8) >> 16 & 0x1FFFFF, kPayloadBytes);
    std::string out(outLen, '\0');
    for (size_t i = 0; i < outLen; ++i) out[i] = char(f.mmioRead(mb + kMbPayload + i, 1));
    return py::make_tuple(rc, py::bytes(out));
}

// Platform firmware's commit of decoder `index` (ComponentRegs::commitDecoder): ValueError with the reason when refused.
void firmwareCommit(ComponentRegs& r, py::handle index, py::handle base, py::handle size, py::handle ways,
                    py::handle granularity, const std::vector<uint32_t>& targets, py::handle skip, bool lock) {
    cxlio::CommittedDecoder d;
    d.base = ranged(base, "base", 0, ~0ull);
    d.size = ranged(size, "size", 0, ~0ull);
    d.ways = uint32_t(ranged(ways, "ways", 1, 16));
    d.granularity = uint32_t(ranged(granularity, "granularity", 256, 16384));
    d.targets = targets;
    d.locked = lock;
    const std::string err = r.commitDecoder(uint32_t(ranged(index, "index", 0, 9)), d, ranged(skip, "skip", 0, ~0ull));
    if (!err.empty()) throw py::value_error(err);
}

// A decoder as {base, size, ways, granularity, targets?} for position_below_switch.
CommittedDecoder decoderOf(const py::dict& d, const std::string& what) {
    for (const char* k : {"base", "size", "ways", "granularity"})
        if (!d.contains(k)) throw ConfigError(what + "." + k + " is missing; give base, size, ways and granularity");
    CommittedDecoder x;
    x.base = ranged(d["base"], (what + ".base").c_str(), 0, (1ull << 52) - 1);
    x.size = ranged(d["size"], (what + ".size").c_str(), 1, 1ull << 52);
    x.ways = uint32_t(ranged(d["ways"], (what + ".ways").c_str(), 1, 16));
    x.granularity = uint32_t(ranged(d["granularity"], (what + ".granularity").c_str(), 256, 16384));
    if (d.contains("targets")) x.targets = d["targets"].cast<std::vector<uint32_t>>();
    if (d.contains("dpa_base")) x.dpaBase = ranged(d["dpa_base"], (what + ".dpa_base").c_str(), 0, 1ull << 52);
    return x;
}

std::vector<CommittedDecoder> decodersOf(const py::handle& list, const std::string& what) {
    std::vector<CommittedDecoder> out;
    for (py::handle d : list) out.push_back(decoderOf(d.cast<py::dict>(), what + "[" + std::to_string(out.size()) + "]"));
    return out;
}

const char* const kFirmwareCommitDoc =
    "Programs and commits a decoder as platform firmware does (register writes, then HDM Decoder Enable); "
    "ValueError with the registers' reason when they refuse.";

template <typename C>
void bindFunction(C& c) {
    using F = typename C::type;
    c.def("config_read", [](F& f, py::handle off, py::handle size) {
          const uint64_t o = offsetOf(off);
          return f.configRead(uint32_t(std::min<uint64_t>(o, ~0u)), sizeOf(size));
      }, py::arg("offset"), py::arg("size") = 4,
       "A configuration read (1, 2 or 4 bytes, aligned, below 4096; others are counted and answer all ones).")
        .def("config_write", [](F& f, py::handle off, py::handle size, py::handle value) {
            const uint64_t o = offsetOf(off);
            f.configWrite(uint32_t(std::min<uint64_t>(o, ~0u)), sizeOf(size), uint32_t(ranged(value, "value", 0, ~0u)));
        }, py::arg("offset"), py::arg("size"), py::arg("value"))
        .def("mmio_read", [](F& f, py::handle off, py::handle size) { return f.mmioRead(offsetOf(off), sizeOf(size)); },
             py::arg("offset"), py::arg("size") = 4, "A read at an offset within BAR 0 (4 or 8 bytes for component registers).")
        .def("mmio_write", [](F& f, py::handle off, py::handle size, py::handle value) {
            f.mmioWrite(offsetOf(off), sizeOf(size), ranged(value, "value", 0, ~0ull));
        }, py::arg("offset"), py::arg("size"), py::arg("value"))
        .def("committed_decoders", [](const F& f) { return decodersList(f.committedDecoders()); },
             "The HDM decoders committed, as the OS programmed them: base, size, ways, granularity, targets "
             "(port numbers) or the device range.")
        .def("firmware_commit", [](F& f, py::handle i, py::handle base, py::handle size, py::handle ways,
                                   py::handle gran, const std::vector<uint32_t>& targets, py::handle skip, bool lock) {
            firmwareCommit(f.component(), i, base, size, ways, gran, targets, skip, lock);
        }, py::arg("index"), py::arg("base"), py::arg("size"), py::arg("ways") = 1, py::arg("granularity") = 256,
           py::arg("targets") = std::vector<uint32_t>{}, py::arg("skip") = 0, py::arg("lock") = false, kFirmwareCommitDoc)
        .def_property_readonly("hdm_enabled", &F::hdmEnabled)
        .def_property_readonly("poison_on_decode_error", [](F& f) { return f.component().poisonOnDecodeError(); })
        .def_property_readonly("bar_bytes", &F::barBytes)
        .def_property_readonly("bar_address", &F::barAddress)
        .def_property_readonly("last_commit_error", [](F& f) { return f.component().lastCommitError(); })
        .def("inject_ras", [](F& f, bool uncorrectable, py::handle bit) {
            f.component().injectRas(uncorrectable, unsigned(ranged(bit, "bit", 0, 31)));
        }, py::arg("uncorrectable"), py::arg("bit"), "Raises a RAS status bit as the hardware would report an error.")
        .def("stats", [](const F& f) { return statsDict(f.stats()); })
        .def("save_state", &stateBytes<F>, kSaveStateDoc)
        .def("load_state", &loadStateBytes<F>, py::arg("state"), kLoadStateDoc);
}

}  // namespace

void bindCxlio(py::module_& parent, ReadGraph graphOf) {
    py::module_ m = parent.def_submodule(
        "cxlio", "CXL.io: configuration space, component and device registers, mailbox and committed HDM decoders.");
    m.attr("COMPONENT_OFFSET") = 0;
    m.attr("CACHEMEM_OFFSET") = kCacheMemOffset;
    m.attr("DEVICE_OFFSET") = Type3Function::kDeviceRegsOffset;
    m.attr("PAYLOAD_BYTES") = kPayloadBytes;

    m.def("position_below_switch",
          [](const py::dict& bridge, py::handle rootPort, const py::dict& usp, py::handle way,
             const py::dict& device) -> py::object {
              uint32_t pos = 0;
              if (!positionBelowSwitch(decoderOf(bridge, "bridge"), uint32_t(ranged(rootPort, "root_port", 0, 255)),
                                       decoderOf(usp, "usp"), uint32_t(ranged(way, "way", 0, 15)),
                                       decoderOf(device, "device"), pos))
                  return py::none();
              return py::int_(pos);
          },
          py::arg("bridge"), py::arg("root_port"), py::arg("usp"), py::arg("way"), py::arg("device"),
          "The position in its region of the device below way `way` of a switch's upstream decoder `usp`, the "
          "switch below root port `root_port` of host bridge decoder `bridge` (decoders as {base, size, ways, "
          "granularity, targets}): how gem5's host bridge places each device below a switch; None if the "
          "decoders send no chunk of the region there.");
    m.def("route_below_switch",
          [](const py::list& bridge, py::handle rootPort, const py::list& usp, const py::list& devices,
             py::handle hpa) -> py::object {
              std::vector<std::vector<CommittedDecoder>> devs;
              for (py::handle d : devices) devs.push_back(decodersOf(d, "devices[" + std::to_string(devs.size()) + "]"));
              const CommittedRoutes routes(
                  "switch", switchRegionsBelowBridge(decodersOf(bridge, "bridge"),
                                                     uint32_t(ranged(rootPort, "root_port", 0, 255)),
                                                     decodersOf(usp, "usp"), devs),
                  false);
              HdmDecoder::Target tg;
              const uint64_t a = ranged(hpa, "hpa", 0, (1ull << 52) - 1);
              if (!routes.route(a, tg)) return py::none();
              return py::make_tuple(tg.port, tg.dpa, routes.hpaOf(tg.port, tg.dpa));
          },
          py::arg("bridge"), py::arg("root_port"), py::arg("usp"), py::arg("devices"), py::arg("hpa"),
          "How gem5's switch below root port `root_port` routes `hpa` by the decoders committed at the host bridge "
          "(`bridge`), at its upstream port (`usp`) and at the device below each downstream port (`devices`, "
          "lists of {base, size, ways, granularity, targets, dpa_base}): (downstream port, DPA, the host address "
          "its response maps back to), or None where no decoder covers it.");
    m.def("route", [graphOf](const py::dict& system, py::handle hpa, py::object bridge) -> py::object {
              const Graph g = graphOf(system);
              g.check();
              std::string hb;
              for (const auto& kv : g.decoders)
                  if (hb.empty() && bridge.is_none() && g.find(kv.first)->type == "host_bridge") hb = kv.first;
              if (!bridge.is_none()) hb = bridge.cast<std::string>();
              const auto d = g.decoders.find(hb);
              if (d == g.decoders.end() || g.find(hb)->type != "host_bridge")
                  throw ConfigError("host_bridge = '" + hb + "': no host bridge of that name routes by committed "
                                    "decoders in system " + g.name);
              const CommittedRoutes routes(hb, g.regions(hb), d->second.poison);
              HdmDecoder::Target tg;
              if (!routes.route(ranged(hpa, "hpa", 0, (1ull << 52) - 1), tg)) return py::none();
              const Connection* port = g.leaving(hb, "root_port").at(tg.port);
              const uint32_t rp = port->from.index >= 0 ? uint32_t(port->from.index) : tg.port;
              // Down through the switches whose upstream ports committed decoders, each decoding the host address.
              py::list path;
              while (g.pastLink(*port).type == "switch" && g.decoders.count(g.pastLink(*port).name)) {
                  const std::string sw = g.pastLink(*port).name;
                  const CommittedRoutes sr(sw, g.switchRegions(sw), g.decoders.at(sw).poison);
                  if (!sr.route(tg.dpa, tg)) return py::none();
                  port = g.leaving(sw, "dsp").at(tg.port);
                  path.append(py::make_tuple(sw, port->from.index >= 0 ? uint32_t(port->from.index) : tg.port));
              }
              py::dict out(py::arg("root_port") = rp, py::arg("device") = g.pastLink(*port).name,
                           py::arg("dpa") = tg.dpa);
              if (path.size()) out["switches"] = path;
              return out;
          },
          py::arg("system"), py::arg("hpa"), py::arg("host_bridge") = py::none(),
          "Where a host bridge's committed decoders (and those of the switches below it) send a host physical "
          "address, as the engine routes it: {root_port, device, dpa}, with switches: [(switch, downstream port), "
          "...] below switches; None when no committed decoder covers it.");

    py::class_<Type3Function> t3(m, "Type3",
        "A Type-3 memory device's PCIe function: its parameters (and so its CDAT) from a system's type3 "
        "component and the link above it, or the defaults.");
    t3.def(py::init([graphOf](py::handle capacity, py::object system, py::object component, py::handle lsa,
                                py::handle decoders) {
              const uint64_t cap = ranged(capacity, "capacity_bytes", 1, 1ull << 52);
              const uint32_t lsaBytes = uint32_t(ranged(lsa, "lsa_bytes", 0, 1u << 20));
              const uint32_t n = uint32_t(ranged(decoders, "hdm_decoders", 1, 10));
              if (system.is_none()) return new Type3Function(DeviceParams{}, DramParams{}, LinkParams{}, cap, lsaBytes, n);
              if (component.is_none()) throw ConfigError("component: name the type3 component of the system");
              const Graph g = graphOf(system.cast<py::dict>());
              g.check();
              const std::string name = component.cast<std::string>();
              const Node& node = nodeOf(g, name, "type3");
              return new Type3Function(node.params.DeviceParams_, node.params.DramParams_, linkAbove(g, name), cap,
                                       lsaBytes, n);
          }),
          py::arg("capacity_bytes"), py::arg("system") = py::none(), py::arg("component") = py::none(),
          py::arg("lsa_bytes") = 1024, py::arg("hdm_decoders") = 4)
        .def("mailbox", &mailbox, py::arg("opcode"), py::arg("payload") = py::bytes(""), py::arg("length") = py::none(),
             "Runs a mailbox command through the registers; returns (return_code, output bytes). `length` "
             "overrides the command register's payload length.")
        .def("set_media_ready", [](Type3Function& f, bool ready) { f.device().setMediaReady(ready); }, py::arg("ready"))
        .def_property_readonly("dvsec_offset", &Type3Function::dvsecOffset);
    bindFunction(t3);

    py::class_<PortFunction> port(m, "Port",
        "A CXL root port or switch port's PCIe function (type 1 header); a switch upstream port has HDM decoders "
        "over its downstream ports.");
    port.def(py::init([graphOf](const std::string& kind, py::handle number, py::handle decoders, py::handle targets,
                                  py::object system, py::object link) {
                 static const std::pair<const char*, PortKind> kinds[] = {{"root", PortKind::Root},
                                                                          {"switch_upstream", PortKind::SwitchUpstream},
                                                                          {"switch_downstream", PortKind::SwitchDownstream}};
                 const PortKind* k = nullptr;
                 for (auto& p : kinds)
                     if (kind == p.first) k = &p.second;
                 if (!k) throw ConfigError("kind = '" + kind + "' is not allowed; allowed: root, switch_upstream, switch_downstream");
                 LinkParams lp;
                 if (!system.is_none()) {
                     const Graph g = graphOf(system.cast<py::dict>());
                     g.check();
                     lp = nodeOf(g, link.cast<std::string>(), "link").params.LinkParams_;
                 }
                 return new PortFunction(*k, uint8_t(ranged(number, "port_number", 0, 255)), lp,
                                         uint32_t(ranged(decoders, "hdm_decoders", 0, 10)),
                                         uint32_t(ranged(targets, "targets", 1, 8)));
             }),
             py::arg("kind"), py::arg("port_number") = 0, py::arg("hdm_decoders") = 0, py::arg("targets") = 1,
             py::arg("system") = py::none(), py::arg("link") = py::none());
    bindFunction(port);

    py::class_<ComponentRegs> hb(m, "HostBridgeRegisters",
        "A host bridge's component registers (what a CEDT CHBS points to): its HDM decoders over its root ports.");
    hb.def(py::init([](py::handle decoders, py::handle targets) {
               return new ComponentRegs(ComponentKind::HostBridge, uint32_t(ranged(decoders, "hdm_decoders", 1, 10)),
                                        uint32_t(ranged(targets, "targets", 1, 8)), 0, LinkParams{});
           }),
           py::arg("hdm_decoders") = 4, py::arg("targets") = 1)
        .def("mmio_read", [](ComponentRegs& r, py::handle off, py::handle size) {
            return r.read(uint32_t(std::min<uint64_t>(offsetOf(off), ~0u)), sizeOf(size));
        }, py::arg("offset"), py::arg("size") = 4)
        .def("mmio_write", [](ComponentRegs& r, py::handle off, py::handle size, py::handle value) {
            r.write(uint32_t(std::min<uint64_t>(offsetOf(off), ~0u)), sizeOf(size), ranged(value, "value", 0, ~0ull));
        }, py::arg("offset"), py::arg("size"), py::arg("value"))
        .def("committed_decoders", [](const ComponentRegs& r) { return decodersList(r.committed()); })
        .def("firmware_commit", [](ComponentRegs& r, py::handle i, py::handle base, py::handle size, py::handle ways,
                                   py::handle gran, const std::vector<uint32_t>& targets, py::handle skip, bool lock) {
            firmwareCommit(r, i, base, size, ways, gran, targets, skip, lock);
        }, py::arg("index"), py::arg("base"), py::arg("size"), py::arg("ways") = 1, py::arg("granularity") = 256,
           py::arg("targets") = std::vector<uint32_t>{}, py::arg("skip") = 0, py::arg("lock") = false, kFirmwareCommitDoc)
        .def_property_readonly("hdm_enabled", &ComponentRegs::hdmEnabled)
        .def("save_state", &stateBytes<ComponentRegs>, kSaveStateDoc)
        .def("load_state", &loadStateBytes<ComponentRegs>, py::arg("state"), kLoadStateDoc)
        .def_property_readonly("poison_on_decode_error", &ComponentRegs::poisonOnDecodeError)
        .def_property_readonly("last_commit_error", &ComponentRegs::lastCommitError)
        .def("stats", [](const ComponentRegs& r) { return statsDict(*r.stats); });
}
