// Port-based routing in the graph: which switches form a PBR fabric, their
// edge ports' PIDs, their inter-switch links, and the rules a graph with
// switch cycles obeys (Graph::checkSwitchFabric, Graph::pbrFabrics).
#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "cxlcore/fabric/hdm_decoder.hpp"
#include "cxlcore/system/graph.hpp"

namespace cxlcore {

namespace {

void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

}  // namespace

bool Graph::portBased(const std::string& comp) const {
    const Node* n = find(comp);
    return n && n->type == "switch" && n->params.SwitchParams_.routing == 1;
}

std::vector<Graph::SwitchLink> Graph::switchLinks() const {
    std::vector<SwitchLink> out;
    for (const Connection& k : connections) {
        if (k.from.port != "dsp" || find(k.from.comp)->type != "switch") continue;
        const Node& dev = pastLink(k);
        if (dev.type != "switch") continue;
        const Connection* in = leaving(below(k).name, "down").at(0);
        out.push_back({&k, in, k.from.comp, dev.name, below(k).name});
    }
    return out;
}

void Graph::checkSwitchFabric() const {
    const std::vector<SwitchLink> isls = switchLinks();
    // An inter-switch link lies on a cycle when its ends stay joined without it.
    auto joinedWithout = [&](size_t skip) {
        std::set<std::string> seen{isls[skip].upper};
        std::deque<std::string> q{isls[skip].upper};
        while (!q.empty()) {
            const std::string x = q.front();
            q.pop_front();
            for (size_t i = 0; i < isls.size(); ++i) {
                if (i == skip) continue;
                for (int s = 0; s < 2; ++s) {
                    const std::string& a = s ? isls[i].lower : isls[i].upper;
                    const std::string& b = s ? isls[i].upper : isls[i].lower;
                    if (a == x && seen.insert(b).second) q.push_back(b);
                }
            }
        }
        return seen.count(isls[skip].lower) > 0;
    };
    std::vector<size_t> onCycle;
    for (size_t i = 0; i < isls.size(); ++i)
        if (joinedWithout(i)) onCycle.push_back(i);
    // The switches of each cycle (joined by links on cycles), in component order.
    std::set<std::string> done;
    for (size_t i : onCycle) {
        if (done.count(isls[i].upper)) continue;
        std::set<std::string> group{isls[i].upper};
        for (bool grew = true; grew;) {
            grew = false;
            for (size_t j : onCycle)
                if (group.count(isls[j].upper) + group.count(isls[j].lower) == 1) {
                    group.insert(isls[j].upper);
                    group.insert(isls[j].lower);
                    grew = true;
                }
        }
        done.insert(group.begin(), group.end());
        std::vector<std::string> all, hbr;
        for (const Node& c : components)
            if (group.count(c.name)) {
                all.push_back(c.name);
                if (!portBased(c.name)) hbr.push_back(c.name);
            }
        if (hbr.empty()) continue;
        if (hbr.size() == all.size())
            need(false, hbr[0] + ": switches " + joined(all) +
                            " are joined in a cycle; hierarchy-based routing (routing = \"hbr\") needs a tree below "
                            "each host: set routing = \"pbr\" on " + joined(hbr) + " (port-based routing)");
        need(false, hbr[0] + ": mixing HBR and PBR switches in one cycle (" + joined(all) + "); set routing = \"pbr\" on " +
                        joined(hbr));
    }
    // A PBR fabric's edges are hosts' root ports and devices: no HBR switch joined to it.
    for (const SwitchLink& l : isls)
        if (portBased(l.upper) != portBased(l.lower)) {
            const std::string& h = portBased(l.upper) ? l.lower : l.upper;
            need(false, l.down->from.str() + " -> " + l.link + " -> " + l.lower + ": an HBR and a PBR switch joined; a "
                        "PBR fabric's edge ports lead to host bridges and Type-3 devices: set routing = \"pbr\" on " + h);
        }
    // An explicit PID belongs on a PBR switch's edge port.
    for (const Connection& k : connections) {
        if (k.pid < 0) continue;
        const bool devEdge = k.from.port == "dsp" && portBased(k.from.comp) && pastLink(k).type != "switch";
        bool hostEdge = false;
        if (k.to.port == "up" && portBased(k.to.comp)) {
            for (const Connection& a : connections)
                if (a.to.comp == k.from.comp) hostEdge = find(a.from.comp)->type == "host_bridge";
        }
        need(devEdge || hostEdge, k.from.str() + " -> " + k.to.str() + ": pid = " + std::to_string(k.pid) +
                                      " belongs to a PBR switch's edge port (a connection from its dsp toward a "
                                      "device, or onto its up port from a root port's link); remove it");
    }
}

std::vector<Graph::PbrFabric> Graph::pbrFabrics() const {
    const std::vector<SwitchLink> isls = switchLinks();
    std::vector<PbrFabric> out;
    std::set<std::string> placed;
    for (const Node& c : components) {
        if (!portBased(c.name) || placed.count(c.name)) continue;
        // The switches joined to it by inter-switch links, in component order.
        std::set<std::string> member{c.name};
        for (bool grew = true; grew;) {
            grew = false;
            for (const SwitchLink& l : isls)
                if (member.count(l.upper) + member.count(l.lower) == 1) {
                    member.insert(l.upper);
                    member.insert(l.lower);
                    grew = true;
                }
        }
        PbrFabric f;
        std::map<std::string, uint32_t> index;
        for (const Node& s : components)
            if (member.count(s.name)) {
                index[s.name] = uint32_t(f.g.switches.size());
                f.g.switches.push_back(s.name);
                placed.insert(s.name);
            }
        // Port numbers: up ports in index order, then downstream ports.
        std::map<const Connection*, std::pair<uint32_t, uint32_t>> portOf;  // connection -> (switch, port)
        std::vector<uint16_t> pids;
        std::set<uint32_t> taken;
        for (const std::string& s : f.g.switches) {
            std::vector<const Connection*> ups;
            for (const Connection& k : connections)
                if (k.to.comp == s && k.to.port == "up") ups.push_back(&k);
            std::stable_sort(ups.begin(), ups.end(),
                             [](const Connection* a, const Connection* b) { return a->to.index < b->to.index; });
            std::vector<std::string> names;
            const uint32_t sw = index[s];
            for (size_t i = 0; i < ups.size(); ++i) {
                portOf[ups[i]] = {sw, uint32_t(names.size())};
                names.push_back("up" + std::to_string(i));
            }
            const auto dsps = leaving(s, "dsp");
            for (size_t j = 0; j < dsps.size(); ++j) {
                portOf[dsps[j]] = {sw, uint32_t(names.size())};
                names.push_back("dsp" + std::to_string(j));
            }
            f.g.ports.push_back(names);
            for (const Connection* k : ups) {
                const Connection* above = nullptr;
                for (const Connection& a : connections)
                    if (a.to.comp == k->from.comp) above = &a;
                if (find(above->from.comp)->type == "switch") continue;  // an ISL: from its upper end
                f.g.edges.push_back({uint32_t(k->pid < 0 ? kPbrPids : k->pid), sw, portOf[k].second, true});
                f.edgeConn.push_back(k);
            }
            for (const Connection* k : dsps) {
                const Node& dev = pastLink(*k);
                if (dev.type == "switch") continue;
                // A shared device's back-invalidate snoops are routed by host, not by PBR ID, so far.
                need(!dev.params.DeviceParams_.shared, dev.name + ".device.shared = 1 below PBR switch " + s +
                                                           ": not modelled with port-based routing yet; allowed: "
                                                           "device.shared = 0, or routing = \"hbr\" on " + s);
                f.g.edges.push_back({uint32_t(k->pid < 0 ? kPbrPids : k->pid), sw, portOf[k].second, false});
                f.edgeConn.push_back(k);
            }
        }
        for (const SwitchLink& l : isls)
            if (member.count(l.upper)) {
                f.g.isls.push_back({portOf[l.down].first, portOf[l.down].second, portOf[l.up].first, portOf[l.up].second});
                f.isls.push_back(l);
            }
        // PIDs: those given, unique; the others the lowest free, in edge order.
        for (size_t e = 0; e < f.g.edges.size(); ++e) {
            const uint32_t p = f.g.edges[e].pid;
            if (p == kPbrPids) continue;
            const auto& at = f.g.edges[e];
            need(taken.insert(p).second, f.g.switches[at.sw] + "." + f.g.ports[at.sw][at.port] + ": pid = " +
                                             std::to_string(p) + " is given to two edge ports of the fabric of " +
                                             f.g.switches[0] + "; allowed: a PID each (0 to 4095), or leave it out to "
                                             "have one assigned");
        }
        uint32_t next = 0;
        for (auto& e : f.g.edges)
            if (e.pid == kPbrPids) {
                while (taken.count(next)) ++next;
                e.pid = next;
                taken.insert(next);
            }
        uint32_t devices = 0, hosts = 0;
        for (const auto& e : f.g.edges) (e.host ? hosts : devices) += 1;
        need(hosts > 0, f.g.switches[0] + ": a PBR fabric no host's root port reaches; join one to an up port");
        need(HdmDecoder::waysAllowed(devices),
             f.g.switches[0] + ": its PBR fabric (" + joined(f.g.switches) + ") holds " + std::to_string(devices) +
                 " devices; every host's decoder interleaves over all of them: allowed " + HdmDecoder::kWaysAllowed);
        f.routes = routePbr(f.g);
        out.push_back(std::move(f));
    }
    return out;
}

}  // namespace cxlcore
