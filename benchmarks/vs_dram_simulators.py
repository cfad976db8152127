"""Simulated requests per CPU second: SimCXL's standalone engine against DRAMsim3 and Ramulator2,
measured in the same run on the same machine, on the same workload shape: random 64 B requests, one
in three a write, offered as fast as the memory takes them (DRAMsim3's RandomCPU and Ramulator2's
LoadStoreTrace: a new request every cycle the controller accepts one; SimCXL: 16 cores keeping
every MSHR busy with random accesses).

    DRAMSIM3=/path/to/DRAMsim3 RAMULATOR2=/path/to/ramulator2 \
        .venv/bin/python benchmarks/vs_dram_simulators.py [--repeats 3]

Both are built from their public sources outside this repository (docs/performance.md says how;
their code is never committed here): DRAMSIM3 names a DRAMsim3 checkout with build/dramsim3main,
RAMULATOR2 a Ramulator2 v2.0a checkout with build/ramulator2. Figures are CPU seconds
(user + system): their whole processes (Ramulator2's includes reading its trace), SimCXL's engine
call (time.process_time around it). The runs alternate, so a busy machine slows all alike; medians
of the repeats. A simulator whose variable is unset is skipped, saying why.

Rows:
- DRAMsim3, DDR4_8Gb_x8_3200.ini (one channel), RandomCPU: the memory controller alone.
- Ramulator2, DDR4_8Gb_x8 at DDR4_3200AA, one channel of two ranks, FR-FCFS, open rows: the
  memory controller alone, fed a trace of random addresses.
- SimCXL ddr-local: the whole host path (cores, caches, uncore) and one DDR5-4800 channel's
  controller, random requests with one write in three.
- SimCXL `simcxl bench` (cxl-asic, random reads): host, host bridge, CXL link, Type-3 device and its
  media: what `simcxl bench` reports.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from simcxl import _core
from simcxl.config.presets import load
from simcxl.topology import core_graph

CONFIG = "DDR4_8Gb_x8_3200.ini"


def dramsim3(root: Path, cycles: int):
    """(requests done, CPU seconds) of one DRAMsim3 RandomCPU run."""
    exe = root / "build" / "dramsim3main"
    with tempfile.TemporaryDirectory() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([str(exe), str(root / "configs" / CONFIG), "-s", "random", "-c", str(cycles), "-o", out],
                           capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode:
            sys.exit(f"dramsim3main failed: {r.stderr[-2000:]}")
        text = (Path(out) / "dramsim3.txt").read_text()
    done = sum(int(re.search(rf"^{k}\s*=\s*(\d+)", text, re.M).group(1)) for k in ("num_reads_done", "num_writes_done"))
    return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


RAMULATOR2_CONFIG = """Frontend:
  impl: LoadStoreTrace
  path: {trace}
  clock_ratio: 1
MemorySystem:
  impl: GenericDRAM
  clock_ratio: 1
  DRAM:
    impl: DDR4
    org:
      preset: DDR4_8Gb_x8
      channel: 1
      rank: 2
    timing:
      preset: DDR4_3200AA
  Controller:
    impl: Generic
    Scheduler:
      impl: FRFCFS
    RefreshManager:
      impl: AllBank
    RowPolicy:
      impl: OpenRowPolicy
    plugins:
  AddrMapper:
    impl: RoBaRaCoCh
"""


def ramulator2(root: Path, requests: int, folder: Path):
    """(requests, CPU seconds) of one Ramulator2 run over a trace of `requests` random accesses."""
    trace = folder / f"random-{requests}.trace"
    if not trace.exists():
        import random
        rng = random.Random(1)
        with open(trace, "w") as f:
            for _ in range(requests):
                f.write(f"{'ST' if rng.random() < 1 / 3 else 'LD'} {rng.randrange(1 << 25) * 64}\n")
    config = folder / "ramulator2.yaml"
    config.write_text(RAMULATOR2_CONFIG.format(trace=trace))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    exe = next(p for p in (root / "build" / "ramulator2", root / "ramulator2") if p.is_file())
    r = subprocess.run([str(exe), "-f", str(config)], capture_output=True, text=True, cwd=folder)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        sys.exit(f"ramulator2 failed: {r.stdout[-1000:]}{r.stderr[-2000:]}")
    return requests, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def simcxl(memory: str, requests: int, read_fraction: float):
    """(requests done, CPU seconds) of one SimCXL traffic run: 16 threads, random 64 B accesses."""
    graph = core_graph(load(memory))
    t0 = time.process_time()
    _core.run_traffic(graph, 16, read_fraction, "random", 1 << 34, requests, 0.0, 0.0, False, None)
    # The run stops once 90 % of the requests completed (its measurement window), as `simcxl bench` counts.
    return requests - requests // 10, time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--requests", type=int, default=1_000_000, help="SimCXL requests per run")
    ap.add_argument("--cycles", type=int, default=2_000_000, help="DRAMsim3 DRAM cycles per run")
    a = ap.parse_args()
    ds3 = Path(os.environ["DRAMSIM3"]) if os.environ.get("DRAMSIM3") else None
    if ds3 is not None and not (ds3 / "build" / "dramsim3main").is_file():
        sys.exit(f"DRAMSIM3 = {ds3}: no build/dramsim3main there; build it as docs/performance.md says")
    ram = Path(os.environ["RAMULATOR2"]) if os.environ.get("RAMULATOR2") else None
    if ram is not None and not any((ram / p).is_file() for p in ("build/ramulator2", "ramulator2")):
        sys.exit(f"RAMULATOR2 = {ram}: no build/ramulator2 there; build it as docs/performance.md says")
    d3, r2 = "DRAMsim3 " + CONFIG + ", RandomCPU", "Ramulator2 DDR4_3200AA, LoadStoreTrace"
    rows = {d3: [], r2: [], "SimCXL ddr-local, whole host path": [], "SimCXL simcxl bench, cxl-asic (reads only)": []}
    names = list(rows)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.repeats):
            if ds3 is not None:
                rows[d3].append(dramsim3(ds3, a.cycles))
            if ram is not None:
                rows[r2].append(ramulator2(ram, a.requests, Path(tmp)))
            rows[names[2]].append(simcxl("ddr-local", a.requests, 2 / 3))
            rows[names[3]].append(simcxl("cxl-asic", a.requests, 1.0))
    rate = {}
    print(f"{'':46s} {'requests':>10s}  M requests per CPU s (min / median / max)")
    for name, runs in rows.items():
        if not runs:
            var = "DRAMSIM3" if name == d3 else "RAMULATOR2"
            print(f"{name:46s} skipped: set {var} to its checkout, built (docs/performance.md)")
            continue
        r = [n / s / 1e6 for n, s in runs]
        rate[name] = statistics.median(r)
        print(f"{name:46s} {runs[0][0]:10d}  {min(r):.3f} / {rate[name]:.3f} / {max(r):.3f}")
    for base in (d3, r2):
        if base in rate:
            for name in names[2:]:
                print(f"{name} / {base.split()[0]}: {rate[name] / rate[base]:.1f}x")


if __name__ == "__main__":
    main()
