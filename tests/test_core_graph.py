"""The core's own builder: ``_core`` takes a system only as a graph (components
and connections) and checks it against its registry of component types before
anything runs, each refusal one line naming the component and port. A graph
the core builds directly gives the figures of the preset it draws."""

import copy

import pytest

from simcxl import _core, topology
from simcxl.workloads import coherent, nic
from simcxl.engine import standalone as engine
from simcxl.config import presets
from simcxl.topology import core_graph
from simcxl.topology.types import TYPES

from conftest import REPO

EXAMPLES = REPO / "examples" / "topologies"


def test_the_python_registry_is_the_cores():
    core = {t["name"]: t for t in _core.component_types()}
    assert set(core) == set(TYPES)
    for name, t in TYPES.items():
        assert [p.name for p in t.ports] == [p["name"] for p in core[name]["ports"]]
        assert [g for g, _ in t.groups] == [g for g, _ in core[name]["groups"]]
    # The bridge's ways are its connections (CXL 2.0 HDM decoder: one target per root port).
    assert set(core["host_bridge"]["derived"]) == {"root_ports", "interleave_ways"}


def base():
    return core_graph(presets.load("cxl-asic"))


def edited(fn):
    d = copy.deepcopy(base())
    fn(d)
    return d


def conn(d, frm):
    return next(k for k in d["connections"] if k["from"] == frm)


BAD = [
    ("unknown type", lambda d: d["components"]["cxl_dev0"].update(type="type4"),
     "cxl_dev0.type = 'type4' is not a component type; allowed: host, dram"),
    ("unknown port", lambda d: conn(d, "cxl_link0.down").update(to="cxl_dev0.upp"),
     "cxl_dev0.upp: a type3 has no port upp; allowed: up"),
    ("unknown component", lambda d: conn(d, "cxl_link0.down").update(to="nobody.up"),
     "nobody.up: no component named nobody"),
    ("index on a single port", lambda d: conn(d, "cxl_link0.down").update(to="cxl_dev0.up[0]"),
     "cxl_dev0.up[0]: up is a single port and takes no index"),
    ("both ends sending", lambda d: conn(d, "cxl_link0.down").update(to="cxl_link0.down"),
     "cxl_link0.down is a port requests leave by"),
    ("two things on one port", lambda d: d["connections"].append({"from": "cxl_link0.down", "to": "cxl_dev0.up"}),
     "cxl_link0.down: two things on one port"),
    ("channel mismatch", lambda d: conn(d, "host.local").update(to="cxl_link0.up"),
     "host.local -> cxl_link0.up: channel mismatch (mem to cxl)"),
    ("a link below the host", lambda d: conn(d, "host.local").update(to="cxl.up"),
     "host.local -> cxl.up: a host_bridge cannot sit below host.local"),
    ("port left open", lambda d: d["connections"].remove(conn(d, "cxl_link0.down")),
     "cxl_link0.down: port left open"),
    ("indexes on some connections only", lambda d: (
        d["components"].update(l1=d["components"]["cxl_link0"], d1=d["components"]["cxl_dev0"]),
        d["connections"].extend([{"from": "cxl.root_port", "to": "l1.up"}, {"from": "l1.down", "to": "d1.up"}])),
     "cxl.root_port: give every connection an index or none"),
    ("a window without base and size beside others", lambda d: (
        d["components"].update(ddr=d["components"]["local_dram"]),
        d["connections"].append({"from": "host.mem", "to": "ddr.up"})),
     "host.mem -> cxl.up: with several windows each host.mem connection gives base and size"),
    ("base and size off the host", lambda d: conn(d, "cxl_link0.down").update(base=0, size=1 << 30),
     "cxl_link0.down -> cxl_dev0.up: base and size belong to host.mem connections only"),
    ("a derived parameter", lambda d: d["components"]["cxl"].update(interleave_ways=2),
     "cxl.interleave_ways is derived: the number of its root_port connections; leave it out"),
    ("out of range, named by its component", lambda d: d["components"]["cxl_dev0"]["media"].update(channels=0),
     "cxl_dev0.media.channels = 0 is out of range; allowed: 1 to 64"),
    ("a bad port name", lambda d: conn(d, "cxl_link0.down").update(to="cxl_dev0"),
     "connections[3].to = 'cxl_dev0' is not a port; allowed: 'component.port' or 'component.port[i]'"),
]


@pytest.mark.parametrize("fn,message", [(f, m) for _, f, m in BAD], ids=[k for k, _, _ in BAD])
def test_bad_graphs_are_refused_in_one_line_naming_the_port(fn, message):
    d = edited(fn)
    with pytest.raises(_core.ConfigError) as e:
        _core.validate(d)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_protocol_mismatch_is_refused():
    """A Type-3 device speaks CXL.mem only: behind the home agent's CXL.cache root port it is refused."""
    d = core_graph(coherent.load("type1-asic"))
    d["components"]["dev0"] = copy.deepcopy(base()["components"]["cxl_dev0"])
    with pytest.raises(_core.ConfigError, match=r"home.root_port\[0\] -> dev0_link -> dev0.up: protocol mismatch "
                                                r"\(cxl.cache root port, a type3 speaks cxl.mem\)"):
        _core.validate(d)


def test_a_graph_from_a_file_gives_the_figures_of_its_preset():
    """examples/topologies/cxl-asic.toml names its parts its own way; built by the core from the file's
    graph it is the same machine as the preset: the same latency to the last bit."""
    t = topology.load(EXAMPLES / "cxl-asic.toml")
    direct = _core.run_lmbench(core_graph(t), [1 << 26], 0, 3000, 0, 0, None, 0, None)
    preset = _core.run_lmbench(core_graph(presets.load("cxl-asic")), [1 << 26], 0, 3000, 0, 0, None, 0, None)
    assert direct["latency_ns"] == preset["latency_ns"] > 0
    assert engine.lmbench("cxl-asic", working_sets=[1 << 26], accesses=3000).iloc[0]["latency_ns"] == \
        preset["latency_ns"]


def test_nic_workloads_take_the_nic_from_the_graph():
    """The NIC's parameters travel in the graph: 10 ns more of the PCIe NIC's ALU is 10 ns more in each
    operation's completion phase (compute, then the DMA write up and the interrupt, one operation at a
    time), and a graph without a nic is refused."""
    one = {"ring_entries": 1, "descriptors_per_line": 1, "completions_per_line": 1, "post_batch": 1}
    s = nic.load("type1-asic", one).replace(**{"dma.interrupt": 1})
    fast = _core.run_rao(core_graph(s), "central", "add", "pcie-nic", 1, 20, 64)
    slow = _core.run_rao(core_graph(s.replace(**{"nic.alu_ns": s.nic.alu_ns + 10})), "central", "add", "pcie-nic",
                         1, 20, 64)
    assert slow["phase_completion_ns"] - fast["phase_completion_ns"] == pytest.approx(10, abs=1e-6)
    with pytest.raises(_core.ConfigError, match="NIC workloads need a component of type nic"):
        _core.run_rao(core_graph(coherent.load("type1-asic")), "central", "add", "cxl-nic", 1, 10, 64)
