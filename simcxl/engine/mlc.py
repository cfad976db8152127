"""Intel Memory Latency Checker's traffic modes, for ``loaded-latency``.

MLC names its load generators' traffic by ``-R`` (reads only) and ``-Wn``
(``mlc --help``, v3.x). Its ratios count memory traffic: a store with read for
ownership (RFO) moves a line each way, so ``-W5`` ("1:1 read-write") is a
thread that only stores, and ``-W2`` ("2:1") one load per store. The
non-temporal modes write whole lines without reading them. ``ops`` is one
cycle of a thread's accesses (L a load, S a store), as MLC's kernels issue
them. MLC's two-buffer variants (-W10, -W11) and the -o-only modes (-W21,
-W23, -W27) are not modelled.
"""
from dataclasses import dataclass
from typing import Dict, List

from ..config.params import ParamError


@dataclass(frozen=True)
class Mode:
    name: str
    ops: str      # one cycle of a thread's accesses
    stores: str   # "write-allocate" (RFO) or "non-temporal"
    mlc: str      # MLC's own description

    @property
    def read_fraction(self) -> float:
        """Reads over all memory traffic (an RFO store is a read and a write)."""
        loads, stores = self.ops.count("L"), self.ops.count("S")
        if self.stores == "non-temporal":
            return loads / (loads + stores)
        return (loads + stores) / (loads + 2 * stores)


_RFO, _NT = "write-allocate", "non-temporal"
MODES: Dict[str, Mode] = {m.name: m for m in [
    Mode("R", "L", _NT, "read-only traffic"),
    Mode("W2", "LS", _RFO, "2:1 read-write ratio"),
    Mode("W3", "LLS", _RFO, "3:1 read-write ratio"),
    Mode("W4", "LSS", _RFO, "3:2 read-write ratio"),
    Mode("W5", "S", _RFO, "1:1 read-write ratio"),
    Mode("W6", "S", _NT, "0:1 read-non-temporal write ratio"),
    Mode("W7", "LLS", _NT, "2:1 read-non-temporal write ratio"),
    Mode("W8", "LS", _NT, "1:1 read-non-temporal write ratio"),
    Mode("W9", "LLLS", _NT, "3:1 read-non-temporal write ratio"),
] + [Mode(f"W{n + 8}", "L" * (n - 1) + "S", _RFO, f"{n}:1 read-write ratio") for n in range(4, 10)]}

# MLC's default --loaded_latency sweep of injection delays, taken as ns here.
MLC_DELAYS: List[float] = [0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700, 2500, 3500, 5000,
                           9000, 20000]


def mode(name: str) -> Mode:
    """The mode named as MLC names it (R, W2, ...; case and a leading dash ignored)."""
    key = str(name).strip().lstrip("-").upper()
    if key not in MODES:
        raise ParamError(f"mode = {name!r} is not allowed; allowed values: {', '.join(MODES)}")
    return MODES[key]
