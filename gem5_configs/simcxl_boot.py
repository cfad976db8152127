"""Makes the repository's `simcxl` importable inside gem5's embedded Python.

gem5 runs configs with the system Python it was linked against, which usually
has neither numpy/pandas nor the compiled standalone engine (`simcxl._core`).
The gem5 side needs only the parameter schema (`simcxl.config.params`,
`simcxl.config.presets`) and `simcxl.gem5.components`, all standard library, so the package is
registered without running `simcxl/__init__.py` (which loads the engine).
Configs import this module first; gem5 puts the script's directory on sys.path.
"""

import importlib
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


def setup() -> Path:
    if "simcxl" not in sys.modules:
        pkg = types.ModuleType("simcxl")
        pkg.__path__ = [str(REPO / "simcxl")]
        pkg.__file__ = str(REPO / "simcxl" / "__init__.py")
        sys.modules["simcxl"] = pkg
    importlib.import_module("simcxl.gem5.components")
    classic_only_build()
    return REPO


setup()
