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
               "Responses by CXL DevLoad value"),
      ADD_STAT(m2sFlits, statistics::units::Count::get(),
               "Flits host to device"),
      ADD_STAT(s2mFlits, statistics::units::Count::get(),
               "Flits device to host"),
      ADD_STAT(replayedFlits, statistics::units::Count::get(),
               "Flits resent after CRC errors (both directions)"),
      ADD_STAT(m2sLinkUtil, statistics::units::Ratio::get(),
               "Busy fraction of the host-to-device link direction"),
      ADD_STAT(s2mLinkUtil, statistics::units::Ratio::get(),
               "Busy fraction of the device-to-host link direction"),
      ADD_STAT(deviceQueueOccupancy, statistics::units::Count::get(),
               "Time-averaged requests held by the device controller"),
      ADD_STAT(mediaReadQueueOccupancy, statistics::units::Count::get(),
               "Time-averaged reads queued in the DRAM controller"),
      ADD_STAT(mediaRetries, statistics::units::Count::get(),
               "Requests the DRAM controller refused (queue full)"),
      ADD_STAT(mediaRowHits, statistics::units::Count::get(),
               "Media accesses to an open row"),
      ADD_STAT(mediaRowMisses, statistics::units::Count::get(),
               "Media accesses to a closed bank (activate only)"),
      ADD_STAT(mediaRowConflicts, statistics::units::Count::get(),
               "Media accesses that closed another row first"),
      ADD_STAT(mediaTurnarounds, statistics::units::Count::get(),
               "Media data-bus read/write turnarounds"),
      ADD_STAT(mediaWriteBursts, statistics::units::Count::get(),
               "Media switches into write-drain mode"),
      ADD_STAT(mediaBusUtil, statistics::units::Ratio::get(),
               "Busy fraction of the media data buses")
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
    exp.statsStart = curTick();
    exp.link_->m2s_.resetStats();
    exp.link_->s2m_.resetStats();
    exp.device_->resetStats(curTick());
}

void
CXLType3Expander::ExpanderStats::regStats()
{
    statistics::Group::regStats();
    // The core's counters are read when stats are dumped.
    cxlcore::CxlLink &l = *exp.link_;
    cxlcore::Type3Device &d = *exp.device_;
    m2sFlits.functor([&l] { return double(l.m2s_.stats().flits); });
    s2mFlits.functor([&l] { return double(l.s2m_.stats().flits); });
    replayedFlits.functor([&l] {
        return double(l.m2s_.stats().replayedFlits +
                      l.s2m_.stats().replayedFlits);
    });
    mediaRetries.functor([&d] { return double(d.stats().mediaRetries); });
    // The same counters the standalone engine reports, so the two engines'
    // media behaviour can be compared directly.
    mediaRowHits.functor([&d] { return double(d.media().stats().rowHits); });
    mediaRowMisses.functor([&d] {
        return double(d.media().stats().rowMisses);
    });
    mediaRowConflicts.functor([&d] {
        return double(d.media().stats().rowConflicts);
    });
    mediaTurnarounds.functor([&d] {
        return double(d.media().stats().turnarounds);
    });
    mediaWriteBursts.functor([&d] {
        return double(d.media().stats().writeBursts);
    });
    // Time averages over the interval since the last reset.
    CXLType3Expander &e = exp;
    auto span = [&e] { return double(curTick() - e.statsStart); };
    m2sLinkUtil.functor([&l, span] {
        return span() ? double(l.m2s_.busy()) / span() : 0.0;
    });
    s2mLinkUtil.functor([&l, span] {
        return span() ? double(l.s2m_.busy()) / span() : 0.0;
    });
    deviceQueueOccupancy.functor([&d, &e] {
        return curTick() > e.statsStart
            ? d.meanOccupancy(e.statsStart, curTick()) : 0.0;
    });
    mediaBusUtil.functor([&d, span] {
        const double peak = span() * d.media().params().channels;
        return peak ? double(d.media().stats().busBusy) / peak : 0.0;
    });
    mediaReadQueueOccupancy.functor([&d, &e] {
        return curTick() > e.statsStart
            ? d.media().meanReadQueue(e.statsStart, curTick()) : 0.0;
    });
}

} // namespace gem5
