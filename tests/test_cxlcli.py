"""`cxl list` output as tables (simcxl.gem5.cxlcli), on what the project's guest printed under QEMU 7.2
with two emulated Type-3 devices (tests/data/cxl_list_qemu72.txt, its header says how it was made).
Expected values are QEMU's configuration: 512 MiB and 256 MiB devices on the two root ports of one
host bridge (ACPI0016:00), a 4 GiB window; and the human (-u) listing must give the same tables as
the plain one (cxl-cli's two renderings of one state)."""

from pathlib import Path

import pandas as pd
import pytest

from simcxl.gem5 import cxlcli

CONSOLE = (Path(__file__).parent / "data" / "cxl_list_qemu72.txt").read_text()
MiB, GiB = 1 << 20, 1 << 30


def test_both_renderings_of_the_listing_give_the_same_tables():
    human, plain = cxlcli.listings(CONSOLE)
    a, b = cxlcli.tables(human), cxlcli.tables(plain)
    for name in ("memdevs", "ports", "decoders"):
        pd.testing.assert_frame_equal(a[name], b[name], check_dtype=False)


def test_memdevs_ports_and_root_decoder_are_qemus_configuration():
    t = cxlcli.tables(cxlcli.listings(CONSOLE)[0])
    # memN follows the order the devices probed in; the PCI address is QEMU's: root port 0's device on
    # bus 0x0d (256 MiB), root port 1's on 0x0e (512 MiB).
    m = t["memdevs"].set_index("host")
    assert m.loc["0000:0d:00.0", "pmem_bytes"] == 256 * MiB and m.loc["0000:0e:00.0", "pmem_bytes"] == 512 * MiB
    assert (m["ram_bytes"] == 0).all() and set(m["parent"]) == {"port1"}
    assert list(t["ports"].itertuples(index=False, name=None)) == [("port1", None, "ACPI0016:00", 1)]
    d, = t["decoders"].to_dict("records")
    assert (d["decoder"], d["level"], d["size"], d["interleave_ways"]) == ("decoder0.0", "root", 4 * GiB, 1)
    assert d["resource"] == 0x390000000


def test_kernel_messages_among_the_lines_are_ignored():
    noisy = CONSOLE.replace('"ports":[\n', '"ports":[\n[    7.836369] random: crng init done\n', 1)
    assert cxlcli.tables(cxlcli.listings(noisy)[0])["memdevs"].shape[0] == 2


@pytest.mark.parametrize("text, value", [("512.00 MiB (536.87 MB)", 512 * MiB), ("4.00 GiB (4.29 GB)", 4 * GiB),
                                         ("0x390000000", 0x390000000), (268435456, 268435456), ("0", 0)])
def test_sizes_in_every_rendering(text, value):
    assert cxlcli.to_bytes(text) == value


def test_a_size_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match=r"'lots' is not a size; allowed: an integer"):
        cxlcli.to_bytes("lots")


