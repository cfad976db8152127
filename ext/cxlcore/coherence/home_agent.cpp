// The home agent itself: line-state entries, the host's caches (LRU and
// eviction), host and device memory access, reports, and deferred work.
// A transaction's life is in coherence/home_txn.cpp, device-to-host
// messages in coherence/home_d2h.cpp.
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

void HomeAgent::addDevice(Accelerator* d, CxlLink* link, const DmaParams& dp, Endpoint* via) {
    ports_.push_back(Port{d, link, Wire(), dp, via});
    sharedPorts_ = sharedPorts_ || via != nullptr;
    numDevs_ = uint32_t(ports_.size());
    deviceMemory_ = deviceMemory_ || d->memBytes() != 0;
    // Host-to-device traffic leaves in order: a snoop never passes a GO.
    // Every port is (re)wired: the vector may have moved them.
    for (auto& p : ports_) p.down.init(p.link, this, p.via ? p.via : p.dev, true);
}

Txn* HomeAgent::msg(Opc op, uint64_t line) {
    Txn* m = pool_.get();
    m->opc = op;
    m->addr = line;
    return m;
}

void HomeAgent::sendDown(uint16_t dev, Txn* m) {
    m->dev = dev;  // its CacheID: a switch below the root port routes by it
    ports_[dev].down.send(m);
}

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
             " waiting " + std::to_string(l.wait.size()) +
             (shared_ ? std::string(t->phaseA ? " phase A" : "") + (t->recall ? " recall" : "") +
                            " sharers " + std::to_string(l.sharers) + " owner " + std::to_string(l.owner)
                      : std::string()) +
             "]";
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

void HomeAgent::memRead(HTxn* t) {
    if (t->granted) return;  // a shared line: the host's shared cache gave its data
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
    if (shared_ && shared_->covers(line)) {
        shared_->homeWrite(line, value);
        return;
    }
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

void HomeAgent::pumpInTurn() {
    // Devices behind a switch share its upstream link's credits: the wires
    // take turns at them (round-robin: the one after the last served goes first).
    const uint32_t n = uint32_t(ports_.size()), from = pumpFrom_;
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t i = (from + k) % n;
        Wire& w = ports_[i].down;
        const size_t before = w.queued();
        if (!before) continue;
        w.pump();
        if (w.queued() < before) pumpFrom_ = (i + 1) % n;
    }
}

void HomeAgent::process() {
    const Tick now = this->now();
    // Behind a switch, what waits for a credit goes before what this wake-up makes.
    if (sharedPorts_) pumpInTurn();
    while (inbox_.headReady() <= now) handle(inbox_.pop());
    while (later_.headReady() <= now) run(later_.pop());
    if (sharedPorts_)
        pumpInTurn();
    else
        for (auto& p : ports_) p.down.pump();
    Tick next = std::min(inbox_.headReady(), later_.headReady());
    if (next != kNever) requestWake(next);
}

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
        case Later::Proceed:
            proceed(static_cast<HTxn*>(d.p));
            return;
        case Later::Recall:
            placeRecall(static_cast<HTxn*>(d.p));
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
