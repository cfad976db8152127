"""An X86 full-system board whose Linux sees CXL memory as it does on real
machines: local DRAM (gem5's DDR model) with the CPUs as NUMA node 0, and one
CPU-less node per CXL window behind a SimCXL host bridge, placed from 4 GiB up
in the E820 map and described by ACPI SRAT, SLIT, HMAT and CEDT (the tables
are devices/CXLAcpi.py's SimObjects; their figures come from simcxl.gem5.numa).

Import inside gem5 only (it imports m5 lazily, in the functions).
"""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from .numa import Numa, Port, firmware_access, generic_port, window_ports
from ..config.params import ParamError

GiB = 1 << 30
CXL_BASE = 4 * GiB          # above the 32-bit I/O hole, as firmware places CXL windows
LOCAL_MAX = 3 * GiB         # X86Board keeps DRAM below its I/O hole at 3 GiB
PHYS_LIMIT = 1 << 46        # Linux's x86-64 physical address limit with 4-level paging
CHBS_BASE = 0xFD000000      # component-register blocks of the host bridges (CEDT CHBS), 64 KiB each
CFMWS_ALIGN = 256 << 20     # CXL 3.1 9.18.1.3: windows are 256 MiB aligned and sized
# Host bridge i's UID (CEDT CHBS, DSDT _UID, its generic port's): 1 + i. Not 0: Linux 6.12's
# acpi_find_genport_target compares a bridge's UID with the handle of every HMAT target, memory
# domains' included, whose handles are zeros: UID 0 would find node 0's, which has no port figures.
BRIDGE_UID_BASE = 1
# CXL.io (cxl_io=True): bridge i's buses from CXL_BUS + 0x10 i (root ports on the first, a device
# below each), ECAM for them at ECAM_BASE (the address of bus 0, as the MCFG gives it), BARs from
# MMIO_BASE + 16 MiB i; all inside the board's I/O bridge range [0xC0000000, 0xFFFF0000).
CXL_BUS, BUSES_PER_BRIDGE = 0x80, 0x10
ECAM_BASE = 0xE0000000
MMIO_BASE, MMIO_PER_BRIDGE = 0xD0000000, 16 << 20

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "mb": 1 << 20,
          "g": GiB, "gib": GiB, "gb": GiB, "t": 1 << 40, "tib": 1 << 40, "tb": 1 << 40}


def parse_bytes(text: str, what: str) -> int:
    """'1GiB', '512MiB', '4g', '0x100000000' or a byte count -> bytes (units are binary)."""
    t = str(text).strip()
    m = re.fullmatch(r"(0x[0-9a-fA-F]+|\d+)\s*([a-zA-Z]*)", t)
    if not m or m.group(2).lower() not in _UNITS or (m.group(1).startswith("0x") and m.group(2)):
        raise ParamError(f"{what} {text!r} is not a size; allowed: bytes, a number with KiB/MiB/GiB/TiB, or hex")
    return int(m.group(1), 0) * _UNITS[m.group(2).lower()]


def parse_cxl(spec: str) -> Tuple[str, int, Optional[int]]:
    """One CXL window, PRESET:SIZE[@BASE] -> (preset, size, base or None: placed by window_layout)."""
    head, at, base = str(spec).partition("@")
    preset, sep, size = head.rpartition(":")
    if not sep or not preset or not size or (at and not base):
        raise ParamError(f"--cxl {spec!r} is not allowed; allowed: PRESET:SIZE[@BASE], e.g. cxl-asic:1GiB "
                         "or cxl-asic:1GiB@8GiB")
    return preset, parse_bytes(size, f"--cxl {spec!r}: size"), (parse_bytes(base, f"--cxl {spec!r}: base") if at else None)


def cfmws_granularity(interleave_bytes: int) -> int:
    """A window's CFMWS granularity: the bridge's interleave clamped to what CXL encodes, 256 B to 16 KiB."""
    return min(16384, max(256, interleave_bytes))


def _hex_range(base: int, size: int) -> str:
    return f"[{base:#x}, {base + size:#x})"


