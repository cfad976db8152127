"""What Linux 6.12 computes for the node of a region it creates (simcxl fs --cxl-region), and the
tables that make it the model's: the SRAT's Generic Port Affinity per CXL host bridge (ACPI 6.5
section 5.2.16.7), HMAT localities from the CPUs' domain to each port's, and the helpers of
simcxl.gem5.numa that reproduce the kernel's arithmetic (drivers/cxl/core/cdat.c, port.c, pci.c,
drivers/acpi/numa/hmat.c) and choose the ports' figures (board.generic_ports).

Expected values: table bytes from the specification's layout, figures by hand from the presets'
parameters and the kernel's rules (ps rounded up to ns, link latency = 68-byte flit / raw link
MB/s, bandwidth = the smallest on the path, summed over root ports), and, as a second method, the
kernel's arithmetic run on the bytes the core itself builds (its CDAT, its HMAT, its config space's
Link Status) against what the firmware-table path's HMAT gives the same window."""

import math
import re
import struct

import pytest

from simcxl import _core, load_preset
from simcxl.gem5 import board
from simcxl.gem5.numa import (Access, Node, Numa, Port, device_cdat, firmware_access, generic_port,
                              link_latency_ps, linux_region_access, window_ports)
from test_acpi import decode_cdat

A = _core.acpi
GiB = 1 << 30
# tests/test_gem5_fs.py's description (what the gem5 region test boots with) and the one the
# full-system tutorial gives for cxl-asic (its write latency is its read's, as numa.measure sets).
TEST_NUMA = Numa([Node("ddr-local", 110.0, 120.0, 30.0, 28.0), Node("cxl-asic", 271.4, 280.0, 21.0, 19.5)],
                 [[10, 25], [25, 10]])
DOC_NUMA = Numa([Node("ddr-local", 103.3, 103.3, 30.2, 31.3), Node("cxl-asic", 264.5, 264.5, 23.82, 14.65)],
                [[10, 26], [26, 10]])


def two_ports():
    return load_preset("cxl-asic").replace(**{"cxl.bridge.root_ports": 2, "cxl.bridge.interleave_ways": 2})


# ------------------------------------------------------------------ tables

def test_srat_describes_each_generic_port_as_acpi0016_with_its_uid():
    body = A.srat([(0, 0)], [(0, GiB, 0, False)], generic_ports=[(3, 7), (4, 9)])
    # After the 12 reserved bytes, a 16-byte LAPIC and a 40-byte memory structure: then per port
    # type 6, length 32, reserved, handle type 0 (ACPI), domain, _HID (8 bytes), _UID (4), 4
    # reserved, flags (bit 0 enabled), 4 reserved.
    gp = body[12 + 16 + 40:]
    assert len(gp) == 64
    for k, (dom, uid) in enumerate([(3, 7), (4, 9)]):
        assert gp[32 * k:32 * k + 32] == (bytes([6, 32, 0, 0]) + struct.pack("<I", dom) + b"ACPI0016"
                                          + struct.pack("<I", uid) + bytes(4) + struct.pack("<I", 1) + bytes(4))


