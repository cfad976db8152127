"""Loaded bandwidth over read:write mixes: the curves of MLC's loaded-latency
traffic on the shipped presets, with stores that read their line for
ownership (RFO, MLC -W2/-W3/-W5) and with non-temporal stores (MLC -W6..-W9).

Prints, per memory and store kind, total bandwidth (both directions) at 16
and 32 traffic threads over read fractions of the memory traffic, where the
best mix lies, and the stores-only mode (W5 or W6). Standalone engine,
random lines, mean of seeds 1-4 at 200000 requests a point (about four
minutes a memory).

    python benchmarks/loaded_mix.py [memory ...]
    python benchmarks/loaded_mix.py --write-burst-scan

The scan varies how many writes cxl-asic's controller does a turn before waiting
reads take the bus back (min..max writes per switch; "drained": to the low
watermark), recalibrates cxl-asic on spr-cxl-dmsim for each (as `simcxl
calibrate` does: its device queue is refitted on STREAM copy), and prints the RFO
curve at 16 threads, where it peaks, STREAM add and triad's errors and the
validation error at/after the LLC: the testbed's choice (docs/validation/calibration.md) and what it
trades (about four minutes).
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

import simcxl
from simcxl.calibration import calibrate
from simcxl.config import presets

FRACTIONS = {"write-allocate": (1.0, 0.9, 0.8, 0.75, 0.67, 0.6, 0.5),
             "non-temporal": (1.0, 0.9, 0.8, 0.75, 0.67, 0.6, 0.5, 0.25, 0.0)}
WRITE_ONLY = {"write-allocate": "W5", "non-temporal": "W6"}


def seed_mean(base, seeds=(1, 2, 3, 4), **loaded) -> pd.DataFrame:
    """``simcxl.loaded_latency(**loaded)`` on ``base`` with each seed: total bandwidth's mean and standard
    deviation over the seeds, indexed by threads, mode and read fraction."""
    runs = pd.concat([simcxl.loaded_latency(base.replace(seed=seed), **loaded) for seed in seeds])
    return runs.groupby(["threads", "mode", "read_fraction"]).bandwidth_gbps.agg(["mean", "std"])


def curves(memory: str, threads=(16, 32), requests: int = 200000, seeds=(1, 2, 3, 4)) -> None:
    base = simcxl.load_preset(memory)
    for stores, fractions in FRACTIONS.items():
        # Read fraction 1.0 is MLC's R (reads only) already; the stores-only mode is a run of its own.
        mean = pd.concat([
            seed_mean(base, seeds, threads=threads, read_fractions=fractions, stores=stores, requests=requests),
            seed_mean(base, seeds, threads=threads, modes=[WRITE_ONLY[stores]], requests=requests)]).sort_index()
        for t in threads:
            sub = mean.loc[t]
            bw = {rf: v for (mode, rf), v in sub["mean"].items() if mode in ("R", "mix")}
            best = max(bw, key=bw.get)
            line = "  ".join(f"{rf:.2f}:{v:5.2f}" for rf, v in sorted(bw.items(), reverse=True))
            spread = 100 * (1 - min(bw.values()) / bw[best])
            alone = sub["mean"][WRITE_ONLY[stores]].iloc[0]
            print(f"{memory:10s} {stores:14s} t={t:2d}  {line}")
            print(f"{'':10s} {'':14s}       best at read fraction {best:.2f} ({bw[best]:.2f} GB/s); worst "
                  f"{spread:.1f} % below it; {WRITE_ONLY[stores]} (stores only) {alone:.2f} GB/s; "
                  f"sd over seeds at most {sub['std'].max():.2f}", flush=True)


def write_burst_scan(pairs=((4, 4), (4, 5), (5, 5), (5, 6), (6, 6), (4, 8), (16, 0)), requests: int = 100000) -> None:
    """cxl-asic's controller's writes a turn (min_writes_per_switch, max_writes_per_switch), each
    recalibrated on a copy of spr-cxl-dmsim as `simcxl calibrate` does, then the RFO curve."""
    fractions = (1.0, 0.9, 0.75, 0.67, 0.6, 0.5)
    src = Path(__file__).resolve().parent.parent / "calibration" / "testbeds" / "spr-cxl-dmsim"
    print(f"cxl-asic, RFO total GB/s at 16 threads over read fractions {' '.join(map(str, fractions))} "
          f"({requests} requests a point), each row refitted on spr-cxl-dmsim")
    for lo, hi in pairs:
        with tempfile.TemporaryDirectory() as tmp:
            tb = Path(tmp) / "tb"
            shutil.copytree(src, tb)
            text = (tb / "testbed.toml").read_text()
            text, n = re.subn(r'"cxl\.media\.min_writes_per_switch" = \d+, "cxl\.media\.max_writes_per_switch" = \d+',
                              f'"cxl.media.min_writes_per_switch" = {lo}, "cxl.media.max_writes_per_switch" = {hi}', text)
            assert n == 1, "testbed.toml no longer names cxl-asic's writes a turn"
            (tb / "testbed.toml").write_text(text)
            calibrate.run(tb, Path(tmp) / "out", memories=["cxl-asic"], log=lambda _: None)
            summary = json.loads((Path(tmp) / "out" / "summary.json").read_text())
            s = presets.load_file(Path(tmp) / "out" / "presets" / "cxl-asic.json")
        m = summary["memories"]["cxl-asic"]
        errs = {p["x"]: p["error_pct"] for p in summary["points"] if p["experiment"] == "stream"}
        bw = simcxl.loaded_latency(s, threads=[16], read_fractions=fractions, stores="write-allocate",
                                   requests=requests).bandwidth_gbps.to_numpy()
        best = int(bw.argmax())
        print(f"writes a turn {lo}..{hi or 'drained'}: req_queue {s.cxl.device.req_queue:3d}  " +
              " ".join(f"{v:5.2f}" for v in bw) + f"  peak at {fractions[best]:.2f}, 1:1 "
              f"{100 * (bw[-1] / bw[best] - 1):+.1f} % of it; STREAM add {errs['add']:+.1f} %, triad "
              f"{errs['triad']:+.1f} %; validation at/after the LLC {m['validation_llc_and_beyond_mae_pct']:.2f} %",
              flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--write-burst-scan"]:
        write_burst_scan()
    else:
        for name in args or ["cxl-asic", "ddr-local"]:
            curves(name)
