// gem5 PCI functions of CXL.io: a Type-3 memory device or a CXL port (root,
// switch upstream or downstream) whose configuration space and BAR 0
// registers are the SimCXL core's (cxlcore/cxlio). Linux reaches the first
// 256 bytes of configuration space through the PC's PCI host (CF8/CFC) and
// the rest, where the CXL DVSECs are, through ECAM (CXLEcam, the MCFG's
// range); both land in the same core function. The wrapper moves bytes and
// keeps gem5's BAR where software placed the core's; every register's
// behaviour is the core's.
#ifndef __DEVICES_CXL_PCI_FUNCTION_HH__
#define __DEVICES_CXL_PCI_FUNCTION_HH__

#include <functional>
#include <memory>
#include <vector>

#include "base/statistics.hh"
#include "cxlcore/cxlio/function.hpp"
#include "dev/io_device.hh"
#include "dev/pci/device.hh"
#include "params/CXLEcam.hh"
#include "params/CXLHostBridgeRegs.hh"
#include "params/CXLPciFunction.hh"

namespace gem5
{

// The core's CXL.io counters (cxlio::IoStats) as gem5 stats directly under
// `parent`, copied from `read()` when stats are dumped. A block with no
// configuration space, mailbox or DOE (`whole` false) hides those counters:
// they stay zero there.
struct CXLIoStats : public statistics::Group
{
    CXLIoStats(statistics::Group *parent,
               std::function<cxlcore::cxlio::IoStats()> read, bool whole);
    void preDumpStats() override;
    std::function<cxlcore::cxlio::IoStats()> read;
    statistics::Scalar configReads, configWrites, badConfigAccesses;
    statistics::Scalar mmioReads, mmioWrites, badMmioAccesses;
    statistics::Scalar lockedWrites, commits, commitErrors;
    statistics::Scalar mailboxCommands, mailboxFailures;
    statistics::Scalar doeRequests, doeErrors;
};

class CXLPciFunction : public PciDevice
{
  public:
    PARAMS(CXLPciFunction);
    CXLPciFunction(const Params &p);

    Tick readConfig(PacketPtr pkt) override;
    Tick writeConfig(PacketPtr pkt) override;
    Tick read(PacketPtr pkt) override;
    Tick write(PacketPtr pkt) override;
    AddrRangeList getAddrRanges() const override;
    // The core's registers are what the OS programmed (BAR, command, decoders):
    // gem5's own copy of the configuration space is not the one software sees.
    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;

    // Any offset of the function's 4 KiB (ECAM); accesses of a size other
    // than 1, 2 or 4 bytes, or crossing a dword, read all ones and are counted.
    uint64_t configRead(uint32_t off, unsigned size);
    void configWrite(uint32_t off, unsigned size, uint64_t value);

    cxlcore::cxlio::Function &function() { return *fn; }

  private:
    // gem5's BAR answers where software placed the core's BAR 0.
    void followBar();

    std::unique_ptr<cxlcore::cxlio::Function> fn;
    uint64_t malformed = 0;

    CXLIoStats stats;  // the core function's counters, malformed accesses added
};

// The ECAM window of the buses below the CXL host bridges: 1 MiB per bus,
// 4 KiB per function, as the MCFG gives it. An address no function answers
// reads all ones (an unsupported request) and drops writes, counted.
class CXLEcam : public PioDevice
{
  public:
    PARAMS(CXLEcam);
    CXLEcam(const Params &p);

    Tick read(PacketPtr pkt) override;
    Tick write(PacketPtr pkt) override;
    AddrRangeList getAddrRanges() const override;

  private:
    CXLPciFunction *find(Addr addr, uint32_t &off) const;

    const std::vector<CXLPciFunction *> functions;
    const Addr base;
    const unsigned firstBus, lastBus;
    const Tick latency;

    struct EcamStats : public statistics::Group
    {
        EcamStats(CXLEcam &e);
        statistics::Scalar reads, writes, unclaimed;
    } stats;
};


// A CXL host bridge's component register block (the CEDT CHBS range, 64 KiB):
// its HDM decoders route a window's addresses to root ports, and cxl_acpi's
// port driver programs them. Accesses other than naturally aligned 4 or 8
// bytes read all ones, counted by the core.
class CXLHostBridgeRegs : public PioDevice
{
  public:
    PARAMS(CXLHostBridgeRegs);
    CXLHostBridgeRegs(const Params &p);

    Tick read(PacketPtr pkt) override;
    Tick write(PacketPtr pkt) override;
    AddrRangeList getAddrRanges() const override;

    cxlcore::cxlio::ComponentRegs &registers() { return *regs; }
    void init() override;
    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;

  private:
    std::unique_ptr<cxlcore::cxlio::ComponentRegs> regs;
    const Addr base;
    const Tick latency;

    CXLIoStats stats;  // the registers' counters
};

} // namespace gem5

#endif // __DEVICES_CXL_PCI_FUNCTION_HH__
