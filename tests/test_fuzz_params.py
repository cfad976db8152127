"""Fuzzing the parameter schema: overrides (as --set and sweeps apply them),
preset tables and preset files. Every rejection is one line naming the
parameter and what is allowed; every accepted system is one the C++ core
accepts too."""

from __future__ import annotations

import json
import math
from dataclasses import fields

import pytest
from hypothesis import example, given, strategies as st

import simcxl
from simcxl import _core
from simcxl.config.params import ParamError, System, shown
from simcxl.config.presets import load_file
from simcxl.topology import core_graph

from conftest import assert_one_line_rejection, fuzz, graph_path, set_graph

pytestmark = pytest.mark.usefixtures("hang_guard")

PRESETS = {n: simcxl.load_preset(n) for n in simcxl.preset_names()}


def field_of(system: System, path: str):
    group, _, leaf = path.rpartition(".")
    return next(f for f in fields(system._groups()[group]) if f.name == leaf)


def is_int(f) -> bool:
    return f.type in ("int", int)


def wrong_type():
    return st.one_of(st.none(), st.booleans(), st.text(max_size=8), st.lists(st.integers(), max_size=2),
                     st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                     st.sampled_from(["8", "1e3", "0x10", "", "nan"]))


def bad_value(f):
    """A value outside what field `f` allows: out of range, not a number,
    not whole, not one of its choices."""
    lo, hi, choices = f.metadata["lo"], f.metadata["hi"], f.metadata["choices"]
    bad = [st.just(math.nan), st.just(math.inf), st.just(-math.inf), wrong_type(),
           st.integers(min_value=max(2 ** 64, int(hi) + 1), max_value=10 ** 400),   # past any C integer
           st.integers(min_value=-10 ** 400, max_value=min(-(2 ** 64), int(lo) - 1)),
           st.floats(min_value=hi, exclude_min=True, allow_nan=False),
           st.integers(min_value=math.floor(hi) + 1, max_value=math.floor(hi) + 2 ** 20)]
    if lo > -math.inf:
        bad += [st.floats(max_value=lo, exclude_max=True, allow_nan=False),
                st.integers(min_value=math.ceil(lo) - 2 ** 20, max_value=math.ceil(lo) - 1)]
    if is_int(f):
        bad.append(st.floats(min_value=lo, max_value=hi).filter(lambda v: not v.is_integer()))
    if choices:
        bad.append(st.integers(min_value=int(lo), max_value=int(hi)).filter(lambda v: v not in choices))
    return st.one_of(bad)


def good_value(f):
    lo, hi, choices = f.metadata["lo"], f.metadata["hi"], f.metadata["choices"]
    if choices:
        return st.sampled_from(choices)
    if is_int(f):
        return st.integers(min_value=int(lo), max_value=int(hi))
    return st.floats(min_value=lo, max_value=hi)


@st.composite
def bad_override(draw):
    name = draw(st.sampled_from(sorted(PRESETS)))
    s = PRESETS[name]
    path = draw(st.sampled_from(sorted(s.parameters())))
    return s, path, draw(bad_value(field_of(s, path)))


@fuzz(400)
@given(bad_override())
@example((PRESETS["cxl-asic"], "cxl.link.lanes", 10 ** 400))       # was OverflowError from float()
@example((PRESETS["ddr-local"], "host.l1_latency_ns", -10 ** 400))
def test_bad_override_is_one_line_naming_the_parameter(case):
    s, path, value = case
    with pytest.raises(Exception) as e:
        s.replace(**{path: value})
    assert_one_line_rejection(e.value, path)


def is_out_of_range_or_not_a_number(f, value) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return True
    return not f.metadata["lo"] <= value <= f.metadata["hi"] or (is_int(f) and not float(value).is_integer())


@fuzz(300)
@given(bad_override())
def test_core_rejects_what_python_rejects_naming_the_parameter(case):
    """The C++ reader is the last line for a description that skips Python."""
    s, path, value = case
    if path in ("cxl.bridge.root_ports", "cxl.bridge.interleave_ways"):
        return  # a graph's bridge has as many as its root_port connections: no value to break
    core = set_graph(core_graph(s), path, value)
    if is_out_of_range_or_not_a_number(field_of(s, path), value):
        with pytest.raises(Exception) as e:
            _core.validate(core)
        assert_one_line_rejection(e.value, graph_path(path))


