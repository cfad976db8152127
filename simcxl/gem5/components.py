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
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..config.params import ParamError, System
from ..config.presets import load

# SimObject parameter groups: prefix -> attribute of System.cxl. The host
# bridge takes the bridge group; each Type-3 expander (one per root port) the
# link, device and media groups.
BRIDGE_GROUPS = ("bridge",)
EXPANDER_GROUPS = ("link", "device", "media")
# The standalone engine seeds root port i's link with seed + 17 * i.
PORT_SEED_STRIDE = 17


def load_core() -> None:
    """Topology files are checked against the core's component registry
    (simcxl._core). gem5's embedded Python does not install the package, so
    the core comes from the virtual environment the README's setup builds
    in the repository (.venv), if it is not importable already."""
    import importlib.util
    import sys

    if "simcxl._core" in sys.modules or importlib.util.find_spec("simcxl._core") is not None:
        return
    here = Path(__file__).resolve()
    for repo in here.parents:
        for so in sorted(repo.glob(".venv/lib/python3*/site-packages/simcxl/_core*.so")):
            spec = importlib.util.spec_from_file_location("simcxl._core", so)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules["simcxl._core"] = module
            return
    raise ParamError("topology files need the standalone engine's core (simcxl._core), which is neither "
                     "importable nor in a .venv of the repository: run the README's setup command first")


def load_system(memory: Union[str, Path, System]) -> System:
    """A preset, a preset file, or a topology file (the same graph the standalone engine runs)."""
    load_core()  # the topology package checks files against the core's registry
    from .. import topology
    if topology.is_file(memory):
        return topology.memory_system(topology.load(memory))
    return load(memory)


def _cxl(system: System):
    graph = getattr(system, "graph", None)
    if graph is not None and graph.of_type("switch"):
        raise ParamError(f"topology {graph.name} has a switch ({graph.of_type('switch')[0].name}), which a "
                         "preset's bridge, link and device parameters do not describe; allowed: the topology file "
                         "itself to simcxl.gem5.fabric (topology_bridge, host_windows), which builds it")
    if system.kind != "cxl-type3":
        raise ParamError(f"memory {system.name} is a {system.kind}; the gem5 CXL component needs a cxl-type3 preset")
    return system.cxl


def _prefixed(system: System, groups: Sequence[str], port: Optional[int] = None) -> Dict[str, object]:
    cxl = _cxl(system)
    # A root port of its own (a topology whose devices differ) gives its link, device and media.
    src = cxl.ports[port] if port is not None and cxl.ports else cxl
    return {f"{prefix}_{f.name}": getattr(getattr(src, prefix), f.name)
            for prefix in groups for f in fields(getattr(src, prefix))}


def bridge_params(system: System) -> Dict[str, object]:
    """The CXLHostBridge parameters of a cxl-type3 system (bridge_* names)."""
    return _prefixed(system, BRIDGE_GROUPS)


def expander_params(system: System, port: int = 0) -> Dict[str, object]:
    """The CXLType3Expander parameters of root port `port` of a cxl-type3
    system (seed, link_*, device_*, media_* names)."""
    out: Dict[str, object] = {"seed": system.seed + PORT_SEED_STRIDE * port}
    out.update(_prefixed(system, EXPANDER_GROUPS, port))
    return out


def interleaved(memory: Union[str, Path, System], ways: Optional[int] = None,
                granularity: Optional[int] = None) -> System:
    """A cxl-type3 system whose host window interleaves `ways` root ports (one
    expander each) at `granularity` bytes; None keeps the preset's value."""
    system = load_system(memory)
    _cxl(system)
    overrides: Dict[str, object] = {}
    if ways is not None:
        overrides["cxl.bridge.root_ports"] = ways
        overrides["cxl.bridge.interleave_ways"] = ways
    if granularity is not None:
        overrides["cxl.bridge.interleave_bytes"] = granularity
    return system.replace(**overrides) if overrides else system


