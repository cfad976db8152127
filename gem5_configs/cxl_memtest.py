"""Data integrity through the CXL path: gem5's MemTest testers (timing,
functional and uncacheable accesses) against a SimCXL host bridge and its
Type-3 expanders. MemTest panics on the first wrong byte; a clean run ends at
--max-loads. With --ways N the window interleaves N root ports (one expander
each) and the table gives each expander's share of the traffic.

    $GEM5 gem5_configs/cxl_memtest.py --memory cxl-asic --testers 4 --max-loads 20000 --csv out.csv
    $GEM5 gem5_configs/cxl_memtest.py --ways 3 --granularity 256 --csv out.csv
"""

import argparse
from pathlib import Path

import simcxl_boot  # noqa: E402,F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.objects import (AddrRange, MemTest, Root, SrcClockDomain, System, SystemXBar,  # noqa: E402
                        VoltageDomain)

from simcxl.gem5 import host_bridge, read_stats, stat, write_csv  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--memory", default="cxl-asic", help="preset name or preset file (cxl-type3)")
parser.add_argument("--testers", type=int, default=4)
parser.add_argument("--max-loads", type=int, default=20000)
parser.add_argument("--mem-mode", choices=["timing", "atomic"], default="timing",
                    help="timing goes through the CXL timing path; atomic uses the expander's fixed latency")
parser.add_argument("--ways", type=int, default=None, help="HDM interleave ways = root ports = expanders")
parser.add_argument("--granularity", type=int, default=None, help="HDM interleave granularity (bytes)")
parser.add_argument("--csv", default=None)
parser.add_argument("--watchdog-ns", type=float, default=None,
                    help="the host bridge's progress watchdog window (ns; 0: off; default 10 ms)")
parser.add_argument("--device-stops-after", type=int, default=0,
                    help="fault injection: every expander stops answering after this many responses")
args = parser.parse_args()

# MemTest gives up after this many cycles without a response; at 2 GHz that is
# 50 ms, beyond the bridge's watchdog, whose report says where the request is.
PROGRESS_CHECK = 100_000_000
system = System(mem_mode=args.mem_mode)
system.clk_domain = SrcClockDomain(clock="2GHz", voltage_domain=VoltageDomain())
system.membus = SystemXBar()
system.system_port = system.membus.cpu_side_ports
system.cxl = host_bridge(args.memory, window=AddrRange("16MiB"), ways=args.ways, granularity=args.granularity,
                         watchdog_ns=args.watchdog_ns, device_stops_after=args.device_stops_after)
system.cxl.port = system.membus.mem_side_ports
system.testers = [MemTest(max_loads=args.max_loads, size=65536, base_addr_1=0x100000 + i * 0x20000,
                          base_addr_2=0x400000 + i * 0x20000, uncacheable_base_addr=0x800000 + i * 0x20000,
                          progress_interval=args.max_loads, progress_check=PROGRESS_CHECK)
                  for i in range(args.testers)]
for t in system.testers:
    t.port = system.membus.cpu_side_ports

root = Root(full_system=False, system=system)
m5.instantiate()
event = m5.simulate()
print(f"exit: {event.getCause()} at tick {m5.curTick()}")
m5.stats.dump()
stats = read_stats(Path(m5.options.outdir) / "stats.txt")
cxl = {k.split("cxl.", 1)[1]: v for k, v in stat(stats, r"system\.cxl\.").items()}
mem = {k: v for k, v in cxl.items() if "." not in k}  # the bridge's own stats
testers = stat(stats, r"^system\.testers\d*\.num(Reads|Writes)$")
# Every load MemTest completes is compared with its reference copy of memory.
checked = sum(v for k, v in testers.items() if k.endswith("numReads"))
row = {"memory": args.memory, "testers": args.testers, "mem_mode": args.mem_mode, "cause": event.getCause(),
       "loads_checked": checked, "stores": sum(v for k, v in testers.items() if k.endswith("numWrites")),
       "reads": mem.get("readReqs", 0.0), "writes": mem.get("writeReqs", 0.0),
       "read_latency_ns": mem.get("avgReadLatency", 0.0) / 1000.0,
       "ways": len(system.cxl.expanders)}
# Each expander's share: requests the HDM decoder routed to its root port.
for i, e in enumerate(system.cxl.expanders):
    name = e.get_name()
    for key in ("readReqs", "writeReqs", "s2mFlits"):
        row[f"exp{i}_{key}"] = cxl.get(f"{name}.{key}", 0.0)
for k, v in row.items():
    print(f"{k:16s} {v}")
write_csv(args.csv, row)
