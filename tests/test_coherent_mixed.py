"""Several coherent devices of different types on one host: the description
(names, windows, validation on both sides), coherence under the checker with
every mix of types, lmbench on Type-2 device memory in each bias, and
contention only where the devices share a resource."""

import json
import math
from dataclasses import fields

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcxl import _core
from simcxl.workloads import coherent
from simcxl.cli import main
from simcxl.config.groups import DCacheParams, LinkParams
from simcxl.config.params import ParamError, System
from simcxl.topology import core_graph

MODES = coherent.DEVICE_MODES
CREDITS = [f"link.{f.name}" for f in fields(LinkParams) if f.name.startswith("credits_")] + \
          [f"cache.{f.name}" for f in fields(DCacheParams) if f.name.startswith("credits_")]


def mode(name, **kw):
    preset, base = MODES[name]
    return coherent.load(preset).replace(**base, **kw)


def pair(a, b, **kw):
    """Two devices of the given modes on the host of the first, named a and b."""
    return coherent.combine([("a", mode(a)), ("b", mode(b))]).replace(**kw)


def flit_ns(link):
    """One 68 B or 256 B flit, as the link delivers it: at the first whole picosecond after its end."""
    return math.ceil(link.flit_bytes / link.raw_gbps * 1000 - 1e-9) / 1000


# ---------------------------------------------------------------- the description

def test_devices_are_named_and_addressed_by_name():
    s = coherent.load("gpu=type1-asic+mem=type2-hdmdb")
    assert [d.name for d in s.devices] == ["gpu", "mem"]
    assert s.device_kinds() == "gpu: type-1, mem: type-2 hdm-db"
    p = s.parameters()
    assert p["gpu.cache.mshrs"] == 64 and p["mem.accel.hdm_db"] == 1 and "cache.mshrs" not in p
    assert p["home.tracker"] == coherent.load("type1-asic").home.tracker  # the host is the first's
    t = s.replace(**{"mem.cache.mshrs": 8, "gpu.link.lanes": 8})
    assert t.device("mem").cache.mshrs == 8 and t.device("gpu").cache.mshrs == 64
    assert t.device("gpu").link.lanes == 8
    with pytest.raises(ParamError, match="cache.mshrs names no device; with several devices, name it: "
                                         "gpu.cache.mshrs or mem.cache.mshrs"):
        s.replace(**{"cache.mshrs": 8})
    # A preset file of several devices round-trips, and the core reads it.
    d = s.to_dict()
    assert [x["name"] for x in d["devices"]] == ["gpu", "mem"] and "cache" not in d
    assert System.from_dict(json.loads(json.dumps(d))).parameters() == p
    _core.validate(core_graph(s))


def test_a_single_device_system_is_the_preset_as_it_always_was():
    s = coherent.load("type2-bias")
    assert len(s.devices) == 1 and "cache.mshrs" in s.parameters()
    assert s.replace(**{"dev0.cache.mshrs": 8}).device().cache.mshrs == 8  # its name works too
    d = s.to_dict()
    assert "devices" not in d and d["accel"]["type"] == 2
    shipped = json.loads((coherent.PRESET_DIR / "type2-bias.json").read_text())
    assert set(d) == set(shipped)  # the same layout as the shipped file, with every value it gives
    for g, v in shipped.items():
        assert d[g].items() >= v.items() if isinstance(v, dict) else d[g] == v, g
    assert d["accel"]["memory_base"] == 0


def test_each_device_has_its_own_cache_mshrs_and_memory_window():
    s = pair("type1", "type2-device-bias", **{"a.cache.mshrs": 4, "b.cache.mshrs": 32,
                                               "b.accel.memory_bytes": 1 << 26})
    r = coherent.accel(s, "load", "random", target="host", footprint="64m", requests=4000, depth=16, check=True,
                       devices={"b": {"target": "device"}}).iloc[0]
    assert r["a.cache.max_mshrs"] == 4 and 4 < r["b.cache.max_mshrs"] <= 32
    assert r["a.ops"] == r["b.ops"] == 4000 and r["checker_violations"] == 0
    # b's loads stay on its own memory in device bias: no link, no home; a's all go to the host.
    assert r["b.stage_link_up_ns"] == r["b.stage_host_uncore_ns"] == 0
    assert r["b.memory.local_reads"] == r["b.cache.misses"] > 3000
    assert r["home.requests_rdshared"] == r["a.cache.misses"]
    # b's window is [16 TiB, 16 TiB + 64 MiB): a footprint beyond it is refused by both sides.
    with pytest.raises(ValueError, match=r"accel.b.footprint_bytes = 134217728 is out of range for device memory; "
                                         r"allowed: up to b.accel.memory_bytes \(67108864\)"):
        coherent.accel(s, requests=10, devices={"b": {"target": "device", "footprint": "128m"}})


