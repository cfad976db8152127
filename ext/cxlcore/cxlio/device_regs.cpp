#include "cxlcore/cxlio/device_regs.hpp"

#include <algorithm>

namespace cxlcore {
namespace cxlio {

namespace {

// Device capability IDs (CXL 3.1 table 8-28).
constexpr uint16_t kCapStatus = 0x0001, kCapMailbox = 0x0002, kCapMemdev = 0x4000;
constexpr uint64_t kDoorbell = 1;
constexpr uint64_t kMediaReady = 1u << 2, kMailboxReady = 1u << 4;  // Memory Device Status (section 8.2.8.5.1.1)
constexpr uint64_t kCapacityUnit = 256ull << 20;                    // capacities are reported in 256 MiB units

// The Command Effects Log UUID (CXL 3.1 table 8-65), in its byte order on the wire.
const uint8_t kCelUuid[16] = {0x0d, 0xa9, 0xc0, 0xb5, 0xbf, 0x41, 0x4b, 0x78,
                              0x8f, 0x79, 0x96, 0xb1, 0x62, 0x3b, 0x3f, 0x17};
// Every command served and its effects (bit 1: immediate configuration change,
// 2: immediate data change, 3: immediate policy change, 4: immediate log change).
const std::pair<uint16_t, uint16_t> kCommands[] = {
    {kOpGetEventRecords, 0}, {kOpClearEventRecords, 1u << 4}, {kOpGetEventPolicy, 0}, {kOpSetEventPolicy, 1u << 1},
    {kOpGetTimestamp, 0}, {kOpSetTimestamp, 1u << 3}, {kOpGetSupportedLogs, 0}, {kOpGetLog, 0}, {kOpIdentify, 0},
    {kOpGetPartitionInfo, 0}, {kOpGetLsa, 0}, {kOpSetLsa, 1u << 2}, {kOpGetHealthInfo, 0}, {kOpGetPoisonList, 0},
    {kOpInjectPoison, 1u << 2}, {kOpClearPoison, 1u << 2}};
constexpr uint32_t kCelBytes = sizeof(kCommands) / sizeof(kCommands[0]) * 4;

std::vector<uint8_t> celBytes() {
    std::vector<uint8_t> b;
    for (auto& c : kCommands) {
        putLe(b, b.size(), 2, c.first);
        putLe(b, b.size(), 2, c.second);
    }
    return b;
}

}  // namespace

DeviceRegs::DeviceRegs(uint64_t capacity, uint32_t lsaBytes, const std::string& firmware)
    : regs_(kDeviceBytes), capacity_(capacity), lsa_(lsaBytes), firmware_(firmware) {
    // Capabilities array: ID 0, version 1, type 1 (memory device), three capabilities.
    regs_.set(0x00, 8, 0 | 1u << 16 | 1u << 24 | 3ull << 32);
    const struct { uint16_t id; uint8_t version; uint32_t offset, length; } caps[] = {
        {kCapStatus, 2, kStatusOffset, 0x100},
        {kCapMailbox, 1, kMailboxOffset, kMbPayload + kPayloadBytes},
        {kCapMemdev, 1, kMemdevOffset, 0x8}};
    for (uint32_t i = 0; i < 3; ++i) {
        regs_.set(0x10 * (i + 1), 4, caps[i].id | uint32_t(caps[i].version) << 16);
        regs_.set(0x10 * (i + 1) + 4, 4, caps[i].offset);
        regs_.set(0x10 * (i + 1) + 8, 4, caps[i].length);
    }
    const uint32_t mb = kMailboxOffset;
    regs_.set(mb + kMbCaps, 4, kPayloadCode);  // no interrupts: software polls the doorbell
    regs_.access(mb + kMbCtrl, 4, 0x6);         // doorbell and background interrupt enables
    regs_.access(mb + kMbCmd, 8, (1ull << 37) - 1);  // opcode and payload length
    for (uint32_t i = 0; i < kPayloadBytes; i += 8) regs_.access(mb + kMbPayload + i, 8, ~0ull);
    setMediaReady(true);
}

void DeviceRegs::setMediaReady(bool ready) { regs_.set(kMemdevOffset, 8, (ready ? kMediaReady : 0) | kMailboxReady); }

uint64_t DeviceRegs::read(uint32_t off, unsigned size) {
    if (!accessOk(off, size, kDeviceBytes, 8)) {
        ++stats->badMmioAccesses;
        return allOnes(size);
    }
    ++stats->mmioReads;
    return regs_.get(off, size);
}

void DeviceRegs::write(uint32_t off, unsigned size, uint64_t value) {
    if (!accessOk(off, size, kDeviceBytes, 8)) {
        ++stats->badMmioAccesses;
        return;
    }
    ++stats->mmioWrites;
    regs_.write(off, size, value);
    // Ringing the doorbell (bit 0 of the first byte of Mailbox Control) runs the command.
    const uint32_t ctrl = kMailboxOffset + kMbCtrl;
    if (off <= ctrl && ctrl < off + size && (value >> (8 * (ctrl - off)) & kDoorbell)) execute();
}

void DeviceRegs::execute() {
    const uint32_t mb = kMailboxOffset;
    const uint64_t cmd = regs_.get(mb + kMbCmd, 8);
    const uint16_t op = uint16_t(cmd);
    const uint64_t len = cmd >> 16 & 0x1FFFFF;
    std::vector<uint8_t> out;
    uint16_t rc = kRcInvalidPayloadLength;
    if (len <= kPayloadBytes) {
        const auto& b = regs_.bytes();
        const std::vector<uint8_t> in(b.begin() + mb + kMbPayload, b.begin() + mb + kMbPayload + long(len));
        rc = run(op, in, out);
    }
    if (rc != kRcSuccess) out.clear();
    for (size_t i = 0; i < out.size(); ++i) regs_.set(mb + kMbPayload + i, 1, out[i]);
    regs_.set(mb + kMbCmd, 8, (cmd & 0xFFFF) | uint64_t(out.size()) << 16);
    regs_.set(mb + kMbStatus, 8, uint64_t(rc) << 32);
    ++stats->mailboxCommands;
    if (rc != kRcSuccess) ++stats->mailboxFailures;
}

uint16_t DeviceRegs::run(uint16_t op, const std::vector<uint8_t>& in, std::vector<uint8_t>& out) {
    const size_t n = in.size();
    auto need = [&](size_t bytes) { return n == bytes; };
    switch (op) {
    case kOpIdentify: {
        if (!need(0)) return kRcInvalidPayloadLength;
        out.assign(0x43, 0);
        std::copy_n(firmware_.begin(), std::min<size_t>(firmware_.size(), 16), out.begin());
        putLe(out, 0x10, 8, capacity_ / kCapacityUnit);  // total
        putLe(out, 0x18, 8, capacity_ / kCapacityUnit);  // volatile only: no persistent or partitionable part
        for (uint32_t log = 0; log < 4; ++log) putLe(out, 0x30 + 2 * log, 2, 32);  // event log sizes (records)
        putLe(out, 0x38, 4, lsa_.size());
        putLe(out, 0x3C, 3, kInjectPoisonLimit);  // poison list: at most this many records
        putLe(out, 0x3F, 2, kInjectPoisonLimit);
        return kRcSuccess;
    }
    case kOpGetPartitionInfo:
        if (!need(0)) return kRcInvalidPayloadLength;
        out.assign(32, 0);
        putLe(out, 0, 8, capacity_ / kCapacityUnit);  // active volatile
        return kRcSuccess;
    case kOpGetLsa: {
        if (!need(8)) return kRcInvalidPayloadLength;
        const uint64_t off = getLe(in, 0, 4), len = getLe(in, 4, 4);
        if (off + len > lsa_.size() || len > kPayloadBytes) return kRcInvalidInput;
        out.assign(lsa_.begin() + long(off), lsa_.begin() + long(off + len));
        return kRcSuccess;
    }
    case kOpSetLsa: {
        if (n < 8) return kRcInvalidPayloadLength;
        const uint64_t off = getLe(in, 0, 4);
        if (off + (n - 8) > lsa_.size()) return kRcInvalidInput;
        std::copy(in.begin() + 8, in.end(), lsa_.begin() + long(off));
        return kRcSuccess;
    }
    case kOpGetHealthInfo:
        if (!need(0)) return kRcInvalidPayloadLength;
        out.assign(0x12, 0);  // healthy, media normal, nothing used up, no errors
        putLe(out, 4, 2, 0xFFFF);  // device temperature: not reported
        return kRcSuccess;
    case kOpGetEventRecords:
        if (!need(1)) return kRcInvalidPayloadLength;
        if (in[0] > 3) return kRcInvalidInput;  // info, warning, failure, fatal
        out.assign(0x20, 0);  // no records: the model raises no events
        return kRcSuccess;
    case kOpClearEventRecords: {
        if (n < 6 || n != 6 + 2 * size_t(in[2])) return kRcInvalidPayloadLength;
        const bool all = in[1] & 1;
        if (in[0] > 3 || (all && in[2])) return kRcInvalidInput;
        return all ? kRcSuccess : kRcInvalidHandle;  // no record has a handle to clear
    }
    case kOpGetEventPolicy:
        if (!need(0)) return kRcInvalidPayloadLength;
        putLe(out, 0, 4, eventPolicy_);
        return kRcSuccess;
    case kOpSetEventPolicy: {
        if (!need(4) && !need(5)) return kRcInvalidPayloadLength;
        for (size_t i = 0; i < 4; ++i)
            if ((in[i] & 3) == 3) return kRcInvalidInput;  // interrupt mode 3 is reserved
        eventPolicy_ = uint32_t(getLe(in, 0, 4));
        return kRcSuccess;
    }
    case kOpGetTimestamp:
        if (!need(0)) return kRcInvalidPayloadLength;
        putLe(out, 0, 8, timestamp_);
        return kRcSuccess;
    case kOpSetTimestamp:
        if (!need(8)) return kRcInvalidPayloadLength;
        timestamp_ = getLe(in, 0, 8);
        return kRcSuccess;
    case kOpGetSupportedLogs:
        if (!need(0)) return kRcInvalidPayloadLength;
        out.assign(8, 0);
        putLe(out, 0, 2, 1);
        out.insert(out.end(), kCelUuid, kCelUuid + 16);
        putLe(out, out.size(), 4, kCelBytes);
        return kRcSuccess;
    case kOpGetLog: {
        if (!need(24)) return kRcInvalidPayloadLength;
        if (!std::equal(kCelUuid, kCelUuid + 16, in.begin())) return kRcInvalidLog;
        const uint64_t off = getLe(in, 16, 4), len = getLe(in, 20, 4);
        if (off + len > kCelBytes || len > kPayloadBytes) return kRcInvalidInput;
        const std::vector<uint8_t> cel = celBytes();
        out.assign(cel.begin() + long(off), cel.begin() + long(off + len));
        return kRcSuccess;
    }
    case kOpGetPoisonList:
        if (!need(16)) return kRcInvalidPayloadLength;
        return poisonList(in, out);
    case kOpInjectPoison:
        if (!need(8)) return kRcInvalidPayloadLength;
        return poisonChange(op, in);
    case kOpClearPoison:
        if (!need(72)) return kRcInvalidPayloadLength;
        return poisonChange(op, in);
    default:
        return kRcUnsupported;
    }
}

uint16_t DeviceRegs::poisonList(const std::vector<uint8_t>& in, std::vector<uint8_t>& out) const {
    const uint64_t addr = getLe(in, 0, 8), lines = getLe(in, 8, 8);
    if (addr % 64 || lines == 0) return kRcInvalidInput;
    if (addr >= capacity_ || lines > (capacity_ - addr) / 64) return kRcInvalidAddress;
    out.assign(0x20, 0);
    uint16_t count = 0;
    for (uint64_t dpa : poison_) {
        if (dpa < addr || dpa >= addr + lines * 64) continue;
        putLe(out, out.size(), 8, dpa | 3);  // source 3: injected
        putLe(out, out.size(), 4, 1);        // one 64-byte line
        putLe(out, out.size(), 4, 0);
        ++count;
    }
    putLe(out, 0x0A, 2, count);
    return kRcSuccess;
}

uint16_t DeviceRegs::poisonChange(uint16_t op, const std::vector<uint8_t>& in) {
    const uint64_t dpa = getLe(in, 0, 8);
    if (dpa % 64) return kRcInvalidInput;
    if (dpa >= capacity_) return kRcInvalidAddress;
    const auto it = std::find(poison_.begin(), poison_.end(), dpa);
    if (op == kOpClearPoison) {
        if (it != poison_.end()) poison_.erase(it);
    } else if (it == poison_.end()) {
        if (poison_.size() >= kInjectPoisonLimit) return kRcPoisonLimit;
        poison_.insert(std::upper_bound(poison_.begin(), poison_.end(), dpa), dpa);
    }
    return kRcSuccess;
}

void DeviceRegs::save(StateOut& out) const {
    out.bytes(regs_.bytes());
    out.bytes(lsa_);
    out.u64(timestamp_);
    out.u64(eventPolicy_);
    out.u64(poison_.size());
    for (uint64_t dpa : poison_) out.u64(dpa);
}

void DeviceRegs::load(StateIn& in) {
    in.bytes(regs_.values(), "device registers");
    in.bytes(lsa_, "label storage area");
    timestamp_ = in.u64();
    eventPolicy_ = uint32_t(in.u64());
    const uint64_t n = in.u64();
    if (n > kInjectPoisonLimit) in.fail("poison list");
    poison_.clear();
    for (uint64_t i = 0; i < n; ++i) poison_.push_back(in.u64());
}

}  // namespace cxlio
}  // namespace cxlcore
