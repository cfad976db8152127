"""SimCXL: a CXL system simulator with a C++ timing core.

The standalone engine runs without gem5::

    import simcxl
    df = simcxl.lmbench("cxl-asic", ["4k", "1m", "1g"])
"""

from .config.groups import BridgeParams, DeviceParams, DramParams, HostParams, InterSocketParams, LinkParams
from .config.params import CxlMemory, ParamError, RemoteMemory, System
from .config.presets import load as load_preset
from .config.presets import names as preset_names

# The engine's functions load on first use: they need the compiled core (and
# pandas), which a source checkout lacks; `python -m simcxl.config.schema_gen` runs
# there, before any build, and imports this package first.
_ENGINE = ("bench", "breakdown", "host_names", "hosts", "lmbench", "loaded_latency", "stream", "trace", "traffic")


def __getattr__(name):
    if name in _ENGINE:
        from .engine import standalone as engine
        return getattr(engine, name)
    if name == "shared":
        from .workloads.sharing import shared
        return shared
    raise AttributeError(f"module 'simcxl' has no attribute {name!r}")


__all__ = ["BridgeParams", "CxlMemory", "DeviceParams", "DramParams", "HostParams", "InterSocketParams",
           "LinkParams", "ParamError", "RemoteMemory", "System", "load_preset", "preset_names", "bench",
           "breakdown", "host_names", "hosts", "lmbench", "loaded_latency", "shared", "stream", "trace", "traffic"]
