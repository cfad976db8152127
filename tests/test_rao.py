"""Remote atomic operations through the CXL-NIC, the PCIe NIC and the host cores: the values every
mechanism leaves in memory are those of a sequential execution (replayed here, in Python, from the
kernel's operation streams), the coherence checker holds with host cores on the same lines, queues
stay bounded, and timing follows the parameters."""

import numpy as np
import pytest

from simcxl import _core
from simcxl.workloads import coherent, nic
from simcxl.config.groups import NicParams
from simcxl.config.params import ParamError
from simcxl.topology import core_graph

SYS = core_graph(nic.load("type1-asic"))
NIC = NicParams().to_dict()
MASK = (1 << 64) - 1


def stream(kernel, op, threads, iters, elements, stride=9):
    return _core.rao_stream(SYS, kernel, op, threads, iters, elements, stride)


def execute(mem, code, region, index, a, b):
    """One atomic on the word; returns its previous value (the specification of the five operations)."""
    old = mem[region][index]
    if code in ("fetch_add", "add"):
        mem[region][index] = (old + a) & MASK
    elif code == "cas" and old == a:
        mem[region][index] = b
    elif code == "swap":
        mem[region][index] = a
    return old


def resolve(o, results, words):
    """Element index and operands of an operation from the results of earlier ones of its thread."""
    get = lambda d: 0 if d < 0 else results[d]  # noqa: E731
    index = (get(o["addr_dep"]) if o["addr_dep"] >= 0 else o["index"]) % words[o["region"]]
    a = (o["a_imm"] + sum(get(d) for d in o["a_deps"])) & MASK
    b = (o["b_imm"] + sum(get(d) for d in o["b_deps"])) & MASK
    return index, a, b


def initial(ks, elements):
    return [[0] * elements, list(ks["index"])]


def program_order(ks, elements):
    """All threads' operations one thread after another, in program order."""
    mem = initial(ks, elements)
    words = [len(mem[0]), len(mem[1])]
    for ops in ks["streams"]:
        res = {}
        for i, o in enumerate(ops):
            index, a, b = resolve(o, res, words)
            res[i] = execute(mem, o["code"], o["region"], index, a, b)
    return mem


def replay(ks, elements, log, threads):
    """Executes the log in the order the simulator performed it, checking each entry is the thread's
    own operation with the operands its earlier results give, and returns the final memory."""
    mem = initial(ks, elements)
    words = [len(mem[0]), len(mem[1])]
    results = [dict() for _ in range(threads)]
    seen = [0] * threads
    last_on_word = {}
    for (t, i, code, region, index, a, b, result) in log:
        if t >= threads:  # a host core touching the NIC's lines: FETCH_ADD 1
            assert code == "fetch_add" and a == 1
            assert result == execute(mem, code, region, index, a, b)
            continue
        o = ks["streams"][t][i]
        assert code == o["code"] and region == o["region"]
        assert (index, a, b) == resolve(o, results[t], words), (t, i)
        # one thread's operations on one word keep program order
        assert last_on_word.get((t, region, index), -1) < i
        last_on_word[(t, region, index)] = i
        assert result == execute(mem, code, region, index, a, b), (t, i)
        results[t][i] = result
        seen[t] += 1
    assert seen == [len(s) for s in ks["streams"]], "every operation performed exactly once"
    return mem


def run(kernel, op, mech, threads, iters, elements, nic_over=None, sys_over=None, **kw):
    over = {f"nic.{k}": v for k, v in (nic_over or {}).items()}
    over.update({f"{g}.{k}": v for g, kv in (sys_over or {}).items() for k, v in kv.items()})
    return _core.run_rao(core_graph(nic.load("type1-asic").replace(**over)), kernel, op, mech, threads, iters,
                         elements, **kw)


@pytest.mark.parametrize("mech", nic.MECHANISMS)
@pytest.mark.parametrize("op", nic.OPS)
@pytest.mark.parametrize("kernel", nic.KERNELS)
def test_memory_equals_the_sequential_result(kernel, op, mech):
    threads, iters, elements = 3, 24, 64  # few words: threads contend for lines
    r = run(kernel, op, mech, threads, iters, elements, check=True, record=True)
    ks = stream(kernel, op, threads, iters, elements)
    mem = replay(ks, elements, r["log"], threads)
    assert list(r["array"]) == mem[0] and list(r["index"]) == mem[1]
    if kernel in ("rand", "stride1", "striden", "central") and op == "add":
        # increments commute: any order gives the program-order image
        assert list(r["array"]) == program_order(ks, elements)[0]
    assert r["checker_violations"] == 0 and r["dev0.ring_errors" if mech == "cxl-nic" else "ops"] == \
        (0 if mech == "cxl-nic" else threads * len(ks["streams"][0]))
    if mech != "host":
        assert r["dev0.ordering_idle_at_end"] == 1
        assert r["dev0.max_ops_in_flight"] <= (NIC["ops_in_flight"] if mech == "cxl-nic" else threads * NIC["ring_entries"])


