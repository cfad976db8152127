"""gem5 runs of the CXL expander. They need a gem5 binary built with this
repository as EXTRAS, named by the environment variable GEM5. Figures the
differential tests measure are printed (run with -s to see them)."""

import csv
import json
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


def gem5(tmp_path, config, *args, out="m5out", check=True):
    r = subprocess.run([GEM5, "-d", str(tmp_path / out), str(REPO / "gem5_configs" / config), *args],
                       capture_output=True, text=True, timeout=1200)
    if check:
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


def table(path):
    with open(path) as f:
        return next(csv.DictReader(f))


def run_traffic(tmp_path, *args):
    gem5(tmp_path, "cxl_traffic.py", *args, "--csv", str(tmp_path / "t.csv"))
    return table(tmp_path / "t.csv")


@pytest.mark.parametrize("memory", ["cxl-asic", "cxl-fpga"])
def test_idle_latency_agrees_with_the_standalone_engine(tmp_path, memory):
    # One request at a time: 64 B about every 2 us, in both engines.
    row = run_traffic(tmp_path, "--memory", memory, "--pattern", "random", "--rate", "32MiB/s",
                      "--duration", "2ms")
    s = simcxl.load_preset(memory).replace(**{"host.mshrs_per_core": 1})
    ref = simcxl.traffic(s, threads=1, requests=2000, inject_delay_ns=2000).iloc[0]
    # gem5's generator sits at the memory port: compare from the host bridge on,
    # without the standalone host's core-side path (LLC miss and mesh).
    host = s.host.llc_latency_ns + s.host.uncore_req_latency_ns + s.host.uncore_resp_latency_ns
    assert ref["read.stage.host_uncore_ns"] == pytest.approx(host)
    g5, sa = float(row["read_latency_ns"]), ref["read_latency_ns_mean"] - host
    print(f"\n{memory} idle read latency from the host bridge: gem5 {g5:.1f} ns, standalone {sa:.1f} ns "
          f"({(g5 / sa - 1) * 100:+.1f}%)")
    assert float(row["reads"]) > 900
    assert g5 == pytest.approx(sa, rel=0.05)


@pytest.mark.parametrize("memory", ["cxl-asic", "cxl-fpga"])
def test_saturated_bandwidth_agrees_with_the_standalone_engine(tmp_path, memory):
    row = run_traffic(tmp_path, "--memory", memory, "--pattern", "random", "--rate", "200GiB/s",
                      "--duration", "200us")
    s = simcxl.load_preset(memory)
    ref = simcxl.traffic(s, threads=s.host.cores, requests=100000).iloc[0]
    g5, sa = float(row["read_gbps"]), ref["read_gbps"]
    print(f"\n{memory} saturated random-read bandwidth: gem5 {g5:.2f} GB/s, standalone {sa:.2f} GB/s "
          f"({(g5 / sa - 1) * 100:+.1f}%)")
    assert float(row["retries"]) > 0  # the host bridge pushed back
    assert g5 == pytest.approx(sa, rel=0.05)


def test_configs_run_with_writes_and_report_every_stage(tmp_path):
    row = run_traffic(tmp_path, "--memory", "cxl-fpga", "--pattern", "linear", "--rd-perc", "70",
                      "--rate", "8GiB/s", "--duration", "50us")
    assert float(row["reads"]) > 1000 and float(row["writes"]) > 300
    assert float(row["write_gbps"]) > 0
    stages = [float(v) for k, v in row.items() if k.endswith("_ns") and k != "read_latency_ns"]
    assert sum(stages) == pytest.approx(float(row["read_latency_ns"]), rel=1e-3)


def test_bad_preset_parameter_fails_before_gem5_objects_are_made(tmp_path):
    bad = simcxl.load_preset("cxl-asic").to_dict()
    bad["cxl"]["link"]["lanes"] = 3
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    r = gem5(tmp_path, "cxl_traffic.py", "--memory", str(path), check=False)
    assert r.returncode != 0
    assert "cxl.link.lanes = 3 is not allowed; allowed values: 1, 2, 4, 8, 16" in r.stdout + r.stderr
    assert "Starting simulation" not in r.stdout + r.stderr


