#include "cxlcore/cxlio/config_space.hpp"

namespace cxlcore {
namespace cxlio {

ConfigSpace::ConfigSpace(uint16_t vendor, uint16_t device, uint32_t classCode, PortType type)
    : regs_(kBytes), type_(type) {
    const bool bridge = type != PortType::Endpoint;
    regs_.set(0x00, 2, vendor);
    regs_.set(0x02, 2, device);
    // Command: I/O and memory space, bus master, parity and SERR# enables, interrupt disable.
    regs_.access(0x04, 2, 0x0547);
    // Status: capability list (RO 1); the error bits are RW1C.
    regs_.set(0x06, 2, 1u << 4);
    regs_.access(0x06, 2, 0, 0xF900);
    regs_.set(0x08, 4, classCode << 8);  // revision 0
    regs_.access(0x0C, 1, 0xFF);          // cache line size
    regs_.set(0x0E, 1, bridge ? 1 : 0);   // header type
    regs_.access(0x3C, 1, 0xFF);          // interrupt line
    if (bridge) {
        regs_.access(0x18, 3, 0xFFFFFF);   // primary, secondary and subordinate bus numbers
        regs_.access(0x1E, 2, 0, 0xF900);  // secondary status
        regs_.access(0x20, 4, 0xFFF0FFF0); // memory base and limit (1 MiB units)
        regs_.set(0x24, 4, 0x00010001);    // prefetchable base and limit: 64-bit
        regs_.access(0x24, 4, 0xFFF0FFF0);
        regs_.access(0x28, 4, 0xFFFFFFFF);
        regs_.access(0x2C, 4, 0xFFFFFFFF);
        regs_.access(0x3E, 2, 0x007F);     // bridge control, secondary bus reset included
    }
}

void ConfigSpace::addBar64(unsigned bar, uint64_t bytes) {
    const uint32_t off = 0x10 + 4 * bar;
    regs_.set(off, 4, 0x4);  // memory, 64-bit, not prefetchable
    regs_.access(off, 4, uint32_t(~(bytes - 1)) & 0xFFFFFFF0u);
    regs_.access(off + 4, 4, 0xFFFFFFFF);
}

uint64_t ConfigSpace::bar64(unsigned bar) const {
    const uint32_t off = 0x10 + 4 * bar;
    return (regs_.get(off, 4) & ~0xFull) | regs_.get(off + 4, 4) << 32;
}

uint32_t ConfigSpace::addPcieCap(uint8_t linkSpeed, uint8_t linkWidth, uint8_t portNumber) {
    const uint32_t at = nextCap_;
    nextCap_ += 0x3C;
    regs_.set(0x34, 1, at);
    const bool slot = type_ == PortType::RootPort || type_ == PortType::SwitchDownstream;
    regs_.set(at, 2, kCapPcie);  // next capability: none
    regs_.set(at + 0x02, 2, 2u | uint32_t(type_) << 4 | (slot ? 1u << 8 : 0));  // version 2
    regs_.set(at + 0x04, 4, 0x1);  // device capabilities: 256-byte max payload
    regs_.access(at + 0x08, 2, 0x7FFF);
    regs_.set(at + 0x08, 2, 0x2810);  // 512-byte max read request, relaxed ordering, no snoop
    regs_.access(at + 0x0A, 2, 0, 0x000F);  // device status: error-detected bits RW1C
    regs_.set(at + 0x0C, 4, linkSpeed | uint32_t(linkWidth) << 4 | uint32_t(portNumber) << 24);
    regs_.access(at + 0x10, 2, 0x01C3);  // ASPM, common clock, extended synch, clock PM
    // Link status: trained at its maximum; data link layer active reported by ports.
    regs_.set(at + 0x12, 2, linkSpeed | uint32_t(linkWidth) << 4 | (type_ != PortType::Endpoint ? 1u << 13 : 0));
    regs_.access(at + 0x12, 2, 0, 0xC000);
    regs_.access(at + 0x28, 2, 0xFFFF);                        // device control 2
    regs_.set(at + 0x2C, 4, ((1u << linkSpeed) - 1) << 1);    // supported speeds vector
    regs_.set(at + 0x30, 2, linkSpeed);                        // target link speed
    regs_.access(at + 0x30, 2, 0x000F);
    return at;
}

uint32_t ConfigSpace::addExtCap(uint16_t id, uint8_t version, uint32_t len) {
    const uint32_t at = nextExt_;
    nextExt_ = (at + len + 3) & ~3u;
    if (lastExt_) regs_.set(lastExt_, 4, regs_.get(lastExt_, 4) | at << 20);
    regs_.set(at, 4, id | uint32_t(version) << 16);
    lastExt_ = at;
    return at;
}

uint32_t ConfigSpace::addDvsec(uint16_t dvsecId, uint8_t revision, uint32_t len) {
    const uint32_t at = addExtCap(kExtCapDvsec, 1, len);
    regs_.set(at + 4, 4, kCxlVendorId | uint32_t(revision) << 16 | len << 20);
    regs_.set(at + 8, 2, dvsecId);
    return at;
}

uint32_t ConfigSpace::addDoe(const std::vector<uint8_t>& cdat) {
    doe_ = addExtCap(kExtCapDoe, 1, kDoeLength);
    // The Table Access protocol reads the CDAT one entry at a time: the
    // header first (handle 0), then each structure by its length field.
    cdatEntries_.clear();
    if (cdat.size() >= 16) cdatEntries_.emplace_back(cdat.begin(), cdat.begin() + 16);
    for (size_t off = 16; off + 4 <= cdat.size();) {
        const size_t len = getLe(cdat, off + 2, 2);
        if (len < 4 || off + len > cdat.size()) break;
        cdatEntries_.emplace_back(cdat.begin() + long(off), cdat.begin() + long(off + len));
        off += len;
    }
    return doe_;
}

uint32_t ConfigSpace::read(uint32_t off, unsigned size) {
    if (!accessOk(off, size, kBytes, 4)) {
        ++stats->badConfigAccesses;
        return uint32_t(allOnes(size < 4 ? size : 4));
    }
    ++stats->configReads;
    if (doe_ && off >= doe_ && off < doe_ + kDoeLength) {
        const uint32_t reg = off - doe_;
        if (reg == kDoeRead && size == 4) return doeRead_ < doeOut_.size() ? doeOut_[doeRead_] : 0;
        if (reg == kDoeWrite || reg == kDoeCtrl) return 0;  // write-only mailbox, self-clearing controls
    }
    return uint32_t(regs_.get(off, size));
}

void ConfigSpace::write(uint32_t off, unsigned size, uint32_t value) {
    if (!accessOk(off, size, kBytes, 4)) {
        ++stats->badConfigAccesses;
        return;
    }
    ++stats->configWrites;
    if (doe_ && off >= doe_ + kDoeCtrl && off < doe_ + kDoeLength) {
        // The DOE registers are dword registers (PCIe 6.0 section 7.9.24).
        if (size != 4) {
            ++stats->badConfigAccesses;
            return;
        }
        const uint32_t reg = off - doe_;
        if (reg == kDoeWrite) {
            if (doeIn_.size() < (1u << 18)) doeIn_.push_back(value);
        } else if (reg == kDoeRead) {
            // Writing the read mailbox pops the dword just read.
            if (doeRead_ < doeOut_.size() && ++doeRead_ == doeOut_.size()) {
                regs_.setBits(doe_ + kDoeStatus, 4, kDoeReady, false);
                doeOut_.clear();
                doeRead_ = 0;
            }
        } else if (reg == kDoeCtrl) {
            if (value & kDoeAbort) {
                doeIn_.clear();
                doeOut_.clear();
                doeRead_ = 0;
                regs_.set(doe_ + kDoeStatus, 4, 0);
            } else if (value & kDoeGo) {
                doeGo();
            }
        }
        return;
    }
    regs_.write(off, size, value);
}

void ConfigSpace::doeRespond(uint16_t vendor, uint8_t type, const std::vector<uint32_t>& payload) {
    doeOut_ = {vendor | uint32_t(type) << 16, uint32_t(2 + payload.size())};
    doeOut_.insert(doeOut_.end(), payload.begin(), payload.end());
    doeRead_ = 0;
    regs_.setBits(doe_ + kDoeStatus, 4, kDoeReady, true);
}

void ConfigSpace::doeGo() {
    ++stats->doeRequests;
    std::vector<uint32_t> in;
    in.swap(doeIn_);
    const uint32_t status = uint32_t(regs_.get(doe_ + kDoeStatus, 4));
    bool ok = !(status & kDoeError) && in.size() == 3;  // both protocols' requests are 3 dwords
    const uint16_t vendor = ok ? uint16_t(in[0]) : 0;
    const uint8_t type = ok ? uint8_t(in[0] >> 16) : 0;
    ok = ok && (in[1] & 0x3FFFF) == 3;
    if (ok && vendor == kPciSigVendorId && type == kDoeTypeDiscovery) {
        // Discovery: the protocol at an index and the next index (0 after the last).
        static const uint32_t protocols[] = {kPciSigVendorId | uint32_t(kDoeTypeDiscovery) << 16,
                                             kCxlVendorId | uint32_t(kDoeTypeTableAccess) << 16};
        const uint32_t index = in[2] & 0xFF, n = 2;
        if (index < n) {
            doeRespond(vendor, type, {protocols[index] | (index + 1 < n ? index + 1 : 0) << 24});
            return;
        }
    } else if (ok && vendor == kCxlVendorId && type == kDoeTypeTableAccess) {
        // Read Entry (code 0) of table type 0 (CDAT) at an entry handle.
        const uint32_t handle = in[2] >> 16;
        if ((in[2] & 0xFFFF) == 0 && handle < cdatEntries_.size()) {
            const std::vector<uint8_t>& e = cdatEntries_[handle];
            const uint32_t next = handle + 1 < cdatEntries_.size() ? handle + 1 : 0xFFFF;
            std::vector<uint32_t> payload{next << 16};
            for (size_t i = 0; i < e.size(); i += 4) payload.push_back(uint32_t(getLe(e, i, 4)));
            doeRespond(vendor, type, payload);
            return;
        }
    }
    // A request the mailbox cannot serve: the Error bit, until software aborts.
    ++stats->doeErrors;
    regs_.setBits(doe_ + kDoeStatus, 4, kDoeError, true);
}

void ConfigSpace::load(StateIn& in) {
    in.bytes(regs_.values(), "configuration space");
    doeIn_.clear();
    doeOut_.clear();
    doeRead_ = 0;
}

}  // namespace cxlio
}  // namespace cxlcore
