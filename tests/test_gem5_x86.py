"""The SimCXL memory component under real X86 cores in gem5: SE mode on a
SimpleBoard running the guest pointer chase, and a Linux boot on an X86Board.
They need GEM5 = a gem5 built for X86 with this repository as EXTRAS; the boot
also needs SIMCXL_X86_KERNEL = an uncompressed x86-64 vmlinux (see docs/tutorials/gem5.md)."""

import csv
import os
from pathlib import Path

import pytest

import simcxl
from simcxl.gem5 import engine as gem5_engine

from conftest import CC, build_chase
from test_gem5 import GEM5, gem5, table

pytestmark = [
    pytest.mark.gem5,
    pytest.mark.skipif(not GEM5 or not Path(GEM5).is_file(),
                       reason="needs GEM5 = a gem5 binary built for X86 with this repository as EXTRAS "
                              "(scons build/X86/gem5.opt EXTRAS=<repo>)"),
]

KERNEL = os.environ.get("SIMCXL_X86_KERNEL")
SIZES = (16 << 10, 16 << 20)  # L1-resident, and 16x the L2


@pytest.fixture(scope="module")
def x86():
    if "X86" not in gem5_engine.isas(GEM5):
        pytest.skip(f"GEM5 = {GEM5} has no X86 ISA (build build/X86/gem5.opt with EXTRAS=<repo>)")
    return GEM5


@pytest.fixture(scope="module")
def chase(tmp_path_factory, x86):
    if not CC:
        pytest.skip("needs a C compiler to build benchmarks/guest/chase.c")
    return build_chase(tmp_path_factory.mktemp("guest"))


def run_se(tmp_path, chase, memory, cpu="timing"):
    out = tmp_path / f"{memory}-{cpu}.csv"
    gem5(tmp_path, "cxl_se.py", "--binary", str(chase), "--memory", memory, "--cpu", cpu,
         "--sizes", ",".join(str(s) for s in SIZES), "--accesses", "20000", "--csv", str(out),
         out=f"{memory}-{cpu}")
    with open(out) as f:
        return {int(r["size_bytes"]): r for r in csv.DictReader(f)}


def idle_from_bridge(name):
    """Idle read latency from the host bridge on, by the standalone engine."""
    s = simcxl.load_preset(name).replace(**{"host.mshrs_per_core": 1})
    ref = simcxl.traffic(s, threads=1, requests=2000, inject_delay_ns=2000).iloc[0]
    return ref["read_latency_ns_mean"] - (s.host.llc_latency_ns + s.host.uncore_req_latency_ns
                                          + s.host.uncore_resp_latency_ns)


