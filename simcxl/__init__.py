"""SimCXL: a CXL system simulator with a C++ timing core.

The standalone engine runs without gem5::

    import simcxl
    df = simcxl.lmbench("cxl-asic", ["4k", "1m", "1g"])
"""

from .params import (BridgeParams, CxlMemory, DeviceParams, DramParams, HostParams, InterSocketParams, LinkParams,
                     ParamError, RemoteMemory, System)
from .presets import load as load_preset
from .presets import names as preset_names
from .engine import bench, breakdown, lmbench, loaded_latency, stream, trace, traffic

__all__ = ["BridgeParams", "CxlMemory", "DeviceParams", "DramParams", "HostParams", "InterSocketParams",
           "LinkParams", "ParamError", "RemoteMemory", "System", "load_preset", "preset_names", "bench",
           "breakdown", "lmbench", "loaded_latency", "stream", "trace", "traffic"]
