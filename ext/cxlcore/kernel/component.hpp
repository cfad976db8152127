// Components, the host that wakes them, and the request/response port protocol.
#pragma once

#include <cstddef>

#include "cxlcore/kernel/txn.hpp"

namespace cxlcore {

class Component;

// The engine a component lives in: the standalone EventLoop or a gem5 wrapper.
class Host {
  public:
    virtual ~Host() = default;
    virtual Tick now() const = 0;
    // The component's earliest pending work is now at t (never earlier than now).
    virtual void wakeAt(Component* c, Tick t) = 0;
    virtual void attach(Component*) {}
    virtual void detach(Component*) {}
    // Where the host keeps its current time, if in memory (the standalone
    // engine): components read it there instead of through a virtual call,
    // several times per request on every path.
    const Tick* clock() const { return clock_; }

    // The component the host is running now, if the host tracks it (the
    // standalone engine), and the wake-up it asked for meanwhile, which the
    // host settles once it returns: a component sets it without a call.
    Component* firing = nullptr;
    Tick firingNext = kNever;

  protected:
    const Tick* clock_ = nullptr;
};

// A component keeps its own pending work and asks its host for one wake-up
// at the earliest of it; an idle component costs nothing.
class Component {
  public:
    explicit Component(Host& host) : host_(host), clock_(host.clock()) { host_.attach(this); }
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
    // Inlined: called on every message and deferral, and a call cost as
    // much as the work.
    [[gnu::always_inline]] void requestWake(Tick t) {
        // A time at or after the wake-up held changes nothing (the clamp to
        // now only raises it): about half the calls, settled before reading the clock.
        if (t >= scheduled_) return;
        const Tick n = now();
        if (t < n) t = n;
        if (t < scheduled_) {
            scheduled_ = t;
            if (host_.firing == this)
                host_.firingNext = t;  // what wakeAt would do, without the virtual call
            else
                host_.wakeAt(this, t);
        }
    }
    Tick scheduled() const { return scheduled_; }
    Tick now() const { return clock_ ? *clock_ : host_.now(); }
    size_t slot = 0;  // the host's index for this component

  protected:
    virtual void process() = 0;
    Host& host_;

  private:
    const Tick* clock_;
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
    // For a requester with a retrier (Requester::retrier): the time from
    // which its refused requests may be tried again, when the target would
    // have called retryReq on a wake-up of its own then (kNever: none
    // pending); retried() tells it the requester took that retry.
    virtual Tick retryAt() const { return kNever; }
    virtual void retried() {}
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
    // A component that, woken at a target's retryAt(), takes the retry
    // itself: the target then needs no wake-up of its own only to call
    // retryReq (nullptr: retryReq is called).
    virtual Component* retrier() { return nullptr; }
    // A core's write (a write-back or a non-temporal store) was taken by the
    // memory target its home agent sends it to; the global-observation
    // message reaches the core at `go`. A core frees the write's buffer then,
    // not when the memory completes it (the home agent tracks it from here).
    virtual void posted(Txn*, Tick /*go*/) {}
};

// Called by the event loop every so many events, to notice a run that has
// stopped making progress while events still fire.
class Watch {
  public:
    virtual ~Watch() = default;
    virtual void check(Tick now) = 0;
};

}  // namespace cxlcore
