#include "cxlcore/coherence/messages.hpp"

namespace cxlcore {

const char* stateName(MState s) {
    static const char* n[] = {"I", "S", "E", "M"};
    return n[int(s)];
}

const char* opName(Opc o) {
    static const char* n[] = {"RdCurr", "RdOwn", "RdShared", "RdAny", "ItoMWr", "WrInv", "CleanEvict", "DirtyEvict",
                              "BiasFlipReq", "RspIHitI", "RspVHitV", "RspIHitSE", "RspSHitSE", "RspSFwdM",
                              "RspIFwdM", "RspVFwdV", "SnpData", "SnpInv", "SnpCur", "GO", "GO_WritePull",
                              "BiasFlipDone", "SFEvict", "Data", "MemRd", "MemRdFwd", "MemWr", "MemData", "Cmp", "BISnpData",
                              "BISnpInv", "BIRspI", "BIRspS", "IoMemRd", "IoMemWr", "IoCplD"};
    static_assert(sizeof(n) / sizeof(n[0]) == size_t(Opc::kCount), "opcode names");
    return n[int(o)];
}

const char* className(CClass c) {
    static const char* n[] = {"d2h_req", "d2h_rsp", "d2h_data", "h2d_req", "h2d_rsp", "h2d_data",
                              "m2s_req", "m2s_rwd", "m2s_birsp", "s2m", "s2m_bisnp", "io_up", "io_down"};
    return n[c];
}

}  // namespace cxlcore
