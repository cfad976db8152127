"""Request traces and latency tails from gem5 runs: a CXLHostBridge with trace_file records the
same spans as the standalone engine's --trace (the core's components record them), written as rows
and converted to trace-event JSON and Parquet; its read-latency percentiles are the standalone
engine's names in stats.txt. Needs GEM5 (a gem5 binary built with this repository as EXTRAS).

Why the checks hold, from the definitions: the bridge adds each completed read's stage[] to
stageTicks and its latency to readLatency (and to its percentile histogram); with every request
traced, the spans of the reads it counted sum, stage by stage, to stageTicks exactly (each change of
a stage records a span of the same length), and their issue-to-done times are the latencies whose
order statistics the percentiles approximate to within half a bucket (1/128 relative)."""

import json
import math

import numpy as np
import pytest

from simcxl.engine import reqtrace
from simcxl.gem5.components import read_stats, stat

from conftest import REPO
from test_gem5 import GEM5, gem5, pytestmark, run_traffic  # noqa: F401  (gem5 marks and skip reason)
from test_request_trace import check_trace_events

BRIDGE = "board.memory.bridge"


@pytest.mark.parametrize("warmup", [None, "5us"])
def test_trace_spans_add_up_to_the_bridge_stats_and_tails_match(tmp_path, warmup):
    trace = tmp_path / "trace"
    row = run_traffic(tmp_path, "--memory", "cxl-asic", "--pattern", "random", "--rate", "16GiB/s",
                      "--duration", "20us", "--trace", str(trace), "--trace-max-requests", "100000",
                      *(["--warmup", warmup] if warmup else []))
    doc = json.loads((tmp_path / "trace.json").read_text())
    counts = check_trace_events(doc)
    df = reqtrace.read(tmp_path / "trace.parquet")
    reqs = df[df["kind"] == "request"]
    counted = reqs[reqs["stream"] == f"{BRIDGE}.read"]
    stats = read_stats(tmp_path / "m5out" / "stats.txt")
    own = stat(stats, "^" + BRIDGE.replace(".", r"\.") + r"\.[^.]+$")
    done = own[f"{BRIDGE}.readsCompleted"]
    assert done == own[f"{BRIDGE}.readLatency::samples"]
    # Every request was traced (sample 1, cap not reached): one record per request the bridge took
    # (with a warm-up, the stats count only the rest: its records are traced but counted by none).
    if warmup is None:
        assert len(reqs) == own[f"{BRIDGE}.readReqs"] + own[f"{BRIDGE}.writeReqs"]
    else:
        assert len(reqs) > own[f"{BRIDGE}.readReqs"] + 1000
    assert len(counted) == done > 2500
    assert counts["X"] == int(((df["kind"] == "request") | (df["kind"] == "span")).sum())
    spans = df[(df["kind"] == "span") & (df["stream"] == f"{BRIDGE}.read")]
    by_stage = spans.assign(d=spans["end_ps"] - spans["start_ps"]).groupby("stage")["d"].sum()
    for s in reqtrace.STAGES:
        assert by_stage.get(s, 0) == pytest.approx(own.get(f"{BRIDGE}.stageTicks::{s}", 0.0), rel=1e-12, abs=0.5), s
    # The run's reported breakdown (its table's <stage>_ns) is what the trace's spans give.
    bd = reqtrace.breakdown(df).loc[(0, f"{BRIDGE}.read")]
    assert bd["requests"] == done
    for s in ("host_port", "link_down", "device", "media_queue", "media_service", "link_up"):
        assert bd[s] == pytest.approx(float(row[f"{s}_ns"]), rel=1e-9), s
    # Tails: the bridge's percentiles against the exact order statistics of the traced latencies.
    lat = np.sort((counted["done_ps"] - counted["issued_ps"]).to_numpy()) / 1000.0
    assert own[f"{BRIDGE}.totalReadLatency"] / 1000.0 == pytest.approx(lat.sum(), rel=1e-12)
    for q, name in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p999")):
        exact = lat[max(1, math.ceil(q * len(lat))) - 1]  # nearest rank, as the core defines it
        got = own[f"{BRIDGE}.read_latency_{name}_ns"]
        assert got == float(row[f"read_latency_{name}_ns"])
        assert abs(got - exact) <= exact / 128 + 0.001, (name, got, exact)
    print(f"\ngem5 cxl-asic random reads at 16 GiB/s: {done:.0f} reads traced; p50 {own[f'{BRIDGE}.read_latency_p50_ns']:.1f}"
          f" ns, p99 {own[f'{BRIDGE}.read_latency_p99_ns']:.1f} ns, p99.9 {own[f'{BRIDGE}.read_latency_p999_ns']:.1f} ns")


def test_trace_of_several_hosts_has_a_run_per_host(tmp_path):
    trace = tmp_path / "hosts"
    gem5(tmp_path, "cxl_hosts.py", "--system", str(REPO / "examples" / "topologies" / "pool-4hosts-mld.toml"),
         "--rate", "4GiB/s", "--duration", "5us", "--trace", str(trace), "--trace-sample", "4",
         "--trace-max-requests", "50", "--csv", str(tmp_path / "h.csv"))
    df = reqtrace.read(tmp_path / "hosts.parquet")
    reqs = df[df["kind"] == "request"]
    assert sorted(reqs["run"].unique()) == [0, 1, 2, 3]
    # Every 4th request of each host, at most 50: 4 GiB/s of 64 B for 5 us is about 330 a host.
    assert all(n == 50 for n in reqs.groupby("run").size())
    spans = df[df["kind"] == "span"]
    assert "switch" in set(spans["stage"])  # the pool's switch is on every host's path
    check_trace_events(json.loads((tmp_path / "hosts.json").read_text()))
