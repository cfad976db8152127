"""Fuzzing trace replay: structured traces (every spelling the format
allows) checked against a count of the lines each access touches, traces
with one bad line, and arbitrary text. A bad line is a one-line ConfigError
naming the file, its line and the field."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, example, given, strategies as st

import simcxl
from simcxl import _core
from simcxl.topology import core_graph

from conftest import assert_one_line_rejection, fuzz
from test_fuzz_engine import PRESETS, check_consistent, run, small_system

pytestmark = pytest.mark.usefixtures("hang_guard")

LINE = 64
MAX_OUTSTANDING = st.sampled_from([1, 4, 64, 65536])


@st.composite
def access(draw):
    op = draw(st.sampled_from(["R", "r", "READ", "read", "W", "w", "WRITE", "write"]))
    size = draw(st.one_of(st.none(), st.integers(1, 4096)))
    top = 2 ** 64 - (size or LINE) - 1  # the very last line: see test_the_last_line_of_the_address_space
    addr = draw(st.one_of(st.integers(0, 1 << 40), st.integers(top - 4096, top)))
    return op, addr, size


@st.composite
def trace_text(draw):
    """A valid trace (times bounded to 1 ms: see test_an_idle_gap_costs_no_simulation) and
    the reads and writes, in lines, that it makes."""
    t, lines, reads, writes = 0.0, [], 0, 0
    sep = draw(st.sampled_from([" ", "\t", ",", ", ", "  "]))
    fmt = draw(st.sampled_from([repr, "{:g}".format, "{:.3e}".format]))  # one per trace: rounding keeps order
    for op, addr, size in draw(st.lists(access(), min_size=0, max_size=30)):
        t += draw(st.sampled_from([0, 0, 1, 2.5, 1000, 25000]))
        a = draw(st.sampled_from([f"{addr:#x}", f"{addr:#X}", str(addr)]))
        fields = [fmt(t), op, a] + ([str(size)] if size is not None else [])
        lines.append(sep.join(fields) + draw(st.sampled_from(["", "  ", " # note", "#"])))
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "# comment", "   ", "\t"])))
        n = (addr + (size or LINE) - 1) // LINE - addr // LINE + 1
        if op[0] in "Rr":
            reads += n
        else:
            writes += n
    text = "\n".join(lines) + draw(st.sampled_from(["\n", ""]))
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text, reads, writes


def replay(tmp_path_factory, data: bytes, system="cxl-asic", max_outstanding=64):
    path = tmp_path_factory.mktemp("t") / "t.trace"
    path.write_bytes(data)
    return path, run(simcxl.trace, system, path, max_outstanding=max_outstanding)


@fuzz(100)
@given(small_system(), trace_text(), MAX_OUTSTANDING)
def test_valid_trace_makes_one_request_per_line_touched(tmp_path_factory, s, trace, mo):
    text, reads, writes = trace
    _, df = replay(tmp_path_factory, text.encode(), s, mo)
    r = df.iloc[0].to_dict()
    assert r["requests"] == reads + writes
    if r["window_ns"] > 0:
        assert r["read_gbps"] * r["window_ns"] == pytest.approx(reads * LINE, rel=1e-9)
        assert r["write_gbps"] * r["window_ns"] == pytest.approx(writes * LINE, rel=1e-9)
    check_consistent(s, r, mo, (("read",) if reads else ()) + (("write",) if writes else ()))


BAD_FIELDS = {
    "time_ns": st.sampled_from(["-1", "abc", "nan", "inf", "1e16", "", "1e400", "--1"]),
    "op": st.sampled_from(["X", "Read", "RW", "0", "\u00e9"]),
    "address": st.sampled_from(["0x", "xyz", "-1", "0xg", "18446744073709551616", "0x10000000000000000",
                                "99999999999999999999999", "1.5", "+1"]),
    "size": st.sampled_from(["0", "-1", "1048577", "abc", "1.5", "99999999999999999999999"]),
    "extra": st.just("extra"),
}


@st.composite
def one_bad_line(draw):
    text, _, _ = draw(trace_text())
    lines = text.splitlines()
    k = draw(st.integers(0, len(lines)))
    field = draw(st.sampled_from(sorted(BAD_FIELDS)))
    bad = draw(BAD_FIELDS[field])
    before = [ln.split("#")[0].replace(",", " ").split() for ln in lines[:k]]
    t = next((f[0] for f in reversed(before) if f), "0")  # the last time so far: times must not decrease
    parts = {"time_ns": t, "op": "R", "address": "0x40", "size": "64"}
    if field == "extra":
        line = f"{t} R 0x40 64 {bad}"
    else:
        parts[field] = bad
        line = " ".join(v for v in parts.values() if v != "" or field != "time_ns") if field != "time_ns" \
            else f"{bad} R 0x40 64".strip()
    lines.insert(k, line)
    return "\n".join(lines) + "\n", k + 1, field


@fuzz(150)
@given(one_bad_line())
@example(("0 R 0x40 64\n0 R 0x40 64 9\n", 2, "extra"))
def test_bad_line_is_one_line_naming_file_line_and_field(tmp_path_factory, case):
    text, n, field = case
    path = tmp_path_factory.mktemp("t") / "t.trace"
    path.write_bytes(text.encode())
    with pytest.raises(Exception) as e:
        run(simcxl.trace, "ddr-local", path)
    names = {"time_ns": "time_ns", "op": "op", "address": "address", "size": "size", "extra": "unexpected field"}
    msg = assert_one_line_rejection(e.value, str(path), f"line {n}:", says_allowed=False)
    # The time may be refused by the line before it (times must not decrease)
    assert names[field] in msg or (field != "time_ns" and "time_ns" in msg), msg


@fuzz(150)
@given(st.lists(st.text(max_size=30), max_size=8).map("\n".join))
def test_arbitrary_text_is_replayed_or_refused_in_one_line(tmp_path_factory, text):
    # An access after a long idle gap costs wall time (test_an_idle_gap_costs_no_simulation),
    # so no line starts more than 1 s in.
    for line in text.splitlines():
        tok = line.replace(",", " ").split("#")[0].split()
        try:
            assume(not tok or not float(tok[0]) > 1e9)
        except ValueError:
            pass
    path = tmp_path_factory.mktemp("t") / "t.trace"
    path.write_bytes(text.encode())
    try:
        df = run(simcxl.trace, "cxl-asic", path)
    except Exception as e:
        assert_one_line_rejection(e, str(path), says_allowed=False)
        return
    assert df.iloc[0]["requests"] >= 0


@pytest.mark.parametrize("data", [b"0 R 0x40\n" + "é".encode("latin-1") + b" R 0\n", "0 R 0\nx\n".encode("utf-16")])
def test_bad_line_that_is_not_utf8_is_a_config_error(tmp_path, data):
    path = tmp_path / "t.trace"
    path.write_bytes(data)
    with pytest.raises(_core.ConfigError, match="line"):
        simcxl.trace("cxl-asic", path)


def test_nul_inside_a_field_is_refused(tmp_path):
    path = tmp_path / "t.trace"
    path.write_bytes(b"0 R 0\x00junk\n")
    with pytest.raises(_core.ConfigError, match="line 1: holds a NUL byte"):
        simcxl.trace("cxl-asic", path)


def test_an_idle_gap_costs_no_simulation(tmp_path):
    """Two reads 11.3 days apart: idle DRAM needs the same handful of events as
    two reads 10 us apart. Refresh simulated interval by interval would take
    2.5 x 10^11 turns of its loop here: the hang guard would end the run. Both
    gaps end at the same point of the 3.9 us refresh interval (they differ by
    2.5 x 10^11 intervals), so the second read finds its rank in the same state
    (a read that arrives during a refresh waits for it: one more decision)."""
    events = {}
    for gap in ("1e4", "975000000010000"):
        path = tmp_path / f"gap{gap}.trace"
        path.write_text(f"0 R 0\n{gap} R 0\n")
        r = simcxl.trace("ddr-local", path).iloc[0]
        assert r["requests"] == 2
        events[gap] = r["events"]
    assert events["975000000010000"] == events["1e4"]


def test_the_last_line_of_the_address_space(tmp_path):
    path = tmp_path / "t.trace"
    path.write_text("0 R 0xffffffffffffffc0 64\n")
    assert simcxl.trace("cxl-asic", path).iloc[0]["requests"] == 1


def test_core_message_shows_an_infinite_value_as_inf():
    core = core_graph(PRESETS["cxl-asic"])
    core["components"]["host"]["l1_latency_ns"] = math.inf
    with pytest.raises(_core.ConfigError) as e:
        _core.validate(core)
    assert "-9223372036854775808" not in str(e.value) and "inf" in str(e.value)
