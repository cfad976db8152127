"""CXL.cache systems: accelerators with coherent caches next to a host.

An :class:`AccelSystem` describes the host side (home agent, host DRAM) and a
list of accelerators (:class:`AccelDevice`), each of its own type (Type-1, or
Type-2 with device memory in host/device bias or HDM-DB) on its own root port
and link, with its own cache, MSHRs, DMA engine and device memory window; all
share the host's home agent, snoop filter and caches. Presets live in
``simcxl/presets/accel`` (one device each); ``"a=type1-asic+b=type2-bias"``
puts several on one host. Every run hands the whole description to the C++
core and returns a pandas DataFrame whose ``attrs`` say what was simulated.

A single-device system names its parameters as the presets always did
(``cache.mshrs``); with several, each device's are under its name
(``dev1.cache.mshrs``).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _core
from .engine import Progress, _version, parse_size
from .params import (ADDRESS_TOP, DEVICE_GROUPS, DEVICE_MEMORY_BASE, MAX_DEVICES, AccelDevice, AccelParams,
                     DCacheParams, DmaParams, DramParams, HomeParams, LinkParams, NicParams, ParamError, ParamGroup,
                     check_device_name, check_devices, memory_windows, read_device_list, set_dotted, shown)
from .files import read_text
from .presets import ACCEL_DIR as PRESET_DIR
from .presets import accel_names as preset_names
from .presets import split_joined
from .topology.convert import core_graph

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

#: The host's groups, shared by every device.
HOST_GROUPS = (("host_dram", DramParams), ("home", HomeParams))
_GROUPS = HOST_GROUPS + DEVICE_GROUPS
@dataclass
class AccelSystem:
    """Host and accelerators of a CXL.cache experiment. With ``nic``, its one device is a CXL-NIC
    with these parameters (:mod:`simcxl.nic`)."""
    name: str
    host_dram: DramParams = field(default_factory=DramParams)
    home: HomeParams = field(default_factory=HomeParams)
    devices: List[AccelDevice] = field(default_factory=lambda: [AccelDevice()])
    description: str = ""
    source: str = ""
    seed: int = 1
    nic: Optional[NicParams] = None

    kind = "accel"

    # The groups of a single-device system, by their names as presets give them.
    @property
    def link(self) -> LinkParams:
        return self._only().link

    @property
    def cache(self) -> DCacheParams:
        return self._only().cache

    @property
    def accel(self) -> AccelParams:
        return self._only().accel

    @property
    def dma(self) -> DmaParams:
        return self._only().dma

    @property
    def media(self) -> DramParams:
        return self._only().media

    def _only(self) -> AccelDevice:
        """The first device (the only one of a single-device system)."""
        return self.devices[0]

    def single(self) -> bool:
        return len(self.devices) == 1

    def prefix(self, dev: AccelDevice) -> str:
        """How this system names a device's parameters: none for a single device, else its name."""
        return "" if self.single() else dev.name + "."

    def device(self, name: str) -> AccelDevice:
        for d in self.devices:
            if d.name == name:
                return d
        raise ParamError(f"device {name!r} is not a device of {self.name}; devices: "
                         f"{', '.join(d.name for d in self.devices)}")

    def instances(self) -> List[str]:
        """The name of every device built, copies included, by index (as the core builds them)."""
        out = []
        for d in self.devices:
            n = d.accel.devices
            out += [d.name] if n == 1 else [f"{d.name}[{k}]" for k in range(n)]
        return out

    def index(self, name: str) -> int:
        """The core's index of a device by name (a description's first copy; ``name[k]`` its copy k)."""
        names = self.instances()
        if name in names:
            return names.index(name)
        if any(n.startswith(name + "[") for n in names):
            return names.index(name + "[0]")
        raise ParamError(f"device {name!r} is not a device of {self.name}; devices: {', '.join(names)}")

    def device_kinds(self) -> str:
        return ", ".join(f"{d.name}: {d.kind()}" for d in self.devices)

    def validate(self) -> "AccelSystem":
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2 ** 53:
            raise ParamError(f"seed = {self.seed!r} is out of range; allowed: a whole number from 0 to {2 ** 53 - 1}")
        for g, _ in HOST_GROUPS:
            getattr(self, g).validate(g)
        if not self.single():
            for i, d in enumerate(self.devices):
                check_device_name(d.name, f"devices[{i}].name")
        check_devices(self.devices, self.prefix)
        if self.nic is not None:
            if not self.single():
                raise ParamError(f"nic: a CXL-NIC system has one device; {self.name} has "
                                 f"{', '.join(d.name for d in self.devices)}")
            self.nic.validate("nic")
        return self

    def to_dict(self) -> Dict[str, Any]:
        """As a preset file gives it: a single device's groups at the top level, several in ``devices``."""
        d: Dict[str, Any] = {"name": self.name, "description": self.description, "source": self.source,
                             "seed": self.seed}
        for g, _ in HOST_GROUPS:
            d[g] = getattr(self, g).to_dict()
        if self.single():
            for g, _ in DEVICE_GROUPS:
                d[g] = getattr(self.devices[0], g).to_dict()
        else:
            d["devices"] = [x.to_dict() for x in self.devices]
        if self.nic is not None:
            d["nic"] = self.nic.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any], where: str = "preset") -> "AccelSystem":
        if not isinstance(d, dict):
            raise ParamError(f"{where}: a preset must be a table")
        allowed = {"name", "description", "source", "seed", "devices", "nic"} | {g for g, _ in _GROUPS}
        unknown = sorted(set(d) - allowed, key=str)
        if unknown:
            raise ParamError(f"{where}: {shown(unknown[0])} is not an accelerator preset key; allowed: "
                             f"{', '.join(sorted(allowed))}")
        if "name" not in d:
            raise ParamError(f"{where}: name is missing")
        kw: Dict[str, Any] = {k: d[k] for k in ("name", "description", "source", "seed") if k in d}
        for g, t in HOST_GROUPS:
            kw[g] = t.from_dict(d.get(g, {}), g)
        if "nic" in d:
            kw["nic"] = NicParams.from_dict(d["nic"], "nic")
        if "devices" in d:
            both = [g for g, _ in DEVICE_GROUPS if g in d]
            if both:
                raise ParamError(f"{where}: {both[0]} is given beside devices; allowed: a single device's groups at "
                                 "the top level, or every device in devices")
            devs = read_device_list(d["devices"], where)
            kw["devices"] = devs
        else:
            kw["devices"] = [AccelDevice.from_dict(d, "dev0", "")]
        return cls(**kw).validate()

    def _groups(self) -> Dict[str, ParamGroup]:
        out: Dict[str, ParamGroup] = {g: getattr(self, g) for g, _ in HOST_GROUPS}
        for x in self.devices:
            out.update(x.groups(self.prefix(x)))
        if self.nic is not None:
            out["nic"] = self.nic
        return out

    def group(self, path: str) -> ParamGroup:
        """A parameter group by its dotted name (``cache``, ``dev1.cache``)."""
        g = self._groups().get(path)
        if g is None and self.single() and path.startswith(self.devices[0].name + "."):
            g = self._groups().get(path[len(self.devices[0].name) + 1:])
        if g is None:
            raise ParamError(f"{shown(path)} is not a parameter group of {self.name}; allowed: "
                             f"{', '.join(self._groups())}")
        return g

    def parameters(self) -> Dict[str, Any]:
        return {f"{g}.{k}": v for g, obj in self._groups().items() for k, v in obj.to_dict().items()}

    def get(self, path: str) -> Any:
        params = self.parameters()
        if path not in params:
            raise ParamError(f"{shown(path)} is not a parameter of an accelerator system")
        return params[path]

    def replace(self, **overrides: Any) -> "AccelSystem":
        """A copy with dotted parameters changed, e.g. ``replace(**{"accel.type": 2})`` or, with
        several devices, ``replace(**{"dev1.cache.mshrs": 16})``."""
        new = copy.deepcopy(self)
        groups = new._groups()
        if new.single():  # a single device answers to its name too
            groups.update(new.devices[0].groups(new.devices[0].name + "."))
        for path, value in overrides.items():
            if path == "seed":
                new.seed = value
                continue
            group = path.rpartition(".")[0]
            if not new.single() and group in {g for g, _ in DEVICE_GROUPS}:
                raise ParamError(f"{shown(path)} names no device; with several devices, name it: "
                                 + " or ".join(f"{x.name}.{path}" for x in new.devices))
            set_dotted(groups, path, value, "a CXL-NIC system" if new.nic is not None else "an accelerator system")
        return new.validate()

    def defaults(self) -> "AccelSystem":
        """The schema's defaults with this system's device names."""
        return AccelSystem(name="-", devices=[AccelDevice(name=d.name) for d in self.devices],
                           nic=None if self.nic is None else NicParams())


