"""Engine cost per simulated request as the fabric grows: one cxl-asic expander on one root port,
against the same expanders behind levels of switches (64 devices: 4 root ports, each to a switch
of 4 downstream ports, each to another switch of 4). Each tree is measured side by side
(alternating, so a busy machine slows all trees alike).

    .venv/bin/python benchmarks/fabric_scaling.py [--tree DIR ...] [--requests N] [--repeats K]

Each tree needs its compiled engine (simcxl/_core*.so) in place. The workload is ``simcxl bench``'s
(16 cores of random 64 B reads). Prints the marginal requests per wall second (a run of 2N
requests less one of N: building a large system and its report are not per-request costs, and
are printed apart), the same per second of the process's CPU time (steadier than wall time when
other jobs share the machine), events per simulated request, medians of the repeats, and the cost
per request relative to the single device.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from root_port_scaling import side_by_side

PROBE = r"""
import copy, json, sys, time
from simcxl import _core, topology
from simcxl.config import presets
from simcxl.config.groups import SwitchParams
from simcxl.topology.convert import core_graph
ports, fanout, levels, requests = (int(x) for x in sys.argv[1:5])
d = topology.from_system(presets.load("cxl-asic")).to_dict()
comps, conns = d["components"], d["connections"]
link, dev = comps.pop("cxl_link0"), comps.pop("cxl_dev0")
conns[:] = [c for c in conns if "cxl_link0" not in c["from"] + c["to"]]
up = dict(link, lanes=16)

def below(port, name, level):
    comps[name + "_link"] = copy.deepcopy(up if level < levels else link)
    conns.extend([{"from": port, "to": name + "_link.up"}, {"from": name + "_link.down", "to": name + ".up"}])
    if level == levels:
        comps[name] = copy.deepcopy(dev)
        return
    comps[name] = {"type": "switch", **SwitchParams(latency_ns=0.0).to_dict()}
    for j in range(fanout):
        below(f"{name}.dsp[{j}]", f"{name}_{j}", level + 1)

for i in range(ports):
    below(f"cxl.root_port[{i}]", f"p{i}", 0)
s = topology.memory_system(topology.load(d))

def bench(n):  # simcxl bench's run: it stops once 90% of the requests completed
    g = core_graph(s)
    w, c = time.perf_counter(), time.process_time()
    r = _core.run_traffic(g, 16, 1.0, "random", 1 << 34, n, 0.0, 0.0, False, None)
    return n - n // 10, time.perf_counter() - w, time.process_time() - c, r

# The marginal cost: a run of 2N requests less a run of N, so that building the
# system and its report (which grow with it) do not count as per-request cost.
(n1, w1, c1, _), (n2, w2, c2, r) = bench(requests), bench(2 * requests)
rps = (n2 - n1) / (w2 - w1)
devices = len([c for c in comps.values() if c["type"] == "type3"])
print(json.dumps({"rps": rps, "rps_cpu": (n2 - n1) / (c2 - c1), "events": r["events"] / n2, "gbps": r["read_gbps"],
                  "devices": devices, "fixed_s": w1 - n1 / rps}))
"""

# (root ports, switch fan-out, switch levels): one device, then 64 behind two levels of switches.
SHAPES = [(1, 1, 0), (4, 4, 1), (4, 4, 2)]


def measure(tree: Path, shape, requests: int) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, *map(str, shape), str(requests)], cwd="/", check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", type=Path, help="source tree (default: this repository)")
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    trees = a.tree or [Path(__file__).resolve().parents[1]]
    got = side_by_side(trees, SHAPES, lambda t, s: measure(t, s, a.requests), a.repeats)
    runs = {k: [r["rps"] for r in v] for k, v in got.items()}
    cpu = {k: statistics.median(r["rps_cpu"] for r in v) for k, v in got.items()}
    info = {k: v[-1] for k, v in got.items()}
    print(f"cxl-asic expanders, 16 cores of random 64 B reads, {a.requests:,} requests, median of {a.repeats}; "
          "switches with 0 ns traversal (the cost measured is the engine's, not the switch's latency)")
    print(f"{'tree':32s} {'root ports':>10s} {'levels':>6s} {'devices':>7s} {'M req/s':>8s} {'GB/s':>6s} "
          f"{'fixed s':>7s} {'cost vs 1 device':>17s} {'M req/CPU s':>11s} {'CPU cost':>8s} {'events/req':>10s}")
    for t in trees:
        base = statistics.median(runs[t, SHAPES[0]])
        for s in SHAPES:
            m = statistics.median(runs[t, s])
            print(f"{str(t):32s} {s[0]:10d} {s[2]:6d} {info[t, s]['devices']:7d} {m / 1e6:8.3f} "
                  f"{info[t, s]['gbps']:6.1f} {info[t, s]['fixed_s']:7.3f} {base / m:16.2f}x "
                  f"{cpu[t, s] / 1e6:11.3f} {cpu[t, SHAPES[0]] / cpu[t, s]:7.2f}x {info[t, s]['events']:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
