"""What every command of ``simcxl`` shares: the top-level group's error and
Ctrl-C handling, the common options and their parsing, loading the
memories and accelerators, and printing and writing the results."""

from __future__ import annotations

import json
import math
import os
import re
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import List, Optional

import click
import pandas as pd

from .. import _core
from ..engine import standalone as engine, progress
from ..config import presets
from ..gem5.engine import Gem5RunError
from ..config.params import ParamError, System
from ..engine.progress import progress_bar


class UserError(click.ClickException):
    """One line on stderr, exit status 2, no traceback."""
    exit_code = 2


def _one_line(e: click.ClickException) -> str:
    msg = " ".join(e.format_message().split())
    if isinstance(e, click.MissingParameter) and e.ctx is not None:
        return msg.rstrip(".") + f"; e.g. {_example(e.ctx)} (see '{e.ctx.command_path} -h')"
    if isinstance(e, click.BadParameter):
        return _bad_parameter(e, msg)
    if isinstance(e, click.UsageError) and e.ctx is not None:
        msg += f" (see '{e.ctx.command_path} -h')"
    return msg


def _example(ctx: click.Context) -> str:
    """The command's example invocation (Command's example), else one made of its required parameters."""
    given = getattr(ctx.command, "example", None)
    if given:
        return given
    words = [ctx.command_path]
    for p in ctx.command.params:
        if p.required:
            words.append(p.make_metavar(ctx) if isinstance(p, click.Argument) else f"{p.opts[0]} VALUE")
    return " ".join(words)


def _bad_parameter(e: click.BadParameter, msg: str) -> str:
    """click's own conversion errors ("'x' is not a valid integer", "'x' is not one of 'a', 'b'") in the
    project's form: what was wrong, then what is allowed; messages of our own callbacks say it already."""
    if re.search(r"\b(allowed|give|e\.g\.)", msg) or e.param is None:
        return msg
    t = e.param.type
    head, _, rest = msg.partition(": ")
    value = re.match(r"('[^']*'|\S+) is not", rest)
    shown = value.group(1) if value else "the value"
    if isinstance(t, click.Choice):
        from ..config.param_group import did_you_mean
        choices = [str(c) for c in t.choices]
        return (f"{head}: {shown} is not allowed; {did_you_mean(shown.strip(chr(39)), choices)}allowed: "
                + ", ".join(choices))
    whole = isinstance(t, click.types.IntParamType)
    what = "a whole number" if whole else "a number"
    if isinstance(t, (click.IntRange, click.FloatRange)):
        span = (f" from {t.min} to {t.max}" if t.min is not None and t.max is not None else
                f" from {t.min} on" if t.min is not None else f" up to {t.max}" if t.max is not None else "")
        wrong = "is out of range" if "is not in the range" in rest else f"is not {what}"
        return f"{head}: {shown} {wrong}; allowed: {what}{span}"
    if isinstance(t, (click.types.IntParamType, click.types.FloatParamType)):
        return f"{head}: {shown} is not {what}; allowed: {what}"
    if isinstance(t, click.Path):
        kind = "file" if not t.dir_okay else "folder" if not t.file_okay else "file or folder"
        return msg.rstrip(".") + f"; allowed: {'an existing' if t.exists else 'a'} {kind}'s path"
    return msg


class Command(click.Command):
    """A command with an example invocation (``example=``), shown at the end of its help and in the
    error for a missing required argument or option."""

    def __init__(self, *args, example: Optional[str] = None, **kwargs):
        self.example = example
        if example and not kwargs.get("epilog"):
            kwargs["epilog"] = f"Example: {example}"
        super().__init__(*args, **kwargs)


