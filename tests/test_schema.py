"""The C++ validation agrees with Python's: the same values accepted and rejected, with the same
messages, at the range boundaries, for the specifications' allowed values and for the rules between
fields. (That both sides have the same fields, defaults and ranges is by construction: the C++ lists
are generated from the dataclasses; tests/test_schema_generated.py.)"""

from dataclasses import fields

import pytest

from simcxl import _core
from simcxl.config.groups import GROUPS, HomeParams, NicParams
from simcxl.config.params import AccelDevice, CxlMemory, ParamError, RemoteMemory, System
from simcxl.topology import core_graph


# Each group where a default system's graph holds it (simcxl.topology.from_system names the components).
WHERE = {"HostParams": ("local-dram", "host"), "DramParams": ("local-dram", "local_dram"),
         "InterSocketParams": ("remote-numa", "remote"), "BridgeParams": ("cxl-type3", "cxl"),
         "SwitchParams": ("switch", "sw"),
         "LinkParams": ("cxl-type3", "cxl_link0"), "DeviceParams": ("cxl-type3", "cxl_dev0.device"),
         "DCacheParams": ("accel", "dev0.cache"), "HomeParams": ("accel", "home"), "AccelParams": ("accel", "dev0.accel"),
         "DmaParams": ("accel", "dev0.dma"), "NicParams": ("nic", "dev0.nic")}
# A bridge's root ports and interleave ways are its root_port connections in a graph: the core
# takes them as a number of ports, never as values.
DERIVED = {("BridgeParams", "root_ports"), ("BridgeParams", "interleave_ways")}


def default_system(kind):
    if kind in ("accel", "nic"):  # a host with one accelerator (or NIC), as an accelerator preset
        return System(name="t", kind="local-dram", home=HomeParams(), devices=[AccelDevice()], lone_device=True,
                      nic=NicParams() if kind == "nic" else None)
    return System(name="t", kind=kind, remote=RemoteMemory() if kind == "remote-numa" else None,
                  cxl=CxlMemory() if kind == "cxl-type3" else None)


def with_switch(d):
    """A CXL system's graph with a default switch (sw) between its root port and its device."""
    from simcxl.config.groups import SwitchParams
    d["components"]["sw"] = {"type": "switch", **SwitchParams().to_dict()}
    d["components"]["sw_link"] = dict(d["components"]["cxl_link0"])
    d["connections"] = [c for c in d["connections"] if c["from"] != "cxl.root_port[0]"] + [
        {"from": "cxl.root_port[0]", "to": "sw_link.up"}, {"from": "sw_link.down", "to": "sw.up"},
        {"from": "sw.dsp[0]", "to": "cxl_link0.up"}]
    return d


def core_system(kind, where, values):
    """A default system's graph with `values` set in the group at `where` (a bridge's derived
    root_ports / interleave_ways as that many root ports)."""
    d = with_switch(core_graph(default_system("cxl-type3"))) if kind == "switch" else core_graph(default_system(kind))
    comp, _, group = where.partition(".")
    ports = {values.pop(k) for k in ("root_ports", "interleave_ways") if k in values} if comp == "cxl" else set()
    target = d["components"][comp]
    (target[group] if group else target).update(values)
    if ports:
        n, = ports
        for i in range(1, n):
            d["components"][f"cxl_link{i}"] = d["components"]["cxl_link0"]
            d["components"][f"cxl_dev{i}"] = d["components"]["cxl_dev0"]
            d["connections"] += [{"from": f"cxl.root_port[{i}]", "to": f"cxl_link{i}.up"},
                                 {"from": f"cxl_link{i}.down", "to": f"cxl_dev{i}.up"}]
    return d


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_both_sides_reject_the_same_out_of_range_values(group):
    cls = GROUPS[group]
    kind, where = WHERE[group]
    for f in fields(cls):
        if (group, f.name) in DERIVED:
            continue
        for bad in (f.metadata["lo"] - 1, f.metadata["hi"] * 2 + 1):
            obj = cls()
            setattr(obj, f.name, int(bad) if f.type in ("int", int) else float(bad))
            with pytest.raises(ParamError, match=f"{where}.{f.name} = "):
                obj.validate(where)
            with pytest.raises(_core.ConfigError, match=f"{where}.{f.name} = .* allowed"):
                _core.validate(core_system(kind, where, {f.name: bad}))
        # The default itself is accepted by both.
        cls().validate(where)
        _core.validate(core_system(kind, where, {f.name: f.default}))


