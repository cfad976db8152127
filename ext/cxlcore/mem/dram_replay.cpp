#include "cxlcore/mem/dram_replay.hpp"

#include <algorithm>
#include <unordered_map>

namespace cxlcore {

namespace {

// Offers the requests in time order, in turn: one refused waits for the
// controller's retry, and the ones behind it wait too.
class Feeder : public Component, public Requester {
  public:
    Feeder(EventLoop& loop, const DramParams& p, const std::vector<DramRequest>& reqs)
        : Component(loop), dram_(loop, p, "dram"), reqs_(reqs), done_(reqs.size(), kNever) {
        dram_.setRequester(this);
        txns_.resize(reqs.size());
        for (size_t i = 0; i < reqs.size(); ++i) {
            Txn* t = pool_.get();
            t->addr = t->hostAddr = reqs[i].addr;
            t->opc = reqs[i].write ? Opc::MemWr : Opc::MemRd;
            t->tag = 0;
            index_[t->id] = i;
            txns_[i] = t;
        }
        if (!reqs.empty()) requestWake(reqs.front().at);
    }
    bool tryResp(Txn* t) override {
        done_[index_.at(t->id)] = now();
        return true;
    }
    void retryReq() override {
        blocked_ = false;
        requestWake(now());
    }
    DramReplay result() const { return DramReplay{done_, dram_.stats()}; }

  protected:
    void process() override {
        while (!blocked_ && next_ < reqs_.size() && reqs_[next_].at <= now()) {
            Txn* t = txns_[next_];
            t->birth = t->mark = now();
            if (!dram_.tryReq(t)) {
                blocked_ = true;
                return;
            }
            ++next_;
        }
        if (!blocked_ && next_ < reqs_.size()) requestWake(reqs_[next_].at);
    }

  private:
    DramController dram_;
    const std::vector<DramRequest>& reqs_;
    TxnPool pool_;
    std::vector<Txn*> txns_;
    std::unordered_map<uint64_t, size_t> index_;  // transaction id -> request
    std::vector<Tick> done_;
    size_t next_ = 0;
    bool blocked_ = false;
};

}  // namespace

DramReplay replayDram(const DramParams& p, const std::vector<DramRequest>& reqs) {
    std::vector<DramRequest> sorted(reqs);
    if (!std::is_sorted(sorted.begin(), sorted.end(), [](const DramRequest& a, const DramRequest& b) {
            return a.at < b.at;
        }))
        throw ConfigError("dram_replay: requests must be in time order");
    EventLoop loop;
    Feeder f(loop, p, sorted);
    loop.run();
    return f.result();
}

}  // namespace cxlcore
