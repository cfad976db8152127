# The CXL host bridge / root complex as a gem5 SimObject: the memory bus sees
# one CFMWS-style host window (its `range`), which the SimCXL core's HDM
# decoder interleaves over its root ports, each leading to a CXLType3Expander
# or a CXLSwitch. Its
# parameters are the fields of simcxl.config.groups.BridgeParams with the prefix
# bridge_, GENERATED between the BEGIN/END GENERATED PARAMS markers by
# `python -m simcxl.config.schema_gen` from simcxl/config/groups.py (edit the dataclasses
# and rerun it); the rest of the file is hand-written. Build-time file:
# imports m5 only.

from m5.objects.AbstractMemory import AbstractMemory
from m5.params import *
from m5.util.pybind import PyBindMethod


class CXLHostBridge(AbstractMemory):
    """A CXL host bridge timed by the SimCXL core. Its range is the host
    window; it holds the window's data (see cxl_host_bridge.cc for why the
    bytes live here and not in the expanders)."""

    type = "CXLHostBridge"
    cxx_header = "devices/cxl_host_bridge.hh"
    cxx_class = "gem5::CXLHostBridge"

    port = ResponsePort("Requests from the memory bus (the host side of the root ports)")
    root_ports = VectorParam.CXLPortTarget(
        "what each root port leads to (a CXLType3Expander or a CXLSwitch), in port order (as many as "
        "bridge_root_ports)")
    host_index = Param.Unsigned(
        0, "this host in the fabric (0 to 15): a switch routes its responses by it, a multi-logical device "
        "gives it a logical device; host bridges of different hosts sharing a switch need different indexes")

    trace_file = Param.String(
        "", "request trace: write the sampled requests' paths here as CSV rows (at exit, and on writeTrace()); "
        "python -m simcxl.engine.reqtrace ROWS FILE turns them into FILE.json (Perfetto) and FILE.parquet. "
        "Empty: no trace")
    trace_sample = Param.UInt64(1, "request trace: every Nth request (1 to 2^40)")
    trace_max_requests = Param.UInt64(10000, "request trace: at most this many requests (1 to 100000000)")
    cxx_exports = [PyBindMethod("writeTrace")]

    watchdog_window_ns = Param.Float(
        1e7, "Progress watchdog: the run ends with an error naming the queue that holds the oldest request when "
        "requests are in flight and none completes for this long (ns; 0: off)")

    # BEGIN GENERATED PARAMS by `python -m simcxl.config.schema_gen` from simcxl/config/groups.py:
    # BridgeParams. Edit the dataclasses there and rerun it, not these lines.
    # bridge_*: BridgeParams. CXL host bridge / root complex with its HDM decoder.
    bridge_req_latency_ns = Param.Float(15.0, "host-side protocol latency, request direction (ns, 0 to 10000)")
    bridge_resp_latency_ns = Param.Float(15.0, "host-side protocol latency, response direction (ns, 0 to 10000)")
    bridge_req_queue = Param.Unsigned(
        128, "requests outstanding to CXL at once per root port (pooled over the bridge's root ports) (1 to "
        "65536)")
    bridge_resp_queue = Param.Unsigned(
        128, "response buffer entries per root port; S2M responses in flight or waiting for the host may not "
        "exceed it (1 to 65536)")
    bridge_root_ports = Param.Unsigned(1, "root ports, each with one link and one Type-3 device (1 to 64)")
    bridge_interleave_ways = Param.Unsigned(1, "HDM interleave ways (one of 1, 2, 3, 4, 6, 8, 12, 16)")
    bridge_interleave_bytes = Param.Unsigned(
        4096, "HDM interleave granularity (B, one of 256, 512, 1024, 2048, 4096, 8192, 16384)")
    bridge_devload_throttle = Param.Unsigned(
        0, "1: each root port bounds its requests in flight by its responses' DevLoad, per round trip: light "
        "+1, optimal holds, moderate -1/16 of it, severe -1/4 (one of 0, 1)")
    # END GENERATED PARAMS
