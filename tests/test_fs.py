"""Parsing what the full-system guest prints (simcxl.fs): numactl's topology
report and the benchmarks' key=value lines, checked on text in the formats
numactl 2.0 and the guest programs (benchmarks/guest/*.c) print."""

from simcxl.fs import parse_rows, parse_topology

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
