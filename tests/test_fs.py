"""Parsing what the full-system guest prints (simcxl.gem5.fs): numactl's topology
report and the benchmarks' key=value lines, checked on text in the formats
numactl 2.0 and the guest programs (benchmarks/guest/*.c) print."""

from simcxl.gem5.fs import parse_rows, parse_topology

NUMACTL = """simcxl-guest: kernel=6.1.0 cpus=2
available: 3 nodes (0-2)
node 0 cpus: 0 1
node 0 size: 987 MB
node 0 free: 931 MB
node 1 cpus:
node 1 size: 1024 MB
node 1 free: 1019 MB
node 2 cpus:
node 2 size: 512 MB
node 2 free: 511 MB
node distances:
node   0   1   2
  0:  10  24  31
  1:  24  10  31
  2:  31  31  10
"""


def test_hmat_attributes_the_guest_printed():
    text = NUMACTL + ("hmat node0/access0/initiators/read_latency=105\n"
                      "hmat node1/access0/initiators/read_bandwidth=20958\n"
                      "hmat node1/access0/initiators/read_latency=267\n"
                      "hmat node1/access1/initiators/read_latency=999\n")
    assert parse_topology(text).hmat == {0: {"read_latency": 105}, 1: {"read_bandwidth": 20958, "read_latency": 267}}


def test_topology_from_numactl():
    t = parse_topology(NUMACTL)
    assert t.cpus == {0: [0, 1], 1: [], 2: []}  # the CXL nodes have no CPUs
    assert t.size_mb == {0: 987, 1: 1024, 2: 512}
    assert t.distances == [[10, 24, 31], [24, 10, 31], [31, 31, 10]]


def test_benchmark_rows_between_the_marks():
    text = (NUMACTL + "simcxl-run-begin: chase 65536 1048576\n"
            "size_bytes=65536 accesses=100000 latency_ns=1.250 end=0x7f00\n"
            "size_bytes=1048576 accesses=100000 latency_ns=4.500 end=0x7f40\n"
            "verify_lines=16384 mismatches=0\n"
            "a line that is not key=value\n"
            "simcxl-run-end: rc=0\nsize_bytes=1 latency_ns=9\n")
    df = parse_rows(text)
    assert list(df["size_bytes"].dropna()) == [65536, 1048576]
    assert list(df["latency_ns"].dropna()) == [1.25, 4.5]
    assert df["mismatches"].dropna().tolist() == [0]
    assert df.attrs["rc"] == 0 and len(df) == 3  # the line after the end mark is not the benchmark's


def test_no_marks_no_rows():
    assert parse_rows(NUMACTL).empty


# ------------------------------------------------ the guest commands and results

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from simcxl.gem5 import fs  # noqa: E402
from simcxl.gem5.numa import Node, Numa  # noqa: E402
from simcxl.config.params import ParamError  # noqa: E402


def test_guest_commands_pin_memory_to_the_node_and_threads_to_node_0():
    assert fs.guest_command("lmbench", 1, sizes=[65536, 1 << 26], accesses=5000) == \
        "numactl --membind=1 --cpunodebind=0 chase -a 5000 65536 67108864"
    assert fs.guest_command("stream", 2, threads=4, kernel="copy", elements=1000) == \
        "numactl --membind=2 --cpunodebind=0 stream copy 4 1000"
    # MLC's W2 is two reads to one write, W5 one to one (Intel MLC's --loaded_latency -W modes).
    assert fs.guest_command("loaded-latency", 1, threads=3, mode="W2", chase_bytes=1 << 20, accesses=10) == \
        "numactl --membind=1 --cpunodebind=0 loaded_latency -a 10 -t 3 -r 2:1 1048576"
    assert fs.guest_command("loaded-latency", 0, mode="W5").split()[-2] == "1:1"
    assert fs.guest_command("topology") == "true"


def test_warmed_runs_mark_their_timed_part_and_warm_twice_the_caches():
    # ddr-local's host: a 97.5 MiB 15-way LLC, which gem5 builds with 2^17 sets (120 MiB), and a 2 MiB L2:
    # twice their lines is 2 * (125829120 + 2097152) / 64.
    assert fs.default_warm_lines("ddr-local") == 3997696
    assert fs.guest_command("lmbench", 1, sizes=[1 << 30], accesses=20000, marks=True, warm_lines=3997696) == \
        "numactl --membind=1 --cpunodebind=0 chase -a 20000 -m -w 3997696 1073741824"
    assert fs.guest_command("stream", 0, kernel="copy", elements=1 << 25, marks=True, timed=1 << 20) == \
        "numactl --membind=0 --cpunodebind=0 stream -m -w -t 1048576 copy 1 33554432"
    with pytest.raises(ParamError, match="^timed = 9 is out of range; allowed: 0 .all. to elements = 8"):
        fs.guest_command("stream", 0, elements=8, marks=True, timed=9)


