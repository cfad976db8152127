"""The namespace Linux's CXL drivers start from (ext/cxlcore/platform/aml.cpp): a DSDT declaring the
CXL root (ACPI0017), each CXL host bridge as a PCIe root bridge (ACPI0016, _CID PNP0A08/PNP0A03) with
its CHBS UID, segment, root bus and windows, a PNP0C02 device reserving the ECAM ranges, and the MCFG.

Readers independent of the builder: a decoder written here from ACPI 6.5 chapter 20 (AML encoding) and
section 6.4.3.5 (address space descriptors) and from PCI Firmware 3.3 section 4.1.2 (MCFG), which runs
everywhere; and, where Debian's acpica-tools are installed, ACPICA itself: `iasl -d` disassembles the
DSDT and recompiling its output gives back our bytes, and `acpiexec` loads the namespace as Linux's
ACPI core does and evaluates each bridge's objects."""

import re
import shutil
import struct
import subprocess

import pytest

from simcxl import _core

A = _core.acpi
MiB, GiB = 1 << 20, 1 << 30
IASL, ACPIEXEC = shutil.which("iasl"), shutil.which("acpiexec")

BRIDGES = [dict(uid=7, first_bus=0x10, last_bus=0x1F, mmio_base=0x30_0000_0000, mmio_size=GiB),
           dict(uid=9, first_bus=0x20, last_bus=0x2F, mmio_base=0x30_4000_0000, mmio_size=2 * GiB)]
ECAM = [dict(base=0xB000_0000, first_bus=0x10, last_bus=0x2F)]


def dsdt(bridges=BRIDGES, ecam=ECAM):
    return A.table("DSDT", A.REVISIONS["DSDT"], A.dsdt(bridges, ecam))


# ------------------------------------------------------------------ a reader of the AML subset

def pkg_length(b, i):
    """(length, bytes it took) of the PkgLength at b[i] (ACPI 6.5 section 20.2.4)."""
    lead = b[i]
    follow = lead >> 6
    if follow == 0:
        return lead & 0x3F, 1
    n = lead & 0x0F
    for k in range(follow):
        n |= b[i + 1 + k] << (4 + 8 * k)
    return n, 1 + follow


def eisa(v):
    """A compressed EISA ID as text: three 5-bit letters, then four hex digits (byte order of the DWord)."""
    raw = struct.pack("<I", v)
    vendor = raw[0] << 8 | raw[1]
    return "".join(chr(0x40 + (vendor >> s & 0x1F)) for s in (10, 5, 0)) + f"{raw[2]:02X}{raw[3]:02X}"


def data(b, i):
    """(value, next index) of a DataRefObject: integers, strings, packages and buffers."""
    op = b[i]
    if op in (0x00, 0x01):
        return op, i + 1
    sizes = {0x0A: 1, 0x0B: 2, 0x0C: 4, 0x0E: 8}
    if op in sizes:
        n = sizes[op]
        return int.from_bytes(b[i + 1:i + 1 + n], "little"), i + 1 + n
    if op == 0x0D:
        end = b.index(0, i + 1)
        return b[i + 1:end].decode(), end + 1
    if op in (0x11, 0x12):
        length, took = pkg_length(b, i + 1)
        end = i + 1 + length
        j = i + 1 + took
        if op == 0x12:
            count, j = b[j], j + 1
            items = []
            for _ in range(count):
                v, j = data(b, j)
                items.append(v)
            return items, end
        size, j = data(b, j)
        return bytes(b[j:j + size]), end
    raise AssertionError(f"opcode {op:#x} at {i} is not in the subset")


def objects(b, i, end, path):
    """Every Name below a Scope or Device, as {path: value}."""
    out = {}
    while i < end:
        if b[i] == 0x10:  # ScopeOp
            length, took = pkg_length(b, i + 1)
            name = b[i + 1 + took:i + 5 + took].decode()
            out.update(objects(b, i + 5 + took, i + 1 + length, f"{path}{name}."))
            i += 1 + length
        elif b[i:i + 2] == b"\x5b\x82":  # DeviceOp
            length, took = pkg_length(b, i + 2)
            name = b[i + 2 + took:i + 6 + took].decode()
            out[f"{path}{name}"] = "device"
            out.update(objects(b, i + 6 + took, i + 2 + length, f"{path}{name}."))
            i += 2 + length
        elif b[i] == 0x08:  # NameOp
            name = b[i + 1:i + 5].decode()
            out[f"{path}{name}"], i = data(b, i + 5)
        elif b[i] == 0x14:  # MethodOp: its whole encoding, read by the tests of the method
            length, took = pkg_length(b, i + 1)
            out[f"{path}{b[i + 1 + took:i + 5 + took].decode()}"] = bytes(b[i:i + 1 + length])
            i += 1 + length
        else:
            raise AssertionError(f"opcode {b[i]:#x} at {i} is not in the subset")
    return out


