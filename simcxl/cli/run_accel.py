"""``simcxl run`` workloads of accelerators (CXL.cache devices, NICs), alone
or beside the host; ``run.py`` adds them to the group."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pandas as pd

from ..engine import standalone as engine
from ..config.params import ParamError
from ..engine.progress import progress_bar
from .common import (accel_opt, concat, count, csv_opt, emit_json, json_opt, label, load_accels, parse_kv,
                     parse_sizes, plot_opt, set_opt, table, target_opt, user_errors, windows_table, write_outputs)


@click.command("accel")
@accel_opt
@set_opt
@click.option("--op", type=click.Choice(["load", "store", "rdcurr", "rdany", "itomwr", "wrinv"]), default="load",
              show_default=True, help="load (RdShared), store (RdOwn), rdcurr, rdany, itomwr or wrinv.")
@click.option("--pattern", type=click.Choice(["single", "sequential", "random"]), default="random",
              show_default=True)
@click.option("--target", type=click.Choice(["host", "device"]), default="host", show_default=True,
              help="Host memory, or the Type-2 device's own memory.")
@click.option("--requesters", type=count(1, 1024), default=4, show_default=True,
              help="Concurrent requesters per device.")
@click.option("--depth", type=count(1, 4096), default=8, show_default=True,
              help="Accesses each requester keeps in flight.")
@click.option("--footprint", default="4m", show_default=True, help="Bytes the accesses spread over.")
@click.option("--requests", type=count(1), default=100000, show_default=True, help="Accesses per device.")
@click.option("--host-threads", type=count(0, 1024), default=0, show_default=True,
              help="Host cores touching the same footprint.")
@click.option("--check/--no-check", default=False, show_default=True, help="Run under the coherence checker.")
@click.option("--device", "per_device", multiple=True, metavar="NAME.KEY=VALUE",
              help="One device's own stream setting (op, pattern, target, requesters, depth, footprint, "
                   "requests), e.g. --device mem.target=device --device gpu.requesters=0 (idle); repeatable.")
@json_opt
@plot_opt
@csv_opt
def run_accel(systems, overrides, op, pattern, target, requesters, depth, footprint, requests, host_threads, check,
              per_device, as_json, plot, csv_path):
    """Accelerator load/store streams through coherent device caches (CXL.cache)."""
    from ..workloads import coherent
    with user_errors():
        frames = []
        streams = _device_settings(per_device, "mem.target=device")
        frames_systems = load_accels(systems, overrides)
        for s in frames_systems:
            with progress_bar(f"accel {s.name}") as cb:
                frames.append(coherent.accel(s, op, pattern, target, requesters, depth, footprint, requests,
                                             host_threads, check=check, progress=cb, devices=streams or None))
        df = concat(frames)
    cols = ["system", "bandwidth_gbps", "latency_mean_ns", "latency_p99_ns", "hit_rate"]
    if as_json:
        emit_json(df.to_dict("records"))
    else:
        # The devices' DCOH counters (<device>.dcoh.<stat>), summed over each system's devices.
        shown = df.copy()
        dcoh = [f"dcoh.{st}" for st in ("bias_flips_to_device", "bias_flips_to_host", "back_invalidates")]
        for st in dcoh:
            shown[st] = [sum(r[f"{d}.{st}"] for d in s.device_names())
                         for s, (_, r) in zip(frames_systems, df.iterrows())]
        click.echo(table(shown, cols + dcoh))
        stages = [c for c in df.columns if c.startswith("stage_") and df[c].any()]
        click.echo("mean ns per access by stage:")
        click.echo(table(df.rename(columns={c: c[6:-3] for c in stages}), ["system"] + [c[6:-3] for c in stages]))
        # The accelerator's name under "accel": "device" is a stage (its controller).
        per = [{"system": r["system"], "accel": d.name, "bandwidth_gbps": r[f"{d.name}.bandwidth_gbps"],
                "latency_mean_ns": r[f"{d.name}.latency_mean_ns"],
                **{st: r[f"{d.name}.stage_{st}_ns"] for st in coherent.STAGES}}
               for s, (_, r) in zip(frames_systems, df.iterrows()) if not s.lone_device for d in s.devices]
        if per:
            pdf = pd.DataFrame(per)
            shown_stages = [st for st in coherent.STAGES if pdf[st].any()]
            click.echo("per device (mean ns per access by stage):")
            click.echo(table(pdf, ["system", "accel", "bandwidth_gbps", "latency_mean_ns"] + shown_stages))
    write_outputs(df, plot, csv_path, "accel")


def _device_settings(per_device, example: str = "gpu.target=cxl0") -> dict:
    """--device NAME.KEY=VALUE options as {name: {key: value}}."""
    streams: dict = {}
    for o in per_device:
        key, sep, value = o.partition("=")
        name, dot, k = key.strip().rpartition(".")
        if not sep or not dot:
            raise ParamError(f"--device {o!r} is not NAME.KEY=VALUE (e.g. {example})")
        v = value.strip()
        streams.setdefault(name, {})[k] = int(v) if v.isdigit() and k != "footprint" else v
    return streams


@click.command("mixed")
@click.option("--memory", "-m", "memory", default="ddr=ddr-local+cxl0=cxl-asic", show_default=True,
              help="The memories: a preset, or presets joined with + as windows of one address map.")
@click.option("--accel", "-a", "accel", default="gpu=type1-asic", show_default=True,
              help="Accelerators beside them, each on a root port of its own: NAME=PRESET joined with +.")
@click.option("--system", "system_file", type=click.Path(dir_okay=False), default=None,
              help="A topology file holding the memories and accelerators (instead of -m and -a); --set then "
                   "names its components.")
@set_opt
@click.option("--kernel", type=click.Choice(engine.KERNELS), default="triad", show_default=True,
              help="The host's STREAM kernel.")
@click.option("--threads", type=int, default=None, help="Host threads (default: min(16, host cores)).")
@click.option("--lines", type=count(100, 1 << 34), default=20000, show_default=True,
              help="Cache lines per array per host thread.")
@target_opt
@click.option("--device", "per_device", multiple=True, metavar="NAME.KEY=VALUE",
              help="A device's stream: op, pattern (random, sequential), target (a window, device, or a Type-2 "
                   "device's name), requesters (0: idle), depth, footprint; e.g. --device gpu.target=cxl0.")
@click.option("--rao/--no-rao", "with_rao", default=None,
              help="Run the NIC's remote atomics beside them (default: when the system has a NIC).")
@click.option("--rao-kernel", type=click.Choice(("rand", "stride1", "striden", "central", "scatter", "gather",
                                                 "ptrchase")), default="rand", show_default=True)
@click.option("--rao-op", type=click.Choice(("add", "cas")), default="add", show_default=True)
@click.option("--rao-mechanism", type=click.Choice(("cxl-nic", "pcie-nic", "host")), default="cxl-nic",
              show_default=True)
@click.option("--rao-threads", type=count(1, 256), default=4, show_default=True, help="Host threads posting RAO.")
@click.option("--rao-iters", type=count(1, 1 << 32), default=1000, show_default=True,
              help="Operations per thread when the NIC runs alone (beside others it runs until they finish).")
@click.option("--compare/--no-compare", default=True, show_default=True,
              help="Also run each initiator alone, and show what each lost to the others.")
@json_opt
@csv_opt
def run_mixed_cmd(memory, accel, system_file, overrides, kernel, threads, lines, target, per_device, with_rao,
                  rao_kernel, rao_op, rao_mechanism, rao_threads, rao_iters, compare, as_json, csv_path):
    """The host's STREAM, accelerator streams and a CXL-NIC's remote atomics at once, in one system (a
    Type-3 expander, an accelerator and a NIC on root ports of their own, say): each initiator's figures
    drop only where they share something, and the stages show where."""
    from ..workloads import mixed
    from .. import topology
    with user_errors():
        kv = parse_kv(overrides, "gpu.cache.mshrs=32") if overrides else {}
        if system_file is not None:
            s = topology.GraphSystem(topology.load(system_file), topology.memory_system).replace(**kv)
        else:
            s = mixed.attach(memory, accel)
            if kv:
                s = s.replace(**kv)
        devices = _device_settings(per_device)
        nic = mixed.nic_device(s)
        if with_rao and nic is None:
            raise ParamError(f"--rao: {s.name} has no NIC (a component of type nic on the home agent); leave --rao "
                             "out, or give a system with one (e.g. --system examples/topologies/mixed-nic.toml)")
        rao = None
        if with_rao or (with_rao is None and nic is not None):
            rao = dict(kernel=rao_kernel, op=rao_op, mechanism=rao_mechanism, threads=rao_threads, iters=rao_iters)
        busy = [d for d in s.device_names() if d != nic and devices.get(d, {}).get("requesters", 1)]
        kw = dict(kernel=kernel, threads=threads, lines_per_thread=lines, target=target, devices=devices)
        runs = [("together", dict(host=True, accelerators=bool(busy), rao=rao))]
        if compare:
            runs += [("host alone", dict(host=True, accelerators=False))]
            if busy:
                runs += [("accelerators alone", dict(host=False, accelerators=True))]
            if rao is not None:
                runs += [("nic alone", dict(host=False, accelerators=False, rao=rao))]
        rows = []
        for name, flags in runs:
            with progress_bar(f"mixed {name}") as cb:
                df = mixed.run(s, progress=cb, **kw, **flags)
            df.insert(1, "run", name)
            rows.append(df)
        df = concat(rows)
    if as_json:
        emit_json(df.to_dict("records"))
    else:
        stages = [st for st in engine.STAGES]
        out = []
        for _, r in df.iterrows():
            if not pd.isna(r.get("host.stream_gbps")):
                out.append({"run": r["run"], "side": f"host ({r['host_target']})", "gbps": r["host.stream_gbps"],
                            "latency_ns": r["host.read_latency_ns_mean"],
                            **{st: r[f"host.read.stage.{st}_ns"] for st in stages}})
            for d in s.device_names():
                if d != nic and not pd.isna(r.get(f"accel.{d}.bandwidth_gbps")):
                    out.append({"run": r["run"], "side": d, "gbps": r[f"accel.{d}.bandwidth_gbps"],
                                "latency_ns": r[f"accel.{d}.latency_ns_mean"],
                                **{st: r[f"accel.{d}.stage.{st}_ns"] for st in stages}})
        t = pd.DataFrame(out)
        shown_stages = [st for st in stages if t[st].any()]
        click.echo(f"{s.name}: host STREAM {kernel} (GB/s as STREAM counts) and accelerator streams "
                   "(GB/s of lines); latency and its stages in mean ns per read")
        click.echo(table(t, ["run", "side", "gbps", "latency_ns"] + shown_stages))
        if compare:
            base = {x["side"]: x["gbps"] for x in out if x["run"] != "together"}
            lost = [f"{x['side']} {round(100 * (1 - x['gbps'] / base[x['side']]), 1) + 0.0:.1f} %"
                    for x in out if x["run"] == "together" and base.get(x["side"])]
            click.echo("bandwidth lost to the other side: " + ", ".join(lost))
        if nic is not None and f"nic.{nic}.ops_per_second" in df:
            k = f"nic.{nic}."
            nrows = df[df[k + "ops_per_second"].notna()]
            nstages = [c[len(k) + 6:-3] for c in df.columns if c.startswith(k + "stage.")]
            click.echo(f"NIC {nic}: RAO {rao_kernel} {rao_op} by {rao_mechanism}, {rao_threads} host threads "
                       "(millions of operations per second); latency and its stages in mean ns per operation")
            ntab = pd.DataFrame({"run": nrows["run"], "mops": nrows[k + "ops_per_second"] / 1e6,
                                 "latency_ns": nrows[k + "latency_ns_mean"],
                                 **{st: nrows[f"{k}stage.{st}_ns"] for st in nstages}})
            click.echo(table(ntab, ["run", "mops", "latency_ns"] + nstages))
            if compare and len(ntab) > 1 and ntab["mops"].iloc[-1]:
                click.echo(f"NIC operation rate lost to the others: "
                           f"{round(100 * (1 - ntab['mops'].iloc[0] / ntab['mops'].iloc[-1]), 1) + 0.0:.1f} %")
        windows_table(df.assign(memory=df["run"]))
    write_outputs(df, None, csv_path, "mixed")


@click.command("accel-lmbench")
@accel_opt
@set_opt
@click.option("--agent", default="dev0", show_default=True,
              help="Who chases: a device's name, or host (a host core).")
@click.option("--target", default="host", show_default=True,
              help="host, device (the agent's own memory) or a Type-2 device's name (its memory).")
@click.option("--sizes", default="64k,1m,64m", show_default=True, help="Comma-separated working sets.")
@click.option("--loads", type=count(1, 100_000_000), default=2000, show_default=True, help="Timed loads per size.")
@json_opt
@csv_opt
def run_accel_lmbench(systems, overrides, agent, target, sizes, loads, as_json, csv_path):
    """lmbench's pointer chase by a device or a host core on a coherent system (host or device memory)."""
    from ..workloads import coherent
    with user_errors():
        sz = parse_sizes(sizes, "--sizes", 64, 1 << 32)
        frames = []
        for s in load_accels(systems, overrides):
            with progress_bar(f"lmbench {s.name}") as cb:
                frames.append(coherent.lmbench(s, sz, agent, target, loads, progress=cb))
        df = concat(frames)
    cols = ["system", "agent", "target", "working_set_bytes", "latency_ns", "hit_rate"]
    if as_json:
        emit_json(df[cols[1:]].to_dict("records"))
    else:
        click.echo(table(df, cols))
        stages = [c for c in df.columns if c.startswith("stage_") and df[c].any()]
        click.echo("mean ns per load by stage:")
        click.echo(table(df.rename(columns={c: c[6:-3] for c in stages}),
                         ["system", "working_set_bytes"] + [c[6:-3] for c in stages]))
    write_outputs(df, None, csv_path, "accel-lmbench")


