"""The SimCXL memory component in a stdlib SimpleBoard's memory slot (NULL ISA).

    $GEM5 gem5_configs/cxl_simpleboard.py --memory cxl-asic --duration 20us --csv out.csv

A NULL build has no ISA to load an SE binary, so a linear traffic generator
stands in for the processor and the board's full-system flag is set to SE by
hand; everything from the board's memory bus down (no caches, the CXL host
bridge and its expanders) is the same as with real cores. Prints a row and
writes it as CSV.
"""

import argparse

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from gem5.components.boards.simple_board import SimpleBoard  # noqa: E402
from gem5.components.cachehierarchies.classic.no_cache import NoCache  # noqa: E402
from gem5.components.processors.linear_generator import LinearGenerator  # noqa: E402
from gem5.simulate.simulator import Simulator  # noqa: E402

from simcxl.gem5.components import cxl_memory, read_stats, stat, total, write_csv  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--memory", default="cxl-asic", help="preset name, preset file or topology file (cxl-type3)")
parser.add_argument("--rate", default="8GiB/s")
parser.add_argument("--duration", default="20us")
parser.add_argument("--ways", type=int, default=None)
parser.add_argument("--csv", default=None)
args = parser.parse_args()

memory = cxl_memory(args.memory, size="1GiB", ways=args.ways)
generator = LinearGenerator(duration=args.duration, rate=args.rate, max_addr=memory.get_size(), rd_perc=100)
board = SimpleBoard(clk_freq="1GHz", processor=generator, memory=memory, cache_hierarchy=NoCache())
board._set_fullsystem(False)  # no SE binary on NULL; the memory path is what is exercised
Simulator(board=board).run()

m5.stats.dump()  # gem5 writes stats.txt at exit otherwise, after this script reads it
stats = read_stats(m5.options.outdir + "/stats.txt")


row = {"board": "SimpleBoard", "memory": args.memory, "reads": total(stats, "board.memory.bridge.readReqs"),
       "read_gbps": total(stats, "board.memory.bridge.readBandwidth") / 1e9,
       "expander_reads": sum(v for k, v in stat(stats, r"^board\.memory\.bridge\.root_ports\d*\.readReqs$").items())}
print(" ".join(f"{k}={v}" for k, v in row.items()))
write_csv(args.csv, row)
