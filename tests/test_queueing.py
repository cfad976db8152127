"""Loaded latency end to end against queueing theory.

A whole system (cores, caches, uncore, the inter-socket link, the remote
home's DRAM) is loaded by a Poisson stream of random reads, and the one
resource it is made to hinge on, a slow inter-socket link, is a single
server with a deterministic service time: every read's data crosses it back
as one message of `data_bytes`, in `data_bytes / bandwidth` on the wire.
Queueing theory (M/D/1, Pollaczek-Khinchine) then gives the mean wait there,
rho S / (2 (1 - rho)); the request direction, whose messages are
`req_bytes` long, is an M/D/1 queue of its own at a fifth of the load. The
expected latency is the unloaded one plus both waits; everything else (the
DRAM spread over 16 channels, the caches) is far from its limits and adds
next to nothing. An M/M/1 server would wait twice as long, so the check
tells the two apart; evenly spaced (periodic) arrivals do not wait at all.
"""

from __future__ import annotations

import pytest

import simcxl
from simcxl.config.params import ParamError

BW = 4.0  # GB/s per direction of the inter-socket link: the bottleneck
FOOTPRINT = 64 << 30  # random lines over 64 GiB: the 97.5 MiB LLC keeps almost none


def system():
    return simcxl.load_preset("ddr-remote").replace(**{
        "remote.link.bandwidth_gbps": BW, "remote.link.max_outstanding": 4096,
        "remote.link.directory_writes": 0, "remote.dram.channels": 16, "remote.dram.tREFI_ns": 0,
        "host.mshrs_per_core": 64})


def md1_wait(rho: float, service_ns: float) -> float:
    return rho * service_ns / (2 * (1 - rho))


def run(rho: float, arrivals: str = "poisson", requests: int = 60000):
    s = system()
    back_ns = s.remote.link.data_bytes / BW  # bytes / (GB/s) = ns
    rate = rho / back_ns * 64  # GB/s of 64-byte reads that load the link back to rho
    r = simcxl.traffic(s, threads=32, read_fraction=1.0, footprint_bytes=FOOTPRINT, requests=requests,
                       rate_gbps=rate, arrivals=arrivals).iloc[0]
    return r, back_ns


@pytest.fixture(scope="module")
def unloaded():
    r, _ = run(0.02)
    return r["read_latency_ns_mean"]


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_reads_queue_at_the_bottleneck_link_as_md1_says(unloaded, rho):
    r, back_ns = run(rho)
    lam = r["read_gbps"] / 64  # reads per ns, measured
    out_ns = -(-system().remote.link.req_bytes // 16) * 16 / BW
    rho_back, rho_out = lam * back_ns, lam * out_ns
    assert rho_back == pytest.approx(rho, rel=0.03)  # the open loop delivers the load asked for
    expect = unloaded + md1_wait(rho_back, back_ns) + md1_wait(rho_out, out_ns)
    # Within a tenth of the wait (and 1 ns): M/M/1's would be twice it.
    wait = expect - unloaded
    assert r["read_latency_ns_mean"] == pytest.approx(expect, abs=max(1.0, 0.1 * wait))


def test_evenly_spaced_arrivals_do_not_queue(unloaded):
    # Periodic threads start a share of the interval apart: together they
    # arrive every S / rho, and a deterministic server that takes S never
    # has one waiting (D/D/1), however high rho < 1 is.
    r, back_ns = run(0.8, arrivals="periodic")
    assert r["read_gbps"] / 64 * back_ns == pytest.approx(0.8, rel=0.03)
    assert r["read_latency_ns_mean"] == pytest.approx(unloaded, abs=1.0)


def test_threads_that_pause_between_accesses_are_not_in_step(unloaded):
    # MLC's loaded-latency threads pause a fixed time after each access
    # (inject_delay_ns, its -d). 32 such threads at 0.8 of the link carry
    # the load of the periodic run above and, started a share of the pause
    # apart, arrive evenly spaced: no wait. Started in step they would
    # arrive 32 at once, and the k-th of each batch would wait k services:
    # 15.5 S (310 ns) on average.
    s = system()
    back_ns = s.remote.link.data_bytes / BW
    r = simcxl.traffic(s, threads=32, read_fraction=1.0, footprint_bytes=FOOTPRINT, requests=60000,
                       inject_delay_ns=32 * back_ns / 0.8).iloc[0]
    assert r["read_gbps"] / 64 * back_ns == pytest.approx(0.8, rel=0.03)
    assert r["read_latency_ns_mean"] == pytest.approx(unloaded, abs=1.0)


def test_arrivals_must_be_periodic_or_poisson():
    with pytest.raises(ParamError, match="arrivals = 'bursty' is not allowed; allowed values: periodic, poisson"):
        simcxl.traffic(system(), threads=2, rate_gbps=1.0, requests=1000, arrivals="bursty")
