// DRAM controller: per-channel read/write queues, FR-FCFS scheduling over
// banks with open rows, write batching between watermarks, write-to-read
// turnaround per rank and bank group (tWTR_S/L), rank-to-rank switching
// (tRTRS), tRRD_S/L, tCCD_S/L and tFAW, and all-bank or same-bank refresh
// that a busy rank may postpone.
#pragma once

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "cxlcore/config/params.hpp"
#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

struct DramStats {
    uint64_t reads = 0, writes = 0;
    uint64_t rowHits = 0, rowMisses = 0, rowConflicts = 0;
    uint64_t refreshes = 0, turnarounds = 0, writeBursts = 0;
    uint64_t refreshesPostponed = 0, rankSwitches = 0;
    uint64_t readRetries = 0, writeRetries = 0;
    Tick busBusy = 0;  // data bus occupied, summed over channels
};

// Division by a constant that is usually a power of two.
struct Divisor {
    uint64_t d = 1;
    int shift = 0;
    bool pow2 = true;
    explicit Divisor(uint64_t v = 1) : d(v), pow2(v && !(v & (v - 1))) {
        while (pow2 && (1ull << shift) < v) ++shift;
    }
    uint64_t div(uint64_t x) const { return pow2 ? x >> shift : x / d; }
    uint64_t mod(uint64_t x) const { return pow2 ? x & (d - 1) : x % d; }
};

class DramChannel;

// A request queue in arrival order, contiguous, with room before its first
// entry: FR-FCFS takes nearly every request from near the front, so an erase
// moves the entries on the nearer side of it (a few) rather than all behind it.
template <class T>
class NearEraseQueue {
  public:
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    T& operator[](size_t i) { return buf_[head_ + i]; }
    const T& operator[](size_t i) const { return buf_[head_ + i]; }
    T& front() { return buf_[head_]; }
    const T* begin() const { return buf_.data() + head_; }
    const T* end() const { return buf_.data() + head_ + n_; }
    void push_back(const T& v) {
        if (head_ + n_ == buf_.size()) {
            if (head_ * 2 >= buf_.size() && head_) {  // slide to the start: amortised over head_ erases
                std::copy(buf_.begin() + long(head_), buf_.end(), buf_.begin());
                head_ = 0;
            } else {
                buf_.resize(std::max<size_t>(16, 2 * buf_.size()));
            }
        }
        buf_[head_ + n_++] = v;
    }
    void erase(size_t i) {
        T* b = buf_.data() + head_;
        if (i < n_ - 1 - i) {
            std::copy_backward(b, b + i, b + i + 1);
            ++head_;
        } else {
            std::copy(b + i + 1, b + n_, b + i);
        }
        if (--n_ == 0) head_ = 0;
    }

  private:
    std::vector<T> buf_;
    size_t head_ = 0, n_ = 0;
};

class DramController : public Target {
  public:
    DramController(Host& host, const DramParams& p, const std::string& where);
    ~DramController() override;
    // Names its channels' queues in stall reports.
    void name(const std::string& n);

    bool tryReq(Txn* t) override;
    void retryResp() override;

    const DramParams& params() const { return p_; }
    // Peak data bandwidth of all channels, bytes per second.
    double peakBytesPerSec() const;
    struct Loc {
        uint32_t channel, rank, bank;  // bank = group * banks_per_group + bank in group
        uint64_t row;
    };
    Loc decode(uint64_t addr) const;

    const DramStats& stats() const { return stats_; }
    void resetStats(Tick now);
    double meanReadQueue(Tick start, Tick end) const { return readOcc_.mean(start, end); }
    // Bank, bus and refresh state of every channel (see StateVisitor).
    void checkpoint(StateVisitor& v, const std::string& n);

  private:
    friend class DramChannel;
    void slotFreed();

    DramParams p_;
    Tick tBurst_, tRCD_, tCL_, tCWL_, tRP_, tRAS_, tWR_, tWTR_L_, tWTR_S_, tRTW_, tRTP_, tRTRS_, tRRD_S_, tRRD_L_,
        tFAW_, tCCD_S_, tCCD_L_, tREFI_, tRFC_, tRFCsb_;
    Tick front_, back_, lookahead_, pageTimeout_, pageTimeoutMax_;
    Divisor interleave_, channels_, groups_, perGroup_, ranks_, rowLines_, banks_, linesPerChunk_;
    std::vector<std::unique_ptr<DramChannel>> ch_;
    bool needRetry_ = false;
    DramStats stats_;
    Occupancy readOcc_;
    uint64_t readsQueued_ = 0;
    uint32_t writesQueued_ = 0;  // posted writes not yet written, all channels
};

