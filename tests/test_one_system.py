"""One system: memories of an address map and CXL.cache accelerators on one host, in one simulation.

The expected behaviour follows from which resources the two sides share, not from the simulator's
own output: sides that share nothing run as they do alone; sides that share a memory split it and
the wait shows in that memory's stages."""

import copy

import pytest

from simcxl import _core
from simcxl.workloads import coherent, mixed
from simcxl.config import params, presets
from simcxl.config.params import ParamError
from simcxl.topology import core_graph

KW = dict(threads=8, lines_per_thread=4000)
GPU = {"requesters": 8, "depth": 16, "footprint": "1g"}


@pytest.fixture(scope="module")
def system():
    base = presets.combine([("ddr", presets.load("ddr-local")), ("cxl0", presets.load("cxl-asic"))])
    return mixed.attach(base, "gpu=type1-asic")


def alone_and_together(system, host_target, gpu_target):
    """The run with both sides, the host alone and the accelerator alone."""
    run = dict(target=host_target, devices={"gpu": {**GPU, "target": gpu_target}}, **KW)
    return (mixed.run(system, **run).iloc[0], mixed.run(system, accelerators=False, **run).iloc[0],
            mixed.run(system, host=False, **run).iloc[0])


def stages(row, side):
    key = "host.read.stage." if side == "host" else f"accel.{side}.stage."
    return {s: row[f"{key}{s}_ns"] for s in _core.STAGES}


def test_one_description_holds_windows_and_accelerators(system):
    assert system.window_names() == ["ddr", "cxl0"] and system.device_names() == ["gpu"]
    assert system.get("gpu.cache.mshrs") == coherent.load("type1-asic").device().cache.mshrs
    assert system.get("cxl0.media.ranks") == presets.load("cxl-asic").cxl.media.ranks
    # A preset file of it loads back as the same system, and both engines' checks accept it.
    again = params.System.from_dict(system.to_dict())
    assert again.to_dict() == system.to_dict()
    _core.validate(core_graph(system))
    changed = system.replace(**{"gpu.cache.mshrs": 16, "home.latency_ns": 20.0})
    assert changed.devices[0].cache.mshrs == 16 and changed.home.latency_ns == 20.0


def test_names_and_windows_of_devices_are_checked_on_both_sides(system):
    d = system.to_dict()
    d["devices"][0]["name"] = "cxl0"
    with pytest.raises(ParamError, match="names a window"):
        params.System.from_dict(d)
    # A Type-2 device's memory over a window of the map: refused by the description and by the core.
    t2 = mixed.attach(presets.combine([("ddr", presets.load("ddr-local")), ("cxl0", presets.load("cxl-asic"))]),
                      "mem=type2-bias")
    core = core_graph(t2)
    next(k for k in core["connections"] if k["to"] == "cxl0.up")["base"] = 1 << 44
    with pytest.raises(_core.ConfigError, match="overlaps window cxl0"):
        _core.validate(core)
    with pytest.raises(ParamError, match="overlaps window cxl0"):
        t2.replace(**{"cxl0.base": 1 << 44})


def test_sides_that_share_nothing_run_as_they_do_alone(system):
    # Host STREAM on the DDR window, the accelerator on the CXL expander behind another root port.
    both, host, gpu = alone_and_together(system, "ddr", "cxl0")
    assert both["host.stream_gbps"] == pytest.approx(host["host.stream_gbps"], rel=0.005)
    assert both["accel.gpu.bandwidth_gbps"] == pytest.approx(gpu["accel.gpu.bandwidth_gbps"], rel=0.005)
    # Each window carried its own side's traffic only: the accelerator's reads are the expander's.
    assert both["host.window.cxl0.read_gbps"] == pytest.approx(both["accel.gpu.bandwidth_gbps"], rel=0.01)
    assert both["host.window.cxl0.write_gbps"] == 0
    assert both["host.window.ddr.read_gbps"] == pytest.approx(both["host.read_gbps"], rel=0.01)


