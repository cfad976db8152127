"""Egress-port congestion as a DevLoad input (CXL 2.0 QoS telemetry): a switch with
``egress_congestion = 1`` measures, over each congestion interval, the share of time each of its
ports' egress queues held a message waiting for its link's credits, and a response crossing a port
backpressured for ``egress_moderate`` (``egress_severe``) of the last interval leaves with at least
Moderate (Severe) DevLoad. Expected values come from the link physics (a Gen5 x4 link carries a
quarter of x16's 52.72 GB/s of read data, tests/test_bandwidth.py), from the queue sizes and from
the same system run with the signal off."""

import copy
from pathlib import Path

import pytest

import simcxl
from simcxl import _core, topology
from simcxl.config.groups import SwitchParams

from conftest import assert_one_line_rejection, link_bound_cxl
from test_hosts import pool

GEN5_X16_READ = 52.72            # GB/s of read data per direction (tests/test_bandwidth.py, by hand)
X4_READ = GEN5_X16_READ / 4      # the trunk's bound: 13.18 GB/s
LINE_NS = 64 / X4_READ           # one line's time on the trunk: 4.856 ns
WINDOW = 1 << 34
TRUNK_CREDITS = 64               # the trunk's S2M credits (the schema's default)


# The device reports Optimal from 92 % of its queue on average, Moderate from 97 %, Severe from 99 %
# (tests/test_qos.py: where a cxl-asic device reaches its peak), so what throttles the hosts here is
# the fabric's congestion, not the device's own load.
DEVICE_LOAD = dict(devload_optimal=0.92, devload_moderate=0.97, devload_severe=0.99)


def cascade(hosts=3, throttle=1, congestion=1, **switch):
    """``hosts`` hosts, each through its own x16 root port into switch sw0, whose one downstream port
    leads over an x4 trunk to switch sw1 and from there over x16 to a multi-logical device with an
    LD per host. The hosts share sw1's upstream port and the trunk above it, the narrowest point of
    every path (the device's media and x16 link are four times as fast): congestion there is in the
    fabric, not in the device. Each host's bridge tracks 128 requests (cxl-asic's)."""
    d = topology.from_system(link_bound_cxl()).to_dict()
    comps, conns = d["components"], d["connections"]
    host, ddr, hb, link, dev = (comps.pop(n) for n in ("host", "local_dram", "cxl", "cxl_link0", "cxl_dev0"))
    comps.clear()
    conns.clear()
    hb = {**hb, "req_queue": 128, "resp_queue": 128, "devload_throttle": throttle}
    sw = {"type": "switch", **{**SwitchParams().to_dict(), "egress_congestion": congestion, **switch}}
    credits = {"credits_req": 64, "credits_rwd": 64, "credits_ndr": 64, "credits_drs": 64}
    for i in range(hosts):
        comps[f"h{i}"] = copy.deepcopy(host)
        comps[f"h{i}_ddr"] = copy.deepcopy(ddr)
        comps[f"h{i}_cxl"] = copy.deepcopy(hb)
        comps[f"h{i}_link"] = {**copy.deepcopy(link), **credits}
        conns += [{"from": f"h{i}.local", "to": f"h{i}_ddr.up"},
                  {"from": f"h{i}.mem", "to": f"h{i}_cxl.up", "base": 1 << 32, "size": WINDOW},
                  {"from": f"h{i}_cxl.root_port[0]", "to": f"h{i}_link.up"},
                  {"from": f"h{i}_link.down", "to": f"sw0.up[{i}]"}]
    comps["sw0"] = copy.deepcopy(sw)
    comps["sw1"] = copy.deepcopy(sw)
    comps["trunk"] = {**copy.deepcopy(link), "lanes": 4, **credits, "credits_ndr": TRUNK_CREDITS,
                      "credits_drs": TRUNK_CREDITS}
    comps["d0_link"] = {**copy.deepcopy(link), **credits}
    comps["d0"] = copy.deepcopy(dev)
    comps["d0"]["device"].update(logical_devices=hosts, req_queue=64, resp_queue=64, **DEVICE_LOAD)
    conns += [{"from": "sw0.dsp[0]", "to": "trunk.up"}, {"from": "trunk.down", "to": "sw1.up[0]"},
              {"from": "sw1.dsp[0]", "to": "d0_link.up"}, {"from": "d0_link.down", "to": "d0.up"}]
    return d


def run(d, runs=None, **common):
    common.setdefault("threads", 16)
    common.setdefault("requests", 40000)
    return simcxl.hosts(topology.memory_system(topology.load(d)), runs, **common).set_index("host")


