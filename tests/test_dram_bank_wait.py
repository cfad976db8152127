"""A request held by its bank or rank (a refresh, tRAS) must not hold the
data bus for the requests behind it: a controller issues commands to the
banks that are ready. Expected times derived by hand from the JEDEC timings."""

from __future__ import annotations

import numpy as np
import pytest

from test_dram_timing import address, burst, dram, replay


def test_a_read_to_a_refreshing_rank_does_not_hold_reads_to_the_other_rank():
    # One sub-channel, two ranks, all-bank refresh: rank 0's first refresh is
    # due at tREFI / 2 (refreshes are staggered over the ranks), rank 1's at
    # tREFI. A read to rank 0 arrives 10 ns into rank 0's refresh: its banks
    # open tRP + tRFC after the refresh began, then ACT, tRCD, tCL, a burst
    # and the back end. A read to rank 1 (banks closed) arriving 20 ns later
    # goes at once: front end, ACT, tRCD, tCL, a burst, the back end.
    d = dram(ranks=2, tREFI_ns=3900.0, refresh_postpone=0)
    due = d.tREFI_ns / 2
    r = replay(d, [(due + 10.0, "R", address(d, 0, 3)), (due + 30.0, "R", address(d, 1, 5))])
    tail = d.tRCD_ns + d.tCL_ns + burst(d) + d.backend_latency_ns
    assert r["done_ns"][1] == pytest.approx(due + 30.0 + d.frontend_latency_ns + tail, abs=0.01)
    assert r["done_ns"][0] == pytest.approx(due + d.tRP_ns + d.tRFC_ns + tail, abs=0.01)
    assert r["refreshes"] == 1


def test_a_row_conflict_waiting_for_tras_does_not_hold_a_read_to_another_bank():
    # A opens row 0 of a bank at its arrival + front end. B, to row 1 of the
    # same bank, must wait for tRAS after that ACT before the precharge, then
    # tRP, ACT, tRCD and tCL. C, to a closed bank of another group and ready
    # after B, goes at once; its data (front + tRCD + tCL after it arrives)
    # is clear of A's burst.
    d = dram()
    front, tail = d.frontend_latency_ns, d.tRCD_ns + d.tCL_ns + burst(d) + d.backend_latency_ns
    r = replay(d, [(0.0, "R", address(d, 0, 1, row=0)), (6.0, "R", address(d, 0, 1, row=1)),
                   (8.0, "R", address(d, 0, 4))])
    act_a = front
    assert r["done_ns"][0] == pytest.approx(act_a + tail, abs=0.01)
    assert r["done_ns"][2] == pytest.approx(8.0 + front + tail, abs=0.01)
    assert r["done_ns"][1] == pytest.approx(act_a + d.tRAS_ns + d.tRP_ns + tail, abs=0.01)
    assert r["row_conflicts"] == 1


def test_refresh_costs_random_reads_what_its_duty_cycle_says():
    # Random reads at light load (about 5 % of the bus) on one sub-channel of
    # two ranks, closed-adaptive pages so that every read is a miss with or
    # without refresh. A rank refreshes all its banks for tRP + tRFC every
    # tREFI; a read to it in that time waits the rest of it, on average half.
    # So refresh adds (tRP + tRFC) / tREFI x (tRP + tRFC) / 2 to the mean
    # latency (12.4 ns here; 13.3 simulated), nothing to the other rank's
    # reads. Holding the bus for the refreshing rank's reads made it 20.0 ns.
    n = 20000
    rng = np.random.default_rng(7)
    at = np.cumsum(rng.exponential(64 / 1.0, n))  # 1 GB/s, Poisson
    reqs = [(float(t), "R", int(a) * 64) for t, a in zip(at, rng.integers(0, 1 << 24, n))]
    def mean_latency(refi):
        done = np.array(replay(dram(ranks=2, page_policy=1, tREFI_ns=refi, refresh_postpone=0), reqs)["done_ns"])
        return float((done - at)[n // 10:].mean())
    busy = dram().tRP_ns + dram().tRFC_ns
    expect = busy / 3900.0 * busy / 2
    assert mean_latency(3900.0) - mean_latency(0.0) == pytest.approx(expect, rel=0.2)
