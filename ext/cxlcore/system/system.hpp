// A whole host plus the memory under test, wired from SystemParams.
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

class System {
  public:
    explicit System(const SystemParams& p);

    EventLoop loop;
    TxnPool pool;
    const SystemParams& params() const { return p_; }
    Uncore& uncore() { return *uncore_; }
    // Theoretical limits the results must respect, bytes per second.
    double mediaPeakBytesPerSec() const;

    // Runs the event loop under the progress watchdog: a run that stops
    // making progress throws StallError naming where its oldest request is.
    void run();

    void resetStats();
    // Component statistics over [start, end].
    void report(Report& r, Tick start, Tick end) const;

    std::unique_ptr<DramController> localDram;
    std::unique_ptr<InterSocket> remote;
    std::unique_ptr<HostBridge> bridge;
    std::vector<std::unique_ptr<CxlLink>> links;
    std::vector<std::unique_ptr<Type3Device>> devices;

  private:
    SystemParams p_;
    std::unique_ptr<Uncore> uncore_;
    Watchdog watchdog_{pool};
};

}  // namespace cxlcore
