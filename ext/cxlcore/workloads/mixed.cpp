#include "cxlcore/workloads/mixed.hpp"

#include <memory>

#include "cxlcore/workloads/accel_load.hpp"
#include "cxlcore/workloads/traffic_driver.hpp"

namespace cxlcore {

using namespace memload;

namespace {

// The NIC's accelerator (an instance of its description), named as the graph names it.
uint32_t nicAccel(const System& s, const MixedConfig& cfg) {
    const SystemParams& p = s.params();
    std::string names;
    int entry = -1;
    for (size_t e = 0; e < p.accelerators.size(); ++e) {
        names += (e ? ", " : "") + p.accelerators[e].name;
        if (p.accelerators[e].name == cfg.nic_device) entry = int(e);
    }
    if (entry < 0)
        throw ConfigError("mixed.rao.device = '" + cfg.nic_device + "' is not a device of the system; allowed: " +
                          (names.empty() ? std::string("a system with a nic") : names));
    for (uint32_t i = 0; i < s.accelEntry.size(); ++i)
        if (s.accelEntry[i] == uint32_t(entry)) return i;
    throw std::logic_error("internal error: a device description without an accelerator");
}

}  // namespace

// ---------------------------------------------------------------- host, accelerators and NIC at once

Report runMixed(const SystemParams& sp, const MixedConfig& cfg, const Progress& progress) {
    if (!cfg.host && cfg.accel.empty() && !cfg.rao)
        throw ConfigError("mixed: neither the host, an accelerator nor the NIC runs; allowed: any of them, or several");
    if ((!cfg.accel.empty() || cfg.rao) && sp.accelerators.empty())
        throw ConfigError(std::string(cfg.rao ? "mixed.rao" : "mixed.accel") +
                          ": the system has no devices; allowed: a system with devices, or the host alone");
    if (cfg.host) {
        checkThreads("stream", cfg.stream.threads, sp);
        if (cfg.stream.lines_per_thread < 100 || cfg.stream.lines_per_thread > (1ull << 34))
            throw ConfigError("stream.lines_per_thread = " + fmtNum(double(cfg.stream.lines_per_thread)) +
                              " is out of range; allowed: 100 to 17179869184");
    } else if (!cfg.accel.empty() && (cfg.accel_requests < 100 || cfg.accel_requests > (1ull << 40))) {
        throw ConfigError("mixed.accel_requests = " + fmtNum(double(cfg.accel_requests)) +
                          " is out of range; allowed: 100 to 1099511627776");
    }
    if (cfg.rao) {
        checkRao(sp, cfg.nic, cfg.rao_cfg);
        if (cfg.rao_cfg.record) throw ConfigError("mixed.rao.record is not allowed; allowed: false");
    }
    System s(sp);
    std::unique_ptr<AccelLoad> acc;
    if (!cfg.accel.empty()) acc.reset(new AccelLoad(s, cfg.accel));
    // Beside the host or the accelerators, RAO runs until they close their window.
    std::unique_ptr<RaoLoad> rao;
    std::string nicKey;
    if (cfg.rao) {
        const uint32_t dev = nicAccel(s, cfg);
        const AccelDeviceParams& d = sp.accelerators[s.accelEntry[dev]];
        if (cfg.rao_cfg.mechanism == "pcie-nic" && d.dma.engines < 1)
            throw ConfigError("mixed.rao: " + d.prefix() + "dma.engines must be at least 1 for mechanism pcie-nic");
        for (size_t e = 0; e < cfg.accel.size(); ++e)
            if (sp.accelerators[e].name == cfg.nic_device && cfg.accel[e].requesters > 0)
                throw ConfigError("mixed.accel." + d.prefix() + "requesters = " + fmtNum(cfg.accel[e].requesters) +
                                  " is not allowed: the device runs RAO; allowed: 0");
        rao.reset(new RaoLoad(s, cfg.nic, cfg.rao_cfg, dev, cfg.host || acc, progress));
        nicKey = "nic." + (d.name.empty() ? std::string("dev0") : d.name) + ".";
    }
    std::unique_ptr<TrafficDriver> d;
    if (cfg.host) {
        const StreamConfig& st = cfg.stream;
        const uint64_t opsPerLine = (st.kernel == "add" || st.kernel == "triad") ? 3 : 2;
        d.reset(new TrafficDriver(s, st.threads, st.threads * st.lines_per_thread * opsPerLine, progress));
        d->setStream(st.kernel, st.lines_per_thread, st.placement, st.stores, sp.host.page_bytes);
        d->place_ = PagePlacement(s.host(), st.target, "stream");
        if (d->place_.windows().size() > 1) d->interleaved();
        if (acc || rao)
            d->onWindow = [&acc, &rao](bool open, Tick t) {
                if (acc) open ? acc->open(t) : acc->close(t);
                if (rao) open ? rao->open(t) : rao->close(t);
            };
        d->start();
    } else if (acc) {
        acc->pace(cfg.accel_requests);
        if (rao) acc->onWindow = [&rao](bool open, Tick t) { open ? rao->open(t) : rao->close(t); };
    } else {
        rao->open(0);  // alone: over its whole run, as runRao measures it
    }
    if (acc) acc->start();
    if (rao) rao->start();
    s.run();
    Report r;
    if (d) {
        requireWindow("mixed", *d);
        const double secs = double(d->windowEnd_ - d->windowStart_) * 1e-12;
        r.emplace_back("host.stream_gbps", secs > 0 ? (d->wLoads_ + d->wStores_) * kLineBytes / secs / 1e9 : 0);
        r.emplace_back("host.read_gbps", secs > 0 ? d->wReadBytes_ / secs / 1e9 : 0);
        r.emplace_back("host.write_gbps", secs > 0 ? d->wWriteBytes_ / secs / 1e9 : 0);
        reportLatency(r, d->reads_, "host.read");
        r.emplace_back("window_ns", ticksToNs(d->windowEnd_ - d->windowStart_));
        if (acc) acc->report(r);
        if (rao) rao->report(r, nicKey);
        s.report(r, d->windowStart_, d->windowEnd_);
    } else if (acc) {
        if (acc->completed() < cfg.accel_requests - cfg.accel_requests / 10)
            throw StallError("mixed: the run ended before 90 % of the accelerators' accesses completed");
        r.emplace_back("window_ns", ticksToNs(acc->to() - acc->from()));
        acc->report(r);
        if (rao) rao->report(r, nicKey);
        s.report(r, acc->from(), acc->to());
    } else {
        if (!rao->done()) throw StallError("mixed: the run ended before the NIC's operations completed");
        rao->close(rao->last());
        r.emplace_back("window_ns", ticksToNs(rao->last()));
        rao->report(r, nicKey);
        s.report(r, 0, rao->last());
    }
    r.emplace_back("events", double(s.loop.events()));
    return r;
}

}  // namespace cxlcore
