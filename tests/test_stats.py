"""The one statistics type (kernel/stats.hpp): a bounded log-linear histogram.

Expected values come from numpy over the same samples: exact count, sum, min,
max and mean, and exact nearest-rank percentiles (numpy's "inverted_cdf"),
which the histogram must report within its stated relative error (1/128).
"""
import numpy as np
import pytest

from simcxl import _core

QS = [0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0]
BOUND = 1 / 128


def _check(values):
    values = np.asarray(values, dtype=np.uint64)
    h = _core._testing.histogram(values.tolist(), QS)
    assert h["relative_error"] == BOUND
    assert h["count"] == len(values)
    assert h["sum"] == sum(int(v) for v in values)
    assert h["min"] == int(values.min()) and h["max"] == int(values.max())
    assert h["mean"] == pytest.approx(sum(int(v) for v in values) / len(values), rel=1e-15)
    exact = np.percentile(values.astype(np.float64), [100 * q for q in QS], method="inverted_cdf")
    for q, got, want in zip(QS, h["percentiles"], exact):
        assert abs(got - want) <= BOUND * want, (q, got, want)
    return h, exact


def test_uniform():
    rng = np.random.default_rng(1)
    _check(rng.integers(1_000, 2_000_000, size=100_000))


def test_exponential():
    rng = np.random.default_rng(2)
    # latencies in ps: 80 ns floor plus an exponential tail of mean 150 ns
    _check(80_000 + np.floor(rng.exponential(150_000, size=100_000)))


def test_constant_is_exact():
    h, _ = _check([123_456] * 1000)
    assert h["percentiles"] == [123_456.0] * len(QS)  # clamped to min = max


def test_two_point():
    # 30 % at 100 ns, 70 % at 5 us, shuffled: p10/p25 must be the low value,
    # p50 and above the high one (n chosen so no quantile falls on the boundary).
    rng = np.random.default_rng(3)
    v = np.array([100_000] * 3001 + [5_000_000] * 6999)
    rng.shuffle(v)
    h, exact = _check(v)
    for q, got, want in zip(QS, h["percentiles"], exact):
        assert want == (100_000 if q <= 0.3 else 5_000_000)


def test_small_values_are_exact():
    # below 64 every value has its own bucket
    v = list(range(64)) * 3
    h, exact = _check(v)
    assert h["percentiles"] == [float(x) for x in exact]


def test_huge_values():
    # up to 2^52 ps (52 days); the exact sum stays below 2^64
    rng = np.random.default_rng(4)
    _check(rng.integers(1 << 40, 1 << 52, size=2_000, dtype=np.uint64))


def test_empty():
    h = _core._testing.histogram([], [0.5])
    assert (h["count"], h["sum"], h["min"], h["max"], h["mean"], h["percentiles"]) == (0, 0, 0, 0, 0.0, [0.0])


def test_memory_does_not_grow_with_the_count():
    # 10^3 and 10^7 values over the same range hold the same counters; any range
    # fits in (64 - 6 + 1) * 64 counters of 8 B.
    small = _core._testing.histogram_bytes(1_000, 1 << 30)
    large = _core._testing.histogram_bytes(10_000_000, 1 << 30)
    assert small == large
    assert _core._testing.histogram_bytes(1_000_000, 1 << 63) <= 59 * 64 * 8


def test_workloads_report_through_it():
    # An accelerator stream and a memory workload both report percentiles that
    # lie between their exact min and max and are ordered.
    import simcxl.workloads.coherent as co
    from simcxl.engine import standalone as engine
    r = co.accel("type1-asic", requests=4000).iloc[0]
    assert r["latency_p50_ns"] <= r["latency_p99_ns"] <= r["latency_max_ns"]
    t = engine.traffic("cxl-asic", threads=4, requests=4000).iloc[0]
    assert t["read_latency_p50_ns"] <= t["read_latency_p90_ns"] <= t["read_latency_p99_ns"] <= \
        t["read_latency_p999_ns"] <= t["read_latency_ns_max"]


def test_long_accelerator_run_keeps_memory_flat(tmp_path):
    # The accelerator workloads kept every latency (8 B per request, and a copy
    # to sort): 1.5 M requests grew the peak RSS by about 23 MiB. Run in a fresh
    # process so the peak is this run's own.
    import subprocess
    import sys
    code = (
        "import resource, simcxl.workloads.coherent as co\n"
        "co.accel('type1-asic', pattern='single', requests=1000)\n"
        "r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "co.accel('type1-asic', pattern='single', requests=1_500_000)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0)\n")
    # From a folder of its own: the repository root would shadow the installed package.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    grew_kib = int(out.stdout.split()[-1])
    assert grew_kib < 4 * 1024, grew_kib
