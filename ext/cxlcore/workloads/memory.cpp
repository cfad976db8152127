#include "cxlcore/workloads/memory.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>

#include "cxlcore/kernel/stats.hpp"
#include "cxlcore/system/fabric_manager.hpp"
#include "cxlcore/workloads/accel_load.hpp"
#include "cxlcore/workloads/mixed.hpp"

namespace cxlcore {

namespace {

// A stream's read latency under `k`: mean, percentiles and stages.
void reportLatency(Report& r, const LatencyStats& st, const std::string& k) {
    r.emplace_back(k + "_latency_ns_mean", st.meanNs());
    st.tails(r, k + "_");
    r.emplace_back(k + "_latency_ns_max", st.maxNs());
    for (int s = 0; s < kNumStages; ++s) r.emplace_back(k + ".stage." + stageName(Stage(s)) + "_ns", st.stageNs(s));
    if (TraceSink* t = TraceSink::current()) t->label(&st, k);
}

// Requests reach the memory system through the uncore; LLC miss detection
// is part of that path for every core.
class Driver : public Component, public Requester {
  public:
    // On the cores of host `host`.
    explicit Driver(System& s, size_t host = 0) : Component(s.loop), sys_(s), host_(s.host(host)) {
        host_.uncore->setRequester(this);
        llcLat_ = nsToTicks(host_.p.host.llc_latency_ns);
    }
    void retryReq() override {}  // the uncore never refuses
    // x->mark: when the response reaches the core (it may be later than now).
    bool tryResp(Txn* x) override {
        complete(x, std::max(x->mark, now()));
        sys_.pool.put(x);
        return true;
    }

  protected:
    // A miss leaving the core at `at` (now or later): a MemRd or MemWr.
    Txn* issue(uint16_t core, Opc op, uint64_t addr, uint8_t tag, Tick at, bool own = false) {
        Txn* x = sys_.pool.get();
        x->opc = op;
        x->own = own;
        // Page-table reads carry their own physical address.
        x->addr = x->hostAddr = (addr & kPageTableFlag) || physical_ ? addr : place_(addr);
        x->src = core;
        x->tag = tag;
        x->birth = x->mark = at;
        if (sys_.trace) x->trace = sys_.trace->admit(*x);
        host_.uncore->tryReq(x);
        return x;
    }
    virtual void complete(Txn* x, Tick done) = 0;
    System& sys_;
    HostPart& host_;
    Tick llcLat_;

