"""What the figures show (issue 17, items 9, 10, 16): read back from the
matplotlib figure each plot function draws, before it is closed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simcxl.workloads import plots


@pytest.fixture
def figures(monkeypatch):
    """The figures the plot functions close, kept open for inspection."""
    kept = []
    monkeypatch.setattr(plots.plt, "close", lambda fig: kept.append(fig))
    return kept


def test_loaded_latency_is_joined_in_thread_order_and_labelled(tmp_path, figures):
    # Past saturation 16 threads deliver less than 8: sorted by bandwidth the curve would double back.
    df = pd.DataFrame({"memory": "m", "read_fraction": 1.0, "threads": [1, 4, 8, 16],
                       "bandwidth_gbps": [5.0, 18.0, 25.0, 22.0], "latency_ns": [100.0, 130.0, 300.0, 600.0]})
    plots.loaded_latency(df, tmp_path / "ll.png")
    ax = figures[0].axes[0]
    line = ax.lines[0]
    assert list(line.get_xdata()) == [5.0, 18.0, 25.0, 22.0]
    assert list(line.get_ydata()) == [100.0, 130.0, 300.0, 600.0]  # latency only rises with load
    assert [t.get_text() for t in ax.texts] == ["1", "4", "8", "16"]


def _overlaps(fig, legend, patches) -> list:
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box = legend.get_window_extent(r)
    return [p for p in patches if p.get_height() > 0 and box.overlaps(p.get_window_extent(r))]


def test_accel_breakdown_legend_clear_of_the_bar(tmp_path, figures):
    df = pd.DataFrame([{"system": "type1-asic", "stage_cache_ns": 5.0, "stage_link_up_ns": 26.0,
                        "stage_host_uncore_ns": 40.0, "stage_media_service_ns": 86.0, "stage_link_down_ns": 27.0}])
    plots.accel_breakdown(df, tmp_path / "where.png")
    ax = figures[0].axes[0]
    assert _overlaps(figures[0], ax.get_legend(), ax.patches) == []


def test_stream_legend_clear_of_the_bars_and_threads_in_title(tmp_path, figures):
    df = pd.DataFrame({"memory": ["a"] * 2 + ["b"] * 2, "kernel": ["copy", "triad"] * 2,
                       "stream_gbps": [20.0, 22.0, 14.0, 16.0]})
    df.attrs = {"config": {"threads": 16}}
    measured = df.rename(columns={"stream_gbps": "bandwidth_gbps"})
    plots.stream(df, tmp_path / "s.png", measured=measured)
    ax = figures[0].axes[0]
    assert _overlaps(figures[0], ax.get_legend(), ax.patches) == []
    assert ax.get_title() == "STREAM, 16 threads"


def test_dma_vs_cache_states_the_one_line_ratios_with_the_published(tmp_path, figures):
    df = pd.DataFrame({"transfer_bytes": [64, 64, 4096, 4096], "mechanism": ["dma", "cxl.cache"] * 2,
                       "latency_ns": [600.0, 150.0, 700.0, 260.0], "bandwidth_gbps": [0.2, 12.0, 8.0, 18.0]})
    plots.dma_vs_cache(df, tmp_path / "d.png")
    title = figures[0]._suptitle.get_text()
    # 1 - 150/600 = 75 %; 12 / 0.2 = 60x
    assert "cuts latency by 75%" in title and "60.0x the bandwidth" in title and "68% and 14.4x" in title


def test_sweep_line_plot_averages_hidden_axes_and_says_so(tmp_path, figures):
    rows = [{"param.a": a, "param.b": b, "param.c": c, "m_gbps": a * 10 + b + c / 10}
            for a in (1, 2) for b in (1, 2, 3) for c in (0, 10)]
    df = pd.DataFrame(rows)
    plots.sweep(df, tmp_path / "p.png", "param.a", "m_gbps", hue="param.b", title="t")
    ax = figures[0].axes[0]
    # Each point: the mean over c of a*10 + b + c/10 = a*10 + b + 0.5.
    for b, line in zip((1, 2, 3), ax.lines):
        assert np.allclose(line.get_ydata(), [10 + b + 0.5, 20 + b + 0.5])
    assert ax.get_xlabel() == "a" and ax.get_ylabel() == "m (GB/s) (mean)"
    assert ax.get_title() == "t: m (GB/s) vs a"
    caption = " ".join(t.get_text() for t in figures[0].texts)
    assert "mean of up to 2 points over the axes not shown: c (2 values)" in caption


def test_set_overrides_are_in_the_labels_attrs_and_caption():
    import simcxl
    from simcxl.cli import common
    systems = common.load_memories(["cxl-asic"], ["cxl.link.lanes=4"])
    df = common.run_each(systems, "lmbench", lambda s, cb: simcxl.lmbench(s, ["4k"], accesses=10))
    assert df["memory"].tolist() == ["cxl-asic [cxl.link.lanes=4]"]
    assert df.attrs["overrides"] == {"cxl.link.lanes": 4}
    assert plots.caption(df).endswith("; --set cxl.link.lanes=4")
