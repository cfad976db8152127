#include "cxlcore/workloads/rao.hpp"

#include <algorithm>
#include <memory>

#include "cxlcore/devices/cxl_nic.hpp"
#include "cxlcore/kernel/stats.hpp"

namespace cxlcore {

namespace {

constexpr uint64_t kArrayBase = 1ull << 32, kIndexBase = 1ull << 36, kRingBase = 1ull << 38;
// A PCIe NIC operation's phases: driver and doorbell; descriptor fetch; the
// operand's DMA read (after waiting for its line and inputs); compute, DMA
// write, completion record and the driver noticing it.
const char* const kPhases[] = {"doorbell", "descriptor", "data", "completion"};

void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

}  // namespace

namespace {

enum AlarmKind : uint8_t { HostStep, HostDone, PcieRelease, PcieFinish };
struct Alarm {
    AlarmKind kind;
    uint32_t who;
    void* p;
};

// The host threads' and the PCIe NIC driver's timed steps.
template <typename Run>
class AlarmClock : public Component {
  public:
    AlarmClock(Host& h, Run& run) : Component(h), run_(run) {}
    void at(Tick t, Alarm a) {
        q_.push(t, a);
        requestWake(t);
    }

  protected:
    void process() override {
        while (q_.headReady() <= now()) run_.fire(q_.pop());
        if (q_.headReady() != kNever) requestWake(q_.headReady());
    }

  private:
    Run& run_;
    TimedQueue<Alarm> q_;
};

}  // namespace

// One RAO run on a coherent system: the host threads and the mechanism, on
// accelerator `dev` (the NIC). `endless`: the threads run until someone else
// stops the system (a mixed run's pacer), counted over the window it opens.
class RaoRun : public Client, public DmaClient {
  public:
    RaoRun(System& sys, const NicParams& n, const RaoConfig& c, const Progress& progress, uint32_t dev = 0,
           bool endless = false)
        : p_(sys.params()), n_(n), c_(c), progress_(progress), sys_(sys), kernel_(c, p_.seed),
          mem_(kArrayBase, c.elements, kIndexBase, kernel_.index(), c.record), per_(kernel_.opsPerThread()),
          clock_(sys_.loop, *this), dev_(dev), nicEntry_(sys.accelEntry.at(dev)) {
        if (endless) per_ = ~0ull / c.threads;
        mech_ = c.mechanism == "cxl-nic" ? 0 : c.mechanism == "pcie-nic" ? 1 : 2;
        threads_.resize(c.threads);
        for (auto& t : threads_) {
            t.results = ThreadResults(resultsRing(n.ring_entries));
            t.postedAt.assign(n.ring_entries, 0);
            t.storedAt.assign(n.ring_entries, 0);
        }
        total_ = per_ * c.threads;
        guard_ = 4 * sys_.stallWindow() + nsToTicks(n.host_poll_ns + n.poll_ns + 4 * n.wire_latency_ns);
    }
    Report run();
    // Starts the threads (and the NIC); the system's owner runs it.
    void start();
    // Counts completions from `t` on / stops counting.
    void open(Tick t);
    void close(Tick t);
    // Over the window, under `k`: operations, their rate and latency, its stages.
    void report(Report& r, const std::string& k) const;
    void fire(const Alarm& a);
    // A host core's access is done (its tag says which step; ctx its thread or core).
    void done(Txn* x) override;
    // The PCIe NIC's DMA transfers (ctx: the PJob).
    bool holdData(DmaJob* x) override;
    void dataIn(DmaJob* x) override;
    void dmaDone(DmaJob* x) override;
    RaoResult result;

