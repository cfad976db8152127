"""RAO speedup of the CXL-NIC over the PCIe NIC (and over host-core atomics) per CircusTent kernel,
beside the published 5.5-40.2x (Cohet, Wang et al., HPCA 2026, arXiv:2511.23011), and how it moves
with the PCIe NIC's DMAs in flight (dma.engines) and the CXL-NIC's MSHRs (cache.mshrs).

    PYTHONPATH=. python benchmarks/rao_speedup.py [--threads 32] [--iters 1000] [--plot rao.png]

Simulated on the standalone engine, accelerator preset type1-asic, default NicParams."""

import argparse

import pandas as pd

from simcxl.workloads import nic


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", default="type1-asic")
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--elements", type=int, default=1 << 16)
    ap.add_argument("--plot", default=None)
    a = ap.parse_args()
    base = nic.load(a.system)
    df = nic.rao(base, threads=a.threads, iters=a.iters, elements=a.elements)
    sp = nic.speedup(df)
    piv = df.pivot_table(index=["kernel", "op"], columns="mechanism", values="ops_per_second", sort=False) / 1e6
    table = piv.join(sp.set_index(["kernel", "op"]))
    pd.set_option("display.width", 160)
    print(f"# {a.system}, {a.threads} threads x {a.iters} iterations, {a.elements} words; Mops/s and speedups")
    print(table.round(2).to_string())
    lo, hi = sp["cxl_over_pcie"].idxmin(), sp["cxl_over_pcie"].idxmax()
    print(f"CXL-NIC over PCIe NIC: {sp['cxl_over_pcie'].min():.2f}x ({'/'.join(sp.loc[lo, ['kernel', 'op']])}) to "
          f"{sp['cxl_over_pcie'].max():.2f}x ({'/'.join(sp.loc[hi, ['kernel', 'op']])}); "
          f"published {nic.PUBLISHED_SPEEDUP[0]}x to {nic.PUBLISHED_SPEEDUP[1]}x")
    if a.plot:
        nic.plot(df, a.plot)
    # Sensitivity: the PCIe NIC's DMAs in flight and the CXL-NIC's MSHRs, on rand/add and stride1/add.
    rows = []
    for k in ("rand", "stride1", "central"):
        for eng in (1, 4, 16, 64):
            s = base.replace(**{"dma.engines": eng})
            p = nic.rao(s, [k], ["add"], ["pcie-nic"], a.threads, a.iters // 4, a.elements)
            rows.append({"kernel": k, "knob": "dma.engines", "value": eng, "mops": p["ops_per_second"][0] / 1e6})
        for m in (4, 16, 64, 256):
            s = base.replace(**{"cache.mshrs": m, "nic.ops_in_flight": m})
            c = nic.rao(s, [k], ["add"], ["cxl-nic"], a.threads, a.iters // 4, a.elements)
            rows.append({"kernel": k, "knob": "cache.mshrs=nic.ops_in_flight", "value": m,
                         "mops": c["ops_per_second"][0] / 1e6})
    sens = pd.DataFrame(rows)
    print("# operation rate (Mops/s) against DMAs in flight (PCIe NIC) and MSHRs (CXL-NIC), add")
    print(sens.pivot_table(index=["knob", "value"], columns="kernel", values="mops", sort=False).round(2).to_string())


if __name__ == "__main__":
    main()
