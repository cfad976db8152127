"""CXL.io of the simulated Type-3 device and ports (ext/cxlcore/cxlio), driven
as Linux's CXL drivers drive them. Offsets and fields are written here from the
specifications as the kernel reads them (drivers/cxl/cxl.h, cxlpci.h, cxlmem.h,
include/uapi/linux/pci_regs.h; CXL 3.1 sections 8.1-8.2; PCIe 6.0 section 7):
the capability walks are pci_find_next_ext_capability/pci_find_dvsec_capability
and cxl_find_regblock/cxl_probe_*_regs, decoders are programmed in
cxl_decoder_commit's order, and every mailbox command's return code and sizes
are the specification's."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, strategies as st

from simcxl import _core
from simcxl.topology import cxlio
from conftest import fuzz

X = _core.cxlio
GiB, MiB = 1 << 30, 1 << 20
CAP = 16 * GiB

# PCI and CXL constants as Linux names them.
PCI_EXT_CAP_ID_DVSEC, PCI_EXT_CAP_ID_DOE = 0x23, 0x2E
CXL_VENDOR = 0x1E98
DVSEC_DEVICE, DVSEC_PORT_EXT, DVSEC_PORT_GPF, DVSEC_DEVICE_GPF, DVSEC_FLEXBUS, DVSEC_REGLOC = 0, 3, 4, 5, 7, 8
RBI_COMPONENT, RBI_MEMDEV = 1, 3
CM_OFFSET = 0x1000
CAP_ID_RAS, CAP_ID_LINK, CAP_ID_HDM = 2, 4, 5
# HDM decoder registers (cxl.h).
HDM_GLOBAL_CTRL, HDM_ENABLE = 0x4, 1 << 1
def BASE_LO(i): return 0x20 * i + 0x10
def BASE_HI(i): return 0x20 * i + 0x14
def SIZE_LO(i): return 0x20 * i + 0x18
def SIZE_HI(i): return 0x20 * i + 0x1C
def CTRL(i): return 0x20 * i + 0x20
def TL_LO(i): return 0x20 * i + 0x24
def TL_HI(i): return 0x20 * i + 0x28
LOCK, COMMIT, COMMITTED, COMMIT_ERROR, HOSTONLY = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
# Mailbox (cxl.h) and return codes (CXL 3.1 table 8-34).
MB_CAPS, MB_CTRL, MB_CMD, MB_STATUS, MB_PAYLOAD = 0x0, 0x4, 0x8, 0x10, 0x20
RC_SUCCESS, RC_INPUT, RC_UNSUPPORTED, RC_HANDLE, RC_PADDR, RC_PAYLOADLEN, RC_LOG = 0, 2, 3, 0xE, 0xF, 0x16, 0x17
CEL_UUID = bytes.fromhex("0da9c0b5bf414b788f7996b1623b3f17")


@pytest.fixture
def dev():
    return X.Type3(CAP)


# --- walks written from the kernel's reading of the specifications --------------------------------

def ext_caps(fn):
    """pci_find_next_ext_capability: from 0x100, ID in bits 15:0, next in 31:20; at most 4 KiB / 8 caps."""
    out, off = [], 0x100
    for _ in range((4096 - 256) // 8):
        h = fn.config_read(off, 4)
        if h in (0, 0xFFFFFFFF):
            break
        out.append((off, h & 0xFFFF))
        off = h >> 20
        if off < 0x100:
            break
    return out


def find_dvsec(fn, dvsec_id):
    """pci_find_dvsec_capability: the DVSEC whose header 1 names CXL and header 2 the ID."""
    for off, cap in ext_caps(fn):
        if cap == PCI_EXT_CAP_ID_DVSEC and fn.config_read(off + 4, 2) == CXL_VENDOR and fn.config_read(off + 8, 2) == dvsec_id:
            return off
    return None


def find_regblock(fn, rbi):
    """cxl_find_regblock: the Register Locator's entries (BIR 2:0, block ID 15:8, offset 31:16 + high dword)."""
    rl = find_dvsec(fn, DVSEC_REGLOC)
    length = fn.config_read(rl + 4, 4) >> 20
    for e in range(rl + 0xC, rl + length, 8):
        lo, hi = fn.config_read(e, 4), fn.config_read(e + 4, 4)
        if (lo >> 8) & 0xFF == rbi:
            return lo & 7, (lo & 0xFFFF0000) | hi << 32
    return None


def component_caps(fn, block):
    """cxl_probe_component_regs: the CXL.cache/mem header (ID 1, array size in 31:24) and each
    capability's ID (15:0) and offset (31:20) from the start of that range."""
    hdr = fn.mmio_read(block + CM_OFFSET, 4)
    assert hdr & 0xFFFF == 1 and (hdr >> 16) & 0xF == 1 and (hdr >> 20) & 0xF == 1
    caps = {}
    for i in range(1, (hdr >> 24) + 1):
        h = fn.mmio_read(block + CM_OFFSET + 4 * i, 4)
        caps[h & 0xFFFF] = block + CM_OFFSET + (h >> 20)
    return caps


def device_caps(fn, block):
    """cxl_probe_device_regs: capability array (ID 0 in 15:0, count in 47:32), then 16-byte headers."""
    arr = fn.mmio_read(block, 8)
    assert arr & 0xFFFF == 0
    caps = {}
    for i in range(1, (arr >> 32 & 0xFFFF) + 1):
        cid = fn.mmio_read(block + 0x10 * i, 4) & 0xFFFF
        caps[cid] = (block + fn.mmio_read(block + 0x10 * i + 4, 4), fn.mmio_read(block + 0x10 * i + 8, 4))
    return caps


def hdm_of(fn):
    _, comp = find_regblock(fn, RBI_COMPONENT)
    return component_caps(fn, comp)[CAP_ID_HDM]


def commit(fn, hdm, i, base, size, ig=0, iw=0, tl=0, lock=False):
    """setup_hw_decoder + cxl_decoder_commit: interleave and type into control, base and size
    high then low, target list (or DPA skip) high then low, then Commit; the control read back."""
    ctrl = fn.mmio_read(hdm + CTRL(i), 4) & ~(COMMIT | 0xFF | LOCK)
    ctrl |= ig | iw << 4 | HOSTONLY | (LOCK if lock else 0)
    fn.mmio_write(hdm + BASE_HI(i), 4, base >> 32)
    fn.mmio_write(hdm + BASE_LO(i), 4, base & 0xFFFFFFFF)
    fn.mmio_write(hdm + SIZE_HI(i), 4, size >> 32)
    fn.mmio_write(hdm + SIZE_LO(i), 4, size & 0xFFFFFFFF)
    fn.mmio_write(hdm + TL_HI(i), 4, tl >> 32)
    fn.mmio_write(hdm + TL_LO(i), 4, tl & 0xFFFFFFFF)
    fn.mmio_write(hdm + CTRL(i), 4, ctrl | COMMIT)
    return fn.mmio_read(hdm + CTRL(i), 4)


