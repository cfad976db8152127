"""``simcxl run``: the group, and its workloads on memories (host loads and
stores through the memory path); the accelerator workloads are in run_accel."""

from __future__ import annotations

from pathlib import Path

import click

from ..engine import standalone as engine
from ..config.param_group import did_you_mean
from ..config.params import ParamError
from . import run_accel
from .tracing import add_trace_options
from .common import (Group, UserError, count, csv_opt, emit_json, json_opt, load_memories, memory_opt, parse_counts,
                     parse_floats, parse_sizes, plot_opt, run_each, set_opt, table, target_col, target_opt,
                     user_errors, windows_table, write_outputs)


@click.group(cls=Group)
def run():
    """Run a workload on one or more memories."""


@run.command("lmbench")
@memory_opt
@set_opt
@click.option("--sizes", help="Comma-separated working sets (e.g. 4k,1m,1g); default 512 B to 1 GiB.")
@click.option("--max-size", default=None, help="Largest working set of the default list (e.g. 256m).")
@click.option("--stride", default=0, show_default=True, help="Bytes between loads; 0 = random order (lat_mem_rd -t).")
@click.option("--accesses", default=20000, show_default=True, help="Timed loads per working set.")
@target_opt
@json_opt
@plot_opt
@csv_opt
def run_lmbench(memories, overrides, sizes, max_size, stride, accesses, target, as_json, plot, csv_path):
    """Load-to-use latency over working-set sizes (LMbench lat_mem_rd)."""
    with user_errors():
        systems = load_memories(memories, overrides)
        if sizes is not None:
            ws = parse_sizes(sizes, "--sizes", 64, 1 << 40)
        else:
            top = engine.parse_size(max_size, "--max-size") if max_size else 1 << 30
            ws = [s for s in engine.LMBENCH_SIZES if s <= top]
        # Memories behind the same host share its cache walks (the outcomes depend on the host alone).
        cache = engine._core.WarmCache(len(ws)) if len(systems) > 1 else None
        df = run_each(systems, "lmbench",
                      lambda s, cb: engine.lmbench(s, ws, stride=stride, accesses=accesses, progress=cb,
                                                   target=target, cache=cache))
    if as_json:
        keep = ["memory", "working_set_bytes", "latency_ns"] if len(systems) > 1 else ["working_set_bytes", "latency_ns"]
        emit_json(df[keep + target_col(df)].to_dict("records"))
    else:
        click.echo(table(df, ["memory"] + target_col(df) + ["working_set_bytes", "latency_ns", "hit_l1", "hit_l2",
                                                          "hit_llc", "hit_memory"]))
    write_outputs(df, plot, csv_path, "lmbench")


@run.command("stream")
@memory_opt
@set_opt
@click.option("--kernel", "kernels", multiple=True, type=click.Choice(engine.KERNELS),
              help="Kernel(s) to run; default all four.")
@click.option("--threads", type=int, default=None, help="Threads (default: min(16, host cores)).")
@click.option("--lines", "lines", type=count(1, 1 << 34), default=8000, show_default=True,
              help="Cache lines per array per thread.")
@click.option("--placement", type=click.Choice(engine.PLACEMENTS), default="first-touch", show_default=True,
              help="Physical pages of the arrays: as the initialisation loop faults them, or each array in one piece.")
@click.option("--stores", type=click.Choice(engine.STORES), default="write-allocate", show_default=True,
              help="Stores read their line for ownership first, or write full lines without a read (streaming "
                   "stores, or a copy loop compiled to memcpy).")
