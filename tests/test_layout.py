"""The layout of the package: its modules in layers (the table in
docs/reference/layout.md), no import from a lower layer to a higher one, no
import cycles, and no module so long that it hides what it is made of.

All read the source tree (REPO/simcxl) with ``ast``; nothing is imported.
An import inside a function counts like one at the top of the module: a
cycle or an upward import hidden in a function body is still one.
"""

from __future__ import annotations

import ast
import importlib.machinery
from pathlib import Path
import re
from typing import Dict, List, Optional, Set, Tuple

import pytest

import simcxl
from conftest import REPO

PACKAGE = REPO / "simcxl"
LIMIT = 650  # lines
# Modules over the limit when this test was written, with their line counts
# then: a ceiling that may only go down. Split one and drop it from here;
# never raise a number or add a module.
LONG: Dict[str, int] = {}

Graph = Dict[str, Dict[str, str]]  # module -> {module it imports: "file:line" of the first such import}


def _modules(root: Path) -> Dict[str, Path]:
    """Dotted name -> file, for every .py under the package folder ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(root: Path, extensions: Set[str] = frozenset()) -> Graph:
    """Which module of the package imports which, at module level or inside a
    function. ``extensions``: compiled modules (dotted names), which have no
    source here and import nothing of the package."""
    mods = _modules(root)
    known = set(mods) | set(extensions)
    graph: Graph = {}
    for name, path in mods.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = graph.setdefault(name, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    up = here.split(".")[:len(here.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                # "from P import n": the module P.n if there is one, else a name of P itself.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            else:
                continue
            for t in targets:
                while t not in known and "." in t:  # "import P.m.f" style: the module part
                    t = t.rpartition(".")[0]
                if t in mods and t != name:
                    edges.setdefault(t, f"{path.relative_to(root.parent)}:{node.lineno}")
    return graph


def cycles(graph: Graph) -> List[Tuple[List[str], List[str]]]:
    """(cycle, the rest of its group) for each strongly connected group of
    modules (Tarjan): a shortest cycle through the group's first module, as a
    list of modules with the first repeated at the end."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    groups: List[Set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    out = []
    for group in groups:  # a shortest way from the group's first module back to it
        start = min(group)
        paths: Dict[str, List[str]] = {start: [start]}
        frontier = [start]
        cycle = None
        while cycle is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w == start:
                        cycle = paths[v] + [start]
                        break
                    if w in group and w not in paths:
                        paths[w] = paths[v] + [w]
                        nxt.append(w)
                if cycle is not None:
                    break
            frontier = nxt
        out.append((cycle, sorted(group - set(cycle))))
    return out


def describe(graph: Graph, cycle: List[str], rest: List[str]) -> str:
    return " -> ".join(cycle) + " (" + ", ".join(graph[a][b] for a, b in zip(cycle, cycle[1:])) + ")" + \
        (f"; in the same knot: {', '.join(rest)}" if rest else "")


def _extensions() -> Set[str]:
    """The compiled modules of the installed package (the C++ core)."""
    folder = Path(simcxl.__file__).parent
    return {f"simcxl.{p.name.split('.')[0]}" for s in importlib.machinery.EXTENSION_SUFFIXES
            for p in folder.glob(f"*{s}")}


def test_no_import_cycles():
    ext = _extensions()
    assert "simcxl._core" in ext, f"the C++ core was not found in {Path(simcxl.__file__).parent}"
    graph = import_graph(PACKAGE, ext)
    assert "simcxl.engine.standalone" in graph["simcxl.cli.run"], "the graph misses an import (the scan is broken)"
    found = cycles(graph)
    assert not found, "import cycles in simcxl (move what both sides need into a module below them):\n" + \
        "\n".join(describe(graph, *c) for c in found)


def _write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root / "pkg"


