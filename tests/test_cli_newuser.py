"""What a new user hits first (issue 17): the installed ``simcxl`` run as a
subprocess, as a user runs it; each check names the item it covers."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import click
import pandas as pd
import pytest

import simcxl
from conftest import REPO, TESTBED
from test_cli import SIMCXL, _cmd, assert_png, cli, cli_json, user_error

PNG = b"\x89PNG\r\n\x1a\n"


def errors_at_once(cases, cwd=None):
    """Runs independent bad-input commands at once; each must give the one-line error with its needles."""
    procs = [(args, needles, subprocess.Popen(_cmd(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True, cwd=cwd)) for args, needles in cases]
    msgs = []
    for args, needles, p in procs:
        out, err = p.communicate(timeout=120)
        msgs.append(user_error(subprocess.CompletedProcess(args, p.returncode, out, err), *needles))
        assert out == "", f"{args}: printed results despite the error"
    return msgs


# ---------------------------------------------------------------- 1: the demo does not depend on the directory


def test_shipped_testbed_is_the_calibration_testbed():
    shipped = Path(simcxl.__file__).with_name("testbeds") / "spr-cxl-dmsim"
    names = sorted(p.name for p in TESTBED.iterdir())
    assert sorted(p.name for p in shipped.iterdir()) == names
    for n in names:
        assert (shipped / n).read_bytes() == (TESTBED / n).read_bytes(), f"{n} differs from the calibration copy"


def test_demo_from_another_directory_compares_with_the_shipped_testbed(tmp_path):
    """Run where there is no calibration/ folder: the measured columns are the testbed's own figures."""
    p = cli("demo", "--quick", "--out", "o", cwd=tmp_path)
    lines = p.stdout.splitlines()
    assert "compared with: spr-cxl-dmsim (shipped with simcxl)" in lines
    st = pd.read_csv(TESTBED / "stream.csv")
    lat = pd.read_csv(TESTBED / "lat_mem_rd.csv")
    csv = pd.read_csv(tmp_path / "o" / "demo.csv")
    for mem in ("ddr-local", "cxl-fpga"):
        want = st[(st["memory"] == mem) & (st["kernel"] == "copy")]["bandwidth_gbps"].iloc[0]
        got = csv[(csv["memory"] == mem) & (csv["metric"] == "STREAM copy (GB/s)")]["measured"].iloc[0]
        assert got == pytest.approx(want, rel=1e-9)
        want = lat[(lat["memory"] == mem) & (lat["working_set_bytes"] == 128 << 20)]["latency_ns"].iloc[0]
        got = csv[(csv["memory"] == mem) & (csv["metric"] == "latency 128M (ns)")]["measured"].iloc[0]
        assert got == pytest.approx(want, rel=1e-9)
    # cxl-fpga's copy was measured with non-temporal stores; the simulation follows the testbed's mark.
    assert "(cxl-fpga STREAM copy: simulated with non-temporal stores, as the testbed marks its measurement)" in lines
    assert "Error of the simulation (%):" in lines
    assert_png(tmp_path / "o" / "demo.png")


def test_demo_missing_testbed_is_an_error_and_writes_nothing(tmp_path):
    errors_at_once([(("demo", "--testbed", tmp_path / "nope", "--out", tmp_path / "o"),
                     ["--testbed", "nope", "lat_mem_rd.csv"])])
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- 2, 3, 12: one line, never a traceback


ACC = ("run", "accel", "--requests", "100")


