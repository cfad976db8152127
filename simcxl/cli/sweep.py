"""``simcxl sweep`` and ``simcxl plot``: a design-space sweep and plots of its results."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import click
import pandas as pd

from ..config.params import ParamError, did_you_mean
from ..engine.progress import kept, progress_bar
from .common import Command, plot_path, user_errors


@click.command("sweep", cls=Command, example="simcxl sweep examples/sweeps/fabric.toml --out sweep-out")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Results folder (rerun to resume).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores).")
@click.option("--address", default=None, help="Scheduler address of an existing Dask cluster.")
def sweep_cmd(spec, out, executor, workers, address):
    """Run a design-space sweep (TOML spec); results land in OUT as they finish."""
    from ..sweep import spec as sw
    with user_errors():
        s = sw.Sweep.from_toml(spec)
        n = len(s.grid())
        jsonl = Path(out) / "results.jsonl"

        def note():
            sw.results_lock.acquire(timeout=5)  # never released: the process ends after this note
            have = len(sw.load_results(Path(out))) if jsonl.exists() else 0
            return (f"{have} of {n} points are kept in {jsonl}; run the same command again to run the rest"
                    if have else "no point had finished")
        kept(note)
        with progress_bar(f"sweep {s.name} ({n} points)") as cb:
            df = sw.run(s, out, executor=executor, workers=workers, address=address,
                        progress=None if cb is None else (lambda done, total: cb(done / max(total, 1))))
    ok = int((df["status"] == "ok").sum()) if len(df) else 0
    click.echo(f"{len(df)} points ({ok} ok, {len(df) - ok} failed) in {Path(out) / 'results.parquet'} and "
               f"{Path(out) / 'results.csv'}")


def _slug(col: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", col.replace("param.", "").replace("workload.", "")).strip("-")


@click.command("plot", cls=Command,
               example="simcxl plot sweep-out --x param.base.hosts --y total_gbps --hue param.base.levels")
@click.argument("folder", type=click.Path(file_okay=False, exists=True))
@click.option("--x", "x", required=True, help="Column on the x axis (e.g. param.cxl.link.lanes).")
@click.option("--y", "y", required=True, help="Column on the y axis (a metric, or a parameter for heatmaps).")
@click.option("--hue", default=None, help="One line per value of this column.")
@click.option("--z", "z", default=None, help="Heatmap colour (a metric); makes the plot a heatmap.")
@click.option("--col", "col", default=None, help="One panel per value of this column, side by side.")
@click.option("--out", "png", default=None, callback=plot_path,
              help="Plot to write (default FOLDER/<y>-vs-<x>[-by-<hue>].png, named by what it plots).")
def plot_cmd(folder, x, y, hue, z, col, png):
    """Line plot or heatmap from a sweep's results table; axes not on the plot are averaged, and the plot says so."""
    from ..workloads import plots
    from ..sweep import spec as sw
    with user_errors():
        df = sw.load_results(Path(folder))
        if not len(df):
            raise ParamError(f"{folder} has no results (results.jsonl); run a sweep into it first: simcxl sweep "
                             f"SPEC --out {folder}")
        cols = [c for c in (x, y, hue, z, col) if c is not None]
        if len(set(cols)) < len(cols):
            raise ParamError(f"--x, --y, --hue, --z and --col name the same column twice ({', '.join(cols)}); "
                             "give each a different one")
        for c in cols:
            if c not in df.columns:
                short = [k for k in df.columns if k.endswith("." + c) or k == f"param.{c}"]
                near = f"did you mean {short[0]}? " if short else did_you_mean(c, df.columns)
                raise ParamError(f"column {c!r} is not in the results; {near}allowed: {', '.join(df.columns)}")
        ok = df[df["status"] == "ok"] if "status" in df.columns else df
        if not len(ok):
            raise ParamError(f"{folder} has no successful points to plot; see the error column of "
                             f"{Path(folder) / 'results.csv'}, fix the spec and run the sweep again")
        opt, c = ("--z", z) if z else ("--y", y)
        if not pd.api.types.is_numeric_dtype(ok[c]):
            nums = [k for k in ok.columns if pd.api.types.is_numeric_dtype(ok[k]) and not k.startswith("param.")
                    and k not in ("wall_seconds", "seed")]
            raise ParamError(f"{opt} {c} is not a number column and cannot be plotted; give one of the numeric "
                             f"metrics: {', '.join(nums)}")
        name = f"{_slug(z)}-over-{_slug(x)}-and-{_slug(y)}" if z else \
            f"{_slug(y)}-vs-{_slug(x)}" + (f"-by-{_slug(hue)}" if hue else "")
        name += f"-per-{_slug(col)}" if col else ""
        path = png or str(Path(folder) / f"{name}.png")
        title = sw_name(Path(folder))
        plots.sweep(ok, path, x, y, hue, z, title=title, col=col)
        hidden = plots.averaged_axes(ok, (x, y, hue, z, col))
    if hidden:
        n = math.prod(k for _, k in hidden)
        click.echo(f"simcxl: note: each {'cell' if z else 'point'} averages {n} points over "
                   + ", ".join(f"{c[len('param.'):]} ({k} values)" for c, k in hidden)
                   + "; give them as --hue, or plot a filtered folder, to see them", err=True)
    click.echo(f"wrote {path}")


def sw_name(folder: Path) -> str:
    """The sweep's name from its spec.json, else the folder's."""
    try:
        return json.loads((folder / "spec.json").read_text())["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return folder.name
