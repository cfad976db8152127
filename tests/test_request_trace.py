"""Request traces (``--trace FILE``, simcxl.engine.reqtrace): the trace-event JSON is well formed, the
Parquet table round-trips, sampling and the cap bound what is recorded, bad options are refused in
one line, and the spans add up to the run's reported latency breakdown.

Why the sums must be equal, from the definitions: a run's ``<stream>...stage.<s>_ns`` is
``sum over counted requests of stage[s]`` (integer ps) / 1000 / count (LatencyStats). Every change
of a request's stage[s] goes through Txn::leave / absorb / restore, and each records a span of the
same length (or takes back the one it recorded), so for each request the spans of stage s sum to
stage[s] exactly. With every request traced (sample 1, cap not reached), summing the spans of the
requests the trace says were counted and dividing by their number is the same integer sum over the
same set, so only the last divisions' rounding can differ: a relative 1e-12 bounds that (the sums
are below 2^53, the divisions each round by at most 2^-53). From the JSON, times are microseconds
written with picosecond digits; a sum of 10^5 such floats is within 1e-9 relative.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from simcxl import _core, topology
from simcxl.workloads import mixed
from simcxl.engine import reqtrace
from simcxl.cli import main

ROOT = Path(__file__).resolve().parents[1]
MIXED = ROOT / "examples" / "topologies" / "mixed.toml"
STAGES = tuple(_core.STAGES)


def check_trace_events(doc: dict) -> dict:
    """Schema of the trace-event format as ui.perfetto.dev and chrome://tracing read it (JSON object
    form): required keys and types of each phase used, durations not negative, and on each track
    (pid, tid) complete events in time order that do not overlap. Returns the counts by phase."""
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    counts = defaultdict(int)
    tracks = defaultdict(list)
    names = {}
    for e in doc["traceEvents"]:
        assert isinstance(e, dict)
        ph = e["ph"]
        counts[ph] += 1
        assert isinstance(e["name"], str) and e["name"]
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if ph == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index")
            assert isinstance(e["args"], dict)
            if e["name"] != "process_sort_index":
                assert isinstance(e["args"]["name"], str) and e["args"]["name"]
                names[(e["name"], e["pid"], e["tid"] if e["name"] == "thread_name" else 0)] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], (int, float)) and not isinstance(e["ts"], bool) and e["ts"] >= 0
        assert isinstance(e["args"], dict)
        assert isinstance(e["args"]["request"], int) and isinstance(e["args"]["op"], str)
        assert e["args"]["address"].startswith("0x")
        if ph == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            # Picosecond digits: back to whole ps, to compare without float noise.
            tracks[(e["pid"], e["tid"])].append((round(e["ts"] * 1e6), round((e["ts"] + e["dur"]) * 1e6)))
        else:
            assert ph == "i" and e["s"] in ("t", "p", "g")
    for (pid, tid), spans in tracks.items():
        assert ("process_name", pid, 0) in names and ("thread_name", pid, tid) in names
        for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
            assert s0 <= s1, f"track {pid}/{tid} goes back in time"
            assert e0 <= s1, f"track {pid}/{tid}: slices overlap"
    return dict(counts)


@pytest.fixture(scope="module")
def mixed_trace(tmp_path_factory):
    """The mixed example topology (host STREAM over local DDR5 and two interleaved expanders, a
    Type-2 accelerator beside them), sized so that a trace of every request holds about 10,000."""
    s = topology.GraphSystem(topology.load(str(MIXED)), topology.memory_system).replace()
    rec = reqtrace.Recorder(sample=1, max_requests=12_000)
    with rec:
        df = mixed.run(s, threads=4, lines_per_thread=545, target="cxl",
                       devices={"gpu": {"requesters": 4, "depth": 4}})
    out = tmp_path_factory.mktemp("trace") / "mixed"
    jpath, ppath = rec.write(out)
    return rec, df.iloc[0], jpath, ppath


def test_mixed_trace_is_trace_events(mixed_trace):
    rec, _, jpath, _ = mixed_trace
    # All of the run's requests, about 10,000, within the 12,000 asked for.
    assert rec.recorded == rec.offered
    assert 9_000 <= rec.recorded <= 12_000
    doc = json.loads(jpath.read_text())
    counts = check_trace_events(doc)
    assert counts["X"] > rec.recorded  # a slice per request, and one per span
    comps = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    # The host's path, both expanders' devices and the accelerator's own components.
    assert {"requests", "host.uncore", "home"} <= comps
    assert any(c.endswith(".device") for c in comps) and any(".channel" in c for c in comps)
    assert doc["otherData"]["recorded"] == str(rec.recorded)


def test_mixed_trace_sums_to_reported_breakdown(mixed_trace):
    rec, row, jpath, ppath = mixed_trace
    df = reqtrace.read(ppath)
    got = reqtrace.breakdown(df)
    streams = set(got.index.get_level_values("stream"))
    assert streams == {"host.read", "accel.gpu"}
    for (run, stream), r in got.iterrows():
        col = (lambda s: f"{stream}.stage.{s}_ns")
        for s in STAGES:
            assert math.isclose(r[s], row[col(s)], rel_tol=1e-12, abs_tol=1e-12), (stream, s)
        # Stages add up to the latency, which is issue to completion.
        mean = f"{stream}_latency_ns_mean" if stream == "host.read" else f"{stream}.latency_ns_mean"
        assert math.isclose(sum(r[s] for s in STAGES), row[mean], rel_tol=1e-12)
        reqs = df[(df["stream"] == stream) & (df["kind"] == "request")]
        assert len(reqs) == r["requests"]
        assert math.isclose((reqs["done_ps"] - reqs["issued_ps"]).mean() / 1000, row[mean], rel_tol=1e-12)
    assert got.loc[(0, "accel.gpu"), "requests"] == row["accel.gpu.accesses"]
    # The same from the JSON: per component and stage, summed over the counted requests.
    doc = json.loads(jpath.read_text())
    per = defaultdict(float)
    comp = defaultdict(set)
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e["cat"] == "stage" and e["args"]["stream"]:
            per[(e["args"]["stream"], e["name"])] += e["dur"]
            comp[e["args"]["stream"]].add(names[e["pid"]])
    for (stream, s), us in per.items():
        n = got.loc[(0, stream), "requests"]
        assert math.isclose(us * 1000 / n, row[f"{stream}.stage.{s}_ns"], rel_tol=1e-9)
    assert "home" in comp["accel.gpu"] and "host.uncore" in comp["host.read"]


def test_every_request_spans_equal_its_stages(mixed_trace):
    rec, _, _, _ = mixed_trace
    spans = rec.frame()
    spans = spans[spans["kind"] == "span"]
    sums = (spans["end_ps"] - spans["start_ps"]).groupby([spans["request"], spans["stage"]]).sum()
    reqs = rec.requests()
    counted = reqs[reqs["stream"] != ""]
    assert len(counted) > 1000
    want = counted.set_index("request")[[f"stage.{s}_ps" for s in STAGES]]
    want.columns = list(STAGES)
    have = sums.unstack("stage").reindex(index=want.index, columns=list(STAGES)).fillna(0).astype("int64")
    pd.testing.assert_frame_equal(have, want.astype("int64"), check_names=False)


def test_parquet_round_trips(mixed_trace):
    rec, _, _, ppath = mixed_trace
    back = reqtrace.read(ppath)
    pd.testing.assert_frame_equal(back, rec.frame())
    assert back.attrs["sample"] == 1 and back.attrs["max_requests"] == 12_000
    assert back.attrs["recorded"] == rec.recorded
    assert set(back["kind"]) >= {"span", "flit", "credit"}


def _traffic(tmp_path, *extra, requests=3000):
    out = tmp_path / "t.json"
    res = CliRunner().invoke(main, ["run", "traffic", "--requests", str(requests), "--threads", "4",
                                    "--trace", str(out), *extra])
    return res, out


def test_cli_sampling_and_cap_bound_the_files(tmp_path):
    res, out = _traffic(tmp_path, "--trace-sample", "7", "--trace-max-requests", "100000")
    assert res.exit_code == 0, res.output
    offered = reqtrace.read(out).attrs["offered"]
    # Requests 0, 7, 14, ... of those issued: ceil(offered / 7).
    assert reqtrace.read(out).attrs["recorded"] == -(-offered // 7)
    assert reqtrace.read(out)["request"].nunique() == -(-offered // 7)
    sizes = {}
    for cap in (50, 400):
        (tmp_path / str(cap)).mkdir()
        res, out = _traffic(tmp_path / str(cap), "--trace-max-requests", str(cap))
        assert res.exit_code == 0, res.output
        df = reqtrace.read(out)
        assert df["request"].nunique() == cap and df.attrs["capped"] is True
        doc = json.loads(out.read_text())
        check_trace_events(doc)
        sizes[cap] = out.stat().st_size + out.with_suffix(".parquet").stat().st_size
        # A request's path here is a dozen spans and marks at most, each event under 400 bytes.
        per_request = len(doc["traceEvents"]) / cap
        assert per_request < 40
        assert sizes[cap] < cap * 40 * 400 + 64 * 1024
    assert sizes[50] < sizes[400]


@pytest.mark.parametrize("args, words", [
    (["--trace-sample", "-1"], ["--trace-sample = -1", "allowed: 1 to 1099511627776"]),
    (["--trace-sample", "0"], ["--trace-sample = 0", "allowed: 1 to 1099511627776"]),
    (["--trace-max-requests", "0"], ["--trace-max-requests = 0", "allowed: 1 to 100000000"]),
])
def test_cli_bad_trace_options(tmp_path, args, words):
    res, _ = _traffic(tmp_path, *args, requests=100)
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), res.output


def test_cli_unwritable_trace_path(tmp_path):
    for bad, word in ((tmp_path / "no" / "such" / "t.json", "does not exist"), (tmp_path, "is a directory")):
        res = CliRunner().invoke(main, ["run", "traffic", "--requests", "100", "--trace", str(bad)])
        assert res.exit_code == 2, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and "--trace" in lines[0] and word in lines[0] and "allowed" in lines[0]


def test_tracing_off_changes_nothing():
    """A run with a recorder gives the same results as one without (tracing only observes)."""
    a = mixed.run(topology.GraphSystem(topology.load(str(MIXED)), topology.memory_system).replace(), threads=2,
                  lines_per_thread=200, target="ddr", devices={"gpu": {"requesters": 2, "depth": 2}})
    rec = reqtrace.Recorder(3, 500)
    with rec:
        b = mixed.run(topology.GraphSystem(topology.load(str(MIXED)), topology.memory_system).replace(), threads=2,
                      lines_per_thread=200, target="ddr", devices={"gpu": {"requesters": 2, "depth": 2}})
    assert rec.recorded == 500
    pd.testing.assert_frame_equal(a, b)


def test_rows_csv_is_the_same_table(tmp_path):
    """What an engine without Python (gem5's host bridge) writes, the core's rows as CSV, reads back
    as the very frame the binding gives; two files (two host bridges) become runs 0 and 1 of one
    trace whose events are well formed."""
    rec = reqtrace.Recorder(2, 300)
    with rec:
        mixed.run(topology.GraphSystem(topology.load(str(MIXED)), topology.memory_system).replace(), threads=2,
                  lines_per_thread=200, target="ddr", devices={"gpu": {"requesters": 2, "depth": 2}})
    rows = tmp_path / "t.rows.csv"
    rec.sink.write_rows(str(rows))
    direct, back = rec.frame(), reqtrace.read_rows(rows)
    assert len(direct) > 300 and set(direct["kind"]) >= {"request", "span", "flit"}
    pd.testing.assert_frame_equal(direct, back, check_dtype=False)
    jpath, ppath = reqtrace.convert([rows, rows], tmp_path / "two")
    df = reqtrace.read(ppath)
    assert sorted(df["run"].unique()) == [0, 1]
    assert (df[df["run"] == 1].drop(columns="run").reset_index(drop=True)
            .equals(df[df["run"] == 0].drop(columns="run").reset_index(drop=True)))
    counts = check_trace_events(json.loads(jpath.read_text()))
    assert counts["X"] == 2 * int(((direct["kind"] == "request") | (direct["kind"] == "span")).sum())
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(reqtrace.ParamError, match="not a trace's rows"):
        reqtrace.read_rows(bad)
