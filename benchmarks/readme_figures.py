"""Re-simulates the standalone figures the documentation reports and prints each beside the documented value.

The documented numbers (README.md and the pages under docs/, where the README's former sections now
live: getting-started, tutorials/address-maps, tutorials/accelerators, tutorials/full-system) are
simulations of the shipped presets; a change to the core or a preset can move them. The values below
are the documentation's, as written (change them with it). This prints, per section, the documented
figure (labelled README), today's and the difference, and flags those more than 0.5 % apart, so a
change can be checked against what the documentation tells users (and the pages brought up to date).
Sections: demo, address-map, mixed, type2, dma, numa, fs (all by default; --section picks some).
Every run here is the configuration the documentation names beside the figure.

    .venv/bin/python benchmarks/readme_figures.py [--section demo --section mixed] [--csv out.csv]
"""

import sys
import time

import click
import pandas as pd

from simcxl.workloads import coherent, mixed
from simcxl.engine import standalone as engine
from simcxl.gem5 import numa
from simcxl.workloads.demo import MEMORIES


def demo():
    """`simcxl demo`'s last table: where a 1 GiB-working-set miss spends its time."""
    readme = {
        "ddr-local": dict(host_uncore=43.1, media_queue=18.7, media_service=41.3),
        "ddr-remote": dict(host_uncore=43.1, link_down=37.3, media_queue=17.7, media_service=41.3, link_up=38.3),
        "cxl-asic": dict(host_uncore=43.1, host_port=30.0, link_down=27.2, device=76.9, media_queue=16.1,
                         media_service=41.9, link_up=29.3),
        "cxl-fpga": dict(host_uncore=43.1, host_port=30.0, link_down=26.1, device=165.9, media_queue=22.9,
                         media_service=50.8, link_up=27.2),
    }
    for m in MEMORIES:
        bd = engine.breakdown(engine.lmbench(m, ["1g"], accesses=5000)).set_index("stage")["ns"]
        for stage, v in readme[m].items():
            yield f"{m} 1 GiB miss, {stage} (ns)", v, float(bd[stage])


def address_map():
    """STREAM triad over ddr=ddr-local+cxl0=cxl-asic, alone and interleaved w:1."""
    s = "ddr=ddr-local+cxl0=cxl-asic"
    kw = dict(kernels=["triad"], threads=16, lines_per_thread=4000, placement="contiguous")
    for t, v in (("ddr", 22.33), ("cxl0", 18.90)):
        yield f"{t} alone (GB/s)", v, float(engine.stream(s, target=t, **kw).iloc[0]["stream_gbps"])
    for w, v in ((1, 38.17), (2, 34.37), (3, 29.85), (4, 27.85), (8, 25.32)):
        got = engine.stream(s, target=f"ddr:{w},cxl0:1", **kw).iloc[0]["stream_gbps"]
        yield f"interleave ddr:{w},cxl0:1 (GB/s)", v, float(got)


def mixed_runs():
    """`simcxl run mixed` with type1-asic's 8 requesters x 16 loads beside host STREAM triad, 16 threads."""
    s = mixed.attach("ddr=ddr-local+cxl0=cxl-asic", "gpu=type1-asic")
    for host_on, dev_on, h_alone, h_tog, a_alone, a_tog in (("ddr", "cxl0", 21.87, 21.87, 10.64, 10.63),
                                                            ("ddr", "ddr", 21.87, 18.81, 15.79, 3.93),
                                                            ("cxl0", "cxl0", 18.90, 15.55, 10.64, 3.53)):
        dev = {"gpu": {"target": dev_on}}
        tog = mixed.run(s, target=host_on, devices=dev).iloc[0]
        ha = mixed.run(s, target=host_on, accelerators=False).iloc[0]
        aa = mixed.run(s, host=False, devices=dev).iloc[0]
        label = f"host on {host_on}, gpu on {dev_on}"
        yield f"{label}: host alone (GB/s)", h_alone, float(ha["host.stream_gbps"])
        yield f"{label}: host together (GB/s)", h_tog, float(tog["host.stream_gbps"])
        yield f"{label}: gpu alone (GB/s)", a_alone, float(aa["accel.gpu.bandwidth_gbps"])
        yield f"{label}: gpu together (GB/s)", a_tog, float(tog["accel.gpu.bandwidth_gbps"])


