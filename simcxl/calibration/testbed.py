"""Testbeds: folders of real-hardware measurements (DESIGN.md section 3).

A testbed is ``testbed.toml`` (platform, memories and their kinds, sources)
plus optional CSV files: ``lat_mem_rd.csv`` (memory, working_set_bytes,
latency_ns), ``stream.csv`` (memory, kernel, threads, bandwidth_gbps; STREAM's
own byte counting; optional ``stores``: write-allocate, the default, or
non-temporal when the measured binary's stores wrote whole lines without
reading them), ``loaded_latency.csv`` (memory, threads, read_fraction or
an MLC ``mode``, bandwidth_gbps and/or latency_ns; optional ``stores`` and
``pattern``): each row is a loaded-bandwidth point, a loaded-latency point or
both) and ``idle_latency.csv`` (memory, latency_ns, optional ``tool``: one
dependent load at a time on an idle memory, as MLC's idle latency).
A memory may declare the points its fit uses
(``fit``, see FIT_KEYS); the others are validation only. A cxl-type3 memory
may be a topology file in the testbed's folder (``topology``, switches and
all) instead of a preset, and may take the values fitted on another memory
(``knobs_from``) instead of fitting its own. Loading checks everything and
reports every problem with its file, line and column.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ..engine import mlc
from ..config.files import read_text
from ..config.groups import STORES, LinkParams
from ..config.params import KINDS, ParamError, shown

KERNELS = ("copy", "scale", "add", "triad")
# What a memory's `link` table may set, and to what (groups.LinkParams).
LINK_CHOICES = {f.name: f.metadata["choices"] for f in fields(LinkParams) if f.name in ("gen", "lanes")}
# Ranges of the measured columns that are not "any positive number".
LIMITS = {"working_set_bytes": (64, 1 << 40), "threads": (1, 1024), "read_fraction": (0, 1)}

# Columns of each file: name -> (required, type)
FILES = {
    "lat_mem_rd": ("lat_mem_rd.csv", {"memory": (True, str), "working_set_bytes": (True, int),
                                      "latency_ns": (True, float)}),
    "stream": ("stream.csv", {"memory": (True, str), "kernel": (True, str), "threads": (False, int),
                              "bandwidth_gbps": (True, float), "stores": (False, str)}),
    "loaded_latency": ("loaded_latency.csv", {"memory": (True, str), "read_fraction": (False, float),
                                              "threads": (True, int), "bandwidth_gbps": (False, float),
                                              "latency_ns": (False, float), "mode": (False, str),
                                              "stores": (False, str), "pattern": (False, str)}),
    "idle_latency": ("idle_latency.csv", {"memory": (True, str), "tool": (False, str), "latency_ns": (True, float)}),
}
IDLE_TOOL = "idle"  # an idle_latency row's tool when it names none
# A loaded_latency.csv row gives a point of each experiment whose column it fills.
LOADED = {"loaded_latency": "latency_ns", "loaded_bandwidth": "bandwidth_gbps"}
# Loaded traffic's stores when a row names neither a mode nor stores: the engine's default.
LOADED_STORES = "non-temporal"
PATTERNS = ("random", "sequential")


# What a memory's `fit` table may name, per experiment: the one point its knobs
# of that role fit, or false for none. lat_mem_rd, loaded_latency and
# idle_latency all fit the latency knobs, stream and loaded_bandwidth the
# bandwidth knobs, so a memory names at most one of each group.
FIT_KEYS = {
    "lat_mem_rd": "a measured working_set_bytes",
    "stream": 'a kernel ("copy"), or a table { kernel = "copy", threads = 16, stores = "non-temporal" }',
    "loaded_latency": "a table { threads = 4, read_fraction = 1.0 } (and stores, pattern or mode to name one)",
    "loaded_bandwidth": "a table { threads = 16, read_fraction = 0.75 } (and stores, pattern or mode to name one)",
    "idle_latency": 'a tool of idle_latency.csv ("mlc")',
}
EXCLUSIVE = ((("lat_mem_rd", "loaded_latency", "idle_latency"), "latency"), (("stream", "loaded_bandwidth"), "bandwidth"))


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
    fit: Dict[str, Optional["Point"]] = field(default_factory=dict)  # declared fit points (None: none)
    topology: Optional[Path] = None     # a topology file instead of a preset (cxl-type3)
    knobs_from: Optional[str] = None    # the memory whose fitted values it takes, fitting none


@dataclass
class Point:
    """One measured point of an experiment."""
    memory: str
    experiment: str      # lat_mem_rd, stream, loaded_latency, loaded_bandwidth
    x: Any               # working set, kernel name, or the loaded traffic (threads, read_fraction, stores, ...)
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
        raise TestbedError(f"{folder}: not a folder; allowed: a testbed folder holding testbed.toml, "
                           "e.g. calibration/testbeds/spr-cxl-dmsim")
    if not toml_path.exists():
        raise TestbedError(f"{toml_path}: missing (every testbed needs testbed.toml); add one, as "
                           "docs/tutorials/calibration.md shows")
    try:
        text = read_text(toml_path)
    except ParamError as e:
        raise TestbedError(str(e)) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TestbedError(f"{toml_path}: {e}") from None
    except RecursionError:
        raise TestbedError(f"{toml_path}: nested too deeply to be a testbed") from None
    memories: Dict[str, Memory] = {}
    declared_fit: Dict[str, Tuple[Dict[str, Any], int]] = {}
    mems = raw.get("memories")
    if not isinstance(mems, dict) or not mems:
        problems.append(f"{toml_path}: no [memories.NAME] tables; each memory needs one with a kind")
        mems = {}
    for name, m in mems.items():
        line = _line_of(text, f"[memories.{name}]")
        loc = f"{toml_path}:{line}" if line else str(toml_path)
        if not isinstance(m, dict):
            problems.append(f"{loc}: memories.{shown(name)} must be a table")
            continue
        kind = m.get("kind")
        if kind not in KINDS:
            problems.append(f"{loc}: memories.{shown(name)}.kind = {kind!r} is not a memory kind; allowed: {', '.join(KINDS)}")
            continue
        link = m.get("link", {})
        if not isinstance(link, dict):
            problems.append(f"{loc}: memories.{shown(name)}.link must be a table; allowed keys: gen, lanes")
            link = {}
        if kind == "cxl-type3" and link:
            for k in link:
                if k not in LINK_CHOICES:
                    problems.append(f"{loc}: memories.{shown(name)}.link.{k} is not allowed; allowed: gen, lanes")
                elif link[k] not in LINK_CHOICES[k] or isinstance(link[k], bool):
                    problems.append(f"{loc}: memories.{shown(name)}.link.{k} = {link[k]!r} is not allowed; allowed values: "
                                    f"{', '.join(map(str, LINK_CHOICES[k]))}")
        if not isinstance(m.get("base", ""), str):
            problems.append(f"{loc}: memories.{shown(name)}.base = {m['base']!r} is not allowed; allowed: a preset name "
                            "or preset file")
        params = m.get("params", {})
        if not isinstance(params, dict):
            problems.append(f"{loc}: memories.{shown(name)}.params must be a table of dotted parameter names")
            params = {}
        topo = _topology_of(folder, name, m, kind, loc, problems)
        memories[name] = Memory(name, kind, str(m.get("description", "")), m.get("base"), dict(link), dict(params),
                                topology=topo)
        if "knobs_from" in m:
            memories[name].knobs_from = m["knobs_from"]
        fit = m.get("fit", {})
        if not isinstance(fit, dict):
            problems.append(f"{loc}: memories.{shown(name)}.fit must be a table; keys: {', '.join(FIT_KEYS)}")
            fit = {}
        declared_fit[name] = (fit, _line_of(text, "fit", after=line) or line)

    points: List[Point] = []
    files = raw.get("files", {})
    if not isinstance(files, dict):
        problems.append(f"{toml_path}: files must be a table; allowed keys: {', '.join(FILES)}")
        files = {}
    for key, (fname, cols) in FILES.items():
        path = files.get(key, {}).get("path", fname) if isinstance(files.get(key), dict) else fname
        if not isinstance(path, str):
            problems.append(f"{toml_path}: files.{key}.path = {path!r} is not allowed; allowed: a file name")
            continue
        path = folder / path
        if path.exists():
            points += _read_csv(path, key, cols, memories, problems)
    if not problems and not points:
        problems.append(f"{folder}: no measurements ({', '.join(f for f, _ in FILES.values())})")
    _check_knobs_from(memories, declared_fit, toml_path, text, problems)
    for name, (fit, line) in declared_fit.items():
        memories[name].fit = _resolve_fit(name, fit, [p for p in points if p.memory == name],
                                          f"{toml_path}:{line}", problems)
    if problems:
        raise TestbedError("testbed " + str(folder) + " has problems:\n" + "\n".join(problems))
    return Testbed(str(raw.get("name", folder.name)), folder, str(raw.get("description", "")), memories, points,
                   _citation(text), raw)


def _topology_of(folder: Path, name: str, m: Dict[str, Any], kind: str, loc: str,
                 problems: List[str]) -> Optional[Path]:
    """A memory's topology file (in the testbed's folder), or None; its problems noted."""
    if "topology" not in m:
        return None
    where = f"{loc}: memories.{shown(name)}.topology = {m['topology']!r}"
    if kind != "cxl-type3":
        problems.append(f"{where} is not allowed for a {kind} memory; allowed: cxl-type3 memories only")
    elif not isinstance(m["topology"], str) or not (folder / m["topology"]).is_file():
        problems.append(f"{where} is not a file of the testbed's folder; allowed: a topology file's name")
    elif set(m) & {"base", "link"}:
        problems.append(f"{where} is not allowed with {' or '.join(sorted(set(m) & {'base', 'link'}))}: the topology "
                        "file gives the whole system; set its parameters there or in params")
    else:
        return folder / m["topology"]
    return None


def _check_knobs_from(memories: Dict[str, Memory], declared_fit: Dict[str, Tuple[Dict[str, Any], int]],
                      toml_path: Path, text: str, problems: List[str]) -> None:
    """A memory's knobs_from names another memory of the testbed, which fits its own, and it
    declares no fit of its own."""
    for name, mem in memories.items():
        src = mem.knobs_from
        if src is None:
            continue
        line = _line_of(text, "knobs_from", after=_line_of(text, f"[memories.{name}]"))
        where = f"{toml_path}:{line}: memories.{shown(name)}.knobs_from = {src!r}"
        others = [n for n, m in memories.items() if n != name and m.knobs_from is None and m.kind == mem.kind]
        if src not in others:
            problems.append(f"{where} is not allowed; allowed: a {mem.kind} memory of this testbed that fits its own "
                            f"({', '.join(others) or 'none'})")
        elif declared_fit.get(name, ({}, 0))[0]:
            problems.append(f"{where}: a memory that takes another's values fits nothing itself; remove its fit")


def _line_of(text: str, needle: str, after: int = 0) -> int:
    """The first line from `after` on that starts with `needle`, within the
    table that line `after` opens."""
    for i, line in enumerate(text.splitlines(), 1):
        if i <= after:
            continue
        if after and line.strip().startswith("["):
            return 0
        if line.strip().startswith(needle):
            return i
    return 0


def describe(experiment: str, x: Any, threads: Optional[int] = None, stores: Optional[str] = None) -> str:
    """A point's x for people: a STREAM kernel with its threads and its stores
    when they are not the default."""
    if experiment == "stream":
        return " ".join([str(x)] + ([f"{threads} threads"] if threads else [])
                        + ([stores] if stores and stores != STORES[0] else []))
    if isinstance(x, dict):
        return " ".join([f"threads={x['threads']}"] + ([f"mode={x['mode']}"] if x.get("mode") else [])
                        + [f"read_fraction={x['read_fraction']:g}"]
                        + [f"{k}={x[k]}" for k in ("stores", "pattern") if k in x])
    return str(x)


def _resolve_fit(name: str, fit: Dict[str, Any], points: List["Point"], loc: str,
                 problems: List[str]) -> Dict[str, Optional["Point"]]:
    """The points a memory's `fit` table names, by experiment (None: fit none)."""
    out: Dict[str, Optional[Point]] = {}
    for key, want in fit.items():
        where = f"{loc}: memories.{shown(name)}.fit.{key}"
        if key not in FIT_KEYS:
            problems.append(f"{where} is not allowed; allowed: {', '.join(FIT_KEYS)}")
            continue
        if want is False:
            out[key] = None
            continue
        cands = [p for p in points if p.experiment == key]
        if key in ("lat_mem_rd", "idle_latency"):
            typ = int if key == "lat_mem_rd" else str
            if isinstance(want, bool) or not isinstance(want, typ):
                problems.append(f"{where} = {want!r} must be {FIT_KEYS[key]} or false")
                continue
            match = [p for p in cands if p.x == want]
        elif key == "stream":
            want = {"kernel": want} if isinstance(want, str) else want
            if not isinstance(want, dict) or "kernel" not in want or set(want) - {"kernel", "threads", "stores"}:
                problems.append(f"{where} = {fit[key]!r} must be {FIT_KEYS[key]} or false")
                continue
            match = [p for p in cands if p.x == want["kernel"] and p.threads == want.get("threads", p.threads)
                     and p.stores == want.get("stores", p.stores)]
        else:
            named = {"threads", "read_fraction", "stores", "pattern", "mode"}
            if not isinstance(want, dict) or not {"threads"} <= set(want) <= named or \
                    not ({"read_fraction", "mode"} & set(want)):
                problems.append(f"{where} = {want!r} must be {FIT_KEYS[key]} or false")
                continue
            match = [p for p in cands if all(p.x.get(k) == v for k, v in want.items())]
        if len(match) != 1:
            measured = ", ".join(sorted({describe(p.experiment, p.x, p.threads, p.stores) for p in cands})) or "none"
            problems.append(f"{where} = {fit[key]!r} matches " +
                            (f"no point of {FILES[key][0]} for {name}; measured: {measured}" if not match else
                             f"{len(match)} points ({', '.join(p.where for p in match)}); add threads or stores "
                             "to name one"))
            continue
        out[key] = match[0]
    for keys, role in EXCLUSIVE:
        named = [k for k in keys if out.get(k)]
        if len(named) > 1:
            problems.append(f"{loc}: memories.{shown(name)}.fit names both {named[0]} and {named[1]}; both fit the "
                            f"{role} knobs, which take one point: set the other to false")
    return out