@pytest.mark.parametrize("cpus, memory, ports, message", [
    ([(0, 0)], [(0, GiB, 0, False)], [(0, 1)], "srat.generic_ports[0].domain = 0 is not allowed; allowed: a domain "
                                               "no CPU, memory range or other generic port has"),
    ([(0, 0)], [(0, GiB, 0, False), (GiB, GiB, 1, False)], [(1, 1)], "srat.generic_ports[0].domain = 1"),
    ([(0, 0)], [(0, GiB, 0, False)], [(2, 1), (2, 5)], "srat.generic_ports[1].domain = 2"),
    ([(0, 0)], [(0, GiB, 0, False)], [(2, 1), (3, 1)], "srat.generic_ports[1].uid = 1 is not allowed; allowed: "
                                                       "one generic port per host bridge UID"),
])
def test_a_generic_port_needs_a_domain_and_a_bridge_of_its_own(cpus, memory, ports, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        A.srat(cpus, memory, generic_ports=ports)


def hmat_localities(body):
    """{data type: (base unit, initiators, targets, entries)} of an HMAT body (ACPI 6.5 5.2.28.4),
    and the memory domains its Memory Proximity Domain Attributes structures name."""
    out, mpda, off = {}, [], 4
    while off < len(body):
        typ, _, ln = struct.unpack_from("<HHI", body, off)
        if typ == 0:
            mpda.append(struct.unpack_from("<I", body, off + 16)[0])
        elif typ == 1:
            dtype = body[off + 9]
            m, n, _, base = struct.unpack_from("<IIIQ", body, off + 12)
            ini = struct.unpack_from(f"<{m}I", body, off + 32)
            tgt = struct.unpack_from(f"<{n}I", body, off + 32 + 4 * m)
            ent = struct.unpack_from(f"<{m * n}H", body, off + 32 + 4 * m + 4 * n)
            out[dtype] = (base, ini, tgt, ent)
        off += ln
    return out, mpda


def linux_hmat(body, initiator, target):
    """hmat.c's figures for (initiator, target): entry x base, latencies (types 1, 2) from ps to
    ns rounded up (revision 2), bandwidths (4, 5) in MB/s."""
    loc, _ = hmat_localities(body)
    got = []
    for dtype in (1, 2, 4, 5):
        base, ini, tgt, ent = loc[dtype]
        v = ent[ini.index(initiator) * len(tgt) + tgt.index(target)] * base
        got.append(math.ceil(v / 1000) if dtype < 4 else v)
    return Access(*got)


def test_hmat_describes_a_generic_port_as_a_target_without_memory_attributes():
    loc = [dict(initiator=0, target=0, read_latency_ns=110.0, write_latency_ns=120.0, read_bandwidth_gbps=30.0,
                write_bandwidth_gbps=28.0),
           dict(initiator=0, target=3, read_latency_ns=145.0, write_latency_ns=277.0, read_bandwidth_gbps=21.0,
                write_bandwidth_gbps=19.5)]
    body = A.hmat([0], [0], loc)
    tables, mpda = hmat_localities(body)
    assert mpda == [0]  # the port's domain has no attached initiator: Linux takes its figures from below
    # Base units by hand: ps up to 277000 need 10; MB/s up to 30000 fit 1.
    assert tables[1] == (10, (0,), (0, 3), (11000, 14500))
    assert tables[2] == (10, (0,), (0, 3), (12000, 27700))
    assert tables[4] == (1, (0,), (0, 3), (30000, 21000))
    assert tables[5] == (1, (0,), (0, 3), (28000, 19500))
    assert linux_hmat(body, 0, 3) == Access(145, 277, 21000, 19500)


# ------------------------------------------------------------------ the kernel's arithmetic by hand

def test_cxl_asic_figures_by_hand():
    s = load_preset("cxl-asic")
    # CDAT read latency: 46.851 + 30 (controller) + 5 (front end) + 16.25 (tRCD) + 16.67 (tCL)
    # + 16 beats at 4800 MT/s (3.333) + 5 (back end) = 123.104 ns = 123104.3 ps: base unit 10,
    # entry 12310, 123100 ps -> 124 ns rounded up. Peak: 2 channels x 4 B x 4800 MT/s = 38400 MB/s.
    assert device_cdat(s.cxl.device, s.cxl.media) == Access(124, 0, 38400, 38400)
    # Gen5 x8: 32000 Mb/s x 8 / 8 = 32000 MB/s raw; a 68-byte flit takes 68e6 / 32000 = 2125 ps.
    assert window_ports(s) == [Port(Access(124, 0, 38400, 38400), 5, 8)]
    assert link_latency_ps(window_ports(s)[0]) == 2125


def test_a_flits_time_is_truncated_to_ps_then_rounded_up_to_ns():
    # cxl-fpga's Gen5 x16: 64000 MB/s raw, 68e6 / 64000 = 1062.5 -> 1062 ps (C long division); the
    # region's latency then takes 2 ns for it (add_latency rounds up). A 256-byte flit at Gen6 x16: 2000 ps.
    p = window_ports(load_preset("cxl-fpga"))[0]
    assert (p.gen, p.width, link_latency_ps(p)) == (5, 16, 1062)
    assert link_latency_ps(Port(p.cdat, 6, 16, flit256=True)) == 256 * 10**6 // (64000 * 16 // 8) == 2000
    gp = Access(100, 100, 1000, 1000)
    assert linux_region_access([p], gp).read_latency == p.cdat.read_latency + 2 + 100


def test_firmware_path_figures_by_hand():
    # Read latency ps 110000 and 271400: base 10, 271400 ps -> 272 ns; write 280 ns; MB/s base 1.
    assert firmware_access(TEST_NUMA) == [Access(110, 120, 30000, 28000), Access(272, 280, 21000, 19500)]
    # 103.3 and 264.5 ns: 264500 ps -> 265 ns; 23820 and 14650 MB/s.
    assert firmware_access(DOC_NUMA)[1] == Access(265, 265, 23820, 14650)


@pytest.mark.parametrize("numa, gp", [
    # Latency: 272 - 124 (CDAT) - 3 (2125 ps rounded up) = 145; write: 280 - 0 (no CDAT entry) - 3.
    (TEST_NUMA, Access(145, 277, 21000, 19500)),
    (DOC_NUMA, Access(265 - 124 - 3, 265 - 3, 23820, 14650)),
])
@pytest.mark.parametrize("ways", [1, 2])
def test_the_generic_port_brings_linux_to_the_models_figures(numa, gp, ways):
    port = window_ports(load_preset("cxl-asic"))[0]
    target = firmware_access(numa)[1]
    assert generic_port(target, [port] * ways) == gp
    # Linux: 124 + 3 + port latency; bandwidth min(ways x min(32000 link, 38400 CDAT), port's).
    region = linux_region_access([port] * ways, gp)
    assert region == Access(124 + 3 + gp.read_latency, 0 + 3 + gp.write_latency,
                            min(ways * 32000, gp.read_bandwidth), min(ways * 32000, gp.write_bandwidth))
    assert region == target


def test_linux_gives_nothing_without_every_generic_port_figure():
    port = window_ports(load_preset("cxl-asic"))[0]
    assert linux_region_access([port], Access(145, 0, 21000, 19500)) is None


def test_a_port_that_cannot_reach_the_models_bandwidth_is_reported():
    port = window_ports(load_preset("cxl-asic"))[0]
    with pytest.warns(UserWarning, match="not the model's"):
        generic_port(Access(272, 280, 40000, 19500), [port])  # above one Gen5 x8 link's 32000 MB/s


# ------------------------------------------------------------------ second method: the core's bytes

def linux_port_from_core(system, component, capacity):
    """A Port as Linux reads it from the core's function: its CDAT (served over DOE, decoded here:
    DSLBIS latency rounded up to ns) and the Link Status registers of its PCIe capability."""
    graph = _core_graph(system)
    dev = _core.cxlio.Type3(capacity, system=graph, component=component)
    cap = dev.config_read(0x34, 1)
    lnksta, lnksta2 = dev.config_read(cap + 0x12, 2), dev.config_read(cap + 0x32, 2)
    from simcxl.topology import cxlio
    _, entries = decode_cdat(cxlio.read_cdat(dev))
    fig = {e[3]: e[4] for e in entries if e[0] == "dslbis"}  # data type: entry x base unit
    cdat = Access(math.ceil(fig[1] / 1000) if 1 in fig else 0, math.ceil(fig[2] / 1000) if 2 in fig else 0,
                  fig.get(4, 0), fig.get(5, 0))
    return Port(cdat, lnksta & 0xF, lnksta >> 4 & 0x3F, bool(lnksta2 & 1 << 10))


def _core_graph(system):
    from simcxl.topology import core_graph
    return core_graph(system)


@pytest.mark.parametrize("numa", [TEST_NUMA, DOC_NUMA], ids=["test-numa", "doc-numa"])
@pytest.mark.parametrize("ways", [1, 2])
def test_linux_arithmetic_on_the_cores_tables_gives_the_firmware_paths_node(numa, ways):
    system = load_preset("cxl-asic") if ways == 1 else two_ports()
    ports = [linux_port_from_core(system, f"cxl_dev{j}", GiB // ways) for j in range(ways)]
    assert ports == window_ports(system)  # the board's pure-Python view is the core's
    (dom, uid, gp), = board.generic_ports(numa, [window_ports(system)])
    # After node 0 and the window's CFMWS node; UID 1: Linux matches UID 0 to node 0's memory target.
    assert (dom, uid) == (2, 1)
    # The HMAT board.acpi_tables writes with linux_regions: node 0 and the port, from initiator 0.
    figs = [numa.nodes[0], gp]
    loc = [dict(initiator=0, target=t, read_latency_ns=x.read_latency_ns, write_latency_ns=x.write_latency_ns,
                read_bandwidth_gbps=x.read_bandwidth_gbps, write_bandwidth_gbps=x.write_bandwidth_gbps)
           for t, x in zip([0, dom], figs)]
    linux_gp = linux_hmat(A.hmat([0], [0], loc), 0, dom)
    # The firmware-table path's HMAT: node 0 and the window's node 1.
    fw = [dict(initiator=0, target=t, read_latency_ns=x.read_latency_ns, write_latency_ns=x.write_latency_ns,
               read_bandwidth_gbps=x.read_bandwidth_gbps, write_bandwidth_gbps=x.write_bandwidth_gbps)
          for t, x in enumerate(numa.nodes)]
    model = linux_hmat(A.hmat([0, 1], [0, -1], fw), 0, 1)
    assert linux_region_access(ports, linux_gp) == model
