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
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from .. import _core
from ..config.files import read_text
from ..config.param_group import NAME, by_name, did_you_mean
from ..config.groups import BridgeParams
from ..config.params import PHYS_SPACE, ParamError, shown
from .types import DERIVED, TYPES, ComponentType, Port, group_class


class TopologyError(ParamError):
    """A topology file or graph that cannot be built; the message names the component and port."""


_REF = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)\.([a-z_]+)(?:\[(\d+)\])?")
_TOP_KEYS = ("name", "description", "source", "seed", "components", "connections", "regions")
_COMP_KEYS = ("type", "from", "description")
_CONN_KEYS = ("from", "to", "base", "size", "qos_limit", "qos_allocation", "pid")
#: PBR IDs are 12 bits (CXL 3.x port-based routing).
PBR_PIDS = 4096
#: A host's LD on CXL memory (CXL 2.0 QoS telemetry), as fractions of a device's peak completions.
_QOS_KEYS = ("qos_limit", "qos_allocation")
_VALID = "fix the file there ('simcxl topology show cxl-asic --toml' prints a valid topology file)"


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


# -- loading ---------------------------------------------------------------------------

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


def check(t: Topology) -> None:
    """Every rule a buildable graph obeys; raises TopologyError naming the component and port."""
    _check_values(t)
    hosts = t.of_type("host")
    if not hosts:
        raise TopologyError("the topology has no host; allowed: one component of type host: add "
                            "[components.host] with type = \"host\" and join its mem port")
    if len(hosts) > MAX_HOSTS:
        raise TopologyError(f"{hosts[MAX_HOSTS].name}: {len(hosts)} hosts; allowed: 1 to {MAX_HOSTS}")
    _check_ports(t)
    _check_cycles(t)
    _check_paths(t)
    if switch_links(t):
        _check_core(t, _core.check_switch_fabric)  # cycles of switches and routing
    _check_reach(t, hosts)
    for h in hosts:
        _check_host(t, h, first=h is hosts[0])
        _check_windows(t, h)
    if any(port_based(t, s.name) for s in t.of_type("switch")):
        _check_core(t, _core.pbr_fabrics)  # PIDs and routes


def _check_core(t: Topology, f) -> None:
    """The core's own check of the graph (one implementation of the rules of switch fabrics)."""
    try:
        f(t.to_dict())
    except ValueError as e:
        raise TopologyError(str(e)) from None


def port_based(t: Topology, comp: str) -> bool:
    """A switch with routing = "pbr"."""
    c = t.components.get(comp)
    return c is not None and c.type == "switch" and c.values.get("routing", 0) == 1


def switch_links(t: Topology) -> List[Tuple[str, str, str]]:
    """Links joining two switches, as (upper switch, link, lower switch)."""
    out = []
    for k in t.connections:
        if k.a.port == "dsp" and t.components[k.a.comp].type == "switch":
            below = t.below(k.b.comp, "down")
            if below and below[0].type == "switch":
                out.append((k.a.comp, k.b.comp, below[0].name))
    return out


def _check_ports(t: Topology) -> None:
    used: Dict[Tuple[str, str], List[Connection]] = {}
    for k in t.connections:
        for ref in (k.a, k.b):
            used.setdefault((ref.comp, ref.port), []).append(k)
    for (comp, port), ks in used.items():
        p = t.components[comp].ctype.port(port)
        if not p.multi and len(ks) > 1:
            raise TopologyError(f"{comp}.{port}: two things on one port ({ks[0]} and {ks[1]}); a {p.channel} port "
                                "joins one other port: remove one connection, or add a switch between them")
        if p.multi:
            idx = [(k.a if k.a.comp == comp else k.b).index for k in ks]
            given = [i for i in idx if i is not None]
            if given and len(given) != len(idx):
                raise TopologyError(f"{comp}.{port}: some connections give an index, some none; give every "
                                    f"connection an index ({comp}.{port}[0], {comp}.{port}[1], ...) or none")
            if len(set(given)) != len(given):
                dup = next(i for i in given if given.count(i) > 1)
                raise TopologyError(f"{comp}.{port}[{dup}]: two things on one port; give each connection its own index")
    for c in t.components.values():
        for p in c.ctype.ports:
            if p.required and (c.name, p.name) not in used:
                raise TopologyError(f"{c.name}.{p.name}: port left open; a {c.type} joins its {p.name} port "
                                    f"to {'a' if p.faces == 'down' else 'an upstream'} {p.channel} port: add a "
                                    f"[[connections]] table, e.g. {_joining(t, c, p)}")


