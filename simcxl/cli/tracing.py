"""``--trace FILE`` on every ``simcxl run`` command: the command's engine runs record sampled requests
(simcxl.reqtrace), written at the end as FILE.json (Perfetto / Chrome trace events) and FILE.parquet."""

from __future__ import annotations

import functools

import click

from .. import reqtrace as trace
from .common import user_errors

_HELP = {
    "trace": "Write each sampled request's path through the components to FILE.json (trace events: open in "
             "ui.perfetto.dev) and FILE.parquet (pandas). See docs/traces.md.",
    "trace_sample": "With --trace: record every Nth request issued (1: all), from 1 to 2^40.",
    "trace_max_requests": "With --trace: record at most this many requests (the files' size cap), from 1 to 10^8.",
}


def _options():
    return [
        click.Option(["--trace", "trace_path"], type=str, default=None, metavar="FILE",
                     help=_HELP["trace"]),
        click.Option(["--trace-sample"], type=int, default=trace.DEFAULT_SAMPLE, show_default=True, metavar="N",
                     help=_HELP["trace_sample"]),
        click.Option(["--trace-max-requests"], type=int, default=trace.DEFAULT_MAX_REQUESTS, show_default=True,
                     metavar="M", help=_HELP["trace_max_requests"]),
    ]


def add_trace_options(group: click.Group) -> None:
    """Gives every command of ``group`` the trace options; its body then runs inside a recorder."""
    for cmd in group.commands.values():
        if any(p.name == "trace_path" for p in cmd.params):
            continue
        cmd.params.extend(_options())
        cmd.callback = _traced(cmd.callback, cmd.name)


def _traced(callback, name: str):
    @functools.wraps(callback)
    def run(*args, trace_path=None, trace_sample=trace.DEFAULT_SAMPLE,
            trace_max_requests=trace.DEFAULT_MAX_REQUESTS, **kwargs):
        with user_errors():
            sample, cap = trace.check_args(trace_path, trace_sample, trace_max_requests)
        if trace_path is None:
            return callback(*args, **kwargs)
        rec = trace.Recorder(sample, cap)
        with rec:
            out = callback(*args, **kwargs)
        with user_errors():
            jpath, ppath = rec.write(trace_path, meta={"command": f"run {name}"})
        capped = " (the cap: --trace-max-requests)" if rec.recorded >= cap else ""
        click.echo(f"trace: {rec.recorded:,} of {rec.offered:,} requests{capped} -> {jpath}, {ppath}", err=True)
        return out
    return run
