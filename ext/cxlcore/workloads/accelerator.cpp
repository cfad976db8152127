#include "cxlcore/workloads/accelerator.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "cxlcore/workloads/accel_common.hpp"

namespace cxlcore {

using namespace accelwl;

Txn::Kind accessKind(const std::string& op, const std::string& where) {
    if (op == "load") return Txn::Load;
    if (op == "store") return Txn::Store;
    if (op == "rdcurr") return Txn::LoadCurrent;
    if (op == "rdany") return Txn::LoadAny;
    if (op == "itomwr") return Txn::StoreNoAlloc;
    if (op == "wrinv") return Txn::StoreWrInv;
    throw ConfigError(where + " = '" + op + "' is not allowed; allowed values: load, store, rdcurr, rdany, itomwr, wrinv");
}

// ---------------------------------------------------------------- accelerator streams

namespace {

// A stream's settings, checked: what it issues and where its lines lie.
struct StreamPlan {
    Txn::Kind kind = Txn::Load;
    int pattern = 2;              // 0 single, 1 sequential, 2 random
    uint32_t requesters = 0, depth = 1;
    uint64_t lines = 1, requests = 0;
    int memory = -1;              // -1: host memory; else the description whose memory it targets (its own: itself)
};

// The description named `name`, or -1.
int entryNamed(const SystemParams& p, const std::string& name) {
    for (size_t e = 0; e < p.accelerators.size(); ++e)
        if (!p.accelerators[e].name.empty() && p.accelerators[e].name == name) return int(e);
    return -1;
}

std::string targetValues(const SystemParams& p) {
    std::string s = "host, device";
    for (auto& d : p.accelerators)
        if (d.accel.type == 2 && !d.name.empty()) s += ", " + d.name;
    return s;
}

// `self`: the description whose devices run it ("device" is its memory);
// `w`: the prefix of the settings' names in messages.
StreamPlan plan(const SystemParams& p, const DeviceStream& s, int self, const std::string& w, bool mayIdle) {
    StreamPlan out;
    out.kind = accessKind(s.op, (w + "op").c_str());
    need(s.pattern == "single" || s.pattern == "sequential" || s.pattern == "random",
         w + "pattern = '" + s.pattern + "' is not allowed; allowed values: single, sequential, random");
    out.pattern = s.pattern == "single" ? 0 : s.pattern == "sequential" ? 1 : 2;
    if (s.target == "device")
        out.memory = self;
    else if (s.target != "host")
        out.memory = entryNamed(p, s.target);
    need(s.target == "host" || out.memory >= 0,
         w + "target = '" + s.target + "' is not allowed; allowed values: " + targetValues(p));
    if (out.memory >= 0) {
        const AccelDeviceParams& m = p.accelerators[size_t(out.memory)];
        need(m.accel.type == 2, w + "target = '" + s.target + "' is not allowed with " + m.prefix() +
                                    "accel.type = 1 (no device memory); allowed values: host");
    }
    need((mayIdle && s.requesters == 0) || (s.requesters >= 1 && s.requesters <= 1024),
         w + "requesters = " + fmtNum(s.requesters) + " is out of range; allowed: " + (mayIdle ? "0" : "1") + " to 1024");
    need(s.depth >= 1 && s.depth <= 4096, w + "depth = " + fmtNum(s.depth) + " is out of range; allowed: 1 to 4096");
    need(s.requests >= 1, w + "requests = 0 is out of range; allowed: 1 or more");
    need(s.footprint_bytes >= kLineBytes && s.footprint_bytes <= (1ull << 40),
         w + "footprint_bytes = " + fmtNum(double(s.footprint_bytes)) + " is out of range; allowed: 64 to 1099511627776");
    if (out.memory >= 0) {
        const AccelDeviceParams& m = p.accelerators[size_t(out.memory)];
        need(s.footprint_bytes <= m.accel.memory_bytes,
             w + "footprint_bytes = " + fmtNum(double(s.footprint_bytes)) +
                 " is out of range for device memory; allowed: up to " + m.prefix() + "accel.memory_bytes (" +
                 fmtNum(double(m.accel.memory_bytes)) + ")");
    }
    out.requesters = s.requesters;
    out.depth = s.depth;
    out.lines = s.footprint_bytes / kLineBytes;
    out.requests = s.requesters ? s.requests : 0;
    return out;
}

// The first device built from description e.
size_t firstOf(const System& sys, int e) {
    for (size_t i = 0; i < sys.accelEntry.size(); ++i)
        if (int(sys.accelEntry[i]) == e) return i;
    return 0;
}

}  // namespace

Report runAccel(const SystemParams& p, const AccelConfig& c, const Progress& progress) {
    const DeviceStream base{c.op, c.pattern, c.target, c.requesters, c.depth, c.footprint_bytes, c.requests};
    p.validate();
    const size_t entries = p.accelerators.size();
    need(c.streams.empty() || c.streams.size() == entries,
         "accel.streams holds " + std::to_string(c.streams.size()) + " streams; allowed: one per device (" +
             std::to_string(entries) + ") or none");
    // The host threads' settings: the base stream's, "device" being device 0's memory.
    const StreamPlan hostPlan = plan(p, base, 0, "accel.", false);
    std::vector<StreamPlan> plans;
    uint64_t busy = 0;  // requests of every device's stream
    for (size_t e = 0; e < entries; ++e) {
        const bool own = !c.streams.empty();
        plans.push_back(plan(p, own ? c.streams[e] : base, int(e),
                             own ? "accel." + p.accelerators[e].prefix() : "accel.", own));
        busy += plans.back().requests;
    }
    need(busy >= 1, "accel.streams: every device is idle (requesters = 0); allowed: one or more busy");
    need(c.host_threads <= 1024, "accel.host_threads = " + fmtNum(c.host_threads) + " is out of range; allowed: 0 to 1024");
    need(c.host_store_fraction >= 0 && c.host_store_fraction <= 1,
         "accel.host_store_fraction = " + fmtNum(c.host_store_fraction) + " is out of range; allowed: 0 to 1");

    System sys(p, c.check);
    LatencyStats lat;
    std::vector<LatencyStats> entryLat(entries);
    std::vector<uint64_t> entryOps(entries, 0);
    std::vector<Tick> entryLast(entries, 0);
    struct Stream {
        int dev;  // -1: host core
        uint32_t id;
        const StreamPlan* plan;
        uint64_t target, issued = 0, done = 0, seq = 0, base = 0;
        uint32_t inflight = 0;
        Rng rng;
    };
    std::vector<Stream> streams;
    const uint32_t nd = uint32_t(sys.accels.size());
    uint32_t id = 0;
    uint64_t total = 0;
    auto memoryOf = [&](const StreamPlan& sp, size_t dev) -> uint64_t {
        if (sp.memory < 0) return kHostBase;
        return int(sys.accelEntry[dev]) == sp.memory ? sys.accels[dev]->memBase()
                                                   : sys.accels[firstOf(sys, sp.memory)]->memBase();
    };
    for (uint32_t d = 0; d < nd; ++d) {
        const StreamPlan& sp = plans[sys.accelEntry[d]];
        total += sp.requests;
        for (uint32_t r = 0; r < sp.requesters; ++r) {
            Stream s;
            s.dev = int(d);
            s.id = id++;
            s.plan = &sp;
            s.target = sp.requests / sp.requesters + (r < sp.requests % sp.requesters ? 1 : 0);
            s.base = memoryOf(sp, d);
            s.seq = sp.lines * r / sp.requesters;  // sequential streams start spread out
            s.rng = Rng(p.seed * 7919 + s.id);
            streams.push_back(s);
        }
    }
    for (uint32_t h = 0; h < c.host_threads; ++h) {
        Stream s;
        s.dev = -1;
        s.id = id++;
        s.plan = &hostPlan;
        s.target = ~0ull;
        s.base = hostPlan.memory < 0 ? kHostBase : sys.accels[0]->memBase();
        s.rng = Rng(p.seed * 7919 + s.id);
        streams.push_back(s);
    }
    uint64_t remaining = total, completed = 0, storeSeq = 0;
    Tick last = 0;
    bool stop = false;
    // `issue` runs on every completion: a plain lambda, not a std::function;
    // it names the client below through `finished`.
    Client* finished = nullptr;
    auto issue = [&](Stream& s) {
        const StreamPlan& sp = *s.plan;
        while (!stop && s.inflight < (s.dev < 0 ? 1u : sp.depth) && s.issued < s.target) {
            Txn* a = sys.pool.get();
            const uint64_t idx = sp.pattern == 0 ? 0 : sp.pattern == 1 ? (s.seq++ % sp.lines) : s.rng.below(sp.lines);
            a->addr = s.base + idx * kLineBytes;
            a->kind = s.dev < 0 ? (s.rng.uniform() < c.host_store_fraction ? Txn::Store : Txn::Load) : sp.kind;
            if (isWrite(a->kind)) a->value = ++storeSeq;
            a->birth = sys.loop.now();
            ++s.issued;
            ++s.inflight;
            a->client = finished;
            a->ctx = &s;
            if (s.dev < 0)
                sys.home->hostAccess(a);
            else
                sys.accels[size_t(s.dev)]->access(a);
        }
    };
    auto onDone = makeClient([&](Txn* x) {
        Stream* sp = static_cast<Stream*>(x->ctx);
        --sp->inflight;
        ++sp->done;
        if (sp->dev >= 0) {
            lat.add(*x, x->done);
            const uint32_t e = sys.accelEntry[size_t(sp->dev)];
            if (entries > 1) entryLat[e].add(*x, x->done);  // reported only with several descriptions
            ++entryOps[e];
            entryLast[e] = x->done;
            last = x->done;
            --remaining;
            if (++completed % 65536 == 0 && progress && !progress(1.0 - double(remaining) / double(total)))
                throw Cancelled();
            if (!remaining) stop = true;
        }
        sys.pool.put(x);
        issue(*sp);
    });
    finished = &onDone;
    for (auto& s : streams) issue(s);
    sys.run();
    need(remaining == 0, "internal: the accelerator run stopped with " + std::to_string(remaining) +
                             " accesses outstanding (protocol deadlock)");
    Report r;
    const double ns = ticksToNs(last);
    const double ops = double(total);
    r.emplace_back("ops", ops);
    r.emplace_back("elapsed_ns", ns);
    r.emplace_back("throughput_mops", ns > 0 ? ops / ns * 1e3 : 0.0);
    r.emplace_back("bandwidth_gbps", ns > 0 ? ops * kLineBytes / ns : 0.0);
    reportLatency(r, lat, "");
    sys.report(r, 0, last);
    if (entries > 1) {
        // Each description's own stream, under its name: bandwidth over its own run.
        for (size_t e = 0; e < entries; ++e) {
            const std::string g = p.accelerators[e].prefix();
            const double t = ticksToNs(entryLast[e]);
            r.emplace_back(g + "ops", double(entryOps[e]));
            r.emplace_back(g + "elapsed_ns", t);
            r.emplace_back(g + "bandwidth_gbps", t > 0 ? double(entryOps[e]) * kLineBytes / t : 0.0);
            reportLatency(r, entryLat[e], g);
        }
    }
    return r;
}

// ---------------------------------------------------------------- lmbench (pointer chase)

std::vector<Report> runCoherentChase(const SystemParams& p, const CoherentChaseConfig& c, const Progress& progress) {
    p.validate();
    const int devices = int(p.accelInstances());
    need(c.agent >= -1 && c.agent < devices, "lmbench.agent = " + std::to_string(c.agent) +
                                                 " is out of range; allowed: -1 (a host core) to " +
                                                 std::to_string(devices - 1));
    need(!c.sizes.empty(), "lmbench.sizes is empty; allowed: one or more working sets from 64 to 1099511627776 bytes");
    need(c.loads >= 1 && c.loads <= 100000000,
         "lmbench.loads = " + fmtNum(double(c.loads)) + " is out of range; allowed: 1 to 100000000");
    std::vector<Report> out;
    for (size_t k = 0; k < c.sizes.size(); ++k) {
        const uint64_t size = c.sizes[k];
        need(size >= kLineBytes && size <= (1ull << 32), "lmbench.sizes contains " + fmtNum(double(size)) +
                                                              ", out of range; allowed: 64 to 4294967296 bytes");
        System sys(p, false);
        // The agent's description ("device" is its memory; a host core's is device 0's).
        const int self = c.agent < 0 ? 0 : int(sys.accelEntry[size_t(c.agent)]);
        const StreamPlan where = plan(p, DeviceStream{"load", "random", c.target, 1, 1, size, 1}, self, "lmbench.", false);
        uint64_t base = kHostBase;
        if (where.memory >= 0)
            base = where.memory == self && c.agent >= 0 ? sys.accels[size_t(c.agent)]->memBase()
                                                        : sys.accels[firstOf(sys, where.memory)]->memBase();
        // lat_mem_rd -t: the lines in one random cycle (Sattolo's shuffle).
        const uint64_t n = where.lines;
        std::vector<uint32_t> next(n);
        for (uint64_t i = 0; i < n; ++i) next[i] = uint32_t(i);
        Rng rng(p.seed * 6151 + n);  // the same cycle for a working set whatever the others
        for (uint64_t i = n - 1; i > 0; --i) std::swap(next[i], next[rng.below(i)]);
        // Warm the agent's caches with the loads before the timed ones: up to
        // twice what they hold, so a set that fits is resident and one that
        // does not has evicted the lines the timed loads come back to.
        const uint64_t cacheLines = c.agent < 0 ? p.home.host_cache_bytes / kLineBytes
                                                : sys.accels[size_t(c.agent)]->cacheParams().bytes / kLineBytes;
        const uint64_t warm = std::min<uint64_t>(n, 2 * cacheLines);
        LatencyStats lat;
        uint64_t at = 0, issued = 0;
        Tick timedFrom = 0;
        std::function<void()> go;
        auto finished = makeClient([&](Txn* x) {
            if (issued > warm) lat.add(*x, x->done);
            sys.pool.put(x);
            if (issued == warm) timedFrom = sys.loop.now();
            go();
        });
        go = [&] {
            if (issued >= warm + c.loads) return;
            Txn* a = sys.pool.get();
            a->kind = Txn::Load;
            a->addr = base + uint64_t(at) * kLineBytes;
            at = next[at];
            a->birth = sys.loop.now();
            ++issued;
            a->client = &finished;
            if (c.agent < 0)
                sys.home->hostAccess(a);
            else
                sys.accels[size_t(c.agent)]->access(a);
        };
        go();
        sys.run();
        need(lat.count() == c.loads, "internal: the chase stopped early");
        Report r;
        r.emplace_back("working_set_bytes", double(size));
        r.emplace_back("latency_ns", ticksToNs(sys.loop.now() - timedFrom) / double(c.loads));
        r.emplace_back("warm_loads", double(warm));
        reportLatency(r, lat, "");
        sys.report(r, 0, sys.loop.now());
        out.push_back(r);
        if (progress && !progress(double(k + 1) / double(c.sizes.size()))) throw Cancelled();
    }
    return out;
}

}  // namespace cxlcore
