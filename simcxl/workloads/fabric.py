"""The fabric manager during a run of several hosts: dynamic capacity (CXL 3.0 DCD) and the
binding of multi-logical devices' LDs to hosts (CXL 2.0 FM API, Bind/Unbind vPPB).

A Type-3 device with ``device.dynamic_capacity = 1`` backs each host's logical device only
where the fabric manager added extents. Each command goes through three steps: the fabric
manager sends it to the device (``command_ns``), the device reports a dynamic-capacity event to
the host, and the host accepts the extent (an add) or lets it go (a release) after ``accept_ns``;
from then on the extent serves reads and writes, or an access to it reads poison (a write is
dropped), counted per LD as ``<device>.ld<i>.dc_poison_reads`` / ``dc_dropped_writes``.
Neither latency has a published figure to fit; both are assumptions to set for the system studied.

An LD of a multi-logical device may be unbound from its host and bound to another host that
reaches the device (or the same one, on another LD) during the run, with the same two steps (the
command, then the host's hot-remove or hot-add). A host with no LD bound reads poison and its
writes are dropped (``<device>.denied_reads`` / ``denied_writes``); it never reaches any
LD's lines, so a host bound to a fresh LD never sees what another host left in its old one.

    fm = FabricManager()
    fm.add_capacity("mld", "h0", 0, "1g")                  # there from the start
    fm.add_capacity("mld", "h1", 0, "512m", at_ns=50_000)  # usable at 50 us + 1 us + 10 us
    df = simcxl.hosts(pool, fm=fm)
    df.attrs["fm_events"]                                  # each step's time
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

import pandas as pd

from ..engine.standalone import parse_size
from ..config.params import ParamError


@dataclass
class FabricManager:
    """Fabric-manager commands to run during ``simcxl.hosts`` (its ``fm`` argument)."""
    command_ns: float = 1000.0   # the FM API command reaching the device (assumed)
    accept_ns: float = 10000.0   # the device's event until the host has accepted or released (assumed)
    steps: List[Dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for k in ("command_ns", "accept_ns"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1e12:
                raise ParamError(f"fm.{k} = {v!r} is out of range; allowed: 0 to 1e12 ns")

    def add_capacity(self, device: str, host: str, start: Union[int, str], size: Union[int, str],
                     at_ns: Optional[float] = None) -> "FabricManager":
        """Offer [start, start + size) of ``host``'s LD on ``device``, issued at ``at_ns`` (None: held
        from the start of the run, as the fabric manager set it up before)."""
        return self._step("add", device, host, start, size, at_ns)

    def release_capacity(self, device: str, host: str, start: Union[int, str], size: Union[int, str],
                         at_ns: float) -> "FabricManager":
        """Take back [start, start + size), all within one extent the LD holds, issued at ``at_ns``."""
        if at_ns is None:
            raise ParamError("fm.release_capacity: at_ns is missing; allowed: a time from 0 ns on")
        return self._step("release", device, host, start, size, at_ns)

    def bind_ld(self, device: str, host: str, ld: int, at_ns: float) -> "FabricManager":
        """Bind logical device ``ld`` of the MLD ``device`` to ``host`` (which reaches the device and
        holds none of its LDs then), issued at ``at_ns``."""
        if isinstance(ld, bool) or not isinstance(ld, int) or not 0 <= ld < 16:
            raise ParamError(f"fm[{len(self.steps)}].ld = {ld!r} is out of range; allowed: 0 to 15")
        return self._step("bind", device, host, None, None, at_ns, ld=ld)

    def unbind_ld(self, device: str, host: str, at_ns: float) -> "FabricManager":
        """Unbind the LD ``host`` holds on the MLD ``device``, issued at ``at_ns``."""
        return self._step("unbind", device, host, None, None, at_ns)

    def _step(self, op: str, device: str, host: str, start, size, at_ns, ld: Optional[int] = None) -> "FabricManager":
        where = f"fm[{len(self.steps)}]"
        if at_ns is None and op in ("bind", "unbind"):
            raise ParamError(f"fm.{op}_ld: at_ns is missing; allowed: a time from 0 ns on")
        if at_ns is not None and (isinstance(at_ns, bool) or not isinstance(at_ns, (int, float)) or at_ns < 0):
            raise ParamError(f"{where}.at_ns = {at_ns!r} is not allowed; allowed: a time from 0 ns on")
        s = n = None
        if op in ("add", "release"):
            s = 0 if start == 0 else parse_size(start, f"{where}.start")
            n = parse_size(size, f"{where}.size")
            if s % 64 or n % 64 or n == 0:
                raise ParamError(f"{where}: start {s} and size {n} are not allowed; allowed: whole 64-byte lines")
        issued = None if at_ns is None else float(at_ns)
        effective = 0.0 if issued is None else issued + self.command_ns + self.accept_ns
        self.steps.append(dict(op=op, device=device, host=host, start=s, bytes=n, ld=ld, issued_ns=issued,
                               device_ns=None if issued is None else issued + self.command_ns,
                               effective_ns=effective))
        return self

    def commands(self, system: Any) -> List[Dict[str, Any]]:
        """The steps as the core takes them, checked against ``system`` and against each other."""
        graph = getattr(system, "graph", None)
        if graph is None:
            raise ParamError(f"fm: {system.name} is not a topology; dynamic capacity needs a topology file "
                             "with a Type-3 device of device.dynamic_capacity = 1")
        dcds = sorted(n for n, c in graph.components.items()
                      if c.type == "type3" and c.values.get("device.dynamic_capacity") == 1)
        mlds = sorted(n for n, c in graph.components.items()
                      if c.type == "type3" and c.group("device").logical_devices > 1)
        hosts = sorted(n for n, c in graph.components.items() if c.type == "host")
        held: Dict[Tuple[str, str], List[Tuple[int, int]]] = {}
        order = sorted(range(len(self.steps)), key=lambda i: self.steps[i]["effective_ns"])
        for i in order:
            st, where = self.steps[i], f"fm[{i}]"
            if st["op"] in ("bind", "unbind"):  # the order of bindings is checked by the core, before the run
                if st["device"] not in mlds:
                    raise ParamError(f"{where}.device = {st['device']!r} is not a multi-logical device; "
                                     f"allowed: {', '.join(mlds) or 'none (set device.logical_devices > 1)'}")
                if st["host"] not in hosts:
                    raise ParamError(f"{where}.host = {st['host']!r} is not a host; allowed: {', '.join(hosts)}")
                continue
            if st["device"] not in dcds:
                raise ParamError(f"{where}.device = {st['device']!r} is not a device with dynamic capacity; "
                                 f"allowed: {', '.join(dcds) or 'none (set device.dynamic_capacity = 1)'}")
            if st["host"] not in hosts:
                raise ParamError(f"{where}.host = {st['host']!r} is not a host; allowed: {', '.join(hosts)}")
            ext = held.setdefault((st["device"], st["host"]), [])
            a, b = st["start"], st["start"] + st["bytes"]
            if st["op"] == "add":
                clash = next((e for e in ext if a < e[1] and e[0] < b), None)
                if clash:
                    raise ParamError(f"{where}: {st['host']}'s extent [{a:#x}, {b:#x}) on {st['device']} overlaps "
                                     f"[{clash[0]:#x}, {clash[1]:#x}), which it holds then; allowed: capacity not yet added")
                ext.append((a, b))
            else:
                e = next((e for e in ext if e[0] <= a and b <= e[1]), None)
                if e is None:
                    raise ParamError(f"{where}: {st['host']} releases [{a:#x}, {b:#x}) on {st['device']}, which is "
                                     "not within one extent it holds then; allowed: capacity added before")
                ext.remove(e)
                ext += [x for x in ((e[0], a), (b, e[1])) if x[0] < x[1]]
        return [dict(at_ns=st["effective_ns"], notice_ns=st["device_ns"] or 0.0, op=st["op"], device=st["device"],
                     host=st["host"],
                     **({"ld": st["ld"]} if st["op"] == "bind" else {}),
                     **({"start": st["start"], "bytes": st["bytes"]} if st["op"] in ("add", "release") else {}))
                for st in self.steps]

    def events(self) -> pd.DataFrame:
        """One row per step: what, and when it was issued, reached the device and took effect (ns)."""
        return pd.DataFrame(self.steps, columns=["op", "device", "host", "start", "bytes", "ld", "issued_ns",
                                                 "device_ns", "effective_ns"])


__all__ = ["FabricManager"]
