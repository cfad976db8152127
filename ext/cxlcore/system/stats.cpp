// The statistics of each component, named `<path>.<stat>` (report.hpp), and
// the registry of what each type reports. Used by System::report and by the
// gem5 wrappers (devices/cxl_core_stats.hh), so both engines name them alike.
#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "cxlcore/system/report.hpp"

namespace cxlcore {

namespace {
const char* const kLoads[4] = {"light", "optimal", "moderate", "severe"};

double gbps(double bytes, Tick s, Tick e) { return e > s ? bytes / (double(e - s) * 1e-12) / 1e9 : 0; }

// A direction of a link, over its copies (one for most links): counters and
// rates summed, utilization the copies' mean.
void reportChannel(Report& r, const std::string& k, const std::vector<const FlitChannel*>& copies,
                   double rawBytesPerSec, Tick s, Tick e) {
    ChannelStats st;
    double busy = 0;
    for (const FlitChannel* c : copies) {
        const ChannelStats& o = c->stats();
        st.dataBytes += o.dataBytes;
        st.flits += o.flits;
        st.messages += o.messages;
        st.units += o.units;
        st.crcErrors += o.crcErrors;
        st.replayedFlits += o.replayedFlits;
        busy += double(c->busy());
    }
    const double n = double(copies.size());
    r.emplace_back(k + ".data_gbps", gbps(double(st.dataBytes), s, e));
    r.emplace_back(k + ".raw_gbps", rawBytesPerSec * n / 1e9);
    r.emplace_back(k + ".utilization", e > s ? std::min(1.0, busy / n / double(e - s)) : 0);
    r.emplace_back(k + ".flits", double(st.flits));
    r.emplace_back(k + ".messages", double(st.messages));
    r.emplace_back(k + ".slot_fill",
                   st.flits ? double(st.units) / (double(st.flits) * copies[0]->unitsPerFlit()) : 0);
    r.emplace_back(k + ".crc_errors", double(st.crcErrors));
    r.emplace_back(k + ".replayed_flits", double(st.replayedFlits));
}

// Lower-case names of opcodes and channels in statistics (RdOwn: requests_rdown).

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

void addChannelStats(std::vector<StatSpec>& v, const std::string& dir, const std::string& what,
                     const std::string& when = "") {
    const std::string p = dir + ".";
    v.push_back({p + "data_gbps", "GB/s", when, "data payload carried " + what});
    v.push_back({p + "raw_gbps", "GB/s", when, "the direction's raw rate (lanes x rate x coding)"});
    v.push_back({p + "utilization", "ratio", when, "time the direction was sending flits"});
    v.push_back({p + "flits", "count", when, "flits sent"});
    v.push_back({p + "messages", "count", when, "messages sent"});
    v.push_back({p + "slot_fill", "ratio", when, "slots used per slot sent"});
    v.push_back({p + "crc_errors", "count", when, "flits that failed their CRC"});
    v.push_back({p + "replayed_flits", "count", when, "flits sent again from the retry buffer"});
}

// A link's two directions (a CXL link, the remote socket's inter-socket link).
std::vector<StatSpec> twoChannels(const std::string& a, const std::string& aWhat, const std::string& b,
                                  const std::string& bWhat) {
    std::vector<StatSpec> v;
    addChannelStats(v, a, aWhat);
    addChannelStats(v, b, bWhat);
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
    const std::string congestion = "egress_congestion = 1";
    const std::string pbr = "routing = pbr", isl = "routing = pbr, an inter-switch link's port";
    std::vector<StatSpec> v{{"requests", "count", "", "requests switched downstream (below a home agent: every message toward the devices)"},
            {"responses", "count", "", "responses switched upstream (below a home agent: every message from the devices)"},
            {"egress_full", "count", "", "times a message waited for room in an egress queue"},
            {"credit_waits", "count", "", "times a message waited for a link credit"},
            {"unrouted_reads", "count", "routing by committed HDM decoders",
             "reads no decoder committed at its upstream port covered, answered by the switch"},
            {"unrouted_writes", "count", "routing by committed HDM decoders",
             "writes no decoder committed at its upstream port covered, dropped"},
            {"poisoned_reads", "count", "routing by committed HDM decoders", "unrouted reads answered with poison"},
            {"dsp<i>.requests", "count", "", "requests sent out of downstream port i"},
            {"dsp<i>.responses", "count", "", "responses that came in on downstream port i"},
            {"dsp<i>.response_wait_ns", "ns", "", "mean time a response from port i waited in the switch"},
            {"up<i>.requests", "count", many, "requests that came in on upstream port i"},
            {"up<i>.responses", "count", many, "responses sent out of upstream port i"},
            {"devload_raised", "count", congestion, "responses whose DevLoad the switch raised"},
            {"dsp<i>.egress_backpressure", "ratio", congestion, "share of the window downstream port i's egress was backpressured"},
            {"up<i>.egress_backpressure", "ratio", congestion, "share of the window upstream port i's egress was backpressured"}};
    // Port-based routing: every port by its graph name; an inter-switch link's carries both ways.
    for (const char* port : {"up<i>", "dsp<i>"}) {
        const std::string p = std::string(port) + ".";
        v.push_back({p + "pid", "", pbr, "the port's PBR ID (an edge port)"});
        v.push_back({p + "requests_out", "count", isl, "requests sent out of the port"});
        v.push_back({p + "requests_in", "count", isl, "requests that came in on the port"});
        v.push_back({p + "responses_out", "count", isl, "responses sent out of the port"});
        v.push_back({p + "responses_in", "count", isl, "responses that came in on the port"});
        v.push_back({p + "m2s_egress_backpressure", "ratio", isl + ", " + congestion,
                     "share of the window the port's request egress was backpressured"});
        v.push_back({p + "s2m_egress_backpressure", "ratio", isl + ", " + congestion,
                     "share of the window the port's response egress was backpressured"});
    }
    v.push_back({"up<i>.response_wait_ns", "ns", pbr, "mean time a response from the port waited in the switch"});
    return v;
}

std::vector<StatSpec> makeBridgeStats() {
    const std::string routes = "routing by committed HDM decoders";
    return {{"refused", "count", "", "requests refused for a full tracker"},
            {"unrouted_reads", "count", routes, "reads no committed decoder covered, answered by the bridge"},
            {"unrouted_writes", "count", routes, "writes no committed decoder covered, dropped"},
            {"poisoned_reads", "count", routes, "unrouted reads answered with poison"},
            {"throttled", "count", "devload_throttle = 1", "requests that waited for their port's DevLoad throttle"}};
}

// The CXL.cache part: counted from the run's start (never reset).
std::vector<StatSpec> makeHomeStats() {
    std::vector<StatSpec> v;
    for (const Command& c : kCommands.c)
        if (c.chan == kD2HReq)
            v.push_back({"requests_" + lowerCase(c.name), "count", "", std::string(c.name) + " requests from the devices"});
    for (uint32_t i = 0; i < kNumSnoops; ++i)
        v.push_back({"snoops_" + lowerCase(opName(snoopOpc(i))), "count", "",
                     std::string(opName(snoopOpc(i))) + " snoops sent to the devices"});
    const std::vector<StatSpec> rest = {
        {"back_invalidates", "count", "", "back-invalidates (BISnp) the home received from HDM-DB devices"},
        {"host_hits", "count", "", "host core accesses the host's caches served"},
        {"host_misses", "count", "", "host core accesses that missed them"},
        {"memory_reads", "count", "", "reads of host memory (through the host's address map)"},
        {"memory_writes", "count", "", "writes of host memory"},
        {"conflicts", "count", "", "requests that found another request to their line in flight"},
        {"sf_evictions", "count", "", "snoop filter entries evicted (the line invalidated in the devices)"},
        {"max_tracker", "requests", "", "most requests the home tracked at once"},
        {"max_line_queue", "requests", "", "most requests waiting behind one line"},
        {"max_queued_down", "messages", "", "most messages queued on a device's down wire"},
        {"line_states_max", "lines", "", "most line-state entries held at once"},
        {"line_states_at_end", "lines", "", "line-state entries held at the end"},
        {"host_cache.lines_max", "lines", "", "most coherent lines the host's caches held at once"},
        {"host_cache.lines_at_end", "lines", "", "coherent lines the host's caches held at the end"},
        {"host_cache.dirty_at_end", "lines", "", "dirty coherent lines in the host's caches at the end"},
        {"host_cache.dirtied", "count", "", "lines the host's stores made dirty"},
        {"host_cache.evictions", "count", "", "lines evicted from the host's caches (host_cache_bytes)"},
        {"host_cache.writebacks", "count", "", "dirty lines the host's caches wrote back"},
        {"host_cache.bias_flip_flushes", "count", "", "host lines flushed by flips of device memory to device bias"}};
    v.insert(v.end(), rest.begin(), rest.end());
    return v;
}

std::vector<StatSpec> makeAccelStats() {
    std::vector<StatSpec> v = {{"cache.loads", "count", "", "loads the device's requesters issued"},
                               {"cache.stores", "count", "", "stores the device's requesters issued"},
                               {"cache.hits", "count", "", "accesses that hit the device cache"},
                               {"cache.misses", "count", "", "accesses that missed it"},
                               {"cache.mshr_full_stalls", "count", "", "misses that waited for a free MSHR"},
                               {"cache.fills_shared", "count", "", "lines filled in state S"},
                               {"cache.fills_exclusive", "count", "", "lines filled in state E"}};
    for (uint32_t i = 0; i < kNumSnoops; ++i)
        v.push_back({"cache.snoops_" + lowerCase(opName(snoopOpc(i))), "count", "",
                     std::string(opName(snoopOpc(i))) + " snoops the cache received"});
    const std::vector<StatSpec> rest = {
        {"cache.clean_evicts", "count", "", "clean lines evicted (CleanEvict)"},
        {"cache.dirty_evicts", "count", "", "dirty lines written back (DirtyEvict)"},
        {"cache.bogus_writebacks", "count", "", "write-backs answered with bogus data (the line was snooped away)"},
        {"cache.max_mshrs", "requests", "", "most MSHRs in use at once"},
        {"cache.bias_flip_flushes", "count", "", "device lines flushed by flips of its memory to host bias"},
        {"dcoh.bias_flips_to_device", "count", "", "pages of device memory flipped to device bias"},
        {"dcoh.bias_flips_to_host", "count", "", "pages of device memory flipped to host bias"},
        {"dcoh.back_invalidates", "count", "", "back-invalidates (BISnp) sent for HDM-DB device memory"},
        {"memory.local_reads", "count", "", "reads of device memory served by the device alone"},
        {"memory.via_host", "count", "", "reads of device memory resolved by the host first (MemRdFwd)"},
        {"dma.transfers", "count", "", "DMA transfers completed"},
        {"max_queued_up", "messages", "", "most messages queued on the device's up wire"}};
    v.insert(v.end(), rest.begin(), rest.end());
    return v;
}

std::vector<StatSpec> makeNicStats() {
    std::vector<StatSpec> v = makeAccelStats();
    const std::string cxl = "RAO, mechanism cxl-nic", any = "RAO, mechanism cxl-nic or pcie-nic";
    const std::vector<StatSpec> own = {
        {"ops", "count", cxl, "atomic operations the NIC executed"},
        {"polls", "count", cxl, "polls of the doorbell line"},
        {"doorbell_changes", "count", cxl, "polls that found the doorbell changed"},
        {"descriptors", "count", cxl, "descriptors fetched"},
        {"execute_ns_mean", "ns", cxl, "mean time an operation's operand line took (its execution)"},
        {"operand_hits", "count", cxl, "operand lines found in the NIC's cache"},
        {"ring_errors", "count", cxl, "malformed ring entries"},
        {"max_ops_in_flight", "count", any, "most operations in flight at once"},
        {"max_line_queue", "count", any, "most operations waiting behind one line"},
        {"max_pending_addresses", "count", any, "most operations waiting for their address"},
        {"ordering_idle_at_end", "flag", any, "1 when no operation was left ordered at the end"},
        {"wire_frames", "count", any, "frames sent on the network wire"}};
    v.insert(v.end(), own.begin(), own.end());
    return v;
}

// A link: M2S and S2M; between two PBR switches also the reverse direction's;
// an accelerator's link also its messages per CXL channel.
std::vector<StatSpec> makeLinkStats() {
    std::vector<StatSpec> v = twoChannels("m2s", "host to device (M2S)", "s2m", "device to host (S2M)");
    const std::string isl = "joins two PBR switches";
    addChannelStats(v, "rev_m2s", "from the lower switch to the upper (requests the other way)", isl);
    addChannelStats(v, "rev_s2m", "from the upper switch to the lower (responses the other way)", isl);
    const std::string cache = "an accelerator's link (below a home agent)";
    for (int c = 0; c < kNumChannels; ++c)
        v.push_back({std::string(channelName(Channel(c))) + ".messages", "count", cache,
                     std::string("messages on channel ") + channelName(Channel(c))});
    return v;
}

std::vector<StatSpec> makeDramStats() {
    std::vector<StatSpec> v = dramStats();
    const std::string home = "the host's DRAM, with a home agent";
    v.push_back({"reads", "count", home, "reads from the run's start"});
    v.push_back({"writes", "count", home, "writes from the run's start"});
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
        {"host", makeHostStats()},     {"dram", makeDramStats()},          {"remote_socket", twoChannels("out", "to the remote home", "back", "back from the remote home")},
        {"host_bridge", makeBridgeStats()}, {"switch", makeSwitchStats()}, {"link", makeLinkStats()},
        {"type3", makeType3Stats()}, {"home_agent", makeHomeStats()}, {"accelerator", makeAccelStats()},
        {"nic", makeNicStats()}};
    static const std::vector<StatSpec> none;
    for (const auto& t : all)
        if (t.first == type) return t.second;
    return none;
}

std::string lowerCase(std::string n) {
    for (char& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
    return n;
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

void reportLink(Report& r, const std::string& k, const CxlLink& l, Tick s, Tick e, const std::string& dir) {
    reportLink(r, k, std::vector<const CxlLink*>{&l}, s, e, dir);
}

void reportLink(Report& r, const std::string& k, const std::vector<const CxlLink*>& copies, Tick s, Tick e,
                const std::string& dir) {
    std::vector<const FlitChannel*> m2s, s2m;
    for (const CxlLink* l : copies) {
        m2s.push_back(&l->m2s_);
        s2m.push_back(&l->s2m_);
    }
    reportChannel(r, k + "." + dir + "m2s", m2s, copies[0]->rawBytesPerSec(), s, e);
    reportChannel(r, k + "." + dir + "s2m", s2m, copies[0]->rawBytesPerSec(), s, e);
}

void reportRemoteSocket(Report& r, const std::string& k, const InterSocket& rs, Tick s, Tick e) {
    reportChannel(r, k + ".out", {&rs.out_}, rs.bytesPerSec(), s, e);
    reportChannel(r, k + ".back", {&rs.back_}, rs.bytesPerSec(), s, e);
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

namespace {

// A PBR switch's ports by their graph names: an edge port as an HBR switch's
// port of its kind, an inter-switch link's both ways.
void reportPbrPorts(Report& r, const std::string& k, const CxlSwitch& sw, Tick s, Tick e) {
    std::map<std::string, std::pair<int, int>> roles;  // label -> (downstream role, upstream role)
    for (uint32_t j = 0; j < sw.ports(); ++j) roles.emplace(sw.portLabel(j), std::make_pair(-1, -1)).first->second.first = int(j);
    for (uint32_t u = 0; u < sw.upstreamPorts(); ++u)
        roles.emplace(sw.upstreamLabel(u), std::make_pair(-1, -1)).first->second.second = int(u);
    const double span = e > s ? double(e - s) : 1.0;
    for (const auto& kv : roles) {
        const std::string d = k + "." + kv.first;
        const int j = kv.second.first, u = kv.second.second;
        const bool isl = j >= 0 && u >= 0;
        if (j >= 0) {
            const PortStats& ps = sw.portStats(uint32_t(j));
            r.emplace_back(d + (isl ? ".requests_out" : ".requests"), double(ps.requests));
            r.emplace_back(d + (isl ? ".responses_in" : ".responses"), double(ps.responses));
            r.emplace_back(d + ".response_wait_ns", ps.responses ? ticksToNs(ps.responseWait) / double(ps.responses) : 0.0);
            if (!isl) r.emplace_back(d + ".pid", double(sw.portPid(uint32_t(j))));
            if (sw.measuresCongestion())
                r.emplace_back(d + (isl ? ".m2s_egress_backpressure" : ".egress_backpressure"),
                               double(sw.portBackpressure(uint32_t(j))) / span);
        }
        if (u >= 0) {
            const PortStats& us = sw.upstreamStats(uint32_t(u));
            r.emplace_back(d + (isl ? ".requests_in" : ".requests"), double(us.requests));
            r.emplace_back(d + (isl ? ".responses_out" : ".responses"), double(us.responses));
            if (!isl) r.emplace_back(d + ".pid", double(sw.upstreamPid(uint32_t(u))));
            if (sw.measuresCongestion())
                r.emplace_back(d + (isl ? ".s2m_egress_backpressure" : ".egress_backpressure"),
                               double(sw.upstreamBackpressure(uint32_t(u))) / span);
        }
    }
}

}  // namespace

// A downstream port's share of a switch's traffic (CXL.mem and CXL.cache switches alike).
void reportSwitchPort(Report& r, const std::string& d, const PortStats& ps) {
    r.emplace_back(d + ".requests", double(ps.requests));
    r.emplace_back(d + ".responses", double(ps.responses));
    r.emplace_back(d + ".response_wait_ns", ps.responses ? ticksToNs(ps.responseWait) / double(ps.responses) : 0.0);
}

void reportSwitch(Report& r, const std::string& k, const CxlSwitch& sw, Tick s, Tick e) {
    const SwitchStats& st = sw.stats();
    r.emplace_back(k + ".requests", double(st.requests));
    r.emplace_back(k + ".responses", double(st.responses));
    r.emplace_back(k + ".egress_full", double(st.egressFull));
    r.emplace_back(k + ".credit_waits", double(st.creditWaits));
    if (sw.routes()) {  // requests no decoder committed at its upstream port covered
        r.emplace_back(k + ".unrouted_reads", double(st.unroutedReads));
        r.emplace_back(k + ".unrouted_writes", double(st.unroutedWrites));
        r.emplace_back(k + ".poisoned_reads", double(st.poisoned));
    }
    if (sw.portBased()) {
        if (sw.measuresCongestion()) r.emplace_back(k + ".devload_raised", double(st.devLoadRaised));
        return reportPbrPorts(r, k, sw, s, e);
    }
    for (uint32_t j = 0; j < sw.ports(); ++j) reportSwitchPort(r, k + ".dsp" + std::to_string(j), sw.portStats(j));
    for (uint32_t u = 0; sw.upstreamPorts() > 1 && u < sw.upstreamPorts(); ++u) {
        const std::string d = k + ".up" + std::to_string(u);
        r.emplace_back(d + ".requests", double(sw.upstreamStats(u).requests));
        r.emplace_back(d + ".responses", double(sw.upstreamStats(u).responses));
    }
    // Measuring egress congestion: the responses whose DevLoad it raised, and
    // each port's share of the window its egress was backpressured.
    if (!sw.measuresCongestion()) return;
    const double span = e > s ? double(e - s) : 1.0;
    r.emplace_back(k + ".devload_raised", double(st.devLoadRaised));
    for (uint32_t j = 0; j < sw.ports(); ++j)
        r.emplace_back(k + ".dsp" + std::to_string(j) + ".egress_backpressure", double(sw.portBackpressure(j)) / span);
    for (uint32_t u = 0; u < sw.upstreamPorts(); ++u)
        r.emplace_back(k + ".up" + std::to_string(u) + ".egress_backpressure",
                       double(sw.upstreamBackpressure(u)) / span);
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

}  // namespace cxlcore
