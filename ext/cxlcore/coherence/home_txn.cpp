// A home transaction's life: queued at its line (or, for a bias flip, its
// page), started (snoops, memory reads), finished (grants, state updates),
// and the line released to the next waiter.
#include "cxlcore/coherence/home_agent.hpp"

#include <algorithm>

namespace cxlcore {

void HomeAgent::enqueue(HTxn* t) {
    if (t->opc == Opc::BiasFlipReq) {
        // A flip covers a whole page: it starts once no line of the page is busy.
        if (pageBusy(t)) {
            deferredFlips_.push_back(t);
            return;
        }
        start(t);
        return;
    }
    HLine& l = line(t->line);
    t->hl = &l;
    if (!l.active && !lockedPages_.empty()) {
        // A line of a page being flipped waits for the flip.
        auto lp = lockedPages_.find(pageOf(t->line, memOwner(t->line)));
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
        const HLine& h = *lines_.find(x);
        if (h.active || !h.wait.empty()) return true;
    }
    return false;
}

void HomeAgent::snoop(HTxn* t, uint16_t dev, Opc op, uint64_t line) {
    Txn* m = msg(op, line);
    m->htxn = t;
    ++t->snoopsOut;
    ++stats_.snoops[snoopIndex(op)];
    sendDown(dev, m);
}

void HomeAgent::start(HTxn* t) {
    const uint64_t L = t->line;
    const int d = t->dev;
    if (t->parent) t->parent->leave(kStageQueue, now(), name_);
    ++stats_.requests[int(t->opc)];
    if (t->opc == Opc::BiasFlipReq) {
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
                HLine& h = *lines_.find(x);
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
    if (shared_ && t->dev >= 0 && !t->granted && t->opc != Opc::CleanEvict && t->opc != Opc::DirtyEvict &&
        shared_->covers(L)) {
        // Phase A: the host's shared cache gets the line first; nothing is
        // snooped until it has (a device's BISnp meanwhile runs beside).
        if (t->opc != Opc::RdShared && t->opc != Opc::RdAny && t->opc != Opc::RdOwn)
            protocolError(std::string(opName(t->opc)) + " of line " + hexAddr(L) +
                          ", a shared device's line, is not modelled (allowed: RdShared, RdAny, RdOwn and evictions)");
        line(t, L).active = t;
        t->phaseA = true;
        shared_->homeRead(t, L, t->opc == Opc::RdOwn);
        return;
    }
    proceed(t);
}

void HomeAgent::sharedGranted(HTxn* t, uint64_t value, Tick at) {
    // The grant is the home's at once (a recall from now on waits behind
    // the transaction); its work starts at `at` (after the cache's lookup).
    t->phaseA = false;
    t->granted = true;
    t->memValue = value;
    t->memHave = true;
    defer(at, Later::Proceed, t);
}

void HomeAgent::recall(uint64_t L, bool inv, bool urgent, void* tag) {
    HTxn* t = txns_.get();
    t->opc = inv ? Opc::BISnpInv : Opc::BISnpData;
    t->line = L;
    t->recall = true;
    t->urgent = urgent;
    t->tag = tag;
    // Placed after this event: the cache that asked is not re-entered.
    defer(now(), Later::Recall, t);
}

void HomeAgent::placeRecall(HTxn* t) {
    HLine& l = line(t->line);
    t->hl = &l;
    if (!l.active) {
        start(t);
    } else if (!t->urgent) {
        l.wait.push_back(t);
        ++stats_.conflicts;
    } else if (l.active->phaseA) {
        t->side = true;
        start(t);
    } else {
        // Next, before the requests queued at the line (they may wait for the shared cache).
        SmallFifo<HTxn*> q;
        q.push_back(t);
        for (HTxn* w : l.wait) q.push_back(w);
        l.wait = std::move(q);
    }
}

MState HomeAgent::deviceHolding(uint64_t L) const {
    const HLine* l = lines_.find(L);
    if (!l) return MState::I;
    if (l->owner >= 0 || l->active || !l->wait.empty()) return MState::E;
    return l->sharers ? MState::S : MState::I;
}

void HomeAgent::proceed(HTxn* t) {
    const uint64_t L = t->line;
    const int d = t->dev;
    HLine& l = line(t, L);
    if (!t->side) l.active = t;
    Accelerator* owner = memOwner(L);
    const bool fwd = d >= 0 && owner == ports_[d].dev;  // a Type-2 device's own memory in host bias
    switch (t->opc) {
        case Opc::RdShared:
        case Opc::RdAny:
        case Opc::RdCurr: {
            if (l.owner >= 0 && l.owner != d) {
                snoop(t, uint16_t(l.owner), t->opc == Opc::RdCurr ? Opc::SnpCur : Opc::SnpData, L);
                t->snoopedCur = t->opc == Opc::RdCurr;
            }
            if (l.host != MState::I) {
                t->value = l.value;
                t->haveData = true;
                if (l.host == MState::M && t->opc != Opc::RdCurr && d >= 0) {
                    memWrite(L, l.value);
                    setHost(l, L, MState::S);
                }
            } else if (!fwd || t->opc == Opc::RdCurr) {
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
                if (t->opc == Opc::RdOwn) {
                    t->value = l.value;
                    t->haveData = true;
                    t->dirty = l.host == MState::M && d >= 0;
                }
                if (d >= 0) setHost(l, L, MState::I);
            }
            // Device memory (HDM-DB directory or device-bias page) must hear of
            // every new owner, even when the data comes from elsewhere.
            if (!fwd && ((t->opc == Opc::RdOwn && !t->haveData) || owner)) memRead(t);
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
                defer(now() + hostHit_, Later::DataDone, t);
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
            Txn* m = msg(Opc::GO_WritePull, L);
            m->htxn = t;
            sendDown(uint16_t(d), m);
            t->dataOut = 1;
            return;
        }
        case Opc::BISnpData:
        case Opc::BISnpInv: {
            ++stats_.biSnps;
            for (uint32_t k = 0; k < numDevs_; ++k)
                if (int(k) != d && (l.sharers >> k & 1))
                    snoop(t, uint16_t(k), t->opc == Opc::BISnpInv ? Opc::SnpInv : Opc::SnpData, L);
            if (l.host == MState::M) memWrite(L, l.value);
            if (l.host != MState::I) setHost(l, L, t->opc == Opc::BISnpInv ? MState::I : MState::S);
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
        HLine& h = *lines_.find(x);
        if (h.host == MState::M) memWrite(x, h.value, t);
        setHost(h, x, MState::I);
    }
    stats_.flushedLines += lines.size();
    const Tick at = now() + Tick(lines.size()) * hostHit_;
    ++t->dataOut;
    defer(at, Later::DataDone, t);
}

void HomeAgent::maybeFinish(HTxn* t) {
    if (t->snoopsOut || t->memOut || t->dataOut) return;
    if (t->opc == Opc::BiasFlipReq && !t->haveData) {
        // The flip's own cost (bias table update and handshake), with the page still locked.
        t->haveData = true;
        t->dataOut = 1;
        defer(now() + ports_[t->dev].dev->flipLat_, Later::DataDone, t);
        return;
    }
    if ((t->opc == Opc::ItoMWr || t->opc == Opc::WrInv) && !t->haveData) {
        // Snoops done: the write is ordered; pull its data.
        if (t->parent) t->parent->leave(kStageSnoop, now(), name_);
        Txn* m = msg(Opc::GO_WritePull, t->line);
        m->htxn = t;
        m->parent = t->parent;
        sendDown(uint16_t(t->dev), m);
        t->dataOut = 1;
        t->haveData = true;
        return;
    }
    finish(t);
}

void HomeAgent::release(uint64_t line, HLine* entry) {
    HLine* it = entry ? entry : lines_.find(line);
    if (!it) return;
    HLine& l = *it;
    l.active = nullptr;
    if (!l.wait.empty()) {
        HTxn* n = l.wait.front();
        l.wait.pop_front();
        start(n);
    } else if (l.sharers == 0 && l.owner < 0 && l.host == MState::I) {
        forget(line);
    }
}

void HomeAgent::finish(HTxn* t) {
    const uint64_t L = t->line;
    const int d = t->dev;
    const Opc op = t->opc;
    // Data: a forwarded dirty copy or the host's copy beats memory.
    if (!t->haveData && t->memHave) {
        t->value = t->memValue;
        t->haveData = true;
        // After SnpCur a clean owner keeps E and may write at once: RdCurr's
        // snapshot is as of the snoop, so later writes do not make it stale.
        if (checker_ && !t->snoopedCur && !t->granted) checker_->memory(L, t->value, now());
    }
    HLine& l = line(t, L);
    const bool fwd = d >= 0 && memOwner(L) == ports_[d].dev && op != Opc::RdCurr && op != Opc::IoMemRd;
    // Dirty data handed to a new holder is written back first, so a later
    // clean eviction loses nothing. (A snapshot read leaves the owner dirty.)
    if (t->dirty && op != Opc::RdCurr && op != Opc::DirtyEvict && op != Opc::IoMemRd) memWrite(L, t->value);
    auto grant = [&](MState s) {
        if (fwd) {
            Txn* m = msg(Opc::MemRdFwd, L);
            m->state = s;
            m->parent = t->parent;
            sendDown(uint16_t(d), m);
            return;
        }
        Txn* g = msg(Opc::GO, L);
        g->state = s;
        sendDown(uint16_t(d), g);
        Txn* m = msg(Opc::H2DData, L);
        m->value = t->value;
        m->parent = t->parent;
        sendDown(uint16_t(d), m);
    };
    switch (op) {
        case Opc::RdShared:
        case Opc::RdAny:
            if (d < 0) {
                l.value = t->value;
                if (l.host == MState::I) setHost(l, L, MState::S);
                t->parent->value = t->value;
                if (checker_) checker_->read(L, numDevs_, t->value, now());
            } else {
                // Device memory may be cached by its device out of the host's
                // sight, so only host memory can be granted exclusive here.
                const bool alone = (l.sharers & ~(1u << d)) == 0 && l.host == MState::I && l.owner < 0 && !memOwner(L) &&
                                   !t->granted;  // a shared line: the host asked the device for S
                const MState s = (op == Opc::RdAny && alone) ? MState::E : MState::S;
                setSharers(l, L, l.sharers | 1u << d);
                if (s == MState::E) l.owner = d;
                grant(s);
            }
            break;
        case Opc::RdCurr: {
            Txn* m = msg(Opc::H2DData, L);
            m->value = t->value;
            m->parent = t->parent;
            sendDown(uint16_t(d), m);
            break;
        }
        case Opc::RdOwn:
            setSharers(l, L, d < 0 ? 0u : 1u << d);
            l.owner = -1;
            if (d < 0) {
                l.value = t->parent->value;
                setHost(l, L, MState::M);
                if (checker_) checker_->write(L, numDevs_, t->parent->value, now());
            } else {
                l.owner = d;
                grant(MState::E);
            }
            break;
        case Opc::CleanEvict: {
            setSharers(l, L, l.sharers & ~(1u << d));
            if (l.owner == d) l.owner = -1;
            Txn* g = msg(Opc::GO, L);
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
            if (t->recall) {
                shared_->recalled(L, t->tag, l.sharers != 0);
                break;
            }
            // Shared if anything on the host side (its caches or peer devices) kept a copy.
            sendDown(uint16_t(d), msg(l.host == MState::S || l.sharers ? Opc::BIRspS : Opc::BIRspI, L));
            ports_[d].link->credits_[kS2MBISnp].give(now());
            break;
        case Opc::IoMemRd:
            if (checker_ && !t->snoopedCur) checker_->memory(L, t->value, now());
            break;
        case Opc::BiasFlipReq:
            sendDown(uint16_t(d), msg(Opc::BiasFlipDone, L));
            break;
        default:
            break;
    }
    // Device requests hold a tracker entry (their D2H Req credit) until here.
    if (t->req) {
        ports_[t->req->dev].link->credits_[kD2HReq].give(now());
        pool_.put(t->req);
        t->req = nullptr;
        --tracker_;
    }
    Txn* hostAcc = d < 0 ? t->parent : nullptr;
    const bool side = t->side;
    if (t->io) ioLineDone(t);
    txns_.put(t);
    if (watch_) watch_->progress(now());
    if (op == Opc::BiasFlipReq) {
        lockedPages_.erase(L);
        std::vector<uint64_t> held;
        auto pl = pageLines_.find(L);
        if (pl != pageLines_.end())
            for (uint64_t x : pl->second)
                if (lines_.find(x)->active == t) held.push_back(x);
        std::sort(held.begin(), held.end());
        for (uint64_t x : held) release(x);
    } else if (!side) {
        release(L, &l);  // l is still there: the transaction held it until now
    }
    if (!deferredFlips_.empty()) {
        std::deque<HTxn*> q;
        q.swap(deferredFlips_);
        for (HTxn* f : q) enqueue(f);
    }
    if (hostAcc) finishAccess(hostAcc);
}

}  // namespace cxlcore
