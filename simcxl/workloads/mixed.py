"""One system, host, accelerators and CXL-NIC at once.

A memory system (one memory or an address map of several windows, see
:mod:`simcxl.config.params`) takes CXL.cache accelerators beside its memories with
:func:`attach` (or a topology file): each on a root port of its own, coherent
through the host's home agent, whose memory traffic the address map routes
like the cores'. A topology file may also put a CXL-NIC (a component of type
``nic``) on the home agent. :func:`run` then runs the host's STREAM over a
target of the map while every accelerator runs its load/store stream and the
NIC runs remote atomics (RAO, :mod:`simcxl.workloads.nic`), so each initiator's figures
drop only where they share something (a window's DRAM, a CXL expander's link
and device, the home agent), and the stages of each one's latency show where.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from .. import _core
from . import coherent
from ..engine.standalone import KERNELS, PLACEMENTS, Memory, Progress, _attrs, _check_int, parse_size
from .nic import KERNELS as RAO_KERNELS, MECHANISMS as RAO_MECHANISMS, OPS as RAO_OPS
from ..config.groups import STORES
from ..config.params import ParamError, System
from ..config.targets import Target, parse_target, target_text
from ..config.presets import load
from ..topology.convert import core_graph

#: What the NIC's RAO may set (as :func:`simcxl.workloads.nic.rao` takes them), and the defaults.
RAO_KEYS = ("device", "kernel", "op", "mechanism", "threads", "iters", "elements", "stride", "noise_threads")
RAO_DEFAULTS = {"kernel": "rand", "op": "add", "mechanism": "cxl-nic", "threads": 4, "iters": 1000,
                "elements": 1 << 16, "stride": 9, "noise_threads": 0}
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


def nic_device(system: System) -> Optional[str]:
    """The name of the system's CXL-NIC (its component of type ``nic``; without a graph, its first device
    when it has NIC parameters), or None."""
    graph = getattr(system, "graph", None)
    if graph is not None:
        nics = graph.of_type("nic")
        return nics[0].name if nics else None
    return system.devices[0].name if system.nic is not None and system.devices else None


def _rao(system: System, rao: Mapping[str, Any], nic: Optional[str]) -> Tuple[dict, str]:
    """RAO settings over their defaults, and the NIC's device name."""
    if nic is None:
        raise ParamError(f"rao: {system.name} has no NIC (a component of type nic on the home agent); allowed: "
                         "a system with one, or no rao")
    r = {**RAO_DEFAULTS, **dict(rao)}
    bad = sorted(set(r) - set(RAO_KEYS))
    if bad:
        raise ParamError(f"rao.{bad[0]} is not an RAO setting; allowed: {', '.join(RAO_KEYS)}")
    device = r.pop("device", nic)
    if device != nic:
        raise ParamError(f"rao.device = {device!r} is not the NIC of {system.name}; allowed: {nic}")
    for k, allowed in (("kernel", RAO_KERNELS), ("op", RAO_OPS), ("mechanism", RAO_MECHANISMS)):
        if r[k] not in allowed:
            raise ParamError(f"rao.{k} = {r[k]!r} is not allowed; allowed values: {', '.join(allowed)}")
    return r, device


