"""Testbeds: folders of real-hardware measurements (DESIGN.md section 3).

A testbed is ``testbed.toml`` (platform, memories and their kinds, sources)
plus optional CSV files: ``lat_mem_rd.csv`` (memory, working_set_bytes,
latency_ns), ``stream.csv`` (memory, kernel, threads, bandwidth_gbps; STREAM's
own byte counting; optional ``stores``: write-allocate, the default, or
non-temporal when the measured binary's stores wrote whole lines without
reading them) and ``loaded_latency.csv`` (memory, read_fraction, threads,
bandwidth_gbps, latency_ns). Loading checks everything and reports every
problem with its file, line and column.
"""

from __future__ import annotations

import csv
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .params import KINDS, STORES, ParamError

KERNELS = ("copy", "scale", "add", "triad")

# Columns of each file: name -> (required, type)
FILES = {
    "lat_mem_rd": ("lat_mem_rd.csv", {"memory": (True, str), "working_set_bytes": (True, int),
                                      "latency_ns": (True, float)}),
    "stream": ("stream.csv", {"memory": (True, str), "kernel": (True, str), "threads": (False, int),
                              "bandwidth_gbps": (True, float), "stores": (False, str)}),
    "loaded_latency": ("loaded_latency.csv", {"memory": (True, str), "read_fraction": (True, float),
                                              "threads": (True, int), "bandwidth_gbps": (True, float),
                                              "latency_ns": (True, float)}),
}


class TestbedError(ParamError):
    """A malformed testbed; the message lists every problem, one per line."""
    __test__ = False  # not a pytest test class


@dataclass
class Memory:
    name: str
    kind: str
    description: str = ""
    base: Optional[str] = None          # preset to start from
    link: Dict[str, Any] = field(default_factory=dict)
    params: Dict[str, Any] = field(default_factory=dict)  # dotted overrides


@dataclass
class Point:
    """One measured point of an experiment."""
    memory: str
    experiment: str      # lat_mem_rd, stream, loaded_latency
    x: Any               # working set, kernel name, or (threads, read_fraction)
    measured: float
    threads: Optional[int] = None
    where: str = ""      # file:line, for messages
    stores: str = "write-allocate"  # STREAM: how the measured binary's stores reached memory


@dataclass
class Testbed:
    __test__ = False
    name: str
    folder: Path
    description: str
    memories: Dict[str, Memory]
    points: List[Point]
    citation: str = ""
    raw: Dict[str, Any] = field(default_factory=dict)

    def points_of(self, memory: str, experiment: Optional[str] = None) -> List[Point]:
        return [p for p in self.points if p.memory == memory and (experiment is None or p.experiment == experiment)]

    def local_memory(self) -> Optional[str]:
        for m in self.memories.values():
            if m.kind == "local-dram":
                return m.name
        return None


def _citation(text: str) -> str:
    head = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        head.append(line[1:].strip())
    return " ".join(h for h in head[1:] if h)


def load(folder) -> Testbed:
    folder = Path(folder)
    problems: List[str] = []
    toml_path = folder / "testbed.toml"
    if not folder.is_dir():
        raise TestbedError(f"{folder}: not a folder")
    if not toml_path.exists():
        raise TestbedError(f"{toml_path}: missing (every testbed needs testbed.toml)")
    text = toml_path.read_text()
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TestbedError(f"{toml_path}: {e}") from None
    memories: Dict[str, Memory] = {}
    mems = raw.get("memories")
    if not isinstance(mems, dict) or not mems:
        problems.append(f"{toml_path}: no [memories.NAME] tables; each memory needs one with a kind")
        mems = {}
    for name, m in mems.items():
        line = _line_of(text, f"[memories.{name}]")
        loc = f"{toml_path}:{line}" if line else str(toml_path)
        if not isinstance(m, dict):
            problems.append(f"{loc}: memories.{name} must be a table")
            continue
        kind = m.get("kind")
        if kind not in KINDS:
            problems.append(f"{loc}: memories.{name}.kind = {kind!r} is not a memory kind; allowed: {', '.join(KINDS)}")
            continue
        link = m.get("link", {})
        if kind == "cxl-type3" and link:
            for k in link:
                if k not in ("gen", "lanes"):
                    problems.append(f"{loc}: memories.{name}.link.{k} is not allowed; allowed: gen, lanes")
        params = m.get("params", {})
        if not isinstance(params, dict):
            problems.append(f"{loc}: memories.{name}.params must be a table of dotted parameter names")
            params = {}
        memories[name] = Memory(name, kind, str(m.get("description", "")), m.get("base"), dict(link), dict(params))

    points: List[Point] = []
    for key, (fname, cols) in FILES.items():
        files = raw.get("files", {})
        path = folder / (files.get(key, {}).get("path", fname) if isinstance(files.get(key), dict) else fname)
        if path.exists():
            points += _read_csv(path, key, cols, memories, problems)
    if not problems and not points:
        problems.append(f"{folder}: no measurements (lat_mem_rd.csv, stream.csv or loaded_latency.csv)")
    if problems:
        raise TestbedError("testbed " + str(folder) + " has problems:\n" + "\n".join(problems))
    return Testbed(str(raw.get("name", folder.name)), folder, str(raw.get("description", "")), memories, points,
                   _citation(text), raw)