def combine(parts: Sequence[tuple], name: Optional[str] = None) -> AccelSystem:
    """One host with the accelerators of several single-device systems, each under its name.
    The host (host DRAM, home agent) and the seed are the first system's."""
    if not parts:
        raise ParamError("an accelerator system needs one or more devices")
    devs = []
    for dname, s in parts:
        check_device_name(dname, "device name")
        if not s.single():
            raise ParamError(f"{dname}: {s.name} has several devices; join single-device systems")
        dev = copy.deepcopy(s.devices[0])
        dev.name = dname
        devs.append(dev)
    first = parts[0][1]
    return AccelSystem(name=name or "+".join(n for n, _ in parts), host_dram=copy.deepcopy(first.host_dram),
                       home=copy.deepcopy(first.home), devices=devs, seed=first.seed,
                       description="accelerators on one host: " + ", ".join(f"{n} ({s.name})" for n, s in parts)
                       + f"; the host of {parts[0][0]}",
                       source="; ".join(f"{n}: {s.source}" for n, s in parts if s.source)).validate()


def load_joined(text: str, load_one=None) -> AccelSystem:
    """``NAME=PRESET+NAME=PRESET...`` (or ``PRESET+PRESET``, named after the presets) on one host."""
    parts = split_joined(text, load_one or load, "accel", "device",
                         ("gpu=type1-asic+mem=type2-bias", "a=type1-asic+b=type1-asic"))
    try:
        return combine(parts, name=text)
    except ParamError as e:
        raise ParamError(f"accel {text!r}: {e}") from None