@pytest.mark.parametrize("kernel", nic.KERNELS)
def test_one_thread_gives_the_program_order_result(kernel):
    for mech in ("cxl-nic", "pcie-nic"):
        r = run(kernel, "cas", mech, 1, 30, 32, record=True)
        ks = stream(kernel, "cas", 1, 30, 32)
        mem = program_order(ks, 32)
        assert list(r["array"]) == mem[0] and list(r["index"]) == mem[1]


def test_host_cores_on_the_same_lines_keep_coherence_and_values():
    r = run("central", "add", "cxl-nic", 2, 60, 16, noise_threads=2, check=True, record=True)
    assert r["noise_ops"] > 0 and r["checker_checks"] > 0 and r["checker_violations"] == 0
    ks = stream("central", "add", 2, 60, 16)
    mem = replay(ks, 16, r["log"], 2)
    assert list(r["array"]) == mem[0]
    # every increment counted: the kernel's and the host cores'
    assert sum(r["array"]) == 2 * 60 + r["noise_ops"]


def test_kernel_streams_follow_their_definitions():
    t, n, e, s = 2, 10, 1000, 9
    ks = stream("stride1", "add", t, n, e)
    assert [o["index"] for o in ks["streams"][1]] == [n + i for i in range(n)]
    ks = stream("striden", "add", t, n, e, s)
    assert [o["index"] for o in ks["streams"][1]] == [(n * s + i * s) % e for i in range(n)]
    ks = stream("central", "cas", t, n, e)
    assert {o["index"] for ops in ks["streams"] for o in ops} == {0}
    assert [o["code"] for o in ks["streams"][0][:2]] == ["fetch", "cas"]
    ks = stream("ptrchase", "add", 1, 50, 64)
    perm = ks["index"]
    assert sorted(perm) == list(range(64))  # one cycle through every element
    x, seen = 0, set()
    for _ in range(64):
        seen.add(x)
        x = perm[x]
    assert len(seen) == 64 and x == 0
    ops = ks["streams"][0]
    assert all(o["addr_dep"] == i - 1 for i, o in enumerate(ops) if i)
    ks = stream("scatter", "add", 1, 5, e)
    assert [o["code"] for o in ks["streams"][0][:3]] == ["fetch", "fetch_add", "add"]
    assert ks["streams"][0][2]["addr_dep"] == 0 and ks["streams"][0][2]["a_deps"][0] == 1


def test_host_atomics_cost_a_host_hit_and_the_locked_operation():
    # One thread on one word: after the first, every operation hits the host's caches and holds the line
    # for host_atomic_ns; n more operations take n x (home.host_hit_ns + nic.host_atomic_ns).
    a = run("central", "add", "host", 1, 1, 64)
    b = run("central", "add", "host", 1, 101, 64)
    hit = coherent.load("type1-asic").home.host_hit_ns
    assert b["elapsed_ns"] - a["elapsed_ns"] == pytest.approx(100 * (hit + NIC["host_atomic_ns"]), abs=1e-6)
    # a second thread on the same word: each locked operation also moves the line between cores
    c = run("central", "add", "host", 2, 101, 64)
    assert c["elapsed_ns"] > b["elapsed_ns"]


def test_the_network_adds_both_wire_trips():
    lat = 2000.0
    base = run("stride1", "add", "cxl-nic", 1, 1, 64)
    wired = run("stride1", "add", "cxl-nic", 1, 1, 64, nic_over={"network": 1, "wire_latency_ns": lat})
    # out and back: 2 x (latency + 64 B at 12.5 GB/s)
    extra = 2 * (lat + NIC["op_bytes"] / NIC["wire_gbps"])
    assert wired["latency_ns"] - base["latency_ns"] == pytest.approx(extra, rel=0.02)
    assert wired["dev0.wire_frames"] == 1


def test_more_dmas_in_flight_speed_the_pcie_nic_and_queues_stay_bounded():
    one = run("rand", "add", "pcie-nic", 4, 100, 4096)
    many = run("rand", "add", "pcie-nic", 4, 100, 4096, sys_over={"dma": {"engines": 16}})
    assert many["ops_per_second"] > 2 * one["ops_per_second"]
    big = run("rand", "add", "cxl-nic", 4, 2000, 4096)
    assert big["dev0.max_ops_in_flight"] <= NIC["ops_in_flight"] and 1 <= big["dev0.max_line_queue"] <= NIC["ops_in_flight"]
    # The one pool holds the NIC's and host cores' accesses and every protocol message.
    assert big["messages_allocated"] < 2000


