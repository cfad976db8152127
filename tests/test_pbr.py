"""Port-based routing (CXL 3.x PBR): switches joined by inter-switch links in any shape, routed by
PBR ID over routes computed at build time. Expected values come from the link physics and the
switch's parameters (test_switch.py's hand computation, per switch hop), from shortest paths and
up*/down* routes worked out by hand on rings, and from runs with HBR switches."""

import copy
import re
from pathlib import Path

import pytest

import simcxl
from simcxl import _core, topology
from simcxl.config.groups import LinkParams, SwitchParams
from simcxl.topology import TopologyError, show

from conftest import link_bound_cxl, one_credit_everywhere
from test_switch import idle, run  # the same traffic runs as the HBR switch tests

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "topologies"
GEN5_X16_READ = 52.72  # GB/s of read data per direction (tests/test_bandwidth.py, by hand)
WINDOW = 1 << 34       # each host's CXL window: 16 GiB at 4 GiB


def fabric(switches, isls, hosts, devices, isl_lanes=16, routing="pbr", pids=None, **switch):
    """Switches s0, s1, ... joined by ``isls`` ((a, b): s<a>.dsp -> link -> s<b>.up); host h<i>'s
    one root port joins switch ``hosts[i]``, device d<j> hangs below switch ``devices[j]`` (with
    ``switches = 0``: d0 right below h0's root port). Hosts, links and devices are those of the
    link-bound system; every device has a logical device for each host. ``pids``: {(switch, port
    kind, index): pid} given on edge connections."""
    d = topology.from_system(link_bound_cxl()).to_dict()
    comps, conns = d["components"], d["connections"]
    host, ddr, hb, link, dev = (comps.pop(n) for n in ("host", "local_dram", "cxl", "cxl_link0", "cxl_dev0"))
    comps.clear()
    conns.clear()
    ups, dsps = [0] * switches, [0] * switches

    def port(kind, s):
        n = ups if kind == "up" else dsps
        n[s] += 1
        return f"s{s}.{kind}[{n[s] - 1}]"

    for s in range(switches):
        comps[f"s{s}"] = {"type": "switch", **{**SwitchParams().to_dict(), "routing": routing, **switch}}
    for i, s in enumerate(hosts):
        comps[f"h{i}"], comps[f"h{i}_ddr"], comps[f"h{i}_cxl"] = (copy.deepcopy(x) for x in (host, ddr, hb))
        comps[f"h{i}_link"] = copy.deepcopy(link)
        conns += [{"from": f"h{i}.local", "to": f"h{i}_ddr.up"},
                  {"from": f"h{i}.mem", "to": f"h{i}_cxl.up", "base": 1 << 32, "size": WINDOW},
                  {"from": f"h{i}_cxl.root_port[0]", "to": f"h{i}_link.up"}]
        if switches:
            conns.append({"from": f"h{i}_link.down", "to": port("up", s)})
    for j, s in enumerate(devices):
        comps[f"d{j}_link"] = copy.deepcopy(link)
        comps[f"d{j}"] = copy.deepcopy(dev)
        comps[f"d{j}"]["device"]["logical_devices"] = max(1, len(hosts))
        conns += [{"from": port("dsp", s) if switches else "h0_link.down", "to": f"d{j}_link.up"} if switches else
                  {"from": "h0_link.down", "to": f"d{j}.up"}]
        if switches:
            conns.append({"from": f"d{j}_link.down", "to": f"d{j}.up"})
        else:
            comps.pop(f"d{j}_link")
    for k, (a, b) in enumerate(isls):
        comps[f"isl{k}"] = {**copy.deepcopy(link), "lanes": isl_lanes}
        conns += [{"from": port("dsp", a), "to": f"isl{k}.up"}, {"from": f"isl{k}.down", "to": port("up", b)}]
    for c in conns:
        for (s, kind, i), pid in (pids or {}).items():
            if f"s{s}.{kind}[{i}]" in (c["from"], c["to"]):
                c["pid"] = pid
    return d


def ring(n):
    return [(i, (i + 1) % n) for i in range(n)]