def _streams(system: System, devices: Optional[Mapping[str, Mapping[str, Any]]], nic: Optional[str] = None) -> list:
    names = system.device_names()
    given = dict(devices or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ParamError(f"devices: {unknown[0]!r} is not a device of {system.name}; allowed: {', '.join(names)}")
    first = system.window_names()[0]
    out = []
    for n in names:
        # The NIC runs RAO, not a load/store stream: idle unless told otherwise.
        idle = {"requesters": 0} if n == nic else {}
        s = {**STREAM_DEFAULTS, "target": first, **idle, **dict(given.get(n, {}))}
        bad = sorted(set(s) - set(STREAM_KEYS))
        if bad:
            raise ParamError(f"{n}.{bad[0]} is not a stream setting; allowed: {', '.join(STREAM_KEYS)}")
        s["footprint_bytes"] = parse_size(s.pop("footprint"), f"{n}.footprint")
        out.append(s)
    return out


def run(system: Memory, *, host: bool = True, kernel: str = "triad", threads: Optional[int] = None,
        lines_per_thread: int = 20000, target: Target = None, placement: str = "first-touch",
        stores: str = "write-allocate", devices: Optional[Mapping[str, Mapping[str, Any]]] = None,
        accelerators: bool = True, accel_requests: int = 200_000, rao: Optional[Mapping[str, Any]] = None,
        progress: Progress = None) -> pd.DataFrame:
    """The host's STREAM ``kernel`` (``threads`` cores, over ``target`` of the address map), every
    accelerator's stream and the NIC's RAO at once, measured over one window (10 % to 90 % of the host's
    STREAM). Each device's stream: ``devices={"gpu": {"op": "load", "target": "cxl0", "requesters": 8,
    "depth": 16, "footprint": "1g"}}`` (``target``: a window, ``device``, or a Type-2 device's name; the buffer
    starts half way into a window, away from the host's pages; ``requesters`` 0: idle; the NIC's stream is
    idle unless set). ``rao={"kernel": "rand", "op": "add", "mechanism": "cxl-nic", "threads": 4}`` (the
    settings of :func:`simcxl.workloads.nic.rao`; None: the NIC idle) runs on the system's NIC until the window closes.
    ``host=False``: the accelerators alone (over ``accel_requests`` accesses), or with no accelerator stream
    the NIC alone (``iters`` operations a thread, measured as :func:`simcxl.workloads.nic.rao` measures them);
    ``accelerators=False``: no accelerator stream.

    One row: ``host.stream_gbps``, ``host.read_latency_ns_mean`` and ``host.read.stage.<stage>_ns``;
    ``accel.<device>.bandwidth_gbps``, ``.latency_ns_mean``, ``.stage.<stage>_ns``; ``nic.<device>.ops_per_second``,
    ``.latency_ns_mean``, ``.stage.<stage>_ns`` (cxl-nic: post, wait, execute, notice; pcie-nic: doorbell,
    descriptor, data, completion); ``<host>.window.<w>.*`` (what each window carried) and every component's counters, ``<component>.<stat>``
    (docs/reference/stats.md)."""
    s = load(system)
    nic = nic_device(s)
    if not s.devices and accelerators and rao is None:
        raise ParamError(f"{s.name} has no accelerators; attach some (mixed.attach, or --accel), or run the host "
                         "alone (accelerators=False)")
    if not host and not accelerators and rao is None:
        raise ParamError("neither the host, the accelerators nor the NIC run; allowed: host, accelerators, rao, "
                         "or several")
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
    raos, device = _rao(s, rao, nic) if rao is not None else (None, "")
    streams = _streams(s, devices, nic) if accelerators and s.devices else None
    if streams is not None and rao is not None and not any(x["requesters"] for x in streams):
        streams = None  # only the NIC has work
    if streams is not None or rao is not None:
        core = core_graph(s)
    else:  # the host's memories alone
        bare = copy.copy(s)
        bare.devices = []
        core = core_graph(bare)
    # A lone device (a NIC preset's system) is unnamed in the core, its figures under nic.dev0.
    r = _core.run_mixed(core, host, kernel, threads, lines_per_thread, placement, stores, pairs, streams,
                        accel_requests, progress, raos, "" if s.lone_device else device)
    df = pd.DataFrame([r])
    df.insert(0, "system", s.name)
    df.insert(1, "host_target", target_text(pairs, s) if host else "")
    return _attrs(df, s, "mixed", host=host, kernel=kernel, threads=threads, lines_per_thread=lines_per_thread,
                  placement=placement, stores=stores, target=target_text(pairs, s),
                  devices={k: dict(v) for k, v in (devices or {}).items()}, accelerators=accelerators,
                  accel_requests=accel_requests, rao=dict(raos, device=device) if raos else None)
