#include "devices/cxl_mem_expander.hh"

#include <algorithm>
#include <iterator>
#include <string>

#include "base/logging.hh"
#include "base/trace.hh"
#include "debug/CXLMem.hh"
#include "sim/sim_exit.hh"
#include "sim/stats.hh"

namespace gem5
{

namespace
{

// One parameter group of the core from the SimObject's prefixed parameters.
#define CXL_COPY_BRIDGE(type, name, def, lo, hi) b.name = static_cast<type>(p.bridge_##name);
#define CXL_COPY_LINK(type, name, def, lo, hi) l.name = static_cast<type>(p.link_##name);
#define CXL_COPY_DEVICE(type, name, def, lo, hi) d.name = static_cast<type>(p.device_##name);
#define CXL_COPY_MEDIA(type, name, def, lo, hi) m.name = static_cast<type>(p.media_##name);

} // anonymous namespace

void
CXLMemExpander::Gem5Host::attach(cxlcore::Component *c)
{
    c->slot = events.size();
    events.push_back(std::make_unique<EventFunctionWrapper>(
        [this, c] {
            c->fire(curTick());
            owner.checkDrained();
        },
        owner.name() + ".core" + std::to_string(c->slot)));
}

void
CXLMemExpander::Gem5Host::detach(cxlcore::Component *c)
{
    auto &e = *events[c->slot];
    if (e.scheduled())
        owner.deschedule(e);
}

void
CXLMemExpander::Gem5Host::wakeAt(cxlcore::Component *c, cxlcore::Tick t)
{
    auto &e = *events[c->slot];
    if (!e.scheduled())
        owner.schedule(e, t);
    else if (e.when() != t)
        owner.reschedule(e, t);
}

CXLMemExpander::CXLMemExpander(const Params &p)
    : AbstractMemory(p), host(*this), port(name() + ".port", *this),
      upstream(*this), sendEvent([this] { sendResponses(); }, name()),
      stats(*this)
{
    cxlcore::BridgeParams b;
    cxlcore::LinkParams l;
    cxlcore::DeviceParams d;
    cxlcore::DramParams m;
    CXL_BRIDGE_FIELDS(CXL_COPY_BRIDGE)
    CXL_LINK_FIELDS(CXL_COPY_LINK)
    CXL_DEVICE_FIELDS(CXL_COPY_DEVICE)
    CXL_DRAM_FIELDS(CXL_COPY_MEDIA)
    try {
        bridge = std::make_unique<cxlcore::HostBridge>(host, b, name() + ".bridge");
        for (uint32_t i = 0; i < b.root_ports; ++i) {
            links.push_back(std::make_unique<cxlcore::CxlLink>(
                l, name() + ".link", p.seed + 17 * i));
            devices.push_back(std::make_unique<cxlcore::Type3Device>(
                host, d, m, *links.back(), name()));
            bridge->addPort(links.back().get(), devices.back().get());
        }
    } catch (const cxlcore::ConfigError &e) {
        // Configuration time (m5.instantiate), before any tick is simulated.
        fatal("%s: bad CXLMemExpander parameter (group.field is the "
              "parameter group_field): %s", name(), e.what());
    }
    bridge->setRequester(&upstream);

    // Atomic mode: the unloaded latency, stage by stage (a row hit).
    const double burst = 2000.0 / m.data_rate_mts * m.burst_length / 2;
    const double flit = links[0]->m2s_.flitTime() / 1000.0;
    idleLatency = cxlcore::nsToTicks(
        b.req_latency_ns + b.resp_latency_ns + 2 * l.phy_latency_ns +
        3 * flit + d.req_latency_ns + d.resp_latency_ns +
        m.frontend_latency_ns + m.tCL_ns + burst + m.backend_latency_ns);
}

Port &
CXLMemExpander::getPort(const std::string &if_name, PortID idx)
{
    if (if_name != "port")
        return AbstractMemory::getPort(if_name, idx);
    return port;
}

void
CXLMemExpander::init()
{
    AbstractMemory::init();
    if (port.isConnected())
        port.sendRangeChange();
}

bool
CXLMemExpander::handleTimingReq(PacketPtr pkt)
{
    panic_if(!(pkt->isRead() || pkt->isWrite()),
             "%s: only reads and writes reach memory, saw %s",
             name(), pkt->cmdString());
    if (retryReq)
        return false;
    cxlcore::Txn *t = pool.get();
    t->hostAddr = pkt->getAddr();
    t->addr = pkt->getAddr() - range.start();
    t->op = pkt->isWrite() ? cxlcore::Op::Write : cxlcore::Op::Read;
    // The packet reaches us after its header and payload delays.
    t->birth = t->mark = curTick() + pkt->headerDelay + pkt->payloadDelay;
    pkt->headerDelay = pkt->payloadDelay = 0;
    const uint64_t id = t->id;
    inflight[id] = pkt;
    if (!bridge->tryReq(t)) {
        inflight.erase(id);
        pool.put(t);
        retryReq = true;
        ++stats.retries;
        return false;
    }
    DPRINTF(CXLMem, "txn %llu %s %#llx\n", id, pkt->isWrite() ? "W" : "R",
            pkt->getAddr());
    if (pkt->isWrite()) {
        ++stats.writeReqs;
        stats.writeBytes += pkt->getSize();
    } else {
        ++stats.readReqs;
        stats.readBytes += pkt->getSize();
    }
    // The data lives here: the access happens now, the timing in the core.
    access(pkt);
    return true;
}

bool
CXLMemExpander::Upstream::tryResp(cxlcore::Txn *t)
{
    // Back-pressure from gem5 reaches the core: while the port waits for a
    // retry, responses stay in the host bridge, so the requests outstanding
    // stay bounded by its tracker.
    if (owner.retryResp) {
        owner.coreRespWaiting = true;
        return false;
    }
    owner.respond(t);
    return true;
}

void
CXLMemExpander::Upstream::retryReq()
{
    if (owner.retryReq) {
        owner.retryReq = false;
        owner.port.sendRetryReq();
    }
}

void
CXLMemExpander::respond(cxlcore::Txn *t)
{
    auto it = inflight.find(t->id);
    panic_if(it == inflight.end(), "%s: unknown transaction %llu", name(),
             t->id);
    PacketPtr pkt = it->second;
    inflight.erase(it);
    const Tick done = std::max<Tick>(t->mark, curTick());
    ++stats.devLoad[t->devLoad & 3];
    if (t->op == cxlcore::Op::Read) {
        const Tick lat = done - t->birth;
        stats.totalReadLatency += lat;
        stats.readLatency.sample(lat);
        for (int s = 0; s < cxlcore::kNumStages; ++s)
            stats.stageTicks[s] += t->stage[s];
    }
    DPRINTF(CXLMem, "txn %llu done at %llu\n", t->id, done);
    pool.put(t);
    if (!pkt->needsResponse() && !pkt->isResponse()) {
        delete pkt;
        checkDrained();
        return;
    }
    // Responses leave in time order; ports interleave, so insert from the back.
    auto pos = responses.end();
    while (pos != responses.begin() && std::prev(pos)->first > done)
        --pos;
    responses.emplace(pos, done, pkt);
    if (!retryResp) {
        const Tick first = responses.front().first;
        if (!sendEvent.scheduled())
            schedule(sendEvent, std::max(first, curTick()));
        else if (sendEvent.when() > first)
            reschedule(sendEvent, std::max(first, curTick()));
    }
}

void
CXLMemExpander::sendResponses()
{
    while (!responses.empty() && responses.front().first <= curTick()) {
        if (!port.sendTimingResp(responses.front().second)) {
            retryResp = true;
            return;
        }
        responses.pop_front();
    }
    if (!responses.empty() && !sendEvent.scheduled())
        schedule(sendEvent, responses.front().first);
    if (coreRespWaiting) {
        coreRespWaiting = false;
        bridge->retryResp();
    }
    checkDrained();
}

bool
CXLMemExpander::idle() const
{
    if (!inflight.empty() || !responses.empty() || sendEvent.scheduled())
        return false;
    for (auto &e : host.events)
        if (e->scheduled())
            return false;
    return true;
}

void
CXLMemExpander::checkDrained()
{
    if (drainState() == DrainState::Draining && idle())
        signalDrainDone();
}

DrainState
CXLMemExpander::drain()
{
    // Posted writes are acknowledged before the media has written them, so
    // the core, not only the packets, has to go quiet.
    return idle() ? DrainState::Drained : DrainState::Draining;
}

namespace
{

class StateOut : public cxlcore::StateVisitor
{
  public:
    explicit StateOut(CheckpointOut &c) : cp(c) {}
    bool loading() const override { return false; }
    void field(const std::string &n, uint64_t &v) override
    {
        paramOut(cp, n, v);
    }

