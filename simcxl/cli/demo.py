"""``simcxl demo``: the presets next to the published measurements."""

from __future__ import annotations

from pathlib import Path

import click

from ..config.params import ParamError
from .common import user_errors


@click.command("demo")
@click.option("--out", default="simcxl-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the table (CSV) and plots (PNG).")
@click.option("--testbed", default=None, type=click.Path(file_okay=False),
              help="Measurements to compare with (default: the spr-cxl-dmsim testbed shipped with simcxl).")
@click.option("--quick", is_flag=True, help="A few working sets and one small STREAM run: checks the set-up in "
              "seconds (its figures are not the demo's).")
def demo(out, testbed, quick):
    """LMbench + STREAM on the four presets, with the published measurements."""
    from ..workloads import demo as demo_mod
    with user_errors():
        if testbed is not None and not (Path(testbed) / "lat_mem_rd.csv").is_file():
            raise ParamError(f"--testbed {testbed}: no testbed there; allowed: a folder with lat_mem_rd.csv and "
                             "stream.csv, e.g. calibration/testbeds/spr-cxl-dmsim (or leave --testbed out)")
        demo_mod.run(Path(out), Path(testbed) if testbed else demo_mod.TESTBED, quick=quick)
