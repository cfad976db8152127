"""Points per second of a 1000-point standalone sweep (short traffic runs),
with 1 and 2 local worker processes.

    .venv/bin/python benchmarks/sweep_speed.py
"""

import tempfile
import time

from simcxl.sweep import spec as sw

SPEC = {
    "base": "cxl-asic",
    "workload": {"kind": "traffic", "threads": 2, "requests": 1000},
    "axes": [{"param": "cxl.device.req_latency_ns", "values": [10 + i for i in range(500)]},
             {"param": "workload.read_fraction", "values": [1.0, 0.5]}],
    "metrics": ["read_gbps", "read_latency_ns_mean"],
}


def main() -> None:
    s = sw.Sweep.from_dict(SPEC)
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            df = sw.run(s, out, workers=workers)
            wall = time.perf_counter() - t0
        print(f"{len(df)} points, {workers} worker(s): {wall:.1f} s, {len(df) / wall:.0f} points/s")


if __name__ == "__main__":
    main()
