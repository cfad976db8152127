"""The parameter API: presets, dotted overrides, dict round trips, and the C++ side's own checks."""

from __future__ import annotations

import copy
import json

import pytest

import simcxl

from simcxl import _core
from simcxl.config import presets
from simcxl.config.params import System
from simcxl.topology import core_graph

from conftest import graph_path, set_path

PRESETS = {"ddr-local": "local-dram", "ddr-remote": "remote-numa", "cxl-asic": "cxl-type3", "cxl-fpga": "cxl-type3",
           "cxl-cz120": "cxl-type3"}


def test_preset_names():
    assert sorted(simcxl.preset_names()) == sorted(PRESETS)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_load_preset_validates(name):
    s = simcxl.load_preset(name)
    assert isinstance(s, System)
    assert s.name == name and s.kind == PRESETS[name]
    assert s.validate() is s
    _core.validate(core_graph(s))  # the C++ side accepts it too
    # exactly the memory its kind needs
    assert (s.cxl is not None) == (s.kind == "cxl-type3")
    assert (s.remote is not None) == (s.kind == "remote-numa")


def test_config_error_is_value_error():
    assert issubclass(_core.ConfigError, ValueError)
    assert issubclass(simcxl.ParamError, ValueError)


# ---------------------------------------------------------------- replace


def test_replace_changes_only_that_value():
    s = simcxl.load_preset("cxl-asic")
    assert s.get("cxl.link.lanes") != 4
    before = s.parameters()
    t = s.replace(**{"cxl.link.lanes": 4})
    assert t.get("cxl.link.lanes") == 4 and t.cxl.link.lanes == 4
    after = t.parameters()
    assert set(after) == set(before)
    assert {k for k in before if before[k] != after[k]} == {"cxl.link.lanes"}
    assert (t.name, t.kind, t.seed, t.description) == (s.name, s.kind, s.seed, s.description)
    # the original is untouched
    assert s.parameters() == before


def test_replace_several_and_integral_float():
    s = simcxl.load_preset("cxl-asic")
    t = s.replace(**{"cxl.link.lanes": 8.0, "host.l1_latency_ns": 2.25})
    assert t.cxl.link.lanes == 8 and isinstance(t.cxl.link.lanes, int)
    assert t.host.l1_latency_ns == 2.25


def test_replace_revalidates_cross_field_constraints():
    s = simcxl.load_preset("cxl-asic")
    assert s.cxl.link.flit_bytes == 68
    with pytest.raises(simcxl.ParamError, match=r"cxl\.link\.flit_bytes"):
        s.replace(**{"cxl.link.gen": 6})
    # together with a 256 B flit, gen 6 is fine
    t = s.replace(**{"cxl.link.gen": 6, "cxl.link.flit_bytes": 256})
    assert (t.cxl.link.gen, t.cxl.link.flit_bytes) == (6, 256)
    _core.validate(core_graph(t))


@pytest.mark.parametrize("path, value, needles", [
    ("cxl.link.lanes", 3, ["cxl.link.lanes", "1, 2, 4, 8, 16"]),
    ("cxl.device.req_queue", 0, ["cxl.device.req_queue", "1 to 65536"]),
    ("cxl.media.read_queue", 0, ["cxl.media.read_queue", "1 to"]),
    ("host.cores", -1, ["host.cores", "1 to 1024"]),
    ("host.cores", 2.5, ["host.cores", "whole number", "1 to 1024"]),
    ("host.cores", True, ["host.cores", "1 to 1024"]),
    ("host.cores", "8", ["host.cores", "1 to 1024"]),
    ("host.l1_latency_ns", float("nan"), ["host.l1_latency_ns", "0 to 100"]),
    ("cxl.link.bit_error_rate", 0.5, ["cxl.link.bit_error_rate", "0 to 0.001"]),
])
def test_replace_out_of_range(path, value, needles):
    s = simcxl.load_preset("cxl-asic")
    with pytest.raises(simcxl.ParamError) as e:
        s.replace(**{path: value})
    for n in needles:
        assert n in str(e.value), (n, str(e.value))


@pytest.mark.parametrize("path", ["nonexistent.param", "cxl.link.bogus", "host", "cxl.link",
                                  "cxl.link.lanes.x", "host._check", "remote.link.latency_ns"])
def test_replace_unknown_name(path):
    s = simcxl.load_preset("cxl-asic")
    with pytest.raises(simcxl.ParamError) as e:
        s.replace(**{path: 1})
    assert path in str(e.value)