def test_negative_counts_of_the_cxl_cache_commands():
    errors_at_once([
        (ACC + ("--depth", "-1"), ["--depth", "-1", "from 1 to 4096"]),
        (ACC + ("--requesters", "-3"), ["--requesters", "-3", "from 1 to 1024"]),
        (("run", "accel", "--requests", "-10"), ["--requests", "-10"]),
        (ACC + ("--host-threads", "-1"), ["--host-threads", "-1", "from 0 to 1024"]),
        (("run", "sharing", "--rounds", "-5"), ["--rounds", "-5"]),
        (("run", "sharing", "--mode", "producer-consumer", "--lines", "-1"), ["--lines", "-1"]),
        (("run", "coherence-stress", "--ops", "-5"), ["--ops", "-5"]),
        (("run", "coherence-stress", "--lines", "-1"), ["--lines", "-1"]),
        (("run", "coherence-stress", "--host-threads", "-1"), ["--host-threads", "-1"]),
        (("run", "coherence-stress", "--device-requesters", "-1"), ["--device-requesters", "-1"]),
        # Past what the bindings' integers hold: still the option's bounds, not a pybind TypeError.
        (ACC + ("--depth", str(1 << 64)), ["--depth"]),
        # Found by the fuzz soak: STREAM's --lines reached the bindings too.
        (("run", "stream", "--lines", "-1"), ["--lines", "-1"]),
    ])


def test_outputs_are_checked_before_the_run(tmp_path):
    errors_at_once([
        (("run", "lmbench", "--plot", tmp_path / "lat.xyz"), ["--plot", "'xyz' is not supported", "png, pdf, svg"]),
        (("run", "lmbench", "--plot", "/proc/lat.png"), ["--plot", "cannot write /proc/lat.png"]),
        (("run", "lmbench", "--csv", "/proc/x.csv"), ["--csv", "cannot write /proc/x.csv"]),
        (("run", "accel", "--plot", tmp_path / "a.doc"), ["--plot", "'doc' is not supported"]),
        (("plot", tmp_path, "--x", "a", "--y", "b", "--out", "/proc/p.png"), ["--out", "cannot write"]),
    ])
    assert not (tmp_path / "lat.xyz").exists()


def test_messages_name_what_the_user_gave(tmp_path):
    binary = tmp_path / "bin.trace"
    binary.write_bytes(b"0 R 0x40\n\0\0\x01garbage\n")
    wide = tmp_path / "wide.trace"
    wide.write_text("0 R 0x123456789abcdef012\n")  # 72 bits
    d = simcxl.load_preset("cxl-asic").to_dict()
    d["cxl"]["link"]["lanes"] = "x16"
    lanes = tmp_path / "lanes.json"
    lanes.write_text(json.dumps(d))
    noname = tmp_path / "noname.json"
    noname.write_text('{"kind": "cxl-type3"}')
    msgs = errors_at_once([
        (("run", "lmbench", "--sizes", "1e15"), ["--sizes", "'1e15'", "out of range", "64 B to 1 TiB"]),
        (("run", "lmbench", "--sizes", ""), ["--sizes", "''", "names no size"]),
        (("run", "lmbench", "--sizes", ","), ["--sizes", "names no size"]),
        (("run", "dma-vs-cache", "--sizes", ""), ["--sizes", "names no size"]),
        (("run", "trace", binary), [str(binary), "binary", "offset 9"]),
        (("run", "trace", wide), [str(wide), "line 1", "0x123456789abcdef012", "wider than 64 bits"]),
        (("run", "trace", "/dev/null"), ["/dev/null", "is not a regular file"]),
        (("run", "lmbench", "-m", lanes), [str(lanes), "cxl.link.lanes", "'x16'", "allowed values: 1, 2, 4, 8, 16"]),
        (("presets", "show", noname), [str(noname), "name is missing"]),
    ])
    assert "region" not in msgs[0]
    assert msgs[-1].count(str(noname)) == 1, msgs[-1]  # the path once, not twice
    assert "does not exist" not in msgs[6]


def test_mistyped_sweep_axis_suggests_the_parameter(tmp_path):
    spec = tmp_path / "s.toml"
    cases = []
    for typo in ("cxl.link.lane", "link.lanes", "cxl.lanes"):
        f = tmp_path / f"{typo}.toml"
        f.write_text(f'base = "cxl-asic"\n[workload]\nkind = "traffic"\n[[axes]]\nparam = "{typo}"\n'
                     'values = [4, 8]\n')
        cases.append((("sweep", f, "--out", tmp_path / "o"), [f"axis {typo}", "did you mean cxl.link.lanes"]))
    msgs = errors_at_once(cases)
    assert all("host.cores" not in m for m in msgs)  # not the first group of the schema
    assert not spec.exists()


