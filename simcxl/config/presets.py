"""Presets: JSON files of the parameter dataclasses, shipped in ``simcxl/presets``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .files import read_text
from .param_group import did_you_mean
from .groups import HomeParams
from .params import (DEVICE_GROUPS, MAP_KIND, WINDOW_STRIDE, AccelDevice, CxlMemory, ParamError, RemoteMemory, System,
                     Window, WindowRange)

PRESET_DIR = Path(__file__).parents[1] / "presets"
#: The accelerator presets (accel_presets.load reads them). Listed here, below
#: accel_presets, so that a preset file's base may name one without a cycle.
ACCEL_DIR = PRESET_DIR / "accel"
#: The groups a preset file gives every parameter of (a device list's are checked device by device).
FILE_GROUPS = ("host", "local_dram", "remote", "cxl", "home") + tuple(g for g, _ in DEVICE_GROUPS)


def names() -> List[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.json"))


def accel_names() -> List[str]:
    """The shipped accelerator presets (accel_presets.preset_names)."""
    return sorted(p.stem for p in ACCEL_DIR.glob("*.json"))


def read_json(path: Union[str, Path]) -> Any:
    """A preset file's JSON; its errors name the file, line and column."""
    path = Path(path)
    try:
        text = read_text(path)
    except ParamError as e:
        raise ParamError(f"preset file {e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ParamError(f"preset file {path} line {e.lineno} column {e.colno}: {e.msg}; a preset file is JSON, "
                         "as 'simcxl presets show NAME --json' prints one") from None
    except RecursionError:
        raise ParamError(f"preset file {path}: nested too deeply to be a preset") from None


def _leaves(d: Dict[str, Any], prefix: str = "") -> List[str]:
    out = []
    for k, v in d.items():
        out += _leaves(v, f"{prefix}{k}.") if isinstance(v, dict) else [prefix + k]
    return out


def _require(template: Dict[str, Any], given: Dict[str, Any], prefix: str, why: str) -> None:
    """Every parameter of ``template`` is in ``given``, else one line naming the first missing (after
    ``prefix``), how many more, and ``why`` a file gives them all."""
    have = set(_leaves(given))
    missing = [p for p in _leaves(template) if p not in have]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        *groups, leaf = missing[0].split(".")
        inside = "".join(f'"{g}": {{' for g in groups) + "..." + "}" * len(groups)
        raise ParamError(f"{prefix}{missing[0]} is missing{more}; {why}: add \"{leaf}\": VALUE "
                         f"{'inside ' + inside if groups else 'at the top level'}")