@pytest.mark.parametrize("bad, field", [(dict(bench="x"), "bench"), (dict(bench="lmbench", sizes=[]), "sizes"),
                                        (dict(bench="lmbench", sizes=[32]), "sizes"),
                                        (dict(bench="stream", kernel="sum"), "kernel"),
                                        (dict(bench="stream", threads=0), "threads"),
                                        (dict(bench="loaded-latency", mode="W9"), "mode"),
                                        (dict(bench="lmbench", node=64), "node")])
def test_bad_guest_arguments_name_the_field(bad, field):
    bench = bad.pop("bench")
    with pytest.raises(ParamError, match=rf"^{field} = .*allowed"):
        fs.guest_command(bench, **bad)


def test_guest_rows_become_the_standalone_engines_columns():
    text = ("simcxl-run-begin: x\n"
            "traffic_threads=2 rw=2:1 delay=0 traffic_bytes=67108864 chase_bytes=1048576 accesses=100 "
            "latency_ns=180.500 traffic_gbps=12.250 end=0x1\n"
            "simcxl-run-end: rc=0\n")
    df = fs.frame("loaded-latency", fs.parse_rows(text), "node1")
    assert df.to_dict(orient="records") == [{"memory": "node1", "threads": 2, "read_fraction": 2 / 3,
                                             "bandwidth_gbps": 12.25, "latency_ns": 180.5}]
    text = ("simcxl-run-begin: x\nkernel=triad threads=4 bytes=100663296 stream_gbps=20.125 check=ok t0_ns=1 t1_ns=2\n"
            "simcxl-run-end: rc=0\n")
    df = fs.frame("stream", fs.parse_rows(text), "node0")
    assert df.to_dict(orient="records") == [{"memory": "node0", "kernel": "triad", "threads": 4,
                                             "stream_gbps": 20.125, "check": "ok"}]


#: The first 64 bytes of an x86-64 ELF file (class 64-bit, machine 0x3e), all fs.boot looks at.
ELF_X86_64 = b"\x7fELF\x02\x01\x01" + bytes(11) + b"\x3e\x00" + bytes(44)

FAKE_GEM5 = r'''#!{python}
# Stands in for gem5: records its arguments, writes a console as the guest would, exits as gem5 does.
import json, pathlib, sys
out = pathlib.Path(sys.argv[sys.argv.index("-d") + 1])
out.mkdir(parents=True, exist_ok=True)
(out.parent / "argv.json").write_text(json.dumps(sys.argv[1:]))
(out / "board.pc.com_1.device").write_text({console!r})
print("exit: m5_exit instruction encountered at 0.634 simulated s, 1.0 s wall, cpu=atomic")
'''


def test_boot_runs_gem5_on_the_board_and_returns_the_guests_rows(tmp_path):
    console = (NUMACTL + "simcxl-run-begin: numactl --membind=1 --cpunodebind=0 chase -a 100 65536\n"
               "size_bytes=65536 accesses=100 latency_ns=250.000 end=0x7f00\nverify_lines=1024 mismatches=0\n"
               "simcxl-run-end: rc=0\n")
    gem5 = tmp_path / "gem5"
    gem5.write_text(FAKE_GEM5.format(python=sys.executable, console=console))
    gem5.chmod(0o755)
    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(ELF_X86_64)
    numa = Numa([Node("ddr-local", 100, 100, 30, 30), Node("cxl-asic", 250, 250, 20, 20)], [[10, 25], [25, 10]])
    run = fs.guest_command("lmbench", 1, sizes=[65536], accesses=100)
    r = fs.boot(str(gem5), tmp_path / "o", kernel=str(kernel), cpu="atomic", run=run, bench="lmbench", numa=numa,
                checkpoint=str(tmp_path / "ck"))
    argv = json.loads((tmp_path / "o" / "argv.json").read_text())
    # The config is the checkout's (an installed package has no gem5_configs/ of its own).
    from pathlib import Path
    assert argv[2].endswith("gem5_configs/cxl_numa_boot.py") and Path(argv[2]).is_file()
    assert argv[argv.index("--run") + 1] == run and argv[argv.index("--checkpoint") + 1] == str(tmp_path / "ck")
    assert json.loads((tmp_path / "o" / "numa.json").read_text())["distances"] == [[10, 25], [25, 10]]
    assert r.cause == "m5_exit instruction encountered" and r.topology.cpus[1] == []
    assert r.frame.to_dict(orient="records") == [{"memory": "node1", "working_set_bytes": 65536, "latency_ns": 250.0,
                                                  "accesses": 100}]
    assert r.frame.attrs["engine"] == "gem5-fs" and r.frame.attrs["command"] == run


