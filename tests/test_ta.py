"""Traffic-aware architectures: their controllers' algorithms against exact oracles, and
every design's runs: zero lost payload with a reliable transport, deterministic, circuits
that follow the traffic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import opendcn as od
from opendcn.arch.ta import _edmonds, bvn, core_matchings, engineer

TA = ["cthrough", "mordia", "jupiter", "sorn", "hierarchical"]


def _hot(nodes: int, pairs: list[tuple[int, int]]) -> od.workload.Workload:
    """Background Hadoop plus long flows between a few pairs."""
    hot = od.workload.flows([(f"{20 * k}us", a, b, 400_000) for k in range(20) for a, b in pairs])
    return od.workload.mix(od.workload.poisson("hadoop", load=0.1), hot)


def test_edmonds_is_the_maximum_weight_matching():
    rng = np.random.default_rng(3)
    for _ in range(20):
        w = rng.integers(0, 10, (6, 6)).astype(float)
        w = w + w.T
        m = _edmonds(w)
        best = 0.0
        nodes = list(range(6))
        for perm in itertools.permutations(nodes):
            pairs = {tuple(sorted((perm[i], perm[i + 1]))) for i in range(0, 6, 2)}
            best = max(best, sum(w[a, b] for a, b in pairs))
        assert sum(w[a, b] for a, b in m) == best
        assert len({x for e in m for x in e}) == 2 * len(m)  # a matching


def test_bvn_peels_permutations_that_sum_to_at_most_the_demand():
    rng = np.random.default_rng(1)
    d = rng.integers(0, 50, (5, 5)).astype(float)
    np.fill_diagonal(d, 0)
    terms = bvn(d, 10)
    acc = np.zeros_like(d)
    for p, w in terms:
        assert sorted(p.tolist()) == list(range(5)) and all(p[i] != i for i in range(5))
        acc[np.arange(5), p] += w
    assert terms and all(w > 0 for _, w in terms)
    # a doubly stochastic demand made of two permutations is decomposed exactly
    a, b = np.array([1, 2, 3, 4, 0]), np.array([2, 3, 4, 0, 1])
    ds = np.zeros((5, 5))
    ds[np.arange(5), a] += 3
    ds[np.arange(5), b] += 1
    got = sorted((p.tolist(), w) for p, w in bvn(ds, 5))
    assert got == sorted([(a.tolist(), 3.0), (b.tolist(), 1.0)])


def test_engineered_topology_respects_ports_and_follows_traffic():
    rng = np.random.default_rng(2)
    for _ in range(10):
        tm = rng.integers(0, 100, (6, 6))
        links = engineer(tm, 9)
        assert (links == links.T).all() and (links.sum(axis=1) <= 9).all()
        off = ~np.eye(6, dtype=bool)
        assert (links[off] >= 1).all()
    tm = np.zeros((4, 4))
    tm[0, 1] = 100
    assert engineer(tm, 5)[0, 1] == 3        # both spare port pairs go to the hot pair


def test_core_matchings_keep_every_rack_pair_connected():
    m = core_matchings(np.arange(16).reshape(4, 4), 5)
    assert len(m) == 5
    pairs = {p for mm in m[:3] for p in mm}
    assert pairs == {(a, b) for a in range(4) for b in range(a + 1, 4)}


@pytest.mark.parametrize("name", TA)
def test_ta_runs_lose_nothing_with_tcp_and_are_deterministic(name):
    a = od.arch.get(name)
    opts = {**a.tiny, "transport": "tcp", "period": "200us"}
    n = opts.get("nodes", 8)

    def run():
        return a.make(**opts).run(_hot(n, [(0, 1), (2, 3)]), duration="1ms", seed=2).summary

    s1, s2 = run(), run()
    assert s1["trace_hash"] == s2["trace_hash"] and s1["bytes"] == s2["bytes"]
    assert s1["bytes"]["dropped"] == 0 and s1["flows"]["completed"] > 0     # TCP recovers every loss
    assert s1["invariants"]["ok"] and s1["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert s1["arch_metrics"]["control_periods"] == 4
    assert s1["arch_metrics"]["reconfigurations"] >= 1


def test_cthrough_puts_the_hot_pair_on_a_circuit():
    net = od.arch.cthrough(nodes=8, period="100us")
    r = net.run(_hot(8, [(0, 5)]), duration="1ms", seed=1)
    assert (0, 5) in net.pairs
    # circuits held for a period are static ones in the engine's link classes
    assert r.summary["delivered_bytes_by_link_class"].get("static_optical", 0) > 0
    assert r.summary["bytes"]["dropped"] == 0


def _ring(nodes: int, size: int) -> od.workload.Workload:
    return od.workload.flows([(0, i, (i + 1) % nodes, size) for i in range(nodes)])


def test_cthrough_carries_a_ring_on_one_ocs_port_per_tor():
    """OpenOptics §6 Case I: the TA designs "establish a ring topology using optical
    circuits that matches the traffic perfectly". One OCS port per ToR carries a ring only
    with directed circuits (a ToR's transmit fibre to its successor, its receive fibre
    from its predecessor); ToR pairs (duplex) cover at most half of the ring's links."""
    ring = [(i, (i + 1) % 8) for i in range(8)]
    net = od.arch.cthrough(nodes=8, period="100us")
    net.run(_ring(8, 4_000_000), duration="300us", seed=1)
    assert net.pairs == ring
    duplex = od.arch.cthrough(nodes=8, period="100us", circuits="duplex")
    duplex.run(_ring(8, 4_000_000), duration="300us", seed=1)
    assert len(duplex.pairs) == 4


