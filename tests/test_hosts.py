"""Several hosts in one simulation: each its own cores, caches, DRAM and address map, sharing a switch
and the multi-logical devices (MLD) below it. Expected values come from the link physics
(tests/test_bandwidth.py derives the peaks by hand), from the arbiters' rules (round-robin, weights
in proportion to lanes), and from the same path run with one host."""

import copy
from pathlib import Path

import pytest

import simcxl
from simcxl import _core, topology
from simcxl.config.groups import SwitchParams
from simcxl.topology import TopologyError

from conftest import assert_one_line_rejection, link_bound_cxl, one_credit_everywhere

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "topologies"
GEN5_X16_READ = 52.72  # GB/s of read data per direction (tests/test_bandwidth.py, by hand)
WINDOW = 1 << 34       # each host's CXL window: 16 GiB at 4 GiB


def pool(hosts=2, up_lanes=None, dsp_lanes=16, lds=None, devices=1, **switch):
    """``hosts`` hosts, each with its own DRAM and one CXL window through an x``up_lanes[i]`` root
    port to an upstream port of one switch, whose ``devices`` downstream ports (x``dsp_lanes``)
    lead to MLDs of ``lds`` logical devices (default: one per host). Hosts and media are those of
    the link-bound system (many MSHRs, wide media); below the switch, the schema's default
    credits and device queues (64), so a congested downstream port backs up into the switch, where
    its egress queue is arbitrated, rather than into a device deep enough to hold everything."""
    d = topology.from_system(link_bound_cxl()).to_dict()
    comps, conns = d["components"], d["connections"]
    host, ddr, hb, link, dev = (comps.pop(n) for n in ("host", "local_dram", "cxl", "cxl_link0", "cxl_dev0"))
    comps.clear()
    conns.clear()
    up_lanes = up_lanes or [16] * hosts
    for i in range(hosts):
        comps[f"h{i}"] = copy.deepcopy(host)
        comps[f"h{i}_ddr"] = copy.deepcopy(ddr)
        comps[f"h{i}_cxl"] = copy.deepcopy(hb)
        comps[f"h{i}_link"] = {**copy.deepcopy(link), "lanes": up_lanes[i]}
        conns += [{"from": f"h{i}.local", "to": f"h{i}_ddr.up"},
                  {"from": f"h{i}.mem", "to": f"h{i}_cxl.up", "base": 1 << 32, "size": WINDOW},
                  {"from": f"h{i}_cxl.root_port[0]", "to": f"h{i}_link.up"},
                  {"from": f"h{i}_link.down", "to": f"sw.up[{i}]"}]
    comps["sw"] = {"type": "switch", **{**SwitchParams().to_dict(), **switch}}
    for j in range(devices):
        comps[f"d{j}_link"] = {**copy.deepcopy(link), "lanes": dsp_lanes, "credits_req": 64, "credits_rwd": 64,
                               "credits_ndr": 64, "credits_drs": 64}
        comps[f"d{j}"] = copy.deepcopy(dev)
        comps[f"d{j}"]["device"].update(logical_devices=lds or hosts, req_queue=64, resp_queue=64)
        conns += [{"from": f"sw.dsp[{j}]", "to": f"d{j}_link.up"}, {"from": f"d{j}_link.down", "to": f"d{j}.up"}]
    return d


def run(d, runs=None, **common):
    common.setdefault("threads", 16)
    common.setdefault("requests", 40000)
    return simcxl.hosts(topology.memory_system(topology.load(d)), runs, **common).set_index("host")


def test_hosts_share_a_downstream_port_round_robin():
    # Two hosts saturating one device through a shared x4 downstream port: its read data bound, by
    # hand a quarter of x16's, is split evenly by the upstream ports' turns at its egress queue.
    df = run(pool(hosts=2, dsp_lanes=4))
    total = df["read_gbps"].sum()
    assert total == pytest.approx(GEN5_X16_READ / 4, rel=0.05)
    assert df.loc["h0", "read_gbps"] == pytest.approx(total / 2, rel=0.05)
    assert df.loc["h1", "read_gbps"] == pytest.approx(total / 2, rel=0.05)


def test_weighted_arbitration_splits_in_proportion_to_the_lanes():
    # The same, the hosts on x16 and x8 ports with weighted arbitration: 16 moves to 8 per turn.
    df = run(pool(hosts=2, up_lanes=[16, 8], dsp_lanes=4, weighted_arbitration=1))
    assert df.loc["h0", "read_gbps"] / df.loc["h1", "read_gbps"] == pytest.approx(2.0, rel=0.05)
    assert df["read_gbps"].sum() == pytest.approx(GEN5_X16_READ / 4, rel=0.05)
    rr = run(pool(hosts=2, up_lanes=[16, 8], dsp_lanes=4))
    assert rr.loc["h0", "read_gbps"] / rr.loc["h1", "read_gbps"] == pytest.approx(1.0, rel=0.05)


