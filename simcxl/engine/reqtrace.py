"""Request traces: where sampled requests spent their time, component by component.

(Not :func:`simcxl.trace`, which replays a memory trace.) A :class:`Recorder` is made current
around the engine calls of a command (``with rec: engine.stream(...)``); the C++ core then records every
``sample``-th request it issues (the 1st, the ``sample+1``-th, ...), at most
``max_requests`` of them, as it moves through the components. Each record is a
list of *spans* (a component held the request from one time to another,
charged to one stage of the latency breakdown) and *marks* (a flit of it left
on a link, a link credit was taken for it or it had to wait for one).

:meth:`Recorder.write` writes two files:

* ``FILE.json`` in the Chrome / Perfetto trace-event format (open it in
  ui.perfetto.dev or chrome://tracing): one process per component, as the
  component names itself, with as many threads ("lanes") as it held traced
  requests at once; each span is a complete event (``ph: "X"``) named after its
  stage, its args the request's id, address and opcode. Process ``requests``
  holds one slice per request from issue to completion.
* ``FILE.parquet``: the same spans and marks, one row each, times in ps and ns,
  for pandas (:func:`read`).

The spans of a request are exactly its stage accounting (each change of its
stages records one span of the same length), so :func:`breakdown` over the
requests a run's statistics counted gives that run's latency breakdown.
"""

from __future__ import annotations

import heapq
import json
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import pandas as pd

from .. import _core
from ..config.params import ParamError

STAGES = tuple(_core.STAGES)
#: Defaults of ``--trace-sample`` and ``--trace-max-requests``.
DEFAULT_SAMPLE = 1
DEFAULT_MAX_REQUESTS = 10_000
MAX_REQUESTS_LIMIT = 100_000_000
SAMPLE_LIMIT = 1 << 40

__all__ = ["Recorder", "check_args", "paths", "read", "read_rows", "convert", "breakdown", "chrome_events",
           "STAGES"]


