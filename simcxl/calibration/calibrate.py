"""Calibration: simulate a testbed's experiments, fit a few physically
meaningful parameters per memory within physical bounds, and report how well
the model matches on the points it fitted and on the points it did not.

The experiments are defined by the testbed alone; an engine runs them. The
standalone engine is the default; the gem5 engine plugs in the same way.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import datetime as dt
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..engine import standalone
from ..config import presets
from .consistency import consistency, err_pct
from .fitsearch import fit_integer, fit_real
from ..config.params import ParamError, System
from .report import FitResult, atomic_write, report, summarize, write_preset
from .testbed import Memory, Point, Testbed
from .testbed import load as load_testbed

LMBENCH_ACCESSES = 3000
WARM_CAPACITY = 256
STREAM_THREADS = 16


@dataclass(frozen=True)
class Knob:
    """A free parameter: one or more dotted parameters set to the same value,
    searched within a physically plausible range."""
    role: str                 # "latency" (the memory plateau), "bandwidth" (STREAM copy), "writes" (writes only)
    params: Tuple[str, ...]
    lo: float
    hi: float
    integer: bool
    why: str
    # Values tried in turn, each with the other knobs refitted, while the
    # other knobs of its role miss their target (the first value otherwise).
    fallback: Tuple[int, ...] = ()


# What each kind of memory leaves free, and why the range is plausible.
KNOBS: Dict[str, Tuple[Knob, ...]] = {
    "local-dram": (
        Knob("latency", ("host.uncore_req_latency_ns", "host.uncore_resp_latency_ns"), 0.0, 40.0, False,
             "mesh and home-agent latency each way between the LLC and a memory controller: a few to a few tens "
             "of ns on server meshes (Intel MLC idle-latency breakdowns)"),
        Knob("bandwidth", ("local_dram.read_queue", "local_dram.write_queue"), 16, 256, True,
             "read/write queue entries per DDR channel: 16 to 256 in server memory controllers"),
    ),
    "remote-numa": (
        Knob("latency", ("remote.link.latency_ns",), 10.0, 120.0, False,
             "one-way inter-socket latency including the remote home agent: UPI hops cost 30 to 80 ns"),
        Knob("bandwidth", ("remote.link.max_outstanding",), 16, 512, True,
             "requests the remote home agent tracks for one socket: tens to hundreds of entries"),
    ),
    "cxl-type3": (
        Knob("latency", ("cxl.device.req_latency_ns",), 5.0, 250.0, False,
             "device ingress pipeline (PHY, ARB/MUX, link and transaction layers, controller): 15 ns in fast "
             "ASICs to 60-200 ns in FPGA soft logic (CXL-DMSim Table III; CXL 2.0 spec's 80 ns target "
             "covers the whole device)"),
        Knob("bandwidth", ("cxl.device.req_queue",), 8, 512, True,
             "transactions a Type-3 controller holds at once: tens to a few hundred"),
        Knob("writes", ("cxl.device.write_tracker",), 4, 48, True,
             "writes a Type-3 controller holds at once (its write data buffer), within its transaction queue: "
             "a few to a few tens of entries"),
        Knob("bandwidth", ("cxl.media.ranks",), 1, 4, True,
             "ranks per media channel: DDR4/DDR5 DIMMs have one, two or four, and a testbed's description rarely "
             "says which; more ranks give a bank-bound media more banks to spread rows over",
             fallback=(1, 2, 4)),
    ),
}

DEFAULT_BASE = {"local-dram": "ddr-local", "remote-numa": "ddr-remote", "cxl-type3": "cxl-asic"}

# A memory given as a topology file fits one value, the latency of every switch in it: the one
# thing an idle latency through a switched path pins once the rest of the path is given.
SWITCH_KNOB = (0.0, 1000.0, "port-to-port traversal of a switch, each way: tens to a few hundred ns (the schema's "
               "100 ns is CXL-DMSim's fit to XConn XC50256 data); with no measurement of the same host without the "
               "switch it also takes up what the testbed's host, links and devices add or save against the "
               "topology's presets")

# MLC's idle latency, simulated: the dependent-load probe beside one thread that pauses this long
# between its loads, so that the memory is all but idle (well under 1 GB/s), over this many loads.
IDLE_PAUSE_NS = 10000.0
IDLE_REQUESTS = 2000


class Gem5Missing(ParamError):
    pass


# ------------------------------------------------------------------ engines

class StandaloneEngine:
    name = "standalone"
    fit_rtol = 1e-3  # a real knob's fit stops this close to its target (relative)

    def __init__(self, cache=None, region: Optional[int] = None):
        # The host's cache geometry is the same in every evaluation of a fit
        # and for every memory of a testbed: walk its caches once per working set.
        self.cache = cache if cache is not None else standalone._core.WarmCache(WARM_CAPACITY)
        # lat_mem_rd's buffer (see lmbench_region); None: the largest size of each call.
        self.region = region

    def lmbench(self, system: System, sizes: Sequence[int]) -> List[float]:
        region = max(max(sizes), self.region or 0)
        df = standalone.lmbench(system, list(sizes), accesses=LMBENCH_ACCESSES, cache=self.cache, region=region)
        return list(df["latency_ns"])

    def stream(self, system: System, kernels: Sequence[str], threads: int,
               stores: str = "write-allocate") -> List[float]:
        df = standalone.stream(system, list(kernels), threads=threads, stores=stores)
        return list(df["stream_gbps"])

    def loaded_latency(self, system: System, threads: int, read_fraction: float, stores: str = "non-temporal",
                       pattern: str = "random") -> Tuple[float, float]:
        """MLC's loaded latency: the probe's mean latency (ns) and all traffic (GB/s)."""
        df = standalone.loaded_latency(system, threads=(threads,), read_fractions=(read_fraction,), requests=60000,
                                       stores=stores, pattern=pattern)
        return float(df["latency_ns"].iloc[0]), float(df["bandwidth_gbps"].iloc[0])

    def idle_latency(self, system: System) -> float:
        """MLC's idle latency: the probe's mean latency (ns) on an all but idle memory."""
        df = standalone.traffic(system, threads=1, read_fraction=1.0, requests=IDLE_REQUESTS,
                                inject_delay_ns=IDLE_PAUSE_NS, probe=True)
        return float(df["probe_latency_ns_mean"].iloc[0])


def get_engine(name: str, cache=None, region: Optional[int] = None, runs: Optional[Path] = None):
    if name == "standalone":
        return StandaloneEngine(cache, region)
    if name == "gem5":
        from ..gem5 import engine as gem5_engine

        binary = os.environ.get("GEM5")
        if not binary or not os.path.isfile(binary):
            raise Gem5Missing("--engine gem5 needs a gem5 binary built with this repository as EXTRAS, named by "
                              "the GEM5 environment variable (docs/tutorials/gem5.md says how to build one); GEM5 is "
                              + ("not set" if not binary else f"{binary!r}, which does not exist"))
        return gem5_engine.Gem5Engine(binary, runs or Path("gem5-runs"), accesses=LMBENCH_ACCESSES)
    raise ParamError(f"--engine {name!r} is not an engine; allowed: standalone, gem5")


def check_gem5(tb: Testbed, names: Sequence[str]) -> None:
    """What the gem5 engine needs of a testbed, checked before any fitting:
    an X86 build for lat_mem_rd (a guest runs it), and cxl-type3 memories
    only (SimCXL's SimObjects are the CXL memory; the host is gem5's board)."""
    from ..gem5 import engine as gem5_engine

    graphs = [n for n in names if tb.memories[n].topology is not None or tb.points_of(n, "idle_latency")]
    if graphs:
        raise ParamError(f"--engine gem5: {', '.join(graphs)} {'is' if len(graphs) == 1 else 'are'} a topology file or "
                         "has idle_latency points; switches and idle latency run in the standalone engine only "
                         "(docs/topology.md); choose --memories without them")
    other = [n for n in names if tb.memories[n].kind != "cxl-type3"]
    if other:
        raise ParamError(f"--engine gem5 calibrates cxl-type3 memories, the ones SimCXL's SimObjects model; "
                         f"{', '.join(other)} {'is' if len(other) == 1 else 'are'} not: choose --memories from "
                         f"{', '.join(n for n in names if n not in other) or '(none in this testbed)'}")
    if any(tb.points_of(n, "loaded_latency") or tb.points_of(n, "loaded_bandwidth") for n in names):
        raise ParamError(f"--engine gem5: {gem5_engine.LOADED_LATENCY_MISSING}")
    if any(tb.points_of(n, "lat_mem_rd") for n in names) and "X86" not in gem5_engine.isas(os.environ["GEM5"]):
        raise ParamError(f"--engine gem5: lat_mem_rd runs a guest on an X86 core, and GEM5 = {os.environ['GEM5']!r} "
                         "has no X86 ISA; build build/X86/gem5.opt with this repository as EXTRAS")


# ------------------------------------------------------------------ helpers

def base_system(mem: Memory) -> System:
    """The preset a memory starts from: its own `base`, a preset of the same
    name and kind, or the default preset of its kind; then the testbed's link.
    A memory given as a topology file is that file's system, with its params."""
    if mem.topology is not None:
        from .. import topology
        t = topology.load(mem.topology)
        s = topology.memory_system(t.replace(**mem.params) if mem.params else t)
        if s.kind != mem.kind:
            raise ParamError(f"memory {mem.name}: topology {mem.topology.name} is a {s.kind} system, not a {mem.kind}")
        s.name = mem.name
        return s
    name = mem.base
    if name is None and mem.name in presets.names() and presets.load(mem.name).kind == mem.kind:
        name = mem.name
    s = presets.load(name or DEFAULT_BASE[mem.kind])
    if s.kind != mem.kind:
        raise ParamError(f"memory {mem.name}: base preset {name} is a {s.kind}, not a {mem.kind}")
    over = dict(mem.params)
    if mem.kind == "cxl-type3":
        over.update({f"cxl.link.{k}": v for k, v in mem.link.items()})
    s = s.replace(**over) if over else copy.deepcopy(s)
    s.name = mem.name
    return s