def window_layout(sizes: Sequence[int], bases: Optional[Sequence[Optional[int]]] = None,
                  local_size: int = 0) -> List[Tuple[int, int]]:
    """(base, size) of each CXL window: sizes a multiple of 256 MiB; a window
    without a base goes at the next 1 GiB boundary from 4 GiB up, past the
    windows before it; a given base must be 256 MiB aligned, clear of local
    DRAM [0, local_size) and the I/O hole below 4 GiB, and of every other
    window. Raises ParamError naming the first window that breaks a rule."""
    if not 0 < local_size <= LOCAL_MAX:
        raise ParamError(f"--local-size {local_size} is out of range; allowed: above 0 up to 3GiB "
                         "(X86Board keeps DRAM below its I/O hole)")
    bases = list(bases) if bases is not None else [None] * len(sizes)
    if len(bases) != len(sizes):
        raise ParamError(f"{len(bases)} window bases for {len(sizes)} windows; allowed: one each (or None)")
    out: List[Tuple[int, int]] = []
    nxt = CXL_BASE
    for i, (s, b) in enumerate(zip(sizes, bases)):
        name = f"CXL window {i + 1}"
        if s <= 0 or s % CFMWS_ALIGN:
            raise ParamError(f"{name}: size {s} is not allowed; allowed: a positive multiple of 256 MiB")
        if b is None:
            b = nxt
        elif b % CFMWS_ALIGN:
            raise ParamError(f"{name}: base {b:#x} is not allowed; allowed: a multiple of 256 MiB")
        if b < local_size:
            raise ParamError(f"{name} {_hex_range(b, s)} overlaps local DRAM {_hex_range(0, local_size)}; "
                             f"allowed: a base at or above 4 GiB ({CXL_BASE:#x})")
        if b < CXL_BASE:
            raise ParamError(f"{name} {_hex_range(b, s)} is below 4 GiB (the board's I/O hole is "
                             f"{_hex_range(LOCAL_MAX, GiB)}); allowed: a base at or above {CXL_BASE:#x}")
        if b + s > PHYS_LIMIT:
            raise ParamError(f"{name} {_hex_range(b, s)} ends past {PHYS_LIMIT:#x}; allowed: below 64 TiB")
        for j, (ob, os_) in enumerate(out):
            if b < ob + os_ and ob < b + s:
                raise ParamError(f"{name} {_hex_range(b, s)} overlaps CXL window {j + 1} {_hex_range(ob, os_)}; "
                                 "allowed: windows that do not overlap")
        out.append((b, s))
        nxt = max(nxt, _round_up(b + s, GiB))
    return out


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def madt(cores: int):
    """The interrupt controllers as an ACPI MADT: kernels built without the
    Intel MP table parser (CONFIG_X86_MPPARSE) find them only here."""
    from m5.objects import X86ACPIMadt, X86ACPIMadtIntSourceOverride, X86ACPIMadtIOAPIC, X86ACPIMadtLAPIC
    return X86ACPIMadt(local_apic_address=0xFEE00000, flags=1, records=(
        [X86ACPIMadtLAPIC(acpi_processor_id=i, apic_id=i, flags=1) for i in range(cores)]
        + [X86ACPIMadtIOAPIC(id=cores, address=0xFEC00000, int_base=0),
           X86ACPIMadtIntSourceOverride(bus_source=0, irq_source=0, sys_int=2, flags=0)]))


def generic_ports(numa: Numa, ports: Sequence[Sequence[Port]]):
    """With CXL.io, host bridge i's Generic Port: (proximity domain, its UID, figures as a numa.Node in
    ns and GB/s). Its domain comes after every node's, 1 + windows + i: Linux numbers the nodes it
    makes for CFMWS windows (firmware maps none with linux_regions) from the first domain SRAT does
    not name, and a port sharing one would take the region node's figures for its own. Its figures
    are what Linux must add to the window's CDAT and link to arrive at the figures the firmware-table
    path's HMAT gives the window's node (numa.generic_port, numa.firmware_access): the model's."""
    from .numa import Node
    n = len(ports)
    targets = firmware_access(numa)[1:]
    out = []
    for i, (t, p) in enumerate(zip(targets, ports)):
        gp = generic_port(t, p)
        # Whole ns and MB/s: HMAT holds them exactly (in ps, a base unit of 10 or 100 at these sizes).
        out.append((1 + n + i, BRIDGE_UID_BASE + i, Node(f"generic-port-{i}", gp.read_latency, gp.write_latency,
                                       gp.read_bandwidth / 1000, gp.write_bandwidth / 1000)))
    return out


