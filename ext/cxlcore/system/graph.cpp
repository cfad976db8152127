#include "cxlcore/system/graph.hpp"

#include "cxlcore/fabric/hdm_decoder.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace cxlcore {

namespace {

const std::vector<std::string> kMem{"cxl.mem"}, kCache{"cxl.cache"}, kAny{"cxl.mem", "cxl.cache"};

PortSpec memUp(const std::string& name = "up") { return {name, PortChannel::Mem, {}, false, false, true, ""}; }

std::vector<TypeSpec> makeTypes() {
    const GroupSpec accelGroups[] = {{"cache", "DCacheParams"}, {"accel", "AccelParams"}, {"dma", "DmaParams"},
                                     {"media", "DramParams"}};
    std::vector<TypeSpec> t;
    t.push_back({"host",
                 "cores with their caches, TLBs and uncore (mesh, LLC miss path); its address map is its mem "
                 "connections, each a window [base, base + size)",
                 {{"", "HostParams"}},
                 {{"mem", PortChannel::Mem, {}, true, true, true, "a window of the host physical address map"},
                  {"local", PortChannel::Mem, {}, true, false, false,
                   "the host's DRAM when no window maps it (it holds the page tables)"},
                  {"home", PortChannel::Mem, {}, true, false, false, "the CXL.cache home agent"}},
                 {}});
    t.push_back({"dram", "a DRAM controller and its channels (DDR4/DDR5 timing, refresh, write drain)",
                 {{"", "DramParams"}}, {memUp()}, {}});
    t.push_back({"remote_socket", "the other socket's home agent behind a UPI-like link; its DRAM is on down",
                 {{"", "InterSocketParams"}},
                 {memUp(), {"down", PortChannel::Mem, {}, true, false, true, ""}}, {}});
    t.push_back({"host_bridge", "a CXL host bridge: HDM decoder interleaving its window over its root ports",
                 {{"", "BridgeParams"}},
                 {memUp(), {"root_port", PortChannel::Cxl, kMem, true, true, true, "one root port each, in index order"}},
                 {{"root_ports", "the number of its root_port connections"},
                  {"interleave_ways", "the number of its root_port connections"}}});
    t.push_back({"switch",
                 "a CXL switch: a virtual CXL switch per upstream port, each bound to the hosts that reach it "
                 "there, whose HDM decoder interleaves what arrives over the downstream ports (hierarchy-based "
                 "routing), with per-port queues, credits and arbitration; below a home agent's root port, a "
                 "CXL.cache switch routing to up to 16 accelerators by CacheID",
                 {{"", "SwitchParams"}},
                 {{"up", PortChannel::Cxl, kAny, false, true, true,
                   "upstream ports (up to 32), one link each: one for each host (or switch above) that reaches it; "
                   "below a home agent's root port, one"},
                  {"dsp", PortChannel::Cxl, kAny, true, true, true,
                   "downstream ports (1, 2, 3, 4, 6, 8, 12 or 16), one link each, in index order; below a home "
                   "agent's root port 1 to 16, an accelerator on each"}},
                 {}});
    t.push_back({"home_agent", "the host's CXL.cache home agent: ordering point and snoop filter",
                 {{"", "HomeParams"}},
                 {memUp("host"),
                  {"root_port", PortChannel::Cxl, kCache, true, true, true, "a root port for each accelerator"}},
                 {}});
    t.push_back({"link", "a CXL link: flits, credits, CRC and replay, each direction its own",
                 {{"", "LinkParams"}},
                 {{"up", PortChannel::Cxl, kAny, false, false, true, ""}, {"down", PortChannel::Cxl, kAny, true, false, true, ""}},
                 {}});
    t.push_back({"type3",
                 "a Type-3 memory expander: controller and media; with device.logical_devices > 1 a "
                 "multi-logical device (MLD) whose LDs go one to each host reaching it through a switch; with "
                 "device.shared = 1 one region all of them map, coherent by HDM-DB back-invalidate",
                 {{"device", "DeviceParams"}, {"media", "DramParams"}},
                 {{"up", PortChannel::Cxl, kMem, false, false, true, ""}}, {}});
    t.push_back({"accelerator", "a Type-1 or Type-2 device: coherent cache, DMA engine, (Type-2) device memory",
                 {std::begin(accelGroups), std::end(accelGroups)},
                 {{"up", PortChannel::Cxl, kCache, false, false, true, ""}}, {}});
    TypeSpec nic{"nic", "a CXL-NIC: a Type-1 device whose atomic and RPC engines work in its cache",
                 {std::begin(accelGroups), std::end(accelGroups)},
                 {{"up", PortChannel::Cxl, kCache, false, false, true, ""}}, {}};
    nic.groups.push_back({"nic", "NicParams"});
    t.push_back(nic);
    return t;
}

// Which types a down-facing port may lead to (types.py says the same in words).
const std::map<std::string, std::set<std::string>>& allowedBelow() {
    static const std::map<std::string, std::set<std::string>> m{
        {"host.mem", {"dram", "remote_socket", "host_bridge"}},
        {"host.local", {"dram"}},
        {"host.home", {"home_agent"}},
        {"remote_socket.down", {"dram"}},
        {"host_bridge.root_port", {"link"}},
        {"home_agent.root_port", {"link"}},
        {"link.down", {"type3", "accelerator", "nic", "switch"}},
        {"switch.dsp", {"link"}},
    };
    return m;
}

void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

// The home agent root port a switch hangs below (through its upstream
// link): a CXL.cache switch. nullptr: a CXL.mem switch.
const Connection* homePortAbove(const Graph& g, const Node& sw) {
    for (const Connection& k : g.connections) {
        if (k.to.comp != sw.name || g.find(k.from.comp)->type != "link") continue;
        for (const Connection& r : g.connections)
            if (r.to.comp == k.from.comp && g.find(r.from.comp)->type == "home_agent") return &r;
    }
    return nullptr;
}

// A switch below a home agent's root port: one upstream port, hierarchy
// routing by CacheID, an accelerator (one device) on each of 1 to 16 downstream ports.
void checkCacheSwitch(const Graph& g, const Node& sw, const Connection& rp) {
    const std::string at = rp.from.str();
    uint32_t ups = 0;
    for (const Connection& k : g.connections) ups += k.to.comp == sw.name;
    need(ups == 1, sw.name + ".up: " + std::to_string(ups) + " upstream links on a switch below " + at +
                       " (CXL.cache); allowed: one, the link from that root port");
    need(sw.params.SwitchParams_.routing == 0,
         sw.name + ".routing = pbr: a switch below " + at + " (CXL.cache) routes by CacheID; allowed: hbr");
    need(sw.params.SwitchParams_.weighted_arbitration == 0,
         sw.name + ".weighted_arbitration = 1: a switch below " + at + " (CXL.cache) sends messages up in the "
                   "order they arrived; allowed: 0");
    need(sw.params.SwitchParams_.egress_congestion == 0,
         sw.name + ".egress_congestion = 1: a switch below " + at + " (CXL.cache) carries no DevLoad to raise; "
                   "allowed: 0");
    const auto dsps = g.leaving(sw.name, "dsp");
    need(dsps.size() <= 16, sw.name + ".dsp: " + std::to_string(dsps.size()) + " CXL.cache devices below " + at +
                                "; allowed: 1 to 16 (CXL 3.x CacheIDs)");
    for (const Connection* k : dsps) {
        const Node& dev = g.pastLink(*k);
        need(dev.type == "accelerator", k->from.str() + " -> " + g.below(*k).name + " -> " + dev.name + ": a " +
                                            dev.type + " below a switch on " + at + " (CXL.cache) is not modelled; "
                                            "allowed: an accelerator (Type-1 or Type-2) through a link on each "
                                            "downstream port");
        need(dev.params.AccelParams_.devices == 1,
             dev.name + ".accel.devices = " + std::to_string(dev.params.AccelParams_.devices) + ": below " + sw.name +
                 " each device has a downstream port of its own; allowed: 1 (a component for each)");
    }
}

// A component's group against the schema, named by its component path; a
// bridge with the root ports and interleave ways its `rootPorts` connections give it.
void validateGroup(const Node& c, const GroupSpec& g, uint32_t rootPorts) {
    const std::string where = g.key.empty() ? c.name : c.name + "." + g.key;
    if (g.schema == "BridgeParams") {
        BridgeParams b = c.params.BridgeParams_;
        b.root_ports = b.interleave_ways = rootPorts;
        b.validate(where);
        return;
    }
#define CXL_VALIDATE_GROUP(Struct, LIST) \
    if (g.schema == #Struct) c.params.Struct##_.validate(where);
    CXL_PARAM_GROUPS(CXL_VALIDATE_GROUP)
#undef CXL_VALIDATE_GROUP
}

}  // namespace

const PortSpec* TypeSpec::port(const std::string& n) const {
    for (const PortSpec& p : ports)
        if (p.name == n) return &p;
    return nullptr;
}

const std::vector<TypeSpec>& componentTypes() {
    static const std::vector<TypeSpec> types = makeTypes();
    return types;
}

const TypeSpec* findType(const std::string& name) {
    for (const TypeSpec& t : componentTypes())
        if (t.name == name) return &t;
    return nullptr;
}

const TypeSpec& typeOf(const std::string& comp, const std::string& type) {
    if (const TypeSpec* t = findType(type)) return *t;
    std::string list;
    for (const TypeSpec& s : componentTypes()) list += (list.empty() ? "" : ", ") + s.name;
    throw ConfigError(comp + ".type = '" + type + "' is not a component type; allowed: " + list);
}

std::string PortRef::str() const {
    return comp + "." + port + (index >= 0 ? "[" + std::to_string(index) + "]" : "");
}

const Node* Graph::find(const std::string& n) const {
    for (const Node& c : components)
        if (c.name == n) return &c;
    return nullptr;
}

std::vector<const Connection*> Graph::leaving(const std::string& comp, const std::string& port) const {
    std::vector<const Connection*> out;
    for (const Connection& c : connections)
        if (c.from.comp == comp && c.from.port == port) out.push_back(&c);
    std::stable_sort(out.begin(), out.end(),
                     [](const Connection* a, const Connection* b) { return a->from.index < b->from.index; });
    return out;
}

const Node& Graph::below(const Connection& c) const { return *find(c.to.comp); }

const Node& Graph::pastLink(const Connection& port) const { return below(*leaving(below(port).name, "down").at(0)); }

std::vector<const Node*> Graph::hosts() const {
    std::vector<const Node*> out;
    for (const Node& c : components)
        if (c.type == "host") out.push_back(&c);
    return out;
}

std::set<std::string> Graph::reachedFrom(const std::string& comp) const {
    // Port-based routing carries requests both ways on an inter-switch link between PBR switches.
    std::vector<SwitchLink> both;
    for (const SwitchLink& l : switchLinks())
        if (portBased(l.upper) && portBased(l.lower)) both.push_back(l);
    std::set<std::string> reached{comp};
    for (bool grew = true; grew;) {
        grew = false;
        for (const Connection& k : connections)
            if (reached.count(k.from.comp) && reached.insert(k.to.comp).second) grew = true;
        for (const SwitchLink& l : both)
            if (reached.count(l.lower)) grew |= reached.insert(l.link).second | reached.insert(l.upper).second;
    }
    return reached;
}

void Graph::check() const {
    std::set<std::string> names;
    for (const Node& c : components) {
        need(!c.name.empty(), "a component has an empty name; give every component a name");
        need(names.insert(c.name).second, c.name + ": two components of that name; rename one");
        typeOf(c.name, c.type);
    }
    const std::vector<const Node*> hs = hosts();
    need(!hs.empty(), "system " + name + ": no component of type host; add one and join its mem port");
    need(hs.size() <= kMaxHosts, hs[std::min<size_t>(hs.size(), kMaxHosts + 1) - 1]->name + ": " +
                                     std::to_string(hs.size()) + " hosts; allowed: 1 to " + std::to_string(kMaxHosts));
    // (component.port) -> the index of each connection on it (-1: none given).
    std::map<std::string, std::vector<int>> used;
    auto end = [&](const PortRef& r, bool down) -> const PortSpec& {
        const Node* c = find(r.comp);
        need(c != nullptr, r.str() + ": no component named " + r.comp + "; add it to components, or name one that is there");
        const PortSpec* p = findType(c->type)->port(r.port);
        if (!p) {
            std::string list;
            for (const PortSpec& s : findType(c->type)->ports) list += (list.empty() ? "" : ", ") + s.name;
            throw ConfigError(r.str() + ": a " + c->type + " has no port " + r.port + "; allowed: " + list);
        }
        need(p->multi || r.index < 0, r.str() + ": " + r.port + " is a single port and takes no index; remove the index");
        need(p->down == down, r.str() + (down ? " is where requests arrive; a connection goes from a port they leave by: swap from and to"
                                              : " is a port requests leave by; a connection goes to a port they arrive at: swap from and to"));
        std::vector<int>& u = used[r.comp + "." + r.port];
        need(p->multi || u.empty(), r.str() + ": two things on one port; allowed: one connection (only switches "
                                              "share devices between hosts)");
        need(r.index < 0 || std::find(u.begin(), u.end(), r.index) == u.end(),
             r.str() + ": two things on one port; allowed: one connection on each index");
        need(u.empty() || (u[0] < 0) == (r.index < 0),
             r.comp + "." + r.port + ": give every connection an index or none");
        u.push_back(r.index);
        return *p;
    };
    for (const Connection& k : connections) {
        const PortSpec& a = end(k.from, true);
        const PortSpec& b = end(k.to, false);
        need(a.channel == b.channel, k.from.str() + " -> " + k.to.str() + ": channel mismatch (" +
                                         (a.channel == PortChannel::Mem ? "mem" : "cxl") + " to " +
                                         (b.channel == PortChannel::Mem ? "mem" : "cxl") + "); join ports of one channel ('simcxl topology types' lists them)");
        const std::string& ft = find(k.from.comp)->type;
        const std::string& tt = find(k.to.comp)->type;
        auto ok = allowedBelow().find(ft + "." + k.from.port);
        need(ok != allowedBelow().end() && ok->second.count(tt),
             k.from.str() + " -> " + k.to.str() + ": a " + tt + " cannot sit below " + ft + "." + k.from.port + "; join it where docs/topology.md allows");
        need(!k.hasQos || (ft == "host" && k.from.port == "mem" && tt == "host_bridge"),
             k.from.str() + " -> " + k.to.str() + ": qos_limit and qos_allocation belong to host.mem connections "
                                                  "onto a host_bridge (a host's logical devices on CXL memory)");
        need(!k.hasQos || (k.qos.limit > 0 && k.qos.allocation <= k.qos.limit),
             k.from.str() + " -> " + k.to.str() + ": qos_limit = " + fmtNum(k.qos.limit) + ", qos_allocation = " +
                 fmtNum(k.qos.allocation) + " is not allowed; allowed: 0 < qos_limit <= 1 and "
                                            "0 <= qos_allocation <= qos_limit");
        need(!k.window || (ft == "host" && k.from.port == "mem"),
             k.from.str() + " -> " + k.to.str() + ": base and size belong to host.mem connections only; remove them");
    }
    for (const Node& c : components) {
        for (const PortSpec& p : findType(c.type)->ports)
            need(!p.required || used.count(c.name + "." + p.name), c.name + "." + p.name + ": port left open; add a connection to it");
        auto rp = used.find(c.name + ".root_port");
        for (const GroupSpec& g : findType(c.type)->groups)
            validateGroup(c, g, rp == used.end() ? 0 : uint32_t(rp->second.size()));
    }
    // Below a root port or a switch's downstream port: a link, then a device
    // speaking that port's protocol.
    for (const Connection& k : connections) {
        if (k.from.port != "root_port" && k.from.port != "dsp") continue;
        const Node& link = below(k);
        const Node& dev = pastLink(k);
        const Node& above = *find(k.from.comp);
        const std::string proto = above.type == "switch"
                                      ? (homePortAbove(*this, above) ? "cxl.cache" : "cxl.mem")
                                      : findType(above.type)->port(k.from.port)->protocols.at(0);
        const std::vector<std::string>& speaks = findType(dev.type)->port("up")->protocols;
        if (dev.type == "switch" && k.from.port == "root_port") {
            // A switch speaks what the root port above it does.
            if (above.type == "home_agent") checkCacheSwitch(*this, dev, k);
            continue;
        }
        need(std::find(speaks.begin(), speaks.end(), proto) != speaks.end(),
             k.from.str() + " -> " + link.name + " -> " + dev.name + ".up: protocol mismatch (" + proto +
                 (k.from.port == "dsp" ? " downstream port, a " : " root port, a ") + dev.type + " speaks " +
                 speaks.at(0) + "); join it below a port of that protocol");
    }
    checkSwitchFabric();
    // Everything hangs below a host: a component no path reaches would never
    // be built. A Type-3 device that several hosts reach gives each a
    // logical device; a host reaches a switch by one upstream port.
    std::vector<std::set<std::string>> reach;
    std::map<std::string, std::vector<std::string>> reachedBy;
    std::string hostNames;
    for (const Node* h : hs) {
        reach.push_back(reachedFrom(h->name));
        for (const std::string& c : reach.back()) reachedBy[c].push_back(h->name);
        hostNames += (hostNames.empty() ? "" : ", ") + h->name;
    }
    const std::string from = hs.size() > 1 ? "any host (" + hostNames + ")" : "host " + hostNames;
    for (const Node& c : components) {
        const auto by = reachedBy.find(c.name);
        need(by != reachedBy.end(), c.name + ": not reached from " + from + "; every component hangs below a host: join it below one, or remove it");
        const std::vector<std::string>& h = by->second;
        if (c.type == "type3" && h.size() > c.params.DeviceParams_.logical_devices && !c.params.DeviceParams_.shared) {
            std::string list;
            for (const std::string& n : h) list += (list.empty() ? "" : ", ") + n;
            need(false, c.name + ".device.logical_devices = " + std::to_string(c.params.DeviceParams_.logical_devices) +
                            ": " + std::to_string(h.size()) + " hosts reach it (" + list +
                            "); allowed: a logical device for each host (an MLD), at most 16, or device.shared = 1");
        }
        if (h.size() > 1 && c.type != "switch" && c.type != "type3" && c.type != "link")
            need(false, c.name + ": hosts " + h[0] + " and " + h[1] + " both reach it; allowed: only switches and "
                                                                       "the links and Type-3 devices below them are shared");
    }
    for (size_t i = 0; i < hs.size(); ++i)
        for (const Node& c : components) {
            if (c.type != "switch" || portBased(c.name)) continue;  // PBR: one edge port per host, below
            int ups = 0;
            for (const Connection& k : connections) ups += k.to.comp == c.name && reach[i].count(k.from.comp);
            need(ups <= 1, c.name + ".up: host " + hs[i]->name + " reaches it through " + std::to_string(ups) +
                               " upstream ports; allowed: one per host");
        }
    for (const Node& c : components) {
        if (c.type != "switch" || portBased(c.name)) continue;  // PBR: over the fabric's devices (pbrFabrics)
        if (homePortAbove(*this, c)) continue;                  // CXL.cache: routed by CacheID (checkCacheSwitch)
        const size_t n = leaving(c.name, "dsp").size();
        need(HdmDecoder::waysAllowed(n), c.name + ".dsp: " + std::to_string(n) +
                                             " downstream ports is not allowed; its decoder interleaves over all of "
                                             "them: allowed " + HdmDecoder::kWaysAllowed);
    }
    for (const Node* h : hs) {
        auto mem = leaving(h->name, "mem");
        if (mem.size() > 1)
            for (const Connection* k : mem)
                need(k->window, k->from.str() + " -> " + k->to.str() +
                                    ": with several windows each host.mem connection gives base and size; add them");
    }
    for (const PbrFabric& f : pbrFabrics()) {
        // A switch keeps its ports in 32-bit masks. An inter-switch link is an upstream and a downstream
        // port at both of its switches (requests cross it both ways); a host edge is an upstream port,
        // a device edge a downstream one.
        std::vector<uint32_t> ups(f.g.switches.size()), dsps(f.g.switches.size());
        for (const auto& l : f.g.isls)
            for (uint32_t s : {l.a, l.b}) {
                ++ups[s];
                ++dsps[s];
            }
        for (const auto& x : f.g.edges) ++(x.host ? ups : dsps)[x.sw];
        for (size_t s = 0; s < ups.size(); ++s) {
            const std::string& sw = f.g.switches[s];
            need(ups[s] <= 32, sw + ".up: " + std::to_string(ups[s]) + " upstream ports, counting one for each "
                                   "inter-switch link at " + sw + "; allowed: 1 to 32");
            need(dsps[s] <= 32, sw + ".dsp: " + std::to_string(dsps[s]) + " downstream ports, counting one for "
                                    "each inter-switch link at " + sw + "; allowed: 1 to 32");
        }
        std::map<std::string, std::string> entered;  // host -> the edge port it enters the fabric by
        for (size_t e = 0; e < f.g.edges.size(); ++e) {
            const auto& x = f.g.edges[e];
            if (!x.host) continue;
            const std::string at = f.g.switches[x.sw] + "." + f.g.ports[x.sw][x.port];
            for (size_t i = 0; i < hs.size(); ++i) {
                if (!reach[i].count(f.edgeConn[e]->from.comp)) continue;
                auto was = entered.emplace(hs[i]->name, at);
                need(was.second, at + ": host " + hs[i]->name + " enters the PBR fabric of " + f.g.switches[0] +
                                     " by " + was.first->second + " and " + at + "; allowed: one edge port per host");
            }
        }
    }
    checkDecoders();
}

namespace {

void fillBridge(const Graph& g, const Node& hb, MemoryParams& m) {
    m.bridge = hb.params.BridgeParams_;
    m.bridge.root_ports = m.bridge.interleave_ways = uint32_t(g.leaving(hb.name, "root_port").size());
}

void fillRemote(const Graph& g, const Node& rs, MemoryParams& m) {
    m.intersocket = rs.params.InterSocketParams_;
    m.remote_dram = g.below(*g.leaving(rs.name, "down").at(0)).params.DramParams_;
}

// An accelerator below a home agent's root port, with the link between them.
AccelDeviceParams accelDevice(const Node& link, const Node& dev) {
    AccelDeviceParams d;
    d.name = d.node = dev.name;
    d.linkNode = link.name;
    d.link = link.params.LinkParams_;
    d.cache = dev.params.DCacheParams_;
    d.accel = dev.params.AccelParams_;
    d.dma = dev.params.DmaParams_;
    d.media = dev.params.DramParams_;
    return d;
}

// The accelerators a home agent's root port leads to: one through its link,
// or, behind a switch, one on each downstream port.
void devicesBelow(const Graph& g, const Connection& rp, std::vector<AccelDeviceParams>& out) {
    const Node& dev = g.pastLink(rp);
    if (dev.type != "switch") {
        out.push_back(accelDevice(g.below(rp), dev));
        return;
    }
    const auto dsps = g.leaving(dev.name, "dsp");
    for (size_t i = 0; i < dsps.size(); ++i) {
        AccelDeviceParams d = accelDevice(g.below(*dsps[i]), g.pastLink(*dsps[i]));
        d.switchNode = dev.name;
        d.sw = dev.params.SwitchParams_;
        d.upLinkNode = g.below(rp).name;
        d.upLink = g.below(rp).params.LinkParams_;
        d.switchPort = uint32_t(i);
        out.push_back(d);
    }
}

MemoryKind kindOf(const Node& c) {
    return c.type == "dram" ? MemoryKind::LocalDram
           : c.type == "remote_socket" ? MemoryKind::RemoteNuma
                                       : MemoryKind::CxlType3;
}

}  // namespace

void Graph::fillHost(const Node& host, HostDesc& p) const {
    p.name = host.name;
    p.host = host.params.HostParams_;
    const auto ws = leaving(host.name, "mem");
    // The host's DRAM: the one a window maps, else the one on its local port (it holds the page tables).
    const Node* local = nullptr;
    for (const Connection* k : ws)
        if (!local && below(*k).type == "dram") local = &below(*k);
    if (!local) {
        const auto l = leaving(host.name, "local");
        need(!l.empty(), host.name + ".local: port left open; a host whose windows map no dram needs one here "
                                     "(it holds the page tables)");
        local = &below(*l[0]);
    }
    p.local_dram = local->params.DramParams_;
    p.local_dram_name = local->name;
    if (ws.size() == 1 && !ws[0]->window) {
        // One memory over the whole address space: a single-memory system.
        const Node& t = below(*ws[0]);
        p.kind = kindOf(t);
        if (p.kind == MemoryKind::RemoteNuma) fillRemote(*this, t, p);
        if (p.kind == MemoryKind::CxlType3) fillBridge(*this, t, p);
        p.node = t.name;
        p.qos = ws[0]->qos;
        return;
    }
    for (const Connection* k : ws) {
        const Node& t = below(*k);
        WindowParams w;
        w.name = t.name;
        w.kind = kindOf(t);
        w.base = k->base;
        w.size = k->size;
        if (w.kind == MemoryKind::RemoteNuma) fillRemote(*this, t, w);
        if (w.kind == MemoryKind::CxlType3) fillBridge(*this, t, w);
        w.node = t.name;
        w.qos = k->qos;
        p.windows.push_back(w);
    }
}

SystemParams Graph::system() const {
    check();
    SystemParams p;
    p.graph = std::make_shared<const Graph>(*this);
    p.seed = seed;
    p.fault_device_stops_after = fault_device_stops_after;
    const std::vector<const Node*> hs = hosts();
    fillHost(*hs[0], p);
    for (size_t i = 1; i < hs.size(); ++i) {
        p.peers.emplace_back();
        HostDesc& peer = p.peers.back();
        fillHost(*hs[i], peer);
        const auto ph = leaving(hs[i]->name, "home");
        if (ph.empty()) continue;
        const Node& home = below(*ph[0]);
        peer.peer_home = home.params.HomeParams_;
        peer.peer_home_node = home.name;
        for (const Connection* k : leaving(home.name, "root_port")) {
            const Node& dev = pastLink(*k);
            need(dev.type == "accelerator", dev.name + ": a " + dev.type + " below " + hs[i]->name +
                                                "'s home agent is not modelled; allowed: accelerators (a nic hangs "
                                                "below the first host, " + hs[0]->name + ")");
            peer.peer_accelerators.push_back(accelDevice(below(*k), dev));
        }
        need(!peer.peer_accelerators.empty(), home.name + ".root_port: port left open; join an accelerator below it (through a link)");
    }
    const auto homes = leaving(hs[0]->name, "home");
    if (!homes.empty()) {
        const Node& home = below(*homes[0]);
        p.home = home.params.HomeParams_;
        p.homeNode = home.name;
        for (const Connection* k : leaving(home.name, "root_port")) devicesBelow(*this, *k, p.accelerators);
        need(!p.accelerators.empty(), home.name + ".root_port: port left open; join an accelerator below it (through a link)");
        if (loneDeviceUnnamed && p.accelerators.size() == 1) p.accelerators[0].name.clear();
    }
    p.validate();
    return p;
}

NicParams Graph::nic() const {
    const Node* found = nullptr;
    for (const Node& c : components)
        if (c.type == "nic") {
            if (found)
                throw ConfigError("system " + name + ": NIC workloads run on one nic; here " + found->name + " and " +
                                  c.name + "; keep one");
            found = &c;
        }
    need(found != nullptr, "system " + name + ": NIC workloads need a component of type nic; add one below the home agent");
    found->params.NicParams_.validate(found->name + ".nic");
    return found->params.NicParams_;
}

}  // namespace cxlcore
