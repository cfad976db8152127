#!/usr/bin/env python3
"""A region Linux creates over one device against one over two (issue 35), in gem5 full system.

    GEM5=/path/to/gem5.opt .venv/bin/python benchmarks/fs_region_ways.py --out fs-ways --ways 1
    GEM5=/path/to/gem5.opt .venv/bin/python benchmarks/fs_region_ways.py --out fs-ways --ways 2
    GEM5=/path/to/gem5.opt .venv/bin/python benchmarks/fs_region_ways.py --out fs-ways --switch
    .venv/bin/python benchmarks/fs_region_ways.py --out fs-ways --summary

One board per way count, each booted with CXL.io and no window mapped by firmware (the CEDT's
CFMWS only, as `simcxl fs --cxl-region`): ddr-local (1 GiB) as node 0 with one CPU, and one 2 GiB
CXL window below one host bridge with one root port and device (--ways 1) or two (--ways 2, each
device half the window). Each restored run first has Linux create the region through its own CXL
drivers (`fs.region_run`: Linux commits the bridge's and the devices' HDM decoders at the
CFMWS's granularity, 256 B here, and onlines the region as node 1), then:

  chase   lmbench-style chase at 1 GiB on node 1 (built and warmed on atomic cores, 20,000
          loads timed on timing cores)
  stream  a reads-only pass (`stream read`: a sum over one array of 32 Mi elements, twice the
          caches' lines; one untimed pass on atomic cores, 256 Ki elements timed on one O3 core)

Saturation by one core: one O3 core keeps 12-16 misses in flight, about 2.9 GB/s on cxl-asic
(docs/tutorials/full-system.md), far below a cxl-asic device's 24 GB/s. So the devices here are
cxl-asic with its media slowed to one DDR5 channel at 100 MT/s (0.4 GB/s, 160 ns a line): one
device, then two, bound the reads while the core could carry more than twice two devices' peak
(16 lines over about 430 ns). The granularity is 256 B because one core reads sequentially: at
cxl-asic's 4 KiB its 16 lines in flight lie in one device's 64-line chunk most of the time (the
standalone engine: 0.504 GB/s at 2 ways against 0.388 at one, as (1 + 16/64) x 0.4 by hand); at
256 B they alternate every 4 lines. What is measured is whether the decoders Linux committed
spread the lines over both devices; a faster core on the real presets would show the same.

With --switch the two devices sit below one CXL switch on the bridge's one root port
(examples/topologies/switch-2dev.toml, media slowed alike): Linux commits the bridge's decoder
(1 way), the switch's upstream port's (2 ways at 256 B) and the devices', and gem5's switch routes
by them; its standalone figures run the same file with the same region in [[regions]].

Beside each gem5 figure, the standalone engine's on the same preset files: the chase at 1 GiB
(`lmbench`) and saturated sequential reads (MLC-style, 16 threads, `loaded_latency`). Results go
to OUT/ways<N>/results.json as each run ends (an interrupted run keeps what finished); --summary
prints both as a table with the 2-way/1-way ratios. Every figure is a simulation of these boards.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GiB = 1 << 30
WINDOW = 2 * GiB
STEPS = ("boot", "chase", "stream")
# One DDR5 channel at 100 MT/s behind cxl-asic's controller: 16 beats of 4 B, 160 ns a line.
SLOW_MEDIA = {"cxl.media.channels": 1, "cxl.media.data_rate_mts": 100.0, "cxl.bridge.interleave_bytes": 256}


def preset_file(out: Path, ways: int) -> Path:
    from simcxl import load_preset
    from simcxl.config.presets import save
    p = load_preset("cxl-asic").replace(**SLOW_MEDIA, **{"cxl.bridge.root_ports": ways,
                                                          "cxl.bridge.interleave_ways": ways})
    return save(p, out / f"cxl-asic-slow-{ways}way.json")


def switch_topology(out: Path, regions: bool) -> Path:
    """switch-2dev.toml with both devices' media slowed as SLOW_MEDIA's (its bridge interleaves at 256 B
    already); with `regions`, the region Linux creates over both, for the standalone engine."""
    text = (REPO / "examples" / "topologies" / "switch-2dev.toml").read_text()
    for dev in ("exp0", "exp1"):
        text += (f"\n[components.{dev}.media]\nchannels = {SLOW_MEDIA['cxl.media.channels']}\n"
                 f"data_rate_mts = {SLOW_MEDIA['cxl.media.data_rate_mts']}\n")
    if regions:
        text += f'\n[[regions]]\nhost_bridge = "cxl"\ntargets = ["exp0", "exp1"]\ngranularity = 256\nsize = {WINDOW}\n'
    path = out / f"switch-2dev-slow{'-region' if regions else ''}.toml"
    path.write_text(text)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gem5", default=os.environ.get("GEM5"), help="gem5 X86 binary (default $GEM5)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ways", type=int, choices=[1, 2], help="devices below the bridge (one board each)")
    ap.add_argument("--switch", action="store_true", help="two devices below one switch (one board)")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {', '.join(STEPS)}")
    ap.add_argument("--accesses", type=int, default=20000, help="timed loads of the chase")
    ap.add_argument("--summary", action="store_true", help="print both boards' results and stop")
    args = ap.parse_args()
    os.environ.setdefault("SIMCXL_REPO", str(REPO))
    if args.summary:
        print(summary(args.out))
        return 0
    if args.switch:
        args.ways = 2
    if args.ways is None:
        ap.error("--ways or --switch is required (or --summary)")
    steps = args.steps.split(",")
    if any(s not in STEPS for s in steps):
        ap.error(f"--steps {args.steps}: allowed: {', '.join(STEPS)}")
    if not args.gem5:
        ap.error("--gem5 (or $GEM5) is required")

    import simcxl
    from simcxl.engine import standalone
    from simcxl.gem5 import fs
    from simcxl.gem5.numa import describe

    out = args.out / ("switch2" if args.switch else f"ways{args.ways}")
    out.mkdir(parents=True, exist_ok=True)
    preset = switch_topology(out, False) if args.switch else preset_file(out, args.ways)
    from simcxl.gem5.components import load_system
    standalone_system = load_system(str(switch_topology(out, True) if args.switch else preset))
    cxl = [f"{preset}:{WINDOW}"]
    res_file = out / "results.json"
    res = json.loads(res_file.read_text()) if res_file.exists() else {}

    def save(key, value):
        # What another step finished meanwhile (two restores may run at once) is kept.
        if res_file.exists():
            res.update({k: v for k, v in json.loads(res_file.read_text()).items() if k != key})
        res[key] = value
        tmp = res_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(res, indent=1))
        tmp.replace(res_file)

    numa = describe("ddr-local", [str(preset)])
    board = dict(local="ddr-local", cxl=cxl, local_size="1GiB", numa=numa, max_seconds=60.0,
                 cxl_io=True, linux_regions=True)
    ck = out / "ckpt"
    warm = fs.default_warm_lines("ddr-local")

    def restore(name, run, bench, cpu):
        t = time.time()
        r = fs.boot(args.gem5, out / name, cpu=cpu, warm="atomic", run=fs.region_run(cxl, then=run), bench=bench,
                    node=1, restore=str(ck), **board)
        if "m5_exit" not in r.cause:
            sys.exit(f"{name}: the guest did not finish ({r.cause}); see {out / name}")
        return r, round(time.time() - t, 1)

    if "boot" in steps:
        t = time.time()
        r = fs.boot(args.gem5, out / "boot", cpu="atomic", checkpoint=str(ck), **board)
        save("boot", {"cpu": r.cpu, "wall_s": round(time.time() - t, 1), "preset": str(preset)})
    if not (ck / "m5.cpt").is_file():
        sys.exit(f"no checkpoint at {ck}: run --steps boot first")
    if "chase" in steps:
        run = fs.guest_command("lmbench", 1, sizes=[GiB], accesses=args.accesses, marks=True, warm_lines=warm)
        r, wall = restore("chase", run, "lmbench", "timing")
        sa = float(simcxl.lmbench(standalone_system, working_sets=[GiB]).iloc[0]["latency_ns"])
        save("chase_1GiB", {"gem5_ns": float(r.frame["latency_ns"].iloc[0]), "standalone_ns": sa, "wall_s": wall,
                            "command": run})
    if "stream" in steps:
        run = fs.guest_command("stream", 1, kernel="read", elements=warm * 64 // 8, marks=True, timed=1 << 18)
        r, wall = restore("stream", run, "stream", "o3")
        sa = standalone.loaded_latency(standalone_system, threads=[16], read_fractions=[1.0],
                                       pattern="sequential")
        save("read", {"gem5_gbps": float(r.frame["stream_gbps"].iloc[0]), "check": r.frame["check"].iloc[0],
                      "standalone_16thread_gbps": float(sa.iloc[0]["bandwidth_gbps"]), "wall_s": wall,
                      "command": run})
    print(json.dumps(res, indent=1))
    return 0


def summary(out: Path) -> str:
    rows = {w: json.loads((out / d / "results.json").read_text())
            for w, d in ((1, "ways1"), (2, "ways2"), ("2, switch", "switch2")) if (out / d / "results.json").exists()}
    lines = ["| ways | gem5 chase (ns) | standalone chase (ns) | gem5 reads, 1 O3 core (GB/s) | standalone reads, "
             "16 threads (GB/s) |", "|---|---|---|---|---|"]
    for w, r in rows.items():
        c, s = r.get("chase_1GiB", {}), r.get("read", {})
        lines.append(f"| {w} | {c.get('gem5_ns', float('nan')):.1f} | {c.get('standalone_ns', float('nan')):.1f} | "
                     f"{s.get('gem5_gbps', float('nan')):.3f} | {s.get('standalone_16thread_gbps', float('nan')):.3f} |")
    for k, label in ((2, "2-way"), ("2, switch", "2-way below a switch")):
        if 1 not in rows or k not in rows:
            continue
        one, two = rows[1], rows[k]
        try:
            lines.append(f"\nreads {label} / 1-way: gem5 {two['read']['gem5_gbps'] / one['read']['gem5_gbps']:.3f}, "
                         f"standalone {two['read']['standalone_16thread_gbps'] / one['read']['standalone_16thread_gbps']:.3f}")
            lines.append(f"chase {label} - 1-way: gem5 {two['chase_1GiB']['gem5_ns'] - one['chase_1GiB']['gem5_ns']:+.1f} ns, "
                         f"standalone {two['chase_1GiB']['standalone_ns'] - one['chase_1GiB']['standalone_ns']:+.1f} ns")
        except KeyError as e:
            lines.append(f"\n(not run yet: {e})")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
