"""CXL switches on the CXL.mem path: what a switch adds to latency, how the narrowest port
bounds bandwidth, how the upstream decoder spreads addresses, cascading, and the graphs a
switch refuses. Expected values come from the link physics (tests/test_bandwidth.py derives the
peaks by hand) and from composing runs without a switch."""

import copy
import re
from pathlib import Path

import pytest

import simcxl
from simcxl import _core, topology
from simcxl.workloads import coherent
from simcxl.config.groups import SwitchParams
from simcxl.config.params import ParamError
from simcxl.topology import TopologyError

from conftest import link_bound_cxl, one_credit_everywhere

POOL = str(Path(__file__).resolve().parents[1] / "examples" / "topologies" / "switch-1level.toml")
GEN5_X16_READ = 52.72  # GB/s of read data per direction (tests/test_bandwidth.py, by hand)


def graph(system=None, devices=2, up_lanes=16, levels=1, **switch):
    """``system``'s graph with its one device replaced by a switch (``levels`` deep, each level
    ``devices`` wide) whose upstream link has ``up_lanes`` lanes; the devices are copies of its device."""
    d = topology.from_system(system or link_bound_cxl()).to_dict()
    comps, conns = d["components"], d["connections"]
    link, dev = comps.pop("cxl_link0"), comps.pop("cxl_dev0")
    conns[:] = [c for c in conns if "cxl_link0" not in c["from"] + c["to"]]

    def below(port, name, level):
        lk = copy.deepcopy(link)
        comps[f"{name}_link"] = lk
        conns.extend([{"from": port, "to": f"{name}_link.up"}, {"from": f"{name}_link.down", "to": f"{name}.up"}])
        if level == levels:
            comps[name] = copy.deepcopy(dev)
            return
        lk["lanes"] = up_lanes
        comps[name] = {"type": "switch", **{**SwitchParams().to_dict(), **switch}}
        for j in range(devices):
            below(f"{name}.dsp[{j}]", f"{name}_{j}", level + 1)

    below("cxl.root_port[0]", "sw", 0)
    return d


def run(d, **kw):
    kw.setdefault("threads", 64)
    kw.setdefault("requests", 60000)
    return simcxl.traffic(topology.memory_system(topology.load(d)), **kw).iloc[0]


def idle(d):
    """One request at a time, far apart: every stage at its unloaded time."""
    return run(d, threads=1, requests=1000, inject_delay_ns=1000.0)


def direct():
    return idle(topology.from_system(link_bound_cxl()).to_dict())


def test_switch_adds_its_traversal_each_way_and_one_more_link_hop():
    base = direct()
    one = idle(graph(devices=1, latency_ns=100.0))
    slow = idle(graph(devices=1, latency_ns=350.0))
    # Idle, the switch costs its traversal once each way, whatever its latency.
    assert one["read.stage.switch_ns"] == pytest.approx(200.0, abs=0.01)
    assert slow["read_latency_ns_mean"] - one["read_latency_ns_mean"] == pytest.approx(500.0, abs=0.5)
    # The same message on an identical idle link takes the same time on each hop: twice the link stages.
    assert one["read.stage.link_down_ns"] == pytest.approx(2 * base["read.stage.link_down_ns"], abs=0.01)
    assert one["read.stage.link_up_ns"] == pytest.approx(2 * base["read.stage.link_up_ns"], abs=0.01)
    extra = 200.0 + base["read.stage.link_down_ns"] + base["read.stage.link_up_ns"]
    assert one["read_latency_ns_mean"] - base["read_latency_ns_mean"] == pytest.approx(extra, abs=0.5)


