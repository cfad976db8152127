"""X86 SE mode: STREAM (benchmarks/guest/stream.c) on out-of-order X86 cores
of a stdlib SimpleBoard whose memory slot holds a SimCXL CXL memory.

    cc -O2 -static -pthread -fno-tree-loop-distribute-patterns -o stream benchmarks/guest/stream.c
    $GEM5 gem5_configs/cxl_stream_se.py --binary stream --memory cxl-asic --kernel copy --threads 8 --csv out.csv

Each thread is a single-threaded copy of the guest on its own core (gem5 cannot
switch cores under a multi-threaded SE process). The arrays are written and
passed over once on atomic cores, which leaves memory and caches as STREAM's
own passes do; the timed passes of all copies then start together on --cpu
cores, and the bandwidth is their bytes over the span from the first start to
the last finish (gem5's stats window). The copies touch their arrays in turn,
so that each has consecutive frames, as a Linux thread's first touch gives.
Stores that miss fetch their line for ownership, as on the host modelled (see
below), or with --stores non-temporal write whole lines without reading them.
Prints the bandwidth in STREAM's counting and the host bridge's traffic each
way in the window; a wrong element fails the run.
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

from simcxl.gem5.components import check_se_guest, host_caches, read_stats, slot_memory, total, write_csv  # noqa: E402
from simcxl.gem5.board import shape_o3  # noqa: E402

CPUS = {"timing": CPUTypes.TIMING, "o3": CPUTypes.O3}

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--binary", required=True, help="the guest STREAM (statically linked x86-64)")
parser.add_argument("--memory", default="cxl-asic", help="preset name or preset file (cxl-type3), or 'ddr4'")
parser.add_argument("--size", default="1GiB", help="memory size of the board")
parser.add_argument("--kernel", choices=["copy", "scale", "add", "triad"], default="copy")
parser.add_argument("--threads", type=int, default=8, help="threads = cores, 1 to 64")
parser.add_argument("--elements", type=int, default=32768, help="array elements per thread the timed passes cover (8 B each)")
parser.add_argument("--passes", type=int, default=1, help="timed passes over the arrays")
parser.add_argument("--cpu", choices=sorted(CPUS), default="o3")
parser.add_argument("--clock", default="3GHz")
parser.add_argument("--l1d", default="48KiB", help="L1D size per core")
parser.add_argument("--l1d-assoc", type=int, default=12)
parser.add_argument("--l2", default="2MiB", help="private L2 size per core (the last level)")
parser.add_argument("--l2-assoc", type=int, default=16)
parser.add_argument("--mshrs", type=int, default=16, help="misses in flight per core (L1D MSHRs), 1 to 256")
parser.add_argument("--write-buffers", type=int, default=32, help="dirty lines per L2 on their way out, 1 to 1024")
parser.add_argument("--stores", choices=["write-allocate", "non-temporal"], default="write-allocate",
                    help="a store miss reads its line for ownership, or a whole line of stores is written alone")
parser.add_argument("--csv", default=None)
args = parser.parse_args()

check_se_guest(parser, args.binary)
for what, v, lo, hi in (("--threads", args.threads, 1, 64), ("--elements", args.elements, 512, 1 << 28),
                        ("--passes", args.passes, 1, 1000), ("--mshrs", args.mshrs, 1, 256),
                        ("--write-buffers", args.write_buffers, 1, 1024)):
    if not lo <= v <= hi:
        parser.error(f"{what} = {v} is out of range; allowed: {lo} to {hi}")
l1d, l2 = toMemorySize(args.l1d), toMemorySize(args.l2)
# The untimed pass runs over twice the caches beyond the timed elements, so
# that the timed ones start from STREAM's steady state.
slice_elements = args.elements + 2 * (l1d + l2) // 8
need = 3 * args.threads * slice_elements * 8 + (64 << 20)
if need > toMemorySize(args.size):
    parser.error(f"--size {args.size} cannot hold the arrays and the program ({need} B); raise it")

memory = slot_memory(args.memory, args.size)
processor = SimpleSwitchableProcessor(starting_core_type=CPUTypes.ATOMIC, switch_core_type=CPUS[args.cpu],
                                      isa=ISA.X86, num_cores=args.threads)
caches = host_caches(l1d, args.l1d_assoc, l2, args.l2_assoc, prefetch=False, mshrs=args.mshrs,
                     write_buffers=args.write_buffers, streaming_stores=args.stores == "non-temporal")
if args.memory != "ddr4" and args.stores == "write-allocate":
    # An MSHR that has gathered a whole line of stores asks for the line
    # without its data (InvalidateReq), which the point of coherence answers
    # itself. Without one, the request reaches the host bridge, which times
    # it as the read for ownership the host modelled issues (gem5's DRAM
    # controller cannot take such requests, so 'ddr4' keeps the shortcut).
    # Non-temporal stores keep the shortcut, and the L1D gathers whole lines
    # (host_caches' streaming_stores): the line reaches memory as a write
    # alone, as a streaming store's does. (gem5's X86 treats movnt as an
    # ordinary store, so the guest needs none.)
    caches.membus.point_of_coherency = False
# Each copy is single-threaded, so no other core can see its store order: O3
# cores without TSO, with the testbed host's queue sizes; the L1's MSHRs then
# bound a core as its fill buffers do (simcxl.gem5.board.shape_o3).
shape_o3(processor, tso=False)
board = SimpleBoard(clk_freq=args.clock, processor=processor, memory=memory, cache_hierarchy=caches)
binary = str(Path(args.binary).resolve())
gate = Path(m5.options.outdir) / "stream.gate"
gate.unlink(missing_ok=True)
# The copies touch their arrays one after another, so that each gets
# consecutive frames as a Linux thread does (see the guest's -s).
turn = Path(m5.options.outdir) / "stream.turn"
for old in turn.parent.glob(turn.name + ".*"):
    old.unlink()


def guest(i):
    return ["-m", "-g", str(gate), "-s", str(turn), str(i), "-p", str(args.passes), "-w", "-t", str(args.elements),
            args.kernel, "1", str(slice_elements)]


outs = [Path(m5.options.outdir) / f"guest{i}.out" for i in range(args.threads)]
board.set_se_binary_workload(BinaryResource(local_path=binary), arguments=guest(0), stdout_file=outs[0])
# One process per core, each on both of its switchable cores.
for i, out in enumerate(outs):
    process = Process(pid=100 + i, executable=binary, cmd=[binary] + guest(i), output=str(out))
    for cores in processor._switchable_cores.values():
        cores[i].set_workload(process)


def begin():
    # Copies that are ready wait for the gate; the last one opens it.
    started = 0
    while True:
        started += 1
        if started == args.threads:
            processor.switch()
            m5.stats.reset()
            gate.touch()
        yield False


def end():
    # Copies that are done wait until the last one closes the gate, so that
    # none checks its elements on a detailed core while others are timed.
    ended = 0
    while True:
        ended += 1
        if ended == args.threads:
            m5.stats.dump()
            gate.unlink()
            processor.switch()
        yield False


simulator = Simulator(board=board, on_exit_event={ExitEvent.WORKBEGIN: begin(), ExitEvent.WORKEND: end()})
simulator.run()

found = []
for out in outs:
    text = out.read_text() if out.exists() else ""
    m = re.search(r"kernel=(\w+) threads=\d+ bytes=(\d+) stream_gbps=\S+ check=(\w+)", text)
    if not m:
        print(f"guest {out.name} did not finish; its output was:\n{text}", file=sys.stderr)
        sys.exit(1)
    found.append((int(m.group(2)), m.group(3)))
moved = sum(f[0] for f in found)
check = "ok" if all(f[1] == "ok" for f in found) else "bad"
# The stats window is the span from the gate's opening to the last copy's
# end. The guests' own clocks are not used: on an O3 core a clock_gettime
# right after the pass has been seen to return the one before it.
stats = read_stats(Path(m5.options.outdir) / "stats.txt")
window = total(stats, "simTicks", dump=0) / total(stats, "simFreq", dump=0)  # simSeconds is rounded to 1 us
if window <= 0:
    print("the stats window of the timed passes is empty", file=sys.stderr)
    sys.exit(1)
row = {"memory": args.memory, "kernel": args.kernel, "threads": args.threads, "cpu": args.cpu, "stores": args.stores,
       "stream_gbps": moved / window / 1e9, "check": check,
       "read_gbps": total(stats, "board.memory.bridge.readBytes", dump=0) / window / 1e9,
       "write_gbps": total(stats, "board.memory.bridge.writeBytes", dump=0) / window / 1e9,
       "window_ns": window * 1e9}
print(f"{'memory':>10} {'kernel':>6} {'threads':>7} {'STREAM GB/s':>11} {'read GB/s':>9} {'write GB/s':>10}")
print(f"{args.memory:>10} {row['kernel']:>6} {row['threads']:>7} {row['stream_gbps']:>11.2f} "
      f"{row['read_gbps']:>9.2f} {row['write_gbps']:>10.2f}")
write_csv(args.csv, row)
if row["check"] != "ok":
    print("the guest found wrong elements", file=sys.stderr)
    sys.exit(1)
