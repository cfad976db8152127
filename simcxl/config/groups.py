"""The parameter groups: each component's parameters with their units, defaults, ranges and reasons.

The single source of truth for them: the C++ field lists (``ext/cxlcore/config/params_fields.hpp``),
the gem5 SimObjects' parameter sections (``devices/*.py``) and ``docs/reference/parameters.md`` are
generated from these dataclasses (with the System of ``params.py`` that groups them) by
``python -m simcxl.config.schema_gen``; ``tests/test_schema_generated.py`` fails while one differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

from .param_group import ParamError, ParamGroup, fmt, param

GiB = 1 << 30


# How a STREAM store reaches memory (engine.stream and a testbed's stream.csv).
STORES = ("write-allocate", "non-temporal")


@dataclass
class HostParams(ParamGroup):
    """Cores, caches, address translation and the uncore path to memory."""
    cores: int = param(8, 1, 1024, "", "hardware threads available to workloads")
    mshrs_per_core: int = param(16, 1, 256, "", "outstanding L1 misses per core (fill buffers)")
    writeback_buffer: int = param(32, 1, 1024, "", "outstanding dirty-line write-backs per core")
    l1_bytes: int = param(49152, 1024, GiB, "B", "private L1D size", wide=True)
    l1_assoc: int = param(12, 1, 64, "ways", "L1D associativity")
    l1_latency_ns: float = param(1.7, 0, 100, "ns", "load-to-use latency of an L1 hit")
    l2_bytes: int = param(2097152, 1024, 1 << 34, "B", "private L2 size", wide=True)
    l2_assoc: int = param(16, 1, 64, "ways", "L2 associativity")
    l2_latency_ns: float = param(5.5, 0, 200, "ns", "load-to-use latency of an L2 hit")
    llc_bytes: int = param(102236160, 1024, 1 << 36, "B", "shared LLC size", wide=True)
    llc_assoc: int = param(15, 1, 64, "ways", "LLC associativity (DRRIP replacement)")
    llc_latency_ns: float = param(36.0, 0, 500, "ns", "load-to-use latency of an LLC hit; also when a miss leaves")
    llc_bimodal_insert_prob: float = param(
        0.0625, 0, 1, "",
        "LLC DRRIP: chance that a miss in a BRRIP set is inserted for 'long' rather than 'distant' re-reference "
        "(thrash protection). 1/32 in Jaleel et al., ISCA 2010; Intel's L3 QLRU variants about 1/16 "
        "(Abel & Reineke, nanoBench); physical range 1/64 to 1/8; 1 makes every set SRRIP")
    llc_inclusive: int = param(
        0, 0, 1, "",
        "1: the LLC is inclusive, filled on every L2 miss (Intel client parts, Xeons before Skylake-SP); 0: "
        "non-inclusive and victim-filled, as Intel's server LLCs since Skylake-SP: a line from memory fills the "
        "L2 only, the L2's victims fill the LLC, and a line a core takes from the LLC leaves it, so one core's "
        "data can fill L2 and LLC together")
    dtlb_entries: int = param(64, 1, 65536, "", "first-level data TLB entries")
    dtlb_assoc: int = param(4, 1, 65536, "ways", "DTLB associativity")
    stlb_entries: int = param(2048, 1, 1048576, "", "second-level TLB entries")
    stlb_assoc: int = param(8, 1, 1048576, "ways", "STLB associativity")
    stlb_latency_ns: float = param(2.5, 0, 100, "ns", "extra latency of a DTLB miss that hits the STLB")
    walk_latency_ns: float = param(
        4.0, 0, 1000, "ns",
        "page-walk overhead besides fetching the leaf PTE line through the caches (the upper levels from the "
        "paging-structure caches and L1)")
    page_bytes: int = param(4096, 4096, GiB, "B", "page size (a power of two)", wide=True)
    frame_run_pages: int = param(
        8, 1, 1 << 20, "pages",
        "mean run of physically consecutive frames the OS hands out, in the order pages are first touched. Linux "
        "refills a CPU's free-page list with pcp->batch (63) frames taken in ascending order from the zone's "
        "smallest free blocks (mm/page_alloc.c: zone_batchsize, rmqueue_bulk); each batch starts at a random "
        "frame, and within it a run ends at each page with probability 1 / frame_run_pages, as a fragmented "
        "zone's free blocks are of several orders; 1 puts every page on a random frame, 63 or more gives whole "
        "batches. The L2 is indexed by physical address, so this decides how evenly a working set fills its sets "
        "(lmbench's chase faults its pages in chase order)")
    uncore_req_latency_ns: float = param(10.0, 0, 1000, "ns", "mesh and home agent, LLC miss to memory port")
    uncore_resp_latency_ns: float = param(10.0, 0, 1000, "ns", "memory port back to the core")

    def _check(self, where: str) -> None:
        for lvl in ("l1", "l2", "llc"):
            b, a = getattr(self, f"{lvl}_bytes"), getattr(self, f"{lvl}_assoc")
            if b % (64 * a):
                raise ParamError(f"{where}.{lvl}_bytes = {b} must be a multiple of 64 x {where}.{lvl}_assoc ({a})")
        if self.page_bytes & (self.page_bytes - 1):
            raise ParamError(f"{where}.page_bytes = {self.page_bytes} is not allowed; "
                             "allowed values: a power of two from 4096 to 1073741824")
        for t in ("dtlb", "stlb"):
            if getattr(self, f"{t}_entries") % getattr(self, f"{t}_assoc"):
                raise ParamError(f"{where}.{t}_entries = {getattr(self, f'{t}_entries')} must be a multiple of "
                                 f"{t}_assoc")


@dataclass
class DramParams(ParamGroup):
    """A DRAM controller and its devices. A channel is an independent data bus
    (DDR5: one 32-bit sub-channel; DDR4: one 64-bit channel).

    Timings of the presets (nCK = one clock, 0.4167 ns at DDR5-4800, 0.625 ns
    at DDR4-3200; x8 devices, 16 Gb DDR5 / 8 Gb DDR4):

    ==========  =======================  =======================  ==============================
    timing      DDR5-4800 (JESD79-5)     DDR4-3200 (JESD79-4)     where it applies
    ==========  =======================  =======================  ==============================
    tWTR_L      max(16 nCK, 10 ns)=10    max(4 nCK, 7.5 ns)=7.5   write data end -> RD, same BG
    tWTR_S      max(4 nCK, 2.5 ns)=2.5   max(2 nCK, 2.5 ns)=2.5   write data end -> RD, other BG
    tRTP        max(12 nCK, 7.5 ns)=7.5  max(4 nCK, 7.5 ns)=7.5   RD -> PRE, same bank
    tRRD_S      8 nCK = 3.33             max(4 nCK, 2.5 ns)=2.5   ACT -> ACT, other BG
    tRRD_L      max(8 nCK, 5 ns) = 5     max(4 nCK, 4.9 ns)=4.9   ACT -> ACT, same BG
    tCCD_S      8 nCK = 3.33 (BL16)      4 nCK = 2.5 (BL8)        RD -> RD / WR -> WR, other BG
    tCCD_L      max(8 nCK, 5 ns) = 5     max(5 nCK, 5 ns) = 5     RD -> RD / WR -> WR, same BG
    tFAW        32 nCK = 13.33           max(16 nCK, 21 ns) = 21  four ACTs in a rank
    tREFI       3.9 us                   7.8 us (<=85 C; 3.9 hot)  average REFab interval
    tRFC        tRFC1 = 295 (16 Gb)      tRFC1 = 350 (8 Gb)       REFab busy time
    tRFCsb      130 (16 Gb)              -- (no same-bank REF)    REFsb busy time
    postpone    4 REFab                  8 REF                    refreshes that may be postponed
    ==========  =======================  =======================  ==============================

    tRTRS (rank-to-rank data-bus hand-over) is no JEDEC timing but the
    controller's gap for the ODT and driver hand-over between ranks; 2 nCK
    (0.83 ns DDR5-4800, 1.25 ns DDR4-3200) is a common controller setting.
    The rest (tRCD, tCL, tCWL, tRP, tRAS, tWR) are the speed bins' values of
    the same standards."""
    channels: int = param(2, 1, 64, "", "independent channels (DDR5: 2 per DIMM channel)")
    ranks: int = param(1, 1, 16, "", "ranks per channel")
    bank_groups: int = param(8, 1, 16, "", "bank groups per rank")
    banks_per_group: int = param(4, 1, 16, "", "banks per bank group")
    row_bytes: int = param(4096, 256, 65536, "B", "row (page) size per channel")
    data_rate_mts: float = param(4800, 100, 20000, "MT/s", "transfers per second per pin")
    bus_bytes: int = param(4, 1, 64, "B", "data bus width per channel")
    burst_length: int = param(16, 1, 64, "", "beats per burst (bus_bytes x burst_length = 64)")
    interleave_bytes: int = param(256, 64, 65536, "B", "channel interleave granularity")
    tRCD_ns: float = param(16.67, 0, 200, "ns", "activate to column command")
    tCL_ns: float = param(16.67, 0, 200, "ns", "read CAS latency")
    tCWL_ns: float = param(15.83, 0, 200, "ns", "write CAS latency")
    tRP_ns: float = param(16.67, 0, 200, "ns", "precharge")
    tRAS_ns: float = param(32.0, 0, 500, "ns", "activate to precharge")
    tWR_ns: float = param(30.0, 0, 500, "ns", "write recovery")
    tWTR_ns: float = param(10.0, 0, 200, "ns", "end of write data to a read command, same rank and bank group "
                           "(JEDEC tWTR_L)")
    tWTR_S_ns: float = param(2.5, 0, 200, "ns", "end of write data to a read command, same rank, another bank group")
    tRTW_ns: float = param(5.0, 0, 200, "ns", "read data to write data (bus turnaround)")
    tRTP_ns: float = param(7.5, 0, 200, "ns", "read command to precharge, same bank")
    tRTRS_ns: float = param(0.83, 0, 100, "ns", "gap between data bursts of two ranks (bus hand-over)")
    tRRD_ns: float = param(3.33, 0, 200, "ns", "activate to activate, same rank, another bank group (JEDEC tRRD_S)")
    tRRD_L_ns: float = param(5.0, 0, 200, "ns", "activate to activate, same rank and bank group")
    tFAW_ns: float = param(13.33, 0, 500, "ns", "four-activate window")
    tCCD_S_ns: float = param(3.33, 0, 100, "ns", "column to column, same rank, another bank group")
    tCCD_L_ns: float = param(5.0, 0, 100, "ns", "column to column, same bank group")
    tREFI_ns: float = param(3900, 0, 100000, "ns", "average interval of all-bank refreshes (0: no refresh)")
    tRFC_ns: float = param(295, 0, 5000, "ns", "all-bank refresh cycle time")
    refresh_per_bank: int = param(0, 0, 1, "", "0: all-bank refresh every tREFI; 1: same-bank refresh (DDR5 REFsb, "
                                  "fine-granularity mode), one bank of every group every tREFI / (2 x banks_per_group), "
                                  "for tRFCsb: each bank once per tREFI2 = tREFI / 2", (0, 1))
    tRFCsb_ns: float = param(130, 0, 5000, "ns", "same-bank refresh cycle time")
    refresh_postpone: int = param(4, 0, 8, "", "refreshes a rank with queued requests may postpone, caught up "
                                  "back to back at the limit or as soon as the rank is idle")
    read_queue: int = param(64, 1, 4096, "", "read queue entries per channel")
    write_queue: int = param(64, 1, 4096, "", "write queue entries per channel")
    write_buffer: int = param(0, 0, 65536, "", "posted writes the controller holds over all its channels until "
                              "their data is written (0: only the per-channel write queues limit them)")
    posted_writes: int = param(1, 0, 1, "", "1: a write is acknowledged once in the write queue (posted); 0: once "
                               "its data is written", (0, 1))
    write_high_watermark: float = param(0.85, 0.01, 1, "", "write-queue fill that starts a write burst")
    write_low_watermark: float = param(0.5, 0, 0.99, "", "write-queue fill that may end a write burst")
    min_writes_per_switch: int = param(16, 1, 4096, "", "writes per burst before turning back to reads")
    max_writes_per_switch: int = param(0, 0, 4096, "", "writes per burst after which waiting reads take the bus "
                                       "back, however full the write queue (0: only the low watermark ends a burst)")
    page_policy: int = param(0, 0, 2, "", "0: open page, a row stays open until another or a refresh closes it; "
                             "1: closed adaptive, a row closes after an access no queued request hits; 2: open with "
                             "an adaptive idle timer per bank, a row closes when it has been idle that long", (0, 1, 2))
    page_timeout_ns: float = param(50, 0, 100000, "ns", "page_policy 2: the shortest idle time after a row's last column "
                                   "command before the controller precharges it (no earlier than tRAS, tRTP or tWR "
                                   "allow), and each bank's timer at the start")
    page_timeout_max_ns: float = param(400, 0, 100000, "ns", "page_policy 2: the longest timer; a bank's timer doubles "
                                       "when the row it closed is the next one wanted (closed too soon) and halves when "
                                       "the next access finds another row still open (closed too late)")
    frontend_latency_ns: float = param(5.0, 0, 1000, "ns", "controller front end (request to queue)")
    backend_latency_ns: float = param(5.0, 0, 1000, "ns", "controller back end (data to response)")

    def _check(self, where: str) -> None:
        if self.bus_bytes * self.burst_length != 64:
            raise ParamError(f"{where}.bus_bytes x burst_length = {self.bus_bytes * self.burst_length} is not allowed; "
                             "allowed: 64 (one cache line per burst)")
        if self.interleave_bytes & (self.interleave_bytes - 1):
            raise ParamError(f"{where}.interleave_bytes = {self.interleave_bytes} is not allowed; "
                             "allowed values: a power of two from 64 to 65536")
        if self.row_bytes & (self.row_bytes - 1) or self.row_bytes < self.interleave_bytes:
            raise ParamError(f"{where}.row_bytes = {self.row_bytes} is not allowed; "
                             "allowed: a power of two, at least interleave_bytes")
        if self.write_low_watermark >= self.write_high_watermark:
            raise ParamError(f"{where}.write_low_watermark = {fmt(self.write_low_watermark)} is not allowed; "
                             f"allowed: below write_high_watermark ({fmt(self.write_high_watermark)})")
        if self.max_writes_per_switch and self.max_writes_per_switch < self.min_writes_per_switch:
            raise ParamError(f"{where}.max_writes_per_switch = {self.max_writes_per_switch} is not allowed; "
                             f"allowed: 0 (no limit) or at least min_writes_per_switch ({self.min_writes_per_switch})")
        if self.page_timeout_max_ns < self.page_timeout_ns:
            raise ParamError(f"{where}.page_timeout_max_ns = {fmt(self.page_timeout_max_ns)} is not allowed; "
                             f"allowed: at least page_timeout_ns ({fmt(self.page_timeout_ns)}) up to 100000")
        if self.tREFI_ns and self.tREFI_ns <= self.tRFC_ns:
            raise ParamError(f"{where}.tREFI_ns = {fmt(self.tREFI_ns)} is not allowed; "
                             "allowed: 0 (no refresh) or above tRFC_ns")
        if self.refresh_per_bank and self.tREFI_ns and self.tREFI_ns <= 2 * self.tRFCsb_ns * self.banks_per_group:
            raise ParamError(f"{where}.tREFI_ns = {fmt(self.tREFI_ns)} is not allowed with refresh_per_bank = 1; "
                             "allowed: 0 (no refresh) or above 2 x tRFCsb_ns x banks_per_group")

    @property
    def peak_gbps(self) -> float:
        return self.channels * self.bus_bytes * self.data_rate_mts * 1e6 / 1e9


@dataclass
class InterSocketParams(ParamGroup):
    """The link to the other socket (UPI-like), per direction."""
    latency_ns: float = param(35.0, 0, 10000, "ns", "one-way latency including the remote home agent")
    bandwidth_gbps: float = param(48.0, 0.1, 10000, "GB/s", "bandwidth per direction")
    req_bytes: int = param(16, 1, 4096, "B", "size of a request or completion message")
    data_bytes: int = param(80, 64, 4096, "B", "size of a message carrying a cache line")
    max_outstanding: int = param(256, 1, 65536, "", "requests tracked at once")
    directory_writes: int = param(1, 0, 1, "", "1: the home agent keeps its coherence directory in DRAM (Intel "
                                  "Xeon SP memory directory) and writes it when a remote read for ownership "
                                  "marks a line as cached by the other socket; 0: no directory writes")


@dataclass
class BridgeParams(ParamGroup):
    """CXL host bridge / root complex with its HDM decoder."""
    req_latency_ns: float = param(15.0, 0, 10000, "ns", "host-side protocol latency, request direction")
    resp_latency_ns: float = param(15.0, 0, 10000, "ns", "host-side protocol latency, response direction")
    req_queue: int = param(128, 1, 65536, "", "requests outstanding to CXL at once per root port (pooled over "
                           "the bridge's root ports)")
    resp_queue: int = param(128, 1, 65536, "", "response buffer entries per root port; S2M responses "
                            "in flight or waiting for the host may not exceed it")
    root_ports: int = param(1, 1, 64, "", "root ports, each with one link and one Type-3 device")
    interleave_ways: int = param(1, 1, 16, "", "HDM interleave ways", (1, 2, 3, 4, 6, 8, 12, 16))
    interleave_bytes: int = param(4096, 256, 16384, "B", "HDM interleave granularity",
                                  (256, 512, 1024, 2048, 4096, 8192, 16384))
    devload_throttle: int = param(0, 0, 1, "", "1: each root port bounds its requests in flight by its responses' "
        "DevLoad, per round trip: light +1, optimal holds, moderate -1/16 of it, severe -1/4", (0, 1))

    def _check(self, where: str) -> None:
        # The window interleaves over every root port: fewer ways would idle ports.
        if self.interleave_ways != self.root_ports:
            raise ParamError(f"{where}.interleave_ways = {self.interleave_ways} is not allowed with root_ports = "
                             f"{self.root_ports}; allowed: interleave_ways equal to root_ports, "
                             f"one of 1, 2, 3, 4, 6, 8, 12, 16")


@dataclass
class SwitchParams(ParamGroup):
    """A CXL switch (one virtual CXL switch): an upstream port and its downstream ports, routed by
    the upstream port's HDM decoder (CXL 2.0 hierarchy-based routing)."""
    latency_ns: float = param(100.0, 0, 10000, "ns", "port-to-port traversal, each direction (CXL-DMSim's "
                              "switch latency fitted to XConn XC50256 data, TCAD 2025 Table III; not fitted here)")
    port_queue: int = param(64, 1, 65536, "", "entries of each port's egress queue each way and DSP S2M receive buffer")
    interleave_bytes: int = param(4096, 256, 16384, "B", "granularity at which the upstream port's decoder "
                                  "interleaves over the downstream ports", (256, 512, 1024, 2048, 4096, 8192, 16384))
    weighted_arbitration: int = param(0, 0, 1, "", "responses onto the upstream port: 0 round-robin, one per port "
                                      "in turn; 1 weighted, as many in a turn as the port's link has lanes", (0, 1))
    egress_congestion: int = param(0, 0, 1, "", "1: a response crossing the switch carries at least Moderate "
        "(Severe) DevLoad when an egress port on its way (the downstream port toward its device, the upstream port "
        "toward its host) was backpressured, a message waiting for its link's credits, for egress_moderate "
        "(egress_severe) of the last congestion interval (CXL 2.0 QoS telemetry's egress port congestion)", (0, 1))
    egress_moderate: float = param(0.10, 0.001, 1, "", "fraction of the congestion interval an egress port is "
                                   "backpressured from which responses through it report Moderate overload")
    egress_severe: float = param(0.25, 0.001, 1, "", "the same for Severe overload (at least egress_moderate)")
    congestion_interval_ns: float = param(1000.0, 10, 1e6, "ns", "interval over which each port's backpressure "
                                          "is measured for egress_congestion")
    routing: int = param(0, 0, 1, "", "\"hbr\" (0): hierarchy-based routing (CXL 2.0), the switches below a host a "
                         "tree, each upstream port's decoder routing over its downstream ports; \"pbr\" (1): port-based "
                         "routing (CXL 3.x), switches joined by inter-switch links in any shape (rings, meshes), each "
                         "host edge decoding over every device of the fabric and each switch forwarding by the "
                         "destination's PBR ID through deadlock-free routes computed at build time", (0, 1),
                         names=("hbr", "pbr"))

    def _check(self, where: str) -> None:
        if self.egress_moderate > self.egress_severe:
            raise ParamError(f"{where}.egress_moderate = {self.egress_moderate:g} is not allowed with egress_severe = "
                             f"{self.egress_severe:g}; allowed: egress_moderate <= egress_severe")


