"""The registry of component types: each type's parameter groups (from the one
schema in :mod:`simcxl.params`) and its ports, with the channel each port
carries. A topology file names instances of these types and joins their ports.

Channels: ``mem`` is the host's memory path (requests from the uncore to a
window's memory); ``cxl`` is a Flex Bus port, which carries the protocols of
what sits at its far end: ``cxl.mem`` (M2S/S2M) for a Type-3 device,
``cxl.cache`` (D2H/H2D, with CXL.io for DMA) for an accelerator or NIC.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Dict, FrozenSet, Optional, Tuple

from ..params import (AccelParams, BridgeParams, DCacheParams, DeviceParams, DmaParams, DramParams, HomeParams,
                      HostParams, InterSocketParams, LinkParams, NicParams)

#: A host bridge's root ports and HDM interleave ways follow from its connections.
DERIVED = {"host_bridge": {"root_ports": "the number of its root_port connections",
                           "interleave_ways": "the number of its root_port connections"}}


@dataclass(frozen=True)
class Port:
    name: str
    channel: str  # "mem" or "cxl"
    # For cxl ports: the protocols this end speaks (a link's ends speak whatever passes).
    protocols: FrozenSet[str] = frozenset()
    # "down": requests leave through it, toward memory and devices; "up": they arrive. A
    # connection joins a down-facing port to an up-facing one.
    faces: str = "up"
    multi: bool = False  # takes several connections (indexed name[i]), e.g. root ports
    required: bool = True
    doc: str = ""


@dataclass(frozen=True)
class ComponentType:
    name: str
    doc: str
    # (group, ParamGroup class); the group "" holds the parameters at the component's top level.
    groups: Tuple[Tuple[str, type], ...]
    ports: Tuple[Port, ...]

    def port(self, name: str) -> Optional[Port]:
        return next((p for p in self.ports if p.name == name), None)

    def parameters(self) -> Dict[str, Tuple[str, type, str]]:
        """Dotted name within the component -> (group, class, field), derived ones left out."""
        out = {}
        skip = DERIVED.get(self.name, {})
        for g, cls in self.groups:
            for f in fields(cls):
                if g == "" and f.name in skip:
                    continue
                out[f"{g}.{f.name}" if g else f.name] = (g, cls, f.name)
        return out


_CXL_ANY = frozenset({"cxl.mem", "cxl.cache"})

TYPES: Dict[str, ComponentType] = {t.name: t for t in (
    ComponentType("host", "cores with their caches, TLBs and uncore (mesh, LLC miss path); its address map is its "
                  "mem connections, each a window [base, base + size)",
                  (("", HostParams),),
                  (Port("mem", "mem", faces="down", multi=True, doc="a window of the host physical address map"),
                   Port("local", "mem", faces="down", required=False,
                        doc="the host's DRAM when no window maps it (it holds the page tables)"),
                   Port("home", "mem", faces="down", required=False, doc="the CXL.cache home agent"))),
    ComponentType("dram", "a DRAM controller and its channels (DDR4/DDR5 timing, refresh, write drain)",
                  (("", DramParams),), (Port("up", "mem"),)),
    ComponentType("remote_socket", "the other socket's home agent behind a UPI-like link; its DRAM is on down",
                  (("", InterSocketParams),), (Port("up", "mem"), Port("down", "mem", faces="down"))),
    ComponentType("host_bridge", "a CXL host bridge: HDM decoder interleaving its window over its root ports",
                  (("", BridgeParams),),
                  (Port("up", "mem"), Port("root_port", "cxl", frozenset({"cxl.mem"}), faces="down", multi=True,
                                           doc="one root port each, in index order"))),
    ComponentType("home_agent", "the host's CXL.cache home agent: ordering point and snoop filter",
                  (("", HomeParams),),
                  (Port("host", "mem"), Port("root_port", "cxl", frozenset({"cxl.cache"}), faces="down", multi=True,
                                             doc="a root port for each accelerator"))),
    ComponentType("link", "a CXL link: flits, credits, CRC and replay, each direction its own",
                  (("", LinkParams),), (Port("up", "cxl", _CXL_ANY), Port("down", "cxl", _CXL_ANY, faces="down"))),
    ComponentType("type3", "a Type-3 memory expander: controller and media",
                  (("device", DeviceParams), ("media", DramParams)),
                  (Port("up", "cxl", frozenset({"cxl.mem"})),)),
    ComponentType("accelerator", "a Type-1 or Type-2 device: coherent cache, DMA engine, (Type-2) device memory",
                  (("cache", DCacheParams), ("accel", AccelParams), ("dma", DmaParams), ("media", DramParams)),
                  (Port("up", "cxl", frozenset({"cxl.cache"})),)),
    ComponentType("nic", "a CXL-NIC: a Type-1 device whose atomic and RPC engines work in its cache",
                  (("cache", DCacheParams), ("accel", AccelParams), ("dma", DmaParams), ("media", DramParams),
                   ("nic", NicParams)),
                  (Port("up", "cxl", frozenset({"cxl.cache"})),)),
)}


def group_class(ctype: ComponentType, group: str) -> type:
    return dict(ctype.groups)[group]


def describe() -> list:
    """Every type with its ports and parameters (name, default, unit, lo, hi, doc), for the CLI and docs."""
    out = []
    for t in TYPES.values():
        params = []
        for dotted, (g, cls, leaf) in t.parameters().items():
            f = next(x for x in fields(cls) if x.name == leaf)
            m = f.metadata
            params.append({"name": dotted, "default": f.default, "unit": m["unit"], "min": m["lo"], "max": m["hi"],
                           "choices": list(m["choices"]) if m["choices"] else None, "doc": m["doc"]})
        out.append({"type": t.name, "doc": t.doc,
                    "ports": [{"name": p.name, "channel": p.channel, "protocols": sorted(p.protocols),
                               "faces": p.faces, "multi": p.multi, "required": p.required, "doc": p.doc} for p in t.ports],
                    "parameters": params})
    return out

