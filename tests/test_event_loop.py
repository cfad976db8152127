"""The standalone event loop: components fire in the order of a plain
reference model (the earliest (time, slot) among pending wake-ups, each
component holding one), for random schedules; and whole runs are
bit-identical when repeated, at root-port counts whose loops hold many
components."""

from typing import Dict, List, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

import simcxl
from simcxl import _core
from conftest import fuzz

WATCH_EVERY = 1 << 14  # events between Watch checks (sim.hpp)


def reference(components: int, initial, actions, untils) -> Tuple[List[Tuple[int, int]], List[int]]:
    """What the loop must do, from the Component contract alone: a wake-up
    earlier than now is now, one later than the one pending is ignored; the next
    event is the least (time, slot), at most the run's limit."""
    pending: Dict[int, int] = {}   # slot -> its one wake-up
    gone = set()
    count = components
    now = 0
    fired = []

    def wake(i, delay):
        if i in gone:
            return
        t = max(now + delay, 0, now)
        if t < pending.get(i, 1 << 64):
            pending[i] = t

    for i, d in initial:
        wake(i, d)
    stops = []
    k = 0
    for until in untils:
        stopped = False
        while not stopped and pending:
            t, i = min((t, i) for i, t in pending.items())
            if until is not None and t > until:
                break
            now = t
            del pending[i]
            fired.append((i, t))
            for kind, target, delay in (actions[k] if k < len(actions) else []):
                if kind == "wake":
                    wake(target, delay)
                elif kind == "spawn":
                    count += 1
                    wake(count - 1, delay)
                elif kind == "detach":
                    gone.add(target)
                    pending.pop(target, None)
                elif kind == "stop":
                    stopped = True
            k += 1
        stops.append(now)
    return fired, stops


@st.composite
def schedules(draw):
    """Components with a few wake-ups each; each event wakes some (itself
    included, often at the same time: ties), sometimes earlier than a pending
    wake-up, later, or in the past; spawns, detaches and stops; run limits."""
    n = draw(st.integers(1, 40))
    delays = st.one_of(st.integers(0, 3), st.integers(-50, 2000), st.sampled_from([0, 0, 1000]))
    initial = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 500)), min_size=1, max_size=2 * n))
    steps = draw(st.integers(0, 150))
    actions, count = [], n
    for _ in range(steps):
        acts = []
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["wake"] * 12 + ["spawn"] * 2 + ["detach", "stop"]))
            if kind == "spawn":
                count += 1
            acts.append((kind, draw(st.integers(0, count - 1)), draw(delays)))
        actions.append(acts)
    untils = draw(st.lists(st.one_of(st.none(), st.integers(0, 20000)), min_size=1, max_size=4))
    return n, initial, actions, untils


def _run(n, initial, actions, untils, watch=False):
    return _core._testing.event_loop_script(n, initial, actions, untils, watch)


@fuzz(400)
@given(schedules())
def test_components_fire_in_the_reference_models_order(s):
    n, initial, actions, untils = s
    got = _run(n, initial, actions, untils)
    fired, stops = reference(n, initial, actions, untils)
    assert got["fired"] == fired
    assert got["stops"] == stops
    assert got["events"] == len(fired)


def test_equal_times_go_to_the_component_created_first():
    # Five components all due at t=100, woken in reverse order; then the last
    # one, firing, wakes the first two at its own time.
    got = _run(5, [(i, 100) for i in reversed(range(5))], [[]] * 4 + [[("wake", 1, 0), ("wake", 0, 0)]], [None])
    assert got["fired"] == [(0, 100), (1, 100), (2, 100), (3, 100), (4, 100), (0, 100), (1, 100)]


def test_a_run_stops_at_its_limit_and_the_next_continues():
    got = _run(2, [(0, 10), (1, 30)], [[("wake", 0, 10)], [("wake", 0, 5)]], [15, 25, None])
    # 0 at 10 (re-wakes at 20), stop before 20; 0 at 20 (re-wakes at 25), then 25; 1 at 30.
    assert got["fired"] == [(0, 10), (0, 20), (0, 25), (1, 30)]
    assert got["stops"] == [10, 25, 30]


def test_components_attached_while_the_loop_runs_take_the_next_slots():
    # 0 spawns 100 components (slots 1..100, due in reverse slot order) at one
    # event: the loop outgrows its leaves several times within that event.
    acts = [[("spawn", 0, 1000 - i) for i in range(100)]]
    got = _run(1, [(0, 0)], acts, [None])
    assert got["fired"] == [(0, 0)] + [(i, 1000 - i + 1) for i in range(100, 0, -1)]


def test_a_detached_component_never_fires_and_may_detach_itself():
    got = _run(3, [(0, 5), (1, 6), (2, 7)], [[("detach", 0, 0), ("detach", 2, 0)]], [None])
    assert got["fired"] == [(0, 5), (1, 6)]


def test_the_watch_runs_every_2_14_events():
    # One component re-waking itself every 3 ps for 2.5 x 2^14 events.
    total = WATCH_EVERY * 5 // 2
    got = _run(1, [(0, 0)], [[("wake", 0, 3)]] * (total - 1), [None], watch=True)
    assert got["events"] == total
    # Checked after events 2^14 and 2^15, at the time of that event (3 ps apart).
    assert got["checks"] == [(k * WATCH_EVERY, 3 * (k * WATCH_EVERY - 1)) for k in (1, 2)]


def test_bad_scripts_are_config_errors():
    with pytest.raises(_core.ConfigError, match="component 3 does not exist"):
        _run(2, [(3, 0)], [], [None])
    with pytest.raises(_core.ConfigError, match="allowed: wake, spawn, detach, stop"):
        _run(1, [(0, 0)], [[("jump", 0, 0)]], [None])


@pytest.mark.parametrize("ports", [3, 16])
def test_runs_with_many_root_ports_are_bit_identical(ports):
    # 3 ports: 18 components (a loop of 32 leaves, not all used); 16 ports: 85.
    s = simcxl.load_preset("cxl-asic").replace(**{"cxl.bridge.root_ports": ports,
                                                  "cxl.bridge.interleave_ways": ports})
    a = simcxl.traffic(s, threads=16, read_fraction=0.7, requests=30000).iloc[0].to_dict()
    b = simcxl.traffic(s, threads=16, read_fraction=0.7, requests=30000).iloc[0].to_dict()
    assert a == b
    sa = simcxl.stream(s, ["triad"], threads=8, lines_per_thread=2000)
    sb = simcxl.stream(s, ["triad"], threads=8, lines_per_thread=2000)
    assert sa.equals(sb)
