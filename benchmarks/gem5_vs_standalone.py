"""Simulated requests per wall-clock second: gem5 (NULL ISA, TestBoard with a
random traffic generator against the CXL expander) against the standalone
engine, on the same workload: random 64 B reads that saturate the device.

    GEM5=/path/to/build/NULL/gem5.opt .venv/bin/python benchmarks/gem5_vs_standalone.py [cxl-asic] [1ms]

Skips (exit status 0, with the reason) when GEM5 does not name a gem5 binary.
gem5's figure uses the wall time of its simulation loop and, in
brackets, the whole process wall time (start-up, Python config, stats dump).
"""

import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import simcxl

REPO = Path(__file__).resolve().parents[1]


def gem5_run(gem5: str, memory: str, duration: str):
    with tempfile.TemporaryDirectory() as out:
        table = Path(out) / "t.csv"
        t0 = time.perf_counter()
        r = subprocess.run([gem5, "-d", str(Path(out) / "m5out"), str(REPO / "gem5_configs" / "cxl_traffic.py"),
                            "--memory", memory, "--pattern", "random", "--rate", "200GiB/s", "--duration", duration,
                            "--csv", str(table)], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode:
            sys.exit(f"gem5 failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        with open(table) as f:
            row = next(csv.DictReader(f))
    reqs = float(row["reads"]) + float(row["writes"])
    return reqs, float(row["run_seconds"]), wall, float(row["read_gbps"])


def main() -> None:
    memory = sys.argv[1] if len(sys.argv) > 1 else "cxl-asic"
    duration = sys.argv[2] if len(sys.argv) > 2 else "1ms"
    gem5 = os.environ.get("GEM5")
    if not gem5 or not Path(gem5).is_file():
        print("skipped: set GEM5 to a gem5 binary built with this repository as EXTRAS")
        return
    reqs, host, wall, gbps = gem5_run(gem5, memory, duration)
    s = simcxl.load_preset(memory)
    n = max(int(reqs), 100000)
    t0 = time.perf_counter()
    ref = simcxl.traffic(s, threads=s.host.cores, requests=n).iloc[0]
    sa_wall = time.perf_counter() - t0
    print(f"workload: {memory}, random 64 B reads, device saturated")
    print(f"gem5:       {reqs:9.0f} requests, {gbps:5.1f} GB/s, {host:6.2f} s simulating "
          f"({wall:.2f} s process): {reqs / host:10.0f} requests/s ({reqs / wall:.0f})")
    print(f"standalone: {n:9d} requests, {ref['read_gbps']:5.1f} GB/s, {sa_wall:6.2f} s: "
          f"{n / sa_wall:10.0f} requests/s")
    print(f"standalone / gem5: {(n / sa_wall) / (reqs / host):.1f}x")


if __name__ == "__main__":
    main()
