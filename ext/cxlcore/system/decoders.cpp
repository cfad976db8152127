// Routing by committed HDM decoders: the checks that the decoders software
// committed at the host bridge and at the devices agree, and the routes a
// bridge takes from them. Root port N is the bridge's root_port[N] connection
// (its position when the connections give no index), as a root port's PCIe
// Link Capabilities Port Number would name it.
#include "cxlcore/system/graph.hpp"

#include <algorithm>
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

// The root port numbered `n` of a host bridge, or nullptr.
const Connection* rootPort(const Graph& g, const std::string& hb, uint32_t n) {
    const auto ports = g.leaving(hb, "root_port");
    for (size_t i = 0; i < ports.size(); ++i)
        if ((ports[i]->from.index >= 0 ? uint32_t(ports[i]->from.index) : uint32_t(i)) == n) return ports[i];
    return nullptr;
}

uint32_t portIndex(const Graph& g, const std::string& hb, const Connection* port) {
    const auto ports = g.leaving(hb, "root_port");
    return uint32_t(std::find(ports.begin(), ports.end(), port) - ports.begin());
}

// The device decoder mapping exactly `d`'s range, or nullptr.
const cxlio::CommittedDecoder* matching(const ComponentDecoders& dev, const cxlio::CommittedDecoder& d) {
    for (const cxlio::CommittedDecoder& e : dev.committed)
        if (e.base == d.base && e.size == d.size) return &e;
    return nullptr;
}

}  // namespace

