#include "cxlcore/coherence/wire.hpp"

#include <algorithm>

namespace cxlcore {

void linkMemCredits(const LinkParams& lp, uint32_t* cr) {
    cr[kM2SReq] = lp.credits_req;
    cr[kM2SRwD] = lp.credits_rwd;
    cr[kS2MNdr] = lp.credits_ndr;
    cr[kS2MDrs] = lp.credits_drs;
}

void channelCredits(const DCacheParams& cp, const LinkParams& lp, const DmaParams& dp, uint32_t* cr) {
    linkMemCredits(lp, cr);
    cr[kM2SBIRsp] = cp.credits_birsp;
    cr[kS2MBISnp] = cp.credits_bisnp;
    cr[kD2HReq] = cp.credits_d2h_req;
    cr[kD2HRsp] = cp.credits_d2h_rsp;
    cr[kD2HData] = cp.credits_d2h_data;
    cr[kH2DReq] = cp.credits_h2d_req;
    cr[kH2DRsp] = cp.credits_h2d_rsp;
    cr[kH2DData] = cp.credits_h2d_data;
    // CXL.io: posted and completion buffers for the DMA engine's read tags.
    cr[kIoUp] = cr[kIoDown] = dp.read_tags + 2;
}

void Wire::init(CxlLink* link, Component* sender, Endpoint* receiver, bool ordered) {
    link_ = link;
    sender_ = sender;
    rx_ = receiver;
    ordered_ = ordered;
}

bool Wire::transmit(Txn* m, Tick now) {
    const Channel c = m->channel();
    CreditPool& credits = link_->credits_[c];
    // A message carrying a traced request's latency notes its credit and flit there.
    Txn* traced = m->parent && m->parent->trace ? m->parent : nullptr;
    if (!credits.take(now)) {
        if (traced) traced->note("credit_wait", now, link_->name());
        credits.wait(sender_);
        return false;
    }
    ++sent_[c];
    if (traced) {
        traced->note("credit", now, link_->name());
        traced->note("flit", now, link_->name(), link_->units(*m));
    }
    rx_->receive(m, link_->send(now, *m));
    return true;
}

void Wire::send(Txn* m) {
    const int qi = ordered_ ? 0 : m->channel();
    if (!busy_) {
        // Nothing waits: m alone is what pump would try, so try it without queueing.
        if (transmit(m, sender_->now())) return;
        q_[qi].push_back(m);
        busy_ = 1u << qi;
        maxQueued_ = std::max<size_t>(maxQueued_, 1);
        return;
    }
    q_[qi].push_back(m);
    busy_ |= 1u << qi;
    pump();
}

void Wire::pump() {
    if (!busy_) return;  // the owner pumps every wire on every wake-up
    const Tick now = sender_->now();
    size_t total = 0;
    for (uint32_t mask = busy_; mask; mask &= mask - 1) {
        const int qi = __builtin_ctz(mask);
        auto& q = q_[qi];
        while (!q.empty() && transmit(q.front(), now)) q.pop_front();
        if (q.empty()) busy_ &= ~(1u << qi);
        total += q.size();
    }
    maxQueued_ = std::max(maxQueued_, total);
}

size_t Wire::queued() const {
    size_t n = 0;
    for (auto& q : q_) n += q.size();
    return n;
}

}  // namespace cxlcore
