// gem5 DMA device of the CXL-NIC's PCIe baseline: MMIO doorbells, then four
// DMAs per atomic operation (descriptor, operand read, operand write,
// completion), `engines` operations in flight, and the SimCXL core's
// AtomicOrdering for operations on one word. Its latencies (MMIO, engine
// step) are the core's DMA parameters; the DMAs' own path is gem5's.
#ifndef __DEVICES_CXL_PCIE_NIC_HH__
#define __DEVICES_CXL_PCIE_NIC_HH__

#include <array>
#include <memory>
#include <vector>

#include "base/statistics.hh"
#include "cxlcore/devices/cxl_nic.hpp"
#include "dev/dma_device.hh"
#include "params/CXLPcieNic.hh"
#include "sim/eventq.hh"

namespace gem5
{

class CXLPcieNic : public DmaDevice
{
  public:
    PARAMS(CXLPcieNic);
    CXLPcieNic(const Params &p);

    AddrRangeList getAddrRanges() const override;
    Tick read(PacketPtr pkt) override;
    Tick write(PacketPtr pkt) override;
    DrainState drain() override;

  private:
    // One operation: its ordering slot, where it is, and its DMA buffer.
    struct Op
    {
        enum Phase : uint8_t { Descriptor, Operand, Store, Completion } phase =
            Descriptor;
        cxlcore::AtomicSlot slot;
        std::array<uint8_t, 32> buf{};
        std::unique_ptr<EventFunctionWrapper> done;  // each DMA's completion
    };

    // Operations are recycled: an op's event may still be running when it
    // completes, so it is reused, never freed, while the device lives.
    Op *newOp();
    std::vector<std::unique_ptr<Op>> ops;
    std::vector<Op *> freeOps;

    void issue();
    void step(Op *o);
    void ready(cxlcore::AtomicSlot *s);
    uint64_t descAddr(uint32_t ring, uint64_t op) const;
    uint64_t cqeAddr(uint32_t ring, uint64_t op) const;
    uint64_t wordAddr(const cxlcore::AtomicSlot &s) const;

    const Tick pioDelay, engineDelay;
    const uint32_t engines;
    std::unique_ptr<cxlcore::AtomicMemory> mem;
    std::unique_ptr<cxlcore::AtomicOrdering> order;
    std::vector<cxlcore::NicRing> rings;
    std::vector<uint64_t> head, tail;
    uint32_t inFlight = 0, rr = 0;

    struct NicStats : public statistics::Group
    {
        NicStats(CXLPcieNic &n);
        statistics::Scalar ops, doorbells, dmas, ringErrors, maxInFlight;
    } stats;
};

} // namespace gem5

#endif // __DEVICES_CXL_PCIE_NIC_HH__
