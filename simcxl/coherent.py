"""CXL.cache systems: accelerators with coherent caches next to a host.

An :class:`AccelSystem` describes the host side (home agent, host DRAM), the
link, and the accelerators (Type-1, or Type-2 with device memory in host/device
bias or HDM-DB), with a DMA engine for comparison. Presets live in
``simcxl/presets/accel``. Every run hands the whole description to the C++
core and returns a pandas DataFrame whose ``attrs`` say what was simulated.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Sequence, Union

import pandas as pd

from . import _core
from .engine import Progress, _version, parse_size
from .params import (AccelParams, DCacheParams, DmaParams, DramParams, HomeParams, LinkParams, ParamError,
                     read_text, set_dotted)

PRESET_DIR = Path(__file__).with_name("presets") / "accel"

OPS = ("load", "store", "rdcurr", "rdany", "itomwr", "wrinv")
PATTERNS = ("single", "sequential", "random")
STAGES = ("queue", "cache", "link_up", "home", "snoop", "memory", "link_down", "bias_flip", "back_invalidate")

#: Transfer sizes of the DMA-vs-CXL.cache comparison: one line to 4 MiB.
DMA_SIZES = tuple(64 << k for k in range(0, 17, 2))

_GROUPS = (("host_dram", DramParams), ("home", HomeParams), ("link", LinkParams), ("cache", DCacheParams),
           ("accel", AccelParams), ("dma", DmaParams), ("media", DramParams))


@dataclass
class AccelSystem:
    """Host, link and accelerators of a CXL.cache experiment."""
    name: str
    host_dram: DramParams = field(default_factory=DramParams)
    home: HomeParams = field(default_factory=HomeParams)
    link: LinkParams = field(default_factory=LinkParams)
    cache: DCacheParams = field(default_factory=DCacheParams)
    accel: AccelParams = field(default_factory=AccelParams)
    dma: DmaParams = field(default_factory=DmaParams)
    media: DramParams = field(default_factory=DramParams)
    description: str = ""
    source: str = ""
    seed: int = 1

    def validate(self) -> "AccelSystem":
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2 ** 53:
            raise ParamError(f"seed = {self.seed!r} is out of range; allowed: a whole number from 0 to {2 ** 53 - 1}")
        for g, _ in _GROUPS:
            getattr(self, g).validate(g)
        return self

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"name": self.name, "description": self.description, "source": self.source,
                             "seed": self.seed}
        for g, _ in _GROUPS:
            d[g] = getattr(self, g).to_dict()
        return d

    def to_core(self) -> Dict[str, Any]:
        d = self.to_dict()
        for k in ("name", "description", "source"):
            d.pop(k)
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any], where: str = "preset") -> "AccelSystem":
        if not isinstance(d, dict):
            raise ParamError(f"{where}: a preset must be a table")
        allowed = {"name", "description", "source", "seed"} | {g for g, _ in _GROUPS}
        unknown = sorted(set(d) - allowed)
        if unknown:
            raise ParamError(f"{where}: {unknown[0]} is not an accelerator preset key; allowed: "
                             f"{', '.join(sorted(allowed))}")
        if "name" not in d:
            raise ParamError(f"{where}: name is missing")
        kw: Dict[str, Any] = {k: d[k] for k in ("name", "description", "source", "seed") if k in d}
        for g, t in _GROUPS:
            kw[g] = t.from_dict(d.get(g, {}), g)
        return cls(**kw).validate()

    kind = "accel"

    def parameters(self) -> Dict[str, Any]:
        return {f"{g}.{k}": v for g, _ in _GROUPS for k, v in getattr(self, g).to_dict().items()}

    def get(self, path: str) -> Any:
        params = self.parameters()
        if path not in params:
            raise ParamError(f"{path} is not a parameter of an accelerator system")
        return params[path]

    def replace(self, **overrides: Any) -> "AccelSystem":
        """A copy with dotted parameters changed, e.g. ``replace(**{"accel.type": 2})``."""
        new = copy.deepcopy(self)
        groups = {g: getattr(new, g) for g, _ in _GROUPS}
        for path, value in overrides.items():
            if path == "seed":
                new.seed = value
            else:
                set_dotted(groups, path, value, "an accelerator system")
        return new.validate()


def preset_names() -> List[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.json"))


def load(system: Union[str, Path, AccelSystem]) -> AccelSystem:
    """An accelerator preset by name, a preset file, or a system as it is."""
    if isinstance(system, AccelSystem):
        return system.validate()
    text = str(system)
    path = PRESET_DIR / f"{text}.json" if text in preset_names() else Path(text)
    if not path.exists():
        raise ParamError(f"accel = {text!r} is neither an accelerator preset nor a preset file; presets: "
                         f"{', '.join(preset_names())}")
    try:
        data = json.loads(read_text(path))
    except ParamError as e:  # a folder, unreadable, not UTF-8
        raise ParamError(f"preset file {e}") from None
    except json.JSONDecodeError as e:
        raise ParamError(f"preset file {path} line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise ParamError(f"preset file {path}: nested too deeply to be a preset") from None
    try:
        return AccelSystem.from_dict(data, str(path))
    except (ParamError, TypeError) as e:
        raise ParamError(f"preset file {path}: {e}") from None


def _frame(rows: List[Dict[str, Any]], system: AccelSystem, workload: str, **cfg) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df.insert(0, "system", system.name)
    df.attrs.update({"source": "simulation", "engine": "standalone", "simcxl": _version(), "system": system.name,
                     "workload": workload, "config": cfg})
    return df


def accel(system: Union[str, AccelSystem], op: str = "load", pattern: str = "random", target: str = "host",
          requesters: int = 4, depth: int = 8, footprint: Union[int, str] = "4m", requests: int = 100_000,
          host_threads: int = 0, host_store_fraction: float = 0.5, check: bool = False,
          progress: Progress = None) -> pd.DataFrame:
    """Accelerator load/store streams through its coherent cache (one row)."""
    s = load(system)
    fp = parse_size(footprint)
    r = _core.run_accel(s.to_core(), op, pattern, target, requesters, depth, fp, requests, host_threads,
                        host_store_fraction, check, progress)
    return _frame([r], s, "accel", op=op, pattern=pattern, target=target, requesters=requesters, depth=depth,
                  footprint_bytes=fp, requests=requests, host_threads=host_threads)


def sharing(system: Union[str, AccelSystem], mode: str = "pingpong", rounds: int = 1000, lines: int = 1024,
            depth: int = 16, check: bool = True) -> pd.DataFrame:
    """Host-device sharing: ping-pong on one line, or producer-consumer both ways."""
    s = load(system)
    r = _core.run_sharing(s.to_core(), mode, rounds, lines, depth, check)
    return _frame([r], s, "sharing", mode=mode, rounds=rounds, lines=lines, depth=depth)


def stress(system: Union[str, AccelSystem], ops: int = 1_000_000, lines: int = 8, host_threads: int = 4,
           device_requesters: int = 4, store_fraction: float = 0.4, uncached_fraction: float = 0.1,
           device_memory_fraction: float = 0.5, inject: str = "", progress: Progress = None) -> Dict[str, Any]:
    """Randomised coherence stress test under the checker. Returns the counters
    and ``detail`` (the first violation, or what is stuck after a deadlock)."""
    s = load(system)
    return _core.run_stress(s.to_core(), lines, host_threads, device_requesters, ops, store_fraction,
                            uncached_fraction, device_memory_fraction, inject, progress)


def script(system: Union[str, AccelSystem], steps: Sequence[Dict[str, Any]], check: bool = True,
           inject: str = "") -> "tuple[pd.DataFrame, Dict[str, Any]]":
    """Directed run: each step is issued when the previous one has completed.

    A step is a dict with ``agent`` (-1 a host core, else a device index),
    ``op`` (one of :data:`OPS`, or ``"dma"``: the device reads a host buffer of
    ``bytes`` over CXL.io), ``target`` (``"host"`` or ``"device"``: device 0's
    memory) and ``offset`` (bytes). Returns one row per step (latency, stages or
    DMA phases, the data version read or written) and the system's counters."""
    s = load(system)
    rows, counters = _core.run_script(s.to_core(), [dict(x) for x in steps], check, inject)
    return _frame(rows, s, "script", steps=[dict(x) for x in steps]), counters


