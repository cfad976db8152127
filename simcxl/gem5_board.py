"""An X86 full-system board whose Linux sees CXL memory as it does on real
machines: local DRAM (gem5's DDR model) with the CPUs as NUMA node 0, and one
CPU-less node per CXL window behind a SimCXL host bridge, placed from 4 GiB up
in the E820 map and described by ACPI SRAT, SLIT, HMAT and CEDT (the tables
are devices/CXLAcpi.py's SimObjects; their figures come from simcxl.numa).

Import inside gem5 only (it imports m5 lazily, in the functions).
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

from .numa import Numa
from .params import ParamError

GiB = 1 << 30
CXL_BASE = 4 * GiB          # above the 32-bit I/O hole, as firmware places CXL windows
CHBS_BASE = 0xFD000000      # component-register blocks of the host bridges (CEDT CHBS), 64 KiB each
CFMWS_ALIGN = 256 << 20     # CXL 3.1 9.18.1.3: windows are 256 MiB aligned and sized


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def window_layout(sizes: Sequence[int]) -> List[Tuple[int, int]]:
    """(base, size) of each CXL window: from 4 GiB up, each at a 1 GiB
    boundary, sizes a multiple of 256 MiB."""
    out, base = [], CXL_BASE
    for s in sizes:
        if s <= 0 or s % CFMWS_ALIGN:
            raise ParamError(f"CXL window size {s} is not allowed; allowed: a positive multiple of 256 MiB")
        out.append((base, s))
        base = _round_up(base + s, GiB)
    return out


def madt(cores: int):
    """The interrupt controllers as an ACPI MADT: kernels built without the
    Intel MP table parser (CONFIG_X86_MPPARSE) find them only here."""
    from m5.objects import X86ACPIMadt, X86ACPIMadtIntSourceOverride, X86ACPIMadtIOAPIC, X86ACPIMadtLAPIC
    return X86ACPIMadt(local_apic_address=0xFEE00000, flags=1, records=(
        [X86ACPIMadtLAPIC(acpi_processor_id=i, apic_id=i, flags=1) for i in range(cores)]
        + [X86ACPIMadtIOAPIC(id=cores, address=0xFEC00000, int_base=0),
           X86ACPIMadtIntSourceOverride(bus_source=0, irq_source=0, sys_int=2, flags=0)]))


def acpi_tables(cores: int, local_size: int, windows: Sequence[Tuple[int, int]], granularities: Sequence[int],
                numa: Numa):
    """MADT, SRAT, SLIT, HMAT and CEDT for node 0 = [0, local_size) with the
    CPUs and node i = windows[i - 1], CPU-less."""
    from m5.objects import CXLAcpiCedt, CXLAcpiHmat, CXLAcpiSlit, CXLAcpiSrat
    n = 1 + len(windows)
    if len(numa.nodes) != n:
        raise ParamError(f"the NUMA description has {len(numa.nodes)} nodes; the board has {n} "
                         "(local DRAM and one per CXL window)")
    srat = CXLAcpiSrat(oem_id="SIMCXL", oem_table_id="SIMCXL",
                       cpu_apic_ids=list(range(cores)), cpu_domains=[0] * cores,
                       mem_bases=[0] + [b for b, _ in windows], mem_sizes=[local_size] + [s for _, s in windows],
                       mem_domains=list(range(n)), mem_hot_pluggable=[False] * n)
    slit = CXLAcpiSlit(oem_id="SIMCXL", oem_table_id="SIMCXL", localities=n,
                       distances=[d for row in numa.distances for d in row])
    hmat = CXLAcpiHmat(oem_id="SIMCXL", oem_table_id="SIMCXL", memory_domains=list(range(n)),
                       attached_initiators=[0] + [-1] * len(windows),
                       initiators=[0] * n, targets=list(range(n)),
                       read_latency_ns=[x.read_latency_ns for x in numa.nodes],
                       write_latency_ns=[x.write_latency_ns for x in numa.nodes],
                       read_bandwidth_gbps=[x.read_bandwidth_gbps for x in numa.nodes],
                       write_bandwidth_gbps=[x.write_bandwidth_gbps for x in numa.nodes])
    cedt = CXLAcpiCedt(oem_id="SIMCXL", oem_table_id="SIMCXL",
                       bridge_uids=list(range(len(windows))), bridge_versions=[1] * len(windows),
                       bridge_bases=[CHBS_BASE + 0x10000 * i for i in range(len(windows))],
                       bridge_lengths=[0x10000] * len(windows),
                       window_bases=[b for b, _ in windows], window_sizes=[s for _, s in windows],
                       window_ways=[1] * len(windows),
                       window_granularities=[min(16384, max(256, g)) for g in granularities],
                       window_targets=list(range(len(windows))), window_restrictions=[0x6] * len(windows))
    return [madt(cores), srat, slit, hmat, cedt]


def numa_board(*, processor, cache_hierarchy, local_memory, cxl: Sequence[Tuple[object, int]], numa: Numa,
               clk_freq: str = "3GHz"):
    """An X86Board with `local_memory` (a stdlib memory system of at most
    3 GiB) as node 0 and one CXL window per (preset, size) in `cxl`."""
    from m5.objects import AddrRange, X86ACPIRSDP, X86ACPIRSDT, X86ACPIXSDT, X86E820Entry
    from gem5.components.boards.x86_board import X86Board
    from .gem5 import host_bridge

    layout = window_layout([size for _, size in cxl])
    bridges = [host_bridge(preset) for preset, _ in cxl]

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
            self.cxl_e820 = [X86E820Entry(addr=base, size=f"{size}B", range_type=1) for base, size in layout]
            self.workload.e820_table.entries = list(self.workload.e820_table.entries) + list(self.cxl_e820)

    board = CXLNumaBoard(clk_freq=clk_freq, processor=processor, memory=local_memory,
                         cache_hierarchy=cache_hierarchy)
    board.cxl_bridges = bridges
    # The tables are made once the board is whole, each a child of the board
    # (a table listed in both RSDT and XSDT needs one parent of its own).
    board.acpi_tables = acpi_tables(processor.get_num_cores(), local_memory.get_size(), layout,
                                    [b._simcxl_system.cxl.bridge.interleave_bytes for b in bridges], numa)
    board.workload.acpi_description_table_pointer = X86ACPIRSDP(
        oem_id="SIMCXL", rsdt=X86ACPIRSDT(entries=board.acpi_tables), xsdt=X86ACPIXSDT(entries=board.acpi_tables))
    return board
