"""Routing by committed HDM decoders (simcxl.topology.regions, ext/cxlcore/system/decoders.cpp).

Regions are created through the register model as Linux's cxl_region commits
them; the expected device and DPA of every address come from the
specification's interleave arithmetic written here bit by bit (CXL 3.1
section 8.2.4.20.13 and the HPA-to-DPA translation of Linux's
cxl_dpa_to_hpa/cxl_calc_interleave_pos): for 2^k ways the way is
HPA[IG+8+k-1 : IG+8] and DPA = HPA[51 : IG+8+k] << (IG+8) | HPA[IG+7:0]; for
3 x 2^k ways the way is HPA[IG+8+k-1 : IG+8] + 2^k x (HPA[51 : IG+8+k] mod 3)
and DPA = (HPA[51 : IG+8+k] / 3) << (IG+8) | HPA[IG+7:0], offsets taken from
the decoder's base and the DPA from the device decoder's start (its skip and
the decoders before it)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import simcxl
import simcxl.topology as T
from simcxl import _core
from simcxl.topology import cxlio
from simcxl.topology.convert import core_graph

GiB, MiB = 1 << 30, 1 << 20
ROUTE = _core.cxlio.route


def topo(n=2, window=None, lanes=None, req_queue=None, switch=False):
    """A host, its DRAM, and a host bridge with n cxl-asic expanders (d0, d1, ...) on root ports 0..n-1."""
    comps = {"host": {"type": "host", "from": "cxl-asic"}, "local_dram": {"type": "dram", "from": "cxl-asic"},
             "hb": {"type": "host_bridge", "from": "cxl-asic"}}
    if req_queue:
        comps["hb"]["req_queue"] = req_queue
    conns = [{"from": "host.local", "to": "local_dram.up"}, {"from": "host.mem", "to": "hb.up", **(window or {})}]
    for i in range(n):
        comps[f"l{i}"] = {"type": "link", "from": "cxl-asic", **({"lanes": lanes} if lanes else {})}
        comps[f"d{i}"] = {"type": "type3", "from": "cxl-asic"}
        conns += [{"from": f"hb.root_port[{i}]", "to": f"l{i}.up"}, {"from": f"l{i}.down", "to": f"d{i}.up"}]
    if switch:  # d{n-1} moves below a switch on the last root port
        last = n - 1
        comps["sw"] = {"type": "switch", "from": "defaults"}
        comps["sl"] = {"type": "link", "from": "cxl-asic"}
        conns = [c for c in conns if c["to"] != f"d{last}.up"]
        conns += [{"from": f"l{last}.down", "to": "sw.up[0]"}, {"from": "sw.dsp[0]", "to": "sl.up"},
                  {"from": "sl.down", "to": f"d{last}.up"}]
    return T.load({"name": "decoders", "components": comps, "connections": conns})


def spec_route(hpa, base, ways, gran, skip=0):
    """(way, DPA) of an address, from the specification's bit fields."""
    off = hpa - base
    ig8 = gran.bit_length() - 1          # IG + 8
    k = (ways & -ways).bit_length() - 1  # ways = 2^k or 3 x 2^k
    low = off >> ig8 & ((1 << k) - 1)
    high = off >> (ig8 + k)
    if ways % 3:
        way, row = low, high
    else:
        way, row = low + (1 << k) * (high % 3), high // 3
    return way, skip + (row << ig8 | off & (gran - 1))


def trace_file(tmp_path, lines, name="t.trace"):
    p = tmp_path / name
    p.write_text("".join(f"0 {op} {hpa:#x}\n" for op, hpa in lines))
    return p


# --- where each address goes ---------------------------------------------------------------------

def test_two_way_by_hand():
    """2 ways at 1 KiB from 0: chunk c of 1 KiB goes to device c mod 2 at DPA (c div 2) KiB + offset."""
    g = core_graph(T.program_region(topo(2), granularity=1024, size="2g"))
    assert ROUTE(g, 0x0) == {"root_port": 0, "device": "d0", "dpa": 0x0}
    assert ROUTE(g, 0x3FF) == {"root_port": 0, "device": "d0", "dpa": 0x3FF}
    assert ROUTE(g, 0x400) == {"root_port": 1, "device": "d1", "dpa": 0x0}
    assert ROUTE(g, 0x805) == {"root_port": 0, "device": "d0", "dpa": 0x405}
    assert ROUTE(g, 0xC40) == {"root_port": 1, "device": "d1", "dpa": 0x440}
    assert ROUTE(g, 2 * GiB - 1) == {"root_port": 1, "device": "d1", "dpa": GiB - 1}
    assert ROUTE(g, 2 * GiB) is None  # past the region: no committed decoder


