"""Black-box tests of the installed ``simcxl`` console script.

Every test runs the real entry point in a subprocess, so they exercise the
click wiring, the engine and the compiled core together.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import simcxl

SIMCXL = Path(sys.executable).with_name("simcxl")
PRESETS = {"ddr-local": "local-dram", "ddr-remote": "remote-numa", "cxl-asic": "cxl-type3", "cxl-fpga": "cxl-type3",
           "cxl-cz120": "cxl-type3"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
KERNELS = {"copy", "scale", "add", "triad"}


def _cmd(args):
    return [str(SIMCXL), *map(str, args)]


def cli(*args, cwd=None, ok=True) -> subprocess.CompletedProcess:
    p = subprocess.run(_cmd(args), capture_output=True, text=True, cwd=cwd, timeout=120)
    assert "Traceback" not in p.stderr + p.stdout, p.stderr
    if ok:
        assert p.returncode == 0, f"simcxl {' '.join(map(str, args))} exited {p.returncode}:\n{p.stderr}"
    return p


def cli_json(*args, cwd=None):
    p = cli(*args, "--json", cwd=cwd)
    return json.loads(p.stdout)


def cli_parallel(*arglists):
    """Runs several commands at once (they are independent) and returns their JSON outputs."""
    procs = [subprocess.Popen(_cmd(a), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in arglists]
    outs = []
    for a, p in zip(arglists, procs):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"simcxl {' '.join(map(str, a))} exited {p.returncode}:\n{err}"
        outs.append(json.loads(out))
    return outs


def user_error(p: subprocess.CompletedProcess, *needles: str) -> str:
    """Checks the contract for bad input and returns the message."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    lines = p.stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{p.stderr}"
    msg = lines[0]
    assert msg.startswith("simcxl: error: "), msg
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"
    return msg


