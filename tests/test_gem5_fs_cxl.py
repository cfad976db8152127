"""Full system with CXL.io (`simcxl fs --cxl-driver`): Linux's own cxl_acpi, cxl_pci, cxl_port and
cxl_mem drivers find the board's CXL host bridge (DSDT ACPI0016, CEDT CHBS), its root port and the
Type-3 memory device below it (ECAM, the core's DVSECs, component and device registers, mailbox),
and `cxl list -M -D -P -E -u` in the guest lists them. Needs GEM5 = a gem5 built for X86 with this
repository as EXTRAS and the guest (`simcxl guest build`); the boot takes about 10 minutes on atomic
cores, so these are also marked slow.

Expected values come from the board's description, not from a run: the window's base and size
(simcxl.gem5.board.window_layout), the device's capacity (the window, one device), the bus the
bridge's root port sits on (CXL_BUS), the CFMWS's one way and one target (cxl-cli 76 prints no
granularity for a root decoder)."""

import os
import re
import time

import pytest

from simcxl.gem5 import board, cxlcli, fs

from test_gem5 import GEM5
from test_gem5_fs import NUMA, pytestmark, require_x86_and_guest  # noqa: F401  (gem5 and slow marks, skip)

WINDOW = 1 << 30


def _stat_sum(stats: str, pattern: str) -> float:
    found = [float(v) for v in re.findall(pattern, stats, re.M)]
    assert found, f"no {pattern} in stats.txt"
    return sum(found)


def bridge_accesses(stats: str) -> float:
    """Requests the CXL host bridges took: timing (readReqs, writeReqs) and atomic (boots on atomic cores)."""
    return (_stat_sum(stats, r"^board\.cxl_bridges\S*\.(?:readReqs|writeReqs)\s+(\S+)")
            + _stat_sum(stats, r"^board\.cxl_bridges\S*\.atomicAccesses\s+(\S+)"))


def bridge_unrouted(stats: str) -> float:
    """Accesses no committed decoder routed: the core's counters (timing) and the atomic ones."""
    return (_stat_sum(stats, r"^board\.cxl_bridges\S*\.unrouted_(?:reads|writes)\s+(\S+)")
            + _stat_sum(stats, r"^board\.cxl_bridges\S*\.atomicUnrouted\s+(\S+)"))


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    require_x86_and_guest()
    out = tmp_path_factory.mktemp("fscxl")
    t = time.time()
    r = fs.boot(GEM5, out, cpu=os.environ.get("SIMCXL_FS_CPU", "atomic"), numa=NUMA, cxl=["cxl-asic:1GiB"],
                local_size="1GiB", run=fs.CXL_DRIVER_RUN, cxl_io=True, max_seconds=4.0)
    print(f"\nboot with CXL.io and `{fs.CXL_DRIVER_RUN}`: {time.time() - t:.0f} s wall on {r.cpu} cores")
    docs = cxlcli.listings(r.console)
    assert docs, r.console[-4000:]
    return r, cxlcli.tables(docs[-1])


def test_the_memory_device_is_a_memdev_with_the_windows_capacity(listed):
    _, t = listed
    mem = t["memdevs"]
    assert len(mem) == 1, mem
    # Volatile capacity only: the whole window is one device's RAM partition.
    assert int(mem["ram_bytes"][0]) == WINDOW and int(mem["pmem_bytes"][0]) == 0
    # The PCI device Linux bound cxl_pci to: the Type-3 function below the root port.
    assert mem["host"][0] == f"0000:{board.CXL_BUS + 1:02x}:00.0"


def test_the_root_decoder_is_the_cedt_window(listed):
    _, t = listed
    base, size = board.window_layout([WINDOW], None, 1 << 30)[0]
    root = t["decoders"][t["decoders"]["level"] == "root"]
    assert len(root) == 1, t["decoders"]
    d = root.iloc[0]
    assert (int(d["resource"]), int(d["size"])) == (base, size)
    # One way, one target (the bridge); cxl-cli 76 prints no granularity for a root decoder.
    assert (int(d["interleave_ways"]), int(d["nr_targets"])) == (1, 1)


def test_the_host_bridge_is_a_port_above_the_endpoint(listed):
    _, t = listed
    ports = t["ports"]
    # The host bridge's port (its ACPI device, pci0000:80) and the memdev's endpoint below it.
    assert any(str(h) == f"pci0000:{board.CXL_BUS:02x}" for h in ports["host"]), ports
    assert any(str(p).startswith("endpoint") for p in ports["port"]), ports


def test_firmwares_committed_decoders_are_what_linux_lists_and_what_the_timing_routes_by(listed):
    # The board commits one decoder over the whole window at the host bridge and the
    # device (as firmware does for memory it reports in SRAT); Linux's cxl_port reads
    # them back: the endpoint's decoder holds the window, one way.
    r, t = listed
    base, size = board.window_layout([WINDOW], None, 1 << 30)[0]
    ep = t["decoders"][t["decoders"]["level"] == "endpoint"]
    mapped = ep[ep["size"].astype(int) > 0]
    assert len(mapped) == 1, t["decoders"]
    d = mapped.iloc[0]
    assert (int(d["resource"]), int(d["size"]), int(d["interleave_ways"])) == (base, size, 1)
    # The bridge routed every access the guest made to its node by those decoders:
    # none fell outside them (an unrouted read would have answered all ones).
    stats = (r.outdir / "m5out" / "stats.txt").read_text()
    assert bridge_accesses(stats) > 0 and bridge_unrouted(stats) == 0, stats[:2000]


def test_the_cdat_linux_read_over_doe_is_the_models(listed):
    # cxl_port reads the endpoint's CDAT through the device's DOE mailbox (in gem5, the
    # core's function behind ECAM); the same preset's device built through the binding
    # and read by DOE Table Access in Python gives the second copy: the same bytes, so
    # the latency and bandwidths Linux holds are the model's.
    from simcxl import _core, load_preset
    from simcxl.topology import core_graph, cxlio
    r, _ = listed
    dumps = cxlcli.cdat_dumps(r.console)
    assert len(dumps) == 1, r.console[-3000:]
    twin = _core.cxlio.Type3(WINDOW, system=core_graph(load_preset("cxl-asic")), component="cxl_dev0")
    raw = next(iter(dumps.values()))
    assert raw == cxlio.read_cdat(twin)
    kinds = set(cxlcli.dslbis(raw)["kind"])
    assert {"read_latency", "read_bandwidth", "write_bandwidth"} <= kinds
