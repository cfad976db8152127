# ACPI tables that tell an X86 guest where its CXL memory is and what it costs:
# SRAT (CPU and memory affinity: a CXL window is a CPU-less proximity domain),
# SLIT (distances), HMAT (latency and bandwidth) and CEDT (CXL host bridges and
# fixed memory windows, for the CXL.io work). The byte layouts are the SimCXL
# core's (ext/cxlcore/platform/acpi.cpp); simcxl.gem5.board fills these from a
# preset. Build-time file: imports m5 only (X86 builds).

from m5.objects.ACPI import X86ACPISysDescTable
from m5.params import *


class CXLAcpiSrat(X86ACPISysDescTable):
    """System Resource Affinity Table."""

    type = "CXLAcpiSrat"
    cxx_header = "devices/cxl_acpi.hh"
    cxx_class = "gem5::CXLAcpiSrat"

    cpu_apic_ids = VectorParam.UInt32([], "APIC ID of each CPU")
    cpu_domains = VectorParam.UInt32([], "proximity domain of each CPU (same order)")
    mem_bases = VectorParam.UInt64([], "base address of each memory range")
    mem_sizes = VectorParam.UInt64([], "size of each memory range (bytes)")
    mem_domains = VectorParam.UInt32([], "proximity domain of each memory range")
    mem_hot_pluggable = VectorParam.Bool([], "whether each memory range is hot-pluggable")
    gp_domains = VectorParam.UInt32([], "proximity domain of each generic port (a CXL host bridge)")
    gp_uids = VectorParam.UInt32([], "_UID of each generic port's host bridge (ACPI0016)")


class CXLAcpiSlit(X86ACPISysDescTable):
    """System Locality Information Table."""

    type = "CXLAcpiSlit"
    cxx_header = "devices/cxl_acpi.hh"
    cxx_class = "gem5::CXLAcpiSlit"

    localities = Param.UInt32(1, "number of proximity domains")
    distances = VectorParam.UInt8([10], "localities x localities distances, row-major; 10 on the diagonal")


class CXLAcpiHmat(X86ACPISysDescTable):
    """Heterogeneous Memory Attribute Table."""

    type = "CXLAcpiHmat"
    cxx_header = "devices/cxl_acpi.hh"
    cxx_class = "gem5::CXLAcpiHmat"

    memory_domains = VectorParam.UInt32([], "memory proximity domains")
    attached_initiators = VectorParam.Int64([], "initiator domain each memory domain is attached to (-1: none)")
    initiators = VectorParam.UInt32([], "initiator domain of each locality")
    targets = VectorParam.UInt32([], "memory or generic port domain of each locality")
    read_latency_ns = VectorParam.Float([], "read latency of each locality (ns)")
    write_latency_ns = VectorParam.Float([], "write latency of each locality (ns)")
    read_bandwidth_gbps = VectorParam.Float([], "read bandwidth of each locality (GB/s)")
    write_bandwidth_gbps = VectorParam.Float([], "write bandwidth of each locality (GB/s)")


class CXLAcpiCedt(X86ACPISysDescTable):
    """CXL Early Discovery Table: host bridges (CHBS) and fixed memory windows (CFMWS)."""

    type = "CXLAcpiCedt"
    cxx_header = "devices/cxl_acpi.hh"
    cxx_class = "gem5::CXLAcpiCedt"

    bridge_uids = VectorParam.UInt32([], "UID of each CXL host bridge")
    bridge_versions = VectorParam.UInt32([], "0: CXL 1.1, 1: CXL 2.0 or later, per host bridge")
    bridge_bases = VectorParam.UInt64([], "component register base of each host bridge")
    bridge_lengths = VectorParam.UInt64([], "component register length of each host bridge")
    window_bases = VectorParam.UInt64([], "host physical base of each window (256 MiB aligned)")
    window_sizes = VectorParam.UInt64([], "size of each window (a multiple of ways x 256 MiB)")
    window_ways = VectorParam.UInt32([], "interleave ways of each window (1, 2, 3, 4, 6, 8, 12, 16)")
    window_granularities = VectorParam.UInt32([], "interleave granularity of each window (256 to 16384 B)")
    window_targets = VectorParam.UInt32([], "host bridge UIDs of every window's ways, window after window")
    window_restrictions = VectorParam.UInt16([], "restrictions of each window (bit 1 Type-3, bit 2 volatile)")


class CXLAcpiMcfg(X86ACPISysDescTable):
    """PCI Express memory-mapped configuration (ECAM) ranges: where Linux reads
    configuration space past 256 bytes (the CXL DVSECs), segment 0."""

    type = "CXLAcpiMcfg"
    cxx_header = "devices/cxl_acpi.hh"
    cxx_class = "gem5::CXLAcpiMcfg"

    ecam_bases = VectorParam.UInt64([], "address of bus 0 of each ECAM range (1 MiB aligned)")
    ecam_first_buses = VectorParam.UInt8([], "first bus of each ECAM range")
    ecam_last_buses = VectorParam.UInt8([], "last bus of each ECAM range")


class CXLAcpiFadt(X86ACPISysDescTable):
    """Fixed ACPI Description Table and, written beside it, the DSDT: with them
    Linux enables ACPI (and so parses HMAT); without them it boots with ACPI
    disabled. The DSDT is empty unless CXL host bridges are given: then it
    declares the CXL root (ACPI0017), each bridge as a PCIe root bridge
    (ACPI0016, its CEDT CHBS UID) and reserves the ECAM ranges (PNP0C02). The
    PM1 ports are answered by the PC's unclaimed-port device (reads 0)."""

    type = "CXLAcpiFadt"
    cxx_header = "devices/cxl_acpi.hh"
    cxx_class = "gem5::CXLAcpiFadt"

    sci_interrupt = Param.UInt16(9, "SCI interrupt (ISA IRQ)")
    pm1a_event_port = Param.UInt32(0x600, "I/O port of the PM1a event block (4 bytes)")
    pm1a_control_port = Param.UInt32(0x604, "I/O port of the PM1a control block (2 bytes)")
    boot_arch = Param.UInt16(0x3, "IA-PC boot architecture flags (bit 0 legacy devices, bit 1 8042)")
    cxl_bridge_uids = VectorParam.UInt32([], "CEDT CHBS UID of each CXL host bridge")
    cxl_bridge_first_buses = VectorParam.UInt8([], "root bus of each CXL host bridge")
    cxl_bridge_last_buses = VectorParam.UInt8([], "last bus below each CXL host bridge")
    cxl_bridge_mmio_bases = VectorParam.UInt64([], "base of the window for BARs below each bridge")
    cxl_bridge_mmio_sizes = VectorParam.UInt64([], "size of that window")
    mcfg = Param.CXLAcpiMcfg(NULL, "the MCFG whose ECAM ranges the DSDT reserves (none: no ECAM)")
