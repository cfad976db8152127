"""Topology files: systems as graphs of registered component types.

Round trips check the graph against the preset loaders (a second route to the
same system); the bad files each break one rule, and the message must name
the component and port on one line before anything runs."""

import copy
from dataclasses import fields
from pathlib import Path

import pytest

from simcxl.workloads import coherent, nic
from simcxl.engine import standalone as engine
from simcxl.config import presets
from simcxl import topology as T
from simcxl.config.groups import DeviceParams, DramParams, HostParams
from simcxl.topology import core_graph

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "topologies"

MAPS = ("ddr-local+cxl-asic", "ddr=ddr-local+cxl0=cxl-asic+cxl1=cxl-asic+far=ddr-remote")


@pytest.mark.parametrize("name", presets.names() + list(MAPS))
def test_a_memory_preset_drawn_as_a_graph_builds_back_to_itself(name):
    s = presets.load(name)
    t = T.from_system(s)
    assert core_graph(T.memory_system(t)) == core_graph(s)
    # and through the file format
    again = T.from_dict(t.to_dict())
    assert core_graph(T.memory_system(again)) == core_graph(s)


@pytest.mark.parametrize("name", coherent.preset_names())
def test_an_accelerator_preset_drawn_as_a_graph_builds_back_to_itself(name):
    s = coherent.load(name)
    t = T.from_system(s)
    assert core_graph(T.accel_system(T.from_dict(t.to_dict()))) == core_graph(s)
    n = nic.load(name)
    back = T.nic_system(T.from_system(n))
    assert core_graph(back) == core_graph(n) and back.nic == n.nic and back.to_dict() == n.to_dict()


@pytest.mark.parametrize("name", presets.names() + coherent.preset_names())
def test_every_shipped_preset_is_a_topology_file_kept_in_step(name):
    path = EXAMPLES / f"{name}.toml"
    assert path.read_text() == T.to_toml(T.preset_topology(name)), \
        f"regenerate: simcxl topology show {name} --toml > {path.relative_to(REPO)}"


def test_a_run_through_the_topology_file_equals_the_run_through_the_preset():
    file_sys = T.memory_system(T.load(EXAMPLES / "cxl-asic.toml"))
    a = engine.lmbench(file_sys, ["64k", "64m"], accesses=3000)
    b = engine.lmbench("cxl-asic", ["64k", "64m"], accesses=3000)
    assert a["latency_ns"].tolist() == b["latency_ns"].tolist()
    acc = coherent.accel(T.accel_system(T.load(EXAMPLES / "type2-hdmdb.toml")), requests=2000)
    ref = coherent.accel("type2-hdmdb", requests=2000)
    assert acc.drop(columns=[c for c in acc.columns if "wall" in c]).equals(
        ref.drop(columns=[c for c in ref.columns if "wall" in c]))


def test_the_mixed_example_interleaves_two_expanders_and_keeps_its_accelerator():
    t = T.load(EXAMPLES / "mixed.toml")
    s = T.memory_system(t)
    assert s.window_names() == ["ddr", "cxl"]
    cxl = s.map[1]
    assert (cxl.range.base, cxl.range.size) == (1 << 40, 1 << 40)
    assert cxl.cxl.bridge.root_ports == cxl.cxl.bridge.interleave_ways == 2
    assert s.device_names() == ["gpu"] and s.devices[0].accel.hdm_db == 1 and s.devices[0].accel.type == 2
    # from = "cxl-asic" takes the preset's values: its fitted device latency
    assert cxl.cxl.device.req_latency_ns == presets.load("cxl-asic").cxl.device.req_latency_ns
    assert t.components["exp0"].origin["device.req_latency_ns"] == "preset cxl-asic (cxl_dev0)"


def test_two_interleaved_expanders_carry_twice_the_reads_of_one():
    # Physics: each expander has its own link and media, so a 2-way window over
    # two saturated devices carries twice one device's reads (random lines) once
    # the one thing they share, the host bridge's request queue, does not bind.
    t = T.load(EXAMPLES / "mixed.toml").replace(**{"cxl.req_queue": 1024})
    two = engine.traffic(T.memory_system(t), threads=48, requests=60000, target="cxl")
    one = engine.traffic(presets.load("cxl-asic").replace(**{"cxl.bridge.req_queue": 1024}), threads=24,
                         requests=30000)
    ratio = two["read_gbps"].iloc[0] / one["read_gbps"].iloc[0]
    assert 1.9 < ratio < 2.1, ratio


def test_a_component_may_change_what_it_takes_from_a_preset():
    d = T.load(EXAMPLES / "mixed.toml").to_dict()
    d["components"]["host"] = {"type": "host", "from": "ddr-local", "cores": 4}
    t = T.from_dict(d)
    assert t.components["host"].values["cores"] == 4
    assert t.components["host"].origin["cores"] == "file"
    assert T.memory_system(t).host.cores == 4