@click.command("rao")
@accel_opt
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a parameter, e.g. nic.ops_in_flight=8 or dma.engines=4 (repeatable).")
@click.option("--kernel", "kernels", default=",".join(("rand", "stride1", "striden", "central", "scatter", "gather",
                                                       "ptrchase")), show_default=True,
              help="Comma-separated CircusTent kernels.")
@click.option("--op", "ops", default="add,cas", show_default=True, help="Comma-separated: add, cas.")
@click.option("--mechanism", "mechanisms", default="cxl-nic,pcie-nic,host", show_default=True,
              help="Comma-separated: cxl-nic, pcie-nic, host.")
@click.option("--threads", type=count(1, 256), default=4, show_default=True, help="Host threads issuing.")
@click.option("--iters", type=count(1, 1 << 32), default=1000, show_default=True,
              help="Kernel iterations per thread.")
@click.option("--elements", type=count(8, 1 << 30), default=1 << 16, show_default=True,
              help="8-byte words of the array.")
@click.option("--stride", type=count(1, 1 << 30), default=9, show_default=True, help="striden: words apart.")
@click.option("--check/--no-check", default=False, show_default=True, help="Run under the coherence checker.")
@json_opt
@plot_opt
@csv_opt
def run_rao(systems, overrides, kernels, ops, mechanisms, threads, iters, elements, stride, check, as_json, plot,
            csv_path):
    """Remote atomic operations (CircusTent kernels) by a CXL-NIC, a PCIe NIC and the host cores."""
    from ..workloads import nic
    with user_errors():
        frames = []
        for ns in _nic_systems(systems, overrides):
            with progress_bar(f"rao {ns.name}") as cb:
                frames.append(nic.rao(ns, kernels.split(","), ops.split(","), mechanisms.split(","), threads, iters,
                                      elements, stride, check=check, progress=cb))
        df = concat(frames)
    _nic_outputs(df, ["kernel", "op", "mechanism", "ops_per_second", "latency_ns"], nic.speedup, nic.plot, as_json,
                 plot, csv_path)


