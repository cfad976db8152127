#include "cxlcore/devices/cxl_nic.hpp"

#include <algorithm>

namespace cxlcore {

std::vector<NicRing> makeRings(uint32_t threads, const NicParams& p, uint64_t base) {
    std::vector<NicRing> out(threads);
    const uint64_t entries = p.ring_entries;
    const uint64_t descLines = entries / p.descriptors_per_line, cqLines = entries / p.completions_per_line;
    const uint64_t span = (descLines + cqLines + 1) * kLineBytes;
    for (uint32_t t = 0; t < threads; ++t) {
        NicRing& r = out[t];
        r.entries = uint32_t(entries);
        r.perDesc = p.descriptors_per_line;
        r.perCq = p.completions_per_line;
        r.descBase = base + t * span;
        r.cqBase = r.descBase + descLines * kLineBytes;
        r.doorbell = r.cqBase + cqLines * kLineBytes;
        r.desc.resize(entries);
        r.cqOp.assign(entries, ~0ull);
        r.cqVersion.assign(entries, 0);
    }
    return out;
}

bool NicVersions::descriptor(AtomicSlot& s, const Txn& x) {
    s.o = rings_[s.ring].desc[s.op % rings_[s.ring].entries];
    return x.value >= s.op + 1;  // the descriptor the host wrote must be visible
}

uint64_t NicVersions::perform(AtomicSlot& s, const Txn&) {
    return mem_.perform(s.ring, s.op, s.o.code, s.o.region, s.index, s.a, s.b);
}

void NicVersions::completed(uint32_t ring, const std::vector<AtomicSlot*>& ops, const Txn& x) {
    NicRing& r = rings_[ring];
    for (const AtomicSlot* s : ops) {
        r.cqOp[s->op % r.entries] = s->op;
        r.cqVersion[s->op % r.entries] = x.value;
    }
}

CxlNic::CxlNic(Host& host, const NicParams& p, LineAccess& cache, std::vector<NicRing>& rings, AtomicMemory& mem,
               uint64_t& storeSeq, TxnPool& pool, NicData* data)
    : Component(host), p_(p), cache_(cache), rings_(rings), versions_(rings, mem, storeSeq),
      data_(data ? *data : versions_), pool_(pool), rs_(rings.size()),
      order_(uint32_t(rings.size()), resultsRing(p.ring_entries), mem, [this](AtomicSlot* s) { execute(s); }),
      out_(p.wire_gbps, p.wire_latency_ns), back_(p.wire_gbps, p.wire_latency_ns), poll_(nsToTicks(p.poll_ns)),
      alu_(nsToTicks(p.alu_ns)) {
    cq_.resize(rings.size());
    for (auto& c : cq_) c.resize(p.ring_entries / p.completions_per_line);
}

Txn* CxlNic::access(Txn::Kind k, uint64_t line, Done what, void* ctx) {
    Txn* a = newAccess(pool_, k, line, 0, now());
    a->client = this;
    a->tag = what;
    a->ctx = ctx;
    return a;
}

void CxlNic::done(Txn* x) {
    const Done what = Done(x->tag);
    void* ctx = x->ctx;
    switch (what) {
        case Descriptor: {
            AtomicSlot* s = static_cast<AtomicSlot*>(ctx);
            if (!data_.descriptor(*s, *x)) ++stats_.ringErrors;
            pool_.put(x);
            order_.arrive(s);
            return;
        }
        case Doorbell: {
            const uint32_t r = uint32_t(reinterpret_cast<uintptr_t>(ctx));
            const uint64_t tail = data_.tail(r, *x);
            pool_.put(x);
            RingState& q = rs_[r];
            q.polling = false;
            if (tail <= q.tail) return;  // unchanged: the next scan polls again
            q.tail = tail;
            ++stats_.doorbellChanges;
            fetch();
            return;
        }
        case Operand: {
            // The line is held now: the read-modify-write happens at this instant.
            AtomicSlot* s = static_cast<AtomicSlot*>(ctx);
            s->result = data_.perform(*s, *x);
            stats_.executing += now() - x->birth;
            stats_.hits += x->hit;
            pool_.put(x);
            at(now() + alu_, AluDone, s);
            return;
        }
        case Completions: {
            CqLine* lp = static_cast<CqLine*>(ctx);
            const uint32_t rg = lp->writing.front()->ring;
            data_.completed(rg, lp->writing, *x);
            pool_.put(x);
            for (AtomicSlot* s : lp->writing) {
                slots_.put(s);
                --inFlight_;
                ++stats_.ops;
            }
            lp->writing.clear();
            if (!lp->waiting.empty()) writeCompletions(rg, *lp);
            fetch();
            return;
        }
    }
}

void CxlNic::at(Tick t, EvKind k, AtomicSlot* s) {
    ev_.push(t, Ev{k, s});
    requestWake(t);
}

void CxlNic::start() {
    scanQueued_ = true;
    at(now(), Scan, nullptr);
}

void CxlNic::fetch() {
    // Descriptors known to be posted first, as many as the engine has room
    // for; rings with nothing known poll their doorbell.
    const uint32_t n = uint32_t(rings_.size());
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t r = (rr_ + k) % n;
        RingState& st = rs_[r];
        while (st.head < st.tail && inFlight_ < p_.ops_in_flight) {
            AtomicSlot* s = slots_.get();
            s->ring = r;
            s->op = st.head++;
            s->admitted = now();
            ++inFlight_;
            stats_.maxInFlight = std::max(stats_.maxInFlight, inFlight_);
            order_.admit(s);
            ++stats_.descriptors;
            cache_.access(access(Txn::Load, rings_[r].descLine(s->op), Descriptor, s));
        }
        if (st.head == st.tail && !st.polling && !stopped_) {
            st.polling = true;
            ++stats_.polls;
            cache_.access(access(Txn::Load, rings_[r].doorbell, Doorbell, reinterpret_cast<void*>(uintptr_t(r))));
        }
    }
    rr_ = n ? (rr_ + 1) % n : 0;
}

