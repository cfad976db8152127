"""CXL.cache devices behind a switch: the figures of docs/tutorials/switches.md.

    .venv/bin/python benchmarks/switch_cache.py

The systems are examples/topologies/switch-accel.toml with 1, 2, 4 or 8 type1-asic devices below its
switch (tests/test_switch_cache.py's helpers), every link Gen5 x16 unless the upstream link's lanes
are changed.

1. one idle load miss by dev0 (the others idle), against the same device on its own root port;
2. every device streaming RdCurr misses (16 requesters x 8 deep each, 20,000 lines each over 64 MiB)
   behind an x4, x8 and x16 upstream link, against the flit-rate bound of the upstream link
   (one 9-half-slot data message per line), and the same devices each on a root port of its own.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from simcxl.workloads import coherent  # noqa: E402
from test_switch_cache import graph, system, with_devices  # noqa: E402


def idle() -> dict:
    kw = dict(requesters=1, depth=1, requests=1, footprint="64m")
    direct = coherent.accel("type1-asic", **kw).iloc[0]["latency_mean_ns"]
    behind = coherent.accel(system(graph()), devices={"dev1": {"requesters": 0}}, **kw).iloc[0]
    return {"direct_ns": direct, "behind_switch_ns": behind["dev0.latency_mean_ns"],
            "extra_ns": behind["dev0.latency_mean_ns"] - direct, "switch_stage_ns": behind["dev0.stage_switch_ns"]}


def streams() -> pd.DataFrame:
    kw = dict(op="rdcurr", requesters=16, depth=8, requests=20_000, footprint="64m")
    rows = []
    for n in (1, 2, 4, 8):
        for lanes in (4, 8, 16):
            bound = 32e9 * lanes * 128 / 130 / 8 / 68 * 8 / 9 * 64 / 1e9
            r = coherent.accel(system(with_devices(graph(up_link={"lanes": lanes}), n)), **kw).iloc[0]
            per = [r[f"dev{i}.bandwidth_gbps"] for i in range(n)] if n > 1 else [r["bandwidth_gbps"]]
            rows.append({"devices": n, "up_link_lanes": lanes, "gbps": r["bandwidth_gbps"], "bound_gbps": bound,
                         "of_bound": r["bandwidth_gbps"] / bound, "min_device_gbps": min(per),
                         "max_device_gbps": max(per), "latency_ns": r["latency_mean_ns"]})
        own = coherent.load("type1-asic").replace(**{"accel.devices": n})
        r = coherent.accel(own, **kw).iloc[0]
        rows.append({"devices": n, "up_link_lanes": "own root ports", "gbps": r["bandwidth_gbps"],
                     "latency_ns": r["latency_mean_ns"]})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    pd.set_option("display.width", 160)
    print("idle load miss:", {k: round(v, 3) for k, v in idle().items()})
    print(streams().round(3).to_string(index=False))
