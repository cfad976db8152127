// The accelerator's PCIe-style DMA engine over CXL.io: a transfer (DmaJob)
// is rung in by the host's driver (a doorbell write), fetches its descriptor,
// reads host memory in max_read_request pieces with bounded read tags, writes
// a completion record and optionally an MSI-X interrupt. The engine's steps
// are Accelerator members (devices/dma_engine.cpp); the host side is the
// CXL.io completer (coherence/io_completer.cpp).
#pragma once

#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

struct DmaJob;

// Who rang a DMA transfer in: told when the driver notices it is done, and,
// for a read-modify-write transfer (a PCIe NIC's atomic), asked whether to
// hold its data reads once the descriptor is in (until
// Accelerator::dmaRelease) and told when its data is in (it may set
// computeTicks). One per workload; transfers are told apart by DmaJob::ctx.
class DmaClient {
  public:
    virtual void dmaDone(DmaJob*) {}
    virtual bool holdData(DmaJob*) { return false; }
    virtual void dataIn(DmaJob*) {}

  protected:
    ~DmaClient() = default;
};

// One DMA read of host memory into the device, with the time of each phase.
struct DmaJob {
    uint64_t addr = 0, bytes = 0;
    uint16_t dev = 0;
    Tick start = 0, doorbellAt = 0, descriptorAt = 0, dataAt = 0, completionAt = 0, noticedAt = 0;
    bool haveDescriptor = false;
    uint64_t received = 0, nextRead = 0;
    uint32_t readsInFlight = 0;
    uint64_t cachedLines = 0, firstValue = 0;  // lines a cache supplied; the first line's version
    DmaClient* client = nullptr;
    void* ctx = nullptr;
    // A read-modify-write transfer (a PCIe NIC's atomic): the descriptor comes
    // from descAddr (0: addr); after the data and computeTicks, writeBytes are
    // written back to addr (posted, ahead of the completion record).
    uint64_t descAddr = 0;
    uint32_t writeBytes = 0;
    Tick computeTicks = 0;
};

}  // namespace cxlcore
