// Simulation kernel shared by every model: time, transactions, the host
// interface that schedules wake-ups, and the request/response port protocol.
#pragma once

#include <cstdint>
#include <deque>
#include <iterator>
#include <utility>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace cxlcore {

using Tick = uint64_t;  // picoseconds, gem5's default tick
constexpr Tick kNever = std::numeric_limits<Tick>::max();
constexpr uint32_t kLineBytes = 64;

inline Tick nsToTicks(double ns) { return static_cast<Tick>(ns * 1000.0 + 0.5); }
inline double ticksToNs(Tick t) { return static_cast<double>(t) / 1000.0; }

// Bad parameters: names the field and the allowed values.
class ConfigError : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};

// A run that stopped making progress: the message names the component and
// queue holding the oldest request and its age, so a hang is never silent.
class StallError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

enum class Op : uint8_t { Read, Write };

// Checkpoints. Some timing state outlives a drain (open rows, refresh phase,
// the flit being packed, credits still on their way back), so a host that
// checkpoints (gem5) walks it as named integers; the same walk saves and
// restores. Components are walked only when idle: no transaction in flight.
class StateVisitor {
  public:
    virtual ~StateVisitor() = default;
    virtual bool loading() const = 0;
    virtual void field(const std::string& name, uint64_t& v) = 0;
    template <typename T>
    void operator()(const std::string& name, T& x) {
        uint64_t u = static_cast<uint64_t>(x);
        field(name, u);
        x = static_cast<T>(u);
    }
};

// Where a request's latency went; indices of Txn::stage.
enum Stage : uint8_t {
    kStageUncore,      // core side: LLC miss path and mesh to the memory port
    kStageHostPort,    // CXL host bridge / root port (both directions)
    kStageLinkReq,     // link host->device (or inter-socket link out)
    kStageDevice,      // device controller pipeline (both directions)
    kStageMediaQueue,  // waiting in the DRAM controller queue
    kStageMediaService,// DRAM commands and data burst
    kStageLinkResp,    // link device->host (or inter-socket link back)
    kNumStages
};

struct Txn {
    uint64_t id = 0;
    uint64_t addr = 0;     // address as seen by the component holding it
    uint64_t hostAddr = 0; // address the core issued
    uint32_t size = kLineBytes;
    Op op = Op::Read;
    uint16_t src = 0;      // requesting core
    uint8_t devLoad = 0;   // CXL DevLoad field of the response (0..3)
    uint8_t tag = 0;       // requester-private
    bool own = false;      // a read for ownership (a store's write-allocate)
    bool internal = false; // made by a component for itself (never reaches a core)
    bool live = false;     // handed out by a TxnPool and not yet returned
    const char* at = "issued";  // the queue holding it (interned name), for stall reports
    Tick birth = 0;
    Tick mark = 0;         // time the current stage began
    Tick stage[kNumStages] = {};

    // Stages are contiguous: each component closes its stage when it hands the
    // transaction on, so the stages always add up to the total latency.
    void leave(Stage s, Tick now) { stage[s] += now - mark; mark = now; }
};

// Names of queues, kept for the whole process: transactions point at them.
inline const char* internName(const std::string& name) {
    static std::mutex m;
    static std::set<std::string> names;
    std::lock_guard<std::mutex> g(m);
    return names.insert(name).first->c_str();
}

// Transactions are recycled so memory stays flat however long a run is. The
// pool knows which are in flight, so a stalled run can say where the oldest is.
class TxnPool {
  public:
    Txn* get() {
        Txn* t;
        if (free_.empty()) {
            storage_.emplace_back(new Txn());
            t = storage_.back().get();
        } else {
            t = free_.back();
            free_.pop_back();
            *t = Txn();
        }
        t->id = nextId_++;
        t->live = true;
        return t;
    }
    void put(Txn* t) {
        t->live = false;
        ++returned_;
        free_.push_back(t);
    }
    size_t allocated() const { return storage_.size(); }
    size_t live() const { return storage_.size() - free_.size(); }
    uint64_t returned() const { return returned_; }
    // The live transaction issued first (nullptr when none is live).
    const Txn* oldest() const {
        const Txn* o = nullptr;
        for (auto& t : storage_)
            if (t->live && (!o || t->birth < o->birth || (t->birth == o->birth && t->id < o->id))) o = t.get();
        return o;
    }

