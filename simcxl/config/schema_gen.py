"""Writes every copy of the parameter schema from the dataclasses in ``simcxl/config/groups.py``.

    python -m simcxl.config.schema_gen            # rewrite the generated files
    python -m simcxl.config.schema_gen --check    # exit 1 naming each file that differs

Run from the repository root (or give ``--root``). It writes:

* ``ext/cxlcore/config/params_fields.hpp``: each group's X-macro field list
  ``X(type, name, default, min, max)`` and the list of groups, which
  ``params.hpp`` includes. Committed, since the C++ build (CI, gem5's SCons)
  must not need Python.
* the parameter sections of the gem5 SimObject files (``devices/*.py``)
  between the ``# BEGIN GENERATED PARAMS`` / ``# END GENERATED PARAMS``
  markers. gem5's build imports each SimObject file by the path the
  SConscript gives, with only ``m5`` importable, so the declarations are
  written into the files themselves rather than imported from a helper.
* ``docs/reference/parameters.md``: the reference of every group.

The schema is read from the repository's files themselves (``simcxl/config/groups.py``, the System
of ``params.py`` that holds the groups, and ``param_group.py``, the machinery both are written with), not from whichever
``simcxl`` is installed, so the check sees an edit at once.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import math
import sys
import textwrap
from dataclasses import MISSING, fields
from pathlib import Path
from types import ModuleType
from typing import Callable, Dict, List, Optional, Sequence, Tuple

SOURCE = "simcxl/config/groups.py"
#: Every file the schema is read from: the groups, the System that holds them (params.py) and the
#: machinery both are written with.
INPUTS = (SOURCE, "simcxl/config/params.py", "simcxl/config/param_group.py")
COMMAND = "python -m simcxl.config.schema_gen"
HEADER = "ext/cxlcore/config/params_fields.hpp"
DOCS = "docs/reference/parameters.md"
BEGIN = "# BEGIN GENERATED PARAMS"
END = "# END GENERATED PARAMS"

# Each SimObject file, its class and the groups it declares as <prefix>_<field>.
# The wrappers (devices/*.cc) copy exactly these lists' fields from params()
# with the CXL_*_FIELDS macros, so a SimObject holds every field of its groups.
SIMOBJECTS: Dict[str, Tuple[str, Tuple[Tuple[str, str], ...]]] = {
    "devices/CXLHostBridge.py": ("CXLHostBridge", (("bridge", "BridgeParams"),)),
    "devices/CXLType3Expander.py": ("CXLType3Expander", (("link", "LinkParams"), ("device", "DeviceParams"),
                                                         ("media", "DramParams"))),
    "devices/CXLSwitch.py": ("CXLSwitch", (("switch", "SwitchParams"), ("link", "LinkParams"))),
    "devices/CXLNic.py": ("CXLNic", (("nic", "NicParams"),)),
}

INT32_MAX = (1 << 31) - 1
UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1


class SchemaError(ValueError):
    """A field the generator cannot write faithfully (e.g. a range its C++ type cannot hold)."""


def find_root(start: Optional[Path] = None) -> Path:
    """The repository root: the first of the working directory and its parents holding simcxl/config/groups.py and
    ext/cxlcore."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / SOURCE).is_file() and (d / "ext" / "cxlcore").is_dir():
            return d
    raise SystemExit(f"schema_gen: no repository root (with {SOURCE} and ext/cxlcore) at or above {here}; "
                     "run from the repository or give --root")


def load_params(root: Path) -> ModuleType:
    """The repository's params.py as a module of its own: it imports nothing of simcxl at import time but
    groups and param_group, so a package of those three (not simcxl's __init__, nor the built core) is enough."""
    pkg = ModuleType("_simcxl_schema")
    pkg.__path__ = [str(root / Path(SOURCE).parent)]
    sys.modules[pkg.__name__] = pkg  # dataclasses look their module up while building the classes
    try:
        schema = ModuleType("schema")  # the groups and the System's names in one namespace
        system = importlib.import_module(f"{pkg.__name__}.params")
        schema.__dict__.update(vars(sys.modules[f"{pkg.__name__}.groups"]), **vars(system))
        return schema
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == pkg.__name__]:
            del sys.modules[name]


