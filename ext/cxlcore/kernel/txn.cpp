#include "cxlcore/kernel/txn.hpp"

namespace cxlcore {

const char* stateName(MState s) {
    static const char* n[] = {"I", "S", "E", "M"};
    return n[int(s)];
}

const char* stageName(Stage s) {
    static const char* n[] = {"queue",     "cache",           "host_uncore", "host_port",
                              "link_down", "switch", "device",          "snoop",       "bias_flip",
                              "back_invalidate", "media_queue", "media_service", "link_up"};
    static_assert(sizeof(n) / sizeof(n[0]) == kNumStages, "stage names");
    return n[s];
}

}  // namespace cxlcore
