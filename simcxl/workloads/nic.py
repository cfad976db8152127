"""The CXL-NIC's remote atomic operations (RAO) and RPC (de)serialisation against their baselines.

A CXL-NIC system is an accelerator :class:`simcxl.config.params.System` (host, home
agent, link, the device cache the NIC's atomic engine works in, and the DMA
engine the PCIe NIC baseline uses) with one device, whose ``nic`` holds the
NIC's own parameters (:class:`simcxl.config.params.NicParams`). :func:`rao` runs CircusTent-style kernels
by host threads through the CXL-NIC (``cxl-nic``), through a PCIe NIC on the
DMA engine (``pcie-nic``: MMIO doorbell, descriptor fetch, DMA read and DMA
write per operation, ``dma.engines`` operations in flight, completion by
polling or MSI-X) and by the host cores themselves (``host``).

Kernels (per thread, ``iters`` iterations over an ``elements``-word array):
``rand`` one atomic on a random word; ``stride1`` consecutive words;
``striden`` every ``stride``-th word; ``central`` one word for all threads;
``scatter`` fetch a destination index, FETCH_ADD 1 on word i, then ADD that
previous value to the destination; ``gather`` the reverse; ``ptrchase``
fetch the next index from the one before (a dependent chain). ``op = cas``
replaces each add of v by a FETCH and a CAS of the value fetched to the sum.

:func:`rpc` (de)serialises one protocol-buffer message of each shape (:data:`SHAPES`: 64 B to
64 KiB): the CXL-NIC's RPC engine walks the host objects through its cache (serialise) or writes
the parsed objects into host memory (deserialise), computing at ``nic.rpc_field_ns`` per field and
``nic.rpc_gbps``; the PCIe NIC has the host core (de)serialise (``nic.host_field_ns``,
``nic.host_copy_gbps``, ``nic.host_outstanding`` line fills) into a DMA buffer the NIC reads (or
writes); ``host`` is the host core alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, Optional, Union

import pandas as pd

from .. import _core
from . import coherent
from ..engine.standalone import Progress, _version
from ..config.groups import NicParams
from ..config.params import ParamError, System
from ..topology.convert import core_graph

KERNELS = ("rand", "stride1", "striden", "central", "scatter", "gather", "ptrchase")
OPS = ("add", "cas")
MECHANISMS = ("cxl-nic", "pcie-nic", "host")
DIRECTIONS = ("serialize", "deserialize")
#: RPC message shapes (wire size target, fields per message, nesting depth, share of bytes in strings).
SHAPES = tuple(d["shape"] for d in _core.rpc_shapes())
#: Published RPC (de)serialisation speedup of a CXL-NIC over a PCIe NIC, on average: Cohet (HPCA 2026).
PUBLISHED_RPC_SPEEDUP = 1.86
#: Published RAO speedup of a CXL-NIC over a PCIe NIC: Cohet (Wang et al., HPCA 2026, arXiv:2511.23011).
PUBLISHED_SPEEDUP = (5.5, 40.2)


def load(system: Union[str, System], nic: Optional[Dict[str, Any]] = None) -> System:
    """A CXL-NIC system: an accelerator preset (name or file) or system whose one device is the NIC,
    with ``nic`` overrides of its parameters (the schema's defaults where the system has none)."""
    s = coherent.load(system)
    if s.nic is None:
        s = dataclasses.replace(s, nic=NicParams())
    return s.replace(**{f"nic.{k}": v for k, v in (nic or {}).items()})


def _names(values: Iterable[str], allowed, what: str, workload: str = "rao"):
    out = [values] if isinstance(values, str) else list(values)
    for v in out:
        if v not in allowed:
            raise ParamError(f"{workload}.{what} = {v!r} is not allowed; allowed values: {', '.join(allowed)}")
    if not out:
        raise ParamError(f"{workload}.{what} is empty; allowed: one or more of {', '.join(allowed)}")
    return out


def rao(system: Union[str, System], kernels: Iterable[str] = KERNELS, ops: Iterable[str] = OPS,
        mechanisms: Iterable[str] = MECHANISMS, threads: int = 4, iters: int = 1000, elements: int = 1 << 16,
        stride: int = 9, noise_threads: int = 0, check: bool = False, progress: Progress = None) -> pd.DataFrame:
    """Every kernel x op x mechanism: one row each, with ``ops_per_second`` (atomic operations completed per
    second, all threads) and ``latency_ns`` (mean, a thread posting one to seeing its completion)."""
    s = load(system)
    ks, os_, ms = _names(kernels, KERNELS, "kernel"), _names(ops, OPS, "op"), _names(mechanisms, MECHANISMS, "mechanism")
    rows = []
    core = core_graph(s)
    for k in ks:
        for o in os_:
            for m in ms:
                r = _core.run_rao(core, k, o, m, threads, iters, elements, stride, noise_threads, check, False,
                                  progress)
                rows.append({"kernel": k, "op": o, "mechanism": m, **r})
    df = pd.DataFrame(rows)
    df.insert(0, "system", s.name)
    df.attrs.update({"source": "simulation", "engine": "standalone", "simcxl": _version(), "system": s.name,
                     "workload": "rao", "config": {"threads": threads, "iters": iters, "elements": elements,
                                                   "stride": stride, "noise_threads": noise_threads}})
    return df


def rpc(system: Union[str, System], shapes: Iterable[str] = SHAPES,
        directions: Iterable[str] = DIRECTIONS, mechanisms: Iterable[str] = MECHANISMS,
        check: bool = False) -> pd.DataFrame:
    """One message of every shape x direction x mechanism: rows of ``shape, direction, bytes, mechanism,
    latency_ns, throughput_gbps`` (wire bytes over the latency; serialise: objects in host memory to the
    message in the NIC, or in a host buffer for ``host``; deserialise: the message in the NIC to objects
    in host memory)."""
    s = load(system)
    shs = _names(shapes, SHAPES, "shape", "rpc")
    ds, ms = _names(directions, DIRECTIONS, "direction", "rpc"), _names(mechanisms, MECHANISMS, "mechanism", "rpc")
    core = core_graph(s)
    rows = []
    for sh in shs:
        for d in ds:
            for m in ms:
                r = _core.run_rpc(core, sh, d, m, check)
                rows.append({"shape": sh, "direction": d, "mechanism": m, **r})
    df = pd.DataFrame(rows)
    df["bytes"] = df["bytes"].astype(int)
    df.insert(0, "system", s.name)
    df.attrs.update({"source": "simulation", "engine": "standalone", "simcxl": _version(), "system": s.name,
                     "workload": "rpc", "config": {}})
    return df


def _over(df: pd.DataFrame, index, value: str, faster_is_larger: bool) -> pd.DataFrame:
    """The CXL-NIC's advantage over the PCIe NIC and over the host, per row of `index`."""
    piv = df.pivot_table(index=index, columns="mechanism", values=value, sort=False)
    out = pd.DataFrame(index=piv.index)
    for other, name in (("pcie-nic", "cxl_over_pcie"), ("host", "cxl_over_host")):
        if other in piv and "cxl-nic" in piv:
            out[name] = piv["cxl-nic"] / piv[other] if faster_is_larger else piv[other] / piv["cxl-nic"]
    return out.reset_index()


def rpc_speedup(df: pd.DataFrame) -> pd.DataFrame:
    """Per shape and direction: the CXL-NIC's latency advantage over the PCIe NIC and over the host core."""
    return _over(df, ["shape", "direction"], "latency_ns", False)


def speedup(df: pd.DataFrame) -> pd.DataFrame:
    """Per kernel and op: the CXL-NIC's operation rate over the PCIe NIC's and over the host cores'."""
    return _over(df, ["kernel", "op"], "ops_per_second", True)


def plot(df: pd.DataFrame, path) -> Any:
    """Operation rate per kernel and mechanism (log scale), with the CXL-NIC over PCIe NIC speedup."""
    import matplotlib.pyplot as plt
    import numpy as np
    from .plots import _finish
    labels = [f"{k}\n{o}" for k, o in dict.fromkeys(zip(df["kernel"], df["op"]))]
    mechs = list(dict.fromkeys(df["mechanism"]))
    fig, ax = plt.subplots(figsize=(9, 4.2))
    x = np.arange(len(labels))
    w = 0.8 / max(1, len(mechs))
    for i, m in enumerate(mechs):
        sub = df[df["mechanism"] == m]
        ax.bar(x + i * w - 0.4 + w / 2, sub["ops_per_second"] / 1e6, w, label=m)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("atomic operations (millions per second)")
    ax.set_title("Remote atomic operations: CXL-NIC, PCIe NIC, host cores", fontsize=10)
    ax.legend(fontsize=7)
    sp = speedup(df)
    note = None
    if "cxl_over_pcie" in sp:
        note = (f"CXL-NIC over PCIe NIC: {sp['cxl_over_pcie'].min():.1f}x to {sp['cxl_over_pcie'].max():.1f}x "
                f"(simulated); published 5.5x to 40.2x (Cohet, HPCA 2026)")
    return _finish(fig, ax, df, path, note)


def plot_rpc(df: pd.DataFrame, path) -> Any:
    """(De)serialisation latency per shape and mechanism (log scale), one panel per direction."""
    import matplotlib.pyplot as plt
    import numpy as np
    from .plots import _finish
    dirs = list(dict.fromkeys(df["direction"]))
    fig, axes = plt.subplots(1, len(dirs), figsize=(9, 4.2), squeeze=False)
    for ax, d in zip(axes[0], dirs):
        sub = df[df["direction"] == d]
        shapes = list(dict.fromkeys(sub["shape"]))
        mechs = list(dict.fromkeys(sub["mechanism"]))
        x = np.arange(len(shapes))
        w = 0.8 / max(1, len(mechs))
        for i, m in enumerate(mechs):
            ax.bar(x + i * w - 0.4 + w / 2, sub[sub["mechanism"] == m]["latency_ns"], w, label=m)
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels(shapes, fontsize=7)
        ax.set_ylabel("latency (ns)")
        ax.set_title(d, fontsize=10)
        ax.legend(fontsize=7)
    sp = rpc_speedup(df)
    note = None
    if "cxl_over_pcie" in sp:
        note = (f"CXL-NIC over PCIe NIC: {sp['cxl_over_pcie'].mean():.2f}x on average (simulated); published "
                f"{PUBLISHED_RPC_SPEEDUP}x (Cohet, HPCA 2026)")
    return _finish(fig, axes[0][0], df, path, note)
