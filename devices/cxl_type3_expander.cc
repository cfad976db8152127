#include "devices/cxl_type3_expander.hh"

#include <algorithm>
#include <string>

#include "base/logging.hh"
#include "sim/stats.hh"

namespace gem5
{

namespace
{

// One parameter group of the core from the SimObject's prefixed parameters.
#define CXL_COPY_LINK(type, name, def, lo, hi) l.name = static_cast<type>(p.link_##name);
#define CXL_COPY_DEVICE(type, name, def, lo, hi) d.name = static_cast<type>(p.device_##name);
#define CXL_COPY_MEDIA(type, name, def, lo, hi) m.name = static_cast<type>(p.media_##name);

} // anonymous namespace

CXLType3Expander::CXLType3Expander(const Params &p)
    : CXLPortTarget(p), host(*this, name(), [this] { checkDrained(); }),
      stats(*this)
{
    cxlcore::LinkParams l;
    cxlcore::DeviceParams d;
    cxlcore::DramParams m;
    CXL_LINK_FIELDS(CXL_COPY_LINK)
    CXL_DEVICE_FIELDS(CXL_COPY_DEVICE)
    CXL_DRAM_FIELDS(CXL_COPY_MEDIA)
    try {
        link_ = std::make_unique<cxlcore::CxlLink>(l, name() + ".link",
                                                   p.seed);
        device_ = std::make_unique<cxlcore::Type3Device>(host, d, m, *link_,
                                                         name());
    } catch (const cxlcore::ConfigError &e) {
        // Configuration time (m5.instantiate), before any tick is simulated.
        fatal("%s: bad CXLType3Expander parameter (group.field is the "
              "parameter group_field): %s", name(), e.what());
    }
    idleLatencyNs_ = device_->idleLatencyNs();
    // Tests of the progress watchdog: a device that stops answering.
    device_->stopAfter(p.fault_device_stops_after);
}

CXLPortTarget::Attachment
CXLType3Expander::attach(const SimObject &above)
{
    if (above_)
        fatal("%s: bad parameter of %s: expander %s is already below %s; "
              "give each port an expander of its own", above.name(),
              above.name(), name(), above_->name());
    above_ = &above;
    return {link_.get(), device_.get()};
}

void
CXLType3Expander::countRequest(bool write, unsigned bytes)
{
    if (write) {
        ++stats.writeReqs;
        stats.writeBytes += bytes;
    } else {
        ++stats.readReqs;
        stats.readBytes += bytes;
    }
}

void
CXLType3Expander::countResponse(const cxlcore::Txn &t)
{
    ++stats.devLoad[t.devLoad & 3];
    if (!t.isRead())
        return;
    const Tick done = std::max<Tick>(t.mark, curTick());
    stats.totalReadLatency += done - t.birth;
    for (int s = 0; s < cxlcore::kNumStages; ++s)
        stats.stageTicks[s] += t.stage[s];
}

void
CXLType3Expander::checkDrained()
{
    if (drainState() == DrainState::Draining && idle())
        signalDrainDone();
}

DrainState
CXLType3Expander::drain()
{
    // Posted writes are acknowledged before the media has written them, so
    // the device has to go quiet, not only the bridge's packets.
    return idle() ? DrainState::Drained : DrainState::Draining;
}

void
CXLType3Expander::serialize(CheckpointOut &cp) const
{
    // The timing state that survives a drain: open rows, refresh phase,
    // flit packing, credits in flight, error draws. The components are owned
    // through pointers: walking them changes nothing when saving.
    panic_if(!idle(), "%s: checkpoint of an expander that is not drained",
             name());
    CXLStateOut out(cp);
    link_->checkpoint(out, "link");
    device_->checkpoint(out, "device");
}

void
CXLType3Expander::unserialize(CheckpointIn &cp)
{
    CXLStateIn in(cp);
    link_->checkpoint(in, "link");
    device_->checkpoint(in, "device");
}

CXLType3Expander::ExpanderStats::ExpanderStats(CXLType3Expander &e)
    : statistics::Group(&e), exp(e),
      ADD_STAT(readReqs, statistics::units::Count::get(),
               "Read requests routed to this root port"),
      ADD_STAT(writeReqs, statistics::units::Count::get(),
               "Write requests routed to this root port"),
      ADD_STAT(readBytes, statistics::units::Byte::get(), "Bytes read"),
      ADD_STAT(writeBytes, statistics::units::Byte::get(), "Bytes written"),
      ADD_STAT(readBandwidth, statistics::units::Rate<
               statistics::units::Byte, statistics::units::Second>::get(),
               "Read bandwidth (device to host)", readBytes / simSeconds),
      ADD_STAT(writeBandwidth, statistics::units::Rate<
               statistics::units::Byte, statistics::units::Second>::get(),
               "Write bandwidth (host to device)", writeBytes / simSeconds),
      ADD_STAT(totalReadLatency, statistics::units::Tick::get(),
               "Sum of read latencies (from the host bridge on)"),
      ADD_STAT(avgReadLatency, statistics::units::Rate<
               statistics::units::Tick, statistics::units::Count>::get(),
               "Mean read latency", totalReadLatency / readReqs),
      ADD_STAT(stageTicks, statistics::units::Tick::get(),
               "Read latency per stage, summed"),
      ADD_STAT(avgStage, statistics::units::Rate<
               statistics::units::Tick, statistics::units::Count>::get(),
               "Mean read latency per stage"),
      ADD_STAT(devLoad, statistics::units::Count::get(),
               "Responses by CXL DevLoad value")
{
    // Vectors get their size before a formula uses them.
    stageTicks.init(cxlcore::kNumStages);
    for (int s = 0; s < cxlcore::kNumStages; ++s)
        stageTicks.subname(s, cxlcore::stageName(cxlcore::Stage(s)));
    avgStage = stageTicks / readReqs;
    static const char *loads[4] = {"light", "optimal", "moderate",
                                   "severe"};
    devLoad.init(4);
    for (int i = 0; i < 4; ++i)
        devLoad.subname(i, loads[i]);
}

void
CXLType3Expander::ExpanderStats::resetStats()
{
    statistics::Group::resetStats();
    // The core keeps its own counters; they restart with gem5's.
    exp.link_->m2s_.resetStats();
    exp.link_->s2m_.resetStats();
    exp.device_->resetStats(curTick());
    core.reset();
}

void
CXLType3Expander::ExpanderStats::regStats()
{
    statistics::Group::regStats();
    // The core's counters, read when stats are dumped, named by the same
    // functions as the standalone engine's (cxlcore/system/report.hpp).
    const cxlcore::CxlLink &l = *exp.link_;
    const cxlcore::Type3Device &d = *exp.device_;
    core.reg(this, "", [&d](cxlcore::Report &r, const std::string &path,
                            cxlcore::Tick s, cxlcore::Tick e) {
        cxlcore::reportType3(r, path, d, s, e);
    });
    core.reg(this, "link", [&l](cxlcore::Report &r, const std::string &path,
                                cxlcore::Tick s, cxlcore::Tick e) {
        cxlcore::reportLink(r, path, l, s, e);
    });
}

} // namespace gem5
