// A DRAM controller driven by a component that is not itself a Requester:
// reads call back when their data returns, writes are posted.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <unordered_map>

#include "cxlcore/mem/dram.hpp"

namespace cxlcore {

class MemPort : public Requester {
  public:
    MemPort(Host& host, const DramParams& p, const std::string& where);
    void read(uint64_t addr, std::function<void()> done);
    void write(uint64_t addr);
    bool tryResp(Txn* t) override;
    void retryReq() override;
    DramController& dram() { return dram_; }
    const DramController& dram() const { return dram_; }
    size_t pending() const { return waiting_.size() + refused_.size(); }

  private:
    void pump();
    Host& host_;
    DramController dram_;
    TxnPool pool_;
    std::unordered_map<uint64_t, std::function<void()>> waiting_;
    std::deque<Txn*> refused_;
};

}  // namespace cxlcore