def test_replace_memory_of_other_kind():
    with pytest.raises(simcxl.ParamError, match=r"cxl\.link\.lanes"):
        simcxl.load_preset("ddr-local").replace(**{"cxl.link.lanes": 8})


def test_replace_unknown_name_lists_allowed():
    with pytest.raises(simcxl.ParamError) as e:
        simcxl.load_preset("cxl-asic").replace(**{"cxl.link.lane": 8})
    assert "allowed" in str(e.value) and "lanes" in str(e.value)


# ---------------------------------------------------------------- dict and file round trips


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_from_dict_round_trip(name):
    s = simcxl.load_preset(name)
    d = s.to_dict()
    t = System.from_dict(d)
    assert t == s
    assert t.to_dict() == d
    assert t.parameters() == s.parameters()
    # through JSON text as well (what a preset file holds)
    assert System.from_dict(json.loads(json.dumps(d))) == s


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_save_load_file_round_trip(tmp_path, name):
    s = simcxl.load_preset(name)
    path = presets.save(s, tmp_path / "sub" / f"{name}.json")
    assert path.is_file()
    assert [p.name for p in path.parent.iterdir()] == [f"{name}.json"]  # no temporary file left behind
    assert presets.load_file(path) == s
    assert simcxl.load_preset(str(path)) == s


def test_save_load_file_keeps_changes(tmp_path):
    s = simcxl.load_preset("cxl-asic").replace(**{"cxl.link.lanes": 2, "host.cores": 4})
    t = presets.load_file(presets.save(s, tmp_path / "narrow.json"))
    assert (t.cxl.link.lanes, t.host.cores) == (2, 4)
    assert t == s


def test_save_refuses_invalid_system(tmp_path):
    s = simcxl.load_preset("cxl-asic")
    s.cxl.link.lanes = 3  # set behind replace()'s back
    with pytest.raises(simcxl.ParamError, match=r"cxl\.link\.lanes"):
        presets.save(s, tmp_path / "bad.json")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("path, value, needle", [
    ("cxl.link.lanes", 3, "cxl.link.lanes"),
    ("cxl.link.lane_count", 8, "cxl.link.lane_count"),
    ("host.cores", 0, "host.cores"),
    ("local_dram.read_queue", 0, "local_dram.read_queue"),
])
def test_from_dict_rejects(path, value, needle):
    d = simcxl.load_preset("cxl-asic").to_dict()
    set_path(d, path, value)
    with pytest.raises(simcxl.ParamError) as e:
        System.from_dict(d)
    assert needle in str(e.value)
    assert "allowed" in str(e.value)


def test_from_dict_unknown_top_level_key():
    d = simcxl.load_preset("cxl-asic").to_dict()
    d["seeed"] = 2
    with pytest.raises(simcxl.ParamError, match="seeed"):
        System.from_dict(d)


def test_load_file_names_file_line_and_column(tmp_path):
    f = tmp_path / "broken.json"
    f.write_text('{\n  "name": "x",\n  "kind": "cxl-type3",,\n}\n')
    with pytest.raises(simcxl.ParamError) as e:
        presets.load_file(f)
    assert str(f) in str(e.value) and "line 3" in str(e.value) and "column 23" in str(e.value)


def test_load_unknown_preset_name():
    with pytest.raises(simcxl.ParamError) as e:
        simcxl.load_preset("no-such-memory")
    for n in PRESETS:
        assert n in str(e.value)


# ---------------------------------------------------------------- the C++ checks on their own


def _core_dict(name="cxl-asic", path=None, value=None, delete=False):
    """The preset's graph as the core takes it, with ``component.parameter`` (or a top-level key) changed."""
    d = core_graph(simcxl.load_preset(name))
    if path is not None:
        *parents, leaf = path.split(".")
        obj = d["components"] if parents else d
        for p in parents:
            obj = obj[p]
        if delete:
            del obj[leaf]
        else:
            obj[leaf] = value
    return d


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_core_validate_accepts_presets(name):
    assert _core.validate(core_graph(simcxl.load_preset(name))) is None


