"""Round-robin schedules, the feasibility check, routers and path compilation."""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict

import numpy as np
import pytest

from opendcn.network.config import Config
from opendcn.errors import ConfigError
from opendcn.fabrics.routing import (compile_paths, compile_routes, direct, earliest_path, ecmp, ksp,
                             lookup, neighbors, vlb)
from opendcn.network.timeflow import Circuit, Entry, Hop, Path
from opendcn.fabrics.topology import connect, cycle_length, round_robin, schedule_table


def n_matchings(n: int) -> int:
    return n - 1 if n % 2 == 0 else n


def pair_slices(circuits):
    """unordered pair -> list of (slice, port) in which it is connected."""
    res = defaultdict(list)
    for c in circuits:
        res[frozenset((c.n1, c.n2))].append((c.ts, c.p1))
    return res


# ---------------------------------------------------------------------------------------
# round robin
# ---------------------------------------------------------------------------------------
def test_round_robin_n4_is_openoptics_fig2():
    circuits = round_robin(Config(nodes=4, uplinks=1), dimension=1)
    assert circuits == [Circuit(0, 0, 1, 0, 0), Circuit(2, 0, 3, 0, 0),
                        Circuit(0, 0, 2, 0, 1), Circuit(1, 0, 3, 0, 1),
                        Circuit(0, 0, 3, 0, 2), Circuit(1, 0, 2, 0, 2)]
    assert cycle_length(circuits) == 3


def test_round_robin_uses_config_uplinks_and_override():
    cfg = Config(nodes=8, uplinks=3)
    c = round_robin(cfg)
    assert {x.p1 for x in c} == {0, 1, 2}
    assert cycle_length(c) == math.ceil(7 / 3)
    c1 = round_robin(cfg, uplink=1)
    assert {x.p1 for x in c1} == {0} and cycle_length(c1) == 7


@pytest.mark.parametrize("n", list(range(2, 34)))
@pytest.mark.parametrize("u", [1, 2, 3, 4, 5, 6])
def test_round_robin_1d_valid_every_pair_once(n, u):
    circuits = round_robin(Config(nodes=n, uplinks=u), dimension=1)
    m = n_matchings(n)
    s = math.ceil(m / u)
    assert cycle_length(circuits) == s
    table = schedule_table(circuits, n, u)  # feasible: raises otherwise
    assert table.shape == (s, n * u)
    # table is an involution wherever connected
    for t in range(s):
        g = np.flatnonzero(table[t] >= 0)
        assert np.array_equal(table[t, table[t, g]], g)
    # every unordered pair exactly once per cycle -> every ordered pair once per cycle
    pairs = pair_slices(circuits)
    assert len(pairs) == n * (n - 1) // 2
    assert all(len(v) == 1 for v in pairs.values())
    for c in circuits:
        assert c.p1 == c.p2 and 0 <= c.p1 < u and c.n1 < c.n2
    # consecutive matchings over ports: slice t, port p == matching t*u + p of the U=1 cycle
    base = defaultdict(set)
    for c in round_robin(n, uplink=1):
        base[c.ts].add((c.n1, c.n2))
    got = defaultdict(set)
    for c in circuits:
        got[(c.ts, c.p1)].add((c.n1, c.n2))
    for t in range(s):
        for p in range(u):
            mi = t * u + p
            assert got.get((t, p), set()) == (base[mi] if mi < m else set())
    # each matching: perfect (even n) or exactly one idle node (odd n)
    for mi in range(m):
        busy = Counter(x for pair in base[mi] for x in pair)
        assert all(v == 1 for v in busy.values())
        assert len(busy) == (n if n % 2 == 0 else n - 1)


def test_round_robin_odd_each_node_idle_once():
    circuits = round_robin(7)
    idle = Counter()
    for t in range(cycle_length(circuits)):
        busy = {x for c in circuits if c.ts == t for x in (c.n1, c.n2)}
        idle.update(set(range(7)) - busy)
    assert idle == Counter({i: 1 for i in range(7)})