def _nic_systems(systems, overrides):
    """Accelerator presets with --set applied, nic.* to the NIC's parameters."""
    from ..workloads import nic
    from ..config import presets
    from .. import topology
    out = []
    for spec in systems:
        if topology.is_file(spec):  # the graph's nic component carries its parameters
            s = topology.GraphSystem(topology.load(spec), topology.nic_system).replace(
                **parse_kv(overrides, "nic0.nic.ops_in_flight=8"))
            s.name = label(spec, {}, presets.load_names())
            out.append(s)
            continue
        nic_kv = parse_kv([o for o in overrides if o.strip().startswith("nic.")], "nic.ops_in_flight=8")
        out += [nic.load(s).replace(**nic_kv)
                for s in load_accels([spec], [o for o in overrides if not o.strip().startswith("nic.")])]
    return out


def _nic_outputs(df, cols, speedup, plot_fn, as_json, plot, csv_path) -> None:
    """A NIC comparison's rows (JSON or a table with its speedups), CSV and plot."""
    if as_json:
        emit_json(df[cols].to_dict("records"))
    else:
        click.echo(table(df, ["system"] + cols))
        sp = speedup(df)
        if len(sp.columns) > 2:
            click.echo(table(sp, list(sp.columns)))
    if csv_path:
        Path(csv_path).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(csv_path, index=False)
        click.echo(f"wrote {csv_path}", err=True)
    if plot:
        plot_fn(df, plot)
        click.echo(f"wrote {plot}", err=True)


