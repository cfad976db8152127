// DRAM controller: per-channel read/write queues, FR-FCFS scheduling over
// banks with open rows, bus read/write turnaround, tFAW/tRRD, refresh.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "params.hpp"
#include "sim.hpp"

namespace cxlcore {

struct DramStats {
    uint64_t reads = 0, writes = 0;
    uint64_t rowHits = 0, rowMisses = 0, rowConflicts = 0;
    uint64_t refreshes = 0, turnarounds = 0, writeBursts = 0;
    uint64_t readRetries = 0, writeRetries = 0;
    Tick busBusy = 0;  // data bus occupied, summed over channels
};

class DramController : public Component, public Target {
  public:
    DramController(Host& host, const DramParams& p, const std::string& where);

    bool tryReq(Txn* t) override;
    void retryResp() override;

    const DramParams& params() const { return p_; }
    // Peak data bandwidth of all channels, bytes per second.
    double peakBytesPerSec() const;
    // Decoded location of an address (for tests and the breakdown).
    struct Loc {
        uint32_t channel, rank, bank;  // bank = group * banks_per_group + bank in group
        uint64_t row;
    };
    Loc decode(uint64_t addr) const;

    const DramStats& stats() const { return stats_; }
    void resetStats(Tick now);
    double meanReadQueue(Tick start, Tick end) const { return readOcc_.mean(start, end); }
    size_t queued() const;

  protected:
    void process() override;

  private:
    struct Bank {
        uint64_t openRow = ~0ull;
        Tick actAllowed = 0, preAllowed = 0;
    };
    struct Rank {
        std::vector<Bank> banks;
        std::vector<Tick> groupColAllowed;  // tCCD_L within a bank group
        Tick faw[4] = {0, 0, 0, 0};
        uint32_t fawHead = 0;
        Tick lastAct = 0;
        Tick nextRefresh = 0;
    };
    struct Req {
        Txn* txn;  // reads only: writes are acknowledged on arrival
        Loc loc;
        Tick ready;  // after the front-end latency
    };
    struct Channel {
        std::vector<Rank> ranks;
        std::deque<Req> readQ, writeQ;
        TimedFifo<Txn*> resp;  // reads in data-burst order
        Tick busFree = 0;
        bool lastWrite = false, writeMode = false;
        uint32_t writesThisBurst = 0;
        Tick nextDecision = 0;
    };

    void schedule(Channel& ch, Tick t);
    bool pickMode(Channel& ch);
    void refreshRank(Rank& r, Tick t);
    Tick nextEvent() const;

    DramParams p_;
    std::vector<Channel> ch_;
    TimedFifo<Txn*> acks_;  // write acknowledgements
    Tick tBurst_, tRCD_, tCL_, tCWL_, tRP_, tRAS_, tWR_, tWTR_, tRTW_, tRRD_, tFAW_, tCCD_L_, tREFI_, tRFC_;
    Tick front_, back_, lookahead_;
    bool needRetry_ = false, respBlocked_ = false;
    DramStats stats_;
    Occupancy readOcc_;
    uint64_t readsQueued_ = 0;
};

}  // namespace cxlcore
