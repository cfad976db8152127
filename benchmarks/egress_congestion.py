"""Egress-port congestion as a DevLoad input: the figures of docs/tutorials/hosts.md.

    .venv/bin/python benchmarks/egress_congestion.py

The systems are tests/test_qos_egress.py's (built by its helpers): three link-bound hosts with
cxl-asic's 128-request bridges; two of them load the fabric, the third probes with one dependent
load at a time.

1. writers: the three hosts on x16 ports share one x4 downstream port to an MLD; h0 and h1 write;
2. readers: the three hosts reach sw0, whose one downstream port leads over an x4 trunk to sw1's
   upstream port and on to an MLD; h0 and h1 read;

each unthrottled, throttled by the device's DevLoad alone, and throttled with the switches'
egress congestion (``egress_congestion = 1``, the schema's thresholds and interval); then the
readers' case over other thresholds and intervals.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_qos_egress import READERS, WRITERS, X4_READ, X4_WRITE, cascade, compare, run, write_pool  # noqa: E402


def figures(build, runs, busy, kind, port, sw):
    # Unthrottled hosts ignore DevLoad: their switches measure (the same figures as without, as
    # tests/test_qos_egress.py checks) to show their ports' backpressure.
    idle, *dfs = compare(build, runs, measure=1)
    rows = []
    for name, df in zip(("unthrottled", "throttled by the device's DevLoad", "throttled with egress congestion"), dfs):
        c = df.attrs["components"]
        rows.append({"run": name, f"{kind}_gbps": df.loc[busy, f"{kind}_gbps"].sum(),
                     "probe_ns": df.loc["h2", "probe_latency_ns_mean"],
                     "probe_extra_ns": df.loc["h2", "probe_latency_ns_mean"] - idle,
                     f"{sw}.egress_full": c[f"{sw}.egress_full"],
                     "backpressure": c.get(f"{sw}.{port}.egress_backpressure", float("nan")),
                     "device_queue": c["d0.mean_occupancy"]})
    return idle, pd.DataFrame(rows).set_index("run")


def main():
    pd.set_option("display.width", 200)
    pd.set_option("display.precision", 3)
    busy = ["h0", "h1"]
    idle, df = figures(write_pool, WRITERS, busy, "write", "dsp0", "sw")
    print(f"1. writers through a shared x4 downstream port (bound by hand {X4_WRITE:.2f} GB/s; probe alone "
          f"{idle:.1f} ns; backpressure: sw.dsp0's share of the window)")
    print(df.to_string(), "\n")

    idle, df = figures(cascade, READERS, busy, "read", "up0", "sw1")
    print(f"2. readers through a shared x4 trunk above sw1's upstream port (bound by hand {X4_READ:.2f} GB/s; "
          f"probe alone {idle:.1f} ns; backpressure: sw1.up0's share of the window)")
    print(df.to_string(), "\n")

    rows = []
    for mod, sev, iv in ((0.10, 0.25, 1000), (0.10, 0.25, 500), (0.10, 0.25, 2000), (0.25, 0.5, 1000),
                         (0.5, 0.9, 1000)):
        df = run(cascade(egress_moderate=mod, egress_severe=sev, congestion_interval_ns=iv), READERS)
        c = df.attrs["components"]
        rows.append({"egress_moderate": mod, "egress_severe": sev, "congestion_interval_ns": iv,
                     "read_gbps": df.loc[busy, "read_gbps"].sum(),
                     "of_bound": df.loc[busy, "read_gbps"].sum() / X4_READ,
                     "probe_extra_ns": df.loc["h2", "probe_latency_ns_mean"] - idle,
                     "backpressure": c["sw1.up0.egress_backpressure"]})
    print("3. readers, throttled with egress congestion, over thresholds and intervals")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
