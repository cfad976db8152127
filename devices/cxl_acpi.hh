// gem5 SimObjects of the ACPI tables that describe CXL memory to an X86
// guest. Each builds its body with the SimCXL core's table builders
// (cxlcore/platform/acpi.hpp) at configuration time and hands it to gem5's
// X86 ACPI writer, which adds the header and checksum.
#ifndef __DEVICES_CXL_ACPI_HH__
#define __DEVICES_CXL_ACPI_HH__

#include <cstdint>
#include <vector>

#include "arch/x86/bios/acpi.hh"
#include "cxlcore/platform/aml.hpp"
#include "params/CXLAcpiCedt.hh"
#include "params/CXLAcpiFadt.hh"
#include "params/CXLAcpiHmat.hh"
#include "params/CXLAcpiMcfg.hh"
#include "params/CXLAcpiSlit.hh"
#include "params/CXLAcpiSrat.hh"

namespace gem5
{

// A table whose body is fixed at construction.
class CXLAcpiTable : public X86ISA::ACPI::SysDescTable
{
  protected:
    std::vector<uint8_t> body;

    CXLAcpiTable(const X86ACPISysDescTableParams &p, const char *sig,
                 uint8_t rev)
        : SysDescTable(p, sig, rev) {}

    Addr writeBuf(PortProxy &phys, X86ISA::ACPI::Allocator &alloc,
                  std::vector<uint8_t> &mem) const override;
};

class CXLAcpiSrat : public CXLAcpiTable
{
  public:
    PARAMS(CXLAcpiSrat);
    CXLAcpiSrat(const Params &p);
};

class CXLAcpiSlit : public CXLAcpiTable
{
  public:
    PARAMS(CXLAcpiSlit);
    CXLAcpiSlit(const Params &p);
};

class CXLAcpiHmat : public CXLAcpiTable
{
  public:
    PARAMS(CXLAcpiHmat);
    CXLAcpiHmat(const Params &p);
};

class CXLAcpiCedt : public CXLAcpiTable
{
  public:
    PARAMS(CXLAcpiCedt);
    CXLAcpiCedt(const Params &p);
};

class CXLAcpiMcfg : public CXLAcpiTable
{
  public:
    PARAMS(CXLAcpiMcfg);
    CXLAcpiMcfg(const Params &p);
    const std::vector<cxlcore::acpi::EcamRange> &ranges() const
    {
        return ecam;
    }

  private:
    std::vector<cxlcore::acpi::EcamRange> ecam;
};

// The FADT's body holds the DSDT's address, so it is built when written;
// the DSDT declares the CXL root and host bridges when it is given them.
class CXLAcpiFadt : public X86ISA::ACPI::SysDescTable
{
  public:
    PARAMS(CXLAcpiFadt);
    CXLAcpiFadt(const Params &p);

  protected:
    Addr writeBuf(PortProxy &phys, X86ISA::ACPI::Allocator &alloc,
                  std::vector<uint8_t> &mem) const override;

  private:
    std::vector<uint8_t> dsdt;
};

} // namespace gem5

#endif // __DEVICES_CXL_ACPI_HH__
