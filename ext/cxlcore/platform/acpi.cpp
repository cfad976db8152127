#include "cxlcore/platform/acpi.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "cxlcore/config/params.hpp"

namespace cxlcore {
namespace acpi {

namespace {

// Little-endian appends: ACPI tables are little-endian whatever the host.
struct Bytes {
    std::vector<uint8_t> b;
    void u8(uint64_t v) { b.push_back(uint8_t(v)); }
    void u16(uint64_t v) { for (int i = 0; i < 2; ++i) u8(v >> (8 * i)); }
    void u32(uint64_t v) { for (int i = 0; i < 4; ++i) u8(v >> (8 * i)); }
    void u64(uint64_t v) { for (int i = 0; i < 8; ++i) u8(v >> (8 * i)); }
};

[[noreturn]] void bad(const std::string& what) { throw ConfigError(what); }

// HMAT entries are 16-bit multiples of a 64-bit base unit. The smallest power
// of ten that fits every value keeps the figures readable in a dump (and
// within 0.01 % for the magnitudes a memory has); 0 means "not given".
uint64_t baseUnit(const std::vector<double>& v) {
    double mx = 0;
    for (double x : v) mx = std::max(mx, x);
    uint64_t base = 1;
    while (mx / double(base) > 65534.0) base *= 10;
    return base;
}

}  // namespace

std::vector<uint8_t> sratBody(const std::vector<CpuAffinity>& cpus, const std::vector<MemoryAffinity>& memory,
                              const std::vector<GenericPortAffinity>& genericPorts) {
    Bytes o;
    o.u32(1);  // reserved, 1 for compatibility with ACPI 1.0 parsers
    o.u64(0);
    std::set<uint32_t> apics;
    for (const CpuAffinity& c : cpus) {
        if (!apics.insert(c.apicId).second)
            bad("srat.cpus: APIC ID " + std::to_string(c.apicId) + " appears twice; each CPU has its own");
        if (c.apicId < 255) {  // Processor Local APIC Affinity (type 0)
            o.u8(0);
            o.u8(16);
            o.u8(c.domain & 0xff);
            o.u8(c.apicId);
            o.u32(1);  // enabled
            o.u8(0);   // local SAPIC EID
            o.u8(c.domain >> 8);
            o.u8(c.domain >> 16);
            o.u8(c.domain >> 24);
            o.u32(0);  // clock domain
        } else {  // Processor Local x2APIC Affinity (type 2)
            o.u8(2);
            o.u8(24);
            o.u16(0);
            o.u32(c.domain);
            o.u32(c.apicId);
            o.u32(1);
            o.u32(0);
            o.u32(0);
        }
    }
    std::vector<MemoryAffinity> sorted = memory;
    std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.base < b.base; });
    for (size_t i = 0; i < sorted.size(); ++i) {
        const MemoryAffinity& m = sorted[i];
        if (m.size == 0) bad("srat.memory: a memory range of size 0 at " + std::to_string(m.base) + "; allowed: size > 0");
        if (m.base + m.size < m.base) bad("srat.memory: the range at " + std::to_string(m.base) + " ends past 2^64");
        if (i && sorted[i - 1].base + sorted[i - 1].size > m.base)
            bad("srat.memory: the ranges at " + std::to_string(sorted[i - 1].base) + " and " + std::to_string(m.base) +
                " overlap; allowed: disjoint ranges");
    }
    for (const MemoryAffinity& m : memory) {  // Memory Affinity (type 1), in the caller's order
        o.u8(1);
        o.u8(40);
        o.u32(m.domain);
        o.u16(0);
        o.u32(m.base & 0xffffffffu);
        o.u32(m.base >> 32);
        o.u32(m.size & 0xffffffffu);
        o.u32(m.size >> 32);
        o.u32(0);
        o.u32(1u | (m.hotPluggable ? 2u : 0u));  // enabled, hot-pluggable
        o.u64(0);
    }
    std::set<uint32_t> taken, uids;
    for (const CpuAffinity& c : cpus) taken.insert(c.domain);
    for (const MemoryAffinity& m : memory) taken.insert(m.domain);
    for (size_t i = 0; i < genericPorts.size(); ++i) {  // Generic Port Affinity (type 6)
        const GenericPortAffinity& g = genericPorts[i];
        const std::string at = "srat.generic_ports[" + std::to_string(i) + "]";
        if (!taken.insert(g.domain).second)
            bad(at + ".domain = " + std::to_string(g.domain) +
                " is not allowed; allowed: a domain no CPU, memory range or other generic port has");
        if (!uids.insert(g.uid).second)
            bad(at + ".uid = " + std::to_string(g.uid) + " is not allowed; allowed: one generic port per host bridge UID");
        o.u8(6);
        o.u8(32);
        o.u8(0);
        o.u8(0);  // device handle type: ACPI
        o.u32(g.domain);
        for (char c : std::string("ACPI0016")) o.u8(uint8_t(c));  // _HID, 8 bytes
        o.u32(g.uid);  // _UID
        o.u32(0);
        o.u32(1);  // enabled
        o.u32(0);
    }
    return o.b;
}

