"""Loaded-latency measurements in a testbed: MLC's modes, stores and
patterns, rows measuring bandwidth, latency or both, fit declarations, one
simulation per row, and the shipped loaded-data testbed."""

from pathlib import Path

import pytest

from simcxl.calibration import calibrate, testbed

from conftest import REPO

TOML = """# Source: made up for the tests.
name = "loaded"
[memories.expander]
kind = "cxl-type3"
{extra}
"""
HEADER = "memory,threads,read_fraction,mode,stores,pattern,bandwidth_gbps,latency_ns\n"


def make(folder: Path, rows: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "testbed.toml").write_text(TOML.format(extra=extra))
    (folder / "loaded_latency.csv").write_text(HEADER + rows)
    return folder


def test_modes_stores_and_patterns_name_the_traffic(tmp_path):
    tb = testbed.load(make(tmp_path / "tb", "expander,16,,W2,,,24.0,\n"          # 2:1 with RFO stores
                                             "expander,16,,W6,,sequential,20.0,900\n"  # non-temporal writes only
                                             "expander,8,0.75,,write-allocate,,22.0,\n"
                                             "expander,8,1.0,,,,18.0,600\n"))
    bw = {(p.x["threads"], p.x.get("mode") or p.x["read_fraction"]): p for p in tb.points_of("expander",
                                                                                               "loaded_bandwidth")}
    lat = tb.points_of("expander", "loaded_latency")
    # MLC's -W2 stores one line per load, each store a read and a write: 2 reads to 1 write.
    assert bw[16, "W2"].x == {"threads": 16, "mode": "W2", "read_fraction": pytest.approx(2 / 3),
                              "stores": "write-allocate", "pattern": "random"}
    assert bw[16, "W6"].x["read_fraction"] == 0.0 and bw[16, "W6"].x["stores"] == "non-temporal"
    assert bw[16, "W6"].x["pattern"] == "sequential"
    assert bw[8, 0.75].x["stores"] == "write-allocate"
    # Without a mode or stores: non-temporal, as simcxl.loaded_latency's default.
    assert bw[8, 1.0].x["stores"] == "non-temporal"
    # A row with both values is two points of the same traffic; one with one value, one point.
    assert sorted(p.measured for p in lat) == [600.0, 900.0]
    assert sorted(p.measured for p in bw.values()) == [18.0, 20.0, 22.0, 24.0]
    assert {p.where for p in lat} == {"loaded_latency.csv:3", "loaded_latency.csv:5"}


@pytest.mark.parametrize("row,needle", [
    ("expander,16,1.0,,,,,\n", "loaded_latency.csv:2: neither bandwidth_gbps nor latency_ns is given"),
    ("expander,16,,,,,20.0,\n", "loaded_latency.csv:2: read_fraction is empty and no mode names the traffic"),
    ("expander,16,0.5,W2,,,20.0,\n", "loaded_latency.csv:2 column 3: read_fraction 0.5 is not MLC W2's 0.667"),
    ("expander,16,,W6,write-allocate,,20.0,\n",
     "loaded_latency.csv:2 column 5: stores 'write-allocate' is not MLC W6's (non-temporal)"),
    ("expander,16,,W42,,,20.0,\n", "loaded_latency.csv:2 column 4: mode = 'W42' is not allowed; allowed values: R, W2"),
    ("expander,16,0.25,,write-allocate,,20.0,\n",
     "loaded_latency.csv:2 column 3: read_fraction 0.25 is not allowed with write-allocate stores; allowed: 0.5 to 1"),
    ("expander,16,1.0,,,strided,20.0,\n",
     "loaded_latency.csv:2 column 6: pattern 'strided' is not allowed; allowed: random, sequential"),
    ("expander,16,1.0,,,,20.0,\nexpander,16,1,,non-temporal,random,21.0,\n",
     "loaded_latency.csv:3: duplicate point (expander, threads=16 read_fraction=1 stores=non-temporal "
     "pattern=random); first at line 2"),
])
def test_bad_loaded_rows_say_where_and_why(tmp_path, row, needle):
    with pytest.raises(testbed.TestbedError) as e:
        testbed.load(make(tmp_path / "tb", row))
    assert needle in str(e.value)


