"""The ``simcxl`` command."""

from __future__ import annotations

import json
import math
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import List, Optional

import click
import pandas as pd

from . import _core, engine, presets, progress
from .gem5_engine import Gem5RunError
from .params import ParamError, System
from .progress import kept, progress_bar


class UserError(click.ClickException):
    """One line on stderr, exit status 2, no traceback."""
    exit_code = 2


def _one_line(e: click.ClickException) -> str:
    msg = " ".join(e.format_message().split())
    if isinstance(e, click.UsageError) and not isinstance(e, click.BadParameter) and e.ctx is not None:
        msg += f" (see '{e.ctx.command_path} -h')"
    return msg


class Main(click.Group):
    """Runs the command in a worker thread so that Ctrl-C stops it at once
    (the C++ core does not look at signals during every call), and prints
    every error as one line."""

    def main(self, args=None, prog_name=None, **extra):
        extra.pop("standalone_mode", None)
        try:
            rv = super().main(args, prog_name, standalone_mode=False, **extra)
        except click.ClickException as e:
            click.echo(f"simcxl: error: {_one_line(e)}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:  # Ctrl-C while click itself reads input
            _interrupted()
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        words = [a for a in sys.argv[1:3] if not a.startswith("-")]
        progress.start(" ".join(words[:2] if words[:1] in (["run"], ["presets"]) else words[:1]) or "simcxl")
        box = {}

        def work():
            try:
                box["result"] = click.Group.invoke(self, ctx)
            except BaseException as e:  # handed to the main thread
                box["error"] = e
        t = threading.Thread(target=work, name="simcxl", daemon=True)
        t.start()
        try:
            while t.is_alive():
                t.join(1.0)
                progress.heartbeat()
        except KeyboardInterrupt:
            _interrupted()
        if "error" in box:
            raise box["error"]
        return box.get("result")


def _interrupted() -> None:
    try:
        note = progress.kept_note()
    except Exception:  # what was kept cannot be told; say so rather than fail
        note = "see the output folder for what was written"
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    lead = "\n" if sys.stderr.isatty() else ""
    click.echo(f"{lead}simcxl: interrupted; {note}", err=True)
    sys.stderr.flush()
    # Worker processes deep in a core call would look at Ctrl-C only when it returns.
    import multiprocessing
    for child in multiprocessing.active_children():
        child.kill()
    os._exit(130)



@contextmanager
def user_errors():
    try:
        yield
    except (ParamError, _core.ConfigError, Gem5RunError) as e:
        raise UserError(_trace_error(e)) from None
    except _core.StallError as e:  # the watchdog's one line: where the oldest request waits
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"{e.filename}: {e.strerror}" if e.filename else str(e)) from None


def label(spec: str, kv: dict, shipped: List[str]) -> str:
    """The name rows carry: a preset's name, a file's name (its path where
    that would pass for a shipped preset), and the --set overrides."""
    text = str(spec)
    if text not in shipped and "+" not in text:  # an address map is labelled as written
        p = Path(text)
        text = p.stem if p.stem not in shipped else str(p.with_suffix(""))
    if kv:
        text += " [" + ", ".join(f"{k}={v}" for k, v in kv.items()) + "]"
    return text


def load_memories(memories: List[str], overrides: List[str], load=presets.load,
                  example: str = "cxl.link.lanes=8", shipped: Optional[List[str]] = None) -> List[System]:
    """Each preset (name or file) with the --set overrides applied, named as its rows will be."""
    kv = _kv(overrides, example) if overrides else {}
    out = []
    for m in memories:
        s = load(m).replace(**kv) if kv else load(m)
        s.name = label(m, kv, presets.load_names() if shipped is None else shipped)
        out.append(s)
    _overrides[:] = [kv]
    return out


_overrides: List[dict] = [{}]


def run_each(systems: List[System], label: str, fn) -> pd.DataFrame:
    """fn(system, progress) for every memory, with a progress bar each; one table."""
    frames = []
    for s in systems:
        with progress_bar(f"{label} {s.name}") as cb:
            frames.append(fn(s, cb))
    return concat(frames)


def concat(frames: List[pd.DataFrame]) -> pd.DataFrame:
    df = pd.concat(frames, ignore_index=True)
    df.attrs = dict(frames[0].attrs)
    df.attrs["overrides"] = dict(_overrides[0])
    return df


def emit_json(obj) -> None:
    def clean(x):
        if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
            return None
        return x
    if isinstance(obj, list):
        obj = [{k: clean(v) for k, v in o.items()} for o in obj]
    click.echo(json.dumps(obj, indent=2))


# Columns that count things (requests, flips, threads, bytes): printed as whole numbers.
_COUNT = re.compile(r"(^|_)(requests|ops|flips|invalidates|violations|checks|threads|rounds|lines|bytes|"
                    r"transfers|count|evictions)(_|$)")


