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

import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

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
    from .components import load_system

    system = load_system(memory)  # a preset, a preset file or a topology file
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


# ---------------------------------------------------------------------------------------------
# A region Linux creates (fs.region_run) gets its node's access0 figures from Linux's CXL drivers,
# not from HMAT: drivers/cxl/core/cdat.c and port.c add, per endpoint, the device's CDAT (DSLBIS),
# the link's flit time (cxl_pci_get_latency) and the host bridge's Generic Port (SRAT type 6, HMAT
# from the CPUs' domain to the port's; drivers/acpi/numa/hmat.c), and take the smallest bandwidth
# on the way, summed over the root ports below the bridge (cxl_region_shared_upstream_bandwidth_
# update). The board chooses each bridge's generic port (generic_port) so that what Linux computes
# equals what the firmware-table path's HMAT gives the same window (firmware_access). All in
# integers as Linux keeps them: ns and MB/s. Pure Python (the board runs in gem5, without the core).

U32_MAX = (1 << 32) - 1
# PCIe link speeds by the Link Status register's code (1: 2.5 GT/s ... 6: 64 GT/s), raw Mb/s per lane
# (pcie_dev_speed_mbps, for the CXL link's latency and the region's bandwidth; the per-endpoint
# minimum with pcie_bandwidth_available's encoded rate is replaced by the region's, so it never shows).
PCIE_RAW_MBPS = {1: 2500, 2: 5000, 3: 8000, 4: 16000, 5: 32000, 6: 64000}
_FIELDS = ("read_latency", "write_latency", "read_bandwidth", "write_bandwidth")


@dataclass(frozen=True)
class Access:
    """Linux's struct access_coordinate: latencies in ns, bandwidths in MB/s; 0 is 'not given'."""
    read_latency: int = 0
    write_latency: int = 0
    read_bandwidth: int = 0
    write_bandwidth: int = 0

    def sysfs(self) -> Dict[str, int]:
        """As node<N>/access0/initiators/ names them."""
        return {k: getattr(self, k) for k in _FIELDS}


@dataclass(frozen=True)
class Port:
    """A root port of a host bridge and the Type-3 device below it, as Linux reads them: the
    device's CDAT figures (decoded, `Access`), and the link's speed code and width as both ends'
    Link Status report them. flit256: Link Status 2's flit mode bit (our ports leave it clear, so
    Linux takes 68-byte flits whatever the link runs)."""
    cdat: Access
    gen: int
    width: int
    flit256: bool = False