def _joining(t: Topology, c: Component, p: Port) -> str:
    """A connection that would close an open port: onto a free port of the other side, if the graph has one."""
    used = {(r.comp, r.port) for k in t.connections for r in (k.a, k.b)}
    free = [f"{x.name}.{q.name}" for x in t.components.values() if x is not c for q in x.ctype.ports
            if q.faces != p.faces and q.channel == p.channel and (q.multi or (x.name, q.name) not in used)]
    ends = (f"{c.name}.{p.name}", free[0] if free else "COMPONENT.PORT")
    return 'from = "{}", to = "{}"'.format(*(ends if p.faces == "down" else ends[::-1]))


def _check_cycles(t: Topology) -> None:
    # Cycles of switches are the core's to judge (_check_core): PBR switches may form them.
    isl = {x for u, l, w in switch_links(t) for x in ((u, l), (l, w))}
    nxt: Dict[str, List[str]] = {}
    for k in t.connections:
        if (k.a.comp, k.b.comp) not in isl:
            nxt.setdefault(k.a.comp, []).append(k.b.comp)
    state: Dict[str, int] = {}

    def visit(n: str, path: List[str]) -> None:
        state[n] = 1
        for m in nxt.get(n, []):
            if state.get(m) == 1:
                loop = path[path.index(m):] + [m] if m in path else [n, m]
                raise TopologyError(f"{m}: cycle {' -> '.join(loop)}; requests must not come back to a component "
                                    "they passed: remove one of these connections")
            if m not in state:
                visit(m, path + [m])
        state[n] = 2

    for n in t.components:
        if n not in state:
            visit(n, [n])


def reached_from(t: Topology, comp: str) -> set:
    """Every component a path from ``comp`` reaches, itself included."""
    # Port-based routing carries requests both ways on a link between PBR switches.
    back = [(w, l, u) for u, l, w in switch_links(t) if port_based(t, u) and port_based(t, w)]
    seen = {comp}
    todo = [comp]
    while todo:
        n = todo.pop()
        nxt = [k.b.comp for k in t.connections if k.a.comp == n] + [x for w, l, u in back if w == n for x in (l, u)]
        for m in nxt:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def _check_reach(t: Topology, hosts: List[Component]) -> None:
    """Everything hangs below a host; only switches, the links and Type-3 devices below them are shared, a
    device by as many hosts as it has logical devices, and a host reaches a switch by one upstream port."""
    reach = {h.name: reached_from(t, h.name) for h in hosts}
    names = ", ".join(h.name for h in hosts)
    for c in t.components.values():
        by = [h for h in reach if c.name in reach[h]]
        if not by:
            where = f"host {names}" if len(hosts) == 1 else f"any host ({names})"
            raise TopologyError(f"{c.name}: not reached from {where}; every component hangs below a host: join "
                                "it below one with a [[connections]] table, or remove it")
        lds = c.group("device").logical_devices if c.type == "type3" else 0
        if c.type == "type3" and len(by) > lds and not c.group("device").shared:
            raise TopologyError(f"{c.name}.device.logical_devices = {lds}: "
                                f"{len(by)} hosts reach it ({', '.join(by)}); allowed: a logical device for each "
                                "host (an MLD), at most 16, or device.shared = 1")
        if len(by) > 1 and c.type not in ("switch", "type3", "link"):
            raise TopologyError(f"{c.name}: hosts {by[0]} and {by[1]} both reach it; allowed: only switches and "
                                "the links and Type-3 devices below them are shared")
    for h, seen in reach.items():
        for sw in t.of_type("switch"):
            if port_based(t, sw.name):  # the core checks a host enters a PBR fabric by one edge port
                continue
            ups = [k for k in t.connections if k.b.comp == sw.name and k.a.comp in seen]
            if len(ups) > 1:
                raise TopologyError(f"{sw.name}.up: host {h} reaches it through {len(ups)} upstream ports "
                                    f"({ups[0].b} and {ups[1].b}); allowed: one per host")


# What each down-facing port may lead to.
_LEADS = {("host", "mem"): ("dram", "remote_socket", "host_bridge"), ("host", "local"): ("dram",),
          ("host", "home"): ("home_agent",), ("remote_socket", "down"): ("dram",),
          ("host_bridge", "root_port"): ("link",), ("home_agent", "root_port"): ("link",),
          ("link", "down"): ("type3", "accelerator", "nic", "switch"), ("switch", "dsp"): ("link",)}
#: Hosts one system may hold (the core numbers them in each request).
MAX_HOSTS = _core.MAX_HOSTS
#: How many downstream ports a switch's decoder interleaves over: the way counts the schema allows a decoder.
SWITCH_WAYS = next(f for f in fields(BridgeParams) if f.name == "interleave_ways").metadata["choices"]


