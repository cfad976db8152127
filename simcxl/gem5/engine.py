"""The gem5 engine of the calibration harness: the same experiments as the
standalone engine, run through a gem5 binary built with this repository as
EXTRAS (named by the GEM5 environment variable).

- lat_mem_rd: the guest chase (benchmarks/guest/chase.c) on an X86 core in SE
  mode (gem5_configs/cxl_se.py), built and warmed on an atomic core and timed
  on a timing one, behind gem5 classic caches sized like the testbed host's
  L1D and LLC (set counts rounded to powers of two, prefetchers off).
- STREAM: the guest STREAM (benchmarks/guest/stream.c) on out-of-order X86
  cores, one single-threaded copy per thread, timed from STREAM's steady
  state (gem5_configs/cxl_stream_se.py).

Each gem5 run is kept under the calibration's output folder, named by a hash
of everything it depends on, so an interrupted calibration resumes where it
stopped and a repeated evaluation costs nothing.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from .components import cache_geometry
from ..config.params import ParamError, System


def repository() -> Path:
    """The SimCXL checkout whose gem5_configs/ and benchmarks/guest/ the runs
    use (gem5 was built with it as EXTRAS): SIMCXL_REPO, this package's own
    checkout (an editable install), or the working directory."""
    candidates = [Path(os.environ["SIMCXL_REPO"])] if os.environ.get("SIMCXL_REPO") else []
    candidates += [Path(__file__).resolve().parents[2], Path.cwd()]
    for c in candidates:
        if (c / "gem5_configs" / "cxl_se.py").is_file() and (c / "benchmarks" / "guest" / "chase.c").is_file():
            return c
    raise ParamError("--engine gem5 needs the SimCXL repository (its gem5_configs/ and benchmarks/guest/): run from "
                     "its top folder or set SIMCXL_REPO to it; looked in " + ", ".join(str(c) for c in candidates))


# STREAM elements per thread the timed pass covers (64 KiB per array and
# thread): about 400 device round trips per MSHR. Measured on cxl-asic copy
# with 16 threads: 18.85 GB/s, against 18.77 with four times as many.
STREAM_ELEMENTS = 8192
# Private L2 of the STREAM cores. A streaming kernel's rate does not depend on
# the cache's size, only on its MSHRs (cxl-fpga add: 14.09, 14.03 and 14.19
# GB/s with 64 KiB, 256 KiB and 2 MiB), and the untimed pass that leaves the
# caches in STREAM's steady state covers twice the caches: a 256 KiB L2 keeps
# that pass short.
STREAM_L2 = 256 << 10
# Lines walked before the timed ones, per line the LLC holds: at 2 every set
# sees about twice as many lines as it has ways (at 1.25, one set in six sees
# fewer than its ways under Poisson spread and keeps lines it should not).
WARM_FACTOR = 2.0
# Cycles an L2 hit costs on gem5's classic hierarchy beyond the L2's own tag
# and data latency (measured: 19 cycles load-to-use with both at 10).
L2_PATH_CYCLES = 9


class Gem5RunError(RuntimeError):
    pass


def isas(binary: str) -> List[str]:
    """The ISAs a gem5 binary was built with (one short gem5 run)."""
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([binary, "--outdir", d, "-c",
                              "from gem5.runtime import get_supported_isas; "
                              "print('ISAS=' + ','.join(i.name for i in get_supported_isas()))"],
                             capture_output=True, text=True, timeout=300)
    for line in (out.stdout + out.stderr).splitlines():
        if line.startswith("ISAS="):
            return [s for s in line[5:].split(",") if s]
    raise Gem5RunError(f"GEM5 = {binary!r} did not answer which ISAs it has (is it gem5?):\n{out.stderr[-2000:]}")


GUEST_FLAGS = {"chase": [], "stream": ["-pthread", "-fno-tree-loop-distribute-patterns"], "nic_rao": []}


def build_guest(folder: Path, guest: Path, name: str) -> Path:
    """A guest program (`name`.c from the `guest` folder), compiled statically with the host's C compiler."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    source = guest / f"{name}.c"
    if cc is None:
        raise ParamError(f"--engine gem5 needs a C compiler (cc, or CC) to build the guest program {source}")
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / name
    newest = max(source.stat().st_mtime, (guest / "guest.h").stat().st_mtime)
    if not exe.exists() or exe.stat().st_mtime < newest:
        tmp = folder / f"{name}.{os.getpid()}.tmp"  # parallel fits may build at once
        r = subprocess.run([cc, "-O2", "-static", "-Wall", *GUEST_FLAGS[name], "-o", str(tmp), str(source)],
                           capture_output=True, text=True)
        if r.returncode:
            raise Gem5RunError(f"building the guest {name} failed:\n{r.stderr}")
        tmp.replace(exe)
    return exe