def test_sides_that_share_a_dram_split_it_and_wait_in_its_queue(system):
    both, host, gpu = alone_and_together(system, "ddr", "ddr")
    assert both["host.stream_gbps"] < 0.95 * host["host.stream_gbps"]
    assert both["accel.gpu.bandwidth_gbps"] < 0.95 * gpu["accel.gpu.bandwidth_gbps"]
    # Together they move no more than the DRAM's data bus carries.
    assert both["ddr.read_gbps"] + both["ddr.write_gbps"] <= both["ddr.peak_gbps"] * 1.001
    # Where: the accelerator's own path (its cache, link and the home agent) is as it was; the time
    # it lost is spent waiting for the DRAM.
    a, g = stages(both, "gpu"), stages(gpu, "gpu")
    for st in ("cache", "host_uncore", "link_down", "link_up"):
        assert a[st] == pytest.approx(g[st], rel=0.01), st
    assert a["media_queue"] > 5 * g["media_queue"]
    h, h0 = stages(both, "host"), stages(host, "host")
    assert h["host_uncore"] == pytest.approx(h0["host_uncore"], rel=1e-6)
    assert h["media_queue"] > h0["media_queue"]


def test_sides_that_share_an_expander_wait_in_its_port_and_device(system):
    both, host, gpu = alone_and_together(system, "cxl0", "cxl0")
    assert both["host.stream_gbps"] < 0.95 * host["host.stream_gbps"]
    assert both["accel.gpu.bandwidth_gbps"] < 0.95 * gpu["accel.gpu.bandwidth_gbps"]
    # The expander's link carries both sides' reads back to the host.
    assert both["cxl0_link0.s2m.data_gbps"] == pytest.approx(both["host.read_gbps"] + both["accel.gpu.bandwidth_gbps"],
                                                            rel=0.02)
    for side, alone in (("host", host), ("gpu", gpu)):
        s, s0 = stages(both, side), stages(alone, side)
        assert s["host_port"] + s["device"] > 1.2 * (s0["host_port"] + s0["device"]), side
        assert s["cache"] == pytest.approx(s0["cache"]) and s["host_uncore"] == pytest.approx(s0["host_uncore"], rel=0.01)


def test_a_mixed_run_names_what_is_wrong_in_one_line(system):
    with pytest.raises(ParamError, match="npu.*not a device"):
        mixed.run(system, devices={"npu": {"target": "ddr"}}, **KW)
    with pytest.raises(_core.ConfigError, match="gpu.target = 'far' is not allowed; allowed values: a window"):
        mixed.run(system, devices={"gpu": {"target": "far"}}, **KW)
    with pytest.raises(ParamError, match="no accelerators"):
        mixed.run(presets.load("ddr-local"), **KW)


def test_a_sweep_sets_an_accelerator_parameter_of_a_system_with_memories(system, tmp_path):
    from simcxl.sweep import spec as sweep
    import json
    preset = tmp_path / "mixed.json"
    preset.write_text(json.dumps(system.to_dict()))
    spec = sweep.Sweep.from_dict({
        "base": str(preset), "metrics": ["accel.gpu.bandwidth_gbps", "accel.gpu.stage.queue_ns"],
        "workload": {"kind": "mixed", "host": False, "devices": {"gpu": {**GPU, "target": "cxl0"}}},
        "axes": [{"param": "gpu.cache.mshrs", "values": [16, 64]}]})
    df = sweep.run(spec, tmp_path / "out").sort_values("param.gpu.cache.mshrs")
    assert (df["status"] == "ok").all(), df["error"].tolist()
    few, many = df.iloc[0], df.iloc[1]
    # 128 loads in flight wait for MSHRs; four times as many MSHRs leave less of that wait.
    assert few["accel.gpu.stage.queue_ns"] > many["accel.gpu.stage.queue_ns"]
    assert many["accel.gpu.bandwidth_gbps"] > few["accel.gpu.bandwidth_gbps"]
