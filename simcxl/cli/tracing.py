"""``--trace FILE`` on every ``simcxl run`` command: the command's engine runs record sampled requests
(simcxl.engine.reqtrace), written at the end as FILE.json (Perfetto / Chrome trace events) and FILE.parquet;
``--histograms FILE``: every stream's latency histogram (simcxl.engine.histograms) as a CSV table."""

from __future__ import annotations

import functools

import click

from ..engine import histograms as hist
from ..engine import reqtrace as trace
from .common import user_errors

_HELP = {
    "trace": "Write each sampled request's path through the components to FILE.json (trace events: open in "
             "ui.perfetto.dev) and FILE.parquet (pandas). See docs/traces.md.",
    "trace_sample": "With --trace: record every Nth request issued (1: all), from 1 to 2^40.",
    "trace_max_requests": "With --trace: record at most this many requests (the files' size cap), from 1 to 10^8.",
    "histograms": "Write every stream's latency histogram (run, stream, lo_ns, hi_ns, count: one row per non-empty "
                  "bucket) to FILE as CSV.",
}


def _options():
    return [
        click.Option(["--trace", "trace_path"], type=str, default=None, metavar="FILE",
                     help=_HELP["trace"]),
        click.Option(["--trace-sample"], type=int, default=trace.DEFAULT_SAMPLE, show_default=True, metavar="N",
                     help=_HELP["trace_sample"]),
        click.Option(["--trace-max-requests"], type=int, default=trace.DEFAULT_MAX_REQUESTS, show_default=True,
                     metavar="M", help=_HELP["trace_max_requests"]),
        click.Option(["--histograms", "histograms_path"], type=str, default=None, metavar="FILE",
                     help=_HELP["histograms"]),
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
            trace_max_requests=trace.DEFAULT_MAX_REQUESTS, histograms_path=None, **kwargs):
        with user_errors():
            sample, cap = trace.check_args(trace_path, trace_sample, trace_max_requests)
            if histograms_path is not None:
                _writable(histograms_path)
        if histograms_path is not None:
            with hist.record() as h:
                out = _run(callback, args, kwargs, trace_path, sample, cap, name)
            with user_errors():
                h.frame().to_csv(histograms_path, index=False)
            click.echo(f"histograms -> {histograms_path}", err=True)
            return out
        return _run(callback, args, kwargs, trace_path, sample, cap, name)
    return run


def _writable(path: str) -> None:
    from pathlib import Path
    from ..config.params import ParamError
    p = Path(path)
    if p.is_dir() or not p.parent.is_dir():
        raise ParamError(f"--histograms {path}: not a file in an existing folder; allowed: a CSV file's path")


def _run(callback, args, kwargs, trace_path, sample, cap, name):
    """The command, inside a trace recorder when --trace asks for one."""
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