def acpi_tables(cores: int, local_size: int, windows: Sequence[Tuple[int, int]], granularities: Sequence[int],
                numa: Numa, cxl_io: bool = False, linux_regions: bool = False,
                ports: Optional[Sequence[Sequence[Port]]] = None):
    """FADT (with its DSDT), MADT, SRAT, SLIT, HMAT and CEDT for node 0 = [0, local_size) with the
    CPUs and node i = windows[i - 1], CPU-less. With `cxl_io`, also the MCFG of the bridges' ECAM,
    a DSDT declaring the CXL root (with the QTG _DSM: QoS class 0, the CFMWS's QTG ID) and each bridge
    (cxl_io_devices' layout), and each bridge's generic port (generic_ports; `ports`: each window's
    root ports as Linux reads them, numa.window_ports). With `linux_regions`, the windows are in the
    CEDT only, as firmware leaves memory it did not map: Linux gives each CFMWS a node of its own
    and maps the regions it commits."""
    from m5.objects import CXLAcpiCedt, CXLAcpiFadt, CXLAcpiHmat, CXLAcpiMcfg, CXLAcpiSlit, CXLAcpiSrat
    nodes = 1 + len(windows)
    if len(numa.nodes) != nodes:
        raise ParamError(f"the NUMA description has {len(numa.nodes)} nodes; the board has {nodes} "
                         "(local DRAM and one per CXL window)")
    if cxl_io and (ports is None or len(ports) != len(windows)):
        raise ParamError("acpi_tables with cxl_io needs ports: one list of root ports per CXL window")
    gps = generic_ports(numa, ports) if cxl_io else []
    mapped = [] if linux_regions else windows
    if linux_regions:
        nodes, numa = 1, Numa(nodes=numa.nodes[:1], distances=[[10]])  # 10: a node's distance to itself (ACPI)
    srat = CXLAcpiSrat(oem_id="SIMCXL", oem_table_id="SIMCXL",
                       cpu_apic_ids=list(range(cores)), cpu_domains=[0] * cores,
                       mem_bases=[0] + [b for b, _ in mapped], mem_sizes=[local_size] + [s for _, s in mapped],
                       mem_domains=list(range(nodes)), mem_hot_pluggable=[False] * nodes,
                       gp_domains=[d for d, _, _ in gps], gp_uids=[u for _, u, _ in gps])
    slit = CXLAcpiSlit(oem_id="SIMCXL", oem_table_id="SIMCXL", localities=nodes,
                       distances=[d for row in numa.distances for d in row])
    # The generic ports are targets of initiator 0 but no memory domains (no attached initiator:
    # Linux then takes their figures from these localities).
    figures = list(numa.nodes) + [x for _, _, x in gps]
    hmat = CXLAcpiHmat(oem_id="SIMCXL", oem_table_id="SIMCXL", memory_domains=list(range(nodes)),
                       attached_initiators=[0] + [-1] * len(mapped),
                       initiators=[0] * len(figures), targets=list(range(nodes)) + [d for d, _, _ in gps],
                       read_latency_ns=[x.read_latency_ns for x in figures],
                       write_latency_ns=[x.write_latency_ns for x in figures],
                       read_bandwidth_gbps=[x.read_bandwidth_gbps for x in figures],
                       write_bandwidth_gbps=[x.write_bandwidth_gbps for x in figures])
    uids = [BRIDGE_UID_BASE + i for i in range(len(windows))]
    cedt = CXLAcpiCedt(oem_id="SIMCXL", oem_table_id="SIMCXL",
                       bridge_uids=uids, bridge_versions=[1] * len(windows),
                       bridge_bases=[CHBS_BASE + 0x10000 * i for i in range(len(windows))],
                       bridge_lengths=[0x10000] * len(windows),
                       window_bases=[b for b, _ in windows], window_sizes=[s for _, s in windows],
                       window_ways=[1] * len(windows),
                       window_granularities=[cfmws_granularity(g) for g in granularities],
                       window_targets=uids, window_restrictions=[0x6] * len(windows))
    # The FADT lets Linux enable ACPI; with ACPI disabled it parses no HMAT.
    if not cxl_io:
        fadt = CXLAcpiFadt(oem_id="SIMCXL", oem_table_id="SIMCXL")
        return [fadt, madt(cores), srat, slit, hmat, cedt]
    n = len(windows)
    first = [CXL_BUS + BUSES_PER_BRIDGE * i for i in range(n)]
    mcfg = CXLAcpiMcfg(oem_id="SIMCXL", oem_table_id="SIMCXL", ecam_bases=[ECAM_BASE],
                       ecam_first_buses=[CXL_BUS], ecam_last_buses=[CXL_BUS + BUSES_PER_BRIDGE * n - 1])
    fadt = CXLAcpiFadt(oem_id="SIMCXL", oem_table_id="SIMCXL", cxl_bridge_uids=uids,
                       cxl_bridge_first_buses=first, cxl_bridge_last_buses=[b + BUSES_PER_BRIDGE - 1 for b in first],
                       cxl_bridge_mmio_bases=[MMIO_BASE + MMIO_PER_BRIDGE * i for i in range(n)],
                       cxl_bridge_mmio_sizes=[MMIO_PER_BRIDGE] * n)
    # The FADT's DSDT reserves the MCFG's ranges (fadt.mcfg): the caller sets it once the board has
    # adopted both, or the FADT would adopt the MCFG and the list could not be the board's.
    return [fadt, madt(cores), srat, slit, hmat, cedt, mcfg]


