"""The catalogue of error messages (docs/reference/errors.md): bad input a user can really give, each
through the command line (click's test runner, the installed entry point's code) or the Python API.

Every case must end as the project's rule says: exit status 2 (CLI) or the project's exception type
(ParamError, TopologyError, _core.ConfigError), exactly one line, naming the offending parameter, file or
component, and carrying a next step: an allowed range or set of values, a list of valid names, a command
to run, or what to add, remove or rename. The next step is checked against the truth, not against the
message: an unknown preset's list must hold every preset in the presets folder, a command to run must be
a real simcxl command, a suggested parameter must be a real one and the closest to the typo.

Groups run without a subcommand show their help and exit 0; commands run without a required argument or
option exit 2 with one line that names it and shows an example invocation.

    SIMCXL_SHOW_ERRORS=/tmp/messages.txt .venv/bin/pytest -q -n 1 tests/test_error_messages.py  # every message
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Callable, List, Optional, Sequence

import click
import pytest
from click.testing import CliRunner

import simcxl
from simcxl import _core, topology
from simcxl.cli import main
from simcxl.config.params import ParamError

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib
import tomli_w

PKG = Path(simcxl.__file__).parent
REPO = Path(__file__).resolve().parents[1]
# The truth each message's list is held against: the shipped files and the core's registry, not the message.
MEMORY_PRESETS = sorted(p.stem for p in (PKG / "presets").glob("*.json"))
ACCEL_PRESETS = sorted(p.stem for p in (PKG / "presets" / "accel").glob("*.json"))
COMPONENT_TYPES = sorted(t["name"] for t in _core.component_types())
PARAMS = {t["type"]: [p["name"] for p in t["parameters"]] for t in topology.describe()}
SHOW = os.environ.get("SIMCXL_SHOW_ERRORS")  # a file to append every message to

# A next step in words: what is allowed, an example, a command, or what to add, remove or rename.
NEXT = re.compile(r"(?<!\w)(allowed|e\.g\.|did you mean|run|see|check the path|give|add|remove|rename|"
                  r"name (one|it|them)|choose|save|join|leave .* out|lists? them|fix|prints?)(?!\w)", re.I)


# ----------------------------------------------------------------------------------------------- checks
# Each check is a function of the message that fails with what it missed.

def accel_preset(name: str):
    from simcxl.workloads import coherent
    return coherent.load(name)


def every(*names: str, label: str = "") -> Callable[[str], None]:
    """Each of `names` (a whole list of valid values, from the truth) is in the message."""
    def check(msg):
        missing = [n for n in names if not re.search(rf"(?<![\w.-]){re.escape(str(n))}(?![\w-])", msg)]
        assert not missing, f"{label or 'the allowed values'}: {missing} missing from: {msg}"
    return check


def span(lo, hi) -> Callable[[str], None]:
    """The allowed range, both ends."""
    return every(str(lo), str(hi), label="the allowed range")


def command(cmd: str) -> Callable[[str], None]:
    """The message names `cmd` to run, and `cmd` is a real simcxl command (its words resolve in the CLI)."""
    def check(msg):
        assert cmd in msg, f"{cmd!r} not in: {msg}"
        words = cmd.split()
        assert words[0] == "simcxl", cmd
        grp: click.Command = main
        for w in words[1:]:
            if w.startswith("-") or not isinstance(grp, click.Group):
                break
            assert w in grp.commands, f"{cmd!r}: {w!r} is not a command of {grp.name}"
            grp = grp.commands[w]
    return check


def closest(typo: str, valid: Sequence[str]) -> Callable[[str], None]:
    """The message suggests the valid name closest to the typo (difflib's best match over the truth)."""
    best = difflib.get_close_matches(typo, list(valid), n=1, cutoff=0.5)
    assert best, f"test case: nothing close to {typo!r} in {valid}"

    def check(msg):
        assert re.search(rf"(?<![\w.-]){re.escape(best[0])}(?![\w-])", msg), \
            f"the closest valid name {best[0]!r} is not suggested in: {msg}"
    return check


def example(pattern: str) -> Callable[[str], None]:
    """An example of the right form ("e.g. ...") matching `pattern`."""
    def check(msg):
        m = re.search(r"e\.g\.,? ([^;)]+)", msg)
        assert m, f"no example (e.g. ...) in: {msg}"
        assert re.search(pattern, m.group(1)), f"example {m.group(1)!r} is not of the form {pattern!r}"
    return check


def says(*words: str) -> Callable[[str], None]:
    """Words that name what to do (add, remove, rename ...), literally."""
    def check(msg):
        for w in words:
            assert w in msg, f"{w!r} not in: {msg}"
    return check


# ----------------------------------------------------------------------------------------------- cases

class Case:
    def __init__(self, id: str, args: Optional[List[str]] = None, names: Sequence[str] = (),
                 checks: Sequence[Callable[[str], None]] = (), api: Optional[Callable[[Path], object]] = None,
                 code: int = 2):
        self.id, self.args, self.names, self.checks, self.api, self.code = id, args, names, checks, api, code


def topo_file(d: Path, name: str, edit: Callable[[dict], None], base: str = "cxl-asic.toml") -> str:
    """A copy of a shipped example topology with one mistake made by `edit`."""
    data = tomllib.loads((REPO / "examples" / "topologies" / base).read_text())
    edit(data)
    path = d / f"{name}.toml"
    path.write_text(tomli_w.dumps(data))
    return str(path)


def sweep_file(d: Path, name: str, text: str) -> str:
    path = d / f"{name}.toml"
    path.write_text(text)
    return str(path)


GOOD_SWEEP = 'name = "s"\nbase = "cxl-asic"\n[workload]\nkind = "traffic"\nrequests = 2000\n' \
             '[[axes]]\nparam = "cxl.link.lanes"\nvalues = [4, 8]\n'
LM = ["run", "lmbench", "--sizes", "4k", "--accesses", "100"]


def _del(path: str):
    def edit(d):
        *head, last = path.split(".")
        for k in head:
            d = d[k]
        del d[last]
    return edit


def _set(path: str, value):
    def edit(d):
        *head, last = path.split(".")
        for k in head:
            d = d.setdefault(k, {})
        d[last] = value
    return edit


def _conn(i: int, **kw):
    def edit(d):
        d["connections"][i].update(kw)
    return edit


def core_graph_with(edit: Callable[[dict], None]) -> dict:
    """The core's own graph of the cxl-asic preset (what _core takes) with one mistake made by `edit`."""
    g = topology.core_graph(simcxl.load_preset("cxl-asic"))
    edit(g)
    return g


def cases(d: Path) -> List[Case]:
    """Every case, its files made in `d`."""
    t = lambda name, edit, base="cxl-asic.toml": topo_file(d, name, edit, base)  # noqa: E731
    s = lambda name, text: sweep_file(d, name, text)  # noqa: E731
    (d / "notes.txt").write_text("x")
    (d / "folder").mkdir()
    (d / "binary.trace").write_bytes(b"0 R 0x40\n\0\0")
    (d / "empty.trace").write_text("# nothing\n\n")
    (d / "badop.trace").write_text("0 R 0x40\n10 X 0x80\n")
    (d / "bad.json").write_text('{"name": "x",\n "kind": "cxl-type3"\n "seed": 1}')
    asic = simcxl.load_preset("cxl-asic").to_dict()
    asic["cxl"]["link"]["lane"] = 8
    (d / "typo.json").write_text(json.dumps(asic))
    part = simcxl.load_preset("cxl-asic").to_dict()
    del part["cxl"]["link"]["lanes"]
    (d / "part.json").write_text(json.dumps(part))
    (d / "badbase.json").write_text(json.dumps({"base": "cxl-asci"}))
    (d / "base7.json").write_text(json.dumps({"base": 7}))
    (d / "loop.json").write_text(json.dumps({"base": str(d / "loop.json")}))
    (d / "tb-empty").mkdir()
    (d / "tb-kind").mkdir()
    (d / "tb-kind" / "testbed.toml").write_text('name = "x"\n[memories.m]\nkind = "cxl-type4"\n')
    res = d / "results"
    res.mkdir()
    rows = [{"id": str(i), "param.cxl.link.lanes": lanes, "total_gbps": 1.5 * i, "status": "ok", "error": "",
             "engine": "standalone", "base": "cxl-asic"} for i, lanes in enumerate((4, 8, 16))]
    (res / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "noresults").mkdir()
    all_presets = MEMORY_PRESETS + ACCEL_PRESETS
    link_params, t3_params = PARAMS["link"], PARAMS["type3"]

    return [
        # ----- run commands: options and their values
        Case("lmbench-size-zero", ["run", "lmbench", "--sizes", "0"], ["--sizes", "'0'"], [span("64 B", "1 TiB")]),
        Case("lmbench-size-big", ["run", "lmbench", "--sizes", "2t"], ["--sizes", "'2t'"], [span("64 B", "1 TiB")]),
        Case("lmbench-size-word", ["run", "lmbench", "--sizes", "4x"], ["--sizes", "4x"], [example(r"\d+[kmg]")]),
        Case("lmbench-size-empty", ["run", "lmbench", "--sizes", ","], ["--sizes"], [example(r"\d+[kmg]")]),
        Case("lmbench-accesses-word", ["run", "lmbench", "--accesses", "many"], ["--accesses", "many"],
             [says("a whole number")]),
        Case("stream-lines-range", ["run", "stream", "--lines", "0"], ["--lines", "0"], [span(1, 1 << 34)]),
        Case("accel-requesters-word", ["run", "accel", "--requesters", "four"], ["--requesters", "four"],
             [span(1, 1024)]),
        Case("lmbench-unknown-option", ["run", "lmbench", "--sizs", "4k"], ["--sizs"],
             [every("--sizes"), command("simcxl run lmbench -h")]),
        Case("run-unknown-command", ["run", "lmbnch"], ["lmbnch"], [every("lmbench"), command("simcxl run -h")]),
        Case("top-unknown-command", ["presest"], ["presest"], [every("presets"), command("simcxl -h")]),
        Case("unknown-preset", ["run", "lmbench", "-m", "cxl-asci"], ["cxl-asci"],
             [every(*MEMORY_PRESETS, label="memory presets"), closest("cxl-asci", MEMORY_PRESETS)]),
        Case("unknown-accel-preset", ["run", "accel", "-a", "type1-asix"], ["type1-asix"],
             [every(*ACCEL_PRESETS, label="accelerator presets"), closest("type1-asix", ACCEL_PRESETS)]),
        Case("map-empty-part", ["run", "lmbench", "-m", "ddr-local+"], ["ddr-local+"], [example(r"\w+\+\w+")]),
        Case("map-twice", ["run", "lmbench", "-m", "ddr-local+ddr-local"], ["ddr-local"],
             [example(r"\w+=[\w-]+\+\w+=[\w-]+")]),
        Case("stream-kernel", ["run", "stream", "--kernel", "triadd"], ["--kernel", "triadd"],
             [every("copy", "scale", "add", "triad"), closest("triadd", ["copy", "scale", "add", "triad"])]),
        Case("stream-threads-zero", ["run", "stream", "--threads", "0", "--lines", "200"], ["threads", "0"],
             [span(1, simcxl.load_preset("cxl-asic").host.cores)]),
        Case("loaded-mode", ["run", "loaded-latency", "--mode", "W99"], ["W99"], [every("R", "W2", "W5", "W6")]),
        Case("loaded-mode-and-fraction", ["run", "loaded-latency", "--mode", "R", "--read-fraction", "0.5"],
             ["--mode", "--read-fraction"], [says("one of them")]),
        Case("loaded-fraction", ["run", "loaded-latency", "--read-fraction", "1.5", "--requests", "500"],
             ["read_fraction", "1.5"], [span(0, 1)]),
        Case("loaded-threads", ["run", "loaded-latency", "--threads", "2,x"], ["--threads", "2,x"],
             [example(r"\d+,\d+")]),
        Case("traffic-rate", ["run", "traffic", "--rate", "-1", "--requests", "500"], ["rate_gbps", "-1"],
             [span(0, 10000)]),
        Case("traffic-footprint", ["run", "traffic", "--footprint", "1x"], ["footprint", "1x"],
             [says("k, m or g")]),
        Case("traffic-target", ["run", "traffic", "-m", "ddr=ddr-local+cxl0=cxl-asic", "--target", "cxl1"],
             ["cxl1"], [every("ddr", "cxl0", label="windows"), closest("cxl1", ["ddr", "cxl0"])]),
        Case("traffic-target-weight", ["run", "traffic", "-m", "ddr=ddr-local+cxl0=cxl-asic", "--target",
                                       "ddr:3,cxl0:0"], ["cxl0"], [span(1, 255)]),
        Case("traffic-pattern", ["run", "traffic", "--pattern", "zigzag"], ["--pattern", "zigzag"],
             [every("random", "sequential")]),
        Case("accel-device-form", ["run", "accel", "--device", "requesters=2"], ["--device", "requesters=2"],
             [example(r"\w+\.\w+=\w+")]),
        Case("accel-device-name", ["run", "accel", "--device", "gpu.requesters=2"], ["gpu"],
             [every(*accel_preset("type1-asic").device_names(), label="devices")]),
        Case("accel-device-key", ["run", "accel", "--device", "dev0.requester=2"], ["requester"],
             [every("op", "pattern", "target", "requesters", "depth", "footprint"),
              closest("requester", ["op", "pattern", "target", "requesters", "depth", "footprint", "requests"])]),
        Case("accel-op", ["run", "accel", "--op", "loadd"], ["--op", "loadd"],
             [every("load", "store", "rdcurr", "rdany", "itomwr", "wrinv")]),
        Case("hosts-unknown-host", ["run", "hosts", "--host", "host9", "--requests", "500"], ["--host", "host9"],
             [every("host", label="hosts")]),
        Case("hosts-unknown-host-of-a-pool", ["run", "hosts", "--system", str(REPO / "examples" / "topologies" /
                                                                         "pool-4hosts-mld.toml"), "--host", "h9"],
             ["--host", "h9", "pool-4hosts-mld"], [every("h0", "h1", "h2", "h3", label="hosts")]),
        Case("shared-no-shared-device", ["run", "shared", "--accesses", "100"], ["shared"],
             [says("device.shared = 1")]),
        Case("mixed-rao-no-nic", ["run", "mixed", "--rao", "--no-compare", "--lines", "100"], ["--rao"],
             [says("type nic")]),
        Case("trace-missing-file", ["run", "trace", str(d / "none.trace")], [str(d / "none.trace")],
             [says("time_ns op address")]),
        Case("trace-folder", ["run", "trace", str(d / "folder")], [str(d / "folder")], [says("time_ns op address")]),
        Case("trace-binary", ["run", "trace", str(d / "binary.trace")], [str(d / "binary.trace")],
             [says("time_ns op address")]),
        Case("trace-empty", ["run", "trace", str(d / "empty.trace")], [str(d / "empty.trace")],
             [says("time_ns op address")]),
        Case("trace-bad-op", ["run", "trace", str(d / "badop.trace")], [str(d / "badop.trace"), "line 2", "'X'"],
             [every("R", "W")]),
        Case("trace-sample", LM + ["--trace", str(d / "t"), "--trace-sample", "0"], ["--trace-sample", "0"],
             [span(1, 1 << 40)]),
        Case("plot-format", LM + ["--plot", str(d / "p.bmp")], ["--plot", "bmp"],
             [every("png", "pdf", "svg")]),
        Case("csv-folder", LM + ["--csv", str(d / "folder")], ["--csv", str(d / "folder")], [says("a file's path")]),
        Case("histograms-folder", LM + ["--histograms", str(d / "no" / "where.csv")], ["--histograms"],
             [says("folder")]),
        # ----- --set overrides
        Case("set-no-equals", LM + ["--set", "cxl.link.lanes"], ["--set", "cxl.link.lanes"],
             [example(r"[\w.]+=\d+")]),
        Case("set-not-a-number", LM + ["--set", "cxl.link.lanes=wide"], ["cxl.link.lanes", "wide"],
             [example(r"[\w.]+=\d+")]),
        Case("set-out-of-choices", LM + ["--set", "cxl.link.lanes=3"], ["cxl.link.lanes", "3"],
             [every("1", "2", "4", "8", "16")]),
        Case("set-out-of-range", LM + ["--set", "cxl.device.req_queue=0"], ["cxl.device.req_queue"],
             [span(1, 65536)]),
        Case("set-typo-param", LM + ["--set", "cxl.link.lane=8"], ["cxl.link.lane"],
             [closest("lane", link_params)]),
        Case("set-typo-group", LM + ["--set", "cxl.lnk.lanes=8"], ["cxl.lnk"],
             [every("cxl.bridge", "cxl.link", "cxl.device", "cxl.media"),
              closest("cxl.lnk.lanes", [f"cxl.link.{p}" for p in link_params] + ["host.cores"]),
              command("simcxl presets show")]),
        Case("set-power-of-two", LM + ["--set", "host.page_bytes=5000"], ["host.page_bytes", "5000"],
             [span(4096, 1073741824)]),
        Case("set-on-graph-typo", ["run", "lmbench", "--sizes", "4k", "-m",
                                   str(REPO / "examples" / "topologies" / "cxl-asic.toml"), "--set",
                                   "cxl_dev0.media.rank=2"],
             ["cxl_dev0.media.rank"], [closest("media.rank", [f"media.{p}" for p in t3_params if "." not in p]
                                              + [p for p in t3_params]), command("simcxl topology types")]),
        Case("set-on-graph-component", ["run", "lmbench", "--sizes", "4k", "-m",
                                        str(REPO / "examples" / "topologies" / "cxl-asic.toml"), "--set",
                                        "cxl_dev9.media.ranks=2"],
             ["cxl_dev9"], [every("host", "local_dram", "cxl", "cxl_link0", "cxl_dev0", label="components")]),
        # ----- presets and preset files
        Case("presets-show-unknown", ["presets", "show", "ddr-locl"], ["ddr-locl"],
             [every(*all_presets, label="shipped presets"), closest("ddr-locl", all_presets)]),
        Case("preset-bad-json", LM + ["-m", str(d / "bad.json")], [str(d / "bad.json"), "line 3"], [says("','")]),
        Case("preset-typo", LM + ["-m", str(d / "typo.json")], [str(d / "typo.json"), "lane"],
             [closest("lane", link_params)]),
        Case("preset-missing", LM + ["-m", str(d / "part.json")], [str(d / "part.json"), "cxl.link.lanes"],
             [says("add"), says("base")]),
        Case("preset-bad-base", LM + ["-m", str(d / "badbase.json")], [str(d / "badbase.json"), "cxl-asci"],
             [every(*MEMORY_PRESETS, label="memory presets"), closest("cxl-asci", MEMORY_PRESETS)]),
        Case("preset-base-number", LM + ["-m", str(d / "base7.json")], [str(d / "base7.json"), "base = 7"],
             [every(*MEMORY_PRESETS, label="memory presets")]),
        Case("preset-base-loop", LM + ["-m", str(d / "loop.json")], [str(d / "loop.json")], [says("base")]),
        Case("preset-not-a-file", LM + ["-m", str(d / "notes.txt")], [str(d / "notes.txt")],
             [command("simcxl presets show")]),
        # ----- topology show and topology files
        Case("topology-show-missing", ["topology", "show", str(d / "none.toml")], [str(d / "none.toml")],
             [command("simcxl topology show"), every(*MEMORY_PRESETS)]),
        Case("topology-show-preset", ["topology", "show", "cxl-asci"], ["cxl-asci"],
             [every(*all_presets), closest("cxl-asci", all_presets)]),
        Case("topology-show-set", ["topology", "show", "cxl-asic", "--set", "cxl_link0.lane=4"],
             ["cxl_link0.lane"], [closest("lane", link_params), command("simcxl topology types")]),
        Case("topo-type-unknown", ["topology", "show", t("type", _set("components.cxl_link0.type", "lnk"))],
             ["cxl_link0.type", "lnk"], [every(*COMPONENT_TYPES, label="component types"),
                                         closest("lnk", COMPONENT_TYPES)]),
        Case("topo-type-missing", ["topology", "show", t("notype", _del("components.cxl_link0.type"))],
             ["cxl_link0.type"], [every(*COMPONENT_TYPES, label="component types"), says("type = ")]),
        Case("topo-param-typo", ["topology", "show", t("ptypo", _set("components.cxl_link0.lane", 8))],
             ["cxl_link0.lane"], [closest("lane", link_params), command("simcxl topology types")]),
        Case("topo-param-missing", ["topology", "show", t("pmiss", _del("components.cxl_link0.lanes"))],
             ["cxl_link0.lanes"], [says("from = ")]),
        Case("topo-param-range", ["topology", "show", t("prange", _set("components.cxl_link0.lanes", 3))],
             ["cxl_link0.lanes", "3"], [every("1", "2", "4", "8", "16")]),
        Case("topo-port-unknown", ["topology", "show", t("port", _conn(2, to="cxl_link0.upp"))],
             ["cxl_link0", "upp"], [every("up", "down", label="the link's ports")]),
        Case("topo-conn-component", ["topology", "show", t("comp", _conn(3, to="cxl_dev1.up"))],
             ["cxl_dev1"], [every("host", "local_dram", "cxl", "cxl_link0", "cxl_dev0", label="components"),
                            closest("cxl_dev1", ["host", "local_dram", "cxl", "cxl_link0", "cxl_dev0"])]),
        Case("topo-port-open", ["topology", "show", t("open", lambda x: x["connections"].pop(3))],
             ["cxl_link0.down"], [says("connections")]),
        Case("topo-conn-no-to", ["topology", "show", t("noto", lambda x: x["connections"][3].pop("to"))],
             ["to"], [example(r"from = .*to = |\[\"\w+\.\w+\", \"\w+\.\w+\"\]")]),
        Case("topo-two-senders", ["topology", "show", t("send", _conn(3, to="cxl.root_port[0]"))],
             ["cxl_link0.down"], [says("sends")]),
        Case("topo-no-host", ["topology", "show", t("nohost", lambda x: (x["components"].pop("host"),
                                                                         x["connections"].pop(1),
                                                                         x["connections"].pop(0)))],
             ["host"], [says("type = \"host\"")]),
        Case("topo-top-key", ["topology", "show", t("key", _set("comment", "x"))], ["comment"],
             [every("name", "components", "connections")]),
        Case("topo-from-unknown", ["topology", "show", t("from", lambda x: x["components"]["cxl_link0"].update(
            {"from": "cxl-asci"}))], ["cxl-asci"], [every(*MEMORY_PRESETS), closest("cxl-asci", all_presets)]),
        Case("topo-toml-syntax", ["topology", "show", s("syntax", "name = \n")], ["syntax.toml", "line 1"],
             [command("simcxl topology show")]),
        Case("topo-name-bad", ["topology", "show", t("cname", lambda x: x["components"].update(
            {"9bad": {"type": "dram", "from": "defaults"}}))], ["9bad"], [says("a letter")]),
        # ----- sweeps
        Case("sweep-missing-spec", ["sweep", str(d / "none.toml"), "--out", str(d / "o")],
             [str(d / "none.toml")], [says("examples/sweeps")]),
        Case("sweep-typo-key", ["sweep", s("sk2", "axis = 1\n" + GOOD_SWEEP), "--out", str(d / "o")], ["axis"],
             [closest("axis", ["axes", "base", "engine", "metrics", "name", "sampling", "seed", "workload"])]),
        Case("sweep-no-base", ["sweep", s("nb", GOOD_SWEEP.replace('base = "cxl-asic"\n', "")), "--out",
                               str(d / "o")], ["base"], [example(r"base = \"[\w-]+\"")]),
        Case("sweep-axis-param", ["sweep", s("ap", GOOD_SWEEP.replace("cxl.link.lanes", "cxl.link.lane")),
                                  "--out", str(d / "o")], ["cxl.link.lane"],
             [closest("cxl.link.lane", ["cxl.link.lanes", "cxl.link.gen"])]),
        Case("sweep-kind", ["sweep", s("kind", GOOD_SWEEP.replace('"traffic"', '"trafic"')), "--out", str(d / "o")],
             ["workload.kind", "trafic"], [every("traffic", "stream", "lmbench", "loaded-latency")]),
        Case("sweep-workload-key", ["sweep", s("wk", GOOD_SWEEP.replace("requests =", "request =")), "--out",
                                    str(d / "o")], ["request"], [closest("request", ["requests", "threads"])]),
        Case("sweep-no-values", ["sweep", s("nv", GOOD_SWEEP.replace("values = [4, 8]\n", "")), "--out",
                                 str(d / "o")], ["values"], [says("values = [")]),
        Case("sweep-range", ["sweep", s("rg", GOOD_SWEEP.replace("values = [4, 8]", "range = [4]")), "--out",
                              str(d / "o")], ["range"], [says("[low, high]")]),
        Case("sweep-method", ["sweep", s("m", GOOD_SWEEP + '[sampling]\nmethod = "grd"\n'), "--out", str(d / "o")],
             ["sampling.method", "grd"], [every("grid", "random")]),
        Case("sweep-toml", ["sweep", s("bad", "name = [\n"), "--out", str(d / "o")], ["bad.toml"], [says("TOML")]),
        # ----- calibrate
        Case("calibrate-no-folder", ["calibrate", "--testbed", str(d / "none"), "--out", str(d / "c")],
             [str(d / "none")], [says("testbed.toml"), example("calibration/testbeds/")]),
        Case("calibrate-no-toml", ["calibrate", "--testbed", str(d / "tb-empty"), "--out", str(d / "c")],
             ["testbed.toml"], [says("add one", "docs/tutorials/calibration.md")]),
        Case("calibrate-kind", ["calibrate", "--testbed", str(d / "tb-kind"), "--out", str(d / "c")],
             ["memories.m.kind", "cxl-type4"], [every("local-dram", "remote-numa", "cxl-type3")]),
        Case("calibrate-memory", ["calibrate", "--testbed", str(REPO / "calibration" / "testbeds" / "spr-cxl-dmsim"),
                                  "--memories", "cxl-asci", "--out", str(d / "c")], ["cxl-asci"],
             [every("ddr-local", "ddr-remote", "cxl-asic", "cxl-fpga"), closest("cxl-asci", ["cxl-asic", "cxl-fpga"])]),
        # ----- plot
        Case("plot-no-results", ["plot", str(d / "noresults"), "--x", "a", "--y", "b"], [str(d / "noresults")],
             [command("simcxl sweep")]),
        Case("plot-column", ["plot", str(res), "--x", "param.cxl.link.lane", "--y", "total_gbps"],
             ["param.cxl.link.lane"], [closest("param.cxl.link.lane", ["param.cxl.link.lanes", "total_gbps"])]),
        Case("plot-not-numeric", ["plot", str(res), "--x", "param.cxl.link.lanes", "--y", "engine"], ["--y", "engine"],
             [every("total_gbps", label="numeric metrics")]),
        Case("plot-same-column", ["plot", str(res), "--x", "total_gbps", "--y", "total_gbps"], ["--x", "--y"],
             [says("different")]),
        Case("plot-no-folder", ["plot", str(d / "nowhere"), "--x", "a", "--y", "b"], [str(d / "nowhere")],
             [says("an existing folder")]),
        # ----- commands without what they need
        Case("fs-bare", ["fs"], ["--gem5"], [command("simcxl fs -h"), example(r"simcxl fs --gem5 \S+ --out \S+")]),
        Case("sweep-bare", ["sweep"], ["SPEC"], [command("simcxl sweep -h"), example(r"simcxl sweep \S+ --out \S+")]),
        Case("plot-bare", ["plot"], ["FOLDER"], [command("simcxl plot -h"), example(r"simcxl plot \S+ --x \S+ --y")]),
        Case("calibrate-bare", ["calibrate"], ["--testbed"],
             [command("simcxl calibrate -h"), example(r"simcxl calibrate --testbed \S+ --out \S+")]),
        Case("calibrate-no-out", ["calibrate", "--testbed", "x"], ["--out"], [command("simcxl calibrate -h")]),
        Case("topology-show-bare", ["topology", "show"], ["SPEC"],
             [command("simcxl topology show -h"), example(r"simcxl topology show \S+")]),
        Case("presets-show-bare", ["presets", "show"], ["MEMORY"],
             [command("simcxl presets show -h"), example(r"simcxl presets show \S+")]),
        Case("trace-bare", ["run", "trace"], ["TRACE_FILE"],
             [command("simcxl run trace -h"), example(r"simcxl run trace \S+")]),
        # ----- the Python API
        Case("api-load-preset", api=lambda d: simcxl.load_preset("cxl-asci"), names=["cxl-asci"],
             checks=[every(*MEMORY_PRESETS), closest("cxl-asci", MEMORY_PRESETS)]),
        Case("api-replace-typo", api=lambda d: simcxl.load_preset("cxl-asic").replace(**{"cxl.link.lane": 8}),
             names=["cxl.link.lane"], checks=[closest("lane", link_params)]),
        Case("api-lmbench-size", api=lambda d: simcxl.lmbench("cxl-asic", [16]), names=["working_sets", "16"],
             checks=[span(64, 1099511627776)]),
        Case("api-stream-kernel", api=lambda d: simcxl.stream("cxl-asic", ["tri"]), names=["kernel", "tri"],
             checks=[every("copy", "scale", "add", "triad")]),
        Case("api-device", api=lambda d: accel_preset("type1-asic").device("gpu"), names=["gpu"],
             checks=[every(*accel_preset("type1-asic").device_names())]),
        Case("api-topology-load", api=lambda d: topology.load(t("api", _set("components.cxl_dev0.media.rank", 2))),
             names=["cxl_dev0.media.rank"], checks=[command("simcxl topology types")]),
        Case("api-trace-missing", api=lambda d: simcxl.trace("cxl-asic", str(d / "none.trace")),
             names=[str(d / "none.trace")], checks=[says("time_ns op address")]),
        Case("api-topology-get", api=lambda d: topology.resolve("cxl-asic").get("cxl_link0.lane"),
             names=["cxl_link0.lane"], checks=[closest("cxl_link0.lane", ["cxl_link0.lanes", "cxl_link0.gen"])]),
        Case("api-system-get", api=lambda d: simcxl.load_preset("cxl-asic").get("cxl.link.lane"),
             names=["cxl.link.lane"], checks=[closest("cxl.link.lane", ["cxl.link.lanes", "cxl.link.gen"]),
                                              command("simcxl presets show")]),
        Case("api-core-port-open", api=lambda d: _core.validate(core_graph_with(
            lambda g: g["connections"].remove(next(k for k in g["connections"] if k["from"] == "cxl_link0.down")))),
             names=["cxl_link0.down"], checks=[says("add a connection")]),
        Case("api-core-component", api=lambda d: _core.validate(core_graph_with(
            lambda g: next(k for k in g["connections"] if k["from"] == "cxl_link0.down").update(to="nobody.up"))),
             names=["nobody"], checks=[says("add it to components")]),
        Case("api-core-port", api=lambda d: _core.validate(core_graph_with(
            lambda g: next(k for k in g["connections"] if k["from"] == "cxl_link0.down").update(to="cxl_dev0.upp"))),
             names=["cxl_dev0.upp"], checks=[every("up")]),
        Case("api-traffic-pattern", api=lambda d: simcxl.traffic("cxl-asic", pattern="zigzag", requests=100),
             names=["pattern", "zigzag"], checks=[every("random", "sequential")]),
    ]


# ----------------------------------------------------------------------------------------------- the run

@pytest.fixture(scope="module")
def box(tmp_path_factory):
    d = tmp_path_factory.mktemp("errors")
    return d, {c.id: c for c in cases(d)}


def _ids():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        return [c.id for c in cases(Path(tmp))]


CASE_IDS = _ids()


def message(c: Case, d: Path) -> str:
    """The one line the user sees (CLI: after 'simcxl: error: '; API: the exception's text)."""
    if c.api is not None:
        with pytest.raises((ParamError, _core.ConfigError)) as e:
            c.api(d)
        return str(e.value)
    r = CliRunner().invoke(main, c.args, prog_name="simcxl")
    assert r.exit_code == c.code, f"exit {r.exit_code}, expected {c.code}: {r.output}{r.stderr}"
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{r.stderr}"
    assert lines[0].startswith("simcxl: error: "), lines[0]
    return lines[0][len("simcxl: error: "):]


@pytest.mark.parametrize("cid", CASE_IDS)
def test_error_message(box, cid):
    d, by_id = box
    c = by_id[cid]
    assert c.names and c.checks, "every case names what is wrong and checks its next step"
    msg = message(c, d)
    if SHOW:
        with open(SHOW, "a") as f:
            f.write(f"[{cid}] {msg}\n")
    assert "\n" not in msg and msg.strip(), repr(msg)
    for n in c.names:
        assert n in msg, f"{n!r} (what was wrong) is not named in: {msg}"
    assert NEXT.search(msg), f"no next step in: {msg}"
    for check in c.checks:
        check(msg)


def test_catalogue_size(box, record_property):
    """The catalogue holds at least 60 distinct bad inputs."""
    _, by_id = box
    line = f"error-message catalogue: {len(CASE_IDS)} cases"
    print(line)
    record_property("error_messages", line)
    assert len(set(CASE_IDS)) == len(CASE_IDS) >= 60
    cli = [tuple(c.args) for c in by_id.values() if c.api is None]
    assert len(set(cli)) == len(cli), "two cases give the same command line"


# ----------------------------------------------------------------------------------------------- groups and commands

def _walk(group: click.Group, path: List[str]):
    """(path, command) of every group and command below ``group``, itself included."""
    yield path, group
    if isinstance(group, click.Group):
        for name, cmd in group.commands.items():
            yield from _walk(cmd, path + [name])


GROUPS = [p for p, c in _walk(main, []) if isinstance(c, click.Group)]
NEEDY = [(p, c) for p, c in _walk(main, []) if not isinstance(c, click.Group) and any(x.required for x in c.params)]


@pytest.mark.parametrize("path", GROUPS, ids=lambda p: " ".join(["simcxl", *p]))
def test_a_group_alone_shows_its_help_and_exits_0(path):
    group = main
    for w in path:
        group = group.commands[w]
    r = CliRunner().invoke(main, path, prog_name="simcxl")
    assert r.exit_code == 0, (r.exit_code, r.output, r.stderr)
    assert r.stderr == ""
    assert r.stdout.startswith(f"Usage: {' '.join(['simcxl', *path])} "), r.stdout[:200]
    for name, cmd in group.commands.items():
        if not cmd.hidden:
            assert re.search(rf"^\s+{re.escape(name)}\b", r.stdout, re.M), f"{name} not listed:\n{r.stdout}"


def test_every_group_is_checked():
    assert {" ".join(p) for p in GROUPS} >= {"", "run", "presets", "topology", "guest"}


@pytest.mark.parametrize("path, cmd", NEEDY, ids=[" ".join(["simcxl", *p]) for p, _ in NEEDY])
def test_a_command_without_what_it_needs_names_it_and_shows_an_example(path, cmd):
    """Exit status 2, one line: the missing argument or option, an example invocation of this very command
    (its options real ones, every required one given) and its help command."""
    r = CliRunner().invoke(main, path, prog_name="simcxl")
    assert r.exit_code == 2, (r.exit_code, r.output, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("simcxl: error: Missing "), r.stderr
    msg = lines[0]
    first = next(x for x in cmd.params if x.required)
    shown_as = first.opts[0] if isinstance(first, click.Option) else first.name.upper()
    assert shown_as in msg, msg
    prog = " ".join(["simcxl", *path])
    assert f"(see '{prog} -h')" in msg, msg
    m = re.search(rf"e\.g\. ({re.escape(prog)}(?: \S+)*?) \(see", msg)
    assert m, f"no example of {prog} in: {msg}"
    words = m.group(1).split()[len(path) + 1:]
    options = {o for x in cmd.params if isinstance(x, click.Option) for o in x.opts + x.secondary_opts}
    for w in words:
        if w.startswith("-"):
            assert w in options, f"example {m.group(1)!r}: {w} is not an option of {prog}"
    for x in cmd.params:
        if x.required and isinstance(x, click.Option):
            assert set(x.opts) & set(words), f"example {m.group(1)!r} leaves out {x.opts[0]}"
    positional = [w for i, w in enumerate(words)
                  if not w.startswith("-") and (i == 0 or not words[i - 1].startswith("-"))]
    needed = [x for x in cmd.params if x.required and isinstance(x, click.Argument)]
    assert len(positional) >= len(needed), f"example {m.group(1)!r} leaves out {[x.name for x in needed]}"
