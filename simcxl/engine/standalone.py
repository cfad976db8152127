"""The standalone engine: each call hands a whole system and workload to C++.

Every function returns a pandas DataFrame. ``df.attrs`` records what was
simulated (system, workload, engine version), so a figure can say where it
came from.
"""

from __future__ import annotations

import numbers
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, Union

import pandas as pd

from .. import _core
from ..config.groups import STORES
from ..config.params import MAP_KIND, ParamError, System
from ..config.targets import Target, parse_target, target_text
from ..config.units import parse_size
from ..config.presets import load
from ..topology.convert import core_graph

Memory = Union[str, Path, System]

Progress = Optional[Callable[[float], object]]

#: Where a request's latency goes, in the order of its path: the core's one stage list (kernel/txn.hpp).
STAGES = tuple(_core.STAGES)
KERNELS = ("copy", "scale", "add", "triad")

#: lat_mem_rd's working sets from 512 B to 1 GiB (the published testbed's list).
LMBENCH_SIZES = tuple(
    s for k in range(9, 31) for s in (1 << k, 3 << (k - 1)) if s <= 1 << 30 and s >= 512
)


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("simcxl")
    except Exception:
        return "dev"


def _targeted(df: pd.DataFrame, system: System, pairs, default: str = "") -> pd.DataFrame:
    """The ``target`` column: where the workload's pages went (address maps and explicit targets only, so
    a single-memory result keeps its columns)."""
    if pairs is not None or system.kind == MAP_KIND:
        df.insert(1, "target", target_text(pairs, system) if pairs is not None or not default else default)
    return df


def _target_cfg(system: System, pairs, default: str = "") -> dict:
    """The target in ``df.attrs["config"]``, for maps and explicit targets."""
    if pairs is None and system.kind != MAP_KIND:
        return {}
    return {"target": target_text(pairs, system) if pairs is not None or not default else default}


def _attrs(df: pd.DataFrame, system: System, workload: str, **cfg) -> pd.DataFrame:
    df.attrs.update({"source": "simulation", "engine": "standalone", "simcxl": _version(),
                     "memory": system.name, "kind": system.kind, "workload": workload, "config": cfg})
    return df


def _check_int(name: str, value, lo: int, hi: int) -> int:
    # Range before float(): an int beyond 1e308 does not convert.
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not lo <= value <= hi \
            or not float(value).is_integer():
        raise ParamError(f"{name} = {value!r} is out of range; allowed: a whole number from {lo} to {hi}")
    return int(value)


