"""The ``simcxl`` command: ``main`` and its groups, one module per command
group (common.py: what they share)."""

from __future__ import annotations

import click

from ..engine import standalone as engine
from . import bench, calibrate, demo, fs, presets, run, sweep, topology
from .common import Main


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(engine._version(), prog_name="simcxl")
def main():
    """SimCXL: simulate CXL memory systems (standalone engine; gem5 optional)."""


for _command in (run.run, presets.presets_group, bench.bench, calibrate.calibrate_cmd, sweep.sweep_cmd,
                 sweep.plot_cmd, topology.topology_group, fs.guest_group, fs.fs_cmd, demo.demo):
    main.add_command(_command)