std::vector<uint8_t> slitBody(uint32_t n, const std::vector<uint8_t>& d) {
    if (n == 0 || n > 64) bad("slit.localities = " + std::to_string(n) + " is not allowed; allowed: 1 to 64");
    if (d.size() != size_t(n) * n)
        bad("slit.distances has " + std::to_string(d.size()) + " entries; allowed: localities^2 = " +
            std::to_string(size_t(n) * n));
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < n; ++j) {
            const unsigned v = d[size_t(i) * n + j];
            if (i == j && v != 10)
                bad("slit.distances[" + std::to_string(i) + "][" + std::to_string(i) + "] = " + std::to_string(v) +
                    " is not allowed; a locality's distance to itself is 10");
            if (i != j && (v <= 10 || v == 255))
                bad("slit.distances[" + std::to_string(i) + "][" + std::to_string(j) + "] = " + std::to_string(v) +
                    " is not allowed; allowed between localities: 11 to 254");
        }
    Bytes o;
    o.u64(n);
    o.b.insert(o.b.end(), d.begin(), d.end());
    return o.b;
}

std::vector<uint8_t> hmatBody(const std::vector<uint32_t>& memoryDomains, const std::vector<int64_t>& attached,
                              const std::vector<Locality>& localities) {
    if (attached.size() != memoryDomains.size())
        bad("hmat: attached_initiator has " + std::to_string(attached.size()) + " entries; allowed: one per memory domain (" +
            std::to_string(memoryDomains.size()) + ")");
    Bytes o;
    o.u32(0);  // reserved
    for (size_t i = 0; i < memoryDomains.size(); ++i) {  // Memory Proximity Domain Attributes (type 0)
        o.u16(0);
        o.u16(0);
        o.u32(40);
        o.u16(attached[i] >= 0 ? 1 : 0);  // the initiator domain field is valid
        o.u16(0);
        o.u32(attached[i] >= 0 ? uint32_t(attached[i]) : 0);
        o.u32(memoryDomains[i]);
        o.u32(0);
        o.u64(0);
        o.u64(0);
    }
    if (localities.empty()) return o.b;
    std::vector<uint32_t> ini, tgt;
    for (const Locality& l : localities) {
        if (std::find(ini.begin(), ini.end(), l.initiator) == ini.end()) ini.push_back(l.initiator);
        if (std::find(tgt.begin(), tgt.end(), l.target) == tgt.end()) tgt.push_back(l.target);
        for (double v : {l.readLatencyNs, l.writeLatencyNs, l.readBandwidthGBps, l.writeBandwidthGBps})
            if (!(v > 0) || !std::isfinite(v))
                bad("hmat: a locality's latency or bandwidth is " + fmtNum(v) + "; allowed: a finite value above 0");
    }
    const size_t m = ini.size(), n = tgt.size();
    auto idx = [](const std::vector<uint32_t>& v, uint32_t x) { return size_t(std::find(v.begin(), v.end(), x) - v.begin()); };
    // System Locality Latency and Bandwidth Information (type 1): read and
    // write latency in picoseconds, read and write bandwidth in MB/s.
    for (uint8_t type : {uint8_t(1), uint8_t(2), uint8_t(4), uint8_t(5)}) {
        std::vector<double> val(m * n, 0.0);
        for (const Locality& l : localities) {
            const double v = type == 1 ? l.readLatencyNs * 1000 : type == 2 ? l.writeLatencyNs * 1000
                           : type == 4 ? l.readBandwidthGBps * 1000 : l.writeBandwidthGBps * 1000;
            val[idx(ini, l.initiator) * n + idx(tgt, l.target)] = v;
        }
        const uint64_t base = baseUnit(val);
        o.u16(1);
        o.u16(0);
        o.u32(32 + 4 * m + 4 * n + 2 * m * n);
        o.u8(0);  // memory hierarchy: the memory itself
        o.u8(type);
        o.u8(0);  // minimum transfer size: not given
        o.u8(0);
        o.u32(m);
        o.u32(n);
        o.u32(0);
        o.u64(base);
        for (uint32_t x : ini) o.u32(x);
        for (uint32_t x : tgt) o.u32(x);
        for (double v : val) o.u16(uint64_t(std::llround(v / double(base))));
    }
    return o.b;
}

