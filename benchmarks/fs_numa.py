#!/usr/bin/env python3
"""Full-system measurements of issue 19: the project's guest on the CXL NUMA board.

    GEM5=/path/to/gem5.opt .venv/bin/python benchmarks/fs_numa.py --out fs-numa [--steps ...]

One board: ddr-local DDR4 (gem5's SingleChannelDDR4_2400, 3 GiB) as node 0 with
the CPU, cxl-asic (2 GiB) as node 1 and cxl-fpga (2 GiB) as node 2, behind
SimCXL host bridges, described by our SRAT/SLIT/HMAT/CEDT (and FADT). Steps:

  boot         boot (KVM cores where /dev/kvm runs guest kernel code natively,
               else atomic, said so), print numactl -H and the HMAT attributes
               Linux registered, checkpoint at the shell; wall time
  chase        restore; lmbench-style chase at 1 GiB on nodes 0, 1, 2 (built and
               warmed on atomic cores, 20,000 loads timed on timing cores);
               latency and ratio to node 0, beside the spr-cxl-dmsim testbed's
               ratios and the standalone engine's figures for the same presets
  stream       restore; STREAM triad and copy on each node (arrays 2x the
               caches, one untimed pass on atomic cores, 1 Mi elements timed on
               one O3 core), beside the standalone engine with one thread
  curve        restore; a whole lat_mem_rd curve (4 KiB to 1 GiB, 19 sizes) on
               node 1 in one guest command; wall time
  determinism  restore the same checkpoint twice for the same chase; identical?

--io firmware boots the same board with CXL.io (Linux's CXL drivers find the host bridges, root
ports and memory devices; firmware commits each window's decoders, as without it); --io linux has
firmware map no window and each restored run first creates the regions through Linux's CXL
drivers (fs.region_run), on atomic cores, before its command. Use a separate --out for each.

Results go to OUT/results.json, each figure as soon as its run ends (kept
between runs, so steps can run apart, at once from two shells, and an
interrupted step keeps what it finished), and a Markdown summary on stdout. Every figure is a
simulation: gem5 (this board, these commands) or the standalone engine
(simcxl.lmbench / simcxl.stream on the named preset); the testbed ratios are the
published measurements in calibration/testbeds/spr-cxl-dmsim (CXL-DMSim, TCAD 2025).
"""
from __future__ import annotations

import argparse
import csv
import fcntl
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

STEPS = ("boot", "chase", "stream", "curve", "determinism")
LOCAL, CXL = "ddr-local", ["cxl-asic:2GiB", "cxl-fpga:2GiB"]
NODES = {0: "ddr-local", 1: "cxl-asic", 2: "cxl-fpga"}
GiB = 1 << 30


