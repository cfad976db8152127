"""Full-system runs: the project's guest on gem5's X86 board with CXL memory
as CPU-less NUMA nodes (gem5_configs/cxl_numa_boot.py), driven from Python.

`boot()` computes the NUMA description with the standalone engine
(simcxl.numa), runs gem5, and parses what the guest printed: the topology
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

from .params import ParamError

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "gem5_configs" / "cxl_numa_boot.py"


@dataclass
class Topology:
    cpus: Dict[int, List[int]] = field(default_factory=dict)     # node -> CPUs
    size_mb: Dict[int, int] = field(default_factory=dict)         # node -> MB Linux manages there
    distances: List[List[int]] = field(default_factory=list)


def parse_topology(text: str) -> Topology:
    """`numactl -H`'s report: nodes, their CPUs and sizes, and the distance table."""
    t = Topology()
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


@dataclass
class FsRun:
    console: str
    cause: str
    topology: Topology
    results: pd.DataFrame
    outdir: Path


def guest_kernel() -> Path:
    sys.path.insert(0, str(REPO / "benchmarks" / "guest"))
    try:
        import build_guest
    finally:
        sys.path.pop(0)
    paths = build_guest.built()
    if not paths:
        raise ParamError("the guest is not built: run `python3 benchmarks/guest/build_guest.py --install` "
                         "(about 30 minutes on 2 cores) or give kernel=")
    return paths["vmlinux_initramfs"]


def boot(gem5: str, outdir, *, kernel: Optional[str] = None, local: str = "ddr-local",
         cxl: Sequence[str] = ("cxl-asic:1GiB",), cpu: str = "kvm", cores: int = 1, run: str = "",
         local_size: str = "1GiB", max_seconds: float = 5.0, timeout: float = 7200) -> FsRun:
    """Boot the guest on the CXL NUMA board and run `run` in it."""
    from .numa import describe

    if not gem5 or not Path(gem5).is_file():
        raise ParamError(f"gem5 = {gem5!r}: not a file; give a gem5 binary built for X86 with this repository "
                         "as EXTRAS (scons build/X86/gem5.opt EXTRAS=<repo>)")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    kernel = Path(kernel) if kernel else guest_kernel()
    presets = []
    for spec in cxl:
        preset, sep, _ = spec.rpartition(":")
        if not sep or not preset:
            raise ParamError(f"cxl = {spec!r} is not allowed; allowed: PRESET:SIZE, e.g. cxl-asic:1GiB")
        presets.append(preset)
    numa = outdir / "numa.json"
    numa.write_text(json.dumps(describe(local, presets).to_dict(), indent=1))
    cmd = [gem5, "-d", str(outdir / "m5out"), str(CONFIG), "--kernel", str(kernel), "--numa", str(numa),
           "--local-size", local_size, "--cpu", cpu, "--cores", str(cores), "--run", run or "true",
           "--max-seconds", str(max_seconds)]
    for spec in cxl:
        cmd += ["--cxl", spec]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    (outdir / "gem5.log").write_text(r.stdout + r.stderr)
    console_file = outdir / "m5out" / "board.pc.com_1.device"
    console = console_file.read_text(errors="replace") if console_file.exists() else ""
    m = re.search(r"^exit: (.*) at ", r.stdout, re.M)
    if r.returncode and not console:
        last = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"gem5 failed ({shlex.join(cmd[:3])} ...): {last}; see {outdir / 'gem5.log'}")
    return FsRun(console, m.group(1) if m else "", parse_topology(console), parse_rows(console), outdir)
