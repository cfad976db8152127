// Routing by committed HDM decoders: the checks that the decoders software
// committed at the host bridge, at switches' upstream ports and at the
// devices agree, and the routes a bridge or switch takes from them. Root port
// N is the bridge's root_port[N] connection (its position when the
// connections give no index), as a root port's PCIe Link Capabilities Port
// Number would name it; downstream port N of a switch its dsp[N].
#include "cxlcore/system/graph.hpp"

#include <algorithm>
#include <functional>
#include <sstream>

namespace cxlcore {

namespace {

std::string hexOf(uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

std::string rangeOf(const cxlio::CommittedDecoder& d) {
    return "[" + hexOf(d.base) + ", " + hexOf(d.base + d.size) + ")";
}

std::string nameOf(const std::string& comp, const cxlio::CommittedDecoder& d) {
    return comp + " decoder " + std::to_string(d.index);
}

void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

// The port numbered `n` of a host bridge (root_port) or switch (dsp), or nullptr.
const Connection* portOf(const Graph& g, const std::string& comp, const char* kind, uint32_t n) {
    const auto ports = g.leaving(comp, kind);
    for (size_t i = 0; i < ports.size(); ++i)
        if ((ports[i]->from.index >= 0 ? uint32_t(ports[i]->from.index) : uint32_t(i)) == n) return ports[i];
    return nullptr;
}

const Connection* rootPort(const Graph& g, const std::string& hb, uint32_t n) { return portOf(g, hb, "root_port", n); }

uint32_t portIndex(const Graph& g, const std::string& comp, const Connection* port, const char* kind = "root_port") {
    const auto ports = g.leaving(comp, kind);
    return uint32_t(std::find(ports.begin(), ports.end(), port) - ports.begin());
}

// The root port or switch downstream port whose link leads to `comp` (the first, for a switch), or nullptr.
const Connection* feeding(const Graph& g, const std::string& comp) {
    for (const Connection& k : g.connections)
        if (k.to.comp == comp && k.from.port == "down")
            for (const Connection& p : g.connections)
                if (p.to.comp == k.from.comp && (p.from.port == "root_port" || p.from.port == "dsp")) return &p;
    return nullptr;
}

// The device decoder mapping exactly `d`'s range, or nullptr.
const cxlio::CommittedDecoder* matching(const ComponentDecoders& dev, const cxlio::CommittedDecoder& d) {
    for (const cxlio::CommittedDecoder& e : dev.committed)
        if (e.base == d.base && e.size == d.size) return &e;
    return nullptr;
}

const cxlio::CommittedDecoder* sameRange(const Graph& g, const std::string& comp, const cxlio::CommittedDecoder& d) {
    const auto e = g.decoders.find(comp);
    return e == g.decoders.end() ? nullptr : matching(e->second, d);
}

}  // namespace

void Graph::walkRegion(const std::string& hb, const cxlio::CommittedDecoder& d,
                       std::map<std::string, uint32_t>* positions) const {
    // Every decoder on the region's paths, for the period of the whole
    // interleave (all ways powers of two: the largest ways x granularity)
    // and its finest granularity.
    uint64_t period = uint64_t(d.ways) * d.granularity, fine = d.granularity;
    std::function<void(const std::string&, const cxlio::CommittedDecoder&)> visit =
        [&](const std::string& comp, const cxlio::CommittedDecoder& x) {
            const char* kind = comp == hb ? "root_port" : "dsp";
            for (uint32_t t : x.targets) {
                const Connection* k = portOf(*this, comp, kind, t);
                need(k != nullptr, nameOf(comp, x) + ": its target list names " + kind + " " + std::to_string(t) +
                                       ", which " + comp + " does not have");
                const Node& n = pastLink(*k);
                const cxlio::CommittedDecoder* e = sameRange(*this, n.name, d);
                if (!e && n.type == "switch" && decoders.count(n.name)) continue;  // the switch answers it
                need(e != nullptr, nameOf(comp, x) + " routes " + rangeOf(d) + " to " + kind + " " + std::to_string(t) +
                                       ", but " + n.name + " has no committed decoder for that range");
                need(e->targets.size() == e->ways || n.type == "type3",
                     nameOf(n.name, *e) + ": " + std::to_string(e->targets.size()) + " targets for " +
                         std::to_string(e->ways) + " ways; allowed: one downstream port per way");
                period = std::max(period, uint64_t(e->ways) * e->granularity);
                fine = std::min<uint64_t>(fine, e->granularity);
                if (n.type == "switch") visit(n.name, *e);
            }
        };
    visit(hb, d);
    // Chunk by chunk over one period: each device must receive exactly the
    // chunks its own decoder gives its position (CXL 3.1 section 8.2.4.20.13).
    std::map<std::string, uint32_t> at;
    std::map<uint32_t, std::string> who;
    const cxlio::CommittedDecoder* first = nullptr;
    std::string firstName;
    bool unrouted = false;  // some chunks reach a switch with no decoder for the range: it answers them
    for (uint64_t off = 0; off < period && off < d.size; off += fine) {
        const uint64_t hpa = d.base + off;
        std::string comp = hb;
        const cxlio::CommittedDecoder* x = &d;
        const Node* n = nullptr;
        for (;;) {
            const uint32_t way = HdmDecoder(comp, x->base, x->size, x->ways, x->granularity).decode(hpa).port;
            n = &pastLink(*portOf(*this, comp, comp == hb ? "root_port" : "dsp", x->targets[way]));
            x = sameRange(*this, n->name, d);
            if (n->type != "switch" || !x) break;
            comp = n->name;
        }
        if (!x) {
            unrouted = true;
            continue;
        }
        if (!first) first = x, firstName = n->name;
        need(x->ways == first->ways && x->granularity == first->granularity,
             nameOf(n->name, *x) + " interleaves " + std::to_string(x->ways) + " ways at " +
                 std::to_string(x->granularity) + " B, " + nameOf(firstName, *first) + " " +
                 std::to_string(first->ways) + " ways at " + std::to_string(first->granularity) +
                 " B; allowed: every device of a region at the region's ways and granularity");
        const uint32_t p = uint32_t(off / x->granularity % x->ways);
        const auto a = at.emplace(n->name, p);
        const auto b = who.emplace(p, n->name);
        need(a.first->second == p && b.first->second == n->name,
             nameOf(hb, d) + " and the switch decoders below it send " + hexOf(hpa) + " to " + n->name + ", which " +
                 nameOf(n->name, *x) + " (" + std::to_string(x->ways) + " ways at " + std::to_string(x->granularity) +
                 " B) gives position " + std::to_string(p) +
                 (a.first->second != p ? ", but it received position " + std::to_string(a.first->second) + " too"
                                       : ", " + b.first->second + "'s") +
                 "; allowed: each port's granularity its parent's times the parent's ways, targets in position "
                 "order (Linux's cxl_port_setup_targets)");
    }
    need(unrouted || (first && at.size() == first->ways),
         nameOf(hb, d) + " reaches " + std::to_string(at.size()) + " devices for a region their decoders give " +
             std::to_string(first ? first->ways : 0) + " ways; allowed: one device per position");
    if (positions) *positions = at;
}

void Graph::checkDecoders() const {
    std::vector<std::pair<std::string, const cxlio::CommittedDecoder*>> walks;  // bridge decoders through switches
    for (const auto& kv : decoders) {
        const std::string& comp = kv.first;
        const Node* n = find(comp);
        need(n != nullptr, "decoders." + comp + ": no component named " + comp);
        const bool sw = n->type == "switch";
        need(n->type == "host_bridge" || n->type == "type3" || sw,
             "decoders." + comp + ": a " + n->type + " has no HDM decoders the engine routes by; allowed: "
             "host_bridge, switch and type3 components");
        if (sw) {
            need(!portBased(comp), "decoders." + comp + ": a switch with routing = pbr routes by PBR IDs; allowed: "
                                   "committed decoders at a hierarchy-based (hbr) switch");
            uint32_t ups = 0;
            for (const Connection& k : connections) ups += k.to.comp == comp && k.from.port == "down";
            need(ups == 1, "decoders." + comp + ": a switch with " + std::to_string(ups) + " upstream ports; allowed: "
                           "committed decoders at a switch with one upstream port (one host's hierarchy)");
        }
        for (const cxlio::CommittedDecoder& d : kv.second.committed) {
            need(HdmDecoder::waysAllowed(d.ways) && d.ways <= (n->type == "type3" ? 16u : 8u) &&
                     (!sw || !(d.ways & (d.ways - 1))),
                 nameOf(comp, d) + ": " + std::to_string(d.ways) + " ways is not allowed; allowed: " +
                     (n->type == "type3" ? HdmDecoder::kWaysAllowed
                      : sw ? "1, 2, 4 or 8 (a switch's target list, a power of two)"
                           : "1, 2, 3, 4, 6 or 8 (a host bridge)"));
            need(d.granularity >= 256 && d.granularity <= 16384 && !(d.granularity & (d.granularity - 1)),
                 nameOf(comp, d) + ": granularity " + std::to_string(d.granularity) +
                     " B is not allowed; allowed: 256 B to 16 KiB, a power of two");
            need(d.size && d.size % (cxlio::kHdmUnit * d.ways) == 0 && d.base % cxlio::kHdmUnit == 0 &&
                     d.base + d.size <= HdmDecoder::kMaxWindow,
                 nameOf(comp, d) + ": range " + rangeOf(d) + " is not allowed; allowed: a base that is a multiple "
                 "of 256 MiB and a size that is a multiple of ways x 256 MiB, within 52 bits");
        }
        if (n->type == "type3" || sw) {
            // A device's or switch's decoder is reached through the bridge or switch above it, which must
            // route by decoders too.
            const Connection* port = feeding(*this, comp);
            need(port != nullptr, "decoders." + comp + ": nothing above it routes to it");
            const std::string& up = port->from.comp;
            const std::string upKind = port->from.port == "dsp" ? "switch " : "host bridge ";
            const auto b = decoders.find(up);
            need(b != decoders.end(), "decoders." + comp + ": committed decoders, but " + upKind + up +
                                          " has none and routes by its own interleave_ways and interleave_bytes; "
                                          "commit the " + upKind + "'s decoders too");
            for (const cxlio::CommittedDecoder& d : kv.second.committed) {
                bool reached = false;
                for (const cxlio::CommittedDecoder& h : b->second.committed)
                    if (h.base == d.base && h.size == d.size) reached = true;
                need(reached, nameOf(comp, d) + " maps " + rangeOf(d) + ", which no committed decoder of " + upKind +
                                  up + " routes to it; allowed: the range of a " + upKind + "decoder");
            }
            if (!sw) continue;
        }
        // A host bridge's decoders lie in its host window; each way's target is a root port (a switch's: a
        // downstream port) with a Type-3 device whose decoder agrees, or a switch with a decoder of that range.
        const char* kind = sw ? "dsp" : "root_port";
        const std::string portWord = sw ? "downstream port " : "root port ";
        uint64_t lo = 0, hi = HdmDecoder::kMaxWindow;
        for (const Connection& k : connections)
            if (k.to.comp == comp && k.window) lo = k.base, hi = k.base + k.size;
        for (const cxlio::CommittedDecoder& d : kv.second.committed) {
            need(d.base >= lo && d.base + d.size <= hi,
                 nameOf(comp, d) + ": range " + rangeOf(d) + " lies outside the host's window onto " + comp + ", [" +
                     hexOf(lo) + ", " + hexOf(hi) + ")");
            need(d.targets.size() == d.ways, nameOf(comp, d) + ": " + std::to_string(d.targets.size()) +
                                                 " targets for " + std::to_string(d.ways) + " ways; allowed: one " +
                                                 portWord + "per way");
            for (uint32_t w = 0; w < d.ways; ++w)
                for (uint32_t v = 0; v < w; ++v)
                    need(d.targets[v] != d.targets[w], nameOf(comp, d) + ": " + portWord +
                                                           std::to_string(d.targets[w]) +
                                                           " is named twice in its target list; allowed: each port once");
            bool throughSwitch = false;
            for (uint32_t w = 0; w < d.ways; ++w) {
                const uint32_t t = d.targets[w];
                const Connection* port = portOf(*this, comp, kind, t);
                need(port != nullptr, nameOf(comp, d) + ": target " + std::to_string(w) + " names " + portWord +
                                          std::to_string(t) + ", which " + comp + " does not have (it has " +
                                          std::to_string(leaving(comp, kind).size()) + ")");
                const Node& dev = pastLink(*port);
                need(dev.type == "type3" || dev.type == "switch",
                     nameOf(comp, d) + ": target " + std::to_string(w) + " is " + portWord + std::to_string(t) +
                         ", where a " + dev.type + " (" + dev.name + ") sits; allowed: a Type-3 device or a switch");
                const auto e = decoders.find(dev.name);
                const cxlio::CommittedDecoder* m = e == decoders.end() ? nullptr : matching(e->second, d);
                // A switch routing by decoders answers a range none of them covers (all ones or poison).
                need(m != nullptr || (dev.type == "switch" && e != decoders.end()),
                     nameOf(comp, d) + " routes " + rangeOf(d) + " to " + portWord + std::to_string(t) + ", but " +
                         dev.name + " has no committed decoder for that range");
                if (sw || dev.type == "switch") {
                    throughSwitch = true;  // the levels differ: walkRegion checks the whole path
                    continue;
                }
                need(m->ways == d.ways && m->granularity == d.granularity,
                     nameOf(dev.name, *m) + " interleaves " + std::to_string(m->ways) + " ways at " +
                         std::to_string(m->granularity) + " B, " + nameOf(comp, d) + " " + std::to_string(d.ways) +
                         " ways at " + std::to_string(d.granularity) + " B; allowed: the same ways and granularity "
                         "at both levels (no switch between them)");
            }
            if (throughSwitch && !sw) walks.emplace_back(comp, &d);
        }
    }
    for (const auto& w : walks) walkRegion(w.first, *w.second);
}

std::vector<CommittedRegion> Graph::regions(const std::string& hb) const {
    const auto b = decoders.find(hb);
    if (b == decoders.end()) return {};
    // checkDecoders has made sure every way reaches a device decoder that agrees.
    return committedRegions(b->second.committed, [&](uint32_t n, RootPortDecoders& out) {
        const Connection* port = rootPort(*this, hb, n);
        if (!port) return false;
        out.index = portIndex(*this, hb, port);
        const Node& below = pastLink(*port);
        const auto dev = decoders.find(below.name);
        out.device = dev == decoders.end() ? nullptr : &dev->second.committed;
        out.through = below.type == "switch" && out.device;
        return true;
    });
}

std::vector<CommittedRegion> Graph::switchRegions(const std::string& sw) const {
    const auto s = decoders.find(sw);
    if (s == decoders.end()) return {};
    // The host bridge above: its decoder of each range gives each device its position in the region.
    const Connection* up = feeding(*this, sw);
    while (up && up->from.port == "dsp") up = feeding(*this, up->from.comp);
    return switchCommittedRegions(
        s->second.committed,
        [&](uint32_t n, RootPortDecoders& out) {
            const Connection* port = portOf(*this, sw, "dsp", n);
            if (!port) return false;
            out.index = portIndex(*this, sw, port, "dsp");
            const Node& below = pastLink(*port);
            const auto dev = decoders.find(below.name);
            out.device = dev == decoders.end() ? nullptr : &dev->second.committed;
            out.through = below.type != "type3";
            return true;
        },
        [&](const cxlio::CommittedDecoder& d, std::vector<uint32_t>& positions) {
            const cxlio::CommittedDecoder* h = up ? sameRange(*this, up->from.comp, d) : nullptr;
            if (!h) return false;  // checkDecoders refuses this
            std::map<std::string, uint32_t> pos;
            walkRegion(up->from.comp, *h, &pos);
            for (uint32_t w = 0; w < d.ways; ++w) {
                const Connection* port = portOf(*this, sw, "dsp", d.targets[w]);
                const std::string n = port ? pastLink(*port).name : std::string();
                positions[w] = pos.count(n) ? pos.at(n) : 0;
            }
            return true;
        });
}

}  // namespace cxlcore
