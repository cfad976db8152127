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
// over the slots keeps that minimum at its root, so an event costs O(log n)
// in the number of components: a scan of all of them made a system with 16
// root ports (85 components) spend most of its time finding the next event.
class EventLoop : public Host {
  public:
    Tick now() const override { return now_; }
    void wakeAt(Component* c, Tick t) override {
        const size_t s = c->slot;
        // The component firing now: settled once it returns, in one walk.
        if (s == firing_) firingNext_ = t;
        // Components only ever ask for an earlier wake-up than they hold.
        else if (t < tree_[cap_ + s].t) lower(s, t);
        else settle(s, t);
    }
    void attach(Component* c) override {
        c->slot = comps_.size();
        comps_.push_back(c);
        if (comps_.size() > cap_) grow();
    }
    void detach(Component* c) override {
        comps_[c->slot] = nullptr;
        if (c->slot == firing_) firingNext_ = kNever;
        else settle(c->slot, kNever);
    }
    // Runs until no work is left, stop() is called, or the time limit.
    void run(Tick until = kNever) {
        stopped_ = false;
        while (!stopped_) {
            const Node top = tree_[1];
            if (top.t == kNever || top.t > until) break;
            now_ = top.t;
            ++events_;
            firing_ = top.slot;
            firingNext_ = kNever;
            comps_[top.slot]->fire(top.t);
            firing_ = kNoSlot;
            settle(top.slot, firingNext_);
            if (watch_ && ++sinceWatch_ >= kWatchEvery) {
                sinceWatch_ = 0;
                watch_->check(now_);
            }
        }
    }
    void stop() { stopped_ = true; }
    bool stopped() const { return stopped_; }
    void watch(Watch* w) { watch_ = w; }
    bool idle() const { return tree_[1].t == kNever && (firing_ == kNoSlot || firingNext_ == kNever); }
    uint64_t events() const { return events_; }

  private:
    static constexpr uint64_t kWatchEvery = 1 << 14;
    static constexpr size_t kNoSlot = std::numeric_limits<size_t>::max();
    struct Node {
        Tick t;       // earliest wake-up in the subtree
        size_t slot;  // its component, the lowest slot among equal times
    };
    // Leaf `slot` moves earlier to t: every ancestor holding a later (time,
    // slot) takes it, up to the first that holds an earlier one.
    void lower(size_t slot, Tick t) {
        Node* tree = tree_.data();
        size_t i = cap_ + slot;
        tree[i].t = t;
        for (i >>= 1; i; i >>= 1) {
            Node& a = tree[i];
            if (a.t < t || (a.t == t && a.slot < slot)) return;
            a = Node{t, slot};
        }
    }
    // Leaf `slot` is now at t, either way: each ancestor, up to the root, is
    // the earlier of its two children. One comparison per level, and no
    // branch on its outcome: the winner is loaded by index. Which child wins
    // is as good as random, and a mispredicted branch per level made the
    // walk cost grow with the tree's depth (16 root ports: 7 levels).
    void settle(size_t slot, Tick t) {
        Node* tree = tree_.data();
        size_t i = cap_ + slot;
        tree[i].t = t;
        for (; i > 1; i >>= 1) {
            // tree[i] holds (t, its slot). A right child's sibling holds the lower slots: it wins ties.
            const Tick st = tree[i ^ 1].t;
            const size_t sib = size_t(st < t) | (size_t(st == t) & (i & 1));
            const Node w = tree[i ^ sib];
            tree[i >> 1] = w;
            t = w.t;
        }
    }
    // Doubles the leaves (a component attached beyond them) and rebuilds.
    void grow() {
        const size_t cap = cap_ * 2;
        std::vector<Node> tree(2 * cap);
        for (size_t s = 0; s < cap; ++s) tree[cap + s] = Node{s < cap_ ? tree_[cap_ + s].t : kNever, s};
        for (size_t i = cap - 1; i; --i) {
            const Node& l = tree[2 * i];
            const Node& r = tree[2 * i + 1];
            tree[i] = r.t < l.t ? r : l;
        }
        tree_.swap(tree);
        cap_ = cap;
    }
    std::vector<Component*> comps_;
    size_t cap_ = 1;                                    // leaves, a power of two
    std::vector<Node> tree_{{kNever, 0}, {kNever, 0}};  // root at 1, leaves at [cap_, 2 cap_)
    size_t firing_ = kNoSlot;
    Tick firingNext_ = kNever;
    Tick now_ = 0;
    uint64_t events_ = 0, sinceWatch_ = 0;
    bool stopped_ = false;
    Watch* watch_ = nullptr;
};

}  // namespace cxlcore
