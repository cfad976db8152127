#include "cxlcore/mem/mem_port.hpp"

#include "cxlcore/kernel/trace.hpp"

namespace cxlcore {

MemPort::MemPort(Host& host, Target& memory, TxnPool& pool) : host_(host), mem_(memory), pool_(pool) {
    mem_.setRequester(this);
}

void MemPort::read(uint64_t addr, Client* client, void* ctx, uint8_t tag, Txn* parent) {
    Txn* t = pool_.get();
    t->addr = t->hostAddr = addr;
    t->opc = Opc::MemRd;
    t->internal = true;
    t->client = client;
    t->ctx = ctx;
    t->tag = tag;
    t->parent = parent;
    traceChild(t, parent);
    t->birth = t->mark = host_.now();
    issue(t);
}

void MemPort::write(uint64_t addr) {
    Txn* t = pool_.get();
    t->addr = t->hostAddr = addr;
    t->opc = Opc::MemWr;
    t->internal = true;
    t->birth = t->mark = host_.now();
    issue(t);
}

void MemPort::issue(Txn* t) {
    if (refused_.empty() && mem_.tryReq(t)) {
        reads_ += t->isRead();
        return;
    }
    refused_.push_back(t);
}

bool MemPort::tryResp(Txn* t) {
    if (t->isRead()) {
        --reads_;
        t->done = t->mark > host_.now() ? t->mark : host_.now();
        notifyDone(t);
    }
    pool_.put(t);
    return true;
}

void MemPort::retryReq() { pump(); }

void MemPort::pump() {
    while (!refused_.empty() && mem_.tryReq(refused_.front())) {
        reads_ += refused_.front()->isRead();
        refused_.pop_front();
    }
}

}  // namespace cxlcore