class Gem5Engine:
    name = "gem5"
    # A chase's 3000 loads jitter by about 1 % as the device latency moves
    # (rows and refresh fall differently): a tighter stop only chases that,
    # a run of ten to twenty minutes at a time. Fit points still need 2 %.
    fit_rtol = 5e-3

    def __init__(self, binary: str, runs: Path, accesses: int = 3000, clock_ghz: float = 3.0):
        self.binary = binary
        self.runs = Path(runs)
        self.accesses = accesses  # timed loads per lat_mem_rd working set
        repo = repository()
        self.configs, self.guest = repo / "gem5_configs", repo / "benchmarks" / "guest"
        self.clock_ghz = clock_ghz
        self._guests: Dict[str, Path] = {}

    def _guest(self, name: str) -> Path:
        if name not in self._guests:
            self._guests[name] = build_guest(self.runs / "guest", self.guest, name)
        return self._guests[name]

    # ---------------------------------------------------------------- runs

    def _run(self, config: str, args: Sequence[str], system: System, label: str,
             sources: Sequence[Path] = ()) -> List[Dict[str, str]]:
        described = system.to_dict()
        preset = json.dumps(described, sort_keys=True)
        # Everything the result depends on: the config, its arguments, the memory's parameters (not its
        # name, description or provenance, which a recalibration rewrites), the guest's sources.
        params = {k: v for k, v in described.items() if k not in DESCRIPTIVE}
        texts = [config, *args, json.dumps(params, sort_keys=True), (self.configs / config).read_text(),
                 *(p.read_text() for p in sources)]
        key = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]
        done = self.runs / f"{key}.csv"
        if done.exists():
            return list(csv.DictReader(done.open()))
        work = self.runs / f"{key}.d"
        work.mkdir(parents=True, exist_ok=True)
        (work / "memory.json").write_text(preset)
        cmd = [self.binary, "-re", "-d", str(work), str(self.configs / config), "--memory", str(work / "memory.json"),
               *args, "--csv", str(work / "out.csv")]
        # Progress, as each run takes minutes.
        print(f"  {system.name}: gem5 {config}, {label} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(f"  {system.name}: gem5 {config}, {label}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        if r.returncode or not (work / "out.csv").exists():
            err = (work / "simerr.txt").read_text()[-3000:] if (work / "simerr.txt").exists() else r.stderr[-3000:]
            raise Gem5RunError(f"gem5 run failed ({' '.join(cmd)}):\n{err}")
        # What the run was, beside its result, for whoever reads the folder later.
        (self.runs / f"{key}.json").write_text(json.dumps(
            {"memory": system.name, "config": config, "args": list(args), "label": label, "system": described,
             "wall_seconds": round(time.perf_counter() - t0, 1)}, indent=1))
        (work / "out.csv").replace(done)  # a finished run is kept: interrupted calibrations resume
        shutil.rmtree(work, ignore_errors=True)
        return list(csv.DictReader(done.open()))

    # ---------------------------------------------------------------- experiments

    def lmbench(self, system: System, sizes: Sequence[int]) -> List[float]:
        h = system.host
        l1, l1_ways = cache_geometry(h.l1_bytes, h.l1_assoc, "host.l1_bytes")
        llc, llc_ways = cache_geometry(h.llc_bytes, h.llc_assoc, "host.llc_bytes")
        board = 1 << max(29, (2 * max(sizes) - 1).bit_length())
        # gem5's L2 stands for the host's LLC: its hit costs what the LLC's does.
        l2_cycles = max(1, round(h.llc_latency_ns * self.clock_ghz) - L2_PATH_CYCLES)
        rows = self._run("cxl_se.py", [
            "--binary", str(self._guest("chase")), "--size", f"{board}B",
            "--sizes", ",".join(str(int(s)) for s in sizes),
            "--accesses", str(self.accesses), "--warm", "atomic", "--warm-lines", str(int(WARM_FACTOR * llc / 64)),
            "--clock", f"{self.clock_ghz}GHz", "--l1d", f"{l1}B", "--l1d-assoc", str(l1_ways),
            "--l2", f"{llc}B", "--l2-assoc", str(llc_ways), "--l2-cycles", str(l2_cycles), "--no-prefetch"], system,
            f"lat_mem_rd, {len(sizes)} working set{'s' if len(sizes) > 1 else ''}",
            (self.guest / "chase.c", self.guest / "guest.h"))
        by_size = {int(r["size_bytes"]): float(r["latency_ns"]) for r in rows}
        return [by_size[int(s) // 64 * 64] for s in sizes]

    def stream(self, system: System, kernels: Sequence[str], threads: int,
               stores: str = "write-allocate") -> List[float]:
        l1, l1_ways = cache_geometry(system.host.l1_bytes, system.host.l1_assoc, "host.l1_bytes")
        out = []
        for k in kernels:
            rows = self._run("cxl_stream_se.py", [
                "--binary", str(self._guest("stream")), "--kernel", k, "--threads", str(threads),
                "--elements", str(STREAM_ELEMENTS), "--clock", f"{self.clock_ghz}GHz", "--l1d", f"{l1}B",
                "--l1d-assoc", str(l1_ways), "--l2", f"{STREAM_L2}B", "--l2-assoc", "16",
                "--mshrs", str(system.host.mshrs_per_core), "--write-buffers", str(system.host.writeback_buffer),
                # Only when not the default, so that write-allocate runs keep their keys.
                *(["--stores", stores] if stores != "write-allocate" else [])],
                system, f"STREAM {k}" + (f" ({stores})" if stores != "write-allocate" else ""),
                (self.guest / "stream.c", self.guest / "guest.h"))
            if rows[0]["check"] != "ok":
                raise Gem5RunError(f"STREAM {k} on {system.name}: the guest found wrong elements")
            out.append(float(rows[0]["stream_gbps"]))
        return out

    def loaded_latency(self, system: System, threads: int, read_fraction: float, stores: str = "non-temporal",
                       pattern: str = "random") -> Tuple[float, float]:
        raise ParamError(LOADED_LATENCY_MISSING)


# Preset fields that do not change a run's result.
DESCRIPTIVE = ("name", "description", "source", "provenance")

LOADED_LATENCY_MISSING = ("loaded_latency points: the gem5 engine does not run them yet; calibrate this testbed "
                          "with --engine standalone, or leave loaded_latency.csv out")
