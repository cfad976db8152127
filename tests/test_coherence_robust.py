"""CXL.cache robustness: no deadlock at one credit per class, bias flips that
cost their flush and not memory, coherent DMA reads, a bounded host cache, and
a watchdog that turns a stalled run into a one-line StallError."""

import math
import re
import time
from dataclasses import fields

import pytest

from simcxl import _core
from simcxl.workloads import coherent
from simcxl.config.groups import DCacheParams, HomeParams, HostParams, LinkParams
from simcxl.config.params import ParamError
from simcxl.topology import core_graph

# Every way a device can hold or reach memory, each with two devices.
MODES = {
    "type1": ("type1-asic", {}),
    "type1-fpga": ("type1-fpga", {}),
    "type2-host-bias": ("type2-bias", {"accel.auto_bias_flip": 0}),
    "type2-bias-flips": ("type2-bias", {}),
    "type2-device-bias": ("type2-bias", {"accel.device_bias": 1}),
    "type2-hdm-db": ("type2-hdmdb", {}),
}


def one_credit(s):
    """Every credit parameter of the link and the CXL.cache channels set to 1."""
    kw = {f"link.{f.name}": 1 for f in fields(LinkParams) if f.name.startswith("credits_")}
    kw.update({f"cache.{f.name}": 1 for f in fields(DCacheParams) if f.name.startswith("credits_")})
    assert len(kw) == 14  # the link's six classes (BISnp, BIRsp included) and the cache's eight
    return s.replace(**kw)


def flit_ns(s, n=1):
    """n 68 B flits back to back from a whole picosecond: the link keeps fractions of a picosecond and
    a message arrives at the first whole one after its last flit."""
    return math.ceil(n * 68 / s.device().link.raw_gbps * 1000 - 1e-6) / 1000


# ---------------------------------------------------------------- 1: credits

def test_hdmdb_with_one_drs_credit_completes():
    # BISnp used to hold the S2M DRS credit the home's MemData needed.
    s = coherent.load("type2-hdmdb").replace(**{"link.credits_drs": 1})
    r = coherent.accel(s, "store", "random", target="device", footprint="256k", requests=20_000,
                       host_threads=2).iloc[0]
    assert r["ops"] == 20_000 and r["dev0.dcoh.back_invalidates"] > 100
    assert r["dev0_link.s2m_bisnp.messages"] == r["dev0.dcoh.back_invalidates"]
    assert r["dev0_link.m2s_birsp.messages"] == r["home.back_invalidates"] == r["dev0.dcoh.back_invalidates"]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_device_type_completes_at_one_credit_per_class(mode):
    preset, kw = MODES[mode]
    s = one_credit(coherent.load(preset).replace(**{"accel.devices": 2, **kw}))
    target = "device" if s.device().accel.type == 2 else "host"
    for op in ("load", "store", "itomwr", "rdcurr"):
        r = coherent.accel(s, op, "random", target=target, footprint="64k", requests=3000, host_threads=2,
                           check=True).iloc[0]
        assert r["ops"] == 6000, op
        assert r["dev0.cache.loads"] + r["dev0.cache.stores"] == 6000, op
        assert r["dev0.cache.stores" if op in ("store", "itomwr") else "dev0.cache.loads"] == 6000, op
        assert r["checker_violations"] == 0 and r["quiet_at_end"] == 1, op
    st = coherent.stress(s, ops=60_000, lines=16, device_memory_fraction=0.6)
    assert st["ops"] == 60_000 and st["deadlock"] == 0
    assert st["checker_violations"] == 0 and st["detail"] == "" and st["quiet_at_end"] == 1
    if mode == "type2-hdm-db":
        assert st["dev0_link.s2m_bisnp.messages"] == st["dev0.dcoh.back_invalidates"] > 100


def test_dma_completes_at_one_credit_per_class():
    df = coherent.dma_vs_cache(one_credit(coherent.load("type1-asic")), [64, 4096], stream_bytes="64k")
    assert len(df) == 4 and (df["bandwidth_gbps"] > 0).all()


def test_back_invalidate_credits_are_validated():
    for key in ("cache.credits_bisnp", "cache.credits_birsp"):
        with pytest.raises(ParamError, match=re.escape(f"{key} = 0 is out of range; allowed: 1 to 65536")):
            coherent.load("type2-hdmdb").replace(**{key: 0})
        d = core_graph(coherent.load("type2-hdmdb"))
        d["components"]["dev0"]["cache"][key.split(".")[1]] = 0
        with pytest.raises(_core.ConfigError, match=re.escape(f"{key} = 0 is out of range")):
            _core.validate(d)


# ---------------------------------------------------------------- 2: bias flips

