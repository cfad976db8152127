"""Loaded latency: MLC's traffic modes, stores with and without read for
ownership, delay sweeps, and the bandwidth limits of a loaded memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simcxl
from simcxl.engine import mlc
from simcxl.config.params import ParamError

SIMCXL = Path(sys.executable).with_name("simcxl")

# MLC's -W modes as its help text states them: reads:writes of memory traffic.
MLC_RATIOS = {"W2": (2, 1), "W3": (3, 1), "W4": (3, 2), "W5": (1, 1), "W6": (0, 1), "W7": (2, 1), "W8": (1, 1),
              "W9": (3, 1), "W12": (4, 1), "W13": (5, 1), "W17": (9, 1)}
NON_TEMPORAL = {"W6", "W7", "W8", "W9"}


@pytest.mark.parametrize("name", sorted(MLC_RATIOS))
def test_a_mode_moves_reads_and_writes_in_mlcs_ratio(name):
    r, w = MLC_RATIOS[name]
    m = mlc.mode(name)
    assert m.read_fraction == pytest.approx(r / (r + w))
    assert m.stores == ("non-temporal" if name in NON_TEMPORAL else "write-allocate")


@pytest.mark.parametrize("name", ["W2", "W4", "W5", "W7", "W9"])
def test_the_memory_sees_the_modes_ratio(name):
    # Every access of a cycle moves one line (an RFO store two), so the
    # bytes read and written over the window are in MLC's ratio.
    r, w = MLC_RATIOS[name]
    row = simcxl.loaded_latency("cxl-asic", threads=(4,), modes=[name], requests=20000).iloc[0]
    assert row["mode"] == name
    assert row["read_gbps"] / row["bandwidth_gbps"] == pytest.approx(r / (r + w), abs=0.01)


def test_write_allocate_fractions_count_memory_traffic():
    # Every RFO access reads a line and a store also writes one: reads are
    # all accesses, writes the stores, so a fraction 0.8 of the traffic means
    # stores are a quarter of the accesses and the memory sees 4:1.
    row = simcxl.loaded_latency("ddr-local", threads=(4,), read_fractions=(0.8,), stores="write-allocate",
                                requests=30000).iloc[0]
    assert row["read_gbps"] / row["bandwidth_gbps"] == pytest.approx(0.8, abs=0.01)
    with pytest.raises(ParamError, match="read_fraction.*0.5 to 1"):
        simcxl.loaded_latency("ddr-local", threads=(1,), read_fractions=(0.4,), stores="write-allocate")


def test_bad_mode_names_list_the_allowed_ones():
    with pytest.raises(ParamError, match="allowed values: R, W2, W3, W4, W5, W6"):
        mlc.mode("W10")
    p = subprocess.run([str(SIMCXL), "run", "loaded-latency", "-m", "ddr-local", "--mode", "R,W1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "W1" in lines[0] and "R, W2, W3" in lines[0], p.stderr


def test_json_keeps_its_keys_and_adds_the_mode():
    p = subprocess.run([str(SIMCXL), "run", "loaded-latency", "-m", "ddr-local", "--threads", "2", "--mode", "R,W6",
                        "--requests", "5000", "--json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["mode"] for r in rows] == ["R", "W6"]
    for r in rows:
        assert {"threads", "read_fraction", "bandwidth_gbps", "latency_ns", "mode"} <= set(r)
    assert rows[1]["read_fraction"] == 0 and rows[1]["stores"] == "non-temporal"


def test_a_delay_sweep_paces_each_thread():
    # One thread, one MSHR: an access leaves every max(delay, its latency)
    # ns, so at delays well above the latency the rate is 64 B / delay, half
    # of it stores (W8 alternates a load and a non-temporal store). The
    # probe's loads count as reads, so the writes are the check.
    s = simcxl.load_preset("ddr-local").replace(**{"host.mshrs_per_core": 1})
    df = simcxl.loaded_latency(s, threads=(1,), modes=["W8"], inject_delay_ns=[1000, 4000], requests=2000)
    assert list(df["delay_ns"]) == [1000, 4000]
    for d, bw in zip(df["delay_ns"], df["write_gbps"]):
        assert bw == pytest.approx(32 / d, rel=0.01)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.sampled_from(sorted(mlc.MODES)), threads=st.sampled_from([1, 8, 32]),
       pattern=st.sampled_from(["random", "sequential"]))
def test_loaded_bandwidth_never_exceeds_what_the_link_or_media_carry(mode, threads, pattern):
    # Each direction of the link carries at most its data peak (64 B per DRS
    # of 9 half-slots, per RwD of 10, in 8-half-slot flits: link_info), and
    # the media's data bus at most channels x bus_bytes x transfers/s for
    # reads and writes together.
    s = simcxl.load_preset("cxl-asic")
    link = simcxl._core.link_info(s.cxl.link.to_dict())
    r = simcxl.loaded_latency(s, threads=(threads,), modes=[mode], pattern=pattern, requests=4000).iloc[0]
    assert r["read_gbps"] <= link["read_data_peak_gbps"] * 1.001
    assert r["write_gbps"] <= link["write_data_peak_gbps"] * 1.001
    assert r["bandwidth_gbps"] <= s.cxl.media.peak_gbps * 1.001
    assert r["cxl_dev0.media.read_gbps"] + r["cxl_dev0.media.write_gbps"] <= s.cxl.media.peak_gbps * 1.001


def test_non_posted_writes_never_take_more_acknowledgements_than_the_write_queue_holds():
    # With non-posted writes each queued write owes an acknowledgement when its
    # data is written. The controller used to admit writes while acknowledgements
    # waited for a device that was not taking them, and overran its
    # acknowledgement queue (an internal error). Every request completes, and
    # the memory traffic has the mix asked for: all writes, or (stores that
    # read for ownership) half writes.
    s = simcxl.load_preset("cxl-asic").replace(**{"cxl.media.posted_writes": 0, "cxl.media.write_queue": 16,
                                                  "cxl.media.min_writes_per_switch": 8,
                                                  "cxl.media.max_writes_per_switch": 0})
    for stores, rf in (("non-temporal", 0.0), ("write-allocate", 0.5)):
        r = simcxl.loaded_latency(s, threads=(32,), read_fractions=(rf,), stores=stores, requests=20000).iloc[0]
        assert r["write_gbps"] / r["bandwidth_gbps"] == pytest.approx(1 - rf, abs=0.02)
        assert r["cxl_dev0.media.write_gbps"] == pytest.approx(r["write_gbps"], rel=0.02)


def test_the_device_write_tracker_bounds_writes_by_littles_law():
    # Each write holds a tracker entry from the controller's intake until its
    # completion leaves: at least the pipeline both ways, req + resp latency.
    # So W entries carry at most W x 64 B / (req + resp) of writes, and while
    # that is the binding limit (well below the M2S link's 23.7 GB/s of
    # writes, five 16-byte slots of a 68-byte flit each), writes scale with W.
    base = simcxl.load_preset("cxl-asic")
    dev = base.cxl.device
    hold_ns = dev.req_latency_ns + dev.resp_latency_ns
    got = {}
    for w in (6, 12):
        s = base.replace(**{"cxl.device.write_tracker": w})
        row = simcxl.loaded_latency(s, threads=(12,), read_fractions=(0.0,), stores="non-temporal",
                                    requests=20000).iloc[0]
        got[w] = row["bandwidth_gbps"]
        bound = w * 64 / hold_ns
        assert 0.75 * bound < got[w] <= bound, (w, got[w], bound)
    assert got[12] / got[6] == pytest.approx(2, rel=0.1)
    # Reads need no tracker entry: a read-only run is the same whatever W.
    reads = [simcxl.loaded_latency(base.replace(**{"cxl.device.write_tracker": w}), threads=(12,),
                                   read_fractions=(1.0,), requests=20000).iloc[0]["bandwidth_gbps"] for w in (0, 4)]
    assert reads[0] == reads[1]


def test_a_write_tracker_out_of_range_is_refused():
    s = simcxl.load_preset("cxl-asic")
    with pytest.raises(ParamError, match=r"cxl.device.write_tracker = 70000 is out of range; allowed: 0 to 65536"):
        s.replace(**{"cxl.device.write_tracker": 70000})


def test_the_asic_preset_peaks_at_a_read_heavy_mix_and_writes_alone_carry_less_than_reads():
    # Published for this device (CXL-DMSim, TCAD'25, testbed spr-cxl-dmsim's
    # claims): the best read:write mix is 74:26, read-heavy; reads alone are
    # bound by one link direction, so a mix carries more, until the writes'
    # cost binds. Twelve non-temporal writers carried 15.0 GB/s where reads
    # peaked at 21.8 (spr-cxl-dmsim-loaded), as Sun et al. (MICRO'23) saw on
    # other CXL devices. Mean of seeds 1 and 2, RFO stores, 16 threads.
    s = simcxl.load_preset("cxl-asic")
    fractions = (1.0, 0.75, 0.6, 0.5)
    runs = [simcxl.loaded_latency(s.replace(seed=k), threads=(16,), read_fractions=fractions,
                                  stores="write-allocate", requests=200000).bandwidth_gbps.to_numpy() for k in (1, 2)]
    bw = dict(zip(fractions, (runs[0] + runs[1]) / 2))
    best = max(bw, key=bw.get)
    # Read-heavy best, above reads only by more than 5 %. (It was also held 0.3 % above 1:1; since
    # the host's rows close on an idle timer and the presets were refitted, 3:2 is 0.1 % above 1:1,
    # less than the spread between seeds, 0.14 GB/s: two seeds cannot resolve such a margin.)
    assert best in (0.75, 0.6), bw
    assert bw[best] > 1.05 * bw[1.0], bw
    alone = simcxl.loaded_latency(s, threads=(16,), modes=["R", "W6"], requests=100000).set_index("mode")
    assert alone.bandwidth_gbps["W6"] < 0.8 * alone.bandwidth_gbps["R"]


def test_closed_adaptive_pages_take_the_precharges_off_random_reads_at_moderate_load():
    # Random reads at 5 GB/s (13 % of the DIMM's peak) on ddr-local: with open pages most find
    # another row open in their bank and wait tRP more than at idle; closing a row once no queued
    # request wants it leaves only the queueing. (A lead for the early knee, issue 36: the model
    # still queues more than silicon at moderate load with either policy.)
    rise, conflicts = {}, {}
    for policy in (0, 1):
        s = simcxl.load_preset("ddr-local").replace(**{"local_dram.page_policy": policy})
        idle = simcxl.traffic(s, threads=1, requests=3000, inject_delay_ns=1000.0).iloc[0]
        busy = simcxl.traffic(s, threads=16, requests=60000, rate_gbps=5.0, arrivals="poisson").iloc[0]
        rise[policy] = busy["read_latency_ns_mean"] - idle["read_latency_ns_mean"]
        conflicts[policy] = busy["local_dram.row_conflict_rate"]
    assert conflicts[0] > 0.5 and conflicts[1] == 0
    assert rise[1] < 0.7 * rise[0]
