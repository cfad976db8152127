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
};

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

    bool tryReq(Txn* t) override;
    void retryResp() override;


    const HdmDecoder& decoder() const { return hdm_; }
    const BridgeStats& stats() const { return stats_; }
    void resetStats() { stats_ = BridgeStats(); }
    void checkpoint(StateVisitor& v, const std::string& n) {
        tracker_.checkpoint(v, n + ".tracker");
        v(n + ".needRetry", needRetry_);
        v(n + ".respBlocked", respBlocked_);
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
        uint32_t targetPortIndex = 0;
    };
    // A response from port p, fully received at `arrival`.
    void deliverResp(Port& p, Txn* t, Tick arrival);
    bool respond(Port& p, Txn* x, Tick ready);
    bool send(Port& p, Txn* x, Tick at);
    // The first port from `from` on whose queues hold something (64: none).
    uint32_t nextBusy(uint32_t from) const;

    BridgeParams p_;
    HdmDecoder hdm_;
    std::vector<std::unique_ptr<Port>> ports_;
    std::string where_;
    const char* name_;  // where_, interned: the name its trace spans carry
    Tick reqLat_, respLat_;
    CreditPool tracker_;  // requests outstanding to CXL
    bool needRetry_ = false, respBlocked_ = false;
    // Ports whose out or in queue is not empty (bit i: port i): process()
    // visits only these, so its cost does not grow with idle ports.
    uint64_t busy_ = 0;
    BridgeStats stats_;
};

}  // namespace cxlcore
