// A DRAM controller on its own, fed requests at given times: for tests that
// check its command timing against times derived by hand from the JEDEC
// parameters.
#pragma once

#include <vector>

#include "cxlcore/mem/dram.hpp"

namespace cxlcore {

struct DramRequest {
    Tick at;  // when the request reaches the controller (it waits if refused)
    bool write;
    uint64_t addr;
};

struct DramReplay {
    std::vector<Tick> done;  // per request: a read's response, a write's acknowledgement
    DramStats stats;
};

DramReplay replayDram(const DramParams& p, const std::vector<DramRequest>& reqs);

}  // namespace cxlcore