# -- one field ----------------------------------------------------------------------------


def is_int(f) -> bool:
    return f.type in ("int", int)


def cxx_type(f) -> str:
    if not is_int(f):
        return "double"
    return "uint64_t" if f.metadata.get("wide") else "uint32_t"


def check_field(group: str, f) -> None:
    m = f.metadata
    where = f"{group}.{f.name}"
    if f.default is MISSING:
        raise SchemaError(f"{where} has no default")
    values = {"default": f.default, "lo": m["lo"], "hi": m["hi"]}
    if is_int(f):
        top = UINT64_MAX if m.get("wide") else UINT32_MAX
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, int):
                raise SchemaError(f"{where}: {k} = {v!r} is not a whole number, as an int field's must be")
            if not 0 <= v <= top:
                hint = "" if m.get("wide") else " (give the field wide=True for a 64-bit C++ integer)"
                raise SchemaError(f"{where}: {k} = {v} does not fit its C++ type {cxx_type(f)}{hint}")
    else:
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SchemaError(f"{where}: {k} = {v!r} is not a finite number")
            if float(v) != v:
                raise SchemaError(f"{where}: {k} = {v!r} is not exactly a double")
    if not m["lo"] <= f.default <= m["hi"]:
        raise SchemaError(f"{where}: default {f.default} is outside {m['lo']} to {m['hi']}")
    for c in m["choices"] or ():
        if isinstance(c, bool) or not isinstance(c, int if is_int(f) else (int, float)) or not m["lo"] <= c <= m["hi"]:
            raise SchemaError(f"{where}: choice {c!r} is not a {cxx_type(f)} from {m['lo']} to {m['hi']}")


def cxx_literal(f, v) -> str:
    """A C++ literal of exactly v: a double by repr() (the shortest string that reads back as the same
    double), an integer in decimal, with ull where an int would not hold it."""
    if not is_int(f):
        return repr(float(v))
    return f"{v}ull" if v > INT32_MAX else str(v)


def num(v) -> str:
    """A number as the docs show it: whole floats without .0, others by repr()."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def allowed(f, hint: Callable = lambda f, v: "") -> str:
    m = f.metadata
    if m["choices"] is not None:
        return "one of " + ", ".join(num(c) for c in m["choices"])
    return f"{num(m['lo'])}{hint(f, m['lo'])} to {num(m['hi'])}{hint(f, m['hi'])}"


def first_line(doc: Optional[str]) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


# -- the C++ header -----------------------------------------------------------------------


def macro(group: str, what: str = "FIELDS") -> str:
    return f"CXL_{group[:-len('Params')].upper()}_{what}"


def render_header(P: ModuleType) -> str:
    out = [f"// GENERATED by `{COMMAND}` from {SOURCE}: do not edit; edit the dataclasses there and",
           "// rerun it (tests/test_schema_generated.py fails while this file differs from its output).",
           "//",
           "// Each group's fields as an X-macro list X(type, name, default, min, max), and its fields",
           "// with a list of allowed values as X(name, value, ...); params.hpp declares the structs",
           "// from them and params.cpp validates against them. The numbers",
           "// are written so they read back exactly: doubles by Python's repr(), integers in",
           "// decimal (ull where an int would not hold them). Units and meanings:",
           f"// {DOCS}.",
           "#pragma once", "", "#include <cstdint>", ""]
    for group, cls in P.GROUPS.items():
        rows = []
        for f in fields(cls):
            check_field(group, f)
            m = f.metadata
            rows.append(f"    X({cxx_type(f)}, {f.name}, {cxx_literal(f, f.default)}, {cxx_literal(f, m['lo'])}, "
                        f"{cxx_literal(f, m['hi'])})")
        out += ["// " + s for s in textwrap.wrap(f"{group}: {first_line(cls.__doc__)}", 100)]
        out += _continued([f"#define {macro(group)}(X)"] + rows)
        choices = [f"    X({f.name}, {', '.join(cxx_literal(f, c) for c in f.metadata['choices'])})"
                   for f in fields(cls) if f.metadata["choices"] is not None]
        out += _continued([f"#define {macro(group, 'CHOICES')}(X)"] + choices)
        out.append("")
    out.append("// Every group: X(struct, field list), in the order of simcxl.config.groups.GROUPS.")
    out += _continued(["#define CXL_PARAM_GROUPS(X)"] + [f"    X({g}, {macro(g)})" for g in P.GROUPS])
    return "\n".join(out) + "\n"


def _continued(lines: List[str]) -> List[str]:
    """A macro's lines with their continuation backslashes in one column."""
    width = max(len(s) for s in lines) + 1
    return [s.ljust(width) + "\\" for s in lines[:-1]] + [lines[-1]]


