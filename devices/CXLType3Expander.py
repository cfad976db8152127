# One CXL Type-3 memory expander behind a root port of a CXLHostBridge (or a
# downstream port of a CXLSwitch), as a gem5 SimObject: its link, device controller and DRAM media. Its parameters
# are the fields of simcxl.config.groups LinkParams, DeviceParams and the media's
# DramParams with the group as prefix, GENERATED between the BEGIN/END
# GENERATED PARAMS markers by `python -m simcxl.config.schema_gen` from
# simcxl/config/groups.py (edit the dataclasses and rerun it); the rest of the file
# is hand-written. Build-time file: imports m5 only.

from m5.objects.CXLPortTarget import CXLPortTarget
from m5.params import *


class CXLType3Expander(CXLPortTarget):
    """A CXL link and Type-3 device with DRAM media, timed by the SimCXL core.
    Not a memory: the host bridge it sits behind holds the data; this object
    holds the device's timing state and its stats."""

    type = "CXLType3Expander"
    cxx_header = "devices/cxl_type3_expander.hh"
    cxx_class = "gem5::CXLType3Expander"

    seed = Param.Unsigned(1, "Seed of the link's CRC error draws")
    fault_device_stops_after = Param.Unsigned(
        0, "Fault injection for tests of the progress watchdog: the device sends no response after this many (0: off)")

    # BEGIN GENERATED PARAMS by `python -m simcxl.config.schema_gen` from simcxl/config/groups.py:
    # LinkParams, DeviceParams, DramParams. Edit the dataclasses there and rerun it, not these lines.
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
    # device_*: DeviceParams. A CXL Type-3 device controller in front of its media.
    device_req_latency_ns = Param.Float(30.0, "ingress pipeline: link/transaction layers to media (ns, 0 to 10000)")
    device_resp_latency_ns = Param.Float(20.0, "egress pipeline: media to link (ns, 0 to 10000)")
    device_req_queue = Param.Unsigned(64, "transactions the controller holds at once (1 to 65536)")
    device_resp_queue = Param.Unsigned(64, "responses waiting for the link (1 to 65536)")
    device_write_tracker = Param.Unsigned(
        0, "writes the controller holds at once (its write buffer, within req_queue); an entry frees when the "
        "write's completion leaves (with media.posted_writes = 0, once the media has written the line); a "
        "write finding none free waits in the link's receive buffer, holding its RwD credit. 0: none (0 to "
        "65536)")
    device_devload_optimal = Param.Float(0.25, "mean queue fill over a qos interval for DevLoad Optimal (0 to 1)")
    device_devload_moderate = Param.Float(0.75, "mean queue fill for Moderate overload (0 to 1)")
    device_devload_severe = Param.Float(0.95, "mean queue fill for Severe overload (0 to 1)")
    device_logical_devices = Param.Unsigned(
        1, "1: an SLD; N: an MLD, an LD (1/N of its DPA) per host reaching it (1 to 16)")
    device_qos_interval_ns = Param.Float(
        1000.0, "QoS telemetry: each LD's completions are counted over it (ns, 10 to 1000000)")
    device_dynamic_capacity = Param.Unsigned(
        0, "1: a DCD, each LD backed only where the fabric manager added extents (one of 0, 1)")
    device_shared = Param.Unsigned(
        0, "1: one region all hosts reaching it map, coherent by HDM-DB back-invalidate (one of 0, 1)")
    device_snoop_filter_entries = Param.Unsigned(
        16384, "lines the snoop filter of a shared device tracks (16 to 16777216)")
    device_snoop_filter_ways = Param.Unsigned(16, "snoop filter associativity (entries divisible by it) (1 to 64)")
    device_snoop_filter_victim = Param.Unsigned(0, "snoop filter victim: 0 least recently used, 1 random (one of 0, 1)")
    # media_*: DramParams. A DRAM controller and its devices. A channel is an independent data bus (DDR5:
    # one 32-bit sub-channel; DDR4: one 64-bit channel).
    media_channels = Param.Unsigned(2, "independent channels (DDR5: 2 per DIMM channel) (1 to 64)")
    media_ranks = Param.Unsigned(1, "ranks per channel (1 to 16)")
    media_bank_groups = Param.Unsigned(8, "bank groups per rank (1 to 16)")
    media_banks_per_group = Param.Unsigned(4, "banks per bank group (1 to 16)")
    media_row_bytes = Param.Unsigned(4096, "row (page) size per channel (B, 256 to 65536)")
    media_data_rate_mts = Param.Float(4800.0, "transfers per second per pin (MT/s, 100 to 20000)")
    media_bus_bytes = Param.Unsigned(4, "data bus width per channel (B, 1 to 64)")
    media_burst_length = Param.Unsigned(16, "beats per burst (bus_bytes x burst_length = 64) (1 to 64)")
    media_interleave_bytes = Param.Unsigned(256, "channel interleave granularity (B, 64 to 65536)")
    media_tRCD_ns = Param.Float(16.67, "activate to column command (ns, 0 to 200)")
    media_tCL_ns = Param.Float(16.67, "read CAS latency (ns, 0 to 200)")
    media_tCWL_ns = Param.Float(15.83, "write CAS latency (ns, 0 to 200)")
    media_tRP_ns = Param.Float(16.67, "precharge (ns, 0 to 200)")
    media_tRAS_ns = Param.Float(32.0, "activate to precharge (ns, 0 to 500)")
    media_tWR_ns = Param.Float(30.0, "write recovery (ns, 0 to 500)")
    media_tWTR_ns = Param.Float(
        10.0, "end of write data to a read command, same rank and bank group (JEDEC tWTR_L) (ns, 0 to 200)")
    media_tWTR_S_ns = Param.Float(
        2.5, "end of write data to a read command, same rank, another bank group (ns, 0 to 200)")
    media_tRTW_ns = Param.Float(5.0, "read data to write data (bus turnaround) (ns, 0 to 200)")
    media_tRTP_ns = Param.Float(7.5, "read command to precharge, same bank (ns, 0 to 200)")
    media_tRTRS_ns = Param.Float(0.83, "gap between data bursts of two ranks (bus hand-over) (ns, 0 to 100)")
    media_tRRD_ns = Param.Float(
        3.33, "activate to activate, same rank, another bank group (JEDEC tRRD_S) (ns, 0 to 200)")
    media_tRRD_L_ns = Param.Float(5.0, "activate to activate, same rank and bank group (ns, 0 to 200)")
    media_tFAW_ns = Param.Float(13.33, "four-activate window (ns, 0 to 500)")
    media_tCCD_S_ns = Param.Float(3.33, "column to column, same rank, another bank group (ns, 0 to 100)")
    media_tCCD_L_ns = Param.Float(5.0, "column to column, same bank group (ns, 0 to 100)")
    media_tREFI_ns = Param.Float(3900.0, "average interval of all-bank refreshes (0: no refresh) (ns, 0 to 100000)")
    media_tRFC_ns = Param.Float(295.0, "all-bank refresh cycle time (ns, 0 to 5000)")
    media_refresh_per_bank = Param.Unsigned(
        0, "0: all-bank refresh every tREFI; 1: same-bank refresh (DDR5 REFsb, fine-granularity mode), one "
        "bank of every group every tREFI / (2 x banks_per_group), for tRFCsb: each bank once per tREFI2 = "
        "tREFI / 2 (one of 0, 1)")
    media_tRFCsb_ns = Param.Float(130.0, "same-bank refresh cycle time (ns, 0 to 5000)")
    media_refresh_postpone = Param.Unsigned(
        4, "refreshes a rank with queued requests may postpone, caught up back to back at the limit or as "
        "soon as the rank is idle (0 to 8)")
    media_read_queue = Param.Unsigned(64, "read queue entries per channel (1 to 4096)")
    media_write_queue = Param.Unsigned(64, "write queue entries per channel (1 to 4096)")
    media_write_buffer = Param.Unsigned(
        0, "posted writes the controller holds over all its channels until their data is written (0: only the "
        "per-channel write queues limit them) (0 to 65536)")
    media_posted_writes = Param.Unsigned(
        1, "1: a write is acknowledged once in the write queue (posted); 0: once its data is written (one of "
        "0, 1)")
    media_write_high_watermark = Param.Float(0.85, "write-queue fill that starts a write burst (0.01 to 1)")
    media_write_low_watermark = Param.Float(0.5, "write-queue fill that may end a write burst (0 to 0.99)")
    media_min_writes_per_switch = Param.Unsigned(16, "writes per burst before turning back to reads (1 to 4096)")
    media_max_writes_per_switch = Param.Unsigned(
        0, "writes per burst after which waiting reads take the bus back, however full the write queue (0: "
        "only the low watermark ends a burst) (0 to 4096)")
    media_page_policy = Param.Unsigned(
        0, "0: open page, a row stays open until another or a refresh closes it; 1: closed adaptive, a row "
        "closes after an access no queued request hits; 2: open with an adaptive idle timer per bank, a row "
        "closes when it has been idle that long (one of 0, 1, 2)")
    media_page_timeout_ns = Param.Float(
        50.0, "page_policy 2: the shortest idle time after a row's last column command before the controller "
        "precharges it (no earlier than tRAS, tRTP or tWR allow), and each bank's timer at the start (ns, 0 "
        "to 100000)")
    media_page_timeout_max_ns = Param.Float(
        400.0, "page_policy 2: the longest timer; a bank's timer doubles when the row it closed is the next "
        "one wanted (closed too soon) and halves when the next access finds another row still open (closed "
        "too late) (ns, 0 to 100000)")
    media_frontend_latency_ns = Param.Float(5.0, "controller front end (request to queue) (ns, 0 to 1000)")
    media_backend_latency_ns = Param.Float(5.0, "controller back end (data to response) (ns, 0 to 1000)")
    # END GENERATED PARAMS
