// Remote NUMA memory behind an inter-socket link.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "cxlcore/link/link.hpp"
#include "cxlcore/mem/dram.hpp"

namespace cxlcore {

// Remote NUMA memory: an inter-socket link (latency and bandwidth per
// direction) in front of the other socket's DRAM controller.
class InterSocket : public Component, public Target, public Requester {
  public:
    InterSocket(Host& host, const InterSocketParams& p, const DramParams& dram);
    bool tryReq(Txn* t) override;
    bool tryResp(Txn* t) override;
    void retryReq() override;
    void retryResp() override;

    DramController& dram() { return dram_; }
    FlitChannel out_, back_;
    double bytesPerSec() const { return p_.bandwidth_gbps * 1e9; }

  protected:
    void process() override;

  private:
    InterSocketParams p_;
    DramController dram_;
    TimedFifo<Txn*> rx_, tx_;
    // Directory writes: made here, sent to DRAM when it has room, recycled
    // when DRAM completes them.
    std::vector<std::unique_ptr<Txn>> dirStore_;
    std::vector<Txn*> dirFree_;
    std::deque<Txn*> dirQ_;
    uint64_t dirSeq_ = 0;
    uint32_t outstanding_ = 0, reqUnits_, dataUnits_;
    bool needRetry_ = false, dramBlocked_ = false, respBlocked_ = false;
};

}  // namespace cxlcore
