"""gem5 runs of the CXL host bridge and its Type-3 expanders. They need a gem5 binary built with this
repository as EXTRAS, named by the environment variable GEM5. Figures the
differential tests measure are printed (run with -s to see them)."""

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

import simcxl
import simcxl.topology
from simcxl.gem5 import engine as gem5_engine
from simcxl.gem5.components import load_system

from conftest import REPO

GEM5 = os.environ.get("GEM5")
pytestmark = [
    pytest.mark.gem5,
    pytest.mark.skipif(not GEM5 or not Path(GEM5).is_file(),
                       reason="needs GEM5 = a gem5 binary built with this repository as EXTRAS "
                              "(scons build/NULL/gem5.opt EXTRAS=<repo>)"),
]


# Presets, and a topology file that both engines read as the same graph.
MEMORIES = ["cxl-asic", "cxl-fpga", str(REPO / "examples" / "topologies" / "cxl-asic.toml")]


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


def one_mshr(memory):
    """The standalone system of `memory` with one outstanding request per core (a topology file's
    parameters change by component path)."""
    if memory.endswith(".toml"):
        return simcxl.topology.GraphSystem(simcxl.topology.load(memory), simcxl.topology.memory_system).replace(
            **{"host.mshrs_per_core": 1})
    return simcxl.load_preset(memory).replace(**{"host.mshrs_per_core": 1})


@pytest.mark.parametrize("memory", MEMORIES)
def test_idle_latency_agrees_with_the_standalone_engine(tmp_path, memory):
    # One request at a time: 64 B about every 2 us, in both engines.
    row = run_traffic(tmp_path, "--memory", memory, "--pattern", "random", "--rate", "32MiB/s",
                      "--duration", "2ms")
    s = one_mshr(memory)
    ref = simcxl.traffic(s, threads=1, requests=2000, inject_delay_ns=2000).iloc[0]
    # gem5's generator sits at the memory port: compare from the host bridge on,
    # without the standalone host's core-side path (LLC miss and mesh).
    host = s.host.llc_latency_ns + s.host.uncore_req_latency_ns + s.host.uncore_resp_latency_ns
    assert ref["read.stage.host_uncore_ns"] == pytest.approx(host)
    g5, sa = float(row["read_latency_ns"]), ref["read_latency_ns_mean"] - host
    print(f"\n{memory} idle read latency from the host bridge: gem5 {g5:.1f} ns, standalone {sa:.1f} ns "
          f"({(g5 / sa - 1) * 100:+.1f}%)")
    assert float(row["reads"]) > 900
    assert g5 == pytest.approx(sa, rel=0.02)  # issue 33: idle within 2 %


@pytest.mark.parametrize("memory", MEMORIES)
def test_saturated_bandwidth_agrees_with_the_standalone_engine(tmp_path, memory):
    row = run_traffic(tmp_path, "--memory", memory, "--pattern", "random", "--rate", "200GiB/s",
                      "--duration", "200us")
    s = load_system(memory)
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
    stages = [float(v) for k, v in row.items() if k.endswith("_ns") and not k.startswith("read_latency")]
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