def test_boot_refuses_checkpoint_with_restore_and_a_folder_without_a_checkpoint(tmp_path):
    gem5 = tmp_path / "gem5"
    gem5.write_text("#!/bin/sh\n")
    with pytest.raises(ParamError, match="checkpoint and restore are not allowed together"):
        fs.boot(str(gem5), tmp_path / "o", checkpoint="a", restore="b")
    with pytest.raises(ParamError, match="no gem5 checkpoint there"):
        fs.boot(str(gem5), tmp_path / "o", restore=str(tmp_path))


# ------------------------------------------------ bad input fails before simulation, in one line

import subprocess  # noqa: E402

from simcxl.gem5.board import parse_cxl, window_layout  # noqa: E402
from test_cli import _cmd, user_error  # noqa: E402

GiB = 1 << 30
NEVER_RUN = "#!/bin/sh\necho ran > \"$(dirname \"$0\")/ran\"\n"


@pytest.fixture
def fake(tmp_path):
    """A gem5 stand-in that leaves a mark if it is ever started, and an x86-64 ELF kernel header."""
    gem5 = tmp_path / "gem5"
    gem5.write_text(NEVER_RUN)
    gem5.chmod(0o755)
    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(ELF_X86_64)
    return gem5, kernel


def test_windows_are_placed_from_4_gib_at_1_gib_steps_unless_a_base_is_given():
    assert window_layout([GiB, 512 << 20, GiB], local_size=3 * GiB) == [(4 * GiB, GiB), (5 * GiB, 512 << 20),
                                                                       (6 * GiB, GiB)]
    assert window_layout([GiB, GiB], [8 * GiB, None], local_size=GiB) == [(8 * GiB, GiB), (9 * GiB, GiB)]
    assert parse_cxl("cxl-fpga:512MiB@0x180000000") == ("cxl-fpga", 512 << 20, 6 * GiB)
    assert parse_cxl("cxl-asic:2GiB") == ("cxl-asic", 2 * GiB, None)


@pytest.mark.parametrize("bad, needle", [
    (dict(kernel="missing"), "kernel = '{tmp}/missing': no such file; allowed: an x86-64 vmlinux"),
    (dict(kernel="gem5"), "kernel = '{tmp}/gem5': not an x86-64 ELF file"),
    (dict(node=2), "node = 2 is not one of the board's nodes; allowed: 0 (local DRAM) to 1"),
    (dict(node=3, cxl=["cxl-asic:1GiB", "cxl-fpga:1GiB"]), "node = 3 is not one of the board's nodes; allowed: "
                                                         "0 (local DRAM) to 2"),
    (dict(cxl=["cxl-asic:1GiB@2GiB"], local_size="3GiB"),
     "CXL window 1 [0x80000000, 0xc0000000) overlaps local DRAM [0x0, 0xc0000000); allowed: a base at or above 4 GiB"),
    (dict(cxl=["cxl-asic:1GiB@3GiB"], local_size="1GiB"), "is below 4 GiB (the board's I/O hole is"),
    (dict(cxl=["cxl-asic:2GiB", "cxl-fpga:1GiB@5GiB"]),
     "CXL window 2 [0x140000000, 0x180000000) overlaps CXL window 1 [0x100000000, 0x180000000)"),
    (dict(cxl=["cxl-asic:1GiB@0x100001000"]), "base 0x100001000 is not allowed; allowed: a multiple of 256 MiB"),
    (dict(cxl=["cxl-asic:100MiB"]), "size 104857600 is not allowed; allowed: a positive multiple of 256 MiB"),
    (dict(cxl=["cxl-asic"]), "allowed: PRESET:SIZE[@BASE]"),
    (dict(cxl=["cxl-nope:1GiB"]), "memory = 'cxl-nope' is neither a preset nor a preset file"),
    (dict(local_size="4GiB"), "--local-size 4294967296 is out of range; allowed: above 0 up to 3GiB"),
    (dict(warm="atomic", cpu="timing"), "warm = 'atomic' is for restored runs timed on detailed cores"),
    (dict(cpu="minor"), "cpu = 'minor' is not allowed; allowed: kvm, atomic, timing, o3"),
    (dict(linux_regions=True), "linux_regions needs cxl_io"),
])
def test_bad_board_input_fails_before_gem5_starts(tmp_path, fake, bad, needle):
    gem5, kernel = fake
    kw = dict(kernel=str(kernel), cxl=["cxl-asic:1GiB"], local_size="1GiB", node=1)
    kw.update(bad)
    if bad.get("kernel"):
        kw["kernel"] = str(tmp_path / bad["kernel"])
    with pytest.raises(ParamError) as e:
        fs.boot(str(gem5), tmp_path / "o", **kw)
    assert needle.format(tmp=tmp_path) in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "ran").exists() and not (tmp_path / "o" / "numa.json").exists()


