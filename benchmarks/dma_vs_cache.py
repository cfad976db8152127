"""DMA versus CXL.cache at cache-line granularity, and what the gap depends on.

Prints, for each accelerator preset and a few variations, the latency and
bandwidth of a 64 B transfer by each mechanism, the reduction and gain of
CXL.cache, and the transfer size from which DMA's bandwidth (and latency)
overtakes per-line CXL.cache. Published for comparison (the study behind the
CXL.cache design of this project): 68 % lower latency and 14.4x the bandwidth
at a cache line. All figures here are simulations of the stated configuration.

    .venv/bin/python benchmarks/dma_vs_cache.py
"""

import time

from simcxl.workloads import coherent

VARIANTS = (
    ("preset", {}),
    ("4 descriptors in flight", {"dma.engines": 4}),
    ("MSI-X completion", {"dma.interrupt": 1}),
    ("16 device MSHRs", {"cache.mshrs": 16}),
)
SIZES = [64 << k for k in range(0, 15, 2)]


def main() -> None:
    print(f"{'preset':11s} {'variation':24s} {'DMA ns':>7s} {'cache ns':>8s} {'DMA GB/s':>8s} {'cache GB/s':>10s}"
          f" {'lat cut':>7s} {'bw gain':>7s} {'DMA bw wins from':>16s} {'DMA lat wins from':>17s}")
    t0 = time.time()
    for preset in ("type1-asic", "type1-fpga"):
        for label, kw in VARIANTS:
            s = coherent.load(preset).replace(**kw)
            df = coherent.dma_vs_cache(s, SIZES)
            sm = coherent.dma_vs_cache_summary(df)
            d = df.set_index(["transfer_bytes", "mechanism"])
            bw, lat = sm["dma_bandwidth_overtakes_at_bytes"], sm["dma_latency_overtakes_at_bytes"]
            print(f"{preset:11s} {label:24s} {d.loc[(64, 'dma'), 'latency_ns']:7.0f} "
                  f"{d.loc[(64, 'cxl.cache'), 'latency_ns']:8.0f} {d.loc[(64, 'dma'), 'bandwidth_gbps']:8.2f} "
                  f"{d.loc[(64, 'cxl.cache'), 'bandwidth_gbps']:10.2f} {sm['latency_reduction_pct']:6.0f}% "
                  f"{sm['bandwidth_gain']:6.1f}x {str(bw) + ' B' if bw else 'never':>16s} "
                  f"{str(lat) + ' B' if lat else 'never':>17s}")
    print(f"(published: 68% and 14.4x at 64 B; {time.time() - t0:.1f} s of simulation)")


if __name__ == "__main__":
    main()
