"""Full system, a region below a CXL switch (issue 35 item 6): the board puts a switch below the host
bridge's one root port (its upstream port and two downstream ports as PCI functions whose registers
are the core's, a Type-3 device below each downstream port), Linux's CXL drivers enumerate the
switch as a port of its own, the guest creates one region over both devices, Linux commits the
decoders at the host bridge, at the switch's upstream port and at both devices, and gem5's bridge
and switch route by them. Needs GEM5 (X86, this repository as EXTRAS) and a guest whose Linux
creates volatile regions (6.3 or later); the boot takes tens of minutes on atomic cores.

Expected values come from the board's description and Linux's rules, worked by hand: the root port
sits on bus 0x80, so the switch's upstream port is the first bus below it (0x81), its downstream
ports share 0x82 and the devices sit on 0x83 and 0x84; the window (2 GiB) is the region; the
CFMWS's granularity is the topology's 256 B; Linux's cxl_port_setup_targets gives the bridge's
decoder one way (one root port) at the region's 256 B and the switch's two ways at the parent's
granularity times the parent's ways, 256 x 1 = 256 B."""

import os
import re
import time
from pathlib import Path

import pytest

from simcxl.gem5 import board, cxlcli, fs

from test_gem5 import GEM5
from test_gem5_fs_cxl import bridge_accesses, bridge_unrouted
from test_gem5_fs import NUMA, pytestmark, require_x86_and_guest  # noqa: F401  (gem5 and slow marks, skip)

TOPOLOGY = Path(__file__).resolve().parents[1] / "examples" / "topologies" / "switch-2dev.toml"
WINDOW = 2 << 30
GRANULARITY = 256
STREAM_ELEMENTS = 1 << 20  # 8 MiB of doubles on the region's node


@pytest.fixture(scope="module")
def created(tmp_path_factory):
    """(run, `cxl list` tables, gem5.log) after the guest created its region below the switch."""
    require_x86_and_guest()
    out = tmp_path_factory.mktemp("fsswitch")
    cxl = [f"{TOPOLOGY}:{WINDOW}"]
    # Then reads on the region's node whose sum the guest checks: every line came back through the
    # bridge's routes (an unrouted read would answer all ones).
    run = fs.region_run(cxl, then=f"{fs.DAX_LIST}; {fs.CXL_LIST} -R; numactl -H; "
                        + fs.guest_command("stream", 1, kernel="read", elements=STREAM_ELEMENTS))
    t = time.time()
    r = fs.boot(GEM5, out, cpu=os.environ.get("SIMCXL_FS_CPU", "atomic"), numa=NUMA, cxl=cxl, local_size="1GiB",
                run=run, bench="stream", node=1, cxl_io=True, linux_regions=True, max_seconds=6.0, timeout=3600)
    print(f"\nboot and `{run}`: {time.time() - t:.0f} s wall on {r.cpu} cores")
    if re.search(r"Linux version 6\.[0-2]\.", r.console):
        pytest.skip("the guest's Linux is older than 6.3: it cannot create volatile regions")
    docs = cxlcli.listings(r.console)
    assert docs, r.console[-4000:]
    return r, cxlcli.tables(docs[-1]), (out / "gem5.log").read_text()


