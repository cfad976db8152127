// A coherent (CXL.cache) system wired from its parameters: the host's home
// agent and DRAM, and any mix of accelerators (Type-1, Type-2 in host or
// device bias, HDM-DB), each on its own root port and link with its own
// cache, MSHRs and device memory; the message pool and the optional checker;
// its watchdog-guarded run and its report.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cxlcore/coherence/checker.hpp"
#include "cxlcore/coherence/home_agent.hpp"
#include "cxlcore/devices/accelerator.hpp"
#include "cxlcore/system/system.hpp"

namespace cxlcore {

// One device description: its type and mode (accel), its cache, DMA engine,
// link and (Type-2) memory media. accel.devices identical copies of it are
// built, one after another.
struct CoherentDeviceParams {
    std::string name;  // prefix of its parameters' names ("": none, a single-device system)
    LinkParams link;
    DCacheParams cache;
    AccelParams accel;
    DmaParams dma;
    DramParams media;
    std::string prefix() const { return name.empty() ? "" : name + "."; }
    // The name of its copy k in messages and reports.
    std::string instance(uint32_t k, uint32_t index) const;
};

struct CoherentParams {
    DramParams host_dram;
    HomeParams home;
    std::vector<CoherentDeviceParams> devices;
    uint64_t seed = 1;
    // Where each Type-2 device description's memory lies, [base, base +
    // memory_bytes x accel.devices): at accel.memory_base, or (0) after the
    // previous description's, from kDevMemBase. 0 for Type-1.
    std::vector<uint64_t> memoryBases() const;
    uint32_t instances() const;
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
    std::vector<std::unique_ptr<Accelerator>> devices;  // every copy of every description, in order
    std::vector<uint32_t> entryOf;                      // the description each device was built from
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
    void reportDevices(Report& r, Tick end) const;
    CoherentParams p_;
};

}  // namespace cxlcore