@st.composite
def in_range_overrides(draw):
    name = draw(st.sampled_from(sorted(PRESETS)))
    s = PRESETS[name]
    paths = draw(st.lists(st.sampled_from(sorted(s.parameters())), min_size=1, max_size=4, unique=True))
    return s, {p: draw(good_value(field_of(s, p))) for p in paths}


@fuzz(400)
@given(in_range_overrides())
def test_in_range_overrides_are_accepted_by_both_or_rejected_naming_one(case):
    """Values inside every field's own range may still break a rule between
    fields (cache geometry, watermarks, refresh, flit and generation); the
    error then names one of the fields set."""
    s, over = case
    try:
        new = s.replace(**over)
    except Exception as e:
        msg = assert_one_line_rejection(e)
        assert any(p.rpartition(".")[2] in msg for p in over), f"{msg} names none of {list(over)}"
        return
    _core.validate(core_graph(new))
    for p, v in over.items():
        assert new.get(p) == v


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(min_value=-10 ** 30, max_value=10 ** 30)
                           | st.floats() | st.text(max_size=6),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                           max_leaves=6)


@st.composite
def mutated_preset(draw):
    """A preset table with one part broken: a value, a key or a whole table."""
    d = PRESETS[draw(st.sampled_from(sorted(PRESETS)))].to_dict()
    tables = [("",)] + [(k,) for k, v in d.items() if isinstance(v, dict)] + \
             [(k, sk) for k, v in d.items() if isinstance(v, dict) for sk, sv in v.items() if isinstance(sv, dict)]
    where = draw(st.sampled_from(tables))
    t = d
    for k in where:
        if k:
            t = t[k]
    how = draw(st.sampled_from(["value", "unknown", "delete", "table"]))
    key = draw(st.sampled_from(sorted(t)))
    if how == "value":
        t[key] = draw(JSON_VALUES)
    elif how == "unknown":
        key = draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in t))
        t[key] = draw(JSON_VALUES)
    elif how == "delete":
        del t[key]
    else:
        t[key] = draw(st.one_of(st.lists(JSON_VALUES, max_size=2), st.integers(), st.text(max_size=4)))
    return d, key


@fuzz(400)
@given(mutated_preset())
@example(({"name": "x", "kind": "local-dram", "host": {"cores": 10 ** 400}}, "cores"))
@example(({"name": ["x"], "kind": "local-dram"}, "name"))
@example(({"name": "x", "kind": "local-dram", "seed": 1.5}, "seed"))
@example(({"name": "x", "kind": "local-dram", "host": {"\n": 1}}, "\n"))  # the line break was printed
def test_broken_preset_table_is_rejected_naming_the_key(case):
    d, key = case
    try:
        s = System.from_dict(d)
    except Exception as e:
        assert_one_line_rejection(e, shown(key))
        return
    # Accepted: what it says is a system both sides take, and it round-trips.
    _core.validate(core_graph(s))
    assert System.from_dict(s.to_dict()).to_dict() == s.to_dict()
    for k in ("name", "description", "source"):
        assert isinstance(getattr(s, k), str)


def encodings(text: str):
    raw = text.encode()
    return st.one_of(
        st.just(raw),
        st.just(text.encode("utf-16")), st.just(text.encode("utf-32")),
        st.just(b"\xef\xbb\xbf" + raw),                                # a byte-order mark, as spreadsheets write
        st.integers(0, len(raw)).map(lambda n: raw[:n]),               # truncated
        st.integers(0, len(raw)).map(lambda n: raw[:n] + b"\x00" + raw[n:]),
        st.integers(0, len(raw)).map(lambda n: raw[:n] + "é".encode("latin-1") + raw[n:]),
        st.binary(max_size=64))


@st.composite
def preset_file_bytes(draw):
    d, _ = draw(mutated_preset()) if draw(st.booleans()) else (PRESETS["cxl-asic"].to_dict(), None)
    text = json.dumps(d, indent=draw(st.sampled_from([None, 2])))
    return draw(encodings(text))


@fuzz(400)
@given(preset_file_bytes())
@example(b"[" * 5000)                                     # was RecursionError from the JSON parser
@example(b'{"name": "x", "kind": "local-dram", "seed": 1e400}')
def test_preset_file_loads_or_is_one_line_naming_the_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("p") / "p.json"
    path.write_bytes(data)
    try:
        s = load_file(path)
    except Exception as e:
        assert assert_one_line_rejection(e, says_allowed=False).startswith(f"preset file {path}")
        return
    assert s.validate() is s
