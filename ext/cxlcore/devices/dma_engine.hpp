// The accelerator's PCIe-style DMA engine over CXL.io: a transfer (DmaJob)
// is rung in by the host's driver (a doorbell write), fetches its descriptor,
// reads host memory in max_read_request pieces with bounded read tags, writes
// a completion record and optionally an MSI-X interrupt. The engine's steps
// are Accelerator members (devices/dma_engine.cpp); the host side is the
// CXL.io completer (coherence/io_completer.cpp).
#pragma once

#include <functional>

#include "cxlcore/kernel/sim.hpp"

namespace cxlcore {

// One DMA read of host memory into the device, with the time of each phase.
struct DmaJob {
    uint64_t addr = 0, bytes = 0;
    uint16_t dev = 0;
    Tick start = 0, doorbellAt = 0, descriptorAt = 0, dataAt = 0, completionAt = 0, noticedAt = 0;
    bool haveDescriptor = false;
    uint64_t received = 0, nextRead = 0;
    uint32_t readsInFlight = 0;
    uint64_t cachedLines = 0, firstValue = 0;  // lines a cache supplied; the first line's version
    std::function<void(DmaJob*)> onDone;
    // A read-modify-write transfer (a PCIe NIC's atomic): the descriptor comes
    // from descAddr (0: addr); holdData, asked when the descriptor has arrived,
    // may hold the data reads until Accelerator::dmaRelease; onData runs when
    // the data is in and may set computeTicks; then writeBytes are written
    // back to addr (posted, ahead of the completion record).
    uint64_t descAddr = 0;
    uint32_t writeBytes = 0;
    Tick computeTicks = 0;
    std::function<bool(DmaJob*)> holdData;
    std::function<void(DmaJob*)> onData;
};

}  // namespace cxlcore
