// What a system reports: every memory's DRAM, link and device counters over
// an interval, what the address map sent to each window, and the coherent
// part's protocol counters and bounds.
#include <algorithm>

#include "cxlcore/system/system.hpp"

namespace cxlcore {

namespace {
void dramReport(Report& r, const std::string& k, const DramController& d, Tick s, Tick e) {
    const DramStats& st = d.stats();
    const double secs = double(e - s) * 1e-12;
    const double acc = double(st.reads + st.writes);
    r.emplace_back(k + ".read_gbps", secs > 0 ? st.reads * 64.0 / secs / 1e9 : 0);
    r.emplace_back(k + ".write_gbps", secs > 0 ? st.writes * 64.0 / secs / 1e9 : 0);
    r.emplace_back(k + ".peak_gbps", d.peakBytesPerSec() / 1e9);
    r.emplace_back(k + ".bus_utilization",
                   e > s ? double(st.busBusy) / double(e - s) / d.params().channels : 0);
    r.emplace_back(k + ".row_hit_rate", acc > 0 ? st.rowHits / acc : 0);
    r.emplace_back(k + ".row_conflict_rate", acc > 0 ? st.rowConflicts / acc : 0);
    r.emplace_back(k + ".refreshes", double(st.refreshes));
    r.emplace_back(k + ".refreshes_postponed", double(st.refreshesPostponed));
    r.emplace_back(k + ".turnarounds", double(st.turnarounds));
    r.emplace_back(k + ".rank_switches", double(st.rankSwitches));
    r.emplace_back(k + ".write_bursts", double(st.writeBursts));
    r.emplace_back(k + ".mean_read_queue", d.meanReadQueue(s, e));
    r.emplace_back(k + ".retries", double(st.readRetries + st.writeRetries));
}

void channelReport(Report& r, const std::string& k, const FlitChannel& c, double rawBytesPerSec, Tick s, Tick e) {
    const ChannelStats& st = c.stats();
    const double secs = double(e - s) * 1e-12;
    r.emplace_back(k + ".data_gbps", secs > 0 ? st.dataBytes / secs / 1e9 : 0);
    r.emplace_back(k + ".raw_gbps", rawBytesPerSec / 1e9);
    r.emplace_back(k + ".utilization", e > s ? std::min(1.0, double(c.busy()) / double(e - s)) : 0);
    r.emplace_back(k + ".flits", double(st.flits));
    r.emplace_back(k + ".messages", double(st.messages));
    r.emplace_back(k + ".slot_fill",
                   st.flits ? double(st.units) / (double(st.flits) * c.unitsPerFlit()) : 0);
    r.emplace_back(k + ".crc_errors", double(st.crcErrors));
    r.emplace_back(k + ".replayed_flits", double(st.replayedFlits));
}

// A switch measuring egress congestion: the responses whose DevLoad it raised,
// and each port's share of the window its egress was backpressured.
void congestionReport(Report& r, const CxlSwitch& sw, Tick s, Tick e) {
    const std::string& k = sw.where();
    const double span = e > s ? double(e - s) : 1.0;
    r.emplace_back(k + ".switch.devload_raised", double(sw.stats().devLoadRaised));
    for (uint32_t j = 0; j < sw.ports(); ++j)
        r.emplace_back(k + ".switch.dsp" + std::to_string(j) + ".egress_backpressure",
                       double(sw.portBackpressure(j)) / span);
    for (uint32_t u = 0; u < sw.upstreamPorts(); ++u)
        r.emplace_back(k + ".switch.up" + std::to_string(u) + ".egress_backpressure",
                       double(sw.upstreamBackpressure(u)) / span);
}
}  // namespace

void System::reportMemory(Report& r, Tick s, Tick e) const {
    const char* loads[4] = {"light", "optimal", "moderate", "severe"};
    const double secs = double(e - s) * 1e-12;
    auto gbps = [secs](uint64_t lines) { return secs > 0 ? lines * double(kLineBytes) / secs / 1e9 : 0; };
    for (const auto& hp : hosts_) {
        const HostPart& h = *hp;
        dramReport(r, h.localName, *h.localDram, s, e);
        for (const MemoryWindow& w : h.windows) {
            if (w.remote) {
                const std::string k = w.p.name;
                dramReport(r, k + ".dram", w.remote->dram(), s, e);
                channelReport(r, k + ".link.out", w.remote->out_, w.remote->bytesPerSec(), s, e);
                channelReport(r, k + ".link.back", w.remote->back_, w.remote->bytesPerSec(), s, e);
            }
            for (size_t i = 0; i < w.devices.size(); ++i) {
                const std::string& k = w.deviceNames[i];
                const CxlLink& l = *w.links[i];
                const Type3Device& d = *w.devices[i];
                channelReport(r, k + ".link.m2s", l.m2s_, l.rawBytesPerSec(), s, e);
                channelReport(r, k + ".link.s2m", l.s2m_, l.rawBytesPerSec(), s, e);
                dramReport(r, k + ".media", d.media(), s, e);
                const DeviceStats& ds = d.stats();
                r.emplace_back(k + ".device.mean_occupancy", d.meanOccupancy(s, e));
                for (int j = 0; j < 4; ++j) r.emplace_back(k + ".device.devload_" + loads[j], double(ds.devLoad[j]));
                r.emplace_back(k + ".device.media_retries", double(ds.mediaRetries));
                // A DCD: accesses outside the extents each LD was given (poisoned reads, dropped writes).
                for (uint32_t j = 0; d.dynamicCapacity() && j < d.boundLds(); ++j) {
                    const std::string ld = k + ".device.ld" + std::to_string(j);
                    r.emplace_back(ld + ".dc_poison_reads", double(ds.dcPoison[j]));
                    r.emplace_back(ld + ".dc_dropped_writes", double(ds.dcDropped[j]));
                }
                // A shared device: its snoop filter and the back-invalidates that kept the hosts coherent.
                if (const Dcoh* c = d.dcoh()) {
                    const DcohStats& cs = c->stats();
                    const std::pair<const char*, uint64_t> counts[] = {
                        {"bisnp_inv", cs.bisnpInv},         {"bisnp_data", cs.bisnpData},
                        {"birsp_i", cs.birspI},             {"birsp_s", cs.birspS},
                        {"sf_evictions", cs.sfEvictions},   {"sf_eviction_snoops", cs.evictSnoops},
                        {"sf_lookups", cs.lookups},         {"sf_hits", cs.hits},
                        {"sf_entries", c->entries()},       {"snooped_reads", cs.snooped},
                        {"line_waits", cs.lineWaits},       {"unowned_writes", cs.unownedWrites}};
                    for (const auto& n : counts) r.emplace_back(k + ".device." + n.first, double(n.second));
                }
                // An MLD: accesses of hosts whose LD the fabric manager had unbound.
                if (d.logicalDevices() > 1) {
                    r.emplace_back(k + ".device.denied_reads", double(ds.deniedReads));
                    r.emplace_back(k + ".device.denied_writes", double(ds.deniedWrites));
                }
                // An MLD: what each logical device moved (LD i went to the i-th host to reach it).
                for (uint32_t j = 0; d.boundLds() > 1 && j < d.boundLds(); ++j) {
                    const std::string ld = k + ".device.ld" + std::to_string(j);
                    r.emplace_back(ld + ".read_gbps", gbps(ds.ldReads[j]));
                    r.emplace_back(ld + ".write_gbps", gbps(ds.ldWrites[j]));
                    for (int q = 0; q < 4; ++q) r.emplace_back(ld + ".devload_" + loads[q], double(ds.ldDevLoad[j][q]));
                }
            }
            for (const CxlSwitch* sw : w.switches) {
                const std::string& k = sw->where();
                for (uint32_t u = 0; u < sw->upstreamPorts(); ++u) {
                    const CxlLink& l = sw->upstreamLink(u);
                    const std::string up = u ? k + ".up" + std::to_string(u) : k;
                    channelReport(r, up + ".link.m2s", l.m2s_, l.rawBytesPerSec(), s, e);
                    channelReport(r, up + ".link.s2m", l.s2m_, l.rawBytesPerSec(), s, e);
                }
                const SwitchStats& st = sw->stats();
                r.emplace_back(k + ".switch.requests", double(st.requests));
                r.emplace_back(k + ".switch.responses", double(st.responses));
                r.emplace_back(k + ".switch.egress_full", double(st.egressFull));
                r.emplace_back(k + ".switch.credit_waits", double(st.creditWaits));
                for (uint32_t j = 0; j < sw->ports(); ++j) {
                    const PortStats& ps = sw->portStats(j);
                    const std::string d = k + ".switch.dsp" + std::to_string(j);
                    r.emplace_back(d + ".requests", double(ps.requests));
                    r.emplace_back(d + ".responses", double(ps.responses));
                    r.emplace_back(d + ".response_wait_ns",
                                   ps.responses ? ticksToNs(ps.responseWait) / double(ps.responses) : 0.0);
                }
                for (uint32_t u = 0; sw->upstreamPorts() > 1 && u < sw->upstreamPorts(); ++u) {
                    const std::string d = k + ".switch.up" + std::to_string(u);
                    r.emplace_back(d + ".requests", double(sw->upstreamStats(u).requests));
                    r.emplace_back(d + ".responses", double(sw->upstreamStats(u).responses));
                }
                if (sw->measuresCongestion()) congestionReport(r, *sw, s, e);
            }
            if (w.bridge) r.emplace_back(w.p.name + ".bridge.refused", double(w.bridge->stats().refused));
            if (w.bridge && w.bridge->routes()) {  // requests no committed decoder covered
                r.emplace_back(w.p.name + ".bridge.unrouted_reads", double(w.bridge->stats().unroutedReads));
                r.emplace_back(w.p.name + ".bridge.unrouted_writes", double(w.bridge->stats().unroutedWrites));
                r.emplace_back(w.p.name + ".bridge.poisoned_reads", double(w.bridge->stats().poisoned));
            }
            if (w.bridge && w.p.bridge.devload_throttle)
                r.emplace_back(w.p.name + ".bridge.throttled", double(w.bridge->stats().throttled));
        }
        if (!h.mapped) continue;
        // What the address map sent to each window: data requests, not page walks.
        for (size_t i = 0; i < h.windows.size(); ++i) {
            const WindowStats& st = h.uncore->windowStats()[i];
            const std::string k = "window." + h.windows[i].p.name;
            r.emplace_back(k + ".read_gbps", gbps(st.reads));
            r.emplace_back(k + ".write_gbps", gbps(st.writes));
            r.emplace_back(k + ".requests", double(st.reads + st.writes));
        }
    }
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
