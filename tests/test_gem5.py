"""gem5 runs of the CXL expander. They need a gem5 binary built with this
repository as EXTRAS, named by the environment variable GEM5."""

import csv
import os
import subprocess
from pathlib import Path

import pytest

import simcxl

from conftest import REPO

GEM5 = os.environ.get("GEM5")
pytestmark = [
    pytest.mark.gem5,
    pytest.mark.skipif(not GEM5 or not Path(GEM5).is_file(),
                       reason="needs GEM5 = a gem5 binary built with this repository as EXTRAS "
                              "(scons build/NULL/gem5.opt EXTRAS=<repo>)"),
]


def run_traffic(tmp_path, *args):
    out = tmp_path / "m5out"
    table = tmp_path / "t.csv"
    r = subprocess.run([GEM5, "-d", str(out), str(REPO / "gem5_configs" / "cxl_traffic.py"), *args,
                        "--csv", str(table)], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    with open(table) as f:
        return next(csv.DictReader(f))


@pytest.mark.parametrize("memory", ["cxl-asic", "cxl-fpga"])
def test_idle_latency_agrees_with_the_standalone_engine(tmp_path, memory):
    # One request at a time: 64 B every 2 us.
    row = run_traffic(tmp_path, "--memory", memory, "--pattern", "random", "--rate", "32MiB/s",
                      "--duration", "2ms")
    s = simcxl.load_preset(memory).replace(**{"host.mshrs_per_core": 1})
    ref = simcxl.traffic(s, threads=1, requests=2000).iloc[0]
    # gem5 has no core-side path: compare from the host bridge on.
    host = s.host.llc_latency_ns + s.host.uncore_req_latency_ns + s.host.uncore_resp_latency_ns
    assert float(row["read_latency_ns"]) == pytest.approx(ref["read_latency_ns_mean"] - host, rel=0.05)


@pytest.mark.parametrize("memory", ["cxl-asic", "cxl-fpga"])
def test_saturated_bandwidth_agrees_with_the_standalone_engine(tmp_path, memory):
    row = run_traffic(tmp_path, "--memory", memory, "--pattern", "random", "--rate", "200GiB/s",
                      "--duration", "200us")
    s = simcxl.load_preset(memory)
    ref = simcxl.traffic(s, threads=s.host.cores, requests=100000).iloc[0]
    assert float(row["read_gbps"]) == pytest.approx(ref["read_gbps"], rel=0.05)


def test_bad_parameter_fails_at_configuration(tmp_path):
    bad = simcxl.load_preset("cxl-asic").to_dict()
    bad["cxl"]["link"]["lanes"] = 3
    path = tmp_path / "bad.json"
    path.write_text(__import__("json").dumps(bad))
    r = subprocess.run([GEM5, "-d", str(tmp_path / "o"), str(REPO / "gem5_configs" / "cxl_traffic.py"),
                        "--memory", str(path)], capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    assert "cxl.link.lanes = 3 is not allowed; allowed values: 1, 2, 4, 8, 16" in r.stdout + r.stderr


def test_memtest_finds_no_mismatch(tmp_path):
    out = tmp_path / "m5out"
    table = tmp_path / "t.csv"
    r = subprocess.run([GEM5, "-d", str(out), str(REPO / "gem5_configs" / "cxl_memtest.py"), "--testers", "4",
                        "--max-loads", "5000", "--csv", str(table)], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    with open(table) as f:
        row = next(csv.DictReader(f))
    assert row["cause"] == "maximum number of loads reached"
    assert float(row["reads"]) > 1000 and float(row["writes"]) > 500
