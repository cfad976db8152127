#include "cxlcore/devices/type3.hpp"

#include "cxlcore/fabric/host_bridge.hpp"

#include <algorithm>
#include <sstream>

namespace cxlcore {

Type3Device::Type3Device(Host& host, const DeviceParams& p, const DramParams& media, CxlLink& link,
                         const std::string& where)
    : Component(host), Requester(), p_(p), link_(link), media_(host, media, where + ".media"),
      name_(internName(where + ".device")), where_(where) {
    p_.validate(where + ".device");
    rx_[0].reset(link.params().credits_req);
    rx_[1].reset(link.params().credits_rwd);
    writeCap_ = p_.write_tracker ? std::min(p_.write_tracker, p_.req_queue) : p_.req_queue;
    for (auto& c : ctrl_) c.reset(p_.req_queue);
    tx_.reset(p_.resp_queue);
    reqLat_ = nsToTicks(p_.req_latency_ns);
    respLat_ = nsToTicks(p_.resp_latency_ns);
    // DevLoad thresholds as queue fills (the fraction times the queue size).
    for (int i = 0; i < 3; ++i) {
        const double f = i == 0 ? p_.devload_optimal : i == 1 ? p_.devload_moderate : p_.devload_severe;
        loadAt_[i] = uint32_t(std::ceil(f * p_.req_queue));
    }
    media_.setRequester(this);
    std::fill(std::begin(ldHost_), std::end(ldHost_), kFree);
    qosInterval_ = nsToTicks(p_.qos_interval_ns);
    qosBasis_ = p_.qos_interval_ns * 1e-9 * media_.peakBytesPerSec() / kLineBytes;
    name(where);
}

double Type3Device::idleLatencyNs() const {
    const DramParams& m = media_.params();
    const double burst = 2000.0 / m.data_rate_mts * m.burst_length / 2;
    const double flit = link_.m2s_.flitPs() / 1000.0;
    return 2 * link_.params().phy_latency_ns + 3 * flit + p_.req_latency_ns + p_.resp_latency_ns +
           m.frontend_latency_ns + m.tCL_ns + burst + m.backend_latency_ns;
}

void Type3Device::name(const std::string& n) {
    name_ = internName(n + ".device");
    rx_[0].name(n + ".device.rx (M2S Req receive buffer)");
    rx_[1].name(n + ".device.rx (M2S RwD receive buffer, write tracker)");
    ctrl_[0].name(n + ".device.pipeline (reads)");
    ctrl_[1].name(n + ".device.pipeline (writes)");
    tx_.name(n + ".device.tx (S2M responses waiting for credits)");
    media_.name(n + ".media");
}

void Type3Device::bind(uint8_t host, uint64_t window, const LdQos& qos) {
    if (host >= kMaxHosts)
        throw ConfigError(where_ + ": host " + std::to_string(host) + " is out of range; allowed: 0 to " +
                          std::to_string(kMaxHosts - 1));
    reach_ |= 1u << host;
    if (p_.shared) {  // one region: every host's addresses are the same DPA, one LD
        bound_ |= 1u << host;
        if (!nextLd_) qos_[nextLd_++] = qos;
        qosOn_ |= qos.active();
        return;
    }
    if (!(bound_ >> host & 1)) {
        if (nextLd_ >= p_.logical_devices)
            throw ConfigError(where_ + ".device.logical_devices = " + std::to_string(p_.logical_devices) +
                              " is too few: more hosts reach it; allowed: at least one logical device per host");
        bound_ |= 1u << host;
        qos_[nextLd_] = qos;
        qosOn_ |= qos.active();
        ldHost_[nextLd_] = host;
        ldOf_[host] = uint8_t(nextLd_);
        ldBase_[host] = nextLd_++ * kLdSpan;
    }
    if (p_.logical_devices > 1 && window > kLdSpan)
        throw ConfigError(where_ + ": a host sends it " + fmtNum(double(window)) +
                          " bytes; allowed: at most 17592186044416 (16 TiB) per logical device (give the host's "
                          "window a size: base and size on its host.mem connection)");
}

void Type3Device::bindLd(uint8_t host, uint32_t ld) {
    const std::string h = "host " + std::to_string(host);
    if (p_.logical_devices < 2 || p_.shared)
        throw ConfigError(where_ + ": binds an LD to " + h + ", but it is not a multi-logical device; allowed: "
                          "devices with device.logical_devices > 1");
    if (!reaches(host))
        throw ConfigError(where_ + ": binds an LD to " + h + ", which does not reach it; allowed: a host whose "
                          "window reaches the device");
    if (holdsLd(host))
        throw ConfigError(where_ + ": binds LD " + std::to_string(ld) + " to " + h + ", which holds LD " +
                          std::to_string(ldOf_[host]) + "; allowed: a host unbound first");
    if (!ldFree(ld))
        throw ConfigError(where_ + ": binds LD " + std::to_string(ld) + ", which is " +
                          (ld < p_.logical_devices ? "bound to host " + std::to_string(ldHost_[ld])
                                                   : "not one of its " + std::to_string(p_.logical_devices) + " LDs") +
                          "; allowed: an unbound LD");
    ldHost_[ld] = host;
    ldOf_[host] = uint8_t(ld);
    ldBase_[host] = uint64_t(ld) * kLdSpan;
    bound_ |= 1u << host;
    nextLd_ = std::max(nextLd_, ld + 1);
}

void Type3Device::unbindLd(uint8_t host) {
    if (p_.logical_devices < 2 || p_.shared)
        throw ConfigError(where_ + ": unbinds host " + std::to_string(host) + "'s LD, but it is not a multi-logical "
                          "device; allowed: devices with device.logical_devices > 1");
    if (!holdsLd(host))
        throw ConfigError(where_ + ": unbinds host " + std::to_string(host) + "'s LD, but it holds none; allowed: "
                          "a host with an LD bound");
    ldHost_[ldOf_[host]] = kFree;
    bound_ &= ~(1u << host);
}

bool Type3Device::backed(uint32_t ld, uint64_t dpa) const {
    const auto& v = dc_[ld];
    auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(dpa, ~uint64_t(0)));
    return it != v.begin() && dpa < std::prev(it)->second;
}