@pytest.mark.parametrize("levels", [1, 2])
def test_added_idle_latency_is_the_hand_computation(levels):
    # Per level, from the parameters alone: the traversal each way, and one more hop of an idle Gen5
    # x16 link each way. An idle link starts a flit at once; the message is whole when the flit
    # carrying its end is (then the PHY latency). A MemRd header (87 bits, 2 half-slots) fits one
    # 68 B flit; a MemData (40-bit header and 64 B: 1 + 8 half-slots) needs two, 8 half-slots each.
    from simcxl.config.groups import LinkParams
    lk = LinkParams()
    flit_ns = 68 / (32e9 * lk.lanes * 128 / 130 / 8) * 1e9
    per_level = 2 * 100.0 + (1 * flit_ns + lk.phy_latency_ns) + (2 * flit_ns + lk.phy_latency_ns)
    assert per_level == pytest.approx(243.24, abs=0.01)  # 200 + 3 x 1.0791 + 2 x 20
    r = idle(graph(devices=2, levels=levels, latency_ns=100.0))
    # The path's own stages, to the picosecond rounding: levels + 1 hops each way.
    assert r["read.stage.switch_ns"] == pytest.approx(levels * 200.0, abs=0.01)
    assert r["read.stage.link_down_ns"] == pytest.approx((levels + 1) * (flit_ns + lk.phy_latency_ns), abs=0.01)
    assert r["read.stage.link_up_ns"] == pytest.approx((levels + 1) * (2 * flit_ns + lk.phy_latency_ns), abs=0.01)
    # The whole latency: the devices below see other address streams than the one device alone
    # (their rows open and close elsewhere), so only within 2 %.
    added = r["read_latency_ns_mean"] - direct()["read_latency_ns_mean"]
    assert added == pytest.approx(levels * per_level, rel=0.02)


@pytest.mark.parametrize("up_lanes", [4, 8])
def test_the_narrowest_port_bounds_bandwidth(up_lanes):
    # Two x16 devices below an upstream link of x4 or x8: every response crosses it.
    r = run(graph(devices=2, up_lanes=up_lanes, latency_ns=50.0))
    peak = GEN5_X16_READ * up_lanes / 16
    assert 0.93 * peak <= r["total_gbps"] <= 1.001 * peak


def test_a_wide_upstream_port_is_no_bottleneck():
    # With an x16 upstream link and two x16 devices the upstream link alone bounds it, as one device's would.
    r = run(graph(devices=2, up_lanes=16, latency_ns=50.0))
    assert r["total_gbps"] > 0.9 * GEN5_X16_READ


def test_congestion_on_the_shared_port_delays_every_flow():
    # The same load on one device alone, then shared with a second behind an x4 upstream port:
    # the port's bandwidth is split, and each request waits longer.
    alone = run(graph(devices=1, up_lanes=4, latency_ns=50.0), threads=8)
    shared = run(graph(devices=2, up_lanes=4, latency_ns=50.0), threads=16)
    assert shared["total_gbps"] == pytest.approx(alone["total_gbps"], rel=0.05)
    assert shared["read_latency_ns_mean"] > 1.5 * alone["read_latency_ns_mean"]


def test_the_upstream_decoder_interleaves_over_the_downstream_ports():
    # A sequential stream over four devices at 4 KiB granularity: each gets a quarter of the lines.
    d = graph(devices=4, up_lanes=16, latency_ns=50.0)
    s = topology.memory_system(topology.load(d))
    r = simcxl.traffic(s, threads=16, pattern="sequential", requests=40000).iloc[0]
    reads = [r[f"sw_{j}.media.read_gbps"] for j in range(4)]
    assert min(reads) == pytest.approx(max(reads), rel=0.02)
    # Every request the switch forwarded went down one of its ports, and came back.
    assert r["sw.requests"] == sum(r[f"sw_{j}_link.m2s.messages"] for j in range(4)) > 0
    assert r["sw.responses"] == r["sw_link.s2m.messages"] > 0
    # Requests in, responses out: equal but for what was inside when the counters started (16 x 16 MSHRs).
    assert abs(r["sw.requests"] - r["sw.responses"]) <= 16 * 16