@pytest.mark.slow
def test_the_guest_lists_qemus_cxl_devices_as_recorded(tmp_path):
    """The recording's run again, live: the project's guest under QEMU q35,cxl=on with the same devices
    must list the same memdevs, ports and root decoder."""
    import subprocess
    from conftest import qemu_guest
    qemu, paths = qemu_guest()
    devs = []
    for k, (mem, slot) in enumerate(((256, 2), (512, 3))):
        devs += ["-object", f"memory-backend-file,id=cxl-mem{k},share=on,mem-path={tmp_path}/mem{k},size={mem}M",
                 "-object", f"memory-backend-file,id=cxl-lsa{k},share=on,mem-path={tmp_path}/lsa{k},size=256M",
                 "-device", f"cxl-rp,port={k},bus=cxl.1,id=rp{k},chassis=0,slot={slot}",
                 "-device", f"cxl-type3,bus=rp{k},memdev=cxl-mem{k},lsa=cxl-lsa{k},id=cxl-pmem{k}"]
    cmd = [qemu, "-accel", "tcg", "-M", "q35,cxl=on", "-m", "2G,maxmem=8G,slots=4", "-smp", "2", "-nographic",
           "-vga", "none", "-net", "none", "-no-reboot", "-device", "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1", *devs,
           "-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G,cxl-fmw.0.interleave-granularity=8k",
           "-kernel", str(paths["bzimage"]), "-initrd", str(paths["initramfs"]),
           "-append", 'console=ttyS0 panic=-1 simcxl.run="cxl list -M -D -P -u" simcxl.after=reboot']
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL).stdout
    live, = cxlcli.listings(out)
    want = cxlcli.tables(cxlcli.listings(CONSOLE)[0])
    got = cxlcli.tables(live)
    by_host = lambda f: f.drop(columns="memdev").sort_values("host", ignore_index=True)  # memN: probe order
    pd.testing.assert_frame_equal(by_host(got["memdevs"]), by_host(want["memdevs"]), check_dtype=False)
    for name in ("ports", "decoders"):
        pd.testing.assert_frame_equal(got[name], want[name], check_dtype=False)


def _od(raw: bytes) -> str:
    # `od -An -tx1 -v`: sixteen bytes a line, each as " xx".
    return "\n".join("".join(f" {b:02x}" for b in raw[i:i + 16]) for i in range(0, len(raw), 16))


def test_the_cdat_linux_printed_is_read_back_byte_for_byte():
    from simcxl import _core
    from simcxl.topology import cxlio
    raw = cxlio.read_cdat(_core.cxlio.Type3(1 << 30))
    console = ("cxl list output\ncdat-begin /sys/bus/cxl/devices/endpoint2/CDAT\n" + _od(raw) +
               "\n[   12.345678] a kernel message between the lines\ncdat-end\n$ ")
    assert cxlcli.cdat_dumps(console) == {"/sys/bus/cxl/devices/endpoint2/CDAT": raw}


def test_the_acpi_tables_linux_printed_are_read_back_byte_for_byte():
    from simcxl import _core
    A = _core.acpi
    srat = A.table("SRAT", 3, A.srat([(0, 0)], [(0, 1 << 30, 0, False)], generic_ports=[(2, 1)]))
    hmat = A.table("HMAT", 2, A.hmat([0], [0], []))
    console = ("acpi-begin SRAT\n" + _od(srat) + "\n[    1.000000] a kernel message\nacpi-end\n"
               "acpi-begin HMAT\n" + _od(hmat) + "\nacpi-end\n")
    assert cxlcli.acpi_dumps(console) == {"SRAT": srat, "HMAT": hmat}


def test_dslbis_entries_by_the_cdat_layout():
    import struct
    # A header and one DSLBIS per data type 1, 4, 5 (UEFI CDAT 1.03: type, reserved, length 24, handle,
    # flags, data type, reserved, entry base unit, entries): 91.67 ns, 38.4 GB/s, 20 GB/s.
    body = b"".join(struct.pack("<BBHBBBBQHHHH", 1, 0, 24, 0, 0, t, 0, unit, e, 0, 0, 0)
                    for t, unit, e in ((1, 10, 9167), (4, 1, 38400), (5, 1, 20000)))
    raw = struct.pack("<IBB6xI", 16 + len(body), 1, 0, 0) + body
    t = cxlcli.dslbis(raw)
    assert list(t["kind"]) == ["read_latency", "read_bandwidth", "write_bandwidth"]
    assert list(t["value"]) == [91670, 38400, 20000] and list(t["unit"]) == ["ps", "MB/s", "MB/s"]


