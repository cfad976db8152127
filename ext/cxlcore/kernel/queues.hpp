// Timed queues, pools of plain objects and time-weighted occupancy.
#pragma once

#include <algorithm>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cxlcore/kernel/txn.hpp"

namespace cxlcore {

// Recycles objects of one kind so memory stays flat however long a run is.
template <typename T>
class ObjectPool {
  public:
    T* get() {
        if (free_.empty()) {
            store_.emplace_back(new T());
            return store_.back().get();
        }
        T* t = free_.back();
        free_.pop_back();
        if constexpr (std::is_trivially_copyable<T>::value)
            *t = kBlank;  // plain moves (a temporary is cleared and copied)
        else
            *t = T();
        return t;
    }
    void put(T* t) { free_.push_back(t); }
    size_t allocated() const { return store_.size(); }

  private:
    static inline const T kBlank{};
    std::vector<std::unique_ptr<T>> store_;
    std::vector<T*> free_;
};

// A short FIFO of plain values (pointers) that costs no allocation while it
// holds at most N: per-line and per-MSHR wait lists, which are made and
// dropped with every miss and nearly always hold one entry or none. A
// std::deque allocates a map and a 512-byte block as it is made, and again
// when it is moved from.
template <typename T, size_t N = 2>
class SmallFifo {
  public:
    SmallFifo() = default;
    SmallFifo(const SmallFifo&) = default;
    SmallFifo& operator=(const SmallFifo&) = default;
    // Element by element: std::copy became a call to memmove for N pointers.
    SmallFifo(SmallFifo&& o) noexcept : head_(o.head_), n_(o.n_), more_(std::move(o.more_)) {
        for (size_t i = 0; i < N; ++i) in_[i] = o.in_[i];
        o.head_ = o.n_ = 0;
        o.more_.clear();
    }
    SmallFifo& operator=(SmallFifo&& o) noexcept {
        head_ = o.head_;
        n_ = o.n_;
        for (size_t i = 0; i < N; ++i) in_[i] = o.in_[i];
        // Nearly always empty (a pooled MSHR or line reset from a new one):
        // then only cleared, without the vector's move and free.
        if (o.more_.empty()) more_.clear();
        else more_ = std::move(o.more_);
        o.head_ = o.n_ = 0;
        o.more_.clear();
        return *this;
    }
    bool empty() const { return head_ == n_; }
    size_t size() const { return n_ - head_; }
    void push_back(T v) {
        if (n_ < N) in_[n_] = v;
        else more_.push_back(v);
        ++n_;
    }
    T& front() { return at(head_); }
    const T& front() const { return at(head_); }
    void pop_front() {
        if (++head_ == n_) {
            head_ = n_ = 0;  // emptied: start again in place
            more_.clear();
        } else if (head_ >= N + 64 && 2 * head_ >= n_) {
            compact();  // a list that never empties stays bounded
        }
    }

    class const_iterator {
      public:
        const_iterator(const SmallFifo* f, size_t i) : f_(f), i_(i) {}
        const T& operator*() const { return f_->at(i_); }
        const_iterator& operator++() {
            ++i_;
            return *this;
        }
        bool operator!=(const const_iterator& o) const { return i_ != o.i_; }
        bool operator==(const const_iterator& o) const { return i_ == o.i_; }

      private:
        const SmallFifo* f_;
        size_t i_;
    };
    const_iterator begin() const { return const_iterator(this, head_); }
    const_iterator end() const { return const_iterator(this, n_); }

  private:
    [[gnu::noinline, gnu::cold]] void compact() {
        std::vector<T> rest;
        for (size_t i = head_; i < n_; ++i) rest.push_back(at(i));
        head_ = n_ = 0;
        more_.clear();
        for (const T& v : rest) push_back(v);
    }
    T& at(size_t i) { return i < N ? in_[i] : more_[i - N]; }
    const T& at(size_t i) const { return i < N ? in_[i] : more_[i - N]; }
    size_t head_ = 0, n_ = 0;  // entries [head_, n_): the first N in place, the rest in more_
    T in_[N] = {};
    std::vector<T> more_;
};

// A FIFO whose entries become ready at non-decreasing times: models a fixed
// pipeline latency without an event per stage. Ring buffer, bounded capacity.
//
// The ring holds only as many slots as the FIFO has ever held entries (up to
// its capacity), and an emptied FIFO starts again at slot 0: a ring sized to
// its capacity cycles through all of it however few entries it holds, so a
// system with many lightly loaded queues (one device per root port) touched
// a fresh cache line every few pushes in each of them.
template <typename T>
class TimedFifo {
  public:
    explicit TimedFifo(size_t cap = 0) { reset(cap); }
    // Names the FIFO in stall reports and overflow errors.
    void name(const std::string& n) { name_ = internName(n); }
    void reset(size_t cap) {
        buf_.assign(std::min<size_t>(cap ? cap : 1, kFirstSlots), Slot{});
        cap_ = cap;
        head_ = 0;
        size_ = 0;
    }
    bool full() const { return size_ >= cap_; }
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    size_t capacity() const { return cap_; }
    // Callers check full() first: an entry past capacity is a model bug, never
    // a write past the buffer.
    void push(Tick ready, T v) {
        if (size_ >= cap_) overflow();
        stampQueue(v, name_);
        if (size_ == buf_.size()) grow();
        size_t i = head_ + size_;
        if (i >= buf_.size()) i -= buf_.size();
        buf_[i] = Slot{ready, v};
        ++size_;
    }
    Tick headReady() const { return size_ ? buf_[head_].ready : kNever; }
    T& front() { return buf_[head_].v; }
    T pop() {
        T v = buf_[head_].v;
        if (++head_ == buf_.size()) head_ = 0;
        if (--size_ == 0) head_ = 0;
        return v;
    }

