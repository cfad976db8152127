"""The main job: LMbench and STREAM on the four presets, next to the
published measurements of the testbed they are shaped after."""

from __future__ import annotations

import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Optional, Tuple

import click
import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ..engine import standalone as engine  # noqa: E402
from . import plots  # noqa: E402
from ..engine.progress import kept, progress_bar  # noqa: E402

MEMORIES = ("ddr-local", "ddr-remote", "cxl-asic", "cxl-fpga")
# The curve, and in the table one working set per plateau of the Sapphire
# Rapids host: L1, L2, LLC, the LLC-to-memory transition, and memory.
SIZES = (16 << 10, 32 << 10, 128 << 10, 512 << 10, 768 << 10, 2 << 20, 4 << 20, 16 << 20, 64 << 20, 128 << 20,
         256 << 20, 1 << 30)
TABLE_SIZES = (32 << 10, 768 << 10, 16 << 20, 128 << 20, 1 << 30)
KERNELS = ("copy", "triad")
#: The testbed the presets are calibrated on, shipped inside the package (not the working directory).
TESTBED = Path(__file__).parents[1] / "testbeds" / "spr-cxl-dmsim"
QUICK_SIZES = (32 << 10, 128 << 20)


def read_testbed(folder: Path) -> Tuple[Optional[pd.DataFrame], Optional[pd.DataFrame], str]:
    """The lat_mem_rd and STREAM tables of a testbed folder, and its citation."""
    lat = folder / "lat_mem_rd.csv"
    st = folder / "stream.csv"
    if not lat.exists() or not st.exists():
        return None, None, ""
    cite = ""
    toml = folder / "testbed.toml"
    if toml.exists():
        # The citation is the leading comment block, after its first line.
        head = []
        for ln in toml.read_text().splitlines():
            if not ln.startswith("#"):
                break
            head.append(ln[1:].strip())
        cite = " ".join(ln for ln in head[1:] if ln)
    return pd.read_csv(lat), pd.read_csv(st), cite