def switch_fanout(system) -> List[int]:
    """Per root port of a window's System: 0 where a Type-3 device sits on the port, else the number
    of downstream ports of the switch there (each leading to a Type-3 device)."""
    graph = getattr(system, "graph", None)
    if graph is None or not graph.of_type("switch"):
        return [0] * system.cxl.bridge.root_ports
    from .fabric import window_host_bridge

    hb = window_host_bridge(graph)
    out, seen = [], set()
    for k in graph.down(hb.name, "root_port"):
        below = graph.below(graph.components[k.b.comp].name, "down")[0]
        if below.type != "switch":
            out.append(0)
            continue
        if below.name in seen:
            raise ParamError(f"switch {below.name} is reached by two root ports; with CXL.io the board allows one "
                             "upstream port per switch")
        seen.add(below.name)
        dsps = graph.down(below.name, "dsp")
        for d in dsps:
            leaf = graph.below(graph.components[d.b.comp].name, "down")[0]
            if leaf.type != "type3":
                raise ParamError(f"{leaf.name} (a {leaf.type}) below switch {below.name}: with CXL.io the board "
                                 "allows Type-3 devices below a switch (one switch level)")
        out.append(len(dsps))
    return out


def bus_layout(first_bus: int, fanout: Sequence[int]) -> List[dict]:
    """Where each root port's functions go when the root ports sit on `first_bus` (device j) and
    `fanout` is switch_fanout's: the numbers Linux gives unconfigured bridges, depth first (a root
    port's secondary bus is one past the last bus below the port before it). Per root port: the
    Type-3 devices' buses ("devices") and, below a switch, its upstream port's ("usp") and its
    downstream ports' ("dsp") bus."""
    out, nxt = [], first_bus + 1
    for n in fanout:
        if n:
            out.append(dict(usp=nxt, dsp=nxt + 1, devices=[nxt + 2 + k for k in range(n)]))
            nxt += 2 + n
        else:
            out.append(dict(devices=[nxt]))
            nxt += 1
    if nxt > first_bus + BUSES_PER_BRIDGE:
        raise ParamError(f"the functions below a host bridge need {nxt - first_bus} buses; allowed: at most "
                         f"{BUSES_PER_BRIDGE} (fewer root ports or downstream ports)")
    return out


