"""The engine's built-in routers decide exactly as the compiled time-flow tables.

RotorNet builds its routing either as a built-in router (``tables=False``: the engine
computes VLB / direct candidates from the schedule) or as compiled per-node time-flow
tables (``tables=True``: the reference routers of :mod:`opendcn.fabrics.routing` compiled by
:func:`opendcn.fabrics.routing.compile_paths`). The engine exposes the candidate list it would
choose among (``Simulator.candidates``), so both can be compared decision by decision;
whole runs with one seed must then be identical too, because per-packet multipath draws
one random stream in candidate order.
"""

from __future__ import annotations

import itertools

import pytest

import opendcn as od

SIZES = [(n, u) for n in (4, 5, 8) for u in (1, 2)]


def build(name: str, **options) -> od.Network:
    return od.arch.get(name).make(**options)


def rotornet(nodes, uplinks, routing, tables, **kw) -> od.Network:
    return build("rotornet", nodes=nodes, uplinks=uplinks, routing=routing, tables=tables, **kw)


def engine_candidates(net: od.Network) -> dict[tuple[int, int, int, int], list[tuple[int, int]]]:
    """Candidates (global port, departure slice) of every (node, src, dst != node, arr)."""
    net.start(od.workload.flows([("0us", 0, 1, 100)]), duration="1us")
    try:
        sim = net._live.sim
        n, S = net.config.nodes, net.slices
        return {(node, src, dst, arr): [tuple(c) for c in sim.candidates(node, src, dst, arr)]
                for node, src, dst in itertools.product(range(n), repeat=3) if dst != node
                for arr in range(S)}
    finally:
        net._live = None


def reachable_states(net: od.Network, routing: str) -> set[tuple[int, int, int, int]]:
    """(node, src, dst, arrival slice) of every hop of every reference path: the states a
    packet can be in when the router is asked."""
    paths = od.routing.vlb(net.circuits) if routing == "vlb" else od.routing.direct(net.circuits)
    states = set()
    for p in paths:
        arr = p.ts
        for h in p.hops:
            states.add((h.node, p.src, p.dst, arr))
            arr = h.dep_ts
    return states


def strip(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "wall_s"}


# ---------------------------------------------------------------------------------------
# decision by decision
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("routing", ["vlb", "direct"])
@pytest.mark.parametrize("nodes,uplinks", SIZES)
def test_builtin_candidates_equal_compiled_tables(routing, nodes, uplinks):
    builtin = rotornet(nodes, uplinks, routing, tables=False)
    tables = rotornet(nodes, uplinks, routing, tables=True)
    assert builtin.slices == tables.slices
    a = engine_candidates(builtin)
    b = engine_candidates(tables)
    reach = reachable_states(builtin, routing)
    assert reach
    # every state a packet can be in: the same, non-empty, ordered candidate list
    for state in sorted(reach):
        assert b[state], f"compiled tables have no route for {state}"
        assert a[state] == b[state], f"{routing} N={nodes} U={uplinks} state {state}"
    # at the source (node == src) every arrival slice is reachable: all identical
    for state in a:
        if state[0] == state[1]:
            assert a[state] == b[state], state
    # wherever the compiled tables answer, the built-in router answers the same; states
    # the tables leave empty are exactly those no packet can reach
    for state, cand in b.items():
        if cand:
            assert a[state] == cand, state
        else:
            assert state not in reach, state


@pytest.mark.parametrize("routing", ["vlb", "direct"])
@pytest.mark.parametrize("nodes,uplinks", [(4, 1), (5, 2), (8, 2)])
def test_engine_table_lookup_matches_python_reference(routing, nodes, uplinks):
    """The engine's table lookup == :func:`opendcn.fabrics.routing.lookup` on ``net.tables``."""
    net = rotornet(nodes, uplinks, routing, tables=True)
    got = engine_candidates(net)
    for (node, src, dst, arr), cand in got.items():
        ref = od.routing.lookup(net.tables(node), src=src, dst=dst, arr_ts=arr)
        want = sorted((net.gport(node, e.port), -1 if e.dep_ts is None else e.dep_ts) for e in ref)
        want = sorted(want, key=lambda x: (x[1], x[0]))
        assert cand == want, (node, src, dst, arr)


