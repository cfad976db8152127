"""A long RAO run: the CXL-NIC's (and PCIe NIC's) queues, tracked lines and allocations stay bounded
however many operations run. Prints the bounds next to the limits they must respect.

    PYTHONPATH=. python benchmarks/rao_long.py [--iters 200000]

Simulated on the standalone engine, accelerator preset type1-asic, default NicParams."""

import argparse

from simcxl import _core
from simcxl.workloads import nic
from simcxl.topology import core_graph


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=4)
    a = ap.parse_args()
    s = nic.load("type1-asic")
    sys_, n = core_graph(s), s.nic
    for mech in ("cxl-nic", "pcie-nic"):
        for iters in (a.iters // 20, a.iters):
            r = _core.run_rao(sys_, "rand", "add", mech, a.threads, iters, 1 << 16)
            print(f"{mech:9s} ops {r['ops']:>10.0f}  Mops/s {r['ops_per_second'] / 1e6:6.2f}  "
                  f"max in flight {r['dev0.max_ops_in_flight']:.0f}  max line queue {r['dev0.max_line_queue']:.0f}  "
                  f"messages allocated (accesses and messages) {r['messages_allocated']:.0f}  "
                  f"home line states max {r['home.line_states_max']:.0f}  "
                  f"max queued up/down {r['dev0.max_queued_up']:.0f}/{r['home.max_queued_down']:.0f}")
    print(f"limits: nic.ops_in_flight {n.ops_in_flight}, ring {n.ring_entries} per thread; allocations must not "
          "grow with the operation count")


if __name__ == "__main__":
    main()
