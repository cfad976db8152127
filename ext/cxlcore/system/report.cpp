// What a system reports: every memory's DRAM, link and device counters over
// an interval, what the address map sent to each window, and the coherent
// part's components (home agent, accelerators and their links) from the run's start.

#include "cxlcore/system/system.hpp"

namespace cxlcore {

void System::reportMemory(Report& r, Tick s, Tick e) const {
    for (const auto& hp : hosts_) {
        const HostPart& h = *hp;
        reportDram(r, h.localName, *h.localDram, s, e);
        for (const MemoryWindow& w : h.windows) {
            const std::string& node = w.p.node.empty() ? w.p.name : w.p.node;  // its graph component
            if (w.remote) {
                reportRemoteSocket(r, node, *w.remote, s, e);
                reportDram(r, w.remoteDram, w.remote->dram(), s, e);
            }
            if (w.bridge) reportHostBridge(r, node, *w.bridge);
        }
        if (!h.mapped) continue;
        std::vector<std::string> names;
        for (const MemoryWindow& w : h.windows) names.push_back(w.p.name);
        reportHostWindows(r, h.p.name, *h.uncore, names, s, e);
    }
    // The fabric below the host bridges, each component once however many hosts reach it.
    for (size_t i = 0; i < links_.size(); ++i) reportLink(r, linkNames_[i], *links_[i], s, e);
    for (size_t i = 0; i < reverse_.size(); ++i) reportLink(r, reverseNames_[i], *reverse_[i], s, e, "rev_");
    for (const auto& sw : switches_) reportSwitch(r, sw->where(), *sw, s, e);
    for (const auto& d : devices_) reportType3(r, deviceNames_.at(d.get()), *d, s, e);
}

void System::report(Report& r, Tick s, Tick e) const {
    reportMemory(r, s, e);
    if (home) reportCoherent(r, e);
    // Later hosts' CXL.cache devices (shared runs), each under its own graph names.
    for (const PeerCache& pc : peerCaches) {
        const HostDesc& d = p_.peers[pc.host - 1];
        for (size_t i = 0; i < pc.accels.size(); ++i) {
            const AccelDeviceParams& a = d.peer_accelerators[i];
            reportAccelerator(r, a.node, {pc.accels[i].get()});
            reportLink(r, a.linkNode, {pc.links[i].get()}, 0, e);
            reportCacheChannels(r, a.linkNode, {&pc.accels[i]->up()}, {&pc.home->down(uint16_t(i))});
        }
        reportHomeAgent(r, d.peer_home_node, *pc.home, pc.accels.size());
    }
}

void System::reportCoherent(Report& r, Tick end) const {
    // Each accelerator component with its link, its copies (accel.devices) together.
    for (uint32_t e = 0; e < p_.accelerators.size(); ++e) {
        std::vector<const Accelerator*> copies;
        std::vector<const CxlLink*> links;
        std::vector<const Wire*> ups, downs;
        for (size_t i = 0; i < accels.size(); ++i) {
            if (accelEntry[i] != e) continue;
            copies.push_back(accels[i].get());
            links.push_back(accelLinks[i].get());
            ups.push_back(&accels[i]->up());
            downs.push_back(&home->down(uint16_t(i)));
        }
        const AccelDeviceParams& d = p_.accelerators[e];
        reportAccelerator(r, d.node, copies);
        reportLink(r, d.linkNode, links, 0, end);
        reportCacheChannels(r, d.linkNode, ups, downs);
    }
    // Switches below the home's root ports, with the link above each: every device's messages below it.
    for (size_t s = 0; s < cacheSwitches.size(); ++s) {
        const CacheSwitch& sw = *cacheSwitches[s];
        std::vector<const Wire*> ups, downs;
        std::string upLink;
        for (size_t i = 0; i < accels.size(); ++i) {
            const AccelDeviceParams& d = p_.accelerators[accelEntry[i]];
            if (d.switchNode != sw.where()) continue;
            upLink = d.upLinkNode;
            ups.push_back(&accels[i]->up());
            downs.push_back(&home->down(uint16_t(i)));
        }
        reportLink(r, upLink, *cacheUpLinks[s], 0, end);
        reportCacheChannels(r, upLink, ups, downs);
        reportCacheSwitch(r, sw.where(), sw);
    }
    reportHomeAgent(r, p_.homeNode, *home, accels.size());
    reportDramAccesses(r, host().localName, *host().localDram);
    // The run's own: the pool of accesses and messages, and whether it ended quiet.
    r.emplace_back("messages_allocated", double(pool.allocated()));
    r.emplace_back("quiet_at_end", quiet() ? 1.0 : 0.0);
    if (checker) {
        r.emplace_back("checker_checks", double(checker->checks()));
        r.emplace_back("checker_violations", double(checker->violations()));
    }
}

}  // namespace cxlcore
