"""The registry of component types, as the C++ core registers them: each
type's parameter groups (the one schema's dataclasses, :mod:`simcxl.config.params`)
and its ports, with the channel each port carries. A topology file names
instances of these types and joins their ports.

Channels: ``mem`` is the host's memory path (requests from the uncore to a
window's memory); ``cxl`` is a Flex Bus port, which carries the protocols of
what sits at its far end: ``cxl.mem`` (M2S/S2M) for a Type-3 device,
``cxl.cache`` (D2H/H2D, with CXL.io for DMA) for an accelerator or NIC.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Dict, FrozenSet, Optional, Tuple

from .. import _core
from ..config.groups import GROUPS

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


def _types() -> Dict[str, ComponentType]:
    out = {}
    for t in _core.component_types():
        ports = tuple(Port(p["name"], p["channel"], frozenset(p["protocols"]), p["faces"], p["multi"], p["required"],
                           p["doc"]) for p in t["ports"])
        out[t["name"]] = ComponentType(t["name"], t["doc"], tuple((k, GROUPS[g]) for k, g in t["groups"]), ports)
    return out


#: The core's registry (ext/cxlcore/system/graph.cpp), its groups as the schema's dataclasses.
TYPES: Dict[str, ComponentType] = _types()
#: A type's parameters that follow from its connections: {type: {parameter: why}}.
DERIVED: Dict[str, Dict[str, str]] = {t["name"]: dict(t["derived"]) for t in _core.component_types() if t["derived"]}
#: The statistics each type reports as <component>.<stat>: {type: [{name, unit, when, doc}, ...]}.
STATS: Dict[str, list] = {t["name"]: list(t["stats"]) for t in _core.component_types()}


def group_class(ctype: ComponentType, group: str) -> type:
    return dict(ctype.groups)[group]


def describe() -> list:
    """Every type with its ports, parameters (name, default, unit, lo, hi, doc) and the statistics it
    reports (docs/reference/stats.md), for the CLI and docs."""
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
                    "parameters": params, "stats": STATS.get(t.name, [])})
    return out

