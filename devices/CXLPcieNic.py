# The PCIe NIC baseline of the CXL-NIC as a gem5 DMA device: an MMIO
# doorbell per ring, then per operation a DMA read of its descriptor, a DMA
# read of the operand word, a DMA write of the new value and a DMA write of
# the completion, `engines` operations in flight, operations on one word one
# at a time (the SimCXL core's AtomicOrdering). Rings and completions are in
# host memory in the format of ext/cxlcore/devices/nic_abi.h; the host polls
# the completions. The latencies are the SimCXL core's DMA parameters
# (simcxl.gem5.nic.setup). Build-time file: imports m5 only.

from m5.objects.Device import DmaDevice
from m5.params import *


class CXLPcieNic(DmaDevice):
    """A PCIe NIC executing remote atomics by DMA; its DMA port goes to the
    host through a link (a CXLCacheLink without a cache)."""

    type = "CXLPcieNic"
    cxx_header = "devices/cxl_pcie_nic.hh"
    cxx_class = "gem5::CXLPcieNic"

    pio_addr = Param.Addr("MMIO base: 8 B doorbell registers, one per ring (the ring's tail)")
    pio_latency = Param.Latency("an MMIO access at the device (dma.setup_ns: the driver's doorbell write)")
    engine_latency = Param.Latency("the engine's step before each DMA it issues (dma.engine_latency_ns)")
    engines = Param.Unsigned("operations in flight (dma.engines) (1 to 4096)")
    rings = Param.Unsigned(1, "host threads, one ring each (1 to 1024)")
    ring_base = Param.Addr("physical address of the first ring (line aligned)")
    array_base = Param.Addr("physical address of the 8-byte operand words (8 B aligned)")
    array_words = Param.Unsigned("operand words; an operation's index is taken modulo this (1 to 2^27)")
    ring_entries = Param.Unsigned("descriptor and completion entries per ring (nic.ring_entries)")
    descriptors_per_line = Param.Unsigned("32 B descriptors per 64 B line (1 to 2)")
    completions_per_line = Param.Unsigned("16 B completions per 64 B line (1 to 4)")