def test_two_levels_cascade():
    # Two levels of switches, two ports each: four devices; idle, four traversals and three links each way.
    base = direct()
    two = idle(graph(devices=2, levels=2, latency_ns=100.0))
    assert two["read.stage.switch_ns"] == pytest.approx(400.0, abs=0.01)
    assert two["read.stage.link_down_ns"] == pytest.approx(3 * base["read.stage.link_down_ns"], abs=0.01)


def test_weighted_arbitration_serves_the_wider_port_first():
    # Two ports (x16 and x8 links) behind a saturated x4 upstream port, their responses queueing for it.
    # Round-robin, one each in turn: both wait alike. Weighted by lanes (16:8), the x16 port sends two
    # for every one of the x8's, so its responses wait far less.
    def waits(weighted):
        d = graph(devices=2, up_lanes=4, latency_ns=50.0, weighted_arbitration=weighted)
        d["components"]["sw_1_link"]["lanes"] = 8
        r = run(d)
        assert r["total_gbps"] == pytest.approx(GEN5_X16_READ / 4, rel=0.01)  # the x4 port binds either way
        return [r[f"sw.dsp{j}.response_wait_ns"] for j in range(2)]
    rr, wrr = waits(0), waits(1)
    assert rr[0] == pytest.approx(rr[1], rel=0.15) and min(rr) > 100
    assert wrr[0] < 0.5 * wrr[1] and wrr[0] < 0.5 * rr[0]


@pytest.mark.parametrize("edit, where", [
    (lambda d: d["connections"].append({"from": "sw.dsp[2]", "to": "sw_0_link.up"}), "sw_0_link.up"),
    (lambda d: d["components"]["sw"].update(latency_ns=-1), "sw.latency_ns"),
    (lambda d: d["components"]["sw"].update(interleave_bytes=3000), "sw.interleave_bytes"),
])
def test_bad_switch_graphs_are_refused_naming_the_part(edit, where):
    d = graph(devices=2)
    edit(d)
    with pytest.raises((TopologyError, ParamError)) as e:
        topology.load(d)
    assert where in str(e.value)
    # The core refuses the same graph on its own.
    with pytest.raises(_core.ConfigError):
        _core.validate(d)


def test_five_downstream_ports_are_refused_by_both_sides():
    d = graph(devices=5)
    with pytest.raises(TopologyError, match=r"sw\.dsp: 5 downstream ports .* allowed 1, 2, 3, 4, 6, 8, 12, 16"):
        topology.load(d)
    with pytest.raises(_core.ConfigError, match=r"sw\.dsp: 5 downstream ports"):
        _core.validate(d)


def test_a_cxl_cache_device_behind_a_switch_is_refused():
    d = graph(devices=1)
    d["components"]["sw_0"] = {"type": "accelerator", **{g: v for g, v in topology.from_system(
        coherent.load("type1-asic")).to_dict()["components"]["dev0"].items() if g != "type"}}
    with pytest.raises((TopologyError, _core.ConfigError), match="sw"):
        topology.load(d)


def test_gem5_refuses_to_describe_a_switch_by_preset_parameters():
    # A preset's interleave overrides cannot describe a switch; the gem5 side must not drop it silently.
    from simcxl.gem5 import components as gem5
    with pytest.raises(ParamError, match=r"switch-1level has a switch \(sw\), which a preset's .* simcxl.gem5.fabric"):
        gem5.interleaved(POOL)


