#!/usr/bin/env python3
"""Build SimCXL's full-system guest (a kernel and an initramfs) from Debian packages.

    python3 benchmarks/guest/build_guest.py [--cache DIR] [--install] [--base tinyconfig]

The kernel comes from Debian's linux-source-6.12 (else bookworm's 6.1), configured as `make tinyconfig`
plus kernel.config beside this file; the initramfs holds busybox-static, numactl, cxl, daxctl, ndctl
(Debian's dynamic binaries with the libraries ldd names: no deb-src is needed), the
guest benchmarks built static from the C sources beside this file, m5exit (gem5's
pseudo-ops) and an /init that reads its work from the kernel command line:

    simcxl.run="chase 65536"   the command to run (@readfile: the script gem5's
                               readfile hands over); none: a shell
    simcxl.checkpoint=1        `m5 checkpoint` first (restore resumes after it)
    simcxl.after=shell|m5exit|poweroff|reboot   what follows the command

Outputs go to a cache outside the repository (--cache, else $SIMCXL_GUEST_CACHE,
else ~/.cache/simcxl/guest), one directory per input hash: kernel-<hash> from the
fragment, the base config and the source package's version; initramfs-<hash>
from the benchmark sources, the /init text and the busybox, numactl, ndctl and daxctl
versions.
A second run with the same inputs builds nothing. It prints `key=value` lines:
one per step with its seconds, then vmlinux=, bzimage=, initramfs= and
vmlinux_initramfs= paths (the last: the kernel with the initramfs built in, for
gem5, whose X86 loader takes no initrd). Relinking it needs the built kernel
tree, which stays in the cache (about 1.8 GB for 6.12), so that a changed
guest benchmark costs a relink of under a minute, not a kernel build;
--drop-tree removes it after a clean build.

Bad input (a missing package, kernel source tarball, option dropped by Kconfig)
stops before any build with a one-line message and exit status 2.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FRAGMENT = HERE / "kernel.config"
#: Kernel source packages, preferred first: 6.12 (bookworm-backports, trixie) where
#: the machine's package lists have it, else bookworm's 6.1 (its CXL, NUMA and HMAT
#: support covers what the guest needs; the build checks every option it asks for).
KERNEL_PACKAGES = ("linux-source-6.12", "linux-source-6.1")


def _choose_kernel_package() -> str:
    def installed(name):
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True, check=False)
        return r.stdout.endswith(" installed")

    def available(name):
        r = subprocess.run(["apt-cache", "policy", name], capture_output=True, text=True, check=False)
        return "Candidate:" in r.stdout and "Candidate: (none)" not in r.stdout
    try:
        for check in (installed, available):
            for name in KERNEL_PACKAGES:
                if check(name):
                    return name
    except FileNotFoundError:  # not a Debian machine: check_inputs says what is missing
        pass
    return KERNEL_PACKAGES[0]


KERNEL_PACKAGE = _choose_kernel_package()
KERNEL_TARBALL = Path(f"/usr/src/{KERNEL_PACKAGE}.tar.xz")
#: Debian packages the build needs, and what for.
PACKAGES = {
    KERNEL_PACKAGE: "the kernel source",
    "busybox-static": "the initramfs's shell and tools",
    "numactl": "numactl in the guest",
    "ndctl": "cxl (cxl-cli) and ndctl in the guest: list, create regions",
    "daxctl": "daxctl in the guest: online a region's memory as a NUMA node",
    "build-essential": "gcc and make",
    "bc": "the kernel build",
    "bison": "the kernel's kconfig",
    "flex": "the kernel's kconfig",
    "libelf-dev": "the kernel's objtool",
    "libssl-dev": "the kernel's host tools",
    "cpio": "the initramfs archive",
    "xz-utils": "unpacking the kernel source",
}
#: Debian's dynamic tools in the guest, each with the libraries ldd names beside it.
TOOLS = ("numactl", "cxl", "daxctl", "ndctl")
#: Static guest programs: source, extra compiler flags.
PROGRAMS = {
    "chase": ("chase.c", []),
    "stream": ("stream.c", ["-pthread"]),
    "loaded_latency": ("loaded_latency.c", ["-pthread"]),
    "m5exit": ("m5exit.c", []),
    "seed_entropy": ("seed_entropy.c", []),
}
#: Guest shell scripts: name in /bin, source here.
SCRIPTS = {"simcxl-region": "simcxl_region.sh"}
#: As the SE tests build them: no loop turned into a memcpy call (STREAM counts its own bytes).
CFLAGS = ["-O2", "-static", "-fno-tree-loop-distribute-patterns", "-Wall"]
#: Fixed file times in the archive, so that equal inputs give equal bytes.
EPOCH = 946684800  # 2000-01-01
BASES = ("tinyconfig", "x86_64_defconfig")

INIT = r"""#!/bin/sh
# SimCXL guest init: report the memory topology, run simcxl.run, then simcxl.after.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp
exec </dev/console >/dev/console 2>&1
seed_entropy  # or the first getrandom() (cxl-cli's) waits while the kernel gathers entropy
cmdline=/proc/cmdline
arg() { sed -n "s/.*simcxl\.$1=\"\([^\"]*\)\".*/\1/p; t; s/.*simcxl\.$1=\([^ ]*\).*/\1/p" "$cmdline"; }
echo "simcxl-guest: kernel=$(uname -r) cpus=$(nproc)"
numactl -H
for f in /sys/devices/system/node/node*/access*/initiators/*; do
    [ -f "$f" ] && echo "hmat ${f#/sys/devices/system/node/}=$(cat "$f")"
done
if [ "$(arg checkpoint)" = 1 ]; then
    echo "simcxl-guest: checkpoint"
    m5 checkpoint
fi
run="$(arg run)"
if [ "$run" = @readfile ]; then
    m5 readfile > /tmp/run.sh
    run="sh /tmp/run.sh"
fi
if [ -n "$run" ]; then
    echo "simcxl-run-begin: $run"
    sh -c "$run"
    echo "simcxl-run-end: rc=$?"
fi
case "$(arg after)" in
    m5exit) m5 exit ;;
    poweroff) poweroff -f ;;
    reboot) reboot -f ;;
esac
echo "simcxl-guest: shell"
exec sh
"""


class GuestBuildError(Exception):
    """A missing input or a failed step, with a one-line message."""


def default_cache() -> Path:
    env = os.environ.get("SIMCXL_GUEST_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "simcxl" / "guest"


def package_version(name: str) -> str | None:
    """The installed version of a Debian package, or None."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}", name],
                             capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        raise GuestBuildError("dpkg-query not found: the guest builds from Debian packages") from None
    status, _, version = out.partition("\t")
    return version if status.endswith(" installed") and version else None


def missing_packages(version=package_version) -> list[str]:
    return [p for p in PACKAGES if version(p) is None]


def install_line(missing: list[str]) -> str:
    return "apt-get install -y " + " ".join(missing)


def refresh_kernel_choice() -> Path:
    """Refresh apt's package lists before choosing the kernel source: stale lists
    (a fresh image's) offer only 6.1 where bookworm-security has 6.12, and Linux
    6.1 cannot create volatile CXL regions itself (6.3 and later do)."""
    global KERNEL_PACKAGE, KERNEL_TARBALL
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False)
    chosen = _choose_kernel_package()
    if chosen != KERNEL_PACKAGE:
        PACKAGES[chosen] = PACKAGES.pop(KERNEL_PACKAGE)
        KERNEL_PACKAGE, KERNEL_TARBALL = chosen, Path(f"/usr/src/{chosen}.tar.xz")
    return KERNEL_TARBALL


def check_inputs(tarball: Path = KERNEL_TARBALL, version=package_version, install: bool = False) -> None:
    """Fail with one line naming what is missing, or install it when asked."""
    missing = missing_packages(version)
    if missing and install:
        if os.geteuid() != 0:
            raise GuestBuildError(f"--install needs root; run as root: {install_line(missing)}")
        r = subprocess.run(["apt-get", "install", "-y", *missing], capture_output=True, text=True, check=False)
        if r.returncode:
            last = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["no output"])[0]
            raise GuestBuildError(f"`{install_line(missing)}` failed: {last}")
        missing = missing_packages(version)
    if missing:
        raise GuestBuildError(f"missing Debian packages: {' '.join(missing)}; run "
                              f"`{install_line(missing)}` (or add --install)")
    if not tarball.is_file():
        raise GuestBuildError(f"kernel source {tarball} not found: reinstall it with "
                              f"`apt-get install --reinstall -y {KERNEL_PACKAGE}`")


def digest(parts: list[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in parts:
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()[:16]


def kernel_key(fragment: bytes, source_version: str, base: str) -> str:
    return digest([("fragment", fragment), ("source", source_version.encode()), ("base", base.encode())])


def initramfs_key(sources: dict[str, bytes], init: str, versions: dict[str, str]) -> str:
    parts = [("src:" + n, d) for n, d in sorted(sources.items())]
    parts += [("init", init.encode()), ("cflags", " ".join(CFLAGS).encode()), ("tools", " ".join(TOOLS).encode())]
    parts += [("pkg:" + n, v.encode()) for n, v in sorted(versions.items())]
    return digest(parts)


def benchmark_sources(src: Path = HERE) -> dict[str, bytes]:
    """Every C source, header and script the guest's programs come from (not the SE-mode
    programs beside them, which the initramfs does not hold)."""
    programs = {source for source, _ in PROGRAMS.values()} | set(SCRIPTS.values())
    return {p.name: p.read_bytes() for p in sorted(src.iterdir()) if p.suffix == ".h" or p.name in programs}


def parse_fragment(text: str) -> dict[str, str]:
    """CONFIG_X -> value ('n' for `# CONFIG_X is not set`)."""
    want = {}
    for line in text.splitlines():
        line = line.strip()
        m = re.fullmatch(r"# (CONFIG_\w+) is not set", line)
        if m:
            want[m.group(1)] = "n"
        elif line and not line.startswith("#"):
            m = re.fullmatch(r"(CONFIG_\w+)=(.*)", line)
            if not m:
                raise GuestBuildError(f"kernel.config: cannot read line '{line}'")
            want[m.group(1)] = m.group(2)
    return want


def dropped_options(want: dict[str, str], config_text: str) -> list[str]:
    """Fragment options whose value the final .config does not have."""
    have = parse_fragment("\n".join(l for l in config_text.splitlines()
                                    if l.startswith("CONFIG_") or l.endswith(" is not set")))
    return [f"{k}={v} (got {have.get(k, 'n')})" for k, v in want.items() if have.get(k, "n") != v]


def run(cmd: list[str], log: Path, cwd: Path | None = None) -> None:
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, check=False)
    if r.returncode:
        raise GuestBuildError(f"`{' '.join(cmd)}` failed with status {r.returncode}; see {log}")


class Steps:
    """Times each step and prints it as `step=<name> seconds=<x>`."""

    def __init__(self, out=sys.stdout):
        self.out, self.times = out, {}

    def __call__(self, name, fn, *args):
        t = time.monotonic()
        r = fn(*args)
        self.times[name] = time.monotonic() - t
        print(f"step={name} seconds={self.times[name]:.1f}", file=self.out, flush=True)
        return r


def source_version(tarball: Path) -> str:
    """The kernel source's identity: the package version, or the file itself if not the package's."""
    if tarball == KERNEL_TARBALL:
        return package_version(KERNEL_PACKAGE) or ""
    st = tarball.stat()
    return f"{tarball}:{st.st_size}:{st.st_mtime_ns}"


def kernel_dir(cache: Path, base: str = "tinyconfig", tarball: Path = KERNEL_TARBALL) -> Path:
    return cache / f"kernel-{kernel_key(FRAGMENT.read_bytes(), source_version(tarball), base)}"


def initramfs_dir(cache: Path) -> Path:
    versions = {p: package_version(p) or "" for p in ("busybox-static", "numactl", "ndctl", "daxctl")}
    return cache / f"initramfs-{initramfs_key(benchmark_sources(), INIT, versions)}"


def built(cache: Path | None = None, base: str = "tinyconfig") -> dict[str, Path] | None:
    """The cached guest's paths if it is built for the current inputs, else None."""
    cache = (cache or default_cache()).expanduser()
    paths = outputs(kernel_dir(cache, base), initramfs_dir(cache))
    return paths if all(p.is_file() for p in paths.values()) else None


def outputs(kernel: Path, initramfs: Path) -> dict[str, Path]:
    return {"vmlinux": kernel / "vmlinux", "bzimage": kernel / "bzImage", "initramfs": initramfs / "initramfs.cpio.gz",
            "vmlinux_initramfs": embedded_kernel(kernel, initramfs)}


def embedded_kernel(kernel: Path, initramfs: Path) -> Path:
    """The vmlinux with `initramfs` built in, uncompressed (see embed_initramfs)."""
    return kernel / f"vmlinux-{initramfs.name}-raw"


def embed_initramfs(tree: Path, initramfs: Path, out: Path, make: list[str], jobs: int, log: Path) -> None:
    """Relink the kernel with the initramfs built in (CONFIG_INITRAMFS_SOURCE):
    gem5's X86 loader takes an ELF kernel and no initrd, so its guest carries
    the initramfs inside. Only usr/ and the final link are redone. It goes in
    uncompressed: gem5's loader puts the ELF in memory for free, whereas the
    guest gunzipping 15 MB on a simulated core was a large share of a boot's
    instructions."""
    cpio = tree.parent / "initramfs.cpio"
    with gzip.open(initramfs / "initramfs.cpio.gz", "rb") as f:
        cpio.write_bytes(f.read())
    run(["scripts/config", "--set-str", "INITRAMFS_SOURCE", str(cpio), "--disable", "INITRAMFS_COMPRESSION_GZIP",
         "--enable", "INITRAMFS_COMPRESSION_NONE"], log, tree)
    run(make + ["olddefconfig"], log, tree)
    if "CONFIG_INITRAMFS_COMPRESSION_NONE=y" not in (tree / ".config").read_text():
        raise GuestBuildError("the kernel would not take CONFIG_INITRAMFS_COMPRESSION_NONE for the built-in initramfs")
    run(make + [f"-j{jobs}", "vmlinux"], log, tree)
    shutil.copy2(tree / "vmlinux", out)
    run(["scripts/config", "--set-str", "INITRAMFS_SOURCE", "", "--disable", "INITRAMFS_COMPRESSION_NONE",
         "--enable", "INITRAMFS_COMPRESSION_GZIP"], log, tree)


def build_kernel(cache: Path, base: str, jobs: int, steps: Steps, keep_tree: bool, tarball: Path,
                 initramfs: Path | None = None) -> Path:
    fragment = FRAGMENT.read_bytes()
    out = kernel_dir(cache, base, tarball)
    embedded = embedded_kernel(out, initramfs) if initramfs else None
    if (out / "vmlinux").is_file() and (out / "bzImage").is_file() and (embedded is None or embedded.is_file()):
        return out
    work = cache / (out.name + ".work")  # kept if a build stops, so a rerun resumes it
    work.mkdir(parents=True, exist_ok=True)
    log = work / "build.log"
    tree = work / KERNEL_PACKAGE
    make = ["nice", "-n", "19", "make", "ARCH=x86_64"]
    if not (work / ".unpacked").is_file():
        shutil.rmtree(tree, ignore_errors=True)
        steps("unpack", run, ["nice", "-n", "19", "tar", "-xf", str(tarball), "-C", str(work)], log)
        (work / ".unpacked").touch()

    def configure():
        run(make + [base], log, tree)
        run(["scripts/kconfig/merge_config.sh", "-m", ".config", str(FRAGMENT)], log, tree)
        run(make + ["olddefconfig"], log, tree)
        want = parse_fragment(fragment.decode())
        # An option this kernel version does not have at all (6.1 predates
        # DEV_DAX_CXL) is skipped by name; one it has but could not set fails.
        known = set(re.findall(r"^\s*(?:menu)?config\s+(\w+)", "\n".join(
            k.read_text(errors="replace") for k in tree.rglob("Kconfig*")), re.M))
        absent = [k for k in want if k[len("CONFIG_"):] not in known]
        if absent:
            print(f"note: {KERNEL_PACKAGE} has no {', '.join(absent)}; the guest goes without", file=sys.stderr)
        lost = dropped_options({k: v for k, v in want.items() if k not in absent}, (tree / ".config").read_text())
        if lost:
            raise GuestBuildError("kernel.config options dropped by Kconfig (unmet dependencies): " + ", ".join(lost))

    if not (out / "vmlinux").is_file():
        steps("configure", configure)
        steps("kernel", run, make + [f"-j{jobs}", "vmlinux", "bzImage"], log, tree)
        tmp = Path(tempfile.mkdtemp(dir=cache, prefix=out.name + ".tmp"))
        shutil.copy2(tree / "vmlinux", tmp / "vmlinux")
        shutil.copy2(tree / "arch/x86/boot/bzImage", tmp / "bzImage")
        shutil.copy2(tree / ".config", tmp / "config")
        shutil.copy2(log, tmp / "build.log")
        tmp.rename(out)
    elif not (tree / ".config").is_file():
        steps("configure", configure)  # a new initramfs for a kernel whose tree is gone: rebuild it
    if embedded is not None:
        steps("embed-initramfs", embed_initramfs, tree, initramfs, embedded, make, jobs, log)
    if not keep_tree:
        shutil.rmtree(work)
    return out


def shared_libraries(binary: str) -> list[str]:
    """The absolute paths ldd resolves for a dynamic binary."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return re.findall(r"(/\S+) \(0x", out)


def assemble_initramfs(root: Path, out: Path, src: Path = HERE, cc: str = "gcc") -> None:
    """Lay out the guest's root file system under `root` and pack it as `out` (cpio.gz)."""
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "dev", "proc", "sys", "tmp"):
        (root / d).mkdir(parents=True, exist_ok=True)
    busybox = root / "bin/busybox"
    shutil.copy2("/bin/busybox", busybox)
    applets = subprocess.run([str(busybox), "--list-full"], capture_output=True, text=True, check=True).stdout
    for rel in applets.split():
        link = root / rel
        if not link.exists() and rel != "bin/busybox":
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(busybox, link.parent))
    packages = {"numactl": "numactl", "cxl": "ndctl", "daxctl": "daxctl", "ndctl": "ndctl"}
    for tool in TOOLS:
        path = shutil.which(tool, path="/usr/bin:/bin")
        if path is None:
            raise GuestBuildError(f"{tool} not found in /usr/bin: `apt-get install -y {packages[tool]}`")
        for f in [path] + shared_libraries(path):
            dest = root / f.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(os.path.realpath(f), dest)
    for name, (source, flags) in PROGRAMS.items():
        r = subprocess.run(["nice", "-n", "19", cc, *CFLAGS, *flags, "-o", str(root / "bin" / name), str(src / source)],
                           capture_output=True, text=True, check=False)
        if r.returncode:
            first = (r.stderr.strip().splitlines() or ["?"])[0]
            raise GuestBuildError(f"cannot build {source}: {first}")
    for name, source in SCRIPTS.items():
        shutil.copy(src / source, root / "bin" / name)
        (root / "bin" / name).chmod(0o755)
    (root / "bin/m5").symlink_to("m5exit")
    init = root / "init"
    init.write_text(INIT)
    init.chmod(0o755)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    for f in files:
        os.utime(root / f, (EPOCH, EPOCH), follow_symlinks=False)
    with open(out, "wb") as o:
        cpio = subprocess.Popen(["cpio", "--quiet", "-o", "-H", "newc", "--reproducible", "-R", "0:0"],
                                cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        gz = subprocess.Popen(["gzip", "-9", "-n"], stdin=cpio.stdout, stdout=o)
        cpio.stdout.close()
        cpio.communicate(("\n".join(files) + "\n").encode())
        if cpio.returncode or gz.wait():
            raise GuestBuildError(f"packing {out} failed (cpio {cpio.returncode}, gzip {gz.returncode})")


def build_initramfs(cache: Path, steps: Steps) -> Path:
    out = initramfs_dir(cache)
    if (out / "initramfs.cpio.gz").is_file():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache, prefix=out.name + ".tmp"))
    try:
        steps("initramfs", assemble_initramfs, tmp / "root", tmp / "initramfs.cpio.gz")
        shutil.rmtree(tmp / "root")
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def build(cache: Path | None = None, base: str = "tinyconfig", jobs: int = 2, install: bool = False,
          keep_tree: bool = True, tarball: Path = KERNEL_TARBALL, out=sys.stdout) -> dict[str, Path]:
    """Build (or find in the cache) the guest; returns the vmlinux, bzimage and initramfs paths."""
    if base not in BASES:
        raise GuestBuildError(f"base config must be one of {', '.join(BASES)}, got '{base}'")
    if jobs < 1:
        raise GuestBuildError(f"jobs must be at least 1, got {jobs}")
    if install and tarball == KERNEL_TARBALL:
        tarball = refresh_kernel_choice()
    check_inputs(tarball, install=install)
    cache = (cache or default_cache()).expanduser()
    steps = Steps(out)
    t = time.monotonic()
    initramfs = build_initramfs(cache, steps)
    kernel = build_kernel(cache, base, jobs, steps, keep_tree, tarball, initramfs)
    paths = outputs(kernel, initramfs)
    print(f"step=total seconds={time.monotonic() - t:.1f}", file=out)
    for k, p in paths.items():
        print(f"{k}={p} bytes={p.stat().st_size}", file=out)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, help="cache directory (default $SIMCXL_GUEST_CACHE or ~/.cache/simcxl/guest)")
    ap.add_argument("--base", default="tinyconfig", help="kernel config to merge the fragment onto "
                    f"({' or '.join(BASES)}; default tinyconfig)")
    ap.add_argument("--kernel-tarball", type=Path, default=KERNEL_TARBALL,
                    help=f"kernel source (default {KERNEL_TARBALL}, from {KERNEL_PACKAGE})")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel kernel build jobs (default 2)")
    ap.add_argument("--install", action="store_true", help="apt-get install missing packages (root only)")
    ap.add_argument("--drop-tree", action="store_true",
                    help="remove the built kernel tree from the cache (a new initramfs then rebuilds the kernel)")
    args = ap.parse_args(argv)
    try:
        build(args.cache, args.base, args.jobs, args.install, not args.drop_tree, args.kernel_tarball)
    except GuestBuildError as e:
        print(f"build_guest: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
