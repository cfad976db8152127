"""Calibration: testbed loading and checking, fitting within physical bounds,
outputs, and a testbed the harness has never seen."""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import simcxl
from simcxl.calibration import calibrate, fitsearch, testbed

from conftest import CC, REPO, TESTBED

TOML = """# A small testbed written for the tests
# Source: made up, one idle latency per memory.
name = "tiny"
[memories.local]
kind = "local-dram"
[memories.expander]
kind = "cxl-type3"
link = {{ gen = 5, lanes = 16 }}
{extra}
"""


def make_testbed(folder: Path, lat_rows, stream_rows=None, extra="") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "testbed.toml").write_text(TOML.format(extra=extra))
    (folder / "lat_mem_rd.csv").write_text("memory,working_set_bytes,latency_ns\n" + "".join(
        f"{m},{ws},{lat}\n" for m, ws, lat in lat_rows))
    if stream_rows is not None:
        # Rows of five give the stores column too.
        stores = any(len(r) == 5 for r in stream_rows)
        (folder / "stream.csv").write_text("memory,kernel,threads,bandwidth_gbps" + (",stores" if stores else "")
                                           + "\n" + "".join(",".join(map(str, r + ("",) * (stores and len(r) == 4)))
                                                            + "\n" for r in stream_rows))
    return folder


def test_shipped_testbed_loads_with_its_citation():
    tb = testbed.load(TESTBED)
    assert set(tb.memories) == {"ddr-local", "ddr-remote", "cxl-asic", "cxl-fpga"}
    assert tb.memories["cxl-asic"].link == {"gen": 5, "lanes": 8}
    assert "CXL-DMSim" in tb.citation
    assert len(tb.points_of("cxl-asic", "lat_mem_rd")) == 33
    fit = calibrate.fit_points(tb, "cxl-asic")
    assert [(p.experiment, p.x) for p in fit] == [("lat_mem_rd", 1 << 30), ("stream", "copy")]


@pytest.mark.parametrize("content,needle", [
    ("memory,working_set_bytes\nlocal,1024\n", "lat_mem_rd.csv:1: missing column(s) latency_ns"),
    ("memory,working_set_bytes,latency_ns\nlocal,1024,-3\n", "lat_mem_rd.csv:2 column 3: latency_ns = -3 must be positive"),
    ("memory,working_set_bytes,latency_ns\nlocal,1024,5\nlocal,1024,6\n",
     "lat_mem_rd.csv:3: duplicate point (local, 1024); first at line 2"),
    ("memory,working_set_bytes,latency_ns\nnowhere,1024,5\n",
     "lat_mem_rd.csv:2 column 1: memory 'nowhere' is not declared in testbed.toml"),
    ("memory,working_set_bytes,latency_ns\nlocal,1k,5\n", "lat_mem_rd.csv:2 column 2: working_set_bytes = '1k' is not an integer"),
    ("memory,working_set_bytes,latency_ns\nlocal,1024\n", "lat_mem_rd.csv:2: 2 fields, the header has 3"),
])
def test_malformed_files_are_rejected_with_file_and_line(tmp_path, content, needle):
    folder = make_testbed(tmp_path / "tb", [])
    (folder / "lat_mem_rd.csv").write_text(content)
    with pytest.raises(testbed.TestbedError) as e:
        testbed.load(folder)
    assert needle in str(e.value)


def test_files_from_spreadsheets_load_and_other_encodings_are_named(tmp_path):
    folder = make_testbed(tmp_path / "tb", [])
    # A byte-order mark and CRLF line ends, as spreadsheets save CSV.
    (folder / "lat_mem_rd.csv").write_bytes(b"\xef\xbb\xbfmemory,working_set_bytes,latency_ns\r\nlocal,1024,5\r\n")
    assert [(p.x, p.measured) for p in testbed.load(folder).points] == [(1024, 5.0)]
    (folder / "lat_mem_rd.csv").write_bytes(b"memory,working_set_bytes,latency_ns\nlocal,1024,5\xb5\n")
    with pytest.raises(testbed.TestbedError, match=r"lat_mem_rd.csv:2 column 13: byte 0xb5 is not UTF-8 text"):
        testbed.load(folder)
    (folder / "testbed.toml").write_bytes((folder / "testbed.toml").read_bytes() + b"# \xff\n")
    with pytest.raises(testbed.TestbedError, match=r"testbed.toml:\d+ column 3: byte 0xff is not UTF-8 text"):
        testbed.load(folder)


