"""What the SimCXL wrappers cost gem5: host time per simulated request through the CXL host bridge
and a Type-3 expander (the core's timing) against gem5's own memories on the same workload (NULL ISA
TestBoard, random 64 B reads at a load all serve in full): a SimpleMemory with the same mean latency
(a fixed delay: the cheapest memory gem5 has) and one DDR4-2400 channel (gem5's DRAM controller, a
model of the same kind as the expander's media).

    GEM5=/path/to/gem5.opt .venv/bin/python benchmarks/gem5_overhead.py [--memory cxl-asic]
        [--rate 8GiB/s] [--duration 2ms] [--repeats 3]

The CXL run goes first and gives the mean read latency the SimpleMemory is set to. Then the two
alternate (a busy machine slows both alike); each figure is the wall time of gem5's simulation loop
(`run_seconds`, without start-up and configuration) per request, median of the repeats, and the
ratio of the medians. Skips (exit status 0, with the reason) when GEM5 names no gem5 binary.
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(gem5: str, memory: str, rate: str, duration: str, *extra: str) -> dict:
    with tempfile.TemporaryDirectory() as out:
        table = Path(out) / "t.csv"
        r = subprocess.run([gem5, "-d", str(Path(out) / "m5out"), str(REPO / "gem5_configs" / "cxl_traffic.py"),
                            "--memory", memory, "--pattern", "random", "--rate", rate, "--duration", duration,
                            "--csv", str(table), *extra], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"gem5 failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        with open(table) as f:
            return {k: (float(v) if k not in ("memory", "pattern", "rate") else v)
                    for k, v in next(csv.DictReader(f)).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memory", default="cxl-asic")
    ap.add_argument("--rate", default="8GiB/s")
    ap.add_argument("--duration", default="2ms")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    gem5 = os.environ.get("GEM5")
    if not gem5 or not Path(gem5).is_file():
        print("skipped: set GEM5 to a gem5 binary built with this repository as EXTRAS")
        return
    cxl = [run(gem5, a.memory, a.rate, a.duration)]
    lat = cxl[0]["read_latency_ns"]
    simple_args = ("--simple-latency", f"{lat:.0f}ns", "--simple-bandwidth", "256GiB/s")
    simple, ddr4 = [], []
    for i in range(a.repeats):
        simple.append(run(gem5, "gem5-simple", a.rate, a.duration, *simple_args))
        ddr4.append(run(gem5, "gem5-ddr4", a.rate, a.duration))
        if i:
            cxl.append(run(gem5, a.memory, a.rate, a.duration))

    def per_req(rows):
        return [r["run_seconds"] / (r["reads"] + r["writes"]) * 1e6 for r in rows]

    def line(what, rows):
        t = per_req(rows)
        print(f"{what}: {rows[0]['reads']:.0f} reads, {rows[0]['read_gbps']:.2f} GB/s, mean read "
              f"{rows[0]['read_latency_ns']:.1f} ns; {statistics.median(t):.3f} us of host time per request "
              f"(min {min(t):.3f}, max {max(t):.3f})")
        return statistics.median(t)

    print(f"workload: random 64 B reads at {a.rate} for {a.duration} (NULL ISA TestBoard), {a.repeats} runs each")
    c = line(f"{a.memory} through SimCXL", cxl)
    s = line(f"gem5 SimpleMemory at {lat:.0f} ns", simple)
    d = line("gem5 DDR4-2400, one channel", ddr4)
    print(f"SimCXL / SimpleMemory: {c / s:.2f}x per request; SimCXL / DDR4-2400: {c / d:.2f}x")


if __name__ == "__main__":
    main()