def candidates(lo, hi):
    """Every whole value in a small range; in a large one the edges and the
    powers of two with their neighbours, where allowed-value rules bite."""
    lo, hi = int(lo), int(hi)
    if hi - lo <= 1024:
        return range(lo, hi + 1)
    near = {lo, lo + 1, hi - 1, hi}
    for k in range(64):
        near |= {(1 << k) - 1, 1 << k, (1 << k) + 1, 3 << k}
    return sorted(v for v in near if lo <= v <= hi)


def verdicts(group, values):
    """What each side says of a group with `values` set: None (accepted) or the message."""
    cls = GROUPS[group]
    kind, where = WHERE[group]
    derived = [values[k] for k in ("root_ports", "interleave_ways") if (group, k) in DERIVED and k in values]
    if derived:  # a bridge with that many root ports
        values = {**values, "root_ports": derived[0], "interleave_ways": derived[0]}
    obj = cls()
    for k, v in values.items():
        setattr(obj, k, v)
    try:
        obj.validate(where)
        py = None
    except ParamError as e:
        py = str(e)
    try:
        _core.validate(core_system(kind, where, dict(values)))
        cpp = None
    except _core.ConfigError as e:
        cpp = str(e)
    return py, cpp


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_both_sides_accept_the_same_whole_values_and_say_the_same(group):
    for f in fields(GROUPS[group]):
        if f.type not in ("int", int):
            continue
        for v in candidates(f.metadata["lo"], f.metadata["hi"]):
            py, cpp = verdicts(group, {f.name: v})
            assert py == cpp, (f.name, v)


# Allowed values by the specifications, with the other fields set so that
# only the field itself decides: PCIe 5.0/6.0 rates and link widths, CXL
# flit sizes, CXL 2.0 HDM decoder interleave ways (1, 2, 4, 8, 16 and 3, 6,
# 12) and granularities (256 B to 16 KiB), PCIe Max_Read_Request_Size and
# Max_Payload_Size (128 B to 4 KiB, powers of two).
SAME = "the value under test"  # a field that must equal the one checked (root_ports = interleave_ways)
SPEC_VALUES = [
    ("LinkParams", "gen", {5, 6}, {"flit_bytes": 256}),
    ("LinkParams", "lanes", {1, 2, 4, 8, 16}, {}),
    ("LinkParams", "flit_bytes", {68, 256}, {}),
    ("BridgeParams", "interleave_ways", {1, 2, 3, 4, 6, 8, 12, 16}, {"root_ports": SAME}),
    ("BridgeParams", "interleave_bytes", {256 << k for k in range(7)}, {}),
    ("DmaParams", "max_read_request", {128 << k for k in range(6)}, {}),
    ("DmaParams", "max_payload", {128 << k for k in range(6)}, {}),
]


@pytest.mark.parametrize("group,name,allowed,others", SPEC_VALUES, ids=[f"{g}.{n}" for g, n, _, _ in SPEC_VALUES])
def test_allowed_value_lists_are_the_specifications(group, name, allowed, others):
    f = next(f for f in fields(GROUPS[group]) if f.name == name)
    listed = ", ".join(str(v) for v in sorted(allowed))
    near = {a + d for a in allowed for d in (-1, 0, 1)}
    for v in sorted(set(candidates(f.metadata["lo"], f.metadata["hi"])) | near):
        if not f.metadata["lo"] <= v <= f.metadata["hi"]:
            continue
        py, cpp = verdicts(group, {**{k: v if o is SAME else o for k, o in others.items()}, name: v})
        if v in allowed:
            assert py is None and cpp is None, (name, v, py, cpp)
        else:
            assert py == cpp and py.endswith(f".{name} = {v} is not allowed; allowed values: {listed}"), (v, py, cpp)