@pytest.mark.parametrize("routing", ["vlb", "direct"])
def test_builtin_reference_tables_equal_compiled(routing):
    """``net.tables`` of a built-in router materializes the same entries as compilation."""
    builtin = rotornet(5, 2, routing, tables=False)
    tables = rotornet(5, 2, routing, tables=True)
    for node in range(5):
        assert sorted(builtin.tables(node), key=repr) == sorted(tables.tables(node), key=repr)


# ---------------------------------------------------------------------------------------
# whole runs
# ---------------------------------------------------------------------------------------
WORKLOADS = {
    "hadoop-0.5": lambda: od.workload.poisson("hadoop", 0.5, "uniform"),
    "10KB-0.8": lambda: od.workload.poisson(None, 0.8, "uniform", flow_size="10KB"),
}


@pytest.mark.parametrize("wl", sorted(WORKLOADS))
@pytest.mark.parametrize("routing", ["vlb", "direct"])
@pytest.mark.parametrize("nodes,uplinks", [(8, 1), (8, 2), (5, 2)])
def test_builtin_and_tables_runs_identical(routing, nodes, uplinks, wl):
    res = []
    for tables in (False, True):
        net = rotornet(nodes, uplinks, routing, tables)
        res.append(net.run(WORKLOADS[wl](), duration="300us", seed=4))
    a, b = res
    assert a.summary["flows"]["started"] > 20  # the run is not trivial
    assert a.summary["packet_hops"] > 1000
    assert strip(a.summary) == strip(b.summary)
    assert a.flows.equals(b.flows)


@pytest.mark.parametrize("multipath", ["packet", "flow"])
def test_builtin_and_tables_identical_per_flow_and_per_packet(multipath):
    res = [rotornet(8, 2, "vlb", t, multipath=multipath).run(
        od.workload.poisson("websearch", 0.6, "uniform"), duration="300us", seed=9)
        for t in (False, True)]
    assert strip(res[0].summary) == strip(res[1].summary)


def _source_vs_hop(routing, workload, **kw):
    out = {}
    for lookup in ("hop", "source"):
        net = rotornet(8, 1, routing, tables=True, lookup=lookup, **kw)
        out[lookup] = net.run(workload, duration="300us", seed=4)
    return out["hop"], out["source"]


SOURCE_CASES = {
    "light": (lambda: od.workload.poisson("hadoop", 0.1, "uniform"), {}),
    "backpressure": (lambda: od.workload.poisson("hadoop", 0.5, "uniform"), {}),
    "small-buffer": (lambda: od.workload.flows([("0us", 0, 3, 15_000), ("1us", 2, 5, 9_000)]),
                     {"buffer": "3KB"}),
    "one-long-flow": (lambda: od.workload.flows([("0us", 0, 3, 1_000_000)]), {"buffer": "100KB"}),
}


@pytest.mark.parametrize("case", sorted(SOURCE_CASES))
@pytest.mark.parametrize("routing", ["direct", "vlb"])
def test_source_routing_same_fcts_as_hop_lookup(routing, case):
    make, kw = SOURCE_CASES[case]
    hop, src = _source_vs_hop(routing, make(), **kw)
    assert hop.summary["flows"]["started"] > 0
    for s in (hop.summary, src.summary):
        b = s["bytes"]
        assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    assert src.summary["drops"] == hop.summary["drops"]
    assert src.flows.column("finish_ps").to_pylist() == hop.flows.column("finish_ps").to_pylist()
    assert src.flows.column("fct_ps").to_pylist() == hop.flows.column("fct_ps").to_pylist()
    assert src.flows.column("hops").to_pylist() == hop.flows.column("hops").to_pylist()