uint32_t Type3Device::ldOfHost(uint8_t host, const char* what) const {
    if (!p_.dynamic_capacity)
        throw ConfigError(where_ + ": " + what + " dynamic capacity, but it has none; allowed: devices with "
                          "device.dynamic_capacity = 1");
    if (host >= kMaxHosts || !(bound_ >> host & 1))
        throw ConfigError(where_ + ": " + what + " dynamic capacity for host " + std::to_string(host) +
                          ", which has no logical device on it; allowed: a host whose window reaches it");
    return ldOf_[host];
}

void Type3Device::addExtent(uint8_t host, uint64_t start, uint64_t bytes) {
    auto& v = dc_[ldOfHost(host, "adds")];
    const uint64_t end = start + bytes;
    if (bytes == 0 || start % kLineBytes || bytes % kLineBytes || end > kLdSpan || end < start)
        throw ConfigError(where_ + ": extent at " + fmtNum(double(start)) + " of " + fmtNum(double(bytes)) +
                          " bytes is not allowed; allowed: whole 64-byte lines within its 16 TiB of DPA");
    for (const auto& e : v)
        if (start < e.second && e.first < end)
            throw ConfigError(where_ + ": extent [" + fmtNum(double(start)) + ", " + fmtNum(double(end)) +
                              ") overlaps one it holds, [" + fmtNum(double(e.first)) + ", " + fmtNum(double(e.second)) +
                              "); allowed: capacity not yet added");
    v.insert(std::upper_bound(v.begin(), v.end(), std::make_pair(start, end)), {start, end});
}

void Type3Device::releaseExtent(uint8_t host, uint64_t start, uint64_t bytes) {
    auto& v = dc_[ldOfHost(host, "releases")];
    const uint64_t end = start + bytes;
    auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(start, ~uint64_t(0)));
    if (bytes == 0 || it == v.begin() || std::prev(it)->second < end)
        throw ConfigError(where_ + ": releases [" + fmtNum(double(start)) + ", " + fmtNum(double(end)) +
                          "), which is not all within one extent it holds; allowed: capacity added before");
    --it;
    const std::pair<uint64_t, uint64_t> e = *it, after{end, e.second};
    it = v.erase(it);
    if (after.first < after.second) it = v.insert(it, after);
    if (e.first < start) v.insert(it, {e.first, start});
}

