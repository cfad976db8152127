#include "devices/cxl_pcie_nic.hh"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/logging.hh"
#include "cxlcore/devices/nic_bytes.hpp"
#include "mem/packet_access.hh"

namespace gem5
{

CXLPcieNic::CXLPcieNic(const Params &p)
    : DmaDevice(p), pioDelay(p.pio_latency), engineDelay(p.engine_latency),
      engines(p.engines), head(p.rings, 0), tail(p.rings, 0), stats(*this)
{
    fatal_if(p.engines < 1 || p.engines > 4096, "%s: engines = %d is out of "
             "range; allowed: 1 to 4096", name(), p.engines);
    fatal_if(p.rings < 1 || p.rings > 1024, "%s: rings = %d is out of "
             "range; allowed: 1 to 1024", name(), p.rings);
    fatal_if(p.descriptors_per_line < 1 ||
             p.descriptors_per_line > CXLNIC_MAX_PER_DESC,
             "%s: descriptors_per_line = %d is out of range; allowed: 1 to %d",
             name(), p.descriptors_per_line, CXLNIC_MAX_PER_DESC);
    fatal_if(p.completions_per_line < 1 ||
             p.completions_per_line > CXLNIC_MAX_PER_CQ,
             "%s: completions_per_line = %d is out of range; allowed: 1 to %d",
             name(), p.completions_per_line, CXLNIC_MAX_PER_CQ);
    fatal_if(p.ring_entries < 1 || p.ring_entries % p.descriptors_per_line ||
             p.ring_entries % p.completions_per_line,
             "%s: ring_entries = %d is not allowed; allowed: a multiple of "
             "descriptors_per_line and completions_per_line", name(),
             p.ring_entries);
    fatal_if(p.ring_base % CXLNIC_LINE, "%s: ring_base %#x is not allowed; "
             "allowed: a multiple of 64", name(), p.ring_base);
    fatal_if(p.array_base % 8 || p.array_words < 1 ||
             p.array_words > (1ull << 27), "%s: array_base %#x / array_words "
             "%d are not allowed; allowed: 8 B aligned, 1 to 2^27 words",
             name(), p.array_base, p.array_words);
    mem = std::make_unique<cxlcore::AtomicMemory>(
        p.array_base, p.array_words, 0, std::vector<uint64_t>(), false);
    // The CXL-NIC's ring layout (the same rings, reached by DMA).
    cxlcore::NicParams n;
    n.ring_entries = p.ring_entries;
    n.descriptors_per_line = p.descriptors_per_line;
    n.completions_per_line = p.completions_per_line;
    rings = cxlcore::makeRings(p.rings, n, p.ring_base);
    order = std::make_unique<cxlcore::AtomicOrdering>(
        p.rings, cxlcore::resultsRing(p.ring_entries), *mem,
        [this](cxlcore::AtomicSlot *s) { ready(s); });
}

AddrRangeList
CXLPcieNic::getAddrRanges() const
{
    return {RangeSize(params().pio_addr, params().rings * 8)};
}

Tick
CXLPcieNic::read(PacketPtr pkt)
{
    const uint32_t r = (pkt->getAddr() - params().pio_addr) / 8;
    pkt->setLE<uint64_t>(tail[r]);
    pkt->makeAtomicResponse();
    return pioDelay;
}

Tick
CXLPcieNic::write(PacketPtr pkt)
{
    const uint32_t r = (pkt->getAddr() - params().pio_addr) / 8;
    fatal_if(pkt->getSize() != 8, "%s: a doorbell write must be 8 B",
             name());
    tail[r] = std::max(tail[r], pkt->getLE<uint64_t>());
    ++stats.doorbells;
    pkt->makeAtomicResponse();
    issue();
    return pioDelay;
}

DrainState
CXLPcieNic::drain()
{
    return inFlight ? DrainState::Draining : DrainState::Drained;
}

uint64_t
CXLPcieNic::descAddr(uint32_t ring, uint64_t op) const
{
    const cxlcore::NicRing &r = rings[ring];
    return r.descLine(op) + (op % r.perDesc) * sizeof(cxlnic_desc);
}

uint64_t
CXLPcieNic::cqeAddr(uint32_t ring, uint64_t op) const
{
    const cxlcore::NicRing &r = rings[ring];
    return r.cqLine(op) + (op % r.perCq) * sizeof(cxlnic_cqe);
}

uint64_t
CXLPcieNic::wordAddr(const cxlcore::AtomicSlot &s) const
{
    return params().array_base + 8 * s.index;
}

CXLPcieNic::Op *
CXLPcieNic::newOp()
{
    if (freeOps.empty()) {
        ops.push_back(std::make_unique<Op>());
        Op *o = ops.back().get();
        o->done = std::make_unique<EventFunctionWrapper>(
            [this, o] { step(o); }, name() + ".dma");
        freeOps.push_back(o);
    }
    Op *o = freeOps.back();
    freeOps.pop_back();
    o->phase = Op::Descriptor;
    o->slot = cxlcore::AtomicSlot();
    return o;
}

void
CXLPcieNic::issue()
{
    // New descriptors, round robin over the rings, while an engine is free.
    const uint32_t n = head.size();
    for (uint32_t k = 0; k < n && inFlight < engines; ++k) {
        const uint32_t r = (rr + k) % n;
        while (head[r] < tail[r] && inFlight < engines) {
            Op *o = newOp();
            o->slot.ring = r;
            o->slot.op = head[r]++;
            o->slot.user = o;
            order->admit(&o->slot);
            ++inFlight;
            stats.maxInFlight = std::max<double>(stats.maxInFlight.value(),
                                                 inFlight);
            ++stats.dmas;
            dmaRead(descAddr(r, o->slot.op), sizeof(cxlnic_desc),
                    o->done.get(), o->buf.data(), engineDelay);
        }
    }
    rr = n ? (rr + 1) % n : 0;
}

void
CXLPcieNic::ready(cxlcore::AtomicSlot *s)
{
    Op *o = static_cast<Op *>(s->user);
    o->phase = Op::Operand;
    ++stats.dmas;
    dmaRead(wordAddr(*s), 8, o->done.get(), o->buf.data(), engineDelay);
}

void
CXLPcieNic::step(Op *o)
{
    cxlcore::AtomicSlot &s = o->slot;
    switch (o->phase) {
      case Op::Descriptor: {
        if (!cxlcore::decodeDescriptor(o->buf.data(), s.op, s.o)) {
            ++stats.ringErrors;  // executed as a FETCH of word 0
            warn_once("%s: ring %d operation %d: descriptor not visible or "
                      "bad code (counted in ringErrors)", name(), s.ring,
                      s.op);
        }
        order->arrive(&s);  // calls ready() once the word is free
        return;
      }
      case Op::Operand: {
        const uint64_t old = cxlcore::loadWord(o->buf.data());
        const uint64_t v = cxlcore::atomicResult(s.o.code, old, s.a, s.b);
        s.result = old;
        if (s.o.writes()) {
            o->phase = Op::Store;
            std::memcpy(o->buf.data(), &v, sizeof v);
            ++stats.dmas;
            dmaWrite(wordAddr(s), 8, o->done.get(), o->buf.data(), engineDelay);
            return;
        }
        [[fallthrough]];
      }
      case Op::Store: {
        // The word holds the new value: the next operation on it may go.
        order->finish(&s);
        o->phase = Op::Completion;
        const cxlnic_cqe e{s.op + 1, s.result};
        std::memcpy(o->buf.data(), &e, sizeof e);
        ++stats.dmas;
        dmaWrite(cqeAddr(s.ring, s.op), sizeof e, o->done.get(), o->buf.data(),
                 engineDelay);
        return;
      }
      case Op::Completion:
        --inFlight;
        ++stats.ops;
        freeOps.push_back(o);
        issue();
        return;
    }
}

CXLPcieNic::NicStats::NicStats(CXLPcieNic &n)
    : statistics::Group(&n),
      ADD_STAT(ops, statistics::units::Count::get(),
               "Atomic operations completed"),
      ADD_STAT(doorbells, statistics::units::Count::get(),
               "Doorbell writes"),
      ADD_STAT(dmas, statistics::units::Count::get(), "DMAs issued"),
      ADD_STAT(ringErrors, statistics::units::Count::get(),
               "Descriptors not visible when read (a guest ordering bug)"),
      ADD_STAT(maxInFlight, statistics::units::Count::get(),
               "Most operations in flight at once")
{
}

} // namespace gem5
