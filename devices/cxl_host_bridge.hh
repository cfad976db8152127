// gem5 SimObject of a CXL host bridge / root complex: the memory bus sees one
// CFMWS-style host window (this AbstractMemory's range); the core's
// HostBridge decodes it (HDM interleave over its root ports), times the
// host side and its queues, and sends each request down the link of the
// root port's CXLType3Expander. The wrapper translates packets to
// transactions and back and relays retries both ways; every timing decision
// is the core's.
#ifndef __DEVICES_CXL_HOST_BRIDGE_HH__
#define __DEVICES_CXL_HOST_BRIDGE_HH__

#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/statistics.hh"
#include "devices/cxl_core_stats.hh"
#include "devices/cxl_event_host.hh"
#include "devices/cxl_pci_function.hh"
#include "devices/cxl_port_target.hh"
#include "cxlcore/fabric/host_bridge.hpp"
#include "cxlcore/kernel/stats.hpp"
#include "cxlcore/kernel/trace.hpp"
#include "mem/abstract_mem.hh"
#include "mem/port.hh"
#include "params/CXLHostBridge.hh"

namespace gem5
{

class CXLSwitch;

class CXLHostBridge : public memory::AbstractMemory
{
  private:
    class CpuPort : public ResponsePort
    {
      public:
        CpuPort(const std::string &name, CXLHostBridge &o)
            : ResponsePort(name), owner(o) {}

      protected:
        Tick recvAtomic(PacketPtr pkt) override;
        void recvFunctional(PacketPtr pkt) override;
        bool recvTimingReq(PacketPtr pkt) override;
        void recvRespRetry() override;
        AddrRangeList getAddrRanges() const override;

      private:
        CXLHostBridge &owner;
    };

    // Receives the core's responses and retries.
    class Upstream : public cxlcore::Requester
    {
      public:
        explicit Upstream(CXLHostBridge &o) : owner(o) {}
        bool tryResp(cxlcore::Txn *t) override;
        void retryReq() override;

      private:
        CXLHostBridge &owner;
    };

    struct InFlight
    {
        PacketPtr pkt;
        uint32_t port;  // root port the HDM decoder chose, or kUnrouted
    };
    static constexpr uint32_t kUnrouted = ~0u;

    CXLEventHost host;
    CpuPort port;
    Upstream upstream;
    cxlcore::TxnPool pool;
    // The core's progress watchdog over this bridge's requests, checked by
    // an event that runs only while some are in flight.
    std::unique_ptr<cxlcore::Watchdog> watchdog;
    EventFunctionWrapper watchdogEvent;
    Tick watchdogEvery = 0;
    std::unique_ptr<cxlcore::HostBridge> bridge;
    std::vector<CXLPortTarget *> rootPorts;
    uint8_t hostIndex = 0;  // in the fabric: switches route its responses by it
    double bridgeLatencyNs = 0;  // host side, both directions (atomic mode)

    std::unordered_map<uint64_t, InFlight> inflight;  // by transaction id
    std::deque<std::pair<Tick, PacketPtr>> responses;  // ready time, packet
    EventFunctionWrapper sendEvent;
    bool retryReq = false, retryResp = false;
    std::unique_ptr<Packet> pendingDelete;  // a packet we sink, freed later
    // The core offered a response while the port was blocked: it holds it
    // (and its tracker entry) until bridge->retryResp().
    bool coreRespWaiting = false;

    // Sampled requests' paths (trace_file): written as the core's trace rows
    // (kernel/trace.hpp) by writeTrace and at exit.
    std::unique_ptr<cxlcore::TraceSink> trace;
    std::string traceFile;

    // The root port of a window offset, by the committed decoders when the
    // bridge routes by them (false: none covers it) or its own interleave.
    bool portOf(Addr offset, uint32_t &rp) const;
    // The data side of an access: an unrouted read answers all ones, an
    // unrouted write is dropped, as the core's bridge answers them.
    void accessData(PacketPtr pkt, bool routed);

    // CXL.io (routeByDecoders): the routes follow what software committed.
    CXLHostBridgeRegs *regs = nullptr;
    std::vector<CXLPciFunction *> endpoints;
    std::vector<uint32_t> firmwareTargets;
    uint32_t interleaveBytes = 256;
    void commitAsFirmware();
    void rebuildRoutes();
    // The switch below root port `rootPort` routes by the decoders committed
    // at its upstream port (`usp`) and the devices below it; `mine` are the
    // bridge's, which place each device in its region.
    void routeSwitch(CXLSwitch &s, uint32_t rootPort,
                     const std::vector<cxlcore::cxlio::CommittedDecoder> &mine,
                     const std::vector<cxlcore::cxlio::CommittedDecoder> &usp);
    void sendResponses();
    void armWatchdog();
    void checkProgress();
    void respond(cxlcore::Txn *t);
    bool handleTimingReq(PacketPtr pkt);
    // No packet held and no core event pending: safe to checkpoint.
    bool idle() const;
    void checkDrained();

    struct BridgeStats : public statistics::Group
    {
        BridgeStats(CXLHostBridge &b);
        void regStats() override;
        void resetStats() override;
        CXLHostBridge &br;
        statistics::Scalar readReqs, writeReqs, retries;
        // Atomic-mode accesses (atomic cores, boots), which the timing
        // counters and the core's do not see: all, and those no decoder routed.
        statistics::Scalar atomicAccesses, atomicUnrouted;
        statistics::Scalar readBytes, writeBytes;
        statistics::Formula readBandwidth, writeBandwidth;
        // Latencies and stages are of completed reads: means divide by these.
        statistics::Scalar readsCompleted, totalReadLatency;
        statistics::Formula avgReadLatency;
        statistics::Histogram readLatency;
        statistics::Vector stageTicks;
        statistics::Formula avgStage;
        statistics::Vector devLoad;
        // Read latency tails, named as the standalone engine's results.
        cxlcore::LogHistogram reads;
        statistics::Value read_latency_p50_ns, read_latency_p90_ns,
            read_latency_p99_ns, read_latency_p999_ns;
        // The core bridge's counters as the standalone engine names them
        // (refused, unrouted_reads, ...).
        CXLCoreStats core;
    } stats;

  public:
    PARAMS(CXLHostBridge);
    CXLHostBridge(const Params &p);
    // From then on, route by the HDM decoders committed at `regs` (this
    // bridge's component registers) and at `endpoints` (the Type-3 function
    // below each root port, or the upstream port's of the CXLSwitch there,
    // whose downstream ports lead to `switchEndpoints`, switch by switch);
    // `commit` first commits one decoder over the window as firmware does
    // (root ports `targets`, all if empty; interleave `granularity` bytes,
    // the bridge's if 0). Called from CXLHostBridgeRegs::init().
    void routeByDecoders(CXLHostBridgeRegs *regs,
                         const std::vector<CXLPciFunction *> &endpoints,
                         bool commit, std::vector<uint32_t> targets,
                         uint32_t granularity,
                         const std::vector<CXLPciFunction *> &switchEndpoints);

    Port &getPort(const std::string &if_name, PortID idx = InvalidPortID) override;
    void init() override;
    DrainState drain() override;
    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;
    // The trace so far as CSV rows at trace_file (nothing without one); the
    // rows of the reads counted in the stats carry stream "<name>.read".
    void writeTrace();
};

} // namespace gem5

#endif // __DEVICES_CXL_HOST_BRIDGE_HH__
