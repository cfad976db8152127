"""The documentation site builds with `mkdocs build --strict` (no broken link, anchor or page left
out of the navigation), its generated pages are up to date, and its references are generated from
the code: every command of the CLI and every function of the engine appear."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from conftest import REPO

BIN = Path(sys.executable).parent


def _mkdocs():
    """The mkdocs command of the test's environment, or a skip saying how to get it."""
    try:
        import material  # noqa: F401  (the theme)
        import mkdocs  # noqa: F401
        import mkdocs_click  # noqa: F401
        import mkdocstrings_handlers.python  # noqa: F401
    except ImportError as e:
        pytest.skip(f"mkdocs and its plugins are not installed ({e.name}): pip install '.[docs]' (the test extra "
                    "has them)")
    exe = BIN / "mkdocs"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "mkdocs"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    # Run outside the repository so that `simcxl` is the installed package (with its compiled core),
    # which mkdocs-click imports; mkdocstrings reads the sources under REPO (mkdocs.yml: paths).
    p = subprocess.run([*_mkdocs(), "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(out / "site")],
                       cwd=out, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=""))
    assert p.returncode == 0, f"mkdocs build --strict failed:\n{p.stdout[-4000:]}\n{p.stderr[-6000:]}"
    return out / "site"


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))


def test_the_site_builds_strict_with_every_page(site):
    for page in ("index.html", "getting-started/index.html", "tutorials/first-experiment/index.html",
                 "tutorials/calibration/index.html", "tutorials/sweeps/index.html", "tutorials/gem5/index.html",
                 "tutorials/full-system/index.html", "tutorials/accelerators/index.html", "tutorials/nic/index.html",
                 "tutorials/topology-files/index.html", "model/index.html", "validation/testbeds/index.html",
                 "performance/index.html", "reference/cli/index.html", "reference/api/index.html",
                 "reference/parameters/index.html", "topology/index.html"):
        assert (site / page).is_file(), f"{page} was not built"
    # The benchmarks' table is included from benchmarks/README.md, not copied.
    assert "root ports, 1 to 16" in _text(site / "performance" / "index.html")


def test_the_cli_reference_is_generated_from_click(site):
    from simcxl.cli import main
    text = _text(site / "reference" / "cli" / "index.html")
    for name, cmd in main.commands.items():
        assert f"simcxl {name}" in text, f"`simcxl {name}` is missing from the CLI reference"
        for sub in getattr(cmd, "commands", {}):
            assert f"simcxl {name} {sub}" in text, f"`simcxl {name} {sub}` is missing from the CLI reference"
        assert isinstance(cmd, click.Command)


def test_the_api_reference_is_generated_from_docstrings(site):
    from simcxl.engine import standalone as engine
    text = _text(site / "reference" / "api" / "index.html")
    for fn in ("lmbench", "stream", "loaded_latency", "traffic", "trace", "breakdown"):
        first = getattr(engine, fn).__doc__.strip().splitlines()[0]
        words = "".join(first.replace("``", "").split()[:4])
        assert fn in text and words in "".join(text.split()), f"{fn}: {first!r} is not in the API reference"


def test_the_generated_pages_are_up_to_date(tmp_path):
    """docs/gen_pages.py writes the testbed and preset pages from the calibration runs and presets."""
    p = subprocess.run([sys.executable, str(REPO / "docs" / "gen_pages.py"), "--check"], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    # The check sees a change: a copy of the repository's inputs with one measured value altered.
    copy = tmp_path / "repo"
    for part in ("docs", "calibration", "simcxl/presets"):
        shutil.copytree(REPO / part, copy / part)
    summary = copy / "calibration" / "spr-cxl-dmsim" / "summary.json"
    summary.write_text(summary.read_text().replace('"measured": 284.893', '"measured": 285.893', 1))
    p = subprocess.run([sys.executable, str(copy / "docs" / "gen_pages.py"), "--check"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 1 and "docs/validation/testbeds.md" in p.stdout, p.stdout + p.stderr