def write_trace(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def assert_png(path: Path):
    assert path.is_file(), f"{path} was not written"
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 1000  # a real image, not just a header


# ---------------------------------------------------------------- workloads, JSON output


def test_lmbench_json_one_memory():
    rows = cli_json("run", "lmbench", "--sizes", "4k,64m", "--accesses", "2000")
    assert isinstance(rows, list) and len(rows) == 2
    for r in rows:
        assert set(r) == {"working_set_bytes", "latency_ns"}
    assert [r["working_set_bytes"] for r in rows] == [4096, 64 << 20]
    assert all(isinstance(r["working_set_bytes"], int) for r in rows)
    small, big = (r["latency_ns"] for r in rows)
    # 4 KiB fits in L1: the chase sees the L1 hit latency of the default preset (cxl-asic).
    assert small == pytest.approx(simcxl.load_preset("cxl-asic").host.l1_latency_ns, rel=0.05)
    assert big > 10 * small


def test_lmbench_json_two_memories():
    rows = cli_json("run", "lmbench", "--sizes", "4k,1m", "--accesses", "2000",
                    "--memory", "ddr-local", "--memory", "cxl-asic")
    assert len(rows) == 4
    for r in rows:
        assert set(r) == {"memory", "working_set_bytes", "latency_ns"}
        assert r["latency_ns"] > 0
    assert [r["memory"] for r in rows] == ["ddr-local", "ddr-local", "cxl-asic", "cxl-asic"]
    assert [r["working_set_bytes"] for r in rows] == [4096, 1 << 20] * 2


def test_stream_json_all_kernels():
    bw = cli_json("run", "stream", "--threads", "2", "--lines", "2000")
    assert isinstance(bw, dict)
    assert set(bw) == KERNELS
    for k, v in bw.items():
        assert isinstance(v, float) and math.isfinite(v) and v > 0, (k, v)


def test_stream_json_selected_kernels():
    bw = cli_json("run", "stream", "--threads", "2", "--lines", "2000", "--kernel", "copy", "--kernel", "triad")
    assert set(bw) == {"copy", "triad"}
    assert all(v > 0 for v in bw.values())


def test_stream_placement_reaches_the_engine():
    args = ("run", "stream", "--memory", "cxl-fpga", "--set", "cxl.media.ranks=1", "--kernel", "add", "--threads",
            "16", "--lines", "2000")
    ft = cli_json(*args)["add"]
    assert cli_json(*args, "--placement", "first-touch")["add"] == ft
    # Arrays in one piece: add's streams close each other's rows on one rank's 16 banks
    # (13-15 % slower on the preset recalibrated with the non-inclusive host caches).
    assert cli_json(*args, "--placement", "contiguous")["add"] < 0.9 * ft


def test_stream_stores_reach_the_engine():
    args = ("run", "stream", "--memory", "cxl-asic", "--kernel", "copy", "--threads", "16", "--lines", "2000")
    wa = cli_json(*args)["copy"]
    assert cli_json(*args, "--stores", "write-allocate")["copy"] == wa
    # Without reads for ownership a bandwidth-bound copy counts about 3/2 as many bytes.
    assert cli_json(*args, "--stores", "non-temporal")["copy"] > 1.3 * wa


def test_demo_runs_each_stream_kernel_with_its_measured_stores():
    import pandas as pd
    from simcxl.workloads import demo
    from conftest import TESTBED
    _, shipped, _ = demo.read_testbed(TESTBED)
    assert demo._stores(shipped, "cxl-fpga", "copy") == "non-temporal"
    assert demo._stores(shipped, "cxl-fpga", "triad") == demo._stores(shipped, "ddr-local", "copy") == "write-allocate"
    plain = pd.DataFrame({"memory": ["x"], "kernel": ["copy"], "bandwidth_gbps": [1.0]})
    assert demo._stores(plain, "x", "copy") == demo._stores(None, "x", "copy") == "write-allocate"


def test_loaded_latency_json():
    rows = cli_json("run", "loaded-latency", "--threads", "1,2", "--read-fraction", "1.0,0.5",
                    "--requests", "2000")
    assert isinstance(rows, list) and len(rows) == 4
    for r in rows:
        assert set(r) == {"threads", "read_fraction", "bandwidth_gbps", "latency_ns", "mode", "stores", "delay_ns"}
        assert r["bandwidth_gbps"] > 0 and r["latency_ns"] > 0
        assert isinstance(r["threads"], int)
    assert sorted((r["read_fraction"], r["threads"]) for r in rows) == [(0.5, 1), (0.5, 2), (1.0, 1), (1.0, 2)]


@pytest.mark.parametrize("rf", [1.0, 0.5])
def test_traffic_json(rf):
    rows = cli_json("run", "traffic", "--threads", "2", "--requests", "2000", "--read-fraction", str(rf),
                    "--footprint", "64m")
    assert len(rows) == 1
    r = rows[0]
    assert set(r) == {"memory", "read_gbps", "write_gbps", "total_gbps", "read_latency_ns_mean",
                      "read_latency_p99_ns"}
    assert r["memory"] == "cxl-asic"
    assert r["read_gbps"] > 0
    assert r["total_gbps"] == pytest.approx(r["read_gbps"] + r["write_gbps"], rel=1e-9)
    assert r["read_latency_p99_ns"] >= r["read_latency_ns_mean"] > 0
    if rf == 1.0:
        assert r["write_gbps"] == 0
    else:
        assert r["write_gbps"] > 0


TRACE = """\
# time_ns op address [size]

0 R 0x1000
0,W,8192,64
5\tR\t0x2030\t200
10 w 12288
"""
# lines touched: 0x1000 (1), 8192 (1), 0x2030..0x20f7 -> 0x2000..0x20c0 (4), 12288 (1)
TRACE_READ_LINES, TRACE_WRITE_LINES = 5, 2


def test_trace_json(tmp_path):
    t = write_trace(tmp_path / "small.trace", TRACE)
    rows = cli_json("run", "trace", t)
    assert len(rows) == 1
    r = rows[0]
    assert r["memory"] == "cxl-asic"
    assert r["requests"] == TRACE_READ_LINES + TRACE_WRITE_LINES
    assert r["read_gbps"] > 0 and r["write_gbps"] > 0
    # 5 read lines against 2 written lines over the same window
    assert r["read_gbps"] / r["write_gbps"] == pytest.approx(TRACE_READ_LINES / TRACE_WRITE_LINES, rel=1e-9)
    assert r["read_latency_ns_mean"] > 0 and r["write_latency_ns_mean"] > 0


def test_trace_json_two_memories_and_max_outstanding(tmp_path):
    t = write_trace(tmp_path / "small.trace", TRACE)
    rows = cli_json("run", "trace", t, "-m", "ddr-local", "-m", "cxl-fpga", "--max-outstanding", "1")
    assert [r["memory"] for r in rows] == ["ddr-local", "cxl-fpga"]
    assert all(r["requests"] == TRACE_READ_LINES + TRACE_WRITE_LINES for r in rows)


# ---------------------------------------------------------------- presets


ACCELS = {"type1-asic": "cxl-type1", "type1-fpga": "cxl-type1", "type2-bias": "cxl-type2",
          "type2-hdmdb": "cxl-type2"}


def test_presets_list_text():
    p = cli("presets", "list")
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    assert len(lines) == len(PRESETS) + len(ACCELS)
    got = {ln.split()[0]: ln.split()[1] for ln in lines}
    assert got == {**PRESETS, **ACCELS}


def test_presets_list_json():
    rows = cli_json("presets", "list")
    assert {r["name"]: r["kind"] for r in rows} == {**PRESETS, **ACCELS}
    for r in rows:
        assert set(r) == {"name", "kind", "description"}
        assert r["description"]


def _preset_copy(tmp_path, name):
    """`presets show NAME --json` written to a file."""
    shown = cli_json("presets", "show", name)
    f = tmp_path / f"copy-of-{name}.json"
    f.write_text(json.dumps(shown))
    return shown, f


LM_SMALL = ("run", "lmbench", "--sizes", "4k,1m", "--accesses", "2000", "--json")
TRAFFIC_SMALL = ("run", "traffic", "--threads", "2", "--requests", "2000", "--json")


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_show_json_round_trips(tmp_path, name):
    shown, f = _preset_copy(tmp_path, name)
    assert shown["name"] == name and shown["kind"] == PRESETS[name]
    # The file describes the same system ...
    assert cli_json("presets", "show", f) == shown
    # ... and simulates the same: lmbench (host caches) and traffic (the memory itself), each run once with
    # the preset name and once with the file (whose rows carry the file's name).
    lm, tr = cli_parallel([*LM_SMALL, "--memory", name, "--memory", f],
                          [*TRAFFIC_SMALL, "--memory", name, "--memory", f])
    assert len(lm) == 4 and [r["memory"] for r in lm] == [name] * 2 + [f.stem] * 2
    assert [{**r, "memory": 0} for r in lm[:2]] == [{**r, "memory": 0} for r in lm[2:]]
    assert len(tr) == 2 and {**tr[0], "memory": 0} == {**tr[1], "memory": 0}
    assert [r["memory"] for r in tr] == [name, f.stem]


def test_presets_show_round_trip_lmbench_past_llc(tmp_path):
    """At 64 MiB the chase reaches memory, so the lmbench result depends on the memory parameters."""
    _, f = _preset_copy(tmp_path, "cxl-fpga")
    rows = cli_json("run", "lmbench", "--sizes", "64m", "--accesses", "2000", "--memory", "cxl-fpga", "--memory", f)
    assert len(rows) == 2 and rows[0]["latency_ns"] == rows[1]["latency_ns"]
    assert [r["memory"] for r in rows] == ["cxl-fpga", "copy-of-cxl-fpga"]
    assert rows[0]["latency_ns"] > simcxl.load_preset("cxl-fpga").host.llc_latency_ns


def test_presets_differ():
    """Guards the round-trip tests: the workloads they compare tell the presets apart."""
    rows = cli_json(*TRAFFIC_SMALL[:-1], *[a for n in sorted(PRESETS) for a in ("--memory", n)])
    lat = {r["memory"]: r["read_latency_ns_mean"] for r in rows}
    assert len(lat) == len(PRESETS) and len(set(lat.values())) == len(PRESETS), lat
    rows = cli_json("run", "lmbench", "--sizes", "64m", "--accesses", "2000", "--memory", "cxl-fpga",
                    "--memory", "ddr-local")
    assert rows[0]["latency_ns"] != rows[1]["latency_ns"]


# ---------------------------------------------------------------- bench


def test_bench_json():
    r = cli_json("bench", "--requests", "20000")
    assert {"simulated_requests", "wall_seconds", "requests_per_second"} <= set(r)
    assert 0 < r["simulated_requests"] <= 20000
    assert r["wall_seconds"] > 0
    assert r["requests_per_second"] == pytest.approx(r["simulated_requests"] / r["wall_seconds"], rel=1e-6)


# ---------------------------------------------------------------- --plot and --csv


def test_lmbench_plot_and_csv(tmp_path):
    png, csv = tmp_path / "lm.png", tmp_path / "out" / "lm.csv"
    rows = cli_json("run", "lmbench", "--sizes", "4k,1m", "--accesses", "2000", "--plot", png, "--csv", csv)
    assert_png(png)
    df = pd.read_csv(csv)
    assert len(df) == len(rows) == 2
    assert list(df["working_set_bytes"]) == [r["working_set_bytes"] for r in rows]
    assert list(df["latency_ns"]) == pytest.approx([r["latency_ns"] for r in rows], rel=1e-9)
    assert set(df["memory"]) == {"cxl-asic"}


def test_an_output_that_cannot_be_written_fails_before_the_run(tmp_path):
    (tmp_path / "file").write_text("")
    for opt in ("--plot", "--csv"):
        p = cli("run", "stream", "--threads", "16", opt, tmp_path / "file" / "x.png", ok=False)
        assert p.returncode == 2 and p.stdout == ""  # nothing simulated
        assert f"Invalid value for '{opt}': cannot write {tmp_path / 'file' / 'x.png'}: {tmp_path / 'file'} is a file, " \
               "not a folder" in p.stderr


def test_files_that_are_not_utf8_are_named_with_line_and_column(tmp_path):
    preset = tmp_path / "p.json"
    preset.write_bytes(b'{"kind": "cxl-type3",\n "name": "caf\xe9"}')
    user_error(cli("run", "lmbench", "-m", preset, ok=False),
               f"preset file {preset}:2 column 14: byte 0xe9 is not UTF-8 text")
    spec = tmp_path / "s.toml"
    spec.write_bytes(b'name = "x"\n# \xff\n')
    user_error(cli("sweep", spec, "--out", tmp_path / "o", ok=False),
               f"sweep spec {spec}:2 column 3: byte 0xff is not UTF-8 text")


def test_stream_plot_and_csv(tmp_path):
    png, csv = tmp_path / "stream.png", tmp_path / "stream.csv"
    bw = cli_json("run", "stream", "--threads", "2", "--lines", "2000", "--plot", png, "--csv", csv)
    assert_png(png)
    df = pd.read_csv(csv)
    assert set(df["kernel"]) == KERNELS and len(df) == 4
    assert dict(zip(df["kernel"], df["bandwidth_gbps"])) == pytest.approx(bw, rel=1e-9)
    assert (df["threads"] == 2).all()


def test_loaded_latency_plot_and_csv(tmp_path):
    png, csv = tmp_path / "ll.png", tmp_path / "ll.csv"
    rows = cli_json("run", "loaded-latency", "--threads", "1,2", "--requests", "2000", "--plot", png, "--csv", csv)
    assert_png(png)
    df = pd.read_csv(csv)
    assert list(df["threads"]) == [r["threads"] for r in rows] == [1, 2]
    assert list(df["latency_ns"]) == pytest.approx([r["latency_ns"] for r in rows], rel=1e-9)
    assert list(df["bandwidth_gbps"]) == pytest.approx([r["bandwidth_gbps"] for r in rows], rel=1e-9)


def test_traffic_and_trace_csv(tmp_path):
    csv = tmp_path / "traffic.csv"
    cli("run", "traffic", "--threads", "2", "--requests", "2000", "--csv", csv)
    df = pd.read_csv(csv)
    assert len(df) == 1 and df["read_gbps"].iloc[0] > 0

    t = write_trace(tmp_path / "small.trace", TRACE)
    csv = tmp_path / "trace.csv"
    cli("run", "trace", t, "--csv", csv)
    df = pd.read_csv(csv)
    assert len(df) == 1 and df["requests"].iloc[0] == TRACE_READ_LINES + TRACE_WRITE_LINES


# ---------------------------------------------------------------- bad input

LM = ("run", "lmbench", "--sizes", "4k", "--accesses", "100")


@pytest.mark.parametrize("args, needles", [
    pytest.param(LM + ("--set", "cxl.link.lanes=3"), ["cxl.link.lanes", "3", "allowed values: 1, 2, 4, 8, 16"],
                 id="lanes=3"),
    pytest.param(LM + ("--set", "cxl.device.req_queue=0"), ["cxl.device.req_queue", "allowed: 1 to 65536"],
                 id="req_queue=0"),
    pytest.param(LM + ("--set", "host.cores=-1"), ["host.cores", "-1", "allowed: 1 to 1024"], id="cores=-1"),
    pytest.param(("run", "lmbench", "--sizes", "-4k"), ["size", "-4k", "allowed: a positive whole number"],
                 id="negative-size"),
    pytest.param(("run", "lmbench", "--sizes", "4k", "--memory", "no-such-memory"),
                 ["no-such-memory", *sorted(PRESETS)], id="unknown-preset"),
    pytest.param(("presets", "show", "no-such-memory"), ["no-such-memory", *sorted(PRESETS)],
                 id="unknown-preset-show"),
    pytest.param(("run", "loaded-latency", "--threads", "2", "--requests", "2000", "--read-fraction", "1.5"),
                 ["read_fraction", "1.5", "allowed: 0 to 1"], id="read-fraction=1.5"),
])
def test_bad_input(args, needles):
    user_error(cli(*args, ok=False), *needles)


def test_bad_stream_threads():
    cores = simcxl.load_preset("cxl-asic").host.cores
    user_error(cli("run", "stream", "--threads", "0", "--lines", "2000", ok=False),
               "threads", "0", f"1 to {cores}")


def test_unknown_set_parameter_is_named():
    user_error(cli(*LM, "--set", "nonexistent.param=1", ok=False), "nonexistent.param")


def test_unknown_set_parameter_lists_allowed():
    msg = user_error(cli(*LM, "--set", "nonexistent.param=1", ok=False), "nonexistent.param")
    assert "allowed" in msg


def test_preset_file_invalid_json(tmp_path):
    f = tmp_path / "broken.json"
    f.write_text('{\n  "name": "broken",\n  "kind": "cxl-type3"\n  "seed": 1\n}\n')  # missing comma
    with pytest.raises(json.JSONDecodeError) as e:
        json.loads(f.read_text())
    assert (e.value.lineno, e.value.colno) == (4, 3)
    msg = user_error(cli(*LM[:-2], "--memory", f, ok=False), str(f))
    assert re.search(r"\bline 4\b", msg) and re.search(r"\bcolumn 3\b", msg), msg


def test_preset_file_unknown_parameter(tmp_path):
    d = simcxl.load_preset("cxl-asic").to_dict()
    d["cxl"]["link"]["lane_count"] = 8
    f = tmp_path / "typo.json"
    f.write_text(json.dumps(d))
    user_error(cli(*LM, "--memory", f, ok=False), str(f), "cxl.link.lane_count", "allowed", "lanes")


def test_nonexistent_trace_file(tmp_path):
    missing = tmp_path / "missing.trace"
    user_error(cli("run", "trace", missing, ok=False), str(missing))


GOOD_PREFIX = "# time_ns op address [size]\n\n0 R 0x1000\n10 W 4096 128\n"  # lines 1-4


@pytest.mark.parametrize("bad, needles", [
    pytest.param("20 X 0x40", ["op", "'X'", "R, W"], id="bad-op"),
    pytest.param("20 R 0xZZ", ["address", "0xZZ"], id="bad-address-hex"),
    pytest.param("20 R banana", ["address", "banana"], id="bad-address-word"),
    pytest.param("5 R 0x40", ["time_ns", "5"], id="decreasing-time"),
    pytest.param("20 R 0x40 64 extra", ["extra"], id="too-many-fields"),
    pytest.param("20 R 0x40 0", ["size", "'0'", "1 to 1048576"], id="size-0"),
    pytest.param("20 R", ["time_ns op address"], id="too-few-fields"),
    pytest.param("soon R 0x40", ["time_ns", "soon"], id="bad-time"),
])
def test_malformed_trace_line(tmp_path, bad, needles):
    t = write_trace(tmp_path / "bad.trace", GOOD_PREFIX + bad + "\n30 R 0x80\n")
    msg = user_error(cli("run", "trace", t, ok=False), str(t), *needles)
    assert re.search(r"\bline 5\b", msg), msg


def test_malformed_trace_line_deep_in_file(tmp_path):
    """A bad line found mid-run (after thousands of requests) still names its own line."""
    body = "".join(f"{i} R {i * 64}\n" for i in range(3000))
    t = write_trace(tmp_path / "deep.trace", body + "3000 Q 0x40\n")
    msg = user_error(cli("run", "trace", t, ok=False), "'Q'")
    assert re.search(r"\bline 3001\b", msg), msg