@click.command("rpc")
@accel_opt
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a parameter, e.g. nic.rpc_gbps=16 or dma.max_payload=512 (repeatable).")
@click.option("--shape", "shapes", default="64B,512B,4KiB,16KiB,64KiB", show_default=True,
              help="Comma-separated message shapes.")
@click.option("--direction", "directions", default="serialize,deserialize", show_default=True,
              help="Comma-separated: serialize, deserialize.")
@click.option("--mechanism", "mechanisms", default="cxl-nic,pcie-nic,host", show_default=True,
              help="Comma-separated: cxl-nic, pcie-nic, host.")
@click.option("--check/--no-check", default=False, show_default=True, help="Run under the coherence checker.")
@json_opt
@plot_opt
@csv_opt
def run_rpc(systems, overrides, shapes, directions, mechanisms, check, as_json, plot, csv_path):
    """RPC (de)serialisation of protocol-buffer messages by a CXL-NIC, a PCIe NIC and the host core."""
    from ..workloads import nic
    with user_errors():
        df = concat([nic.rpc(ns, shapes.split(","), directions.split(","), mechanisms.split(","), check)
                     for ns in _nic_systems(systems, overrides)])
    _nic_outputs(df, ["shape", "direction", "bytes", "mechanism", "latency_ns", "throughput_gbps"], nic.rpc_speedup,
                 nic.plot_rpc, as_json, plot, csv_path)