def normalize(entry: int, base: int, latency: bool) -> int:
    """hmat_normalize (revision 2) and cdat_normalize: entry x base unit, latencies from ps to ns
    rounded up; 0 and 0xFFFF are 'not given', as is a product past 32 bits."""
    if entry in (0, 0xFFFF) or base > U32_MAX // entry:
        return 0
    v = entry * base
    return -(-v // 1000) if latency else v


def base_unit(values: Sequence[float]) -> int:
    """The base unit ext/cxlcore/platform/acpi.cpp writes (baseUnit): the smallest power of ten
    that brings every value to 65534 or less."""
    mx = max([0.0] + list(values))
    base = 1
    while mx / float(base) > 65534.0:
        base *= 10
    return base


def _llround(x: float) -> int:
    return int(math.floor(x + 0.5))


def encode(values: Sequence[float]) -> Tuple[int, List[int]]:
    """(base unit, entries) as the core encodes a matrix of ps or MB/s (HMAT: per data type over all
    its pairs; CDAT: one value each)."""
    base = base_unit(values)
    return base, [_llround(v / float(base)) for v in values]


def firmware_access(numa: Numa) -> List[Access]:
    """What Linux reads from the firmware-table path's HMAT for each node (board.acpi_tables without
    linux_regions: initiator 0 to every node), as the core encodes it and hmat.c decodes it."""
    cols = {"read_latency": [n.read_latency_ns * 1000 for n in numa.nodes],
            "write_latency": [n.write_latency_ns * 1000 for n in numa.nodes],
            "read_bandwidth": [n.read_bandwidth_gbps * 1000 for n in numa.nodes],
            "write_bandwidth": [n.write_bandwidth_gbps * 1000 for n in numa.nodes]}
    dec = {}
    for k, vals in cols.items():
        base, entries = encode(vals)
        dec[k] = [normalize(e, base, k.endswith("latency")) for e in entries]
    return [Access(**{k: dec[k][i] for k in _FIELDS}) for i in range(len(numa.nodes))]


def device_cdat(device, media) -> Access:
    """A Type-3 device's CDAT figures as Linux decodes them: acpi::deviceCdat's read latency and
    peak bandwidth each way, encoded as ext/cxlcore/platform/acpi.cpp's cdat() does (one base
    unit per DSLBIS entry); no write latency entry (0)."""
    burst = media.burst_length * 1000.0 / media.data_rate_mts
    lat = (device.req_latency_ns + device.resp_latency_ns + media.frontend_latency_ns + media.tRCD_ns
           + media.tCL_ns + burst + media.backend_latency_ns)
    peak = media.channels * media.bus_bytes * media.data_rate_mts * 1e6 / 1e9
    out = {}
    for k, v, is_lat in (("read_latency", lat * 1000.0, True), ("read_bandwidth", peak * 1000.0, False),
                         ("write_bandwidth", peak * 1000.0, False)):
        base, (entry,) = encode([v])
        out[k] = normalize(entry, base, is_lat)
    return Access(**out)


def window_ports(system) -> List[Port]:
    """The root ports of a cxl-type3 System as board.cxl_io_devices builds them: port j's device
    and link from the system's own (cxl.ports[j] where a topology gives each its own)."""
    cxl = system.cxl
    out = []
    for j in range(cxl.bridge.root_ports):
        src = cxl.ports[j] if getattr(cxl, "ports", None) else cxl
        out.append(Port(device_cdat(src.device, src.media), int(src.link.gen), int(src.link.lanes)))
    return out


def raw_mbytes(p: Port) -> int:
    """The link's raw MB/s (cxl_pci_get_bandwidth)."""
    return PCIE_RAW_MBPS[p.gen] * p.width // 8


def link_latency_ps(p: Port) -> int:
    """cxl_pci_get_latency of the root port: flit bytes over the link's raw MB/s, in ps."""
    return (256 if p.flit256 else 68) * 1_000_000 // raw_mbytes(p)


def link_latency_ns(p: Port) -> int:
    """As add_latency adds it: rounded up to ns."""
    return -(-link_latency_ps(p) // 1000)


def _min_bw(a: int, b: int, keep: int) -> int:
    """__cxl_coordinates_combine's bandwidth: the smaller when both are given, else unchanged."""
    return min(a, b) if a and b else keep


def linux_region_access(ports: Sequence[Port], gp: Access) -> Optional[Access]:
    """What Linux 6.12 gives a region's node (access0) over `ports` (one endpoint each, every one
    below one host bridge whose generic port's HMAT figures, decoded, are `gp`); None where it gives
    nothing (a generic port figure missing: coordinates_valid). Per endpoint
    (cxl_endpoint_get_perf_coordinates, cxl_port_perf_data_calculate): latency = CDAT + the root
    port's link, rounded up to ns (add_latency) + generic port; bandwidth = min(CDAT, generic port,
    pcie_bandwidth_available / 8). Region (cxl_region_perf_data_calculate): the largest latency;
    bandwidth (cxl_region_shared_upstream_bandwidth_update, once every endpoint is attached, in
    place of the endpoints' sum) = min(sum over endpoints of min(CDAT, the endpoint's raw link MB/s:
    cxl_pci_get_bandwidth), generic port). Where that update gives up (an asymmetric hierarchy, a
    PCI read failing) Linux keeps the sum of the per-endpoint figures, which this does not model."""
    if not all(getattr(gp, k) for k in _FIELDS):
        return None
    rl = wl = 0
    rsum = wsum = 0
    for p in ports:
        link_ns = link_latency_ns(p)
        rl = max(rl, p.cdat.read_latency + link_ns + gp.read_latency)
        wl = max(wl, p.cdat.write_latency + link_ns + gp.write_latency)
        raw = raw_mbytes(p)
        rsum += _min_bw(raw, p.cdat.read_bandwidth, 0)
        wsum += _min_bw(raw, p.cdat.write_bandwidth, 0)
    # cxl_hb_gather_bandwidth: the sum below the bridge against the port's.
    return Access(rl, wl, _min_bw(rsum, gp.read_bandwidth, rsum), _min_bw(wsum, gp.write_bandwidth, wsum))


def generic_port(target: Access, ports: Sequence[Port]) -> Access:
    """The generic port figures (ns, MB/s) for which linux_region_access(ports, gp) == target: the
    latencies less the CDAT's and the link's; the bandwidths the target's, which the sums over the
    ports then leave as they are (warns where the links or the devices' CDAT allow less)."""
    rl = target.read_latency - max(p.cdat.read_latency + link_latency_ns(p) for p in ports)
    wl = target.write_latency - max(p.cdat.write_latency + link_latency_ns(p) for p in ports)
    gp = Access(max(1, rl), max(1, wl), target.read_bandwidth, target.write_bandwidth)
    got = linux_region_access(ports, gp)
    if got != target:
        warnings.warn(f"Linux will compute {got} for a region over these ports, not the model's {target}: "
                      "the device's CDAT and the links alone already exceed its latency or fall short of its "
                      "bandwidth")
    return gp