  private:
    CheckpointOut &cp;
};

class StateIn : public cxlcore::StateVisitor
{
  public:
    explicit StateIn(CheckpointIn &c) : cp(c) {}
    bool loading() const override { return true; }
    void field(const std::string &n, uint64_t &v) override
    {
        paramIn(cp, n, v);
    }

  private:
    CheckpointIn &cp;
};

} // anonymous namespace

void
CXLMemExpander::visitState(cxlcore::StateVisitor &v) const
{
    // The components are owned through pointers: walking them changes
    // nothing when saving, and restoring happens before simulation starts.
    bridge->checkpoint(v, "bridge");
    for (size_t i = 0; i < links.size(); ++i) {
        links[i]->checkpoint(v, "link" + std::to_string(i));
        devices[i]->checkpoint(v, "device" + std::to_string(i));
    }
}

void
CXLMemExpander::serialize(CheckpointOut &cp) const
{
    // The data is checkpointed by the system's PhysicalMemory; the timing
    // state that survives a drain (open rows, refresh phase, flit packing,
    // credits in flight, error draws) is the core's.
    panic_if(!idle(), "%s: checkpoint of an expander that is not drained",
             name());
    StateOut out(cp);
    visitState(out);
}

void
CXLMemExpander::unserialize(CheckpointIn &cp)
{
    StateIn in(cp);
    visitState(in);
}

bool
CXLMemExpander::CpuPort::recvTimingReq(PacketPtr pkt)
{
    return owner.handleTimingReq(pkt);
}

void
CXLMemExpander::CpuPort::recvRespRetry()
{
    owner.retryResp = false;
    owner.sendResponses();
}

Tick
CXLMemExpander::CpuPort::recvAtomic(PacketPtr pkt)
{
    owner.access(pkt);
    return owner.idleLatency;
}

void
CXLMemExpander::CpuPort::recvFunctional(PacketPtr pkt)
{
    // Writes are applied when they arrive, so memory is always current;
    // queued read responses already carry their data.
    pkt->pushLabel(owner.name());
    owner.functionalAccess(pkt);
    pkt->popLabel();
}

AddrRangeList
CXLMemExpander::CpuPort::getAddrRanges() const
{
    return {owner.getAddrRange()};
}

CXLMemExpander::CXLStats::CXLStats(CXLMemExpander &m)
    : statistics::Group(&m), mem(m),
      ADD_STAT(readReqs, statistics::units::Count::get(), "Read requests"),
      ADD_STAT(writeReqs, statistics::units::Count::get(), "Write requests"),
      ADD_STAT(retries, statistics::units::Count::get(),
               "Requests refused (host bridge tracker full)"),
      ADD_STAT(readBytes, statistics::units::Byte::get(), "Bytes read"),
      ADD_STAT(writeBytes, statistics::units::Byte::get(), "Bytes written"),
      ADD_STAT(readBandwidth, statistics::units::Rate<
               statistics::units::Byte, statistics::units::Second>::get(),
               "Read bandwidth (device to host)", readBytes / simSeconds),
      ADD_STAT(writeBandwidth, statistics::units::Rate<
               statistics::units::Byte, statistics::units::Second>::get(),
               "Write bandwidth (host to device)", writeBytes / simSeconds),
      ADD_STAT(totalReadLatency, statistics::units::Tick::get(),
               "Sum of read latencies"),
      ADD_STAT(avgReadLatency, statistics::units::Rate<
               statistics::units::Tick, statistics::units::Count>::get(),
               "Mean read latency", totalReadLatency / readReqs),
      ADD_STAT(readLatency, statistics::units::Tick::get(),
               "Read latency histogram"),
      ADD_STAT(stageTicks, statistics::units::Tick::get(),
               "Read latency per stage, summed"),
      ADD_STAT(avgStage, statistics::units::Rate<
               statistics::units::Tick, statistics::units::Count>::get(),
               "Mean read latency per stage"),
      ADD_STAT(m2sFlits, statistics::units::Count::get(),
               "Flits host to device (all root ports)"),
      ADD_STAT(s2mFlits, statistics::units::Count::get(),
               "Flits device to host (all root ports)"),
      ADD_STAT(replayedFlits, statistics::units::Count::get(),
               "Flits resent after CRC errors"),
      ADD_STAT(m2sLinkUtil, statistics::units::Ratio::get(),
               "Busy fraction of the host-to-device link direction "
               "(mean over root ports)"),
      ADD_STAT(s2mLinkUtil, statistics::units::Ratio::get(),
               "Busy fraction of the device-to-host link direction "
               "(mean over root ports)"),
      ADD_STAT(deviceQueueOccupancy, statistics::units::Count::get(),
               "Time-averaged requests held by the device controllers"),
      ADD_STAT(mediaReadQueueOccupancy, statistics::units::Count::get(),
               "Time-averaged reads queued in the DRAM controllers"),
      ADD_STAT(devLoad, statistics::units::Count::get(),
               "Responses by CXL DevLoad value")
{
    // Vectors get their size before a formula uses them.
    static const char *names[cxlcore::kNumStages] = {
        "host_uncore", "host_port", "link_req", "device", "media_queue",
        "media_service", "link_resp"};
    stageTicks.init(cxlcore::kNumStages);
    for (int s = 0; s < cxlcore::kNumStages; ++s)
        stageTicks.subname(s, names[s]);
    avgStage = stageTicks / readReqs;
    static const char *loads[4] = {"light", "optimal", "moderate",
                                   "severe"};
    devLoad.init(4);
    for (int i = 0; i < 4; ++i)
        devLoad.subname(i, loads[i]);
}

void
CXLMemExpander::CXLStats::resetStats()
{
    statistics::Group::resetStats();
    // The core keeps its own counters; they restart with gem5's.
    mem.statsStart = curTick();
    mem.bridge->resetStats();
    for (auto &l : mem.links) {
        l->m2s_.resetStats();
        l->s2m_.resetStats();
    }
    for (auto &d : mem.devices)
        d->resetStats(curTick());
}

void
CXLMemExpander::CXLStats::regStats()
{
    statistics::Group::regStats();
    readLatency.init(40); // buckets widen as latencies grow
    // Link counters live in the core; read them when stats are dumped.
    auto sum = [this](auto pick) {
        return [this, pick] {
            double n = 0;
            for (auto &l : mem.links)
                n += double(pick(*l));
            return n;
        };
    };
    m2sFlits.functor(sum([](cxlcore::CxlLink &l) { return l.m2s_.stats().flits; }));
    s2mFlits.functor(sum([](cxlcore::CxlLink &l) { return l.s2m_.stats().flits; }));
    replayedFlits.functor(sum([](cxlcore::CxlLink &l) {
        return l.m2s_.stats().replayedFlits + l.s2m_.stats().replayedFlits;
    }));
    // Time averages over the interval since the last reset.
    auto mean = [this](auto pick) {
        return [this, pick] {
            const Tick span = curTick() - mem.statsStart;
            if (!span || mem.links.empty())
                return 0.0;
            double n = 0;
            for (size_t i = 0; i < mem.links.size(); ++i)
                n += pick(*mem.links[i], *mem.devices[i], span);
            return n / double(mem.links.size());
        };
    };
    m2sLinkUtil.functor(mean([](cxlcore::CxlLink &l, cxlcore::Type3Device &,
                                Tick span) {
        return double(l.m2s_.busy()) / double(span);
    }));
    s2mLinkUtil.functor(mean([](cxlcore::CxlLink &l, cxlcore::Type3Device &,
                                Tick span) {
        return double(l.s2m_.busy()) / double(span);
    }));
    deviceQueueOccupancy.functor(mean([this](cxlcore::CxlLink &,
                                             cxlcore::Type3Device &d, Tick) {
        return d.meanOccupancy(mem.statsStart, curTick());
    }));
    mediaReadQueueOccupancy.functor(mean([this](cxlcore::CxlLink &,
                                                cxlcore::Type3Device &d,
                                                Tick) {
        return d.media().meanReadQueue(mem.statsStart, curTick());
    }));
}

} // namespace gem5
