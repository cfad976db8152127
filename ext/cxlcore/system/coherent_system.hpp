// A coherent (CXL.cache) system wired from its parameters: the host's home
// agent and DRAM, one link and one accelerator per device, the message pool
// and the optional checker; its watchdog-guarded run and its report.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cxlcore/coherence/checker.hpp"
#include "cxlcore/coherence/home_agent.hpp"
#include "cxlcore/devices/accelerator.hpp"
#include "cxlcore/system/system.hpp"

namespace cxlcore {

struct CoherentParams {
    DramParams host_dram;
    LinkParams link;
    DCacheParams cache;
    HomeParams home;
    AccelParams accel;
    DmaParams dma;
    DramParams device_dram;
    uint64_t seed = 1;
    void validate() const;
};

// Everything a coherent run needs, wired together.
class CoherentSystem {
  public:
    CoherentSystem(const CoherentParams& p, bool check);
    EventLoop loop;
    CoherentProgress watch;
    MsgPool pool;
    std::unique_ptr<CoherenceChecker> checker;
    std::unique_ptr<HomeAgent> home;
    std::vector<std::unique_ptr<CxlLink>> links;
    std::vector<std::unique_ptr<Accelerator>> devices;
    const CoherentParams& params() const { return p_; }
    // Counters and bounds every coherent run reports.
    void report(Report& r, Tick end) const;
    bool quiet() const;
    // Runs until no work is left. A watchdog raises StallError, naming where
    // the oldest request waits, when requests are outstanding and none has
    // completed for a while (or no event is left to complete them).
    void run();
    Tick stallWindow() const;

  private:
    CoherentParams p_;
};

}  // namespace cxlcore
