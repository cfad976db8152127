"""Checkpoint and restore through a SimCXL host bridge and expander (NULL ISA, PyTrafficGen).

A save run drives phase 1 (random reads and writes), checkpoints the drained
system, resets the stats and drives phase 2. A restore run starts from that
checkpoint and drives the same phase 2. The phase-2 stats of both runs must be
identical: the bridge's and each expander's timing state (open rows, refresh phase,
link flit packing, credits still returning) travels in the checkpoint with
the data.

    $GEM5 -d m5save gem5_configs/cxl_checkpoint.py --save ckpt --csv save.csv
    $GEM5 -d m5rest gem5_configs/cxl_checkpoint.py --restore ckpt --csv restore.csv
"""

import argparse
from pathlib import Path

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
import _m5.core  # noqa: E402
from m5.objects import (AddrRange, PyTrafficGen, Root, SrcClockDomain, System, SystemXBar,  # noqa: E402
                        VoltageDomain)
from m5.ticks import fromSeconds  # noqa: E402
from m5.util.convert import toLatency  # noqa: E402

from simcxl.gem5.components import host_bridge, read_stats, stat, write_csv  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
mode = parser.add_mutually_exclusive_group(required=True)
mode.add_argument("--save", metavar="DIR", help="run phase 1, checkpoint into DIR, then run phase 2")
mode.add_argument("--restore", metavar="DIR", help="restore from DIR and run phase 2")
parser.add_argument("--memory", default="cxl-asic", help="preset name, preset file or topology file (cxl-type3)")
parser.add_argument("--phase1", default="20us", help="traffic before the checkpoint")
parser.add_argument("--phase2", default="20us", help="traffic after it")
parser.add_argument("--rd-perc", type=int, default=70)
parser.add_argument("--period", default="2ns", help="mean time between requests")
parser.add_argument("--ways", type=int, default=None, help="HDM interleave ways = root ports = expanders")
parser.add_argument("--csv", default=None)
args = parser.parse_args()

SIZE = 1 << 28
system = System(mem_mode="timing", mem_ranges=[AddrRange(SIZE)])
system.clk_domain = SrcClockDomain(clock="1GHz", voltage_domain=VoltageDomain())
system.membus = SystemXBar()
system.system_port = system.membus.cpu_side_ports
system.cxl = host_bridge(args.memory, window=system.mem_ranges[0], ways=args.ways)
system.cxl.port = system.membus.mem_side_ports
system.tgen = PyTrafficGen()
system.tgen.port = system.membus.cpu_side_ports
root = Root(full_system=False, system=system)


def phase(duration: str, seed: int) -> None:
    """Random 64 B requests for `duration`; the generator's draws come from
    gem5's global generator, which checkpoints do not keep, so each phase seeds it."""
    _m5.core.seedRandom(seed)
    ticks = fromSeconds(toLatency(duration))
    period = fromSeconds(toLatency(args.period))
    tg = system.tgen
    tg.start(iter([tg.createRandom(ticks, 0, SIZE - 1, 64, period // 2, period * 3 // 2, args.rd_perc, 0),
                   tg.createExit(0)]))
    event = m5.simulate()
    print(f"{duration} of traffic: {event.getCause()} at tick {m5.curTick()}")


if args.save:
    m5.instantiate()
    phase(args.phase1, 1)
    m5.checkpoint(args.save)
    print(f"checkpoint at tick {m5.curTick()} in {args.save}")
    m5.stats.reset()
else:
    m5.instantiate(args.restore)
    print(f"restored at tick {m5.curTick()} from {args.restore}")
start = m5.curTick()
phase(args.phase2, 2)
m5.stats.dump()

stats = read_stats(Path(m5.options.outdir) / "stats.txt")
row = {"start_tick": start, "end_tick": m5.curTick()}
for k, v in stat(stats, r"^system\.(cxl|tgen)\.").items():
    row[k.split("system.", 1)[1]] = v
print(f"reads {row.get('cxl.readReqs', 0):.0f}  writes {row.get('cxl.writeReqs', 0):.0f}  "
      f"mean read latency {row.get('cxl.avgReadLatency', 0) / 1000:.2f} ns")
write_csv(args.csv, row)
