"""Trace replay through ``simcxl.trace(memory, path)``.

A trace line is ``time_ns op address [size]``; every 64-byte line an access
touches becomes one request.
"""

from __future__ import annotations

import pytest

import simcxl
from simcxl import _core

LINE = 64


def replay(tmp_path, text, memory="cxl-asic", max_outstanding=64, name="t.trace"):
    path = tmp_path / name
    path.write_bytes(text.encode())
    df = simcxl.trace(memory, path, max_outstanding=max_outstanding)
    assert len(df) == 1
    return df.iloc[0]


def lines_touched(addr, size=LINE):
    return (addr + size - 1) // LINE - addr // LINE + 1


@pytest.mark.parametrize("addr, size", [
    (0, 64), (0x40, 1), (63, 1), (63, 2), (0x30, 200), (0x1000, 200), (0x1000 + 8, 120), (0x1000 + 8, 121),
    (0x2000, 4096), (0x2001, 4096), (0, 1 << 20),
])
def test_request_count_is_lines_touched(tmp_path, addr, size):
    r = replay(tmp_path, f"0 R {addr:#x} {size}\n")
    assert r["requests"] == lines_touched(addr, size)


def test_request_count_sums_over_accesses(tmp_path):
    accesses = [(0, 0x30, 200), (10, 0x10000, 64), (20, 0x20008, 128), (30, 0x30000, 1), (40, 0x40000, None)]
    text = "".join(f"{t} R {a:#x}" + (f" {s}" if s else "") + "\n" for t, a, s in accesses)
    r = replay(tmp_path, text)
    assert r["requests"] == sum(lines_touched(a, s or LINE) for _, a, s in accesses) == 4 + 1 + 3 + 1 + 1


def test_reads_and_writes_counted_separately(tmp_path):
    # 3 read lines, 5 written lines (one write of 4 lines)
    text = "0 R 0x0\n0 W 0x1000\n0 R 0x2000 128\n0 W 0x3000 256\n"
    r = replay(tmp_path, text)
    assert r["requests"] == 8
    # GB/s x ns = bytes
    assert r["read_gbps"] * r["window_ns"] == pytest.approx(3 * LINE, rel=1e-9)
    assert r["write_gbps"] * r["window_ns"] == pytest.approx(5 * LINE, rel=1e-9)
    assert r["total_gbps"] == pytest.approx(r["read_gbps"] + r["write_gbps"], rel=1e-12)
    assert r["read_latency_ns_mean"] > 0 and r["write_latency_ns_mean"] > 0


def test_reads_only_and_writes_only(tmp_path):
    r = replay(tmp_path, "0 R 0x0\n0 r 0x40\n0 READ 0x80\n0 read 0xc0\n", name="r.trace")
    assert r["requests"] == 4 and r["read_gbps"] > 0 and r["write_gbps"] == 0
    w = replay(tmp_path, "0 W 0x0\n0 w 0x40\n0 WRITE 0x80\n0 write 0xc0\n", name="w.trace")
    assert w["requests"] == 4 and w["write_gbps"] > 0 and w["read_gbps"] == 0


def test_comments_and_blank_lines_ignored(tmp_path):
    plain = "0 R 0x1000\n10 W 0x2000 128\n20 R 0x3000\n"
    commented = ("# a trace\n\n   \n# time_ns op address [size]\n0 R 0x1000   # first read\n\n"
                 "\t\n10 W 0x2000 128#write two lines\n# 15 R 0x9999 4096 (commented out)\n20 R 0x3000\n#end")
    a = replay(tmp_path, plain, name="plain.trace")
    b = replay(tmp_path, commented, name="commented.trace")
    assert a["requests"] == b["requests"] == 4
    assert a.drop("memory").to_dict() == b.drop("memory").to_dict()


def test_separators(tmp_path):
    spaces = "0 R 0x1000\n10 W 0x2000 128\n20 R 0x3000 64\n"
    variants = {
        "commas": "0,R,0x1000\n10,W,0x2000,128\n20,R,0x3000,64\n",
        "comma-space": "0, R, 0x1000\n10, W, 0x2000, 128\n20 ,R , 0x3000 ,64\n",
        "tabs": "0\tR\t0x1000\n10\tW\t0x2000\t128\n20\tR\t0x3000\t64\n",
        "many-spaces": "  0   R   0x1000  \n10  W 0x2000     128\n 20 R 0x3000 64 \n",
        "crlf": "0 R 0x1000\r\n10 W 0x2000 128\r\n20 R 0x3000 64\r\n",
    }
    ref = replay(tmp_path, spaces, name="spaces.trace").drop("memory").to_dict()
    assert ref["requests"] == 4
    for name, text in variants.items():
        got = replay(tmp_path, text, name=f"{name}.trace").drop("memory").to_dict()
        assert got == ref, name