def descriptors(buf):
    """A ResourceTemplate's address space descriptors (ACPI 6.5 section 6.4.3.5): (kind, resource type,
    consumer, min, max, length); the End Tag must close it."""
    out, i = [], 0
    while True:
        tag = buf[i]
        if tag == 0x79:
            assert i + 2 == len(buf)
            return out
        length = struct.unpack_from("<H", buf, i + 1)[0]
        rtype, flags = buf[i + 3], buf[i + 4]
        assert flags & 0x0C == 0x0C  # MinFixed, MaxFixed
        fmt = {0x88: "<5H", 0x8A: "<5Q"}[tag]
        _gran, lo, hi, _tra, ln = struct.unpack_from(fmt, buf, i + 6)
        out.append(({0x88: "word", 0x8A: "qword"}[tag], rtype, flags & 1, lo, hi, ln))
        i += 3 + length


def test_the_namespace_declares_the_cxl_root_each_bridge_as_a_pcie_root_and_the_ecam_reservation():
    raw = dsdt()
    assert raw[:4] == b"DSDT" and sum(raw) % 256 == 0 and raw[8] == 2  # revision 2: 64-bit integers
    ns = objects(raw, 36, len(raw), "\\")
    assert ns["\\_SB_.CXLR._HID"] == "ACPI0017"
    for i, b in enumerate(BRIDGES):
        d = f"\\_SB_.HB{i:02X}."
        assert ns[d + "_HID"] == "ACPI0016"
        assert [eisa(v) for v in ns[d + "_CID"]] == ["PNP0A08", "PNP0A03"]
        assert (ns[d + "_UID"], ns[d + "_SEG"], ns[d + "_BBN"]) == (b["uid"], 0, b["first_bus"])
        buses, mmio = descriptors(ns[d + "_CRS"])
        # Producers (bit 0 clear): what the bridge decodes for what is below it.
        assert buses == ("word", 2, 0, b["first_bus"], b["last_bus"], b["last_bus"] - b["first_bus"] + 1)
        assert mmio == ("qword", 0, 0, b["mmio_base"], b["mmio_base"] + b["mmio_size"] - 1, b["mmio_size"])
    assert eisa(ns["\\_SB_.ECAM._HID"]) == "PNP0C02"
    # 1 MiB per bus from bus 0's address: buses 0x10-0x2F are 32 MiB at 0xB1000000.
    assert descriptors(ns["\\_SB_.ECAM._CRS"]) == [("qword", 0, 1, 0xB100_0000, 0xB2FF_FFFF, 32 * MiB)]


# The QTG _DSM (CXL 3.1 section 9.18.3) assembled by hand from ACPI 6.5 chapter 20's encodings:
#   Method (_DSM, 4) { If (LEqual (Arg0, ToUUID ("f365f9a6-a7de-4071-a66a-b40c0b4f8e52"))) {
#       If (LEqual (Arg2, Zero)) { Return (Buffer (One) { 0x03 }) }       // functions 0 and 1
#       If (LEqual (Arg2, One)) { Return (Package (2) { Zero, Package (1) { Zero } }) } }
#     Return (Buffer (One) { 0x00 }) }
# ToUUID's bytes: the first three fields little-endian, the last two as written (section 19.6.142).
QTG_UUID = bytes.fromhex("a6f965f3" "dea7" "7140" "a66a" "b40c0b4f8e52")
DSM = (bytes([0x14, 59]) + b"_DSM" + bytes([0x04])                 # MethodOp, PkgLength, name, 4 args
       + bytes([0xA0, 47, 0x93, 0x68, 0x11, 19, 0x0A, 16]) + QTG_UUID  # If (LEqual (Arg0, Buffer (16) {..}))
       + bytes([0xA0, 9, 0x93, 0x6A, 0x00, 0xA4, 0x11, 3, 0x01, 0x03])  # If (Arg2 == 0) Return (Buffer)
       + bytes([0xA0, 13, 0x93, 0x6A, 0x01, 0xA4,                          # If (Arg2 == 1) Return (
                0x12, 7, 2, 0x00, 0x12, 3, 1, 0x00])                       #   Package {0, Package {0}})
       + bytes([0xA4, 0x11, 3, 0x01, 0x00]))                            # Return (Buffer (One) {0})


