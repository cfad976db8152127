"""X86 SE mode: host cores post remote atomic operations to a CXL-NIC, whose
device cache sits on the memory bus behind a CXL.cache link, coherent with the
cores' caches; each core runs one thread of benchmarks/guest/nic_rao.c.

    cc -O2 -static -o nic_rao benchmarks/guest/nic_rao.c
    $GEM5 gem5_configs/cxl_nic_se.py --binary nic_rao --setup setup.json \\
        --threads 4 --ops 400 --kernel central --op add --host-ops 100

The setup file (simcxl.gem5.nic.setup, computed outside gem5 from an
accelerator preset and NIC parameters) holds the CXLNic's nic_* parameters,
the device cache's geometry and the link's latencies. The NIC's engine is
the SimCXL core's (devices/cxl_nic.cc); its device cache is a gem5 classic
cache, and the link (devices/cxl_cache_link.hh) passes snoops through with
the preset's latencies. Prints one JSON object: per thread the mean latency from posting an
operation to seeing its completion, thread 0's check of the results, and the
NIC's counters.
"""

import argparse
import json
import re
import sys
from pathlib import Path

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.util.convert import toFrequency  # noqa: E402
from m5.objects import (AddrRange, Cache, CoherentXBar, CXLCacheLink, CXLNic, CXLPcieNic, DDR4_2400_8x8, MemCtrl, Process, Root,  # noqa: E402
                        SEWorkload, SrcClockDomain, System, SystemXBar, VoltageDomain, X86O3CPU,
                        X86TimingSimpleCPU)

from simcxl.gem5.components import check_se_guest, read_stats, total  # noqa: E402

CPUS = {"timing": X86TimingSimpleCPU, "o3": X86O3CPU}
MEMORY = 1 << 30
REGION_PA = 512 << 20  # the shared region: rings, operand words, results, sync words
REGION_VA = 0x200000000
MMIO_PA = 0xC0000000  # the PCIe NIC's doorbell registers
MMIO_VA = 0x300000000
PAGE = 4096

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--binary", required=True, help="benchmarks/guest/nic_rao.c, statically linked x86-64")
parser.add_argument("--setup", required=True, help="JSON from simcxl.gem5.nic.setup")
parser.add_argument("--threads", type=int, default=1, help="host cores, one ring each (1 to 16)")
parser.add_argument("--ops", type=int, default=200, help="NIC operations per thread (each adds 1 to a word)")
parser.add_argument("--kernel", choices=["rand", "central", "stride1"], default="rand")
parser.add_argument("--op", choices=["add", "cas"], default="add")
parser.add_argument("--host-ops", type=int, default=0, help="LOCK XADDs per thread on the same words, interleaved")
parser.add_argument("--words", type=int, default=4096, help="operand words (8 B each)")
parser.add_argument("--cpu", choices=sorted(CPUS), default="timing")
parser.add_argument("--mechanism", choices=["cxl-nic", "pcie-nic"], default="cxl-nic",
                    help="pcie-nic: the PCIe baseline (MMIO doorbells, four DMAs per operation)")
parser.add_argument("--max-ms", type=float, default=50.0, help="simulated time limit (ms)")
args = parser.parse_args()

check_se_guest(parser, args.binary)
for flag, v, lo, hi in (("--threads", args.threads, 1, 16), ("--ops", args.ops, 1, 1 << 20),
                        ("--host-ops", args.host_ops, 0, 1 << 20), ("--words", args.words, 1, 1 << 22)):
    if not lo <= v <= hi:
        parser.error(f"{flag} = {v} is out of range; allowed: {lo} to {hi}")
try:
    setup = json.loads(Path(args.setup).read_text())
except (OSError, ValueError) as e:
    parser.error(f"--setup {args.setup}: not a readable JSON file ({e}); make one with simcxl.gem5.nic.setup")
missing = [k for k in ("nic", "cache", "link", "host") + (("pcie",) if args.mechanism == "pcie-nic" else ())
           if k not in setup]
if missing:
    parser.error(f"--setup {args.setup} has no {', '.join(missing)}; make it with simcxl.gem5.nic.setup")
nic_params, cache, link, host = setup["nic"], setup["cache"], setup["link"], setup["host"]
entries, per_desc, per_cq = (nic_params["nic_ring_entries"], nic_params["nic_descriptors_per_line"],
                             nic_params["nic_completions_per_line"])
