"""HOHO and UCMP on round-robin fabrics: built-in decisions against the earliest-path
reference, exact oracles on OpenOptics' 4-node example, invariants."""

from __future__ import annotations

import pytest

import opendcn as od

US = 10**6
NS = 10**3


def _rotor(n: int, u: int, routing: str, **kw) -> od.Network:
    return od.arch.rotornet(nodes=n, uplinks=u, routing=routing, **kw)


def _follow(net: od.Network, src: int, dst: int, arr: int) -> set[tuple[int, int]]:
    """Follow every choice the engine's HOHO may make hop by hop: the (arrival offset, hops)
    of every path it can take."""
    sim = net._live.sim
    peer = net._peer
    S = net.slices
    out: set[tuple[int, int]] = set()

    def walk(node: int, tag: int, hops: int, offset: int) -> None:
        if node == dst:
            out.add((offset, hops))
            return
        assert hops < 8
        cands = sim.candidates(node, src, dst, tag, hops)
        assert cands, (node, dst, tag)
        for gp, dep in cands:
            q = int(peer[dep][gp])
            nxt = int(net.port_offset.searchsorted(q, side="right") - 1)
            walk(nxt, dep, hops + 1, offset + (dep - tag) % S)

    walk(src, arr, 0, 0)
    return out


@pytest.mark.parametrize("n,u", [(4, 1), (5, 1), (8, 1), (8, 2)])
@pytest.mark.parametrize("max_hop", [1, 2, 3])
def test_hoho_arrives_as_early_as_the_earliest_path(n, u, max_hop):
    net = _rotor(n, u, "hoho", max_hop=max_hop)
    net.start(od.workload.flows([("0us", 0, 1, 100)]), duration="1us")
    S = net.slices
    for s in range(n):
        for d in range(n):
            if s == d:
                continue
            for a in range(S):
                ref = od.routing.earliest_path(net.circuits, s, d, a, max_hop)
                ref_off = od.routing._arrival_offset(ref, S)
                # every choice among the next hops is a path of the earliest arrival with
                # the fewest hops, within the bound end to end (each node plans with the
                # hops the bound leaves)
                got = _follow(net, s, d, a)
                assert len(got) == 1, (s, d, a, got)
                ((off, hops),) = got
                assert off == ref_off, (s, d, a)
                assert hops <= min(max_hop, len(ref.hops)), (s, d, a)


@pytest.mark.parametrize("n,u", [(4, 1), (5, 1), (8, 2)])
def test_ucmp_candidates_are_the_latency_hop_pareto_frontier(n, u):
    net = _rotor(n, u, "ucmp", max_hop=3)
    net.start(od.workload.flows([("0us", 0, 1, 100)]), duration="1us")
    sim = net._live.sim
    ref = {}
    for p in od.routing.ucmp(net.circuits, max_hop=3):
        ref.setdefault((p.src, p.dst, p.ts), []).append(p)
    for (s, d, a), paths in ref.items():
        cands = sim.candidates(s, s, d, a)
        assert len(cands) == len(paths), (s, d, a)
        # hop counts strictly increase along the frontier, arrivals strictly decrease
        hops = sorted(len(p.hops) for p in paths)
        assert hops == sorted(set(hops))


def _fig2(routing: str) -> od.Network:
    net = od.Network(od.Config(nodes=4, uplinks=1, link_rate="100Gbps", slice="10us",
                               guardband="200ns", propagation="500ns"))
    net.deploy_topo(od.topology.round_robin(net.config, dimension=1))
    net.deploy_routing(routing, max_hop=2)
    return net


@pytest.mark.parametrize("routing", ["hoho", "ucmp"])
def test_young_packet_takes_two_hops_instead_of_waiting(routing):
    # N0->N3 at t=0: the direct circuit is slice 2; via N1 (slice 0, then 1-3 in slice 1)
    r = _fig2(routing).run(od.workload.flows([("0us", 0, 3, 100)]), duration="100us")
    row = r.flows.to_pylist()[0]
    assert row["hops"] == 2
    assert row["finish_ps"] == 10 * US + 200 * NS + 8 * NS + 500 * NS


def test_ucmp_sends_an_aged_flow_direct():
    # a 3 MB flow: its packets after 1 MB (aged bucket) prefer the 1-hop path
    net = _fig2("ucmp")
    r = net.run(od.workload.flows([("0us", 0, 3, 3_000_000)]), duration="3ms")
    s = r.summary
    assert s["flows"]["completed"] == 1
    assert s["invariants"]["ok"]
    # packets of the young part used 2 hops, so the flow's max hops is 2; the direct part
    # shows in fewer packet-hops than all-2-hop routing would need
    npk = 3_000_000 // 1500
    assert npk < s["packet_hops"] < 2 * npk


@pytest.mark.parametrize("routing", ["hoho", "ucmp"])
def test_invariants_and_determinism_under_load(routing):
    def run():
        net = _rotor(8, 2, routing)
        return net.run(od.workload.poisson("hadoop", load=0.5), duration="500us", seed=4).summary

    a, b = run(), run()
    assert a["invariants"]["ok"] and a["fabric"] == {"collisions": 0, "guardband_violations": 0}
    b_ = dict(b)
    a_ = dict(a)
    a_.pop("wall_s"), b_.pop("wall_s")
    assert a_ == b_
    assert a["flows"]["completed"] > 0


