"""The OpenOptics-style Python API end to end, on tiny networks (docs/contract.md#python-api).

Timing arithmetic used below (no host links, header 0): a 1500 B packet takes 120 ns on a
100 Gbps link; nodes are the endpoints and hand packets straight to their uplink queues;
a packet is delivered when it reaches its destination node.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest

import opendcn as od
from opendcn import Circuit as C
from opendcn import Entry as E

US = 10**6
NS = 10**3
TX_1500 = 120 * NS                     # 1500 B at 100 Gbps

FLOW_COLUMNS = ("flow_id", "src", "dst", "size_bytes", "start_ps", "finish_ps", "fct_ps",
                "ideal_fct_ps", "slowdown", "completed")


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_summary(s: dict, *, nodes: int, seed: int, sim_time_s: float) -> None:
    """Every field of the contract's summary, with its type and its invariants."""
    assert isinstance(s["arch"], str) and s["arch"]
    assert is_int(s["seed"]) and s["seed"] == seed
    assert is_int(s["nodes"]) and s["nodes"] == nodes
    assert is_num(s["sim_time_s"]) and s["sim_time_s"] == pytest.approx(sim_time_s)
    assert is_num(s["wall_s"]) and s["wall_s"] >= 0
    assert is_int(s["events"]) and s["events"] > 0
    f = s["flows"]
    assert is_int(f["started"]) and is_int(f["completed"]) and 0 <= f["completed"] <= f["started"]
    b = s["bytes"]
    for k in ("offered", "delivered", "dropped", "in_flight"):
        assert is_int(b[k]) and b[k] >= 0, k
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    assert is_num(s["goodput_normalized"]) and s["goodput_normalized"] >= 0
    for group in ("mice", "all"):
        st = s["fct_us"][group]
        assert is_int(st["count"]) and st["count"] >= 0
        for k in ("mean", "p50", "p99"):
            assert is_num(st[k]) and st[k] >= 0, (group, k)
    assert s["fct_us"]["all"]["count"] == f["completed"]
    assert s["fct_us"]["mice"]["count"] <= s["fct_us"]["all"]["count"]
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert isinstance(s["drops"], dict)
    assert all(isinstance(k, str) and is_int(v) and v >= 0 for k, v in s["drops"].items())
    assert sum(s["drops"].values()) == b["dropped"]
    json.dumps(s)                                    # the summary is plain JSON data


def check_flows(flows: pa.Table, summary: dict, duration_ps: int, mice: int = 10_000) -> None:
    for col in FLOW_COLUMNS:
        assert col in flows.column_names, col
    d = {c: flows[c].to_pylist() for c in FLOW_COLUMNS}
    n = flows.num_rows
    assert n == summary["flows"]["started"]
    assert d["flow_id"] == list(range(n))
    assert sum(d["completed"]) == summary["flows"]["completed"]
    fcts = []
    for i in range(n):
        assert d["size_bytes"][i] > 0 and d["src"][i] != d["dst"][i]
        assert 0 <= d["start_ps"][i] < duration_ps
        assert d["ideal_fct_ps"][i] > 0
        if d["completed"][i]:
            assert d["finish_ps"][i] is not None and d["fct_ps"][i] is not None
            assert d["start_ps"][i] < d["finish_ps"][i] <= duration_ps
            assert d["fct_ps"][i] == d["finish_ps"][i] - d["start_ps"][i]
            assert d["slowdown"][i] == pytest.approx(d["fct_ps"][i] / d["ideal_fct_ps"][i])
            assert d["fct_ps"][i] >= d["ideal_fct_ps"][i] * (1 - 1e-9)
            fcts.append((d["size_bytes"][i], d["fct_ps"][i]))
        else:
            assert d["finish_ps"][i] is None and d["fct_ps"][i] is None and d["slowdown"][i] is None
    if fcts:
        all_us = [f / US for _, f in fcts]
        assert summary["fct_us"]["all"]["mean"] == pytest.approx(np.mean(all_us))
        assert summary["fct_us"]["all"]["p99"] == pytest.approx(np.percentile(all_us, 99))
    assert summary["fct_us"]["mice"]["count"] == sum(1 for s, _ in fcts if s < mice)
    delivered_completed = sum(s for s, _ in fcts)
    assert summary["bytes"]["delivered"] >= delivered_completed
    assert summary["bytes"]["offered"] == sum(d["size_bytes"])