def _whole(name: str, value, lo: int, hi: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ParamError(f"{name} = {value!r} is not a whole number; allowed: {lo} to {hi} ({what})")
    try:
        f = float(value)
    except ValueError:
        raise ParamError(f"{name} = {value!r} is not a whole number; allowed: {lo} to {hi} ({what})") from None
    if f != f or f < lo or f > hi:
        raise ParamError(f"{name} = {value} is out of range; allowed: {lo} to {hi} ({what})")
    if f != int(f):
        raise ParamError(f"{name} = {value} is not a whole number; allowed: {lo} to {hi} ({what})")
    return int(f)


def paths(path: Union[str, Path]) -> Tuple[Path, Path]:
    """The JSON and Parquet files ``--trace FILE`` writes: FILE itself when it ends in .json (else
    FILE.json), and the same name ending in .parquet."""
    p = Path(path)
    if p.suffix == ".parquet":
        p = p.with_suffix(".json")
    j = p if p.suffix == ".json" else p.with_name(p.name + ".json")
    return j, j.with_suffix(".parquet")


def check_args(path: Union[str, Path, None], sample=DEFAULT_SAMPLE,
               max_requests=DEFAULT_MAX_REQUESTS) -> Tuple[int, int]:
    """Validates the trace options before any run: one-line errors naming the option and what is
    allowed. A path must be writable (its folder exists and takes files)."""
    s = _whole("--trace-sample", sample, 1, SAMPLE_LIMIT, "trace every Nth request")
    m = _whole("--trace-max-requests", max_requests, 1, MAX_REQUESTS_LIMIT, "requests recorded at most")
    if path is not None:
        if Path(path).is_dir():
            raise ParamError(f"--trace {path} is a directory; allowed: a file path in a writable folder")
        for f in paths(path):
            folder = f.parent if str(f.parent) else Path(".")
            if f.is_dir():
                raise ParamError(f"--trace {path}: {f} is a directory; allowed: a file path in a writable folder")
            if not folder.is_dir():
                raise ParamError(f"--trace {path}: folder {folder} does not exist; allowed: a file path in a "
                                 "writable folder")
            if not os.access(folder, os.W_OK) or (f.exists() and not os.access(f, os.W_OK)):
                raise ParamError(f"--trace {path}: {f} is not writable; allowed: a file path in a writable folder")
    return s, m


class Recorder:
    """Records sampled requests of the engine runs made inside ``with recorder:`` on this thread."""

    def __init__(self, sample: int = DEFAULT_SAMPLE, max_requests: int = DEFAULT_MAX_REQUESTS):
        self.sample, self.max_requests = check_args(None, sample, max_requests)
        self.sink = _core.TraceSink(self.sample, self.max_requests)

    def __enter__(self) -> "Recorder":
        self.sink.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.sink.__exit__(*exc)

    @property
    def recorded(self) -> int:
        return self.sink.recorded

    @property
    def offered(self) -> int:
        return self.sink.offered

    def frame(self) -> pd.DataFrame:
        """One row per request (kind 'request', component 'requests': issue to completion), span and
        mark: run, request, address, op, source, issued/done (ps), stream (the statistics that counted
        the request, '' if none), finished, component, kind ('request', 'span', 'flit', 'credit',
        'credit_wait'), stage (spans only, else None), start/end (ps), value (a flit's half-slots),
        and the times in ns."""
        return _frame(pd.DataFrame(self.sink.rows()))

    def requests(self) -> pd.DataFrame:
        """One row per recorded request, with the stages (ps) its run's statistics counted."""
        r = self.sink.requests()
        stages = r.pop("stage_ps")
        df = pd.DataFrame(r)
        for i, s in enumerate(STAGES):
            df[f"stage.{s}_ps"] = [v[i] for v in stages]
        return df

    def meta(self) -> dict:
        return {"sample": self.sample, "max_requests": self.max_requests, "offered": self.offered,
                "recorded": self.recorded, "capped": self.recorded >= self.max_requests}

    def write(self, path: Union[str, Path], meta: Optional[dict] = None) -> Tuple[Path, Path]:
        """Writes FILE.json (trace events) and FILE.parquet; returns their paths."""
        return write_frame(self.frame(), path, {**self.meta(), **(meta or {})})


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    """The trace frame from the core's rows (stage numbers named, times also in ns)."""
    df["stage"] = [STAGES[s] if s >= 0 else None for s in df["stage"]] if len(df) else pd.Series(dtype=object)
    for c in ("start", "end", "issued", "done"):
        df[f"{c}_ns"] = df[f"{c}_ps"] / 1000.0
    df["duration_ns"] = (df["end_ps"] - df["start_ps"]) / 1000.0
    return df


def write_frame(df: pd.DataFrame, path: Union[str, Path], info: dict) -> Tuple[Path, Path]:
    """FILE.json (trace events) and FILE.parquet of a trace frame, ``info`` (sample, max_requests,
    ...) in both; returns their paths."""
    jpath, ppath = paths(path)
    doc = {"traceEvents": chrome_events(df), "displayTimeUnit": "ns",
           "otherData": {k: str(v) for k, v in info.items()}}
    with open(jpath, "w") as f:
        f.write(json.dumps(doc, separators=(",", ":")))  # one string: json.dump writes in small pieces
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           b"simcxl.trace": json.dumps(info).encode()})
    pq.write_table(table, ppath)
    return jpath, ppath


ROW_COLUMNS = ("run", "request", "address", "op", "source", "issued_ps", "done_ps", "stream", "finished",
               "component", "kind", "stage", "start_ps", "end_ps", "value")


def read_rows(path: Union[str, Path]) -> pd.DataFrame:
    """A trace frame from the rows an engine without Python wrote as CSV (gem5's host bridge with
    ``trace_file``; ``_core.TraceSink.write_rows``)."""
    df = pd.read_csv(path, dtype={"op": str, "stream": str, "component": str, "kind": str},
                     keep_default_na=False)
    if tuple(df.columns) != ROW_COLUMNS:
        raise ParamError(f"{path} is not a trace's rows: its columns are {', '.join(df.columns)}; expected "
                         + ", ".join(ROW_COLUMNS))
    df["finished"] = df["finished"].astype(str) == "True"
    return _frame(df)