@pytest.mark.parametrize("bad,match", [
    ({"kernel": "spray"}, "rao.kernel = 'spray' is not allowed; allowed values: rand, stride1"),
    ({"op": "xor"}, "rao.op = 'xor' is not allowed; allowed values: add, cas"),
    ({"mechanism": "rdma"}, "rao.mechanism = 'rdma' is not allowed"),
    ({"threads": 0}, "rao.threads = 0 is out of range; allowed: 1 to 256"),
    ({"elements": 4}, "rao.elements = 4 is out of range; allowed: 8 to"),
])
def test_bad_workload_arguments_name_the_field(bad, match):
    args = {"kernel": "rand", "op": "add", "mechanism": "cxl-nic", "threads": 1, "iters": 1, "elements": 64, **bad}
    with pytest.raises(_core.ConfigError, match=match):
        _core.run_rao(SYS, args["kernel"], args["op"], args["mechanism"], args["threads"], args["iters"],
                      args["elements"])
    with pytest.raises(ParamError, match="rao.kernel = 'spray'"):
        nic.rao("type1-asic", kernels=["spray"])


def test_bad_nic_parameters_name_the_field():
    with pytest.raises(ParamError, match=r"nic.post_batch = 100 is not allowed; allowed: 1 to ring_entries \(64\)"):
        nic.load("type1-asic", {"post_batch": 100})
    bad = core_graph(nic.load("type1-asic"))
    bad["components"]["dev0"]["nic"]["post_batch"] = 100
    with pytest.raises(_core.ConfigError, match=r"dev0.nic.post_batch = 100 is not allowed; allowed: 1 to ring_entries"):
        _core.validate(bad)
    with pytest.raises(ParamError, match="nic.ops_in_flight = 0 is out of range; allowed: 1 to 4096"):
        nic.load("type1-asic", {"ops_in_flight": 0})


def test_completions_sharing_a_line_land_in_order_with_few_mshrs():
    # Completions of one ring line are written one write at a time: with few MSHRs the cache may
    # otherwise finish a later store to the line before an earlier one, and the host, reading the
    # line's latest version, would wait forever for a completion that version does not include.
    r = run("rand", "add", "cxl-nic", 32, 60, 1 << 12, nic_over={"ops_in_flight": 8},
            sys_over={"cache": {"mshrs": 8}}, check=True, record=True)
    assert r["ops"] == 32 * 60 and r["checker_violations"] == 0 and r["dev0.ring_errors"] == 0
    ks = stream("rand", "add", 32, 60, 1 << 12)
    assert list(r["array"]) == replay(ks, 1 << 12, r["log"], 32)[0]


def test_an_operation_on_a_line_the_nic_owns_executes_in_its_cache():
    # central, one thread, one operation at a time: after the first miss every operation finds the
    # word's line held by the NIC, so executing it costs one cache lookup (cache.latency_ns).
    one = {"ring_entries": 1, "descriptors_per_line": 1, "completions_per_line": 1, "post_batch": 1}
    a = run("central", "add", "cxl-nic", 1, 1, 64, nic_over=one)
    b = run("central", "add", "cxl-nic", 1, 101, 64, nic_over=one)
    lookup = coherent.load("type1-asic").device().cache.latency_ns
    assert b["dev0.operand_hits"] == 100 and a["dev0.operand_hits"] == 0
    assert 101 * b["dev0.execute_ns_mean"] - a["dev0.execute_ns_mean"] == pytest.approx(100 * lookup, abs=1e-6)
    # the first is a miss to host memory: a lookup, the link both ways, the home, at least a DRAM column access
    s = coherent.load("type1-asic")
    assert a["dev0.execute_ns_mean"] >= \
        lookup + 2 * s.device().link.phy_latency_ns + s.home.latency_ns + s.local_dram.tCL_ns


def test_a_pcie_nic_operation_is_its_dma_steps():
    s = coherent.load("type1-asic")
    dev = s.device()
    one = {"ring_entries": 1, "descriptors_per_line": 1, "completions_per_line": 1, "post_batch": 1}
    r = run("central", "add", "pcie-nic", 1, 20, 64, nic_over=one)
    phases = sum(r[f"phase_{p}_ns"] for p in ("doorbell", "descriptor", "data", "completion"))
    assert r["latency_ns"] == pytest.approx(phases, rel=1e-9)
    flit = 68 / dev.link.raw_gbps
    # the driver's descriptor write and MMIO doorbell, then the posted write down the link
    assert dev.dma.setup_ns + dev.link.phy_latency_ns <= r["phase_doorbell_ns"] <= dev.dma.setup_ns + dev.link.phy_latency_ns + 3 * flit
    # descriptor fetch and the operand's DMA read: each a read request up, the home, a completion down
    for p in ("descriptor", "data"):
        assert r[f"phase_{p}_ns"] >= 2 * dev.link.phy_latency_ns + s.home.latency_ns
    assert r["phase_descriptor_ns"] >= dev.dma.engine_latency_ns
    # compute, DMA write and completion record up, the home, then the driver's next poll
    lo = NIC["alu_ns"] + dev.link.phy_latency_ns + s.home.latency_ns + s.home.host_hit_ns
    assert lo <= r["phase_completion_ns"] <= lo + dev.dma.poll_interval_ns + 4 * flit
    # MSI-X instead of polling: the interrupt's delivery replaces the poll
    irq = run("central", "add", "pcie-nic", 1, 20, 64, nic_over=one, sys_over={"dma": {"interrupt": 1}})
    assert irq["phase_completion_ns"] >= NIC["alu_ns"] + dev.link.phy_latency_ns + dev.dma.interrupt_ns


