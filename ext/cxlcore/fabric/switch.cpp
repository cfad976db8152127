#include "cxlcore/fabric/switch.hpp"

#include <algorithm>

namespace cxlcore {

namespace {
constexpr uint8_t kUnbound = 0xff;
}

CxlSwitch::CxlSwitch(Host& host, const SwitchParams& p, const std::string& where)
    : Component(host), p_((p.validate(where), p)), where_(where), name_(internName(where)), lat_(nsToTicks(p.latency_ns)) {
    std::fill(std::begin(hostUsp_), std::end(hostUsp_), kUnbound);
    std::fill(std::begin(usHead_), std::end(usHead_), kNever);
    std::fill(std::begin(inHead_), std::end(inHead_), kNever);
    cong_ = p_.egress_congestion != 0;
    congInterval_ = nsToTicks(p_.congestion_interval_ns);
    unrouted_.name(where + ".unrouted (completions of requests no committed decoder covers)");
}

void CxlSwitch::addPort(CxlLink* link, MemEndpoint* below) {
    if (ports_.size() >= 32) throw ConfigError(where_ + ".dsp: more than 32 downstream ports; allowed: 1 to 32");
    auto port = std::make_unique<Port>(*this, uint32_t(ports_.size()));
    port->link = link;
    port->below = below;
    port->in.reset(p_.port_queue);
    const std::string n = where_ + ".dsp" + std::to_string(port->index);
    static const char* const kinds[kM2SChannels] = {"Req", "RwD", "BIRsp"};
    for (int k = 0; k < kM2SChannels; ++k) {
        port->egress[k].reset(p_.port_queue);
        port->egress[k].name(n + ".egress (M2S " + kinds[k] + " waiting for the link's credits)");
    }
    port->in.name(n + ".rx (S2M responses crossing the switch)");
    port->weight = p_.weighted_arbitration ? link->params().lanes : 1;
    link->respBuffer_.init(p_.port_queue, link->creditReturn());
    below->attach(port.get());
    if (ports_.empty()) grants_ = port->weight;
    ports_.push_back(std::move(port));
}

MemEndpoint& CxlSwitch::addUpstream(CxlLink& link, const std::string& name) {
    if (usps_.size() >= 32) throw ConfigError(where_ + ".up: more than 32 upstream ports; allowed: 1 to 32");
    auto u = std::make_unique<Usp>(*this, uint32_t(usps_.size()), link);
    u->name = name;
    // The upstream port's receive buffers are what the link's M2S credits count.
    u->in[0].reset(link.params().credits_req);
    u->in[1].reset(link.params().credits_rwd);
    u->in[2].reset(link.params().credits_birsp);
    u->in[0].name(name + ".rx (M2S Req receive buffer)");
    u->in[1].name(name + ".rx (M2S RwD receive buffer)");
    u->in[2].name(name + ".rx (M2S BIRsp receive buffer)");
    u->out.reset(p_.port_queue);
    u->out.name(name + ".tx (S2M responses waiting for the upstream link's credits)");
    u->weight = p_.weighted_arbitration ? link.params().lanes : 1;
    if (usps_.empty()) ugrants_ = u->weight;
    usps_.push_back(std::move(u));
    allUsps_ = usps_.size() == 32 ? ~0u : (1u << usps_.size()) - 1;
    return *usps_.back();
}

void CxlSwitch::bindPbr(Usp& u, uint8_t host, uint64_t window, const LdQos& qos) {
    // A host edge: its decoder interleaves over every device of the fabric,
    // wherever each sits, and gives each host a share of each device.
    const uint32_t n = uint32_t(pbr_->devices.size());
    if (!u.hdm || window > u.window) {
        u.window = window;
        u.hdm = std::make_unique<HdmDecoder>(u.name + " (the fabric's devices)", 0, window, n, p_.interleave_bytes);
    }
    const uint64_t share = HdmDecoder::share(u.window, n, p_.interleave_bytes);
    for (MemEndpoint* d : pbr_->devices) d->bind(host, share, qos);
}

void CxlSwitch::bind(Usp& u, uint8_t host, uint64_t window, const LdQos& qos) {
    if (pbr_) return bindPbr(u, host, window, qos);
    if (host >= kMaxHosts)
        throw ConfigError(where_ + ": host " + std::to_string(host) + " is out of range; allowed: 0 to " +
                          std::to_string(kMaxHosts - 1));
    if (hostUsp_[host] != kUnbound && hostUsp_[host] != u.index)
        throw ConfigError(where_ + ": one host reaches it through " + usps_[hostUsp_[host]]->name + " and " + u.name +
                          "; allowed: one upstream port per host");
    hostUsp_[host] = uint8_t(u.index);
    if (routes_) {
        // The committed decoders route; each device is offered the share the fixed interleave would give.
        u.window = std::max(u.window, window);
    } else if (!u.hdm || window > u.window) {
        u.window = window;
        // Over all of its downstream ports: a count the decoder refuses names them.
        u.hdm = std::make_unique<HdmDecoder>(where_ + ".dsp", 0, window, ports(), p_.interleave_bytes);
    }
    const uint64_t share = HdmDecoder::share(u.window, ports_.size(), p_.interleave_bytes);
    for (auto& p : ports_) p->below->bind(host, share, qos);
}

void CxlSwitch::fromAbove(Usp& u, Txn* t, Tick arrival) {
    const Tick ready = arrival + lat_;
    // target() decodes it when it leaves; here only whether any decoder covers it.
    if (routes_ && !routes_->covers(t->addr)) return unrouted(u, t, ready);
    const int k = t->channel();
    // With nothing queued at any upstream port and the port's egress empty,
    // the request leaves at `ready` when a credit has landed by then, with no
    // event: every earlier request has left already, at an earlier time.
    if (!usBusy_) {
        const Target tg = target(u, t);
        Port& p = *ports_[tg.port];
        const Channel c = t->channel();
        if (p.egress[k].empty() && p.link->credits_[c].available(ready)) {
            retarget(u, t, tg);
            ++u.stats.requests;
            sendDown(p, t, ready);
            u.link.credits_[c].give(ready);
            return;
        }
    }
    u.in[k].push(ready, t);
    if (!u.blocked[k]) {
        usHead_[u.index] = std::min(usHead_[u.index], u.in[k].headReady());
        usMin_ = std::min(usMin_, usHead_[u.index]);
    }
    usBusy_ |= 1u << u.index;
    requestWake(ready);
}

void CxlSwitch::unrouted(Usp& u, Txn* t, Tick ready) {
    // As at a host bridge; the request frees its receive buffer at once (it
    // waits behind nothing) and its completion goes back up after the
    // switch's latency each way.
    routes_->answerUnrouted(t, stats_);
    u.link.credits_[t->channel()].give(ready);
    t->opc = responseOf(t->opc);
    unrouted_.push(ready + lat_, t);
    requestWake(ready + lat_);
}

void CxlSwitch::answerUnrouted(Tick t) {
    while (unrouted_.headReady() <= t) {
        Txn* x = unrouted_.front();
        Usp& u = *usps_[hostUsp_[x->host]];
        if (u.out.full() || (usWaiting_ >> u.index & 1)) return;  // the upstream port's draining wakes the switch
        unrouted_.pop();
        if (!(u.out.empty() && sendUp(u, x, t))) {
            if (cong_) u.bp.start(t);
            u.out.push(t, x);
            outBusy_ |= 1u << u.index;
        }
    }
}

void CxlSwitch::fromBelow(Port& p, Txn* t, Tick arrival) {
    // The device took a receive-buffer entry for it (the link's respBuffer_).
    // Responses wait for their turn: ports' arrivals are not in order with each other.
    if (p.in.empty()) inHead_[p.index] = arrival + lat_;
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

bool CxlSwitch::sendUp(Usp& u, Txn* x, Tick t) {
    const Channel c = x->channel();
    if (!u.link.respBuffer_.available(t) || !u.link.credits_[c].available(t)) {
        x->note("credit_wait", t, u.link.name());
        return false;
    }
    u.link.respBuffer_.takeAvailable();
    u.link.credits_[c].takeAvailable();
    ++stats_.responses;
    ++u.stats.responses;
    u.port->receive(x, u.link.carry(*x, t, kStageSwitch, name_));
    return true;
}

bool CxlSwitch::moveOne(Usp& u, Tick t) {
    const bool moved = moveHead(u, t);
    usHead_[u.index] = headOf(u);
    return moved;
}

bool CxlSwitch::moveHead(Usp& u, Tick t) {
    // The class whose head is ready first (the lower class on a tie), of those not waiting for an egress queue.
    for (;;) {
        int k = -1;
        Tick first = kNever;
        for (int c = 0; c < kM2SChannels; ++c)
            if (!u.blocked[c] && u.in[c].headReady() < first) {
                first = u.in[c].headReady();
                k = c;
            }
        if (first > t) return false;
        Txn* x = u.in[k].front();
        const Target tg = target(u, x);
        Port& p = *ports_[tg.port];
        if (p.egress[k].full()) {
            // Head-of-line: the class waits, holding its buffer and credit, until an egress queue drains.
            u.blocked[k] = true;
            ++stats_.egressFull;
            continue;
        }
        u.in[k].pop();
        if (u.in[0].empty() && u.in[1].empty() && u.in[2].empty()) usBusy_ &= ~(1u << u.index);
        u.link.credits_[x->channel()].give(t);
        retarget(u, x, tg);
        ++u.stats.requests;
        if (!(p.egress[k].empty() && sendDown(p, x, t))) {
            if (cong_) p.bp.start(t);
            p.egress[k].push(t, x);
            egBusy_ |= 1u << p.index;
            // The egress loop ran before this move: without a credit, be woken when one lands.
            if (!p.link->credits_[x->channel()].available(t)) p.link->credits_[x->channel()].wait(this);
        }
        return true;
    }
}

void CxlSwitch::route(Tick t) {
    // A round-robin arbiter over the upstream ports: each move goes to the
    // first port at or after the one whose turn it is that can make one, and
    // a port's turn lasts its weight in moves. A port that cannot move does
    // not lose its turn, so ports blocked at a full egress queue share its
    // freed entries in turn.
    //
    // Only ports whose earliest unblocked head is due by t take part: nothing
    // joins an upstream buffer while the switch routes (moves only go down)
    // and only a port's own move blocks one of its classes, so a port that
    // cannot move now cannot for the rest of this call, and its earliest head
    // is a wake-up time as it stands. With 16 hosts' upstream ports busy a
    // scan of every port and class per move was most of the switch's cost.
    //
    // usMin_, the earliest of those heads, settles a wake-up with no port due
    // (most of the top switch's, woken for a response) without the scan.
    if (usMin_ > t) return;
    uint32_t cand = 0;
    for (uint32_t m = usBusy_; m; m &= m - 1) {
        const uint32_t i = uint32_t(__builtin_ctz(m));
        if (usHead_[i] <= t) cand |= 1u << i;
    }
    const uint32_t n = uint32_t(usps_.size());
    while (cand) {
        const uint32_t i = next(cand, urr_);
        if (!moveOne(*usps_[i], t)) {
            cand &= ~(1u << i);  // as a port the scan passes over
            continue;
        }
        if (i != urr_) {
            urr_ = i;
            ugrants_ = usps_[i]->weight;
        }
        if (--ugrants_ == 0) {
            urr_ = i + 1 == n ? 0 : i + 1;
            ugrants_ = usps_[urr_]->weight;
        }
    }
    // The moves raised the heads of the ports that took part (moveOne), each
    // to its first request not yet due: every head is now later than t.
    Tick lo = kNever;
    for (uint32_t m = usBusy_; m; m &= m - 1) lo = std::min(lo, usHead_[__builtin_ctz(m)]);
    usMin_ = lo;
}

uint32_t CxlSwitch::next(uint32_t mask, uint32_t from) const {
    // The first port at or after `from`, wrapping, whose bit is set in `mask` (nonzero).
    const uint32_t hi = mask >> from << from;
    return uint32_t(__builtin_ctz(hi ? hi : mask));
}

void CxlSwitch::arbitrate(Tick t) {
    // In turns over the downstream ports holding responses: a port sends up
    // to its weight in its turn (one, or its link's lanes), then the next.
    // A response whose upstream port is full or waits for its link's credits
    // stays, and the turn passes on.
    uint32_t ready = 0;  // ports whose head response is ready by t
    for (uint32_t m = inBusy_; m; m &= m - 1) {
        const uint32_t i = uint32_t(__builtin_ctz(m));
        if (inHead_[i] <= t) ready |= 1u << i;
    }
    const uint32_t n = uint32_t(ports_.size());
    while (ready) {
        if (!(ready >> rr_ & 1)) {  // the port whose turn it is has nothing: the turn passes on
            rr_ = next(ready, rr_);
            grants_ = ports_[rr_]->weight;
        }
        Port& p = *ports_[rr_];
        Txn* x = p.in.front();
        Usp& u = *usps_[pbr_ ? pbr_->toUsp[x->spid] : hostUsp_[x->host]];
        if (u.out.full() || (usWaiting_ >> u.index & 1)) {
            ready &= ~(1u << rr_);
            continue;
        }
        p.stats.responseWait += t - inHead_[rr_];
        ++p.stats.responses;
        p.in.pop();
        inHead_[rr_] = p.in.headReady();
        if (p.in.empty()) inBusy_ &= ~(1u << rr_);
        if (inHead_[rr_] > t) ready &= ~(1u << rr_);
        p.link->credits_[x->channel()].give(t);
        p.link->respBuffer_.give(t);
        if (routes_) x->addr = routes_->hpaOf(p.index, x->addr);
        else if (!pbr_) x->addr = u.hdm->encode(p.index, x->addr);
        else if (u.hdm) x->addr = u.hdm->encode(pbr_->devIndex[x->dpid], x->addr);  // back at its host's edge
        if (cong_) raiseDevLoad(p, u, x, t);
        if (!(u.out.empty() && sendUp(u, x, t))) {
            if (cong_) u.bp.start(t);
            u.out.push(t, x);
            outBusy_ |= 1u << u.index;
        }
        if (--grants_ == 0) {
            rr_ = rr_ + 1 == n ? 0 : rr_ + 1;
            grants_ = ports_[rr_]->weight;
        }
    }
}

void CxlSwitch::closeCongestionInterval(Tick t) {
    for (auto& p : ports_) p->bp.close(congStart_, t, p_.egress_moderate, p_.egress_severe, p->stats, statsFrom_);
    for (auto& u : usps_) u->bp.close(congStart_, t, p_.egress_moderate, p_.egress_severe, u->stats, statsFrom_);
    congStart_ = t;
}

void CxlSwitch::raiseDevLoad(Port& p, Usp& u, Txn* x, Tick t) {
    // Only the responses that carry DevLoad (NDR, DRS): a BISnp carries none.
    if (x->channel() != kS2MNdr && x->channel() != kS2MDrs) return;
    // Like the device's load, measured over intervals each closed by the
    // first response after its end.
    if (t >= congStart_ + congInterval_) closeCongestionInterval(t);
    const uint8_t d = std::max(p.bp.level, u.bp.level);
    if (d > x->devLoad) {
        x->devLoad = d;
        ++stats_.devLoadRaised;
    }
}

void CxlSwitch::flushUp(Tick t) {
    for (uint32_t m = outBusy_ & ~usWaiting_; m; m &= m - 1) {
        Usp& u = *usps_[__builtin_ctz(m)];
        while (u.out.headReady() <= t) {
            if (!sendUp(u, u.out.front(), t)) {
                ++stats_.creditWaits;
                if (!u.link.respBuffer_.available(t)) u.link.respBuffer_.wait(this);
                else u.link.credits_[u.out.front()->channel()].wait(this);
                usWaiting_ |= 1u << u.index;
                break;
            }
            u.out.pop();
        }
        if (u.out.empty()) {
            outBusy_ &= ~(1u << u.index);
            if (cong_) u.bp.stop(t, u.stats, statsFrom_);
        }
    }
}

void CxlSwitch::process() {
    const Tick t = now();
    // Upstream first: each response sent frees an entry the arbiter may fill;
    // what the arbiter could not send at once waits for the links' credits.
    // Most wake-ups find every upstream queue empty: flushUp is called only when one is not.
    usWaiting_ = 0;
    if (outBusy_) flushUp(t);
    if (!unrouted_.empty()) answerUnrouted(t);
    arbitrate(t);
    if (outBusy_ & ~usWaiting_) flushUp(t);
    // Downstream egress: a request sent frees an entry a blocked class may take.
    for (uint32_t m = egBusy_; m; m &= m - 1) {
        Port& p = *ports_[__builtin_ctz(m)];
        for (int k = 0; k < kM2SChannels; ++k)
            while (p.egress[k].headReady() <= t) {
                Txn* x = p.egress[k].front();
                if (!sendDown(p, x, t)) {
                    ++stats_.creditWaits;
                    p.link->credits_[x->channel()].wait(this);
                    break;
                }
                p.egress[k].pop();
                for (uint32_t b = usBusy_; b; b &= b - 1) {  // a blocked class has its head queued: a busy port
                    Usp& u = *usps_[__builtin_ctz(b)];
                    if (u.blocked[k]) {
                        u.blocked[k] = false;
                        usHead_[u.index] = std::min(usHead_[u.index], u.in[k].headReady());
                        usMin_ = std::min(usMin_, usHead_[u.index]);
                    }
                }
            }
        if (p.egress[0].empty() && p.egress[1].empty() && p.egress[2].empty()) {
            egBusy_ &= ~(1u << p.index);
            if (cong_) p.bp.stop(t, p.stats, statsFrom_);
        }
    }
    // Only the upstream ports holding something: idle hosts cost nothing.
    // Their earliest head, later than t once routed, is a wake-up time as it stands.
    route(t);
    Tick w = std::min(usMin_, due(unrouted_.headReady(), t));
    bool room = outBusy_ != allUsps_;  // a port with an empty out
    for (uint32_t m = outBusy_; m; m &= m - 1) {
        const Usp& u = *usps_[__builtin_ctz(m)];
        if (!(usWaiting_ >> u.index & 1)) w = std::min(w, due(u.out.headReady(), t));
        room |= !u.out.full();
    }
    if (room)
        for (uint32_t m = inBusy_; m; m &= m - 1) w = std::min(w, due(inHead_[__builtin_ctz(m)], t));
    for (uint32_t m = egBusy_; m; m &= m - 1)
        for (const auto& q : ports_[__builtin_ctz(m)]->egress) w = std::min(w, due(q.headReady(), t));
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
