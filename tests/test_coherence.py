"""CXL.cache: coherence under a checker, bias flips and back-invalidates,
physics of the latency and bandwidth, and the DMA comparison."""

import json

import pytest
from click.testing import CliRunner

from simcxl import _core
from simcxl.workloads import coherent
from simcxl.cli import main
from simcxl.config.params import ParamError
from simcxl.topology import core_graph

from conftest import REPO

TYPE2_MODES = {
    "host-bias-via-host": {"accel.type": 2, "accel.auto_bias_flip": 0, "accel.device_bias": 0},
    "bias-flips": {"accel.type": 2, "accel.auto_bias_flip": 1, "accel.device_bias": 0},
    "device-bias-start": {"accel.type": 2, "accel.auto_bias_flip": 1, "accel.device_bias": 1},
    "hdm-db": {"accel.type": 2, "accel.hdm_db": 1},
}


def system(preset="type1-asic", **kw):
    return coherent.load(preset).replace(**kw)


# ---------------------------------------------------------------- coherence

def test_two_million_random_ops_on_eight_lines_keep_swmr_and_data():
    s = system(**{"accel.devices": 2})
    r = coherent.stress(s, ops=2_000_000, lines=8, host_threads=4, device_requesters=4)
    assert r["detail"] == ""
    assert r["deadlock"] == 0 and r["ops"] == 2_000_000
    assert r["checker_violations"] == 0
    assert r["checker_checks"] > 4_000_000  # every access and state change was checked
    # The run exercised the protocol, not just hits.
    for k in ("home.snoops_snpdata", "home.snoops_snpinv", "home.snoops_snpcur", "home.requests_itomwr", "home.requests_rdany",
              "home.requests_wrinv", "home.requests_rdcurr", "home.conflicts"):
        assert r[k] > 100, k
    # Every message was consumed: nothing left anywhere, and the message pool stayed tiny.
    assert r["quiet_at_end"] == 1
    assert r["messages_allocated"] < 200
    assert r["home.max_tracker"] <= 2 * 4 + 4


@pytest.mark.parametrize("mode", sorted(TYPE2_MODES))
def test_type2_device_memory_stays_coherent(mode):
    s = system(**{"accel.devices": 2, **TYPE2_MODES[mode]})
    r = coherent.stress(s, ops=400_000, lines=16, host_threads=4, device_requesters=4, device_memory_fraction=0.6)
    assert r["detail"] == "" and r["checker_violations"] == 0 and r["deadlock"] == 0
    assert r["quiet_at_end"] == 1
    if mode == "hdm-db":
        assert r["dev0.dcoh.back_invalidates"] > 1000 and r["home.back_invalidates"] == r["dev0.dcoh.back_invalidates"]
        assert r["dev0.dcoh.bias_flips_to_device"] == r["dev0.dcoh.bias_flips_to_host"] == 0
    elif mode == "host-bias-via-host":
        assert r["dev0.memory.via_host"] > 1000  # MemRdFwd: the host resolves, the device reads locally
        assert r["dev0.dcoh.bias_flips_to_device"] == 0
    else:
        assert r["dev0.dcoh.bias_flips_to_device"] > 100 and r["dev0.dcoh.bias_flips_to_host"] > 100
        assert r["home.requests_biasflipreq"] == r["dev0.dcoh.bias_flips_to_device"]


@pytest.mark.parametrize("bug,message", [("snpinv-keeps-copy", "single-writer/multiple-reader violated"),
                                         ("drop-dirty-data", "stale data")])
def test_injected_protocol_bug_is_caught(bug, message):
    r = coherent.stress(system(**{"accel.devices": 2}), ops=100_000, inject=bug)
    assert r["checker_violations"] > 0
    assert message in r["detail"]


def test_stress_cli_exits_nonzero_on_violation():
    res = CliRunner().invoke(main, ["run", "coherence-stress", "--ops", "20000", "--inject", "drop-dirty-data"])
    assert res.exit_code == 1 and "VIOLATIONS" in res.output and "stale data" in res.output
    res = CliRunner().invoke(main, ["run", "coherence-stress", "--ops", "20000"])
    assert res.exit_code == 0, res.output
    assert " 0 violations: ok" in res.output


