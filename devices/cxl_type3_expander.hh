// gem5 SimObject of one CXL Type-3 memory expander behind one root port of a
// CXLHostBridge or one downstream port of a CXLSwitch: the core's CxlLink and
// Type3Device (controller and DRAM media) built from this object's link_*,
// device_* and media_* parameters.
// It holds no data (the bridge's AbstractMemory does) and makes no timing
// decision: the core's components run on this object's events, and their
// counters are registered here as this device's gem5 stats.
#ifndef __DEVICES_CXL_TYPE3_EXPANDER_HH__
#define __DEVICES_CXL_TYPE3_EXPANDER_HH__

#include <memory>

#include "base/statistics.hh"
#include "devices/cxl_core_stats.hh"
#include "devices/cxl_event_host.hh"
#include "devices/cxl_port_target.hh"
#include "cxlcore/devices/type3.hpp"
#include "params/CXLType3Expander.hh"

namespace gem5
{

class CXLType3Expander : public CXLPortTarget
{
  private:
    CXLEventHost host;
    std::unique_ptr<cxlcore::CxlLink> link_;
    std::unique_ptr<cxlcore::Type3Device> device_;
    double idleLatencyNs_ = 0;
    const SimObject *above_ = nullptr;  // the port it is wired below

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
        // The core's counters as the standalone engine names them: the
        // device's (media.read_gbps, mean_occupancy, ...) and, under
        // "link", its link's (link.m2s.flits, ...).
        CXLCoreStats core;
    } stats;

  public:
    PARAMS(CXLType3Expander);
    CXLType3Expander(const Params &p);

    Attachment attach(const SimObject &above) override;
    cxlcore::CxlLink &link() { return *link_; }
    cxlcore::Type3Device &device() { return *device_; }

    // The link, device and media latencies.
    double idleLatencyNs() const override { return idleLatencyNs_; }

    void countRequest(bool write, unsigned bytes) override;
    void countResponse(const cxlcore::Txn &t) override;

    // No core event pending.
    bool idle() const { return host.idle(); }
    DrainState drain() override;
    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;
};

} // namespace gem5

#endif // __DEVICES_CXL_TYPE3_EXPANDER_HH__
