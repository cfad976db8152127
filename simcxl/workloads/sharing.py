"""Memory shared by several hosts, kept coherent by HDM-DB back-invalidate (CXL 3.x).

A Type-3 device with ``device.shared = 1`` is one region that every host reaching it maps (a
multi-headed or fabric-attached device). Its snoop filter (``device.snoop_filter_*``) records
which hosts hold each line; a host's read for ownership, a read of a line another host owns, or
a line leaving the filter sends back-invalidate snoops (BISnp) to the holders, which answer
(BIRsp) after writing back what they had dirty. :func:`shared` runs loads and stores from threads
on each host through a coherent cache of the host's own, under a checker of the coherence
invariants over all hosts. CXL.cache devices (accelerators) below a host's home agent take part
too: their loads and stores go to their home agent, which has the host's cache get the line, and a
BISnp to the host reaches their caches through it (``examples/topologies/shared-4hosts-accel.toml``)::

    import simcxl
    df = simcxl.shared("examples/topologies/shared-8hosts-hdmdb.toml", pattern="pingpong", lines=4)
    df.attrs["components"]["shared_mem.bisnp_inv"]
"""

from __future__ import annotations

from typing import Iterable, Optional

import pandas as pd

from .. import _core
from ..engine.standalone import Memory, Progress, _attrs, _check_float, _check_int, host_names
from ..config.params import ParamError, System
from ..config.presets import load as load_preset
from ..topology import load as load_topology, memory_system
from ..topology.convert import core_graph

PATTERNS = ("random", "sequential", "pingpong")
_PER_HOST = ("loads", "stores", "hits", "misses", "upgrades", "writebacks", "snoop_writebacks", "snoops",
             "snoop_hits", "snoops_deferred", "latency_ns_mean")
# A device's row: its cache's counters (writebacks: dirty evictions; snoops: from its home agent).
_PER_DEVICE = ("loads", "stores", "hits", "misses", "writebacks", "snoops", "snoops_snpinv", "snoops_snpdata",
               "latency_ns_mean")


def device_hosts(system) -> dict:
    """Each CXL.cache device of a system's topology and the host whose home agent it hangs below."""
    t = getattr(system, "graph", None)
    if t is None:
        return {}
    out = {}
    for h in t.of_type("host"):
        for home in t.below(h.name, "home"):
            for k in t.down(home.name, "root_port"):
                for d in t.below(t.components[k.b.comp].name, "down"):
                    out[d.name] = h.name
    return out


class CoherenceViolation(AssertionError):
    """The checker saw a host read stale data or two hosts own a line at once."""


