// What a root port of a CXLHostBridge, or a downstream port of a CXLSwitch,
// leads to: a Type-3 expander or a switch. Each hands the port above it the
// core's link below that port and what receives the link's requests, once.
#ifndef __DEVICES_CXL_PORT_TARGET_HH__
#define __DEVICES_CXL_PORT_TARGET_HH__

#include "cxlcore/kernel/txn.hpp"
#include "cxlcore/link/link.hpp"
#include "params/CXLPortTarget.hh"
#include "sim/sim_object.hh"

namespace gem5
{

class CXLPortTarget : public SimObject
{
  public:
    PARAMS(CXLPortTarget);
    CXLPortTarget(const Params &p) : SimObject(p) {}

    struct Attachment
    {
        cxlcore::CxlLink *link;
        cxlcore::MemEndpoint *below;
    };
    // Wiring by the port above (`above` names it in errors); a target that
    // takes one port only (an expander) refuses a second.
    virtual Attachment attach(const SimObject &above) = 0;

    // The unloaded time from the port's send to the response's arrival back
    // at it (a media row hit), ns: atomic mode's latency.
    virtual double idleLatencyNs() const = 0;

    // The host bridge reports each request it routed through this port and
    // its completion.
    virtual void countRequest(bool write, unsigned bytes) {}
    virtual void countResponse(const cxlcore::Txn &t) {}
};

} // namespace gem5

#endif // __DEVICES_CXL_PORT_TARGET_HH__
