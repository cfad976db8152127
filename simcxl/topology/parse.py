"""A system as a graph: named components of registered types joined port to port.

A topology file (TOML; JSON with the same keys is accepted)::

    name = "two-expanders"
    seed = 1

    [components.host]
    type = "host"
    from = "ddr-local"          # every parameter from a preset's component of this type
    cores = 16                  # ... and this one from the file

    [components.exp0]
    type = "type3"
    from = "cxl-asic"
    [components.exp0.media]     # a type's parameter group
    ranks = 2

    [[connections]]
    from = "host.mem"           # a window of the host's address map ...
    to = "hb.up"
    base = "1TiB"               # ... at [base, base + size)
    size = "1TiB"

Connections may also be written as pairs: ``connections = [["hb.root_port[0]", "link0.up"], ...]``.
A component gives every parameter of its type, or takes them from a preset with
``from = "PRESET"`` (``"PRESET:COMPONENT"`` where the preset has several of the
type, ``"defaults"`` for the schema's defaults) and changes some. Everything is
checked when the file is loaded, before anything runs; each error is one line
naming the component and port.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple, Union

from ..config.files import read_text
from ..config.param_group import NAME, by_name, did_you_mean
from ..config.params import PHYS_SPACE, ParamError, shown
from .graph import PBR_PIDS, Component, Connection, PortRef, Topology, TopologyError
from .rules import check
from .types import DERIVED, TYPES, Port

_REF = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)\.([a-z_]+)(?:\[(\d+)\])?")
_TOP_KEYS = ("name", "description", "source", "seed", "components", "connections", "regions")
_COMP_KEYS = ("type", "from", "description")
_CONN_KEYS = ("from", "to", "base", "size", "qos_limit", "qos_allocation", "pid")
_QOS_KEYS = ("qos_limit", "qos_allocation")
_VALID = "fix the file there ('simcxl topology show cxl-asic --toml' prints a valid topology file)"

#: Gives the graph of a preset by name, for ``from`` (simcxl.topology passes the presets').
Fragments = Optional[Callable[[str], "Topology"]]


def load(spec: Union[str, Path, Dict[str, Any], Topology], fragments: Fragments = None) -> Topology:
    """A topology file (TOML or JSON), a dict of the same shape, or a Topology as it is."""
    if isinstance(spec, Topology):
        return spec
    if isinstance(spec, dict):
        return from_dict(spec, "topology", fragments)
    path = Path(spec)
    text = read_text(path)
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = _toml_loads(text)
    except json.JSONDecodeError as e:
        raise TopologyError(f"{path} line {e.lineno} column {e.colno}: {e.msg}; {_VALID}") from None
    except ValueError as e:  # tomllib.TOMLDecodeError is a ValueError
        raise TopologyError(f"{path}: {e}; {_VALID}") from None
    try:
        return from_dict(data, path.stem, fragments)
    except ParamError as e:
        raise TopologyError(f"{path}: {e}") from None


def _toml_loads(text: str) -> Dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    return tomllib.loads(text)


def _size(v: Any, where: str, lo: int) -> int:
    if isinstance(v, str):
        from ..config.units import parse_size
        v = parse_size(v, where)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= PHYS_SPACE:
        raise TopologyError(f"{where} = {v!r} is not allowed; allowed: {lo} to {PHYS_SPACE} bytes "
                            "(a whole number, or with k, m, g or t)")
    return v


def _ref(text: Any, where: str, comps: Dict[str, Component]) -> Tuple[PortRef, Port]:
    if not isinstance(text, str) or not _REF.fullmatch(text):
        raise TopologyError(f"{where} = {text!r} is not a port; allowed: COMPONENT.PORT or COMPONENT.PORT[INDEX]")
    m = _REF.fullmatch(text)
    ref = PortRef(m.group(1), m.group(2), int(m.group(3)) if m.group(3) is not None else None)
    c = comps.get(ref.comp)
    if c is None:
        raise TopologyError(f"{where}: {ref.comp} is not a component; {did_you_mean(ref.comp, comps)}"
                            f"allowed: {', '.join(comps)}")
    p = c.ctype.port(ref.port)
    if p is None:
        ports = [x.name for x in c.ctype.ports]
        raise TopologyError(f"{where}: {ref.comp} ({c.type}) has no port {ref.port}; {did_you_mean(ref.port, ports)}"
                            f"allowed: {', '.join(ports)}")
    if ref.index is not None and not p.multi:
        raise TopologyError(f"{where}: {ref.comp}.{ref.port} is a single port and takes no index; remove it")
    return ref, p


def from_dict(data: Any, default_name: str = "topology", fragments: Fragments = None) -> Topology:
    if not isinstance(data, dict):
        raise TopologyError("a topology is a table with components and connections")
    unknown = sorted(set(data) - set(_TOP_KEYS), key=str)
    if unknown:
        raise TopologyError(f"{shown(unknown[0])} is not a topology key; {did_you_mean(unknown[0], _TOP_KEYS)}"
                            f"allowed: {', '.join(_TOP_KEYS)}")
    for k in ("components", "connections"):
        if k not in data:
            raise TopologyError(f"{k} is missing; a topology names its components and joins their ports: add "
                                + ("[components.NAME] tables" if k == "components" else "[[connections]] tables"))
    name = data.get("name", default_name)
    for k in ("name", "description", "source"):
        if k in data and not isinstance(data[k], str):
            raise TopologyError(f"{k} = {data[k]!r} is not allowed; allowed: a string")
    seed = data.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 53:
        raise TopologyError(f"seed = {seed!r} is out of range; allowed: a whole number from 0 to {2 ** 53 - 1}")
    if not isinstance(data["components"], dict) or not data["components"]:
        raise TopologyError("components must be a table of one or more named components")
    comps = {n: _component(n, d, fragments) for n, d in data["components"].items()}
    if not isinstance(data["connections"], list):
        raise TopologyError("connections must be a list of port pairs or tables (from, to, base, size)")
    conns = [_connection(i, x, comps) for i, x in enumerate(data["connections"])]
    regions = data.get("regions", [])
    if not isinstance(regions, list) or not all(isinstance(r, dict) for r in regions):
        raise TopologyError("regions must be a list of tables ([[regions]]: host_bridge, targets, size, ...)")
    topo = Topology(name=name, components=comps, connections=conns, description=data.get("description", ""),
                    source=data.get("source", ""), seed=seed, regions=copy.deepcopy(regions))
    check(topo)
    return topo


def _component(name: Any, d: Any, fragments: Fragments) -> Component:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise TopologyError(f"component name {name!r} is not allowed; allowed: a letter, then letters, digits, _ or -")
    if not isinstance(d, dict):
        raise TopologyError(f"{name} must be a table (type, from and its parameters)")
    if "type" not in d:
        raise TopologyError(f"{name}.type is missing; add type = \"TYPE\" to [components.{name}], allowed: "
                            f"{', '.join(TYPES)} ('simcxl topology types' lists them)")
    t = d["type"]
    if not isinstance(t, str) or t not in TYPES:
        raise TopologyError(f"{name}.type = {t!r} is not a component type; {did_you_mean(t, TYPES)}allowed: "
                            f"{', '.join(TYPES)} ('simcxl topology types' lists them)")
    ctype = TYPES[t]
    c = Component(name, t, description=str(d.get("description", "")))
    if "from" in d:
        _take_from(c, d["from"], fragments)
    groups = {g for g, _ in ctype.groups if g}
    allowed = ctype.parameters()
    for k, v in d.items():
        if k in _COMP_KEYS:
            continue
        if k in groups:
            if not isinstance(v, dict):
                raise TopologyError(f"{name}.{k} must be a table of {k} parameters")
            for leaf, x in v.items():
                _set(c, f"{k}.{leaf}", x, allowed)
        else:
            _set(c, k, v, allowed)
    missing = [k for k in allowed if k not in c.values]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise TopologyError(f"{name}.{missing[0]} is missing{more}; a component gives every parameter of its type or "
                            "takes them from a preset: add it to [components." + name + "], or add from = \"PRESET\" "
                            "(or \"defaults\")")
    return c


def _set(c: Component, dotted: str, v: Any, allowed) -> None:
    if dotted in allowed:
        try:
            c.values[dotted] = by_name(allowed[dotted][1], allowed[dotted][2], v, f"{c.name}.{dotted}")
        except ParamError as e:
            raise TopologyError(str(e)) from None
        c.origin[dotted] = "file"
        return
    leaf = dotted.rpartition(".")[2]
    why = DERIVED.get(c.type, {}).get(leaf)
    if why:
        raise TopologyError(f"{c.name}.{dotted} is not set in a topology: it is {why}; remove it")
    groups = [g for g, _ in c.ctype.groups if g]
    hint = f"; its groups: {', '.join(groups)}" if groups and "." not in dotted else ""
    raise TopologyError(f"{c.name}.{shown(dotted)} is not a parameter of a {c.type}{hint}; "
                        f"{did_you_mean(dotted, allowed)}'simcxl topology types' lists them")


def _take_from(c: Component, spec: Any, fragments: Fragments) -> None:
    if spec == "defaults":
        for dotted, (g, cls, leaf) in c.ctype.parameters().items():
            c.values[dotted] = next(f.default for f in fields(cls) if f.name == leaf)
            c.origin[dotted] = "default"
        return
    if not isinstance(spec, str):
        raise TopologyError(f"{c.name}.from = {spec!r} is not allowed; allowed: PRESET, PRESET:COMPONENT or defaults")
    preset, _, which = spec.partition(":")
    if fragments is None:
        raise TopologyError(f"{c.name}.from = {spec!r}: no presets to take it from here; give every parameter")
    try:
        src = fragments(preset)
    except ParamError as e:
        raise TopologyError(f"{c.name}.from = {spec!r}: {e}") from None
    same = [x for x in src.components.values() if x.type == c.type]
    if not same and c.type == "nic":
        # A NIC is a Type-1 device with a NIC's engines: an accelerator preset gives the device, the schema
        # the NIC's own parameters (as simcxl.workloads.nic.load does).
        _take_from(c, "defaults", fragments)
        same = [x for x in src.components.values() if x.type == "accelerator"]
    if which:
        match = [x for x in same if x.name == which]
    else:
        match = same if len(same) == 1 else []
    if not match:
        have = ", ".join(f"{x.name} ({x.type})" for x in src.components.values())
        raise TopologyError(f"{c.name}.from = {spec!r}: the preset has {'no' if not same else 'several'} {c.type} "
                            f"{'named ' + which if which else ''}; its components: {have}"
                            + ("" if which or not same else f"; name one: {preset}:{same[0].name}"))
    for k, v in match[0].values.items():
        c.values[k] = v
        c.origin[k] = f"preset {preset} ({match[0].name})"


def _connection(i: int, x: Any, comps: Dict[str, Component]) -> Connection:
    where = f"connections[{i}]"
    base = size = pid = None
    qos: Dict[str, float] = {}
    if isinstance(x, (list, tuple)):
        if len(x) != 2:
            raise TopologyError(f"{where} must join two ports, e.g. [\"host.mem\", \"ddr.up\"]")
        ends = list(x)
    elif isinstance(x, dict):
        unknown = sorted(set(x) - set(_CONN_KEYS), key=str)
        if unknown:
            raise TopologyError(f"{where}.{shown(unknown[0])} is not a connection key; allowed: "
                                f"{', '.join(_CONN_KEYS)}")
        for k in ("from", "to"):
            if k not in x:
                raise TopologyError(f"{where}.{k} is missing; a connection joins two ports: add {k} = "
                                "\"COMPONENT.PORT\", e.g. from = \"host.mem\", to = \"ddr.up\"")
        ends = [x["from"], x["to"]]
        if "base" in x or "size" in x:
            if "size" not in x:
                raise TopologyError(f"{where} ({x['from']} -> {x['to']}): size is missing; a window gives base and "
                                    "size: add size = BYTES (e.g. \"1g\")")
            base = _size(x.get("base", 0), f"{where}.base", 0) if x.get("base", 0) != 0 else 0
            size = _size(x["size"], f"{where}.size", 64)
        for q in _QOS_KEYS:
            if q in x:
                v = x[q]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                    raise TopologyError(f"{where}.{q} = {v!r} is out of range; allowed: a fraction from 0 to 1")
                qos[q] = float(v)
        if "pid" in x:
            pid = x["pid"]
            if isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < PBR_PIDS:
                raise TopologyError(f"{where}.pid = {pid!r} is out of range; allowed: a whole number from 0 to "
                                    f"{PBR_PIDS - 1} (a 12-bit PBR ID)")
        if qos and not (0 < qos.get("qos_limit", 1.0) and qos.get("qos_allocation", 0.0) <= qos.get("qos_limit", 1.0)):
            raise TopologyError(f"{where}: qos_limit = {qos.get('qos_limit', 1.0):g}, qos_allocation = "
                                f"{qos.get('qos_allocation', 0.0):g} is not allowed; allowed: 0 < qos_limit <= 1 and "
                                "0 <= qos_allocation <= qos_limit")
    else:
        raise TopologyError(f"{where} must be a pair of ports or a table (from, to, base, size)")
    (ra, pa), (rb, pb) = (_ref(e, where, comps) for e in ends)
    if pa.faces == pb.faces:
        raise TopologyError(f"{where}: {ra} and {rb} both {'send' if pa.faces == 'down' else 'receive'} requests; "
                            f"a connection joins a port that sends them to one that receives them: join {ra} to "
                            f"{'an up' if pa.faces == 'down' else 'a down'} port ('simcxl topology types' lists them)")
    if pa.faces == "up":
        (ra, pa), (rb, pb) = (rb, pb), (ra, pa)
    if pa.channel != pb.channel:
        raise TopologyError(f"{where}: channel type mismatch: {ra} is a {pa.channel} port, {rb} a {pb.channel} port; "
                            f"join {ra} to a {pa.channel} port ('simcxl topology types' lists them)")
    if base is not None and not (comps[ra.comp].type == "host" and ra.port == "mem"):
        raise TopologyError(f"{where}: base and size on {ra} -> {rb}: only a window (host.mem) has them; remove them")
    if qos and not (comps[ra.comp].type == "host" and ra.port == "mem" and comps[rb.comp].type == "host_bridge"):
        raise TopologyError(f"{where}: qos_limit and qos_allocation are given on {ra} -> {rb}; only a host.mem "
                            "connection onto a host_bridge has them (a host's logical devices on CXL memory)")
    return Connection(ra, rb, base, size, qos, pid)