def flip(s, host_op, k):
    """The host touches k lines of device page 0, then the device reads a line
    of that page: the flip to device bias flushes the host's k lines."""
    steps = [dict(agent=-1, op=host_op, target="device", offset=64 * i) for i in range(k)]
    steps.append(dict(agent=0, op="load", target="device", offset=64 * 63))
    df, counters = coherent.script(s, steps)
    assert counters["checker_violations"] == 0
    return df.iloc[-1], counters


@pytest.mark.parametrize("host_op", ["load", "store"])
def test_flip_costs_its_flush_line_by_line(host_op):
    s = coherent.load("type2-bias")
    dev = s.device()
    f, phy = flit_ns(s), dev.link.phy_latency_ns
    # BiasFlipReq up (one flit), the home pipeline, BiasFlipDone down (one flit).
    handshake = 2 * (f + phy) + s.home.latency_ns + dev.accel.bias_flip_ns
    for k in (0, 1, 4, 16):
        row, c = flip(s, host_op, k)
        assert c["dev0.dcoh.bias_flips_to_device"] == 1 and c["home.host_cache.bias_flip_flushes"] == k
        # One host-cache access per resident line, and dirty lines' MemWr (10
        # half-slots each, packed into 8-half-slot flits down) acknowledged by
        # a Cmp (one flit up), whichever ends later.
        expect = handshake + k * s.home.host_hit_ns
        if host_op == "store" and k:
            expect = handshake + max(k * s.home.host_hit_ns, flit_ns(s, math.ceil(10 * k / 8)) + f + 2 * phy)
        assert row["stage_bias_flip_ns"] == pytest.approx(expect, abs=1e-3), k
        assert c["home.memory_writes"] == (k if host_op == "store" else 0)


def test_flip_memory_does_not_grow_with_page_size():
    rows = {}
    for page in (4096, 16 << 20):
        s = coherent.load("type2-bias").replace(**{"accel.bias_page_bytes": page})
        rows[page] = coherent.accel(s, "load", "random", target="device", footprint="64m", requests=2000,
                                    host_threads=2).iloc[0]
        assert rows[page]["dev0.dcoh.bias_flips_to_device"] > 0
    # Line-state entries exist only for lines some cache holds or a request is
    # at: at most the requests of the run, never the 262,144 lines of a page.
    for r in rows.values():
        assert r["home.line_states_max"] <= 2000 + r["home.host_misses"]
    assert rows[16 << 20]["home.line_states_max"] <= rows[4096]["home.line_states_max"]


def test_device_side_flush_costs_a_lookup_per_resident_line():
    # Device bias: the device caches k lines of page 0, then a host read flips
    # the page to host bias, flushing those lines first.
    s = coherent.load("type2-bias").replace(**{"accel.device_bias": 1})
    dev = s.device()
    for k in (1, 8, 32):
        steps = [dict(agent=0, op="store", target="device", offset=64 * i) for i in range(k)]
        steps.append(dict(agent=-1, op="load", target="device", offset=64 * 63))
        df, c = coherent.script(s, steps)
        r = df.iloc[-1]
        assert c["dev0.cache.bias_flip_flushes"] == k and c["checker_violations"] == 0
        assert r["stage_bias_flip_ns"] == pytest.approx(dev.accel.bias_flip_ns + k * dev.cache.latency_ns, abs=1e-3)
        # The flip is one stage of the host's read, not extra time on top of it.
        assert sum(r[f"stage_{st}_ns"] for st in coherent.STAGES) == pytest.approx(r["latency_ns"], abs=1e-3)


# ---------------------------------------------------------------- 3: DMA snoops

@pytest.mark.parametrize("writer", ["host", "device"])
def test_dma_read_returns_a_dirty_cached_line_and_pays_for_the_snoop(writer):
    s = coherent.load("type1-asic")
    dev = s.device()
    f, phy = flit_ns(s), dev.link.phy_latency_ns
    store = dict(agent=-1 if writer == "host" else 0, op="store", offset=0)
    clean, _ = coherent.script(s, [dict(agent=0, op="dma", offset=0, bytes=64)])
    dirty, c = coherent.script(s, [store, dict(agent=0, op="dma", offset=0, bytes=64)])
    d = dirty.iloc[-1]
    assert d["value"] == dirty.iloc[0]["value"] == 1  # the version the store wrote, not memory's 0
    assert clean.iloc[0]["value"] == 0
    assert d["cached_lines"] == 1 and c["checker_violations"] == 0
    # MemRd TLP up (one flit), the home pipeline, ..., the 64 B completion down (two flits).
    ends = f + phy + s.home.latency_ns + flit_ns(s, 2) + phy
    if writer == "host":
        expect = ends + s.home.host_hit_ns  # the host's cache supplies the line
    else:
        # SnpCur down (one flit), the device's snoop pipeline, RspVFwdV + data up (two flits).
        expect = ends + f + phy + dev.cache.snoop_latency_ns + flit_ns(s, 2) + phy
        assert c["dev0.cache.snoops_snpcur"] >= 1
    assert d["phase_data_ns"] == pytest.approx(expect, abs=1e-3)
    assert d["phase_data_ns"] != pytest.approx(clean.iloc[0]["phase_data_ns"], abs=1.0)


