#include "cxlcore/coherence/coherence.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#ifdef CXL_TRACE
#include <cstdio>
#include <cstdlib>
#endif

namespace cxlcore {

const char* stateName(MState s) {
    static const char* n[] = {"I", "S", "E", "M"};
    return n[int(s)];
}

const char* opName(Opc o) {
    static const char* n[] = {"RdCurr", "RdOwn", "RdShared", "RdAny", "ItoMWr", "WrInv", "CleanEvict", "DirtyEvict",
                              "BiasFlipReq", "RspIHitI", "RspVHitV", "RspIHitSE", "RspSHitSE", "RspSFwdM",
                              "RspIFwdM", "RspVFwdV", "SnpData", "SnpInv", "SnpCur", "GO", "GO_WritePull",
                              "BiasFlipDone", "SFEvict", "Data", "MemRd", "MemRdFwd", "MemWr", "MemData", "Cmp", "BISnpData",
                              "BISnpInv", "BIRspI", "BIRspS", "IoMemRd", "IoMemWr", "IoCplD"};
    static_assert(sizeof(n) / sizeof(n[0]) == size_t(Opc::kCount), "opcode names");
    return n[int(o)];
}

const char* className(CClass c) {
    static const char* n[] = {"d2h_req", "d2h_rsp", "d2h_data", "h2d_req", "h2d_rsp", "h2d_data",
                              "m2s_req", "m2s_rwd", "m2s_birsp", "s2m", "s2m_bisnp", "io_up", "io_down"};
    return n[c];
}

const char* stageName(AStage s) {
    static const char* n[] = {"queue", "cache", "link_up", "home", "snoop", "memory",
                              "link_down", "bias_flip", "back_invalidate"};
    return n[s];
}

namespace {
// A broken protocol invariant: reported as an error, never undefined behaviour.
[[noreturn]] void protocolError(const std::string& what) { throw std::logic_error("CXL.cache protocol error: " + what); }
// The callback may recycle the access (and with it the callback itself).
void finishAccess(Access* a) {
    if (!a->onDone) return;
    auto f = std::move(a->onDone);
    a->onDone = nullptr;
    f(a);
}
// Reads do not grow the functional store: unwritten lines read as 0.
uint64_t valueOf(const Values& v, uint64_t line) {
    auto it = v.find(line);
    return it == v.end() ? 0 : it->second;
}
constexpr uint64_t lineOf(uint64_t a) { return a & ~uint64_t(kLineBytes - 1); }
bool isWrite(Access::Kind k) {
    return k == Access::Store || k == Access::StoreNoAlloc || k == Access::StoreWrInv;
}
// Credits of each class on one device's link, the same both ways.
void channelCredits(const DCacheParams& cp, const LinkParams& lp, const DmaParams& dp, uint32_t* cr) {
    const uint32_t c[kNumCClasses] = {cp.credits_d2h_req, cp.credits_d2h_rsp, cp.credits_d2h_data,
                                      cp.credits_h2d_req, cp.credits_h2d_rsp, cp.credits_h2d_data,
                                      lp.credits_req,     lp.credits_rwd,     cp.credits_birsp,
                                      lp.credits_drs,     cp.credits_bisnp,   dp.read_tags + 2,
                                      dp.read_tags + 2};
    std::copy(c, c + kNumCClasses, cr);
}
}  // namespace

// ---------------------------------------------------------------- checker

CoherenceChecker::L& CoherenceChecker::get(uint64_t line) {
    L& l = lines_[line];
    if (l.st.empty()) l.st.assign(agents_, MState::I);
    return l;
}

void CoherenceChecker::fail(const std::string& what, Tick now) {
    if (!violations_++) first_ = "at " + fmtNum(ticksToNs(now)) + " ns: " + what;
}

namespace {
std::string who(uint32_t agent, uint32_t agents) {
    return agent + 1 == agents ? std::string("host") : "device " + std::to_string(agent);
}
std::string hex(uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}
}  // namespace

void CoherenceChecker::state(uint64_t line, uint32_t agent, MState s, Tick now) {
#ifdef CXL_TRACE
    if (getenv("TRACE_LINE") && line == strtoull(getenv("TRACE_LINE"), nullptr, 16))
        fprintf(stderr, "%10.3f   state %s -> %s\n", ticksToNs(now), who(agent, agents_).c_str(), stateName(s));
#endif
    L& l = get(line);
    l.st[agent] = s;
    ++checks_;
    uint32_t writers = 0, readers = 0;
    for (MState x : l.st) {
        writers += x == MState::E || x == MState::M;
        readers += x == MState::S;
    }
    if (writers > 1 || (writers == 1 && readers > 0)) {
        std::string states;
        for (uint32_t i = 0; i < agents_; ++i)
            states += (i ? ", " : "") + who(i, agents_) + " " + stateName(l.st[i]);
        fail("single-writer/multiple-reader violated on line " + hex(line) + " (" + states + ")", now);
    }
}

void CoherenceChecker::read(uint64_t line, uint32_t agent, uint64_t value, Tick now) {
    L& l = get(line);
    ++checks_;
    if (l.st[agent] == MState::I)
        fail(who(agent, agents_) + " read line " + hex(line) + " without holding it", now);
    if (value != l.value)
        fail(who(agent, agents_) + " read stale data on line " + hex(line) + ": got version " + std::to_string(value) +
                 ", latest is " + std::to_string(l.value),
             now);
}

void CoherenceChecker::write(uint64_t line, uint32_t agent, uint64_t value, Tick now) {
#ifdef CXL_TRACE
    if (getenv("TRACE_LINE") && line == strtoull(getenv("TRACE_LINE"), nullptr, 16))
        fprintf(stderr, "%10.3f   write %s v=%llu\n", ticksToNs(now), who(agent, agents_).c_str(), (unsigned long long)value);
#endif
    L& l = get(line);
    ++checks_;
    if (agent < agents_ && l.st[agent] != MState::M && l.st[agent] != MState::E)
        fail(who(agent, agents_) + " wrote line " + hex(line) + " in state " + stateName(l.st[agent]), now);
    l.value = value;
}

void CoherenceChecker::memory(uint64_t line, uint64_t value, Tick now) {
    L& l = get(line);
    ++checks_;
    if (value != l.value)
        fail("memory supplied stale data on line " + hex(line) + ": version " + std::to_string(value) + ", latest is " +
                 std::to_string(l.value),
             now);
}

// ---------------------------------------------------------------- memory port

MemPort::MemPort(Host& host, const DramParams& p, const std::string& where) : host_(host), dram_(host, p, where) {
    dram_.setRequester(this);
}

void MemPort::read(uint64_t addr, std::function<void()> done) {
    Txn* t = pool_.get();
    t->addr = t->hostAddr = addr;
    t->op = Op::Read;
    t->birth = t->mark = host_.now();
    waiting_.emplace(t->id, std::move(done));
    if (!refused_.empty() || !dram_.tryReq(t)) refused_.push_back(t);
}

void MemPort::write(uint64_t addr) {
    Txn* t = pool_.get();
    t->addr = t->hostAddr = addr;
    t->op = Op::Write;
    t->birth = t->mark = host_.now();
    if (!refused_.empty() || !dram_.tryReq(t)) refused_.push_back(t);
}

bool MemPort::tryResp(Txn* t) {
    auto it = waiting_.find(t->id);
    if (it != waiting_.end()) {
        auto f = std::move(it->second);
        waiting_.erase(it);
        pool_.put(t);
        f();
    } else {
        pool_.put(t);
    }
    return true;
}

void MemPort::retryReq() { pump(); }

void MemPort::pump() {
    while (!refused_.empty() && dram_.tryReq(refused_.front())) refused_.pop_front();
}

// ---------------------------------------------------------------- wire

void Wire::init(FlitChannel* ch, Component* sender, Endpoint* receiver, bool ordered, const uint32_t* credits,
                Tick creditReturn, uint32_t tlpOverhead) {
    ch_ = ch;
    sender_ = sender;
    rx_ = receiver;
    ordered_ = ordered;
    tlpOverhead_ = tlpOverhead;
    for (int c = 0; c < kNumCClasses; ++c) credits_[c].init(credits[c], creditReturn);
}

uint32_t Wire::units(const Msg* m) const {
    switch (m->cls) {
        case kCD2HReq: return 2;    // 79-bit header
        case kCD2HRsp: return 1;    // 20-bit header
        case kCH2DReq: return 1;    // 64-bit snoop
        case kCH2DRsp: return 1;    // 32-bit header
        case kCD2HData:
        case kCH2DData: return 9;   // header plus 64 B
        case kCM2SReq: return 2;
        case kCM2SRwD: return 10;
        case kCM2SBIRsp: return 1;
        case kCS2M: return m->op == Opc::MemData ? 9 : 1;  // DRS with data, NDR
        case kCS2MBISnp: return 2;
        case kCIoD2H:
        case kCIoH2D: {
            const uint32_t payload = (m->op == Opc::IoMemRd) ? 0 : m->bytes;
            return (tlpOverhead_ + payload + 7) / 8;
        }
        default: return 1;
    }
}

void Wire::send(Msg* m) {
    const int qi = ordered_ ? 0 : m->cls;
    q_[qi].push_back(m);
    busy_ |= 1u << qi;
    pump();
}

void Wire::pump() {
    const Tick now = sender_->now();
    size_t total = 0;
    for (uint32_t mask = busy_; mask; mask &= mask - 1) {
        const int qi = __builtin_ctz(mask);
        auto& q = q_[qi];
        while (!q.empty()) {
            Msg* m = q.front();
            if (!credits_[m->cls].take(now)) {
                credits_[m->cls].wait(sender_);
                break;
            }
            q.pop_front();
            const uint32_t u = units(m);
            const uint32_t data = u >= 9 ? kLineBytes : (m->cls == kCIoD2H || m->cls == kCIoH2D) ? m->bytes : 0;
            const Tick arr = ch_->send(now, u, data);
#ifdef CXL_TRACE
            if (getenv("TRACE_LINE") && m->line == strtoull(getenv("TRACE_LINE"), nullptr, 16))
                fprintf(stderr, "%10.3f %s dev%u %s %s v=%llu bogus=%d -> %10.3f\n", ticksToNs(now),
                        ordered_ ? "DOWN" : "UP  ", m->dev, opName(m->op), stateName(m->state),
                        (unsigned long long)m->value, m->bogus, ticksToNs(arr));
#endif
            ++sent_[m->cls];
            rx_->receive(m, arr);
        }
        if (q.empty()) busy_ &= ~(1u << qi);
        total += q.size();
    }
    maxQueued_ = std::max(maxQueued_, total);
}

size_t Wire::queued() const {
    size_t n = 0;
    for (auto& q : q_) n += q.size();
    return n;
}

// ---------------------------------------------------------------- accelerator

Accelerator::Accelerator(Host& host, uint16_t index, const DCacheParams& cp, const AccelParams& ap,
                         const DmaParams& dp, const DramParams& media, CxlLink& link, HomeAgent& home, MsgPool& pool,
                         CoherenceChecker* checker, const std::string& where)
    : Endpoint(host), index_(index), name_(where), cp_(cp), ap_(ap), dp_(dp), link_(link), home_(home), pool_(pool),
      checker_(checker) {
    sets_ = uint32_t(cp_.bytes / kLineBytes / cp_.assoc);
    ways_.resize(size_t(sets_) * cp_.assoc);
    lat_ = nsToTicks(cp_.latency_ns);
    snoopLat_ = nsToTicks(cp_.snoop_latency_ns);
    memLat_ = nsToTicks(ap_.memory_latency_ns);
    flipLat_ = nsToTicks(ap_.bias_flip_ns);
    if (ap_.type == 2) {
        memBase_ = kDevMemBase + uint64_t(index) * ap_.memory_bytes;
        memBytes_ = ap_.memory_bytes;
        mem_.reset(new MemPort(host, media, where + ".media"));
    }
    uint32_t cr[kNumCClasses];
    channelCredits(cp_, link.params(), dp_, cr);
    up_.init(&link.s2m_, this, &home, false, cr, link.s2m_.flitTime() + link.s2m_.latency(), dp_.tlp_overhead_bytes);
}

Msg* Accelerator::msg(Opc op, CClass c, uint64_t line) {
    Msg* m = pool_.get();
    m->op = op;
    m->cls = c;
    m->line = line;
    m->dev = index_;
    return m;
}

void Accelerator::sendUp(Msg* m, Access* a) {
    if (a) {
        a->leave(kAQueue, now());
        m->acc = a;
    }
    up_.send(m);
}

Accelerator::CLine* Accelerator::find(uint64_t line) {
    const uint32_t set = uint32_t((line / kLineBytes) % sets_);
    for (uint32_t w = 0; w < cp_.assoc; ++w) {
        CLine& c = ways_[size_t(set) * cp_.assoc + w];
        if (c.line == line && (c.st != MState::I || c.reserved)) return &c;
    }
    return nullptr;
}

Accelerator::CLine* Accelerator::victim(uint64_t line) {
    const uint32_t set = uint32_t((line / kLineBytes) % sets_);
    CLine* best = nullptr;
    for (uint32_t w = 0; w < cp_.assoc; ++w) {
        CLine& c = ways_[size_t(set) * cp_.assoc + w];
        if (c.reserved) continue;
        if (c.st == MState::I) return &c;
        if (!best || c.lru < best->lru) best = &c;
    }
    return best;  // null: every way waits for a fill
}

void Accelerator::setState(CLine& l, MState s) {
    l.st = s;
    if (checker_) checker_->state(l.line, index_, s, now());
}

void Accelerator::access(Access* a) {
    a->mark = now();
    a->agent = index_;
    if (watch_) ++watch_->outstanding;
    (isWrite(a->kind) ? stats_.stores : stats_.loads)++;
    pipe_.push(now() + lat_, a);
    requestWake(now() + lat_);
}

void Accelerator::complete(Access* a) {
    a->done = now();
    a->leave(kAQueue, now());
    if (watch_) {
        --watch_->outstanding;
        watch_->progress(now());
    }
    finishAccess(a);
}

void Accelerator::lookup(Access* a) {
    a->leave(kACache, now());
    const uint64_t L = a->line;
    auto mi = mshrs_.find(L);
    if (mi != mshrs_.end()) {
        a->missed = true;
        mi->second.waiting.push_back(a);
        return;
    }
    CLine* c = find(L);
    const bool valid = c && c->st != MState::I;
    if (valid && !isWrite(a->kind)) {
        a->value = c->value;
        a->hit = !a->missed;
        c->lru = ++lruClock_;
        if (checker_) checker_->read(L, index_, a->value, now());
        stats_.hits += !a->missed;
        complete(a);
        return;
    }
    if (valid && (c->st == MState::M || c->st == MState::E)) {
        if (c->st == MState::E) setState(*c, MState::M);
        c->value = a->value;
        c->lru = ++lruClock_;
        a->hit = !a->missed;
        if (checker_) checker_->write(L, index_, a->value, now());
        stats_.hits += !a->missed;
        complete(a);
        return;
    }
    startMiss(a, valid ? c : nullptr);
}

bool Accelerator::deviceBias(uint64_t line) const {
    auto it = bias_.find(line / ap_.bias_page_bytes);
    return it == bias_.end() ? ap_.device_bias != 0 : it->second;
}

bool Accelerator::startMiss(Access* a, CLine* present) {
    const uint64_t L = a->line;
    const bool write = isWrite(a->kind);
    Opc op = a->kind == Access::LoadCurrent    ? Opc::RdCurr
             : a->kind == Access::LoadAny      ? Opc::RdAny
             : a->kind == Access::StoreNoAlloc ? Opc::ItoMWr
             : a->kind == Access::StoreWrInv   ? Opc::WrInv
             : write                           ? Opc::RdOwn
                                               : Opc::RdShared;
    if (present && (op == Opc::ItoMWr || op == Opc::WrInv)) op = Opc::RdOwn;  // upgrade the cached copy instead
    const bool own = ownsMemory(L);
    const bool local = own && (ap_.hdm_db || deviceBias(L) || ap_.auto_bias_flip);
    const bool uncached = !local && (op == Opc::RdCurr || op == Opc::ItoMWr || op == Opc::WrInv);
    CLine* way = present;
    CLine* evict = nullptr;
    if (!uncached && !way) {
        way = victim(L);
        if (!way) {
            stalled_.push_back(a);
            ++stats_.mshrFull;
            return false;
        }
        if (way->st != MState::I) evict = way;
    }
    // A miss that must evict needs two MSHRs; with fewer, an idle cache still
    // lets it go, or it would wait forever.
    if (!mshrs_.empty() && mshrs_.size() + (evict ? 2 : 1) > cp_.mshrs) {
        stalled_.push_back(a);
        ++stats_.mshrFull;
        return false;
    }
    ++stats_.misses;
    a->missed = true;
    if (evict) {
        Mshr& e = mshrs_[evict->line];
        e.kind = Mshr::Evict;
        e.evictState = evict->st;
        e.value = evict->value;
        e.op = evict->st == MState::M ? Opc::DirtyEvict : Opc::CleanEvict;
        (evict->st == MState::M ? stats_.dirtyEvicts : stats_.cleanEvicts)++;
        // A clean victim is gone from the cache now: the home may hand the line
        // to another agent before its GO comes back (the copy kept for snoops
        // is never read). A dirty one is held until its data is pulled.
        if (evict->st != MState::M && checker_) checker_->state(evict->line, index_, MState::I, now());
        const bool ownLine = ownsMemory(evict->line);
        if (ownLine && (ap_.hdm_db || deviceBias(evict->line))) {
            // Device memory the host does not track: write back locally.
            if (evict->st == MState::M) {
                memVals_[evict->line] = evict->value;
                mem_->write(evict->line - memBase_);
            }
            if (checker_) checker_->state(evict->line, index_, MState::I, now());
            mshrs_.erase(evict->line);
        } else {
            Msg* m = msg(e.op, kCD2HReq, evict->line);
            sendUp(m);
        }
        evict->st = MState::I;
    }
    Mshr& ms = mshrs_[L];
    maxMshrs_ = std::max(maxMshrs_, mshrs_.size());
    ms.op = op;
    ms.kind = uncached ? Mshr::Uncached : local ? Mshr::Local : Mshr::Fill;
    ms.way = way;
    ms.waiting.push_back(a);
    if (way) {
        if (!present) {
            way->line = L;
            way->st = MState::I;
        }
        way->reserved = true;
    }
    if (!local) {
        if (own) ++stats_.fwdReads;
        Msg* m = msg(op, kCD2HReq, L);
        if (op == Opc::ItoMWr || op == Opc::WrInv) m->value = a->value;
        sendUp(m, a);
        return true;
    }
    a->leave(kAQueue, now());
    if (ap_.hdm_db) {
        auto hc = hostCopy_.find(L);
        if (hc != hostCopy_.end()) {
            ms.biPending = true;
            ms.biInv = write || hc->second != MState::S;
            ++stats_.biSnps;
            sendUp(msg(ms.biInv ? Opc::BISnpInv : Opc::BISnpData, kCS2MBISnp, L));
            return true;
        }
    } else if (!deviceBias(L)) {
        // Host bias: ask the host to give up its copies of the page first
        // (one request per page; later misses in the page wait for it).
        ms.biPending = true;
        const uint64_t page = L / ap_.bias_page_bytes;
        if (!flipping_[page]) {
            flipping_[page] = true;
            ++stats_.deviceBiasFlips;
            sendUp(msg(Opc::BiasFlipReq, kCD2HReq, page * ap_.bias_page_bytes));
        }
        return true;
    }
    localFill(L, a, ms);
    return true;
}

void Accelerator::localFill(uint64_t line, Access* a, Mshr& ms) {
    ++stats_.localMemReads;
    ms.biPending = false;
    const Tick start = now();
    later_.push(start + memLat_, [this, line, a] {
        mem_->read(line - memBase_, [this, line, a] {
            auto it = mshrs_.find(line);
            if (it == mshrs_.end()) protocolError("device memory fill without an MSHR");
            Mshr& m = it->second;
            a->leave(kAMemory, now());
            m.value = valueOf(memVals_, line);
            m.gotGo = m.gotData = true;
            const bool sharedWithHost = ap_.hdm_db && hostCopy_.count(line);
            m.granted = sharedWithHost ? MState::S : isWrite(a->kind) ? MState::M : MState::E;
            if (checker_ && !sharedWithHost) checker_->memory(line, m.value, now());
            install(line, m);
        });
    });
    requestWake(start + memLat_);
}

void Accelerator::install(uint64_t line, Mshr& ms) {
    if (ms.kind == Mshr::Uncached) {
        if (ms.op == Opc::RdCurr) {
            Access* a = ms.waiting.front();
            a->value = ms.value;
            // RdCurr returns a snapshot without joining the coherence domain.
        }
        finishMshr(line);
        return;
    }
    CLine& w = *ms.way;
    w.line = line;
    w.value = ms.value;
    w.reserved = false;
    w.lru = ++lruClock_;
    MState g = ms.granted == MState::M ? MState::E : ms.granted;
    ++stats_.grants[int(g)];
    setState(w, g);
    finishMshr(line);
}

void Accelerator::finishMshr(uint64_t line) {
    auto it = mshrs_.find(line);
    std::deque<Access*> waiting = std::move(it->second.waiting);
    std::deque<Msg*> snoops = std::move(it->second.snoops);
    const bool uncached = it->second.kind == Mshr::Uncached;
    const Opc op = it->second.op;
    const uint64_t value = it->second.value;
    mshrs_.erase(it);
    bool first = true;
    for (Access* a : waiting) {
        if (first && uncached) {
            first = false;
            if (op == Opc::RdCurr) a->value = value;
            complete(a);
            continue;
        }
        first = false;
        a->leave(kAQueue, now());
        lookup(a);  // cached now: performs as a hit, or misses again (e.g. a store to an S line)
    }
    for (Msg* m : snoops) {
        home_.down(index_).giveCredit(m->cls, now());
        snoop(m);
        pool_.put(m);
    }
    // Freed MSHRs let stalled accesses in.
    while (!stalled_.empty() && mshrs_.size() < cp_.mshrs) {
        Access* a = stalled_.front();
        stalled_.pop_front();
        const size_t before = stalled_.size();
        a->leave(kAQueue, now());
        lookup(a);
        if (stalled_.size() > before) {
            // Still no room: put it back at the head.
            stalled_.pop_back();
            stalled_.push_front(a);
            break;
        }
    }
    // Host requests that waited for this line.
    auto bl = memBlocked_.find(line);
    if (bl != memBlocked_.end()) {
        std::deque<Msg*> q = std::move(bl->second);
        memBlocked_.erase(bl);
        for (Msg* m : q) hostMemAccess(m);
    }
}

bool Accelerator::quiet() const {
    return mshrs_.empty() && stalled_.empty() && snoopQ_.empty() && pipe_.empty() && up_.queued() == 0 &&
           memBlocked_.empty() && later_.empty();
}

std::string Accelerator::describe() const {
    std::string s = "device " + std::to_string(index_) + ": " + std::to_string(mshrs_.size()) + " MSHRs";
    int n = 0;
    for (auto& kv : mshrs_) {
        if (n++ == 4) break;
        s += " [" + hex(kv.first) + " " + opName(kv.second.op) + (kv.second.biPending ? " waiting-bias/BI" : "") +
             (kv.second.gotGo ? " GO" : "") + (kv.second.gotData ? " data" : "") + "]";
    }
    s += ", " + std::to_string(stalled_.size()) + " stalled, " + std::to_string(memBlocked_.size()) +
         " host requests blocked;";
    return s;
}

void Accelerator::oldest(Oldest& o) const {
    for (auto& kv : mshrs_)
        for (const Access* a : kv.second.waiting)
            o.see(a->issued, [&] {
                const Mshr& m = kv.second;
                return name_ + " MSHR of line " + hex(kv.first) + " (" + opName(m.op) +
                       (m.biPending ? ", waiting for a bias flip or BIRsp" : "") +
                       (m.gotGo ? ", GO received" : ", waiting for GO") +
                       (m.gotData ? ", data received)" : ", waiting for data)");
            });
    for (const Access* a : stalled_) o.see(a->issued, [&] { return name_ + " queue for an MSHR or cache way"; });
    up_.each([&](const Msg* m) {
        if (m->acc)
            o.see(m->acc->issued, [&] { return name_ + " link-up queue " + className(m->cls) + " (no credit)"; });
    });
    for (auto& kv : memBlocked_)
        for (const Msg* m : kv.second)
            if (m->acc)
                o.see(m->acc->issued, [&] { return name_ + " device-memory queue of line " + hex(kv.first); });
}

void Accelerator::snoop(Msg* m) {
    const uint64_t L = m->line;
    const int kind = m->op == Opc::SnpData ? 0 : m->op == Opc::SnpInv ? 1 : 2;
    ++stats_.snoopsRecv[kind];
    Opc rsp = Opc::RspIHitI;
    bool data = false;
    uint64_t value = 0;
    CLine* c = find(L);
    if (c && c->st != MState::I) {
        const MState s = c->st;
        value = c->value;
        if (m->op == Opc::SnpCur) {
            rsp = s == MState::M ? Opc::RspVFwdV : Opc::RspVHitV;
            data = s == MState::M;
        } else if (m->op == Opc::SnpData) {
            rsp = s == MState::M ? Opc::RspSFwdM : Opc::RspSHitSE;
            data = s == MState::M;
            setState(*c, MState::S);
        } else {
            rsp = s == MState::M ? Opc::RspIFwdM : Opc::RspIHitSE;
            data = s == MState::M;
            if (bug_ == SnpInvKeepsCopy && s == MState::S) {
                // deliberately wrong: acknowledge the invalidation but keep the line
            } else {
                setState(*c, MState::I);
            }
        }
        if (bug_ == DropDirtyData && data) {
            rsp = m->op == Opc::SnpInv ? Opc::RspIHitSE : m->op == Opc::SnpData ? Opc::RspSHitSE : Opc::RspVHitV;
            data = false;
        }
    } else {
        auto it = mshrs_.find(L);
        if (it != mshrs_.end() && it->second.kind == Mshr::Evict && !it->second.snooped &&
            it->second.evictState != MState::I) {
            Mshr& e = it->second;
            value = e.value;
            if (m->op == Opc::SnpCur) {
                data = e.evictState == MState::M;
                rsp = data ? Opc::RspVFwdV : Opc::RspVHitV;
            } else {
                // An evicting line is read-only: give it up and mark the eviction's data bogus.
                data = e.evictState == MState::M;
                rsp = data ? Opc::RspIFwdM : Opc::RspIHitSE;
                e.snooped = true;
                if (checker_) checker_->state(L, index_, MState::I, now());
            }
        }
    }
    Msg* r = msg(rsp, kCD2HRsp, L);
    r->txn = m->txn;
    sendUp(r);
    if (data) {
        Msg* d = msg(Opc::Data, kCD2HData, L);
        d->txn = m->txn;
        d->value = value;
        sendUp(d);
    }
}

Tick Accelerator::flipToHostBias(uint64_t page, Access* cause) {
    // Flush the page's resident lines from the device cache (one cache access
    // each, dirty ones written back), then serve the host in host bias. The
    // walk visits the page's lines or the cache's ways, whichever are fewer.
    ++stats_.hostBiasFlips;
    const uint64_t base = page * ap_.bias_page_bytes;
    uint64_t n = 0;
    auto flush = [&](CLine& c) {
        if (c.st == MState::M) {
            memVals_[c.line] = c.value;
            mem_->write(c.line - memBase_);
        }
        setState(c, MState::I);
        ++n;
    };
    if (ap_.bias_page_bytes / kLineBytes <= ways_.size()) {
        for (uint64_t l = base; l < base + ap_.bias_page_bytes; l += kLineBytes) {
            CLine* c = find(l);
            if (c && c->st != MState::I) flush(*c);
        }
    } else {
        for (CLine& c : ways_)
            if (c.st != MState::I && c.line >= base && c.line < base + ap_.bias_page_bytes) flush(c);
    }
    stats_.flushedLines += n;
    bias_[page] = false;
    const Tick cost = flipLat_ + Tick(n) * lat_;
    if (cause) {
        // Charged to the flip stage; the access's clock moves past it.
        cause->stage[kABiasFlip] += cost;
        cause->mark += cost;
    }
    return cost;
}

void Accelerator::hostMemAccess(Msg* m) {
    // The host reads or writes device memory over CXL.mem.
    const uint64_t L = m->line;
    const uint64_t page = L / ap_.bias_page_bytes;
    Tick extra = 0;
    if (m->op == Opc::MemRd || m->op == Opc::MemRdFwd) {
        auto ms = mshrs_.find(L);
        if (ms != mshrs_.end() && ms->second.kind == Mshr::Local && !ms->second.biPending) {
            memBlocked_[L].push_back(m);  // a local fill is reading the line: serve after it
            return;
        }
        if (!ap_.hdm_db && deviceBias(L)) {
            // Device bias: wait for local fills of the page, then flip it to host bias.
            for (auto& kv : mshrs_)
                if (kv.second.kind == Mshr::Local && kv.first / ap_.bias_page_bytes == page && !kv.second.biPending) {
                    memBlocked_[kv.first].push_back(m);
                    return;
                }
            extra = flipToHostBias(page, m->acc);
        }
        if (ms != mshrs_.end() && ms->second.kind == Mshr::Local && ms->second.biPending) ms->second.hostReacquired = true;
    }
    if (m->op == Opc::MemRdFwd) {
        // Host bias: the host resolved coherence; read locally and fill.
        auto it = mshrs_.find(L);
        if (it == mshrs_.end() || it->second.waiting.empty()) protocolError("MemRdFwd without a pending request");
        Mshr& ms = it->second;
        ms.gotGo = true;
        Access* a = ms.waiting.front();
        const MState g = m->state;
        pool_.put(m);
        ++stats_.localMemReads;
        later_.push(now() + memLat_ + extra, [this, L, a, g] {
            mem_->read(L - memBase_, [this, L, a, g] {
                auto it2 = mshrs_.find(L);
                if (it2 == mshrs_.end()) protocolError("MemRdFwd fill without an MSHR");
                a->leave(kAMemory, now());
                it2->second.value = valueOf(memVals_, L);
                it2->second.granted = g;
                if (checker_) checker_->memory(L, it2->second.value, now());
                install(L, it2->second);
            });
        });
        requestWake(now() + memLat_ + extra);
        return;
    }
    if (m->op == Opc::MemWr) {
        memVals_[L] = m->value;
        mem_->write(L - memBase_);
        Msg* r = msg(Opc::Cmp, kCS2M, L);
        r->txn = m->txn;  // a bias flip waits for its write-backs
        pool_.put(m);
        sendUp(r);
        return;
    }
    // MemRd: in HDM-DB the device resolves its own cache first.
    CLine* c = find(L);
    if (ap_.hdm_db && c && c->st != MState::I) {
        if (c->st == MState::M) memVals_[L] = c->value;
        if (m->state == MState::S)
            setState(*c, MState::S);
        else
            setState(*c, MState::I);
    }
    if (ap_.hdm_db) hostCopy_[L] = m->state;
    Access* acc = m->acc;
    HTxn* txn = m->txn;
    pool_.put(m);
    later_.push(now() + memLat_ + extra, [this, L, acc, txn] {
        mem_->read(L - memBase_, [this, L, acc, txn] {
            Msg* r = msg(Opc::MemData, kCS2M, L);
            r->value = valueOf(memVals_, L);
            r->acc = acc;
            r->txn = txn;
            up_.send(r);
            requestWake(now());
        });
    });
    requestWake(now() + memLat_ + extra);
}

void Accelerator::handle(Msg* m) {
    const uint64_t L = m->line;
    if (m->acc) m->acc->leave(kALinkDown, now());
    switch (m->op) {
        case Opc::SnpData:
        case Opc::SnpInv:
        case Opc::SnpCur:
            // Answered after the snoop pipeline; the H2D Req credit returns then.
            snoopQ_.push(now() + snoopLat_, m);
            return;
        case Opc::GO:
        case Opc::Data:
        case Opc::GO_WritePull: {
            home_.down(index_).giveCredit(m->cls, now());
            auto it = mshrs_.find(L);
            if (it == mshrs_.end()) break;
            Mshr& ms = it->second;
            if (ms.kind == Mshr::Evict) {
                if (m->op == Opc::GO_WritePull) {
                    Msg* d = msg(Opc::Data, kCD2HData, L);
                    d->value = ms.value;
                    d->bogus = ms.snooped;
                    if (bug_ == DropDirtyData) d->bogus = true;
                    if (ms.snooped) ++stats_.bogusData;
                    sendUp(d);
                }
                if (!ms.snooped && checker_) checker_->state(L, index_, MState::I, now());
                finishMshr(L);
                break;
            }
            if (m->op == Opc::GO_WritePull) {
                // ItoMWr / WrInv: push the data; the write completes at GO.
                Msg* d = msg(Opc::Data, kCD2HData, L);
                d->value = ms.waiting.front()->value;
                sendUp(d);
                finishMshr(L);
                break;
            }
            if (m->op == Opc::GO) {
                ms.gotGo = true;
                ms.granted = m->state;
            } else {
                ms.gotData = true;
                ms.value = m->value;
            }
            if (ms.kind == Mshr::Uncached && ms.gotData) {
                install(L, ms);
            } else if (ms.gotGo && ms.gotData) {
                install(L, ms);
            }
            break;
        }
        case Opc::BiasFlipDone: {
            home_.down(index_).giveCredit(m->cls, now());
            const uint64_t page = L / ap_.bias_page_bytes;
            bias_[page] = true;
            flipping_.erase(page);
            // Fills of this page that waited for the flip read locally now.
            std::vector<uint64_t> ready;
            for (auto& kv : mshrs_)
                if (kv.second.kind == Mshr::Local && kv.second.biPending && kv.first / ap_.bias_page_bytes == page)
                    ready.push_back(kv.first);
            std::sort(ready.begin(), ready.end());
            for (uint64_t l : ready) {
                Mshr& ms = mshrs_[l];
                if (ms.waiting.empty()) protocolError("bias flip completion without a waiting access");
                Access* a = ms.waiting.front();
                a->leave(kABiasFlip, now());
                localFill(l, a, ms);
            }
            break;
        }
        case Opc::BIRspI:
        case Opc::BIRspS: {
            home_.down(index_).giveCredit(m->cls, now());
            auto it = mshrs_.find(L);
            if (m->op == Opc::BIRspI)
                hostCopy_.erase(L);
            else
                hostCopy_[L] = MState::S;
            if (it == mshrs_.end()) break;
            Mshr& ms = it->second;
            if (ms.waiting.empty()) protocolError("BIRsp without a waiting access");
            Access* a = ms.waiting.front();
            a->leave(kABackInv, now());
            if (ms.hostReacquired || (ms.biInv && hostCopy_.count(L))) {
                // The host took the line again meanwhile: snoop it again.
                ms.hostReacquired = false;
                ms.biInv = true;
                ++stats_.biSnps;
                sendUp(msg(Opc::BISnpInv, kCS2MBISnp, L));
                break;
            }
            localFill(L, a, ms);
            break;
        }
        case Opc::MemRd:
        case Opc::MemRdFwd:
        case Opc::MemWr:
            home_.down(index_).giveCredit(m->cls, now());
            hostMemAccess(m);
            return;
        case Opc::IoMemWr:  // doorbell
            home_.down(index_).giveCredit(m->cls, now());
            doorbells_.push_back(m);
            m->job->doorbellAt = now();
            dmaStart();
            return;
        case Opc::IoCplD: {
            home_.down(index_).giveCredit(m->cls, now());
            if (watch_) watch_->progress(now());
            DmaJob& j = *m->job;
            if (!j.haveDescriptor) {
                j.haveDescriptor = true;
                j.descriptorAt = now();
                dmaPump(j);
            } else {
                j.received += m->bytes;
                if (m->tag) --j.readsInFlight;
                if (j.received >= j.bytes) {
                    j.dataAt = now();
                    // Completion record, then (optionally) the MSI-X write.
                    Msg* w = msg(Opc::IoMemWr, kCIoD2H, j.addr);
                    w->bytes = 16;
                    w->job = &j;
                    w->tag = 2;
                    sendUp(w);
                    if (dp_.interrupt) {
                        Msg* i = msg(Opc::IoMemWr, kCIoD2H, j.addr);
                        i->bytes = 4;
                        i->job = &j;
                        i->tag = 3;
                        sendUp(i);
                    }
                    ++stats_.dmaTransfers;
                    --enginesBusy_;
                    dmaStart();
                } else {
                    dmaPump(j);
                }
            }
            break;
        }
        default:
            break;
    }
    pool_.put(m);
}

void Accelerator::dmaStart() {
    while (!doorbells_.empty() && enginesBusy_ < dp_.engines) {
        Msg* d = doorbells_.front();
        doorbells_.pop_front();
        ++enginesBusy_;
        DmaJob* j = d->job;
        pool_.put(d);
        const Tick t = now() + nsToTicks(dp_.engine_latency_ns);
        later_.push(t, [this, j] {
            Msg* r = msg(Opc::IoMemRd, kCIoD2H, j->addr);
            r->bytes = dp_.descriptor_bytes;
            r->job = j;
            sendUp(r);
        });
        requestWake(t);
    }
}

void Accelerator::dmaPump(DmaJob& j) {
    while (j.nextRead < j.bytes && j.readsInFlight < dp_.read_tags) {
        const uint64_t n = std::min<uint64_t>(dp_.max_read_request, j.bytes - j.nextRead);
        Msg* r = msg(Opc::IoMemRd, kCIoD2H, j.addr + j.nextRead);
        r->bytes = uint32_t(n);
        r->job = &j;
        r->tag = 1;
        j.nextRead += n;
        ++j.readsInFlight;
        sendUp(r);
    }
}

void Accelerator::process() {
    const Tick now = this->now();
    while (inbox_.headReady() <= now) handle(inbox_.pop());
    while (snoopQ_.headReady() <= now) {
        Msg* m = snoopQ_.pop();
        if (bug_ == DropSnoops) {  // never answered, its credit never returned
            pool_.put(m);
            continue;
        }
        if (bug_ == DeferSnoops) {  // put off again and again
            snoopQ_.push(now + std::max<Tick>(snoopLat_, 1000), m);
            continue;
        }
        auto it = mshrs_.find(m->line);
        if (it != mshrs_.end() && it->second.gotGo && it->second.kind != Mshr::Evict) {
            // The host already ordered our request first: answer after the fill.
            it->second.snoops.push_back(m);
            continue;
        }
        home_.down(index_).giveCredit(m->cls, now);
        snoop(m);
        pool_.put(m);
    }
    while (later_.headReady() <= now) {
        auto f = later_.pop();
        f();
    }
    while (pipe_.headReady() <= now) lookup(pipe_.pop());
    up_.pump();
    Tick next = std::min({inbox_.headReady(), snoopQ_.headReady(), later_.headReady(), pipe_.headReady()});
    if (next != kNever) requestWake(next);
}

// ---------------------------------------------------------------- home agent

HomeAgent::HomeAgent(Host& host, const HomeParams& p, const DramParams& dram, MsgPool& pool,
                     CoherenceChecker* checker, const std::string& where)
    : Endpoint(host), p_(p), pool_(pool), checker_(checker), dram_(host, dram, where + ".dram") {
    ports_.reserve(16);
    lat_ = nsToTicks(p_.latency_ns);
    hostHit_ = nsToTicks(p_.host_hit_ns);
    hostCap_ = size_t(p_.host_cache_bytes / kLineBytes);
}

void HomeAgent::addDevice(Accelerator* d, CxlLink* link, const DCacheParams& cp, const DmaParams& dp) {
    ports_.push_back(Port{d, link, Wire(), dp});
    numDevs_ = uint32_t(ports_.size());
    pageBytes_ = d->ap_.bias_page_bytes;
    uint32_t cr[kNumCClasses];
    channelCredits(cp, link->params(), dp, cr);
    // Host-to-device traffic leaves in order: a snoop never passes a GO.
    for (auto& p : ports_)
        p.down.init(&p.link->m2s_, this, p.dev, true, cr, link->m2s_.flitTime() + link->m2s_.latency(),
                    dp.tlp_overhead_bytes);
}

Msg* HomeAgent::msg(Opc op, CClass c, uint64_t line) {
    Msg* m = pool_.get();
    m->op = op;
    m->cls = c;
    m->line = line;
    return m;
}

void HomeAgent::sendDown(uint16_t dev, Msg* m) { ports_[dev].down.send(m); }

HomeAgent::HLine& HomeAgent::line(uint64_t x) {
    auto r = lines_.try_emplace(x);
    if (r.second) {
        if (memOwner(x)) pageLines_[pageOf(x)].insert(x);
        stats_.maxLineStates = std::max(stats_.maxLineStates, lines_.size());
    }
    return r.first->second;
}

void HomeAgent::forget(LineMap::iterator it) {
    const uint64_t x = it->first;
    if (memOwner(x)) {
        auto p = pageLines_.find(pageOf(x));
        p->second.erase(x);
        if (p->second.empty()) pageLines_.erase(p);
    }
    lines_.erase(it);
}

void HomeAgent::finishAccess(Access* a) {
    a->done = now();
    if (watch_) {
        --watch_->outstanding;
        watch_->progress(now());
    }
    cxlcore::finishAccess(a);
}

uint64_t HomeAgent::hostDirtyLines() const {
    uint64_t n = 0;
    for (uint64_t x : hostLru_) n += lines_.at(x).host == MState::M;
    return n;
}

void HomeAgent::oldest(Oldest& o) const {
    for (auto& kv : lines_) {
        auto see = [&](const HTxn* t, const char* where) {
            const Tick at = t->acc ? t->acc->issued : t->op == Opc::IoMemRd ? t->issued : kNever;
            o.see(at, [&] {
                return std::string("home ") + where + " of line " + hex(kv.first) + " (" + opName(t->op) + " from " +
                       (t->dev < 0 ? std::string("a host core") : "accel[" + std::to_string(t->dev) + "]") + ", " +
                       std::to_string(t->snoopsOut) + " snoop responses and " + std::to_string(t->dataOut) +
                       " data outstanding" + (t->memOut ? ", memory read outstanding)" : ")");
            });
        };
        if (kv.second.active) see(kv.second.active, "transaction");
        for (const HTxn* t : kv.second.wait) see(t, "line queue");
    }
    for (size_t i = 0; i < ports_.size(); ++i)
        ports_[i].down.each([&](const Msg* m) {
            if (m->acc)
                o.see(m->acc->issued, [&] {
                    return "home link-down queue to accel[" + std::to_string(i) + "] " + className(m->cls) +
                           " (no credit)";
                });
        });
}

bool HomeAgent::quiet() const {
    for (auto& p : ports_)
        if (p.down.queued()) return false;
    return tracker_ == 0 && later_.empty() && dram_.pending() == 0;
}

std::string HomeAgent::describe() const {
    std::string s = "home: " + std::to_string(tracker_) + " tracker entries, " +
                     std::to_string(deferredFlips_.size()) + " deferred flips";
    int n = 0;
    for (auto& kv : lines_) {
        if (!kv.second.active) continue;
        if (n++ == 6) break;
        const HTxn* t = kv.second.active;
        s += " [" + hex(kv.first) + " " + opName(t->op) + " dev " + std::to_string(t->dev) + " snoops " +
             std::to_string(t->snoopsOut) + " mem " + std::to_string(t->memOut) + " data " + std::to_string(t->dataOut) +
             " waiting " + std::to_string(kv.second.wait.size()) + "]";
    }
    return s;
}

void HomeAgent::setSharers(HLine& l, uint64_t line, uint32_t sharers) {
    const bool was = l.sharers != 0, is = sharers != 0;
    l.sharers = sharers;
    if (was == is) return;
    if (!is) {
        --sfLines_;
        return;
    }
    ++sfLines_;
    if (!p_.snoop_filter_lines) return;
    sfOrder_.push_back(line);
    if (sfLines_ > p_.snoop_filter_lines) sfMakeRoom(line);
    if (sfOrder_.size() > 4 * size_t(p_.snoop_filter_lines) + 64) {
        // Drop entries of lines that left the filter since.
        std::deque<uint64_t> keep;
        for (uint64_t x : sfOrder_) {
            auto it = lines_.find(x);
            if (it != lines_.end() && it->second.sharers) keep.push_back(x);
        }
        sfOrder_.swap(keep);
    }
}

void HomeAgent::sfMakeRoom(uint64_t except) {
    // The oldest tracked line that is not busy is invalidated in the devices.
    for (size_t n = sfOrder_.size(); n; --n) {
        const uint64_t v = sfOrder_.front();
        sfOrder_.pop_front();
        auto it = lines_.find(v);
        if (it == lines_.end() || !it->second.sharers) continue;
        if (v == except || it->second.active || !it->second.wait.empty()) {
            sfOrder_.push_back(v);
            continue;
        }
        HTxn* t = txns_.get();
        t->op = Opc::SFEvict;
        t->line = v;
        enqueue(t);
        return;
    }
}

void HomeAgent::setHost(HLine& l, uint64_t line, MState s) {
    const MState was = l.host;
    l.host = s;
    if (s == MState::M && was != MState::M) ++stats_.hostDirtied;
    if (checker_) checker_->state(line, numDevs_, s, now());
    if (was == MState::I && s != MState::I) {
        l.lru = hostLru_.insert(hostLru_.end(), line);
        if (hostLru_.size() > hostCap_) hostEvict();
        stats_.maxHostLines = std::max(stats_.maxHostLines, hostLru_.size());
    } else if (was != MState::I && s == MState::I) {
        hostLru_.erase(l.lru);
    }
}

void HomeAgent::hostEvict() {
    // The least recently used line no request is at leaves the host's caches;
    // a dirty one is written back through the home.
    for (auto v = hostLru_.begin(); v != hostLru_.end(); ++v) {
        auto it = lines_.find(*v);
        HLine& h = it->second;
        if (h.active || !h.wait.empty()) continue;
        const uint64_t x = *v;
        ++stats_.hostEvictions;
        if (h.host == MState::M) {
            ++stats_.hostWritebacks;
            memWrite(x, h.value);
        }
        setHost(h, x, MState::I);
        if (!h.sharers && h.owner < 0) forget(it);
        return;
    }
}

Accelerator* HomeAgent::memOwner(uint64_t line) const {
    for (auto& p : ports_)
        if (p.dev->ownsMemory(line)) return p.dev;
    return nullptr;
}

void HomeAgent::hostAccess(Access* a) {
    a->mark = now();
    a->agent = numDevs_;
    if (watch_) ++watch_->outstanding;
    auto it = lines_.find(a->line);
    const MState hs = it == lines_.end() ? MState::I : it->second.host;
    const bool write = isWrite(a->kind);
    if ((!write && hs != MState::I) || (write && hs == MState::M)) {
        HLine& l = it->second;
        hostLru_.splice(hostLru_.end(), hostLru_, l.lru);
        if (write) {
            l.value = a->value;
            if (checker_) checker_->write(a->line, numDevs_, a->value, now());
        } else {
            a->value = l.value;
            if (checker_) checker_->read(a->line, numDevs_, a->value, now());
        }
        a->hit = true;
        ++stats_.hostHits;
        later_.push(now() + hostHit_, [this, a] {
            a->leave(kACache, now());
            finishAccess(a);
        });
        requestWake(now() + hostHit_);
        return;
    }
    ++stats_.hostMisses;
    HTxn* t = txns_.get();
    t->op = write ? Opc::RdOwn : Opc::RdShared;
    t->dev = -1;
    t->line = a->line;
    t->acc = a;
    later_.push(now() + hostHit_ + lat_, [this, t] {
        t->acc->leave(kAHome, now());
        enqueue(t);
    });
    requestWake(now() + hostHit_ + lat_);
}

void HomeAgent::doorbell(uint16_t dev, DmaJob* job, Tick delay) {
    job->start = now() + delay;
    job->dev = dev;
    if (watch_) ++watch_->outstanding;
    const Tick t = job->start + nsToTicks(ports_[dev].dp.setup_ns);
    later_.push(t, [this, dev, job] {
        Msg* m = msg(Opc::IoMemWr, kCIoH2D, job->addr);
        m->bytes = 8;
        m->job = job;
        sendDown(dev, m);
    });
    requestWake(t);
}

void HomeAgent::enqueue(HTxn* t) {
    if (t->op == Opc::BiasFlipReq) {
        // A flip covers a whole page: it starts once no line of the page is busy.
        if (pageBusy(t)) {
            deferredFlips_.push_back(t);
            return;
        }
        start(t);
        return;
    }
    HLine& l = line(t->line);
    if (!l.active && !lockedPages_.empty()) {
        // A line of a page being flipped waits for the flip.
        auto lp = lockedPages_.find(pageOf(t->line));
        if (lp != lockedPages_.end()) l.active = lp->second;
    }
    if (l.active) {
        l.wait.push_back(t);
        ++stats_.conflicts;
        stats_.maxLineQueue = std::max(stats_.maxLineQueue, l.wait.size());
        return;
    }
    start(t);
}

bool HomeAgent::pageBusy(HTxn* flip) {
    auto pl = pageLines_.find(flip->line);
    if (pl == pageLines_.end()) return false;
    for (uint64_t x : pl->second) {
        const HLine& h = lines_.at(x);
        if (h.active || !h.wait.empty()) return true;
    }
    return false;
}

void HomeAgent::snoop(HTxn* t, uint16_t dev, Opc op, uint64_t line) {
    Msg* m = msg(op, kCH2DReq, line);
    m->txn = t;
    ++t->snoopsOut;
    ++stats_.snoops[op == Opc::SnpData ? 0 : op == Opc::SnpInv ? 1 : 2];
    sendDown(dev, m);
}

void HomeAgent::memRead(HTxn* t) {
    t->memOut = true;
    ++stats_.memReads;
    const uint64_t L = t->line;
    Accelerator* owner = memOwner(L);
    if (owner) {
        Msg* m = msg(Opc::MemRd, kCM2SReq, L);
        m->txn = t;
        m->acc = t->acc;
        // The host asks for an exclusive copy when it will write.
        m->state = (t->op == Opc::RdOwn || t->op == Opc::ItoMWr || t->op == Opc::WrInv) ? MState::M : MState::S;
        sendDown(owner->index(), m);
        return;
    }
    dram_.read(L, [this, t] {
        t->memOut = false;
        t->memValue = valueOf(mem_, t->line);
        t->memHave = true;
        if (t->acc && !t->snoopsOut && !t->dataOut) t->acc->leave(kAMemory, now());
        maybeFinish(t);
    });
}

void HomeAgent::memWrite(uint64_t line, uint64_t value, HTxn* waiter) {
    ++stats_.memWrites;
    Accelerator* owner = memOwner(line);
    if (owner) {
        Msg* m = msg(Opc::MemWr, kCM2SRwD, line);
        m->value = value;
        if (waiter) {
            // The waiter completes when the device's Cmp is back.
            m->txn = waiter;
            ++waiter->dataOut;
        }
        sendDown(owner->index(), m);
        return;
    }
    mem_[line] = value;
    dram_.write(line);
}

void HomeAgent::start(HTxn* t) {
    const uint64_t L = t->line;
    const int d = t->dev;
    if (t->acc) t->acc->leave(kAQueue, now());
    ++stats_.requests[int(t->op)];
    if (t->op == Opc::BiasFlipReq) {
        // Lock the page, then take back every copy the host side holds: peer
        // devices are snooped, and the host's caches flush the page's resident
        // lines one by one. Only lines with an entry can be resident.
        ++stats_.biasFlips;
        lockedPages_[L] = t;
        std::vector<uint64_t> host;
        auto pl = pageLines_.find(L);
        if (pl != pageLines_.end()) {
            std::vector<uint64_t> xs(pl->second.begin(), pl->second.end());
            std::sort(xs.begin(), xs.end());
            for (uint64_t x : xs) {
                HLine& h = lines_.at(x);
                h.active = t;
                if (h.host != MState::I) host.push_back(x);
                for (uint32_t k = 0; k < numDevs_; ++k)
                    if (int(k) != d && (h.sharers >> k & 1)) snoop(t, uint16_t(k), Opc::SnpInv, x);
                // The device keeps what it holds; the host stops tracking it.
                setSharers(h, x, h.sharers & ~(1u << d));
                if (h.owner == d) h.owner = -1;
            }
        }
        flush(t, host);
        return;
    }
    HLine& l = line(L);
    l.active = t;
    Accelerator* owner = memOwner(L);
    const bool fwd = d >= 0 && owner == ports_[d].dev;  // a Type-2 device's own memory in host bias
    switch (t->op) {
        case Opc::RdShared:
        case Opc::RdAny:
        case Opc::RdCurr: {
            if (l.owner >= 0 && l.owner != d) {
                snoop(t, uint16_t(l.owner), t->op == Opc::RdCurr ? Opc::SnpCur : Opc::SnpData, L);
                t->snoopedCur = t->op == Opc::RdCurr;
            }
            if (l.host != MState::I) {
                t->value = l.value;
                t->haveData = true;
                if (l.host == MState::M && t->op != Opc::RdCurr && d >= 0) {
                    memWrite(L, l.value);
                    setHost(l, L, MState::S);
                }
            } else if (!fwd || t->op == Opc::RdCurr) {
                memRead(t);
            }
            break;
        }
        case Opc::RdOwn:
        case Opc::ItoMWr:
        case Opc::WrInv: {
            for (uint32_t k = 0; k < numDevs_; ++k)
                if (int(k) != d && (l.sharers >> k & 1)) snoop(t, uint16_t(k), Opc::SnpInv, L);
            if (l.host != MState::I) {
                if (t->op == Opc::RdOwn) {
                    t->value = l.value;
                    t->haveData = true;
                    t->dirty = l.host == MState::M && d >= 0;
                }
                if (d >= 0) setHost(l, L, MState::I);
            }
            // Device memory (HDM-DB directory or device-bias page) must hear of
            // every new owner, even when the data comes from elsewhere.
            if (!fwd && ((t->op == Opc::RdOwn && !t->haveData) || owner)) memRead(t);
            break;
        }
        case Opc::IoMemRd:
            // CXL.io reads are coherent: a device holding the line E or M (the
            // reader's own cache too) is snooped, and the host's caches supply
            // a copy they hold (an LLC access) before memory would.
            if (l.owner >= 0) {
                snoop(t, uint16_t(l.owner), Opc::SnpCur, L);
                t->snoopedCur = true;
            }
            if (l.host != MState::I) {
                t->value = l.value;
                t->haveData = true;
                ++t->dataOut;
                later_.push(now() + hostHit_, [this, t] {
                    --t->dataOut;
                    maybeFinish(t);
                });
                requestWake(now() + hostHit_);
            } else {
                memRead(t);
            }
            break;
        case Opc::SFEvict:
            ++stats_.sfEvictions;
            for (uint32_t k = 0; k < numDevs_; ++k)
                if (l.sharers >> k & 1) snoop(t, uint16_t(k), Opc::SnpInv, L);
            break;
        case Opc::DirtyEvict: {
            Msg* m = msg(Opc::GO_WritePull, kCH2DRsp, L);
            m->txn = t;
            sendDown(uint16_t(d), m);
            t->dataOut = 1;
            return;
        }
        case Opc::BISnpData:
        case Opc::BISnpInv: {
            ++stats_.biSnps;
            for (uint32_t k = 0; k < numDevs_; ++k)
                if (int(k) != d && (l.sharers >> k & 1))
                    snoop(t, uint16_t(k), t->op == Opc::BISnpInv ? Opc::SnpInv : Opc::SnpData, L);
            if (l.host == MState::M) memWrite(L, l.value);
            if (l.host != MState::I) setHost(l, L, t->op == Opc::BISnpInv ? MState::I : MState::S);
            break;
        }
        default:
            break;
    }
    maybeFinish(t);
}

void HomeAgent::flush(HTxn* t, const std::vector<uint64_t>& lines) {
    // The host's caches give up the page's resident lines at once (dirty ones
    // written back, each acknowledged by the device's Cmp before the flip
    // completes); the home is occupied one host-cache access per line.
    for (uint64_t x : lines) {
        HLine& h = lines_.at(x);
        if (h.host == MState::M) memWrite(x, h.value, t);
        setHost(h, x, MState::I);
    }
    stats_.flushedLines += lines.size();
    const Tick at = now() + Tick(lines.size()) * hostHit_;
    ++t->dataOut;
    later_.push(at, [this, t] {
        --t->dataOut;
        maybeFinish(t);
    });
    requestWake(at);
}

void HomeAgent::maybeFinish(HTxn* t) {
    if (t->snoopsOut || t->memOut || t->dataOut) return;
    if (t->op == Opc::BiasFlipReq && !t->haveData) {
        // The flip's own cost (bias table update and handshake), with the page still locked.
        t->haveData = true;
        t->dataOut = 1;
        const Tick at = now() + ports_[t->dev].dev->flipLat_;
        later_.push(at, [this, t] {
            t->dataOut = 0;
            maybeFinish(t);
        });
        requestWake(at);
        return;
    }
    if ((t->op == Opc::ItoMWr || t->op == Opc::WrInv) && !t->haveData) {
        // Snoops done: the write is ordered; pull its data.
        if (t->acc) t->acc->leave(kASnoop, now());
        Msg* m = msg(Opc::GO_WritePull, kCH2DRsp, t->line);
        m->txn = t;
        m->acc = t->acc;
        sendDown(uint16_t(t->dev), m);
        t->dataOut = 1;
        t->haveData = true;
        return;
    }
    finish(t);
}

void HomeAgent::release(uint64_t line) {
    auto it = lines_.find(line);
    if (it == lines_.end()) return;
    HLine& l = it->second;
    l.active = nullptr;
    if (!l.wait.empty()) {
        HTxn* n = l.wait.front();
        l.wait.pop_front();
        start(n);
    } else if (l.sharers == 0 && l.owner < 0 && l.host == MState::I) {
        forget(it);
    }
}

void HomeAgent::finish(HTxn* t) {
    const uint64_t L = t->line;
    const int d = t->dev;
    const Opc op = t->op;
    // Data: a forwarded dirty copy or the host's copy beats memory.
    if (!t->haveData && t->memHave) {
        t->value = t->memValue;
        t->haveData = true;
        // After SnpCur a clean owner keeps E and may write at once: RdCurr's
        // snapshot is as of the snoop, so later writes do not make it stale.
        if (checker_ && !t->snoopedCur) checker_->memory(L, t->value, now());
    }
    HLine& l = line(L);
    const bool fwd = d >= 0 && memOwner(L) == ports_[d].dev && op != Opc::RdCurr && op != Opc::IoMemRd;
    // Dirty data handed to a new holder is written back first, so a later
    // clean eviction loses nothing. (A snapshot read leaves the owner dirty.)
    if (t->dirty && op != Opc::RdCurr && op != Opc::DirtyEvict && op != Opc::IoMemRd) memWrite(L, t->value);
    auto grant = [&](MState s) {
        if (fwd) {
            Msg* m = msg(Opc::MemRdFwd, kCM2SReq, L);
            m->state = s;
            m->acc = t->acc;
            sendDown(uint16_t(d), m);
            return;
        }
        Msg* g = msg(Opc::GO, kCH2DRsp, L);
        g->state = s;
        sendDown(uint16_t(d), g);
        Msg* m = msg(Opc::Data, kCH2DData, L);
        m->value = t->value;
        m->acc = t->acc;
        sendDown(uint16_t(d), m);
    };
    switch (op) {
        case Opc::RdShared:
        case Opc::RdAny:
            if (d < 0) {
                l.value = t->value;
                if (l.host == MState::I) setHost(l, L, MState::S);
                t->acc->value = t->value;
                if (checker_) checker_->read(L, numDevs_, t->value, now());
            } else {
                // Device memory may be cached by its device out of the host's
                // sight, so only host memory can be granted exclusive here.
                const bool alone = (l.sharers & ~(1u << d)) == 0 && l.host == MState::I && l.owner < 0 && !memOwner(L);
                const MState s = (op == Opc::RdAny && alone) ? MState::E : MState::S;
                setSharers(l, L, l.sharers | 1u << d);
                if (s == MState::E) l.owner = d;
                grant(s);
            }
            break;
        case Opc::RdCurr: {
            Msg* m = msg(Opc::Data, kCH2DData, L);
            m->value = t->value;
            m->acc = t->acc;
            sendDown(uint16_t(d), m);
            break;
        }
        case Opc::RdOwn:
            setSharers(l, L, d < 0 ? 0u : 1u << d);
            l.owner = -1;
            if (d < 0) {
                l.value = t->acc->value;
                setHost(l, L, MState::M);
                if (checker_) checker_->write(L, numDevs_, t->acc->value, now());
            } else {
                l.owner = d;
                grant(MState::E);
            }
            break;
        case Opc::CleanEvict: {
            setSharers(l, L, l.sharers & ~(1u << d));
            if (l.owner == d) l.owner = -1;
            Msg* g = msg(Opc::GO, kCH2DRsp, L);
            g->state = MState::I;
            sendDown(uint16_t(d), g);
            break;
        }
        case Opc::DirtyEvict:
            setSharers(l, L, l.sharers & ~(1u << d));
            if (l.owner == d) l.owner = -1;
            break;
        case Opc::BISnpData:
        case Opc::BISnpInv:
            // Shared if anything on the host side (its caches or peer devices) kept a copy.
            sendDown(uint16_t(d), msg(l.host == MState::S || l.sharers ? Opc::BIRspS : Opc::BIRspI, kCM2SBIRsp, L));
            ports_[d].dev->up().giveCredit(kCS2MBISnp, now());
            break;
        case Opc::IoMemRd:
            if (checker_ && !t->snoopedCur) checker_->memory(L, t->value, now());
            break;
        case Opc::BiasFlipReq:
            sendDown(uint16_t(d), msg(Opc::BiasFlipDone, kCH2DRsp, L));
            break;
        default:
            break;
    }
    // Device requests hold a tracker entry (their D2H Req credit) until here.
    if (t->req) {
        ports_[t->req->dev].dev->up().giveCredit(kCD2HReq, now());
        pool_.put(t->req);
        t->req = nullptr;
        --tracker_;
    }
    Access* hostAcc = d < 0 ? t->acc : nullptr;
    if (t->onDone) {
        auto f = std::move(t->onDone);
        t->onDone = nullptr;
        f(t);
    }
    txns_.put(t);
    if (watch_) watch_->progress(now());
    if (op == Opc::BiasFlipReq) {
        lockedPages_.erase(L);
        std::vector<uint64_t> held;
        auto pl = pageLines_.find(L);
        if (pl != pageLines_.end())
            for (uint64_t x : pl->second)
                if (lines_.at(x).active == t) held.push_back(x);
        std::sort(held.begin(), held.end());
        for (uint64_t x : held) release(x);
    } else {
        release(L);
    }
    if (!deferredFlips_.empty()) {
        std::deque<HTxn*> q;
        q.swap(deferredFlips_);
        for (HTxn* f : q) enqueue(f);
    }
    if (hostAcc) finishAccess(hostAcc);
}

void HomeAgent::ioRead(Msg* m) {
    // A DMA read: each line it covers is ordered and resolved at the home
    // like any read (snooping the caches that hold it), then completions of
    // at most max_payload bytes each go back down.
    ++stats_.ioReads;
    const uint64_t first = lineOf(m->line);
    const uint64_t end = m->line + std::max<uint32_t>(m->bytes, 1);
    auto left = std::make_shared<uint32_t>(uint32_t((end - first + kLineBytes - 1) / kLineBytes));
    const uint16_t dev = m->dev;
    DmaJob* job = m->job;
    const uint32_t bytes = m->bytes;
    const bool data = m->tag != 0;
    pool_.put(m);
    for (uint64_t x = first; x < end; x += kLineBytes) {
        HTxn* t = txns_.get();
        t->op = Opc::IoMemRd;
        t->dev = dev;
        t->line = x;
        t->issued = now();
        t->onDone = [this, left, dev, job, bytes, data, first](HTxn* r) {
            if (data) {
                if (r->line == first) job->firstValue = r->value;
                job->cachedLines += !r->memHave || r->dirty;
            }
            if (--*left) return;
            const uint32_t mps = ports_[dev].dp.max_payload;
            uint32_t sent = 0;
            do {
                const uint32_t n = std::min(mps, bytes - sent);
                Msg* c = msg(Opc::IoCplD, kCIoH2D, job->addr);
                c->bytes = n;
                c->job = job;
                sent += n;
                c->tag = (data && sent >= bytes) ? 1 : 0;
                sendDown(dev, c);
            } while (sent < bytes);
        };
        enqueue(t);
    }
}

void HomeAgent::jobNoticed(DmaJob* job) {
    job->noticedAt = now();
    if (watch_) {
        --watch_->outstanding;
        watch_->progress(now());
    }
    if (job->onDone) job->onDone(job);
}

void HomeAgent::ioWrite(Msg* m) {
    ++stats_.ioWrites;
    DmaJob* job = m->job;
    const uint64_t tag = m->tag;
    dram_.write(lineOf(m->line));
    pool_.put(m);
    if (!job) return;
    const DmaParams& dp = ports_[job->dev].dp;
    if (tag == 2) {
        job->completionAt = now();
        if (dp.interrupt) return;
        // The driver polls the completion record every poll interval.
        const Tick iv = nsToTicks(dp.poll_interval_ns);
        const Tick since = now() + lat_ - job->start;
        const Tick seen = job->start + (since + iv - 1) / iv * iv + hostHit_;
        later_.push(seen, [this, job] { jobNoticed(job); });
        requestWake(seen);
    } else if (tag == 3) {
        const Tick seen = now() + nsToTicks(dp.interrupt_ns);
        later_.push(seen, [this, job] { jobNoticed(job); });
        requestWake(seen);
    }
}

void HomeAgent::handle(Msg* m) {
    const uint16_t dev = m->dev;
    Wire& up = ports_[dev].dev->up();
    if (m->acc) m->acc->leave(kALinkUp, now());
    switch (m->cls) {
        case kCD2HReq: {
            // A tracker entry holds the request until it completes (its credit returns then).
            HTxn* t = txns_.get();
            t->op = m->op;
            t->dev = dev;
            t->line = m->line;
            t->acc = m->acc;
            t->req = m;
            ++tracker_;
            stats_.maxTracker = std::max(stats_.maxTracker, tracker_);
            later_.push(now() + lat_, [this, t] {
                if (t->acc) t->acc->leave(kAHome, now());
                enqueue(t);
            });
            requestWake(now() + lat_);
            return;
        }
        case kCD2HRsp: {
            up.giveCredit(m->cls, now());
            HTxn* t = m->txn;
            if (!t) protocolError("snoop response without a transaction");
            HLine& l = line(m->line);
            const uint32_t bit = 1u << dev;
            switch (m->op) {
                case Opc::RspIHitI:
                case Opc::RspIHitSE:
                case Opc::RspIFwdM:
                    setSharers(l, m->line, l.sharers & ~bit);
                    if (l.owner == dev) l.owner = -1;
                    break;
                case Opc::RspSHitSE:
                case Opc::RspSFwdM:
                    if (l.owner == dev) l.owner = -1;
                    break;
                default:
                    break;
            }
            if (m->op == Opc::RspIFwdM || m->op == Opc::RspSFwdM || m->op == Opc::RspVFwdV) ++t->dataOut;
            --t->snoopsOut;
            if (!t->snoopsOut && t->acc && !t->dataOut) t->acc->leave(kASnoop, now());
            pool_.put(m);
            maybeFinish(t);
            return;
        }
        case kCD2HData: {
            up.giveCredit(m->cls, now());
            HTxn* t = m->txn;
            if (!t) {
                // Write data answering a GO_WritePull: the line's active transaction.
                auto it = lines_.find(m->line);
                t = it != lines_.end() ? it->second.active : nullptr;
            }
            if (!t) {
                pool_.put(m);
                return;
            }
            // Snoop data names its transaction; write-pull data does not. (With
            // few D2H Rsp credits a snooped line's data can overtake its response.)
            const bool pulled = !m->txn;
            if (pulled && (t->op == Opc::DirtyEvict || t->op == Opc::ItoMWr || t->op == Opc::WrInv)) {
                HLine& l = line(t->line);
                if (t->op == Opc::DirtyEvict) {
                    if (!m->bogus && l.owner == int(dev)) memWrite(t->line, m->value);
                } else {
                    // The write is performed at the home: into the host's cache (ItoMWr) or memory (WrInv).
                    if (checker_) checker_->write(t->line, numDevs_ + 1, m->value, now());
                    if (t->op == Opc::ItoMWr) {
                        l.value = m->value;
                        setHost(l, t->line, MState::M);
                    } else {
                        memWrite(t->line, m->value);
                    }
                }
                t->dataOut = 0;
            } else if (t->op == Opc::BiasFlipReq) {
                // A peer gave up a dirty line of the page: it goes back to device memory.
                memWrite(m->line, m->value, t);
                --t->dataOut;
            } else if (t->op == Opc::ItoMWr || t->op == Opc::WrInv) {
                // A snooped dirty copy is superseded by the full-line write.
                --t->dataOut;
                if (t->acc && !t->snoopsOut && !t->dataOut) t->acc->leave(kASnoop, now());
            } else {
                // Forwarded dirty data from a snooped cache: newer than memory.
                t->value = m->value;
                t->haveData = true;
                t->dirty = true;
                --t->dataOut;
                if (t->acc && !t->snoopsOut && !t->dataOut) t->acc->leave(kASnoop, now());
            }
            pool_.put(m);
            maybeFinish(t);
            return;
        }
        case kCS2M: {
            // Data and completions free their buffers at once.
            up.giveCredit(m->cls, now());
            HTxn* t = m->txn;
            if (m->op == Opc::MemData) {
                if (!t) protocolError("memory data without a transaction");
                t->memOut = false;
                t->memValue = m->value;
                t->memHave = true;
                if (t->acc && !t->snoopsOut && !t->dataOut) t->acc->leave(kAMemory, now());
                pool_.put(m);
                maybeFinish(t);
                return;
            }
            pool_.put(m);
            if (t) {  // a write-back a bias flip waits for
                --t->dataOut;
                maybeFinish(t);
            }
            return;
        }
        case kCS2MBISnp: {
            // A BISnp holds its buffer until answered, ordered with the host's
            // other requests to the line.
            HTxn* t = txns_.get();
            t->op = m->op;
            t->dev = dev;
            t->line = m->line;
            pool_.put(m);
            enqueue(t);
            return;
        }
        case kCIoD2H:
            up.giveCredit(m->cls, now());
            if (m->op == Opc::IoMemRd) {
                // The root complex orders (and snoops for) DMA reads like any request.
                later_.push(now() + lat_, [this, m] { ioRead(m); });
                requestWake(now() + lat_);
            } else {
                ioWrite(m);
            }
            return;
        default:
            pool_.put(m);
            return;
    }
}

void HomeAgent::process() {
    const Tick now = this->now();
    while (inbox_.headReady() <= now) handle(inbox_.pop());
    while (later_.headReady() <= now) {
        auto f = later_.pop();
        f();
    }
    for (auto& p : ports_) p.down.pump();
    Tick next = std::min(inbox_.headReady(), later_.headReady());
    if (next != kNever) requestWake(next);
}

}  // namespace cxlcore
