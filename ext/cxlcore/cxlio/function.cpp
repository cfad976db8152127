#include "cxlcore/cxlio/function.hpp"

#include <algorithm>

#include "cxlcore/config/params.hpp"
#include "cxlcore/platform/acpi.hpp"

namespace cxlcore {
namespace cxlio {

namespace {

// PCIe's speed encoding in the Link Capabilities register: 5 = 32 GT/s (Gen5), 6 = 64 GT/s (Gen6).
uint8_t linkSpeed(const LinkParams& l) { return uint8_t(l.gen); }

ComponentKind componentKind(PortKind k) {
    return k == PortKind::Root ? ComponentKind::RootPort
                               : k == PortKind::SwitchUpstream ? ComponentKind::SwitchUpstream
                                                               : ComponentKind::SwitchDownstream;
}
PortType portType(PortKind k) {
    return k == PortKind::Root ? PortType::RootPort
                               : k == PortKind::SwitchUpstream ? PortType::SwitchUpstream : PortType::SwitchDownstream;
}

// PCIe DVSEC for CXL Devices (CXL 3.1 section 8.1.3) register offsets and bits.
constexpr uint32_t kDvCap = 0x0A, kDvCtrl = 0x0C, kDvStatus = 0x0E, kDvLock = 0x14, kDvRange1 = 0x18;
constexpr uint32_t kMemEnable = 1u << 2, kConfigLock = 1u << 0;
// Flex Bus Port DVSEC modes (section 8.1.8): CXL.io, CXL.mem, 68-byte flit and VH.
constexpr uint32_t kFlexBusModes = 1u << 1 | 1u << 2 | 1u << 5;

uint64_t checkedCapacity(uint64_t capacity) {
    if (capacity == 0 || capacity % kHdmUnit || capacity > (1ull << 52))
        throw ConfigError("capacity_bytes = " + std::to_string(capacity) +
                          " is not allowed; allowed: a multiple of 256 MiB (268435456) up to 2^52");
    return capacity;
}

}  // namespace

Function::Function(uint16_t vendor, uint16_t device, uint32_t classCode, PortType type, ComponentKind kind,
                   uint32_t decoders, uint32_t targets, uint64_t capacity, const LinkParams& link)
    : config_(vendor, device, classCode, type), component_(kind, decoders, targets, capacity, link) {
    config_.stats = &stats_;
    component_.stats = &stats_;
}

void Function::addCxlDvsecs(const std::vector<std::pair<uint8_t, uint64_t>>& blocks) {
    // Flex Bus Port DVSEC (section 8.1.8): CXL.io and CXL.mem capable, 68-byte
    // flit and VH mode; the link trained with all of them (status mirrors control).
    const uint32_t fb = flexBus_ = config_.addDvsec(kDvsecFlexBusPort, 2, 0x20);
    RegBlock& r = config_.regs();
    r.set(fb + 0x0A, 2, kFlexBusModes);
    r.set(fb + 0x0C, 2, kFlexBusModes);
    r.access(fb + 0x0C, 2, 1u << 2 | 1u << 5);  // CXL.io stays on; CXL.mem and the flit mode may be turned off
    r.set(fb + 0x0E, 2, kFlexBusModes);
    // Register Locator DVSEC (section 8.1.9): per block, BAR 0, its ID and its 64 KiB-aligned offset.
    const uint32_t rl = config_.addDvsec(kDvsecRegisterLocator, 0, 0x0C + 8 * uint32_t(blocks.size()));
    for (size_t i = 0; i < blocks.size(); ++i) {
        r.set(rl + 0x0C + 8 * i, 4, 0 | uint32_t(blocks[i].first) << 8 | uint32_t(blocks[i].second & 0xFFFF0000));
        r.set(rl + 0x10 + 8 * i, 4, blocks[i].second >> 32);
    }
}

void Function::configWrite(uint32_t off, unsigned size, uint32_t value) {
    config_.write(off, size, value);
    // The link retrains at once: the Flex Bus status reports what control asks for.
    RegBlock& r = config_.regs();
    r.set(flexBus_ + 0x0E, 2, r.get(flexBus_ + 0x0C, 2) & kFlexBusModes);
}

uint64_t Function::mmioRead(uint64_t off, unsigned size) {
    if (off >= kComponentBytes) {
        ++stats_.badMmioAccesses;
        return allOnes(size);
    }
    return component_.read(uint32_t(off), size);
}

void Function::mmioWrite(uint64_t off, unsigned size, uint64_t value) {
    if (off >= kComponentBytes) ++stats_.badMmioAccesses;
    else component_.write(uint32_t(off), size, value);
}

Type3Function::Type3Function(const DeviceParams& device, const DramParams& media, const LinkParams& link,
                             uint64_t capacity, uint32_t lsaBytes, uint32_t decoders, uint16_t vendor, uint16_t deviceId)
    : Function(vendor, deviceId, 0x050210, PortType::Endpoint, ComponentKind::Endpoint, decoders, 0,
               checkedCapacity(capacity), link),
      device_(capacity, lsaBytes, "SimCXL") {
    if (lsaBytes > (1u << 20))
        throw ConfigError("lsa_bytes = " + std::to_string(lsaBytes) + " is out of range; allowed: 0 to 1048576");
    device_.stats = &stats_;
    config_.addBar64(0, barBytes());
    config_.addPcieCap(linkSpeed(link), uint8_t(link.lanes), 0);
    RegBlock& r = config_.regs();

    // PCIe DVSEC for CXL Devices, revision 2 (CXL 3.0 layout): one DVSEC range
    // (HDM Count 1) describing the whole memory, valid and active at once.
    dvsec_ = config_.addDvsec(kDvsecDevice, 2, 0x3C);
    r.set(dvsec_ + kDvCap, 2, 1u << 1 | 1u << 2 | 1u << 4);  // CXL.io, CXL.mem, HDM count 1
    r.set(dvsec_ + kDvCtrl, 2, 1u << 1);                      // CXL.io enabled (RO)
    r.access(dvsec_ + kDvCtrl, 2, kMemEnable);
    r.access(dvsec_ + kDvStatus, 2, 0, 1u << 14);             // viral status
    r.access(dvsec_ + kDvLock, 2, kConfigLock);
    // Size low: bits 31:28 of the size, Memory_Info_Valid, Memory_Active, media
    // type and memory class 010b (described by the CDAT).
    r.set(dvsec_ + kDvRange1, 4, capacity >> 32);
    r.set(dvsec_ + kDvRange1 + 4, 4, (capacity & 0xF0000000) | 1u | 1u << 1 | 2u << 2 | 2u << 5);
    r.access(dvsec_ + kDvRange1 + 8, 4, 0xFFFFFFFF);  // range base, high
    r.access(dvsec_ + kDvRange1 + 12, 4, 0xF0000000);  // range base, low (256 MiB aligned)

    // GPF DVSEC for CXL Devices (section 8.1.7): no GPF phase 2 work, no power needed.
    config_.addDvsec(kDvsecDeviceGpf, 0, 0x10);
    addCxlDvsecs({{kBlockComponent, 0}, {kBlockDevice, kDeviceRegsOffset}});
    config_.addDoe(acpi::cdat({acpi::deviceCdat(device, media, capacity)}));
}

void Type3Function::configWrite(uint32_t off, unsigned size, uint32_t value) {
    Function::configWrite(off, size, value);
    // CONFIG_LOCK is write-once: the DVSEC's control and range base registers
    // then hold (RWL) until reset, and so does the lock itself.
    RegBlock& r = config_.regs();
    if (r.get(dvsec_ + kDvLock, 2) & kConfigLock) {
        r.access(dvsec_ + kDvCtrl, 2, 0);
        r.access(dvsec_ + kDvLock, 2, 0);
        r.access(dvsec_ + kDvRange1 + 8, 8, 0);
    }
}

uint64_t Type3Function::mmioRead(uint64_t off, unsigned size) {
    if (off >= kDeviceRegsOffset && off < barBytes()) return device_.read(uint32_t(off - kDeviceRegsOffset), size);
    return Function::mmioRead(off, size);
}

void Type3Function::mmioWrite(uint64_t off, unsigned size, uint64_t value) {
    if (off >= kDeviceRegsOffset && off < barBytes()) device_.write(uint32_t(off - kDeviceRegsOffset), size, value);
    else Function::mmioWrite(off, size, value);
}

PortFunction::PortFunction(PortKind kind, uint8_t portNumber, const LinkParams& link, uint32_t decoders,
                           uint32_t targets, uint16_t vendor, uint16_t deviceId)
    : Function(vendor, deviceId, 0x060400, portType(kind), componentKind(kind), decoders, targets, 0, link) {
    config_.addBar64(0, barBytes());
    config_.addPcieCap(linkSpeed(link), uint8_t(link.lanes), portNumber);
    RegBlock& r = config_.regs();
    // CXL Extensions DVSEC for Ports (section 8.1.5): the unmask and alternate
    // decode controls are plain RW (the model decodes by HDM decoders only).
    const uint32_t ext = config_.addDvsec(kDvsecPortExtensions, 0, 0x28);
    r.access(ext + 0x0C, 2, 0x000F);
    r.access(ext + 0x0E, 2, 0xFFFF);
    r.access(ext + 0x10, 8, ~0ull);
    r.access(ext + 0x18, 8, ~0ull);
    if (kind != PortKind::SwitchUpstream) {
        // GPF DVSEC for CXL Ports (section 8.1.6): phase 1 and 2 timeouts, RW.
        const uint32_t gpf = config_.addDvsec(kDvsecPortGpf, 0, 0x10);
        r.access(gpf + 0x0C, 2, 0x0F0F);
        r.access(gpf + 0x0E, 2, 0x0F0F);
    }
    addCxlDvsecs({{kBlockComponent, 0}});
}

uint64_t StateIn::u64() {
    if (in_.size() - pos_ < 8) fail("length");
    const uint64_t v = getLe(in_, pos_, 8);
    pos_ += 8;
    return v;
}

void StateIn::bytes(std::vector<uint8_t>& b, const char* part) {
    if (u64() != b.size() || in_.size() - pos_ < b.size()) fail(part);
    std::copy(in_.begin() + long(pos_), in_.begin() + long(pos_ + b.size()), b.begin());
    pos_ += b.size();
}

void StateIn::done() const {
    if (pos_ != in_.size()) fail("end");
}

void StateIn::fail(const char* part) const {
    throw ConfigError(what_ + ": saved CXL.io state does not fit this function (at its " + part +
                      "); allowed: a state saved by a function of the same kind and parameters");
}

void Function::save(StateOut& out) const {
    config_.save(out);
    component_.save(out);
}

void Function::load(StateIn& in) {
    config_.load(in);
    component_.load(in);
}

void Type3Function::save(StateOut& out) const {
    Function::save(out);
    device_.save(out);
}

void Type3Function::load(StateIn& in) {
    Function::load(in);
    device_.load(in);
}

}  // namespace cxlio
}  // namespace cxlcore