std::vector<uint8_t> cdat(const std::vector<CdatRange>& ranges, uint32_t sequence) {
    Bytes o;
    o.u32(0);  // length, set below
    o.u8(1);   // revision
    o.u8(0);   // checksum, set below
    for (int i = 0; i < 6; ++i) o.u8(0);
    o.u32(sequence);
    std::set<uint8_t> handles;
    for (const CdatRange& r : ranges) {
        if (!handles.insert(r.handle).second)
            bad("cdat.dsmas.handle " + std::to_string(r.handle) + " appears twice; allowed: one per range");
        if (!r.dpaLength) bad("cdat.dsmas.dpa_length = 0 is not allowed; allowed: a non-empty range");
        if (!(std::isfinite(r.readLatencyNs) && r.readLatencyNs > 0 && std::isfinite(r.readBandwidthGBps) &&
              r.readBandwidthGBps > 0 && std::isfinite(r.writeBandwidthGBps) && r.writeBandwidthGBps > 0))
            bad("cdat.dslbis: latency and bandwidths must be finite and above 0");
        o.u8(0);  // DSMAS
        o.u8(0);
        o.u16(24);
        o.u8(r.handle);
        o.u8(r.nonVolatile ? 0x4 : 0);
        o.u16(0);
        o.u64(r.dpaBase);
        o.u64(r.dpaLength);
        o.u8(4);  // DSEMTS: the range as conventional memory
        o.u8(0);
        o.u16(24);
        o.u8(r.handle);
        o.u8(0);  // EfiConventionalMemory
        o.u16(0);
        o.u64(0);  // offset into the range
        o.u64(r.dpaLength);
        // DSLBIS: read latency (ps), read and write bandwidth (MB/s), each as entry x base unit.
        const std::pair<uint8_t, double> entries[] = {
            {1, r.readLatencyNs * 1000.0}, {4, r.readBandwidthGBps * 1000.0}, {5, r.writeBandwidthGBps * 1000.0}};
        for (const auto& [type, value] : entries) {
            const uint64_t base = baseUnit({value});
            o.u8(1);
            o.u8(0);
            o.u16(24);
            o.u8(r.handle);
            o.u8(0);  // memory (the HMAT memory hierarchy)
            o.u8(type);
            o.u8(0);
            o.u64(base);
            o.u16(uint64_t(std::llround(value / double(base))));
            o.u16(0);  // entries 1 and 2: unused for a device's own port
            o.u16(0);
            o.u16(0);
        }
    }
    const uint32_t n = uint32_t(o.b.size());
    for (int i = 0; i < 4; ++i) o.b[size_t(i)] = uint8_t(n >> (8 * i));
    uint8_t sum = 0;
    for (uint8_t x : o.b) sum = uint8_t(sum + x);
    o.b[5] = uint8_t(-sum);
    return o.b;
}

