"""CXL.cache workloads: accelerators with coherent caches next to a host.

A :class:`simcxl.config.params.System` holds the host side (home agent, the host's local DRAM) and its
accelerators (``devices``), each of its own type (Type-1, or Type-2 with device memory in
host/device bias or HDM-DB) on its own root port and link, with its own cache, MSHRs, DMA engine
and device memory window; all share the host's home agent, snoop filter and caches. Presets live
in ``simcxl/presets/accel`` (one device each); ``"a=type1-asic+b=type2-bias"`` puts several on one
host. Every run hands the whole description to the C++ core and returns a pandas DataFrame whose
``attrs`` say what was simulated.

A preset's lone device names its parameters as the presets always did (``cache.mshrs``); with
several, each device's are under its name (``dev1.cache.mshrs``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import pandas as pd

from .. import _core
from ..engine.standalone import Progress, _version, parse_size
# Accelerator presets load in the config layer (a topology file may name one); they are this module's API too.
from ..config.accel_presets import PRESET_DIR, combine, load, load_joined, preset_names  # noqa: F401
from ..config.params import ParamError, System, shown
from ..topology.convert import core_graph

OPS = ("load", "store", "rdcurr", "rdany", "itomwr", "wrinv")
PATTERNS = ("single", "sequential", "random")
STAGES = tuple(_core.STAGES)  # the one stage list of every request (engine.STAGES)

#: Every way a device holds or reaches memory: the preset and the settings that make it so.
DEVICE_MODES = {
    "type1": ("type1-asic", {}),
    "type2-host-bias": ("type2-bias", {"accel.auto_bias_flip": 0}),
    "type2-bias-flips": ("type2-bias", {}),
    "type2-device-bias": ("type2-bias", {"accel.device_bias": 1}),
    "type2-hdm-db": ("type2-hdmdb", {}),
}

#: Transfer sizes of the DMA-vs-CXL.cache comparison: one line to 4 MiB.
DMA_SIZES = tuple(64 << k for k in range(0, 17, 2))


def index(s: System, name: str) -> int:
    """The core's index of a device by name (a description's first copy; ``name[k]`` its copy k),
    counting every copy built (``accel.devices``) as the core builds them."""
    names: List[str] = []
    for d in s.devices or []:
        n = d.accel.devices
        names += [d.name] if n == 1 else [f"{d.name}[{k}]" for k in range(n)]
    if name in names:
        return names.index(name)
    if any(n.startswith(name + "[") for n in names):
        return names.index(name + "[0]")
    raise ParamError(f"device {name!r} is not a device of {s.name}; allowed: {', '.join(names)}")


def _frame(rows: List[Dict[str, Any]], system: System, workload: str, **cfg) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df.insert(0, "system", system.name)
    df.attrs.update({"source": "simulation", "engine": "standalone", "simcxl": _version(), "system": system.name,
                     "workload": workload, "config": cfg})
    return df


STREAM_KEYS = ("op", "pattern", "target", "requesters", "depth", "footprint", "requests")


def _streams(s: System, per_device: Optional[Mapping[str, Mapping[str, Any]]]) -> Optional[List[Dict[str, Any]]]:
    """Each device's stream settings (a dict by device name) as the core takes them: one per device."""
    if not per_device:
        return None
    if not isinstance(per_device, Mapping):
        raise ParamError(f"accel.devices = {per_device!r} is not allowed; allowed: a table of device name to "
                         "settings (" + ", ".join(STREAM_KEYS) + ")")
    names = [d.name for d in s.devices]
    for n, kw in per_device.items():
        if n not in names:
            raise ParamError(f"accel.devices: {shown(n)} is not a device of {s.name}; allowed: {', '.join(names)}")
        if not isinstance(kw, Mapping):
            raise ParamError(f"accel.devices.{n} must be a table of settings ({', '.join(STREAM_KEYS)})")
        bad = [k for k in kw if k not in STREAM_KEYS]
        if bad:
            raise ParamError(f"accel.devices.{n}.{shown(bad[0])} is not a stream setting; allowed: "
                             + ", ".join(STREAM_KEYS))
    out = []
    for n in names:
        kw = dict(per_device.get(n, {}))
        if "footprint" in kw:
            kw["footprint_bytes"] = parse_size(kw.pop("footprint"))
        out.append(kw)
    return out