def test_a_declared_loaded_bandwidth_point_fits_the_bandwidth_knobs(tmp_path):
    rows = "expander,16,,W2,,,24.0,\nexpander,16,1.0,,,,21.0,700\n"
    tb = testbed.load(make(tmp_path / "tb", rows, 'fit = { loaded_bandwidth = { threads = 16, mode = "W2" } }'))
    fit = calibrate.fit_points(tb, "expander")
    assert [(p.experiment, p.measured) for p in fit] == [("loaded_bandwidth", 24.0)]
    assert calibrate._role(fit[0]) == "bandwidth"
    # The bandwidth knobs take one point: STREAM's or a loaded one.
    (tmp_path / "tb2").mkdir()
    (tmp_path / "tb2" / "stream.csv").write_text("memory,kernel,bandwidth_gbps\nexpander,copy,15.0\n")
    with pytest.raises(testbed.TestbedError, match="fit names both stream and loaded_bandwidth; both fit the "
                                                     "bandwidth knobs"):
        testbed.load(make(tmp_path / "tb2", rows, 'fit = { stream = "copy", loaded_bandwidth = { threads = 16, '
                                                  'read_fraction = 1.0 } }'))
    with pytest.raises(testbed.TestbedError, match=r"fit.loaded_bandwidth = \{'threads': 16\} must be a table"):
        testbed.load(make(tmp_path / "tb3", rows, "fit = { loaded_bandwidth = { threads = 16 } }"))


class CountingEngine:
    """Answers a loaded run with fixed figures and counts the runs."""
    def __init__(self):
        self.runs = []

    def loaded_latency(self, system, threads, read_fraction, stores="non-temporal", pattern="random"):
        self.runs.append((threads, read_fraction, stores, pattern))
        return 500.0 + threads, 10.0 + threads


def test_a_row_is_simulated_once_for_both_its_points(tmp_path):
    tb = testbed.load(make(tmp_path / "tb", "expander,4,1.0,,,,12.0,400\nexpander,8,,W5,,sequential,9.0,\n"))
    pts = tb.points_of("expander")
    eng = CountingEngine()
    got = calibrate.simulate(eng, None, pts)
    assert sorted(eng.runs) == [(4, 1.0, "non-temporal", "random"), (8, 0.5, "write-allocate", "sequential")]
    want = {("loaded_latency", 4): 504.0, ("loaded_bandwidth", 4): 14.0, ("loaded_bandwidth", 8): 18.0}
    assert {(p.experiment, p.x["threads"]): v for p, v in zip(pts, got)} == want


def test_the_shipped_loaded_testbed_holds_the_published_lists():
    tb = testbed.load(REPO / "calibration" / "testbeds" / "spr-cxl-dmsim-loaded")
    assert "CXL-DMSim" in tb.citation and "memory_contention.py" in tb.citation
    pts = tb.points_of("cxl-asic", "loaded_bandwidth")
    assert len(pts) == 48 and not tb.points_of("cxl-asic", "loaded_latency")
    by = {(p.x["read_fraction"], p.x["pattern"], p.x["threads"]): p.measured for p in pts}
    # The figure repository's lists, MB/s / 1000: first and last of each.
    assert (by[1.0, "random", 1], by[1.0, "random", 12]) == (5.379, 19.5693)
    assert (by[0.0, "random", 1], by[0.0, "random", 12]) == (22.7694, 15.0176)
    assert (by[1.0, "sequential", 6], by[0.0, "sequential", 2]) == (21.8199, 23.1989)
    assert {p.x["stores"] for p in pts} == {"non-temporal"}
    # One fit point, the write tracker's: twelve writers of random lines.
    fit = calibrate.fit_points(tb, "cxl-asic")
    assert [(p.experiment, p.x["read_fraction"], p.x["pattern"], p.x["threads"]) for p in fit] == \
        [("loaded_bandwidth", 0.0, "random", 12)]
    assert calibrate._role(fit[0]) == "writes"
