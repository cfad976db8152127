"""Shared helpers. Tests import the installed package (run `.venv/bin/pytest`)."""

import faulthandler
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import simcxl
from simcxl.config.groups import DeviceParams, DramParams, HostParams, LinkParams, BridgeParams
from simcxl.config.params import CxlMemory, System

REPO = Path(__file__).resolve().parents[1]

# Fuzz tests (tests/test_fuzz_*.py). "ci", the default, replays the same
# examples every run (derandomized, no example database) and stays within
# about a minute in all; SIMCXL_FUZZ=soak draws fresh random examples,
# SIMCXL_FUZZ_SCALE (default 20) times as many (docs/development/testing.md); "sanitize"
# replays a fifth of CI's examples, for the run under the sanitizers
# (tests/test_sanitizers.py), which is several times slower.
FUZZ = os.environ.get("SIMCXL_FUZZ", "ci")
FUZZ_SCALE = {"soak": float(os.environ.get("SIMCXL_FUZZ_SCALE", "20")), "sanitize": 0.2}.get(FUZZ, 1.0)
# The deadline flags an example that runs for seconds where milliseconds are
# expected; it is far above a slow shared core so that CI does not flake.
# Under the sanitizers every example runs several times slower, and a busy
# machine slows it again (a 20-point sweep once took over 10 s there), so
# that run has no deadline: hang_guard still ends a hang.
settings.register_profile("ci", derandomize=True, database=None, deadline=10_000, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("soak", derandomize=False, database=None, deadline=10_000, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("sanitize", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile(FUZZ if FUZZ in ("soak", "sanitize") else "ci")


def fuzz(cases: int):
    """Hypothesis settings for a fuzz test of `cases` examples in CI (more in a soak)."""
    return settings(max_examples=max(1, int(cases * FUZZ_SCALE)))


@pytest.fixture
def hang_guard():
    """A fuzz test that does not finish in time (a hang: every example is tiny)
    ends the run with every thread's stack, rather than stalling CI."""
    faulthandler.dump_traceback_later(300 * max(FUZZ_SCALE, 1.0), exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
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


def qemu_guest():
    """(qemu-system-x86_64, the built guest's paths) for a test that boots the project's guest under QEMU;
    skips, saying what is missing, when either is."""
    import importlib.util
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        pytest.skip("qemu-system-x86_64 is not installed (apt-get install -y qemu-system-x86)")
    spec = importlib.util.spec_from_file_location("build_guest", REPO / "benchmarks" / "guest" / "build_guest.py")
    bg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bg)
    paths = bg.built()
    if paths is None:
        pytest.skip("the guest is not built: run `simcxl guest build`")
    return qemu, paths


def build_chase(folder: Path) -> Path:
    return build_guest(folder, "chase")


# A single-memory preset's groups as the components of its graph (simcxl.topology.from_system names them).
GRAPH_PATH = {"cxl.link.": "cxl_link0.", "cxl.media.": "cxl_dev0.media.", "cxl.device.": "cxl_dev0.device.",
              "cxl.bridge.": "cxl.", "remote.link.": "remote.", "remote.dram.": "remote_dram."}


def graph_path(path: str) -> str:
    """A preset's parameter path (cxl.link.lanes) as its graph's (cxl_link0.lanes)."""
    for old, new in GRAPH_PATH.items():
        if path.startswith(old):
            return new + path[len(old):]
    return path


def set_graph(core: dict, path: str, value) -> dict:
    """Sets a preset's parameter path in the graph the core takes (``seed`` at its top level)."""
    *parents, leaf = graph_path(path).split(".")
    d = core["components"] if parents else core
    for p in parents:
        d = d[p]
    d[leaf] = value
    return core


def set_path(d: dict, path: str, value) -> dict:
    """Sets a dotted key in nested dicts (a preset or system description)."""
    *parents, leaf = path.split(".")
    for p in parents:
        d = d[p]
    d[leaf] = value
    return d


def quiet_dram(**kw) -> DramParams:
    """DDR5-4800 with refresh off and open pages (a row stays open until another is wanted), so idle
    latencies are exact sums."""
    d = simcxl.load_preset("ddr-local").local_dram
    d.tREFI_ns = 0
    d.page_policy = 0
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


def assert_one_line_rejection(exc: BaseException, *names: str, says_allowed: bool = True) -> str:
    """A rejection as the fuzz tests require it: a ParamError or ConfigError,
    one line, naming each of `names` and saying what is allowed (a file that
    does not parse says where instead)."""
    from simcxl import _core
    from simcxl.config.params import ParamError
    assert isinstance(exc, (ParamError, _core.ConfigError)), f"{type(exc).__name__}: {exc}"
    msg = str(exc)
    assert msg.strip() and "\n" not in msg, f"not one line: {msg!r}"
    for n in names:
        assert n in msg, f"{n!r} not named in: {msg}"
    assert not says_allowed or any(w in msg for w in ("allowed", "must", "expected", "needs", "presets:", "e.g.")), \
        f"does not say what is allowed: {msg}"
    return msg


def pytest_collection_modifyitems(session, config, items):
    """The longest file first (the sanitizer build and its child run, a few
    minutes on one core): scheduled last, it would run alone after the other
    worker has finished everything else."""
    items.sort(key=lambda item: item.nodeid.split("::")[0] != "tests/test_sanitizers.py")


def pytest_terminal_summary(terminalreporter):
    """Shows at the end of a run the count of documentation examples that
    tests/test_docs_examples.py collected (its `record_property("docs_examples", ...)`)
    and of error-message cases in tests/test_error_messages.py ("error_messages"),
    also when the test ran on an xdist worker, whose output is not shown."""
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        for key, value in getattr(report, "user_properties", ()):
            if key in ("docs_examples", "error_messages"):
                terminalreporter.write_line(value)


def one_credit_everywhere(graph: dict) -> dict:
    """A graph (as a dict) with every CXL.mem credit and queue on its paths at its minimum: 1."""
    for c in graph["components"].values():
        if c["type"] == "link":
            c.update(credits_req=1, credits_rwd=1, credits_ndr=1, credits_drs=1, credits_bisnp=1, credits_birsp=1)
        if c["type"] == "host_bridge":
            c.update(req_queue=1, resp_queue=1)
        if c["type"] == "type3":
            c["device"].update(req_queue=1, resp_queue=1)
    return graph
