#include "devices/cxl_pci_function.hh"

#include <algorithm>
#include <string>

#include "base/logging.hh"
#include "base/trace.hh"
#include "debug/CXLIo.hh"
#include "cxlcore/config/params.hpp"
#include "cxlcore/kernel/sim.hpp"
#include "devices/cxl_host_bridge.hh"
#include "devices/cxl_type3_expander.hh"
#include "mem/packet_access.hh"
#include "sim/serialize.hh"

namespace gem5
{

namespace cxlio = cxlcore::cxlio;

namespace
{

std::unique_ptr<cxlio::Function>
makeFunction(const CXLPciFunctionParams &p, const std::string &obj)
{
    fatal_if(!p.expander, "%s: bad parameter: expander is unset; allowed: "
             "the CXLType3Expander below (type3) or below the port", obj);
    const cxlcore::LinkParams &link = p.expander->link().params();
    try {
        if (p.kind == "type3")
            return std::make_unique<cxlio::Type3Function>(
                p.expander->device().params(),
                p.expander->device().media().params(), link, p.capacity,
                p.lsa_bytes, p.decoders);
        const std::pair<const char *, cxlio::PortKind> kinds[] = {
            {"root_port", cxlio::PortKind::Root},
            {"switch_upstream", cxlio::PortKind::SwitchUpstream},
            {"switch_downstream", cxlio::PortKind::SwitchDownstream}};
        for (const auto &k : kinds)
            if (p.kind == k.first)
                return std::make_unique<cxlio::PortFunction>(
                    k.second, p.port_number, link, p.decoders, p.targets);
    } catch (const cxlcore::ConfigError &e) {
        fatal("%s: bad parameter: %s", obj, e.what());
    }
    fatal("%s: bad parameter: kind = '%s' is not allowed; allowed: type3, "
          "root_port, switch_upstream, switch_downstream", obj, p.kind);
}

bool
wellFormed(uint32_t off, unsigned size)
{
    return (size == 1 || size == 2 || size == 4) && off % size == 0 &&
        off + size <= 4096;
}

// Sizes above 8 bytes are malformed for every register here: all ones.
void
answer(PacketPtr pkt, uint64_t value)
{
    if (pkt->getSize() <= 8) {
        pkt->setUintX(value, ByteOrder::little);
    } else {
        uint8_t *d = pkt->getPtr<uint8_t>();
        std::fill(d, d + pkt->getSize(), 0xFF);
    }
    pkt->makeAtomicResponse();
}

// The core's registers as serialize() saved them (the section's cxl_state).
template <class Regs>
void
restoreState(Regs &regs, CheckpointIn &cp, const std::string &who)
{
    std::vector<uint8_t> state;
    arrayParamIn(cp, "cxl_state", state);
    try {
        cxlio::loadState(regs, state, who);
    } catch (const cxlcore::ConfigError &e) {
        fatal("%s: checkpoint: %s", who, e.what());
    }
}

} // anonymous namespace

CXLPciFunction::CXLPciFunction(const Params &p)
    : PciDevice(p), fn(makeFunction(p, name())),
      stats(this, [this] {
          cxlio::IoStats s = fn->stats();
          s.badConfigAccesses += malformed;
          return s;
      }, true)
{
    auto *bar = dynamic_cast<PciMemBar *>(BARs[0]);
    fatal_if(!bar || !dynamic_cast<PciMemUpperBar *>(BARs[1]),
             "%s: bad parameter: BAR0/BAR1 must be a 64-bit memory BAR "
             "(PciMemBar, PciMemUpperBar)", name());
    fatal_if(bar->size() != fn->barBytes(),
             "%s: bad parameter: BAR0.size = %#x; allowed: %#x (the "
             "function's register blocks)", name(), bar->size(),
             fn->barBytes());
}

uint64_t
CXLPciFunction::configRead(uint32_t off, unsigned size)
{
    if (!wellFormed(off, size)) {
        ++malformed;
        return ~uint64_t(0) >> (64 - 8 * std::min(size, 8u));
    }
    return fn->configRead(off, size);
}

void
CXLPciFunction::configWrite(uint32_t off, unsigned size, uint64_t value)
{
    if (!wellFormed(off, size)) {
        ++malformed;
        return;
    }
    fn->configWrite(off, size, uint32_t(value));
    // The BAR or the Command register's memory-space bit moved.
    if (off < 0x18 && off + size > 0x04)
        followBar();
}

void
CXLPciFunction::followBar()
{
    const Addr want = fn->barAddress();
    if (BARs[0]->addr() != hostInterface.memAddr(want)) {
        BARs[0]->write(hostInterface, uint32_t(want));
        BARs[1]->write(hostInterface, uint32_t(want >> 32));
    }
    pioPort.sendRangeChange();
}

void
CXLPciFunction::serialize(CheckpointOut &cp) const
{
    PciDevice::serialize(cp);
    arrayParamOut(cp, "cxl_state", cxlio::saveState(*fn));
}

void
CXLPciFunction::unserialize(CheckpointIn &cp)
{
    PciDevice::unserialize(cp);
    restoreState(*fn, cp, name());
    followBar();
}

Tick
CXLPciFunction::readConfig(PacketPtr pkt)
{
    answer(pkt, configRead(pkt->getAddr() & 0xFF, pkt->getSize()));
    return configDelay;
}

Tick
CXLPciFunction::writeConfig(PacketPtr pkt)
{
    configWrite(pkt->getAddr() & 0xFF, pkt->getSize(),
                pkt->getUintX(ByteOrder::little));
    pkt->makeAtomicResponse();
    return configDelay;
}

AddrRangeList
CXLPciFunction::getAddrRanges() const
{
    AddrRangeList ranges;
    // Command bit 1: memory space enable, the core's register.
    if (fn->configRead(0x04, 2) & 0x2)
        ranges.push_back(BARs[0]->range());
    return ranges;
}

Tick
CXLPciFunction::read(PacketPtr pkt)
{
    int bar;
    Addr off;
    if (!getBAR(pkt->getAddr(), bar, off) || bar != 0)
        panic("%s: read of %#x outside BAR 0", name(), pkt->getAddr());
    const unsigned size = pkt->getSize();
    const uint64_t v = size <= 8 ? fn->mmioRead(off, size) : ~uint64_t(0);
    DPRINTF(CXLIo, "read  %#06x/%u = %#x\n", off, size, v);
    answer(pkt, v);
    return pioDelay;
}

Tick
CXLPciFunction::write(PacketPtr pkt)
{
    int bar;
    Addr off;
    if (!getBAR(pkt->getAddr(), bar, off) || bar != 0)
        panic("%s: write of %#x outside BAR 0", name(), pkt->getAddr());
    if (pkt->getSize() <= 8) {
        DPRINTF(CXLIo, "write %#06x/%u = %#x\n", off, pkt->getSize(),
                pkt->getUintX(ByteOrder::little));
        fn->mmioWrite(off, pkt->getSize(), pkt->getUintX(ByteOrder::little));
    }
    else
        ++malformed;
    pkt->makeAtomicResponse();
    return pioDelay;
}

CXLIoStats::CXLIoStats(statistics::Group *parent,
                       std::function<cxlio::IoStats()> r, bool whole)
    : statistics::Group(parent), read(std::move(r)),
      ADD_STAT(configReads, statistics::units::Count::get(),
               "configuration reads (CF8/CFC and ECAM)"),
      ADD_STAT(configWrites, statistics::units::Count::get(),
               "configuration writes"),
      ADD_STAT(badConfigAccesses, statistics::units::Count::get(),
               "malformed configuration accesses (size, alignment, range)"),
      ADD_STAT(mmioReads, statistics::units::Count::get(),
               "register reads (BAR 0; a host bridge's CHBS block)"),
      ADD_STAT(mmioWrites, statistics::units::Count::get(),
               "register writes (BAR 0; a host bridge's CHBS block)"),
      ADD_STAT(badMmioAccesses, statistics::units::Count::get(),
               "register accesses outside any register"),
      ADD_STAT(lockedWrites, statistics::units::Count::get(),
               "writes to committed or locked HDM decoders, dropped"),
      ADD_STAT(commits, statistics::units::Count::get(),
               "HDM decoders committed"),
      ADD_STAT(commitErrors, statistics::units::Count::get(),
               "HDM decoder commits refused (Error Not Committed)"),
      ADD_STAT(mailboxCommands, statistics::units::Count::get(),
               "mailbox commands"),
      ADD_STAT(mailboxFailures, statistics::units::Count::get(),
               "mailbox commands returning a status other than Success"),
      ADD_STAT(doeRequests, statistics::units::Count::get(),
               "DOE requests (CDAT reads)"),
      ADD_STAT(doeErrors, statistics::units::Count::get(),
               "malformed or unknown DOE requests")
{
    if (whole)
        return;
    for (statistics::Scalar *s : {&configReads, &configWrites,
                                  &badConfigAccesses, &mailboxCommands,
                                  &mailboxFailures, &doeRequests, &doeErrors})
        s->flags(statistics::nozero);
}

void
CXLIoStats::preDumpStats()
{
    statistics::Group::preDumpStats();
    const cxlio::IoStats s = read();
    configReads = s.configReads;
    configWrites = s.configWrites;
    badConfigAccesses = s.badConfigAccesses;
    mmioReads = s.mmioReads;
    mmioWrites = s.mmioWrites;
    badMmioAccesses = s.badMmioAccesses;
    lockedWrites = s.lockedWrites;
    commits = s.commits;
    commitErrors = s.commitErrors;
    mailboxCommands = s.mailboxCommands;
    mailboxFailures = s.mailboxFailures;
    doeRequests = s.doeRequests;
    doeErrors = s.doeErrors;
}

CXLEcam::CXLEcam(const Params &p)
    : PioDevice(p), functions(p.functions), base(p.base),
      firstBus(p.first_bus), lastBus(p.last_bus), latency(p.pio_latency),
      stats(*this)
{
    fatal_if(base % (1 << 20) || firstBus > lastBus || lastBus > 255,
             "%s: bad parameter: base = %#x, first_bus = %u, last_bus = %u; "
             "allowed: base a multiple of 1 MiB, first_bus <= last_bus <= "
             "255", name(), base, firstBus, lastBus);
    for (const CXLPciFunction *f : functions) {
        const unsigned bus = f->busAddr().bus;
        fatal_if(bus < firstBus || bus > lastBus,
                 "%s: bad parameter: functions: %s is on bus %u; allowed: "
                 "buses %u to %u", name(), f->name(), bus, firstBus, lastBus);
    }
}

AddrRangeList
CXLEcam::getAddrRanges() const
{
    return {RangeSize(base + (Addr(firstBus) << 20),
                      Addr(lastBus - firstBus + 1) << 20)};
}

CXLPciFunction *
CXLEcam::find(Addr addr, uint32_t &off) const
{
    const Addr rel = addr - base;
    const PciBusAddr at(rel >> 20 & 0xFF, rel >> 15 & 0x1F, rel >> 12 & 0x7);
    off = rel & 0xFFF;
    // PciBusAddr has no operator== in gem5 v24.
    for (CXLPciFunction *f : functions) {
        const PciBusAddr &b = f->busAddr();
        if (b.bus == at.bus && b.dev == at.dev && b.func == at.func)
            return f;
    }
    return nullptr;
}

Tick
CXLEcam::read(PacketPtr pkt)
{
    ++stats.reads;
    uint32_t off;
    CXLPciFunction *f = find(pkt->getAddr(), off);
    if (!f)
        ++stats.unclaimed;
    answer(pkt, f ? f->configRead(off, pkt->getSize()) : ~uint64_t(0));
    return latency;
}

Tick
CXLEcam::write(PacketPtr pkt)
{
    ++stats.writes;
    uint32_t off;
    if (CXLPciFunction *f = find(pkt->getAddr(), off))
        f->configWrite(off, pkt->getSize(), pkt->getSize() <= 8
                       ? pkt->getUintX(ByteOrder::little) : 0);
    else
        ++stats.unclaimed;
    pkt->makeAtomicResponse();
    return latency;
}

CXLEcam::EcamStats::EcamStats(CXLEcam &e)
    : statistics::Group(&e),
      ADD_STAT(reads, statistics::units::Count::get(), "ECAM reads"),
      ADD_STAT(writes, statistics::units::Count::get(), "ECAM writes"),
      ADD_STAT(unclaimed, statistics::units::Count::get(),
               "ECAM accesses no function answered (reads all ones)")
{
}


CXLHostBridgeRegs::CXLHostBridgeRegs(const Params &p)
    : PioDevice(p), base(p.base), latency(p.pio_latency),
      stats(this, [this] { return *regs->stats; }, false)
{
    fatal_if(base % cxlio::kComponentBytes,
             "%s: bad parameter: base = %#x; allowed: a multiple of 64 KiB "
             "(the CEDT CHBS range)", name(), base);
    try {
        regs = std::make_unique<cxlio::ComponentRegs>(
            cxlio::ComponentKind::HostBridge, p.decoders, p.targets, 0,
            cxlcore::LinkParams{});
    } catch (const cxlcore::ConfigError &e) {
        fatal("%s: bad parameter: %s", name(), e.what());
    }
}

void
CXLHostBridgeRegs::init()
{
    PioDevice::init();
    const Params &p = params();
    if (p.bridge)
        p.bridge->routeByDecoders(this, p.endpoints, p.firmware_commit,
                                  p.firmware_targets, p.firmware_granularity,
                                  p.switch_endpoints);
    else
        fatal_if(p.firmware_commit || !p.endpoints.empty() ||
                     !p.switch_endpoints.empty(),
                 "%s: bad parameter: endpoints, switch_endpoints and "
                 "firmware_commit need "
                 "bridge (the CXLHostBridge these decoders route)", name());
}

void
CXLHostBridgeRegs::serialize(CheckpointOut &cp) const
{
    arrayParamOut(cp, "cxl_state", cxlio::saveState(*regs));
}

void
CXLHostBridgeRegs::unserialize(CheckpointIn &cp)
{
    // Tells the bridge, which rebuilds its routes from what is committed.
    restoreState(*regs, cp, name());
}

AddrRangeList
CXLHostBridgeRegs::getAddrRanges() const
{
    return {RangeSize(base, cxlio::kComponentBytes)};
}

Tick
CXLHostBridgeRegs::read(PacketPtr pkt)
{
    const unsigned size = pkt->getSize();
    answer(pkt, size <= 8 ? regs->read(pkt->getAddr() - base, size)
                          : ~uint64_t(0));
    return latency;
}

Tick
CXLHostBridgeRegs::write(PacketPtr pkt)
{
    const unsigned size = pkt->getSize();
    if (size <= 8)
        regs->write(pkt->getAddr() - base, size,
                    pkt->getUintX(ByteOrder::little));
    else
        ++regs->stats->badMmioAccesses;
    pkt->makeAtomicResponse();
    return latency;
}

} // namespace gem5
