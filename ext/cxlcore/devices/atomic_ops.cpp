#include "cxlcore/devices/atomic_ops.hpp"

#include <algorithm>
#include <utility>

namespace cxlcore {

const char* atomicName(AtomicCode c) {
    static const char* n[] = {"fetch", "fetch_add", "add", "cas", "swap"};
    return n[int(c)];
}

AtomicMemory::AtomicMemory(uint64_t arrayBase, uint64_t arrayWords, uint64_t idxBase, std::vector<uint64_t> idx,
                           bool record)
    : base_{arrayBase, idxBase}, record_(record) {
    w_[0].assign(arrayWords, 0);
    w_[1] = std::move(idx);
}

uint64_t AtomicMemory::perform(uint32_t thread, uint64_t op, AtomicCode code, uint8_t region, uint64_t index,
                               uint64_t a, uint64_t b) {
    uint64_t& w = w_[region][index];
    const uint64_t old = w;
    w = atomicResult(code, old, a, b);
    ++performed_;
    if (record_) log_.push_back(Entry{thread, op, code, region, index, a, b, old});
    return old;
}

AtomicOrdering::AtomicOrdering(uint32_t rings, size_t resultCap, const AtomicMemory& mem,
                               std::function<void(AtomicSlot*)> ready)
    : mem_(mem), ready_(std::move(ready)) {
    rings_.resize(rings);
    for (auto& r : rings_) r.results = ThreadResults(resultCap);
}

void AtomicOrdering::admit(AtomicSlot* s) {
    Ring& r = rings_[s->ring];
    s->known = false;
    r.pending.push_back(s);
    maxPending_ = std::max(maxPending_, r.pending.size());
}

void AtomicOrdering::arrive(AtomicSlot* s) {
    s->known = true;
    advance(rings_[s->ring]);
}

void AtomicOrdering::advance(Ring& r) {
    while (!r.pending.empty()) {
        AtomicSlot* s = r.pending.front();
        if (!s->known || !r.results.ready(s->o.addrDep)) return;
        r.pending.pop_front();
        const uint64_t words = mem_.words(s->o.region);
        s->index = (s->o.addrDep >= 0 ? r.results.get(s->o.addrDep) : s->o.index) % words;
        s->line = mem_.line(s->o.region, s->index);
        auto& q = lineQ_[s->line];
        q.push_back(s);
        maxLineQ_ = std::max(maxLineQ_, q.size());
        if (q.size() == 1) tryRun(s);
    }
}

void AtomicOrdering::tryRun(AtomicSlot* s) {
    Ring& r = rings_[s->ring];
    uint64_t index;
    if (!r.results.resolve(s->o, mem_.words(s->o.region), index, s->a, s->b)) {
        r.heads.push_back(s);
        return;
    }
    ready_(s);
}

void AtomicOrdering::finish(AtomicSlot* s) {
    Ring& r = rings_[s->ring];
    r.results.set(s->op, s->result);
    auto it = lineQ_.find(s->line);
    it->second.pop_front();
    AtomicSlot* next = it->second.empty() ? nullptr : it->second.front();
    if (!next) lineQ_.erase(it);
    // Operations waiting for this result: line heads first (they hold lines), then addresses.
    std::vector<AtomicSlot*> heads;
    heads.swap(r.heads);
    for (AtomicSlot* h : heads) tryRun(h);
    if (next) tryRun(next);
    advance(r);
}

bool AtomicOrdering::idle() const {
    if (!lineQ_.empty()) return false;
    for (auto& r : rings_)
        if (!r.pending.empty() || !r.heads.empty()) return false;
    return true;
}

}  // namespace cxlcore
