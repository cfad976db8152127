"""CXL.io in gem5 (gem5_configs/cxl_io_probe.py): a root port and a Type-3 device as gem5 PCI functions
whose configuration space and registers are the core's, reached through ECAM from an X86 process as a
driver reaches them. Needs GEM5 = a gem5 built for X86 with this repository as EXTRAS.

The second path is the core's own function through the Python binding, built from the same preset's
parameters: every byte of the 4 KiB configuration space and the registers read through gem5 must be
the binding's; the malformed accesses and the absent function are counted by hand."""

import re

import pytest

from simcxl import _core
from simcxl.gem5 import engine as gem5_engine
from simcxl import load_preset
from simcxl.topology import core_graph

from conftest import CC, build_guest
from test_gem5 import GEM5, gem5, pytestmark  # noqa: F401  (gem5 marker and skip)

X = _core.cxlio
CAP = 4 << 30
BAR_PA = 0x3_0000_0000


def run_probe(tmp_path_factory, *extra):
    if "X86" not in gem5_engine.isas(GEM5):
        pytest.skip(f"GEM5 = {GEM5} has no X86 ISA (build build/X86/gem5.opt with EXTRAS=<repo>)")
    if not CC:
        pytest.skip("needs a C compiler to build benchmarks/guest/cxlio_probe.c")
    tmp = tmp_path_factory.mktemp("cxlio")
    binary = build_guest(tmp, "cxlio_probe")
    r = gem5(tmp, "cxl_io_probe.py", "--binary", str(binary), "--memory", "cxl-asic", "--capacity", str(CAP), *extra)
    lines = [ln.split(" ", 1) for ln in r.stdout.splitlines() if " " in ln]
    stats = (tmp / "m5out" / "stats.txt").read_text()
    return lines, stats


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    return run_probe(tmp_path_factory)


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    return run_probe(tmp_path_factory, "--firmware-commit")


def component(lines):
    return {int(off, 16): int(val, 16) for off, val in (v.split() for v in values(lines, "component"))}


def values(lines, key):
    return [v for k, v in lines if k == key]


def reference():
    graph = core_graph(load_preset("cxl-asic"))
    dev = X.Type3(CAP, system=graph, component="cxl_dev0")
    port = X.Port("root", port_number=0, system=graph, link="cxl_link0")
    return dev, port


def test_every_configuration_byte_through_ecam_is_the_cores(probe):
    lines, _ = probe
    dev, port = reference()
    cfg = {}
    for v in values(lines, "cfg"):
        bdf, off, val = v.split()
        cfg[(bdf, int(off, 16))] = int(val, 16)
    assert len(cfg) == 2 * 1024
    for bdf, fn in (("11:00.0", dev), ("10:00.0", port)):
        got = [cfg[(bdf, off)] for off in range(0, 4096, 4)]
        assert got == [fn.config_read(off, 4) for off in range(0, 4096, 4)], bdf
    # From the specification, not the binding: a CXL memory device's class code and the CXL DVSEC vendor.
    assert cfg[("11:00.0", 0x08)] >> 8 == 0x050210
    off, vendors = cfg[("11:00.0", 0x100)] >> 20, set()
    while off:
        if cfg[("11:00.0", off)] & 0xFFFF == 0x23:  # a DVSEC
            vendors.add(cfg[("11:00.0", off + 4)] & 0xFFFF)
        off = cfg[("11:00.0", off)] >> 20
    assert 0x1E98 in vendors


def test_an_absent_function_and_malformed_accesses_read_all_ones_and_are_counted(probe):
    lines, stats = probe
    assert values(lines, "absent") == ["ffffffff"]
    assert values(lines, "misaligned") == ["ffffffff"] and values(lines, "quadword") == ["ffffffffffffffff"]
    # Three malformed accesses to the device (a misaligned dword, a quadword, a misaligned write); none
    # to the root port; the absent function's read went unclaimed.
    assert re.search(r"system\.device\.badConfigAccesses\s+3\b", stats), stats
    assert re.search(r"system\.root_port\.badConfigAccesses\s+0\b", stats), stats
    assert re.search(r"system\.ecam\.unclaimed\s+1\b", stats), stats


def test_bar_placed_through_config_space_exposes_the_cores_registers_and_mailbox(probe):
    lines, _ = probe
    dev, _ = reference()
    lo, hi = (int(v, 16) for v in values(lines, "bar0")[0].split())
    assert (lo & ~0xF) | hi << 32 == BAR_PA and lo & 0x6 == 0x4  # 64-bit memory BAR
    dev.config_write(0x10, 4, BAR_PA & 0xFFFFFFFF)
    dev.config_write(0x14, 4, BAR_PA >> 32)
    for v in values(lines, "component"):
        off, val = (int(x, 16) for x in v.split())
        assert val == dev.mmio_read(off, 4), hex(off)
    for v in values(lines, "device"):
        off, val = (int(x, 16) for x in v.split())
        assert val == dev.mmio_read(off, 8), hex(off)
    rc, payload = dev.mailbox(0x4000)
    status = int(values(lines, "mbox_status")[0], 16)
    assert status >> 32 & 0xFFFF == rc == 0
    assert int(values(lines, "mbox_len")[0]) == len(payload)
    assert bytes.fromhex(values(lines, "mbox_payload")[0]) == payload
    # Identify's total capacity (bytes 0x10-0x17) in 256 MiB units: the capacity given.
    assert int.from_bytes(payload[0x10:0x18], "little") == CAP >> 28


def test_registers_firmware_committed_read_through_gem5_as_linux_reads_them(committed):
    """What cxl_port's init_hdm_decoder reads after platform firmware committed the window: the same
    bytes as the binding's device after the same commit. From the board's description, not a run: one
    locked decoder over the whole window [4 GiB, 8 GiB), one way at the bridge's interleave (the
    preset's 4 KiB), DPA skip 0 (Linux adds a nonzero skip to the DPA it reserves)."""
    lines, _ = committed
    regs = component(lines)
    dev, _ = reference()
    dev.config_write(0x10, 4, BAR_PA & 0xFFFFFFFF)
    dev.config_write(0x14, 4, BAR_PA >> 32)
    dev.firmware_commit(0, 1 << 32, 4 << 30, granularity=4096, lock=True)
    assert {off: dev.mmio_read(off, 4) for off in regs} == regs
    # The HDM decoder capability (ID 5) through the CXL capability array at 0x1000 (spec 8.2.4):
    # array size in bits 31:24 of the header, then one dword per capability, its pointer in bits 31:20.
    entries = [regs[0x1004 + 4 * i] for i in range(regs[0x1000] >> 24)]
    d0 = 0x1000 + next(e >> 20 for e in entries if e & 0xFFFF == 5) + 0x10
    assert (regs[d0 + 4] << 32 | regs[d0], regs[d0 + 0xC] << 32 | regs[d0 + 8]) == (1 << 32, 4 << 30)
    assert regs[d0 + 0x10] & 0x600 == 0x600 and regs[d0 + 0x10] & 0x100  # committed, locked
    assert regs[d0 + 0x14] == regs[d0 + 0x18] == 0  # DPA skip