@pytest.mark.parametrize("param, where, message", [
    ("link_lanes=3", "board.memory.bridge.root_ports: bad CXLType3Expander parameter",
     "board.memory.bridge.root_ports.link.lanes = 3 is not allowed; allowed values: 1, 2, 4, 8, 16"),
    ("media_bus_bytes=8", "board.memory.bridge.root_ports: bad CXLType3Expander parameter",
     "bus_bytes x burst_length = 128 is not allowed; allowed: 64"),
    ("device_req_latency_ns=-1", "board.memory.bridge.root_ports: bad CXLType3Expander parameter",
     "board.memory.bridge.root_ports.device.req_latency_ns = -1 is out of range; allowed: 0 to 10000"),
    ("bridge_interleave_ways=3", "board.memory.bridge: bad CXLHostBridge parameter",
     "board.memory.bridge.interleave_ways = 3 is not allowed with root_ports = 1; allowed: interleave_ways equal to root_ports"),
    ("bridge_root_ports=2", "board.memory.bridge: bad CXLHostBridge parameter",
     "bridge_root_ports = 2 but root_ports holds 1 targets; give one CXLType3Expander or CXLSwitch per root port"),
])
def test_bad_simobject_parameter_fails_at_instantiation_with_its_name(tmp_path, param, where, message):
    # Set on the SimObjects directly, past the Python dataclasses: the timing
    # core's check runs when gem5 instantiates the object, before any tick.
    r = gem5(tmp_path, "cxl_traffic.py", "--memory", "cxl-asic", "--param", param, check=False)
    text = r.stdout + r.stderr
    assert r.returncode != 0
    assert f"fatal: {where}" in text
    assert message in text
    assert "Starting simulation" not in text and "panic" not in text


def test_unknown_simobject_parameter_is_refused_by_name(tmp_path):
    r = gem5(tmp_path, "cxl_traffic.py", "--param", "link_lane=8", check=False)
    assert r.returncode != 0
    assert "no parameter link_lane" in r.stdout + r.stderr


def test_interleave_ways_beyond_the_dataclass_range_fail_before_gem5_objects_are_made(tmp_path):
    r = gem5(tmp_path, "cxl_memtest.py", "--ways", "5", check=False)
    assert r.returncode != 0
    assert "cxl.bridge.interleave_ways = 5 is not allowed; allowed values: 1, 2, 3, 4, 6, 8, 12, 16" in r.stdout + r.stderr


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


@pytest.mark.parametrize("ways, granularity", [(2, 4096), (3, 256)])
def test_memtest_through_an_interleaved_window(tmp_path, ways, granularity):
    # One CFMWS window over `ways` root ports: the core's HDM decoder spreads
    # it over as many CXLType3Expanders, the data stays whole in the bridge.
    gem5(tmp_path, "cxl_memtest.py", "--testers", "4", "--max-loads", "20000", "--ways", str(ways),
         "--granularity", str(granularity), "--csv", str(tmp_path / "t.csv"))
    row = table(tmp_path / "t.csv")
    assert row["cause"] == "maximum number of loads reached"
    assert float(row["loads_checked"]) > 3 * 20000
    assert int(row["ways"]) == ways
    reads = [float(row[f"exp{i}_readReqs"]) for i in range(ways)]
    writes = [float(row[f"exp{i}_writeReqs"]) for i in range(ways)]
    flits = [float(row[f"exp{i}_s2m_flits"]) for i in range(ways)]
    print(f"\nMemTest, {ways}-way interleave at {granularity} B: {float(row['loads_checked']):.0f} loads checked, "
          f"no mismatch; reads per expander {reads}, writes {writes}")
    # Every expander saw traffic, and the per-expander stats add up to the bridge's.
    assert min(reads) > 1000 and min(writes) > 500 and min(flits) > 1000
    assert sum(reads) == float(row["reads"]) and sum(writes) == float(row["writes"])
    # MemTest's addresses spread evenly over the interleave: no expander takes most of it.
    assert max(reads) < 2 * sum(reads) / ways


