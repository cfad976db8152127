"""Design-space sweeps: spec checking, sampling, resumable results, executors."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from simcxl import ParamError
from simcxl.sweep import spec as sw

from conftest import REPO

EXE = str(Path(sys.executable).with_name("simcxl"))


def spec(**kw):
    d = {"base": "cxl-asic", "workload": {"kind": "traffic", "threads": 2, "requests": 400},
         "axes": [{"param": "cxl.link.lanes", "values": [4, 8, 16]},
                  {"param": "workload.read_fraction", "values": [1.0, 0.5]}],
         "metrics": ["read_gbps", "total_gbps"]}
    d.update(kw)
    return d


def write_spec(path: Path, n_lat: int, requests: int = 300) -> Path:
    lat = ", ".join(str(10 + i) for i in range(n_lat))
    path.write_text(f"""
name = "resume"
base = "cxl-asic"
metrics = ["read_gbps", "read_latency_ns_mean"]
[workload]
kind = "traffic"
threads = 2
requests = {requests}
[[axes]]
param = "cxl.device.req_latency_ns"
values = [{lat}]
[[axes]]
param = "workload.read_fraction"
values = [1.0, 0.5]
""")
    return path


@pytest.mark.parametrize("bad,needle", [
    ({"axes": [{"param": "cxl.link.lane", "values": [4]}]}, "axis cxl.link.lane: cxl.link.lane is not a parameter"),
    ({"axes": [{"param": "cxl.link.lanes", "values": [3]}]},
     "axis cxl.link.lanes: cxl.link.lanes = 3 is not allowed; allowed values: 1, 2, 4, 8, 16"),
    ({"axes": [{"param": "workload.read_fraction", "values": [1.5]}]},
     "axis workload.read_fraction: 1.5 is out of range; allowed: from 0.0 to 1.0"),
    ({"axes": [{"param": "workload.depth", "values": [1]}]}, "depth is not a parameter of the traffic workload"),
    ({"axes": [{"param": "cxl.device.req_queue", "range": [0, 64]}], "sampling": {"method": "lhs", "points": 4}},
     "axis cxl.device.req_queue: cxl.device.req_queue = 0 is out of range; allowed: 1 to 65536"),
    ({"sampling": {"method": "sobol"}}, "sampling.method = 'sobol' is not allowed"),
    ({"sampling": {"metrics": ["x"]}}, "sampling.metrics is not a sampling key"),
    ({"workload": {"kind": "gups"}}, "workload.kind = 'gups' is not allowed"),
])
def test_bad_specs_are_rejected_before_anything_runs(bad, needle):
    with pytest.raises(ParamError) as e:
        sw.Sweep.from_dict(spec(**bad))
    assert needle in str(e.value)


def test_sweep_cli_refuses_no_workers(tmp_path):
    spec_path = write_spec(tmp_path / "s.toml", 2)
    r = subprocess.run([EXE, "sweep", str(spec_path), "--out", str(tmp_path / "o"), "--workers", "0"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "'--workers': 0 is out of range; allowed: a whole number from 1 on" in r.stderr
    assert not (tmp_path / "o").exists()


def test_grid_random_and_lhs_points():
    g = sw.Sweep.from_dict(spec())
    assert len(g.grid()) == 6 and g.grid()[0] == {"cxl.link.lanes": 4, "workload.read_fraction": 1.0}
    axes = [{"param": "cxl.device.req_latency_ns", "range": [10, 100]},
            {"param": "cxl.device.req_queue", "range": [16, 256], "log": True}]
    for method in ("random", "lhs"):
        s = sw.Sweep.from_dict(spec(axes=axes, sampling={"method": method, "points": 50}, seed=3))
        pts = s.grid()
        assert len(pts) == 50 and pts == s.grid()  # seeded: the same points every time
        assert all(10 <= p["cxl.device.req_latency_ns"] <= 100 for p in pts)
        assert all(isinstance(p["cxl.device.req_queue"], int) and 16 <= p["cxl.device.req_queue"] <= 256
                   for p in pts)
    lhs = sw.Sweep.from_dict(spec(axes=axes[:1], sampling={"method": "lhs", "points": 10})).grid()
    # Latin hypercube: one point in each tenth of the range.
    assert sorted(int((p["cxl.device.req_latency_ns"] - 10) / 9) for p in lhs) == list(range(10))


def test_results_table_has_params_metrics_engine_version_seed(tmp_path):
    df = sw.run(sw.Sweep.from_dict(spec()), tmp_path, workers=1)
    assert len(df) == 6 and set(df["status"]) == {"ok"}
    for col in ("param.cxl.link.lanes", "param.workload.read_fraction", "read_gbps", "total_gbps", "engine",
                "simcxl", "seed"):
        assert col in df.columns
    csv = pd.read_csv(tmp_path / "results.csv")
    pq = pd.read_parquet(tmp_path / "results.parquet")
    assert len(csv) == len(pq) == 6
    # Physics shows through: an x16 link carries more than an x4 one.
    by = pq.groupby("param.cxl.link.lanes")["total_gbps"].mean()
    assert by[16] > by[4]
    assert (tmp_path / "runs" / df["id"][0] / "result.json").exists()


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    s = sw.Sweep.from_dict(spec(metrics=["read_gbps", "no_such_metric"]))
    df = sw.run(s, tmp_path, workers=1)
    assert len(df) == 6 and set(df["status"]) == {"error"}
    assert "no_such_metric is not produced" in df["error"][0]


def test_rerun_runs_only_what_is_missing(tmp_path):
    s = sw.Sweep.from_dict(spec())
    sw.run(s, tmp_path, workers=1)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    (tmp_path / "results.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:10])  # torn last line
    calls = []
    df = sw.run(s, tmp_path, workers=1, progress=lambda d, t: calls.append(t))
    assert calls and calls[0] == 4 and len(df) == 6 and df["id"].is_unique


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_killed_sweep_resumes_to_the_same_results(tmp_path, sig):
    spec_path = write_spec(tmp_path / "s.toml", 60, requests=3000)  # long enough to kill part-way
    ref = tmp_path / "ref"
    subprocess.run([EXE, "sweep", str(spec_path), "--out", str(ref), "--workers", "1"], check=True,
                   capture_output=True)
    out = tmp_path / "out"
    # Its own process group, as a shell job: the signal reaches the workers too.
    p = subprocess.Popen([EXE, "sweep", str(spec_path), "--out", str(out), "--workers", "2"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    jsonl = out / "results.jsonl"
    try:
        deadline = time.time() + 60
        while time.time() < deadline and (not jsonl.exists() or len(jsonl.read_text().splitlines()) < 10):
            time.sleep(0.05)
        os.killpg(p.pid, sig)
        p.wait(timeout=60)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    partial = len(jsonl.read_text().splitlines())
    assert 10 <= partial < 120, "killed part-way"
    subprocess.run([EXE, "sweep", str(spec_path), "--out", str(out), "--workers", "2"], check=True,
                   capture_output=True)
    got = sw.load_results(out).set_index("id").sort_index()
    want = sw.load_results(ref).set_index("id").sort_index()
    assert len(got) == 120 and got.index.is_unique
    lines = [json.loads(x)["id"] for x in jsonl.read_text().splitlines() if x.strip().endswith("}")]
    assert len(lines) == len(set(lines)), "every point exactly once"
    cols = ["read_gbps", "read_latency_ns_mean", "status"]
    pd.testing.assert_frame_equal(got[cols], want[cols])


def test_dask_executor_matches_local(tmp_path):
    pytest.importorskip("dask.distributed")
    s = sw.Sweep.from_dict(spec())
    local = sw.run(s, tmp_path / "local", workers=1).set_index("id").sort_index()
    dask = sw.run(s, tmp_path / "dask", executor="dask", workers=2).set_index("id").sort_index()
    cols = ["read_gbps", "total_gbps", "status"]
    pd.testing.assert_frame_equal(local[cols], dask[cols])


def test_thousand_points_each_once(tmp_path):
    spec_path = write_spec(tmp_path / "s.toml", 500, requests=200)
    s = sw.Sweep.from_toml(spec_path)
    df = sw.run(s, tmp_path / "out", per_run_dirs=False)
    assert len(df) == 1000 and df["id"].is_unique and set(df["status"]) == {"ok"}


def test_readme_example_and_plots(tmp_path):
    out = tmp_path / "sw"
    r = subprocess.run([EXE, "sweep", str(REPO / "examples" / "lanes_latency_mix.toml"), "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for args in (["--x", "param.cxl.link.lanes", "--y", "total_gbps", "--hue", "param.workload.read_fraction"],
                 ["--x", "param.cxl.link.lanes", "--y", "param.cxl.device.req_latency_ns", "--z",
                  "read_latency_ns_mean"]):
        png = tmp_path / "p.png"
        r = subprocess.run([EXE, "plot", str(out), *args, "--out", str(png)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert png.read_bytes()[:4] == b"\x89PNG"
    r = subprocess.run([EXE, "plot", str(out), "--x", "lanes", "--y", "total_gbps"], capture_output=True, text=True)
    assert r.returncode == 2 and "did you mean param.cxl.link.lanes" in r.stderr
