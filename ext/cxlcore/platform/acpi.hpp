// ACPI tables that describe a host's memory to its operating system: SRAT
// (which proximity domain each CPU and memory range is in), SLIT (relative
// distances), HMAT (latency and bandwidth between initiators and memories)
// and CEDT (CXL host bridges and fixed memory windows), and a Type-3
// device's CDAT (what its DOE mailbox serves). Each ACPI builder returns
// the table's body, the bytes after the 36-byte common header; `table` adds
// the header and checksum. Layouts: ACPI 6.5 sections 5.2.16 (SRAT), 5.2.17
// (SLIT), 5.2.28 (HMAT); CXL 3.1 section 9.18 (CEDT).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cxlcore {
struct DeviceParams;
struct DramParams;
namespace acpi {

constexpr uint32_t kHeaderBytes = 36;

struct CpuAffinity {
    uint32_t apicId = 0;  // below 256: the Processor Local APIC structure
    uint32_t domain = 0;
};
struct MemoryAffinity {
    uint64_t base = 0, size = 0;
    uint32_t domain = 0;
    bool hotPluggable = false;
};
// A Generic Port (ACPI 6.5 section 5.2.16.7, type 6): a CXL host bridge as a
// proximity domain of its own, so that HMAT can give the latency and
// bandwidth from an initiator to the bridge. Linux's CXL drivers add the
// rest of a region's path (links, switches, the device's CDAT) to these
// (drivers/acpi/numa/hmat.c, drivers/cxl/acpi.c). The device handle is of
// type ACPI: _HID "ACPI0016" and the bridge's integer _UID, as Linux matches
// it. The domain must be no CPU's or memory range's (Linux would take the
// memory target for the port's).
struct GenericPortAffinity {
    uint32_t domain = 0;
    uint32_t uid = 0;  // the host bridge's _UID (its CEDT CHBS UID)
};
std::vector<uint8_t> sratBody(const std::vector<CpuAffinity>& cpus, const std::vector<MemoryAffinity>& memory,
                              const std::vector<GenericPortAffinity>& genericPorts = {});

// distances: n x n, row-major (from row to column); 10 on the diagonal.
std::vector<uint8_t> slitBody(uint32_t n, const std::vector<uint8_t>& distances);

// One memory domain as seen from one initiator domain.
struct Locality {
    uint32_t initiator = 0, target = 0;
    double readLatencyNs = 0, writeLatencyNs = 0;
    double readBandwidthGBps = 0, writeBandwidthGBps = 0;
};
// attachedInitiator[i]: the initiator domain memory domain `memoryDomains[i]`
// is attached to, or -1 for none (a CPU-less node behind a link). A
// locality's target may also be a generic port's domain (SRAT type 6), kept
// out of `memoryDomains`: Linux takes a port's figures from the localities
// only when no Memory Proximity Domain Attributes entry names an initiator
// for its domain.
std::vector<uint8_t> hmatBody(const std::vector<uint32_t>& memoryDomains, const std::vector<int64_t>& attachedInitiator,
                              const std::vector<Locality>& localities);

struct HostBridgeStructure {  // CHBS
    uint32_t uid = 0;
    uint32_t cxlVersion = 1;  // 0: CXL 1.1 (RCRB), 1: CXL 2.0 or later (component registers)
    uint64_t base = 0, length = 0x10000;
};
struct FixedMemoryWindow {  // CFMWS
    uint64_t base = 0, size = 0;
    uint32_t ways = 1;             // 1, 2, 4, 8, 16, 3, 6, 12
    uint32_t granularity = 4096;   // bytes: 256 to 16384, a power of two
    std::vector<uint32_t> targets; // CHBS UIDs, one per way
    uint16_t restrictions = 0x6;   // bit 1 host-only coherent (Type-3), bit 2 volatile
    uint16_t qtgId = 0;
};
std::vector<uint8_t> cedtBody(const std::vector<HostBridgeStructure>& bridges,
                              const std::vector<FixedMemoryWindow>& windows);

// CDAT (Coherent Device Attribute Table, UEFI CDAT 1.03), as a Type-3 device
// serves it through its DOE mailbox (CXL 3.1 section 8.1.11): the 16-byte
// header, then per DPA range a DSMAS, its DSEMTS and DSLBIS entries. The
// table is whole, checksum included: it has no ACPI header.
struct CdatRange {
    uint8_t handle = 0;
    uint64_t dpaBase = 0, dpaLength = 0;
    bool nonVolatile = false;
    double readLatencyNs = 0;  // from the device's port to its memory and back, without the link
    double readBandwidthGBps = 0, writeBandwidthGBps = 0;
};
std::vector<uint8_t> cdat(const std::vector<CdatRange>& ranges, uint32_t sequence = 0);
// A Type-3 device's own figures, from its parameters as the model uses them:
// the controller both ways, the media's front end, an activate, the CAS
// latency, one burst and the back end for an idle read (its rows closed);
// the media's peak for bandwidth each way. No write latency: a posted
// write's is the controller's and the queue's, which the model does not report.
CdatRange deviceCdat(const DeviceParams& device, const DramParams& media, uint64_t dpaLength);
constexpr uint32_t kCdatHeaderBytes = 16;

// FADT (ACPI 6.5 section 5.2.9, revision 6): enough fixed hardware for an OS
// to enable ACPI (without it Linux runs with ACPI disabled, and then parses
// no HMAT). SMI_CMD is 0, so the platform is already in ACPI mode; the PM1
// event and control blocks are I/O ports the board answers with zeros; no
// FACS, PM timer or GPE blocks. `dsdt` is the DSDT's physical address.
struct FixedHardware {
    uint64_t dsdt = 0;
    uint16_t sciInterrupt = 9;
    uint32_t pm1aEventPort = 0x600;   // 4 bytes: status and enable
    uint32_t pm1aControlPort = 0x604; // 2 bytes
    uint16_t bootArch = 0x3;          // IA-PC boot flags: legacy devices, 8042
};
constexpr uint32_t kFadtBytes = 276;
std::vector<uint8_t> fadtBody(const FixedHardware& hw);

// The whole table: header (signature, length, revision, checksum, OEM ids)
// and body. The bytes sum to 0 modulo 256.
std::vector<uint8_t> table(const std::string& signature, uint8_t revision, const std::vector<uint8_t>& body,
                           const std::string& oemId = "SIMCXL", const std::string& oemTableId = "SIMCXL");

// Revisions written by the table builders' callers.
constexpr uint8_t kSratRevision = 3, kSlitRevision = 1, kHmatRevision = 2, kCedtRevision = 1, kFadtRevision = 6,
                  kDsdtRevision = 2;

}  // namespace acpi
}  // namespace cxlcore
