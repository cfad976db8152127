// gem5 SimObject wrapper of the SimCXL core's CXL.mem path. It translates
// packets to transactions and back and hosts the core's components on gem5
// events; every timing decision is the core's.
#ifndef __DEVICES_CXL_MEM_EXPANDER_HH__
#define __DEVICES_CXL_MEM_EXPANDER_HH__

#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/statistics.hh"
#include "ext/cxlcore/cxl.hpp"
#include "mem/abstract_mem.hh"
#include "mem/port.hh"
#include "params/CXLMemExpander.hh"
#include "sim/eventq.hh"

namespace gem5
{

class CXLMemExpander : public memory::AbstractMemory
{
  private:
    // The core's components ask for wake-ups; each gets one gem5 event.
    class Gem5Host : public cxlcore::Host
    {
      public:
        explicit Gem5Host(CXLMemExpander &o) : owner(o) {}
        cxlcore::Tick now() const override { return curTick(); }
        void wakeAt(cxlcore::Component *c, cxlcore::Tick t) override;
        void attach(cxlcore::Component *c) override;
        void detach(cxlcore::Component *c) override;
        std::vector<std::unique_ptr<EventFunctionWrapper>> events;

      private:
        CXLMemExpander &owner;
    };

    class CpuPort : public ResponsePort
    {
      public:
        CpuPort(const std::string &name, CXLMemExpander &o)
            : ResponsePort(name), owner(o) {}

      protected:
        Tick recvAtomic(PacketPtr pkt) override;
        void recvFunctional(PacketPtr pkt) override;
        bool recvTimingReq(PacketPtr pkt) override;
        void recvRespRetry() override;
        AddrRangeList getAddrRanges() const override;

      private:
        CXLMemExpander &owner;
    };

    // Receives the core's responses and retries.
    class Upstream : public cxlcore::Requester
    {
      public:
        explicit Upstream(CXLMemExpander &o) : owner(o) {}
        bool tryResp(cxlcore::Txn *t) override;
        void retryReq() override;

      private:
        CXLMemExpander &owner;
    };

    Gem5Host host;
    CpuPort port;
    Upstream upstream;
    cxlcore::TxnPool pool;
    std::unique_ptr<cxlcore::HostBridge> bridge;
    std::vector<std::unique_ptr<cxlcore::CxlLink>> links;
    std::vector<std::unique_ptr<cxlcore::Type3Device>> devices;

    std::unordered_map<uint64_t, PacketPtr> inflight;  // by transaction id
    std::deque<std::pair<Tick, PacketPtr>> responses;  // ready time, packet
    EventFunctionWrapper sendEvent;
    bool retryReq = false, retryResp = false;
    // The core offered a response while the port was blocked: it holds it
    // (and its tracker entry) until bridge->retryResp().
    bool coreRespWaiting = false;
    Tick idleLatency = 0;
    Tick statsStart = 0;  // last stats reset, for time-averaged occupancies

    void sendResponses();
    void respond(cxlcore::Txn *t);
    bool handleTimingReq(PacketPtr pkt);
    // No packet held and no core event pending: safe to checkpoint.
    bool idle() const;
    void checkDrained();
    // Walks the core's timing state (checkpoints); see cxlcore::StateVisitor.
    void visitState(cxlcore::StateVisitor &v) const;

    struct CXLStats : public statistics::Group
    {
        CXLStats(CXLMemExpander &m);
        void regStats() override;
        void resetStats() override;
        CXLMemExpander &mem;
        statistics::Scalar readReqs, writeReqs, retries;
        statistics::Scalar readBytes, writeBytes;
        statistics::Formula readBandwidth, writeBandwidth;
        statistics::Scalar totalReadLatency;
        statistics::Formula avgReadLatency;
        statistics::Histogram readLatency;
        statistics::Vector stageTicks;
        statistics::Formula avgStage;
        statistics::Value m2sFlits, s2mFlits, replayedFlits;
        statistics::Value m2sLinkUtil, s2mLinkUtil;
        statistics::Value deviceQueueOccupancy, mediaReadQueueOccupancy;
        statistics::Vector devLoad;
    } stats;

  public:
    PARAMS(CXLMemExpander);
    CXLMemExpander(const Params &p);

    Port &getPort(const std::string &if_name, PortID idx = InvalidPortID) override;
    void init() override;
    DrainState drain() override;
    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;
};

} // namespace gem5

#endif // __DEVICES_CXL_MEM_EXPANDER_HH__