@target_opt
@json_opt
@plot_opt
@csv_opt
def run_stream(memories, overrides, kernels, threads, lines, placement, stores, target, as_json, plot, csv_path):
    """STREAM copy/scale/add/triad bandwidth."""
    with user_errors():
        systems = load_memories(memories, overrides)
        df = run_each(systems, "stream", lambda s, cb: engine.stream(
            s, kernels or engine.KERNELS, threads=threads, lines_per_thread=lines, placement=placement,
            stores=stores, progress=cb, target=target))
    df["bandwidth_gbps"] = df["stream_gbps"]
    if as_json:
        def one(g):
            out = dict(zip(g["kernel"], g["bandwidth_gbps"]))
            return {**out, "target": g["target"].iloc[0]} if "target" in g.columns else out
        if len(systems) == 1:
            emit_json(one(df))
        else:
            emit_json({m: one(g) for m, g in df.groupby("memory", sort=False)})
    else:
        click.echo(table(df, ["memory"] + target_col(df) + ["kernel", "threads", "stream_gbps", "read_gbps",
                                                          "write_gbps", "read_latency_ns_mean"]))
        windows_table(df)
    write_outputs(df, plot, csv_path, "stream")


@run.command("loaded-latency")
@memory_opt
@set_opt
@click.option("--threads", "threads", default="1,2,4,8,16", show_default=True, help="Traffic thread counts.")
@click.option("--mode", "modes", default=None,
              help="MLC traffic modes, comma-separated: R (reads only), W2, W3, W4, W5, W12-W17 (stores with read "
                   "for ownership), W6-W9 (non-temporal stores); ratios as MLC's -W counts them. Instead of "
                   "--read-fraction.")
@click.option("--read-fraction", "rfs", default=None,
              help="Read fractions of the memory traffic (comma-separated, 0 to 1; 0.5 to 1 with "
                   "--stores write-allocate). Default 1.0.")
@click.option("--stores", default="non-temporal", show_default=True,
              type=click.Choice(["non-temporal", "write-allocate"]),
              help="With --read-fraction: stores write whole lines (non-temporal) or read them for ownership first "
                   "and write them back when evicted (write-allocate, MLC's RFO modes).")
@click.option("--pattern", default="random", show_default=True, type=click.Choice(["random", "sequential"]),
              help="Random lines (MLC -U) or sequential ones (MLC's default).")
@click.option("--requests", default=100000, show_default=True, help="Traffic requests per point.")
@click.option("--delay", "delay", default="0", show_default=True,
              help="Pause between a traffic thread's accesses (ns), comma-separated to sweep (MLC -d), or 'mlc' "
                   "for MLC's default sweep 0,2,8,...,20000.")
@target_opt
@json_opt
@plot_opt
@csv_opt
def run_loaded(memories, overrides, threads, modes, rfs, stores, pattern, requests, delay, target, as_json, plot,
               csv_path):
    """MLC-style loaded latency: probe latency under traffic."""
    from ..engine import mlc
    with user_errors():
        systems = load_memories(memories, overrides)
        ts = parse_counts(threads, "--threads", 1, max(s.host.cores for s in systems))
        if modes is not None and rfs is not None:
            raise UserError("--mode and --read-fraction both set the traffic; give one of them")
        mode_list = None if modes is None else [m for m in modes.split(",") if m.strip()]
        for m in mode_list or []:
            mlc.mode(m)  # a bad name stops here, before any run
        if mode_list == []:
            raise UserError(f"--mode {modes!r} names no mode; allowed values: {', '.join(mlc.MODES)}")
        fractions = parse_floats(rfs or "1.0", "--read-fraction")
        delays = mlc.MLC_DELAYS if delay.strip().lower() == "mlc" else parse_floats(delay, "--delay")
        df = run_each(systems, "loaded-latency", lambda s, cb: engine.loaded_latency(
            s, ts, fractions, requests=requests, inject_delay_ns=delays, progress=cb, target=target,
            modes=mode_list, stores=stores, pattern=pattern))
    cols = target_col(df) + ["threads", "read_fraction", "bandwidth_gbps", "latency_ns", "mode"]
    if as_json:
        emit_json(df[(["memory"] if len(systems) > 1 else []) + cols + ["stores", "delay_ns"]].to_dict("records"))
    else:
        click.echo(table(df, ["memory"] + cols + ["delay_ns", "read_gbps", "write_gbps"]))
    write_outputs(df, plot, csv_path, "loaded-latency")


