"""Property-based fuzzing of the command line: every subcommand with random
option values (out of range, malformed, of the wrong type, or small and valid)
must end in results, or in the one-line error with status 2 — never in a
traceback (an exception escaping the command).

The commands run in-process (click's test runner, the same entry point as the
installed script) so that hundreds of cases fit in about a minute; valid cases
are kept tiny. Fixed seed (derandomized). A longer soak:

    SIMCXL_FUZZ_EXAMPLES=2000 .venv/bin/pytest -q tests/test_cli_fuzz.py
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simcxl
from simcxl.cli import main

EXAMPLES = int(os.environ.get("SIMCXL_FUZZ_EXAMPLES", "12"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

# Integers: out of range either way, past 64 bits, or small and valid (never a valid long run).
BAD_INT = st.one_of(st.integers(-(2 ** 70), 0), st.integers(2 ** 40 + 1, 2 ** 80),
                    st.sampled_from(["", "abc", "1.5", "nan", "inf", "-", "1e3", "0x10", " 3"]))


def ints(lo=1, hi=8):
    """Valid twice as often as not, so that whole valid command lines are common too."""
    return st.one_of(st.integers(lo, hi), st.integers(lo, hi), BAD_INT).map(str)


FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 1),
                   st.sampled_from(["", "x", "1,2", "-0", "1e400"])).map(str)
SIZE = st.sampled_from(["4k", "64", "512", "1k", "0", "-4k", "1e15", "x", "", "1.5", "4kk", "2t", "k", "1e-3",
                        "99999999999999999999999", "nan", "0x40", " 8k "])
SIZES = st.lists(SIZE, min_size=0, max_size=3).map(",".join)
SMALL_SIZE = st.sampled_from(["4k", "64", "1k", "0", "-1", "x", "", "2t", "1e300", "nan"])  # never a long run
NAMES = ["cxl-asic", "ddr-local", "ddr-remote", "cxl-fpga", "type1-asic", "type2-bias", "type2-hdmdb", "nope",
         "", "presets", "/dev/null", "/proc", "cxl-asic.json"]
SET_KEYS = ["cxl.link.lanes", "host.cores", "host.l1_bytes", "accel.type", "accel.devices", "cache.bytes",
            "cxl.device.req_queue", "local_dram.tREFI_ns", "seed", "link.gen", "bogus.key", "host", "",
            "dma.max_payload", "home.tracker"]
SET_VALUES = ["x", "-1", "0", "3", "1e400", "nan", "null", "[]", "{}", "true", "1e20", '"8"', "8", "1.5", ""]
SETS = st.lists(st.one_of(st.builds(lambda k, v: f"{k}={v}", st.sampled_from(SET_KEYS), st.sampled_from(SET_VALUES)),
                          st.sampled_from(["noequals", "=", "=1"])), max_size=2)


def opt(name, values):
    """An option given or not."""
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


def many(name, values, n=2):
    return st.lists(values, max_size=n).map(lambda vs: [x for v in vs for x in (name, v)])


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    """Files the cases point at: presets whole and broken, traces, a results folder."""
    d = tmp_path_factory.mktemp("fuzz")
    asic = simcxl.load_preset("cxl-asic").to_dict()
    (d / "whole.json").write_text(json.dumps(asic))
    part = json.loads(json.dumps(asic))
    del part["cxl"]["link"]["lanes"]
    (d / "part.json").write_text(json.dumps(part))
    (d / "based.json").write_text(json.dumps({"base": "cxl-asic", "cxl": {"link": {"lanes": 4}}}))
    (d / "badbase.json").write_text(json.dumps({"base": 7}))
    (d / "loop.json").write_text(json.dumps({"base": "loop.json"}))
    (d / "list.json").write_text("[1, 2]")
    (d / "garbage.json").write_bytes(b"\xff\xfe{")
    (d / "accel.json").write_text(json.dumps({"base": "type1-asic", "accel": {"type": 2}}))
    (d / "file.txt").write_text("x")
    (d / "dir").mkdir()
    rows = [{"id": str(i), "param.cxl.link.lanes": lanes, "param.workload.pattern": pat, "total_gbps": i * 1.5,
             "status": "ok" if i % 3 else "error", "error": "", "engine": "standalone", "base": "cxl-asic"}
            for i, (lanes, pat) in enumerate((a, b) for a in (4, 8, 16) for b in ("random", "sequential"))]
    (d / "results").mkdir()
    (d / "results" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "empty").mkdir()
    (d / "fake-gem5").write_text("#!/bin/sh\nexit 1\n")
    (d / "fake-gem5").chmod(0o755)
    return d


def files(box, *names):
    return st.sampled_from([str(box / n) for n in names])


def memories(box, flag="--memory"):
    return many(flag, st.one_of(st.sampled_from(NAMES), files(box, "whole.json", "part.json", "based.json",
                                                              "badbase.json", "loop.json", "list.json",
                                                              "garbage.json", "accel.json", "file.txt", "dir",
                                                              "missing.json")))


def outputs(box, flag):
    return opt(flag, st.one_of(files(box, "o.png", "noext", "x.xyz", "o.pdf", "file.txt/x.png", "dir", "o.csv"),
                               st.sampled_from(["/proc/x.png", "", "-", "/"])))


def sets():
    return SETS.map(lambda kvs: [x for kv in kvs for x in ("--set", kv)])


TRACE_LINE = st.one_of(
    st.builds(lambda t, op, a, s: f"{t} {op} {a}{s}", st.integers(-5, 100), st.sampled_from(["R", "W", "X", "r", ""]),
              st.sampled_from(["0x40", "64", "0x123456789abcdef012", "-1", "zz", "0x", "18446744073709551616"]),
              st.sampled_from(["", " 64", " 0", " 2000000", " x", " 64 extra"])),
    st.sampled_from(["#c", "", "   ", "\t", "\0", "1e3 R 0x40", "nan R 0x40"]))


def cmd_strategies(box):
    runs = {
        "lmbench": st.tuples(st.just(["run", "lmbench"]), memories(box), sets(),
                             # Always a few small working sets: the default list up to 1 GiB takes minutes.
                             st.one_of(SIZES.map(lambda s: ["--sizes", s]),
                                       st.sampled_from(["4k", "1k", "0", "x", "-1", ""]).map(
                                           lambda s: ["--max-size", s])),
                             opt("--stride", ints(0, 4096)),
                             st.one_of(st.just(["--accesses", "50"]), ints(1, 50).map(lambda a: ["--accesses", a])),
                             outputs(box, "--plot"), outputs(box, "--csv"), opt("--json", st.just([])).map(
                                 lambda o: o[:1])),
        "stream": st.tuples(st.just(["run", "stream"]), memories(box), sets(),
                            many("--kernel", st.sampled_from(["copy", "triad", "nope", ""]), 1),
                            opt("--threads", ints(1, 4)), st.just(["--lines"]).map(lambda a: a + ["200"])
                            | opt("--lines", ints(100, 200)),
                            opt("--placement", st.sampled_from(["first-touch", "contiguous", "x"])),
                            opt("--stores", st.sampled_from(["write-allocate", "non-temporal", "x"])),
                            outputs(box, "--plot")),
        "loaded-latency": st.tuples(st.just(["run", "loaded-latency"]), memories(box), sets(),
                                    opt("--threads", st.lists(ints(1, 4), min_size=0, max_size=2).map(",".join)),
                                    opt("--read-fraction", st.lists(FLOATS, max_size=2).map(",".join)),
                                    st.just(["--requests", "500"]) | opt("--requests", ints(100, 500)),
                                    opt("--delay", FLOATS), outputs(box, "--plot")),
        "traffic": st.tuples(st.just(["run", "traffic"]), memories(box), sets(), opt("--threads", ints(1, 4)),
                             opt("--read-fraction", FLOATS), opt("--pattern", st.sampled_from(["random", "x"])),
                             opt("--rate", FLOATS), st.just(["--requests", "500"]) | opt("--requests", ints(100, 500)),
                             opt("--footprint", SMALL_SIZE), outputs(box, "--csv")),
        "trace": st.tuples(st.just(["run", "trace"]), memories(box), sets(),
                           st.lists(TRACE_LINE, max_size=4).map(lambda ls: ["@trace", "\n".join(ls)]),
                           opt("--max-outstanding", ints(1, 8))),
        "accel": st.tuples(st.just(["run", "accel"]), memories(box, "--accel"), sets(),
                           opt("--op", st.sampled_from(["load", "store", "wrinv", "x"])),
                           opt("--pattern", st.sampled_from(["single", "random", "x"])),
                           opt("--target", st.sampled_from(["host", "device", "x"])),
                           opt("--requesters", ints(1, 4)), opt("--depth", ints(1, 4)),
                           opt("--footprint", SMALL_SIZE), st.just(["--requests", "200"])
                           | opt("--requests", ints(1, 200)), opt("--host-threads", ints(0, 2)),
                           opt("--check", st.just([])).map(lambda o: o[:1]), outputs(box, "--plot")),
        "dma-vs-cache": st.tuples(st.just(["run", "dma-vs-cache"]), memories(box, "-a"), sets(),
                                  opt("--sizes", SIZES), opt("--cache-op", st.sampled_from(["load", "rdcurr", "x"])),
                                  opt("--stream", SMALL_SIZE), outputs(box, "--plot")),
        "sharing": st.tuples(st.just(["run", "sharing"]), memories(box, "-a"), sets(),
                             opt("--mode", st.sampled_from(["pingpong", "producer-consumer", "x"])),
                             opt("--rounds", ints(1, 20)), opt("--lines", ints(1, 16))),
        "coherence-stress": st.tuples(st.just(["run", "coherence-stress"]), memories(box, "-a"), sets(),
                                      st.just(["--ops", "300"]) | opt("--ops", ints(1, 300)),
                                      opt("--lines", ints(1, 8)), opt("--host-threads", ints(0, 2)),
                                      opt("--device-requesters", ints(0, 2)),
                                      opt("--inject", st.sampled_from(["", "drop-dirty-data", "x"]))),
        "presets": st.tuples(st.sampled_from([["presets", "list"], ["presets", "show"], ["presets"]]),
                             st.one_of(st.sampled_from(NAMES), files(box, "whole.json", "part.json", "based.json",
                                                                     "accel.json", "garbage.json", "list.json",
                                                                     "loop.json", "dir")).map(lambda n: [n]),
                             opt("--json", st.just([])).map(lambda o: o[:1])),
        "bench": st.tuples(st.just(["bench"]), st.just(["--requests", "1000"]) | opt("--requests", ints(1000, 2000)),
                           opt("--memory", st.sampled_from(NAMES))),
        "calibrate": st.tuples(st.just(["calibrate"]),
                               opt("--testbed", files(box, "empty", "file.txt", "nope", "results")),
                               opt("--memories", st.sampled_from(["", "x", ",", "ddr-local"])),
                               opt("--out", files(box, "cal", "file.txt", "file.txt/sub")),
                               outputs(box, "--json"), opt("--engine", st.sampled_from(["standalone", "gem5", "x"])),
                               opt("--workers", ints(1, 2))),
        "sweep": st.tuples(st.just(["sweep"]), st.builds(
            lambda base, kind, wl, axes, method: ["@spec", f'base = "{base}"\n[workload]\nkind = "{kind}"\n{wl}\n'
                                                            + axes + method],
            st.sampled_from(["cxl-asic", "type1-asic", "nope", "based.json"]),
            st.sampled_from(["traffic", "accel", "lmbench", "x"]),
            st.sampled_from(["requests = 300", "requests = 0", "threads = -1", "requests = 'x'", "accesses = 20",
                             "working_set_bytes = 4096\naccesses = 20", ""]),
            st.lists(st.builds(lambda p, v: f'[[axes]]\nparam = "{p}"\nvalues = {v}\n',
                               st.sampled_from(["cxl.link.lanes", "workload.threads", "link.lanes", "accel.type",
                                                "workload.read_fraction", ""]),
                               st.sampled_from(["[4, 8]", "[]", "[1]", "['x']", "[1e400]", "3", "[-1]"])), max_size=2)
            .map("".join),
            st.sampled_from(["", '[sampling]\nmethod = "random"\npoints = 2\n', '[sampling]\nmethod = "x"\n',
                             '[sampling]\nmethod = "lhs"\npoints = -1\n'])),
            opt("--out", files(box, "sw", "file.txt")), st.just(["--workers", "1"])),
        "plot": st.tuples(st.just(["plot"]), st.sampled_from([[str(box / "results")], [str(box / "empty")],
                                                               [str(box / "nope")], [str(box / "file.txt")]]),
                          *[opt(f, st.sampled_from(["param.cxl.link.lanes", "param.workload.pattern", "total_gbps",
                                                    "status", "lanes", "nope", "", "id"]))
                            for f in ("--x", "--y", "--hue", "--z")], outputs(box, "--out")),
        "fs": st.tuples(st.just(["fs"]), opt("--gem5", files(box, "fake-gem5", "nope", "dir", "file.txt")),
                        opt("--out", files(box, "fsout", "file.txt")),
                        opt("--bench", st.sampled_from(["topology", "lmbench", "stream", "loaded-latency", "x"])),
                        opt("--node", ints(0, 3)), opt("--cxl", st.sampled_from(["cxl-asic:1GiB", "cxl-asic", ":1GiB",
                                                                                  "nope:1GiB", ""])),
                        opt("--sizes", SIZES), opt("--threads", ints(1, 4)),
                        opt("--mode", st.sampled_from(["R", "W2", "W5", "x"])),
                        opt("--restore", files(box, "dir", "nope", "file.txt")), opt("--checkpoint", files(box, "ck")),
                        opt("--cpu", st.sampled_from(["kvm", "atomic", "o3", "x"])), opt("--max-seconds", FLOATS)),
        "demo": st.tuples(st.just(["demo"]), outputs(box, "--out"),
                          st.just(["--testbed"]).map(lambda t: t + [str(box / "empty")]) |
                          st.sampled_from([["--testbed", str(box / "file.txt")], ["--testbed", ""],
                                           ["--testbed", str(box / "nope")]]),
                          opt("--quick", st.just([])).map(lambda o: o[:1])),
    }
    return runs


COMMANDS = ["lmbench", "stream", "loaded-latency", "traffic", "trace", "accel", "dma-vs-cache", "sharing",
            "coherence-stress", "presets", "bench", "calibrate", "sweep", "plot", "demo", "fs"]


def _args(parts, box, n):
    args = []
    for p in parts:
        if p[:1] == ["@trace"]:
            f = box / f"t{n}.trace"
            f.write_text(p[1])
            args.append(str(f))
        elif p[:1] == ["@spec"]:
            f = box / f"s{n}.toml"
            f.write_text(p[1])
            args.append(str(f))
        else:
            args += p
    return args


STATS: Counter = Counter()  # (command, exit status) -> cases


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    if os.environ.get("SIMCXL_FUZZ_STATS"):
        print("\ncases by command and exit status:", dict(sorted(STATS.items())), f"total {sum(STATS.values())}")


def check(args, cwd):
    t0 = time.monotonic()
    res = CliRunner().invoke(main, args, catch_exceptions=True)
    shown = "simcxl " + " ".join(repr(a) if not a or " " in a else a for a in args)
    assert time.monotonic() - t0 < 60, f"{shown} took {time.monotonic() - t0:.0f} s (a case is kept tiny)"
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"{shown} raised {type(res.exception).__name__}: {res.exception}") from res.exception
    assert "Traceback" not in res.output, shown
    assert res.exit_code in (0, 1, 2), (shown, res.exit_code, res.output)
    if res.exit_code == 2:
        lines = res.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("simcxl: error: "), (shown, res.stderr)
    STATS[(" ".join(args[:2]) if args[0] == "run" else args[0], res.exit_code)] += 1
    if res.exit_code == 1:  # only a coherence violation the user asked for
        assert "--inject" in args and "VIOLATIONS" in res.stdout, (shown, res.output)


@pytest.mark.parametrize("command", COMMANDS)
def test_no_option_values_end_in_a_traceback(command, box, monkeypatch):
    monkeypatch.chdir(box)  # relative outputs ("noext", "-") land in the scratch folder
    # fs: an empty guest cache, so that no case boots (or builds) a guest.
    monkeypatch.setenv("SIMCXL_GUEST_CACHE", str(box / "empty"))
    strategy = cmd_strategies(box)[command]
    counter = iter(range(10 ** 9))

    @FUZZ
    @given(parts=strategy)
    def case(parts):
        check(_args(parts, box, next(counter)), box)

    case()
