"""Dynamic capacity (CXL 3.0 DCD) on a pooled MLD: extents the fabric manager adds and releases
during a run, and accesses outside them, which read poison or are dropped and never reach another
host's lines. Expected counts come from the traffic's own shape: uniform random lines over the
footprint at a fixed rate, so the share outside the extents is the uncovered fraction of the
footprint times the share of the measured window it stays uncovered."""

from pathlib import Path

import pytest

import simcxl
from simcxl import _core, topology
from simcxl.workloads.fabric import FabricManager
from simcxl.config.params import ParamError

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
    assert c["dcd.ld0.dc_poison_reads"] == pytest.approx(0.75 * lines(df, "h0"), rel=0.02)
    # h1's LD is fully backed, and nothing h0 touches is counted against it.
    assert c["dcd.ld1.dc_poison_reads"] == 0
    # Timing is untouched: each host keeps its rate.
    assert df["read_gbps"].tolist() == pytest.approx([RATE, RATE], rel=0.01)


def test_writes_outside_the_extents_are_dropped():
    df = run(FabricManager().add_capacity("dcd", "h0", GIB // 2, GIB // 2), runs=("h0",),
             read_fraction=0.0, stores="non-temporal")
    c = df.attrs["components"]
    assert c["dcd.ld0.dc_dropped_writes"] == pytest.approx(0.5 * lines(df, "h0", "write_gbps"), rel=0.02)
    assert c["dcd.ld0.dc_poison_reads"] == 0


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
    assert c["dcd.ld0.dc_poison_reads"] == pytest.approx(gone * lines(df, "h0"), rel=0.02)


def test_capacity_added_during_the_run_serves_from_when_the_host_accepted_it():
    fm = FabricManager().add_capacity("dcd", "h1", 0, GIB // 2).add_capacity("dcd", "h1", GIB // 2, GIB // 2,
                                                                             at_ns=200_000)
    df = run(fm, runs=("h1",))
    start, length = df.loc["h1", "window_start_ns"], df.loc["h1", "window_ns"]
    before = (df.attrs["fm_events"].loc[1, "effective_ns"] - start) / length
    assert 0 < before < 1
    c = df.attrs["components"]
    assert c["dcd.ld1.dc_poison_reads"] == pytest.approx(0.5 * before * lines(df, "h1"), rel=0.03)


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


def test_traffic_that_follows_its_extents_grows_and_shrinks_with_them():
    # h0 holds a quarter, gains the rest at 111 us and lets the first quarter go at 311 us: following
    # its extents, no access of its falls outside them, through the switch and its LD's DPA offset.
    fm = (FabricManager().add_capacity("dcd", "h0", 0, GIB // 4)
          .add_capacity("dcd", "h0", GIB // 4, 3 * GIB // 4, at_ns=100_000)
          .release_capacity("dcd", "h0", 0, GIB // 4, at_ns=300_000))
    df = run(fm, runs=("h0",), follow_extents=True, read_fraction=0.5)
    c = df.attrs["components"]
    assert c["dcd.ld0.dc_poison_reads"] == 0 and c["dcd.ld0.dc_dropped_writes"] == 0
    assert df.loc["h0", "read_gbps"] + df.loc["h0", "write_gbps"] == pytest.approx(RATE, rel=0.01)
    # The same traffic over its whole 1 GiB, not following: the quarter it did not yet hold and the
    # quarter it had released read poison.
    c = run(fm, runs=("h0",), read_fraction=0.5).attrs["components"]
    assert c["dcd.ld0.dc_poison_reads"] > 0 and c["dcd.ld0.dc_dropped_writes"] > 0


def test_traffic_that_follows_its_extents_waits_for_its_first_capacity():
    fm = FabricManager().add_capacity("dcd", "h0", 0, GIB, at_ns=50_000)
    df = run(fm, runs=("h0",), follow_extents=True)
    # Nothing is issued before the capacity is the host's: 50 us + the command + the host's accept.
    first = 50_000 + fm.command_ns + fm.accept_ns
    assert df.loc["h0", "window_start_ns"] >= first
    assert df.attrs["components"]["dcd.ld0.dc_poison_reads"] == 0


def test_following_extents_is_refused_where_it_cannot_work():
    with pytest.raises(RuntimeError, match="h0: its traffic follows its extents on dcd, but it holds none and no "
                                           "later command adds any"):
        run(FabricManager().add_capacity("dcd", "h1", 0, GIB), runs=("h0",), follow_extents=True)
    with pytest.raises(ValueError, match="h0.traffic.follow_extents: allowed with pattern random, non-temporal "
                                         "stores and no ops only"):
        run(FabricManager().add_capacity("dcd", "h0", 0, GIB), runs=("h0",), follow_extents=True,
            pattern="sequential")
    with pytest.raises(ParamError, match="h0.follow_extents = 1 is not allowed; allowed values: True, False"):
        run(FabricManager(), runs=("h0",), follow_extents=1)


def test_an_ld_unbound_and_bound_again_moves_the_hosts_traffic_by_the_clock():
    # Two hosts on a 4-LD MLD at 4 GB/s each. The fabric manager unbinds h0's LD 0 (taking effect at
    # 111 us) and binds it LD 2 (211 us): in between, every read of h0 is denied (poison), none
    # reaches any LD; LD 0 carries h0's reads up to 111 us and LD 2 from 211 us, by the clock.
    from test_hosts import pool as mld_pool
    s = topology.memory_system(topology.load(mld_pool(hosts=2, lds=4)))
    fm = FabricManager().unbind_ld("d0", "h0", at_ns=100_000).bind_ld("d0", "h0", 2, at_ns=200_000)
    df = simcxl.hosts(s, {"h0": {"rate_gbps": RATE}, "h1": {"rate_gbps": RATE}}, fm=fm, threads=8,
                      requests=40000).set_index("host")
    c = df.attrs["components"]
    start, window = df.loc["h0", "window_start_ns"], df.loc["h0", "window_ns"]
    unbound, bound = 111_000, 211_000
    per_ns = RATE / 64  # h0's lines per ns
    assert c["d0.denied_reads"] == pytest.approx((bound - unbound) * per_ns, rel=0.01)
    assert c["d0.ld0.read_gbps"] == pytest.approx(RATE * (unbound - start) / window, rel=0.02)
    assert c["d0.ld2.read_gbps"] == pytest.approx(RATE * (start + window - bound) / window, rel=0.02)
    assert c["d0.ld1.read_gbps"] == pytest.approx(RATE, rel=0.01)  # h1 untouched
    assert c["d0.denied_writes"] == 0


def test_bindings_that_make_no_sense_are_refused_before_the_run():
    from test_hosts import pool as mld_pool
    s = topology.memory_system(topology.load(mld_pool(hosts=2, lds=4)))
    cases = [(FabricManager().bind_ld("d0", "h0", 2, at_ns=0),
              r"fm\[0\] \(bind, host h0 = 0, at 11000 ns\): d0: binds LD 2 to host 0, which holds LD 0"),
             (FabricManager().unbind_ld("d0", "h0", at_ns=0).bind_ld("d0", "h0", 1, at_ns=10),
              r"fm\[1\] .*binds LD 1, which is bound to host 1; allowed: an unbound LD"),
             (FabricManager().unbind_ld("d0", "h1", at_ns=0).unbind_ld("d0", "h1", at_ns=5),
              r"fm\[1\] .*unbinds host 1's LD, but it holds none"),
             (FabricManager().unbind_ld("d0", "h0", at_ns=0).bind_ld("d0", "h0", 4, at_ns=10),
              r"binds LD 4, which is not one of its 4 LDs")]
    for fm, msg in cases:
        with pytest.raises(ValueError, match=msg):
            simcxl.hosts(s, {"h0": {}}, fm=fm, requests=1000)
    with pytest.raises(ParamError, match=r"fm\[0\].device = 'dcd' is not a multi-logical device"):
        simcxl.hosts(s, {"h0": {}}, fm=FabricManager().unbind_ld("dcd", "h0", at_ns=0), requests=1000)
