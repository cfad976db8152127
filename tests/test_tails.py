"""Latency tails: every workload reports ``latency_p50_ns`` ... ``latency_p999_ns`` (under its
stream's prefix), and each is the exact quantile of the requests it counted, to within the
histogram's resolution. The exact quantiles come from a second route: the request trace of the
same run, every request recorded, sorted in Python."""

import numpy as np
import pytest

from simcxl.workloads import coherent, nic
from simcxl.engine import standalone as engine, reqtrace

TAILS = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
# LogHistogram keeps 64 buckets per octave and answers with a bucket's middle: at most half a
# bucket, 1/128 of the value, from the exact order statistic (ext/cxlcore/kernel/stats.hpp).
RESOLUTION = 1 / 128


def exact(latencies_ns, q):
    """The order statistic of rank ceil(q n), as the histogram ranks (numpy's inverted CDF)."""
    return float(np.quantile(np.asarray(latencies_ns), q, method="inverted_cdf"))


def traced(run):
    rec = reqtrace.Recorder(sample=1, max_requests=1_000_000)
    with rec:
        row = run().iloc[0]
    return row, rec.frame()


@pytest.mark.parametrize("workload,stream,prefix", [
    ("traffic", "read", "read_"),
    ("accel", "accesses", ""),
])
def test_reported_tails_are_the_traced_requests_quantiles(workload, stream, prefix):
    if workload == "traffic":
        row, df = traced(lambda: engine.traffic("cxl-asic", threads=16, requests=30_000))
    else:
        row, df = traced(lambda: coherent.accel("type2-hdmdb", requests=30_000))
    reqs = df[(df["kind"] == "request") & (df["stream"] == stream)]
    lat = (reqs["done_ps"] - reqs["issued_ps"]).to_numpy() / 1000.0
    assert len(lat) > 10_000  # enough requests that p999 is not the maximum
    for name, q in TAILS.items():
        want = exact(lat, q)
        got = row[f"{prefix}latency_{name}_ns"]
        assert abs(got - want) <= want * RESOLUTION + 1e-9, (name, got, want)
    # A loaded random-read run has a tail: p999 sits well above the median.
    assert row[f"{prefix}latency_p999_ns"] > 1.2 * row[f"{prefix}latency_p50_ns"]


def test_every_workload_reports_the_four_tails_in_order():
    rows = {
        "lmbench": (engine.lmbench("cxl-asic", working_sets=["64m"], accesses=3000).iloc[0], "memory_"),
        "stream": (engine.stream("cxl-asic", threads=2, lines_per_thread=3000).iloc[0], "read_"),
        "traffic": (engine.traffic("ddr-local", threads=4, requests=3000).iloc[0], "read_"),
        "accel": (coherent.accel("type1-asic", requests=3000).iloc[0], ""),
        "rao": (nic.rao("type1-asic", kernels=["rand"], ops=["add"], mechanisms=["cxl-nic"], iters=300).iloc[0], ""),
    }
    for name, (r, p) in rows.items():
        vals = [r[f"{p}latency_{t}_ns"] for t in TAILS]
        assert 0 < vals[0] <= vals[1] <= vals[2] <= vals[3], (name, vals)


def test_the_histogram_holds_every_counted_request_in_its_bucket():
    """The reported histogram, bucket by bucket, is the traced requests' latencies counted into
    [lo, hi): the same requests, the same edges (a second count, in Python)."""
    from simcxl.engine import histograms
    rec = reqtrace.Recorder(sample=1, max_requests=1_000_000)
    with histograms.record() as h, rec:
        row = engine.traffic("cxl-asic", threads=16, requests=20_000).iloc[0]
    hist = h.frame()
    read = hist[hist["stream"] == "read_latency"]
    assert set(hist["run"]) == {0} and len(read) > 10
    df = rec.frame()
    reqs = df[(df["kind"] == "request") & (df["stream"] == "read")]
    lat_ps = (reqs["done_ps"] - reqs["issued_ps"]).to_numpy()
    assert read["count"].sum() == len(lat_ps)
    lo = np.rint(read["lo_ns"].to_numpy() * 1000).astype(np.int64)
    hi = np.rint(read["hi_ns"].to_numpy() * 1000).astype(np.int64)
    assert (lo[1:] >= hi[:-1]).all()  # buckets in order, disjoint
    for a, b, c in zip(lo, hi, read["count"]):
        assert ((lat_ps >= a) & (lat_ps < b)).sum() == c
    # Its order statistics are the reported tails.
    cum = np.cumsum(read["count"].to_numpy())
    k = int(np.searchsorted(cum, int(np.ceil(0.99 * cum[-1]))))
    assert read["lo_ns"].iloc[k] <= row["read_latency_p99_ns"] < read["hi_ns"].iloc[k]


def test_histograms_number_the_runs_in_order():
    """Two runs, local DDR5 then a CXL expander: each stream's histograms are numbered in the order the
    runs reported them, each holds that run's counted reads, and the expander's median is the slower
    (its link and controller add to the same kind of DRAM)."""
    from simcxl.engine import histograms
    with histograms.record() as h:
        rows = [engine.traffic(m, threads=1, requests=3000).iloc[0] for m in ("ddr-local", "cxl-asic")]
    f = h.frame()
    assert sorted(set(f["run"])) == [0, 1] and set(f["stream"]) == {"read_latency"}
    medians = []
    for run, row in enumerate(rows):
        b = f[f["run"] == run]
        assert b["count"].sum() > 2000
        cum = b["count"].cumsum().to_numpy()
        k = int(np.searchsorted(cum, int(np.ceil(0.5 * cum[-1]))))
        assert b["lo_ns"].iloc[k] <= row["read_latency_p50_ns"] < b["hi_ns"].iloc[k]
        medians.append(row["read_latency_p50_ns"])
    assert medians[0] < medians[1]


def test_cli_writes_the_histograms_and_refuses_a_bad_path(tmp_path):
    import pandas as pd
    from click.testing import CliRunner

    from simcxl.cli import main
    out = tmp_path / "h.csv"
    r = CliRunner().invoke(main, ["run", "traffic", "-m", "ddr-local", "--threads", "2", "--requests", "2000",
                                  "--json", "--histograms", str(out)])
    assert r.exit_code == 0, r.output
    f = pd.read_csv(out)
    assert list(f.columns) == ["run", "stream", "lo_ns", "hi_ns", "count"]
    assert (f["lo_ns"] < f["hi_ns"]).all() and f[f["stream"] == "read_latency"]["count"].sum() > 1000
    bad = CliRunner().invoke(main, ["run", "traffic", "--requests", "2000", "--histograms", str(tmp_path / "no" / "h.csv")])
    assert bad.exit_code == 2 and "--histograms" in bad.output and "existing folder" in bad.output
