"""NULL-ISA TestBoard: a traffic generator against a SimCXL CXL memory (a host
bridge with one Type-3 expander per root port).

    $GEM5 gem5_configs/cxl_traffic.py --memory cxl-asic --pattern random --rd-perc 100 \\
        --rate 64GiB/s --duration 200us --csv out.csv

Prints a table (bandwidth each way, mean read latency, latency per stage) and
writes it as CSV. `simcxl_boot` makes the repository's `simcxl` (its presets
and dataclasses) importable in gem5's own Python, without numpy or pandas.
"""

import argparse
import time
from pathlib import Path

import simcxl_boot  # noqa: E402,F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from gem5.components.boards.test_board import TestBoard  # noqa: E402
from gem5.components.processors.linear_generator import LinearGenerator  # noqa: E402
from gem5.components.processors.random_generator import RandomGenerator  # noqa: E402
from gem5.simulate.simulator import Simulator  # noqa: E402

from simcxl.gem5 import tracing  # noqa: E402
from simcxl.gem5.components import cxl_memory, read_stats, set_param, stat, write_csv  # noqa: E402

STAGES = ("host_uncore", "host_port", "link_down", "device", "media_queue", "media_service", "link_up")

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--memory", default="cxl-asic",
                    help="preset name, preset file or topology file (cxl-type3); or gem5's own memories, to see what "
                         "the CXL path costs beyond them (benchmarks/gem5_overhead.py): gem5-simple (SimpleMemory "
                         "with --simple-latency and --simple-bandwidth) or gem5-ddr4 (one DDR4-2400 channel)")
parser.add_argument("--simple-latency", default="250ns", help="gem5-simple: its fixed latency")
parser.add_argument("--simple-bandwidth", default="64GiB/s", help="gem5-simple: its bandwidth")
parser.add_argument("--pattern", choices=["linear", "random"], default="random")
parser.add_argument("--rd-perc", type=int, default=100, help="read percentage, 0 to 100")
parser.add_argument("--rate", default="64GiB/s", help="offered load of the generator")
parser.add_argument("--duration", default="200us")
parser.add_argument("--size", default="1GiB", help="memory size the generator spans")
parser.add_argument("--warmup", default=None,
                    help="reset the statistics after this much of --duration (e.g. 20us): the table is the rest")
parser.add_argument("--ways", type=int, default=None, help="HDM interleave ways = root ports = expanders")
parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="set a SimObject parameter directly: bridge_* on the CXLHostBridge, others (link_lanes=8, "
                         "...) on every CXLType3Expander (checked by the timing core when gem5 instantiates "
                         "them); repeatable")
parser.add_argument("--csv", default=None, help="write the table here")
tracing.add_options(parser)
args = parser.parse_args()
if not 0 <= args.rd_perc <= 100:
    parser.error(f"--rd-perc = {args.rd_perc} is out of range; allowed: 0 to 100")

if args.memory == "gem5-simple":
    from gem5.components.memory.simple import SingleChannelSimpleMemory
    memory = SingleChannelSimpleMemory(latency=args.simple_latency, latency_var="0ns",
                                       bandwidth=args.simple_bandwidth, size=args.size)
    bridges = []
elif args.memory == "gem5-ddr4":
    from gem5.components.memory.single_channel import SingleChannelDDR4_2400
    memory = SingleChannelDDR4_2400(size=args.size)
    bridges = []
else:
    memory = cxl_memory(args.memory, size=args.size, ways=args.ways)
    bridges = [memory.bridge]
if args.param and not bridges:
    parser.error(f"--param sets CXLHostBridge and CXLType3Expander parameters; {args.memory} has neither")
for item in args.param:
    name, sep, value = item.partition("=")
    if not sep:
        parser.error(f"--param {item}: expected NAME=VALUE")
    try:
        number = int(value)
    except ValueError:
        number = float(value)
    set_param(memory.bridge, name.strip(), number)
