"""The host's caches, access by access (_core.cache_replay): the L2's QLRU
policy against its published definition, and what a victim-filled LLC holds
beside the L2; bad input."""

import random

import pytest

import simcxl
from simcxl import _core
from simcxl.topology import core_graph

LINE = 64


def host(**kw):
    h = simcxl.load_preset("ddr-local").host.to_dict()
    h.update(kw)
    return h


class QlruH00M1R2U1:
    """One set of QLRU_H00_M1_R2_U1 as Abel and Reineke define it (nanoBench,
    "Reverse engineering of cache replacement policies in Intel
    microprocessors", ISPASS 2020): ages 0-3; a hit sets age 0 (H00); a miss
    fills the last empty way, else the first way of age 3 (R2), at age 1
    (M1); after every access the other ways age by 3 minus their oldest (U1)."""

    def __init__(self, ways):
        self.tags = [None] * ways
        self.ages = [3] * ways

    def access(self, tag):
        if tag in self.tags:
            i = self.tags.index(tag)
            self.ages[i] = 0
            hit = True
        else:
            empty = [i for i, t in enumerate(self.tags) if t is None]
            i = empty[-1] if empty else self.ages.index(3)
            self.tags[i], self.ages[i] = tag, 1
            hit = False
        oldest = max(a for j, a in enumerate(self.ages) if j != i)
        self.ages = [a if j == i else a + 3 - oldest for j, a in enumerate(self.ages)]
        return hit


def test_l2_replaces_as_qlru_h00_m1_r2_u1():
    # A 1 KiB direct-mapped L1 (16 sets) holds one line of the set under
    # test: it answers only a repeat of the last line, which the reference
    # sees as an L1 hit too. Lines 128 KiB apart share the L2's set 0.
    h = host(l1_bytes=1024, l1_assoc=1)
    sets = h["l2_bytes"] // (LINE * h["l2_assoc"])
    rnd = random.Random(7)
    # Reuse at distances around the associativity, so hits, misses and ageing all occur.
    tags = [min(int(rnd.expovariate(1 / 12)), 40) for _ in range(3000)]
    levels = _core.cache_replay(h, [t * sets * LINE for t in tags])
    ref, last, expect = QlruH00M1R2U1(h["l2_assoc"]), None, []
    for t in tags:
        # An L1 hit does not reach the L2.
        expect.append(0 if t == last else 1 if ref.access(t) else 2)
        last = t
    got = [min(x, 2) for x in levels]
    assert got == expect
    assert 300 < expect.count(1) < 2700  # the sequence exercises both hits and misses


@pytest.mark.parametrize("per_set", [24, 40])
def test_a_victim_filled_llc_holds_what_the_l2_does_not(per_set):
    # L2 and LLC of 64 sets and 16 ways each (64 KiB): one 4 KiB page has a
    # line in every set of both (the LLC's hash moves a page, not its lines'
    # order). A cyclic walk over per_set pages puts per_set lines in each set.
    h = host(l1_bytes=1024, l1_assoc=1, l2_bytes=64 << 10, llc_bytes=64 << 10, llc_assoc=16,
             llc_bimodal_insert_prob=1.0)
    pages = per_set
    walk = [p * 4096 + i * LINE for p in range(pages) for i in range(64)]
    levels = _core.cache_replay(h, walk * 4)
    steady = levels[2 * len(walk):]
    misses = sum(x == 3 for x in steady) / len(steady)
    if per_set <= 32:
        # Each line lives in one level (a hit in the LLC moves it to the
        # L2, an L2 victim goes to the LLC): 24 lines fit in 16 + 16 ways,
        # so after the first pass nothing is fetched from memory.
        assert misses == 0
        assert any(x == 2 for x in steady)  # the LLC answers what the L2 lost
    else:
        # 40 lines cannot fit in 32 ways: every pass fetches at least 8 per set.
        assert misses >= (per_set - 32) / per_set


def test_cache_replay_refuses_a_bad_host():
    with pytest.raises(_core.ConfigError, match=r"host.llc_inclusive = 2 is out of range; allowed: 0 to 1"):
        _core.cache_replay(host(llc_inclusive=2), [0])
