// simcxl._core: the standalone engine. Python hands over a whole system and
// a workload in one call; the run releases the GIL and returns plain dicts.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>

#include "cxlcore/host/cache_hierarchy.hpp"
#include "cxlcore/mem/dram_replay.hpp"
#include "readers.hpp"

using namespace binding;

void bindAcpi(py::module_& parent, Graph (*graphOf)(const py::dict&));  // acpi.cpp
void bindCxlio(py::module_& parent, Graph (*graphOf)(const py::dict&));  // cxlio.cpp
void bindTrace(py::module_& m);  // trace.cpp
void bindNic(py::module_& m, Graph (*graphOf)(const py::dict&), Progress (*progress)(py::handle),
             py::dict (*report)(const Report&));  // nic.cpp
void bindShared(py::module_& m, Graph (*graphOf)(const py::dict&), Progress (*progress)(py::handle),
                py::dict (*report)(const Report&));  // shared.cpp
void bindTesting(py::module_& m);  // testing.cpp
void bindWorkloads(py::module_& m);  // workloads.cpp

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
    m.def("check_switch_fabric", [](py::dict sys) { readGraph(sys).checkSwitchFabric(); },
          "Refuses HBR switches in cycles, HBR and PBR switches joined and misplaced PIDs; raises ConfigError.");
    m.def("pbr_fabrics", [](py::dict sys) {
        const Graph g = readGraph(sys);
        g.check();
        py::list out;
        for (const Graph::PbrFabric& f : g.pbrFabrics()) {
            py::list edges;
            for (size_t e = 0; e < f.g.edges.size(); ++e) {
                const auto& x = f.g.edges[e];
                const Connection& k = *f.edgeConn[e];
                edges.append(py::dict(py::arg("pid") = x.pid, py::arg("switch") = f.g.switches[x.sw],
                                      py::arg("port") = f.g.ports[x.sw][x.port], py::arg("kind") = x.host ? "host" : "device",
                                      py::arg("component") = x.host ? k.from.comp : g.pastLink(k).name));
            }
            py::dict routes;
            for (size_t s = 0; s < f.g.switches.size(); ++s) {
                py::dict t;
                for (size_t e = 0; e < f.g.edges.size(); ++e) t[py::int_(f.g.edges[e].pid)] = f.g.ports[s][f.routes.out[s][e]];
                routes[py::str(f.g.switches[s])] = t;
            }
            out.append(py::dict(py::arg("switches") = f.g.switches, py::arg("algorithm") = f.routes.algorithm,
                                py::arg("root") = f.g.switches[f.routes.root], py::arg("cycle") = f.routes.cycle,
                                py::arg("edges") = edges, py::arg("routes") = routes));
        }
        return out;
    }, "Each PBR fabric of a system's graph: its switches, edge ports with their PIDs, the routing algorithm used "
       "(shortest, or up*/down* when the shortest paths' channel dependencies form a cycle, which `cycle` names) "
       "and each switch's routes: PID -> the port it forwards by.");
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
            py::list stats;
            for (const StatSpec& st : componentStats(t.name))
                stats.append(py::dict(py::arg("name") = st.name, py::arg("unit") = st.unit, py::arg("when") = st.when,
                                      py::arg("doc") = st.doc));
            out.append(py::dict(py::arg("name") = t.name, py::arg("doc") = t.doc, py::arg("groups") = groups,
                                py::arg("ports") = ports, py::arg("derived") = derived, py::arg("stats") = stats));
        }
        return out;
    }, "The registered component types: their parameter groups (key, schema struct), ports, derived parameters "
       "and the statistics each reports as <component>.<stat>.");

    bindWorkloads(m);

    bindAcpi(m, readGraph);
    bindCxlio(m, readGraph);
    bindTrace(m);
    bindNic(m, readGraph, wrap, toDict);
    bindShared(m, readGraph, wrap, toDict);
    bindTesting(m);

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
