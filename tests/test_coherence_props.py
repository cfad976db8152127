"""Property test over random small coherent systems: every run completes, the
checker finds no violation, and each access's stages add up to its latency."""

from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcxl.workloads import coherent
from simcxl.config.groups import DCacheParams, LinkParams

MODES = {
    "type1": ("type1-asic", {}),
    "type2-host-bias": ("type2-bias", {"accel.auto_bias_flip": 0}),
    "type2-bias-flips": ("type2-bias", {}),
    "type2-device-bias": ("type2-bias", {"accel.device_bias": 1}),
    "type2-hdm-db": ("type2-hdmdb", {}),
}
CREDITS = [f"link.{f.name}" for f in fields(LinkParams) if f.name.startswith("credits_")] + \
          [f"cache.{f.name}" for f in fields(DCacheParams) if f.name.startswith("credits_")]


@st.composite
def systems(draw):
    preset, kw = MODES[draw(st.sampled_from(sorted(MODES)))]
    assoc = draw(st.sampled_from([1, 2, 4]))
    sets = draw(st.sampled_from([4, 8, 16, 32]))
    kw = dict(kw)
    kw.update({k: draw(st.integers(1, 4)) for k in CREDITS})
    kw.update({
        "accel.devices": draw(st.integers(1, 2)),
        "accel.bias_page_bytes": draw(st.sampled_from([256, 4096, 65536])),
        "cache.assoc": assoc,
        "cache.bytes": max(1024, sets * assoc * 64) // (64 * assoc) * (64 * assoc),
        "cache.mshrs": draw(st.integers(1, 8)),
        "home.host_cache_bytes": draw(st.sampled_from([4096, 16384, 1 << 20])),
        "home.snoop_filter_lines": draw(st.sampled_from([0, 4, 64])),
        "seed": draw(st.integers(0, 2 ** 20)),
    })
    return coherent.load(preset).replace(**kw)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(s=systems(), lines=st.integers(1, 24), stores=st.floats(0, 1), op=st.sampled_from(coherent.OPS))
def test_random_small_systems_complete_coherently(s, lines, stores, op):
    r = coherent.stress(s, ops=4000, lines=lines, host_threads=2, device_requesters=2, store_fraction=stores)
    assert r["ops"] == 4000 and r["deadlock"] == 0
    assert r["checker_violations"] == 0, r["detail"]
    assert r["quiet_at_end"] == 1
    target = "device" if s.device().accel.type == 2 else "host"
    a = coherent.accel(s, op, "random", target=target, requesters=2, depth=2, footprint="32k", requests=600,
                       host_threads=1, check=True).iloc[0]
    assert a["ops"] == 600 * s.device().accel.devices and a["checker_violations"] == 0
    stages = sum(a[f"stage_{x}_ns"] for x in coherent.STAGES)
    assert stages == pytest.approx(a["latency_mean_ns"], rel=1e-9, abs=1e-6)
