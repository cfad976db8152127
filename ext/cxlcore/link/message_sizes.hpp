// The channels of a CXL link and the size of every CXL message on them, in
// 8-byte half-slots (the flit channel's unit: a 16 B slot holds two), for
// CXL.mem, CXL.cache and CXL.io alike. The command table
// (kernel/commands.hpp) gives each opcode its channel and so its size here.
//
// A protocol message is a header of a few dozen bits, packed with others into
// a 16 B header slot, plus 64 B of data (four 16 B data slots) on the data
// channels. Header widths are those of the 68 B flit's message formats (CXL
// 2.0 Sec. 3.2 for CXL.cache, Sec. 3.3 for CXL.mem, packed into the slot
// formats of Sec. 4.2). Back-invalidate exists in the 256 B flit only (CXL
// 3.x Sec. 3.3 and 4.3); its widths here are the sums of the fields that
// matter for the count (reserved and spare bits left out): BISnp = Valid 1 +
// Opcode 4 + BI-ID 12 + BITag 12 + Address[51:6] 46 + LowAddr 2, BIRsp = the
// same without the address. A header takes whole half-slots, ceil(bits / 64):
// never less than its bits, at most one half-slot more. (The spec packs
// finer: its H1 slot holds a D2H Req and a D2H data header, 79 + 17 bits, in
// the 96 bits a header slot has beside the flit header, where the half-slot
// count gives 2 + 1.)
//
// A CXL.io TLP is not slotted like this: it takes its framing, header, DLLP
// sequence number and LCRC (tlp_overhead_bytes, a parameter) plus its payload,
// rounded up to whole half-slots.
#pragma once

#include <cstdint>

namespace cxlcore {

// The channels of a CXL link, each a credit class of its own (CXL 3.x gives
// back-invalidate snoops and their answers channels of their own: a BISnp
// holds its credit until the home answers, and the home may first need
// MemData, so sharing a class could deadlock). The CXL.cachemem channels
// index the table of message formats below; CXL.io TLPs are sized by their
// payload.
enum Channel : uint8_t {
    kM2SReq, kM2SRwD, kM2SBIRsp,  // host -> memory device
    kS2MNdr, kS2MDrs, kS2MBISnp,  // memory device -> host
    kD2HReq, kD2HRsp, kD2HData,   // CXL.cache device -> host
    kH2DReq, kH2DRsp, kH2DData,   // CXL.cache host -> device
    kIoUp, kIoDown,               // CXL.io TLPs, device -> host and host -> device
    kNumChannels
};
constexpr uint32_t kNumCacheMemChannels = kIoUp;
// Whether a channel carries traffic from the device to the host (a bit test:
// every message sent asks).
constexpr bool isUpstream(Channel c) {
    constexpr uint32_t up = 1u << kS2MNdr | 1u << kS2MDrs | 1u << kS2MBISnp | 1u << kD2HReq | 1u << kD2HRsp |
                            1u << kD2HData | 1u << kIoUp;
    return (up >> c & 1) != 0;
}

struct MessageFormat {
    const char* name;
    uint16_t headerBits;  // the message's header as laid out in a header slot
    uint16_t dataBytes;   // data that follows it in data slots
};

constexpr uint32_t kHalfSlotBytes = 8;
constexpr uint32_t kHalfSlotBits = kHalfSlotBytes * 8;

// Indexed by Channel (kernel/txn.hpp), CXL.cachemem channels only.
constexpr MessageFormat kMessageFormats[kNumCacheMemChannels] = {
    {"m2s_req", 87, 0},     // MemRd, MemRdFwd, MemInv, ...
    {"m2s_rwd", 87, 64},    // MemWr, MemWrPtl: header + a line
    {"m2s_birsp", 31, 0},   // BIRspI/S/E (CXL 3.x)
    {"s2m_ndr", 30, 0},     // Cmp, Cmp-S, Cmp-E
    {"s2m_drs", 40, 64},    // MemData: header + a line
    {"s2m_bisnp", 77, 0},   // BISnpCur/Data/Inv (CXL 3.x)
    {"d2h_req", 79, 0},     // RdCurr, RdOwn, RdShared, RdAny, ItoMWr, WrInv, evictions
    {"d2h_rsp", 20, 0},     // RspIHitI, RspSFwdM, ...
    {"d2h_data", 17, 64},   // data header + a line
    {"h2d_req", 64, 0},     // SnpData, SnpInv, SnpCur
    {"h2d_rsp", 32, 0},     // GO, GO_WritePull
    {"h2d_data", 24, 64},   // data header + a line
};

constexpr const MessageFormat& messageFormat(Channel c) { return kMessageFormats[c]; }

constexpr const char* channelName(Channel c) {
    return c < kNumCacheMemChannels ? kMessageFormats[c].name : c == kIoUp ? "io_up" : c == kIoDown ? "io_down" : "none";
}

// Half-slots a message of the channel takes: its header, then its data.
constexpr uint32_t messageUnits(Channel c) {
    return (messageFormat(c).headerBits + kHalfSlotBits - 1) / kHalfSlotBits +
           messageFormat(c).dataBytes / kHalfSlotBytes;
}

// Half-slots a CXL.io TLP takes: overhead (framing, header, sequence, LCRC) and payload.
constexpr uint32_t tlpUnits(uint32_t overheadBytes, uint32_t payloadBytes) {
    return (overheadBytes + payloadBytes + kHalfSlotBytes - 1) / kHalfSlotBytes;
}

}  // namespace cxlcore
