// lmbench's pointer chase (lat_mem_rd) on the host's cores.
#include <algorithm>
#include <memory>
#include <sstream>

#include "cxlcore/workloads/driver.hpp"

namespace cxlcore {

using namespace memload;

namespace {

// Bijective shuffle of [0, n): a 4-round Feistel network with cycle walking,
// so a random pointer chase over any working set needs no permutation table.
class Shuffle {
  public:
    Shuffle(uint64_t n, uint64_t seed) : n_(n) {
        int bits = 2;
        while ((1ull << bits) < n) bits += 2;
        half_ = bits / 2;
        mask_ = (1ull << half_) - 1;
        Rng r(seed);
        for (auto& k : keys_) k = r.next();
    }
    uint64_t operator()(uint64_t i) const {
        do {
            uint64_t l = i >> half_, rr = i & mask_;
            for (uint64_t k : keys_) {
                uint64_t f = (rr * 0x9E3779B97F4A7C15ull ^ k) >> 17;
                uint64_t nl = rr;
                rr = (l ^ f) & mask_;
                l = nl;
            }
            i = (l << half_) | rr;
        } while (i >= n_);
        return i;
    }

  private:
    uint64_t n_, mask_;
    int half_;
    uint64_t keys_[4];
};

// ---------------------------------------------------------------- pointer chase

// The chase runs in two steps. The cache outcome of each load depends only on
// the host's cache and TLB geometry and the working set, never on memory
// timing, so a functional pass settles the caches and records the outcomes of
// the timed loads; a timed replay then charges each level's latency and sends
// the misses to memory. A calibration reuses the first step (WarmCache).
class ChaseWalk {
  public:
    // Random order (stride 0) follows lat_mem_rd -t (LMbench's thrash_initialize):
    // the working set is `ws / page` pages drawn at random from a buffer of
    // `region` bytes, and the chain visits one line of every page, always
    // in the same page order, before it comes back to a page; pass p reads
    // line words[(p + i) % lines-per-page] of the i-th page, where words is
    // the bit-reversed line order (words_initialize). So the TLBs see a cycle
    // over the pages and the page walks read the PTEs of pages scattered over
    // the whole buffer. A working set that is not a whole number of pages
    // is chased in a random order of its lines.
    ChaseWalk(const HostParams& hp, uint64_t ws, uint64_t stride, uint64_t region, uint64_t seed, uint64_t cacheSeed)
        : h_(hp, cacheSeed), stride_(stride ? stride : kLineBytes), n_(ws / (stride ? stride : kLineBytes)),
          random_(stride == 0), paged_(random_ && ws % hp.page_bytes == 0),
          npages_(paged_ ? ws / hp.page_bytes : 0), perPage_(hp.page_bytes / kLineBytes),
          shuffle_(paged_ ? std::max(region, ws) / hp.page_bytes : n_, seed), page_(hp.page_bytes),
          breakP_(hp.frame_run_pages >= kBatch ? 0 : uint64_t(4294967296.0 / hp.frame_run_pages)),
          runSeed_(cacheSeed * 0x9E3779B97F4A7C15ull) {
        if (paged_) {
            int bits = 0;
            while ((2ull << bits) <= perPage_) ++bits;  // perPage_ = 2^bits
            words_.resize(perPage_);
            for (uint64_t i = 0; i < perPage_; ++i) {
                uint64_t r = 0;
                for (int j = 0; j < bits; ++j)
                    if (i & (1ull << j)) r |= 1ull << (bits - j - 1);
                words_[i] = r;
            }
        }
        while ((1ull << pageShift_) < page_) ++pageShift_;  // pages are a power of two (HostParams)
        // Each pass visits every page: their virtual and physical places are
        // worked out once (read in order, a page per step) rather than on
        // every visit, up to 16 MiB of table.
        if (paged_ && npages_ <= (1u << 20)) {
            pages_.resize(npages_);
            for (uint64_t i = 0; i < npages_; ++i) pages_[i] = Ahead{shuffle_(i) * page_, physOf(i, 0)};
        }
        for (uint64_t k = 0; k < kAhead; ++k) ahead_[k] = aheadNext();
    }
    uint64_t lines() const { return n_; }
    // The physical address of a load (by `touch`, the order in which its
    // page was first written). lat_mem_rd's initialisation
    // writes its pages in chase order (a stride chase in address order), so
    // that is the order they fault in and take frames: Linux refills a CPU's
    // free-page list with pcp->batch (kBatch) frames at a time, taken in
    // ascending order from the zone's smallest free blocks; each batch starts
    // at a random frame, and within it a run of consecutive frames ends at
    // each page with probability 1 / frame_run_pages (the blocks a zone's
    // free lists hold are of several orders when it is fragmented).
    uint64_t physOf(uint64_t touch, uint64_t va) const {
        const uint64_t batch = touch / kBatch, off = touch % kBatch;
        Runs& c = runs_[batch & 1];
        if (c.batch != batch) {  // which pages of the batch start a run (page 0 always)
            c.batch = batch;
            c.starts = 1;
            if (breakP_)
                for (uint64_t i = 1; i < kBatch; ++i)
                    if ((mix64(batch * kBatch + i + runSeed_) >> 32) < breakP_) c.starts |= 1ull << i;
        }
        const uint64_t mask = c.starts & (off == 63 ? ~0ull : (2ull << off) - 1);
        const uint64_t start = 63 - uint64_t(__builtin_clzll(mask));
        const uint64_t frame = (mix64(batch * kBatch + start + runSeed_ * 3) >> 24) + (off - start);
        return frame * page_ + (va & (page_ - 1));
    }
    ChaseLoad step() {
        // The order is known ahead: each load's addresses are computed kAhead
        // loads early, and the cache sets a later load will touch are
        // fetched while this one is looked up (the simulated caches' tags are
        // larger than the simulator's own caches).
        const Ahead cur = ahead_[k_ % kAhead];
        const Ahead& next = ahead_[k_ % kAhead] = aheadNext();  // load k_ + kAhead
        h_.prefetchSets(next.pa);
        h_.prefetchSets(CacheHierarchy::pteOfPage(next.va >> pageShift_));
        const Ahead& mid = ahead_[(k_ + kAhead / 2) % kAhead];  // its sets are here by now
        h_.prefetchVictim(mid.pa);
        h_.prefetchVictim(CacheHierarchy::pteOfPage(mid.va >> pageShift_));
        ++k_;
        ChaseLoad o;
        o.addr = cur.va;
        o.translate = uint8_t(h_.translate(o.addr));
        o.pte = o.translate == 2 ? uint8_t(h_.access(CacheHierarchy::pteOfPage(o.addr >> pageShift_))) : 0;
        o.data = uint8_t(h_.access(cur.pa));
        return o;
    }
    void warm(uint64_t count) {
        for (uint64_t i = 0; i < count; ++i) step();
    }
    // `count` timed loads. A working set larger than that is sampled evenly
    // over one whole pass (the loads in between update the caches untimed):
    // under DRRIP which lines stay in the LLC depends on where they sit in
    // the cycle, so a run of consecutive loads would be biased.
    std::vector<ChaseLoad> sample(uint64_t count) {
        std::vector<ChaseLoad> out;
        out.reserve(count);
        const uint64_t spread = std::max<uint64_t>(1, n_ / count);
        for (uint64_t i = 0; i < count; ++i) {
            out.push_back(step());
            warm(spread - 1);
        }
        return out;
    }

