"""Request traces from gem5 runs: every CXLHostBridge of a run records its sampled requests'
paths through the core's components (the same records as ``simcxl run --trace``) and writes them
as CSV rows; the repository's virtual environment turns them into FILE.json (Perfetto / Chrome
trace events) and FILE.parquet with :mod:`simcxl.engine.reqtrace`. Standard library only: it runs
in gem5's embedded Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List, Sequence


def add_options(parser) -> None:
    """--trace FILE, --trace-sample N, --trace-max-requests N on a gem5 configuration's parser."""
    parser.add_argument("--trace", default=None, metavar="FILE",
                        help="write sampled requests' paths as FILE.json (ui.perfetto.dev) and FILE.parquet")
    parser.add_argument("--trace-sample", type=int, default=1, metavar="N",
                        help="trace every Nth request of each host bridge (1 to 2^40)")
    parser.add_argument("--trace-max-requests", type=int, default=10_000, metavar="N",
                        help="trace at most N requests per host bridge (1 to 100000000)")


def _stop(message: str) -> None:
    # gem5's Python takes only whole numbers as exit codes (a string aborts it).
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def rows_files(path: str, count: int) -> List[Path]:
    """Where each of `count` host bridges writes its rows: FILE.rows.csv, or FILE.<i>.rows.csv."""
    base = Path(path)
    return [base.with_name(base.name + ".rows.csv")] if count == 1 else \
        [base.with_name(f"{base.name}.{i}.rows.csv") for i in range(count)]


def enable(bridges: Sequence, args) -> None:
    """Before m5.instantiate: the bridges record (ranges are checked by the core when gem5 builds
    them: a bad value stops the run naming the parameter)."""
    if not args.trace:
        return
    if not bridges:
        _stop(f"--trace {args.trace}: traces come from SimCXL host bridges, and this memory has none; "
              "trace a preset or topology file (e.g. --memory cxl-asic)")
    folder = Path(args.trace).resolve().parent
    if not folder.is_dir():
        _stop(f"--trace {args.trace}: folder {folder} does not exist; create it or name a file in an existing one")
    for b, f in zip(bridges, rows_files(args.trace, len(bridges))):
        b.trace_file = str(f)
        b.trace_sample = args.trace_sample
        b.trace_max_requests = args.trace_max_requests


def _python() -> str:
    """A Python with pandas and pyarrow: the repository's .venv (the README's setup)."""
    for repo in Path(__file__).resolve().parents:
        exe = repo / ".venv" / "bin" / "python"
        if exe.is_file():
            return str(exe)
    return "python3"


def finish(bridges: Sequence, args) -> None:
    """After the run: the rows written, then converted (or the command to do it printed)."""
    if not args.trace or not bridges:
        return
    files = rows_files(args.trace, len(bridges))
    for b in bridges:
        b.writeTrace()
    cmd = [_python(), "-m", "simcxl.engine.reqtrace", *(str(f.resolve()) for f in files),
           str(Path(args.trace).resolve())]
    # Away from the checkout, so that the installed package (with its core) is the one imported.
    done = subprocess.run(cmd, cwd="/", capture_output=True, text=True)
    if done.returncode == 0:
        print(done.stdout, end="")
    else:
        print(f"trace rows in {', '.join(map(str, files))}; converting them failed ({done.stderr.strip()}); "
              f"run: {' '.join(cmd)}")
