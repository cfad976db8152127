"""Idle latency equals the sum of the stages a request passes, computed by hand."""

import math

import pytest

import simcxl
from simcxl import _core
from simcxl.engine.standalone import STAGES
from simcxl.config.groups import InterSocketParams, LinkParams
from simcxl.config.params import CxlMemory, RemoteMemory, System
from simcxl.topology import core_graph

from conftest import link_bound_cxl, quiet_dram

REQUESTS = 2000


def idle_read(system: System) -> dict:
    """One core, one outstanding read, always the same line: every access is a
    row hit after the first, and nothing queues."""
    s = system.replace(**{"host.mshrs_per_core": 1})
    df = simcxl.traffic(s, threads=1, read_fraction=1.0, pattern="sequential", footprint_bytes=64,
                        requests=REQUESTS)
    return df.iloc[0].to_dict()


def dram_hit_ns(d) -> float:
    burst = 2000.0 / d.data_rate_mts * d.burst_length / 2
    return d.frontend_latency_ns + d.tCL_ns + burst + d.backend_latency_ns


def host_ns(h) -> float:
    return h.llc_latency_ns + h.uncore_req_latency_ns + h.uncore_resp_latency_ns


def test_local_dram_idle_latency_is_sum_of_stages():
    s = System("t", "local-dram", local_dram=quiet_dram())
    r = idle_read(s)
    expected = host_ns(s.host) + dram_hit_ns(s.local_dram)
    assert r["read_latency_ns_mean"] == pytest.approx(expected, abs=0.01)
    assert r["local_dram.row_hit_rate"] > 0.99


def test_remote_idle_latency_adds_link_both_ways():
    link = InterSocketParams(latency_ns=40.0, bandwidth_gbps=32.0, req_bytes=16, data_bytes=80)
    s = System("t", "remote-numa", local_dram=quiet_dram(), remote=RemoteMemory(link=link, dram=quiet_dram()))
    r = idle_read(s)
    # 16-byte transfer units: a request is 1 unit, a data response 5.
    unit_ns = 16 / link.bandwidth_gbps
    expected = host_ns(s.host) + dram_hit_ns(s.remote.dram) + 2 * link.latency_ns + unit_ns * (1 + 5)
    assert r["read_latency_ns_mean"] == pytest.approx(expected, abs=0.01)


def cxl_idle(lanes, flit, lopt):
    cxl = CxlMemory(link=LinkParams(lanes=lanes, flit_bytes=flit, latency_optimized=lopt, phy_latency_ns=21.0),
                    media=quiet_dram())
    return System("t", "cxl-type3", local_dram=quiet_dram(), cxl=cxl)


@pytest.mark.parametrize("lanes,flit,lopt", [(16, 68, 0), (8, 68, 0), (4, 68, 0), (16, 256, 0), (16, 256, 1)])
def test_cxl_idle_latency_is_sum_of_stages(lanes, flit, lopt):
    s = cxl_idle(lanes, flit, lopt)
    cxl = s.cxl
    r = idle_read(s)
    flit_ps = flit * 8 / (32e9 * lanes * 128 / 130) * 1e12  # 1079.1015625 ps for 68 B on x16
    # On an idle link a message starts a flit of its own at a whole tick and
    # is received at the first tick at or after the end of the flit that
    # ends it: a DRS (header + 64 B, 9 of a 68 B flit's 8 half-slots) needs two.
    # The latency-optimised flit checks each 128 B half on its own, and both
    # messages fit in the first half (15 half-slots).
    req_ps = flit_ps / 2 if lopt else flit_ps
    drs_ps = flit_ps / 2 if lopt else (2 if flit == 68 else 1) * flit_ps
    expected = (host_ns(s.host) + cxl.bridge.req_latency_ns + cxl.bridge.resp_latency_ns
                + math.ceil(req_ps) / 1000 + cxl.link.phy_latency_ns     # M2S Req
                + cxl.device.req_latency_ns + dram_hit_ns(cxl.media) + cxl.device.resp_latency_ns
                + math.ceil(drs_ps) / 1000 + cxl.link.phy_latency_ns)    # S2M DRS
    assert r["read_latency_ns_mean"] == pytest.approx(expected, abs=0.003)


def test_latency_optimised_flit_saves_half_a_flit_each_way():
    # Gen5 x16 256 B flit: 256 B / 63.015 GB/s = 4.0625 ns. Request and data
    # response each end in the first half, so each is usable 2.03 ns earlier.
    std = idle_read(cxl_idle(16, 256, 0))["read_latency_ns_mean"]
    lopt = idle_read(cxl_idle(16, 256, 1))["read_latency_ns_mean"]
    assert std - lopt == pytest.approx(4.0625, abs=0.002)


def test_a_message_ending_in_the_second_half_waits_for_the_whole_flit(tmp_path):
    # Two writes issued together share one M2S flit F = 4.0625 ns. An RwD is
    # 10 half-slots: the first ends inside the first half (15), the second in
    # the second half, so only the first is usable at F/2. Its completion
    # (NDR, one half-slot) leaves F/2 before the second's and is usable F/2
    # into its flit: the first write gains F. The second's NDR finds the wire
    # busy with that flit until its end and is usable F/2 into the next one,
    # when the standard flit carrying both NDRs ends: it gains nothing.
    trace = tmp_path / "two.trace"
    trace.write_text("0 W 0x0\n0 W 0x40000\n")
    lat = {}
    for lopt in (0, 1):
        r = simcxl.trace(cxl_idle(16, 256, lopt), trace, max_outstanding=2).iloc[0]
        lat[lopt] = (r["write_latency_ns_mean"], r["write_latency_ns_max"])
    flit = 4.0625
    assert lat[0][0] - lat[1][0] == pytest.approx(flit / 2, abs=0.002)
    assert lat[0][1] == pytest.approx(lat[1][1], abs=0.002)


