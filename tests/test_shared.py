"""Memory shared by several hosts, coherent by HDM-DB back-invalidate (simcxl.shared).

Expected counts come from the protocol by hand: a store to a line another host owns invalidates
that owner (one BISnpInv, and the owner's write-back of its dirty copy); a line leaving a full
snoop filter is invalidated in every host holding it."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simcxl
from simcxl import topology
from simcxl.config.params import ParamError
from simcxl.workloads.sharing import CoherenceViolation

from conftest import one_credit_everywhere
from test_hosts import pool

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "topologies" / "shared-8hosts-hdmdb.toml"


def shared_system(hosts, one_credit=False, **device):
    d = pool(hosts=hosts, lds=1)
    d["components"]["d0"]["device"].update(shared=1, **device)
    if one_credit:
        one_credit_everywhere(d)
    return topology.memory_system(topology.load(d))


def counters(df, dev="d0"):
    c = df.attrs["components"]
    return {k: c[f"{dev}.{k}"] for k in ("bisnp_inv", "bisnp_data", "birsp_i", "birsp_s", "sf_evictions")}


@pytest.mark.parametrize("hosts", [2, 4, 8, 16])
def test_pingpong_back_invalidates_equal_the_hand_count(hosts):
    lines, rounds = 4, 5
    df = simcxl.shared(shared_system(hosts), pattern="pingpong", lines=lines, rounds=rounds)
    # Each line's first store finds no owner; every later one (another host's) invalidates the last owner.
    moves = lines * (hosts * rounds - 1)
    assert counters(df) == {"bisnp_inv": moves, "bisnp_data": 0, "birsp_i": moves, "birsp_s": 0, "sf_evictions": 0}
    assert df["snoop_writebacks"].sum() == moves  # each owner held the line dirty (M)
    assert df["stores"].sum() == lines * hosts * rounds
    assert df.attrs["components"]["checker_violations"] == 0


def test_a_lone_host_is_never_snooped():
    df = simcxl.shared(shared_system(1), pattern="pingpong", lines=8, rounds=5)
    assert counters(df)["bisnp_inv"] == 0
    assert df["misses"].sum() == 8  # the first store to each line; the rest hit in M


@pytest.mark.parametrize("footprint", [16, 32, 33, 48])
def test_lines_leaving_a_full_snoop_filter_are_invalidated(footprint):
    # One host walks `footprint` lines in a cycle through a fully associative LRU filter of 32:
    # with room for all, only the first pass misses; with one line too many, every access after
    # the filter fills evicts the least recently used line, the very line the walk needs next.
    entries, accesses = 32, 1000
    df = simcxl.shared(shared_system(1, snoop_filter_entries=entries, snoop_filter_ways=entries),
                       pattern="sequential", lines=footprint, accesses=accesses, store_fraction=0.0)
    c = counters(df)
    expected = 0 if footprint <= entries else accesses - entries
    assert c["sf_evictions"] == expected and c["bisnp_inv"] == expected and c["birsp_i"] == expected
    assert df["misses"].sum() == (footprint if footprint <= entries else accesses)


def test_back_invalidates_rise_once_the_footprint_exceeds_the_filter():
    # Loads only: hosts share every line, so no access conflicts; snoops come from the filter alone.
    footprint, got = 256, []
    for entries in (1024, 256, 128, 64):
        df = simcxl.shared(shared_system(4, snoop_filter_entries=entries, snoop_filter_ways=16), threads=2,
                           lines=footprint, accesses=20000, store_fraction=0.0)
        got.append(counters(df)["bisnp_inv"])
    assert got[0] == got[1] == 0  # the 256 lines fill 16 sets of 16 ways evenly
    assert 0 < got[2] < got[3]


@pytest.mark.parametrize("one_credit", [False, True])
def test_random_loads_and_stores_from_eight_hosts_stay_coherent(one_credit):
    # Small caches and a small filter: write-backs, evictions, upgrades and snoops of lines in flight.
    df = simcxl.shared(shared_system(8, one_credit, snoop_filter_entries=64, snoop_filter_ways=4), threads=4,
                       lines=256, accesses=100_000, store_fraction=0.3, cache_lines=8, cache_ways=2)
    c = df.attrs["components"]
    assert df["accesses"].iloc[0] == 100_000
    assert c["checker_violations"] == 0 and c["checker_checks"] > 300_000
    assert c["d0.bisnp_data"] > 0 and c["d0.sf_evictions"] > 0
    assert df["writebacks"].sum() > 0 and df["snoops_deferred"].sum() > 0


@settings(max_examples=12, deadline=None)
@given(hosts=st.integers(2, 6), threads=st.integers(1, 3), lines=st.integers(1, 96),
       store=st.floats(0, 1), ways=st.sampled_from([1, 2, 4]), sets=st.sampled_from([16, 32]),
       cache_sets=st.sampled_from([2, 4, 16]), one=st.booleans(), victim=st.integers(0, 1))
def test_any_mix_completes_without_violations(hosts, threads, lines, store, ways, sets, cache_sets, one, victim):
    df = simcxl.shared(shared_system(hosts, one, snoop_filter_entries=ways * sets, snoop_filter_ways=ways,
                                     snoop_filter_victim=victim),
                       threads=threads, lines=lines, accesses=3000, store_fraction=store,
                       cache_lines=2 * cache_sets, cache_ways=2)
    assert df["accesses"].iloc[0] == 3000
    assert df.attrs["components"]["checker_violations"] == 0


def test_the_shipped_eight_host_topology_shares_its_device():
    df = simcxl.shared(str(EXAMPLE), pattern="pingpong", lines=2, rounds=3)
    assert list(df["host"]) == [f"h{i}" for i in range(8)]
    assert counters(df, "shared_mem")["bisnp_inv"] == 2 * (8 * 3 - 1)


def test_bad_requests_are_named():
    with pytest.raises(ParamError, match="pattern = 'zigzag' is not allowed; allowed values: random, sequential"):
        simcxl.shared(shared_system(2), pattern="zigzag")
    with pytest.raises(ParamError, match="hosts: 'h9' is not a host"):
        simcxl.shared(shared_system(2), hosts=["h9"])
    with pytest.raises(ValueError, match="shared: the system has no shared device; allowed: a Type-3 device with "
                                         "device.shared = 1"):
        simcxl.shared(topology.memory_system(topology.load(pool(hosts=2))))
    with pytest.raises(ValueError, match=r"shared.lines = 268435457 is out of range; allowed: at most 268435456 "
                                         r"\(h0's window"):
        simcxl.shared(shared_system(2), lines=(1 << 28) + 1)
    with pytest.raises(ValueError, match="cache_lines = 100 is not allowed; allowed: whole sets of cache_ways"):
        simcxl.shared(shared_system(2), cache_lines=100, cache_ways=16)


def test_a_violation_is_reported_not_returned(monkeypatch):
    from simcxl.workloads import sharing

    def corrupt(*a, **k):
        r = dict(real(*a, **k))
        r["detail"] = "at 1 ns: h1 read stale data on line 0x0"
        return r
    real = sharing._core.run_shared
    monkeypatch.setattr(sharing._core, "run_shared", corrupt)
    with pytest.raises(CoherenceViolation, match="the first at 1 ns: h1 read stale data"):
        simcxl.shared(shared_system(2), pattern="pingpong", lines=1, rounds=1)
