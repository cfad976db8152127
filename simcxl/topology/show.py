"""A graph as text and as a drawing."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .. import _core
from .graph import Topology
from .rules import port_based, reached_from


def _depths(t: Topology) -> Dict[str, int]:
    hosts = [h.name for h in t.of_type("host")]
    depth = {h: 0 for h in hosts}
    todo = list(hosts)
    while todo:
        n = todo.pop(0)
        for k in t.connections:
            if k.a.comp == n and k.b.comp not in depth:
                depth[k.b.comp] = depth[n] + 1
                todo.append(k.b.comp)
    return depth


def pbr_fabrics(t: Topology) -> List[Dict[str, Any]]:
    """Each PBR fabric of the graph as the core routes it: switches, edge PIDs, algorithm, routes."""
    if not any(port_based(t, s.name) for s in t.of_type("switch")):
        return []
    return _core.pbr_fabrics(t.to_dict())


def text(t: Topology) -> str:
    """The resolved graph: each component below the one that sends it requests, then every parameter."""
    lines = [f"topology {t.name} (seed {t.seed})"]
    if t.description:
        lines.append(f"  {t.description}")
    shown = set()

    def walk(n: str, indent: str, via: str) -> None:
        c = t.components[n]
        if n in shown:  # another host's path reached it first: shared
            lines.append(f"{indent}{via}{n} ({c.type}, shared: see above)")
            return
        shown.add(n)
        lines.append(f"{indent}{via}{n} ({c.type})")
        for k in sorted((k for k in t.connections if k.a.comp == n), key=lambda k: (k.a.port, k.a.index or 0)):
            port = k.a.port + (f"[{k.a.index}]" if k.a.index is not None else "")
            win = f" [0x{k.base:x}, 0x{k.base + k.size:x})" if k.base is not None else ""
            win += "".join(f" {q} {v:g}" for q, v in k.qos.items())
            walk(k.b.comp, indent + "  ", f"{port}{win} -> ")

    for h in t.of_type("host"):
        walk(h.name, "", "")
    for f in pbr_fabrics(t):
        lines += ["", f"PBR fabric {', '.join(f['switches'])}: routes {f['algorithm']}"
                  + (f" (rooted at {f['root']}; the shortest paths' channel dependencies form a cycle: {f['cycle']})"
                     if f["algorithm"] != "shortest" else " (shortest paths; channel dependencies acyclic)")]
        for e in f["edges"]:
            lines.append(f"  PID {e['pid']:4d}: {e['switch']}.{e['port']} -> {e['component']} ({e['kind']})")
        for sw, table in f["routes"].items():
            lines.append(f"  {sw} routes: " + ", ".join(f"{pid} -> {port}" for pid, port in sorted(table.items())))
    if t.decoders:  # as `cxl list -D` shows them: what the host bridges and switches route by
        lines += ["", "committed HDM decoders:"]
        for name, d in t.decoders.items():
            for x in d["committed"]:
                kind = "downstream ports" if t.components[name].type == "switch" else "root ports"
                where = (f"{kind} {', '.join(map(str, x['targets']))}" if x["targets"] else
                         f"DPA [0x{x['dpa_base']:x}, 0x{x['dpa_base'] + x['dpa_size']:x})")
                lines.append(f"  {name} decoder {x['index']}: [0x{x['base']:x}, 0x{x['base'] + x['size']:x}) "
                             f"{x['ways']} ways x {x['granularity']} B -> {where}")
            if d["poison_on_decode_error"]:
                lines.append(f"  {name}: reads no decoder covers answer poison")
    lines.append("")
    lines.append(f"{'parameter':44s} {'value':>14s}  origin")
    for c in t.components.values():
        for k, v in c.values.items():
            lines.append(f"{c.name + '.' + k:44s} {str(v):>14s}  {c.origin.get(k, '')}")
    return "\n".join(lines)


def plot(t: Topology, path) -> None:
    """Components in rows by their distance from the host, connections as labelled arrows."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    depth = _depths(t)
    rows = max(depth.values()) + 1
    # Tree layout: leaves left to right in walk order, a parent above the middle of its children.
    pos: Dict[str, Tuple[float, float]] = {}
    nxt = [0.0]

    hosts = [h.name for h in t.of_type("host")]
    reach = [reached_from(t, h) for h in hosts]
    # What several hosts reach is drawn once, after every host's own part, below them all.
    shared = {n for n in t.components if sum(n in r for r in reach) > 1}

    def place(n: str) -> float:
        pos.setdefault(n, (0.0, 0.0))  # placed: a cycle of PBR switches comes back to it
        kids = [k.b.comp for k in sorted((k for k in t.connections if k.a.comp == n),
                                         key=lambda k: (k.a.port, k.a.index or 0))]
        kids = [m for m in kids if m not in pos and (n in shared or m not in shared)]
        if not kids:
            x = nxt[0]
            nxt[0] += 1
        else:
            xs = [place(m) for m in kids]
            x = (xs[0] + xs[-1]) / 2
        pos[n] = (x + 0.5, -depth[n])
        return x

    for h in hosts:
        place(h)
    for n in sorted(shared, key=lambda n: depth[n]):
        if n not in pos:
            before = set(pos)
            place(n)
            # Centred below the hosts' ports that lead to it.
            ups = [pos[k.a.comp][0] for k in t.connections if k.b.comp == n and k.a.comp in before]
            dx = sum(ups) / len(ups) - pos[n][0] if ups else 0.0
            for m in set(pos) - before:
                pos[m] = (pos[m][0] + dx, pos[m][1])
    width = max(1.0, nxt[0])
    fig, ax = plt.subplots(figsize=(max(6, 2.0 * width), 1.4 * (rows + 1)))
    colours = {"host": "#c6dbef", "dram": "#fdd0a2", "remote_socket": "#fdae6b", "host_bridge": "#a1d99b",
               "link": "#e5e5e5", "switch": "#fee391", "type3": "#74c476", "home_agent": "#bcbddc", "accelerator": "#9e9ac8",
               "nic": "#fa9fb5"}
    for k in t.connections:
        (x0, y0), (x1, y1) = pos[k.a.comp], pos[k.b.comp]
        ax.annotate("", xy=(x1, y1 + 0.22), xytext=(x0, y0 - 0.22),
                    arrowprops=dict(arrowstyle="->", color="#555555"))
        label = k.a.port + (f"[{k.a.index}]" if k.a.index is not None else "")
        if k.base is not None:
            label += f"\n{k.base / 2 ** 30:g}+{k.size / 2 ** 30:g} GiB"
        ax.text(0.3 * x0 + 0.7 * x1, 0.3 * y0 + 0.7 * y1, label, fontsize=7, ha="center", va="center", color="#333333",
                bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8))
    for n, (x, y) in pos.items():
        c = t.components[n]
        ax.text(x, y, f"{n}\n{c.type}", ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round,pad=0.4", fc=colours.get(c.type, "white"), ec="#333333"))
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-rows + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(f"topology {t.name}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