// One channel schedules on its own: channels share nothing but the front end.
class DramChannel : public Component {
  public:
    DramChannel(Host& host, DramController& c, uint32_t index);
    bool tryRead(Txn* t, const DramController::Loc& l);
    bool tryWrite(Txn* t, const DramController::Loc& l);
    void unblock();
    void checkpoint(StateVisitor& v, const std::string& n);
    void name(const std::string& n);

  protected:
    void process() override;

  private:
    struct Bank {
        uint64_t openRow = ~0ull;
        Tick actAllowed = 0, preAllowed = 0;
        Tick closeAt = kNever;  // page_policy 2: when the idle timer precharges the open row
        Tick timeout = 0;       // page_policy 2: this bank's timer, adapted to its accesses
        uint64_t closedRow = ~0ull;  // the row the timer closed last
    };
    struct Rank {
        std::vector<Bank> banks;
        std::vector<Tick> groupColAllowed;  // tCCD_L within a bank group
        std::vector<Tick> groupActAllowed;  // tRRD_L within a bank group
        std::vector<Tick> groupReadAllowed;  // tWTR_L after a write's data, per bank group
        Tick colAllowed = 0;   // tCCD_S within the rank
        Tick readAllowed = 0;  // tWTR_S after a write's data, whole rank
        Tick faw[4] = {kNever, kNever, kNever, kNever};  // kNever: no activate yet
        uint32_t fawHead = 0;
        Tick lastAct = kNever;
        Tick nextRefresh = 0;
        Tick lastUse = 0;      // end of the rank's latest data burst
        uint32_t owed = 0;     // refreshes postponed
        uint32_t refBank = 0;  // same-bank refresh: the bank of each group refreshed next
        uint32_t queued = 0;   // requests in the queues for this rank
    };
    struct Req {
        Txn* txn;  // reads, and writes acknowledged once written (not posted)
        uint32_t rank, bank;
        uint64_t row;
        Tick ready;  // after the front-end latency
        uint32_t group;
    };

    void schedule(Tick t);
    // Whether a queued request is for the same row as r (closed-adaptive page policy).
    static bool pendingHit(const Req& r, const NearEraseQueue<Req>& q);
    // A request in q for bank b's open row, there before its timer ran out.
    static bool queuedFor(const NearEraseQueue<Req>& q, uint32_t rank, uint32_t bank, const Bank& b) {
        for (const Req& o : q)
            if (o.bank == bank && o.rank == rank && o.row == b.openRow && o.ready <= b.closeAt) return true;
        return false;
    }
    void adaptTimer(Bank& b, uint64_t row) const;
    // Page policy 2 at time t: a timer that ran out precharged the row,
    // unless a request for that row was queued before it ran out (a
    // controller keeps the row open for it).
    void expire(Bank& b, uint32_t rank, uint32_t bank, Tick t) const {
        if (b.closeAt > t) return;
        if (queuedFor(readQ_, rank, bank, b) || queuedFor(writeQ_, rank, bank, b)) {
            b.closeAt = kNever;
            return;
        }
        b.closedRow = b.openRow;
        b.openRow = ~0ull;
        b.actAllowed = std::max(b.actAllowed, b.closeAt + c_.tRP_);
        b.closeAt = kNever;
    }
    void wakeForDecision();
    bool pickMode();
    void refreshRank(Rank& r, Tick t);
    void refresh(Rank& r, Tick start, uint32_t count);
    void arrive(uint32_t rank);
    Tick colReady(const Rank& rk, uint32_t group, bool write) const;
    Tick activateAt(const Rank& rk, const Bank& b, uint32_t group, Tick start) const;
    Tick busGap(uint32_t rank, bool write) const;

    DramController& c_;
    std::vector<Rank> ranks_;
    NearEraseQueue<Req> readQ_, writeQ_;  // arrival order
    TimedFifo<Txn*> resp_;  // reads in data-burst order
    TimedFifo<Txn*> acks_;  // write acknowledgements
    const char* readQName_ = "media read queue";
    const char* name_ = "dram";  // <controller>.channel<i>: trace spans carry it
    Tick busFree_ = 0, nextDecision_ = 0;
    Tick busDecision_ = 0;  // the earliest decision the bus allows after the last commit
    bool lastWrite_ = false, writeMode_ = false, respBlocked_ = false;
    bool deferred_ = false;  // the best candidate waits for its bank: decide again on an arrival
    uint32_t lastRank_ = 0;
    uint32_t writesThisBurst_ = 0;
};

}  // namespace cxlcore
