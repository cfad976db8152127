"""The CXL-NIC in gem5 (gem5_configs/cxl_nic_se.py): its setup from a NIC
system, a run through a gem5 binary built with this repository as EXTRAS, and
the standalone engine's run of the same operations.

The gem5 NIC is the core's atomic engine (devices/cxl_nic.cc) on a gem5
classic cache. Its latencies are the standalone engine's own, read off a
directed run of the same system (:func:`simcxl.workloads.coherent.script`):

- the NIC's link (devices/cxl_cache_link.hh): a device request's link-up and
  home-agent stages, a response's link-down stage, and the snoop stage of a
  host store to a line the device holds (the device drops its copy) or of a
  host load of a line it holds modified (it answers with data; the device
  cache's own lookup is gem5's), and when a snoop reaches the device (the
  link down and the device's snoop latency);
- the host's uncore (the same object between each core's L2 and the bus):
  the home-agent stage of a host access that leaves the core.

Each less the cycles gem5's own caches and bus spend on the same path, so a
message costs in gem5 what it costs in the standalone engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Union

from .engine import Gem5RunError, build_guest, repository
from ..workloads.nic import load
from ..config.params import ParamError, System

KERNELS = ("rand", "central", "stride1")
OPS = ("add", "cas")
# gem5's own cycles on a host access that leaves the core's caches (3 GHz
# cores, setup()'s L1 and L2 latencies, SystemXBar): L1 and L2 tag lookups
# and responses and the bus's forward and response latencies.
HOST_PATH_CYCLES = 4 + 14 + 3 + 4 + 2 + 14 + 4
# ... and on a device request the host's caches answer: the bus's forward and
# response latencies and a host L2's snoop lookup (3 GHz cycles), and the
# device cache's response (one 1 GHz cycle).
DEVICE_PATH_NS = (3 + 4 + 14 + 2) / 3.0 + 1.0
HOST = {"clock": "3GHz", "clock_ghz": 3.0, "l1d": "32KiB", "l2": "1MiB", "l1_cycles": 4, "l2_cycles": 14}


def path_latencies(system: Union[str, System]) -> Dict[str, float]:
    """The standalone engine's latencies of the messages a NIC operation
    crosses (ns), from a directed run of the system."""
    from ..workloads.coherent import script
    s = load(system)
    steps = [{"agent": -1, "op": "store", "target": "host", "offset": 0},  # the host holds the line modified
             {"agent": 0, "op": "load", "target": "host", "offset": 0},   # the device reads it
             {"agent": -1, "op": "store", "target": "host", "offset": 0},  # the host takes it back: SnpInv
             {"agent": 0, "op": "store", "target": "host", "offset": 0},  # the device owns it
             {"agent": -1, "op": "load", "target": "host", "offset": 0}]   # the host reads it: SnpData
    df, _ = script(s, steps)
    read, inv, snpdata = df.iloc[1], df.iloc[2], df.iloc[4]
    return {"device_cache_ns": float(read["stage_cache_ns"]),
            "request_ns": float(read["stage_link_up_ns"] + read["stage_host_uncore_ns"]),
            "response_ns": float(read["stage_link_down_ns"]),
            "snoop_ns": float(inv["stage_snoop_ns"]),
            "snoop_data_ns": float(snpdata["stage_snoop_ns"]),
            "host_uncore_ns": float(inv["stage_host_uncore_ns"])}


def setup(system: Union[str, System], nic: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The gem5 script's setup (--setup) for a NIC system with `nic` overrides."""
    s = load(system, nic)
    n = s.nic
    if n.descriptors_per_line > 2 or n.completions_per_line > 4:
        raise ParamError(f"nic.descriptors_per_line = {n.descriptors_per_line} and nic.completions_per_line = "
                         f"{n.completions_per_line}: the gem5 NIC's rings hold 32 B descriptors and 16 B "
                         "completions; allowed: descriptors_per_line 1 to 2, completions_per_line 1 to 4")
    if n.network:
        raise ParamError("nic.network = 1 is not allowed with the gem5 NIC yet; allowed: 0")
    lat = path_latencies(s)
    cache, dma = s.devices[0].cache, s.devices[0].dma
    host = dict(HOST)
    host["uncore_ns"] = round(max(0.0, lat["host_uncore_ns"] - HOST_PATH_CYCLES / host["clock_ghz"]), 3)
    return {"system": s.name,
            "nic": {f"nic_{k}": v for k, v in n.to_dict().items()},
            "cache": {"bytes": cache.bytes, "assoc": cache.assoc, "latency_cycles": max(1, round(cache.latency_ns)),
                      "mshrs": cache.mshrs},
            "link": {"request_ns": round(max(0.0, lat["request_ns"] - DEVICE_PATH_NS), 3), "response_ns": round(lat["response_ns"], 3),
                     "snoop_ns": round(lat["snoop_ns"], 3),
                     "snoop_data_ns": round(max(0.0, lat["snoop_data_ns"] - cache.latency_ns), 3),
                     "snoop_arrival_ns": round(lat["response_ns"] + cache.snoop_latency_ns, 3)},
            # The PCIe NIC: its DMAs cross the same link; the driver's doorbell and the engine's step
            # before each DMA are the DMA engine's parameters.
            "pcie": {"request_ns": round(max(0.0, lat["request_ns"] - DEVICE_PATH_NS), 3),
                     "response_ns": round(lat["response_ns"], 3), "mmio_ns": dma.setup_ns,
                     "engine_ns": dma.engine_latency_ns, "engines": dma.engines},
            "host": host, "standalone_paths_ns": lat}


