"""The host physical address map: several memories as windows of one host, and
workloads whose pages lie in one window or a weighted interleave of windows."""

import subprocess
import sys

import pytest

import simcxl
from simcxl import _core
from simcxl.engine import standalone as engine
from simcxl.config import presets
from simcxl.config.params import ParamError, System
from simcxl.config.presets import combine
from simcxl.topology import core_graph


MAP = "ddr=ddr-local+cxl0=cxl-asic"
TIB = 1 << 40


@pytest.fixture(scope="module")
def ddr_cxl():
    return presets.load(MAP)


# ---------------------------------------------------------------- STREAM over a weighted interleave

# 16 threads x 16 MSHRs keep both memories at their bandwidth plateau when run
# alone (measured from 8 to 32 threads: ddr-local 22.1-23.2 GB/s, cxl-asic
# 17.3-18.9 GB/s triad), so each saturates when its share of the traffic asks
# for more than it can give.
THREADS, LINES = 16, 4000


@pytest.fixture(scope="module")
def alone():
    """Each memory's STREAM triad bandwidth measured alone (its own single-memory system)."""
    return {m: engine.stream(m, ["triad"], threads=THREADS, lines_per_thread=LINES,
                             placement="contiguous").iloc[0]["stream_gbps"] for m in ("ddr-local", "cxl-asic")}


@pytest.mark.parametrize("w", [1, 2, 3, 4, 8])
def test_stream_over_a_weighted_interleave_follows_the_memories_alone(ddr_cxl, alone, w):
    """Weights w:1 over DDR and CXL put w of every w + 1 pages on DDR. Every
    array is spread the same way, so DDR carries the fraction f = w/(w+1) of
    the traffic (of STREAM's bytes as of the real ones: the same kernel on
    both) and CXL 1 - f = 1/(w+1). An aggregate A loads DDR with f A <= B_ddr
    and CXL with (1 - f) A <= B_cxl (each memory's bandwidth measured alone),
    so A <= min(B_ddr / f, B_cxl / (1 - f)) = min(B_ddr (w+1)/w, B_cxl (w+1)),
    and with enough misses outstanding the memory that saturates first makes
    it an equality. Here B_ddr / B_cxl = 1.2: w = 1 is CXL-bound, w >= 2
    DDR-bound.

    Tolerance 6 %: a DRAM's saturated bandwidth depends a little on the mix
    of streams it serves (the plateau above varies by 3 to 5 % over thread
    counts, and rank switches, tRTRS, cost a mix of streams more than one),
    and near the crossover both memories run close to saturation, where
    queueing keeps the aggregate a few percent under the bound. The
    bound differs from either memory alone by 12 % or more at every w, so a
    placement that ignored the weights would fail."""
    b_ddr, b_cxl = alone["ddr-local"], alone["cxl-asic"]
    bound = min(b_ddr * (w + 1) / w, b_cxl * (w + 1))
    assert abs(bound / b_ddr - 1) > 0.10 and abs(bound / b_cxl - 1) > 0.10
    r = engine.stream(ddr_cxl, ["triad"], threads=THREADS, lines_per_thread=LINES, placement="contiguous",
                      target=f"ddr:{w},cxl0:1").iloc[0]
    assert r["stream_gbps"] == pytest.approx(bound, rel=0.06)
    # Per window: the map's own counts split as the weights say (every array
    # spans many interleave rounds, so the split is exact to a page per array).
    ddr = r["host.window.ddr.read_gbps"] + r["host.window.ddr.write_gbps"]
    cxl = r["host.window.cxl0.read_gbps"] + r["host.window.cxl0.write_gbps"]
    assert ddr / (ddr + cxl) == pytest.approx(w / (w + 1), abs=0.005)
    assert ddr + cxl == pytest.approx(r["total_gbps"], rel=5e-3)
    assert r["target"] == f"ddr:{w},cxl0:1"


