"""Shared helpers. Tests import the installed package (run `.venv/bin/pytest`)."""

import shutil
import subprocess
from pathlib import Path

import pytest

import simcxl
from simcxl.params import CxlMemory, DeviceParams, DramParams, HostParams, LinkParams, BridgeParams, System

REPO = Path(__file__).resolve().parents[1]
TESTBED = REPO / "calibration" / "testbeds" / "spr-cxl-dmsim"


CC = shutil.which("cc") or shutil.which("gcc")


def build_guest(folder: Path, name: str) -> Path:
    """benchmarks/guest/<name>.c, built static (as gem5's SE mode needs) and warning-free."""
    out = folder / name
    r = subprocess.run([CC, "-O2", "-static", "-pthread", "-fno-tree-loop-distribute-patterns", "-Wall", "-Wextra",
                        "-Werror", "-o", str(out), str(REPO / "benchmarks" / "guest" / f"{name}.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def build_chase(folder: Path) -> Path:
    return build_guest(folder, "chase")


def set_path(d: dict, path: str, value) -> dict:
    """Sets a dotted key in nested dicts (a preset or system description)."""
    *parents, leaf = path.split(".")
    for p in parents:
        d = d[p]
    d[leaf] = value
    return d


def quiet_dram(**kw) -> DramParams:
    """DDR5-4800 with refresh off, so idle latencies are exact sums."""
    d = simcxl.load_preset("ddr-local").local_dram
    d.tREFI_ns = 0
    for k, v in kw.items():
        setattr(d, k, v)
    return d


def link_bound_cxl(lanes: int = 16, **link) -> System:
    """A CXL system whose link is the only bottleneck: wide media, deep queues."""
    host = HostParams(cores=64, mshrs_per_core=64, writeback_buffer=64)
    media = quiet_dram(channels=32, read_queue=256, write_queue=256)
    lk = LinkParams(lanes=lanes, credits_req=512, credits_rwd=512, credits_ndr=512, credits_drs=512, **link)
    return System("link-bound", "cxl-type3", host=host, local_dram=quiet_dram(),
                  cxl=CxlMemory(bridge=BridgeParams(req_queue=4096, resp_queue=4096), link=lk,
                                device=DeviceParams(req_queue=4096, resp_queue=4096), media=media)).validate()


@pytest.fixture(scope="session")
def presets():
    return {n: simcxl.load_preset(n) for n in simcxl.preset_names()}