@run.command("traffic")
@memory_opt
@set_opt
@click.option("--threads", default=8, show_default=True)
@click.option("--read-fraction", "rf", default=1.0, show_default=True)
@click.option("--pattern", type=click.Choice(["random", "sequential"]), default="random", show_default=True)
@click.option("--rate", "rate", default=0.0, show_default=True, help="Target GB/s (open loop); 0 = closed loop.")
@click.option("--arrivals", type=click.Choice(engine.ARRIVALS), default="periodic", show_default=True,
              help="Open loop: a fixed interval per thread, or exponential gaps (a Poisson stream).")
@click.option("--requests", default=200000, show_default=True)
@click.option("--footprint", default="1g", show_default=True, help="Bytes the requests spread over.")
@target_opt
@json_opt
@csv_opt
def run_traffic(memories, overrides, threads, rf, pattern, rate, arrivals, requests, footprint, target, as_json,
                csv_path):
    """Random or sequential requests at a target rate (or as fast as possible)."""
    with user_errors():
        systems = load_memories(memories, overrides)
        size = engine.parse_size(footprint, "--footprint")
        df = run_each(systems, "traffic", lambda s, cb: engine.traffic(
            s, threads, rf, pattern, size, requests, rate_gbps=rate, progress=cb, target=target, arrivals=arrivals))
    cols = ["memory"] + target_col(df) + ["read_gbps", "write_gbps", "total_gbps", "read_latency_ns_mean",
                                           "read_latency_p99_ns"]
    if as_json:
        emit_json(df[cols].to_dict("records"))
    else:
        click.echo(table(df, cols))
        windows_table(df)
    write_outputs(df, None, csv_path, "traffic")


@run.command("hosts")
@memory_opt
@set_opt
@click.option("--host", "only", multiple=True,
              help="A host that runs traffic (repeat; default: every host); the first paces the measurement.")
@click.option("--threads", default=8, show_default=True, help="Traffic threads on each host.")
@click.option("--read-fraction", "rf", default=1.0, show_default=True)
@click.option("--pattern", type=click.Choice(["random", "sequential"]), default="random", show_default=True)
@click.option("--rate", "rate", default=0.0, show_default=True, help="GB/s per host (open loop); 0 = closed loop.")
@click.option("--requests", default=200000, show_default=True, help="Requests of the first host's measurement.")
@click.option("--footprint", default="1g", show_default=True, help="Bytes each host's requests spread over.")
@json_opt
@csv_opt
def run_hosts(memories, overrides, only, threads, rf, pattern, rate, requests, footprint, as_json, csv_path):
    """Traffic on several hosts of one topology at once: what each host gets of the switches and
    multi-logical devices they share (see docs/tutorials/hosts.md)."""
    with user_errors():
        systems = load_memories(memories, overrides)
        size = engine.parse_size(footprint, "--footprint")
        for s in systems:
            _check_hosts(only, s)
        df = run_each(systems, "hosts", lambda s, cb: engine.hosts(
            s, {h: {} for h in (only or engine.host_names(s))}, cb, threads=threads, read_fraction=rf,
            pattern=pattern, rate_gbps=rate, requests=requests, footprint_bytes=size))
    cols = ["memory", "host", "read_gbps", "write_gbps", "read_latency_ns_mean", "read_latency_p99_ns"]
    if as_json:
        emit_json(df[cols].to_dict("records"))
    else:
        click.echo(table(df, cols))
    write_outputs(df, None, csv_path, "hosts")


def _check_hosts(only, system) -> None:
    """--host names the option, the closest valid host and every allowed one."""
    names = engine.host_names(system)
    for h in only:
        if h not in names:
            raise ParamError(f"--host {h!r} is not a host of {system.name}; {did_you_mean(h, names)}allowed: "
                             f"{', '.join(names)} (simcxl topology show lists them)")


@run.command("shared")
@memory_opt
@set_opt
@click.option("--host", "only", multiple=True, help="A host or CXL.cache device taking part (repeat; default: every "
              "host reaching it and their devices).")
@click.option("--threads", default=1, show_default=True, help="Threads on each host and device.")
@click.option("--pattern", type=click.Choice(["random", "sequential", "pingpong"]), default="random",
              show_default=True)