def test_unknown_kind_and_every_problem_reported(tmp_path):
    folder = make_testbed(tmp_path / "tb", [("local", 1 << 30, 100)], extra='[memories.odd]\nkind = "optane"\n')
    (folder / "stream.csv").write_text("memory,kernel,threads,bandwidth_gbps\nlocal,sum,,10\nlocal,copy,,0\n")
    with pytest.raises(testbed.TestbedError) as e:
        testbed.load(folder)
    msg = str(e.value)
    assert "testbed.toml:9: memories.odd.kind = 'optane' is not a memory kind; allowed: local-dram" in msg
    assert "stream.csv:2 column 2: kernel 'sum' is not allowed" in msg
    assert "stream.csv:3 column 4: bandwidth_gbps = 0 must be positive" in msg


def test_unseen_testbed_with_one_idle_latency_per_memory(tmp_path):
    folder = make_testbed(tmp_path / "tb", [("local", 1 << 30, 140.0), ("expander", 1 << 30, 300.0)])
    (folder / "loaded_latency.csv").write_text("memory,read_fraction,threads,bandwidth_gbps,latency_ns\n"
                                               "expander,1.0,4,12.0,330\n")
    out = tmp_path / "out"
    summary = calibrate.run(folder, out, workers=1, log=lambda m: None)
    pts = {p["memory"]: p for p in summary["points"] if p["experiment"] == "lat_mem_rd"}
    assert set(pts) == {"local", "expander"}
    for p in pts.values():
        assert p["role"] == "fit" and abs(p["error_pct"]) <= 2.0
        assert set(p) == {"memory", "experiment", "x", "measured", "simulated", "error_pct", "role"}
    loaded = [p for p in summary["points"] if p["experiment"] == "loaded_latency"]
    assert len(loaded) == 1 and loaded[0]["role"] == "validation"
    # Fitted values stay inside the documented physical ranges.
    for mem, kind in (("local", "local-dram"), ("expander", "cxl-type3")):
        for knob in calibrate.KNOBS[kind]:
            for name in knob.params:
                v = summary["memories"][mem]["fitted"].get(name)
                if v is not None:
                    assert knob.lo <= v <= knob.hi
    # The written preset runs as it is and reproduces its fitted point.
    preset = out / "presets" / "expander.json"
    s = simcxl.config.presets.load_file(preset)
    assert s.provenance["testbed"] == "tiny" and s.provenance["fitted"]
    assert s.cxl.link.lanes == 16
    lat = simcxl.lmbench(preset, [1 << 30], accesses=calibrate.LMBENCH_ACCESSES)["latency_ns"].iloc[0]
    assert lat == pytest.approx(300.0, rel=0.02)
    # The host side was fitted on the local memory and shared.
    local = simcxl.config.presets.load_file(out / "presets" / "local.json")
    assert local.host == s.host and local.local_dram == s.local_dram
    # The loaded-latency point is what the written preset gives run on its own:
    # the probe's mean latency with 4 read threads, against the measured 330 ns.
    direct = simcxl.loaded_latency(preset, threads=(4,), read_fractions=(1.0,), requests=60000).iloc[0]
    assert loaded[0]["simulated"] == pytest.approx(direct["latency_ns"], rel=1e-9)
    assert loaded[0]["error_pct"] == pytest.approx((direct["latency_ns"] - 330) / 330 * 100, rel=1e-9)
    report = (out / "report.md").read_text()
    assert report.startswith("# Calibration of SimCXL against testbed `tiny`")
    # Both latency ratio points are fitted: the report says they match by construction.
    assert re.search(r"\| expander \| 2\.14 \| \d+\.\d\d \| fitted \(matches by construction\) \|", report)
    assert (out / "lat_mem_rd.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "summary.json").read_text())["testbed"] == "tiny"


def test_declared_fit_points_replace_the_default_ones(tmp_path):
    # The expander fits its 256 MiB latency and STREAM triad; copy and 1 GiB
    # become validation. The local memory keeps the default subset.
    # A 1 MiB point, inside the LLC, is validation the acceptance figure leaves out.
    folder = make_testbed(tmp_path / "tb", [("local", 1 << 28, 112.0), ("expander", 1 << 20, 9.0),
                                            ("expander", 1 << 27, 160.0), ("expander", 1 << 28, 250.0)],
                          stream_rows=[("expander", "copy", 16, 12.5), ("expander", "triad", 16, 14.0)],
                          extra='fit = { lat_mem_rd = 134217728, stream = "triad" }')
    tb = testbed.load(folder)
    assert [(p.experiment, p.x) for p in calibrate.fit_points(tb, "expander")] == [("lat_mem_rd", 1 << 27),
                                                                                   ("stream", "triad")]
    out = tmp_path / "out"
    summary = calibrate.run(folder, out, workers=1, log=lambda m: None)
    role = {(p["memory"], p["experiment"], p["x"]): p for p in summary["points"]}
    assert role[("expander", "lat_mem_rd", 1 << 27)]["role"] == "fit"
    assert role[("expander", "lat_mem_rd", 1 << 28)]["role"] == "validation"
    assert role[("expander", "stream", "triad")]["role"] == "fit"
    assert role[("expander", "stream", "copy")]["role"] == "validation"
    assert role[("local", "lat_mem_rd", 1 << 28)]["role"] == "fit"
    for key in (("expander", "lat_mem_rd", 1 << 27), ("expander", "stream", "triad")):
        assert abs(role[key]["error_pct"]) <= 2.0
    report = (out / "report.md").read_text()
    assert "declares (`fit`) for expander" in report
    # Validation errors over every point and over those at/after the LLC, by hand from the points.
    llc = simcxl.config.presets.load_file(out / "presets" / "expander.json").host.llc_bytes
    assert (1 << 20) < llc < (1 << 27)
    val = [role[k] for k in (("expander", "lat_mem_rd", 1 << 20), ("expander", "lat_mem_rd", 1 << 28),
                             ("expander", "stream", "copy"))]
    assert all(p["role"] == "validation" for p in val)
    every = sum(abs(p["error_pct"]) for p in val) / 3
    beyond = sum(abs(p["error_pct"]) for p in val[1:]) / 2
    assert summary["overall"]["validation_mae_pct"] == pytest.approx(every, rel=1e-9)
    assert summary["overall"]["validation_llc_and_beyond_mae_pct"] == pytest.approx(beyond, rel=1e-9)
    assert (f"validation MAE {every:.2f} % over all validation points, {beyond:.2f} % at/after the LLC"
            in report)
    # The headline latency ratio divides a validation point by a fitted one.
    assert re.search(r"\| expander \| 2\.23 \| \d+\.\d\d \| validation \|", report)
    # false fits none of that experiment: the queue keeps its base value.
    none = make_testbed(tmp_path / "none", [("local", 1 << 30, 130.0), ("expander", 1 << 30, 300.0)],
                        stream_rows=[("expander", "copy", 16, 16.0)], extra="fit = { stream = false }")
    tb = testbed.load(none)
    assert [p.experiment for p in calibrate.fit_points(tb, "expander")] == ["lat_mem_rd"]


def test_a_kernel_measured_at_two_thread_counts_is_two_points_in_every_output(tmp_path):
    folder = make_testbed(tmp_path / "tb", [],
                          stream_rows=[("expander", "copy", 8, 11.0), ("expander", "copy", 16, 12.5),
                                       ("local", "copy", "", 20.0)],  # and one that states no threads
                          extra='fit = { stream = { kernel = "copy", threads = 16 } }')
    out = tmp_path / "out"
    summary = calibrate.run(folder, out, workers=1, log=lambda m: None)
    copies = {p["threads"]: p for p in summary["points"] if p["experiment"] == "stream" and p["memory"] == "expander"}
    assert set(copies) == {8, 16} and copies[16]["role"] == "fit" and copies[8]["role"] == "validation"
    assert abs(copies[16]["error_pct"]) <= 2.0
    assert summary["memories"]["expander"]["fitted"]["cxl.device.req_queue"] != calibrate.KNOBS["cxl-type3"][1].hi
    report = (out / "report.md").read_text()
    assert "| expander | stream | copy 8 threads | 11.000 |" in report
    assert "| expander | stream | copy 16 threads | 12.500 |" in report
    assert (out / "stream.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("fit,needle", [
    ("fit = { lat_mem_rd = 12345 }",
     "testbed.toml:9: memories.expander.fit.lat_mem_rd = 12345 matches no point of lat_mem_rd.csv for expander; "
     "measured: 1073741824"),
    ("fit = { iops = 3 }", "memories.expander.fit.iops is not allowed; allowed: lat_mem_rd, stream, loaded_latency, loaded_bandwidth"),
    ('fit = { stream = "copy" }', "fit.stream = 'copy' matches 2 points (stream.csv:2, stream.csv:3); add threads or "
                                  "stores to name one"),
    ('fit = { stream = { kernel = "copy", threads = 4 } }', "matches no point of stream.csv for expander"),
    ('fit = { stream = { kernel = "copy", rate = 4 } }', "must be a kernel"),
    ("fit = { loaded_latency = { threads = 4, read_fraction = 1.0 }, lat_mem_rd = 1073741824 }",
     "memories.expander.fit names both lat_mem_rd and loaded_latency"),
    ('fit = "copy"', "memories.expander.fit must be a table"),
])
def test_bad_fit_declarations_name_the_line_and_what_was_measured(tmp_path, fit, needle):
    folder = make_testbed(tmp_path / "tb", [("local", 1 << 30, 130.0), ("expander", 1 << 30, 300.0)],
                          stream_rows=[("expander", "copy", 8, 12.0), ("expander", "copy", 16, 16.0)], extra=fit)
    (folder / "loaded_latency.csv").write_text("memory,read_fraction,threads,bandwidth_gbps,latency_ns\n"
                                               "expander,1.0,4,12.0,330\n")
    with pytest.raises(testbed.TestbedError) as e:
        testbed.load(folder)
    assert needle in str(e.value)
    # With a table that stays whole, the good declaration loads: the 16-thread copy.
    good = make_testbed(tmp_path / "good", [("local", 1 << 30, 130.0), ("expander", 1 << 30, 300.0)],
                        stream_rows=[("expander", "copy", 8, 12.0), ("expander", "copy", 16, 16.0)],
                        extra='fit = { stream = { kernel = "copy", threads = 16 } }')
    assert testbed.load(good).memories["expander"].fit["stream"].threads == 16


