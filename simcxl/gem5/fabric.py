"""A topology file's CXL fabric as gem5 SimObjects: one CXLHostBridge per
host window, whose root ports lead through links to CXLType3Expanders or
CXLSwitches, each switch and device built once however many hosts reach it,
as the standalone engine's builder walks the same graph (ext/cxlcore/system).

Import inside a gem5 script (``gem5.opt script.py``) whose gem5 was built
with this repository as EXTRAS; ``m5`` is imported only when objects are made.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Dict, List, NamedTuple, Union

from ..config.params import ParamError
# Root port i's link: seed + 17 i, as in the standalone engine; topology files need the core.
from .components import PORT_SEED_STRIDE, load_core


class HostWindow(NamedTuple):
    host: str      # the topology's host component
    index: int     # its place among the hosts: switches route its responses by it
    base: int      # the window's base in the host's address map
    size: int      # bytes gem5 maps of it (it backs every byte)
    bridge: object  # the CXLHostBridge, its range set


def _prefixed(prefix: str, group) -> Dict[str, object]:
    return {f"{prefix}_{k}": v for k, v in asdict(group).items()}


class _Builder:
    """Each switch and device of topology `t` built once, however many root ports reach it."""

    def __init__(self, t):
        if t.regions:
            raise ParamError(f"topology {t.name} programs HDM decoders ([[regions]]); in gem5 the guest's CXL "
                             "drivers program them (simcxl fs --cxl-region): run it in the standalone engine")
        pbr = [s.name for s in t.of_type("switch") if s.values.get("routing") == 1]
        if pbr:
            raise ParamError(f"{pbr[0]}.routing = \"pbr\": gem5 builds switches with hierarchy-based routing only "
                             "so far; run port-based routing in the standalone engine")
        self.t = t
        self.made: Dict[str, object] = {}
        self.above: Dict[str, dict] = {}  # a switch's upstream link parameters, from the first link reaching it

    def target(self, port, seed: int):
        """What root port (or downstream port) connection `port` leads to: a CXLSwitch or CXLType3Expander."""
        from m5.objects import CXLSwitch, CXLType3Expander  # lazy: needs gem5

        t, made = self.t, self.made
        link = t.components[port.b.comp]
        dev = t.below(link.name, "down")[0]
        link_params = _prefixed("link", link.group(""))
        if dev.type == "switch":
            if dev.name in made:
                if link_params != self.above[dev.name]:
                    raise ParamError(f"{link.name}: its parameters differ from those of the other links into "
                                     f"switch {dev.name}; in gem5 a switch's upstream links share one set "
                                     "(link_* of CXLSwitch)")
                return made[dev.name]
            self.above[dev.name] = link_params
            down = [self.target(k, seed + 7919 * (i + 1)) for i, k in enumerate(t.down(dev.name, "dsp"))]
            made[dev.name] = CXLSwitch(downstream=down, seed=seed, **_prefixed("switch", dev.group("")),
                                       **link_params)
            return made[dev.name]
        if dev.type != "type3":
            raise ParamError(f"{dev.name} is a {dev.type}; gem5 builds Type-3 devices and switches below root "
                             "ports")
        if dev.name in made:
            raise ParamError(f"{dev.name} is reached by two root ports; allowed: one, or a switch above it")
        made[dev.name] = CXLType3Expander(seed=seed, **link_params, **_prefixed("device", dev.group("device")),
                                          **_prefixed("media", dev.group("media")))
        return made[dev.name]

    def bridge(self, hb, index: int = 0, **extra):
        """The CXLHostBridge of host_bridge component `hb`, its root ports built (`index`: its host's place)."""
        from m5.objects import CXLHostBridge  # lazy: needs gem5

        t = self.t
        ports = t.down(hb.name, "root_port")
        params = _prefixed("bridge", hb.group(""))
        # Derived from the connections, as the standalone engine derives them.
        params["bridge_root_ports"] = params["bridge_interleave_ways"] = len(ports)
        return CXLHostBridge(root_ports=[self.target(p, t.seed + PORT_SEED_STRIDE * i) for i, p in enumerate(ports)],
                             host_index=index, **params, **extra)


def window_host_bridge(t):
    """The host_bridge component of a topology that is one full-system window: exactly one host
    window on a host bridge, else a ParamError saying so."""
    hbs = [t.components[k.b.comp] for h in t.of_type("host") for k in t.down(h.name, "mem")
           if t.components[k.b.comp].type == "host_bridge"]
    if len(hbs) != 1:
        raise ParamError(f"topology {t.name} has {len(hbs)} host windows on a host bridge; a full-system board's "
                         "--cxl window takes a topology with exactly one")
    return hbs[0]


def topology_bridge(t, **extra):
    """The CXLHostBridge of a topology's one host window (its switches and devices below), for a
    full-system board's window; `extra`: more CXLHostBridge parameters."""
    return _Builder(t).bridge(window_host_bridge(t), **extra)


def host_windows(spec: Union[str, Path], size: int) -> List[HostWindow]:
    """Every host's CXL windows of topology `spec` as CXLHostBridges sharing
    the switches and devices below them; each window maps its first `size`
    bytes (at most its own size). Hosts with no CXL window are left out."""
    from m5.objects import AddrRange  # lazy: needs gem5

    load_core()
    from .. import topology

    t = topology.load(spec)
    build = _Builder(t)
    out: List[HostWindow] = []
    for index, host in enumerate(t.of_type("host")):
        for conn in t.down(host.name, "mem"):
            hb = t.components[conn.b.comp]
            if hb.type != "host_bridge":
                continue
            if conn.size is not None and size > conn.size:
                raise ParamError(f"size {size} is out of range for window {conn}; allowed: up to {conn.size} bytes")
            bridge = build.bridge(hb, index)
            base = conn.base or 0
            bridge.range = AddrRange(base, size=size)
            out.append(HostWindow(host.name, index, base, size, bridge))
    if not out:
        raise ParamError(f"topology {t.name} has no host with a CXL window (a host.mem connection to a host_bridge)")
    return out