gen_cls = LinearGenerator if args.pattern == "linear" else RandomGenerator
generator = gen_cls(duration=args.duration, rate=args.rate, max_addr=memory.get_size(), rd_perc=args.rd_perc)
board = TestBoard(clk_freq="1GHz", generator=generator, memory=memory, cache_hierarchy=None)
tracing.enable(bridges, args)
simulator = Simulator(board=board)
t0 = time.perf_counter()
if args.warmup:
    from m5.ticks import fixGlobalFrequency, fromSeconds
    from m5.util.convert import toLatency
    fixGlobalFrequency()  # ticks per second are fixed at instantiation, which run() does later
    warm = fromSeconds(toLatency(args.warmup))
    simulator.run(max_ticks=warm)
    m5.stats.reset()
    # The stdlib simulator keeps a run's tick limit for the next run: give it the rest of the traffic.
    simulator.run(max_ticks=max(fromSeconds(toLatency(args.duration)) - warm, 1))
else:
    simulator.run()
run_seconds = time.perf_counter() - t0
print(f"exit: {simulator.get_last_exit_event_cause()} at tick {simulator.get_current_tick()}")
m5.stats.dump()
tracing.finish(bridges, args)

stats = read_stats(Path(m5.options.outdir) / "stats.txt")


def gem5_memory_row():
    """gem5's own memories: what the generator counts (read latency from its port)."""
    pre = "board.processor.cores.generator."
    own = {k[len(pre):]: v for k, v in stat(stats, "^" + pre.replace(".", r"\.")).items()}
    return {"memory": args.memory, "pattern": args.pattern, "rd_perc": args.rd_perc, "rate": args.rate,
            "read_gbps": own.get("readBW", 0.0) / 1e9, "read_latency_ns": own.get("avgReadLatency", 0.0) / 1e3,
            "reads": own.get("totalReads", 0.0), "writes": own.get("totalWrites", 0.0), "run_seconds": run_seconds}


def cxl_row():
    mem = stat(stats, r"memory\.bridge\.")
    every = {k.split("memory.bridge.", 1)[1]: v for k, v in mem.items()}
    short = {k: v for k, v in every.items() if "." not in k}  # the bridge's own stats
    reads = short.get("readReqs", 0.0)
    row = {
        "memory": args.memory, "pattern": args.pattern, "rd_perc": args.rd_perc, "rate": args.rate,
        "read_gbps": short.get("readBandwidth", 0.0) / 1e9, "write_gbps": short.get("writeBandwidth", 0.0) / 1e9,
        "read_latency_ns": short.get("avgReadLatency", 0.0) / 1000.0,
        **{f"read_latency_{q}_ns": short.get(f"read_latency_{q}_ns", 0.0) for q in ("p50", "p90", "p99", "p999")},
        "reads": reads,
        "writes": short.get("writeReqs", 0.0), "retries": short.get("retries", 0.0),
        "run_seconds": run_seconds,  # wall time of the simulation loop
    }
    for s in STAGES:
        row[f"{s}_ns"] = short.get(f"stageTicks::{s}", 0.0) / max(short.get("readsCompleted", 0.0), 1.0) / 1000.0
    # Per expander (root port): bandwidth each way, replayed flits, DevLoad.
    for i, e in enumerate(memory.bridge.root_ports):
        name = e.get_name()
        row[f"exp{i}_read_gbps"] = every.get(f"{name}.readBandwidth", 0.0) / 1e9
        row[f"exp{i}_write_gbps"] = every.get(f"{name}.writeBandwidth", 0.0) / 1e9
        row[f"exp{i}_replayed_flits"] = sum(every.get(f"{name}.link.{d}.replayed_flits", 0.0) for d in ("m2s", "s2m"))
    return row


row = cxl_row() if bridges else gem5_memory_row()
width = max(len(k) for k in row)
for k, v in row.items():
    print(f"{k:<{width}}  {v:.3f}" if isinstance(v, float) else f"{k:<{width}}  {v}")
write_csv(args.csv, row)
