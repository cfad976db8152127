# A CXL.cache link between a device cache and the host's memory bus, as a
# gem5 SimObject: it passes requests, responses and snoops through with the
# latencies of the SimCXL core's link, device and home-agent parameters
# (computed outside gem5 by simcxl.gem5.nic.setup). Build-time file: imports
# m5 only.

from m5.objects.ClockedObject import ClockedObject
from m5.params import *


class CXLCacheLink(ClockedObject):
    """CXL.cache messages crossing the link. gem5 resolves a snoop at once, so
    its crossings are charged to its answer: the device's data, or (a copy
    the device only drops) the snooping request itself; and the device's next
    request for the line waits until the snoop would have reached it."""

    type = "CXLCacheLink"
    cxx_header = "devices/cxl_cache_link.hh"
    cxx_class = "gem5::CXLCacheLink"

    cpu_side_port = ResponsePort("from the device cache's memory side")
    mem_side_port = RequestPort("to the host's memory bus")
    device_cache = Param.BaseCache(
        NULL, "the device cache behind this link (which lines a snoop finds); none: a DMA device, never snooped")
    request_latency = Param.Latency("D2H request to the host's ordering point (link and home agent)")
    response_latency = Param.Latency("H2D response (GO, with data for reads) back to the device")
    snoop_latency = Param.Latency(
        "H2D snoop out, the device's lookup and its D2H answer back: what a host request waits for a device copy")
    snoop_data_latency = Param.Latency(
        "the same for a snoop the device answers with data, beyond the device cache's own snoop lookup")
    snoop_arrival_latency = Param.Latency(
        "H2D snoop out and the device's lookup: until then the device does not know its copy is gone, so "
        "its own requests for the line leave no earlier")