def test_an_interrupted_calibration_keeps_the_presets_it_finished(tmp_path, monkeypatch):
    # STREAM points alone: quick to fit.
    folder = make_testbed(tmp_path / "tb", [], stream_rows=[("local", "copy", 16, 20.0), ("expander", "copy", 16, 12.5),
                                                            ("second", "copy", 16, 10.0)],
                          extra='[memories.second]\nkind = "cxl-type3"')
    real = calibrate._fit_and_validate

    def stop_at_second(args):
        if args[1] == "second":
            raise KeyboardInterrupt  # as Ctrl-C would, part-way
        return real(args)

    monkeypatch.setattr(calibrate, "_fit_and_validate", stop_at_second)
    said = []
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        calibrate.run(folder, out, workers=1, log=said.append)
    assert said[-1] == f"tiny: interrupted; the presets of expander, local are written in {out / 'presets'}"
    assert sorted(p.name for p in (out / "presets").iterdir()) == ["expander.json", "local.json"]
    copy = simcxl.stream(out / "presets" / "expander.json", ["copy"], threads=16)["stream_gbps"].iloc[0]
    assert copy == pytest.approx(12.5, rel=0.02)


def test_unreachable_target_is_reported_not_stretched(tmp_path):
    folder = make_testbed(tmp_path / "tb", [("local", 1 << 30, 120.0), ("expander", 1 << 30, 5000.0)])
    summary = calibrate.run(folder, tmp_path / "out", memories=["expander"], workers=1, log=lambda m: None)
    exp = summary["memories"]["expander"]
    assert exp["fitted"]["cxl.device.req_latency_ns"] == 250.0  # the physical bound
    assert not exp["fit_points_within_2pct"]
    assert any("physical bound" in n for n in exp["notes"])
    assert summary["fit_misses"] and summary["fit_misses"][0]["memory"] == "expander"


