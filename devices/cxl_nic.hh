// gem5 SimObject of a CXL-NIC's atomic engine: the SimCXL core's CxlNic,
// whose line accesses become gem5 packets to the NIC's device cache (a gem5
// Cache on the memory bus, so gem5's snooping keeps it coherent with the
// cores' caches) and whose lines hold the guest's bytes in the format of
// cxlcore/devices/nic_abi.h. The core decides when to poll, fetch, execute
// and complete; this object only translates accesses and bytes.
#ifndef __DEVICES_CXL_NIC_HH__
#define __DEVICES_CXL_NIC_HH__

#include <array>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/statistics.hh"
#include "cxlcore/devices/cxl_nic.hpp"
#include "devices/cxl_event_host.hh"
#include "mem/port.hh"
#include "params/CXLNic.hh"
#include "sim/clocked_object.hh"

namespace gem5
{

class System;

class CXLNic : public ClockedObject,
               public cxlcore::LineAccess,
               public cxlcore::NicData
{
  public:
    PARAMS(CXLNic);
    CXLNic(const Params &p);

    Port &getPort(const std::string &name, PortID idx = InvalidPortID) override;
    void init() override;
    void startup() override;
    DrainState drain() override;

    // cxlcore::LineAccess: one access of the core's engine as a packet.
    void access(cxlcore::Txn *x) override;

    // cxlcore::NicData: the guest's bytes.
    bool descriptor(cxlcore::AtomicSlot &s, const cxlcore::Txn &x) override;
    uint64_t tail(uint32_t ring, const cxlcore::Txn &x) override;
    void operand(cxlcore::Txn &a, const cxlcore::AtomicSlot &s) override;
    uint64_t perform(cxlcore::AtomicSlot &s, const cxlcore::Txn &x) override;
    void completions(cxlcore::Txn &a, uint32_t ring,
                     const std::vector<cxlcore::AtomicSlot *> &ops) override;
    void completed(uint32_t ring,
                   const std::vector<cxlcore::AtomicSlot *> &ops,
                   const cxlcore::Txn &x) override;

  private:
    class NicPort : public RequestPort
    {
      public:
        NicPort(const std::string &n, CXLNic &o) : RequestPort(n), nic(o) {}

      protected:
        bool recvTimingResp(PacketPtr pkt) override
        {
            return nic.recvResp(pkt);
        }
        void recvReqRetry() override { nic.retry(); }

      private:
        CXLNic &nic;
    };

    // What an access of the engine carries, from issue to done.
    struct Access
    {
        enum Kind : uint8_t { LineRead, Fetch, Atomic, LineWrite } kind =
            LineRead;
        uint64_t word = 0;  // operand: its address
        uint8_t code = 0;
        uint64_t a = 0, b = 0;
        std::array<uint8_t, cxlcore::kLineBytes> bytes{};  // read: data; write: the line
    };

    struct TxnState : public Packet::SenderState
    {
        explicit TxnState(cxlcore::Txn *t) : txn(t) {}
        cxlcore::Txn *txn;
    };

    bool recvResp(PacketPtr pkt);
    void retry();
    void send(PacketPtr pkt);
    const Access &accessOf(const cxlcore::Txn &x) const;

    NicPort port;
    System *system;
    RequestorID requestor = 0;
    CXLEventHost host;
    cxlcore::NicParams params_;
    cxlcore::TxnPool pool;
    std::unique_ptr<cxlcore::AtomicMemory> mem;
    std::vector<cxlcore::NicRing> rings;
    uint64_t storeSeq = 0;
    std::unique_ptr<cxlcore::CxlNic> nic;
    std::unordered_map<const cxlcore::Txn *, Access> accesses;
    // The access whose completion the core is handling.
    Access done;
    const cxlcore::Txn *doneTxn = nullptr;
    // The NIC is the only writer of completion lines: what it last wrote
    // (or is writing) into each, per ring.
    std::vector<std::vector<std::array<uint8_t, cxlcore::kLineBytes>>> cq;
    std::deque<PacketPtr> blocked;
    bool waitingRetry = false;

    struct NicStats : public statistics::Group
    {
        NicStats(CXLNic &n);
        statistics::Value ops, polls, doorbellChanges, descriptors,
            ringErrors, maxInFlight;
        statistics::Value executingTicks;
    } stats;
};

} // namespace gem5

#endif // __DEVICES_CXL_NIC_HH__