BAD_VALUES = [
    # (dotted field, value, words the message must hold)
    ("cxl.link.lanes", 3, ["cxl.link.lanes", "1, 2, 4, 8, 16"]),
    ("cxl.media.read_queue", 0, ["cxl.media.read_queue", "out of range", "1 to"]),
    ("cxl.device.req_queue", 0, ["cxl.device.req_queue", "1 to 65536"]),
    ("host.cores", -1, ["host.cores", "1 to 1024"]),
    ("host.cores", 2.5, ["host.cores", "whole number", "1 to 1024"]),
    ("host.cores", True, ["host.cores", "not a number"]),
    ("cxl.link.bit_error_rate", True, ["cxl.link.bit_error_rate", "not a number"]),
    ("host.cores", "8", ["host.cores", "not a number"]),
    ("host.cores", None, ["host.cores", "not a number"]),
    ("host.cores", 2 ** 64, ["host.cores", "1 to 1024"]),
    ("host.l1_latency_ns", float("nan"), ["host.l1_latency_ns", "0 to 100"]),
    ("host.l1_latency_ns", float("inf"), ["host.l1_latency_ns", "0 to 100"]),
    ("cxl.link.bogus", 1, ["cxl.link.bogus", "not a parameter", "lanes"]),
    ("host.l1_bytes", 1000 * 64, ["host.l1_bytes", "l1_assoc"]),
    ("cxl.link.gen", 6, ["cxl.link.flit_bytes", "256"]),
]


@pytest.mark.parametrize("path, value, needles", BAD_VALUES, ids=[f"{p}={v!r}" for p, v, _ in BAD_VALUES])
def test_core_validate_rejects(path, value, needles):
    """The same checks in the core, its messages naming the component."""
    with pytest.raises(_core.ConfigError) as e:
        _core.validate(_core_dict(path=graph_path(path), value=value))
    assert isinstance(e.value, ValueError)
    for n in needles:
        assert graph_path(n) in str(e.value), (graph_path(n), str(e.value))


@pytest.mark.parametrize("path, value, needles", BAD_VALUES, ids=[f"{p}={v!r}" for p, v, _ in BAD_VALUES])
def test_python_rejects_what_core_rejects(path, value, needles):
    """Python's checks and the C++ checks agree on every value above."""
    d = simcxl.load_preset("cxl-asic").to_dict()
    set_path(d, path, value)
    with pytest.raises(simcxl.ParamError) as e:
        System.from_dict(d)
    assert needles[0] in str(e.value)


@pytest.mark.parametrize("name, path, value, needle", [
    ("ddr-remote", "remote_dram.read_queue", 0, "remote_dram.read_queue"),
    ("ddr-remote", "remote.bandwidth_gbps", 0, "remote.bandwidth_gbps"),
    ("ddr-local", "local_dram.channels", 0, "local_dram.channels"),
    ("ddr-local", "seed", -1, "seed"),
    ("ddr-local", "seed", 1.5, "seed"),
    ("ddr-local", "local_dram.type", "cxl-type2", "'cxl-type2' is not a component type; allowed: host, dram"),
    ("cxl-asic", "cxl.root_ports", 2, r"cxl.root_ports is derived: the number of its root_port connections"),
])
def test_core_validate_rejects_other_kinds(name, path, value, needle):
    with pytest.raises(_core.ConfigError, match=needle):
        _core.validate(_core_dict(name, path, value))


@pytest.mark.parametrize("path, needle", [("host", "no component of type host"),
                                          ("cxl_dev0.media", "cxl_dev0.media is missing"),
                                          ("cxl_link0.type", "cxl_link0.type is missing")])
def test_core_validate_missing_component_or_group(path, needle):
    d = _core_dict()
    *parents, leaf = path.split(".")
    obj = d["components"]
    for p in parents:
        obj = obj[p]
    del obj[leaf]
    with pytest.raises(_core.ConfigError, match=needle):
        _core.validate(d)


def test_core_validate_group_not_a_table():
    with pytest.raises(_core.ConfigError, match=r"cxl_dev0\.media must be a table"):
        _core.validate(_core_dict(path="cxl_dev0.media", value=16))


def test_core_validate_does_not_modify_its_input():
    d = _core_dict()
    before = copy.deepcopy(d)
    _core.validate(d)
    assert d == before


@pytest.mark.parametrize("path", [
    pytest.param("seeed", id="top-level"),
    pytest.param("cxl_dev0.devcie", id="component-group"),
])
def test_core_validate_rejects_unknown_keys_outside_groups(path):
    with pytest.raises(_core.ConfigError, match=path.rsplit(".", 1)[-1]):
        _core.validate(_core_dict(path=path, value={} if "." in path else 2))
