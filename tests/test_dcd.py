"""Dynamic capacity (CXL 3.0 DCD) on a pooled MLD: extents the fabric manager adds and releases
during a run, and accesses outside them, which read poison or are dropped and never reach another
host's lines. Expected counts come from the traffic's own shape: uniform random lines over the
footprint at a fixed rate, so the share outside the extents is the uncovered fraction of the
footprint times the share of the measured window it stays uncovered."""

from pathlib import Path

import pytest

import simcxl
from simcxl import _core, topology
from simcxl.fabric import FabricManager
from simcxl.params import ParamError

from conftest import assert_one_line_rejection

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "topologies" / "dcd.toml"
GIB = 1 << 30
RATE = 4.0  # GB/s per host: well below the device's peak, so requests arrive evenly in time


def pool():
    return topology.memory_system(topology.load(EXAMPLE))


def run(fm, runs=("h0", "h1"), **own):
    cfg = dict(footprint_bytes=GIB, rate_gbps=RATE, **own)
    return simcxl.hosts(pool(), {h: cfg for h in runs}, fm=fm, threads=8, requests=40000).set_index("host")


def lines(df, host, gbps_col="read_gbps"):
    return df.loc[host, gbps_col] * 1e9 * df.loc[host, "window_ns"] * 1e-9 / 64


def test_a_quarter_backed_ld_reads_poison_on_three_quarters_of_its_lines():
    df = run(FabricManager().add_capacity("dcd", "h0", 0, GIB // 4).add_capacity("dcd", "h1", 0, GIB))
    c = df.attrs["components"]
    assert c["dcd.device.ld0.dc_poison_reads"] == pytest.approx(0.75 * lines(df, "h0"), rel=0.02)
    # h1's LD is fully backed, and nothing h0 touches is counted against it.
    assert c["dcd.device.ld1.dc_poison_reads"] == 0
    # Timing is untouched: each host keeps its rate.
    assert df["read_gbps"].tolist() == pytest.approx([RATE, RATE], rel=0.01)


def test_writes_outside_the_extents_are_dropped():
    df = run(FabricManager().add_capacity("dcd", "h0", GIB // 2, GIB // 2), runs=("h0",),
             read_fraction=0.0, stores="non-temporal")
    c = df.attrs["components"]
    assert c["dcd.device.ld0.dc_dropped_writes"] == pytest.approx(0.5 * lines(df, "h0", "write_gbps"), rel=0.02)
    assert c["dcd.device.ld0.dc_poison_reads"] == 0


def test_capacity_released_during_the_run_reads_poison_from_when_the_host_let_it_go():
    fm = FabricManager().add_capacity("dcd", "h0", 0, GIB).release_capacity("dcd", "h0", 0, GIB, at_ns=100_000)
    df = run(fm, runs=("h0",))
    ev = df.attrs["fm_events"]
    # Each step's time: issued, at the device after the command, gone once the host released it.
    assert ev.loc[1, "device_ns"] == 100_000 + fm.command_ns
    assert ev.loc[1, "effective_ns"] == 100_000 + fm.command_ns + fm.accept_ns
    start, length = df.loc["h0", "window_start_ns"], df.loc["h0", "window_ns"]
    gone = (start + length - ev.loc[1, "effective_ns"]) / length
    assert 0.5 < gone < 1
    c = df.attrs["components"]
    assert c["dcd.device.ld0.dc_poison_reads"] == pytest.approx(gone * lines(df, "h0"), rel=0.02)


def test_capacity_added_during_the_run_serves_from_when_the_host_accepted_it():
    fm = FabricManager().add_capacity("dcd", "h1", 0, GIB // 2).add_capacity("dcd", "h1", GIB // 2, GIB // 2,
                                                                             at_ns=200_000)
    df = run(fm, runs=("h1",))
    start, length = df.loc["h1", "window_start_ns"], df.loc["h1", "window_ns"]
    before = (df.attrs["fm_events"].loc[1, "effective_ns"] - start) / length
    assert 0 < before < 1
    c = df.attrs["components"]
    assert c["dcd.device.ld1.dc_poison_reads"] == pytest.approx(0.5 * before * lines(df, "h1"), rel=0.03)


@pytest.mark.parametrize("build, names", [
    (lambda fm: fm.add_capacity("dcd", "h0", 0, GIB).add_capacity("dcd", "h0", GIB // 2, GIB, at_ns=10),
     ["fm[1]", "overlaps"]),
    (lambda fm: fm.release_capacity("dcd", "h0", 0, GIB, at_ns=10), ["fm[0]", "releases", "added before"]),
    (lambda fm: fm.add_capacity("h0_ddr", "h0", 0, GIB), ["fm[0].device", "dcd"]),
    (lambda fm: fm.add_capacity("dcd", "h7", 0, GIB), ["fm[0].host", "h0, h1"]),
    (lambda fm: fm.add_capacity("dcd", "h0", 32, GIB), ["fm[0]", "64-byte"]),
])
def test_fabric_manager_requests_that_make_no_sense_are_refused_before_the_run(build, names):
    with pytest.raises(ParamError) as e:
        simcxl.hosts(pool(), {"h0": {}}, fm=build(FabricManager()), threads=1, requests=1000)
    assert_one_line_rejection(e.value, *names)


def test_the_core_refuses_an_overlapping_extent_itself():
    g = topology.core_graph(topology.load(EXAMPLE))
    fm = [dict(at_ns=0, op="add", device="dcd", host="h0", start=0, bytes=GIB),
          dict(at_ns=0, op="add", device="dcd", host="h0", start=4096, bytes=64)]
    with pytest.raises(_core.ConfigError) as e:
        _core.run_hosts(g, [dict(host="h0", requests=1000)], None, fm)
    assert_one_line_rejection(e.value, "dcd", "overlaps")
    with pytest.raises(_core.ConfigError) as e:
        _core.run_hosts(g, [dict(host="h0", requests=1000)], None, [dict(fm[0], device="nope")])
    assert_one_line_rejection(e.value, "nope", "dcd")
