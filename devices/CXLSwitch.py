# A CXL switch as a gem5 SimObject: the SimCXL core's CxlSwitch (a virtual
# switch per upstream port, HDM routing over its downstream ports, per-port
# queues and credits) with what its downstream ports lead to, and one link
# above each upstream port: every CXLHostBridge root port (or switch port)
# naming it in its `root_ports` gains one. Its parameters are the fields of
# simcxl.config.groups SwitchParams (switch_*) and LinkParams (link_*: each upstream
# port's link), GENERATED between the BEGIN/END GENERATED PARAMS markers by
# `python -m simcxl.config.schema_gen` from simcxl/config/groups.py (edit the dataclasses
# and rerun it); the rest of the file is hand-written. Build-time file:
# imports m5 only.

from m5.objects.CXLPortTarget import CXLPortTarget
from m5.params import *


class CXLSwitch(CXLPortTarget):
    """A CXL switch timed by the SimCXL core; several host bridges may reach
    it, each through an upstream port of its own."""

    type = "CXLSwitch"
    cxx_header = "devices/cxl_switch.hh"
    cxx_class = "gem5::CXLSwitch"

    downstream = VectorParam.CXLPortTarget("what each downstream port leads to, in port order")
    seed = Param.Unsigned(1, "Seed of the upstream links' CRC error draws (upstream port u: seed + 17 u)")

    # BEGIN GENERATED PARAMS by `python -m simcxl.config.schema_gen` from simcxl/config/groups.py:
    # SwitchParams, LinkParams. Edit the dataclasses there and rerun it, not these lines.
    # switch_*: SwitchParams. A CXL switch (one virtual CXL switch): an upstream port and its downstream
    # ports, routed by the upstream port's HDM decoder (CXL 2.0 hierarchy-based routing).
    switch_latency_ns = Param.Float(
        100.0, "port-to-port traversal, each direction (CXL-DMSim's switch latency fitted to XConn XC50256 "
        "data, TCAD 2025 Table III; not fitted here) (ns, 0 to 10000)")
    switch_port_queue = Param.Unsigned(
        64, "entries of each port's egress queue each way and DSP S2M receive buffer (1 to 65536)")
    switch_interleave_bytes = Param.Unsigned(
        4096, "granularity at which the upstream port's decoder interleaves over the downstream ports (B, one "
        "of 256, 512, 1024, 2048, 4096, 8192, 16384)")
    switch_weighted_arbitration = Param.Unsigned(
        0, "responses onto the upstream port: 0 round-robin, one per port in turn; 1 weighted, as many in a "
        "turn as the port's link has lanes (one of 0, 1)")
    switch_egress_congestion = Param.Unsigned(
        0, "1: a response crossing the switch carries at least Moderate (Severe) DevLoad when an egress port "
        "on its way (the downstream port toward its device, the upstream port toward its host) was "
        "backpressured, a message waiting for its link's credits, for egress_moderate (egress_severe) of the "
        "last congestion interval (CXL 2.0 QoS telemetry's egress port congestion) (one of 0, 1)")
    switch_egress_moderate = Param.Float(
        0.1, "fraction of the congestion interval an egress port is backpressured from which responses "
        "through it report Moderate overload (0.001 to 1)")
    switch_egress_severe = Param.Float(0.25, "the same for Severe overload (at least egress_moderate) (0.001 to 1)")
    switch_congestion_interval_ns = Param.Float(
        1000.0, "interval over which each port's backpressure is measured for egress_congestion (ns, 10 to "
        "1000000)")
    switch_routing = Param.Unsigned(
        0, "\"hbr\" (0): hierarchy-based routing (CXL 2.0), the switches below a host a tree, each upstream "
        "port's decoder routing over its downstream ports; \"pbr\" (1): port-based routing (CXL 3.x), switches "
        "joined by inter-switch links in any shape (rings, meshes), each host edge decoding over every device "
        "of the fabric and each switch forwarding by the destination's PBR ID through deadlock-free routes "
        "computed at build time (one of 0, 1)")
    # link_*: LinkParams. A CXL link: PCIe electricals, flits, credits, CRC and replay.
    link_gen = Param.Unsigned(5, "PCIe generation: 5 (32 GT/s, CXL 1.1/2.0) or 6 (64 GT/s, CXL 3.x) (one of 5, 6)")
    link_lanes = Param.Unsigned(16, "link width (one of 1, 2, 4, 8, 16)")
    link_flit_bytes = Param.Unsigned(68, "flit size: 68 (CXL 1.1/2.0) or 256 (CXL 3.x) (B, one of 68, 256)")
    link_latency_optimized = Param.Unsigned(0, "256 B latency-optimised flit (1) or standard (0) (one of 0, 1)")
    link_phy_latency_ns = Param.Float(20.0, "one-way PHY, retimer and link-layer latency (ns, 0 to 10000)")
    link_credits_req = Param.Unsigned(64, "M2S Req credits (device receive buffers) (1 to 65536)")
    link_credits_rwd = Param.Unsigned(64, "M2S RwD credits (1 to 65536)")
    link_credits_ndr = Param.Unsigned(64, "S2M NDR credits (host receive buffers) (1 to 65536)")
    link_credits_drs = Param.Unsigned(64, "S2M DRS credits (1 to 65536)")
    link_credits_bisnp = Param.Unsigned(
        64, "S2M BISnp credits (back-invalidate snoops of a shared device) (1 to 65536)")
    link_credits_birsp = Param.Unsigned(64, "M2S BIRsp credits (hosts' answers to them) (1 to 65536)")
    link_bit_error_rate = Param.Float(0.0, "bit-error rate; a bad flit is replayed (0 to 0.001)")
    link_replay_latency_ns = Param.Float(60.0, "NAK round trip before a replay (ns, 0 to 100000)")
    # END GENERATED PARAMS