# -- the gem5 SimObject parameter sections -----------------------------------------------


def gem5_kind(f) -> str:
    if not is_int(f):
        return "Float"
    return "UInt64" if f.metadata.get("wide") else "Unsigned"


def gem5_doc(f) -> str:
    m = f.metadata
    return f"{m['doc']} ({m['unit'] + ', ' if m['unit'] else ''}{allowed(f)})"


def _string_lines(s: str, first: int, width: int = 100) -> List[str]:
    """s as adjacent Python string literals, the first of about `first` characters and the others of
    `width`, split after spaces."""
    parts, cur = [], ""
    for word in s.split(" "):
        piece = word if not cur else " " + word
        if cur and len(cur) + len(piece) > (width if parts else first):
            parts.append(cur + " ")
            cur = word
        else:
            cur += piece
    parts.append(cur)
    return [_dq(p) for p in parts]


def _dq(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_params_block(P: ModuleType, groups: Sequence[Tuple[str, str]]) -> List[str]:
    names = ", ".join(g for _, g in groups)
    out = [f"    {BEGIN} by `{COMMAND}` from {SOURCE}:",
           f"    # {names}. Edit the dataclasses there and rerun it, not these lines."]
    for prefix, group in groups:
        cls = P.GROUPS[group]
        out += ["    # " + s for s in textwrap.wrap(f"{prefix}_*: {group}. {first_line(cls.__doc__)}", 100)]
        for f in fields(cls):
            check_field(group, f)
            head = f"    {prefix}_{f.name} = Param.{gem5_kind(f)}("
            default = repr(f.default) if is_int(f) else repr(float(f.default))
            one = f"{head}{default}, {_dq(gem5_doc(f))})"
            if len(one) <= 120:
                out.append(one)
                continue
            lits = _string_lines(gem5_doc(f), 100 - len(default) - 2)
            lits[0] = f"{default}, {lits[0]}"
            out.append(head)
            out += [f"        {lit}" for lit in lits[:-1]]
            out.append(f"        {lits[-1]})")
    out.append(f"    {END}")
    return out


def render_simobject(P: ModuleType, text: str, path: str) -> str:
    """text with the lines between the markers replaced by the declarations of its groups."""
    _, groups = SIMOBJECTS[path]
    lines = text.split("\n")
    begin = [i for i, s in enumerate(lines) if s.strip().startswith(BEGIN)]
    end = [i for i, s in enumerate(lines) if s.strip() == END]
    if len(begin) != 1 or len(end) != 1 or end[0] < begin[0]:
        raise SchemaError(f"{path}: needs one '{BEGIN}' line and, after it, one '{END}' line in the "
                          "SimObject's class body")
    return "\n".join(lines[:begin[0]] + render_params_block(P, groups) + lines[end[0] + 1:])


# -- the parameter reference --------------------------------------------------------------


def places(P: ModuleType) -> Dict[str, List[str]]:
    """Where each group appears in a system description (dotted prefixes)."""
    out: Dict[str, List[str]] = {g: [] for g in P.GROUPS}
    name = {cls: g for g, cls in P.GROUPS.items()}
    out["HostParams"].append("host")
    out["DramParams"].append("local_dram")
    kinds = {"remote": "remote-numa", "cxl": "cxl-type3"}
    for key, subs in P.System._SUBS.items():
        for sub, cls in subs:
            out[name[cls]] += [f"{key}.{sub}", f"<{kinds[key]} window>.{sub}"]
    out["HomeParams"].append("home")
    for sub, cls in P.DEVICE_GROUPS:
        out[name[cls]].append(f"<device>.{sub}")
    out["NicParams"].append("nic")
    out["WindowRange"] = ["<window>"]
    return {g: list(dict.fromkeys(v)) for g, v in out.items()}


def _bytes_hint(f, v) -> str:
    if f.metadata["unit"] != "B" or not isinstance(v, int) or v < 1024 or v & (v - 1):
        return ""
    for unit, shift in (("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if v >= 1 << shift:
            return f" ({v >> shift} {unit})"
    return ""


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def render_docs(P: ModuleType) -> str:
    where = places(P)
    # The window's place in the address map is a group too, read by the bindings rather than a C++ list.
    groups = {**P.GROUPS, "WindowRange": P.WindowRange}
    out = [f"<!-- GENERATED by `{COMMAND}` from {SOURCE}: do not edit; edit the dataclasses there and",
           "     rerun it (tests/test_schema_generated.py fails while this file differs from its output). -->",
           "", "# Parameter reference", "",
           "Every parameter group of SimCXL, as the dataclasses in `simcxl/config/groups.py` define it. A",
           "parameter is named by its group's place in a system and its own name, e.g.",
           "`cxl.link.lanes`, `<device>.cache.mshrs` or `host.llc_bytes`: in a preset or topology",
           "file, with `--set`, and in sweeps. A value outside the allowed range or choices is",
           "rejected with a message naming it; rules between fields are in each group's",
           "`_check` (and `ext/cxlcore/config/params.cpp`). In a topology file a component's",
           "parameters are its type's groups (`simcxl topology types`). Byte sizes that are powers",
           "of two are also shown in KiB to PiB.", ""]
    out += ["| group | where it appears |", "|---|---|"]
    for g in groups:
        out.append(f"| [{g}](#{g.lower()}) | {', '.join(f'`{p}`' for p in where[g])} |")
    out.append("")
    for g, cls in groups.items():
        out += [f"## {g}", "", " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()), "",
                "Where: " + ", ".join(f"`{p}`" for p in where[g]) + ".", "",
                "| name | unit | default | allowed | meaning |", "|---|---|---|---|---|"]
        for f in fields(cls):
            check_field(g, f)
            m = f.metadata
            default = num(f.default) + _bytes_hint(f, f.default)
            out.append(f"| `{f.name}` | {m['unit']} | {default} | {allowed(f, _bytes_hint)} | {_cell(m['doc'])} |")
        out.append("")
    return "\n".join(out)


# -- driver ---------------------------------------------------------------------------------


def outputs(root: Path) -> Dict[str, str]:
    """Each generated file (path relative to root) and what it should hold."""
    P = load_params(root)
    out = {HEADER: render_header(P)}
    for path in SIMOBJECTS:
        out[path] = render_simobject(P, (root / path).read_text(), path)
    out[DOCS] = render_docs(P)
    return out


def drifted(root: Path) -> List[Tuple[str, str]]:
    """(path, unified diff) of each generated file whose text differs from the generator's."""
    bad = []
    for path, want in outputs(root).items():
        f = root / path
        have = f.read_text() if f.is_file() else ""
        if have != want:
            diff = "".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True), f"{path} (committed)",
                                                f"{path} (generated)", n=1))
            bad.append((path, diff))
    return bad


def main(argv: Optional[Sequence[str]] = None, write: Callable[[str], None] = print) -> int:
    ap = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each file that differs")
    ap.add_argument("--root", type=Path, help="repository root (default: found from the working directory)")
    args = ap.parse_args(argv)
    root = args.root.resolve() if args.root else find_root()
    try:
        if args.check:
            bad = drifted(root)
            for path, diff in bad:
                write(f"{path}: out of date with {SOURCE}; run `{COMMAND}`\n{_head(diff)}")
            return 1 if bad else 0
        for path, text in outputs(root).items():
            f = root / path
            if not f.is_file() or f.read_text() != text:
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text)
                write(f"wrote {path}")
    except SchemaError as e:
        write(f"schema_gen: {e}")
        return 2
    return 0


def _head(diff: str, lines: int = 30) -> str:
    d = diff.splitlines()
    return "\n".join(d[:lines] + ([f"... ({len(d) - lines} more diff lines)"] if len(d) > lines else []))


if __name__ == "__main__":
    sys.exit(main())
