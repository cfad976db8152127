"""One stats naming: every component statistic is ``<component>.<stat>``, the component's name in
the topology graph (docs/reference/stats.md). The expected names here come from the topology
files themselves (read with tomllib, not through simcxl) and from the statistics' meaning."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import simcxl
from simcxl import topology
from simcxl.topology import stats as S

ROOT = Path(__file__).resolve().parents[1]
TOPO = ROOT / "examples" / "topologies"

# What one direction of a link counts (a flit channel), and what a DRAM controller counts.
CHANNEL = {"data_gbps", "raw_gbps", "utilization", "flits", "messages", "slot_fill", "crc_errors", "replayed_flits"}
DRAM = {"read_gbps", "write_gbps", "peak_gbps", "bus_utilization", "row_hit_rate", "row_conflict_rate", "refreshes",
        "refreshes_postponed", "turnarounds", "rank_switches", "write_bursts", "mean_read_queue", "retries"}
# A workload's own results that carry a dot: the latency breakdown by stage.
RUN_PREFIXES = ("read.stage.", "write.stage.")


def system(name: str):
    return topology.memory_system(topology.load(str(TOPO / name)))


def components(path: Path) -> dict:
    """{name: type} of a topology file, and its connections, as the file writes them."""
    d = tomllib.loads(path.read_text())
    return {n: c["type"] for n, c in d["components"].items()}, d.get("connections", [])


def component_stats(row) -> dict:
    """{component: {stat, ...}} of a result row: every dotted key but the stage breakdown."""
    out = {}
    for k in row.index:
        if "." in k and not k.startswith(RUN_PREFIXES):
            comp, stat = k.split(".", 1)
            out.setdefault(comp, set()).add(stat)
    return out


@pytest.fixture(scope="module")
def switch_run():
    return simcxl.traffic(system("switch-1level.toml"), threads=8, requests=8000).iloc[0]


def test_switch_topology_reports_under_its_component_names(switch_run):
    comps, conns = components(TOPO / "switch-1level.toml")
    got = component_stats(switch_run)
    links = [n for n, t in comps.items() if t == "link"]
    devices = [n for n, t in comps.items() if t == "type3"]
    dsps = sorted(int(re.search(r"\[(\d+)\]", c["from"]).group(1)) for c in conns if c["from"].startswith("sw.dsp"))
    assert (len(links), len(devices), dsps) == (5, 4, [0, 1, 2, 3])
    # Exactly the file's components report (the host, with one window, has nothing of its own).
    assert set(got) == set(comps) - {"host"}
    for link in links:
        assert got[link] == {f"{d}.{s}" for d in ("m2s", "s2m") for s in CHANNEL}, link
    for dev in devices:
        assert {s for s in got[dev] if s.startswith("media.")} == {"media." + s for s in DRAM}, dev
        assert {"mean_occupancy", "media_retries", "devload_light", "devload_severe"} <= got[dev]
    assert got["local_dram"] == DRAM
    assert got["sw"] == {"requests", "responses", "egress_full", "credit_waits"} | {
        f"dsp{j}.{s}" for j in dsps for s in ("requests", "responses", "response_wait_ns")}
    assert got["cxl"] == {"refused"}


def test_link_bytes_add_up_to_what_the_trace_moved(tmp_path):
    """A trace of R reads and W writes through the switch: every line crosses the upstream link and
    exactly one device link, so the device links' M2S data add up to 64 B x W and their S2M data to
    64 B x R, and the upstream link carries the same (a second count of the same bytes)."""
    reads, writes = 300, 100
    ops = ["R"] * reads + ["W"] * writes
    # Lines 4 KiB apart: the switch interleaves at 4 KiB, so each device gets a quarter.
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"{10 * i} {op} {4096 * i:#x}\n" for i, op in enumerate(ops)))
    r = simcxl.trace(system("switch-1level.toml"), trace).iloc[0]
    secs = r["window_ns"] * 1e-9

    def data_bytes(link, d):
        return r[f"{link}.{d}.data_gbps"] * 1e9 * secs
    leaves = [f"link{i}" for i in range(4)]
    assert sum(data_bytes(l, "m2s") for l in leaves) == pytest.approx(64 * writes, rel=1e-9)
    assert sum(data_bytes(l, "s2m") for l in leaves) == pytest.approx(64 * reads, rel=1e-9)
    assert data_bytes("up_link", "m2s") == pytest.approx(64 * writes, rel=1e-9)
    assert data_bytes("up_link", "s2m") == pytest.approx(64 * reads, rel=1e-9)
    # One request message down and one response up per access, spread evenly over the four ports.
    for l in leaves:
        assert r[f"{l}.m2s.messages"] == r[f"{l}.s2m.messages"] == (reads + writes) / 4
    assert [r[f"sw.dsp{j}.requests"] for j in range(4)] == [(reads + writes) / 4] * 4
    # Media: what the devices read and wrote, the same bytes a third time.
    assert sum(r[f"exp{i}.media.read_gbps"] for i in range(4)) * 1e9 * secs == pytest.approx(64 * reads, rel=1e-9)


@pytest.mark.parametrize("spec,run", [
    ("switch-1level.toml", "traffic"),
    ("ddr-remote.toml", "traffic"),
    ("region-2way.toml", "traffic"),
    ("switch-region.toml", "traffic"),
    ("mixed.toml", "stream"),
    ("mixed-nic.toml", "stream"),
    ("pool-4hosts-mld.toml", "hosts"),
    ("dcd.toml", "hosts"),
])
def test_every_reported_stat_is_in_its_type_registry(spec, run):
    """Each component's statistics match the names its type registers (docs/reference/stats.md), and
    each statistic a type always reports is there."""
    comps, _ = components(TOPO / spec)
    path = system(spec)
    if run == "traffic":
        row = simcxl.traffic(path, threads=4, requests=3000).iloc[0]
        got = component_stats(row)
    elif run == "stream":
        row = simcxl.stream(path, kernels=["copy"], threads=2, lines_per_thread=500).iloc[0]
        got = component_stats(row)
    else:
        df = simcxl.hosts(path, requests=2000)
        got = component_stats(__import__("pandas").Series(df.attrs["components"]))
    assert got, spec
    for comp, names in got.items():
        assert comp in comps, f"{comp}: not a component of {spec}"
        pat = S.pattern(comps[comp])
        assert all(pat.match(n) for n in names), (comp, sorted(n for n in names if not pat.match(n)))
        always = {s["name"] for s in S.STATS[comps[comp]] if not s["when"] and "<" not in s["name"]}
        assert always <= names, (comp, always - names)


def test_mld_and_window_stats_carry_their_documented_suffixes():
    df = simcxl.hosts(system("pool-4hosts-mld.toml"), requests=2000)
    c = df.attrs["components"]
    hosts = list(df["host"])
    # Each host's LD on the pooled device, and each host's windows, under that host.
    comps, conns = components(TOPO / "pool-4hosts-mld.toml")
    mlds = [n for n, t in comps.items() if t == "type3" and any(k.startswith(n + ".ld") for k in c)]
    assert mlds
    for m in mlds:
        lds = {int(k.split(".")[1][2:]) for k in c if k.startswith(m + ".ld")}
        assert lds == set(range(len(lds))) and len(lds) >= 2
    for h in hosts:
        windows = [x["to"].split(".")[0] for x in conns if x["from"] == f"{h}.mem"]
        if len(windows) > 1:
            assert {k for k in c if k.startswith(h + ".window.")} == {
                f"{h}.window.{w}.{s}" for w in windows for s in ("read_gbps", "write_gbps", "requests")}
    # The host rows keep the runs' own results, not the host components' statistics.
    assert not any(col.startswith("window.") for col in df.columns)


def test_the_stats_reference_is_generated_from_the_core():
    assert (ROOT / S.DOCS).read_text() == S.render(), "run python -m simcxl.topology.stats"


def test_every_type_registers_stats():
    for t in ("host", "dram", "remote_socket", "host_bridge", "switch", "link", "type3", "home_agent", "accelerator",
              "nic"):
        names = [s["name"] for s in S.STATS[t]]
        assert names and len(names) == len(set(names)), t