def test_the_types_carry_the_schema_groups():
    types = {x["type"]: x for x in T.describe()}
    names = {p["name"] for p in types["type3"]["parameters"]}
    assert names == {f"device.{f.name}" for f in fields(DeviceParams)} | {f"media.{f.name}" for f in fields(DramParams)}
    assert {p["name"] for p in types["host"]["parameters"]} == {f.name for f in fields(HostParams)}
    assert {p["name"] for p in types["host_bridge"]["parameters"]} == {"req_latency_ns", "resp_latency_ns",
                                                                        "req_queue", "resp_queue", "interleave_bytes",
                                                                        "devload_throttle"}
    assert [p["name"] for p in types["link"]["ports"]] == ["up", "down"]


# -- bad files: each breaks one rule ----------------------------------------------------

def _base():
    """A small valid graph: a host, local DRAM, one expander behind a host bridge."""
    return {"name": "t", "components": {
        "host": {"type": "host", "from": "defaults"},
        "ddr": {"type": "dram", "from": "defaults"},
        "hb": {"type": "host_bridge", "from": "defaults"},
        "l0": {"type": "link", "from": "defaults"},
        "x0": {"type": "type3", "from": "defaults"}},
        "connections": [{"from": "host.mem", "to": "ddr.up", "base": 0, "size": "1TiB"},
                        {"from": "host.mem", "to": "hb.up", "base": "1TiB", "size": "1TiB"},
                        ["hb.root_port[0]", "l0.up"], ["l0.down", "x0.up"]]}


def test_the_small_graph_is_valid():
    s = T.memory_system(T.from_dict(_base()))
    assert s.window_names() == ["ddr", "hb"]


def _with(change):
    d = copy.deepcopy(_base())
    change(d)
    return d


