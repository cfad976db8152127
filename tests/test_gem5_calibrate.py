"""The gem5 engine of the calibration harness: STREAM through the SimObjects
(traffic generators, and the guest STREAM on O3 cores), and a whole
calibration through gem5 (lat_mem_rd and STREAM on X86 guests).
They need GEM5 = a gem5 built for X86 with this repository as EXTRAS."""

import json
from pathlib import Path

import pytest

import simcxl
from simcxl.calibration import calibrate

from conftest import CC, build_guest
from test_gem5 import GEM5, gem5, table

pytestmark = [
    pytest.mark.gem5,
    pytest.mark.skipif(not GEM5 or not Path(GEM5).is_file(),
                       reason="needs GEM5 = a gem5 binary built for X86 with this repository as EXTRAS "
                              "(scons build/X86/gem5.opt EXTRAS=<repo>)"),
]


def run_stream(tmp_path, memory, kernel, outstanding=4, threads=16):
    out = tmp_path / f"{memory}-{kernel}-{outstanding}.csv"
    gem5(tmp_path, "cxl_stream.py", "--memory", memory, "--kernel", kernel, "--threads", str(threads),
         "--outstanding", str(outstanding), "--csv", str(out), out=out.stem)
    return table(out)


def test_stream_traffic_through_gem5_counts_as_stream_advances(tmp_path):
    ref = simcxl.stream("cxl-asic", ["copy"], threads=16)["stream_gbps"].iloc[0]
    for kernel, arrays, streams in (("copy", 2, 3), ("add", 3, 4)):
        row = run_stream(tmp_path, "cxl-asic", kernel)
        counted, traffic = float(row["stream_gbps"]), float(row["read_gbps"]) + float(row["write_gbps"])
        # Lockstep counts each array once of the lines every stream moved:
        # never more than that share of the traffic, less when streams drift.
        assert 0.5 * traffic * arrays / streams < counted <= traffic * arrays / streams * 1.001
        if kernel == "copy":
            assert counted == pytest.approx(ref, rel=0.1)


def run_stream_se(tmp_path, memory, kernel, threads, elements=8192, *extra):
    if not CC:
        pytest.skip("needs a C compiler to build benchmarks/guest/stream.c")
    exe = build_guest(tmp_path, "stream")
    out = tmp_path / f"se-{memory}-{kernel}-{threads}.csv"
    gem5(tmp_path, "cxl_stream_se.py", "--binary", str(exe), "--memory", memory, "--kernel", kernel,
         "--threads", str(threads), "--elements", str(elements), "--l2", "256KiB", *extra, "--csv", str(out),
         out=out.stem)
    row = table(out)
    assert row["check"] == "ok"
    return row


def test_stream_guest_on_out_of_order_cores(tmp_path):
    row = run_stream_se(tmp_path, "cxl-asic", "copy", 2, elements=32768)
    # Each copied line is a load, a read for ownership and a write-back: the
    # host bridge times gem5's whole-line ownership requests as reads.
    assert float(row["read_gbps"]) / float(row["write_gbps"]) == pytest.approx(2.0, rel=0.1)
    # Two cores are bound by their misses in flight, as in the standalone engine;
    # gem5's O3 cores keep about 12 of their 16 in flight (Little's law on the
    # bridge's reads), the standalone engine's all 16: up to a quarter less.
    ref = simcxl.stream("cxl-asic", ["copy"], threads=2)["stream_gbps"].iloc[0]
    assert 0.75 * ref <= float(row["stream_gbps"]) <= 1.05 * ref


@pytest.mark.parametrize("memory", ["cxl-asic", "cxl-fpga"])
def test_stream_on_sixteen_cores_agrees_with_the_standalone_engine(tmp_path, memory):
    # The calibration's STREAM: 16 threads saturate the device; gem5's host
    # (O3 cores, classic caches) and the standalone one agree within 15 %.
    row = run_stream_se(tmp_path, memory, "copy", 16)
    ref = simcxl.stream(memory, ["copy"], threads=16)["stream_gbps"].iloc[0]
    assert float(row["stream_gbps"]) == pytest.approx(ref, rel=0.15)
    assert float(row["read_gbps"]) / float(row["write_gbps"]) == pytest.approx(2.0, rel=0.15)


