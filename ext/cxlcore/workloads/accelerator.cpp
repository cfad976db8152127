#include "cxlcore/workloads/accelerator.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "cxlcore/kernel/stats.hpp"

namespace cxlcore {

namespace {

constexpr uint64_t kHostBase = 1ull << 32;  // host buffers start at 4 GiB

void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

}  // namespace

Txn::Kind accessKind(const std::string& op, const std::string& where) {
    if (op == "load") return Txn::Load;
    if (op == "store") return Txn::Store;
    if (op == "rdcurr") return Txn::LoadCurrent;
    if (op == "rdany") return Txn::LoadAny;
    if (op == "itomwr") return Txn::StoreNoAlloc;
    if (op == "wrinv") return Txn::StoreWrInv;
    throw ConfigError(where + " = '" + op + "' is not allowed; allowed values: load, store, rdcurr, rdany, itomwr, wrinv");
}

namespace {


Accelerator::Bug bugOf(const std::string& inject, const char* where) {
    if (inject == "snpinv-keeps-copy") return Accelerator::SnpInvKeepsCopy;
    if (inject == "drop-dirty-data") return Accelerator::DropDirtyData;
    if (inject == "drop-snoops") return Accelerator::DropSnoops;
    if (inject == "defer-snoops") return Accelerator::DeferSnoops;
    need(inject.empty(), std::string(where) + " = '" + inject +
                             "' is not allowed; allowed values: '' (none), snpinv-keeps-copy, drop-dirty-data, "
                             "drop-snoops, defer-snoops");
    return Accelerator::None;
}

// A stream's accesses under `prefix`: latency, hit rate and stages.
void reportLatency(Report& r, const LatencyStats& st, const std::string& prefix) {
    r.emplace_back(prefix + "latency_mean_ns", st.meanNs());
    st.tails(r, prefix);
    r.emplace_back(prefix + "latency_max_ns", st.maxNs());
    r.emplace_back(prefix + "hit_rate", st.hitRate());
    for (int s = 0; s < kNumStages; ++s)
        r.emplace_back(prefix + "stage_" + stageName(Stage(s)) + "_ns", st.stageNs(s));
    // Traces name the stream by its prefix ("device_" -> "device"; none: "accesses").
    if (TraceSink* t = TraceSink::current())
        t->label(&st, prefix.empty() ? std::string("accesses") : prefix.substr(0, prefix.size() - 1));
}

}  // namespace

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

// ---------------------------------------------------------------- sharing

namespace {

// Issues accesses from one side (a device or the host) with bounded depth.
struct Side {
    System* sys;
    int dev;  // -1: host
    void go(Txn* a) {
        a->birth = sys->loop.now();
        if (dev < 0)
            sys->home->hostAccess(a);
        else
            sys->accels[size_t(dev)]->access(a);
    }
};

}  // namespace

Report runSharing(const SystemParams& p, const SharingConfig& c) {
    need(c.mode == "pingpong" || c.mode == "producer-consumer",
         "sharing.mode = '" + c.mode + "' is not allowed; allowed values: pingpong, producer-consumer");
    need(c.rounds >= 1 && c.rounds <= 100000000, "sharing.rounds = " + fmtNum(double(c.rounds)) +
                                                     " is out of range; allowed: 1 to 100000000");
    need(c.lines >= 1 && c.lines <= (1ull << 24), "sharing.lines = " + fmtNum(double(c.lines)) +
                                                      " is out of range; allowed: 1 to 16777216");
    need(c.depth >= 1 && c.depth <= 4096, "sharing.depth = " + fmtNum(c.depth) + " is out of range; allowed: 1 to 4096");
    System sys(p, c.check);
    TxnPool& pool = sys.pool;
    Report r;
    Side dev{&sys, 0}, host{&sys, -1};
    if (c.mode == "pingpong") {
        // Device writes odd values, the host even ones; each waits for its turn.
        const uint64_t flag = kHostBase;
        uint64_t handoffs = 0;
        LatencyStats devLat, hostLat;
        uint64_t spins[2] = {0, 0};
        // An access's tag: its side (bit 0: the host) and whether it is the store of a handoff (bit 1).
        std::function<void(Side&, int)> spin;
        Client* self = nullptr;  // finished, for the stores it issues
        auto finished = makeClient([&](Txn* x) {
            const int who = x->tag & 1;
            Side& me = who ? host : dev;
            (who ? hostLat : devLat).add(*x, x->done);
            if (x->tag & 2) {
                pool.put(x);
                ++handoffs;
                spin(me, who);
                return;
            }
            const bool myTurn = (x->value % 2) == uint64_t(who);
            const uint64_t v = x->value;
            pool.put(x);
            if (!myTurn || handoffs >= c.rounds) {
                ++spins[who];
                spin(me, who);
                return;
            }
            Txn* w = pool.get();
            w->kind = Txn::Store;
            w->addr = flag;
            w->value = v + 1;
            w->tag = uint8_t(who | 2);
            w->client = self;
            me.go(w);
        });
        self = &finished;
        spin = [&](Side& s, int who) {
            if (handoffs >= c.rounds) return;
            Txn* a = pool.get();
            a->kind = Txn::Load;
            a->addr = flag;
            a->tag = uint8_t(who);
            a->client = &finished;
            s.go(a);
        };
        spin(dev, 0);
        spin(host, 1);
        sys.run();
        need(handoffs >= c.rounds, "internal: ping-pong stopped after " + std::to_string(handoffs) + " handoffs");
        const double ns = ticksToNs(sys.loop.now());
        r.emplace_back("handoffs", double(handoffs));
        r.emplace_back("elapsed_ns", ns);
        r.emplace_back("handoff_ns", ns / double(handoffs));
        r.emplace_back("device_spins", double(spins[0]));
        r.emplace_back("host_spins", double(spins[1]));
        reportLatency(r, devLat, "device_");
        reportLatency(r, hostLat, "host_");
        sys.report(r, 0, sys.loop.now());
        return r;
    }
    // Producer-consumer, both ways: the producer writes the buffer, then a
    // flag; the consumer spins on the flag, then reads the buffer.
    const uint64_t flag = kHostBase, buf = kHostBase + 4096;
    auto phase = [&](Side& prod, Side& cons, uint64_t flagValue, const std::string& name) {
        const Tick t0 = sys.loop.now();
        uint64_t issued = 0, done = 0, readIssued = 0, readDone = 0;
        Tick flagSeen = 0, produced = 0;
        LatencyStats consLat;
        std::function<void()> produce, consume, spinFlag;
        enum : uint8_t { kData, kFlag, kRead, kSpin };  // what an access is, in its tag
        Client* self = nullptr;  // finished, for the flag store it issues
        auto finished = makeClient([&](Txn* x) {
            switch (x->tag) {
                case kData:
                    pool.put(x);
                    if (++done == c.lines) {
                        Txn* f = pool.get();
                        f->kind = Txn::Store;
                        f->addr = flag;
                        f->value = flagValue;
                        f->tag = kFlag;
                        f->client = self;
                        prod.go(f);
                    } else {
                        produce();
                    }
                    return;
                case kFlag:
                    produced = x->done;
                    pool.put(x);
                    return;
                case kRead:
                    consLat.add(*x, x->done);
                    pool.put(x);
                    ++readDone;
                    consume();
                    return;
                default: {
                    const bool set = x->value == flagValue;
                    pool.put(x);
                    if (set) {
                        flagSeen = sys.loop.now();
                        consume();
                    } else {
                        spinFlag();
                    }
                }
            }
        });
        self = &finished;
        produce = [&] {
            while (issued < c.lines && issued - done < c.depth) {
                Txn* a = pool.get();
                a->kind = Txn::Store;
                a->addr = buf + issued * kLineBytes;
                a->value = flagValue * (1ull << 32) + issued + 1;
                a->tag = kData;
                a->client = &finished;
                ++issued;
                prod.go(a);
            }
        };
        consume = [&] {
            while (readIssued < c.lines && readIssued - readDone < c.depth) {
                Txn* a = pool.get();
                a->kind = Txn::Load;
                a->addr = buf + readIssued * kLineBytes;
                a->tag = kRead;
                a->client = &finished;
                ++readIssued;
                cons.go(a);
            }
        };
        spinFlag = [&] {
            Txn* a = pool.get();
            a->kind = Txn::Load;
            a->addr = flag;
            a->tag = kSpin;
            a->client = &finished;
            cons.go(a);
        };
        produce();
        spinFlag();
        sys.run();
        need(readDone == c.lines, "internal: producer-consumer stopped early");
        const Tick end = sys.loop.now();
        const double consNs = ticksToNs(end - flagSeen);
        r.emplace_back(name + "_produce_ns", ticksToNs(produced - t0));
        r.emplace_back(name + "_consume_ns", consNs);
        r.emplace_back(name + "_total_ns", ticksToNs(end - t0));
        r.emplace_back(name + "_consume_gbps", consNs > 0 ? double(c.lines * kLineBytes) / consNs : 0.0);
        reportLatency(r, consLat, name + "_consumer_");
    };
    phase(host, dev, 1, "host_to_device");
    phase(dev, host, 2, "device_to_host");
    sys.report(r, 0, sys.loop.now());
    return r;
}

// ---------------------------------------------------------------- stress

Report runStress(const SystemParams& p, const StressConfig& c, const Progress& progress, std::string* detail) {
    need(c.lines >= 1 && c.lines <= (1ull << 20), "stress.lines = " + fmtNum(double(c.lines)) +
                                                      " is out of range; allowed: 1 to 1048576");
    need(c.host_threads + c.device_requesters >= 1, "stress: host_threads + device_requesters must be at least 1");
    need(c.host_threads <= 1024 && c.device_requesters <= 1024,
         "stress.host_threads and stress.device_requesters are out of range; allowed: 0 to 1024 each");
    need(c.ops >= 1, "stress.ops = 0 is out of range; allowed: 1 or more");
    for (double f : {c.store_fraction, c.uncached_fraction, c.device_memory_fraction})
        need(f >= 0 && f <= 1, "stress fractions (store_fraction, uncached_fraction, device_memory_fraction) = " +
                                   fmtNum(f) + " is out of range; allowed: 0 to 1");
    const Accelerator::Bug bug = bugOf(c.inject, "stress.inject");
    System sys(p, true);
    for (auto& d : sys.accels) d->inject(bug);
    TxnPool& pool = sys.pool;
    // The lines: in host memory, and for Type-2 devices partly in device memory.
    std::vector<uint64_t> lines;
    Rng pick(p.seed * 31 + 7);
    std::vector<const Accelerator*> withMemory;  // Type-2 devices
    for (auto& d : sys.accels)
        if (d->memBytes()) withMemory.push_back(d.get());
    for (uint64_t i = 0; i < c.lines; ++i) {
        const bool devMem = !withMemory.empty() && pick.uniform() < c.device_memory_fraction;
        if (devMem) {
            const Accelerator* d = withMemory[pick.below(withMemory.size())];
            const uint64_t page = d->biasPageBytes();
            // Lines of device memory spread over a few pages so bias flips happen.
            lines.push_back(d->memBase() + (i % 4) * page + i * kLineBytes % page);
        } else {
            lines.push_back(kHostBase + i * kLineBytes);
        }
    }
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    uint64_t issued = 0, done = 0, storeSeq = 0;
    struct Req {
        int dev;
        Rng rng;
    };
    std::vector<Req> reqs;
    for (uint32_t h = 0; h < c.host_threads; ++h) reqs.push_back(Req{-1, Rng(p.seed * 1009 + h)});
    for (uint32_t d = 0; d < uint32_t(sys.accels.size()); ++d)
        for (uint32_t r = 0; r < c.device_requesters; ++r)
            reqs.push_back(Req{int(d), Rng(p.seed * 2003 + d * 1024 + r)});
    std::function<void(Req&)> next;
    auto finished = makeClient([&](Txn* x) {
        Req* qp = static_cast<Req*>(x->ctx);
        pool.put(x);
        if (++done % 65536 == 0 && progress && !progress(double(done) / double(c.ops))) throw Cancelled();
        next(*qp);
    });
    next = [&](Req& q) {
        if (issued >= c.ops) return;
        ++issued;
        Txn* a = pool.get();
        a->addr = lines[q.rng.below(lines.size())];
        const bool store = q.rng.uniform() < c.store_fraction;
        const bool unc = q.dev >= 0 && q.rng.uniform() < c.uncached_fraction;
        if (store) {
            a->kind = unc ? (q.rng.uniform() < 0.5 ? Txn::StoreNoAlloc : Txn::StoreWrInv) : Txn::Store;
            a->value = ++storeSeq;
        } else {
            a->kind = unc ? Txn::LoadCurrent : (q.dev >= 0 && q.rng.uniform() < 0.5) ? Txn::LoadAny : Txn::Load;
        }
        a->birth = sys.loop.now();
        a->client = &finished;
        a->ctx = &q;
        if (q.dev < 0)
            sys.home->hostAccess(a);
        else
            sys.accels[size_t(q.dev)]->access(a);
    };
    for (auto& q : reqs) next(q);
    sys.run();
    Report r;
    if (detail) {
        if (sys.checker->violations())
            *detail = sys.checker->first();
        else if (done < c.ops) {
            *detail = "no progress after " + std::to_string(done) + " of " + std::to_string(c.ops) + " operations;";
            for (auto& d : sys.accels) *detail += " " + d->describe();
            *detail += " " + sys.home->describe();
        }
    }
    r.emplace_back("ops", double(done));
    r.emplace_back("deadlock", done < c.ops ? 1.0 : 0.0);
    r.emplace_back("elapsed_ns", ticksToNs(sys.loop.now()));
    r.emplace_back("lines", double(lines.size()));
    r.emplace_back("events", double(sys.loop.events()));
    sys.report(r, 0, sys.loop.now());
    return r;
}

// ---------------------------------------------------------------- scripts

ScriptResult runScript(const SystemParams& p, const std::vector<ScriptStep>& steps, bool check,
                       const std::string& inject) {
    const Accelerator::Bug bug = bugOf(inject, "script.inject");
    p.validate();
    const int devices = int(p.accelInstances());
    const AccelDeviceParams& first = p.accelerators[0];
    for (size_t i = 0; i < steps.size(); ++i) {
        const ScriptStep& st = steps[i];
        const std::string at = "script step " + std::to_string(i);
        need(st.agent >= -1 && st.agent < devices,
             at + ": agent = " + std::to_string(st.agent) + " is out of range; allowed: -1 (a host core) to " +
                 std::to_string(devices - 1));
        if (st.op == "dma") {
            need(st.agent >= 0, at + ": agent = -1 is not allowed with op = 'dma'; allowed: a device index");
            need(st.target == "host", at + ": target = '" + st.target + "' is not allowed with op = 'dma'; allowed values: host");
            need(st.bytes >= 1 && st.bytes <= (1ull << 30),
                 at + ": bytes = " + fmtNum(double(st.bytes)) + " is out of range; allowed: 1 to 1073741824");
        } else {
            accessKind(st.op, (at + ": op").c_str());
        }
        need(st.target == "host" || st.target == "device",
             at + ": target = '" + st.target + "' is not allowed; allowed values: host, device");
        need(st.target == "host" || first.accel.type == 2,
             at + ": target = 'device' is not allowed with " + first.prefix() +
                 "accel.type = 1 (no device memory); allowed values: host");
        const uint64_t limit = st.target == "host" ? (1ull << 40) : first.accel.memory_bytes;
        need(st.offset < limit, at + ": offset = " + fmtNum(double(st.offset)) + " is out of range; allowed: 0 to " +
                                    fmtNum(double(limit - 1)));
    }
    System sys(p, check);
    for (auto& d : sys.accels) d->inject(bug);
    ScriptResult out;
    uint64_t storeSeq = 0;
    for (const ScriptStep& st : steps) {
        Report r;
        const Tick t0 = sys.loop.now();
        if (st.op == "dma") {
            DmaJob job;
            job.addr = kHostBase + st.offset;
            job.bytes = st.bytes;
            sys.home->doorbell(uint16_t(st.agent), &job);
            sys.run();
            r.emplace_back("latency_ns", ticksToNs(job.noticedAt - job.start));
            r.emplace_back("phase_doorbell_ns", ticksToNs(job.doorbellAt - job.start));
            r.emplace_back("phase_descriptor_ns", ticksToNs(job.descriptorAt - job.doorbellAt));
            r.emplace_back("phase_data_ns", ticksToNs(job.dataAt - job.descriptorAt));
            r.emplace_back("phase_completion_ns", ticksToNs(job.noticedAt - job.dataAt));
            r.emplace_back("cached_lines", double(job.cachedLines));
            r.emplace_back("value", double(job.firstValue));
        } else {
            Txn* a = sys.pool.get();
            a->kind = accessKind(st.op, "script.op");
            a->addr = (st.target == "host" ? kHostBase : sys.accels[0]->memBase()) + (st.offset & ~uint64_t(kLineBytes - 1));
            if (isWrite(a->kind)) a->value = ++storeSeq;
            a->birth = t0;
            Tick done = 0;
            auto finished = makeClient([&done](Txn* x) { done = x->done; });
            a->client = &finished;
            if (st.agent < 0)
                sys.home->hostAccess(a);
            else
                sys.accels[size_t(st.agent)]->access(a);
            sys.run();
            r.emplace_back("latency_ns", ticksToNs(done - t0));
            for (int s = 0; s < kNumStages; ++s)
                r.emplace_back(std::string("stage_") + stageName(Stage(s)) + "_ns", ticksToNs(a->stage[s]));
            r.emplace_back("hit", a->hit ? 1.0 : 0.0);
            r.emplace_back("value", double(a->value));
            sys.pool.put(a);
        }
        r.emplace_back("start_ns", ticksToNs(t0));
        out.steps.push_back(r);
    }
    sys.report(out.system, 0, sys.loop.now());
    return out;
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

// ---------------------------------------------------------------- DMA vs CXL.cache

std::vector<Report> runDmaVsCache(const SystemParams& p, const DmaVsCacheConfig& c, const Progress& progress) {
    need(!c.sizes.empty(), "dma_vs_cache.sizes is empty; allowed: one or more sizes from 1 to 1073741824 bytes");
    for (uint64_t s : c.sizes)
        need(s >= 1 && s <= (1ull << 30), "dma_vs_cache.sizes contains " + fmtNum(double(s)) +
                                              ", out of range; allowed: 1 to 1073741824 bytes");
    need(c.cache_op == "load" || c.cache_op == "rdcurr",
         "dma_vs_cache.cache_op = '" + c.cache_op + "' is not allowed; allowed values: load, rdcurr");
    need(c.min_transfers >= 1 && c.min_transfers <= 1000000,
         "dma_vs_cache.min_transfers = " + fmtNum(c.min_transfers) + " is out of range; allowed: 1 to 1000000");
    need(c.stream_bytes <= (1ull << 34), "dma_vs_cache.stream_bytes = " + fmtNum(double(c.stream_bytes)) +
                                             " is out of range; allowed: up to 17179869184");
    std::vector<Report> out;
    const Txn::Kind kind = c.cache_op == "load" ? Txn::Load : Txn::LoadCurrent;
    size_t step = 0;
    const size_t steps = c.sizes.size() * 4;
    auto tick = [&] {
        ++step;
        if (progress && !progress(double(step) / double(steps))) throw Cancelled();
    };
    for (uint64_t size : c.sizes) {
        const uint64_t count = std::max<uint64_t>(c.min_transfers, (c.stream_bytes + size - 1) / size);
        // DMA: one transfer alone (latency), then `count` back to back (bandwidth).
        for (int bw = 0; bw < 2; ++bw) {
            System sys(p, false);
            const uint64_t n = bw ? count : 1;
            std::vector<std::unique_ptr<DmaJob>> jobs;
            struct Noticed final : DmaClient {
                Tick last = 0;
                uint64_t finished = 0;
                void dmaDone(DmaJob* x) override {
                    last = std::max(last, x->noticedAt);
                    ++finished;
                }
            } noticed;
            Tick& last = noticed.last;
            uint64_t& finished = noticed.finished;
            const uint64_t stride = (size + 4095) / 4096 * 4096;
            for (uint64_t i = 0; i < n; ++i) {
                jobs.emplace_back(new DmaJob());
                DmaJob* j = jobs.back().get();
                j->addr = kHostBase + i * stride;
                j->bytes = size;
                j->client = &noticed;
                // The driver prepares and rings descriptors one after another.
                sys.home->doorbell(0, j, Tick(i) * nsToTicks(p.accelerators[0].dma.setup_ns));
            }
            sys.run();
            need(finished == n, "internal: DMA run stopped with transfers outstanding");
            Report r;
            if (!bw) {
                const DmaJob& j = *jobs[0];
                r.emplace_back("transfer_bytes", double(size));
                r.emplace_back("latency_ns", ticksToNs(j.noticedAt - j.start));
                r.emplace_back("phase_doorbell_ns", ticksToNs(j.doorbellAt - j.start));
                r.emplace_back("phase_descriptor_ns", ticksToNs(j.descriptorAt - j.doorbellAt));
                r.emplace_back("phase_data_ns", ticksToNs(j.dataAt - j.descriptorAt));
                r.emplace_back("phase_completion_ns", ticksToNs(j.noticedAt - j.dataAt));
                out.push_back(r);
            } else {
                Report& lr = out.back();
                lr.emplace_back("bandwidth_gbps", double(size * n) / ticksToNs(last));
                lr.emplace_back("bandwidth_transfers", double(n));
                lr.emplace_back("mechanism_dma", 1.0);
            }
            tick();
        }
        // CXL.cache: the device loads the lines itself, as many at once as its MSHRs allow.
        for (int bw = 0; bw < 2; ++bw) {
            System sys(p, false);
            const uint64_t lines = (size + kLineBytes - 1) / kLineBytes;
            const uint64_t total = bw ? lines * count : lines;
            const uint64_t stride = (size + 4095) / 4096 * 4096;
            uint64_t issued = 0, done = 0;
            Tick last = 0;
            LatencyStats lat;
            std::function<void()> pump;
            auto finished = makeClient([&](Txn* x) {
                lat.add(*x, x->done);
                last = std::max(last, x->done);
                sys.pool.put(x);
                ++done;
                pump();
            });
            pump = [&] {
                while (issued < total && issued - done < p.accelerators[0].cache.mshrs) {
                    const uint64_t t = issued / lines, l = issued % lines;
                    Txn* a = sys.pool.get();
                    a->kind = kind;
                    a->addr = kHostBase + t * stride + l * kLineBytes;
                    a->birth = sys.loop.now();
                    ++issued;
                    a->client = &finished;
                    sys.accels[0]->access(a);
                }
            };
            pump();
            sys.run();
            need(done == total, "internal: CXL.cache run stopped with loads outstanding");
            if (!bw) {
                Report r;
                r.emplace_back("transfer_bytes", double(size));
                r.emplace_back("latency_ns", ticksToNs(last));
                reportLatency(r, lat, "line_");
                out.push_back(r);
            } else {
                Report& lr = out.back();
                lr.emplace_back("bandwidth_gbps", double(size * count) / ticksToNs(last));
                lr.emplace_back("bandwidth_transfers", double(count));
                lr.emplace_back("mechanism_dma", 0.0);
            }
            tick();
        }
    }
    return out;
}

}  // namespace cxlcore
