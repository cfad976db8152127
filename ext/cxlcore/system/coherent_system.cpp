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

std::string CoherentDeviceParams::instance(uint32_t k, uint32_t index) const {
    if (name.empty()) return "accel[" + std::to_string(index) + "]";
    return accel.devices == 1 ? name : name + "[" + std::to_string(k) + "]";
}

uint32_t CoherentParams::instances() const {
    uint32_t n = 0;
    for (auto& d : devices) n += d.accel.devices;
    return n;
}

std::vector<uint64_t> CoherentParams::memoryBases() const {
    std::vector<uint64_t> out;
    uint64_t next = kDevMemBase;
    for (auto& d : devices) {
        if (d.accel.type != 2) {
            out.push_back(0);
            continue;
        }
        const uint64_t page = d.accel.bias_page_bytes;
        const uint64_t base = d.accel.memory_base ? d.accel.memory_base : (next + page - 1) / page * page;
        out.push_back(base);
        next = base + d.accel.memory_bytes * d.accel.devices;
    }
    return out;
}

void CoherentParams::validate() const {
    // The names of the Python groups (simcxl.coherent.AccelSystem, AccelDevice).
    host_dram.validate("host_dram");
    home.validate("home");
    if (devices.empty()) throw ConfigError("devices is empty; allowed: one or more device descriptions");
    for (size_t i = 0; i < devices.size(); ++i) {
        const CoherentDeviceParams& d = devices[i];
        const std::string g = d.prefix();
        d.link.validate(g + "link");
        d.cache.validate(g + "cache");
        d.accel.validate(g + "accel");
        d.dma.validate(g + "dma");
        d.media.validate(g + "media");
        for (size_t j = 0; j < i; ++j)
            if (devices[j].name == d.name)
                throw ConfigError("devices[" + std::to_string(i) + "].name = '" + d.name +
                                  "' appears twice; allowed: a name of its own for each device");
    }
    const uint32_t n = instances();
    if (n > 16)
        throw ConfigError("devices: " + std::to_string(n) +
                          " accelerators in all (accel.devices summed over the devices) is out of range; allowed: 1 "
                          "to 16");
    // Each Type-2 description's memory is a window of its own: no two overlap.
    const std::vector<uint64_t> base = memoryBases();
    const uint64_t top = 1ull << kPhysAddrBits;
    for (size_t i = 0; i < devices.size(); ++i) {
        if (!base[i]) continue;
        const AccelParams& a = devices[i].accel;
        const std::string g = devices[i].prefix();
        const uint64_t size = a.memory_bytes * a.devices;
        if (base[i] > top || size > top - base[i])
            throw ConfigError(g + "accel.memory_bytes x devices = " + fmtNum(double(size)) + " at " + hexAddr(base[i]) +
                              " ends above " + hexAddr(top) + "; allowed: device memory below " + hexAddr(top));
        for (size_t j = 0; j < i; ++j) {
            if (!base[j]) continue;
            const uint64_t end = base[i] + size;
            const uint64_t endj = base[j] + devices[j].accel.memory_bytes * devices[j].accel.devices;
            if (base[i] < endj && base[j] < end)
                throw ConfigError(g + "accel.memory_base = " + fmtNum(double(a.memory_base)) + " is not allowed: " +
                                  devices[i].name + "'s device memory [" + hexAddr(base[i]) + ", " + hexAddr(end) +
                                  ") overlaps " + devices[j].name + "'s [" + hexAddr(base[j]) + ", " + hexAddr(endj) +
                                  "); allowed: windows that do not overlap");
        }
    }
}

CoherentSystem::CoherentSystem(const CoherentParams& p, bool check) : p_(p) {
    p_.validate();
    if (check) checker.reset(new CoherenceChecker(p_.instances() + 1));
    home.reset(new HomeAgent(loop, p_.home, p_.host_dram, pool, checker.get(), "home"));
    const std::vector<uint64_t> bases = p_.memoryBases();
    uint32_t i = 0;
    for (uint32_t e = 0; e < p_.devices.size(); ++e) {
        const CoherentDeviceParams& d = p_.devices[e];
        for (uint32_t k = 0; k < d.accel.devices; ++k, ++i) {
            const uint64_t memBase = bases[e] ? bases[e] + uint64_t(k) * d.accel.memory_bytes : 0;
            links.emplace_back(new CxlLink(d.link, d.name.empty() ? "cxl.link" : d.prefix() + "link", p_.seed * 131 + i));
            devices.emplace_back(new Accelerator(loop, uint16_t(i), d.cache, d.accel, d.dma, d.media, memBase,
                                                 *links.back(), *home, pool, checker.get(), d.instance(k, i)));
            entryOf.push_back(e);
            home->addDevice(devices.back().get(), links.back().get(), d.cache, d.dma);
            devices.back()->setWatch(&watch);
        }
    }
    home->setWatch(&watch);
}

Tick CoherentSystem::stallWindow() const {
    // Longer than any single delay the parameters allow, so only a real stall trips it.
    double longest = 0;
    for (auto& d : p_.devices)
        longest = std::max(longest, p_.home.latency_ns + p_.home.host_hit_ns + d.cache.latency_ns +
                                        d.cache.snoop_latency_ns + d.accel.bias_flip_ns + d.accel.memory_latency_ns +
                                        d.dma.setup_ns + d.dma.engine_latency_ns + d.dma.poll_interval_ns +
                                        d.dma.interrupt_ns + d.link.phy_latency_ns + d.link.replay_latency_ns +
                                        p_.host_dram.tRFC_ns + d.media.tRFC_ns);
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
        sum.add(devices[i]->stats());
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
    if (p_.devices.size() > 1) reportDevices(r, end);
}

void CoherentSystem::reportDevices(Report& r, Tick end) const {
    // Each description's own counters, under its name (its copies summed).
    for (uint32_t e = 0; e < p_.devices.size(); ++e) {
        AccelStats s;
        double upBusy = 0, downBusy = 0, n = 0;
        size_t maxMshrs = 0;
        for (size_t i = 0; i < devices.size(); ++i) {
            if (entryOf[i] != e) continue;
            s.add(devices[i]->stats());
            maxMshrs = std::max(maxMshrs, devices[i]->maxMshrs());
            upBusy += double(links[i]->s2m_.busy());
            downBusy += double(links[i]->m2s_.busy());
            ++n;
        }
        const std::string g = p_.devices[e].prefix();
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