def host_bridge(memory: Union[str, Path, System] = "cxl-asic", window=None, ways: Optional[int] = None,
                granularity: Optional[int] = None, watchdog_ns: Optional[float] = None,
                device_stops_after: int = 0):
    """A CXLHostBridge SimObject (its host window, an AddrRange, as `window` if given) with one
    CXLType3Expander per root port, all from one preset or System; `ways`
    and `granularity` override its HDM interleave (see `interleaved`).
    `watchdog_ns` sets the progress watchdog's window (0: off; None: the
    SimObject's 10 ms); `device_stops_after` (tests of the watchdog) makes
    every expander stop answering after that many responses."""
    from m5.objects import CXLHostBridge, CXLType3Expander  # lazy: needs gem5

    if watchdog_ns is not None and not watchdog_ns >= 0:
        raise ParamError(f"watchdog_ns = {watchdog_ns} is not allowed; allowed: 0 (off) or a window in ns above 0")
    if not isinstance(device_stops_after, int) or device_stops_after < 0:
        raise ParamError(f"device_stops_after = {device_stops_after!r} is not allowed; allowed: an integer >= 0")
    system = interleaved(memory, ways, granularity)
    ports = system.cxl.bridge.root_ports
    extra = {} if watchdog_ns is None else {"watchdog_window_ns": float(watchdog_ns)}
    bridge = CXLHostBridge(root_ports=[CXLType3Expander(**expander_params(system, i),
                                                       fault_device_stops_after=device_stops_after)
                                      for i in range(ports)],
                           **bridge_params(system), **extra)
    if window is not None:
        bridge.range = window
    bridge._simcxl_system = system  # the description it was built from
    return bridge


def window_system(system: System, name: str) -> System:
    """The single-memory cxl-type3 system of window `name` of an address map
    (the map's host, the window's bridge, links, devices and seed)."""
    for w in system.map or []:
        if w.name == name:
            if w.kind != "cxl-type3":
                raise ParamError(f"window {name} is a {w.kind}; the gem5 CXL component needs a cxl-type3 window")
            return System(name=name, kind="cxl-type3", host=system.host, local_dram=system.local_dram, cxl=w.cxl,
                          seed=system.seed)
    raise ParamError(f"window {name!r} is not in the map; allowed: {', '.join(system.window_names())}")


def map_memories(memory: Union[str, Path, System], size: int, overrides: Optional[Dict[str, object]] = None):
    """The memories of an address map as gem5 SimObjects, one per window:
    [(name, kind, simobject)]. Each window keeps its base in the map and
    maps its first `size` bytes (gem5 backs every byte it maps; the map's
    windows are 1 TiB long): the local DRAM window as gem5's DDR4-2400
    controller, a CXL window as a CXLHostBridge with its expanders. Text
    descriptions are the CLI's (``ddr=ddr-local+cxl0=cxl-asic``)."""
    from m5.objects import AddrRange, DDR4_2400_8x8, MemCtrl  # lazy: needs gem5
    from ..config.presets import load_map

    system = load_map(memory) if isinstance(memory, str) and "+" in memory else load_system(memory)
    if overrides:
        system = system.replace(**overrides)
    if system.map is None:
        raise ParamError(f"memory {system.name} is not an address map; allowed: presets joined with +, "
                         "e.g. ddr=ddr-local+cxl0=cxl-asic")
    out = []
    for w in system.map:
        if size > w.range.size:
            raise ParamError(f"window size {size} is out of range for {w.shown_range()}; allowed: up to "
                             f"{w.range.size} bytes")
        rng = AddrRange(w.range.base, size=size)
        if w.kind == "local-dram":
            out.append((w.name, w.kind, MemCtrl(dram=DDR4_2400_8x8(range=rng))))
        elif w.kind == "cxl-type3":
            out.append((w.name, w.kind, host_bridge(window_system(system, w.name), window=rng)))
        else:
            raise ParamError(f"window {w.name} is a {w.kind}; gem5 builds local-dram and cxl-type3 windows")
    return out


