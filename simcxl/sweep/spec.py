"""Design-space sweeps: a spec (TOML or the same thing in Python) names a base
system, a workload, axes over any parameter (or over the structure itself,
:mod:`simcxl.sweep.points`) and the metrics to keep. Points
run on local processes or a Dask cluster; each finished point is appended to
``results.jsonl`` at once, so an interrupted sweep loses nothing and a rerun
runs only what is missing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np
import pandas as pd

from ..engine import standalone as engine
from ..config import presets
from . import points as sb
from .points import run_point
from ..config.files import read_text
from ..config.params import ParamError, System, did_you_mean, shown
from ..config.targets import parse_target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Workload parameters an axis may sweep as "workload.<name>", with their ranges.
WORKLOADS: Dict[str, Dict[str, tuple]] = {
    "traffic": {"threads": (1, 1024, int), "read_fraction": (0.0, 1.0, float), "pattern": (("random", "sequential"),),
                "footprint_bytes": (64, 1 << 44, int), "requests": (100, 1 << 40, int),
                "rate_gbps": (0.0, 10000.0, float), "arrivals": (engine.ARRIVALS,),
                "inject_delay_ns": (0.0, 1e6, float)},
    "stream": {"kernel": (("copy", "scale", "add", "triad"),), "threads": (1, 1024, int),
               "lines_per_thread": (100, 1 << 34, int)},
    "lmbench": {"working_set_bytes": (64, 1 << 40, int), "stride": (0, 1 << 30, int), "accesses": (1, 1 << 32, int)},
    "loaded-latency": {"threads": (1, 1024, int), "read_fraction": (0.0, 1.0, float), "requests": (100, 1 << 40, int)},
    # CXL.cache accelerators (the base is an accelerator preset)
    "accel": {"op": (("load", "store", "rdcurr", "rdany", "itomwr", "wrinv"),),
              "pattern": (("single", "sequential", "random"),), "target": (("host", "device"),),
              "requesters": (1, 1024, int), "depth": (1, 4096, int), "footprint_bytes": (64, 1 << 40, int),
              "requests": (1, 1 << 40, int), "host_threads": (0, 1024, int),
              "host_store_fraction": (0.0, 1.0, float)},
    "dma-vs-cache": {"transfer_bytes": (1, 1 << 30, int), "mechanism": (("dma", "cxl.cache"),),
                     "cache_op": (("load", "rdcurr"),), "stream_bytes": (64, 1 << 34, int)},
    # Remote atomics (simcxl.workloads.nic; the base is an accelerator preset, nic.* parameters may be swept)
    "rao": {"kernel": (("rand", "stride1", "striden", "central", "scatter", "gather", "ptrchase"),),
            "op": (("add", "cas"),), "mechanism": (("cxl-nic", "pcie-nic", "host"),), "threads": (1, 256, int),
            "iters": (1, 1 << 32, int), "elements": (8, 1 << 30, int), "stride": (1, 1 << 30, int)},
    "rpc": {"shape": (("64B", "512B", "4KiB", "16KiB", "64KiB"),), "direction": (("serialize", "deserialize"),),
            "mechanism": (("cxl-nic", "pcie-nic", "host"),)},
    # The host's STREAM beside accelerator streams in one system (simcxl.workloads.mixed; the base is a memory
    # system with devices, its accelerators' parameters named after them: gpu.cache.mshrs)
    "mixed": {"kernel": (("copy", "scale", "add", "triad"),), "threads": (1, 1024, int),
              "lines_per_thread": (100, 1 << 34, int)},
    # Every host of the base running the same traffic at once (simcxl.hosts), as one row
    "hosts": sb.HOSTS_WORKLOAD,
}
#: Workloads whose base is an accelerator system (simcxl.workloads.coherent) rather than a memory.
COHERENT = ("accel", "dma-vs-cache", "rao", "rpc")
# Where a memory workload's pages lie: a window of the base's address map or
# "WINDOW:W,WINDOW:W" (checked against the base, see Sweep.check).
TARGET = (None,)
for _k in ("traffic", "stream", "lmbench", "loaded-latency", "mixed"):
    WORKLOADS[_k]["target"] = TARGET
# Each accelerator's stream in a mixed run: {device: {op, pattern, target, requesters, depth, footprint}},
# checked by the run itself.
# (Sentinels: each a tuple of its own, told apart by identity.)
DEVICES = (None, "devices")
WORKLOADS["mixed"]["devices"] = DEVICES
# Switches: a mixed run's host or accelerators off (each side alone).
SWITCH = (None, "switch")
WORKLOADS["mixed"]["host"] = WORKLOADS["mixed"]["accelerators"] = SWITCH
DEFAULT_METRICS = {
    "traffic": ["read_gbps", "write_gbps", "total_gbps", "read_latency_ns_mean", "read_latency_p99_ns"],
    "stream": ["stream_gbps", "read_gbps", "write_gbps"],
    "lmbench": ["latency_ns", "hit_memory"],
    "loaded-latency": ["bandwidth_gbps", "latency_ns"],
    "accel": ["bandwidth_gbps", "latency_mean_ns", "latency_p99_ns", "hit_rate"],
    "dma-vs-cache": ["latency_ns", "bandwidth_gbps"],
    "rao": ["ops_per_second", "latency_ns"],
    "rpc": ["latency_ns", "throughput_gbps"],
    "mixed": ["host.stream_gbps", "accel.bandwidth_gbps"],
    "hosts": sb.HOSTS_METRICS,
}
METHODS = ("grid", "random", "lhs")


@dataclass
class Axis:
    param: str                          # dotted system parameter or workload.<name>
    values: Optional[List[Any]] = None  # explicit values (grid)
    lo: Optional[float] = None          # range for random / lhs sampling
    hi: Optional[float] = None
    log: bool = False


@dataclass
class Sweep:
    base: sb.Base            # a preset, preset file or topology file, or a generator table
    workload: Dict[str, Any]
    axes: List[Axis]
    method: str = "grid"
    points: int = 0          # random / lhs
    seed: int = 1
    metrics: List[str] = field(default_factory=list)
    name: str = "sweep"
    engine: str = "standalone"
    folder: Optional[Path] = None  # where a spec file lives (relative preset paths)

    @classmethod
    def from_toml(cls, path) -> "Sweep":
        path = Path(path)
        try:
            raw = tomllib.loads(read_text(path, "see docs/tutorials/sweeps.md for a spec (e.g. "
                                                  "examples/sweeps/fabric.toml)"))
        except ParamError as e:
            raise ParamError(f"sweep spec {e}") from None
        except tomllib.TOMLDecodeError as e:
            raise ParamError(f"sweep spec {path}: {e}; fix the TOML there (see docs/tutorials/sweeps.md)") from None
        except RecursionError:
            raise ParamError(f"sweep spec {path}: nested too deeply to be a sweep spec") from None
        return cls.from_dict(raw, path.parent)

    @classmethod
    def from_dict(cls, raw: Dict[str, Any], folder: Optional[Path] = None) -> "Sweep":
        known = {"name", "base", "engine", "seed", "workload", "axes", "sampling", "metrics"}
        if not isinstance(raw, dict):
            raise ParamError(f"sweep: a spec must be a table; allowed keys: {', '.join(sorted(known))}")
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ParamError(f"sweep: {shown(unknown[0])} is not a sweep key; {did_you_mean(unknown[0], known)}"
                             f"allowed: {', '.join(sorted(known))}")
        _check_shape(raw)
        if "base" not in raw and not any(a.get("param") == sb.AXIS for a in raw.get("axes", [])):
            raise ParamError("sweep: base is missing; add it before the first [table]: a preset name, a preset "
                             "file, a topology file or a [base] generator table, e.g. base = \"cxl-asic\"")
        axes = []
        for i, a in enumerate(raw.get("axes", [])):
            if not isinstance(a, dict) or "param" not in a:
                raise ParamError(f"sweep: axes[{i}] needs a param; add param = \"NAME\" to it, e.g. "
                                 "param = \"cxl.link.lanes\"")
            rng = a.get("range")
            if rng is not None and (not isinstance(rng, list) or len(rng) != 2):
                raise ParamError(f"sweep: axis {a['param']}: range = {rng!r} is not allowed; allowed: [low, high], "
                                 "e.g. range = [4, 16]")
            axes.append(Axis(a["param"], a.get("values"), rng[0] if rng else None, rng[1] if rng else None,
                             bool(a.get("log", False))))
        samp = raw.get("sampling", {})
        extra = sorted(set(samp) - {"method", "points"}) if isinstance(samp, dict) else ["(not a table)"]
        if extra:
            raise ParamError(f"sweep: sampling.{shown(extra[0])} is not a sampling key; allowed: method, points "
                             "(top-level keys such as metrics go before the first [table])")
        s = cls(base=sb.check_base(raw["base"]) if "base" in raw else None,
                workload=dict(raw.get("workload", {"kind": "traffic"})), axes=axes,
                method=samp.get("method", "grid"), points=int(samp.get("points", 0)), seed=int(raw.get("seed", 1)),
                metrics=list(raw.get("metrics", [])), name=str(raw.get("name", "sweep")),
                engine=str(raw.get("engine", "standalone")), folder=folder)
        s.check()
        return s

    # -- checking, before anything runs ------------------------------------------------

    def base_system(self, structural: Optional[Dict[str, Any]] = None):
        """The base system (of a point whose structural axes have these values)."""
        key = json.dumps([self.base, self.workload.get("kind"), structural or {}], sort_keys=True, default=str)
        cache = self.__dict__.setdefault("_bases", {})
        if key not in cache:
            cache[key] = self._build(sb.base_at(self.base, structural or {}))
        return cache[key]

    def _build(self, base):
        from .. import topology
        kind = self.workload.get("kind", "traffic")
        if isinstance(base, dict):
            return topology.GraphSystem(sb.generated(base), topology.memory_system)
        if topology.is_file(base):
            if self.folder is not None and not Path(base).is_absolute() and (self.folder / base).exists():
                base = str(self.folder / base)
            build = (topology.nic_system if kind in ("rao", "rpc") else
                     topology.accel_system if kind in COHERENT else topology.memory_system)
            return topology.GraphSystem(topology.load(base), build)
        if kind in COHERENT:
            from ..workloads import coherent
            if self.folder is not None and base not in coherent.preset_names() and not Path(base).is_absolute():
                candidate = self.folder / base
                if candidate.exists():
                    base = str(candidate)
            if self.workload.get("kind") in ("rao", "rpc"):
                from ..workloads import nic
                return nic.load(base)
            return coherent.load(base)
        if self.folder is not None and base not in presets.names() and not Path(base).is_absolute():
            candidate = self.folder / base
            if candidate.exists():
                base = str(candidate)
        return presets.load(base)

    def check(self) -> None:
        if self.engine != "standalone":
            raise ParamError(f"sweep: engine {self.engine!r} is not available; allowed: standalone "
                             "(gem5 runs join when the gem5 SimObjects are built)")
        kind = self.workload.get("kind", "traffic")
        if kind not in WORKLOADS:
            raise ParamError(f"sweep: workload.kind = {kind!r} is not allowed; {did_you_mean(kind, WORKLOADS)}"
                             f"allowed: {', '.join(WORKLOADS)}")
        if isinstance(self.base, dict) and kind in COHERENT + ("mixed",):
            raise ParamError(f"sweep: workload.kind = {kind!r} is not allowed with a generator base (its systems have "
                             "no accelerators); allowed: traffic, stream, lmbench, loaded-latency, hosts")
        for k, v in self.workload.items():
            if k != "kind":
                _check_workload(kind, k, v, f"workload.{k}")
        if self.method not in METHODS:
            raise ParamError(f"sweep: sampling.method = {self.method!r} is not allowed; allowed: {', '.join(METHODS)}")
        if self.method != "grid" and not 1 <= self.points <= 10_000_000:
            raise ParamError(f"sweep: sampling.points = {self.points} is out of range for {self.method}; "
                             "allowed: 1 to 10000000")
        for a in self.axes:
            if sb.is_structural(a.param):
                sb.check_axis(self.base, a.param, a.values)
        for structural in sb.structures(self.axes):
            try:
                base = self.base_system(structural)
            except ParamError as e:
                shown_base = sb.base_at(self.base, structural)
                raise ParamError(f"sweep: base = {sb.label(shown_base)!r} is not allowed ({e}){sb.where(structural)}; "
                                 "allowed: a preset name, a preset file, a topology file or a topology generator") \
                    from None
            try:
                self._check_against(base, kind)
            except ParamError as e:
                raise ParamError(f"{e}{sb.where(structural)}") from None
        for m in self.metrics:
            if not isinstance(m, str):
                raise ParamError(f"sweep: metrics must be names, not {m!r}; allowed: a list of metric names, e.g. "
                                 "metrics = [\"read_gbps\"]")

    def _check_against(self, base, kind: str) -> None:
        """The workload and the parameter axes against one base system."""
        known = base.parameters()
        targets = [self.workload["target"]] if "target" in self.workload else []
        targets += [v for a in self.axes if a.param == "workload.target" for v in (a.values or [])]
        if self.workload.get("kind", "traffic") in COHERENT:
            targets = []  # an accelerator's target is host or device memory, a choice checked with the workload
        for t in targets:
            if isinstance(t, str):
                parse_target(t, base, "sweep: workload.target")
        cores = getattr(getattr(base, "host", None), "cores", None)
        if "threads" in self.workload and cores and _is_number(self.workload["threads"]) \
                and self.workload["threads"] > cores:
            raise ParamError(f"sweep: workload.threads = {self.workload['threads']} is out of range; allowed: 1 to "
                             f"{base.name}'s host.cores ({cores})")
        for a in self.axes:
            if sb.is_structural(a.param):
                continue
            where = f"axis {shown(a.param)}"
            if a.values is None and (a.lo is None or self.method == "grid"):
                raise ParamError(f"{where}: values is missing; add values = [...] to the axis"
                                 + ("" if self.method == "grid" else " or range = [low, high]")
                                 + ", e.g. values = [4, 8, 16]")
            if a.values is not None and not a.values:
                raise ParamError(f"{where}: values is empty; allowed: a list of one or more values")
            if a.param.startswith("workload."):
                name = a.param.split(".", 1)[1]
                for v in a.values or [a.lo, a.hi]:
                    _check_workload(kind, name, v, where)
                    if name == "threads" and cores and v > cores:
                        raise ParamError(f"{where}: {v} is out of range; allowed: 1 to {base.name}'s host.cores "
                                         f"({cores})")
                continue
            if a.param not in known:
                raise ParamError(f"{where}: {shown(a.param)} is not a parameter of {base.name} ({base.kind}); "
                                 + _suggest(a.param, list(known)))
            choices = _choices(base, a.param)
            if a.values is None and choices:
                raise ParamError(f"{where}: range is not allowed for a parameter with fixed values; allowed: "
                                 f"values = a list of {', '.join(map(str, choices))}")
            for v in a.values or [a.lo, a.hi]:
                try:
                    base.replace(**{a.param: v})
                except ParamError as e:
                    raise ParamError(f"{where}: {e}") from None

    # -- points ------------------------------------------------------------------------

    def grid(self) -> List[Dict[str, Any]]:
        """Every point as {param: value}, in a fixed order."""
        if not self.axes:
            return [{}]
        if self.method == "grid":
            return [dict(zip([a.param for a in self.axes], combo))
                    for combo in itertools.product(*[a.values for a in self.axes])]
        rng = np.random.default_rng(self.seed)
        if self.method == "lhs":
            from scipy.stats import qmc
            unit = qmc.LatinHypercube(d=len(self.axes), seed=rng).random(self.points)
        else:
            unit = rng.random((self.points, len(self.axes)))
        out = []
        for row in unit:
            p = {}
            for a, u in zip(self.axes, row):
                p[a.param] = _from_unit(a, float(u), self._is_int(a))
            out.append(p)
        return out

    def _is_int(self, a: Axis) -> bool:
        if sb.is_structural(a.param):
            return False  # given as values
        if a.param.startswith("workload."):
            spec = WORKLOADS[self.workload.get("kind", "traffic")][a.param.split(".", 1)[1]]
            return len(spec) == 3 and spec[2] is int
        # The declared type: a preset may store a float parameter as a whole number (tREFI_ns = 3900)
        return _field(self.base_system(sb.structures(self.axes)[0]), a.param).type in ("int", int)

    def metric_names(self) -> List[str]:
        return self.metrics or DEFAULT_METRICS[self.workload.get("kind", "traffic")]


def _suggest(name: str, known: List[str]) -> str:
    """The parameters a typo most likely meant: same leaf or same tail, else the closest names."""
    import difflib
    leaf = name.rsplit(".", 1)[-1]
    near = [k for k in known if k.endswith("." + name)] or [k for k in known if k.rsplit(".", 1)[-1] == leaf]
    near = near or difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if near:
        return f"did you mean {' or '.join(near[:3])}? (simcxl presets show NAME lists the allowed parameters)"
    groups = sorted({k.rsplit(".", 1)[0] for k in known})
    return (f"allowed: a parameter of {', '.join(groups)} (simcxl presets show NAME lists every one), "
            "or workload.FIELD")


def _from_unit(a: Axis, u: float, integer: bool) -> Any:
    if a.values is not None:
        return a.values[min(int(u * len(a.values)), len(a.values) - 1)]
    lo, hi = sorted((float(a.lo), float(a.hi)))
    v = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))) if a.log else lo + u * (hi - lo)
    # exp(log(x)) and rounding may step just outside the range
    return min(max(int(round(v)), math.ceil(lo)), math.floor(hi)) if integer else min(max(v, lo), hi)


def _field(base, path: str):
    """The schema field of a dotted parameter (its type, range and choices)."""
    *groups, leaf = path.split(".")
    if hasattr(base, "group"):  # a memory system names its groups (an address map's windows too)
        obj = base.group(".".join(groups))
    else:
        obj = base
        for g in groups:
            obj = getattr(obj, g)
    return next(f for f in fields(obj) if f.name == leaf)


def _choices(base, path: str) -> Optional[tuple]:
    """The allowed values of a parameter that has a fixed set (link lanes, flit size, ...)."""
    return _field(base, path).metadata["choices"]


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_shape(raw: Dict[str, Any]) -> None:
    """The types of a spec's keys (TOML gives any), before their values are read."""
    def bad(key, value, allowed):
        raise ParamError(f"sweep: {key} = {value!r} is not allowed; allowed: {allowed}")

    for key in ("name", "engine"):  # base: points.check_base
        if key in raw and (not isinstance(raw[key], str) or not raw[key]):
            bad(key, raw[key], "a string")
    seed = raw.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 53:
        bad("seed", seed, f"a whole number from 0 to {2 ** 53 - 1}")
    wl = raw.get("workload", {})
    if not isinstance(wl, dict):
        bad("workload", wl, 'a table such as { kind = "traffic" }')
    if not isinstance(wl.get("kind", ""), str):
        bad("workload.kind", wl["kind"], ", ".join(WORKLOADS))
    metrics = raw.get("metrics", [])
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        bad("metrics", metrics, "a list of metric names")
    axes = raw.get("axes", [])
    if not isinstance(axes, list):
        bad("axes", axes, "a list of [[axes]] tables")
    for i, a in enumerate(axes):
        if not isinstance(a, dict) or not isinstance(a.get("param"), str):
            bad(f"axes[{i}]", a, "a table with a param (a parameter name)")
        where = f"axis {shown(a['param'])}:"
        if any(b.get("param") == a["param"] for b in axes[:i] if isinstance(b, dict)):
            raise ParamError(f"sweep: {where} a second axis over the same parameter; allowed: one axis per "
                             "parameter")
        extra = sorted(set(a) - {"param", "values", "range", "log"})
        if extra:
            raise ParamError(f"sweep: {where} {shown(extra[0])} is not an axis key; allowed: param, values, range, log")
        if "values" in a and not isinstance(a["values"], list):
            bad(f"{where} values", a["values"], "a list")
        rng = a.get("range", [0, 1])
        if not isinstance(rng, list) or len(rng) != 2 or not all(_is_number(v) for v in rng):
            bad(f"{where} range", rng, "[low, high], two numbers")
        if not isinstance(a.get("log", False), bool):
            bad(f"{where} log", a["log"], "true, false")
        if a.get("log") and "range" in a and min(rng) <= 0:
            bad(f"{where} range", rng, "a range above 0 when log = true")
    samp = raw.get("sampling", {})
    if isinstance(samp, dict):
        if not isinstance(samp.get("method", ""), str):
            bad("sampling.method", samp["method"], ", ".join(METHODS))
        points = samp.get("points", 0)
        if isinstance(points, bool) or not isinstance(points, int):
            bad("sampling.points", points, "a whole number from 1 to 10000000")


