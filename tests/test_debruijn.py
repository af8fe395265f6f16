"""Duo's algorithms (opendcn.fabrics.debruijn): the de Bruijn backbone as b matchings, greedy
longest-prefix-match tables (Alg. 1) and routing, local table updates, and the centralized
Greedy-DA-links scheduler (Alg. 2) — against exact oracles: breadth-first search on the
de Bruijn edge definition, brute-force longest-match painting, the worked DB(2,3) example
of the paper (Fig. 3–4), and a maximum bipartite matching from scipy."""

from __future__ import annotations

import itertools
from collections import Counter, deque

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from opendcn.fabrics import debruijn as db
from opendcn.fabrics.debruijn import (LOCAL, Prefix, build_table, build_tables, compile_entries, db_distance,
                              flow_entries, format_label, format_table, from_label, greedy_da,
                              greedy_route, greedy_routes, kept_links, label, lookup, overlap,
                              render_table, self_loop_ports, static_successors, table_sizes,
                              update_port)
from opendcn.errors import ConfigError
from opendcn.network.timeflow import Circuit, Entry
from opendcn.fabrics.topology import de_bruijn, schedule_table

SIZES = [(2, 2), (2, 3), (2, 4), (3, 2), (3, 3), (4, 2), (2, 6)]


def db_edges(b: int, d: int) -> list[tuple[int, int]]:
    """The de Bruijn edge list by definition: v -> (v_2..v_d, x) for every symbol x."""
    n = b**d
    return [(v, (v * b) % n + x) for v in range(n) for x in range(b)]


def bfs_distances(b: int, d: int) -> np.ndarray:
    n = b**d
    adj: dict[int, list[int]] = {v: [] for v in range(n)}
    for v, w in db_edges(b, d):
        adj[v].append(w)
    dist = np.full((n, n), -1, dtype=np.int64)
    for s in range(n):
        dist[s, s] = 0
        q = deque([s])
        while q:
            v = q.popleft()
            for w in adj[v]:
                if dist[s, w] < 0:
                    dist[s, w] = dist[s, v] + 1
                    q.append(w)
    return dist


def with_da(static: np.ndarray, da: np.ndarray) -> np.ndarray:
    return np.vstack([static, np.asarray(da, dtype=np.int64).reshape(-1, static.shape[1])])


