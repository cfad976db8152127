// What a system reports: every memory's DRAM, link and device counters over
// an interval, what the address map sent to each window, and the coherent
// part's protocol counters and bounds.
#include <algorithm>

#include "cxlcore/system/system.hpp"

namespace cxlcore {

namespace {
const char* const kLoads[4] = {"light", "optimal", "moderate", "severe"};

double gbps(double bytes, Tick s, Tick e) { return e > s ? bytes / (double(e - s) * 1e-12) / 1e9 : 0; }

void reportChannel(Report& r, const std::string& k, const FlitChannel& c, double rawBytesPerSec, Tick s, Tick e) {
    const ChannelStats& st = c.stats();
    r.emplace_back(k + ".data_gbps", gbps(double(st.dataBytes), s, e));
    r.emplace_back(k + ".raw_gbps", rawBytesPerSec / 1e9);
    r.emplace_back(k + ".utilization", e > s ? std::min(1.0, double(c.busy()) / double(e - s)) : 0);
    r.emplace_back(k + ".flits", double(st.flits));
    r.emplace_back(k + ".messages", double(st.messages));
    r.emplace_back(k + ".slot_fill",
                   st.flits ? double(st.units) / (double(st.flits) * c.unitsPerFlit()) : 0);
    r.emplace_back(k + ".crc_errors", double(st.crcErrors));
    r.emplace_back(k + ".replayed_flits", double(st.replayedFlits));
}

// The tables componentStats() returns, in the order the functions below report.
std::vector<StatSpec> dramStats(const std::string& pre = "") {
    return {{pre + "read_gbps", "GB/s", "", "data read from the media (64 B per read)"},
            {pre + "write_gbps", "GB/s", "", "data written to the media"},
            {pre + "peak_gbps", "GB/s", "", "the channels' peak data rate"},
            {pre + "bus_utilization", "ratio", "", "time the data buses were busy, per channel"},
            {pre + "row_hit_rate", "ratio", "", "accesses that found their row open"},
            {pre + "row_conflict_rate", "ratio", "", "accesses that closed another row first"},
            {pre + "refreshes", "count", "", "refresh commands issued"},
            {pre + "refreshes_postponed", "count", "", "refreshes postponed behind traffic"},
            {pre + "turnarounds", "count", "", "read/write bus turnarounds"},
            {pre + "rank_switches", "count", "", "rank-to-rank switches"},
            {pre + "write_bursts", "count", "", "write drains"},
            {pre + "mean_read_queue", "requests", "", "time-averaged read queue depth"},
            {pre + "retries", "count", "", "requests refused for a full queue"}};
}

void addChannelStats(std::vector<StatSpec>& v, const std::string& dir, const std::string& what) {
    const std::string p = dir + ".";
    v.push_back({p + "data_gbps", "GB/s", "", "data payload carried " + what});
    v.push_back({p + "raw_gbps", "GB/s", "", "the direction's raw rate (lanes x rate x coding)"});
    v.push_back({p + "utilization", "ratio", "", "time the direction was sending flits"});
    v.push_back({p + "flits", "count", "", "flits sent"});
    v.push_back({p + "messages", "count", "", "messages sent"});
    v.push_back({p + "slot_fill", "ratio", "", "slots used per slot sent"});
    v.push_back({p + "crc_errors", "count", "", "flits that failed their CRC"});
    v.push_back({p + "replayed_flits", "count", "", "flits sent again from the retry buffer"});
}

std::vector<StatSpec> makeLinkStats() {
    std::vector<StatSpec> v;
    addChannelStats(v, "m2s", "host to device (M2S)");
    addChannelStats(v, "s2m", "device to host (S2M)");
    return v;
}

std::vector<StatSpec> makeType3Stats() {
    std::vector<StatSpec> v = dramStats("media.");
    v.push_back({"mean_occupancy", "requests", "", "time-averaged requests inside the controller"});
    for (const char* l : kLoads)
        v.push_back({std::string("devload_") + l, "count", "", std::string("responses that carried DevLoad ") + l});
    v.push_back({"media_retries", "count", "", "requests the media refused for a full queue"});
    const std::string dcd = "device.dynamic_capacity = 1";
    v.push_back({"ld<i>.dc_poison_reads", "count", dcd, "reads of LD i outside its extents, answered with poison"});
    v.push_back({"ld<i>.dc_dropped_writes", "count", dcd, "writes of LD i outside its extents, dropped"});
    const std::string shared = "device.shared = 1";
    const std::pair<const char*, const char*> dc[] = {
        {"bisnp_inv", "BISnpInv sent"},
        {"bisnp_data", "BISnpData sent"},
        {"birsp_i", "BIRspI received"},
        {"birsp_s", "BIRspS received"},
        {"sf_evictions", "snoop filter entries evicted"},
        {"sf_eviction_snoops", "back-invalidates sent to evict snoop filter entries"},
        {"sf_lookups", "snoop filter lookups"},
        {"sf_hits", "snoop filter lookups that found the line"},
        {"sf_entries", "snoop filter entries in use at the end"},
        {"snooped_reads", "reads that back-invalidated another host first"},
        {"line_waits", "requests that waited for another request to the line"},
        {"unowned_writes", "writes from a host the filter did not list as owner"}};
    for (const auto& d : dc) v.push_back({d.first, "count", shared, d.second});
    const std::string mld = "device.logical_devices > 1";
    v.push_back({"denied_reads", "count", mld, "reads of a host whose LD the fabric manager had unbound"});
    v.push_back({"denied_writes", "count", mld, "writes of a host whose LD the fabric manager had unbound"});
    const std::string bound = "more than one LD bound";
    v.push_back({"ld<i>.read_gbps", "GB/s", bound, "data read by LD i (the i-th host to reach the device)"});
    v.push_back({"ld<i>.write_gbps", "GB/s", bound, "data written by LD i"});
    for (const char* l : kLoads)
        v.push_back({std::string("ld<i>.devload_") + l, "count", bound,
                     std::string("LD i's responses that carried DevLoad ") + l});
    return v;
}

std::vector<StatSpec> makeSwitchStats() {
    const std::string many = "more than one upstream port";
    return {{"requests", "count", "", "requests switched downstream"},
            {"responses", "count", "", "responses switched upstream"},
            {"egress_full", "count", "", "times a message waited for room in an egress queue"},
            {"credit_waits", "count", "", "times a message waited for a link credit"},
            {"dsp<i>.requests", "count", "", "requests sent out of downstream port i"},
            {"dsp<i>.responses", "count", "", "responses that came in on downstream port i"},
            {"dsp<i>.response_wait_ns", "ns", "", "mean time a response from port i waited in the switch"},
            {"up<i>.requests", "count", many, "requests that came in on upstream port i"},
            {"up<i>.responses", "count", many, "responses sent out of upstream port i"}};
}

std::vector<StatSpec> makeBridgeStats() {
    const std::string routes = "routing by committed HDM decoders";
    return {{"refused", "count", "", "requests refused for a full tracker"},
            {"unrouted_reads", "count", routes, "reads no committed decoder covered, answered by the bridge"},
            {"unrouted_writes", "count", routes, "writes no committed decoder covered, dropped"},
            {"poisoned_reads", "count", routes, "unrouted reads answered with poison"},
            {"throttled", "count", "devload_throttle = 1", "requests that waited for their port's DevLoad throttle"}};
}

std::vector<StatSpec> makeRemoteStats() {
    std::vector<StatSpec> v;
    addChannelStats(v, "out", "to the remote home");
    addChannelStats(v, "back", "back from the remote home");
    return v;
}

std::vector<StatSpec> makeHostStats() {
    const std::string map = "several mem connections (an address map)";
    return {{"window.<w>.read_gbps", "GB/s", map, "data the cores read from window w (named after its component)"},
            {"window.<w>.write_gbps", "GB/s", map, "data the cores wrote to window w"},
            {"window.<w>.requests", "count", map, "requests the address map sent to window w (page walks not counted)"}};
}
}  // namespace

const std::vector<StatSpec>& componentStats(const std::string& type) {
    static const std::vector<std::pair<std::string, std::vector<StatSpec>>> all{
        {"host", makeHostStats()},     {"dram", dramStats()},          {"remote_socket", makeRemoteStats()},
        {"host_bridge", makeBridgeStats()}, {"switch", makeSwitchStats()}, {"link", makeLinkStats()},
        {"type3", makeType3Stats()}};
    static const std::vector<StatSpec> none;
    for (const auto& t : all)
        if (t.first == type) return t.second;
    return none;
}

void reportDram(Report& r, const std::string& k, const DramController& d, Tick s, Tick e) {
    const DramStats& st = d.stats();
    const double acc = double(st.reads + st.writes);
    r.emplace_back(k + ".read_gbps", gbps(st.reads * 64.0, s, e));
    r.emplace_back(k + ".write_gbps", gbps(st.writes * 64.0, s, e));
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

void reportLink(Report& r, const std::string& k, const CxlLink& l, Tick s, Tick e) {
    reportChannel(r, k + ".m2s", l.m2s_, l.rawBytesPerSec(), s, e);
    reportChannel(r, k + ".s2m", l.s2m_, l.rawBytesPerSec(), s, e);
}

void reportRemoteSocket(Report& r, const std::string& k, const InterSocket& rs, Tick s, Tick e) {
    reportChannel(r, k + ".out", rs.out_, rs.bytesPerSec(), s, e);
    reportChannel(r, k + ".back", rs.back_, rs.bytesPerSec(), s, e);
}

void reportType3(Report& r, const std::string& k, const Type3Device& d, Tick s, Tick e) {
    reportDram(r, k + ".media", d.media(), s, e);
    const DeviceStats& ds = d.stats();
    r.emplace_back(k + ".mean_occupancy", d.meanOccupancy(s, e));
    for (int j = 0; j < 4; ++j) r.emplace_back(k + ".devload_" + kLoads[j], double(ds.devLoad[j]));
    r.emplace_back(k + ".media_retries", double(ds.mediaRetries));
    // A DCD: accesses outside the extents each LD was given (poisoned reads, dropped writes).
    for (uint32_t j = 0; d.dynamicCapacity() && j < d.boundLds(); ++j) {
        const std::string ld = k + ".ld" + std::to_string(j);
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
        for (const auto& n : counts) r.emplace_back(k + "." + n.first, double(n.second));
    }
    // An MLD: accesses of hosts whose LD the fabric manager had unbound.
    if (d.logicalDevices() > 1) {
        r.emplace_back(k + ".denied_reads", double(ds.deniedReads));
        r.emplace_back(k + ".denied_writes", double(ds.deniedWrites));
    }
    // An MLD: what each logical device moved (LD i went to the i-th host to reach it).
    for (uint32_t j = 0; d.boundLds() > 1 && j < d.boundLds(); ++j) {
        const std::string ld = k + ".ld" + std::to_string(j);
        r.emplace_back(ld + ".read_gbps", gbps(double(ds.ldReads[j]) * kLineBytes, s, e));
        r.emplace_back(ld + ".write_gbps", gbps(double(ds.ldWrites[j]) * kLineBytes, s, e));
        for (int q = 0; q < 4; ++q) r.emplace_back(ld + ".devload_" + kLoads[q], double(ds.ldDevLoad[j][q]));
    }
}

void reportSwitch(Report& r, const std::string& k, const CxlSwitch& sw) {
    const SwitchStats& st = sw.stats();
    r.emplace_back(k + ".requests", double(st.requests));
    r.emplace_back(k + ".responses", double(st.responses));
    r.emplace_back(k + ".egress_full", double(st.egressFull));
    r.emplace_back(k + ".credit_waits", double(st.creditWaits));
    for (uint32_t j = 0; j < sw.ports(); ++j) {
        const PortStats& ps = sw.portStats(j);
        const std::string d = k + ".dsp" + std::to_string(j);
        r.emplace_back(d + ".requests", double(ps.requests));
        r.emplace_back(d + ".responses", double(ps.responses));
        r.emplace_back(d + ".response_wait_ns", ps.responses ? ticksToNs(ps.responseWait) / double(ps.responses) : 0.0);
    }
    for (uint32_t u = 0; sw.upstreamPorts() > 1 && u < sw.upstreamPorts(); ++u) {
        const std::string d = k + ".up" + std::to_string(u);
        r.emplace_back(d + ".requests", double(sw.upstreamStats(u).requests));
        r.emplace_back(d + ".responses", double(sw.upstreamStats(u).responses));
    }
}

void reportHostBridge(Report& r, const std::string& k, const HostBridge& b) {
    const BridgeStats& st = b.stats();
    r.emplace_back(k + ".refused", double(st.refused));
    if (b.routes()) {  // requests no committed decoder covered
        r.emplace_back(k + ".unrouted_reads", double(st.unroutedReads));
        r.emplace_back(k + ".unrouted_writes", double(st.unroutedWrites));
        r.emplace_back(k + ".poisoned_reads", double(st.poisoned));
    }
    if (b.throttles()) r.emplace_back(k + ".throttled", double(st.throttled));
}

void reportHostWindows(Report& r, const std::string& k, const Uncore& u, const std::vector<std::string>& windows,
                       Tick s, Tick e) {
    // Data requests, not page walks.
    for (size_t i = 0; i < windows.size(); ++i) {
        const WindowStats& st = u.windowStats()[i];
        const std::string w = k + ".window." + windows[i];
        r.emplace_back(w + ".read_gbps", gbps(double(st.reads) * kLineBytes, s, e));
        r.emplace_back(w + ".write_gbps", gbps(double(st.writes) * kLineBytes, s, e));
        r.emplace_back(w + ".requests", double(st.reads + st.writes));
    }
}

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
    for (const auto& sw : switches_) reportSwitch(r, sw->where(), *sw);
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