def test_the_cxl_root_answers_the_qtg_dsm_with_qos_class_zero():
    assert bytes.fromhex("f365f9a6a7de4071a66ab40c0b4f8e52")[::-1][12:] == QTG_UUID[:4]  # the first field reversed
    ns = objects(dsdt(), 36, len(dsdt()), "\\")
    assert ns["\\_SB_.CXLR._DSM"] == DSM


def test_the_qtg_dsm_lists_the_ids_given_most_suitable_first():
    raw = A.table("DSDT", 2, A.dsdt(BRIDGES, ECAM, qtg_max=3, qtg_ids=[2, 0]))
    dsm = objects(raw, 36, len(raw), "\\")["\\_SB_.CXLR._DSM"]
    # Package (2) { 3, Package (2) { 2, Zero } }: ByteConst 3 (0x0A 0x03), ByteConst 2, ZeroOp.
    assert bytes([0x12, 10, 2, 0x0A, 3, 0x12, 5, 2, 0x0A, 2, 0x00]) in dsm
    with pytest.raises(ValueError, match=re.escape("dsdt.qtg_ids[1] = 4 is not allowed; allowed: 0 to qtg_max (3)")):
        A.dsdt(BRIDGES, ECAM, qtg_max=3, qtg_ids=[0, 4])


def test_mcfg_gives_each_ecam_range_by_the_pci_firmware_layout():
    ecam = ECAM + [dict(base=0x1_0000_0000, segment=1, first_bus=0, last_bus=0xFF)]
    raw = A.table("MCFG", A.REVISIONS["MCFG"], A.mcfg(ecam))
    assert raw[:4] == b"MCFG" and sum(raw) % 256 == 0 and len(raw) == 36 + 8 + 16 * 2
    entries = [struct.unpack_from("<QHBBI", raw, 44 + 16 * k) for k in range(2)]
    assert entries == [(0xB000_0000, 0, 0x10, 0x2F, 0), (0x1_0000_0000, 1, 0, 0xFF, 0)]


@pytest.mark.parametrize("count", [1, 30, 60])
def test_long_objects_take_multi_byte_package_lengths(count):
    """Thirty and sixty bridges make the scope several KiB: its PkgLength takes as many bytes as ACPI 6.5
    section 20.2.4 says for its size (1 below 64, 2 below 4096, else 3), and the reader still finds every
    bridge (a wrong length would shift every object after it)."""
    bridges = [dict(uid=100 + k, first_bus=k, last_bus=k, mmio_base=0x40_0000_0000 + k * GiB, mmio_size=GiB)
               for k in range(count)]
    raw = dsdt(bridges, [dict(base=0xC000_0000, first_bus=0, last_bus=0xFF)])
    length, took = pkg_length(raw, 37)
    assert 37 + length == len(raw)
    assert took == (1 if length < 64 else 2 if length < 4096 else 3)
    ns = objects(raw, 36, len(raw), "\\")
    assert [ns[f"\\_SB_.HB{k:02X}._UID"] for k in range(count)] == [100 + k for k in range(count)]


