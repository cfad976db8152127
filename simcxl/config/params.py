"""A system: its host, its memories (one, or the windows of an address map) and its accelerators,
each made of the parameter groups of ``groups.py``; loaded, checked and written as one description.

What the schema generator reads besides the groups (``python -m simcxl.config.schema_gen``): which
groups a System holds (``System._SUBS``, ``DEVICE_GROUPS``) and the window range.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Optional, Tuple

from .groups import (AccelParams, BridgeParams, DCacheParams, DeviceParams, DmaParams, DramParams, HomeParams,
                     HostParams, InterSocketParams, LinkParams, NicParams)
from .param_group import ParamError, ParamGroup, check_name, did_you_mean, param, set_dotted, shown

@dataclass
class RemoteMemory:
    link: InterSocketParams = field(default_factory=InterSocketParams)
    dram: DramParams = field(default_factory=DramParams)


@dataclass
class RootPort:
    """One root port's link and Type-3 device, where the ports of a host bridge differ."""
    link: LinkParams = field(default_factory=LinkParams)
    device: DeviceParams = field(default_factory=DeviceParams)
    media: DramParams = field(default_factory=DramParams)


@dataclass
class CxlMemory:
    bridge: BridgeParams = field(default_factory=BridgeParams)
    link: LinkParams = field(default_factory=LinkParams)
    device: DeviceParams = field(default_factory=DeviceParams)
    media: DramParams = field(default_factory=DramParams)
    #: None: every root port has link, device and media; else one RootPort per root port
    #: (a topology whose devices below one host bridge differ).
    ports: Optional[List[RootPort]] = None

    def validate(self, prefix: str) -> None:
        for sub in ("bridge", "link", "device", "media"):
            getattr(self, sub).validate(f"{prefix}.{sub}")
        if self.ports is None:
            return
        if not isinstance(self.ports, list) or len(self.ports) != self.bridge.root_ports:
            raise ParamError(f"{prefix}.ports holds {len(self.ports) if isinstance(self.ports, list) else '?'} root "
                             f"ports; allowed: one per root port ({self.bridge.root_ports})")
        for i, rp in enumerate(self.ports):
            for sub in ("link", "device", "media"):
                getattr(rp, sub).validate(f"{prefix}.port{i}.{sub}")

    def groups(self, prefix: str) -> Dict[str, "ParamGroup"]:
        out = {f"{prefix}.{sub}": getattr(self, sub) for sub in ("bridge", "link", "device", "media")}
        for i, rp in enumerate(self.ports or []):
            out.update({f"{prefix}.port{i}.{sub}": getattr(rp, sub) for sub in ("link", "device", "media")})
        return out

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {sub: getattr(self, sub).to_dict() for sub in ("bridge", "link", "device", "media")}
        if self.ports is not None:
            d["ports"] = [{sub: getattr(rp, sub).to_dict() for sub in ("link", "device", "media")}
                          for rp in self.ports]
        return d


KINDS = ("local-dram", "remote-numa", "cxl-type3")
#: The kind of a system whose memories are windows of one host physical address map.
MAP_KIND = "address-map"
#: The physical address space a host decodes (52 bits, as CXL's HDM decoders).
PHYS_SPACE = 1 << 52
#: Where combine() places windows: one per TiB, each 1 TiB long.
WINDOW_STRIDE = 1 << 40
#: Names a window may not take: the system's own groups and keys.
_RESERVED = ("host", "local_dram", "seed", "name", "kind", "window", "map")


@dataclass
class WindowRange(ParamGroup):
    """Where a window sits in the host physical address map."""
    base: int = param(0, 0, PHYS_SPACE - 64, "B", "first host physical address of the window", wide=True)
    size: int = param(WINDOW_STRIDE, 64, PHYS_SPACE, "B", "bytes the window maps", wide=True)

    def _check(self, where: str) -> None:
        if self.base % 64 or self.size % 64:
            raise ParamError(f"{where}.base = {self.base}, {where}.size = {self.size} is not allowed; allowed: "
                             "multiples of 64 bytes")
        if self.base + self.size > PHYS_SPACE:
            raise ParamError(f"{where}.base + size = {self.base + self.size} is out of range; allowed: within the "
                             f"52-bit physical address space ({PHYS_SPACE})")


