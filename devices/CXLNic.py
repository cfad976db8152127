# The CXL-NIC's atomic engine as a gem5 SimObject: the SimCXL core's CxlNic,
# working through a gem5 cache (the NIC's device cache, on the memory bus
# behind a link crossbar, coherent with the cores' caches) on the guest's
# bytes. Its parameters are the fields of simcxl.config.groups.NicParams with the
# prefix nic_, GENERATED between the BEGIN/END GENERATED PARAMS markers by
# `python -m simcxl.config.schema_gen` from simcxl/config/groups.py (edit the dataclasses
# and rerun it); the rest is hand-written. The guest's ring
# layout is the core's (makeRings) with the byte format of
# benchmarks/guest/nic_ring.h. Build-time file: imports m5 only.

from m5.objects.ClockedObject import ClockedObject
from m5.params import *
from m5.proxy import *


class CXLNic(ClockedObject):
    """A CXL-NIC's atomic engine timed by the SimCXL core; `port` goes to the
    CPU side of its device cache."""

    type = "CXLNic"
    cxx_header = "devices/cxl_nic.hh"
    cxx_class = "gem5::CXLNic"

    port = RequestPort("to the CPU side of the NIC's device cache")
    system = Param.System(Parent.any, "the system (requestor id, memory mode)")
    rings = Param.Unsigned(1, "host threads, one descriptor and completion ring each (1 to 1024)")
    ring_base = Param.Addr("physical address of the first ring (line aligned)")
    array_base = Param.Addr("physical address of the 8-byte operand words (8 B aligned)")
    array_words = Param.Unsigned("operand words; an operation's index is taken modulo this (1 to 2^27)")

    # BEGIN GENERATED PARAMS by `python -m simcxl.config.schema_gen` from simcxl/config/groups.py:
    # NicParams. Edit the dataclasses there and rerun it, not these lines.
    # nic_*: NicParams. A CXL-NIC (Type-1: the accelerator's cache with an atomic engine and a network
    # port), and the host-side costs its baselines (the PCIe NIC on the DMA engine, host-core atomics)
    # need.
    nic_ops_in_flight = Param.Unsigned(32, "atomic operations the NIC's engine executes at once (1 to 4096)")
    nic_alu_ns = Param.Float(
        2.0, "the 8-byte ALU step once the operand's line is held (assumed: 1-2 cycles of a 0.5-1 GHz device "
        "clock) (ns, 0 to 1000)")
    nic_ring_entries = Param.Unsigned(64, "descriptor (and completion) ring entries per host thread (1 to 65536)")
    nic_post_batch = Param.Unsigned(16, "descriptors a host thread writes before one doorbell write (1 to 65536)")
    nic_descriptors_per_line = Param.Unsigned(
        2, "descriptors in one 64 B ring line (32 B each: opcode, address, two operands) (one of 1, 2, 4)")
    nic_completions_per_line = Param.Unsigned(8, "completions (8 B results) in one 64 B ring line (one of 1, 2, 4, 8)")
    nic_poll_ns = Param.Float(
        20.0, "CXL-NIC's doorbell polling period (a poll of an unchanged doorbell line hits in its cache; the "
        "host's write snoops the copy away) (ns, 1 to 1000000)")
    nic_host_poll_ns = Param.Float(50.0, "a host thread's completion polling period (CXL-NIC) (ns, 1 to 1000000)")
    nic_network = Param.Unsigned(
        0, "operations travel out of the network port and back (loopback wire) before they execute, and their "
        "results back before completing (one of 0, 1)")
    nic_wire_gbps = Param.Float(12.5, "network wire bandwidth per direction (100 GbE: 12.5) (GB/s, 0.01 to 10000)")
    nic_wire_latency_ns = Param.Float(
        500.0, "network wire latency one way (assumed: a switch hop and cables) (ns, 0 to 10000000)")
    nic_op_bytes = Param.Unsigned(64, "an operation's size on the wire (a minimum Ethernet frame) (B, 1 to 65536)")
    nic_result_bytes = Param.Unsigned(64, "a result's size on the wire (B, 1 to 65536)")
    nic_host_atomic_ns = Param.Float(
        7.0, "a host core's locked read-modify-write on a line it holds (LOCK XADD/CMPXCHG: about 18-20 "
        "cycles at 3 GHz, Agner Fog's instruction tables) (ns, 0 to 10000)")
    nic_host_transfer_ns = Param.Float(
        60.0, "a line moving between host cores for the next atomic (assumed; server core-to-core latencies "
        "are measured at about 50-100 ns) (ns, 0 to 10000)")
    nic_rpc_field_ns = Param.Float(
        1.0, "RPC engine: per field (de)serialised (assumed: one field a cycle at 1 GHz) (ns, 0 to 10000)")
    nic_rpc_gbps = Param.Float(
        32.0, "RPC engine: bytes (de)serialised per second (assumed: 32 B a cycle at 1 GHz) (GB/s, 0.01 to "
        "10000)")
    nic_host_field_ns = Param.Float(
        8.0, "a host core (de)serialising one field (assumed: protobuf's generated code spends a few ns to "
        "tens of ns per field) (ns, 0 to 10000)")
    nic_host_copy_gbps = Param.Float(
        8.0, "a host core copying string bytes while (de)serialising (assumed: one core's memcpy from its "
        "caches) (GB/s, 0.01 to 10000)")
    nic_host_outstanding = Param.Unsigned(
        10, "line fills a host core keeps in flight while it walks an object (a core's fill buffers: 10-16 on "
        "current x86 cores) (1 to 1024)")
    # END GENERATED PARAMS
