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

// Threads of every initiator taking part (a host's cores, or a CXL.cache
// device of one), each issuing its next access when its last completes
// (and, in pingpong, only when the one token is its own).
class SharedDriver final : public Component, public Client {
  public:
    struct Thread {
        SharedCache* cache;  // a host's cores: their cache
        Accelerator* dev;    // else the device
        uint64_t base;  // the shared region's first byte in its host's address map
        uint32_t host;  // its initiator's index among those taking part
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
        a->hostAddr = a->addr = th.base + line * kLineBytes;
        a->value = store ? ++version : 0;
        a->client = this;
        a->ctx = reinterpret_cast<void*>(uintptr_t(i));
        a->birth = a->mark = t;
        first = std::min(first, t);
        if (th.dev) th.dev->access(a);
        else th.cache->access(a);
    }
    System& s_;
    const SharedConfig& c_;
    Progress progress_;
    Tick think_;
    TimedQueue<uint32_t> ready_;
};

}  // namespace

Report runShared(const SystemParams& sp0, const SharedConfig& cfg, const Progress& progress, std::string* detail) {
    check(cfg);
    SystemParams sp = sp0;
    sp.peer_accelerators_run = true;  // every host's CXL.cache devices may share the lines
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
    // Each host's CXL.cache devices and their home agent.
    struct Devices {
        HomeAgent* home = nullptr;
        std::vector<Accelerator*> accels;
    };
    std::vector<Devices> devs(s.hosts());
    if (s.home) {
        devs[0].home = s.home.get();
        for (auto& a : s.accels) devs[0].accels.push_back(a.get());
    }
    for (auto& pc : s.peerCaches) {
        devs[pc.host].home = pc.home.get();
        for (auto& a : pc.accels) devs[pc.host].accels.push_back(a.get());
    }
    struct Taking {
        size_t host;
        const MemoryWindow* w;
    };
    struct Initiator {
        std::string name;
        size_t taking;     // its host's index in `taking`
        Accelerator* dev;  // nullptr: the host's cores
    };
    std::vector<Taking> taking;
    std::vector<Initiator> inits;
    auto windowOf = [&](size_t h) -> const MemoryWindow* {
        for (const MemoryWindow& w : s.host(h).windows)
            if (std::find(w.reach.begin(), w.reach.end(), dev) != w.reach.end()) return &w;
        return nullptr;
    };
    auto take = [&](size_t h, const MemoryWindow* w) {
        for (size_t k = 0; k < taking.size(); ++k)
            if (taking[k].host == h) return k;
        taking.push_back({h, w});
        return taking.size() - 1;
    };
    if (cfg.hosts.empty()) {
        for (size_t h = 0; h < s.hosts(); ++h)
            if (const MemoryWindow* w = windowOf(h)) inits.push_back({s.host(h).p.name, take(h, w), nullptr});
        for (size_t k = 0, n = taking.size(); k < n; ++k)
            for (Accelerator* a : devs[taking[k].host].accels) inits.push_back({a->name(), k, a});
    } else {
        for (const std::string& n : cfg.hosts) {
            for (const Initiator& i : inits)
                if (i.name == n) throw ConfigError("shared.hosts: '" + n + "' is listed twice; allowed: each host once");
            const int h = s.hostIndex(n);
            if (h >= 0) {
                const MemoryWindow* w = windowOf(size_t(h));
                if (!w) throw ConfigError("shared.hosts: host '" + n + "' has no window onto " + dev->where() + "; allowed: hosts that reach it");
                inits.push_back({n, take(size_t(h), w), nullptr});
                continue;
            }
            Accelerator* found = nullptr;
            size_t fh = 0;
            std::string all;
            for (size_t k = 0; k < devs.size(); ++k)
                for (Accelerator* a : devs[k].accels) {
                    if (a->name() == n) found = a, fh = k;
                    all += ", " + a->name();
                }
            if (!found)
                throw ConfigError("shared.hosts: '" + n + "' is not a host or CXL.cache device of the system; allowed: "
                                  "the names of its hosts (simcxl topology show)" + (all.empty() ? "" : " and devices (" + all.substr(2) + ")"));
            const MemoryWindow* w = windowOf(fh);
            if (!w) throw ConfigError("shared.hosts: device '" + n + "' is below host " + s.host(fh).p.name + ", which has no window onto " + dev->where() + "; allowed: devices of hosts that reach it");
            inits.push_back({n, take(fh, w), found});
        }
    }
    for (const Taking& t : taking)
        if (t.w->p.size && cfg.lines * kLineBytes > t.w->p.size)
            throw ConfigError("shared.lines = " + fmtNum(double(cfg.lines)) + " is out of range; allowed: at most " +
                              fmtNum(double(t.w->p.size / kLineBytes)) + " (" + s.host(t.host).p.name + "'s window " +
                              t.w->p.name + ")");
    // The devices below the hosts taking part share the lines through their home agents.
    std::vector<std::pair<Accelerator*, size_t>> sharing;  // each with its host's index in `taking`
    for (size_t k = 0; k < taking.size(); ++k)
        for (Accelerator* a : devs[taking[k].host].accels) {
            if (a->memBytes())
                throw ConfigError("shared: device '" + a->name() + "' is Type-2; allowed: Type-1 devices below the "
                                  "hosts of a shared device (Type-2 device memory beside it is not modelled)");
            sharing.emplace_back(a, k);
        }
    std::unique_ptr<CoherenceChecker> checker;
    if (cfg.check) {
        // Agents: the hosts (each its cores), then the devices sharing the lines.
        const size_t agents = s.hosts() + sharing.size();
        if (agents > 33)
            throw ConfigError("shared.check: " + std::to_string(s.hosts()) + " hosts and " + std::to_string(sharing.size()) +
                              " devices are " + std::to_string(agents) + " agents; allowed: at most 33 under the checker "
                              "(or check = false)");
        checker = std::make_unique<CoherenceChecker>(uint32_t(agents));
        std::vector<std::string> names;
        for (size_t h = 0; h < s.hosts(); ++h) names.push_back(s.host(h).p.name);
        for (size_t i = 0; i < sharing.size(); ++i) {
            names.push_back(sharing[i].first->name());
            const MemoryWindow& w = *taking[sharing[i].second].w;
            const uint32_t agent = uint32_t(s.hosts() + i);
            sharing[i].first->setChecker(checker.get(), agent);
            checker->window(agent, w.p.base, w.p.end());
        }
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
        if (HomeAgent* home = devs[taking[k].host].home) c.setHome(home);
    }
    for (uint32_t k = 0; k < inits.size(); ++k) {
        const Initiator& in = inits[k];
        d.lat.emplace_back();
        for (uint32_t i = 0; i < cfg.threads; ++i)
            d.threads.push_back({caches[in.taking].get(), in.dev, taking[in.taking].w->p.base, k,
                                 uint64_t(i) * cfg.lines / cfg.threads + k * 7919, Rng(cfg.seed * 1000003 + k * 131 + i)});
    }
    d.total = cfg.pattern == "pingpong" ? cfg.rounds * inits.size() * cfg.lines : cfg.accesses;
    d.start();
    try {
        s.run();
    } catch (const StallError& e) {
        // Where the hosts' shared caches and homes wait, for the report.
        std::string more = "; " + dev->describe();
        for (auto& c : caches) more += "; " + c->describe();
        for (const Devices& x : devs)
            if (x.home) more += "; " + x.home->describe();
        throw StallError(e.what() + more);
    }
    if (d.completed < d.total)
        throw StallError("shared: the run ended with " + std::to_string(d.total - d.completed) +
                         " accesses not done");
    Report r;
    const double secs = double(d.last - std::min(d.first, d.last)) * 1e-12;
    r.emplace_back("accesses", double(d.completed));
    r.emplace_back("elapsed_ns", secs * 1e9);
    r.emplace_back("accesses_per_us", secs > 0 ? double(d.completed) / secs * 1e-6 : 0);
    for (uint32_t k = 0; k < inits.size(); ++k) {
        const Initiator& in = inits[k];
        const std::string p = in.name + ".";
        const LatencyStats& l = d.lat[k];
        if (in.dev) {
            const AccelStats& a = in.dev->stats();
            uint64_t snoops = 0;
            for (uint32_t i = 0; i < kNumSnoops; ++i) snoops += a.snoopsRecv[i];
            const std::pair<const char*, uint64_t> counts[] = {
                {"loads", a.loads},          {"stores", a.stores},         {"hits", a.hits},
                {"misses", a.misses},        {"writebacks", a.dirtyEvicts}, {"snoops", snoops},
                {"snoops_snpinv", a.snoopsRecv[snoopIndex(Opc::SnpInv)]},
                {"snoops_snpdata", a.snoopsRecv[snoopIndex(Opc::SnpData)]}};
            for (const auto& c : counts) r.emplace_back(p + c.first, double(c.second));
        } else {
            const SharedCacheStats& cs = caches[in.taking]->stats();
            const std::pair<const char*, uint64_t> counts[] = {
                {"loads", cs.loads},           {"stores", cs.stores},
                {"hits", cs.hits},             {"misses", cs.misses},
                {"upgrades", cs.upgrades},     {"writebacks", cs.writebacks},
                {"snoop_writebacks", cs.snoopWritebacks}, {"snoops", cs.snoops},
                {"snoop_hits", cs.snoopHits},  {"snoops_deferred", cs.snoopsDeferred}};
            for (const auto& c : counts) r.emplace_back(p + c.first, double(c.second));
        }
        r.emplace_back(p + "latency_ns_mean", l.meanNs());
        l.tails(r, p);
        for (int st = 0; st < kNumStages; ++st)
            if (l.stageNs(st) > 0) r.emplace_back(p + "stage." + stageName(Stage(st)) + "_ns", l.stageNs(st));
    }
    // What each host's shared cache did for its devices (hosts with a home agent only).
    for (uint32_t k = 0; k < taking.size(); ++k) {
        if (!devs[taking[k].host].home) continue;
        const SharedCacheStats& cs = caches[k]->stats();
        const std::string p = s.host(taking[k].host).p.name + ".shared_cache.";
        r.emplace_back(p + "home_reads", double(cs.homeReads));
        r.emplace_back(p + "home_misses", double(cs.homeMisses));
        r.emplace_back(p + "snoop_recalls", double(cs.snoopRecalls));
        r.emplace_back(p + "core_recalls", double(cs.coreRecalls));
        r.emplace_back(p + "bisnps", double(cs.snoops));
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