def _check_paths(t: Topology) -> None:
    for k in t.connections:
        a, b = t.components[k.a.comp], t.components[k.b.comp]
        ok = _LEADS.get((a.type, k.a.port), ())
        if b.type not in ok:
            if b.type == "link" and a.type == "link":
                raise TopologyError(f"{k.a} -> {k.b}: two links in a row; a link joins a root port or a switch's "
                                    "downstream port to a device or a switch: remove one of the links")
            if b.type in ("type3", "accelerator", "nic", "switch") and a.type in ("host_bridge", "home_agent", "switch"):
                raise TopologyError(f"{k.a} -> {k.b}: a port reaches what is below it through a link: add a "
                                    f"component of type link between {k.a} and {k.b}")
            raise TopologyError(f"{k.a} -> {k.b}: a {a.type}'s {k.a.port} port leads to {' or '.join(ok)}, "
                                f"not a {b.type}; join {k.a} to one of those instead")
        if a.type == "link":
            root = t.up(a.name)
            rp = t.components[root.a.comp].ctype.port(root.a.port)
            dev = b.ctype.port(k.b.port)
            if not rp.protocols & dev.protocols:
                raise TopologyError(f"{root.a} -> {k.b}: channel type mismatch: {root.a} carries "
                                    f"{'/'.join(sorted(rp.protocols))}, {k.b} ({b.type}) "
                                    f"{'/'.join(sorted(dev.protocols))}; join {b.name} below a root port that "
                                    f"carries {'/'.join(sorted(dev.protocols))} ('simcxl topology types' lists them)")
    for sw in t.of_type("switch"):
        if port_based(t, sw.name):  # a PBR host edge decodes over the fabric's devices (the core checks them)
            continue
        n = len(t.down(sw.name, "dsp"))
        if n not in SWITCH_WAYS:
            raise TopologyError(f"{sw.name}.dsp: {n} downstream ports is not allowed; its decoder interleaves over "
                                f"all of them: allowed {', '.join(map(str, SWITCH_WAYS))}")


def _check_host(t: Topology, host: Component, first: bool) -> None:
    locals_ = t.below(host.name, "local")
    direct = [c for c in t.below(host.name, "mem") if c.type == "dram"]
    if len(direct) > 1:
        raise TopologyError(f"{direct[1].name}: a second DRAM on {host.name}.mem; the host has one local DRAM "
                            f"controller ({direct[0].name}), which one window maps: remove the other")
    if locals_ and direct:
        raise TopologyError(f"{host.name}.local joins {locals_[0].name} while window {direct[0].name} maps a DRAM "
                            "of its own; the host has one local DRAM: map it, or join it to local")
    if not locals_ and not direct:
        raise TopologyError(f"{host.name}.local: port left open; with no DRAM window the host's own DRAM (its page "
                            f"tables) joins host.local: add a connection from {host.name}.local to a dram's up port")
    homes = t.below(host.name, "home")
    if homes and not first:
        raise TopologyError(f"{host.name}.home: CXL.cache devices hang below the first host "
                            f"({t.of_type('host')[0].name}) only so far; join the home_agent to its home port")
    if homes and len(t.down(homes[0].name, "root_port")) > 16:
        raise TopologyError(f"{homes[0].name}.root_port: more than 16 accelerators; allowed: up to 16 per host")


def _check_windows(t: Topology, host: Component) -> None:
    ws = t.down(host.name, "mem")
    bounded = [k for k in ws if k.base is not None]
    if len(ws) > 1 and len(bounded) != len(ws):
        k = next(k for k in ws if k.base is None)
        raise TopologyError(f"{k}: base and size are missing; with several windows each gives where it lies: add "
                            "base = ADDRESS and size = BYTES to it")
    for k in bounded:
        b, e = k.base, k.base + k.size
        if b % 64 or k.size % 64:
            raise TopologyError(f"{k}: window [0x{b:x}, 0x{e:x}) is not aligned; allowed: base and size multiples "
                                "of 64 bytes")
        if e > PHYS_SPACE:
            raise TopologyError(f"{k}: window ends at 0x{e:x}, beyond the 52-bit physical address space; allowed: "
                                f"base + size up to 0x{PHYS_SPACE:x}")
        tgt = t.components[k.b.comp]
        if tgt.type == "host_bridge":
            g = tgt.values["interleave_bytes"]
            ways = len(t.down(tgt.name, "root_port"))
            if b % g:
                raise TopologyError(f"{k}: window base 0x{b:x} is not aligned to {tgt.name}.interleave_bytes ({g}); "
                                    f"allowed: a multiple of {g}")
            if k.size % (g * ways):
                raise TopologyError(f"{k}: window size {k.size} is not a multiple of {ways} ways x {g} B "
                                    f"({tgt.name}.interleave_bytes); allowed: a multiple of {g * ways}")
    spans = sorted(((k.base, k.base + k.size, k) for k in bounded), key=lambda x: x[0])
    for (b0, e0, k0), (b1, e1, k1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise TopologyError(f"{k1}: window [0x{b1:x}, 0x{e1:x}) overlaps {k0.b.comp}'s [0x{b0:x}, 0x{e0:x}); "
                                f"allowed: windows that share no address (e.g. base = 0x{e0:x})")
