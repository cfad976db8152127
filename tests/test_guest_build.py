"""The full-system guest's build (benchmarks/guest/build_guest.py): its inputs, cache keys and initramfs,
the loaded-latency probe and m5exit run natively, and (slow) a QEMU boot of the built guest."""

import gzip
import importlib.util
import re
import shutil
import struct
import subprocess
import sys

import pytest

from conftest import CC, REPO, build_chase, build_guest

GUEST = REPO / "benchmarks" / "guest"
SCRIPT = GUEST / "build_guest.py"
_spec = importlib.util.spec_from_file_location("build_guest", SCRIPT)
bg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bg)


def fragment_options() -> dict:
    """kernel.config read with its own regexes: CONFIG_X -> y/n/value."""
    out = {}
    for line in (GUEST / "kernel.config").read_text().splitlines():
        if m := re.fullmatch(r"(CONFIG_\w+)=(\S+)", line):
            out[m.group(1)] = m.group(2)
        elif m := re.fullmatch(r"# (CONFIG_\w+) is not set", line):
            out[m.group(1)] = "n"
    return out


def test_fragment_has_what_the_issue_asks():
    opts = fragment_options()
    built_in = ["64BIT", "SERIAL_8250", "SERIAL_8250_CONSOLE", "NUMA", "ACPI", "ACPI_NUMA", "ACPI_HMAT",
                "MEMORY_HOTPLUG", "CXL_BUS", "CXL_PCI", "CXL_ACPI", "CXL_MEM", "CXL_PORT", "CXL_REGION", "DAX",
                "DEV_DAX", "BLK_DEV_INITRD", "DEVMEM"]
    left_out = ["MODULES", "RANDOMIZE_BASE", "DRM", "SOUND", "WLAN", "USB_SUPPORT", "STRICT_DEVMEM"]
    assert {o: opts.get("CONFIG_" + o) for o in built_in} == {o: "y" for o in built_in}
    assert {o: opts.get("CONFIG_" + o) for o in left_out} == {o: "n" for o in left_out}
    assert not [k for k, v in opts.items() if v == "m"], "the guest loads no modules"


def test_dropped_options_are_named():
    want = {"CONFIG_CXL_REGION": "y", "CONFIG_NR_CPUS": "16", "CONFIG_MODULES": "n", "CONFIG_DRM": "n"}
    config = "CONFIG_NR_CPUS=8\n# CONFIG_CXL_REGION is not set\nCONFIG_DRM=y\n"  # MODULES absent: not set
    assert bg.dropped_options(want, config) == ["CONFIG_CXL_REGION=y (got n)", "CONFIG_NR_CPUS=16 (got 8)",
                                                "CONFIG_DRM=n (got y)"]
    assert bg.dropped_options(want, "CONFIG_CXL_REGION=y\nCONFIG_NR_CPUS=16\n") == []


def test_fragment_reader_rejects_a_garbled_line():
    with pytest.raises(bg.GuestBuildError, match="cannot read line 'CXL_BUS=y'"):
        bg.parse_fragment("CONFIG_NUMA=y\nCXL_BUS=y\n")


def test_kernel_key_changes_with_each_input_only():
    frag = (GUEST / "kernel.config").read_bytes()
    k = bg.kernel_key(frag, "6.12.117-1~deb12u1", "tinyconfig")
    assert bg.kernel_key(frag, "6.12.117-1~deb12u1", "tinyconfig") == k
    changed = [bg.kernel_key(frag + b"CONFIG_SWAP=y\n", "6.12.117-1~deb12u1", "tinyconfig"),
               bg.kernel_key(frag, "6.12.119-1~deb12u1", "tinyconfig"),
               bg.kernel_key(frag, "6.12.117-1~deb12u1", "x86_64_defconfig")]
    assert len({k, *changed}) == 4