@pytest.mark.parametrize("pinned", [False, True])
def test_a_bank_bound_media_gets_more_ranks_unless_the_testbed_states_them(tmp_path, pinned):
    # On one rank of 16 banks the FPGA's copy stops near 13.2 GB/s however many
    # transactions the device holds; a second rank reaches 14.5 when the bus
    # hands over between ranks at no cost (tRTRS = 0; with DDR4's 2 nCK the
    # switches eat nearly all of the second rank's gain here).
    free = '"cxl.media.tRTRS_ns" = 0'
    extra = 'base = "cxl-fpga"\n' + (f'params = {{ "cxl.media.ranks" = 1, {free} }}\n' if pinned
                                     else f'params = {{ {free} }}\n')
    # STREAM copy alone: the device latency and the host stay the base preset's.
    folder = make_testbed(tmp_path / "tb", [], [("expander", "copy", 8, 14.0)], extra=extra)
    exp = calibrate.run(folder, tmp_path / "out", memories=["expander"], workers=1,
                        log=lambda m: None)["memories"]["expander"]
    if pinned:
        assert "cxl.media.ranks" not in exp["fitted"] and not exp["fit_points_within_2pct"]
        assert any("cannot reach stream copy = 14: cxl.device.req_queue" in n for n in exp["notes"])
    else:
        assert exp["fitted"]["cxl.media.ranks"] == 2 and exp["fit_points_within_2pct"], exp
        preset = simcxl.config.presets.load_file(tmp_path / "out" / "presets" / "expander.json")
        assert preset.cxl.media.ranks == 2
    # A memory the queue alone fits keeps the fewest ranks.
    folder = make_testbed(tmp_path / "tb2", [], [("expander", "copy", 8, 11.0)], extra='base = "cxl-fpga"\n')
    exp = calibrate.run(folder, tmp_path / "out2", memories=["expander"], workers=1,
                        log=lambda m: None)["memories"]["expander"]
    assert exp["fitted"]["cxl.media.ranks"] == 1 and exp["fit_points_within_2pct"]
    # Without a STREAM point the ranks are not the fit's to choose: the base preset's stay.
    folder = make_testbed(tmp_path / "tb3", [("expander", 64 << 20, 120.0)], extra='base = "cxl-fpga"\n')
    out = tmp_path / "out3"
    exp = calibrate.run(folder, out, memories=["expander"], workers=1, log=lambda m: None)["memories"]["expander"]
    assert list(exp["fitted"]) == ["cxl.device.req_latency_ns"]
    ranks = simcxl.load_preset("cxl-fpga").cxl.media.ranks
    assert simcxl.config.presets.load_file(out / "presets" / "expander.json").cxl.media.ranks == ranks


