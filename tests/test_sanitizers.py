"""The core and its bindings built with AddressSanitizer and UndefinedBehaviorSanitizer (a second build
directory, build/asan), and the tests that drive the C++ hardest run against that build in a child
pytest. A heap overflow, use after free or undefined operation fails the run, whatever the Python
side saw: the child stops at the first report."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "build" / "asan"
# The C++-heavy tests that fit CI's budget under the sanitizers (about 4x slower): the CXL.mem paths and switches,
# trace parsing, the component probes, CXL.io's registers and mailbox, the coherence defects' tests and
# the property-based fuzzing of the core's inputs (its `sanitize` profile: fewer cases). test_coherence.py's long runs take
# 2-3 minutes each here; run them by hand with SIMCXL_SANITIZE_ALL=1.
SANITIZED = ["test_robustness.py", "test_trace.py", "test_bandwidth.py", "test_latency.py", "test_switch.py",
             "test_switch_cache.py",
             "test_cxlio.py"]
SANITIZED += sorted(p.name for p in (REPO / "tests").glob("test_coherence_*.py"))
SANITIZED += sorted(p.name for p in (REPO / "tests").glob("test_fuzz_*.py"))
if os.environ.get("SIMCXL_SANITIZE_ALL"):
    SANITIZED += ["test_coherence.py", "test_workloads.py", "test_params.py"]
FLAGS = "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"


def _tool(name):
    path = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.fail(f"{name} is needed for the sanitizer build (pip install '.[test]' brings it)")
    return path


def _runtime(lib):
    cc = shutil.which("gcc") or shutil.which("cc")
    out = subprocess.run([cc, f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(out) or not Path(out).exists():
        pytest.fail(f"the compiler has no {lib} (Debian: libasan8 with gcc)")
    return out


@pytest.fixture(scope="module")
def sanitized_package(tmp_path_factory):
    import pybind11
    cmake, ninja = _tool("cmake"), _tool("ninja")
    conf = [cmake, "-S", str(REPO / "ext"), "-B", str(BUILD), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}",
            "-DSIMCXL_BUILD_PYTHON=ON", "-DCMAKE_BUILD_TYPE=RelWithDebInfo", f"-DCMAKE_CXX_FLAGS={FLAGS}",
            # Light optimisation and line tables only: the build is a third of CI's C++ time.
            "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}"]
    for cmd in (conf, [cmake, "--build", str(BUILD), "-j", str(os.cpu_count() or 2)]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    # The Python package beside the sanitized module, ahead of the installed one on the path.
    stage = tmp_path_factory.mktemp("asan")
    shutil.copytree(REPO / "simcxl", stage / "simcxl", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    (mod,) = BUILD.glob("_core*.so")
    shutil.copy(mod, stage / "simcxl")
    return stage


def test_cxx_heavy_tests_pass_under_address_and_undefined_behaviour_sanitizers(sanitized_package):
    logs = sanitized_package / "reports"
    logs.mkdir()
    # libstdc++ is preloaded with the ASan runtime: the interpreter does not link it, and ASan's
    # interceptor of C++ throws must find it at start-up. Reports go to files, since pytest captures
    # the child's stderr and a sanitizer that halts the process would take them with it.
    env = dict(os.environ, PYTHONPATH=str(sanitized_package), PYTHONMALLOC="malloc",
               LD_PRELOAD=f"{_runtime('libasan.so')} {_runtime('libstdc++.so')}", SIMCXL_FUZZ="sanitize",
               # The interpreter keeps memory to its exit on purpose: leaks are not what is checked.
               ASAN_OPTIONS=f"detect_leaks=0:halt_on_error=1:exitcode=86:log_path={logs}/asan",
               UBSAN_OPTIONS=f"print_stacktrace=1:halt_on_error=1:exitcode=87:log_path={logs}/ubsan")
    code = ("import simcxl._core, sys; sys.stdout.write(simcxl._core.__file__)")
    where = subprocess.run([sys.executable, "-c", code], cwd=sanitized_package, env=env, capture_output=True,
                           text=True)
    assert where.returncode == 0 and where.stdout.startswith(str(sanitized_package)), where.stderr
    # From the staging folder: `python -m pytest` puts the working directory first on the path.
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", "-m", "not slow",
                        "--rootdir", str(REPO), *[str(REPO / "tests" / t) for t in SANITIZED]],
                       cwd=sanitized_package, env=env, capture_output=True, text=True)
    out = r.stdout + r.stderr
    reports = "".join(p.read_text(errors="replace") for p in sorted(logs.iterdir()))
    assert not reports, reports[-12000:]
    assert r.returncode == 0, out[-12000:]
    print(out.strip().splitlines()[-1])