def test_random_traffic_splits_by_the_weights(ddr_cxl):
    """Uniform random lines over a footprint of whole interleave rounds: each
    request lands in DDR with probability 3/4 (weights 3:1). Over ~160000
    requests in the window the binomial spread of that fraction is 0.1 %, so
    1 % is far outside chance."""
    r = engine.traffic(ddr_cxl, threads=8, read_fraction=0.7, footprint_bytes=1 << 30, requests=200000,
                       target={"ddr": 3, "cxl0": 1}).iloc[0]
    n_ddr, n_cxl = r["host.window.ddr.requests"], r["host.window.cxl0.requests"]
    assert n_ddr / (n_ddr + n_cxl) == pytest.approx(0.75, abs=0.01)
    # The map counts what it routed: every data request, each 64 B.
    assert (r["host.window.ddr.read_gbps"] + r["host.window.cxl0.read_gbps"]) == pytest.approx(r["read_gbps"], rel=0.02)
    assert r["host.window.ddr.write_gbps"] / r["host.window.cxl0.write_gbps"] == pytest.approx(3, rel=0.05)


# ---------------------------------------------------------------- one window: the single-memory figures

def test_lmbench_far_beyond_the_llc_on_each_window_equals_that_memory_alone(ddr_cxl):
    """A 1 GiB chase (ten times the LLC) through the window of each memory
    gives that memory's latency as the single-memory system gives it (the
    second method). The map's host and local DRAM (page tables) are
    ddr-local's, so the CXL figure is compared with cxl-asic on that host."""
    ws = [1 << 30]
    cache = _core.WarmCache()
    cxl_alone = presets.load("cxl-asic")
    cxl_alone.host, cxl_alone.local_dram = ddr_cxl.host, ddr_cxl.local_dram
    for window, single in (("ddr", presets.load("ddr-local")), ("cxl0", cxl_alone)):
        mapped = engine.lmbench(ddr_cxl, ws, accesses=2000, cache=cache, target=window).iloc[0]
        ref = engine.lmbench(single, ws, accesses=2000, cache=cache).iloc[0]
        assert mapped["hit_memory"] > 0.9
        assert mapped["latency_ns"] == pytest.approx(ref["latency_ns"], rel=1e-3)
    # The two windows differ: the CXL expander is the slower memory.
    assert engine.lmbench(ddr_cxl, ws, accesses=2000, cache=cache, target="cxl0").iloc[0]["latency_ns"] > \
        1.5 * engine.lmbench(ddr_cxl, ws, accesses=2000, cache=cache, target="ddr").iloc[0]["latency_ns"]


def test_a_one_window_map_is_the_single_memory_system():
    """cxl=cxl-asic is an address map of one window named as the single
    memory's (cxl, at base 0): every figure the two share is the same."""
    single = engine.traffic("cxl-asic", threads=8, read_fraction=0.7, requests=20000).iloc[0]
    mapped = engine.traffic("cxl=cxl-asic+far=ddr-remote", threads=8, read_fraction=0.7, requests=20000,
                            target="cxl").iloc[0]
    shared = [k for k in single.index if k in mapped.index and k not in ("memory", "media_peak_gbps", "events")]
    assert len(shared) > 50
    assert {k: mapped[k] for k in shared} == pytest.approx({k: single[k] for k in shared}, rel=1e-9)
    # The remote window was idle, and the map says so.
    assert mapped["host.window.far.requests"] == 0 and mapped["far_dram.read_gbps"] == 0


def test_windows_name_their_components(ddr_cxl):
    two = ddr_cxl.replace(**{"cxl0.bridge.root_ports": 2, "cxl0.bridge.interleave_ways": 2})
    r = engine.traffic(two, threads=4, requests=4000, target="cxl0").iloc[0]
    assert r["cxl0_dev0.media.read_gbps"] > 0 and r["cxl0_dev1.media.read_gbps"] > 0
    assert r["cxl0_dev0.media.read_gbps"] == pytest.approx(r["cxl0_dev1.media.read_gbps"], rel=0.1)
    assert "cxl0.refused" in r and "cxl0_link1.m2s.flits" in r and "ddr.read_gbps" in r and "local_dram.read_gbps" not in r


# ---------------------------------------------------------------- traces: physical addresses

