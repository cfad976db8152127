#include "cxlcore/host/remote_socket.hpp"

#include <algorithm>

namespace cxlcore {

namespace {
// As its parameters and queues are named: the inter-socket link.
const char* const kLink = "remote.link";
}  // namespace

InterSocket::InterSocket(Host& host, const InterSocketParams& p, const DramParams& dram)
    : Component(host), p_(p), dram_(host, dram, "remote.dram") {
    p_.validate("remote.link");
    constexpr uint32_t kUnit = 16;  // bytes per transfer unit on the link
    const double unitPs = kUnit / p_.bandwidth_gbps * 1000.0;  // exact: the channel keeps fractions
    const Tick lat = nsToTicks(p_.latency_ns);
    out_.configure(unitPs, 1, lat, 0.0, 0, 1);
    back_.configure(unitPs, 1, lat, 0.0, 0, 2);
    reqUnits_ = (p_.req_bytes + kUnit - 1) / kUnit;
    dataUnits_ = (p_.data_bytes + kUnit - 1) / kUnit;
    rx_.reset(p_.max_outstanding);
    tx_.reset(p_.max_outstanding);
    rx_.name("remote.link.out (inter-socket link to the remote home)");
    tx_.name("remote.link.back (inter-socket link back)");
    dram_.setRequester(this);
}

bool InterSocket::tryReq(Txn* t) {
    if (outstanding_ >= p_.max_outstanding) {
        needRetry_ = true;
        return false;
    }
    ++outstanding_;
    const bool rd = t->isRead();
    Tick arr = out_.send(now(), rd ? reqUnits_ : dataUnits_, rd ? 0 : t->size);
    t->leave(kStageLinkDown, arr, kLink);
    rx_.push(arr, t);
    requestWake(arr);
    return true;
}

bool InterSocket::tryResp(Txn* t) {
    if (t->internal) {  // a directory write is done
        dirFree_.push_back(t);
        return true;
    }
    const bool rd = t->isRead();
    if (rd && t->own && p_.directory_writes) {
        // The home agent's memory directory: a remote read for ownership
        // marks the line as cached by the other socket, a state kept in the
        // line's ECC bits, so the home writes the line back to DRAM (the
        // modified line's writeback later clears it with its own write; a
        // clean read-only line keeps the state and costs nothing more).
        Txn* d;
        if (dirFree_.empty()) {
            dirStore_.emplace_back(new Txn());
            d = dirStore_.back().get();
        } else {
            d = dirFree_.back();
            dirFree_.pop_back();
            *d = Txn();
        }
        d->id = (1ull << 63) | dirSeq_++;  // ids of their own: components key work by id
        d->opc = Opc::MemWr;
        d->addr = d->hostAddr = t->addr;
        d->internal = true;
        d->birth = d->mark = now();
        dirQ_.push_back(d);
        requestWake(now());
    }
    Tick arr = back_.send(now(), rd ? dataUnits_ : reqUnits_, rd ? t->size : 0);
    t->leave(kStageLinkUp, arr, kLink);
    tx_.push(arr, t);
    requestWake(arr);
    return true;
}

void InterSocket::retryReq() {
    dramBlocked_ = false;
    requestWake(now());
}

void InterSocket::retryResp() {
    respBlocked_ = false;
    requestWake(now());
}

void InterSocket::process() {
    const Tick t = now();
    // Directory writes first: the reads that made them are older than
    // anything still on the link, and the home agent cannot hold them for long.
    while (!dramBlocked_ && !dirQ_.empty()) {
        if (!dram_.tryReq(dirQ_.front())) {
            dramBlocked_ = true;
            break;
        }
        dirQ_.pop_front();
    }
    while (!dramBlocked_ && rx_.headReady() <= t) {
        Txn* x = rx_.front();
        x->leave(kStageLinkDown, t, kLink);
        if (!dram_.tryReq(x)) {
            dramBlocked_ = true;
            break;
        }
        rx_.pop();
    }
    while (!respBlocked_ && tx_.headReady() <= t) {
        Txn* x = tx_.front();
        x->leave(kStageLinkUp, t, kLink);
        if (!up_->tryResp(x)) {
            respBlocked_ = true;
            break;
        }
        tx_.pop();
        --outstanding_;
        if (needRetry_) {
            needRetry_ = false;
            up_->retryReq();
        }
    }
    Tick w = std::min(dramBlocked_ ? kNever : due(rx_.headReady(), t), respBlocked_ ? kNever : due(tx_.headReady(), t));
    if (w != kNever) requestWake(w);
}

}  // namespace cxlcore