@pytest.mark.parametrize("n,h", [(16, 2), (27, 3), (64, 3), (16, 4), (9, 2)])
@pytest.mark.parametrize("u", [1, 2])
def test_round_robin_hd_meets_one_coordinate_neighbours_once(n, h, u):
    r = round(n ** (1 / h))
    assert r**h == n
    circuits = round_robin(Config(nodes=n, uplinks=u), dimension=h)
    m = h * n_matchings(r)
    assert cycle_length(circuits) == math.ceil(m / u)
    schedule_table(circuits, n, u)

    def digits(x):
        return [(x // r**i) % r for i in range(h)]

    pairs = pair_slices(circuits)
    for a in range(n):
        met = {b for b in range(n) if frozenset((a, b)) in pairs}
        expect = {b for b in range(n)
                  if sum(x != y for x, y in zip(digits(a), digits(b))) == 1}
        assert met == expect
    assert all(len(v) == 1 for v in pairs.values())
    # phases in order: matching index k belongs to phase k // n_matchings(r)
    for c in circuits:
        k = c.ts * u + c.p1
        da, db = digits(c.n1), digits(c.n2)
        differ = [i for i in range(h) if da[i] != db[i]]
        assert differ == [k // n_matchings(r)]


def test_round_robin_hd_dimension_one_equals_1d():
    assert round_robin(12, dimension=1, uplink=2) == round_robin(Config(nodes=12, uplinks=2))


@pytest.mark.parametrize("n,h", [(10, 2), (16, 3), (28, 3), (8, 2)])
def test_round_robin_not_a_perfect_power(n, h):
    with pytest.raises(ConfigError) as e:
        round_robin(Config(nodes=n), dimension=h)
    assert e.value.field == "nodes"
    assert "nodes" in str(e.value) and str(n) in str(e.value)


@pytest.mark.parametrize("kw,field", [({"dimension": 0}, "dimension"),
                                      ({"dimension": 1.5}, "dimension"),
                                      ({"uplink": 0}, "uplink"),
                                      ({"uplink": "2"}, "uplink")])
def test_round_robin_bad_arguments(kw, field):
    with pytest.raises(ConfigError) as e:
        round_robin(Config(nodes=4), **kw)
    assert e.value.field == field


# ---------------------------------------------------------------------------------------
# connect / schedule_table
# ---------------------------------------------------------------------------------------
def test_connect():
    assert connect(0, 1, 3, 0, ts=2) == Circuit(0, 1, 3, 0, 2)
    assert connect(0, 1, 3, 0).ts is None
    for args, field in [((1, 0, 1, 1), "n2"), ((-1, 0, 1, 0), "n1"), ((0, -2, 1, 0), "p1"),
                        ((0, 0, 1, 0.5), "p2")]:
        with pytest.raises(ConfigError) as e:
            connect(*args)
        assert e.value.field == field
    with pytest.raises(ConfigError) as e:
        connect(0, 0, 1, 0, ts=-1)
    assert e.value.field == "ts"


def test_schedule_table_static_fills_every_slice():
    circuits = [Circuit(0, 0, 1, 0, None), Circuit(0, 1, 2, 0, 2), Circuit(1, 1, 2, 1, 0)]
    t = schedule_table(circuits, nodes=3, ports=2)
    assert t.dtype == np.int64 and t.shape == (3, 6)
    assert t[:, 0].tolist() == [2, 2, 2] and t[:, 2].tolist() == [0, 0, 0]
    assert t[2, 1] == 4 and t[2, 4] == 1 and t[0, 1] == -1
    assert t[0, 3] == 5 and t[0, 5] == 3 and t[1, 3] == -1
    t5 = schedule_table(circuits, nodes=3, ports=2, slices=5)
    assert t5.shape == (5, 6) and t5[4, 0] == 2
    assert schedule_table([], nodes=2, ports=1).tolist() == [[-1, -1]]
    assert cycle_length([Circuit(0, 0, 1, 0)]) == 1 and cycle_length([]) == 1


INFEASIBLE = [
    # (circuits, slices, field, fragments that must appear in the message)
    ([Circuit(5, 1, 2, 0, 3), Circuit(0, 0, 1, 0, 3), Circuit(5, 1, 3, 0, 3)], None,
     "circuits[2]", ["slice 3", "port 1 of node 5", "already connected to node 2"]),
    ([Circuit(5, 1, 2, 0, None), Circuit(3, 0, 5, 1, 3)], None,
     "circuits[1]", ["slice 3", "port 1 of node 5", "already connected to node 2"]),
    ([Circuit(3, 0, 5, 1, 3), Circuit(5, 1, 2, 0, None)], None,
     "circuits[1]", ["slice 3", "port 1 of node 5", "already connected to node 3"]),
    ([Circuit(5, 1, 2, 0), Circuit(1, 0, 5, 1)], None,
     "circuits[1]", ["slice", "port 1 of node 5", "already connected to node 2"]),
    ([Circuit(0, 0, 1, 0, 1), Circuit(9, 1, 2, 0, 1)], None,
     "circuits[1]", ["slice 1", "node 9", "port 1"]),
    ([Circuit(0, 0, -1, 0, 1)], None, "circuits[0]", ["slice 1", "node -1", "port 0"]),
    ([Circuit(0, 0, 1, 0, 1), Circuit(2, 4, 3, 0, 0)], None,
     "circuits[1]", ["slice 0", "port 4 of node 2"]),
    ([Circuit(2, 0, 3, 0, -2)], None, "circuits[0]", ["slice -2", "port 0 of node 2"]),
    ([Circuit(2, 0, 3, 0, 7)], 4, "circuits[0]", ["slice 7", "port 0 of node 2"]),
    ([Circuit(4, 1, 4, 0, 2)], None, "circuits[0]", ["slice 2", "port 1 of node 4", "self-loop"]),
]


@pytest.mark.parametrize("circuits,slices,field,fragments", INFEASIBLE)
def test_schedule_table_infeasible(circuits, slices, field, fragments):
    with pytest.raises(ConfigError) as e:
        schedule_table(circuits, nodes=8, ports=4, slices=slices)
    msg = str(e.value)
    assert e.value.field == field
    for f in fragments:
        assert f in msg, (f, msg)
    assert "slice" in msg and "node" in msg and "port" in msg
    assert e.value.value == circuits[int(field[9:-1])]


def test_schedule_table_reports_first_offender_among_many():
    circuits = round_robin(Config(nodes=16, uplinks=2))
    bad = circuits + [Circuit(3, 1, 7, 0, 1), Circuit(0, 9, 1, 0, 0)]
    with pytest.raises(ConfigError) as e:
        schedule_table(bad, 16, 2)
    # the out-of-range port (per-circuit check) is reported before conflicts
    assert e.value.field == f"circuits[{len(circuits) + 1}]"
    with pytest.raises(ConfigError) as e:
        schedule_table(bad[:-1], 16, 2)
    assert e.value.field == f"circuits[{len(circuits)}]"
    assert "slice 1" in str(e.value) and "node 3" in str(e.value)


@pytest.mark.parametrize("bad", [[(0, 0, 1)], [(0, 0.0, 1, 0, 1)], [(0, 0, 1, 0, "1")], [5]])
def test_schedule_table_malformed_circuit(bad):
    with pytest.raises(ConfigError) as e:
        schedule_table([Circuit(2, 0, 3, 0, 0)] + bad, 4, 1)
    assert e.value.field == "circuits[1]"


@pytest.mark.parametrize("kw,field", [({"nodes": 0}, "nodes"), ({"ports": 1.5}, "ports"),
                                      ({"slices": 0}, "slices")])
def test_schedule_table_bad_sizes(kw, field):
    args = {"nodes": 4, "ports": 1, **kw}
    with pytest.raises(ConfigError) as e:
        schedule_table([Circuit(0, 0, 1, 0, 0)], **args)
    assert e.value.field == field


def test_schedule_table_plain_tuples_accepted():
    t = schedule_table([(0, 0, 1, 0, 0), (2, 0, 3, 0)], 4, 1)
    assert t.tolist() == [[1, 0, 3, 2]]


def test_schedule_table_is_fast_on_200k_circuits():
    circuits = round_robin(Config(nodes=640, uplinks=6))
    assert len(circuits) > 200_000
    t0 = time.perf_counter()
    table = schedule_table(circuits, 640, 6)
    elapsed = time.perf_counter() - t0
    assert table.shape == (107, 640 * 6)
    assert elapsed < 3.0, elapsed


# ---------------------------------------------------------------------------------------
# neighbors
# ---------------------------------------------------------------------------------------
def test_neighbors():
    rr = round_robin(Config(nodes=4, uplinks=2))  # slice 0: ports 0/1, slice 1: port 0
    assert neighbors(rr, 0, 0) == [(0, 1), (1, 2)]
    assert neighbors(rr, 3, 0) == [(0, 2), (1, 1)]
    assert neighbors(rr, 0, 1) == [(0, 3)]
    assert neighbors(rr, 0, 5) == []
    mixed = [Circuit(0, 2, 3, 0, None), Circuit(0, 1, 1, 0, 0), Circuit(2, 0, 0, 0, 1)]
    assert neighbors(mixed, 0, 1) == [(0, 2), (2, 3)]
    assert neighbors(mixed, 0, 0) == [(1, 1), (2, 3)]
    assert neighbors(mixed, 0, None) == [(2, 3)]
    assert neighbors(mixed, 3, 7) == [(0, 0)]
    with pytest.raises(ConfigError) as e:
        neighbors([Circuit(0, 0, 1, 0, 1), Circuit(0, 0, 2, 0, None)], 0, 1)
    assert "slice 1" in str(e.value) and "port 0 of node 0" in str(e.value)
    with pytest.raises(ConfigError):
        neighbors(rr, -1, 0)


# ---------------------------------------------------------------------------------------
# direct
# ---------------------------------------------------------------------------------------
def test_direct_by_hand_n4():
    paths = {(p.src, p.dst, p.ts): p for p in direct(round_robin(4))}
    assert len(paths) == 4 * 3 * 3
    assert paths[(0, 3, 0)].hops == (Hop(0, 0, 2),)
    assert paths[(0, 3, 2)].hops == (Hop(0, 0, 2),)
    assert paths[(0, 1, 1)].hops == (Hop(0, 0, 0),)     # wraps into the next cycle
    assert paths[(3, 1, 2)].hops == (Hop(3, 0, 1),)
    assert paths[(2, 1, 0)].hops == (Hop(2, 0, 2),)


@pytest.mark.parametrize("n,u", [(5, 1), (6, 2), (8, 3), (9, 2)])
def test_direct_waits_for_earliest_slice(n, u):
    circuits = round_robin(n, uplink=u)
    s = cycle_length(circuits)
    conns = defaultdict(list)
    for c in circuits:
        conns[(c.n1, c.n2)].append((c.ts, c.p1))
        conns[(c.n2, c.n1)].append((c.ts, c.p2))
    paths = direct(circuits)
    assert len(paths) == n * (n - 1) * s
    for p in paths:
        (h,) = p.hops
        assert h.node == p.src
        best = min(conns[(p.src, p.dst)], key=lambda x: ((x[0] - p.ts) % s, x[1]))
        assert (h.dep_ts, h.port) == best


def test_direct_static_and_parallel_ports():
    circuits = [Circuit(0, 1, 1, 0), Circuit(0, 0, 1, 1), Circuit(1, 2, 2, 0)]
    paths = direct(circuits)
    assert [(p.src, p.dst, p.ts, p.hops) for p in paths] == [
        (0, 1, None, (Hop(0, 0, None),)), (1, 0, None, (Hop(1, 0, None),)),
        (1, 2, None, (Hop(1, 2, None),)), (2, 1, None, (Hop(2, 0, None),))]


def test_direct_mixed_schedule_uses_static_circuits_in_every_slice():
    circuits = [Circuit(0, 0, 1, 0, None), Circuit(0, 1, 2, 0, 2)]
    paths = {(p.src, p.dst, p.ts): p.hops for p in direct(circuits)}
    assert paths[(0, 1, 1)] == (Hop(0, 0, 1),)
    assert paths[(0, 2, 0)] == (Hop(0, 1, 2),)


# ---------------------------------------------------------------------------------------
# VLB
# ---------------------------------------------------------------------------------------
def test_vlb_by_hand_n4():
    got = defaultdict(list)
    for p in vlb(round_robin(4)):
        got[(p.src, p.dst, p.ts)].append(p.hops)
    assert got[(0, 3, 0)] == [(Hop(0, 0, 0), Hop(1, 0, 1))]
    # in slice 0 node 0 only meets the destination 1: spray in slice 1 via node 2
    assert got[(0, 1, 0)] == [(Hop(0, 0, 1), Hop(2, 0, 2))]
    assert got[(2, 0, 1)] == [(Hop(2, 0, 2), Hop(1, 0, 0))]


@pytest.mark.parametrize("n,u", [(4, 1), (5, 1), (8, 2), (9, 3), (6, 4)])
def test_vlb_properties(n, u):
    circuits = round_robin(n, uplink=u)
    s = cycle_length(circuits)
    at = defaultdict(list)  # (node, slice) -> [(port, peer)]
    conns = defaultdict(list)
    for c in circuits:
        at[(c.n1, c.ts)].append((c.p1, c.n2))
        at[(c.n2, c.ts)].append((c.p2, c.n1))
        conns[(c.n1, c.n2)].append((c.ts, c.p1))
        conns[(c.n2, c.n1)].append((c.ts, c.p2))
    by_key = defaultdict(list)
    for p in vlb(circuits):
        by_key[(p.src, p.dst, p.ts)].append(p)
        h0, h1 = p.hops  # always two hops
        assert h0.node == p.src and h1.node not in (p.src, p.dst)
        a2 = h0.dep_ts
        # first hop: the first slice at or after ts with a port not facing dst
        for off in range((a2 - p.ts) % s):
            assert all(v == p.dst for _, v in at[(p.src, (p.ts + off) % s)])
        assert (h0.port, h1.node) in at[(p.src, a2)]
        best = min(conns[(h1.node, p.dst)], key=lambda x: ((x[0] - a2) % s, x[1]))
        assert (h1.dep_ts, h1.port) == best
    # one path per usable port of the spraying slice, for every (src, dst, ts)
    for src in range(n):
        for dst in range(n):
            if src == dst:
                continue
            for a in range(s):
                ps = by_key[(src, dst, a)]
                assert ps
                a2 = ps[0].hops[0].dep_ts
                usable = sorted((p, v) for p, v in at[(src, a2)] if v != dst)
                assert sorted((q.hops[0].port, q.hops[1].node) for q in ps) == usable


def test_vlb_static_and_single_link():
    # a star: 0-1, 0-2, 0-3 (static). VLB 1->2 must go via 0; 0->x has no intermediate.
    star = [Circuit(0, i - 1, i, 0) for i in (1, 2, 3)]
    paths = vlb(star)
    assert all(p.ts is None and all(h.dep_ts is None for h in p.hops) for p in paths)
    assert {(p.src, p.dst) for p in paths} == {(a, b) for a in (1, 2, 3) for b in (1, 2, 3) if a != b}
    p = next(p for p in paths if (p.src, p.dst) == (1, 2))
    assert p.hops == (Hop(1, 0, None), Hop(0, 1, None))


# ---------------------------------------------------------------------------------------
# compile_paths + lookup
# ---------------------------------------------------------------------------------------
def _follow_and_check(circuits, paths, tables):
    """Every path's decisions == the lookup candidates; following them reaches dst."""
    n = 1 + max(max(c.n1, c.n2) for c in circuits)
    ports = 1 + max(max(c.p1, c.p2) for c in circuits)
    table = schedule_table(circuits, n, ports)
    s = table.shape[0]
    expected = defaultdict(set)  # (node, src, dst, arr) -> actions of all paths
    for p in paths:
        arr = p.ts
        for h in p.hops:
            expected[(h.node, p.src, p.dst, arr)].add((h.port, h.dep_ts))
            arr = h.dep_ts if h.dep_ts is not None else arr
    for p in paths:
        node, arr = p.src, p.ts
        for i, h in enumerate(p.hops):
            assert node == h.node
            cands = lookup(tables.get(node, []), p.src, p.dst, arr)
            acts = {(e.port, e.dep_ts) for e in cands}
            assert (h.port, h.dep_ts) in acts
            assert acts == expected[(node, p.src, p.dst, arr)]
            peer = table[(h.dep_ts if h.dep_ts is not None else arr or 0) % s, node * ports + h.port]
            assert peer >= 0
            node = int(peer) // ports
            arr = h.dep_ts if h.dep_ts is not None else arr
        assert node == p.dst


@pytest.mark.parametrize("n", [4, 5, 8])
@pytest.mark.parametrize("u", [1, 2])
@pytest.mark.parametrize("router", [direct, vlb])
def test_compile_paths_reproduces_paths(n, u, router):
    circuits = round_robin(n, uplink=u)
    paths = router(circuits)
    tables = compile_paths(paths, lookup="hop")
    _follow_and_check(circuits, paths, tables)
    for node, entries in tables.items():
        assert len(entries) == len(set(entries))
        assert all(isinstance(e, Entry) for e in entries)
    assert compile_paths(list(reversed(paths))) == tables  # deterministic


def test_compile_paths_first_hops_exact_later_hops_compressed():
    paths = vlb(round_robin(8, uplink=2))
    tables = compile_paths(paths)
    firsts = {(p.hops[0].node, p.src, p.dst, p.ts) for p in paths}
    for node, entries in tables.items():
        for e in entries:
            if e.src is not None:
                assert e.src == node or (node, e.src, e.dst, e.arr_ts) not in firsts
    assert any(e.src is None for es in tables.values() for e in es)
    for p in paths:  # the first hop is installed with the exact source
        h = p.hops[0]
        assert Entry(p.ts, p.src, p.dst, h.dep_ts, h.port) in tables[p.src]


def test_compile_paths_groups_with_different_actions_keep_src():
    paths = [Path(0, 3, 0, [Hop(0, 0, 0), Hop(1, 0, 1)]),
             Path(2, 3, 1, [Hop(2, 0, 0), Hop(1, 1, 2)]),   # same (node 1, arr 0, dst 3)
             Path(4, 3, 0, [Hop(4, 0, 1), Hop(1, 0, 1)]),   # (node 1, arr 1, dst 3) alone
             Path(5, 3, 0, [Hop(5, 0, 1), Hop(1, 0, 1)])]   # same actions as source 4
    t = compile_paths(paths)
    assert t[1] == [Entry(1, None, 3, 1, 0), Entry(0, 0, 3, 1, 0), Entry(0, 2, 3, 2, 1)]
    assert t[0] == [Entry(0, 0, 3, 0, 0)]
    assert [(e.port, e.dep_ts) for e in lookup(t[1], 0, 3, 0)] == [(0, 1)]
    assert [(e.port, e.dep_ts) for e in lookup(t[1], 2, 3, 0)] == [(1, 2)]
    assert [(e.port, e.dep_ts) for e in lookup(t[1], 5, 3, 1)] == [(0, 1)]


def test_compile_paths_multipath_alternatives():
    paths = [Path(0, 3, 0, [Hop(0, 0, 0), Hop(1, 0, 1)]),
             Path(0, 3, 0, [Hop(0, 1, 0), Hop(2, 0, 2)]),
             Path(0, 3, 0, [Hop(0, 1, 0), Hop(2, 0, 2)])]  # duplicate
    t = compile_paths(paths)
    assert t[0] == [Entry(0, 0, 3, 0, 0), Entry(0, 0, 3, 0, 1)]
    assert len(lookup(t[0], 0, 3, 0)) == 2


def test_compile_paths_decompresses_shadowed_group():
    # node 1 needs per-source static entries (sources 0 and 2 differ); source 0's timed
    # path through node 1 would be shadowed by them if installed with src=None.
    paths = [Path(0, 3, None, [Hop(0, 0, None), Hop(1, 0, None)]),
             Path(2, 3, None, [Hop(2, 0, None), Hop(1, 1, None)]),
             Path(0, 3, 5, [Hop(0, 1, 5), Hop(1, 2, 6)])]
    t = compile_paths(paths)
    assert Entry(5, 0, 3, 6, 2) in t[1]
    assert [(e.port, e.dep_ts) for e in lookup(t[1], 0, 3, 5)] == [(2, 6)]
    assert [(e.port, e.dep_ts) for e in lookup(t[1], 0, 3, None)] == [(0, None)]
    assert [(e.port, e.dep_ts) for e in lookup(t[1], 2, 3, None)] == [(1, None)]


def test_compile_paths_static_ecmp():
    leaf_spine = [Circuit(t, s, 4 + s, t) for t in range(4) for s in range(2)]
    paths = ecmp(leaf_spine, endpoints=range(4))
    tables = compile_paths(paths)
    _follow_and_check(leaf_spine, paths, tables)
    # spines forward by destination only: one wildcard entry per destination
    assert tables[4] == [Entry(None, None, d, None, d) for d in range(4)]


def test_compile_routes_and_lookup_argument():
    paths = vlb(round_robin(4))
    routes = compile_routes(paths)
    assert compile_paths(paths, lookup="source") == routes
    assert len(routes) == len(paths)
    assert routes[0] == (0, 1, 0, [(0, 1), (0, 2)])
    assert routes == sorted(routes, key=lambda r: (r[0], r[1], r[2], r[3]))
    with pytest.raises(ConfigError) as e:
        compile_paths(paths, lookup="hops")
    assert e.value.field == "lookup" and "hops" in str(e.value)


@pytest.mark.parametrize("bad", [
    Path(0, 0, 0, [Hop(0, 0, 0)]),
    Path(0, 3, 0, []),
    Path(0, 3, 0, [Hop(1, 0, 0)]),
    Path(0, 3, -1, [Hop(0, 0, 0)]),
    Path(0, 3, 0, [Hop(0, 0, 0), Hop(3, 0, 1)]),
    Path(0, 3, 0, [Hop(0, -1, 0)]),
    (0, 3, 0),
])
def test_compile_paths_rejects_bad_paths(bad):
    good = Path(1, 2, 0, [Hop(1, 0, 0)])
    for fn in (compile_paths, compile_routes):
        with pytest.raises(ConfigError) as e:
            fn([good, bad])
        assert e.value.field == "paths[1]"


def test_lookup_rule():
    es = [Entry(None, None, 3, None, 9), Entry(0, None, 3, 2, 0), Entry(None, 7, 3, None, 5),
          Entry(1, 7, 3, 4, 6), Entry(0, None, 4, 1, 1)]
    assert lookup(es, 1, 3, 0) == [Entry(0, None, 3, 2, 0)]
    assert lookup(es, 1, 3, 2) == [Entry(None, None, 3, None, 9)]
    assert lookup(es, 7, 3, 0) == [Entry(None, 7, 3, None, 5)]  # src beats arr_ts
    assert lookup(es, 7, 3, 1) == [Entry(1, 7, 3, 4, 6)]
    assert lookup(es, 1, 4, 1) == []
    assert lookup([tuple(e) for e in es], 1, 4, 0) == [Entry(0, None, 4, 1, 1)]


# ---------------------------------------------------------------------------------------
# ECMP / KSP
# ---------------------------------------------------------------------------------------
def _leaf_spine(tors, spines, links=1):
    """ToR t port s*links+k <-> spine (tors+s) port t*links+k, all static."""
    return [Circuit(t, s * links + k, tors + s, t * links + k)
            for t in range(tors) for s in range(spines) for k in range(links)]


@pytest.mark.parametrize("tors,spines", [(4, 2), (4, 3), (6, 4)])
def test_ecmp_leaf_spine(tors, spines):
    paths = ecmp(_leaf_spine(tors, spines), endpoints=range(tors))
    per_pair = Counter((p.src, p.dst) for p in paths)
    assert per_pair == Counter({(a, b): spines for a in range(tors) for b in range(tors) if a != b})
    for p in paths:
        assert len(p.hops) == 2 and p.ts is None
        assert all(h.dep_ts is None for h in p.hops)
        assert p.hops[1].node == tors + p.hops[0].port  # via the spine of the chosen uplink
        assert p.hops[1].port == p.dst
    vias = defaultdict(set)
    for p in paths:
        vias[(p.src, p.dst)].add(p.hops[1].node)
    assert all(len(v) == spines for v in vias.values())


def test_ecmp_parallel_links_and_default_endpoints():
    paths = ecmp(_leaf_spine(2, 1, links=2), endpoints=[0, 1])
    assert len(paths) == 2 * 4  # 2 parallel links up x 2 down, both directions
    everyone = ecmp(_leaf_spine(3, 2))
    assert {p.src for p in everyone} == set(range(5))
    assert Counter((p.src, p.dst) for p in everyone)[(3, 4)] == 3  # spine->spine via 3 ToRs
    with pytest.raises(ConfigError) as e:
        ecmp(_leaf_spine(2, 1), endpoints=[0, 9])
    assert e.value.field == "endpoints"


def test_ksp_ring():
    ring = [Circuit(i, 0, (i + 1) % 6, 1) for i in range(6)]
    paths = ksp(ring, k=4, endpoints=[0, 3])
    got = [p.nodes for p in paths if p.src == 0]
    assert sorted(got) == [[0, 1, 2], [0, 5, 4]]  # only two simple paths exist
    paths = ksp(ring, k=1, endpoints=[0, 1])
    assert [p.nodes for p in paths if p.src == 0] == [[0]]
    assert [len(ksp(ring, k=k, endpoints=[0, 2])) for k in (1, 2, 3)] == [2, 4, 4]
    with pytest.raises(ConfigError):
        ksp(ring, k=0)


def test_ksp_leaf_spine_counts_port_variants():
    paths = ksp(_leaf_spine(4, 3), k=2, endpoints=range(4))
    assert Counter((p.src, p.dst) for p in paths) == Counter(
        {(a, b): 2 for a in range(4) for b in range(4) if a != b})
    assert all(len(p.hops) == 2 for p in paths)


# ---------------------------------------------------------------------------------------
# earliest_path
# ---------------------------------------------------------------------------------------
def test_earliest_path_n4_by_hand():
    rr = round_robin(Config(nodes=4, uplinks=1))
    p1 = earliest_path(rr, 0, 3, 0, max_hop=1)
    assert p1 == Path(0, 3, 0, [Hop(0, 0, 2)])
    p2 = earliest_path(rr, 0, 3, 0, max_hop=2)
    assert p2 == Path(0, 3, 0, [Hop(0, 0, 0), Hop(1, 0, 1)])
    assert earliest_path(rr, 0, 3, 2, max_hop=2) == Path(0, 3, 2, [Hop(0, 0, 2)])
    assert earliest_path(rr, 0, 1, 1, max_hop=3).hops == (Hop(0, 0, 1), Hop(2, 0, 2))
    # static view: one direct hop, no slices
    assert earliest_path(rr, 0, 3, None, max_hop=2) == Path(0, 3, None, [Hop(0, 0, None)])


def test_earliest_path_multi_hop_in_one_slice():
    # slice 0: 0-1 (port 0), 1-2 (port 1); slice 1: 0-2
    c = [Circuit(0, 0, 1, 0, 0), Circuit(1, 1, 2, 0, 0), Circuit(0, 0, 2, 1, 1)]
    assert earliest_path(c, 0, 2, 0, 2).hops == (Hop(0, 0, 0), Hop(1, 1, 0))
    assert earliest_path(c, 0, 2, 0, 1).hops == (Hop(0, 0, 1),)
    assert earliest_path(c, 0, 2, 1, 1).hops == (Hop(0, 0, 1),)
    assert earliest_path([Circuit(0, 0, 1, 0, 0), Circuit(2, 0, 3, 0, 0)], 0, 3, 0, 3) is None


def _brute_earliest(circuits, src, dst, ts, max_hop):
    s = cycle_length(circuits)
    at = defaultdict(list)
    for c in circuits:
        at[(c.n1, c.ts)].append((c.p1, c.n2))
        at[(c.n2, c.ts)].append((c.p2, c.n1))
    best = None

    def rec(node, off, seq):
        nonlocal best
        if len(seq) == max_hop:
            return
        for o2 in range(off, s):
            for port, peer in at[(node, (ts + o2) % s)]:
                cand = seq + [(o2, port, peer)]
                if peer == dst:
                    key = (o2, len(cand), cand)
                    if best is None or key < best:
                        best = key
                elif peer not in {src} | {x[2] for x in seq}:
                    rec(peer, o2, cand)

    rec(src, 0, [])
    return best


@pytest.mark.parametrize("n,u,max_hop", [(5, 1, 3), (6, 2, 3), (8, 1, 2), (8, 2, 3), (7, 3, 2)])
def test_earliest_path_matches_brute_force(n, u, max_hop):
    circuits = round_robin(n, uplink=u)
    s = cycle_length(circuits)
    for src, dst in [(0, n - 1), (1, 2), (n - 1, 0), (2, n // 2 + 1)]:
        for ts in range(s):
            got = earliest_path(circuits, src, dst, ts, max_hop)
            ref = _brute_earliest(circuits, src, dst, ts, max_hop)
            assert ref is not None and got is not None
            off, k, seq = ref
            assert len(got.hops) == k
            assert [((h.dep_ts - ts) % s, h.port) for h in got.hops] == [(o, p) for o, p, _ in seq]
            assert [h.node for h in got.hops] == [src] + [x[2] for x in seq[:-1]]


def test_earliest_path_hd_needs_several_hops():
    circuits = round_robin(16, dimension=2)  # 0 and 5 differ in both coordinates
    assert earliest_path(circuits, 0, 5, 0, 1) is None
    p = earliest_path(circuits, 0, 5, 0, 2)
    assert len(p.hops) == 2
    assert all(h.dep_ts is not None for h in p.hops)


def test_earliest_path_bad_arguments():
    rr = round_robin(4)
    for args, field in [((0, 9, 0, 2), "dst"), ((7, 1, 0, 2), "src"), ((0, 0, 0, 2), "dst"),
                        ((0, 1, 3, 2), "ts"), ((0, 1, -1, 2), "ts"), ((0, 1, 0, 0), "max_hop")]:
        with pytest.raises(ConfigError) as e:
            earliest_path(rr, *args)
        assert e.value.field == field


def test_schedule_table_refuses_absurd_cycle():
    with pytest.raises(ConfigError) as e:
        schedule_table([Circuit(0, 0, 1, 0, 0), Circuit(0, 0, 1, 0, 10**12)], 2, 1)
    assert e.value.field == "circuits[1]"
    assert "slice 1000000000000" in str(e.value) and "node 0" in str(e.value)
