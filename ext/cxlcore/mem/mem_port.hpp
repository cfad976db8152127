// The memory side of an agent that is not itself a Requester: the home
// agent's path into the host's address map, a Type-2 device's own media. A
// read tells its client, handing it the read's Txn (ctx and tag as the
// caller set them, its stages filled in) before the port recycles it;
// writes are posted.
#pragma once

#include <deque>

#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

class MemPort : public Requester {
  public:
    // Sends to `memory` (a DRAM controller, or an input of the uncore), whose requester it becomes.
    MemPort(Host& host, Target& memory, TxnPool& pool);
    // `parent`: the request this read is on behalf of (its latency), or null.
    void read(uint64_t addr, Client* client, void* ctx, uint8_t tag, Txn* parent);
    void write(uint64_t addr);
    bool tryResp(Txn* t) override;
    void retryReq() override;
    size_t pending() const { return reads_ + refused_.size(); }

  private:
    void issue(Txn* t);
    void pump();
    Host& host_;
    Target& mem_;
    TxnPool& pool_;
    std::deque<Txn*> refused_;
    size_t reads_ = 0;  // accepted, not yet answered
};

}  // namespace cxlcore
