"""NULL- or X86-ISA TestBoard: STREAM's memory traffic against a SimCXL CXL
memory, as saturating gem5 traffic generators (cf. Intel MLC's bandwidth mode).

    $GEM5 gem5_configs/cxl_stream.py --memory cxl-asic --kernel copy --threads 16 --csv out.csv

Each thread is one sequential stream per array it touches, over its own slice
of STREAM's three arrays (1 GiB apart plus a page, as the standalone engine
lays them out): a load stream per array read and, for the array written, the
read-for-ownership of each line and its later write-back. Bandwidth is the
counted over the window after a warm-up as STREAM counts it (each array's
bytes once, no write-allocate) and as STREAM advances: each thread as far as
its least-served stream, since the generators run free where STREAM's
streams move in lockstep. A real X86 STREAM at 16 threads needs
out-of-order cores at hours per point; these streams put the same mix and
locality on the memory, which is where STREAM saturates.
"""

import argparse
import re
import sys
from pathlib import Path

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.util.convert import toLatency, toMemorySize  # noqa: E402
from gem5.components.boards.test_board import TestBoard  # noqa: E402
from gem5.components.cachehierarchies.classic.no_cache import NoCache  # noqa: E402
from gem5.components.processors.abstract_generator import AbstractGenerator  # noqa: E402
from gem5.components.processors.linear_generator_core import LinearGeneratorCore  # noqa: E402
from gem5.simulate.simulator import Simulator  # noqa: E402

from simcxl.gem5.components import cxl_memory, read_stats, stat, write_csv  # noqa: E402

# Per kernel: (array, percent reads) per stream; the written array has a
# read-for-ownership stream and a write-back stream.
KERNELS = {
    "copy": ((0, 100), (2, 100), (2, 0)),
    "scale": ((2, 100), (1, 100), (1, 0)),
    "add": ((0, 100), (1, 100), (2, 100), (2, 0)),
    "triad": ((1, 100), (2, 100), (0, 100), (0, 0)),
}
GiB = 1 << 30


class Streams(AbstractGenerator):
    """Linear generator cores with their own address ranges and read mixes."""

    def start_traffic(self) -> None:
        for core in self.cores:
            core.start_traffic()


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--memory", default="cxl-asic", help="preset name, preset file or topology file (cxl-type3)")
parser.add_argument("--kernel", choices=sorted(KERNELS), default="copy",
                    help="one kernel per run: gem5 instantiates a system once per process")
parser.add_argument("--threads", type=int, default=16, help="STREAM threads, 1 to 64")
parser.add_argument("--slice", default="8MiB", help="bytes of each array per thread")
parser.add_argument("--warmup", default="20us", help="simulated time before the window")
parser.add_argument("--duration", default="100us", help="simulated time of the window")
parser.add_argument("--stream-rate", default="8GiB/s", help="offered load of each stream (far above what it gets)")
parser.add_argument("--outstanding", type=int, default=4,
                    help="requests each stream keeps in flight, as a core's fill buffers bound it (1 to 1024)")
parser.add_argument("--write-outstanding", type=int, default=0, help="for the write-back streams (0: as --outstanding)")
parser.add_argument("--csv", default=None, help="write the table here")
args = parser.parse_args()

if not 1 <= args.threads <= 64:
    parser.error(f"--threads = {args.threads} is out of range; allowed: 1 to 64")
if not 1 <= args.outstanding <= 1024:
    parser.error(f"--outstanding = {args.outstanding} is out of range; allowed: 1 to 1024")
kernel = args.kernel
slice_bytes = int(toMemorySize(args.slice))
if slice_bytes < 4096 or slice_bytes % 64:
    parser.error(f"--slice = {args.slice} is not allowed; allowed: a multiple of 64 B, at least 4 KiB")
stride = -(-args.threads * slice_bytes // GiB) * GiB + 4096
size = 3 * stride
memory = cxl_memory(args.memory, size=f"{-(-size // GiB)}GiB")
warmup = int(toLatency(args.warmup) * 1e12)
duration = int(toLatency(args.duration) * 1e12)
cores = []
for t in range(args.threads):
    for array, rd in KERNELS[kernel]:
        lo = array * stride + t * slice_bytes
        core = LinearGeneratorCore(duration=f"{warmup + duration + 1000}ps", rate=args.stream_rate, block_size=64,
                                   min_addr=lo, max_addr=lo + slice_bytes, rd_perc=rd, data_limit=0)
        core.generator.max_outstanding_reqs = args.outstanding if rd else (args.write_outstanding or args.outstanding)
        cores.append(core)
# NoCache: only a crossbar (64 B per cycle at 2 GHz) between the streams and the memory.
board = TestBoard(clk_freq="2GHz", generator=Streams(cores=cores), memory=memory,
                  cache_hierarchy=NoCache())
simulator = Simulator(board=board)
simulator.run(max_ticks=warmup)
m5.stats.reset()
simulator.run(max_ticks=duration)
m5.stats.dump()

stats = read_stats(Path(m5.options.outdir) / "stats.txt")
short = {k.split("memory.bridge.", 1)[1]: v for k, v in stat(stats, r"memory\.bridge\.[^.]+$").items()}
read_gbps = short.get("readBandwidth", 0.0) / 1e9
write_gbps = short.get("writeBandwidth", 0.0) / 1e9
if read_gbps + write_gbps <= 0:
    print("no traffic reached the memory in the window", file=sys.stderr)
    sys.exit(1)
# STREAM advances as fast as its slowest stream: a thread has done as many
# elements as its least-served stream has moved lines; the rest is traffic
# that lockstep would not have let through.
per_core = {}
for k, v in stat(stats, r"memory\.bridge\.bytes(Read|Written)::processor\.cores\d+\.generator$").items():
    core = int(re.search(r"cores(\d+)\.generator", k).group(1))
    per_core[core] = per_core.get(core, 0.0) + v
streams = len(KERNELS[kernel])
counted_arrays = streams - 1  # every array once; the written one's read for ownership is not counted
done = sum(min(per_core.get(t * streams + i, 0.0) for i in range(streams)) for t in range(args.threads))
counted = done * counted_arrays / (duration * 1e-12) / 1e9
row = {"memory": args.memory, "kernel": kernel, "threads": args.threads, "stream_gbps": counted,
       "read_gbps": read_gbps, "write_gbps": write_gbps, "window_ns": duration / 1000.0}
print(f"{'memory':>10} {'kernel':>6} {'threads':>7} {'STREAM GB/s':>11} {'read GB/s':>9} {'write GB/s':>10}")
print(f"{args.memory:>10} {kernel:>6} {args.threads:>7} {counted:>11.2f} {read_gbps:>9.2f} {write_gbps:>10.2f}")
write_csv(args.csv, row)
