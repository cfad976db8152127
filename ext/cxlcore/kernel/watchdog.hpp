// The progress watchdog: a run that stops making progress says where its oldest request is.
#pragma once

#include <sstream>
#include <string>

#include "cxlcore/kernel/component.hpp"

namespace cxlcore {

// Progress watchdog over a pool's transactions: a run whose requests stop
// completing ends with a StallError naming the queue that holds the oldest
// request and its age, instead of hanging or reporting numbers it did not
// compute. `window`: how long no request may complete while some are in
// flight (far above any request's latency at valid parameters).
class Watchdog : public Watch {
  public:
    static constexpr Tick kDefaultWindow = 10'000'000'000ull;  // 10 ms
    explicit Watchdog(const TxnPool& pool, Tick window = kDefaultWindow) : pool_(pool), window_(window) {}
    void check(Tick now) override {
        if (pool_.returned() != returned_ || pool_.live() == 0) {
            returned_ = pool_.returned();
            since_ = now;
            return;
        }
        if (window_ && now - since_ > window_)
            throw StallError(report(now, "no request completed for " + fmtTime(now - since_)));
    }
    // Starts a fresh window: a host that checks only while requests are in
    // flight (gem5) calls this when the first one arrives after a quiet spell.
    void restart(Tick now) {
        returned_ = pool_.returned();
        since_ = now;
    }
    Tick window() const { return window_; }
    // The event queue ran dry: nothing can move any request still in flight.
    void drained(Tick now) const {
        if (pool_.live()) throw StallError(report(now, "no event is left to move the requests in flight"));
    }
    std::string report(Tick now, const std::string& why) const {
        std::ostringstream os;
        os << "simulation stalled at " << fmtTime(now) << ": " << why << "; " << pool_.live()
           << " request(s) in flight";
        if (const Txn* o = pool_.oldest())
            os << "; the oldest (txn " << o->id << ", " << (o->isRead() ? "read" : "write") << " of 0x"
               << std::hex << o->hostAddr << std::dec << ") is in " << o->at << ", issued "
               << fmtTime(now > o->birth ? now - o->birth : 0) << " ago";
        return os.str();
    }
    static std::string fmtTime(Tick t) {
        std::ostringstream os;
        os.precision(4);
        if (t >= 1'000'000'000ull) os << double(t) / 1e9 << " ms";
        else if (t >= 1'000'000ull) os << double(t) / 1e6 << " us";
        else os << double(t) / 1e3 << " ns";
        return os.str();
    }

  private:
    const TxnPool& pool_;
    Tick window_, since_ = 0;
    uint64_t returned_ = 0;
};

}  // namespace cxlcore
