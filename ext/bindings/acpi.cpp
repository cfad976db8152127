// simcxl._core.acpi: the ACPI table builders of ext/cxlcore/platform, for the
// gem5 board's Python side and for the tests that read the tables back.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cxlcore/platform/acpi.hpp"
#include "cxlcore/platform/aml.hpp"
#include "cxlcore/system/graph.hpp"

namespace py = pybind11;
using namespace cxlcore;

namespace {
py::bytes asBytes(const std::vector<uint8_t>& v) { return py::bytes(reinterpret_cast<const char*>(v.data()), v.size()); }
std::vector<acpi::EcamRange> ecamRanges(const std::vector<py::dict>& ecam) {
    std::vector<acpi::EcamRange> r;
    for (const py::dict& d : ecam)
        r.push_back({d["base"].cast<uint64_t>(), d.contains("segment") ? d["segment"].cast<uint16_t>() : uint16_t(0),
                     d["first_bus"].cast<uint8_t>(), d["last_bus"].cast<uint8_t>()});
    return r;
}
}  // namespace

void bindAcpi(py::module_& parent, Graph (*graphOf)(const py::dict&)) {
    py::module_ m = parent.def_submodule("acpi", "ACPI SRAT, SLIT, HMAT and CEDT bodies (bytes after the 36-byte header).");
    m.attr("HEADER_BYTES") = acpi::kHeaderBytes;
    m.attr("REVISIONS") = py::dict(py::arg("SRAT") = acpi::kSratRevision, py::arg("SLIT") = acpi::kSlitRevision,
                                   py::arg("HMAT") = acpi::kHmatRevision, py::arg("CEDT") = acpi::kCedtRevision,
                                   py::arg("FACP") = acpi::kFadtRevision, py::arg("DSDT") = acpi::kDsdtRevision,
                                   py::arg("MCFG") = acpi::kMcfgRevision);
    m.def("srat", [](const std::vector<std::pair<uint32_t, uint32_t>>& cpus,
                     const std::vector<std::tuple<uint64_t, uint64_t, uint32_t, bool>>& memory,
                     const std::vector<std::pair<uint32_t, uint32_t>>& ports) {
        std::vector<acpi::CpuAffinity> c;
        for (auto& [apic, dom] : cpus) c.push_back({apic, dom});
        std::vector<acpi::MemoryAffinity> mem;
        for (auto& [base, size, dom, hot] : memory) mem.push_back({base, size, dom, hot});
        std::vector<acpi::GenericPortAffinity> gp;
        for (auto& [dom, uid] : ports) gp.push_back({dom, uid});
        return asBytes(acpi::sratBody(c, mem, gp));
    }, py::arg("cpus"), py::arg("memory"), py::arg("generic_ports") = std::vector<std::pair<uint32_t, uint32_t>>{},
       "cpus: [(apic_id, domain)]; memory: [(base, size, domain, hot_pluggable)]; generic_ports: [(domain, uid)], "
       "a CXL host bridge (ACPI0016) each.");
    m.def("fadt", [](uint64_t dsdt, uint16_t sci, uint32_t evt, uint32_t cnt, uint16_t boot) {
        return asBytes(acpi::fadtBody({dsdt, sci, evt, cnt, boot}));
    }, py::arg("dsdt"), py::arg("sci_interrupt") = 9, py::arg("pm1a_event_port") = 0x600,
       py::arg("pm1a_control_port") = 0x604, py::arg("boot_arch") = 0x3);
    m.def("slit", [](uint32_t n, const std::vector<uint8_t>& d) { return asBytes(acpi::slitBody(n, d)); },
          py::arg("localities"), py::arg("distances"), "distances: localities^2 entries, row-major.");
    m.def("hmat", [](const std::vector<uint32_t>& doms, const std::vector<int64_t>& attached, const std::vector<py::dict>& locs) {
        std::vector<acpi::Locality> l;
        for (const py::dict& d : locs)
            l.push_back({d["initiator"].cast<uint32_t>(), d["target"].cast<uint32_t>(), d["read_latency_ns"].cast<double>(),
                         d["write_latency_ns"].cast<double>(), d["read_bandwidth_gbps"].cast<double>(),
                         d["write_bandwidth_gbps"].cast<double>()});
        return asBytes(acpi::hmatBody(doms, attached, l));
    }, py::arg("memory_domains"), py::arg("attached_initiator"), py::arg("localities"),
       "localities: dicts of initiator, target, read/write_latency_ns, read/write_bandwidth_gbps (GB/s = 1000 MB/s).");
    m.def("cedt", [](const std::vector<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t>>& bridges,
                     const std::vector<py::dict>& windows) {
        std::vector<acpi::HostBridgeStructure> b;
        for (auto& [uid, ver, base, len] : bridges) b.push_back({uid, ver, base, len});
        std::vector<acpi::FixedMemoryWindow> w;
        for (const py::dict& d : windows) {
            acpi::FixedMemoryWindow x;
            x.base = d["base"].cast<uint64_t>();
            x.size = d["size"].cast<uint64_t>();
            x.ways = d["ways"].cast<uint32_t>();
            x.granularity = d["granularity"].cast<uint32_t>();
            x.targets = d["targets"].cast<std::vector<uint32_t>>();
            if (d.contains("restrictions")) x.restrictions = d["restrictions"].cast<uint16_t>();
            if (d.contains("qtg_id")) x.qtgId = d["qtg_id"].cast<uint16_t>();
            w.push_back(x);
        }
        return asBytes(acpi::cedtBody(b, w));
    }, py::arg("bridges"), py::arg("windows"),
       "bridges: [(uid, cxl_version, base, length)]; windows: dicts of base, size, ways, granularity, targets "
       "(bridge UIDs), restrictions, qtg_id.");
    m.def("mcfg", [](const std::vector<py::dict>& ecam) { return asBytes(acpi::mcfgBody(ecamRanges(ecam))); },
          py::arg("ecam"), "ecam: dicts of base (bus 0's address), segment, first_bus, last_bus.");
    m.def("dsdt", [](const std::vector<py::dict>& bridges, const std::vector<py::dict>& ecam, uint16_t qtgMax,
                     const std::vector<uint16_t>& qtgIds) {
        std::vector<acpi::CxlRootBridge> b;
        for (const py::dict& d : bridges)
            b.push_back({d["uid"].cast<uint32_t>(), d.contains("segment") ? d["segment"].cast<uint16_t>() : uint16_t(0),
                         d["first_bus"].cast<uint8_t>(), d["last_bus"].cast<uint8_t>(), d["mmio_base"].cast<uint64_t>(),
                         d["mmio_size"].cast<uint64_t>()});
        return asBytes(acpi::dsdtBody(b, ecamRanges(ecam), {qtgMax, qtgIds}));
    }, py::arg("bridges"), py::arg("ecam"), py::arg("qtg_max") = 0, py::arg("qtg_ids") = std::vector<uint16_t>{0},
       "AML: the CXL root (ACPI0017) with its QTG _DSM (function 1 answers Package {qtg_max, Package {qtg_ids}}), "
       "a root bridge (ACPI0016) per dict of uid (its CHBS UID), segment, first_bus, "
       "last_bus, mmio_base, mmio_size, and the ECAM ranges reserved (PNP0C02).");
    m.def("cdat", [](const std::vector<py::dict>& ranges, uint32_t sequence) {
        std::vector<acpi::CdatRange> r;
        for (const py::dict& d : ranges) {
            acpi::CdatRange x;
            x.handle = d["handle"].cast<uint8_t>();
            x.dpaBase = d["dpa_base"].cast<uint64_t>();
            x.dpaLength = d["dpa_length"].cast<uint64_t>();
            x.nonVolatile = d.contains("non_volatile") && d["non_volatile"].cast<bool>();
            x.readLatencyNs = d["read_latency_ns"].cast<double>();
            x.readBandwidthGBps = d["read_bandwidth_gbps"].cast<double>();
            x.writeBandwidthGBps = d["write_bandwidth_gbps"].cast<double>();
            r.push_back(x);
        }
        return asBytes(acpi::cdat(r, sequence));
    }, py::arg("ranges"), py::arg("sequence") = 0,
       "The whole CDAT (header and checksum): per range (dicts of handle, dpa_base, dpa_length, non_volatile, "
       "read_latency_ns, read/write_bandwidth_gbps) a DSMAS, a DSEMTS and DSLBIS entries.");
    m.def("device_cdat", [graphOf](py::dict system, const std::string& component, uint64_t dpaLength) {
        const Graph g = graphOf(system);
        g.check();
        const Node* n = g.find(component);
        if (!n || n->type != "type3")
            throw ConfigError("device_cdat: " + component + " is not a type3 component of system " + g.name);
        const acpi::CdatRange r = acpi::deviceCdat(n->params.DeviceParams_, n->params.DramParams_, dpaLength);
        return py::dict(py::arg("dpa_length") = r.dpaLength, py::arg("read_latency_ns") = r.readLatencyNs,
                        py::arg("read_bandwidth_gbps") = r.readBandwidthGBps,
                        py::arg("write_bandwidth_gbps") = r.writeBandwidthGBps);
    }, py::arg("system"), py::arg("component"), py::arg("dpa_length"),
       "A Type-3 component's own figures for its CDAT, as the model computes them (no link).");
    m.def("table", [](const std::string& sig, uint8_t rev, py::bytes body) {
        std::string s = body;
        return asBytes(acpi::table(sig, rev, std::vector<uint8_t>(s.begin(), s.end())));
    }, py::arg("signature"), py::arg("revision"), py::arg("body"), "The whole table: header, checksum and body.");
}