# Rules between fields, each with a value that breaks it and the nearest that keeps it.
CROSS = [
    ("LinkParams", {"gen": 6, "flit_bytes": 68}, {"gen": 6, "flit_bytes": 256},
     "cxl_link0.flit_bytes = 68 is not allowed with gen = 6; allowed values: 256"),
    ("LinkParams", {"flit_bytes": 68, "latency_optimized": 1}, {"flit_bytes": 256, "latency_optimized": 1},
     "cxl_link0.latency_optimized = 1 is not allowed with flit_bytes = 68; allowed values: 0"),
    ("DramParams", {"bus_bytes": 8, "burst_length": 16}, {"bus_bytes": 4, "burst_length": 16},
     "local_dram.bus_bytes x burst_length = 128 is not allowed; allowed: 64 (one cache line per burst)"),
    ("DramParams", {"interleave_bytes": 4096, "row_bytes": 2048}, {"interleave_bytes": 2048, "row_bytes": 2048},
     "local_dram.row_bytes = 2048 is not allowed; allowed: a power of two, at least interleave_bytes"),
    ("DramParams", {"write_low_watermark": 0.5, "write_high_watermark": 0.5},
     {"write_low_watermark": 0.49, "write_high_watermark": 0.5},
     "local_dram.write_low_watermark = 0.5 is not allowed; allowed: below write_high_watermark (0.5)"),
    ("DramParams", {"tREFI_ns": 300.0, "tRFC_ns": 300.0}, {"tREFI_ns": 301.0, "tRFC_ns": 300.0},
     "local_dram.tREFI_ns = 300 is not allowed; allowed: 0 (no refresh) or above tRFC_ns"),
    ("DeviceParams", {"devload_optimal": 0.6, "devload_moderate": 0.5}, {"devload_optimal": 0.5, "devload_moderate": 0.5},
     "cxl_dev0.device.devload_* thresholds must satisfy devload_optimal <= devload_moderate <= devload_severe"),
    ("DeviceParams", {"snoop_filter_entries": 1000, "snoop_filter_ways": 16},
     {"snoop_filter_entries": 1008, "snoop_filter_ways": 16},
     "cxl_dev0.device.snoop_filter_entries = 1000 is not allowed; allowed: a multiple of snoop_filter_ways (16)"),
    ("DeviceParams", {"shared": 1, "logical_devices": 2}, {"shared": 1, "logical_devices": 1},
     "cxl_dev0.device.shared = 1 is not allowed with logical_devices = 2; allowed values: 0"),
    ("HostParams", {"l2_bytes": 64 * 3 * 100, "l2_assoc": 16}, {"l2_bytes": 64 * 16 * 100, "l2_assoc": 16},
     "host.l2_bytes = 19200 must be a multiple of 64 x host.l2_assoc (16)"),
    ("HostParams", {"dtlb_entries": 66, "dtlb_assoc": 4}, {"dtlb_entries": 68, "dtlb_assoc": 4},
     "host.dtlb_entries = 66 must be a multiple of dtlb_assoc"),
    ("DCacheParams", {"bytes": 64 * 100, "assoc": 8}, {"bytes": 64 * 8 * 100, "assoc": 8},
     "dev0.cache.bytes = 6400 must be a multiple of 64 x assoc (8)"),
    ("AccelParams", {"type": 1, "hdm_db": 1}, {"type": 2, "hdm_db": 1},
     "dev0.accel.hdm_db = 1 is not allowed with type = 1; allowed values: 0"),
    ("NicParams", {"ring_entries": 8, "post_batch": 9}, {"ring_entries": 8, "post_batch": 8},
     "dev0.nic.post_batch = 9 is not allowed; allowed: 1 to ring_entries (8)"),
    ("AccelParams", {"bias_page_bytes": 4096, "memory_bytes": 4096 * 1000 + 64},
     {"bias_page_bytes": 4096, "memory_bytes": 4096 * 1000},
     "dev0.accel.memory_bytes = 4096064 must be a multiple of bias_page_bytes"),
    ("AccelParams", {"bias_page_bytes": 1 << 16, "memory_base": (1 << 44) + 4096},
     {"bias_page_bytes": 4096, "memory_base": (1 << 44) + 4096},
     "dev0.accel.memory_base = 17592186048512 must be a multiple of bias_page_bytes"),
    ("AccelParams", {"memory_base": (1 << 44) - 4096}, {"memory_base": 1 << 44},
     "dev0.accel.memory_base = 17592186040320 is not allowed; allowed: 0 (after the previous device's memory) or "
     "17592186044416 (16 TiB) to 4503599627370496"),
]


@pytest.mark.parametrize("group,bad,good,message", CROSS, ids=[m.split(" ")[0] for _, _, _, m in CROSS])
def test_both_sides_enforce_the_same_rules_between_fields(group, bad, good, message):
    assert verdicts(group, bad) == (message, message)
    assert verdicts(group, good) == (None, None)