  private:
    static constexpr size_t kFirstSlots = 8;
    struct Slot {
        Tick ready;
        T v;
    };
    // Out of line, so that push (on every request's path) stays small enough to inline.
    [[noreturn, gnu::noinline, gnu::cold]] void overflow() const {
        throw std::logic_error(std::string("internal error: FIFO ") + (name_ ? name_ : "(unnamed)") +
                               " pushed past its capacity of " + std::to_string(cap_));
    }
    // Full ring below capacity: twice the slots (at most the capacity), in
    // order from 0. Out of line, so push stays small enough to inline.
    [[gnu::noinline, gnu::cold]] void grow() {
        std::vector<Slot> b(std::min(buf_.size() * 2, cap_));
        for (size_t k = 0; k < size_; ++k) b[k] = buf_[(head_ + k) % buf_.size()];
        buf_.swap(b);
        head_ = 0;
    }
    std::vector<Slot> buf_;
    size_t cap_ = 0, head_ = 0, size_ = 0;
    const char* name_ = nullptr;
};

// Entries ordered by ready time. Nearly all arrive in order and go to the
// back in O(1); a rare early one is inserted from the back. Equal times keep
// arrival order, so results are deterministic. A ring of a power-of-two
// size that only grows: a deque allocated and freed a block every few
// hundred entries and chased a map pointer on every access.
template <typename T>
class TimedQueue {
  public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    void name(const std::string& n) { name_ = internName(n); }
    void push(Tick ready, T v) {
        stampQueue(v, name_);
        if (size_ == buf_.size()) grow();
        size_t i = size_;
        // Later entries move back one place (equal times stay ahead).
        for (; i && at(i - 1).ready > ready; --i) at(i) = std::move(at(i - 1));
        at(i) = Slot{ready, std::move(v)};
        ++size_;
        if (i == 0) next_ = ready;
    }
    // Kept in a member: components read it several times per wake-up
    // (every queue's head, then the earliest of them), far more often than
    // the queue changes.
    Tick headReady() const { return next_; }
    Tick readyAt(size_t i) const { return at(i).ready; }
    T& front() { return buf_[head_].v; }
    T pop() {
        T v = std::move(buf_[head_].v);
        buf_[head_].v = T();  // holds nothing once taken
        head_ = (head_ + 1) & (buf_.size() - 1);
        --size_;
        next_ = size_ ? buf_[head_].ready : kNever;
        return v;
    }
    void clear() {
        while (size_) pop();
        head_ = 0;
    }
    // Each entry, in order (stall reports).
    template <typename F>
    void each(F f) const {
        for (size_t i = 0; i < size_; ++i) f(at(i).v);
    }

  private:
    struct Slot {
        Tick ready;
        T v;
    };
    Slot& at(size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    const Slot& at(size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    [[gnu::noinline, gnu::cold]] void grow() {
        std::vector<Slot> b(buf_.empty() ? 8 : buf_.size() * 2);
        for (size_t k = 0; k < size_; ++k) b[k] = std::move(at(k));
        buf_.swap(b);
        head_ = 0;
    }
    std::vector<Slot> buf_;
    size_t head_ = 0, size_ = 0;
    Tick next_ = kNever;  // the head's ready time (kNever: empty)
    const char* name_ = nullptr;
};

// Head of a FIFO as a wake-up source: a head already due is blocked on
// something that will wake its owner itself (a credit, a retry), so it is not one.
inline Tick due(Tick head, Tick t) { return head > t ? head : kNever; }

// Time-weighted average of an occupancy (queue depth) without sampling events.
class Occupancy {
  public:
    void set(Tick now, uint64_t level) {
        area_ += static_cast<double>(level_) * static_cast<double>(now - last_);
        last_ = now;
        level_ = level;
        if (level > max_) max_ = level;
    }
    // The level's integral over time since the last reset, up to `now`.
    double area(Tick now) const { return area_ + static_cast<double>(level_) * static_cast<double>(now - last_); }
    double mean(Tick start, Tick end) const {
        return end > start ? area(end) / static_cast<double>(end - start) : 0.0;
    }
    void reset(Tick now) {
        area_ = 0;
        last_ = now;
        max_ = level_;
    }
    uint64_t max() const { return max_; }

  private:
    double area_ = 0;
    Tick last_ = 0;
    uint64_t level_ = 0, max_ = 0;
};

}  // namespace cxlcore
