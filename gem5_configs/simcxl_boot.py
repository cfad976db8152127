"""Makes the repository's `simcxl` importable inside gem5's embedded Python.

gem5 runs configs with the system Python it was linked against, which usually
has neither numpy/pandas nor the repository's .venv on its path. The gem5 side
needs the parameter schema, `simcxl.gem5.components` (standard library) and the
core's component registry (`simcxl._core`, loaded from the .venv's build), so
the package is registered without running `simcxl/__init__.py` (which loads
pandas and the rest).
Configs import this module first; gem5 puts the script's directory on sys.path.
"""

import importlib
import importlib.util
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def classic_only_build() -> None:
    """gem5 v24's stdlib `requires()` (which every stdlib core calls) asks for
    the build's Ruby protocol even when nothing needs one, and raises on a
    build without Ruby (RUBY=n, classic caches only). There, no protocol is
    the true answer; anything that does require one still fails, by name."""
    try:
        from m5.defines import buildEnv
        import gem5.utils.requires as requires
    except ImportError:  # not inside gem5
        return
    if not str(buildEnv.get("PROTOCOL", "")):
        requires.get_runtime_coherence_protocol = lambda: None


def engine_module() -> None:
    """The component registry (simcxl.topology.types) is the core's: `simcxl._core`. In a checkout
    it is built into the README's .venv (pip install .), not beside the sources; load that build
    (same CPython ABI as gem5's) when the source tree holds none."""
    if "simcxl._core" in sys.modules or list((REPO / "simcxl").glob("_core*.so")):
        return
    tag = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for so in sorted((REPO / ".venv").glob(f"lib/{tag}/site-packages/simcxl/_core*.so")):
        spec = importlib.util.spec_from_file_location("simcxl._core", so)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["simcxl._core"] = mod
        spec.loader.exec_module(mod)
        sys.modules["simcxl"]._core = mod
        return
    raise ImportError(f"simcxl's engine (simcxl._core for {tag}) is built neither in {REPO / 'simcxl'} nor in "
                      f"{REPO / '.venv'}: run the README's first command there (python3 -m venv .venv && "
                      ".venv/bin/pip install .)")


def setup() -> Path:
    if "simcxl" not in sys.modules:
        pkg = types.ModuleType("simcxl")
        pkg.__path__ = [str(REPO / "simcxl")]
        pkg.__file__ = str(REPO / "simcxl" / "__init__.py")
        sys.modules["simcxl"] = pkg
    engine_module()
    importlib.import_module("simcxl.gem5.components")
    classic_only_build()
    return REPO


setup()
