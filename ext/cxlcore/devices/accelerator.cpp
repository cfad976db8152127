#include "cxlcore/devices/accelerator.hpp"

#include <algorithm>

#include "cxlcore/coherence/home_agent.hpp"

namespace cxlcore {

Accelerator::Accelerator(Host& host, uint16_t index, const DCacheParams& cp, const AccelParams& ap,
                         const DmaParams& dp, const DramParams& media, uint64_t memBase, CxlLink& link,
                         HomeAgent& home, TxnPool& pool, CoherenceChecker* checker, const std::string& where)
    : Endpoint(host), index_(index), name_(where), tname_(internName(where)), cp_(cp), ap_(ap), dp_(dp), link_(link), home_(home), pool_(pool),
      checker_(checker), agent_(index) {
    sets_ = uint32_t(cp_.bytes / kLineBytes / cp_.assoc);
    ways_.resize(size_t(sets_) * cp_.assoc);
    lat_ = nsToTicks(cp_.latency_ns);
    snoopLat_ = nsToTicks(cp_.snoop_latency_ns);
    memLat_ = nsToTicks(ap_.memory_latency_ns);
    flipLat_ = nsToTicks(ap_.bias_flip_ns);
    if (ap_.type == 2) {
        memBase_ = memBase;  // placed by the system (CoherentParams::memoryBases)
        memBytes_ = ap_.memory_bytes;
        media_.reset(new DramController(host, media, where + ".media"));
        mem_.reset(new MemPort(host, *media_, pool));
        keepOrder_ = !ap_.hdm_db;
    }
    uint32_t cr[kNumChannels];
    channelCredits(cp_, link.params(), dp_, cr);
    link.setCredits(cr);
    link.setTlpOverhead(dp_.tlp_overhead_bytes);
    up_.init(&link, this, &home, false);
}

Txn* Accelerator::msg(Opc op, uint64_t line) {
    Txn* m = pool_.get();
    m->opc = op;
    m->addr = line;
    m->dev = index_;  // its CacheID: a switch above knows its port by it
    return m;
}

void Accelerator::sendUp(Txn* m, Txn* a) {
    if (a) {
        a->leave(kStageQueue, now(), tname_);
        m->parent = a;
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

Accelerator::CLine* Accelerator::find(uint64_t line, CLine** fill) {
    // find() and victim() in one pass over the set: on a miss the victim
    // scan read the same ways again.
    CLine* set = &ways_[size_t(uint32_t((line / kLineBytes) % sets_)) * cp_.assoc];
    CLine* invalid = nullptr;
    CLine* best = nullptr;
    for (uint32_t w = 0; w < cp_.assoc; ++w) {
        CLine& c = set[w];
        if (c.line == line && (c.st != MState::I || c.reserved)) return &c;
        if (c.reserved) continue;
        if (c.st == MState::I) {
            if (!invalid) invalid = &c;
        } else if (!best || c.lru < best->lru) {
            best = &c;
        }
    }
    *fill = invalid ? invalid : best;  // victim(line)'s choice
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

Accelerator::Mshr& Accelerator::newMshr(uint64_t line) {
    if (keepOrder_) mshrOrder_.insert(line);
    return mshrs_.get(line);
}

void Accelerator::dropMshr(uint64_t line) {
    if (keepOrder_) mshrOrder_.erase(line);
    mshrs_.erase(line);
}

void Accelerator::setState(CLine& l, MState s) {
    l.st = s;
    if (checker_) checker_->state(l.line, agent_, s, now());
}

void Accelerator::access(Txn* a) {
    if (trace_) a->trace = trace_->admit(*a);
    a->mark = now();
    a->src = index_;
    if (watch_) ++watch_->outstanding;
    (isWrite(a->kind) ? stats_.stores : stats_.loads)++;
    pipe_.push(now() + lat_, a);
    requestWake(now() + lat_);
}

void Accelerator::complete(Txn* a) {
    a->done = now();
    a->leave(kStageQueue, now(), tname_);
    if (watch_) {
        --watch_->outstanding;
        watch_->progress(now());
    }
    notifyDone(a);
}

void Accelerator::lookup(Txn* a) {
    a->leave(kStageCache, now(), tname_);
    const uint64_t L = a->addr;
    if (Mshr* mi = mshrs_.find(L)) {
        a->missed = true;
        mi->waiting.push_back(a);
        return;
    }
    CLine* fill = nullptr;
    CLine* c = find(L, &fill);
    const bool valid = c && c->st != MState::I;
    if (valid && !isWrite(a->kind)) {
        a->value = c->value;
        a->hit = !a->missed;
        c->lru = ++lruClock_;
        if (checker_) checker_->read(L, agent_, a->value, now());
        stats_.hits += !a->missed;
        complete(a);
        return;
    }
    if (valid && (c->st == MState::M || c->st == MState::E)) {
        if (c->st == MState::E) setState(*c, MState::M);
        c->value = a->value;
        c->lru = ++lruClock_;
        a->hit = !a->missed;
        if (checker_) checker_->write(L, agent_, a->value, now());
        stats_.hits += !a->missed;
        complete(a);
        return;
    }
    startMiss(a, valid ? c : nullptr, c ? nullptr : fill);
}

bool Accelerator::startMiss(Txn* a, CLine* present, CLine* fill) {
    const uint64_t L = a->addr;
    const bool write = isWrite(a->kind);
    Opc op = a->kind == Txn::LoadCurrent    ? Opc::RdCurr
             : a->kind == Txn::LoadAny      ? Opc::RdAny
             : a->kind == Txn::StoreNoAlloc ? Opc::ItoMWr
             : a->kind == Txn::StoreWrInv   ? Opc::WrInv
             : write                           ? Opc::RdOwn
                                               : Opc::RdShared;
    if (present && (op == Opc::ItoMWr || op == Opc::WrInv)) op = Opc::RdOwn;  // upgrade the cached copy instead
    const bool own = ownsMemory(L);
    const bool local = own && (ap_.hdm_db || deviceBias(L) || ap_.auto_bias_flip);
    const bool uncached = !local && (op == Opc::RdCurr || op == Opc::ItoMWr || op == Opc::WrInv);
    CLine* way = present;
    CLine* evict = nullptr;
    if (!uncached && !way) {
        way = fill ? fill : victim(L);
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
        Mshr& e = newMshr(evict->line);
        e.kind = Mshr::Evict;
        e.evictState = evict->st;
        e.value = evict->value;
        e.op = evict->st == MState::M ? Opc::DirtyEvict : Opc::CleanEvict;
        (evict->st == MState::M ? stats_.dirtyEvicts : stats_.cleanEvicts)++;
        // A clean victim is gone from the cache now: the home may hand the line
        // to another agent before its GO comes back (the copy kept for snoops
        // is never read). A dirty one is held until its data is pulled.
        if (evict->st != MState::M && checker_) checker_->state(evict->line, agent_, MState::I, now());
        const bool ownLine = ownsMemory(evict->line);
        if (ownLine && (ap_.hdm_db || deviceBias(evict->line))) {
            // Device memory the host does not track: write back locally.
            if (evict->st == MState::M) {
                memVals_[evict->line] = evict->value;
                mem_->write(evict->line - memBase_);
            }
            if (checker_) checker_->state(evict->line, agent_, MState::I, now());
            dropMshr(evict->line);
        } else {
            Txn* m = msg(e.op, evict->line);
            sendUp(m);
        }
        evict->st = MState::I;
    }
    Mshr& ms = newMshr(L);
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
        Txn* m = msg(op, L);
        if (op == Opc::ItoMWr || op == Opc::WrInv) m->value = a->value;
        sendUp(m, a);
        return true;
    }
    a->leave(kStageQueue, now(), tname_);
    if (ap_.hdm_db) {
        auto hc = hostCopy_.find(L);
        if (hc != hostCopy_.end()) {
            ms.biPending = true;
            ms.biInv = write || hc->second != MState::S;
            ++stats_.biSnps;
            sendUp(msg(ms.biInv ? Opc::BISnpInv : Opc::BISnpData, L));
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
            sendUp(msg(Opc::BiasFlipReq, page * ap_.bias_page_bytes));
        }
        return true;
    }
    localFill(L, a, ms);
    return true;
}

void Accelerator::install(uint64_t line, Mshr& ms) {
    if (ms.kind == Mshr::Uncached) {
        if (ms.op == Opc::RdCurr) {
            Txn* a = ms.waiting.front();
            a->value = ms.value;
            // RdCurr returns a snapshot without joining the coherence domain.
        }
        finishMshr(line, ms);
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
    finishMshr(line, ms);
}

void Accelerator::finishMshr(uint64_t line, Mshr& ms) {
    const SmallFifo<Txn*> waiting = std::move(ms.waiting);
    const SmallFifo<Txn*> snoops = std::move(ms.snoops);
    const bool uncached = ms.kind == Mshr::Uncached;
    const Opc op = ms.op;
    const uint64_t value = ms.value;
    dropMshr(line);
    bool first = true;
    for (Txn* a : waiting) {
        if (first && uncached) {
            first = false;
            if (op == Opc::RdCurr) a->value = value;
            complete(a);
            continue;
        }
        first = false;
        a->leave(kStageQueue, now(), tname_);
        lookup(a);  // cached now: performs as a hit, or misses again (e.g. a store to an S line)
    }
    for (Txn* m : snoops) {
        link_.credits_[m->channel()].give(now());
        snoop(m);
        pool_.put(m);
    }
    // Freed MSHRs let stalled accesses in.
    while (!stalled_.empty() && mshrs_.size() < cp_.mshrs) {
        Txn* a = stalled_.front();
        stalled_.pop_front();
        const size_t before = stalled_.size();
        a->leave(kStageQueue, now(), tname_);
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
        std::deque<Txn*> q = std::move(bl->second);
        memBlocked_.erase(bl);
        for (Txn* m : q) hostMemAccess(m);
    }
}

bool Accelerator::quiet() const {
    return mshrs_.empty() && stalled_.empty() && snoopQ_.empty() && pipe_.empty() && up_.queued() == 0 &&
           memBlocked_.empty() && later_.empty();
}

std::string Accelerator::describe() const {
    std::string s = "device " + std::to_string(index_) + ": " + std::to_string(mshrs_.size()) + " MSHRs";
    int n = 0;
    mshrs_.each([&](uint64_t line, const Mshr& m) {
        if (n++ >= 4) return;
        s += " [" + hexAddr(line) + " " + opName(m.op) + (m.biPending ? " waiting-bias/BI" : "") +
             (m.gotGo ? " GO" : "") + (m.gotData ? " data" : "") + "]";
    });
    s += ", " + std::to_string(stalled_.size()) + " stalled, " + std::to_string(memBlocked_.size()) +
         " host requests blocked;";
    return s;
}

void Accelerator::oldest(Oldest& o) const {
    mshrs_.each([&](uint64_t line, const Mshr& m) {
        for (const Txn* a : m.waiting)
            o.see(a->birth, [&] {
                return name_ + " MSHR of line " + hexAddr(line) + " (" + opName(m.op) +
                       (m.biPending ? ", waiting for a bias flip or BIRsp" : "") +
                       (m.gotGo ? ", GO received" : ", waiting for GO") +
                       (m.gotData ? ", data received)" : ", waiting for data)");
            });
    });
    for (const Txn* a : stalled_) o.see(a->birth, [&] { return name_ + " queue for an MSHR or cache way"; });
    up_.each([&](const Txn* m) {
        if (m->parent)
            o.see(m->parent->birth, [&] { return name_ + " link-up queue " + channelName(m->channel()) + " (no credit)"; });
    });
    for (auto& kv : memBlocked_)
        for (const Txn* m : kv.second)
            if (m->parent)
                o.see(m->parent->birth, [&] { return name_ + " device-memory queue of line " + hexAddr(kv.first); });
}

void Accelerator::snoop(Txn* m) {
    const uint64_t L = m->addr;
    ++stats_.snoopsRecv[snoopIndex(m->opc)];
    Opc rsp = Opc::RspIHitI;
    bool data = false;
    uint64_t value = 0;
    CLine* c = find(L);
    if (c && c->st != MState::I) {
        const MState s = c->st;
        value = c->value;
        if (m->opc == Opc::SnpCur) {
            rsp = s == MState::M ? Opc::RspVFwdV : Opc::RspVHitV;
            data = s == MState::M;
        } else if (m->opc == Opc::SnpData) {
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
            rsp = m->opc == Opc::SnpInv ? Opc::RspIHitSE : m->opc == Opc::SnpData ? Opc::RspSHitSE : Opc::RspVHitV;
            data = false;
        }
    } else {
        Mshr* it = mshrs_.find(L);
        if (it && it->kind == Mshr::Evict && !it->snooped && it->evictState != MState::I) {
            Mshr& e = *it;
            value = e.value;
            if (m->opc == Opc::SnpCur) {
                data = e.evictState == MState::M;
                rsp = data ? Opc::RspVFwdV : Opc::RspVHitV;
            } else {
                // An evicting line is read-only: give it up and mark the eviction's data bogus.
                data = e.evictState == MState::M;
                rsp = data ? Opc::RspIFwdM : Opc::RspIHitSE;
                e.snooped = true;
                if (checker_) checker_->state(L, agent_, MState::I, now());
            }
        }
    }
    Txn* r = msg(rsp, L);
    r->htxn = m->htxn;
    sendUp(r);
    if (data) {
        Txn* d = msg(Opc::D2HData, L);
        d->htxn = m->htxn;
        d->value = value;
        sendUp(d);
    }
}

void Accelerator::handle(Txn* m) {
    const uint64_t L = m->addr;
    if (m->parent) m->parent->leave(kStageLinkDown, now(), link_.name());
    switch (m->opc) {
        case Opc::SnpData:
        case Opc::SnpInv:
        case Opc::SnpCur:
            // Answered after the snoop pipeline; the H2D Req credit returns then.
            snoopQ_.push(now() + snoopLat_, m);
            return;
        case Opc::GO:
        case Opc::H2DData:
        case Opc::GO_WritePull: {
            link_.credits_[m->channel()].give(now());
            Mshr* it = mshrs_.find(L);
            if (!it) break;
            Mshr& ms = *it;
            if (ms.kind == Mshr::Evict) {
                if (m->opc == Opc::GO_WritePull) {
                    Txn* d = msg(Opc::D2HData, L);
                    d->value = ms.value;
                    d->bogus = ms.snooped;
                    if (bug_ == DropDirtyData) d->bogus = true;
                    if (ms.snooped) ++stats_.bogusData;
                    sendUp(d);
                }
                if (!ms.snooped && checker_) checker_->state(L, agent_, MState::I, now());
                finishMshr(L, ms);
                break;
            }
            if (m->opc == Opc::GO_WritePull) {
                // ItoMWr / WrInv: push the data; the write completes at GO.
                Txn* d = msg(Opc::D2HData, L);
                d->value = ms.waiting.front()->value;
                sendUp(d);
                finishMshr(L, ms);
                break;
            }
            if (m->opc == Opc::GO) {
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
        case Opc::BiasFlipDone:
            biasFlipDone(m);
            break;
        case Opc::BIRspI:
        case Opc::BIRspS:
            backInvalidateResponse(m);
            break;
        case Opc::MemRd:
        case Opc::MemRdFwd:
        case Opc::MemWr:
            link_.credits_[m->channel()].give(now());
            hostMemAccess(m);
            return;
        case Opc::IoMmioWr:  // doorbell
            dmaDoorbell(m);
            return;
        case Opc::IoCplD:
            dmaCompletion(m);
            break;
        default:
            break;
    }
    pool_.put(m);
}

void Accelerator::process() {
    const Tick now = this->now();
    while (inbox_.headReady() <= now) handle(inbox_.pop());
    while (snoopQ_.headReady() <= now) {
        Txn* m = snoopQ_.pop();
        if (bug_ == DropSnoops) {  // never answered, its credit never returned
            pool_.put(m);
            continue;
        }
        if (bug_ == DeferSnoops) {  // put off again and again
            snoopQ_.push(now + std::max<Tick>(snoopLat_, 1000), m);
            continue;
        }
        Mshr* it = mshrs_.find(m->addr);
        if (it && it->gotGo && it->kind != Mshr::Evict) {
            // The host already ordered our request first: answer after the fill.
            it->snoops.push_back(m);
            continue;
        }
        link_.credits_[m->channel()].give(now);
        snoop(m);
        pool_.put(m);
    }
    while (later_.headReady() <= now) run(later_.pop());
    while (pipe_.headReady() <= now) lookup(pipe_.pop());
    up_.pump();
    Tick next = std::min({inbox_.headReady(), snoopQ_.headReady(), later_.headReady(), pipe_.headReady()});
    if (next != kNever) requestWake(next);
}

}  // namespace cxlcore

namespace cxlcore {

void Accelerator::defer(Tick at, Later what, void* p, MState granted) {
    later_.push(at, Deferred{what, granted, p});
    requestWake(at);
}

void Accelerator::run(const Deferred& d) {
    switch (d.what) {
        case Later::LocalFill: {
            Txn* a = static_cast<Txn*>(d.p);
            mem_->read(a->addr - memBase_, this, a, kFillRead, a);
            return;
        }
        case Later::FwdFill: {
            Txn* a = static_cast<Txn*>(d.p);
            a->state = d.granted;
            mem_->read(a->addr - memBase_, this, a, kFwdFillRead, a);
            return;
        }
        case Later::MemServe: {
            Txn* m = static_cast<Txn*>(d.p);
            mem_->read(m->addr - memBase_, this, m, kServeRead, m->parent);
            return;
        }
        case Later::DmaFinish:
            dmaFinish(*static_cast<DmaJob*>(d.p));
            return;
        case Later::DmaDescriptor:
            dmaFetchDescriptor(static_cast<DmaJob*>(d.p));
            return;
    }
}

}  // namespace cxlcore
