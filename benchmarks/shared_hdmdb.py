"""Hosts sharing one device coherently (HDM-DB): the figures of docs/tutorials/hosts.md.

    .venv/bin/python benchmarks/shared_hdmdb.py [--stress N]

Every run is on examples/topologies/shared-8hosts-hdmdb.toml (eight cxl-asic hosts, x8 root ports,
one switch, one shared cxl-asic device), its parameters as the file gives them unless a line says
otherwise. Prints:

1. the cost of a back-invalidate: the mean latency of a store that takes a line from another host
   (ping-pong on 2 hosts) against a store miss that takes it from no one (1 host), and its stages;
2. ping-pong BISnp counts on 2, 4 and 8 hosts against lines x (hosts x rounds - 1);
3. a snoop-filter capacity sweep: 4 hosts x 2 threads loading 4,096 shared lines at random;
4. ``--stress N``: N random loads and stores (30 % stores) from 8 hosts x 4 threads on 256 lines
   through 64-line caches and a 64-entry filter, every credit and queue on the path set to 1: the
   checker's violations, and the simulated accesses per wall second.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import simcxl
from simcxl import topology

FILE = Path(__file__).resolve().parents[1] / "examples" / "topologies" / "shared-8hosts-hdmdb.toml"


def system(edit=None):
    d = topology.load(FILE).to_dict()
    if edit:
        edit(d)
    return topology.memory_system(topology.load(d))


def dev(df, k):
    return df.attrs["components"][f"shared_mem.{k}"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stress", type=int, default=0, help="accesses of the stress run (0: skip it)")
    a = ap.parse_args()
    s = system()

    alone = simcxl.shared(s, ["h0"], pattern="pingpong", lines=64, rounds=1)
    pp = simcxl.shared(s, ["h0", "h1"], pattern="pingpong", lines=64, rounds=20)
    print("1. store latency, ns (64 lines; ping-pong 20 rounds)")
    print(f"   store miss, no other holder (1 host): {alone['latency_ns_mean'].mean():.1f}")
    print(f"   store taking the line from another host (2 hosts): {pp['latency_ns_mean'].mean():.1f}")
    for name, df in (("1 host", alone), ("2 hosts", pp)):
        st = {c[6:-3]: df[c].mean() for c in df.columns if c.startswith("stage.")}
        print(f"   stages, {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in st.items()))

    print("2. ping-pong BISnpInv (lines 4, rounds 5): simulated vs lines x (hosts x rounds - 1)")
    for n in (2, 4, 8):
        df = simcxl.shared(s, [f"h{i}" for i in range(n)], pattern="pingpong", lines=4, rounds=5)
        print(f"   {n} hosts: {int(dev(df, 'bisnp_inv'))} vs {4 * (n * 5 - 1)}")

    print("3. snoop-filter sweep: 4 hosts x 2 threads, random loads of 4096 lines, 40,000 accesses")
    print("   entries  ways  sf_evictions  bisnp_inv  mean latency ns")
    for entries in (16384, 8192, 4096, 2048, 1024, 512):
        def edit(d, e=entries):
            d["components"]["shared_mem"]["device"].update(snoop_filter_entries=e, snoop_filter_ways=16)
        df = simcxl.shared(system(edit), [f"h{i}" for i in range(4)], threads=2, lines=4096, accesses=40000,
                           store_fraction=0.0)
        print(f"   {entries:7d}  {16:4d}  {int(dev(df, 'sf_evictions')):12d}  {int(dev(df, 'bisnp_inv')):9d}"
              f"  {df['latency_ns_mean'].mean():10.1f}")

    if a.stress:
        def tight(d):
            for c in d["components"].values():
                if c["type"] == "link":
                    c.update(credits_req=1, credits_rwd=1, credits_ndr=1, credits_drs=1, credits_bisnp=1,
                             credits_birsp=1)
                if c["type"] == "host_bridge":
                    c.update(req_queue=1, resp_queue=1)
                if c["type"] == "type3":
                    c["device"].update(req_queue=1, resp_queue=1, snoop_filter_entries=64, snoop_filter_ways=4)
        t = time.perf_counter()
        df = simcxl.shared(system(tight), threads=4, lines=256, accesses=a.stress, store_fraction=0.3,
                           cache_lines=64, cache_ways=4)
        wall = time.perf_counter() - t
        c = df.attrs["components"]
        print(f"4. stress: {int(df['accesses'].iloc[0]):,} accesses, {int(c['checker_checks']):,} checks, "
              f"{int(c['checker_violations'])} violations, {int(dev(df, 'bisnp_inv')):,} BISnpInv, "
              f"{int(dev(df, 'bisnp_data')):,} BISnpData, {int(dev(df, 'sf_evictions')):,} filter evictions; "
              f"{wall:.1f} s wall, {df['accesses'].iloc[0] / wall / 1e6:.2f} M accesses/s")


if __name__ == "__main__":
    main()
