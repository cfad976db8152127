// Per-line state on the per-access path of CXL.cache (a device's MSHRs, the
// home's line states): an index from a line address to a value, by open
// addressing with linear probing over pooled nodes. std::unordered_map
// allocated a node for every miss and freed it at the fill, and chased a
// bucket pointer on every lookup; here nothing is allocated once the pool
// and the index have grown to the run's peak.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cxlcore/kernel/queues.hpp"

namespace cxlcore {

// Values keep their addresses while in the table (callers hold a reference
// across inserts of other lines, as std::unordered_map allowed). Iteration
// order is the index's: deterministic, but unrelated to insertion.
template <typename V>
class LineTable {
  public:
    LineTable() { rehash(16); }
    V* find(uint64_t key) {
        for (size_t i = home(key);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (!s.node) return nullptr;
            if (s.key == key) return &s.node->v;
        }
    }
    const V* find(uint64_t key) const { return const_cast<LineTable*>(this)->find(key); }
    // The value of `key`, default-constructed if it had none (`made` says so).
    V& get(uint64_t key, bool* made = nullptr) {
        size_t i = home(key);
        for (; slots_[i].node; i = (i + 1) & mask_)
            if (slots_[i].key == key) {
                if (made) *made = false;
                return slots_[i].node->v;
            }
        if (made) *made = true;
        if (2 * (size_ + 1) > slots_.size()) {  // at most half full: short probes
            rehash(2 * slots_.size());
            for (i = home(key); slots_[i].node; i = (i + 1) & mask_) {
            }
        }
        Node* n = nodes_.get();
        slots_[i] = Slot{key, n};
        ++size_;
        return n->v;
    }
    // Removes `key` if present; its value is reset when its node is reused.
    void erase(uint64_t key) {
        size_t i = home(key);
        for (; slots_[i].node; i = (i + 1) & mask_)
            if (slots_[i].key == key) break;
        if (!slots_[i].node) return;
        nodes_.put(slots_[i].node);
        --size_;
        // Backward shift: later entries of the probe run move into the hole
        // unless their home lies cyclically after it (no tombstones).
        for (size_t j = (i + 1) & mask_; slots_[j].node; j = (j + 1) & mask_) {
            const size_t h = home(slots_[j].key);
            if (((j - h) & mask_) >= ((j - i) & mask_)) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = Slot{};
    }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // f(key, value) for every entry, in index order.
    template <typename F>
    void each(F&& f) const {
        for (const Slot& s : slots_)
            if (s.node) f(s.key, const_cast<const V&>(s.node->v));
    }

  private:
    struct Node {
        V v;
    };
    struct Slot {
        uint64_t key = 0;
        Node* node = nullptr;
    };
    // Fibonacci hashing of the line number: consecutive lines spread out.
    size_t home(uint64_t key) const { return size_t(((key >> 6) * 0x9E3779B97F4A7C15ull) >> shift_); }
    void rehash(size_t n) {
        std::vector<Slot> old(n);
        old.swap(slots_);
        mask_ = n - 1;
        shift_ = 64;
        for (size_t k = n; k > 1; k >>= 1) --shift_;
        for (const Slot& s : old)
            if (s.node) {
                size_t i = home(s.key);
                while (slots_[i].node) i = (i + 1) & mask_;
                slots_[i] = s;
            }
    }
    std::vector<Slot> slots_;
    size_t mask_ = 0, size_ = 0;
    unsigned shift_ = 64;
    ObjectPool<Node> nodes_;
};

}  // namespace cxlcore
