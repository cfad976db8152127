"""A system as a graph: named components of registered types joined port to port (PortRef,
Component, Connection, Topology). Topology files are read into it by simcxl.topology.parse and
checked by simcxl.topology.rules."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional

from ..config.param_group import by_name, did_you_mean
from ..config.params import ParamError, shown
from .types import TYPES, ComponentType, group_class


class TopologyError(ParamError):
    """A topology file or graph that cannot be built; the message names the component and port."""


#: PBR IDs are 12 bits (CXL 3.x port-based routing).
PBR_PIDS = 4096
#: A host's LD on CXL memory (CXL 2.0 QoS telemetry), as fractions of a device's peak completions.


@dataclass(frozen=True)
class PortRef:
    comp: str
    port: str
    index: Optional[int] = None

    def __str__(self) -> str:
        return f"{self.comp}.{self.port}" + (f"[{self.index}]" if self.index is not None else "")


@dataclass
class Component:
    name: str
    type: str
    values: Dict[str, Any] = field(default_factory=dict)  # dotted within the component -> value
    origin: Dict[str, str] = field(default_factory=dict)  # dotted -> where the value came from
    description: str = ""

    @property
    def ctype(self) -> ComponentType:
        return TYPES[self.type]

    def group(self, g: str):
        """The parameter group ``g`` ("" for the top level) as its ParamGroup object."""
        cls = group_class(self.ctype, g)
        pre = f"{g}." if g else ""
        kw = {f.name: self.values[pre + f.name] for f in fields(cls) if pre + f.name in self.values}
        return cls(**kw)


@dataclass
class Connection:
    a: PortRef  # the down-facing end (requests leave through it)
    b: PortRef  # the up-facing end
    base: Optional[int] = None
    size: Optional[int] = None
    qos: Dict[str, float] = field(default_factory=dict)  # qos_limit, qos_allocation (host.mem only)
    pid: Optional[int] = None  # a PBR switch's edge port's PBR ID (None: assigned)

    def __str__(self) -> str:
        return f"{self.a} -> {self.b}"


@dataclass
class Topology:
    name: str
    components: Dict[str, Component]
    connections: List[Connection]
    description: str = ""
    source: str = ""
    seed: int = 1
    # Regions software creates ([[regions]], see .regions): each programs and commits HDM decoders
    # through the register model; ``decoders`` is what those registers then hold, what the engine
    # routes by (None: not yet programmed).
    regions: List[Dict[str, Any]] = field(default_factory=list)
    decoders: Optional[Dict[str, Any]] = None

    # -- queries -----------------------------------------------------------------------
    def of_type(self, t: str) -> List[Component]:
        return [c for c in self.components.values() if c.type == t]

    def down(self, comp: str, port: str) -> List[Connection]:
        """The connections leaving a down-facing port, in index order."""
        out = [c for c in self.connections if c.a.comp == comp and c.a.port == port]
        return sorted(out, key=lambda c: c.a.index or 0)

    def up(self, comp: str) -> Optional[Connection]:
        """The connection arriving at a component's up-facing port (each has at most one)."""
        return next((c for c in self.connections if c.b.comp == comp), None)

    def below(self, comp: str, port: str) -> List[Component]:
        return [self.components[c.b.comp] for c in self.down(comp, port)]

    def parameters(self) -> Dict[str, Any]:
        """Every parameter, ``component.dotted``."""
        return {f"{c.name}.{k}": v for c in self.components.values() for k, v in c.values.items()}

    def get(self, path: str) -> Any:
        params = self.parameters()
        if path not in params:
            raise TopologyError(f"{shown(path)} is not a parameter of topology {self.name}; "
                                f"{did_you_mean(path, params)}'simcxl topology show FILE' lists them")
        return params[path]

    def replace(self, **overrides: Any) -> "Topology":
        """A copy with ``component.parameter`` values changed, checked at once."""
        new = copy.deepcopy(self)
        for path, value in overrides.items():
            comp, _, leaf = path.partition(".")
            c = new.components.get(comp)
            if c is None:
                raise TopologyError(f"{shown(path)}: {shown(comp)} is not a component; "
                                    f"{did_you_mean(comp, new.components)}allowed: {', '.join(new.components)}")
            if leaf not in c.ctype.parameters():
                raise TopologyError(f"{shown(path)} is not a parameter of {comp} ({c.type}); "
                                    f"{did_you_mean(leaf, c.ctype.parameters())}allowed: "
                                    f"{', '.join(c.ctype.parameters())} ('simcxl topology types' lists them)")
            g, cls, field_ = c.ctype.parameters()[leaf]
            try:
                c.values[leaf] = by_name(cls, field_, value, path)
            except ParamError as e:
                raise TopologyError(str(e)) from None
            c.origin[leaf] = "override"
        _check_values(new)
        return new

    def to_dict(self) -> Dict[str, Any]:
        """The file's form, every parameter given (``from`` resolved)."""
        comps: Dict[str, Any] = {}
        for c in self.components.values():
            d: Dict[str, Any] = {"type": c.type}
            if c.description:
                d["description"] = c.description
            for g, _ in c.ctype.groups:
                sub = {leaf: c.values[dotted] for dotted, (gg, _, leaf) in c.ctype.parameters().items() if gg == g}
                if g:
                    d[g] = sub
                else:
                    d.update(sub)
            comps[c.name] = d
        conns = []
        for k in self.connections:
            e: Dict[str, Any] = {"from": str(k.a), "to": str(k.b)}
            if k.base is not None:
                e["base"], e["size"] = k.base, k.size
            if k.pid is not None:
                e["pid"] = k.pid
            conns.append({**e, **k.qos})
        out = {"name": self.name, "description": self.description, "source": self.source, "seed": self.seed,
               "components": comps, "connections": conns}
        if self.regions:
            out["regions"] = copy.deepcopy(self.regions)
        return out


# -- checks ----------------------------------------------------------------------------

def _check_values(t: Topology) -> None:
    for c in t.components.values():
        for g, _ in c.ctype.groups:
            where = f"{c.name}.{g}" if g else c.name
            try:
                c.group(g).validate(where)
            except TopologyError:
                raise
            except ParamError as e:
                raise TopologyError(str(e)) from None
