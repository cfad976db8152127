"""The topology commands and --system on run commands and sweeps, through the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from simcxl import topology as T

SIMCXL = Path(sys.executable).with_name("simcxl")
REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "topologies"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cli(*args, ok=True, cwd=None):
    p = subprocess.run([str(SIMCXL), *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert "Traceback" not in p.stderr + p.stdout, p.stderr
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def test_show_prints_a_preset_as_the_shipped_file_and_draws_it(tmp_path):
    assert cli("topology", "show", "cxl-fpga", "--toml").stdout == (EXAMPLES / "cxl-fpga.toml").read_text()
    out = tmp_path / "g.png"
    p = cli("topology", "show", EXAMPLES / "mixed.toml", "--plot", out)
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert "root_port[1] -> link1 (link)" in p.stdout
    assert "exp0.device.req_latency_ns" in p.stdout and "preset cxl-asic (cxl_dev0)" in p.stdout


def test_show_json_lists_every_parameter_with_its_origin():
    d = json.loads(cli("topology", "show", EXAMPLES / "mixed.toml", "--set", "host.cores=4", "--json").stdout)
    rows = {(r["component"], r["parameter"]): r for r in d["parameters"]}
    assert rows["host", "cores"]["value"] == 4 and rows["host", "cores"]["origin"] == "override"
    assert rows["exp1", "media.ranks"]["origin"] == "preset cxl-asic (cxl_dev0)"
    # every parameter of every component: the schema's count for each type
    types = {t["type"]: len(t["parameters"]) for t in T.describe()}
    for name, c in d["components"].items():
        assert sum(1 for r in d["parameters"] if r["component"] == name) == types[c["type"]]


def test_types_lists_every_registered_type_with_its_ports():
    d = json.loads(cli("topology", "types", "--json").stdout)
    assert [t["type"] for t in d] == list(T.TYPES)
    hb = next(t for t in d if t["type"] == "host_bridge")
    assert {p["name"]: p["multi"] for p in hb["ports"]} == {"up": False, "root_port": True}


def test_a_run_on_a_topology_file_equals_the_run_on_its_preset():
    a = json.loads(cli("run", "stream", "--system", EXAMPLES / "ddr-remote.toml", "--lines", 4000, "--json").stdout)
    b = json.loads(cli("run", "stream", "-m", "ddr-remote", "--lines", 4000, "--json").stdout)
    assert a == b and set(a) == {"copy", "scale", "add", "triad"}


def test_set_names_the_graphs_components():
    # the same change through the preset's names and through the graph's
    a = json.loads(cli("run", "lmbench", "--system", EXAMPLES / "cxl-asic.toml", "--sizes", "1g",
                       "--set", "cxl_link0.lanes=4", "--json").stdout)
    b = json.loads(cli("run", "lmbench", "-m", "cxl-asic", "--sizes", "1g", "--set", "cxl.link.lanes=4",
                       "--json").stdout)
    assert a[0]["latency_ns"] == b[0]["latency_ns"]
    p = cli("run", "lmbench", "--system", EXAMPLES / "cxl-asic.toml", "--set", "cxl.link.lanes=4", ok=False)
    assert p.returncode != 0 and "cxl.link.lanes is not a parameter of cxl (host_bridge)" in p.stderr


def test_a_nic_topology_runs_rao_with_its_own_nic_parameters(tmp_path):
    t = T.from_system(__import__("simcxl.workloads.nic", fromlist=["load"]).load("type1-asic"))
    f = tmp_path / "nic.toml"
    f.write_text(T.to_toml(t))
    args = ("run", "rao", "--kernel", "central", "--op", "add", "--mechanism", "cxl-nic", "--iters", 200, "--json")
    a = json.loads(cli(*args[:2], "--system", f, *args[2:], "--set", "dev0.nic.ops_in_flight=1").stdout)
    b = json.loads(cli(*args[:2], "-a", "type1-asic", *args[2:], "--set", "nic.ops_in_flight=1").stdout)
    assert a[0]["ops_per_second"] == b[0]["ops_per_second"]


def test_a_bad_topology_file_is_one_line_before_anything_runs(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text((EXAMPLES / "mixed.toml").read_text().replace('to = "exp1.up"', 'to = "exp0.up"'))
    p = cli("run", "lmbench", "--system", f, ok=False)
    assert p.returncode != 0
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "exp0.up: two things on one port" in lines[0], p.stderr


def _sweep(tmp_path, name, base, param):
    spec = tmp_path / f"{name}.toml"
    spec.write_text(f'''name = "{name}"
base = "{base}"
metrics = ["read_latency_ns_mean"]
[workload]
kind = "traffic"
threads = 1
requests = 2000
[[axes]]
param = "{param}"
values = [20, 120]
''')
    cli("sweep", spec, "--out", tmp_path / name, "--workers", 1)
    return pd.read_parquet(tmp_path / name / "results.parquet").sort_values(f"param.{param}")


def test_a_sweep_over_a_topology_file_sweeps_the_graphs_parameters(tmp_path):
    graph = _sweep(tmp_path, "graph", EXAMPLES / "cxl-asic.toml", "cxl_dev0.device.req_latency_ns")
    preset = _sweep(tmp_path, "preset", "cxl-asic", "cxl.device.req_latency_ns")
    lat = graph["read_latency_ns_mean"].tolist()
    assert lat == preset["read_latency_ns_mean"].tolist()
    # one thread's few requests in flight: the device pipeline's 100 ns more shows nearly in full
    # (a little less where the slower thread queues less at the media)
    assert 95.0 <= lat[1] - lat[0] < 110.0, lat
