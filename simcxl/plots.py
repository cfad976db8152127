"""Plots of results. Every figure carries a caption saying what produced it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .engine import _version  # noqa: E402


def caption(df: pd.DataFrame) -> str:
    a = df.attrs
    cfg = ", ".join(f"{k}={v}" for k, v in a.get("config", {}).items())
    if "memory" in df.columns:
        mems = ", ".join(dict.fromkeys(df["memory"]))
    elif "system" in df.columns:
        mems = ", ".join(dict.fromkeys(df["system"]))
    else:
        mems = a.get("memory", "")
    return f"Simulated: SimCXL {a.get('simcxl', _version())} standalone engine; {a.get('workload', '')} on {mems}" \
           + (f" ({cfg})" if cfg else "")


def _finish(fig, ax, df, path, measured_note: Optional[str] = None) -> Path:
    text = caption(df)
    if measured_note:
        text += "\n" + measured_note
    fig.text(0.01, 0.005, text, fontsize=6.5, va="bottom", ha="left", wrap=True, color="0.3")
    fig.tight_layout(rect=(0, 0.06 if measured_note else 0.04, 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _size_label(b: float) -> str:
    for unit, s in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= s:
            v = b / s
            return f"{v:g}{unit}"
    return f"{int(b)}"


def lmbench(df: pd.DataFrame, path, measured: Optional[pd.DataFrame] = None,
            measured_note: Optional[str] = None) -> Path:
    """Latency vs working set on a log axis; optional measured curves dashed."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, (mem, g) in enumerate(df.groupby("memory", sort=False)):
        color = f"C{i}"
        ax.plot(g["working_set_bytes"], g["latency_ns"], marker="o", ms=3, color=color, label=f"{mem} (simulated)")
        if measured is not None:
            m = measured[measured["memory"] == mem]
            if len(m):
                ax.plot(m["working_set_bytes"], m["latency_ns"], ls="--", color=color, alpha=0.7,
                        label=f"{mem} (measured)")
    ax.set_xscale("log", base=2)
    ticks = [t for t in (1 << k for k in range(9, 41, 2)) if df["working_set_bytes"].min() / 2 <= t
             <= df["working_set_bytes"].max() * 2]
    ax.set_xticks(ticks)
    ax.set_xticklabels([_size_label(t) for t in ticks])
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("load-to-use latency (ns)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("lat_mem_rd: dependent random loads")
    return _finish(fig, ax, df, path, measured_note)


def stream(df: pd.DataFrame, path, measured: Optional[pd.DataFrame] = None,
           measured_note: Optional[str] = None) -> Path:
    """STREAM bandwidth (STREAM's byte counting) per kernel and memory."""
    mems = list(dict.fromkeys(df["memory"]))
    kernels = list(dict.fromkeys(df["kernel"]))
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    width = 0.8 / max(1, len(mems))
    for i, mem in enumerate(mems):
        g = df[df["memory"] == mem].set_index("kernel").reindex(kernels)
        xs = [k + i * width for k in range(len(kernels))]
        ax.bar(xs, g["stream_gbps"], width * (0.55 if measured is not None else 0.9), color=f"C{i}",
               label=f"{mem} (simulated)")
        if measured is not None:
            m = measured[measured["memory"] == mem].set_index("kernel").reindex(kernels)
            ax.bar([x + width * 0.5 for x in xs], m["bandwidth_gbps"], width * 0.35, color=f"C{i}", alpha=0.45,
                   hatch="//", label=f"{mem} (measured)")
    ax.set_xticks([k + width * (len(mems) - 1) / 2 for k in range(len(kernels))])
    ax.set_xticklabels(kernels)
    ax.set_ylabel("bandwidth (GB/s, STREAM counting)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("STREAM")
    return _finish(fig, ax, df, path, measured_note)


def loaded_latency(df: pd.DataFrame, path) -> Path:
    """Probe latency against delivered bandwidth, one curve per memory and read fraction."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, ((mem, rf), g) in enumerate(df.groupby(["memory", "read_fraction"], sort=False)):
        g = g.sort_values("bandwidth_gbps")
        ax.plot(g["bandwidth_gbps"], g["latency_ns"], marker="o", ms=3, color=f"C{i}",
                label=f"{mem}, reads {rf:.0%}")
    ax.set_xlabel("bandwidth (GB/s, reads + writes)")
    ax.set_ylabel("probe latency (ns)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Loaded latency")
    return _finish(fig, ax, df, path)


def breakdown(long: pd.DataFrame, path, by: Sequence[str] = ("memory",), title: str = "Where a miss spends its time",
              source: Optional[pd.DataFrame] = None) -> Path:
    """Stacked bars of mean time per stage."""
    piv = long.pivot_table(index=list(by), columns="stage", values="ns", aggfunc="mean", sort=False)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    piv.plot.barh(stacked=True, ax=ax, width=0.7)
    ax.set_xlabel("ns per request")
    ax.set_ylabel("")
    ax.legend(fontsize=7, ncol=4, loc="lower right")
    ax.set_title(title)
    return _finish(fig, ax, source if source is not None else long, path)


def sweep(df: pd.DataFrame, path, x: str, y: str, hue: Optional[str] = None, z: Optional[str] = None,
          title: str = "") -> Path:
    """Lines of y over x (one per hue value), or a heatmap of z over (x, y)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    if z:
        piv = df.pivot_table(index=y, columns=x, values=z, aggfunc="mean").sort_index(ascending=False)
        im = ax.imshow(piv.values, aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(piv.columns)))
        ax.set_xticklabels([f"{v:g}" if isinstance(v, float) else str(v) for v in piv.columns], fontsize=8)
        ax.set_yticks(range(len(piv.index)))
        ax.set_yticklabels([f"{v:g}" if isinstance(v, float) else str(v) for v in piv.index], fontsize=8)
        vals = piv.values
        lo, hi = float(np.nanmin(vals)), float(np.nanmax(vals))
        for (i, j), v in np.ndenumerate(vals):
            light = hi > lo and (v - lo) / (hi - lo) > 0.6
            ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7, color="k" if light else "w")
        fig.colorbar(im, ax=ax, label=z)
    else:
        groups = df.groupby(hue, sort=True) if hue else [(None, df)]
        for i, (h, g) in enumerate(groups):
            g = g.groupby(x, sort=True)[y].mean()
            ax.plot(g.index, g.values, "o-", ms=4, color=f"C{i % 10}", label=None if h is None else f"{hue} = {h}")
        if hue:
            ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.set_ylabel(y)
    ax.set_xlabel(x)
    if z:
        ax.set_ylabel(y)
    ax.set_title(title)
    engine = df["engine"].iloc[0] if "engine" in df.columns and len(df) else "standalone"
    version = df["simcxl"].iloc[0] if "simcxl" in df.columns and len(df) else _version()
    fig.text(0.01, 0.005, f"Simulated: SimCXL {version} {engine} engine, sweep of {len(df)} points "
             f"(base {df['base'].iloc[0] if 'base' in df.columns and len(df) else '?'}).", fontsize=6.5, color="0.3")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def dma_vs_cache(df: pd.DataFrame, path) -> Path:
    """Latency and bandwidth of DMA and CXL.cache over transfer sizes (log axes)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4.2))
    for mech, g in df.groupby("mechanism", sort=False):
        g = g.sort_values("transfer_bytes")
        style = "-o" if mech == "dma" else "-s"
        a1.plot(g["transfer_bytes"], g["latency_ns"], style, label=mech, ms=4)
        a2.plot(g["transfer_bytes"], g["bandwidth_gbps"], style, label=mech, ms=4)
    for ax, yl, title in ((a1, "latency (ns)", "One transfer, idle system"),
                          (a2, "bandwidth (GB/s)", "Transfers back to back")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("transfer size (bytes)")
        ax.set_ylabel(yl)
        ax.set_title(title, fontsize=10)
        ticks = sorted(df["transfer_bytes"].unique())
        ax.set_xticks(ticks)
        ax.set_xticklabels([_size_label(t) for t in ticks], rotation=45, fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    return _finish(fig, a1, df, path)


def accel_breakdown(df: pd.DataFrame, path) -> Path:
    """Mean time per stage of an accelerator access, one bar per run."""
    from .coherent import STAGES
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    labels = [f"{r.get('system', '')}" for _, r in df.iterrows()]
    bottom = np.zeros(len(df))
    for st in STAGES:
        col = f"stage_{st}_ns"
        if col not in df.columns or not df[col].any():
            continue
        ax.bar(labels, df[col], bottom=bottom, label=st)
        bottom += df[col].to_numpy()
    ax.set_ylabel("mean time per access (ns)")
    ax.set_title("Where an accelerator access spends its time", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    return _finish(fig, ax, df, path)