def test_non_temporal_stream_through_gem5_reads_no_lines_for_ownership(tmp_path):
    # (On cxl-fpga: 12.0 GB/s against the standalone engine's 13.1.)
    row = run_stream_se(tmp_path, "cxl-asic", "copy", 16, 8192, "--stores", "non-temporal")
    # A copied line is a load and a write alone.
    assert float(row["read_gbps"]) / float(row["write_gbps"]) == pytest.approx(1.0, rel=0.15)
    ref = simcxl.stream("cxl-asic", ["copy"], threads=16, stores="non-temporal")["stream_gbps"].iloc[0]
    assert float(row["stream_gbps"]) == pytest.approx(ref, rel=0.15)


def test_calibrate_through_gem5_fits_and_resumes(tmp_path, monkeypatch):
    if not CC:
        pytest.skip("needs a C compiler to build benchmarks/guest/chase.c")
    monkeypatch.setenv("GEM5", GEM5)
    tb = tmp_path / "tb"
    tb.mkdir()
    # A host with a 4 MiB LLC keeps the guest's warm-up short.
    (tb / "testbed.toml").write_text(
        '# Source: made up for the gem5 engine test.\nname = "tiny-gem5"\n[memories.expander]\n'
        'kind = "cxl-type3"\nlink = { gen = 5, lanes = 16 }\n'
        'params = { "host.llc_bytes" = 4194304, "host.llc_assoc" = 16 }\n')
    (tb / "lat_mem_rd.csv").write_text("memory,working_set_bytes,latency_ns\nexpander,1048576,45\n"
                                       "expander,67108864,300\n")
    # Four STREAM threads keep each gem5 run short; the device queue can still bound them
    # (gem5's four copies top out near 9.8 GB/s, each with consecutive frames).
    (tb / "stream.csv").write_text("memory,kernel,threads,bandwidth_gbps\nexpander,copy,4,8.0\n")
    out = tmp_path / "out"
    summary = calibrate.run(tb, out, engine_name="gem5", workers=1, log=print)
    pts = {(p["experiment"], p["x"]): p for p in summary["points"]}
    for key in (("lat_mem_rd", 67108864), ("stream", "copy")):
        assert pts[key]["role"] == "fit" and abs(pts[key]["error_pct"]) <= 2.0, pts[key]
    # An LLC hit in gem5's classic cache costs what the host's LLC does.
    host = simcxl.load_preset("cxl-asic").host
    assert pts[("lat_mem_rd", 1048576)]["simulated"] == pytest.approx(host.llc_latency_ns, rel=0.1)
    preset = simcxl.config.presets.load_file(out / "presets" / "expander.json")
    assert preset.provenance["engine"] == "gem5"
    # A latency point and a STREAM point fit the device latency and queue; the write tracker
    # needs a loaded-bandwidth point, the ranks only a STREAM point the queue cannot reach.
    fitted = preset.provenance["fitted"]
    assert {"cxl.device.req_latency_ns", "cxl.device.req_queue"} <= set(fitted)
    assert "cxl.device.write_tracker" not in fitted
    for knob in calibrate.KNOBS["cxl-type3"]:
        if knob.params[0] in fitted:
            assert knob.lo <= fitted[knob.params[0]] <= knob.hi
    # Every gem5 run is kept: the same calibration again runs nothing new.
    runs = sorted(p.name for p in (out / "gem5-runs").glob("*.csv"))
    again = calibrate.run(tb, out, engine_name="gem5", workers=1, log=print)
    assert sorted(p.name for p in (out / "gem5-runs").glob("*.csv")) == runs
    assert json.dumps(again["points"]) == json.dumps(summary["points"])
