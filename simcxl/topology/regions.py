"""Regions: HDM decoders committed through the register model, as Linux's
cxl_region commits them, and what the engine then routes by.

A region interleaves a range of host physical addresses over Type-3 devices on
one host bridge's root ports. Creating one writes, through ``simcxl.topology.cxlio``,
each device's decoder (base, size, ways, granularity, DPA skip), then the host
bridge's (the same range with its target list of root port numbers), Commit
and all, in cxl_region_decoder_commit's order (endpoints first), and sets HDM
Decoder Enable. The registers check every commit as the specification says; a
refused one is an error naming the component and the reason. What they hold
afterwards (``committed_decoders()``) goes to the engine, whose host bridge
then sends each address to the root port its decoder names and each device
sees the DPA its decoder gives; addresses no decoder covers are answered by
the bridge (reads all ones, or poison; writes dropped) and counted.

In a topology file::

    [[regions]]
    host_bridge = "hb"               # default: the only host bridge with Type-3 devices
    targets = ["exp0", "exp1"]       # interleave order (default: its devices in root port order)
    granularity = 1024               # bytes, 256 to 16384 (default 256)
    size = "2g"                      # default: the rest of the host's window onto the bridge
    base = "1t"                      # default: where the bridge's last region ends (or the window's base)
    skip = 0                         # DPA each device skips first (or a table by device)
    poison = false                   # Poison On Decode Error Enable on the bridge

Root port N is the bridge's ``root_port[N]`` connection (its position when
the connections give no index).
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
    """The CXL.io registers of a topology's host bridges and of the Type-3 devices on their root ports,
    as software finds them. ``program`` creates a region; ``decoders()`` is what they committed."""

    def __init__(self, topology: Topology, capacity_bytes: int = DEVICE_CAPACITY):
        self.topology = topology
        graph = topology.to_dict()
        graph.pop("regions", None)
        self.bridges: Dict[str, Any] = {}
        self.devices: Dict[str, Any] = {}
        self.port_of: Dict[str, tuple] = {}  # device -> (host bridge, root port number)
        for hb in topology.of_type("host_bridge"):
            ports = topology.down(hb.name, "root_port")
            n = min(len(ports), 8)
            self.bridges[hb.name] = cxlio.HostBridgeRegisters(hdm_decoders=BRIDGE_DECODERS,
                                                              targets=next(t for t in (1, 2, 4, 8) if t >= n))
            for i, k in enumerate(ports):
                dev = topology.below(k.b.comp, "down")[0]
                if dev.type == "type3":
                    self.devices[dev.name] = cxlio.Type3(capacity_bytes, system=graph, component=dev.name)
                    self.port_of[dev.name] = (hb.name, k.a.index if k.a.index is not None else i)

    def function(self, name: str):
        """The registers of a host bridge or Type-3 device by its component name."""
        fn = self.bridges.get(name) or self.devices.get(name)
        if fn is None:
            raise TopologyError(f"{name!r} is not a host bridge or a Type-3 device on a root port; allowed: "
                                f"{', '.join([*self.bridges, *self.devices])}")
        return fn

    def _window(self, hb: str):
        k = next(k for k in self.topology.connections if k.b.comp == hb)
        return (0, 1 << 52) if k.base is None else (k.base, k.base + k.size)

    def program(self, region: Dict[str, Any], where: str = "region") -> None:
        """Creates one region (the keys of a [[regions]] table): device decoders, then the bridge's."""
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
        mine = [d for d, (b, _) in sorted(self.port_of.items(), key=lambda x: x[1][1]) if b == hb]
        targets = list(region.get("targets", mine))
        for d in targets:
            if d not in mine:
                raise TopologyError(f"{where}.targets: {d!r} is not a Type-3 device on a root port of {hb}; "
                                    f"allowed: {', '.join(mine)}")
        if len(set(targets)) != len(targets) or len(targets) not in cxlio.WAYS_CODE or len(targets) > 8:
            raise TopologyError(f"{where}.targets = {targets}: {len(targets)} ways is not allowed; allowed: 1, 2, 3, "
                                "4, 6 or 8 different devices (a host bridge's target list)")
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
        ways = len(targets)
        for d in targets:
            self._commit(d, where, base=base, size=size, ways=ways, granularity=gran, skip=skips[d], lock=lock)
        self._commit(hb, where, base=base, size=size, ways=ways, granularity=gran,
                     targets=[self.port_of[d][1] for d in targets], lock=lock,
                     poison=bool(region.get("poison", False)))

    def _commit(self, name: str, where: str, poison: bool = False, **decoder) -> None:
        fn = self.function(name)
        index = len(fn.committed_decoders())
        limit = BRIDGE_DECODERS if name in self.bridges else 4
        if index >= limit:
            raise TopologyError(f"{where}: {name} has no decoder left ({limit}, all committed); allowed: at most "
                                f"{limit} regions through {name}: remove one")
        try:
            cxlio.commit_decoder(fn, index, **decoder)
        except ValueError as e:
            raise TopologyError(f"{where}: {name} refused to commit {e}") from None
        # Linux sets HDM Decoder Enable at endpoints only (cxl_hdm_decode_init), never at bridges.
        cxlio.enable_hdm(fn, poison or fn.poison_on_decode_error, enable=name not in self.bridges)

    def decoders(self) -> Dict[str, Any]:
        """What every function that decodes by its HDM decoders committed, as the engine reads it."""
        return {name: {"poison_on_decode_error": fn.poison_on_decode_error, "committed": fn.committed_decoders()}
                for name, fn in [*self.bridges.items(), *self.devices.items()] if fn.hdm_enabled}

    def committed_topology(self) -> Topology:
        """A copy of the topology that routes by what these registers committed."""
        t = copy.deepcopy(self.topology)
        t.decoders = self.decoders()
        return t


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