def test_three_way_by_hand():
    """3 ways at 256 B: chunk c goes to device c mod 3 at row c div 3 (CXL's modulo-3 interleave)."""
    g = core_graph(T.program_region(topo(3), granularity=256, size="768m"))
    got = [(ROUTE(g, c * 256 + 8)["device"], ROUTE(g, c * 256 + 8)["dpa"]) for c in range(7)]
    assert got == [("d0", 8), ("d1", 8), ("d2", 8), ("d0", 264), ("d1", 264), ("d2", 264), ("d0", 520)]


@pytest.mark.parametrize("ways", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("gran", [256, 1024, 4096, 16384])
def test_routes_follow_the_specification(ways, gran):
    base = 1 << 40
    size = ways * 512 * MiB
    t = topo(ways, window={"base": base, "size": 96 * GiB})  # a multiple of 3 and 4 ways x 4 KiB
    order = [f"d{i}" for i in reversed(range(ways))]  # a target list that is not port order
    s = T.program_region(t, targets=order, granularity=gran, size=size, base=base)
    g = core_graph(s)
    rng = random.Random(ways * 100003 + gran)
    addrs = [base + x for x in range(0, 8 * ways * gran, gran // 4)] + [base + rng.randrange(size) for _ in range(300)]
    addrs += [base + size - 1]
    for hpa in addrs:
        way, dpa = spec_route(hpa, base, ways, gran)
        r = ROUTE(g, hpa)
        assert (r["device"], r["dpa"]) == (order[way], dpa), hex(hpa)
        assert r["root_port"] == int(order[way][1:])
    assert ROUTE(g, base + size) is None and ROUTE(g, base - 64) is None


def test_skip_and_a_second_region():
    """The device decoder's DPA starts after the previous decoder's range and its own skip."""
    t = topo(2, window={"base": 1 << 40, "size": 16 * GiB})
    s = T.program_region(t, granularity=4096, size="1g")                       # decoder 0 of each device
    s = T.program_region(s, granularity=256, size="2g", skip={"d1": 512 * MiB})  # decoder 1, after it
    g = core_graph(s)
    assert [d["base"] for d in g["decoders"]["hb"]["committed"]] == [1 << 40, (1 << 40) + GiB]
    b2 = (1 << 40) + GiB
    for hpa in [b2, b2 + 256, b2 + 0x1234, b2 + 2 * GiB - 64]:
        way, row = spec_route(hpa, b2, 2, 256)
        start = 512 * MiB + (512 * MiB if way == 1 else 0)  # decoder 0's half-GiB share, then d1's skip
        assert ROUTE(g, hpa) == {"root_port": way, "device": f"d{way}", "dpa": start + row}
    # The first region keeps its own: 4 KiB chunks from DPA 0.
    assert ROUTE(g, (1 << 40) + 4096 + 5) == {"root_port": 1, "device": "d1", "dpa": 5}


def test_topology_file_regions(tmp_path):
    """[[regions]] in a topology file program the same decoders as program_region."""
    t = topo(2)
    d = t.to_dict()
    d["regions"] = [{"host_bridge": "hb", "targets": ["d1", "d0"], "granularity": "2k", "size": "1g"}]
    f = tmp_path / "r.toml"
    f.write_text(T.to_toml(T.load(d)))
    loaded = T.load(str(f))
    assert loaded.regions == [{"host_bridge": "hb", "targets": ["d1", "d0"], "granularity": "2k", "size": "1g"}]
    g = core_graph(T.memory_system(loaded))
    assert g["decoders"] == core_graph(T.program_region(t, targets=["d1", "d0"], granularity=2048,
                                                        size=GiB))["decoders"]
    assert ROUTE(g, 2048) == {"root_port": 0, "device": "d0", "dpa": 0}
    assert ROUTE(g, 0) == {"root_port": 1, "device": "d1", "dpa": 0}


# --- runs ------------------------------------------------------------------------------------------

def _messages(df, n):
    return [int(df.iloc[0][f"l{i}.m2s.messages"]) for i in range(n)]


@pytest.mark.parametrize("ways,gran,lines,expect", [
    # 100 KiB = 100 chunks of 1 KiB over 3 ways: chunks 0, 3, ... 99 (34) on d0, 33 on d1 and d2; 16 lines each.
    (3, 1024, 1600, [34 * 16, 33 * 16, 33 * 16]),
    # 1000 lines at 256 B (4 lines a chunk) over 4 ways: 250 chunks, 63 63 62 62.
    (4, 256, 1000, [63 * 4, 63 * 4, 62 * 4, 62 * 4]),
    # 2 ways at 16 KiB (256 lines a chunk): 1000 lines = chunks 0-3 (d0 d1 d0 d1) and 232 lines of chunk 3.
    (2, 16384, 1000, [512, 488]),
])
def test_sequential_sweep_counts(tmp_path, ways, gran, lines, expect):
    s = T.program_region(topo(ways), granularity=gran, size=ways * 256 * MiB)
    f = trace_file(tmp_path, [("R" if i % 3 else "W", 64 * i) for i in range(lines)])
    df = simcxl.trace(s, f)
    assert _messages(df, ways) == expect
    assert df.iloc[0]["hb.unrouted_reads"] == df.iloc[0]["hb.unrouted_writes"] == 0


@pytest.mark.parametrize("poison", [False, True])
def test_uncommitted_accesses_are_answered_and_counted(tmp_path, poison):
    """A 1 GiB region at the window's start: 50 accesses inside reach the devices, 30 reads and 20 writes
    past it are answered by the bridge, counted, and reach no link or media."""
    s = T.program_region(topo(2, window={"base": 1 << 40, "size": 8 * GiB}), granularity=256, size="1g",
                         poison=poison)
    inside = [("R", (1 << 40) + 64 * i) for i in range(50)]
    outside = [("R", (1 << 40) + GiB + 4096 * i) for i in range(30)] + \
              [("W", (1 << 40) + 5 * GiB + 4096 * i) for i in range(20)]
    df = simcxl.trace(s, trace_file(tmp_path, inside + outside))
    r = df.iloc[0]
    assert (r["hb.unrouted_reads"], r["hb.unrouted_writes"]) == (30, 20)
    assert r["hb.poisoned_reads"] == (30 if poison else 0)
    assert r["l0.m2s.messages"] + r["l1.m2s.messages"] == 50
    assert r["host.window.hb.requests"] == 100
    only_out = simcxl.trace(s, trace_file(tmp_path, outside, "out.trace")).iloc[0]
    assert only_out["hb.unrouted_reads"] == 30
    for i in (0, 1):
        assert only_out[f"l{i}.m2s.messages"] == 0
        assert only_out[f"d{i}.media.read_gbps"] == only_out[f"d{i}.media.write_gbps"] == 0
    # Answered after the bridge's own pipeline both ways (15 + 15 ns in cxl-asic), nothing below it.
    assert only_out["read.stage.link_down_ns"] == only_out["read.stage.media_service_ns"] == 0


def test_committed_routing_equals_the_bridge_own_interleave():
    """A region decoded as the bridge's own parameters would decode it gives bit-identical results."""
    t = topo(2)
    ib = t.components["hb"].values["interleave_bytes"]
    a = simcxl.traffic(T.program_region(t, granularity=ib, size="4g"), threads=16, footprint_bytes=GiB,
                       requests=40000)
    b = simcxl.traffic(T.memory_system(t), threads=16, footprint_bytes=GiB, requests=40000)
    cols = [c for c in b.columns if c.startswith(("read", "l0.", "l1.", "d0.", "d1."))]
    assert a.iloc[0][cols].tolist() == b.iloc[0][cols].tolist()


def test_two_way_region_doubles_a_link_bound_device():
    """x4 links make each device's S2M link the bottleneck. Its data ceiling, from the flit format: Gen5
    x4 = 32 GT/s x 4 x 128/130 / 8 = 15.754 GB/s raw; each 64 B line needs a DRS header half-slot (8 B)
    and 64 B of data, 72 B of the 64 B of slots a 68 B flit carries: 64 / (72 x 68 / 64) of raw. A 1-way
    region reaches one ceiling, a 2-way region over two identical devices two."""
    raw = 32e9 * 4 * 128 / 130 / 8 / 1e9
    ceiling = raw * 64 / (72 * 68 / 64)
    t = topo(2, lanes=4, req_queue=512)  # a tracker deep enough for both links
    one = simcxl.traffic(T.program_region(t, targets=["d0"], granularity=4096, size="4g"), threads=32,
                         pattern="sequential", footprint_bytes=GiB, requests=60000).iloc[0]
    two = simcxl.traffic(T.program_region(t, granularity=4096, size="4g"), threads=32,
                         pattern="sequential", footprint_bytes=GiB, requests=60000).iloc[0]
    assert one.read_gbps == pytest.approx(ceiling, rel=0.01)
    assert one["l1.m2s.messages"] == 0
    assert two.read_gbps == pytest.approx(2 * ceiling, rel=0.01)
    assert two["l0.s2m.data_gbps"] == pytest.approx(two["l1.s2m.data_gbps"], rel=0.01)


# --- inconsistent or refused decoders ----------------------------------------------------------------

def _platform(t, dev_decoders, hb_decoders):
    p = T.Platform(t)
    for name, decs in [*dev_decoders.items(), ("hb", hb_decoders)]:
        for i, d in enumerate(decs):
            cxlio.commit_decoder(p.function(name), i, **d)
        cxlio.enable_hdm(p.function(name))
    return p.committed_topology()


def _run(t):
    return simcxl.traffic(T.memory_system(t), threads=2, footprint_bytes=MiB, requests=200)


def test_mismatched_granularity_is_a_config_error():
    t = _platform(topo(2), {"d0": [dict(base=0, size=GiB, ways=2, granularity=1024)],
                            "d1": [dict(base=0, size=GiB, ways=2, granularity=256)]},
                  [dict(base=0, size=GiB, ways=2, granularity=1024, targets=[0, 1])])
    with pytest.raises(_core.ConfigError, match=r"d1 decoder 0 interleaves 2 ways at 256 B, hb decoder 0 2 ways "
                                                r"at 1024 B; allowed: the same ways and granularity"):
        _run(t)


def test_mismatched_ways_is_a_config_error():
    t = _platform(topo(2), {"d0": [dict(base=0, size=GiB, ways=1)], "d1": [dict(base=0, size=GiB, ways=2)]},
                  [dict(base=0, size=GiB, ways=2, targets=[0, 1])])
    with pytest.raises(_core.ConfigError, match=r"d0 decoder 0 interleaves 1 ways at 256 B, hb decoder 0 2 ways"):
        _run(t)


def test_target_naming_a_missing_port_is_a_config_error():
    t = _platform(topo(2), {"d0": [dict(base=0, size=GiB, ways=2)], "d1": [dict(base=0, size=GiB, ways=2)]},
                  [dict(base=0, size=GiB, ways=2, targets=[0, 3])])
    with pytest.raises(_core.ConfigError, match=r"hb decoder 0: target 1 names root port 3, which hb does not "
                                                r"have \(it has 2\)"):
        _run(t)


def test_device_without_a_decoder_is_a_config_error():
    t = _platform(topo(2), {"d0": [dict(base=0, size=GiB, ways=2)]},
                  [dict(base=0, size=GiB, ways=2, targets=[0, 1])])
    with pytest.raises(_core.ConfigError, match=r"hb decoder 0 routes \[0x0, 0x40000000\) to root port 1, but d1 "
                                                r"has no committed decoder for that range"):
        _run(t)


def test_device_decoder_no_bridge_reaches_is_a_config_error():
    t = _platform(topo(2), {"d0": [dict(base=0, size=GiB, ways=1), dict(base=GiB, size=GiB, ways=1)]},
                  [dict(base=0, size=GiB, ways=1, targets=[0])])
    with pytest.raises(_core.ConfigError, match=r"d0 decoder 1 maps \[0x40000000, 0x80000000\), which no committed "
                                                r"decoder of host bridge hb routes to it"):
        _run(t)


def test_switch_without_decoders_below_a_bridge_decoder_is_a_config_error():
    """A bridge decoder naming the root port of a switch whose upstream port committed nothing for it."""
    t = topo(2, switch=True)
    p = T.Platform(t)
    assert "d1" in p.devices and "sw" in p.switches  # devices below switches have registers too
    cxlio.commit_decoder(p.function("d0"), 0, 0, GiB, 2)
    cxlio.enable_hdm(p.function("d0"))
    cxlio.commit_decoder(p.function("hb"), 0, 0, GiB, 2, targets=[0, 1])
    cxlio.enable_hdm(p.function("hb"))
    with pytest.raises(_core.ConfigError, match=r"hb decoder 0 routes \[0x0, 0x40000000\) to root port 1, but sw "
                                                r"has no committed decoder for that range"):
        _run(p.committed_topology())


def test_bridge_decoder_outside_the_window_is_a_config_error():
    t = _platform(topo(1, window={"base": 1 << 40, "size": 4 * GiB}), {"d0": [dict(base=0, size=GiB)]},
                  [dict(base=0, size=GiB, targets=[0])])
    with pytest.raises(_core.ConfigError, match=r"hb decoder 0: range \[0x0, 0x40000000\) lies outside the host's "
                                                r"window onto hb, \[0x10000000000, 0x10100000000\)"):
        _run(t)


@pytest.mark.parametrize("region,message", [
    (dict(size=GiB + 256 * MiB), r"regions\[0\]: d0 refused to commit decoder 0: size 0x50000000 is not a "
                                 r"multiple of 2 x 256 MiB"),
    (dict(size=GiB, granularity=512 + 256), r"regions\[0\].granularity = 768 is not allowed"),
    (dict(size=GiB, targets=["d0", "d0"]), r"2 ways is not allowed"),
    (dict(size=GiB, targets=["dx"]), r"'dx' is not a Type-3 device on a root port of hb"),
    (dict(size=GiB, colour=1), r"regions\[0\].colour is not a region key"),
    (dict(), r"regions\[0\].size is missing"),
    (dict(size=GiB, base=GiB + 256 * MiB, window=True), r"regions\[0\]: \[0x50000000, 0x90000000\) lies outside the "
                                                        r"host's window onto hb, \[0x0, 0x80000000\)"),
])
def test_refused_regions_name_the_reason(region, message):
    t = topo(2, window={"base": 0, "size": 2 * GiB}) if region.pop("window", False) else topo(2)
    with pytest.raises(T.TopologyError, match=message):
        T.program_region(t, **region)


def test_overlapping_region_is_refused_by_the_registers():
    s = T.program_region(topo(2), size="1g")
    with pytest.raises(T.TopologyError, match=r"d0 refused to commit decoder 1: range overlaps committed decoder 0"):
        T.program_region(s, size="1g", base=512 * MiB)


def test_topology_show_lists_the_committed_decoders():
    """The example's 4 GiB region from 1 TiB, 2 ways: each device maps 2 GiB of DPA from 0."""
    from simcxl.topology import show
    text = show.text(T.load(str(Path(__file__).resolve().parents[1] / "examples/topologies/region-2way.toml")))
    assert ("  cxl decoder 0: [0x10000000000, 0x10100000000) 2 ways x 1024 B -> root ports 0, 1\n"
            "  exp0 decoder 0: [0x10000000000, 0x10100000000) 2 ways x 1024 B -> DPA [0x0, 0x80000000)\n"
            "  exp1 decoder 0: [0x10000000000, 0x10100000000) 2 ways x 1024 B -> DPA [0x0, 0x80000000)") in text


@pytest.mark.parametrize("decoders,message", [
    ({"nope": {"committed": []}}, r"decoders.nope: no component named nope"),
    ({"l0": {"committed": []}}, r"decoders.l0: a link has no HDM decoders the engine routes by"),
    ({"hb": {"committed": [{"size": GiB, "ways": 1, "granularity": 256}]}}, r"committed\[0\].base is missing"),
    ({"hb": {"committed": [dict(base=0, size=GiB, ways=5, granularity=256, targets=[0] * 5)]}},
     r"hb decoder 0: 5 ways is not allowed"),
    ({"hb": {"committed": [dict(base=0, size=GiB, ways=1, granularity=300, targets=[0])]}},
     r"granularity 300 B is not allowed"),
    ({"hb": {"committed": [dict(base=0, size=GiB, ways=1, granularity=256, targets=["x"])]}},
     r"targets = 'x' is not a number"),
    ({"hb": {"committed": [dict(base=0, size=GiB, ways=2, granularity=256, targets=[0])]}},
     r"hb decoder 0: 1 targets for 2 ways"),
    ({"hb": {"committed": [dict(base=0, size=GiB, ways=2, granularity=256, targets=[1, 1])]}},
     r"root port 1 is named twice"),
    ({"hb": {"colour": 1}}, r"decoders.hb.colour is not a key"),
    ({"d0": {"committed": [dict(base=0, size=GiB, ways=1, granularity=256)]}},
     r"decoders.d0: committed decoders, but host bridge hb has none"),
])
def test_malformed_decoders_are_config_errors(decoders, message):
    """The core's own reading of a graph's decoders, however they were written."""
    g = {k: v for k, v in topo(2).to_dict().items() if k != "regions"}
    g["decoders"] = decoders
    with pytest.raises(_core.ConfigError, match=message):
        ROUTE(g, 0, "hb")


def test_a_bridge_with_nothing_committed_answers_everything_itself(tmp_path):
    """HDM Decoder Enable set but no decoder committed: no address reaches a device."""
    p = T.Platform(topo(2))
    cxlio.enable_hdm(p.function("hb"), poison=True)
    s = T.memory_system(p.committed_topology())
    r = simcxl.trace(s, trace_file(tmp_path, [("R", 64 * i) for i in range(10)] + [("W", 4096)])).iloc[0]
    assert (r["hb.unrouted_reads"], r["hb.unrouted_writes"], r["hb.poisoned_reads"]) == \
        (10, 1, 10)
    assert r["l0.m2s.messages"] == r["l1.m2s.messages"] == 0


# Platform firmware commits decoders itself (the gem5 board does, for memory it
# reports in SRAT): the same register writes as Linux's cxl_decoder_commit, so
# the registers must end the same as when the driver's sequence (cxlio.commit_decoder,
# written after drivers/cxl/core/hdm.c) programs a twin.
@pytest.mark.parametrize("ways,gran,skip", [(1, 256, 0), (2, 1024, 1 << 28), (3, 4096, 0), (8, 16384, 0)])
def test_firmware_commit_leaves_the_registers_as_the_drivers_sequence_does(ways, gran, skip):
    base, size = 1 << 40, ways * (1 << 30)
    for make, kw in ((lambda: _core.cxlio.Type3(64 << 30), {"skip": skip}),
                     (lambda: _core.cxlio.HostBridgeRegisters(hdm_decoders=2, targets=8),
                      {"targets": list(range(7, 7 - ways, -1))})):
        fw, drv = make(), make()
        fw.firmware_commit(0, base, size, ways=ways, granularity=gran, **kw)
        cxlio.commit_decoder(drv, 0, base, size, ways=ways, granularity=gran, **kw)
        cxlio.enable_hdm(drv)
        assert fw.committed_decoders() == drv.committed_decoders()
        assert fw.hdm_enabled and drv.hdm_enabled
        hdm = cxlio.hdm_offset(fw)
        assert [fw.mmio_read(hdm + o, 4) for o in range(0, 0x60, 4)] == \
            [drv.mmio_read(hdm + o, 4) for o in range(0, 0x60, 4)]
    d = fw.committed_decoders()[0]
    assert (d["base"], d["size"], d["ways"], d["granularity"]) == (base, size, ways, gran)


def test_a_bridge_routes_without_hdm_enable_as_linux_leaves_it():
    """Linux enables HDM decoding at endpoints only (drivers/cxl/core/pci.c, cxl_hdm_decode_init): a
    bridge's committed decoder routes with its HDM Decoder Enable clear; a device's does not."""
    p = T.Platform(topo(1))
    cxlio.commit_decoder(p.function("d0"), 0, 0, GiB)
    cxlio.commit_decoder(p.function("hb"), 0, 0, GiB, targets=[0])
    assert p.function("hb").hdm_enabled and not p.function("d0").hdm_enabled
    with pytest.raises(_core.ConfigError, match=r"d0 has no committed decoder for that range"):
        _run(p.committed_topology())
    cxlio.enable_hdm(p.function("d0"))
    g = core_graph(T.memory_system(p.committed_topology()))
    assert ROUTE(g, 0x1000, "hb") == {"root_port": 0, "device": "d0", "dpa": 0x1000}


def test_firmware_commit_refusals_name_the_reason():
    dev = _core.cxlio.Type3(1 << 30)
    with pytest.raises(ValueError, match="exceeds the capacity"):
        dev.firmware_commit(0, 1 << 40, 2 << 30)  # 2 GiB on a 1 GiB device
    with pytest.raises(ValueError, match="decoder 0 is not committed"):
        dev.firmware_commit(1, 1 << 40, 1 << 28)
    with pytest.raises(ValueError, match="granularity = 100 is out of range; allowed: 256 to 16384"):
        dev.firmware_commit(0, 1 << 40, 1 << 28, granularity=100)
    with pytest.raises(ValueError, match="granularity 768 B cannot be encoded; allowed: 256 B to 16 KiB, a power of two"):
        dev.firmware_commit(0, 1 << 40, 1 << 28, granularity=768)
    with pytest.raises(ValueError, match="5 ways cannot be encoded; allowed: 1, 2, 3, 4, 6, 8, 12 or 16"):
        dev.firmware_commit(0, 1 << 40, 5 << 28, ways=5)
    assert dev.committed_decoders() == [] and not dev.hdm_enabled
