#include "cxlcore/system/system.hpp"

#include <algorithm>
#include <sstream>

#include "cxlcore/system/graph.hpp"

namespace cxlcore {

namespace {

// Below a root port or a switch's downstream port: a link, then a Type-3
// device or a switch with its own ports, as the graph joins them. A switch
// that another host's path built already gains an upstream port instead.
class CxlBuilder {
  public:
    struct Fabric {
        std::vector<std::unique_ptr<CxlLink>>& links;
        std::vector<std::unique_ptr<Type3Device>>& devices;
        std::vector<std::unique_ptr<CxlSwitch>>& switches;
        std::vector<CxlLink*>& switchLinks;
        std::vector<std::string>& linkNames;
        std::map<const Type3Device*, std::string>& deviceNames;
        std::vector<std::unique_ptr<CxlLink>>& reverse;  // each inter-switch link's second direction
        std::vector<std::string>& reverseNames;
        // PBR fabrics built so far: a host edge's connection -> its link and upstream port.
        std::map<const Connection*, std::pair<CxlLink*, MemEndpoint*>>& pbrEdges;
        std::map<const void*, std::string>& pbrFabricOf;  // a PBR device or host edge -> its fabric's first switch
    };
    CxlBuilder(EventLoop& loop, const Graph& g, Fabric f, MemoryWindow& w, uint64_t seed, uint64_t stopAfter)
        : loop_(loop), g_(g), f_(f), w_(w), seed_(seed), stopAfter_(stopAfter) {}

    // `port`: the connection leaving the port; `name`: what reports call the
    // device there ("": its component's name; a switch always keeps its own).
    // Returns the link it built and, in `below`, what sits below it.
    CxlLink* build(const Connection& port, std::string name, uint64_t seed, MemEndpoint*& below) {
        const Node& link = g_.below(port);
        const Node& dev = g_.pastLink(port);
        if (name.empty()) name = dev.name;
        if (dev.type == "switch" && g_.portBased(dev.name)) {
            const Connection* edge = g_.leaving(link.name, "down").at(0);
            if (!f_.pbrEdges.count(edge))
                for (const Graph::PbrFabric& f : g_.pbrFabrics())
                    if (std::find(f.edgeConn.begin(), f.edgeConn.end(), edge) != f.edgeConn.end()) buildFabric(f);
            for (const auto& d : f_.devices)  // the window's media limit: every device of the fabric
                if (f_.pbrFabricOf.count(d.get()) && f_.pbrFabricOf.at(d.get()) == f_.pbrFabricOf.at(edge))
                    w_.reach.push_back(d.get());
            below = f_.pbrEdges.at(edge).second;
            return f_.pbrEdges.at(edge).first;
        }
        if (dev.type == "switch") {
            CxlSwitch* sw = find(dev.name);
            const bool fresh = !sw;
            if (fresh) {
                f_.switches.push_back(std::make_unique<CxlSwitch>(loop_, dev.params.SwitchParams_, dev.name));
                sw = f_.switches.back().get();
                for (const Connection* k : g_.leaving(dev.name, "dsp")) {
                    MemEndpoint* child = nullptr;
                    CxlLink* l = build(*k, "", seed_ + 7919 * ++deeper_, child);
                    sw->addPort(l, child);
                }
                // Software committed the upstream port's HDM decoders: they route, not its interleave.
                if (g_.decoders.count(dev.name))
                    sw->routeBy(std::make_unique<CommittedRoutes>(dev.name, g_.switchRegions(dev.name),
                                                                  g_.decoders.at(dev.name).poison));
            } else {
                reachBelow(dev.name);
            }
            // The first upstream port keeps the names a one-host switch has.
            const uint32_t u = sw->upstreamPorts();
            const std::string at = u ? dev.name + ".up" + std::to_string(u) : dev.name;
            f_.links.push_back(std::make_unique<CxlLink>(link.params.LinkParams_, at + ".link", seed));
            f_.switchLinks.push_back(f_.links.back().get());
            f_.linkNames.push_back(link.name);
            below = &sw->addUpstream(*f_.links.back(), u ? at : dev.name + ".up");
            return f_.links.back().get();
        }
        f_.links.push_back(std::make_unique<CxlLink>(link.params.LinkParams_, name + ".link", seed));
        f_.linkNames.push_back(link.name);
        f_.devices.push_back(std::make_unique<Type3Device>(loop_, dev.params.DeviceParams_, dev.params.DramParams_,
                                                           *f_.links.back(), name));
        f_.deviceNames[f_.devices.back().get()] = dev.name;
        w_.reach.push_back(f_.devices.back().get());
        f_.devices.back()->stopAfter(stopAfter_);
        below = f_.devices.back().get();
        return f_.links.back().get();
    }