def dma_vs_cache(system: Union[str, AccelSystem], sizes: Sequence[Union[int, str]] = DMA_SIZES,
                 cache_op: str = "load", stream_bytes: Union[int, str] = "1m", min_transfers: int = 4,
                 progress: Progress = None) -> pd.DataFrame:
    """The device reads host buffers of each size by DMA and by CXL.cache.

    ``latency_ns``: one transfer on an idle system (DMA: driver doorbell to the
    driver seeing the completion; CXL.cache: the device's first load to its last
    line arriving). ``bandwidth_gbps``: transfers back to back, at least
    ``stream_bytes`` in all."""
    s = load(system)
    sz = [parse_size(x) for x in sizes]
    rows = _core.run_dma_vs_cache(s.to_core(), sz, cache_op, parse_size(stream_bytes), min_transfers, progress)
    for r in rows:
        r["mechanism"] = "dma" if r.pop("mechanism_dma") else "cxl.cache"
        r["transfer_bytes"] = int(r["transfer_bytes"])
    df = _frame(rows, s, "dma-vs-cache", sizes=sz, cache_op=cache_op, stream_bytes=parse_size(stream_bytes))
    return df


def dma_vs_cache_summary(df: pd.DataFrame) -> Dict[str, Any]:
    """At one cache line: the latency reduction and bandwidth gain of CXL.cache
    over DMA; and the smallest size where DMA's bandwidth overtakes CXL.cache."""
    piv = df.pivot_table(index="transfer_bytes", columns="mechanism", values=["latency_ns", "bandwidth_gbps"])
    first = piv.index.min()
    lat = piv["latency_ns"].loc[first]
    bw = piv["bandwidth_gbps"].loc[first]
    over = [int(b) for b in piv.index if piv["bandwidth_gbps"].loc[b, "dma"] > piv["bandwidth_gbps"].loc[b, "cxl.cache"]]
    lat_over = [int(b) for b in piv.index if piv["latency_ns"].loc[b, "dma"] < piv["latency_ns"].loc[b, "cxl.cache"]]
    return {
        "smallest_transfer_bytes": int(first),
        "latency_reduction_pct": 100.0 * (1.0 - lat["cxl.cache"] / lat["dma"]),
        "bandwidth_gain": bw["cxl.cache"] / bw["dma"],
        "dma_bandwidth_overtakes_at_bytes": over[0] if over else None,
        "dma_latency_overtakes_at_bytes": lat_over[0] if lat_over else None,
    }