def run(system: Union[str, System], nic: Optional[Dict[str, Any]] = None, threads: int = 1,
        ops: int = 200, kernel: str = "rand", op: str = "add", host_ops: int = 0, words: int = 4096,
        cpu: str = "timing", mechanism: str = "cxl-nic", gem5: Optional[str] = None, outdir: Optional[Path] = None, timeout: float = 1800) -> Dict[str, Any]:
    """One gem5 run: per-thread mean operation latency, thread 0's check of
    the results, the NIC's counters and the setup used."""
    if kernel not in KERNELS:
        raise ParamError(f"kernel = {kernel!r} is not allowed with the gem5 NIC; allowed: {', '.join(KERNELS)}")
    if op not in OPS:
        raise ParamError(f"op = {op!r} is not allowed; allowed: {', '.join(OPS)}")
    if cpu not in ("timing", "o3"):
        raise ParamError(f"cpu = {cpu!r} is not allowed; allowed: timing, o3")
    if mechanism not in ("cxl-nic", "pcie-nic"):
        raise ParamError(f"mechanism = {mechanism!r} is not allowed with the gem5 NIC; allowed: cxl-nic, pcie-nic")
    binary = gem5 or os.environ.get("GEM5")
    if not binary or not Path(binary).is_file():
        raise ParamError("the gem5 NIC needs GEM5 = a gem5 binary built with this repository as EXTRAS")
    cfg = setup(system, nic)
    repo = repository()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(outdir) if outdir else Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        guest = build_guest(out / "guest", repo / "benchmarks" / "guest", "nic_rao")
        (out / "setup.json").write_text(json.dumps(cfg, indent=1))
        r = subprocess.run([binary, "-d", str(out / "m5out"), str(repo / "gem5_configs" / "cxl_nic_se.py"),
                            "--binary", str(guest), "--setup", str(out / "setup.json"), "--threads", str(threads),
                            "--ops", str(ops), "--kernel", kernel, "--op", op, "--host-ops", str(host_ops),
                            "--words", str(words), "--cpu", cpu, "--mechanism", mechanism], capture_output=True, text=True, timeout=timeout)
        if r.returncode:
            raise Gem5RunError(f"gem5 NIC run failed ({r.returncode}):\n{r.stderr[-3000:]}")
        result = json.loads(r.stdout.strip().splitlines()[-1])
    result["setup"] = cfg
    result["latency_ns"] = sum(t["latency_ns"] * t["ops"] for t in result["threads"]) / \
        sum(t["ops"] for t in result["threads"])
    # Operations per second over all threads, each thread's from its first post to its last completion.
    result["ops_per_second"] = sum(t["ops"] / (t["elapsed_ns"] * 1e-9) for t in result["threads"])
    return result


def standalone(system: Union[str, System], nic: Optional[Dict[str, Any]] = None, threads: int = 1,
               ops: int = 200, kernel: str = "rand", words: int = 4096, mechanism: str = "cxl-nic") -> Dict[str, Any]:
    """The standalone engine's run of the same FETCH_ADD stream shape (the
    kernel's ADD; its host threads poll every nic.host_poll_ns)."""
    from ..workloads.nic import rao
    df = rao(load(system, nic), kernels=[kernel], ops=["add"], mechanisms=[mechanism], threads=threads,
             iters=ops, elements=words)
    return df.iloc[0].to_dict()