@pytest.mark.parametrize("example, levels", [("switch-1level.toml", 1), ("switch-2level.toml", 2)])
def test_the_examples_run_and_each_level_costs_the_same(example, levels):
    # The shipped fabrics: four cxl-asic expanders behind one or two levels of switches, against
    # the one expander of the preset; idle, each level adds the same.
    path = Path(POOL).with_name(example)
    base = simcxl.traffic("cxl-asic", threads=1, requests=1000, inject_delay_ns=1000.0).iloc[0]
    r = simcxl.traffic(topology.memory_system(topology.load(path)), threads=1, requests=1000,
                       inject_delay_ns=1000.0).iloc[0]
    assert r["read.stage.switch_ns"] == pytest.approx(levels * 200.0, abs=0.01)
    one = 200.0 + base["read.stage.link_down_ns"] + base["read.stage.link_up_ns"]
    assert r["read_latency_ns_mean"] - base["read_latency_ns_mean"] > 0.9 * levels * one


def test_the_example_pool_shares_its_upstream_port():
    # Four x8 expanders behind one x16 port: each device's link carries a quarter of the responses
    # the upstream link carries, and the switch adds its traversal twice.
    s = topology.memory_system(topology.load(POOL))
    r = simcxl.traffic(s, threads=8, requests=20000).iloc[0]
    up = r["up_link.s2m.messages"]
    # Every response the switch sent up crossed the upstream link; those the devices sent differ by at
    # most what was inside the switch when the counters started (8 threads x 16 MSHRs).
    assert r["sw.responses"] == up
    assert abs(sum(r[f"link{i}.s2m.messages"] for i in range(4)) - up) <= 8 * 16
    for i in range(4):
        assert r[f"link{i}.s2m.messages"] == pytest.approx(up / 4, rel=0.05)
    assert r["read.stage.switch_ns"] >= 2 * s.graph.components["sw"].values["latency_ns"]


def test_a_request_trace_shows_the_switch_and_adds_up(tmp_path):
    # Every request of a run through the pool traced: each one's spans of each stage, the switch's
    # included, sum to that stage as the request carries it, and the switch's spans are named after it.
    from simcxl.engine import reqtrace
    s = topology.memory_system(topology.load(POOL))
    rec = reqtrace.Recorder(sample=1, max_requests=5000)
    with rec:
        row = simcxl.traffic(s, threads=4, requests=2000).iloc[0]
    spans = rec.frame()
    spans = spans[spans["kind"] == "span"]
    sw = spans[spans["stage"] == "switch"]
    assert len(sw) > 0 and set(sw["component"]) == {"sw"}
    reqs = rec.requests()
    counted = reqs[reqs["stream"] != ""]
    assert len(counted) >= 1000
    per = (spans["end_ps"] - spans["start_ps"]).groupby([spans["request"], spans["stage"]]).sum().unstack("stage")
    got = per.reindex(index=counted["request"]).fillna(0)["switch"].to_numpy()
    assert (got == counted["stage.switch_ps"].to_numpy()).all()
    assert got.mean() / 1000 == pytest.approx(row["read.stage.switch_ns"], rel=1e-9)


def test_a_device_that_stops_answering_below_a_switch_is_named_by_the_watchdog():
    # The devices below the switch stop answering after five responses each: the run ends with a
    # StallError naming the queue that holds the oldest request, a silent device's response queue.
    d = graph(devices=2)
    d["fault"] = {"device_stops_after": 5}
    with pytest.raises(_core.StallError) as e:
        _core.run_traffic(d, 16, 1.0, "random", 1 << 30, 20000, 0.0, 0.0, False, None)
    msg = str(e.value)
    assert "\n" not in msg and "request(s) in flight" in msg
    assert re.search(r"in sw_[01]\.device\.tx", msg), msg


@pytest.mark.parametrize("levels", [1, 2])
def test_one_credit_and_one_entry_everywhere_still_completes(levels):
    # Every credit and queue on the path at its minimum, reads and writes mixed: slow, but every
    # request completes (no deadlock: the watchdog would end the run with a StallError).
    d = graph(devices=2, levels=levels, port_queue=1)
    one_credit_everywhere(d)
    r = run(d, threads=16, read_fraction=0.5, requests=4000)
    assert r["read_gbps"] > 0 and r["write_gbps"] > 0
    assert r["sw.requests"] > 0