  private:
    CacheHierarchy h_;
    uint64_t stride_, n_;
    bool random_, paged_;
    uint64_t npages_, perPage_;
    Shuffle shuffle_;
    uint64_t page_, k_ = 0;
    static constexpr uint64_t kBatch = 63;  // pcp->batch (mm/page_alloc.c zone_batchsize, zones over 256 MiB)
    uint64_t breakP_;                         // P(a run ends at a page) in units of 2^-32
    uint64_t runSeed_;
    struct Runs {
        uint64_t batch = ~0ull, starts = 0;
    };
    mutable Runs runs_[2];  // the run starts of the last two batches looked up
    std::vector<uint64_t> words_;
    // The virtual and physical addresses of loads k_ to k_ + kAhead - 1, load k at k % kAhead.
    struct Ahead {
        uint64_t va, pa;
    };
    static constexpr uint64_t kAhead = 32;
    // Loads are looked ahead at in order, 0, 1, 2, ...: the next one's place
    // in the chain is kept as counters (k % n_; paged, its pass and page),
    // so no step divides.
    struct Cursor {
        uint64_t k = 0, pass = 0, i = 0;
    };
    Cursor at_;
    unsigned pageShift_ = 0;
    Ahead aheadNext() {
        if (!paged_) {
            const uint64_t va = (random_ ? shuffle_(at_.k) : at_.k) * stride_;
            if (++at_.k == n_) at_.k = 0;
            return Ahead{va, physOf(va >> pageShift_, va)};
        }
        // Pass p reads line words[(p + i) % lines-per-page] of the i-th page.
        const uint64_t off = words_[(at_.pass + at_.i) & (perPage_ - 1)] * kLineBytes;
        Ahead a;
        if (!pages_.empty()) {
            a = pages_[at_.i];
            a.va += off;
            a.pa += off;
        } else {
            a.va = shuffle_(at_.i) * page_ + off;
            a.pa = physOf(at_.i, a.va);
        }
        if (++at_.i == npages_) {
            at_.i = 0;
            if (++at_.pass == perPage_) at_.pass = 0;
        }
        return a;
    }
    Ahead ahead_[kAhead];
    std::vector<Ahead> pages_;  // paged: the i-th page's first byte, virtual and physical
};

class ChaseDriver : public Driver {
  public:
    ChaseDriver(System& s, const std::vector<ChaseLoad>& loads, uint64_t pageBytes) : Driver(s), loads_(loads) {
        const HostParams& hp = host_.p.host;
        lat_[0] = nsToTicks(hp.l1_latency_ns);
        lat_[1] = nsToTicks(hp.l2_latency_ns);
        lat_[2] = nsToTicks(hp.llc_latency_ns);
        stlb_ = nsToTicks(hp.stlb_latency_ns);
        walk_ = nsToTicks(hp.walk_latency_ns);
        page_ = pageBytes;
    }
    void start() {
        cur_ = now();
        t0_ = cur_;
        advance();
    }
    Tick elapsed() const { return cur_ - t0_; }
    uint64_t levels_[4] = {0, 0, 0, 0};
    uint64_t stlbHits_ = 0, walks_ = 0, walkMisses_ = 0, walkLevels_[3] = {0, 0, 0};
    LatencyStats mem_;