def set_knob(s: System, knob: Knob, value: float) -> System:
    v = int(round(value)) if knob.integer else float(value)
    return _replace(s, {p: v for p in knob.params})


def _replace(s: System, over: Dict[str, float]) -> System:
    """The system with dotted parameters changed: a preset's names, or a topology's
    (``sw0.latency_ns``) for a system built from one."""
    if s.graph is None:
        return s.replace(**over)
    from .. import topology
    new = topology.memory_system(s.graph.replace(**over))
    new.name = s.name
    return new


def _get(s: System, path: str) -> float:
    return float((s.graph if s.graph is not None else s).get(path))


def knobs_of(mem: Memory, system: System) -> Tuple[Knob, ...]:
    """A memory's free parameters: its kind's (KNOBS), or for a topology file every switch's
    latency, one value (SWITCH_KNOB)."""
    if mem.topology is None:
        return KNOBS[mem.kind]
    lat = tuple(f"{c.name}.latency_ns" for c in system.graph.of_type("switch"))
    return (Knob("latency", lat, SWITCH_KNOB[0], SWITCH_KNOB[1], False, SWITCH_KNOB[2]),) if lat else ()


def fit_points(tb: Testbed, memory: str) -> List[Point]:
    """The points a memory's knobs fit: those its testbed declares (`fit`),
    per role; for a role it leaves out, the default: the largest lat_mem_rd
    working set (else the first idle latency), STREAM copy, and with neither
    of those, the loaded-latency point with the fewest threads. A memory that
    takes another's values (knobs_from) fits none."""
    declared = tb.memories[memory].fit
    if tb.memories[memory].knobs_from is not None:
        return []
    out = []
    latency = ("lat_mem_rd", "loaded_latency", "idle_latency")
    if any(k in declared for k in latency):
        out += [p for p in (declared.get(k) for k in latency) if p is not None]
    else:
        lat = tb.points_of(memory, "lat_mem_rd")
        if lat:
            out.append(max(lat, key=lambda p: p.x))
        elif tb.points_of(memory, "idle_latency"):
            out.append(tb.points_of(memory, "idle_latency")[0])
    if "stream" in declared or "loaded_bandwidth" in declared:
        out += [p for p in (declared.get("stream"), declared.get("loaded_bandwidth")) if p is not None]
    else:
        st = [p for p in tb.points_of(memory, "stream") if p.x == "copy"]
        if st:
            out.append(st[0])
    if not out and not declared:
        ll = tb.points_of(memory, "loaded_latency")
        if ll:
            out.append(min(ll, key=lambda p: p.x["threads"]))
    return out


