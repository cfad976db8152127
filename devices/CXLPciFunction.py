# CXL.io in gem5: PCI functions whose configuration space and registers are
# the SimCXL core's (ext/cxlcore/cxlio), and the ECAM window Linux reaches
# their extended configuration space through. simcxl.gem5.board wires them
# below the PC's PCI host. Build-time file: imports m5 only (X86 builds).

from m5.objects.Device import PioDevice
from m5.objects.PciDevice import PciDevice, PciMemBar, PciMemUpperBar
from m5.params import *
from m5.proxy import *


class CXLPciFunction(PciDevice):
    """A Type-3 memory device (class 05h/02h/10h) or a CXL port (root, switch
    upstream or downstream; type 1 header), its DVSECs, component registers,
    device registers, mailbox and CDAT from the core. gem5's own config-space
    parameters (VendorID, BARs' contents, ...) are unused: the core answers."""

    type = "CXLPciFunction"
    cxx_header = "devices/cxl_pci_function.hh"
    cxx_class = "gem5::CXLPciFunction"

    kind = Param.String("type3", "type3, root_port, switch_upstream or switch_downstream")
    expander = Param.CXLType3Expander(
        NULL, "the device this function is (type3), or the device below the port: its link's width and speed")
    capacity = Param.MemorySize("0", "type3: bytes of volatile memory, a multiple of 256 MiB")
    lsa_bytes = Param.UInt32(1024, "type3: label storage area bytes")
    decoders = Param.UInt32(4, "HDM decoders (type3, switch_upstream: 1, 2, 4, 6, 8 or 10; 0 for other ports)")
    targets = Param.UInt32(1, "switch_upstream: downstream ports its decoders may target")
    port_number = Param.UInt8(0, "ports: the port number in the Link Capabilities register")
    # gem5 requires these; the core's configuration space answers every read.
    VendorID = 0x1E98
    DeviceID = 0x0D93
    # BAR 0, 64-bit: component registers (and, on a device, device registers).
    BAR0 = PciMemBar(size="128KiB")
    BAR1 = PciMemUpperBar()


class CXLEcam(PioDevice):
    """1 MiB of configuration space per bus from `base` (bus 0), for buses
    first_bus..last_bus: the range a CXLAcpiMcfg entry names."""

    type = "CXLEcam"
    cxx_header = "devices/cxl_pci_function.hh"
    cxx_class = "gem5::CXLEcam"

    base = Param.Addr("address of bus 0's configuration space (1 MiB aligned)")
    first_bus = Param.UInt8("first bus it decodes")
    last_bus = Param.UInt8("last bus it decodes")
    functions = VectorParam.CXLPciFunction([], "the functions on those buses")
    pio_latency = Param.Latency("30ns", "configuration access latency")


class CXLHostBridgeRegs(PioDevice):
    """A CXL host bridge's component registers at its CEDT CHBS base (64 KiB):
    the HDM decoders cxl_acpi's port driver programs to route a window's
    addresses over the bridge's root ports."""

    type = "CXLHostBridgeRegs"
    cxx_header = "devices/cxl_pci_function.hh"
    cxx_class = "gem5::CXLHostBridgeRegs"

    base = Param.Addr("the CHBS base (64 KiB aligned)")
    decoders = Param.UInt32(1, "HDM decoders: 1, 2, 4, 6, 8 or 10")
    targets = Param.UInt32(1, "target list length (root ports): 1, 2, 4 or 8")
    pio_latency = Param.Latency("30ns", "register access latency")
    # The bridge references nothing back: gem5's System lists every memory (the bridge among them)
    # and the PCI functions name their System, so a bridge naming them would close a loop.
    bridge = Param.CXLHostBridge(
        NULL, "the CXLHostBridge whose window these decoders route: its timing then follows the HDM decoders "
        "committed here and at the endpoints (an address none covers reads all ones or poison, a write is "
        "dropped); without one the bridge uses its own interleave")
    endpoints = VectorParam.CXLPciFunction(
        [], "with bridge: the Type-3 function below each of its root ports, in order (the switch_upstream "
        "function where the root port leads to a CXLSwitch)")
    # Here, not on the CXLSwitch: the functions name their System, which lists the bridge, whose root
    # ports are the switches; a switch naming them would close a loop.
    switch_endpoints = VectorParam.CXLPciFunction(
        [], "with bridge: the Type-3 function below each downstream port of each CXLSwitch below a root port, "
        "root port by root port, each switch's in port order")
    firmware_commit = Param.Bool(
        False, "with bridge: commit and lock one decoder over its whole window here and at the endpoints before "
        "the guest runs, as platform firmware does for memory it reports in SRAT/E820")
    firmware_targets = VectorParam.UInt32(
        [], "firmware_commit: the root ports its decoder interleaves over, in order (default: every root port)")
    firmware_granularity = Param.UInt32(0, "firmware_commit: interleave bytes (0: the bridge's bridge_interleave_bytes)")