def _check_workload(kind: str, name: str, value: Any, where: str) -> None:
    spec = WORKLOADS[kind].get(name)
    if spec is None:
        raise ParamError(f"{where}: {shown(name)} is not a parameter of the {kind} workload; "
                         f"{did_you_mean(name, WORKLOADS[kind])}allowed: {', '.join(WORKLOADS[kind])}")
    if spec is SWITCH:
        if not isinstance(value, bool):
            raise ParamError(f"{where}: {value!r} is not allowed; allowed values: true, false")
        return
    if spec is DEVICES:
        if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
            raise ParamError(f"{where}: {value!r} is not allowed; allowed: a table of device name -> stream "
                             "settings (op, pattern, target, requesters, depth, footprint)")
        return
    if spec is TARGET:
        if not isinstance(value, str):
            raise ParamError(f"{where}: {value!r} is not allowed; allowed: a window name or 'WINDOW:W,WINDOW:W'")
        return
    if len(spec) == 1:
        if value not in spec[0]:
            raise ParamError(f"{where}: {value!r} is not allowed; allowed values: {', '.join(spec[0])}")
        return
    lo, hi, typ = spec
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi or \
            (typ is int and not float(value).is_integer()):
        raise ParamError(f"{where}: {value!r} is out of range; allowed: {'a whole number ' if typ is int else ''}"
                         f"from {lo} to {hi}")


