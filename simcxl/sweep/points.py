"""A sweep's point: its base (structural axes), and its run on the standalone engine
(:func:`run_point`, the many-host workload among the others).

A sweep's base is a preset, a preset file or a topology file (a string), or a topology
generator with its arguments (``base = { generator = "fabric", hosts = 2, ... }``,
:mod:`simcxl.topology.generate`). Axes named ``base`` (over base strings) or ``base.ARG`` (over a
generator's arguments) change the system's structure, not a parameter of one system: each point's
base is built from them, and every other axis is a parameter of that base. Both kinds are one
mechanism: :func:`base_at` gives the base of a point's structural values.

The ``hosts`` workload runs traffic on every host of the base at once (:func:`simcxl.hosts`) and
sums or averages the hosts' figures into one row (:func:`hosts_row`).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from ..engine import standalone as engine
from ..config.params import ParamError, System, shown

Base = Union[str, Dict[str, Any], None]
AXIS = "base"

# The hosts workload's settings: each host's traffic (simcxl.hosts takes what traffic takes; a window
# name differs from host to host, so there is no common target).
HOSTS_WORKLOAD = {"threads": (1, 1024, int), "read_fraction": (0.0, 1.0, float),
                  "pattern": (("random", "sequential"),), "footprint_bytes": (64, 1 << 44, int),
                  "requests": (100, 1 << 40, int), "rate_gbps": (0.0, 10000.0, float),
                  "inject_delay_ns": (0.0, 1e6, float), "stores": (("non-temporal", "write-allocate"),)}
HOSTS_METRICS = ["total_gbps", "read_gbps", "write_gbps", "read_latency_ns_mean", "read_latency_p99_ns"]
# Summed over the hosts; weighted by each host's reads (the mean over every read); the worst host's.
_SUM = ("read_gbps", "write_gbps", "total_gbps")
_MAX = ("read_latency_p50_ns", "read_latency_p90_ns", "read_latency_p99_ns", "read_latency_p999_ns",
        "read_latency_ns_max")


def is_structural(param: str) -> bool:
    return param == AXIS or param.startswith(AXIS + ".")


def split(params: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """A point's values as (structural, the rest)."""
    return ({k: v for k, v in params.items() if is_structural(k)},
            {k: v for k, v in params.items() if not is_structural(k)})


def check_base(base: Any) -> Base:
    """The spec's ``base`` value: a non-empty string, or a generator table whose arguments are in range."""
    if isinstance(base, str) and base:
        return base
    if isinstance(base, dict):
        from ..topology.generate import GENERATORS, check_args
        if "generator" not in base:
            raise ParamError(f"sweep: base.generator is missing; allowed: {', '.join(GENERATORS)} (a table base "
                             "is a topology generator and its arguments)")
        gen = base["generator"]
        if not isinstance(gen, str) or gen not in GENERATORS:
            raise ParamError(f"sweep: base.generator = {gen!r} is not allowed; allowed: {', '.join(GENERATORS)}")
        args = {k: v for k, v in base.items() if k != "generator"}
        for k, v in args.items():
            check_args(gen, {k: v}, f"sweep: base.{k}")
        return dict(base)
    raise ParamError(f"sweep: base = {base!r} is not allowed; allowed: a preset name, a preset file, a topology "
                     "file, or a table { generator = \"fabric\", ... }")


def check_axis(base: Base, param: str, values: Any) -> None:
    """A structural axis against the spec's base: its name, that it gives values, and each value."""
    where = f"sweep: axis {shown(param)}"
    if values is None:
        raise ParamError(f"{where}: range is not allowed for a structural axis; allowed: values = [...]")
    if not values:
        raise ParamError(f"{where}: values is empty; allowed: a list of one or more values")
    if param == AXIS:
        if isinstance(base, dict):
            raise ParamError(f"{where}: an axis over bases is not allowed with a generator base; allowed: axes "
                             f"base.ARG over the {base['generator']} generator's arguments")
        for v in values:
            if not isinstance(v, str) or not v:
                raise ParamError(f"{where}: {v!r} is not allowed; allowed: preset names, preset files or topology "
                                 "files")
        return
    from ..topology.generate import check_args
    if not isinstance(base, dict):
        raise ParamError(f"{where}: base = {base!r} is not a topology generator; allowed: base = "
                         "{ generator = \"fabric\", ... } for axes over its arguments (base.hosts, base.levels, ...)")
    for v in values:
        check_args(base["generator"], {param[len(AXIS) + 1:]: v}, where)


def base_at(base: Base, structural: Dict[str, Any]) -> Base:
    """The base of a point: the spec's, its string replaced by a ``base`` axis's value or its generator's
    arguments by ``base.ARG`` axes' values."""
    if AXIS in structural:
        return structural[AXIS]
    if not structural:
        return base
    return {**base, **{k[len(AXIS) + 1:]: v for k, v in structural.items()}}


def generated(base: Dict[str, Any]):
    """The topology of a generator base."""
    from ..topology.generate import generate
    return generate(base["generator"], **{k: v for k, v in base.items() if k != "generator"})


