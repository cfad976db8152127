#include "cxl.hpp"

#include <algorithm>
#include <sstream>

namespace cxlcore {

CxlLink::CxlLink(const LinkParams& p, const std::string& where, uint64_t seed) : p_(p) {
    p_.validate(where);
    const double gts = p_.gen == 5 ? 32e9 : 64e9;
    const double coding = p_.gen == 5 ? 128.0 / 130.0 : 1.0;  // Gen6 flit mode: FEC/CRC inside the flit
    rawRate_ = gts * p_.lanes * coding / 8.0;
    // 68 B: 4 slots of 16 B; 256 B: 15 slots (240 B); latency-optimised 256 B:
    // 236 B of slot space, rounded down to whole half-slots. Its first 128 B
    // half carries 120 B of slots (after the 2 B header and that half's 6 B
    // CRC), so a message within the first 15 half-slots is usable after half
    // the flit.
    const uint32_t units = p_.flit_bytes == 68 ? 8 : (p_.latency_optimized ? 29 : 30);
    const uint32_t firstHalf = p_.flit_bytes == 256 && p_.latency_optimized ? 15 : 0;
    const double flitPs = p_.flit_bytes / rawRate_ * 1e12;
    const double bits = p_.flit_bytes * 8.0;
    const double perr = p_.bit_error_rate > 0 ? -std::expm1(bits * std::log1p(-p_.bit_error_rate)) : 0.0;
    const Tick lat = nsToTicks(p_.phy_latency_ns);
    const Tick replay = nsToTicks(p_.replay_latency_ns);
    m2s_.configure(flitPs, units, lat, perr, replay, seed * 2 + 1, firstHalf);
    s2m_.configure(flitPs, units, lat, perr, replay, seed * 2 + 2, firstHalf);
    // A returned credit rides the next flit the other way.
    const Tick ret = m2s_.flitTime() + lat;
    creditReturn_ = ret;
    credits_[kM2SReq].init(p_.credits_req, ret);
    credits_[kM2SRwD].init(p_.credits_rwd, ret);
    credits_[kS2MNdr].init(p_.credits_ndr, ret);
    credits_[kS2MDrs].init(p_.credits_drs, ret);
}

double CxlLink::peakDataBytesPerSec(MsgClass c) const {
    const double flitsPerSec = rawRate_ / p_.flit_bytes;
    return flitsPerSec * m2s_.unitsPerFlit() / kMsgUnits[c] * kLineBytes;
}

HdmDecoder::HdmDecoder(uint64_t base, uint64_t size, uint32_t ways, uint32_t granularity)
    : base_(base), size_(size), ways_(ways), gran_(granularity) {
    // Any size decodes one to one (a last partial row of chunks just ends
    // early); the base is chunk-aligned, as the specification's is.
    if (size == 0 || base % granularity || base > kMaxWindow || size > kMaxWindow - base) {
        std::ostringstream os;
        os << "cxl.bridge: host window base 0x" << std::hex << base << " size 0x" << size << std::dec
           << " is not allowed; allowed: a base that is a multiple of interleave_bytes (" << granularity
           << " B) and a non-empty window within the 52-bit physical address space";
        throw ConfigError(os.str());
    }
}

void HdmDecoder::outside(uint64_t hpa) const {
    std::ostringstream os;
    os << "address 0x" << std::hex << hpa << " is outside the CXL window [0x" << base_ << ", 0x" << base_ + size_
       << ")";
    throw ConfigError(os.str());
}

// ---------------------------------------------------------------- device

Type3Device::Type3Device(Host& host, const DeviceParams& p, const DramParams& media, CxlLink& link,
                         const std::string& where)
    : Component(host), Requester(), p_(p), link_(link), media_(host, media, where + ".media") {
    p_.validate(where + ".device");
    rx_.reset(link.params().credits_req + link.params().credits_rwd);
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
    name(where);
}

void Type3Device::name(const std::string& n) {
    rx_.name(n + ".device.rx (M2S link and receive buffer)");
    ctrl_[0].name(n + ".device.pipeline (reads)");
    ctrl_[1].name(n + ".device.pipeline (writes)");
    tx_.name(n + ".device.tx (S2M responses waiting for credits)");
    media_.name(n + ".media");
}

void Type3Device::deliver(Txn* t, Tick arrival) {
    rx_.push(arrival, t);
    requestWake(arrival);
}

uint8_t Type3Device::devLoad() const {
    return outstanding_ >= loadAt_[2] ? 3 : outstanding_ >= loadAt_[1] ? 2 : outstanding_ >= loadAt_[0] ? 1 : 0;
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

void Type3Device::process() {
    const Tick t = now();
    // Responses first: each one sent frees a controller slot for the intake below.
    while (tx_.headReady() <= t) {
        Txn* x = tx_.front();
        const MsgClass c = x->op == Op::Read ? kS2MDrs : kS2MNdr;
        if (stopAfter_ && sent_ >= stopAfter_) break;  // a device that stopped answering
        if (!link_.respBuffer_.available(t)) {
            link_.respBuffer_.wait(this);
            break;
        }
        if (!link_.credits_[c].take(t)) {
            link_.credits_[c].wait(this);
            break;
        }
        link_.respBuffer_.take(t);
        tx_.pop();
        ++sent_;
        x->devLoad = devLoad();
        ++stats_.devLoad[x->devLoad];
        ++(x->op == Op::Read ? stats_.reads : stats_.writes);
        x->leave(kStageDevice, t);
        const Tick arr = link_.s2m_.send(t, kMsgUnits[c], x->op == Op::Read ? x->size : 0);
        x->leave(kStageLinkResp, arr);
        --outstanding_;
        bridge_->deliverResp(port_, x, arr);
    }
    if (respRefused_ && !tx_.full()) {
        respRefused_ = false;
        media_.retryResp();
    }
    // Link receive buffers -> controller; a freed buffer returns its credit.
    while (rx_.headReady() <= t && outstanding_ < p_.req_queue) {
        Txn* x = rx_.pop();
        link_.credits_[x->op == Op::Read ? kM2SReq : kM2SRwD].give(t);
        ++outstanding_;
        const Tick at = t + reqLat_;
        const int k = x->op == Op::Write;
        if (ctrl_[k].empty() && !mediaBlocked_[k]) {
            // The pipeline takes a media queue entry on entry, so the request
            // reaches the media stamped with its arrival there.
            const Tick mark = x->mark, dev = x->stage[kStageDevice];
            x->leave(kStageDevice, at);
            if (media_.tryReq(x)) continue;
            x->mark = mark;
            x->stage[kStageDevice] = dev;
            mediaBlocked_[k] = true;
            ++stats_.mediaRetries;
        }
        ctrl_[k].push(at, x);
    }
    occ_.set(t, outstanding_);
    Tick w = std::min(due(rx_.headReady(), t), due(tx_.headReady(), t));
    for (int k = 0; k < 2; ++k) {
        while (!mediaBlocked_[k] && ctrl_[k].headReady() <= t) {
            Txn* x = ctrl_[k].front();
            x->leave(kStageDevice, t);
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

// ---------------------------------------------------------------- bridge

HostBridge::HostBridge(Host& host, const BridgeParams& p, const std::string& where, uint64_t windowBase,
                       uint64_t windowSize)
    : Component(host), p_((p.validate(where), p)),
      hdm_(windowBase, windowSize, p.interleave_ways, p.interleave_bytes), where_(where) {
    reqLat_ = nsToTicks(p_.req_latency_ns);
    respLat_ = nsToTicks(p_.resp_latency_ns);
    tracker_.init(p_.req_queue, 0);
}

void HostBridge::addPort(CxlLink* link, Type3Device* dev) {
    auto port = std::make_unique<Port>();
    port->link = link;
    port->dev = dev;
    port->out.reset(p_.req_queue);
    port->in.reset(p_.resp_queue);
    port->targetPortIndex = uint32_t(ports_.size());
    const std::string n = where_ + ".port" + std::to_string(port->targetPortIndex);
    port->out.name(n + ".out (requests waiting for M2S credits)");
    port->in.name(n + ".in (responses the host has not taken)");
    // In flight on S2M or waiting here: never more than the buffer holds.
    link->respBuffer_.init(p_.resp_queue, link->creditReturn());
    dev->attach(this, port->targetPortIndex);
    ports_.push_back(std::move(port));
}

bool HostBridge::tryReq(Txn* t) {
    if (!tracker_.take(now())) {
        needRetry_ = true;
        tracker_.wait(this);
        ++stats_.refused;
        return false;
    }
    HdmDecoder::Target tg = hdm_.decode(t->addr);
    t->addr = tg.dpa;
    ++(t->op == Op::Read ? stats_.reads : stats_.writes);
    Port& p = *ports_[tg.port];
    const Tick at = now() + reqLat_;
    // With nothing queued ahead and a credit landed by then, the flit's send
    // time is already known: the port is this link's only sender.
    if (p.out.empty() && send(p, t, at)) return true;
    p.out.push(at, t);
    requestWake(at);
    return true;
}

bool HostBridge::send(Port& p, Txn* x, Tick at) {
    const MsgClass c = x->op == Op::Read ? kM2SReq : kM2SRwD;
    if (!p.link->credits_[c].take(at)) return false;
    x->leave(kStageHostPort, at);
    const Tick arr = p.link->m2s_.send(at, kMsgUnits[c], x->op == Op::Write ? x->size : 0);
    x->leave(kStageLinkReq, arr);
    p.dev->deliver(x, arr);
    return true;
}

void HostBridge::deliverResp(uint32_t port, Txn* t, Tick arrival) {
    Port& p = *ports_[port];
    // The response clears the bridge at `ready`: its S2M buffer and its tracker
    // entry are free from then on. A requester that takes responses at once
    // gets it directly, stamped with that time; no event is needed.
    const Tick ready = arrival + respLat_;
    if (p.in.empty() && !respBlocked_ && respond(p, t, ready)) return;
    p.in.push(ready, t);
    requestWake(ready);
}

bool HostBridge::respond(Port& p, Txn* x, Tick ready) {
    const MsgClass c = x->op == Op::Read ? kS2MDrs : kS2MNdr;
    const uint64_t dpa = x->addr;
    const Tick mark = x->mark;
    const Tick host = x->stage[kStageHostPort];
    x->leave(kStageHostPort, ready);
    x->addr = hdm_.encode(p.targetPortIndex, dpa);
    if (!up_->tryResp(x)) {  // x belongs to the requester once accepted
        x->addr = dpa;
        x->mark = mark;
        x->stage[kStageHostPort] = host;
        return false;
    }
    p.link->credits_[c].give(ready);
    p.link->respBuffer_.give(ready);
    tracker_.giveAt(ready);
    return true;
}

void HostBridge::retryResp() {
    respBlocked_ = false;
    requestWake(now());
}

void HostBridge::process() {
    const Tick t = now();
    if (needRetry_) {
        needRetry_ = false;
        up_->retryReq();
    }
    Tick w = kNever;
    for (auto& pp : ports_) {
        Port& p = *pp;
        while (p.out.headReady() <= t) {
            Txn* x = p.out.front();
            if (!send(p, x, t)) {
                p.link->credits_[x->op == Op::Read ? kM2SReq : kM2SRwD].wait(this);
                break;
            }
            p.out.pop();
        }
        while (!respBlocked_ && p.in.headReady() <= t) {
            if (!respond(p, p.in.front(), t)) {
                respBlocked_ = true;
                break;
            }
            p.in.pop();
        }
        w = std::min({w, due(p.out.headReady(), t), respBlocked_ ? kNever : due(p.in.headReady(), t)});
    }
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
