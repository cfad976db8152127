// Whole PCIe functions as Linux's CXL drivers find them: a Type-3 memory
// device (class 05h/02h/10h, what cxl_pci binds to) and the CXL ports above it
// (root ports and switch ports, what cxl_port walks). Each is a configuration
// space plus the register blocks its Register Locator DVSEC points into, in
// BAR 0. A gem5 PCI device wraps one of these and forwards config and BAR
// accesses to it; the timing path reads committedDecoders().
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cxlcore/cxlio/component_regs.hpp"
#include "cxlcore/cxlio/config_space.hpp"
#include "cxlcore/cxlio/device_regs.hpp"

namespace cxlcore {
struct DeviceParams;
struct DramParams;
struct LinkParams;
namespace cxlio {

// What both kinds share: configuration space, component registers in BAR 0, counters.
class Function {
  public:
    virtual ~Function() = default;
    uint32_t configRead(uint32_t off, unsigned size) { return config_.read(off, size); }
    virtual void configWrite(uint32_t off, unsigned size, uint32_t value);
    // Accesses at an offset within BAR 0; outside it they are counted and dropped.
    virtual uint64_t mmioRead(uint64_t off, unsigned size);
    virtual void mmioWrite(uint64_t off, unsigned size, uint64_t value);
    virtual uint64_t barBytes() const { return kComponentBytes; }
    uint64_t barAddress() const { return config_.bar64(0); }  // where software placed BAR 0
    std::vector<CommittedDecoder> committedDecoders() const { return component_.committed(); }
    bool hdmEnabled() const { return component_.hdmEnabled(); }
    ComponentRegs& component() { return component_; }
    const IoStats& stats() const { return stats_; }
    // What software left in the function's registers, for a simulator's checkpoint (saveState).
    virtual void save(StateOut& out) const;
    virtual void load(StateIn& in);

  protected:
    Function(uint16_t vendor, uint16_t device, uint32_t classCode, PortType type, ComponentKind kind,
             uint32_t decoders, uint32_t targets, uint64_t capacity, const LinkParams& link);
    // The DVSECs every CXL function has: Flex Bus Port and Register Locator (with `blocks`).
    void addCxlDvsecs(const std::vector<std::pair<uint8_t, uint64_t>>& blocks);
    IoStats stats_;
    ConfigSpace config_;
    ComponentRegs component_;
    uint32_t flexBus_ = 0;  // the Flex Bus Port DVSEC's offset
};

class Type3Function : public Function {
  public:
    // capacity: bytes of volatile memory, a multiple of 256 MiB; lsaBytes: the label storage area.
    Type3Function(const DeviceParams& device, const DramParams& media, const LinkParams& link, uint64_t capacity,
                  uint32_t lsaBytes = 1024, uint32_t decoders = 4, uint16_t vendor = kCxlVendorId,
                  uint16_t deviceId = 0x0D93);
    void configWrite(uint32_t off, unsigned size, uint32_t value) override;
    uint64_t mmioRead(uint64_t off, unsigned size) override;
    void mmioWrite(uint64_t off, unsigned size, uint64_t value) override;
    uint64_t barBytes() const override { return kComponentBytes + kDeviceBytes; }
    DeviceRegs& device() { return device_; }
    uint32_t dvsecOffset() const { return dvsec_; }
    static constexpr uint32_t kDeviceRegsOffset = kComponentBytes;  // within BAR 0

    void save(StateOut& out) const override;
    void load(StateIn& in) override;

  private:
    DeviceRegs device_;
    uint32_t dvsec_ = 0;
};

enum class PortKind : uint8_t { Root, SwitchUpstream, SwitchDownstream };

class PortFunction : public Function {
  public:
    // Switch upstream ports carry HDM decoders over `targets` downstream ports.
    PortFunction(PortKind kind, uint8_t portNumber, const LinkParams& link, uint32_t decoders = 0, uint32_t targets = 1,
                 uint16_t vendor = kCxlVendorId, uint16_t deviceId = 0x7075);
};

}  // namespace cxlio
}  // namespace cxlcore
