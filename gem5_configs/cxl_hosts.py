"""Several hosts in one gem5 simulation sharing a CXL fabric (NULL ISA): each
host of a topology file is a gem5 System of its own (its clock, memory bus
and address map) with a traffic generator, and its CXL window is a
CXLHostBridge whose root ports lead, through the core's links, to the
switches and Type-3 devices the topology shares between hosts (a
multi-logical device gives each host a logical device of its own).

    $GEM5 gem5_configs/cxl_hosts.py --system examples/topologies/pool-4hosts-mld.toml \\
        --pattern random --rate 64GiB/s --duration 200us --csv out.csv

Prints one row per host (bandwidth each way, mean read latency and its
stages, retries) and writes them as CSV.
"""

import argparse
import time
from pathlib import Path

import simcxl_boot  # noqa: E402,F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.objects import PyTrafficGen, Root, SrcClockDomain, System, SystemXBar, VoltageDomain  # noqa: E402
from m5.ticks import fromSeconds  # noqa: E402
from m5.util.convert import toLatency, toMemoryBandwidth, toMemorySize  # noqa: E402

from simcxl.gem5 import tracing  # noqa: E402
from simcxl.gem5.components import read_stats, stat, write_csv  # noqa: E402
from simcxl.gem5.fabric import host_windows  # noqa: E402

STAGES = ("host_port", "link_down", "switch", "device", "media_queue", "media_service", "link_up")
BLOCK = 64

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--system", required=True, help="topology file (hosts, host bridges, switches, Type-3 devices)")
parser.add_argument("--pattern", choices=["linear", "random"], default="random")
parser.add_argument("--rd-perc", type=int, default=100, help="read percentage, 0 to 100")
parser.add_argument("--rate", default="64GiB/s", help="offered load of each host's generator")
parser.add_argument("--duration", default="200us")
parser.add_argument("--size", default="1GiB", help="bytes of each host's window the generator spans")
parser.add_argument("--csv", default=None, help="write the table here")
tracing.add_options(parser)
args = parser.parse_args()
if not 0 <= args.rd_perc <= 100:
    parser.error(f"--rd-perc = {args.rd_perc} is out of range; allowed: 0 to 100")

windows = host_windows(args.system, toMemorySize(args.size))
root = Root(full_system=False)
for w in windows:
    s = System(mem_mode="timing", mem_ranges=[w.bridge.range])
    s.clk_domain = SrcClockDomain(clock="1GHz", voltage_domain=VoltageDomain())
    s.membus = SystemXBar()
    s.system_port = s.membus.cpu_side_ports
    s.tgen = PyTrafficGen()
    s.tgen.port = s.membus.cpu_side_ports
    s.cxl = w.bridge
    s.cxl.port = s.membus.mem_side_ports
    setattr(root, w.host, s)
tracing.enable([w.bridge for w in windows], args)  # runs 0, 1, ... of the trace: the hosts in file order
m5.instantiate()

duration = fromSeconds(toLatency(args.duration))
period = fromSeconds(BLOCK / toMemoryBandwidth(args.rate))


def traffic(tgen, w):
    # As the stdlib's generator cores: the traffic, then an exit (the first host to finish ends the run;
    # every host starts at once with the same duration).
    make = tgen.createLinear if args.pattern == "linear" else tgen.createRandom
    yield make(duration, w.base, w.base + w.size - 1, BLOCK, period, period, args.rd_perc, 0)
    yield tgen.createExit(0)


for w in windows:
    tgen = getattr(root, w.host).tgen
    tgen.start(traffic(tgen, w))
t0 = time.perf_counter()
event = m5.simulate()
run_seconds = time.perf_counter() - t0
print(f"exit: {event.getCause()} at tick {m5.curTick()}")
m5.stats.dump()
tracing.finish([w.bridge for w in windows], args)

stats = read_stats(Path(m5.options.outdir) / "stats.txt")
rows = []
for w in windows:
    pre = f"{w.host}.cxl."
    own = {k[len(pre):]: v for k, v in stat(stats, "^" + pre.replace(".", r"\.")).items()}
    reads = own.get("readReqs", 0.0)
    row = {"host": w.host, "host_index": w.index, "pattern": args.pattern, "rd_perc": args.rd_perc,
           "rate": args.rate, "read_gbps": own.get("readBandwidth", 0.0) / 1e9,
           "write_gbps": own.get("writeBandwidth", 0.0) / 1e9, "read_latency_ns": own.get("avgReadLatency", 0.0) / 1e3,
           **{f"read_latency_{q}_ns": own.get(f"read_latency_{q}_ns", 0.0) for q in ("p50", "p90", "p99", "p999")},
           "reads": reads, "writes": own.get("writeReqs", 0.0), "retries": own.get("retries", 0.0),
           "run_seconds": run_seconds}
    for s in STAGES:
        row[f"{s}_ns"] = own.get(f"stageTicks::{s}", 0.0) / max(own.get("readsCompleted", 0.0), 1.0) / 1e3
    rows.append(row)
    print("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
write_csv(args.csv, rows)
