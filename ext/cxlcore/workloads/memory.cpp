// STREAM, MLC-style traffic, and traffic on several hosts at once.
#include "cxlcore/workloads/memory.hpp"

#include <algorithm>
#include <memory>

#include "cxlcore/system/fabric_manager.hpp"
#include "cxlcore/workloads/traffic_driver.hpp"

namespace cxlcore {

using namespace memload;

Report runStream(const SystemParams& sp, const StreamConfig& cfg, const Progress& progress) {
    checkThreads("stream", cfg.threads, sp);
    if (cfg.lines_per_thread < 100 || cfg.lines_per_thread > (1ull << 34))
        throw ConfigError("stream.lines_per_thread = " + fmtNum(double(cfg.lines_per_thread)) +
                          " is out of range; allowed: 100 to 17179869184");
    System s(sp);
    const uint64_t opsPerLine = (cfg.kernel == "add" || cfg.kernel == "triad") ? 3 : 2;
    TrafficDriver d(s, cfg.threads, cfg.threads * cfg.lines_per_thread * opsPerLine, progress);
    d.setStream(cfg.kernel, cfg.lines_per_thread, cfg.placement, cfg.stores, sp.host.page_bytes);
    d.place_ = PagePlacement(s.host(), cfg.target, "stream");
    if (d.place_.windows().size() > 1) d.interleaved();
    d.start();
    s.run();
    requireWindow("stream", d);
    Report r;
    const double secs = double(d.windowEnd_ - d.windowStart_) * 1e-12;
    // STREAM counts each array element once: loads plus stores, no write-allocate.
    r.emplace_back("stream_gbps", secs > 0 ? (d.wLoads_ + d.wStores_) * kLineBytes / secs / 1e9 : 0);
    r.emplace_back("threads", cfg.threads);
    commonReport(r, s, d.place_, d.windowStart_, d.windowEnd_, d.wReadBytes_, d.wWriteBytes_);
    reportLatency(r, d.reads_, "read");
    return r;
}

namespace {
// Refuses what no traffic run can do, naming the parameter (a further
// host's under its name).
void checkTraffic(const TrafficConfig& cfg, const HostDesc& h, const std::string& k) {
    checkThreads(k + "traffic", cfg.threads, h);
    if (!(cfg.read_fraction >= 0 && cfg.read_fraction <= 1))
        throw ConfigError(k + "traffic.read_fraction = " + fmtNum(cfg.read_fraction) + " is out of range; allowed: 0 to 1");
    if (cfg.stores != "non-temporal" && cfg.stores != "write-allocate")
        throw ConfigError(k + "traffic.stores = '" + cfg.stores +
                          "' is not allowed; allowed values: non-temporal, write-allocate");
    if (cfg.ops.find_first_not_of("LS") != std::string::npos || cfg.ops.size() > 64)
        throw ConfigError(k + "traffic.ops = '" + cfg.ops +
                          "' is not allowed; allowed: up to 64 letters L (load) and S (store), or empty");
    if (cfg.stores == "write-allocate" && cfg.ops.empty() && cfg.read_fraction < 0.5)
        throw ConfigError(k + "traffic.read_fraction = " + fmtNum(cfg.read_fraction) +
                          " is out of range with write-allocate stores; allowed: 0.5 to 1 (each store reads its line)");
    if (cfg.pattern != "random" && cfg.pattern != "sequential")
        throw ConfigError(k + "traffic.pattern = '" + cfg.pattern + "' is not allowed; allowed values: random, sequential");
    if (cfg.requests < 100 || cfg.requests > (1ull << 40))
        throw ConfigError(k + "traffic.requests = " + fmtNum(double(cfg.requests)) +
                          " is out of range; allowed: 100 to 1099511627776");
    if (!(cfg.rate_gbps >= 0 && cfg.rate_gbps <= 10000))
        throw ConfigError(k + "traffic.rate_gbps = " + fmtNum(cfg.rate_gbps) + " is out of range; allowed: 0 to 10000");
    if (cfg.arrivals != "periodic" && cfg.arrivals != "poisson")
        throw ConfigError(k + "traffic.arrivals = '" + cfg.arrivals + "' is not allowed; allowed values: periodic, poisson");
    if (!(cfg.inject_delay_ns >= 0 && cfg.inject_delay_ns <= 1e6))
        throw ConfigError(k + "traffic.inject_delay_ns = " + fmtNum(cfg.inject_delay_ns) +
                          " is out of range; allowed: 0 to 1000000");
    if (cfg.footprint_bytes < uint64_t(kLineBytes) * cfg.threads || cfg.footprint_bytes > (1ull << 44))
        throw ConfigError(k + "traffic.footprint_bytes = " + fmtNum(double(cfg.footprint_bytes)) +
                          " is out of range; allowed: 64 x threads to 17592186044416");
}
}  // namespace

Report runTraffic(const SystemParams& sp, const TrafficConfig& cfg, const Progress& progress) {
    checkTraffic(cfg, sp, "");
    System s(sp);
    TrafficDriver d(s, cfg.threads, cfg.requests, progress);
    d.setTraffic(cfg);
    d.place_ = PagePlacement(s.host(), cfg.target, "traffic");
    d.start();
    s.run();
    requireWindow("traffic", d);
    Report r;
    r.emplace_back("threads", cfg.threads);
    r.emplace_back("read_fraction", cfg.read_fraction);
    r.emplace_back("requests", double(cfg.requests));
    commonReport(r, s, d.place_, d.windowStart_, d.windowEnd_, d.wReadBytes_, d.wWriteBytes_);
    reportLatency(r, d.reads_, "read");
    if (cfg.probe) reportLatency(r, d.probeLat_, "probe");
    return r;
}

// ---------------------------------------------------------------- several hosts at once

namespace {
// A host's traffic that follows its extents: its one window onto one device with dynamic capacity.
void follow(System& s, TrafficDriver& d, size_t host, const HostTraffic& h, const DcSchedule* fm) {
    const std::string k = h.host + ".traffic.follow_extents: ";
    if (h.cfg.pattern != "random" || h.cfg.stores != "non-temporal" || !h.cfg.ops.empty())
        throw ConfigError(k + "allowed with pattern random, non-temporal stores and no ops only");
    const MemoryWindow* found = nullptr;
    for (const MemoryWindow& w : s.host(host).windows)
        if (w.reach.size() == 1 && w.reach[0]->dynamicCapacity()) {
            if (found)
                throw ConfigError(k + "the host has several windows onto devices with dynamic capacity (" +
                                  found->p.name + ", " + w.p.name + "); allowed: one");
            found = &w;
        }
    if (!found)
        throw ConfigError(k + "the host has no window onto one device with dynamic capacity; allowed: a host whose "
                          "window reaches one Type-3 device of device.dynamic_capacity = 1");
    if (!fm)
        throw ConfigError(k + "no fabric-manager command gives it capacity; allowed: a run with an fm");
    d.followExtents(found->reach[0], uint8_t(host), found->p.base, fm);
}
}  // namespace

Report runHosts(const SystemParams& sp, const std::vector<HostTraffic>& runs, const Progress& progress,
                const std::vector<DcRequest>& fm) {
    if (runs.empty()) throw ConfigError("hosts: no host runs traffic; allowed: one or more hosts of the system");
    System s(sp);
    // The fabric manager's commands, each tried in time order on a copy of
    // the system first: one that makes no sense then (an LD bound twice, an
    // extent not held) is refused before the run, naming it.
    auto commands = [&fm](System& on) {
        std::vector<DcCommand> cmds;
        for (size_t i = 0; i < fm.size(); ++i) {
            const DcRequest& q = fm[i];
            const std::string k = "fm[" + std::to_string(i) + "]";
            const int h = on.hostIndex(q.host);
            if (h < 0) throw ConfigError(k + ".host = '" + q.host + "' is not a host of the system; allowed: the names of its hosts (simcxl topology show)");
            if (!(q.at_ns >= 0)) throw ConfigError(k + ".at_ns is not allowed; allowed: 0 ns or later");
            const DcCommand::Op op = q.op == "add" ? DcCommand::Add : q.op == "release" ? DcCommand::Release
                                     : q.op == "bind"                ? DcCommand::Bind
                                     : q.op == "unbind" ? DcCommand::Unbind
                                                        : throw ConfigError(k + ".op = '" + q.op + "' is not allowed; "
                                                                            "allowed: add, release, bind, unbind");
            if (q.notice_ns > q.at_ns)
                throw ConfigError(k + ".notice_ns = " + fmtNum(q.notice_ns) + " is not allowed; allowed: at or before "
                                  "at_ns (" + fmtNum(q.at_ns) + ")");
            cmds.push_back({nsToTicks(q.at_ns), op, &on.device(q.device), uint8_t(h), q.start, q.bytes, q.ld,
                            nsToTicks(q.notice_ns < 0 ? q.at_ns : q.notice_ns)});
        }
        return cmds;
    };
    if (!fm.empty()) {
        System dry(sp);
        std::vector<DcCommand> c = commands(dry);
        std::vector<size_t> order(c.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&c](size_t a, size_t b) { return c[a].at < c[b].at; });
        for (size_t i : order) {
            try {
                DcCommand::apply(c[i]);
            } catch (const ConfigError& e) {
                throw ConfigError("fm[" + std::to_string(i) + "] (" + fm[i].op + ", host " + fm[i].host + " = " +
                                  std::to_string(c[i].host) + ", at " + fmtNum(fm[i].at_ns) + " ns): " + e.what());
            }
        }
    }
    std::vector<DcCommand> cmds = commands(s);
    // Only a run with commands has a schedule among its components.
    std::unique_ptr<DcSchedule> dcd = cmds.empty() ? nullptr : std::make_unique<DcSchedule>(s.loop, std::move(cmds));
    std::vector<std::unique_ptr<TrafficDriver>> d;
    std::vector<size_t> at;
    for (size_t i = 0; i < runs.size(); ++i) {
        const HostTraffic& h = runs[i];
        const int k = s.hostIndex(h.host);
        if (k < 0) {
            std::string names;
            for (size_t j = 0; j < s.hosts(); ++j) names += (j ? ", " : "") + s.host(j).p.name;
            throw ConfigError("hosts[" + std::to_string(i) + "].host = '" + h.host +
                              "' is not a host of the system; allowed: " + names);
        }
        for (size_t j : at)
            if (j == size_t(k))
                throw ConfigError("hosts[" + std::to_string(i) + "].host = '" + h.host +
                                  "' runs twice; allowed: each host once");
        at.push_back(size_t(k));
        checkTraffic(h.cfg, s.host(size_t(k)).p, h.host + ".");
        // The first host paces the measurement; the others issue until it closes.
        d.emplace_back(new TrafficDriver(s, h.cfg.threads, i ? 0 : h.cfg.requests, i ? Progress() : progress,
                                         size_t(k)));
        d.back()->setTraffic(h.cfg);
        d.back()->place_ = PagePlacement(s.host(size_t(k)), h.cfg.target, h.host + ".traffic");
        if (h.cfg.follow_extents) follow(s, *d.back(), size_t(k), h, dcd.get());
    }
    d[0]->onWindow = [&d](bool open, Tick t) {
        for (size_t i = 1; i < d.size(); ++i) open ? d[i]->open(t) : d[i]->close(t);
    };
    for (auto& x : d) x->start();
    s.run();
    requireWindow("hosts", *d[0]);
    const Tick start = d[0]->windowStart_, end = d[0]->windowEnd_;
    Report r;
    r.emplace_back("window_ns", ticksToNs(end - start));
    r.emplace_back("window_start_ns", ticksToNs(start));
    for (size_t i = 0; i < d.size(); ++i) {
        const std::string k = runs[i].host + ".";
        r.emplace_back(k + "threads", runs[i].cfg.threads);
        rates(r, k, s, d[i]->place_, at[i], end - start, d[i]->wReadBytes_, d[i]->wWriteBytes_);
        reportLatency(r, d[i]->reads_, k + "read");
        if (runs[i].cfg.probe) reportLatency(r, d[i]->probeLat_, k + "probe");
    }
    s.report(r, start, end);
    r.emplace_back("txn_pool_peak", double(s.pool.peak()));
    r.emplace_back("events", double(s.loop.events()));
    return r;
}

}  // namespace cxlcore
