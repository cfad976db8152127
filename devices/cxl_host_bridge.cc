#include "devices/cxl_host_bridge.hh"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "base/logging.hh"
#include "base/trace.hh"
#include "debug/CXLMem.hh"
#include "devices/cxl_switch.hh"
#include "sim/sim_exit.hh"
#include "sim/stats.hh"

namespace gem5
{

namespace
{

#define CXL_COPY_BRIDGE(type, name, def, lo, hi) b.name = static_cast<type>(p.bridge_##name);

} // anonymous namespace

// Where the data lives. The bridge's AbstractMemory holds the bytes of the
// whole window; the expanders are timing only. That is the right place:
//  - functional accesses (debuggers, loaders, `m5 readfile` targets, the
//    functional reads MemTest mixes in) address the window by host physical
//    address and must see every byte at once, whatever the interleave;
//  - gem5's PhysicalMemory checkpoints and restores one store per
//    AbstractMemory range, so the window stays one range in a checkpoint
//    however many devices back it;
//  - gem5's AddrRange interleaving is power-of-two only, while CXL HDM
//    decoders also interleave 3, 6 and 12 ways: per-device AbstractMemories
//    would need our decoder to translate addresses for gem5's own
//    functional and checkpoint paths, which only see host addresses.
// The core's HDM decoder still decides which device (and device physical
// address) a request's timing goes through; only the bytes are kept whole.

CXLHostBridge::CXLHostBridge(const Params &p)
    : AbstractMemory(p), host(*this, name(), [this] { checkDrained(); }),
      port(name() + ".port", *this), upstream(*this),
      watchdogEvent([this] { checkProgress(); }, name() + ".watchdog"),
      sendEvent([this] { sendResponses(); }, name()), stats(*this)
{
    if (p.watchdog_window_ns < 0)
        fatal("%s: bad CXLHostBridge parameter: watchdog_window_ns = %g; "
              "allowed: 0 (off) or a window in ns above 0", name(),
              p.watchdog_window_ns);
    if (p.watchdog_window_ns > 0) {
        const Tick window = cxlcore::nsToTicks(p.watchdog_window_ns);
        watchdog = std::make_unique<cxlcore::Watchdog>(pool, window);
        // Four checks a window: a stall is reported within 1.25 windows.
        watchdogEvery = std::max<Tick>(window / 4, 1);
    }
    cxlcore::BridgeParams b;
    CXL_BRIDGE_FIELDS(CXL_COPY_BRIDGE)
    // Configuration time (m5.instantiate), before any tick is simulated.
    if (p.root_ports.size() != b.root_ports)
        fatal("%s: bad CXLHostBridge parameter: bridge_root_ports = %u but "
              "root_ports holds %u targets; give one CXLType3Expander or "
              "CXLSwitch per root port (bridge_interleave_ways, equal to "
              "bridge_root_ports, interleaves the window over all of them)",
              name(), b.root_ports, unsigned(p.root_ports.size()));
    if (p.host_index >= cxlcore::kMaxHosts)
        fatal("%s: bad CXLHostBridge parameter: host_index = %u; allowed: 0 "
              "to %u", name(), p.host_index, cxlcore::kMaxHosts - 1);
    hostIndex = uint8_t(p.host_index);
    try {
        // Addresses reach the core as offsets into this memory's range.
        bridge = std::make_unique<cxlcore::HostBridge>(host, b, name(), 0,
                                                       range.size());
        // As the standalone engine binds each root port: a switch learns
        // which upstream port this host's responses go back by, an MLD
        // gives it a logical device of its own.
        const uint64_t share = cxlcore::HdmDecoder::share(
            range.size(), p.root_ports.size(), b.interleave_bytes);
        for (CXLPortTarget *t : p.root_ports) {
            const CXLPortTarget::Attachment a = t->attach(*this);
            rootPorts.push_back(t);
            bridge->addPort(a.link, a.below);
            a.below->bind(hostIndex, share, cxlcore::LdQos{});
        }
    } catch (const cxlcore::ConfigError &e) {
        fatal("%s: bad CXLHostBridge parameter (group.field is the "
              "parameter group_field): %s", name(), e.what());
    }
    bridge->setRequester(&upstream);
    interleaveBytes = b.interleave_bytes;
    bridgeLatencyNs = b.req_latency_ns + b.resp_latency_ns;
    if (!p.trace_file.empty()) {
        try {
            trace = std::make_unique<cxlcore::TraceSink>(
                p.trace_sample, p.trace_max_requests);
        } catch (const cxlcore::ConfigError &e) {
            fatal("%s: bad CXLHostBridge parameter: %s", name(), e.what());
        }
        trace->beginRun();
        traceFile = p.trace_file;
        registerExitCallback([this] { writeTrace(); });
    }
}

void
CXLHostBridge::writeTrace()
{
    if (!trace)
        return;
    trace->label(&stats.reads, name() + ".read");
    std::ofstream f(traceFile);
    if (!f)
        warn("%s: cannot write the request trace to %s", name(),
             traceFile);
    else
        cxlcore::writeTraceRows(*trace, f);
}

Port &
CXLHostBridge::getPort(const std::string &if_name, PortID idx)
{
    if (if_name != "port")
        return AbstractMemory::getPort(if_name, idx);
    return port;
}

void
CXLHostBridge::init()
{
    AbstractMemory::init();
    if (port.isConnected())
        port.sendRangeChange();
}

void
CXLHostBridge::routeByDecoders(CXLHostBridgeRegs *r,
                               const std::vector<CXLPciFunction *> &eps,
                               bool commit, std::vector<uint32_t> targets,
                               uint32_t granularity,
                               const std::vector<CXLPciFunction *> &switchEps)
{
    fatal_if(regs, "%s: %s routes it already; one register block a bridge",
             name(), regs->name());
    if (eps.size() != rootPorts.size())
        fatal("%s: bad CXLHostBridgeRegs parameter: %s's endpoints holds %u "
              "functions for %u root ports; give the Type-3 function (or the "
              "switch's upstream port function) below each root port, in "
              "port order", name(), r->name(),
              unsigned(eps.size()), unsigned(rootPorts.size()));
    size_t next = 0;  // in switchEps
    for (size_t j = 0; j < eps.size(); ++j) {
        CXLSwitch *s = dynamic_cast<CXLSwitch *>(rootPorts[j]);
        if (!s)
            continue;
        const size_t n = s->downstreamPorts();
        if (eps[j]->params().kind != "switch_upstream" ||
            next + n > switchEps.size())
            fatal("%s: bad CXLHostBridgeRegs parameter: root port %u leads "
                  "to switch %s (%u downstream ports): %s's endpoints must "
                  "name its switch_upstream function there (%s is a %s) and "
                  "switch_endpoints its %u Type-3 functions (%u left)",
                  name(), unsigned(j), s->name(), unsigned(n), r->name(),
                  eps[j]->name(), eps[j]->params().kind, unsigned(n),
                  unsigned(switchEps.size() - next));
        s->bindIo(eps[j], std::vector<CXLPciFunction *>(
                              switchEps.begin() + next,
                              switchEps.begin() + next + n));
        next += n;
        if (commit)
            fatal("%s: bad CXLHostBridgeRegs parameter: firmware_commit with "
                  "switch %s below root port %u is not supported; allowed: "
                  "firmware_commit = False (the guest commits a region's "
                  "decoders)", name(), s->name(), unsigned(j));
    }
    if (next != switchEps.size())
        fatal("%s: bad CXLHostBridgeRegs parameter: switch_endpoints holds "
              "%u functions; the switches below the root ports have %u "
              "downstream ports", name(), unsigned(switchEps.size()),
              unsigned(next));
    if (targets.empty())
        for (uint32_t j = 0; j < rootPorts.size(); ++j)
            targets.push_back(j);
    for (size_t i = 0; i < targets.size(); ++i)
        if (targets[i] >= rootPorts.size() ||
            std::count(targets.begin(), targets.begin() + i, targets[i]))
            fatal("%s: bad CXLHostBridgeRegs parameter: firmware_targets "
                  "names root port %u (again or beyond the bridge's); "
                  "allowed: each of 0 to %u once", r->name(), targets[i],
                  unsigned(rootPorts.size()) - 1);
    regs = r;
    endpoints = eps;
    firmwareTargets = targets;
    if (granularity)
        interleaveBytes = granularity;
    // Every commit or uncommit, at the bridge or an endpoint, may move the
    // routes: rebuilt then, never per access.
    regs->registers().onDecoderChange([this] { rebuildRoutes(); });
    for (CXLPciFunction *f : endpoints)
        f->function().component().onDecoderChange([this] { rebuildRoutes(); });
    for (CXLPortTarget *t : rootPorts)
        if (auto *s = dynamic_cast<CXLSwitch *>(t))
            for (CXLPciFunction *f : s->endpointFunctions())
                f->function().component().onDecoderChange(
                    [this] { rebuildRoutes(); });
    if (commit)
        commitAsFirmware();
    rebuildRoutes();
}

void
CXLHostBridge::commitAsFirmware()
{
    // One decoder over the whole window, endpoints first (as Linux's
    // cxl_region commits), locked: the OS was handed this memory in SRAT.
    cxlcore::cxlio::CommittedDecoder d;
    d.base = range.start();
    d.size = range.size();
    d.ways = uint32_t(firmwareTargets.size());
    d.granularity = interleaveBytes;
    d.locked = true;
    for (uint32_t j : firmwareTargets) {
        CXLPciFunction *f = endpoints[j];
        const std::string err = f->function().component().commitDecoder(0, d);
        if (!err.empty())
            fatal("%s: firmware_commit: %s refused its decoder over "
                  "[%#x, %#x): %s", name(), f->name(), d.base,
                  d.base + d.size, err);
    }
    d.targets = firmwareTargets;  // root port j has port number j (the board's)
    const std::string err = regs->registers().commitDecoder(0, d);
    if (!err.empty())
        fatal("%s: firmware_commit: %s refused %u ways at %u B over [%#x, "
              "%#x): %s", name(), regs->name(), d.ways, d.granularity,
              d.base, d.base + d.size, err);
}

void
CXLHostBridge::rebuildRoutes()
{
    using cxlcore::cxlio::CommittedDecoder;
    cxlcore::cxlio::ComponentRegs &r = regs->registers();
    std::vector<CommittedDecoder> mine;
    if (r.hdmEnabled())
        mine = r.committed();
    std::vector<std::vector<CommittedDecoder>> below(endpoints.size());
    std::vector<CXLSwitch *> switches(endpoints.size(), nullptr);
    for (size_t j = 0; j < endpoints.size(); ++j) {
        if (endpoints[j]->function().hdmEnabled())
            below[j] = endpoints[j]->function().committedDecoders();
        switches[j] = dynamic_cast<CXLSwitch *>(rootPorts[j]);
    }
    // The core's bridge sees offsets into the window.
    auto regions = cxlcore::committedRegions(
        mine, [&](uint32_t n, cxlcore::RootPortDecoders &out) {
            if (n >= below.size())
                return false;
            out.index = n;
            out.device = &below[n];
            // A switch whose upstream port software programmed decodes the
            // address again (Linux's granularity there: parent's x ways).
            out.through = switches[n] && !below[n].empty();
            return true;
        }, range.start());
    for (uint32_t j = 0; j < switches.size(); ++j)
        if (switches[j])
            routeSwitch(*switches[j], j, mine, below[j]);
    // One line per region, on every rebuild: what the timing routes by, in
    // the terms `cxl list` reports a region (host addresses, ways, bytes).
    for (const cxlcore::CommittedRegion &g : regions) {
        std::string ports;
        for (uint32_t p : g.ports)
            ports += (ports.empty() ? "" : ",") + std::to_string(p);
        inform("%s: routes [%#x, %#x) ways %u granularity %u ports %s",
               name(), range.start() + g.base, range.start() + g.base + g.size,
               g.ways, g.granularity, ports);
    }
    if (regions.empty())
        inform("%s: routes nothing (no decoder committed)", name());
    bridge->routeBy(std::make_unique<cxlcore::CommittedRoutes>(
        name(), regions, r.poisonOnDecodeError()));
}

void
CXLHostBridge::routeSwitch(CXLSwitch &s, uint32_t rootPort,
                           const std::vector<cxlcore::cxlio::CommittedDecoder> &mine,
                           const std::vector<cxlcore::cxlio::CommittedDecoder> &usp)
{
    using cxlcore::cxlio::CommittedDecoder;
    std::vector<std::vector<CommittedDecoder>> devs;
    for (CXLPciFunction *f : s.endpointFunctions())
        devs.push_back(f->function().hdmEnabled()
                           ? f->function().committedDecoders()
                           : std::vector<CommittedDecoder>{});
    s.routeBy(cxlcore::switchRegionsBelowBridge(mine, rootPort, usp, devs,
                                                range.start()));
}

bool
CXLHostBridge::portOf(Addr offset, uint32_t &rp) const
{
    cxlcore::HdmDecoder::Target tg;
    if (!bridge->route(offset, tg))
        return false;
    rp = tg.port;
    return true;
}

void
CXLHostBridge::accessData(PacketPtr pkt, bool routed)
{
    if (routed) {
        access(pkt);
        return;
    }
    if (pkt->isRead()) {
        std::memset(pkt->getPtr<uint8_t>(), 0xFF, pkt->getSize());
    }
    if (pkt->needsResponse())
        pkt->makeResponse();
}

bool
CXLHostBridge::handleTimingReq(PacketPtr pkt)
{
    if (retryReq)
        return false;
    // Below a bus that is not the point of coherence, requests arrive that
    // move no data: a cache answers them, or a clean line leaves the host
    // (silently, as on the host modelled). The sender still reads the
    // packet after this call, so it is deleted later.
    if (pkt->cacheResponding() || pkt->cmd == MemCmd::CleanEvict ||
        pkt->cmd == MemCmd::WritebackClean) {
        pendingDelete.reset(pkt);
        return true;
    }
    // gem5's caches claim a line that stores will overwrite whole without
    // its data (InvalidateReq); the host modelled fetches it for ownership
    // like any store miss, so the device sees, and times, a read.
    const bool rfo = pkt->cmd == MemCmd::InvalidateReq;
    panic_if(!(pkt->isRead() || pkt->isWrite() || rfo),
             "%s: only reads, writes and ownership requests reach memory, "
             "saw %s", name(), pkt->cmdString());
    cxlcore::Txn *t = pool.get();
    t->hostAddr = pkt->getAddr();
    t->addr = pkt->getAddr() - range.start();
    t->opc = pkt->isWrite() ? cxlcore::Opc::MemWr : cxlcore::Opc::MemRd;
    t->host = hostIndex;
    // The packet reaches us after its header and payload delays.
    t->birth = t->mark = curTick() + pkt->headerDelay + pkt->payloadDelay;
    pkt->headerDelay = pkt->payloadDelay = 0;
    const uint64_t id = t->id;
    uint32_t rp = 0;
    const bool routed = portOf(t->addr, rp);
    inflight[id] = InFlight{pkt, routed ? rp : kUnrouted};
    if (trace)
        t->trace = trace->admit(*t);
    if (!bridge->tryReq(t)) {
        inflight.erase(id);
        if (trace)
            trace->retract(*t);
        pool.put(t);
        retryReq = true;
        ++stats.retries;
        return false;
    }
    DPRINTF(CXLMem, "txn %llu %s %#llx port %u\n", id,
            pkt->isWrite() ? "W" : "R", pkt->getAddr(), rp);
    if (pkt->isWrite()) {
        ++stats.writeReqs;
        stats.writeBytes += pkt->getSize();
    } else {
        ++stats.readReqs;
        stats.readBytes += pkt->getSize();
    }
    if (routed)
        rootPorts[rp]->countRequest(pkt->isWrite(), pkt->getSize());
    armWatchdog();
    // The data lives here: the access happens now, the timing in the core.
    accessData(pkt, routed);
    return true;
}

bool
CXLHostBridge::Upstream::tryResp(cxlcore::Txn *t)
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
CXLHostBridge::Upstream::retryReq()
{
    if (owner.retryReq) {
        owner.retryReq = false;
        owner.port.sendRetryReq();
    }
}

void
CXLHostBridge::respond(cxlcore::Txn *t)
{
    auto it = inflight.find(t->id);
    panic_if(it == inflight.end(), "%s: unknown transaction %llu", name(),
             t->id);
    PacketPtr pkt = it->second.pkt;
    if (it->second.port != kUnrouted)
        rootPorts[it->second.port]->countResponse(*t);
    inflight.erase(it);
    const Tick done = std::max<Tick>(t->mark, curTick());
    ++stats.devLoad[t->devLoad & 3];
    if (t->isRead()) {
        const Tick lat = done - t->birth;
        ++stats.readsCompleted;
        stats.totalReadLatency += lat;
        stats.readLatency.sample(lat);
        stats.reads.add(lat);  // stages are summed in stageTicks already
        if (t->trace)
            cxlcore::TraceSink::counted(*t, done, &stats.reads);
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
CXLHostBridge::sendResponses()
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

void
CXLHostBridge::armWatchdog()
{
    if (!watchdog || watchdogEvent.scheduled())
        return;
    watchdog->restart(curTick());
    schedule(watchdogEvent, curTick() + watchdogEvery);
}

void
CXLHostBridge::checkProgress()
{
    try {
        watchdog->check(curTick());
    } catch (const cxlcore::StallError &e) {
        fatal("%s: %s", name(), e.what());
    }
    if (pool.live())
        schedule(watchdogEvent, curTick() + watchdogEvery);
}

bool
CXLHostBridge::idle() const
{
    return inflight.empty() && responses.empty() && !sendEvent.scheduled() &&
        host.idle();
}

void
CXLHostBridge::checkDrained()
{
    if (drainState() == DrainState::Draining && idle()) {
        // Nothing in flight is left to watch; a checkpoint holds no event.
        if (watchdogEvent.scheduled())
            deschedule(watchdogEvent);
        signalDrainDone();
    }
}

DrainState
CXLHostBridge::drain()
{
    // Each root port's target drains its own links and devices.
    if (!idle())
        return DrainState::Draining;
    if (watchdogEvent.scheduled())
        deschedule(watchdogEvent);
    return DrainState::Drained;
}

void
CXLHostBridge::serialize(CheckpointOut &cp) const
{
    // The data is checkpointed by the system's PhysicalMemory, each
    // expander's timing state in its own section; this is the bridge's.
    panic_if(!idle(), "%s: checkpoint of a host bridge that is not drained",
             name());
    CXLStateOut out(cp);
    bridge->checkpoint(out, "bridge");
}

void
CXLHostBridge::unserialize(CheckpointIn &cp)
{
    CXLStateIn in(cp);
    bridge->checkpoint(in, "bridge");
}

bool
CXLHostBridge::CpuPort::recvTimingReq(PacketPtr pkt)
{
    return owner.handleTimingReq(pkt);
}

void
CXLHostBridge::CpuPort::recvRespRetry()
{
    owner.retryResp = false;
    owner.sendResponses();
}

Tick
CXLHostBridge::CpuPort::recvAtomic(PacketPtr pkt)
{
    // Atomic mode: the unloaded latency through the root port the decoder
    // picks (a media row hit).
    uint32_t rp = 0;
    const bool routed = owner.portOf(pkt->getAddr() - owner.range.start(), rp);
    ++owner.stats.atomicAccesses;
    if (!routed)
        ++owner.stats.atomicUnrouted;
    owner.accessData(pkt, routed);
    // Unrouted: answered by the bridge itself, after its own pipeline.
    return cxlcore::nsToTicks(owner.bridgeLatencyNs +
                              (routed ? owner.rootPorts[rp]->idleLatencyNs() : 0));
}

void
CXLHostBridge::CpuPort::recvFunctional(PacketPtr pkt)
{
    // Writes are applied when they arrive, so memory is always current;
    // queued read responses already carry their data.
    pkt->pushLabel(owner.name());
    owner.functionalAccess(pkt);
    pkt->popLabel();
}

AddrRangeList
CXLHostBridge::CpuPort::getAddrRanges() const
{
    return {owner.getAddrRange()};
}

CXLHostBridge::BridgeStats::BridgeStats(CXLHostBridge &b)
    : statistics::Group(&b), br(b),
      ADD_STAT(readReqs, statistics::units::Count::get(), "Read requests"),
      ADD_STAT(writeReqs, statistics::units::Count::get(), "Write requests"),
      ADD_STAT(retries, statistics::units::Count::get(),
               "Requests refused (host bridge tracker full)"),
      ADD_STAT(atomicAccesses, statistics::units::Count::get(),
               "Atomic-mode accesses (reads and writes)"),
      ADD_STAT(atomicUnrouted, statistics::units::Count::get(),
               "Atomic-mode accesses no committed decoder routed (reads "
               "answered all ones, writes dropped)"),
      ADD_STAT(readBytes, statistics::units::Byte::get(), "Bytes read"),
      ADD_STAT(writeBytes, statistics::units::Byte::get(), "Bytes written"),
      ADD_STAT(readBandwidth, statistics::units::Rate<
               statistics::units::Byte, statistics::units::Second>::get(),
               "Read bandwidth (device to host)", readBytes / simSeconds),
      ADD_STAT(writeBandwidth, statistics::units::Rate<
               statistics::units::Byte, statistics::units::Second>::get(),
               "Write bandwidth (host to device)", writeBytes / simSeconds),
      ADD_STAT(readsCompleted, statistics::units::Count::get(),
               "Reads completed (requests still in flight at a dump are in "
               "readReqs, not here)"),
      ADD_STAT(totalReadLatency, statistics::units::Tick::get(),
               "Sum of read latencies"),
      ADD_STAT(avgReadLatency, statistics::units::Rate<
               statistics::units::Tick, statistics::units::Count>::get(),
               "Mean read latency", totalReadLatency / readsCompleted),
      ADD_STAT(readLatency, statistics::units::Tick::get(),
               "Read latency histogram"),
      ADD_STAT(stageTicks, statistics::units::Tick::get(),
               "Read latency per stage, summed"),
      ADD_STAT(avgStage, statistics::units::Rate<
               statistics::units::Tick, statistics::units::Count>::get(),
               "Mean read latency per stage"),
      ADD_STAT(devLoad, statistics::units::Count::get(),
               "Responses by CXL DevLoad value (all root ports)"),
      ADD_STAT(read_latency_p50_ns, statistics::units::Unspecified::get(),
               "Read latency, median (ns)"),
      ADD_STAT(read_latency_p90_ns, statistics::units::Unspecified::get(),
               "Read latency, 90th percentile (ns)"),
      ADD_STAT(read_latency_p99_ns, statistics::units::Unspecified::get(),
               "Read latency, 99th percentile (ns)"),
      ADD_STAT(read_latency_p999_ns, statistics::units::Unspecified::get(),
               "Read latency, 99.9th percentile (ns)")
{
    // As the standalone engine names and computes them (its histogram,
    // within 1/128 of the exact order statistic).
    const std::pair<statistics::Value *, double> tails[] = {
        {&read_latency_p50_ns, 0.5}, {&read_latency_p90_ns, 0.9},
        {&read_latency_p99_ns, 0.99}, {&read_latency_p999_ns, 0.999}};
    for (const auto &[stat, q] : tails)
        stat->functor([this, q = q] { return reads.percentile(q) / 1000.0; });
    // Vectors get their size before a formula uses them.
    stageTicks.init(cxlcore::kNumStages);
    for (int s = 0; s < cxlcore::kNumStages; ++s)
        stageTicks.subname(s, cxlcore::stageName(cxlcore::Stage(s)));
    avgStage = stageTicks / readsCompleted;
    static const char *loads[4] = {"light", "optimal", "moderate",
                                   "severe"};
    devLoad.init(4);
    for (int i = 0; i < 4; ++i)
        devLoad.subname(i, loads[i]);
}

void
CXLHostBridge::BridgeStats::resetStats()
{
    statistics::Group::resetStats();
    reads.reset();
    if (br.trace)  // the trace's breakdown stays the stats' breakdown
        br.trace->uncount(&reads);
    // The core keeps its own counters; they restart with gem5's (each
    // expander resets its link's and device's).
    br.bridge->resetStats();
    core.reset();
}

void
CXLHostBridge::BridgeStats::regStats()
{
    statistics::Group::regStats();
    readLatency.init(40); // buckets widen as latencies grow
    const cxlcore::HostBridge &b = *br.bridge;
    core.reg(this, "", [&b](cxlcore::Report &r, const std::string &path,
                            cxlcore::Tick, cxlcore::Tick) {
        cxlcore::reportHostBridge(r, path, b);
    });
}

} // namespace gem5