  protected:
    void process() override {}
    void complete(Txn* x, Tick done) override {
        cur_ = done;
        if (x->tag == 1) {
            stage_ = 1;  // translation done
        } else {
            mem_.add(*x, cur_);
            ++levels_[3];
            finish();
        }
        advance();
    }

  private:
    void finish() {
        ++i_;
        stage_ = 0;
    }
    // Misses leave the core after the LLC lookup, which the uncore path models.
    void request(uint64_t addr, uint8_t tag) { issue(0, Opc::MemRd, addr, tag, cur_); }
    void advance() {
        while (i_ < loads_.size()) {
            const ChaseLoad& o = loads_[i_];
            if (stage_ == 0) {
                if (o.translate >= 1) cur_ += stlb_;
                stage_ = 1;
                if (o.translate == 1) ++stlbHits_;
                if (o.translate == 2) {
                    ++walks_;
                    cur_ += walk_;
                    if (o.pte == CacheHierarchy::kMem) {
                        ++walkMisses_;
                        request(CacheHierarchy::pteAddr(o.addr, page_), 1);
                        return;
                    }
                    cur_ += lat_[o.pte];
                    ++walkLevels_[o.pte];
                }
            }
            if (o.data == CacheHierarchy::kMem) {
                stage_ = 2;
                request(o.addr, 0);
                return;
            }
            cur_ += lat_[o.data];
            ++levels_[o.data];
            finish();
        }
    }

