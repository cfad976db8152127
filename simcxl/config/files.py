"""A user's files (presets, topologies, testbeds, sweeps, traces) read as text, with errors that say what to do."""

from __future__ import annotations

from pathlib import Path

from .params import ParamError


def read_text(path, missing: str = "name a preset: 'simcxl presets list'") -> str:
    """A user's file as UTF-8 text (a byte-order mark, as spreadsheets write,
    is dropped); an unreadable file or other encoding is a ParamError that
    starts with the path; ``missing`` says what else to give where no file is."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        hint = f" (in {Path.cwd()}); check the path, or {missing}" if e.errno == 2 else ""
        raise ParamError(f"{path}: {e.strerror}{hint}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ParamError(f"{path}:{line} column {col}: byte 0x{data[e.start]:02x} is not UTF-8 text; save the "
                         "file as UTF-8") from None
