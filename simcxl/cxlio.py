"""CXL.io of the simulated devices and ports (the core's ``_core.cxlio``):
configuration space, component and device registers, the mailbox and the HDM
decoders software commits. These helpers read them the way Linux's CXL drivers
do, for users inspecting a device without a guest (see docs/model/cxlio.md)."""

from __future__ import annotations

import struct
from typing import Iterator, List, Optional, Tuple

from simcxl._core import cxlio as _c

Type3 = _c.Type3
Port = _c.Port
HostBridgeRegisters = _c.HostBridgeRegisters

CXL_VENDOR_ID = 0x1E98
DVSEC_EXT_CAP_ID = 0x23
DOE_EXT_CAP_ID = 0x2E

# Mailbox return codes (CXL 3.1 table 8-34) the model gives.
RETURN_CODES = {0x00: "success", 0x02: "invalid input", 0x03: "unsupported", 0x0E: "invalid handle",
                0x0F: "invalid physical address", 0x10: "poison limit reached", 0x16: "invalid payload length",
                0x17: "invalid log"}


def ext_caps(fn) -> Iterator[Tuple[int, int, int]]:
    """(offset, id, version) of each extended capability, following the chain from 0x100."""
    off, seen = 0x100, set()
    while off and off not in seen and 0x100 <= off <= 0xFFC:
        seen.add(off)
        h = fn.config_read(off, 4)
        if h in (0, 0xFFFFFFFF):
            return
        yield off, h & 0xFFFF, h >> 16 & 0xF
        off = h >> 20


def find_dvsec(fn, dvsec_id: int, vendor: int = CXL_VENDOR_ID) -> Optional[int]:
    """The offset of a DVSEC, as Linux's pci_find_dvsec_capability finds it, or None."""
    for off, cap, _ in ext_caps(fn):
        if cap == DVSEC_EXT_CAP_ID and fn.config_read(off + 4, 2) == vendor and fn.config_read(off + 8, 2) == dvsec_id:
            return off
    return None


def doe_exchange(fn, request: List[int]) -> List[int]:
    """One DOE request (dwords, headers included) and its response; raises when the mailbox reports an error."""
    doe = next((off for off, cap, _ in ext_caps(fn) if cap == DOE_EXT_CAP_ID), None)
    if doe is None:
        raise ValueError("the function has no DOE mailbox")
    for dw in request:
        fn.config_write(doe + 0x10, 4, dw)
    fn.config_write(doe + 0x08, 4, 1 << 31)  # Go
    if fn.config_read(doe + 0x0C, 4) & 0x4:
        fn.config_write(doe + 0x08, 4, 1)  # Abort clears the error
        raise ValueError("DOE error: the request was refused")
    out = []
    while fn.config_read(doe + 0x0C, 4) & (1 << 31):
        out.append(fn.config_read(doe + 0x14, 4))
        fn.config_write(doe + 0x14, 4, 0)
    return out


def read_cdat(fn) -> bytes:
    """The whole CDAT, read entry by entry through the DOE Table Access protocol as Linux does."""
    table, handle = b"", 0
    while handle != 0xFFFF:
        rsp = doe_exchange(fn, [CXL_VENDOR_ID | 2 << 16, 3, handle << 16])
        handle = rsp[2] >> 16
        entry = struct.pack(f"<{len(rsp) - 3}I", *rsp[3:])
        table += entry[:struct.unpack_from("<I", entry)[0]] if not table else entry[:struct.unpack_from("<H", entry, 2)[0]]
    return table
