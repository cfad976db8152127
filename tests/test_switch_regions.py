"""Regions across devices below switches: each port's HDM decoder committed by Linux's rules
(drivers/cxl/core/region.c, cxl_port_setup_targets: a port's ways are the downstream ports the region
reaches through it, its granularity its parent's granularity times the parent's ways, the host bridge's
parent being a one-bridge window at the region's granularity), and the switch routing by the decoders
committed at its upstream port. Expected routes come from the specification's bit fields (CXL 3.1
section 8.2.4.20.13): a 2^k-way decoder at granularity 2^(IG+8) picks its target by
HPA[IG+8+k-1 : IG+8]; the device's DPA is the offset with its own k interleave bits removed."""

from __future__ import annotations

import random

import pytest

import simcxl
import simcxl.topology as T
from simcxl import _core
from simcxl.topology import cxlio
from simcxl.topology.convert import core_graph

GiB, MiB = 1 << 30, 1 << 20
ROUTE = _core.cxlio.route


def topo(groups, up_lanes=None, dev_lanes=None, req_queue=None):
    """A host bridge hb; root port i leads over link u{i} to switch s{i} with groups[i] cxl-asic devices
    below it, numbered d0, d1, ... across the switches (links l0, l1, ...)."""
    comps = {"host": {"type": "host", "from": "cxl-asic"}, "local_dram": {"type": "dram", "from": "cxl-asic"},
             "hb": {"type": "host_bridge", "from": "cxl-asic", **({"req_queue": req_queue} if req_queue else {})}}
    conns = [{"from": "host.local", "to": "local_dram.up"}, {"from": "host.mem", "to": "hb.up"}]
    n = 0
    for i, count in enumerate(groups):
        comps[f"u{i}"] = {"type": "link", "from": "cxl-asic", **({"lanes": up_lanes} if up_lanes else {})}
        comps[f"s{i}"] = {"type": "switch", "from": "defaults"}
        conns += [{"from": f"hb.root_port[{i}]", "to": f"u{i}.up"}, {"from": f"u{i}.down", "to": f"s{i}.up"}]
        for j in range(count):
            comps[f"l{n}"] = {"type": "link", "from": "cxl-asic", **({"lanes": dev_lanes} if dev_lanes else {})}
            comps[f"d{n}"] = {"type": "type3", "from": "cxl-asic"}
            conns += [{"from": f"s{i}.dsp[{j}]", "to": f"l{n}.up"}, {"from": f"l{n}.down", "to": f"d{n}.up"}]
            n += 1
    return T.load({"name": "switch-regions", "components": comps, "connections": conns})


def committed(system, name):
    return [(d["base"], d["size"], d["ways"], d["granularity"], d["targets"])
            for d in system.graph.decoders[name]["committed"]]


def trace_file(tmp_path, lines, name="t.trace"):
    p = tmp_path / name
    p.write_text("".join(f"0 {op} {hpa:#x}\n" for op, hpa in lines))
    return p


# --- the decoders Linux's arithmetic gives -----------------------------------------------------------

@pytest.mark.parametrize("gran", [256, 4096])
def test_two_way_below_one_switch_commits_linux_decoders(gran):
    """Two devices below one switch on one root port: the host bridge reaches one port (1 way at the
    region's granularity, parent = a 1-way window), the switch two (2 ways at 1 x that granularity)."""
    s = T.program_region(topo([2]), granularity=gran, size="2g")
    assert committed(s, "hb") == [(0, 2 * GiB, 1, gran, [0])]
    assert committed(s, "s0") == [(0, 2 * GiB, 2, gran, [0, 1])]
    assert committed(s, "d0") == committed(s, "d1") == [(0, 2 * GiB, 2, gran, [])]


def test_four_way_over_two_switches_commits_linux_decoders():
    """Two root ports, each with a switch and two devices, 4 ways at 256 B: the bridge 2 ways at 256 B;
    each switch 2 ways at 256 x 2 = 512 B. Position p goes through root port p % 2 and switch port
    (p // 2) % 2, so Linux's position order is d0 (rp0, s0.0), d2 (rp1, s1.0), d1 (rp0, s0.1), d3."""
    s = T.program_region(topo([2, 2]), targets=["d0", "d2", "d1", "d3"], granularity=256, size="4g")
    assert committed(s, "hb") == [(0, 4 * GiB, 2, 256, [0, 1])]
    assert committed(s, "s0") == committed(s, "s1") == [(0, 4 * GiB, 2, 512, [0, 1])]
    for d in ("d0", "d1", "d2", "d3"):
        assert committed(s, d) == [(0, 4 * GiB, 4, 256, [])]