def testbed_latency(memory: str, size: int = GiB) -> float:
    with open(REPO / "calibration" / "testbeds" / "spr-cxl-dmsim" / "lat_mem_rd.csv") as f:
        for row in csv.DictReader(f):
            if row["memory"] == memory and int(row["working_set_bytes"]) == size:
                return float(row["latency_ns"])
    raise KeyError(memory)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gem5", default=os.environ.get("GEM5"), help="gem5 X86 binary (default $GEM5)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {', '.join(STEPS)}")
    ap.add_argument("--cpu", default="kvm", choices=["kvm", "atomic"], help="boot cores (kvm falls back to atomic)")
    ap.add_argument("--accesses", type=int, default=20000, help="timed loads per working set")
    ap.add_argument("--nodes", default=",".join(map(str, NODES)), help="nodes of the chase and stream steps")
    ap.add_argument("--kernels", default="triad,copy", help="STREAM kernels of the stream step")
    ap.add_argument("--io", default="none", choices=["none", "firmware", "linux"],
                    help="CXL.io on the board, and who commits the decoders (see above)")
    args = ap.parse_args()
    steps = args.steps.split(",")
    if any(s not in STEPS for s in steps):
        ap.error(f"--steps {args.steps}: allowed: {', '.join(STEPS)}")
    try:
        nodes = [int(n) for n in args.nodes.split(",")]
    except ValueError:
        nodes = [-1]
    if any(n not in NODES for n in nodes):
        ap.error(f"--nodes {args.nodes}: allowed: a comma-separated list of {', '.join(map(str, NODES))}")
    kernels = args.kernels.split(",")
    from simcxl.gem5.fs import STREAM_KERNELS
    if any(k not in STREAM_KERNELS for k in kernels):
        ap.error(f"--kernels {args.kernels}: allowed: a comma-separated list of {', '.join(STREAM_KERNELS)}")

    os.environ.setdefault("SIMCXL_REPO", str(REPO))   # the configs and guest sources of this checkout
    from simcxl.gem5 import fs
    from simcxl.gem5.numa import Numa, describe

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    res_file = out / "results.json"
    numa_file = out / "numa.json"
    if numa_file.exists():
        numa = Numa.from_dict(json.loads(numa_file.read_text()))
    else:
        numa = describe(LOCAL, [c.split(":")[0] for c in CXL])
        numa_file.write_text(json.dumps(numa.to_dict(), indent=1))
    board = dict(local=LOCAL, cxl=CXL, local_size="3GiB", numa=numa, max_seconds=60.0,
                 cxl_io=args.io != "none", linux_regions=args.io == "linux")
    ck = out / "ckpt"
    warm = fs.default_warm_lines(LOCAL)

    def save(update):
        """Merges `update(results)` into the file under a lock: another step may be saving too."""
        with open(out / "results.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            res = json.loads(res_file.read_text()) if res_file.exists() else {}
            update(res)
            tmp = res_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(res, indent=1))
            tmp.replace(res_file)

    def restore(name, run, bench, node, cpu="timing"):
        t = time.time()
        if args.io == "linux":
            run = fs.region_run(CXL, then=run)
        r = fs.boot(args.gem5, out / name, cpu=cpu, warm="atomic", run=run, bench=bench, node=node,
                    restore=str(ck), **board)
        wall = time.time() - t
        if "m5_exit" not in r.cause:
            sys.exit(f"{name}: the guest did not finish ({r.cause}); see {out / name}")
        return r, wall

    if "boot" in steps:
        t = time.time()
        r = fs.boot(args.gem5, out / "boot", cpu=args.cpu, checkpoint=str(ck), **board)
        wall = time.time() - t
        hmat = [ln for ln in r.console.splitlines() if ln.startswith("hmat node")]
        boot = {"io": args.io, "cpu": r.cpu, "fallback": r.fallback, "wall_s": round(wall, 1),
                "gem5_line": (out / "boot" / "gem5.log").read_text().strip().splitlines()[-1:],
                "numactl": r.console[r.console.find("available:"):].split("hmat ")[0].strip(),
                "hmat": hmat, "numa_description": numa.to_dict()}
        save(lambda res: res.update(boot=boot))
        print(f"boot: {wall:.0f} s wall on {r.cpu} cores" + (f" (KVM fell back: {r.fallback})" if r.fallback else ""))
    if not (ck / "m5.cpt").is_file():
        sys.exit(f"no checkpoint at {ck}: run --steps boot first")

    if "chase" in steps:
        import simcxl

        def add_chase(res, node, row):
            rows = res.setdefault("chase_1GiB", {})
            rows[str(node)] = row
            for r in rows.values():   # ratios to node 0, once it has run
                for k in ("gem5", "standalone", "testbed"):
                    r[f"{k}_ratio"] = r[f"{k}_ns"] / rows["0"][f"{k}_ns"] if "0" in rows else None
        for node in nodes:
            preset = NODES[node]
            run = fs.guest_command("lmbench", node, sizes=[GiB], accesses=args.accesses, marks=True, warm_lines=warm)
            r, wall = restore(f"chase{node}", run, "lmbench", node)
            sa = float(simcxl.lmbench(simcxl.load_preset(preset), working_sets=[GiB]).iloc[0]["latency_ns"])
            row = {"preset": preset, "gem5_ns": float(r.frame["latency_ns"].iloc[0]), "wall_s": round(wall, 1),
                   "mismatches": int(r.results["mismatches"].dropna().iloc[0]), "standalone_ns": sa,
                   "testbed_ns": testbed_latency(preset), "command": run}
            save(lambda res: add_chase(res, node, row))

    if "stream" in steps:
        import simcxl
        # Arrays of twice the caches' lines (the LLC as gem5 builds it and an L2) per array.
        elements = warm * 64 // 8

        def add_stream(res, row):
            rows = [r for r in res.get("stream", []) if (r["node"], r["kernel"]) != (row["node"], row["kernel"])]
            res["stream"] = sorted(rows + [row], key=lambda r: (r["node"], r["kernel"]))
        for node in nodes:
            preset = NODES[node]
            for kernel in kernels:
                run = fs.guest_command("stream", node, kernel=kernel, elements=elements, marks=True, timed=1 << 20)
                r, wall = restore(f"stream{node}-{kernel}", run, "stream", node, cpu="o3")
                sa = simcxl.stream(simcxl.load_preset(preset), kernels=[kernel], threads=1)
                row = {"node": node, "preset": preset, "kernel": kernel,
                       "gem5_gbps": float(r.frame["stream_gbps"].iloc[0]), "check": r.frame["check"].iloc[0],
                       "standalone_1thread_gbps": float(sa.iloc[0]["stream_gbps"]), "wall_s": round(wall, 1),
                       "command": run}
                save(lambda res: add_stream(res, row))

    if "curve" in steps:
        sizes = [4096 << i for i in range(19)]   # 4 KiB .. 1 GiB
        run = fs.guest_command("lmbench", 1, sizes=sizes, accesses=args.accesses, marks=True, warm_lines=warm)
        r, wall = restore("curve", run, "lmbench", 1)
        curve = {"wall_s": round(wall, 1), "command": run,
                 "points": r.frame[["working_set_bytes", "latency_ns"]].to_dict(orient="records")}
        save(lambda res: res.update(curve_node1=curve))

    if "determinism" in steps:
        run = fs.guest_command("lmbench", 1, sizes=[64 << 20], accesses=args.accesses, marks=True, warm_lines=warm)
        a, _ = restore("again0", run, "lmbench", 1)
        b, _ = restore("again1", run, "lmbench", 1)
        ticks = [(out / n / "m5out" / "stats.txt").read_text().split("simTicks", 1)[1].split()[0]
                 for n in ("again0", "again1")]
        det = {"command": run, "first": a.frame.to_dict(orient="records"),
               "second": b.frame.to_dict(orient="records"), "sim_ticks": ticks,
               "identical": a.frame.to_dict(orient="records") == b.frame.to_dict(orient="records")
               and ticks[0] == ticks[1]}
        save(lambda res: res.update(determinism=det))

    print(summary(json.loads(res_file.read_text()) if res_file.exists() else {}))
    return 0