void CxlNic::execute(AtomicSlot* s) {
    if (p_.network)
        at(out_.send(now(), p_.op_bytes), Arrived, s);
    else
        performed(s);
}

void CxlNic::performed(AtomicSlot* s) {
    // The operand's line: a shared copy to read it, ownership to change it.
    Txn* a = access(s->o.writes() ? Txn::Store : Txn::Load, s->line, Operand, s);
    data_.operand(*a, *s);
    cache_.access(a);
}

void CxlNic::aluDone(AtomicSlot* s) {
    order_.finish(s);
    if (p_.network)
        at(back_.send(now(), p_.result_bytes), Returned, s);
    else
        complete(s);
}

void CxlNic::complete(AtomicSlot* s) {
    const NicRing& r = rings_[s->ring];
    CqLine& l = cq_[s->ring][(r.cqLine(s->op) - r.cqBase) / kLineBytes];
    l.waiting.push_back(s);
    if (l.writing.empty()) writeCompletions(s->ring, l);
}

void CxlNic::writeCompletions(uint32_t ring, CqLine& l) {
    l.writing.swap(l.waiting);
    const NicRing& r = rings_[ring];
    Txn* a = access(Txn::Store, r.cqLine(l.writing.front()->op), Completions, &l);
    data_.completions(*a, ring, l.writing);
    cache_.access(a);
}

void CxlNic::process() {
    const Tick t = now();
    while (ev_.headReady() <= t) {
        Ev e = ev_.pop();
        switch (e.kind) {
            case Scan:
                scanQueued_ = false;
                if (stopped_) break;
                fetch();
                scanQueued_ = true;
                ev_.push(t + poll_, Ev{Scan, nullptr});
                break;
            case Arrived: performed(e.s); break;
            case AluDone: aluDone(e.s); break;
            case Returned: complete(e.s); break;
        }
    }
    if (ev_.headReady() != kNever) requestWake(ev_.headReady());
}

}  // namespace cxlcore