def readme_network() -> tuple[od.Network, list]:
    net = od.Network(od.Config(nodes=16, uplinks=1, link_rate="100Gbps", slice="2us",
                               guardband="200ns", propagation="500ns"))
    circuits = od.topology.round_robin(net.config, dimension=1)
    paths = od.routing.vlb(circuits)
    net.deploy_topo(circuits)
    net.deploy_routing(paths, lookup="hop", multipath="packet")
    return net, paths


def rotor4(routing: str | None = "direct", **cfg) -> od.Network:
    """4 nodes, 1 uplink, round robin: slices {0-1, 2-3}, {0-2, 1-3}, {0-3, 1-2} of 2 us
    with a 200 ns guardband (one slice carries 1.8 us x 100 Gbps = 22500 B)."""
    net = od.Network(od.Config(**{"nodes": 4, "uplinks": 1, "slice": "2us", "guardband": "200ns",
                                  **cfg}))
    net.deploy_topo(od.topology.round_robin(net.config, dimension=1))
    if routing is not None:
        net.deploy_routing(routing)
    return net


def port_total(net: od.Network, node: int, port: int) -> int:
    return int(np.sum(np.asarray(net.bw_usage(node, port)["tx_bytes"])))


# ---------------------------------------------------------------------------------------
# the README example
# ---------------------------------------------------------------------------------------
def test_readme_example_summary_and_flows():
    net, _ = readme_network()
    result = net.run(od.workload.poisson("hadoop", load=0.3, pattern="uniform"),
                     duration="200us", seed=1)
    s = result.summary
    check_summary(s, nodes=16, seed=1, sim_time_s=200e-6)
    assert s["flows"]["started"] > 10 and s["flows"]["completed"] > 0
    assert s["bytes"]["delivered"] > 0
    # goodput = delivered payload / (sim_time x R x N), R = 1 x 100 Gbps
    assert s["goodput_normalized"] == pytest.approx(
        s["bytes"]["delivered"] * 8 / (200e-6 * 100e9 * 16))
    assert isinstance(result.flows, pa.Table)
    check_flows(result.flows, s, 200 * US)
    # VLB always takes two hops
    hops = [h for h, c in zip(result.flows["hops"].to_pylist(), result.flows["completed"].to_pylist()) if c]
    assert set(hops) == {2}


def test_same_seed_same_summary_and_flows():
    a = readme_network()[0].run(od.workload.poisson("hadoop", load=0.3), duration="100us", seed=7)
    b = readme_network()[0].run(od.workload.poisson("hadoop", load=0.3), duration="100us", seed=7)
    sa = {k: v for k, v in a.summary.items() if k != "wall_s"}
    sb = {k: v for k, v in b.summary.items() if k != "wall_s"}
    assert sa == sb
    assert a.flows.equals(b.flows)
    c = readme_network()[0].run(od.workload.poisson("hadoop", load=0.3), duration="100us", seed=8)
    assert c.flows["start_ps"].to_pylist() != a.flows["start_ps"].to_pylist()


