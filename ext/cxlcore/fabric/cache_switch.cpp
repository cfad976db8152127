#include "cxlcore/fabric/cache_switch.hpp"

namespace cxlcore {

CacheSwitch::CacheSwitch(Host& host, const SwitchParams& p, CxlLink& up, Endpoint& home, const std::string& where)
    : Endpoint(host), p_((p.validate(where), p)), where_(where), name_(internName(where)), up_(up), home_(home),
      lat_(nsToTicks(p.latency_ns)) {
    for (int c = 0; c < kNumChannels; ++c) upEgress_[c].name(where + ".up." + channelName(Channel(c)));
}

void CacheSwitch::addPort(CxlLink& link, Endpoint& device, uint16_t dev) {
    if (ports_.size() >= 16)
        throw ConfigError(where_ + ".dsp: more than 16 CXL.cache devices below one root port; allowed: 1 to 16");
    ports_.push_back(Port{&link, &device, TimedQueue<Txn*>(), PortStats()});
    ports_.back().egress.name(where_ + ".dsp" + std::to_string(ports_.size() - 1));
    if (portOf_.size() <= dev) portOf_.resize(dev + 1, -1);
    portOf_[dev] = int(ports_.size() - 1);
}

void CacheSwitch::arrive(Txn* m, Tick arrival) {
    const Channel c = m->channel();
    const bool upward = isUpstream(c);
    const int port = m->dev < portOf_.size() ? portOf_[m->dev] : -1;
    if (port < 0)
        throw std::logic_error("internal error: " + where_ + " has no downstream port for CacheID " +
                               std::to_string(m->dev));
    Port& p = ports_[size_t(port)];
    if (m->parent) m->parent->leave(upward ? kStageLinkUp : kStageLinkDown, arrival, (upward ? p.link : &up_)->name());
    // Its receive buffer is held from here until it leaves (the credit returns then).
    if (upward)
        upEgress_[c].push(arrival + lat_, m);
    else
        p.egress.push(arrival + lat_, m);
}

void CacheSwitch::process() {
    const Tick t = now();
    while (inbox_.headReady() <= t) {
        const Tick arrival = inbox_.headReady();
        arrive(inbox_.pop(), arrival);
    }
    Tick w = inbox_.headReady();
    // Down: each port in the home's order, waiting for its own link's credits.
    for (Port& p : ports_) {
        while (p.egress.headReady() <= t) {
            Txn* m = p.egress.front();
            const Channel c = m->channel();
            if (!p.link->credits_[c].take(t)) {
                ++stats_.creditWaits;
                p.link->credits_[c].wait(this);
                break;
            }
            p.egress.pop();
            up_.credits_[c].give(t);
            ++stats_.requests;
            ++p.stats.requests;
            ++upStats_.requests;
            if (m->parent) m->parent->leave(kStageSwitch, t, name_);
            p.device->receive(m, p.link->send(t, *m));
        }
        w = std::min(w, due(p.egress.headReady(), t));
    }
    // Up: one queue per channel, every port's messages in the order they arrived.
    for (int k = 0; k < kNumChannels; ++k) {
        TimedQueue<Txn*>& q = upEgress_[k];
        while (q.headReady() <= t) {
            Txn* m = q.front();
            const Channel c = Channel(k);
            if (!up_.credits_[c].take(t)) {
                ++stats_.creditWaits;
                up_.credits_[c].wait(this);
                break;
            }
            Port& p = ports_[size_t(portOf_[m->dev])];
            p.stats.responseWait += t - q.headReady();  // waiting for the upstream link, after the traversal
            q.pop();
            p.link->credits_[c].give(t);
            ++stats_.responses;
            ++p.stats.responses;
            ++upStats_.responses;
            if (m->parent) m->parent->leave(kStageSwitch, t, name_);
            home_.receive(m, up_.send(t, *m));
        }
        w = std::min(w, due(q.headReady(), t));
    }
    if (w != kNever) requestWake(w);
}

bool CacheSwitch::quiet() const {
    if (!inbox_.empty()) return false;
    for (const Port& p : ports_)
        if (!p.egress.empty()) return false;
    for (const TimedQueue<Txn*>& q : upEgress_)
        if (!q.empty()) return false;
    return true;
}

void CacheSwitch::oldest(Oldest& o) const {
    auto see = [&](const Txn* m, const std::string& queue) {
        if (m->parent)
            o.see(m->parent->birth, [&] { return where_ + " " + queue + " " + channelName(m->channel()) + " (no credit)"; });
    };
    for (size_t i = 0; i < ports_.size(); ++i)
        ports_[i].egress.each([&](const Txn* m) { see(m, "egress to dsp" + std::to_string(i)); });
    for (const TimedQueue<Txn*>& q : upEgress_) q.each([&](const Txn* m) { see(m, "egress up"); });
}

}  // namespace cxlcore
