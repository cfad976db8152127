"""CXL.cache devices behind a CXL switch on one home-agent root port (examples/topologies/switch-accel.toml):
an idle miss pays the switch both ways and one more link crossing each way, two devices share the upstream
link's flits, a random coherence stress at one credit everywhere completes with no violation, the
configurations the model does not support are refused naming the component."""

from __future__ import annotations

import copy
import math
import subprocess
import sys
from pathlib import Path

import pytest

from simcxl import _core
from simcxl import topology as T
from simcxl.topology import TopologyError, core_graph
from simcxl.workloads import coherent

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "topologies" / "switch-accel.toml"
EXAMPLES = EXAMPLE.parent
SW_NS = 100.0  # the schema's switch latency_ns, which the example takes
PHY_NS = 25.0  # type1-asic's link phy_latency_ns (every link of the example)
# One 68 B flit on Gen5 x16 (128b/130b), in picoseconds: 1079.1015625.
FLIT_PS = 68 * 8 / (32e9 * 16 * 128 / 130) * 1e12


def graph(**changes) -> dict:
    """The example's graph as a dict; changes: {component: {key: value}} (a dict value updates a group)."""
    d = T.load(EXAMPLE).to_dict()
    for comp, kv in changes.items():
        for k, v in kv.items():
            if isinstance(v, dict):
                d["components"][comp][k].update(v)
            else:
                d["components"][comp][k] = v
    return d


def system(d: dict):
    return T.accel_system(T.load(d))


def with_devices(d: dict, n: int) -> dict:
    """The example with n accelerators below its switch, each a copy of dev0 on a copy of dev0_link."""
    d = copy.deepcopy(d)
    d["connections"] = [k for k in d["connections"] if not k["from"].startswith(("sw.dsp", "dev"))]
    link, dev = d["components"]["dev0_link"], d["components"]["dev0"]
    for name in [c for c in d["components"] if c.startswith("dev")]:
        del d["components"][name]
    for i in range(n):
        d["components"][f"dev{i}_link"] = copy.deepcopy(link)
        d["components"][f"dev{i}"] = copy.deepcopy(dev)
        d["connections"] += [{"from": f"sw.dsp[{i}]", "to": f"dev{i}_link.up"},
                             {"from": f"dev{i}_link.down", "to": f"dev{i}.up"}]
    return d