@dataclass
class LinkParams(ParamGroup):
    """A CXL link: PCIe electricals, flits, credits, CRC and replay."""
    gen: int = param(5, 5, 6, "", "PCIe generation: 5 (32 GT/s, CXL 1.1/2.0) or 6 (64 GT/s, CXL 3.x)", (5, 6))
    lanes: int = param(16, 1, 16, "", "link width", (1, 2, 4, 8, 16))
    flit_bytes: int = param(68, 68, 256, "B", "flit size: 68 (CXL 1.1/2.0) or 256 (CXL 3.x)", (68, 256))
    latency_optimized: int = param(0, 0, 1, "", "256 B latency-optimised flit (1) or standard (0)", (0, 1))
    phy_latency_ns: float = param(20.0, 0, 10000, "ns", "one-way PHY, retimer and link-layer latency")
    credits_req: int = param(64, 1, 65536, "", "M2S Req credits (device receive buffers)")
    credits_rwd: int = param(64, 1, 65536, "", "M2S RwD credits")
    credits_ndr: int = param(64, 1, 65536, "", "S2M NDR credits (host receive buffers)")
    credits_drs: int = param(64, 1, 65536, "", "S2M DRS credits")
    credits_bisnp: int = param(64, 1, 65536, "", "S2M BISnp credits (back-invalidate snoops of a shared device)")
    credits_birsp: int = param(64, 1, 65536, "", "M2S BIRsp credits (hosts' answers to them)")
    bit_error_rate: float = param(0.0, 0, 1e-3, "", "bit-error rate; a bad flit is replayed")
    replay_latency_ns: float = param(60.0, 0, 100000, "ns", "NAK round trip before a replay")

    def _check(self, where: str) -> None:
        if self.gen == 6 and self.flit_bytes != 256:
            raise ParamError(f"{where}.flit_bytes = 68 is not allowed with gen = 6; allowed values: 256")
        if self.latency_optimized and self.flit_bytes != 256:
            raise ParamError(f"{where}.latency_optimized = 1 is not allowed with flit_bytes = 68; allowed values: 0")

    @property
    def raw_gbps(self) -> float:
        """GB/s per direction after line coding (PCIe 5: 128b/130b), as the core's link computes it."""
        from .. import _core  # the one formula: the core's (CxlLink)
        return _core.link_info(self.to_dict())["raw_gbps"]


