# What a root port of a CXLHostBridge or a downstream port of a CXLSwitch
# leads to (a CXLType3Expander or a CXLSwitch). Build-time file: imports m5 only.

from m5.SimObject import SimObject


class CXLPortTarget(SimObject):
    """A link and what lies below it, timed by the SimCXL core."""

    type = "CXLPortTarget"
    abstract = True
    cxx_header = "devices/cxl_port_target.hh"
    cxx_class = "gem5::CXLPortTarget"