def cxl_io_devices(board, bridges, layout, firmware_commit: bool = True) -> None:
    """Linux's view of each CXL window through CXL.io: bridge i's component registers at its CHBS,
    a root-port PCI function per root port on bus CXL_BUS + 0x10 i (device j) and below each
    either a Type-3 memory device or a switch (its upstream port, a downstream port per device,
    and a Type-3 device below each: bus_layout), each device with its share of the window, and one
    ECAM window for all their buses. Every function's registers are the core's, built from the
    same expanders the window's CXL.mem path runs through. Attached to the board's I/O bus."""
    from m5.objects import CXLEcam, CXLHostBridgeRegs, CXLPciFunction

    if len(bridges) * BUSES_PER_BRIDGE > 0x100 - CXL_BUS:
        raise ParamError(f"{len(bridges)} CXL windows with CXL.io is not allowed; allowed: at most "
                         f"{(0x100 - CXL_BUS) // BUSES_PER_BRIDGE} (buses {CXL_BUS:#x}-0xff)")
    host, iobus = board.pc.pci_host, board.get_io_bus()
    regs, functions, routed = [], [], []

    def port(kind, expander, number, bus, dev, **kw):
        f = CXLPciFunction(kind=kind, expander=expander, port_number=number, host=host,
                           pci_bus=bus, pci_dev=dev, pci_func=0, **kw)
        f.BAR0.size = "64KiB"  # component registers only
        return f

    for i, (b, (_, size)) in enumerate(zip(bridges, layout)):
        ports = list(b.root_ports)
        fanout = switch_fanout(b._simcxl_system)
        devices_total = sum(n or 1 for n in fanout)
        if not 1 <= len(ports) < BUSES_PER_BRIDGE or size % (devices_total * CFMWS_ALIGN):
            raise ParamError(f"CXL window {i + 1}: {devices_total} devices for {size} bytes is not allowed with "
                             f"CXL.io; allowed: 1 to {BUSES_PER_BRIDGE - 1} root ports, each device a multiple of "
                             "256 MiB")
        if firmware_commit and any(fanout):
            raise ParamError(f"CXL window {i + 1} has a switch: firmware does not map memory below switches here; "
                             "allowed: a switch with --cxl-region (Linux commits the region's decoders)")
        bus = CXL_BUS + BUSES_PER_BRIDGE * i
        regs.append(CXLHostBridgeRegs(base=CHBS_BASE + 0x10000 * i, decoders=1, targets=_targets(len(ports))))
        capacity = f"{size // devices_total}B"
        endpoints, switch_endpoints = [], []
        for j, (below, n, where) in enumerate(zip(ports, fanout, bus_layout(bus, fanout))):
            expanders = list(below.downstream) if n else [below]
            functions.append(port("root_port", expanders[0], j, bus, j, decoders=0))
            devs = [CXLPciFunction(kind="type3", expander=e, capacity=capacity, host=host,
                                   pci_bus=d, pci_dev=0, pci_func=0) for e, d in zip(expanders, where["devices"])]
            if n:
                # The switch's upstream link reports as its first device's (the board's links match).
                usp = port("switch_upstream", expanders[0], 0, where["usp"], 0, decoders=1, targets=_targets(n))
                functions.append(usp)
                functions += [port("switch_downstream", e, k, where["dsp"], k, decoders=0)
                              for k, e in enumerate(expanders)]
                endpoints.append(usp)
                switch_endpoints += devs
            else:
                endpoints.append(devs[0])
            functions += devs
        routed.append((b, regs[-1], endpoints, switch_endpoints))
    board.cxl_chbs = regs
    board.cxl_functions = functions
    # Each window's timing follows the decoders committed at its bridge, switches and devices (set
    # after the board adopts them, or the register block would); with `firmware_commit` the board
    # commits one over the whole window first, as firmware does for memory it puts in SRAT; without,
    # nothing routes until the OS commits a region (reads answer all ones, writes are dropped).
    board.cxl_bridges = bridges  # adopted here, not under the register blocks that name them
    for b, r, endpoints, switch_endpoints in routed:
        r.bridge, r.endpoints, r.firmware_commit = b, endpoints, firmware_commit
        r.switch_endpoints = switch_endpoints
    board.cxl_ecam = CXLEcam(base=ECAM_BASE, first_bus=CXL_BUS,
                             last_bus=CXL_BUS + BUSES_PER_BRIDGE * len(bridges) - 1, functions=functions)
    for obj in regs + functions + [board.cxl_ecam]:
        obj.pio = iobus.mem_side_ports
    for f in functions:
        f.dma = iobus.cpu_side_ports


