"""DRAM command timing: one controller fed requests at chosen times, each
expected time derived by hand from the JEDEC timings of the parameters."""

from __future__ import annotations

import pytest

from simcxl import _core
from simcxl.config.params import ParamError, System

from conftest import quiet_dram

T0 = 1000.0  # the pattern starts here, after the rows it uses were opened


def dram(**kw):
    """One DDR5-4800 sub-channel of one rank, refresh off (conftest.quiet_dram)."""
    kw.setdefault("channels", 1)
    kw.setdefault("ranks", 1)
    return quiet_dram(**kw)


def burst(d) -> float:
    return 2000.0 / d.data_rate_mts * d.burst_length / 2


def address(d, rank: int, group: int, bank: int = 0, row: int = 0, skip: int = 0) -> int:
    """A line at (rank, bank group, bank, row); skip picks a later line of it."""
    want = (0, rank, group * d.banks_per_group + bank, row)
    lines = range(0, 1 << 16)
    found = [a * 64 for a, loc in zip(lines, _core.dram_info(d.to_dict(), [a * 64 for a in lines])["decode"])
             if tuple(loc) == want]
    return found[skip]


def replay(d, reqs):
    return _core.dram_replay(d.to_dict(), reqs)


def test_a_read_after_a_write_waits_twtr_l_in_its_bank_group_and_twtr_s_elsewhere():
    # A write to a closed bank at 0: ready after the front end, ACT then, its
    # data from ACT + tRCD + tCWL for a burst. A read ready later, to another
    # bank, may issue its column command tWTR after the write data ends:
    # tWTR_L in the same bank group, tWTR_S in another. Its response follows
    # tCL, a burst and the back end later.
    d = dram(tWTR_ns=10.0, tWTR_S_ns=2.5)
    write_end = d.frontend_latency_ns + d.tRCD_ns + d.tCWL_ns + burst(d)
    for group, wtr in ((2, d.tWTR_ns), (5, d.tWTR_S_ns)):
        r = replay(d, [(0.0, "W", address(d, 0, 2, bank=0)), (6.0, "R", address(d, 0, group, bank=1))])
        assert r["done_ns"][1] == pytest.approx(write_end + wtr + d.tCL_ns + burst(d) + d.backend_latency_ns,
                                                abs=0.005)
        assert r["turnarounds"] == 1


