// Glue shared by the CXL SimObjects. The SimCXL core's components ask their
// host for wake-ups; inside gem5 each component gets one EventFunctionWrapper
// on the SimObject that owns it. The core's timing state is walked into and
// out of gem5 checkpoints by the two visitors. Nothing here makes a timing
// decision.
#ifndef __DEVICES_CXL_EVENT_HOST_HH__
#define __DEVICES_CXL_EVENT_HOST_HH__

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cxlcore/kernel/sim.hpp"
#include "sim/eventq.hh"
#include "sim/serialize.hh"

namespace gem5
{

class CXLEventHost : public cxlcore::Host
{
  public:
    // `after` runs after every component wake-up (the owner's drain check).
    CXLEventHost(EventManager &em, std::string name,
                 std::function<void()> after)
        : em(em), name(std::move(name)), after(std::move(after)) {}

    cxlcore::Tick now() const override { return curTick(); }

    void
    attach(cxlcore::Component *c) override
    {
        c->slot = events.size();
        events.push_back(std::make_unique<EventFunctionWrapper>(
            [this, c] {
                c->fire(curTick());
                after();
            },
            name + ".core" + std::to_string(c->slot)));
    }

    void
    detach(cxlcore::Component *c) override
    {
        auto &e = *events[c->slot];
        if (e.scheduled())
            em.deschedule(e);
    }

    void
    wakeAt(cxlcore::Component *c, cxlcore::Tick t) override
    {
        auto &e = *events[c->slot];
        if (!e.scheduled())
            em.schedule(e, t);
        else if (e.when() != t)
            em.reschedule(e, t);
    }

    // No component has a wake-up pending.
    bool
    idle() const
    {
        for (auto &e : events)
            if (e->scheduled())
                return false;
        return true;
    }

  private:
    EventManager &em;
    std::string name;
    std::function<void()> after;
    std::vector<std::unique_ptr<EventFunctionWrapper>> events;
};

// Walks the core's post-drain timing state into a checkpoint section...
class CXLStateOut : public cxlcore::StateVisitor
{
  public:
    explicit CXLStateOut(CheckpointOut &c) : cp(c) {}
    bool loading() const override { return false; }
    void field(const std::string &n, uint64_t &v) override
    {
        paramOut(cp, n, v);
    }

  private:
    CheckpointOut &cp;
};

// ... and back out of it.
class CXLStateIn : public cxlcore::StateVisitor
{
  public:
    explicit CXLStateIn(CheckpointIn &c) : cp(c) {}
    bool loading() const override { return true; }
    void field(const std::string &n, uint64_t &v) override
    {
        paramIn(cp, n, v);
    }

  private:
    CheckpointIn &cp;
};

} // namespace gem5

#endif // __DEVICES_CXL_EVENT_HOST_HH__
