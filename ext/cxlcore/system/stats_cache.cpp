// The statistics of the CXL.cache components (home agent, accelerators, their
// links' channels, the NIC's engine): apart from stats.cpp because the gem5
// build, which has no CXL.cache components of the core, compiles that file only.
#include <algorithm>

#include "cxlcore/system/report.hpp"

namespace cxlcore {

void reportHomeAgent(Report& r, const std::string& k, const HomeAgent& home, size_t devices) {
    const HomeStats& h = home.stats();
    for (const Command& c : kCommands.c)
        if (c.chan == kD2HReq) r.emplace_back(k + ".requests_" + lowerCase(c.name), double(h.requests[int(c.opc)]));
    for (uint32_t i = 0; i < kNumSnoops; ++i)
        r.emplace_back(k + ".snoops_" + lowerCase(opName(snoopOpc(i))), double(h.snoops[i]));
    size_t maxDown = 0;
    for (size_t i = 0; i < devices; ++i) maxDown = std::max(maxDown, home.down(uint16_t(i)).maxQueued());
    const std::pair<const char*, double> counts[] = {
        {"back_invalidates", double(h.biSnps)},
        {"host_hits", double(h.hostHits)},
        {"host_misses", double(h.hostMisses)},
        {"memory_reads", double(h.memReads)},
        {"memory_writes", double(h.memWrites)},
        {"conflicts", double(h.conflicts)},
        {"sf_evictions", double(h.sfEvictions)},
        {"max_tracker", double(h.maxTracker)},
        {"max_line_queue", double(h.maxLineQueue)},
        {"max_queued_down", double(maxDown)},
        {"line_states_max", double(h.maxLineStates)},
        {"line_states_at_end", double(home.lineStates())},
        {"host_cache.lines_max", double(h.maxHostLines)},
        {"host_cache.lines_at_end", double(home.hostLines())},
        {"host_cache.dirty_at_end", double(home.hostDirtyLines())},
        {"host_cache.dirtied", double(h.hostDirtied)},
        {"host_cache.evictions", double(h.hostEvictions)},
        {"host_cache.writebacks", double(h.hostWritebacks)},
        {"host_cache.bias_flip_flushes", double(h.flushedLines)}};
    for (const auto& c : counts) r.emplace_back(k + "." + c.first, c.second);
}

void reportAccelerator(Report& r, const std::string& k, const std::vector<const Accelerator*>& copies) {
    AccelStats a;
    size_t maxMshrs = 0, maxUp = 0;
    for (const Accelerator* d : copies) {
        a.add(d->stats());
        maxMshrs = std::max(maxMshrs, d->maxMshrs());
        maxUp = std::max(maxUp, d->up().maxQueued());
    }
    const std::string c = k + ".cache.";
    r.emplace_back(c + "loads", double(a.loads));
    r.emplace_back(c + "stores", double(a.stores));
    r.emplace_back(c + "hits", double(a.hits));
    r.emplace_back(c + "misses", double(a.misses));
    r.emplace_back(c + "mshr_full_stalls", double(a.mshrFull));
    r.emplace_back(c + "fills_shared", double(a.grants[int(MState::S)]));
    r.emplace_back(c + "fills_exclusive", double(a.grants[int(MState::E)]));
    for (uint32_t i = 0; i < kNumSnoops; ++i)
        r.emplace_back(c + "snoops_" + lowerCase(opName(snoopOpc(i))), double(a.snoopsRecv[i]));
    r.emplace_back(c + "clean_evicts", double(a.cleanEvicts));
    r.emplace_back(c + "dirty_evicts", double(a.dirtyEvicts));
    r.emplace_back(c + "bogus_writebacks", double(a.bogusData));
    r.emplace_back(c + "max_mshrs", double(maxMshrs));
    r.emplace_back(c + "bias_flip_flushes", double(a.flushedLines));
    r.emplace_back(k + ".dcoh.bias_flips_to_device", double(a.deviceBiasFlips));
    r.emplace_back(k + ".dcoh.bias_flips_to_host", double(a.hostBiasFlips));
    r.emplace_back(k + ".dcoh.back_invalidates", double(a.biSnps));
    r.emplace_back(k + ".memory.local_reads", double(a.localMemReads));
    r.emplace_back(k + ".memory.via_host", double(a.fwdReads));
    r.emplace_back(k + ".dma.transfers", double(a.dmaTransfers));
    r.emplace_back(k + ".max_queued_up", double(maxUp));
}

void reportCacheChannels(Report& r, const std::string& k, const std::vector<const Wire*>& ups,
                         const std::vector<const Wire*>& downs) {
    for (int c = 0; c < kNumChannels; ++c) {
        uint64_t n = 0;
        for (const Wire* w : isUpstream(Channel(c)) ? ups : downs) n += w->sent(Channel(c));
        r.emplace_back(k + "." + channelName(Channel(c)) + ".messages", double(n));
    }
}

void reportCacheSwitch(Report& r, const std::string& k, const CacheSwitch& sw) {
    // requests: messages toward the devices, responses: messages from them; its queues are bounded by credits only.
    const SwitchStats& st = sw.stats();
    r.emplace_back(k + ".requests", double(st.requests));
    r.emplace_back(k + ".responses", double(st.responses));
    r.emplace_back(k + ".egress_full", 0.0);
    r.emplace_back(k + ".credit_waits", double(st.creditWaits));
    for (uint32_t j = 0; j < sw.ports(); ++j) reportSwitchPort(r, k + ".dsp" + std::to_string(j), sw.portStats(j));
}

void reportDramAccesses(Report& r, const std::string& k, const DramController& d) {
    r.emplace_back(k + ".reads", double(d.stats().reads));
    r.emplace_back(k + ".writes", double(d.stats().writes));
}

void reportNic(Report& r, const std::string& k, const NicStats* s, const AtomicOrdering& order, const NetWire& wire,
               size_t maxInFlight) {
    if (s) {
        r.emplace_back(k + ".ops", double(s->ops));
        r.emplace_back(k + ".polls", double(s->polls));
        r.emplace_back(k + ".doorbell_changes", double(s->doorbellChanges));
        r.emplace_back(k + ".descriptors", double(s->descriptors));
        r.emplace_back(k + ".execute_ns_mean", s->ops ? ticksToNs(s->executing) / double(s->ops) : 0.0);
        r.emplace_back(k + ".operand_hits", double(s->hits));
        r.emplace_back(k + ".ring_errors", double(s->ringErrors));
    }
    r.emplace_back(k + ".max_ops_in_flight", double(maxInFlight));
    r.emplace_back(k + ".max_line_queue", double(order.maxLineQueue()));
    r.emplace_back(k + ".max_pending_addresses", double(order.maxPending()));
    r.emplace_back(k + ".ordering_idle_at_end", order.idle() ? 1.0 : 0.0);
    r.emplace_back(k + ".wire_frames", double(wire.frames()));
}

}  // namespace cxlcore