def test_memtest_over_an_address_map_of_ddr_and_a_two_port_cxl_window(tmp_path):
    # The standalone engine's address map, built in gem5: gem5's DDR4 as the
    # local window at 0, a CXL window at 1 TiB over two root ports (one
    # expander each). Testers take the windows in turn: 2 each.
    gem5(tmp_path, "cxl_memtest.py", "--map", "ddr=ddr-local+cxl0=cxl-asic", "--set", "cxl0.bridge.root_ports=2",
         "--set", "cxl0.bridge.interleave_ways=2", "--testers", "4", "--max-loads", "20000",
         "--csv", str(tmp_path / "t.csv"))
    row = table(tmp_path / "t.csv")
    assert row["cause"] == "maximum number of loads reached"
    # The run ends when a DDR tester reaches its 20,000 loads; the other DDR
    # tester runs at the same pace, the two CXL ones slower (longer latency).
    assert float(row["loads_checked"]) > 2 * 20000
    reads = [float(row[f"cxl0_exp{i}_readReqs"]) for i in range(2)]
    print(f"\nMemTest over ddr + a 2-port CXL window: {float(row['loads_checked']):.0f} loads checked, no mismatch; "
          f"DDR reads {float(row['ddr_reads']):.0f}, CXL reads per expander {reads}")
    assert int(row["cxl0_ways"]) == 2 and min(reads) > 1000 and sum(reads) == float(row["cxl0_reads"])
    assert float(row["ddr_reads"]) > 1000 and float(row["ddr_writes"]) > 500


def test_an_address_map_window_gem5_cannot_back_is_refused_by_name(tmp_path):
    r = gem5(tmp_path, "cxl_memtest.py", "--map", "ddr=ddr-local+far=ddr-remote", check=False)
    assert r.returncode != 0 and "window far is a remote-numa" in r.stderr


def test_memtest_at_scale_through_four_interleaved_expanders(tmp_path):
    # Ten million MemTest operations through the CXL timing path: eight
    # testers over a 4-way, 256 B interleave. The run ends when the first
    # tester has done 1.1 M loads; the others are close behind (they share
    # the window evenly), and MemTest checks every load against its own copy.
    import time
    start = time.time()
    gem5(tmp_path, "cxl_memtest.py", "--testers", "8", "--max-loads", "1100000", "--ways", "4",
         "--granularity", "256", "--csv", str(tmp_path / "t.csv"))
    row = table(tmp_path / "t.csv")
    ops = float(row["loads_checked"]) + float(row["stores"])
    print(f"\nMemTest at scale: {ops / 1e6:.2f} M operations ({float(row['loads_checked']) / 1e6:.2f} M loads "
          f"checked, {float(row['stores']) / 1e6:.2f} M stores), {float(row['reads']) / 1e6:.2f} M timing reads "
          f"and {float(row['writes']) / 1e6:.2f} M timing writes over 4 expanders, no mismatch, "
          f"{time.time() - start:.0f} s")
    assert row["cause"] == "maximum number of loads reached"
    assert ops >= 10e6
    reads = [float(row[f"exp{i}_readReqs"]) for i in range(4)]
    assert min(reads) > 0.2 * sum(reads)  # every expander carried its share


def require_x86():
    if "X86" not in gem5_engine.isas(GEM5):
        pytest.skip(f"GEM5 = {GEM5} has no X86 ISA: --committed needs its PC for a PCI host")


def committed_memtest(tmp_path, testers, loads, committed):
    gem5(tmp_path, "cxl_memtest.py", "--testers", str(testers), "--max-loads", str(loads), "--ways", "2",
         "--window-size", str(512 << 20), "--committed", committed, "--csv", str(tmp_path / "t.csv"))
    row = table(tmp_path / "t.csv")
    assert row["cause"] == "maximum number of loads reached"
    assert float(row["unrouted_reads"]) == 0
    return row


def test_the_timing_path_routes_by_the_decoders_firmware_committed(tmp_path):
    # Two root ports, the bridge's own interleave over both; firmware commits
    # one decoder over the whole 512 MiB window targeting root port 1 alone
    # (CXL.io registers, HDM Decoder Enable set). Every request then goes to
    # expander 1, none to expander 0, and the data stays whole.
    require_x86()
    row = committed_memtest(tmp_path, 2, 5000, "1")
    assert float(row["exp0_readReqs"]) == 0 and float(row["exp0_writeReqs"]) == 0
    assert float(row["exp1_readReqs"]) == float(row["reads"]) > 1000