def test_linux_enumerates_the_switch_as_a_port_between_bridge_and_devices(created):
    _, t, _ = created
    ports = t["ports"]
    switch = ports[ports["host"] == "0000:81:00.0"]
    assert len(switch) == 1, ports
    # The switch's port hangs below the host bridge's port (depth 1), the endpoints below the switch's.
    bridge_port = switch.iloc[0]["parent"]
    assert bridge_port in set(ports["port"]) and int(switch.iloc[0]["depth"]) == 2, ports
    endpoints = ports[ports["port"].str.startswith("endpoint")]
    assert len(endpoints) == 2 and set(endpoints["parent"]) == {switch.iloc[0]["port"]}, ports
    mem = t["memdevs"]
    assert sorted(mem["host"]) == ["0000:83:00.0", "0000:84:00.0"], mem
    assert list(mem["ram_bytes"]) == [WINDOW // 2] * 2, mem


def test_linux_commits_the_region_at_bridge_switch_and_devices(created):
    _, t, _ = created
    regions = t["regions"]
    assert len(regions) == 1, regions
    g = regions.iloc[0]
    base, size = board.window_layout([WINDOW], None, 1 << 30)[0]
    assert g["decode_state"] == "commit"
    assert (int(g["resource"]), int(g["size"]), int(g["interleave_ways"]),
            int(g["interleave_granularity"])) == (base, size, 2, GRANULARITY)
    d = t["decoders"]
    ep = d[d["level"] == "endpoint"]
    assert list(ep["region"]) == [g["region"]] * 2 and list(ep["mode"]) == ["ram"] * 2, d
    assert {(int(w), int(gr)) for w, gr in zip(ep["interleave_ways"], ep["interleave_granularity"])} == \
        {(2, GRANULARITY)}, d
    # Port decoders over the window: the bridge's (1 way; cxl-cli prints no granularity for one way)
    # and the switch's, 2 ways at 256 x 1 B, below the switch's port (its host the upstream port).
    ports = d[(d["level"] == "port") & (d["resource"] == base) & (d["size"] == size)].set_index("parent")
    hosts = t["ports"].set_index("host")["port"]
    bridge, switch = hosts["pci0000:80"], hosts["0000:81:00.0"]
    assert sorted(ports.index) == sorted([bridge, switch]), d
    assert int(ports.loc[bridge, "interleave_ways"]) == 1, d
    assert (int(ports.loc[switch, "interleave_ways"]), int(ports.loc[switch, "interleave_granularity"]),
            int(ports.loc[switch, "nr_targets"])) == (2, GRANULARITY, 2), d
    assert list(ports["region"]) == [g["region"]] * 2, d


def test_bridge_and_switch_route_by_what_linux_committed(created):
    # Each rebuild of the routes is logged; the last is what the timing used.
    _, _, log = created
    base, size = board.window_layout([WINDOW], None, 1 << 30)[0]
    bridge = re.findall(r"cxl_bridges\S*: routes \[(0x[0-9a-f]+), (0x[0-9a-f]+)\) ways (\d+) granularity (\d+) "
                        r"ports ([\d,]+)", log)
    assert bridge, log[-3000:]
    assert [(int(a, 16), int(b, 16) - int(a, 16), int(w), int(g), p) for a, b, w, g, p in bridge[-1:]] == \
        [(base, size, 1, GRANULARITY, "0")]
    # The switch sees offsets into the window (the bridge passes the address on below it).
    switch = re.findall(r"routes window offsets \[(0x[0-9a-f]+|0), (0x[0-9a-f]+)\) ways (\d+) granularity (\d+) "
                        r"downstream ports ([\d,]+)", log)
    assert switch, log[-3000:]
    lo, hi, w, g, p = switch[-1]
    assert (int(lo, 16), int(hi, 16), int(w), int(g), sorted(p.split(","))) == (0, size, 2, GRANULARITY, ["0", "1"])
    # Before the guest committed anything neither routed.
    assert "routes nothing" in log


def test_linux_onlines_the_region_below_the_switch_as_a_node(created):
    r, _, _ = created
    last = r.console[r.console.rfind("simcxl-run-begin"):]
    sizes = {int(n): int(mb) for n, mb in re.findall(r"^node (\d+) size: (\d+) MB", last, re.M)}
    cxl_nodes = [n for n in sizes if n != 0]
    assert len(cxl_nodes) == 1, last[-3000:]
    assert (WINDOW - WINDOW // 64) >> 20 <= sizes[cxl_nodes[0]] <= WINDOW >> 20
    # Linux's kmem driver has the region's dax device: system-ram on node 1, every block online.
    dax = cxlcli.dax_devices(r.console)
    assert len(dax) == 1, r.console[-3000:]
    d = dax.iloc[0]
    assert (d["mode"], int(d["target_node"]), int(d["size"])) == ("system-ram", cxl_nodes[0], WINDOW), dax
    assert d["online_memblocks"] == d["total_memblocks"] > 0, dax
    # The guest read the node back exactly, and every access it made to the window found a
    # committed decoder at the bridge.
    assert list(r.frame["check"]) == ["ok"], r.console[-3000:]
    stats = (r.outdir / "m5out" / "stats.txt").read_text()
    assert bridge_accesses(stats) >= STREAM_ELEMENTS * 8 // 64 and bridge_unrouted(stats) == 0