@dataclass
class DeviceParams(ParamGroup):
    """A CXL Type-3 device controller in front of its media."""
    req_latency_ns: float = param(30.0, 0, 10000, "ns", "ingress pipeline: link/transaction layers to media")
    resp_latency_ns: float = param(20.0, 0, 10000, "ns", "egress pipeline: media to link")
    req_queue: int = param(64, 1, 65536, "", "transactions the controller holds at once")
    resp_queue: int = param(64, 1, 65536, "", "responses waiting for the link")
    write_tracker: int = param(0, 0, 65536, "", "writes the controller holds at once (its write buffer, within "
        "req_queue); an entry frees when the write's completion leaves (with media.posted_writes = 0, once the media has "
        "written the line); a write finding none free waits in the link's receive buffer, holding its RwD credit. 0: none")
    devload_optimal: float = param(0.25, 0, 1, "", "mean queue fill over a qos interval for DevLoad Optimal")
    devload_moderate: float = param(0.75, 0, 1, "", "mean queue fill for Moderate overload")
    devload_severe: float = param(0.95, 0, 1, "", "mean queue fill for Severe overload")
    logical_devices: int = param(1, 1, 16, "", "1: an SLD; N: an MLD, an LD (1/N of its DPA) per host reaching it")
    qos_interval_ns: float = param(1000.0, 10, 1e6, "ns", "QoS telemetry: each LD's completions are counted over it")
    dynamic_capacity: int = param(0, 0, 1, "", "1: a DCD, each LD backed only where the fabric manager added extents", (0, 1))
    shared: int = param(0, 0, 1, "", "1: one region all hosts reaching it map, coherent by HDM-DB back-invalidate", (0, 1))
    snoop_filter_entries: int = param(16384, 16, 1 << 24, "", "lines the snoop filter of a shared device tracks")
    snoop_filter_ways: int = param(16, 1, 64, "", "snoop filter associativity (entries divisible by it)")
    snoop_filter_victim: int = param(0, 0, 1, "", "snoop filter victim: 0 least recently used, 1 random", (0, 1))

    def _check(self, where: str) -> None:
        if not self.devload_optimal <= self.devload_moderate <= self.devload_severe:
            raise ParamError(f"{where}.devload_* thresholds must satisfy "
                             "devload_optimal <= devload_moderate <= devload_severe")
        if self.snoop_filter_entries % self.snoop_filter_ways:
            raise ParamError(f"{where}.snoop_filter_entries = {self.snoop_filter_entries} is not allowed; allowed: a multiple of snoop_filter_ways ({self.snoop_filter_ways})")
        if self.shared and self.logical_devices > 1:
            raise ParamError(f"{where}.shared = 1 is not allowed with logical_devices = {self.logical_devices}; allowed values: 0")


