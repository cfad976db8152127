"""X86 full system: Linux boots on a stdlib X86Board whose memory slot holds a
SimCXL CXL memory, so every access of the boot (page tables, the kernel image,
the page allocator's memory init) goes through the CXL host bridge and its
Type-3 expander.

    $GEM5 gem5_configs/cxl_x86_boot.py --kernel vmlinux --memory cxl-asic --until 'Run /init|VFS:' --csv out.csv

Needs a gem5 built for X86 with this repository as EXTRAS and an uncompressed
x86-64 Linux kernel (vmlinux; docs/tutorials/gem5.md says how to extract one from a
distribution's package). Without --disk an empty disk image is made, so a
kernel without a driver for it stops at the root mount: far enough for every
initcall. The run ends when the console matches --until or --max-seconds of
simulated time pass; it prints the kernel's memory lines and the bridge's
counts, and writes them as CSV.
"""

import argparse
import re
import sys
import time
from pathlib import Path

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.objects import (Root, X86ACPIMadt, X86ACPIMadtIntSourceOverride, X86ACPIMadtIOAPIC,  # noqa: E402
                        X86ACPIMadtLAPIC, X86ACPIRSDP, X86ACPIRSDT, X86ACPIXSDT)
from gem5.components.boards.x86_board import X86Board  # noqa: E402
from gem5.components.cachehierarchies.classic.private_l1_private_l2_cache_hierarchy import (  # noqa: E402
    PrivateL1PrivateL2CacheHierarchy)
from gem5.components.processors.cpu_types import CPUTypes  # noqa: E402
from gem5.components.processors.simple_processor import SimpleProcessor  # noqa: E402
from gem5.isas import ISA  # noqa: E402
from gem5.resources.resource import DiskImageResource, KernelResource  # noqa: E402

from simcxl.gem5.components import check_fs_inputs, read_stats, slot_memory, total, write_csv  # noqa: E402

CPUS = {"atomic": CPUTypes.ATOMIC, "timing": CPUTypes.TIMING}

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--kernel", required=True, help="uncompressed x86-64 Linux kernel (vmlinux, ELF)")
parser.add_argument("--disk", default=None, help="raw disk image (default: an empty one)")
parser.add_argument("--memory", default="cxl-asic",
                    help="preset name or preset file (cxl-type3), or 'ddr4' for gem5's DDR4-2400 baseline")
parser.add_argument("--size", default="1GiB", help="memory size: X86Board allows up to 3 GiB")
parser.add_argument("--cpu", choices=sorted(CPUS), default="atomic")
parser.add_argument("--until", default=r"Run /init|VFS: Unable to mount root|Kernel panic",
                    help="stop when the console matches this regular expression")
parser.add_argument("--max-seconds", type=float, default=1.0, help="simulated seconds at most")
parser.add_argument("--csv", default=None)
args = parser.parse_args()

kernel = check_fs_inputs(parser, args.kernel, args.size, "--size", "a vmlinux, not a compressed bzImage")
if args.max_seconds <= 0:
    parser.error(f"--max-seconds = {args.max_seconds} is out of range; allowed: above 0")
until = re.compile(args.until)

outdir = Path(m5.options.outdir)
disk = Path(args.disk) if args.disk else outdir / "empty.img"
if not args.disk:
    with open(disk, "wb") as f:
        f.truncate(1 << 20)

memory = slot_memory(args.memory, args.size)
processor = SimpleProcessor(cpu_type=CPUS[args.cpu], isa=ISA.X86, num_cores=1)
caches = PrivateL1PrivateL2CacheHierarchy(l1d_size="32KiB", l1i_size="32KiB", l2_size="1MiB")
board = X86Board(clk_freq="3GHz", processor=processor, memory=memory, cache_hierarchy=caches)
board.set_kernel_disk_workload(kernel=KernelResource(local_path=str(kernel.resolve())),
                               disk_image=DiskImageResource(local_path=str(disk.resolve())),
                               kernel_args=["earlyprintk=ttyS0", "console=ttyS0", "lpj=7999923",
                                            "root=/dev/sda1", "panic=0"])

# X86Board describes its interrupt controllers only in an Intel MP table, which
# kernels built without CONFIG_X86_MPPARSE (most distributions' cloud kernels)
# ignore: without them no timer interrupt arrives and the boot stalls. The same
# description as an ACPI MADT serves both kinds of kernel.
cores = processor.get_num_cores()
madt = X86ACPIMadt(local_apic_address=0xFEE00000, flags=1, records=(
    [X86ACPIMadtLAPIC(acpi_processor_id=i, apic_id=i, flags=1) for i in range(cores)]
    + [X86ACPIMadtIOAPIC(id=cores, address=0xFEC00000, int_base=0),
       X86ACPIMadtIntSourceOverride(bus_source=0, irq_source=0, sys_int=2, flags=0)]))
board.workload.acpi_description_table_pointer = X86ACPIRSDP(
    oem_id="SIMCXL", rsdt=X86ACPIRSDT(entries=[madt]), xsdt=X86ACPIXSDT(entries=[madt]))

board._pre_instantiate()
root = Root(full_system=True, board=board)
m5.instantiate()
board._post_instantiate()

console = outdir / "board.pc.com_1.device"
chunk = 10 * 10**9  # 10 ms of simulated time between console checks
limit = int(args.max_seconds * 10**12)
start = time.time()
matched = None
while m5.curTick() < limit:
    event = m5.simulate(chunk)
    text = console.read_text(errors="replace") if console.exists() else ""
    matched = until.search(text)
    if matched or event.getCause() != "simulate() limit reached":
        break
wall = time.time() - start
m5.stats.dump()

text = console.read_text(errors="replace") if console.exists() else ""
stats = read_stats(outdir / "stats.txt")


row = {"memory": args.memory, "cpu": args.cpu, "size": args.size,
       "reached": matched.group(0) if matched else "",
       "sim_seconds": m5.curTick() / 1e12, "wall_seconds": round(wall, 1),
       # AbstractMemory's own counts: they include atomic-mode accesses, which the timing stats do not.
       "bridge_reads": total(stats, "board.memory.bridge.numReads::total"),
       "bridge_writes": total(stats, "board.memory.bridge.numWrites::total"),
       "read_latency_ns": total(stats, "board.memory.bridge.avgReadLatency") / 1000,
       "kernel_memory": next((ln.strip() for ln in text.splitlines() if "Memory:" in ln and "available" in ln), "")}
for ln in text.splitlines():
    if re.search(r"BIOS-e820|Memory:|NUMA|node|Linux version", ln):
        print("console:", ln.strip())
print(" ".join(f"{k}={v}" for k, v in row.items()))
write_csv(args.csv, row)
if not matched:
    print(f"the console never matched {args.until!r} within {args.max_seconds} simulated seconds", file=sys.stderr)
    sys.exit(1)