def test_an_endpoint_listing_from_gem5_nests_the_memdev_under_its_endpoint():
    """`cxl list -M -D -P -E -u` from the guest on gem5's board (tests/data/cxl_list_gem5_endpoints.txt):
    with -E the memdev is an object inside its endpoint. Expected values are the board's description:
    the window at 4 GiB, 1 GiB, one way; the device below root port 0 of bridge 0 at bus 0x81."""
    from simcxl.gem5 import board
    text = (Path(__file__).parent / "data" / "cxl_list_gem5_endpoints.txt").read_text()
    t = cxlcli.tables(cxlcli.listings(text)[0])
    m, = t["memdevs"].to_dict("records")
    assert (m["memdev"], m["parent"], m["host"], m["ram_bytes"], m["pmem_bytes"]) == \
        ("mem0", "endpoint2", f"0000:{board.CXL_BUS + 1:02x}:00.0", GiB, 0)
    assert set(t["ports"]["port"]) == {"port1", "endpoint2"}
    d, = t["decoders"].to_dict("records")
    base, size = board.window_layout([GiB], None, GiB)[0]
    assert (d["decoder"], d["level"], d["resource"], d["size"], d["interleave_ways"]) == \
        ("decoder0.0", "root", base, size, 1)
    assert t["regions"].empty


def test_a_region_listing_from_gem5_names_the_region_at_each_level():
    """`cxl list -M -D -P -E -u -R` after the guest committed region0 (tests/data/cxl_list_gem5_region.txt):
    the region under the root decoder, and the port's and endpoint's decoders naming it. Expected values are
    the board's window (4 GiB, 1 GiB, one way) and the granularity the guest asked for (4 KiB)."""
    from simcxl.gem5 import board
    text = (Path(__file__).parent / "data" / "cxl_list_gem5_region.txt").read_text()
    t = cxlcli.tables(cxlcli.listings(text)[0])
    base, size = board.window_layout([GiB], None, GiB)[0]
    g, = t["regions"].to_dict("records")
    assert (g["region"], g["parent"], g["resource"], g["size"], g["interleave_ways"], g["interleave_granularity"],
            g["decode_state"]) == ("region0", "decoder0.0", base, size, 1, 4096, "commit")
    d = t["decoders"].set_index("decoder")
    assert list(d["level"]) == ["root", "port", "endpoint"]
    assert list(d.loc[["decoder1.0", "decoder2.0"], "region"]) == ["region0", "region0"]
    assert d.loc["decoder2.0", "mode"] == "ram"
    assert (d["resource"] == base).all() and (d["size"] == size).all()


def test_dax_devices_from_daxctl_list():
    # daxctl prints one device as an object, several as a list (util_display_json_array); kernel
    # messages may interleave. Sizes in bytes, as `daxctl list` without -u prints them.
    one = ('{\n  "chardev":"dax0.0",\n  "size":2147483648,\n  "target_node":1,\n  "align":2097152,\n'
           '  "mode":"system-ram",\n  "online_memblocks":16,\n  "total_memblocks":16,\n  "movable":true\n}\n')
    two = ('[\n  {\n    "chardev":"dax0.0",\n    "size":1073741824,\n    "target_node":1,\n    "mode":"devdax"\n  },\n'
           '[    1.234567] random: crng init done\n'
           '  {\n    "chardev":"dax1.0",\n    "size":1073741824,\n    "target_node":2,\n    "mode":"system-ram",\n'
           '    "online_memblocks":8,\n    "total_memblocks":8\n  }\n]\n')
    d = cxlcli.dax_devices("# daxctl list\n" + one)
    assert d.to_dict(orient="records") == [dict(chardev="dax0.0", size=2 << 30, target_node=1, mode="system-ram",
                                                online_memblocks=16, total_memblocks=16)]
    d = cxlcli.dax_devices(two)
    assert list(d["chardev"]) == ["dax0.0", "dax1.0"] and list(d["mode"]) == ["devdax", "system-ram"]
    assert list(d["target_node"]) == [1, 2] and list(d["size"]) == [1 << 30, 1 << 30]
    # A `cxl list` document beside it holds no dax device.
    assert cxlcli.dax_devices(CONSOLE).empty
