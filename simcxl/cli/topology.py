"""``simcxl topology``: show a topology file (or a preset drawn as one), list the component types."""

from __future__ import annotations

import click

from .common import Group, emit_json, json_opt, parse_kv, plot_opt, set_opt, user_errors


@click.group("topology", cls=Group)
def topology_group():
    """Systems as graphs: show a topology file (or a preset drawn as one), list the component types."""


@topology_group.command("show", example="simcxl topology show examples/topologies/switch-1level.toml")
@click.argument("spec")
@set_opt
@json_opt
@click.option("--toml", "as_toml", is_flag=True, help="Print it as a topology file, every parameter given.")
@plot_opt
def topology_show(spec, overrides, as_json, as_toml, plot):
    """The resolved graph of SPEC (a topology file, a preset, or presets joined with +): each component
    below the one that sends it requests, every parameter and where its value came from."""
    from .. import topology
    from ..topology import show
    with user_errors():
        t = topology.resolve(spec)
        if overrides:
            t = t.replace(**parse_kv(overrides, "exp0.media.ranks=2"))
        if plot:
            show.plot(t, plot)
    if as_json:
        emit_json({**t.to_dict(), "parameters": topology.table(t)})
    elif as_toml:
        click.echo(topology.to_toml(t), nl=False)
    else:
        click.echo(show.text(t))
    if plot:
        click.echo(f"wrote {plot}", err=True)


@topology_group.command("types")
@json_opt
def topology_types(as_json):
    """The registered component types with their ports and parameters."""
    from .. import topology
    types = topology.describe()
    if as_json:
        emit_json(types)
        return
    for t in types:
        click.echo(f"{t['type']}: {t['doc']}")
        for p in t["ports"]:
            proto = f" ({'/'.join(p['protocols'])})" if p["protocols"] else ""
            many = "[i]" if p["multi"] else ""
            need = "" if p["required"] else ", optional"
            way = "sends requests" if p["faces"] == "down" else "receives requests"
            click.echo(f"  port {p['name']}{many}: {p['channel']}{proto}, {way}{need}"
                       + (f"; {p['doc']}" if p["doc"] else ""))
        names = [p["name"] for p in t["parameters"]]
        click.echo(f"  {len(names)} parameters: {', '.join(names)}")
        if t["stats"]:
            click.echo(f"  {len(t['stats'])} statistics (<{t['type']}>.<stat>): "
                       + ", ".join(s["name"] for s in t["stats"]))
        click.echo("")