def simulate(eng, system: System, points: Sequence[Point]) -> List[float]:
    """The simulated value of each point, batching what one run can share."""
    out: Dict[int, float] = {}
    idle = [i for i, p in enumerate(points) if p.experiment == "idle_latency"]
    if idle:  # every tool's idle latency is the same run
        v = eng.idle_latency(system)
        out.update((i, v) for i in idle)
    lat = [(i, p) for i, p in enumerate(points) if p.experiment == "lat_mem_rd"]
    if lat:
        for (i, _), v in zip(lat, eng.lmbench(system, [p.x for _, p in lat])):
            out[i] = v
    runs: Dict[Tuple[int, str], List[Tuple[int, Point]]] = {}
    for i, p in enumerate(points):
        if p.experiment == "stream":
            runs.setdefault((p.threads or STREAM_THREADS, p.stores), []).append((i, p))
    for (threads, stores), items in runs.items():
        for (i, _), v in zip(items, eng.stream(system, [p.x for _, p in items], min(threads, system.host.cores),
                                               stores)):
            out[i] = v
    # A row's latency and bandwidth come from one run of its traffic.
    loaded: Dict[Tuple, Tuple[float, float]] = {}
    for i, p in enumerate(points):
        if p.experiment in ("loaded_latency", "loaded_bandwidth"):
            x = p.x
            key = (x["threads"], x["read_fraction"], x.get("stores", "non-temporal"), x.get("pattern", "random"))
            if key not in loaded:
                loaded[key] = eng.loaded_latency(system, *key)
            out[i] = loaded[key][0 if p.experiment == "loaded_latency" else 1]
    return [out[i] for i in range(len(points))]


