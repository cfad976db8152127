"""X86 full system with CXL memory as a CPU-less NUMA node: Linux boots on
simcxl.gem5.board's board (local DDR4 with the CPUs as node 0, one CXL window
per --cxl as nodes 1, 2, ..., described by SRAT, SLIT, HMAT and CEDT) and runs
one command from the guest's initramfs, then exits through an m5 op.

Checkpoints: --checkpoint DIR boots (on KVM or atomic cores), saves a
checkpoint at the guest's shell, before its command, and stops; --restore DIR
resumes it on any core type (timing or O3 for measurements) and runs --run
there, handed to the guest through gem5's readfile. The caches are shaped
like the local preset's host (simcxl.gem5.board.host_caches).

    $GEM5 gem5_configs/cxl_numa_boot.py --kernel vmlinux-initramfs --numa numa.json \\
        --cxl cxl-asic:1GiB --cpu kvm --run "numactl -H"

--kernel is the guest kernel with its initramfs built in
(benchmarks/guest/build_guest.py prints it as vmlinux_initramfs=); --numa is
the NUMA description `simcxl fs` computes with the standalone engine
(simcxl.gem5.numa). KVM cores (--cpu kvm) fast-forward the boot and run with
usePerf=False (no hardware counters on these hosts); where /dev/kvm is missing
or does not run guest kernel code natively (simcxl.gem5.kvm's probe) the boot
falls back to atomic cores and says so (a "fallback:" line; --force-kvm
overrides). The console is written to
board.pc.com_1.device in the output directory; the run ends at the guest's m5
exit, at --max-seconds of simulated time, or when the console matches --until.
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

import simcxl_boot  # noqa: F401  (the repository's simcxl, without the engine)

import m5  # noqa: E402
from m5.objects import Root  # noqa: E402
from m5.util.convert import toMemorySize  # noqa: E402
from gem5.components.memory.single_channel import SingleChannelDDR4_2400  # noqa: E402
from gem5.components.processors.cpu_types import CPUTypes  # noqa: E402
from gem5.components.processors.simple_switchable_processor import SimpleSwitchableProcessor  # noqa: E402
from gem5.isas import ISA  # noqa: E402
from gem5.resources.resource import DiskImageResource, KernelResource  # noqa: E402

from simcxl.gem5.components import check_fs_inputs  # noqa: E402
from simcxl.gem5.kvm import probe as probe_kvm  # noqa: E402
from simcxl.gem5.board import host_caches, numa_board, parse_cxl, shape_o3, shape_tlbs, window_layout  # noqa: E402
from simcxl.config.presets import load as load_preset  # noqa: E402
from simcxl.gem5.numa import Numa  # noqa: E402
from simcxl.config.params import ParamError  # noqa: E402

CLOCK_KHZ = 3000000  # the board's 3 GHz
CPUS = {"kvm": CPUTypes.KVM, "atomic": CPUTypes.ATOMIC, "timing": CPUTypes.TIMING, "o3": CPUTypes.O3}

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--kernel", required=True, help="x86-64 vmlinux with the initramfs built in")
parser.add_argument("--numa", required=True, help="NUMA description (JSON, from `simcxl fs` / simcxl.gem5.numa)")
parser.add_argument("--local-size", default="1GiB", help="local DDR4 (node 0): up to 3 GiB")
parser.add_argument("--cxl", action="append", default=None,
                    help="PRESET:SIZE[@BASE] of one CXL window (a node each; repeat for more; default cxl-asic:1GiB, "
                         "placed from 4 GiB up)")
parser.add_argument("--cpu", choices=sorted(CPUS), default="kvm")
parser.add_argument("--cores", type=int, default=1)
parser.add_argument("--run", default="numactl -H", help="the guest's command (simcxl.run)")
parser.add_argument("--until", default=r"Kernel panic", help="also stop when the console matches this")
parser.add_argument("--max-seconds", type=float, default=5.0, help="simulated seconds at most")
parser.add_argument("--checkpoint", default=None, help="boot, save a checkpoint here at the shell, stop")
parser.add_argument("--restore", default=None, help="resume the checkpoint in this folder and run --run")
parser.add_argument("--warm", choices=["none", "atomic"], default="none",
                    help="with --restore: run on atomic cores and switch to --cpu (timing or o3) only between the "
                         "guest's work_begin and work_end marks (chase -m): GiB working sets in minutes")
parser.add_argument("--force-kvm", action="store_true",
                    help="with --cpu kvm: use KVM cores even where the probe finds them slower than atomic ones")
parser.add_argument("--cxl-io", action="store_true",
                    help="Linux's CXL drivers find each window's host bridge, root ports and memory devices (ACPI "
                         "DSDT/MCFG/CEDT, ECAM, PCI functions whose registers are the core's); PCI is then "
                         "enumerated through ACPI (no pci=noacpi)")
parser.add_argument("--cxl-regions", action="store_true",
                    help="with --cxl-io: firmware maps no window (CEDT only, no decoder committed); Linux commits "
                         "the decoders when the guest creates a region (simcxl.gem5.fs.region_run: `cxl "
                         "create-region`'s steps) and onlines the memory as a node of its own")
parser.add_argument("--local-preset", default=None,
                    help="preset whose host shapes the caches (default: the NUMA description's node 0)")
args = parser.parse_args()

kernel = check_fs_inputs(parser, args.kernel, args.local_size, "--local-size", "the vmlinux_initramfs build_guest.py prints")
if not 1 <= args.cores <= 64:
    parser.error(f"--cores {args.cores} is out of range; allowed: 1 to 64")
if args.cxl_regions and not args.cxl_io:
    parser.error("--cxl-regions needs --cxl-io (Linux creates regions on devices its CXL drivers found)")
if args.checkpoint and args.restore:
    parser.error("--checkpoint and --restore are not allowed together; allowed: one of them")
if args.restore and not (Path(args.restore) / "m5.cpt").is_file():
    parser.error(f"--restore {args.restore}: no gem5 checkpoint there (no m5.cpt)")
if args.warm == "atomic" and not (args.restore and args.cpu in ("timing", "o3")):
    parser.error("--warm atomic is for restored runs timed on detailed cores; allowed with --restore and "
                 "--cpu timing or o3")
if args.cpu == "kvm":
    # KVM cores only pay where the host runs guest kernel code natively; elsewhere
    # (no /dev/kvm, or one that emulates ring 0: simcxl.gem5.kvm) boot on atomic cores.
    kvm = probe_kvm()
    print(f"kvm probe: {kvm.reason}", flush=True)
    if not kvm.usable and not args.force_kvm:
        print(f"fallback: --cpu kvm -> atomic: {kvm.reason}", flush=True)
        print(f"warn: booting on atomic cores, not KVM: {kvm.reason}", file=sys.stderr, flush=True)
        args.cpu = "atomic"
try:
    numa = Numa.from_dict(json.loads(Path(args.numa).read_text()))
    cxl = [parse_cxl(spec) for spec in args.cxl or ["cxl-asic:1GiB"]]
    window_layout([w[1] for w in cxl], [w[2] for w in cxl], toMemorySize(args.local_size))
    # Always a switchable processor, so that boots and restores name their cores alike
    # (board.processor.start/switch) and a checkpoint taken on one restores on the other.
    # Boots run on --cpu; a restore with --warm atomic starts on atomic cores and
    # switches to --cpu for the timed part.
    start_cpu = "atomic" if args.warm == "atomic" else args.cpu
    switch_cpu = args.cpu if args.warm == "atomic" else ("timing" if args.cpu in ("kvm", "atomic") else "atomic")
    processor = SimpleSwitchableProcessor(starting_core_type=CPUS[start_cpu], switch_core_type=CPUS[switch_cpu],
                                          isa=ISA.X86, num_cores=args.cores)
    for core in processor._all_cores():
        if core.is_kvm_core():
            core.get_simobject().usePerf = False  # no hardware performance counters on these hosts
    host = load_preset(args.local_preset or numa.nodes[0].name).host
    caches = host_caches(host)
    shape_tlbs(processor, host)
    # The host's core class; with one core no other core can see a store's order,
    # so O3 keeps more than one store miss in flight (DMA observes none of these pages).
    shape_o3(processor, tso=args.cores > 1)
    board = numa_board(processor=processor, cache_hierarchy=caches,
                       local_memory=SingleChannelDDR4_2400(size=args.local_size), cxl=cxl, numa=numa,
                       clk_freq=f"{CLOCK_KHZ // 1000}MHz", cxl_io=args.cxl_io,
                       linux_regions=args.cxl_regions)
except (ParamError, ValueError, OSError) as e:
    parser.error(str(e))
outdir = Path(m5.options.outdir)
disk = outdir / "empty.img"  # the board wants a disk; the guest runs from its initramfs
with open(disk, "wb") as f:
    f.truncate(1 << 20)
if args.warm == "atomic":
    board.exit_on_work_items = True  # the guest's work_begin/work_end marks return to this script
# Without --cxl-io the DSDT is empty, so PCI devices are found by the legacy scan (pci=noacpi);
# with it, the DSDT's CXL host bridges are PCI root bridges Linux scans through ACPI.
# The TSC runs at the board's clock; telling Linux so (tsc_early_khz) keeps the guest's
# clock_gettime exact whatever the cores (a KVM core's PIT calibration is not).
# Every console byte is a port write that leaves a KVM guest (tens of microseconds
# each), so KVM boots print warnings and the guest's own output only.
console_args = ["quiet", "loglevel=4"] if args.cpu == "kvm" else ["earlyprintk=ttyS0"]
board.set_kernel_disk_workload(
    kernel=KernelResource(local_path=str(kernel.resolve())), disk_image=DiskImageResource(local_path=str(disk)),
    # A region's memory, hot-added by the kmem driver, goes online at once (as udev would online it).
    kernel_args=console_args + ["console=ttyS0"] + ([] if args.cxl_io else ["pci=noacpi"])
    + (["memhp_default_state=online"] if args.cxl_regions else []) + [
                                f"tsc_early_khz={CLOCK_KHZ}", "tsc=reliable",
                                "lpj=7999923", "panic=-1", "no_timer_check",
                                # Two waits that cost a simulated core what they cost silicon, in
                                # instructions: calibrating the local APIC timer against the PIT spins
                                # for 100 ms (gem5's CPUID offers no TSC-deadline timer or crystal
                                # clock to skip it; the PIT ticks instead), and zeroing the 64 MiB
                                # bounce buffer no device here needs took 175 ms (2 MiB is plenty).
                                "nolapic_timer", "swiotlb=1024",
                                # 4 KiB pages, as the presets' hosts (host.page_bytes) and lmbench on them
                                "transparent_hugepage=never",
                 # The command always comes by readfile: a checkpointed guest reads it when it resumes,
                 # and on the command line gem5 would str.format() its braces and cap its length.
                 'simcxl.run="@readfile"',
                 f"simcxl.checkpoint={1 if args.checkpoint else 0}", "simcxl.after=m5exit"],
    readfile_contents=args.run + "\n")

board._pre_instantiate()
root = Root(full_system=True, board=board)
if args.cpu == "kvm":
    # KVM cores run in event queues of their own, synchronised once a quantum.
    root.sim_quantum = 10**9  # 1 ms in ticks of 1 ps (the global frequency is fixed later)
m5.instantiate(args.restore)
board._post_instantiate()

console = outdir / "board.pc.com_1.device"
until = re.compile(args.until)
chunk = 10 * 10**9  # 10 ms of simulated time between console checks
limit = int(args.max_seconds * 10**12)
start = time.time()
cause = ""
switches = 0
while m5.curTick() < limit:
    event = m5.simulate(chunk)
    cause = event.getCause()
    text = console.read_text(errors="replace") if console.exists() else ""
    if cause == "checkpoint" and args.checkpoint:
        m5.checkpoint(args.checkpoint)
        # What the guest printed before (its topology), for runs restored from here.
        Path(args.checkpoint, "boot-console.txt").write_text(text)
        print(f"checkpoint: {args.checkpoint} at {m5.curTick() / 1e12:.3f} simulated s, "
              f"{time.time() - start:.1f} s wall, cpu={args.cpu}")
        sys.exit(0)
    if cause in ("workbegin", "workend") and args.warm == "atomic":
        processor.switch()  # work_begin: onto --cpu; work_end: back to atomic
        switches += 1
        continue
    if cause != "simulate() limit reached" or until.search(text):
        break
wall = time.time() - start
text = console.read_text(errors="replace") if console.exists() else ""
print(f"exit: {cause} at {m5.curTick() / 1e12:.3f} simulated s, {wall:.1f} s wall, cpu={args.cpu}"
      + (f", warm=atomic, {switches} switches" if args.warm == "atomic" else ""))
for ln in text.splitlines():
    if re.search(r"NUMA|SRAT|SLIT|HMAT|node|Memory:|BIOS-e820|simcxl-guest|available|size|free|distances"
                 + (r"|cxl|CXL|PCI|pci|ACPI|MMCONFIG|ECAM" if args.cxl_io else ""), ln):
        print("console:", ln.strip())
if "m5_exit" not in cause:
    print(f"the guest did not reach its m5 exit within {args.max_seconds} simulated seconds", file=sys.stderr)
    sys.exit(1)