def test_warm_start_sets_the_circuits_before_the_run():
    """``warm``: the controller's circuits from the run's traffic matrix are up at t = 0
    (no reconfiguration): a ring of 500 KB flows crosses the 400 Gb/s circuits at the
    100 Gb/s host rate, not the 10 Gb/s electrical switch (400 us), and nothing crosses it."""
    o = dict(nodes=8, hosts_per_node=1, uplinks=1, link_rate="400Gbps", host_link_rate="100Gbps",
             period="100ms", reconfiguration="20ms")
    net = od.arch.cthrough(**o, warm=True)
    r = net.run(_ring(8, 500_000), duration="1ms", seed=1)
    fct = np.asarray(r.flows["fct_ps"]) / 1e6
    assert (fct < 60).all(), fct                 # 40 us at 100 Gb/s
    assert r.summary["delivered_bytes_by_link_class"].get("electrical", 0) < 0.05 * 8 * 500_000
    assert r.summary["arch_metrics"]["reconfigurations"] == 0
    cold = od.arch.cthrough(**o).run(_ring(8, 500_000), duration="1ms", seed=1)
    assert (np.asarray(cold.flows["fct_ps"]) / 1e6 > 350).all()     # 10 Gb/s electrical


def test_mordia_gives_the_hot_pair_more_slices():
    net = od.arch.mordia(nodes=6, period="100us", slots=6)
    net.run(_hot(6, [(1, 4)]), duration="800us", seed=1)
    slices = {c.ts for c in net.schedule if (c.n1, c.n2) == (1, 4)}
    assert len(slices) >= 3                       # round robin once + demand slices
    for s in {c.ts for c in net.schedule}:        # every slice a permutation
        cs = [c for c in net.schedule if c.ts == s]
        assert sorted(c.n1 for c in cs) == list(range(6)) and sorted(c.n2 for c in cs) == list(range(6))


def test_ta_options_are_checked():
    with pytest.raises(od.ConfigError) as e:
        od.arch.cthrough(period="10us", reconfiguration="20us")
    assert e.value.field == "--reconfiguration"
    with pytest.raises(od.ConfigError) as e:
        od.arch.jupiter(nodes=8, uplinks=4)
    assert e.value.field == "--uplinks"
    with pytest.raises(od.ConfigError) as e:
        od.arch.hierarchical(nodes=16, racks=3)
    assert e.value.field == "--racks"


def test_electrical_links_stay_as_they_are_during_a_run():
    net = od.arch.cthrough(nodes=4, period="100us")
    net.start(od.workload.poisson("hadoop", 0.1), duration="300us")
    bad = [od.Circuit(0, 0, 1, 0, None)] + [od.Circuit(i, 1, 4, (i + 1) % 4, None) for i in range(4)]
    with pytest.raises(od.ConfigError) as e:
        net.deploy_topo(bad)
    assert "electrical links are static" in str(e.value)


@pytest.mark.parametrize("multipath", ["flow", "packet"])
def test_jupiter_transit_packets_take_direct_links(multipath):
    """A packet in transit takes the transit block's direct link: with per-flow hashing
    every flow completes on an idle network, each packet crosses at most two links, and
    no packet is left circulating between transit blocks."""
    net = od.arch.jupiter(nodes=8, uplinks=7, transport="ideal", multipath=multipath)
    pairs = [(s, d) for s in range(8) for d in range(8) if s != d]
    r = net.run(od.workload.flows([(0, s, d, 4200) for s, d in pairs]), duration="1ms", seed=1)
    s = r.summary
    assert s["flows"]["completed"] == len(pairs) and s["packets"]["in_flight"] == 0
    assert max(int(h) for h in s["delivered_bytes_by_hops"]) <= 2
    assert s["packet_hops"] <= 2 * s["packets"]["delivered"] + 2 * s["packets"]["sent"]
    for node in range(8):
        for e in net.tables(node):
            assert e.src in (None, node)