# ------------------------------------------------------------------ fitting

def fit_memory(eng, tb: Testbed, mem: Memory, start: System, log: Callable[[str], None],
               fit_host: bool) -> Tuple[System, Dict[str, float], List[str]]:
    """Fits the knobs of one memory to its fit points, in order: latency
    (idle plateau), then bandwidth (which depends on latency by Little's law);
    then, if a role missed its point, again with each value of its fallback."""
    s = base = start
    fitted: Dict[str, float] = {}
    notes: List[str] = []
    pts = fit_points(tb, mem.name)
    if not pts:
        notes.append(f"{mem.name}: no point to fit; parameters kept from the base preset")
        return s, fitted, notes
    knobs = knobs_of(mem, start)
    if mem.kind == "local-dram" and not fit_host:
        return s, fitted, notes
    plain = [k for k in knobs if not k.fallback]
    roles = {_role(p) for p in pts}
    # The latency fit runs with the bandwidth knobs it will fit at their upper
    # bounds, not at the base preset's values: one outstanding load never fills
    # a queue, and so the runs (kept by the gem5 engine) stay the same when a
    # recalibrated preset changes them.
    for k in plain:
        if k.role == "bandwidth" and k.role in roles and "latency" in roles:
            start = set_knob(start, k, k.hi)
    # A fallback knob takes the fewest of its values that reaches the target;
    # a testbed that states the value (its memory's params) keeps it.
    extras = [k for k in knobs if k.fallback and k.role in roles and not set(k.params) & set(mem.params)]
    for k in extras:
        start = set_knob(start, k, k.fallback[0])
    s, fitted, missed = _fit_knobs(eng, start, plain, pts, log, mem.name, base)
    for extra in extras:
        fitted.update({p: extra.fallback[0] for p in extra.params})
        if extra.role not in missed:
            continue
        for v in extra.fallback[1:]:
            # Every knob is refitted, latency first: the media shifts it too.
            log(f"  {mem.name}: {extra.params[0]} = {v}")
            s2, fitted2, missed2 = _fit_knobs(eng, set_knob(start, extra, v), plain, pts, log, mem.name, base)
            if extra.role not in missed2:
                why = missed[extra.role].split(": ", 1)[1]
                log(f"  {mem.name}: with {extra.params[0]} = {extra.fallback[0]}, {why}; with {v} ({extra.why}) "
                    "the fit reaches it")
                s, fitted, missed = s2, {**fitted2, **{p: v for p in extra.params}}, missed2
                break
        else:
            missed[extra.role] += (f"; {extra.params[0]} = {', '.join(map(str, extra.fallback[1:]))} "
                                   "do not reach it either")
    return s, fitted, notes + list(missed.values())