def point_id(params: Dict[str, Any], sweep: Sweep) -> str:
    key = json.dumps({"p": params, "w": sweep.workload, "b": sweep.base, "s": sweep.seed}, sort_keys=True,
                     default=str)
    return hashlib.sha1(key.encode()).hexdigest()[:16]


def _task(args) -> Dict[str, Any]:
    base, workload, pid, params, seed, metrics, rundir = args
    t0 = time.perf_counter()
    rec: Dict[str, Any] = {"id": pid, **{f"param.{k}": v for k, v in params.items()}}
    try:
        rec.update(run_point(base, workload, params, seed, metrics))
        rec["status"] = "ok"
        rec["error"] = ""
    except Exception as e:  # a failing point is recorded, not fatal
        rec["status"] = "error"
        rec["error"] = f"{type(e).__name__}: {e}"
        if rundir:
            Path(rundir).mkdir(parents=True, exist_ok=True)
            (Path(rundir) / "error.log").write_text(traceback.format_exc())
    rec["wall_seconds"] = time.perf_counter() - t0
    return rec


# ------------------------------------------------------------------ running

# Held while a result line is written; whoever reports what an interrupted
# sweep kept takes it for good, so no line lands after the count.
results_lock = threading.Lock()


def load_results(out: Path) -> pd.DataFrame:
    """The results so far (a torn last line from a killed run is ignored)."""
    path = Path(out) / "results.jsonl"
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    df = pd.DataFrame(rows)
    if len(df):
        df = df.drop_duplicates("id", keep="first").reset_index(drop=True)
    return df