def test_simcxl_fs_says_what_is_wrong_in_one_line_and_starts_nothing(tmp_path, fake):
    gem5, kernel = fake
    cases = [(["--cxl", "cxl-asic:1GiB", "--node", "2"], ["node = 2 is not one of the board's nodes"]),
             (["--cxl", "cxl-asic:1GiB@1GiB", "--local-size", "2GiB"], ["overlaps local DRAM"]),
             (["--cpu", "atomic"], ["the guest is not built", "simcxl guest build", "--kernel"])]
    env = dict(os.environ, SIMCXL_GUEST_CACHE=str(tmp_path / "empty-cache"))
    for args, needles in cases:
        p = subprocess.run(_cmd(["fs", "--gem5", str(gem5), "--out", str(tmp_path / "o"), *args]),
                           capture_output=True, text=True, timeout=120, env=env)
        user_error(p, *needles)
    assert not (tmp_path / "ran").exists()


# ------------------------------------------------ KVM cores only where they pay; else atomic, said so

from simcxl.gem5 import kvm as gem5_kvm  # noqa: E402

FALLBACK_GEM5 = r'''#!/bin/sh
echo "kvm probe: /dev/kvm emulates guest kernel code (0.70 M instructions/s: no hardware virtualisation), no faster than gem5's atomic core"
echo "fallback: --cpu kvm -> atomic: /dev/kvm emulates guest kernel code (0.70 M instructions/s: no hardware virtualisation), no faster than gem5's atomic core"
echo "exit: m5_exit instruction encountered at 0.634 simulated s, 1.0 s wall, cpu=atomic"
'''


def test_a_kvm_boot_that_fell_back_to_atomic_cores_says_so(tmp_path):
    gem5 = tmp_path / "gem5"
    gem5.write_text(FALLBACK_GEM5)
    gem5.chmod(0o755)
    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(ELF_X86_64)
    numa = Numa([Node("ddr-local", 100, 100, 30, 30), Node("cxl-asic", 250, 250, 20, 20)], [[10, 25], [25, 10]])
    r = fs.boot(str(gem5), tmp_path / "o", kernel=str(kernel), cpu="kvm", numa=numa)
    assert r.cpu == "atomic" and r.frame.attrs["cpu"] == "atomic"
    assert r.fallback.startswith("/dev/kvm emulates guest kernel code (0.70 M instructions/s")
    assert r.frame.attrs["fallback"] == r.fallback


def test_kvm_probe_without_a_device_says_why():
    p = gem5_kvm.probe(device="/nonexistent/kvm")
    assert (p.usable, p.ring0_ips) == (False, 0.0) and p.reason == "/nonexistent/kvm does not exist (no KVM on this host)"


@pytest.mark.skipif(not os.access("/dev/kvm", os.R_OK | os.W_OK), reason="needs a readable and writable /dev/kvm")
def test_kvm_probe_times_guest_kernel_code_on_this_host():
    # The same loop twice as long takes about twice as long wherever KVM runs it (natively or
    # emulated): a rate, not a one-off cost. Hardware KVM runs it at billions of instructions
    # a second; a software one well under 50 million.
    a, b = gem5_kvm.probe(200_000), gem5_kvm.probe(800_000)
    assert a.usable == b.usable == (a.ring0_ips >= gem5_kvm.NATIVE_MIN_IPS)
    if not a.usable:
        assert 0.3 < b.ring0_ips / a.ring0_ips < 3.0, (a, b)
        assert "emulates guest kernel code" in a.reason
    print(f"\n/dev/kvm: {b.reason}")


