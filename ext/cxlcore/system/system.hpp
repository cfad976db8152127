// A whole system wired from one description (SystemParams, read from a
// graph): a host with its cores' path into the memory (the uncore), the
// windows of its host physical address map (local DRAM, the remote socket,
// CXL host bridges whose root ports lead, through links and any switches, to
// Type-3 expanders), and the CXL.cache accelerators beside them
// on root ports of their own, coherent through the host's home agent, whose
// memory traffic goes through the same address map.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cxlcore/coherence/checker.hpp"
#include "cxlcore/coherence/home_agent.hpp"
#include "cxlcore/devices/accelerator.hpp"
#include "cxlcore/devices/type3.hpp"
#include "cxlcore/fabric/host_bridge.hpp"
#include "cxlcore/fabric/switch.hpp"
#include "cxlcore/host/remote_socket.hpp"
#include "cxlcore/host/uncore.hpp"
#include "cxlcore/kernel/trace.hpp"

namespace cxlcore {

// Ordered name -> value pairs: every result the engine returns.
using Report = std::vector<std::pair<std::string, double>>;

// One window of the address map and the components that serve it. A
// local-dram window is served by the host's own DRAM (System::localDram).
struct MemoryWindow {
    WindowParams p;
    Target* target = nullptr;
    std::unique_ptr<InterSocket> remote;
    std::unique_ptr<HostBridge> bridge;
    // Every Type-3 device below the bridge, behind switches too, each with the link above it.
    std::vector<std::unique_ptr<CxlLink>> links;
    std::vector<std::unique_ptr<Type3Device>> devices;
    std::vector<std::string> deviceNames;  // as reports and stall messages name them
    // Every switch below the bridge, each with the link above it.
    std::vector<std::unique_ptr<CxlLink>> switchLinks;
    std::vector<std::unique_ptr<CxlSwitch>> switches;
};

class System {
  public:
    // `check`: run the coherence checker over every CXL.cache access.
    explicit System(const SystemParams& p, bool check = false);

    EventLoop loop;
    TxnPool pool;  // every access and message of the run
    // The request trace this run records into (TraceSink::Scope), if any.
    TraceSink* const trace = TraceSink::enterRun();
    const SystemParams& params() const { return p_; }
    Uncore& uncore() { return *uncore_; }
    // Theoretical limit the results must respect, bytes per second: the
    // media of the given windows (indices into `windows`; empty: every window).
    double mediaPeakBytesPerSec(const std::vector<uint32_t>& which = {}) const;
    // The window of a name, or -1.
    int windowIndex(const std::string& name) const;

    // Runs the event loop until no work is left, under watchdogs: a run that
    // stops making progress throws StallError naming where its oldest request is.
    void run();

    void resetStats();
    // Statistics over [start, end]: the memories, and the coherent part's counters.
    void report(Report& r, Tick start, Tick end) const;

    std::unique_ptr<DramController> localDram;
    std::vector<MemoryWindow> windows;  // the address map, in its order

    // CXL.cache (when the description has accelerators): the checker, the
    // home agent, and every copy of every accelerator description with its link.
    std::unique_ptr<CoherenceChecker> checker;
    std::unique_ptr<HomeAgent> home;
    std::vector<std::unique_ptr<CxlLink>> accelLinks;
    std::vector<std::unique_ptr<Accelerator>> accels;
    std::vector<uint32_t> accelEntry;  // the description each accelerator was built from
    CoherentProgress watch;            // CXL.cache accesses and DMA transfers outstanding
    // How long CXL.cache requests may wait before the run counts as stalled.
    Tick stallWindow() const;
    // Nothing left in flight anywhere in the coherent part.
    bool quiet() const;

  private:
    void buildCxl(MemoryWindow& w, uint32_t cxlWindows);
    void buildAccelerators(bool check);
    void runCoherent();
    void reportMemory(Report& r, Tick s, Tick e) const;
    void reportCoherent(Report& r, Tick end) const;
    void reportAccelerators(Report& r, Tick end) const;
    SystemParams p_;
    bool mapped_;  // built from an explicit map (else the one window of a single-memory system)
    std::string localName_;
    std::unique_ptr<Uncore> uncore_;
    Watchdog watchdog_{pool};
};

}  // namespace cxlcore