    const std::vector<ChaseLoad>& loads_;
    Tick lat_[3], stlb_, walk_, cur_ = 0, t0_ = 0;
    uint64_t page_;
    size_t i_ = 0;
    int stage_ = 0;  // 0: translate, 1: data lookup, 2: data miss in flight
};

}  // namespace

std::shared_ptr<const std::vector<ChaseLoad>> WarmCache::find(const std::string& key) const {
    std::lock_guard<std::mutex> g(m_);
    for (const Entry& e : entries_)
        if (e.key == key) return e.loads;
    return nullptr;
}

void WarmCache::put(std::string key, std::shared_ptr<const std::vector<ChaseLoad>> loads) {
    std::lock_guard<std::mutex> g(m_);
    if (entries_.size() >= cap_) entries_.pop_front();
    entries_.push_back(Entry{std::move(key), std::move(loads)});
}

namespace {
// What the cache outcomes depend on: the geometry of the caches and TLBs, not
// their latencies.
std::string warmKey(const SystemParams& sp, uint64_t ws, uint64_t stride, uint64_t warm, uint64_t accesses,
                    uint64_t region) {
    const HostParams& h = sp.host;
    std::ostringstream os;
    os.precision(17);
    os << h.l1_bytes << ',' << h.l1_assoc << ',' << h.l2_bytes << ',' << h.l2_assoc << ',' << h.llc_bytes << ','
       << h.llc_assoc << ',' << h.llc_bimodal_insert_prob << ',' << h.llc_inclusive << ',' << h.dtlb_entries << ',' << h.dtlb_assoc << ','
       << h.stlb_entries << ',' << h.stlb_assoc << ',' << h.page_bytes << ',' << h.frame_run_pages << ';' << sp.seed << ',' << ws << ','
       << stride << ',' << warm << ',' << accesses << ',' << region;
    return os.str();
}
}  // namespace

Report runChase(const SystemParams& sp, const ChaseConfig& cfg, uint64_t wsIndex, WarmCache* cache) {
    if (wsIndex >= cfg.working_sets.size()) throw ConfigError("lmbench: working-set index out of range");
    const uint64_t ws = cfg.working_sets[wsIndex];
    const uint64_t elem = cfg.stride ? cfg.stride : kLineBytes;
    if (cfg.stride && (cfg.stride % 8 || cfg.stride > (1ull << 30)))
        throw ConfigError("lmbench.stride = " + fmtNum(double(cfg.stride)) +
                          " is not allowed; allowed: 0 (random) or a multiple of 8 up to 1073741824");
    if (ws < elem || ws > (1ull << 40))
        throw ConfigError("lmbench.working_set_bytes = " + fmtNum(double(ws)) + " is out of range; allowed: " +
                          fmtNum(double(elem)) + " to 1099511627776");
    if (cfg.accesses < 1 || cfg.accesses > (1ull << 32))
        throw ConfigError("lmbench.accesses = " + fmtNum(double(cfg.accesses)) +
                          " is out of range; allowed: 1 to 4294967296");
    System s(sp);
    const uint64_t n = ws / elem, llcLines = sp.host.llc_bytes / kLineBytes;
    // Two passes settle a working set the LLC holds. A larger one needs one:
    // DRRIP keeps lines that were re-referenced, and the timed loads are
    // sampled over the next pass.
    const uint64_t warm = cfg.warmup ? cfg.warmup : (n <= llcLines ? 2 * n : n);
    uint64_t region = cfg.region_bytes;
    if (region == 0)
        for (uint64_t w : cfg.working_sets) region = std::max(region, w);
    const std::string key = cache ? warmKey(sp, ws, cfg.stride, warm, cfg.accesses, region) : std::string();
    std::shared_ptr<const std::vector<ChaseLoad>> loads = cache ? cache->find(key) : nullptr;
    if (!loads) {
        // Seeded by the working set itself, so a size gives the same result
        // whatever list it is run in.
        ChaseWalk walk(sp.host, ws, cfg.stride, region, sp.seed * 0x9E3779B97F4A7C15ull + ws, sp.seed + 5);
        walk.warm(warm);
        loads = std::make_shared<const std::vector<ChaseLoad>>(walk.sample(cfg.accesses));
        if (cache) cache->put(key, loads);
    }
    ChaseDriver d(s, *loads, sp.host.page_bytes);
    d.place_ = PagePlacement(s.host(), cfg.target, "lmbench");
    s.resetStats();
    d.start();
    s.run();
    Report r;
    r.emplace_back("working_set_bytes", double(ws));
    r.emplace_back("latency_ns", ticksToNs(d.elapsed()) / double(cfg.accesses));
    const char* lv[4] = {"l1", "l2", "llc", "memory"};
    for (int i = 0; i < 4; ++i) r.emplace_back(std::string("hit_") + lv[i], double(d.levels_[i]) / cfg.accesses);
    r.emplace_back("stlb_hit", double(d.stlbHits_) / cfg.accesses);
    r.emplace_back("page_walk", double(d.walks_) / cfg.accesses);
    for (int i = 0; i < 3; ++i) r.emplace_back(std::string("page_walk_") + lv[i], double(d.walkLevels_[i]) / cfg.accesses);
    r.emplace_back("page_walk_memory", double(d.walkMisses_) / cfg.accesses);
    reportLatency(r, d.mem_, "memory");
    return r;
}

}  // namespace cxlcore