void Graph::checkDecoders() const {
    for (const auto& kv : decoders) {
        const std::string& comp = kv.first;
        const Node* n = find(comp);
        need(n != nullptr, "decoders." + comp + ": no component named " + comp);
        need(n->type == "host_bridge" || n->type == "type3",
             "decoders." + comp + ": a " + n->type + " has no HDM decoders the engine routes by; allowed: "
             "host_bridge and type3 components");
        for (const cxlio::CommittedDecoder& d : kv.second.committed) {
            need(HdmDecoder::waysAllowed(d.ways) && d.ways <= (n->type == "type3" ? 16u : 8u),
                 nameOf(comp, d) + ": " + std::to_string(d.ways) + " ways is not allowed; allowed: " +
                     (n->type == "type3" ? HdmDecoder::kWaysAllowed : "1, 2, 3, 4, 6 or 8 (a host bridge)"));
            need(d.granularity >= 256 && d.granularity <= 16384 && !(d.granularity & (d.granularity - 1)),
                 nameOf(comp, d) + ": granularity " + std::to_string(d.granularity) +
                     " B is not allowed; allowed: 256 B to 16 KiB, a power of two");
            need(d.size && d.size % (cxlio::kHdmUnit * d.ways) == 0 && d.base % cxlio::kHdmUnit == 0 &&
                     d.base + d.size <= HdmDecoder::kMaxWindow,
                 nameOf(comp, d) + ": range " + rangeOf(d) + " is not allowed; allowed: a base that is a multiple "
                 "of 256 MiB and a size that is a multiple of ways x 256 MiB, within 52 bits");
        }
        if (n->type == "type3") {
            // A device's decoder is reached through the bridge above it, which must route by decoders too.
            const Connection* up = nullptr;
            for (const Connection& k : connections)
                if (k.to.comp == comp) up = &k;
            const Connection* port = nullptr;
            for (const Connection& k : connections)
                if (up && k.to.comp == up->from.comp && k.from.port == "root_port") port = &k;
            need(port != nullptr, "decoders." + comp + ": a device behind a switch; allowed so far: devices on a "
                                  "host bridge's root port (switch decoders are not modelled)");
            const std::string& hb = port->from.comp;
            const auto b = decoders.find(hb);
            need(b != decoders.end(), "decoders." + comp + ": committed decoders, but host bridge " + hb +
                                          " has none and routes by its own interleave_ways and interleave_bytes; "
                                          "commit the host bridge's decoders too");
            for (const cxlio::CommittedDecoder& d : kv.second.committed) {
                bool reached = false;
                for (const cxlio::CommittedDecoder& h : b->second.committed)
                    if (h.base == d.base && h.size == d.size) reached = true;
                need(reached, nameOf(comp, d) + " maps " + rangeOf(d) + ", which no committed decoder of host "
                                  "bridge " + hb + " routes to it; allowed: the range of a bridge decoder");
            }
            continue;
        }
        // A host bridge: its decoders lie in its host window; each way's target is a root port with a
        // Type-3 device whose decoder agrees.
        uint64_t lo = 0, hi = HdmDecoder::kMaxWindow;
        for (const Connection& k : connections)
            if (k.to.comp == comp && k.window) lo = k.base, hi = k.base + k.size;
        for (const cxlio::CommittedDecoder& d : kv.second.committed) {
            need(d.base >= lo && d.base + d.size <= hi,
                 nameOf(comp, d) + ": range " + rangeOf(d) + " lies outside the host's window onto " + comp + ", [" +
                     hexOf(lo) + ", " + hexOf(hi) + ")");
            need(d.targets.size() == d.ways, nameOf(comp, d) + ": " + std::to_string(d.targets.size()) +
                                                 " targets for " + std::to_string(d.ways) + " ways; allowed: one "
                                                 "root port per way");
            for (uint32_t w = 0; w < d.ways; ++w)
                for (uint32_t v = 0; v < w; ++v)
                    need(d.targets[v] != d.targets[w], nameOf(comp, d) + ": root port " +
                                                           std::to_string(d.targets[w]) +
                                                           " is named twice in its target list; allowed: each port once");
            for (uint32_t w = 0; w < d.ways; ++w) {
                const uint32_t t = d.targets[w];
                const Connection* port = rootPort(*this, comp, t);
                need(port != nullptr, nameOf(comp, d) + ": target " + std::to_string(w) + " names root port " +
                                          std::to_string(t) + ", which " + comp + " does not have (it has " +
                                          std::to_string(leaving(comp, "root_port").size()) + ")");
                const Node& dev = pastLink(*port);
                need(dev.type == "type3", nameOf(comp, d) + ": target " + std::to_string(w) + " is root port " +
                                              std::to_string(t) + ", where a " + dev.type + " (" + dev.name +
                                              ") sits; allowed: a Type-3 device (switch decoders are not modelled)");
                const auto e = decoders.find(dev.name);
                const cxlio::CommittedDecoder* m = e == decoders.end() ? nullptr : matching(e->second, d);
                need(m != nullptr, nameOf(comp, d) + " routes " + rangeOf(d) + " to root port " + std::to_string(t) +
                                       ", but " + dev.name + " has no committed decoder for that range");
                need(m->ways == d.ways && m->granularity == d.granularity,
                     nameOf(dev.name, *m) + " interleaves " + std::to_string(m->ways) + " ways at " +
                         std::to_string(m->granularity) + " B, " + nameOf(comp, d) + " " + std::to_string(d.ways) +
                         " ways at " + std::to_string(d.granularity) + " B; allowed: the same ways and granularity "
                         "at both levels (no switch between them)");
            }
        }
    }
}

std::vector<CommittedRegion> Graph::regions(const std::string& hb) const {
    const auto b = decoders.find(hb);
    if (b == decoders.end()) return {};
    // checkDecoders has made sure every way reaches a device decoder that agrees.
    return committedRegions(b->second.committed, [&](uint32_t n, RootPortDecoders& out) {
        const Connection* port = rootPort(*this, hb, n);
        if (!port) return false;
        out.index = portIndex(*this, hb, port);
        const auto dev = decoders.find(pastLink(*port).name);
        out.device = dev == decoders.end() ? nullptr : &dev->second.committed;
        return true;
    });
}

}  // namespace cxlcore
