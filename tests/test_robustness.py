"""Defects a review found in the CXL.mem path and the simulation kernel, each pinned by a test that
failed before its fix: the host bridge's response buffer, the progress watchdog, the HDM window,
idle root ports, re-entrant retries, components attached during a run and cancels."""

import time

import pytest

import simcxl
from simcxl import _core
from simcxl.config.params import ParamError
from simcxl.topology import core_graph


def cxl(**over):
    return simcxl.load_preset("cxl-asic").replace(**over)


def link_times(system):
    """Hand-derived link figures: a Gen5 flit is 68 B at 32 GT/s x lanes with 128b/130b coding."""
    link = system.cxl.link
    flit_ns = 68 / (32e9 * link.lanes * 128 / 130 / 8) * 1e9
    return flit_ns, link.phy_latency_ns


def response_cycle_ns(system):
    """One response at a time between device and bridge: a 64 B DRS (a header half-slot plus 64 B,
    9 of a 68 B flit's 8 half-slots) takes two flits, arrives after the PHY latency, clears the bridge
    after its response latency, and its buffer entry returns on the next flit the other way."""
    flit, phy = link_times(system)
    return (2 * flit + phy) + system.cxl.bridge.resp_latency_ns + (flit + phy)


def traffic(system, threads=16, requests=20000, **kw):
    return simcxl.traffic(system, threads=threads, requests=requests, **kw).iloc[0]


# ---------------------------------------------------------------- the bridge's response buffer

def test_bridge_holds_refused_responses_within_its_buffer_and_delivers_every_one():
    # 32 reads and a host refusing responses for 2 us, with room for 2 in the bridge: before the fix
    # the third response was written past the buffer (heap overflow under ASan).
    s = cxl(**{"cxl.bridge.resp_queue": 2})
    unblock = 2000.0
    done = _core._testing.bridge_behind_blocked_host(core_graph(s), 32, unblock)
    assert sorted(a for _, a, _ in done) == [i * 64 for i in range(32)]
    assert len({i for i, _, _ in done}) == 32
    times = [t for _, _, t in done]
    assert min(times) >= unblock
    # Two held at the bridge go at once; each later pair waits for its buffer entries to come back.
    assert times[-1] >= unblock + (32 / 2 - 1) * response_cycle_ns(s) * 0.99


def test_response_buffer_of_one_allows_one_response_per_round_trip():
    s = cxl(**{"cxl.bridge.resp_queue": 1})
    r = traffic(s)
    expected = 64 / response_cycle_ns(s)  # GB/s: 64 B per cycle in ns
    assert r["read_gbps"] == pytest.approx(expected, rel=0.01)


def test_response_buffer_bounds_bandwidth_until_the_link_does():
    bw = {q: traffic(cxl(**{"cxl.bridge.resp_queue": q}))["read_gbps"] for q in (1, 4, 128)}
    # Four responses per round trip pack into the same flits: four times one, within the packing gain.
    assert bw[4] / bw[1] == pytest.approx(4.0, rel=0.05)
    assert bw[128] > 4 * bw[4]


# ---------------------------------------------------------------- the progress watchdog

STALL = {"device_stops_after": 100}


@pytest.mark.parametrize("run", [
    lambda d: _core.run_traffic(d, 16, 1.0, "random", 1 << 30, 20000, 0.0, 0.0, False, None),
    lambda d: _core.run_stream(d, "copy", 8, 2000, "first-touch", "write-allocate", None),
    lambda d: _core.run_lmbench(d, [1 << 22], 0, 2000, 100, 0, None, 0),  # cold: little warm-up
], ids=["traffic", "stream", "lmbench"])
def test_a_device_that_stops_answering_ends_the_run_with_where_the_oldest_request_waits(run):
    d = core_graph(cxl())
    d["fault"] = dict(STALL, device_stops_after=5)
    t = time.monotonic()
    with pytest.raises(_core.StallError) as e:
        run(d)
    assert time.monotonic() - t < 10
    msg = str(e.value)
    assert "\n" not in msg
    assert "in cxl.device.tx" in msg and "request(s) in flight" in msg and "issued" in msg


def test_a_stalled_trace_names_the_queue(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"{i} R {i * 64:#x}\n" for i in range(200)))
    d = core_graph(cxl())
    d["fault"] = STALL
    with pytest.raises(_core.StallError, match=r"in cxl\.device\.tx"):
        _core.run_trace(d, str(trace), 64, None)