def test_bad_max_hop_and_tables_combination_are_config_errors():
    with pytest.raises(od.ConfigError, match="max.hop"):
        _rotor(8, 1, "hoho", max_hop=0)
    with pytest.raises(od.ConfigError, match="--tables"):
        _rotor(8, 1, "ucmp", tables=True)


def test_ucmp_routes_again_a_packet_that_missed_its_planned_slice():
    """OpenOptics App. A: UCMP defers "packets that cannot fit within the intended time
    slice to a later one". 8 nodes x 4 uplinks, 10 us slices (a cycle of 2): node 0 has no
    circuit to node 5 in slice 0, so a young packet takes two hops in it; sent 0.5 us before
    the slice ends it reaches the intermediate after the slice (500 ns propagation). It is
    routed again from there (about 1.7 us), not held a cycle for its planned slice (11.2 us)."""
    for start, most in (("5us", 1.1), ("9.5us", 3.0)):
        net = _rotor(8, 4, "ucmp", slice="10us")
        r = net.run(od.workload.flows([(start, 0, 5, 100)]), duration="100us", seed=1)
        fct = r.flows["fct_ps"][0].as_py() / US
        assert fct < most, (start, fct)
        assert r.summary["ucmp_deferred_packets"] == (start == "9.5us")


def test_ucmp_routes_chosen_again_keep_the_hop_bound():
    """A route chosen again at an intermediate has only the hops left: no delivered packet
    crosses more than max_hop optical links (plus its host downlink)."""
    net = _rotor(8, 4, "ucmp", slice="2us", max_hop=3)
    r = net.run(od.workload.poisson("keyvalue", load=0.3), duration="300us", seed=1)
    assert r.summary["ucmp_deferred_packets"] > 0
    assert max(int(h) for h in r.summary["delivered_bytes_by_hops"]) <= 3 + 1


def _earliest_first_hops(net: od.Network, max_hop: int) -> dict[tuple[int, int, int], set[tuple[int, int]]]:
    """Brute force: for every (node, arrival slice, destination), the (global port,
    departure slice) of every path with at most ``max_hop`` hops that arrives earliest
    (then with the fewest hops) — each hop waits 0..S-1 slices for a port's circuit."""
    S, n = net.slices, net.config.nodes
    peer = net._peer
    ports = {v: range(int(net.port_offset[v]), int(net.port_offset[v + 1])) for v in range(n)}
    owner = {g: v for v in range(n) for g in ports[v]}
    best: dict[tuple[int, int, int, int], tuple[int, int] | None] = {}

    def options(v: int, a: int, d: int, r: int):
        """(arrival offset, hops) of the best path through each (port, departure slice)."""
        for g in ports[v]:
            for k in range(S):
                i = (a + k) % S
                q = int(peer[i][g])
                if q < 0:
                    continue
                w = owner[q]
                if w == d:
                    yield (k, 1), (g, i)
                elif r > 1 and (t := cost(w, i, d, r - 1)) is not None:
                    yield (k + t[0], t[1] + 1), (g, i)

    def cost(v: int, a: int, d: int, r: int) -> tuple[int, int] | None:
        if (v, a, d, r) not in best:
            best[(v, a, d, r)] = min((c for c, _ in options(v, a, d, r)), default=None)
        return best[(v, a, d, r)]

    return {(v, a, d): {h for c, h in options(v, a, d, max_hop) if c == cost(v, a, d, max_hop)}
            for v in range(n) for a in range(S) for d in range(n) if d != v}


@pytest.mark.parametrize("n,u,max_hop", [(8, 2, 2), (8, 2, 3), (6, 3, 3)])
def test_hoho_offers_every_first_hop_of_the_earliest_paths(n, u, max_hop):
    """UCMP's simulator draws among the equal paths of a class (OPTIROUTE_ECMP; HOHO is its
    lowest-latency class): HOHO's candidates are every first hop of an earliest path, not
    the lowest-numbered one, which piled relayed traffic on each ToR's first ports."""
    net = _rotor(n, u, "hoho", max_hop=max_hop)
    net.start(od.workload.flows([("0us", 0, 1, 100)]), duration="1us")
    sim = net._live.sim
    ref = _earliest_first_hops(net, max_hop)
    several = 0
    for (v, a, d), hops in ref.items():
        got = {tuple(c) for c in sim.candidates(v, v, d, a)}
        assert got == hops, (v, a, d)
        several += len(hops) > 1
    assert several > 0


def test_hoho_paths_keep_to_the_hop_bound():
    """A packet plans at every node with the hops the bound leaves: none crosses more than
    max_hop optical links (with a fresh bound at every node they wandered for up to 7 of
    3 on a 300-us-slice rotor, each slice an expander)."""
    net = _rotor(16, 4, "hoho", slice="300us", max_hop=3, hosts_per_node=4, shared_buffer="64MB")
    r = net.run(od.workload.poisson("hadoop", load=0.3), duration="1ms", seed=1)
    by_hops = {int(h): b for h, b in r.summary["delivered_bytes_by_hops"].items() if b}
    assert max(by_hops) <= 3 + 1 and by_hops.get(4, 0) > 0
