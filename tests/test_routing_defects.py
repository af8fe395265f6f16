"""Defects of the native API found by running OpenOptics-style scripts (issue 16, item 4),
and the schedule generators of od.topology against the architectures (item 5)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import opendcn as od
from opendcn.fabrics.routing import direct, earliest_path, hoho, ksp, vlb
from opendcn.fabrics.topology import bipartite_matching, opera, round_robin, shale, static

SLICE_PS = 10_000_000  # 10 us


def _net(nodes: int = 4, uplinks: int = 1, **kw) -> od.Network:
    cfg = dict(nodes=nodes, uplinks=uplinks, slice="10us", guardband="100ns", propagation="100ns")
    cfg.update(kw)
    return od.Network(od.Config(**cfg))


def _drops(r: od.Result) -> dict[str, int]:
    return {k: v for k, v in r.summary["drops"].items() if v}


# -- 1. the cycle length comes from the network, not from the circuits ------------------
def test_paths_of_a_shorter_cycle_are_refused_naming_the_missing_slice():
    net = _net()
    net.deploy_topo(round_robin(4), slices=4)          # slice 3 idle
    for paths in (direct(net.circuits), vlb(net.circuits), hoho(net.circuits)):
        with pytest.raises(od.ConfigError, match="arriving in slice 3") as e:
            net.deploy_routing(paths)
        assert "4 slices" in str(e.value) and e.value.field == "paths"


@pytest.mark.parametrize("router,arrival_slice", [(direct, 4), (vlb, 6), (hoho, 4)])
def test_path_helpers_take_the_network_cycle(router, arrival_slice):
    net = _net()
    net.deploy_topo(round_robin(4), slices=4)
    paths = router(net)
    assert {p.ts for p in paths} == {0, 1, 2, 3}
    assert paths == router(net.circuits, slices=4)
    net.deploy_routing(paths)
    # a packet 0 -> 1 that reaches its ToR in the idle slice 3 waits for slice 0 of the next
    # cycle (VLB: for 0-2 in slice 1, then 2-1 in slice 2)
    r = net.run(od.workload.flows([(3 * SLICE_PS + 1_000_000, 0, 1, 500)]), duration="100us")
    assert _drops(r) == {}
    f = r.flows.to_pylist()[0]
    assert f["completed"] and arrival_slice * SLICE_PS <= f["finish_ps"] < (arrival_slice + 1) * SLICE_PS


# -- 2. paths without a slice on a cyclic schedule ---------------------------------------
def test_union_graph_paths_are_refused_on_a_cyclic_schedule():
    net = _net()
    net.deploy_topo(round_robin(4))
    for paths in (ksp(net.circuits, k=1), od.routing.ecmp(net.circuits)):
        with pytest.raises(od.ConfigError, match="without a departure slice") as e:
            net.deploy_routing(paths)
        assert e.value.field.startswith("paths[") and "per_slice=True" in str(e.value)


def test_per_slice_ksp_routes_every_ping_on_a_cyclic_schedule():
    net = _net(nodes=8, uplinks=4)
    net.deploy_topo(round_robin(net.config))            # 2 slices, each slice connected
    paths = ksp(net, k=1, per_slice=True)
    assert all(h.dep_ts == p.ts for p in paths for h in p.hops)
    net.deploy_routing(paths)
    pings = [(i * 3_000_000, s, d, 64) for i, (s, d) in enumerate((s, d) for s in range(8) for d in range(8) if s != d)]
    r = net.run(od.workload.flows(pings), duration="400us")
    assert _drops(r) == {} and r.summary["flows"]["completed"] == len(pings)


def test_per_slice_ksp_on_a_disconnected_slice_needs_partial():
    net = _net()
    net.deploy_topo(round_robin(4))                     # one matching per slice
    paths = ksp(net, k=1, per_slice=True)
    with pytest.raises(od.ConfigError, match="no path from node 0 to node 1 for packets arriving in slice 1"):
        net.deploy_routing(paths)
    net.deploy_routing(paths, partial=True)


# -- 3. traffic-aware: packets for a destination without a circuit -----------------------
def test_traffic_aware_packets_wait_for_their_circuit():
    net = _net(reconfiguration_delay="1us")
    first = [od.Circuit(0, 0, 1, 0), od.Circuit(2, 0, 3, 0)]
    net.deploy_topo(first)
    net.deploy_routing(direct(first))
    net.start(od.workload.flows([(0, 0, 2, 1000), (0, 0, 1, 1000)]), duration="200us")
    net.collect("50us")
    second = [od.Circuit(0, 0, 2, 0), od.Circuit(1, 0, 3, 0)]
    net.deploy_routing(direct(second))
    net.deploy_topo(second)
    r = net.finish()
    assert _drops(r) == {} and r.summary["flows"]["completed"] == 2


# -- 4. OpenOptics-style circuit lists ---------------------------------------------------
def test_plain_circuit_lists_name_the_field_order():
    net = _net()
    oo_style = [[0, 0, 1, 0, 0], [0, 2, 3, 0, 0], [1, 0, 2, 0, 0]]   # [ts, n1, n2, p1, p2]
    with pytest.raises(od.ConfigError) as e:
        net.deploy_topo(oo_style)
    msg = str(e.value)
    assert e.value.field == "circuits[1]" and "(n1, p1, n2, p2, ts)" in msg and "opendcn.openoptics" in msg
    with pytest.raises(od.ConfigError, match=r"\(n1, p1, n2, p2, ts\)"):
        net.deploy_topo([[0, 1, 2]])
    net.deploy_topo([od.Circuit(0, 0, 1, 0, 0)])      # named circuits are not affected


# -- 5. one path from earliest_path ------------------------------------------------------
def test_deploy_routing_takes_a_single_path():
    net = _net(uplinks=2)
    ring = [od.Circuit(i, 0, (i + 1) % 4, 1) for i in range(4)]
    net.deploy_topo(ring)
    p = earliest_path(ring, 0, 2, ts=None, max_hop=3)
    assert isinstance(p, od.Path)
    net.deploy_routing(p)
    r = net.run(od.workload.flows([(0, 0, 2, 3000)]), duration="50us")
    assert r.summary["flows"]["completed"] == 1 and r.flows["hops"][0].as_py() == 2


# -- item 5: generators ------------------------------------------------------------------
@pytest.mark.parametrize("nodes,uplinks", [(8, 4), (12, 4)])
def test_opera_generator_is_the_architecture_schedule(nodes, uplinks):
    net = od.arch.opera(nodes=nodes, uplinks=uplinks)
    assert sorted(opera(nodes, uplink=uplinks)) == sorted(net.circuits)
    assert sorted(opera(nodes, uplink=uplinks, seed=3)) == sorted(od.arch.opera(nodes=nodes, uplinks=uplinks,
                                                                                 matchings_seed=3).circuits)


def test_opera_generator_with_the_papers_matchings():
    assert sorted(opera(108, uplink=6)) == sorted(od.arch.opera().circuits)


@pytest.mark.parametrize("nodes,h", [(16, 2), (27, 3), (5, 1)])
def test_shale_generator_is_the_architecture_schedule(nodes, h):
    arch = od.arch.shale(nodes=nodes, h=h)
    m = round(nodes ** (1 / h))
    slots = h * (m - 1)
    table = np.full((slots, nodes), -1)
    for c in shale(nodes, h):
        assert c.directed and c.p1 == c.p2 == 0
        assert table[c.ts, c.n1] == -1
        table[c.ts, c.n1] = c.n2
    assert (table == arch.peers(slots)).all()
    net = _net(nodes=nodes)
    net.deploy_topo(shale(nodes, h))                   # a feasible directed schedule
    assert net.slices == slots


def test_static_generator_is_a_regular_expander():
    c = static(10, uplink=3, seed=2)
    g = nx.MultiGraph([(x.n1, x.n2) for x in c])
    assert all(d == 3 for _, d in g.degree()) and nx.is_connected(g)
    assert all(x.ts is None for x in c)
    net = _net(nodes=10, uplinks=3)
    net.deploy_topo(c)                                  # every port used once
    assert static(10, uplink=3, seed=2) == c
    with pytest.raises(od.ConfigError, match="even"):
        static(5, uplink=3)


def test_bipartite_matching_is_a_maximum_weight_perfect_matching():
    rng = np.random.default_rng(4)
    tm = rng.integers(0, 100, (6, 6))
    np.fill_diagonal(tm, 0)
    got = bipartite_matching(6, tm)
    w = tm + tm.T

    def best(nodes: list[int]) -> int:                  # brute force over perfect matchings
        if not nodes:
            return 0
        a, rest = nodes[0], nodes[1:]
        return max(w[a, b] + best([x for x in rest if x != b]) for b in rest)

    assert len(got) == 3 and sum(w[c.n1, c.n2] for c in got) == best(list(range(6)))
    assert bipartite_matching(6, np.zeros((6, 6)), prev=got) == got
    two = bipartite_matching(6, tm, uplink=2)
    assert {c.p1 for c in two} == {0, 1} and len({(c.n1, c.n2) for c in two}) == 6
    with pytest.raises(od.ConfigError, match="tm"):
        bipartite_matching(6, [[1, 2], [3, 4]])
