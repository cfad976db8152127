// A NIC's network port: one direction of a wire of fixed bandwidth and
// latency, a FIFO server. Frames leave in the order they are sent, each after
// the one before has been serialised; the far end sees it a latency later.
#pragma once

#include <algorithm>
#include <cmath>

#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

class NetWire {
  public:
    NetWire(double gbps, double latencyNs) : psPerByte_(1000.0 / gbps), lat_(nsToTicks(latencyNs)) {}
    // Arrival at the far end of a frame of `bytes` handed over at `now`
    // (calls come in time order, as events do).
    Tick send(Tick now, uint64_t bytes) {
        const Tick start = std::max(now, free_);
        const Tick ser = Tick(std::llround(double(bytes) * psPerByte_));
        free_ = start + ser;
        busy_ += ser;
        ++frames_;
        return free_ + lat_;
    }
    uint64_t frames() const { return frames_; }
    Tick busy() const { return busy_; }

  private:
    double psPerByte_;
    Tick lat_;
    Tick free_ = 0, busy_ = 0;
    uint64_t frames_ = 0;
};

}  // namespace cxlcore
