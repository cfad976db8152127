// gem5 SimObject of one CXL Type-3 memory expander behind one root port of a
// CXLHostBridge: the core's CxlLink and Type3Device (controller and DRAM
// media) built from this object's link_*, device_* and media_* parameters.
// It holds no data (the bridge's AbstractMemory does) and makes no timing
// decision: the core's components run on this object's events, and their
// counters are registered here as this device's gem5 stats.
#ifndef __DEVICES_CXL_TYPE3_EXPANDER_HH__
#define __DEVICES_CXL_TYPE3_EXPANDER_HH__

#include <memory>

#include "base/statistics.hh"
#include "devices/cxl_event_host.hh"
#include "cxlcore/devices/type3.hpp"
#include "cxlcore/fabric/host_bridge.hpp"
#include "params/CXLType3Expander.hh"
#include "sim/sim_object.hh"

namespace gem5
{

class CXLHostBridge;

class CXLType3Expander : public SimObject
{
  private:
    CXLEventHost host;
    std::unique_ptr<cxlcore::CxlLink> link_;
    std::unique_ptr<cxlcore::Type3Device> device_;
    double idleLatencyNs_ = 0;
    Tick statsStart = 0;  // last stats reset, for time-averaged occupancies
    const CXLHostBridge *bridge_ = nullptr;

    void checkDrained();

    struct ExpanderStats : public statistics::Group
    {
        ExpanderStats(CXLType3Expander &e);
        void regStats() override;
        void resetStats() override;
        CXLType3Expander &exp;
        statistics::Scalar readReqs, writeReqs;
        statistics::Scalar readBytes, writeBytes;
        statistics::Formula readBandwidth, writeBandwidth;
        statistics::Scalar totalReadLatency;
        statistics::Formula avgReadLatency;
        statistics::Vector stageTicks;
        statistics::Formula avgStage;
        statistics::Vector devLoad;
        statistics::Value m2sFlits, s2mFlits, replayedFlits;
        statistics::Value m2sLinkUtil, s2mLinkUtil;
        statistics::Value deviceQueueOccupancy, mediaReadQueueOccupancy;
        statistics::Value mediaRetries;
        statistics::Value mediaRowHits, mediaRowMisses, mediaRowConflicts;
        statistics::Value mediaTurnarounds, mediaWriteBursts, mediaBusUtil;
    } stats;

  public:
    PARAMS(CXLType3Expander);
    CXLType3Expander(const Params &p);

    // Wiring by the host bridge that owns this root port (once).
    void attachTo(const CXLHostBridge *b);
    const CXLHostBridge *attachedTo() const { return bridge_; }
    cxlcore::CxlLink &link() { return *link_; }
    cxlcore::Type3Device &device() { return *device_; }

    // The unloaded time from the root port's send to the response's arrival
    // back at it (a media row hit): the link, device and media latencies, ns.
    double idleLatencyNs() const { return idleLatencyNs_; }

    // The bridge reports each request it routed here and its completion.
    void countRequest(bool write, unsigned bytes);
    void countResponse(const cxlcore::Txn &t);

    // No core event pending.
    bool idle() const { return host.idle(); }
    DrainState drain() override;
    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;
};

} // namespace gem5

#endif // __DEVICES_CXL_TYPE3_EXPANDER_HH__
