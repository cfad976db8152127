// gem5 SimObject of a CXL.cache link between a device cache and the memory
// bus. Requests go up after request_latency, responses down after
// response_latency. gem5's coherent crossbar resolves a snoop at once; a
// snoop that finds the device's copy makes the snooping request wait the
// snoop's round trip (the home waits for the device's RspI), and a snoop the
// device answers with data delivers that data a round trip later; and the
// device's own requests for a snooped line leave no earlier than the snoop
// would have reached it (until then it would still have used its copy). The
// latencies are the SimCXL core's, computed outside gem5: no timing decision
// is made here.
#ifndef __DEVICES_CXL_CACHE_LINK_HH__
#define __DEVICES_CXL_CACHE_LINK_HH__

#include <unordered_map>

#include "mem/cache/base.hh"
#include "mem/qport.hh"
#include "params/CXLCacheLink.hh"
#include "sim/clocked_object.hh"

namespace gem5
{

class CXLCacheLink : public ClockedObject
{
  public:
    PARAMS(CXLCacheLink);
    CXLCacheLink(const Params &p);
    Port &getPort(const std::string &name, PortID idx = InvalidPortID)
        override;
    void init() override;

  private:
    class HostPort : public QueuedRequestPort
    {
      public:
        HostPort(const std::string &n, CXLCacheLink &l);

      protected:
        bool recvTimingResp(PacketPtr pkt) override;
        void recvTimingSnoopReq(PacketPtr pkt) override;
        Tick recvAtomicSnoop(PacketPtr pkt) override;
        void recvFunctionalSnoop(PacketPtr pkt) override;
        void recvRangeChange() override;
        bool isSnooping() const override { return link.cache != nullptr; }

      private:
        CXLCacheLink &link;
    };

    class DevicePort : public QueuedResponsePort
    {
      public:
        DevicePort(const std::string &n, CXLCacheLink &l);

      protected:
        bool recvTimingReq(PacketPtr pkt) override;
        bool recvTimingSnoopResp(PacketPtr pkt) override;
        Tick recvAtomic(PacketPtr pkt) override;
        void recvFunctional(PacketPtr pkt) override;
        AddrRangeList getAddrRanges() const override;
        bool tryTiming(PacketPtr) override { return true; }

      private:
        CXLCacheLink &link;
    };

    // A packet's own header and payload delays are spent crossing the link.
    static Tick arrival(PacketPtr pkt, Tick latency);
    // A functional access (snoop: from the host side) through the link.
    void functional(PacketPtr pkt, bool snoop);

    const Tick request, response, snoop, snoopData, snoopArrival;
    // Lines snooped in the device, and when the snoop reaches it.
    std::unordered_map<Addr, Tick> snooped;
    BaseCache *cache;
    HostPort hostPort;
    DevicePort devicePort;
    ReqPacketQueue reqQueue;
    RespPacketQueue respQueue;
    SnoopRespPacketQueue snoopRespQueue;
};

} // namespace gem5

#endif // __DEVICES_CXL_CACHE_LINK_HH__
