// A PCIe function's 4 KiB configuration space (PCIe 6.0 chapter 7): the type 0
// (endpoint) or type 1 (bridge: root or switch port) header, a capability list
// holding the PCI Express capability, and the extended capability list from
// 0x100 with the CXL DVSECs (CXL 3.1 section 8.1) and, on devices, a DOE
// mailbox (PCIe 6.0 section 6.30) serving the CDAT by CXL's Table Access
// protocol (CXL 3.1 section 8.1.11).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cxlcore/cxlio/regs.hpp"

namespace cxlcore {
namespace cxlio {

constexpr uint16_t kCxlVendorId = 0x1E98;  // the CXL Consortium's PCI-SIG vendor ID, used by every CXL DVSEC
// DVSEC IDs (CXL 3.1 table 8-2).
enum DvsecId : uint16_t {
    kDvsecDevice = 0, kDvsecPortExtensions = 3, kDvsecPortGpf = 4, kDvsecDeviceGpf = 5, kDvsecFlexBusPort = 7,
    kDvsecRegisterLocator = 8
};
// Register block identifiers of the Register Locator DVSEC (CXL 3.1 table 8-22).
enum BlockId : uint8_t { kBlockComponent = 1, kBlockDevice = 3 };
// PCI Express capability device/port types (PCIe 6.0 section 7.5.3.2).
enum class PortType : uint8_t { Endpoint = 0, RootPort = 4, SwitchUpstream = 5, SwitchDownstream = 6 };

constexpr uint16_t kExtCapDvsec = 0x23, kExtCapDoe = 0x2E;
constexpr uint8_t kCapPcie = 0x10;
// DOE register offsets within its capability and bits (PCIe 6.0 section 7.9.24).
constexpr uint32_t kDoeCtrl = 0x08, kDoeStatus = 0x0C, kDoeWrite = 0x10, kDoeRead = 0x14, kDoeLength = 0x18;
constexpr uint32_t kDoeGo = 1u << 31, kDoeAbort = 1u << 0, kDoeBusy = 1u << 0, kDoeError = 1u << 2,
                   kDoeReady = 1u << 31;
constexpr uint16_t kPciSigVendorId = 0x0001;  // DOE discovery is a PCI-SIG protocol (type 0)
constexpr uint8_t kDoeTypeDiscovery = 0, kDoeTypeTableAccess = 2;

class ConfigSpace {
  public:
    static constexpr uint32_t kBytes = 4096;
    ConfigSpace(uint16_t vendor, uint16_t device, uint32_t classCode, PortType type);

    // Software's accesses (1, 2 or 4 bytes, naturally aligned, within 4 KiB;
    // others are counted, reads answer all ones as an unsupported request does).
    uint32_t read(uint32_t off, unsigned size);
    void write(uint32_t off, unsigned size, uint32_t value);

    // Building (at construction of the function, before software runs).
    // A 64-bit non-prefetchable memory BAR at BAR index `bar` (0, 2 or 4) of `bytes` (a power of two).
    void addBar64(unsigned bar, uint64_t bytes);
    // linkSpeed: PCIe's encoding (5: 32 GT/s, 6: 64 GT/s); linkWidth: lanes; portNumber: the Link
    // Capabilities register's port number, which CXL decoders' target lists name.
    uint32_t addPcieCap(uint8_t linkSpeed, uint8_t linkWidth, uint8_t portNumber);
    // An extended capability of `len` bytes chained after the previous one; returns its offset.
    uint32_t addExtCap(uint16_t id, uint8_t version, uint32_t len);
    uint32_t addDvsec(uint16_t dvsecId, uint8_t revision, uint32_t len);
    // The DOE mailbox, serving the whole CDAT (header and structures) by entry.
    uint32_t addDoe(const std::vector<uint8_t>& cdat);

    RegBlock& regs() { return regs_; }
    // Checkpoints: the registers; a DOE exchange in flight is not kept (none is at a quiet point).
    void save(StateOut& out) const { out.bytes(regs_.bytes()); }
    void load(StateIn& in);
    uint64_t bar64(unsigned bar) const;
    PortType type() const { return type_; }
    IoStats* stats = &own_;  // the owning function's counters

  private:
    IoStats own_;
    void doeGo();
    void doeRespond(uint16_t vendor, uint8_t type, const std::vector<uint32_t>& payload);
    RegBlock regs_;
    PortType type_;
    uint32_t nextCap_ = 0x40, nextExt_ = 0x100, lastExt_ = 0;
    // DOE: its offset (0: none), the request being written, the response being read.
    uint32_t doe_ = 0;
    std::vector<uint32_t> doeIn_, doeOut_;
    size_t doeRead_ = 0;
    std::vector<std::vector<uint8_t>> cdatEntries_;  // entry 0: the CDAT header, then each structure
};

}  // namespace cxlio
}  // namespace cxlcore
