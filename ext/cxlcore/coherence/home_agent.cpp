#include "cxlcore/coherence/home_agent.hpp"

#include <algorithm>

namespace cxlcore {

HomeAgent::HomeAgent(Host& host, const HomeParams& p, Target& memory, TxnPool& pool, CoherenceChecker* checker)
    : Endpoint(host), p_(p), pool_(pool), checker_(checker), mem_(host, memory, pool) {
    ports_.reserve(16);
    lat_ = nsToTicks(p_.latency_ns);
    hostHit_ = nsToTicks(p_.host_hit_ns);
    hostCap_ = size_t(p_.host_cache_bytes / kLineBytes);
}

void HomeAgent::addDevice(Accelerator* d, CxlLink* link, const DmaParams& dp) {
    ports_.push_back(Port{d, link, Wire(), dp});
    numDevs_ = uint32_t(ports_.size());
    deviceMemory_ = deviceMemory_ || d->memBytes() != 0;
    // Host-to-device traffic leaves in order: a snoop never passes a GO.
    // Every port is (re)wired: the vector may have moved them.
    for (auto& p : ports_) p.down.init(p.link, this, p.dev, true);
}

Txn* HomeAgent::msg(Opc op, uint64_t line) {
    Txn* m = pool_.get();
    m->opc = op;
    m->addr = line;
    return m;
}

void HomeAgent::sendDown(uint16_t dev, Txn* m) { ports_[dev].down.send(m); }

HomeAgent::HLine& HomeAgent::line(uint64_t x) {
    bool made;
    HLine& l = lines_.get(x, &made);
    if (made) {
        l.x = x;
        if (const Accelerator* o = memOwner(x)) pageLines_[pageOf(x, o)].insert(x);
        stats_.maxLineStates = std::max(stats_.maxLineStates, lines_.size());
    }
    return l;
}

void HomeAgent::forget(uint64_t x) {
    if (const Accelerator* o = memOwner(x)) {
        auto p = pageLines_.find(pageOf(x, o));
        p->second.erase(x);
        if (p->second.empty()) pageLines_.erase(p);
    }
    lines_.erase(x);
}

void HomeAgent::lruAppend(HLine& l) {
    l.lruPrev = lruTail_;
    l.lruNext = nullptr;
    (lruTail_ ? lruTail_->lruNext : lruHead_) = &l;
    lruTail_ = &l;
    ++hostLines_;
}

void HomeAgent::lruUnlink(HLine& l) {
    (l.lruPrev ? l.lruPrev->lruNext : lruHead_) = l.lruNext;
    (l.lruNext ? l.lruNext->lruPrev : lruTail_) = l.lruPrev;
    l.lruPrev = l.lruNext = nullptr;
    --hostLines_;
}

void HomeAgent::finishAccess(Txn* a) {
    a->done = now();
    if (watch_) {
        --watch_->outstanding;
        watch_->progress(now());
    }
    notifyDone(a);
}

uint64_t HomeAgent::hostDirtyLines() const {
    uint64_t n = 0;
    for (const HLine* l = lruHead_; l; l = l->lruNext) n += l->host == MState::M;
    return n;
}

void HomeAgent::oldest(Oldest& o) const {
    lines_.each([&](uint64_t x, const HLine& l) {
        auto see = [&](const HTxn* t, const char* where) {
            const Tick at = t->parent ? t->parent->birth : t->opc == Opc::IoMemRd ? t->birth : kNever;
            o.see(at, [&] {
                return std::string("home ") + where + " of line " + hexAddr(x) + " (" + opName(t->opc) + " from " +
                       (t->dev < 0 ? std::string("a host core") : ports_[size_t(t->dev)].dev->name()) + ", " +
                       std::to_string(t->snoopsOut) + " snoop responses and " + std::to_string(t->dataOut) +
                       " data outstanding" + (t->memOut ? ", memory read outstanding)" : ")");
            });
        };
        if (l.active) see(l.active, "transaction");
        for (const HTxn* t : l.wait) see(t, "line queue");
    });
    for (size_t i = 0; i < ports_.size(); ++i)
        ports_[i].down.each([&](const Txn* m) {
            if (m->parent)
                o.see(m->parent->birth, [&] {
                    return "home link-down queue to " + ports_[i].dev->name() + " " + channelName(m->channel()) +
                           " (no credit)";
                });
        });
}

bool HomeAgent::quiet() const {
    for (auto& p : ports_)
        if (p.down.queued()) return false;
    return tracker_ == 0 && later_.empty() && mem_.pending() == 0;
}

std::string HomeAgent::describe() const {
    std::string s = "home: " + std::to_string(tracker_) + " tracker entries, " +
                     std::to_string(deferredFlips_.size()) + " deferred flips";
    int n = 0;
    lines_.each([&](uint64_t x, const HLine& l) {
        if (!l.active || n++ >= 6) return;
        const HTxn* t = l.active;
        s += " [" + hexAddr(x) + " " + opName(t->opc) + " dev " + std::to_string(t->dev) + " snoops " +
             std::to_string(t->snoopsOut) + " mem " + std::to_string(t->memOut) + " data " + std::to_string(t->dataOut) +
             " waiting " + std::to_string(l.wait.size()) + "]";
    });
    return s;
}

void HomeAgent::setHost(HLine& l, uint64_t line, MState s) {
    const MState was = l.host;
    l.host = s;
    if (s == MState::M && was != MState::M) ++stats_.hostDirtied;
    if (checker_) checker_->state(line, numDevs_, s, now());
    if (was == MState::I && s != MState::I) {
        lruAppend(l);
        if (hostLines_ > hostCap_) hostEvict();
        stats_.maxHostLines = std::max(stats_.maxHostLines, hostLines_);
    } else if (was != MState::I && s == MState::I) {
        lruUnlink(l);
    }
}

void HomeAgent::hostEvict() {
    // The least recently used line no request is at leaves the host's caches;
    // a dirty one is written back through the home.
    for (HLine* v = lruHead_; v; v = v->lruNext) {
        HLine& h = *v;
        if (h.active || !h.wait.empty()) continue;
        const uint64_t x = h.x;
        ++stats_.hostEvictions;
        if (h.host == MState::M) {
            ++stats_.hostWritebacks;
            memWrite(x, h.value);
        }
        setHost(h, x, MState::I);
        if (!h.sharers && h.owner < 0) forget(x);
        return;
    }
}

Accelerator* HomeAgent::memOwner(uint64_t line) const {
    if (!deviceMemory_) return nullptr;
    for (auto& p : ports_)
        if (p.dev->ownsMemory(line)) return p.dev;
    return nullptr;
}

void HomeAgent::hostAccess(Txn* a) {
    if (trace_) a->trace = trace_->admit(*a);
    a->mark = now();
    a->src = numDevs_;
    if (watch_) ++watch_->outstanding;
    HLine* it = lines_.find(a->addr);
    const MState hs = it ? it->host : MState::I;
    const bool write = isWrite(a->kind);
    if ((!write && hs != MState::I) || (write && hs == MState::M)) {
        HLine& l = *it;
        lruUnlink(l);
        lruAppend(l);
        if (write) {
            l.value = a->value;
            if (checker_) checker_->write(a->addr, numDevs_, a->value, now());
        } else {
            a->value = l.value;
            if (checker_) checker_->read(a->addr, numDevs_, a->value, now());
        }
        a->hit = true;
        ++stats_.hostHits;
        defer(now() + hostHit_, Later::HostHit, a);
        return;
    }
    ++stats_.hostMisses;
    HTxn* t = txns_.get();
    t->opc = write ? Opc::RdOwn : Opc::RdShared;
    t->dev = -1;
    t->line = a->addr;
    t->parent = a;
    defer(now() + hostHit_ + lat_, Later::Enqueue, t);
}

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

void HomeAgent::memRead(HTxn* t) {
    t->memOut = true;
    ++stats_.memReads;
    const uint64_t L = t->line;
    Accelerator* owner = memOwner(L);
    if (owner) {
        Txn* m = msg(Opc::MemRd, L);
        m->htxn = t;
        m->parent = t->parent;
        // The host asks for an exclusive copy when it will write.
        m->state = (t->opc == Opc::RdOwn || t->opc == Opc::ItoMWr || t->opc == Opc::WrInv) ? MState::M : MState::S;
        sendDown(owner->index(), m);
        return;
    }
    mem_.read(L, this, t, 0, t->parent);
}

void HomeAgent::memWrite(uint64_t line, uint64_t value, HTxn* waiter) {
    ++stats_.memWrites;
    Accelerator* owner = memOwner(line);
    if (owner) {
        Txn* m = msg(Opc::MemWr, line);
        m->value = value;
        if (waiter) {
            // The waiter completes when the device's Cmp is back.
            m->htxn = waiter;
            ++waiter->dataOut;
        }
        sendDown(owner->index(), m);
        return;
    }
    values_[line] = value;
    mem_.write(line);
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
    HLine& l = line(t, L);
    l.active = t;
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
        if (checker_ && !t->snoopedCur) checker_->memory(L, t->value, now());
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
                const bool alone = (l.sharers & ~(1u << d)) == 0 && l.host == MState::I && l.owner < 0 && !memOwner(L);
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
            // Shared if anything on the host side (its caches or peer devices) kept a copy.
            sendDown(uint16_t(d), msg(l.host == MState::S || l.sharers ? Opc::BIRspS : Opc::BIRspI, L));
            ports_[d].dev->up().giveCredit(kS2MBISnp, now());
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
        ports_[t->req->dev].dev->up().giveCredit(kD2HReq, now());
        pool_.put(t->req);
        t->req = nullptr;
        --tracker_;
    }
    Txn* hostAcc = d < 0 ? t->parent : nullptr;
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
    } else {
        release(L, &l);  // l is still there: the transaction held it until now
    }
    if (!deferredFlips_.empty()) {
        std::deque<HTxn*> q;
        q.swap(deferredFlips_);
        for (HTxn* f : q) enqueue(f);
    }
    if (hostAcc) finishAccess(hostAcc);
}