def table(df: pd.DataFrame, cols: List[str]) -> str:
    t = df[cols].copy()
    for c in cols:
        if _COUNT.search(c) and pd.api.types.is_numeric_dtype(t[c]) and t[c].notna().all() \
                and (t[c] == t[c].round()).all():
            t[c] = t[c].astype("int64").map(lambda v: f"{v:,}")
    return t.to_string(index=False, float_format=lambda v: f"{v:,.2f}")


memory_opt = click.option("--memory", "-m", "memories", multiple=True, default=["cxl-asic"], show_default=True,
                          help="Preset name or preset file (JSON); repeat to compare. Join presets with + for one "
                               "host with an address map of their memories, one window each: ddr-local+cxl-asic "
                               "(windows named after the presets; the host is the first one's), or "
                               "ddr=ddr-local+cxl0=cxl-asic to name them.")
set_opt = click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                       help="Override a parameter, e.g. cxl.link.lanes=8 (repeatable); in an address map a "
                            "window's own, e.g. cxl0.media.ranks=2 or cxl0.base=0x20000000000.")
target_opt = click.option(
    "--target", "--interleave", "target", default=None, metavar="WINDOW[:W,WINDOW:W...]",
    help="Where the workload's pages lie in the address map: one window (e.g. cxl0), or a weighted interleave "
         "(e.g. ddr:3,cxl0:1) with Linux weighted_interleave semantics: virtual page n (pages of "
         "host.page_bytes) goes to position n mod W of the sequence of w1 pages of the first window, w2 of the "
         "second, ... (W the sum of the weights, each 1 to 255). Default: the first window (trace: the "
         "addresses are host physical).")
json_opt = click.option("--json", "as_json", is_flag=True, help="Print machine-readable results.")


def _writable(ctx, param, value):
    """An output file whose folder is made, and which is tried, now: a path
    that cannot be written fails before the simulation rather than after it."""
    if value is None or value == "-":
        return value
    if not value.strip():
        raise click.BadParameter(f"{value!r} is not a file name")
    path = Path(value)
    for up in (path.parent, *path.parent.parents):
        if up.exists():
            if not up.is_dir():
                raise click.BadParameter(f"cannot write {value}: {up} is a file, not a folder")
            break
    if path.is_dir():
        raise click.BadParameter(f"{value} is a folder; give a file name")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a"):
            pass
    except OSError as e:
        raise click.BadParameter(f"cannot write {value}: {e.strerror}") from None
    if not existed:
        path.unlink()
    return value


