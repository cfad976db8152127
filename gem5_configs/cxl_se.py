"""X86 SE mode: a real core and caches on a stdlib SimpleBoard whose memory
slot holds a SimCXL CXL memory (or gem5's DDR4 model, as the local baseline),
running the guest pointer chase of benchmarks/guest/chase.c.

    cc -O2 -static -o chase benchmarks/guest/chase.c
    $GEM5 gem5_configs/cxl_se.py --binary chase --memory cxl-asic --sizes 16KiB,16MiB --csv out.csv

Needs a gem5 built for X86 with this repository as EXTRAS. Prints one row per
working set (the latency the guest measured, in simulated time) and writes
them as CSV; the guest also writes and re-reads every line of its buffer, and
a mismatch fails the run.
"""

import argparse
import re
import sys
from pathlib import Path

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.util.convert import toMemorySize  # noqa: E402
from gem5.components.boards.simple_board import SimpleBoard  # noqa: E402
from gem5.components.cachehierarchies.classic.private_l1_private_l2_cache_hierarchy import (  # noqa: E402
    PrivateL1PrivateL2CacheHierarchy)
from gem5.components.processors.cpu_types import CPUTypes  # noqa: E402
from gem5.components.processors.simple_processor import SimpleProcessor  # noqa: E402
from gem5.isas import ISA  # noqa: E402
from gem5.resources.resource import BinaryResource  # noqa: E402
from gem5.runtime import get_supported_isas  # noqa: E402
from gem5.simulate.simulator import Simulator  # noqa: E402

from simcxl.gem5 import read_stats, slot_memory, total, write_csv  # noqa: E402

CPUS = {"atomic": CPUTypes.ATOMIC, "timing": CPUTypes.TIMING, "o3": CPUTypes.O3}

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--binary", required=True, help="the guest program (statically linked x86-64)")
parser.add_argument("--memory", default="cxl-asic",
                    help="preset name or preset file (cxl-type3), or 'ddr4' for gem5's DDR4-2400 baseline")
parser.add_argument("--size", default="512MiB", help="memory size of the board")
parser.add_argument("--sizes", default="16KiB,256KiB,16MiB", help="working sets, comma-separated")
parser.add_argument("--accesses", type=int, default=20000, help="timed loads per working set")
parser.add_argument("--cpu", choices=sorted(CPUS), default="timing")
parser.add_argument("--clock", default="3GHz")
parser.add_argument("--l2", default="1MiB", help="L2 size (the last level; L1D and L1I are 32 KiB)")
parser.add_argument("--csv", default=None)
args = parser.parse_args()

if ISA.X86 not in get_supported_isas():
    parser.error("this gem5 binary has no X86 ISA; build build/X86/gem5.opt with EXTRAS=<repo>")
if not Path(args.binary).is_file():
    parser.error(f"--binary {args.binary}: no such file")
if args.accesses < 1:
    parser.error(f"--accesses = {args.accesses} is out of range; allowed: 1 or more")
sizes = [toMemorySize(s) for s in args.sizes.split(",")]
if max(sizes) * 2 > toMemorySize(args.size):
    parser.error(f"--sizes: the largest working set must be at most half of --size {args.size}")

memory = slot_memory(args.memory, args.size)
processor = SimpleProcessor(cpu_type=CPUS[args.cpu], isa=ISA.X86, num_cores=1)
caches = PrivateL1PrivateL2CacheHierarchy(l1d_size="32KiB", l1i_size="32KiB", l2_size=args.l2)
board = SimpleBoard(clk_freq=args.clock, processor=processor, memory=memory, cache_hierarchy=caches)
guest_out = Path(m5.options.outdir) / "guest.out"
board.set_se_binary_workload(BinaryResource(local_path=str(Path(args.binary).resolve())),
                             arguments=["-a", str(args.accesses)] + [str(s) for s in sizes],
                             stdout_file=guest_out)
simulator = Simulator(board=board)
simulator.run()
m5.stats.dump()

text = guest_out.read_text()
rows = [{"memory": args.memory, "cpu": args.cpu, "size_bytes": int(m.group(1)), "latency_ns": float(m.group(2))}
        for m in re.finditer(r"size_bytes=(\d+) accesses=\d+ latency_ns=([0-9.]+)", text)]
check = re.search(r"verify_lines=(\d+) mismatches=(\d+)", text)
if len(rows) != len(sizes) or not check:
    print(f"the guest did not finish; its output was:\n{text}", file=sys.stderr)
    sys.exit(1)
stats = read_stats(Path(m5.options.outdir) / "stats.txt")
cxl_reads = total(stats, "board.memory.bridge.readReqs")
for r in rows:
    r.update(verify_lines=int(check.group(1)), mismatches=int(check.group(2)), memory_reads=cxl_reads,
             sim_seconds=simulator.get_current_tick() / 1e12)
print(f"{'memory':>10} {'cpu':>6} {'working set':>12} {'latency ns':>11}")
for r in rows:
    print(f"{r['memory']:>10} {r['cpu']:>6} {r['size_bytes']:>12} {r['latency_ns']:>11.1f}")
print(f"guest data check: {check.group(1)} lines read back, {check.group(2)} mismatches")
write_csv(args.csv, rows)
if int(check.group(2)):
    print("the guest found data mismatches", file=sys.stderr)
    sys.exit(1)
