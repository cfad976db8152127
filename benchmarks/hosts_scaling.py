"""Engine speed with many hosts: 16 hosts, each on its own x16 root port to one switch whose four
downstream ports lead to four more switches of four, 16 cxl-asic MLDs (16 logical devices each,
one per host) below them, against one host on one cxl-asic expander. Every host runs random 64 B
reads (``simcxl.hosts``), 4 cores each with 16 hosts, 16 cores with one.

    .venv/bin/python benchmarks/hosts_scaling.py [--requests N] [--repeats K]

Prints the marginal simulated requests per wall second, summed over the hosts (a run of 2N of the
first host's requests less one of N, so building the system is not counted), median of the repeats.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time

from simcxl.engine import standalone as engine
from simcxl.config import presets
from simcxl import topology
from simcxl.config.groups import SwitchParams


def fabric(hosts: int, fanout: int = 4) -> dict:
    d = topology.from_system(presets.load("cxl-asic")).to_dict()
    comps, conns = d["components"], d["connections"]
    host, ddr, hb, link, dev = (comps.pop(n) for n in ("host", "local_dram", "cxl", "cxl_link0", "cxl_dev0"))
    comps.clear()
    conns.clear()
    for i in range(hosts):
        comps.update({f"h{i}": copy.deepcopy(host), f"h{i}_ddr": copy.deepcopy(ddr), f"h{i}_cxl": copy.deepcopy(hb),
                      f"h{i}_link": dict(link, lanes=16)})
        conns += [{"from": f"h{i}.local", "to": f"h{i}_ddr.up"},
                  {"from": f"h{i}.mem", "to": f"h{i}_cxl.up", "base": 1 << 32, "size": 1 << 38},
                  {"from": f"h{i}_cxl.root_port[0]", "to": f"h{i}_link.up"},
                  {"from": f"h{i}_link.down", "to": f"top.up[{i}]"}]
    comps["top"] = {"type": "switch", **SwitchParams().to_dict()}
    for j in range(fanout):
        comps[f"s{j}_link"] = dict(link, lanes=16)
        comps[f"s{j}"] = {"type": "switch", **SwitchParams().to_dict()}
        conns += [{"from": f"top.dsp[{j}]", "to": f"s{j}_link.up"}, {"from": f"s{j}_link.down", "to": f"s{j}.up"}]
        for k in range(fanout):
            n = f"d{j}_{k}"
            comps[n + "_link"] = copy.deepcopy(link)
            comps[n] = copy.deepcopy(dev)
            comps[n]["device"]["logical_devices"] = hosts
            conns += [{"from": f"s{j}.dsp[{k}]", "to": n + "_link.up"}, {"from": n + "_link.down", "to": n + ".up"}]
    return d


def rate(system, threads: int, requests: int) -> float:
    def one(n):
        t0 = time.perf_counter()
        df = engine.hosts(system, threads=threads, requests=n)
        wall = time.perf_counter() - t0
        return (df["read_gbps"] * df["window_ns"]).sum() / 64.0, wall
    r1, w1 = one(requests)
    r2, w2 = one(2 * requests)
    return (r2 - r1) / (w2 - w1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    shapes = {"1 host, 1 device": (presets.load("cxl-asic"), 16),
              "16 hosts, 16 MLDs, 2 switch levels": (topology.memory_system(topology.load(fabric(16))), 4)}
    runs = {k: [] for k in shapes}
    for _ in range(a.repeats):  # alternating, so a busy machine slows both alike
        for k, (s, threads) in shapes.items():
            runs[k].append(rate(s, threads, a.requests))
    print(f"random 64 B reads, {a.requests:,} requests of the first host, median of {a.repeats} "
          "(requests counted in the measurement window, summed over the hosts)")
    base = statistics.median(runs["1 host, 1 device"])
    for k, v in runs.items():
        m = statistics.median(v)
        print(f"{k:36s} {m / 1e6:7.3f} M req/s   cost per request {base / m:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
