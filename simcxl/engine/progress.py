"""Progress on stderr, and what an interruption keeps: shared by the
``simcxl`` command (simcxl.cli) and the long runs it starts (simcxl.workloads.demo),
which therefore need not import the command."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from typing import Callable, List

import click

#: Seconds between progress lines when stderr is not a terminal (a log or a pipe).
PROGRESS_SECONDS = float(os.environ.get("SIMCXL_PROGRESS_SECONDS", "15"))
_log = {"last": time.monotonic(), "command": "simcxl", "bars": 0}
# What an interruption leaves behind, as the running command last said it.
_kept: List[Callable[[], str]] = [lambda: "nothing was written"]


def kept(note: Callable[[], str]) -> None:
    """Says what an interruption from now on keeps (shown on Ctrl-C)."""
    _kept[0] = note


def kept_note() -> str:
    """What an interruption now keeps, as the running command last said it."""
    return _kept[0]()


def start(command: str) -> None:
    """A command starts: its name and the clock of the progress lines."""
    _log["start"] = _log["last"] = time.monotonic()
    _log["command"] = command


def heartbeat() -> None:
    """A line now and then on a log, so that a long run is seen to be alive."""
    now = time.monotonic()
    if not sys.stderr.isatty() and not _log["bars"] and now - _log["last"] >= max(PROGRESS_SECONDS, 1.0):
        log_line(f"{_log['command']} still running")


def log_line(text: str) -> None:
    _log["last"] = time.monotonic()
    click.echo(f"simcxl: {text} ({time.monotonic() - _log['start']:.0f} s)", err=True)


_log["start"] = time.monotonic()


@contextmanager
def progress_bar(label: str, enabled: bool = True):
    """A progress bar on stderr when it is a terminal, else a line every
    PROGRESS_SECONDS; yields a callback taking a fraction."""
    if not enabled:
        yield None
        return
    _log["bars"] += 1
    try:
        with _bar(label) as cb:
            yield cb
    finally:
        _log["bars"] -= 1


@contextmanager
def _bar(label: str):
    if not sys.stderr.isatty():
        state = {"pct": -1}

        def log(f: float):
            pct = int(min(max(f, 0.0), 1.0) * 100)
            if pct > state["pct"] and time.monotonic() - _log["last"] >= PROGRESS_SECONDS:
                state["pct"] = pct
                log_line(f"{label}: {pct}%")
            return True
        yield log
        return
    with click.progressbar(length=1000, label=label, file=sys.stderr, show_eta=True) as bar:
        state = {"done": 0}

        def update(f: float):
            n = int(min(max(f, 0.0), 1.0) * 1000)
            if n > state["done"]:
                bar.update(n - state["done"])
                state["done"] = n
            return True

        yield update
