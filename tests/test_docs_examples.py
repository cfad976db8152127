"""Every fenced block of README.md and docs/**/*.md runs, or says why it does not.

Each block is classified by its fence's language and by an HTML comment on the line
before it (invisible on GitHub and on the site):

- ``sh``/``bash``/``shell``: run with bash (``-e -o pipefail``), the test venv's ``bin``
  first on PATH (so ``simcxl`` and ``.venv/bin/simcxl`` are the installed ones), in a
  fresh folder per page that holds the repository's read-only folders (``examples``,
  ``calibration``, ``benchmarks``, ...) as links, so commands written "from the
  repository root" work and write nothing into it. Blocks of a page run in order, in
  its folder, so a later block sees an earlier block's files.
- ``console``: a shell session; its ``$ `` lines (and their backslash continuations) run as
  above, the rest is output and is not compared.
- ``python``/``py``: run by the test venv's Python in the same folder.
- ``toml``/``json``: parsed.
- ``text``: output or an illustration; not run.

Markers (``<!-- example: MARKER -->``):

- ``file PATH``: the block is written to PATH in the page's folder (a testbed, a trace,
  a sweep spec) for the commands after it; a ``toml``/``json`` block is parsed too.
- ``same-as PATH``: a ``toml``/``json`` block that shows a file of the repository (with
  comments, say) holds the same data as that file.
- ``exit N``: the commands must fail with exit status N (a documented error).
- ``gem5``: needs a gem5 build (or a full-system guest); checked, not run: the block
  must name gem5 or the ``simcxl fs``/``guest`` commands.
- ``external``: builds or runs software from outside the project (DRAMsim3, Ramulator2: sources
  fetched from the network); checked, not run: the block must clone what it builds.
- ``readme``: one of the README's two commands, which CI runs anyway (``.ci/run`` is
  the second); checked, not run: the block must be exactly one of them (the README holds
  both; a page may repeat them).
- ``schematic``: a ``toml``/``text`` form with placeholders, not meant to parse.

A block in any other language, or without one, fails the test, so that nothing is
left unchecked by accident. The count is printed (and shown in pytest's summary).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SHELL = {"sh", "bash", "shell", "console"}
PYTHON = {"python", "py"}
DATA = {"toml", "json"}
TEXT = {"text"}
# Read-only folders a page's commands may name as from the repository root.
LINKED = ("examples", "calibration", "benchmarks", "gem5_configs", "devices", "tests")
README_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/simcxl demo",
    "python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && .venv/bin/pytest -q",
)
GEM5_WORDS = re.compile(r"gem5|GEM5|scons|simcxl fs|simcxl guest|vmlinu")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MARKER = re.compile(r"^\s*<!--\s*example:\s*(?P<what>.*?)\s*-->\s*$")


@dataclass
class Block:
    path: Path
    line: int           # of the opening fence, 1-based
    lang: str
    marker: str         # "" or the marker's text
    text: str

    @property
    def where(self) -> str:
        try:
            name = self.path.relative_to(REPO)
        except ValueError:
            name = self.path
        return f"{name}:{self.line}"

    @property
    def script(self) -> str:
        """What bash runs: the block, or a console block's `$ ` lines and their continuations."""
        if self.lang != "console":
            return self.text
        out, cont = [], False
        for ln in self.text.splitlines():
            if cont or ln.startswith("$ "):
                out.append(ln if cont else ln[2:])
                cont = ln.rstrip().endswith("\\")
        return "\n".join(out) + "\n"

    @property
    def kind(self) -> str:
        """What the test does with it: run, file, parse, gem5, external, readme, text, schematic, or bad: WHY."""
        m, lang = self.marker, self.lang
        if m.startswith("file "):
            return "file" if m[5:].strip() else "bad: 'file' needs a path"
        if m.startswith("same-as "):
            if lang not in DATA:
                return f"bad: 'same-as' compares toml/json data, not {lang!r}"
            return "same-as" if (REPO / m[8:].strip()).is_file() else f"bad: no file {m[8:].strip()!r} to compare with"
        if m == "gem5":
            if lang not in SHELL | PYTHON | TEXT:
                return f"bad: 'gem5' marks commands, not {lang!r}"
            return "gem5" if GEM5_WORDS.search(self.text) else "bad: marked gem5 but names neither gem5 nor simcxl fs/guest"
        if m == "external":
            if lang not in SHELL:
                return f"bad: 'external' marks shell commands, not {lang!r}"
            return "external" if "git clone " in self.text else "bad: marked external but clones nothing"
        if m == "readme":
            if self.text.strip() not in README_COMMANDS:
                return "bad: 'readme' marks only the README's two commands, verbatim"
            return "readme"
        if m == "schematic":
            return "schematic" if lang in DATA | TEXT else f"bad: only toml/json/text may be schematic, not {lang!r}"
        if m and not re.fullmatch(r"exit \d+", m):
            return f"bad: unknown marker {m!r}"
        if m and lang not in SHELL:
            return "bad: 'exit N' marks shell commands"
        if lang == "console" and not self.script.strip():
            return "bad: a console block needs '$ ' before each command"
        if lang in SHELL | PYTHON:
            return "run"
        if lang in DATA:
            return "parse"
        if lang in TEXT:
            return "text"
        return (f"bad: fence language {lang!r} is none of {sorted(SHELL | PYTHON | DATA | TEXT)} "
                "(name one, e.g. text for output)")


