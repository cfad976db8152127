"""What a full-system guest is told about its memories: the NUMA description
behind the board's ACPI SRAT, SLIT and HMAT (simcxl.gem5.board), computed by
the standalone engine for the presets the board is built from.

Node 0 is the local DRAM with the CPUs; node 1, 2, ... are CPU-less CXL
windows. For each node:

- read latency: the mean load-to-use latency of the memory accesses of an
  lmbench chase whose working set (1 GiB) is far beyond the LLC
  (``memory_latency_ns_mean``: translation and cache hits excluded), which is
  what HMAT's "access latency of the memory" means;
- write latency: the same figure (the engine times loads; a store to a line
  the host owns completes in its cache, and ACPI asks for the memory's own);
- read and write bandwidth: the traffic workload, closed loop, all the host's
  cores (at most 16), reads only and writes only (non-temporal).

SLIT distances follow the Linux convention that 10 is a node's distance to
itself and remote nodes scale with latency: round(10 x latency / node 0's),
at least 11. Every figure is a simulation of the named presets.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import List, Sequence

from ..config.params import ParamError


@dataclass
class Node:
    name: str                 # the preset it was computed from
    read_latency_ns: float
    write_latency_ns: float
    read_bandwidth_gbps: float
    write_bandwidth_gbps: float


@dataclass
class Numa:
    nodes: List[Node]
    distances: List[List[int]] = field(default_factory=list)
    source: str = ""

    def to_dict(self) -> dict:
        return {"nodes": [asdict(n) for n in self.nodes], "distances": self.distances, "source": self.source}

    @classmethod
    def from_dict(cls, d: dict) -> "Numa":
        try:
            nodes = [Node(**n) for n in d["nodes"]]
            numa = cls(nodes=nodes, distances=[list(map(int, r)) for r in d.get("distances") or []],
                       source=str(d.get("source", "")))
        except (KeyError, TypeError, ValueError) as e:
            raise ParamError(f"numa description: {e}; allowed: nodes (name, read/write latency_ns, "
                             "read/write bandwidth_gbps) and distances") from None
        if not numa.distances:
            numa.distances = distances([n.read_latency_ns for n in nodes])
        check_distances(numa.distances, len(nodes))
        for n in nodes:
            for k in ("read_latency_ns", "write_latency_ns", "read_bandwidth_gbps", "write_bandwidth_gbps"):
                v = getattr(n, k)
                if not (isinstance(v, (int, float)) and 0 < v < 1e9):
                    raise ParamError(f"numa.{n.name}.{k} = {v!r} is out of range; allowed: above 0")
        return numa


def distances(latencies: Sequence[float]) -> List[List[int]]:
    """SLIT distances from latencies: 10 on the diagonal, else
    max(11, round(10 x the farther node's latency / node 0's))."""
    base = latencies[0]
    n = len(latencies)
    return [[10 if i == j else min(254, max(11, round(10 * max(latencies[i], latencies[j]) / base)))
             for j in range(n)] for i in range(n)]


def check_distances(d: List[List[int]], n: int) -> None:
    if len(d) != n or any(len(r) != n for r in d):
        raise ParamError(f"numa.distances must be {n} x {n} (one row and column per node)")
    for i in range(n):
        for j in range(n):
            v = d[i][j]
            if i == j and v != 10:
                raise ParamError(f"numa.distances[{i}][{i}] = {v} is not allowed; a node's distance to itself is 10")
            if i != j and not 11 <= v <= 254:
                raise ParamError(f"numa.distances[{i}][{j}] = {v} is out of range; allowed: 11 to 254")


def measure(memory) -> Node:
    """One node's figures from the standalone engine (see the module's docstring)."""
    from ..engine import standalone as engine
    from ..config.presets import load

    system = load(memory)
    lat = float(engine.lmbench(system, working_sets=["1GiB"]).iloc[0]["memory_latency_ns_mean"])
    threads = min(16, system.host.cores)
    bw = {rf: float(engine.traffic(system, threads=threads, read_fraction=rf, requests=100000).iloc[0]["total_gbps"])
          for rf in (1.0, 0.0)}
    return Node(system.name, lat, lat, bw[1.0], bw[0.0])


def describe(local, windows: Sequence) -> Numa:
    """The NUMA description of a board with `local` DRAM (node 0) and one CXL
    node per entry of `windows` (presets or Systems)."""
    nodes = [measure(local)] + [measure(w) for w in windows]
    return Numa(nodes, distances([n.read_latency_ns for n in nodes]),
                source="simulation: simcxl standalone engine, " + ", ".join(n.name for n in nodes))
