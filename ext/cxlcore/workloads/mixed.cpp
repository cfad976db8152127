#include "cxlcore/workloads/mixed.hpp"

#include <memory>

#include "cxlcore/workloads/accel_load.hpp"
#include "cxlcore/workloads/traffic_driver.hpp"

namespace cxlcore {

using namespace memload;

// ---------------------------------------------------------------- host and accelerators at once

Report runMixed(const SystemParams& sp, const MixedConfig& cfg, const Progress& progress) {
    if (!cfg.host && cfg.accel.empty())
        throw ConfigError("mixed: neither the host nor any accelerator runs; allowed: the host, accelerators or both");
    if (!cfg.accel.empty() && sp.accelerators.empty())
        throw ConfigError("mixed.accel: the system has no accelerators; allowed: a system with devices, or the host "
                          "alone");
    if (cfg.host) {
        checkThreads("stream", cfg.stream.threads, sp);
        if (cfg.stream.lines_per_thread < 100 || cfg.stream.lines_per_thread > (1ull << 34))
            throw ConfigError("stream.lines_per_thread = " + fmtNum(double(cfg.stream.lines_per_thread)) +
                              " is out of range; allowed: 100 to 17179869184");
    } else if (cfg.accel_requests < 100 || cfg.accel_requests > (1ull << 40)) {
        throw ConfigError("mixed.accel_requests = " + fmtNum(double(cfg.accel_requests)) +
                          " is out of range; allowed: 100 to 1099511627776");
    }
    System s(sp);
    std::unique_ptr<AccelLoad> acc;
    if (!cfg.accel.empty()) acc.reset(new AccelLoad(s, cfg.accel));
    std::unique_ptr<TrafficDriver> d;
    if (cfg.host) {
        const StreamConfig& st = cfg.stream;
        const uint64_t opsPerLine = (st.kernel == "add" || st.kernel == "triad") ? 3 : 2;
        d.reset(new TrafficDriver(s, st.threads, st.threads * st.lines_per_thread * opsPerLine, progress));
        d->setStream(st.kernel, st.lines_per_thread, st.placement, st.stores, sp.host.page_bytes);
        d->place_ = PagePlacement(s.host(), st.target, "stream");
        if (d->place_.windows().size() > 1) d->interleaved();
        if (acc) d->onWindow = [&acc](bool open, Tick t) { open ? acc->open(t) : acc->close(t); };
        d->start();
    } else {
        acc->pace(cfg.accel_requests);
    }
    if (acc) acc->start();
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
        s.report(r, d->windowStart_, d->windowEnd_);
    } else {
        if (acc->completed() < cfg.accel_requests - cfg.accel_requests / 10)
            throw StallError("mixed: the run ended before 90 % of the accelerators' accesses completed");
        r.emplace_back("window_ns", ticksToNs(acc->to() - acc->from()));
        acc->report(r);
        s.report(r, acc->from(), acc->to());
    }
    r.emplace_back("events", double(s.loop.events()));
    return r;
}

}  // namespace cxlcore
