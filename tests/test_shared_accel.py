"""CXL.cache devices (accelerators) of several hosts sharing an HDM-DB device's memory (simcxl.shared).

An accelerator's loads and stores of the shared region go to its host's home agent, which has the
host's coherent cache of the region get the line from the device first; a back-invalidate (BISnp)
to a host reaches its accelerator's cache through the home agent. Expected counts come from the
protocol by hand: a store to a line another host holds invalidates that host (one BISnpInv, and the
write-back of its dirty copy); within one host, the home agent takes the line back from its device
with a snoop and no message reaches the shared device."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simcxl
from simcxl import topology
from simcxl.config.params import ParamError

from conftest import one_credit_everywhere

ROOT = Path(__file__).resolve().parents[1] / "examples" / "topologies"
EXAMPLE = ROOT / "shared-4hosts-accel.toml"


def with_accelerators(graph: dict, hosts, preset="type1-asic") -> dict:
    """A graph (as a dict) with a home agent and one accelerator of `preset` below each of `hosts`."""
    for h in hosts:
        graph["components"][f"{h}_home"] = {"type": "home_agent", "from": preset}
        graph["components"][f"{h}_acc_link"] = {"type": "link", "from": preset}
        graph["components"][f"{h}_acc"] = {"type": "accelerator", "from": preset}
        graph["connections"] += [{"from": f"{h}.home", "to": f"{h}_home.host"},
                                 {"from": f"{h}_home.root_port[0]", "to": f"{h}_acc_link.up"},
                                 {"from": f"{h}_acc_link.down", "to": f"{h}_acc.up"}]
    return graph


def one_cache_credit_everywhere(graph: dict) -> dict:
    """Every CXL.cache and CXL.mem credit, home tracker, host bridge and device queue at 1."""
    for c in one_credit_everywhere(graph)["components"].values():
        if c["type"] == "accelerator":
            c.setdefault("cache", {}).update(credits_d2h_req=1, credits_d2h_rsp=1, credits_d2h_data=1,
                                             credits_h2d_req=1, credits_h2d_rsp=1, credits_h2d_data=1,
                                             credits_bisnp=1, credits_birsp=1)
        if c["type"] == "home_agent":
            c["tracker"] = 1
    return graph


def eight_hosts_with_devices(one_credit=False) -> dict:
    d = topology.load(ROOT / "shared-8hosts-hdmdb.toml").to_dict()
    with_accelerators(d, [f"h{i}" for i in range(8)])
    for c in d["components"].values():
        if c["type"] == "accelerator":  # a small cache: evictions of shared lines too
            c.setdefault("cache", {}).update(bytes=4096, assoc=4)
        if c["type"] == "type3":
            c.setdefault("device", {}).update(snoop_filter_entries=64, snoop_filter_ways=4)
    return one_cache_credit_everywhere(d) if one_credit else d


def counters(df, dev="shared_mem"):
    c = df.attrs["components"]
    return {k: c[f"{dev}.{k}"] for k in ("bisnp_inv", "bisnp_data", "birsp_i", "birsp_s", "sf_evictions")}


def test_pingpong_between_a_core_and_another_hosts_accelerator_equals_the_hand_count():
    lines, rounds = 4, 5
    df = simcxl.shared(str(EXAMPLE), ["h0", "h1_acc"], pattern="pingpong", lines=lines, rounds=rounds)
    c = df.attrs["components"]
    # Ownership of each line moves 2 x rounds - 1 times, each time to the other host: one BISnpInv each.
    moves = lines * (2 * rounds - 1)
    assert counters(df) == {"bisnp_inv": moves, "bisnp_data": 0, "birsp_i": moves, "birsp_s": 0, "sf_evictions": 0}
    h0, acc = df.set_index("host").loc["h0"], df.set_index("device").loc["h1_acc"]
    # h0 is snooped before each of the accelerator's stores (lines x rounds), and held the line dirty each time.
    assert h0["snoops"] == lines * rounds and h0["snoop_writebacks"] == lines * rounds
    # h1 is snooped before each of h0's stores after the first round; each BISnp reaches the accelerator's
    # cache through h1's home agent (a SnpInv), whose dirty line h1 writes back to the device.
    to_h1 = lines * (rounds - 1)
    assert c["h1.shared_cache.bisnps"] == to_h1 and c["h1.shared_cache.snoop_recalls"] == to_h1
    assert c["h1_home.snoops_snpinv"] == to_h1 and acc["snoops_snpinv"] == to_h1
    assert c["h1.shared_cache.home_reads"] == c["h1.shared_cache.home_misses"] == lines * rounds
    assert acc["stores"] == acc["misses"] == lines * rounds and h0["misses"] == lines * rounds
    assert c["checker_violations"] == 0


def test_a_host_and_its_own_accelerator_exchange_lines_without_the_shared_device():
    lines, rounds = 4, 5
    df = simcxl.shared(str(EXAMPLE), ["h1", "h1_acc"], pattern="pingpong", lines=lines, rounds=rounds)
    c = df.attrs["components"]
    h1 = df.set_index("device").loc[""]
    # Only the host's first store to each line reaches the device (for ownership, no other holder).
    assert counters(df)["bisnp_inv"] == 0 and h1["misses"] == lines
    # The accelerator's stores find the line owned by its host's cache (no miss there); each later
    # core store takes it back through the home agent (a recall: SnpInv and the dirty data).
    assert h1["shared_cache.home_reads"] == lines * rounds and h1["shared_cache.home_misses"] == 0
    assert h1["shared_cache.core_recalls"] == lines * (rounds - 1)
    assert c["h1_home.snoops_snpinv"] == lines * (rounds - 1)
    assert c["checker_violations"] == 0


def test_the_shipped_topology_runs_every_host_and_device():
    df = simcxl.shared(str(EXAMPLE), pattern="pingpong", lines=2, rounds=3)
    assert list(df["host"]) == [f"h{i}" for i in range(4)] * 2
    assert list(df["device"]) == [""] * 4 + [f"h{i}_acc" for i in range(4)]
    # Eight initiators on four hosts, in order h0..h3, h0_acc..h3_acc: every move crosses hosts.
    assert counters(df)["bisnp_inv"] == 2 * (8 * 3 - 1)
    assert df.attrs["components"]["checker_violations"] == 0


@pytest.mark.parametrize("one_credit", [False, True])
def test_random_loads_and_stores_from_hosts_and_devices_stay_coherent(one_credit):
    # 8 hosts and their 8 accelerators, 4 threads each, on 256 lines through 64-line host caches, 64-line
    # device caches and a 64-entry filter: write-backs, evictions, recalls and snoops of lines in flight.
    df = simcxl.shared(topology.memory_system(topology.load(eight_hosts_with_devices(one_credit))), threads=4,
                       lines=256, accesses=200_000, store_fraction=0.3, cache_lines=64, cache_ways=4)
    c = df.attrs["components"]
    assert df["accesses"].iloc[0] == 200_000
    assert c["checker_violations"] == 0 and c["checker_checks"] > 500_000
    hosts, devs = df[df["device"] == ""], df[df["device"] != ""]
    assert (devs["loads"] + devs["stores"]).min() > 0 and devs["snoops"].sum() > 0
    assert hosts["shared_cache.snoop_recalls"].sum() > 0 and hosts["shared_cache.core_recalls"].sum() > 0
    assert c["shared_mem.bisnp_data"] > 0 and c["shared_mem.sf_evictions"] > 0
    if not one_credit:  # (with one credit the lines are snooped away before a device cache fills)
        assert sum(c[f"h{i}_acc.cache.clean_evicts"] + c[f"h{i}_acc.cache.dirty_evicts"] for i in range(8)) > 0


@settings(max_examples=10, deadline=None)
@given(hosts=st.integers(1, 4), threads=st.integers(1, 3), lines=st.integers(1, 48), store=st.floats(0, 1),
       one=st.booleans(), cache_sets=st.sampled_from([2, 16]))
def test_any_mix_of_hosts_and_devices_completes_without_violations(hosts, threads, lines, store, one, cache_sets):
    from test_hosts import pool
    d = pool(hosts=hosts, lds=1)
    d["components"]["d0"]["device"].update(shared=1, snoop_filter_entries=32, snoop_filter_ways=2)
    with_accelerators(d, [f"h{i}" for i in range(hosts)])
    for c in d["components"].values():
        if c["type"] == "accelerator":
            c.setdefault("cache", {}).update(bytes=1024, assoc=2)
    if one:
        one_cache_credit_everywhere(d)
    df = simcxl.shared(topology.memory_system(topology.load(d)), threads=threads, lines=lines, accesses=3000,
                       store_fraction=store, cache_lines=2 * cache_sets, cache_ways=2)
    assert df["accesses"].iloc[0] == 3000
    assert df.attrs["components"]["checker_violations"] == 0


def test_unsupported_combinations_are_named():
    d = with_accelerators(topology.load(EXAMPLE).to_dict(), [])
    d["components"]["h1_acc"]["accel"]["type"] = 2
    with pytest.raises(ValueError, match=r"h1_acc.accel.type = 2 is not allowed below h1; allowed: 1 \(Type-2 "
                                         r"device memory is modelled below the first host only\)"):
        simcxl.shared(topology.memory_system(topology.load(d)))
    d = topology.load(EXAMPLE).to_dict()
    d["components"]["h0_acc"]["accel"]["type"] = 2
    with pytest.raises(ValueError, match="shared: device 'h0_acc' is Type-2; allowed: Type-1 devices"):
        simcxl.shared(topology.memory_system(topology.load(d)))
    # Other workloads build the first host's CXL.cache devices only, and say so.
    with pytest.raises(ValueError, match=r"h1_home: CXL.cache devices below a host other than the first \(h1\) run "
                                         r"only in shared runs"):
        simcxl.hosts(topology.memory_system(topology.load(EXAMPLE)), requests=1000)
    with pytest.raises(ParamError, match="hosts: 'h9_acc' is not a host or CXL.cache device"):
        simcxl.shared(str(EXAMPLE), ["h0", "h9_acc"])