@dataclass
class DCacheParams(ParamGroup):
    """An accelerator's coherent cache and its CXL.cache channel credits."""
    bytes: int = param(131072, 1024, 1 << 30, "B", "capacity", wide=True)
    assoc: int = param(8, 1, 64, "", "ways per set")
    latency_ns: float = param(10.0, 0, 1000, "ns", "lookup latency (hit latency)")
    mshrs: int = param(64, 1, 4096, "", "outstanding misses (and evictions) at once")
    snoop_latency_ns: float = param(15.0, 0, 1000, "ns",
                                    "snoop arrival to response (CXL 2.0 targets at most 50 ns at the pins)")
    credits_d2h_req: int = param(64, 1, 65536, "", "D2H Req credits: home-agent tracker entries for this device")
    credits_d2h_rsp: int = param(64, 1, 65536, "", "D2H Rsp credits (host buffers for snoop responses)")
    credits_d2h_data: int = param(64, 1, 65536, "", "D2H Data credits")
    credits_h2d_req: int = param(32, 1, 65536, "", "H2D Req credits: the device's snoop buffer")
    credits_h2d_rsp: int = param(64, 1, 65536, "", "H2D Rsp credits (GO, write pulls)")
    credits_h2d_data: int = param(64, 1, 65536, "", "H2D Data credits")
    credits_bisnp: int = param(64, 1, 65536, "", "S2M BISnp credits (CXL 3.x HDM-DB: host buffers for back-invalidates)")
    credits_birsp: int = param(64, 1, 65536, "", "M2S BIRsp credits (CXL 3.x HDM-DB: device buffers for their answers)")

    def _check(self, where: str) -> None:
        if self.bytes % (64 * self.assoc):
            raise ParamError(f"{where}.bytes = {self.bytes} must be a multiple of 64 x assoc ({self.assoc})")