@pytest.mark.parametrize("param, message", [
    ("link_lanes=3", "board.memory.module.link.lanes = 3 is not allowed; allowed values: 1, 2, 4, 8, 16"),
    ("media_bus_bytes=8", "bus_bytes x burst_length = 128 is not allowed; allowed: 64"),
    ("device_req_latency_ns=-1", "device.req_latency_ns = -1 is out of range; allowed: 0 to 10000"),
])
def test_bad_simobject_parameter_fails_at_instantiation_with_its_name(tmp_path, param, message):
    # Set on the SimObject directly, past the Python dataclasses: the timing
    # core's check runs when gem5 instantiates the object, before any tick.
    r = gem5(tmp_path, "cxl_traffic.py", "--memory", "cxl-asic", "--param", param, check=False)
    text = r.stdout + r.stderr
    assert r.returncode != 0
    assert "fatal: board.memory.module: bad CXLMemExpander parameter" in text
    assert message in text
    assert "Starting simulation" not in text and "panic" not in text


def test_unknown_simobject_parameter_is_refused_by_name(tmp_path):
    r = gem5(tmp_path, "cxl_traffic.py", "--param", "link_lane=8", check=False)
    assert r.returncode != 0
    assert "no parameter link_lane" in r.stdout + r.stderr


@pytest.mark.parametrize("mode", ["timing", "atomic"])
def test_memtest_finds_no_mismatch(tmp_path, mode):
    # MemTest compares every load with its own copy of memory and panics on the
    # first wrong byte; a clean run stops at --max-loads per tester.
    gem5(tmp_path, "cxl_memtest.py", "--testers", "4", "--max-loads", "20000", "--mem-mode", mode,
         "--csv", str(tmp_path / "t.csv"))
    row = table(tmp_path / "t.csv")
    print(f"\nMemTest ({mode}): {float(row['loads_checked']):.0f} loads checked, "
          f"{float(row['stores']):.0f} stores, {float(row['reads']):.0f} timing reads and "
          f"{float(row['writes']):.0f} timing writes through the CXL path, no mismatch")
    assert row["cause"] == "maximum number of loads reached"
    assert float(row["loads_checked"]) > 3 * 20000  # the first tester to finish ends the run
    if mode == "timing":
        assert float(row["reads"]) > 20000 and float(row["writes"]) > 10000


def test_checkpoint_restore_gives_the_same_stats(tmp_path):
    ckpt = tmp_path / "cpt"
    gem5(tmp_path, "cxl_checkpoint.py", "--save", str(ckpt), "--csv", str(tmp_path / "save.csv"), out="save")
    gem5(tmp_path, "cxl_checkpoint.py", "--restore", str(ckpt), "--csv", str(tmp_path / "restore.csv"),
         out="restore")
    saved, restored = table(tmp_path / "save.csv"), table(tmp_path / "restore.csv")
    # The checkpoint was taken mid-run, with the expander's timing state in it.
    assert int(saved["start_tick"]) > 0 and saved["start_tick"] == restored["start_tick"]
    cpt = (ckpt / "m5.cpt").read_text()
    assert "[system.cxl]" in cpt and "link0.m2s.openStart=" in cpt and "device0.media.ch0.rank0.bank0.openRow=" in cpt
    assert float(saved["cxl.readReqs"]) > 1000 and float(saved["cxl.writeReqs"]) > 500
    assert restored == saved


def test_checkpoint_needs_the_expander_state(tmp_path):
    # The same restore from a checkpoint whose expander state is reset (open
    # rows closed, refresh moved) diverges: the comparison above has teeth.
    ckpt = tmp_path / "cpt"
    gem5(tmp_path, "cxl_checkpoint.py", "--save", str(ckpt), "--csv", str(tmp_path / "save.csv"), out="save")
    m5cpt = ckpt / "m5.cpt"
    lines = []
    for line in m5cpt.read_text().splitlines():
        if ".openRow=" in line:
            line = line.split("=")[0] + f"={(1 << 64) - 1}"
        if ".nextRefresh=" in line:
            line = line.split("=")[0] + f"={int(line.split('=')[1]) + 1000000}"
        lines.append(line)
    m5cpt.write_text("\n".join(lines) + "\n")
    gem5(tmp_path, "cxl_checkpoint.py", "--restore", str(ckpt), "--csv", str(tmp_path / "restore.csv"),
         out="restore")
    assert table(tmp_path / "restore.csv") != table(tmp_path / "save.csv")
