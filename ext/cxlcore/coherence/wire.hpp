// One direction of a coherent device's link: per-class queues (or one
// ordered queue) and per-class credits over the flit channel they share; and
// the Endpoint that receives its messages.
#pragma once

#include <array>
#include <deque>

#include "cxlcore/coherence/messages.hpp"
#include "cxlcore/link/link.hpp"

namespace cxlcore {

class Endpoint;

class Wire {
  public:
    void init(FlitChannel* ch, Component* sender, Endpoint* receiver, bool ordered, const uint32_t* credits,
              Tick creditReturn, uint32_t tlpOverhead);
    void send(Msg* m);
    void pump();
    void giveCredit(CClass c, Tick now) { credits_[c].give(now); }
    size_t queued() const;
    size_t maxQueued() const { return maxQueued_; }
    uint64_t sent(CClass c) const { return sent_[c]; }
    uint32_t units(const Msg* m) const;
    template <typename F>
    void each(F f) const {
        for (auto& q : q_)
            for (const Msg* m : q) f(m);
    }

  private:
    FlitChannel* ch_ = nullptr;
    Component* sender_ = nullptr;
    Endpoint* rx_ = nullptr;
    bool ordered_ = false;
    uint32_t tlpOverhead_ = 24;
    std::array<CreditPool, kNumCClasses> credits_;
    std::array<std::deque<Msg*>, kNumCClasses> q_;
    std::array<uint64_t, kNumCClasses> sent_ = {};
    uint32_t busy_ = 0;  // queues holding messages
    size_t maxQueued_ = 0;
};

class Endpoint : public Component {
  public:
    using Component::Component;
    void receive(Msg* m, Tick arrival) {
        inbox_.push(arrival, m);
        requestWake(arrival);
    }

  protected:
    TimedQueue<Msg*> inbox_;
};

// Credits of each class on one device's link, the same both ways.
void channelCredits(const DCacheParams& cp, const LinkParams& lp, const DmaParams& dp, uint32_t* cr);

}  // namespace cxlcore