  private:
    struct Thread {
        uint64_t posted = 0, rung = 0, consumed = 0, issued = 0;
        bool pollNext = false;
        Tick busyUntil = 0;
        ThreadResults results;
        std::vector<Tick> postedAt, storedAt;  // a ring slot's post began / its descriptor was stored
    };
    struct PJob {
        DmaJob job;
        AtomicSlot slot;
        bool inHold = false, readyNow = false;
    };
    struct LineOwner {
        Tick free = 0;
        uint32_t last = ~0u;
    };
    Tick now() const { return sys_.loop.now(); }
    void at(Tick t, AlarmKind k, uint32_t who, void* p = nullptr) { clock_.at(t, Alarm{k, who, p}); }
    // What a host core's access is for (its tag).
    enum Step : uint8_t { PostDescriptor, RingDoorbell, PollCompletion, HostAtomic };
    Txn* access(Txn::Kind k, uint64_t line, uint64_t value, Step step, uint32_t who) {
        Txn* a = newAccess(sys_.pool, k, line, value, now());
        a->client = this;
        a->tag = step;
        a->ctx = reinterpret_cast<void*>(uintptr_t(who));
        return a;
    }
    // An operation seen complete, `latency` after it was posted; s0-s3: its stages.
    void completed(Tick latency, Tick s0 = 0, Tick s1 = 0, Tick s2 = 0, Tick s3 = 0);
    // CXL-NIC: the host thread's side of the rings.
    void nicStep(uint32_t t);
    // PCIe NIC
    void pciePost(uint32_t t);
    void pcieReady(PJob* j);
    // A host core's locked read-modify-write (or atomic load) of a line:
    // host threads run their next operation, noise cores their pick.
    void hostAtomic(uint32_t who, uint64_t line, bool write);
    void hostAtomicDone(uint32_t who, Txn* y);
    void hostStep(uint32_t t);
    void noiseStep(uint32_t h);
    bool allDone() const { return done_ == total_; }

  public:
    bool finished() const { return allDone(); }
    Tick lastCompletion() const { return last_; }

  private:

