"""Randomised coherence stress with two devices of different types and host cores on one host.

Each configuration puts two accelerators of different types (Type-1, Type-2 in host bias with or
without bias flips, device bias, HDM-DB) beside host cores on one home agent and runs random loads
and stores on a few shared lines (host memory and both devices' memories) under the coherence
checker; each also runs with one credit per class on every channel of both links. It prints, per
configuration: operations, checker checks and violations, deadlocks/stalls, and wall time.

    python benchmarks/coherence_stress_mixed.py                  # 2 M operations per configuration
    python benchmarks/coherence_stress_mixed.py --ops 200000 --json

Exit status 1 if any configuration has a violation, a deadlock or a stall.
"""

import argparse
import json
import sys
import time
from dataclasses import fields

from simcxl import _core
from simcxl.workloads import coherent
from simcxl.config.groups import DCacheParams, LinkParams

MODES = {**coherent.DEVICE_MODES, "type1-fpga": ("type1-fpga", {})}
PAIRS = [("type1", "type2-bias-flips"), ("type1", "type2-hdm-db"), ("type1-fpga", "type2-device-bias"),
         ("type2-host-bias", "type2-hdm-db"), ("type2-bias-flips", "type2-device-bias"),
         ("type2-hdm-db", "type2-bias-flips")]



def dcoh(r, stat):
    """A DCOH counter summed over the devices (<device>.dcoh.<stat>)."""
    return sum(v for k, v in r.items() if k.endswith(".dcoh." + stat))

def one_credit(names):
    """Every credit of both links and both devices' CXL.cache channels set to 1."""
    kw = {}
    for d in names:
        kw.update({f"{d}.link.{f.name}": 1 for f in fields(LinkParams) if f.name.startswith("credits_")})
        kw.update({f"{d}.cache.{f.name}": 1 for f in fields(DCacheParams) if f.name.startswith("credits_")})
    return kw


def system(a, b, credits1):
    parts = []
    for n, m in (("a", a), ("b", b)):
        preset, kw = MODES[m]
        parts.append((n, coherent.load(preset).replace(**kw)))
    s = coherent.combine(parts)
    return s.replace(**one_credit("ab")) if credits1 else s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=2_000_000, help="operations per configuration")
    ap.add_argument("--lines", type=int, default=16)
    ap.add_argument("--host-threads", type=int, default=4)
    ap.add_argument("--device-requesters", type=int, default=4, help="per device")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    for a, b in PAIRS:
        for credits1 in (False, True):
            s = system(a, b, credits1)
            t = time.perf_counter()
            stall = ""
            try:
                r = coherent.stress(s, ops=args.ops, lines=args.lines, host_threads=args.host_threads,
                                    device_requesters=args.device_requesters, device_memory_fraction=0.6)
            except _core.StallError as e:
                r, stall = {"ops": 0, "checker_checks": 0, "checker_violations": 0, "deadlock": 1, "detail": ""}, str(e)
            rows.append({"devices": f"{a} + {b}", "credits": "1 per class" if credits1 else "preset",
                         "ops": int(r["ops"]), "checks": int(r["checker_checks"]),
                         "violations": int(r["checker_violations"]), "deadlocks": int(r["deadlock"]),
                         "stalls": 1 if stall else 0, "wall_s": round(time.perf_counter() - t, 2),
                         "bias_flips": int(dcoh(r, "bias_flips_to_device") + dcoh(r, "bias_flips_to_host")),
                         "back_invalidates": int(dcoh(r, "back_invalidates")),
                         "detail": stall or r["detail"]})
            x = rows[-1]
            if not args.json:
                print(f"{x['devices']:38s} {x['credits']:10s} {x['ops']:>10,} ops {x['checks']:>12,} checks "
                      f"{x['violations']} violations {x['deadlocks']} deadlocks {x['stalls']} stalls "
                      f"{x['wall_s']:7.2f} s  (bias flips {x['bias_flips']:,}, back-invalidates "
                      f"{x['back_invalidates']:,})" + (f"\n  {x['detail']}" if x["detail"] else ""), flush=True)
    total = sum(x["ops"] for x in rows)
    bad = sum(x["violations"] + x["deadlocks"] + x["stalls"] for x in rows)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"total: {total:,} operations in {sum(x['wall_s'] for x in rows):.1f} s, "
              f"{sum(x['violations'] for x in rows)} violations, {sum(x['deadlocks'] for x in rows)} deadlocks, "
              f"{sum(x['stalls'] for x in rows)} stalls")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
