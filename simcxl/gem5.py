"""gem5 side of SimCXL: standard-library memory components built from the same
presets and dataclasses as the standalone engine, and stats.txt parsing.

Import this module inside a gem5 script (``gem5.opt script.py``) whose gem5 was
built with this repository as EXTRAS; ``m5`` is imported only when a component
is made, so the rest of the module works anywhere.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

from .params import ParamError, System
from .presets import load

# SimObject parameter groups: prefix -> (attribute path in System, dataclass)
GROUPS = (("bridge", "cxl.bridge"), ("link", "cxl.link"), ("device", "cxl.device"), ("media", "cxl.media"))


def simobject_params(system: System) -> Dict[str, object]:
    """The CXLMemExpander parameters of a cxl-type3 system (prefixed names)."""
    if system.kind != "cxl-type3":
        raise ParamError(f"memory {system.name} is a {system.kind}; the gem5 CXL component needs a cxl-type3 preset")
    out: Dict[str, object] = {"seed": system.seed}
    for prefix, path in GROUPS:
        group = system.cxl
        for part in path.split(".")[1:]:
            group = getattr(group, part)
        for f in fields(group):
            out[f"{prefix}_{f.name}"] = getattr(group, f.name)
    return out


def cxl_memory(memory: Union[str, Path, System] = "cxl-asic", size: str = "4GiB"):
    """A gem5 stdlib memory system (for TestBoard, SimpleBoard, X86Board slots)
    holding one CXL Type-3 expander timed by the SimCXL core."""
    from m5.objects import CXLMemExpander  # noqa: F401  (lazy: needs gem5)
    from m5.util.convert import toMemorySize
    from gem5.components.memory.abstract_memory_system import AbstractMemorySystem
    from gem5.utils.override import overrides

    system = load(memory)
    params = simobject_params(system)

    class CXLMemorySystem(AbstractMemorySystem):
        def __init__(self):
            super().__init__()
            from m5.objects import CXLMemExpander as Expander
            self.module = Expander(**params)
            self._size = toMemorySize(size)
            self._simcxl_system = system  # the description it was built from

        @overrides(AbstractMemorySystem)
        def incorporate_memory(self, board) -> None:
            pass

        @overrides(AbstractMemorySystem)
        def get_mem_ports(self):
            return [(self.module.range, self.module.port)]

        @overrides(AbstractMemorySystem)
        def get_memory_controllers(self):
            return [self.module]

        @overrides(AbstractMemorySystem)
        def get_size(self) -> int:
            return self._size

        @overrides(AbstractMemorySystem)
        def set_memory_range(self, ranges) -> None:
            if len(ranges) != 1 or ranges[0].size() != self._size:
                raise ParamError("the CXL memory takes one address range of its own size")
            self.module.range = ranges[0]

    return CXLMemorySystem()


_STAT = re.compile(r"^(\S+)\s+([-+0-9.eE]+|nan|inf)\s*(?:#\s*(.*))?$")


def read_stats(path: Union[str, Path]) -> List[Tuple[int, str, float, str]]:
    """gem5's stats.txt as (dump, stat, value, description) rows; standard
    library only, so gem5's embedded Python can use it."""
    rows: List[Tuple[int, str, float, str]] = []
    dump = -1
    for line in Path(path).read_text().splitlines():
        if line.startswith("---------- Begin Simulation Statistics"):
            dump += 1
            continue
        m = _STAT.match(line.strip())
        if m and dump >= 0:
            rows.append((dump, m.group(1), float(m.group(2)), (m.group(3) or "").strip()))
    return rows


def parse_stats(path: Union[str, Path]):
    """gem5's stats.txt as a pandas table: one row per (dump, stat) with its value."""
    import pandas as pd

    return pd.DataFrame(read_stats(path), columns=["dump", "stat", "value", "description"])


def stat(stats, pattern: str, dump: int = -1) -> Dict[str, float]:
    """Stats of one dump (last by default) whose names match a regex; `stats`
    is what read_stats or parse_stats returned."""
    rows = stats.itertuples(index=False) if hasattr(stats, "itertuples") else stats
    rows = [tuple(r) for r in rows]
    if not rows:
        return {}
    d = max(r[0] for r in rows) if dump < 0 else dump
    rx = re.compile(pattern)
    return {r[1]: r[2] for r in rows if r[0] == d and rx.search(r[1])}


def expander_names() -> Sequence[str]:
    return [f"{p}_{f.name}" for p, path in GROUPS for f in fields(_group_class(path))]


def _group_class(path: str):
    from .params import BridgeParams, DeviceParams, DramParams, LinkParams
    return {"cxl.bridge": BridgeParams, "cxl.link": LinkParams, "cxl.device": DeviceParams,
            "cxl.media": DramParams}[path]