def test_se_chase_sees_each_expanders_latency(tmp_path, chase):
    asic, fpga = run_se(tmp_path, chase, "cxl-asic"), run_se(tmp_path, chase, "cxl-fpga")
    for rows in (asic, fpga):
        for r in rows.values():
            assert int(r["mismatches"]) == 0 and int(r["verify_lines"]) == 2 * (max(SIZES) // 64)
    small, big = SIZES
    # L1 hits never reach memory: the same on either expander.
    assert float(fpga[small]["latency_ns"]) == pytest.approx(float(asic[small]["latency_ns"]), rel=0.02)
    assert float(asic[small]["latency_ns"]) < 5
    # Past the L2 nearly every load misses (16x the L2: 15/16 of a random chase),
    # and some of the page walks between them miss too (16 MiB of 4 KiB pages
    # is 32 KiB of PTEs against an 8 KiB walker cache and a thrashed L2): the
    # expanders differ by their idle-latency gap times those memory trips per load.
    gap_guest = float(fpga[big]["latency_ns"]) - float(asic[big]["latency_ns"])
    idle_asic = idle_from_bridge("cxl-asic")
    gap_idle = idle_from_bridge("cxl-fpga") - idle_asic
    print(f"\nX86 SE chase at 16 MiB: cxl-asic {float(asic[big]['latency_ns']):.1f} ns, cxl-fpga "
          f"{float(fpga[big]['latency_ns']):.1f} ns; gap {gap_guest:.1f} ns against an idle gap of {gap_idle:.1f} ns")
    assert 0.85 * gap_idle < gap_guest < 1.15 * gap_idle
    # And the guest's latency holds at least one whole trip through the bridge.
    assert float(asic[big]["latency_ns"]) > 15 / 16 * idle_asic


def test_se_chase_cxl_is_slower_than_gem5_ddr4_by_about_the_link_and_device(tmp_path, chase):
    ddr, cxl = run_se(tmp_path, chase, "ddr4"), run_se(tmp_path, chase, "cxl-asic")
    small, big = SIZES
    assert float(cxl[small]["latency_ns"]) == pytest.approx(float(ddr[small]["latency_ns"]), rel=0.02)
    # The CXL path adds a host bridge, a link each way and a device controller
    # in front of its DRAM: over 100 ns on cxl-asic, never less than half of that.
    assert float(cxl[big]["latency_ns"]) - float(ddr[big]["latency_ns"]) > 50
    assert float(cxl[big]["memory_reads"]) > 0 and float(ddr[big]["memory_reads"]) == 0


def test_se_chase_in_atomic_mode(tmp_path, chase):
    rows = run_se(tmp_path, chase, "cxl-asic", cpu="atomic")
    assert all(int(r["mismatches"]) == 0 for r in rows.values())


@pytest.mark.skipif(not KERNEL or not Path(KERNEL).is_file(),
                    reason="needs SIMCXL_X86_KERNEL = an uncompressed x86-64 Linux kernel (vmlinux; see docs/tutorials/gem5.md)")
def test_linux_boots_on_an_x86board_with_cxl_memory(tmp_path, x86):
    # The milestone: timekeeping declared stable, half a second into the boot,
    # after memory init, ACPI and IOAPIC set-up, PCI enumeration and the RTC.
    # (Debian's 6.1 cloud kernel goes quiet at 0.60 s, before the root mount.)
    gem5(tmp_path, "cxl_x86_boot.py", "--kernel", KERNEL, "--memory", "cxl-asic", "--size", "1GiB",
         "--until", "sched_clock: Marking stable", "--max-seconds", "1", "--csv", str(tmp_path / "boot.csv"))
    row = table(tmp_path / "boot.csv")
    print(f"\nX86Board boot on cxl-asic: reached {row['reached']!r} after {float(row['sim_seconds']):.3f} simulated s "
          f"({row['wall_seconds']} s wall), {float(row['bridge_reads']):.0f} reads and "
          f"{float(row['bridge_writes']):.0f} writes through the bridge; {row['kernel_memory']}")
    assert row["reached"]
    # The kernel found the whole window as RAM: 1 GiB less the reserved first MiB and what it keeps.
    kib = int(row["kernel_memory"].split("Memory:")[1].split("/")[1].split("K")[0])
    assert 1020 * 1024 < kib <= 1024 * 1024
    assert float(row["bridge_reads"]) > 1e5 and float(row["bridge_writes"]) > 1e4


@pytest.mark.parametrize("args, message", [
    (["--cxl", "cxl-asic:1GiB@2GiB", "--local-size", "3GiB"],
     "CXL window 1 [0x80000000, 0xc0000000) overlaps local DRAM [0x0, 0xc0000000); allowed: a base at or above 4 GiB"),
    (["--cxl", "cxl-asic:1GiB", "--cxl", "cxl-fpga:1GiB@4GiB"],
     "CXL window 2 [0x100000000, 0x140000000) overlaps CXL window 1 [0x100000000, 0x140000000)"),
    (["--cxl", "cxl-asic:1GiB", "--warm", "atomic"], "--warm atomic is for restored runs timed on detailed cores"),
])
def test_the_numa_boot_config_refuses_a_bad_board_before_building_it(tmp_path, x86, args, message):
    # The config checks what `simcxl fs` checks, for users who run it directly.
    numa = tmp_path / "numa.json"
    numa.write_text('{"nodes": [{"name": "ddr-local", "read_latency_ns": 100, "write_latency_ns": 100, '
                    '"read_bandwidth_gbps": 30, "write_bandwidth_gbps": 30}, {"name": "cxl-asic", "read_latency_ns": '
                    '250, "write_latency_ns": 250, "read_bandwidth_gbps": 20, "write_bandwidth_gbps": 20}]}')
    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(57))
    r = gem5(tmp_path, "cxl_numa_boot.py", "--kernel", str(kernel), "--numa", str(numa), "--cpu", "atomic", *args,
             check=False)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert message in r.stderr.strip().splitlines()[-1], r.stderr[-2000:]
    assert "Beginning simulation" not in r.stdout
