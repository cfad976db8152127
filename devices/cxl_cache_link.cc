#include "devices/cxl_cache_link.hh"

#include <algorithm>
#include <limits>

#include "base/logging.hh"

namespace gem5
{

CXLCacheLink::CXLCacheLink(const Params &p)
    : ClockedObject(p), request(p.request_latency),
      response(p.response_latency), snoop(p.snoop_latency),
      snoopData(p.snoop_data_latency),
      snoopArrival(p.snoop_arrival_latency), cache(p.device_cache),
      hostPort(name() + ".mem_side_port", *this),
      devicePort(name() + ".cpu_side_port", *this),
      reqQueue(*this, hostPort), respQueue(*this, devicePort),
      snoopRespQueue(*this, hostPort)
{
    fatal_if(snoop > std::numeric_limits<uint32_t>::max(),
             "%s: snoop_latency %d ps is out of range; allowed: up to "
             "4294967295 ps", name(), snoop);
}

Port &
CXLCacheLink::getPort(const std::string &n, PortID idx)
{
    if (n == "mem_side_port")
        return hostPort;
    if (n == "cpu_side_port")
        return devicePort;
    return ClockedObject::getPort(n, idx);
}

void
CXLCacheLink::init()
{
    fatal_if(!hostPort.isConnected() || !devicePort.isConnected(),
             "%s: both ports must be connected", name());
    devicePort.sendRangeChange();
}

Tick
CXLCacheLink::arrival(PacketPtr pkt, Tick latency)
{
    const Tick own = pkt->headerDelay + pkt->payloadDelay;
    pkt->headerDelay = pkt->payloadDelay = 0;
    return curTick() + own + latency;
}

void
CXLCacheLink::functional(PacketPtr pkt, bool snoop)
{
    // Packets queued on either side hold the newest data.
    if (devicePort.trySatisfyFunctional(pkt) ||
        hostPort.trySatisfyFunctional(pkt))
        pkt->makeResponse();
    else if (snoop)
        devicePort.sendFunctionalSnoop(pkt);
    else
        hostPort.sendFunctional(pkt);
}

CXLCacheLink::HostPort::HostPort(const std::string &n, CXLCacheLink &l)
    : QueuedRequestPort(n, l.reqQueue, l.snoopRespQueue), link(l)
{
}

bool
CXLCacheLink::HostPort::recvTimingResp(PacketPtr pkt)
{
    link.devicePort.schedTimingResp(pkt, arrival(pkt, link.response));
    return true;
}

void
CXLCacheLink::HostPort::recvTimingSnoopReq(PacketPtr pkt)
{
    const bool held = link.cache->inCache(pkt->getAddr(), pkt->isSecure());
    const bool responding = pkt->cacheResponding();
    link.devicePort.sendTimingSnoopReq(pkt);
    if (held && link.snoopArrival)
        link.snooped[pkt->getBlockAddr(link.cache->getBlockSize())] =
            curTick() + link.snoopArrival;
    // A copy the device drops or keeps without answering with data: the
    // request goes on once the device's answer is back.
    if (held && pkt->cacheResponding() == responding)
        pkt->snoopDelay = std::max<uint32_t>(pkt->snoopDelay, link.snoop);
}

Tick
CXLCacheLink::HostPort::recvAtomicSnoop(PacketPtr pkt)
{
    return link.snoop + link.devicePort.sendAtomicSnoop(pkt);
}

void
CXLCacheLink::HostPort::recvFunctionalSnoop(PacketPtr pkt)
{
    link.functional(pkt, true);
}

void
CXLCacheLink::HostPort::recvRangeChange()
{
    link.devicePort.sendRangeChange();
}

CXLCacheLink::DevicePort::DevicePort(const std::string &n, CXLCacheLink &l)
    : QueuedResponsePort(n, l.respQueue), link(l)
{
}

bool
CXLCacheLink::DevicePort::recvTimingReq(PacketPtr pkt)
{
    Tick leave = curTick();
    auto it = link.cache ? link.snooped.find(pkt->getBlockAddr(
                               link.cache->getBlockSize()))
                         : link.snooped.end();
    if (it != link.snooped.end()) {
        leave = std::max(leave, it->second);
        link.snooped.erase(it);
    }
    link.hostPort.schedTimingReq(pkt, arrival(pkt, link.request) +
                                 (leave - curTick()));
    return true;
}

bool
CXLCacheLink::DevicePort::recvTimingSnoopResp(PacketPtr pkt)
{
    link.hostPort.schedTimingSnoopResp(pkt, arrival(pkt, link.snoopData));
    return true;
}

Tick
CXLCacheLink::DevicePort::recvAtomic(PacketPtr pkt)
{
    return link.request + link.response + link.hostPort.sendAtomic(pkt);
}

void
CXLCacheLink::DevicePort::recvFunctional(PacketPtr pkt)
{
    link.functional(pkt, false);
}

AddrRangeList
CXLCacheLink::DevicePort::getAddrRanges() const
{
    return link.hostPort.getAddrRanges();
}

} // namespace gem5
