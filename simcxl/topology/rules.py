"""What makes a topology graph buildable: hosts, ports, cycles, reach, paths and windows, and the
core's own rules for switch fabrics (cycles of switches, port-based routing). Each check raises
TopologyError naming the component and port."""

from __future__ import annotations

from dataclasses import fields
from typing import Dict, List, Tuple

from .. import _core
from ..config.groups import BridgeParams
from ..config.params import PHYS_SPACE
from .graph import Component, Connection, Topology, TopologyError, _check_values
from .types import Port

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


def cache_switch(t: Topology, comp: str):
    """The home agent root port a switch hangs below (a CXL.cache switch), or None (a CXL.mem switch)."""
    for k in t.connections:
        if k.b.comp == comp and t.components[k.a.comp].type == "link":
            above = t.up(k.a.comp)
            if above is not None and t.components[above.a.comp].type == "home_agent":
                return above.a
    return None


def _check_cache_switch(t: Topology, sw: Component, rp) -> None:
    """A switch below a home agent's root port: one upstream link, routing by CacheID, an accelerator (one
    device) on each of 1 to 16 downstream ports (as the core's checkCacheSwitch)."""
    ups = [k for k in t.connections if k.b.comp == sw.name]
    if len(ups) != 1:
        raise TopologyError(f"{sw.name}.up: {len(ups)} upstream links on a switch below {rp} (CXL.cache); allowed: "
                            "one, the link from that root port")
    if port_based(t, sw.name):
        raise TopologyError(f"{sw.name}.routing = pbr: a switch below {rp} (CXL.cache) routes by CacheID; allowed: hbr")
    if sw.values.get("weighted_arbitration", 0):
        raise TopologyError(f"{sw.name}.weighted_arbitration = 1: a switch below {rp} (CXL.cache) sends messages up "
                            "in the order they arrived; allowed: 0")
    if sw.values.get("egress_congestion", 0):
        raise TopologyError(f"{sw.name}.egress_congestion = 1: a switch below {rp} (CXL.cache) carries no DevLoad to "
                            "raise; allowed: 0")
    dsps = t.down(sw.name, "dsp")
    if len(dsps) > 16:
        raise TopologyError(f"{sw.name}.dsp: {len(dsps)} CXL.cache devices below {rp}; allowed: 1 to 16 "
                            "(CXL 3.x CacheIDs)")
    for k in dsps:
        dev = t.below(k.b.comp, "down")[0]
        if dev.type != "accelerator":
            raise TopologyError(f"{k.a} -> {k.b.comp} -> {dev.name}: a {dev.type} below a switch on {rp} (CXL.cache) "
                                "is not modelled; allowed: an accelerator (Type-1 or Type-2) through a link on each "
                                "downstream port")
        n = dev.group("accel").devices
        if n != 1:
            raise TopologyError(f"{dev.name}.accel.devices = {n}: below {sw.name} each device has a downstream port "
                                "of its own; allowed: 1 (a component for each)")


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
            carries = rp.protocols
            if t.components[root.a.comp].type == "switch":  # a switch carries what its root port above does
                carries = {"cxl.cache"} if cache_switch(t, root.a.comp) else {"cxl.mem"}
            if b.type == "switch" and t.components[root.a.comp].type == "home_agent":
                _check_cache_switch(t, b, root.a)
            elif not carries & dev.protocols:
                raise TopologyError(f"{root.a} -> {k.b}: channel type mismatch: {root.a} carries "
                                    f"{'/'.join(sorted(carries))}, {k.b} ({b.type}) "
                                    f"{'/'.join(sorted(dev.protocols))}; join {b.name} below a root port that "
                                    f"carries {'/'.join(sorted(dev.protocols))} ('simcxl topology types' lists them)")
    for sw in t.of_type("switch"):
        if port_based(t, sw.name) or cache_switch(t, sw.name):  # PBR: the core checks; CXL.cache: by CacheID
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
    # A later host's home agent and devices run in shared runs only (the core refuses them elsewhere).
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
