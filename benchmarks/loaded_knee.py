"""Where loaded latency rises at moderate load: the figures behind
docs/validation/loaded-knee.md.

For each memory (shipped presets, standalone engine, random reads, 16 traffic
threads, 100 000 requests a point, seed 1):

0. the DRAM alone: Poisson random reads offered to the memory's DRAM
   controller (simcxl._core.dram_replay, 40 000 a rate) at 1-80 % of its
   peak for random lines, with refresh and the page policy varied;

1. injection: the probe's latency over its idle latency at 25, 50 and 80 % of
   the closed-loop peak, with the load offered three ways: periodic arrivals
   (each thread at a fixed interval, threads evenly staggered), a Poisson
   stream, and MLC's closed loop with a pause between a thread's accesses;
2. stages: where a read's time goes at 0-90 % of the peak (periodic arrivals),
   with the DRAM's row-conflict rate and mean read queue;
3. the DRAM's part: the same at 50 and 80 % with the DRAM's page policy
   (open, closed-adaptive, an idle timer, adaptive or fixed) and refresh
   (off, postponed, same-bank) changed from the preset's, one at a time;
4. MLC's loaded-latency sweep (its default injection delays, and more between
   20 and 80 ns where the default ones jump to saturation): latency over idle
   at 50 and 80 % of the sweep's peak bandwidth, read off the curve by linear
   interpolation.

    python benchmarks/loaded_knee.py [memory ...]      (about a minute a memory)
    python benchmarks/loaded_knee.py --variants [memory ...]   (section 3 alone)
"""
from __future__ import annotations

import sys

import numpy as np

import simcxl
from simcxl import _core
from simcxl.engine import mlc

THREADS, REQUESTS = 16, 100000
LEVELS = (0.25, 0.5, 0.6, 0.8, 0.9)
EXTRA_DELAYS = sorted(set(mlc.MLC_DELAYS) | {20, 25, 30, 35, 40, 60, 70, 80})
SHOWN = ("host_uncore", "host_port", "link_down", "device", "media_queue", "media_service", "link_up")


def dram_of(system):
    """The DRAM that serves the memory's reads: a CXL device's media, or the host's own."""
    return system.cxl.media if system.kind == "cxl-type3" else (
        system.remote.dram if system.kind == "remote-numa" else system.local_dram)


def variant(system, **dram):
    s = simcxl.load_preset(system.name)
    d = dram_of(s)
    for k, v in dram.items():
        setattr(d, k, v)
    return s


def probe(system, **kw):
    r = simcxl.traffic(system, threads=THREADS, requests=REQUESTS, probe=True, **kw).iloc[0]
    return r


def idle_latency(system) -> float:
    return simcxl.traffic(system, threads=1, requests=20000, rate_gbps=0.05, probe=True).iloc[0].probe_latency_ns_mean


def peak(system) -> float:
    return simcxl.traffic(system, threads=THREADS, requests=REQUESTS).iloc[0].total_gbps


def ratio_at(bw, lat, idle, frac):
    """Latency over idle where the curve carries frac of its peak bandwidth."""
    order = np.argsort(bw)
    bw, lat = np.asarray(bw)[order], np.asarray(lat)[order]
    return float(np.interp(frac * bw.max(), bw, lat)) / idle


