// Accelerator load beside other work in one system: each accelerator's
// requesters keep their accesses in flight, without end, on a buffer in a
// window of the host's address map or in Type-2 device memory. Accesses that
// complete inside a measurement window someone else opens and closes (the
// host's workload) are counted, with their latency and stages.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cxlcore/kernel/stats.hpp"
#include "cxlcore/system/system.hpp"

namespace cxlcore {

struct DeviceStream;  // workloads/accelerator.hpp

class AccelLoad : public Client {
  public:
    // One stream per accelerator description (requesters 0: idle). A
    // stream's target: a window of the map (its buffer starts half way into
    // the window, away from the host's pages), "device" (the accelerator's
    // own memory) or a Type-2 description's name (its memory).
    AccelLoad(System& s, const std::vector<DeviceStream>& streams);
    void start();
    // With no other workload to measure by: open the window at 10 % of
    // `total` completed accesses, close it and stop the run at 90 %.
    void pace(uint64_t total) { pace_ = total; }
    // Counts completions from now on / stops counting.
    void open(Tick t);
    void close(Tick t);
    void done(Txn* x) override;
    // Per description, over the window: accesses, latency and stages.
    void report(Report& r) const;
    uint64_t completed() const { return completed_; }
    // Paced: told when the window opens (true) and closes.
    std::function<void(bool, Tick)> onWindow;
    Tick from() const { return from_; }
    Tick to() const { return to_; }

  private:
    struct Requester_ {
        uint32_t accel;  // index of the accelerator (a copy of a description)
        uint32_t stream;
        uint32_t inflight = 0;
        uint64_t seq = 0;
        Rng rng;
    };
    struct Plan {
        Txn::Kind kind = Txn::Load;
        bool random = true;
        uint32_t requesters = 0, depth = 1;
        uint64_t lines = 1;
        std::string target;
    };
    void issue(Requester_& q);
    uint64_t baseOf(uint32_t accel, const Plan& p) const;

    System& s_;
    std::vector<Plan> plans_;
    std::vector<Requester_> reqs_;
    std::vector<LatencyStats> lat_;    // per description
    std::vector<uint64_t> bytes_;      // per description, in the window
    Tick from_ = 0, to_ = 0;
    bool counting_ = false;
    uint64_t completed_ = 0, storeSeq_ = 0, pace_ = 0;
};

}  // namespace cxlcore