def shared(memory: Memory, hosts: Optional[Iterable[str]] = None, device: str = "", threads: int = 1,
           pattern: str = "random", lines: int = 1024, store_fraction: float = 0.5, accesses: int = 100_000,
           rounds: int = 10, think_ns: float = 0.0, check: bool = True, cache_lines: int = 16384,
           cache_ways: int = 16, hit_ns: Optional[float] = None, snoop_ns: Optional[float] = None, seed: int = 1,
           progress: Progress = None) -> pd.DataFrame:
    """Loads and stores, on ``memory`` (a System, a preset or a topology file), of ``lines`` shared lines (from the device's first byte) by ``threads`` threads
    on each of ``hosts`` (default: every host reaching the shared ``device``, itself found when the
    system has one).

    ``pattern``: ``random`` (each access a random line, a store with ``store_fraction``),
    ``sequential`` (each thread walks the lines from its own start) or ``pingpong`` (one access at a
    time: each host in turn stores to every line, ``rounds`` times, so ownership of each line moves
    from host to host: ``lines x (hosts x rounds - 1)`` BISnpInv). Each host's cache holds
    ``cache_lines`` in ``cache_ways``-way sets; a hit takes ``hit_ns`` and a snoop's lookup
    ``snoop_ns`` (default: the host's LLC latency).

    ``hosts`` may name CXL.cache devices too (below a host's home agent; default: every device of the
    hosts taking part): each is an initiator of its own, and in ``pingpong`` the token passes through
    the hosts, then the devices, in that order.

    One row per host: its loads, stores, hits, misses, write-backs, snoops, latency and its stages;
    with devices, one row per device as well (``device`` names it, ``host`` its host).
    ``df.attrs["components"]``: the device's BISnp/BIRsp and snoop-filter counters and every
    component's. A checker violation raises :class:`CoherenceViolation` naming the first one.
    """
    system = memory if isinstance(memory, System) else (
        memory_system(load_topology(memory)) if str(memory).endswith(".toml") else load_preset(memory))
    names = host_names(system)
    devices = device_hosts(system)
    hosts = [] if hosts is None else ([hosts] if isinstance(hosts, str) else list(hosts))
    for h in hosts:
        if h not in names and h not in devices:
            raise ParamError(f"hosts: {h!r} is not a host or CXL.cache device of {system.name}; allowed: "
                             f"{', '.join(names + list(devices))}")
    if pattern not in PATTERNS:
        raise ParamError(f"pattern = {pattern!r} is not allowed; allowed values: {', '.join(PATTERNS)}")
    args = dict(device=device, hosts=hosts, threads=_check_int("threads", threads, 1, 256), pattern=pattern,
                lines=_check_int("lines", lines, 1, 1 << 36),
                store_fraction=_check_float("store_fraction", store_fraction, 0, 1),
                accesses=_check_int("accesses", accesses, 1, 1 << 40), rounds=_check_int("rounds", rounds, 1, 1 << 32),
                think_ns=_check_float("think_ns", think_ns, 0, 1e6), check=bool(check),
                cache_lines=_check_int("cache_lines", cache_lines, 1, 1 << 28),
                cache_ways=_check_int("cache_ways", cache_ways, 1, 64),
                hit_ns=-1.0 if hit_ns is None else _check_float("hit_ns", hit_ns, 0, 1e5),
                snoop_ns=-1.0 if snoop_ns is None else _check_float("snoop_ns", snoop_ns, 0, 1e5),
                seed=_check_int("seed", seed, 0, 2 ** 53 - 1))
    r = _core.run_shared(core_graph(system), progress=progress, **args)
    detail = r.pop("detail")
    if detail:
        raise CoherenceViolation(f"{system.name}: {int(r['checker_violations'])} coherence violation(s); "
                                 f"the first {detail}")
    taking = [h for h in names if f"{h}.loads" in r]
    rows = [{"host": h, **{k: r[f"{h}.{k}"] for k in _PER_HOST},
             **{k[len(h) + 1:]: v for k, v in r.items()
                if k.startswith((f"{h}.latency_p", f"{h}.stage.", f"{h}.shared_cache."))}}
            for h in taking]
    # Devices taking part: one row each, under their host, with their name in `device`.
    acting = [d for d in devices if f"{d}.loads" in r]
    if acting:
        for row in rows:
            row["device"] = ""
        rows += [{"host": devices[d], "device": d, **{k: r[f"{d}.{k}"] for k in _PER_DEVICE},
                  **{k[len(d) + 1:]: v for k, v in r.items() if k.startswith((f"{d}.latency_p", f"{d}.stage."))}}
                 for d in acting]
        taking = taking + acting
    df = pd.DataFrame(rows)
    df.insert(0, "memory", system.name)
    for k in ("accesses", "elapsed_ns", "accesses_per_us"):
        df[k] = r[k]
    # A host's run results are <host>.<result>; its component stats (<host>.window.*) stay with the components.
    hosts_taking = [h for h in taking if h not in devices]
    in_rows = {f"{d}.{k}" for d in acting for k in _PER_DEVICE} | {
        k for d in acting for k in r if k.startswith((f"{d}.latency_p", f"{d}.stage."))}
    df.attrs["components"] = {k: v for k, v in r.items() if k not in in_rows and not any(
        k.startswith(h + ".") and not k.startswith(h + ".window.") for h in hosts_taking)}
    return _attrs(df, system, "shared", **{k: v for k, v in args.items() if k != "seed"}, seed=seed)