def _role(p: Point) -> str:
    """Which knobs a fit point is for: STREAM and loaded bandwidth set bandwidth (loaded bandwidth of
    writes alone the write path's), the rest latency."""
    if p.experiment == "loaded_bandwidth" and isinstance(p.x, dict) and p.x.get("read_fraction") == 0:
        return "writes"
    return "bandwidth" if p.experiment in ("stream", "loaded_bandwidth") else "latency"


def _fit_knobs(eng, s: System, knobs: Sequence[Knob], pts: Sequence[Point], log: Callable[[str], None],
               name: str, base: System) -> Tuple[System, Dict[str, float], Dict[str, str]]:
    """Fits each knob in order to the first point of its role, starting from
    its value in `base`: the system, the fitted values, and per role a note on
    the target it missed."""
    fitted: Dict[str, float] = {}
    missed: Dict[str, str] = {}
    for knob in knobs:
        want = [p for p in pts if _role(p) == knob.role]
        if not want:
            continue
        target = want[0]
        value, err = _fit_knob(eng, s, knob, target, log, name, _get(base, knob.params[0]))
        s = set_knob(s, knob, value)
        for p in knob.params:
            fitted[p] = value
        if abs(err) > 2:
            where = (f"stopped at its physical bound {value}" if value in (knob.lo, knob.hi)
                     else f"is best at {value}, where the simulated value stops moving towards the target")
            missed[knob.role] = (f"{name}: cannot reach {target.experiment} {target.x} = {target.measured:g}: "
                                 f"{knob.params[0]} {where} ({knob.why}); simulated "
                                 f"{target.measured * (1 + err / 100):.4g} ({err:+.1f} %)")
    return s, fitted, missed


