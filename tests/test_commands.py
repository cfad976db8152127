"""The one command table (kernel/commands.hpp), checked against the CXL spec.

Expected values are typed in here from the specification (CXL 2.0 Sec. 3.2
CXL.cache, Sec. 3.3 CXL.mem, CXL 3.x back-invalidate, PCIe TLPs) or read from
the project's reference facts (reference/cxl_link_facts.csv), never from the
core: each opcode's channel, request or response, data, answers and size.
"""
import csv
import math
import os
import re
from pathlib import Path

import pytest

from simcxl import _core

TABLE = _core.commands()
BY_NAME = {c["name"]: c for c in TABLE}

# Every message class and its opcodes (the spec's; BiasFlipReq/BiasFlipDone
# stand for the model's bias-flip handshake, SFEvict never leaves the home).
SPEC_CHANNELS = {
    "d2h_req": ["RdCurr", "RdOwn", "RdShared", "RdAny", "ItoMWr", "WrInv", "CleanEvict", "DirtyEvict", "BiasFlipReq"],
    "d2h_rsp": ["RspIHitI", "RspVHitV", "RspIHitSE", "RspSHitSE", "RspSFwdM", "RspIFwdM", "RspVFwdV"],
    "d2h_data": ["D2HData"],
    "h2d_req": ["SnpData", "SnpInv", "SnpCur"],
    "h2d_rsp": ["GO", "GO_WritePull", "BiasFlipDone"],
    "h2d_data": ["H2DData"],
    "m2s_req": ["MemRd", "MemRdFwd"],
    "m2s_rwd": ["MemWr"],
    "m2s_birsp": ["BIRspI", "BIRspS"],
    "s2m_ndr": ["Cmp"],
    "s2m_drs": ["MemData"],
    "s2m_bisnp": ["BISnpData", "BISnpInv"],
    "io_up": ["IoMemRd", "IoMemWr"],
    "io_down": ["IoCplD", "IoMmioWr"],
    None: ["SFEvict"],
}
UPSTREAM = {"d2h_req", "d2h_rsp", "d2h_data", "s2m_ndr", "s2m_drs", "s2m_bisnp", "io_up"}
REQUEST_CHANNELS = {"d2h_req", "h2d_req", "m2s_req", "m2s_rwd", "s2m_bisnp"}
DATA_CHANNELS = {"m2s_rwd", "s2m_drs", "d2h_data", "h2d_data"}  # a 64 B line follows the header

# Header widths of the 68 B flit's formats (CXL 2.0 Sec. 3.2/3.3; BISnp/BIRsp
# the sums of their CXL 3.x fields), as test_message_sizes.py types them.
HEADER_BITS = {
    "m2s_req": 87, "m2s_rwd": 87, "m2s_birsp": 31, "s2m_ndr": 30, "s2m_drs": 40, "s2m_bisnp": 77,
    "d2h_req": 79, "d2h_rsp": 20, "d2h_data": 17, "h2d_req": 64, "h2d_rsp": 32, "h2d_data": 24,
}


def test_one_entry_per_opcode_in_order():
    assert [c["opcode"] for c in TABLE] == list(range(len(TABLE)))
    assert len(BY_NAME) == len(TABLE)
    listed = [n for names in SPEC_CHANNELS.values() for n in names]
    assert sorted(listed) == sorted(BY_NAME)


@pytest.mark.parametrize("channel", sorted(SPEC_CHANNELS, key=str))
def test_channel_of_each_opcode(channel):
    for name in SPEC_CHANNELS[channel]:
        c = BY_NAME[name]
        assert c["channel"] == channel, name
        if channel is not None:
            assert c["upstream"] == (channel in UPSTREAM), name


def test_requests_and_responses():
    for c in TABLE:
        assert c["request"] != c["response"], c["name"]
        if c["channel"] is None:
            continue
        if c["channel"].startswith("io_"):
            assert c["request"] == (c["name"] != "IoCplD"), c["name"]
        else:
            assert c["request"] == (c["channel"] in REQUEST_CHANNELS), c["name"]


def test_data_messages_carry_a_line():
    for c in TABLE:
        assert c["data"] == (c["channel"] in DATA_CHANNELS), c["name"]
        assert c["data_bytes"] == (64 if c["channel"] in DATA_CHANNELS else 0), c["name"]