def run(out: Path, testbed: Path = TESTBED, quick: bool = False) -> None:
    """``quick``: two working sets, 500 loads and a small STREAM, to check a set-up in seconds."""
    meas_lat, meas_st, cite = read_testbed(testbed)
    sizes, accesses, lines = (QUICK_SIZES, 500, 500) if quick else (SIZES, 5000, 8000)
    table_sizes = [s for s in TABLE_SIZES if s in sizes]
    # lat_mem_rd's cache outcomes depend on the host alone, which the four presets share: the
    # host's caches are walked once (each working set in a thread of its own), and each memory's
    # timed runs replay them, as they would their own walk. Then one memory per process.
    cache = engine._core.WarmCache(len(sizes))
    results = {}
    with progress_bar("demo: simulating") as cb:
        engine.lmbench(MEMORIES[0], sizes, accesses=accesses, cache=cache, progress=lambda f: cb(f / 2))
        jobs = [(m, sizes, accesses, lines, {k: _stores(meas_st, m, k) for k in KERNELS}, cache) for m in MEMORIES]
        with ProcessPoolExecutor(max_workers=max(1, min(len(jobs), engine.usable_cpus()))) as pool:
            futures = {pool.submit(_memory, *j): j[0] for j in jobs}
            for f in as_completed(futures):
                results[futures[f]] = f.result()
                cb(0.5 + len(results) / len(jobs) / 2)
    lat_frames = [results[m][0] for m in MEMORIES]
    st_frames = [x for m in MEMORIES for x in results[m][1]]
    lat = pd.concat(lat_frames, ignore_index=True)
    lat.attrs = lat_frames[0].attrs
    st = pd.concat(st_frames, ignore_index=True)
    st.attrs = st_frames[0].attrs

    rows = []
    for _, r in lat[lat["working_set_bytes"].isin(table_sizes)].iterrows():
        rows.append({"memory": r["memory"], "metric": f"latency {plots._size_label(r['working_set_bytes'])} (ns)",
                     "simulated": r["latency_ns"],
                     "measured": _lookup(meas_lat, r["memory"], "working_set_bytes", r["working_set_bytes"],
                                         "latency_ns")})
    for _, r in st.iterrows():
        rows.append({"memory": r["memory"], "metric": f"STREAM {r['kernel']} (GB/s)", "simulated": r["stream_gbps"],
                     "measured": _lookup(meas_st, r["memory"], "kernel", r["kernel"], "bandwidth_gbps")})
    tab = pd.DataFrame(rows)
    tab["error_%"] = (tab["simulated"] - tab["measured"]) / tab["measured"] * 100
    out.mkdir(parents=True, exist_ok=True)
    tab.to_csv(out / "demo.csv", index=False)
    kept(lambda: f"kept {out / 'demo.csv'}")

    wide = tab.pivot_table(index="metric", columns="memory", values=["simulated", "measured"], sort=False)
    wide = wide.reindex(columns=MEMORIES, level=1)
    click.echo(f"\nSimCXL standalone engine, presets calibrated on the spr-cxl-dmsim testbed "
               "(fitted: the 1 GiB latency and STREAM copy; every other figure is a prediction)"
               + (f"\ncompared with: {testbed if testbed != TESTBED else 'spr-cxl-dmsim (shipped with simcxl)'}"
                  if meas_lat is not None else "\nno measurements to compare with")
               + ("\n--quick: 2 working sets (32K, 128M), 500 loads each, STREAM 500 lines per thread; not the demo's figures"
                  if quick else ""))
    click.echo(wide["simulated"].to_string(float_format=lambda v: f"{v:8.1f}"))
    if meas_lat is not None:
        click.echo(f"\nMeasured on silicon ({cite or testbed}):")
        click.echo(wide["measured"].to_string(float_format=lambda v: f"{v:8.1f}"))
        err = tab.pivot_table(index="metric", columns="memory", values="error_%", sort=False)
        err = err.reindex(columns=MEMORIES)
        click.echo("\nError of the simulation (%):")
        click.echo(err.to_string(float_format=lambda v: f"{v:+8.1f}"))
    for _, r in st[st["stores"] != "write-allocate"].iterrows():
        click.echo(f"({r['memory']} STREAM {r['kernel']}: simulated with {r['stores']} stores, as the testbed marks "
                   "its measurement)")

    bd = engine.breakdown(lat[lat["working_set_bytes"] == max(sizes)])
    piv = bd.pivot_table(index="memory", columns="stage", values="ns", sort=False)[list(engine.STAGES)]
    piv = piv.loc[:, (piv != 0).any()]  # the stages a host's memory request passes through
    click.echo(f"\nWhere a {plots._size_label(max(sizes))}-working-set miss spends its time (ns, mean per request):")
    click.echo(piv.reindex(MEMORIES).to_string(float_format=lambda v: f"{v:7.1f}"))

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.4), gridspec_kw={"width_ratios": [1.25, 1]})
    markers = "os^D"
    for i, (mem, g) in enumerate(lat.groupby("memory", sort=False)):
        axes[0].plot(g["working_set_bytes"], g["latency_ns"], "-", marker=markers[i % 4], ms=4, color=f"C{i}",
                     label=f"{mem} simulated")
        if meas_lat is not None:
            mm = meas_lat[meas_lat["memory"] == mem]
            axes[0].plot(mm["working_set_bytes"], mm["latency_ns"], "--", marker="x", ms=4, color=f"C{i}",
                         alpha=0.7, label=f"{mem} measured")
    axes[0].set_xscale("log", base=2)
    axes[0].set_yscale("log")
    ticks = [1 << k for k in range(10, 31, 2)]
    axes[0].set_xticks(ticks)
    axes[0].set_xticklabels([plots._size_label(t) for t in ticks], fontsize=8)
    axes[0].yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axes[0].set_xlabel("working set (bytes)")
    axes[0].set_ylabel("load-to-use latency (ns, log scale)")
    axes[0].set_title("lat_mem_rd (random): the memories share one host, so they\ncoincide until the working set "
                      "leaves the LLC", fontsize=9)
    axes[0].grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8, ncol=2, loc="upper left")
    width = 0.2
    for i, mem in enumerate(MEMORIES):
        g = st[st["memory"] == mem].set_index("kernel").reindex(KERNELS)
        xs = [k + i * width for k in range(len(KERNELS))]
        axes[1].bar(xs, g["stream_gbps"], width * 0.6, color=f"C{i}", label=f"{mem} simulated")
        if meas_st is not None:
            mm = meas_st[meas_st["memory"] == mem].set_index("kernel").reindex(KERNELS)
            axes[1].bar([x + width * 0.55 for x in xs], mm["bandwidth_gbps"], width * 0.35, color=f"C{i}",
                        alpha=0.4, hatch="//", label=f"{mem} measured")
    axes[1].set_xticks([k + 1.5 * width for k in range(len(KERNELS))])
    axes[1].set_xticklabels(KERNELS)
    axes[1].set_ylabel("GB/s (STREAM counting)")
    axes[1].set_title("STREAM, 16 threads", fontsize=9)
    axes[1].grid(True, axis="y", alpha=0.3)
    axes[1].set_ylim(0, max(st["stream_gbps"].max(), meas_st["bandwidth_gbps"].max() if meas_st is not None else 0)
                     * 1.5)
    axes[1].legend(fontsize=8, ncol=2, loc="upper center")
    note = (f"Simulated: SimCXL {engine._version()} standalone engine, presets {', '.join(MEMORIES)} "
            f"(lmbench {accesses} timed loads per size; STREAM 16 threads, {lines} lines per thread).")
    if meas_lat is not None:
        note += f" Measured (dashed with x / hatched): {cite or testbed}"
    fig.text(0.01, 0.005, "\n".join(textwrap.wrap(note, 200)), fontsize=7, color="0.3", va="bottom")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    png = out / "demo.png"
    fig.savefig(png, dpi=130)
    plt.close(fig)
    click.echo(f"\nwrote {png} and {out / 'demo.csv'}")
    _cxl_cache(out)