def test_a_physical_trace_goes_to_the_window_of_each_address(tmp_path, ddr_cxl):
    path = tmp_path / "t.trace"
    path.write_text("".join(f"{i} R {hex(TIB + i * 4096)}\n" for i in range(30)) +
                    "".join(f"{30 + i} W {hex(i * 4096)}\n" for i in range(10)))
    r = engine.trace(ddr_cxl, path).iloc[0]
    assert (r["host.window.cxl0.requests"], r["host.window.ddr.requests"]) == (30, 10)
    assert r["target"] == "physical"
    # With a target the addresses are virtual, placed in it (within its size).
    path.write_text("".join(f"{i} R {hex(i * 4096)}\n" for i in range(40)))
    r = engine.trace(ddr_cxl, path, target="cxl0").iloc[0]
    assert (r["host.window.cxl0.requests"], r["host.window.ddr.requests"]) == (40, 0)
    path.write_text(f"0 R {hex(TIB)}\n")
    with pytest.raises(_core.ConfigError, match="trace: virtual address 0x10000000000 lands beyond the end of "
                                                "window cxl0"):
        engine.trace(ddr_cxl, path, target="cxl0")


# ---------------------------------------------------------------- errors, each one line at config time

def test_overlapping_windows_are_refused_naming_both(ddr_cxl):
    with pytest.raises(ParamError, match=r"^map: windows ddr \[0x0, 0x10000000000\) and cxl0 \[0x8000000000, "
                                         r"0x18000000000\) overlap; allowed: windows that share no address"):
        ddr_cxl.replace(**{"cxl0.base": TIB // 2})
    # The core says the same of a description that bypasses Python.
    d = core_graph(ddr_cxl)
    next(k for k in d["connections"] if k["to"] == "cxl0.up")["base"] = TIB // 2
    with pytest.raises(_core.ConfigError, match=r"windows ddr \[0x0, 0x10000000000\) and cxl0 .* overlap"):
        _core.validate(d)


def test_an_address_outside_every_window_is_refused(tmp_path, ddr_cxl):
    path = tmp_path / "t.trace"
    path.write_text(f"0 R {hex(3 * TIB)}\n")
    with pytest.raises(_core.ConfigError, match=r"^address 0x30000000000 is outside every window of the host "
                                                r"address map; windows: ddr \[0x0, 0x10000000000\), cxl0 "
                                                r"\[0x10000000000, 0x20000000000\)$"):
        engine.trace(ddr_cxl, path)


def test_a_footprint_beyond_its_window_is_refused(ddr_cxl):
    small = ddr_cxl.replace(**{"cxl0.size": 1 << 20})
    with pytest.raises(_core.ConfigError, match=r"traffic: virtual address .* lands beyond the end of window cxl0 "
                                                r"\(1048576 bytes\)"):
        engine.traffic(small, threads=2, footprint_bytes=1 << 30, requests=1000, target="cxl0")


@pytest.mark.parametrize("target,message", [
    ("cxl9", r"^target: 'cxl9' is not a window of ddr=ddr-local\+cxl0=cxl-asic's address map; did you mean cxl0\? "
             r"allowed: ddr, cxl0$"),
    ("ddr:3,cxl9:1", r"'cxl9' is not a window .*; did you mean cxl0\? allowed: ddr, cxl0$"),
    ("ddr:0,cxl0:1", r"^target: weight of ddr = 0 is out of range; allowed: a whole number from 1 to 255"),
    ("ddr:-2,cxl0:1", r"^target: weight of ddr = -2 is out of range; allowed: a whole number from 1 to 255"),
    ("ddr:256", r"weight of ddr = 256 is out of range"),
    ("ddr:x", r"^target: weight 'x' of ddr is not a whole number; allowed: 1 to 255"),
    ("ddr,ddr", r"^target names window 'ddr' twice"),
    ("", r"^target '' has an empty entry"),
])
def test_bad_targets_are_refused(ddr_cxl, target, message):
    with pytest.raises(ParamError, match=message):
        engine.stream(ddr_cxl, ["copy"], threads=1, lines_per_thread=100, target=target)


def test_the_core_checks_targets_too(ddr_cxl):
    core = core_graph(ddr_cxl)
    with pytest.raises(_core.ConfigError, match=r"^stream.target = 'cxl9' is not a window of the address map; "
                                                r"allowed: ddr, cxl0$"):
        _core.run_stream(core, "copy", 1, 100, target=[("cxl9", 1)])
    with pytest.raises(_core.ConfigError, match=r"^target.weight = 0 is out of range; allowed: 1 to 255$"):
        _core.run_stream(core, "copy", 1, 100, target=[("ddr", 0), ("cxl0", 1)])


@pytest.mark.parametrize("spec,message", [
    ("cxl-asic+cxl-asic", r"window name 'cxl-asic' appears twice; name the windows, e.g. cxl0=cxl-asic\+cxl1=cxl-asic"),
    ("ddr-local+", r"has an empty part"),
    ("a=ddr-local+b=nope", r"'nope' is neither a preset nor a preset file"),
    ("host=ddr-local+cxl-asic", r"map\[0\].name = 'host' is not allowed"),
    ("ddr=ddr-local+dram=ddr-local", r"dram.kind = 'local-dram' is not allowed: the host has one local DRAM"),
])
def test_bad_maps_are_refused(spec, message):
    with pytest.raises(ParamError, match=message):
        presets.load(spec)


def test_window_parameters_are_addressed_by_name(ddr_cxl):
    s = ddr_cxl.replace(**{"cxl0.media.ranks": 2, "cxl0.link.lanes": 16})
    assert s.get("cxl0.media.ranks") == 2 and s.map[1].cxl.link.lanes == 16
    assert "cxl0.base" in s.parameters() and "ddr.size" in s.parameters()
    with pytest.raises(ParamError, match=r"cxl9.media.ranks is not a parameter of this address-map system; "
                                         r"did you mean cxl0.media.ranks( or [\w.]+)*\? "
                                         r"allowed groups: host, local_dram, ddr, cxl0, cxl0.bridge"):
        ddr_cxl.replace(**{"cxl9.media.ranks": 2})
    with pytest.raises(ParamError, match=r"^cxl0.link.lanes = 3 is not allowed; allowed values: 1, 2, 4, 8, 16$"):
        ddr_cxl.replace(**{"cxl0.link.lanes": 3})
    # A preset file of a map round-trips, and must give every parameter of each window.
    assert System.from_dict(s.to_dict()) == s


def test_a_map_preset_file_gives_every_window_parameter(tmp_path, ddr_cxl):
    import json
    d = ddr_cxl.to_dict()
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    assert presets.load(str(path)).map == ddr_cxl.map
    del d["map"][1]["cxl"]["media"]["ranks"]
    path.write_text(json.dumps(d))
    with pytest.raises(ParamError, match=r"cxl0.media.ranks is missing; a window gives every parameter"):
        presets.load(str(path))


def test_combine_takes_the_host_of_the_first_and_local_dram_of_the_ddr():
    cxl, ddr = presets.load("cxl-fpga"), presets.load("ddr-local")
    m = combine([("c", cxl), ("d", ddr)])
    assert m.host == cxl.host and m.local_dram == ddr.local_dram
    assert [(w.range.base, w.range.size) for w in m.map] == [(0, TIB), (TIB, TIB)]


def test_cli_interleave_runs_and_reports_the_target(tmp_path):
    out = subprocess.run([sys.executable, "-m", "simcxl.cli", "run", "stream", "-m", MAP, "--interleave",
                          "ddr:3,cxl0:1", "--kernel", "copy", "--threads", "4", "--lines", "1000", "--json"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    import json
    got = json.loads(out.stdout)
    assert got["target"] == "ddr:3,cxl0:1" and got["copy"] > 0
    bad = subprocess.run([sys.executable, "-m", "simcxl.cli", "run", "stream", "-m", MAP, "--interleave", "ddr:0"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "weight of ddr = 0 is out of range" in bad.stderr


def test_a_stall_names_the_window_component(ddr_cxl):
    """A device that stops answering (fault injection) stalls the run; the
    message names the window's device and the request's host address."""
    two = ddr_cxl.replace(**{"cxl0.bridge.root_ports": 2, "cxl0.bridge.interleave_ways": 2})
    d = core_graph(two)
    d["fault"] = {"device_stops_after": 50}
    with pytest.raises(_core.StallError, match=r"the oldest \(txn \d+, read of 0x100[0-9a-f]{8}\) is in "
                                               r"cxl0\.dev[01]\.device\."):
        _core.run_traffic(d, 2, 1.0, "random", 1 << 20, 1000, 0.0, 0.0, False, None, [("cxl0", 1)])
