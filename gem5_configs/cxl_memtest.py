"""Data integrity through the CXL path: gem5's MemTest testers (timing,
functional and uncacheable accesses) against a SimCXL host bridge and its
Type-3 expanders. MemTest panics on the first wrong byte; a clean run ends at
--max-loads. With --ways N the window interleaves N root ports (one expander
each) and the table gives each expander's share of the traffic.

    $GEM5 gem5_configs/cxl_memtest.py --memory cxl-asic --testers 4 --max-loads 20000 --csv out.csv
    $GEM5 gem5_configs/cxl_memtest.py --ways 3 --granularity 256 --csv out.csv
    $GEM5 gem5_configs/cxl_memtest.py --map ddr=ddr-local+cxl0=cxl-asic \
        --set cxl0.bridge.root_ports=2 --set cxl0.bridge.interleave_ways=2

--map builds the host address map the standalone engine runs on (presets
joined with +): the local DRAM window as gem5's DDR4 controller, each CXL
window as a host bridge with its expanders, each at its base in the map; the
testers take the windows in turn.

--committed 1,0@1024 gives the window CXL.io registers (an X86 build's PC for
their PCI host): the bridge's component registers and a Type-3 function per
root port, whose HDM decoders firmware commits over the whole window, here
interleaving root ports 1 then 0 at 1 KiB; the timing path then routes by
those decoders, not by the bridge's own interleave.
"""

import argparse
import json
from pathlib import Path

import simcxl_boot  # noqa: E402,F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.objects import (AddrRange, MemTest, Root, SrcClockDomain, System, SystemXBar,  # noqa: E402
                        VoltageDomain)

from simcxl.gem5.components import host_bridge, map_memories, read_stats, stat, write_csv  # noqa: E402
from simcxl.config.params import ParamError  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--memory", default="cxl-asic", help="preset name, preset file or topology file (cxl-type3)")
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
parser.add_argument("--map", default=None, help="an address map (e.g. ddr=ddr-local+cxl0=cxl-asic) instead of "
                    "--memory")
parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="a parameter of the map, e.g. cxl0.bridge.root_ports=2 (repeatable)")
parser.add_argument("--window-size", type=int, default=16 << 20, help="bytes of each window gem5 maps")
parser.add_argument("--committed", default=None, metavar="PORTS[@BYTES]",
                    help="route by HDM decoders firmware commits over root ports PORTS (e.g. 1,0) at BYTES")
args = parser.parse_args()


def _value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


try:
    overrides = dict((k.strip(), _value(v.strip())) for k, _, v in (o.partition("=") for o in args.overrides))
    windows = (map_memories(args.map, args.window_size, overrides) if args.map else
               [("cxl", "cxl-type3", host_bridge(args.memory, window=AddrRange(args.window_size), ways=args.ways,
                                                 granularity=args.granularity, watchdog_ns=args.watchdog_ns,
                                                 device_stops_after=args.device_stops_after))])
except ParamError as e:
    parser.error(str(e))

