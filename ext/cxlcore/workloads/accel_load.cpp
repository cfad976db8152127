#include "cxlcore/workloads/accel_load.hpp"

#include "cxlcore/workloads/accelerator.hpp"

namespace cxlcore {

namespace {
void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

}  // namespace

AccelLoad::AccelLoad(System& s, const std::vector<DeviceStream>& streams) : s_(s) {
    const SystemParams& p = s.params();
    need(!s.accels.empty(), "accel: the system has no accelerators; allowed: a system with devices");
    need(streams.size() == p.accelerators.size(), "accel.streams holds " + std::to_string(streams.size()) +
                                                      " streams; allowed: one per device (" +
                                                      std::to_string(p.accelerators.size()) + ")");
    std::string windows;
    for (const MemoryWindow& w : s.host().windows) windows += (windows.empty() ? "" : ", ") + w.p.name;
    for (size_t e = 0; e < streams.size(); ++e) {
        const DeviceStream& d = streams[e];
        const AccelDeviceParams& a = p.accelerators[e];
        const std::string at = "accel." + a.prefix();
        Plan pl;
        pl.kind = accessKind(d.op, at + "op");
        need(d.pattern == "random" || d.pattern == "sequential",
             at + "pattern = '" + d.pattern + "' is not allowed; allowed values: random, sequential");
        pl.random = d.pattern == "random";
        need(d.requesters <= 1024, at + "requesters = " + fmtNum(d.requesters) + " is out of range; allowed: 0 to 1024");
        need(d.depth >= 1 && d.depth <= 4096, at + "depth = " + fmtNum(d.depth) + " is out of range; allowed: 1 to 4096");
        pl.requesters = d.requesters;
        pl.depth = d.depth;
        pl.target = d.target;
        uint64_t room = 0;
        if (d.target == "device" || s.host().windowIndex(d.target) < 0) {
            // Device memory: its own, or a Type-2 description's by name.
            int owner = d.target == "device" ? int(e) : -1;
            for (size_t k = 0; k < p.accelerators.size() && owner < 0; ++k)
                if (p.accelerators[k].name == d.target) owner = int(k);
            need(owner >= 0, at + "target = '" + d.target + "' is not allowed; allowed values: a window (" + windows +
                                 "), device, or a Type-2 device's name");
            const AccelParams& m = p.accelerators[size_t(owner)].accel;
            need(m.type == 2, at + "target = '" + d.target + "' is not allowed: " + p.accelerators[size_t(owner)].prefix() +
                                  "accel.type = 1 has no device memory; allowed: a window (" + windows + ")");
            room = m.memory_bytes;
        } else {
            const WindowParams& w = s.host().windows[size_t(s.host().windowIndex(d.target))].p;
            room = w.size ? w.size / 2 : 1ull << 40;
        }
        need(d.footprint_bytes >= kLineBytes && d.footprint_bytes <= room,
             at + "footprint_bytes = " + fmtNum(double(d.footprint_bytes)) + " is out of range; allowed: 64 to " +
                 fmtNum(double(room)) + " (what the target holds)");
        pl.lines = d.footprint_bytes / kLineBytes;
        plans_.push_back(pl);
    }
    for (uint32_t i = 0; i < s.accels.size(); ++i) {
        const uint32_t e = s.accelEntry[i];
        for (uint32_t r = 0; r < plans_[e].requesters; ++r) {
            Requester_ q;
            q.accel = i;
            q.stream = e;
            q.seq = plans_[e].lines * r / plans_[e].requesters;  // sequential requesters start spread out
            q.rng = Rng(p.seed * 7919 + reqs_.size());
            reqs_.push_back(q);
        }
    }
    need(!reqs_.empty(), "accel.streams: every device is idle (requesters = 0); allowed: one or more busy");
    lat_.resize(plans_.size());
    bytes_.assign(plans_.size(), 0);
}

uint64_t AccelLoad::baseOf(uint32_t accel, const Plan& p) const {
    const int w = s_.host().windowIndex(p.target);
    if (w >= 0) {
        const WindowParams& wp = s_.host().windows[size_t(w)].p;
        return wp.base + (wp.size ? wp.size / 2 : 1ull << 40);
    }
    if (p.target == "device") return s_.accels[accel]->memBase();
    for (size_t i = 0; i < s_.accels.size(); ++i)
        if (s_.params().accelerators[s_.accelEntry[i]].name == p.target) return s_.accels[i]->memBase();
    return 0;
}

void AccelLoad::start() {
    for (Requester_& q : reqs_) issue(q);
}

void AccelLoad::open(Tick t) {
    counting_ = true;
    from_ = t;
}

void AccelLoad::close(Tick t) {
    counting_ = false;
    to_ = t;
}

void AccelLoad::issue(Requester_& q) {
    const Plan& p = plans_[q.stream];
    const uint64_t base = baseOf(q.accel, p);
    while (q.inflight < p.depth) {
        Txn* a = s_.pool.get();
        a->kind = p.kind;
        a->addr = base + (p.random ? q.rng.below(p.lines) : q.seq++ % p.lines) * kLineBytes;
        if (isWrite(p.kind)) a->value = ++storeSeq_;
        a->birth = s_.loop.now();
        a->client = this;
        a->ctx = &q;
        ++q.inflight;
        s_.accels[q.accel]->access(a);
    }
}

void AccelLoad::done(Txn* x) {
    Requester_& q = *static_cast<Requester_*>(x->ctx);
    --q.inflight;
    ++completed_;
    if (pace_ && completed_ == pace_ / 10) {
        s_.resetStats();
        open(s_.loop.now());
        if (onWindow) onWindow(true, s_.loop.now());
    }
    if (counting_) {
        lat_[q.stream].add(*x, x->done);
        bytes_[q.stream] += kLineBytes;
    }
    s_.pool.put(x);
    if (pace_ && completed_ == pace_ - pace_ / 10) {
        close(s_.loop.now());
        if (onWindow) onWindow(false, s_.loop.now());
        s_.loop.stop();
        return;
    }
    issue(q);
}

void AccelLoad::report(Report& r) const {
    const double ns = ticksToNs(to_ > from_ ? to_ - from_ : 0);
    double total = 0;
    for (size_t e = 0; e < plans_.size(); ++e) {
        const std::string k = "accel." + (s_.params().accelerators[e].name.empty() ? std::string("dev0")
                                                                                    : s_.params().accelerators[e].name);
        const double gbps = ns > 0 ? double(bytes_[e]) / ns : 0.0;
        total += gbps;
        r.emplace_back(k + ".bandwidth_gbps", gbps);
        r.emplace_back(k + ".accesses", double(lat_[e].count()));
        r.emplace_back(k + ".latency_ns_mean", lat_[e].meanNs());
        lat_[e].tails(r, k + ".");
        for (int s = 0; s < kNumStages; ++s)
            r.emplace_back(k + ".stage." + stageName(Stage(s)) + "_ns", lat_[e].stageNs(s));
        if (TraceSink* t = TraceSink::current()) t->label(&lat_[e], k);
    }
    r.emplace_back("accel.bandwidth_gbps", total);
}

}  // namespace cxlcore
