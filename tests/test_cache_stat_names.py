"""CXL.cache statistics under their graph components (docs/reference/stats.md): the home agent's
(`home.requests_rdshared`), each accelerator's (`dev0.cache.misses`), its link's per channel
(`dev0_link.d2h_req.messages`) and the NIC engine's (`dev0.ops`). Expected values are counted by
hand from the workload: N loads by one requester to N distinct lines of a cold cache that holds
them all are N misses, N RdShared at the home, N fills, N host DRAM reads, and one D2H request,
one H2D response (GO) and one H2D data message each."""

from __future__ import annotations

import pytest

from simcxl import _core
from simcxl.topology import core_graph
from simcxl.topology import stats as S
from simcxl.workloads import coherent, nic

N = 256  # lines: within the 128 KiB (2,048-line) device cache of type1-asic, so nothing is evicted
# The names these counters had before they moved under their components: none may be left.
OLD = ("device_loads", "device_misses", "home_requests_RdShared", "host_memory_reads", "host_dram_reads",
       "messages_d2h_req", "link_up_utilization", "max_mshrs", "nic_ops", "ring_errors", "wire_frames")


def loads(system, **kw):
    return coherent.accel(system, "load", "sequential", "host", requesters=1, depth=1, footprint=N * 64,
                          requests=N, **kw).iloc[0]


def test_sequential_loads_to_distinct_lines_count_under_their_components():
    r = loads("type1-asic")
    assert r["dev0.cache.loads"] == r["dev0.cache.misses"] == N and r["dev0.cache.hits"] == 0
    assert r["dev0.cache.stores"] == 0 and r["dev0.cache.clean_evicts"] == r["dev0.cache.dirty_evicts"] == 0
    assert r["dev0.cache.fills_shared"] == N and r["dev0.cache.fills_exclusive"] == 0  # RdShared grants S
    assert r["home.requests_rdshared"] == N and r["home.requests_rdown"] == r["home.requests_cleanevict"] == 0
    assert r["home.memory_reads"] == r["local_dram.reads"] == N and r["local_dram.writes"] == 0
    assert r["dev0_link.d2h_req.messages"] == r["dev0_link.h2d_rsp.messages"] == r["dev0_link.h2d_data.messages"] == N
    assert r["dev0_link.d2h_data.messages"] == r["dev0_link.h2d_req.messages"] == 0  # no write-back, no snoop
    assert r["dev0.cache.max_mshrs"] == 1  # one requester, one access in flight
    assert r["dev0.dcoh.bias_flips_to_device"] == r["dev0.dcoh.back_invalidates"] == 0  # Type-1: no device memory
    assert not set(OLD) & set(r.index)


def test_stores_ask_for_ownership():
    r = coherent.accel("type1-asic", "store", "sequential", "host", requesters=1, depth=1, footprint=N * 64,
                       requests=N).iloc[0]
    assert r["dev0.cache.stores"] == r["dev0.cache.misses"] == N and r["dev0.cache.loads"] == 0
    assert r["home.requests_rdown"] == N and r["home.requests_rdshared"] == 0


def test_copies_of_one_device_report_together():
    # accel.devices = 2: each copy runs its own N accesses; the component counts both.
    r = loads(coherent.load("type1-asic").replace(**{"accel.devices": 2}))
    assert r["dev0.cache.loads"] == r["dev0.cache.misses"] == 2 * N
    assert r["dev0_link.d2h_req.messages"] == r["home.requests_rdshared"] == 2 * N


def test_two_devices_report_each_under_its_own_name():
    s = coherent.load("a=type1-asic+b=type1-asic")
    r = loads(s, devices={"b": {"requesters": 0}})
    assert r["a.cache.misses"] == N and r["b.cache.loads"] == 0
    assert r["a_link.d2h_req.messages"] == N and r["b_link.d2h_req.messages"] == 0
    assert r["home.requests_rdshared"] == N


def test_the_nic_engine_reports_under_the_nic():
    threads, iters = 2, 50
    g = core_graph(nic.load("type1-asic"))
    r = _core.run_rao(g, "rand", "add", "cxl-nic", threads, iters, 1 << 12)
    # One atomic per iteration and thread, each executed once by the NIC; one descriptor each.
    assert r["ops"] == r["dev0.ops"] == threads * iters
    assert r["dev0.ring_errors"] == 0 and r["dev0.ordering_idle_at_end"] == 1
    p = _core.run_rao(g, "rand", "add", "pcie-nic", threads, iters, 1 << 12)
    assert "dev0.ops" not in p and p["dev0.ordering_idle_at_end"] == 1  # a PCIe NIC: no CXL-NIC engine
    assert not set(OLD) & set(r) | set(OLD) & set(p)
    for row in (r, p):
        check_registry(row, {"dev0": "nic", "dev0_link": "link", "home": "home_agent", "local_dram": "dram"})


def check_registry(row, comps):
    """Every statistic of these components matches its type's registry, and every one the type always reports is there."""
    got = {}
    for k in row.keys():
        c, _, stat = k.partition(".")
        if c in comps:
            got.setdefault(c, set()).add(stat)
    assert set(got) == set(comps)
    for c, names in got.items():
        pat = S.pattern(comps[c])
        assert all(pat.match(n) for n in names), (c, sorted(n for n in names if not pat.match(n)))
        always = {s["name"] for s in S.STATS[comps[c]] if not s["when"]}
        assert always <= names, (c, always - names)


@pytest.mark.parametrize("preset", ["type1-asic", "type2-bias", "type2-hdmdb"])
def test_accelerator_runs_report_what_the_registry_lists(preset):
    r = loads(preset).to_dict()
    check_registry(r, {"dev0": "accelerator", "dev0_link": "link", "home": "home_agent", "local_dram": "dram"})