def test_latency_fit_does_not_depend_on_the_base_presets_queue(tmp_path, monkeypatch):
    # The gem5 engine keys its kept runs by the whole system: the latency fit's
    # runs must not change when a recalibration moves the base preset's queue.
    seen = []
    orig = calibrate.StandaloneEngine.lmbench
    monkeypatch.setattr(calibrate.StandaloneEngine, "lmbench",
                        lambda self, s, sizes: (s.kind == "cxl-type3" and seen.append(s.get("cxl.device.req_queue")))
                        or orig(self, s, sizes))
    fitted = []
    for queue in (20, 300):
        extra = f'params = {{ "cxl.device.req_queue" = {queue} }}\n'
        folder = make_testbed(tmp_path / f"tb{queue}", [("expander", 64 << 20, 250.0)],
                              [("expander", "copy", 4, 8.0)], extra=extra)
        seen.clear()
        r = calibrate.run(folder, tmp_path / f"out{queue}", memories=["expander"], workers=1, log=lambda m: None)
        assert seen and all(q == 512 for q in seen[:-1]), seen  # the last is the final check
        fitted.append(r["memories"]["expander"]["fitted"])
    assert fitted[0]["cxl.device.req_latency_ns"] == fitted[1]["cxl.device.req_latency_ns"]
    # The queue's own search starts from the base value; near the answer STREAM is flat to 0.1 %
    # a step (8.011 GB/s at 74, 8.001 at 75), so searches from below and above may end a step apart.
    assert abs(fitted[0]["cxl.device.req_queue"] - fitted[1]["cxl.device.req_queue"]) <= 1


def test_gem5_engine_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("GEM5", raising=False)
    with pytest.raises(calibrate.Gem5Missing, match="GEM5 environment variable"):
        calibrate.run(TESTBED, tmp_path / "out", engine_name="gem5", log=lambda m: None)


def test_gem5_engine_takes_cxl_memories_only(tmp_path, monkeypatch):
    monkeypatch.setenv("GEM5", sys.executable)  # a file; the kinds are checked before gem5 runs
    with pytest.raises(simcxl.ParamError, match="--engine gem5 calibrates cxl-type3 memories.*ddr-local is not: "
                                                "choose --memories from cxl-asic"):
        calibrate.run(TESTBED, tmp_path / "out", memories=["ddr-local", "cxl-asic"], engine_name="gem5",
                      log=lambda m: None)


def test_gem5_engine_refuses_loaded_latency_before_any_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GEM5", sys.executable)
    folder = make_testbed(tmp_path / "tb", [("expander", 1 << 30, 300.0)])
    (folder / "loaded_latency.csv").write_text("memory,read_fraction,threads,bandwidth_gbps,latency_ns\n"
                                               "expander,1.0,4,12.0,330\n")
    with pytest.raises(simcxl.ParamError, match="--engine gem5: loaded_latency points: the gem5 engine does not"):
        calibrate.run(folder, tmp_path / "out", engine_name="gem5", log=lambda m: None)
    assert not (tmp_path / "out" / "gem5-runs").exists()