def load(system: Union[str, Path, AccelSystem]) -> AccelSystem:
    """An accelerator preset by name, a preset file, several joined with ``+``, or a system as it is."""
    if isinstance(system, AccelSystem):
        return system.validate()
    text = str(system)
    if "+" in text and text not in preset_names() and not Path(text).exists():
        return load_joined(text)
    path = PRESET_DIR / f"{text}.json" if text in preset_names() else Path(text)
    if not path.exists():
        raise ParamError(f"accel = {text!r} is neither an accelerator preset nor a preset file; presets: "
                         f"{', '.join(preset_names())} (several join with +, e.g. a=type1-asic+b=type2-bias)")
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


def complete_devices(data: Any, path: Path) -> None:
    """Every device of a preset file's ``devices`` list gives every parameter of its groups."""
    if not isinstance(data, dict) or not isinstance(data.get("devices"), list):
        return
    for i, x in enumerate(data["devices"]):
        if not isinstance(x, dict):
            continue  # from_dict says what is wrong
        name = x.get("name", f"devices[{i}]")
        for g, t in DEVICE_GROUPS:
            given = x.get(g, {})
            if not isinstance(given, dict):
                continue
            missing = [f.name for f in fields(t) if f.name not in given]
            if missing:
                more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
                raise ParamError(f"preset file {path}: {name}.{g}.{missing[0]} is missing{more}; a device gives "
                                 "every parameter, as 'simcxl presets show NAME --json' prints them")


def _frame(rows: List[Dict[str, Any]], system: AccelSystem, workload: str, **cfg) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df.insert(0, "system", system.name)
    df.attrs.update({"source": "simulation", "engine": "standalone", "simcxl": _version(), "system": system.name,
                     "workload": workload, "config": cfg})
    return df


STREAM_KEYS = ("op", "pattern", "target", "requesters", "depth", "footprint", "requests")


def _streams(s: AccelSystem, per_device: Optional[Mapping[str, Mapping[str, Any]]]) -> Optional[List[Dict[str, Any]]]:
    """Each device's stream settings (a dict by device name) as the core takes them: one per device."""
    if not per_device:
        return None
    if not isinstance(per_device, Mapping):
        raise ParamError(f"accel.devices = {per_device!r} is not allowed; allowed: a table of device name to "
                         "settings (" + ", ".join(STREAM_KEYS) + ")")
    names = [d.name for d in s.devices]
    for n, kw in per_device.items():
        if n not in names:
            raise ParamError(f"accel.devices: {shown(n)} is not a device of {s.name}; devices: {', '.join(names)}")
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


def accel(system: Union[str, AccelSystem], op: str = "load", pattern: str = "random", target: str = "host",
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


def lmbench(system: Union[str, AccelSystem], sizes: Sequence[Union[int, str]] = ("64k", "1m", "64m"),
            agent: str = "dev0", target: str = "host", loads: int = 2000, progress: Progress = None) -> pd.DataFrame:
    """lmbench's ``lat_mem_rd -t`` on a coherent system: ``agent`` (a device's name, or ``host``
    for a host core) chases a random cycle of the lines of each working set in ``target`` memory
    (``host``, ``device``: the agent's own, or a Type-2 device's name); ``latency_ns`` is the time
    per load, with its stages, after a warm-up of up to twice the agent's cache."""
    s = load(system)
    who = -1 if agent == "host" else s.index(agent)
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


def sharing(system: Union[str, AccelSystem], mode: str = "pingpong", rounds: int = 1000, lines: int = 1024,
            depth: int = 16, check: bool = True) -> pd.DataFrame:
    """Host-device sharing: ping-pong on one line, or producer-consumer both ways."""
    s = load(system)
    r = _core.run_sharing(core_graph(s), mode, rounds, lines, depth, check)
    return _frame([r], s, "sharing", mode=mode, rounds=rounds, lines=lines, depth=depth)


def stress(system: Union[str, AccelSystem], ops: int = 1_000_000, lines: int = 8, host_threads: int = 4,
           device_requesters: int = 4, store_fraction: float = 0.4, uncached_fraction: float = 0.1,
           device_memory_fraction: float = 0.5, inject: str = "", progress: Progress = None) -> Dict[str, Any]:
    """Randomised coherence stress test under the checker. Returns the counters
    and ``detail`` (the first violation, or what is stuck after a deadlock)."""
    s = load(system)
    return _core.run_stress(core_graph(s), lines, host_threads, device_requesters, ops, store_fraction,
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
    rows, counters = _core.run_script(core_graph(s), [dict(x) for x in steps], check, inject)
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