increments = args.threads * (args.ops + args.host_ops)
if args.kernel == "central" and increments > 1 << 20:
    parser.error(f"--threads x (--ops + --host-ops) = {increments} is out of range for kernel central; "
                 "allowed: up to 2^20 (the guest's check)")


def up(n):
    return (n + PAGE - 1) // PAGE * PAGE


span = (entries // per_desc + entries // per_cq + 1) * 64
array_off = up(args.threads * span)
results_off = array_off + up(args.words * 8)
sync_off = results_off + up(increments * 8)
region = sync_off + PAGE

system = System(mem_mode="timing", mem_ranges=[AddrRange(MEMORY)])
system.voltage_domain = VoltageDomain()
system.clk_domain = SrcClockDomain(clock=host["clock"], voltage_domain=system.voltage_domain)
system.membus = SystemXBar()
system.system_port = system.membus.cpu_side_ports
system.mem_ctrl = MemCtrl(dram=DDR4_2400_8x8(range=system.mem_ranges[0]))
system.mem_ctrl.port = system.membus.mem_side_ports


def host_cache(size, assoc, cycles, mshrs):
    return Cache(size=size, assoc=assoc, tag_latency=cycles, data_latency=cycles, response_latency=cycles,
                 mshrs=mshrs, tgts_per_mshr=20)


system.cpu = [CPUS[args.cpu](cpu_id=i) for i in range(args.threads)]
for cpu in system.cpu:
    cpu.icache = host_cache("32KiB", 8, host["l1_cycles"], 4)
    cpu.dcache = host_cache(host["l1d"], 8, host["l1_cycles"], 16)
    cpu.l2 = host_cache(host["l2"], 16, host["l2_cycles"], 32)
    cpu.l2bus = CoherentXBar(frontend_latency=0, forward_latency=0, response_latency=0, snoop_response_latency=0,
                             width=64, point_of_coherency=False)
    cpu.icache_port = cpu.icache.cpu_side
    cpu.dcache_port = cpu.dcache.cpu_side
    cpu.icache.mem_side = cpu.l2bus.cpu_side_ports
    cpu.dcache.mem_side = cpu.l2bus.cpu_side_ports
    cpu.mmu.connectWalkerPorts(cpu.l2bus.cpu_side_ports, cpu.l2bus.cpu_side_ports)
    cpu.l2.cpu_side = cpu.l2bus.mem_side_ports
    # The host's uncore (LLC and home agent) between a core's L2 and the bus.
    cpu.uncore = CXLCacheLink(device_cache=cpu.l2, request_latency=f"{host['uncore_ns']}ns", response_latency="0ns",
                              snoop_latency="0ns", snoop_data_latency="0ns", snoop_arrival_latency="0ns")
    cpu.l2.mem_side = cpu.uncore.cpu_side_port
    cpu.uncore.mem_side_port = system.membus.cpu_side_ports
    cpu.createInterruptController()
    cpu.interrupts[0].pio = system.membus.mem_side_ports
    cpu.interrupts[0].int_requestor = system.membus.cpu_side_ports
    cpu.interrupts[0].int_responder = system.membus.mem_side_ports

# The NIC side runs at 1 GHz, so a latency in cycles is one in ns.
system.nic_clk = SrcClockDomain(clock="1GHz", voltage_domain=system.voltage_domain)
if args.mechanism == "cxl-nic":
    system.nic_cache = Cache(size=f"{cache['bytes']}B", assoc=cache["assoc"], tag_latency=cache["latency_cycles"],
                             data_latency=cache["latency_cycles"], response_latency=1, mshrs=cache["mshrs"],
                             tgts_per_mshr=16, clk_domain=system.nic_clk)
    system.cxl_link = CXLCacheLink(device_cache=system.nic_cache, request_latency=f"{link['request_ns']}ns",
                                  response_latency=f"{link['response_ns']}ns", snoop_latency=f"{link['snoop_ns']}ns",
                                  snoop_data_latency=f"{link['snoop_data_ns']}ns",
                                  snoop_arrival_latency=f"{link['snoop_arrival_ns']}ns", clk_domain=system.nic_clk)
    system.nic = CXLNic(rings=args.threads, ring_base=REGION_PA, array_base=REGION_PA + array_off,
                        array_words=args.words, clk_domain=system.nic_clk, **nic_params)
    system.nic.port = system.nic_cache.cpu_side
    system.nic_cache.mem_side = system.cxl_link.cpu_side_port
    system.cxl_link.mem_side_port = system.membus.cpu_side_ports
else:
    pcie = setup["pcie"]
    system.pcie_link = CXLCacheLink(request_latency=f"{pcie['request_ns']}ns",
                                   response_latency=f"{pcie['response_ns']}ns", snoop_latency="0ns",
                                   snoop_data_latency="0ns", snoop_arrival_latency="0ns", clk_domain=system.nic_clk)
    system.nic = CXLPcieNic(pio_addr=MMIO_PA, pio_latency=f"{pcie['mmio_ns']}ns",
                            engine_latency=f"{pcie['engine_ns']}ns", engines=pcie["engines"], rings=args.threads,
                            ring_base=REGION_PA, array_base=REGION_PA + array_off, array_words=args.words,
                            ring_entries=entries, descriptors_per_line=per_desc, completions_per_line=per_cq,
                            clk_domain=system.nic_clk)
    # gem5's coherent DMA: an IO cache at the root port takes ownership of what a DMA writes, so the
    # cores' copies are invalidated (a bare DMA write would leave them stale).
    system.io_cache = Cache(size="1KiB", assoc=8, tag_latency=1, data_latency=1, response_latency=1,
                            mshrs=max(20, 4 * pcie["engines"]), tgts_per_mshr=12, clk_domain=system.nic_clk)
    system.nic.pio = system.membus.mem_side_ports
    system.nic.dma = system.pcie_link.cpu_side_port
    system.pcie_link.mem_side_port = system.io_cache.cpu_side
    system.io_cache.mem_side = system.membus.cpu_side_ports

outdir = Path(m5.options.outdir)
processes = []
for t, cpu in enumerate(system.cpu):
    argv = [args.binary, "-t", str(t), "-T", str(args.threads), "-n", str(args.ops), "-k", args.kernel,
            "-o", args.op, "-H", str(args.host_ops), "-w", str(args.words), "-e", str(entries),
            "-d", str(per_desc), "-c", str(per_cq), "-b", str(nic_params["nic_post_batch"]),
            "-V", hex(REGION_VA), "-A", str(array_off), "-S", str(results_off), "-Y", str(sync_off),
            "-G", repr(toFrequency(host["clock"]) / 1e9)] + \
        (["-P", hex(MMIO_VA)] if args.mechanism == "pcie-nic" else [])
    p = Process(pid=100 + t, cmd=argv, executable=args.binary, output=str(outdir / f"guest{t}.out"))
    cpu.workload = p
    cpu.createThreads()
    processes.append(p)
system.workload = SEWorkload.init_compatible(args.binary)

root = Root(full_system=False, system=system)
m5.instantiate()
for p in processes:
    p.map(REGION_VA, REGION_PA, region, True)
    if args.mechanism == "pcie-nic":
        p.map(MMIO_VA, MMIO_PA, PAGE, False)
event = m5.simulate(int(args.max_ms * 1e9))
cause = event.getCause()
m5.stats.dump()

stats = read_stats(outdir / "stats.txt")
names = (("ops", "polls", "doorbellChanges", "descriptors", "ringErrors", "maxInFlight")
         if args.mechanism == "cxl-nic" else ("ops", "doorbells", "dmas", "ringErrors", "maxInFlight"))
counters = {k: total(stats, f"system.nic.{k}") for k in names}
threads, check = [], None
for t in range(args.threads):
    text = (outdir / f"guest{t}.out").read_text() if (outdir / f"guest{t}.out").exists() else ""
    m = re.search(r"thread=(\d+) ops=(\d+) latency_ns=([0-9.]+) elapsed_ns=([0-9.]+)", text)
    if m:
        threads.append({"thread": int(m.group(1)), "ops": int(m.group(2)), "latency_ns": float(m.group(3)),
                        "elapsed_ns": float(m.group(4))})
    c = re.search(r"check increments=(\d+) sum=(\d+) distinct=(\d+) max=(\d+) ringwait=(\d+)", text)
    if c:
        check = dict(zip(("increments", "sum", "distinct", "max", "ringwait"), map(int, c.groups())))
if len(threads) != args.threads or check is None:
    print(f"the guest did not finish ({cause} at {m5.curTick() / 1e6:.1f} us); NIC counters {counters}",
          file=sys.stderr)
    sys.exit(1)
print(json.dumps({"threads": threads, "check": check, "nic": counters, "sim_seconds": m5.curTick() / 1e12,
                  "kernel": args.kernel, "op": args.op, "cpu": args.cpu, "mechanism": args.mechanism}))