  public:
    // Where the workload's virtual addresses lie (default: host physical).
    PagePlacement place_;
    bool physical_ = false;  // addresses are host physical already
};

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
        for (uint64_t k = 0; k < kAhead; ++k) ahead_[k] = aheadOf(k);
    }
    uint64_t addrOf(uint64_t k) const {
        if (paged_) {
            k %= n_;
            const uint64_t pass = k / npages_, i = k % npages_;
            return shuffle_(i) * page_ + words_[(pass + i) % perPage_] * kLineBytes;
        }
        return (random_ ? shuffle_(k % n_) : k % n_) * stride_;
    }
    uint64_t lines() const { return n_; }
    // The physical address of the k-th load. lat_mem_rd's initialisation
    // writes its pages in chase order (a stride chase in address order), so
    // that is the order they fault in and take frames: Linux refills a CPU's
    // free-page list with pcp->batch (kBatch) frames at a time, taken in
    // ascending order from the zone's smallest free blocks; each batch starts
    // at a random frame, and within it a run of consecutive frames ends at
    // each page with probability 1 / frame_run_pages (the blocks a zone's
    // free lists hold are of several orders when it is fragmented).
    uint64_t physOf(uint64_t k) const { return physOf(k, addrOf(k)); }
    uint64_t physOf(uint64_t k, uint64_t va) const {
        const uint64_t touch = paged_ ? (k % n_) % npages_ : va / page_;
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
        return frame * page_ + va % page_;
    }
    ChaseLoad step() {
        // The order is known ahead: each load's addresses are computed kAhead
        // loads early, and the cache sets a later load will touch are
        // fetched while this one is looked up (the simulated caches' tags are
        // larger than the simulator's own caches).
        const Ahead cur = ahead_[k_ % kAhead];
        const Ahead& next = ahead_[k_ % kAhead] = aheadOf(k_ + kAhead);
        h_.prefetchSets(next.pa);
        h_.prefetchSets(CacheHierarchy::pteAddr(next.va, page_));
        const Ahead& mid = ahead_[(k_ + kAhead / 2) % kAhead];  // its sets are here by now
        h_.prefetchVictim(mid.pa);
        h_.prefetchVictim(CacheHierarchy::pteAddr(mid.va, page_));
        ++k_;
        ChaseLoad o;
        o.addr = cur.va;
        o.translate = uint8_t(h_.translate(o.addr));
        o.pte = o.translate == 2 ? uint8_t(h_.access(CacheHierarchy::pteAddr(o.addr, page_))) : 0;
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
    Ahead aheadOf(uint64_t k) const {
        const uint64_t va = addrOf(k);
        return Ahead{va, physOf(k, va)};
    }
    Ahead ahead_[kAhead];
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

// ---------------------------------------------------------------- traffic (STREAM, MLC, rate, bench)

enum Tag : uint8_t { kLoad = 0, kRfo = 1, kWb = 2, kNtStore = 3, kProbe = 4 };

class TrafficDriver : public Driver {
  public:
    struct Op2 {
        uint8_t array;  // which STREAM array
        bool store;
    };

    // On the cores of host `host`; `total`: the requests to complete (0: issue
    // until the run stops, measured over another driver's window: follow()).
    TrafficDriver(System& s, uint32_t threads, uint64_t total, const Progress& progress, size_t host = 0)
        : Driver(s, host), threads_(threads), total_(total ? total : ~0ull), progress_(progress) {
        const HostParams& hp = host_.p.host;
        mshrs_ = hp.mshrs_per_core;
        wbSlots_ = hp.writeback_buffer;
        cores_.resize(threads + 1);
        progressStep_ = std::max<uint64_t>(1, total / 200);
    }

    // STREAM: line-granular ops of one kernel over per-thread slices of three arrays.
    void setStream(const std::string& kernel, uint64_t lines, const std::string& placement, const std::string& stores,
                   uint64_t pageBytes) {
        if (kernel == "copy") ops_ = {{0, false}, {2, true}};
        else if (kernel == "scale") ops_ = {{2, false}, {1, true}};
        else if (kernel == "add") ops_ = {{0, false}, {1, false}, {2, true}};
        else if (kernel == "triad") ops_ = {{1, false}, {2, false}, {0, true}};
        else throw ConfigError("stream.kernel = '" + kernel + "' is not allowed; allowed values: copy, scale, add, triad");
        if (placement != "first-touch" && placement != "contiguous")
            throw ConfigError("stream.placement = '" + placement +
                              "' is not allowed; allowed values: first-touch, contiguous");
        if (stores != "write-allocate" && stores != "non-temporal")
            throw ConfigError("stream.stores = '" + stores +
                              "' is not allowed; allowed values: write-allocate, non-temporal");
        ntStores_ = stores == "non-temporal";
        streamLines_ = lines;
        for (const Op2& o : ops_)
            if (o.store) storeArray_ = o.array;
        // A dirty line is written back when newer lines push it out of the core's
        // L2, which holds the latest l2 lines of the stream, 1/ops of them stores.
        // STREAM passes over its arrays again and again, so the first stores
        // already push out the last pass's lines. At most half an array back:
        // the arrays simulated here are short, and the write-back stays far from
        // the rows being read, as it is in arrays larger than the caches.
        const uint64_t lag = std::min<uint64_t>(lines / 2, host_.p.host.l2_bytes / kLineBytes / ops_.size());
        for (Core& k : cores_) k.evict = (lines - lag) % lines;
        const uint64_t slice = lines * kLineBytes;
        firstTouch_ = placement == "first-touch";
        pageLines_ = Divisor(pageBytes / kLineBytes);  // a power of two: shifts on the per-request path
        slicePages_ = (lines + pageLines_.d - 1) / pageLines_.d;
        // Arrays 1 GiB apart plus a page, as STREAM's offsets avoid aliasing.
        arrayStride_ = ((threads_ * slice + (1ull << 30) - 1) >> 30 << 30) + 4096;
        threadSlice_ = slice;
        stream_ = true;
    }
    // Pages interleaved over windows go where their virtual address says
    // (Linux's interleave index is the page's offset in its mapping), so the
    // arrays are laid out as the program declares them, each window's pages
    // in address order: first-touch frame order is modelled within one window.
    void interleaved() { firstTouch_ = false; }
    void setTraffic(const TrafficConfig& c) {
        readFrac_ = c.read_fraction;
        rfo_ = c.stores == "write-allocate";
        cycle_ = c.ops;
        // A store with write-allocate moves a line each way, so of the memory
        // traffic a fraction f is reads when a share (1 - f) / f of the
        // accesses are stores.
        storeProb_ = rfo_ ? (readFrac_ > 0 ? (1.0 - readFrac_) / readFrac_ : 1.0) : 1.0 - readFrac_;
        sequential_ = c.pattern == "sequential";
        footprint_ = std::max<uint64_t>(c.footprint_bytes / kLineBytes / threads_, 1);
        // A sequential store stream evicts the dirty line an L2's worth behind it.
        victimLag_ = std::min<uint64_t>(footprint_ / 2, host_.p.host.l2_bytes / kLineBytes);
        delay_ = nsToTicks(c.inject_delay_ns);
        if (c.rate_gbps > 0) interval_ = nsToTicks(kLineBytes * threads_ / c.rate_gbps);
        poisson_ = c.arrivals == "poisson";
        probe_ = c.probe;
    }

    void start() {
        for (uint32_t c = 0; c < threads_; ++c) {
            cores_[c].rng = Rng(seed() * 1000003 + c);
            // Independent threads walk their buffers out of phase: started in
            // step at aligned offsets, every stream would sit in the same
            // banks at once, a lockstep no real set of threads keeps.
            if (sequential_ && !stream_) cores_[c].phase = cores_[c].rng.below(footprint_);
            // Periodic threads, and MLC's threads that pause between accesses,
            // start a share of their period apart, so that together they
            // arrive evenly spaced rather than all at once: started in step,
            // paused threads stay in step and every period's requests queue
            // behind each other (threads of a real run are not in step).
            if (interval_ && !poisson_) cores_[c].notBefore = now() + interval_ * c / threads_;
            else if (!interval_ && delay_) cores_[c].notBefore = now() + delay_ * c / threads_;
            pump(c, now());
        }
        if (probe_) {
            cores_[threads_].rng = Rng(seed() * 7 + 99);
            issueProbe(now());
        }
    }

    // Results over the measurement window (10% to 90% of the requests completed).
    bool windowDone() const { return windowEnd_ != 0; }
    // Another driver's measurement window opens or closes (a driver without a total of its own).
    void open(Tick t) { windowStart_ = t; }
    void close(Tick t) { windowEnd_ = t; }
    Tick windowStart_ = 0, windowEnd_ = 0;
    uint64_t wLoads_ = 0, wStores_ = 0, wReadBytes_ = 0, wWriteBytes_ = 0;
    LatencyStats reads_, probeLat_;
    // Told when the measurement window opens (true) and closes: other work in
    // the same system (accelerators) is measured over the same window.
    std::function<void(bool, Tick)> onWindow;

  protected:
    void process() override {
        const Tick t = now();
        Tick w = kNever;
        for (uint32_t c = 0; c < threads_; ++c) {
            Core& k = cores_[c];
            // A response that has landed frees its MSHR now, even while the
            // core waits out its pacing: the wake-up below must see it.
            landMshrs(k, t);
            if (k.notBefore <= t) {
                pump(c, t);
            } else if (issued_ < total_) {
                const Tick free = k.mshr < mshrs_ ? t : k.freeing.empty() ? kNever : k.freeing.headReady();
                if (free != kNever) w = std::min(w, std::max(k.notBefore, free));
            }
        }
        if (w != kNever) requestWake(w);
    }

    void complete(Txn* x, Tick t) override {
        Core& k = cores_[x->src];
        if (measuring()) {
            if (x->isRead()) wReadBytes_ += x->size;
            else wWriteBytes_ += x->size;
        }
        switch (x->tag) {
            case kProbe:
                if (measuring()) probeLat_.add(*x, t);
                issueProbe(t);  // the next dependent load starts when this one returns
                return;
            case kWb:
                --k.wb;
                break;
            case kRfo:
                freeMshr(k, t);
                if (stream_) {
                    // The line is dirty now; the one the caches push out for it is an L2's worth of stores older.
                    k.dirty.push_back(streamAddr(x->src, storeArray_, k.evict));
                    if (++k.evict == streamLines_) k.evict = 0;
                } else {
                    k.dirty.push_back(victim(x->src, x->addr));
                }
                countOp(true, t);
                break;
            default:
                if (x->isRead() && measuring()) reads_.add(*x, t);
                freeMshr(k, t);
                countOp(x->tag != kLoad, t);
        }
        // Paced cores issue on their own clock; the others react at once.
        if (interval_ || delay_)
            requestWake(t);
        else
            pump(x->src, t);
    }

  private:
    struct Core {
        uint32_t mshr = 0, wb = 0;
        TimedQueue<char> freeing;  // paced cores: MSHRs whose response lands later than now
        std::deque<uint64_t> dirty;
        uint64_t pos = 0;
        uint64_t phase = 0;  // sequential traffic: the line of its region a thread starts at
        uint64_t evict = 0;  // STREAM: the store array's line the next read for ownership pushes out
        Tick notBefore = 0;
        Rng rng;
    };
    bool measuring() const { return windowStart_ != 0 && windowEnd_ == 0; }
    // Each host's cores draw their own numbers; the first host's are the one-host system's.
    uint64_t seed() const { return sys_.params().seed + 104729ull * host_.index; }

    // A response reaches the core at t, which may be later than now. A core
    // that reacts at once issues at t itself; a paced one wakes on its own
    // clock, so its MSHR stays taken until t (else it could issue before then).
    void freeMshr(Core& k, Tick t) {
        if ((interval_ || delay_) && t > now()) k.freeing.push(t, 0);
        else --k.mshr;
    }
    void landMshrs(Core& k, Tick t) {
        while (k.freeing.headReady() <= t) {
            k.freeing.pop();
            --k.mshr;
        }
    }

    void countOp(bool store, Tick t) {
        ++completed_;
        if (measuring()) ++(store ? wStores_ : wLoads_);
        if (!windowStart_ && completed_ >= total_ / 10) {
            windowStart_ = t;
            sys_.resetStats();
            if (onWindow) onWindow(true, t);
        } else if (windowStart_ && !windowEnd_ && completed_ >= total_ - total_ / 10) {
            windowEnd_ = t;
            if (onWindow) onWindow(false, t);
            sys_.loop.stop();
        }
        if (progress_ && completed_ % progressStep_ == 0 && !progress_(double(completed_) / double(total_)))
            throw Cancelled();
    }

    // Issues what core c may at time t (now or a response's later arrival).
    void pump(uint32_t c, Tick t) {
        Core& k = cores_[c];
        landMshrs(k, t);
        while (!k.dirty.empty() && k.wb < wbSlots_) {
            ++k.wb;
            issue(uint16_t(c), Opc::MemWr, k.dirty.front(), kWb, t);
            k.dirty.pop_front();
        }
        while (k.mshr < mshrs_ && issued_ < total_ && k.notBefore <= t) {
            ++issued_;
            ++k.mshr;
            if (stream_) {
                const Op2& o = ops_[k.pos % ops_.size()];
                const uint64_t line = (k.pos / ops_.size()) % streamLines_;
                const uint64_t a = streamAddr(c, o.array, line);
                if (o.store && ntStores_) issue(uint16_t(c), Opc::MemWr, a, kNtStore, t);
                else issue(uint16_t(c), Opc::MemRd, a, o.store ? kRfo : kLoad, t, o.store);
            } else {
                uint64_t a = (c * footprint_ + (sequential_ ? (k.pos + k.phase) % footprint_ : k.rng.below(footprint_))) *
                             kLineBytes;
                if (dcd_ && !held(k.rng, a)) {
                    // Nothing held: wait for the next command, which may add capacity.
                    --issued_;
                    --k.mshr;
                    if (fm_->next() == kNever)
                        throw StallError(host_.p.name + ": its traffic follows its extents on " + dcd_->where() +
                                         ", but it holds none and no later command adds any");
                    k.notBefore = fm_->next();
                    break;
                }
                const bool store = !cycle_.empty() ? cycle_[k.pos % cycle_.size()] == 'S'
                                   : readFrac_ < 1.0 && k.rng.uniform() < storeProb_;
                if (!store) issue(uint16_t(c), Opc::MemRd, a, kLoad, t);
                else if (rfo_) issue(uint16_t(c), Opc::MemRd, a, kRfo, t, true);
                else issue(uint16_t(c), Opc::MemWr, a, kNtStore, t);
            }
            ++k.pos;
            if (interval_ && poisson_) {
                // The next arrival is due an exponential gap after this one's
                // due time, not after when it went (a stalled core catches up).
                const double gap = -std::log(1.0 - k.rng.uniform()) * double(interval_);
                k.notBefore = (k.notBefore ? k.notBefore : t) + Tick(gap);
            } else if (interval_) {
                k.notBefore = std::max(k.notBefore, t) + interval_;
            } else if (delay_) {
                k.notBefore = t + delay_;
            }
        }
        if (k.notBefore > t && k.mshr < mshrs_ && issued_ < total_) requestWake(k.notBefore);
        if (k.mshr >= mshrs_ && !k.freeing.empty()) requestWake(std::max(k.notBefore, k.freeing.headReady()));
    }

    uint64_t streamAddr(uint32_t c, uint8_t array, uint64_t line) const {
        if (!firstTouch_) return array * arrayStride_ + c * threadSlice_ + line * kLineBytes;
        // Thread c's frames in fault order: page p of a, of b, of c, then page p + 1.
        const uint64_t page = (uint64_t(c) * slicePages_ + pageLines_.div(line)) * 3 + array;
        return (page * pageLines_.d + pageLines_.mod(line)) * kLineBytes;
    }

    // The dirty line a write-allocate fill pushes out of the caches: a store
    // stream's line an L2's worth behind, or (random stores) one written at
    // random earlier, a random line of the thread's region.
    uint64_t victim(uint32_t c, uint64_t filled) {
        Core& k = cores_[c];
        const uint64_t base = uint64_t(c) * footprint_;
        const uint64_t line = sequential_ ? (filled / kLineBytes - base + footprint_ - victimLag_ % footprint_) % footprint_
                                          : k.rng.below(footprint_);
        return (base + line) * kLineBytes;
    }

    void issueProbe(Tick t) {
        Core& k = cores_[threads_];
        // The probe chases through its own region, far from the traffic.
        uint64_t a = (threads_ * footprint_ + k.rng.below(footprint_)) * kLineBytes;
        if (dcd_ && !held(k.rng, a)) return;  // nothing held: no probe
        issue(uint16_t(threads_), Opc::MemRd, a, kProbe, t);
    }

  public:
    // Accesses go only to lines that host `host`'s LD on `d` holds at the
    // time, at `base` + their DPA in the host's address map; `fm` says when
    // the holdings next change.
    void followExtents(const Type3Device* d, uint8_t host, uint64_t base, const DcSchedule* fm) {
        dcd_ = d;
        dcdHost_ = host;
        dcdBase_ = base;
        fm_ = fm;
        physical_ = true;
    }

  private:
    // A line the LD holds now and is not releasing, uniformly over its
    // extents (false: none). Lines being released are drawn again (a few
    // times: when nearly all of them go, the host waits for the next command).
    bool held(Rng& r, uint64_t& addr) const {
        const auto& v = dcd_->extents(dcdHost_);
        uint64_t lines = 0;
        for (const auto& e : v) lines += (e.second - e.first) / kLineBytes;
        if (!lines) return false;
        for (int tries = 0; tries < 64; ++tries) {
            uint64_t i = r.below(lines);
            for (const auto& e : v) {
                const uint64_t n = (e.second - e.first) / kLineBytes;
                if (i < n) {
                    const uint64_t dpa = e.first + i * kLineBytes;
                    if (fm_->releasing(dcd_, dcdHost_, dpa, now())) break;
                    addr = dcdBase_ + dpa;
                    return true;
                }
                i -= n;
            }
        }
        return false;
    }
    const Type3Device* dcd_ = nullptr;
    const DcSchedule* fm_ = nullptr;
    uint8_t dcdHost_ = 0;
    uint64_t dcdBase_ = 0;

    uint32_t threads_;
    uint64_t total_, issued_ = 0, completed_ = 0;
    Progress progress_;
    uint64_t progressStep_;
    uint32_t mshrs_, wbSlots_;
    std::vector<Core> cores_;
    bool stream_ = false, sequential_ = false, probe_ = false, firstTouch_ = true, ntStores_ = false;
    Divisor pageLines_{64};
    uint64_t slicePages_ = 1;
    std::vector<Op2> ops_;
    uint64_t streamLines_ = 1, arrayStride_ = 0, threadSlice_ = 0, footprint_ = 1;
    uint8_t storeArray_ = 0;
    double readFrac_ = 1.0, storeProb_ = 0.0;
    bool rfo_ = false;
    std::string cycle_;
    uint64_t victimLag_ = 0;
    Tick delay_ = 0, interval_ = 0;
    bool poisson_ = false;
};

// A window that never closed would make every rate below a number that was
// not computed: say so instead (the watchdog catches the runs that stall).
void requireWindow(const char* workload, const TrafficDriver& d) {
    if (!d.windowDone() || d.windowEnd_ < d.windowStart_)
        throw StallError(std::string(workload) +
                         ": the run ended before 90 % of its requests completed; no measurement window");
}

// What one host's workload moved over a window of `span`, under `k`, beside
// the most its windows' media could.
void rates(Report& r, const std::string& k, const System& s, const PagePlacement& place, size_t host, Tick span,
           uint64_t readBytes, uint64_t writeBytes) {
    const double secs = double(span) * 1e-12;
    r.emplace_back(k + "read_gbps", secs > 0 ? readBytes / secs / 1e9 : 0);
    r.emplace_back(k + "write_gbps", secs > 0 ? writeBytes / secs / 1e9 : 0);
    r.emplace_back(k + "total_gbps", secs > 0 ? (readBytes + writeBytes) / secs / 1e9 : 0);
    r.emplace_back(k + "media_peak_gbps", s.mediaPeakBytesPerSec(place.windows(), host) / 1e9);
}

void commonReport(Report& r, System& s, const PagePlacement& place, Tick start, Tick end, uint64_t readBytes,
                  uint64_t writeBytes) {
    if (end < start) throw std::logic_error("internal error: measurement window ends before it starts");
    r.emplace_back("window_ns", ticksToNs(end - start));
    rates(r, "", s, place, 0, end - start, readBytes, writeBytes);
    s.report(r, start, end);
    r.emplace_back("txn_pool_size", double(s.pool.allocated()));
    r.emplace_back("txn_pool_peak", double(s.pool.peak()));
    r.emplace_back("events", double(s.loop.events()));
}

}  // namespace

std::shared_ptr<const std::vector<ChaseLoad>> WarmCache::find(const std::string& key) const {
    for (const Entry& e : entries_)
        if (e.key == key) return e.loads;
    return nullptr;
}

void WarmCache::put(std::string key, std::shared_ptr<const std::vector<ChaseLoad>> loads) {
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

static void checkThreads(const std::string& workload, uint32_t threads, const HostDesc& h) {
    if (threads < 1 || threads > h.host.cores)
        throw ConfigError(workload + ".threads = " + fmtNum(threads) + " is out of range; allowed: 1 to host.cores (" +
                          fmtNum(h.host.cores) + ")");
}

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
            if (h < 0) throw ConfigError(k + ".host = '" + q.host + "' is not a host of the system");
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

// ---------------------------------------------------------------- trace replay

namespace {

class TraceDriver : public Driver {
  public:
    TraceDriver(System& s, const TraceConfig& c, const Progress& p)
        : Driver(s), in_(c.path), path_(c.path), max_(c.max_outstanding), progress_(p) {
        if (!in_) throw ConfigError("trace.path = '" + c.path + "' cannot be opened");
        in_.seekg(0, std::ios::end);
        size_ = std::max<double>(1.0, double(in_.tellg()));
        in_.seekg(0);
        readNext();
    }
    void start() { process(); }
    uint64_t requests_ = 0, readBytes_ = 0, writeBytes_ = 0;
    Tick first_ = kNever, last_ = 0;
    LatencyStats reads_, writes_;

  protected:
    void process() override {
        const Tick t = now();
        while (have_ && outstanding_ < max_ && nextTime_ <= t) {
            issue(0, nextOp_, nextAddr_, 0, t);
            ++outstanding_;
            first_ = std::min(first_, t);
            if (nextBytes_ > kLineBytes) {
                nextBytes_ -= kLineBytes;
                nextAddr_ += kLineBytes;
            } else {
                readNext();
            }
        }
        if (have_ && outstanding_ < max_) requestWake(std::max(nextTime_, t));
    }
    void complete(Txn* x, Tick done) override {
        --outstanding_;
        ++requests_;
        last_ = done;
        if (x->isRead()) {
            readBytes_ += x->size;
            reads_.add(*x, last_);
        } else {
            writeBytes_ += x->size;
            writes_.add(*x, last_);
        }
        if (progress_ && (requests_ & 0xffff) == 0 && !progress_(double(in_.tellg()) / size_)) throw Cancelled();
        requestWake(done);
    }

  private:
    // The line's own bytes are shown escaped where they are not printable
    // ASCII: the message must be one line of text whatever the file holds.
    [[noreturn]] void bad(const std::string& what) {
        std::string shown;
        for (unsigned char ch : what) {
            if (ch >= 0x20 && ch < 0x7f) {
                shown += char(ch);
            } else {
                static const char* hex = "0123456789abcdef";
                shown += "\\x";
                shown += hex[ch >> 4];
                shown += hex[ch & 15];
            }
        }
        throw ConfigError("trace " + path_ + " line " + std::to_string(line_) + ": " + shown);
    }
    void readNext() {
        have_ = false;
        std::string s;
        while (std::getline(in_, s)) {
            ++line_;
            if (s.find('\0') != std::string::npos) bad("holds a NUL byte; a trace is a text file");
            auto hash = s.find('#');
            if (hash != std::string::npos) s.resize(hash);
            for (char& ch : s)
                if (ch == ',') ch = ' ';
            std::istringstream ls(s);
            std::string ts, op, addr, size;
            if (!(ls >> ts)) continue;  // blank or comment
            if (!(ls >> op >> addr)) bad("expected 'time_ns op address [size]'");
            ls >> size;
            std::string extra;
            if (ls >> extra) bad("unexpected field '" + extra + "'; expected 'time_ns op address [size]'");
            char* end = nullptr;
            double tns = std::strtod(ts.c_str(), &end);
            if (*end || !(tns >= 0) || tns > 1e15) bad("time_ns '" + ts + "' is not a number from 0 to 1e15");
            Tick tt = nsToTicks(tns);
            if (tt < lastTime_) bad("time_ns " + ts + " is earlier than the previous line; times must not decrease");
            if (op == "R" || op == "r" || op == "READ" || op == "read") nextOp_ = Opc::MemRd;
            else if (op == "W" || op == "w" || op == "WRITE" || op == "write") nextOp_ = Opc::MemWr;
            else bad("op '" + op + "' is not allowed; allowed values: R, W");
            errno = 0;
            // Hex with 0x, decimal otherwise (a leading zero is not octal).
            const bool hex = addr.size() > 2 && addr[0] == '0' && (addr[1] == 'x' || addr[1] == 'X');
            unsigned long long a = std::strtoull(addr.c_str() + (hex ? 2 : 0), &end, hex ? 16 : 10);
            if (*end || addr.empty() || !std::isxdigit(static_cast<unsigned char>(addr[hex ? 2 : 0])) || errno)
                bad("address '" + addr + "' is not a hex (0x...) or decimal number");
            uint64_t bytes = kLineBytes;
            if (!size.empty()) {
                unsigned long long b = std::strtoull(size.c_str(), &end, 10);
                if (*end || size[0] == '-' || b < 1 || b > (1u << 20)) bad("size '" + size + "' is out of range; allowed: 1 to 1048576");
                bytes = b;
            }
            if (bytes - 1 > ~0ull - a) bad("address '" + addr + "' plus size runs past the end of the address space");
            // Whole cache lines: the request covers every line the access touches.
            uint64_t first = a / kLineBytes * kLineBytes, lastL = (a + bytes - 1) / kLineBytes * kLineBytes;
            nextAddr_ = first;
            nextBytes_ = lastL - first + kLineBytes;
            nextTime_ = lastTime_ = tt;
            have_ = true;
            return;
        }
    }

    std::ifstream in_;
    std::string path_;
    uint32_t max_, outstanding_ = 0;
    Progress progress_;
    double size_ = 1;
    uint64_t line_ = 0, nextAddr_ = 0, nextBytes_ = 0;
    Tick nextTime_ = 0, lastTime_ = 0;
    Opc nextOp_ = Opc::MemRd;
    bool have_ = false;
};

}  // namespace

Report runTrace(const SystemParams& sp, const TraceConfig& cfg, const Progress& progress) {
    if (cfg.max_outstanding < 1 || cfg.max_outstanding > 65536)
        throw ConfigError("trace.max_outstanding = " + fmtNum(cfg.max_outstanding) +
                          " is out of range; allowed: 1 to 65536");
    System s(sp);
    TraceDriver d(s, cfg, progress);
    if (!cfg.target.windows.empty()) d.place_ = PagePlacement(s.host(), cfg.target, "trace");
    d.start();
    s.run();
    Report r;
    r.emplace_back("requests", double(d.requests_));
    const Tick start = d.first_ == kNever ? 0 : d.first_;
    commonReport(r, s, d.place_, start, std::max(d.last_, start), d.readBytes_, d.writeBytes_);
    reportLatency(r, d.reads_, "read");
    reportLatency(r, d.writes_, "write");
    return r;
}

}  // namespace cxlcore
