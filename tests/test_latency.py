"""Idle latency equals the sum of the stages a request passes, computed by hand."""

import pytest

import simcxl
from simcxl import _core
from simcxl.engine import STAGES
from simcxl.params import CxlMemory, InterSocketParams, LinkParams, RemoteMemory, System

from conftest import quiet_dram

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


@pytest.mark.parametrize("lanes,flit,lopt", [(16, 68, 0), (8, 68, 0), (4, 68, 0), (16, 256, 0), (16, 256, 1)])
def test_cxl_idle_latency_is_sum_of_stages(lanes, flit, lopt):
    cxl = CxlMemory(link=LinkParams(lanes=lanes, flit_bytes=flit, latency_optimized=lopt, phy_latency_ns=21.0),
                    media=quiet_dram())
    s = System("t", "cxl-type3", local_dram=quiet_dram(), cxl=cxl)
    r = idle_read(s)
    flit_ns = round(flit / cxl.link.raw_gbps, 3)  # picosecond resolution
    units = 8 if flit == 68 else (29 if lopt else 30)
    drs_flits = 2 if 9 > units else 1  # a DRS (header + 64 B) needs 9 half-slots
    expected = (host_ns(s.host) + cxl.bridge.req_latency_ns + cxl.bridge.resp_latency_ns
                + flit_ns + cxl.link.phy_latency_ns                       # M2S Req: one flit
                + cxl.device.req_latency_ns + dram_hit_ns(cxl.media) + cxl.device.resp_latency_ns
                + drs_flits * flit_ns + cxl.link.phy_latency_ns)          # S2M DRS
    assert r["read_latency_ns_mean"] == pytest.approx(expected, abs=0.02)


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
    for s in ("host_port", "link_req", "link_resp", "device"):
        assert local[f"read.stage.{s}_ns"] == 0
    cxl = simcxl.traffic(presets["cxl-asic"], threads=1, requests=5000).iloc[0]
    link = presets["cxl-asic"].cxl.link
    assert cxl["read.stage.link_req_ns"] >= link.phy_latency_ns
    assert cxl["read.stage.link_resp_ns"] >= link.phy_latency_ns
    dev = presets["cxl-asic"].cxl.device
    assert cxl["read.stage.device_ns"] >= dev.req_latency_ns + dev.resp_latency_ns


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
    bad = System("t", "local-dram").to_core()
    bad["local_dram"]["tRCD_ns"] = -1
    with pytest.raises(_core.ConfigError, match=r"local_dram.tRCD_ns = -1 is out of range; allowed: 0 to 200"):
        _core.validate(bad)
