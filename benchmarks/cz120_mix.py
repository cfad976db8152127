"""Full duplex on a Micron CZ120-like expander: total bandwidth over Intel MLC's read:write mixes on
the shipped ``cxl-cz120`` preset at saturation, beside its Gen5 x8 link's bound worked out per mix,
where the curve peaks, and the error against Micron's 36 GB/s.

Vendor figure: "up to 36 GB/s", measured with MLC at a 2:1 read/write ratio on one CZ120 (Micron's
CZ120 announcement, 7 Aug 2023, as Tom's Hardware reported it:
https://www.tomshardware.com/news/micron-unveils-128gb-256gb-cxl-2-expansion-modules). Micron gives
no other mix, nor which of MLC's 2:1 modes (W2 with reads for ownership, W7 non-temporal) or access
pattern it used, so all are printed.

Simulation: standalone engine, MLC's traffic modes (``simcxl.engine.mlc``; ratios count memory
traffic as MLC's do) on 16 and 48 traffic threads (48: every host core), random lines (MLC -U) and
sequential ones (MLC's default), mean of seeds 1-4 at 100 000 requests a mode (about a minute).

Link bound per mix, from the link's physics alone (``link_bound_gbps``): a 68 B flit carries eight
8 B half-slots each way; a read costs the device-to-host direction its MemData (a 40-bit header in
one half-slot plus 64 B, nine) and the host-to-device direction its MemRd (87 bits, two); a write
costs host-to-device its MemWr (two plus eight, ten) and device-to-host its Cmp (30 bits, one).

    python benchmarks/cz120_mix.py [--requests N]
"""
from __future__ import annotations

import argparse

import simcxl
from simcxl import _core
from simcxl.engine import mlc

from loaded_mix import seed_mean

VENDOR_GBPS = 36.0  # Micron CZ120, MLC 2:1 (above)
PRESET = "cxl-cz120"


def link_bound_gbps(link, read_fraction: float) -> float:
    """Total GB/s (both directions) the link carries at most when ``read_fraction`` of the lines read."""
    flits_per_s = _core.link_info(link.to_dict())["raw_gbps"] * 1e9 / 68
    f = read_fraction
    worst = max(9 * f + 1 * (1 - f), 2 * f + 10 * (1 - f))  # half-slots a line costs S2M, M2S
    return 8 * flits_per_s / worst * 64 / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=100000)
    args = ap.parse_args()
    s = simcxl.load_preset(PRESET)
    modes = sorted(mlc.MODES.values(), key=lambda m: (-m.read_fraction, m.stores))
    threads = (16, s.host.cores)
    mean = {pat: seed_mean(s, threads=threads, modes=[m.name for m in modes], requests=args.requests, pattern=pat)
            for pat in ("random", "sequential")}
    print(f"{PRESET}: total GB/s (both directions), mean of seeds 1-4 (sd at most "
          f"{max(m['std'].max() for m in mean.values()):.2f}), {args.requests} requests a mode")
    cols = [(pat, t) for pat in mean for t in threads]
    print(f"{'mode':5s} {'MLC says':34s} {'reads':>5s} " + " ".join(f"{p[:3]} t={t:<3d}" for p, t in cols) +
          "  link bound  best % of it")
    best = {c: (None, 0.0) for c in cols}
    for m in modes:
        bound = link_bound_gbps(s.cxl.link, m.read_fraction)
        row = {c: mean[c[0]].loc[(c[1], m.name, m.read_fraction), "mean"] for c in cols}
        for c, v in row.items():
            if v > best[c][1]:
                best[c] = (m, v)
        print(f"{m.name:5s} {m.mlc:34s} {m.read_fraction:5.3f} " + " ".join(f"{row[c]:9.2f}" for c in cols) +
              f"  {bound:10.2f}  {100 * max(row.values()) / bound:9.1f}")
    print(f"\nMicron: {VENDOR_GBPS} GB/s at MLC 2:1 (CZ120 announcement, 2023)")
    for c, (m, v) in best.items():
        two = {n: mean[c[0]].loc[(c[1], n, mlc.mode(n).read_fraction), "mean"] for n in ("W2", "W7")}
        print(f"{c[0]:10s} t={c[1]:<3d} peak at {m.name} ({m.mlc}) {v:.2f} GB/s, {100 * (v / VENDOR_GBPS - 1):+.1f} % "
              f"of 36; 2:1 W2 {two['W2']:.2f} ({100 * (two['W2'] / VENDOR_GBPS - 1):+.1f} %), W7 {two['W7']:.2f} "
              f"({100 * (two['W7'] / VENDOR_GBPS - 1):+.1f} %)")
    f = 9 / 16  # where both directions fill: 9f + (1 - f) = 2f + 10(1 - f)
    print(f"link bound's own peak: read fraction {f:.3f} ({link_bound_gbps(s.cxl.link, f):.2f} GB/s), where both "
          "directions fill: 9f + (1 - f) = 2f + 10(1 - f), f = 9/16")


if __name__ == "__main__":
    main()