def test_fault_injection_is_validated():
    d = core_graph(cxl())
    d["fault"] = {"device_stop": 1}
    with pytest.raises(_core.ConfigError, match="device_stop"):
        _core.run_traffic(d, 1, 1.0, "random", 1 << 20, 100, 0.0, 0.0, False, None)


# ---------------------------------------------------------------- the HDM window and the root ports

def test_addresses_outside_the_window_are_refused():
    with pytest.raises(_core.ConfigError, match=r"outside the CXL window \[0x40000000, 0x80000000\)"):
        _core.hdm_decode(1, 4096, [0x80000000], base=1 << 30, size=1 << 30)
    with pytest.raises(_core.ConfigError, match=r"outside the CXL window"):
        _core.hdm_decode(1, 4096, [0x3fffffff], base=1 << 30, size=1 << 30)
    # The window's first and last lines decode, relative to its base.
    (p0, dpa0, h0), (p1, dpa1, h1) = _core.hdm_decode(2, 4096, [1 << 30, (2 << 30) - 64], base=1 << 30,
                                                      size=1 << 30)
    assert (p0, dpa0, h0) == (0, 0, 1 << 30)
    # The last line: chunk (2^30 - 64) // 4096 = 262143, odd -> port 1, device chunk 131071.
    assert (p1, dpa1, h1) == (1, 131071 * 4096 + 4032, (2 << 30) - 64)


@pytest.mark.parametrize("base,size", [(100, 1 << 30), (4096, 1 << 52), (1 << 52, 4096)])
def test_a_window_misaligned_or_beyond_52_bits_is_refused(base, size):
    with pytest.raises(_core.ConfigError, match=r"host window .* is not allowed; allowed: a base that is a multiple"):
        _core.hdm_decode(2, 4096, [base], base=base, size=size)


def test_a_window_of_partial_interleave_rows_decodes_one_to_one():
    # 3 ways of 256 B over 16 MiB: 21845 whole rows of 768 B and one of 256 B on port 0.
    size = 16 << 20
    out = _core.hdm_decode(3, 256, list(range(0, size, 256)), base=0, size=size)
    assert len({(p, d) for p, d, _ in out}) == size // 256
    assert out[-1][:2] == (0, 21845 * 256)


def test_a_trace_beyond_the_physical_address_space_is_refused(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("0 R 0x10000000000000\n")  # 2^52
    with pytest.raises(_core.ConfigError, match="outside the CXL window"):
        _core.run_trace(core_graph(cxl()), str(trace), 64, None)


def test_fewer_ways_than_root_ports_is_refused_in_python_and_in_the_core():
    with pytest.raises(ParamError, match="interleave_ways = 1 is not allowed with root_ports = 2"):
        cxl(**{"cxl.bridge.root_ports": 2})
    # In a graph both are the number of root_port connections: the core refuses them as values.
    d = core_graph(cxl())
    d["components"]["cxl"]["root_ports"] = 2
    with pytest.raises(_core.ConfigError, match="cxl.root_ports is derived: the number of its root_port connections"):
        _core.validate(d)


# ---------------------------------------------------------------- kernel

def test_retries_at_a_tracker_of_one_follow_littles_law():
    # One request at a time in the bridge: throughput is one line per request's time there, which an
    # idle pointer chase measures by another route (its memory stages past the host's uncore).
    s = cxl(**{"cxl.bridge.req_queue": 1})
    chase = simcxl.lmbench(s, [1 << 22], accesses=3000, warmup=100).iloc[0]  # cold: every load misses
    held = chase["memory_latency_ns_mean"] - chase["memory.stage.host_uncore_ns"]
    r = traffic(s, threads=4, requests=6000)
    assert r["read_gbps"] == pytest.approx(64 / held, rel=0.05)


def test_components_attached_while_the_loop_runs_all_fire():
    # 1000 attachments move the loop's arrays; before the fix the loop kept reading the old ones.
    assert _core._testing.attach_during_run(1000) == 1000


def test_a_cancel_from_a_progress_callback_is_an_ordinary_exception():
    assert issubclass(_core.Cancelled, Exception)
    d = core_graph(cxl())
    with pytest.raises(Exception) as e:
        _core.run_traffic(d, 4, 1.0, "random", 1 << 24, 100000, 0.0, 0.0, False, lambda f: False)
    assert isinstance(e.value, _core.Cancelled)
