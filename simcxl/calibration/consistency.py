"""Testbed consistency: measured STREAM kernels that move the same traffic should agree; a pair that
does not bounds what any fit can reach, and with all four kernels measured, the one out of line is named."""

from __future__ import annotations

from typing import Dict, List, Sequence

from .testbed import Point, Testbed


def err_pct(sim: float, meas: float) -> float:
    """A simulated value's error against a measured one, in percent."""
    return (sim - meas) / meas * 100.0


# STREAM kernel pairs that move the same bytes per element on one binary: copy
# and scale read one array and write another; add and triad read two and write
# a third. A memory model gives each pair about the same traffic, so a measured
# ratio far from 1 bounds what any fit can reach.
SAME_TRAFFIC = (("copy", "scale"), ("add", "triad"))
CONSISTENCY_TOLERANCE = 0.05

# Lines moved per line STREAM counts: a write-allocate store reads its line for
# ownership too; a non-temporal store writes it alone.
REAL_PER_COUNTED = {"write-allocate": {"copy": 3 / 2, "scale": 3 / 2, "add": 4 / 3, "triad": 4 / 3},
                    "non-temporal": {"copy": 1.0, "scale": 1.0, "add": 1.0, "triad": 1.0}}


def _real(p: Point) -> float:
    return p.measured * REAL_PER_COUNTED[p.stores][p.x]


def consistency(tb: Testbed, memories: Sequence[str]) -> List[dict]:
    """Measured STREAM pairs that should agree, per memory: the ratio of the
    traffic they really move (the same as STREAM's figures when their stores
    are alike), whether it is within CONSISTENCY_TOLERANCE of 1, and the least
    error that a model moving the same traffic in both must take on the second
    while it fits the first within 2 %."""
    out = []
    for m in memories:
        # Pairs are formed at one thread count; a kernel measured both ways pairs with each.
        groups: Dict[int, Dict[str, List[Point]]] = {}
        for p in tb.points_of(m, "stream"):
            groups.setdefault(p.threads or 0, {}).setdefault(p.x, []).append(p)
        for by_kernel in groups.values():
            for a, b in SAME_TRAFFIC:
                for pa in by_kernel.get(a, []):
                    for pb in by_kernel.get(b, []):
                        out.append(_pair(m, pa, pb, by_kernel))
    return out


def _pair(memory: str, pa: Point, pb: Point, by_kernel: Dict[str, List[Point]]) -> dict:
    ratio = _real(pa) / _real(pb)
    # With real(a) = real(b) and |sim(a) / meas(a) - 1| <= 2 %, the closest sim(b) to meas(b).
    scale = pb.measured / _real(pb)
    v = min(max(pb.measured, _real(pa) * 0.98 * scale), _real(pa) * 1.02 * scale)
    c = {"memory": memory, "kernels": [pa.x, pb.x], "measured": [pa.measured, pb.measured],
         "stores": [pa.stores, pb.stores], "ratio": ratio, "consistent": abs(ratio - 1) <= CONSISTENCY_TOLERANCE,
         "least_error_pct_on_second": abs(err_pct(v, pb.measured)), "where": [pa.where, pb.where]}
    if not c["consistent"] and all(len(ps) == 1 for ps in by_kernel.values()):
        c.update(_out_of_line({k: ps[0] for k, ps in by_kernel.items()}))
    return c


def _out_of_line(st: Dict[str, Point]) -> dict:
    """With all four kernels measured: the traffic each really moves, and the
    kernel out of line, if the other three agree within CONSISTENCY_TOLERANCE
    and it is twice that away from them. A memory that bounds bandwidth moves
    about the same traffic whatever the kernel."""
    if set(st) != set(REAL_PER_COUNTED["write-allocate"]):
        return {}
    real = {k: _real(p) for k, p in st.items()}
    for k in real:
        rest = [v for j, v in real.items() if j != k]
        mean = sum(rest) / len(rest)
        if max(abs(v / mean - 1) for v in rest) <= CONSISTENCY_TOLERANCE and \
                abs(real[k] / mean - 1) > 2 * CONSISTENCY_TOLERANCE:
            # A binary whose copy loop became memcpy writes copy's lines non-temporally, its other kernels
            # not; such a point is no longer out of line when counted so.
            nt = st[k].measured * REAL_PER_COUNTED["non-temporal"][k]
            return {"real_traffic_gbps": real, "out_of_line": k, "where_out_of_line": st[k].where,
                    "in_line_if_non_temporal": st[k].stores == "write-allocate"
                    and abs(nt / mean - 1) <= 2 * CONSISTENCY_TOLERANCE}
    return {"real_traffic_gbps": real, "out_of_line": None}
