"""What Linux's CXL drivers built, as tables: the JSON `cxl list` (cxl-cli) prints inside the guest,
human-readable (`-u`) or not, parsed into memdevs, ports and decoders.

`cxl list` nests what it lists under its parent (``"memdevs:port1"``, ``"decoders:root0"``, ``"root
decoders"``, ``"ports:port1"``...) and the nesting depends on which objects were asked for; the
parser walks any of it and keeps each object's parent. Sizes and addresses become bytes: ``-u`` prints
``"512.00 MiB (536.87 MB)"`` and ``"0x390000000"``, which are exact for the 256 MiB multiples CXL
decoders use; without ``-u`` they are integers already.
"""
from __future__ import annotations

import json
import re
import struct
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pandas as pd

_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE_KEYS = ("size", "resource", "pmem_size", "ram_size", "max_available_extent", "dpa_size", "dpa_resource")
_PRINTK = re.compile(r"^\[\s*\d+\.\d+\]")


def to_bytes(value: Any) -> Optional[int]:
    """An integer, a hex string or cxl-cli's human size as bytes."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return int(text, 16)
    if re.fullmatch(r"\d+", text):
        return int(text)
    m = re.match(r"([\d.]+) (B|KiB|MiB|GiB|TiB)\b", text)
    if not m:
        raise ValueError(f"cxl list size {value!r} is not a size; allowed: an integer, 0x..., or 'N.NN MiB (...)'")
    return round(float(m.group(1)) * _UNITS[m.group(2)])


def listings(console: str) -> List[Any]:
    """Every JSON document `cxl list` printed on a console, in order; kernel messages among its lines
    are dropped."""
    lines = [ln.rstrip("\r") for ln in console.splitlines() if not _PRINTK.match(ln)]
    out, start = [], None
    for i, ln in enumerate(lines):
        if start is None and ln in ("[", "{"):
            start = i
        elif start is not None and ln in ("]", "}") and ln == {"[": "]", "{": "}"}[lines[start]]:
            out.append(json.loads("\n".join(lines[start:i + 1])))
            start = None
    return out


def _walk(node: Any, parent: Optional[str], key: str) -> Iterator[Tuple[Dict[str, Any], Optional[str], str]]:
    if isinstance(node, list):
        for v in node:
            yield from _walk(v, parent, key)
    elif isinstance(node, dict):
        # With -E an endpoint holds its memdev as an object under "memdev": named by its own key, not that.
        name = next((node[k] for k in ("memdev", "decoder", "region", "port", "endpoint", "bus")
                     if isinstance(node.get(k), str)), None)
        if name is not None:
            yield node, parent, key
        for k, v in node.items():
            if isinstance(v, (list, dict)):
                yield from _walk(v, name if name is not None else parent, k)


def tables(listing: Any) -> Dict[str, pd.DataFrame]:
    """memdevs (memdev, parent, host, pmem_bytes, ram_bytes, serial), ports (port, parent, host, depth)
    decoders (decoder, level: root/port/endpoint, parent, resource, size, interleave_ways,
    interleave_granularity, nr_targets, mode: an endpoint's ram/pmem, region: the region it belongs
    to) and regions (region, parent, type, resource, size,
    interleave_ways, interleave_granularity, decode_state) of one `cxl list` document."""
    mem, ports, dec, regions = [], [], [], []
    for obj, parent, key in _walk(listing, None, ""):
        if "region" in obj and "decoder" not in obj:
            regions.append(dict(region=obj["region"], parent=parent, type=obj.get("type"),
                                resource=to_bytes(obj.get("resource")), size=to_bytes(obj.get("size")),
                                interleave_ways=obj.get("interleave_ways"),
                                interleave_granularity=obj.get("interleave_granularity"),
                                decode_state=obj.get("decode_state")))
        elif isinstance(obj.get("memdev"), str):
            mem.append(dict(memdev=obj["memdev"], parent=parent, host=obj.get("host"),
                            pmem_bytes=to_bytes(obj.get("pmem_size")) or 0, ram_bytes=to_bytes(obj.get("ram_size")) or 0,
                            serial=to_bytes(obj.get("serial"))))
        elif "decoder" in obj:
            level = ("root" if key == "root decoders" or key.startswith("decoders:root")
                     else "endpoint" if key.startswith("decoders:endpoint") else "port")
            dec.append(dict(decoder=obj["decoder"], level=level, parent=parent,
                            resource=to_bytes(obj.get("resource")), size=to_bytes(obj.get("size")),
                            interleave_ways=obj.get("interleave_ways"),
                            interleave_granularity=obj.get("interleave_granularity"),
                            nr_targets=obj.get("nr_targets"), mode=obj.get("mode"), region=obj.get("region")))
        elif "port" in obj or "endpoint" in obj:
            ports.append(dict(port=obj.get("port", obj.get("endpoint")), parent=parent, host=obj.get("host"),
                              depth=obj.get("depth")))
    cols = {"memdevs": ["memdev", "parent", "host", "pmem_bytes", "ram_bytes", "serial"],
            "ports": ["port", "parent", "host", "depth"],
            "decoders": ["decoder", "level", "parent", "resource", "size", "interleave_ways",
                         "interleave_granularity", "nr_targets", "mode", "region"],
            "regions": ["region", "parent", "type", "resource", "size", "interleave_ways",
                        "interleave_granularity", "decode_state"]}
    return {name: pd.DataFrame(rows, columns=cols[name]).sort_values(cols[name][0], ignore_index=True)
            for name, rows in (("memdevs", mem), ("ports", ports), ("decoders", dec), ("regions", regions))}


def dax_devices(console: str) -> pd.DataFrame:
    """The dax devices `daxctl list` printed on a console (chardev, size, target_node, mode: system-ram
    once kmem has the memory, devdax otherwise, online_memblocks, total_memblocks); daxctl prints one
    device as an object and several as a list."""
    cols = ["chardev", "size", "target_node", "mode", "online_memblocks", "total_memblocks"]
    rows = []
    for doc in listings(console):
        for d in doc if isinstance(doc, list) else [doc]:
            if isinstance(d, dict) and isinstance(d.get("chardev"), str):
                rows.append({**{k: d.get(k) for k in cols}, "size": to_bytes(d.get("size"))})
    return pd.DataFrame(rows, columns=cols)


_CDAT_DUMP = re.compile(r"^cdat-begin (\S+)\n(.*?)^cdat-end", re.M | re.S)
#: DSLBIS data types (ACPI HMAT's): what each entry gives, and the unit after the entry base.
_DSLBIS = {0: ("access_latency", "ps"), 1: ("read_latency", "ps"), 2: ("write_latency", "ps"),
           3: ("access_bandwidth", "MB/s"), 4: ("read_bandwidth", "MB/s"), 5: ("write_bandwidth", "MB/s")}


def cdat_dumps(console: str) -> Dict[str, bytes]:
    """The CDAT each endpoint's port read from its device (`/sys/bus/cxl/devices/endpointN/CDAT`, printed
    by CDAT_DUMP as `od -An -tx1` between cdat-begin/cdat-end lines), by sysfs path."""
    out = {}
    for m in _CDAT_DUMP.finditer(console.replace("\r", "")):
        hexes = [w for ln in m.group(2).splitlines() if not _PRINTK.match(ln) for w in ln.split()]
        out[m.group(1)] = bytes(int(w, 16) for w in hexes)
    return out


_ACPI_DUMP = re.compile(r"^acpi-begin (\w+)\n(.*?)^acpi-end", re.M | re.S)


def acpi_dumps(console: str) -> Dict[str, bytes]:
    """The ACPI tables fs.ACPI_DUMP printed (header included), by signature; the last dump of each wins."""
    out = {}
    for m in _ACPI_DUMP.finditer(console.replace("\r", "")):
        hexes = [w for ln in m.group(2).splitlines() if not _PRINTK.match(ln) for w in ln.split()]
        out[m.group(1)] = bytes(int(w, 16) for w in hexes)
    return out


def dslbis(raw: bytes) -> pd.DataFrame:
    """The latency and bandwidth entries (DSLBIS, UEFI CDAT 1.03) of a CDAT: handle, kind, value, unit."""
    rows, off = [], 16
    while off + 4 <= len(raw):
        typ, _, ln = struct.unpack_from("<BBH", raw, off)
        if ln < 4:
            raise ValueError(f"CDAT structure at byte {off} has length {ln}; allowed: 4 or more")
        if typ == 1 and ln >= 24:
            handle, _, dtype, _, unit, e0 = struct.unpack_from("<BBBBQH", raw, off + 4)
            kind, u = _DSLBIS.get(dtype, (f"type{dtype}", ""))
            rows.append(dict(handle=handle, kind=kind, value=unit * e0, unit=u))
        off += ln
    return pd.DataFrame(rows, columns=["handle", "kind", "value", "unit"])