CdatRange deviceCdat(const DeviceParams& d, const DramParams& m, uint64_t dpaLength) {
    CdatRange r;
    r.dpaLength = dpaLength;
    const double burst = m.burst_length * 1000.0 / m.data_rate_mts;
    r.readLatencyNs = d.req_latency_ns + d.resp_latency_ns + m.frontend_latency_ns + m.tRCD_ns + m.tCL_ns + burst +
                      m.backend_latency_ns;
    const double peak = m.channels * m.bus_bytes * m.data_rate_mts * 1e6 / 1e9;
    r.readBandwidthGBps = r.writeBandwidthGBps = peak;
    return r;
}

std::vector<uint8_t> cedtBody(const std::vector<HostBridgeStructure>& bridges,
                              const std::vector<FixedMemoryWindow>& windows) {
    Bytes o;
    std::set<uint32_t> uids;
    for (const HostBridgeStructure& h : bridges) {  // CHBS (type 0)
        if (!uids.insert(h.uid).second) bad("cedt.chbs: UID " + std::to_string(h.uid) + " appears twice");
        if (h.cxlVersion > 1) bad("cedt.chbs.cxl_version = " + std::to_string(h.cxlVersion) + " is not allowed; allowed: 0 (CXL 1.1), 1 (CXL 2.0 or later)");
        o.u8(0);
        o.u8(0);
        o.u16(32);
        o.u32(h.uid);
        o.u32(h.cxlVersion);
        o.u32(0);
        o.u64(h.base);
        o.u64(h.length);
    }
    constexpr uint64_t k256M = 256ull << 20;
    for (const FixedMemoryWindow& w : windows) {  // CFMWS (type 1)
        int eniw = -1;
        switch (w.ways) {
            case 1: eniw = 0; break;
            case 2: eniw = 1; break;
            case 4: eniw = 2; break;
            case 8: eniw = 3; break;
            case 16: eniw = 4; break;
            case 3: eniw = 8; break;
            case 6: eniw = 9; break;
            case 12: eniw = 10; break;
            default: bad("cedt.cfmws.ways = " + std::to_string(w.ways) + " is not allowed; allowed values: 1, 2, 3, 4, 6, 8, 12, 16");
        }
        int hbig = -1;
        for (int k = 0; k <= 6; ++k)
            if (w.granularity == (256u << k)) hbig = k;
        if (hbig < 0)
            bad("cedt.cfmws.granularity = " + std::to_string(w.granularity) +
                " is not allowed; allowed values: 256, 512, 1024, 2048, 4096, 8192, 16384");
        if (w.base % k256M) bad("cedt.cfmws.base = " + std::to_string(w.base) + " is not allowed; allowed: a multiple of 256 MiB");
        if (w.size == 0 || w.size % (k256M * w.ways))
            bad("cedt.cfmws.size = " + std::to_string(w.size) + " is not allowed; allowed: a multiple of ways x 256 MiB = " +
                std::to_string(k256M * w.ways));
        if (w.targets.size() != w.ways)
            bad("cedt.cfmws.targets has " + std::to_string(w.targets.size()) + " entries; allowed: one per way (" +
                std::to_string(w.ways) + ")");
        for (uint32_t t : w.targets)
            if (!uids.count(t)) bad("cedt.cfmws.targets names host bridge UID " + std::to_string(t) + ", which no CHBS has");
        o.u8(1);
        o.u8(0);
        o.u16(36 + 4 * w.ways);
        o.u32(0);
        o.u64(w.base);
        o.u64(w.size);
        o.u8(eniw);
        o.u8(0);  // interleave arithmetic: standard modulo
        o.u16(0);
        o.u32(hbig);
        o.u16(w.restrictions);
        o.u16(w.qtgId);
        for (uint32_t t : w.targets) o.u32(t);
    }
    return o.b;
}