def _read_csv(path: Path, key: str, cols, memories: Dict[str, Memory], problems: List[str]) -> List[Point]:
    out: List[Point] = []
    try:
        reader = csv.reader(io.StringIO(read_text(path), newline=""))
        rows = list(reader)
    except ParamError as e:
        problems.append(str(e))
        return out
    except csv.Error as e:  # a field past the csv module's limit, say
        problems.append(f"{path}:{reader.line_num}: {e}")
        return out
    if not rows:
        problems.append(f"{path}:1: empty file; expected a header: {', '.join(cols)}")
        return out
    header = [h.strip() for h in rows[0]]
    missing = [c for c, (req, _) in cols.items() if req and c not in header]
    if missing:
        problems.append(f"{path}:1: missing column(s) {', '.join(missing)}; expected: {', '.join(cols)}")
        return out
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        problems.append(f"{path}:1: column {twice[0]!r} appears twice; expected each of {', '.join(cols)} once")
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
            except (ValueError, OverflowError):  # int('inf') overflows
                problems.append(f"{path}:{n} column {ci}: {h} = {v!r} is not a{'n integer' if typ is int else ' number'}")
                ok = False
                continue
            if h in LIMITS:
                lo, hi = LIMITS[h]
                if not lo <= val <= hi:  # NaN too
                    problems.append(f"{path}:{n} column {ci}: {h} = {v} is out of range; allowed: {lo} to {hi}")
                    ok = False
            elif typ is float and not (0 < val < math.inf):
                problems.append(f"{path}:{n} column {ci}: {h} = {v} must be positive and finite")
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
        elif key == "idle_latency":
            x = rec.get("tool") or IDLE_TOOL
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
            traffic = _loaded_traffic(rec, header, f"{path}:{n}", problems)
            if traffic is None:
                continue
            for exp, col in LOADED.items():
                if rec.get(col) is None:
                    continue
                dup = (rec["memory"], exp, tuple(sorted(traffic.items())))
                if dup in seen:
                    problems.append(f"{path}:{n}: duplicate point ({rec['memory']}, {describe(exp, traffic)}); "
                                    f"first at line {seen[dup]}")
                    continue
                seen[dup] = n
                out.append(Point(rec["memory"], exp, dict(traffic), rec[col], rec["threads"], f"{path.name}:{n}",
                                 traffic["stores"]))
            continue
        dup = (rec["memory"], x, rec.get("threads"), rec.get("stores") or STORES[0])
        if dup in seen:
            problems.append(f"{path}:{n}: duplicate point ({rec['memory']}, {x}); first at line {seen[dup]}")
            continue
        seen[dup] = n
        out.append(Point(rec["memory"], key, x, measured, rec.get("threads"), f"{path.name}:{n}",
                         rec.get("stores") or STORES[0]))
    return out


