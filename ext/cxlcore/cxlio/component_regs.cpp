#include "cxlcore/cxlio/component_regs.hpp"

#include <algorithm>

#include "cxlcore/config/params.hpp"

namespace cxlcore {
namespace cxlio {

namespace {

// HDM decoder register fields (CXL 3.1 section 8.2.4.20).
constexpr uint32_t kIgMask = 0xF, kIwShift = 4, kLock = 1u << 8, kCommit = 1u << 9, kCommitted = 1u << 10,
                   kCommitError = 1u << 11, kHostOnly = 1u << 12;
constexpr uint32_t kCtrlRw = kIgMask | 0xF0 | kLock | kCommit | kHostOnly;
// Global control: Poison On Decode Error Enable (bit 0; capability bit 10) and HDM Decoder Enable.
constexpr uint32_t kPoisonOnDecodeError = 1u << 0, kHdmEnable = 1u << 1;
constexpr uint32_t kBaseLow = 0x00, kBaseHigh = 0x04, kSizeLow = 0x08, kSizeHigh = 0x0C, kCtrl = 0x10,
                   kTargetLow = 0x14, kTargetHigh = 0x18;
// RAS status bits that exist (Linux's CXL_RAS_*_STATUS_MASK, CXL 3.1 section 8.2.4.16).
constexpr uint32_t kUncorrectableBits = 0x1CFFF, kCorrectableBits = 0x7F;

// Encoded interleave ways: 0-4 for 1-16, 8-10 for 3, 6, 12 (CXL 3.1 section 8.2.4.20.7).
bool eiwToWays(uint32_t eiw, uint32_t& ways) {
    if (eiw <= 4) ways = 1u << eiw;
    else if (eiw >= 8 && eiw <= 10) ways = 3u << (eiw - 8);
    else return false;
    return true;
}

uint32_t decoderCountCode(uint32_t n) { return n <= 1 ? 0 : n / 2; }  // 1, 2, 4, 6, 8, 10 decoders

std::string hex(uint64_t v) {
    static const char* d = "0123456789abcdef";
    std::string s;
    do {
        s.insert(s.begin(), d[v & 0xF]);
        v >>= 4;
    } while (v);
    return "0x" + s;
}

}  // namespace

ComponentRegs::ComponentRegs(ComponentKind kind, uint32_t decoders, uint32_t targets, uint64_t dpaCapacity,
                             const LinkParams& link)
    : regs_(kComponentBytes), kind_(kind), decoders_(decoders), targets_(targets), capacity_(dpaCapacity) {
    const bool hasHdm = kind == ComponentKind::Endpoint || kind == ComponentKind::HostBridge ||
                        kind == ComponentKind::SwitchUpstream;
    if (!hasHdm) decoders_ = 0;
    else if (decoders != 1 && (decoders < 2 || decoders > 10 || decoders % 2))
        throw ConfigError("hdm_decoders = " + std::to_string(decoders) + " is not allowed; allowed: 1, 2, 4, 6, 8 or 10");
    if (hasHdm && kind != ComponentKind::Endpoint && targets != 1 && targets != 2 && targets != 4 && targets != 8)
        throw ConfigError("targets = " + std::to_string(targets) + " is not allowed; allowed: 1, 2, 4 or 8");
    const uint32_t cm = kCacheMemOffset;
    const uint32_t caps = decoders_ ? 3 : 2;
    regs_.set(cm, 4, kCapIdCacheMem | 1u << 16 | 1u << 20 | caps << 24);
    regs_.set(cm + 4, 4, kCapIdRas | 2u << 16 | kRasOffset << 20);
    regs_.set(cm + 8, 4, kCapIdLink | 2u << 16 | kLinkOffset << 20);
    if (decoders_) regs_.set(cm + 12, 4, kCapIdHdm | 1u << 16 | kHdmOffset << 20);

    // RAS: status bits RW1C, masks and severity RW (every uncorrectable error fatal by default).
    const uint32_t ras = cm + kRasOffset;
    regs_.access(ras + 0x00, 4, 0, kUncorrectableBits);
    regs_.access(ras + 0x04, 4, kUncorrectableBits);
    regs_.access(ras + 0x08, 4, kUncorrectableBits);
    regs_.set(ras + 0x08, 4, kUncorrectableBits);
    regs_.access(ras + 0x0C, 4, 0, kCorrectableBits);
    regs_.access(ras + 0x10, 4, kCorrectableBits);

    // Link layer: CXL 2.0 link layer, and the M2S/S2M credits each end advertises (10-bit fields).
    const uint32_t ll = cm + kLinkOffset;
    regs_.set(ll, 8, 2);
    regs_.access(ll + 0x08, 4, 0x7);  // link layer reset and credit-return stalls
    const bool device = kind == ComponentKind::Endpoint || kind == ComponentKind::SwitchUpstream;
    const uint64_t req = std::min<uint64_t>(device ? link.credits_req : link.credits_ndr, 1023);
    const uint64_t data = std::min<uint64_t>(device ? link.credits_rwd : link.credits_drs, 1023);
    regs_.set(ll + 0x10, 8, req << 30 | data << 40);

    if (!decoders_) return;
    const uint32_t hdm = cm + kHdmOffset;
    const uint32_t tc = kind == ComponentKind::Endpoint ? 0 : targets_;
    const bool sixteen = kind == ComponentKind::Endpoint;  // a bridge's target list holds at most 8 ports
    regs_.set(hdm, 4, decoderCountCode(decoders_) | tc << 4 | 1u << 8 | 1u << 9 | 1u << 10 | 1u << 11 |
                          (sixteen ? 1u << 12 : 0));
    regs_.access(hdm + 4, 4, kHdmEnable | kPoisonOnDecodeError);
    for (uint32_t i = 0; i < decoders_; ++i) {
        regs_.access(decoderReg(i, kBaseLow), 4, 0xF0000000);
        regs_.access(decoderReg(i, kBaseHigh), 4, 0xFFFFFFFF);
        regs_.access(decoderReg(i, kSizeLow), 4, 0xF0000000);
        regs_.access(decoderReg(i, kSizeHigh), 4, 0xFFFFFFFF);
        regs_.access(decoderReg(i, kCtrl), 4, kCtrlRw);
        // Endpoints: the DPA skip (256 MiB units); others: eight 8-bit target port numbers.
        regs_.access(decoderReg(i, kTargetLow), 4, kind == ComponentKind::Endpoint ? 0xF0000000 : 0xFFFFFFFF);
        regs_.access(decoderReg(i, kTargetHigh), 4, 0xFFFFFFFF);
    }
}

uint64_t ComponentRegs::read(uint32_t off, unsigned size) {
    if (!accessOk(off, size, kComponentBytes, 8) || size < 4) {
        ++stats->badMmioAccesses;
        return allOnes(size);
    }
    ++stats->mmioReads;
    return regs_.get(off, size);
}

void ComponentRegs::write(uint32_t off, unsigned size, uint64_t value) {
    if (!accessOk(off, size, kComponentBytes, 8) || size < 4) {
        ++stats->badMmioAccesses;
        return;
    }
    ++stats->mmioWrites;
    for (uint32_t o = off; o < off + size; o += 4, value >>= 32) {
        const uint32_t first = kCacheMemOffset + kHdmOffset + 0x10;
        if (decoders_ && o >= first && o < first + 0x20 * decoders_) {
            writeDecoder((o - first) / 0x20, (o - first) % 0x20, 4, uint32_t(value));
        } else {
            regs_.write(o, 4, uint32_t(value));
            if (decoders_ && o == kCacheMemOffset + kHdmOffset + 4 && changed_) changed_();
        }
    }
}

bool ComponentRegs::isCommitted(uint32_t i) const { return regs_.get(decoderReg(i, kCtrl), 4) & kCommitted; }

// HDM Decoder Enable applies to devices only: Linux sets it at endpoints
// (cxl_hdm_decode_init) and never at host bridges or switch ports, whose
// committed decoders decode by themselves.
bool ComponentRegs::hdmEnabled() const {
    if (!decoders_) return false;
    return kind_ != ComponentKind::Endpoint || (regs_.get(kCacheMemOffset + kHdmOffset + 4, 4) & kHdmEnable);
}

bool ComponentRegs::poisonOnDecodeError() const {
    return decoders_ && (regs_.get(kCacheMemOffset + kHdmOffset + 4, 4) & kPoisonOnDecodeError);
}

void ComponentRegs::writeDecoder(uint32_t i, uint32_t reg, unsigned size, uint64_t value) {
    const uint32_t ctrlOff = decoderReg(i, kCtrl);
    const uint32_t ctrl = uint32_t(regs_.get(ctrlOff, 4));
    const bool committed = ctrl & kCommitted;
    // A committed decoder's registers hold still: with Lock On Commit until
    // reset, otherwise until software clears Commit (the specification leaves
    // other changes undefined; the model drops and counts them).
    if (committed && (ctrl & kLock)) {
        ++stats->lockedWrites;
        return;
    }
    if (reg != kCtrl) {
        if (committed) ++stats->lockedWrites;
        else regs_.write(decoderReg(i, reg), size, value);
        return;
    }
    if (committed && (value & kCommit)) {
        if ((value ^ ctrl) & kCtrlRw) ++stats->lockedWrites;
        return;
    }
    // Decoders uncommit last first (as Linux's cxl_decoder_reset insists): a
    // later decoder's device range starts where this one's ends.
    if (committed && i + 1 < decoders_ && isCommitted(i + 1)) {
        ++stats->lockedWrites;
        return;
    }
    regs_.write(ctrlOff, 4, value);
    regs_.setBits(ctrlOff, 4, kCommitted | kCommitError, false);
    if (committed && changed_) changed_();
    if (!(value & kCommit)) return;
    ++stats->commits;
    const std::string err = checkCommit(i);
    if (err.empty()) {
        regs_.setBits(ctrlOff, 4, kCommitted, true);
        if (changed_) changed_();
    } else {
        ++stats->commitErrors;
        lastError_ = "decoder " + std::to_string(i) + ": " + err;
        regs_.setBits(ctrlOff, 4, kCommitError, true);
    }
}

CommittedDecoder ComponentRegs::decode(uint32_t i) const {
    CommittedDecoder d;
    d.index = i;
    d.base = regs_.get(decoderReg(i, kBaseLow), 4) | regs_.get(decoderReg(i, kBaseHigh), 4) << 32;
    d.size = regs_.get(decoderReg(i, kSizeLow), 4) | regs_.get(decoderReg(i, kSizeHigh), 4) << 32;
    const uint32_t ctrl = uint32_t(regs_.get(decoderReg(i, kCtrl), 4));
    d.granularity = 256u << std::min<uint32_t>(ctrl & kIgMask, 6);
    if (!eiwToWays(ctrl >> kIwShift & 0xF, d.ways)) d.ways = 1;
    d.locked = ctrl & kLock;
    d.hostOnly = ctrl & kHostOnly;
    const uint64_t tl = regs_.get(decoderReg(i, kTargetLow), 4) | regs_.get(decoderReg(i, kTargetHigh), 4) << 32;
    if (kind_ == ComponentKind::Endpoint) {
        // The DPA range follows the previous decoder's, after this decoder's skip.
        uint64_t dpa = 0;
        for (uint32_t j = 0; j < i; ++j) {
            const CommittedDecoder p = decode(j);
            dpa = p.dpaBase + p.dpaSize;
        }
        d.dpaBase = dpa + tl;
        d.dpaSize = d.size / d.ways;
    } else {
        for (uint32_t w = 0; w < std::min(d.ways, 8u); ++w) d.targets.push_back(uint32_t(tl >> (8 * w) & 0xFF));
    }
    return d;
}

std::string ComponentRegs::checkCommit(uint32_t i) const {
    const uint32_t ctrl = uint32_t(regs_.get(decoderReg(i, kCtrl), 4));
    const uint32_t eig = ctrl & kIgMask, eiw = ctrl >> kIwShift & 0xF;
    uint32_t ways = 1;
    if (eig > 6) return "interleave granularity code " + std::to_string(eig) + " is not allowed (0 to 6: 256 B to 16 KiB)";
    if (!eiwToWays(eiw, ways))
        return "interleave ways code " + std::to_string(eiw) + " is not allowed (0 to 4: 1 to 16 ways; 8 to 10: 3, 6, 12)";
    if (kind_ != ComponentKind::Endpoint && ways > targets_)
        return std::to_string(ways) + " ways exceed the target list of " + std::to_string(targets_) + " ports";
    const CommittedDecoder d = decode(i);
    if (d.size % (kHdmUnit * ways))
        return "size " + hex(d.size) + " is not a multiple of " + std::to_string(ways) + " x 256 MiB";
    if (d.base >= (1ull << 52) || d.size > (1ull << 52) - d.base) return "range ends past the 52-bit address space";
    if (i > 0 && !isCommitted(i - 1))
        return "decoder " + std::to_string(i - 1) + " is not committed (decoders commit in order)";
    for (uint32_t j = 0; j < decoders_; ++j) {
        if (j == i || !isCommitted(j)) continue;
        const CommittedDecoder o = decode(j);
        if (d.size && o.size && d.base < o.base + o.size && o.base < d.base + d.size)
            return "range overlaps committed decoder " + std::to_string(j);
        if (j < i && d.base < o.base + o.size)
            return "base " + hex(d.base) + " is below the end of decoder " + std::to_string(j);
    }
    if (kind_ == ComponentKind::Endpoint && d.dpaBase + d.dpaSize > capacity_)
        return "device range [" + hex(d.dpaBase) + ", " + hex(d.dpaBase + d.dpaSize) + ") exceeds the capacity " +
               hex(capacity_);
    return "";
}

std::string ComponentRegs::commitDecoder(uint32_t i, const CommittedDecoder& d, uint64_t skip) {
    if (i >= decoders_) return "decoder " + std::to_string(i) + " does not exist (" + std::to_string(decoders_) + ")";
    uint32_t eiw = 0, eig = 0;
    for (eiw = 0; eiw <= 10; ++eiw) {
        uint32_t w = 0;
        if (eiwToWays(eiw, w) && w == d.ways) break;
    }
    while (eig < 7 && (256u << eig) != d.granularity) ++eig;
    if (eiw > 10)
        return std::to_string(d.ways) + " ways cannot be encoded; allowed: 1, 2, 3, 4, 6, 8, 12 or 16";
    if (eig > 6)
        return "granularity " + std::to_string(d.granularity) +
               " B cannot be encoded; allowed: 256 B to 16 KiB, a power of two";
    const uint32_t base = kCacheMemOffset + kHdmOffset + 0x10 + 0x20 * i;
    uint64_t tl = skip;
    if (kind_ != ComponentKind::Endpoint) {
        tl = 0;
        for (size_t w = 0; w < d.targets.size() && w < 8; ++w) tl |= uint64_t(d.targets[w] & 0xFF) << (8 * w);
    }
    write(base + kBaseHigh, 4, d.base >> 32);
    write(base + kBaseLow, 4, d.base & 0xFFFFFFFF);
    write(base + kSizeHigh, 4, d.size >> 32);
    write(base + kSizeLow, 4, d.size & 0xFFFFFFFF);
    write(base + kTargetHigh, 4, tl >> 32);
    write(base + kTargetLow, 4, tl & 0xFFFFFFFF);
    write(base + kCtrl, 4, eig | eiw << kIwShift | (d.locked ? kLock : 0) | (d.hostOnly ? kHostOnly : 0) | kCommit);
    if (!isCommitted(i)) return lastError_;
    const uint32_t global = kCacheMemOffset + kHdmOffset + 4;
    write(global, 4, read(global, 4) | kHdmEnable);
    return "";
}

std::vector<CommittedDecoder> ComponentRegs::committed() const {
    std::vector<CommittedDecoder> out;
    for (uint32_t i = 0; i < decoders_; ++i)
        if (isCommitted(i)) out.push_back(decode(i));
    return out;
}

void ComponentRegs::injectRas(bool uncorrectable, unsigned bit) {
    const uint32_t ras = kCacheMemOffset + kRasOffset;
    const uint32_t allowed = uncorrectable ? kUncorrectableBits : kCorrectableBits;
    if (bit > 31 || !(allowed >> bit & 1))
        throw ConfigError("bit = " + std::to_string(bit) + " is not allowed; allowed: " +
                          (uncorrectable ? "0 to 11, 14 to 16 (uncorrectable)" : "0 to 6 (correctable)"));
    const uint32_t status = uncorrectable ? ras : ras + 0x0C;
    if (uncorrectable && !regs_.get(status, 4)) regs_.set(ras + 0x14, 4, bit);  // First Error Pointer
    regs_.setBits(status, 4, 1u << bit, true);
}

void ComponentRegs::load(StateIn& in) {
    in.bytes(regs_.values(), "component registers");
    if (changed_) changed_();
}

}  // namespace cxlio
}  // namespace cxlcore
