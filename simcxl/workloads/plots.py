"""Plots of results. Every figure carries a caption saying what produced it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..engine.standalone import _version  # noqa: E402


def caption(df: pd.DataFrame) -> str:
    a = df.attrs
    cfg = ", ".join(f"{k}={v}" for k, v in a.get("config", {}).items())
    if "memory" in df.columns:
        mems = ", ".join(dict.fromkeys(df["memory"]))
    elif "system" in df.columns:
        mems = ", ".join(dict.fromkeys(df["system"]))
    else:
        mems = a.get("memory", "")
    over = ", ".join(f"{k}={v}" for k, v in a.get("overrides", {}).items())
    return f"Simulated: SimCXL {a.get('simcxl', _version())} standalone engine; {a.get('workload', '')} on {mems}" \
           + (f" ({cfg})" if cfg else "") + (f"; --set {over}" if over else "")


def _finish(fig, ax, df, path, measured_note: Optional[str] = None) -> Path:
    text = caption(df)
    if measured_note:
        text += "\n" + measured_note
    return _save(fig, path, text, bool(measured_note))


def _save(fig, path, note: str, long_note: bool) -> Path:
    """The figure with its caption at the foot, written to ``path``."""
    fig.text(0.01, 0.005, note, fontsize=6.5, va="bottom", ha="left", wrap=True, color="0.3")
    fig.tight_layout(rect=(0, 0.06 if long_note else 0.04, 1, 1))
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
    top = max(df["stream_gbps"].max(), measured["bandwidth_gbps"].max() if measured is not None else 0)
    ax.set_ylim(0, top * 1.35)  # the legend above the bars, not over them
    ax.legend(fontsize=7, ncol=2, loc="upper center")
    threads = df.attrs.get("config", {}).get("threads")
    ax.set_title("STREAM" + (f", {threads} threads" if threads else ""))
    return _finish(fig, ax, df, path, measured_note)


def loaded_latency(df: pd.DataFrame, path) -> Path:
    """Probe latency against delivered bandwidth, one curve per memory and read fraction."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, ((mem, rf), g) in enumerate(df.groupby(["memory", "read_fraction"], sort=False)):
        # Joined in order of load (threads): past saturation more threads can deliver less.
        g = g.sort_values("threads")
        ax.plot(g["bandwidth_gbps"], g["latency_ns"], marker="o", ms=3, color=f"C{i % 10}",
                label=f"{mem}, reads {rf:.0%}")
        for _, r in g.iterrows():
            ax.annotate(f"{int(r['threads'])}", (r["bandwidth_gbps"], r["latency_ns"]), textcoords="offset points",
                        xytext=(3, 3), fontsize=6, color=f"C{i % 10}")
    ax.set_xlabel("bandwidth (GB/s, reads + writes)")
    ax.set_ylabel("probe latency (ns)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Loaded latency (labels: traffic threads)")
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


_UNITS = {"ns": "ns", "gbps": "GB/s", "bytes": "bytes", "pct": "%"}


def axis_label(col: str) -> str:
    """A results column as an axis label: the parameter's dotted name, or a metric in words with its unit."""
    if col.startswith("param."):
        name = col[len("param."):]
        unit = next((u for k, u in _UNITS.items() if name.endswith("_" + k)), None)
        return f"{name} ({unit})" if unit else name
    words = col.split("_")
    unit = next((_UNITS[w] for w in words if w in _UNITS), None)
    text = " ".join(w for w in words if w not in _UNITS)
    return f"{text} ({unit})" if unit else text


def averaged_axes(df: pd.DataFrame, shown: Sequence[Optional[str]]) -> list:
    """(axis, number of values) of every swept parameter that the plot does not show."""
    return [(c, df[c].nunique()) for c in df.columns
            if c.startswith("param.") and c not in shown and df[c].nunique() > 1]