def test_default_targets_take_linux_position_order():
    """Without targets, positions follow the ports with the lowest level's most significant: d0, d2, d1, d3."""
    a = T.program_region(topo([2, 2]), granularity=256, size="4g")
    b = T.program_region(topo([2, 2]), targets=["d0", "d2", "d1", "d3"], granularity=256, size="4g")
    assert a.graph.decoders == b.graph.decoders


# --- where each address goes -----------------------------------------------------------------------

@pytest.mark.parametrize("gran", [256, 4096])
def test_two_way_below_one_switch_routes_by_the_specification(gran):
    """Device = HPA[log2(gran)], DPA = the offset with that bit removed."""
    g = core_graph(T.program_region(topo([2]), granularity=gran, size="2g"))
    b = gran.bit_length() - 1
    rng = random.Random(7)
    for hpa in [0, gran - 1, gran, 2 * gran + 5, 3 * gran] + [rng.randrange(2 * GiB) for _ in range(60)]:
        way = hpa >> b & 1
        dpa = (hpa >> (b + 1)) << b | hpa & (gran - 1)
        assert ROUTE(g, hpa) == {"root_port": 0, "device": f"d{way}", "dpa": dpa, "switches": [("s0", way)]}


def test_four_way_over_two_switches_routes_by_the_specification():
    """HPA[8] picks the root port (bridge, 2 ways at 256 B), HPA[9] the switch port (2 ways at 512 B);
    the device's DPA removes both bits (4 ways at 256 B)."""
    g = core_graph(T.program_region(topo([2, 2]), targets=["d0", "d2", "d1", "d3"], granularity=256, size="4g"))
    rng = random.Random(11)
    for hpa in [0, 0x100, 0x200, 0x300, 0x400, 0x5FF] + [rng.randrange(4 * GiB) for _ in range(60)]:
        rp, sp = hpa >> 8 & 1, hpa >> 9 & 1
        dev = 2 * rp + sp  # s0 holds d0, d1; s1 holds d2, d3
        dpa = (hpa >> 10) << 8 | hpa & 0xFF
        assert ROUTE(g, hpa) == {"root_port": rp, "device": f"d{dev}", "dpa": dpa, "switches": [(f"s{rp}", sp)]}


@pytest.mark.parametrize("gran,expect", [(256, (52, 48)), (4096, (64, 36))])
def test_two_way_below_one_switch_request_counts(tmp_path, gran, expect):
    """100 reads of consecutive lines from 0: 256 B chunks hold 4 lines, chunks 0..24 alternate from d0
    (13 chunks, 52 lines; d1 12, 48); 4 KiB chunks hold 64 lines: d0 64, d1 the other 36."""
    s = T.program_region(topo([2]), granularity=gran, size="2g")
    r = simcxl.trace(s, trace_file(tmp_path, [("R", 64 * i) for i in range(100)])).iloc[0]
    assert (r["s0.dsp0.requests"], r["s0.dsp1.requests"]) == expect
    assert (r["l0.m2s.messages"], r["l1.m2s.messages"]) == expect
    assert r["s0.unrouted_reads"] == r["hb.unrouted_reads"] == 0


def test_four_way_over_two_switches_request_counts(tmp_path):
    """100 reads of consecutive lines at 256 B: chunk c (4 lines) goes to position c % 4; chunks 0..24
    give position 0 seven chunks (0, 4, ..., 24), positions 1-3 six: d0 28 lines, d2, d1, d3 24 each."""
    s = T.program_region(topo([2, 2]), targets=["d0", "d2", "d1", "d3"], granularity=256, size="4g")
    r = simcxl.trace(s, trace_file(tmp_path, [("R" if i % 3 else "W", 64 * i) for i in range(100)])).iloc[0]
    assert [r[f"l{i}.m2s.messages"] for i in range(4)] == [28, 24, 24, 24]
    assert (r["s0.requests"], r["s1.requests"]) == (52, 48)
    assert sum(r[f"l{i}.s2m.messages"] for i in range(4)) == 100  # every read and write answered


