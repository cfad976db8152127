"""The guest programs that gem5's X86 runs execute (benchmarks/guest/chase.c and
stream.c), built and run natively: their output format, data checks and errors."""

import re
import subprocess
import time

import pytest

from conftest import CC, REPO, build_chase, build_guest

pytestmark = pytest.mark.skipif(not CC, reason="needs a C compiler")


@pytest.fixture(scope="module")
def chase(tmp_path_factory):
    return build_chase(tmp_path_factory.mktemp("guest"))


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    return build_guest(tmp_path_factory.mktemp("guest"), "stream")


@pytest.mark.parametrize("kernel,arrays", [("copy", 2), ("scale", 2), ("add", 3), ("triad", 3), ("read", 1)])
def test_stream_guest_counts_bytes_and_checks_elements(stream, kernel, arrays):
    r = subprocess.run([str(stream), "-p", "3", "-w", "-t", "60000", kernel, "2", "100000"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    m = re.search(r"kernel=(\w+) threads=2 bytes=(\d+) stream_gbps=([0-9.]+) check=ok t0_ns=(\d+) t1_ns=(\d+)",
                  r.stdout)
    assert m and m.group(1) == kernel
    # STREAM's counting: 8 B per timed element and array touched, per pass.
    assert int(m.group(2)) == 2 * 60000 * 8 * arrays * 3
    assert float(m.group(3)) > 0 and int(m.group(5)) > int(m.group(4))


@pytest.mark.parametrize("args, message", [
    ([], "usage: stream [-m] [-g GATE] [-s TURN INDEX] [-p PASSES] [-t TIMED] [-w] KERNEL THREADS "
         "ELEMENTS_PER_THREAD"),
    (["-s", "turn", "-1", "copy", "1", "10"], "INDEX must be a non-negative integer, got '-1'"),
    (["-t", "11", "copy", "1", "10"], "TIMED = 11 is out of range; allowed: 1 to ELEMENTS_PER_THREAD (10)"),
    (["sum", "1", "10"], "KERNEL = 'sum' is not allowed; allowed: copy, scale, add, triad, read"),
    (["copy", "300", "10"], "THREADS = 300 is out of range; allowed: 1 to 256"),
    (["copy", "1", "0"], "ELEMENTS_PER_THREAD must be a positive integer, got '0'"),
])
def test_stream_guest_rejects_bad_arguments(stream, args, message):
    r = subprocess.run([str(stream), *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and message in r.stderr


def test_stream_guest_waits_at_its_gate(stream, tmp_path):
    # Copies run as separate processes start when the gate opens and leave
    # only once it closes, so that none checks its arrays while another is timed.
    gate = tmp_path / "gate"
    p = subprocess.Popen([str(stream), "-g", str(gate), "copy", "1", "1000"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        assert p.poll() is None  # waiting for the gate to open
        gate.touch()
        time.sleep(0.5)
        assert p.poll() is None  # done, waiting for it to close
        gate.unlink()
        assert p.wait(timeout=30) == 0
        assert "kernel=copy threads=1 bytes=16000 " in p.stdout.read()
    finally:
        p.kill()


def test_stream_guests_touch_their_arrays_in_turn(stream, tmp_path):
    # Copy 1 waits for copy 0 to have touched its arrays (turn.1), and passes
    # the turn on (turn.2) once it has touched its own.
    turn = tmp_path / "turn"
    second = subprocess.Popen([str(stream), "-s", str(turn), "1", "copy", "1", "1000"], stdout=subprocess.PIPE,
                              text=True)
    try:
        time.sleep(0.5)
        assert second.poll() is None and not (tmp_path / "turn.2").exists()
        first = subprocess.run([str(stream), "-s", str(turn), "0", "copy", "1", "1000"], capture_output=True,
                               text=True, timeout=30)
        assert first.returncode == 0 and (tmp_path / "turn.1").exists()
        assert second.wait(timeout=30) == 0 and (tmp_path / "turn.2").exists()
        assert "check=ok" in second.stdout.read()
    finally:
        second.kill()


def test_chase_reports_each_size_and_checks_every_line(chase):
    r = subprocess.run([str(chase), "-a", "200000", "16384", str(64 << 20)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    rows = re.findall(r"size_bytes=(\d+) accesses=(\d+) latency_ns=([0-9.]+)", r.stdout)
    assert [(int(s), int(a)) for s, a, _ in rows] == [(16384, 200000), (64 << 20, 200000)]
    small, big = (float(x) for _, _, x in rows)
    # An L1-resident chase against one 4000x the size of any L1: memory is far slower.
    assert 0 < small < big and big > 4 * small
    assert f"verify_lines={2 * (64 << 20) // 64} mismatches=0" in r.stdout


def test_chase_window_builds_only_its_lines_and_checks_them(chase):
    # -w builds WARM + ACCESSES + 1 lines of a size's keyed cycle (the whole cycle when that is
    # no smaller), walks the warm ones, times the rest and re-reads every pointer it built.
    warm, accesses = 100000, 20000
    r = subprocess.run([str(chase), "-a", str(accesses), "-w", str(warm), str(64 << 20), "16384", "12345600"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = re.findall(r"size_bytes=(\d+) accesses=(\d+) latency_ns=([0-9.]+)", r.stdout)
    assert [int(s) for s, _, _ in rows] == [64 << 20, 16384, 12345600]
    big, small, odd = (float(x) for _, _, x in rows)
    assert big > 4 * small and odd > 4 * small
    window = warm + accesses + 1
    assert f"verify_lines={window + 16384 // 64 + window} mismatches=0" in r.stdout


@pytest.mark.parametrize("args, message", [
    ([], "usage: chase [-a ACCESSES] [-m] [-w WARM_LINES] SIZE_BYTES"),
    (["-w", "0", "4096"], "WARM_LINES must be a positive integer, got '0'"),
    (["100"], "SIZE_BYTES = 100 is below the minimum of 128"),
    (["-a", "0", "4096"], "ACCESSES must be a positive integer, got '0'"),
    (["4k"], "SIZE_BYTES must be a positive integer, got '4k'"),
])
def test_chase_rejects_bad_arguments(chase, args, message):
    r = subprocess.run([str(chase), *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and message in r.stderr


def _extractor():
    import importlib.util
    spec = importlib.util.spec_from_file_location("extract_vmlinux", REPO / "benchmarks" / "guest" / "extract_vmlinux.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("compress", ["gzip", "xz"])
def test_extract_vmlinux_finds_the_compressed_elf_past_decoys(tmp_path, compress):
    import gzip
    import lzma
    ex = _extractor()
    kernel = b"\x7fELF" + bytes(range(256)) * 64
    packed = gzip.compress(kernel) if compress == "gzip" else lzma.compress(kernel)
    magic = packed[:4]
    # A setup stub that happens to hold the magic once before the real stream.
    image = b"MZ" + b"\x00" * 500 + magic + b"not a stream" + b"\x90" * 100 + packed + b"\x00" * 64
    (tmp_path / "bzImage").write_bytes(image)
    assert ex.main(["x", str(tmp_path / "bzImage"), str(tmp_path / "vmlinux")]) == 0
    assert (tmp_path / "vmlinux").read_bytes() == kernel


def test_extract_vmlinux_says_when_there_is_no_kernel(tmp_path, capsys):
    ex = _extractor()
    (tmp_path / "junk").write_bytes(b"MZ" + b"\x1f\x8b\x08" + b"\x00" * 100)
    assert ex.main(["x", str(tmp_path / "junk"), str(tmp_path / "out")]) == 1
    assert "no compressed ELF kernel found in the image" in capsys.readouterr().err
    assert ex.main(["x"]) == 2
