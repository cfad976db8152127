"""Instructions per simulated request, counted by valgrind's callgrind (deterministic, unlike the CPU
time of a shared machine): one cxl-asic expander (``simcxl bench``'s 16 cores of random 64 B reads),
64 behind two levels of 0 ns switches (``fabric_scaling.py``'s largest shape), 16 hosts on 16
MLDs behind two switch levels (``hosts_scaling.py``: 4 cores each) and the same random reads on
local DDR5 (``simcxl bench --memory ddr-local``: its controller runs the adaptive page timer).

    .venv/bin/python benchmarks/instructions.py [--tree DIR ...] [--requests N] [--shape NAME ...]

The marginal count: a run of 2N requests less one of N (a host's N in the 16-host shape), so
Python's start-up and building the system do not count. The single device and the 64 stop once 90 %
of their requests completed; the 16-host run is divided by the requests its measurement window
holds (10 % to 90 % of the first host's, summed over the hosts), as ``hosts_scaling.py`` counts
them. Each tree needs its compiled engine (simcxl/_core*.so) in place. Slow: valgrind runs the
engine some 50 times slower (about 4 minutes at the defaults).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from fabric_scaling import PROBE as FABRIC

HOSTS = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from hosts_scaling import fabric
from simcxl import topology
from simcxl.engine import standalone as engine
df = engine.hosts(topology.memory_system(topology.load(fabric(16))), threads=4, requests=int(sys.argv[1]))
print(json.dumps({"requests": (df["read_gbps"] * df["window_ns"]).sum() / 64.0}))
"""

# simcxl bench's run on a preset, N and then 2N requests in one process, as FABRIC runs them.
BENCH = r"""
import json, sys
from simcxl import _core
from simcxl.config.presets import load
from simcxl.topology.convert import core_graph
for n in (int(sys.argv[2]), 2 * int(sys.argv[2])):
    _core.run_traffic(core_graph(load(sys.argv[1])), 16, 1.0, "random", 1 << 34, n, 0.0, 0.0, False, None)
print(json.dumps({}))
"""

SHAPES = {"1 expander": (1, 1, 0), "64 devices, 2 switch levels": (4, 4, 2), "16 hosts x 16 MLDs, 2 levels": None,
          "local DDR5 (ddr-local)": "ddr-local"}


def count(tree: Path, shape, n: int) -> tuple[float, float]:
    """(instructions, requests) of one run under callgrind."""
    here = str(Path(__file__).resolve().parent)
    if shape is None:
        args = ["-c", HOSTS, str(n), here]
    elif isinstance(shape, str):
        args = ["-c", BENCH, shape, str(n)]
    else:
        args = ["-c", FABRIC, *map(str, shape), str(n)]
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg.out", sys.executable, *args],
                             cwd=d, check=True, capture_output=True, text=True,
                             # No .pyc written: on a tree not yet imported from, the run of N would
                             # compile its modules and the run of 2N not, and the difference would
                             # lose the compiler's instructions (thousands a request).
                             env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0",
                                  "PYTHONDONTWRITEBYTECODE": "1"})
    ir = float(re.search(r"Collected : (\d+)", out.stderr).group(1))
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # FABRIC and BENCH run N and then 2N requests in one process, each stopping at 90 % done.
    return ir, got["requests"] if shape is None else (n - n // 10) + (2 * n - 2 * n // 10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", type=Path, help="source tree (default: this repository)")
    ap.add_argument("--requests", type=int, default=50_000, help="N (the 16-host shape: N / 10 per host)")
    ap.add_argument("--shape", action="append", choices=list(SHAPES), help="only these shapes (default: all); "
                    "the first one given is the base of the last column")
    a = ap.parse_args()
    shapes = {k: SHAPES[k] for k in a.shape} if a.shape else SHAPES
    trees = a.tree or [Path(__file__).resolve().parents[1]]
    print(f"instructions per request (callgrind, a run of 2N less one of N), N = {a.requests:,}")
    print(f"{'tree':32s} {'shape':30s} {'instructions/request':>21s} {'vs 1 expander':>14s}")
    for t in trees:
        base = None
        for name, shape in shapes.items():
            n = a.requests // 10 if shape is None else a.requests
            (i1, r1), (i2, r2) = count(t, shape, n), count(t, shape, 2 * n)
            per = (i2 - i1) / (r2 - r1)
            base = base or per
            print(f"{str(t):32s} {name:30s} {per:21,.0f} {per / base:13.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
