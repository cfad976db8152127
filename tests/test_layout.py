"""The layout of the package: no import cycles between its modules, and no
module so long that it hides what it is made of.

Both read the source tree (REPO/simcxl) with ``ast``; nothing is imported.
An import inside a function counts like one at the top of the module: a
cycle hidden in a function body is still a cycle.
"""

from __future__ import annotations

import ast
import importlib.machinery
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

import simcxl
from conftest import REPO

PACKAGE = REPO / "simcxl"
LIMIT = 650  # lines
# Modules over the limit when this test was written, with their line counts
# then: a ceiling that may only go down. Split one and drop it from here;
# never raise a number or add a module.
LONG = {
    "simcxl/params.py": 1018,
    "simcxl/calibrate.py": 890,
}

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
    assert "simcxl.engine" in graph["simcxl.cli.run"], "the graph misses an import (the scan is broken)"
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
CPP_LONG = {
    "ext/cxlcore/coherence/home_agent.cpp": 769,
}


def _cpp_files():
    return sorted(p for p in CORE.rglob("*") if p.suffix in (".cpp", ".hpp") and "build" not in p.parts)


def test_no_cpp_file_is_too_long():
    counts = {str(p.relative_to(REPO)): _lines(p) for p in _cpp_files()}
    # the files split by responsibility when the limit was set stay split
    for f in ("ext/cxlcore/workloads/memory.cpp", "ext/bindings/module.cpp", "ext/bindings/readers.cpp"):
        assert f in counts
    too_long = [f"{f}: {n} lines, at most {CPP_LONG.get(f, CPP_LIMIT)}" for f, n in counts.items()
                if n > CPP_LONG.get(f, CPP_LIMIT)]
    assert not too_long, "split these files by responsibility:\n" + "\n".join(too_long)


def test_long_cpp_exceptions_are_real():
    for f in CPP_LONG:
        assert (REPO / f).is_file(), f"{f} is gone: drop it from CPP_LONG"
        assert _lines(REPO / f) > CPP_LIMIT, f"{f} is {_lines(REPO / f)} lines now, within {CPP_LIMIT}: drop it"
