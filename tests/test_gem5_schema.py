"""CI-safe (no gem5 needed): the gem5 SimObjects' declarations against what
simcxl.gem5.components fills in from a preset. Their schema parameters (bridge_*, link_*,
device_*, media_*, nic_*) are generated from the dataclasses
(tests/test_schema_generated.py); here the hand-written ones and the names
the runtime sets are checked."""

import ast

import pytest

from simcxl.engine import reqtrace
from simcxl.gem5 import components as g5

from conftest import REPO


def declared(name):
    """Param and VectorParam declarations of a SimObject class: name -> (kind, default or None)."""
    tree = ast.parse((REPO / "devices" / f"{name}.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    out = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and func.value.id in ("Param", "VectorParam"):
                args = stmt.value.args
                try:
                    value = ast.literal_eval(args[0]) if func.value.id == "Param" else None
                except ValueError:  # a proxy default (Parent.any)
                    value = None
                out[stmt.targets[0].id] = (f"{func.value.id}.{func.attr}", value)
    return out


def test_host_bridge_declares_what_simcxl_gem5_sets():
    decl = declared("CXLHostBridge")
    assert decl.pop("root_ports") == ("VectorParam.CXLPortTarget", None)
    assert decl.pop("host_index") == ("Param.Unsigned", 0)  # the standalone engine's first host
    # The standalone engine's watchdog window: 10 ms (kernel/sim.hpp Watchdog::kDefaultWindow).
    assert decl.pop("watchdog_window_ns") == ("Param.Float", 1e7)
    # Request traces: off unless a file is named, sampling as `simcxl run --trace`'s defaults.
    assert decl.pop("trace_file") == ("Param.String", "")
    assert decl.pop("trace_sample") == ("Param.UInt64", reqtrace.DEFAULT_SAMPLE)
    assert decl.pop("trace_max_requests") == ("Param.UInt64", reqtrace.DEFAULT_MAX_REQUESTS)
    assert list(decl) == list(g5.bridge_names())


def test_type3_expander_declares_what_simcxl_gem5_sets():
    decl = declared("CXLType3Expander")
    assert decl.pop("seed") == ("Param.Unsigned", 1)
    assert decl.pop("fault_device_stops_after") == ("Param.Unsigned", 0)  # tests of the watchdog only
    assert list(decl) == list(g5.expander_names())


def test_simobject_params_of_a_preset(presets):
    s = presets["cxl-asic"]
    b, e0, e1 = g5.bridge_params(s), g5.expander_params(s, 0), g5.expander_params(s, 1)
    assert b["bridge_req_queue"] == s.cxl.bridge.req_queue
    assert e0["link_lanes"] == s.cxl.link.lanes and e0["media_tRCD_ns"] == s.cxl.media.tRCD_ns
    # The preset sets every parameter but the run-control ones (watchdog, fault injection).
    assert set(b) == set(declared("CXLHostBridge")) - {"root_ports", "host_index", "watchdog_window_ns", "trace_file",
                                                        "trace_sample", "trace_max_requests"}
    assert set(e0) == set(declared("CXLType3Expander")) - {"fault_device_stops_after"}
    # Root port i's link draws its CRC errors from seed + 17 i, as in the standalone engine.
    assert (e0["seed"], e1["seed"]) == (s.seed, s.seed + 17)


def test_interleaved_window_sets_ports_and_ways(presets):
    s = g5.interleaved(presets["cxl-asic"], ways=3, granularity=256)
    assert (s.cxl.bridge.root_ports, s.cxl.bridge.interleave_ways, s.cxl.bridge.interleave_bytes) == (3, 3, 256)
    with pytest.raises(g5.ParamError, match="interleave_ways = 5 is not allowed"):
        g5.interleaved(presets["cxl-asic"], ways=5)


def test_config_tables_round_trip_through_csv(tmp_path):
    import csv

    one = tmp_path / "one.csv"
    g5.write_csv(one, {"memory": "cxl-asic", "reads": 12.0})
    assert list(csv.DictReader(one.open())) == [{"memory": "cxl-asic", "reads": "12.0"}]
    rows = [{"size_bytes": 16384, "latency_ns": 1.5}, {"size_bytes": 1 << 24, "latency_ns": 230.25}]
    many = tmp_path / "many.csv"
    g5.write_csv(many, rows)
    back = list(csv.DictReader(many.open()))
    assert [(int(r["size_bytes"]), float(r["latency_ns"])) for r in back] == [(16384, 1.5), (1 << 24, 230.25)]
    g5.write_csv(None, rows)  # no --csv: nothing written, no error


def test_total_reads_one_stat_by_its_exact_name(tmp_path):
    stats = tmp_path / "stats.txt"
    stats.write_text("---------- Begin Simulation Statistics ----------\n"
                     "board.memory.bridge.readReqs   100   # Read requests (Count)\n"
                     "board.memory.bridge.readReqsX  7     # a longer name\n"
                     "board.memory.bridge.numReads::total  250  # all reads\n")
    rows = g5.read_stats(stats)
    assert g5.total(rows, "board.memory.bridge.readReqs") == 100
    assert g5.total(rows, "board.memory.bridge.numReads::total") == 250
    assert g5.total(rows, "board.memory.bridge.writeReqs") == 0


def test_cxl_nic_declares_what_gem5_nic_sets():
    from simcxl.gem5 import nic as gem5_nic

    decl = declared("CXLNic")
    # Run wiring, not NIC parameters: the rings' and operands' place in the guest's memory.
    for k in ("system", "rings", "ring_base", "array_base", "array_words"):
        decl.pop(k)
    assert list(decl) == list(gem5_nic.setup("type1-asic", {"completions_per_line": 4})["nic"])


def test_gem5_nic_setup_charges_the_standalone_engines_messages():
    from simcxl.gem5 import nic as gem5_nic

    s = gem5_nic.setup("type1-asic", {"completions_per_line": 4})
    p = s["standalone_paths_ns"]
    # type1-asic by hand: a device read of a host-held line is the device cache, link up, home, link down.
    assert p["device_cache_ns"] == 5.0
    assert p["request_ns"] + p["response_ns"] + p["device_cache_ns"] == pytest.approx(98.239, abs=0.01)
    assert p["host_uncore_ns"] == 79.0  # host_hit_ns 39 + home latency_ns 40
    # gem5's own caches and bus are subtracted, never below zero.
    assert s["link"]["request_ns"] == pytest.approx(p["request_ns"] - gem5_nic.DEVICE_PATH_NS, abs=1e-3)
    assert s["host"]["uncore_ns"] == pytest.approx(79.0 - gem5_nic.HOST_PATH_CYCLES / 3.0, abs=1e-3)
    assert s["nic"]["nic_completions_per_line"] == 4 and s["cache"]["bytes"] == 131072


def test_gem5_nic_setup_rejects_what_the_guest_format_cannot_hold():
    from simcxl.gem5 import nic as gem5_nic

    with pytest.raises(g5.ParamError, match="completions_per_line 1 to 4"):
        gem5_nic.setup("type1-asic")  # the default 8 completions of 8 B a line
    with pytest.raises(g5.ParamError, match="nic.network = 1 is not allowed"):
        gem5_nic.setup("type1-asic", {"completions_per_line": 4, "network": 1})
    with pytest.raises(g5.ParamError, match="kernel = 'gather' is not allowed"):
        gem5_nic.run("type1-asic", {"completions_per_line": 4}, kernel="gather", gem5="/nonexistent")


def test_switch_declares_its_schema_groups():
    decl = declared("CXLSwitch")
    assert decl.pop("downstream") == ("VectorParam.CXLPortTarget", None)
    assert decl.pop("seed") == ("Param.Unsigned", 1)
    from simcxl.config.groups import LinkParams, SwitchParams
    from dataclasses import fields
    assert list(decl) == [f"switch_{f.name}" for f in fields(SwitchParams)] + [f"link_{f.name}" for f in fields(LinkParams)]