PROBE = dict(threads=1, rate_gbps=0.01, probe=True)


def write_pool(congestion=1, throttle=1):
    """tests/test_hosts.py's pool of three hosts on x16 ports sharing one x4 downstream port to an
    MLD (the schema's 64 credits and queues below the switch), with cxl-asic's 128-request bridges
    and the device's load thresholds above."""
    d = pool(hosts=3, dsp_lanes=4, egress_congestion=congestion)
    for i in range(3):
        d["components"][f"h{i}_cxl"].update(req_queue=128, resp_queue=128, devload_throttle=throttle)
    d["components"]["d0"]["device"].update(**DEVICE_LOAD)
    return d


def light_share(c):
    """The share of the device's responses that left it with DevLoad Light."""
    loads = ("light", "optimal", "moderate", "severe")
    return c["d0.devload_light"] / sum(c[f"d0.devload_{x}"] for x in loads)


def compare(build, runs, measure=0):
    """The probe's latency alone, then ``runs`` unthrottled (its switches measuring if ``measure``),
    throttled by the device's DevLoad alone, and throttled with egress congestion."""
    idle = run(build(congestion=0, throttle=0), {"h2": dict(PROBE, requests=2000)}).loc["h2", "probe_latency_ns_mean"]
    return (idle, *(run(build(congestion=c, throttle=t), runs) for c, t in ((measure, 0), (0, 1), (1, 1))))


WRITERS = {"h0": dict(read_fraction=0.0), "h1": dict(read_fraction=0.0), "h2": PROBE}
READERS = {"h0": {}, "h1": {}, "h2": PROBE}

# A Gen5 x4 link by hand: 4 lanes x 32 GT/s x 128/130 / 8 = 15.754 GB/s, a 68 B flit every 4.316 ns.
X4_FLIT_NS = 68 / (4 * 32 * 128 / 130 / 8)
RWD_NS = 10 / 8 * X4_FLIT_NS     # a MemWr: a 2-half-slot header and 64 B, 10 of a flit's 8 half-slots
X4_WRITE = 64 / RWD_NS           # 11.86 GB/s of write data (a quarter of x16's 47.45, tests/test_bandwidth.py)


def test_measuring_congestion_changes_nothing_for_hosts_that_do_not_throttle():
    # DevLoad only matters to a host that throttles by it: measuring the ports' backpressure and
    # raising the DevLoad of the responses crossing them leaves every figure as it was.
    off = run(write_pool(congestion=0, throttle=0), WRITERS)
    on = run(write_pool(congestion=1, throttle=0), WRITERS)
    assert off[["read_gbps", "write_gbps", "probe_latency_ns_mean"]].equals(
        on[["read_gbps", "write_gbps", "probe_latency_ns_mean"]])
    co, cn = off.attrs["components"], on.attrs["components"]
    assert all(cn[k] == v for k, v in co.items())
    # Only the switch that measures reports it: its downstream port backpressured all along, and
    # every completion through it raised (the device itself reports Light).
    assert "sw.devload_raised" not in co
    assert cn["sw.dsp0.egress_backpressure"] > 0.99
    assert cn["sw.devload_raised"] == pytest.approx(cn["d0.devload_light"], rel=0.01)


def test_writers_on_a_shared_downstream_port_throttled_by_its_congestion():
    # Two hosts write as fast as they can through one x4 downstream port; a third probes with one
    # dependent load at a time. The port's write bound is its flit rate; unthrottled, its egress
    # queue is full, and the probe's MemRd finds the link booked with every RwD credit's write but
    # those crossing the PHY or whose credit rides back (20 ns + a flit + 20 ns). The device is
    # never loaded (its queue is light), so throttling by its load alone changes nothing; with the
    # switch's egress congestion the writers back off until the port is rarely backpressured.
    idle, plain, by_device, by_egress = compare(write_pool, WRITERS)
    writers = ["h0", "h1"]
    assert plain.loc[writers, "write_gbps"].sum() == pytest.approx(X4_WRITE, rel=0.02)
    backlog = 64 * RWD_NS - (20 + X4_FLIT_NS + 20)
    extra_plain = plain.loc["h2", "probe_latency_ns_mean"] - idle
    assert extra_plain == pytest.approx(backlog, rel=0.03)
    pc = plain.attrs["components"]
    assert pc["sw.egress_full"] > 0 and light_share(pc) > 0.99
    assert by_device[["write_gbps", "probe_latency_ns_mean"]].equals(plain[["write_gbps", "probe_latency_ns_mean"]])
    ec = by_egress.attrs["components"]
    assert by_egress.loc[writers, "write_gbps"].sum() == pytest.approx(X4_WRITE, rel=0.02)
    assert ec["sw.egress_full"] == 0 and ec["sw.devload_raised"] > 0
    assert ec["sw.dsp0.egress_backpressure"] < SwitchParams().egress_moderate
    extra = by_egress.loc["h2", "probe_latency_ns_mean"] - idle
    assert extra < extra_plain / 2, (idle, extra_plain, extra)


