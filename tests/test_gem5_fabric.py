"""CI-safe (no gem5 needed): simcxl.gem5.fabric walks a topology file into gem5
SimObjects as the standalone engine's builder walks it. gem5's constructors are
replaced by recorders of their keyword arguments, so what is checked is which
objects are made, how they share, and which parameters each gets."""

import sys
import types

import pytest

from simcxl import topology
from simcxl.gem5.fabric import host_windows
from simcxl.config.params import ParamError

from conftest import REPO


class Made:
    def __init__(self, kind, **kw):
        self.kind, self.kw = kind, kw
        self.range = None


@pytest.fixture
def fake_m5(monkeypatch):
    objects = types.ModuleType("m5.objects")
    for kind in ("CXLHostBridge", "CXLSwitch", "CXLType3Expander"):
        setattr(objects, kind, lambda _k=kind, **kw: Made(_k, **kw))
    objects.AddrRange = lambda base, size: (base, size)
    m5 = types.ModuleType("m5")
    m5.objects = objects
    monkeypatch.setitem(sys.modules, "m5", m5)
    monkeypatch.setitem(sys.modules, "m5.objects", objects)


def test_four_hosts_share_one_switch_and_one_mld(fake_m5):
    path = REPO / "examples" / "topologies" / "pool-4hosts-mld.toml"
    t = topology.load(path)
    ws = host_windows(path, 1 << 30)
    assert [w.host for w in ws] == ["h0", "h1", "h2", "h3"]
    # Host i's responses come back by its index, as the standalone engine numbers hosts in file order.
    assert [w.bridge.kw["host_index"] for w in ws] == [0, 1, 2, 3]
    switches = {id(w.bridge.kw["root_ports"][0]) for w in ws}
    assert len(switches) == 1  # one switch, every host's root port leads to it
    sw = ws[0].bridge.kw["root_ports"][0]
    assert sw.kind == "CXLSwitch" and len(sw.kw["downstream"]) == 1
    dev = sw.kw["downstream"][0]
    assert dev.kind == "CXLType3Expander"
    name = t.below(t.down("sw", "dsp")[0].b.comp, "down")[0].name
    assert dev.kw["device_logical_devices"] == t.components[name].group("device").logical_devices == 4
    # Each window: its base in the host's map, the bytes asked for, the bridge's own parameters.
    conn = t.down("h1", "mem")
    cxl = next(c for c in conn if t.components[c.b.comp].type == "host_bridge")
    assert ws[1].bridge.range == (cxl.base, 1 << 30)
    assert ws[1].bridge.kw["bridge_root_ports"] == 1
    assert ws[1].bridge.kw["bridge_req_queue"] == t.components["h1_cxl"].group("").req_queue
    # The switch's upstream links take the link into it; its own group the switch's.
    assert sw.kw["link_lanes"] == t.components["h0_link"].group("").lanes
    assert sw.kw["switch_latency_ns"] == t.components["sw"].group("").latency_ns


def test_a_window_larger_than_the_hosts_is_refused(fake_m5):
    path = REPO / "examples" / "topologies" / "pool-4hosts-mld.toml"
    with pytest.raises(ParamError, match=r"size 34359738368 is out of range for window h0.mem -> h0_cxl.up"):
        host_windows(path, 32 << 30)


def test_a_topology_without_cxl_windows_is_refused(fake_m5):
    with pytest.raises(ParamError, match="has no host with a CXL window"):
        host_windows(REPO / "examples" / "topologies" / "ddr-local.toml", 1 << 30)
