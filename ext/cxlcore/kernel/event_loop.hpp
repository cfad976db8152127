// The standalone engine's host: a tournament tree over the components' wake-ups.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "cxlcore/kernel/component.hpp"

namespace cxlcore {

// The standalone engine's host. Each component has exactly one pending
// wake-up time; the next event is the earliest (time, slot), so ties go to
// the component created first and runs are deterministic. A tournament tree
// keeps that minimum at its root, so an event costs O(log n) in the number of
// components that were ever woken: a scan of all of them made a system with
// 16 root ports (85 components) spend most of its time finding the next event.
// A component gets its leaf when it is first woken, so components that never
// run (the host's DRAM in a run against an expander) do not deepen the tree.
class EventLoop : public Host {
  public:
    EventLoop() { clock_ = &now_; }
    EventLoop(const EventLoop&) = delete;  // components hold a pointer to its clock
    EventLoop& operator=(const EventLoop&) = delete;
    Tick now() const override { return now_; }
    void wakeAt(Component* c, Tick t) override {
        const size_t s = c->slot;
        // The component firing now: settled once it returns, in one walk.
        if (c == firing) {
            firingNext = t;
            return;
        }
        size_t leaf = leaf_[s];
        if (leaf == kNoLeaf) leaf = addLeaf(s);
        // Components only ever ask for an earlier wake-up than they hold.
        if (t < timeOf(key_[cap_ + leaf])) lower(leaf, s, t);
        else settle(leaf, s, t);
    }
    void attach(Component* c) override {
        c->slot = comps_.size();
        comps_.push_back(c);
        leaf_.push_back(kNoLeaf);
    }
    void detach(Component* c) override {
        comps_[c->slot] = nullptr;
        if (c == firing) firingNext = kNever;
        else if (leaf_[c->slot] != kNoLeaf) settle(leaf_[c->slot], c->slot, kNever);
    }
    // Runs until no work is left, stop() is called, or the time limit.
    void run(Tick until = kNever) {
        stopped_ = false;
        while (!stopped_) {
            const Tick t = timeOf(key_[1]);
            if (t == kNever || t > until) break;
            const size_t slot = slotOf(key_[1]);
            now_ = t;
            ++events_;
            Component* c = comps_[slot];
            firing = c;
            firingNext = kNever;
            c->fire(t);
            firing = nullptr;
            settle(leaf_[slot], slot, firingNext);
            if (watch_ && ++sinceWatch_ >= kWatchEvery) {
                sinceWatch_ = 0;
                watch_->check(now_);
            }
        }
    }
    void stop() { stopped_ = true; }
    bool stopped() const { return stopped_; }
    void watch(Watch* w) { watch_ = w; }
    bool idle() const { return timeOf(key_[1]) == kNever && (!firing || firingNext == kNever); }
    uint64_t events() const { return events_; }

  private:
    static constexpr uint64_t kWatchEvery = 1 << 14;
    static constexpr size_t kNoSlot = std::numeric_limits<size_t>::max();
    static constexpr size_t kNoLeaf = std::numeric_limits<size_t>::max();
    // Node i of the tree holds the earliest wake-up in its subtree as one
    // 128-bit key, time above slot: (time, slot) pairs order as the keys do,
    // ties to the lowest slot, so a level is one two-word compare and two
    // conditional moves (a compare of time, then of slot, took three times
    // the instructions).
    using Key = unsigned __int128;
    static Key key(Tick t, size_t slot) { return Key(t) << 64 | slot; }
    static Tick timeOf(Key k) { return Tick(k >> 64); }
    static size_t slotOf(Key k) { return size_t(uint64_t(k)); }
    // Leaf `leaf` (component `slot`) moves earlier to t: every ancestor
    // holding a later (time, slot) takes it, up to the first that holds an
    // earlier one.
    void lower(size_t leaf, size_t slot, Tick t) {
        const Key k = key(t, slot);
        size_t i = cap_ + leaf;
        key_[i] = k;
        for (i >>= 1; i; i >>= 1) {
            if (key_[i] < k) return;
            key_[i] = k;
        }
    }
    // Leaf `leaf` is now at t, either way: each ancestor, up to the root, is
    // the earlier key of its two children. The path is known from the leaf,
    // so every sibling's load is independent of the comparisons, and the
    // winner is picked without a branch: which child wins is as good as
    // random, and a branch would mispredict about once a level.
    void settle(size_t leaf, size_t slot, Tick t) {
        Key* keys = key_.data();
        size_t i = cap_ + leaf;
        Key k = key(t, slot);
        keys[i] = k;
        for (; i > 1; i >>= 1) {
            const Key sk = keys[i ^ 1];
            k = sk < k ? sk : k;
            keys[i >> 1] = k;
        }
    }
    // The next free leaf for component `slot`; doubles the leaves and
    // rebuilds the tree when they are all taken.
    [[gnu::noinline]] size_t addLeaf(size_t slot) {
        const size_t leaf = leaves_++;
        leaf_[slot] = leaf;
        if (leaves_ > cap_) {
            const size_t cap = cap_ * 2;
            std::vector<Key> keys(2 * cap, key(kNever, kNoSlot));
            for (size_t l = 0; l < cap_; ++l) keys[cap + l] = key_[cap_ + l];
            for (size_t i = cap - 1; i; --i) keys[i] = std::min(keys[2 * i], keys[2 * i + 1]);
            key_.swap(keys);
            cap_ = cap;
        }
        key_[cap_ + leaf] = key(kNever, slot);
        return leaf;
    }
    std::vector<Component*> comps_;  // by slot
    std::vector<size_t> leaf_;       // by slot: its leaf, kNoLeaf until first woken
    size_t leaves_ = 0;
    size_t cap_ = 1;  // leaves, a power of two
    std::vector<Key> key_{key(kNever, kNoSlot), key(kNever, kNoSlot)};  // root at 1, leaves at [cap_, 2 cap_)
    Tick now_ = 0;
    uint64_t events_ = 0, sinceWatch_ = 0;
    bool stopped_ = false;
    Watch* watch_ = nullptr;
};

}  // namespace cxlcore