BAD = {
    "unknown type": (lambda d: d["components"]["x0"].update(type="type4"), ["x0.type", "type4", "type3"]),
    "unknown parameter": (lambda d: d["components"]["x0"].update(device={"req_latncy_ns": 5}),
                          ["x0.device.req_latncy_ns", "not a parameter"]),
    "unknown group": (lambda d: d["components"]["x0"].update(cache={"bytes": 1024}), ["x0.cache", "groups"]),
    "missing parameter": (lambda d: d["components"]["l0"].pop("from"), ["l0.gen is missing"]),
    "missing type": (lambda d: d["components"]["l0"].pop("type"), ["l0.type is missing"]),
    "port left open": (lambda d: d["connections"].pop(3), ["l0.down", "left open"]),
    "device left open": (lambda d: d["components"].update(x1={"type": "type3", "from": "defaults"}),
                         ["x1.up", "left open"]),
    "two things on one port": (
        lambda d: (d["components"].update(x1={"type": "type3", "from": "defaults"}),
                   d["connections"].append(["l0.down", "x1.up"])), ["l0.down", "two things on one port"]),
    "two on one root port": (
        lambda d: (d["components"].update(l1={"type": "link", "from": "defaults"},
                                          x1={"type": "type3", "from": "defaults"}),
                   d["connections"].extend([["hb.root_port[0]", "l1.up"], ["l1.down", "x1.up"]])),
        ["hb.root_port[0]", "two things on one port"]),
    "channel mismatch": (lambda d: d["connections"].__setitem__(2, ["hb.root_port[0]", "ddr.up"]),
                         ["hb.root_port[0]", "ddr.up", "channel type mismatch"]),
    "protocol mismatch": (
        lambda d: (d["components"].update(home={"type": "home_agent", "from": "defaults"}),
                   d["connections"].__setitem__(2, ["home.root_port[0]", "l0.up"]),
                   d["connections"].append(["host.home", "home.host"]),
                   d["components"].update(hb={"type": "dram", "from": "defaults"})),
        ["home.root_port[0]", "x0.up", "channel type mismatch", "cxl.cache", "cxl.mem"]),
    "overlapping windows": (lambda d: d["connections"][1].update(base="512g"), ["hb.up", "overlaps", "ddr"]),
    "window not aligned": (lambda d: d["connections"][1].update(base=(1 << 40) + 32), ["hb.up", "not aligned"]),
    "window not aligned to the interleave": (lambda d: d["connections"][1].update(base=(1 << 40) + 1024),
                                             ["hb.up", "interleave_bytes"]),
    "window without its place": (lambda d: d["connections"][1].pop("base") and d["connections"][1].pop("size"),
                                 ["host.mem -> hb.up", "base and size are missing"]),
    "cycle": (lambda d: (d["components"].update(r1={"type": "remote_socket", "from": "defaults"},
                                                r2={"type": "remote_socket", "from": "defaults"}),
                         d["connections"].extend([["r1.down", "r2.up"], ["r2.down", "r1.up"]])), ["cycle", "r1", "r2"]),
    "unknown component": (lambda d: d["connections"].__setitem__(3, ["l0.down", "x9.up"]),
                          ["connections[3]", "x9 is not a component"]),
    "unknown port": (lambda d: d["connections"].__setitem__(3, ["l0.side", "x0.up"]), ["l0", "has no port side"]),
    "derived parameter": (lambda d: d["components"]["hb"].update(root_ports=2), ["hb.root_ports", "root_port"]),
    "out of range": (lambda d: d["components"]["l0"].update(lanes=3), ["l0.lanes = 3", "allowed values"]),
    "too many hosts": (lambda d: d["components"].update({f"h{i}": {"type": "host", "from": "defaults"}
                                                         for i in range(1, 17)}), ["h16", "17 hosts", "1 to 16"]),
    "two links in a row": (
        lambda d: (d["components"].update(l1={"type": "link", "from": "defaults"}),
                   d["connections"].__setitem__(3, ["l0.down", "l1.up"]),
                   d["connections"].append(["l1.down", "x0.up"])), ["l0.down -> l1.up", "two links in a row"]),
    "root port to device": (lambda d: (d["connections"].__setitem__(2, ["hb.root_port[0]", "x0.up"]),
                                       d["connections"].pop(3), d["components"].pop("l0")),
                            ["hb.root_port[0] -> x0.up", "through a link"]),
    "both ends send": (lambda d: d["connections"].__setitem__(3, ["l0.down", "hb.root_port[1]"]),
                       ["l0.down", "hb.root_port[1]", "both send"]),
    "window on a non-window connection": (
        lambda d: d["connections"].__setitem__(3, {"from": "l0.down", "to": "x0.up", "base": 0, "size": 4096}),
        ["l0.down -> x0.up", "only a window"]),
    "preset without the type": (lambda d: d["components"]["x0"].update({"from": "ddr-local"}),
                                ["x0.from", "no type3"]),
    "unreached": (lambda d: (d["components"].update(r1={"type": "remote_socket", "from": "defaults"},
                                                    r1d={"type": "dram", "from": "defaults"}),
                             d["connections"].append(["r1.down", "r1d.up"])), ["r1.up", "left open"]),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_topology_is_one_line_naming_the_component_and_port(kind):
    change, words = BAD[kind]
    with pytest.raises(T.TopologyError) as e:
        T.from_dict(_with(change))
    msg = str(e.value)
    assert "\n" not in msg, msg
    for w in words:
        assert w in msg, (kind, msg)


def test_a_bad_file_names_the_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('[components.h]\ntype = "host"\nfrom = "defaults"\n[components.h.x]\ny = 1\nconnections = 3\n')
    with pytest.raises(T.TopologyError, match=r"bad.toml: connections is missing"):
        T.load(p)
    p.write_text("[components\n")
    with pytest.raises(T.TopologyError, match=r"bad.toml: .*line 1"):
        T.load(p)


def test_devices_below_one_bridge_may_differ():
    d = _with(lambda d: (d["components"].update(l1={"type": "link", "from": "defaults"},
                                                x1={"type": "type3", "from": "defaults"}),
                         d["connections"].extend([["hb.root_port[1]", "l1.up"], ["l1.down", "x1.up"]])))
    t = T.from_dict(d)
    same = T.memory_system(t).map[1].cxl
    assert same.bridge.root_ports == 2 and same.ports is None  # alike: described once, as a preset would
    cxl = T.memory_system(t.replace(**{"x1.media.ranks": 2, "l1.lanes": 8})).map[1].cxl
    assert [p.media.ranks for p in cxl.ports] == [1, 2] and [p.link.lanes for p in cxl.ports] == [16, 8]
    # the graph drawn back from the system keeps each port's own parameters
    back = T.from_system(T.memory_system(t.replace(**{"x1.media.ranks": 2})))
    assert back.get("hb_dev1.media.ranks") == 2 and back.get("hb_dev0.media.ranks") == 1


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_every_example_topology_builds(path):
    t = T.load(path)
    build = T.accel_system if t.of_type("home_agent") and len(t.down("host", "mem")) == 1 \
        and t.components[t.down("host", "mem")[0].b.comp].type == "dram" else T.memory_system
    assert build(t).name == t.name


def test_a_window_over_two_different_expanders_answers_in_the_mean_of_their_latencies():
    # Half the lines of a 2-way window lie on each device, so a chase over it waits on
    # average what a chase on each device alone waits (the bridge adds nothing per port).
    both = T.memory_system(T.load(EXAMPLES / "asic-fpga-interleaved.toml"))
    assert [p.link.lanes for p in both.cxl.ports] == [8, 16]
    assert both.cxl.ports[1].media.data_rate_mts == presets.load("cxl-fpga").cxl.media.data_rate_mts
    lat = {}
    for name, s in (("both", both), ("asic", "cxl-asic"), ("fpga", "cxl-fpga")):
        lat[name] = engine.lmbench(s, ["1g"], accesses=20000)["latency_ns"].iloc[0]
    mean = (lat["asic"] + lat["fpga"]) / 2
    assert abs(lat["both"] - mean) / mean < 0.02, lat
    assert lat["asic"] < lat["both"] < lat["fpga"]


def test_an_override_names_component_and_parameter():
    t = T.from_dict(_base())
    assert t.replace(**{"l0.lanes": 8}).get("l0.lanes") == 8
    with pytest.raises(T.TopologyError, match="l0.width is not a parameter of l0"):
        t.replace(**{"l0.width": 8})
    with pytest.raises(T.TopologyError, match="l0.lanes = 3"):
        t.replace(**{"l0.lanes": 3})


def test_the_core_checks_each_root_ports_device_by_its_name():
    # A bridge's root ports are its connections (never a count beside a list): each device is its own
    # component, checked under its own name.
    from simcxl import _core
    s = presets.load("cxl-asic").replace(**{"cxl.bridge.root_ports": 2, "cxl.bridge.interleave_ways": 2})
    d = core_graph(s)
    assert [k["to"] for k in d["connections"] if k["from"].startswith("cxl.root_port")] == ["cxl_link0.up",
                                                                                             "cxl_link1.up"]
    d["components"]["cxl_dev1"]["media"]["ranks"] = 0
    with pytest.raises(_core.ConfigError, match=r"^cxl_dev1.media.ranks = 0 is out of range"):
        _core.validate(d)


def test_gem5_takes_the_same_topology_file():
    # The gem5 host bridge's expanders get each root port's own parameters from the graph.
    from simcxl.gem5 import components as gem5
    assert core_graph(gem5.interleaved(EXAMPLES / "cxl-asic.toml")) == core_graph(presets.load("cxl-asic"))
    t = T.from_dict(_with(lambda d: (d["components"].update(l1={"type": "link", "from": "defaults"},
                                                            x1={"type": "type3", "from": "defaults",
                                                                "media": {"ranks": 2}}),
                                     d["connections"].extend([["hb.root_port[1]", "l1.up"], ["l1.down", "x1.up"]]),
                                     d["connections"].pop(0), d["connections"][0].pop("base"),
                                     d["connections"][0].pop("size"), d["components"].pop("ddr"),
                                     d["components"].update(ddr={"type": "dram", "from": "defaults"}),
                                     d["connections"].append(["host.local", "ddr.up"]))))
    s = T.memory_system(t)
    assert s.kind == "cxl-type3"
    assert [gem5.expander_params(s, i)["media_ranks"] for i in (0, 1)] == [1, 2]
    assert gem5.bridge_params(s)["bridge_root_ports"] == 2


def test_more_than_sixteen_accelerators_on_one_home_agent_are_refused():
    def seventeen(d):
        d["components"]["home"] = {"type": "home_agent", "from": "defaults"}
        d["connections"].append(["host.home", "home.host"])
        for i in range(17):
            d["components"][f"al{i}"] = {"type": "link", "from": "defaults"}
            d["components"][f"a{i}"] = {"type": "accelerator", "from": "defaults"}
            d["connections"] += [["home.root_port", f"al{i}.up"], [f"al{i}.down", f"a{i}.up"]]
    with pytest.raises(T.TopologyError, match=r"home.root_port: more than 16 accelerators"):
        T.from_dict(_with(seventeen))


# Refused while the file is read, before any graph exists to hand the core.
PARSE_ERRORS = {"unknown type", "unknown parameter", "unknown group", "missing parameter", "missing type",
                "unknown component", "unknown port", "derived parameter", "preset without the type",
                "both ends send", "channel mismatch", "window on a non-window connection"}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_the_core_refuses_every_graph_python_refuses(kind, monkeypatch):
    """The Python checks are the friendly front; the core's builder is the authority. Every bad graph
    that reads as a graph, handed to the core unchecked, is refused there too, in one line naming a
    component the Python message names."""
    from simcxl import _core
    from simcxl.topology import parse
    monkeypatch.setattr(parse, "check", lambda t: None)
    try:
        t = T.from_dict(_with(BAD[kind][0]))
    except T.TopologyError:
        assert kind in PARSE_ERRORS
        return
    assert kind not in PARSE_ERRORS
    with pytest.raises(_core.ConfigError) as e:
        _core.validate(core_graph(t))
    msg = str(e.value)
    assert "\n" not in msg
    named = [n for n in t.components if any(n in w for w in BAD[kind][1])]
    assert any(n in msg for n in named), (kind, msg, named)