# MemTest issues a request every cycle with no bound of its own: the memory's
# refusals are what keep each tester under its 100 outstanding requests (it
# panics above) and the crossbar under its 512 routed packets. A bridge's
# tracker holds req_queue entries per root port, so a 4-way window would accept
# 512: keep each bridge at one port's 128 entries, as the testers allow.
for _, kind, obj in windows:
    if kind != "local-dram":
        obj.bridge_req_queue = max(1, int(obj.bridge_req_queue) // len(obj.root_ports))

# MemTest gives up after this many cycles without a response; at 2 GHz that is
# 50 ms, beyond the bridge's watchdog, whose report says where the request is.
PROGRESS_CHECK = 100_000_000
system = System(mem_mode=args.mem_mode)
system.clk_domain = SrcClockDomain(clock="2GHz", voltage_domain=VoltageDomain())
system.membus = SystemXBar()
system.system_port = system.membus.cpu_side_ports
for name, _, obj in windows:
    setattr(system, name, obj)
    obj.port = system.membus.mem_side_ports
bases = [int(obj.range.start) if hasattr(obj, "range") else int(obj.dram.range.start) for _, _, obj in windows]
# Tester i works in window i mod n, in its first 16 MiB.
system.testers = [MemTest(max_loads=args.max_loads, size=65536, base_addr_1=b + 0x100000 + i * 0x20000,
                          base_addr_2=b + 0x400000 + i * 0x20000, uncacheable_base_addr=b + 0x800000 + i * 0x20000,
                          progress_interval=args.max_loads, progress_check=PROGRESS_CHECK)
                  for i in range(args.testers) for b in [bases[i % len(bases)]]]
for t in system.testers:
    t.port = system.membus.cpu_side_ports

if args.committed:
    if args.map:
        parser.error("--committed takes one window (--memory), not --map")
    from m5.objects import CXLHostBridgeRegs, CXLPciFunction, Pc
    from simcxl.gem5.board import _targets
    ports, _, gran = args.committed.partition("@")
    cxl = windows[0][2]
    n = len(cxl.root_ports)
    system.pc = Pc()
    system.pc.attachIO(system.membus)
    system.cxl_regs = CXLHostBridgeRegs(base=0xFE000000, decoders=1, targets=_targets(n))
    # Each device holds the whole window, whichever ways firmware chooses.
    system.cxl_devices = [CXLPciFunction(kind="type3", expander=e, capacity=f"{int(cxl.range.size())}B",
                                         host=system.pc.pci_host, pci_bus=1, pci_dev=j, pci_func=0)
                          for j, e in enumerate(cxl.root_ports)]
    for obj in [system.cxl_regs, *system.cxl_devices]:
        obj.pio = system.membus.mem_side_ports
    for d in system.cxl_devices:
        d.dma = system.membus.cpu_side_ports
    r = system.cxl_regs
    r.bridge, r.endpoints, r.firmware_commit = cxl, system.cxl_devices, True
    r.firmware_targets = [int(x) for x in ports.split(",")]
    r.firmware_granularity = int(gran or 0)

root = Root(full_system=False, system=system)
m5.instantiate()
event = m5.simulate()
print(f"exit: {event.getCause()} at tick {m5.curTick()}")
m5.stats.dump()
stats = read_stats(Path(m5.options.outdir) / "stats.txt")
testers = stat(stats, r"^system\.testers\d*\.num(Reads|Writes)$")
# Every load MemTest completes is compared with its reference copy of memory.
checked = sum(v for k, v in testers.items() if k.endswith("numReads"))
row = {"memory": args.map or args.memory, "testers": args.testers, "mem_mode": args.mem_mode,
       "cause": event.getCause(), "loads_checked": checked,
       "stores": sum(v for k, v in testers.items() if k.endswith("numWrites"))}
for name, kind, obj in windows:
    own = {k.split(f"{name}.", 1)[1]: v for k, v in stat(stats, rf"system\.{name}\.").items()}
    # One memory: the columns as before; a map: each window's prefixed by its name.
    pre = "" if not args.map else f"{name}_"
    if kind == "local-dram":  # gem5's MemCtrl counts requests it accepted
        row[f"{pre}reads"], row[f"{pre}writes"] = own.get("readReqs", 0.0), own.get("writeReqs", 0.0)
        continue
    mem = {k: v for k, v in own.items() if "." not in k}  # the bridge's own stats
    row.update({f"{pre}reads": mem.get("readReqs", 0.0), f"{pre}writes": mem.get("writeReqs", 0.0),
                f"{pre}read_latency_ns": mem.get("avgReadLatency", 0.0) / 1000.0, f"{pre}ways": len(obj.root_ports),
                f"{pre}unrouted_reads": mem.get("unrouted_reads", 0.0)})
    # Each expander's share: requests the HDM decoder routed to its root port.
    for i, e in enumerate(obj.root_ports):
        for key in ("readReqs", "writeReqs"):
            row[f"{pre}exp{i}_{key}"] = own.get(f"{e.get_name()}.{key}", 0.0)
        # The core's link stats, named as standalone (docs/reference/stats.md), under the expander's "link".
        row[f"{pre}exp{i}_s2m_flits"] = own.get(f"{e.get_name()}.link.s2m.flits", 0.0)
for k, v in row.items():
    print(f"{k:16s} {v}")
write_csv(args.csv, row)