def test_sharing_moves_values_between_host_and_device():
    s = system("type1-fpga")
    pp = coherent.sharing(s, "pingpong", rounds=300).iloc[0]
    assert pp["handoffs"] == 300 and pp["checker_violations"] == 0
    # A handoff needs at least a snoop round trip over the link.
    one_way = s.device().link.phy_latency_ns
    assert pp["handoff_ns"] > 2 * one_way + s.home.latency_ns
    assert pp["dev0.cache.snoops_snpinv"] + pp["dev0.cache.snoops_snpdata"] >= 300
    pc = coherent.sharing(s, "producer-consumer", lines=256).iloc[0]
    assert pc["checker_violations"] == 0
    assert pc["host_to_device_consume_gbps"] > 0 and pc["device_to_host_consume_gbps"] > 0
    # Device-produced lines are dirty in the device: the host's reads snoop them out.
    assert pc["home.snoops_snpdata"] >= 256


def test_rdany_grants_exclusive_when_alone_and_shared_otherwise():
    kw = dict(pattern="random", footprint="64k", requests=20_000)
    alone = coherent.accel("type1-asic", "rdany", **kw).iloc[0]
    assert alone["home.requests_rdany"] == alone["dev0.cache.misses"] > 0
    assert alone["dev0.cache.fills_exclusive"] == alone["dev0.cache.misses"] and alone["dev0.cache.fills_shared"] == 0
    shared = coherent.accel("type1-asic", "load", **kw).iloc[0]  # RdShared never grants E
    assert shared["dev0.cache.fills_exclusive"] == 0 and shared["dev0.cache.fills_shared"] == shared["dev0.cache.misses"]
    # With host cores reading the same lines, RdAny gets S for lines the host holds.
    busy = coherent.accel("type1-asic", "rdany", host_threads=4, host_store_fraction=0.0, **kw).iloc[0]
    assert busy["dev0.cache.fills_shared"] > 0 and busy["dev0.cache.fills_exclusive"] > 0


def test_message_buffers_stay_bounded_however_long_the_run():
    runs = [coherent.accel("type1-asic", "store", "random", footprint="1m", requests=n, host_threads=4).iloc[0]
            for n in (50_000, 500_000)]
    assert runs[1]["dev0.cache.stores"] == 500_000
    # messages_allocated: the one pool of accesses and protocol messages.
    for key in ("messages_allocated", "home.max_tracker", "dev0.cache.max_mshrs"):
        assert runs[1][key] <= runs[0][key] * 1.5 + 8, key
    assert runs[1]["quiet_at_end"] == 1
    assert runs[1]["home.max_tracker"] <= coherent.load("type1-asic").home.tracker


# ---------------------------------------------------------------- physics

def test_idle_miss_latency_is_the_sum_of_its_stages():
    s = system()
    dev = s.device()
    r = coherent.accel(s, "load", "sequential", requesters=1, depth=1, footprint="64m", requests=2000).iloc[0]
    stages = sum(r[f"stage_{st}_ns"] for st in coherent.STAGES)
    assert r["latency_mean_ns"] == pytest.approx(stages, rel=1e-6)
    assert r["hit_rate"] == 0
    assert r["stage_cache_ns"] == pytest.approx(dev.cache.latency_ns)
    assert r["stage_host_uncore_ns"] == pytest.approx(s.home.latency_ns)
    flit = 68 / dev.link.raw_gbps
    for d in ("link_up", "link_down"):
        assert dev.link.phy_latency_ns + flit - 1e-3 <= r[f"stage_{d}_ns"] <= dev.link.phy_latency_ns + 3 * flit
    # Idle DRAM: at least the column access and the burst, all of it service.
    assert r["stage_media_service_ns"] >= s.local_dram.tCL_ns


