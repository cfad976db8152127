#include "cxlcore/mem/mem_port.hpp"

namespace cxlcore {

MemPort::MemPort(Host& host, const DramParams& p, const std::string& where) : host_(host), dram_(host, p, where) {
    dram_.setRequester(this);
}

void MemPort::read(uint64_t addr, std::function<void()> done) {
    Txn* t = pool_.get();
    t->addr = t->hostAddr = addr;
    t->op = Op::Read;
    t->birth = t->mark = host_.now();
    waiting_.emplace(t->id, std::move(done));
    if (!refused_.empty() || !dram_.tryReq(t)) refused_.push_back(t);
}

void MemPort::write(uint64_t addr) {
    Txn* t = pool_.get();
    t->addr = t->hostAddr = addr;
    t->op = Op::Write;
    t->birth = t->mark = host_.now();
    if (!refused_.empty() || !dram_.tryReq(t)) refused_.push_back(t);
}

bool MemPort::tryResp(Txn* t) {
    auto it = waiting_.find(t->id);
    if (it != waiting_.end()) {
        auto f = std::move(it->second);
        waiting_.erase(it);
        pool_.put(t);
        f();
    } else {
        pool_.put(t);
    }
    return true;
}

void MemPort::retryReq() { pump(); }

void MemPort::pump() {
    while (!refused_.empty() && dram_.tryReq(refused_.front())) refused_.pop_front();
}

}  // namespace cxlcore
