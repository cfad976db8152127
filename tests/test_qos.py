"""QoS on a multi-logical device (CXL 2.0 QoS telemetry): each response's DevLoad, per-LD limits and
allocations, and hosts whose root ports throttle by it. Expected values come from the parameters
(a limit is a fraction of the media's peak, computed here by hand from its bus), from the same
system run without throttling, and from the unloaded probe of one host alone."""

from pathlib import Path

import pytest

import simcxl
from simcxl import _core, topology

from conftest import assert_one_line_rejection

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "topologies" / "pool-4hosts-mld.toml"
# cxl-asic's media: two 32-bit DDR5-4800 subchannels, 2 * 4 B * 4.8 GT/s.
MEDIA_PEAK_GBPS = 2 * 4 * 4.8


def pool(throttle=1, limits=(), allocations=()):
    """The shipped four-host pool, its MLD reporting Optimal load from 92 % of its queue on average
    over an interval (where this device reaches its peak), Moderate from 97 %, Severe from 99 %."""
    d = topology.load(EXAMPLE).to_dict()
    for i in range(4):
        d["components"][f"h{i}_cxl"]["devload_throttle"] = throttle
    d["components"]["mld"]["device"].update(devload_optimal=0.92, devload_moderate=0.97, devload_severe=0.99)
    for k in d["connections"]:
        if k["from"].endswith(".mem"):
            i = int(k["from"][1])
            if i < len(limits):
                k["qos_limit"] = limits[i]
            if i < len(allocations):
                k["qos_allocation"] = allocations[i]
    return topology.memory_system(topology.load(d))


def run(system, runs=None, **common):
    common.setdefault("threads", 16)
    common.setdefault("requests", 40000)
    return simcxl.hosts(system, runs, **common).set_index("host")


def test_throttled_hosts_keep_the_fabric_short_without_losing_throughput():
    # Three hosts saturate the MLD, a fourth probes it with one dependent load at a time. Unthrottled,
    # the device's queue is full and the switch's egress queue backs up, and the probe waits behind
    # both; throttled by DevLoad, the hosts hold their requests at home: the device's queue stays
    # below Moderate overload, the switch never fills, the three keep their bandwidth and the
    # probe keeps most of its unloaded latency.
    alone = run(pool(throttle=0), {"h3": dict(threads=1, rate_gbps=0.01, requests=2000, probe=True)})
    idle = alone.loc["h3", "probe_latency_ns_mean"]
    runs = {"h0": {}, "h1": {}, "h2": {}, "h3": dict(threads=1, rate_gbps=0.01, probe=True)}
    plain, throttled = run(pool(throttle=0), runs), run(pool(throttle=1), runs)
    pc, tc = plain.attrs["components"], throttled.attrs["components"]
    queue = simcxl.load_preset("cxl-asic").cxl.device.req_queue  # the device's request queue
    assert pc["mld.mean_occupancy"] == pytest.approx(queue, rel=0.01)
    assert tc["mld.mean_occupancy"] < 0.97 * queue
    assert pc["sw.egress_full"] > 0 and tc["sw.egress_full"] == 0
    busy = ["h0", "h1", "h2"]
    assert throttled.loc[busy, "read_gbps"].sum() == pytest.approx(plain.loc[busy, "read_gbps"].sum(), rel=0.03)
    assert tc["h0_cxl.throttled"] > 0
    extra_plain = plain.loc["h3", "probe_latency_ns_mean"] - idle
    extra_throttled = throttled.loc["h3", "probe_latency_ns_mean"] - idle
    assert extra_throttled < extra_plain / 2, (idle, extra_plain, extra_throttled)


def test_a_limit_with_its_allocation_holds_within_five_percent():
    # h0 and h1 are limited to 5 % and 10 % of the media's peak and guaranteed as much; h2 and h3
    # take the rest. Each limited LD settles at its limit: above it its responses report Moderate
    # overload, below its allocation one level lighter than the device's load.
    df = run(pool(limits=(0.05, 0.10), allocations=(0.05, 0.10)))
    assert df.loc["h0", "read_gbps"] == pytest.approx(0.05 * MEDIA_PEAK_GBPS, rel=0.05)
    assert df.loc["h1", "read_gbps"] == pytest.approx(0.10 * MEDIA_PEAK_GBPS, rel=0.05)
    assert df.loc["h2", "read_gbps"] == pytest.approx(df.loc["h3", "read_gbps"], rel=0.03)
    assert df.loc["h2", "read_gbps"] > 0.10 * MEDIA_PEAK_GBPS
    c = df.attrs["components"]
    assert c["mld.ld0.devload_moderate"] > 0 and c["mld.ld0.devload_light"] > 0
    # The device counted each LD's bandwidth as its host did.
    assert c["mld.ld0.read_gbps"] == pytest.approx(df.loc["h0", "read_gbps"], rel=0.03)


def test_a_limit_holds_on_an_idle_device():
    # h0 alone, its LD limited to 5 %: the device is lightly loaded, so only the limit stops it.
    s = pool(limits=(0.05,))
    df = run(s, {"h0": {}})
    assert df.loc["h0", "read_gbps"] == pytest.approx(0.05 * MEDIA_PEAK_GBPS, rel=0.05)
    # Without throttling the host ignores the DevLoad it is sent: the limit is only reported.
    free = run(pool(throttle=0, limits=(0.05,)), {"h0": {}})
    assert free.loc["h0", "read_gbps"] > 2 * 0.05 * MEDIA_PEAK_GBPS
    assert free.attrs["components"]["mld.ld0.devload_moderate"] > 0


@pytest.mark.parametrize("key, value, names", [
    ("qos_limit", 0.0, ["qos_limit", "0 < qos_limit <= 1"]),
    ("qos_limit", 1.5, ["qos_limit", "from 0 to 1"]),
    ("qos_allocation", -0.1, ["qos_allocation", "from 0 to 1"]),
])
def test_bad_qos_values_are_refused_in_python_and_in_the_core(key, value, names):
    d = topology.load(EXAMPLE).to_dict()
    k = next(k for k in d["connections"] if k["from"] == "h0.mem")
    k[key] = value
    with pytest.raises(topology.TopologyError) as e:
        topology.load(d)
    assert_one_line_rejection(e.value, "connections[", *names)
    # The core checks what reaches it directly (another front end than this package's).
    core = topology.core_graph(topology.load(EXAMPLE))
    next(k for k in core["connections"] if k["from"] == "h0.mem")[key] = value
    with pytest.raises(_core.ConfigError) as e:
        _core.validate(core)
    assert_one_line_rejection(e.value, names[0])


def test_qos_belongs_to_a_hosts_window_onto_cxl_memory():
    d = topology.load(EXAMPLE).to_dict()
    k = next(k for k in d["connections"] if k["from"] == "h0.local")
    k["qos_limit"] = 0.5
    with pytest.raises(topology.TopologyError) as e:
        topology.load(d)
    assert_one_line_rejection(e.value, "h0.local", "qos_limit", says_allowed=False)
    assert "only a host.mem connection onto a host_bridge" in str(e.value)
    # An allocation above the limit is no guarantee the device could keep.
    k.pop("qos_limit")
    m = next(k for k in d["connections"] if k["from"] == "h0.mem")
    m.update(qos_limit=0.2, qos_allocation=0.3)
    with pytest.raises(topology.TopologyError) as e:
        topology.load(d)
    assert_one_line_rejection(e.value, "qos_allocation", "qos_limit")