def cxl_memory(memory: Union[str, Path, System] = "cxl-asic", size: str = "4GiB", ways: Optional[int] = None,
               granularity: Optional[int] = None):
    """A gem5 stdlib memory system (for TestBoard, SimpleBoard, X86Board slots):
    one CXL host window behind a CXLHostBridge (`.bridge`) with one
    CXLType3Expander per root port, timed by the SimCXL core."""
    from m5.util.convert import toMemorySize
    from gem5.components.memory.abstract_memory_system import AbstractMemorySystem
    from gem5.utils.override import overrides

    bridge = host_bridge(memory, ways=ways, granularity=granularity)

    class CXLMemorySystem(AbstractMemorySystem):
        def __init__(self):
            super().__init__()
            self.bridge = bridge
            self._size = toMemorySize(size)
            self._simcxl_system = bridge._simcxl_system

        @overrides(AbstractMemorySystem)
        def incorporate_memory(self, board) -> None:
            pass

        @overrides(AbstractMemorySystem)
        def get_mem_ports(self):
            return [(self.bridge.range, self.bridge.port)]

        @overrides(AbstractMemorySystem)
        def get_memory_controllers(self):
            return [self.bridge]

        @overrides(AbstractMemorySystem)
        def get_size(self) -> int:
            return self._size

        @overrides(AbstractMemorySystem)
        def set_memory_range(self, ranges) -> None:
            if len(ranges) != 1 or ranges[0].size() != self._size:
                raise ParamError("the CXL memory takes one address range of its own size")
            self.bridge.range = ranges[0]

    return CXLMemorySystem()


def set_param(bridge, name: str, value) -> None:
    """Set one SimObject parameter by its prefixed name: bridge_* on the host
    bridge, anything else (seed, link_*, device_*, media_*) on every expander.
    gem5 refuses unknown names; the core checks values at instantiation."""
    targets = [bridge] if name.startswith("bridge_") else list(bridge.root_ports)
    for t in targets:
        setattr(t, name, value)


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


def total(stats, name: str, dump: int = -1) -> float:
    """The value of one stat, by its exact name (0 if absent); `stats` as for `stat`."""
    return sum(stat(stats, "^" + re.escape(name) + "$", dump).values())


def slot_memory(memory: Union[str, Path, System], size: str):
    """A board's memory: the SimCXL component from a cxl-type3 preset, or
    gem5's own DDR4-2400 channel for 'ddr4', the local baseline."""
    if memory == "ddr4":
        from gem5.components.memory.single_channel import SingleChannelDDR4_2400  # lazy: needs gem5
        return SingleChannelDDR4_2400(size=size)
    return cxl_memory(memory, size=size)


def check_se_guest(parser, binary: str) -> None:
    """What an X86 SE config needs before it builds anything: a gem5 with the
    X86 ISA and the guest program; a clear parser error otherwise."""
    from gem5.isas import ISA  # lazy: needs gem5
    from gem5.runtime import get_supported_isas

    if ISA.X86 not in get_supported_isas():
        parser.error("this gem5 binary has no X86 ISA; build build/X86/gem5.opt with EXTRAS=<repo>")
    if not Path(binary).is_file():
        parser.error(f"--binary {binary}: no such file")


def check_fs_inputs(parser, kernel: str, size: str, size_flag: str, kernel_hint: str) -> Path:
    """What an X86 full-system config needs before it builds anything: a gem5
    with the X86 ISA, an ELF kernel, and a memory that fits below the I/O hole."""
    from gem5.isas import ISA  # lazy: needs gem5
    from gem5.runtime import get_supported_isas
    from m5.util.convert import toMemorySize

    if ISA.X86 not in get_supported_isas():
        parser.error("this gem5 binary has no X86 ISA; build build/X86/gem5.opt with EXTRAS=<repo>")
    path = Path(kernel)
    if not path.is_file() or path.read_bytes()[:4] != b"\x7fELF":
        parser.error(f"--kernel {kernel}: not an ELF file ({kernel_hint})")
    if not 0 < toMemorySize(size) <= toMemorySize("3GiB"):
        parser.error(f"{size_flag} {size} is out of range; allowed: above 0 up to 3GiB (X86Board's I/O hole)")
    return path


