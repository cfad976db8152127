"""Full system: the project's guest boots on the CXL NUMA board
(simcxl.gem5.board, gem5_configs/cxl_numa_boot.py) and Linux sees the CXL
window as a CPU-less NUMA node with the SLIT distance and HMAT figures the
board's NUMA description gives; a checkpoint at the guest's shell restores
onto timing cores for the guest's pointer chase, and gives the same result
each time. Needs GEM5 = a gem5 built for X86 with this repository as EXTRAS
and the guest built (`simcxl guest build`); the boot takes about 10 minutes of
wall time on atomic cores (SIMCXL_FS_CPU=kvm boots on KVM cores where the
host's /dev/kvm can run gem5's guest), so these are also marked slow."""

import json
import math
import os
import time
from pathlib import Path

import pytest

from simcxl.gem5 import fs, engine as gem5_engine
from simcxl.gem5.numa import Node, Numa

from test_gem5 import GEM5

pytestmark = [
    pytest.mark.gem5, pytest.mark.slow,
    pytest.mark.skipif(not GEM5 or not Path(GEM5).is_file(),
                       reason="needs GEM5 = a gem5 binary built for X86 with this repository as EXTRAS"),
]

# Figures chosen by the test, not computed: what the guest reports must be these,
# as Linux normalises them (latency: the table's picoseconds rounded up to ns;
# bandwidth: MB/s). 271.4 ns is written as 27140 units of 10 ps and read back as 272.
NUMA = Numa([Node("ddr-local", 110.0, 120.0, 30.0, 28.0), Node("cxl-asic", 271.4, 280.0, 21.0, 19.5)],
            [[10, 25], [25, 10]], "test figures")
BOARD = dict(numa=NUMA, cxl=["cxl-asic:1GiB"], local_size="1GiB")


def require_x86_and_guest():
    """Skips, saying why, unless GEM5 has the X86 ISA and the guest is built."""
    if "X86" not in gem5_engine.isas(GEM5):
        pytest.skip(f"GEM5 = {GEM5} has no X86 ISA")
    try:
        fs.guest_kernel()
    except Exception as e:  # noqa: BLE001 (the guest's absence is a skip, with its reason)
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def booted(tmp_path_factory):
    require_x86_and_guest()
    out = tmp_path_factory.mktemp("fs")
    cpu = os.environ.get("SIMCXL_FS_CPU", "atomic")
    t = time.time()
    run = fs.boot(GEM5, out / "boot", cpu=cpu, checkpoint=str(out / "ckpt"), max_seconds=3.0, **BOARD)
    print(f"\nboot to the shell's checkpoint: {time.time() - t:.0f} s wall on {run.cpu} cores"
          + (f" (asked for KVM: {run.fallback})" if run.fallback else ""))
    assert run.cause == "checkpoint", run.console[-3000:]
    return out, run


def test_linux_sees_the_cxl_window_as_a_cpu_less_node_with_the_slit_distances(booted):
    _, r = booted
    assert r.topology.cpus == {0: [0], 1: []}
    # Linux keeps part of node 0 for itself; node 1 is the whole 1 GiB window, less its memmap.
    assert 900 <= r.topology.size_mb[0] <= 1024 and 960 <= r.topology.size_mb[1] <= 1024
    assert r.topology.distances == NUMA.distances


def test_hmat_gives_the_guest_the_descriptions_latency_and_bandwidth(booted):
    _, r = booted
    got = dict(ln.split(" ", 1)[1].split("=", 1) for ln in r.console.splitlines() if ln.startswith("hmat node"))
    for node in (0, 1):
        n = NUMA.nodes[node]
        # Linux's access0 class of each node (its best initiator, node 0's CPU): ns rounded up, MB/s.
        assert got[f"node{node}/access0/initiators/read_latency"] == str(math.ceil(n.read_latency_ns))
        assert got[f"node{node}/access0/initiators/write_latency"] == str(math.ceil(n.write_latency_ns))
        assert got[f"node{node}/access0/initiators/read_bandwidth"] == str(round(n.read_bandwidth_gbps * 1000))
        assert got[f"node{node}/access0/initiators/write_bandwidth"] == str(round(n.write_bandwidth_gbps * 1000))
    assert got["node1/access0/initiators/read_latency"] == "272"


def restore_chase(out, ck, name, node, size=256 << 20):
    run = fs.guest_command("lmbench", node, sizes=[size], accesses=4000, marks=True,
                           warm_lines=fs.default_warm_lines("ddr-local"))
    r = fs.boot(GEM5, out / name, cpu="timing", warm="atomic", run=run, bench="lmbench", node=node,
                restore=str(ck), max_seconds=3.0, **BOARD)
    assert r.frame.attrs["restored_from"] == str(ck) and r.frame.attrs["warm"] == "atomic"
    assert r.results["mismatches"].dropna().tolist() == [0], r.console[-2000:]
    return r


def test_a_checkpoint_at_the_shell_restores_and_runs_lmbench_on_each_node(booted):
    out, _ = booted
    ck = out / "ckpt"
    assert (ck / "m5.cpt").is_file() and "simcxl-guest: checkpoint" in (ck / "boot-console.txt").read_text()
    lat = {node: float(restore_chase(out, ck, f"restore{node}", node).frame["latency_ns"].iloc[0]) for node in (0, 1)}
    print(f"\nrestored, warmed on atomic cores, timed on timing cores, lmbench 256 MiB: "
          f"node 0 {lat[0]:.1f} ns, node 1 {lat[1]:.1f} ns")
    # The CXL node is slower than local DDR by at least the expander's own
    # device-side time (the standalone engine's idle latency beyond the host).
    assert lat[1] > lat[0] + 100
    (out / "lat.json").write_text(json.dumps(lat))


def test_a_checkpoint_restored_twice_gives_the_same_result(booted):
    out, _ = booted
    ck = out / "ckpt"
    a, b = (restore_chase(out, ck, f"again{i}", 1, size=64 << 20) for i in (0, 1))
    assert a.frame.to_dict(orient="records") == b.frame.to_dict(orient="records")
    assert a.cause == b.cause and "m5_exit" in a.cause
    ticks = [(out / f"again{i}" / "m5out" / "stats.txt").read_text().split("simTicks", 1)[1].split()[0]
             for i in (0, 1)]
    assert ticks[0] == ticks[1]