def _fit_knob(eng, s: System, knob: Knob, target: Point, log: Callable[[str], None],
              name: str, x0: float) -> Tuple[float, float]:
    """The knob's best value for one target, and the error there (%)."""
    def f(v: float) -> float:
        # At the precision the preset keeps, so the final check repeats a run (free on gem5's kept runs).
        v = int(round(v)) if knob.integer else round(float(v), 3)
        sim = simulate(eng, set_knob(s, knob, v), [target])[0]
        if v not in tried:
            tried.add(v)
            log(f"    {name}: {knob.params[0]} = {v:g}: {sim:.4g} ({err_pct(sim, target.measured):+.2f} %)")
        return sim - target.measured

    tried: set = set()

    log(f"  {name}: fitting {knob.params[0]} to {target.experiment} {target.x} = {target.measured:g}")
    if knob.integer:
        best = fit_integer(f, int(knob.lo), int(knob.hi), x0)
    else:
        best = fit_real(f, knob.lo, knob.hi, abs(target.measured) * eng.fit_rtol, x0)
    value = int(round(best)) if knob.integer else round(float(best), 3)
    return value, err_pct(f(value) + target.measured, target.measured)


# ------------------------------------------------------------------ the whole run

def lmbench_region(tb) -> Optional[int]:
    """The buffer lat_mem_rd drew its pages from: one run measures every size
    up to its `len` argument inside one allocation of `len` bytes, so the
    largest working set measured on the testbed (None without lat_mem_rd)."""
    sizes = [p.x for n in tb.memories for p in tb.points_of(n, "lat_mem_rd")]
    return max(sizes) if sizes else None


def _warm_worker(args):
    system, sizes, region = args
    eng = StandaloneEngine(region=region)
    eng.lmbench(system, sizes)
    return eng.cache


def warm_lmbench(system: System, sizes: Sequence[int], workers: int, region: Optional[int] = None):
    """The cache outcomes of every lat_mem_rd working set, walked once for
    the whole testbed (they depend on the host's cache geometry alone) and
    spread over the workers, largest sets first."""
    cache = standalone._core.WarmCache(WARM_CAPACITY)
    sizes = sorted(set(sizes), reverse=True)
    if not sizes:
        return cache
    groups: List[List[int]] = [[] for _ in range(max(1, min(workers, len(sizes))))]
    load = [0] * len(groups)
    for z in sizes:  # greedy: the cost of a set grows with its size
        i = load.index(min(load))
        groups[i].append(z)
        load[i] += max(z, 1 << 26)
    if len(groups) == 1:
        return _warm_worker((system, groups[0], region))
    with cf.ProcessPoolExecutor(max_workers=len(groups), initializer=_quiet_worker) as pool:
        for part in pool.map(_warm_worker, [(system, g, region) for g in groups]):
            cache.update(part)
    return cache


def _quiet_worker() -> None:
    # Ctrl-C reaches the workers too: they leave at once, without a traceback
    # each, and the parent says what was kept.
    signal.signal(signal.SIGINT, lambda *_: os._exit(130))


def _fit_and_validate(args) -> FitResult:
    tb, mem_name, start, engine_name, fit_host = args[:5]
    done: Optional[Tuple[Dict[str, float], List[str]]] = args[5] if len(args) > 5 else None
    warm = args[6] if len(args) > 6 else None
    runs = args[7] if len(args) > 7 else None
    eng = get_engine(engine_name, warm, lmbench_region(tb), runs)
    mem = tb.memories[mem_name]
    lines: List[str] = []
    # A gem5 run takes minutes: its fit's steps are shown as they come, not when the memory is done.
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if engine_name == "gem5" else lines.append
    if done is None:
        s, fitted, notes = fit_memory(eng, tb, mem, start, log, fit_host)
    else:  # fitted already (the host side): validate only
        s, (fitted, notes) = start, done
    pts = tb.points_of(mem_name)
    fit_ids = {id(p) for p in fit_points(tb, mem_name)}
    sims = simulate(eng, s, pts)
    rows = []
    for p, v in zip(pts, sims):
        x = p.x if not isinstance(p.x, dict) else json.dumps(p.x, sort_keys=True)
        rows.append({"memory": mem_name, "experiment": p.experiment, "x": x, "measured": p.measured,
                     "simulated": v, "error_pct": err_pct(v, p.measured),
                     "role": "fit" if id(p) in fit_ids else "validation", "source": p.where,
                     **({"stores": p.stores} if p.experiment == "stream" else {}),
                     **({"threads": p.threads} if p.experiment == "stream" and p.threads else {})})
    return FitResult(mem_name, s, fitted, lines + notes, rows)


