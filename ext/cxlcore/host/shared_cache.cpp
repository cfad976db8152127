#include "cxlcore/host/shared_cache.hpp"

#include <algorithm>

namespace cxlcore {

SharedCache::SharedCache(Host& host, TxnPool& pool, const SharedCacheParams& p, uint8_t hostIndex,
                         const std::string& name, CoherenceChecker* checker)
    : Component(host), pool_(pool), p_(p), host_(hostIndex), name_(name),
      missName_(internName(name + ".shared_cache (MSHR: waiting for its grant)")),
      wbName_(internName(name + ".shared_cache (waiting for a write-back of the line)")),
      recallName_(internName(name + ".shared_cache (waiting for the home to take back device copies)")), checker_(checker),
      sets_(p.lines / p.ways), lines_(p.lines), hit_(nsToTicks(p.hit_ns)), snoopLat_(nsToTicks(p.snoop_ns)) {}

void SharedCache::addWindow(uint64_t base, uint64_t end, HostBridge* bridge) {
    windows_.push_back(Window{base, end, bridge});
    bridge->setAgent(this);
}

HostBridge* SharedCache::bridgeOf(uint64_t addr) const {
    for (const Window& w : windows_)
        if (addr >= w.base && addr < w.end) return w.bridge;
    protocolError(name_ + ": line " + hexAddr(addr) + " is in no shared window of the host");
}

SharedCache::Line* SharedCache::find(uint64_t line) {
    Line* s = &lines_[(line / kLineBytes) % sets_ * p_.ways];
    for (uint32_t w = 0; w < p_.ways; ++w)
        if (s[w].st != MState::I && s[w].line == line) return &s[w];
    if (home_) {
        Line* x = extra_.find(line);
        if (x && x->st != MState::I) return x;
    }
    return nullptr;
}

bool SharedCache::covers(uint64_t line) const {
    for (const Window& w : windows_)
        if (line >= w.base && line < w.end) return true;
    return false;
}

MState SharedCache::view(const Line& l) const {
    if (l.acc == MState::E) return MState::I;
    if (l.acc == MState::S && l.st != MState::I) return MState::S;
    return l.st;
}

void SharedCache::setAcc(Line& l, MState a) {
    const MState before = view(l);
    l.acc = a;
    if (checker_ && view(l) != before) checker_->state(key(l.line), host_, view(l), now());
}

void SharedCache::refresh(Line& l) {
    if (l.acc == MState::I) return;
    const MState h = home_->deviceHolding(l.line);
    if (h < l.acc) setAcc(l, h);
}

bool SharedCache::conflicts(Line& l, const Txn* a) {
    if (!home_ || l.acc == MState::I || a->htxn) return false;
    refresh(l);
    return a->kind == Txn::Store ? l.acc != MState::I : l.acc == MState::E;
}

void SharedCache::recallFor(Txn* a, uint64_t L) {
    Pending& p = pending_[L];
    p.waiting.push_back(a);
    a->at = recallName_;
    if (p.core) return;  // retried when the one out is done
    ++p.core;
    ++stats_.coreRecalls;
    home_->recall(L, a->kind == Txn::Store, false, nullptr);
}

void SharedCache::drain(uint64_t L, Tick t) {
    auto it = pending_.find(L);
    if (it == pending_.end()) return;
    std::vector<Txn*> v = std::move(it->second.waiting);
    it->second.waiting.clear();
    if (!it->second.core && !it->second.snoop) pending_.erase(it);
    for (Txn* a : v) tryAccess(a, t);  // one still blocked waits again
}

void SharedCache::lend(Txn* a, Line& c, Tick at, const Txn* read) {
    setAcc(c, a->kind == Txn::Store ? MState::E : std::max(c.acc, MState::S));
    c.stamp = ++clock_;
    // The device's request: its lookup here, and the read's path if it missed.
    if (Txn* p = a->htxn->parent) {
        if (read) p->absorb(*read, kStageCache, at, missName_);
        else p->leave(kStageCache, at, missName_);
    }
    home_->sharedGranted(a->htxn, c.value, at);
    pool_.put(a);
}

void SharedCache::homeRead(HTxn* h, uint64_t L, bool own) {
    Txn* a = pool_.get();
    a->kind = own ? Txn::Store : Txn::Load;
    a->htxn = h;
    a->hostAddr = L;
    a->internal = true;
    a->birth = a->mark = now();
    ++stats_.homeReads;
    tryAccess(a, now());
}

void SharedCache::homeWrite(uint64_t L, uint64_t value) {
    Line* l = find(L);
    if (!l || l->st == MState::S)
        protocolError(name_ + ": dirty data from a device cache for line " + hexAddr(L) + ", which the host does not own");
    l->value = value;
    if (l->st != MState::M) setState(*l, MState::M);
}

void SharedCache::recalled(uint64_t L, void* tag, bool) {
    events_.push(now(), Ev{kRecalled, static_cast<Txn*>(tag), L});
    requestWake(now());
}

uint64_t SharedCache::key(uint64_t addr) const {
    for (const Window& w : windows_)
        if (addr >= w.base && addr < w.end) return addr - w.base;
    return addr;
}

void SharedCache::setState(Line& l, MState s) {
    l.st = s;
    if (checker_) checker_->state(key(l.line), host_, view(l), now());
}

void SharedCache::perform(Txn* a, Line& l, Tick t) {
    l.stamp = ++clock_;
    if (a->kind == Txn::Store) {
        if (l.st != MState::M) setState(l, MState::M);
        l.value = a->value;
        if (checker_) checker_->write(key(l.line), host_, l.value, t);
    } else {
        a->value = l.value;
        if (checker_) checker_->read(key(l.line), host_, l.value, t);
    }
}

void SharedCache::access(Txn* a) {
    const Tick t = now();
    ++(a->kind == Txn::Store ? stats_.stores : stats_.loads);
    a->mark = t;
    tryAccess(a, t);
}

void SharedCache::tryAccess(Txn* a, Tick t) {
    const uint64_t L = lineOf(a->hostAddr);
    if (home_ && !pending_.empty()) {
        auto p = pending_.find(L);
        if (p != pending_.end() && (p->second.snoop || (!a->htxn && p->second.core))) {
            p->second.waiting.push_back(a);
            a->at = recallName_;
            return;
        }
    }
    Line* l = find(L);
    const bool hit = l && (a->kind != Txn::Store || l->st == MState::E || l->st == MState::M);
    if (hit && !mshrs_.find(L)) {
        if (conflicts(*l, a)) {
            recallFor(a, L);
            return;
        }
        if (a->htxn) {
            lend(a, *l, t + hit_);
            return;
        }
        ++stats_.hits;
        perform(a, *l, t);
        a->leave(kStageCache, t + hit_, missName_);
        events_.push(t + hit_, Ev{kDone, a});
        requestWake(t + hit_);
        return;
    }
    ++(a->htxn ? stats_.homeMisses : stats_.misses);
    stats_.upgrades += l != nullptr && !mshrs_.find(L);
    miss(a, L);
}

void SharedCache::miss(Txn* a, uint64_t L) {
    bool made = false;
    Mshr& m = mshrs_.get(L, &made);
    m.waiting.push_back(a);
    a->at = missName_;
    if (!made) return;  // behind the read already out for the line
    m.want = a->kind == Txn::Store ? MState::E : MState::S;
    const uint32_t* wb = wb_.find(L);
    if (wb && *wb) {
        a->at = wbName_;
        return;  // sent when the write-back completes
    }
    m.sent = true;
    sendRead(L, m.want, now() + hit_);
}

void SharedCache::sendRead(uint64_t L, MState want, Tick at) {
    Txn* r = pool_.get();
    r->opc = Opc::MemRd;
    r->addr = r->hostAddr = L;
    r->state = want;
    r->src = host_;
    r->internal = true;
    r->birth = r->mark = at;
    if (!unsent_.empty() || !down_->tryReq(r)) unsent_.push_back(r);
}

void SharedCache::retryReq() {
    while (!unsent_.empty()) {
        if (!down_->tryReq(unsent_.front())) return;
        unsent_.erase(unsent_.begin());
    }
}

bool SharedCache::tryResp(Txn* t) {
    // t->mark: when the response reaches this cache.
    events_.push(t->mark, Ev{kFill, t});
    requestWake(t->mark);
    return true;
}

void SharedCache::snooped(Txn* snp, Tick at) {
    events_.push(at, Ev{kSnoop, snp});
    requestWake(at);
}

void SharedCache::written(Txn* cmp, Tick at) {
    events_.push(at, Ev{kWritten, cmp});
    requestWake(at);
}

void SharedCache::writeBack(uint64_t L, uint64_t value, MState after, Txn* snoop, Tick t) {
    Txn* w = pool_.get();
    w->opc = Opc::MemWr;
    w->addr = w->hostAddr = L;
    w->value = value;
    w->state = after;  // what this host keeps: the device's filter learns it
    w->src = host_;
    w->host = host_;
    w->route = kCoherentRoute;
    w->internal = true;
    w->birth = w->mark = t;
    ++wb_.get(L);
    if (snoop) {
        ++stats_.snoopWritebacks;
        wbSnoops_[L].push_back(snoop);
    } else {
        ++stats_.writebacks;
    }
    bridgeOf(L)->sendCoherent(w, t);
}

void SharedCache::fill(Txn* r, Tick t) {
    const uint64_t L = r->addr;
    Mshr* mp = mshrs_.find(L);
    if (!mp || !mp->sent) protocolError(name_ + ": a grant for line " + hexAddr(L) + " that no read of it asked for");
    if (r->state != MState::S && r->state != MState::E)
        protocolError(name_ + ": line " + hexAddr(L) + " granted in state " + stateName(r->state));
    uint32_t& last = lastSeq_.get(L);
    last = std::max(last, r->seq);
    Line* l = find(L);
    if (!l) {
        // The set's least recently used line without a read of its own out; a
        // dirty one is written back.
        Line* s = &lines_[(L / kLineBytes) % sets_ * p_.ways];
        for (uint32_t w = 0; w < p_.ways; ++w) {
            Line& c = s[w];
            if (c.st == MState::I) {
                l = &c;
                break;
            }
            if (c.acc != MState::I) {  // the device caches may hold it: it stays
                refresh(c);
                if (c.acc != MState::I) continue;
            }
            if (!mshrs_.find(c.line) && (!l || c.stamp < l->stamp)) l = &c;
        }
        if (!l && home_) {
            // Lent to the home, the line must stay (inclusion): held beside the sets.
            for (const Txn* a : mp->waiting)
                if (a->htxn) {
                    l = &extra_.get(L);
                    *l = Line{};
                    break;
                }
        }
        if (l && l->st != MState::I) {
            if (l->st == MState::M) writeBack(l->line, l->value, MState::I, nullptr, t);
            setState(*l, MState::I);
        }
        if (l) l->line = L;
    }
    Line spill;  // every way has a read out: the grant serves its accesses and is not kept
    Line& c = l ? *l : spill;
    if (!l) c.line = L;
    c.value = r->value;
    if (l) setState(c, r->state);
    else c.st = r->state;
    Mshr m = std::move(*mp);
    mshrs_.erase(L);
    size_t i = 0;
    for (; i < m.waiting.size(); ++i) {
        Txn* a = m.waiting[i];
        if (a->kind == Txn::Store && c.st == MState::S) break;  // ownership still to get
        if (a->htxn) {
            lend(a, c, t, r);
            continue;
        }
        if (conflicts(c, a)) {  // behind a read the home lent the line for
            recallFor(a, L);
            continue;
        }
        if (!l && checker_) checker_->state(key(L), host_, c.st, t);
        perform(a, c, t);
        if (!l && checker_) checker_->state(key(L), host_, MState::I, t);
        // The read's path is the access's: its stages (back-invalidates included) become the access's.
        a->absorb(*r, kStageCache, t, missName_);
        events_.push(t, Ev{kDone, a});
    }
    pool_.put(r);
    requestWake(t);
    if (!l && c.st == MState::M) writeBack(L, c.value, MState::I, nullptr, t);
    if (i < m.waiting.size()) {  // a store behind a shared grant: a read for ownership
        Mshr& n = mshrs_.get(L);
        n.waiting.assign(m.waiting.begin() + long(i), m.waiting.end());
        n.want = MState::E;
        n.sent = true;
        ++stats_.upgrades;
        sendRead(L, MState::E, t);
    }
    for (Txn* s : m.snoops) snoop(s, t);
}

void SharedCache::answer(Txn* s, MState kept, Tick t) {
    s->opc = kept == MState::S ? Opc::BIRspS : Opc::BIRspI;
    s->host = host_;
    s->birth = s->mark = t;
    bridgeOf(s->addr)->sendCoherent(s, t);
}

void SharedCache::snoop(Txn* s, Tick t) {
    const uint64_t L = s->addr;
    const uint32_t* last = lastSeq_.find(L);
    if (s->seq > (last ? *last : 0)) {
        // The grant it names is on its way: answer once it is here.
        Mshr* m = mshrs_.find(L);
        if (!m || !m->sent)
            protocolError(name_ + ": BISnp for line " + hexAddr(L) + " names grant " + std::to_string(s->seq) +
                          ", which no read of the line awaits");
        ++stats_.snoopsDeferred;
        m->snoops.push_back(s);
        return;
    }
    const uint32_t* wb = wb_.find(L);
    if (wb && *wb) {
        ++stats_.snoopsDeferred;
        deferred_[L].push_back(s);
        return;
    }
    const bool inv = s->opc == Opc::BISnpInv;
    if (home_) {
        // The device caches' copies are the host's too: the home takes them back first.
        const MState dh = home_->deviceHolding(L);
        if (dh == MState::E || (inv && dh != MState::I)) {
            ++stats_.snoopRecalls;
            ++pending_[L].snoop;
            home_->recall(L, inv, true, s);
            return;
        }
    }
    snoopLocal(s, t);
}

void SharedCache::snoopLocal(Txn* s, Tick t) {
    const uint64_t L = s->addr;
    const bool inv = s->opc == Opc::BISnpInv;
    Line* l = find(L);
    if (!l) return answer(s, MState::I, t + snoopLat_);
    ++stats_.snoopHits;
    const MState after = inv ? MState::I : MState::S;
    if (l->st == MState::M) {
        const uint64_t v = l->value;
        setState(*l, after);
        writeBack(L, v, after, s, t + snoopLat_);
        return;
    }
    if (inv || l->st != MState::S) setState(*l, after);
    answer(s, after, t + snoopLat_);
}

std::string SharedCache::describe() const {
    std::string s = name_ + ".shared_cache: " + std::to_string(mshrs_.size()) + " reads out, " +
                    std::to_string(unsent_.size()) + " unsent";
    int n = 0;
    mshrs_.each([&](uint64_t x, const Mshr& m) {
        if (n++ >= 6) return;
        uint32_t marks = 0;
        for (const Txn* a : m.waiting) marks += a->htxn != nullptr;
        s += " [" + hexAddr(x) + " want " + stateName(m.want) + (m.sent ? " sent" : " held") + ", " +
             std::to_string(m.waiting.size()) + " waiting (" + std::to_string(marks) + " for the home), " +
             std::to_string(m.snoops.size()) + " snoops]";
    });
    for (const auto& p : pending_)
        s += " {" + hexAddr(p.first) + " recalls: core " + std::to_string(p.second.core) + ", snoop " +
             std::to_string(p.second.snoop) + ", " + std::to_string(p.second.waiting.size()) + " waiting}";
    for (const auto& d : deferred_)
        if (!d.second.empty()) s += " <" + hexAddr(d.first) + ": " + std::to_string(d.second.size()) + " snoops behind a write-back>";
    return s;
}

void SharedCache::process() {
    const Tick t = now();
    while (!events_.empty() && events_.headReady() <= t) {
        const Ev e = events_.pop();
        switch (e.kind) {
            case kDone:
                e.t->done = t;
                notifyDone(e.t);
                break;
            case kFill:
                fill(e.t, t);
                break;
            case kSnoop:
                ++stats_.snoops;
                snoop(e.t, t);
                break;
            case kRecalled: {
                const uint64_t L = e.line;
                Pending& p = pending_[L];
                Line* l = find(L);
                if (e.t) {
                    // A BISnp's: no device copy is lent again before it is answered.
                    --p.snoop;
                    if (l) setAcc(*l, std::min(l->acc, e.t->opc == Opc::BISnpInv ? MState::I : MState::S));
                    snoopLocal(e.t, t);
                } else {
                    --p.core;
                    if (l) refresh(*l);
                }
                drain(L, t);
                break;
            }
            case kWritten: {
                const uint64_t L = e.t->addr;
                pool_.put(e.t);
                uint32_t& n = wb_.get(L);
                if (n) --n;
                auto it = wbSnoops_.find(L);
                if (it != wbSnoops_.end() && !it->second.empty()) {
                    Txn* s = it->second.front();
                    it->second.erase(it->second.begin());
                    answer(s, s->opc == Opc::BISnpInv ? MState::I : MState::S, t);
                }
                if (n) break;
                wb_.erase(L);
                Mshr* m = mshrs_.find(L);
                if (m && !m->sent) {  // a read held back behind the write
                    m->sent = true;
                    for (Txn* a : m->waiting) a->at = missName_;
                    sendRead(L, m->want, t);
                }
                auto d = deferred_.find(L);
                if (d != deferred_.end()) {
                    std::vector<Txn*> v = std::move(d->second);
                    deferred_.erase(d);
                    for (Txn* s : v) snoop(s, t);
                }
                break;
            }
        }
    }
    if (!events_.empty()) requestWake(events_.headReady());
}

}  // namespace cxlcore
