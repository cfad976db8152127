// One direction of a coherent device's link: per-channel queues (or one
// ordered queue) over the link's flit channel and its per-channel credits;
// and the Endpoint that receives its messages.
#pragma once

#include <array>
#include <vector>

#include "cxlcore/coherence/protocol.hpp"
#include "cxlcore/link/link.hpp"

namespace cxlcore {

class Endpoint;

// A FIFO of messages waiting for credits: a power-of-two ring that only
// grows. A std::deque allocated and freed a block whenever its ends crossed one.
class MsgRing {
  public:
    bool empty() const { return head_ == tail_; }
    size_t size() const { return tail_ - head_; }
    void push_back(Txn* m) {
        if (size() == buf_.size()) grow();
        buf_[tail_++ & (buf_.size() - 1)] = m;
    }
    Txn* front() const { return buf_[head_ & (buf_.size() - 1)]; }
    void pop_front() {
        if (++head_ == tail_) head_ = tail_ = 0;
    }
    template <typename F>
    void each(F f) const {
        for (size_t i = head_; i != tail_; ++i) f(const_cast<const Txn*>(buf_[i & (buf_.size() - 1)]));
    }

  private:
    void grow() {
        std::vector<Txn*> b(buf_.empty() ? 8 : 2 * buf_.size());
        for (size_t i = head_; i != tail_; ++i) b[i - head_] = buf_[i & (buf_.size() - 1)];
        tail_ -= head_;
        head_ = 0;
        buf_.swap(b);
    }
    std::vector<Txn*> buf_;
    size_t head_ = 0, tail_ = 0;
};

class Wire {
  public:
    // `ordered`: every message leaves in the order sent (host to device: a
    // snoop never passes an earlier GO or write to the same line).
    void init(CxlLink* link, Component* sender, Endpoint* receiver, bool ordered);
    void send(Txn* m);
    void pump();
    // The receiver freed the buffer of a message of channel c.
    [[gnu::always_inline]] void giveCredit(Channel c, Tick now) { link_->credits_[c].give(now); }
    size_t queued() const;
    size_t maxQueued() const { return maxQueued_; }
    uint64_t sent(Channel c) const { return sent_[c]; }
    template <typename F>
    void each(F f) const {
        for (auto& q : q_) q.each(f);
    }

  private:
    // Takes m's credit and puts it on the link, or (no credit) asks to be
    // woken when one lands and returns false.
    bool transmit(Txn* m, Tick now);
    CxlLink* link_ = nullptr;
    Component* sender_ = nullptr;
    Endpoint* rx_ = nullptr;
    bool ordered_ = false;
    std::array<MsgRing, kNumChannels> q_;
    std::array<uint64_t, kNumChannels> sent_ = {};
    uint32_t busy_ = 0;  // queues holding messages
    size_t maxQueued_ = 0;
};

class Endpoint : public Component, public LinkReceiver {
  public:
    using Component::Component;
    // final: a wire's call through Endpoint* is direct and inlined.
    void receive(Txn* m, Tick arrival) final {
        inbox_.push(arrival, m);
        requestWake(arrival);
    }

  protected:
    TimedQueue<Txn*> inbox_;
};

// Credits of every channel of one device's link (CxlLink::setCredits).
// The CXL.mem credits a link's own parameters set (requests, writes, NDR and DRS responses).
void linkMemCredits(const LinkParams& lp, uint32_t* perChannel);
void channelCredits(const DCacheParams& cp, const LinkParams& lp, const DmaParams& dp, uint32_t* perChannel);

}  // namespace cxlcore