std::string Type3Device::describe() const {
    std::string s = where_ + ": " + std::to_string(outstanding_) + " in the controller (" + std::to_string(writes_) +
                    " writes), rx " + std::to_string(rx_[0].size()) + " reads " + std::to_string(rx_[1].size()) +
                    " writes, tx " + std::to_string(tx_.size()) + (readsHeld_ ? ", reads held" : "") + ", birsp rx " +
                    std::to_string(birsp_.size());
    if (dcoh_) s += "; " + dcoh_->describe();
    return s;
}

void Type3Device::share(TxnPool& pool, uint64_t seed) {
    if (!p_.shared || dcoh_) return;
    dcoh_ = std::make_unique<Dcoh>(p_, where_, pool, seed);
    birsp_.reset(link_.params().credits_birsp);
    birsp_.name(where_ + ".device.rx (M2S BIRsp receive buffer)");
}

void Type3Device::receive(Txn* t, Tick arrival) {
    if (t->channel() == kM2SBIRsp) {
        if (!dcoh_) protocolError(where_ + ": a BIRsp reached a device that sent no snoop (device.shared = 0)");
        birsp_.push(arrival, t);
        requestWake(arrival);
        return;
    }
    if (p_.logical_devices > 1 && !(bound_ >> t->host & 1)) {
        // Its LD was unbound: served as poison (a read) or dropped (a write), outside every LD.
        ++(t->isRead() ? stats_.deniedReads : stats_.deniedWrites);
        t->addr += uint64_t(kMaxLds) * kLdSpan;
    } else {
        if (p_.dynamic_capacity && !backed(ldOf_[t->host], t->addr))
            ++(t->isRead() ? stats_.dcPoison : stats_.dcDropped)[ldOf_[t->host]];
        t->addr += ldBase_[t->host];
    }
    rx_[t->isWrite()].push(arrival, t);
    requestWake(arrival);
}

uint8_t Type3Device::devLoad(uint32_t ld, Tick t) {
    if (t >= qosStart_ + qosInterval_) {
        const double area = occ_.area(t), occ = (area - qosArea_) / double(t - qosStart_),
                     per = double(qosInterval_) / double(t - qosStart_);
        load_ = occ >= loadAt_[2] ? 3 : occ >= loadAt_[1] ? 2 : occ >= loadAt_[0] ? 1 : 0;
        for (uint32_t i = 0; i < nextLd_; ++i) {
            qosLast_[i] = uint64_t(std::lround(double(qosCount_[i]) * per));
            qosCount_[i] = 0;
        }
        qosArea_ = area;
        qosStart_ = t;
    }
    ++qosCount_[ld];
    uint8_t d = load_;
    if (qosOn_) {
        const double used = double(qosLast_[ld]);
        // Below its allocation an LD is not what overloads the device: one
        // level lighter than the device's load, at most Optimal, so it grows
        // into its share while the others hold or yield.
        if (used < qos_[ld].allocation * qosBasis_) d = d >= 2 ? 1 : 0;
        if (used >= qos_[ld].limit * qosBasis_) d = std::max<uint8_t>(d, 2);
    }
    return d;
}

bool Type3Device::tryResp(Txn* t) {
    if (tx_.full()) {
        respRefused_ = true;
        return false;
    }
    tx_.push(now() + respLat_, t);
    requestWake(now() + respLat_);
    return true;
}

void Type3Device::retryReq() {
    mediaBlocked_[0] = mediaBlocked_[1] = false;
    requestWake(now());
}

void Type3Device::coherent(Tick t) {
    while (birsp_.headReady() <= t) {
        Txn* m = birsp_.pop();
        link_.credits_[kM2SBIRsp].give(t);
        dcoh_->answer(m, t);
        readsHeld_ = false;
    }
    sendSnoops(t);
}

void Type3Device::sendSnoops(Tick t) {
    // Snoops leave after the ingress pipeline that looked the filter up.
    while (dcoh_->hasSnoop()) {
        Txn* m = dcoh_->frontSnoop();
        if (m->birth + reqLat_ > t) {
            requestWake(m->birth + reqLat_);
            break;
        }
        if (!link_.respBuffer_.available(t)) {
            link_.respBuffer_.wait(this);
            break;
        }
        if (!link_.credits_[kS2MBISnp].take(t)) {
            link_.credits_[kS2MBISnp].wait(this);
            break;
        }
        link_.respBuffer_.take(t);
        dcoh_->popSnoop();
        port_->receive(m, link_.carry(*m, t, kStageDevice, name_));
    }
}