def test_a_two_way_committed_decoder_spreads_the_window_and_keeps_the_data(tmp_path):
    require_x86()
    row = committed_memtest(tmp_path, 4, 10000, "1,0@1024")
    reads = [float(row[f"exp{i}_readReqs"]) for i in range(2)]
    assert min(reads) > 0.25 * sum(reads) and sum(reads) == float(row["reads"])


def test_a_device_that_stops_answering_ends_with_the_watchdogs_report(tmp_path):
    # The expanders stop answering after 500 responses; MemTest's requests
    # then wait forever. The host bridge's watchdog (a 200 us window) ends the
    # run with the core's report: where the oldest request is and its age.
    import time
    start = time.time()
    r = gem5(tmp_path, "cxl_memtest.py", "--testers", "2", "--max-loads", "100000", "--ways", "2",
             "--device-stops-after", "500", "--watchdog-ns", "200000", check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-2000:]
    assert "simulation stalled at" in out and "no request completed for" in out, out[-2000:]
    # The oldest request waits in an expander's queue, named by the SimObject path.
    assert "is in system.cxl.root_ports" in out, out[-2000:]
    assert "maximum number of loads reached" not in out
    assert time.time() - start < 300


def test_the_watchdog_window_is_checked(tmp_path):
    r = gem5(tmp_path, "cxl_memtest.py", "--watchdog-ns", "-5", check=False)
    assert r.returncode != 0
    assert "watchdog_ns = -5.0 is not allowed; allowed: 0 (off) or a window in ns above 0" in r.stdout + r.stderr


@pytest.mark.parametrize("ways", [1, 2])
def test_checkpoint_restore_gives_the_same_stats(tmp_path, ways):
    ckpt = tmp_path / "cpt"
    gem5(tmp_path, "cxl_checkpoint.py", "--save", str(ckpt), "--ways", str(ways), "--csv", str(tmp_path / "save.csv"),
         out="save")
    gem5(tmp_path, "cxl_checkpoint.py", "--restore", str(ckpt), "--ways", str(ways),
         "--csv", str(tmp_path / "restore.csv"), out="restore")
    saved, restored = table(tmp_path / "save.csv"), table(tmp_path / "restore.csv")
    # The checkpoint was taken mid-run, with the bridge's and each expander's
    # timing state in it, each in its SimObject's section.
    assert int(saved["start_tick"]) > 0 and saved["start_tick"] == restored["start_tick"]
    cpt = (ckpt / "m5.cpt").read_text()
    names = ["root_ports"] if ways == 1 else [f"root_ports{i}" for i in range(ways)]
    assert "bridge.needRetry=" in cpt.split("[system.cxl]")[1].split("\n[")[0]
    for name in names:
        section = cpt.split(f"[system.cxl.{name}]")[1].split("\n[")[0]
        assert "link.m2s.openStart=" in section and "device.media.ch0.rank0.bank0.openRow=" in section
    assert float(saved["cxl.readReqs"]) > 1000 and float(saved["cxl.writeReqs"]) > 500
    per_expander = [float(saved[f"cxl.{name}.readReqs"]) for name in names]
    assert min(per_expander) > 0 and sum(per_expander) == float(saved["cxl.readReqs"])
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


@pytest.mark.parametrize("ways", [1, 2])
def test_memory_component_fills_a_simpleboard_memory_slot(tmp_path, ways):
    # stdlib SimpleBoard (no caches) with the SimCXL component as its memory:
    # the offered 8 GiB/s of reads all reach the expanders and come back.
    gem5(tmp_path, "cxl_simpleboard.py", "--ways", str(ways), "--csv", str(tmp_path / "t.csv"))
    row = table(tmp_path / "t.csv")
    reads = float(row["reads"])
    assert reads > 2000 and float(row["expander_reads"]) == reads
    assert float(row["read_gbps"]) == pytest.approx(8 * 2 ** 30 / 1e9, rel=0.02)


