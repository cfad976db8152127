// The fabric manager's commands during a run: dynamic capacity (CXL 3.0 DCD)
// and binding multi-logical devices' LDs to hosts (CXL 2.0 FM API).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "cxlcore/devices/type3.hpp"
#include "cxlcore/kernel/component.hpp"

namespace cxlcore {

// One extent added to or released from a host's LD, or an LD bound to or
// unbound from a host, taking effect at `at`: when the host has accepted it
// (an add, a bind) or let it go (a release, an unbind). The steps before
// (the fabric manager's command, the event to the host) only delay it, and
// the front end adds their latencies into `at`.
struct DcCommand {
    enum Op : uint8_t { Add, Release, Bind, Unbind };
    Tick at = 0;
    Op op = Add;
    Type3Device* device = nullptr;
    uint8_t host = 0;
    uint64_t start = 0, bytes = 0;
    uint32_t ld = 0;  // Bind
    Tick notice = 0;  // when the host learns of it (the device's event), at or before `at`
    static void apply(const DcCommand& c) {
        switch (c.op) {
            case Add: c.device->addExtent(c.host, c.start, c.bytes); break;
            case Release: c.device->releaseExtent(c.host, c.start, c.bytes); break;
            case Bind: c.device->bindLd(c.host, c.ld); break;
            case Unbind: c.device->unbindLd(c.host); break;
        }
    }
};

// Applies the commands at their times; an idle schedule costs nothing.
class DcSchedule final : public Component {
  public:
    DcSchedule(Host& host, std::vector<DcCommand> cmds) : Component(host), cmds_(std::move(cmds)) {
        std::stable_sort(cmds_.begin(), cmds_.end(), [](const DcCommand& a, const DcCommand& b) { return a.at < b.at; });
        // What holds from the start is there before the first request.
        while (next_ < cmds_.size() && cmds_[next_].at == 0) DcCommand::apply(cmds_[next_++]);
        if (next_ < cmds_.size()) requestWake(cmds_[next_].at);
    }

    // When the next command takes effect (kNever: none is left).
    Tick next() const { return next_ < cmds_.size() ? cmds_[next_].at : kNever; }
    // Whether host `host` has been told, by `now`, that [dpa, dpa + 64) of its
    // LD on `d` goes, and has not yet let it go: a host stops using what it is
    // releasing before it accepts the release.
    bool releasing(const Type3Device* d, uint8_t host, uint64_t dpa, Tick now) const {
        for (size_t i = next_; i < cmds_.size(); ++i) {
            const DcCommand& c = cmds_[i];
            if (c.op == DcCommand::Release && c.device == d && c.host == host && c.notice <= now &&
                dpa >= c.start && dpa < c.start + c.bytes)
                return true;
        }
        return false;
    }

  protected:
    void process() override {
        while (next_ < cmds_.size() && cmds_[next_].at <= now()) DcCommand::apply(cmds_[next_++]);
        if (next_ < cmds_.size()) requestWake(cmds_[next_].at);
    }

  private:
    std::vector<DcCommand> cmds_;
    size_t next_ = 0;
};

}  // namespace cxlcore
