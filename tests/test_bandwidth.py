"""Bandwidth against the physics of links and DRAM."""

import pytest

import simcxl
from simcxl import _core
from simcxl.params import LinkParams, System

from conftest import link_bound_cxl, quiet_dram

GEN5_X16 = 32e9 * 16 * 128 / 130 / 8 / 1e9  # 63.015 GB/s per direction


def saturate(system, rf=1.0, requests=60000, threads=None, pattern="random"):
    threads = threads or system.host.cores
    return simcxl.traffic(system, threads=threads, read_fraction=rf, pattern=pattern, requests=requests).iloc[0]


@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16])
def test_raw_link_rate_is_lanes_times_rate_times_coding(lanes):
    info = _core.link_info(LinkParams(lanes=lanes).to_dict())
    assert info["raw_gbps"] == pytest.approx(GEN5_X16 * lanes / 16, rel=1e-9)
    assert info["flit_ns"] == pytest.approx(68 / info["raw_gbps"], abs=0.001)
    # 68 B flit: 64 B of slots; a DRS (64 B + half a header slot) takes 9 of 8 half-slots per flit.
    assert info["read_data_peak_gbps"] == pytest.approx(info["raw_gbps"] * 64 / 68 * 8 / 9, rel=1e-9)
    assert info["write_data_peak_gbps"] == pytest.approx(info["raw_gbps"] * 64 / 68 * 8 / 10, rel=1e-9)


def test_gen6_256b_flits():
    std = _core.link_info(LinkParams(gen=6, lanes=16, flit_bytes=256).to_dict())
    lopt = _core.link_info(LinkParams(gen=6, lanes=16, flit_bytes=256, latency_optimized=1).to_dict())
    assert std["raw_gbps"] == pytest.approx(64e9 * 16 / 8 / 1e9)
    assert std["units_per_flit"] == 30 and lopt["units_per_flit"] == 29
    assert std["read_data_peak_gbps"] == pytest.approx(128 * 30 / 256 / 9 * 64, rel=1e-9)
    assert lopt["read_data_peak_gbps"] < std["read_data_peak_gbps"]


def test_saturated_reads_fill_the_link_and_no_more():
    s = link_bound_cxl(lanes=16)
    r = saturate(s)
    peak = _core.link_info(s.cxl.link.to_dict())["read_data_peak_gbps"]
    assert r["cxl.link.s2m.data_gbps"] <= peak * 1.001
    assert r["cxl.link.s2m.data_gbps"] == pytest.approx(peak, rel=0.03)
    assert r["cxl.link.s2m.utilization"] > 0.97
    # Pure reads load the host-to-device direction only with 16 B requests.
    assert r["cxl.link.m2s.data_gbps"] == 0


def test_x16_carries_twice_x8():
    x16 = saturate(link_bound_cxl(lanes=16))["read_gbps"]
    x8 = saturate(link_bound_cxl(lanes=8))["read_gbps"]
    assert x16 / x8 == pytest.approx(2.0, rel=0.04)


def test_full_duplex_peak_at_a_mixed_ratio_on_cxl():
    s = link_bound_cxl(lanes=8)
    totals = {rf: saturate(s, rf)["total_gbps"] for rf in (1.0, 0.75, 0.5, 0.0)}
    pure = max(totals[1.0], totals[0.0])
    assert max(totals[0.75], totals[0.5]) > 1.5 * pure


def test_full_duplex_on_the_asic_preset(presets):
    s = presets["cxl-asic"]
    totals = {rf: saturate(s, rf, requests=40000)["total_gbps"] for rf in (1.0, 0.75, 0.5, 0.25, 0.0)}
    assert max(totals[0.75], totals[0.5], totals[0.25]) > 1.15 * max(totals[1.0], totals[0.0])


def test_local_ddr_has_no_full_duplex_gain(presets):
    s = presets["ddr-local"]
    totals = {rf: saturate(s, rf, requests=40000)["total_gbps"] for rf in (1.0, 0.75, 0.5)}
    # One half-duplex data bus: writes can only fill scheduling gaps, never add
    # a second direction (CXL gains well over 15% above).
    assert max(totals[0.75], totals[0.5]) <= 1.05 * totals[1.0]


