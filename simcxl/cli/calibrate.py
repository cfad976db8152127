"""``simcxl calibrate``: fit presets to a testbed's measurements."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..engine.progress import kept
from .common import Command, user_errors, writable


@click.command("calibrate", cls=Command,
               example="simcxl calibrate --testbed calibration/testbeds/spr-cxl-dmsim --out calib-out")
@click.option("--testbed", required=True, type=click.Path(file_okay=False), help="Testbed folder.")
@click.option("--memories", default=None, help="Comma-separated memories of the testbed (default: all).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for presets, report, summary.")
@click.option("--json", "json_path", default=None, callback=writable,
              help="Also write the JSON summary here ('-' for stdout).")
@click.option("--engine", type=click.Choice(["standalone", "gem5"]), default="standalone", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes for the memories after the host fit.")
def calibrate_cmd(testbed, memories, out, json_path, engine, workers):
    """Fit presets to a testbed's measurements and report the errors."""
    from ..calibration import calibrate
    start = time.time()

    def note():
        done = sorted(p.stem for p in (Path(out) / "presets").glob("*.json") if p.stat().st_mtime >= start)
        return (f"the presets of {', '.join(done)} are written in {Path(out) / 'presets'}" if done
                else "no memory had finished, no preset was written") + \
            ("; gem5's finished runs are kept, and a rerun resumes from them" if engine == "gem5" else "")
    kept(note)
    with user_errors():
        mems = [m.strip() for m in memories.split(",") if m.strip()] if memories else None
        try:
            s = calibrate.run(testbed, out, mems, engine, json_path, workers=workers)
        except KeyboardInterrupt:
            sys.exit(130)  # the calibration has said what it kept
    if json_path != "-":
        click.echo("memory        fit MAE  validation MAE: at/after the LLC + other STREAM kernels | all points")
        for m, v in s["memories"].items():
            click.echo(f"{m:12s} {_pct(v['fit_mae_pct'])}  {'':16s}{_pct(v['validation_llc_and_beyond_mae_pct'])}"
                       f"{'':37s}| {_pct(v['validation_mae_pct'])}")
        click.echo(f"wrote {Path(out) / 'report.md'}, {Path(out) / 'summary.json'} and presets in "
                   f"{Path(out) / 'presets'}")


def _pct(v) -> str:
    return "   -  " if v is None else f"{v:5.2f}%"
