"""Accelerator presets: one CXL.cache device each (``simcxl/presets/accel``), loaded by name or file,
or several joined with ``+`` on one host. The workloads that run them are ``simcxl.workloads.coherent``'s
(which hands these functions on as its own); they load here, below the topology files that name them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Optional, Sequence, Union

from .params import ParamError, System, check_device_name, did_you_mean
from .presets import ACCEL_DIR as PRESET_DIR
from .presets import accel_names as preset_names
from .presets import load_file, split_joined

__all__ = ["PRESET_DIR", "combine", "load", "load_joined", "preset_names"]


def combine(parts: Sequence[tuple], name: Optional[str] = None) -> System:
    """One host with the accelerators of several single-device systems, each under its name.
    The host (cores, local DRAM, home agent) and the seed are the first system's."""
    if not parts:
        raise ParamError("an accelerator system needs one or more devices")
    devs = []
    for dname, s in parts:
        check_device_name(dname, "device name")
        if len(s.devices or []) != 1:
            raise ParamError(f"{dname}: {s.name} has {len(s.devices or [])} devices; join single-device systems")
        dev = copy.deepcopy(s.devices[0])
        dev.name = dname
        devs.append(dev)
    first = parts[0][1]
    return System(name=name or "+".join(n for n, _ in parts), kind="local-dram", host=copy.deepcopy(first.host),
                  local_dram=copy.deepcopy(first.local_dram), home=copy.deepcopy(first.home), devices=devs,
                  seed=first.seed, description="accelerators on one host: " + ", ".join(
                      f"{n} ({s.name})" for n, s in parts) + f"; the host of {parts[0][0]}",
                  source="; ".join(f"{n}: {s.source}" for n, s in parts if s.source)).validate()


def load_joined(text: str) -> System:
    """``NAME=PRESET+NAME=PRESET...`` (or ``PRESET+PRESET``, named after the presets) on one host."""
    parts = split_joined(text, load, "accel", "device",
                         ("gpu=type1-asic+mem=type2-bias", "a=type1-asic+b=type1-asic"))
    try:
        return combine(parts, name=text)
    except ParamError as e:
        raise ParamError(f"accel {text!r}: {e}") from None


def load(system: Union[str, Path, System]) -> System:
    """An accelerator preset by name, a preset file (complete, or with a ``base``), several joined
    with ``+``, or a system as it is."""
    if isinstance(system, System):
        return system.validate()
    text = str(system)
    if "+" in text and text not in preset_names() and not Path(text).exists():
        return load_joined(text)
    path = PRESET_DIR / f"{text}.json" if text in preset_names() else Path(text)
    if not path.exists():
        raise ParamError(f"accel = {text!r} is neither an accelerator preset nor a preset file; "
                         f"{did_you_mean(text, preset_names())}allowed presets: {', '.join(preset_names())} (several "
                         "join with +, e.g. a=type1-asic+b=type2-bias)")
    s = load_file(path, load)
    if not s.devices:
        raise ParamError(f"preset file {path}: it describes no accelerator; allowed: a file with a device's groups "
                         "(link, cache, accel, dma, media) or devices")
    return s
