"""``simcxl bench``: the engine's own speed."""

from __future__ import annotations

import click

from ..engine import standalone as engine
from .common import emit_json, json_opt, user_errors


@click.command("bench")
@click.option("--requests", default=2_000_000, show_default=True)
@click.option("--memory", default="cxl-asic", show_default=True)
@json_opt
def bench(requests, memory, as_json):
    """Engine speed on a fixed Type-3 random-read workload."""
    with user_errors():
        r = engine.bench(requests, memory)
    if as_json:
        emit_json(r)
    else:
        click.echo(f"{r['workload']}\n{r['simulated_requests']:,} requests in {r['wall_seconds']:.2f} s: "
                   f"{r['requests_per_second'] / 1e6:.2f} M requests/s (simulated {r['simulated_bandwidth_gbps']:.1f} "
                   f"GB/s at {r['read_latency_ns_mean']:.0f} ns)")