# ---------------------------------------------------------------------------------------
# hand-written time-flow tables
# ---------------------------------------------------------------------------------------
def test_add_by_hand_routes_packets_and_tables_return_them(tmp_path):
    net = rotor4(routing=None)
    direct_03 = E(None, None, 3, 2, 0)     # at 0: anything to 3 leaves in slice 2 (0-3)
    first_12 = E(None, 1, 2, 0, 0)         # at 1: 1->2 goes to node 0 in slice 0 (0-1)
    second_12 = E(0, 1, 2, 1, 0)           # at 0: 1->2 that arrived in slice 0 leaves in slice 1 (0-2)
    net.add(direct_03, 0)
    net.add(first_12, 1)
    net.add(second_12, 0)
    assert set(net.tables(0)) == {direct_03, second_12}
    assert net.tables(1) == [first_12]
    assert net.tables(2) == [] and net.tables(3) == []

    r = net.run(od.workload.flows([("0us", 0, 3, 5000), ("0us", 1, 2, 5000)]), duration="50us")
    rows = r.flows.select(["src", "dst", "finish_ps", "hops", "completed"]).to_pylist()
    # 5000 B = 4 packets, 400 ns on the wire; + 500 ns propagation
    # 0->3: slice 2 is up at 4.2 us -> 4.6 us + 0.5 us
    assert rows[0] == {"src": 0, "dst": 3, "finish_ps": 5_100_000, "hops": 1, "completed": True}
    # 1->2: to node 0 in slice 0 (0.2..0.6 us), on to node 2 in slice 1 (2.2..2.6 us) + 0.5 us
    assert rows[1] == {"src": 1, "dst": 2, "finish_ps": 3_100_000, "hops": 2, "completed": True}
    assert r.summary["drops"].get("no_route", 0) == 0

    path = tmp_path / "tables.json"
    net.export_tables(path)
    data = json.loads(path.read_text())
    assert set(data) == {"0", "1", "2", "3"}
    assert [E(**e) for e in data["0"]] == net.tables(0)
    assert data["1"] == [dict(first_12._asdict())]
    assert data["2"] == [] and data["3"] == []


def test_export_tables_lists_every_node_of_compiled_routes(tmp_path):
    net, paths = readme_network()
    path = tmp_path / "sub" / "tables.json"
    net.export_tables(path)
    data = json.loads(path.read_text())
    assert set(data) == {str(n) for n in range(16)}
    compiled = od.routing.compile_paths(paths, lookup="hop")
    for n in range(16):
        assert [E(**e) for e in data[str(n)]] == net.tables(n) == compiled.get(n, [])
        assert data[str(n)], f"node {n} has no entries"
    assert [p.name for p in path.parent.iterdir()] == ["tables.json"]


def test_unmatched_packets_are_dropped_as_no_route():
    net = rotor4(routing=None)
    net.add(E(None, None, 3, 2, 0), 0)
    r = net.run(od.workload.flows([("0us", 0, 3, 3000), ("0us", 1, 2, 4500)]), duration="30us")
    assert r.flows["completed"].to_pylist() == [True, False]
    assert r.summary["drops"]["no_route"] == 4500
    assert r.summary["bytes"]["dropped"] == 4500


# ---------------------------------------------------------------------------------------
# multipath on a hand-built Clos
# ---------------------------------------------------------------------------------------
def hand_clos(multipath: str, lookup: str = "hop", n: int = 4, u: int = 4) -> od.Network:
    net = od.Network(od.Config(nodes=n, uplinks=u), fabric="electrical", switches=u,
                     switch_ports=n)
    circuits = [C(t, s, n + s, t) for t in range(n) for s in range(u)]
    net.deploy_topo(circuits)
    net.deploy_routing(od.routing.ecmp(circuits, endpoints=range(n)), lookup=lookup,
                       multipath=multipath)
    return net


FLOW = 150_000                          # 100 packets
SINGLE_PATH_FCT = 100 * TX_1500 + TX_1500 + 2 * 500 * NS   # uplink is the bottleneck


@pytest.mark.parametrize("lookup", ["hop", "source"])
def test_multipath_flow_keeps_every_packet_of_a_flow_on_one_path(lookup):
    net = hand_clos("flow", lookup)
    starts = [1, 21, 41]
    r = net.run(od.workload.flows([(f"{t}us", 0, 3, FLOW) for t in starts]), duration="60us")
    assert r.flows["completed"].to_pylist() == [True] * 3
    # single-path timing: every packet crosses the same 100 Gbps uplink and spine port
    assert r.flows["fct_ps"].to_pylist() == [SINGLE_PATH_FCT] * 3
    # per 20 us window (one flow each) exactly one uplink of node 0 carried the flow
    per_port = np.array([net.bw_usage(0, p, "20us")["tx_bytes"].to_pylist() for p in range(4)])
    assert per_port.shape == (4, 3)
    for w in range(3):
        assert sorted(per_port[:, w].tolist()) == [0, 0, 0, FLOW], per_port
    # and exactly one spine sent it down to node 3 (spine s is node 4 + s, port 3 faces node 3)
    down = [port_total(net, 4 + s, 3) for s in range(4)]
    assert sum(down) == 3 * FLOW and all(x % FLOW == 0 for x in down)


