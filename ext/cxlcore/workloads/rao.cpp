#include "cxlcore/workloads/rao.hpp"

#include <algorithm>
#include <memory>

#include "cxlcore/devices/cxl_nic.hpp"
#include "cxlcore/kernel/stats.hpp"

namespace cxlcore {

namespace {

constexpr uint64_t kArrayBase = 1ull << 32, kIndexBase = 1ull << 36, kRingBase = 1ull << 38;
const char* const kKernels[] = {"rand", "stride1", "striden", "central", "scatter", "gather", "ptrchase"};
enum Kernel { Rand, Stride1, StrideN, Central, Scatter, Gather, PtrChase };
// A PCIe NIC operation's phases: driver and doorbell; descriptor fetch; the
// operand's DMA read (after waiting for its line and inputs); compute, DMA
// write, completion record and the driver noticing it.
const char* const kPhases[] = {"doorbell", "descriptor", "data", "completion"};

void need(bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
}

int kernelOf(const std::string& k) {
    for (int i = 0; i < 7; ++i)
        if (k == kKernels[i]) return i;
    throw ConfigError("rao.kernel = '" + k +
                      "' is not allowed; allowed values: rand, stride1, striden, central, scatter, gather, ptrchase");
}

}  // namespace

void checkRao(const SystemParams& p, const NicParams& n, const RaoConfig& c) {
    p.validate();
    n.validate("nic");
    // The NIC is the system's first device; any others stay idle beside it.
    need(!p.accelerators.empty(), "rao: the system has no device; allowed: a Type-1 device first, the NIC");
    kernelOf(c.kernel);
    need(c.op == "add" || c.op == "cas", "rao.op = '" + c.op + "' is not allowed; allowed values: add, cas");
    need(c.mechanism == "cxl-nic" || c.mechanism == "pcie-nic" || c.mechanism == "host",
         "rao.mechanism = '" + c.mechanism + "' is not allowed; allowed values: cxl-nic, pcie-nic, host");
    need(c.threads >= 1 && c.threads <= 256, "rao.threads = " + fmtNum(c.threads) + " is out of range; allowed: 1 to 256");
    need(c.iters >= 1 && c.iters <= (1ull << 32),
         "rao.iters = " + fmtNum(double(c.iters)) + " is out of range; allowed: 1 to 4294967296");
    need(c.elements >= 8 && c.elements <= (1ull << 30),
         "rao.elements = " + fmtNum(double(c.elements)) + " is out of range; allowed: 8 to 1073741824");
    need(c.stride >= 1 && c.stride <= (1ull << 30),
         "rao.stride = " + fmtNum(double(c.stride)) + " is out of range; allowed: 1 to 1073741824");
    need(c.noise_threads <= 64, "rao.noise_threads = " + fmtNum(c.noise_threads) + " is out of range; allowed: 0 to 64");
    need(c.noise_threads == 0 || c.mechanism == "cxl-nic",
         "rao.noise_threads = " + fmtNum(c.noise_threads) + " is not allowed with mechanism '" + c.mechanism +
             "'; allowed: 0 (host cores touch the NIC's lines only with cxl-nic)");
    const int k = kernelOf(c.kernel);
    if (k == Scatter || k == Gather)
        need(uint64_t(c.threads) * c.iters <= (1ull << 28),
             "rao.iters = " + fmtNum(double(c.iters)) + " is out of range for " + c.kernel + " with " +
                 fmtNum(c.threads) + " threads; allowed: threads x iters up to 268435456 (its index array)");
    need(!c.record || uint64_t(c.threads) * c.iters <= 10000000,
         "rao.record is not allowed with threads x iters = " + fmtNum(double(uint64_t(c.threads) * c.iters)) +
             "; allowed: up to 10000000 when recording");
}

RaoKernel::RaoKernel(const RaoConfig& c, uint64_t seed) : c_(c), seed_(seed), kernel_(kernelOf(c.kernel)) {
    const bool cas = c.op == "cas";
    per_ = kernel_ == Scatter || kernel_ == Gather ? (cas ? 5 : 3) : cas ? 2 : 1;
    Rng rng(seed * 7919 + 17);
    if (kernel_ == Scatter || kernel_ == Gather) {
        idx_.resize(size_t(c.threads) * c.iters + 2);
        for (auto& v : idx_) v = rng.below(c.elements);
    } else if (kernel_ == PtrChase) {
        // One cycle through every element (Sattolo's shuffle), so no chase ends early.
        idx_.resize(c.elements);
        for (uint64_t i = 0; i < c.elements; ++i) idx_[i] = i;
        for (uint64_t i = c.elements - 1; i > 0; --i) std::swap(idx_[i], idx_[rng.below(i)]);
    } else {
        idx_.assign(1, 0);
    }
}

AtomicOp RaoKernel::op(uint32_t t, uint64_t i) const {
    const uint64_t it = i / per_, j = i % per_, base = it * per_;
    const bool cas = c_.op == "cas";
    const uint64_t E = c_.elements, n = c_.iters;
    AtomicOp out[5];
    uint32_t m = 0;
    // "word += v" (v: an immediate plus the result of operation vDep): one
    // FETCH_ADD/ADD, or a FETCH and a CAS of the value fetched to the sum.
    // Returns the operation whose result is the word's previous value.
    auto modify = [&](uint8_t region, uint64_t index, int64_t addrDep, AtomicCode code, uint64_t imm, int64_t vDep) {
        AtomicOp o;
        o.region = region;
        o.index = index;
        o.addrDep = addrDep;
        if (!cas) {
            o.code = code;
            o.aImm = imm;
            o.aDep[0] = vDep;
            out[m++] = o;
            return int64_t(base + m - 1);
        }
        o.code = AtomicCode::Fetch;
        out[m++] = o;
        const int64_t f = int64_t(base + m - 1);
        o.code = AtomicCode::Cas;
        o.aDep[0] = f;
        o.bDep[0] = f;
        o.bDep[1] = vDep;
        o.bImm = imm;
        out[m++] = o;
        return f;
    };
    auto fetch = [&](uint8_t region, uint64_t index, int64_t addrDep) {
        AtomicOp o;
        o.region = region;
        o.index = index;
        o.addrDep = addrDep;
        out[m++] = o;
        return int64_t(base + m - 1);
    };
    const uint64_t g = uint64_t(t) * n + it;  // the thread's share of the arrays, as CircusTent splits them
    switch (kernel_) {
        case Rand: modify(0, Rng(seed_ * 1000003 + (uint64_t(t) << 40) + it).next() % E, -1, AtomicCode::FetchAdd, 1, -1); break;
        case Stride1: modify(0, g % E, -1, AtomicCode::FetchAdd, 1, -1); break;
        case StrideN: modify(0, (uint64_t(t) * n * c_.stride + it * c_.stride) % E, -1, AtomicCode::FetchAdd, 1, -1); break;
        case Central: modify(0, 0, -1, AtomicCode::FetchAdd, 1, -1); break;
        case Scatter: {
            const int64_t d = fetch(1, g + 1, -1);
            const int64_t v = modify(0, g % E, -1, AtomicCode::FetchAdd, 1, -1);
            modify(0, 0, d, AtomicCode::Add, 0, v);
            break;
        }
        case Gather: {
            const int64_t d = fetch(1, g + 1, -1);
            const int64_t v = modify(0, 0, d, AtomicCode::FetchAdd, 1, -1);
            modify(0, g % E, -1, AtomicCode::Add, 0, v);
            break;
        }
        case PtrChase: {
            // Each step reads the next element's index from the one before.
            const uint64_t start = uint64_t(t) * E / c_.threads;
            const int64_t prev = it ? int64_t((it - 1) * per_) : -1;
            const int64_t x = fetch(1, start, prev);
            if (cas) {
                AtomicOp o = out[0];
                o.code = AtomicCode::Cas;
                o.aDep[0] = x;
                o.bDep[0] = x;
                out[m++] = o;
            }
            break;
        }
    }
    return out[j];
}

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

// One RAO run: the coherent system, the host threads and the mechanism.
class RaoRun : public Client, public DmaClient {
  public:
    RaoRun(const SystemParams& p, const NicParams& n, const RaoConfig& c, const Progress& progress)
        : p_(p), n_(n), c_(c), progress_(progress), sys_(p, c.check), kernel_(c, p.seed),
          mem_(kArrayBase, c.elements, kIndexBase, kernel_.index(), c.record), per_(kernel_.opsPerThread()),
          clock_(sys_.loop, *this) {
        mech_ = c.mechanism == "cxl-nic" ? 0 : c.mechanism == "pcie-nic" ? 1 : 2;
        threads_.resize(c.threads);
        for (auto& t : threads_) {
            t.results = ThreadResults(resultsRing(n.ring_entries));
            t.postedAt.assign(n.ring_entries, 0);
        }
        total_ = per_ * c.threads;
        guard_ = 4 * sys_.stallWindow() + nsToTicks(n.host_poll_ns + n.poll_ns + 4 * n.wire_latency_ns);
    }
    Report run();
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
        std::vector<Tick> postedAt;
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
    void completed(Tick latency);
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