def random_da(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    return np.array([rng.permutation(n) for _ in range(k)], dtype=np.int64).reshape(k, n)


B3 = 2, 3  # the paper's worked example DB(2,3)


def lbl(s: str) -> int:
    return int(s, 2)


# ---------------------------------------------------------------------------------------
# labels and distance
# ---------------------------------------------------------------------------------------
def test_labels_round_trip_and_order():
    assert label(6, 2, 3) == (1, 1, 0)
    assert label(5, 3, 2) == (1, 2)
    assert format_label(lbl("011"), 2, 3) == "011"
    for b, d in [(2, 3), (3, 3), (5, 2)]:
        labels = [label(v, b, d) for v in range(b**d)]
        assert labels == sorted(itertools.product(range(b), repeat=d))  # MSB first
        assert [from_label(x, b) for x in labels] == list(range(b**d))


@pytest.mark.parametrize("b,d", [(2, 3), (2, 4), (3, 3)])
def test_db_distance_equals_bfs_on_the_edge_definition(b, d):
    dist = bfs_distances(b, d)
    n = b**d
    got = np.array([[db_distance(v, w, b, d) for w in range(n)] for v in range(n)])
    assert (got == dist).all()
    assert overlap(lbl("011"), lbl("110"), 2, 3) == 2 and overlap(5, 5, 2, 3) == 3
    assert db_distance(lbl("011"), lbl("001"), *B3) == 3


# ---------------------------------------------------------------------------------------
# backbone
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("b,d", SIZES)
def test_matchings_are_bijections_whose_union_is_the_db_edge_multiset(b, d):
    succ = static_successors(b, d)
    n = b**d
    assert succ.shape == (b, n)
    for row in succ:
        assert sorted(row.tolist()) == list(range(n))  # a perfect matching
    union = Counter((v, int(w)) for row in succ for v, w in enumerate(row))
    assert union == Counter(db_edges(b, d))             # every edge once, loops included
    loops = sorted((v, j) for j, row in enumerate(succ) for v, w in enumerate(row) if v == w)
    assert loops == self_loop_ports(b, d)
    assert [label(v, b, d) for v, _ in loops] == [(c,) * d for c in range(b)]


def test_matching_j_appends_first_symbol_plus_j():
    succ = static_successors(3, 3)
    for v in range(27):
        v1, v2, v3 = label(v, 3, 3)
        for j in range(3):
            assert label(int(succ[j, v]), 3, 3) == (v2, v3, (v1 + j) % 3)


@pytest.mark.parametrize("b,d,first", [(2, 3, 0), (3, 2, 2), (2, 6, 1)])
def test_de_bruijn_circuits(b, d, first):
    circuits = de_bruijn(b, d, first_port=first)
    n = b**d
    assert len(circuits) == b * n - b  # every matching edge but the b idle self-loops
    assert all(c.directed and c.ts is None and c.p1 == c.p2 for c in circuits)
    succ = static_successors(b, d)
    assert {(c.n1, c.p1, c.n2) for c in circuits} == {
        (v, first + j, int(succ[j, v])) for j in range(b) for v in range(n) if succ[j, v] != v}
    table = schedule_table(circuits, nodes=n, ports=first + b)  # feasible: no port twice
    idle = {v * (first + b) + first + j for v, j in self_loop_ports(b, d)}
    assert {g for g in range(table.shape[1]) if table[0, g] < 0} == \
        idle | {v * (first + b) + p for v in range(n) for p in range(first)}


def test_de_bruijn_first_example_is_exact():
    assert de_bruijn(2, 2)[:2] == [Circuit(1, 0, 2, 0, None, True), Circuit(2, 0, 1, 0, None, True)]


@pytest.mark.parametrize("kwargs,field", [
    (dict(b=1, d=3), "b"), (dict(b=2.0, d=3), "b"), (dict(b=True, d=3), "b"),
    (dict(b=2, d=0), "d"), (dict(b=2, d="3"), "d"), (dict(b=2, d=40), "d"),
    (dict(b=2, d=3, first_port=-1), "first_port"),
])
def test_de_bruijn_bad_input(kwargs, field):
    with pytest.raises(ConfigError) as e:
        de_bruijn(**kwargs)
    assert e.value.field == field
    assert e.value.value == kwargs[field]


def test_label_and_node_errors():
    with pytest.raises(ConfigError) as e:
        label(8, 2, 3)
    assert (e.value.field, e.value.value) == ("v", 8)
    with pytest.raises(ConfigError) as e:
        from_label((0, 2), 2)
    assert e.value.field == "symbols"
    with pytest.raises(ConfigError) as e:
        build_table(0, [(0, 1), (0, 2)], 2, 3)
    assert e.value.field == "neighbours"
    with pytest.raises(ConfigError) as e:
        build_tables(np.zeros((2, 5), dtype=np.int64), 2, 3)
    assert e.value.field == "succ"


# ---------------------------------------------------------------------------------------
# Alg. 1 and the worked example (Fig. 3-4)
# ---------------------------------------------------------------------------------------
def test_alg1_entries_of_a_neighbour():
    # z = 110: z3** (length 3 path), z2z3* (2), z1z2z3 (1)
    assert [db.format_prefix(p, 2, 3) for p in db.alg1_entries(lbl("110"), 2, 3)] == ["110", "10*", "0**"]


def test_worked_example_static_table_and_route():
    tables = build_tables(static_successors(*B3), *B3)
    t = tables[lbl("011")]
    assert dict(t.neighbours) == {0: lbl("110"), 1: lbl("111")}
    # 1** and 11* are never a longest match at 011 and are gone (Fig. 3c)
    assert render_table(t) == [("011", (LOCAL,)), ("110", (0,)), ("111", (1,)), ("10*", (0,)), ("0**", (0,))]
    route = greedy_route(lbl("011"), lbl("001"), tables)
    assert [format_label(v, *B3) for v in route] == ["011", "110", "100", "001"]


def test_worked_example_with_a_da_link():
    da = np.full((1, 8), -1)
    da[0, lbl("011")] = lbl("100")
    tables = build_tables(with_da(static_successors(*B3), da), *B3)
    t = tables[lbl("011")]
    assert [format_label(v, *B3) for v in greedy_route(lbl("011"), lbl("001"), tables)] == ["011", "100", "001"]
    assert t.entries[Prefix(1, 0)] == (0, 2)  # 0** via static 110 and DA 100
    assert lookup(t, lbl("010")) == [0, 2]
    routes = greedy_routes(lbl("011"), lbl("010"), tables)
    assert [[format_label(v, *B3) for v in r] for r in routes] == [
        ["011", "110", "101", "010"], ["011", "100", "001", "010"]]
    assert format_table(t).splitlines()[-1] == "0** -> 0,2"


def brute_table(v, neighbours, b, d):
    """Alg. 1 verbatim (self-loop neighbours included, Local replacing a full-length entry
    equal to the own address), reduced by painting: keep an entry iff it is the longest
    match of some destination."""
    n = b**d
    merged: dict[tuple[int, int], set[int]] = {}
    for port, w in neighbours:
        z = label(w, b, d)
        for j in range(d):
            merged.setdefault((d - j, from_label(z[j:], b)), set()).add(port)
    merged[(d, v)] = {LOCAL}
    best: dict[int, tuple[int, int]] = {}
    for t in range(n):
        for length in range(d, 0, -1):
            key = (length, t // b ** (d - length))
            if key in merged:
                best[t] = key
                break
    return {Prefix(*k): tuple(sorted(merged[k])) for k in set(best.values())}


@pytest.mark.parametrize("b,d,k", [(2, 3, 0), (3, 3, 0), (2, 5, 0), (2, 4, 2), (3, 2, 1), (2, 5, 3)])
def test_reduced_table_equals_brute_force_longest_match(b, d, k):
    rng = np.random.default_rng(7 + k)
    n = b**d
    succ = with_da(static_successors(b, d), random_da(rng, k, n))
    tables = build_tables(succ, b, d)
    for v in range(n):
        # the oracle keeps the static self-loop and any DA self-loop: Alg. 1 verbatim
        nbrs = [(p, int(succ[p, v])) for p in range(succ.shape[0])]
        assert dict(tables[v].entries) == brute_table(v, nbrs, b, d), v
        assert compile_entries(tables[v]) == [lookup(tables[v], t) for t in range(n)]


def test_local_wins_against_a_self_loop():
    b, d = B3
    nbrs = [(0, 0), (1, 1)]  # node 000: its self-loop on port 0, 001 on port 1
    t = build_table(0, nbrs, b, d)
    assert t.entries[Prefix(3, 0)] == (LOCAL,)
    assert lookup(t, 0) == [LOCAL]
    assert dict(t.entries) == brute_table(0, nbrs, b, d) == dict(build_table(0, [(1, 1)], b, d).entries)


# ---------------------------------------------------------------------------------------
# greedy routing
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("b,d", [(2, 3), (2, 4), (3, 3), (2, 6)])
def test_static_lpm_route_length_is_the_db_distance_for_every_pair(b, d):
    n = b**d
    tables = build_tables(static_successors(b, d), b, d)
    dist = bfs_distances(b, d)
    for s in range(n):
        for t in range(n):
            route = greedy_route(s, t, tables)
            assert route[0] == s and route[-1] == t
            assert len(route) - 1 == dist[s, t], (s, t)


@pytest.mark.parametrize("b,d,k", [(2, 4, 0), (3, 3, 0), (2, 4, 2), (3, 3, 1)])
def test_lookup_gives_exactly_the_neighbours_nearest_to_the_destination(b, d, k):
    rng = np.random.default_rng(11)
    n = b**d
    succ = with_da(static_successors(b, d), random_da(rng, k, n))
    tables = build_tables(succ, b, d)
    for v in range(n):
        for t in range(n):
            if t == v:
                assert lookup(tables[v], t) == [LOCAL]
                continue
            dists = {p: db_distance(int(succ[p, v]), t, b, d) for p in range(succ.shape[0]) if succ[p, v] != v}
            best = min(dists.values())
            assert lookup(tables[v], t) == sorted(p for p, x in dists.items() if x == best)


@pytest.mark.parametrize("k", range(1, 7))
def test_routes_with_random_da_matchings_shrink_the_distance_every_hop(k):
    b, d = 2, 6
    n = b**d
    rng = np.random.default_rng(100 + k)
    tables = build_tables(with_da(static_successors(b, d), random_da(rng, k, n)), b, d)
    dist = bfs_distances(b, d).tolist()  # == db_distance (tested above)
    assert table_sizes(tables).max() <= (b + k) * d  # Thm. 3.2: O(k log n) entries
    for s in range(n):
        for t in range(n):
            route = greedy_route(s, t, tables)
            dists = [dist[v][t] for v in route]
            assert all(x > y for x, y in zip(dists, dists[1:])), route
            assert len(route) - 1 <= dist[s][t] <= d
    alternatives = 0
    for s in range(0, n, 3):
        for t in range(n):
            routes = greedy_routes(s, t, tables)
            assert routes[0] == greedy_route(s, t, tables)
            assert len(routes) == len({tuple(r) for r in routes})
            alternatives += len(routes) > 1
            for r in routes:
                dists = [dist[v][t] for v in r]
                assert all(x > y for x, y in zip(dists, dists[1:])) and r[-1] == t
            # the alternatives of one lookup lead to neighbours at one distance
            for i in range(1, max(map(len, routes)) - 1):
                at = {(tuple(r[:i]), dist[r[i]][t]) for r in routes if len(r) > i}
                assert len({p for p, _ in at}) == len(at)
    assert alternatives > 0


def test_route_errors():
    tables = build_tables(static_successors(*B3), *B3)
    with pytest.raises(ConfigError) as e:
        greedy_route(0, 8, tables)
    assert (e.value.field, e.value.value) == ("dst", 8)
    broken = list(tables)
    broken[3] = update_port(update_port(tables[3], 0, None), 1, None)  # 011 loses both links
    with pytest.raises(ConfigError) as e:
        greedy_route(3, 1, broken)
    assert (e.value.field, e.value.value) == ("dst", 1)


# ---------------------------------------------------------------------------------------
# table sizes (Obs. 2, Claim 1)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("b,d", SIZES + [(2, 7), (3, 4), (5, 3)])
def test_static_table_size_at_most_b_d_and_reached(b, d):
    sizes = table_sizes(build_tables(static_successors(b, d), b, d))  # Local counted
    assert sizes.max() == b * d
    no_local = table_sizes(build_tables(static_successors(b, d), b, d), include_local=False)
    assert (no_local == sizes - 1).all()


@pytest.mark.parametrize("b,d", [(2, 4), (2, 6), (3, 3), (4, 2)])
def test_table_size_with_one_da_matching_at_most_b_plus_1_times_d(b, d):
    rng = np.random.default_rng(3)
    n = b**d
    static = static_successors(b, d)
    for _ in range(15):
        sizes = table_sizes(build_tables(with_da(static, random_da(rng, 1, n)), b, d))
        assert sizes.max() <= (b + 1) * d


def test_rows_count_multipath_ports_and_flow_entries():
    da = np.full((1, 8), -1)
    da[0, lbl("011")] = lbl("100")
    t = build_tables(with_da(static_successors(*B3), da), *B3)[lbl("011")]
    assert db.entry_count(t) == 7 and db.entry_count(t, rows=True) == 8
    assert db.entry_count(t, include_local=False) == 6
    rows = flow_entries(t)
    assert len(rows) == 8 and all(r.dst != lbl("011") for r in rows)
    assert [r for r in rows if r.dst == lbl("010")] == [Entry(None, None, 2, None, 0), Entry(None, None, 2, None, 2)]


# ---------------------------------------------------------------------------------------
# local updates
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("b,d,k,seed", [(2, 5, 3, 1), (3, 3, 2, 2), (2, 4, 6, 3)])
def test_update_port_equals_full_rebuild(b, d, k, seed):
    rng = np.random.default_rng(seed)
    n = b**d
    succ = with_da(static_successors(b, d), np.full((k, n), -1))
    tables = build_tables(succ, b, d)
    for step in range(150):
        v = int(rng.integers(n))
        port = b + int(rng.integers(k))
        w = None if rng.random() < 0.25 else int(rng.integers(n))
        succ[port, v] = -1 if w is None else w
        tables[v] = update_port(tables[v], port, w)
        if step % 25:
            assert tables[v] == build_table(v, [(p, int(succ[p, v])) for p in range(b + k) if succ[p, v] >= 0], b, d)
        else:
            assert tables == build_tables(succ, b, d)
    # a static port may be changed too (e.g. a failed link)
    assert update_port(tables[0], 1, None) == build_table(
        0, [(p, int(succ[p, 0])) for p in range(succ.shape[0]) if p != 1 and succ[p, 0] >= 0], b, d)


# ---------------------------------------------------------------------------------------
# Greedy-DA-links (Alg. 2)
# ---------------------------------------------------------------------------------------
def assert_partial_matchings(da: np.ndarray, n: int) -> None:
    for row in da.tolist():
        targets = [t for t in row if t >= 0]
        assert len(targets) == len(set(targets))          # every ingress at most once
        assert all(0 <= t < n for t in targets)
        assert all(t != s for s, t in enumerate(row))      # no DA self-loop


@pytest.mark.parametrize("seed", range(5))
def test_greedy_da_builds_complete_matchings(seed):
    b, d, k = 2, 6, 6
    n = b**d
    rng = np.random.default_rng(seed)
    dem = rng.pareto(1.2, (n, n)) * (rng.random((n, n)) < 0.2)
    static = static_successors(b, d)
    da = greedy_da(dem, k, None, static, rng)
    assert da.shape == (k, n) and da.dtype == np.int64
    assert_partial_matchings(da, n)
    for row in da.tolist():  # leftovers filled; a port idles only if a self-loop was all that was left
        idle = [s for s, t in enumerate(row) if t < 0]
        assert idle == [] or (len(idle) == 1 and idle[0] not in row)
    # the greedy tables stay within d hops with these DA links
    tables = build_tables(with_da(static, da), b, d)
    for s in range(0, n, 7):
        for t in range(n):
            assert len(greedy_route(s, t, tables)) - 1 <= d


def test_larger_demand_wins_the_port():
    dem = np.zeros((4, 4))
    dem[0, 1], dem[3, 1], dem[0, 2] = 10, 7, 5
    da = greedy_da(dem, 1, None, None, 0, passes=1)
    assert da[0, 0] == 1           # 0 -> 1 (10) first
    assert da[0, 3] != 1           # 3 -> 1 (7) lost ingress 1 to it
    da2 = greedy_da(dem, 2, None, None, 0, passes=1)
    assert da2[:, 0].tolist() == [1, 2] and da2[1, 3] == 1  # the second switch serves both
    dem[3, 1] = 12                 # now 3 -> 1 is larger and takes ingress 1 of switch 0
    da3 = greedy_da(dem, 1, None, None, 0, passes=1)
    assert da3[0, 3] == 1 and da3[0, 0] == 2


def test_ties_broken_by_pair_and_passes_add_links():
    dem = np.zeros((4, 4))
    dem[2, 1] = dem[0, 1] = 5      # equal: (0, 1) before (2, 1)
    da = greedy_da(dem, 1, None, None, 0, passes=1)
    assert da[0, 0] == 1 and da[0, 2] != 1
    one = np.zeros((4, 4))
    one[0, 3] = 1.0
    assert greedy_da(one, 3, None, None, 0, passes=1, fill=False)[:, 0].tolist() == [3, -1, -1]
    assert greedy_da(one, 3, None, None, 0, passes=2, fill=False)[:, 0].tolist() == [3, 3, -1]
    assert greedy_da(one, 3, None, None, 0, fill=False)[:, 0].tolist() == [3, 3, 3]  # until nothing is added


def test_only_the_largest_k_d_n_demands_are_selected():
    # n = 4, k_d = 1: the 4 largest demands are selected; 2 -> 3 is the fifth and is not
    # served although its ports stay free
    dem = np.zeros((4, 4))
    dem[0, 1], dem[0, 2], dem[0, 3], dem[1, 0], dem[2, 3] = 9, 8, 7, 6, 1
    assert greedy_da(dem, 1, None, None, 0, fill=False).tolist() == [[1, 0, -1, -1]]
    dem[2, 3] = 6.5  # now it is selected, and 1 -> 0 (the fifth) is not
    assert greedy_da(dem, 1, None, None, 0, fill=False).tolist() == [[1, -1, 3, -1]]
    dem[2, 3] = 1
    assert greedy_da(dem, 1, None, None, 0, v_th=6, fill=False).tolist() == [[1, -1, -1, -1]]


def test_existing_link_is_kept_on_its_switch():
    n = 8
    dem = np.zeros((n, n))
    dem[0, 1] = 10
    cur = np.full((3, n), -1)
    cur[2, 0] = 1
    da = greedy_da(dem, 3, cur, None, 0, passes=1, fill=False)
    assert da[:, 0].tolist() == [-1, -1, 1]
    assert kept_links(cur, da)[2, 0]
    assert greedy_da(dem, 3, cur, None, 0, passes=1)[2, 0] == 1  # also with the leftovers
    literal = greedy_da(dem, 3, cur, None, 0, passes=1, prefer_existing=False, fill=False)
    assert literal[:, 0].tolist() == [1, -1, -1] and not kept_links(cur, literal).any()
    # a larger demand that needs the port takes it: the kept link moves
    dem[0, 5] = 20
    cur2 = np.full((1, n), -1)
    cur2[0, 0] = 1
    da2 = greedy_da(dem, 1, cur2, None, 0, passes=1)
    assert da2[0, 0] == 5 and not kept_links(cur2, da2)[0, 0]


@pytest.mark.parametrize("seed", range(4))
def test_rerun_with_same_demand_reconfigures_nothing(seed):
    b, d, k = 2, 5, 4
    n = b**d
    rng = np.random.default_rng(seed)
    dem = rng.random((n, n)) * (rng.random((n, n)) < 0.1)
    static = static_successors(b, d)
    first = greedy_da(dem, k, None, static, rng)
    again = greedy_da(dem, k, first, static, rng)
    assert (again == first).all() and kept_links(first, again).all()


def test_leftovers_parallel_to_static_links_when_possible():
    b, d = B3
    n = 8
    static = static_successors(b, d)
    da = greedy_da(np.zeros((n, n)), 2, None, static, 0)
    for i in range(2):
        for s in range(n):
            assert da[i, s] in static[:, s] and da[i, s] != s  # all parallel, every port used


@pytest.mark.parametrize("seed", range(6))
def test_leftover_parallel_links_are_a_maximum_matching(seed):
    # the demand links stay as they are, and the number of links parallel to static ones
    # among the other ports of a switch is the largest that fits (scipy as the oracle)
    b, d, k = 2, 4, 2
    n = b**d
    rng = np.random.default_rng(seed)
    dem = rng.random((n, n)) * (rng.random((n, n)) < 0.15)
    static = static_successors(b, d)
    demand_only = greedy_da(dem, k, None, static, 0, fill=False)
    da = greedy_da(dem, k, None, static, 0)
    served = demand_only >= 0
    assert (da[served] == demand_only[served]).all()
    assert served.sum() < k * n  # something was left over
    for i in range(k):
        free_out = [s for s in range(n) if not served[i, s]]
        free_in = sorted(set(range(n)) - set(demand_only[i][served[i]].tolist()))
        w = np.array([[1.0 if (t in static[:, s] and t != s) else 0.0 for t in free_in] for s in free_out])
        r, c = linear_sum_assignment(w, maximize=True)
        got = sum(1 for s in free_out if da[i, s] in static[:, s] and da[i, s] != s)
        assert got == int(w[r, c].sum())
    assert_partial_matchings(da, n)


def test_greedy_da_is_deterministic_for_a_seed():
    n = 16
    dem = np.zeros((n, n))
    dem[0, 5] = 3
    a = greedy_da(dem, 3, None, None, np.random.default_rng(42))
    b = greedy_da(dem, 3, None, None, np.random.default_rng(42))
    c = greedy_da(dem, 3, None, None, 43)
    assert (a == b).all() and (a == greedy_da(dem, 3, None, None, 42)).all()
    assert not (a == c).all()  # random leftovers depend on the seed
    for x in (a, c):
        assert_partial_matchings(x, n)
        assert (x >= 0).all()
        assert x[0, 0] == 5


def test_random_leftover_never_a_self_loop_even_when_forced():
    # one switch, n = 2, no demand, no static preference: the only complete matching
    # is 0 -> 1, 1 -> 0, whatever the permutation drawn
    for seed in range(10):
        assert greedy_da(np.zeros((2, 2)), 1, None, None, seed).tolist() == [[1, 0]]
    # the only free ports of a switch are egress 2 and ingress 2: left unused
    dem = np.zeros((3, 3))
    dem[0, 1] = dem[1, 0] = 1
    assert greedy_da(dem, 1, None, None, 0).tolist() == [[1, 0, -1]]


def test_k_d_zero_gives_no_switch():
    assert greedy_da(np.ones((4, 4)), 0, None, None, 0).shape == (0, 4)


@pytest.mark.parametrize("args,field", [
    (dict(demand=np.zeros((3, 4))), "demand"),
    (dict(demand=np.zeros(3)), "demand"),
    (dict(demand=np.array([[0, -1.0], [0, 0]])), "demand"),
    (dict(demand=np.array([[0, np.nan], [0, 0]])), "demand"),
    (dict(k_d=-1), "k_d"),
    (dict(k_d=1.5), "k_d"),
    (dict(current=np.zeros((2, 3), dtype=np.int64)), "current"),
    (dict(current=np.array([[1, 1, -1, -1]])), "current"),
    (dict(current=np.array([[0, -1, -1, -1]])), "current"),
    (dict(current=np.array([[4, -1, -1, -1]])), "current"),
    (dict(static_succ=np.zeros((2, 3), dtype=np.int64)), "static_succ"),
    (dict(rng="seed"), "rng"),
    (dict(v_th=-1.0), "v_th"),
    (dict(passes=0), "passes"),
])
def test_greedy_da_bad_input(args, field):
    kw = dict(demand=np.zeros((4, 4)), k_d=1, current=None, static_succ=None, rng=0) | args
    with pytest.raises(ConfigError) as e:
        greedy_da(**kw)
    assert e.value.field == field
    if field == "k_d":
        assert e.value.value == args["k_d"]
    if field == "demand" and args["demand"].shape == (2, 2):
        assert e.value.value == args["demand"][0, 1] or np.isnan(e.value.value)


def test_kept_links():
    cur = np.array([[1, 2, 0], [-1, 0, 1]])
    new = np.array([[1, 0, 2], [-1, 0, -1]])
    assert kept_links(cur, new).tolist() == [[True, False, False], [False, True, False]]
    assert not kept_links(None, new).any()
