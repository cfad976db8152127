"""Full system, Linux programming the decoders (`simcxl fs --cxl-region`): firmware maps no CXL
window (the CEDT's CFMWS only, no E820 or SRAT entry, nothing committed), the guest's
`cxl create-region` commits the host bridge's and the device's HDM decoders through the core's
registers, gem5's host bridge rebuilds its routes from them, and Linux's dax and kmem drivers bring
the region online as a NUMA node. Needs GEM5 (X86, this repository as EXTRAS) and a guest whose
Linux creates volatile regions (6.3 or later: `simcxl guest build --install` takes 6.12 where the
package lists have it); the boot takes tens of minutes on atomic cores, so these are also slow.

Expected values come from the board's description, not from a run: the window's base and size
(board.window_layout), one way (one root port), the CFMWS's granularity (the preset's interleave
clamped to CXL's 256..16384 B), the region's whole size online as one node."""

import os
import re
import time

import pytest

from simcxl import load_preset
from simcxl.gem5 import board, cxlcli, fs

from test_gem5 import GEM5
from test_gem5_fs_cxl import bridge_unrouted
from test_gem5_fs import NUMA, pytestmark, require_x86_and_guest  # noqa: F401  (gem5 and slow marks, skip)

WINDOW = 1 << 30
CXL = ["cxl-asic:1GiB"]


@pytest.fixture(scope="module")
def created(tmp_path_factory):
    require_x86_and_guest()
    out = tmp_path_factory.mktemp("fsregion")
    t = time.time()
    r = fs.boot(GEM5, out, cpu=os.environ.get("SIMCXL_FS_CPU", "atomic"), numa=NUMA, cxl=CXL, local_size="1GiB",
                run=fs.region_run(CXL), cxl_io=True, linux_regions=True, max_seconds=6.0, timeout=3600)
    print(f"\nboot and `{fs.region_run(CXL)}`: {time.time() - t:.0f} s wall on {r.cpu} cores")
    if "create-region" in r.console and re.search(r"Linux version 6\.[0-2]\.", r.console):
        pytest.skip("the guest's Linux is older than 6.3: it cannot create volatile regions")
    docs = cxlcli.listings(r.console)
    assert docs, r.console[-4000:]
    return r, cxlcli.tables(docs[-1]), (out / "gem5.log").read_text()


def expected():
    base, size = board.window_layout([WINDOW], None, 1 << 30)[0]
    # CXL encodes 256 B to 16 KiB: the preset's interleave clamped by hand, not by the board's helper.
    gran = min(16384, max(256, load_preset("cxl-asic").cxl.bridge.interleave_bytes))
    return base, size, 1, gran


def test_create_region_commits_a_region_over_the_window(created):
    _, t, _ = created
    regions = t["regions"]
    assert len(regions) == 1, regions
    g = regions.iloc[0]
    assert g["decode_state"] == "commit"
    # cxl-cli 76 prints no region type: the endpoint decoder's mode says it is volatile.
    d = t["decoders"].set_index("decoder")
    ep = d[d["level"] == "endpoint"]
    assert list(ep["region"]) == [g["region"]] and list(ep["mode"]) == ["ram"]
    assert (int(g["resource"]), int(g["size"]), int(g["interleave_ways"]),
            int(g["interleave_granularity"])) == expected()


def test_the_timing_routes_by_what_linux_committed(created):
    # gem5's host bridge logs each rebuild of its routes: the last is what the run's timing used,
    # and it must be the region `cxl list` reports, at the window's own root port.
    _, t, log = created
    routes = re.findall(r"routes \[(0x[0-9a-f]+), (0x[0-9a-f]+)\) ways (\d+) granularity (\d+) ports ([\d,]+)", log)
    assert routes, log[-3000:]
    lo, hi, ways, gran, ports = routes[-1]
    base, size, w, g = expected()
    assert (int(lo, 16), int(hi, 16) - int(lo, 16), int(ways), int(gran), ports) == (base, size, w, g, "0")
    # Before the commit nothing routed.
    assert "routes nothing" in log


def test_linux_onlines_the_region_as_a_node_of_its_own(created):
    r, _, _ = created
    # `numactl -H` after create-region (the run's last): a CPU-less node holding the whole window.
    last = r.console[r.console.rfind("simcxl-run-begin"):]
    sizes = {int(n): int(mb) for n, mb in re.findall(r"^node (\d+) size: (\d+) MB", last, re.M)}
    cpus = {int(n): c.strip() for n, c in re.findall(r"^node (\d+) cpus:(.*)$", last, re.M)}
    cxl_nodes = [n for n in sizes if n != 0]
    assert len(cxl_nodes) == 1, last[-3000:]
    # MemTotal: the window, less at most its struct pages (64 B per 4 KiB page, 16 MiB a GiB) if
    # Linux put them on the new memory itself.
    assert (WINDOW - WINDOW // 64) >> 20 <= sizes[cxl_nodes[0]] <= WINDOW >> 20 and cpus[cxl_nodes[0]] == ""
    stats = (r.outdir / "m5out" / "stats.txt").read_text()
    assert bridge_unrouted(stats) == 0
