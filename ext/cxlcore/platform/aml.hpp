// The namespace and configuration-space tables Linux's CXL drivers start
// from: a DSDT whose AML declares the CXL root (ACPI0017) and each CXL host
// bridge (ACPI0016, a PCIe root bridge: PNP0A08/PNP0A03) with the UID its
// CEDT CHBS carries, its root bus and the windows it decodes, plus a
// motherboard-resource device reserving the ECAM ranges (Linux uses MMCONFIG
// only where firmware reserved it); and the MCFG naming those ECAM ranges.
// Layouts: ACPI 6.5 chapters 6 (device objects), 19 (AML encoding) and 6.4
// (resource descriptors); PCI Firmware 3.3 section 4.1.2 (MCFG).
#pragma once

#include <cstdint>
#include <vector>

namespace cxlcore {
namespace acpi {

// One ECAM range: 1 MiB of configuration space per bus, 4 KiB per function.
// `base` is where bus 0 of the segment would lie, as the MCFG gives it.
struct EcamRange {
    uint64_t base = 0;
    uint16_t segment = 0;
    uint8_t firstBus = 0, lastBus = 0;
};

// One CXL host bridge as a PCIe root bridge.
struct CxlRootBridge {
    uint32_t uid = 0;                      // the CHBS UID (CEDT) naming the same bridge
    uint16_t segment = 0;
    uint8_t firstBus = 0, lastBus = 0;     // its root bus and the buses below it
    uint64_t mmioBase = 0, mmioSize = 0;   // where BARs below it may be placed
};

// What the CXL root's QTG _DSM (CXL 3.1 section 9.18.3, UUID
// f365f9a6-a7de-4071-a66a-b40c0b4f8e52, revision 1) answers: function 0 the
// functions it has (0 and 1), function 1 Package {maxId, Package {ids}}
// whatever performance the OS asks about; another UUID gets Buffer {0}.
// Linux's cxl_acpi gives a device's memory a QoS class (its first id) only
// through it, and drops every CDAT range without one, so that a region's
// node gets no performance figures at all; the id must be a CFMWS's QTG ID.
struct QtgDsm {
    uint16_t maxId = 0;
    std::vector<uint16_t> ids{0};  // most suitable first
};

// The DSDT's body: \_SB.CXLR (ACPI0017, with the QTG _DSM), \_SB.HBnn per
// bridge, \_SB.ECAM (PNP0C02).
std::vector<uint8_t> dsdtBody(const std::vector<CxlRootBridge>& bridges, const std::vector<EcamRange>& ecam,
                              const QtgDsm& qtg = {});
std::vector<uint8_t> mcfgBody(const std::vector<EcamRange>& ecam);
constexpr uint8_t kMcfgRevision = 1;

}  // namespace acpi
}  // namespace cxlcore