def test_hex_and_decimal_addresses(tmp_path):
    hexa = replay(tmp_path, "0 R 0x1000\n0 R 0X2040 100\n0 W 0xabc0\n", name="hex.trace")
    dec = replay(tmp_path, "0 R 4096\n0 R 8256 100\n0 W 43968\n", name="dec.trace")
    assert hexa["requests"] == dec["requests"] == 1 + 2 + 1
    assert hexa.drop("memory").to_dict() == dec.drop("memory").to_dict()


def test_decimal_address_line_offset(tmp_path):
    # 100 = line 64 + 36: 64 bytes from there cross into the next line
    assert replay(tmp_path, "0 R 100\n")["requests"] == 2
    assert replay(tmp_path, "0 R 128\n")["requests"] == 1


def test_zero_padded_decimal_address(tmp_path):
    assert replay(tmp_path, "0 R 0640\n", name="a.trace")["requests"] == 1  # 640 = 10 x 64: one line
    # 0009 is nine (not octal); 64 bytes from byte 9 touch two lines.
    assert replay(tmp_path, "0 R 0009\n", name="b.trace")["requests"] == 2
    assert replay(tmp_path, "0 R 0009 8\n", name="c.trace")["requests"] == 1


def test_time_gap_lowers_bandwidth(tmp_path):
    together = replay(tmp_path, "0 R 0x0\n0 R 0x1000\n", name="together.trace")
    apart = replay(tmp_path, "0 R 0x0\n1000000 R 0x1000\n", name="apart.trace")
    assert together["requests"] == apart["requests"] == 2
    assert apart["window_ns"] >= 1_000_000
    assert together["window_ns"] < 10_000
    assert apart["read_gbps"] < together["read_gbps"] / 100


def test_fractional_and_equal_times(tmp_path):
    r = replay(tmp_path, "0.5 R 0x0\n0.5 R 0x40\n2.25 W 0x80\n1e3 R 0xc0\n")
    assert r["requests"] == 4
    assert r["window_ns"] >= 1000 - 0.5


def test_max_outstanding_one_serialises_reads(tmp_path):
    text = "".join(f"0 R {i * 4096:#x}\n" for i in range(2000))
    one = replay(tmp_path, text, max_outstanding=1)
    many = replay(tmp_path, text, max_outstanding=64)
    assert one["requests"] == many["requests"] == 2000
    assert one["read_latency_ns_mean"] <= many["read_latency_ns_mean"]
    # one at a time: the run lasts about the sum of the latencies; 64 at a time it overlaps them
    assert one["window_ns"] >= 0.99 * 2000 * one["read_latency_ns_mean"]
    assert many["window_ns"] < one["window_ns"] / 4
    assert many["read_gbps"] > 4 * one["read_gbps"]


@pytest.mark.parametrize("memory", ["ddr-local", "ddr-remote", "cxl-asic", "cxl-fpga"])
def test_every_memory_kind_replays(tmp_path, memory):
    r = replay(tmp_path, "0 R 0x0 256\n5 W 0x1000 128\n", memory=memory)
    assert r["memory"] == memory
    assert r["requests"] == 6
    assert r["read_latency_ns_mean"] > 0


def test_empty_trace(tmp_path):
    r = replay(tmp_path, "# nothing here\n\n")
    assert r["requests"] == 0
    assert r["read_gbps"] == 0 and r["write_gbps"] == 0


def test_trace_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.trace"
    path.write_text("# header\n0 R 0x0\n\n1 R 0x40 0\n")
    with pytest.raises(_core.ConfigError, match=r"line 4\b.*size"):
        simcxl.trace("cxl-asic", path)


def test_trace_missing_file(tmp_path):
    with pytest.raises(simcxl.ParamError, match="missing.trace"):
        simcxl.trace("cxl-asic", tmp_path / "missing.trace")


@pytest.mark.parametrize("mo", [0, 65537, 2.5])
def test_max_outstanding_range(tmp_path, mo):
    path = tmp_path / "t.trace"
    path.write_text("0 R 0\n")
    with pytest.raises(simcxl.ParamError, match="max_outstanding"):
        simcxl.trace("cxl-asic", path, max_outstanding=mo)
