"""DDR5 same-bank refresh and the idle-timer page policy: expected times
derived by hand from the JEDEC timings of the parameters."""

from __future__ import annotations

import numpy as np
import pytest

from test_dram_timing import address, burst, dram, replay


def tail(d) -> float:
    """Activate to response: tRCD, tCL, a burst and the back end."""
    return d.tRCD_ns + d.tCL_ns + burst(d) + d.backend_latency_ns


def test_a_read_during_a_same_bank_refresh_waits_only_for_its_own_bank():
    # REFsb (JESD79-5, fine-granularity mode): every tREFI2 / banks_per_group
    # = tREFI / (2 banks_per_group) the same bank of every group refreshes for
    # tRFCsb; the others serve. One rank: the first REFsb is due at
    # 3900 / 8 = 487.5 ns and takes bank 0 of each group. A
    # read to bank 1 of group 3 arriving 10 ns in goes at once (front end +
    # tRCD + tCL + a burst + back end); one to bank 0 of group 5 waits for
    # the refresh: its bank opens tRP + tRFCsb after the refresh began.
    d = dram(tREFI_ns=3900.0, refresh_per_bank=1, refresh_postpone=0)
    due = d.tREFI_ns / (2 * d.banks_per_group)
    r = replay(d, [(due + 10.0, "R", address(d, 0, 3, bank=1)), (due + 12.0, "R", address(d, 0, 5, bank=0))])
    assert r["done_ns"][0] == pytest.approx(due + 10.0 + d.frontend_latency_ns + tail(d), abs=0.01)
    assert r["done_ns"][1] == pytest.approx(due + d.tRP_ns + d.tRFCsb_ns + tail(d), abs=0.01)
    assert r["refreshes"] == 1