def test_a_device_reads_another_devices_memory_through_the_home():
    s = pair("type1", "type2-host-bias")
    r = coherent.accel(s, "load", "random", target="b", footprint="1m", requests=3000, check=True,
                       devices={"b": {"requesters": 0}}).iloc[0]
    assert r["a.ops"] == 3000 and r["b.ops"] == 0 and r["checker_violations"] == 0
    # a's misses are host-memory requests to b's window: the home reads them from b over CXL.mem.
    assert r["home.memory_reads"] >= r["a.cache.misses"] > 0 and r["local_dram.reads"] == 0


# Rules between the devices, each side saying the same.
SYSTEM_RULES = [
    ({"b.accel.memory_base": 1 << 44}, {"a": "type2-host-bias"},
     "b.accel.memory_base = 17592186044416 is not allowed: b's device memory [0x100000000000, 0x100040000000) "
     "overlaps a's [0x100000000000, 0x100040000000); allowed: windows that do not overlap"),
    ({"b.accel.memory_base": (1 << 44) + (1 << 29)}, {"a": "type2-host-bias"},
     "b.accel.memory_base = 17592722915328 is not allowed: b's device memory [0x100020000000, 0x100060000000) "
     "overlaps a's [0x100000000000, 0x100040000000); allowed: windows that do not overlap"),
    ({"b.accel.memory_base": (1 << 52) - (1 << 29)}, {},
     "b.accel.memory_bytes x devices = 1073741824 at 0xfffffe0000000 ends above 0x10000000000000; allowed: device "
     "memory below 0x10000000000000"),
    ({"a.accel.devices": 9, "b.accel.devices": 8}, {},
     "devices: 17 accelerators in all (accel.devices summed over the devices) is out of range; allowed: 1 to 16"),
    ({"b.accel.memory_base": 4096}, {},
     "b.accel.memory_base = 4096 is not allowed; allowed: 0 (after the previous device's memory) or "
     "17592186044416 (16 TiB) to 4503599627370496"),
]


@pytest.mark.parametrize("kw,modes,message", SYSTEM_RULES, ids=[m.split(" is")[0][:40] for _, _, m in SYSTEM_RULES])
def test_both_sides_refuse_the_same_device_layouts(kw, modes, message):
    a = modes.get("a", "type1")
    base = pair(a, "type2-bias-flips")
    with pytest.raises(ParamError) as e:
        base.replace(**kw)
    assert str(e.value) == message
    d = core_graph(base)
    for k, v in kw.items():
        dev, group, name = k.split(".")
        d["components"][dev][group][name] = v
    with pytest.raises(_core.ConfigError) as e:
        _core.validate(d)
    assert str(e.value) == message
    # Windows that only touch are allowed: the second one right after the first.
    pair("type2-host-bias", "type2-bias-flips", **{"b.accel.memory_base": (1 << 44) + (1 << 30)})


def test_device_names_and_lists_are_checked():
    with pytest.raises(ParamError, match="device name = 'cache' is not allowed"):
        coherent.load("cache=type1-asic+b=type1-asic")
    with pytest.raises(ParamError, match="device name 'x' appears twice"):
        coherent.load("x=type1-asic+x=type2-bias")
    with pytest.raises(ParamError, match="cache is given beside devices"):
        System.from_dict({**pair("type1", "type1").to_dict(), "cache": {}})
    # A run's streams name devices of the system, and one at least is busy.
    s = pair("type1", "type1")
    with pytest.raises(ParamError, match=r"accel.devices: c is not a device of a\+b; allowed: a, b"):
        coherent.accel(s, requests=10, devices={"c": {"op": "store"}})
    with pytest.raises(ValueError, match="accel.streams: every device is idle"):
        coherent.accel(s, requests=10, devices={"a": {"requesters": 0}, "b": {"requesters": 0}})
    with pytest.raises(ValueError, match="accel.b.op = 'fetch' is not allowed"):
        coherent.accel(s, requests=10, devices={"b": {"op": "fetch"}})


