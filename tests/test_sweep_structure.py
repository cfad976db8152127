"""Sweeps over the structure of a system: the fabric generator (hosts, switch levels, interleave
ways) as a sweep's base with its arguments as axes, an axis over bases, and the many-host workload.
Expected values come from the link physics (tests/test_switch.py and tests/test_bandwidth.py derive
them by hand), from Little's law, and from counting the generator's parts by hand."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from simcxl.sweep import spec as sw
from simcxl.config import presets
from simcxl.sweep import points as sweep_points
from simcxl.config.groups import SwitchParams
from simcxl.config.params import ParamError
from simcxl.topology.generate import fabric

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "sweeps" / "fabric.toml"
X8_READ = 52.72 / 2  # GB/s of read data on Gen5 x8 (tests/test_bandwidth.py, by hand)


def spec(axes, base=None, **workload):
    return {"name": "structure", "base": base or {"generator": "fabric", "preset": "cxl-asic"},
            "workload": {"kind": "hosts", "threads": 4, "requests": 2000, **workload},
            "metrics": ["total_gbps", "read_latency_ns_mean"], "axes": axes}


def axis(param, *values):
    return {"param": param, "values": list(values)}


# -- the generator -----------------------------------------------------------------------

@pytest.mark.parametrize("hosts,levels,ways", [(1, 0, 1), (2, 0, 4), (1, 1, 2), (8, 2, 4), (3, 3, 1)])
def test_the_generator_builds_the_parts_counted_by_hand(hosts, levels, ways):
    t = fabric(hosts=hosts, levels=levels, interleave_ways=ways)
    count = {k: len(t.of_type(k)) for k in ("host", "host_bridge", "switch", "type3", "link", "dram")}
    # Level 0: every host its own devices. Below a switch: one top switch, a chain of levels - 1
    # switches above each of the ways devices, shared by every host.
    devices = hosts * ways if levels == 0 else ways
    switches = 0 if levels == 0 else 1 + (levels - 1) * ways
    links = devices + (0 if levels == 0 else hosts + (levels - 1) * ways)
    assert count == {"host": hosts, "host_bridge": hosts, "switch": switches, "type3": devices, "link": links,
                     "dram": hosts}
    # Each host's window interleaves over ways devices: on its bridge at level 0, on the top switch below one.
    for hb in t.of_type("host_bridge"):
        assert len(t.down(hb.name, "root_port")) == (ways if levels == 0 else 1)
    if levels:
        assert len(t.down("sw1", "dsp")) == ways
        assert len([c for c in t.connections if c.b.comp == "sw1"]) == hosts  # an upstream port per host
    lds = {d.values["device.logical_devices"] for d in t.of_type("type3")}
    assert lds == {hosts if levels and hosts > 1 else 1}


@pytest.mark.parametrize("args,needle", [
    (dict(hosts=17), "fabric: hosts: 17 is out of range; allowed: a whole number from 1 to 16"),
    (dict(levels=-1), "levels: -1 is out of range; allowed: a whole number from 0 to 4"),
    (dict(interleave_ways=5), "interleave_ways: 5 is not allowed; allowed values: 1, 2, 3, 4, 6, 8, 12, 16"),
    (dict(host_lanes=3), "host_lanes: 3 is not allowed; allowed values: 1, 2, 4, 8, 16"),
    (dict(preset="ddr-local"), "preset: 'ddr-local' is not allowed; allowed: a CXL memory preset with one root port"),
    (dict(hosts=True), "hosts: True is out of range"),
])
def test_the_generator_refuses_bad_arguments_naming_them(args, needle):
    with pytest.raises(ParamError) as e:
        fabric(**args)
    assert needle in str(e.value)


# -- checking a spec before anything runs ------------------------------------------------------

@pytest.mark.parametrize("raw,needle", [
    (spec([axis("base.hosts", 1, 0)]), "axis base.hosts: 0 is out of range; allowed: a whole number from 1 to 16"),
    (spec([axis("base.levels", 0, 5)]), "axis base.levels: 5 is out of range; allowed: a whole number from 0 to 4"),
    (spec([axis("base.interleave_ways", 3, 5)]), "axis base.interleave_ways: 5 is not allowed; allowed values: 1, 2, 3"),
    (spec([axis("base.switches", 1)]), "axis base.switches: switches is not an argument of the fabric generator; "
                                       "allowed: hosts, levels, interleave_ways"),
    (spec([{"param": "base.hosts", "range": [1, 4]}]), "axis base.hosts: range is not allowed for a structural axis"),
    (spec([axis("base.levels")]), "axis base.levels: values is empty; allowed: a list of one or more values"),
    (spec([axis("base.hosts", 1, 2)], base="cxl-asic"), "axis base.hosts: base = 'cxl-asic' is not a topology "
                                                        "generator; allowed: base = { generator"),
    (spec([axis("base", "cxl-asic")]), "axis base: an axis over bases is not allowed with a generator base"),
    (spec([axis("base", "cxl-asic", 3)], base="cxl-asic"), "axis base: 3 is not allowed; allowed: preset names"),
    (spec([axis("base", "cxl-asic", "no-such-preset")], base="cxl-asic", kind="traffic"),
     "base = 'no-such-preset' is not allowed"),
    (spec([], base={"generator": "mesh"}), "base.generator = 'mesh' is not allowed; allowed: fabric"),
    (spec([], base={"hosts": 2}), "base.generator is missing; allowed: fabric"),
    (spec([], base={"generator": "fabric", "hosts": 99}), "base.hosts: 99 is out of range; allowed: a whole number "
                                                          "from 1 to 16"),
    (spec([], base={"generator": "fabric", "preset": "cxl-nope"}), "base.preset: 'cxl-nope' is not allowed"),
    (spec([], base=7), "base = 7 is not allowed; allowed: a preset name"),
    # A parameter axis must exist in every structure: no switch at level 0.
    (spec([axis("base.levels", 1, 0), axis("sw1.latency_ns", 0, 100)]),
     "axis sw1.latency_ns: sw1.latency_ns is not a parameter of fabric-1h-0l-1w (address-map)"),
    (spec([axis("base.levels", 1, 0), axis("sw1.latency_ns", 0, 100)]), "(at base.levels = 0)"),
    (spec([axis("base.hosts", 1, 2)], threads=49), "workload.threads = 49 is out of range; allowed: 1 to"),
    (spec([], target="h0_cxl"), "target is not a parameter of the hosts workload"),
    (spec([axis("workload.read_fraction", 1.5)]), "axis workload.read_fraction: 1.5 is out of range"),
    (spec([], kind="accel"), "workload.kind = 'accel' is not allowed with a generator base"),
])
def test_bad_structural_specs_are_refused_before_anything_runs(raw, needle):
    with pytest.raises(ParamError) as e:
        sw.Sweep.from_dict(raw)
    assert needle in str(e.value)


def test_the_example_spec_loads_with_its_36_points():
    s = sw.Sweep.from_toml(EXAMPLE)
    grid = s.grid()
    assert len(grid) == 3 * 4 * 3
    assert {p["base.levels"] for p in grid} == {0, 1, 2} and {p["base.hosts"] for p in grid} == {1, 2, 4, 8}
    assert s.base_system({"base.levels": 2, "base.hosts": 8, "base.interleave_ways": 4}).graph.name == \
        "fabric-8h-2l-4w"


# -- physics of a structural sweep ----------------------------------------------------------

def test_each_switch_level_adds_its_hand_computed_idle_latency(tmp_path):
    # One host, one device, one request at a time far apart, at 0, 1 and 2 switch levels.
    # Each level adds the switch's traversal each way and one more hop of an idle Gen5 x16 link each
    # way: a MemRd in one 68 B flit, a MemData in two (tests/test_switch.py derives them), each hop
    # with the PHY's latency (the preset's links', x16 ones too). The level-0 hop (the device's x8
    # link) stays at every level.
    phy, swp = presets.load("cxl-asic").cxl.link.phy_latency_ns, SwitchParams()
    flit16 = 68 / (32e9 * 16 * 128 / 130 / 8) * 1e9
    per_level = 2 * swp.latency_ns + (flit16 + phy) + (2 * flit16 + phy)
    assert per_level == pytest.approx(253.24, abs=0.01)  # 200 + 3 x 1.0791 + 2 x 25
    s = sw.Sweep.from_dict({**spec([axis("base.levels", 0, 1, 2)], threads=1, requests=1000,
                                   inject_delay_ns=1000.0),
                            "metrics": ["read_latency_ns_mean", "read.stage.switch_ns", "read.stage.link_down_ns",
                                        "read.stage.link_up_ns", "hosts"]})
    df = sw.run(s, tmp_path, workers=1).set_index("param.base.levels").sort_index()
    assert (df["status"] == "ok").all() and (df["hosts"] == 1).all()
    flit8 = 2 * flit16
    for level in (0, 1, 2):
        r = df.loc[level]
        assert r["read.stage.switch_ns"] == pytest.approx(level * 200.0, abs=0.01)
        assert r["read.stage.link_down_ns"] == pytest.approx(flit8 + phy + level * (flit16 + phy), abs=0.01)
        assert r["read.stage.link_up_ns"] == pytest.approx(2 * flit8 + phy + level * (2 * flit16 + phy), abs=0.01)
        # The same device sees the same addresses at every level: the whole latency moves by the levels alone.
        added = r["read_latency_ns_mean"] - df.loc[0, "read_latency_ns_mean"]
        assert added == pytest.approx(level * per_level, abs=0.5)


def test_hosts_sharing_one_device_stay_under_its_link_and_obey_littles_law(tmp_path):
    # 2 and 4 hosts of 16 cores (16 misses each in flight) on one x8 expander behind a switch.
    s = sw.Sweep.from_dict({**spec([axis("base.hosts", 1, 2, 4)], threads=16, requests=20000,
                                   base={"generator": "fabric", "preset": "cxl-asic", "levels": 1}),
                            "metrics": ["read_gbps", "total_gbps", "read_latency_ns_mean", "host_total_gbps_min",
                                        "host_total_gbps_max"] + [f"h{i}.{m}" for i in range(1)
                                                                  for m in ("read_gbps", "read_latency_ns_mean")]})
    df = sw.run(s, tmp_path, workers=1).set_index("param.base.hosts").sort_index()
    assert (df["status"] == "ok").all()
    for n in (2, 4):
        r = df.loc[n]
        # Every read's data crosses the device's x8 link: the hosts together stay below its read peak.
        assert r["read_gbps"] <= X8_READ
        # Round-robin between the hosts' upstream ports: equal shares within 5 %.
        assert r["host_total_gbps_min"] >= 0.95 * r["host_total_gbps_max"]
    # The shared device binds: a fourth host adds nothing that two did not already take.
    assert df.loc[4, "read_gbps"] == pytest.approx(df.loc[2, "read_gbps"], rel=0.03)
    assert df.loc[2, "read_gbps"] > 1.2 * df.loc[1, "read_gbps"]
    # Little's law on every host: 16 cores x 16 line fills in flight (host.mshrs_per_core) over the
    # mean latency, so per-host bandwidth falls exactly as latency grows with the sharing.
    for n in (1, 2, 4):
        r = df.loc[n]
        mean_share = r["read_gbps"] / n
        assert mean_share == pytest.approx(16 * 16 * 64 / r["read_latency_ns_mean"], rel=0.01)


def test_an_axis_over_bases_takes_presets_and_topology_files(tmp_path):
    pool = str(REPO / "examples" / "topologies" / "switch-1level.toml")
    s = sw.Sweep.from_dict({"name": "bases", "axes": [axis("base", "cxl-asic", pool)],
                            "workload": {"kind": "traffic", "threads": 1, "requests": 1000,
                                         "inject_delay_ns": 1000.0},
                            "metrics": ["read.stage.switch_ns"]})
    df = sw.run(s, tmp_path, workers=1).set_index("param.base")
    assert df.loc["cxl-asic", "read.stage.switch_ns"] == 0
    assert df.loc[pool, "read.stage.switch_ns"] == pytest.approx(2 * SwitchParams().latency_ns, abs=0.01)


def test_a_structural_sweep_resumes_with_only_what_is_missing(tmp_path):
    s = sw.Sweep.from_dict(spec([axis("base.levels", 0, 1), axis("base.hosts", 1, 2)]))
    full = sw.run(s, tmp_path / "ref", workers=1).set_index("id").sort_index()
    out = tmp_path / "out"
    sw.run(s, out, workers=1)
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(lines[:1]) + "\n" + lines[1][:12])  # killed mid-write
    calls = []
    again = sw.run(s, out, workers=1, progress=lambda d, t: calls.append(t)).set_index("id").sort_index()
    assert calls and calls[0] == 3
    cols = ["param.base.levels", "param.base.hosts", "total_gbps", "read_latency_ns_mean"]
    pd.testing.assert_frame_equal(again[cols], full[cols])


def test_the_hosts_row_sums_bandwidth_and_weights_latency_by_reads():
    df = pd.DataFrame({"memory": "m", "host": ["h0", "h1"], "read_gbps": [3.0, 1.0], "write_gbps": [1.0, 0.0],
                       "total_gbps": [4.0, 1.0], "read_latency_ns_mean": [200.0, 600.0],
                       "read_latency_p99_ns": [400.0, 900.0], "read.stage.switch_ns": [200.0, 200.0],
                       "window_ns": [1e6, 1e6]})
    row = sweep_points.hosts_row(df)
    # Three times as many reads at 200 ns as at 600 ns: (3 x 200 + 1 x 600) / 4 = 300.
    assert row["read_latency_ns_mean"] == pytest.approx(300.0)
    assert (row["read_gbps"], row["write_gbps"], row["total_gbps"]) == (4.0, 1.0, 5.0)
    assert row["read_latency_p99_ns"] == 900.0 and row["read.stage.switch_ns"] == 200.0
    assert (row["host_total_gbps_min"], row["host_total_gbps_max"], row["hosts"]) == (1.0, 4.0, 2)
    assert row["h1.read_latency_ns_mean"] == 600.0 and row["window_ns"] == 1e6


def test_a_generated_base_takes_parameter_axes_by_component_name(tmp_path):
    # Below one level every structure has sw1: its traversal is a parameter axis beside the structure's.
    s = sw.Sweep.from_dict({**spec([axis("base.hosts", 1, 2), axis("sw1.latency_ns", 0.0, 100.0)], threads=1,
                                   requests=1000, inject_delay_ns=1000.0,
                                   base={"generator": "fabric", "preset": "cxl-asic", "levels": 1}),
                            "metrics": ["read.stage.switch_ns"]})
    df = sw.run(s, tmp_path, workers=1)
    for _, r in df.iterrows():
        assert r["read.stage.switch_ns"] == pytest.approx(2 * r["param.sw1.latency_ns"], abs=0.01)


def test_the_cli_runs_a_generator_spec_and_plots_a_panel_per_value(tmp_path):
    spec_path = tmp_path / "s.toml"
    spec_path.write_text('name = "tiny"\nmetrics = ["total_gbps"]\n[base]\ngenerator = "fabric"\nlevels = 1\n'
                         '[workload]\nkind = "hosts"\nthreads = 2\nrequests = 1000\n'
                         '[[axes]]\nparam = "base.hosts"\nvalues = [1, 2]\n'
                         '[[axes]]\nparam = "base.interleave_ways"\nvalues = [1, 2]\n')
    exe = str(Path(sys.executable).parent / "simcxl")
    out = tmp_path / "out"
    r = subprocess.run([exe, "sweep", str(spec_path), "--out", str(out), "--workers", "1"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "4 points (4 ok, 0 failed)" in r.stdout, r.stderr
    r = subprocess.run([exe, "plot", str(out), "--x", "param.base.hosts", "--y", "total_gbps",
                        "--col", "param.base.interleave_ways"], capture_output=True, text=True)
    png = out / "total-gbps-vs-base-hosts-per-base-interleave-ways.png"
    assert r.returncode == 0 and png.stat().st_size > 10_000, r.stderr
    assert "averages" not in r.stderr  # every axis is on the plot: nothing averaged
    r = subprocess.run([exe, "plot", str(out), "--x", "param.base.hosts", "--y", "total_gbps",
                        "--col", "param.base.hosts"], capture_output=True, text=True)
    assert r.returncode != 0 and "name the same column twice" in r.stderr
    spec_path.write_text(spec_path.read_text().replace("values = [1, 2]\n", "values = [1, 17]\n", 1))
    r = subprocess.run([exe, "sweep", str(spec_path), "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert r.returncode != 0 and "axis base.hosts: 17 is out of range; allowed: a whole number from 1 to 16" in r.stderr
