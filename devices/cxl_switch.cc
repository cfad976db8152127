#include "devices/cxl_switch.hh"

#include <string>

#include "base/logging.hh"

namespace gem5
{

namespace
{

#define CXL_COPY_SWITCH(type, name, def, lo, hi) s.name = static_cast<type>(p.switch_##name);
#define CXL_COPY_LINK(type, name, def, lo, hi) upLink.name = static_cast<type>(p.link_##name);

} // anonymous namespace

CXLSwitch::CXLSwitch(const Params &p)
    : CXLPortTarget(p), host(*this, name(), [this] { checkDrained(); }),
      stats(*this)
{
    cxlcore::SwitchParams s;
    CXL_SWITCH_FIELDS(CXL_COPY_SWITCH)
    CXL_LINK_FIELDS(CXL_COPY_LINK)
    if (p.downstream.empty())
        fatal("%s: bad CXLSwitch parameter: downstream is empty; give each "
              "downstream port what it leads to (a CXLType3Expander or a "
              "CXLSwitch)", name());
    try {
        upLink.validate(name() + ".link");
        sw = std::make_unique<cxlcore::CxlSwitch>(host, s, name());
        // Configuration time (m5.instantiate): the targets were made first.
        for (CXLPortTarget *t : p.downstream) {
            const Attachment a = t->attach(*this);
            sw->addPort(a.link, a.below);
            below.push_back(t);
        }
    } catch (const cxlcore::ConfigError &e) {
        fatal("%s: bad CXLSwitch parameter (group.field is the parameter "
              "group_field): %s", name(), e.what());
    }
}

void
CXLSwitch::bindIo(CXLPciFunction *f, std::vector<CXLPciFunction *> devs)
{
    fatal_if(usp, "%s: bound to %s already", name(), usp->name());
    fatal_if(devs.size() != below.size(), "%s: %u Type-3 functions for %u "
             "downstream ports", name(), unsigned(devs.size()),
             unsigned(below.size()));
    usp = f;
    endpoints = std::move(devs);
    // With CXL.io the switch routes by what software committed and nothing
    // else: until a region is committed it routes nothing, as the bridge.
    routeBy({});
}

void
CXLSwitch::routeBy(const std::vector<cxlcore::CommittedRegion> &regions)
{
    CXLPciFunction *f = usp;
    fatal_if(!f, "%s: routed by committed decoders before bindIo", name());
    for (const cxlcore::CommittedRegion &g : regions) {
        std::string ports;
        for (uint32_t p : g.ports)
            ports += (ports.empty() ? "" : ",") + std::to_string(p);
        inform("%s: routes window offsets [%#x, %#x) ways %u granularity %u "
               "downstream ports %s", name(), g.base, g.base + g.size, g.ways,
               g.granularity, ports);
    }
    if (regions.empty())
        inform("%s: routes nothing (no decoder committed at %s reaches a "
               "device decoder)", name(), f->name());
    sw->routeBy(std::make_unique<cxlcore::CommittedRoutes>(
        name(), regions, f->function().component().poisonOnDecodeError()));
}

CXLPortTarget::Attachment
CXLSwitch::attach(const SimObject &port_above)
{
    const uint32_t u = sw->upstreamPorts();
    // The first upstream port keeps the names a one-host switch has.
    const std::string at = u ? name() + ".up" + std::to_string(u) : name();
    try {
        upLinks.push_back(std::make_unique<cxlcore::CxlLink>(
            upLink, at + ".link", params().seed + 17 * u));
        above.push_back(&port_above);
        return {upLinks.back().get(),
                &sw->addUpstream(*upLinks.back(), u ? at : name() + ".up")};
    } catch (const cxlcore::ConfigError &e) {
        fatal("%s: bad wiring below %s: %s", name(), port_above.name(),
              e.what());
    }
}

double
CXLSwitch::idleLatencyNs() const
{
    const cxlcore::CxlLink &l = *upLinks.front();
    return 2 * upLink.phy_latency_ns + 3 * l.m2s_.flitPs() / 1000.0 +
        2 * params().switch_latency_ns + below.front()->idleLatencyNs();
}

void
CXLSwitch::checkDrained()
{
    if (drainState() == DrainState::Draining && idle())
        signalDrainDone();
}

DrainState
CXLSwitch::drain()
{
    return idle() ? DrainState::Drained : DrainState::Draining;
}

void
CXLSwitch::serialize(CheckpointOut &cp) const
{
    panic_if(!idle(), "%s: checkpoint of a switch that is not drained",
             name());
    // A drained switch holds no message; its arbiters' turns are not saved,
    // so a restored run may serve ports in another order than an
    // uninterrupted one (the links' state is saved).
    warn_once("%s: the switch's arbitration turns are not checkpointed",
              name());
    CXLStateOut out(cp);
    for (size_t u = 0; u < upLinks.size(); ++u)
        upLinks[u]->checkpoint(out, "up" + std::to_string(u));
}

void
CXLSwitch::unserialize(CheckpointIn &cp)
{
    CXLStateIn in(cp);
    for (size_t u = 0; u < upLinks.size(); ++u)
        upLinks[u]->checkpoint(in, "up" + std::to_string(u));
}

CXLSwitch::SwitchStats::SwitchStats(CXLSwitch &s)
    : statistics::Group(&s), owner(s)
{
}

void
CXLSwitch::SwitchStats::regStats()
{
    statistics::Group::regStats();
    // Every port is attached by now (host bridges attach when built).
    const cxlcore::CxlSwitch &sw = *owner.sw;
    core.reg(this, "", [&sw](cxlcore::Report &r, const std::string &path,
                             cxlcore::Tick s, cxlcore::Tick e) {
        cxlcore::reportSwitch(r, path, sw, s, e);
    });
}

void
CXLSwitch::SwitchStats::resetStats()
{
    statistics::Group::resetStats();
    owner.sw->resetStats();
    core.reset();
}

} // namespace gem5