# ---------------------------------------------------------------- 4, 10: plots of a sweep


def _results(folder: Path) -> Path:
    """A sweep's results.jsonl by hand: lanes x read fraction x latency, with a text column."""
    folder.mkdir()
    rows = []
    for lanes in (4, 8, 16):
        for rf in (1.0, 0.5):
            for lat in (15, 80):
                rows.append({"id": f"{lanes}-{rf}-{lat}", "param.cxl.link.lanes": lanes,
                             "param.workload.read_fraction": rf, "param.cxl.device.req_latency_ns": lat,
                             "total_gbps": lanes * rf + lat / 100, "status": "ok", "error": "",
                             "engine": "standalone", "simcxl": "t", "base": "cxl-asic"})
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "spec.json").write_text(json.dumps({"name": "lanes-mix"}))
    return folder


def test_plot_of_a_text_column_is_an_error(tmp_path):
    f = _results(tmp_path / "r")
    msg, = errors_at_once([(("plot", f, "--x", "param.cxl.link.lanes", "--y", "status"),
                            ["--y status", "not a number", "total_gbps"])])
    assert "param." not in msg.split("numeric metrics:")[1]
    errors_at_once([(("plot", f, "--x", "param.cxl.link.lanes", "--y", "total_gbps", "--z", "total_gbps"),
                     ["same column twice"])])  # found by the fuzz soak


def test_sweep_plots_are_named_by_what_they_plot_and_say_what_they_average(tmp_path):
    f = _results(tmp_path / "r")
    line = cli("plot", f, "--x", "param.cxl.link.lanes", "--y", "total_gbps", "--hue", "param.workload.read_fraction")
    heat = cli("plot", f, "--x", "param.cxl.link.lanes", "--y", "param.cxl.device.req_latency_ns", "--z",
               "total_gbps")
    a = f / "total-gbps-vs-cxl-link-lanes-by-read-fraction.png"
    b = f / "total-gbps-over-cxl-link-lanes-and-cxl-device-req-latency-ns.png"
    assert line.stdout.strip() == f"wrote {a}" and heat.stdout.strip() == f"wrote {b}"
    assert_png(a)
    assert_png(b)
    # The line plot averages the two latencies at each point; the heatmap the two read fractions.
    assert "averages 2 points over cxl.device.req_latency_ns (2 values)" in line.stderr
    assert "averages 2 points over workload.read_fraction (2 values)" in heat.stderr


# ---------------------------------------------------------------- 5: Ctrl-C


