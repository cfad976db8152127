// The one command table, as gem5's MemCmd::commandInfo: every opcode of every
// channel (CXL 2.0 Sec. 3.2-3.3, CXL 3.x back-invalidate, PCIe TLPs for
// CXL.io) with its channel, whether it is a request or a response, which way
// memory data goes, the messages that may answer it, and its size on the
// link. A message's channel, size and direction are its opcode's: components
// ask this table instead of keeping fields or switches of their own.
#pragma once

#include <cstdint>

#include "cxlcore/link/message_sizes.hpp"

namespace cxlcore {

// A request of the host's memory path is MemRd or MemWr; the Type-3 device
// answers with MemData or Cmp on the same transaction.
enum class Opc : uint8_t {
    // D2H Req
    RdCurr, RdOwn, RdShared, RdAny, ItoMWr, WrInv, CleanEvict, DirtyEvict, BiasFlipReq,
    // D2H Rsp
    RspIHitI, RspVHitV, RspIHitSE, RspSHitSE, RspSFwdM, RspIFwdM, RspVFwdV,
    // H2D Req (snoops)
    SnpData, SnpInv, SnpCur,
    // H2D Rsp
    GO, GO_WritePull, BiasFlipDone,
    // home-internal: a snoop-filter eviction
    SFEvict,
    // D2H and H2D data (their headers differ, so they are two messages)
    D2HData, H2DData,
    // CXL.mem (M2S Req/RwD, S2M DRS/NDR) and CXL 3.x back-invalidate
    MemRd, MemRdFwd, MemWr, MemData, Cmp, BISnpData, BISnpInv, BIRspI, BIRspS,
    // CXL.io TLPs: a DMA read and write by the device, a completion with data,
    // and the host's MMIO write (a doorbell). IoMemWr and IoMmioWr are both
    // PCIe MemWr TLPs; the direction is in the opcode so that the channel is.
    IoMemRd, IoMemWr, IoCplD, IoMmioWr,
    kCount
};
constexpr uint32_t kNumOpcodes = uint32_t(Opc::kCount);
static_assert(kNumOpcodes <= 64, "responses are a 64-bit set of opcodes");

constexpr uint64_t opcBit(Opc o) { return uint64_t(1) << unsigned(o); }
template <typename... O>
constexpr uint64_t opcSet(O... o) {
    return (uint64_t(0) | ... | opcBit(o));
}

// Attributes of a command (bits of Command::attrs).
enum CmdAttr : uint8_t {
    kIsRequest = 1 << 0,
    kIsResponse = 1 << 1,
    kIsRead = 1 << 2,       // reads memory, or answers a read (gem5's IsRead)
    kIsWrite = 1 << 3,      // writes memory, or answers a write
    kHasPayload = 1 << 4,   // a CXL.io TLP with Txn::size bytes of payload
    kLeavesI = 1 << 5,      // a snoop response: the snooped cache kept no copy
    kLeavesS = 1 << 6,      // a snoop response: the snooped cache kept a shared copy
    kDataFollows = 1 << 7,  // a snoop response whose line follows as D2H Data
};

struct Command {
    Opc opc;            // its own index (checked below)
    const char* name;
    Channel chan;       // kNumChannels: home-internal, never on a link
    uint8_t attrs;      // CmdAttr bits
    uint64_t responses; // opcodes that may answer it (opcSet), 0 when none does
    uint8_t units;      // half-slots on the link; 0 for a TLP (sized by its payload)
    uint8_t dataBytes;  // a line of data in data slots (64) or none