def _line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(needle):
            return i
    return 0


def _read_csv(path: Path, key: str, cols, memories: Dict[str, Memory], problems: List[str]) -> List[Point]:
    out: List[Point] = []
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        problems.append(f"{path}:1: empty file; expected a header: {', '.join(cols)}")
        return out
    header = [h.strip() for h in rows[0]]
    missing = [c for c, (req, _) in cols.items() if req and c not in header]
    if missing:
        problems.append(f"{path}:1: missing column(s) {', '.join(missing)}; expected: {', '.join(cols)}")
        return out
    unknown = [h for h in header if h not in cols]
    if unknown:
        problems.append(f"{path}:1 column {header.index(unknown[0]) + 1}: unknown column {unknown[0]!r}; "
                        f"expected: {', '.join(cols)}")
    seen: Dict[Tuple, int] = {}
    for n, row in enumerate(rows[1:], 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            problems.append(f"{path}:{n}: {len(row)} fields, the header has {len(header)}")
            continue
        rec: Dict[str, Any] = {}
        ok = True
        for ci, (h, v) in enumerate(zip(header, row), 1):
            if h not in cols:
                continue
            req, typ = cols[h]
            v = v.strip()
            if v == "":
                if req:
                    problems.append(f"{path}:{n} column {ci}: {h} is empty")
                    ok = False
                rec[h] = None
                continue
            try:
                val = typ(float(v)) if typ is int else typ(v)
                if typ is int and float(v) != int(float(v)):
                    raise ValueError
            except ValueError:
                problems.append(f"{path}:{n} column {ci}: {h} = {v!r} is not a{'n integer' if typ is int else ' number'}")
                ok = False
                continue
            if typ is float and (math.isnan(val) or val <= 0):
                problems.append(f"{path}:{n} column {ci}: {h} = {v} must be positive")
                ok = False
            if typ is int and val <= 0:
                problems.append(f"{path}:{n} column {ci}: {h} = {v} must be a positive integer")
                ok = False
            rec[h] = val
        if not ok:
            continue
        if rec["memory"] not in memories:
            problems.append(f"{path}:{n} column {header.index('memory') + 1}: memory {rec['memory']!r} is not "
                            f"declared in testbed.toml; declared: {', '.join(memories) or 'none'}")
            continue
        if key == "lat_mem_rd":
            x: Any = rec["working_set_bytes"]
            measured = rec["latency_ns"]
        elif key == "stream":
            if rec["kernel"] not in KERNELS:
                problems.append(f"{path}:{n} column {header.index('kernel') + 1}: kernel {rec['kernel']!r} is not "
                                f"allowed; allowed: {', '.join(KERNELS)}")
                continue
            if rec.get("stores") not in (None, *STORES):
                problems.append(f"{path}:{n} column {header.index('stores') + 1}: stores {rec['stores']!r} is not "
                                f"allowed; allowed: {', '.join(STORES)}")
                continue
            x = rec["kernel"]
            measured = rec["bandwidth_gbps"]
        else:
            if not 0 <= rec["read_fraction"] <= 1:
                problems.append(f"{path}:{n} column {header.index('read_fraction') + 1}: read_fraction = "
                                f"{rec['read_fraction']} is out of range; allowed: 0 to 1")
                continue
            x = (rec["threads"], rec["read_fraction"])
            measured = rec["latency_ns"]
        dup = (rec["memory"], x, rec.get("threads"), rec.get("stores") or STORES[0])
        if dup in seen:
            problems.append(f"{path}:{n}: duplicate point ({rec['memory']}, {x}); first at line {seen[dup]}")
            continue
        seen[dup] = n
        p = Point(rec["memory"], key, x, measured, rec.get("threads"), f"{path.name}:{n}",
                  rec.get("stores") or STORES[0])
        if key == "loaded_latency":
            p.x = {"threads": rec["threads"], "read_fraction": rec["read_fraction"],
                   "bandwidth_gbps": rec["bandwidth_gbps"]}
        out.append(p)
    return out