def test_a_rank_switch_costs_trtrs_and_the_scheduler_keeps_to_the_rank_on_the_bus():
    # Reads to open rows (row hits) in other bank groups follow at the burst
    # rate (tCCD_S = the burst) in one rank; a burst of the other rank waits
    # tRTRS more for the bus hand-over. Two reads, one per rank: the second
    # ends a burst + tRTRS after the first. Sixteen queued together,
    # alternately in rank 0 and rank 1: row hits first, then the earliest
    # data, so the rank on the bus serves its eight before the other's eight,
    # one hand-over in all: 15 bursts + tRTRS from the first to the last.
    d = dram(ranks=2, tRTRS_ns=2.0)
    def pattern(ranks):
        opens = [(0.0, "R", address(d, r, g)) for r in set(ranks) for g in range(8)]
        pat = [(T0, "R", address(d, r, i % 8 if len(set(ranks)) == 1 else (i // 2) % 8, skip=1 + i // 16))
               for i, r in enumerate(ranks)]
        done = replay(d, opens + pat)["done_ns"][len(opens):]
        return max(done) - min(done)
    assert pattern([0, 1]) == pytest.approx(burst(d) + d.tRTRS_ns, abs=0.01)
    n = 16
    assert pattern([i % 2 for i in range(n)]) == pytest.approx((n - 1) * burst(d) + d.tRTRS_ns, abs=0.01)
    assert pattern([0] * n) == pytest.approx((n - 1) * burst(d), abs=0.01)


def test_write_then_read_batch_takes_the_time_its_timings_add_up_to():
    # Rows open in all 8 bank groups. At T0, 8 writes (one per group, row
    # hits) go back to back at tCCD_S = the burst after tCWL; 8 reads arriving
    # just after wait for the last write's data end + tWTR_S (the first
    # group's tWTR_L ends sooner), then follow tCL later, back to back:
    #   T0 + front + tCWL + 8 bursts + tWTR_S + tCL + 8 bursts + back.
    d = dram()
    opens = [(0.0, "R", address(d, 0, g)) for g in range(8)]
    writes = [(T0, "W", address(d, 0, g, skip=1)) for g in range(8)]
    reads = [(T0 + 30.0, "R", address(d, 0, g, skip=2)) for g in range(8)]
    r = replay(d, opens + writes + reads)
    expect = T0 + d.frontend_latency_ns + d.tCWL_ns + 8 * burst(d) + d.tWTR_S_ns + d.tCL_ns + 8 * burst(d) + \
        d.backend_latency_ns
    assert max(r["done_ns"]) == pytest.approx(expect, abs=0.01)
    # Bandwidth of the pattern: 16 lines over that span from T0.
    assert 16 * 64 / (max(r["done_ns"]) - T0) == pytest.approx(16 * 64 / (expect - T0), rel=1e-4)


@pytest.mark.parametrize("cap, writes_first", [(0, 6), (4, 4)])
def test_a_write_burst_gives_waiting_reads_the_bus_after_max_writes(cap, writes_first):
    # Rows open in all 8 bank groups; at T0 eight writes (row hits, one per
    # group) fill an 8-entry write queue (high watermark 1.0) and eight reads
    # wait. Without a cap the burst drains to the low watermark (0.25: two
    # left), six writes; with max_writes_per_switch = 4 it stops after four.
    # The reads then go back to back from the last write's data end + tWTR_S
    # + tCL (a read whose group was just written is ordered after the others,
    # which covers its tWTR_L), one burst each:
    #   T0 + front + tCWL + k bursts + tWTR_S + tCL + (i + 1) bursts + back.
    d = dram(write_queue=8, write_high_watermark=1.0, write_low_watermark=0.25, min_writes_per_switch=4,
             max_writes_per_switch=cap, posted_writes=0)
    opens = [(0.0, "R", address(d, 0, g)) for g in range(8)]
    writes = [(T0, "W", address(d, 0, g, skip=1)) for g in range(8)]
    reads = [(T0, "R", address(d, 0, g, skip=2)) for g in range(8)]
    r = replay(d, opens + writes + reads)
    start = T0 + d.frontend_latency_ns + d.tCWL_ns + writes_first * burst(d) + d.tWTR_S_ns + d.tCL_ns
    expect = [start + (i + 1) * burst(d) + d.backend_latency_ns for i in range(8)]
    assert sorted(r["done_ns"][16:]) == pytest.approx(expect, abs=0.01)
    # Turns: from the opening reads to writes, to reads, to the last writes.
    assert r["write_bursts"] == 2 and r["turnarounds"] == 3


def test_max_writes_per_switch_below_the_minimum_is_refused():
    with pytest.raises(ParamError, match=r"max_writes_per_switch = 4 is not allowed; allowed: 0 \(no limit\) or at "
                                         r"least min_writes_per_switch \(16\)"):
        System("t", "local-dram", local_dram=dram(max_writes_per_switch=4)).validate()
    with pytest.raises(ValueError, match="max_writes_per_switch = 4 is not allowed"):
        _core.dram_replay(dram(max_writes_per_switch=4).to_dict(), [])


def test_activates_in_one_bank_group_wait_trrd_l_and_in_others_trrd_s():
    # Two reads to closed banks, both ready after the front end: the second
    # ACT waits tRRD_L (same group) or tRRD_S (another), and its data ends
    # that much after the first's would have allowed it (tRRD > the burst).
    d = dram(tRRD_ns=4.0, tRRD_L_ns=9.0, tCCD_L_ns=3.0, tCCD_S_ns=3.0)
    first = d.frontend_latency_ns + d.tRCD_ns + d.tCL_ns + burst(d) + d.backend_latency_ns
    for group, rrd in ((0, d.tRRD_L_ns), (3, d.tRRD_ns)):  # tRRD_ns is tRRD_S
        r = replay(d, [(0.0, "R", address(d, 0, 0, bank=0)), (0.0, "R", address(d, 0, group, bank=1))])
        assert sorted(r["done_ns"]) == pytest.approx([first, first + rrd], abs=0.005)


def test_the_scheduler_counts_the_four_activate_window_when_it_picks():
    # Four reads to closed banks of rank 0 (four bank groups) open rows
    # tRRD_S apart and go at the burst rate. A fifth to rank 0 must wait for
    # tFAW after the first activate; a sixth, to rank 1 and queued after it,
    # can go right after the four, a hand-over (tRTRS) later. The scheduler
    # picks by when the data can go, so the sixth goes first:
    #   sixth: front + tRCD + tCL + 4 bursts + tRTRS, then a burst and the back end;
    #   fifth: front + tFAW (from the first ACT) + tRCD + tCL, a burst, the back end.
    d = dram(ranks=2, tFAW_ns=40.0, tRTRS_ns=2.0)
    reqs = [(0.0, "R", address(d, 0, g)) for g in range(4)]
    reqs += [(0.0, "R", address(d, 0, 4)), (0.0, "R", address(d, 1, 0))]
    done = replay(d, reqs)["done_ns"]
    b, front, back = burst(d), d.frontend_latency_ns, d.backend_latency_ns
    assert done[5] == pytest.approx(front + d.tRCD_ns + d.tCL_ns + 4 * b + d.tRTRS_ns + b + back, abs=0.01)
    assert done[4] == pytest.approx(front + d.tFAW_ns + d.tRCD_ns + d.tCL_ns + b + back, abs=0.01)


def test_read_to_precharge_waits_trtp():
    # A read opens row 0 of a bank; a read to row 1 of the same bank must
    # precharge it, which waits for tRAS after the ACT and tRTP after the
    # read's column command: with tRTP far above tRAS, PRE = col + tRTP, then
    # tRP, ACT, tRCD, tCL, a burst and the back end.
    d = dram(tRAS_ns=0.0, tRTP_ns=40.0)
    col = d.frontend_latency_ns + d.tRCD_ns
    r = replay(d, [(0.0, "R", address(d, 0, 1, row=0)), (0.0, "R", address(d, 0, 1, row=1))])
    assert max(r["done_ns"]) == pytest.approx(col + d.tRTP_ns + d.tRP_ns + d.tRCD_ns + d.tCL_ns + burst(d) +
                                              d.backend_latency_ns, abs=0.005)
    assert r["row_conflicts"] == 1


def busy_rank(d, micros: float):
    """Reads offered every 2 ns, faster than a burst: the rank never idles."""
    reqs = [(i * 2.0, "R", (i * 64 * 4099) % (1 << 30)) for i in range(int(micros * 500))]
    return replay(d, reqs)


@pytest.mark.parametrize("postpone", [0, 4])
def test_a_busy_rank_postpones_refreshes_up_to_the_limit(postpone):
    # All-bank refresh every tREFI. A rank with queued requests postpones up
    # to `postpone` of them; past the limit each one runs when it falls due
    # (the rank still owes the others), so the longest pause between
    # responses is one refresh, tRP + tRFC, either way. Over 40 us,
    # 40 / 3.9 = 10 fall due.
    d = dram(tREFI_ns=3900.0, refresh_postpone=postpone)
    r = busy_rank(d, 40.0)
    done = sorted(t for t in r["done_ns"] if t > 0)
    gap = max(b - a for a, b in zip(done, done[1:]))
    stall = d.tRP_ns + d.tRFC_ns
    # Responses keep coming for up to the scheduling lookahead (tRP + tRCD +
    # tCL) after the refresh starts, and resume tRCD + tCL + a burst after the
    # banks reopen.
    assert stall - (d.tRP_ns + d.tRCD_ns + d.tCL_ns) <= gap <= stall + d.tRCD_ns + d.tCL_ns + d.tRAS_ns
    due = int(done[-1] // 3900.0)
    assert r["refreshes_postponed"] == postpone
    assert r["refreshes"] == due - postpone


def test_an_idle_rank_pays_the_refreshes_it_postponed():
    # Busy until T (refreshes due then: the first 4 postponed, the rest on
    # time), then idle until 30 us: the 4 owed run back to back from the
    # last burst (4 x (tRP + tRFC) = 1.25 us fit in the gap) and those due in
    # the gap at their time, so by the end none is owed: every refresh due
    # by then ran, and 4 were postponed.
    d = dram(tREFI_ns=3900.0, refresh_postpone=4)
    busy = [(i * 2.0, "R", (i * 64 * 4099) % (1 << 30)) for i in range(5000)]
    later = [(30000.0 + i * 2.0, "R", (i * 64 * 4111) % (1 << 30)) for i in range(100)]
    r = replay(d, busy + later)
    t_busy = max(r["done_ns"][:len(busy)])
    assert t_busy + 4 * (d.tRP_ns + d.tRFC_ns) < 30000 and t_busy > 4 * 3900
    assert r["refreshes_postponed"] == 4
    assert r["refreshes"] == int(max(r["done_ns"]) // 3900)


def test_same_bank_refresh_runs_banks_per_group_times_as_often_and_stalls_less():
    # DDR5 REFsb (fine-granularity mode, JESD79-5): every tREFI2 / banks_per_group
    # = tREFI / (2 banks_per_group) one bank of each group refreshes for
    # tRFCsb, the others keep working.
    ab = dram(tREFI_ns=3900.0, refresh_postpone=0)
    sb = dram(tREFI_ns=3900.0, refresh_postpone=0, refresh_per_bank=1)
    a, s = busy_rank(ab, 20.0), busy_rank(sb, 20.0)
    span = max(s["done_ns"])
    assert s["refreshes"] == pytest.approx(span / (3900.0 / (2 * sb.banks_per_group)), abs=1)
    assert a["refreshes"] == pytest.approx(max(a["done_ns"]) / 3900.0, abs=1)
    assert max(s["done_ns"]) < max(a["done_ns"])


def test_refresh_options_are_checked():
    with pytest.raises(ParamError, match="refresh_per_bank"):
        System("t", "local-dram").replace(**{"local_dram.refresh_per_bank": 2}).validate()
    with pytest.raises(ParamError, match="2 x tRFCsb_ns x banks_per_group"):
        System("t", "local-dram").replace(**{"local_dram.refresh_per_bank": 1, "local_dram.tREFI_ns": 500.0}).validate()


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
def test_row_hit_reads_at_random_times_queue_for_the_data_bus_as_md1_says(rho):
    # Reads to open rows, one bank group after another (tCCD_S = the burst, so
    # no other timing binds), arriving as a Poisson stream: the data bus is a
    # single server with a deterministic service time S, one burst. Queueing
    # theory (M/D/1, Pollaczek-Khinchine) puts the mean wait at
    # rho S / (2 (1 - rho)) on top of the unloaded front end + tCL + burst +
    # back end. An M/M/1 server would wait twice that, periodic arrivals none.
    import random

    d = dram()
    s = burst(d)
    rows = {g: [address(d, 0, g, skip=k) for k in range(8)] for g in range(d.bank_groups)}
    opened = [(float(g), "R", rows[g][0]) for g in range(d.bank_groups)]
    rng, t, reqs = random.Random(7), T0, []
    n = 20000
    for i in range(n):
        t += rng.expovariate(rho / s)
        g = i % d.bank_groups
        reqs.append((round(t, 3), "R", rows[g][1 + (i // d.bank_groups) % 7]))
    r = replay(d, opened + reqs)
    assert r["row_hits"] == n and r["refreshes"] == 0
    done = r["done_ns"][len(opened):]
    wait = sum(dn - a for dn, (a, _, _) in zip(done, reqs)) / n - (
        d.frontend_latency_ns + d.tCL_ns + s + d.backend_latency_ns)
    assert wait == pytest.approx(rho * s / (2 * (1 - rho)), rel=0.06)


@pytest.mark.parametrize("policy", [0, 1])
def test_page_policy_decides_whether_a_later_access_pays_the_precharge(policy):
    # Bank 0 of group 2: a read of row 0, and one of row 1 long after. Open page keeps row 0 open,
    # so the second pays tRP before its activate; closed adaptive precharged the bank once no
    # queued request wanted row 0, so it pays only tRCD. Each by hand:
    #   front + [tRP] + tRCD + tCL + burst + back after its arrival.
    d = dram(page_policy=policy)
    r = replay(d, [(0.0, "R", address(d, 0, 2, row=0)), (T0, "R", address(d, 0, 2, row=1))])
    miss = d.frontend_latency_ns + d.tRCD_ns + d.tCL_ns + burst(d) + d.backend_latency_ns
    assert r["done_ns"][0] == pytest.approx(miss, abs=0.005)
    assert r["done_ns"][1] == pytest.approx(T0 + miss + (d.tRP_ns if policy == 0 else 0), abs=0.005)
    assert (r["row_conflicts"], r["row_misses"]) == ((1, 1) if policy == 0 else (0, 2))


def test_closed_adaptive_keeps_a_row_open_for_a_queued_hit():
    # Two reads of one row queued together: the first leaves the row open for the second (a row
    # hit), which follows a burst later (tCCD_L = 5 ns within the bank group: the column command,
    # not the burst, spaces them); a third, of another row, arriving later finds the bank closed.
    d = dram(page_policy=1)
    r = replay(d, [(0.0, "R", address(d, 0, 2, row=0)), (0.0, "R", address(d, 0, 2, row=0, skip=1)),
                   (T0, "R", address(d, 0, 2, row=1))])
    miss = d.frontend_latency_ns + d.tRCD_ns + d.tCL_ns + burst(d) + d.backend_latency_ns
    assert r["row_hits"] == 1 and r["row_conflicts"] == 0
    assert r["done_ns"][1] - r["done_ns"][0] == pytest.approx(max(d.tCCD_L_ns, burst(d)), abs=0.005)
    assert r["done_ns"][2] == pytest.approx(T0 + miss, abs=0.005)