@dataclass
class HomeParams(ParamGroup):
    """The host's home agent for CXL.cache: ordering point, snoop filter, host caches."""
    latency_ns: float = param(20.0, 0, 10000, "ns", "root port to home agent and snoop-filter lookup, per request")
    host_hit_ns: float = param(36.0, 0, 10000, "ns", "a host core's hit in the host caches (LLC)")
    tracker: int = param(128, 1, 65536, "", "requests the home agent tracks at once (all devices)")
    snoop_filter_lines: int = param(0, 0, 1 << 26, "",
                                    "device-cached lines the snoop filter tracks (0: unlimited); a full filter "
                                    "evicts a line by invalidating it in the devices")
    host_cache_bytes: int = param(102236160, 4096, 1 << 36, "B",
                                  "capacity of the host's caches for coherent lines (default: the host LLC, "
                                  "HostParams.llc_bytes); LRU, a dirty victim is written back", wide=True)

    def _check(self, where: str) -> None:
        if self.host_cache_bytes % 64:
            raise ParamError(f"{where}.host_cache_bytes = {self.host_cache_bytes} must be a multiple of 64")


@dataclass
class AccelParams(ParamGroup):
    """A CXL accelerator: Type-1 (coherent cache) or Type-2 (plus device memory)."""
    type: int = param(1, 1, 2, "", "CXL device type: 1 (cache only) or 2 (cache and device memory)", (1, 2))
    devices: int = param(1, 1, 16, "", "identical accelerators of this description, each on its own link")
    memory_bytes: int = param(1 << 30, 4096, 1 << 44, "B", "Type-2 device memory per device", wide=True)
    memory_base: int = param(0, 0, 1 << 52, "B",
                             "Type-2: where its device memory starts; 0: after the previous device's, from 16 TiB",
                             wide=True)
    hdm_db: int = param(0, 0, 1, "", "Type-2 memory as HDM-DB: back-invalidate (CXL 3.x) instead of bias", (0, 1))
    device_bias: int = param(0, 0, 1, "", "initial bias of device memory pages: 0 host, 1 device", (0, 1))
    auto_bias_flip: int = param(1, 0, 1, "",
                                "device accesses flip host-bias pages to device bias (0: go through the host)",
                                (0, 1))
    bias_page_bytes: int = param(4096, 64, 1 << 30, "B", "bias-table granularity", wide=True)
    bias_flip_ns: float = param(300.0, 0, 1e6, "ns", "fixed cost of a bias flip (table update, handshake)")
    memory_latency_ns: float = param(10.0, 0, 10000, "ns", "device cache to its own memory controller")

    def _check(self, where: str) -> None:
        if self.bias_page_bytes & (self.bias_page_bytes - 1):
            raise ParamError(f"{where}.bias_page_bytes = {self.bias_page_bytes} is not allowed; "
                             "allowed values: a power of two from 64 to 1073741824")
        if self.memory_bytes % self.bias_page_bytes:
            raise ParamError(f"{where}.memory_bytes = {self.memory_bytes} must be a multiple of bias_page_bytes")
        if self.type == 1 and self.hdm_db:
            raise ParamError(f"{where}.hdm_db = 1 is not allowed with type = 1; allowed values: 0")
        # Device memory lies above every host address (host buffers end below 16 TiB).
        if self.memory_base and self.memory_base < 1 << 44:
            raise ParamError(f"{where}.memory_base = {self.memory_base} is not allowed; allowed: 0 (after the "
                             "previous device's memory) or 17592186044416 (16 TiB) to 4503599627370496")
        if self.memory_base % self.bias_page_bytes:
            raise ParamError(f"{where}.memory_base = {self.memory_base} must be a multiple of bias_page_bytes")


