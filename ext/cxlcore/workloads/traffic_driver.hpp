// The driver of STREAM, MLC-style traffic and rate-paced loads on a host's
// cores (memory.cpp's runs and mixed.cpp's host side). Internal to the workloads.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cxlcore/system/fabric_manager.hpp"
#include "cxlcore/workloads/driver.hpp"

namespace cxlcore {
namespace memload {

// ---------------------------------------------------------------- traffic (STREAM, MLC, rate, bench)

// kNtPosted, kWbPosted: a non-temporal store, a write-back, its home agent has taken (its buffer is free again).
enum Tag : uint8_t { kLoad = 0, kRfo = 1, kWb = 2, kNtStore = 3, kProbe = 4, kNtPosted = 5, kWbPosted = 6 };

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

    // A non-temporal store fills a write-combining buffer (one of the core's
    // fill buffers, the MSHRs here) and is handed to the uncore whole; a
    // write-back leaves from the write-back buffer. Either buffer is free
    // again when the home agent's global observation comes back, not when
    // the memory completes the write: the home agent tracks it from then on
    // (a CXL host bridge's tracker, a memory controller's write queue), and
    // those bound it. A line homed on another socket stays the core's until
    // it completes (no posted()).
    void posted(Txn* x, Tick go) override {
        Core& k = cores_[x->src];
        if (x->tag == kNtStore) {
            x->tag = kNtPosted;
            k.freeing.push(go, 0);
        } else if (x->tag == kWb) {
            x->tag = kWbPosted;
            k.wbFreeing.push(go, 0);
        } else {
            return;
        }
        requestWake(go);
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
            case kWbPosted:  // its buffer was freed at its global observation
                break;
            case kNtPosted:
                countOp(true, t);
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
        TimedQueue<char> freeing;  // MSHRs whose response (or a store's global observation) lands later than now
        TimedQueue<char> wbFreeing;  // write-back buffers whose global observation lands later than now
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
        while (k.wbFreeing.headReady() <= t) {
            k.wbFreeing.pop();
            --k.wb;
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
inline void requireWindow(const char* workload, const TrafficDriver& d) {
    if (!d.windowDone() || d.windowEnd_ < d.windowStart_)
        throw StallError(std::string(workload) +
                         ": the run ended before 90 % of its requests completed; no measurement window");
}

}  // namespace memload
}  // namespace cxlcore