def test_two_levels_of_switches(tmp_path):
    """A switch below a switch: top t (one root port) with leaves s0 and s1, two devices each. 4 ways at
    256 B: bridge 1 way at 256 B, top 2 ways at 256 B, leaves 2 ways at 512 B; position p goes through
    top port p % 2 and leaf port (p // 2) % 2."""
    c = {"host": {"type": "host", "from": "cxl-asic"}, "local_dram": {"type": "dram", "from": "cxl-asic"},
         "hb": {"type": "host_bridge", "from": "cxl-asic"}, "tl": {"type": "link", "from": "cxl-asic"},
         "t": {"type": "switch", "from": "defaults"}}
    k = [{"from": "host.local", "to": "local_dram.up"}, {"from": "host.mem", "to": "hb.up"},
         {"from": "hb.root_port[0]", "to": "tl.up"}, {"from": "tl.down", "to": "t.up"}]
    for i in range(2):
        c[f"u{i}"] = {"type": "link", "from": "cxl-asic"}
        c[f"s{i}"] = {"type": "switch", "from": "defaults"}
        k += [{"from": f"t.dsp[{i}]", "to": f"u{i}.up"}, {"from": f"u{i}.down", "to": f"s{i}.up"}]
        for j in range(2):
            n = 2 * i + j
            c[f"l{n}"] = {"type": "link", "from": "cxl-asic"}
            c[f"d{n}"] = {"type": "type3", "from": "cxl-asic"}
            k += [{"from": f"s{i}.dsp[{j}]", "to": f"l{n}.up"}, {"from": f"l{n}.down", "to": f"d{n}.up"}]
    t = T.load({"name": "two-levels", "components": c, "connections": k})
    s = T.program_region(t, targets=["d0", "d2", "d1", "d3"], granularity=256, size="4g")
    assert committed(s, "hb") == [(0, 4 * GiB, 1, 256, [0])]
    assert committed(s, "t") == [(0, 4 * GiB, 2, 256, [0, 1])]
    assert committed(s, "s0") == committed(s, "s1") == [(0, 4 * GiB, 2, 512, [0, 1])]
    g = core_graph(s)
    for hpa in (0, 0x100, 0x200, 0x300, 0x12345):
        tp, lp = hpa >> 8 & 1, hpa >> 9 & 1
        assert ROUTE(g, hpa) == {"root_port": 0, "device": f"d{2 * tp + lp}", "dpa": (hpa >> 10) << 8 | hpa & 0xFF,
                                 "switches": [("t", tp), (f"s{tp}", lp)]}
    r = simcxl.trace(s, trace_file(tmp_path, [("R", 64 * i) for i in range(100)])).iloc[0]
    assert [r[f"l{i}.m2s.messages"] for i in range(4)] == [28, 24, 24, 24]


# --- what the switch answers itself ------------------------------------------------------------------

@pytest.mark.parametrize("poison", [False, True])
def test_switch_answers_what_its_decoders_do_not_cover(tmp_path, poison):
    """The bridge sends [1 GiB, 2 GiB) to the switch's root port, but the switch committed a decoder for
    [0, 1 GiB) only: it answers those reads (all ones, or poison when enabled) and drops the writes."""
    p = T.Platform(topo([2]))
    for d in ("d0", "d1"):
        cxlio.commit_decoder(p.function(d), 0, 0, GiB, 2)
        cxlio.enable_hdm(p.function(d))
    cxlio.commit_decoder(p.function("s0"), 0, 0, GiB, 2, targets=[0, 1])
    cxlio.enable_hdm(p.function("s0"), poison=poison, enable=False)
    for i in range(2):
        cxlio.commit_decoder(p.function("hb"), i, i * GiB, GiB, 1, targets=[0])
    cxlio.enable_hdm(p.function("hb"), enable=False)
    lines = [("R", 64 * i) for i in range(10)] + [("R", GiB + 4096 * i) for i in range(7)] + \
            [("W", GiB + 8192 * i) for i in range(3)]
    r = simcxl.trace(T.memory_system(p.committed_topology()), trace_file(tmp_path, lines)).iloc[0]
    assert (r["s0.unrouted_reads"], r["s0.unrouted_writes"]) == (7, 3)
    assert r["s0.poisoned_reads"] == (7 if poison else 0)
    assert r["hb.unrouted_reads"] == r["hb.unrouted_writes"] == 0
    assert r["l0.m2s.messages"] + r["l1.m2s.messages"] == 10
    assert r["s0.requests"] == 10  # what went down


# --- bandwidth ---------------------------------------------------------------------------------------

def test_two_way_below_a_switch_is_bounded_by_its_upstream_link():
    """Both devices on x16 links, the switch's upstream link x4: every response crosses that link, so the
    region reads at its S2M data ceiling, Gen5 x4 = 32 GT/s x 4 x 128/130 / 8 = 15.754 GB/s raw times
    64 B of data per 72 B of slots of a 68 B flit's 64 (as tests/test_decoders.py derives it), half on
    each device link."""
    raw = 32e9 * 4 * 128 / 130 / 8 / 1e9
    ceiling = raw * 64 / (72 * 68 / 64)
    s = T.program_region(topo([2], up_lanes=4, dev_lanes=16, req_queue=512), granularity=4096, size="4g")
    r = simcxl.traffic(s, threads=32, pattern="sequential", footprint_bytes=GiB, requests=60000).iloc[0]
    assert r.read_gbps == pytest.approx(ceiling, rel=0.01)
    assert r["l0.s2m.data_gbps"] == pytest.approx(r["l1.s2m.data_gbps"], rel=0.02)
    assert r["l0.s2m.data_gbps"] + r["l1.s2m.data_gbps"] == pytest.approx(r["u0.s2m.data_gbps"], rel=0.01)


