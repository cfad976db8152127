"""Systems as graphs of components (topology files).

:func:`load` reads a topology file (TOML or JSON) and checks it against the
registry of component types (:mod:`.types`, the C++ core's own); :func:`resolve`
turns anything a ``run`` command takes (a topology file, a preset, presets
joined with +) into a graph; :func:`core_graph` is the one form the core's
builder takes, from a graph or any system; :func:`memory_system`,
:func:`accel_system` and :func:`nic_system` give the workloads' systems back;
:func:`fabric` generates hosts, switch levels and interleaved devices from a few numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Union

from . import parse
from .regions import Platform
from .convert import core_graph, from_system
from .generate import fabric
from .systems import GraphSystem, accel_system, load, memory_system, nic_system, preset_topology
from .graph import Component, Connection, PortRef, Topology, TopologyError
from .rules import check
from .types import TYPES, describe

__all__ = ["GraphSystem", "Platform", "program_region",
           "Component", "Connection", "PortRef", "Topology", "TopologyError", "TYPES", "accel_system", "check", "core_graph",
           "describe", "from_dict", "from_system", "load", "memory_system", "nic_system", "preset_topology",
           "is_file", "resolve", "to_toml", "table", "fabric"]


def from_dict(data: Dict[str, Any], default_name: str = "topology") -> Topology:
    """A topology of a file's shape, its ``from`` taken from the shipped presets."""
    return parse.from_dict(data, default_name, preset_topology)


def resolve(spec: Union[str, Path, Dict[str, Any], Topology]) -> Topology:
    """A topology file, a preset name (memory or accelerator) or memories joined with + as a graph."""
    if isinstance(spec, (Topology, dict)):
        return load(spec)
    text = str(spec)
    if Path(text).suffix.lower() in (".toml", ".json") and Path(text).exists():
        return load(text)
    if Path(text).suffix.lower() in (".toml",):
        from ..config import accel_presets, presets
        raise TopologyError(f"{text}: no such topology file; check the path, or give a preset instead (allowed: "
                            f"{', '.join(presets.names() + accel_presets.preset_names())}); 'simcxl topology show "
                            "PRESET --toml' prints one as a file")
    return preset_topology(text)


def program_region(system: Any, **region: Any):
    """The memory system of ``system`` (a topology file, a preset, a System of a graph) with one more region:
    its decoders committed through the register model as Linux's cxl_region commits them (keys as a
    [[regions]] table's: host_bridge, targets, granularity, size, base, skip, poison, lock), which the
    engine's host bridge then routes by. Returns a System every workload takes."""
    from . import regions
    graph_ = getattr(system, "graph", None)
    t = graph_ if isinstance(graph_, Topology) else resolve(system)
    return memory_system(regions.with_region(t, region))


def is_file(spec: Any) -> bool:
    """Whether a -m/-a/--system argument or a sweep's base names a topology file rather than a preset:
    a .toml file, or a .json file whose top level has components."""
    if not isinstance(spec, (str, Path)):
        return False
    p = Path(spec)
    if p.suffix.lower() == ".toml":
        return True
    if p.suffix.lower() != ".json" or not p.is_file():
        return False
    import json
    try:
        return "components" in json.loads(p.read_text(encoding="utf-8-sig"))
    except (ValueError, OSError, TypeError):
        return False


def to_toml(t: Topology) -> str:
    """The graph as a topology file with every parameter given."""
    import tomli_w
    d = t.to_dict()
    head = {k: d[k] for k in ("name", "description", "source", "seed") if d[k] != ""}
    # Connections as [[connections]] tables after the components (tomli_w would write one inline
    # array first, where a later table header would capture it).
    conns = "".join("\n[[connections]]\n" + tomli_w.dumps(c) for c in d["connections"])
    conns += "".join("\n[[regions]]\n" + tomli_w.dumps(r) for r in d.get("regions", []))
    return tomli_w.dumps(head) + "\n" + tomli_w.dumps({"components": d["components"]}) + conns

def table(t: Topology) -> List[Dict[str, Any]]:
    """Every parameter of every component with where its value came from."""
    rows = []
    for c in t.components.values():
        for k, v in c.values.items():
            rows.append({"component": c.name, "type": c.type, "parameter": k, "value": v,
                         "origin": c.origin.get(k, "")})
    return rows
