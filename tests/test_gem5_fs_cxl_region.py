"""Full system, Linux programming the decoders (`simcxl fs --cxl-region`): firmware maps no CXL
window (the CEDT's CFMWS only, no E820 or SRAT entry, nothing committed), the guest's
`cxl create-region` commits the host bridge's and the device's HDM decoders through the core's
registers, gem5's host bridge rebuilds its routes from them, and Linux's dax and kmem drivers bring
the region online as a NUMA node; once with one device below the bridge, once with two (a 2-way
region at the CFMWS's granularity). Needs GEM5 (X86, this repository as EXTRAS) and a guest whose
Linux creates volatile regions (6.3 or later: `simcxl guest build --install` takes 6.12 where the
package lists have it); the boot takes tens of minutes on atomic cores, so these are also slow.

Expected values come from the board's description, not from a run: the window's base and size
(board.window_layout), one way per root port, the CFMWS's granularity (the preset's interleave
clamped to CXL's 256..16384 B), the region's whole size online as one node."""

import os
import re
import time

import pytest

from simcxl import load_preset
from simcxl.config.presets import save as save_preset
from simcxl.gem5 import board, cxlcli, fs

from test_gem5 import GEM5
from test_gem5_fs_cxl import bridge_unrouted
from test_gem5_fs import NUMA, pytestmark, require_x86_and_guest  # noqa: F401  (gem5 and slow marks, skip)

WINDOW = 1 << 30


@pytest.fixture(scope="module", params=[1, 2], ids=["one-device", "two-devices"])
def created(request, tmp_path_factory):
    """(run, `cxl list` tables, gem5.log, root ports) after the guest created its region; with two
    root ports the window is cxl-asic's with two devices of half the window each."""
    require_x86_and_guest()
    ports = request.param
    out = tmp_path_factory.mktemp("fsregion")
    preset = "cxl-asic"
    if ports > 1:
        preset = str(save_preset(load_preset("cxl-asic").replace(**{"cxl.bridge.root_ports": ports,
                                                                     "cxl.bridge.interleave_ways": ports}),
                                 out.parent / f"cxl-asic-{ports}rp.json"))
    cxl = [f"{preset}:{WINDOW}"]
    t = time.time()
    r = fs.boot(GEM5, out, cpu=os.environ.get("SIMCXL_FS_CPU", "atomic"), numa=NUMA, cxl=cxl, local_size="1GiB",
                run=fs.region_run(cxl), cxl_io=True, linux_regions=True, max_seconds=6.0, timeout=3600)
    print(f"\nboot and `{fs.region_run(cxl)}`: {time.time() - t:.0f} s wall on {r.cpu} cores")
    if "create-region" in r.console and re.search(r"Linux version 6\.[0-2]\.", r.console):
        pytest.skip("the guest's Linux is older than 6.3: it cannot create volatile regions")
    docs = cxlcli.listings(r.console)
    assert docs, r.console[-4000:]
    return r, cxlcli.tables(docs[-1]), (out / "gem5.log").read_text(), ports


def expected(ports):
    base, size = board.window_layout([WINDOW], None, 1 << 30)[0]
    # CXL encodes 256 B to 16 KiB: the preset's interleave clamped by hand, not by the board's helper.
    gran = min(16384, max(256, load_preset("cxl-asic").cxl.bridge.interleave_bytes))
    return base, size, ports, gran


def test_create_region_commits_a_region_over_the_window(created):
    _, t, _, ports = created
    regions = t["regions"]
    assert len(regions) == 1, regions
    g = regions.iloc[0]
    assert g["decode_state"] == "commit"
    # cxl-cli 76 prints no region type: the endpoint decoders' mode says it is volatile.
    d = t["decoders"].set_index("decoder")
    ep = d[d["level"] == "endpoint"]
    assert list(ep["region"]) == [g["region"]] * ports and list(ep["mode"]) == ["ram"] * ports
    assert (int(g["resource"]), int(g["size"]), int(g["interleave_ways"]),
            int(g["interleave_granularity"])) == expected(ports)


def test_the_timing_routes_by_what_linux_committed(created):
    # gem5's host bridge logs each rebuild of its routes: the last is what the run's timing used,
    # and it must be the region `cxl list` reports, over the window's root ports in order.
    _, t, log, ports = created
    routes = re.findall(r"routes \[(0x[0-9a-f]+), (0x[0-9a-f]+)\) ways (\d+) granularity (\d+) ports ([\d,]+)", log)
    assert routes, log[-3000:]
    lo, hi, ways, gran, used = routes[-1]
    base, size, w, g = expected(ports)
    assert (int(lo, 16), int(hi, 16) - int(lo, 16), int(ways), int(gran)) == (base, size, w, g)
    assert sorted(map(int, used.split(","))) == list(range(ports))
    # Before the commit nothing routed.
    assert "routes nothing" in log


def test_linux_onlines_the_region_as_a_node_of_its_own(created):
    r, _, _, _ = created
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


def test_linux_gives_the_region_node_the_models_figures(created):
    """Linux's CXL drivers, not HMAT, give the region's node its access0 figures (CDAT + link + the
    bridge's generic port, the QTG _DSM's class 0): they must be (a) what the firmware-table path's
    HMAT gives the same window's node for the same description (numa.firmware_access, checked by
    hand in test_acpi_region_access) and (b) the kernel's arithmetic (numa.linux_region_access) on
    the CDAT the guest read from each device, the link the preset gives and the generic port's
    HMAT figures as Linux decodes them from the tables it was given (/sys/firmware/acpi/tables)."""
    import struct
    from simcxl.gem5.numa import Access, Port, firmware_access, linux_region_access, window_ports
    from test_acpi_region_access import linux_hmat
    r, _, _, ports = created
    node = r.topology.hmat.get(1)
    assert node, r.console[-4000:]
    model = firmware_access(NUMA)[1]
    assert node == model.sysfs(), (node, model)
    region = r.topology.region_access
    assert list(region.values()) == [model.sysfs()], region
    # (b): each endpoint's CDAT as the guest read it (DSLBIS: read latency rounded up to ns, bandwidths).
    cdats = list(cxlcli.cdat_dumps(r.console).values())
    assert len(cdats) == ports
    system = load_preset("cxl-asic").replace(**{"cxl.bridge.root_ports": ports, "cxl.bridge.interleave_ways": ports})
    linked = []
    for raw, p in zip(cdats, window_ports(system)):
        t = cxlcli.dslbis(raw).set_index("kind")["value"]  # ps and MB/s; no write latency entry
        assert "write_latency" not in t
        cdat = Access(-(-int(t["read_latency"]) // 1000), 0, int(t["read_bandwidth"]), int(t["write_bandwidth"]))
        linked.append(Port(cdat, p.gen, p.width))
    tables = cxlcli.acpi_dumps(r.console)
    # SRAT's Generic Port Affinity (type 6, 32 bytes): domain 2 (after node 0 and the CFMWS's node 1),
    # ACPI0016 with _UID 1, enabled; HMAT's figures from initiator 0 to that domain.
    srat, off, ports_found = tables["SRAT"], 36 + 12, []
    while off < len(srat):
        if srat[off] == 6:
            dom, = struct.unpack_from("<I", srat, off + 4)
            uid, flags = struct.unpack_from("<I4xI", srat, off + 16)
            ports_found.append((dom, srat[off + 8:off + 16], uid, flags))
        off += srat[off + 1]
    assert ports_found == [(2, b"ACPI0016", 1, 1)], ports_found
    gp = linux_hmat(tables["HMAT"][36:], 0, 2)
    assert linux_region_access(linked, gp) == Access(**node)
