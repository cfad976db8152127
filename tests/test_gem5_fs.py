"""Full system: the project's guest boots on the CXL NUMA board
(simcxl.gem5_board, gem5_configs/cxl_numa_boot.py) and Linux sees the CXL
window as a CPU-less NUMA node with the SLIT distance and HMAT figures the
board's NUMA description gives. Needs GEM5 = a gem5 built for X86 with this
repository as EXTRAS and the guest built (`simcxl guest build`); the boot takes
about 10 minutes of wall time on atomic cores, so these are also marked slow."""

import json
import os
from pathlib import Path

import pytest

from simcxl import fs, gem5_engine
from simcxl.numa import Node, Numa

from test_gem5 import GEM5

pytestmark = [
    pytest.mark.gem5, pytest.mark.slow,
    pytest.mark.skipif(not GEM5 or not Path(GEM5).is_file(),
                       reason="needs GEM5 = a gem5 binary built for X86 with this repository as EXTRAS"),
]

# Figures chosen by the test, not computed: what the guest reports must be these.
NUMA = Numa([Node("ddr-local", 110.0, 120.0, 30.0, 28.0), Node("cxl-asic", 270.0, 280.0, 21.0, 19.0)],
            [[10, 25], [25, 10]], "test figures")


@pytest.fixture(scope="module")
def booted(tmp_path_factory):
    if "X86" not in gem5_engine.isas(GEM5):
        pytest.skip(f"GEM5 = {GEM5} has no X86 ISA")
    try:
        fs.guest_kernel()
    except Exception as e:  # noqa: BLE001 (the guest's absence is a skip, with its reason)
        pytest.skip(str(e))
    out = tmp_path_factory.mktemp("fs")
    cpu = os.environ.get("SIMCXL_FS_CPU", "atomic")
    run = fs.boot(GEM5, out / "boot", cpu=cpu, numa=NUMA, cxl=["cxl-asic:1GiB"], local_size="1GiB",
                  checkpoint=str(out / "ckpt"), max_seconds=3.0)
    return out, run


def test_linux_sees_the_cxl_window_as_a_cpu_less_node_with_the_slit_distances(booted):
    _, r = booted
    assert r.topology.cpus == {0: [0], 1: []}
    # Linux keeps part of node 0 for itself; node 1 is the whole 1 GiB window, less its memmap.
    assert 900 <= r.topology.size_mb[0] <= 1024 and 960 <= r.topology.size_mb[1] <= 1024
    assert r.topology.distances == NUMA.distances


@pytest.mark.xfail(strict=True, reason="on gem5 the guest registers no HMAT access class for node 1 "
                   "(no node1/access0 attributes; under QEMU it does): a defect of the board's tables, open")
def test_hmat_gives_the_guest_the_descriptions_latency_and_bandwidth(booted):
    _, r = booted
    # Linux's access0 class of node 1 (its best initiator, node 0's CPU): ns and MB/s.
    got = dict(ln.split(" ", 1)[1].split("=", 1) for ln in r.console.splitlines() if ln.startswith("hmat node1/"))
    assert got["node1/access0/initiators/read_latency"] == "270"
    assert got["node1/access0/initiators/write_latency"] == "280"
    assert got["node1/access0/initiators/read_bandwidth"] == "21000"
    assert got["node1/access0/initiators/write_bandwidth"] == "19000"


def test_a_checkpoint_at_the_shell_restores_and_runs_lmbench_on_each_node(booted):
    out, _ = booted
    ck = out / "ckpt"
    assert (ck / "m5.cpt").is_file() and "simcxl-guest: checkpoint" in (ck / "boot-console.txt").read_text()
    lat = {}
    for node in (0, 1):
        run = fs.guest_command("lmbench", node, sizes=[256 << 20], accesses=4000)
        r = fs.boot(GEM5, out / f"restore{node}", cpu="timing", numa=NUMA, cxl=["cxl-asic:1GiB"],
                    local_size="1GiB", run=run, bench="lmbench", node=node, restore=str(ck), max_seconds=3.0)
        assert r.frame.attrs["restored_from"] == str(ck)
        assert r.results["mismatches"].dropna().tolist() == [0]
        lat[node] = float(r.frame["latency_ns"].iloc[0])
    print(f"\nrestored on timing cores, lmbench 256 MiB: node 0 {lat[0]:.1f} ns, node 1 {lat[1]:.1f} ns")
    # The CXL node is slower than local DDR by at least the expander's own
    # device-side time (the standalone engine's idle latency beyond the host).
    assert lat[1] > lat[0] + 100
    (out / "lat.json").write_text(json.dumps(lat))