def per_switch_ns():
    # test_switch.py's hand computation, per switch on the path: the traversal each way, and one more
    # hop of an idle Gen5 x16 link each way (a MemRd in one 68 B flit, a MemData in two).
    lk = LinkParams()
    flit_ns = 68 / (32e9 * lk.lanes * 128 / 130 / 8) * 1e9
    return 2 * 100.0 + (1 * flit_ns + lk.phy_latency_ns) + (2 * flit_ns + lk.phy_latency_ns), flit_ns, lk


@pytest.mark.parametrize("k", [1, 2, 3])
def test_idle_latency_of_k_switch_hops_is_the_hand_computation(k):
    # A chain s0 - s1 - ... - sk: the host on s0, the device below sk; k inter-switch hops, k + 1 switches.
    per, flit_ns, lk = per_switch_ns()
    r = idle(fabric(k + 1, [(i, i + 1) for i in range(k)], [0], [k]))
    base = idle(fabric(0, [], [0], [0]))
    assert r["read.stage.switch_ns"] == pytest.approx((k + 1) * 200.0, abs=0.01)
    assert r["read.stage.link_down_ns"] == pytest.approx((k + 2) * (flit_ns + lk.phy_latency_ns), abs=0.01)
    assert r["read.stage.link_up_ns"] == pytest.approx((k + 2) * (2 * flit_ns + lk.phy_latency_ns), abs=0.01)
    assert r["read_latency_ns_mean"] - base["read_latency_ns_mean"] == pytest.approx((k + 1) * per, rel=0.02)


@pytest.mark.parametrize("at,hops", [(1, 1), (2, 2), (3, 1)])
def test_a_ring_takes_the_short_way(at, hops):
    # On a 4-ring the device three switches along one way is one hop the other way: by hand
    # min(at, 4 - at) hops, whichever way the links were declared.
    per, _, _ = per_switch_ns()
    r = idle(fabric(4, ring(4), [0], [at]))
    base = idle(fabric(0, [], [0], [0]))
    assert r["read.stage.switch_ns"] == pytest.approx((hops + 1) * 200.0, abs=0.01)
    assert r["read_latency_ns_mean"] - base["read_latency_ns_mean"] == pytest.approx((hops + 1) * per, rel=0.02)


@pytest.mark.parametrize("lanes", [4, 8])
def test_the_narrowest_link_bounds_bandwidth(lanes):
    # Host on s0, device below s3 of a 4-ring: the one hop s0 - s3 runs over an x4 or x8 link
    # (declared s3 -> s0, so the requests and data cross it against its declared direction).
    r = run(fabric(4, ring(4), [0], [3], isl_lanes=lanes, latency_ns=50.0))
    peak = GEN5_X16_READ * lanes / 16
    assert 0.93 * peak <= r["total_gbps"] <= 1.001 * peak


def test_routes_are_shortest_with_ties_to_the_lowest_port():
    # The example's 4-ring: h0 on s0, h1 on s2, a device on each switch. Ports are numbered up
    # ports first, then downstream ports; PIDs go to the edge ports in that order, switch by switch.
    t = topology.load(EXAMPLES / "pbr-ring.toml")
    (f,) = show.pbr_fabrics(t)
    assert f["algorithm"] == "shortest"
    pid = {e["component"]: e["pid"] for e in f["edges"]}
    assert pid == {"h0_link": 0, "exp0": 1, "exp1": 2, "h1_link": 3, "exp2": 4, "exp3": 5}
    # ring0 to exp2 (two hops either way): ring0's up1 (port 1, toward ring3) before its dsp1 (port 3).
    assert f["routes"]["ring0"][pid["exp2"]] == "up1"
    assert f["routes"]["ring3"][pid["exp2"]] == "up0"
    # ring2 to exp0: up1 (toward ring1) before dsp1; one hop where one hop does.
    assert f["routes"]["ring2"][pid["exp0"]] == "up1"
    assert f["routes"]["ring0"][pid["exp1"]] == "dsp1" and f["routes"]["ring0"][pid["exp3"]] == "up1"
    text = show.text(t)
    assert "routes shortest" in text and "PID    4: ring2.dsp0 -> exp2 (device)" in text


