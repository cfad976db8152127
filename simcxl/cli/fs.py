"""``simcxl guest`` and ``simcxl fs``: the full-system guest, and Linux on gem5 with CXL memory."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..config.params import ParamError
from .common import Command, Group, emit_json, json_opt, user_errors


@click.group("guest", cls=Group)
def guest_group():
    """The full-system guest: a kernel and initramfs built from Debian packages."""


@guest_group.command("build")
@click.option("--cache", type=click.Path(file_okay=False), default=None,
              help="Cache folder (default $SIMCXL_GUEST_CACHE or ~/.cache/simcxl/guest).")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=2, show_default=True)
@click.option("--install", is_flag=True, help="apt-get install the Debian packages it needs (root only).")
@click.option("--drop-tree", is_flag=True, help="Remove the built kernel tree (about 1.8 GB) from the cache; a "
              "changed guest benchmark then rebuilds the kernel instead of relinking it.")
@json_opt
def guest_build(cache, jobs, install, drop_tree, as_json):
    """Build (or find in the cache) the guest kernel with its initramfs."""
    from ..gem5 import fs
    with user_errors():
        paths = fs.build_guest(cache=cache, jobs=jobs, install=install, keep_tree=not drop_tree)
    if as_json:
        emit_json({k: str(v) for k, v in paths.items()})
    else:
        for k, v in paths.items():
            click.echo(f"{k}={v}")


@click.command("fs", cls=Command, example="simcxl fs --gem5 gem5/build/X86/gem5.opt --out fs-out")
@click.option("--gem5", envvar="GEM5", required=True, help="gem5 X86 binary built with this repository as EXTRAS "
              "(default $GEM5).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--kernel", default=None, help="Guest vmlinux with its initramfs built in (default: the one "
              "`simcxl guest build` cached).")
@click.option("--bench", type=click.Choice(["topology", "lmbench", "stream", "loaded-latency"]), default="topology",
              show_default=True, help="Guest benchmark, pinned with numactl to --node's memory and node 0's CPUs.")
@click.option("--node", type=click.IntRange(0, 63), default=1, show_default=True,
              help="NUMA node holding the benchmark's memory (0: local DDR; 1, 2, ...: the --cxl windows).")
@click.option("--local", default="ddr-local", show_default=True, help="Preset of node 0 (its host shapes the caches).")
@click.option("--local-size", default="1GiB", show_default=True)
@click.option("--numa", "numa_file", default=None, type=click.Path(dir_okay=False),
              help="NUMA description (JSON: nodes with read/write latency_ns and bandwidth_gbps, optional "
                   "distances) for the SRAT/SLIT/HMAT, instead of the standalone engine's for the presets.")
@click.option("--cxl", multiple=True, default=["cxl-asic:1GiB"], show_default=True, metavar="PRESET:SIZE[@BASE]",
              help="One CXL window (a CPU-less node), placed from 4 GiB up unless @BASE is given; repeat for more. "
                   "PRESET may be a topology file with one host bridge, e.g. a switch with Type-3 devices below "
                   "one root port (examples/topologies/switch-2dev.toml; with --cxl-region).")
@click.option("--cpu", type=click.Choice(["kvm", "atomic", "timing", "o3"]), default="kvm", show_default=True)
@click.option("--cores", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--sizes", default="1MiB,64MiB", show_default=True, help="lmbench: working sets.")
@click.option("--accesses", type=click.IntRange(1, 1 << 32), default=100000, show_default=True,
              help="lmbench / loaded-latency: timed loads per working set.")
@click.option("--stream-kernel", type=click.Choice(["copy", "scale", "add", "triad", "read"]), default="triad",
              show_default=True, help="stream: the kernel (read: a sum over one array, reads only).")
@click.option("--elements", type=click.IntRange(1, 1 << 40), default=1 << 20, show_default=True,
              help="stream: elements of each array per thread.")
@click.option("--timed", type=click.IntRange(0, 1 << 40), default=0, show_default=True,
              help="stream with --warm atomic: elements of each slice timed on --cpu (0: all).")
@click.option("--warm", type=click.Choice(["none", "atomic"]), default="none", show_default=True,
              help="With --restore and --cpu timing/o3: run on atomic cores and switch to --cpu only for the "
                   "benchmark's timed part (lmbench warms about twice the caches' lines first).")
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True,
              help="stream / loaded-latency: threads (traffic threads for loaded-latency).")
@click.option("--mode", type=click.Choice(["R", "W2", "W3", "W5"]), default="R", show_default=True,
              help="loaded-latency: MLC's traffic mode (reads only, 2:1, 3:1, 1:1 read:write).")
@click.option("--checkpoint", type=click.Path(file_okay=False), default=None,
              help="Boot, checkpoint at the guest's shell into this folder, and stop.")
@click.option("--restore", type=click.Path(file_okay=False, exists=True), default=None,
              help="Resume this checkpoint (e.g. with --cpu o3) and run the benchmark there.")
@click.option("--max-seconds", type=click.FloatRange(0.001, 1e4), default=5.0, show_default=True,
              help="Simulated seconds at most.")
@click.option("--cxl-driver", is_flag=True,
              help="Linux's own CXL drivers (cxl_acpi, cxl_pci, cxl_port, cxl_mem) enumerate each window's host "
                   "bridge, root ports and memory devices (ACPI DSDT/MCFG/CEDT, ECAM, the core's registers); with "
                   "--bench topology the guest runs `cxl list -M -D -P -E -u` and its memdevs, ports and decoders "
                   "come back as tables.")
@click.option("--cxl-region", is_flag=True,
              help="As --cxl-driver, but firmware maps no window (CEDT only, no decoder committed): the guest "
                   "creates a ram region per window through the kernel's sysfs interface (`cxl create-region`'s "
                   "steps; Linux 6.3 or later), Linux commits the decoders, the timing routes by them and Linux "
                   "onlines each region as a NUMA node (window i's as node 1 + i); --bench topology lists the "
                   "regions too, any other benchmark runs once they are online.")
@json_opt
def fs_cmd(gem5, out, kernel, bench, node, local, local_size, numa_file, cxl, cpu, cores, sizes, accesses, stream_kernel, elements,
           timed, warm, threads, mode, checkpoint, restore, max_seconds, cxl_driver, cxl_region, as_json):
    """Full system: Linux on gem5's X86 board with CXL memory as CPU-less NUMA nodes."""
    from ..gem5 import fs
    from ..engine.standalone import parse_size
    with user_errors():
        marks = warm == "atomic"
        run = fs.guest_command(bench, node, sizes=[parse_size(x, "sizes") for x in sizes.split(",")],
                               accesses=accesses, threads=threads, mode=mode, kernel=stream_kernel,
                               elements=elements, marks=marks, timed=timed,
                               warm_lines=fs.default_warm_lines(local) if marks else 0)
        cxl_driver = cxl_driver or cxl_region
        if cxl_region:
            run = fs.region_run(list(cxl), then="" if bench == "topology" else run)
        elif cxl_driver and bench == "topology":
            run = fs.CXL_DRIVER_RUN
        numa = None
        if numa_file:
            from ..gem5.numa import Numa
            try:
                numa = Numa.from_dict(json.loads(Path(numa_file).read_text()))
            except (OSError, ValueError) as e:
                raise ParamError(f"--numa {numa_file}: {getattr(e, 'strerror', None) or e}") from None
        r = fs.boot(gem5, out, kernel=kernel, warm=warm, local=local, numa=numa, cxl=list(cxl), cpu=cpu, cores=cores, run=run, bench=bench, node=node,
                    local_size=local_size, max_seconds=max_seconds, checkpoint=checkpoint, restore=restore,
                    cxl_io=cxl_driver, linux_regions=cxl_region)
    cxl_tables = {}
    listed = cxl_driver and bench == "topology"
    if listed:
        from ..gem5 import cxlcli
        docs = cxlcli.listings(r.console)
        cxl_tables = cxlcli.tables(docs[-1]) if docs else {}
        if cxl_region:
            cxl_tables["dax"] = cxlcli.dax_devices(r.console)
    if as_json:
        emit_json({"cause": r.cause, "cpu": r.cpu, "fallback": r.fallback or None, "topology": r.topology.__dict__,
                   "command": run,
                   "results": r.frame.to_dict(orient="records"),
                   **({"cxl": {k: v.to_dict(orient="records") for k, v in cxl_tables.items()},
                       "cdat": {p: raw.hex() for p, raw in cxlcli.cdat_dumps(r.console).items()}}
                      if listed else {})})
        return
    if r.fallback:
        click.echo(f"simcxl: booted on atomic cores, not KVM: {r.fallback}", err=True)
    click.echo(f"gem5: {r.cause or 'no exit cause'}; guest nodes: " + ", ".join(
        f"{n} ({r.topology.size_mb.get(n, 0)} MB, cpus {r.topology.cpus.get(n) or '-'})" for n in sorted(r.topology.cpus)))
    if r.topology.distances:
        click.echo("distances: " + " / ".join(" ".join(map(str, row)) for row in r.topology.distances))
    for n, h in sorted(r.topology.hmat.items()):
        click.echo(f"HMAT node {n} (access0): read {h.get('read_latency', '-')} ns, {h.get('read_bandwidth', '-')} "
                   f"MB/s; write {h.get('write_latency', '-')} ns, {h.get('write_bandwidth', '-')} MB/s")
    if len(r.frame):
        click.echo(r.frame.to_string(index=False))
    if listed:
        if not cxl_tables:
            click.echo("cxl list printed nothing the parser could read; see the console", err=True)
        for name, t in cxl_tables.items():
            click.echo(f"{name}:\n" + (t.to_string(index=False) if len(t) else "  (none)"))
        for path, raw in cxlcli.cdat_dumps(r.console).items():
            click.echo(f"CDAT read by Linux ({path}):\n" + cxlcli.dslbis(raw).to_string(index=False))
    click.echo(f"console and logs in {r.outdir}")