def cache_geometry(size: int, assoc: int, what: str) -> Tuple[int, int]:
    """(bytes, ways) nearest to a cache of `size` bytes and `assoc` ways whose
    set count is a power of two, as gem5's classic caches need; sizes that
    already qualify are kept."""
    if size < 64 or assoc < 1:
        raise ParamError(f"{what}: a cache of {size} B and {assoc} ways is not allowed; "
                         "allowed: at least 64 B and 1 way")
    sets = size // (64 * assoc)
    if sets >= 1 and sets & (sets - 1) == 0 and sets * 64 * assoc == size:
        return size, assoc
    # Keep the size, move the ways: power-of-two sets, then as many ways as fit best.
    sets = 1 << max(0, (size // (64 * assoc)).bit_length() - 1)
    ways = max(1, round(size / (64 * sets)))
    return sets * 64 * ways, ways


def host_caches(l1d: int, l1d_assoc: int, l2: int, l2_assoc: int, l2_cycles: Optional[int] = None,
                prefetch: bool = True, mshrs: Optional[int] = None, write_buffers: Optional[int] = None,
                streaming_stores: bool = False):
    """gem5's PrivateL1PrivateL2 classic hierarchy with the given L1D and L2
    geometry (set counts must be powers of two; see cache_geometry), the L2's
    tag and data latency in cycles if given, and prefetchers only if
    `prefetch` (testbeds often disable them in the BIOS). `mshrs` are a core's
    misses in flight (the L1D's MSHRs, as host.mshrs_per_core; the L2 gets a
    few more so as not to bound them), `write_buffers` the dirty lines an L2
    holds on their way to memory (host.writeback_buffer); gem5's defaults
    if not given. `streaming_stores` gives the L1D gem5's write allocator: it
    holds a store miss until the line's other stores join it, so that whole
    lines are claimed without their data, and stops allocating them once
    stores stream, as non-temporal stores do."""
    from m5.params import NULL  # lazy: needs gem5
    from gem5.components.cachehierarchies.classic.caches.l1dcache import L1DCache
    from gem5.components.cachehierarchies.classic.caches.l2cache import L2Cache
    from gem5.components.cachehierarchies.classic.private_l1_private_l2_cache_hierarchy import (
        PrivateL1PrivateL2CacheHierarchy)
    from m5.objects import Cache, WriteAllocator

    for what, size, ways in (("L1D", l1d, l1d_assoc), ("L2", l2, l2_assoc)):
        if cache_geometry(size, ways, what) != (size, ways):
            raise ParamError(f"{what}: {size} B in {ways} ways gives {size // (64 * ways)} sets; gem5 needs a "
                             "power of two (see simcxl.gem5.components.cache_geometry)")

    class HostCaches(PrivateL1PrivateL2CacheHierarchy):
        def incorporate_cache(self, board) -> None:
            super().incorporate_cache(board)
            for obj in self.descendants():
                if isinstance(obj, L1DCache):
                    obj.assoc = l1d_assoc
                    if mshrs is not None:
                        obj.mshrs = mshrs
                    if streaming_stores:
                        obj.write_allocator = WriteAllocator()
                elif isinstance(obj, L2Cache):
                    obj.assoc = l2_assoc
                    if l2_cycles is not None:
                        obj.tag_latency = obj.data_latency = l2_cycles
                    if mshrs is not None:
                        obj.mshrs = max(int(obj.mshrs), mshrs + 4)
                    if write_buffers is not None:
                        obj.write_buffers = write_buffers
                if isinstance(obj, Cache) and not prefetch:
                    obj.prefetcher = NULL

    return HostCaches(l1d_size=f"{l1d}B", l1i_size="32KiB", l2_size=f"{l2}B")


def write_csv(path: Union[str, Path, None], rows) -> None:
    """A config's result table (a dict, or a list of dicts with the same keys)
    as CSV; nothing without a path. Standard library only."""
    import csv

    if not path:
        return
    rows = [rows] if isinstance(rows, dict) else list(rows)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


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


def bridge_names() -> Sequence[str]:
    """CXLHostBridge parameter names from the dataclasses (bridge_*)."""
    return [f"{p}_{f.name}" for p in BRIDGE_GROUPS for f in fields(_group_class(p))]


def expander_names() -> Sequence[str]:
    """CXLType3Expander parameter names from the dataclasses, without seed."""
    return [f"{p}_{f.name}" for p in EXPANDER_GROUPS for f in fields(_group_class(p))]


def _group_class(prefix: str):
    from ..config.groups import BridgeParams, DeviceParams, DramParams, LinkParams
    return {"bridge": BridgeParams, "link": LinkParams, "device": DeviceParams, "media": DramParams}[prefix]
