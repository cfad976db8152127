"""The CXL-NIC in gem5 (gem5_configs/cxl_nic_se.py): the core's atomic engine
on a gem5 device cache behind a CXL.cache link, coherent with X86 cores that
post operations into rings and run LOCK XADDs on the same words. Needs GEM5 =
a gem5 built for X86 with this repository as EXTRAS. Every operation adds 1,
so the expected memory image and previous values follow from the counts."""

import json
import subprocess

import pytest

from simcxl.gem5 import engine as gem5_engine, nic as gem5_nic

from conftest import CC, REPO, build_guest
from test_gem5 import GEM5, pytestmark  # noqa: F401  (gem5 marker and skip)

# The default rings, but with completions_per_line 4 (16 B completions) for the guest's format.
RINGS = {"ring_entries": 8, "descriptors_per_line": 2, "completions_per_line": 4, "post_batch": 4}
# One operation at a time: its latency is the chain of messages alone.
SERIAL = {"ring_entries": 1, "descriptors_per_line": 1, "completions_per_line": 1, "post_batch": 1,
          "host_poll_ns": 1}


@pytest.fixture(scope="module")
def x86():
    if "X86" not in gem5_engine.isas(GEM5):
        pytest.skip(f"GEM5 = {GEM5} has no X86 ISA (build build/X86/gem5.opt with EXTRAS=<repo>)")
    if not CC:
        pytest.skip("needs a C compiler to build benchmarks/guest/nic_rao.c")
    return GEM5


def run(tmp_path, nic, **kw):
    return gem5_nic.run("type1-asic", nic, gem5=GEM5, outdir=tmp_path, **kw)


@pytest.mark.parametrize("op", ["add", "cas"])
def test_contended_increments_on_one_word_are_atomic(x86, tmp_path, op):
    # 4 cores, each 60 NIC increments and 20 LOCK XADDs of its own, all on word 0.
    r = run(tmp_path, RINGS, threads=4, ops=60, kernel="central", op=op, host_ops=20)
    n = 4 * (60 + 20)
    c = r["check"]
    assert c["increments"] == n and c["sum"] == n
    # Every previous value 0 .. n-1 came back exactly once: no increment was lost or seen twice.
    assert c["distinct"] == n and c["max"] == n - 1
    assert r["nic"]["ringErrors"] == 0
    if op == "add":
        assert r["nic"]["ops"] == 4 * 60
    else:
        # A FETCH and at least one CAS per increment; every failed CAS is one more.
        assert r["nic"]["ops"] >= 2 * 4 * 60


@pytest.mark.parametrize("op", ["add", "cas"])
def test_pcie_nic_increments_on_one_word_are_atomic_among_its_operations(x86, tmp_path, op):
    # The PCIe NIC's DMA read and write of a word are not atomic against the cores' own atomics, so
    # only NIC operations here: its ordering keeps operations on one word one at a time.
    r = run(tmp_path, RINGS, threads=4, ops=40, kernel="central", op=op, mechanism="pcie-nic")
    n = 4 * 40
    c = r["check"]
    assert c["sum"] == n and c["distinct"] == n and c["max"] == n - 1
    assert r["nic"]["ringErrors"] == 0
    # Four DMAs per operation that writes (descriptor, operand read and write, completion); a FETCH has three.
    if op == "add":
        assert r["nic"]["ops"] == n and r["nic"]["dmas"] == 4 * n
    else:
        fetches = n  # one FETCH per increment, then CAS until one succeeds
        assert r["nic"]["dmas"] == 4 * (r["nic"]["ops"] - fetches) + 3 * fetches


def test_random_adds_leave_the_sum_of_increments(x86, tmp_path):
    r = run(tmp_path, RINGS, threads=2, ops=200, kernel="rand", host_ops=40, words=512)
    assert r["check"]["sum"] == 2 * (200 + 40)
    assert r["nic"]["ops"] == 400 and r["nic"]["ringErrors"] == 0
    assert 1 <= r["nic"]["maxInFlight"] <= RINGS["ring_entries"] * 2


@pytest.mark.parametrize("cpu", ["timing", "o3"])
@pytest.mark.parametrize("kernel", ["central", "rand"])
def test_operation_latency_matches_the_standalone_engine(x86, tmp_path, kernel, cpu):
    # One operation at a time on type1-asic: both engines cross the same
    # messages (two host stores that snoop the NIC's copy away, three NIC
    # requests, one host read the NIC answers with data).
    g = run(tmp_path, SERIAL, ops=400, kernel=kernel, cpu=cpu)
    s = gem5_nic.standalone("type1-asic", SERIAL, ops=400, kernel=kernel)
    ratio = g["latency_ns"] / s["latency_ns"]
    print(f"\n{kernel} {cpu}: gem5 {g['latency_ns']:.1f} ns, standalone {s['latency_ns']:.1f} ns, ratio {ratio:.3f}")
    # The message chain alone: 2 x (uncore + snoop) + 3 x (device cache + request + response) + uncore + snoop
    # with data, from the standalone engine's own stage figures. The NIC's doorbell read may overlap the
    # host's doorbell store by at most its way up.
    p = g["setup"]["standalone_paths_ns"]
    chain = 3 * (p["host_uncore_ns"] + p["snoop_ns"]) + 3 * (p["device_cache_ns"] + p["request_ns"] + p["response_ns"])
    chain += p["snoop_data_ns"] - p["snoop_ns"]
    assert chain - (p["device_cache_ns"] + p["request_ns"]) < g["latency_ns"]
    if cpu == "o3":
        # Its instructions hide behind the stores, as the standalone engine's host thread issues them back to back.
        assert abs(ratio - 1) < 0.05
    else:
        # An in-order core adds its instructions between the stores (about 85 ns traced) and nothing else.
        assert 1.0 < ratio < 1.15


def test_bad_ring_format_is_a_one_line_error(x86, tmp_path):
    setup = gem5_nic.setup("type1-asic", RINGS)
    setup["nic"]["nic_completions_per_line"] = 8
    (tmp_path / "setup.json").write_text(json.dumps(setup))
    guest = build_guest(tmp_path, "nic_rao")
    r = subprocess.run([GEM5, "-d", str(tmp_path / "m5out"), str(REPO / "gem5_configs" / "cxl_nic_se.py"),
                        "--binary", str(guest), "--setup", str(tmp_path / "setup.json")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    assert "nic.completions_per_line = 8 is not allowed" in r.stderr and "allowed: 1 to 4" in r.stderr


@pytest.mark.parametrize("setup, args, message", [
    (None, [], "not a readable JSON file"),
    ({"nic": {}}, [], "has no cache, link, host"),
    ("ok", ["--threads", "0"], "--threads = 0 is out of range; allowed: 1 to 16"),
    ("ok", ["--kernel", "central", "--threads", "16", "--ops", "70000", "--host-ops", "0"],
     "out of range for kernel central"),
])
def test_bad_config_input_is_a_one_line_error(x86, tmp_path, setup, args, message):
    path = tmp_path / "setup.json"
    if setup is not None:
        path.write_text(json.dumps(gem5_nic.setup("type1-asic", RINGS) if setup == "ok" else setup))
    guest = build_guest(tmp_path, "nic_rao")
    r = subprocess.run([GEM5, "-d", str(tmp_path / "m5out"), str(REPO / "gem5_configs" / "cxl_nic_se.py"),
                        "--binary", str(guest), "--setup", str(path), *args],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and message in r.stderr.strip().splitlines()[-1]
