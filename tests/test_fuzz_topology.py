"""Fuzzing topology files: a valid graph with one or more things broken at random
(keys dropped, values of the wrong type, ports and components renamed, connections
added, removed or rewired). Every outcome is a graph that builds, or a one-line
TopologyError (a ParamError) before anything runs: never another exception."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from simcxl import topology as T
from simcxl.config.params import ParamError

from conftest import fuzz

pytestmark = pytest.mark.usefixtures("hang_guard")

# Memories, an accelerator and a switch with four expanders below it.
EXAMPLES = [T.load(Path(__file__).resolve().parents[1] / "examples" / "topologies" / f).to_dict()
            for f in ("mixed.toml", "switch-1level.toml")]
NAMES = sorted({n for e in EXAMPLES for n in e["components"]}) + ["nowhere", "", "host.mem", "0x"]
PORTS = ["mem", "local", "home", "up", "down", "root_port", "root_port[0]", "root_port[7]", "host", "side", "up[1]",
         "dsp", "dsp[0]", "dsp[4]"]
ODD = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 70, max_value=2 ** 70),
                st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
                st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def port_ref():
    return st.one_of(st.builds(lambda c, p: f"{c}.{p}", st.sampled_from(NAMES), st.sampled_from(PORTS)), ODD)


@st.composite
def broken(draw):
    d = copy.deepcopy(draw(st.sampled_from(EXAMPLES)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        what = draw(st.sampled_from(["drop-key", "odd-value", "odd-param", "rewire", "add", "remove", "window",
                                     "type", "from"]))
        comps, conns = d["components"], d["connections"]
        name = draw(st.sampled_from(sorted(comps))) if comps else None
        if what == "drop-key" and name:
            keys = sorted(comps[name])
            if keys:
                comps[name].pop(draw(st.sampled_from(keys)))
        elif what == "odd-value" and name:
            params = [k for k, v in comps[name].items() if not isinstance(v, dict) and k != "type"]
            if params:
                comps[name][draw(st.sampled_from(params))] = draw(ODD)
        elif what == "odd-param" and name:
            comps[name][draw(st.text(max_size=8))] = draw(ODD)
        elif what == "rewire" and conns:
            i = draw(st.integers(min_value=0, max_value=len(conns) - 1))
            if isinstance(conns[i], dict):
                conns[i][draw(st.sampled_from(["from", "to"]))] = draw(port_ref())
        elif what == "add":
            conns.append(draw(st.one_of(st.lists(port_ref(), min_size=0, max_size=3),
                                        st.fixed_dictionaries({"from": port_ref(), "to": port_ref()}), ODD)))
        elif what == "remove" and conns:
            conns.pop(draw(st.integers(min_value=0, max_value=len(conns) - 1)))
        elif what == "window" and conns:
            i = draw(st.integers(min_value=0, max_value=len(conns) - 1))
            if isinstance(conns[i], dict):
                conns[i][draw(st.sampled_from(["base", "size"]))] = draw(st.one_of(
                    ODD, st.sampled_from(["1TiB", "4k", "-1", "1e3", "0"]), st.integers(0, 1 << 53)))
        elif what == "type" and name:
            comps[name]["type"] = draw(st.one_of(st.sampled_from(list(T.TYPES)), ODD))
        elif what == "from" and name:
            comps[name]["from"] = draw(st.one_of(st.sampled_from(["cxl-asic", "ddr-local", "type2-hdmdb",
                                                                  "cxl-asic:cxl_dev0", "defaults", "nope",
                                                                  "cxl-asic:host", ":", "a+b"]), ODD))
    if draw(st.booleans()):  # last: the other breaks need the components and connections as they are
        d[draw(st.sampled_from(["name", "seed", "components", "connections", "extra"]))] = draw(ODD)
    return d


@fuzz(300)
@given(broken())
def test_a_broken_topology_builds_or_is_refused_in_one_line(d):
    try:
        t = T.from_dict(d)
        T.memory_system(t)
    except ParamError as e:
        msg = str(e)
        assert msg.strip() and "\n" not in msg, repr(msg)
