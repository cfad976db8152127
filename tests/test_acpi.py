"""ACPI tables the gem5 board gives Linux (ext/cxlcore/platform/acpi.cpp).

Two independent readers check the bytes: ACPICA's disassembler (`iasl -d`,
Debian's acpica-tools: it knows SRAT, SLIT and HMAT) and, for CEDT (which the
packaged ACPICA predates), a decoder written here from the field offsets of
CXL 3.1 section 9.18; for a device's CDAT, one from UEFI CDAT 1.03. Expected
values are the inputs, in the units the specifications define (HMAT and CDAT:
picoseconds and MB/s times the entry base unit)."""

import re
import shutil
import struct
import subprocess

import pytest

from simcxl import _core

A = _core.acpi
GiB = 1 << 30
IASL = shutil.which("iasl")
needs_iasl = pytest.mark.skipif(not IASL, reason="needs iasl (Debian: acpica-tools) to read the tables back")


def dump(tmp_path, sig, body):
    raw = A.table(sig, A.REVISIONS[sig], body)
    f = tmp_path / f"{sig.lower()}.dat"
    f.write_bytes(raw)
    r = subprocess.run([IASL, "-d", str(f)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    return (tmp_path / f"{sig.lower()}.dsl").read_text()


def fields(dsl, name):
    """Every value of a field in iasl's dump, as integers (hex in the dump)."""
    # Fields follow their "[offset length]" prefix; decoded flag bits stand alone on their line.
    return [int(v, 16) for v in re.findall(rf"(?:\]|^)\s+{re.escape(name)} : ([0-9A-F]+)", dsl, re.M)]


def test_every_table_sums_to_zero_and_says_its_length():
    for sig, body in [("SRAT", A.srat([(0, 0)], [(0, GiB, 0, False)])), ("SLIT", A.slit(1, [10])),
                      ("CEDT", A.cedt([(0, 1, 0xFED00000, 0x10000)], []))]:
        raw = A.table(sig, A.REVISIONS[sig], body)
        assert sum(raw) % 256 == 0
        assert raw[:4] == sig.encode() and struct.unpack_from("<I", raw, 4)[0] == len(raw) == 36 + len(body)
        assert raw[8] == A.REVISIONS[sig]


@needs_iasl
def test_srat_puts_cpus_on_node_0_and_a_cpuless_cxl_node_above_4_gib(tmp_path):
    dsl = dump(tmp_path, "SRAT", A.srat([(0, 0), (1, 0), (2, 0), (3, 0)],
                                        [(0, 3 * GiB, 0, False), (4 * GiB, 2 * GiB, 1, True)]))
    assert "Processor Local APIC/SAPIC Affinity" in dsl and "Memory Affinity" in dsl
    assert fields(dsl, "Apic ID") == [0, 1, 2, 3]
    assert fields(dsl, "Proximity Domain Low(8)") == [0, 0, 0, 0]  # no CPU on node 1
    assert fields(dsl, "Proximity Domain") == [0, 1]
    assert fields(dsl, "Base Address") == [0, 4 * GiB]
    assert fields(dsl, "Address Length") == [3 * GiB, 2 * GiB]
    assert fields(dsl, "Hot Pluggable") == [0, 1]
    assert fields(dsl, "Table Revision") == [1]


@needs_iasl
def test_srat_uses_x2apic_affinity_for_apic_ids_past_254(tmp_path):
    dsl = dump(tmp_path, "SRAT", A.srat([(300, 2)], [(0, GiB, 2, False)]))
    assert "Processor Local x2APIC Affinity" in dsl
    assert fields(dsl, "Apic ID") == [300] and fields(dsl, "Proximity Domain")[0] == 2


@needs_iasl
def test_fadt_gives_linux_acpi_mode_and_the_pm1_blocks_the_board_answers(tmp_path):
    # Without a FADT and DSDT Linux disables ACPI after boot and then parses no HMAT.
    dsl = dump(tmp_path, "FACP", A.fadt(0xF1000, sci_interrupt=9, pm1a_event_port=0x600, pm1a_control_port=0x604))
    assert "Table Length : 00000114" in dsl  # 276 bytes: revision 6
    assert fields(dsl, "DSDT Address") == [0xF1000, 0xF1000]  # 32-bit and X_DSDT
    assert fields(dsl, "SMI Command Port") == [0]  # already in ACPI mode
    assert fields(dsl, "SCI Interrupt") == [9]
    assert fields(dsl, "PM1A Event Block Address") == [0x600]
    assert fields(dsl, "PM1A Control Block Address") == [0x604]
    assert fields(dsl, "PM1 Event Block Length") == [4] and fields(dsl, "PM1 Control Block Length") == [2]
    assert fields(dsl, "PM Timer Block Address") == [0] and fields(dsl, "FACS Address") == [0, 0]
    assert "8042 Present on ports 60/64 (V2) : 1" in dsl
    assert fields(dsl, "FADT Minor Revision") == [5]
    raw = A.table("FACP", A.REVISIONS["FACP"], A.fadt(0xF1000))
    # X_PM1a_EVT_BLK at offset 148: I/O space, 32 bits, port 0x600 (ACPI 6.5 table 5.9).
    assert struct.unpack_from("<BBBBQ", raw, 148) == (1, 32, 0, 3, 0x600)
    assert struct.unpack_from("<BBBBQ", raw, 172) == (1, 16, 0, 2, 0x604)


@needs_iasl
def test_slit_distances_row_by_row(tmp_path):
    d = [10, 21, 30, 21, 10, 35, 30, 35, 10]
    dsl = dump(tmp_path, "SLIT", A.slit(3, d))
    rows = re.findall(r"Locality\s+\d+ : ([0-9A-F ]+)", dsl)
    assert [int(x, 16) for r in rows for x in r.split()] == d
    assert fields(dsl, "Localities") == [3]


@needs_iasl
def test_hmat_latencies_in_picoseconds_and_bandwidths_in_mb_per_s(tmp_path):
    loc = [dict(initiator=0, target=0, read_latency_ns=110.0, write_latency_ns=112.0,
                read_bandwidth_gbps=60.5, write_bandwidth_gbps=50.0),
           dict(initiator=0, target=1, read_latency_ns=250.5, write_latency_ns=260.0,
                read_bandwidth_gbps=25.25, write_bandwidth_gbps=20.0)]
    dsl = dump(tmp_path, "HMAT", A.hmat([0, 1], [0, -1], loc))
    # Node 0's memory is attached to the CPUs' domain; the CXL node to none.
    assert fields(dsl, "Processor Proximity Domain Valid") == [1, 0]
    assert fields(dsl, "Memory Proximity Domain") == [0, 1]
    assert fields(dsl, "Data Type") == [1, 2, 4, 5]  # read/write latency, read/write bandwidth
    base = fields(dsl, "Entry Base Unit")
    entries = fields(dsl, "Entry")
    per = [[entries[2 * i] * base[i], entries[2 * i + 1] * base[i]] for i in range(4)]
    assert per[0] == [110_000, 250_500] and per[1] == [112_000, 260_000]  # ps
    assert per[2] == [60_500, 25_250] and per[3] == [50_000, 20_000]      # MB/s
    assert max(entries) <= 0xFFFE  # 0xFFFF means "no connection"


def decode_cedt(raw):
    """CEDT structures, from CXL 3.1 Table 9-18 (CHBS) and 9-21 (CFMWS) offsets."""
    out, off = [], 36
    while off < len(raw):
        typ, length = raw[off], struct.unpack_from("<H", raw, off + 2)[0]
        if typ == 0:
            uid, ver, _, base, size = struct.unpack_from("<IIIQQ", raw, off + 4)
            out.append(("chbs", uid, ver, base, size))
        elif typ == 1:
            base, size, eniw, arith, hbig, restr, qtg = struct.unpack_from("<QQBBxxIHH", raw, off + 8)
            ways = {0: 1, 1: 2, 2: 4, 3: 8, 4: 16, 8: 3, 9: 6, 10: 12}[eniw]
            targets = list(struct.unpack_from(f"<{ways}I", raw, off + 36))
            assert length == 36 + 4 * ways
            out.append(("cfmws", base, size, ways, 256 << hbig, arith, restr, qtg, targets))
        off += length
    assert off == len(raw)
    return out


def test_cedt_describes_host_bridges_and_an_interleaved_window():
    bridges = [(7, 1, 0xFED00000, 0x10000), (9, 1, 0xFED10000, 0x10000), (11, 1, 0xFED20000, 0x10000)]
    win = dict(base=8 * GiB, size=3 * GiB, ways=3, granularity=256, targets=[7, 9, 11])
    raw = A.table("CEDT", 1, A.cedt(bridges, [win]))
    got = decode_cedt(raw)
    assert got[:3] == [("chbs", *b) for b in bridges]
    # Type-3 (host-only coherent), volatile; modulo arithmetic.
    assert got[3] == ("cfmws", 8 * GiB, 3 * GiB, 3, 256, 0, 0x6, 0, [7, 9, 11])


@pytest.mark.parametrize("call, message", [
    (lambda: A.slit(2, [10, 20, 20, 12]), "slit.distances[1][1] = 12 is not allowed; a locality's distance to itself is 10"),
    (lambda: A.slit(2, [10, 10, 20, 10]), "slit.distances[0][1] = 10 is not allowed; allowed between localities: 11 to 254"),
    (lambda: A.slit(2, [10, 20, 20]), "slit.distances has 3 entries; allowed: localities^2 = 4"),
    (lambda: A.srat([(0, 0), (0, 1)], []), "srat.cpus: APIC ID 0 appears twice"),
    (lambda: A.srat([], [(0, 2 * GiB, 0, False), (GiB, GiB, 1, False)]), "overlap; allowed: disjoint ranges"),
    (lambda: A.cedt([(0, 1, 0, 0x10000)], [dict(base=4 * GiB, size=GiB, ways=5, granularity=256, targets=[0] * 5)]),
     "cedt.cfmws.ways = 5 is not allowed; allowed values: 1, 2, 3, 4, 6, 8, 12, 16"),
    (lambda: A.cedt([(0, 1, 0, 0x10000)], [dict(base=4 * GiB, size=GiB, ways=1, granularity=300, targets=[0])]),
     "cedt.cfmws.granularity = 300 is not allowed"),
    (lambda: A.cedt([(0, 1, 0, 0x10000)], [dict(base=4 * GiB + 4096, size=GiB, ways=1, granularity=256, targets=[0])]),
     "allowed: a multiple of 256 MiB"),
    (lambda: A.cedt([(0, 1, 0, 0x10000)], [dict(base=4 * GiB, size=GiB, ways=3, granularity=256, targets=[0, 0, 0])]),
     "allowed: a multiple of ways x 256 MiB"),
    (lambda: A.cedt([(0, 1, 0, 0x10000)], [dict(base=4 * GiB, size=GiB, ways=1, granularity=256, targets=[4])]),
     "names host bridge UID 4, which no CHBS has"),
    (lambda: A.fadt(0), "fadt.dsdt: 0 is not allowed"),
    (lambda: A.fadt(0xF1000, pm1a_event_port=0), "fadt.pm1a ports: allowed 1 to 0xfffc"),
    (lambda: A.hmat([0], [0], [dict(initiator=0, target=0, read_latency_ns=0.0, write_latency_ns=1.0,
                                    read_bandwidth_gbps=1.0, write_bandwidth_gbps=1.0)]), "allowed: a finite value above 0"),
])
def test_bad_tables_are_refused_by_field(call, message):
    with pytest.raises(_core.ConfigError, match=re.escape(message)):
        call()


ACPIEXEC = shutil.which("acpiexec")


@pytest.mark.skipif(not ACPIEXEC, reason="needs acpiexec (Debian: acpica-tools) to load the tables as an OS would")
def test_acpica_loads_our_fadt_and_dsdt_as_an_os_does_and_finds_the_pm1_blocks(tmp_path):
    """ACPICA is the ACPI core Linux runs. acpiexec installs our FADT and empty
    DSDT, loads the namespace and exercises the fixed hardware; a FADT whose
    required PM1 control block is missing is reported as a firmware error
    (the check can fail)."""
    def run(fadt: bytes) -> str:
        (tmp_path / "facp.dat").write_bytes(fadt)
        (tmp_path / "dsdt.dat").write_bytes(A.table("DSDT", A.REVISIONS["DSDT"], b""))
        r = subprocess.run([ACPIEXEC, "-b", "quit", "dsdt.dat", "facp.dat"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
        return r.stdout + r.stderr
    good = A.table("FACP", A.REVISIONS["FACP"], A.fadt(0xF1000))
    out = run(good)
    assert re.search(r"ACPI: FACP 0x[0-9A-F]+ 000114 \(v06 SIMCXL SIMCXL", out), out
    assert "1 ACPI AML tables successfully acquired and loaded" in out, out
    assert "Firmware Error" not in out and "Required FADT field" not in out, out
    bad = bytearray(good)
    bad[64:68], bad[172:184] = bytes(4), bytes(12)   # PM1a_CNT_BLK and X_PM1a_CNT_BLK
    bad[9] = 0
    bad[9] = -sum(bad) & 0xFF
    assert "Required FADT field Pm1aControlBlock has zero address" in run(bytes(bad))



@pytest.mark.slow
def test_linux_reads_our_srat_slit_and_hmat_as_the_numa_nodes_and_access_classes_they_give(tmp_path):
    """A third reader, Linux itself: our SRAT, SLIT and HMAT (bytes from this module) handed to the
    project's guest under QEMU (-acpitable; QEMU's own FADT and DSDT enable ACPI, and it writes no SRAT
    or HMAT of its own without -numa). Linux reports HMAT latencies in ns rounded up from the table's
    picoseconds and bandwidths in MB/s (drivers/acpi/numa/hmat.c, hmat_normalize for revision 2)."""
    from conftest import qemu_guest
    qemu, paths = qemu_guest()
    tables = {
        "srat": A.srat([(0, 0), (1, 0)], [(0, GiB, 0, False), (GiB, GiB, 1, False)]),
        "slit": A.slit(2, [10, 26, 26, 10]),
        "hmat": A.hmat([0, 1], [0, -1], [
            dict(initiator=0, target=0, read_latency_ns=106.3, write_latency_ns=107.0, read_bandwidth_gbps=31.0,
                 write_bandwidth_gbps=28.4),
            dict(initiator=0, target=1, read_latency_ns=267.2, write_latency_ns=271.0, read_bandwidth_gbps=20.9,
                 write_bandwidth_gbps=19.35)]),
    }
    args = []
    for name, body in tables.items():
        f = tmp_path / f"{name}.dat"
        f.write_bytes(A.table(name.upper(), A.REVISIONS[name.upper()], body))
        args += ["-acpitable", f"file={f}"]
    cmd = [qemu, "-accel", "tcg", "-machine", "pc", "-m", "2G", "-smp", "2", "-nographic", "-no-reboot", *args,
           "-kernel", str(paths["bzimage"]), "-initrd", str(paths["initramfs"]),
           "-append", 'console=ttyS0 panic=-1 simcxl.run="true" simcxl.after=reboot']
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL).stdout
    assert re.search(r"node 0 cpus: 0 1\s", out) and re.search(r"node 1 cpus:\s*\n", out), out
    assert re.search(r"node distances:\nnode\s+0\s+1\s*\n\s+0:\s+10\s+26\s*\n\s+1:\s+26\s+10", out), out
    got = dict(ln.split(" ", 1)[1].split("=", 1) for ln in out.splitlines() if ln.startswith("hmat node"))
    for node, want in ((0, dict(read_latency="107", write_latency="107", read_bandwidth="31000",
                                write_bandwidth="28400")),
                       (1, dict(read_latency="268", write_latency="271", read_bandwidth="20900",
                                write_bandwidth="19350"))):
        for k, v in want.items():
            assert got[f"node{node}/access0/initiators/{k}"] == v, (node, k, got)


# ---------------------------------------------------------------- CDAT

def decode_cdat(raw):
    """The CDAT from the field offsets of UEFI CDAT 1.03 (the layout Linux's drivers/cxl/core/cdat.c
    reads): a 16-byte header (length, revision, checksum, 6 reserved, sequence), then structures
    of type, reserved, length: DSMAS (0), DSLBIS (1), DSEMTS (4)."""
    length, rev, _csum = struct.unpack_from("<IBB", raw, 0)
    assert length == len(raw) and rev == 1 and sum(raw) % 256 == 0
    seq, = struct.unpack_from("<I", raw, 12)
    out, off = [], 16
    while off < len(raw):
        typ, _, ln = struct.unpack_from("<BBH", raw, off)
        assert ln == 24
        if typ == 0:
            handle, flags, _, base, size = struct.unpack_from("<BBHQQ", raw, off + 4)
            out.append(("dsmas", handle, flags, base, size))
        elif typ == 1:
            handle, flags, dtype, _, unit, e0, e1, e2 = struct.unpack_from("<BBBBQHHH", raw, off + 4)
            out.append(("dslbis", handle, flags, dtype, unit * e0, e1, e2))
        elif typ == 4:
            handle, mtype, _, doff, dlen = struct.unpack_from("<BBHQQ", raw, off + 4)
            out.append(("dsemts", handle, mtype, doff, dlen))
        else:
            raise AssertionError(f"unexpected CDAT structure type {typ}")
        off += ln
    return seq, out


def test_cdat_describes_each_range_with_its_latency_and_bandwidths():
    ranges = [dict(handle=0, dpa_base=0, dpa_length=64 * GiB, read_latency_ns=91.67, read_bandwidth_gbps=38.4,
                   write_bandwidth_gbps=38.4),
              dict(handle=3, dpa_base=64 * GiB, dpa_length=GiB, non_volatile=True, read_latency_ns=350.0,
                   read_bandwidth_gbps=12.5, write_bandwidth_gbps=6.0)]
    seq, got = decode_cdat(A.cdat(ranges, sequence=7))
    assert seq == 7
    # Per range: DSMAS, DSEMTS (conventional memory over all of it), then DSLBIS read latency (type 1,
    # picoseconds), read bandwidth (4) and write bandwidth (5) in MB/s, memory hierarchy 0.
    assert got[:5] == [("dsmas", 0, 0, 0, 64 * GiB), ("dsemts", 0, 0, 0, 64 * GiB),
                       ("dslbis", 0, 0, 1, 91670, 0, 0), ("dslbis", 0, 0, 4, 38400, 0, 0),
                       ("dslbis", 0, 0, 5, 38400, 0, 0)]
    assert got[5:] == [("dsmas", 3, 0x4, 64 * GiB, GiB), ("dsemts", 3, 0, 0, GiB),
                       ("dslbis", 3, 0, 1, 350000, 0, 0), ("dslbis", 3, 0, 4, 12500, 0, 0),
                       ("dslbis", 3, 0, 5, 6000, 0, 0)]


def test_a_devices_cdat_latency_is_the_engines_idle_read_to_a_closed_row():
    # Second method: idle reads one at a time through the engine (refresh off). Each spends the same
    # fixed time outside the device (host, bridge, link both ways) and, inside it, one of three: a
    # read to a closed row (what the CDAT figure, computed from the parameters alone, says), one to
    # the open row (no activate: tRCD less) or one that finds another row open (a precharge first:
    # tRP more). Every read the engine made falls in the histogram bucket (1/64 of an octave) of
    # one of those three, and the closed-row one is there.
    import simcxl
    from simcxl.engine import histograms
    from simcxl.topology import core_graph
    from conftest import link_bound_cxl
    s = link_bound_cxl()
    fig = A.device_cdat(core_graph(s), "cxl_dev0", 16 * GiB)
    m = s.cxl.media
    assert fig["read_bandwidth_gbps"] == fig["write_bandwidth_gbps"] == pytest.approx(
        m.channels * m.bus_bytes * m.data_rate_mts / 1000)
    with histograms.record() as h:
        r = simcxl.traffic(s, threads=1, requests=2000, inject_delay_ns=1000.0).iloc[0]
    hist = h.frame()
    hist = hist[hist["stream"] == "read_latency"]
    outside = sum(r[f"read.stage.{st}_ns"] for st in ("host_uncore", "host_port", "link_down", "link_up"))
    closed = outside + fig["read_latency_ns"]
    modes = (closed - m.tRCD_ns, closed, closed + m.tRP_ns)
    holds = [[lo <= x < hi for x in modes] for lo, hi in zip(hist["lo_ns"], hist["hi_ns"])]
    assert all(any(b) for b in holds), (hist, modes)
    assert any(b[1] for b in holds)
    # And it goes into the table as that many picoseconds, to the base unit's rounding.
    _, got = decode_cdat(A.cdat([dict(handle=0, dpa_base=0, dpa_length=16 * GiB, **{k: v for k, v in fig.items()
                                                                                  if k != "dpa_length"})]))
    assert got[2][4] == pytest.approx(fig["read_latency_ns"] * 1000, abs=10)


@pytest.mark.parametrize("ranges, message", [
    ([dict(handle=1, dpa_base=0, dpa_length=GiB, read_latency_ns=90.0, read_bandwidth_gbps=1.0,
           write_bandwidth_gbps=1.0)] * 2, "cdat.dsmas.handle 1 appears twice"),
    ([dict(handle=1, dpa_base=0, dpa_length=0, read_latency_ns=90.0, read_bandwidth_gbps=1.0,
           write_bandwidth_gbps=1.0)], "cdat.dsmas.dpa_length = 0 is not allowed"),
    ([dict(handle=1, dpa_base=0, dpa_length=GiB, read_latency_ns=0.0, read_bandwidth_gbps=1.0,
           write_bandwidth_gbps=1.0)], "cdat.dslbis: latency and bandwidths must be finite and above 0"),
])
def test_bad_cdat_ranges_are_refused_by_field(ranges, message):
    with pytest.raises(_core.ConfigError, match=re.escape(message)):
        A.cdat(ranges)