@click.option("--lines", default=1024, show_default=True, help="Shared lines, from the device's first byte.")
@click.option("--store-fraction", "store", default=0.5, show_default=True)
@click.option("--accesses", default=100000, show_default=True, help="Accesses in all (random, sequential).")
@click.option("--rounds", default=10, show_default=True, help="pingpong: times each host stores to every line.")
@json_opt
@csv_opt
def run_shared(memories, overrides, only, threads, pattern, lines, store, accesses, rounds, as_json, csv_path):
    """Hosts sharing one device's memory, coherent by HDM-DB back-invalidate: each host's accesses
    (and its CXL.cache devices', a row each) and the device's snoops (see docs/tutorials/hosts.md)."""
    from ..workloads.sharing import shared
    with user_errors():
        systems = load_memories(memories, overrides)
        df = run_each(systems, "shared", lambda s, cb: shared(
            s, list(only) or None, threads=threads, pattern=pattern, lines=lines, store_fraction=store,
            accesses=accesses, rounds=rounds, progress=cb))
    dev = {k.rsplit(".", 1)[1]: v for k, v in df.attrs["components"].items()
           if k.endswith((".bisnp_inv", ".bisnp_data", ".sf_evictions"))}
    cols = ["memory", "host", "loads", "stores", "misses", "snoops", "snoop_writebacks", "latency_ns_mean"]
    if "device" in df.columns:  # CXL.cache devices took part: a row each
        cols.insert(2, "device")
    if as_json:
        emit_json({"hosts": df[cols].to_dict("records"), "device": dev})
    else:
        click.echo(table(df, cols))
        click.echo("device: " + ", ".join(f"{k} {int(v)}" for k, v in dev.items()))
    write_outputs(df, None, csv_path, "shared")


@run.command("trace", example="simcxl run trace my.trace -m cxl-asic")
@memory_opt
@set_opt
@click.argument("trace_file", type=click.Path())
@click.option("--max-outstanding", default=64, show_default=True, help="Requests in flight at once.")
@target_opt
@json_opt
@csv_opt
def run_trace(memories, overrides, trace_file, max_outstanding, target, as_json, csv_path):
    """Replay a memory trace (lines: time_ns op address [size])."""
    with user_errors():
        systems = load_memories(memories, overrides)
        _check_trace(trace_file)
        df = run_each(systems, "trace", lambda s, cb: engine.trace(s, trace_file, max_outstanding, progress=cb,
                                                                   target=target))
        if not (df["requests"] > 0).all():
            raise ParamError(f"trace {trace_file} has no requests (only blank lines and comments); add lines "
                             "'time_ns op address [size]', e.g. '0 R 0x1000'")
    cols = ["memory"] + target_col(df) + ["requests", "read_gbps", "write_gbps", "read_latency_ns_mean",
                                           "read_latency_p99_ns", "write_latency_ns_mean"]
    if as_json:
        emit_json(df[cols].to_dict("records"))
    else:
        click.echo(table(df, cols))
    write_outputs(df, None, csv_path, "trace")


def _check_trace(path: str) -> None:
    """What the engine's parser cannot say well: a missing, special or binary file."""
    p = Path(path)
    if not p.exists():
        raise ParamError(f"trace file {path} does not exist; check the path (allowed: a text file of lines "
                         "'time_ns op address [size]', e.g. '0 R 0x1000')")
    if not p.is_file():
        raise ParamError(f"trace file {path} is not a regular file; allowed: a text file of lines "
                         "'time_ns op address [size]'")
    with open(p, "rb") as f:
        head = f.read(1 << 16)
    nul = head.find(b"\0")
    if nul >= 0:
        raise ParamError(f"trace file {path} is binary (a NUL byte at offset {nul}); allowed: "
                         "a text file of lines 'time_ns op address [size]'")


for _command in run_accel.COMMANDS:  # the accelerators' workloads, in a module of their own
    run.add_command(_command)
add_trace_options(run)  # --trace FILE and --histograms FILE on every command (tracing.py)