def answers(name):
    return set(BY_NAME[name]["responses"])


def test_cxl_mem_answers():
    # MemRd: M2S Req without data, answered by MemData on S2M DRS.
    assert (BY_NAME["MemRd"]["channel"], BY_NAME["MemRd"]["data"]) == ("m2s_req", False)
    assert answers("MemRd") == {"MemData"} and BY_NAME["MemData"]["channel"] == "s2m_drs"
    # MemWr: M2S RwD with data, answered by Cmp on S2M NDR.
    assert (BY_NAME["MemWr"]["channel"], BY_NAME["MemWr"]["data"]) == ("m2s_rwd", True)
    assert answers("MemWr") == {"Cmp"} and BY_NAME["Cmp"]["channel"] == "s2m_ndr"
    # MemRdFwd answers a device's own D2H request to its memory: nothing answers it.
    assert answers("MemRdFwd") == set()
    # A response keeps its request's direction of data (gem5's IsRead / IsWrite).
    for req in ("MemRd", "MemWr"):
        (rsp,) = answers(req)
        for k in ("read", "write"):
            assert BY_NAME[req][k] == BY_NAME[rsp][k]
    assert BY_NAME["MemRd"]["read"] and not BY_NAME["MemRd"]["write"]
    assert BY_NAME["MemWr"]["write"] and not BY_NAME["MemWr"]["read"]


def test_cxl_cache_answers():
    # Reads that cache the line: GO (the state) and the data on H2D Data, or,
    # for device-attached memory in host bias, the device's own MemRdFwd.
    for r in ("RdOwn", "RdShared", "RdAny"):
        assert {"GO", "H2DData"} <= answers(r) <= {"GO", "H2DData", "MemRdFwd"}, r
    # RdCurr takes a snapshot: data only, no GO.
    assert answers("RdCurr") == {"H2DData"}
    # Writes and dirty evictions are pulled: GO_WritePull, answered by D2H data.
    for w in ("ItoMWr", "WrInv", "DirtyEvict"):
        assert answers(w) == {"GO_WritePull"}, w
    assert answers("GO_WritePull") == {"D2HData"}
    assert answers("CleanEvict") == {"GO"}
    # Snoops are H2D Req, answered by D2H Rsp: SnpInv only by invalidating ones.
    for s in ("SnpData", "SnpInv", "SnpCur"):
        assert BY_NAME[s]["channel"] == "h2d_req" and answers(s)
        assert all(BY_NAME[r]["channel"] == "d2h_rsp" for r in answers(s)), s
    assert all(r.startswith("RspI") for r in answers("SnpInv"))
    assert all(r.startswith(("RspI", "RspS")) for r in answers("SnpData"))
    assert all(r.startswith("RspV") or r == "RspIHitI" for r in answers("SnpCur"))
    for s in ("SnpData", "SnpInv", "SnpCur"):
        assert "RspIHitI" in answers(s), s  # a cache without the line


def test_snoop_responses_say_what_the_cache_kept():
    # Rsp<state kept>Hit<state it had> / Rsp<state kept>Fwd<state it had>:
    # Fwd means the line follows as D2H Data.
    for name in SPEC_CHANNELS["d2h_rsp"]:
        c = BY_NAME[name]
        m = re.fullmatch(r"Rsp([IVS])(Hit|Fwd)(I|V|SE|M)", name)
        assert m, name
        assert c["leaves_invalid"] == (m[1] == "I"), name
        assert c["leaves_shared"] == (m[1] == "S"), name
        assert c["data_follows"] == (m[2] == "Fwd"), name
        assert c["responses"] == []
    assert not any(c["leaves_invalid"] or c["leaves_shared"] or c["data_follows"]
                   for c in TABLE if c["channel"] != "d2h_rsp")


def test_back_invalidate_answers():
    for s in ("BISnpData", "BISnpInv"):
        assert BY_NAME[s]["channel"] == "s2m_bisnp" and BY_NAME[s]["request"]
        assert answers(s) and all(BY_NAME[r]["channel"] == "m2s_birsp" for r in answers(s)), s
    assert answers("BISnpInv") == {"BIRspI"}  # invalidation leaves the host no copy
    assert answers("BISnpData") == {"BIRspI", "BIRspS"}