def dram_alone(system, loads=(0.01, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8), n=40000):
    """Mean latency (ns) of Poisson random reads offered to the memory's DRAM
    controller alone (simcxl._core.dram_replay), at shares of its peak for
    random lines: the data bus, or four activates a tFAW in each rank where
    that is less (one DDR4 rank)."""
    d0 = dram_of(system)
    bus = min(d0.channels * d0.bus_bytes * d0.data_rate_mts / 1000,  # GB/s
              d0.channels * d0.ranks * 4 * 64 / d0.tFAW_ns if d0.tFAW_ns else float("inf"))
    rates = [f * bus for f in loads]
    out = {}
    for label, kw in (("preset", {}), ("refresh off", dict(tREFI_ns=0)), ("open page", dict(page_policy=0)),
                      ("closed-adaptive", dict(page_policy=1)), ("closed, no refresh", dict(page_policy=1, tREFI_ns=0))):
        d = dram_of(variant(system, **kw))
        row = []
        for rate in rates:
            rng = np.random.default_rng(1)
            at = np.cumsum(rng.exponential(64 / rate, n))
            reqs = [(float(t), "R", int(a) * 64) for t, a in zip(at, rng.integers(0, (1 << 30) // 64, n))]
            done = np.array(_core.dram_replay(d.to_dict(), reqs)["done_ns"])
            row.append(float((done - at)[n // 10:n - n // 10].mean()))
        out[label] = row
    print(f"0. the DRAM alone (peak {bus:.1f} GB/s), Poisson random reads: mean latency (ns) at " +
          ", ".join(f"{r:.1f}" for r in rates) + " GB/s")
    for label, row in out.items():
        print(f"   {label:18s} " + " ".join(f"{v:7.1f}" for v in row))


# Section 3's variants of the DRAM: refresh and page policy.
VARIANTS = (("preset", {}), ("open page", dict(page_policy=0)), ("closed-adaptive", dict(page_policy=1)),
            ("adaptive timer 25-400 ns", dict(page_policy=2, page_timeout_ns=25, page_timeout_max_ns=400)),
            ("fixed timer 25 ns", dict(page_policy=2, page_timeout_ns=25, page_timeout_max_ns=25)),
            ("fixed timer 50 ns", dict(page_policy=2, page_timeout_ns=50, page_timeout_max_ns=50)),
            ("refresh off", dict(tREFI_ns=0)),
            ("all-bank, postpone 4", dict(refresh_per_bank=0, refresh_postpone=4)),
            ("same-bank refresh (DDR5)", dict(refresh_per_bank=1)),
            ("same-bank, postpone 4", dict(refresh_per_bank=1, refresh_postpone=4)))


def dram_part(s, variants=VARIANTS):
    print("3. the DRAM's part: probe latency / idle at 50 % and 80 % of the peak (periodic arrivals)")
    for label, kw in variants:
        v = variant(s, **kw)
        i0, p0 = idle_latency(v), peak(v)
        cells = [f"{probe(v, rate_gbps=f * p0).probe_latency_ns_mean / i0:.3f}" for f in (0.5, 0.8)]
        print(f"   {label:34s} idle {i0:6.1f} ns  peak {p0:5.2f}  50 %: {cells[0]}  80 %: {cells[1]}", flush=True)


def main(memories):
    if memories and memories[0] == "--variants":  # section 3 alone: python loaded_knee.py --variants ddr-local
        for name in memories[1:]:
            print(f"\n{name}")
            dram_part(simcxl.load_preset(name))
        return
    for name in memories:
        s = simcxl.load_preset(name)
        idle, top = idle_latency(s), peak(s)
        # The DRAM that carries the reads (a CXL system also has the host's own).
        one = simcxl.traffic(s, threads=1, requests=1000).iloc[0]
        dram = max((c[:-len(".read_gbps")] for c in one.index if c.endswith(".read_gbps")),
                   key=lambda d: one[d + ".read_gbps"])
        print(f"\n{name}: idle probe {idle:.1f} ns, closed-loop peak {top:.2f} GB/s ({THREADS} threads)")
        dram_alone(s)
        print("1. injection: probe latency / idle (bandwidth GB/s)")
        for f in (0.25, 0.5, 0.8):
            rate = f * top
            cells = []
            for how, kw in (("periodic", dict(rate_gbps=rate)), ("poisson", dict(rate_gbps=rate, arrivals="poisson")),
                            ("mlc-delay", dict(inject_delay_ns=64 * THREADS / rate))):
                r = probe(s, **kw)
                cells.append(f"{how} {r.probe_latency_ns_mean / idle:.3f} ({r.total_gbps:.2f})")
            print(f"   {f:.2f} of peak: " + "   ".join(cells))
        print("2. stages of a read (ns), periodic arrivals")
        print("   load  GB/s   read " + " ".join(f"{k:>13s}" for k in SHOWN) + "  conflicts  read_queue")
        for f in (0.0,) + LEVELS:
            r = probe(s, rate_gbps=max(f * top, 0.05)) if f else simcxl.traffic(
                s, threads=1, requests=20000, rate_gbps=0.05).iloc[0]
            print(f"   {f:4.2f} {r.total_gbps:6.2f} {r.read_latency_ns_mean:6.1f} " +
                  " ".join(f"{r[f'read.stage.{k}_ns']:13.1f}" for k in SHOWN) +
                  f"  {r[dram + '.row_conflict_rate']:9.2f}  {r[dram + '.mean_read_queue']:10.1f}")
        dram_part(s)
        print("4. MLC --loaded_latency sweep (default delays and the -d values between 20 and 80 ns, where the "
              "default sweep jumps from about 70 % of the peak to saturation): latency / idle")
        df = simcxl.loaded_latency(s, threads=[THREADS], requests=REQUESTS, inject_delay_ns=EXTRA_DELAYS)
        print("   " + "  ".join(f"{d:g}:{b:.1f}/{l:.0f}" for d, b, l in zip(df.delay_ns, df.bandwidth_gbps,
                                                                          df.latency_ns)))
        print(f"   50 % of peak: {ratio_at(df.bandwidth_gbps, df.latency_ns, idle, 0.5):.3f}   "
              f"80 %: {ratio_at(df.bandwidth_gbps, df.latency_ns, idle, 0.8):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["ddr-local", "cxl-asic"])