POOL = REPO / "examples" / "topologies" / "pool-4hosts-mld.toml"


def run_hosts(tmp_path, *args):
    gem5(tmp_path, "cxl_hosts.py", "--system", str(POOL), *args, "--csv", str(tmp_path / "h.csv"))
    with open(tmp_path / "h.csv") as f:
        return list(csv.DictReader(f))


def test_four_hosts_share_a_switch_and_an_mld_as_in_the_standalone_engine(tmp_path):
    # Every host saturates its LD; the shared downstream link and device split among them.
    rows = run_hosts(tmp_path, "--pattern", "random", "--rate", "64GiB/s", "--duration", "200us")
    assert [r["host"] for r in rows] == ["h0", "h1", "h2", "h3"]
    pool = simcxl.topology.memory_system(simcxl.topology.load(POOL))
    ref = simcxl.hosts(pool, threads=pool.host.cores, requests=60000).set_index("host")
    for r in rows:
        g5, sa = float(r["read_gbps"]), ref.loc[r["host"], "read_gbps"]
        print(f"\n{r['host']} saturated random reads through the switch: gem5 {g5:.2f} GB/s, standalone {sa:.2f} GB/s "
              f"({(g5 / sa - 1) * 100:+.1f}%)")
        assert float(r["switch_ns"]) > 0  # the path crossed the switch
        assert g5 == pytest.approx(sa, rel=0.05)


def test_one_host_alone_through_the_switch_has_the_standalone_idle_latency(tmp_path):
    rows = run_hosts(tmp_path, "--pattern", "random", "--rate", "32MiB/s", "--duration", "2ms")
    # One request at a time, as the generator's 64 B every 2 us.
    s = simcxl.topology.memory_system(simcxl.topology.load(POOL).replace(**{"h0.mshrs_per_core": 1}))
    ref = simcxl.hosts(s, runs={"h0": {"threads": 1, "inject_delay_ns": 2000}}, requests=2000).iloc[0]
    h = s.host
    host = h.llc_latency_ns + h.uncore_req_latency_ns + h.uncore_resp_latency_ns
    g5, sa = float(rows[0]["read_latency_ns"]), ref["read_latency_ns_mean"] - host
    print(f"\nh0 idle read latency through the switch: gem5 {g5:.1f} ns, standalone {sa:.1f} ns ({(g5 / sa - 1) * 100:+.1f}%)")
    assert ref["read.stage.host_uncore_ns"] == pytest.approx(host)
    assert float(rows[0]["reads"]) > 900
    assert g5 == pytest.approx(sa, rel=0.02)


def test_gem5_own_memories_as_baselines(tmp_path):
    """gem5-simple and gem5-ddr4 (benchmarks/gem5_overhead.py's baselines) serve the same generator:
    a load below every memory's capacity is served in full, and SimpleMemory's latency is its setting."""
    rows = {m: run_traffic(tmp_path / m, "--memory", m, "--pattern", "random", "--rate", "4GiB/s",
                           "--duration", "20us", "--simple-latency", "240ns")
            for m in ("gem5-simple", "gem5-ddr4")}
    # 4 GiB/s of 64 B for 20 us: 1,342 requests offered (a few still in flight at the end).
    for m, row in rows.items():
        assert 1300 <= float(row["reads"]) <= 1342, m
    assert float(rows["gem5-simple"]["read_latency_ns"]) == pytest.approx(240.0, abs=1.0)
    r = gem5(tmp_path, "cxl_traffic.py", "--memory", "gem5-simple", "--param", "link_lanes=8", check=False)
    assert r.returncode != 0 and "gem5-simple has neither" in r.stderr
    r = gem5(tmp_path, "cxl_traffic.py", "--memory", "gem5-simple", "--trace", str(tmp_path / "t"), check=False)
    assert r.returncode == 2 and "traces come from SimCXL host bridges" in r.stderr
