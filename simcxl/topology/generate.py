"""Topologies made from a few structural numbers, so that sweeps can take the structure itself as
axes (``base.hosts``, ``base.levels``, ...): :func:`fabric` builds hosts, switch levels and
interleaved Type-3 devices out of one memory preset's building blocks.

Each generator declares its arguments with their ranges (:data:`GENERATORS`), and
:func:`check_args` refuses a value out of range naming the argument, before anything is built.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, Tuple

from ..config.params import ParamError, shown
from .graph import Topology

#: A link's widths (LinkParams.lanes) and the ways an HDM decoder interleaves over (CXL 2.0, 8.2.4.19).
LANES = (1, 2, 4, 8, 16)
WAYS = (1, 2, 3, 4, 6, 8, 12, 16)
MAX_HOSTS = 16  # the engine's limit on hosts in one system


def fabric(hosts: int = 1, levels: int = 0, interleave_ways: int = 1, preset: str = "cxl-asic",
           host_lanes: int = 16, switch_lanes: int = 16, window_bytes: int = 16 << 30) -> Topology:
    """``hosts`` hosts whose windows interleave over ``interleave_ways`` Type-3 devices, behind
    ``levels`` levels of CXL switches; every part is ``preset``'s (a CXL memory preset: its host,
    local DRAM, host bridge, link and device).

    - ``levels = 0``: each host's bridge has one root port per way, each to a device of its own
      (a Type-3 device has one upstream port: without a switch hosts share nothing).
    - ``levels >= 1``: each host's bridge has one root port, an x``host_lanes`` link to its own
      upstream port of the top switch ``sw1``, whose decoder interleaves over ``interleave_ways``
      downstream ports; below each, a chain of ``levels - 1`` more switches (``sw2_0``, ``sw3_0``, ...,
      joined by x``switch_lanes`` links) ends at device ``d0``, ``d1``, ... on the preset's link. With
      several hosts every device is a multi-logical device with a logical device per host.

    Each host maps ``window_bytes`` at 4 GiB. Names: hosts ``h0``.., their ``hN_ddr``, ``hN_cxl``
    and ``hN_link``; devices ``dJ`` (``hN_dJ`` at level 0) with ``dJ_link``; switch ``swL_J``
    (``sw1`` at the top) with ``swL_J_link`` above it."""
    check_args("fabric", dict(hosts=hosts, levels=levels, interleave_ways=interleave_ways, preset=preset,
                              host_lanes=host_lanes, switch_lanes=switch_lanes, window_bytes=window_bytes))
    from ..config.groups import SwitchParams
    from .convert import from_system
    from .systems import load
    kinds = {c["type"]: c for c in from_system(_check_preset(preset, "fabric: preset")).to_dict()["components"].values()}

    def part(kind: str, **changes: Any) -> Dict[str, Any]:
        return {**copy.deepcopy(kinds[kind]), **changes}

    comps: Dict[str, Any] = {}
    conns = []

    def join(a: str, b: str, **window: int) -> None:
        conns.append({"from": a, "to": b, **window})

    for i in range(hosts):
        h = f"h{i}"
        comps.update({h: part("host"), f"{h}_ddr": part("dram"), f"{h}_cxl": part("host_bridge")})
        join(f"{h}.local", f"{h}_ddr.up")
        join(f"{h}.mem", f"{h}_cxl.up", base=4 << 30, size=window_bytes)
        if levels == 0:
            for j in range(interleave_ways):
                d = f"{h}_d{j}"
                comps.update({f"{d}_link": part("link"), d: part("type3")})
                join(f"{h}_cxl.root_port[{j}]", f"{d}_link.up")
                join(f"{d}_link.down", f"{d}.up")
        else:
            comps[f"{h}_link"] = part("link", lanes=host_lanes)
            join(f"{h}_cxl.root_port[0]", f"{h}_link.up")
            join(f"{h}_link.down", f"sw1.up[{i}]")
    if levels:
        switch = {"type": "switch", **SwitchParams().to_dict()}
        comps["sw1"] = copy.deepcopy(switch)
        for j in range(interleave_ways):
            above = f"sw1.dsp[{j}]"
            for level in range(2, levels + 1):
                s = f"sw{level}_{j}"
                comps.update({f"{s}_link": part("link", lanes=switch_lanes), s: copy.deepcopy(switch)})
                join(above, f"{s}_link.up")
                join(f"{s}_link.down", f"{s}.up")
                above = f"{s}.dsp[0]"
            d = f"d{j}"
            dev = part("type3")
            if hosts > 1:
                dev["device"]["logical_devices"] = hosts
            comps.update({f"{d}_link": part("link"), d: dev})
            join(above, f"{d}_link.up")
            join(f"{d}_link.down", f"{d}.up")
    name = f"fabric-{hosts}h-{levels}l-{interleave_ways}w"
    return load({"name": name, "seed": 1, "components": comps, "connections": conns,
                 "description": f"{hosts} host(s), {levels} switch level(s), {interleave_ways}-way interleave "
                                f"over {preset} devices"})


# name -> (function, {argument: (allowed values) or (lo, hi, type)}, the default of each)
ArgSpec = Dict[str, tuple]
GENERATORS: Dict[str, Tuple[Callable[..., Topology], ArgSpec]] = {
    "fabric": (fabric, {"hosts": (1, MAX_HOSTS, int), "levels": (0, 4, int), "interleave_ways": (WAYS,),
                        "preset": (None,), "host_lanes": (LANES,), "switch_lanes": (LANES,),
                        "window_bytes": (1 << 30, 1 << 44, int)}),
}


def check_args(generator: str, args: Dict[str, Any], where: str = "") -> None:
    """Each argument's name and value against the generator's ranges; the error names ``where``
    (e.g. ``axis 'base.hosts'``) or the argument."""
    if generator not in GENERATORS:
        raise ParamError(f"{where or 'generator'}: {generator!r} is not a topology generator; allowed: "
                         f"{', '.join(GENERATORS)}")
    spec = GENERATORS[generator][1]
    for name, value in args.items():
        at = where or f"{generator}: {name}"
        if name not in spec:
            raise ParamError(f"{at}: {shown(name)} is not an argument of the {generator} generator; allowed: "
                             f"{', '.join(spec)}")
        rng = spec[name]
        if rng == (None,):
            _check_preset(value, at)
        elif len(rng) == 1:
            if isinstance(value, bool) or value not in rng[0]:
                raise ParamError(f"{at}: {value!r} is not allowed; allowed values: {', '.join(map(str, rng[0]))}")
        else:
            lo, hi, _ = rng
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ParamError(f"{at}: {value!r} is out of range; allowed: a whole number from {lo} to {hi}")


def _check_preset(value: Any, where: str):
    """A CXL memory preset of one host, host bridge, link and Type-3 device: the generators' parts."""
    from ..config import presets
    try:
        system = presets.load(value) if isinstance(value, str) and value else None
    except ParamError:
        system = None
    cxl = [n for n in presets.names() if presets.load(n).kind == "cxl-type3"]
    if system is None or system.kind != "cxl-type3" or system.cxl.bridge.root_ports != 1:
        raise ParamError(f"{where}: {value!r} is not allowed; allowed: a CXL memory preset with one root port "
                         f"({', '.join(cxl)}) or such a preset file")
    return system


def generate(generator: str, **args: Any) -> Topology:
    check_args(generator, args)
    return GENERATORS[generator][0](**args)