def convert(rows: Union[str, Path, Sequence[Union[str, Path]]], path: Union[str, Path],
            info: Optional[dict] = None) -> Tuple[Path, Path]:
    """FILE.json and FILE.parquet from rows CSVs (see :func:`read_rows`); several files (one per
    gem5 host bridge) become runs 0, 1, ... in their order."""
    files = [rows] if isinstance(rows, (str, Path)) else list(rows)
    if not files:
        raise ParamError("convert: no rows file given")
    parts = []
    for i, f in enumerate(files):
        df = read_rows(f)
        df["run"] += i
        parts.append(df)
    df = pd.concat(parts, ignore_index=True)
    return write_frame(df, path, {"rows": ", ".join(str(f) for f in files),
                                  "recorded": int((df["kind"] == "request").sum()), **(info or {})})


def read(path: Union[str, Path]) -> pd.DataFrame:
    """A trace's Parquet table (FILE.parquet, or the one beside FILE.json) as a DataFrame; its
    settings (sample, max_requests, ...) in ``df.attrs``."""
    import pyarrow.parquet as pq
    p = Path(path)
    if p.suffix != ".parquet":
        p = paths(p)[1]
    t = pq.read_table(p)
    df = t.to_pandas()
    raw = (t.schema.metadata or {}).get(b"simcxl.trace")
    df.attrs = json.loads(raw) if raw else {}
    return df


def breakdown(df: pd.DataFrame, stream: Optional[str] = None) -> pd.DataFrame:
    """Mean ns per counted request of each stage, from the spans: for each stream (the statistics
    that counted the requests: 'read', 'host.read', 'accel.gpu', ...) the stages summed over its
    requests, divided by how many there are. With every counted request traced (no sampling, cap
    not reached) these are the run's reported ``<stream>...stage.<stage>_ns``."""
    spans = df[(df["kind"] == "span") & (df["stream"] != "")]
    if stream is not None:
        spans = spans[spans["stream"] == stream]
    reqs = df[(df["kind"] == "request") & (df["stream"] != "")].groupby(["run", "stream"])["request"].count()
    tot = spans.groupby(["run", "stream", "stage"])["end_ps"].sum() - \
        spans.groupby(["run", "stream", "stage"])["start_ps"].sum()
    out = tot.unstack("stage").reindex(columns=list(STAGES)).fillna(0)
    out = out.div(reqs.reindex(out.index), axis=0) / 1000.0
    out["requests"] = reqs.reindex(out.index)
    return out


def _lanes(starts: List[int], ends: List[int]) -> List[int]:
    """Lane of each interval (in the given order, sorted by start): the lowest whose last interval
    ended by its start, so the intervals of a lane never overlap."""
    free: List[int] = []           # lanes free now (heap)
    busy: List[Tuple[int, int]] = []  # (end, lane)
    n = 0
    out = []
    for s, e in zip(starts, ends):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, n = n, n + 1
        out.append(lane)
        heapq.heappush(busy, (e, lane))
    return out


def _us(ps: int) -> float:
    return ps / 1e6


def chrome_events(df: pd.DataFrame) -> List[dict]:
    """The trace-event list of a trace frame (Recorder.frame)."""
    events: List[dict] = []
    multi = len(df) > 0 and df["run"].nunique() > 1
    pids: Dict[Tuple[int, str], int] = {}

    def pid(run: int, comp: str) -> int:
        key = (run, comp)
        if key not in pids:
            pids[key] = len(pids) + 1
            name = f"run {run}: {comp}" if multi else comp
            events.append({"name": "process_name", "ph": "M", "pid": pids[key], "tid": 0, "args": {"name": name}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pids[key], "tid": 0,
                           "args": {"sort_index": pids[key]}})
        return pids[key]

    def lane_names(p: int, lanes: List[int]) -> None:
        for lane in range(max(lanes, default=-1) + 1):
            events.append({"name": "thread_name", "ph": "M", "pid": p, "tid": lane + 1,
                           "args": {"name": f"lane {lane}"}})

    def rows(part: pd.DataFrame, *cols: str):
        # Plain lists: iterating Arrow-backed columns row by row is slow.
        return zip(*(part[c].tolist() for c in cols))

    base = ("request", "run", "address", "op", "source", "stream", "start_ps", "end_ps")

    def args(req, run, addr, op, src, stream) -> dict:
        return {"request": req, "run": run, "address": f"0x{addr:x}", "op": op, "source": src, "stream": stream}

    # The requests themselves, issue to completion; then each component's spans.
    order = ["run", "component", "start_ps", "end_ps", "request"]
    for kind, cat in (("request", "request"), ("span", "stage")):
        part = df[df["kind"] == kind].sort_values(order)
        for (run, comp), g in part.groupby(["run", "component"], sort=False):
            p = pid(run, comp)
            lanes = _lanes(g["start_ps"].tolist(), g["end_ps"].tolist())
            name = g["op"] if kind == "request" else g["stage"]
            for (req, r, addr, op, src, stream, s, e), n, lane in zip(rows(g, *base), name.tolist(), lanes):
                events.append({"name": n, "cat": cat, "ph": "X", "ts": _us(s), "dur": _us(e - s), "pid": p,
                               "tid": lane + 1, "args": args(req, r, addr, op, src, stream)})
            lane_names(p, lanes)
    marks = df[~df["kind"].isin(["span", "request"])].sort_values(["run", "component", "start_ps"])
    for (run, comp), g in marks.groupby(["run", "component"], sort=False):
        p = pid(run, comp)
        events.append({"name": "thread_name", "ph": "M", "pid": p, "tid": 0, "args": {"name": "flits and credits"}})
        for (req, r, addr, op, src, stream, s, _), kind, value in zip(rows(g, *base), g["kind"].tolist(),
                                                                       g["value"].tolist()):
            a = args(req, r, addr, op, src, stream)
            if kind == "flit":
                a["half_slots"] = value
            events.append({"name": kind, "cat": "link", "ph": "i", "s": "t", "ts": _us(s), "pid": p, "tid": 0,
                           "args": a})
    return events

