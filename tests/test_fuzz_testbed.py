"""Fuzzing testbed folders: testbed.toml and the measurement CSVs, valid
or with cells, keys and whole files broken (wrong encodings, NUL, truncated,
huge numbers). A loaded testbed holds exactly the rows written; a refused one
lists each problem on its own line with its file, line and column."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, strategies as st

from simcxl.calibration import testbed
from simcxl.calibration.testbed import FILES, TestbedError

from conftest import assert_one_line_rejection, fuzz

pytestmark = pytest.mark.usefixtures("hang_guard")

MEMORIES = {"local": "local-dram", "far": "remote-numa", "cxl": "cxl-type3"}
KERNELS = ("copy", "scale", "add", "triad")

positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False).map(lambda v: float(f"{v:.6g}"))
ROW = {
    "lat_mem_rd": lambda: st.fixed_dictionaries({
        "memory": st.sampled_from(sorted(MEMORIES)), "working_set_bytes": st.integers(64, 1 << 40),
        "latency_ns": positive}),
    "stream": lambda: st.fixed_dictionaries({
        "memory": st.sampled_from(sorted(MEMORIES)), "kernel": st.sampled_from(KERNELS),
        "threads": st.integers(1, 1024), "bandwidth_gbps": positive,
        "stores": st.sampled_from(["write-allocate", "non-temporal"])}),
    "loaded_latency": lambda: st.fixed_dictionaries({
        "memory": st.sampled_from(sorted(MEMORIES)), "read_fraction": st.sampled_from([0.0, 0.5, 0.75, 1.0]),
        "threads": st.integers(1, 1024), "bandwidth_gbps": positive, "latency_ns": positive,
        # No mode: the read fraction names the traffic; stores that read their line need half of it reads.
        "mode": st.just(""), "stores": st.sampled_from(["", "non-temporal"]),
        "pattern": st.sampled_from(["", "random", "sequential"])}),
}
# Cells no column of that kind takes
BAD_CELL = {
    "memory": st.sampled_from(["nowhere", "Local", "local ", "loc\x00al"]).filter(lambda m: m.strip() not in MEMORIES),
    "working_set_bytes": st.sampled_from(["abc", "1.5", "inf", "-inf", "nan", "-4096", "0", "1e400", "4k", "63",
                                          str(2 ** 40 + 1), str(10 ** 400)]),
    "threads": st.sampled_from(["x", "1.5", "inf", "nan", "0", "-1", "1025", "1e400", str(10 ** 30)]),
    "latency_ns": st.sampled_from(["x", "inf", "-inf", "nan", "0", "-1", "1e400", "1e-400"]),
    "bandwidth_gbps": st.sampled_from(["x", "inf", "nan", "0", "-3", "1e400"]),
    "read_fraction": st.sampled_from(["x", "1.5", "-0.1", "nan", "inf", "2"]),
    "kernel": st.sampled_from(["cpy", "COPY", "sum", "", "\x00"]),
    "stores": st.sampled_from(["nt", "streaming", "write_allocate"]),
}


def unique(rows, key):
    """Rows that are distinct points (the loader refuses duplicates)."""
    seen, out = set(), []
    for r in rows:
        k = (r["memory"], r.get("working_set_bytes"), r.get("kernel"), r.get("threads"), r.get("stores"),
             r.get("read_fraction")) if key != "loaded_latency" else \
            (r["memory"], r["threads"], r["read_fraction"], r.get("pattern") or "random")
        if k not in seen:
            seen.add(k)
            out.append(r)
    return out


def csv_text(cols, rows):
    return ",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows)


TOML = "\n".join(f'[memories.{n}]\nkind = "{k}"' for n, k in MEMORIES.items()) + "\n"


@st.composite
def valid_testbed(draw):
    files = {}
    for key in draw(st.lists(st.sampled_from(sorted(ROW)), min_size=1, max_size=3, unique=True)):
        rows = unique(draw(st.lists(ROW[key](), min_size=1, max_size=5)), key)
        files[key] = (list(FILES[key][1]) if key != "stream" or draw(st.booleans())
                      else ["memory", "kernel", "bandwidth_gbps"], rows)
        if files[key][0] != list(FILES[key][1]):
            files[key] = (files[key][0], unique([{c: r[c] for c in files[key][0]} for r in rows], key))
    return files


def write(folder, toml, files):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "testbed.toml").write_bytes(toml if isinstance(toml, bytes) else toml.encode())
    for key, content in files.items():
        (folder / FILES[key][0]).write_bytes(content if isinstance(content, bytes) else csv_text(*content).encode())
    return folder


@fuzz(100)
@given(valid_testbed())
def test_valid_testbed_holds_exactly_its_rows(tmp_path_factory, files):
    folder = write(tmp_path_factory.mktemp("tb"), TOML, files)
    tb = testbed.load(folder)
    for key, (cols, rows) in files.items():
        pts = tb.points_of
        got = [p for m in MEMORIES for p in pts(m, key)]
        assert len(got) == len(rows)
        measured = "bandwidth_gbps" if key == "stream" else "latency_ns"
        assert sorted(p.measured for p in got) == sorted(float(r[measured]) for r in rows)


def problem_lines(e: TestbedError, folder) -> list:
    msg = str(e)
    head, *lines = msg.split("\n")
    assert head == f"testbed {folder} has problems:" and lines, msg
    for line in lines:
        assert line.startswith(str(folder)), f"a problem without its file: {line!r}"
    return lines


@st.composite
def broken_cell(draw):
    files = draw(valid_testbed())
    key = draw(st.sampled_from(sorted(files)))
    cols, rows = files[key]
    i = draw(st.integers(0, len(rows) - 1))
    col = draw(st.sampled_from([c for c in cols if c in BAD_CELL]))
    rows[i] = dict(rows[i], **{col: draw(BAD_CELL[col])})
    return files, key, i + 2, col


@fuzz(150)
@given(broken_cell())
@example(({"lat_mem_rd": (["memory", "working_set_bytes", "latency_ns"], [
    {"memory": "local", "working_set_bytes": "inf", "latency_ns": 5}])}, "lat_mem_rd", 2, "working_set_bytes"))
@example(({"lat_mem_rd": (["memory", "working_set_bytes", "latency_ns"], [
    {"memory": "local", "working_set_bytes": 4096, "latency_ns": "inf"}])}, "lat_mem_rd", 2, "latency_ns"))
@example(({"lat_mem_rd": (["memory", "working_set_bytes", "latency_ns"], [
    {"memory": "local", "working_set_bytes": "1e30", "latency_ns": 5}])}, "lat_mem_rd", 2, "working_set_bytes"))
def test_broken_cell_is_a_problem_naming_file_line_and_column(tmp_path_factory, case):
    files, key, line, col = case
    folder = write(tmp_path_factory.mktemp("tb"), TOML, files)
    with pytest.raises(TestbedError) as e:
        testbed.load(folder)
    lines = problem_lines(e.value, folder)
    where = f"{folder / FILES[key][0]}:{line}"
    mine = [p for p in lines if p.startswith(where)]
    assert mine, f"no problem at {where}: {lines}"
    if col != "memory":  # an undeclared memory is named by its value
        assert any(col in p for p in mine), mine


def encodings(raw: bytes):
    return st.one_of(
        st.just(raw.decode().encode("utf-16")), st.just(raw.decode().encode("utf-32")),
        st.integers(0, len(raw)).map(lambda n: raw[:n]),
        st.integers(0, len(raw)).map(lambda n: raw[:n] + b"\x00" + raw[n:]),
        st.integers(0, len(raw)).map(lambda n: raw[:n] + "é".encode("latin-1") + raw[n:]),
        st.binary(max_size=80), st.just(b""), st.just(b'"' + b"1" * 200_000 + b'"\n'))


@st.composite
def broken_file(draw):
    files = draw(valid_testbed())
    toml = TOML.encode()
    if draw(st.booleans()):
        toml = draw(encodings(toml) | st.sampled_from([
            b"files = 5\n" + toml, b'[files.lat_mem_rd]\npath = 5\n' + toml, b"memories = [1]\n",
            toml + b'[memories.cxl2]\nkind = "cxl-type3"\nlink = "x16"\n',
            toml + b'[memories.cxl2]\nkind = "cxl-type3"\nlink = { gen = 7, lanes = 3 }\n',
            toml + b'[memories.cxl2]\nkind = "cxl-type3"\nbase = 5\n',
            toml + b"[memories.x]\nkind = [1]\n", b"a = " + b"[" * 5000]))
    else:
        key = draw(st.sampled_from(sorted(files)))
        files[key] = draw(encodings(csv_text(*files[key]).encode()) | st.just(
            csv_text(["memory"] + list(files[key][0]), [dict(r, memory="local") for r in files[key][1]]).encode()))
    return toml, files


@fuzz(150)
@given(broken_file())
@example((b"files = 5\n" + TOML.encode(), {}))                                 # was AttributeError
@example((b'[files.lat_mem_rd]\npath = 5\n' + TOML.encode(), {}))              # was TypeError
@example((TOML.encode() + b'[memories.c2]\nkind = "cxl-type3"\nlink = "x16"\n', {}))  # was ValueError
@example((TOML.encode(), {"lat_mem_rd": b'memory,working_set_bytes,latency_ns\nlocal,64,"' + b"1" * 200_000
          + b'"\n'}))                                                         # was _csv.Error
@example((b"a = " + b"[" * 5000, {}))                                          # was RecursionError
def test_broken_file_loads_or_lists_problems_with_their_file(tmp_path_factory, case):
    toml, files = case
    folder = write(tmp_path_factory.mktemp("tb"), toml, files)
    try:
        tb = testbed.load(folder)
    except TestbedError as e:
        if "\n" in str(e):
            problem_lines(e, folder)
        else:
            assert_one_line_rejection(e, str(folder), says_allowed=False)
        return
    for p in tb.points:
        assert p.memory in tb.memories and 0 < p.measured < math.inf