@dataclass
class Window:
    """One window of the host physical address map and the memory behind it:
    the host's local DRAM (``local_dram``, where the page tables live too),
    the remote socket, or a CXL host bridge with its root ports, links and
    Type-3 devices (a CFMWS window, decoded by an HDM decoder)."""
    name: str
    kind: str
    range: WindowRange = field(default_factory=WindowRange)
    remote: Optional[RemoteMemory] = None
    cxl: Optional[CxlMemory] = None

    @property
    def end(self) -> int:
        return self.range.base + self.range.size

    def shown_range(self) -> str:
        return f"{self.name} [0x{self.range.base:x}, 0x{self.end:x})"


#: Each accelerator's groups.
DEVICE_GROUPS = (("link", LinkParams), ("cache", DCacheParams), ("accel", AccelParams), ("dma", DmaParams), ("media", DramParams))
#: Where device memory starts by default, above every host address (16 TiB), and the top of the address space.
DEVICE_MEMORY_BASE = 1 << 44
ADDRESS_TOP = 1 << 52
#: Accelerators one host takes in all (copies included).
MAX_DEVICES = 16
_DEVICE_RESERVED = {g for g, _ in DEVICE_GROUPS} | {"local_dram", "home", "seed", "devices", "name", "host", "device", "nic"}


def check_device_name(name: Any, where: str) -> None:
    check_name(name, where, tuple(sorted(_DEVICE_RESERVED)))


@dataclass
class AccelDevice:
    """One accelerator description: its type and mode (``accel``), cache, DMA engine, link and
    (Type-2) memory media. ``accel.devices`` identical copies of it are built, one after another,
    each on a root port and link of its own."""
    name: str = "dev0"
    link: LinkParams = field(default_factory=LinkParams)
    cache: DCacheParams = field(default_factory=DCacheParams)
    accel: AccelParams = field(default_factory=AccelParams)
    dma: DmaParams = field(default_factory=DmaParams)
    media: DramParams = field(default_factory=DramParams)

    def groups(self, prefix: str) -> Dict[str, ParamGroup]:
        return {f"{prefix}{g}": getattr(self, g) for g, _ in DEVICE_GROUPS}

    def validate(self, prefix: str) -> None:
        for g, _ in DEVICE_GROUPS:
            getattr(self, g).validate(prefix + g)

    def kind(self) -> str:
        a = self.accel
        if a.type == 1:
            return "type-1"
        return "type-2 hdm-db" if a.hdm_db else "type-2 " + ("device bias" if a.device_bias else "host bias")

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, **{g: getattr(self, g).to_dict() for g, _ in DEVICE_GROUPS}}

    @classmethod
    def from_dict(cls, d: Dict[str, Any], name: str, prefix: str) -> "AccelDevice":
        return cls(name=name, **{g: t.from_dict(d.get(g, {}), prefix + g) for g, t in DEVICE_GROUPS})


