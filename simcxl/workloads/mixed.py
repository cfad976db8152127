"""One system, host and accelerators at once.

A memory system (one memory or an address map of several windows, see
:mod:`simcxl.config.params`) takes CXL.cache accelerators beside its memories with
:func:`attach`: each on a root port of its own, coherent through the host's
home agent, whose memory traffic the address map routes like the cores'.
:func:`run` then runs the host's STREAM over a target of the map while every
accelerator runs its load/store stream, so each side's bandwidth drops only
where they share something (a window's DRAM, a CXL expander's link and
device, the home agent), and the stages of each side's latency show where.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from .. import _core
from . import coherent
from ..engine.standalone import KERNELS, PLACEMENTS, Memory, Progress, _attrs, _check_int, parse_size
from ..config.groups import STORES
from ..config.params import ParamError, System
from ..config.targets import Target, parse_target, target_text
from ..config.presets import load
from ..topology.convert import core_graph

#: What an accelerator's stream may set, and the defaults.
STREAM_KEYS = ("op", "pattern", "target", "requesters", "depth", "footprint")
STREAM_DEFAULTS = {"op": "load", "pattern": "random", "requesters": 8, "depth": 16, "footprint": "1g"}


def attach(memory: Memory, accelerators: Union[str, System, Sequence[Tuple[str, Any]]]) -> System:
    """``memory`` with CXL.cache accelerators beside its memories: ``"gpu=type1-asic+nic=type1-fpga"``, an
    accelerator system (its devices), or [(name, accelerator preset or system)]. The home agent is the
    first accelerator system's; the host (cores, caches, local DRAM) stays ``memory``'s, so an
    accelerator preset's ``host`` and ``local_dram`` are not used. Device memory of Type-2 devices lies at 16 TiB and
    up, so with an address map of many windows move it (``<dev>.accel.memory_base``) or the windows."""
    base = load(memory)
    if isinstance(accelerators, str):
        # name=preset (a preset alone is named after itself), joined with +
        accelerators = [tuple(p.split("=", 1)) if "=" in p else (p.replace(".json", ""), p)
                        for p in accelerators.split("+")]
    if isinstance(accelerators, (list, tuple)):
        acc = coherent.combine([(n, coherent.load(x)) for n, x in accelerators])
    else:
        acc = coherent.load(accelerators)
    devices = copy.deepcopy(acc.devices)
    out = copy.deepcopy(base)
    out.home = copy.deepcopy(acc.home)
    out.devices = (out.devices or []) + devices
    out.lone_device = False  # beside memories, each device is named
    out.name = f"{base.name}+{'+'.join(d.name for d in devices)}"
    out.description = f"{base.description}; accelerators: {acc.device_kinds()}"
    out.source = "; ".join(x for x in (base.source, acc.source) if x)
    return out.validate()


def _streams(system: System, devices: Optional[Mapping[str, Mapping[str, Any]]]) -> list:
    names = system.device_names()
    given = dict(devices or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ParamError(f"devices: {unknown[0]!r} is not a device of {system.name}; devices: {', '.join(names)}")
    first = system.window_names()[0]
    out = []
    for n in names:
        s = {**STREAM_DEFAULTS, "target": first, **dict(given.get(n, {}))}
        bad = sorted(set(s) - set(STREAM_KEYS))
        if bad:
            raise ParamError(f"{n}.{bad[0]} is not a stream setting; allowed: {', '.join(STREAM_KEYS)}")
        s["footprint_bytes"] = parse_size(s.pop("footprint"), f"{n}.footprint")
        out.append(s)
    return out


def run(system: Memory, *, host: bool = True, kernel: str = "triad", threads: Optional[int] = None,
        lines_per_thread: int = 20000, target: Target = None, placement: str = "first-touch",
        stores: str = "write-allocate", devices: Optional[Mapping[str, Mapping[str, Any]]] = None,
        accelerators: bool = True, accel_requests: int = 200_000, progress: Progress = None) -> pd.DataFrame:
    """The host's STREAM ``kernel`` (``threads`` cores, over ``target`` of the address map) and every
    accelerator's stream at once, measured over one window (10 % to 90 % of the host's STREAM). Each
    device's stream: ``devices={"gpu": {"op": "load", "target": "cxl0", "requesters": 8, "depth": 16,
    "footprint": "1g"}}`` (``target``: a window, ``device``, or a Type-2 device's name; the buffer starts
    half way into a window, away from the host's pages; ``requesters`` 0: idle). ``host=False``: the
    accelerators alone (over ``accel_requests`` accesses); ``accelerators=False``: the host alone.

    One row: ``host.stream_gbps``, ``host.read_latency_ns_mean`` and ``host.read.stage.<stage>_ns``;
    ``accel.<device>.bandwidth_gbps``, ``.latency_ns_mean``, ``.stage.<stage>_ns``; ``window.<w>.*``
    (what each window carried) and every component's counters."""
    s = load(system)
    if not s.devices and accelerators:
        raise ParamError(f"{s.name} has no accelerators; attach some (mixed.attach, or --accel), or run the host "
                         "alone (accelerators=False)")
    if not host and not accelerators:
        raise ParamError("neither the host nor the accelerators run; allowed: host, accelerators or both")
    if kernel not in KERNELS:
        raise ParamError(f"kernel = {kernel!r} is not allowed; allowed values: {', '.join(KERNELS)}")
    if placement not in PLACEMENTS:
        raise ParamError(f"placement = {placement!r} is not allowed; allowed values: {', '.join(PLACEMENTS)}")
    if stores not in STORES:
        raise ParamError(f"stores = {stores!r} is not allowed; allowed values: {', '.join(STORES)}")
    threads = _check_int("threads", threads if threads is not None else min(16, s.host.cores), 1, s.host.cores)
    lines_per_thread = _check_int("lines_per_thread", lines_per_thread, 100, 1 << 34)
    accel_requests = _check_int("accel_requests", accel_requests, 100, 1 << 40)
    pairs = parse_target(target, s)
    streams = _streams(s, devices) if accelerators else None
    if accelerators:
        core = core_graph(s)
    else:  # the host's memories alone
        bare = copy.copy(s)
        bare.devices = []
        core = core_graph(bare)
    r = _core.run_mixed(core, host, kernel, threads, lines_per_thread, placement, stores, pairs, streams,
                        accel_requests, progress)
    df = pd.DataFrame([r])
    df.insert(0, "system", s.name)
    df.insert(1, "host_target", target_text(pairs, s) if host else "")
    return _attrs(df, s, "mixed", host=host, kernel=kernel, threads=threads, lines_per_thread=lines_per_thread,
                  placement=placement, stores=stores, target=target_text(pairs, s),
                  devices={k: dict(v) for k, v in (devices or {}).items()}, accelerators=accelerators,
                  accel_requests=accel_requests)