@pytest.mark.parametrize("lookup", ["hop", "source"])
def test_multipath_packet_spreads_a_flow_over_the_spines(lookup):
    net = hand_clos("packet", lookup)
    r = net.run(od.workload.flows([("1us", 0, 3, FLOW)]), duration="30us")
    assert r.flows["completed"].to_pylist() == [True]
    up = [port_total(net, 0, p) for p in range(4)]
    assert sum(up) == FLOW
    assert sum(1 for x in up if x > 0) >= 2, up
    assert r.flows["fct_ps"].to_pylist()[0] < SINGLE_PATH_FCT
    assert [port_total(net, 4 + s, 3) for s in range(4)] == up


# ---------------------------------------------------------------------------------------
# source routing
# ---------------------------------------------------------------------------------------
SMALL_FLOWS = [("0us", 0, 3, 5000), ("0us", 1, 2, 5000), ("3us", 2, 0, 12000), ("7us", 3, 1, 1500),
               ("9us", 1, 3, 20000)]


@pytest.mark.parametrize("router,hops", [("direct", 1), ("vlb", 2)])
def test_source_lookup_completes_flows_like_hop_lookup(router, hops):
    results = {}
    for lookup in ("hop", "source"):
        net = rotor4(routing=None)
        net.deploy_routing(getattr(od.routing, router)(net.circuits), lookup=lookup)
        r = net.run(od.workload.flows(SMALL_FLOWS), duration="60us")
        check_summary(r.summary, nodes=4, seed=1, sim_time_s=60e-6)
        assert r.flows["completed"].to_pylist() == [True] * len(SMALL_FLOWS)
        assert r.flows["hops"].to_pylist() == [hops] * len(SMALL_FLOWS)
        results[lookup] = r.flows["finish_ps"].to_pylist()
    # the same decisions, whether looked up per hop or carried in the packet
    assert results["source"] == results["hop"]


# ---------------------------------------------------------------------------------------
# flows larger than one slice
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [25_000, 64_000])
@pytest.mark.parametrize("router", ["vlb", "direct"])
@pytest.mark.parametrize("tables", [False, True], ids=["builtin", "tables"])
def test_single_flow_larger_than_a_slice_completes(router, tables, size):
    net = rotor4(routing=None)
    net.deploy_routing(getattr(od.routing, router)(net.circuits) if tables else router)
    r = net.run(od.workload.flows([("0us", 0, 3, size)]), duration="300us")
    assert r.summary["bytes"]["in_flight"] == 0, r.summary["bytes"]
    assert r.summary["flows"] == {"started": 1, "completed": 1}
    assert r.summary["bytes"]["delivered"] == size
    assert port_total(net, 0, 0) == size


