// CXL.cache protocol messages: line states, opcodes of every channel the
// coherent system uses (D2H, H2D, CXL.mem to Type-2 device memory with
// back-invalidate, CXL.io TLPs), their credit classes, and the message itself.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

enum class MState : uint8_t { I, S, E, M };
const char* stateName(MState s);

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
    // data of either direction
    Data,
    // CXL.mem to and from Type-2 device memory, with CXL 3.x back-invalidate
    MemRd, MemRdFwd, MemWr, MemData, Cmp, BISnpData, BISnpInv, BIRspI, BIRspS,
    // CXL.io TLPs
    IoMemRd, IoMemWr, IoCplD,
    kCount
};
const char* opName(Opc o);

// Message classes: credits and flit slots are per class. CXL 3.x gives
// back-invalidate snoops (S2M BISnp) and their answers (M2S BIRsp) channels of
// their own: a BISnp holds its credit until the home answers, and the home may
// first need MemData (S2M DRS), so sharing one class can deadlock.
enum CClass : uint8_t {
    kCD2HReq, kCD2HRsp, kCD2HData, kCH2DReq, kCH2DRsp, kCH2DData,
    kCM2SReq, kCM2SRwD, kCM2SBIRsp, kCS2M, kCS2MBISnp, kCIoD2H, kCIoH2D, kNumCClasses
};
const char* className(CClass c);

constexpr uint64_t kDevMemBase = 1ull << 44;  // device memory above all host memory

struct Access;
struct HTxn;
struct DmaJob;

struct Msg {
    Opc op = Opc::Data;
    CClass cls = kCD2HReq;
    MState state = MState::I;  // GO and MemRdFwd: the state granted
    bool bogus = false;        // D2H data of a line snooped away during its eviction
    uint16_t dev = 0;
    uint32_t bytes = 0;        // CXL.io payload
    uint64_t line = 0;         // line address (bytes, 64 B aligned)
    uint64_t value = 0;        // the line's data, as a version number
    Access* acc = nullptr;     // the access whose latency this message carries
    HTxn* txn = nullptr;       // home transaction a snoop or write-pull belongs to
    DmaJob* job = nullptr;     // CXL.io: the DMA transfer a TLP belongs to
    uint64_t tag = 0;
};

using MsgPool = ObjectPool<Msg>;

// A broken protocol invariant: reported as an error, never undefined behaviour.
[[noreturn]] inline void protocolError(const std::string& what) {
    throw std::logic_error("CXL.cache protocol error: " + what);
}

// A line address as it appears in reports ("0x1c0").
inline std::string hexAddr(uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

constexpr uint64_t lineOf(uint64_t a) { return a & ~uint64_t(kLineBytes - 1); }

}  // namespace cxlcore
