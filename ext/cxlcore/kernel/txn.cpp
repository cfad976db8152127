#include "cxlcore/kernel/txn.hpp"

namespace cxlcore {

const char* stateName(MState s) {
    static const char* n[] = {"I", "S", "E", "M"};
    return n[int(s)];
}

const char* opName(Opc o) {
    static const char* n[] = {"RdCurr", "RdOwn", "RdShared", "RdAny", "ItoMWr", "WrInv", "CleanEvict", "DirtyEvict",
                              "BiasFlipReq", "RspIHitI", "RspVHitV", "RspIHitSE", "RspSHitSE", "RspSFwdM",
                              "RspIFwdM", "RspVFwdV", "SnpData", "SnpInv", "SnpCur", "GO", "GO_WritePull",
                              "BiasFlipDone", "SFEvict", "Data", "MemRd", "MemRdFwd", "MemWr", "MemData", "Cmp",
                              "BISnpData", "BISnpInv", "BIRspI", "BIRspS", "IoMemRd", "IoMemWr", "IoCplD"};
    static_assert(sizeof(n) / sizeof(n[0]) == size_t(Opc::kCount), "opcode names");
    return n[int(o)];
}

const char* channelName(Channel c) {
    static const char* n[] = {"m2s_req", "m2s_rwd", "m2s_birsp", "s2m_ndr", "s2m_drs", "s2m_bisnp", "d2h_req",
                              "d2h_rsp", "d2h_data", "h2d_req", "h2d_rsp", "h2d_data", "io_up", "io_down"};
    static_assert(sizeof(n) / sizeof(n[0]) == kNumChannels, "channel names");
    return n[c];
}

const char* stageName(Stage s) {
    static const char* n[] = {"queue",     "cache",           "host_uncore", "host_port",
                              "link_down", "device",          "snoop",       "bias_flip",
                              "back_invalidate", "media_queue", "media_service", "link_up"};
    static_assert(sizeof(n) / sizeof(n[0]) == kNumStages, "stage names");
    return n[s];
}

}  // namespace cxlcore