def test_simcxl_fs_says_when_a_kvm_boot_ran_on_atomic_cores(tmp_path):
    gem5 = tmp_path / "gem5"
    gem5.write_text(FALLBACK_GEM5)
    gem5.chmod(0o755)
    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(ELF_X86_64)
    numa = tmp_path / "numa.json"
    numa.write_text(json.dumps(Numa([Node("ddr-local", 100, 100, 30, 30), Node("cxl-asic", 250, 250, 20, 20)]).to_dict()))
    p = subprocess.run(_cmd(["fs", "--gem5", str(gem5), "--out", str(tmp_path / "o"), "--kernel", str(kernel),
                             "--cpu", "kvm", "--numa", str(numa)]), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith(
        "simcxl: booted on atomic cores, not KVM: /dev/kvm emulates guest kernel code"), p.stderr
    # The description given is the one handed to gem5 (distances filled in from its latencies).
    assert json.loads((tmp_path / "o" / "numa.json").read_text())["distances"] == [[10, 25], [25, 10]]
    bad = subprocess.run(_cmd(["fs", "--gem5", str(gem5), "--out", str(tmp_path / "o2"), "--kernel", str(kernel),
                               "--numa", str(numa), "--cxl", "cxl-asic:1GiB", "--cxl", "cxl-fpga:1GiB"]),
                         capture_output=True, text=True, timeout=300)
    user_error(bad, "numa has 2 nodes; allowed: 3, one for local DRAM and one per CXL window")


def test_the_region_command_names_each_windows_decoder_and_devices():
    # By hand from the board's layout: window i's root decoder is decoder0.i, its devices sit on
    # buses 0x80 + 0x10 i + 1 + j; cxl-asic's bridge has one root port and 4 KiB interleave.
    run = fs.region_run(["cxl-asic:1GiB", "cxl-asic:1GiB"])
    assert run.startswith("simcxl-region decoder0.0 4096 1073741824 "
                          "$(basename /sys/bus/pci/devices/0000:81:00.0/mem*); "
                          "simcxl-region decoder0.1 4096 1073741824 "
                          "$(basename /sys/bus/pci/devices/0000:91:00.0/mem*); "
                          "for n in 1 2; do for f in /sys/devices/system/node/node$n/access0/initiators/*_*; do "
                          "[ -f $f ] && echo hmat ${f#/sys/devices/system/node/}=$(cat $f); done; done; "
                          "for f in /sys/bus/cxl/devices/region*/access0/*; do [ -f $f ] && "
                          "echo cxl-access ${f#/sys/bus/cxl/devices/}=$(cat $f 2>/dev/null); done; "
                          "for t in SRAT HMAT; do echo acpi-begin $t; od -An -tx1 -v /sys/firmware/acpi/tables/$t; "
                          "echo acpi-end; done; daxctl list; cxl list -M -D -P -E -u -R; numactl -H")
    assert '"' not in run  # it travels inside simcxl.run="..." on the kernel command line
    # x86's COMMAND_LINE_SIZE is 2048 bytes, the board's other arguments included: eight windows
    # (the most CXL.io's buses allow) still fit.
    assert len(fs.region_run(["cxl-asic:1GiB"] * 8)) < 1700


def test_region_lines_win_over_the_boots_for_the_region_node():
    # At boot node 1 (a CFMWS's, no memory yet) may show nothing or zeros; the lines region_run
    # prints after onlining come later and are what the topology keeps, beside the region's own.
    text = ("hmat node0/access0/initiators/read_latency=110\n"
            "hmat node1/access0/initiators/read_latency=0\n"
            "hmat node1/access0/initiators/read_latency=272\n"
            "hmat node1/access0/initiators/write_bandwidth=19500\n"
            "cxl-access region0/access0/read_latency=272\n"
            "cxl-access region0/access0/write_latency=\n")
    t = fs.parse_topology(text)
    assert t.hmat == {0: {"read_latency": 110}, 1: {"read_latency": 272, "write_bandwidth": 19500}}
    assert t.region_access == {0: {"read_latency": 272}}
