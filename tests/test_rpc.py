"""RPC (de)serialisation: message shapes whose wire size a Python encoder of the protobuf wire format
reproduces, and latencies bounded by the parameters of the engine, the host core and the link."""

import json
import math

import pytest
from click.testing import CliRunner

from simcxl import _core
from simcxl.workloads import coherent, nic
from simcxl.cli import main
from simcxl.config.groups import NicParams
from simcxl.topology import core_graph

SYS = coherent.load("type1-asic")
NIC = NicParams()


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def encode(msgs, m=0):
    """The protobuf wire format: tag (number << 3 | wire type), then a varint or a length-delimited payload."""
    out = bytearray()
    for f in msgs[m]:
        if f["kind"] == "varint":
            out += varint(f["number"] << 3 | 0) + varint(f["value"])
        else:
            if f["kind"] == "string":
                payload = b"x" * f["value"]
            elif f["kind"] == "nested":
                payload = encode(msgs, f["child"])
            else:  # packed repeated varints
                payload = b"".join(varint(e) for e in f["elems"])
            out += varint(f["number"] << 3 | 2) + varint(len(payload)) + payload
    return bytes(out)


def depth(msgs, m=0):
    kids = [f["child"] for f in msgs[m] if f["kind"] == "nested"]
    return 1 + max((depth(msgs, k) for k in kids), default=0)


@pytest.mark.parametrize("shape", nic.SHAPES)
def test_shapes_encode_to_their_size(shape):
    spec = next(d for d in _core.rpc_shapes() if d["shape"] == shape)
    t = _core.rpc_message(shape)
    wire = encode(t["messages"])
    assert len(wire) == t["wire_bytes"]
    assert abs(len(wire) - spec["bytes"]) <= 0.02 * spec["bytes"]
    assert len(t["messages"][0]) == spec["fields"] and depth(t["messages"]) == spec["depth"]
    kinds = {f["kind"] for m in t["messages"] for f in m}
    assert {"varint", "string"} <= kinds and (spec["depth"] == 1 or "nested" in kinds)
    strings = sum(f["value"] for m in t["messages"] for f in m if f["kind"] == "string")
    assert strings / len(wire) == pytest.approx(spec["string_fraction"], abs=0.15)


def run(shape, direction, mech, **nic_over):
    s = nic.load(SYS, {**NIC.to_dict(), **nic_over})
    return _core.run_rpc(core_graph(s), shape, direction, mech, True)


@pytest.mark.parametrize("shape", ["64B", "4KiB", "64KiB"])
def test_latency_bounded_by_compute_and_the_link(shape):
    t = _core.rpc_message(shape)
    b = t["wire_bytes"]
    fields = sum(len(m) for m in t["messages"])  # a packed repeated field counts once
    nic_compute = fields * NIC.rpc_field_ns + b / NIC.rpc_gbps
    host_compute = fields * NIC.host_field_ns + b / NIC.host_copy_gbps
    one_way = SYS.device().link.phy_latency_ns
    for d in nic.DIRECTIONS:
        c, p, h = (run(shape, d, m) for m in nic.MECHANISMS)
        for r in (c, p, h):
            assert r["checker_violations"] == 0 and r["bytes"] == b
        # The NIC's engine computes while its accesses cross the link: the later of the two.
        assert c["latency_ns"] >= max(nic_compute, 2 * one_way + SYS.home.latency_ns)
        assert h["latency_ns"] >= host_compute
        # The PCIe NIC adds the DMA transfer to the host core's work: a doorbell, the data over the link.
        assert p["latency_ns"] >= host_compute + SYS.device().dma.setup_ns + b / SYS.device().link.raw_gbps
        assert p["latency_ns"] > h["latency_ns"]
    # Deserialising writes the buffer in TLPs of at most max_payload bytes, then the completion record.
    p = run(shape, "deserialize", "pcie-nic")
    assert p["dev0_link.io_up.messages"] >= math.ceil(b / SYS.device().dma.max_payload) + 1


def test_a_faster_engine_helps_until_memory_bounds_it():
    slow = run("64KiB", "serialize", "cxl-nic", rpc_gbps=1.0)
    fast = run("64KiB", "serialize", "cxl-nic", rpc_gbps=1000.0, rpc_field_ns=0.0)
    assert slow["latency_ns"] >= 65000 / 1.0 * 0.98
    assert fast["latency_ns"] < slow["latency_ns"] / 10
    # what is left is the walk: every object, string and array line read through the cache
    assert fast["dev0.cache.loads"] == fast["object_lines"]


def test_cli_json_and_errors():
    res = CliRunner().invoke(main, ["run", "rpc", "--shape", "64B,4KiB", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert len(rows) == 2 * 2 * 3
    assert all(set(r) == {"shape", "direction", "bytes", "mechanism", "latency_ns", "throughput_gbps"} for r in rows)
    assert all(r["throughput_gbps"] == pytest.approx(r["bytes"] / r["latency_ns"]) for r in rows)
    res = CliRunner().invoke(main, ["run", "rpc", "--shape", "3KiB"])
    assert res.exit_code == 2 and "rpc.shape = '3KiB' is not allowed; allowed values: 64B, 512B" in res.stderr
    res = CliRunner().invoke(main, ["run", "rpc", "--set", "nic.rpc_gbps=0"])
    assert res.exit_code == 2 and "nic.rpc_gbps = 0 is out of range; allowed: 0.01 to 10000" in res.stderr
