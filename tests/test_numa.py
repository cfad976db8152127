"""The NUMA description behind a full-system board's SLIT and HMAT (simcxl.gem5.numa)."""

import pytest

from simcxl.gem5.numa import Numa, distances
from simcxl.config.params import ParamError


def test_distances_scale_with_latency_from_node_0():
    # 110 ns local, 250 ns and 400 ns CXL: 10 x 250/110 = 22.7 -> 23, 10 x 400/110 = 36.4 -> 36;
    # between the two CXL nodes the farther one's latency counts.
    assert distances([110.0, 250.0, 400.0]) == [[10, 23, 36], [23, 10, 36], [36, 36, 10]]


def test_a_node_barely_slower_than_local_is_still_farther_than_itself():
    assert distances([100.0, 101.0]) == [[10, 11], [11, 10]]


def node(name, lat=100.0):
    return dict(name=name, read_latency_ns=lat, write_latency_ns=lat, read_bandwidth_gbps=30.0,
                write_bandwidth_gbps=20.0)


def test_a_description_round_trips_and_fills_in_distances():
    n = Numa.from_dict({"nodes": [node("ddr-local", 100.0), node("cxl-asic", 250.0)]})
    assert n.distances == [[10, 25], [25, 10]]
    assert Numa.from_dict(n.to_dict()) == n


@pytest.mark.parametrize("d, message", [
    ({"nodes": [node("a"), node("b")], "distances": [[10, 20], [20, 12]]},
     "numa.distances[1][1] = 12 is not allowed; a node's distance to itself is 10"),
    ({"nodes": [node("a"), node("b")], "distances": [[10, 255], [20, 10]]},
     "numa.distances[0][1] = 255 is out of range; allowed: 11 to 254"),
    ({"nodes": [node("a"), node("b")], "distances": [[10, 20]]}, "numa.distances must be 2 x 2"),
    ({"nodes": [dict(node("a"), read_bandwidth_gbps=0.0)]}, "numa.a.read_bandwidth_gbps = 0.0 is out of range"),
    ({"nodes": [{"name": "a"}]}, "numa description:"),
])
def test_bad_descriptions_name_the_field(d, message):
    with pytest.raises(ParamError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Numa.from_dict(d)