def _loaded_traffic(rec: Dict[str, Any], header: List[str], loc: str, problems: List[str]) -> Optional[Dict]:
    """A loaded_latency.csv row's traffic (threads, read fraction, stores,
    pattern, and the MLC mode that set them), or None after noting why not."""
    def col(h):
        return f"{loc} column {header.index(h) + 1}"
    if rec.get("latency_ns") is None and rec.get("bandwidth_gbps") is None:
        problems.append(f"{loc}: neither bandwidth_gbps nor latency_ns is given; a row measures one or both")
        return None
    out: Dict[str, Any] = {"threads": rec["threads"]}
    stores, rf = rec.get("stores"), rec.get("read_fraction")
    if stores is not None and stores not in STORES:
        problems.append(f"{col('stores')}: stores {stores!r} is not allowed; allowed: {', '.join(STORES)}")
        return None
    if rec.get("mode") is not None:
        try:
            m = mlc.mode(rec["mode"])
        except ParamError as e:
            problems.append(f"{col('mode')}: {e}")
            return None
        if rf is not None and abs(rf - m.read_fraction) > 0.005:
            problems.append(f"{col('read_fraction')}: read_fraction {rf:g} is not MLC {m.name}'s "
                            f"{m.read_fraction:.3f}; leave it empty or give the mode's")
            return None
        if stores is not None and stores != m.stores:
            problems.append(f"{col('stores')}: stores {stores!r} is not MLC {m.name}'s ({m.stores})")
            return None
        out.update(mode=m.name, read_fraction=m.read_fraction, stores=m.stores)
    else:
        if rf is None:
            problems.append(f"{loc}: read_fraction is empty and no mode names the traffic; give one of them")
            return None
        stores = stores or LOADED_STORES
        if stores == "write-allocate" and rf < 0.5:
            problems.append(f"{col('read_fraction')}: read_fraction {rf:g} is not allowed with write-allocate "
                            "stores; allowed: 0.5 to 1 (each store reads its line too)")
            return None
        out.update(read_fraction=rf, stores=stores)
    pattern = rec.get("pattern") or PATTERNS[0]
    if pattern not in PATTERNS:
        problems.append(f"{col('pattern')}: pattern {pattern!r} is not allowed; allowed: {', '.join(PATTERNS)}")
        return None
    out["pattern"] = pattern
    return out