# ---------------------------------------------------------------------------------------
# monitoring
# ---------------------------------------------------------------------------------------
def test_bw_and_buffer_usage_account_for_one_flow():
    size = 60_000
    net = rotor4("direct", sample_interval="1us")
    r = net.run(od.workload.flows([("0us", 0, 3, size)]), duration="60us")
    assert r.flows["completed"].to_pylist() == [True]
    finish = r.flows["finish_ps"].to_pylist()[0]

    bw = net.bw_usage(0, 0, "6us")                     # one 6 us cycle per row
    assert bw.column_names == ["time_ps", "tx_bytes"]
    assert bw["time_ps"].to_pylist() == [6 * US * (k + 1) for k in range(10)]
    sent = bw["tx_bytes"].to_pylist()
    assert sum(sent) == size                           # the source uplink sent the flow, exactly
    assert max(sent) <= 22_500                         # one slice of 1.8 us at 100 Gbps per cycle
    assert sent[:3] == [22_500, 22_500, size - 45_000]
    # the raw samples add up to the same, and no other port sent anything (one hop)
    assert sum(net.bw_usage(0, 0)["tx_bytes"].to_pylist()) == size
    assert all(port_total(net, n, 0) == 0 for n in (1, 2, 3))
    assert int(np.sum(np.asarray(r.timeseries["tx_bytes"]))) == size

    q = net.buffer_usage(0, 0, "6us")
    assert q.column_names == ["time_ps", "queued_bytes"]
    queued = q["queued_bytes"].to_pylist()
    assert 0 < queued[0] <= size                       # waiting for slice 2 of the first cycle
    assert queued[1] > 0                               # still waiting in the second cycle
    assert max(queued) <= net.config.buffer
    assert all(v == 0 for t, v in zip(q["time_ps"].to_pylist(), queued) if t - 6 * US >= finish)
    assert all(v == 0 for v in net.buffer_usage(3, 0)["queued_bytes"].to_pylist())


def test_monitors_need_a_run():
    net = rotor4()
    with pytest.raises(od.ConfigError):
        net.bw_usage(0, 0, "10us")
    with pytest.raises(od.ConfigError):
        net.buffer_usage(0, 0)
    with pytest.raises(od.ConfigError):
        next(net.collect_every("10us"))


# ---------------------------------------------------------------------------------------
# control loops in simulated time
# ---------------------------------------------------------------------------------------
def test_collect_every_yields_the_traffic_matrices_of_each_interval():
    net = rotor4("direct")
    flows = [("0us", 0, 3, 30_000), ("60us", 1, 2, 64_000), ("120us", 2, 0, 5_000),
             ("130us", 3, 1, 700)]
    net.start(od.workload.flows(flows), duration="200us")
    tms = list(net.collect_every("50us"))
    assert len(tms) == 4
    assert all(tm.shape == (4, 4) for tm in tms)
    assert [int(tm.sum()) for tm in tms] == [30_000, 64_000, 5_700, 0]
    assert tms[0][0, 3] == 30_000 and tms[1][1, 2] == 64_000
    assert tms[2][2, 0] == 5_000 and tms[2][3, 1] == 700
    r = net.finish()
    assert isinstance(r, od.Result)
    assert sum(int(tm.sum()) for tm in tms) == r.summary["bytes"]["offered"] == 99_700
    assert r.summary["flows"]["completed"] == 4


def test_flow_progress_follows_the_run_and_ends_as_the_result():
    """Per flow: finish time (-1 before), payload sent, bytes delivered; a flow after the
    end of the run never starts."""
    net = rotor4("direct")
    flows = [("0us", 0, 3, 30_000), ("60us", 1, 2, 64_000), ("130us", 3, 1, 700), ("250us", 2, 0, 900)]
    net.start(od.workload.flows(flows), duration="200us")
    net.run_until("50us")
    fin, sent, got = net.flow_progress()
    assert list(fin[1:]) == [-1, -1, -1] and list(sent[1:]) == [0, 0, 0] and list(got[1:]) == [0, 0, 0]
    assert sent[0] == 30_000 and got[0] == 30_000 and 0 < fin[0] <= 50 * US
    net.run_until("200us")
    fin, sent, got = net.flow_progress()
    r = net.finish()
    rows = r.flows.select(["size_bytes", "finish_ps"]).to_pylist()     # the flows of the run
    assert len(rows) == 3 and fin[3] == -1 and sent[3] == 0 == got[3]
    assert [int(x) for x in fin[:3]] == [row["finish_ps"] for row in rows]
    assert [int(x) for x in got[:3]] == [row["size_bytes"] for row in rows] == [int(x) for x in sent[:3]]
    with pytest.raises(od.ConfigError):
        net.flow_progress()


