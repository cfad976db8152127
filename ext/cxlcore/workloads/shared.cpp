#include "cxlcore/workloads/shared.hpp"

#include <algorithm>
#include <memory>

#include "cxlcore/kernel/stats.hpp"
#include "cxlcore/system/system.hpp"

namespace cxlcore {

namespace {

void check(const SharedConfig& c) {
    auto bad = [](const std::string& what) { throw ConfigError("shared." + what); };
    if (c.pattern != "random" && c.pattern != "sequential" && c.pattern != "pingpong")
        bad("pattern = '" + c.pattern + "' is not allowed; allowed values: random, sequential, pingpong");
    if (c.threads < 1 || c.threads > 256) bad("threads = " + fmtNum(c.threads) + " is out of range; allowed: 1 to 256");
    if (c.lines < 1 || c.lines > (1ull << 36))
        bad("lines = " + fmtNum(double(c.lines)) + " is out of range; allowed: 1 to 68719476736");
    if (!(c.store_fraction >= 0 && c.store_fraction <= 1))
        bad("store_fraction = " + fmtNum(c.store_fraction) + " is out of range; allowed: 0 to 1");
    if (c.accesses < 1 || c.accesses > (1ull << 40))
        bad("accesses = " + fmtNum(double(c.accesses)) + " is out of range; allowed: 1 to 1099511627776");
    if (c.rounds < 1 || c.rounds > (1ull << 32))
        bad("rounds = " + fmtNum(double(c.rounds)) + " is out of range; allowed: 1 to 4294967296");
    if (!(c.think_ns >= 0 && c.think_ns <= 1e6))
        bad("think_ns = " + fmtNum(c.think_ns) + " is out of range; allowed: 0 to 1000000");
    const SharedCacheParams& k = c.cache;
    if (k.ways < 1 || k.ways > 64) bad("cache_ways = " + fmtNum(k.ways) + " is out of range; allowed: 1 to 64");
    if (k.lines < k.ways || k.lines > (1ull << 28) || k.lines % k.ways)
        bad("cache_lines = " + fmtNum(double(k.lines)) + " is not allowed; allowed: whole sets of cache_ways, up to "
            "268435456");
    if (!(k.hit_ns <= 1e5)) bad("hit_ns = " + fmtNum(k.hit_ns) + " is out of range; allowed: at most 100000 (below 0: the host's LLC latency)");
    if (!(k.snoop_ns <= 1e5)) bad("snoop_ns = " + fmtNum(k.snoop_ns) + " is out of range; allowed: at most 100000 (below 0: the host's LLC latency)");
}

// Threads of every host taking part, each issuing its next access when its
// last completes (and, in pingpong, only when the one token is its own).
class SharedDriver final : public Component, public Client {
  public:
    struct Thread {
        SharedCache* cache;
        uint64_t base;  // the shared region's first byte in its host's address map
        uint32_t host;  // its index among the hosts taking part
        uint64_t step;  // sequential: its next line
        Rng rng;
    };
    SharedDriver(System& s, const SharedConfig& c, const Progress& p)
        : Component(s.loop), s_(s), c_(c), progress_(p), think_(nsToTicks(c.think_ns)) {}
    std::vector<Thread> threads;
    std::vector<LatencyStats> lat;  // per host taking part
    uint64_t total = 0, issued = 0, completed = 0, version = 0;
    Tick first = kNever, last = 0;

    void start() {
        for (uint32_t i = 0; i < threads.size(); ++i)
            if (c_.pattern != "pingpong" || i == 0) ready_.push(0, i);
        requestWake(0);
    }
    void done(Txn* a) override {
        const Thread& th = threads[size_t(reinterpret_cast<uintptr_t>(a->ctx))];
        lat[th.host].add(*a, a->done);
        last = a->done;
        ++completed;
        s_.pool.put(a);
        if (progress_ && (completed & 0x3fff) == 0 && !progress_(double(completed) / double(total))) throw Cancelled();
        const uint32_t next = c_.pattern == "pingpong" ? pingpongThread(issued) : uint32_t(&th - threads.data());
        if (issued < total) {
            ready_.push(now() + think_, next);
            requestWake(now() + think_);
        }
    }