def sweep(df: pd.DataFrame, path, x: str, y: str, hue: Optional[str] = None, z: Optional[str] = None,
          title: str = "", col: Optional[str] = None) -> Path:
    """Lines of y over x (one per hue value), or a heatmap of z over (x, y); with ``col``, one panel
    of either per value of that column, side by side on the same y axis. Points that differ only in
    axes the plot does not show are averaged, and the caption names those axes."""
    panels = list(df.groupby(col, sort=True)) if col else [(None, df)]
    fig, axes = plt.subplots(1, len(panels), figsize=(7.5 if not col else 1.5 + 3.6 * len(panels), 4.8),
                             sharey=not z, squeeze=False)
    hidden = averaged_axes(df, (x, y, hue, z, col))
    hues = sorted(df[hue].unique()) if hue else [None]
    for ax, (c, part) in zip(axes[0], panels):
        what = _sweep_panel(fig, ax, part, x, y, hue, z, hues, bool(hidden))
        if col:
            value = f"{c:g}" if isinstance(c, float) else str(c)
            ax.set_title(f"{axis_label(col)} = {value}", fontsize=9)
        if not z and ax is not axes[0][0]:
            ax.set_ylabel("")
    if col:
        what += f", per {axis_label(col)}"
        fig.suptitle(f"{title}: {what}" if title else what, fontsize=10)
    else:
        axes[0][0].set_title(f"{title}: {what}" if title else what, fontsize=10)
    engine = df["engine"].iloc[0] if "engine" in df.columns and len(df) else "standalone"
    version = df["simcxl"].iloc[0] if "simcxl" in df.columns and len(df) else _version()
    note = (f"Simulated: SimCXL {version} {engine} engine, sweep of {len(df)} points "
            f"(base {df['base'].iloc[0] if 'base' in df.columns and len(df) else '?'}).")
    if hidden:
        n = int(np.prod([k for _, k in hidden]))
        note += (f" Each {'cell' if z else 'point'} is the mean of up to {n} points over the axes not shown: "
                 + ", ".join(f"{c[len('param.'):]} ({k} values)" for c, k in hidden) + ".")
    return _save(fig, path, note, bool(hidden))


def _sweep_panel(fig, ax, df: pd.DataFrame, x: str, y: str, hue: Optional[str], z: Optional[str], hues: list,
                 hidden: bool) -> str:
    """One panel of a sweep's plot (each hue value in the same colour on every panel); what it shows."""
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
        fig.colorbar(im, ax=ax, label=axis_label(z) + (" (mean)" if hidden else ""))
        what = f"{axis_label(z)} over {axis_label(x)} and {axis_label(y)}"
    else:
        groups = df.groupby(hue, sort=True) if hue else [(None, df)]
        for h, g in groups:
            g = g.groupby(x, sort=True)[y].mean()
            ax.plot(g.index, g.values, "o-", ms=4, color=f"C{hues.index(h) % 10}",
                    label=None if h is None else f"{axis_label(hue)} = {h:g}" if isinstance(h, float)
                    else f"{axis_label(hue)} = {h}")
        if hue:
            ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
        what = f"{axis_label(y)} vs {axis_label(x)}"
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y) + (" (mean)" if hidden and not z else ""))
    return what


def dma_vs_cache(df: pd.DataFrame, path) -> Path:
    """Latency and bandwidth of DMA and CXL.cache over transfer sizes (log axes),
    with the one-line ratios next to the published ones."""
    from .coherent import dma_vs_cache_summary
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.6))
    first = df["transfer_bytes"].min()
    for mech, g in df.groupby("mechanism", sort=False):
        g = g.sort_values("transfer_bytes")
        style = "-o" if mech == "dma" else "-s"
        a1.plot(g["transfer_bytes"], g["latency_ns"], style, label=mech, ms=4)
        a2.plot(g["transfer_bytes"], g["bandwidth_gbps"], style, label=mech, ms=4)
        at = g[g["transfer_bytes"] == first].iloc[0]
        for ax, col, fmt in ((a1, "latency_ns", "{:.0f} ns"), (a2, "bandwidth_gbps", "{:.2f} GB/s")):
            ax.annotate(fmt.format(at[col]), (first, at[col]), textcoords="offset points", xytext=(6, -3),
                        fontsize=7)
    for ax, yl, title in ((a1, "latency (ns)", "One transfer, idle system"),
                          (a2, "bandwidth (GB/s)", "Transfers back to back")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("transfer size (bytes)")
        ax.set_ylabel(yl)
        ax.set_title(title, fontsize=10)
        ticks = sorted(df["transfer_bytes"].unique())
        ax.set_xticks(ticks)
        ax.set_xticklabels([_size_label(t) for t in ticks], rotation=45, fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="lower right" if ax is a1 else "upper left")
    if ((df["mechanism"] == "dma") & (df["transfer_bytes"] == first)).any() and \
            ((df["mechanism"] == "cxl.cache") & (df["transfer_bytes"] == first)).any():
        sm = dma_vs_cache_summary(df)
        fig.suptitle(f"At {_size_label(first)} B CXL.cache cuts latency by {sm['latency_reduction_pct']:.0f}% and "
                     f"gives {sm['bandwidth_gain']:.1f}x the bandwidth of DMA (published at 64 B: 68% and 14.4x)",
                     fontsize=9)
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
    ax.set_xlim(-0.6, len(df) - 0.4 + 0.9)  # room on the right for the legend, clear of the bars
    ax.legend(fontsize=7, loc="upper right")
    return _finish(fig, ax, df, path)