def test_cli_runs_several_devices_with_their_own_streams(tmp_path):
    res = CliRunner().invoke(main, ["run", "accel", "-a", "gpu=type1-asic+mem=type2-bias", "--requests", "2000",
                                    "--device", "mem.target=device", "--device", "gpu.op=store",
                                    "--set", "mem.accel.device_bias=1", "--json"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)[0]
    assert r["gpu.cache.stores"] == 2000 and r["mem.cache.loads"] == 2000
    assert r["mem.stage_host_uncore_ns"] == 0 and r["gpu.stage_host_uncore_ns"] > 0
    res = CliRunner().invoke(main, ["run", "accel", "-a", "gpu=type1-asic+mem=type2-bias", "--requests", "2000"])
    assert res.exit_code == 0 and "per device (mean ns per access by stage):" in res.stdout
    assert [ln.split()[1] for ln in res.stdout.splitlines()[-2:]] == ["gpu", "mem"]
    res = CliRunner().invoke(main, ["run", "accel", "-a", "gpu=type1-asic+mem=type2-bias", "--set",
                                    "cache.mshrs=8"])
    assert res.exit_code == 2 and "name it: gpu.cache.mshrs or mem.cache.mshrs" in res.stderr
    res = CliRunner().invoke(main, ["presets", "show", "gpu=type1-asic+mem=type2-bias"])
    assert res.exit_code == 0 and "gpu: type-1, mem: type-2 host bias" in res.stdout
    assert "mem.accel.memory_base" in res.stdout
    f = tmp_path / "two.json"
    res = CliRunner().invoke(main, ["presets", "show", "gpu=type1-asic+mem=type2-bias", "--json"])
    f.write_text(res.stdout)
    res = CliRunner().invoke(main, ["run", "coherence-stress", "-a", str(f), "--ops", "20000"])
    assert res.exit_code == 0 and " 0 violations: ok" in res.output
    d = json.loads(f.read_text())
    del d["devices"][1]["cache"]["mshrs"]
    f.write_text(json.dumps(d))
    res = CliRunner().invoke(main, ["run", "coherence-stress", "-a", str(f), "--ops", "100"])
    assert res.exit_code == 2 and "mem.cache.mshrs is missing" in res.stderr


def test_sweeps_address_a_device_by_name(tmp_path):
    from simcxl.sweep import spec as sw
    spec = sw.Sweep.from_dict({"base": "gpu=type1-asic+mem=type2-bias",
                               "workload": {"kind": "accel", "requests": 2000},
                               "axes": [{"param": "mem.cache.mshrs", "values": [1, 64]}]})
    df = sw.run(spec, tmp_path / "out")
    assert (df["status"] == "ok").all() and len(df) == 2
    with pytest.raises(ParamError, match="mem.cache.nope"):
        sw.Sweep.from_dict({"base": "gpu=type1-asic+mem=type2-bias", "workload": {"kind": "accel"},
                            "axes": [{"param": "mem.cache.nope", "values": [1]}]})


# ---------------------------------------------------------------- coherence, every mix

@st.composite
def mixed_systems(draw):
    a, b = draw(st.lists(st.sampled_from(sorted(MODES)), min_size=2, max_size=2, unique=True))
    kw = {}
    for d in ("a", "b"):
        assoc = draw(st.sampled_from([1, 2, 4]))
        sets = draw(st.sampled_from([4, 8, 16]))
        kw.update({f"{d}.{k}": draw(st.integers(1, 3)) for k in CREDITS})
        kw.update({f"{d}.cache.assoc": assoc, f"{d}.cache.bytes": max(1024, sets * assoc * 64) // (64 * assoc) * 64 * assoc,
                   f"{d}.cache.mshrs": draw(st.integers(1, 6)),
                   f"{d}.accel.bias_page_bytes": draw(st.sampled_from([256, 4096]))})
    kw.update({"home.host_cache_bytes": draw(st.sampled_from([4096, 1 << 20])),
               "home.snoop_filter_lines": draw(st.sampled_from([0, 4, 64])), "seed": draw(st.integers(0, 2 ** 20))})
    return pair(a, b, **kw)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(s=mixed_systems(), lines=st.integers(1, 24), stores=st.floats(0, 1))
def test_two_devices_of_different_types_and_host_cores_stay_coherent(s, lines, stores):
    r = coherent.stress(s, ops=4000, lines=lines, host_threads=2, device_requesters=2, store_fraction=stores,
                        device_memory_fraction=0.6)
    assert r["ops"] == 4000 and r["deadlock"] == 0
    assert r["checker_violations"] == 0, r["detail"]
    assert r["quiet_at_end"] == 1
    # Each device streams into the other's memory where it has one, under the checker.
    types = {d.name: d.accel.type for d in s.devices}
    streams = {n: {"target": ("b" if n == "a" else "a") if types["b" if n == "a" else "a"] == 2 else "host"}
               for n in types}
    x = coherent.accel(s, "store" if stores > 0.5 else "load", "random", requesters=2, depth=2, footprint="32k",
                       requests=400, host_threads=1, check=True, devices=streams).iloc[0]
    assert x["a.ops"] == x["b.ops"] == 400 and x["checker_violations"] == 0
    for who in ("", "a.", "b."):
        stages = sum(x[f"{who}stage_{t}_ns"] for t in coherent.STAGES)
        assert stages == pytest.approx(x[f"{who}latency_mean_ns"], rel=1e-9, abs=1e-6)


# ---------------------------------------------------------------- lmbench on device memory

def test_lmbench_on_device_memory_saves_the_home_round_trip_in_device_bias():
    # No refresh in the device's media, so both chases meet the same DRAM timing load by load.
    quiet = {"media.tREFI_ns": 0}
    host_bias = mode("type2-host-bias", **quiet)
    dev_bias = mode("type2-device-bias", **quiet)
    kw = dict(sizes=["64m"], agent="dev0", target="device", loads=2000)
    hb = coherent.lmbench(host_bias, **kw).iloc[0]
    db = coherent.lmbench(dev_bias, **kw).iloc[0]
    assert hb["hit_rate"] < 0.01 and db["hit_rate"] < 0.01
    link, home = host_bias.device().link, host_bias.home
    one_way = link.phy_latency_ns + flit_ns(link)  # a header message on an idle link: D2H Req up, MemRdFwd down
    trip = one_way + home.latency_ns + one_way
    assert hb["stage_link_up_ns"] == pytest.approx(one_way, abs=1e-6)
    assert hb["stage_link_down_ns"] == pytest.approx(one_way, abs=1e-6)
    assert hb["stage_host_uncore_ns"] == pytest.approx(home.latency_ns, abs=1e-6)
    assert db["stage_link_up_ns"] == db["stage_host_uncore_ns"] == db["stage_link_down_ns"] == 0
    assert hb["latency_ns"] - db["latency_ns"] == pytest.approx(trip, abs=1e-3)
    # The device's own path is the same in both: its cache lookup, its controller and its media.
    for st in ("device", "media_queue", "media_service"):
        assert hb[f"stage_{st}_ns"] == pytest.approx(db[f"stage_{st}_ns"], abs=1e-6), st
    assert db["stage_device_ns"] == pytest.approx(dev_bias.device().accel.memory_latency_ns)
    assert db["stage_cache_ns"] == pytest.approx(dev_bias.device().cache.latency_ns)
    # With refresh on, the gap is the same round trip within refresh's noise.
    hb2 = coherent.lmbench(mode("type2-host-bias"), **kw).iloc[0]
    db2 = coherent.lmbench(mode("type2-device-bias"), **kw).iloc[0]
    assert hb2["latency_ns"] - db2["latency_ns"] == pytest.approx(trip, rel=0.05)
    # A working set within the device cache hits after the warm-up, in either bias.
    small = coherent.lmbench(host_bias, ["64k"], "dev0", "device", loads=500).iloc[0]
    assert small["hit_rate"] == 1 and small["latency_ns"] == pytest.approx(host_bias.device().cache.latency_ns)


def test_lmbench_is_refused_clearly():
    with pytest.raises(ValueError, match="lmbench.target = 'device' is not allowed with accel.type = 1"):
        coherent.lmbench("type1-asic", ["1m"], target="device")
    with pytest.raises(ParamError, match="device 'gpu' is not a device of type1-asic"):
        coherent.lmbench("type1-asic", ["1m"], agent="gpu")
    with pytest.raises(ValueError, match="lmbench.sizes contains 8589934592, out of range"):
        coherent.lmbench("type1-asic", ["8g"])
    res = CliRunner().invoke(main, ["run", "accel-lmbench", "-a", "type2-bias", "--target", "device", "--sizes",
                                    "64k,4m", "--loads", "300", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["working_set_bytes"] for r in rows] == [65536, 4194304]


# ---------------------------------------------------------------- contention

def host_bound(**kw):
    """Two Type-1 devices whose random reads of host memory are bound by the host's one DRAM
    channel: every read opens a row, and the rank opens one row per tRRD."""
    wide = {f"{d}.{k}": 256 for d in "ab" for k in ("cache.mshrs", "cache.credits_d2h_req",
                                                   "cache.credits_h2d_rsp", "cache.credits_h2d_data")}
    return pair("type1", "type1", **wide, **{"home.tracker": 1024, "local_dram.channels": 1,
                                             "local_dram.tREFI_ns": 0}, **kw)


def test_devices_share_host_memory_at_its_service_rate_and_the_breakdown_shows_it():
    s = host_bound()
    dram = s.local_dram
    assert dram.ranks == 1 and dram.tRRD_ns > dram.tFAW_ns / 4 and dram.tRRD_ns > 64 / (dram.data_rate_mts * dram.bus_bytes / 1000)
    rate = 64 / dram.tRRD_ns  # GB/s: one line per activation, one activation per tRRD
    kw = dict(op="rdcurr", pattern="random", requesters=8, depth=16, footprint="1g", requests=100_000)
    alone = coherent.accel(s, devices={"b": {"requesters": 0}}, **kw).iloc[0]
    both = coherent.accel(s, **kw).iloc[0]
    assert alone["a.bandwidth_gbps"] == pytest.approx(rate, rel=0.02)
    assert both["a.bandwidth_gbps"] + both["b.bandwidth_gbps"] == pytest.approx(rate, rel=0.02)
    assert both["a.bandwidth_gbps"] == pytest.approx(rate / 2, rel=0.03)
    assert both["b.bandwidth_gbps"] == pytest.approx(rate / 2, rel=0.03)
    # Little's law: 128 reads of each device in flight, served at half the rate.
    inflight = 8 * 16
    assert both["a.latency_mean_ns"] == pytest.approx(inflight * 64 / (rate / 2), rel=0.03)
    # Where: only the wait in the DRAM's queue grows, by the other device's reads.
    for stage in ("cache", "link_up", "host_uncore", "link_down", "media_service"):
        assert both[f"a.stage_{stage}_ns"] == pytest.approx(alone[f"a.stage_{stage}_ns"], rel=1e-3), stage
    assert both["a.stage_media_queue_ns"] - alone["a.stage_media_queue_ns"] == pytest.approx(inflight * 64 / rate,
                                                                                             rel=0.05)


def test_devices_that_share_nothing_do_not_slow_each_other():
    # a reads host memory, b its own memory in device bias: no common link, home work or DRAM.
    s = pair("type1", "type2-device-bias")
    kw = dict(op="load", pattern="random", requesters=8, depth=8, footprint="64m", requests=40_000)
    alone = coherent.accel(s, devices={"b": {"requesters": 0}}, **kw).iloc[0]
    both = coherent.accel(s, devices={"b": {"target": "device"}}, **kw).iloc[0]
    for key in ("bandwidth_gbps", "latency_mean_ns", "stage_media_queue_ns", "stage_media_service_ns",
                "stage_host_uncore_ns"):
        assert both[f"a.{key}"] == alone[f"a.{key}"], key
    assert both["b.bandwidth_gbps"] > 0 and both["b.stage_host_uncore_ns"] == 0