  protected:
    void process() override {
        const Tick t = now();
        while (!ready_.empty() && ready_.headReady() <= t && issued < total) issue(ready_.pop(), t);
        if (!ready_.empty() && issued < total) requestWake(ready_.headReady());
    }

  private:
    uint32_t hostsTaking() const { return uint32_t(lat.size()); }
    // Pingpong: access i is host (i / lines) mod hosts's, on line i mod lines.
    uint32_t pingpongThread(uint64_t i) const { return uint32_t((i / c_.lines) % hostsTaking()) * c_.threads; }
    void issue(uint32_t i, Tick t) {
        Thread& th = threads[i];
        uint64_t line;
        bool store;
        if (c_.pattern == "pingpong") {
            line = issued % c_.lines;
            store = true;
        } else if (c_.pattern == "sequential") {
            line = th.step++ % c_.lines;
            store = th.rng.uniform() < c_.store_fraction;
        } else {
            line = th.rng.below(c_.lines);
            store = th.rng.uniform() < c_.store_fraction;
        }
        ++issued;
        Txn* a = s_.pool.get();
        a->kind = store ? Txn::Store : Txn::Load;
        a->opc = store ? Opc::MemWr : Opc::MemRd;
        a->hostAddr = th.base + line * kLineBytes;
        a->value = store ? ++version : 0;
        a->client = this;
        a->ctx = reinterpret_cast<void*>(uintptr_t(i));
        a->birth = a->mark = t;
        first = std::min(first, t);
        th.cache->access(a);
    }
    System& s_;
    const SharedConfig& c_;
    Progress progress_;
    Tick think_;
    TimedQueue<uint32_t> ready_;
};

}  // namespace

Report runShared(const SystemParams& sp, const SharedConfig& cfg, const Progress& progress, std::string* detail) {
    check(cfg);
    System s(sp);
    // The shared device, and the hosts whose address maps reach it.
    Type3Device* dev = nullptr;
    if (!cfg.device.empty()) {
        dev = &s.device(cfg.device);
        if (!dev->dcoh())
            throw ConfigError("shared.device = '" + cfg.device + "' is not shared; allowed: a Type-3 device with "
                              "device.shared = 1");
    } else {
        for (size_t h = 0; h < s.hosts(); ++h)
            for (const MemoryWindow& w : s.host(h).windows)
                for (Type3Device* d : w.reach)
                    if (d->dcoh() && d != dev) {
                        if (dev) throw ConfigError("shared.device is not given and the system has several shared "
                                                   "devices; allowed: " + dev->where() + ", " + d->where());
                        dev = d;
                    }
        if (!dev) throw ConfigError("shared: the system has no shared device; allowed: a Type-3 device with "
                                    "device.shared = 1");
    }
    struct Taking {
        size_t host;
        const MemoryWindow* w;
    };
    std::vector<Taking> taking;
    auto windowOf = [&](size_t h) -> const MemoryWindow* {
        for (const MemoryWindow& w : s.host(h).windows)
            if (std::find(w.reach.begin(), w.reach.end(), dev) != w.reach.end()) return &w;
        return nullptr;
    };
    if (cfg.hosts.empty()) {
        for (size_t h = 0; h < s.hosts(); ++h)
            if (const MemoryWindow* w = windowOf(h)) taking.push_back({h, w});
    } else {
        for (const std::string& n : cfg.hosts) {
            const int h = s.hostIndex(n);
            if (h < 0) throw ConfigError("shared.hosts: '" + n + "' is not a host of the system; allowed: the names of its hosts (simcxl topology show)");
            const MemoryWindow* w = windowOf(size_t(h));
            if (!w) throw ConfigError("shared.hosts: host '" + n + "' has no window onto " + dev->where() + "; allowed: hosts that reach it");
            for (const Taking& t : taking)
                if (t.host == size_t(h)) throw ConfigError("shared.hosts: '" + n + "' is listed twice; allowed: each host once");
            taking.push_back({size_t(h), w});
        }
    }
    for (const Taking& t : taking)
        if (t.w->p.size && cfg.lines * kLineBytes > t.w->p.size)
            throw ConfigError("shared.lines = " + fmtNum(double(cfg.lines)) + " is out of range; allowed: at most " +
                              fmtNum(double(t.w->p.size / kLineBytes)) + " (" + s.host(t.host).p.name + "'s window " +
                              t.w->p.name + ")");
    std::unique_ptr<CoherenceChecker> checker;
    if (cfg.check) {
        checker = std::make_unique<CoherenceChecker>(uint32_t(s.hosts()));
        std::vector<std::string> names;
        for (size_t h = 0; h < s.hosts(); ++h) names.push_back(s.host(h).p.name);
        checker->name(names);
        dev->dcoh()->setChecker(checker.get());
    }
    SharedDriver d(s, cfg, progress);
    std::vector<std::unique_ptr<SharedCache>> caches;
    for (uint32_t k = 0; k < taking.size(); ++k) {
        HostPart& h = s.host(taking[k].host);
        const MemoryWindow& w = *taking[k].w;
        SharedCacheParams cp = cfg.cache;
        if (cp.hit_ns < 0) cp.hit_ns = h.p.host.llc_latency_ns;
        if (cp.snoop_ns < 0) cp.snoop_ns = h.p.host.llc_latency_ns;
        caches.push_back(std::make_unique<SharedCache>(s.loop, s.pool, cp, h.index, h.p.name, checker.get()));
        SharedCache& c = *caches.back();
        c.setInput(&h.uncore->addInput(&c, h.p.host.uncore_req_latency_ns, h.p.host.uncore_resp_latency_ns));
        c.addWindow(w.p.base, w.p.end(), w.bridge.get());
        d.lat.emplace_back();
        for (uint32_t i = 0; i < cfg.threads; ++i)
            d.threads.push_back({&c, w.p.base, k, uint64_t(i) * cfg.lines / cfg.threads + k * 7919,
                                 Rng(cfg.seed * 1000003 + k * 131 + i)});
    }
    d.total = cfg.pattern == "pingpong" ? cfg.rounds * taking.size() * cfg.lines : cfg.accesses;
    d.start();
    s.run();
    if (d.completed < d.total)
        throw StallError("shared: the run ended with " + std::to_string(d.total - d.completed) +
                         " accesses not done");
    Report r;
    const double secs = double(d.last - std::min(d.first, d.last)) * 1e-12;
    r.emplace_back("accesses", double(d.completed));
    r.emplace_back("elapsed_ns", secs * 1e9);
    r.emplace_back("accesses_per_us", secs > 0 ? double(d.completed) / secs * 1e-6 : 0);
    for (uint32_t k = 0; k < taking.size(); ++k) {
        const std::string p = s.host(taking[k].host).p.name + ".";
        const SharedCacheStats& cs = caches[k]->stats();
        const LatencyStats& l = d.lat[k];
        const std::pair<const char*, uint64_t> counts[] = {
            {"loads", cs.loads},           {"stores", cs.stores},
            {"hits", cs.hits},             {"misses", cs.misses},
            {"upgrades", cs.upgrades},     {"writebacks", cs.writebacks},
            {"snoop_writebacks", cs.snoopWritebacks}, {"snoops", cs.snoops},
            {"snoop_hits", cs.snoopHits},  {"snoops_deferred", cs.snoopsDeferred}};
        for (const auto& c : counts) r.emplace_back(p + c.first, double(c.second));
        r.emplace_back(p + "latency_ns_mean", l.meanNs());
        l.tails(r, p);
        for (int st = 0; st < kNumStages; ++st)
            if (l.stageNs(st) > 0) r.emplace_back(p + "stage." + stageName(Stage(st)) + "_ns", l.stageNs(st));
    }
    if (checker) {
        r.emplace_back("checker_checks", double(checker->checks()));
        r.emplace_back("checker_violations", double(checker->violations()));
    }
    s.report(r, std::min(d.first, d.last), d.last);
    r.emplace_back("events", double(s.loop.events()));
    if (detail && checker && checker->violations()) *detail = checker->first();
    return r;
}

}  // namespace cxlcore