def type2():
    """lmbench on type2-bias device memory, 64 MiB, device bias and host bias."""
    dev = coherent.load("type2-bias").replace(**{"accel.device_bias": 1})
    host = coherent.load("type2-bias").replace(**{"accel.auto_bias_flip": 0})
    yield "device bias (ns)", 74.6, float(coherent.lmbench(dev, ["64m"], target="device").iloc[0]["latency_ns"])
    yield "host bias (ns)", 167.6, float(coherent.lmbench(host, ["64m"], target="device").iloc[0]["latency_ns"])


def dma():
    """benchmarks/dma_vs_cache.py's 64 B figures, type1-asic."""
    df = coherent.dma_vs_cache("type1-asic", sizes=[64]).set_index("mechanism")
    yield "64 B DMA latency (ns)", 589, float(df.loc["dma", "latency_ns"])
    yield "64 B CXL.cache latency (ns)", 145, float(df.loc["cxl.cache", "latency_ns"])
    yield "64 B CXL.cache bandwidth (GB/s)", 12.3, float(df.loc["cxl.cache", "bandwidth_gbps"])
    yield "64 B DMA bandwidth (GB/s)", 0.20, float(df.loc["dma", "bandwidth_gbps"])


def numa_nodes():
    """The full-system board's HMAT figures from the standalone engine (simcxl.gem5.numa.measure)."""
    for m, lat, rd, wr in (("ddr-local", 103.3, 30.2, 31.3), ("cxl-asic", 264.5, 24.1, 14.9),
                           ("cxl-fpga", 365.9, 11.6, 11.7)):
        n = numa.measure(m)
        yield f"{m} read latency (ns)", lat, n.read_latency_ns
        yield f"{m} read bandwidth (GB/s)", rd, n.read_bandwidth_gbps
        yield f"{m} write bandwidth (GB/s)", wr, n.write_bandwidth_gbps


def fs_reference():
    """The standalone figures the full-system runs are compared with: a 1 GiB chase, STREAM at 1 and 16 threads."""
    mems = ("ddr-local", "cxl-asic", "cxl-fpga")
    for m, v in zip(mems, (131.2, 285.6, 382.5)):
        yield f"{m} 1 GiB chase (ns)", v, float(engine.lmbench(m, ["1g"]).iloc[0]["latency_ns"])
    for threads, vals in ((1, (9.00, 3.68, 2.63)), (16, (21.94, 18.89, 10.24))):
        for m, v in zip(mems, vals):
            got = engine.stream(m, ["triad"], threads=threads).iloc[0]["stream_gbps"]
            yield f"{m} STREAM triad, {threads} threads (GB/s)", v, float(got)


SECTIONS = {"demo": demo, "address-map": address_map, "mixed": mixed_runs, "type2": type2, "dma": dma,
            "numa": numa_nodes, "fs": fs_reference}


@click.command()
@click.option("--section", "sections", multiple=True, type=click.Choice(list(SECTIONS)),
              help="Sections to re-simulate (default: all).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), help="Also write the table here.")
@click.option("--threshold", default=0.5, show_default=True, help="Flag differences above this (%).")
def main(sections, csv_path, threshold):
    rows = []
    for name in sections or SECTIONS:
        t0 = time.time()
        for label, readme, now in SECTIONS[name]():
            diff = (now - readme) / readme * 100 if readme else float("nan")
            rows.append(dict(section=name, figure=label, readme=readme, now=round(now, 3), diff_pct=round(diff, 2),
                             flag="*" if abs(diff) > threshold else ""))
            print(f"{name:12} {label:50} README {readme:9.2f}  now {now:9.3f}  {diff:+7.2f} % {rows[-1]['flag']}",
                  flush=True)
        print(f"# {name}: {time.time() - t0:.0f} s", file=sys.stderr)
    df = pd.DataFrame(rows)
    if csv_path:
        df.to_csv(csv_path, index=False)
    flagged = df[df["flag"] == "*"]
    print(f"\n{len(df)} figures, {len(flagged)} more than {threshold} % from the README "
          f"(simcxl {engine._version()}, standalone engine)")


if __name__ == "__main__":
    main()