def window_bridge(memory):
    """A window's CXLHostBridge: a preset's (components.host_bridge), or the switches and devices a
    topology file puts below its host bridge (fabric.topology_bridge); `_simcxl_system` is the
    window's System either way (a topology's first device per root port describes it to the tables)."""
    from .components import host_bridge, load_system
    from .fabric import topology_bridge

    system = load_system(memory)
    graph = getattr(system, "graph", None)
    if graph is None or not graph.of_type("switch"):
        return host_bridge(system)
    bridge = topology_bridge(graph)
    bridge._simcxl_system = system
    return bridge


def _targets(ports: int) -> int:
    """A host bridge's decoder target list length for `ports` root ports (1, 2, 4 or 8)."""
    return next(t for t in (1, 2, 4, 8) if t >= ports) if ports <= 8 else 8


def numa_board(*, processor, cache_hierarchy, local_memory, cxl: Sequence[Tuple], numa: Numa,
               clk_freq: str = "3GHz", cxl_io: bool = False, linux_regions: bool = False):
    """An X86Board with `local_memory` (a stdlib memory system of at most
    3 GiB) as node 0 and one CXL window per (preset, size) or (preset, size,
    base) in `cxl` (see window_layout for where windows go). With `cxl_io`,
    Linux's CXL drivers find each window's host bridge, root ports and
    memory devices (cxl_io_devices) through ACPI and PCI. With
    `linux_regions` (needs `cxl_io`), firmware maps none of it: the windows
    are in the CEDT only and Linux commits the decoders of the regions the
    guest creates (fs.region_run), which the timing then routes by."""
    if linux_regions and not cxl_io:
        raise ParamError("linux_regions needs cxl_io: Linux can only create regions on devices its CXL drivers found")
    from m5.objects import AddrRange, X86ACPIRSDP, X86ACPIRSDT, X86ACPIXSDT, X86E820Entry
    from gem5.components.boards.x86_board import X86Board

    layout = window_layout([w[1] for w in cxl], [w[2] if len(w) > 2 else None for w in cxl],
                           local_memory.get_size())
    bridges = [window_bridge(w[0]) for w in cxl]

    class CXLNumaBoard(X86Board):
        def _setup_memory_ranges(self):
            super()._setup_memory_ranges()
            for b, (base, size) in zip(bridges, layout):
                b.range = AddrRange(base, size=size)
                self.mem_ranges.append(b.range)

        def get_mem_ports(self):
            return list(super().get_mem_ports()) + [(b.range, b.port) for b in bridges]

        def _connect_things(self):
            super()._connect_things()
            # The classic hierarchies connect the memory system's ports only
            # (get_memory().get_mem_ports()), not the board's: the CXL windows
            # join the memory bus here.
            membus = getattr(self.get_cache_hierarchy(), "membus", None)
            if membus is None:
                raise ParamError("the CXL NUMA board needs a classic cache hierarchy with a memory bus (membus)")
            for b in bridges:
                b.port = membus.mem_side_ports

        def _setup_io_devices(self):
            super()._setup_io_devices()
            # New entries get a parent of their own: gem5 adopts a list's
            # members only when none of them has one.
            e820 = [] if linux_regions else [X86E820Entry(addr=base, size=f"{size}B", range_type=1)
                                             for base, size in layout]
            if cxl_io:
                # Reserved, as firmware marks ECAM: Linux's early MMCONFIG check looks in the E820 map.
                first = ECAM_BASE + (CXL_BUS << 20)
                e820.append(X86E820Entry(addr=first, size=f"{(BUSES_PER_BRIDGE * len(layout)) << 20}B", range_type=2))
            self.cxl_e820 = e820  # whole before the board adopts it: a later append stays an orphan
            if cxl_io:
                cxl_io_devices(self, bridges, layout, firmware_commit=not linux_regions)
            self.workload.e820_table.entries = list(self.workload.e820_table.entries) + list(self.cxl_e820)

    board = CXLNumaBoard(clk_freq=clk_freq, processor=processor, memory=local_memory,
                         cache_hierarchy=cache_hierarchy)
    if not cxl_io:  # with CXL.io, cxl_io_devices adopted them
        board.cxl_bridges = bridges
    # The tables are made once the board is whole, each a child of the board
    # (a table listed in both RSDT and XSDT needs one parent of its own).
    ports = [window_ports(b._simcxl_system) for b in bridges] if cxl_io else None
    board.acpi_tables = acpi_tables(processor.get_num_cores(), local_memory.get_size(), layout,
                                    [b._simcxl_system.cxl.bridge.interleave_bytes for b in bridges], numa, cxl_io,
                                    linux_regions, ports)
    if cxl_io:
        board.acpi_tables[0].mcfg = board.acpi_tables[-1]
    board.workload.acpi_description_table_pointer = X86ACPIRSDP(
        oem_id="SIMCXL", rsdt=X86ACPIRSDT(entries=board.acpi_tables), xsdt=X86ACPIXSDT(entries=board.acpi_tables))
    return board