    SystemParams p_;
    NicParams n_;
    RaoConfig c_;
    Progress progress_;
    System& sys_;
    RaoKernel kernel_;
    AtomicMemory mem_;
    uint64_t per_, total_ = 0, done_ = 0, storeSeq_ = 0, noiseOps_ = 0;
    int mech_ = 0;
    AlarmClock<RaoRun> clock_;
    Tick guard_ = 0;
    std::vector<Thread> threads_;
    std::vector<NicRing> rings_;
    std::unique_ptr<CxlNic> nic_;
    std::unique_ptr<AtomicOrdering> order_;
    std::unique_ptr<NetWire> out_, back_;
    ObjectPool<PJob> jobs_;
    std::unordered_map<uint64_t, LineOwner> owners_;
    std::vector<Rng> noise_;
    std::vector<uint64_t> noiseIndex_;
    LogHistogram lat_;
    Tick last_ = 0;
    size_t pcieInFlight_ = 0, maxPcieInFlight_ = 0;
    Tick phase_[4] = {0, 0, 0, 0};  // PCIe NIC: summed doorbell, descriptor, data, completion phases
    uint32_t dev_;       // the NIC's accelerator
    uint32_t nicEntry_;  // its description
    // The window: operations completed in it, their latency and stages
    // (cxl-nic: the descriptor's store, the NIC's execution, the poll that
    // saw the completion; pcie-nic: its four phases).
    bool counting_ = false;
    Tick from_ = 0, to_ = 0;
    uint64_t wOps_ = 0;
    LogHistogram wLat_;
    Tick wStage_[4] = {0, 0, 0, 0};
    NicStats nicAtOpen_, nicAtClose_;
    void count(Tick latency, Tick s0, Tick s1, Tick s2, Tick s3) {
        if (!counting_) return;
        ++wOps_;
        wLat_.add(latency);
        wStage_[0] += s0;
        wStage_[1] += s1;
        wStage_[2] += s2;
        wStage_[3] += s3;
    }
};

void RaoRun::completed(Tick latency, Tick s0, Tick s1, Tick s2, Tick s3) {
    count(latency, s0, s1, s2, s3);
    lat_.add(latency);
    last_ = now();
    ++done_;
    if (done_ % 4096 == 0 && progress_ && !progress_(double(done_) / double(total_))) throw Cancelled();
    if (allDone() && nic_) nic_->stop();
}

void RaoRun::fire(const Alarm& a) {
    switch (a.kind) {
        case HostStep:
            // A host thread still waiting long after the last completion: the run is stuck.
            if (now() - last_ > guard_) {
                const Thread& th = threads_[a.who];
                throw StallError("RAO run stalled at " + fmtNum(ticksToNs(now())) + " ns: " +
                                 std::to_string(total_ - done_) + " operations outstanding, none completed for " +
                                 fmtNum(ticksToNs(now() - last_)) + " ns (the CXL-NIC has " +
                                 std::to_string(nic_ ? nic_->inFlight() : 0) + " in flight); host thread " +
                                 std::to_string(a.who) + " posted " + std::to_string(th.posted) + ", rang " +
                                 std::to_string(th.rung) + ", consumed " + std::to_string(th.consumed) +
                                 (nic_ ? "; " + nic_->describe(a.who) : std::string()) +
                                 (sys_.checker && sys_.checker->violations() ? "; " + sys_.checker->first()
                                                                              : std::string()));
            }
            nicStep(a.who);
            break;
        case HostDone: {
            // A host core's atomic has completed (who: a host thread, or a noise core after them).
            if (a.who >= c_.threads) {
                noiseStep(a.who - c_.threads);
                break;
            }
            Thread& th = threads_[a.who];
            completed(now() - th.postedAt[0]);
            hostStep(a.who);
            break;
        }
        case PcieRelease: {
            PJob* j = static_cast<PJob*>(a.p);
            sys_.accels[dev_]->dmaRelease(&j->job);
            break;
        }
        case PcieFinish: order_->finish(&static_cast<PJob*>(a.p)->slot); break;
    }
}

// ---------------------------------------------------------------- CXL-NIC

void RaoRun::nicStep(uint32_t t) {
    Thread& th = threads_[t];
    NicRing& r = rings_[t];
    const uint64_t R = n_.ring_entries;
    const bool canPost = th.posted < per_ && th.posted - th.consumed < R && th.posted - th.rung < n_.post_batch;
    if (th.pollNext && th.consumed < th.posted) {
        th.pollNext = false;
    } else if (canPost) {
        const uint64_t k = th.posted;
        const Tick start = now();
        Txn* a = access(Txn::Store, r.descLine(k), k + 1, PostDescriptor, t);
        th.postedAt[k % R] = start;
        sys_.home->hostAccess(a);
        return;
    } else if (th.rung < th.posted) {
        sys_.home->hostAccess(access(Txn::Store, r.doorbell, th.posted, RingDoorbell, t));
        return;
    }
    if (th.consumed >= th.posted) return;  // every operation of this thread has completed
    sys_.home->hostAccess(access(Txn::Load, r.cqLine(th.consumed), 0, PollCompletion, t));
}

void RaoRun::done(Txn* x) {
    const uint32_t t = uint32_t(reinterpret_cast<uintptr_t>(x->ctx));
    const Step step = Step(x->tag);
    if (step == HostAtomic) {
        hostAtomicDone(t, x);
        return;
    }
    Thread& h = threads_[t];
    if (step == PostDescriptor) {
        const uint64_t op = x->value - 1;
        rings_[t].desc[op % n_.ring_entries] = kernel_.op(t, op);
        h.storedAt[op % n_.ring_entries] = now();
        ++h.posted;
        sys_.pool.put(x);
        nicStep(t);
        return;
    }
    if (step == RingDoorbell) {
        h.rung = x->value;
        h.pollNext = true;
        sys_.pool.put(x);
        nicStep(t);
        return;
    }
    const NicRing& ring = rings_[t];
    // Every completion of the polled line the data read includes, in order.
    bool seen = false;
    while (h.consumed < h.posted && ring.cqLine(h.consumed) == x->addr && ring.completedIn(h.consumed, x->value)) {
        const size_t slot = h.consumed % n_.ring_entries;
        const Tick post = h.storedAt[slot] - h.postedAt[slot], notice = now() - x->birth;
        const Tick total = now() - h.postedAt[slot];
        completed(total, post, total - post - notice, 0, notice);
        ++h.consumed;
        seen = true;
    }
    sys_.pool.put(x);
    if (seen) {
        nicStep(t);
        return;
    }
    const bool more = (h.posted < per_ && h.posted - h.consumed < n_.ring_entries) || h.rung < h.posted;
    if (more)
        nicStep(t);
    else
        at(now() + nsToTicks(n_.host_poll_ns), HostStep, t);
}

// ---------------------------------------------------------------- PCIe NIC

void RaoRun::pciePost(uint32_t t) {
    Thread& th = threads_[t];
    while (th.posted < per_ && th.posted - th.consumed < n_.ring_entries) {
        const uint64_t k = th.posted++;
        PJob* j = jobs_.get();
        j->job = DmaJob();
        AtomicSlot& s = j->slot;
        s = AtomicSlot();
        s.ring = t;
        s.op = k;
        s.o = kernel_.op(t, k);
        s.user = j;
        order_->admit(&s);
        DmaJob& d = j->job;
        d.descAddr = rings_[t].descLine(k);
        d.addr = d.descAddr;
        d.bytes = 8;
        d.writeBytes = s.o.writes() ? 8 : 0;
        d.client = this;
        d.ctx = j;
        // The driver writes the descriptor and rings the doorbell (dma.setup_ns), one post after another.
        const Tick start = std::max(now(), th.busyUntil);
        th.busyUntil = start + nsToTicks(sys_.params().accelerators.at(nicEntry_).dma.setup_ns);
        ++pcieInFlight_;
        maxPcieInFlight_ = std::max(maxPcieInFlight_, pcieInFlight_);
        sys_.home->doorbell(uint16_t(dev_), &d, start - now());
    }
}

bool RaoRun::holdData(DmaJob* x) {
    PJob* j = static_cast<PJob*>(x->ctx);
    j->inHold = true;
    j->readyNow = false;
    order_->arrive(&j->slot);
    j->inHold = false;
    return !j->readyNow;
}

void RaoRun::dataIn(DmaJob* x) {
    PJob* j = static_cast<PJob*>(x->ctx);
    AtomicSlot& sl = j->slot;
    sl.result = mem_.perform(sl.ring, sl.op, sl.o.code, sl.o.region, sl.index, sl.a, sl.b);
    const Tick alu = nsToTicks(n_.alu_ns);
    x->computeTicks = n_.network ? back_->send(now() + alu, n_.result_bytes) - now() : alu;
    at(now() + alu, PcieFinish, 0, j);
}

void RaoRun::dmaDone(DmaJob* x) {
    PJob* j = static_cast<PJob*>(x->ctx);
    Thread& h = threads_[j->slot.ring];
    ++h.consumed;
    --pcieInFlight_;
    phase_[0] += x->doorbellAt - x->start;
    phase_[1] += x->descriptorAt - x->doorbellAt;
    phase_[2] += x->dataAt - x->descriptorAt;
    phase_[3] += x->noticedAt - x->dataAt;
    completed(x->noticedAt - x->start, x->doorbellAt - x->start, x->descriptorAt - x->doorbellAt,
              x->dataAt - x->descriptorAt, x->noticedAt - x->dataAt);
    const uint32_t who = j->slot.ring;
    jobs_.put(j);
    pciePost(who);
}

void RaoRun::pcieReady(PJob* j) {
    AtomicSlot& s = j->slot;
    j->job.addr = kArrayBase + (s.o.region ? kIndexBase - kArrayBase : 0) + s.index * 8;
    if (n_.network) {
        at(out_->send(now(), n_.op_bytes), PcieRelease, 0, j);
    } else if (j->inHold) {
        j->readyNow = true;
    } else {
        sys_.accels[dev_]->dmaRelease(&j->job);
    }
}

// ---------------------------------------------------------------- host cores

void RaoRun::hostAtomic(uint32_t who, uint64_t line, bool write) {
    sys_.home->hostAccess(access(write ? Txn::Store : Txn::Load, line, write ? ++storeSeq_ : 0, HostAtomic, who));
}

void RaoRun::hostAtomicDone(uint32_t who, Txn* y) {
    // The core holds the line now; a locked operation keeps it for
    // host_atomic_ns, after host_transfer_ns if another core had it last.
    LineOwner& lo = owners_[y->addr];
    const bool wr = isWrite(y->kind);
    const Tick start = std::max(now(), lo.free);
    const Tick moved = wr && lo.last != ~0u && lo.last != who ? nsToTicks(n_.host_transfer_ns) : 0;
    lo.free = start + moved + (wr ? nsToTicks(n_.host_atomic_ns) : 0);
    if (wr) lo.last = who;
    sys_.pool.put(y);
    if (who < c_.threads) {
        Thread& th = threads_[who];
        const uint64_t k = th.issued - 1;
        const AtomicOp o = kernel_.op(who, k);
        uint64_t index = 0, a = 0, b = 0;
        need(th.results.resolve(o, mem_.words(o.region), index, a, b), "internal: a host operation ran before its inputs");
        th.results.set(k, mem_.perform(who, k, o.code, o.region, index, a, b));
    } else {
        mem_.perform(who, noiseOps_++, AtomicCode::FetchAdd, 0, noiseIndex_[who - c_.threads], 1, 0);
    }
    at(lo.free, HostDone, who);
}

void RaoRun::hostStep(uint32_t t) {
    Thread& th = threads_[t];
    if (th.issued >= per_) return;
    const uint64_t k = th.issued++;
    const AtomicOp o = kernel_.op(t, k);
    uint64_t index = 0, a = 0, b = 0;
    // Its thread ran every earlier operation, so every input is in.
    need(th.results.resolve(o, mem_.words(o.region), index, a, b), "internal: a host operation ran before its inputs");
    th.postedAt[0] = now();
    hostAtomic(t, mem_.line(o.region, index), o.writes());
}

void RaoRun::noiseStep(uint32_t h) {
    if (allDone()) return;
    noiseIndex_[h] = noise_[h].next() % mem_.words(0);
    hostAtomic(c_.threads + h, mem_.line(0, noiseIndex_[h]), true);
}

void RaoRun::start() {
    const std::string& m = c_.mechanism;
    if (m == "cxl-nic") {
        rings_ = makeRings(c_.threads, n_, kRingBase);
        nic_.reset(new CxlNic(sys_.loop, n_, *sys_.accels[dev_], rings_, mem_, storeSeq_, sys_.pool));
        nic_->start();
        for (uint32_t t = 0; t < c_.threads; ++t) nicStep(t);
        for (uint32_t h = 0; h < c_.noise_threads; ++h) {
            noise_.emplace_back(p_.seed * 4099 + h);
            noiseIndex_.push_back(0);
            noiseStep(h);
        }
    } else if (m == "pcie-nic") {
        rings_ = makeRings(c_.threads, n_, kRingBase);
        order_.reset(new AtomicOrdering(c_.threads, resultsRing(n_.ring_entries), mem_,
                                        [this](AtomicSlot* s) { pcieReady(static_cast<PJob*>(s->user)); }));
        out_.reset(new NetWire(n_.wire_gbps, n_.wire_latency_ns));
        back_.reset(new NetWire(n_.wire_gbps, n_.wire_latency_ns));
        for (uint32_t t = 0; t < c_.threads; ++t) pciePost(t);
    } else {
        for (uint32_t t = 0; t < c_.threads; ++t) hostStep(t);
    }
    last_ = now();
}

void RaoRun::open(Tick t) {
    counting_ = true;
    from_ = t;
    if (nic_) nicAtOpen_ = nic_->stats();
}

void RaoRun::close(Tick t) {
    counting_ = false;
    to_ = t;
    if (nic_) nicAtClose_ = nic_->stats();
}

void RaoRun::report(Report& r, const std::string& k) const {
    const double ns = ticksToNs(to_ - from_), ops = double(wOps_);
    r.emplace_back(k + "ops", ops);
    r.emplace_back(k + "ops_per_second", ns > 0 ? ops / ns * 1e9 : 0.0);
    r.emplace_back(k + "latency_ns_mean", ops > 0 ? ticksToNs(wLat_.sum()) / ops : 0.0);
    reportTails(r, k, wLat_);
    auto mean = [ops](Tick sum) { return ops > 0 ? ticksToNs(sum) / ops : 0.0; };
    if (mech_ == 0) {
        // The NIC's execution (its operand line's access) is its own count over
        // the operations it executed in the window; the rest of the time between
        // the descriptor's store and the poll that saw the result is waiting:
        // the doorbell, the descriptor's fetch, ordering behind earlier operations.
        const uint64_t nicOps = nicAtClose_.ops - nicAtOpen_.ops;
        const double execute = nicOps ? ticksToNs(nicAtClose_.executing - nicAtOpen_.executing) / double(nicOps) : 0.0;
        r.emplace_back(k + "stage.post_ns", mean(wStage_[0]));
        r.emplace_back(k + "stage.wait_ns", std::max(0.0, mean(wStage_[1]) - execute));
        r.emplace_back(k + "stage.execute_ns", execute);
        r.emplace_back(k + "stage.notice_ns", mean(wStage_[3]));
    } else if (mech_ == 1) {
        for (int i = 0; i < 4; ++i) r.emplace_back(k + "stage." + kPhases[i] + "_ns", mean(wStage_[i]));
    }
}

Report RaoRun::run() {
    start();
    sys_.run();
    need(allDone(), "internal: the RAO run stopped with " + std::to_string(total_ - done_) + " operations outstanding");
    Report r;
    const double ns = ticksToNs(last_);
    const double ops = double(total_);
    r.emplace_back("ops", ops);
    r.emplace_back("elapsed_ns", ns);
    r.emplace_back("ops_per_second", ns > 0 ? ops / ns * 1e9 : 0.0);
    r.emplace_back("latency_ns", ticksToNs(lat_.sum()) / ops);
    reportTails(r, "", lat_);
    r.emplace_back("performed", double(mem_.performed()));
    r.emplace_back("noise_ops", double(noiseOps_));
    // The NIC's engine under its graph component (a PCIe NIC: the workload's model of it).
    const std::string nic = sys_.params().accelerators[sys_.accelEntry[dev_]].node;
    if (nic_) {
        reportNic(r, nic, &nic_->stats(), nic_->ordering(), nic_->wireOut(), nic_->stats().maxInFlight);
    } else if (order_) {
        for (int i = 0; i < 4; ++i) r.emplace_back(std::string("phase_") + kPhases[i] + "_ns", ticksToNs(phase_[i]) / ops);
        reportNic(r, nic, nullptr, *order_, *out_, maxPcieInFlight_);
    }
    r.emplace_back("jobs_allocated", double(jobs_.allocated()));
    sys_.report(r, 0, last_);
    if (c_.record) {
        result.log = mem_.log();
        result.array = mem_.contents(0);
        result.index = mem_.contents(1);
    }
    return r;
}

RaoResult runRao(const SystemParams& p, const NicParams& n, const RaoConfig& c, const Progress& progress) {
    checkRao(p, n, c);
    need(c.mechanism != "pcie-nic" || p.accelerators.at(0).dma.engines >= 1, "dma.engines must be at least 1");
    System sys(p, c.check);
    RaoRun run(sys, n, c, progress);
    RaoResult out;
    out.report = run.run();
    out.log = std::move(run.result.log);
    out.array = std::move(run.result.array);
    out.index = std::move(run.result.index);
    return out;
}

RaoLoad::RaoLoad(System& s, const NicParams& n, const RaoConfig& c, uint32_t device, bool endless,
                 const Progress& progress)
    : run_(new RaoRun(s, n, c, endless ? Progress() : progress, device, endless)) {}
RaoLoad::~RaoLoad() = default;
void RaoLoad::start() { run_->start(); }
void RaoLoad::open(Tick t) { run_->open(t); }
void RaoLoad::close(Tick t) { run_->close(t); }
bool RaoLoad::done() const { return run_->finished(); }
Tick RaoLoad::last() const { return run_->lastCompletion(); }
void RaoLoad::report(Report& r, const std::string& k) const { run_->report(r, k); }

}  // namespace cxlcore