PLOT_FORMATS = ("png", "pdf", "svg", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


def _plot_path(ctx, param, value):
    """A plot file: its format from the extension (PNG without one), checked now."""
    if value is None or not value.strip():
        return _writable(ctx, param, value)
    ext = Path(value).suffix.lower().lstrip(".")
    if not ext:
        value += ".png"
    elif ext not in PLOT_FORMATS:
        raise click.BadParameter(f"{value}: format {ext!r} is not supported; allowed: {', '.join(PLOT_FORMATS)}")
    return _writable(ctx, param, value)


plot_opt = click.option("--plot", type=click.Path(dir_okay=False), callback=_plot_path,
                        help="Write a plot here (PNG, or PDF/SVG/... by extension).")
csv_opt = click.option("--csv", "csv_path", type=click.Path(dir_okay=False), callback=_writable,
                       help="Write every statistic as CSV.")


def count(lo: int, hi: int = 1 << 40):
    """A whole-number option with the bounds the engine takes."""
    return click.IntRange(lo, hi)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(engine._version(), prog_name="simcxl")
def main():
    """SimCXL: simulate CXL memory systems (standalone engine; gem5 optional)."""


@main.group()
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
            ws = _sizes(sizes, "--sizes", 64, 1 << 40)
        else:
            top = engine.parse_size(max_size) if max_size else 1 << 30
            ws = [s for s in engine.LMBENCH_SIZES if s <= top]
        df = run_each(systems, "lmbench",
                      lambda s, cb: engine.lmbench(s, ws, stride=stride, accesses=accesses, progress=cb,
                                                   target=target))
    if as_json:
        keep = ["memory", "working_set_bytes", "latency_ns"] if len(systems) > 1 else ["working_set_bytes", "latency_ns"]
        emit_json(df[keep + _target_col(df)].to_dict("records"))
    else:
        click.echo(table(df, ["memory"] + _target_col(df) + ["working_set_bytes", "latency_ns", "hit_l1", "hit_l2",
                                                          "hit_llc", "hit_memory"]))
    _outputs(df, plot, csv_path, "lmbench")


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
        click.echo(table(df, ["memory"] + _target_col(df) + ["kernel", "threads", "stream_gbps", "read_gbps",
                                                          "write_gbps", "read_latency_ns_mean"]))
        _windows_table(df)
    _outputs(df, plot, csv_path, "stream")


def _target_col(df: pd.DataFrame) -> List[str]:
    """["target"] when the rows ran on an address map or with a target."""
    return ["target"] if "target" in df.columns else []


def _windows_table(df: pd.DataFrame) -> None:
    """What the address map sent to each window (address-map runs only)."""
    names = [c[len("window."):-len(".read_gbps")] for c in df.columns
             if c.startswith("window.") and c.endswith(".read_gbps")]
    if not names:
        return
    rows = [{"memory": r["memory"], "window": n, "read_gbps": r[f"window.{n}.read_gbps"],
             "write_gbps": r[f"window.{n}.write_gbps"]}
            for _, r in df.iterrows() for n in names if pd.notna(r.get(f"window.{n}.read_gbps"))]
    click.echo("per window of the address map:")
    click.echo(table(pd.DataFrame(rows), ["memory", "window", "read_gbps", "write_gbps"]))


def _sizes(text: str, name: str, lo: int, hi: int) -> List[int]:
    """A comma-separated list of sizes, each within [lo, hi] bytes."""
    out = []
    for part in text.split(","):
        if part.strip():
            try:
                v = engine.parse_size(part.strip())
            except ParamError as e:
                raise ParamError(f"{name}: {e} (e.g. 4k,1m,1g)") from None
            if not lo <= v <= hi:
                raise ParamError(f"{name}: size {part.strip()!r} is out of range; allowed: {plots_size(lo)} to "
                                 f"{plots_size(hi)}")
            out.append(v)
    if not out:
        raise ParamError(f"{name} {text!r} names no size; give a comma-separated list, e.g. 4k,1m,1g")
    return out


def plots_size(b: int) -> str:
    for unit, s in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= s and b % s == 0:
            return f"{b // s} {unit}"
    return f"{b} B"


def _floats(text: str, name: str) -> List[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{name} {text!r} is not a comma-separated list of numbers") from None
    if not out:
        raise UserError(f"{name} {text!r} names no value; give a comma-separated list, e.g. 1,2,4")
    return out


def _counts(text: str, name: str, lo: int, hi: int) -> List[int]:
    out = _floats(text, name)
    bad = [v for v in out if not (math.isfinite(v) and v.is_integer() and lo <= v <= hi)]
    if bad:
        raise UserError(f"{name} {bad[0]:g} is not allowed; allowed: whole numbers from {lo} to {hi}")
    return [int(v) for v in out]


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
    from . import mlc
    with user_errors():
        systems = load_memories(memories, overrides)
        ts = _counts(threads, "--threads", 1, max(s.host.cores for s in systems))
        if modes is not None and rfs is not None:
            raise UserError("--mode and --read-fraction both set the traffic; give one of them")
        mode_list = None if modes is None else [m for m in modes.split(",") if m.strip()]
        for m in mode_list or []:
            mlc.mode(m)  # a bad name stops here, before any run
        if mode_list == []:
            raise UserError(f"--mode {modes!r} names no mode; allowed values: {', '.join(mlc.MODES)}")
        fractions = _floats(rfs or "1.0", "--read-fraction")
        delays = mlc.MLC_DELAYS if delay.strip().lower() == "mlc" else _floats(delay, "--delay")
        df = run_each(systems, "loaded-latency", lambda s, cb: engine.loaded_latency(
            s, ts, fractions, requests=requests, inject_delay_ns=delays, progress=cb, target=target,
            modes=mode_list, stores=stores, pattern=pattern))
    cols = _target_col(df) + ["threads", "read_fraction", "bandwidth_gbps", "latency_ns", "mode"]
    if as_json:
        emit_json(df[(["memory"] if len(systems) > 1 else []) + cols + ["stores", "delay_ns"]].to_dict("records"))
    else:
        click.echo(table(df, ["memory"] + cols + ["delay_ns", "read_gbps", "write_gbps"]))
    _outputs(df, plot, csv_path, "loaded-latency")


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
        size = engine.parse_size(footprint)
        df = run_each(systems, "traffic", lambda s, cb: engine.traffic(
            s, threads, rf, pattern, size, requests, rate_gbps=rate, progress=cb, target=target, arrivals=arrivals))
    cols = ["memory"] + _target_col(df) + ["read_gbps", "write_gbps", "total_gbps", "read_latency_ns_mean",
                                           "read_latency_ns_p99"]
    if as_json:
        emit_json(df[cols].to_dict("records"))
    else:
        click.echo(table(df, cols))
        _windows_table(df)
    _outputs(df, None, csv_path, "traffic")


@run.command("trace")
@memory_opt
@set_opt
@click.argument("trace_file", type=click.Path(dir_okay=False))
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
            raise ParamError(f"trace {trace_file} has no requests (only blank lines and comments); "
                             "lines: time_ns op address [size]")
    cols = ["memory"] + _target_col(df) + ["requests", "read_gbps", "write_gbps", "read_latency_ns_mean",
                                           "read_latency_ns_p99", "write_latency_ns_mean"]
    if as_json:
        emit_json(df[cols].to_dict("records"))
    else:
        click.echo(table(df, cols))
    _outputs(df, None, csv_path, "trace")


def _check_trace(path: str) -> None:
    """What the engine's parser cannot say well: a missing, special or binary file."""
    p = Path(path)
    if not p.exists():
        raise ParamError(f"trace file {path} does not exist")
    if not p.is_file():
        raise ParamError(f"trace file {path} is not a regular file (a trace is a text file of lines "
                         "'time_ns op address [size]')")
    with open(p, "rb") as f:
        head = f.read(1 << 16)
    nul = head.find(b"\0")
    if nul >= 0:
        raise ParamError(f"trace file {path} is binary (a NUL byte at offset {nul}); a trace is "
                         "a text file of lines 'time_ns op address [size]'")


def _trace_error(e: Exception) -> str:
    """The parser's message, plainer for an address too wide for 64 bits."""
    msg = str(e)
    m = re.search(r"address '(0[xX][0-9a-fA-F]+|\d+)' is not a hex", msg)
    if m and int(m.group(1), 0) >= 1 << 64:
        return msg[:m.start()] + (f"address {m.group(1)} is wider than 64 bits; allowed: 0 to "
                                  "0xffffffffffffffff")
    return msg


accel_opt = click.option("--accel", "-a", "systems", multiple=True, default=["type1-asic"], show_default=True,
                         help="Accelerator preset name or preset file (JSON), or several on one host "
                              "(gpu=type1-asic+mem=type2-bias); repeat to compare.")


def load_accels(names: List[str], overrides: List[str]):
    return load_memories(names, overrides, load_accel, "accel.type=2")


def _kv(overrides: List[str], example: str) -> dict:
    kv = {}
    for o in overrides:
        if "=" not in o:
            raise ParamError(f"--set {o!r} is not KEY=VALUE (e.g. {example})")
        k, v = o.split("=", 1)
        try:
            kv[k.strip()] = int(v.strip(), 16) if v.strip().lower().startswith("0x") else json.loads(v)
        except (json.JSONDecodeError, ValueError):
            raise ParamError(f"--set {k}: value {v!r} is not a number") from None
    return kv


@run.command("accel")
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
    from . import coherent
    with user_errors():
        frames = []
        streams = _device_settings(per_device, "mem.target=device")
        frames_systems = load_accels(systems, overrides)
        for s in frames_systems:
            with progress_bar(f"accel {s.name}") as cb:
                frames.append(coherent.accel(s, op, pattern, target, requesters, depth, footprint, requests,
                                             host_threads, check=check, progress=cb, devices=streams or None))
        df = concat(frames)
    cols = ["system", "bandwidth_gbps", "latency_mean_ns", "latency_p99_ns", "hit_rate", "bias_flips_to_device",
            "bias_flips_to_host", "back_invalidates"]
    if as_json:
        emit_json(df.to_dict("records"))
    else:
        click.echo(table(df, cols))
        stages = [c for c in df.columns if c.startswith("stage_") and df[c].any()]
        click.echo("mean ns per access by stage:")
        click.echo(table(df.rename(columns={c: c[6:-3] for c in stages}), ["system"] + [c[6:-3] for c in stages]))
        # The accelerator's name under "accel": "device" is a stage (its controller).
        per = [{"system": r["system"], "accel": d.name, "bandwidth_gbps": r[f"{d.name}.bandwidth_gbps"],
                "latency_mean_ns": r[f"{d.name}.latency_mean_ns"],
                **{st: r[f"{d.name}.stage_{st}_ns"] for st in coherent.STAGES}}
               for s, (_, r) in zip(frames_systems, df.iterrows()) if not s.single() for d in s.devices]
        if per:
            pdf = pd.DataFrame(per)
            shown_stages = [st for st in coherent.STAGES if pdf[st].any()]
            click.echo("per device (mean ns per access by stage):")
            click.echo(table(pdf, ["system", "accel", "bandwidth_gbps", "latency_mean_ns"] + shown_stages))
    _outputs(df, plot, csv_path, "accel")


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


@run.command("mixed")
@click.option("--memory", "-m", "memory", default="ddr=ddr-local+cxl0=cxl-asic", show_default=True,
              help="The memories: a preset, or presets joined with + as windows of one address map.")
@click.option("--accel", "-a", "accel", default="gpu=type1-asic", show_default=True,
              help="Accelerators beside them, each on a root port of its own: NAME=PRESET joined with +.")
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
@click.option("--compare/--no-compare", default=True, show_default=True,
              help="Also run the host alone and the accelerators alone, and show what each side lost.")
@json_opt
@csv_opt
def run_mixed_cmd(memory, accel, overrides, kernel, threads, lines, target, per_device, compare, as_json, csv_path):
    """The host's STREAM and accelerator streams at once, in one system (a Type-3 expander and an
    accelerator on root ports of their own, say): each side's bandwidth drops only where they share
    something, and the stages show where."""
    from . import mixed
    with user_errors():
        s = mixed.attach(memory, accel)
        kv = _kv(overrides, "gpu.cache.mshrs=32") if overrides else {}
        if kv:
            s = s.replace(**kv)
        devices = _device_settings(per_device)
        kw = dict(kernel=kernel, threads=threads, lines_per_thread=lines, target=target, devices=devices)
        runs = [("together", dict(host=True, accelerators=True))]
        if compare:
            runs += [("host alone", dict(host=True, accelerators=False)),
                     ("accelerators alone", dict(host=False, accelerators=True))]
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
                if not pd.isna(r.get(f"accel.{d}.bandwidth_gbps")):
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
        _windows_table(df.assign(memory=df["run"]))
    _outputs(df, None, csv_path, "mixed")


@run.command("accel-lmbench")
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
    from . import coherent
    with user_errors():
        sz = _sizes(sizes, "--sizes", 64, 1 << 32)
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
    _outputs(df, None, csv_path, "accel-lmbench")


@run.command("rao")
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
    from . import nic
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
    from . import nic
    nic_kv = _kv([o for o in overrides if o.strip().startswith("nic.")], "nic.ops_in_flight=8")
    return [nic.NicSystem(s).replace(**nic_kv)
            for s in load_accels(systems, [o for o in overrides if not o.strip().startswith("nic.")])]


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


@run.command("rpc")
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
    from . import nic
    with user_errors():
        df = concat([nic.rpc(ns, shapes.split(","), directions.split(","), mechanisms.split(","), check)
                     for ns in _nic_systems(systems, overrides)])
    _nic_outputs(df, ["shape", "direction", "bytes", "mechanism", "latency_ns", "throughput_gbps"], nic.rpc_speedup,
                 nic.plot_rpc, as_json, plot, csv_path)


@run.command("dma-vs-cache")
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
    from . import coherent
    with user_errors():
        sz = _sizes(sizes, "--sizes", 1, 1 << 30) if sizes is not None else list(coherent.DMA_SIZES)
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
    _outputs(df, plot, csv_path, "dma-vs-cache")


@run.command("sharing")
@accel_opt
@set_opt
@click.option("--mode", type=click.Choice(["pingpong", "producer-consumer"]), default="pingpong", show_default=True)
@click.option("--rounds", type=count(1, 1 << 32), default=1000, show_default=True, help="Ping-pong handoffs.")
@click.option("--lines", type=count(1, 1 << 32), default=1024, show_default=True,
              help="Producer-consumer buffer lines.")
@json_opt
def run_sharing(systems, overrides, mode, rounds, lines, as_json):
    """Host-device sharing of cache lines: ping-pong or producer-consumer."""
    from . import coherent
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


@run.command("coherence-stress")
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
    from . import coherent
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


def _outputs(df: pd.DataFrame, plot: Optional[str], csv_path: Optional[str], kind: str) -> None:
    if csv_path:
        Path(csv_path).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(csv_path, index=False)
        click.echo(f"wrote {csv_path}", err=True)
    if plot:
        from . import plots
        {"lmbench": plots.lmbench, "stream": plots.stream, "loaded-latency": plots.loaded_latency,
         "accel": plots.accel_breakdown, "dma-vs-cache": plots.dma_vs_cache}[kind](df, plot)
        click.echo(f"wrote {plot}", err=True)


@main.group("presets")
def presets_group():
    """List and show the shipped presets."""


ACCEL_KIND = {1: "cxl-type1", 2: "cxl-type2"}


def load_accel(spec):
    """An accelerator preset by name, or a preset file (complete, or with a base)."""
    from . import coherent
    if not isinstance(spec, (str, Path)) or str(spec) in coherent.preset_names():
        return coherent.load(spec)
    path = Path(spec)
    if "+" in str(spec) and not path.exists():
        return coherent.load_joined(str(spec), load_accel)
    if not path.exists() and path.suffix != ".json":
        return coherent.load(spec)  # its message lists the presets
    data = presets.read_json(path)
    groups = [g for g, _ in coherent._GROUPS]
    try:
        if "devices" not in data:
            data = presets.complete(data, path, lambda d: coherent.AccelSystem(name="-").to_dict(), load_accel, groups)
        coherent.complete_devices(data, path)
        return coherent.AccelSystem.from_dict(data, str(path))
    except (ParamError, TypeError) as e:
        raise ParamError(presets._in_file(path, str(e))) from None


def _is_accel(spec: str) -> bool:
    from . import coherent
    if spec in coherent.preset_names():
        return True
    if "+" in spec and not Path(spec).exists():  # accelerators joined on one host
        return all(_is_accel(p.partition("=")[2] or p) for p in spec.split("+"))
    if spec in presets.names() or not Path(spec).is_file():
        return False
    try:
        data = presets.read_json(spec)
    except ParamError:
        return False
    return isinstance(data, dict) and "kind" not in data and any(g in data for g, _ in coherent._GROUPS) \
        or isinstance(data, dict) and isinstance(data.get("devices"), list)


@presets_group.command("list")
@json_opt
def presets_list(as_json):
    """The shipped presets: memories (-m) and CXL.cache accelerators (-a)."""
    from . import coherent
    with user_errors():
        rows = presets.summary()
        for n in coherent.preset_names():
            s = coherent.load(n)
            rows.append({"name": n, "kind": ACCEL_KIND[s.accel.type], "description": s.description})
    if as_json:
        emit_json(rows)
    else:
        for r in rows:
            click.echo(f"{r['name']:12s} {r['kind']:12s} {r['description']}")


def _origins(s) -> dict:
    """Where each parameter's value came from: fitted, set by the preset, or the schema default."""
    from . import coherent
    fitted = (getattr(s, "provenance", None) or {}).get("fitted", {})
    if isinstance(s, System):
        blank = System(name="-", kind=s.kind, remote=type(s.remote)() if s.remote else None,
                       cxl=type(s.cxl)() if s.cxl else None)
    else:
        blank = s.defaults()
    defaults = blank.parameters()
    return {k: "fitted" if k in fitted else ("default" if defaults.get(k) == v else "preset")
            for k, v in s.parameters().items()}


@presets_group.command("show")
@click.argument("memory")
@json_opt
def presets_show(memory, as_json):
    """Every parameter of a preset (name or file), and where each came from."""
    with user_errors():
        s = load_accel(memory) if _is_accel(memory) else presets.load(memory)
    if as_json:
        click.echo(json.dumps(s.to_dict(), indent=2))
        return
    kind = s.kind
    if s.kind == "accel":
        kind = ACCEL_KIND[s.accel.type] + " accelerator" if s.single() else s.device_kinds()
    click.echo(f"{s.name} ({kind}): {s.description}")
    click.echo(f"preset: {s.source}")
    prov = getattr(s, "provenance", None) or {}
    if prov.get("fitted"):
        click.echo(f"fitted: by simcxl calibrate ({prov.get('engine', 'standalone')} engine, {prov.get('date', '?')}) "
                   f"to the {prov.get('testbed', '?')} testbed: {prov.get('citation', '')}")
    if prov.get("base"):
        click.echo(f"base: every parameter the file leaves out comes from {prov['base']}")
    click.echo("default: the schema default (simcxl/params.py, with its reason)")
    origins = _origins(s)
    for k, v in s.parameters().items():
        click.echo(f"  {k:42s} {str(v):>14s}  {origins[k]}")


@main.command("bench")
@click.option("--requests", default=2_000_000, show_default=True)
@click.option("--memory", default="cxl-asic", show_default=True)
@json_opt
def bench(requests, memory, as_json):
    """Engine speed on a fixed Type-3 random-read workload."""
    with user_errors():
        r = engine.bench(requests, memory)
    if as_json:
        emit_json(r)
    else:
        click.echo(f"{r['workload']}\n{r['simulated_requests']:,} requests in {r['wall_seconds']:.2f} s: "
                   f"{r['requests_per_second'] / 1e6:.2f} M requests/s (simulated {r['simulated_bandwidth_gbps']:.1f} "
                   f"GB/s at {r['read_latency_ns_mean']:.0f} ns)")


@main.command("calibrate")
@click.option("--testbed", required=True, type=click.Path(file_okay=False), help="Testbed folder.")
@click.option("--memories", default=None, help="Comma-separated memories of the testbed (default: all).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for presets, report, summary.")
@click.option("--json", "json_path", default=None, callback=_writable,
              help="Also write the JSON summary here ('-' for stdout).")
@click.option("--engine", type=click.Choice(["standalone", "gem5"]), default="standalone", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes for the memories after the host fit.")
def calibrate_cmd(testbed, memories, out, json_path, engine, workers):
    """Fit presets to a testbed's measurements and report the errors."""
    from . import calibrate
    start = time.time()

    def note():
        done = sorted(p.stem for p in (Path(out) / "presets").glob("*.json") if p.stat().st_mtime >= start)
        return (f"the presets of {', '.join(done)} are written in {Path(out) / 'presets'}" if done
                else "no memory had finished, no preset was written") + \
            ("; gem5's finished runs are kept, and a rerun resumes from them" if engine == "gem5" else "")
    kept(note)
    with user_errors():
        mems = [m.strip() for m in memories.split(",") if m.strip()] if memories else None
        try:
            s = calibrate.run(testbed, out, mems, engine, json_path, workers=workers)
        except KeyboardInterrupt:
            sys.exit(130)  # the calibration has said what it kept
    if json_path != "-":
        click.echo("memory        fit MAE  validation MAE: at/after the LLC + other STREAM kernels | all points")
        for m, v in s["memories"].items():
            click.echo(f"{m:12s} {_pct(v['fit_mae_pct'])}  {'':16s}{_pct(v['validation_llc_and_beyond_mae_pct'])}"
                       f"{'':37s}| {_pct(v['validation_mae_pct'])}")
        click.echo(f"wrote {Path(out) / 'report.md'}, {Path(out) / 'summary.json'} and presets in "
                   f"{Path(out) / 'presets'}")


def _pct(v) -> str:
    return "   -  " if v is None else f"{v:5.2f}%"


@main.command("sweep")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Results folder (rerun to resume).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores).")
@click.option("--address", default=None, help="Scheduler address of an existing Dask cluster.")
def sweep_cmd(spec, out, executor, workers, address):
    """Run a design-space sweep (TOML spec); results land in OUT as they finish."""
    from . import sweep as sw
    with user_errors():
        s = sw.Sweep.from_toml(spec)
        n = len(s.grid())
        jsonl = Path(out) / "results.jsonl"

        def note():
            sw.results_lock.acquire(timeout=5)  # never released: the process ends after this note
            have = len(sw.load_results(Path(out))) if jsonl.exists() else 0
            return (f"{have} of {n} points are kept in {jsonl}; run the same command again to run the rest"
                    if have else "no point had finished")
        kept(note)
        with progress_bar(f"sweep {s.name} ({n} points)") as cb:
            df = sw.run(s, out, executor=executor, workers=workers, address=address,
                        progress=None if cb is None else (lambda done, total: cb(done / max(total, 1))))
    ok = int((df["status"] == "ok").sum()) if len(df) else 0
    click.echo(f"{len(df)} points ({ok} ok, {len(df) - ok} failed) in {Path(out) / 'results.parquet'} and "
               f"{Path(out) / 'results.csv'}")


def _slug(col: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", col.replace("param.", "").replace("workload.", "")).strip("-")


@main.command("plot")
@click.argument("folder", type=click.Path(file_okay=False, exists=True))
@click.option("--x", "x", required=True, help="Column on the x axis (e.g. param.cxl.link.lanes).")
@click.option("--y", "y", required=True, help="Column on the y axis (a metric, or a parameter for heatmaps).")
@click.option("--hue", default=None, help="One line per value of this column.")
@click.option("--z", "z", default=None, help="Heatmap colour (a metric); makes the plot a heatmap.")
@click.option("--out", "png", default=None, callback=_plot_path,
              help="Plot to write (default FOLDER/<y>-vs-<x>[-by-<hue>].png, named by what it plots).")
def plot_cmd(folder, x, y, hue, z, png):
    """Line plot or heatmap from a sweep's results table; axes not on the plot are averaged, and the plot says so."""
    from . import plots
    from . import sweep as sw
    with user_errors():
        df = sw.load_results(Path(folder))
        if not len(df):
            raise ParamError(f"{folder} has no results (results.jsonl)")
        cols = [c for c in (x, y, hue, z) if c is not None]
        if len(set(cols)) < len(cols):
            raise ParamError(f"--x, --y, --hue and --z name the same column twice ({', '.join(cols)}); "
                             "give each a different one")
        for c in cols:
            if c not in df.columns:
                short = [k for k in df.columns if k.endswith("." + c) or k == f"param.{c}"]
                raise ParamError(f"column {c!r} is not in the results" + (f"; did you mean {short[0]}?" if short else
                                 f"; columns: {', '.join(df.columns)}"))
        ok = df[df["status"] == "ok"] if "status" in df.columns else df
        if not len(ok):
            raise ParamError(f"{folder} has no successful points to plot")
        opt, c = ("--z", z) if z else ("--y", y)
        if not pd.api.types.is_numeric_dtype(ok[c]):
            nums = [k for k in ok.columns if pd.api.types.is_numeric_dtype(ok[k]) and not k.startswith("param.")
                    and k not in ("wall_seconds", "seed")]
            raise ParamError(f"{opt} {c} is not a number column and cannot be plotted; numeric metrics: "
                             f"{', '.join(nums)}")
        name = f"{_slug(z)}-over-{_slug(x)}-and-{_slug(y)}" if z else \
            f"{_slug(y)}-vs-{_slug(x)}" + (f"-by-{_slug(hue)}" if hue else "")
        path = png or str(Path(folder) / f"{name}.png")
        title = sw_name(Path(folder))
        plots.sweep(ok, path, x, y, hue, z, title=title)
        hidden = plots.averaged_axes(ok, (x, y, hue, z))
    if hidden:
        n = math.prod(k for _, k in hidden)
        click.echo(f"simcxl: note: each {'cell' if z else 'point'} averages {n} points over "
                   + ", ".join(f"{c[len('param.'):]} ({k} values)" for c, k in hidden)
                   + "; give them as --hue, or plot a filtered folder, to see them", err=True)
    click.echo(f"wrote {path}")


def sw_name(folder: Path) -> str:
    """The sweep's name from its spec.json, else the folder's."""
    try:
        return json.loads((folder / "spec.json").read_text())["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return folder.name


@main.group("guest")
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
    from . import fs
    with user_errors():
        paths = fs.build_guest(cache=cache, jobs=jobs, install=install, keep_tree=not drop_tree)
    if as_json:
        emit_json({k: str(v) for k, v in paths.items()})
    else:
        for k, v in paths.items():
            click.echo(f"{k}={v}")


@main.command("fs")
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
              help="One CXL window (a CPU-less node), placed from 4 GiB up unless @BASE is given; repeat for more.")
@click.option("--cpu", type=click.Choice(["kvm", "atomic", "timing", "o3"]), default="kvm", show_default=True)
@click.option("--cores", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--sizes", default="1MiB,64MiB", show_default=True, help="lmbench: working sets.")
@click.option("--accesses", type=click.IntRange(1, 1 << 32), default=100000, show_default=True,
              help="lmbench / loaded-latency: timed loads per working set.")
@click.option("--stream-kernel", type=click.Choice(["copy", "scale", "add", "triad"]), default="triad",
              show_default=True, help="stream: the kernel.")
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
@json_opt
def fs_cmd(gem5, out, kernel, bench, node, local, local_size, numa_file, cxl, cpu, cores, sizes, accesses, stream_kernel, elements,
           timed, warm, threads, mode, checkpoint, restore, max_seconds, as_json):
    """Full system: Linux on gem5's X86 board with CXL memory as CPU-less NUMA nodes."""
    from . import fs
    from .engine import parse_size
    with user_errors():
        marks = warm == "atomic"
        run = fs.guest_command(bench, node, sizes=[parse_size(x, "sizes") for x in sizes.split(",")],
                               accesses=accesses, threads=threads, mode=mode, kernel=stream_kernel,
                               elements=elements, marks=marks, timed=timed,
                               warm_lines=fs.default_warm_lines(local) if marks else 0)
        numa = None
        if numa_file:
            from .numa import Numa
            try:
                numa = Numa.from_dict(json.loads(Path(numa_file).read_text()))
            except (OSError, ValueError) as e:
                raise ParamError(f"--numa {numa_file}: {getattr(e, 'strerror', None) or e}") from None
        r = fs.boot(gem5, out, kernel=kernel, warm=warm, local=local, numa=numa, cxl=list(cxl), cpu=cpu, cores=cores, run=run, bench=bench, node=node,
                    local_size=local_size, max_seconds=max_seconds, checkpoint=checkpoint, restore=restore)
    if as_json:
        emit_json({"cause": r.cause, "cpu": r.cpu, "fallback": r.fallback or None, "topology": r.topology.__dict__,
                   "command": run,
                   "results": r.frame.to_dict(orient="records")})
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
    click.echo(f"console and logs in {r.outdir}")


@main.command("demo")
@click.option("--out", default="simcxl-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the table (CSV) and plots (PNG).")
@click.option("--testbed", default=None, type=click.Path(file_okay=False),
              help="Measurements to compare with (default: the spr-cxl-dmsim testbed shipped with simcxl).")
@click.option("--quick", is_flag=True, help="A few working sets and one small STREAM run: checks the set-up in "
              "seconds (its figures are not the demo's).")
def demo(out, testbed, quick):
    """LMbench + STREAM on the four presets, with the published measurements."""
    from . import demo as demo_mod
    with user_errors():
        if testbed is not None and not (Path(testbed) / "lat_mem_rd.csv").is_file():
            raise ParamError(f"--testbed {testbed}: no testbed there (lat_mem_rd.csv and stream.csv)")
        demo_mod.run(Path(out), Path(testbed) if testbed else demo_mod.TESTBED, quick=quick)


if __name__ == "__main__":
    main()