def summary(res: dict) -> str:
    """The results as Markdown: what was simulated and what it is compared with."""
    out = []
    if "boot" in res:
        b = res["boot"]
        out += [f"boot to the shell's checkpoint: {b['wall_s']} s wall on {b['cpu']} cores"
                + (f" (KVM asked for; fell back: {b['fallback']})" if b.get("fallback") else ""), "",
                "```", b["numactl"], *b["hmat"], "```", ""]
    if "chase_1GiB" in res:
        out += ["| node | preset | gem5 FS (ns) | ratio | standalone (ns) | ratio | testbed (ns) | ratio | wall (s) |",
                "|---|---|---|---|---|---|---|---|---|"]
        def ratio(x):
            return "-" if x is None else f"{x:.2f}x"
        for node, r in sorted(res["chase_1GiB"].items()):
            out.append(f"| {node} | {r['preset']} | {r['gem5_ns']:.1f} | {ratio(r['gem5_ratio'])} | "
                       f"{r['standalone_ns']:.1f} | {ratio(r['standalone_ratio'])} | {r['testbed_ns']:.1f} | "
                       f"{ratio(r['testbed_ratio'])} | {r['wall_s']} |")
        out.append("")
    if "stream" in res:
        out += ["| node | preset | kernel | gem5 FS, 1 O3 core (GB/s) | vs node 0 | standalone, 1 thread (GB/s) "
                "| vs node 0 | check | wall (s) |", "|---|---|---|---|---|---|---|---|---|"]
        base = {r["kernel"]: r for r in res["stream"] if r["node"] == 0}
        for r in res["stream"]:
            b = base.get(r["kernel"])
            g, s = (("-", "-") if b is None else (f"{r['gem5_gbps'] / b['gem5_gbps']:.2f}x",
                                                  f"{r['standalone_1thread_gbps'] / b['standalone_1thread_gbps']:.2f}x"))
            out.append(f"| {r['node']} | {r['preset']} | {r['kernel']} | {r['gem5_gbps']:.2f} | {g} | "
                       f"{r['standalone_1thread_gbps']:.2f} | {s} | {r['check']} | {r['wall_s']} |")
        out.append("")
    if "curve_node1" in res:
        c = res["curve_node1"]
        out += [f"lat_mem_rd curve on node 1, {len(c['points'])} working sets: {c['wall_s']} s wall", "",
                "| working set (B) | latency (ns) |", "|---|---|"]
        out += [f"| {p['working_set_bytes']} | {p['latency_ns']:.1f} |" for p in c["points"]]
        out.append("")
    if "determinism" in res:
        d = res["determinism"]
        out.append(f"a checkpoint restored twice for `{d['command']}`: "
                   + ("identical results" if d["identical"] else f"DIFFERENT: {d['first']} vs {d['second']}"))
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
