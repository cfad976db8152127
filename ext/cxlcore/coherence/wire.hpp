// One direction of a coherent device's link: per-channel queues (or one
// ordered queue) over the link's flit channel and its per-channel credits;
// and the Endpoint that receives its messages.
#pragma once

#include <array>
#include <deque>

#include "cxlcore/coherence/protocol.hpp"
#include "cxlcore/link/link.hpp"

namespace cxlcore {

class Endpoint;

class Wire {
  public:
    // `ordered`: every message leaves in the order sent (host to device: a
    // snoop never passes an earlier GO or write to the same line).
    void init(CxlLink* link, Component* sender, Endpoint* receiver, bool ordered);
    void send(Txn* m);
    void pump();
    // The receiver freed the buffer of a message of channel c.
    void giveCredit(Channel c, Tick now) { link_->credits_[c].give(now); }
    size_t queued() const;
    size_t maxQueued() const { return maxQueued_; }
    uint64_t sent(Channel c) const { return sent_[c]; }
    template <typename F>
    void each(F f) const {
        for (auto& q : q_)
            for (const Txn* m : q) f(m);
    }

  private:
    CxlLink* link_ = nullptr;
    Component* sender_ = nullptr;
    Endpoint* rx_ = nullptr;
    bool ordered_ = false;
    std::array<std::deque<Txn*>, kNumChannels> q_;
    std::array<uint64_t, kNumChannels> sent_ = {};
    uint32_t busy_ = 0;  // queues holding messages
    size_t maxQueued_ = 0;
};

class Endpoint : public Component, public LinkReceiver {
  public:
    using Component::Component;
    void receive(Txn* m, Tick arrival) override {
        inbox_.push(arrival, m);
        requestWake(arrival);
    }

  protected:
    TimedQueue<Txn*> inbox_;
};

// Credits of every channel of one device's link (CxlLink::setCredits).
void channelCredits(const DCacheParams& cp, const LinkParams& lp, const DmaParams& dp, uint32_t* perChannel);

}  // namespace cxlcore