def test_readers_through_a_shared_upstream_port_throttled_by_its_congestion():
    # Two hosts read as fast as they can through the x4 trunk that sw1's upstream port shares among
    # all three; the third probes. Unthrottled, the trunk carries its read bound and sw1's upstream
    # port is backpressured all along (its responses queue behind the trunk's credits), and the
    # probe's data waits behind them; the device reports Light (its queue is not where the
    # requests wait), so throttling by its load alone changes nothing. Throttled by the upstream
    # port's congestion, the readers hold their requests at home: the port is rarely backpressured
    # and the probe keeps most of its unloaded latency, at a cost in bandwidth (the loop reacts an
    # interval late: the docs give the figures).
    idle, plain, by_device, by_egress = compare(cascade, READERS)
    readers = ["h0", "h1"]
    assert plain.loc[readers, "read_gbps"].sum() == pytest.approx(X4_READ, rel=0.03)
    assert by_device[["read_gbps", "probe_latency_ns_mean"]].equals(plain[["read_gbps", "probe_latency_ns_mean"]])
    pc, ec = by_device.attrs["components"], by_egress.attrs["components"]
    assert light_share(pc) > 0.99
    # The probe waits at least behind sw1's full upstream queue (port_queue lines on the trunk).
    extra_plain = plain.loc["h2", "probe_latency_ns_mean"] - idle
    assert extra_plain > SwitchParams().port_queue * LINE_NS
    assert ec["sw1.up0.egress_backpressure"] < SwitchParams().egress_moderate
    assert ec["sw1.devload_raised"] > 0 and ec["h0_cxl.throttled"] > 0
    extra = by_egress.loc["h2", "probe_latency_ns_mean"] - idle
    assert extra < extra_plain / 5, (idle, extra_plain, extra)
    assert by_egress.loc[readers, "read_gbps"].sum() > 0.85 * X4_READ


@pytest.mark.parametrize("changes, names", [
    (dict(egress_moderate=0.5, egress_severe=0.2), ["sw0.egress_moderate", "egress_severe"]),
    (dict(egress_moderate=0.0), ["sw0.egress_moderate", "0.001 to 1"]),
    (dict(congestion_interval_ns=1.0), ["sw0.congestion_interval_ns", "10 to"]),
])
def test_bad_congestion_settings_are_refused_in_python_and_in_the_core(changes, names):
    d = cascade()
    d["components"]["sw0"].update(changes)
    with pytest.raises(topology.TopologyError) as e:
        topology.load(d)
    assert_one_line_rejection(e.value, *names)
    core = topology.core_graph(topology.load(cascade()))
    core["components"]["sw0"].update(changes)
    with pytest.raises(_core.ConfigError) as e:
        _core.validate(core)
    assert_one_line_rejection(e.value, *names)


def test_the_shipped_congested_trunk():
    # examples/topologies/congested-trunk.toml: cxl-asic hosts, the same two switches and x4 trunk.
    # Unthrottled the two readers carry the trunk's bound; as shipped (every bridge throttling,
    # both switches measuring) the trunk's upstream port is rarely backpressured and the probe
    # keeps most of its unloaded latency.
    path = Path(__file__).resolve().parents[1] / "examples" / "topologies" / "congested-trunk.toml"
    free = {f"h{i}_cxl.devload_throttle": 0 for i in range(3)}
    loads = {"h0": {}, "h1": {}, "h2": PROBE}
    idle = simcxl.hosts(topology.memory_system(topology.load(path)), {"h2": dict(PROBE, requests=2000)})
    idle = idle.set_index("host").loc["h2", "probe_latency_ns_mean"]
    plain = run(topology.load(path).replace(**free), loads)
    shipped = run(topology.load(path), loads)
    assert plain.loc[["h0", "h1"], "read_gbps"].sum() == pytest.approx(X4_READ, rel=0.03)
    assert shipped.attrs["components"]["sw1.up0.egress_backpressure"] < SwitchParams().egress_moderate
    extra_plain = plain.loc["h2", "probe_latency_ns_mean"] - idle
    extra = shipped.loc["h2", "probe_latency_ns_mean"] - idle
    assert extra < extra_plain / 5, (idle, extra_plain, extra)
