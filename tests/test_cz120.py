"""The Micron CZ120-like preset: its published facts, and full duplex over MLC's mixes against the
x8 link's bound worked out by hand (benchmarks/cz120_mix.py prints the whole curve and its error
against Micron's 36 GB/s at 2:1; the bounds below hold 2:1 within -1.1 % to +4.6 % of it)."""

import pytest

import simcxl
from simcxl.engine import mlc

# Gen5 x8 by hand: 8 lanes x 32 GT/s x 128/130 line coding / 8 bits = 31.51 GB/s each way, in 68 B flits.
FLITS_PER_S = 8 * 32e9 * 128 / 130 / 8 / 68  # 463.3 M flits/s
# A flit carries eight 8 B half-slots each way (four 16 B slots). Per line, in half-slots
# (header bits rounded up to whole half-slots, CXL 2.0 Sec. 3.3 formats):
#   read:  S2M MemData = 40-bit header (1) + 64 B (8) = 9;  M2S MemRd = 87 bits = 2
#   write: M2S MemWr   = 87-bit header (2) + 64 B (8) = 10; S2M Cmp  = 30 bits  = 1
# so with a fraction f of the lines read, the busier direction allows
#   lines/s = 8 * FLITS_PER_S / max(9f + (1 - f), 2f + 10(1 - f)).
BOUND = {  # MLC mode: (read fraction of memory traffic, total GB/s the link allows)
    "W6": (0.0, 8 * FLITS_PER_S / 10 * 64 / 1e9),     # writes only: 23.72
    "R": (1.0, 8 * FLITS_PER_S / 9 * 64 / 1e9),       # reads only: 26.36
    "W3": (0.75, 8 * FLITS_PER_S / 7 * 64 / 1e9),     # 3:1, S2M binds (7 vs 4): 33.89
    "W2": (2 / 3, 8 * FLITS_PER_S / (19 / 3) * 64 / 1e9),  # 2:1, S2M binds (6.33 vs 4.67): 37.46
    "W5": (0.5, 8 * FLITS_PER_S / 6 * 64 / 1e9),      # 1:1, M2S binds (6 vs 5): 39.54
}


@pytest.fixture(scope="module")
def cz120():
    return simcxl.load_preset("cxl-cz120")


@pytest.fixture(scope="module")
def curve(cz120):
    """MLC's modes at saturation (every host core a traffic thread), random lines."""
    df = simcxl.loaded_latency(cz120, threads=[cz120.host.cores], modes=list(BOUND), requests=60000)
    return dict(zip(df["mode"], df["bandwidth_gbps"]))


def test_the_preset_loads_and_carries_the_published_facts(cz120):
    s = cz120.validate()
    assert s.kind == "cxl-type3" and not s.provenance  # built from published facts, nothing fitted
    assert (s.cxl.link.gen, s.cxl.link.lanes, s.cxl.link.flit_bytes) == (5, 8, 68)  # PCIe 5.0 x8, CXL 2.0 flits
    m = s.cxl.media
    # Two DDR5-4800 channels, each two 32-bit sub-channels: 4 x 4800 MT/s x 4 B = 76.8 GB/s, twice the
    # link's 31.5 GB/s each way, so the link and not the media bounds every mix.
    assert (m.channels, m.bus_bytes, m.data_rate_mts) == (4, 4, 4800)
    assert "36 GB/s" in s.source and "Micron" in s.source


def test_every_mix_is_held_by_the_link_bound_worked_by_hand(curve):
    for mode, (f, bound) in BOUND.items():
        assert mlc.mode(mode).read_fraction == pytest.approx(f), mode  # MLC counts memory traffic
        # The total includes MLC's latency probe, whose reads (about 0.06 GB/s) ride along.
        assert curve[mode] <= bound * 1.005, mode
        # Saturated: within 5 % of the bound (flits sent before they fill cost the rest).
        assert curve[mode] >= 0.95 * bound, mode


def test_full_duplex_orders_the_mixes_as_the_link_bound_does(curve):
    by_bound = sorted(BOUND, key=lambda m: BOUND[m][1])
    assert by_bound == ["W6", "R", "W3", "W2", "W5"]
    assert sorted(curve, key=curve.get) == by_bound
    # 2:1 carries reads in one direction and writes in the other: well above reads alone.
    assert curve["W2"] > 1.3 * curve["R"]
