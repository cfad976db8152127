"""One schema: the Python dataclasses and the C++ structs agree field for field."""

from dataclasses import fields

import pytest

from simcxl import _core
from simcxl.params import GROUPS, ParamError

from conftest import set_path


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_names_defaults_and_ranges_match(group):
    cpp = {name: (integer, default, lo, hi) for name, integer, default, lo, hi in _core.schema()[group]}
    py = {f.name: f for f in fields(GROUPS[group])}
    assert list(cpp) == list(py), "same fields in the same order"
    for name, (integer, default, lo, hi) in cpp.items():
        f = py[name]
        assert (f.type in ("int", int)) == integer, name
        assert f.default == pytest.approx(default), name
        assert (f.metadata["lo"], f.metadata["hi"]) == pytest.approx((lo, hi)), name


def test_every_cpp_struct_has_a_dataclass():
    assert set(_core.schema()) == set(GROUPS)


WHERE = {"HostParams": ("local-dram", "host"), "DramParams": ("local-dram", "local_dram"),
         "InterSocketParams": ("remote-numa", "remote.link"), "BridgeParams": ("cxl-type3", "cxl.bridge"),
         "LinkParams": ("cxl-type3", "cxl.link"), "DeviceParams": ("cxl-type3", "cxl.device"),
         "DCacheParams": ("accel", "cache"), "HomeParams": ("accel", "home"), "AccelParams": ("accel", "accel"),
         "DmaParams": ("accel", "dma")}


def core_system(kind, where, values):
    if kind == "accel":
        d = {g: {} for g in ("host_dram", "home", "link", "cache", "accel", "dma", "media")}
        d[where].update(values)
        return d
    d = {"kind": kind, "host": {}, "local_dram": {}}
    if kind == "remote-numa":
        d["remote"] = {"link": {}, "dram": {}}
    if kind == "cxl-type3":
        d["cxl"] = {"bridge": {}, "link": {}, "device": {}, "media": {}}
    set_path(d, where, values)
    return d


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_both_sides_reject_the_same_out_of_range_values(group):
    cls = GROUPS[group]
    kind, where = WHERE[group]
    validate = _core.validate_coherent if kind == "accel" else _core.validate
    for f in fields(cls):
        for bad in (f.metadata["lo"] - 1, f.metadata["hi"] * 2 + 1):
            obj = cls()
            setattr(obj, f.name, int(bad) if f.type in ("int", int) else float(bad))
            with pytest.raises(ParamError, match=f"{where}.{f.name} = "):
                obj.validate(where)
            with pytest.raises(_core.ConfigError, match=f"{where}.{f.name} = .* allowed"):
                validate(core_system(kind, where, {f.name: bad}))
        # The default itself is accepted by both.
        cls().validate(where)
        validate(core_system(kind, where, {f.name: f.default}))