def extra_reads_ps(system, folder):
    """How much longer 8000 reads issued at once take than 4000, in ps."""
    window = {}
    for n in (4000, 8000):
        trace = folder / f"{n}.trace"
        trace.write_text("".join(f"0 R {i * 64:#x}\n" for i in range(n)))
        window[n] = simcxl.trace(system, trace, max_outstanding=n).iloc[0]["window_ns"] * 1000
    return window[8000] - window[4000]


def test_back_to_back_flits_keep_exact_time(tmp_path):
    # Gen5 x16: a 68 B flit lasts 68 * 8 / (32e9 * 16 * 128/130) s =
    # 1079.1015625 ps, not a whole number of ticks. N reads issued at once on
    # a link-bound system keep the device-to-host direction busy back to
    # back: 9 half-slots per DRS, 8 per flit, so N more reads take 9N/8 more
    # flits. Rounding each flit to 1079 ps would lose 0.1 ps per flit.
    s = link_bound_cxl(lanes=16)
    assert extra_reads_ps(s, tmp_path) == pytest.approx(4000 * 9 / 8 * 1079.1015625, abs=1.0)


def test_back_to_back_units_on_the_socket_link_keep_exact_time(tmp_path):
    # 12 GB/s: a 16 B unit lasts 1333.33 ps; a data response is 80 B, 5
    # units. N more link-bound reads take 5N more units on the way back.
    link = InterSocketParams(latency_ns=40.0, bandwidth_gbps=12.0, req_bytes=16, data_bytes=80, max_outstanding=4096)
    s = System("t", "remote-numa", local_dram=quiet_dram(),
               remote=RemoteMemory(link=link, dram=quiet_dram(channels=32, read_queue=256))).validate()
    assert extra_reads_ps(s, tmp_path) == pytest.approx(4000 * 5 * 16 / 12 * 1000, abs=1.0)


def test_breakdown_adds_up_to_the_latency(presets):
    for name in ("ddr-local", "ddr-remote", "cxl-asic"):
        df = simcxl.traffic(presets[name], threads=4, read_fraction=0.7, requests=20000)
        r = df.iloc[0]
        total = sum(r[f"read.stage.{s}_ns"] for s in STAGES)
        assert total == pytest.approx(r["read_latency_ns_mean"], rel=1e-6)
        long = simcxl.breakdown(df, "read")
        assert set(long["stage"]) == set(STAGES)


def test_breakdown_stages_land_where_they_belong(presets):
    local = simcxl.traffic(presets["ddr-local"], threads=1, requests=5000).iloc[0]
    for s in ("host_port", "link_down", "link_up", "device"):
        assert local[f"read.stage.{s}_ns"] == 0
    cxl = simcxl.traffic(presets["cxl-asic"], threads=1, requests=5000).iloc[0]
    link = presets["cxl-asic"].cxl.link
    assert cxl["read.stage.link_down_ns"] >= link.phy_latency_ns
    assert cxl["read.stage.link_up_ns"] >= link.phy_latency_ns
    dev = presets["cxl-asic"].cxl.device
    # Stages are whole picoseconds; the sum of two ns figures may round a bit above them.
    assert cxl["read.stage.device_ns"] >= dev.req_latency_ns + dev.resp_latency_ns - 1e-6


def test_refresh_adds_latency_and_happens_every_trefi():
    quiet = System("t", "local-dram", local_dram=quiet_dram())
    refreshing = quiet.replace(**{"local_dram.tREFI_ns": 3900.0})
    a = simcxl.traffic(quiet, threads=1, requests=20000).iloc[0]
    b = simcxl.traffic(refreshing, threads=1, requests=20000).iloc[0]
    assert a["local_dram.refreshes"] == 0
    ranks = refreshing.local_dram.channels * refreshing.local_dram.ranks
    expected = b["window_ns"] / 3900.0 * ranks
    assert b["local_dram.refreshes"] == pytest.approx(expected, rel=0.1)
    assert b["read_latency_ns_mean"] > a["read_latency_ns_mean"]


def test_row_conflicts_cost_precharge_and_activate():
    d = quiet_dram()
    s = System("t", "local-dram", local_dram=d).replace(**{"host.mshrs_per_core": 1})
    hit = idle_read(System("t", "local-dram", local_dram=d))["read_latency_ns_mean"]
    rnd = simcxl.traffic(s, threads=1, pattern="random", footprint_bytes=1 << 30, requests=5000).iloc[0]
    # Random lines over 1 GiB almost always find another row open in their bank.
    assert rnd["local_dram.row_conflict_rate"] > 0.9
    assert rnd["read_latency_ns_mean"] == pytest.approx(hit + d.tRP_ns + d.tRCD_ns, abs=2.0)


def test_core_raises_on_values_python_would_catch_too():
    bad = core_graph(System("t", "local-dram"))
    bad["components"]["local_dram"]["tRCD_ns"] = -1
    with pytest.raises(_core.ConfigError, match=r"local_dram.tRCD_ns = -1 is out of range; allowed: 0 to 200"):
        _core.validate(bad)