  private:
    CxlLink* newLink(const Node& link, const std::string& name, bool reverse = false) {
        auto& v = reverse ? f_.reverse : f_.links;
        v.push_back(std::make_unique<CxlLink>(link.params.LinkParams_, name, seed_ + 7919 * ++deeper_));
        (reverse ? f_.reverseNames : f_.linkNames).push_back(link.name);
        return v.back().get();
    }
    // A PBR fabric at once, whichever host reaches it first: its switches,
    // its inter-switch links (a link each way), its devices, and an upstream
    // port for each host edge, then each switch's routes by PID.
    void buildFabric(const Graph::PbrFabric& f) {
        const size_t n = f.g.switches.size();
        std::vector<CxlSwitch*> sw;
        for (const std::string& s : f.g.switches) {
            f_.switches.push_back(std::make_unique<CxlSwitch>(loop_, g_.find(s)->params.SwitchParams_, s));
            sw.push_back(f_.switches.back().get());
        }
        // Each switch's graph port -> its downstream role (requests out) and upstream role (requests in).
        std::vector<std::map<uint32_t, std::pair<int, int>>> role(n);
        auto port = [&](uint32_t s, uint32_t p) -> std::pair<int, int>& {
            return role[s].emplace(p, std::make_pair(-1, -1)).first->second;
        };
        auto label = [&](uint32_t s, uint32_t p) { return f.g.ports[s][p]; };
        const std::string& key = f.g.switches[0];
        for (size_t i = 0; i < f.g.isls.size(); ++i) {
            const auto& l = f.g.isls[i];
            const Node& ln = *g_.find(f.isls[i].link);
            CxlLink* fwd = newLink(ln, ln.name);
            CxlLink* rev = newLink(ln, ln.name + ".rev", true);
            MemEndpoint& ub = sw[l.b]->addUpstream(*fwd, f.g.switches[l.b] + "." + label(l.b, l.pb));
            port(l.b, l.pb).second = int(sw[l.b]->upstreamPorts() - 1);
            sw[l.a]->addPort(fwd, &ub);
            port(l.a, l.pa).first = int(sw[l.a]->ports() - 1);
            MemEndpoint& ua = sw[l.a]->addUpstream(*rev, f.g.switches[l.a] + "." + label(l.a, l.pa) + ".in");
            port(l.a, l.pa).second = int(sw[l.a]->upstreamPorts() - 1);
            sw[l.b]->addPort(rev, &ua);
            port(l.b, l.pb).first = int(sw[l.b]->ports() - 1);
        }
        CxlSwitch::PbrTables t;
        std::vector<std::pair<uint32_t, MemEndpoint*>> devs;
        std::vector<std::map<uint32_t, int>> devPid(n);
        for (size_t e = 0; e < f.g.edges.size(); ++e) {
            const auto& x = f.g.edges[e];
            const Connection* k = f.edgeConn[e];
            if (x.host) {
                const Node& ln = *g_.find(k->from.comp);
                const std::string at = f.g.switches[x.sw] + "." + label(x.sw, x.port);
                CxlLink* l = newLink(ln, at + ".link");
                MemEndpoint& u = sw[x.sw]->addUpstream(*l, at);
                port(x.sw, x.port).second = int(sw[x.sw]->upstreamPorts() - 1);
                sw[x.sw]->labelUpstream(sw[x.sw]->upstreamPorts() - 1, label(x.sw, x.port), int(x.pid));
                f_.pbrEdges[k] = {l, &u};
                f_.pbrFabricOf[k] = key;
                continue;
            }
            const Node& ln = g_.below(*k);
            const Node& dev = g_.pastLink(*k);
            CxlLink* l = newLink(ln, dev.name + ".link");
            f_.devices.push_back(std::make_unique<Type3Device>(loop_, dev.params.DeviceParams_, dev.params.DramParams_, *l, dev.name));
            Type3Device* d = f_.devices.back().get();
            f_.deviceNames[d] = dev.name;
            f_.pbrFabricOf[d] = key;
            d->stopAfter(stopAfter_);
            sw[x.sw]->addPort(l, d);
            port(x.sw, x.port).first = int(sw[x.sw]->ports() - 1);
            devPid[x.sw][x.port] = int(x.pid);
            devs.emplace_back(x.pid, d);
        }
        // Every host's decoder interleaves over the devices in PID order.
        std::sort(devs.begin(), devs.end());
        t.devIndex.assign(kPbrPids, 0xff);
        for (size_t i = 0; i < devs.size(); ++i) {
            t.devices.push_back(devs[i].second);
            t.devicePids.push_back(uint16_t(devs[i].first));
            t.devIndex[devs[i].first] = uint8_t(i);
        }
        for (uint32_t s = 0; s < n; ++s) {
            CxlSwitch::PbrTables mine = t;
            mine.toPort.assign(kPbrPids, 0xff);
            mine.toUsp.assign(kPbrPids, 0xff);
            for (const auto& pr : role[s]) {
                if (pr.second.first >= 0) sw[s]->labelPort(uint32_t(pr.second.first), label(s, pr.first),
                                                      devPid[s].count(pr.first) ? devPid[s][pr.first] : -1);
                if (pr.second.first >= 0 && pr.second.second >= 0)  // an inter-switch link
                    sw[s]->labelUpstream(uint32_t(pr.second.second), label(s, pr.first), -1);
            }
            for (size_t e = 0; e < f.g.edges.size(); ++e) {
                const auto& x = f.g.edges[e];
                const std::pair<int, int> r = role[s].at(f.routes.out[s][e]);
                (x.host ? mine.toUsp : mine.toPort)[x.pid] = uint8_t(x.host ? r.second : r.first);
            }
            sw[s]->setPbr(std::move(mine));
        }
    }
    // The devices below a switch built already, for the window's media limit.
    void reachBelow(const std::string& sw) {
        for (const Connection* k : g_.leaving(sw, "dsp")) {
            const Node& n = g_.pastLink(*k);
            if (n.type == "switch") reachBelow(n.name);
            for (auto& d : f_.devices)
                if (d->where() == n.name) w_.reach.push_back(d.get());
        }
    }
    CxlSwitch* find(const std::string& name) const {
        for (auto& s : f_.switches)
            if (s->where() == name) return s.get();
        return nullptr;
    }
    EventLoop& loop_;
    const Graph& g_;
    Fabric f_;
    MemoryWindow& w_;
    uint64_t seed_, stopAfter_;
    uint64_t deeper_ = 0;  // links below switches built so far: each its own seed
};

}  // namespace

void System::buildCxl(HostPart& h, MemoryWindow& w, uint32_t cxlWindows) {
    if (!p_.graph) throw ConfigError(w.p.name + ": no graph to build the window's CXL devices from");
    const Graph& g = *p_.graph;
    const std::string& n = w.p.name;
    // A map window decodes [base, base + size); the one window of a
    // single-memory system the whole 52-bit space, as it always did.
    w.bridge = w.p.size ? std::make_unique<HostBridge>(loop, w.p.bridge, n + ".bridge", w.p.base, w.p.size)
                        : std::make_unique<HostBridge>(loop, w.p.bridge, n + ".bridge");
    const auto ports = g.leaving(w.p.node, "root_port");
    const uint64_t share =
        HdmDecoder::share(w.p.size ? w.p.size : HdmDecoder::kMaxWindow, ports.size(), w.p.bridge.interleave_bytes);
    // The first CXL window keeps the seeds a single-memory system has.
    const uint64_t base = p_.seed + 1000003ull * cxlWindows;
    CxlBuilder b(loop, g,
                 {links_, devices_, switches_, switchLinks_, linkNames_, deviceNames_, reverse_, reverseNames_, pbrEdges_,
                  pbrFabricOf_},
                 w, base + 17 * ports.size(),
                 p_.fault_device_stops_after);
    for (uint32_t i = 0; i < ports.size(); ++i) {
        // Single-memory systems keep their names (cxl, or cxl0, cxl1, ...); each
        // root port's link is named after its device, so traces and messages tell the ports apart.
        const std::string name =
            ports.size() == 1 ? n : h.mapped ? n + ".dev" + std::to_string(i) : n + std::to_string(i);
        MemEndpoint* below = nullptr;
        CxlLink* l = b.build(*ports[i], name, base + 17 * i, below);
        w.bridge->addPort(l, below);
        below->bind(h.index, share, w.p.qos);
    }
    // Software committed this bridge's HDM decoders: they route, not its interleave parameters.
    if (g.decoders.count(w.p.node))
        w.bridge->routeBy(std::make_unique<CommittedRoutes>(n + ".bridge", g.regions(w.p.node),
                                                            g.decoders.at(w.p.node).poison));
    w.target = w.bridge.get();
}

void System::buildHost(HostPart& h, const HostDesc& d, uint32_t& cxlWindows) {
    h.p = d;
    h.mapped = !d.windows.empty();
    const std::vector<WindowParams> map = d.addressMap();
    // The host's DRAM is named after its component (a window that maps it has that name too).
    const bool several = !p_.peers.empty();
    h.localName = d.local_dram_name.empty() ? "local_dram" : d.local_dram_name;
    h.localDram = std::make_unique<DramController>(loop, d.local_dram, h.localName);
    h.windows.resize(map.size());
    for (size_t k = 0; k < map.size(); ++k) {
        MemoryWindow& w = h.windows[k];
        w.p = map[k];
        if (w.p.kind == MemoryKind::LocalDram) {
            w.target = h.localDram.get();
        } else if (w.p.kind == MemoryKind::RemoteNuma) {
            w.remote = std::make_unique<InterSocket>(loop, w.p.intersocket, w.p.remote_dram);
            w.remoteDram = p_.graph ? p_.graph->below(*p_.graph->leaving(w.p.node, "down").at(0)).name
                                    : w.p.node + ".dram";
            w.target = w.remote.get();
        } else {
            buildCxl(h, w, cxlWindows++);
        }
    }
    h.uncore = std::make_unique<Uncore>(loop, d.host);
    h.uncore->setHost(h.index);
    // With several hosts, each host's queues carry its name in stall reports.
    const std::string prefix = several ? d.name + "." : "";
    for (MemoryWindow& w : h.windows) {
        // DRAM behind the window sees offsets into it; a host bridge decodes host addresses.
        const bool rebase = w.p.kind != MemoryKind::CxlType3;
        const Stage full = w.p.kind == MemoryKind::LocalDram    ? kStageMediaQueue
                           : w.p.kind == MemoryKind::RemoteNuma ? kStageLinkDown
                                                                 : kStageHostPort;
        h.uncore->addWindow(w.p.name, prefix + (h.mapped ? w.p.name : "memory"), w.p.base, w.p.end(), w.target,
                            rebase, full, w.p.kind != MemoryKind::RemoteNuma);
        w.target->setRequester(h.uncore.get());
    }
    h.uncore->setPageTables(h.localDram.get());
    h.localDram->setRequester(h.uncore.get());
}

System::System(const SystemParams& p, bool check) : p_(p) {
    p_.validate();
    uint32_t cxlWindows = 0;
    for (size_t i = 0; i <= p_.peers.size(); ++i) {
        hosts_.push_back(std::make_unique<HostPart>());
        hosts_.back()->index = uint8_t(i);
        buildHost(*hosts_.back(), i ? p_.peers[i - 1] : static_cast<const HostDesc&>(p_), cxlWindows);
    }
    // Shared devices snoop with messages from the run's pool.
    for (size_t i = 0; i < devices_.size(); ++i) devices_[i]->share(pool, p_.seed + 7727 * (i + 1));
    if (!p_.accelerators.empty()) buildAccelerators(check);
    for (size_t i = 1; i < hosts_.size(); ++i) {
        const HostDesc& d = p_.peers[i - 1];
        if (d.peer_accelerators.empty()) continue;
        if (!p_.peer_accelerators_run)
            throw ConfigError(d.peer_home_node + ": CXL.cache devices below a host other than the first (" + d.name +
                              ") run only in shared runs (simcxl.shared, simcxl run shared); allowed here: join them "
                              "to the first host, " + p_.name);
        buildPeerAccelerators(i);
    }
}

void System::buildPeerAccelerators(size_t i) {
    const HostDesc& d = p_.peers[i - 1];
    PeerCache pc;
    pc.host = i;
    HostPart& h = *hosts_[i];
    pc.home.reset(new HomeAgent(loop, d.peer_home, h.uncore->addInput(nullptr, 0, 0), pool, nullptr));
    for (uint32_t k = 0; k < d.peer_accelerators.size(); ++k) {
        const AccelDeviceParams& a = d.peer_accelerators[k];
        pc.links.emplace_back(new CxlLink(a.link, a.prefix() + "link", p_.seed * 131 + 7919 * i + k));
        pc.accels.emplace_back(new Accelerator(loop, uint16_t(k), a.cache, a.accel, a.dma, a.media, 0, *pc.links.back(),
                                               *pc.home, pool, nullptr, a.instance(0, k)));
        pc.home->addDevice(pc.accels.back().get(), pc.links.back().get(), a.dma);
        pc.accels.back()->setWatch(&watch);
    }
    pc.home->setWatch(&watch);
    peerCaches.push_back(std::move(pc));
}

int HostPart::windowIndex(const std::string& name) const {
    for (size_t i = 0; i < windows.size(); ++i)
        if (windows[i].p.name == name) return int(i);
    return -1;
}

Type3Device& System::device(const std::string& name) const {
    std::string all;
    for (const auto& d : devices_) {
        if (d->where() == name) return *d;
        all += (all.empty() ? "" : ", ") + d->where();
    }
    throw ConfigError("device '" + name + "' is not a Type-3 device of the system; allowed: " + all);
}

int System::hostIndex(const std::string& name) const {
    for (size_t i = 0; i < hosts_.size(); ++i)
        if (hosts_[i]->p.name == name) return int(i);
    return -1;
}

void System::run() {
    loop.watch(&watchdog_);
    if (home || !peerCaches.empty()) {
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
    std::vector<std::pair<const HomeParams*, const AccelDeviceParams*>> all;
    for (auto& d : p_.accelerators) all.push_back({&p_.home, &d});
    for (const HostDesc& h : p_.peers)
        for (auto& d : h.peer_accelerators) all.push_back({&h.peer_home, &d});
    for (auto& hd : all) {
        const AccelDeviceParams& d = *hd.second;
        const HomeParams& home = *hd.first;
        longest = std::max(longest, home.latency_ns + home.host_hit_ns + d.cache.latency_ns +
                                        d.cache.snoop_latency_ns + d.accel.bias_flip_ns + d.accel.memory_latency_ns +
                                        d.dma.setup_ns + d.dma.engine_latency_ns + d.dma.poll_interval_ns +
                                        d.dma.interrupt_ns + d.link.phy_latency_ns + d.link.replay_latency_ns +
                                        p_.local_dram.tRFC_ns + d.media.tRFC_ns);
    }
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
        for (auto& s : cacheSwitches) s->oldest(o);
        if (home) home->oldest(o);
        for (const PeerCache& pc : peerCaches) {
            for (auto& d : pc.accels) d->oldest(o);
            pc.home->oldest(o);
        }
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
            msg += "an unknown place (" + (home ? home->describe() : peerCaches[0].home->describe()) + ")";
        throw StallError(msg);
    }
}

bool System::quiet() const {
    if (home && !home->quiet()) return false;
    for (auto& s : cacheSwitches)
        if (!s->quiet()) return false;
    for (auto& d : accels)
        if (!d->quiet()) return false;
    for (const PeerCache& pc : peerCaches) {
        if (!pc.home->quiet()) return false;
        for (auto& d : pc.accels)
            if (!d->quiet()) return false;
    }
    return true;
}

double System::mediaPeakBytesPerSec(const std::vector<uint32_t>& which, size_t host) const {
    const HostPart& h = *hosts_[host];
    double s = 0;
    for (size_t i = 0; i < h.windows.size(); ++i) {
        if (!which.empty() && std::find(which.begin(), which.end(), uint32_t(i)) == which.end()) continue;
        const MemoryWindow& w = h.windows[i];
        if (w.remote) s += w.remote->dram().peakBytesPerSec();
        else if (w.bridge)
            for (const Type3Device* d : w.reach) s += d->media().peakBytesPerSec();
        else s += h.localDram->peakBytesPerSec();
    }
    return s;
}

void System::resetStats() {
    const Tick t = loop.now();
    for (auto& h : hosts_) {
        h->localDram->resetStats(t);
        for (MemoryWindow& w : h->windows) {
            if (w.remote) {
                w.remote->dram().resetStats(t);
                w.remote->out_.resetStats();
                w.remote->back_.resetStats();
            }
            if (w.bridge) w.bridge->resetStats();
        }
        h->uncore->resetStats();
    }
    for (auto& l : links_) {
        l->m2s_.resetStats();
        l->s2m_.resetStats();
    }
    for (auto& d : devices_) d->resetStats(t);
    for (auto& sw : switches_) sw->resetStats();
}

void System::viaSwitch(const AccelDeviceParams& d, uint32_t i) {
    size_t s = 0;
    while (s < cacheSwitches.size() && cacheSwitches[s]->where() != d.switchNode) ++s;
    if (s == cacheSwitches.size()) {
        cacheUpLinks.emplace_back(new CxlLink(d.upLink, d.upLinkNode, p_.seed * 131 + 7001 + s));
        cacheSwitches.emplace_back(new CacheSwitch(loop, d.sw, *cacheUpLinks.back(), *home, d.switchNode));
    }
    Accelerator& a = *accels.back();
    a.viaSwitch(*cacheSwitches[s]);
    cacheSwitches[s]->addPort(*accelLinks.back(), a, uint16_t(i));
    home->addDevice(&a, cacheUpLinks[s].get(), d.dma, cacheSwitches[s].get());
}

void System::buildAccelerators(bool check) {
    if (check) checker.reset(new CoherenceChecker(p_.accelInstances() + 1));
    // The home reaches host memory through the uncore: the address map routes
    // each line to its window (the DRAM, a CXL expander, the remote socket).
    // Its own pipeline (home.latency_ns) is the whole host-side cost.
    home.reset(new HomeAgent(loop, p_.home, host().uncore->addInput(nullptr, 0, 0), pool, checker.get()));
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
            if (d.switchNode.empty())
                home->addDevice(accels.back().get(), accelLinks.back().get(), d.dma);
            else
                viaSwitch(d, i);
            accels.back()->setWatch(&watch);
        }
    }
    home->setWatch(&watch);
    // A switch's upstream link: CXL.mem's credits its own (as any link's);
    // CXL.cache's and CXL.io's toward the devices the switch's receive
    // buffers (port_queue each), those toward the host the home's for that
    // root port, the most any device below configures for its own link.
    for (size_t s = 0; s < cacheSwitches.size(); ++s) {
        const LinkParams& ul = cacheUpLinks[s]->params();
        uint32_t cr[kNumChannels] = {};
        for (size_t i = 0; i < accels.size(); ++i) {
            const AccelDeviceParams& d = p_.accelerators[accelEntry[i]];
            if (d.switchNode != cacheSwitches[s]->where()) continue;
            uint32_t own[kNumChannels];
            channelCredits(d.cache, d.link, d.dma, own);
            for (int c = kD2HReq; c < kNumChannels; ++c)
                cr[c] = isUpstream(Channel(c)) ? std::max(cr[c], own[c]) : d.sw.port_queue;
            cacheUpLinks[s]->setTlpOverhead(d.dma.tlp_overhead_bytes);
        }
        linkMemCredits(ul, cr);
        cr[kM2SBIRsp] = ul.credits_birsp;
        cr[kS2MBISnp] = ul.credits_bisnp;
        cacheUpLinks[s]->setCredits(cr);
    }
}

}  // namespace cxlcore
