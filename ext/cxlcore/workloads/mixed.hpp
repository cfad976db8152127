// Host and accelerator workloads at once in one system: the host's cores run
// STREAM over a target of the address map while every accelerator runs its
// load/store stream, so each side sees what it shares with the other (a
// window's DRAM, a root port's link and device, the home agent).
#pragma once

#include <vector>

#include "cxlcore/workloads/accelerator.hpp"
#include "cxlcore/workloads/memory.hpp"

namespace cxlcore {

struct MixedConfig {
    bool host = true;                  // false: the accelerators alone
    StreamConfig stream;               // the host's STREAM
    std::vector<DeviceStream> accel;   // one per accelerator description; empty: the host alone
    uint64_t accel_requests = 200000;  // without the host: accesses that make the measurement
};

// Figures over one window (10 % to 90 % of the host's STREAM, or of the
// accelerators' accesses without it): the host's STREAM bandwidth and read
// latency with its stages; each accelerator description's bandwidth, latency
// and stages; every component's counters.
Report runMixed(const SystemParams& sys, const MixedConfig& cfg, const Progress& progress);

}  // namespace cxlcore