class Group(click.Group):
    """A command group that, run without a subcommand, prints its help (as
    -h does) and exits 0. click's default is usage and exit status 2, and from
    click 8.2 an error whose message is the whole help, which Main squeezed
    onto one line."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("invoke_without_command", True)
        # Usage as before (newer click writes [COMMAND] for such a group): a bare group only shows its help.
        kwargs.setdefault("subcommand_metavar", "COMMAND [ARGS]...")
        super().__init__(*args, **kwargs)
        self.command_class = Command
        own = self.callback

        def callback(*a, **kw):
            ctx = click.get_current_context()
            if ctx.invoked_subcommand is None:
                click.echo(ctx.get_help(), color=ctx.color)
                return None
            return own(*a, **kw) if own is not None else None
        self.callback = callback


class Main(Group):
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
    from .. import topology
    kv = parse_kv(overrides, example) if overrides else {}
    out = []
    for m in memories:
        if topology.is_file(m):  # --set names the graph's components: exp0.media.ranks=2
            build = topology.memory_system if load is presets.load else topology.accel_system
            s = topology.GraphSystem(topology.load(m), build).replace(**kv)
        else:
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


memory_opt = click.option("--memory", "-m", "--system", "memories", multiple=True, default=["cxl-asic"],
                          show_default=True,
                          help="Preset name, preset file (JSON) or topology file (--system FILE, TOML; see simcxl "
                               "topology); repeat to compare. Join presets with + for one "
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


def writable(ctx, param, value):
    """An output file whose folder is made, and which is tried, now: a path
    that cannot be written fails before the simulation rather than after it."""
    if value is None or value == "-":
        return value
    if not value.strip():
        raise click.BadParameter(f"{value!r} is not a file name; give a file's path")
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


def plot_path(ctx, param, value):
    """A plot file: its format from the extension (PNG without one), checked now."""
    if value is None or not value.strip():
        return writable(ctx, param, value)
    ext = Path(value).suffix.lower().lstrip(".")
    if not ext:
        value += ".png"
    elif ext not in PLOT_FORMATS:
        raise click.BadParameter(f"{value}: format {ext!r} is not supported; allowed: {', '.join(PLOT_FORMATS)}")
    return writable(ctx, param, value)


plot_opt = click.option("--plot", type=click.Path(dir_okay=False), callback=plot_path,
                        help="Write a plot here (PNG, or PDF/SVG/... by extension).")
csv_opt = click.option("--csv", "csv_path", type=click.Path(dir_okay=False), callback=writable,
                       help="Write every statistic as CSV.")


def count(lo: int, hi: int = 1 << 40):
    """A whole-number option with the bounds the engine takes."""
    return click.IntRange(lo, hi)


def target_col(df: pd.DataFrame) -> List[str]:
    """["target"] when the rows ran on an address map or with a target."""
    return ["target"] if "target" in df.columns else []


def windows_table(df: pd.DataFrame) -> None:
    """What the address map sent to each window (address-map runs only)."""
    # The host's stats <host>.window.<w>.read_gbps (docs/reference/stats.md).
    found = [(c[:-len(".read_gbps")], c.split(".window.", 1)[1][:-len(".read_gbps")]) for c in df.columns
             if ".window." in c and c.endswith(".read_gbps")]
    if not found:
        return
    rows = [{"memory": r["memory"], "window": n, "read_gbps": r[k + ".read_gbps"], "write_gbps": r[k + ".write_gbps"]}
            for _, r in df.iterrows() for k, n in found if pd.notna(r.get(k + ".read_gbps"))]
    click.echo("per window of the address map:")
    click.echo(table(pd.DataFrame(rows), ["memory", "window", "read_gbps", "write_gbps"]))


def parse_sizes(text: str, name: str, lo: int, hi: int) -> List[int]:
    """A comma-separated list of sizes, each within [lo, hi] bytes."""
    out = []
    for part in text.split(","):
        if part.strip():
            try:
                v = engine.parse_size(part.strip())
            except ParamError as e:
                raise ParamError(f"{name}: {e}, from {plots_size(lo)} to {plots_size(hi)} (e.g. 4k,1m,1g)") from None
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


def parse_floats(text: str, name: str) -> List[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{name} {text!r} is not a comma-separated list of numbers; give e.g. 1,2,4") from None
    if not out:
        raise UserError(f"{name} {text!r} names no value; give a comma-separated list, e.g. 1,2,4")
    return out


def parse_counts(text: str, name: str, lo: int, hi: int) -> List[int]:
    out = parse_floats(text, name)
    bad = [v for v in out if not (math.isfinite(v) and v.is_integer() and lo <= v <= hi)]
    if bad:
        raise UserError(f"{name} {bad[0]:g} is not allowed; allowed: whole numbers from {lo} to {hi}")
    return [int(v) for v in out]


def _trace_error(e: Exception) -> str:
    """The parser's message, plainer for an address too wide for 64 bits."""
    msg = str(e)
    m = re.search(r"address '(0[xX][0-9a-fA-F]+|\d+)' is not a hex", msg)
    if m and int(m.group(1), 0) >= 1 << 64:
        return msg[:m.start()] + (f"address {m.group(1)} is wider than 64 bits; allowed: 0 to "
                                  "0xffffffffffffffff")
    return msg


accel_opt = click.option("--accel", "-a", "--system", "systems", multiple=True, default=["type1-asic"],
                         show_default=True,
                         help="Accelerator preset name, preset file (JSON) or topology file (--system FILE), or "
                              "several on one host "
                              "(gpu=type1-asic+mem=type2-bias); repeat to compare.")


def load_accels(names: List[str], overrides: List[str]) -> List[System]:
    from ..workloads import coherent
    return load_memories(names, overrides, coherent.load, "accel.type=2")


def parse_kv(overrides: List[str], example: str) -> dict:
    kv = {}
    for o in overrides:
        if "=" not in o:
            raise ParamError(f"--set {o!r} is not KEY=VALUE (e.g. {example})")
        k, v = o.split("=", 1)
        try:
            kv[k.strip()] = int(v.strip(), 16) if v.strip().lower().startswith("0x") else json.loads(v)
        except (json.JSONDecodeError, ValueError):
            raise ParamError(f"--set {k}: value {v!r} is not a number; allowed: a number or 0x... (e.g. "
                             f"{example})") from None
    return kv


def write_outputs(df: pd.DataFrame, plot: Optional[str], csv_path: Optional[str], kind: str) -> None:
    if csv_path:
        Path(csv_path).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(csv_path, index=False)
        click.echo(f"wrote {csv_path}", err=True)
    if plot:
        from ..workloads import plots
        {"lmbench": plots.lmbench, "stream": plots.stream, "loaded-latency": plots.loaded_latency,
         "accel": plots.accel_breakdown, "dma-vs-cache": plots.dma_vs_cache}[kind](df, plot)
        click.echo(f"wrote {plot}", err=True)