A_STATIC = [C(0, 0, 1, 0), C(2, 0, 3, 0), C(0, 1, 2, 1), C(1, 1, 3, 1)]
B_STATIC = [C(0, 0, 1, 0), C(2, 0, 3, 0), C(0, 1, 3, 1), C(1, 1, 2, 1)]   # port 1 rewired


@pytest.mark.parametrize("routing", ["builtin", "tables"])
def test_control_loop_reconfigures_a_static_fabric(routing):
    net = od.Network(od.Config(nodes=4, uplinks=2, reconfiguration_delay="1us"))
    net.deploy_topo(A_STATIC)
    net.deploy_routing("direct" if routing == "builtin" else od.routing.direct(A_STATIC))
    flows = [("0us", 0, 1, 100_000), ("0us", 2, 3, 100_000), ("0us", 0, 2, 30_000),  # before
             ("50.5us", 0, 3, 3_000),                       # while port 1 is down
             ("60us", 1, 2, 20_000), ("120us", 1, 0, 40_000)]                       # after
    net.start(od.workload.flows(flows), duration="200us")
    tms = []
    for i, tm in enumerate(net.collect_every("50us")):
        tms.append(tm)
        if i == 0:                       # at t = 50 us: 0-3 and 1-2 instead of 0-2 and 1-3
            net.deploy_topo(B_STATIC)
            if routing == "tables":
                net.deploy_routing(od.routing.direct(B_STATIC))
    r = net.finish()
    s = r.summary
    check_summary(s, nodes=4, seed=1, sim_time_s=200e-6)
    assert s["invariants"]["ok"], s["invariants"]
    assert "reconfiguration" in s["drops"]
    assert s["drops"].get("no_route", 0) == 0, s["drops"]
    assert s["flows"] == {"started": 6, "completed": 6}
    rows = r.flows.select(["src", "dst", "finish_ps", "hops"]).to_pylist()
    assert all(row["hops"] == 1 for row in rows)
    # the new 0-3 circuit is usable once the 1 us reconfiguration delay has passed:
    # 2 packets from 51 us, 240 ns on the wire, + 500 ns propagation
    assert rows[3]["finish_ps"] == 51 * US + 2 * TX_1500 + 500 * NS
    assert len(tms) == 4
    assert sum(int(tm.sum()) for tm in tms) == s["bytes"]["offered"] == 293_000
    assert int(tms[0].sum()) == 230_000 and tms[1][0, 3] == 3_000 and tms[1][1, 2] == 20_000
    with pytest.raises(od.ConfigError):
        next(net.collect_every("50us"))          # finished: no run to advance


# ---------------------------------------------------------------------------------------
# configs from files
# ---------------------------------------------------------------------------------------
FIELDS = {"nodes": 8, "uplinks": 2, "link_rate": "40Gbps", "slice": "3.66us",
          "guardband": "20ns", "propagation": "500ns", "buffer": "2MB", "mtu": "1500B",
          "sample_interval": "5us", "reconfiguration_delay": "10us", "node_type": "rack"}


def test_config_from_json_and_toml_files(tmp_path):
    expected = od.Config(**FIELDS)
    assert expected.slice == 3_660_000 and expected.link_rate == 40 * 10**9
    assert expected.buffer == 2_000_000 and expected.reconfiguration_delay == 10 * US
    js = tmp_path / "net.json"
    js.write_text(json.dumps(FIELDS))
    toml = tmp_path / "net.toml"
    toml.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in FIELDS.items()))
    assert od.Config.from_file(js) == expected
    assert od.Config.from_file(str(toml)) == expected
    # a dumped config reads back the same
    dumped = tmp_path / "dump.json"
    dumped.write_text(json.dumps(expected.model_dump()))
    assert od.Config.from_file(dumped) == expected
    # and a network built from a file runs
    net = od.Network(od.Config.from_file(toml))
    net.deploy_topo(od.topology.round_robin(net.config))
    net.deploy_routing("direct")
    r = net.run(od.workload.flows([("0us", 0, 5, 4000)]), duration="60us")
    assert r.summary["flows"]["completed"] == 1 and r.summary["nodes"] == 8