@pytest.mark.parametrize("name", ["ddr-local", "ddr-remote", "cxl-asic", "cxl-fpga"])
@pytest.mark.parametrize("rf", [1.0, 0.6, 0.0])
def test_no_direction_exceeds_its_capacity(presets, name, rf):
    s = presets[name]
    r = saturate(s, rf, requests=30000)
    media = {"ddr-local": "local_dram", "ddr-remote": "remote.dram", "cxl-asic": "cxl.media",
             "cxl-fpga": "cxl.media"}[name]
    assert r[f"{media}.read_gbps"] + r[f"{media}.write_gbps"] <= r[f"{media}.peak_gbps"] * 1.001
    assert r[f"{media}.bus_utilization"] <= 1.0 + 1e-9
    if name.startswith("cxl"):
        info = _core.link_info(s.cxl.link.to_dict())
        assert r["cxl.link.s2m.data_gbps"] <= info["read_data_peak_gbps"] * 1.001
        assert r["cxl.link.m2s.data_gbps"] <= info["write_data_peak_gbps"] * 1.001
        assert r["cxl.link.s2m.utilization"] <= 1.0 and r["cxl.link.m2s.utilization"] <= 1.0
    if name == "ddr-remote":
        cap = s.remote.link.bandwidth_gbps
        assert r["remote.link.back.data_gbps"] <= cap * 64 / 80 * 1.001


def test_sequential_reads_reach_most_of_dram_peak():
    # A few streams, enough misses in flight to cover the latency.
    s = System("t", "local-dram", local_dram=quiet_dram()).replace(**{"host.cores": 8})
    r = saturate(s, pattern="sequential")
    assert r["local_dram.row_hit_rate"] > 0.5
    assert 0.8 * r["local_dram.peak_gbps"] < r["read_gbps"] <= r["local_dram.peak_gbps"]
    rnd = saturate(s, pattern="random")
    assert rnd["local_dram.row_hit_rate"] < 0.05
    assert rnd["read_gbps"] <= r["local_dram.peak_gbps"]


def test_devload_rises_with_load(presets):
    s = presets["cxl-asic"]
    light = simcxl.traffic(s, threads=1, requests=5000).iloc[0]
    heavy = saturate(s, requests=40000)
    assert light["cxl.device.devload_light"] > 0
    assert light["cxl.device.devload_moderate"] + light["cxl.device.devload_severe"] == 0
    assert heavy["cxl.device.devload_moderate"] + heavy["cxl.device.devload_severe"] > \
        heavy["cxl.device.devload_light"]


def test_crc_errors_cost_replays():
    clean = link_bound_cxl(lanes=4)
    noisy = clean.replace(**{"cxl.link.bit_error_rate": 1e-5})
    a, b = saturate(clean, requests=30000), saturate(noisy, requests=30000)
    assert a["cxl.link.s2m.crc_errors"] == 0 and a["cxl.link.s2m.replayed_flits"] == 0
    flits = b["cxl.link.s2m.flits"]
    p_flit = 1 - (1 - 1e-5) ** (68 * 8)
    assert b["cxl.link.s2m.crc_errors"] == pytest.approx(flits * p_flit, rel=0.25)
    assert b["cxl.link.s2m.replayed_flits"] > b["cxl.link.s2m.crc_errors"]
    assert b["read_gbps"] < a["read_gbps"]
    assert b["read_latency_ns_p99"] >= a["read_latency_ns_p99"]


def test_two_interleaved_root_ports_double_link_bound_bandwidth():
    one = link_bound_cxl(lanes=4)
    two = one.replace(**{"cxl.bridge.root_ports": 2, "cxl.bridge.interleave_ways": 2,
                         "cxl.bridge.interleave_bytes": 256})
    a, b = saturate(one), saturate(two)
    assert b["read_gbps"] / a["read_gbps"] == pytest.approx(2.0, rel=0.05)
    assert b["cxl0.link.s2m.data_gbps"] == pytest.approx(b["cxl1.link.s2m.data_gbps"], rel=0.05)


@pytest.mark.parametrize("ways", [1, 2, 3, 4, 6, 8, 12, 16])
def test_hdm_decode_round_trips(ways):
    gran = 1024
    hpas = [i * 64 for i in range(0, 5000, 7)] + [(1 << 33) + 192, (1 << 40) + 4096 * 3 + 8]
    out = _core.hdm_decode(ways, gran, hpas)
    for hpa, (port, dpa, back) in zip(hpas, out):
        assert back == hpa
        assert port == (hpa // gran) % ways
        assert dpa % gran == hpa % gran
    # Consecutive granules spread evenly over the ports.
    ports = [p for p, _, _ in _core.hdm_decode(ways, gran, [i * gran for i in range(ways * 100)])]
    assert all(ports.count(p) == 100 for p in range(ways))


def test_hdm_rejects_ways_the_spec_does_not_allow():
    with pytest.raises(_core.ConfigError, match="interleave_ways = 5 is not allowed; allowed values: 1, 2, 3, 4, 6, 8, 12, 16"):
        _core.hdm_decode(5, 1024, [0])
    with pytest.raises(_core.ConfigError, match="interleave_bytes = 100 is out of range; allowed: 256 to 16384"):
        _core.hdm_decode(2, 100, [0])