@dataclass
class DmaParams(ParamGroup):
    """A PCIe-style DMA engine on the accelerator, driven over CXL.io."""
    setup_ns: float = param(100.0, 0, 1e6, "ns", "driver time to write a descriptor and ring the doorbell")
    engine_latency_ns: float = param(50.0, 0, 1e6, "ns", "engine time from doorbell to descriptor fetch")
    descriptor_bytes: int = param(64, 16, 4096, "B", "descriptor size")
    max_read_request: int = param(512, 64, 4096, "B", "PCIe max read request size",
                                  (128, 256, 512, 1024, 2048, 4096))
    max_payload: int = param(256, 64, 4096, "B", "PCIe max payload per completion",
                             (128, 256, 512, 1024, 2048, 4096))
    read_tags: int = param(32, 1, 1024, "", "read requests in flight per transfer")
    tlp_overhead_bytes: int = param(24, 0, 128, "B", "TLP header, framing and CRC carried per TLP")
    interrupt: int = param(0, 0, 1, "", "completion by MSI-X interrupt (1) or by polling (0)", (0, 1))
    poll_interval_ns: float = param(50.0, 1, 1e6, "ns", "driver's polling period of the completion record")
    interrupt_ns: float = param(2000.0, 0, 1e7, "ns", "MSI-X delivery to the waiting thread running again")
    engines: int = param(1, 1, 64, "", "descriptors the engine processes at once")


