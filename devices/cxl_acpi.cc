#include "devices/cxl_acpi.hh"

#include <string>

#include "base/logging.hh"
#include "mem/port_proxy.hh"
#include "cxlcore/kernel/sim.hpp"
#include "cxlcore/platform/acpi.hpp"

namespace gem5
{

namespace acpi = cxlcore::acpi;

namespace
{

template <typename A, typename B>
void
sameLength(const std::string &obj, const char *a, const A &x, const char *b,
           const B &y)
{
    if (x.size() != y.size())
        fatal("%s: bad parameter: %s has %u entries and %s %u; allowed: "
              "one entry each", obj, a, unsigned(x.size()), b,
              unsigned(y.size()));
}

template <typename F>
std::vector<uint8_t>
build(const std::string &obj, F &&f)
{
    try {
        return f();
    } catch (const cxlcore::ConfigError &e) {
        // Configuration time (m5.instantiate), before any tick is simulated.
        fatal("%s: bad ACPI table parameter: %s", obj, e.what());
    }
}

} // anonymous namespace

Addr
CXLAcpiTable::writeBuf(PortProxy &phys, X86ISA::ACPI::Allocator &alloc,
                       std::vector<uint8_t> &mem) const
{
    mem.resize(acpi::kHeaderBytes);
    mem.insert(mem.end(), body.begin(), body.end());
    return SysDescTable::writeBuf(phys, alloc, mem);
}

CXLAcpiSrat::CXLAcpiSrat(const Params &p)
    : CXLAcpiTable(p, "SRAT", acpi::kSratRevision)
{
    sameLength(name(), "cpu_apic_ids", p.cpu_apic_ids, "cpu_domains",
               p.cpu_domains);
    sameLength(name(), "mem_bases", p.mem_bases, "mem_sizes", p.mem_sizes);
    sameLength(name(), "mem_bases", p.mem_bases, "mem_domains",
               p.mem_domains);
    sameLength(name(), "mem_bases", p.mem_bases, "mem_hot_pluggable",
               p.mem_hot_pluggable);
    sameLength(name(), "gp_domains", p.gp_domains, "gp_uids", p.gp_uids);
    std::vector<acpi::CpuAffinity> cpus;
    for (size_t i = 0; i < p.cpu_apic_ids.size(); ++i)
        cpus.push_back({p.cpu_apic_ids[i], p.cpu_domains[i]});
    std::vector<acpi::MemoryAffinity> mem;
    for (size_t i = 0; i < p.mem_bases.size(); ++i)
        mem.push_back({p.mem_bases[i], p.mem_sizes[i], p.mem_domains[i],
                       bool(p.mem_hot_pluggable[i])});
    std::vector<acpi::GenericPortAffinity> gp;
    for (size_t i = 0; i < p.gp_domains.size(); ++i)
        gp.push_back({p.gp_domains[i], p.gp_uids[i]});
    body = build(name(), [&] { return acpi::sratBody(cpus, mem, gp); });
}

CXLAcpiSlit::CXLAcpiSlit(const Params &p)
    : CXLAcpiTable(p, "SLIT", acpi::kSlitRevision)
{
    std::vector<uint8_t> d(p.distances.begin(), p.distances.end());
    body = build(name(), [&] { return acpi::slitBody(p.localities, d); });
}

CXLAcpiHmat::CXLAcpiHmat(const Params &p)
    : CXLAcpiTable(p, "HMAT", acpi::kHmatRevision)
{
    sameLength(name(), "initiators", p.initiators, "targets", p.targets);
    sameLength(name(), "initiators", p.initiators, "read_latency_ns",
               p.read_latency_ns);
    sameLength(name(), "initiators", p.initiators, "write_latency_ns",
               p.write_latency_ns);
    sameLength(name(), "initiators", p.initiators, "read_bandwidth_gbps",
               p.read_bandwidth_gbps);
    sameLength(name(), "initiators", p.initiators, "write_bandwidth_gbps",
               p.write_bandwidth_gbps);
    std::vector<acpi::Locality> loc;
    for (size_t i = 0; i < p.initiators.size(); ++i)
        loc.push_back({p.initiators[i], p.targets[i], p.read_latency_ns[i],
                       p.write_latency_ns[i], p.read_bandwidth_gbps[i],
                       p.write_bandwidth_gbps[i]});
    std::vector<int64_t> att(p.attached_initiators.begin(),
                             p.attached_initiators.end());
    body = build(name(), [&] {
        return acpi::hmatBody(p.memory_domains, att, loc);
    });
}

CXLAcpiCedt::CXLAcpiCedt(const Params &p)
    : CXLAcpiTable(p, "CEDT", acpi::kCedtRevision)
{
    sameLength(name(), "bridge_uids", p.bridge_uids, "bridge_versions",
               p.bridge_versions);
    sameLength(name(), "bridge_uids", p.bridge_uids, "bridge_bases",
               p.bridge_bases);
    sameLength(name(), "bridge_uids", p.bridge_uids, "bridge_lengths",
               p.bridge_lengths);
    sameLength(name(), "window_bases", p.window_bases, "window_sizes",
               p.window_sizes);
    sameLength(name(), "window_bases", p.window_bases, "window_ways",
               p.window_ways);
    sameLength(name(), "window_bases", p.window_bases,
               "window_granularities", p.window_granularities);
    sameLength(name(), "window_bases", p.window_bases,
               "window_restrictions", p.window_restrictions);
    std::vector<acpi::HostBridgeStructure> br;
    for (size_t i = 0; i < p.bridge_uids.size(); ++i)
        br.push_back({p.bridge_uids[i], p.bridge_versions[i],
                      p.bridge_bases[i], p.bridge_lengths[i]});
    std::vector<acpi::FixedMemoryWindow> win;
    size_t next = 0;
    for (size_t i = 0; i < p.window_bases.size(); ++i) {
        acpi::FixedMemoryWindow w;
        w.base = p.window_bases[i];
        w.size = p.window_sizes[i];
        w.ways = p.window_ways[i];
        w.granularity = p.window_granularities[i];
        w.restrictions = p.window_restrictions[i];
        if (next + w.ways > p.window_targets.size())
            fatal("%s: bad parameter: window_targets has %u entries; "
                  "allowed: the windows' ways summed", name(),
                  unsigned(p.window_targets.size()));
        w.targets.assign(p.window_targets.begin() + next,
                         p.window_targets.begin() + next + w.ways);
        next += w.ways;
        win.push_back(w);
    }
    if (next != p.window_targets.size())
        fatal("%s: bad parameter: window_targets has %u entries; allowed: "
              "the windows' ways summed (%u)", name(),
              unsigned(p.window_targets.size()), unsigned(next));
    body = build(name(), [&] { return acpi::cedtBody(br, win); });
}

CXLAcpiMcfg::CXLAcpiMcfg(const Params &p)
    : CXLAcpiTable(p, "MCFG", acpi::kMcfgRevision)
{
    sameLength(name(), "ecam_bases", p.ecam_bases, "ecam_first_buses",
               p.ecam_first_buses);
    sameLength(name(), "ecam_bases", p.ecam_bases, "ecam_last_buses",
               p.ecam_last_buses);
    for (size_t i = 0; i < p.ecam_bases.size(); ++i)
        ecam.push_back({p.ecam_bases[i], 0, uint8_t(p.ecam_first_buses[i]),
                        uint8_t(p.ecam_last_buses[i])});
    body = build(name(), [&] { return acpi::mcfgBody(ecam); });
}

CXLAcpiFadt::CXLAcpiFadt(const Params &p)
    : SysDescTable(p, "FACP", acpi::kFadtRevision)
{
    sameLength(name(), "cxl_bridge_uids", p.cxl_bridge_uids,
               "cxl_bridge_first_buses", p.cxl_bridge_first_buses);
    sameLength(name(), "cxl_bridge_uids", p.cxl_bridge_uids,
               "cxl_bridge_last_buses", p.cxl_bridge_last_buses);
    sameLength(name(), "cxl_bridge_uids", p.cxl_bridge_uids,
               "cxl_bridge_mmio_bases", p.cxl_bridge_mmio_bases);
    sameLength(name(), "cxl_bridge_uids", p.cxl_bridge_uids,
               "cxl_bridge_mmio_sizes", p.cxl_bridge_mmio_sizes);
    std::vector<acpi::CxlRootBridge> br;
    for (size_t i = 0; i < p.cxl_bridge_uids.size(); ++i)
        br.push_back({p.cxl_bridge_uids[i], 0,
                      uint8_t(p.cxl_bridge_first_buses[i]),
                      uint8_t(p.cxl_bridge_last_buses[i]),
                      p.cxl_bridge_mmio_bases[i], p.cxl_bridge_mmio_sizes[i]});
    const std::vector<acpi::EcamRange> ecam =
        p.mcfg ? p.mcfg->ranges() : std::vector<acpi::EcamRange>{};
    // Without CXL host bridges the namespace stays empty, as before them.
    const std::vector<uint8_t> aml = br.empty() && ecam.empty()
        ? std::vector<uint8_t>{}
        : build(name(), [&] { return acpi::dsdtBody(br, ecam); });
    dsdt = acpi::table("DSDT", acpi::kDsdtRevision, aml);
    // Check the parameters now, at configuration time, with a stand-in DSDT address.
    build(name(), [&] {
        return acpi::fadtBody({1, p.sci_interrupt, p.pm1a_event_port,
                               p.pm1a_control_port, p.boot_arch});
    });
}

Addr
CXLAcpiFadt::writeBuf(PortProxy &phys, X86ISA::ACPI::Allocator &alloc,
                      std::vector<uint8_t> &mem) const
{
    const Addr dsdt_addr = alloc.alloc(dsdt.size(), 16);
    phys.writeBlob(dsdt_addr, dsdt.data(), dsdt.size());
    const std::vector<uint8_t> body = acpi::fadtBody(
        {dsdt_addr, params().sci_interrupt, params().pm1a_event_port,
         params().pm1a_control_port, params().boot_arch});
    mem.resize(acpi::kHeaderBytes);
    mem.insert(mem.end(), body.begin(), body.end());
    return SysDescTable::writeBuf(phys, alloc, mem);
}

} // namespace gem5
