"""CI-safe: the gem5 SimObject declares exactly the dataclass fields, with the
same defaults, as the C++ structs it copies them into (no gem5 needed)."""

import ast
from dataclasses import fields

from simcxl import _core
from simcxl import gem5 as g5
from simcxl.params import GROUPS as PY_GROUPS

from conftest import REPO

CPP = {"bridge": "BridgeParams", "link": "LinkParams", "device": "DeviceParams", "media": "DramParams"}


def declared_params():
    tree = ast.parse((REPO / "devices" / "CXLMemExpander.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CXLMemExpander")
    out = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                    and call.func.value.id == "Param":
                out[stmt.targets[0].id] = (call.func.attr, ast.literal_eval(call.args[0]))
    return out


def test_simobject_params_match_dataclasses_and_cpp():
    decl = declared_params()
    assert decl.pop("seed") == ("Unsigned", 1)
    assert list(decl) == list(g5.expander_names())
    schema = _core.schema()
    for prefix, cpp in CPP.items():
        cls = PY_GROUPS[cpp]
        cpp_fields = {name: (integer, default) for name, integer, default, lo, hi in schema[cpp]}
        for f in fields(cls):
            kind, default = decl[f"{prefix}_{f.name}"]
            assert kind == ("Unsigned" if f.type in ("int", int) else "Float"), f.name
            assert default == f.default == cpp_fields[f.name][1], f.name


def test_simobject_params_of_a_preset(presets):
    p = g5.simobject_params(presets["cxl-asic"])
    assert p["link_lanes"] == presets["cxl-asic"].cxl.link.lanes
    assert set(p) == set(declared_params())
