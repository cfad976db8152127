#include "cxlcore/fabric/host_bridge.hpp"

#include "cxlcore/coherence/protocol.hpp"

#include <algorithm>
#include <sstream>

namespace cxlcore {

HostBridge::HostBridge(Host& host, const BridgeParams& p, const std::string& where, uint64_t windowBase,
                       uint64_t windowSize)
    : Component(host), p_((p.validate(where), p)),
      hdm_(where, windowBase, windowSize, p.interleave_ways, p.interleave_bytes), where_(where),
      name_(internName(where)) {
    reqLat_ = nsToTicks(p_.req_latency_ns);
    respLat_ = nsToTicks(p_.resp_latency_ns);
    tracker_.init(p_.req_queue, 0);
    unrouted_.reset(p_.req_queue);
    unrouted_.name(where + ".unrouted (completions of requests no committed decoder covers)");
    throttle_ = p_.devload_throttle != 0;
}

void HostBridge::addPort(CxlLink* link, MemEndpoint* dev) {
    if (ports_.size() >= 64)
        throw ConfigError(where_ + ": at most 64 root ports; allowed: root_ports 1 to 64");
    // Each root port brings its own req_queue tracker entries (a root port's
    // M2S requests are tracked by its own transaction layer, as its S2M
    // buffer is its own): pooled here, so requests interleaved over the ports
    // see per-port trackers without one port's full tracker blocking another's.
    // A port's queue and the unrouted completions may hold all of them.
    const uint32_t entries = p_.req_queue * uint32_t(ports_.size() + 1);
    tracker_.init(entries, 0);
    unrouted_.reset(entries);
    for (auto& q : ports_) q->out.reset(entries);
    auto port = std::make_unique<Port>(*this);
    port->link = link;
    port->dev = dev;
    port->out.reset(entries);
    port->in.reset(p_.resp_queue);
    port->targetPortIndex = uint32_t(ports_.size());
    port->capMilli = uint64_t(p_.req_queue) * 1000;
    const std::string n = where_ + ".port" + std::to_string(port->targetPortIndex);
    port->out.name(n + ".out (requests waiting for M2S credits)");
    port->in.name(n + ".in (responses the host has not taken)");
    // In flight on S2M or waiting here: never more than the buffer holds.
    link->respBuffer_.init(p_.resp_queue, link->creditReturn());
    dev->attach(port.get());
    ports_.push_back(std::move(port));
}

bool HostBridge::tryReq(Txn* t) {
    if (!tracker_.take(now())) {
        needRetry_ = true;
        waitTracker();
        ++stats_.refused;
        return false;
    }
    HdmDecoder::Target tg;
    if (!decode(t->addr, tg)) {
        unrouted(t);
        return true;
    }
    t->addr = tg.dpa;
    ++(t->isRead() ? stats_.reads : stats_.writes);
    Port& p = *ports_[tg.port];
    const Tick at = now() + reqLat_;
    // With nothing queued ahead and a credit landed by then, the flit's send
    // time is already known: the port is this link's only sender.
    if (!room(p)) ++stats_.throttled;
    if (p.out.empty() && room(p) && send(p, t, at)) return true;
    p.out.push(at, t);
    busy_ |= uint64_t(1) << tg.port;
    requestWake(at);
    return true;
}

void HostBridge::waitTracker() {
    // A requester whose component runs after the bridge's at a tick (a later
    // slot) is woken where the bridge would have been and takes the retry
    // there itself: the same retry at the same point of the tick, without an
    // event of the bridge's that would only call retryReq.
    Component* r = up_->retrier();
    if (!r || r->slot <= slot) return tracker_.wait(this);
    retrier_ = r;
    const Tick head = tracker_.nextLanding();
    if (head == kNever) {
        retryOnGive_ = true;  // as the tracker's waiter: woken by the next entry freed
        return;
    }
    trackerWake_ = std::min(trackerWake_, head);
    r->requestWake(head);
}

void HostBridge::freeTracker(Tick at) {
    tracker_.giveAt(at);
    if (retryOnGive_) {
        retryOnGive_ = false;
        if (needRetry_) trackerWake_ = std::min(trackerWake_, at);
        retrier_->requestWake(at);
    }
}

bool HostBridge::send(Port& p, Txn* x, Tick at) {
    // A request comes as MemRd or MemWr: its opcode names its channel.
    if (!p.link->credits_[x->channel()].take(at)) {
        x->note("credit_wait", at, p.link->name());
        return false;
    }
    ++p.inflight;
    p.dev->receive(x, p.link->carry(*x, at, kStageHostPort, name_));
    return true;
}

void HostBridge::throttle(Port& p, uint8_t devLoad) {
    // Per response, so a cap's worth of responses per round trip: light load
    // adds one request a round trip while the cap binds, optimal holds,
    // moderate overload takes a sixteenth a round trip, severe overload a
    // quarter at once, once a round trip (the responses to requests already
    // sent tell of the same overload); never below one request.
    const uint64_t cap = p.capMilli, max = uint64_t(p_.req_queue) * 1000;
    ++p.sinceCut;
    if (devLoad == 0 && (!p.out.empty() || uint64_t(p.inflight + 1) * 1000 >= cap)) {
        p.capMilli = std::min(max, cap + 1000000 / cap);
    } else if (devLoad == 2) {
        p.capMilli = std::max<uint64_t>(1000, cap - 1000 / 16);
    } else if (devLoad == 3 && p.sinceCut >= p.guard) {
        p.capMilli = std::max<uint64_t>(1000, cap - cap / 4);
        p.guard = p.inflight + 1;
        p.sinceCut = 0;
    }
}

void HostBridge::toAgent(Port& p, Txn* t, Tick ready) {
    if (!agent_)
        protocolError(where_ + ": " + t->cmd().name + " for host " + std::to_string(t->host) +
                      ", whose host runs no coherent agent on this window");
    // The agent takes every one at once: its S2M buffer and credit are free then.
    p.link->credits_[t->channel()].give(ready);
    p.link->respBuffer_.give(ready);
    t->addr = hpaOf(p, t->addr);
    if (t->channel() == kS2MBISnp)
        agent_->snooped(t, ready);
    else
        agent_->written(t, ready);
}

void HostBridge::sendCoherent(Txn* m, Tick at) {
    HdmDecoder::Target tg;
    if (!decode(m->addr, tg))
        protocolError(where_ + ": " + m->cmd().name + " for " + hexAddr(m->addr) + ", which no committed decoder covers");
    m->addr = tg.dpa;
    Port& p = *ports_[tg.port];
    p.co.push(at + reqLat_, m);
    busy_ |= uint64_t(1) << tg.port;
    requestWake(at + reqLat_);
}

void HostBridge::drainCoherent(Port& p, Tick t) {
    while (p.co.headReady() <= t) {
        Txn* x = p.co.front();
        if (!p.link->credits_[x->channel()].take(t)) {
            p.link->credits_[x->channel()].wait(this);
            return;
        }
        p.co.pop();
        p.dev->receive(x, p.link->carry(*x, t, kStageHostPort, name_));
    }
}

void HostBridge::deliverResp(Port& p, Txn* t, Tick arrival) {
    // The response clears the bridge at `ready`: its S2M buffer and its tracker
    // entry are free from then on. A requester that takes responses at once
    // gets it directly, stamped with that time; no event is needed.
    const Tick ready = arrival + respLat_;
    if (t->route == kCoherentRoute || t->channel() == kS2MBISnp) return toAgent(p, t, ready);
    // The request is done for the throttle once its response is on its way.
    --p.inflight;
    if (throttle_) {
        throttle(p, t->devLoad);
        if (room(p) && !p.out.empty()) {
            busy_ |= uint64_t(1) << p.targetPortIndex;
            requestWake(std::max(now(), p.out.headReady()));
        }
    }
    if (p.in.empty() && !respBlocked_ && respond(p, t, ready)) return;
    p.in.push(ready, t);
    busy_ |= uint64_t(1) << p.targetPortIndex;
    requestWake(ready);
}

bool HostBridge::respond(Port& p, Txn* x, Tick ready) {
    const Channel c = x->channel();
    const uint64_t dpa = x->addr;
    const Tick mark = x->mark;
    const Tick host = x->stage[kStageHostPort];
    x->leave(kStageHostPort, ready, name_);
    x->addr = hpaOf(p, dpa);
    if (!up_->tryResp(x)) {  // x belongs to the requester once accepted
        x->addr = dpa;
        x->restore(kStageHostPort, mark, host);
        return false;
    }
    p.link->credits_[c].give(ready);
    p.link->respBuffer_.give(ready);
    freeTracker(ready);
    return true;
}

void HostBridge::unrouted(Txn* t) {
    // No committed decoder positively decodes the address: completed after
    // the bridge's own pipeline, both ways, reaching no link.
    routes_->answerUnrouted(t, stats_);
    t->opc = responseOf(t->opc);
    const Tick at = now() + reqLat_ + respLat_;
    unrouted_.push(at, t);
    requestWake(at);
}

bool HostBridge::answerUnrouted(Tick t) {
    while (unrouted_.headReady() <= t) {
        Txn* x = unrouted_.front();
        const Tick mark = x->mark, host = x->stage[kStageHostPort];
        x->leave(kStageHostPort, t, name_);
        if (!up_->tryResp(x)) {
            x->restore(kStageHostPort, mark, host);
            return false;
        }
        unrouted_.pop();
        freeTracker(t);
    }
    return true;
}

void HostBridge::retryResp() {
    respBlocked_ = false;
    requestWake(now());
}

void HostBridge::process() {
    const Tick t = now();
    if (needRetry_) {
        retried();
        up_->retryReq();
    }
    if (!respBlocked_ && !answerUnrouted(t)) respBlocked_ = true;
    Tick w = respBlocked_ ? kNever : due(unrouted_.headReady(), t);
    // In port order, as a scan of every port: one with both queues empty
    // would do nothing and add no wake-up. The mask is read afresh each step:
    // a response taken above may queue a request on a later port.
    for (uint32_t i = nextBusy(0); i < 64; i = nextBusy(i + 1)) {
        Port& p = *ports_[i];
        while (p.out.headReady() <= t && room(p)) {
            Txn* x = p.out.front();
            if (!send(p, x, t)) {
                p.link->credits_[x->channel()].wait(this);
                break;
            }
            p.out.pop();
        }
        if (!p.co.empty()) drainCoherent(p, t);
        while (!respBlocked_ && p.in.headReady() <= t) {
            if (!respond(p, p.in.front(), t)) {
                respBlocked_ = true;
                break;
            }
            p.in.pop();
        }
        w = std::min({w, room(p) ? due(p.out.headReady(), t) : kNever, respBlocked_ ? kNever : due(p.in.headReady(), t)});
        w = std::min(w, due(p.co.headReady(), t));
        if (p.out.empty() && p.in.empty() && p.co.empty()) busy_ &= ~(uint64_t(1) << i);
    }
    if (w != kNever) requestWake(w);
}

uint32_t HostBridge::nextBusy(uint32_t from) const {
    const uint64_t m = from < 64 ? busy_ >> from << from : 0;
    return m ? uint32_t(__builtin_ctzll(m)) : 64;
}

}  // namespace cxlcore
