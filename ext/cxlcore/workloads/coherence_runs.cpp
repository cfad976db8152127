// Host-device sharing (ping-pong, producer-consumer), the randomised
// coherence stress test and directed scripts, under the checker.
#include <algorithm>
#include <functional>

#include "cxlcore/workloads/accel_common.hpp"

namespace cxlcore {

using namespace accelwl;

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

}  // namespace cxlcore