@click.command("dma-vs-cache")
@accel_opt
@set_opt
@click.option("--sizes", default=None, help="Comma-separated transfer sizes (default 64 B to 4 MiB, x4 steps).")
@click.option("--cache-op", type=click.Choice(["load", "rdcurr"]), default="load", show_default=True,
              help="CXL.cache read: load (RdShared, allocates) or rdcurr (no allocation).")
@click.option("--stream", "stream_bytes", default="1m", show_default=True,
              help="Bytes moved back to back in the bandwidth runs (at least 4 transfers).")
@json_opt
@plot_opt
@csv_opt
def run_dma_vs_cache(systems, overrides, sizes, cache_op, stream_bytes, as_json, plot, csv_path):
    """The device reads host buffers by DMA and by CXL.cache: latency and bandwidth."""
    from ..workloads import coherent
    with user_errors():
        sz = parse_sizes(sizes, "--sizes", 1, 1 << 30) if sizes is not None else list(coherent.DMA_SIZES)
        frames = []
        for s in load_accels(systems, overrides):
            with progress_bar(f"dma-vs-cache {s.name}") as cb:
                frames.append(coherent.dma_vs_cache(s, sz, cache_op, stream_bytes, progress=cb))
        df = concat(frames)
    cols = ["transfer_bytes", "mechanism", "latency_ns", "bandwidth_gbps"]
    if as_json:
        emit_json(df[(["system"] if len(frames) > 1 else []) + cols].to_dict("records"))
    else:
        click.echo(table(df, ["system"] + cols))
        for name, g in df.groupby("system", sort=False):
            sm = coherent.dma_vs_cache_summary(g)
            over = sm["dma_bandwidth_overtakes_at_bytes"]
            click.echo(f"{name}: at {sm['smallest_transfer_bytes']} B CXL.cache cuts latency by "
                       f"{sm['latency_reduction_pct']:.0f}% and gives {sm['bandwidth_gain']:.1f}x the bandwidth; "
                       + (f"DMA bandwidth overtakes from {over} B" if over else "DMA never overtakes")
                       + " (published: 68% and 14.4x at a cache line)")
    write_outputs(df, plot, csv_path, "dma-vs-cache")