void Type3Device::process() {
    const Tick t = now();
    if (dcoh_) coherent(t);
    // Responses first: each one sent frees a controller slot for the intake below.
    while (tx_.headReady() <= t) {
        Txn* x = tx_.front();
        const Opc rsp = responseOf(x->opc);  // MemData or Cmp
        const Channel c = channelOf(rsp);
        if (stopAfter_ && sent_ >= stopAfter_) break;  // a device that stopped answering
        if (!link_.respBuffer_.available(t)) {
            link_.respBuffer_.wait(this);
            break;
        }
        if (!link_.credits_[c].take(t)) {
            x->note("credit_wait", t, link_.name());
            link_.credits_[c].wait(this);
            break;
        }
        link_.respBuffer_.take(t);
        tx_.pop();
        ++sent_;
        // The LD it went to when it arrived (the fabric manager may have rebound its host since).
        const uint32_t ld = ldOfAddr(x->addr);
        x->devLoad = devLoad(ld, t);
        ++stats_.devLoad[x->devLoad];
        ++stats_.ldDevLoad[ld][x->devLoad];
        ++(x->isRead() ? stats_.reads : stats_.writes);
        ++(x->isRead() ? stats_.ldReads : stats_.ldWrites)[ld];
        x->addr -= uint64_t(ld) * kLdSpan;
        if (dcoh_ && rsp == Opc::MemData) dcoh_->respond(*x, t);
        x->opc = rsp;
        const Tick arr = link_.carry(*x, t, kStageDevice, name_);
        --outstanding_;
        if (x->isWrite()) --writes_;
        port_->receive(x, arr);
    }
    if (respRefused_ && !tx_.full()) {
        respRefused_ = false;
        media_.retryResp();
    }
    // Link receive buffers -> controller, in arrival order; a freed buffer
    // returns its credit.
    while (outstanding_ < p_.req_queue) {
        Tick at = t + reqLat_;
        Txn* x;
        if (dcoh_ && dcoh_->hasReleased()) {
            x = dcoh_->popReleased();  // its snoops are done: on to the media (the pipeline's latency was in them)
            at = t;
        } else {
            const Tick r = readsHeld_ ? kNever : rx_[0].headReady(), w = writes_ < writeCap_ ? rx_[1].headReady() : kNever;
            if (std::min(r, w) > t) break;
            if (dcoh_ && r <= w) {
                const Dcoh::Admit a = dcoh_->admit(rx_[0].front(), t);
                if (a == Dcoh::kFull) {
                    readsHeld_ = true;  // until a release: writes go on
                    continue;
                }
                if (a == Dcoh::kParked) {
                    x = rx_[0].pop();
                    link_.credits_[x->channel()].give(t);
                    x->leave(kStageDevice, t, name_);
                    continue;
                }
            }
            x = (w < r ? rx_[1] : rx_[0]).pop();
            link_.credits_[x->channel()].give(t);
            if (dcoh_ && x->isWrite()) dcoh_->write(*x);
        }
        ++outstanding_;
        const int k = x->isWrite();
        writes_ += k;
        if (ctrl_[k].empty() && !mediaBlocked_[k]) {
            // The pipeline takes a media queue entry on entry, so the request
            // reaches the media stamped with its arrival there.
            const Tick mark = x->mark, dev = x->stage[kStageDevice];
            x->leave(kStageDevice, at, name_);
            if (media_.tryReq(x)) continue;
            x->restore(kStageDevice, mark, dev);
            mediaBlocked_[k] = true;
            ++stats_.mediaRetries;
        }
        ctrl_[k].push(at, x);
    }
    if (dcoh_) sendSnoops(t);  // those the intake's reads made
    occ_.set(t, outstanding_);
    Tick w = std::min(due(tx_.headReady(), t), readsHeld_ ? kNever : due(rx_[0].headReady(), t));
    if (dcoh_) w = std::min(w, due(birsp_.headReady(), t));
    if (writes_ < writeCap_) w = std::min(w, due(rx_[1].headReady(), t));
    for (int k = 0; k < 2; ++k) {
        while (!mediaBlocked_[k] && ctrl_[k].headReady() <= t) {
            Txn* x = ctrl_[k].front();
            x->leave(kStageDevice, t, name_);
            if (!media_.tryReq(x)) {
                mediaBlocked_[k] = true;
                ++stats_.mediaRetries;
                break;
            }
            ctrl_[k].pop();
        }
        if (!mediaBlocked_[k]) w = std::min(w, due(ctrl_[k].headReady(), t));
    }
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
