"""The CXL-NIC beside memories and accelerators in one system (simcxl.workloads.mixed):
each initiator alone gives exactly what its own entry point gives, together
each loses where they share the host's DRAM and home agent, and what the DRAM
carries never exceeds what its channels can (by hand from the preset)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from simcxl.workloads import mixed, nic
from simcxl import topology
from simcxl.cli import main
from simcxl.config.params import ParamError

REPO = Path(__file__).resolve().parents[1]
FILE = REPO / "examples" / "topologies" / "mixed-nic.toml"
RAO = {"kernel": "rand", "op": "add", "mechanism": "cxl-nic", "threads": 4}
SHORT = dict(threads=8, lines_per_thread=4000)


def nic_system():
    return topology.memory_system(topology.load(FILE))


def test_the_file_has_every_initiator():
    s = nic_system()
    assert s.window_names() == ["ddr", "cxl"] and s.map[1].cxl.bridge.interleave_ways == 2
    assert s.device_names() == ["gpu", "nic0"] and mixed.nic_device(s) == "nic0"
    assert s.device("gpu").accel.type == 2 and s.device("gpu").accel.hdm_db == 1
    # The NIC's device is type1-asic's, its engines the schema's defaults, as nic.load gives them.
    ref = nic.load("type1-asic")
    assert s.device("nic0").cache == ref.device().cache and s.nic == ref.nic


@pytest.mark.parametrize("kernel,op,mechanism", [("rand", "add", "cxl-nic"), ("scatter", "cas", "cxl-nic"),
                                                 ("gather", "add", "pcie-nic"), ("central", "add", "host")])
def test_the_nic_alone_is_its_solo_run(kernel, op, mechanism):
    """The mixed engine with only the NIC working gives nic.rao's figures, bit for bit."""
    s = nic.load("type1-asic")
    solo = nic.rao(s, [kernel], [op], [mechanism], threads=4, iters=300).iloc[0]
    r = mixed.run(s, host=False, accelerators=False,
                  rao=dict(kernel=kernel, op=op, mechanism=mechanism, threads=4, iters=300)).iloc[0]
    # Operations an iteration: one update (a CAS is a FETCH and a CAS); scatter and gather fetch an
    # index and make two updates.
    per = {"add": 1, "cas": 2}[op]
    per = 1 + 2 * per if kernel in ("scatter", "gather") else per
    assert r["nic.dev0.ops"] == solo["ops"] == 4 * 300 * per
    assert r["nic.dev0.ops_per_second"] == solo["ops_per_second"]
    assert r["nic.dev0.latency_ns_mean"] == solo["latency_ns"]
    assert r["nic.dev0.latency_p99_ns"] == solo["latency_p99_ns"]
    if mechanism == "pcie-nic":  # its four phases add up to the latency
        phases = sum(r[f"nic.dev0.stage.{p}_ns"] for p in ("doorbell", "descriptor", "data", "completion"))
        assert phases == pytest.approx(solo["latency_ns"], rel=1e-12)
        for p in ("doorbell", "descriptor", "data", "completion"):
            assert r[f"nic.dev0.stage.{p}_ns"] == pytest.approx(solo[f"phase_{p}_ns"], rel=1e-12)


def test_an_idle_nic_changes_nothing():
    """Host STREAM and the accelerator's stream beside an idle NIC: the figures of the same file
    without the NIC (examples/topologies/mixed.toml), bit for bit."""
    with_nic = mixed.run(nic_system(), **SHORT).iloc[0]
    without = mixed.run(topology.memory_system(topology.load(REPO / "examples" / "topologies" / "mixed.toml")),
                        **SHORT).iloc[0]
    for k in ("host.stream_gbps", "host.read_latency_ns_mean", "accel.gpu.bandwidth_gbps",
              "accel.gpu.latency_ns_mean", "window_ns", "host.window.ddr.read_gbps"):
        assert with_nic[k] == without[k], k
    assert with_nic["accel.nic0.accesses"] == 0 and not any(c.startswith("nic.") for c in with_nic.index)