def test_initramfs_key_follows_the_sources(tmp_path):
    for f in GUEST.iterdir():
        if f.suffix in (".c", ".h", ".py", ".config"):
            shutil.copy(f, tmp_path / f.name)
    versions = {"busybox-static": "1:1.35.0-4", "numactl": "2.0.16-1"}
    key = lambda: bg.initramfs_key(bg.benchmark_sources(tmp_path), bg.INIT, versions)
    k = key()
    assert set(bg.benchmark_sources(tmp_path)) >= {"chase.c", "stream.c", "loaded_latency.c", "m5exit.c", "guest.h"}
    (tmp_path / "kernel.config").write_text("CONFIG_SWAP=y\n")  # the kernel's input, not the initramfs's
    (tmp_path / "notes.txt").write_text("not a source")
    (tmp_path / "cxlio_probe.c").write_text("/* an SE-mode program: not in the initramfs */\n")
    assert key() == k
    (tmp_path / "guest.h").write_text((tmp_path / "guest.h").read_text() + "\n/* changed */\n")
    k2 = key()
    assert k2 != k
    assert bg.initramfs_key(bg.benchmark_sources(tmp_path), bg.INIT + "\n", versions) != k2
    assert bg.initramfs_key(bg.benchmark_sources(tmp_path), bg.INIT, {**versions, "numactl": "2.0.18-1"}) != k2


def test_a_missing_package_is_named_with_its_install_line(tmp_path):
    absent = {"cpio", "bison"}
    with pytest.raises(bg.GuestBuildError) as e:
        bg.check_inputs(tmp_path / "none.tar.xz", version=lambda p: None if p in absent else "1.0")
    msg = str(e.value)
    assert "\n" not in msg
    assert "missing Debian packages: bison cpio" in msg
    assert "apt-get install -y bison cpio" in msg


def test_a_missing_kernel_tarball_is_named(tmp_path):
    with pytest.raises(bg.GuestBuildError) as e:
        bg.check_inputs(tmp_path / "linux-source-6.12.tar.xz", version=lambda p: "1.0")
    assert "\n" not in str(e.value)
    assert f"kernel source {tmp_path / 'linux-source-6.12.tar.xz'} not found" in str(e.value)


