"""Latency tails: every workload reports ``latency_p50_ns`` ... ``latency_p999_ns`` (under its
stream's prefix), and each is the exact quantile of the requests it counted, to within the
histogram's resolution. The exact quantiles come from a second route: the request trace of the
same run, every request recorded, sorted in Python."""

import numpy as np
import pytest

from simcxl import coherent, engine, nic, reqtrace

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
