"""X86 SE mode: a real core and caches on a stdlib SimpleBoard whose memory
slot holds a SimCXL CXL memory (or gem5's DDR4 model, as the local baseline),
running the guest pointer chase of benchmarks/guest/chase.c.

    cc -O2 -static -o chase benchmarks/guest/chase.c
    $GEM5 gem5_configs/cxl_se.py --binary chase --memory cxl-asic --sizes 16KiB,16MiB --csv out.csv

Needs a gem5 built for X86 with this repository as EXTRAS. Prints one row per
working set (the latency the guest measured, in simulated time) and writes
them as CSV; the guest also writes and re-reads every line of its buffer, and
a mismatch fails the run.

--warm atomic builds and warms each chain on an atomic core and switches to
--cpu only for the timed loads (the guest marks them with gem5's work_begin
and work_end ops): working sets of a GiB then cost about a minute, not an hour.
"""

import argparse
import re
import sys
from pathlib import Path

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.util.convert import toMemorySize  # noqa: E402
from gem5.components.boards.simple_board import SimpleBoard  # noqa: E402
from gem5.components.processors.cpu_types import CPUTypes  # noqa: E402
from gem5.components.processors.simple_processor import SimpleProcessor  # noqa: E402
from gem5.components.processors.simple_switchable_processor import SimpleSwitchableProcessor  # noqa: E402
from gem5.simulate.exit_event import ExitEvent  # noqa: E402
from gem5.isas import ISA  # noqa: E402
from gem5.resources.resource import BinaryResource  # noqa: E402
from gem5.simulate.simulator import Simulator  # noqa: E402

from simcxl.gem5.components import check_se_guest, host_caches, read_stats, slot_memory, total, write_csv  # noqa: E402

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
parser.add_argument("--l1d", default="32KiB", help="L1D size (L1I is 32 KiB)")
parser.add_argument("--l1d-assoc", type=int, default=8, help="L1D ways")
parser.add_argument("--l2", default="1MiB", help="L2 size (the last level)")
parser.add_argument("--l2-assoc", type=int, default=16, help="L2 ways")
parser.add_argument("--l2-cycles", type=int, default=None, help="L2 tag and data latency in cycles (gem5's default: 10)")
parser.add_argument("--no-prefetch", action="store_true", help="no hardware prefetchers (as testbeds often run)")
parser.add_argument("--warm", choices=["none", "atomic"], default="none",
                    help="atomic: build and warm on an atomic core, time on --cpu")
parser.add_argument("--warm-lines", type=int, default=0,
                    help="with --warm atomic: lines walked before the timed ones (0: each whole cycle; "
                         "a little more than the last-level cache holds is enough)")
parser.add_argument("--csv", default=None)
args = parser.parse_args()

check_se_guest(parser, args.binary)
if args.accesses < 1:
    parser.error(f"--accesses = {args.accesses} is out of range; allowed: 1 or more")
sizes = [toMemorySize(s) for s in args.sizes.split(",")]
if max(sizes) * 2 > toMemorySize(args.size):
    parser.error(f"--sizes: the largest working set must be at most half of --size {args.size}")

if args.warm == "atomic" and args.cpu == "atomic":
    parser.error("--warm atomic times on --cpu, which must then be timing or o3")
for what, n in (("--l1d-assoc", args.l1d_assoc), ("--l2-assoc", args.l2_assoc)):
    if not 1 <= n <= 64:
        parser.error(f"{what} = {n} is out of range; allowed: 1 to 64")
if args.warm_lines < 0:
    parser.error(f"--warm-lines = {args.warm_lines} is out of range; allowed: 0 or more")
if args.l2_cycles is not None and not 1 <= args.l2_cycles <= 1000:
    parser.error(f"--l2-cycles = {args.l2_cycles} is out of range; allowed: 1 to 1000")

memory = slot_memory(args.memory, args.size)
if args.warm == "atomic":
    processor = SimpleSwitchableProcessor(starting_core_type=CPUTypes.ATOMIC, switch_core_type=CPUS[args.cpu],
                                          isa=ISA.X86, num_cores=1)
else:
    processor = SimpleProcessor(cpu_type=CPUS[args.cpu], isa=ISA.X86, num_cores=1)
try:
    caches = host_caches(toMemorySize(args.l1d), args.l1d_assoc, toMemorySize(args.l2), args.l2_assoc,
                         args.l2_cycles, prefetch=not args.no_prefetch)
except ValueError as e:
    parser.error(str(e))
board = SimpleBoard(clk_freq=args.clock, processor=processor, memory=memory, cache_hierarchy=caches)
guest_out = Path(m5.options.outdir) / "guest.out"
marks = ["-m"] + (["-w", str(args.warm_lines)] if args.warm_lines else []) if args.warm == "atomic" else []
board.set_se_binary_workload(BinaryResource(local_path=str(Path(args.binary).resolve())),
                             arguments=["-a", str(args.accesses)] + marks + [str(s) for s in sizes],
                             stdout_file=guest_out)


def switch():
    # work_begin: to the timing core; work_end: back to the atomic one.
    while True:
        processor.switch()
        yield False


simulator = Simulator(board=board, on_exit_event={ExitEvent.WORKBEGIN: switch(), ExitEvent.WORKEND: switch()}
                      if args.warm == "atomic" else None)
simulator.run()
m5.stats.dump()

text = guest_out.read_text()
rows = [{"memory": args.memory, "cpu": args.cpu, "warm": args.warm, "size_bytes": int(m.group(1)), "latency_ns": float(m.group(2))}
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