def test_the_script_fails_in_one_line_before_building(tmp_path):
    missing = bg.missing_packages()
    r = subprocess.run([sys.executable, str(SCRIPT), "--cache", str(tmp_path / "cache"), "--kernel-tarball",
                        str(tmp_path / "absent.tar.xz")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    named = missing[0] if missing else str(tmp_path / "absent.tar.xz")
    assert named in lines[0]
    assert not (tmp_path / "cache").exists()


def test_a_bad_base_config_is_named(tmp_path):
    msg = "base config must be one of tinyconfig, x86_64_defconfig, got 'allyes'"
    with pytest.raises(bg.GuestBuildError, match=msg):
        bg.build(tmp_path, base="allyes")


def test_init_reads_its_work_from_the_kernel_command_line(tmp_path):
    sh = shutil.which("busybox") or shutil.which("sh")
    cmdline = tmp_path / "cmdline"
    cmdline.write_text('console=ttyS0 simcxl.run="chase -a 1000 65536" simcxl.after=poweroff quiet\n')
    arg = next(l for l in bg.INIT.splitlines() if l.startswith("arg()"))
    script = f'cmdline={cmdline}; {arg}; echo "[$(arg run)][$(arg after)][$(arg checkpoint)]"'
    cmd = [sh, "sh", "-c", script] if sh.endswith("busybox") else [sh, "-c", script]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert out == "[chase -a 1000 65536][poweroff][]\n"


def newc_members(archive) -> dict:
    """name -> (mode, data) of a gzipped newc cpio, read by hand (the format: 110-byte ASCII header)."""
    raw, out, pos = gzip.decompress(archive.read_bytes()), {}, 0
    while True:
        hdr = raw[pos:pos + 110]
        assert hdr[:6] == b"070701"
        f = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        name = raw[pos + 110:pos + 110 + namesize - 1].decode()
        pos = (pos + 110 + namesize + 3) & ~3
        data = raw[pos:pos + size]
        pos = (pos + size + 3) & ~3
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, data)


def elf_interpreter(data: bytes) -> bool:
    """Whether an ELF64 file asks for a dynamic loader (a PT_INTERP program header)."""
    assert data[:4] == b"\x7fELF"
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    return any(struct.unpack_from("<I", data, phoff + i * phentsize)[0] == 3 for i in range(phnum))


@pytest.fixture(scope="module")
def initramfs(tmp_path_factory):
    need = [p for p in ("busybox-static", "numactl", "ndctl", "daxctl", "cpio") if bg.package_version(p) is None]
    if need or CC is None:
        pytest.skip(f"needs Debian packages {' '.join(need) or 'build-essential'} for the initramfs")
    d = tmp_path_factory.mktemp("initramfs")
    bg.assemble_initramfs(d / "root", d / "initramfs.cpio.gz", cc=CC)
    return d / "initramfs.cpio.gz"


def test_initramfs_holds_the_guest(initramfs):
    m = newc_members(initramfs)
    is_link = lambda n: m[n][0] & 0o170000 == 0o120000
    for prog in ("chase", "stream", "loaded_latency", "m5exit", "busybox"):
        mode, data = m["bin/" + prog]
        assert mode & 0o111 and not elf_interpreter(data), f"{prog} is a static executable"
    assert m["init"][0] & 0o111 and m["init"][1].startswith(b"#!/bin/sh\n")
    assert is_link("bin/sh") and m["bin/sh"][1] == b"busybox"
    assert is_link("bin/m5") and m["bin/m5"][1] == b"m5exit"
    assert elf_interpreter(m["usr/bin/numactl"][1])  # Debian's, with what ldd names beside it
    for lib in ("lib/x86_64-linux-gnu/libnuma.so.1", "lib/x86_64-linux-gnu/libc.so.6", "lib64/ld-linux-x86-64.so.2"):
        assert m[lib][1][:4] == b"\x7fELF", lib
    # cxl-cli, daxctl and ndctl for Linux's CXL flow, each with every library the host's ldd resolves for it.
    for tool in ("usr/bin/cxl", "usr/bin/daxctl", "usr/bin/ndctl"):
        assert elf_interpreter(m[tool][1]), tool
        for lib in bg.shared_libraries("/" + tool):
            assert m[lib.lstrip("/")][1][:4] == b"\x7fELF", (tool, lib)


def test_m5exit_encodes_gem5s_ops(initramfs):
    """The 0F 04 opcode with each op's number (m5ops.h: exit 0x21, checkpoint 0x43, readfile 0x50)."""
    data = newc_members(initramfs)["bin/m5exit"][1]
    for op in (0x21, 0x43, 0x50):
        assert b"\x0f\x04" + struct.pack("<H", op) in data


def test_m5exit_instruction_faults_outside_gem5(tmp_path):
    if CC is None:
        pytest.skip("needs a C compiler")
    m5 = build_guest(tmp_path, "m5exit")
    r = subprocess.run([str(m5), "-i", "exit"], capture_output=True, timeout=30)
    assert r.returncode == -4  # SIGILL: 0F 04 is not an instruction outside gem5
    r = subprocess.run([str(m5), "-i", "reset"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.startswith("usage: m5exit")


LL_LINE = re.compile(r"traffic_threads=(\d+) rw=(\d+):(\d+) delay=(\d+) traffic_bytes=(\d+) chase_bytes=(\d+) "
                     r"accesses=(\d+) latency_ns=([\d.]+) traffic_gbps=([\d.]+) end=0x[0-9a-f]+\n")


def test_loaded_latency_misses_the_l1(tmp_path):
    """A chase over 8 MiB misses a 32-48 KiB L1 on nearly every load, and even an L2 hit takes about
    three L1 hits (4-5 cycles against 14 or more), so it is well above a 16 KiB chase's L1-hit latency."""
    if CC is None:
        pytest.skip("needs a C compiler")
    ll, chase = build_guest(tmp_path, "loaded_latency"), build_chase(tmp_path)
    l1 = min(float(re.search(r"latency_ns=([\d.]+)", subprocess.run(
        [str(chase), "-a", "100000", "16384"], capture_output=True, text=True, check=True).stdout).group(1))
             for _ in range(3))
    out = subprocess.run([str(ll), "-t", "1", "-b", str(1 << 20), "-r", "2:1", "-a", "50000", str(8 << 20)],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    m = LL_LINE.fullmatch(out)
    assert m, out
    assert m.group(1, 2, 3, 4, 5, 6, 7) == ("1", "2", "1", "0", str(1 << 20), str(8 << 20), "50000")
    assert float(m.group(8)) > 2 * l1, (out, l1)


def test_loaded_latency_rejects_bad_arguments(tmp_path):
    if CC is None:
        pytest.skip("needs a C compiler")
    ll = build_guest(tmp_path, "loaded_latency")
    for args, msg in ((["-r", "0:0", "4096"], "READS:WRITES must be two integers, not both 0, got '0:0'"),
                      (["-r", "3", "4096"], "READS:WRITES must be two integers, not both 0, got '3'"),
                      (["-t", "2000", "4096"], "THREADS = 2000 is above the maximum of 1024"),
                      (["64"], "CHASE_BYTES must be at least 128 and TRAFFIC_BYTES at least 64")):
        r = subprocess.run([str(ll), *args], capture_output=True, text=True, timeout=30)
        assert (r.returncode, r.stderr) == (2, f"loaded_latency: {msg}\n"), args


QEMU = shutil.which("qemu-system-x86_64")


@pytest.mark.slow
def test_guest_boots_under_qemu_with_two_nodes_and_runs_chase():
    """QEMU's SRAT gives the guest two nodes of 1 GiB, node 1 CPU-less, and its HMAT the latencies set
    below (ns): the kernel must report both, then run chase to completion and reboot (with -no-reboot,
    QEMU's exit)."""
    if QEMU is None:
        pytest.skip("qemu-system-x86_64 is not installed (apt-get install -y qemu-system-x86)")
    paths = bg.built()
    if paths is None:
        pytest.skip(f"the guest is not built: run python3 {SCRIPT.relative_to(REPO)}")
    hmat = []
    for target, lat, bw in ((0, 80, "20G"), (1, 250, "8G")):
        lb = f"hmat-lb,initiator=0,target={target},hierarchy=memory,data-type=access"
        hmat += ["-numa", f"{lb}-latency,latency={lat}", "-numa", f"{lb}-bandwidth,bandwidth={bw}"]
    # TCG, not KVM: it boots this guest in about 10 s, where a nested KVM can hang before the kernel prints
    cmd = [QEMU, "-accel", "tcg", "-machine", "pc,hmat=on", "-m", "2G", "-smp", "2", "-nographic", "-no-reboot",
           "-object", "memory-backend-ram,id=m0,size=1G", "-object", "memory-backend-ram,id=m1,size=1G",
           "-numa", "node,nodeid=0,memdev=m0,cpus=0-1,initiator=0", "-numa", "node,nodeid=1,memdev=m1,initiator=0",
           *hmat, "-kernel", str(paths["bzimage"]), "-initrd", str(paths["initramfs"]),
           "-append", 'console=ttyS0 panic=-1 simcxl.run="numactl --membind=1 chase 1048576" simcxl.after=reboot']
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL).stdout
    assert "available: 2 nodes (0-1)" in out, out
    assert re.search(r"node 0 cpus: 0 1\s", out) and re.search(r"node 1 cpus:\s*\n", out), out
    assert "hmat node1/access0/initiators/read_latency=250" in out, out
    assert "hmat node0/access0/initiators/read_latency=80" in out, out
    assert "hmat node1/access0/initiators/read_bandwidth=8192" in out, out  # 8 GiB/s in MiB/s
    assert re.search(r"size_bytes=1048576 accesses=20000 latency_ns=[\d.]+ end=0x[0-9a-f]+\s+verify_lines=32768 "
                     r"mismatches=0", out), out
    assert "simcxl-run-end: rc=0" in out, out


def test_a_second_run_finds_the_guest_in_the_cache(tmp_path):
    """With the outputs of the current inputs in the cache, build() builds nothing and names them."""
    if bg.missing_packages() or not bg.KERNEL_TARBALL.is_file():
        pytest.skip(f"needs Debian packages {' '.join(bg.missing_packages()) or bg.KERNEL_PACKAGE}")
    kernel, initramfs = bg.kernel_dir(tmp_path), bg.initramfs_dir(tmp_path)
    embedded = kernel / f"vmlinux-{initramfs.name}-raw"  # built in uncompressed
    for f, size in ((kernel / "vmlinux", 3), (kernel / "bzImage", 5), (initramfs / "initramfs.cpio.gz", 7),
                    (embedded, 11)):
        f.parent.mkdir(exist_ok=True)
        f.write_bytes(b"x" * size)
    log = tmp_path / "log"
    with open(log, "w") as out:
        paths = bg.build(tmp_path, out=out)
    lines = log.read_text().splitlines()
    assert [l.split()[0] for l in lines] == ["step=total", f"vmlinux={kernel / 'vmlinux'}",
                                             f"bzimage={kernel / 'bzImage'}",
                                             f"initramfs={initramfs / 'initramfs.cpio.gz'}",
                                             f"vmlinux_initramfs={embedded}"]
    assert [l.split()[1] for l in lines[1:]] == ["bytes=3", "bytes=5", "bytes=7", "bytes=11"]
    assert paths == bg.built(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([kernel.name, initramfs.name, "log"])