def _check_float(name: str, value, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not lo <= value <= hi:
        raise ParamError(f"{name} = {value!r} is out of range; allowed: {lo:g} to {hi:g}")
    return float(value)


def _nonempty(name: str, values: Iterable) -> list:
    """A list of the given values; a single string is one value, not its letters."""
    out = [values] if isinstance(values, str) else list(values)
    if not out:
        raise ParamError(f"{name} is empty; allowed: one or more values")
    return out


def usable_cpus() -> int:
    """The processors this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _points(run: Callable[[int], dict], costs: Sequence[int], workers: Optional[int], progress: Progress) -> list:
    """run(i) for every point i, each its own simulation, in threads (the core releases the GIL), the
    costliest first; the rows in point order. One thread while a trace or histogram sink records: it
    belongs to the calling thread, and records runs in their order."""
    n = len(costs)
    workers = _check_int("workers", usable_cpus() if workers is None else workers, 1, 1024)
    rows: list = [None] * n
    if workers == 1 or n == 1 or _core.recording():
        for i in range(n):
            rows[i] = run(i)
            if progress is not None:
                progress((i + 1) / n)
        return rows
    with ThreadPoolExecutor(max_workers=min(workers, n)) as pool:
        futures = {pool.submit(run, i): i for i in sorted(range(n), key=lambda i: -costs[i])}
        try:
            for done, f in enumerate(as_completed(futures), 1):
                rows[futures[f]] = f.result()
                if progress is not None:
                    progress(done / n)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return rows


def lmbench(memory: Memory, working_sets: Optional[Iterable[Union[int, str]]] = None, stride: int = 0,
            accesses: int = 20000, warmup: int = 0, progress: Progress = None,
            cache: Optional["_core.WarmCache"] = None,
            region: Optional[Union[int, str]] = None, target: Target = None,
            workers: Optional[int] = None) -> pd.DataFrame:
    """Dependent pointer chase (``lat_mem_rd``): load-to-use latency per working set.

    ``stride=0`` follows ``lat_mem_rd -t``: each working set is whole pages
    drawn at random from one buffer of ``region`` bytes (lat_mem_rd's ``len``,
    by default the largest working set), and the chain reads one line of
    every page, in a fixed page order, before it returns to a page. A
    positive stride walks the working set at that stride. A
    ``_core.WarmCache`` reuses warmed host caches across calls that share
    the host. ``target`` is where the pages lie (see ``stream``).
    Each working set is a simulation of its own: ``workers`` threads (default:
    the processors this process may use) run them side by side, with
    identical results.
    """
    system = load(memory)
    pairs = parse_target(target, system)
    ws = [parse_size(w, "working_sets") for w in
          (LMBENCH_SIZES if working_sets is None else _nonempty("working_sets", working_sets))]
    for w in ws:
        if not 64 <= w <= 1 << 40:
            raise ParamError(f"working_sets: {w} bytes is out of range; allowed: 64 to 1099511627776")
    stride = _check_int("stride", stride, 0, 1 << 30)
    accesses = _check_int("accesses", accesses, 1, 1 << 32)
    warmup = _check_int("warmup", warmup, 0, 1 << 40)
    region = max(ws) if region is None else parse_size(region, "region")
    if region < max(ws) or region > 1 << 40:
        raise ParamError(f"region = {region} is out of range; allowed: the largest working set "
                         f"({max(ws)}) to 1099511627776 bytes")
    core = core_graph(system)
    rows = _points(lambda i: _core.run_lmbench(core, ws, stride, accesses, warmup, i, cache, region, pairs),
                   ws, workers, progress)
    df = pd.DataFrame(rows)
    df["working_set_bytes"] = df["working_set_bytes"].astype("int64")
    df.insert(0, "memory", system.name)
    _targeted(df, system, pairs)
    return _attrs(df, system, "lmbench", stride=stride, accesses=accesses, warmup=warmup, region=region,
                  **_target_cfg(system, pairs))


PLACEMENTS = ("first-touch", "contiguous")
PATTERNS = ("random", "sequential")
ARRIVALS = ("periodic", "poisson")


def stream(memory: Memory, kernels: Sequence[str] = KERNELS, threads: Optional[int] = None,
           lines_per_thread: int = 8000, placement: str = "first-touch", stores: str = "write-allocate",
           progress: Progress = None, target: Target = None) -> pd.DataFrame:
    """STREAM kernels; ``stream_gbps`` counts bytes as STREAM does (no
    write-allocate), ``read_gbps``/``write_gbps`` are the real traffic.
    ``placement`` puts the arrays' pages where STREAM's initialisation loop
    faults them ("first-touch": a page of each array in turn, consecutive frames
    per thread, as Linux's per-CPU page lists give them) or each array in one
    piece ("contiguous"). ``stores`` says how the kernels' stores reach memory:
    "write-allocate" (each line is read for ownership and written back later)
    or "non-temporal" (full lines written without a read, as a binary built
    with streaming stores, or whose copy loop became memcpy, does).

    ``target`` is where the workload's pages lie in the host address map: a
    window's name, or a weighted interleave ``"ddr:3,cxl0:1"`` (or
    ``{"ddr": 3, "cxl0": 1}``) with Linux ``weighted_interleave`` semantics:
    virtual page n (pages of ``host.page_bytes``) goes to position n mod W of
    the sequence of w_1 pages of the first window, w_2 of the second, ...
    (W = sum of weights). None: the map's first window."""
    system = load(memory)
    pairs = parse_target(target, system)
    threads = _check_int("threads", threads if threads is not None else min(16, system.host.cores),
                         1, system.host.cores)
    if placement not in PLACEMENTS:
        raise ParamError(f"placement = {placement!r} is not allowed; allowed values: {', '.join(PLACEMENTS)}")
    if stores not in STORES:
        raise ParamError(f"stores = {stores!r} is not allowed; allowed values: {', '.join(STORES)}")
    kernels = _nonempty("kernels", kernels)
    lines_per_thread = _check_int("lines_per_thread", lines_per_thread, 100, 1 << 34)
    rows = []
    for i, k in enumerate(kernels):
        if k not in KERNELS:
            raise ParamError(f"kernel = {k!r} is not allowed; allowed values: {', '.join(KERNELS)}")
        sub = None if progress is None else (lambda f, i=i: progress((i + f) / len(kernels)))
        r = _core.run_stream(core_graph(system), k, threads, lines_per_thread, placement, stores, sub, pairs)
        rows.append({"kernel": k, **r})
    df = pd.DataFrame(rows)
    df.insert(0, "memory", system.name)
    _targeted(df, system, pairs)
    return _attrs(df, system, "stream", threads=threads, lines_per_thread=lines_per_thread, placement=placement,
                  stores=stores, **_target_cfg(system, pairs))


def _traffic_settings(pre: str, cores: int, threads=8, read_fraction=1.0, pattern="random", footprint_bytes=1 << 30,
                      requests=200000, rate_gbps=0.0, inject_delay_ns=0.0, probe=False, stores="non-temporal", ops="",
                      arrivals="periodic") -> dict:
    """Traffic's settings checked (on a host of ``cores`` cores), by name: each error names the
    setting after ``pre`` (a host's name and a dot, on several hosts)."""
    threads = _check_int(pre + "threads", threads, 1, cores)
    if pattern not in PATTERNS:
        raise ParamError(f"{pre}pattern = {pattern!r} is not allowed; allowed values: {', '.join(PATTERNS)}")
    footprint = parse_size(footprint_bytes, pre + "footprint_bytes")
    if not 64 * threads <= footprint <= 1 << 44:
        raise ParamError(f"{pre}footprint_bytes = {footprint} is out of range; allowed: 64 x threads "
                         f"({64 * threads}) to 17592186044416")
    if not isinstance(probe, bool):
        raise ParamError(f"{pre}probe = {probe!r} is not allowed; allowed values: True, False")
    if stores not in STORES:
        raise ParamError(f"{pre}stores = {stores!r} is not allowed; allowed values: {', '.join(STORES)}")
    if not isinstance(ops, str) or len(ops) > 64 or set(ops) - set("LS"):
        raise ParamError(f"{pre}ops = {ops!r} is not allowed; allowed: up to 64 letters L (load) and S (store)")
    if arrivals not in ARRIVALS:
        raise ParamError(f"{pre}arrivals = {arrivals!r} is not allowed; allowed values: {', '.join(ARRIVALS)}")
    return {"threads": threads, "pattern": pattern, "footprint_bytes": footprint, "probe": probe, "stores": stores,
            "ops": ops, "arrivals": arrivals,
            "read_fraction": _check_float(pre + "read_fraction", read_fraction,
                                          0.5 if stores == "write-allocate" and not ops else 0, 1),
            "requests": _check_int(pre + "requests", requests, 100, 1 << 40),
            "rate_gbps": _check_float(pre + "rate_gbps", rate_gbps, 0, 10000),
            "inject_delay_ns": _check_float(pre + "inject_delay_ns", inject_delay_ns, 0, 1e6)}


def traffic(memory: Memory, threads: int = 8, read_fraction: float = 1.0, pattern: str = "random",
            footprint_bytes: Union[int, str] = 1 << 30, requests: int = 200000, rate_gbps: float = 0.0,
            inject_delay_ns: float = 0.0, probe: bool = False, progress: Progress = None,
            target: Target = None, stores: str = "non-temporal", ops: str = "",
            arrivals: str = "periodic") -> pd.DataFrame:
    """Random or sequential line requests from ``threads`` cores, closed loop
    (as fast as their MSHRs allow, or with a pause between requests) or open
    loop at ``rate_gbps``. ``stores``: "non-temporal" (a full-line write, no
    read) or "write-allocate" (a read for ownership, then the write-back of the
    line it evicts); ``read_fraction`` counts memory traffic, so with
    write-allocate it is 0.5 (stores only) to 1. ``ops``: a fixed cycle of
    loads (L) and stores (S) per thread instead of random draws (see
    ``simcxl.engine.mlc``). ``arrivals`` (open loop): "periodic", each thread at a
    fixed interval, or "poisson", exponential gaps of the same mean, so that
    all threads together are a Poisson stream. ``target``: see ``stream``."""
    system = load(memory)
    pairs = parse_target(target, system)
    c = _traffic_settings("", system.host.cores, threads, read_fraction, pattern, footprint_bytes, requests,
                          rate_gbps, inject_delay_ns, probe, stores, ops, arrivals)
    r = _core.run_traffic(core_graph(system), c["threads"], c["read_fraction"], pattern, c["footprint_bytes"],
                          c["requests"], c["rate_gbps"], c["inject_delay_ns"], probe, progress, pairs, stores, ops,
                          arrivals)
    df = pd.DataFrame([r])
    df.insert(0, "memory", system.name)
    _targeted(df, system, pairs)
    return _attrs(df, system, "traffic", threads=threads, read_fraction=read_fraction, pattern=pattern,
                  rate_gbps=rate_gbps, arrivals=arrivals, inject_delay_ns=inject_delay_ns, requests=requests,
                  stores=stores, ops=ops,
                  **_target_cfg(system, pairs))


#: What each host of a run on several hosts may set: ``traffic``'s own settings.
HOST_SETTINGS = ("threads", "read_fraction", "pattern", "footprint_bytes", "requests", "rate_gbps", "inject_delay_ns",
                 "probe", "target", "stores", "ops", "arrivals", "follow_extents")


class _HostMap:
    """One host's windows, as ``parse_target`` asks for them."""

    def __init__(self, graph, host: str):
        self._names = [k.b.comp for k in graph.down(host, "mem")]

    def window_names(self):
        return self._names


def host_names(memory: Memory) -> list:
    """The hosts of a system, in the order of its components (a preset has one, ``host``)."""
    system = load(memory)
    graph = getattr(system, "graph", None)
    return [c.name for c in graph.of_type("host")] if graph is not None else ["host"]


def _run_result(key: str, pre: str) -> bool:
    """A host run's own result (<host>.read_gbps), not the host component's stats (<host>.window.*)."""
    return key.startswith(pre) and not key.startswith(pre + "window.")


def hosts(memory: Memory, runs: Optional[dict] = None, progress: Progress = None, fm=None, **common) -> pd.DataFrame:
    """Traffic on several hosts of one system at once: a topology whose hosts share switches and
    multi-logical devices. ``runs`` maps host names to their own settings, over ``common`` ones (any of
    ``HOST_SETTINGS``, as ``traffic`` takes them); None: every host with ``common``. The first host listed
    paces the measurement window (10 % to 90 % of its ``requests``); the others issue throughout it. One row
    per host: its bandwidth and read (and probe) latency over that window; ``df.attrs["components"]``: every
    component's counters over it, each ``<component>.<stat>`` (docs/reference/stats.md). A host with
    ``follow_extents=True`` sends every access to a line its dynamic-capacity LD holds at the time, so its
    memory grows and shrinks with the fabric manager's extents. ``fm``: a
    :class:`simcxl.workloads.fabric.FabricManager` whose dynamic-capacity commands run during it
    (``df.attrs["fm_events"]``: each step's time)."""
    system = load(memory)
    names = host_names(system)
    if runs is None:
        runs = {n: {} for n in names}
    if not isinstance(runs, dict) or not runs:
        raise ParamError(f"runs = {runs!r} is not allowed; allowed: a dict of host name -> settings (hosts: "
                         f"{', '.join(names)})")
    specs = []
    for name, own in runs.items():
        if name not in names:
            raise ParamError(f"runs: {name!r} is not a host of {system.name}; allowed: {', '.join(names)}")
        cfg = {**common, **(own or {})}
        bad = sorted(set(cfg) - set(HOST_SETTINGS))
        if bad:
            raise ParamError(f"{name}.{bad[0]} is not a traffic setting; allowed: {', '.join(HOST_SETTINGS)}")
        graph = getattr(system, "graph", None)
        cores = graph.components[name].group("").cores if graph is not None else system.host.cores
        target = cfg.pop("target", None)
        follow = cfg.pop("follow_extents", False)
        if not isinstance(follow, bool):
            raise ParamError(f"{name}.follow_extents = {follow!r} is not allowed; allowed values: True, False")
        spec = {"host": name, **_traffic_settings(name + ".", cores, **cfg), "follow_extents": follow}
        if target is not None:
            spec["target"] = parse_target(target, _HostMap(graph, name) if graph is not None else system,
                                          f"{name}.target")
        specs.append(spec)
    r = _core.run_hosts(core_graph(system), specs, progress, fm.commands(system) if fm is not None else [])
    rows = []
    for name in runs:
        pre = name + "."
        rows.append({"host": name, **{k[len(pre):]: v for k, v in r.items() if _run_result(k, pre)}})
    df = pd.DataFrame(rows)
    df.insert(0, "memory", system.name)
    df["window_ns"], df["window_start_ns"] = r["window_ns"], r["window_start_ns"]
    df.attrs["components"] = {k: v for k, v in r.items()
                              if k not in ("window_ns", "window_start_ns") and not any(_run_result(k, n + ".") for n in runs)}
    if fm is not None:
        df.attrs["fm_events"] = fm.events()
    return _attrs(df, system, "hosts", runs={n: {**common, **(o or {})} for n, o in runs.items()})


def loaded_latency(memory: Memory, threads: Iterable[int] = (1, 2, 4, 8, 16), read_fractions: Iterable[float] = (1.0,),
                   requests: int = 100000, inject_delay_ns: Union[float, Iterable[float]] = 0.0,
                   progress: Progress = None, target: Target = None, modes: Optional[Iterable[str]] = None,
                   stores: str = "non-temporal", pattern: str = "random") -> pd.DataFrame:
    """Intel MLC-style loaded latency: traffic threads plus a dependent-load
    probe. ``latency_ns`` is the probe's mean latency and ``bandwidth_gbps``
    all traffic, both directions. The traffic is either ``modes``, MLC's own
    (``R``, ``W2``...``W9``, ``W12``...``W17``: see ``simcxl.engine.mlc``; each sets
    its read fraction and its kind of store), or ``read_fractions`` of memory
    traffic with ``stores`` ("non-temporal", or "write-allocate": a store reads
    its line for ownership and writes back the line it evicts). ``pattern``:
    random or sequential lines (MLC's default is sequential, its -U random).
    ``inject_delay_ns``: one pause between a thread's accesses, or a list to
    sweep (MLC's -d; ``simcxl.engine.mlc.MLC_DELAYS`` is MLC's default sweep).
    ``target``: see ``stream`` (the probe's pages lie there too)."""
    from . import mlc
    system = load(memory)
    pairs = parse_target(target, system)
    delays = [inject_delay_ns] if isinstance(inject_delay_ns, numbers.Real) else _nonempty("inject_delay_ns",
                                                                                            inject_delay_ns)
    if modes is not None:
        traffic_modes = [mlc.mode(m) for m in _nonempty("modes", modes)]
        kinds = [(m.name, m.read_fraction, m.stores, m.ops) for m in traffic_modes]
    else:
        if stores not in STORES:
            raise ParamError(f"stores = {stores!r} is not allowed; allowed values: {', '.join(STORES)}")
        kinds = [("R" if rf == 1 else "mix", rf, stores, "") for rf in _nonempty("read_fractions", read_fractions)]
    points = [(t, k, d) for k in kinds for d in delays for t in _nonempty("threads", threads)]
    rows = []
    for i, (t, (name, rf, st, ops), d) in enumerate(points):
        sub = None if progress is None else (lambda f, i=i: progress((i + f) / len(points)))
        df = traffic(system, threads=t, read_fraction=rf, requests=requests, inject_delay_ns=d, probe=True,
                     progress=sub, target=target, stores=st, ops=ops, pattern=pattern)
        row = df.iloc[0].to_dict()
        row["bandwidth_gbps"] = row["total_gbps"]
        row["latency_ns"] = row["probe_latency_ns_mean"]
        row.update(mode=name, stores=st, delay_ns=float(d))
        rows.append(row)
    out = pd.DataFrame(rows)
    lead = ["memory"] + (["target"] if "target" in out.columns else []) + \
        ["threads", "read_fraction", "bandwidth_gbps", "latency_ns", "mode", "stores", "delay_ns"]
    out = out[lead + [c for c in out.columns if c not in lead]]
    out["threads"] = out["threads"].astype("int64")
    return _attrs(out, system, "loaded-latency", requests=requests, inject_delay_ns=delays[0] if len(delays) == 1
                  else delays, pattern=pattern, **_target_cfg(system, pairs))


def trace(memory: Memory, path: Union[str, Path], max_outstanding: int = 64,
          progress: Progress = None, target: Target = None) -> pd.DataFrame:
    """Replays a memory trace: lines ``time_ns op address [size]`` (docs/reference/workloads.md).
    With no ``target`` the addresses are host physical addresses, routed by
    the address map (one outside every window is an error); with one they
    are virtual, placed in the target's windows as ``stream`` places pages."""
    system = load(memory)
    pairs = parse_target(target, system)
    if not os.path.isfile(path):
        raise ParamError(f"trace file {path} " + ("is not a file; expected a trace file" if os.path.exists(path)
                                                  else "does not exist") + "; allowed: a text file of lines 'time_ns op address [size]'")
    r = _core.run_trace(core_graph(system), str(path), _check_int("max_outstanding", max_outstanding, 1, 65536),
                        progress, pairs)
    df = pd.DataFrame([r])
    df.insert(0, "memory", system.name)
    _targeted(df, system, pairs, default="physical")
    return _attrs(df, system, "trace", path=str(path), max_outstanding=max_outstanding,
                  **_target_cfg(system, pairs, "physical"))


def breakdown(df: pd.DataFrame, prefix: str = "memory") -> pd.DataFrame:
    """Mean time per stage of a request, one row per (result row, stage).

    ``prefix`` is ``memory`` for lmbench, ``read`` for the traffic workloads
    and ``probe`` for the loaded-latency probe."""
    cols = [f"{prefix}.stage.{s}_ns" for s in STAGES]
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ParamError(f"no {prefix} latency breakdown in this result")
    keys = [c for c in ("memory", "working_set_bytes", "kernel", "threads", "read_fraction") if c in df.columns]
    long = df[keys + cols].melt(id_vars=keys, var_name="stage", value_name="ns")
    long["stage"] = long["stage"].str.slice(len(prefix) + 7, -3)
    return long


def bench(requests: int = 2_000_000, memory: Memory = "cxl-asic", threads: int = 16) -> dict:
    """Fixed Type-3 random-read workload (16 cores keeping their MSHRs full,
    enough to saturate the expander); simulated requests per wall second."""
    system = load(memory)
    requests = _check_int("requests", requests, 1000, 1 << 40)
    threads = _check_int("threads", threads, 1, system.host.cores)
    t0 = time.perf_counter()
    r = _core.run_traffic(core_graph(system), threads, 1.0, "random", 1 << 34, requests, 0.0, 0.0, False, None)
    wall = time.perf_counter() - t0
    # The run stops once 90% of the requests completed (the measurement window).
    done = int(requests - requests // 10)
    return {"workload": f"{system.name} random 64 B reads, {threads} threads x "
                        f"{system.host.mshrs_per_core} outstanding",
            "simulated_requests": done, "wall_seconds": wall, "requests_per_second": done / wall,
            "simulated_bandwidth_gbps": r["read_gbps"], "read_latency_ns_mean": r["read_latency_ns_mean"]}
