// The standalone engine's host: a tournament tree over the components' wake-ups.
#pragma once

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
        if (s == firing_) {
            firingNext_ = t;
            return;
        }
        size_t leaf = leaf_[s];
        if (leaf == kNoLeaf) leaf = addLeaf(s);
        // Components only ever ask for an earlier wake-up than they hold.
        if (t < time_[cap_ + leaf]) lower(leaf, s, t);
        else settle(leaf, s, t);
    }
    void attach(Component* c) override {
        c->slot = comps_.size();
        comps_.push_back(c);
        leaf_.push_back(kNoLeaf);
    }
    void detach(Component* c) override {
        comps_[c->slot] = nullptr;
        if (c->slot == firing_) firingNext_ = kNever;
        else if (leaf_[c->slot] != kNoLeaf) settle(leaf_[c->slot], c->slot, kNever);
    }
    // Runs until no work is left, stop() is called, or the time limit.
    void run(Tick until = kNever) {
        stopped_ = false;
        while (!stopped_) {
            const Tick t = time_[1];
            if (t == kNever || t > until) break;
            const size_t slot = slot_[1];
            now_ = t;
            ++events_;
            firing_ = slot;
            firingNext_ = kNever;
            comps_[slot]->fire(t);
            firing_ = kNoSlot;
            settle(leaf_[slot], slot, firingNext_);
            if (watch_ && ++sinceWatch_ >= kWatchEvery) {
                sinceWatch_ = 0;
                watch_->check(now_);
            }
        }
    }
    void stop() { stopped_ = true; }
    bool stopped() const { return stopped_; }
    void watch(Watch* w) { watch_ = w; }
    bool idle() const { return time_[1] == kNever && (firing_ == kNoSlot || firingNext_ == kNever); }
    uint64_t events() const { return events_; }

  private:
    static constexpr uint64_t kWatchEvery = 1 << 14;
    static constexpr size_t kNoSlot = std::numeric_limits<size_t>::max();
    static constexpr size_t kNoLeaf = std::numeric_limits<size_t>::max();
    // The tree as two arrays: node i holds the earliest wake-up time_[i] in
    // its subtree and slot_[i], the component's slot, the lowest among equal
    // times. Plain 64-bit loads and selects, where a {time, slot} pair went
    // through vector registers.
    //
    // Leaf `leaf` (component `slot`) moves earlier to t: every ancestor
    // holding a later (time, slot) takes it, up to the first that holds an
    // earlier one.
    void lower(size_t leaf, size_t slot, Tick t) {
        size_t i = cap_ + leaf;
        time_[i] = t;
        for (i >>= 1; i; i >>= 1) {
            if (time_[i] < t || (time_[i] == t && slot_[i] < slot)) return;
            time_[i] = t;
            slot_[i] = slot;
        }
    }
    // Leaf `leaf` is now at t, either way: each ancestor, up to the root, is
    // the earlier (time, slot) of its two children. The path is known from
    // the leaf, so every sibling's load is independent of the comparisons,
    // and the winner is picked with a mask, not a branch: which child wins is
    // as good as random, and a branch would mispredict about once a level.
    void settle(size_t leaf, size_t slot, Tick t) {
        Tick* time = time_.data();
        size_t* slots = slot_.data();
        size_t i = cap_ + leaf;
        time[i] = t;
        size_t s = slot;
        for (; i > 1; i >>= 1) {
            const Tick st = time[i ^ 1];
            const size_t ss = slots[i ^ 1];
            const uint64_t take = uint64_t(st < t) | (uint64_t(st == t) & uint64_t(ss < s));
            const uint64_t m = uint64_t(0) - take;  // all ones when the sibling wins
            t ^= (t ^ st) & m;
            s ^= (s ^ ss) & m;
            time[i >> 1] = t;
            slots[i >> 1] = s;
        }
    }
    // The next free leaf for component `slot`; doubles the leaves and
    // rebuilds the tree when they are all taken.
    [[gnu::noinline]] size_t addLeaf(size_t slot) {
        const size_t leaf = leaves_++;
        leaf_[slot] = leaf;
        if (leaves_ > cap_) {
            const size_t cap = cap_ * 2;
            std::vector<Tick> time(2 * cap, kNever);
            std::vector<size_t> slots(2 * cap, kNoSlot);
            for (size_t l = 0; l < cap_; ++l) {
                time[cap + l] = time_[cap_ + l];
                slots[cap + l] = slot_[cap_ + l];
            }
            for (size_t i = cap - 1; i; --i) {
                const size_t l = 2 * i, r = 2 * i + 1;
                const bool right = time[r] < time[l] || (time[r] == time[l] && slots[r] < slots[l]);
                time[i] = time[right ? r : l];
                slots[i] = slots[right ? r : l];
            }
            time_.swap(time);
            slot_.swap(slots);
            cap_ = cap;
        }
        time_[cap_ + leaf] = kNever;
        slot_[cap_ + leaf] = slot;
        return leaf;
    }
    std::vector<Component*> comps_;  // by slot
    std::vector<size_t> leaf_;       // by slot: its leaf, kNoLeaf until first woken
    size_t leaves_ = 0;
    size_t cap_ = 1;                          // leaves, a power of two
    std::vector<Tick> time_{kNever, kNever};  // root at 1, leaves at [cap_, 2 cap_)
    std::vector<size_t> slot_{kNoSlot, kNoSlot};
    size_t firing_ = kNoSlot;
    Tick firingNext_ = kNever;
    Tick now_ = 0;
    uint64_t events_ = 0, sinceWatch_ = 0;
    bool stopped_ = false;
    Watch* watch_ = nullptr;
};

}  // namespace cxlcore