@pytest.mark.parametrize("files, cycle", [
    ({"pkg/__init__.py": "", "pkg/a.py": "from . import b\n", "pkg/b.py": "from .a import x\n"},
     ["pkg.a", "pkg.b", "pkg.a"]),
    # hidden in a function, and through a subpackage's "from .. import"
    ({"pkg/__init__.py": "", "pkg/a.py": "def f():\n    from .sub import c\n", "pkg/sub/__init__.py": "",
      "pkg/sub/c.py": "def g():\n    from .. import a\n"}, ["pkg.a", "pkg.sub.c", "pkg.a"]),
    ({"pkg/__init__.py": "", "pkg/a.py": "import pkg.b\n", "pkg/b.py": "import pkg.c.d\n",
      "pkg/c/__init__.py": "", "pkg/c/d.py": "from pkg import a\n"}, ["pkg.a", "pkg.b", "pkg.c.d", "pkg.a"]),
    # a compiled module and a name of the package are no edges to modules that import them
    ({"pkg/__init__.py": "from .a import f\n", "pkg/a.py": "from . import _ext\nfrom . import b\n",
      "pkg/b.py": "from . import _ext\n"}, None),
])
def test_the_scan_finds_cycles(tmp_path, files, cycle):
    """The checker itself, on small packages."""
    graph = import_graph(_write(tmp_path, files), {"pkg._ext"})
    found = cycles(graph)
    assert [c for c, _ in found] == ([cycle] if cycle else []), found
    if cycle:
        assert describe(graph, *found[0]).startswith(" -> ".join(cycle) + " (pkg/")


LAYOUT_PAGE = REPO / "docs" / "reference" / "layout.md"
LAYERS_HEADING = "## Layers of the Python package"


def layer_table(text: str) -> Dict[str, int]:
    """Package -> layer number, from the table under LAYERS_HEADING: rows ``| N | `pkg`, `pkg` | what |``."""
    _, found, rest = text.partition(LAYERS_HEADING)
    assert found, f"{LAYOUT_PAGE.name}: no section {LAYERS_HEADING!r}"
    table: Dict[str, int] = {}
    for line in rest.split("\n## ")[0].splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
        if m:
            for pkg in re.findall(r"`([\w.]+)`", m.group(2)):
                assert pkg not in table, f"{pkg} is in two layers"
                table[pkg] = int(m.group(1))
    return table


def layer_of(module: str, table: Dict[str, int]) -> Optional[str]:
    """The package of the table a module belongs to: the longest that is the module or holds it. The
    top package (no dot) holds only its ``__init__`` (the public API): a module beside it is in no layer."""
    owners = [p for p in table if module == p or ("." in p and module.startswith(p + "."))]
    return max(owners, key=len) if owners else None


def layer_breaches(graph: Graph, table: Dict[str, int]) -> List[str]:
    """Every module outside the table, and every import that does not run down the layers: to a
    higher layer, or to another package of the same layer (packages of one layer stand side by side)."""
    out = []
    for a in sorted(graph):
        la = layer_of(a, table)
        if la is None:
            out.append(f"{a}: in no layer (move it into a layer's package, or add the package to the table)")
            continue
        for b, where in sorted(graph[a].items()):
            lb = layer_of(b, table)
            if lb is None or lb == la:
                continue
            if table[lb] > table[la]:
                out.append(f"{a} (layer {table[la]}) imports {b} (layer {table[lb]}, higher) at {where}")
            elif table[lb] == table[la]:
                out.append(f"{a} imports {b} at {where}: {la} and {lb} share layer {table[la]}; neither may "
                           "import the other")
    return out


def test_layers():
    table = layer_table(LAYOUT_PAGE.read_text())
    assert {"simcxl", "simcxl._core", "simcxl.config", "simcxl.cli"} <= set(table), table
    graph = import_graph(PACKAGE, _extensions())
    assert "simcxl.config.params" in graph["simcxl.engine.standalone"], "the graph misses an import"
    breaches = layer_breaches(graph, table)
    assert not breaches, f"imports against the layers of {LAYOUT_PAGE.relative_to(REPO)}:\n" + "\n".join(breaches)


def test_layer_table_names_every_package():
    """Each package of the table but the compiled core is a folder of the package, and each folder is in a layer."""
    table = layer_table(LAYOUT_PAGE.read_text())
    folders = {".".join(p.parent.relative_to(REPO).parts) for p in PACKAGE.rglob("__init__.py")}
    assert set(table) - folders == {"simcxl._core"}, f"not folders of {PACKAGE.name}: {sorted(set(table) - folders)}"
    assert not [f for f in folders if layer_of(f, table) is None], f"folders in no layer: {sorted(folders)}"


