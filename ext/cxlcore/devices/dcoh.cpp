#include "cxlcore/devices/dcoh.hpp"

#include <algorithm>

#include "cxlcore/coherence/checker.hpp"

namespace cxlcore {

namespace {
inline uint16_t bit(uint8_t h) { return uint16_t(1u << h); }
}  // namespace

Dcoh::Dcoh(const DeviceParams& p, const std::string& where, TxnPool& pool, uint64_t seed)
    : p_(p), where_(where), name_(internName(where + ".device")), pool_(pool), rng_(seed), sets_(p.snoop_filter_entries / p.snoop_filter_ways),
      sf_(p.snoop_filter_entries), cap_(p.req_queue) {}

Dcoh::Entry* Dcoh::find(uint64_t line) {
    Entry* s = &sf_[setOf(line) * p_.snoop_filter_ways];
    for (uint32_t w = 0; w < p_.snoop_filter_ways; ++w)
        if (s[w].valid && s[w].line == line) return &s[w];
    return nullptr;
}

Dcoh::Entry* Dcoh::freeWay(uint64_t line) {
    Entry* s = &sf_[setOf(line) * p_.snoop_filter_ways];
    for (uint32_t w = 0; w < p_.snoop_filter_ways; ++w)
        if (!s[w].valid) return &s[w];
    return nullptr;
}

size_t Dcoh::entries() const {
    return size_t(std::count_if(sf_.begin(), sf_.end(), [](const Entry& e) { return e.valid; }));
}

uint16_t Dcoh::conflicts(const Txn& x, const Entry& e, Opc& op) const {
    const uint16_t others = uint16_t(e.sharers & ~bit(x.host));
    if (x.state == MState::E || x.state == MState::M) {
        op = Opc::BISnpInv;  // ownership: every other copy goes
        return others;
    }
    op = Opc::BISnpData;  // a read: an owner elsewhere keeps a clean shared copy
    return e.owner != kNone && e.owner != x.host ? bit(e.owner) : 0;
}

void Dcoh::drop(Entry& e) {
    e = Entry();
}

void Dcoh::grant(Txn* x, Entry* e) {
    const uint8_t h = x->host;
    const MState want = x->state;
    if (!e || want == MState::I) {
        x->state = MState::I;  // a read that keeps no copy
        x->seq = 0;
        return;
    }
    const uint16_t others = uint16_t(e->sharers & ~bit(h));
    if (want == MState::S && others) {
        e->sharers |= bit(h);
        e->owner = kNone;
        x->state = MState::S;
    } else {  // ownership, or a read no one else holds: exclusive (MESI's E on a lone read)
        e->sharers = bit(h);
        e->owner = h;
        x->state = MState::E;
    }
    x->seq = ++seq_;
    e->last[h] = x->seq;
    e->stamp = ++clock_;
}

void Dcoh::snoop(Opc op, uint64_t line, uint8_t host, uint32_t seq, Tick t) {
    Txn* m = pool_.get();
    m->opc = op;
    m->addr = line;
    m->host = host;
    m->seq = seq;
    m->internal = true;
    m->birth = m->mark = t;
    ++(op == Opc::BISnpInv ? stats_.bisnpInv : stats_.bisnpData);
    snoops_.push_back(m);
}

bool Dcoh::decide(Txn* x, Tick t, Entry* e) {
    const uint64_t L = x->addr;
    if (!e && x->state != MState::I) {
        e = freeWay(L);
        if (e) {
            e->valid = true;
            e->line = L;
        } else {
            // Make room: the victim's holders give it up first; x waits for the way.
            Entry* s = &sf_[setOf(L) * p_.snoop_filter_ways];
            std::vector<Entry*> free;
            for (uint32_t w = 0; w < p_.snoop_filter_ways; ++w)
                if (!busy_.count(s[w].line)) free.push_back(&s[w]);
            if (free.empty()) {  // every way's line is busy: wait for the first to finish
                busy_[s[0].line].retry.push_back(x);
                return false;
            }
            Entry* v = free[0];
            if (p_.snoop_filter_victim == 1) {
                v = free[rng_.below(free.size())];
            } else {
                for (Entry* c : free)
                    if (c->stamp < v->stamp) v = c;
            }
            ++stats_.sfEvictions;
            Busy& b = busy_[v->line];
            b.evicting = true;
            b.since = t;
            b.retry.push_back(x);
            for (uint8_t h = 0; h < kMaxHosts; ++h)
                if (v->sharers & bit(h)) {
                    snoop(Opc::BISnpInv, v->line, h, v->last[h], t);
                    ++stats_.evictSnoops;
                    ++b.rsps;
                }
            return false;
        }
    }
    Opc op = Opc::BISnpInv;
    const uint16_t c = e ? conflicts(*x, *e, op) : 0;
    if (!c) {
        grant(x, e);
        return true;
    }
    Busy& b = busy_[L];
    for (uint8_t h = 0; h < kMaxHosts; ++h)
        if (c & bit(h)) {
            snoop(op, L, h, e->last[h], t);
            ++b.rsps;
        }
    ++stats_.snooped;
    return false;
}

Dcoh::Admit Dcoh::admit(Txn* x, Tick t) {
    const uint64_t L = x->addr;
    ++stats_.lookups;
    auto it = busy_.find(L);
    if (it != busy_.end()) {
        if (held_ >= cap_) return kFull;
        it->second.waiting.push_back(x);
        ++held_;
        ++stats_.lineWaits;
        return kParked;
    }
    Entry* e = find(L);
    stats_.hits += e != nullptr;
    // Goes now when nothing conflicts and the filter has the line or room for it.
    Opc op;
    if ((e && !conflicts(*x, *e, op)) || (!e && (x->state == MState::I || freeWay(L)))) {
        decide(x, t, e);  // nothing to snoop: granted at once
        return kGo;
    }
    if (held_ >= cap_) return kFull;
    ++held_;
    Busy& b = busy_[L];
    b.req = x;
    b.since = t;
    decide(x, t, e);  // a conflict or a full set: snoops go out, x waits for them
    return kParked;
}

void Dcoh::release(Txn* x, Tick t) {
    // Waiting for snoops, or for the line behind another read's: back-invalidate time.
    x->leave(kStageBackInv, t, name_);
    released_.push_back(x);
}

Txn* Dcoh::popReleased() {
    Txn* x = released_.front();
    released_.pop_front();
    --held_;
    return x;
}

void Dcoh::pass(uint64_t L, Tick t) {
    auto it = busy_.find(L);
    if (it == busy_.end()) return;
    for (;;) {
        Busy& b = busy_[L];
        b.req = nullptr;
        b.evicting = false;
        if (b.waiting.empty()) break;
        Txn* n = b.waiting.front();
        b.waiting.pop_front();
        b.req = n;
        b.since = t;
        if (!decide(n, t, find(L))) return;  // snooping for it now
        release(n, t);
    }
    std::vector<Txn*> retry = std::move(busy_[L].retry);
    busy_.erase(L);
    for (Txn* r : retry) {
        // r holds its own line and waited for a way of this set.
        if (decide(r, t, find(r->addr))) {
            release(r, t);
            pass(r->addr, t);
        }
    }
}

void Dcoh::answer(Txn* m, Tick t) {
    const uint64_t L = m->addr;
    const uint8_t h = m->host;
    auto it = busy_.find(L);
    Entry* e = find(L);
    if (it == busy_.end() || !it->second.rsps || !e)
        protocolError(where_ + ": BIRsp from host " + std::to_string(h) + " for line " + hexAddr(L) +
                      ", which no snoop asked for");
    if (m->opc == Opc::BIRspI) {
        ++stats_.birspI;
        e->sharers &= uint16_t(~bit(h));
        if (e->owner == h) e->owner = kNone;
    } else {
        ++stats_.birspS;
        if (e->owner == h) e->owner = kNone;
    }
    pool_.put(m);
    Busy& b = it->second;
    if (--b.rsps) return;
    if (b.evicting) {
        drop(*e);
    } else {
        Txn* x = b.req;
        grant(x, e);
        release(x, t);
    }
    pass(L, t);
}

void Dcoh::write(const Txn& x) {
    const uint64_t L = x.addr;
    values_[L] = x.value;
    Entry* e = find(L);
    if (!e || !(e->sharers & bit(x.host))) {
        ++stats_.unownedWrites;
        return;
    }
    if (e->owner == x.host) e->owner = kNone;
    if (x.state == MState::I) e->sharers &= uint16_t(~bit(x.host));
    if (!e->sharers && !busy_.count(L)) drop(*e);
}

void Dcoh::respond(Txn& x, Tick t) {
    x.value = valueOf(values_, x.addr);
    if (checker_) checker_->memory(x.addr, x.value, t);
}

std::string Dcoh::describe() const {
    std::string s = where_ + ".device: " + std::to_string(held_) + " of " + std::to_string(cap_) + " reads held, " +
                    std::to_string(released_.size()) + " released, " + std::to_string(snoops_.size()) + " snoops to send";
    for (const auto& kv : busy_) {
        const Busy& b = kv.second;
        s += " [" + hexAddr(kv.first) + (b.evicting ? " evicting" : "") + " " + std::to_string(b.rsps) + " BIRsp due, " +
             std::to_string(b.waiting.size()) + " waiting, " + std::to_string(b.retry.size()) + " for a way" +
             (b.req ? ", read of host " + std::to_string(b.req->host) + " for " + stateName(b.req->state) : "") + "]";
    }
    return s;
}

void Dcoh::oldest(Oldest& o) const {
    for (const auto& kv : busy_) {
        const Busy& b = kv.second;
        o.see(b.since, [&] {
            return where_ + " (line " + hexAddr(kv.first) + (b.evicting ? " leaving the snoop filter" : "") +
                   ", waiting for " + std::to_string(b.rsps) + " BIRsp)";
        });
    }
}

}  // namespace cxlcore