def test_bandwidth_follows_littles_law_and_respects_the_link():
    s = system(**{"cache.mshrs": 32})
    r = coherent.accel(s, "load", "random", requesters=8, depth=16, footprint="256m", requests=100_000).iloc[0]
    # Closed loop: 128 accesses always in flight, so bandwidth = 128 lines / latency.
    assert r["bandwidth_gbps"] == pytest.approx(128 * 64 / r["latency_mean_ns"], rel=0.03)
    # Only 32 MSHRs serve them: the rest wait, and the served ones obey the same law.
    served = r["latency_mean_ns"] - r["stage_queue_ns"]
    assert r["stage_queue_ns"] > served
    assert r["bandwidth_gbps"] <= 32 * 64 / served * 1.05
    peak = _core.link_info(s.device().link.to_dict())["read_data_peak_gbps"]
    wide = system(**{"cache.mshrs": 4096, "cache.credits_d2h_req": 4096, "home.tracker": 4096,
                     "local_dram.channels": 16, "cache.credits_h2d_data": 4096, "cache.credits_h2d_rsp": 4096})
    r2 = coherent.accel(wide, "rdcurr", "random", requesters=64, depth=64, footprint="1g", requests=200_000).iloc[0]
    assert r2["bandwidth_gbps"] <= peak * 1.001
    assert r2["bandwidth_gbps"] > 0.8 * peak  # wide open, the host-to-device data direction saturates


def test_bias_flip_and_back_invalidate_show_in_the_breakdown():
    flips = coherent.accel(system("type2-bias"), "load", "random", target="device", footprint="256k",
                           requests=20_000, host_threads=2).iloc[0]
    assert flips["dev0.dcoh.bias_flips_to_device"] > 0 and flips["dev0.dcoh.bias_flips_to_host"] > 0
    assert flips["stage_bias_flip_ns"] > 0
    bi = coherent.accel(system("type2-hdmdb"), "store", "random", target="device", footprint="256k",
                        requests=20_000, host_threads=2).iloc[0]
    assert bi["dev0.dcoh.back_invalidates"] > 0 and bi["stage_back_invalidate_ns"] > 0
    assert bi["dev0.dcoh.bias_flips_to_device"] == 0
    # Without host interference device memory is local: no flips after the first touch of each page.
    quiet = coherent.accel(system("type2-bias"), "load", "random", target="device", footprint="64k",
                           requests=20_000).iloc[0]
    assert quiet["dev0.dcoh.bias_flips_to_device"] == 64 * 1024 // 4096
    assert quiet["dev0.dcoh.bias_flips_to_host"] == 0


def test_device_bias_is_faster_than_going_through_the_host():
    local = coherent.accel(system("type2-bias", **{"accel.device_bias": 1}), "load", "sequential",
                           target="device", requesters=1, depth=1, footprint="64m", requests=2000).iloc[0]
    via_host = coherent.accel(system("type2-bias", **{"accel.auto_bias_flip": 0}), "load", "sequential",
                              target="device", requesters=1, depth=1, footprint="64m", requests=2000).iloc[0]
    assert local["stage_link_up_ns"] == 0 and local["stage_host_uncore_ns"] == 0
    assert via_host["latency_mean_ns"] > local["latency_mean_ns"] + 2 * via_host["stage_link_up_ns"] * 0.9


def test_runs_are_deterministic():
    a = coherent.accel("type1-asic", "store", "random", requests=20_000, host_threads=2)
    b = coherent.accel("type1-asic", "store", "random", requests=20_000, host_threads=2)
    assert a.drop(columns=[]).equals(b)


# ---------------------------------------------------------------- DMA vs CXL.cache

def test_dma_vs_cache_json_and_physics(tmp_path):
    res = CliRunner().invoke(main, ["run", "dma-vs-cache", "--sizes", "64,4096,262144", "--json",
                                    "--plot", str(tmp_path / "p.png")])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert all(set(r) == {"transfer_bytes", "mechanism", "latency_ns", "bandwidth_gbps"} for r in rows)
    assert {r["mechanism"] for r in rows} == {"dma", "cxl.cache"}
    assert sorted({r["transfer_bytes"] for r in rows}) == [64, 4096, 262144]
    assert (tmp_path / "p.png").stat().st_size > 10_000
    by = {(r["transfer_bytes"], r["mechanism"]): r for r in rows}
    # At one line CXL.cache is several times faster; DMA pays its control round trips.
    assert by[64, "cxl.cache"]["latency_ns"] < 0.5 * by[64, "dma"]["latency_ns"]
    assert by[64, "cxl.cache"]["bandwidth_gbps"] > 5 * by[64, "dma"]["bandwidth_gbps"]
    # Large transfers: DMA's 512 B reads with 32 tags outrun per-line requests bounded by MSHRs.
    assert by[262144, "dma"]["bandwidth_gbps"] > by[262144, "cxl.cache"]["bandwidth_gbps"]
    peak = _core.link_info(coherent.load("type1-asic").device().link.to_dict())["raw_gbps"]
    assert all(r["bandwidth_gbps"] < peak for r in rows)


