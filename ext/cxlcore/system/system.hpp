// A whole host and its host physical address map, wired from SystemParams.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cxlcore/fabric/host_bridge.hpp"
#include "cxlcore/host/remote_socket.hpp"
#include "cxlcore/host/uncore.hpp"

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
    std::vector<std::unique_ptr<CxlLink>> links;
    std::vector<std::unique_ptr<Type3Device>> devices;
    std::vector<std::string> deviceNames;  // as reports and stall messages name them
};

class System {
  public:
    explicit System(const SystemParams& p);

    EventLoop loop;
    TxnPool pool;
    const SystemParams& params() const { return p_; }
    Uncore& uncore() { return *uncore_; }
    // Theoretical limit the results must respect, bytes per second: the
    // media of the given windows (indices into `windows`; empty: every window).
    double mediaPeakBytesPerSec(const std::vector<uint32_t>& which = {}) const;
    // The window of a name, or -1.
    int windowIndex(const std::string& name) const;

    // Runs the event loop under the progress watchdog: a run that stops
    // making progress throws StallError naming where its oldest request is.
    void run();

    void resetStats();
    // Component statistics over [start, end].
    void report(Report& r, Tick start, Tick end) const;

    std::unique_ptr<DramController> localDram;
    std::vector<MemoryWindow> windows;  // the address map, in its order

  private:
    SystemParams p_;
    bool mapped_;  // built from an explicit map (else the one window of a single-memory system)
    std::string localName_;
    std::unique_ptr<Uncore> uncore_;
    Watchdog watchdog_{pool};
};

}  // namespace cxlcore