def _cxl_cache(out: Path) -> None:
    """The CXL.cache half: a Type-1 accelerator reading host buffers by DMA and by CXL.cache."""
    from . import coherent
    df = coherent.dma_vs_cache("type1-asic", [64, 4096, 65536, 1 << 20])
    sm = coherent.dma_vs_cache_summary(df)
    click.echo("\nCXL.cache accelerator (type1-asic preset, simulated): a device reads a host buffer")
    wide = df.pivot_table(index="transfer_bytes", columns="mechanism", values=["latency_ns", "bandwidth_gbps"])
    click.echo(wide.to_string(float_format=lambda v: f"{v:10.2f}"))
    over = sm["dma_bandwidth_overtakes_at_bytes"]
    click.echo(f"At 64 B CXL.cache cuts latency by {sm['latency_reduction_pct']:.0f}% and moves "
               f"{sm['bandwidth_gain']:.0f}x the bandwidth of DMA (published: 68% and 14.4x); "
               + (f"DMA's bandwidth overtakes from {over} B transfers." if over else "DMA never overtakes."))
    png = out / "dma_vs_cache.png"
    from . import plots
    plots.dma_vs_cache(df, png)
    click.echo(f"wrote {png}")


def _memory(m: str, sizes, accesses: int, lines: int, stores: dict, cache=None):
    """One memory's lat_mem_rd curve (its host's walks from ``cache`` where there) and STREAM kernels,
    each kernel with the stores its measurement was taken with (the testbed's stores column)."""
    lat = engine.lmbench(m, sizes, accesses=accesses, cache=cache)
    st = [engine.stream(m, [k], threads=16, lines_per_thread=lines, stores=stores[k]).assign(stores=stores[k])
          for k in KERNELS]
    return lat, st


def _stores(meas: Optional[pd.DataFrame], mem: str, kernel: str) -> str:
    if meas is None or "stores" not in meas:
        return "write-allocate"
    m = meas[(meas["memory"] == mem) & (meas["kernel"] == kernel)]["stores"].dropna()
    return str(m.iloc[0]) if len(m) else "write-allocate"


def _lookup(df: Optional[pd.DataFrame], mem: str, key: str, val, col: str) -> float:
    if df is None:
        return float("nan")
    m = df[(df["memory"] == mem) & (df[key] == val)]
    return float(m[col].iloc[0]) if len(m) else float("nan")
