"""A switch below a full-system board's root port, without gem5: where its functions sit on the PCI
buses (the numbers Linux gives unconfigured bridges, depth first), which devices the guest's region
takes, and how gem5's host bridge places each device below a switch in its region
(cxlio.position_below_switch). Expected values are worked by hand from Linux's bus numbering and
from the HDM decoders' interleave arithmetic (CXL 3.1 section 8.2.4.20.13)."""

from pathlib import Path

import pytest

from simcxl._core import cxlio
from simcxl.config.params import ParamError
from simcxl.gem5 import board, fs
from simcxl.gem5.components import load_system

TOPOLOGIES = Path(__file__).resolve().parents[1] / "examples" / "topologies"
GiB = 1 << 30


def test_a_switch_below_the_root_port_takes_the_next_buses_depth_first():
    # Root ports on 0x80. A switch's upstream port is the first bus below its root port, its
    # downstream ports share the next, each device takes one more; the next root port's bus
    # follows the last one used below the port before it.
    assert board.bus_layout(0x80, [2]) == [dict(usp=0x81, dsp=0x82, devices=[0x83, 0x84])]
    assert board.bus_layout(0x80, [0, 2, 0]) == [dict(devices=[0x81]),
                                                 dict(usp=0x82, dsp=0x83, devices=[0x84, 0x85]),
                                                 dict(devices=[0x86])]
    # Without switches: root port j's device on bus 0x81 + j, as before.
    assert board.bus_layout(0x90, [0, 0]) == [dict(devices=[0x91]), dict(devices=[0x92])]


def test_a_bridge_has_sixteen_buses():
    # 0x80 (root ports) + 1 + (2 + 13) = 16 buses: fits; one more device does not.
    assert board.bus_layout(0x80, [13])[0]["devices"][-1] == 0x8F
    with pytest.raises(ParamError, match="17 buses; allowed: at most 16"):
        board.bus_layout(0x80, [14])


def test_switch_fanout_reads_the_topology():
    assert board.switch_fanout(load_system(TOPOLOGIES / "switch-2dev.toml")) == [2]
    assert board.switch_fanout(load_system(TOPOLOGIES / "switch-1level.toml")) == [4]
    assert board.switch_fanout(load_system("cxl-asic")) == [0]
    with pytest.raises(ParamError, match=r"leaf0 \(a switch\) below switch top: .*\(one switch level\)"):
        board.switch_fanout(load_system(TOPOLOGIES / "switch-2level.toml"))


def test_the_region_takes_both_devices_below_the_switch():
    spec = f"{TOPOLOGIES / 'switch-2dev.toml'}:{2 * GiB}"
    fs.check_board([spec], "1GiB", 1)
    run = fs.region_run([spec])
    first = run.split(";")[0]
    # The topology's bridge interleaves at 256 B, the CFMWS's and so the region's granularity.
    assert first == (f"simcxl-region decoder0.0 256 {2 * GiB} $(basename /sys/bus/pci/devices/0000:83:00.0/mem*) "
                     "$(basename /sys/bus/pci/devices/0000:84:00.0/mem*)")


def _dec(ways, gran, targets=None, base=0, size=4 * GiB):
    d = dict(base=base, size=size, ways=ways, granularity=gran)
    if targets is not None:
        d["targets"] = targets
    return d


def test_positions_below_switches_follow_the_interleave_arithmetic():
    # A 4-way region at 256 B over two root ports, a switch on each: the bridge decodes 2 ways at
    # 256 B (chunk bit 0 picks the root port), each switch 2 ways at 256 x 2 = 512 B (bit 1 picks the
    # downstream port). The device below root port r, way w holds the chunks p = r + 2 w (mod 4).
    bridge, usp, dev = _dec(2, 256, [0, 1]), _dec(2, 512, [0, 1]), _dec(4, 256)
    got = {(r, w): cxlio.position_below_switch(bridge, r, usp, w, dev) for r in (0, 1) for w in (0, 1)}
    assert got == {(0, 0): 0, (1, 0): 1, (0, 1): 2, (1, 1): 3}
    # The bridge's target list names root ports by way: swapped, root port 1 takes the even chunks.
    assert cxlio.position_below_switch(_dec(2, 256, [1, 0]), 1, usp, 0, dev) == 0
    assert cxlio.position_below_switch(_dec(2, 256, [1, 0]), 0, usp, 0, dev) == 1


def test_one_root_port_and_a_two_way_switch():
    # The board's switch-2dev region: the bridge passes everything to its one root port (1 way at
    # 256 B) and the switch alternates its two downstream ports every 256 B.
    bridge, usp, dev = _dec(1, 256, [0]), _dec(2, 256, [0, 1]), _dec(2, 256)
    assert [cxlio.position_below_switch(bridge, 0, usp, w, dev) for w in (0, 1)] == [0, 1]


def test_decoders_that_send_nothing_there_place_nothing():
    bridge, usp, dev = _dec(2, 256, [0, 1]), _dec(2, 512, [0, 1]), _dec(4, 256)
    assert cxlio.position_below_switch(bridge, 2, usp, 0, dev) is None  # no root port 2 in the bridge's targets
    # A switch at the region's own granularity under a 2-way bridge: way 1 gets only chunks the
    # bridge sends to the other root port.
    assert cxlio.position_below_switch(bridge, 0, _dec(2, 256, [0, 1]), 1, dev) is None
    with pytest.raises(Exception, match="usp.ways"):
        cxlio.position_below_switch(bridge, 0, _dec(0, 256), 0, dev)


def test_gem5s_switch_routes_as_the_standalone_engines_and_the_specification():
    """The routes gem5's bridge gives a switch below it (switchRegionsBelowBridge, from the registers
    alone) against the bit fields (CXL 3.1 section 8.2.4.20.13) on the standalone engine's 4-way region
    over two switches: HPA[8] picks the root port, HPA[9] the switch port, the DPA drops both bits;
    each response's address maps back to the request's."""
    import random

    import simcxl.topology as T
    from test_switch_regions import topo

    s = T.program_region(topo([2, 2]), targets=["d0", "d2", "d1", "d3"], granularity=256, size="4g")
    dec = {k: v["committed"] for k, v in s.graph.decoders.items()}
    below = {0: [dec["d0"], dec["d1"]], 1: [dec["d2"], dec["d3"]]}
    rng = random.Random(5)
    for hpa in [0, 0x100, 0x200, 0x300, 0x400, 0x5FF] + [rng.randrange(4 * GiB) for _ in range(60)]:
        rp, sp = hpa >> 8 & 1, hpa >> 9 & 1
        dpa = (hpa >> 10) << 8 | hpa & 0xFF
        assert cxlio.route_below_switch(dec["hb"], rp, dec[f"s{rp}"], below[rp], hpa) == (sp, dpa, hpa)
    # Past the region no decoder covers the address.
    assert cxlio.route_below_switch(dec["hb"], 0, dec["s0"], below[0], 4 * GiB) is None


def test_a_switch_with_cxl_io_needs_linux_to_create_the_region():
    spec = f"{TOPOLOGIES / 'switch-2dev.toml'}:{2 * GiB}"
    with pytest.raises(ParamError, match=r"has a switch: .* allowed: --cxl-region"):
        fs.check_board([spec], "1GiB", 1, cxl_io=True)
    fs.check_board([spec], "1GiB", 1, cxl_io=True, linux_regions=True)
    fs.check_board([spec], "1GiB", 1)  # no CXL.io: accepted, firmware maps the window