def reset(fn, hdm, i):
    """cxl_decoder_reset: clear Commit, then zero size and base."""
    fn.mmio_write(hdm + CTRL(i), 4, fn.mmio_read(hdm + CTRL(i), 4) & ~COMMIT)
    for reg in (SIZE_HI(i), SIZE_LO(i), BASE_HI(i), BASE_LO(i)):
        fn.mmio_write(hdm + reg, 4, 0)
    return fn.mmio_read(hdm + CTRL(i), 4)


def snapshot(fn):
    return [fn.config_read(o, 4) for o in range(0, 4096, 4)]


# --- configuration space ----------------------------------------------------------------------------

def test_header_is_a_cxl_memory_device_with_a_pcie_endpoint_capability(dev):
    assert dev.config_read(0x00, 2) == CXL_VENDOR
    # Class code 05h (memory controller), 02h (CXL), programming interface 10h (CXL memory device):
    # what cxl_pci's id table binds to; revision 0; header type 0.
    assert dev.config_read(0x08, 4) == 0x05021000
    assert dev.config_read(0x0E, 1) & 0x7F == 0
    assert dev.config_read(0x06, 2) & 0x10  # capabilities list
    cap = dev.config_read(0x34, 1)
    assert cap >= 0x40 and dev.config_read(cap, 1) == 0x10
    flags = dev.config_read(cap + 2, 2)
    assert flags & 0xF == 2 and (flags >> 4) & 0xF == 0  # version 2, PCI Express endpoint
    # Link capabilities and status: the default link is Gen5 (32 GT/s, code 5) x16.
    assert dev.config_read(cap + 0x0C, 4) & 0x3FF == 5 | 16 << 4
    assert dev.config_read(cap + 0x12, 2) & 0x3FF == 5 | 16 << 4
    assert dev.config_read(cap + 0x2C, 4) == 0b111110  # 2.5 to 32 GT/s supported


def test_bar0_sizes_as_a_64_bit_memory_bar_holding_both_register_blocks(dev):
    assert dev.config_read(0x10, 4) & 0xF == 0x4  # memory, 64-bit, not prefetchable
    dev.config_write(0x10, 4, 0xFFFFFFFF)
    dev.config_write(0x14, 4, 0xFFFFFFFF)
    size_mask = dev.config_read(0x10, 4) & ~0xF
    assert (~size_mask & 0xFFFFFFFF) + 1 == 128 * 1024 == dev.bar_bytes  # component 64 KiB + device 64 KiB
    assert dev.config_read(0x14, 4) == 0xFFFFFFFF
    dev.config_write(0x10, 4, 0xFE020000)
    dev.config_write(0x14, 4, 0x1)
    assert dev.bar_address == 0x1_FE020000


def test_extended_capabilities_chain_to_each_cxl_dvsec_with_its_length_and_revision(dev):
    caps = ext_caps(dev)
    offs = [o for o, _ in caps]
    assert offs[0] == 0x100 and all(o % 4 == 0 for o in offs) and len(set(offs)) == len(offs)
    # DVSEC: lengths from the CXL 3.1 sections (device 3Ch, device GPF 10h, Flex Bus 20h,
    # register locator 0Ch + 8 per block: two blocks).
    want = {DVSEC_DEVICE: (0x3C, 2), DVSEC_DEVICE_GPF: (0x10, 0), DVSEC_FLEXBUS: (0x20, 2), DVSEC_REGLOC: (0x1C, 0)}
    for dvsec_id, (length, rev) in want.items():
        off = find_dvsec(dev, dvsec_id)
        assert off is not None, dvsec_id
        h1 = dev.config_read(off + 4, 4)
        assert (h1 >> 20, (h1 >> 16) & 0xF) == (length, rev)
    # Capabilities do not overlap.
    spans = sorted((o, o + (dev.config_read(o + 4, 4) >> 20 if c == PCI_EXT_CAP_ID_DVSEC else 0x18)) for o, c in caps)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert [c for _, c in caps].count(PCI_EXT_CAP_ID_DOE) == 1
    # The package's helpers find the same.
    assert cxlio.find_dvsec(dev, DVSEC_REGLOC) == find_dvsec(dev, DVSEC_REGLOC)


def test_device_dvsec_reports_memory_capable_one_range_valid_active_and_the_capacity(dev):
    d = find_dvsec(dev, DVSEC_DEVICE)
    cap = dev.config_read(d + 0xA, 2)
    assert cap & (1 << 2) and (cap >> 4) & 3 == 1  # MEM_CAPABLE, HDM count 1
    hi, lo = dev.config_read(d + 0x18, 4), dev.config_read(d + 0x1C, 4)
    assert lo & 1 and lo & 2  # MEM_INFO_VALID, MEM_ACTIVE: cxl_await_media_ready goes on
    assert hi << 32 | (lo & 0xF0000000) == CAP
    assert dev.config_read(d + 0x28, 4) == dev.config_read(d + 0x2C, 4) == 0  # range 2 absent


def test_mem_enable_is_rw_until_config_lock_then_read_only(dev):
    d = find_dvsec(dev, DVSEC_DEVICE)
    ctrl = dev.config_read(d + 0xC, 2)
    assert ctrl & 2 and not ctrl & 4  # CXL.io on, CXL.mem off until the OS enables it
    dev.config_write(d + 0xC, 2, ctrl | 4)
    assert dev.config_read(d + 0xC, 2) & 4
    dev.config_write(d + 0x24, 4, 0x5000_0000)
    assert dev.config_read(d + 0x24, 4) == 0x5000_0000
    dev.config_write(d + 0x14, 2, 1)  # CONFIG_LOCK
    dev.config_write(d + 0xC, 2, ctrl & ~4)
    dev.config_write(d + 0x24, 4, 0)
    dev.config_write(d + 0x14, 2, 0)
    assert dev.config_read(d + 0xC, 2) & 4 and dev.config_read(d + 0x24, 4) == 0x5000_0000
    assert dev.config_read(d + 0x14, 2) & 1


def test_flex_bus_port_reports_the_modes_control_asks_for(dev):
    fb = find_dvsec(dev, DVSEC_FLEXBUS)
    io, mem, flit68 = 1 << 1, 1 << 2, 1 << 5
    assert dev.config_read(fb + 0xA, 2) & (io | mem | flit68) == io | mem | flit68  # capable
    assert dev.config_read(fb + 0xE, 2) & (io | mem | flit68) == io | mem | flit68  # enabled after training
    dev.config_write(fb + 0xC, 2, 0)  # CXL.mem and the 68-byte flit off; CXL.io cannot be
    assert dev.config_read(fb + 0xC, 2) == io and dev.config_read(fb + 0xE, 2) == io


