"""The link's one table of message sizes, checked against the CXL spec's formats.

Expected values are typed in from the specification, not read from the core:
header widths of the 68 B flit's messages (CXL 2.0 Sec. 3.2 CXL.cache, Sec. 3.3
CXL.mem) and the fields of the CXL 3.x back-invalidate messages; the sizes in
half-slots (8 B, half a 16 B slot) are derived by hand from them.
"""
import math

import pytest

from simcxl import _core

# channel: (header bits, data bytes, half-slots by hand)
SPEC = {
    "m2s_req": (87, 0, 2),     # 87 bits > 64: two half-slots, i.e. the whole H5 slot
    "m2s_rwd": (87, 64, 10),   # H4 slot (2) + four 16 B data slots (8)
    "m2s_birsp": (31, 0, 1),   # Valid 1 + Opcode 4 + BI-ID 12 + BITag 12 + LowAddr 2
    "s2m_ndr": (30, 0, 1),     # two NDRs share the H4 slot
    "s2m_drs": (40, 64, 9),    # two DRS headers share the H5 slot; + 64 B
    "s2m_bisnp": (77, 0, 2),   # BIRsp's fields + Address[51:6] 46
    "d2h_req": (79, 0, 2),
    "d2h_rsp": (20, 0, 1),
    "d2h_data": (17, 64, 9),
    "h2d_req": (64, 0, 1),     # exactly one half-slot
    "h2d_rsp": (32, 0, 1),
    "h2d_data": (24, 64, 9),
}

# The 68 B flit's header-slot formats (CXL 2.0 Sec. 4.2): what one 16 B header
# slot carries beside the 32-bit flit header, so at most 96 bits each.
H_SLOTS = {
    "H2D/M2S H0": ["h2d_req", "h2d_rsp"],
    "H2D/M2S H1": ["h2d_data", "h2d_rsp", "h2d_rsp"],
    "H2D/M2S H2": ["h2d_req", "h2d_data"],
    "H2D/M2S H3": ["h2d_data"] * 4,
    "H2D/M2S H4": ["m2s_rwd"],
    "H2D/M2S H5": ["m2s_req"],
    "D2H/S2M H0": ["d2h_data", "d2h_rsp", "d2h_rsp", "s2m_ndr"],
    "D2H/S2M H1": ["d2h_req", "d2h_data"],
    "D2H/S2M H2": ["d2h_data"] * 4 + ["d2h_rsp"],
    "D2H/S2M H3": ["s2m_drs", "s2m_ndr"],
    "D2H/S2M H4": ["s2m_ndr", "s2m_ndr"],
    "D2H/S2M H5": ["s2m_drs", "s2m_drs"],
}


def test_table_matches_the_spec():
    table = _core.message_sizes()
    assert set(table) == set(SPEC)
    for name, (bits, data, units) in SPEC.items():
        e = table[name]
        assert (e["header_bits"], e["data_bytes"], e["units"]) == (bits, data, units), name


@pytest.mark.parametrize("name", sorted(SPEC))
def test_header_takes_the_fewest_whole_half_slots_that_hold_it(name):
    bits, data, _ = SPEC[name]
    e = _core.message_sizes()[name]
    header = e["units"] - data // 8
    assert data in (0, 64)
    assert header == math.ceil(bits / 64)
    assert header * 64 >= bits > (header - 1) * 64


def test_spec_widths_fit_the_spec_header_slots():
    # A check of the typed-in widths themselves: every header-slot format of the
    # spec must fit the 96 bits a header slot has beside the flit header.
    for slot, msgs in H_SLOTS.items():
        bits = sum(SPEC[m][0] for m in msgs)
        assert bits <= 96, (slot, bits)
    # The half-slot count packs some formats looser than the spec (never
    # tighter): it never counts less than a slot's real bits.
    for slot, msgs in H_SLOTS.items():
        units = sum(SPEC[m][2] - SPEC[m][1] // 8 for m in msgs)
        assert units * 64 >= sum(SPEC[m][0] for m in msgs), slot


def test_line_of_data_is_four_slots():
    table = _core.message_sizes()
    for name, e in table.items():
        if e["data_bytes"]:
            assert e["units"] - math.ceil(e["header_bits"] / 64) == 8, name  # 64 B = 4 x 16 B slots


@pytest.mark.parametrize("overhead,payload,units", [(24, 0, 3), (24, 8, 4), (24, 64, 11), (24, 256, 35),
                                                    (20, 4, 3), (28, 16, 6)])
def test_tlp_units(overhead, payload, units):
    # framing + header + sequence + LCRC and the payload, rounded up to 8 B
    assert _core.tlp_units(overhead, payload) == units