def _interrupt(args, cwd, ready):
    """Starts the command as a shell job, presses Ctrl-C once ready() holds, and returns (status, stderr, s)."""
    # As from a terminal: a test run started in the background (SIGINT ignored, which exec keeps) must
    # not hand the command an ignored Ctrl-C.
    p = subprocess.Popen(_cmd(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                         start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not ready():
            time.sleep(0.05)
        t0 = time.time()
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=30)
        return p.returncode, err, time.time() - t0
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_ctrl_c_stops_at_once_says_what_was_kept_and_exits_130(tmp_path):
    started = time.time()
    # The demo in the middle of a long lmbench call (the core does not look at signals inside it).
    rc, err, took = _interrupt(["demo", "--out", "o"], tmp_path, lambda: time.time() - started > 3)
    assert (rc, err) == (130, "simcxl: interrupted; nothing was written\n") and took < 5, (rc, err, took)
    assert not (tmp_path / "o").exists()

    # calibrate while its worker processes walk the host caches: they are stopped too.
    started = time.time()
    rc, err, took = _interrupt(["calibrate", "--testbed", TESTBED, "--out", "cal"], tmp_path,
                               lambda: time.time() - started > 4)
    assert rc == 130 and took < 5, (rc, err, took)
    assert err.splitlines()[-1] == "simcxl: interrupted; no memory had finished, no preset was written", err

    spec = tmp_path / "s.toml"
    spec.write_text('name = "long"\nbase = "cxl-asic"\n[workload]\nkind = "traffic"\nrequests = 20000\n'
                    '[[axes]]\nparam = "workload.threads"\nvalues = [' + ", ".join(map(str, range(1, 49))) + "]\n")  # up to host.cores
    jsonl = tmp_path / "sw" / "results.jsonl"
    rc, err, took = _interrupt(["sweep", spec, "--out", "sw", "--workers", "2"], tmp_path,
                               lambda: jsonl.exists() and len(jsonl.read_text().splitlines()) >= 3)
    assert rc == 130 and took < 5 and "Traceback" not in err, (rc, err, took)
    kept = len(jsonl.read_text().splitlines())
    assert err.splitlines() == [f"simcxl: interrupted; {kept} of 48 points are kept in sw/results.jsonl; "
                                "run the same command again to run the rest"]


# ---------------------------------------------------------------- 6, 13: files and numbers as said


def test_plot_without_extension_is_png_and_says_so(tmp_path):
    p = cli("run", "lmbench", "--sizes", "4k", "--accesses", "100", "--plot", tmp_path / "noext")
    assert p.stderr.splitlines()[-1] == f"wrote {tmp_path / 'noext'}.png"
    assert (tmp_path / "noext.png").read_bytes()[:8] == PNG and not (tmp_path / "noext").exists()


def test_counts_are_printed_as_whole_numbers(tmp_path):
    t = tmp_path / "t.trace"
    t.write_text("0 R 0x0\n10 R 0x40\n20 W 0x80\n30 R 0x1000\n")
    p = cli("run", "trace", t)
    header, row = p.stdout.splitlines()
    assert row.split()[header.split().index("requests")] == "4"
    # type2-bias: the device's accesses flip host-bias pages, a count.
    p = cli("run", "accel", "-a", "type2-bias", "--target", "device", "--requests", "2000", "--footprint", "64k")
    header, row = p.stdout.splitlines()[:2]
    flips = row.split()[header.split().index("dcoh.bias_flips_to_device")]
    assert flips.replace(",", "").isdigit() and int(flips.replace(",", "")) > 0, p.stdout


# ---------------------------------------------------------------- 7, 11: presets and preset files


def test_incomplete_preset_file_is_rejected_naming_the_field(tmp_path):
    d = cli_json("presets", "show", "cxl-asic")
    del d["cxl"]["link"]["lanes"]
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(d))
    user_error(cli("run", "lmbench", "-m", f, "--sizes", "4k", ok=False), str(f), "cxl.link.lanes is missing",
               '"base"')


def test_preset_file_extends_a_base_and_rows_carry_file_name_and_overrides(tmp_path):
    f = tmp_path / "x4.json"
    f.write_text(json.dumps({"base": "cxl-asic", "cxl": {"link": {"lanes": 4}}}))
    shown = cli_json("presets", "show", f)
    asic = simcxl.load_preset("cxl-asic").to_dict()
    assert shown["cxl"]["link"]["lanes"] == 4 and shown["name"] == "x4"
    assert shown["cxl"]["media"] == asic["cxl"]["media"] and shown["host"] == asic["host"]  # the rest: the base's
    rows = cli_json("run", "traffic", "--threads", "2", "--requests", "2000", "-m", "cxl-asic", "-m", f,
                    "--set", "cxl.device.req_queue=60")
    assert [r["memory"] for r in rows] == ["cxl-asic [cxl.device.req_queue=60]", "x4 [cxl.device.req_queue=60]"]


def test_presets_list_and_show_know_the_accelerators(tmp_path):
    rows = cli_json("presets", "list")
    accel_dir = Path(simcxl.__file__).with_name("presets") / "accel"
    want = {p.stem: f"cxl-type{json.loads(p.read_text())['accel']['type']}" for p in accel_dir.glob("*.json")}
    assert {r["name"]: r["kind"] for r in rows if r["name"] in want} == want and len(want) == 4
    shown = cli_json("presets", "show", "type2-hdmdb")
    for group, params in json.loads((accel_dir / "type2-hdmdb.json").read_text()).items():
        assert shown[group] == params if not isinstance(params, dict) else \
            {k: shown[group][k] for k in params} == params
    text = cli("presets", "show", "type2-hdmdb").stdout
    assert "accel.hdm_db" in text and text.splitlines()[0].startswith("type2-hdmdb (cxl-type2 accelerator)")