def test_directed_jupiter_engineers_a_cycle_along_the_demand_and_reaches_every_pair():
    """One OCS port per block with one-way fibres (the OpenOptics testbed's MEMS): the
    topology is a cycle through every block that follows a ring demand exactly, the spare
    ports go to the heaviest pairs, and shortest-path tables reach every pair; a run
    delivers every flow of an all-to-all and a ring all-reduce near a single-hop rate."""
    from opendcn.arch.ta import engineer_directed, shortest_next_ports

    n = 8
    ring = np.zeros((n, n))
    order = [0, 3, 1, 6, 2, 7, 5, 4]
    for a, b in zip(order, order[1:] + order[:1]):
        ring[a, b] = 10
    links = engineer_directed(ring, 1)
    assert {(a, b) for a in range(n) for b in range(n) if links[a, b]} == set(zip(order, order[1:] + order[:1]))
    hot = ring.copy()
    hot[0, 7] = 50
    two = engineer_directed(hot, 2)
    assert (two.sum(axis=1) <= 2).all() and (two.sum(axis=0) <= 2).all() and two[0, 7] >= 1
    circuits, tables = shortest_next_ports(two)
    assert all(c.directed for c in circuits)
    assert all({e.dst for e in tables[a]} == set(range(n)) - {a} for a in range(n))

    net = od.arch.jupiter(nodes=n, uplinks=1, circuits="directed", transport="ideal")
    pairs = [(s, d) for s in range(n) for d in range(n) if s != d]
    s = net.run(od.workload.flows([(0, s, d, 4200) for s, d in pairs]), duration="1ms", seed=1).summary
    assert s["flows"]["completed"] == len(pairs) and s["invariants"]["ok"]
    assert max(int(h) for h in s["delivered_bytes_by_hops"]) == n - 1    # the farthest pair: n - 1 ring hops
    with pytest.raises(od.ConfigError, match="--uplinks"):
        od.arch.jupiter(nodes=n, uplinks=3)                            # duplex still needs n - 1
    # reconfigured while it runs (fibres may turn direction): routes never name a port that
    # only receives, TCP delivers every byte it can, the ledger holds
    live = od.arch.jupiter(nodes=n, uplinks=2, circuits="directed", period="200us", reconfiguration="10us")
    hot = od.workload.flows([(f"{100 * k}us", a, b, 300_000) for k in range(10)
                             for a, b in ((0, 5), (3, 1), (k % n, (k + 3) % n)) if a != b])
    s = live.run(od.workload.mix(od.workload.poisson("hadoop", load=0.1), hot), duration="3ms", seed=1).summary
    assert s["arch_metrics"]["reconfigurations"] > 5 and s["invariants"]["ok"]
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert s["flows"]["completed"] >= 0.99 * s["flows"]["started"]


def test_mordia_on_several_ports_runs_the_cycle_side_by_side_and_the_multipath_rule_spreads_parallel_circuits():
    """Mordia with u ports: the cycle's k + N - 1 permutations, u per slice (a cycle of
    ceil((k + N - 1) / u) slices), every port a permutation in every slice it is lit.
    Where a destination has circuits on several ports in one slice, per-packet multipath
    uses them together: a ring all-reduce on the ideal transport finishes sooner than with
    one port per flow (the ECMP hash, Mordia's default)."""
    from opendcn.workload import ring_allreduce

    net = od.arch.mordia(nodes=8, uplinks=4, link_rate="100Gbps")
    assert net.cycle == 4 and net.arch_metrics["cycle_slices"] == 4
    lit: dict[tuple[int, int], list[int]] = {}
    for c in net.schedule:
        lit.setdefault((c.ts, c.p1), []).append(c.n2)
    assert len(lit) == 15 and all(sorted(v) == list(range(8)) for v in lit.values())
    assert od.arch.mordia(nodes=8).arch_metrics["cycle_slices"] == 15        # one port: as before
    t = {}
    for mp in ("flow", "packet"):
        m = od.arch.mordia(nodes=8, hosts_per_node=1, host_link_rate="100Gbps", uplinks=4, link_rate="100Gbps",
                           warm=True, transport="ideal", multipath=mp)
        r = m.run(od.workload.flows(ring_allreduce(range(8), "2MB", sync=True)), duration="5ms", seed=1)
        assert r.summary["flows"]["completed"] == r.summary["flows"]["started"] == 112
        t[mp] = max(r.flows["finish_ps"].to_pylist())                # the all-reduce's end
    assert t["packet"] < t["flow"]
