"""Latency histograms: every stream a run reports (``read``, ``memory``, an accelerator's, ...) keeps
its latencies in a bounded log-linear histogram (64 buckets per octave, exact below 64 ps); inside
``with record() as h:`` the runs hand them over, and :meth:`Histograms.frame` gives them as a table.

    with histograms.record() as h:
        engine.traffic("cxl-asic", threads=16, requests=20000)
    h.frame()  # run, stream, lo_ns, hi_ns, count: one row per non-empty bucket [lo_ns, hi_ns)
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pandas as pd

from .. import _core

COLUMNS = ["run", "stream", "lo_ns", "hi_ns", "count"]


class Histograms:
    def __init__(self) -> None:
        self.sink = _core.HistogramSink()

    def frame(self) -> pd.DataFrame:
        """One row per non-empty bucket of each stream of each run (a stream is named as its result
        columns are, e.g. ``read_latency``; ``run`` numbers a stream's histograms from 0 in the order
        the runs reported them)."""
        rows = [dict(run=h["run"], stream=h["stream"], lo_ns=lo, hi_ns=hi, count=c)
                for h in self.sink.histograms() for lo, hi, c in zip(h["lo_ns"], h["hi_ns"], h["count"])]
        return pd.DataFrame(rows, columns=COLUMNS)


@contextmanager
def record() -> Iterator[Histograms]:
    """Collects the latency histograms of the engine runs made in the block, on this thread."""
    h = Histograms()
    with h.sink:
        yield h
