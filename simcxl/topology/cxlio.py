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


# -- HDM decoders, programmed as Linux's drivers/cxl/core/hdm.c does ------------------------------

CM_OFFSET, CAP_ID_HDM = 0x1000, 5
HDM_GLOBAL_CTRL, HDM_POISON_ON_ERR, HDM_ENABLE = 0x4, 1 << 0, 1 << 1
CTRL_LOCK, CTRL_COMMIT, CTRL_COMMITTED, CTRL_COMMIT_ERROR, CTRL_HOSTONLY = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
#: Encoded interleave ways (CXL 3.1 section 8.2.4.20.7): 1-16 as 0-4, 3, 6 and 12 as 8-10.
WAYS_CODE = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4, 3: 8, 6: 9, 12: 10}
GRANULARITIES = tuple(256 << k for k in range(7))  # 256 B to 16 KiB (codes 0-6)


def _component_block(fn) -> int:
    """Where the component registers start in BAR 0: the Register Locator's component block (ID 1), as
    cxl_find_regblock finds it; a host bridge's registers (what a CHBS points to) are the block itself."""
    if not hasattr(fn, "config_read"):
        return 0
    rl = find_dvsec(fn, 8)
    length = fn.config_read(rl + 4, 4) >> 20
    for e in range(rl + 0xC, rl + length, 8):
        lo, hi = fn.config_read(e, 4), fn.config_read(e + 4, 4)
        if lo >> 8 & 0xFF == 1:
            return (lo & 0xFFFF0000) | hi << 32
    raise ValueError("the function's Register Locator names no component register block")


def hdm_offset(fn) -> int:
    """The HDM Decoder Capability's offset in BAR 0, found through the CXL.cache/mem capability array
    (cxl_probe_component_regs)."""
    cm = _component_block(fn) + CM_OFFSET
    for i in range(1, (fn.mmio_read(cm, 4) >> 24) + 1):
        h = fn.mmio_read(cm + 4 * i, 4)
        if h & 0xFFFF == CAP_ID_HDM:
            return cm + (h >> 20)
    raise ValueError("the function has no HDM decoder capability")


def enable_hdm(fn, poison: bool = False, enable: bool = True) -> None:
    """HDM Decoder Enable (devm_cxl_enable_hdm), and Poison On Decode Error Enable if asked. The enable
    bit matters at endpoints only: a bridge's or switch's committed decoders decode without it."""
    fn.mmio_write(hdm_offset(fn) + HDM_GLOBAL_CTRL, 4,
                  (HDM_ENABLE if enable else 0) | (HDM_POISON_ON_ERR if poison else 0))


def commit_decoder(fn, index: int, base: int, size: int, ways: int = 1, granularity: int = 256,
                   targets=(), skip: int = 0, lock: bool = False) -> None:
    """Programs and commits decoder ``index`` as cxl_decoder_commit does: interleave into control, base
    and size high then low, the target list (bridges and switches: port numbers, one byte per way) or
    the DPA skip (endpoints), then Commit and the Committed bit read back. Raises ValueError with the
    function's reason when it refuses."""
    if ways not in WAYS_CODE:
        raise ValueError(f"ways = {ways} is not allowed; allowed: {', '.join(map(str, sorted(WAYS_CODE)))}")
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity = {granularity} is not allowed; allowed: 256 B to 16 KiB, a power of two")
    hdm = hdm_offset(fn)
    reg = hdm + 0x10 + 0x20 * index
    ctrl = fn.mmio_read(reg + 0x10, 4) & ~(CTRL_COMMIT | CTRL_LOCK | 0xFF)
    ctrl |= GRANULARITIES.index(granularity) | WAYS_CODE[ways] << 4 | CTRL_HOSTONLY | (CTRL_LOCK if lock else 0)
    for off, v in ((0x4, base >> 32), (0x0, base & 0xFFFFFFFF), (0xC, size >> 32), (0x8, size & 0xFFFFFFFF)):
        fn.mmio_write(reg + off, 4, v)
    tl = sum(t << (8 * i) for i, t in enumerate(targets)) if targets else skip
    fn.mmio_write(reg + 0x18, 4, tl >> 32)
    fn.mmio_write(reg + 0x14, 4, tl & 0xFFFFFFFF)
    fn.mmio_write(reg + 0x10, 4, ctrl | CTRL_COMMIT)
    got = fn.mmio_read(reg + 0x10, 4)
    if not got & CTRL_COMMITTED:
        raise ValueError(fn.last_commit_error or f"decoder {index} did not commit")
