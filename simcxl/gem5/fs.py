"""Full-system runs: the project's guest on gem5's X86 board with CXL memory
as CPU-less NUMA nodes (gem5_configs/cxl_numa_boot.py), driven from Python.

`boot()` computes the NUMA description with the standalone engine
(simcxl.gem5.numa), runs gem5, and parses what the guest printed: the topology
Linux built from SRAT/SLIT/HMAT (``numactl -H``) and the benchmark's
``key=value`` lines, as a DataFrame like the standalone engine's.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pandas as pd

from .board import parse_bytes, parse_cxl, window_layout
from ..config.params import ParamError

CONFIG = Path("gem5_configs") / "cxl_numa_boot.py"   # in the SimCXL checkout gem5 was built with


def config() -> Path:
    """gem5_configs/cxl_numa_boot.py of the SimCXL checkout (SIMCXL_REPO, the
    package's own checkout, or the working directory: engine.repository)."""
    from .engine import repository
    try:
        return repository() / CONFIG
    except ParamError as e:
        raise ParamError("simcxl fs" + str(e).split("--engine gem5", 1)[-1]) from None


@dataclass
class Topology:
    cpus: Dict[int, List[int]] = field(default_factory=dict)     # node -> CPUs
    size_mb: Dict[int, int] = field(default_factory=dict)         # node -> MB Linux manages there
    distances: List[List[int]] = field(default_factory=list)
    # node -> what Linux registered from the HMAT for its best initiator (access0):
    # read/write_latency in ns, read/write_bandwidth in MB/s
    hmat: Dict[int, Dict[str, int]] = field(default_factory=dict)
    # region -> the access0 figures Linux's CXL drivers computed for it (regionN/access0/*,
    # printed by region_run): read/write_latency in ns, read/write_bandwidth in MB/s
    region_access: Dict[int, Dict[str, int]] = field(default_factory=dict)


def parse_topology(text: str) -> Topology:
    """`numactl -H`'s report (nodes, their CPUs and sizes, the distance
    table) and the guest's `hmat nodeN/access0/initiators/X=V` lines (a later line wins: region_run
    prints a region's node again once Linux has given it figures) and `cxl-access regionN/access0/X=V`."""
    t = Topology()
    for m in re.finditer(r"^hmat node(\d+)/access0/initiators/(\w+)=(\d+)$", text, re.M):
        t.hmat.setdefault(int(m.group(1)), {})[m.group(2)] = int(m.group(3))
    for m in re.finditer(r"^cxl-access region(\d+)/access0/(\w+)=(\d+)$", text, re.M):
        t.region_access.setdefault(int(m.group(1)), {})[m.group(2)] = int(m.group(3))
    for m in re.finditer(r"^node (\d+) cpus:([ \d]*)$", text, re.M):
        t.cpus[int(m.group(1))] = [int(c) for c in m.group(2).split()]
    for m in re.finditer(r"^node (\d+) size: (\d+) MB$", text, re.M):
        t.size_mb[int(m.group(1))] = int(m.group(2))
    m = re.search(r"^node distances:\n^node\s+[\d ]+\n((?:^\s*\d+:[ \d]+\n?)+)", text, re.M)
    if m:
        t.distances = [[int(x) for x in row.split(":", 1)[1].split()] for row in m.group(1).strip().splitlines()]
    return t


def parse_rows(text: str) -> pd.DataFrame:
    """The key=value lines the guest benchmark printed between its begin and end marks."""
    m = re.search(r"simcxl-run-begin: .*?\n(.*?)simcxl-run-end: rc=(\d+)", text, re.S)
    if not m:
        return pd.DataFrame()
    rows = []
    for ln in m.group(1).splitlines():
        pairs = re.findall(r"(\w+)=(\S+)", ln)
        if pairs and len(pairs) == len(ln.split()):
            row = {}
            for k, v in pairs:
                try:
                    row[k] = float(v) if not v.startswith("0x") else v
                except ValueError:
                    row[k] = v
            rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["rc"] = int(m.group(2))
    return df


CPUS = ("kvm", "atomic", "timing", "o3")
BENCHES = ("topology", "lmbench", "stream", "loaded-latency")
STREAM_KERNELS = ("copy", "scale", "add", "triad", "read")  # read: a sum over one array, reads only
_MLC_RW = {"R": (1, 0), "W2": (2, 1), "W3": (3, 1), "W5": (1, 1)}  # MLC's read:write traffic modes


# What Linux's CXL drivers built: memdevs, ports and decoders (parsed by simcxl.gem5.cxlcli).
CXL_LIST = "cxl list -M -D -P -E -u"  # -E: endpoints, so -D lists their decoders too
# The CDAT each endpoint port read from its device over DOE, as bytes (cxlcli.cdat_dumps). No double
# quotes: the command travels in the kernel command line's simcxl.run="...".
CDAT_DUMP = ("for f in /sys/bus/cxl/devices/endpoint*/CDAT; do echo cdat-begin $f; od -An -tx1 -v $f; "
             "echo cdat-end; done")


def node_access(nodes: Sequence[int]) -> str:
    """What Linux gave each of `nodes` once its region was online (cxl_region_perf_attrs_callback:
    CDAT, links and the generic port, not HMAT), in the init's `hmat` line format."""
    return (f"for n in {' '.join(map(str, nodes))}; do "
            "for f in /sys/devices/system/node/node$n/access0/initiators/*_*; "
            "do [ -f $f ] && echo hmat ${f#/sys/devices/system/node/}=$(cat $f); done; done")


# Each region's own access0 figures (regionN/access0), as `cxl-access regionN/access0/NAME=VALUE`.
REGION_ACCESS = ("for f in /sys/bus/cxl/devices/region*/access0/*; do [ -f $f ] && "
                 "echo cxl-access ${f#/sys/bus/cxl/devices/}=$(cat $f 2>/dev/null); done")
# The ACPI tables Linux was given (header included), parsed by cxlcli.acpi_dumps.
ACPI_DUMP = ("for t in SRAT HMAT; do echo acpi-begin $t; od -An -tx1 -v /sys/firmware/acpi/tables/$t; "
             "echo acpi-end; done")
# The dax devices and their modes (cxlcli.dax_devices): a region's memory is system-ram once Linux's
# kmem driver has it (what `daxctl reconfigure-device --mode=system-ram` makes of a devdax device).
DAX_LIST = "daxctl list"
# What `simcxl fs --cxl-driver` runs in the guest.
CXL_DRIVER_RUN = f"{CXL_LIST}; {CDAT_DUMP}"


def region_run(cxl: Sequence[str], then: str = "") -> str:
    """What `simcxl fs --cxl-region` runs in the guest: for each window, a volatile region over
    every memory device below its host bridge (root decoder decoder0.i; the devices by their PCI
    address, board.bus_layout's, through any switch below a root port), one way each, at the
    CFMWS's granularity, created through the kernel's sysfs interface by the guest's simcxl-region
    (benchmarks/guest/simcxl_region.sh: `cxl create-region -t ram`'s steps, which Debian 12's
    cxl-cli 76 refuses); Linux commits the decoders and its dax and kmem drivers bring the memory
    online as a NUMA node. Then each region node's access0 figures as Linux's CXL drivers computed
    them (node_access, REGION_ACCESS) and the SRAT and HMAT they started from (ACPI_DUMP: the
    generic ports), and `then` (a benchmark's command, the region's node being node 1 + i) or, by
    default, the dax devices (DAX_LIST), the listing with regions, the nodes and the CDAT."""
    from .board import BUSES_PER_BRIDGE, CXL_BUS, bus_layout, cfmws_granularity, switch_fanout
    from .components import load_system
    steps = []
    for i, spec in enumerate(cxl):
        preset, size, _ = parse_cxl(spec)  # the region takes the whole window
        system = load_system(preset)
        buses = [d for port in bus_layout(CXL_BUS + BUSES_PER_BRIDGE * i, switch_fanout(system))
                 for d in port["devices"]]
        devs = " ".join(f"$(basename /sys/bus/pci/devices/0000:{d:02x}:00.0/mem*)" for d in buses)
        steps.append(f"simcxl-region decoder0.{i} {cfmws_granularity(system.cxl.bridge.interleave_bytes)} {size} "
                     f"{devs}")
    steps += [node_access([1 + i for i in range(len(cxl))]), REGION_ACCESS, ACPI_DUMP]
    return "; ".join(steps + ([then] if then else [DAX_LIST, CXL_LIST + " -R", "numactl -H", CDAT_DUMP]))


def guest_command(bench: str, node: int = 1, *, sizes: Sequence[int] = (1 << 20, 64 << 20), accesses: int = 100000,
                  threads: int = 1, kernel: str = "triad", elements: int = 1 << 20, mode: str = "R",
                  chase_bytes: int = 64 << 20, cpu_node: int = 0, marks: bool = False, warm_lines: int = 0,
                  timed: int = 0) -> str:
    """The guest command that runs `bench` with its memory on NUMA node
    `node` and its threads on `cpu_node` (numactl --membind/--cpunodebind).

    ``marks`` (for runs warmed on atomic cores, boot(warm="atomic")): the
    timed part is bracketed with gem5's work_begin/work_end; lmbench then
    builds only ``warm_lines`` lines before the timed ones of each cycle (0:
    whole cycles; about twice the caches' lines leaves them as a long chase
    would), and STREAM runs one untimed pass first and times the first
    ``timed`` elements of each thread's slice (0: all)."""
    if bench not in BENCHES:
        raise ParamError(f"bench = {bench!r} is not allowed; allowed: {', '.join(BENCHES)}")
    if bench == "topology":
        return "true"  # the init prints numactl -H and the HMAT attributes anyway
    if not isinstance(node, int) or not 0 <= node <= 63:
        raise ParamError(f"node = {node!r} is out of range; allowed: 0 to 63")
    pin = f"numactl --membind={node} --cpunodebind={cpu_node}"
    if bench == "lmbench":
        if not sizes or any(not 64 <= int(x) <= 1 << 40 for x in sizes):
            raise ParamError(f"sizes = {list(sizes)} is not allowed; allowed: one or more sizes of 64 B to 1 TiB")
        if warm_lines < 0:
            raise ParamError(f"warm_lines = {warm_lines} is out of range; allowed: 0 or more")
        m = (" -m" + (f" -w {int(warm_lines)}" if warm_lines else "")) if marks else ""
        return f"{pin} chase -a {int(accesses)}{m} " + " ".join(str(int(x)) for x in sizes)
    if not 1 <= threads <= 64:
        raise ParamError(f"threads = {threads} is out of range; allowed: 1 to 64")
    if bench == "stream":
        if kernel not in STREAM_KERNELS:
            raise ParamError(f"kernel = {kernel!r} is not allowed; allowed: {', '.join(STREAM_KERNELS)}")
        if not 0 <= timed <= elements:
            raise ParamError(f"timed = {timed} is out of range; allowed: 0 (all) to elements = {elements}")
        m = (" -m -w" + (f" -t {int(timed)}" if timed else "")) if marks else ""
        return f"{pin} stream{m} {kernel} {threads} {int(elements)}"
    if mode not in _MLC_RW:
        raise ParamError(f"mode = {mode!r} is not allowed; allowed: {', '.join(_MLC_RW)}")
    r, w = _MLC_RW[mode]
    return f"{pin} loaded_latency -a {int(accesses)} -t {threads} -r {r}:{w} {int(chase_bytes)}"


def frame(bench: str, rows: pd.DataFrame, memory: str) -> pd.DataFrame:
    """The guest benchmark's rows in the standalone engine's columns (lmbench:
    working_set_bytes, latency_ns; stream: kernel, threads, stream_gbps;
    loaded-latency: threads, read_fraction, bandwidth_gbps, latency_ns)."""
    if rows.empty or bench == "topology":
        return pd.DataFrame({"memory": []})
    if bench == "lmbench":
        r = rows.dropna(subset=["size_bytes"])
        df = pd.DataFrame({"working_set_bytes": r["size_bytes"].astype("int64"), "latency_ns": r["latency_ns"],
                           "accesses": r["accesses"].astype("int64")})
    elif bench == "stream":
        r = rows.dropna(subset=["stream_gbps"])
        df = pd.DataFrame({"kernel": r["kernel"], "threads": r["threads"].astype("int64"),
                           "stream_gbps": r["stream_gbps"], "check": r["check"]})
    else:
        r = rows.dropna(subset=["traffic_threads"])
        rw = r["rw"].str.split(":", expand=True).astype(float)
        df = pd.DataFrame({"threads": r["traffic_threads"].astype("int64"),
                           "read_fraction": rw[0] / (rw[0] + rw[1]),
                           "bandwidth_gbps": r["traffic_gbps"], "latency_ns": r["latency_ns"]})
    df.insert(0, "memory", memory)
    return df.reset_index(drop=True)


@dataclass
class FsRun:
    console: str
    cause: str
    topology: Topology
    results: pd.DataFrame
    outdir: Path
    frame: pd.DataFrame = field(default_factory=pd.DataFrame)
    cpu: str = ""            # the cores the run used (atomic where a KVM boot fell back)
    fallback: str = ""       # why a KVM boot ran on atomic cores, if it did


def _build_guest_module():
    from .engine import repository
    sys.path.insert(0, str(repository() / "benchmarks" / "guest"))
    try:
        import build_guest
    finally:
        sys.path.pop(0)
    return build_guest


def build_guest(cache=None, jobs: int = 2, install: bool = False, keep_tree: bool = True) -> Dict[str, Path]:
    """Builds the guest (benchmarks/guest/build_guest.py), or finds it in its cache.
    ``keep_tree``: keep the built kernel tree, so that a changed initramfs only relinks."""
    bg = _build_guest_module()
    try:
        return bg.build(cache=Path(cache) if cache else None, jobs=jobs, install=install, keep_tree=keep_tree,
                        out=sys.stderr)
    except bg.GuestBuildError as e:
        raise ParamError(str(e)) from None


def guest_kernel() -> Path:
    bg = _build_guest_module()
    paths = bg.built()
    if not paths:
        raise ParamError(f"the guest is not built (nothing for the current inputs in {bg.default_cache()}): "
                         "run `simcxl guest build --install` (27 minutes on the 2-core development VM beside a "
                         "gem5 build) or give a kernel "
                         "(--kernel, or kernel= in Python)")
    return paths["vmlinux_initramfs"]


def default_warm_lines(local: str = "ddr-local") -> int:
    """Lines a warmed chase walks before its timed loads on the board whose
    caches are shaped like `local`'s host (simcxl.gem5.board.warm_lines)."""
    from .board import warm_lines
    from ..config.presets import load
    return warm_lines(load(local).host)


def check_kernel(kernel) -> Path:
    """The guest kernel: an existing x86-64 ELF file (gem5's X86 loader takes no bzImage)."""
    path = Path(kernel)
    if not path.is_file():
        raise ParamError(f"kernel = {str(kernel)!r}: no such file; allowed: an x86-64 vmlinux with the initramfs "
                         "built in (the vmlinux_initramfs `simcxl guest build` prints)")
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF" or head[4:5] != b"\x02" or head[18:20] != b"\x3e\x00":
        raise ParamError(f"kernel = {str(kernel)!r}: not an x86-64 ELF file; allowed: a vmlinux (not a bzImage) "
                         "with the initramfs built in (the vmlinux_initramfs `simcxl guest build` prints)")
    return path


def check_board(cxl: Sequence[str], local_size: str, node: int, local: str = "ddr-local", cxl_io: bool = False,
                linux_regions: bool = False) -> None:
    """Everything about the board that can be wrong before gem5 starts: the
    presets, the windows' sizes and places (simcxl.gem5.board.window_layout),
    that `node` is one of the board's nodes, and that with CXL.io a switch's
    window is left to Linux (`linux_regions`). Raises ParamError (one line)."""
    from .board import switch_fanout
    from ..config.presets import load
    from .components import load_system

    if not cxl:
        raise ParamError("cxl = []: not allowed; allowed: one or more PRESET:SIZE[@BASE] windows")
    windows = [parse_cxl(spec) for spec in cxl]
    window_layout([w[1] for w in windows], [w[2] for w in windows], parse_bytes(local_size, "local_size"))
    if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node <= len(windows):
        raise ParamError(f"node = {node!r} is not one of the board's nodes; allowed: 0 (local DRAM) to "
                         f"{len(windows)} (one node per CXL window: {', '.join(cxl)})")
    load(local)
    for spec, w in zip(cxl, windows):
        system = load_system(w[0])  # a preset or a topology file
        if cxl_io and any(switch_fanout(system)) and not linux_regions:
            raise ParamError(f"--cxl {spec} has a switch: with CXL.io firmware maps no memory below a switch here; "
                             "allowed: --cxl-region (Linux creates the region and commits the decoders)")


def boot(gem5: str, outdir, *, kernel: Optional[str] = None, local: str = "ddr-local",
         cxl: Sequence[str] = ("cxl-asic:1GiB",), cpu: str = "kvm", cores: int = 1, run: str = "",
         bench: str = "", node: int = 1, local_size: str = "1GiB", max_seconds: float = 5.0,
         checkpoint: Optional[str] = None, restore: Optional[str] = None, numa=None,
         timeout: float = 7200, warm: str = "none", cxl_io: bool = False, linux_regions: bool = False) -> FsRun:
    """Boot the guest on the CXL NUMA board and run `run` in it.

    ``checkpoint``: boot, save a checkpoint there at the guest's shell (before
    its command) and stop; ``restore``: resume such a checkpoint (on timing or
    O3 cores, say) and run `run` there, handed over by gem5's readfile.
    ``bench`` names what `run` is (see guest_command) so that its rows come
    back as ``frame`` in the standalone engine's columns. ``warm="atomic"``
    (with ``restore`` and ``cpu`` timing or o3): the restored run goes on
    atomic cores and switches to ``cpu`` only between the guest's
    work_begin and work_end (a command built with guest_command(marks=True)).
    ``numa``: the
    board's NUMA description (simcxl.gem5.numa.Numa); by default the standalone
    engine computes it for the presets (about 20 s a preset). ``cxl_io``: Linux's
    CXL drivers find each window's host bridge, root ports and memory devices
    (gem5_configs/cxl_numa_boot.py --cxl-io); `run` may then be CXL_LIST. ``linux_regions``
    (with ``cxl_io``): firmware maps no window (CEDT only, nothing committed) and `run`, e.g.
    region_run(cxl), creates the regions."""
    from .numa import describe

    if not gem5 or not Path(gem5).is_file():
        raise ParamError(f"gem5 = {gem5!r}: not a file; give a gem5 binary built for X86 with this repository "
                         "as EXTRAS (scons build/X86/gem5.opt EXTRAS=<repo>)")
    if cpu not in CPUS:
        raise ParamError(f"cpu = {cpu!r} is not allowed; allowed: {', '.join(CPUS)}")
    if checkpoint and restore:
        raise ParamError("checkpoint and restore are not allowed together; allowed: one of them, or neither")
    if linux_regions and not cxl_io:
        raise ParamError("linux_regions needs cxl_io: Linux creates regions on devices its CXL drivers found")
    if warm not in ("none", "atomic"):
        raise ParamError(f"warm = {warm!r} is not allowed; allowed: none, atomic")
    if warm == "atomic" and not (restore and cpu in ("timing", "o3")):
        raise ParamError("warm = 'atomic' is for restored runs timed on detailed cores; allowed with restore= "
                         "and cpu = timing or o3")
    if restore and not (Path(restore) / "m5.cpt").is_file():
        raise ParamError(f"restore = {restore!r}: no gem5 checkpoint there (no m5.cpt)")
    check_board(cxl, local_size, node, local=local, cxl_io=cxl_io, linux_regions=linux_regions)
    script = config()
    kernel = check_kernel(kernel) if kernel else guest_kernel()
    presets = [parse_cxl(spec)[0] for spec in cxl]
    if numa is not None and len(numa.nodes) != 1 + len(cxl):
        raise ParamError(f"numa has {len(numa.nodes)} nodes; allowed: {1 + len(cxl)}, one for local DRAM and one per "
                         "CXL window")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    numa_file = outdir / "numa.json"
    numa_file.write_text(json.dumps((numa or describe(local, presets)).to_dict(), indent=1))
    cmd = [gem5, "-d", str(outdir / "m5out"), str(script), "--kernel", str(kernel), "--numa", str(numa_file),
           "--local-size", local_size, "--cpu", cpu, "--cores", str(cores), "--run", run or "true",
           "--max-seconds", str(max_seconds), "--warm", warm]
    for spec in cxl:
        cmd += ["--cxl", spec]
    if cxl_io:
        cmd += ["--cxl-io"] + (["--cxl-regions"] if linux_regions else [])
    if checkpoint:
        cmd += ["--checkpoint", str(checkpoint)]
    if restore:
        cmd += ["--restore", str(restore)]
    from .engine import Gem5RunError
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        raise Gem5RunError(f"gem5 ran past timeout = {timeout} s; see {outdir / 'm5out'}") from None
    except OSError as e:
        raise Gem5RunError(f"gem5 = {gem5!r} could not be started: {e.strerror}") from None
    (outdir / "gem5.log").write_text(r.stdout + r.stderr)
    console_file = outdir / "m5out" / "board.pc.com_1.device"
    console = console_file.read_text(errors="replace") if console_file.exists() else ""
    m = re.search(r"^exit: (.*) at ", r.stdout, re.M)
    fb = re.search(r"^fallback: --cpu kvm -> atomic: (.*)$", r.stdout, re.M)
    ran_on = "atomic" if fb else cpu
    if r.returncode and not console:
        last = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["no output"])[-1]
        raise Gem5RunError(f"gem5 failed ({shlex.join(cmd[:3])} ...): {last}; see {outdir / 'gem5.log'}")
    rows = parse_rows(console)
    boot_console = Path(restore, "boot-console.txt") if restore else None
    if boot_console and boot_console.is_file():  # the topology was printed before the checkpoint
        console = boot_console.read_text(errors="replace") + console
    df = frame(bench, rows, f"node{node}") if bench else pd.DataFrame()
    df.attrs.update({"engine": "gem5-fs", "cpu": ran_on, "fallback": fb.group(1) if fb else None, "warm": warm,
                     "cores": cores, "command": run, "local": local, "cxl": list(cxl), "node": node,
                     "restored_from": str(restore) if restore else None})
    cause = m.group(1) if m else ("checkpoint" if re.search(r"^checkpoint: ", r.stdout, re.M) else "")
    return FsRun(console, cause, parse_topology(console), rows, outdir, df, ran_on, fb.group(1) if fb else "")