@click.command("sharing")
@accel_opt
@set_opt
@click.option("--mode", type=click.Choice(["pingpong", "producer-consumer"]), default="pingpong", show_default=True)
@click.option("--rounds", type=count(1, 1 << 32), default=1000, show_default=True, help="Ping-pong handoffs.")
@click.option("--lines", type=count(1, 1 << 32), default=1024, show_default=True,
              help="Producer-consumer buffer lines.")
@json_opt
def run_sharing(systems, overrides, mode, rounds, lines, as_json):
    """Host-device sharing of cache lines: ping-pong or producer-consumer."""
    from ..workloads import coherent
    with user_errors():
        frames = [coherent.sharing(s, mode, rounds, lines) for s in load_accels(systems, overrides)]
        df = pd.concat(frames, ignore_index=True)
    if as_json:
        emit_json(df.to_dict("records"))
        return
    if mode == "pingpong":
        click.echo(table(df, ["system", "handoff_ns", "device_latency_mean_ns", "host_latency_mean_ns",
                              "checker_violations"]))
    else:
        click.echo(table(df, ["system", "host_to_device_consume_gbps", "device_to_host_consume_gbps",
                              "host_to_device_consumer_latency_mean_ns", "device_to_host_consumer_latency_mean_ns",
                              "checker_violations"]))


@click.command("coherence-stress")
@accel_opt
@set_opt
@click.option("--ops", type=count(1), default=1_000_000, show_default=True)
@click.option("--lines", type=count(1, 1 << 32), default=8, show_default=True, help="Lines shared by every requester.")
@click.option("--host-threads", type=count(0, 1024), default=4, show_default=True)
@click.option("--device-requesters", type=count(0, 1024), default=4, show_default=True,
              help="Requesters per device.")
@click.option("--inject", type=click.Choice(["", "snpinv-keeps-copy", "drop-dirty-data", "drop-snoops",
                                            "defer-snoops"]), default="",
              help="Deliberately break the protocol (the checker or the watchdog must catch it).")
@json_opt
def run_stress(systems, overrides, ops, lines, host_threads, device_requesters, inject, as_json):
    """Random loads and stores from host and devices on few lines, under the checker."""
    from ..workloads import coherent
    with user_errors():
        rows = []
        for s in load_accels(systems, overrides):
            with progress_bar(f"stress {s.name}") as cb:
                r = coherent.stress(s, ops, lines, host_threads, device_requesters, inject=inject, progress=cb)
            r["system"] = s.name
            rows.append(r)
    if as_json:
        emit_json(rows)
    else:
        for r in rows:
            status = "deadlock" if r["deadlock"] else ("VIOLATIONS" if r["checker_violations"] else "ok")
            click.echo(f"{r['system']}: {int(r['ops']):,} ops, {int(r['checker_checks']):,} checks, "
                       f"{int(r['checker_violations'])} violations: {status}"
                       + (f"\n  first: {r['detail']}" if r["detail"] else ""))
    if any(r["deadlock"] or r["checker_violations"] for r in rows):
        sys.exit(1)


#: What run.py adds to ``simcxl run``.
COMMANDS = (run_accel, run_mixed_cmd, run_accel_lmbench, run_rao, run_rpc, run_dma_vs_cache, run_sharing, run_stress)