def test_four_way_over_two_switches_uses_both_upstream_links():
    """The 4-way region over two switches, each on an x4 root port link: HPA bit 8 alternates the root
    ports, so the region reads at both links' S2M ceilings, 2 x 13.18 GB/s, a quarter on each device."""
    raw = 32e9 * 4 * 128 / 130 / 8 / 1e9
    ceiling = raw * 64 / (72 * 68 / 64)
    s = T.program_region(topo([2, 2], up_lanes=4, dev_lanes=16, req_queue=512), granularity=256, size="4g")
    r = simcxl.traffic(s, threads=48, pattern="sequential", footprint_bytes=GiB, requests=80000).iloc[0]
    assert r.read_gbps == pytest.approx(2 * ceiling, rel=0.01)
    for i in range(4):
        assert r[f"l{i}.s2m.data_gbps"] == pytest.approx(ceiling / 2, rel=0.02)


# --- refused -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("groups,region,message", [
    ([2, 2], dict(targets=["d0", "d1", "d2", "d3"]),
     r"regions\[0\].targets: d1 at position 1 is below hb's port 0, but hb's decoder sends position 1 to its "
     r"port 1"),
    ([3], dict(targets=["d0", "d1", "d2"]), r"switch s0 would interleave 3 ways \(its ports \[0, 1, 2\]\); "
                                            r"allowed: 1, 2, 4 or 8"),
    ([16], dict(), r"switch s0 would interleave 16 ways, more than its decoders' target list holds; allowed: "
                   r"at most 8"),
    ([2, 1], dict(targets=["d0", "d2", "d1"]), r"the ports above d0 interleave 4 ways in all, the region 3"),
    ([2], dict(targets=["d0", "dx"]), r"'dx' is not a Type-3 device on a root port of hb or below its switches"),
])
def test_refused_regions_name_the_port(groups, region, message):
    with pytest.raises(T.TopologyError, match=message):
        T.program_region(topo(groups), granularity=256, size="2g", **region)


def _raw(groups, devices, dev, sw, hb):
    """Decoders committed straight into the registers: `dev` at each of `devices`, `sw` at s0, `hb` at hb."""
    p = T.Platform(topo(groups))
    for name, decs in [*[(d, dev) for d in devices], ("s0", sw), ("hb", hb)]:
        for i, d in enumerate(decs):
            cxlio.commit_decoder(p.function(name), i, **d)
        cxlio.enable_hdm(p.function(name), enable=name in devices)
    return T.memory_system(p.committed_topology())


def _run(s):
    return simcxl.traffic(s, threads=2, footprint_bytes=MiB, requests=200)


def test_switch_target_it_does_not_have_is_a_config_error():
    s = _raw([2], ["d0", "d1"], [dict(base=0, size=GiB, ways=2)], [dict(base=0, size=GiB, ways=2, targets=[0, 5])],
             [dict(base=0, size=GiB, ways=1, targets=[0])])
    with pytest.raises(_core.ConfigError, match=r"s0 decoder 0: target 1 names downstream port 5, which s0 does "
                                                r"not have \(it has 2\)"):
        _run(s)


def test_switch_granularity_against_linux_arithmetic_is_a_config_error():
    """Two devices 2-way at 256 B below a switch that interleaves at 512 B: HPA 0x100 goes to d0, whose
    decoder gives it position 1, d1's."""
    s = _raw([2], ["d0", "d1"], [dict(base=0, size=GiB, ways=2)],
             [dict(base=0, size=GiB, ways=2, granularity=512, targets=[0, 1])],
             [dict(base=0, size=GiB, ways=1, targets=[0])])
    with pytest.raises(_core.ConfigError, match=r"hb decoder 0 and the switch decoders below it send 0x100 to d0, "
                                                r"which d0 decoder 0 \(2 ways at 256 B\) gives position 1"):
        _run(s)


def test_three_way_switch_decoder_is_a_config_error():
    s = _raw([3], ["d0", "d1", "d2"], [dict(base=0, size=3 * GiB, ways=3)],
             [dict(base=0, size=3 * GiB, ways=3, targets=[0, 1, 2])],
             [dict(base=0, size=3 * GiB, ways=1, targets=[0])])
    with pytest.raises(_core.ConfigError, match=r"s0 decoder 0: 3 ways is not allowed; allowed: 1, 2, 4 or 8 "
                                                r"\(a switch's target list, a power of two\)"):
        _run(s)
