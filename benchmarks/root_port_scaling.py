"""Engine cost per simulated request as root ports grow, for one or more
source trees measured side by side (alternating, so a busy machine slows all
trees alike).

    .venv/bin/python benchmarks/root_port_scaling.py [--tree DIR ...] [--requests N] [--repeats K]

Each tree needs its compiled engine (simcxl/_core*.so) in place. The workload
is ``simcxl bench``'s: 16 cores of random 64 B reads on cxl-asic, here with
cxl.bridge.root_ports = cxl.bridge.interleave_ways = N (one expander per port). Prints
requests per wall second (median of the repeats) and the cost per request
relative to one port.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import json, sys, time
from simcxl.config import presets
from simcxl.engine import standalone as engine
n, requests = int(sys.argv[1]), int(sys.argv[2])
s = presets.load("cxl-asic").replace(**{"cxl.bridge.root_ports": n, "cxl.bridge.interleave_ways": n})
r = engine.bench(requests, s)
print(json.dumps({"rps": r["requests_per_second"], "gbps": r["simulated_bandwidth_gbps"]}))
"""


def measure(tree: Path, ports: int, requests: int) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(ports), str(requests)], cwd="/", check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout)


def side_by_side(trees, cases, measure, repeats: int) -> dict:
    """{(tree, case): [measure(tree, case), ...]}, `repeats` each, alternating trees and cases so
    that a busy machine slows them all alike."""
    runs = {(t, c): [] for t in trees for c in cases}
    for _ in range(repeats):
        for c in cases:
            for t in trees:
                runs[t, c].append(measure(t, c))
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", type=Path, help="source tree (default: this repository)")
    ap.add_argument("--ports", default="1,2,4,8,16")
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    trees = a.tree or [Path(__file__).resolve().parents[1]]
    ports = [int(p) for p in a.ports.split(",")]
    got = side_by_side(trees, ports, lambda t, p: measure(t, p, a.requests), a.repeats)
    runs = {k: [r["rps"] for r in v] for k, v in got.items()}
    gbps = {k: v[-1]["gbps"] for k, v in got.items()}
    print(f"cxl-asic, 16 cores of random 64 B reads, {a.requests:,} requests, median of {a.repeats}")
    print(f"{'tree':40s} {'ports':>5s} {'M req/s':>8s} {'GB/s':>6s} {'cost vs 1 port':>15s}")
    for t in trees:
        base = statistics.median(runs[t, ports[0]])
        for p in ports:
            m = statistics.median(runs[t, p])
            print(f"{str(t):40s} {p:5d} {m / 1e6:8.3f} {gbps[t, p]:6.1f} {base / m:14.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