@pytest.mark.parametrize("bridges, ecam, message", [
    ([dict(BRIDGES[0], uid=9), BRIDGES[1]], ECAM, "dsdt.bridges[1].uid = 9 is also dsdt.bridges[0]'s"),
    ([dict(BRIDGES[0], first_bus=0x20, last_bus=0x10)], ECAM, "dsdt.bridges[0].first_bus = 32 is not allowed"),
    ([BRIDGES[0], dict(BRIDGES[1], first_bus=0x1F)], ECAM, "dsdt.bridges[1] shares buses with dsdt.bridges[0]"),
    ([BRIDGES[0], dict(BRIDGES[1], mmio_base=0x30_2000_0000)], ECAM, "dsdt.bridges[1].mmio overlaps dsdt.bridges[0]"),
    ([dict(BRIDGES[0], mmio_size=0)], ECAM, "dsdt.bridges[0].mmio = [0x3000000000, +0) is not allowed"),
    ([dict(BRIDGES[0], last_bus=0x30)], ECAM, "that no ECAM range covers"),
    (BRIDGES, [dict(base=0xB008_0000, first_bus=0x10, last_bus=0x2F)], "ecam[0].base = 0xb0080000 is not allowed"),
    (BRIDGES, ECAM + [dict(base=0xD000_0000, first_bus=0x2F, last_bus=0x30)], "ecam[1] covers buses of ecam[0]"),
    (BRIDGES, ECAM + [dict(base=0xB000_0000, segment=1, first_bus=0x20, last_bus=0x20)], "ecam[1] overlaps ecam[0]"),
])
def test_bad_namespaces_are_refused_naming_the_field(bridges, ecam, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        A.dsdt(bridges, ecam)


def test_an_empty_mcfg_is_refused():
    with pytest.raises(ValueError, match=r"mcfg: no ECAM range; allowed: at least one"):
        A.mcfg([])


@pytest.mark.skipif(not IASL, reason="needs iasl (Debian: acpica-tools) to disassemble and recompile the DSDT")
def test_acpica_disassembles_the_dsdt_and_recompiles_it_to_the_same_aml(tmp_path):
    raw = dsdt()
    (tmp_path / "dsdt.dat").write_bytes(raw)
    r = subprocess.run([IASL, "-d", "dsdt.dat"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    asl = (tmp_path / "dsdt.dsl").read_text()
    assert re.search(r'Device \(HB01\)\s*\{\s*Name \(_HID, "ACPI0016"\)', asl)
    assert 'EisaId ("PNP0A08") /* PCI Express Bus */' in asl and "Name (_BBN, 0x20)" in asl
    assert "Method (_DSM, 4, NotSerialized)" in asl and "f365f9a6-a7de-4071-a66a-b40c0b4f8e52" in asl.lower()
    assert re.search(r"WordBusNumber \(ResourceProducer, MinFixed, MaxFixed, PosDecode,\s*0x0000,\s*// Granularity\s*"
                     r"0x0010,\s*// Range Minimum\s*0x001F,", asl)
    r = subprocess.run([IASL, "-p", "again", "dsdt.dsl"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # The header differs (iasl writes its own compiler ID); the AML is byte for byte ours.
    assert (tmp_path / "again.aml").read_bytes()[36:] == raw[36:]


@pytest.mark.skipif(not ACPIEXEC, reason="needs acpiexec (Debian: acpica-tools) to load the namespace as an OS does")
def test_acpica_loads_the_namespace_and_reads_each_bridges_uid_bus_and_windows(tmp_path):
    (tmp_path / "dsdt.dat").write_bytes(dsdt())
    cmds = "; ".join(f"evaluate \\_SB.HB{i:02X}._UID; evaluate \\_SB.HB{i:02X}._BBN; resources \\_SB.HB{i:02X}"
                     for i in range(len(BRIDGES)))
    r = subprocess.run([ACPIEXEC, "-b", cmds, "dsdt.dat"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                       stdin=subprocess.DEVNULL)
    out = r.stdout + r.stderr
    assert "AE_" not in out.replace("AE_NOT_FOUND", ""), out  # _SRS is absent by design: nothing else fails
    ints = [int(v, 16) for v in re.findall(r"\[Integer\] = ([0-9A-F]+)", out)]
    assert ints == [v for b in BRIDGES for v in (b["uid"], b["first_bus"])]
    mins = [int(v, 16) for v in re.findall(r"Address Minimum : ([0-9A-F]+)", out)]
    lens = [int(v, 16) for v in re.findall(r"Address Length : ([0-9A-F]+)", out)]
    assert mins == [v for b in BRIDGES for v in (b["first_bus"], b["mmio_base"])], out
    assert lens == [v for b in BRIDGES for v in (b["last_bus"] - b["first_bus"] + 1, b["mmio_size"])], out



@pytest.mark.slow
def test_linux_cxl_acpi_finds_our_root_host_bridges_and_interleaved_window(tmp_path):
    """A third reader, Linux's own CXL drivers: our AML (as an SSDT beside QEMU's DSDT) and our CEDT
    handed to the project's guest under QEMU (q35 without cxl=on: QEMU writes no CEDT or CXL objects of
    its own). cxl_acpi binds to ACPI0017, enumerates each ACPI0016 bridge as a PCI root on the bus its
    _BBN gives, matches it to its CHBS by _UID and turns the CFMWS into a root decoder: `cxl list` must
    show both bridges as root0's dports (pci0000:80 and pci0000:90, ids 7 and 9), a port for each, and
    the decoder with the window's base, size, ways, granularity and targets in the CFMWS's order."""
    import json
    from conftest import qemu_guest
    qemu, paths = qemu_guest()
    # Buses 0x80-0x9F and their ECAM clear of q35's own (its MMCONFIG: buses 0-255 at 0xB0000000; PCI
    # devices on bus 0 only); component registers where nothing answers (no HDM capability: ports probe
    # no further).
    bridges = [dict(uid=7, first_bus=0x80, last_bus=0x8F, mmio_base=0x80_0000_0000, mmio_size=GiB),
               dict(uid=9, first_bus=0x90, last_bus=0x9F, mmio_base=0x80_4000_0000, mmio_size=GiB)]
    ecam = [dict(base=0xE000_0000 - (0x80 << 20), first_bus=0x80, last_bus=0x9F)]
    window = dict(base=1 << 40, size=8 * GiB, ways=2, granularity=8192, targets=[9, 7])
    chbs = [(b["uid"], 1, 0xFE00_0000 + k * 0x10000, 0x10000) for k, b in enumerate(bridges)]
    tables = {"ssdt": A.table("SSDT", 2, A.dsdt(bridges, ecam)),
              "cedt": A.table("CEDT", A.REVISIONS["CEDT"], A.cedt(chbs, [window]))}
    args = []
    for name, raw in tables.items():
        f = tmp_path / f"{name}.dat"
        f.write_bytes(raw)
        args += ["-acpitable", f"file={f}"]
    run = ("for d in /sys/bus/acpi/devices/ACPI001*; do echo acpi ${d##*/} $(cat $d/uid 2>/dev/null); done; "
           "echo cxl-devices $(ls /sys/bus/cxl/devices); echo cxl-list-begin; cxl list -B -D -v; echo cxl-list-end")
    cmd = [qemu, "-accel", "tcg", "-machine", "q35", "-m", "2G", "-smp", "2", "-nographic", "-vga", "none", "-net",
           "none", "-no-reboot", *args, "-kernel", str(paths["bzimage"]), "-initrd", str(paths["initramfs"]),
           "-append", f'console=ttyS0 panic=-1 simcxl.run="{run}" simcxl.after=reboot']
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL).stdout
    lines = [ln.rstrip("\r") for ln in out.splitlines() if not re.match(r"\[\s*\d+\.\d+\]", ln)]
    assert "acpi ACPI0016:00 7" in lines and "acpi ACPI0016:01 9" in lines, out[-4000:]
    assert any(ln.startswith("acpi ACPI0017:00") for ln in lines), out[-4000:]
    devices = next(ln for ln in lines if ln.startswith("cxl-devices ")).split()[1:]
    assert {"root0", "port1", "port2", "decoder0.0"} <= set(devices), devices
    listing = json.loads("\n".join(lines[lines.index("cxl-list-begin") + 1:lines.index("cxl-list-end")]))
    bus, = [b for b in listing if b.get("bus") == "root0"]
    assert bus["provider"] == "ACPI.CXL"
    assert sorted((d["id"], d["alias"]) for d in bus["dports"]) == [(7, "pci0000:80"), (9, "pci0000:90")]
    d, = bus["decoders:root0"]
    assert (d["resource"], d["size"]) == (window["base"], window["size"]), d
    assert (d["interleave_ways"], d["interleave_granularity"]) == (2, 8192), d
    assert sorted((t["position"], t["id"]) for t in d["targets"]) == [(0, 9), (1, 7)], d  # listed in dport order


@pytest.mark.skipif(not ACPIEXEC, reason="needs acpiexec (Debian: acpica-tools) to evaluate the _DSM as an OS does")
def test_acpica_evaluates_the_qtg_dsm_as_linux_calls_it(tmp_path):
    """As cxl_acpi_evaluate_qtg_dsm does: the UUID, revision 1, function 1 and a package of read and
    write latency (ps) and bandwidth (MB/s); then function 0 and an unknown UUID."""
    (tmp_path / "dsdt.dat").write_bytes(dsdt())
    uuid = " ".join(f"{b:02x}" for b in QTG_UUID)
    other = " ".join(f"{b:02x}" for b in bytes(16))
    perf = "[272000 280000 21000 19500]"
    cmds = "; ".join(f"evaluate \\_SB.CXLR._DSM ({u}) 1 {f} {perf}" for u, f in ((uuid, 1), (uuid, 0), (other, 1)))
    r = subprocess.run([ACPIEXEC, "-b", cmds, "dsdt.dat"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                       stdin=subprocess.DEVNULL)
    out = r.stdout + r.stderr
    assert "AE_" not in out and "Warning" not in out, out
    results = out.split("Evaluating \\_SB.CXLR._DSM")[1:]
    assert len(results) == 3, out
    # Package {Max QTG ID 0, Package {QTG ID 0}}: QoS class 0, the CFMWS's QTG ID.
    assert re.search(r"\[Package\] Contains 2 Elements:\s+\[Integer\] = 0+\s+\[Package\] Contains 1 Elements:\s+"
                     r"\[Integer\] = 0+\s", results[0]), results[0]
    assert re.search(r"\[Buffer\] Length 01 =\s+0000: 03 ", results[1]), results[1]  # functions 0 and 1
    assert re.search(r"\[Buffer\] Length 01 =\s+0000: 00 ", results[2]), results[2]