std::vector<uint8_t> fadtBody(const FixedHardware& hw) {
    if (hw.dsdt == 0) bad("fadt.dsdt: 0 is not allowed; allowed: the DSDT's physical address");
    if (hw.pm1aEventPort == 0 || hw.pm1aEventPort > 0xfffc || hw.pm1aControlPort == 0 || hw.pm1aControlPort > 0xfffe)
        bad("fadt.pm1a ports: allowed 1 to 0xfffc (event) and 0xfffe (control)");
    // Generic Address Structure of an I/O port block.
    auto gas = [](Bytes& o, uint32_t port, uint32_t bytes) {
        o.u8(1);  // system I/O space
        o.u8(bytes * 8);
        o.u8(0);
        o.u8(bytes == 4 ? 3 : 2);  // access size: dword / word
        o.u64(port);
    };
    auto none = [](Bytes& o) { for (int i = 0; i < 12; ++i) o.u8(0); };
    Bytes o;
    o.u32(0);                        // FIRMWARE_CTRL: no FACS
    o.u32(hw.dsdt <= 0xffffffffu ? hw.dsdt : 0);
    o.u8(0);                         // reserved
    o.u8(0);                         // preferred PM profile: unspecified
    o.u16(hw.sciInterrupt);
    o.u32(0);                        // SMI_CMD: already in ACPI mode
    o.u8(0); o.u8(0); o.u8(0); o.u8(0);  // ACPI_ENABLE, ACPI_DISABLE, S4BIOS_REQ, PSTATE_CNT
    o.u32(hw.pm1aEventPort); o.u32(0);
    o.u32(hw.pm1aControlPort); o.u32(0);
    o.u32(0); o.u32(0);              // PM2 control, PM timer
    o.u32(0); o.u32(0);              // GPE0, GPE1
    o.u8(4); o.u8(2); o.u8(0); o.u8(0);  // PM1 event and control lengths; PM2, PM timer none
    o.u8(0); o.u8(0); o.u8(0); o.u8(0);  // GPE0/1 lengths, GPE1 base, CST_CNT
    o.u16(101); o.u16(1001);         // C2/C3 latencies above 100/1000 us: not supported
    o.u16(0); o.u16(0);              // flush size and stride
    o.u8(0); o.u8(0); o.u8(0); o.u8(0); o.u8(0);  // duty offset/width, day/month alarm, century
    o.u16(hw.bootArch);
    o.u8(0);
    o.u32(1u << 0 | 1u << 4 | 1u << 5);  // WBINVD; power and sleep buttons not fixed features
    none(o);                         // RESET_REG
    o.u8(0);                         // RESET_VALUE
    o.u16(0);                        // ARM boot flags
    o.u8(5);                         // FADT minor version: ACPI 6.5
    o.u64(0);                        // X_FIRMWARE_CTRL
    o.u64(hw.dsdt);
    gas(o, hw.pm1aEventPort, 4); none(o);
    gas(o, hw.pm1aControlPort, 2); none(o);
    none(o); none(o); none(o); none(o);  // PM2 control, PM timer, GPE0, GPE1
    none(o); none(o);                // sleep control and status
    o.u64(0);                        // hypervisor vendor
    return o.b;
}

std::vector<uint8_t> table(const std::string& sig, uint8_t revision, const std::vector<uint8_t>& body,
                           const std::string& oemId, const std::string& oemTableId) {
    if (sig.size() != 4) bad("acpi table signature '" + sig + "' is not allowed; allowed: 4 characters");
    Bytes o;
    for (char c : sig) o.u8(uint8_t(c));
    o.u32(kHeaderBytes + body.size());
    o.u8(revision);
    o.u8(0);  // checksum, below
    for (size_t i = 0; i < 6; ++i) o.u8(i < oemId.size() ? uint8_t(oemId[i]) : uint8_t(' '));
    for (size_t i = 0; i < 8; ++i) o.u8(i < oemTableId.size() ? uint8_t(oemTableId[i]) : uint8_t(' '));
    o.u32(1);  // OEM revision
    o.u32(0);  // creator id
    o.u32(0);  // creator revision
    o.b.insert(o.b.end(), body.begin(), body.end());
    uint8_t sum = 0;
    for (uint8_t x : o.b) sum = uint8_t(sum + x);
    o.b[9] = uint8_t(-sum);
    return o.b;
}

}  // namespace acpi
}  // namespace cxlcore