def run(testbed_dir, out_dir, memories: Optional[Sequence[str]] = None, engine_name: str = "standalone",
        json_path: Optional[str] = None, log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
        workers: Optional[int] = None) -> dict:
    tb = load_testbed(testbed_dir)
    out = Path(out_dir)
    runs = out / "gem5-runs"
    get_engine(engine_name, runs=runs)  # fail before any work
    names = list(memories) if memories else list(tb.memories)
    for n in names:
        if n not in tb.memories:
            raise ParamError(f"--memories: {n!r} is not a memory of testbed {tb.name}; "
                             f"allowed: {', '.join(tb.memories)}")
    try:
        (out / "presets").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ParamError(f"--out {out}: cannot make the output folder ({e.strerror}: {e.filename})") from None
    if engine_name == "gem5":
        if not memories:  # by default, what gem5 can calibrate
            skipped = [n for n in names if tb.memories[n].kind != "cxl-type3"]
            names = [n for n in names if n not in skipped]
            if skipped:
                log(f"{tb.name}: --engine gem5 calibrates cxl-type3 memories; skipping {', '.join(skipped)} "
                    "(the host is gem5's board, not a fitted model)")
        check_gem5(tb, names)
    checks = consistency(tb, names)
    for c in checks:
        if not c["consistent"]:
            a, b = c["kernels"]
            log(f"{tb.name}: testbed check: {c['memory']} STREAM {a}/{b} traffic = {c['ratio']:.2f} although "
                f"the two kernels move the same bytes; no model fits both (see the report)"
                + (f"; {c['out_of_line']} is the kernel out of line" if c.get("out_of_line") else "")
                + (", and in line if its stores were non-temporal" if c.get("in_line_if_non_temporal") else ""))
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    results: Dict[str, FitResult] = {}

    # The host side is shared: fit it once on the local memory, then give it
    # to every other memory of the testbed.
    # On gem5 the host is the board's cores and caches: nothing to fit there.
    local = tb.local_memory() if engine_name == "standalone" else None
    starts = {n: base_system(tb.memories[n]) for n in names}
    host_source = None
    jobs = []
    workers = workers or min(len(names) + (local is not None and local not in names), os.cpu_count() or 1) or 1
    warm = None
    try:
        if engine_name == "standalone":
            sizes = [p.x for n in names for p in tb.points_of(n, "lat_mem_rd")]
            if local is not None:
                sizes += [p.x for p in fit_points(tb, local) if p.experiment == "lat_mem_rd"]
            if sizes:
                log(f"{tb.name}: walking the host caches for {len(set(sizes))} working sets")
                warm = warm_lmbench(base_system(tb.memories[local or names[0]]), sizes, workers, lmbench_region(tb))
        if local is not None:
            log(f"{tb.name}: fitting the host side on {local}")
            lines: List[str] = []
            host_source, fitted, notes = fit_memory(get_engine(engine_name, warm, lmbench_region(tb)), tb, tb.memories[local],
                                                    base_system(tb.memories[local]), lines.append, True)
            for line in lines + notes:
                log(line)
            if local in names:  # its validation runs with the other memories
                jobs.append((tb, local, host_source, engine_name, True, (fitted, notes), warm, runs))
        for n in names:
            if host_source is not None and n != local:
                starts[n].host = copy.deepcopy(host_source.host)
                starts[n].local_dram = copy.deepcopy(host_source.local_dram)
        rest = [n for n in names if n != local and tb.memories[n].knobs_from is None]
        jobs += [(tb, n, starts[n], engine_name, False, None, warm, runs) for n in rest]
        if rest:
            log(f"{tb.name}: fitting {', '.join(rest)} ({min(workers, len(jobs))} worker"
                f"{'s' if min(workers, len(jobs)) > 1 else ''})")
        _run_jobs(jobs, workers, results, out, tb, date, engine_name, log)
        # The memories that take the values fitted on another: validated with them, fitting none.
        takers = [n for n in names if tb.memories[n].knobs_from is not None]
        jobs = []
        for n in takers:
            start, done = _taken(tb, n, starts[n], results)
            jobs.append((tb, n, start, engine_name, False, done))
        _run_jobs(jobs, workers, results, out, tb, date, engine_name, log, warm, runs)
    except KeyboardInterrupt:
        done = sorted(results)
        log(f"{tb.name}: interrupted; " + (f"the presets of {', '.join(done)} are written in {out / 'presets'}"
                                          if done else "no memory had finished")
            + (f"; gem5's finished runs are kept in {runs}, and a rerun resumes from them" if engine_name == "gem5" else ""))
        raise

    ordered = [results[n] for n in names]
    summary = summarize(tb, ordered, engine_name, date, checks)
    text = json.dumps(summary, indent=2)
    atomic_write(out / "summary.json", text)
    if json_path:
        if json_path == "-":
            print(text)
        else:
            atomic_write(Path(json_path), text)
    report(out, tb, ordered, summary)
    return summary