    constexpr bool is(CmdAttr a) const { return (attrs & a) != 0; }
    constexpr bool isRequest() const { return is(kIsRequest); }
    constexpr bool isResponse() const { return is(kIsResponse); }
    constexpr bool isRead() const { return is(kIsRead); }
    constexpr bool isWrite() const { return is(kIsWrite); }
    constexpr bool hasData() const { return dataBytes != 0; }
    constexpr bool answeredBy(Opc o) const { return (responses & opcBit(o)) != 0; }
};

struct CommandTable {
    Command c[kNumOpcodes];
};

namespace detail {
constexpr Command cmd(Opc o, const char* name, Channel c, uint8_t attrs, uint64_t responses = 0) {
    const bool cachemem = c < kNumCacheMemChannels;
    return Command{o,
                   name,
                   c,
                   attrs,
                   responses,
                   uint8_t(cachemem ? messageUnits(c) : 0),
                   uint8_t(cachemem ? messageFormat(c).dataBytes : 0)};
}

// Responses are those this model sends (all of them the spec's): a D2H read
// of device-attached memory may be answered by the device's own MemRdFwd
// instead of GO and data (host bias); MemRdFwd and posted writes have no answer.
constexpr CommandTable makeCommands() {
    using O = Opc;
    constexpr uint8_t Req = kIsRequest, Rsp = kIsResponse, Rd = kIsRead, Wr = kIsWrite;
    return CommandTable{{
        // D2H Req
        cmd(O::RdCurr, "RdCurr", kD2HReq, Req | Rd, opcSet(O::H2DData)),
        cmd(O::RdOwn, "RdOwn", kD2HReq, Req | Rd, opcSet(O::GO, O::H2DData, O::MemRdFwd)),
        cmd(O::RdShared, "RdShared", kD2HReq, Req | Rd, opcSet(O::GO, O::H2DData, O::MemRdFwd)),
        cmd(O::RdAny, "RdAny", kD2HReq, Req | Rd, opcSet(O::GO, O::H2DData, O::MemRdFwd)),
        cmd(O::ItoMWr, "ItoMWr", kD2HReq, Req | Wr, opcSet(O::GO_WritePull)),
        cmd(O::WrInv, "WrInv", kD2HReq, Req | Wr, opcSet(O::GO_WritePull)),
        cmd(O::CleanEvict, "CleanEvict", kD2HReq, Req, opcSet(O::GO)),
        cmd(O::DirtyEvict, "DirtyEvict", kD2HReq, Req | Wr, opcSet(O::GO_WritePull)),
        cmd(O::BiasFlipReq, "BiasFlipReq", kD2HReq, Req, opcSet(O::BiasFlipDone)),
        // D2H Rsp
        cmd(O::RspIHitI, "RspIHitI", kD2HRsp, Rsp | kLeavesI),
        cmd(O::RspVHitV, "RspVHitV", kD2HRsp, Rsp),
        cmd(O::RspIHitSE, "RspIHitSE", kD2HRsp, Rsp | kLeavesI),
        cmd(O::RspSHitSE, "RspSHitSE", kD2HRsp, Rsp | kLeavesS),
        cmd(O::RspSFwdM, "RspSFwdM", kD2HRsp, Rsp | kLeavesS | kDataFollows),
        cmd(O::RspIFwdM, "RspIFwdM", kD2HRsp, Rsp | kLeavesI | kDataFollows),
        cmd(O::RspVFwdV, "RspVFwdV", kD2HRsp, Rsp | kDataFollows),
        // H2D Req
        cmd(O::SnpData, "SnpData", kH2DReq, Req, opcSet(O::RspIHitI, O::RspIHitSE, O::RspSHitSE, O::RspSFwdM, O::RspIFwdM)),
        cmd(O::SnpInv, "SnpInv", kH2DReq, Req, opcSet(O::RspIHitI, O::RspIHitSE, O::RspIFwdM)),
        cmd(O::SnpCur, "SnpCur", kH2DReq, Req, opcSet(O::RspIHitI, O::RspVHitV, O::RspVFwdV)),
        // H2D Rsp
        cmd(O::GO, "GO", kH2DRsp, Rsp),
        cmd(O::GO_WritePull, "GO_WritePull", kH2DRsp, Rsp, opcSet(O::D2HData)),
        cmd(O::BiasFlipDone, "BiasFlipDone", kH2DRsp, Rsp),
        cmd(O::SFEvict, "SFEvict", kNumChannels, Req),
        // data
        cmd(O::D2HData, "D2HData", kD2HData, Rsp),
        cmd(O::H2DData, "H2DData", kH2DData, Rsp),
        // CXL.mem and back-invalidate
        cmd(O::MemRd, "MemRd", kM2SReq, Req | Rd, opcSet(O::MemData)),
        cmd(O::MemRdFwd, "MemRdFwd", kM2SReq, Req | Rd),
        cmd(O::MemWr, "MemWr", kM2SRwD, Req | Wr, opcSet(O::Cmp)),
        cmd(O::MemData, "MemData", kS2MDrs, Rsp | Rd),
        cmd(O::Cmp, "Cmp", kS2MNdr, Rsp | Wr),
        cmd(O::BISnpData, "BISnpData", kS2MBISnp, Req, opcSet(O::BIRspI, O::BIRspS)),
        cmd(O::BISnpInv, "BISnpInv", kS2MBISnp, Req, opcSet(O::BIRspI)),
        cmd(O::BIRspI, "BIRspI", kM2SBIRsp, Rsp),
        cmd(O::BIRspS, "BIRspS", kM2SBIRsp, Rsp),
        // CXL.io
        cmd(O::IoMemRd, "IoMemRd", kIoUp, Req | Rd, opcSet(O::IoCplD)),
        cmd(O::IoMemWr, "IoMemWr", kIoUp, Req | Wr | kHasPayload),
        cmd(O::IoCplD, "IoCplD", kIoDown, Rsp | Rd | kHasPayload),
        cmd(O::IoMmioWr, "IoMmioWr", kIoDown, Req | Wr | kHasPayload),
    }};
}
}  // namespace detail

// Indexed by Opc.
inline constexpr CommandTable kCommands = detail::makeCommands();

namespace detail {
constexpr bool tableInOrder() {
    for (uint32_t i = 0; i < kNumOpcodes; ++i)
        if (uint32_t(kCommands.c[i].opc) != i || !kCommands.c[i].name) return false;
    return true;
}
constexpr bool answersGoBack() {
    // A command is a request or a response, and its answers travel the other way.
    for (const Command& c : kCommands.c) {
        if (c.isRequest() == c.isResponse()) return false;
        for (uint32_t r = 0; r < kNumOpcodes; ++r)
            if ((c.responses >> r & 1) && isUpstream(kCommands.c[r].chan) == isUpstream(c.chan)) return false;
    }
    return true;
}
}  // namespace detail
static_assert(detail::tableInOrder(), "kCommands lists every opcode in enum order");
static_assert(detail::answersGoBack(), "kCommands: answers travel the other way");

constexpr const Command& command(Opc o) { return kCommands.c[unsigned(o)]; }
constexpr const char* opName(Opc o) { return command(o).name; }

// What every message's path asks, projected from the table at compile time
// into a few bytes per opcode and two bit sets: a lookup costs what the
// fields it replaces did.
struct CommandWire {
    Channel chan;
    uint8_t units;      // Command::units
    uint8_t dataBytes;  // Command::dataBytes
    Opc answer;         // its first answer (the only one of MemRd and MemWr)
};
struct CommandWires {
    CommandWire w[kNumOpcodes];
};
namespace detail {
constexpr CommandWires makeWires() {
    CommandWires t{};
    for (uint32_t i = 0; i < kNumOpcodes; ++i) {
        const Command& c = kCommands.c[i];
        uint32_t a = 0;
        while (a < kNumOpcodes && !(c.responses >> a & 1)) ++a;
        t.w[i] = CommandWire{c.chan, c.units, c.dataBytes, Opc(a)};  // Opc::kCount: none
    }
    return t;
}
constexpr uint64_t opcodesWith(CmdAttr a) {
    uint64_t m = 0;
    for (const Command& c : kCommands.c)
        if (c.is(a)) m |= opcBit(c.opc);
    return m;
}
}  // namespace detail
inline constexpr CommandWires kCommandWires = detail::makeWires();
inline constexpr uint64_t kReadOpcodes = detail::opcodesWith(kIsRead);
inline constexpr uint64_t kWriteOpcodes = detail::opcodesWith(kIsWrite);

constexpr const CommandWire& wireOf(Opc o) { return kCommandWires.w[unsigned(o)]; }
constexpr Channel channelOf(Opc o) { return wireOf(o).chan; }
constexpr bool isReadOpc(Opc o) { return (kReadOpcodes >> unsigned(o) & 1) != 0; }
constexpr bool isWriteOpc(Opc o) { return (kWriteOpcodes >> unsigned(o) & 1) != 0; }
// The answer of a request that has one answer (MemRd's MemData, MemWr's Cmp).
constexpr Opc responseOf(Opc o) { return wireOf(o).answer; }
static_assert(responseOf(Opc::MemRd) == Opc::MemData && responseOf(Opc::MemWr) == Opc::Cmp, "CXL.mem answers");

// The three snoops, in the order their statistics are kept.
constexpr uint32_t kNumSnoops = 3;
constexpr uint32_t snoopIndex(Opc o) { return uint32_t(o) - uint32_t(Opc::SnpData); }
constexpr Opc snoopOpc(uint32_t i) { return Opc(uint32_t(Opc::SnpData) + i); }
static_assert(channelOf(snoopOpc(0)) == kH2DReq && channelOf(snoopOpc(kNumSnoops - 1)) == kH2DReq &&
                  channelOf(snoopOpc(kNumSnoops)) != kH2DReq,
              "the snoops are consecutive opcodes");

}  // namespace cxlcore