def test_gem5_engine_names_a_binary_that_is_not_gem5(tmp_path):
    env = {**os.environ, "GEM5": "/bin/false"}
    exe = str(Path(sys.executable).with_name("simcxl"))
    r = subprocess.run([exe, "calibrate", "--testbed", str(TESTBED), "--memories",
                        "cxl-asic", "--engine", "gem5", "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "GEM5 = '/bin/false' did not answer which ISAs it has (is it gem5?)" in r.stderr


def test_gem5_engine_keeps_each_run_and_reruns_nothing(tmp_path):
    from simcxl.gem5 import engine as gem5_engine
    # A stand-in for gem5 that writes the config's CSV and counts its calls.
    fake = tmp_path / "fake-gem5"
    fake.write_text(f"#!{sys.executable}\nimport sys, pathlib\n"
                    "a = sys.argv[1:]; out = pathlib.Path(a[a.index('--csv') + 1])\n"
                    "calls = pathlib.Path(a[a.index('-d') + 1]).parent / 'calls'\n"
                    "calls.write_text(str(int(calls.read_text() or 0) + 1) if calls.exists() else '1')\n"
                    "k = a[a.index('--kernel') + 1]\n"
                    "check = 'bad' if k == 'add' else 'ok'\n"
                    "out.write_text('memory,kernel,stream_gbps,check\\nx,' + k + ',' + str(len(k)) + ',' + check + '\\n')\n")
    fake.chmod(0o755)
    if not CC:
        pytest.skip("needs a C compiler to build the guest STREAM")
    eng = gem5_engine.Gem5Engine(str(fake), tmp_path / "runs")
    s = simcxl.load_preset("cxl-asic")
    assert eng.stream(s, ["copy", "triad"], threads=16) == [4.0, 5.0]
    assert eng.stream(s, ["copy", "triad"], threads=16) == [4.0, 5.0]
    assert (tmp_path / "runs" / "calls").read_text() == "2"  # the second call ran nothing
    metas = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")]
    assert sorted(m["label"] for m in metas) == ["STREAM copy", "STREAM triad"]
    assert all(m["memory"] == "cxl-asic" and m["system"] == s.to_dict() for m in metas)
    # The same parameters under another name and provenance (a recalibrated preset) reuse the runs.
    again = s.replace()
    again.name, again.source, again.provenance = "renamed", "another calibration", {"date": "2031-01-01"}
    assert eng.stream(again, ["copy"], threads=16) == [4.0]
    assert (tmp_path / "runs" / "calls").read_text() == "2"
    # Another memory is another run.
    eng.stream(s.replace(**{"cxl.device.req_queue": 32}), ["copy"], threads=16)
    assert (tmp_path / "runs" / "calls").read_text() == "3"
    # A run whose guest found wrong elements gives no figure.
    with pytest.raises(gem5_engine.Gem5RunError, match="STREAM add on cxl-asic: the guest found wrong elements"):
        eng.stream(s, ["add"], threads=16)


def test_gem5_engine_says_where_it_looked_for_the_repository(tmp_path, monkeypatch):
    from simcxl.gem5 import engine as gem5_engine
    monkeypatch.delenv("SIMCXL_REPO", raising=False)
    monkeypatch.setattr(gem5_engine, "__file__", str(tmp_path / "site" / "simcxl" / "gem5" / "engine.py"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(simcxl.ParamError, match="needs the SimCXL repository .* set SIMCXL_REPO to it; looked in"):
        gem5_engine.repository()
    monkeypatch.setenv("SIMCXL_REPO", str(REPO))
    assert (gem5_engine.repository() / "gem5_configs" / "cxl_stream.py").is_file()


def test_gem5_cache_geometry_keeps_sizes_gem5_can_build():
    from simcxl.gem5.components import cache_geometry
    assert cache_geometry(49152, 12, "l1") == (49152, 12)  # 64 sets already
    size, ways = cache_geometry(102236160, 15, "llc")  # 97.5 MiB: 106496 sets
    sets = size // (64 * ways)
    assert sets & (sets - 1) == 0 and abs(size / 102236160 - 1) < 0.02
    with pytest.raises(simcxl.ParamError, match="llc: a cache of 0 B and 15 ways is not allowed"):
        cache_geometry(0, 15, "llc")


def test_cli_rejects_unknown_memory_and_malformed_testbed(tmp_path):
    exe = str(Path(sys.executable).with_name("simcxl"))
    r = subprocess.run([exe, "calibrate", "--testbed", str(TESTBED), "--memories", "nope", "--out",
                        str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 2 and "'nope' is not a memory of testbed spr-cxl-dmsim" in r.stderr
    assert "Traceback" not in r.stderr
    bad = make_testbed(tmp_path / "bad", [("local", 100, -1)])
    r = subprocess.run([exe, "calibrate", "--testbed", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "lat_mem_rd.csv:2 column 3: latency_ns = -1 must be positive" in r.stderr
    # An output folder that cannot be made, and no workers: named, no traceback, nothing left behind.
    (tmp_path / "file").write_text("")
    r = subprocess.run([exe, "calibrate", "--testbed", str(TESTBED), "--out", str(tmp_path / "file" / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and f"--out {tmp_path / 'file' / 'o'}: cannot make the output folder" in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([exe, "calibrate", "--testbed", str(TESTBED), "--out", str(tmp_path / "w"), "--workers", "0"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "'--workers': 0 is out of range; allowed: a whole number from 1 on" in r.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "w").exists()


def test_packaged_presets_came_from_the_calibration():
    for name in ("ddr-local", "ddr-remote", "cxl-asic", "cxl-fpga"):
        s = simcxl.load_preset(name)
        assert s.provenance["testbed"] == "spr-cxl-dmsim"
        assert "Calibrated with simcxl calibrate" in s.source
        assert s.provenance["fitted"]


def test_stream_pairs_that_move_the_same_bytes_are_checked(tmp_path):
    # copy/scale and add/triad move the same bytes per element: a testbed whose
    # copy is 1.43x its scale cannot be fitted on both, and the report says so.
    folder = make_testbed(tmp_path / "tb", [("local", 1 << 30, 130.0)], stream_rows=[
        ("expander", "copy", "", 13.1), ("expander", "scale", "", 9.17),
        ("expander", "add", "", 10.4), ("expander", "triad", "", 10.5),
        ("local", "copy", "", 20.3), ("local", "scale", "", 20.4)])
    tb = testbed.load(folder)
    checks = {(c["memory"], tuple(c["kernels"])): c for c in calibrate.consistency(tb, list(tb.memories))}
    assert set(checks) == {("expander", ("copy", "scale")), ("expander", ("add", "triad")), ("local", ("copy", "scale"))}
    odd = checks[("expander", ("copy", "scale"))]
    assert not odd["consistent"] and odd["ratio"] == pytest.approx(13.1 / 9.17)
    # Fitting copy within 2 % leaves scale at least 13.1 * 0.98 / 9.17 - 1 = 40 % off.
    assert odd["least_error_pct_on_second"] == pytest.approx((13.1 * 0.98 / 9.17 - 1) * 100)
    assert odd["where"] == ["stream.csv:2", "stream.csv:3"]
    assert checks[("expander", ("add", "triad"))]["consistent"] and checks[("local", ("copy", "scale"))]["consistent"]
    assert checks[("local", ("copy", "scale"))]["least_error_pct_on_second"] < 0.5
    # Reads for ownership counted, scale, add and triad move 13.8-14.0 GB/s and copy 19.7: copy is the odd one.
    assert odd["real_traffic_gbps"]["copy"] == pytest.approx(13.1 * 1.5)
    assert odd["real_traffic_gbps"]["add"] == pytest.approx(10.4 * 4 / 3)
    assert odd["out_of_line"] == "copy" and odd["where_out_of_line"] == "stream.csv:2"
    # Three kernels that disagree among themselves name none.
    spread = make_testbed(tmp_path / "spread", [], stream_rows=[
        ("expander", "copy", "", 13.1), ("expander", "scale", "", 8.0),
        ("expander", "add", "", 11.0), ("expander", "triad", "", 10.6)])
    (c,) = [c for c in calibrate.consistency(testbed.load(spread), ["expander"]) if not c["consistent"]]
    assert c["out_of_line"] is None
    logs = []
    calibrate.run(folder, tmp_path / "out", memories=["expander"], workers=1, log=logs.append)
    assert any("testbed check: expander STREAM copy/scale traffic = 1.43" in m and "copy is the kernel out of line"
               " and in line if its stores were non-temporal" in m.replace(",", "") for m in logs)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Testbed consistency" in report and "scale is off by at least 40 % in any model" in report
    assert "copy moves 19.6 GB/s and the other three kernels 13.8-14.0: copy (stream.csv:2) is the point" in report
    assert "it would move 13.1 GB/s, in line with the others; if the binary did so, mark the point" in report


def test_a_copy_marked_non_temporal_is_counted_and_simulated_without_reads_for_ownership(tmp_path):
    # The FPGA expander's figures, on its preset: its one DDR4 channel binds both copies (on the
    # ASIC's, the write tracker would bind the non-temporal one, and the premise below would not hold).
    rows = [("expander", "copy", "", 13.1, "non-temporal"), ("expander", "scale", "", 9.17),
            ("expander", "add", "", 10.4), ("expander", "triad", "", 10.5)]
    folder = make_testbed(tmp_path / "tb", [("local", 1 << 30, 130.0), ("expander", 1 << 30, 380.0)],
                          stream_rows=rows, extra='base = "cxl-fpga"')
    tb = testbed.load(folder)
    assert [p.stores for p in tb.points_of("expander", "stream")] == ["non-temporal"] + ["write-allocate"] * 3
    (pair, _) = calibrate.consistency(tb, ["expander"])
    # 13.1 GB/s written without reads against scale's 9.17 * 3/2 = 13.76 moved: within 5 %.
    assert pair["ratio"] == pytest.approx(13.1 / (9.17 * 1.5)) and pair["consistent"]
    assert pair["stores"] == ["non-temporal", "write-allocate"]
    summary = calibrate.run(folder, tmp_path / "out", memories=["expander"], workers=1, log=lambda m: None)
    st = {p["x"]: p for p in summary["points"] if p["memory"] == "expander" and p["experiment"] == "stream"}
    assert st["copy"]["role"] == "fit" and st["copy"]["stores"] == "non-temporal" and abs(st["copy"]["error_pct"]) <= 2
    assert st["scale"]["stores"] == "write-allocate"
    # The fit point was simulated with non-temporal stores: the written preset gives it so, not with reads.
    preset = tmp_path / "out" / "presets" / "expander.json"
    nt = simcxl.stream(preset, ["copy"], threads=16, stores="non-temporal")["stream_gbps"].iloc[0]
    wa = simcxl.stream(preset, ["copy"], threads=16)["stream_gbps"].iloc[0]
    assert nt == pytest.approx(st["copy"]["simulated"], rel=1e-9) and wa < 0.85 * nt
    # A bandwidth-bound memory moves about the same traffic either way, so scale lands near its measurement.
    assert abs(st["scale"]["error_pct"]) < 10
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## STREAM points with non-temporal stores" in report and "- expander copy (stream.csv:2)" in report
    assert "## Testbed consistency" not in report


def test_stream_pairs_are_checked_at_each_thread_count_and_each_stores(tmp_path):
    folder = make_testbed(tmp_path / "tb", [], stream_rows=[
        ("expander", "copy", 1, 4.0), ("expander", "scale", 1, 4.1),
        ("expander", "copy", 16, 13.1, "non-temporal"), ("expander", "copy", 16, 9.2, "write-allocate"),
        ("expander", "scale", 16, 9.17)])
    checks = calibrate.consistency(testbed.load(folder), ["expander"])
    pairs = sorted((c["where"][0], c["where"][1], c["consistent"]) for c in checks)
    # One thread: copy with scale. 16 threads: both copies with scale, neither with the one-thread points.
    assert pairs == [("stream.csv:2", "stream.csv:3", True), ("stream.csv:4", "stream.csv:6", True),
                     ("stream.csv:5", "stream.csv:6", True)]


def test_bad_stores_value_is_rejected_with_file_line_and_column(tmp_path):
    folder = make_testbed(tmp_path / "tb", [("local", 1 << 30, 130.0)],
                          stream_rows=[("local", "copy", "", 20.0, "streaming")])
    with pytest.raises(testbed.TestbedError, match=r"stream.csv:2 column 5: stores 'streaming' is not allowed; "
                                                   r"allowed: write-allocate, non-temporal"):
        testbed.load(folder)
    # The same kernel measured both ways is two points, not a duplicate.
    both = make_testbed(tmp_path / "both", [("local", 1 << 30, 130.0)], stream_rows=[
        ("local", "copy", "", 20.0, "non-temporal"), ("local", "copy", "", 20.0, "write-allocate")])
    assert len(testbed.load(both).points_of("local", "stream")) == 2


def test_real_fit_starts_from_the_preset_and_needs_few_runs():
    # Each evaluation is a gem5 run on that engine: from a start near the root,
    # a line of slope two is solved in three, without touching the bounds.
    calls = []

    def f(v):
        calls.append(v)
        return 2.0 * (v - 97.3)

    x = fitsearch.fit_real(f, 5.0, 250.0, 0.1, 90.0)
    assert abs(f(x)) <= 0.1 and len(calls) <= 4 and 5.0 not in calls and 250.0 not in calls
    # A root beyond the range gives the nearer bound, and a curved f still converges.
    assert fitsearch.fit_real(lambda v: v - 400.0, 5.0, 250.0, 0.1, 90.0) == 250.0
    x = fitsearch.fit_real(lambda v: (v / 50.0) ** 3 - 2.0, 5.0, 250.0, 1e-4, 240.0)
    assert x == pytest.approx(50.0 * 2 ** (1 / 3), rel=1e-3)


def test_integer_fit_starts_from_the_preset_and_finds_the_nearest_value():
    # A queue depth: bandwidth rises and saturates with it. From a start near
    # the answer the search needs a handful of runs, not a scan of the range.
    def sat(target):
        return lambda v: 20.0 * (1 - math.exp(-v / 40.0)) - target

    for target, x0, most in ((14.3, 52, 5), (15.9, 52, 6), (9.0, 200, 10)):
        calls = []

        def f(v, g=sat(target)):
            calls.append(v)
            return g(v)

        got = fitsearch.fit_integer(f, 8, 512, x0)
        assert got == min(range(8, 513), key=lambda v: abs(sat(target)(v)))
        assert len(calls) <= most and len(set(calls)) == len(calls), calls
    # Out of reach: the nearer bound, reached without stepping past it.
    assert fitsearch.fit_integer(sat(25.0), 16, 256, 52) == 256
    assert fitsearch.fit_integer(lambda v: v - 3.0, 16, 256, 52) == 16
    # A flat stretch (f the same at two values) is stepped over, not divided by.
    assert fitsearch.fit_integer(lambda v: -1.0 if v < 100 else v - 120.4, 8, 512, 20) == 120