@dataclass
class NicParams(ParamGroup):
    """A CXL-NIC (Type-1: the accelerator's cache with an atomic engine and a network port), and the
    host-side costs its baselines (the PCIe NIC on the DMA engine, host-core atomics) need."""
    ops_in_flight: int = param(32, 1, 4096, "", "atomic operations the NIC's engine executes at once")
    alu_ns: float = param(2.0, 0, 1000, "ns", "the 8-byte ALU step once the operand's line is held "
                          "(assumed: 1-2 cycles of a 0.5-1 GHz device clock)")
    ring_entries: int = param(64, 1, 65536, "", "descriptor (and completion) ring entries per host thread")
    post_batch: int = param(16, 1, 65536, "", "descriptors a host thread writes before one doorbell write")
    descriptors_per_line: int = param(2, 1, 4, "", "descriptors in one 64 B ring line (32 B each: opcode, "
                                      "address, two operands)", (1, 2, 4))
    completions_per_line: int = param(8, 1, 8, "", "completions (8 B results) in one 64 B ring line",
                                      (1, 2, 4, 8))
    poll_ns: float = param(20.0, 1, 1e6, "ns", "CXL-NIC's doorbell polling period (a poll of an unchanged "
                           "doorbell line hits in its cache; the host's write snoops the copy away)")
    host_poll_ns: float = param(50.0, 1, 1e6, "ns", "a host thread's completion polling period (CXL-NIC)")
    network: int = param(0, 0, 1, "", "operations travel out of the network port and back (loopback wire) "
                         "before they execute, and their results back before completing", (0, 1))
    wire_gbps: float = param(12.5, 0.01, 10000, "GB/s", "network wire bandwidth per direction (100 GbE: 12.5)")
    wire_latency_ns: float = param(500.0, 0, 1e7, "ns", "network wire latency one way (assumed: a switch hop "
                                   "and cables)")
    op_bytes: int = param(64, 1, 65536, "B", "an operation's size on the wire (a minimum Ethernet frame)")
    result_bytes: int = param(64, 1, 65536, "B", "a result's size on the wire")
    host_atomic_ns: float = param(7.0, 0, 10000, "ns", "a host core's locked read-modify-write on a line it holds "
                                  "(LOCK XADD/CMPXCHG: about 18-20 cycles at 3 GHz, Agner Fog's instruction tables)")
    host_transfer_ns: float = param(60.0, 0, 10000, "ns", "a line moving between host cores for the next atomic "
                                    "(assumed; server core-to-core latencies are measured at about 50-100 ns)")
    rpc_field_ns: float = param(1.0, 0, 10000, "ns", "RPC engine: per field (de)serialised (assumed: one field "
                                "a cycle at 1 GHz)")
    rpc_gbps: float = param(32.0, 0.01, 10000, "GB/s", "RPC engine: bytes (de)serialised per second (assumed: "
                            "32 B a cycle at 1 GHz)")
    host_field_ns: float = param(8.0, 0, 10000, "ns", "a host core (de)serialising one field (assumed: "
                                 "protobuf's generated code spends a few ns to tens of ns per field)")
    host_copy_gbps: float = param(8.0, 0.01, 10000, "GB/s", "a host core copying string bytes while "
                                  "(de)serialising (assumed: one core's memcpy from its caches)")
    host_outstanding: int = param(10, 1, 1024, "", "line fills a host core keeps in flight while it walks an "
                                  "object (a core's fill buffers: 10-16 on current x86 cores)")

    def _check(self, where: str) -> None:
        for per in (self.descriptors_per_line, self.completions_per_line):
            if self.ring_entries % per:
                raise ParamError(f"{where}.ring_entries = {self.ring_entries} is not allowed; allowed: a multiple of "
                                 f"descriptors_per_line ({self.descriptors_per_line}) and completions_per_line "
                                 f"({self.completions_per_line})")
        if self.post_batch > self.ring_entries:
            raise ParamError(f"{where}.post_batch = {self.post_batch} is not allowed; allowed: 1 to ring_entries "
                             f"({self.ring_entries})")


#: Name in the C++ schema of each group, for the sync test and the bindings.
GROUPS: Dict[str, type] = {c.__name__: c for c in (
    HostParams, DramParams, InterSocketParams, BridgeParams, SwitchParams, LinkParams,
    DeviceParams, DCacheParams, HomeParams, AccelParams, DmaParams, NicParams)}