def test_dma_latency_is_its_phases_and_completion_mode_costs_what_it_should():
    s = system()
    dev = s.device()
    poll = coherent.dma_vs_cache(s, [64]).query("mechanism == 'dma'").iloc[0]
    phases = sum(poll[c] for c in poll.index if str(c).startswith("phase_"))
    assert poll["latency_ns"] == pytest.approx(phases, rel=1e-9)
    # Doorbell: driver setup plus a posted write down the link.
    assert poll["phase_doorbell_ns"] >= dev.dma.setup_ns + dev.link.phy_latency_ns
    # Polling: the completion record's trip up, the home, then the next poll that hits it.
    flit = 68 / dev.link.raw_gbps
    trip = dev.link.phy_latency_ns + s.home.latency_ns + s.home.host_hit_ns
    assert trip <= poll["phase_completion_ns"] <= trip + dev.dma.poll_interval_ns + 3 * flit
    # MSI-X: the interrupt write's trip up, then the interrupt delivery.
    irq = coherent.dma_vs_cache(system(**{"dma.interrupt": 1}), [64]).query("mechanism == 'dma'").iloc[0]
    assert dev.link.phy_latency_ns + dev.dma.interrupt_ns <= irq["phase_completion_ns"] <= \
        dev.link.phy_latency_ns + dev.dma.interrupt_ns + 3 * flit
    # More descriptors in flight lift small-transfer bandwidth almost in proportion.
    four = coherent.dma_vs_cache(system(**{"dma.engines": 4}), [64]).query("mechanism == 'dma'").iloc[0]
    assert 3.0 < four["bandwidth_gbps"] / poll["bandwidth_gbps"] <= 4.05


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("kw,msg", [
    ({"op": "fetch"}, "accel.op = 'fetch' is not allowed; allowed values: load, store, rdcurr, rdany, itomwr, wrinv"),
    ({"target": "device"}, "accel.target = 'device' is not allowed with accel.type = 1"),
    ({"depth": 0}, "accel.depth = 0 is out of range; allowed: 1 to 4096"),
    ({"pattern": "zigzag"}, "accel.pattern = 'zigzag' is not allowed"),
])
def test_bad_workloads_are_rejected_with_the_parameter_named(kw, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        coherent.accel("type1-asic", requests=10, **kw)


@pytest.mark.parametrize("key,value,msg", [
    ("accel.type", 3, "accel.type = 3 is out of range; allowed: 1 to 2"),
    ("cache.bytes", 1000, "cache.bytes = 1000 is out of range"),
    ("cache.bytes", 65536 + 64, "cache.bytes = 65600 must be a multiple of 64 x assoc"),
    ("accel.hdm_db", 1, "accel.hdm_db = 1 is not allowed with type = 1"),
    ("dma.max_payload", 300, "dma.max_payload = 300 is not allowed; allowed values: 128, 256"),
])
def test_bad_parameters_fail_at_config_time(key, value, msg):
    with pytest.raises(ParamError, match=msg):
        system(**{key: value})
    d = core_graph(coherent.load("type1-asic"))
    g, k = key.split(".")
    d["components"]["dev0"][g][k] = value  # the preset's one device
    with pytest.raises(_core.ConfigError, match=msg.split(" is ")[0].split(" must")[0]):
        _core.validate(d)


def test_cli_bad_input_is_one_line_exit_2():
    res = CliRunner().invoke(main, ["run", "accel", "--set", "accel.devices=17"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "simcxl: error: accel.devices = 17 is out of range; allowed: 1 to 16"
    res = CliRunner().invoke(main, ["run", "dma-vs-cache", "--sizes", "0"])
    assert res.exit_code == 2 and "size '0' is not allowed" in res.stderr
    with pytest.raises(ValueError, match="dma_vs_cache.sizes contains 0, out of range; allowed: 1 to"):
        _core.run_dma_vs_cache(core_graph(coherent.load("type1-asic")), [0])
    res = CliRunner().invoke(main, ["run", "accel", "--accel", "no-such"])
    assert res.exit_code == 2 and "presets: type1-asic" in res.stderr


def test_accel_cli_table_and_plot(tmp_path):
    res = CliRunner().invoke(main, ["run", "accel", "-a", "type1-asic", "-a", "type2-hdmdb", "--requests", "5000",
                                    "--plot", str(tmp_path / "b.png"), "--csv", str(tmp_path / "r.csv")])
    assert res.exit_code == 0, res.output
    assert "mean ns per access by stage" in res.stdout and "type2-hdmdb" in res.stdout
    assert (tmp_path / "b.png").exists() and (tmp_path / "r.csv").read_text().count("\n") == 3


def test_sweeps_cover_accelerators(tmp_path):
    from simcxl.sweep import spec as sw
    spec = sw.Sweep.from_toml(REPO / "examples" / "dma_vs_cache_engines.toml")
    df = sw.run(spec, tmp_path / "out")
    assert (df["status"] == "ok").all() and len(df) == 24
    small = df[df["param.workload.transfer_bytes"] == 64]
    dma = small[small["param.workload.mechanism"] == "dma"].groupby("param.dma.engines")["bandwidth_gbps"].mean()
    cache = small[small["param.workload.mechanism"] == "cxl.cache"].groupby("param.cache.mshrs")["bandwidth_gbps"].mean()
    assert dma[4] > 2.5 * dma[1]      # descriptors in flight lift DMA
    assert cache[64] > 2.0 * cache[16]  # MSHRs lift CXL.cache
    with pytest.raises(ParamError, match="workload.mechanism"):
        sw.Sweep.from_dict({"base": "type1-asic", "workload": {"kind": "dma-vs-cache", "mechanism": "pio"},
                            "axes": [{"param": "dma.engines", "values": [1]}]})
    with pytest.raises(ParamError, match="cache.nope is not a parameter"):
        sw.Sweep.from_dict({"base": "type1-asic", "workload": {"kind": "accel"},
                            "axes": [{"param": "cache.nope", "values": [1]}]})


def test_demo_cxl_cache_part(tmp_path, capsys):
    from simcxl.workloads import demo
    demo._cxl_cache(tmp_path)
    out = capsys.readouterr().out
    assert "At 64 B CXL.cache cuts latency by" in out and "published: 68% and 14.4x" in out
    assert (tmp_path / "dma_vs_cache.png").stat().st_size > 10_000


@pytest.mark.parametrize("preset", ["type1-asic", "type2-bias", "type2-hdmdb"])
def test_a_full_snoop_filter_evicts_lines_without_breaking_coherence(preset):
    s = system(preset, **{"accel.devices": 2, "home.snoop_filter_lines": 4})
    r = coherent.stress(s, ops=300_000, lines=16)
    assert r["detail"] == "" and r["checker_violations"] == 0 and r["deadlock"] == 0
    assert r["home.sf_evictions"] > 1000 and r["quiet_at_end"] == 1


def test_snoop_filter_smaller_than_the_cache_costs_hits():
    kw = dict(op="load", pattern="random", footprint="1m", requests=50_000)
    small = coherent.accel(system(**{"home.snoop_filter_lines": 1024}), check=True, **kw).iloc[0]
    free = coherent.accel("type1-asic", **kw).iloc[0]
    assert free["home.sf_evictions"] == 0
    # Every filter eviction invalidates a device line, and the device loses hits it would have had.
    assert small["home.sf_evictions"] == small["dev0.cache.snoops_snpinv"] > 10_000
    assert small["hit_rate"] < 0.7 * free["hit_rate"]
    assert small["checker_violations"] == 0