def timeline(df: pd.DataFrame, path: Union[str, Path], first: int = 0, count: int = 8,
             stream: Optional[str] = None, keys: Optional[List[Tuple[int, int]]] = None) -> Path:
    """A picture of a trace (matplotlib, PNG or SVG by the name): ``count`` requests from the
    ``first``-th recorded one (of ``stream`` if given), one row per request and component, each
    span a bar coloured by its stage; flits and credits as ticks. What ui.perfetto.dev shows per
    component, drawn per request. ``keys``: the (run, request) pairs to draw instead."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    reqs = df[df["kind"] == "request"]
    if stream is not None:
        reqs = reqs[reqs["stream"] == stream]
    if keys is None:
        keys = list(reqs[["run", "request"]].itertuples(index=False, name=None))[first:first + count]
    if not keys:
        raise ParamError(f"timeline: no request {first} to draw; the trace holds {len(reqs)}")
    colours = dict(zip(STAGES, plt.get_cmap("tab20").colors))
    rows: List[Tuple[str, pd.DataFrame]] = []
    for run, req in keys:
        g = df[(df["run"] == run) & (df["request"] == req)]
        sp = g[g["kind"] == "span"].sort_values("start_ps")
        op = g["op"].iloc[0]
        for comp in dict.fromkeys(sp["component"]):
            rows.append((f"#{req} {op}  {comp}", g[g["component"] == comp]))
    t0 = min(df[(df["run"] == r) & (df["request"] == q)]["start_ps"].min() for r, q in keys)
    fig, ax = plt.subplots(figsize=(11, 0.28 * len(rows) + 1.4))
    for y, (_, g) in enumerate(rows):
        for r in g.itertuples():
            x = (r.start_ps - t0) / 1000
            if r.kind == "span":
                ax.barh(y, (r.end_ps - r.start_ps) / 1000, left=x, color=colours[r.stage], height=0.8)
            elif r.kind != "request":
                ax.plot([x, x], [y - 0.4, y + 0.4], color="black", lw=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([n for n, _ in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ns from the first request's issue")
    used = [s for s in STAGES if (df[df["request"].isin([q for _, q in keys])]["stage"] == s).any()]
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[s]) for s in used], labels=used, fontsize=7,
              loc="lower right", title="stage (black ticks: flits, credits)", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


if __name__ == "__main__":  # python -m simcxl.engine.reqtrace ROWS.csv... FILE: what gem5 configurations run
    import sys
    if len(sys.argv) < 3:
        sys.exit("usage: python -m simcxl.engine.reqtrace ROWS.csv [ROWS.csv ...] FILE  (writes FILE.json and "
                 "FILE.parquet)")
    try:
        for p in convert(sys.argv[1:-1], sys.argv[-1]):
            print(f"wrote {p}")
    except (ParamError, OSError) as e:
        sys.exit(f"error: {e}")
