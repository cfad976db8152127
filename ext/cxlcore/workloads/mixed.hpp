// Host, accelerator and NIC workloads at once in one system: the host's cores
// run STREAM over a target of the address map while every accelerator runs its
// load/store stream and the CXL-NIC runs RAO, so each side sees what it shares
// with the others (a window's DRAM, a root port's link and device, the home
// agent).
#pragma once

#include <vector>

#include "cxlcore/workloads/accelerator.hpp"
#include "cxlcore/workloads/memory.hpp"
#include "cxlcore/workloads/rao.hpp"

namespace cxlcore {

struct MixedConfig {
    bool host = true;                  // false: the accelerators alone
    StreamConfig stream;               // the host's STREAM
    std::vector<DeviceStream> accel;   // one per accelerator description; empty: the host alone
    uint64_t accel_requests = 200000;  // without the host: accesses that make the measurement
    // The NIC's RAO (its host threads and the mechanism), on the accelerator
    // description named nic_device ("" with one unnamed description). Beside
    // the host or the accelerators it runs until they close their window;
    // alone, rao.iters operations a thread, as runRao.
    bool rao = false;
    RaoConfig rao_cfg;
    NicParams nic;
    std::string nic_device;
};

// Figures over one window (10 % to 90 % of the host's STREAM, or of the
// accelerators' accesses without it, or the NIC's whole run alone): the host's
// STREAM bandwidth and read latency with its stages; each accelerator
// description's bandwidth, latency and stages; the NIC's operation rate,
// latency and stages (nic.<device>.*); every component's counters.
Report runMixed(const SystemParams& sys, const MixedConfig& cfg, const Progress& progress);

}  // namespace cxlcore