void HomeAgent::handle(Txn* m) {
    const uint16_t dev = m->dev;
    Wire& up = ports_[dev].dev->up();
    if (m->parent) m->parent->leave(kStageLinkUp, now(), ports_[dev].link->name());
    switch (m->channel()) {
        case kD2HReq: {
            // A tracker entry holds the request until it completes (its credit returns then).
            HTxn* t = txns_.get();
            t->opc = m->opc;
            t->dev = dev;
            t->line = m->addr;
            t->parent = m->parent;
            t->req = m;
            ++tracker_;
            stats_.maxTracker = std::max(stats_.maxTracker, tracker_);
            defer(now() + lat_, Later::Enqueue, t);
            return;
        }
        case kD2HRsp: {
            up.giveCredit(m->channel(), now());
            HTxn* t = m->htxn;
            if (!t) protocolError("snoop response without a transaction");
            HLine& l = line(t, m->addr);
            const uint32_t bit = 1u << dev;
            // What the snooped cache kept, and whether its line follows, are the response's.
            const Command& rsp = m->cmd();
            if (rsp.is(kLeavesI)) setSharers(l, m->addr, l.sharers & ~bit);
            if (rsp.is(kLeavesI) || rsp.is(kLeavesS)) {
                if (l.owner == dev) l.owner = -1;
            }
            if (rsp.is(kDataFollows)) ++t->dataOut;
            --t->snoopsOut;
            if (!t->snoopsOut && t->parent && !t->dataOut) t->parent->leave(kStageSnoop, now(), name_);
            pool_.put(m);
            maybeFinish(t);
            return;
        }
        case kD2HData: {
            up.giveCredit(m->channel(), now());
            HTxn* t = m->htxn;
            if (!t) {
                // Write data answering a GO_WritePull: the line's active transaction.
                const HLine* it = lines_.find(m->addr);
                t = it ? it->active : nullptr;
            }
            if (!t) {
                pool_.put(m);
                return;
            }
            // Snoop data names its transaction; write-pull data does not. (With
            // few D2H Rsp credits a snooped line's data can overtake its response.)
            const bool pulled = !m->htxn;
            if (pulled && (t->opc == Opc::DirtyEvict || t->opc == Opc::ItoMWr || t->opc == Opc::WrInv)) {
                HLine& l = line(t, t->line);
                if (t->opc == Opc::DirtyEvict) {
                    if (!m->bogus && l.owner == int(dev)) memWrite(t->line, m->value);
                } else {
                    // The write is performed at the home: into the host's cache (ItoMWr) or memory (WrInv).
                    if (checker_) checker_->write(t->line, numDevs_ + 1, m->value, now());
                    if (t->opc == Opc::ItoMWr) {
                        l.value = m->value;
                        setHost(l, t->line, MState::M);
                    } else {
                        memWrite(t->line, m->value);
                    }
                }
                t->dataOut = 0;
            } else if (t->opc == Opc::BiasFlipReq) {
                // A peer gave up a dirty line of the page: it goes back to device memory.
                memWrite(m->addr, m->value, t);
                --t->dataOut;
            } else if (t->opc == Opc::ItoMWr || t->opc == Opc::WrInv) {
                // A snooped dirty copy is superseded by the full-line write.
                --t->dataOut;
                if (t->parent && !t->snoopsOut && !t->dataOut) t->parent->leave(kStageSnoop, now(), name_);
            } else {
                // Forwarded dirty data from a snooped cache: newer than memory.
                t->value = m->value;
                t->haveData = true;
                t->dirty = true;
                --t->dataOut;
                if (t->parent && !t->snoopsOut && !t->dataOut) t->parent->leave(kStageSnoop, now(), name_);
            }
            pool_.put(m);
            maybeFinish(t);
            return;
        }
        case kS2MNdr:
        case kS2MDrs: {
            // Data and completions free their buffers at once.
            up.giveCredit(m->channel(), now());
            HTxn* t = m->htxn;
            if (m->opc == Opc::MemData) {
                if (!t) protocolError("memory data without a transaction");
                t->memOut = false;
                t->memValue = m->value;
                t->memHave = true;
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
        case kS2MBISnp: {
            // A BISnp holds its buffer until answered, ordered with the host's
            // other requests to the line.
            HTxn* t = txns_.get();
            t->opc = m->opc;
            t->dev = dev;
            t->line = m->addr;
            pool_.put(m);
            enqueue(t);
            return;
        }
        case kIoUp:
            up.giveCredit(m->channel(), now());
            if (m->opc == Opc::IoMemRd) {
                // The root complex orders (and snoops for) DMA reads like any request.
                defer(now() + lat_, Later::IoRead, m);
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
    while (later_.headReady() <= now) run(later_.pop());
    for (auto& p : ports_) p.down.pump();
    Tick next = std::min(inbox_.headReady(), later_.headReady());
    if (next != kNever) requestWake(next);
}

}  // namespace cxlcore

namespace cxlcore {

void HomeAgent::defer(Tick at, Later what, void* p, uint16_t dev) {
    later_.push(at, Deferred{what, dev, p});
    requestWake(at);
}

void HomeAgent::run(const Deferred& d) {
    switch (d.what) {
        case Later::HostHit: {
            Txn* a = static_cast<Txn*>(d.p);
            a->leave(kStageCache, now(), name_);
            finishAccess(a);
            return;
        }
        case Later::Enqueue: {
            HTxn* t = static_cast<HTxn*>(d.p);
            if (t->parent) t->parent->leave(kStageUncore, now(), name_);
            enqueue(t);
            return;
        }
        case Later::DataDone: {
            HTxn* t = static_cast<HTxn*>(d.p);
            --t->dataOut;
            maybeFinish(t);
            return;
        }
        case Later::IoRead:
            ioRead(static_cast<Txn*>(d.p));
            return;
        case Later::Doorbell:
            ringDoorbell(d.dev, static_cast<DmaJob*>(d.p));
            return;
        case Later::JobNoticed:
            jobNoticed(static_cast<DmaJob*>(d.p));
            return;
    }
}

void HomeAgent::done(Txn* r) {
    // A read of host DRAM for a home transaction.
    HTxn* t = static_cast<HTxn*>(r->ctx);
    t->memOut = false;
    t->memValue = valueOf(values_, t->line);
    t->memHave = true;
    if (t->parent && !t->snoopsOut && !t->dataOut) t->parent->absorb(*r, kStageUncore, now(), name_);
    maybeFinish(t);
}

}  // namespace cxlcore