  private:
    std::vector<std::unique_ptr<Txn>> storage_;
    std::vector<Txn*> free_;
    uint64_t nextId_ = 1, returned_ = 0;
};

// Queues of transactions stamp each one with their name as it enters.
inline void stampQueue(Txn* t, const char* name) {
    if (name) t->at = name;
}
template <typename T>
inline void stampQueue(const T&, const char*) {}

class Component;

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
        *t = T();
        return t;
    }
    void put(T* t) { free_.push_back(t); }
    size_t allocated() const { return store_.size(); }

  private:
    std::vector<std::unique_ptr<T>> store_;
    std::vector<T*> free_;
};

// The engine a component lives in: the standalone EventLoop or a gem5 wrapper.
class Host {
  public:
    virtual ~Host() = default;
    virtual Tick now() const = 0;
    // The component's earliest pending work is now at t (never earlier than now).
    virtual void wakeAt(Component* c, Tick t) = 0;
    virtual void attach(Component*) {}
    virtual void detach(Component*) {}
};

// A component keeps its own pending work and asks its host for one wake-up
// at the earliest of it; an idle component costs nothing.
class Component {
  public:
    explicit Component(Host& host) : host_(host) { host_.attach(this); }
    virtual ~Component() { host_.detach(this); }
    Component(const Component&) = delete;
    Component& operator=(const Component&) = delete;

    // Called by the host at the requested time; a wake-up superseded by an
    // earlier one is ignored.
    void fire(Tick t) {
        if (t != scheduled_) return;
        scheduled_ = kNever;
        process();
    }
    void requestWake(Tick t) {
        const Tick n = host_.now();
        if (t < n) t = n;
        if (t < scheduled_) {
            scheduled_ = t;
            host_.wakeAt(this, t);
        }
    }
    Tick scheduled() const { return scheduled_; }
    Tick now() const { return host_.now(); }
    size_t slot = 0;  // the host's index for this component

  protected:
    virtual void process() = 0;
    Host& host_;

  private:
    Tick scheduled_ = kNever;
};

class Requester;

// Receives requests. tryReq returns false when there is no room (no credit);
// the target then calls the requester's retryReq once it has room.
class Target {
  public:
    virtual ~Target() = default;
    virtual bool tryReq(Txn* t) = 0;
    // Response path back-pressure: the requester had no room for a response.
    virtual void retryResp() {}
    void setRequester(Requester* r) { up_ = r; }
    Requester* requester() const { return up_; }

  protected:
    Requester* up_ = nullptr;
};

class Requester {
  public:
    virtual ~Requester() = default;
    virtual bool tryResp(Txn* t) = 0;
    virtual void retryReq() = 0;
};

