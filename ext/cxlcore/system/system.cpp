#include "cxlcore/system/system.hpp"

#include <algorithm>
#include <sstream>

#include "cxlcore/system/graph.hpp"

namespace cxlcore {

namespace {

// Below a root port or a switch's downstream port: a link, then a Type-3
// device or a switch with its own ports, as the graph joins them.
class CxlBuilder {
  public:
    CxlBuilder(EventLoop& loop, const Graph& g, MemoryWindow& w, uint64_t seed, uint64_t stopAfter)
        : loop_(loop), g_(g), w_(w), seed_(seed), stopAfter_(stopAfter) {}

    // `port`: the connection leaving the port; `name`: what reports call the
    // device there ("": its component's name; a switch always keeps its own);
    // `window`: the addresses the port sends, [0, window). Returns the link it built.
    CxlLink* build(const Connection& port, std::string name, uint64_t seed, uint64_t window, MemEndpoint*& below) {
        const Node& link = g_.below(port);
        const Node& dev = g_.pastLink(port);
        if (name.empty()) name = dev.name;
        if (dev.type == "switch") {
            w_.switchLinks.push_back(
                std::make_unique<CxlLink>(link.params.LinkParams_, dev.name + ".link", seed));
            CxlLink* up = w_.switchLinks.back().get();
            w_.switches.push_back(
                std::make_unique<CxlSwitch>(loop_, dev.params.SwitchParams_, dev.name, *up, window));
            CxlSwitch& sw = *w_.switches.back();
            const auto dsps = g_.leaving(dev.name, "dsp");
            const uint64_t gran = dev.params.SwitchParams_.interleave_bytes;
            const uint64_t share = shareOf(window, dsps.size(), gran);
            for (const Connection* k : dsps) {
                MemEndpoint* child = nullptr;
                CxlLink* l = build(*k, "", seed_ + 7919 * ++deeper_, share, child);
                sw.addPort(l, child);
            }
            sw.finish();
            below = &sw;
            return up;
        }
        w_.deviceNames.push_back(name);
        w_.links.push_back(std::make_unique<CxlLink>(link.params.LinkParams_, name + ".link", seed));
        w_.devices.push_back(std::make_unique<Type3Device>(loop_, dev.params.DeviceParams_, dev.params.DramParams_,
                                                           *w_.links.back(), name));
        w_.devices.back()->stopAfter(stopAfter_);
        below = w_.devices.back().get();
        return w_.links.back().get();
    }

    // What each of `ways` ports receives of [0, window) interleaved at `gran`.
    static uint64_t shareOf(uint64_t window, uint64_t ways, uint64_t gran) {
        return (window / (ways * gran) + (window % (ways * gran) != 0)) * gran;
    }