    SystemParams p_;
    NicParams n_;
    RaoConfig c_;
    Progress progress_;
    System sys_;
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
};

void RaoRun::completed(Tick latency) {
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
            sys_.accels[0]->dmaRelease(&j->job);
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
        completed(now() - h.postedAt[h.consumed % n_.ring_entries]);
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
        th.busyUntil = start + nsToTicks(sys_.params().accelerators.at(0).dma.setup_ns);
        ++pcieInFlight_;
        maxPcieInFlight_ = std::max(maxPcieInFlight_, pcieInFlight_);
        sys_.home->doorbell(0, &d, start - now());
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
    completed(x->noticedAt - x->start);
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
        sys_.accels[0]->dmaRelease(&j->job);
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

Report RaoRun::run() {
    const std::string& m = c_.mechanism;
    if (m == "cxl-nic") {
        rings_ = makeRings(c_.threads, n_, kRingBase);
        nic_.reset(new CxlNic(sys_.loop, n_, *sys_.accels[0], rings_, mem_, storeSeq_, sys_.pool));
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
    if (nic_) {
        const NicStats& s = nic_->stats();
        r.emplace_back("nic_ops", double(s.ops));
        r.emplace_back("nic_polls", double(s.polls));
        r.emplace_back("nic_doorbell_changes", double(s.doorbellChanges));
        r.emplace_back("nic_descriptors", double(s.descriptors));
        r.emplace_back("nic_execute_ns_mean", ticksToNs(s.executing) / ops);
        r.emplace_back("nic_operand_hits", double(s.hits));
        r.emplace_back("ring_errors", double(s.ringErrors));
        r.emplace_back("max_ops_in_flight", double(s.maxInFlight));
        r.emplace_back("nic_max_line_queue", double(nic_->ordering().maxLineQueue()));
        r.emplace_back("max_pending_addresses", double(nic_->ordering().maxPending()));
        r.emplace_back("ordering_idle_at_end", nic_->ordering().idle() ? 1.0 : 0.0);
        r.emplace_back("wire_frames", double(nic_->wireOut().frames()));
    } else if (order_) {
        r.emplace_back("max_ops_in_flight", double(maxPcieInFlight_));
        for (int i = 0; i < 4; ++i) r.emplace_back(std::string("phase_") + kPhases[i] + "_ns", ticksToNs(phase_[i]) / ops);
        r.emplace_back("nic_max_line_queue", double(order_->maxLineQueue()));
        r.emplace_back("max_pending_addresses", double(order_->maxPending()));
        r.emplace_back("ordering_idle_at_end", order_->idle() ? 1.0 : 0.0);
        r.emplace_back("wire_frames", double(out_->frames()));
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

}  // namespace

RaoResult runRao(const SystemParams& p, const NicParams& n, const RaoConfig& c, const Progress& progress) {
    checkRao(p, n, c);
    need(c.mechanism != "pcie-nic" || p.accelerators.at(0).dma.engines >= 1, "dma.engines must be at least 1");
    RaoRun run(p, n, c, progress);
    RaoResult out;
    out.report = run.run();
    out.log = std::move(run.result.log);
    out.array = std::move(run.result.array);
    out.index = std::move(run.result.index);
    return out;
}

}  // namespace cxlcore