def test_example_loads_and_shows():
    t = T.load(EXAMPLE)
    assert [c.name for c in t.of_type("accelerator")] == ["dev0", "dev1"]
    s = system(t.to_dict())
    assert s.device_names() == ["dev0", "dev1"]
    p = subprocess.run([str(Path(sys.executable).with_name("simcxl")), "topology", "show", str(EXAMPLE)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    tree = p.stdout.split("\n\n")[0]
    assert "root_port[0] -> up_link (link)" in tree and "down -> sw (switch)" in tree
    assert "dsp[1] -> dev1_link (link)" in tree and "down -> dev1 (accelerator)" in tree


# ------------------------------------------------------------ idle latency

def ceil_ps(n: int) -> float:
    """n flits back to back from a whole picosecond, to the next whole picosecond, in ns."""
    return math.ceil(n * FLIT_PS) / 1000


def test_idle_miss_pays_the_switch_both_ways_and_one_more_link_crossing():
    # By hand. Up: the device's RdShared (2 half-slots, one flit) crosses one more idle link, identical to
    # its own: phy + one flit from a whole ps, after the switch's latency. Down: the home sends GO (1
    # half-slot) then the data (9 half-slots) at once; on an idle link the data fills the GO's flit and two
    # half-slots of a second, arriving ceil(2f) + phy after the send (directly, the miss ends there). Behind
    # the switch the GO leaves it ceil(f) + phy + L after the send and the data ceil(2f) - ceil(f) = 1079 ps
    # later, less than a flit (1079.1 ps): the GO's flit on the device link has started, so the data takes two
    # fresh flits behind it and arrives ceil(f) + phy + L + ceil(3f) + phy after the send.
    up = SW_NS + PHY_NS + ceil_ps(1)
    down = SW_NS + PHY_NS + ceil_ps(1) + ceil_ps(3) - ceil_ps(2)
    extra = up + down
    assert extra == pytest.approx(2 * SW_NS + 2 * PHY_NS + 2.160 + 3.238 - 2.159, abs=1e-9)  # 253.239 ns
    # One miss from a cold system: later ones would find the DRAM's row open or closed by its page timeout
    # depending on how long the one before took.
    kw = dict(requesters=1, depth=1, requests=1, footprint="64m")
    direct = coherent.accel("type1-asic", **kw).iloc[0]
    idle1 = {"dev1": {"requesters": 0}}
    behind = coherent.accel(system(graph()), devices=idle1, **kw).iloc[0]
    assert direct["hit_rate"] == behind["dev0.hit_rate"] == 0
    assert behind["dev0.latency_mean_ns"] - direct["latency_mean_ns"] == pytest.approx(extra, abs=1e-6)
    # The switch's share is its latency each way: 200 ns more latency adds exactly 400 ns.
    slower = coherent.accel(system(graph(sw={"latency_ns": SW_NS + 200})), devices=idle1, **kw).iloc[0]
    assert slower["dev0.latency_mean_ns"] - behind["dev0.latency_mean_ns"] == pytest.approx(400.0, abs=1e-6)
    assert behind["dev0.stage_switch_ns"] == pytest.approx(2 * SW_NS, abs=1e-9)
    # Each message of the miss crossed the switch once: RdShared up, GO and data down.
    assert behind["sw.dsp0.responses"] == 1 and behind["sw.dsp0.requests"] == 2
    assert behind["sw.dsp1.requests"] == behind["sw.dsp1.responses"] == 0


# ------------------------------------------------------------ bandwidth

def test_two_devices_share_the_upstream_links_flits():
    # Both devices stream RdCurr misses (no allocation: no evictions); each line comes down as one H2D
    # data message of 9 half-slots. On an x4 upstream link (231.7 M flits/s of 8 half-slots) that bounds
    # both devices together at 231.7e6 * 8 / 9 * 64 B = 13.18 GB/s, where each device's own x16 link would
    # carry four times that.
    flits_per_s = 32e9 * 4 * 128 / 130 / 8 / 68
    bound = flits_per_s * 8 / 9 * 64 / 1e9
    assert bound == pytest.approx(13.18, abs=0.005)
    kw = dict(op="rdcurr", requesters=16, depth=8, requests=20_000, footprint="64m")
    r = coherent.accel(system(graph(up_link={"lanes": 4})), **kw).iloc[0]
    assert r["ops"] == 40_000
    assert 0.97 * bound <= r["bandwidth_gbps"] <= bound
    assert r["up_link.h2d_data.messages"] == 40_000 and r["up_link.m2s.flits"] >= 40_000 * 9 / 8
    # Each its share (the home's wires take turns at the upstream link's credits), each through its own port.
    assert abs(r["dev0.bandwidth_gbps"] - r["dev1.bandwidth_gbps"]) <= 0.02 * bound
    for d in ("dev0", "dev1"):
        assert r[f"sw.{d.replace('dev', 'dsp')}.requests"] == 20_000
    # The same two devices each on a root port of its own are not held to it.
    alone = coherent.accel(coherent.load("type1-asic").replace(**{"accel.devices": 2}), **kw).iloc[0]
    assert alone["bandwidth_gbps"] > 1.5 * bound


# ------------------------------------------------------------ coherence at one credit

def one_credit(d: dict) -> dict:
    """Every link's credits, every device's CXL.cache credits and the switch's port queues at 1."""
    for c in d["components"].values():
        if c["type"] == "link":
            c.update({k: 1 for k in c if k.startswith("credits_")})
        elif c["type"] == "accelerator":
            c["cache"].update({k: 1 for k in c["cache"] if k.startswith("credits_")})
        elif c["type"] == "switch":
            c["port_queue"] = 1
    return d


@pytest.mark.parametrize("dev0", ["type1-asic", "type2-bias", "type2-hdmdb"])
def test_random_stress_at_one_credit_completes_without_violations(dev0):
    d = with_devices(graph(), 3)
    d["components"]["dev0"] = T.load(EXAMPLES / f"{dev0}.toml").to_dict()["components"]["dev0"]
    r = coherent.stress(system(one_credit(d)), ops=60_000, lines=8, host_threads=4, device_requesters=4)
    assert r["detail"] == "" and r["deadlock"] == 0
    assert r["ops"] == 60_000 and r["quiet_at_end"] == 1
    assert r["checker_checks"] > 60_000 and r["checker_violations"] == 0
    for i in range(3):
        assert r[f"sw.dsp{i}.requests"] > 0 and r[f"sw.dsp{i}.responses"] > 0
    if dev0 != "type1-asic":  # the host reaches the Type-2 device's memory over CXL.mem through the switch
        assert r["up_link.m2s_req.messages"] + r["up_link.m2s_rwd.messages"] > 0
        assert r["up_link.m2s_req.messages"] == r["dev0_link.m2s_req.messages"]
    if dev0 == "type2-hdmdb":
        assert r["up_link.s2m_bisnp.messages"] == r["dev0_link.s2m_bisnp.messages"] > 0


# ------------------------------------------------------------ what it refuses

def refused(d: dict, *needles: str) -> None:
    """Refused by the topology's rules and, bypassing them, by the core, each in one line naming it."""
    with pytest.raises(TopologyError) as e:
        T.load(d)
    for n in needles:
        assert n in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError) as c:
        _core.validate(d)
    for n in needles:
        assert n in str(c.value)


def raw(d: dict) -> dict:
    """A graph with every parameter given, as the core takes it (no rules of the Python side applied)."""
    return core_graph(T.load(d))


def test_more_than_16_devices_below_one_root_port_are_refused():
    ok = raw(with_devices(graph(), 16))
    _core.validate(ok)
    d = copy.deepcopy(ok)
    d["components"]["dev16_link"] = copy.deepcopy(d["components"]["dev0_link"])
    d["components"]["dev16"] = copy.deepcopy(d["components"]["dev0"])
    d["connections"] += [{"from": "sw.dsp[16]", "to": "dev16_link.up"}, {"from": "dev16_link.down", "to": "dev16.up"}]
    refused(d, "sw.dsp: 17 CXL.cache devices below home.root_port[0]", "allowed: 1 to 16")


def test_what_a_cache_switch_does_not_model_is_refused():
    base = raw(graph())
    # A Type-3 device below it.
    d = copy.deepcopy(base)
    d["components"]["exp"] = T.load(EXAMPLES / "switch-2dev.toml").to_dict()["components"]["exp0"]
    d["connections"] = [k for k in d["connections"] if k["from"] != "dev1_link.down"]
    d["connections"].append({"from": "dev1_link.down", "to": "exp.up"})
    del d["components"]["dev1"]
    with pytest.raises((TopologyError, ValueError)) as e:
        T.load(d)
    assert "sw.dsp[1]" in str(e.value) and "exp" in str(e.value)
    with pytest.raises(ValueError, match=r"sw\.dsp\[1\] -> dev1_link -> exp"):
        _core.validate(d)
    # Port-based routing.
    d = copy.deepcopy(base)
    d["components"]["sw"]["routing"] = 1
    refused(d, "sw.routing = pbr", "allowed: hbr")
    # Parameters of a CXL.mem switch's arbitration and DevLoad.
    for key in ("weighted_arbitration", "egress_congestion"):
        d = copy.deepcopy(base)
        d["components"]["sw"][key] = 1
        refused(d, f"sw.{key} = 1", "allowed: 0")
    # Copies of one accelerator description on one port.
    d = copy.deepcopy(base)
    d["components"]["dev1"]["accel"]["devices"] = 2
    refused(d, "dev1.accel.devices = 2", "allowed: 1")
    # A second switch below it.
    d = copy.deepcopy(base)
    d["components"]["sw2"] = copy.deepcopy(d["components"]["sw"])
    d["components"]["l2"] = copy.deepcopy(d["components"]["dev1_link"])
    d["connections"] = [k for k in d["connections"] if k["from"] != "dev1_link.down"]
    d["connections"] += [{"from": "dev1_link.down", "to": "sw2.up"}, {"from": "sw2.dsp[0]", "to": "l2.up"},
                         {"from": "l2.down", "to": "dev1.up"}]
    with pytest.raises(ValueError, match=r"sw\.dsp\[1\] -> dev1_link -> sw2: a switch below a switch on "
                                         r"home\.root_port\[0\] \(CXL\.cache\) is not modelled"):
        _core.validate(d)


def test_every_component_reports_what_its_type_registers():
    """The switch under the names a CXL.mem switch's go by (sw.dsp0.requests), the upstream link as a link
    (up_link.h2d_data.messages), each device and its own link as on a root port of its own."""
    from simcxl.topology import stats as S
    r = coherent.accel(system(graph()), requests=500).iloc[0].to_dict()
    comps = {"sw": "switch", "up_link": "link", "dev0_link": "link", "dev1_link": "link", "dev0": "accelerator",
             "dev1": "accelerator", "home": "home_agent", "local_dram": "dram"}
    stream = ("ops", "elapsed_ns", "bandwidth_gbps", "hit_rate", "latency_", "stage_")  # each device's stream
    got = {}
    for k in r:
        c, _, stat = k.partition(".")
        if c in comps and not (comps[c] == "accelerator" and stat.startswith(stream)):
            got.setdefault(c, set()).add(stat)
    assert set(got) == set(comps)
    for c, names in got.items():
        pat = S.pattern(comps[c])
        assert all(pat.match(n) for n in names), (c, sorted(n for n in names if not pat.match(n)))
        always = {s["name"] for s in S.STATS[comps[c]] if not s["when"] and "<" not in s["name"]}
        assert always <= names, (c, always - names)
    # Every message of either device crossed the upstream link and the switch once, each its own port.
    for ch in ("d2h_req", "h2d_rsp", "h2d_data"):
        assert r[f"up_link.{ch}.messages"] == r[f"dev0_link.{ch}.messages"] + r[f"dev1_link.{ch}.messages"] > 0
    for i in (0, 1):
        down = sum(r[f"dev{i}_link.{ch}.messages"] for ch in ("h2d_req", "h2d_rsp", "h2d_data"))
        up = sum(r[f"dev{i}_link.{ch}.messages"] for ch in ("d2h_req", "d2h_rsp", "d2h_data"))
        assert r[f"sw.dsp{i}.requests"] == down and r[f"sw.dsp{i}.responses"] == up