def memory_windows(devices: List[AccelDevice]) -> List[Optional[tuple]]:
    """Each description's device memory, (base, end), or None for Type-1: at accel.memory_base,
    or (0) right after the previous description's, from 16 TiB, aligned to its bias page."""
    out: List[Optional[tuple]] = []
    nxt = DEVICE_MEMORY_BASE
    for d in devices:
        a = d.accel
        if a.type != 2:
            out.append(None)
            continue
        base = a.memory_base or -(-nxt // a.bias_page_bytes) * a.bias_page_bytes
        nxt = base + a.memory_bytes * a.devices
        out.append((base, nxt))
    return out


def read_device_list(lst: Any, where: str) -> List[AccelDevice]:
    """A preset's ``devices``: a list of named accelerators, their parameters named after them (``gpu.cache.mshrs``)."""
    if not isinstance(lst, list) or not lst:
        raise ParamError(f"{where}: devices must be a list of one or more devices (name, link, cache, accel, dma, media)")
    devs = []
    for i, x in enumerate(lst):
        at = f"devices[{i}]"
        if not isinstance(x, dict):
            raise ParamError(f"{where}: {at} must be a table (name, link, cache, accel, dma, media)")
        bad = sorted(set(x) - ({"name"} | {g for g, _ in DEVICE_GROUPS}), key=str)
        if bad:
            raise ParamError(f"{where}: {at}.{shown(bad[0])} is not a device key; allowed: name, "
                             + ", ".join(g for g, _ in DEVICE_GROUPS))
        if "name" not in x:
            raise ParamError(f"{where}: {at}.name is missing; add \"name\": \"NAME\" to it (e.g. \"gpu\"), a name "
                             "of its own")
        check_device_name(x["name"], f"{at}.name")
        devs.append(AccelDevice.from_dict(x, x["name"], x["name"] + "."))
    return devs


def check_devices(devices: List[AccelDevice], prefix, windows=()) -> None:
    """Names, counts and device-memory windows of a list of accelerators: no two names alike, at most
    MAX_DEVICES copies in all, and no device memory overlapping another's or a window of the
    address map (``windows``: (name, base, end))."""
    if not devices:
        raise ParamError("devices is empty; allowed: one or more device descriptions")
    seen = set()
    for i, d in enumerate(devices):
        d.validate(prefix(d))
        if d.name in seen:
            raise ParamError(f"devices[{i}].name = '{d.name}' appears twice; allowed: a name of its own for each device")
        seen.add(d.name)
    n = sum(d.accel.devices for d in devices)
    if n > MAX_DEVICES:
        raise ParamError(f"devices: {n} accelerators in all (accel.devices summed over the devices) is out of "
                         f"range; allowed: 1 to {MAX_DEVICES}")
    wins = memory_windows(devices)
    for i, (d, w) in enumerate(zip(devices, wins)):
        if w is None:
            continue
        g = prefix(d)
        if w[1] > ADDRESS_TOP:
            raise ParamError(f"{g}accel.memory_bytes x devices = {w[1] - w[0]} at {w[0]:#x} ends above "
                             f"{ADDRESS_TOP:#x}; allowed: device memory below {ADDRESS_TOP:#x}")
        for e, v in zip(devices[:i], wins[:i]):
            if v is not None and w[0] < v[1] and v[0] < w[1]:
                raise ParamError(f"{g}accel.memory_base = {d.accel.memory_base} is not allowed: {d.name}'s "
                                 f"device memory [{w[0]:#x}, {w[1]:#x}) overlaps {e.name}'s [{v[0]:#x}, "
                                 f"{v[1]:#x}); allowed: windows that do not overlap")
        for name, base, end in windows:
            if w[0] < end and base < w[1]:
                raise ParamError(f"{g}accel.memory_base = {d.accel.memory_base} is not allowed: {d.name}'s "
                                 f"device memory [{w[0]:#x}, {w[1]:#x}) overlaps window {name} [{base:#x}, "
                                 f"{end:#x}) of the address map; allowed: device memory outside every window")


@dataclass
class System:
    """A host and the memory under test. ``kind`` says where data lives; page
    tables always live in the host's local DRAM."""
    name: str
    kind: str
    host: HostParams = field(default_factory=HostParams)
    local_dram: DramParams = field(default_factory=DramParams)
    remote: Optional[RemoteMemory] = None
    cxl: Optional[CxlMemory] = None
    description: str = ""
    source: str = ""
    seed: int = 1
    provenance: Dict[str, Any] = field(default_factory=dict)
    #: kind "address-map": the windows of the host physical address map, in order.
    map: Optional[List[Window]] = None
    #: CXL.cache accelerators beside the memories, each on a root port of its own, coherent through
    #: the host's home agent (``home``); their parameters are named after them (``gpu.cache.mshrs``)
    #: but for a lone device (an accelerator preset's one device, given at the top level of its file),
    #: whose parameters and figures go without its name (``cache.mshrs``).
    home: Optional[HomeParams] = None
    devices: Optional[List[AccelDevice]] = None
    lone_device: bool = False
    #: The one device is a CXL-NIC with these parameters (simcxl.workloads.nic).
    nic: Optional[NicParams] = None
    #: The topology this system was built from (simcxl.topology.memory_system): the engine runs
    #: the graph itself, switches and all; the groups above describe it as a preset would.
    graph: Any = field(default=None, repr=False, compare=False)

    _SUBS: ClassVar[Dict[str, Tuple[Tuple[str, type], ...]]] = {
        "remote": (("link", InterSocketParams), ("dram", DramParams)),
        "cxl": (("bridge", BridgeParams), ("link", LinkParams), ("device", DeviceParams), ("media", DramParams)),
    }

    def validate(self) -> "System":
        if self.kind not in KINDS + (MAP_KIND,):
            raise ParamError(f"kind = {self.kind!r} is not allowed; allowed values: {', '.join(KINDS + (MAP_KIND,))}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2 ** 53:
            raise ParamError(f"seed = {self.seed!r} is out of range; allowed: a whole number from 0 to {2 ** 53 - 1}")
        for k in ("name", "description", "source"):
            if not isinstance(getattr(self, k), str):
                raise ParamError(f"{k} = {getattr(self, k)!r} is not allowed; allowed: a string")
        if not isinstance(self.provenance, dict):
            raise ParamError(f"provenance = {self.provenance!r} is not allowed; allowed: a table")
        self.host.validate("host")
        self.local_dram.validate("local_dram")
        if self.kind == MAP_KIND or self.map is not None:
            self._validate_map()
            self._validate_devices()
            return self
        self._validate_devices()
        if self.kind == "remote-numa":
            if self.remote is None:
                raise ParamError("remote is missing: a remote-numa system needs [remote.link] and [remote.dram]; add "
                                 "them, as 'simcxl presets show ddr-remote --json' shows")
            self.remote.link.validate("remote.link")
            self.remote.dram.validate("remote.dram")
        if self.kind == "cxl-type3":
            if self.cxl is None:
                raise ParamError("cxl is missing: a cxl-type3 system needs [cxl.bridge], [cxl.link], "
                                 "[cxl.device] and [cxl.media]; add them, as 'simcxl presets show cxl-asic --json' "
                                 "shows")
            self.cxl.validate("cxl")
        return self

    def _validate_map(self) -> None:
        if self.kind != MAP_KIND:
            raise ParamError(f"map is not allowed with kind = {self.kind!r}; allowed: kind = {MAP_KIND!r}")
        if not isinstance(self.map, list) or not self.map:
            raise ParamError("map is missing or empty: an address-map system needs one or more windows; add them "
                             "to map, as 'simcxl presets show ddr-local+cxl-asic --json' shows")
        if self.remote is not None or self.cxl is not None:
            raise ParamError("remote and cxl are not allowed in an address-map system; its memories are windows of map")
        seen: Dict[str, Window] = {}
        for i, w in enumerate(self.map):
            check_window_name(w.name, f"map[{i}].name")
            if w.name in seen:
                raise ParamError(f"map[{i}].name = {w.name!r} names two windows; allowed: a name per window")
            if w.kind not in KINDS:
                raise ParamError(f"{w.name}.kind = {w.kind!r} is not allowed; allowed values: {', '.join(KINDS)}")
            if w.kind == "local-dram" and any(o.kind == "local-dram" for o in seen.values()):
                raise ParamError(f"{w.name}.kind = 'local-dram' is not allowed: the host has one local DRAM "
                                 "(local_dram), which one window maps; allowed: one local-dram window")
            w.range.validate(w.name)
            for o in seen.values():
                if w.range.base < o.end and o.range.base < w.end:
                    raise ParamError(f"map: windows {o.shown_range()} and {w.shown_range()} overlap; allowed: "
                                     "windows that share no address (set <window>.base and <window>.size)")
            need = {"remote-numa": "remote", "cxl-type3": "cxl"}.get(w.kind)
            for key in ("remote", "cxl"):
                if key != need and getattr(w, key) is not None:
                    raise ParamError(f"{w.name}.{key} is not allowed in a {w.kind} window; remove it, or make the "
                                     f"window's kind {'remote-numa' if key == 'remote' else 'cxl-type3'}")
            if need is not None:
                mem = getattr(w, need)
                if mem is None:
                    raise ParamError(f"{w.name}: a {w.kind} window needs its {need} groups "
                                     f"({', '.join(f'{w.name}.{g}' for g, _ in self._SUBS[need])})")
                if need == "cxl":
                    mem.validate(w.name)
                else:
                    for sub, _ in self._SUBS[need]:
                        getattr(mem, sub).validate(f"{w.name}.{sub}")
            if w.kind == "cxl-type3" and w.range.base % w.cxl.bridge.interleave_bytes:
                raise ParamError(f"{w.name}.base = {w.range.base} is not allowed; allowed: a multiple of "
                                 f"{w.name}.bridge.interleave_bytes ({w.cxl.bridge.interleave_bytes})")
            seen[w.name] = w

    def _validate_devices(self) -> None:
        if self.devices is None:
            for k in ("home", "nic", "lone_device"):
                if getattr(self, k) not in (None, False):
                    raise ParamError(f"{k} is given without devices; allowed: {k} with one or more devices")
            return
        if self.home is None:
            self.home = HomeParams()
        self.home.validate("home")
        if not isinstance(self.devices, list):
            raise ParamError("devices must be a list of accelerators")
        windows = set(self.window_names()) if self.map is not None else set()
        for i, d in enumerate(self.devices):
            check_device_name(d.name, f"devices[{i}].name")
            if d.name in windows or d.name in _RESERVED:
                raise ParamError(f"devices[{i}].name = '{d.name}' is not allowed: it names a window or group; allowed: "
                                 "a name of its own")
        spans = [(w.name, w.range.base, w.end) for w in self.map or []]
        check_devices(self.devices, self.prefix, spans)
        # A NIC's system has the NIC first (simcxl.workloads.nic runs it alone; simcxl.workloads.mixed beside other
        # devices).
        if self.lone_device and len(self.devices) != 1:
            raise ParamError(f"lone_device: {self.name} has devices {', '.join(self.device_names())}; allowed: "
                             "one device")
        if self.nic is not None:
            self.nic.validate("nic")

    def prefix(self, dev: AccelDevice) -> str:
        """How this system names a device's parameters: by its name, but for a lone device."""
        return "" if self.lone_device else dev.name + "."

    def device(self, name: Optional[str] = None) -> AccelDevice:
        """A device by name; without one, the system's only device."""
        if name is None and len(self.devices or []) != 1:
            raise ParamError(f"{self.name} has devices {', '.join(self.device_names()) or '(none)'}; name one")
        for d in self.devices or []:
            if d.name == name or name is None:
                return d
        raise ParamError(f"device {name!r} is not a device of {self.name}; {did_you_mean(name, self.device_names())}"
                         f"allowed: {', '.join(self.device_names())}")

    def device_kinds(self) -> str:
        return ", ".join(f"{d.name}: {d.kind()}" for d in self.devices or [])

    def device_names(self) -> List[str]:
        return [d.name for d in self.devices or []]

    def window_names(self) -> List[str]:
        """The windows of the address map, in order (a single-memory system has one, named as the engine
        names it: local_dram, remote or cxl)."""
        if self.map is not None:
            return [w.name for w in self.map]
        return [{"remote-numa": "remote", "cxl-type3": "cxl"}.get(self.kind, "local_dram")]

    # -- conversion -------------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"name": self.name, "kind": self.kind, "description": self.description,
                             "source": self.source, "seed": self.seed}
        if self.provenance:
            d["provenance"] = copy.deepcopy(self.provenance)
        d["host"] = self.host.to_dict()
        d["local_dram"] = self.local_dram.to_dict()
        for key in ("remote", "cxl"):
            obj = getattr(self, key)
            if obj is not None:
                d[key] = obj.to_dict() if key == "cxl" else {sub: getattr(obj, sub).to_dict()
                                                             for sub, _ in self._SUBS[key]}
        if self.map is not None:
            d["map"] = [self._window_dict(w) for w in self.map]
        if self.devices is not None:
            d["home"] = (self.home or HomeParams()).to_dict()
            if self.lone_device:  # as an accelerator preset gives it: its groups at the top level
                d.update({g: getattr(self.devices[0], g).to_dict() for g, _ in DEVICE_GROUPS})
            else:
                d["devices"] = [x.to_dict() for x in self.devices]
        if self.nic is not None:
            d["nic"] = self.nic.to_dict()
        return d

    def _window_dict(self, w: Window) -> Dict[str, Any]:
        out: Dict[str, Any] = {"name": w.name, "kind": w.kind, **w.range.to_dict()}
        for key in ("remote", "cxl"):
            obj = getattr(w, key)
            if obj is not None:
                out[key] = obj.to_dict() if key == "cxl" else {sub: getattr(obj, sub).to_dict()
                                                               for sub, _ in self._SUBS[key]}
        return out

    @classmethod
    def _memory(cls, key: str, sub: Any, where: str):
        if not isinstance(sub, dict):
            raise ParamError(f"{where} must be a table")
        allowed = [s for s, _ in cls._SUBS[key]] + (["ports"] if key == "cxl" else [])
        extra = sorted(set(sub) - set(allowed), key=str)
        if extra:
            raise ParamError(f"{where}.{shown(extra[0])} is not a parameter group; allowed: {', '.join(allowed)}")
        prefix = where[:-len(key) - 1] if where.endswith("." + key) else key
        parts = {s: t.from_dict(sub.get(s, {}), f"{prefix}.{s}") for s, t in cls._SUBS[key]}
        if key == "remote":
            return RemoteMemory(**parts)
        if "ports" in sub:
            if not isinstance(sub["ports"], list):
                raise ParamError(f"{prefix}.ports must be a list of root ports (link, device, media)")
            ports = []
            for i, rp in enumerate(sub["ports"]):
                at = f"{prefix}.port{i}"
                if not isinstance(rp, dict):
                    raise ParamError(f"{at} must be a table (link, device, media)")
                bad = sorted(set(rp) - {"link", "device", "media"}, key=str)
                if bad:
                    raise ParamError(f"{at}.{shown(bad[0])} is not a parameter group; allowed: link, device, media")
                ports.append(RootPort(**{g: t.from_dict(rp.get(g, {}), f"{at}.{g}") for g, t in
                                         (("link", LinkParams), ("device", DeviceParams), ("media", DramParams))}))
            parts["ports"] = ports
        return CxlMemory(**parts)

    @classmethod
    def _window_from(cls, d: Any, i: int) -> Window:
        at = f"map[{i}]"
        if not isinstance(d, dict):
            raise ParamError(f"{at} must be a table (name, kind, base, size and the memory's groups)")
        allowed = {"name", "kind", "base", "size", "remote", "cxl"}
        unknown = sorted(set(d) - allowed)
        if unknown:
            raise ParamError(f"{at}.{shown(unknown[0])} is not a window key; allowed: {', '.join(sorted(allowed))}")
        for req in ("name", "kind"):
            if req not in d:
                raise ParamError(f"{at}.{req} is missing; add \"{req}\": " + ("\"NAME\" (e.g. \"cxl0\")" if req == "name"
                                 else f"KIND, one of {', '.join(KINDS)}") + f" to {at}")
        name = d["name"]
        check_window_name(name, f"{at}.name")
        rng = WindowRange.from_dict({k: d[k] for k in ("base", "size") if k in d}, name)
        mem = {key: cls._memory(key, d[key], f"{name}.{key}") for key in ("remote", "cxl") if key in d}
        return Window(name=name, kind=d["kind"], range=rng, **mem)


    @classmethod
    def from_dict(cls, d: Dict[str, Any], where: str = "preset") -> "System":
        if not isinstance(d, dict):
            raise ParamError(f"{where}: a preset must be a table")
        allowed = {"name", "kind", "description", "source", "seed", "provenance", "host", "local_dram",
                   "remote", "cxl", "map", "home", "devices", "nic"} | {g for g, _ in DEVICE_GROUPS}
        unknown = sorted(set(d) - allowed, key=str)
        if unknown:
            raise ParamError(f"{where}: {shown(unknown[0])} is not a preset key; allowed: {', '.join(sorted(allowed))}")
        for req, allowed in (("name", "a string"), ("kind", f"values: {', '.join(KINDS)}")):
            if req not in d:
                raise ParamError(f"{where}: {req} is missing; add \"{req}\" at the top level (allowed {allowed}), or "
                                 "\"base\": \"PRESET\" to change a preset")
        kw: Dict[str, Any] = {k: d[k] for k in ("name", "kind", "description", "source", "seed", "provenance")
                              if k in d}
        kw["host"] = HostParams.from_dict(d.get("host", {}), "host")
        kw["local_dram"] = DramParams.from_dict(d.get("local_dram", {}), "local_dram")
        for key in ("remote", "cxl"):
            if key in d:
                kw[key] = cls._memory(key, d[key], key)
        if "map" in d:
            if not isinstance(d["map"], list):
                raise ParamError(f"{where}: map must be a list of windows")
            kw["map"] = [cls._window_from(w, i) for i, w in enumerate(d["map"])]
        if "home" in d:
            kw["home"] = HomeParams.from_dict(d["home"], "home")
        top = [g for g, _ in DEVICE_GROUPS if g in d]
        if top and "devices" in d:
            raise ParamError(f"{where}: {top[0]} is given beside devices; allowed: a lone device's groups at the "
                             "top level, or every device in devices")
        if "devices" in d:
            kw["devices"] = read_device_list(d["devices"], where)
        elif top:
            kw.update(devices=[AccelDevice.from_dict(d, "dev0", "")], lone_device=True)
        if "nic" in d:
            kw["nic"] = NicParams.from_dict(d["nic"], "nic")
        return cls(**kw).validate()

    # -- dotted access, for overrides and sweeps ---------------------------------------

    def get(self, path: str) -> Any:
        params = self.parameters()
        if path not in params:
            raise ParamError(f"{shown(path)} is not a parameter of {self._what()}; {did_you_mean(path, params)}"
                             "'simcxl presets show NAME' lists the allowed ones")
        return params[path]

    def replace(self, **overrides: Any) -> "System":
        """A copy with dotted parameters changed, e.g. ``replace(**{"cxl.link.lanes": 8})``;
        checked at once."""
        new = copy.deepcopy(self)
        for path, value in overrides.items():
            if path == "seed":
                new.seed = value
                if new.graph is not None:
                    new.graph.seed = value
                continue
            if new.graph is not None:
                raise ParamError(f"{shown(path)}: {self.name} was built from topology {new.graph.name}; change "
                                 "its parameters by component (e.g. exp0.media.ranks) through simcxl.topology")
            if not new.lone_device and new.devices and path.rpartition(".")[0] in dict(DEVICE_GROUPS):
                many = "several devices" if len(new.devices) > 1 else "a named device"
                raise ParamError(f"{shown(path)} names no device; with {many}, name it: "
                                 + " or ".join(f"{x.name}.{path}" for x in new.devices))
            set_dotted(new._groups(named=True), path, value, new._what())
        return new.validate()

    def _what(self) -> str:
        """How messages name this system."""
        if self.nic is not None or self.devices and self.kind == "local-dram":
            return "a CXL-NIC system" if self.nic is not None else "an accelerator system"
        return f"this {self.kind} system"

    def _groups(self, named: bool = False) -> Dict[str, ParamGroup]:
        """Every group by its dotted name; ``named``: a lone device's under its name too."""
        out: Dict[str, ParamGroup] = {"host": self.host, "local_dram": self.local_dram}
        if self.remote is not None:
            for sub, _ in self._SUBS["remote"]:
                out[f"remote.{sub}"] = getattr(self.remote, sub)
        if self.cxl is not None:
            out.update(self.cxl.groups("cxl"))
        if self.devices is not None:
            out["home"] = self.home or HomeParams()
            for x in self.devices:
                out.update(x.groups(self.prefix(x)))
                if named and self.lone_device:
                    out.update(x.groups(x.name + "."))
        if self.nic is not None:
            out["nic"] = self.nic
        # A window's groups are named after it: cxl0.base, cxl0.media.ranks, far.link.latency_ns.
        for w in self.map or []:
            out[w.name] = w.range
            if w.remote is not None:
                for sub, _ in self._SUBS["remote"]:
                    out[f"{w.name}.{sub}"] = getattr(w.remote, sub)
            if w.cxl is not None:
                out.update(w.cxl.groups(w.name))
        return out

    def group(self, name: str) -> ParamGroup:
        """The parameter group of a dotted prefix (``host``, ``cxl.media``, ``cxl0.media``, ``cxl0``)."""
        groups = self._groups(named=True)
        if name not in groups:
            raise ParamError(f"{shown(name)} is not a parameter group of this {self.kind} system; "
                             f"{did_you_mean(name, groups)}allowed: "
                             f"{', '.join(groups)}")
        return groups[name]

    def parameters(self) -> Dict[str, Any]:
        """Every parameter of this system, flattened to dotted names."""
        return {f"{g}.{k}": v for g, obj in self._groups().items() for k, v in obj.to_dict().items()}



def check_window_name(name: Any, where: str) -> None:
    check_name(name, where, _RESERVED)