@pytest.mark.parametrize("per_bank", [0, 1])
def test_refresh_costs_light_random_reads_the_share_of_time_their_bank_is_away(per_bank):
    # Random reads at 1 GB/s on one rank, closed-adaptive pages (every read a
    # miss, with or without refresh). A bank is away for tRP + tRFC once per
    # tREFI under all-bank refresh (8.0 % of the time), for tRP + tRFCsb once
    # per tREFI2 = tREFI / 2 under same-bank refresh (7.5 %); a read that
    # finds its bank away waits on average half of that. So refresh adds
    # busy / interval x busy / 2: 12.45 ns all-bank, 5.52 ns same-bank.
    n = 20000
    rng = np.random.default_rng(11)
    at = np.cumsum(rng.exponential(64 / 1.0, n))
    reqs = [(float(t), "R", int(a) * 64) for t, a in zip(at, rng.integers(0, 1 << 24, n))]

    def mean_latency(refi):
        d = dram(page_policy=1, tREFI_ns=refi, refresh_postpone=0, refresh_per_bank=per_bank)
        return float((np.array(replay(d, reqs)["done_ns"]) - at)[n // 10:].mean())
    d = dram()
    busy = d.tRP_ns + (d.tRFCsb_ns if per_bank else d.tRFC_ns)
    expect = busy / (1950.0 if per_bank else 3900.0) * busy / 2
    assert mean_latency(3900.0) - mean_latency(0.0) == pytest.approx(expect, rel=0.2)


@pytest.mark.parametrize("per_bank", [0, 1])
def test_a_busy_rank_owes_at_most_the_postponement_limit(per_bank):
    # Reads faster than the bus for 40 us: the rank never idles, so it
    # postpones its first `postpone` refreshes and issues each later one when
    # it falls due (never owing more than the limit, JESD79-5); every refresh
    # due by the end ran but those postponed: due = end / interval, with the
    # interval tREFI for all-bank refresh, tREFI / (2 banks_per_group) per bank.
    d = dram(tREFI_ns=3900.0, refresh_postpone=4, refresh_per_bank=per_bank)
    reqs = [(i * 2.0, "R", (i * 64 * 4099) % (1 << 30)) for i in range(20000)]
    r = replay(d, reqs)
    interval = 3900.0 / (2 * d.banks_per_group if per_bank else 1)
    due = int(max(r["done_ns"]) // interval)
    assert r["refreshes_postponed"] == 4
    assert r["refreshes"] in (due - 4, due - 3)  # the last may fall due after the last request's decision


def test_the_idle_timer_closes_a_row_after_its_timeout():
    # page_policy 2, timeout 50 ns. A opens row 0 of bank 0, group 2: ACT at
    # its arrival + front end, column command tRCD later; the timer would
    # precharge the row 50 ns after that column command (no earlier than tRAS
    # after the ACT, tRTP after the read). A read of row 0 within the timeout
    # is a row hit (tCL + burst + back end after it clears the front end);
    # one of row 1 within it a conflict (tRP + tail from when it is ready);
    # one of row 1 after it a miss (the bank already precharged: tail only).
    d = dram(page_policy=2, page_timeout_ns=50.0)
    front = d.frontend_latency_ns
    col_a = front + d.tRCD_ns
    close = max(front + d.tRAS_ns, col_a + d.tRTP_ns, col_a + 50.0)
    a = (0.0, "R", address(d, 0, 2, row=0))
    hit = replay(d, [a, (40.0, "R", address(d, 0, 2, row=0, skip=1))])
    assert hit["done_ns"][1] == pytest.approx(40.0 + front + d.tCL_ns + burst(d) + d.backend_latency_ns, abs=0.01)
    assert hit["row_hits"] == 1
    conflict = replay(d, [a, (40.0, "R", address(d, 0, 2, row=1))])
    assert 40.0 + front < close
    assert conflict["done_ns"][1] == pytest.approx(40.0 + front + d.tRP_ns + tail(d), abs=0.01)
    assert conflict["row_conflicts"] == 1
    late = 100.0
    assert late + front > close + d.tRP_ns
    miss = replay(d, [a, (late, "R", address(d, 0, 2, row=1))])
    assert miss["done_ns"][1] == pytest.approx(late + front + tail(d), abs=0.01)
    assert (miss["row_misses"], miss["row_conflicts"]) == (2, 0)


def test_the_idle_timer_waits_for_tras_before_it_closes_a_row():
    # Timeout 0: the row closes as soon as it may, tRAS after its ACT (later
    # than tRTP after the read here). A read of another row, ready before the
    # bank has precharged (ready at 38 ns, the precharge at 37), activates
    # tRP after that: ACT_A + tRAS + tRP.
    d = dram(page_policy=2, page_timeout_ns=0.0)
    front = d.frontend_latency_ns
    assert d.tRAS_ns > d.tRCD_ns + d.tRTP_ns
    r = replay(d, [(0.0, "R", address(d, 0, 2, row=0)), (33.0, "R", address(d, 0, 2, row=1))])
    assert 33.0 + front >= front + d.tRAS_ns
    assert r["done_ns"][1] == pytest.approx(front + d.tRAS_ns + d.tRP_ns + tail(d), abs=0.01)
    assert (r["row_misses"], r["row_conflicts"]) == (2, 0)


def test_the_idle_timer_doubles_when_it_closed_a_row_too_soon_and_halves_when_too_late():
    # Timer 25 ns, at most 400. Reads of row 0 of one bank every 200 ns: each
    # finds the row its timer closed (a miss) and doubles the timer: 50, 100,
    # 200. The fifth is ready 183 ns after the fourth's column command,
    # within its 200 ns: a row hit, front end + tCL + burst + back end. A
    # read of row 1 at 950 ns finds row 0 still open (a conflict: tRP, then
    # the tail), and halves the timer to 100: a read of row 0 arriving 150 ns
    # after that one's column command finds the bank precharged (a miss).
    d = dram(page_policy=2, page_timeout_ns=25.0, page_timeout_max_ns=400.0)
    front = d.frontend_latency_ns
    row0 = [(200.0 * k, "R", address(d, 0, 2, row=0, skip=k)) for k in range(5)]
    conflict = (950.0, "R", address(d, 0, 2, row=1))
    r = replay(d, row0 + [conflict])
    hit = d.tCL_ns + burst(d) + d.backend_latency_ns
    assert r["done_ns"][4] == pytest.approx(800.0 + front + hit, abs=0.01)
    assert r["done_ns"][5] == pytest.approx(950.0 + front + d.tRP_ns + tail(d), abs=0.01)
    assert (r["row_misses"], r["row_hits"], r["row_conflicts"]) == (4, 1, 1)
    col = 950.0 + front + d.tRP_ns + d.tRCD_ns  # the conflict's column command; its row closes 100 ns later
    late = replay(d, row0 + [conflict, (col + 150.0 - front, "R", address(d, 0, 2, row=0, skip=6))])
    assert late["done_ns"][6] == pytest.approx(col + 150.0 + tail(d), abs=0.01)
    assert late["row_misses"] == 5


def test_the_timer_range_is_checked():
    from simcxl.config.params import ParamError, System
    with pytest.raises(ParamError, match=r"page_timeout_max_ns = 10 is not allowed; allowed: at least page_timeout_ns"):
        System("t", "local-dram").replace(**{"local_dram.page_timeout_ns": 50.0,
                                             "local_dram.page_timeout_max_ns": 10.0}).validate()
