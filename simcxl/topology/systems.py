"""Graphs back into the System the workloads take (memories, accelerators, a
NIC), from any legal graph, and the shipped presets as graph fragments.
Component names follow the engine's names for the same parts, so a preset
drawn as a graph and built back is the preset itself
(``tests/test_topology.py`` checks every one).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

from ..config.groups import BridgeParams
from ..config.params import (MAP_KIND, AccelDevice, CxlMemory, ParamError, RemoteMemory, RootPort, System, Window,
                             WindowRange)
from . import parse, regions
from ..config.param_group import did_you_mean
from .convert import from_system
from .graph import Component, Topology, TopologyError
from .rules import port_based, switch_links


def preset_topology(name: str) -> Topology:
    """A shipped preset (memory or accelerator), or memories joined with +, as a graph."""
    from ..config import accel_presets, presets
    if name in accel_presets.preset_names():
        return from_system(accel_presets.load(name))
    if name in presets.names() or "+" in name:
        return from_system(presets.load(name))
    every = presets.names() + accel_presets.preset_names()
    raise ParamError(f"{name!r} is not a preset; {did_you_mean(name, every)}allowed presets: {', '.join(every)}")


def load(spec: Any) -> Topology:
    """A topology file, a dict of its shape or a Topology, its ``from`` taken from the shipped presets;
    its regions programmed (so that a refused commit is reported before anything runs)."""
    t = parse.load(spec, preset_topology)
    regions.decoders_of(t)
    return t


# -- graphs to systems -------------------------------------------------------------------

def _host(t: Topology) -> Component:
    return t.of_type("host")[0]


def _leaf(t: Topology, link: Component) -> Tuple[Component, Component]:
    """The first Type-3 device below a link, through any switches, depth first in port order, and the
    link above it (a PBR fabric may hold cycles, and devices past a link's upper end)."""
    seen = set()

    def visit(sw: str) -> Optional[Tuple[Component, Component]]:
        seen.add(sw)
        for lk in t.below(sw, "dsp"):
            dev = t.below(lk.name, "down")[0]
            if dev.type != "switch":
                return lk, dev
            found = None if dev.name in seen else visit(dev.name)
            if found:
                return found
        for u, _, w in switch_links(t):
            found = visit(u) if w == sw and u not in seen and port_based(t, u) else None
            if found:
                return found
        return None

    dev = t.below(link.name, "down")[0]
    found = (link, dev) if dev.type != "switch" else visit(dev.name)
    if not found:
        raise TopologyError(f"{link.name}: no Type-3 device below it; join one below its switches")
    return found


def _cxl_memory(t: Topology, hb: Component) -> CxlMemory:
    # Behind a switch, its first device stands for the port: the engine runs the graph itself
    # (System.graph), and these groups only describe the window as a preset would.
    links, devs = zip(*(_leaf(t, t.components[k.b.comp]) for k in t.down(hb.name, "root_port")))
    bridge = BridgeParams(**{**hb.group("").to_dict(), "root_ports": len(links), "interleave_ways": len(links)})
    mem = CxlMemory(bridge=bridge, link=links[0].group(""), device=devs[0].group("device"),
                    media=devs[0].group("media"))
    # Ports that all match are described once, as a preset describes them.
    if any(x.values != links[0].values for x in links) or any(d.values != devs[0].values for d in devs):
        mem.ports = [RootPort(link=x.group(""), device=d.group("device"), media=d.group("media"))
                     for x, d in zip(links, devs)]
    return mem


def _remote_memory(t: Topology, rs: Component) -> RemoteMemory:
    return RemoteMemory(link=rs.group(""), dram=t.below(rs.name, "down")[0].group(""))


def _accel_devices(t: Topology, host: Component) -> Tuple[Optional[Component], List[AccelDevice]]:
    homes = t.below(host.name, "home")
    if not homes:
        return None, []
    out = []
    for k in t.down(homes[0].name, "root_port"):
        link = t.components[k.b.comp]
        dev = t.below(link.name, "down")[0]
        # Behind a switch, a device on each downstream port (each with its own link).
        below = [(t.components[d.b.comp], t.below(d.b.comp, "down")[0]) for d in t.down(dev.name, "dsp")] \
            if dev.type == "switch" else [(link, dev)]
        for link, dev in below:
            out.append(AccelDevice(name=dev.name, link=link.group(""),
                                   **{g: dev.group(g) for g in ("cache", "accel", "dma", "media")}))
    return homes[0], out


def memory_system(spec: Union[Topology, Any], lone_device: bool = False) -> System:
    """The engine's System of a graph: one memory or an address map of windows, with any accelerators and
    a NIC (``lone_device``: a single device named as a preset's, cache.mshrs)."""
    t = load(spec)
    host = _host(t)
    ws = t.down(host.name, "mem")
    direct = [c for c in t.below(host.name, "mem") if c.type == "dram"]
    local = direct[0] if direct else t.below(host.name, "local")[0]
    kw: Dict[str, Any] = dict(name=t.name, description=t.description, source=t.source, seed=t.seed,
                              host=host.group(""), local_dram=local.group(""))
    if len(ws) == 1 and ws[0].base is None:
        tgt = t.components[ws[0].b.comp]
        if tgt.type == "dram":
            kw["kind"] = "local-dram"
        elif tgt.type == "remote_socket":
            kw.update(kind="remote-numa", remote=_remote_memory(t, tgt))
        else:
            kw.update(kind="cxl-type3", cxl=_cxl_memory(t, tgt))
    else:
        windows = []
        for k in ws:
            tgt = t.components[k.b.comp]
            rng = WindowRange(base=k.base, size=k.size)
            if tgt.type == "dram":
                windows.append(Window(tgt.name, "local-dram", rng))
            elif tgt.type == "remote_socket":
                windows.append(Window(tgt.name, "remote-numa", rng, remote=_remote_memory(t, tgt)))
            else:
                windows.append(Window(tgt.name, "cxl-type3", rng, cxl=_cxl_memory(t, tgt)))
        kw.update(kind=MAP_KIND, map=windows)
    home, devs = _accel_devices(t, host)
    if home is not None:
        kw.update(home=home.group(""), devices=devs, lone_device=lone_device and len(devs) == 1)
    nics = t.of_type("nic")
    if nics:
        kw["nic"] = nics[0].group("nic")
    try:
        return System(graph=t, **kw).validate()
    except TopologyError:
        raise
    except ParamError as e:
        raise TopologyError(f"topology {t.name}: {e}") from None


def accel_system(spec: Union[Topology, Any]) -> System:
    """The System of an accelerator workload: a host whose memory is its one DRAM, and the home agent's
    devices (a single device named as a preset's)."""
    t = load(spec)
    host = _host(t)
    ws = t.down(host.name, "mem")
    if len(ws) != 1 or ws[0].base is not None or t.components[ws[0].b.comp].type != "dram":
        raise TopologyError(f"{host.name}.mem: accelerator workloads run on a host whose memory is one DRAM "
                            "window (no base or size); with other memories use 'simcxl run mixed'")
    if not t.below(host.name, "home"):
        raise TopologyError(f"{host.name}.home: port left open; accelerator workloads need a home_agent with devices: "
                            f"join {host.name}.home to a home_agent's up port (examples/topologies/type1-asic.toml "
                            "shows one)")
    return memory_system(t, lone_device=True)


def nic_system(spec: Union[Topology, Any]) -> System:
    """The System of a CXL-NIC workload: an accelerator system whose one device is a nic."""
    s = accel_system(spec)
    if len(s.graph.of_type("nic")) != 1 or len(s.devices) != 1:
        raise TopologyError(f"topology {s.graph.name}: NIC workloads run on one device of type nic "
                            f"(here: {', '.join(s.device_names())}); give a topology with one nic below the home agent, "
                            "and no other device")
    return s


__all__ = ["GraphSystem", "preset_topology", "load", "memory_system", "accel_system", "nic_system"]


class GraphSystem:
    """A graph with the builder its workload needs, answering to the graph's parameter names
    (``exp0.media.ranks``) where a preset's system answers to its own (``cxl.media.ranks``):
    ``replace`` gives the engine's system of the changed graph; everything else is the built
    system's. Sweeps and ``--set`` take a topology file through it."""

    def __init__(self, graph: Topology, build):
        self.graph = graph
        self.build = build
        self.system = build(graph)

    def __getattr__(self, name: str):
        if name in ("graph", "build", "system"):  # not yet set (unpickling)
            raise AttributeError(name)
        return getattr(self.system, name)

    def parameters(self) -> Dict[str, Any]:
        return self.graph.parameters()

    def get(self, path: str) -> Any:
        return self.graph.get(path)

    def group(self, name: str):
        comp, _, g = name.partition(".")
        c = self.graph.components.get(comp)
        if c is None or g not in dict(c.ctype.groups):
            groups = [f"{x.name}.{gg}" if gg else x.name for x in self.graph.components.values()
                      for gg, _ in x.ctype.groups]
            raise TopologyError(f"{name} is not a parameter group of topology {self.graph.name}; "
                                f"{did_you_mean(name, groups)}allowed: {', '.join(groups)}")
        return c.group(g)

    def replace(self, **overrides: Any):
        seed = overrides.pop("seed", None)
        g = self.graph.replace(**overrides)
        if seed is not None:
            g.seed = seed
        return self.build(g)
