"""A parameter group: named fields with a unit, a range and a reason, checked and converted.

The schema itself (``groups.py``: every group; ``params.py``: the System they make up) is written with them.
"""

from __future__ import annotations

from dataclasses import field, fields
import difflib
import re
from typing import Any, Dict, Iterable, Optional, Tuple


class ParamError(ValueError):
    """A parameter is missing, unknown, or outside its allowed values."""


def param(default: Any, lo: float, hi: float, unit: str = "", doc: str = "",
          choices: Optional[Tuple[Any, ...]] = None, wide: bool = False, names: Optional[Tuple[str, ...]] = None) -> Any:
    """A field of a parameter group. ``wide``: an int the C++ core holds in 64 bits (uint64_t; others are
    uint32_t), for sizes and addresses it multiplies or adds up. ``names``: words a file may give for the
    values 0, 1, ... (routing = "pbr"), held as those numbers."""
    return field(default=default, metadata={"lo": lo, "hi": hi, "unit": unit, "doc": doc, "choices": choices,
                                            "wide": wide, "names": names})


def by_name(cls: Any, leaf: str, value: Any, where: str) -> Any:
    """``value`` as the number field ``leaf`` of group ``cls`` holds, when it is one of the field's names."""
    f = next((f for f in fields(cls) if f.name == leaf), None)
    names = f.metadata.get("names") if f is not None else None
    if not names or not isinstance(value, str):
        return value
    if value not in names:
        raise ParamError(f"{where} = {value!r} is not allowed; allowed: {', '.join(repr(n) for n in names)}")
    return names.index(value)


NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def check_name(name: Any, where: str, reserved: Tuple[str, ...] = ()) -> None:
    """A window's, device's or component's name: a letter, then letters, digits, _ or -; none of ``reserved``."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or name in reserved:
        raise ParamError(f"{where} = {name!r} is not allowed; allowed: a letter then letters, digits, _ or -"
                         + (f", not one of {', '.join(reserved)}" if reserved else ""))


def fmt(v: Any) -> str:
    """A number as messages show it: a whole float without its ".0"."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def shown(key: Any) -> str:
    """A key as a message shows it: quoted when a character of it (a line break) would not print as itself."""
    return key if isinstance(key, str) and key.isprintable() else repr(key)


def did_you_mean(name: Any, valid: Iterable[Any]) -> str:
    """"did you mean X? " for the valid names closest to a typo (difflib, as git and click suggest), else ""."""
    near = difflib.get_close_matches(str(name), [str(v) for v in valid], n=3, cutoff=0.6)
    return f"did you mean {' or '.join(near)}? " if near else ""


def set_dotted(groups: Dict[str, "ParamGroup"], path: str, value: Any, what: str) -> None:
    """Sets ``group.leaf`` among named parameter groups (whole floats become ints for int fields)."""
    group, _, leaf = path.rpartition(".")
    obj = groups.get(group)
    listing = "'simcxl presets show NAME' lists them"
    if obj is None:
        every = [f"{g}.{f.name}" for g, o in groups.items() for f in fields(o)]
        raise ParamError(f"{shown(path)} is not a parameter of {what}; {did_you_mean(path, every)}allowed groups: "
                         f"{', '.join(groups)} ({listing})")
    names = [f.name for f in fields(obj)]
    if leaf not in names:
        raise ParamError(f"{shown(path)} is not a parameter of {what}; {did_you_mean(leaf, names)}allowed in "
                         f"{group}: {', '.join(names)} ({listing})")
    value = by_name(type(obj), leaf, value, path)
    ftype = next(f.type for f in fields(obj) if f.name == leaf)
    if ftype in ("int", int) and isinstance(value, float) and value.is_integer():
        value = int(value)
    setattr(obj, leaf, value)


class ParamGroup:
    """Base of the flat parameter groups (one per C++ struct)."""

    def validate(self, where: str) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            m = f.metadata
            name = f"{where}.{f.name}"
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                allowed = (f"allowed values: {', '.join(fmt(c) for c in m['choices'])}" if m["choices"] is not None
                           else f"allowed: {fmt(m['lo'])} to {fmt(m['hi'])}")
                if m.get("names"):
                    allowed = f"allowed: {', '.join(repr(n) for n in m['names'])}"
                raise ParamError(f"{name} = {v!r} is not a number; {allowed}")
            # No float() of an int: one beyond 1e308 would overflow.
            if f.type in ("int", int) and isinstance(v, float) and not v.is_integer():
                raise ParamError(f"{name} = {v} is not allowed; allowed: a whole number from "
                                 f"{fmt(m['lo'])} to {fmt(m['hi'])}")
            if v != v or not (m["lo"] <= v <= m["hi"]):  # NaN compares unequal to itself
                raise ParamError(f"{name} = {fmt(v)} is out of range; allowed: {fmt(m['lo'])} to {fmt(m['hi'])}")
            if m["choices"] is not None and v not in m["choices"]:
                allowed = ", ".join(fmt(c) for c in m["choices"])
                raise ParamError(f"{name} = {fmt(v)} is not allowed; allowed values: {allowed}")
        self._check(where)

    def _check(self, where: str) -> None:
        """Cross-field constraints; subclasses extend."""

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Dict[str, Any], where: str):
        if not isinstance(d, dict):
            raise ParamError(f"{where} must be a table of parameters, not {type(d).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ParamError(f"{where}.{shown(unknown[0])} is not a parameter; {did_you_mean(unknown[0], names)}"
                             f"allowed: {', '.join(sorted(names))}")
        obj = cls(**{k: by_name(cls, k, v, f"{where}.{k}") for k, v in d.items()})
        obj.validate(where)
        return obj

    @classmethod
    def describe(cls):
        """(name, default, unit, lo, hi, doc) of every field, for docs and the CLI."""
        return [(f.name, f.default, f.metadata["unit"], f.metadata["lo"], f.metadata["hi"], f.metadata["doc"])
                for f in fields(cls)]
