#include "cxlcore/fabric/hdm_decoder.hpp"

#include "cxlcore/cxlio/component_regs.hpp"
#include "cxlcore/kernel/sim.hpp"

#include <algorithm>
#include <sstream>

namespace cxlcore {

HdmDecoder::HdmDecoder(const std::string& where, uint64_t base, uint64_t size, uint32_t ways, uint32_t granularity)
    : base_(base), size_(size), ways_(ways), gran_(granularity) {
    if (!waysAllowed(ways))
        throw ConfigError(where + ": " + std::to_string(ways) + "-way interleave is not allowed; allowed " +
                          kWaysAllowed);
    // Any size decodes one to one (a last partial row of chunks just ends
    // early); the base is chunk-aligned, as the specification's is.
    if (size == 0 || !granularity || granularity & (granularity - 1) || base % granularity ||
        base > kMaxWindow || size > kMaxWindow - base) {
        std::ostringstream os;
        os << where << ": host window base 0x" << std::hex << base << " size 0x" << size << std::dec
           << " is not allowed; allowed: a base that is a multiple of interleave_bytes (" << granularity
           << " B, a power of two) and a non-empty window within the 52-bit physical address space";
        throw ConfigError(os.str());
    }
    while ((1u << granShift_) < granularity) ++granShift_;
    if (!(ways & (ways - 1)))
        for (waysShift_ = 0; (1u << waysShift_) < ways;) ++waysShift_;
}

void HdmDecoder::outside(uint64_t hpa) const {
    std::ostringstream os;
    os << "address 0x" << std::hex << hpa << " is outside the CXL window [0x" << base_ << ", 0x" << base_ + size_
       << ")";
    throw ConfigError(os.str());
}

CommittedRoutes::CommittedRoutes(const std::string& where, const std::vector<CommittedRegion>& regions, bool poison)
    : poison_(poison) {
    for (const CommittedRegion& c : regions) {
        if (c.ports.size() != c.ways || c.dpaBase.size() != c.ways ||
            (!c.dpaWays.empty() && (c.dpaWays.size() != c.ways || c.dpaGranularity.size() != c.ways ||
                                    c.position.size() != c.ways)))
            throw ConfigError(where + ": a committed decoder of " + std::to_string(c.ways) + " ways needs one target "
                              "port and device decoder per way");
        Region r{HdmDecoder(where, c.base, c.size, c.ways, c.granularity), {}};
        for (uint32_t w = 0; w < c.ways; ++w) {
            Way x;
            x.port = c.ports[w];
            x.pos = w;
            x.dpaBase = c.dpaBase[w];
            x.dpaSize = HdmDecoder::share(c.size, c.ways, c.granularity);
            if (!c.dpaWays.empty() && c.dpaWays[w] && x.dpaBase != CommittedRegion::kThrough) {
                x.dev = std::make_shared<HdmDecoder>(where, c.base, c.size, c.dpaWays[w], c.dpaGranularity[w]);
                x.pos = c.position[w];
                x.dpaSize = HdmDecoder::share(c.size, c.dpaWays[w], c.dpaGranularity[w]);
            }
            r.way.push_back(x);
        }
        r_.push_back(std::move(r));
    }
}

std::vector<CommittedRegion> committedRegions(const std::vector<cxlio::CommittedDecoder>& bridge,
                                              const std::function<bool(uint32_t, RootPortDecoders&)>& below,
                                              uint64_t offset) {
    std::vector<CommittedRegion> out;
    for (const cxlio::CommittedDecoder& d : bridge) {
        if (d.base < offset || d.targets.size() != d.ways) continue;
        CommittedRegion r;
        r.base = d.base - offset;
        r.size = d.size;
        r.ways = d.ways;
        r.granularity = d.granularity;
        for (uint32_t t : d.targets) {
            RootPortDecoders port;
            if (!below(t, port)) break;
            if (port.through) {  // a switch decodes the host address itself
                r.ports.push_back(port.index);
                r.dpaBase.push_back(CommittedRegion::kThrough);
                continue;
            }
            if (!port.device) break;
            const auto m = std::find_if(port.device->begin(), port.device->end(), [&](const auto& e) {
                return e.base == d.base && e.size == d.size && e.ways == d.ways && e.granularity == d.granularity;
            });
            if (m == port.device->end()) break;
            r.ports.push_back(port.index);
            r.dpaBase.push_back(m->dpaBase);
        }
        if (r.ports.size() == r.ways) out.push_back(r);
    }
    return out;
}

namespace {

const cxlio::CommittedDecoder* sameRange(const std::vector<cxlio::CommittedDecoder>& v,
                                         const cxlio::CommittedDecoder& d) {
    for (const cxlio::CommittedDecoder& x : v)
        if (x.base == d.base && x.size == d.size) return &x;
    return nullptr;
}

}  // namespace

std::vector<CommittedRegion> switchCommittedRegions(
    const std::vector<cxlio::CommittedDecoder>& usp, const std::function<bool(uint32_t, RootPortDecoders&)>& below,
    const std::function<bool(const cxlio::CommittedDecoder&, std::vector<uint32_t>&)>& place, uint64_t offset) {
    std::vector<CommittedRegion> out;
    for (const cxlio::CommittedDecoder& d : usp) {
        std::vector<uint32_t> positions(d.ways, 0);
        if (d.base < offset || d.targets.size() != d.ways || !place(d, positions) || positions.size() != d.ways)
            continue;
        CommittedRegion r;
        r.base = d.base - offset;
        r.size = d.size;
        r.ways = d.ways;
        r.granularity = d.granularity;
        for (uint32_t w = 0; w < d.ways; ++w) {
            RootPortDecoders port;
            if (!below(d.targets[w], port)) break;
            const cxlio::CommittedDecoder* e = !port.through && port.device ? sameRange(*port.device, d) : nullptr;
            if (!port.through && !e) break;
            r.ports.push_back(port.index);
            r.dpaBase.push_back(e ? e->dpaBase : CommittedRegion::kThrough);
            r.dpaWays.push_back(e ? e->ways : 0);
            r.dpaGranularity.push_back(e ? e->granularity : 0);
            r.position.push_back(e ? positions[w] : 0);
        }
        if (r.ports.size() == r.ways) out.push_back(std::move(r));
    }
    return out;
}

bool positionBelowSwitch(const cxlio::CommittedDecoder& bridge, uint32_t rootPort, const cxlio::CommittedDecoder& usp,
                         uint32_t way, const cxlio::CommittedDecoder& device, uint32_t& position) {
    if (bridge.targets.size() != bridge.ways || usp.targets.size() != usp.ways || way >= usp.ways ||
        uint64_t(device.ways) * device.granularity > device.size)
        return false;
    const HdmDecoder b("host bridge", bridge.base, bridge.size, bridge.ways, bridge.granularity);
    const HdmDecoder s("switch", usp.base, usp.size, usp.ways, usp.granularity);
    for (uint32_t p = 0; p < device.ways; ++p) {
        const uint64_t hpa = device.base + uint64_t(p) * device.granularity;
        if (!b.contains(hpa) || !s.contains(hpa)) return false;
        if (bridge.targets[b.decode(hpa).port] == rootPort && s.decode(hpa).port == way) {
            position = p;
            return true;
        }
    }
    return false;
}

std::vector<CommittedRegion> switchRegionsBelowBridge(const std::vector<cxlio::CommittedDecoder>& bridge,
                                                      uint32_t rootPort,
                                                      const std::vector<cxlio::CommittedDecoder>& usp,
                                                      const std::vector<std::vector<cxlio::CommittedDecoder>>& devices,
                                                      uint64_t offset) {
    return switchCommittedRegions(
        usp,
        [&](uint32_t n, RootPortDecoders& out) {
            if (n >= devices.size()) return false;
            out.index = n;
            out.device = &devices[n];
            return true;
        },
        [&](const cxlio::CommittedDecoder& d, std::vector<uint32_t>& positions) {
            const cxlio::CommittedDecoder* h = sameRange(bridge, d);
            if (!h) return false;
            for (uint32_t w = 0; w < d.ways; ++w) {
                const cxlio::CommittedDecoder* e =
                    d.targets[w] < devices.size() ? sameRange(devices[d.targets[w]], d) : nullptr;
                if (!e || !positionBelowSwitch(*h, rootPort, d, w, *e, positions[w])) return false;
            }
            return true;
        },
        offset);
}

uint64_t CommittedRoutes::hpaOf(uint32_t port, uint64_t dpa) const {
    for (const Region& r : r_)
        for (const Way& w : r.way) {
            if (w.port != port) continue;
            if (w.dpaBase == CommittedRegion::kThrough) return dpa;  // the switch below gave back the host address
            if (dpa >= w.dpaBase && dpa - w.dpaBase < w.dpaSize)
                return w.dev ? w.dev->encode(w.pos, dpa - w.dpaBase) : r.hdm.encode(w.pos, dpa - w.dpaBase);
        }
    std::ostringstream os;
    os << "a response from port " << port << " at DPA 0x" << std::hex << dpa
       << " that no committed decoder maps (the model lost its address)";
    throw ConfigError(os.str());
}

}  // namespace cxlcore
