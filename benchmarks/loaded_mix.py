"""Loaded bandwidth over read:write mixes: the curves of MLC's loaded-latency
traffic on the shipped presets, with stores that read their line for
ownership (RFO, MLC -W2/-W3/-W5) and with non-temporal stores (MLC -W6..-W9).

Prints, per memory and store kind, total bandwidth (both directions) at 16
and 32 traffic threads over read fractions of the memory traffic, where the
best mix lies, and the write-only point against read-only. Standalone
engine, random lines, 60000 requests per point (about a minute in all).

    python benchmarks/loaded_mix.py [memory ...]
"""
from __future__ import annotations

import sys

import simcxl

FRACTIONS = {"write-allocate": (1.0, 0.9, 0.8, 0.75, 0.67, 0.6, 0.5),
             "non-temporal": (1.0, 0.9, 0.8, 0.75, 0.67, 0.6, 0.5, 0.25, 0.0)}
WRITE_ONLY = {"write-allocate": "W5", "non-temporal": "W6"}


def curves(memory: str, threads=(16, 32), requests: int = 60000) -> None:
    s = simcxl.load_preset(memory)
    for stores, fractions in FRACTIONS.items():
        df = simcxl.loaded_latency(s, threads=threads, read_fractions=fractions, stores=stores, requests=requests)
        modes = simcxl.loaded_latency(s, threads=threads, modes=["R", WRITE_ONLY[stores]], requests=requests)
        for t in threads:
            sub = df[df.threads == t]
            bw = dict(zip(sub.read_fraction, sub.bandwidth_gbps))
            best = max(bw, key=bw.get)
            line = "  ".join(f"{rf:.2f}:{v:5.1f}" for rf, v in bw.items())
            m = modes[modes.threads == t].set_index("mode").bandwidth_gbps
            spread = 100 * (1 - min(bw.values()) / bw[best])
            print(f"{memory:10s} {stores:14s} t={t:2d}  {line}")
            print(f"{'':10s} {'':14s}       best at read fraction {best:.2f} ({bw[best]:.1f} GB/s); "
                  f"worst {spread:.1f} % below it; R {m['R']:.1f} GB/s, "
                  f"{WRITE_ONLY[stores]} (stores only) {m[WRITE_ONLY[stores]]:.1f} GB/s")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["cxl-asic", "ddr-local"]:
        curves(name)
