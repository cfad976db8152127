"""X86 SE mode: STREAM (benchmarks/guest/stream.c) on out-of-order X86 cores
of a stdlib SimpleBoard whose memory slot holds a SimCXL CXL memory.

    cc -O2 -static -pthread -fno-tree-loop-distribute-patterns -o stream benchmarks/guest/stream.c
    $GEM5 gem5_configs/cxl_stream_se.py --binary stream --memory cxl-asic --kernel copy --threads 8 --csv out.csv

Each thread is a single-threaded copy of the guest on its own core (gem5 cannot
switch cores under a multi-threaded SE process). The arrays are written and
swept out of the caches on atomic cores; the timed passes run on --cpu cores,
from the first copy's work_begin to the last one's work_end. Prints the bandwidth in STREAM's counting
and the bridge's traffic each way in the window; a wrong element fails the run.
"""

import argparse
import re
import sys
from pathlib import Path

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.util.convert import toMemorySize  # noqa: E402
from m5.objects import Process  # noqa: E402
from gem5.components.boards.simple_board import SimpleBoard  # noqa: E402
from gem5.components.processors.cpu_types import CPUTypes  # noqa: E402
from gem5.components.processors.simple_switchable_processor import SimpleSwitchableProcessor  # noqa: E402
from gem5.isas import ISA  # noqa: E402
from gem5.resources.resource import BinaryResource  # noqa: E402
from gem5.simulate.exit_event import ExitEvent  # noqa: E402
from gem5.simulate.simulator import Simulator  # noqa: E402

from simcxl.gem5 import check_se_guest, host_caches, read_stats, slot_memory, total, write_csv  # noqa: E402

CPUS = {"timing": CPUTypes.TIMING, "o3": CPUTypes.O3}

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--binary", required=True, help="the guest STREAM (statically linked x86-64)")
parser.add_argument("--memory", default="cxl-asic", help="preset name or preset file (cxl-type3), or 'ddr4'")
parser.add_argument("--size", default="1GiB", help="memory size of the board")
parser.add_argument("--kernel", choices=["copy", "scale", "add", "triad"], default="copy")
parser.add_argument("--threads", type=int, default=8, help="threads = cores, 1 to 64")
parser.add_argument("--elements", type=int, default=131072, help="array elements per thread (8 B each)")
parser.add_argument("--passes", type=int, default=1, help="timed passes over the arrays")
parser.add_argument("--cpu", choices=sorted(CPUS), default="o3")
parser.add_argument("--clock", default="3GHz")
parser.add_argument("--l2", default="256KiB", help="private L2 size per core (the last level)")
parser.add_argument("--csv", default=None)
args = parser.parse_args()

check_se_guest(parser, args.binary)
for what, v, lo, hi in (("--threads", args.threads, 1, 64), ("--elements", args.elements, 512, 1 << 28),
                        ("--passes", args.passes, 1, 1000)):
    if not lo <= v <= hi:
        parser.error(f"{what} = {v} is out of range; allowed: {lo} to {hi}")
need = 3 * args.threads * args.elements * 8 + (64 << 20)
if need > toMemorySize(args.size):
    parser.error(f"--size {args.size} cannot hold the arrays and the program ({need} B); raise it")

memory = slot_memory(args.memory, args.size)
processor = SimpleSwitchableProcessor(starting_core_type=CPUTypes.ATOMIC, switch_core_type=CPUS[args.cpu],
                                      isa=ISA.X86, num_cores=args.threads)
caches = host_caches(32768, 8, toMemorySize(args.l2), 16, prefetch=False)
board = SimpleBoard(clk_freq=args.clock, processor=processor, memory=memory, cache_hierarchy=caches)
binary = str(Path(args.binary).resolve())
guest = ["-m", "-p", str(args.passes), "-s", str(2 * (toMemorySize(args.l2) + 32768)), args.kernel, "1",
         str(args.elements)]
outs = [Path(m5.options.outdir) / f"guest{i}.out" for i in range(args.threads)]
board.set_se_binary_workload(BinaryResource(local_path=binary), arguments=guest, stdout_file=outs[0])
# One process per core, each on both of its switchable cores.
for i, out in enumerate(outs):
    process = Process(pid=100 + i, executable=binary, cmd=[binary] + guest, output=str(out))
    for cores in processor._switchable_cores.values():
        cores[i].set_workload(process)


def begin():
    # The first copy to start its passes switches every core; the rest are close behind.
    started = 0
    while True:
        started += 1
        if started == 1:
            processor.switch()
            m5.stats.reset()
        yield False


def end():
    ended = 0
    while True:
        ended += 1
        if ended == args.threads:
            m5.stats.dump()
            processor.switch()
        yield False


simulator = Simulator(board=board, on_exit_event={ExitEvent.WORKBEGIN: begin(), ExitEvent.WORKEND: end()})
simulator.run()

found = []
for out in outs:
    text = out.read_text() if out.exists() else ""
    m = re.search(r"kernel=(\w+) threads=\d+ bytes=(\d+) stream_gbps=[0-9.]+ check=(\w+) t0_ns=(\d+) t1_ns=(\d+)", text)
    if not m:
        print(f"guest {out.name} did not finish; its output was:\n{text}", file=sys.stderr)
        sys.exit(1)
    found.append((int(m.group(2)), m.group(3), int(m.group(4)), int(m.group(5))))
moved = sum(f[0] for f in found)
span_ns = max(f[3] for f in found) - min(f[2] for f in found)
check = "ok" if all(f[1] == "ok" for f in found) else "bad"
stats = read_stats(Path(m5.options.outdir) / "stats.txt")
window = total(stats, "simSeconds", dump=0)
row = {"memory": args.memory, "kernel": args.kernel, "threads": args.threads, "cpu": args.cpu,
       "stream_gbps": moved / span_ns, "check": check,
       "read_gbps": total(stats, "board.memory.bridge.bytesRead::total", dump=0) / window / 1e9 if window else 0.0,
       "write_gbps": total(stats, "board.memory.bridge.bytesWritten::total", dump=0) / window / 1e9 if window else 0.0,
       "window_ns": window * 1e9}
print(f"{'memory':>10} {'kernel':>6} {'threads':>7} {'STREAM GB/s':>11} {'read GB/s':>9} {'write GB/s':>10}")
print(f"{args.memory:>10} {row['kernel']:>6} {row['threads']:>7} {row['stream_gbps']:>11.2f} "
      f"{row['read_gbps']:>9.2f} {row['write_gbps']:>10.2f}")
write_csv(args.csv, row)
if row["check"] != "ok":
    print("the guest found wrong elements", file=sys.stderr)
    sys.exit(1)
