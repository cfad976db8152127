"""X86 SE mode: CXL.io functions (CXLPciFunction) and their ECAM window (CXLEcam) behind the PC's PCI
host, probed by benchmarks/guest/cxlio_probe.c as a driver would: a root port (bus 0x10) above a
Type-3 device (bus 0x11) of a preset's CXL memory, whose CXLType3Expander gives the functions their
link, controller and media parameters. The ECAM window and a BAR window are mapped into the process
uncached. Prints the probe's lines, then the functions' and ECAM's statistics land in stats.txt.

    cc -O2 -static -o cxlio_probe benchmarks/guest/cxlio_probe.c
    $GEM5 gem5_configs/cxl_io_probe.py --binary cxlio_probe --memory cxl-asic

Needs a gem5 built for X86 with this repository as EXTRAS.
"""

import argparse
import sys

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.objects import (AddrRange, CXLEcam, CXLHostBridgeRegs, CXLPciFunction, Pc, Process, Root, SEWorkload,  # noqa: E402
                        SimpleMemory, SrcClockDomain, System, SystemXBar, VoltageDomain, X86AtomicSimpleCPU)

from simcxl.gem5.components import check_se_guest, host_bridge  # noqa: E402

ECAM_PA, FIRST_BUS, LAST_BUS = 0xB000_0000, 0x10, 0x11
CHBS_PA = 0xB800_0000
BAR_PA = 0x3_0000_0000          # above the process's memory and the CXL window
ECAM_VA, BAR_VA = 0x7000_0000_0000, 0x7100_0000_0000
MEMORY, WINDOW = 512 << 20, (1 << 32, 4 << 30)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--binary", required=True, help="benchmarks/guest/cxlio_probe.c built static")
parser.add_argument("--memory", default="cxl-asic", help="preset (or JSON) of the Type-3 device")
parser.add_argument("--capacity", default=str(4 << 30), help="device capacity in bytes (a multiple of 256 MiB)")
parser.add_argument("--firmware-commit", action="store_true",
                    help="commit one locked decoder over the window at the bridge and device first, as the FS board does")
args = parser.parse_args()
check_se_guest(parser, args.binary)

system = System(mem_mode="atomic", mem_ranges=[AddrRange(MEMORY)])
system.clk_domain = SrcClockDomain(clock="2GHz", voltage_domain=VoltageDomain())
system.membus = SystemXBar()
system.system_port = system.membus.cpu_side_ports
system.memory = SimpleMemory(range=system.mem_ranges[0], port=system.membus.mem_side_ports)

system.cpu = X86AtomicSimpleCPU(cpu_id=0)
system.cpu.icache_port = system.membus.cpu_side_ports
system.cpu.dcache_port = system.membus.cpu_side_ports
system.cpu.mmu.connectWalkerPorts(system.membus.cpu_side_ports, system.membus.cpu_side_ports)
system.cpu.createInterruptController()
system.cpu.interrupts[0].pio = system.membus.mem_side_ports
system.cpu.interrupts[0].int_requestor = system.membus.cpu_side_ports
system.cpu.interrupts[0].int_responder = system.membus.mem_side_ports

# The PC platform for its PCI host (configuration reads through CF8/CFC land there).
system.pc = Pc()
system.pc.attachIO(system.membus)  # the I/O APIC's interrupt port included

# The device's CXL.mem path: the functions read their parameters off its expander.
system.cxl = host_bridge(args.memory, window=AddrRange(WINDOW[0], size=WINDOW[1]))
system.cxl.port = system.membus.mem_side_ports
expander = system.cxl.root_ports[0]

host = system.pc.pci_host
system.root_port = CXLPciFunction(kind="root_port", expander=expander, decoders=0, port_number=0, host=host,
                                  pci_bus=FIRST_BUS, pci_dev=0, pci_func=0)
system.root_port.BAR0.size = "64KiB"
system.device = CXLPciFunction(kind="type3", expander=expander, capacity=f"{int(args.capacity)}B", host=host,
                               pci_bus=FIRST_BUS + 1, pci_dev=0, pci_func=0)
system.ecam = CXLEcam(base=ECAM_PA, first_bus=FIRST_BUS, last_bus=LAST_BUS,
                      functions=[system.root_port, system.device])
for obj in (system.root_port, system.device, system.ecam):
    obj.pio = system.membus.mem_side_ports
for obj in (system.root_port, system.device):
    obj.dma = system.membus.cpu_side_ports

if args.firmware_commit:
    system.chbs = CXLHostBridgeRegs(base=CHBS_PA, decoders=1, targets=1)
    system.chbs.pio = system.membus.mem_side_ports
    system.chbs.bridge, system.chbs.endpoints, system.chbs.firmware_commit = system.cxl, [system.device], True

ecam_bytes = (LAST_BUS - FIRST_BUS + 1) << 20
argv = [args.binary, hex(ECAM_VA), hex(FIRST_BUS), hex(BAR_VA), hex(BAR_PA),
        f"{FIRST_BUS + 1:02x}:00.0", f"{FIRST_BUS:02x}:00.0"]
p = Process(pid=100, cmd=argv, executable=args.binary)
system.cpu.workload = p
system.cpu.createThreads()
system.workload = SEWorkload.init_compatible(args.binary)

root = Root(full_system=False, system=system)
m5.instantiate()
p.map(ECAM_VA, ECAM_PA + (FIRST_BUS << 20), ecam_bytes, False)
p.map(BAR_VA, BAR_PA, 128 << 10, False)
ev = m5.simulate()
print(f"exit: {ev.getCause()} ({ev.getCode()})", file=sys.stderr)
m5.stats.dump()
sys.exit(0 if ev.getCode() == 0 else 1)