def _run_jobs(jobs: list, workers: int, results: Dict[str, FitResult], out: Path, tb: Testbed, date: str,
              engine_name: str, log: Callable[[str], None], *tail) -> None:
    """Fits and validates each job's memory (on `workers` processes), keeping each result and
    its preset as it finishes. `tail` ends every job (warm caches, gem5 runs) where jobs
    do not carry it themselves."""
    jobs = [j + tail for j in jobs]
    workers = min(workers, len(jobs)) or 1
    if workers > 1:
        with cf.ProcessPoolExecutor(max_workers=workers, initializer=_quiet_worker) as pool:
            futs = [pool.submit(_fit_and_validate, j) for j in jobs]
            done = (f.result() for f in cf.as_completed(futs))
            _keep(done, results, out, tb, date, engine_name, log)
    else:
        _keep((_fit_and_validate(j) for j in jobs), results, out, tb, date, engine_name, log)


def _keep(done, results: Dict[str, FitResult], out: Path, tb: Testbed, date: str, engine_name: str,
          log: Callable[[str], None]) -> None:
    for r in done:
        results[r.memory] = r
        write_preset(out, r, tb, date, engine_name)  # finished work is kept at once
        for line in r.notes:
            log(line)
        log(f"  {r.memory}: done")


def _taken(tb: Testbed, name: str, start: System, results: Dict[str, FitResult]):
    """A memory's start and (fitted, notes) when it takes the values fitted on another
    memory (knobs_from): each of its knobs set to what the other's knob of the same role and
    meaning fitted (a switch's latency goes to switches only)."""
    mem = tb.memories[name]
    src = results.get(mem.knobs_from)
    if src is None:
        raise ParamError(f"--memories: {name} takes its values from {mem.knobs_from} (knobs_from); calibrate "
                         f"{mem.knobs_from} too")
    taken = {(k.role, k.why): src.fitted[k.params[0]] for k in knobs_of(tb.memories[src.memory], src.system)
             if k.params[0] in src.fitted}
    fitted: Dict[str, float] = {}
    for k in knobs_of(mem, start):
        if (k.role, k.why) in taken:
            start = set_knob(start, k, taken[(k.role, k.why)])
            fitted.update({p: taken[(k.role, k.why)] for p in k.params})
    note = (f"{name}: takes {', '.join(f'`{p}` = {v}' for p, v in fitted.items()) or 'nothing'} fitted on "
            f"{src.memory}; fits none of its own")
    return start, (fitted, [note])
