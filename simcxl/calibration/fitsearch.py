"""One-parameter searches the calibration fits each knob with: a real parameter by secant steps
and Brent's method, an integer one by a bracketing walk."""

from __future__ import annotations

import math
from typing import Callable, Dict

from scipy.optimize import brentq


def fit_real(f: Callable[[float], float], lo: float, hi: float, tol: float, x0: float) -> float:
    """Root of f within [lo, hi], else the better bound. A latency is close to
    linear in a latency parameter with a slope of one or two, so secant steps
    from the start value (the base preset's, usually near the answer) converge
    in two or three evaluations, each a gem5 run on that engine; the bracket
    and brentq take over if they do not."""
    def clip(x: float) -> float:
        return min(max(x, lo), hi)

    a = clip(x0)
    fa = f(a)
    if abs(fa) <= tol:
        return a
    b = clip(a - fa)
    if b != a:
        fb = f(b)
        for _ in range(4):
            if abs(fb) <= tol:
                return b
            if fb == fa:
                break
            a, fa, b = b, fb, clip(b - fb * (b - a) / (fb - fa))
            if b == a:
                break
            fb = f(b)
    flo, fhi = f(lo), f(hi)
    if flo * fhi > 0:
        return lo if abs(flo) < abs(fhi) else hi
    return brentq(f, lo, hi, xtol=0.05, rtol=1e-3, maxiter=30)


def fit_integer(f: Callable[[float], float], lo: int, hi: int, x0: float) -> int:
    """Smallest |f| over the integers of [lo, hi], f rising with the value.
    From the start value (the base preset's) it steps outwards, each step
    sized by the secant to the root, until the sign changes; then it narrows
    the bracket to two neighbours by secant steps, a bisection whenever one
    end has stayed put, since bandwidth saturates with queue depth. A start
    near the answer costs four or five evaluations (each a gem5 run on that
    engine) where a scan of the whole range would cost a dozen."""
    vals: Dict[int, float] = {}

    def at(v: int) -> float:
        if v not in vals:
            vals[v] = f(v)
        return vals[v]

    def best() -> int:
        return min(sorted(vals), key=lambda v: abs(vals[v]))

    a = min(max(int(round(x0)), lo), hi)
    fa = at(a)
    if fa == 0:
        return a
    up = fa < 0
    step = max(1, a // 8)
    while True:
        b = min(max(a + (step if up else -step), lo), hi)
        if b == a:
            return best()  # the root lies beyond the range
        fb = at(b)
        if (fb < 0) != (fa < 0) or fb == 0:
            break
        # A flat stretch (a saturated queue) gives no secant: take the longest step.
        reach = math.ceil(1.25 * abs(fb * (b - a) / (fb - fa))) if fb != fa else 4 * step
        step = min(4 * step, max(step, reach))
        a, fa = b, fb
    p, q = (a, b) if a < b else (b, a)
    fp, fq = vals[p], vals[q]
    last, same = None, 0  # the end that moved last, and how many times in a row
    while q - p > 1 and fp != 0 and fq != 0:
        m = (p + q) // 2 if same >= 2 else min(max(int(round(p - fp * (q - p) / (fq - fp))), p + 1), q - 1)
        fm = at(m)
        side = "p" if (fm < 0) == (fp < 0) else "q"
        if side == "p":
            p, fp = m, fm
        else:
            q, fq = m, fm
        same = same + 1 if side == last else 1
        last = side
    return best()