def test_a_third_hosts_probe_waits_behind_the_others_load():
    # Hosts 0 and 1 load the shared x4 port at rising rates, then as fast as they can; host 2 only
    # probes (one dependent load at a time). Unloaded, its probe sees what the same path gives one
    # host alone; then it rises with the others' load (in-fabric congestion), steeply once they
    # saturate the port.
    d = pool(hosts=3, dsp_lanes=4)
    alone = simcxl.hosts(topology.memory_system(topology.load(d)),
                                {"h2": dict(threads=1, rate_gbps=0.01, requests=2000, probe=True)})
    probes = []
    for rate in (0.2, 4.0, 6.0, 0.0):
        df = run(d, {"h0": dict(rate_gbps=rate), "h1": dict(rate_gbps=rate),
                     "h2": dict(threads=1, rate_gbps=0.01, probe=True)}, requests=30000)
        probes.append(df.loc["h2", "probe_latency_ns_mean"])
    assert probes[0] == pytest.approx(alone.iloc[0]["probe_latency_ns_mean"], rel=0.02)
    assert all(b > a for a, b in zip(probes, probes[1:])), probes
    assert probes[-1] > 1.5 * probes[0], probes


def test_each_host_gets_a_logical_device_of_its_own():
    # Four hosts on four LDs of one MLD: the device counts each LD's reads apart, and each equals
    # what its host completed over the same window (the requests in flight at its edges aside).
    df = run(pool(hosts=4, dsp_lanes=16), threads=8, requests=20000)
    c = df.attrs["components"]
    for i in range(4):
        assert c[f"d0.ld{i}.read_gbps"] == pytest.approx(df.loc[f"h{i}", "read_gbps"], rel=0.03)
    # One x16 downstream link carries all four: each host a quarter of it.
    for i in range(4):
        assert df.loc[f"h{i}", "read_gbps"] == pytest.approx(df["read_gbps"].sum() / 4, rel=0.05)


@pytest.mark.parametrize("hosts", [2, 4])
def test_one_credit_and_one_entry_everywhere_still_completes(hosts):
    # Every credit and queue at its minimum, reads and writes from every host: slow, but nothing
    # deadlocks (the watchdog would end the run with a StallError).
    d = pool(hosts=hosts, devices=2, port_queue=1)
    one_credit_everywhere(d)
    df = run(d, threads=4, read_fraction=0.5, requests=3000)
    assert (df["read_gbps"] > 0).all() and (df["write_gbps"] > 0).all()


def test_the_shipped_pool_runs_every_host_evenly():
    s = topology.memory_system(topology.load(EXAMPLES / "pool-4hosts-mld.toml"))
    assert simcxl.host_names(s) == ["h0", "h1", "h2", "h3"]
    df = simcxl.hosts(s, threads=8, requests=20000).set_index("host")
    assert list(df.index) == ["h0", "h1", "h2", "h3"]
    assert (df["read_gbps"] > 0).all()
    assert df["read_gbps"].max() / df["read_gbps"].min() < 1.05


def _sld(d):
    d["components"]["d0"]["device"]["logical_devices"] = 1


def _two_ups(d):
    # Host 0's bridge gets a second root port into the same switch.
    d["components"]["h0_link2"] = copy.deepcopy(d["components"]["h0_link"])
    d["connections"] += [{"from": "h0_cxl.root_port[1]", "to": "h0_link2.up"},
                         {"from": "h0_link2.down", "to": "sw.up[2]"}]


def _shared_bridge(d):
    next(k for k in d["connections"] if k["from"] == "h1.mem")["to"] = "h0_cxl.up"


BAD = [
    ("an SLD two hosts reach", _sld, "d0.device.logical_devices = 1"),
    ("one host through two upstream ports", _two_ups, "sw.up"),
    ("a host bridge two hosts share", _shared_bridge, "h0_cxl"),
]


@pytest.mark.parametrize("what, edit, names", BAD, ids=[b[0] for b in BAD])
def test_bad_multi_host_graphs_are_refused_by_both_sides(what, edit, names):
    d = pool(hosts=2)
    edit(d)
    with pytest.raises((TopologyError, _core.ConfigError)) as e:
        topology.memory_system(topology.load(copy.deepcopy(d)))
    assert names in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(_core.ConfigError) as e:
        _core.validate(d)
    assert_one_line_rejection(e.value, names.split(" ")[0].split(".")[0])


def test_unknown_hosts_and_settings_are_named():
    sys = topology.memory_system(topology.load(pool(hosts=2)))
    with pytest.raises(simcxl.ParamError, match=r"'h9' is not a host of .*allowed: h0, h1"):
        simcxl.hosts(sys, {"h9": {}})
    with pytest.raises(simcxl.ParamError, match=r"h1\.threads = 0 is out of range"):
        simcxl.hosts(sys, {"h0": {}, "h1": {"threads": 0}})
    with pytest.raises(simcxl.ParamError, match=r"h0\.speed is not a traffic setting"):
        simcxl.hosts(sys, {"h0": {"speed": 1}})


def test_an_mld_behind_a_whole_address_space_window_says_to_size_it():
    # A host whose one window is the whole 52-bit space sends the MLD more than an LD's 16 TiB.
    d = pool(hosts=2)
    for k in d["connections"]:
        if k["from"] == "h0.mem":
            k.pop("base"), k.pop("size")
    with pytest.raises(_core.ConfigError, match=r"d0: a host sends it .* at most 17592186044416 .*base and size"):
        run(d, requests=1000)