def test_together_each_initiator_loses_and_the_dram_holds():
    """All three on the host's DDR5 (every default target is its window): each alone, then together.
    Alone, host STREAM's and the accelerator's DRAM traffic already exceed what the two DDR5-4800
    sub-channels carry (2 x 4800 MT/s x 4 B = 38.4 GB/s); together each initiator is slower, and the
    window's reads and writes stay within 38.4 GB/s."""
    s = nic_system()
    dram = s.map[0].dram if hasattr(s.map[0], "dram") and s.map[0].dram else s.local_dram
    peak = dram.channels * dram.data_rate_mts * 1e6 * dram.bus_bytes / 1e9
    assert peak == pytest.approx(38.4)
    both = mixed.run(s, rao=RAO, **SHORT).iloc[0]
    host = mixed.run(s, accelerators=False, **SHORT).iloc[0]
    gpu = mixed.run(s, host=False, accel_requests=100_000).iloc[0]
    alone = mixed.run(s, host=False, accelerators=False, rao=dict(RAO, iters=2000)).iloc[0]
    carried = lambda r: r["host.window.ddr.read_gbps"] + r["host.window.ddr.write_gbps"]
    assert carried(host) + carried(gpu) > peak  # the demand exceeds the DRAM's capacity
    for r in (both, host, gpu, alone):
        assert carried(r) <= peak
    assert both["host.stream_gbps"] < host["host.stream_gbps"]
    assert both["accel.gpu.bandwidth_gbps"] < gpu["accel.gpu.bandwidth_gbps"]
    assert both["nic.nic0.ops_per_second"] < alone["nic.nic0.ops_per_second"]
    assert both["nic.nic0.latency_ns_mean"] > alone["nic.nic0.latency_ns_mean"]
    # Each initiator's figures are its own: the NIC's stages add up to its latency.
    stages = sum(both[f"nic.nic0.stage.{p}_ns"] for p in ("post", "wait", "execute", "notice"))
    assert stages == pytest.approx(both["nic.nic0.latency_ns_mean"], rel=1e-9)


def test_bad_input_names_it():
    plain = topology.memory_system(topology.load(REPO / "examples" / "topologies" / "mixed.toml"))
    with pytest.raises(ParamError, match="rao: mixed has no NIC"):
        mixed.run(plain, rao=RAO)
    s = nic_system()
    with pytest.raises(ParamError, match="devices: 'nick' is not a device of mixed-nic; allowed: gpu, nic0"):
        mixed.run(s, devices={"nick": {"requesters": 1}}, rao=RAO)
    with pytest.raises(ParamError, match="rao.device = 'gpu' is not the NIC of mixed-nic; allowed: nic0"):
        mixed.run(s, rao=dict(RAO, device="gpu"))
    with pytest.raises(ParamError, match="rao.kernel = 'randm' is not allowed"):
        mixed.run(s, rao=dict(RAO, kernel="randm"))
    with pytest.raises(ParamError, match="rao.thread is not an RAO setting"):
        mixed.run(s, rao=dict(RAO, thread=2))
    with pytest.raises(ValueError, match="mixed.accel.nic0.requesters = 2 is not allowed: the device runs RAO"):
        mixed.run(s, devices={"nic0": {"requesters": 2}}, rao=RAO, **SHORT)
    with pytest.raises(ValueError, match="mixed.rao.threads = 0 is out of range"):
        mixed.run(s, rao=dict(RAO, threads=0), **SHORT)


def test_cli_reports_each_initiator():
    r = CliRunner().invoke(main, ["run", "mixed", "--system", str(FILE), "--threads", "8", "--lines", "4000",
                                  "--rao-iters", "500"])
    assert r.exit_code == 0, r.output
    for line in ("together", "host alone", "accelerators alone", "nic alone", "NIC nic0: RAO rand add by cxl-nic",
                 "NIC operation rate lost to the others"):
        assert line in r.output, line
    bad = CliRunner().invoke(main, ["run", "mixed", "--system", str(REPO / "examples/topologies/mixed.toml"),
                                    "--rao"])
    assert bad.exit_code != 0 and "mixed has no NIC" in bad.output
