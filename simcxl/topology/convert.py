"""Systems as graphs: what the engine runs.

Every preset (a memory, an address map ``a+b``, an accelerator, a NIC) is a
graph fragment: :func:`from_system` draws it as components and connections,
and :func:`core_graph` is the one form the C++ core takes, whatever the
system (the core's builder walks it; ``_core.component_types()`` is the
registry it checks against). :mod:`.systems` builds the preset-shaped
systems back from any legal graph.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..config.params import MAP_KIND, AccelDevice, CxlMemory, ParamError, RemoteMemory
from . import regions
from .graph import Component, Connection, PortRef, Topology
from .rules import check
from .types import TYPES


# -- systems to graphs -------------------------------------------------------------------

def _comp(name: str, t: str, origin: str, **groups) -> Component:
    """A component from ParamGroup objects: ``_comp("x", "type3", o, device=d, media=m)``; ``top`` is group ""."""
    c = Component(name, t)
    for g, _ in TYPES[t].groups:
        obj = groups["top" if g == "" else g]
        for k, v in obj.to_dict().items():
            dotted = f"{g}.{k}" if g else k
            if dotted in TYPES[t].parameters():
                c.values[dotted] = v
                c.origin[dotted] = origin
    return c


class _Builder:
    def __init__(self, origin: str):
        self.origin = origin
        self.comps: Dict[str, Component] = {}
        self.conns: List[Connection] = []

    def add(self, name: str, t: str, **groups) -> str:
        if name in self.comps:
            raise ParamError(f"{name}: two components of that name; rename one")
        self.comps[name] = _comp(name, t, self.origin, **groups)
        return name

    def join(self, a: str, b: str, index: Optional[int] = None, base=None, size=None) -> None:
        ac, ap = a.split(".")
        bc, bp = b.split(".")
        self.conns.append(Connection(PortRef(ac, ap, index), PortRef(bc, bp), base, size))


def _cxl_window(b: _Builder, name: str, cxl: CxlMemory, host: str, base=None, size=None) -> None:
    b.add(name, "host_bridge", top=cxl.bridge)
    b.join(f"{host}.mem", f"{name}.up", base=base, size=size)
    for i in range(cxl.bridge.root_ports):
        link, dev = f"{name}_link{i}", f"{name}_dev{i}"
        port = cxl.ports[i] if cxl.ports else cxl
        b.add(link, "link", top=port.link)
        b.add(dev, "type3", device=port.device, media=port.media)
        b.join(f"{name}.root_port", f"{link}.up", index=i)
        b.join(f"{link}.down", f"{dev}.up")


def _remote_window(b: _Builder, name: str, remote: RemoteMemory, host: str, base=None, size=None) -> None:
    b.add(name, "remote_socket", top=remote.link)
    b.add(f"{name}_dram", "dram", top=remote.dram)
    b.join(f"{host}.mem", f"{name}.up", base=base, size=size)
    b.join(f"{name}.down", f"{name}_dram.up")


def _devices(b: _Builder, host: str, home, devices: List[AccelDevice], nic=None) -> None:
    b.add("home", "home_agent", top=home)
    b.join(f"{host}.home", "home.host")
    for i, d in enumerate(devices):
        link = f"{d.name}_link"
        b.add(link, "link", top=d.link)
        groups = {g: getattr(d, g) for g in ("cache", "accel", "dma", "media")}
        if nic is not None and i == 0:  # a system's NIC is its first device
            b.add(d.name, "nic", nic=nic, **groups)
        else:
            b.add(d.name, "accelerator", **groups)
        b.join("home.root_port", f"{link}.up", index=i)
        b.join(f"{link}.down", f"{d.name}.up")


def from_system(s: Any) -> Topology:
    """A System as a graph: its memories, and its accelerators (or NIC) on the home agent."""
    origin = f"preset {s.name}"
    b = _Builder(origin)
    b.add("host", "host", top=s.host)
    if s.kind == MAP_KIND:
        mapped_local = False
        for w in s.map:
            rng = dict(base=w.range.base, size=w.range.size)
            if w.kind == "local-dram":
                if mapped_local:
                    raise ParamError(f"{w.name}: a second window onto the local DRAM has no graph of its own yet; "
                                     "allowed: one local-dram window")
                mapped_local = True
                b.add(w.name, "dram", top=s.local_dram)
                b.join("host.mem", f"{w.name}.up", **rng)
            elif w.kind == "remote-numa":
                _remote_window(b, w.name, w.remote, "host", **rng)
            else:
                _cxl_window(b, w.name, w.cxl, "host", **rng)
        if not mapped_local:
            b.add("local_dram", "dram", top=s.local_dram)
            b.join("host.local", "local_dram.up")
    elif s.kind == "local-dram":
        b.add("local_dram", "dram", top=s.local_dram)
        b.join("host.mem", "local_dram.up")
    else:
        b.add("local_dram", "dram", top=s.local_dram)
        b.join("host.local", "local_dram.up")
        if s.kind == "remote-numa":
            _remote_window(b, "remote", s.remote, "host")
        else:
            _cxl_window(b, "cxl", s.cxl, "host")
    if s.devices:
        _devices(b, "host", s.home, s.devices, s.nic)
    t = Topology(s.name, b.comps, b.conns, s.description, s.source, s.seed)
    check(t)
    return t


def core_graph(s: Any) -> Dict[str, Any]:
    """What the C++ core takes: the system's graph, every parameter given."""
    graph = getattr(s, "graph", None)
    t = s if isinstance(s, Topology) else graph if graph is not None else from_system(s)
    d = t.to_dict()
    d.pop("regions", None)
    decoders = regions.decoders_of(t)
    if decoders:
        d["decoders"] = decoders  # the host bridges named there route by them
    if getattr(s, "lone_device", False):
        d["lone_device_unnamed"] = True  # its parameters in messages keep the preset's bare names
    return d


__all__ = ["core_graph", "from_system"]
