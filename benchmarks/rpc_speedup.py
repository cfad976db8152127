"""RPC (de)serialisation speedup of the CXL-NIC over the PCIe NIC and over the host core per message
shape, and the average, beside the published 1.86x (Cohet, Wang et al., HPCA 2026, arXiv:2511.23011).

    PYTHONPATH=. python benchmarks/rpc_speedup.py [--plot rpc.png]

Simulated on the standalone engine, accelerator preset type1-asic, default NicParams (the engine's
and the host core's compute rates are assumptions: nic.rpc_field_ns, nic.rpc_gbps, nic.host_field_ns,
nic.host_copy_gbps); one message at a time."""

import argparse

import pandas as pd

from simcxl import _core
from simcxl.workloads import nic


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", default="type1-asic")
    ap.add_argument("--plot", default=None)
    a = ap.parse_args()
    shapes = pd.DataFrame(_core.rpc_shapes()).set_index("shape")
    print("# message shapes (fields per top-level message, nesting depth, share of bytes in strings)")
    print(shapes.to_string())
    df = nic.rpc(a.system)
    piv = df.pivot_table(index=["shape", "direction"], columns="mechanism", values="latency_ns", sort=False)
    sp = nic.rpc_speedup(df).set_index(["shape", "direction"])
    pd.set_option("display.width", 160)
    print("# latency (ns) and speedups")
    print(piv.join(sp).round(2).to_string())
    print(f"average CXL-NIC over PCIe NIC: {sp['cxl_over_pcie'].mean():.2f}x (published "
          f"{nic.PUBLISHED_RPC_SPEEDUP}x); over the host core: {sp['cxl_over_host'].mean():.2f}x")
    # With the engine no faster than a host core, what is left is the data movement.
    same = nic.load(a.system, {"rpc_field_ns": nic.NicParams().host_field_ns,
                               "rpc_gbps": nic.NicParams().host_copy_gbps})
    sp2 = nic.rpc_speedup(nic.rpc(same))
    print(f"with the engine computing at the host core's rates: {sp2['cxl_over_pcie'].mean():.2f}x over the PCIe "
          f"NIC, {sp2['cxl_over_host'].mean():.2f}x over the host core")
    if a.plot:
        nic.plot_rpc(df, a.plot)


if __name__ == "__main__":
    main()