def pages() -> List[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(path: Path) -> List[Block]:
    """The fenced blocks of a Markdown file, with the marker on the line before each (blank lines skipped)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        j = i + 1
        while j < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise AssertionError(f"{path}:{i + 1}: fence never closed")
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mk = MARKER.match(lines[k]) if k >= 0 else None
        lang = info.split()[0].lower() if info else ""
        out.append(Block(path, i + 1, lang, mk["what"] if mk else "", "\n".join(body) + "\n"))
        i = j + 1
    return out


def commands(b: Block) -> int:
    """Commands in a shell block: its lines less comments, blanks and backslash continuations."""
    return sum(1 for ln in b.script.replace("\\\n", " ").splitlines() if ln.strip() and not ln.lstrip().startswith("#"))


def inventory() -> Dict[str, List[Block]]:
    by_kind: Dict[str, List[Block]] = {}
    for p in pages():
        for b in blocks(p):
            by_kind.setdefault(b.kind.split(":")[0], []).append(b)
    return by_kind


def summary(by_kind: Dict[str, List[Block]]) -> str:
    n = sum(len(v) for v in by_kind.values())
    run = by_kind.get("run", [])
    shell = sum(b.lang in SHELL for b in run)
    return (f"docs examples: {n} fenced blocks in {len(pages())} files: {len(run)} run ({shell} shell blocks "
            f"of {sum(commands(b) for b in run if b.lang in SHELL)} commands, "
            f"{len(run) - shell} python), {len(by_kind.get('file', []))} written as files, "
            f"{len(by_kind.get('parse', [])) + len(by_kind.get('same-as', []))} parsed, {len(by_kind.get('gem5', []))} need gem5 (checked, not run), "
            f"{len(by_kind.get('external', []))} build outside software (checked, not run), "
            f"{len(by_kind.get('readme', []))} README commands (CI runs them), "
            f"{len(by_kind.get('text', [])) + len(by_kind.get('schematic', []))} output or schematic")


def workdir(base: Path) -> Path:
    """A folder that looks like the repository root for the commands of one page."""
    base.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        (base / name).symlink_to(REPO / name, target_is_directory=True)
    (base / ".venv").symlink_to(BIN.parent, target_is_directory=True)
    (base / "docs" / "img").mkdir(parents=True)
    return base


def env() -> Dict[str, str]:
    e = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", MPLBACKEND="Agg",
             PYTHONDONTWRITEBYTECODE="1")
    e.pop("PYTHONPATH", None)
    return e


def check_data(b: Block) -> None:
    try:
        (tomllib.loads if b.lang == "toml" else json.loads)(b.text)
    except ValueError as err:
        raise AssertionError(f"{b.where}: the {b.lang} block does not parse: {err}") from None


def run_block(b: Block, cwd: Path, timeout: float = 600) -> float:
    """Runs one block in `cwd`; returns its wall seconds. Raises AssertionError naming the block."""
    kind = b.kind
    if kind == "file":
        target = cwd / b.marker[5:].strip()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(b.text, encoding="utf-8")
        if b.lang in DATA:
            check_data(b)
        return 0.0
    if kind == "parse":
        check_data(b)
        return 0.0
    if kind == "same-as":
        check_data(b)
        path = REPO / b.marker[8:].strip()
        load = tomllib.loads if b.lang == "toml" else json.loads
        if load(b.text) != load(path.read_text(encoding="utf-8")):
            raise AssertionError(f"{b.where}: the block's data differ from {path.relative_to(REPO)}'s")
        return 0.0
    if kind != "run":
        return 0.0
    argv = ["bash", "-e", "-o", "pipefail", "-c", b.script] if b.lang in SHELL else [sys.executable, "-c", b.text]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{b.where}: still running after {timeout:.0f} s:\n{b.text}") from None
    want = int(b.marker.split()[1]) if b.marker.startswith("exit ") else 0
    if p.returncode != want:
        raise AssertionError(f"{b.where}: exit status {p.returncode}, expected {want}:\n{b.text}\n"
                             f"--- stdout (end)\n{p.stdout[-3000:]}\n--- stderr (end)\n{p.stderr[-3000:]}")
    return time.monotonic() - t0


def run_page(path: Path, base: Path) -> List[float]:
    cwd = workdir(base)
    return [run_block(b, cwd) for b in blocks(path)]


# ------------------------------------------------------------------------------------------ tests


def test_every_fenced_block_is_run_or_says_why_not(record_property):
    by_kind = inventory()
    bad = [f"{b.where}: {b.kind[5:]}" for b in by_kind.get("bad", [])]
    assert not bad, "\n".join(bad)
    line = summary(by_kind)
    print(line)
    record_property("docs_examples", line)
    assert len(by_kind.get("run", [])) >= 30, line
    # The README's two commands are there, as .ci/run runs the second.
    in_readme = [b.text.strip() for b in by_kind.get("readme", []) if b.path == REPO / "README.md"]
    assert sorted(in_readme) == sorted(README_COMMANDS), "the README shows each of its two commands once"
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == README_COMMANDS[1], ".ci/run no longer runs the README's test command"


RUNNABLE = [p for p in pages() if any(b.kind in ("run", "file", "parse", "same-as") for b in blocks(p))]


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(REPO)) for p in RUNNABLE])
def test_examples_of_a_page_run(page, tmp_path):
    run_page(page, tmp_path / "work")


def inline_commands(path: Path) -> List[str]:
    """The `simcxl ...` code spans of a page outside its fenced blocks (provenance notes such as
    "simulated: `simcxl run stream -m cxl-fpga --threads 16`")."""
    text = re.sub(r"^[ \t]*(```|~~~).*?^[ \t]*\1", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return re.findall(r"`(simcxl [^`]+)`", text.replace("\n", " "))


def unknown_words(command: str) -> List[str]:
    """What in one `simcxl ...` command line the CLI does not have: a command, or an option of it.
    Values are not checked; optional parts in [brackets] are; an UPPERCASE word is a placeholder."""
    import click
    from simcxl.cli import main
    words = [w.strip("[]") for w in command.split()[1:]]
    cmd, i = main, 0
    while isinstance(cmd, click.Group) and i < len(words) and words[i] in cmd.commands:
        cmd, i = cmd.commands[words[i]], i + 1
    if isinstance(cmd, click.Group) and i < len(words) and not words[i].isupper() and words[i] != "...":
        return [f"command {words[i]!r}"]
    known = {o for p in cmd.params for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))}
    return [f"option {w.split('=')[0]!r}" for w in words[i:]
            if re.match(r"^--?[a-zA-Z]", w) and w.split("=")[0] not in known | {"-h", "--help"}]


def test_inline_commands_name_real_commands_and_options(record_property):
    """Commands quoted in the text (not run: many are the 1 GiB runs behind a figure) still name
    commands and options the CLI has, so a renamed option shows up here."""
    found = [(p, c) for p in pages() for c in inline_commands(p)]
    record_property("docs_examples", f"docs examples: {len(found)} `simcxl ...` commands quoted in the text, "
                                     "checked against the CLI's commands and options (not run)")
    assert len(found) >= 30, found
    bad = [f"{p.relative_to(REPO)}: `{c}`: no {', '.join(u)}" for p, c in found if (u := unknown_words(c))]
    assert not bad, "\n".join(bad)
    assert unknown_words("simcxl run lmbench --no-such-option [--stride 64]") == ["option '--no-such-option'"]
    assert unknown_words("simcxl run nosuch") == ["command 'nosuch'"]


def test_a_broken_example_fails_naming_its_line(tmp_path):
    """The runner is not a rubber stamp: a bad option, a failing Python line, a marker on the
    wrong block and an expected error that does not happen are each reported with their line."""
    page = tmp_path / "broken.md"
    page.write_text("# Broken\n\n```sh\nsimcxl presets list\n```\n\n```sh\nsimcxl run lmbench --no-such-option\n```\n"
                    "\n```python\nraise SystemExit(3)\n```\n\n<!-- example: gem5 -->\n```sh\nsimcxl presets list\n```\n"
                    "\n<!-- example: exit 2 -->\n```sh\nsimcxl presets list\n```\n\n```\nno language\n```\n")
    found = blocks(page)
    assert [b.kind.split(":")[0] for b in found] == ["run", "run", "run", "bad", "run", "bad"]
    assert "names neither gem5" in found[3].kind and "fence language ''" in found[5].kind
    con = Block(page, 1, "console", "", "$ simcxl run lmbench \\\n    --sizes 4k\nan output line\n$ echo hi\n")
    assert con.kind == "run" and con.script == "simcxl run lmbench \\\n    --sizes 4k\necho hi\n"
    assert Block(page, 1, "console", "", "output alone\n").kind.startswith("bad")
    cwd = tmp_path / "work"
    cwd.mkdir()
    assert run_block(found[0], cwd) > 0
    for b, line in ((found[1], 7), (found[2], 11), (found[4], 21)):
        with pytest.raises(AssertionError, match=rf"broken\.md:{line}: exit status"):
            run_block(b, cwd)
