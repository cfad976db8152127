#include "cxlcore/coherence/wire.hpp"

#include <algorithm>
#include <string>
#ifdef CXL_TRACE
#include <cstdio>
#include <cstdlib>
#endif

namespace cxlcore {

void channelCredits(const DCacheParams& cp, const LinkParams& lp, const DmaParams& dp, uint32_t* cr) {
    const uint32_t c[kNumCClasses] = {cp.credits_d2h_req, cp.credits_d2h_rsp, cp.credits_d2h_data,
                                      cp.credits_h2d_req, cp.credits_h2d_rsp, cp.credits_h2d_data,
                                      lp.credits_req,     lp.credits_rwd,     cp.credits_birsp,
                                      lp.credits_drs,     cp.credits_bisnp,   dp.read_tags + 2,
                                      dp.read_tags + 2};
    std::copy(c, c + kNumCClasses, cr);
}

void Wire::init(FlitChannel* ch, Component* sender, Endpoint* receiver, bool ordered, const uint32_t* credits,
                Tick creditReturn, uint32_t tlpOverhead) {
    ch_ = ch;
    sender_ = sender;
    rx_ = receiver;
    ordered_ = ordered;
    tlpOverhead_ = tlpOverhead;
    for (int c = 0; c < kNumCClasses; ++c) credits_[c].init(credits[c], creditReturn);
}

namespace {
// The CXL channel a (non-CXL.io) message travels on, for its size.
Channel channelOf(const Msg* m) {
    switch (m->cls) {
        case kCD2HReq: return Channel::D2HReq;
        case kCD2HRsp: return Channel::D2HRsp;
        case kCD2HData: return Channel::D2HData;
        case kCH2DReq: return Channel::H2DReq;
        case kCH2DRsp: return Channel::H2DRsp;
        case kCH2DData: return Channel::H2DData;
        case kCM2SReq: return Channel::M2SReq;
        case kCM2SRwD: return Channel::M2SRwD;
        case kCM2SBIRsp: return Channel::M2SBIRsp;
        case kCS2M: return m->op == Opc::MemData ? Channel::S2MDrs : Channel::S2MNdr;
        case kCS2MBISnp: return Channel::S2MBISnp;
        default: protocolError(std::string("no CXL.cachemem channel for class ") + className(m->cls));
    }
}
bool isIo(const Msg* m) { return m->cls == kCIoD2H || m->cls == kCIoH2D; }
// A read request TLP carries no payload; writes and completions carry m->bytes.
uint32_t tlpPayload(const Msg* m) { return m->op == Opc::IoMemRd ? 0 : m->bytes; }
}  // namespace

uint32_t Wire::units(const Msg* m) const {
    return isIo(m) ? tlpUnits(tlpOverhead_, tlpPayload(m)) : messageUnits(channelOf(m));
}

void Wire::send(Msg* m) {
    const int qi = ordered_ ? 0 : m->cls;
    q_[qi].push_back(m);
    busy_ |= 1u << qi;
    pump();
}

void Wire::pump() {
    const Tick now = sender_->now();
    size_t total = 0;
    for (uint32_t mask = busy_; mask; mask &= mask - 1) {
        const int qi = __builtin_ctz(mask);
        auto& q = q_[qi];
        while (!q.empty()) {
            Msg* m = q.front();
            if (!credits_[m->cls].take(now)) {
                credits_[m->cls].wait(sender_);
                break;
            }
            q.pop_front();
            const uint32_t u = units(m);
            const uint32_t data = isIo(m) ? tlpPayload(m) : messageFormat(channelOf(m)).dataBytes;
            const Tick arr = ch_->send(now, u, data);
#ifdef CXL_TRACE
            if (getenv("TRACE_LINE") && m->line == strtoull(getenv("TRACE_LINE"), nullptr, 16))
                fprintf(stderr, "%10.3f %s dev%u %s %s v=%llu bogus=%d -> %10.3f\n", ticksToNs(now),
                        ordered_ ? "DOWN" : "UP  ", m->dev, opName(m->op), stateName(m->state),
                        (unsigned long long)m->value, m->bogus, ticksToNs(arr));
#endif
            ++sent_[m->cls];
            rx_->receive(m, arr);
        }
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