def _cycles(ns: float, ghz: float) -> int:
    return max(1, round(ns * ghz))


def llc_geometry(size: int, assoc: int, line: int = 64) -> Tuple[int, int]:
    """(size, ways) gem5 can build for an LLC of `size` bytes: gem5's set
    index wants a power-of-two number of sets, so the sets are rounded to the
    nearest power of two (an SPR-like 97.5 MiB, 15-way LLC becomes 120 MiB)."""
    sets = max(1, size // (line * assoc))
    lo = 1 << (sets.bit_length() - 1)
    sets = lo if sets - lo <= 2 * lo - sets else 2 * lo
    return sets * assoc * line, assoc


def warm_lines(host) -> int:
    """Lines a chase walks before its timed loads so that host_caches(host)
    hold what a long-running chase leaves there: twice the lines of the LLC
    (as gem5 builds it) and one L2, so that every set sees more lines than it
    has ways."""
    return 2 * (llc_geometry(host.llc_bytes, host.llc_assoc)[0] + host.l2_bytes) // 64


def _cores(processor):
    """Every core of `processor`, switched in or not."""
    return processor._all_cores() if hasattr(processor, "_all_cores") else processor.get_cores()


def shape_tlbs(processor, host) -> None:
    """gem5's X86 TLBs (one level, fully associative) on every core of
    `processor`, switched in or not: the data TLB gets as many entries as
    the preset's host has in its second-level TLB (host.stlb_entries), so that
    working sets within the STLB's reach walk no page tables, as on the host."""
    for core in _cores(processor):
        core.get_simobject().mmu.dtb.size = host.stlb_entries


def shape_o3(processor, tso: bool) -> None:
    """The queue sizes of the testbed host's core class (Golden Cove: ROB 512,
    LQ 192, SQ 114) on every O3 core of `processor`, switched in or not.
    gem5's X86 O3 keeps one store miss in flight when it keeps TSO, where the
    host's store buffer requests ownership for every senior store ahead: with
    it a core streams at 0.5-2 GB/s. ``tso=False`` lifts that, for runs where
    no other core can see the order (one core, or single-threaded copies)."""
    for core in _cores(processor):
        o3 = core.get_simobject()
        if hasattr(o3, "needsTSO"):
            o3.needsTSO = tso
            o3.numROBEntries, o3.LQEntries, o3.SQEntries, o3.numIQEntries = 512, 192, 114, 200
            o3.numPhysIntRegs, o3.numPhysFloatRegs, o3.numPhysVecRegs = 280, 332, 332


def host_caches(host, clk_ghz: float = 3.0):
    """A classic three-level hierarchy shaped like a preset's host (the
    standalone engine's HostParams): private L1I/L1D and L2 per core, one
    shared LLC, no prefetchers (as the calibration testbed ran); page walks
    go through the L2. Hit
    latencies are the preset's load-to-use figures in cycles of the board's
    clock, each level adding what the level above does not already take."""
    from m5.objects import BadAddr, Cache, L2XBar, SystemXBar
    from gem5.components.cachehierarchies.classic.abstract_classic_cache_hierarchy import (
        AbstractClassicCacheHierarchy)
    from gem5.isas import ISA

    l1 = _cycles(host.l1_latency_ns, clk_ghz)
    l2 = _cycles(host.l2_latency_ns - host.l1_latency_ns, clk_ghz)
    l3 = _cycles(host.llc_latency_ns - host.l2_latency_ns, clk_ghz)
    llc_size, llc_ways = llc_geometry(host.llc_bytes, host.llc_assoc)

    def cache(size, assoc, lat, mshrs, **kw):
        return Cache(size=f"{size}B", assoc=assoc, tag_latency=lat, data_latency=lat, response_latency=1,
                     mshrs=mshrs, tgts_per_mshr=16, **kw)

    class HostCaches(AbstractClassicCacheHierarchy):
        def __init__(self):
            super().__init__()
            self.membus = SystemXBar(width=64)
            self.membus.badaddr_responder = BadAddr()
            self.membus.default = self.membus.badaddr_responder.pio

        def get_mem_side_port(self):
            return self.membus.mem_side_ports

        def get_cpu_side_port(self):
            return self.membus.cpu_side_ports

        def incorporate_cache(self, board):
            board.connect_system_port(self.membus.cpu_side_ports)
            for _, port in board.get_memory().get_mem_ports():
                self.membus.mem_side_ports = port
            n = board.get_processor().get_num_cores()
            self.llc = cache(llc_size, llc_ways, l3, 64 * n, clusivity="mostly_excl")
            self.llcbus = L2XBar()
            self.llc.cpu_side = self.llcbus.mem_side_ports
            self.llc.mem_side = self.membus.cpu_side_ports
            self.l1i = [cache(32768, 8, l1, 4) for _ in range(n)]
            self.l1d = [cache(host.l1_bytes, host.l1_assoc, l1, host.mshrs_per_core) for _ in range(n)]
            # The LLC is filled by the L2's victims (mostly exclusive, as the host's
            # non-inclusive LLC): clean ones too, or a read-only chase would leave it empty.
            self.l2 = [cache(host.l2_bytes, host.l2_assoc, l2, 2 * host.mshrs_per_core, writeback_clean=True)
                       for _ in range(n)]
            self.l2bus = [L2XBar() for _ in range(n)]
            for i, cpu in enumerate(board.get_processor().get_cores()):
                self.l1i[i].mem_side = self.l2bus[i].cpu_side_ports
                self.l1d[i].mem_side = self.l2bus[i].cpu_side_ports
                self.l2[i].cpu_side = self.l2bus[i].mem_side_ports
                self.l2[i].mem_side = self.llcbus.cpu_side_ports
                cpu.connect_icache(self.l1i[i].cpu_side)
                cpu.connect_dcache(self.l1d[i].cpu_side)
                # Page walks load through the core's L2 (and the LLC), as a core's page
                # walker does, not straight from memory past every cache.
                cpu.connect_walker_ports(self.l2bus[i].cpu_side_ports, self.l2bus[i].cpu_side_ports)
                if board.get_processor().get_isa() == ISA.X86:
                    cpu.connect_interrupt(self.membus.mem_side_ports, self.membus.cpu_side_ports)
                else:
                    cpu.connect_interrupt()
            if board.has_coherent_io():
                self.iocache = Cache(assoc=8, tag_latency=50, data_latency=50, response_latency=50, mshrs=20,
                                     size="1kB", tgts_per_mshr=12, addr_ranges=board.mem_ranges)
                self.iocache.mem_side = self.membus.cpu_side_ports
                self.iocache.cpu_side = board.get_mem_side_coherent_io_port()

    return HostCaches()