def _drop_torn_tail(path: Path) -> None:
    """A run killed mid-write leaves a partial last line: cut it before appending."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def run(sweep: Sweep, out, executor: str = "local", workers: Optional[int] = None, address: Optional[str] = None,
        progress: Optional[Callable[[int, int], None]] = None, per_run_dirs: bool = True) -> pd.DataFrame:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _drop_torn_tail(out / "results.jsonl")
    points = sweep.grid()
    metrics = sweep.metric_names()
    done = set(load_results(out).get("id", pd.Series(dtype=str)))
    todo = []
    for p in points:
        pid = point_id(p, sweep)
        if pid not in done:
            rundir = str(out / "runs" / pid) if per_run_dirs else ""
            base = sweep.base_system(sb.split(p)[0])  # built once per structure
            todo.append((base, sweep.workload, pid, p, sweep.seed, metrics, rundir))
            done.add(pid)  # the same point twice in a spec runs once
    (out / "spec.json").write_text(json.dumps(
        {"name": sweep.name, "base": sweep.base, "workload": sweep.workload, "method": sweep.method,
         "points": len(points), "seed": sweep.seed, "metrics": metrics,
         "axes": [a.__dict__ for a in sweep.axes]}, indent=2, default=str))
    meta = {"engine": "standalone", "simcxl": engine._version(), "seed": sweep.seed, "base": sb.label(sweep.base)}
    total, finished = len(todo), 0
    with open(out / "results.jsonl", "a") as f:
        def record(rec):
            nonlocal finished
            rec.update(meta)
            with results_lock:
                f.write(json.dumps(rec, default=str) + "\n")
                f.flush()
                os.fsync(f.fileno())
            if per_run_dirs:
                d = out / "runs" / rec["id"]
                d.mkdir(parents=True, exist_ok=True)
                (d / "result.json").write_text(json.dumps(rec, indent=2, default=str))
            finished += 1
            if progress:
                progress(finished, total)

        for rec in _execute(todo, executor, workers, address):
            record(rec)
    df = load_results(out)
    _tables(out, df)
    return df


def _quiet_worker() -> None:
    # Ctrl-C reaches the workers too: they leave at once, without a traceback
    # each, and the parent says what was kept.
    import signal
    signal.signal(signal.SIGINT, lambda *_: os._exit(130))


def _execute(todo, executor: str, workers: Optional[int], address: Optional[str]) -> Iterable[Dict[str, Any]]:
    if not todo:
        return
    if executor == "local":
        workers = workers or os.cpu_count() or 1
        if workers == 1:
            for t in todo:
                yield _task(t)
            return
        import concurrent.futures as cf
        with cf.ProcessPoolExecutor(max_workers=workers, initializer=_quiet_worker) as pool:
            # Submit in chunks so memory stays bounded for very large sweeps.
            it = iter(todo)
            pending = set()
            for t in itertools.islice(it, workers * 4):
                pending.add(pool.submit(_task, t))
            while pending:
                finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    yield fut.result()
                    nxt = next(it, None)
                    if nxt is not None:
                        pending.add(pool.submit(_task, nxt))
        return
    if executor == "dask":
        try:
            from dask.distributed import Client, as_completed
        except ImportError:
            raise ParamError("--executor dask needs the dask extra: pip install 'simcxl[dask]'") from None
        client = Client(address) if address else Client(processes=True, n_workers=workers or os.cpu_count() or 1,
                                                         threads_per_worker=1, dashboard_address=None)
        try:
            futs = client.map(_task, todo, pure=False)
            for fut in as_completed(futs):
                yield fut.result()
        finally:
            client.close()
        return
    raise ParamError(f"--executor {executor!r} is not available; allowed: local, dask")


def _tables(out: Path, df: pd.DataFrame) -> None:
    """results.csv and results.parquet: one row per point, written atomically."""
    if not len(df):
        return
    for name, write in (("results.csv", lambda p: df.to_csv(p, index=False)),
                        ("results.parquet", lambda p: df.to_parquet(p, index=False))):
        tmp = out / (name + ".tmp")
        write(tmp)
        tmp.replace(out / name)