def test_read_only_fields_ignore_writes_and_rw_fields_take_them(dev):
    before = snapshot(dev)
    for off in (0x00, 0x08, 0x34, 0x100, 0x104, 0x108):
        dev.config_write(off, 4, 0x12345678)
    after = snapshot(dev)
    assert [after[o // 4] for o in (0x00, 0x08, 0x100, 0x104, 0x108)] == [before[o // 4] for o in (0x00, 0x08, 0x100, 0x104, 0x108)]
    assert after[0x34 // 4] & 0xFF == before[0x34 // 4] & 0xFF
    dev.config_write(0x04, 2, 0x0006)  # memory space and bus master
    assert dev.config_read(0x04, 2) == 0x0006
    dev.config_write(0x3C, 1, 0x0B)
    assert dev.config_read(0x3C, 1) == 0x0B


@pytest.mark.parametrize("offset,size", [(0x02, 4), (0x01, 2), (0x00, 3), (0x00, 8), (0x1000, 4), (0xFFE, 4),
                                         (1 << 40, 4), (0x10, 0)])
def test_malformed_config_accesses_are_counted_and_change_nothing(dev, offset, size):
    before = snapshot(dev)
    n = dev.stats()["bad_config_accesses"]
    # An unsupported request's completion: all ones, as wide as the access.
    assert dev.config_read(offset, size) == {0: 0, 1: 0xFF, 2: 0xFFFF, 3: 0xFFFFFF}.get(size, 0xFFFFFFFF)
    dev.config_write(offset, size, 0)
    assert dev.stats()["bad_config_accesses"] == n + 2
    assert snapshot(dev) == before


# --- DOE and CDAT -----------------------------------------------------------------------------------

def doe_of(fn):
    return next(o for o, c in ext_caps(fn) if c == PCI_EXT_CAP_ID_DOE)


def doe(fn, request):
    """pci_doe_send_req/pci_doe_recv_resp: write dwords, Go (bit 31 of control), then read while
    Data Object Ready (status bit 31), writing the read mailbox to pop each dword."""
    at = doe_of(fn)
    for dw in request:
        fn.config_write(at + 0x10, 4, dw)
    fn.config_write(at + 0x08, 4, 1 << 31)
    status = fn.config_read(at + 0x0C, 4)
    if status & 0x4:
        return None
    out = []
    while fn.config_read(at + 0x0C, 4) & (1 << 31):
        out.append(fn.config_read(at + 0x14, 4))
        fn.config_write(at + 0x14, 4, 0)
    return out


def test_doe_discovery_lists_itself_then_cxl_table_access(dev):
    r0 = doe(dev, [0x0001, 3, 0])  # PCI-SIG discovery, index 0
    assert r0[:2] == [0x0001, 3] and r0[2] & 0xFFFF == 0x0001 and (r0[2] >> 16) & 0xFF == 0 and r0[2] >> 24 == 1
    r1 = doe(dev, [0x0001, 3, 1])
    assert r1[2] & 0xFFFF == CXL_VENDOR and (r1[2] >> 16) & 0xFF == 2 and r1[2] >> 24 == 0  # last protocol


@pytest.fixture(scope="module")
def system():
    """A preset system with an x8 link (the schema's parameters), and its Type-3 component."""
    from conftest import link_bound_cxl
    from simcxl.topology import core_graph
    return core_graph(link_bound_cxl(lanes=8)), "cxl_dev0"


def test_parameters_come_from_the_systems_type3_and_its_link(system):
    graph, comp = system
    dev = X.Type3(CAP, system=graph, component=comp)
    cap = dev.config_read(0x34, 1)
    assert dev.config_read(cap + 0x12, 2) & 0x3FF == 5 | 8 << 4  # Gen5 x8, from cxl_link0
    # The component registers' link capability advertises the link's M2S credits (10-bit fields).
    _, comp_block = find_regblock(dev, RBI_COMPONENT)
    ll = component_caps(dev, comp_block)[CAP_ID_LINK]
    rx = dev.mmio_read(ll + 0x10, 8)
    assert (rx >> 30 & 0x3FF, rx >> 40 & 0x3FF) == (512, 512)
    with pytest.raises(_core.ConfigError, match="component = 'cxl_link0' is not a type3"):
        X.Type3(CAP, system=graph, component="cxl_link0")


def test_cdat_read_entry_by_entry_is_the_devices_table(system):
    graph, comp = system
    dev = X.Type3(CAP, system=graph, component=comp)
    table, handle, entries = b"", 0, 0
    while handle != 0xFFFF:  # cxl_cdat_read_table: handle 0 is the header, then each structure
        rsp = doe(dev, [CXL_VENDOR | 2 << 16, 3, handle << 16])
        assert rsp[0] == CXL_VENDOR | 2 << 16 and rsp[1] == len(rsp)
        assert rsp[2] & 0xFFFF == 0  # response code 0, table type 0 (CDAT)
        data = struct.pack(f"<{len(rsp) - 3}I", *rsp[3:])
        n = 16 if handle == 0 else struct.unpack_from("<H", data, 2)[0]
        assert len(data) == (n + 3) // 4 * 4
        table += data[:n]
        handle, entries = rsp[2] >> 16, entries + 1
    length, rev = struct.unpack_from("<IB", table)
    assert length == len(table) and rev == 1 and sum(table) % 256 == 0
    # The header, one DSMAS (type 0) over the whole capacity, its DSEMTS and three DSLBIS.
    assert entries == 1 + 5
    typ, _, ln, _, _, _, base, size = struct.unpack_from("<BBHBBHQQ", table, 16)
    assert (typ, ln, base, size) == (0, 24, 0, CAP)
    # The figures are the device's own, from the system's parameters (what the CDAT builder is given).
    fig = _core.acpi.device_cdat(graph, comp, CAP)
    assert table == _core.acpi.cdat([dict(handle=0, dpa_base=0, **fig)])
    assert cxlio.read_cdat(dev) == table


def test_a_malformed_doe_request_sets_error_until_abort(dev):
    at = doe_of(dev)
    n = dev.stats()["doe_errors"]
    assert doe(dev, [CXL_VENDOR | 2 << 16, 4, 0, 0]) is None  # wrong length for Table Access
    assert dev.config_read(at + 0x0C, 4) & 0x4
    assert doe(dev, [0x0001, 3, 0]) is None  # refused while the error stands
    dev.config_write(at + 0x08, 4, 1)  # Abort
    assert dev.config_read(at + 0x0C, 4) == 0
    assert doe(dev, [CXL_VENDOR | 2 << 16, 3, 999 << 16]) is None  # no such entry
    dev.config_write(at + 0x08, 4, 1)
    assert doe(dev, [0x1234 | 7 << 16, 3, 0]) is None  # unknown protocol
    dev.config_write(at + 0x08, 4, 1)
    dev.config_write(at + 0x10, 2, 5)  # the mailboxes are dword registers
    assert doe(dev, [0x0001, 3, 0])[2] >> 24 == 1
    assert dev.stats()["doe_errors"] == n + 4
# --- register blocks ---------------------------------------------------------------------------------

def test_register_locator_leads_to_component_and_memdev_blocks_as_cxl_pci_probes_them(dev):
    bir, comp = find_regblock(dev, RBI_COMPONENT)
    bir2, mdev = find_regblock(dev, RBI_MEMDEV)
    assert bir == bir2 == 0 and comp % 0x10000 == 0 and mdev % 0x10000 == 0 and comp != mdev
    assert max(comp, mdev) + 0x10000 <= dev.bar_bytes
    caps = component_caps(dev, comp)
    assert set(caps) == {CAP_ID_RAS, CAP_ID_LINK, CAP_ID_HDM}
    # HDM Decoder Capability: count code 2 -> 4 decoders (cxl_hdm_decoder_count), no target list
    # (an endpoint), 3/6/12- and 16-way capable, granularity from address bits 8-14.
    hdm = dev.mmio_read(caps[CAP_ID_HDM], 4)
    count = hdm & 0xF
    assert (count * 2 if count else 1) == 4 and (hdm >> 4) & 0xF == 0
    assert hdm & (1 << 8) and hdm & (1 << 9) and hdm & (1 << 11) and hdm & (1 << 12)
    dc = device_caps(dev, mdev)
    assert set(dc) == {0x1, 0x2, 0x4000}  # device status, primary mailbox, memory device
    mbox, mlen = dc[0x2]
    payload = 1 << (dev.mmio_read(mbox + MB_CAPS, 4) & 0x1F)
    assert payload >= 256 and mlen >= MB_PAYLOAD + payload  # cxl_pci_setup_mailbox's minimum
    status = dev.mmio_read(dc[0x4000][0], 8)
    assert (status >> 2) & 3 == 1 and status & (1 << 4)  # media ready, mailbox interface ready
    dev.set_media_ready(False)
    assert (dev.mmio_read(dc[0x4000][0], 8) >> 2) & 3 == 0


def test_ras_status_bits_are_rw1c_and_the_first_error_pointer_names_the_first(dev):
    _, comp = find_regblock(dev, RBI_COMPONENT)
    ras = component_caps(dev, comp)[CAP_ID_RAS]
    dev.inject_ras(True, 3)
    dev.inject_ras(True, 14)
    dev.inject_ras(False, 6)
    assert dev.mmio_read(ras + 0x0, 4) == 1 << 3 | 1 << 14
    assert dev.mmio_read(ras + 0x14, 4) & 0x3F == 3  # First Error Pointer
    dev.mmio_write(ras + 0x0, 4, 0)  # writing 0 clears nothing
    assert dev.mmio_read(ras + 0x0, 4) == 1 << 3 | 1 << 14
    dev.mmio_write(ras + 0x0, 4, 1 << 3 | 1 << 20)  # clears bit 3 only (bit 20 does not exist)
    assert dev.mmio_read(ras + 0x0, 4) == 1 << 14
    assert dev.mmio_read(ras + 0xC, 4) == 1 << 6
    dev.mmio_write(ras + 0xC, 4, 0xFFFFFFFF)
    assert dev.mmio_read(ras + 0xC, 4) == 0
    dev.mmio_write(ras + 0x4, 4, 0xFFFFFFFF)  # mask: only the defined bits stick
    assert dev.mmio_read(ras + 0x4, 4) == 0x1CFFF
    with pytest.raises(_core.ConfigError, match=r"bit = 12 is not allowed; allowed: 0 to 11, 14 to 16"):
        dev.inject_ras(True, 12)
    with pytest.raises(_core.ConfigError, match=r"bit = 40 is out of range"):
        dev.inject_ras(False, 40)


@pytest.mark.parametrize("offset,size", [(0x1000, 2), (0x1001, 4), (0x1004, 8), (0x1000, 1), (0x20000, 4),
                                         (0x1FFFC, 8), (1 << 50, 4)])
def test_malformed_mmio_accesses_are_counted_and_dropped(dev, offset, size):
    n = dev.stats()["bad_mmio_accesses"]
    hdm = hdm_of(dev)
    before = [dev.mmio_read(hdm + o, 4) for o in range(0, 0x90, 4)]
    assert dev.mmio_read(offset, size) == (1 << (8 * size)) - 1
    dev.mmio_write(offset, size, 0)
    assert dev.stats()["bad_mmio_accesses"] == n + 2
    assert [dev.mmio_read(hdm + o, 4) for o in range(0, 0x90, 4)] == before


# --- HDM decoders -------------------------------------------------------------------------------------

def test_endpoint_decoders_commit_in_order_and_report_their_hpa_and_dpa_ranges(dev):
    hdm = hdm_of(dev)
    dev.mmio_write(hdm + HDM_GLOBAL_CTRL, 4, HDM_ENABLE)  # devm_cxl_enable_hdm
    assert dev.hdm_enabled
    # Region 1: 4 GiB at 64 GiB, 2-way at 1 KiB (IG 2, IW 1): the device holds 2 GiB of it.
    ctrl = commit(dev, hdm, 0, 64 * GiB, 4 * GiB, ig=2, iw=1)
    assert ctrl & COMMITTED and not ctrl & COMMIT_ERROR
    # Region 2: 1 GiB, 1-way at 256 B, after skipping 512 MiB of DPA.
    ctrl = commit(dev, hdm, 1, 80 * GiB, 1 * GiB, tl=512 * MiB)
    assert ctrl & COMMITTED
    got = dev.committed_decoders()
    assert [(d["index"], d["base"], d["size"], d["ways"], d["granularity"], d["dpa_base"], d["dpa_size"])
            for d in got] == [(0, 64 * GiB, 4 * GiB, 2, 1024, 0, 2 * GiB),
                              (1, 80 * GiB, 1 * GiB, 1, 256, 2 * GiB + 512 * MiB, 1 * GiB)]
    assert all(d["host_only"] and not d["locked"] and d["targets"] == [] for d in got)
    assert dev.stats()["commits"] == 2 and dev.stats()["commit_errors"] == 0
    # cxl_decoder_reset, last first: uncommitted, and gone from what the engine routes by.
    assert not reset(dev, hdm, 1) & COMMITTED
    assert [d["index"] for d in dev.committed_decoders()] == [0]


def test_host_bridge_decoder_interleaves_over_the_target_ports_it_names():
    hb = X.HostBridgeRegisters(hdm_decoders=1, targets=4)
    caps = component_caps(hb, 0)
    hdm = caps[CAP_ID_HDM]
    cap = hb.mmio_read(hdm, 4)
    assert cap & 0xF == 0 and (cap >> 4) & 0xF == 4  # one decoder, four targets
    # 4-way over ports 7, 3, 1, 0 at 4 KiB (IG 4, IW 2): target list bytes, way 0 in the low byte.
    ctrl = commit(hb, hdm, 0, 0x10_0000_0000, 8 * GiB, ig=4, iw=2, tl=0x00_01_03_07)
    assert ctrl & COMMITTED
    d, = hb.committed_decoders()
    assert (d["base"], d["size"], d["ways"], d["granularity"], d["targets"]) == (0x10_0000_0000, 8 * GiB, 4, 4096,
                                                                                  [7, 3, 1, 0])


@pytest.mark.parametrize("case", ["overlap", "out_of_order", "below_previous", "misaligned_3way", "bad_iw",
                                  "bad_ig", "past_capacity", "too_many_ways", "past_52_bits"])
def test_a_bad_decoder_commit_sets_error_not_committed(case):
    hb = case == "too_many_ways"
    fn = X.HostBridgeRegisters(hdm_decoders=4, targets=2) if hb else X.Type3(CAP)
    hdm = component_caps(fn, 0)[CAP_ID_HDM]
    if case in ("overlap", "below_previous"):
        assert commit(fn, hdm, 0, 64 * GiB, 2 * GiB) & COMMITTED
    i, base, size, ig, iw = 0, 64 * GiB, GiB, 0, 0
    if case == "overlap":
        i, base = 1, 65 * GiB  # inside decoder 0's [64, 66) GiB
    elif case == "below_previous":
        i, base = 1, 32 * GiB  # decoders' bases rise with their index
    elif case == "out_of_order":
        i = 1  # decoder 0 not committed
    elif case == "misaligned_3way":
        iw, size = 8, 2 * GiB  # 3-way needs a multiple of 768 MiB
    elif case == "bad_iw":
        iw = 5
    elif case == "bad_ig":
        ig = 7  # 32 KiB: past 16 KiB
    elif case == "past_capacity":
        size = 2 * CAP  # one way: DPA range twice the device's memory
    elif case == "too_many_ways":
        iw, size = 2, 4 * GiB  # 4 ways over a 2-port target list
    elif case == "past_52_bits":
        base = (1 << 52) - GiB
        size = 2 * GiB
    n = fn.stats()["commit_errors"]
    ctrl = commit(fn, hdm, i, base, size, ig=ig, iw=iw, tl=0x0100 if hb else 0)
    assert ctrl & COMMIT_ERROR and not ctrl & COMMITTED
    assert fn.stats()["commit_errors"] == n + 1
    assert fn.last_commit_error.startswith(f"decoder {i}: ")
    assert [d["index"] for d in fn.committed_decoders()] == ([0] if case in ("overlap", "below_previous") else [])
    # Clearing Commit clears the error; a good configuration then commits.
    assert not reset(fn, hdm, i) & (COMMIT_ERROR | COMMITTED)


def test_lock_on_commit_freezes_the_decoder_and_unlocked_ones_change_only_once_uncommitted(dev):
    hdm = hdm_of(dev)
    assert commit(dev, hdm, 0, 64 * GiB, GiB, lock=True) & COMMITTED
    n = dev.stats()["locked_writes"]
    dev.mmio_write(hdm + BASE_LO(0), 4, 0)
    dev.mmio_write(hdm + CTRL(0), 4, 0)  # not even Commit can be cleared
    assert dev.mmio_read(hdm + CTRL(0), 4) & COMMITTED and dev.stats()["locked_writes"] == n + 2
    assert dev.committed_decoders()[0]["locked"] and dev.committed_decoders()[0]["base"] == 64 * GiB
    # Decoder 1 without the lock: a committed decoder's base is held until Commit is cleared.
    assert commit(dev, hdm, 1, 66 * GiB, GiB) & COMMITTED
    dev.mmio_write(hdm + BASE_HI(1), 4, 0x20)
    assert dev.committed_decoders()[1]["base"] == 66 * GiB and dev.stats()["locked_writes"] == n + 3
    reset(dev, hdm, 1)
    dev.mmio_write(hdm + BASE_HI(1), 4, 0x20)
    assert dev.mmio_read(hdm + BASE_HI(1), 4) == 0x20


def test_decoders_uncommit_last_first(dev):
    hdm = hdm_of(dev)
    assert commit(dev, hdm, 0, 64 * GiB, GiB) & COMMITTED and commit(dev, hdm, 1, 65 * GiB, GiB) & COMMITTED
    n = dev.stats()["locked_writes"]
    # Decoder 1's device range starts where decoder 0's ends: 0 holds while 1 is committed.
    assert reset(dev, hdm, 0) & COMMITTED and dev.stats()["locked_writes"] == n + 5
    assert not reset(dev, hdm, 1) & COMMITTED and not reset(dev, hdm, 0) & COMMITTED
    assert dev.committed_decoders() == []


def test_64_bit_accesses_program_the_two_halves_of_a_decoder_register(dev):
    hdm = hdm_of(dev)
    dev.mmio_write(hdm + BASE_LO(0), 8, 0x11_F000_0000 | 0x0FFF_FFFF)  # reserved low bits read 0
    assert dev.mmio_read(hdm + BASE_LO(0), 8) == 0x11_F000_0000
    dev.mmio_write(hdm + SIZE_LO(0), 8, GiB)
    dev.mmio_write(hdm + CTRL(0), 4, COMMIT | HOSTONLY)
    assert dev.committed_decoders()[0]["base"] == 0x11_F000_0000


# --- mailbox ------------------------------------------------------------------------------------------

def test_identify_reports_capacity_in_256_mib_units_and_the_lsa_size():
    dev = X.Type3(CAP, lsa_bytes=4096)
    rc, out = dev.mailbox(0x4000)
    assert rc == RC_SUCCESS and len(out) == 0x43  # CXL 2.0 table 175
    total, vol, pers, align = struct.unpack_from("<QQQQ", out, 0x10)
    assert (total, vol, pers, align) == (CAP // (256 * MiB), CAP // (256 * MiB), 0, 0)
    assert struct.unpack_from("<I", out, 0x38)[0] == 4096
    assert out[:6] == b"SimCXL"


def test_partition_health_events_and_timestamp_commands_return_the_specified_sizes(dev):
    rc, out = dev.mailbox(0x4100)
    assert rc == 0 and len(out) == 32 and struct.unpack("<4Q", out) == (CAP >> 28, 0, 0, 0)
    rc, out = dev.mailbox(0x4200)
    assert rc == 0 and len(out) == 0x12 and out[0] == 0 and out[1] == 0  # healthy, media normal
    for log in range(4):  # info, warning, failure, fatal
        rc, out = dev.mailbox(0x0100, bytes([log]))
        assert rc == 0 and len(out) == 0x20 and struct.unpack_from("<H", out, 0x14)[0] == 0  # no records
    assert dev.mailbox(0x0100, bytes([4]))[0] == RC_INPUT
    assert dev.mailbox(0x0101, bytes([0, 1, 0, 0, 0, 0]))[0] == RC_SUCCESS  # clear all
    assert dev.mailbox(0x0101, bytes([0, 0, 1, 0, 0, 0, 5, 0]))[0] == RC_HANDLE  # no record 5
    assert dev.mailbox(0x0301, struct.pack("<Q", 123456789))[0] == RC_SUCCESS
    assert dev.mailbox(0x0300) == (0, struct.pack("<Q", 123456789))
    assert dev.mailbox(0x0103, bytes([1, 1, 0, 2]))[0] == RC_SUCCESS
    assert dev.mailbox(0x0102) == (0, bytes([1, 1, 0, 2]))
    assert dev.mailbox(0x0103, bytes([3, 0, 0, 0]))[0] == RC_INPUT  # mode 3 is reserved


def test_label_storage_area_round_trips_and_refuses_ranges_past_its_end():
    dev = X.Type3(CAP, lsa_bytes=1024)
    data = bytes(range(200))
    assert dev.mailbox(0x4103, struct.pack("<II", 800, 0) + data)[0] == RC_SUCCESS
    rc, out = dev.mailbox(0x4102, struct.pack("<II", 800, 200))
    assert rc == 0 and out == data
    assert dev.mailbox(0x4102, struct.pack("<II", 0, 4))[1] == bytes(4)  # never written: zeros
    assert dev.mailbox(0x4102, struct.pack("<II", 1000, 25))[0] == RC_INPUT
    assert dev.mailbox(0x4103, struct.pack("<II", 1020, 0) + bytes(5))[0] == RC_INPUT
    assert dev.mailbox(0x4102, struct.pack("<I", 0))[0] == RC_PAYLOADLEN


def test_poison_list_reports_injected_lines_within_the_asked_range(dev):
    rc, out = dev.mailbox(0x4300, struct.pack("<QQ", 0, CAP // 64))
    assert rc == 0 and len(out) == 0x20 and struct.unpack_from("<H", out, 0x0A)[0] == 0
    for dpa in (0x1000, 0x40_0000, 0x2000):
        assert dev.mailbox(0x4301, struct.pack("<Q", dpa))[0] == RC_SUCCESS
    rc, out = dev.mailbox(0x4300, struct.pack("<QQ", 0, 0x10_0000 // 64))  # the first MiB
    assert rc == 0 and struct.unpack_from("<H", out, 0x0A)[0] == 2 and len(out) == 0x20 + 2 * 16
    recs = [struct.unpack_from("<QI", out, 0x20 + 16 * k) for k in range(2)]
    assert recs == [(0x1000 | 3, 1), (0x2000 | 3, 1)]  # source 3: injected; one 64-byte line each
    assert dev.mailbox(0x4302, struct.pack("<Q", 0x1000) + bytes(64))[0] == RC_SUCCESS
    rc, out = dev.mailbox(0x4300, struct.pack("<QQ", 0, 0x10_0000 // 64))
    assert struct.unpack_from("<H", out, 0x0A)[0] == 1
    assert dev.mailbox(0x4300, struct.pack("<QQ", 0x20, 1))[0] == RC_INPUT  # not 64-byte aligned
    assert dev.mailbox(0x4300, struct.pack("<QQ", CAP - 64, 2))[0] == RC_PADDR  # past the capacity
    assert dev.mailbox(0x4301, struct.pack("<Q", CAP))[0] == RC_PADDR


def test_command_effects_log_lists_every_command_that_succeeds(dev):
    rc, out = dev.mailbox(0x0400)
    assert rc == 0 and len(out) == 8 + 20 and struct.unpack_from("<H", out)[0] == 1
    assert out[8:24] == CEL_UUID
    size = struct.unpack_from("<I", out, 24)[0]
    rc, cel = dev.mailbox(0x0401, CEL_UUID + struct.pack("<II", 0, size))
    assert rc == 0 and len(cel) == size
    ops = {struct.unpack_from("<H", cel, k)[0] for k in range(0, size, 4)}
    assert {0x4000, 0x4100, 0x4102, 0x4103, 0x4200, 0x0100, 0x4300, 0x0400, 0x0401} <= ops
    assert dev.mailbox(0x0401, bytes(16) + struct.pack("<II", 0, 4))[0] == RC_LOG  # no such log
    assert dev.mailbox(0x0401, CEL_UUID + struct.pack("<II", size - 4, 8))[0] == RC_INPUT
    # Every opcode outside the log is unsupported.
    for op in (0x0000, 0x0200, 0x4101, 0x4400, 0x4500, 0xC000, 0xFFFF):
        assert op not in ops and dev.mailbox(op) == (RC_UNSUPPORTED, b"")


def test_payload_lengths_the_command_does_not_take_are_refused(dev):
    assert dev.mailbox(0x4000, b"\0")[0] == RC_PAYLOADLEN  # Identify takes no input
    assert dev.mailbox(0x4300, bytes(15))[0] == RC_PAYLOADLEN
    assert dev.mailbox(0x4000, length=X.PAYLOAD_BYTES + 1)[0] == RC_PAYLOADLEN  # past the payload registers
    s = dev.stats()
    assert s["mailbox_commands"] == 3 and s["mailbox_failures"] == 3


# --- ports --------------------------------------------------------------------------------------------

def test_root_port_is_a_type1_bridge_with_port_dvsecs_and_component_registers_without_decoders():
    rp = X.Port("root", port_number=3)
    assert rp.config_read(0x08, 4) >> 8 == 0x060400 and rp.config_read(0x0E, 1) & 0x7F == 1
    cap = rp.config_read(0x34, 1)
    assert (rp.config_read(cap + 2, 2) >> 4) & 0xF == 4  # root port
    assert rp.config_read(cap + 0x0C, 4) >> 24 == 3  # the port number decoders' target lists name
    for dvsec_id in (DVSEC_PORT_EXT, DVSEC_PORT_GPF, DVSEC_FLEXBUS, DVSEC_REGLOC):
        assert find_dvsec(rp, dvsec_id) is not None
    assert find_dvsec(rp, DVSEC_DEVICE) is None
    _, comp = find_regblock(rp, RBI_COMPONENT)
    assert set(component_caps(rp, comp)) == {CAP_ID_RAS, CAP_ID_LINK}
    assert rp.committed_decoders() == [] and not rp.hdm_enabled
    rp.config_write(0x18, 4, 0x00_05_04_00)  # primary 0, secondary 4, subordinate 5
    assert rp.config_read(0x18, 4) & 0xFFFFFF == 0x050400


def test_switch_upstream_port_routes_by_its_own_decoders():
    usp = X.Port("switch_upstream", hdm_decoders=2, targets=2)
    assert find_dvsec(usp, DVSEC_PORT_GPF) is None  # port GPF: root and downstream ports only
    _, comp = find_regblock(usp, RBI_COMPONENT)
    hdm = component_caps(usp, comp)[CAP_ID_HDM]
    assert (usp.mmio_read(hdm, 4) >> 4) & 0xF == 2
    assert commit(usp, hdm, 0, 64 * GiB, 2 * GiB, ig=0, iw=1, tl=0x0201) & COMMITTED
    assert usp.committed_decoders()[0]["targets"] == [1, 2]


# --- bad input from Python ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(capacity_bytes=GiB + 1), r"capacity_bytes = 1073741825 is not allowed; allowed: a multiple of 256 MiB"),
    (dict(capacity_bytes=0), r"capacity_bytes = 0 is out of range; allowed: 1 to"),
    (dict(capacity_bytes="1G"), r"capacity_bytes = '1G' is not a whole number"),
    (dict(capacity_bytes=GiB, hdm_decoders=3), r"hdm_decoders = 3 is not allowed; allowed: 1, 2, 4, 6, 8 or 10"),
    (dict(capacity_bytes=GiB, hdm_decoders=11), r"hdm_decoders = 11 is out of range; allowed: 1 to 10"),
    (dict(capacity_bytes=GiB, lsa_bytes=-1), r"lsa_bytes = -1 is out of range; allowed: 0 to 1048576"),
    (dict(capacity_bytes=GiB, system={"components": {}}), r"component: name the type3 component"),
])
def test_bad_device_parameters_name_the_parameter_and_the_allowed_range(kwargs, match):
    with pytest.raises(_core.ConfigError, match=match):
        X.Type3(**kwargs)


def test_bad_port_and_access_arguments_name_what_is_allowed(dev):
    with pytest.raises(_core.ConfigError, match=r"kind = 'leaf' is not allowed; allowed: root, switch_upstream"):
        X.Port("leaf")
    with pytest.raises(_core.ConfigError, match=r"port_number = 256 is out of range; allowed: 0 to 255"):
        X.Port("root", port_number=256)
    with pytest.raises(_core.ConfigError, match=r"targets = 3 is not allowed; allowed: 1, 2, 4 or 8"):
        X.Port("switch_upstream", hdm_decoders=1, targets=3)
    with pytest.raises(_core.ConfigError, match=r"hdm_decoders = 0 is not allowed"):
        X.Port("switch_upstream")
    with pytest.raises(_core.ConfigError, match=r"payload is 2049 bytes; allowed: at most 2048"):
        dev.mailbox(0x4000, bytes(2049))
    with pytest.raises(_core.ConfigError, match=r"opcode = 65536 is out of range; allowed: 0 to 65535"):
        dev.mailbox(0x10000)
    with pytest.raises(_core.ConfigError, match=r"offset = -4 is out of range"):
        dev.config_read(-4)
    with pytest.raises(_core.ConfigError, match=r"value = 4294967296 is out of range; allowed: 0 to 4294967295"):
        dev.config_write(0x04, 4, 1 << 32)


# --- fuzz ---------------------------------------------------------------------------------------------

# Offsets anywhere, and often where the behaviour is: DVSECs and DOE, the HDM decoders, the mailbox.
OFFSET = st.one_of(st.integers(0, 0x21000), st.integers(0x100, 0x1A0), st.integers(0x1100, 0x11A0),
                   st.integers(0x10200, 0x10240))
# Values anywhere, and often control words: Commit with ways and granularity codes, Go, Abort, doorbell.
VALUE = st.one_of(st.integers(0, (1 << 64) - 1), st.sampled_from([0, 1, 2, 0x200, 0x210, 0x1284, 0x1200, 1 << 31,
                                                                  0x1000_0000, 0x4000_0000, 0xFFFF_FFFF]))
ACCESS = st.tuples(st.sampled_from(["config", "mmio"]), OFFSET, st.sampled_from([0, 1, 2, 3, 4, 8]), VALUE)


@fuzz(100)
@given(st.lists(ACCESS, max_size=60), st.lists(st.tuples(st.integers(0, 0xFFFF), st.binary(max_size=40)), max_size=6))
def test_random_config_mmio_and_mailbox_traffic_never_breaks_the_function(accesses, commands):
    dev = X.Type3(CAP)
    ident = [dev.config_read(o, 4) for o in (0x00, 0x08)]
    chain = ext_caps(dev)
    headers = [(dev.config_read(o + 4, 4), dev.config_read(o + 8, 2)) for o, _ in chain]
    for kind, off, size, value in accesses:
        if kind == "config":
            dev.config_write(off, size, value & 0xFFFFFFFF)
            dev.config_read(off, size)
        else:
            dev.mmio_write(off, size, value)
            dev.mmio_read(off, size)
    for op, payload in commands:
        rc, out = dev.mailbox(op, payload)
        assert rc in (0, 2, 3, 0xE, 0xF, 0x10, 0x16, 0x17) and len(out) <= X.PAYLOAD_BYTES
    # Identification, the capability chain and the DVSEC headers are read-only whatever was written.
    assert [dev.config_read(o, 4) for o in (0x00, 0x08)] == ident and ext_caps(dev) == chain
    assert [(dev.config_read(o + 4, 4), dev.config_read(o + 8, 2)) for o, _ in chain] == headers
    # Whatever committed obeys the rules a commit checks.
    ds = dev.committed_decoders()
    assert [d["index"] for d in ds] == list(range(len(ds)))
    for a, b in zip(ds, ds[1:]):
        assert a["base"] + a["size"] <= b["base"]
    assert all(d["dpa_base"] + d["dpa_size"] <= CAP and d["size"] % (d["ways"] << 28) == 0 for d in ds)


def ways_of(iw):
    """eiw_to_ways (cxl.h): 0-4 are 1-16 ways, 8-10 are 3, 6 and 12; others are invalid."""
    return 1 << iw if iw <= 4 else 3 << (iw - 8) if 8 <= iw <= 10 else None


class DecoderOracle:
    """The commit rules as written in CXL 3.1 section 8.2.4.20 and the issue, kept apart from the model:
    a decoder commits when its encodings are legal, its size a multiple of ways x 256 MiB, it fits
    52 bits, the one before it is committed and ends at or below its base, it overlaps no committed
    decoder and its device range fits the capacity; committed decoders hold their registers and
    uncommit last first."""

    def __init__(self, n, capacity):
        self.r = [dict(base=0, size=0, ig=0, iw=0, skip=0, committed=False, error=False) for _ in range(n)]
        self.cap = capacity

    def dpa_end(self, i):
        end = 0
        for d in self.r[:i + 1]:
            end += d["skip"] + d["size"] // (ways_of(d["iw"]) or 1)
        return end

    def commit(self, i, base, size, ig, iw, skip):
        d = self.r[i]
        if d["committed"]:
            return
        d.update(base=base, size=size, ig=ig, iw=iw, skip=skip)
        ways = ways_of(iw)
        ok = ig <= 6 and ways is not None and size % (ways << 28) == 0 and base + size <= 1 << 52
        ok = ok and (i == 0 or self.r[i - 1]["committed"])
        for j, o in enumerate(self.r):
            if j != i and o["committed"]:
                ok = ok and not (size and o["size"] and base < o["base"] + o["size"] and o["base"] < base + size)
                ok = ok and not (j < i and base < o["base"] + o["size"])
        ok = ok and self.dpa_end(i) <= self.cap
        d.update(committed=ok, error=not ok)

    def reset(self, i):
        d = self.r[i]
        if d["committed"] and i + 1 < len(self.r) and self.r[i + 1]["committed"]:
            return
        d.update(committed=False, error=False, base=0, size=0)


STEP = st.tuples(st.sampled_from(["commit", "commit", "reset"]), st.integers(0, 3), st.integers(0, 40),
                 st.integers(0, 12), st.integers(0, 7), st.sampled_from([0, 1, 2, 3, 4, 5, 8, 9, 10, 11]),
                 st.integers(0, 3))


@fuzz(80)
@given(st.lists(STEP, max_size=25))
def test_commits_follow_the_rules_whatever_the_order(steps):
    cap = 4 * GiB
    dev, oracle = X.Type3(cap), DecoderOracle(4, cap)
    hdm = hdm_of(dev)
    for action, i, base, size, ig, iw, skip in steps:
        base, size, skip = base << 28, size << 28, skip << 28
        if action == "commit":
            commit(dev, hdm, i, base, size, ig=ig, iw=iw, tl=skip)
            oracle.commit(i, base, size, ig, iw, skip)
        else:
            reset(dev, hdm, i)
            oracle.reset(i)
        for k, d in enumerate(oracle.r):
            ctrl = dev.mmio_read(hdm + CTRL(k), 4)
            assert (bool(ctrl & COMMITTED), bool(ctrl & COMMIT_ERROR)) == (d["committed"], d["error"]), (k, steps)
    want = [(k, d["base"], d["size"], ways_of(d["iw"]), 256 << d["ig"], oracle.dpa_end(k) - d["size"] // ways_of(d["iw"]))
            for k, d in enumerate(oracle.r) if d["committed"]]
    assert [(d["index"], d["base"], d["size"], d["ways"], d["granularity"], d["dpa_base"])
            for d in dev.committed_decoders()] == want


# --- checkpoints ---------------------------------------------------------------------------------------

def _programmed():
    """A Type-3 device as Linux leaves it at the shell: BAR 0 placed and memory space on, a decoder
    committed, HDM enabled, a timestamp, label data and a poisoned line."""
    fn = X.Type3(CAP, lsa_bytes=1024)
    fn.config_write(0x10, 4, 0xFE00_0000)
    fn.config_write(0x14, 4, 0x1)
    fn.config_write(0x04, 2, 0x6)
    cxlio.commit_decoder(fn, 0, 1 << 32, 1 << 30)
    cxlio.enable_hdm(fn)
    assert fn.mailbox(0x0301, struct.pack("<Q", 987654321))[0] == RC_SUCCESS
    assert fn.mailbox(0x4103, struct.pack("<II", 64, 0) + bytes(range(32)))[0] == RC_SUCCESS
    assert fn.mailbox(0x4301, struct.pack("<Q", 0x4000))[0] == RC_SUCCESS
    return fn


def _visible(fn):
    """Everything software reads: configuration space, both register blocks, mailbox answers."""
    bar = fn.bar_bytes
    return (snapshot(fn), [fn.mmio_read(o, 4) for o in range(0, bar, 4)], fn.committed_decoders(),
            fn.hdm_enabled, fn.bar_address, fn.mailbox(0x0300), fn.mailbox(0x4102, struct.pack("<II", 64, 32)),
            fn.mailbox(0x4300, struct.pack("<QQ", 0, CAP // 64)))


def test_a_restored_function_reads_as_the_saved_one():
    """A simulator checkpoint keeps what software programmed: a fresh function loaded with a
    programmed one's state reads the same everywhere (the second method: the original's reads)."""
    fn = _programmed()
    fresh = X.Type3(CAP, lsa_bytes=1024)
    assert fresh.bar_address == 0 and fresh.committed_decoders() == []
    fresh.load_state(fn.save_state())
    assert _visible(fresh) == _visible(fn)
    assert fresh.bar_address == 0x1_FE00_0000 and fresh.committed_decoders()[0]["base"] == 1 << 32


def test_a_restored_bridge_routes_by_its_saved_decoders():
    hb = X.HostBridgeRegisters(hdm_decoders=2, targets=2)
    cxlio.commit_decoder(hb, 0, 1 << 40, 2 << 30, ways=2, granularity=4096, targets=[1, 0])
    fresh = X.HostBridgeRegisters(hdm_decoders=2, targets=2)
    fresh.load_state(hb.save_state())
    assert fresh.committed_decoders() == hb.committed_decoders()
    assert fresh.committed_decoders()[0]["targets"] == [1, 0]


@pytest.mark.parametrize("other,cut", [(lambda: X.Port("root", port_number=0), 0),
                                       (lambda: X.Type3(CAP, lsa_bytes=4096), 0),
                                       (lambda: X.Type3(CAP, lsa_bytes=1024), 7)])
def test_a_state_of_another_function_or_cut_short_is_refused(other, cut):
    state = _programmed().save_state()
    with pytest.raises(_core.ConfigError, match=r"saved CXL.io state does not fit this function .*allowed: a "
                                                r"state saved by a function of the same kind and parameters"):
        other().load_state(state[:len(state) - cut])
