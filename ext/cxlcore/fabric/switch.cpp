#include "cxlcore/fabric/switch.hpp"

#include <algorithm>

namespace cxlcore {

CxlSwitch::CxlSwitch(Host& host, const SwitchParams& p, const std::string& where, CxlLink& up, uint64_t window)
    : Component(host), p_((p.validate(where), p)), where_(where), name_(internName(where)), up_(up),
      window_(window), lat_(nsToTicks(p.latency_ns)) {
    // The upstream port's receive buffers are what the link's M2S credits count.
    usIn_[0].reset(up.params().credits_req);
    usIn_[1].reset(up.params().credits_rwd);
    usIn_[0].name(where + ".up.rx (M2S Req receive buffer)");
    usIn_[1].name(where + ".up.rx (M2S RwD receive buffer)");
    usOut_.reset(p_.port_queue);
    usOut_.name(where + ".up.tx (S2M responses waiting for the upstream link's credits)");
}

void CxlSwitch::addPort(CxlLink* link, MemEndpoint* below) {
    auto port = std::make_unique<Port>(*this, uint32_t(ports_.size()));
    port->link = link;
    port->below = below;
    port->egress.reset(p_.port_queue);
    port->in.reset(p_.port_queue);
    const std::string n = where_ + ".dsp" + std::to_string(port->index);
    port->egress.name(n + ".egress (M2S requests waiting for the link's credits)");
    port->in.name(n + ".rx (S2M responses crossing the switch)");
    port->weight = p_.weighted_arbitration ? link->params().lanes : 1;
    link->respBuffer_.init(p_.port_queue, link->creditReturn());
    below->attach(port.get());
    ports_.push_back(std::move(port));
}

void CxlSwitch::finish() {
    // Over all of its downstream ports: a count the decoder refuses names them.
    hdm_ = std::make_unique<HdmDecoder>(where_ + ".dsp", 0, window_, uint32_t(ports_.size()), p_.interleave_bytes);
    grants_ = ports_[0]->weight;
}

void CxlSwitch::receive(Txn* t, Tick arrival) {
    const Tick ready = arrival + lat_;
    const int k = t->isWrite();
    // With nothing queued in either class and the port's egress empty, the
    // request leaves at `ready` when a credit has landed by then, with no
    // event: the upstream link delivers in order, so each port's sends stay in order.
    if (usIn_[0].empty() && usIn_[1].empty() && !egressBlocked_[0] && !egressBlocked_[1]) {
        const HdmDecoder::Target tg = hdm_->decode(t->addr);
        Port& p = *ports_[tg.port];
        const Channel c = t->channel();
        if (p.egress.empty() && p.link->credits_[c].available(ready)) {
            t->addr = tg.dpa;
            sendDown(p, t, ready);
            up_.credits_[c].give(ready);
            return;
        }
    }
    usIn_[k].push(ready, t);
    requestWake(ready);
}

void CxlSwitch::fromBelow(Port& p, Txn* t, Tick arrival) {
    // The device took a receive-buffer entry for it (the link's respBuffer_).
    // Responses wait for their turn: ports' arrivals are not in order with each other.
    p.in.push(arrival + lat_, t);
    inBusy_ |= 1u << p.index;
    requestWake(arrival + lat_);
}

bool CxlSwitch::sendDown(Port& p, Txn* x, Tick t) {
    if (!p.link->credits_[x->channel()].take(t)) {
        x->note("credit_wait", t, p.link->name());
        return false;
    }
    ++stats_.requests;
    ++p.stats.requests;
    p.below->receive(x, p.link->carry(*x, t, kStageSwitch, name_));
    return true;
}

bool CxlSwitch::sendUp(Txn* x, Tick t) {
    const Channel c = x->channel();
    if (!up_.respBuffer_.available(t) || !up_.credits_[c].available(t)) {
        x->note("credit_wait", t, up_.name());
        return false;
    }
    up_.respBuffer_.take(t);
    up_.credits_[c].take(t);
    ++stats_.responses;
    upPort_->receive(x, up_.carry(*x, t, kStageSwitch, name_));
    return true;
}

void CxlSwitch::route(Tick t) {
    for (int k = 0; k < 2; ++k) {
        while (!egressBlocked_[k] && usIn_[k].headReady() <= t) {
            Txn* x = usIn_[k].front();
            const HdmDecoder::Target tg = hdm_->decode(x->addr);
            Port& p = *ports_[tg.port];
            if (p.egress.full()) {
                // Head-of-line: the class waits, holding its buffer and credit, until the port drains.
                egressBlocked_[k] = true;
                ++stats_.egressFull;
                break;
            }
            usIn_[k].pop();
            up_.credits_[x->channel()].give(t);
            x->addr = tg.dpa;
            if (p.egress.empty() && sendDown(p, x, t)) continue;
            p.egress.push(t, x);
            egBusy_ |= 1u << p.index;
        }
    }
}

uint32_t CxlSwitch::next(uint32_t mask, uint32_t from) const {
    // The first port at or after `from`, wrapping, whose bit is set in `mask` (nonzero).
    const uint32_t hi = mask >> from << from;
    return uint32_t(__builtin_ctz(hi ? hi : mask));
}

void CxlSwitch::arbitrate(Tick t) {
    // In turns over the downstream ports holding responses: a port sends up
    // to its weight in its turn (one, or its link's lanes), then the next.
    uint32_t ready = 0;  // ports whose head response is ready by t
    for (uint32_t m = inBusy_; m; m &= m - 1) {
        const uint32_t i = uint32_t(__builtin_ctz(m));
        if (ports_[i]->in.headReady() <= t) ready |= 1u << i;
    }
    const uint32_t n = uint32_t(ports_.size());
    while (ready && !usOut_.full()) {
        if (!(ready >> rr_ & 1)) {  // the port whose turn it is has nothing: the turn passes on
            rr_ = next(ready, rr_);
            grants_ = ports_[rr_]->weight;
        }
        Port& p = *ports_[rr_];
        p.stats.responseWait += t - p.in.headReady();
        ++p.stats.responses;
        Txn* x = p.in.pop();
        if (p.in.empty()) inBusy_ &= ~(1u << rr_);
        if (p.in.headReady() > t) ready &= ~(1u << rr_);
        p.link->credits_[x->channel()].give(t);
        p.link->respBuffer_.give(t);
        x->addr = hdm_->encode(p.index, x->addr);
        if (!(usOut_.empty() && sendUp(x, t))) usOut_.push(t, x);
        if (--grants_ == 0) {
            rr_ = rr_ + 1 == n ? 0 : rr_ + 1;
            grants_ = ports_[rr_]->weight;
        }
    }
}

bool CxlSwitch::flushUp(Tick t) {
    while (usOut_.headReady() <= t) {
        if (!sendUp(usOut_.front(), t)) {
            ++stats_.creditWaits;
            if (!up_.respBuffer_.available(t)) up_.respBuffer_.wait(this);
            else up_.credits_[usOut_.front()->channel()].wait(this);
            return true;
        }
        usOut_.pop();
    }
    return false;
}

void CxlSwitch::process() {
    const Tick t = now();
    // Upstream first: each response sent frees an entry the arbiter may fill;
    // what the arbiter could not send at once waits for the link's credits.
    bool upWait = flushUp(t);
    if (!upWait) {
        arbitrate(t);
        upWait = flushUp(t);
    }
    // Downstream egress: a request sent frees an entry a blocked class may take.
    for (uint32_t m = egBusy_; m; m &= m - 1) {
        Port& p = *ports_[__builtin_ctz(m)];
        while (p.egress.headReady() <= t) {
            Txn* x = p.egress.front();
            if (!sendDown(p, x, t)) {
                ++stats_.creditWaits;
                p.link->credits_[x->channel()].wait(this);
                break;
            }
            p.egress.pop();
            egressBlocked_[0] = egressBlocked_[1] = false;
        }
        if (p.egress.empty()) egBusy_ &= ~(1u << p.index);
    }
    route(t);
    Tick w = upWait ? kNever : due(usOut_.headReady(), t);
    for (int k = 0; k < 2; ++k)
        if (!egressBlocked_[k]) w = std::min(w, due(usIn_[k].headReady(), t));
    if (!usOut_.full())
        for (uint32_t m = inBusy_; m; m &= m - 1) w = std::min(w, due(ports_[__builtin_ctz(m)]->in.headReady(), t));
    for (uint32_t m = egBusy_; m; m &= m - 1) w = std::min(w, due(ports_[__builtin_ctz(m)]->egress.headReady(), t));
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
