#include "cxlcore/system/coherent_system.hpp"

#include <algorithm>
#include <sstream>

namespace cxlcore {

namespace {
std::string ns(Tick t) {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(1);
    os << ticksToNs(t);
    return os.str();
}
}  // namespace

void CoherentParams::validate() const {
    // The names of the Python groups (simcxl.coherent.AccelSystem).
    host_dram.validate("host_dram");
    link.validate("link");
    cache.validate("cache");
    home.validate("home");
    accel.validate("accel");
    dma.validate("dma");
    device_dram.validate("media");
}

CoherentSystem::CoherentSystem(const CoherentParams& p, bool check) : p_(p) {
    p_.validate();
    if (check) checker.reset(new CoherenceChecker(p_.accel.devices + 1));
    home.reset(new HomeAgent(loop, p_.home, p_.host_dram, pool, checker.get(), "home"));
    for (uint32_t i = 0; i < p_.accel.devices; ++i) {
        const std::string where = "accel[" + std::to_string(i) + "]";
        links.emplace_back(new CxlLink(p_.link, "cxl.link", p_.seed * 131 + i));
        devices.emplace_back(new Accelerator(loop, uint16_t(i), p_.cache, p_.accel, p_.dma, p_.device_dram,
                                             *links.back(), *home, pool, checker.get(), where));
        home->addDevice(devices.back().get(), links.back().get(), p_.cache, p_.dma);
        devices.back()->setWatch(&watch);
    }
    home->setWatch(&watch);
}

Tick CoherentSystem::stallWindow() const {
    // Longer than any single delay the parameters allow, so only a real stall trips it.
    const double longest = p_.home.latency_ns + p_.home.host_hit_ns + p_.cache.latency_ns +
                           p_.cache.snoop_latency_ns + p_.accel.bias_flip_ns + p_.accel.memory_latency_ns +
                           p_.dma.setup_ns + p_.dma.engine_latency_ns + p_.dma.poll_interval_ns +
                           p_.dma.interrupt_ns + p_.link.phy_latency_ns + p_.link.replay_latency_ns +
                           p_.host_dram.tRFC_ns + p_.device_dram.tRFC_ns;
    return nsToTicks(100000.0 + 4.0 * longest);
}

void CoherentSystem::run() {
    // Checked once per window of simulated time: stalled when no event is left,
    // when nothing completed for a window, or when the oldest request has
    // waited four windows while others complete (starvation).
    const Tick window = stallWindow();
    watch.lastProgress = loop.now();
    for (Tick until = loop.now() + window;; until += window) {
        loop.run(until);
        const bool drained = loop.idle();
        if (drained && !watch.outstanding) return;
        if (!watch.outstanding) continue;  // only background work left
        const Tick t = drained ? loop.now() : until;
        Oldest o;
        for (auto& d : devices) d->oldest(o);
        home->oldest(o);
        std::string why;
        if (drained)
            why = "no event left to complete them";
        else if (t - watch.lastProgress >= window)
            why = "none completed for " + ns(t - watch.lastProgress) + " ns while events kept firing";
        else if (o.issued != kNever && t - o.issued >= 4 * window)
            why = "the oldest waited over " + ns(4 * window) + " ns while others completed";
        else
            continue;
        std::string msg = "CXL.cache run stalled at " + ns(t) + " ns with " + std::to_string(watch.outstanding) +
                          " requests outstanding: " + why + "; the oldest waits in ";
        if (o.issued != kNever)
            msg += o.where + ", age " + ns(t - o.issued) + " ns";
        else
            msg += "an unknown place (" + home->describe() + ")";
        throw StallError(msg);
    }
}

bool CoherentSystem::quiet() const {
    if (!home->quiet()) return false;
    for (auto& d : devices)
        if (!d->quiet()) return false;
    return true;
}

void CoherentSystem::report(Report& r, Tick end) const {
    AccelStats sum;
    size_t maxMshrs = 0, maxUp = 0, maxDown = 0;
    uint64_t up[kNumCClasses] = {}, down[kNumCClasses] = {};
    double upBusy = 0, downBusy = 0;
    for (size_t i = 0; i < devices.size(); ++i) {
        const AccelStats& s = devices[i]->stats();
        sum.loads += s.loads;
        sum.stores += s.stores;
        sum.hits += s.hits;
        sum.misses += s.misses;
        sum.mshrFull += s.mshrFull;
        for (int k = 0; k < 3; ++k) sum.snoopsRecv[k] += s.snoopsRecv[k];
        sum.cleanEvicts += s.cleanEvicts;
        sum.dirtyEvicts += s.dirtyEvicts;
        sum.bogusData += s.bogusData;
        sum.hostBiasFlips += s.hostBiasFlips;
        sum.deviceBiasFlips += s.deviceBiasFlips;
        sum.biSnps += s.biSnps;
        sum.localMemReads += s.localMemReads;
        sum.fwdReads += s.fwdReads;
        sum.dmaTransfers += s.dmaTransfers;
        sum.flushedLines += s.flushedLines;
        for (int k = 0; k < 4; ++k) sum.grants[k] += s.grants[k];
        maxMshrs = std::max(maxMshrs, devices[i]->maxMshrs());
        maxUp = std::max(maxUp, devices[i]->up().maxQueued());
        maxDown = std::max(maxDown, home->down(uint16_t(i)).maxQueued());
        for (int c = 0; c < kNumCClasses; ++c) {
            up[c] += devices[i]->up().sent(CClass(c));
            down[c] += home->down(uint16_t(i)).sent(CClass(c));
        }
        upBusy += double(links[i]->s2m_.busy());
        downBusy += double(links[i]->m2s_.busy());
    }
    const double n = devices.empty() ? 1.0 : double(devices.size());
    r.emplace_back("device_loads", double(sum.loads));
    r.emplace_back("device_stores", double(sum.stores));
    r.emplace_back("device_hits", double(sum.hits));
    r.emplace_back("device_misses", double(sum.misses));
    r.emplace_back("mshr_full_stalls", double(sum.mshrFull));
    r.emplace_back("fills_shared", double(sum.grants[int(MState::S)]));
    r.emplace_back("fills_exclusive", double(sum.grants[int(MState::E)]));
    r.emplace_back("snoops_received_SnpData", double(sum.snoopsRecv[0]));
    r.emplace_back("snoops_received_SnpInv", double(sum.snoopsRecv[1]));
    r.emplace_back("snoops_received_SnpCur", double(sum.snoopsRecv[2]));
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
    for (int o = 0; o < int(Opc::BiasFlipReq) + 1; ++o)
        r.emplace_back(std::string("home_requests_") + opName(Opc(o)), double(h.requests[o]));
    r.emplace_back("home_back_invalidates", double(h.biSnps));
    r.emplace_back("home_snoops_SnpData", double(h.snoops[0]));
    r.emplace_back("home_snoops_SnpInv", double(h.snoops[1]));
    r.emplace_back("home_snoops_SnpCur", double(h.snoops[2]));
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
    for (int c = 0; c < kNumCClasses; ++c) {
        const bool isUp =
            c == kCD2HReq || c == kCD2HRsp || c == kCD2HData || c == kCS2M || c == kCS2MBISnp || c == kCIoD2H;
        r.emplace_back(std::string("messages_") + className(CClass(c)), double(isUp ? up[c] : down[c]));
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
    r.emplace_back("host_dram_reads", double(home->dramStats().reads));
    r.emplace_back("host_dram_writes", double(home->dramStats().writes));
    r.emplace_back("bias_flip_host_lines_flushed", double(h.flushedLines));
    r.emplace_back("bias_flip_device_lines_flushed", double(sum.flushedLines));
    r.emplace_back("quiet_at_end", quiet() ? 1.0 : 0.0);
    if (checker) {
        r.emplace_back("checker_checks", double(checker->checks()));
        r.emplace_back("checker_violations", double(checker->violations()));
    }
}

}  // namespace cxlcore
