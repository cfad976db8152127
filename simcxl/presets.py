"""Presets: JSON files of the parameter dataclasses, shipped in ``simcxl/presets``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Union

from .params import ParamError, System, read_text

PRESET_DIR = Path(__file__).with_name("presets")


def names() -> List[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.json"))


def load_file(path: Union[str, Path]) -> System:
    path = Path(path)
    try:
        text = read_text(path)
    except ParamError as e:
        raise ParamError(f"preset file {e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParamError(f"preset file {path} line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise ParamError(f"preset file {path}: nested too deeply to be a preset") from None
    try:
        return System.from_dict(data, str(path))
    except TypeError as e:  # a field given with the wrong shape
        raise ParamError(f"preset file {path}: {e}") from None
    except ParamError as e:
        raise ParamError(f"preset file {path}: {e}") from None


def load(memory: Union[str, Path, System]) -> System:
    """A preset by name, a preset file by path, or a System as it is."""
    if isinstance(memory, System):
        return memory.validate()
    text = str(memory)
    if text in names():
        return load_file(PRESET_DIR / f"{text}.json")
    path = Path(text)
    if path.suffix == ".json" or path.exists():
        return load_file(path)
    raise ParamError(f"memory = {text!r} is neither a preset nor a preset file; presets: {', '.join(names())}")


def save(system: System, path: Union[str, Path]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(system.validate().to_dict(), indent=2) + "\n")
    tmp.replace(path)  # never leave a half-written preset
    return path


def summary() -> List[Dict[str, str]]:
    return [{"name": n, "kind": (s := load(n)).kind, "description": s.description} for n in names()]
