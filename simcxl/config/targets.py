"""Where a workload's pages lie: one window of a system's address map, or a weighted interleave."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

from .params import ParamError, System, did_you_mean, shown

Target = Union[None, str, Dict[str, int], List[Tuple[str, int]]]


def parse_target(target: Target, system: System, where: str = "target") -> Optional[List[Tuple[str, int]]]:
    """A workload's target as [(window, weight)]: one window by name, or a weighted interleave
    ``"ddr:3,cxl0:1"`` (or a dict / list of pairs). None stays None (the engine's default)."""
    if target is None:
        return None
    if not hasattr(system, "window_names"):
        raise ParamError(f"{where} = {target!r} is not allowed for an accelerator system; "
                         "a target names a window of a memory system's address map")
    allowed = system.window_names()
    if isinstance(target, str):
        pairs = []
        for part in target.split(","):
            part = part.strip()
            if not part:
                raise ParamError(f"{where} {target!r} has an empty entry; allowed: WINDOW or WINDOW:WEIGHT,"
                                 "WINDOW:WEIGHT,... (windows: " + ", ".join(allowed) + ")")
            wname, sep, weight = part.partition(":")
            if not sep:
                pairs.append((wname.strip(), 1))
                continue
            try:
                pairs.append((wname.strip(), int(weight)))
            except ValueError:
                raise ParamError(f"{where}: weight {weight!r} of {wname} is not a whole number; allowed: 1 to "
                                 "255") from None
    elif isinstance(target, dict):
        pairs = list(target.items())
    else:
        try:
            pairs = [(n, w) for n, w in target]
        except (TypeError, ValueError):
            raise ParamError(f"{where} = {target!r} is not allowed; allowed: a window name, 'WINDOW:WEIGHT,...', "
                             "a dict or a list of (window, weight)") from None
    if not pairs:
        raise ParamError(f"{where} names no window; allowed windows: {', '.join(allowed)}")
    seen = set()
    for n, w in pairs:
        if n not in allowed:
            raise ParamError(f"{where}: {shown(n)!r} is not a window of {system.name}'s address map; "
                             f"{did_you_mean(n, allowed)}allowed: {', '.join(allowed)}")
        if n in seen:
            raise ParamError(f"{where} names window {n!r} twice; allowed: each window once")
        seen.add(n)
        if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 255:
            raise ParamError(f"{where}: weight of {n} = {w!r} is out of range; allowed: a whole number from 1 "
                             "to 255 (Linux weighted_interleave's range)")
    return [(n, int(w)) for n, w in pairs]


def target_text(pairs: Optional[List[Tuple[str, int]]], system: System) -> str:
    """The target as the CLI writes it: 'cxl0', or 'ddr:3,cxl0:1'."""
    if pairs is None:
        return system.window_names()[0]
    if len(pairs) == 1:
        return pairs[0][0]
    return ",".join(f"{n}:{w}" for n, w in pairs)