  private:
    EventLoop& loop_;
    const Graph& g_;
    MemoryWindow& w_;
    uint64_t seed_, stopAfter_;
    uint64_t deeper_ = 0;  // links below switches built so far: each its own seed
};

}  // namespace

void System::buildCxl(MemoryWindow& w, uint32_t cxlWindows) {
    if (!p_.graph) throw ConfigError(w.p.name + ": no graph to build the window's CXL devices from");
    const Graph& g = *p_.graph;
    const std::string& n = w.p.name;
    // A map window decodes [base, base + size); the one window of a
    // single-memory system the whole 52-bit space, as it always did.
    w.bridge = w.p.size ? std::make_unique<HostBridge>(loop, w.p.bridge, n + ".bridge", w.p.base, w.p.size)
                        : std::make_unique<HostBridge>(loop, w.p.bridge, n + ".bridge");
    const auto ports = g.leaving(w.p.node, "root_port");
    const uint64_t share =
        CxlBuilder::shareOf(w.p.size ? w.p.size : HdmDecoder::kMaxWindow, ports.size(), w.p.bridge.interleave_bytes);
    // The first CXL window keeps the seeds a single-memory system has.
    const uint64_t base = p_.seed + 1000003ull * cxlWindows;
    CxlBuilder b(loop, g, w, base + 17 * ports.size(), p_.fault_device_stops_after);
    for (uint32_t i = 0; i < ports.size(); ++i) {
        // Single-memory systems keep their names (cxl, or cxl0, cxl1, ...); each
        // root port's link is named after its device, so traces and messages tell the ports apart.
        const std::string name = ports.size() == 1 ? n : mapped_ ? n + ".dev" + std::to_string(i) : n + std::to_string(i);
        MemEndpoint* below = nullptr;
        CxlLink* l = b.build(*ports[i], name, base + 17 * i, share, below);
        w.bridge->addPort(l, below);
    }
    w.target = w.bridge.get();
}

System::System(const SystemParams& p, bool check) : p_(p), mapped_(!p.windows.empty()) {
    p_.validate();
    const std::vector<WindowParams> map = p_.addressMap();
    // The host's DRAM is named after the window that maps it, if any.
    localName_ = "local_dram";
    if (mapped_)
        for (const WindowParams& w : map)
            if (w.kind == MemoryKind::LocalDram) localName_ = w.name;
    localDram = std::make_unique<DramController>(loop, p_.local_dram, localName_);
    windows.resize(map.size());
    uint32_t cxlWindows = 0;
    for (size_t k = 0; k < map.size(); ++k) {
        MemoryWindow& w = windows[k];
        w.p = map[k];
        if (w.p.kind == MemoryKind::LocalDram) {
            w.target = localDram.get();
        } else if (w.p.kind == MemoryKind::RemoteNuma) {
            w.remote = std::make_unique<InterSocket>(loop, w.p.intersocket, w.p.remote_dram);
            w.target = w.remote.get();
        } else {
            buildCxl(w, cxlWindows++);
        }
    }
    uncore_ = std::make_unique<Uncore>(loop, p_.host);
    for (MemoryWindow& w : windows) {
        // DRAM behind the window sees offsets into it; a host bridge decodes host addresses.
        const bool rebase = w.p.kind != MemoryKind::CxlType3;
        const Stage full = w.p.kind == MemoryKind::LocalDram    ? kStageMediaQueue
                           : w.p.kind == MemoryKind::RemoteNuma ? kStageLinkDown
                                                                 : kStageHostPort;
        uncore_->addWindow(w.p.name, mapped_ ? w.p.name : "memory", w.p.base, w.p.end(), w.target, rebase, full);
        w.target->setRequester(uncore_.get());
    }
    uncore_->setPageTables(localDram.get());
    localDram->setRequester(uncore_.get());
    if (!p_.accelerators.empty()) buildAccelerators(check);
}

int System::windowIndex(const std::string& name) const {
    for (size_t i = 0; i < windows.size(); ++i)
        if (windows[i].p.name == name) return int(i);
    return -1;
}

void System::run() {
    loop.watch(&watchdog_);
    if (home) {
        runCoherent();
        return;
    }
    loop.run();
    if (!loop.stopped()) watchdog_.drained(loop.now());
}

namespace {
std::string ns(Tick t) {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(1);
    os << ticksToNs(t);
    return os.str();
}
}  // namespace

Tick System::stallWindow() const {
    // Longer than any single delay the parameters allow, so only a real stall trips it.
    double longest = 0;
    for (auto& d : p_.accelerators)
        longest = std::max(longest, p_.home.latency_ns + p_.home.host_hit_ns + d.cache.latency_ns +
                                        d.cache.snoop_latency_ns + d.accel.bias_flip_ns + d.accel.memory_latency_ns +
                                        d.dma.setup_ns + d.dma.engine_latency_ns + d.dma.poll_interval_ns +
                                        d.dma.interrupt_ns + d.link.phy_latency_ns + d.link.replay_latency_ns +
                                        p_.local_dram.tRFC_ns + d.media.tRFC_ns);
    return nsToTicks(100000.0 + 4.0 * longest);
}

void System::runCoherent() {
    // Checked once per window of simulated time: stalled when no event is left,
    // when nothing completed for a window, or when the oldest request has
    // waited four windows while others complete (starvation).
    const Tick window = stallWindow();
    watch.lastProgress = loop.now();
    for (Tick until = loop.now() + window;; until += window) {
        loop.run(until);
        if (loop.stopped()) return;
        const bool drained = loop.idle();
        if (drained && !watch.outstanding) return;
        if (!watch.outstanding) continue;  // only background work left
        const Tick t = drained ? loop.now() : until;
        Oldest o;
        for (auto& d : accels) d->oldest(o);
        home->oldest(o);
        std::string why;
        if (drained)
            why = "no event left to complete them";
        else if (t - watch.lastProgress >= window)
            why = "none completed for " + ns(t - watch.lastProgress) + " ns while events kept firing";
        else if (o.issued != kNever && t - o.issued >= 4 * window)
            why = "the oldest waited over " + ns(4 * window) + " ns while others completed";
        else
            continue;
        std::string msg = "CXL.cache run stalled at " + ns(t) + " ns with " + std::to_string(watch.outstanding) +
                          " requests outstanding: " + why + "; the oldest waits in ";
        if (o.issued != kNever)
            msg += o.where + ", age " + ns(t - o.issued) + " ns";
        else
            msg += "an unknown place (" + home->describe() + ")";
        throw StallError(msg);
    }
}

bool System::quiet() const {
    if (home && !home->quiet()) return false;
    for (auto& d : accels)
        if (!d->quiet()) return false;
    return true;
}

double System::mediaPeakBytesPerSec(const std::vector<uint32_t>& which) const {
    double s = 0;
    for (size_t i = 0; i < windows.size(); ++i) {
        if (!which.empty() && std::find(which.begin(), which.end(), uint32_t(i)) == which.end()) continue;
        const MemoryWindow& w = windows[i];
        if (w.remote) s += w.remote->dram().peakBytesPerSec();
        else if (w.bridge)
            for (auto& d : w.devices) s += d->media().peakBytesPerSec();
        else s += localDram->peakBytesPerSec();
    }
    return s;
}

void System::resetStats() {
    const Tick t = loop.now();
    localDram->resetStats(t);
    for (MemoryWindow& w : windows) {
        if (w.remote) {
            w.remote->dram().resetStats(t);
            w.remote->out_.resetStats();
            w.remote->back_.resetStats();
        }
        if (w.bridge) w.bridge->resetStats();
        for (auto& l : w.links) {
            l->m2s_.resetStats();
            l->s2m_.resetStats();
        }
        for (auto& d : w.devices) d->resetStats(t);
        for (auto& l : w.switchLinks) {
            l->m2s_.resetStats();
            l->s2m_.resetStats();
        }
        for (auto& sw : w.switches) sw->resetStats();
    }
    uncore_->resetStats();
}

void System::buildAccelerators(bool check) {
    if (check) checker.reset(new CoherenceChecker(p_.accelInstances() + 1));
    // The home reaches host memory through the uncore: the address map routes
    // each line to its window (the DRAM, a CXL expander, the remote socket).
    // Its own pipeline (home.latency_ns) is the whole host-side cost.
    home.reset(new HomeAgent(loop, p_.home, uncore_->addInput(nullptr, 0, 0), pool, checker.get()));
    const std::vector<uint64_t> bases = p_.accelMemoryBases();
    uint32_t i = 0;
    for (uint32_t e = 0; e < p_.accelerators.size(); ++e) {
        const AccelDeviceParams& d = p_.accelerators[e];
        for (uint32_t k = 0; k < d.accel.devices; ++k, ++i) {
            const uint64_t memBase = bases[e] ? bases[e] + uint64_t(k) * d.accel.memory_bytes : 0;
            accelLinks.emplace_back(
                new CxlLink(d.link, d.name.empty() ? "cxl.link" : d.prefix() + "link", p_.seed * 131 + i));
            accels.emplace_back(new Accelerator(loop, uint16_t(i), d.cache, d.accel, d.dma, d.media, memBase,
                                                *accelLinks.back(), *home, pool, checker.get(), d.instance(k, i)));
            accelEntry.push_back(e);
            home->addDevice(accels.back().get(), accelLinks.back().get(), d.dma);
            accels.back()->setWatch(&watch);
        }
    }
    home->setWatch(&watch);
}

}  // namespace cxlcore
