"""Hosts and their CXL.cache accelerators sharing one device coherently (HDM-DB): the figures of
docs/tutorials/hosts.md ("Accelerators on a shared device").

    .venv/bin/python benchmarks/shared_accel.py [--stress N]

Prints:

1. ping-pong BISnp counts between a host's cores and another host's accelerator (and its own host's
   cores) on examples/topologies/shared-4hosts-accel.toml, against the hand count;
2. the latency of a store that takes a line from another host's cores, from another host's
   accelerator, and from the accelerator's own host (64 lines, 20 rounds of ping-pong);
3. ``--stress N``: N random loads and stores (30 % stores) from 8 hosts and their 8 Type-1
   accelerators, 4 threads each, on 256 lines, through 64-line host caches, 4 KiB device caches and a
   64-entry filter, with every CXL.cache credit, home tracker, queue and CXL.mem credit on the path set
   to 1 (examples/topologies/shared-8hosts-hdmdb.toml with an accelerator below each host): the checker's
   violations, and the simulated accesses per wall second.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import simcxl
from simcxl import topology

ROOT = Path(__file__).resolve().parents[1] / "examples" / "topologies"
FOUR = ROOT / "shared-4hosts-accel.toml"


def eight_hosts_with_devices() -> dict:
    """shared-8hosts-hdmdb.toml with a type1-asic accelerator below each host, every credit at 1."""
    d = topology.load(ROOT / "shared-8hosts-hdmdb.toml").to_dict()
    for i in range(8):
        h = f"h{i}"
        d["components"][f"{h}_home"] = {"type": "home_agent", "from": "type1-asic", "tracker": 1}
        d["components"][f"{h}_acc_link"] = {"type": "link", "from": "type1-asic"}
        d["components"][f"{h}_acc"] = {"type": "accelerator", "from": "type1-asic",
                                       "cache": dict(bytes=4096, assoc=4, credits_d2h_req=1, credits_d2h_rsp=1,
                                                     credits_d2h_data=1, credits_h2d_req=1, credits_h2d_rsp=1,
                                                     credits_h2d_data=1, credits_bisnp=1, credits_birsp=1)}
        d["connections"] += [{"from": f"{h}.home", "to": f"{h}_home.host"},
                             {"from": f"{h}_home.root_port[0]", "to": f"{h}_acc_link.up"},
                             {"from": f"{h}_acc_link.down", "to": f"{h}_acc.up"}]
    for c in d["components"].values():
        if c["type"] == "link":
            c.update(credits_req=1, credits_rwd=1, credits_ndr=1, credits_drs=1, credits_bisnp=1, credits_birsp=1)
        if c["type"] == "host_bridge":
            c.update(req_queue=1, resp_queue=1)
        if c["type"] == "type3":
            c["device"].update(req_queue=1, resp_queue=1, snoop_filter_entries=64, snoop_filter_ways=4)
    return d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stress", type=int, default=0, help="accesses of the stress run (0: skip it)")
    a = ap.parse_args()

    print("1. ping-pong, 4 lines, 5 rounds (shared-4hosts-accel.toml)")
    df = simcxl.shared(str(FOUR), ["h0", "h1_acc"], pattern="pingpong", lines=4, rounds=5)
    c = df.attrs["components"]
    print(f"   h0 cores <-> h1_acc: BISnpInv {int(c['shared_mem.bisnp_inv'])} vs 4 x (2 x 5 - 1) = 36; to h1 "
          f"{int(c['h1.shared_cache.bisnps'])}, each reaching h1_acc through h1_home "
          f"({int(c['h1_home.snoops_snpinv'])} SnpInv) vs 4 x (5 - 1) = 16")
    df = simcxl.shared(str(FOUR), ["h1", "h1_acc"], pattern="pingpong", lines=4, rounds=5)
    c = df.attrs["components"]
    h1 = df[df["device"] == ""].iloc[0]
    print(f"   h1 cores <-> h1_acc: BISnpInv {int(c['shared_mem.bisnp_inv'])} vs 0; h1's misses (reads of the "
          f"device) {int(h1['misses'])} vs 4; recalls by h1's cores {int(h1['shared_cache.core_recalls'])} "
          f"vs 4 x (5 - 1) = 16")

    print("2. store latency, ns (64 lines, ping-pong 20 rounds): the second initiator's mean")
    for pair in (["h0", "h1"], ["h0", "h1_acc"], ["h1", "h1_acc"], ["h1_acc", "h0"]):
        df = simcxl.shared(str(FOUR), pair, pattern="pingpong", lines=64, rounds=20)
        # Rows are hosts first, then devices: the second initiator's by its name.
        device = df["device"] if "device" in df else ""  # the column is there when a device takes part
        row = df[(device == pair[1]) | ((device == "") & (df["host"] == pair[1]))].iloc[0]
        st = {k[6:-3]: row[k] for k in df.columns if k.startswith("stage.") and row[k] == row[k] and row[k] > 0}
        print(f"   {pair[1]} taking lines from {pair[0]}: {row['latency_ns_mean']:.1f} ("
              + ", ".join(f"{k} {v:.1f}" for k, v in st.items()) + ")")

    if a.stress:
        t = time.perf_counter()
        df = simcxl.shared(topology.memory_system(topology.load(eight_hosts_with_devices())), threads=4, lines=256,
                           accesses=a.stress, store_fraction=0.3, cache_lines=64, cache_ways=4)
        wall = time.perf_counter() - t
        c = df.attrs["components"]
        hosts, devs = df[df["device"] == ""], df[df["device"] != ""]
        print(f"3. stress: {int(df['accesses'].iloc[0]):,} accesses ({int((hosts['loads'] + hosts['stores']).sum()):,} "
              f"by hosts, {int((devs['loads'] + devs['stores']).sum()):,} by devices), "
              f"{int(c['checker_checks']):,} checks, {int(c['checker_violations'])} violations, "
              f"{int(c['shared_mem.bisnp_inv']):,} BISnpInv, {int(c['shared_mem.bisnp_data']):,} BISnpData, "
              f"{int(hosts['shared_cache.snoop_recalls'].sum()):,} reaching device caches, "
              f"{int(hosts['shared_cache.core_recalls'].sum()):,} core recalls, "
              f"{int(c['shared_mem.sf_evictions']):,} filter evictions; "
              f"{wall:.1f} s wall, {df['accesses'].iloc[0] / wall / 1e6:.2f} M accesses/s")


if __name__ == "__main__":
    main()
