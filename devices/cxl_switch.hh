// gem5 SimObject of a CXL switch: the core's CxlSwitch with what its
// downstream ports lead to (CXLType3Expanders or further switches) and one
// core link above each upstream port. Each root port (or switch port) that
// names it gains an upstream port: with one per host bridge, several gem5
// hosts share the switch and the devices below it, as in the standalone
// engine. The switch's routing, queues, credits and arbitration are the
// core's; this object runs its events and registers its counters as stats.
#ifndef __DEVICES_CXL_SWITCH_HH__
#define __DEVICES_CXL_SWITCH_HH__

#include <memory>
#include <vector>

#include "base/statistics.hh"
#include "devices/cxl_core_stats.hh"
#include "devices/cxl_event_host.hh"
#include "devices/cxl_pci_function.hh"
#include "devices/cxl_port_target.hh"
#include "cxlcore/fabric/hdm_decoder.hpp"
#include "cxlcore/fabric/switch.hpp"
#include "params/CXLSwitch.hh"

namespace gem5
{

class CXLSwitch : public CXLPortTarget
{
  private:
    CXLEventHost host;
    cxlcore::LinkParams upLink;  // each upstream port's link
    std::unique_ptr<cxlcore::CxlSwitch> sw;
    std::vector<std::unique_ptr<cxlcore::CxlLink>> upLinks;
    std::vector<CXLPortTarget *> below;
    std::vector<const SimObject *> above;  // by upstream port
    CXLPciFunction *usp = nullptr;
    std::vector<CXLPciFunction *> endpoints;

    void checkDrained();

    struct SwitchStats : public statistics::Group
    {
        SwitchStats(CXLSwitch &s);
        void regStats() override;
        void resetStats() override;
        CXLSwitch &owner;
        // The core's counters as the standalone engine names them
        // (requests, egress_full, dsp0.requests, ...).
        CXLCoreStats core;
    } stats;

  public:
    PARAMS(CXLSwitch);
    CXLSwitch(const Params &p);

    Attachment attach(const SimObject &port_above) override;
    // The upstream link, both switch traversals and the first downstream
    // port's target: the switch adds the same to every path through it.
    double idleLatencyNs() const override;

    size_t downstreamPorts() const { return below.size(); }
    // CXL.io (a full-system board whose Linux enumerates the switch), from
    // the host bridge above: the upstream port's function, whose committed
    // HDM decoders alone route the switch from now on, and the Type-3
    // function below each downstream port.
    void bindIo(CXLPciFunction *usp, std::vector<CXLPciFunction *> devs);
    CXLPciFunction *uspFunction() const { return usp; }
    const std::vector<CXLPciFunction *> &endpointFunctions() const
    {
        return endpoints;
    }
    // The bridge, when any decoder below it changes: the regions to route by.
    void routeBy(const std::vector<cxlcore::CommittedRegion> &regions);

    bool idle() const { return host.idle(); }
    DrainState drain() override;
    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;
};

} // namespace gem5

#endif // __DEVICES_CXL_SWITCH_HH__
