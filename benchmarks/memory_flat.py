"""A long run keeps memory flat: peak RSS after 1 million and after N million
simulated requests (default 100) of the same workload.

    .venv/bin/python benchmarks/memory_flat.py [millions]
"""

import resource
import sys
import time

import simcxl


def main(millions: float = 100.0) -> None:
    system = simcxl.load_preset("cxl-asic")
    for n in (1_000_000, int(millions * 1_000_000)):
        t0 = time.perf_counter()
        r = simcxl.traffic(system, threads=16, read_fraction=0.7, requests=n).iloc[0]
        wall = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{n:>12,} requests: {wall:7.1f} s, peak RSS {rss:7.1f} MiB, transaction pool "
              f"{int(r['txn_pool_size'])}, {r['total_gbps']:.1f} GB/s simulated")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 100.0)
