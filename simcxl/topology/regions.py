"""Regions: HDM decoders committed through the register model, as Linux's
cxl_region commits them, and what the engine then routes by.

A region interleaves a range of host physical addresses over Type-3 devices
below one host bridge: on its root ports or below (hierarchy-based) switches
there. Creating one writes, through ``simcxl.topology.cxlio``, each device's
decoder (base, size, ways, granularity, DPA skip), then those of the ports
above it (switch upstream ports, then the host bridge: the same range, ways
and granularity by cxl_port_setup_targets' rules, a target list of port
numbers), Commit and all, in cxl_region_decoder_commit's order (each
endpoint, then up its path), and sets HDM Decoder Enable at the devices. The registers check every commit as the specification says; a
refused one is an error naming the component and the reason. What they hold
afterwards (``committed_decoders()``) goes to the engine, whose host bridge
then sends each address to the root port its decoder names and each device
sees the DPA its decoder gives; addresses no decoder covers are answered by
the bridge (reads all ones, or poison; writes dropped) and counted.

In a topology file::

    [[regions]]
    host_bridge = "hb"               # default: the only host bridge with Type-3 devices
    targets = ["exp0", "exp1"]       # position order (default: by root port; below switches, by the
                                     # lowest level's port first, as cxl_calc_interleave_pos orders them)
    granularity = 1024               # bytes, 256 to 16384 (default 256)
    size = "2g"                      # default: the rest of the host's window onto the bridge
    base = "1t"                      # default: where the bridge's last region ends (or the window's base)
    skip = 0                         # DPA each device skips first (or a table by device)
    poison = false                   # Poison On Decode Error Enable on the bridge

Root port N is the bridge's ``root_port[N]`` connection (its position when
the connections give no index), a switch's downstream port N its ``dsp[N]``.
``poison`` sets Poison On Decode Error Enable at every port on the region's
paths (bridge and switches).
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional

from . import cxlio
from ..config.param_group import did_you_mean
from ..config.units import parse_size
from .graph import Topology, TopologyError

#: The register model's capacity of each Type-3 device: the timing model has no capacity of its own
#: (its DRAM is addressed by whatever DPA arrives), so IDENTIFY reports this and commits check against it.
DEVICE_CAPACITY = 4 << 40
BRIDGE_DECODERS = 8  # a host bridge's HDM decoders (a device has 4)
KEYS = ("host_bridge", "targets", "granularity", "size", "base", "skip", "poison", "lock")


def _bytes(v: Any, where: str) -> int:
    if isinstance(v, str):
        v = parse_size(v, where)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise TopologyError(f"{where} = {v!r} is not allowed; allowed: a whole number of bytes (or with k, m, g, t)")
    return v


class Platform:
    """The CXL.io registers of a topology's host bridges, of the upstream ports of the (hierarchy-based)
    switches below them and of the Type-3 devices there, as software finds them. ``program`` creates a
    region; ``decoders()`` is what they committed."""

    def __init__(self, topology: Topology, capacity_bytes: int = DEVICE_CAPACITY):
        self.topology = topology
        graph = topology.to_dict()
        graph.pop("regions", None)
        self.bridges: Dict[str, Any] = {}
        self.switches: Dict[str, Any] = {}
        self.devices: Dict[str, Any] = {}
        self.port_of: Dict[str, tuple] = {}  # device -> (host bridge, root port number above it)
        # device -> the ports from its host bridge down: [(host bridge, root port), (switch, dsp), ...]
        self.paths: Dict[str, List[tuple]] = {}

        def walk(owner: str, kind: str, path: List[tuple]) -> None:
            for i, k in enumerate(topology.down(owner, kind)):
                num = k.a.index if k.a.index is not None else i
                below = topology.below(k.b.comp, "down")[0]
                here = [*path, (owner, num)]
                if below.type == "type3" and below.name not in self.devices:
                    self.devices[below.name] = cxlio.Type3(capacity_bytes, system=graph, component=below.name)
                    self.port_of[below.name] = here[0]
                    self.paths[below.name] = here
                elif below.type == "switch" and not below.values.get("routing") and below.name not in self.switches:
                    n = min(len(topology.down(below.name, "dsp")), 8)
                    self.switches[below.name] = cxlio.Port("switch_upstream", hdm_decoders=BRIDGE_DECODERS,
                                                           targets=next(t for t in (1, 2, 4, 8) if t >= n),
                                                           system=graph, link=k.b.comp)
                    walk(below.name, "dsp", here)

        for hb in topology.of_type("host_bridge"):
            n = min(len(topology.down(hb.name, "root_port")), 8)
            self.bridges[hb.name] = cxlio.HostBridgeRegisters(hdm_decoders=BRIDGE_DECODERS,
                                                              targets=next(t for t in (1, 2, 4, 8) if t >= n))
            walk(hb.name, "root_port", [])

    def function(self, name: str):
        """The registers of a host bridge, switch (its upstream port) or Type-3 device by its component name."""
        fn = self.bridges.get(name) or self.switches.get(name) or self.devices.get(name)
        if fn is None:
            raise TopologyError(f"{name!r} is not a host bridge, switch or Type-3 device below one; allowed: "
                                f"{', '.join([*self.bridges, *self.switches, *self.devices])}")
        return fn

    def _window(self, hb: str):
        k = next(k for k in self.topology.connections if k.b.comp == hb)
        return (0, 1 << 52) if k.base is None else (k.base, k.base + k.size)

    def program(self, region: Dict[str, Any], where: str = "region") -> None:
        """Creates one region (the keys of a [[regions]] table): each device's decoder, then those of the
        ports above it not yet committed, bottom up, as cxl_region_decoder_commit does."""
        unknown = sorted(set(region) - set(KEYS), key=str)
        if unknown:
            raise TopologyError(f"{where}.{unknown[0]} is not a region key; {did_you_mean(unknown[0], KEYS)}allowed: "
                                f"{', '.join(KEYS)}")
        hb = region.get("host_bridge")
        if hb is None:
            with_devs = sorted({b for b, _ in self.port_of.values()})
            if len(with_devs) != 1:
                raise TopologyError(f"{where}.host_bridge is missing; add host_bridge = \"NAME\", one of "
                                    f"{', '.join(with_devs) or '(no host bridge has Type-3 devices)'}")
            hb = with_devs[0]
        if hb not in self.bridges:
            raise TopologyError(f"{where}.host_bridge = {hb!r} is not a host bridge; allowed: "
                                f"{', '.join(self.bridges)}")
        mine = [d for d, path in sorted(self.paths.items(), key=lambda x: [n for _, n in x[1]]) if path[0][0] == hb]
        # Default: position order by the ports' numbers, the lowest level's most significant (as
        # cxl_calc_interleave_pos orders an auto region), so each level's ways alternate fastest at the top.
        targets = list(region.get("targets", sorted(mine, key=lambda d: [n for _, n in reversed(self.paths[d])])))
        for d in targets:
            if d not in mine:
                raise TopologyError(f"{where}.targets: {d!r} is not a Type-3 device on a root port of {hb} or below "
                                    f"its switches; allowed: {', '.join(mine)}")
        ways = len(targets)
        switched = any(len(self.paths[d]) > 1 for d in targets)
        # Below switches each port's ways are checked where they are computed (_port_decoders), naming the port.
        if len(set(targets)) != ways or ways not in cxlio.WAYS_CODE or (ways > 8 and not switched):
            raise TopologyError(f"{where}.targets = {targets}: {ways} ways is not allowed; allowed: " + (
                "1, 2, 3, 4, 6, 8, 12 or 16 different devices (a device decoder's ways)" if switched else
                "1, 2, 3, 4, 6 or 8 different devices (a host bridge's target list)"))
        gran = _bytes(region.get("granularity", 256), f"{where}.granularity")
        if gran not in cxlio.GRANULARITIES:
            raise TopologyError(f"{where}.granularity = {gran} is not allowed; allowed: "
                                f"{', '.join(map(str, cxlio.GRANULARITIES))}")
        lo, hi = self._window(hb)
        done = self.bridges[hb].committed_decoders()
        base = _bytes(region["base"], f"{where}.base") if "base" in region else max(
            [lo] + [d["base"] + d["size"] for d in done])
        if "size" in region:
            size = _bytes(region["size"], f"{where}.size")
        elif hi - lo < 1 << 52:
            size = hi - base
        else:
            raise TopologyError(f"{where}.size is missing; the host's window onto {hb} gives no end to take it from: "
                                "add size = BYTES (e.g. \"64g\")")
        if not lo <= base < base + size <= hi:  # as cxl_region refuses a region outside its root decoder
            raise TopologyError(f"{where}: [{base:#x}, {base + size:#x}) lies outside the host's window onto {hb}, "
                                f"[{lo:#x}, {hi:#x}); allowed: base and size within it")
        skip = region.get("skip", 0)
        skips = {d: _bytes(skip.get(d, 0) if isinstance(skip, dict) else skip, f"{where}.skip") for d in targets}
        lock = bool(region.get("lock", False))
        ports = _port_decoders(self, targets, gran, where)
        poison = bool(region.get("poison", False))
        committed = set()
        for d in targets:  # cxl_region_decoder_commit: each endpoint, then up its path, bottom up
            self._commit(d, where, base=base, size=size, ways=ways, granularity=gran, skip=skips[d], lock=lock)
            for owner, _ in reversed(self.paths[d]):
                if owner not in committed:
                    committed.add(owner)
                    iw, ig, dports = ports[owner]
                    self._commit(owner, where, base=base, size=size, ways=iw, granularity=ig, targets=dports,
                                 lock=lock, poison=poison)

    def _commit(self, name: str, where: str, poison: bool = False, **decoder) -> None:
        fn = self.function(name)
        index = len(fn.committed_decoders())
        limit = 4 if name in self.devices else BRIDGE_DECODERS
        if index >= limit:
            raise TopologyError(f"{where}: {name} has no decoder left ({limit}, all committed); allowed: at most "
                                f"{limit} regions through {name}: remove one")
        try:
            cxlio.commit_decoder(fn, index, **decoder)
        except ValueError as e:
            raise TopologyError(f"{where}: {name} refused to commit {e}") from None
        # Linux sets HDM Decoder Enable at endpoints only (cxl_hdm_decode_init), never at bridges or switches.
        cxlio.enable_hdm(fn, poison or fn.poison_on_decode_error, enable=name in self.devices)

    def decoders(self) -> Dict[str, Any]:
        """What every function that decodes by its HDM decoders committed, as the engine reads it."""
        out = {name: {"poison_on_decode_error": fn.poison_on_decode_error, "committed": fn.committed_decoders()}
               for name, fn in [*self.bridges.items(), *self.devices.items()] if fn.hdm_enabled}
        # A switch no region programmed keeps its own interleave.
        out.update({name: {"poison_on_decode_error": fn.poison_on_decode_error, "committed": fn.committed_decoders()}
                    for name, fn in self.switches.items() if fn.committed_decoders()})
        return out

    def committed_topology(self) -> Topology:
        """A copy of the topology that routes by what these registers committed."""
        t = copy.deepcopy(self.topology)
        t.decoders = self.decoders()
        return t


def _port_decoders(p: Platform, targets: List[str], gran: int, where: str) -> Dict[str, tuple]:
    """Each port's decoder for a region over ``targets`` (in position order) at ``gran``, by Linux's rules
    (drivers/cxl/core/region.c, cxl_port_setup_targets): a port's ways are the downstream ports the region
    reaches through it, in the order its positions first reach them; its granularity is its parent's times
    the parent's ways (a host bridge's parent is the one-bridge CFMWS: the region's granularity, 1 way).
    Position p then goes through the port's target (p // d) % ways, where d is the product of the ways
    above it (CXL 3.1 section 8.2.4.20.13: each level picks by the next HPA bits above the last).
    Returns {port: (ways, granularity, target port numbers)}."""
    switched = any(len(p.paths[d]) > 1 for d in targets)
    dports: Dict[str, List[int]] = {}
    for d in targets:
        for owner, num in p.paths[d]:
            got = dports.setdefault(owner, [])
            if num not in got:
                got.append(num)
    out: Dict[str, tuple] = {}
    above: Dict[str, int] = {}  # product of the ways above each port
    for d in targets:
        dist, ig = 1, gran
        for owner, _ in p.paths[d]:
            iw = len(dports[owner])
            if owner not in out:
                kind = "host bridge" if owner in p.bridges else "switch"
                cap = 8 if owner in p.bridges else len(p.topology.down(owner, "dsp"))
                tl = next(t for t in (1, 2, 4, 8) if t >= min(cap, 8))
                if iw > tl:
                    raise TopologyError(f"{where}.targets: {kind} {owner} would interleave {iw} ways, more than its "
                                        f"decoders' target list holds; allowed: at most {tl} of its ports in a region")
                if iw & (iw - 1) and switched:
                    raise TopologyError(f"{where}.targets: {kind} {owner} would interleave {iw} ways (its ports "
                                        f"{dports[owner]}); allowed: 1, 2, 4 or 8 (a power of two, as Linux's "
                                        "cxl_port_setup_targets requires of ports below a one-bridge window)")
                if ig > 16384:
                    raise TopologyError(f"{where}: {kind} {owner} would interleave at {ig} B (its parent's "
                                        "granularity times its ways); allowed: at most 16384 B: a smaller "
                                        "region granularity or fewer ways above it")
                out[owner] = (iw, ig, dports[owner])
                above[owner] = dist
            dist *= iw
            ig *= iw
        if dist != len(targets):
            raise TopologyError(f"{where}.targets: the ports above {d} interleave {dist} ways in all, the region "
                                f"{len(targets)}; allowed: devices spread so that every path splits the region "
                                "alike (each device receives 1/ways of it)")
    for pos, d in enumerate(targets):  # as check_last_peer: each position through the port the arithmetic picks
        for owner, num in p.paths[d]:
            iw, _, tl = out[owner]
            want = tl[pos // above[owner] % iw]
            if num != want:
                raise TopologyError(f"{where}.targets: {d} at position {pos} is below {owner}'s port {num}, but "
                                    f"{owner}'s decoder sends position {pos} to its port {want}; allowed: an order "
                                    "in which position p goes through target (p // ways above) % ways at every port")
    return out


def apply(t: Topology) -> Topology:
    """Programs ``t``'s regions into fresh registers and keeps what they committed in ``t.decoders``."""
    p = Platform(t)
    for i, r in enumerate(t.regions):
        p.program(r, f"regions[{i}]")
    t.decoders = p.decoders()
    return t


def decoders_of(t: Topology) -> Optional[Dict[str, Any]]:
    """The committed decoders the engine routes ``t`` by (None: its bridges use their own interleave)."""
    if t.decoders is None and t.regions:
        apply(t)
    return t.decoders or None


def with_region(t: Topology, region: Dict[str, Any]) -> Topology:
    """A copy of ``t`` with one more region, programmed."""
    new = copy.deepcopy(t)
    new.regions = [*new.regions, dict(region)]
    new.decoders = None
    return apply(new)


__all__: List[str] = ["DEVICE_CAPACITY", "Platform", "apply", "decoders_of", "with_region"]
