"""``simcxl presets``: list the shipped presets and show one's parameters."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..config import presets
from ..config.groups import HomeParams, NicParams
from ..config.params import DEVICE_GROUPS, AccelDevice, ParamError, System, did_you_mean
from .common import Group, emit_json, json_opt, user_errors


@click.group("presets", cls=Group)
def presets_group():
    """List and show the shipped presets."""


ACCEL_KIND = {1: "cxl-type1", 2: "cxl-type2"}


def _is_accel(spec: str) -> bool:
    from ..workloads import coherent
    if spec in coherent.preset_names():
        return True
    if "+" in spec and not Path(spec).exists():  # accelerators joined on one host
        return all(_is_accel(p.partition("=")[2] or p) for p in spec.split("+"))
    if spec in presets.names() or not Path(spec).is_file():
        return False
    try:
        data = presets.read_json(spec)
    except ParamError:
        return False
    return isinstance(data, dict) and (any(g in data for g, _ in DEVICE_GROUPS) or isinstance(data.get("devices"), list)
                                       or data.get("base") in coherent.preset_names())


@presets_group.command("list")
@json_opt
def presets_list(as_json):
    """The shipped presets: memories (-m) and CXL.cache accelerators (-a)."""
    from ..workloads import coherent
    with user_errors():
        rows = presets.summary()
        for n in coherent.preset_names():
            s = coherent.load(n)
            rows.append({"name": n, "kind": ACCEL_KIND[s.device().accel.type], "description": s.description})
    if as_json:
        emit_json(rows)
    else:
        for r in rows:
            click.echo(f"{r['name']:12s} {r['kind']:12s} {r['description']}")


def _origins(s) -> dict:
    """Where each parameter's value came from: fitted, set by the preset, or the schema default."""
    fitted = (getattr(s, "provenance", None) or {}).get("fitted", {})
    blank = System(name="-", kind=s.kind, remote=type(s.remote)() if s.remote else None,
                   cxl=type(s.cxl)() if s.cxl else None, home=HomeParams() if s.devices else None,
                   devices=[AccelDevice(name=d.name) for d in s.devices] if s.devices else None,
                   lone_device=s.lone_device, nic=NicParams() if s.nic else None)
    defaults = blank.parameters()
    return {k: "fitted" if k in fitted else ("default" if defaults.get(k) == v else "preset")
            for k, v in s.parameters().items()}


@presets_group.command("show", example="simcxl presets show cxl-asic")
@click.argument("memory")
@json_opt
def presets_show(memory, as_json):
    """Every parameter of a preset (name or file), and where each came from."""
    from ..workloads import coherent
    with user_errors():
        every = presets.names() + coherent.preset_names()
        if memory not in every and "+" not in memory and not Path(memory).suffix and not Path(memory).exists():
            raise ParamError(f"{memory!r} is neither a preset nor a preset file; {did_you_mean(memory, every)}"
                             f"allowed presets: {', '.join(every)} ('simcxl presets list' describes them)")
        s = coherent.load(memory) if _is_accel(memory) else presets.load(memory)
    if as_json:
        click.echo(json.dumps(s.to_dict(), indent=2))
        return
    kind = s.kind
    if s.devices and s.kind == "local-dram":  # an accelerator preset (the host's local DRAM its only memory)
        kind = ACCEL_KIND[s.device().accel.type] + " accelerator" if s.lone_device else s.device_kinds()
    click.echo(f"{s.name} ({kind}): {s.description}")
    click.echo(f"preset: {s.source}")
    prov = getattr(s, "provenance", None) or {}
    if prov.get("fitted"):
        click.echo(f"fitted: by simcxl calibrate ({prov.get('engine', 'standalone')} engine, {prov.get('date', '?')}) "
                   f"to the {prov.get('testbed', '?')} testbed: {prov.get('citation', '')}")
    if prov.get("base"):
        click.echo(f"base: every parameter the file leaves out comes from {prov['base']}")
    click.echo("default: the schema default (simcxl/config/groups.py, with its reason)")
    origins = _origins(s)
    for k, v in s.parameters().items():
        click.echo(f"  {k:42s} {str(v):>14s}  {origins[k]}")
