// What a system reports: every memory's DRAM, link and device counters over
// an interval, what the address map sent to each window, and the coherent
// part's protocol counters and bounds.
#include <algorithm>

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
}

void System::reportCoherent(Report& r, Tick end) const {
    AccelStats sum;
    size_t maxMshrs = 0, maxUp = 0, maxDown = 0;
    uint64_t up[kNumChannels] = {}, down[kNumChannels] = {};
    double upBusy = 0, downBusy = 0;
    for (size_t i = 0; i < accels.size(); ++i) {
        sum.add(accels[i]->stats());
        maxMshrs = std::max(maxMshrs, accels[i]->maxMshrs());
        maxUp = std::max(maxUp, accels[i]->up().maxQueued());
        maxDown = std::max(maxDown, home->down(uint16_t(i)).maxQueued());
        for (int c = 0; c < kNumChannels; ++c) {
            up[c] += accels[i]->up().sent(Channel(c));
            down[c] += home->down(uint16_t(i)).sent(Channel(c));
        }
        upBusy += double(accelLinks[i]->s2m_.busy());
        downBusy += double(accelLinks[i]->m2s_.busy());
    }
    const double n = accels.empty() ? 1.0 : double(accels.size());
    r.emplace_back("device_loads", double(sum.loads));
    r.emplace_back("device_stores", double(sum.stores));
    r.emplace_back("device_hits", double(sum.hits));
    r.emplace_back("device_misses", double(sum.misses));
    r.emplace_back("mshr_full_stalls", double(sum.mshrFull));
    r.emplace_back("fills_shared", double(sum.grants[int(MState::S)]));
    r.emplace_back("fills_exclusive", double(sum.grants[int(MState::E)]));
    for (uint32_t i = 0; i < kNumSnoops; ++i)
        r.emplace_back(std::string("snoops_received_") + opName(snoopOpc(i)), double(sum.snoopsRecv[i]));
    r.emplace_back("clean_evicts", double(sum.cleanEvicts));
    r.emplace_back("dirty_evicts", double(sum.dirtyEvicts));
    r.emplace_back("bogus_writebacks", double(sum.bogusData));
    r.emplace_back("bias_flips_to_device", double(sum.deviceBiasFlips));
    r.emplace_back("bias_flips_to_host", double(sum.hostBiasFlips));
    r.emplace_back("back_invalidates", double(sum.biSnps));
    r.emplace_back("device_memory_local_reads", double(sum.localMemReads));
    r.emplace_back("device_memory_via_host", double(sum.fwdReads));
    r.emplace_back("dma_transfers", double(sum.dmaTransfers));
    const HomeStats& h = home->stats();
    for (const Command& c : kCommands.c)
        if (c.chan == kD2HReq) r.emplace_back(std::string("home_requests_") + c.name, double(h.requests[int(c.opc)]));
    r.emplace_back("home_back_invalidates", double(h.biSnps));
    for (uint32_t i = 0; i < kNumSnoops; ++i)
        r.emplace_back(std::string("home_snoops_") + opName(snoopOpc(i)), double(h.snoops[i]));
    r.emplace_back("host_hits", double(h.hostHits));
    r.emplace_back("host_misses", double(h.hostMisses));
    r.emplace_back("host_memory_reads", double(h.memReads));
    r.emplace_back("host_memory_writes", double(h.memWrites));
    r.emplace_back("home_conflicts", double(h.conflicts));
    r.emplace_back("snoop_filter_evictions", double(h.sfEvictions));
    r.emplace_back("max_home_tracker", double(h.maxTracker));
    r.emplace_back("max_line_queue", double(h.maxLineQueue));
    r.emplace_back("max_mshrs", double(maxMshrs));
    r.emplace_back("max_queued_up", double(maxUp));
    r.emplace_back("max_queued_down", double(maxDown));
    for (int c = 0; c < kNumChannels; ++c) {
        r.emplace_back(std::string("messages_") + channelName(Channel(c)), double(isUpstream(Channel(c)) ? up[c] : down[c]));
    }
    r.emplace_back("link_up_utilization", end ? upBusy / n / double(end) : 0.0);
    r.emplace_back("link_down_utilization", end ? downBusy / n / double(end) : 0.0);
    r.emplace_back("messages_allocated", double(pool.allocated()));
    r.emplace_back("home_line_states_max", double(h.maxLineStates));
    r.emplace_back("home_line_states_at_end", double(home->lineStates()));
    r.emplace_back("host_cache_lines_max", double(h.maxHostLines));
    r.emplace_back("host_cache_lines_at_end", double(home->hostLines()));
    r.emplace_back("host_cache_dirty_at_end", double(home->hostDirtyLines()));
    r.emplace_back("host_cache_dirtied", double(h.hostDirtied));
    r.emplace_back("host_cache_evictions", double(h.hostEvictions));
    r.emplace_back("host_cache_writebacks", double(h.hostWritebacks));
    r.emplace_back("host_dram_reads", double(host().localDram->stats().reads));
    r.emplace_back("host_dram_writes", double(host().localDram->stats().writes));
    r.emplace_back("bias_flip_host_lines_flushed", double(h.flushedLines));
    r.emplace_back("bias_flip_device_lines_flushed", double(sum.flushedLines));
    r.emplace_back("quiet_at_end", quiet() ? 1.0 : 0.0);
    if (checker) {
        r.emplace_back("checker_checks", double(checker->checks()));
        r.emplace_back("checker_violations", double(checker->violations()));
    }
    if (p_.accelerators.size() > 1) reportAccelerators(r, end);
}

void System::reportAccelerators(Report& r, Tick end) const {
    // Each description's own counters, under its name (its copies summed).
    for (uint32_t e = 0; e < p_.accelerators.size(); ++e) {
        AccelStats s;
        double upBusy = 0, downBusy = 0, n = 0;
        size_t maxMshrs = 0;
        for (size_t i = 0; i < accels.size(); ++i) {
            if (accelEntry[i] != e) continue;
            s.add(accels[i]->stats());
            maxMshrs = std::max(maxMshrs, accels[i]->maxMshrs());
            upBusy += double(accelLinks[i]->s2m_.busy());
            downBusy += double(accelLinks[i]->m2s_.busy());
            ++n;
        }
        const std::string g = p_.accelerators[e].prefix();
        r.emplace_back(g + "device_loads", double(s.loads));
        r.emplace_back(g + "device_stores", double(s.stores));
        r.emplace_back(g + "device_hits", double(s.hits));
        r.emplace_back(g + "device_misses", double(s.misses));
        r.emplace_back(g + "mshr_full_stalls", double(s.mshrFull));
        r.emplace_back(g + "snoops_received", double(s.snoopsRecv[0] + s.snoopsRecv[1] + s.snoopsRecv[2]));
        r.emplace_back(g + "bias_flips_to_device", double(s.deviceBiasFlips));
        r.emplace_back(g + "bias_flips_to_host", double(s.hostBiasFlips));
        r.emplace_back(g + "back_invalidates", double(s.biSnps));
        r.emplace_back(g + "device_memory_local_reads", double(s.localMemReads));
        r.emplace_back(g + "device_memory_via_host", double(s.fwdReads));
        r.emplace_back(g + "max_mshrs", double(maxMshrs));
        r.emplace_back(g + "link_up_utilization", end && n ? upBusy / n / double(end) : 0.0);
        r.emplace_back(g + "link_down_utilization", end && n ? downBusy / n / double(end) : 0.0);
    }
}

}  // namespace cxlcore