def test_presets_show_says_where_each_parameter_came_from():
    fitted = json.loads((Path(simcxl.__file__).with_name("presets") / "cxl-asic.json").read_text())
    fitted = fitted["provenance"]["fitted"]
    out = cli("presets", "show", "cxl-asic").stdout.splitlines()
    origin = {ln.split()[0]: ln.split()[-1] for ln in out if ln.startswith("  ")}
    assert {k for k, v in origin.items() if v == "fitted"} == set(fitted)
    assert origin["cxl.link.lanes"] == "preset"  # x8, not the schema's x16
    assert origin["host.l1_assoc"] in ("default", "preset")
    assert set(origin.values()) <= {"fitted", "preset", "default"}


# ---------------------------------------------------------------- 8: nothing to run


def test_empty_or_comment_only_trace_is_an_error(tmp_path):
    empty, comments = tmp_path / "empty.trace", tmp_path / "comments.trace"
    empty.write_text("")
    comments.write_text("# time_ns op address\n\n   \n# nothing\n")
    errors_at_once([(("run", "trace", empty), [str(empty), "has no requests"]),
                    (("run", "trace", comments), [str(comments), "has no requests"])])


# ---------------------------------------------------------------- 14: progress on a log


def test_progress_lines_when_stderr_is_not_a_terminal():
    env = dict(os.environ, SIMCXL_PROGRESS_SECONDS="0")
    p = subprocess.run(_cmd(["run", "lmbench", "--sizes", "4k,8k,16k,32k", "--accesses", "100"]), env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("simcxl: lmbench cxl-asic: ")]
    assert [ln.split(": ")[2].split()[0] for ln in lines] == ["25%", "50%", "75%", "100%"], p.stderr


# ---------------------------------------------------------------- 15: the docs say what the tools do


def test_sweep_tutorial_comment_names_every_workload_kind():
    from simcxl.sweep.spec import WORKLOADS
    page = (REPO / "docs" / "tutorials" / "sweeps.md").read_text()
    comment = next(ln for ln in page.splitlines() if ln.startswith('kind = "traffic"'))
    assert all(k in comment for k in WORKLOADS), comment


# ---------------------------------------------------------------- 16: a group without a subcommand


def _groups(cmd: click.Command, path=()):
    """(words, group) for every command group of the CLI, the top level first (no words)."""
    if isinstance(cmd, click.Group):
        yield path, cmd
        for name, sub in cmd.commands.items():
            yield from _groups(sub, (*path, name))


def test_every_group_without_a_subcommand_shows_its_help_and_exits_0():
    """Found from the click objects, so that a new group is covered: its help, as -h prints it, exit 0."""
    from simcxl.cli import main
    groups = list(_groups(main))
    assert {("run",), ("presets",), ("guest",)} <= {g for g, _ in groups}
    runs = [(words, group, [subprocess.Popen(_cmd(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                            for args in (words, (*words, "-h"))]) for words, group in groups]
    for words, group, (bare, helped) in runs:
        out, err = bare.communicate(timeout=120)
        what = " ".join(("simcxl", *words))
        assert bare.returncode == 0, f"{what}: exit {bare.returncode}\n{err}"
        assert err == "", f"{what}: {err}"
        shown = [name for name, sub in group.commands.items() if not sub.hidden]
        assert shown, f"{what} has no subcommands"
        for name in shown:
            assert re.search(rf"^  {re.escape(name)}( |$)", out, re.M), f"{what}: {name} not in its help:\n{out}"
        assert out == helped.communicate(timeout=120)[0], f"{what}: not the help -h prints"
