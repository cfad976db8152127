"""Remote atomics in gem5 (gem5_configs/cxl_nic_se.py) beside the standalone
engine: the CXL-NIC and the PCIe NIC, FETCH_ADD over the gem5 guest's kernels,
4 host threads (O3 cores at 3 GHz), rings of 8 entries announced 4 at a time,
200 operations a thread, type1-asic (PCIe NIC: its DMA engine's defaults, one
operation in flight).

    GEM5=/path/to/build/X86/gem5.opt .venv/bin/python benchmarks/gem5_nic.py [--csv out.csv]

Skips (exit status 0, with the reason) when GEM5 does not name a gem5 binary.
"""

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from simcxl.gem5 import nic as gem5_nic

RINGS = {"ring_entries": 8, "descriptors_per_line": 2, "completions_per_line": 4, "post_batch": 4}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=None)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--ops", type=int, default=200)
    args = ap.parse_args()
    gem5 = os.environ.get("GEM5")
    if not gem5 or not Path(gem5).is_file():
        print("skipped: GEM5 must name a gem5 binary built for X86 with this repository as EXTRAS")
        return 0
    rows = []
    for kernel in gem5_nic.KERNELS:
        for mech in ("cxl-nic", "pcie-nic"):
            g = gem5_nic.run("type1-asic", RINGS, threads=args.threads, ops=args.ops, kernel=kernel, mechanism=mech,
                             cpu="o3", gem5=gem5)
            s = gem5_nic.standalone("type1-asic", RINGS, threads=args.threads, ops=args.ops, kernel=kernel,
                                    mechanism=mech)
            ok = g["check"]["sum"] == args.threads * args.ops
            rows.append({"kernel": kernel, "mechanism": mech, "gem5_mops": g["ops_per_second"] / 1e6,
                         "standalone_mops": s["ops_per_second"] / 1e6, "gem5_latency_ns": g["latency_ns"],
                         "standalone_latency_ns": s["latency_ns"], "results_correct": ok})
    df = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print(df.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    for engine in ("gem5", "standalone"):
        t = df.pivot(index="kernel", columns="mechanism", values=f"{engine}_mops")
        print(f"{engine}: CXL-NIC over PCIe NIC: " +
              ", ".join(f"{k} {t.loc[k, 'cxl-nic'] / t.loc[k, 'pcie-nic']:.1f}x" for k in t.index))
    if args.csv:
        df.to_csv(args.csv, index=False)
    return 0 if df["results_correct"].all() else 1


if __name__ == "__main__":
    sys.exit(main())