def label(base: Base) -> str:
    """A base in a few words (results' ``base`` column, plots' captions)."""
    if isinstance(base, dict):
        args = ", ".join(f"{k}={v}" for k, v in base.items() if k != "generator")
        return f"{base['generator']}({args})"
    return "(an axis)" if base is None else base


def where(structural: Dict[str, Any]) -> str:
    """Which structure an error was found at, for its message."""
    return f" (at {', '.join(f'{k} = {v!r}' for k, v in structural.items())})" if structural else ""


# ------------------------------------------------------------------ running a point

def run_point(base: System, workload: Dict[str, Any], params: Dict[str, Any], seed: int,
              metrics: Sequence[str]) -> Dict[str, Any]:
    """One point on the standalone engine: {metric: value}."""
    sys_over = {k: v for k, v in split(params)[1].items() if not k.startswith("workload.")}
    wl = dict(workload)
    wl.update({k.split(".", 1)[1]: v for k, v in params.items() if k.startswith("workload.")})
    kind = wl.pop("kind", "traffic")
    s = base.replace(seed=seed, **sys_over)
    if kind == "accel":
        from ..workloads import coherent
        df = coherent.accel(s, **{("footprint" if k == "footprint_bytes" else k): v for k, v in wl.items()})
    elif kind == "rao":
        from ..workloads import nic
        one = {k: wl.pop(k) for k in ("kernel", "op", "mechanism") if k in wl}
        df = nic.rao(s, kernels=[one.get("kernel", "rand")], ops=[one.get("op", "add")],
                     mechanisms=[one.get("mechanism", "cxl-nic")], **wl)
    elif kind == "rpc":
        from ..workloads import nic
        df = nic.rpc(s, [wl.pop("shape", "4KiB")], [wl.pop("direction", "serialize")],
                     [wl.pop("mechanism", "cxl-nic")], **wl)
    elif kind == "dma-vs-cache":
        from ..workloads import coherent
        size = wl.pop("transfer_bytes", 64)
        mech = wl.pop("mechanism", "cxl.cache")
        df = coherent.dma_vs_cache(s, [size], **wl)
        df = df[df["mechanism"] == mech].reset_index(drop=True)
    elif kind == "mixed":
        from ..workloads import mixed
        df = mixed.run(s, **wl)
    elif kind == "traffic":
        df = engine.traffic(s, **wl)
    elif kind == "hosts":
        df = run_hosts(s, wl)
    elif kind == "stream":
        kernel = wl.pop("kernel", "triad")
        df = engine.stream(s, [kernel], **wl)
    elif kind == "lmbench":
        ws = wl.pop("working_set_bytes", 1 << 30)
        df = engine.lmbench(s, [ws], **wl)
    else:
        df = engine.loaded_latency(s, threads=(wl.pop("threads", 8),), read_fractions=(wl.pop("read_fraction", 1.0),),
                                   **wl)
    row = df.iloc[0]
    missing = [m for m in metrics if m not in row.index]
    if missing:
        raise ParamError(f"metric {missing[0]} is not produced by the {kind} workload; e.g. "
                         f"{', '.join(list(row.index)[:8])}")
    return {m: _plain(row[m]) for m in metrics}


def _plain(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v




def hosts_row(df: pd.DataFrame) -> Dict[str, Any]:
    """One row of a many-host run: bandwidths summed over the hosts, mean latency and stage times over
    every read (each host's weighted by its reads), percentiles and maxima the worst host's, each host's
    total bandwidth at its lowest and highest, and every host's own figures as ``HOST.COLUMN``."""
    reads = df["read_gbps"].to_numpy()
    row: Dict[str, Any] = {"hosts": len(df)}
    for col in df.columns:
        if col in ("memory", "host") or not pd.api.types.is_numeric_dtype(df[col]):
            continue
        vals = df[col].to_numpy(dtype=float)
        if col in _SUM:
            row[col] = float(vals.sum())
        elif col in _MAX:
            row[col] = float(max(vals))
        elif col == "read_latency_ns_mean" or col.startswith("read.stage."):
            ok = [(v, w) for v, w in zip(vals, reads) if w > 0 and not math.isnan(v)]
            total = sum(w for _, w in ok)
            row[col] = sum(v * w for v, w in ok) / total if total else math.nan
        else:  # the same for every host (window, threads, media peak)
            row[col] = float(vals[0])
    row["host_total_gbps_min"] = float(df["total_gbps"].min())
    row["host_total_gbps_max"] = float(df["total_gbps"].max())
    for _, r in df.iterrows():
        for col in df.columns:
            if col not in ("memory", "host"):
                row[f"{r['host']}.{col}"] = r[col]
    return row


def run_hosts(system, settings: Dict[str, Any]) -> pd.DataFrame:
    """Every host of ``system`` running the same traffic, as one row."""
    return pd.DataFrame([hosts_row(engine.hosts(system, **settings))])


def structures(axes: List[Any]) -> List[Dict[str, Any]]:
    """Every combination of the structural axes' values, in grid order (random and lhs sampling draw
    from these values too)."""
    import itertools
    st = [a for a in axes if is_structural(a.param)]
    return [dict(zip([a.param for a in st], combo)) for combo in itertools.product(*[a.values for a in st])]