def accel(system: Union[str, System], op: str = "load", pattern: str = "random", target: str = "host",
          requesters: int = 4, depth: int = 8, footprint: Union[int, str] = "4m", requests: int = 100_000,
          host_threads: int = 0, host_store_fraction: float = 0.5, check: bool = False,
          progress: Progress = None, devices: Optional[Mapping[str, Mapping[str, Any]]] = None) -> pd.DataFrame:
    """Accelerator load/store streams through the devices' coherent caches (one row).

    Every device runs ``op``/``pattern``/``target``/... unless ``devices`` gives it settings of its
    own, by name: ``devices={"gpu": {"op": "store", "target": "device"}, "nic": {"requesters": 0}}``
    (``requesters = 0``: idle). ``target`` is ``host``, ``device`` (the device's own memory) or a
    Type-2 device's name (its memory). With several devices each one's figures are also under its
    name (``gpu.bandwidth_gbps``, ``gpu.stage_host_uncore_ns``, ...)."""
    s = load(system)
    fp = parse_size(footprint)
    streams = _streams(s, devices)
    r = _core.run_accel(core_graph(s), op, pattern, target, requesters, depth, fp, requests, host_threads,
                        host_store_fraction, check, progress, streams)
    return _frame([r], s, "accel", op=op, pattern=pattern, target=target, requesters=requesters, depth=depth,
                  footprint_bytes=fp, requests=requests, host_threads=host_threads,
                  **({"devices": {k: dict(v) for k, v in devices.items()}} if devices else {}))


def lmbench(system: Union[str, System], sizes: Sequence[Union[int, str]] = ("64k", "1m", "64m"),
            agent: str = "dev0", target: str = "host", loads: int = 2000, progress: Progress = None) -> pd.DataFrame:
    """lmbench's ``lat_mem_rd -t`` on a coherent system: ``agent`` (a device's name, or ``host``
    for a host core) chases a random cycle of the lines of each working set in ``target`` memory
    (``host``, ``device``: the agent's own, or a Type-2 device's name); ``latency_ns`` is the time
    per load, with its stages, after a warm-up of up to twice the agent's cache."""
    s = load(system)
    who = -1 if agent == "host" else index(s, agent)
    if not isinstance(loads, int) or isinstance(loads, bool) or not 1 <= loads <= 100_000_000:
        raise ParamError(f"lmbench.loads = {loads!r} is out of range; allowed: 1 to 100000000")
    sz = [parse_size(x) for x in sizes]
    rows = _core.run_chase(core_graph(s), who, target, sz, loads, progress)
    for r in rows:
        r["working_set_bytes"] = int(r["working_set_bytes"])
    df = _frame(rows, s, "lmbench", agent=agent, target=target, loads=loads)
    df.insert(1, "agent", agent)
    df.insert(2, "target", target)
    return df


def sharing(system: Union[str, System], mode: str = "pingpong", rounds: int = 1000, lines: int = 1024,
            depth: int = 16, check: bool = True) -> pd.DataFrame:
    """Host-device sharing: ping-pong on one line, or producer-consumer both ways."""
    s = load(system)
    r = _core.run_sharing(core_graph(s), mode, rounds, lines, depth, check)
    return _frame([r], s, "sharing", mode=mode, rounds=rounds, lines=lines, depth=depth)


def stress(system: Union[str, System], ops: int = 1_000_000, lines: int = 8, host_threads: int = 4,
           device_requesters: int = 4, store_fraction: float = 0.4, uncached_fraction: float = 0.1,
           device_memory_fraction: float = 0.5, inject: str = "", progress: Progress = None) -> Dict[str, Any]:
    """Randomised coherence stress test under the checker. Returns the counters
    and ``detail`` (the first violation, or what is stuck after a deadlock)."""
    s = load(system)
    return _core.run_stress(core_graph(s), lines, host_threads, device_requesters, ops, store_fraction,
                            uncached_fraction, device_memory_fraction, inject, progress)


def script(system: Union[str, System], steps: Sequence[Dict[str, Any]], check: bool = True,
           inject: str = "") -> "tuple[pd.DataFrame, Dict[str, Any]]":
    """Directed run: each step is issued when the previous one has completed.

    A step is a dict with ``agent`` (-1 a host core, else a device index),
    ``op`` (one of :data:`OPS`, or ``"dma"``: the device reads a host buffer of
    ``bytes`` over CXL.io), ``target`` (``"host"`` or ``"device"``: device 0's
    memory) and ``offset`` (bytes). Returns one row per step (latency, stages or
    DMA phases, the data version read or written) and the system's counters."""
    s = load(system)
    rows, counters = _core.run_script(core_graph(s), [dict(x) for x in steps], check, inject)
    return _frame(rows, s, "script", steps=[dict(x) for x in steps]), counters


def dma_vs_cache(system: Union[str, System], sizes: Sequence[Union[int, str]] = DMA_SIZES,
                 cache_op: str = "load", stream_bytes: Union[int, str] = "1m", min_transfers: int = 4,
                 progress: Progress = None) -> pd.DataFrame:
    """The device reads host buffers of each size by DMA and by CXL.cache.

    ``latency_ns``: one transfer on an idle system (DMA: driver doorbell to the
    driver seeing the completion; CXL.cache: the device's first load to its last
    line arriving). ``bandwidth_gbps``: transfers back to back, at least
    ``stream_bytes`` in all."""
    s = load(system)
    sz = [parse_size(x) for x in sizes]
    rows = _core.run_dma_vs_cache(core_graph(s), sz, cache_op, parse_size(stream_bytes), min_transfers, progress)
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
