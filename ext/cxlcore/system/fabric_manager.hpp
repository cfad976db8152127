// The fabric manager's dynamic-capacity commands during a run (CXL 3.0 DCD).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "cxlcore/devices/type3.hpp"
#include "cxlcore/kernel/component.hpp"

namespace cxlcore {

// One extent added to or released from a host's LD, taking effect at `at`:
// when the host has accepted it (an add) or let it go (a release). The steps
// before (the fabric manager's command, the device's event to the host) only
// delay it, and the front end adds their latencies into `at`.
struct DcCommand {
    Tick at = 0;
    bool add = true;
    Type3Device* device = nullptr;
    uint8_t host = 0;
    uint64_t start = 0, bytes = 0;
};

// Applies the commands at their times; an idle schedule costs nothing.
class DcSchedule final : public Component {
  public:
    DcSchedule(Host& host, std::vector<DcCommand> cmds) : Component(host), cmds_(std::move(cmds)) {
        std::stable_sort(cmds_.begin(), cmds_.end(), [](const DcCommand& a, const DcCommand& b) { return a.at < b.at; });
        // What holds from the start is there before the first request.
        while (next_ < cmds_.size() && cmds_[next_].at == 0) apply(cmds_[next_++]);
        if (next_ < cmds_.size()) requestWake(cmds_[next_].at);
    }

  protected:
    void process() override {
        while (next_ < cmds_.size() && cmds_[next_].at <= now()) apply(cmds_[next_++]);
        if (next_ < cmds_.size()) requestWake(cmds_[next_].at);
    }

  private:
    static void apply(const DcCommand& c) {
        if (c.add)
            c.device->addExtent(c.host, c.start, c.bytes);
        else
            c.device->releaseExtent(c.host, c.start, c.bytes);
    }
    std::vector<DcCommand> cmds_;
    size_t next_ = 0;
};

}  // namespace cxlcore