def _merge(base: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return out


_BASES: List[Path] = []  # the files whose base is being loaded, to catch a loop


def complete(data: Any, path: Path, full: Callable[[Dict[str, Any]], Dict[str, Any]],
             load_base: Callable[[str], Any], groups: Sequence[str]) -> Dict[str, Any]:
    """A preset file's contents with nothing left to a schema default.

    A file either gives every parameter (as ``presets show --json`` prints
    them) or names the preset it changes with ``"base"``; the parameters it
    leaves out then come from that preset, never silently from the schema.
    ``full(data)`` is a complete description of the same shape (defaults).
    """
    if not isinstance(data, dict):
        return data
    if "base" in data:
        name = data["base"]
        if not isinstance(name, str):
            raise ParamError(f"preset file {path}: base = {name!r} is not a preset name or file; allowed: a string, a "
                             f"preset ({', '.join(load_names())}) or a preset file's path")
        ref = name if name in load_names() or Path(name).is_absolute() else str(path.parent / name)
        if name not in load_names() and not Path(name).suffix and not Path(ref).exists():
            raise ParamError(f"preset file {path}: base = {name!r} is neither a preset nor a file; "
                             f"{did_you_mean(name, load_names())}allowed: a preset ({', '.join(load_names())}) or "
                             "a preset file")
        me = path.resolve()
        if me in _BASES:
            raise ParamError(f"preset file {path}: base {name!r} leads back to this file; allowed: a base that "
                             f"does not, e.g. a shipped preset: {', '.join(load_names())}")
        _BASES.append(me)
        try:
            base = load_base(name if name in load_names() else ref)
        except ParamError as e:
            raise ParamError(f"preset file {path}: base: {e}") from None
        finally:
            _BASES.pop()
        b = base.to_dict()
        b.pop("provenance", None)  # the base's fit says nothing of the changed parameters
        own = {k: v for k, v in data.items() if k != "base"}
        merged = _merge(b, own)
        if hasattr(base, "provenance"):
            merged["provenance"] = {**own.get("provenance", {}), "base": name}
        changed = [k for k in _leaves({g: own[g] for g in groups if isinstance(own.get(g), dict)})]
        if "name" not in own:
            merged["name"] = path.stem
        if "description" not in own:
            merged["description"] = f"{name} with {', '.join(changed) or 'nothing'} changed ({path.name})"
        return merged
    _require({k: v for k, v in full(data).items() if k in groups}, {k: v for k, v in data.items() if k in groups},
             f"preset file {path}: ", "a preset file gives every parameter, as 'simcxl presets show NAME --json' "
             "prints them, or names the preset it changes with \"base\": \"NAME\" and gives only what differs")
    return data


def load_names() -> List[str]:
    """Every shipped preset, memories and accelerators."""
    return names() + accel_names()


def _full_memory(data: Dict[str, Any]) -> Dict[str, Any]:
    kind = data.get("kind")
    if kind == MAP_KIND:  # the windows are checked one by one (_complete_windows)
        return {k: v for k, v in _full_memory({**data, "kind": "local-dram"}).items() if k != "kind"}
    lone = any(g in data for g, _ in DEVICE_GROUPS)  # an accelerator preset's one device
    return System(name="-", kind=str(kind), remote=RemoteMemory() if "remote" in data or kind == "remote-numa"
                  else None, cxl=CxlMemory() if "cxl" in data or kind == "cxl-type3" else None,
                  home=HomeParams() if lone or "home" in data else None, devices=[AccelDevice()] if lone else None,
                  lone_device=lone).to_dict()


def _complete_devices(data: Any) -> None:
    """Every device of a file's ``devices`` list gives every parameter of its groups."""
    if not isinstance(data, dict) or not isinstance(data.get("devices"), list):
        return
    full = AccelDevice().to_dict()
    for i, x in enumerate(data["devices"]):
        if not isinstance(x, dict):
            continue  # System.from_dict says what is wrong
        groups = [g for g, _ in DEVICE_GROUPS if isinstance(x.get(g, {}), dict)]
        _require({g: full[g] for g in groups}, {g: x.get(g, {}) for g in groups}, f"{x.get('name', f'devices[{i}]')}.",
                 "a device gives every parameter, as 'simcxl presets show NAME --json' prints them")


def _complete_windows(data: Any) -> None:
    """Every window of a map file gives every parameter of its memory, and where it lies."""
    if not isinstance(data, dict) or not isinstance(data.get("map"), list):
        return
    for i, w in enumerate(data["map"]):
        if not isinstance(w, dict):
            continue  # System.from_dict says what is wrong
        name = w.get("name", f"map[{i}]")
        for key in ("base", "size"):
            if key not in w:
                raise ParamError(f"{name}.{key} is missing; add \"{key}\": BYTES to window {name} of map: a window "
                                 "gives its base and size (bytes)")
        key = {"remote-numa": "remote", "cxl-type3": "cxl"}.get(w.get("kind"))
        if key is None or not isinstance(w.get(key), dict):
            continue
        _require(_full_memory({"kind": w["kind"]})[key], w[key], f"{name}.",
                 "a window gives every parameter of its memory, as 'simcxl presets show NAME --json' prints them")


def load_file(path: Union[str, Path], load_base: Optional[Callable[[str], Any]] = None) -> System:
    """A preset file: memories, accelerators or both. ``load_base`` loads the preset a file's ``base``
    names (default: :func:`load`)."""
    path = Path(path)
    data = read_json(path)
    try:
        if isinstance(data, dict) and ({"name", "kind"} <= set(data) or "base" in data):
            data = complete(data, path, _full_memory, load_base or load, FILE_GROUPS)
        _complete_windows(data)
        _complete_devices(data)
        return System.from_dict(data, str(path))
    except TypeError as e:  # a field given with the wrong shape
        raise ParamError(f"preset file {path}: {e}") from None
    except ParamError as e:
        raise ParamError(_in_file(path, str(e))) from None


def _in_file(path: Path, msg: str) -> str:
    """An error of a preset file, naming the file once."""
    if msg.startswith(f"preset file {path}"):
        return msg
    if msg.startswith(f"{path}: "):
        msg = msg[len(str(path)) + 2:]
    return f"preset file {path}: {msg}"


def load(memory: Union[str, Path, System]) -> System:
    """A preset by name, a preset file by path, a System as it is, or an
    address map of several: ``"ddr-local+cxl-asic"`` (windows named after the
    presets) or ``"ddr=ddr-local+cxl0=cxl-asic"`` (named as given); the host
    is the first one's (see combine)."""
    if isinstance(memory, System):
        return memory.validate()
    text = str(memory)
    if text in names():
        return load_file(PRESET_DIR / f"{text}.json")
    path = Path(text)
    if "+" in text and not path.exists():
        return load_map(text)
    if path.suffix == ".json" or path.exists():
        return load_file(path)
    raise ParamError(f"memory = {text!r} is neither a preset nor a preset file; {did_you_mean(text, names())}"
                     f"allowed presets: {', '.join(names())} (an address map joins them with +, e.g. "
                     "ddr-local+cxl-asic)")


def split_joined(text: str, load_one: Callable[[str], Any], what: str, part: str, examples: Sequence[str]) -> list:
    """``[NAME=]PRESET+[NAME=]PRESET...`` as [(name, loaded preset)]; a part without a name is
    named after its preset. ``what``/``part`` name the whole and its parts in messages, with
    ``examples`` (of the syntax, and of naming two parts)."""
    parts: list = []
    for item in text.split("+"):
        item = item.strip()
        if not item:
            raise ParamError(f"{what} {text!r} has an empty part; allowed: [{part.upper()}=]PRESET+"
                             f"[{part.upper()}=]PRESET, e.g. {examples[0]}")
        pname, sep, spec = item.partition("=")
        if not sep:
            spec, pname = item, Path(item).stem
        try:
            s = load_one(spec.strip())
        except ParamError as e:
            raise ParamError(f"{what} {text!r}: {e}") from None
        if any(n == pname.strip() for n, _ in parts):
            raise ParamError(f"{what} {text!r}: {part} name {pname.strip()!r} appears twice; name the {part}s, "
                             f"e.g. {examples[1]}")
        parts.append((pname.strip(), s))
    return parts


def load_map(text: str) -> System:
    """``[NAME=]PRESET+[NAME=]PRESET...`` as one address map."""
    parts = split_joined(text, load, "memory", "window", ("ddr-local+cxl-asic or ddr=ddr-local+cxl0=cxl-asic",
                                                           "cxl0=cxl-asic+cxl1=cxl-asic"))
    try:
        return combine(parts, name=text)
    except ParamError as e:
        raise ParamError(f"memory {text!r}: {e}") from None


def save(system: System, path: Union[str, Path]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(system.validate().to_dict(), indent=2) + "\n")
    tmp.replace(path)  # never leave a half-written preset
    return path


def summary() -> List[Dict[str, str]]:
    return [{"name": n, "kind": (s := load(n)).kind, "description": s.description} for n in names()]


def combine(parts: List[Tuple[str, System]], name: Optional[str] = None) -> System:
    """One host with the memories of several single-memory systems as windows of its address map.

    ``parts`` is [(window name, system)]: each system gives its memory part
    (a local-dram system its ``local_dram``, a remote-numa its ``remote``
    groups, a cxl-type3 its ``cxl`` groups: bridge, root ports, links,
    devices); the host (and the seed) are the first system's. Window ``i``
    maps [i TiB, (i + 1) TiB); ``<window>.base`` and ``<window>.size`` move it.
    The host's local DRAM, where the page tables live, is the local-dram
    system's if one is given, else the first system's."""
    if not parts:
        raise ParamError("an address map needs one or more memories")
    windows: List[Window] = []
    local = None
    for i, (wname, s) in enumerate(parts):
        if s.kind == MAP_KIND:
            raise ParamError(f"{wname}: an address-map system cannot be a window of another map; give its "
                             "memories one by one")
        rng = WindowRange(base=i * WINDOW_STRIDE, size=WINDOW_STRIDE)
        w = Window(name=wname, kind=s.kind, range=rng, remote=copy.deepcopy(s.remote) if s.kind == "remote-numa"
                   else None, cxl=copy.deepcopy(s.cxl) if s.kind == "cxl-type3" else None)
        if s.kind == "local-dram" and local is None:
            local = s.local_dram
        windows.append(w)
    first = parts[0][1]
    desc = " + ".join(f"{n} ({s.kind})" for n, s in parts)
    return System(name=name or "+".join(n for n, _ in parts), kind=MAP_KIND, host=copy.deepcopy(first.host),
                  local_dram=copy.deepcopy(local if local is not None else first.local_dram), seed=first.seed,
                  description=f"address map: {desc}; the host of {parts[0][0]}",
                  source="; ".join(f"{n}: {s.source}" for n, s in parts if s.source), map=windows,
                  provenance={"combined": [s.name for _, s in parts]}).validate()
