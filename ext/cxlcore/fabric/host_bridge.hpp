// The CXL host bridge: HDM decoding over root ports, the request tracker and
// each port's response buffer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cxlcore/fabric/hdm_decoder.hpp"
#include "cxlcore/link/link.hpp"

namespace cxlcore {

struct BridgeStats {
    uint64_t reads = 0, writes = 0, refused = 0;
    uint64_t throttled = 0;  // requests that waited for their port's DevLoad throttle
    // Requests no committed decoder covers (routing by committed decoders only):
    // reads answered with all ones (or poison), writes dropped, by the bridge itself.
    uint64_t unroutedReads = 0, unroutedWrites = 0, poisoned = 0;
};

// The host's side of HDM-DB (a shared device's back-invalidate): told of
// each BISnp a root port receives and of the completions of the writes it
// sent past the request tracker (sendCoherent), each at the time it clears
// the bridge.
class BiAgent {
  public:
    virtual void snooped(Txn* snp, Tick at) = 0;
    virtual void written(Txn* cmp, Tick at) = 0;

  protected:
    ~BiAgent() = default;
};

// Txn::route of a write the BiAgent sent: its completion goes back to it.
constexpr uint8_t kCoherentRoute = 0xff;

class HostBridge : public Component, public Target {
  public:
    // The host window it decodes; by default [0, HdmDecoder::kMaxWindow).
    HostBridge(Host& host, const BridgeParams& p, const std::string& where, uint64_t windowBase = 0,
               uint64_t windowSize = HdmDecoder::kMaxWindow);
    // One root port with its link and what sits below it (a Type-3 device
    // or a switch); the bridge does not own them.
    // Its response buffer (resp_queue entries) is a credit the device takes
    // for each response it sends, returned when the host takes the response.
    void addPort(CxlLink* link, MemEndpoint* dev);

    // Routes by the HDM decoders software committed instead of its own
    // interleave over every port (call after the last addPort).
    void routeBy(std::unique_ptr<CommittedRoutes> r) { routes_ = std::move(r); }
    const CommittedRoutes* routes() const { return routes_.get(); }
    // Where an access to `addr` goes (false: no committed decoder covers it).
    bool route(uint64_t addr, HdmDecoder::Target& tg) const { return decode(addr, tg); }

    bool tryReq(Txn* t) override;
    void retryResp() override;
    Tick retryAt() const override { return needRetry_ ? trackerWake_ : kNever; }
    void retried() override {
        needRetry_ = false;
        trackerWake_ = kNever;
    }
    // HDM-DB: where BISnps go, and the agent's own messages down (BIRsps,
    // and write-backs, which take no tracker entry: a snoop's answer must
    // never wait behind the reads it holds up), by host physical address, at `at`.
    void setAgent(BiAgent* a) { agent_ = a; }
    void sendCoherent(Txn* m, Tick at);


    const HdmDecoder& decoder() const { return hdm_; }
    const BridgeStats& stats() const { return stats_; }
    bool throttles() const { return throttle_; }  // devload_throttle is on
    void resetStats() { stats_ = BridgeStats(); }
    void checkpoint(StateVisitor& v, const std::string& n) {
        tracker_.checkpoint(v, n + ".tracker");
        v(n + ".needRetry", needRetry_);
        v(n + ".respBlocked", respBlocked_);
        for (size_t i = 0; throttle_ && i < ports_.size(); ++i) {
            const std::string k = n + ".port" + std::to_string(i);
            v(k + ".inflight", ports_[i]->inflight);
            v(k + ".capMilli", ports_[i]->capMilli);
            v(k + ".sinceCut", ports_[i]->sinceCut);
            v(k + ".guard", ports_[i]->guard);
        }
    }

  protected:
    void process() override;

  private:
    // A root port: the host end of its link, where its device's responses arrive.
    struct Port final : LinkReceiver {
        Port(HostBridge& b) : bridge(b) {}
        void receive(Txn* t, Tick arrival) override { bridge.deliverResp(*this, t, arrival); }
        HostBridge& bridge;
        CxlLink* link = nullptr;
        MemEndpoint* dev = nullptr;
        TimedFifo<Txn*> out, in;
        TimedQueue<Txn*> co;  // the agent's messages down, each on its own channel's credits
        uint32_t targetPortIndex = 0;
        // DevLoad throttling: requests sent and not yet answered, and how many
        // may be, in thousandths (it moves by fractions of a request).
        uint32_t inflight = 0;
        uint32_t sinceCut = 0, guard = 0;  // responses since the last severe cut, and the requests then in flight
        uint64_t capMilli = 0;
    };
    bool room(const Port& p) const { return !throttle_ || uint64_t(p.inflight) * 1000 < p.capMilli; }
    // The host's reaction to a response's DevLoad (CXL 2.0 QoS telemetry).
    void throttle(Port& p, uint8_t devLoad);
    // A response from port p, fully received at `arrival`.
    void deliverResp(Port& p, Txn* t, Tick arrival);
    bool respond(Port& p, Txn* x, Tick ready);
    // Host address -> root port and DPA, by the committed decoders when software programmed them,
    // else by the bridge's own interleave (false: no committed decoder covers it); and back.
    bool decode(uint64_t hpa, HdmDecoder::Target& tg) const {
        if (routes_) return routes_->route(hpa, tg);
        tg = hdm_.decode(hpa);
        return true;
    }
    uint64_t hpaOf(const Port& p, uint64_t dpa) const {
        return routes_ ? routes_->hpaOf(p.targetPortIndex, dpa) : hdm_.encode(p.targetPortIndex, dpa);
    }
    // What the coherent agent receives: a BISnp, or the completion of its write.
    void toAgent(Port& p, Txn* t, Tick ready);
    void drainCoherent(Port& p, Tick t);
    bool send(Port& p, Txn* x, Tick at);
    // A refused request waits for a tracker entry; one is freed at `at`.
    void waitTracker();
    void freeTracker(Tick at);
    // A request no committed decoder claims: completed here, never sent down.
    void unrouted(Txn* t);
    bool answerUnrouted(Tick t);
    // The first port from `from` on whose queues hold something (64: none).
    uint32_t nextBusy(uint32_t from) const;

    BridgeParams p_;
    HdmDecoder hdm_;
    std::unique_ptr<CommittedRoutes> routes_;
    TimedFifo<Txn*> unrouted_;  // completions of unrouted requests, in order (the tracker bounds them)
    std::vector<std::unique_ptr<Port>> ports_;
    std::string where_;
    const char* name_;  // where_, interned: the name its trace spans carry
    Tick reqLat_, respLat_;
    CreditPool tracker_;  // requests outstanding to CXL
    bool needRetry_ = false, respBlocked_ = false, throttle_ = false;
    // With a retrier (Requester::retrier) the tracker wakes it, not the
    // bridge: the time the bridge would have woken to call retryReq, and
    // whether that is the next entry freed (the tracker's own waiter).
    Component* retrier_ = nullptr;
    Tick trackerWake_ = kNever;
    bool retryOnGive_ = false;
    BiAgent* agent_ = nullptr;
    // Ports whose out or in queue is not empty (bit i: port i): process()
    // visits only these, so its cost does not grow with idle ports.
    uint64_t busy_ = 0;
    BridgeStats stats_;
};

}  // namespace cxlcore