# ---------------------------------------------------------------- 4: host cache

def test_host_cache_default_is_the_llc_and_is_validated():
    assert HomeParams().host_cache_bytes == HostParams().llc_bytes
    with pytest.raises(ParamError, match="home.host_cache_bytes = 4100 must be a multiple of 64"):
        coherent.load("type1-asic").replace(**{"home.host_cache_bytes": 4100})
    d = core_graph(coherent.load("type1-asic"))
    d["components"]["home"]["host_cache_bytes"] = 4100
    with pytest.raises(_core.ConfigError, match="home.host_cache_bytes = 4100 must be a multiple of 64"):
        _core.validate(d)


def test_host_cache_evicts_and_conserves_dirty_data():
    cap = 1024  # lines
    s = coherent.load("type1-asic").replace(**{"home.host_cache_bytes": cap * 64})
    runs = [coherent.accel(s, "load", "random", footprint="4m", requests=n, host_threads=4,
                           host_store_fraction=0.5, check=True).iloc[0] for n in (20_000, 200_000)]
    device_lines = s.device().cache.bytes // 64
    for r in runs:
        assert r["checker_violations"] == 0  # a lost write-back would read stale data
        assert r["home.host_cache.lines_max"] == cap
        assert r["home.line_states_max"] <= cap + device_lines + 64
        assert r["home.host_cache.evictions"] > 0 and r["home.host_cache.writebacks"] > 0
        # Every line the host made dirty was written to DRAM once when it left M
        # (evicted, or downgraded for a device read), or is still dirty: the
        # DRAM controller's own write count balances the host's dirty lines.
        assert r["home.host_cache.dirtied"] == r["local_dram.writes"] + r["home.host_cache.dirty_at_end"]
        assert r["local_dram.writes"] == r["home.memory_writes"]
        assert r["home.host_cache.writebacks"] < r["local_dram.writes"]
    # Ten times longer, same memory.
    assert runs[1]["home.line_states_max"] <= runs[0]["home.line_states_max"] * 1.1 + 64
    assert runs[1]["home.host_cache.evictions"] > 5 * runs[0]["home.host_cache.evictions"]


# ---------------------------------------------------------------- 5: watchdog

STALL = re.compile(r"^CXL\.cache run stalled at [\d.]+ ns with \d+ requests outstanding: (.*); the oldest waits "
                   r"in (accel\[\d\]|home) .+, age ([\d.]+) ns$")


@pytest.mark.parametrize("inject,why", [("drop-snoops", "no event left to complete them"),
                                        ("defer-snoops", "while events kept firing")])
def test_a_device_that_never_answers_raises_stall_error(inject, why):
    t0 = time.time()
    with pytest.raises(_core.StallError) as e:
        coherent.stress(coherent.load("type1-asic").replace(**{"accel.devices": 2}), ops=100_000, inject=inject)
    assert time.time() - t0 < 5
    msg = str(e.value)
    assert "\n" not in msg
    m = STALL.match(msg)
    assert m, msg
    assert why in m.group(1) and float(m.group(3)) > 0
    assert isinstance(e.value, RuntimeError)
    # One host read of a line the device holds dirty: the home waits for the
    # snoop answer, and the watchdog names it.
    with pytest.raises(_core.StallError, match=r"oldest waits in home transaction of line 0x100000000 "
                                               r"\(RdShared from a host core, 1 snoop responses"):
        coherent.script("type1-asic", [dict(agent=0, op="store"), dict(agent=-1, op="load")], inject=inject)


def test_script_rejects_bad_steps():
    with pytest.raises(ValueError, match=r"script step 0: agent = 3 is out of range; allowed: -1 \(a host core\) to 0"):
        coherent.script("type1-asic", [dict(agent=3)])
    with pytest.raises(ValueError, match="script step 1: agent = -1 is not allowed with op = 'dma'"):
        coherent.script("type1-asic", [dict(), dict(op="dma")])
    with pytest.raises(ValueError, match="script.inject = 'x' is not allowed"):
        coherent.script("type1-asic", [dict()], inject="x")