LAYERED = {"pkg/low/__init__.py": "", "pkg/low/a.py": "", "pkg/mid/__init__.py": "",
           "pkg/mid/b.py": "from ..low import a\n", "pkg/side/__init__.py": "", "pkg/side/c.py": "",
           "pkg/__init__.py": "from .mid import b\n"}
TABLE = "## Layers of the Python package\n| layer | packages |\n|---|---|\n| 1 | `pkg.low` |\n" \
        "| 2 | `pkg.mid`, `pkg.side` |\n| 3 | `pkg` |\n\n## Next\n| 9 | `pkg.low` |\n"


@pytest.mark.parametrize("extra, breach", [
    ({}, None),
    ({"pkg/low/a.py": "def f():\n    from ..mid import b\n"}, "pkg.low.a (layer 1) imports pkg.mid.b (layer 2, higher)"),
    ({"pkg/mid/b.py": "from ..side import c\n"}, "pkg.mid.b imports pkg.side.c at pkg/mid/b.py:1: pkg.mid and "
                                                  "pkg.side share layer 2"),
    ({"pkg/low/a.py": "import pkg\n"}, "pkg.low.a (layer 1) imports pkg (layer 3, higher)"),
    ({"pkg/flat.py": ""}, "pkg.flat: in no layer"),
])
def test_the_layer_check(tmp_path, extra, breach):
    """The layer check itself, on a small package: down is allowed, up and sideways are not."""
    table = layer_table(TABLE)
    assert table == {"pkg.low": 1, "pkg.mid": 2, "pkg.side": 2, "pkg": 3}
    found = layer_breaches(import_graph(_write(tmp_path, {**LAYERED, **extra})), table)
    assert len(found) == (1 if breach else 0) and (not breach or found[0].startswith(breach)), found


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_is_too_long():
    counts = {str(p.relative_to(REPO)): _lines(p) for p in sorted(PACKAGE.rglob("*.py"))}
    assert "simcxl/cli/__init__.py" in counts
    too_long = [f"{f}: {n} lines, at most {LONG[f]} (its ceiling)" if f in LONG else f"{f}: {n} lines, at most {LIMIT}"
                for f, n in counts.items() if n > LONG.get(f, LIMIT)]
    assert not too_long, "split these modules (a module of its own for each part):\n" + "\n".join(too_long)


def test_long_module_exceptions_are_few_and_real():
    assert not [f for f in LONG if f.startswith("simcxl/cli/")], "the command modules are never exceptions"
    for f, ceiling in LONG.items():
        assert (REPO / f).is_file(), f"{f} is gone: drop it from LONG"
        assert _lines(REPO / f) > LIMIT, f"{f} is {_lines(REPO / f)} lines now, within {LIMIT}: drop it from LONG"


CORE = REPO / "ext"
CPP_LIMIT = 600  # lines of a C++ source or header of the core or the bindings
# C++ files over the limit when it was set, with their line counts then: a
# ceiling that may only go down, as LONG's.
CPP_LONG: dict = {}


def _cpp_files():
    return sorted(p for p in CORE.rglob("*") if p.suffix in (".cpp", ".hpp") and "build" not in p.parts)


def test_no_cpp_file_is_too_long():
    counts = {str(p.relative_to(REPO)): _lines(p) for p in _cpp_files()}
    # the files split by responsibility when the limit was set stay split
    for f in ("ext/cxlcore/workloads/memory.cpp", "ext/bindings/module.cpp", "ext/bindings/readers.cpp",
              "ext/cxlcore/coherence/home_txn.cpp"):
        assert f in counts
    too_long = [f"{f}: {n} lines, at most {CPP_LONG.get(f, CPP_LIMIT)}" for f, n in counts.items()
                if n > CPP_LONG.get(f, CPP_LIMIT)]
    assert not too_long, "split these files by responsibility:\n" + "\n".join(too_long)


def test_long_cpp_exceptions_are_real():
    for f in CPP_LONG:
        assert (REPO / f).is_file(), f"{f} is gone: drop it from CPP_LONG"
        assert _lines(REPO / f) > CPP_LIMIT, f"{f} is {_lines(REPO / f)} lines now, within {CPP_LIMIT}: drop it"