def test_a_cyclic_dependency_falls_back_to_up_down_routing():
    # A 5-ring with a host and a device on every switch (a second device on s0: six, a way count a
    # decoder allows). The shortest path from s<i> to s<i+2> is the one through s<i+1>, so the
    # request channels s0->s1->s2->s3->s4->s0 each wait on the next: a cycle (Dally and Seitz).
    # Up*/down* over the BFS tree from s0 (the lowest PID, h0's) gives levels s0: 0, s1 and s4: 1,
    # s2 and s3: 2; a hop is up toward the lower (level, index), so s3 -> s2 is up and s2 -> s3 down.
    # From s2 to s4: s2 -> s3 -> s4 ends going up, illegal; legal is up s2 -> s1 -> s0, then down to s4.
    d = fabric(5, ring(5), [0, 1, 2, 3, 4], [0, 0, 1, 2, 3, 4])
    (f,) = show.pbr_fabrics(topology.load(d))
    assert f["algorithm"] == "up*/down*" and f["root"] == "s0"
    chain = re.findall(r"s(\d)\.", f["cycle"])
    assert f["cycle"].startswith("requests:") and len(chain) == 6 and chain[0] == chain[-1]
    pid = {e["component"]: e["pid"] for e in f["edges"]}
    # s2's ports: up0 h2, up1 from s1, dsp0 d3, dsp1 to s3. s4's device is d5.
    assert f["routes"]["s2"][pid["d5"]] == "up1"       # up to s1
    assert f["routes"]["s1"][pid["d5"]] == "up1"       # s1: up0 h1, up1 from s0: up to s0
    assert f["routes"]["s0"][pid["d5"]] == "up1"       # s0: up0 h0, up1 from s4: down to s4
    assert f["routes"]["s4"][pid["d5"]] == "dsp0"
    # s3 to s1 (two hops, s3 -> s2 -> s1, both up) stays shortest.
    assert f["routes"]["s3"][pid["d2"]] == "up1" and f["routes"]["s2"][pid["d2"]] == "up1"
    # And every request still completes.
    r = simcxl.hosts(topology.memory_system(topology.load(d)), threads=4, requests=4000).set_index("host")
    assert (r["read_gbps"] > 0).all()


def test_bad_fabrics_are_refused_naming_the_part():
    with pytest.raises(TopologyError, match=r'joined in a cycle.*set routing = "pbr" on s0, s1, s2, s3'):
        topology.load(fabric(4, ring(4), [0], [1], routing="hbr"))
    d = fabric(4, ring(4), [0], [1])
    d["components"]["s2"]["routing"] = "hbr"
    with pytest.raises(TopologyError, match=r'mixing HBR and PBR switches in one cycle .*set routing = "pbr" on s2$'):
        topology.load(d)
    with pytest.raises(TopologyError, match=r"pid = 4096 is out of range; allowed: a whole number from 0 to 4095"):
        topology.load(fabric(2, [(0, 1)], [0], [1], pids={(0, "up", 0): 4096}))
    with pytest.raises(TopologyError, match=r"s1.dsp0: pid = 7 is given to two edge ports"):
        topology.load(fabric(2, [(0, 1)], [0], [1], pids={(0, "up", 0): 7, (1, "dsp", 0): 7}))
    with pytest.raises(TopologyError, match=r"pid = 3 belongs to a PBR switch's edge port"):
        topology.load(fabric(2, [(0, 1)], [0], [1], pids={(0, "dsp", 0): 3}))
    with pytest.raises(TopologyError, match=r"s0.routing = 'tree' is not allowed; allowed: 'hbr', 'pbr'"):
        topology.load(fabric(2, [(0, 1)], [0], [1], routing="tree"))
    with pytest.raises(TopologyError, match=r"holds 5 devices; every host's decoder interleaves over all of them"):
        topology.load(fabric(5, ring(5), [0], [0, 1, 2, 3, 4]))