def test_cxl_io_tlps():
    assert answers("IoMemRd") == {"IoCplD"}
    assert answers("IoMemWr") == answers("IoMmioWr") == set()  # posted
    assert not BY_NAME["IoMemRd"]["payload"]  # a read request carries no payload
    for n in ("IoMemWr", "IoMmioWr", "IoCplD"):
        assert BY_NAME[n]["payload"], n
    for n in SPEC_CHANNELS["io_up"] + SPEC_CHANNELS["io_down"]:
        assert (BY_NAME[n]["units"], BY_NAME[n]["data_bytes"]) == (0, 0), n  # sized by payload
    assert not any(c["payload"] for c in TABLE if not (c["channel"] or "").startswith("io_"))


def test_answers_travel_the_other_way():
    for c in TABLE:
        for r in c["responses"]:
            assert BY_NAME[r]["upstream"] != c["upstream"], (c["name"], r)


@pytest.mark.parametrize("channel", sorted(HEADER_BITS))
def test_link_size_of_each_message(channel):
    # 68 B flits: a header-only message fits in a 16 B slot (two half-slots);
    # a data message is its header plus four 16 B data slots.
    header = math.ceil(HEADER_BITS[channel] / 64)
    data = 64 if channel in DATA_CHANNELS else 0
    for name in SPEC_CHANNELS[channel]:
        c = BY_NAME[name]
        assert c["units"] == header + data // 8, name
        assert c["link_bytes"] == 8 * c["units"], name
        assert header <= 2, name
        if data:
            assert (c["units"] - header) / 2 == 4, name  # four data slots
    # The same as the link's table of message sizes.
    assert _core.message_sizes()[channel]["units"] == header + data // 8


def test_stats_name_opcodes_from_the_table():
    # <home>.requests_<opcode> statistics: every D2H Req opcode, in table order.
    names = [c["name"] for c in TABLE if c["channel"] == "d2h_req"]
    assert names == SPEC_CHANNELS["d2h_req"]
    snoops = [c["name"] for c in TABLE if c["channel"] == "h2d_req"]
    assert snoops == ["SnpData", "SnpInv", "SnpCur"]


def _reference_facts():
    here = Path(__file__).resolve()
    for p in [os.environ.get("SIMCXL_REFERENCE", "")] + [
            str(d / "shared" / "reference" / "cxl_link_facts.csv") for d in here.parents]:
        if p and Path(p).is_file():
            with open(p, newline="") as f:
                return {r["item"]: r["value"] for r in csv.DictReader(f)}
    pytest.skip("reference/cxl_link_facts.csv not found")


def _opcodes(value):
    # "MemInv 0000, MemRd 0001, ... (+MemClnEvct 1010 in 3.x)" -> names
    return {m for m in re.findall(r"([A-Za-z][A-Za-z-]*) [01]{3,4}\b", value)}


@pytest.mark.parametrize("item,channel", [
    ("CXL.mem M2S Req opcodes", "m2s_req"),
    ("CXL.mem M2S RwD opcodes", "m2s_rwd"),
    ("CXL.mem S2M NDR opcodes", "s2m_ndr"),
    ("CXL.mem S2M DRS opcodes", "s2m_drs"),
])
def test_cxl_mem_opcodes_are_the_references(item, channel):
    spec = _opcodes(_reference_facts()[item])
    assert spec, item
    for name in SPEC_CHANNELS[channel]:
        assert name in spec, (name, item)
        assert BY_NAME[name]["channel"] == channel


def test_back_invalidate_opcodes_are_the_references():
    v = _reference_facts()["CXL 3.x back-invalidate channels"]
    m = re.search(r"S2M BISnp \(([^)]*)\).*M2S BIRsp \(([^)]*)\)", v)
    assert m, v

    def expand(group, prefix):
        first, *rest = re.sub(r"\s*\[.*?\]", "", group).split("/")
        return {first} | {prefix + r for r in rest}

    assert set(SPEC_CHANNELS["s2m_bisnp"]) <= expand(m[1], "BISnp")
    assert set(SPEC_CHANNELS["m2s_birsp"]) <= expand(m[2], "BIRsp")