// Called by the event loop every so many events, to notice a run that has
// stopped making progress while events still fire.
class Watch {
  public:
    virtual ~Watch() = default;
    virtual void check(Tick now) = 0;
};

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
    // the earlier of its two children. One comparison per level.
    void settle(size_t slot, Tick t) {
        Node* tree = tree_.data();
        size_t i = cap_ + slot;
        tree[i].t = t;
        for (; i > 1; i >>= 1) {
            const Node& s = tree[i ^ 1];
            // A right child's sibling holds the lower slots: it wins ties.
            const bool sib = s.t < t || (s.t == t && (i & 1));
            t = sib ? s.t : t;
            slot = sib ? s.slot : slot;
            tree[i >> 1] = Node{t, slot};
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

// Progress watchdog over a pool's transactions: a run whose requests stop
// completing ends with a StallError naming the queue that holds the oldest
// request and its age, instead of hanging or reporting numbers it did not
// compute. `window`: how long no request may complete while some are in
// flight (far above any request's latency at valid parameters).
class Watchdog : public Watch {
  public:
    static constexpr Tick kDefaultWindow = 10'000'000'000ull;  // 10 ms
    explicit Watchdog(const TxnPool& pool, Tick window = kDefaultWindow) : pool_(pool), window_(window) {}
    void check(Tick now) override {
        if (pool_.returned() != returned_ || pool_.live() == 0) {
            returned_ = pool_.returned();
            since_ = now;
            return;
        }
        if (window_ && now - since_ > window_)
            throw StallError(report(now, "no request completed for " + fmtTime(now - since_)));
    }
    // Starts a fresh window: a host that checks only while requests are in
    // flight (gem5) calls this when the first one arrives after a quiet spell.
    void restart(Tick now) {
        returned_ = pool_.returned();
        since_ = now;
    }
    Tick window() const { return window_; }
    // The event queue ran dry: nothing can move any request still in flight.
    void drained(Tick now) const {
        if (pool_.live()) throw StallError(report(now, "no event is left to move the requests in flight"));
    }
    std::string report(Tick now, const std::string& why) const {
        std::ostringstream os;
        os << "simulation stalled at " << fmtTime(now) << ": " << why << "; " << pool_.live()
           << " request(s) in flight";
        if (const Txn* o = pool_.oldest())
            os << "; the oldest (txn " << o->id << ", " << (o->op == Op::Read ? "read" : "write") << " of 0x"
               << std::hex << o->hostAddr << std::dec << ") is in " << o->at << ", issued "
               << fmtTime(now > o->birth ? now - o->birth : 0) << " ago";
        return os.str();
    }
    static std::string fmtTime(Tick t) {
        std::ostringstream os;
        os.precision(4);
        if (t >= 1'000'000'000ull) os << double(t) / 1e9 << " ms";
        else if (t >= 1'000'000ull) os << double(t) / 1e6 << " us";
        else os << double(t) / 1e3 << " ns";
        return os.str();
    }

  private:
    const TxnPool& pool_;
    Tick window_, since_ = 0;
    uint64_t returned_ = 0;
};

// A FIFO whose entries become ready at non-decreasing times: models a fixed
// pipeline latency without an event per stage. Ring buffer, bounded capacity.
template <typename T>
class TimedFifo {
  public:
    explicit TimedFifo(size_t cap = 0) { reset(cap); }
    // Names the FIFO in stall reports and overflow errors.
    void name(const std::string& n) { name_ = internName(n); }
    void reset(size_t cap) {
        buf_.assign(cap ? cap : 1, Slot{});
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
        if (size_ >= cap_)
            throw std::logic_error(std::string("internal error: FIFO ") + (name_ ? name_ : "(unnamed)") +
                                   " pushed past its capacity of " + std::to_string(cap_));
        stampQueue(v, name_);
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
        --size_;
        return v;
    }

  private:
    struct Slot {
        Tick ready;
        T v;
    };
    std::vector<Slot> buf_;
    size_t cap_ = 0, head_ = 0, size_ = 0;
    const char* name_ = nullptr;
};

// Entries ordered by ready time. Nearly all arrive in order and go to the
// back in O(1); a rare early one is inserted from the back. Equal times keep
// arrival order, so results are deterministic.
template <typename T>
class TimedQueue {
  public:
    bool empty() const { return q_.empty(); }
    size_t size() const { return q_.size(); }
    void name(const std::string& n) { name_ = internName(n); }
    void push(Tick ready, T v) {
        stampQueue(v, name_);
        if (q_.empty() || q_.back().first <= ready) {
            q_.emplace_back(ready, v);
            return;
        }
        auto it = q_.end();
        while (it != q_.begin() && std::prev(it)->first > ready) --it;
        q_.emplace(it, ready, v);
    }
    Tick headReady() const { return q_.empty() ? kNever : q_.front().first; }
    Tick readyAt(size_t i) const { return q_[i].first; }
    T& front() { return q_.front().second; }
    T pop() {
        T v = q_.front().second;
        q_.pop_front();
        return v;
    }
    void clear() { q_.clear(); }

  private:
    std::deque<std::pair<Tick, T>> q_;
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
    double mean(Tick start, Tick end) const {
        double a = area_ + static_cast<double>(level_) * static_cast<double>(end - last_);
        return end > start ? a / static_cast<double>(end - start) : 0.0;
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

// SplitMix64: small, seedable, good enough for traffic generation.
class Rng {
  public:
    explicit Rng(uint64_t seed = 1) : s_(seed) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
    uint64_t below(uint64_t n) { return n ? next() % n : 0; }
    void checkpoint(StateVisitor& v, const std::string& n) { v(n, s_); }

  private:
    uint64_t s_;
};

}  // namespace cxlcore