def test_a_switch_past_32_ports_is_refused_naming_it():
    # A switch keeps its ports in 32-bit masks. A PBR inter-switch link is an upstream and a downstream
    # port at both of its switches (requests cross it both ways): with 31 links, s0's host makes 32
    # upstream ports there and s1's device 32 downstream ones, which runs; a 32nd link makes s0's
    # upstream ports 33, and a second device at s0 its downstream ones.
    run(fabric(2, [(0, 1)] * 31, [0], [1]), threads=1, requests=100)
    for links, devices, part in ((32, [1], "up: 33 upstream"), (31, [0, 0, 1], "dsp: 33 downstream")):
        msg = rf"^s0\.{part} ports, counting one for each inter-switch link at s0; allowed: 1 to 32$"
        with pytest.raises(TopologyError, match=msg):
            topology.load(fabric(2, [(0, 1)] * links, [0], devices))
        with pytest.raises(_core.ConfigError, match=msg):  # the core's graph spells pbr as 1
            _core.validate(fabric(2, [(0, 1)] * links, [0], devices, routing=1))


def test_explicit_pids_are_kept_and_the_rest_assigned():
    t = topology.load(fabric(2, [(0, 1)], [0], [1, 1], pids={(1, "dsp", 1): 0}))
    (f,) = show.pbr_fabrics(t)
    assert {e["component"]: e["pid"] for e in f["edges"]} == {"d1": 0, "h0_link": 1, "d0": 2}


def test_the_example_ring_runs_two_hosts_with_stats_per_inter_switch_port():
    t = topology.load(EXAMPLES / "pbr-ring.toml")
    df = simcxl.hosts(topology.memory_system(t), threads=8, requests=20000).set_index("host")
    assert (df["read_gbps"] > 0).all()
    c = df.attrs["components"]
    # Requests leave ring0 toward exp1 by its dsp1 and arrive at ring1 on its up0: counted alike.
    # (counted as each switch passes them on, so within what is in flight at the window's ends)
    assert c["ring0.dsp1.requests_out"] > 1000
    assert c["ring1.up0.requests_in"] == pytest.approx(c["ring0.dsp1.requests_out"], rel=0.01)
    assert c["ring0.dsp1.responses_in"] == pytest.approx(c["ring1.up0.responses_out"], rel=0.01)
    assert c["ring0.up0.pid"] == 0 and c["ring2.dsp0.pid"] == 4
    assert c["isl01.rev_m2s.messages"] >= 0 and c["isl01.m2s.messages"] > 0


def test_a_million_random_requests_with_every_credit_at_one_complete():
    # Two hosts, four devices on a 4-ring, every credit and queue at 1, reads and writes mixed:
    # any deadlock would end the run with the watchdog's StallError naming the queue of the
    # oldest request (see the next test).
    d = fabric(4, ring(4), [0, 2], [0, 1, 2, 3], port_queue=1)
    one_credit_everywhere(d)
    df = simcxl.hosts(topology.memory_system(topology.load(d)), threads=16, requests=500_000,
                      read_fraction=0.5).set_index("host")
    assert (df["read_gbps"] > 0).all() and (df["write_gbps"] > 0).all()


def test_the_watchdog_names_the_component_holding_the_oldest_request():
    # The device below s2 stops answering after five responses: the run ends naming its queue.
    d = topology.core_graph(topology.load(fabric(4, ring(4), [0], [2])))
    d["fault"] = {"device_stops_after": 5}
    with pytest.raises(_core.StallError) as e:
        _core.run_traffic(d, 16, 1.0, "random", 1 << 30, 20000, 0.0, 0.0, False, None)
    assert re.search(r"in d0\.device\.tx", str(e.value)), str(e.value)


def test_hbr_by_default_and_by_name_give_identical_figures():
    d = topology.load(EXAMPLES / "switch-2level.toml").to_dict()
    named = copy.deepcopy(d)
    for c in named["components"].values():
        if c["type"] == "switch":
            c["routing"] = "hbr"
    a, b = run(d, threads=32, requests=20000), run(named, threads=32, requests=20000)
    assert a.drop("memory", errors="ignore").equals(b.drop("memory", errors="ignore"))