def test_cli_json_plot_and_one_line_errors(tmp_path):
    import json

    from click.testing import CliRunner

    from simcxl.cli import main
    res = CliRunner().invoke(main, ["run", "rao", "--kernel", "central,gather", "--op", "add", "--iters", "20",
                                    "--threads", "2", "--json", "--plot", str(tmp_path / "r.png"),
                                    "--set", "nic.ops_in_flight=8", "--set", "dma.engines=2"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [(r["kernel"], r["mechanism"]) for r in rows] == [(k, m) for k in ("central", "gather")
                                                             for m in nic.MECHANISMS]
    assert all(set(r) == {"kernel", "op", "mechanism", "ops_per_second", "latency_ns"} for r in rows)
    assert all(r["ops_per_second"] > 0 and r["latency_ns"] > 0 for r in rows)
    assert (tmp_path / "r.png").exists()
    for args, msg in [(["--kernel", "spray"], "rao.kernel = 'spray' is not allowed"),
                      (["--set", "nic.ops_in_flight=0"], "nic.ops_in_flight = 0 is out of range; allowed: 1 to 4096"),
                      (["--set", "nic.bogus=1"], "nic.bogus is not a parameter of a CXL-NIC")]:
        res = CliRunner().invoke(main, ["run", "rao", "--iters", "2"] + args)
        assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1 and msg in res.stderr, res.stderr


def test_sweeps_accept_rao(tmp_path):
    from simcxl.sweep import spec as sweep
    spec = {"base": "type1-asic", "workload": {"kind": "rao", "kernel": "rand", "mechanism": "pcie-nic", "iters": 50},
            "axes": [{"param": "dma.engines", "values": [1, 4]}, {"param": "nic.alu_ns", "values": [2.0]}]}
    sw = sweep.Sweep.from_dict(spec)
    df = sweep.run(sw, tmp_path / "out", workers=1)
    assert list(df["status"]) == ["ok", "ok"]
    one, four = sorted(df["ops_per_second"])
    assert four > 2 * one  # four DMAs in flight instead of one


def test_one_cxl_nic_operation_crosses_the_rings_and_the_link_as_many_times_as_it_should():
    # One operation on a cold system, one ring entry: the host writes the descriptor and the doorbell
    # (each a host-cache access and the home), the NIC reads the doorbell, the descriptor, the
    # operand's line and takes the completion line (each a lookup, the link both ways and the home),
    # then the host's poll misses and snoops the completion out of the NIC.
    s = coherent.load("type1-asic")
    dev = s.device()
    one = {"ring_entries": 1, "descriptors_per_line": 1, "completions_per_line": 1, "post_batch": 1,
           "poll_ns": 1.0, "host_poll_ns": 1.0}
    r = run("central", "add", "cxl-nic", 1, 1, 64, nic_over=one)
    link, home, hit = dev.link.phy_latency_ns, s.home.latency_ns, s.home.host_hit_ns
    nic_trip = dev.cache.latency_ns + 2 * link + home
    low = 2 * (hit + home) + 4 * nic_trip + NIC["alu_ns"] + (hit + home + 2 * link + dev.cache.snoop_latency_ns)
    d = s.local_dram
    dram = d.frontend_latency_ns + d.tRP_ns + d.tRCD_ns + d.tCL_ns + 64 / (d.data_rate_mts * d.bus_bytes / 1000) + \
        d.backend_latency_ns
    # at most: DRAM for the cold descriptor, doorbell, operand and completion lines, a snoop of the
    # doorbell copy the NIC polled, a poll period each side, a host hit, and a flit per hop
    high = low + 4 * dram + (2 * link + dev.cache.snoop_latency_ns) + 1.0 + 1.0 + hit + 16 * 68 / dev.link.raw_gbps
    assert low <= r["latency_ns"] <= high
    assert r["dev0.descriptors"] == 1 and r["dev0.doorbell_changes"] == 1
