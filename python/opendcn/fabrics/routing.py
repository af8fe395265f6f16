"""Routing over circuit schedules, and compilation of paths into time-flow tables.

What is modeled: a route is a :class:`~opendcn.network.timeflow.Path` — a list of
``Hop(node, port, dep_ts)`` for packets entering at ``src`` in slice ``ts``. Slices are the
abstract indices ``0..S-1`` of a cyclic schedule (durations live in
:class:`~opendcn.network.config.Config`, in picoseconds); a packet that arrives at a node in slice
``a`` may leave in a later slice ``dep`` (it waits ``(dep - a) mod S`` slices, wrapping into
the next cycle) and may also take several hops inside one slice (as in Opera). For
a static schedule (every circuit ``ts=None``) paths and hops carry ``None`` slices.

Routers (OpenOptics' routing API): :func:`direct`, :func:`vlb` (traffic-oblivious),
:func:`ecmp`, :func:`ksp` (static graphs), and the helpers :func:`neighbors` and
:func:`earliest_path`. They are the reference implementations — built for clarity on
networks of up to a few dozen nodes and slices; the engine's built-in routers for large
networks must decide identically. Each router validates the schedule once (through
:func:`opendcn.fabrics.topology.schedule_table`) and works on a per-slice adjacency view.

Compilation: :func:`compile_paths` turns paths into per-node time-flow entries
(``lookup="hop"``) whose lookup — :func:`lookup`, the reference of the engine's rule
documented in :mod:`opendcn.network.timeflow` — reproduces every path's decisions;
:func:`compile_routes` gives the source-routing form (``lookup="source"``).

Simplifications: routes are computed from the schedule alone (no queue state); ties are
broken deterministically as each function documents, so the same schedule always yields
the same paths in the same order (sorted by src, dst, ts, hops).

>>> from opendcn.fabrics.topology import round_robin
>>> rr = round_robin(4)                       # slices {0-1,2-3}, {0-2,1-3}, {0-3,1-2}
>>> [p.hops for p in direct(rr) if (p.src, p.dst, p.ts) == (0, 3, 0)]
[(Hop(node=0, port=0, dep_ts=2),)]
>>> earliest_path(rr, 0, 3, ts=0, max_hop=2).hops
(Hop(node=0, port=0, dep_ts=0), Hop(node=1, port=0, dep_ts=1))
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, check_memory
from ..network.timeflow import Circuit, Entry, Hop, Path  # noqa: F401  (Circuit: the doctests build circuits)
from .topology import _STATIC, _as_array, _is_int, schedule_table

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["neighbors", "direct", "vlb", "ecmp", "ksp", "earliest_path", "compile_paths",
           "compile_routes", "lookup"]

Action = tuple[int, "int | None"]  # (port, dep_ts)


# ---------------------------------------------------------------------------------------
# schedule view
# ---------------------------------------------------------------------------------------
def _network_schedule(circuits: Any, slices: int | None) -> tuple[Any, int | None]:
    """(circuits, cycle length): a :class:`~opendcn.network.Network` stands for its own
    circuits and its number of slices (an explicit ``slices`` wins); a plain list of
    circuits has the cycle length ``slices`` (None: its largest ``ts`` + 1)."""
    if hasattr(circuits, "circuits") and hasattr(circuits, "slices") and not isinstance(circuits, (list, tuple)):
        net = circuits
        static = getattr(net, "_static", False)
        return list(net.circuits), (slices if slices is not None else (None if static else int(net.slices)))
    if slices is not None and (not _is_int(slices) or slices < 1):
        raise ConfigError("slices", slices, "must be an integer number of slices >= 1")
    return circuits, slices


#: bytes a materialized path costs while a router builds its list (measured: about 650 at
#: the peak per path of a 32-node rotor's HOHO paths); used to refuse a size that cannot fit
PATH_BYTES = 650


class _View:
    """Validated per-slice adjacency of a schedule, built once per routing call.

    ``adj[s][n]`` lists ``(port, peer, peer_port)`` of node ``n`` in slice ``s`` sorted by
    port; ``union[n]`` the same over all slices (deduplicated); ``S`` the cycle length;
    ``static`` is True when every circuit has ``ts=None`` (then ``S == 1``).
    """

    def __init__(self, circuits: Iterable[Any], slices: int | None = None):
        circuits, slices = _network_schedule(circuits, slices)
        circuits, arr = _as_array(circuits)
        self.arr = arr
        self.empty = arr.shape[0] == 0
        if self.empty:
            self.S, self.static, self.ports = slices or 1, True, 0
            self.nodes: list[int] = []
            self.adj: list[dict[int, list[tuple[int, int, int]]]] = [{}]
            self.union: dict[int, list[tuple[int, int, int]]] = {}
            self.conn: dict[tuple[int, int], list[tuple[int, int]]] = {}
            self._next: dict[tuple[int, int], list[tuple[int, int]]] = {}
            return
        n_count = max(int(arr[:, [0, 2]].max()), 0) + 1
        p_count = max(int(arr[:, [1, 3]].max()), 0) + 1
        table = schedule_table(circuits, n_count, p_count, slices)
        self.S = table.shape[0]
        self.static = bool(np.all(arr[:, 4] == _STATIC))
        self.ports = p_count
        self.nodes = sorted(set(arr[:, 0].tolist()) | set(arr[:, 2].tolist()))
        self.adj = []
        self.conn = defaultdict(list)  # (u, v) -> [(slice, port)] sorted
        union: dict[int, set[tuple[int, int, int]]] = defaultdict(set)
        for s in range(self.S):
            g = np.flatnonzero(table[s] >= 0)
            peer = table[s, g]
            per: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
            for gg, pg in zip(g.tolist(), peer.tolist()):
                u, p = divmod(gg, p_count)
                v, q = divmod(pg, p_count)
                per[u].append((p, v, q))
                self.conn[(u, v)].append((s, p))
                union[u].add((p, v, q))
            self.adj.append(dict(per))
        self.conn = dict(self.conn)
        self.union = {u: sorted(x) for u, x in union.items()}
        self._next = {}

    def out(self, s: int) -> int | None:
        """A slice as it appears in paths: None for static schedules."""
        return None if self.static else s

    def next_conn(self, u: int, v: int) -> list[tuple[int, int]] | None:
        """For each arrival slice a: ``(dep, port)`` of the first u→v connection at or after
        ``a`` cyclically (smallest ``(dep - a) mod S``, then lowest port); None if u and v
        are never connected."""
        key = (u, v)
        if key in self._next:
            return self._next[key]
        conns = self.conn.get(key)
        if not conns:
            return None
        best_port: list[int | None] = [None] * self.S
        for s, p in conns:
            bp = best_port[s]
            if bp is None or p < bp:
                best_port[s] = p
        res: list[tuple[int, int]] = [(0, 0)] * self.S
        cur: tuple[int, int] | None = None
        for a in range(2 * self.S - 1, -1, -1):  # two sweeps make the search cyclic
            s = a % self.S
            bp = best_port[s]
            if bp is not None:
                cur = (s, bp)
            if a < self.S:
                res[a] = cur  # type: ignore[assignment]
        self._next[key] = res
        return res

    def check_node(self, field: str, n: Any) -> int:
        if not _is_int(n) or int(n) not in set(self.nodes):
            raise ConfigError(field, n, f"not a node of the schedule (nodes {self._nodes_str()})")
        return int(n)

    def _nodes_str(self) -> str:
        if not self.nodes:
            return "none"
        return ", ".join(map(str, self.nodes)) if len(self.nodes) <= 8 else \
            f"{self.nodes[0]}..{self.nodes[-1]}"


def _path_key(p: Path) -> tuple:
    def n(x: int | None) -> int:
        return -1 if x is None else x
    return (p.src, p.dst, n(p.ts), tuple((h.node, h.port, n(h.dep_ts)) for h in p.hops))


def _sorted_paths(paths: Iterable[Path]) -> list[Path]:
    return sorted(paths, key=_path_key)


def _endpoints(view: _View, endpoints: Iterable[int] | None) -> list[int]:
    if endpoints is None:
        return list(view.nodes)
    try:
        eps = list(endpoints)
    except TypeError:
        raise ConfigError("endpoints", endpoints, "expected a list of nodes") from None
    return sorted({view.check_node("endpoints", e) for e in eps})


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def neighbors(circuits: Iterable[Any], node: int, ts: int | None) -> list[tuple[int, int]]:
    """``(local port, peer node)`` of ``node`` in slice ``ts``, sorted by port.

    Counts the circuits with ``ts`` equal to the given slice and the static ones
    (``ts=None``); ``ts=None`` asks for the static circuits only. A port of ``node`` that
    appears twice raises :class:`ConfigError` naming slice, node and port; the rest of the
    schedule is not checked here (a cheap helper for per-node loops — use
    :func:`opendcn.fabrics.topology.schedule_table` for the full feasibility check).

    >>> from opendcn.fabrics.topology import round_robin
    >>> neighbors(round_robin(4, uplink=2), 0, 1)
    [(0, 3)]
    """
    if not _is_int(node) or node < 0:
        raise ConfigError("node", node, "must be an integer node >= 0")
    if ts is not None and (not _is_int(ts) or ts < 0):
        raise ConfigError("ts", ts, "must be an integer slice >= 0 or None")
    circuits, arr = _as_array(circuits)
    if arr.shape[0] == 0:
        return []
    cts = arr[:, 4]
    live = cts == _STATIC
    if ts is not None:
        live |= cts == ts
    res: list[tuple[int, int, int]] = []
    for side, other in ((0, 2), (2, 0)):
        sel = np.flatnonzero(live & (arr[:, side] == node))
        res.extend(zip(arr[sel, side + 1].tolist(), arr[sel, other].tolist(), sel.tolist()))
    res.sort()
    for (p0, _, i0), (p1, _, i1) in zip(res, res[1:]):
        if p0 == p1:
            i = max(i0, i1)
            where = "every slice (ts=None)" if ts is None else f"slice {ts}"
            raise ConfigError(f"circuits[{i}]", circuits[i],
                              f"{where}: port {p1} of node {node} is already connected "
                              f"(circuits[{min(i0, i1)}])")
    return [(p, v) for p, v, _ in res]


_UNREACHED = float("inf")


def earliest_path(circuits: Iterable[Any], src: int, dst: int, ts: int | None,
                  max_hop: int, *, slices: int | None = None) -> Path | None:
    """The path from ``src`` to ``dst`` that arrives earliest when starting in slice ``ts``.

    A packet may wait at any node for a later slice (up to one full cycle per hop) and
    may take several hops inside one slice; at most ``max_hop`` hops. Offsets count slices
    from ``ts`` and may exceed one cycle when a path needs to wait at several nodes. Among the paths arriving earliest
    the one with fewest hops wins, then the lexicographically smallest sequence of
    ``(departure offset, port, next node)`` per hop (earlier departures first, then lower
    ports, then lower node ids). Hops carry the slice in which they are taken
    (``(ts + offset) mod S``).

    ``ts=None`` (or a static schedule): shortest path in the static graph — all circuits
    taken as always-on — with fewest hops, then the smallest ``(port, next node)``
    sequence; hops carry ``dep_ts=None``. Returns None if ``dst`` is unreachable.

    The cycle has ``slices`` slices (default: the largest ``ts`` of the circuits + 1);
    ``circuits`` may also be a :class:`~opendcn.network.Network`, whose number of slices
    is used (a deployed schedule may end with idle slices).

    >>> from opendcn.fabrics.topology import round_robin
    >>> earliest_path(round_robin(4), 0, 3, ts=0, max_hop=1).hops
    (Hop(node=0, port=0, dep_ts=2),)
    """
    return _earliest(_View(circuits, slices), src, dst, ts, max_hop)


def _earliest(view: _View, src: Any, dst: Any, ts: Any, max_hop: Any) -> Path | None:
    """:func:`earliest_path` on a schedule view built once (routers call it per triple)."""
    src = view.check_node("src", src)
    dst = view.check_node("dst", dst)
    if src == dst:
        raise ConfigError("dst", dst, "must differ from src")
    if not _is_int(max_hop) or max_hop < 1:
        raise ConfigError("max_hop", max_hop, "must be an integer >= 1")
    if ts is not None and (not _is_int(ts) or ts < 0 or (not view.static and ts >= view.S)):
        raise ConfigError("ts", ts, f"must be None or a slice 0..{view.S - 1} of the cycle")
    timed = ts is not None and not view.static
    if ts is not None and timed:
        S, start = view.S, int(ts)
        adj = view.adj
    else:
        S, start = 1, 0
        adj = [view.union]

    # Layered search over (node, offset): best[state] is the lexicographically smallest hop
    # sequence reaching the state with exactly k hops. A state reached in an earlier layer
    # at an offset <= o dominates (node, o) (same continuations, fewer hops).
    best: dict[tuple[int, int], tuple[tuple[int, int, int], ...]] = {(src, 0): ()}
    reached = {src: 0}  # node -> smallest offset reached in any earlier layer
    found: tuple[int, int, tuple] | None = None  # (offset, hops, sequence)
    for k in range(1, max_hop + 1):
        nxt: dict[tuple[int, int], tuple[tuple[int, int, int], ...]] = {}
        for (v, o), seq in best.items():
            limit = o + S if found is None else min(o + S, found[0] + 1)  # later arrivals cannot win
            for o2 in range(o, limit):
                for port, peer, _ in adj[(start + o2) % S].get(v, ()):
                    cand = seq + ((o2, port, peer),)
                    if peer == dst:
                        if found is None or (o2, k, cand) < found:
                            found = (o2, k, cand)
                        continue
                    if reached.get(peer, _UNREACHED) <= o2:
                        continue
                    cur = nxt.get((peer, o2))
                    if cur is None or cand < cur:
                        nxt[(peer, o2)] = cand
        if found is not None:
            nxt = {st: q for st, q in nxt.items() if st[1] < found[0]}
        for (v, o) in nxt:
            if o < reached.get(v, _UNREACHED):
                reached[v] = o
        best = nxt
        if not best:
            break
    if found is None:
        return None
    hops: list[Hop] = []
    node = src
    for o2, port, peer in found[2]:
        hops.append(Hop(node, port, (start + o2) % S if timed else None))
        node = peer
    return Path(src, dst, ts, tuple(hops))


# ---------------------------------------------------------------------------------------
# traffic-oblivious routers
# ---------------------------------------------------------------------------------------
def hoho(circuits: Iterable[Any], max_hop: int = 3, *, slices: int | None = None) -> list[Path]:
    """HOHO (hop-on hop-off): for every source, arrival slice and destination, the
    earliest path (``earliest_path`` with ``max_hop``). Deployed per hop, every node takes
    the first hop of its own earliest path; the built-in router ``"hoho"`` decides the
    same arrival slice and hop count without materializing paths. ``slices``: as for
    :func:`direct`."""
    view, triples = _timed_triples(circuits, "HOHO", slices)
    out = [p for s, d, a in triples if (p := _earliest(view, s, d, a, max_hop)) is not None]
    return _sorted_paths(out)


def _timed_triples(circuits: Iterable[Any], who: str,
                   slices: int | None = None) -> tuple[_View, list[tuple[int, int, int]]]:
    """(schedule view, every (src, dst, arrival slice)) of a cyclic schedule."""
    view = _View(circuits, slices)
    if view.static:
        raise ConfigError("circuits", "static", f"{who} routes across the slices of a cyclic schedule")
    n = len(view.nodes)
    check_memory("nodes", n, n * (n - 1) * view.S * PATH_BYTES,
                 f"{who}'s paths for {n} nodes x {view.S} slices (one per source, destination and slice)")
    triples = [(s, d, a) for s in view.nodes for d in view.nodes if s != d for a in range(view.S)]
    return view, triples


def _arrival_offset(p: Path, S: int) -> int:
    """Slices from ``p.ts`` to the slice of the last hop (hops never go back in time)."""
    assert p.ts is not None and all(h.dep_ts is not None for h in p.hops), "a timed path"
    off, cur = 0, p.ts
    for h in p.hops:
        dep = h.dep_ts
        assert dep is not None
        off += (dep - cur) % S
        cur = dep
    return off


def first_hop_tables(paths: Iterable[Path]) -> dict[int, list[Entry]]:
    """Per-hop re-planning tables: each path's first hop becomes an entry at its source
    with a wildcard ``src`` — every node forwards every packet (its own or relayed) by the
    first hop of its own path to the destination from the packet's arrival slice. With
    ``hoho(circuits)`` this is HOHO as time-flow tables."""
    out: dict[int, set[Entry]] = {}
    for p in _check_paths(paths):
        h = p.hops[0]
        out.setdefault(p.src, set()).add(Entry(p.ts, None, p.dst, h.dep_ts, h.port))
    return {n: sorted(es, key=_entry_key) for n, es in sorted(out.items())}


def ucmp(circuits: Iterable[Any], max_hop: int = 3, *, slices: int | None = None) -> list[Path]:
    """UCMP's candidate set: for every source, arrival slice and destination, the
    earliest path with at most h hops for h = 1..max_hop, kept when strictly earlier than
    the best path with fewer hops (the latency/hop-count Pareto frontier). The choice
    among them by flow age (uniform cost = latency + alpha x extra hops x flow-age time)
    is made per flow by the built-in source-routed router ``"ucmp"``."""
    view, triples = _timed_triples(circuits, "UCMP", slices)
    out = []
    for s, d, a in triples:
        best = None
        for h in range(1, max_hop + 1):
            p = _earliest(view, s, d, a, h)
            if p is None:
                continue
            arr = _arrival_offset(p, view.S)
            if best is None or arr < best:
                best = arr
                out.append(p)
    return _sorted_paths(out)


def direct(circuits: Iterable[Any], *, slices: int | None = None) -> list[Path]:
    """Direct-circuit routing: wait at the source for the next circuit to the destination.

    For every ordered pair ``(s, d)`` connected in some slice and every arrival slice
    ``a`` in ``0..S-1``: ``Path(s, d, a, [Hop(s, p, dep)])`` with ``(dep, p)`` the first
    s–d connection at or after ``a`` cyclically (smallest ``(dep - a) mod S``, then lowest
    port). Static schedule: one path per pair with ``ts=None`` and ``dep_ts=None``.

    The cycle has ``slices`` slices (default: the circuits' largest ``ts`` + 1). Pass the
    :class:`~opendcn.network.Network` itself (``direct(net)``) to route over its deployed
    schedule, idle trailing slices included:

    >>> from opendcn.fabrics.topology import round_robin
    >>> [(p.ts, p.hops[0].dep_ts) for p in direct(round_robin(4)) if (p.src, p.dst) == (0, 2)]
    [(0, 1), (1, 1), (2, 1)]
    >>> [(p.ts, p.hops[0].dep_ts) for p in direct(round_robin(4), slices=4) if (p.src, p.dst) == (0, 2)]
    [(0, 1), (1, 1), (2, 1), (3, 1)]
    """
    view = _View(circuits, slices)
    out = []
    for (u, v) in sorted(view.conn):
        nt = view.next_conn(u, v)
        assert nt is not None
        for a in range(view.S):
            dep, p = nt[a]
            out.append(Path(u, v, view.out(a), (Hop(u, p, view.out(dep)),)))
    return _sorted_paths(out)


def vlb(circuits: Iterable[Any], *, slices: int | None = None) -> list[Path]:
    """Valiant load balancing with per-slice spraying (RotorNet, Sirius): always 2 hops.

    For each source ``s``, arrival slice ``a`` and destination ``d != s``: ``a'`` is the
    first slice at or after ``a`` (cyclically) in which ``s`` has a connected port whose
    peer is not ``d``. Every such port ``p`` (peer ``m != d``) gives one path
    ``[Hop(s, p, a'), Hop(m, p2, dep2)]`` if ``m`` is ever connected to ``d``, with
    ``(dep2, p2)`` the first m–d connection at or after ``a'`` cyclically (smallest rank,
    then lowest port). The intermediate is never the destination; the alternatives of one
    ``(s, a, d)`` are spread per packet by multipath. Static schedule: slices are None.
    ``slices``: as for :func:`direct`.

    >>> from opendcn.fabrics.topology import round_robin
    >>> [p.hops for p in vlb(round_robin(4)) if (p.src, p.dst, p.ts) == (0, 3, 0)]
    [(Hop(node=0, port=0, dep_ts=0), Hop(node=1, port=0, dep_ts=1))]
    """
    view = _View(circuits, slices)
    S = view.S
    out = []
    for s in view.nodes:
        per_slice = [view.adj[t].get(s, []) for t in range(S)]
        for d in view.nodes:
            if d == s:
                continue
            # first slice (cyclically from each a) with a port towards someone other than d
            usable = [[(p, m) for p, m, _ in per_slice[t] if m != d] for t in range(S)]
            for a in range(S):
                for off in range(S):
                    a2 = (a + off) % S
                    if usable[a2]:
                        break
                else:
                    continue
                for p, m in usable[a2]:
                    nt = view.next_conn(m, d)
                    if nt is None:
                        continue
                    dep2, p2 = nt[a2]
                    out.append(Path(s, d, view.out(a),
                                    (Hop(s, p, view.out(a2)), Hop(m, p2, view.out(dep2)))))
    return _sorted_paths(out)


# ---------------------------------------------------------------------------------------
# static routers
# ---------------------------------------------------------------------------------------
def _static_graph(view: _View) -> tuple[nx.Graph, dict[tuple[int, int], list[int]]]:
    """Union graph of all circuits (always-on) and, per ordered pair, u's ports to v."""
    import networkx as nx
    g = nx.Graph()
    g.add_nodes_from(view.nodes)
    ports: dict[tuple[int, int], set[int]] = defaultdict(set)
    for u in view.nodes:
        for p, v, _ in view.union.get(u, ()):
            ports[(u, v)].add(p)
    for (u, v) in sorted(ports):
        if u < v:
            g.add_edge(u, v)
    return g, {k: sorted(x) for k, x in ports.items()}


def _expand(node_path: Sequence[int], ports: dict[tuple[int, int], list[int]]) -> list[tuple[Hop, ...]]:
    """All port choices along a node path (parallel links are distinct paths)."""
    choices = [ports[(u, v)] for u, v in zip(node_path, node_path[1:])]
    return [tuple(Hop(u, p, None) for u, p in zip(node_path, combo))
            for combo in itertools.product(*choices)]


def ecmp(circuits: Iterable[Any], endpoints: Iterable[int] | None = None) -> list[Path]:
    """Equal-cost multipath on the static graph (every circuit taken as always-on).

    For every ordered pair of ``endpoints`` (default: every node of the schedule) all
    shortest paths by hop count; parallel circuits between the same two nodes (different
    ports) give distinct paths. Paths and hops carry ``None`` slices; unreachable pairs
    have no paths.

    >>> leaf_spine = [Circuit(t, s, 2 + s, t) for t in range(2) for s in range(2)]
    >>> [[h.port for h in p.hops] for p in ecmp(leaf_spine, endpoints=[0, 1]) if p.src == 0]
    [[0, 1], [1, 1]]
    """
    import networkx as nx
    view = _View(circuits)
    eps = _endpoints(view, endpoints)
    g, ports = _static_graph(view)
    out: list[Path] = []
    for s in eps:
        for d in eps:
            if s == d or not nx.has_path(g, s, d):
                continue
            for node_path in nx.all_shortest_paths(g, s, d):
                out.extend(Path(s, d, None, hops) for hops in _expand(node_path, ports))
    return _sorted_paths(out)


def ksp(circuits: Iterable[Any], k: int = 4, endpoints: Iterable[int] | None = None, *,
        per_slice: bool = False, slices: int | None = None) -> list[Path]:
    """The ``k`` shortest simple paths per ordered pair of endpoints, on the static graph.

    Node paths come in the order of ``networkx.shortest_simple_paths`` (increasing hop
    count) and each expands into its port choices (parallel circuits are distinct paths);
    the first ``k`` of these are kept. Paths and hops carry ``None`` slices: they suit
    static schedules only (``Network.deploy_routing`` refuses them on a cyclic one).

    ``per_slice=True`` routes a cyclic schedule slice by slice (as Opera does): for every
    slice ``s`` the ``k`` shortest paths over the circuits up in ``s``, for packets that
    arrive in ``s``, every hop taken in ``s``. A pair not connected within a slice has no
    path for that slice. ``slices``: the cycle length, as for :func:`direct`.

    >>> ring = [Circuit(i, 0, (i + 1) % 4, 1) for i in range(4)]
    >>> [p.nodes for p in ksp(ring, k=2, endpoints=[0, 2]) if p.src == 0]
    [[0, 1], [0, 3]]
    >>> from opendcn.fabrics.topology import round_robin
    >>> [(p.ts, p.nodes) for p in ksp(round_robin(4, uplink=2), k=1, per_slice=True) if (p.src, p.dst) == (0, 3)]
    [(0, [0, 1]), (1, [0])]
    """
    if not _is_int(k) or k < 1:
        raise ConfigError("k", k, "must be an integer >= 1")
    if not isinstance(per_slice, bool):
        raise ConfigError("per_slice", per_slice, "expected True or False")
    view = _View(circuits, slices)
    eps = _endpoints(view, endpoints)
    if per_slice and not view.static:
        out: list[Path] = []
        for t in range(view.S):
            g, ports = _slice_graph(view, t)
            out.extend(_k_shortest(g, ports, eps, k, t))
        return _sorted_paths(out)
    g, ports = _static_graph(view)
    return _sorted_paths(_k_shortest(g, ports, eps, k, None))


def _slice_graph(view: _View, t: int) -> tuple[nx.DiGraph, dict[tuple[int, int], list[int]]]:
    """The circuits up in slice ``t`` as a directed graph and, per ordered pair, the ports."""
    import networkx as nx
    g = nx.DiGraph()
    g.add_nodes_from(view.nodes)
    ports: dict[tuple[int, int], list[int]] = defaultdict(list)
    for u, conns in view.adj[t].items():
        for p, v, _ in conns:
            ports[(u, v)].append(p)
            g.add_edge(u, v)
    return g, {key: sorted(x) for key, x in ports.items()}


def _k_shortest(g: Any, ports: dict[tuple[int, int], list[int]], eps: list[int], k: int,
                t: int | None) -> list[Path]:
    """The first ``k`` port-expanded shortest simple paths per ordered pair, in slice ``t``."""
    import networkx as nx
    out = []
    for s in eps:
        for d in eps:
            if s == d or not nx.has_path(g, s, d):
                continue
            got: list[Path] = []
            for node_path in nx.shortest_simple_paths(g, s, d):
                for hops in _expand(node_path, ports):
                    got.append(Path(s, d, t, tuple(Hop(h.node, h.port, t) for h in hops)))
                    if len(got) == k:
                        break
                if len(got) == k:
                    break
            out.extend(got)
    return out


# ---------------------------------------------------------------------------------------
# compilation into time-flow tables
# ---------------------------------------------------------------------------------------
def _check_paths(paths: Iterable[Any]) -> list[Path]:
    try:
        items = list(paths)
    except TypeError:
        raise ConfigError("paths", paths, "expected a list of Path") from None
    out = []
    for i, p in enumerate(items):
        field = f"paths[{i}]"
        if not isinstance(p, Path):
            raise ConfigError(field, p, "expected a Path(src, dst, ts, hops)")
        if not _is_int(p.src) or p.src < 0 or not _is_int(p.dst) or p.dst < 0:
            raise ConfigError(field, p, "src and dst must be integer nodes >= 0")
        if p.src == p.dst:
            raise ConfigError(field, p, f"src and dst are the same node {p.src}")
        if p.ts is not None and (not _is_int(p.ts) or p.ts < 0):
            raise ConfigError(field, p, f"ts must be None or a slice >= 0, got {p.ts!r}")
        if not p.hops:
            raise ConfigError(field, p, "a path needs at least one hop")
        if p.hops[0].node != p.src:
            raise ConfigError(field, p, f"first hop is at node {p.hops[0].node}, not at src {p.src}")
        for j, h in enumerate(p.hops):
            if not _is_int(h.node) or h.node < 0 or not _is_int(h.port) or h.port < 0:
                raise ConfigError(field, p, f"hop {j}: node and port must be integers >= 0")
            if h.dep_ts is not None and (not _is_int(h.dep_ts) or h.dep_ts < 0):
                raise ConfigError(field, p, f"hop {j}: dep_ts must be None or a slice >= 0")
            if h.node == p.dst:
                raise ConfigError(field, p, f"hop {j}: node {h.node} is the destination")
        out.append(p)
    return out


def _arrivals(p: Path) -> list[int | None]:
    """Arrival slice at each hop: path.ts, then the previous hop's dep_ts (if not None)."""
    res, arr = [], p.ts
    for h in p.hops:
        res.append(arr)
        if h.dep_ts is not None:
            arr = h.dep_ts
    return res


def _n(x: int | None) -> int:
    return -1 if x is None else x


def _entry_key(e: Entry) -> tuple[int, int, int, int, int]:
    return (e.dst, _n(e.src), _n(e.arr_ts), _n(e.dep_ts), e.port)


def _fast_lookup(index: dict, node: int, src: int, dst: int, arr: int | None) -> frozenset:
    """Same rule as :func:`lookup`, on an index (node, dst, arr, src) -> set of actions."""
    e_sa = index.get((node, dst, arr, src), frozenset()) if arr is not None else frozenset()
    e_sn = index.get((node, dst, None, src), frozenset())
    if e_sa or e_sn:
        return frozenset(e_sa or e_sn)
    e_na = index.get((node, dst, arr, None), frozenset()) if arr is not None else frozenset()
    return frozenset(e_na or index.get((node, dst, None, None), frozenset()))


def compile_paths(paths: Iterable[Path], lookup: str = "hop") -> Any:
    """Compile paths into per-node time-flow entries (``lookup="hop"``).

    Returns ``{node: [Entry, ...]}`` such that at every hop of every path, :func:`lookup`
    on that node's entries with the packet's ``(src, dst, arrival slice)`` yields exactly
    the actions ``(port, dep_ts)`` that the given paths take at that decision point
    (several = multipath alternatives). The arrival slice is ``path.ts`` at the first hop
    and the previous hop's ``dep_ts`` later (or the previous arrival if that is None).

    First hops are installed with ``src = path.src``. Later hops are grouped by
    ``(node, arrival slice, dst)``: when every source in the group takes the same set of
    actions the group is installed once with ``src=None`` (compression), otherwise per
    source. A compressed group that a more specific entry would shadow (possible when
    wildcard and exact arrival slices mix) is installed per source instead. Duplicate
    entries are removed; nodes are in increasing order and each node's entries sorted by
    ``(dst, src, arr_ts, dep_ts, port)`` with None first.

    ``lookup="source"`` returns :func:`compile_routes` instead. Other values raise
    :class:`ConfigError` (field ``lookup``); malformed paths raise it with field
    ``paths[i]``.

    >>> p = Path(0, 3, 0, [Hop(0, 0, 0), Hop(1, 0, 1)])
    >>> compile_paths([p])
    {0: [Entry(arr_ts=0, src=0, dst=3, dep_ts=0, port=0)], 1: [Entry(arr_ts=0, src=None, dst=3, dep_ts=1, port=0)]}
    """
    if lookup not in ("hop", "source"):
        raise ConfigError("lookup", lookup, "must be 'hop' or 'source'")
    if lookup == "source":
        return compile_routes(paths)
    checked = _check_paths(paths)
    exact: dict[tuple, set[Action]] = defaultdict(set)      # (node, src, dst, arr) -> actions
    groups: dict[tuple, dict[int, set[Action]]] = defaultdict(lambda: defaultdict(set))
    for p in checked:
        for i, (h, arr) in enumerate(zip(p.hops, _arrivals(p))):
            act = (h.port, h.dep_ts)
            if i == 0 or h.node == p.src:
                exact[(h.node, p.src, p.dst, arr)].add(act)
            else:
                groups[(h.node, arr, p.dst)][p.src].add(act)

    decisions: dict[tuple, frozenset] = {k: frozenset(v) for k, v in exact.items()}
    for (node, arr, dst), by_src in groups.items():
        for src, acts in by_src.items():
            decisions[(node, src, dst, arr)] = frozenset(acts)
    compressed = {g for g, by_src in groups.items()
                  if len({frozenset(a) for a in by_src.values()}) == 1}

    while True:
        index: dict[tuple, set[Action]] = defaultdict(set)   # (node, dst, arr, src) -> acts
        for (node, src, dst, arr), acts in exact.items():
            index[(node, dst, arr, src)] |= acts
        for (node, arr, dst), by_src in groups.items():
            if (node, arr, dst) in compressed:
                index[(node, dst, arr, None)] |= next(iter(by_src.values()))
            else:
                for src, acts in by_src.items():
                    index[(node, dst, arr, src)] |= acts
        broken = {(node, arr, dst) for (node, src, dst, arr), acts in decisions.items()
                  if (node, arr, dst) in compressed
                  and _fast_lookup(index, node, src, dst, arr) != acts}
        if not broken:
            break
        compressed -= broken

    tables: dict[int, set[Entry]] = defaultdict(set)
    for (node, dst, arr, src), acts in index.items():
        for port, dep in acts:
            tables[node].add(Entry(arr, src, dst, dep, port))
    return {node: sorted(tables[node], key=_entry_key) for node in sorted(tables)}


def compile_routes(paths: Iterable[Path]) -> list[tuple[int, int, int | None, list[Action]]]:
    """Source-routing form of paths (``lookup="source"``): the whole route in the packet.

    Returns ``[(src, dst, ts, [(port, dep_ts), ...]), ...]`` — one route per distinct path,
    several routes with the same ``(src, dst, ts)`` being multipath alternatives — sorted
    by ``(src, dst, ts, route)`` with None first. Malformed paths raise
    :class:`ConfigError` (field ``paths[i]``).

    >>> compile_routes([Path(0, 3, 0, [Hop(0, 0, 0), Hop(1, 0, 1)])])
    [(0, 3, 0, [(0, 0), (0, 1)])]
    """
    checked = _check_paths(paths)
    routes = {(p.src, p.dst, p.ts, tuple((h.port, h.dep_ts) for h in p.hops)) for p in checked}
    ordered = sorted(routes, key=lambda r: (r[0], r[1], _n(r[2]),
                                            tuple((port, _n(dep)) for port, dep in r[3])))
    return [(s, d, t, list(route)) for s, d, t, route in ordered]


def lookup(entries_at_node: Iterable[Any], src: int, dst: int, arr_ts: int | None) -> list[Entry]:
    """Reference of the engine's time-flow lookup: the candidate entries for one packet.

    Among the entries with ``dst`` equal to the packet's destination and ``arr_ts`` equal
    to its arrival slice or None: those with ``src`` equal to the packet's source if any,
    else those with ``src=None``; within that set the exact-``arr_ts`` entries if any, else
    the wildcard ones. An empty list means no route. Multipath chooses among the result.

    >>> es = [Entry(None, None, 3, None, 1), Entry(0, None, 3, 2, 0)]
    >>> lookup(es, src=5, dst=3, arr_ts=0)
    [Entry(arr_ts=0, src=None, dst=3, dep_ts=2, port=0)]
    >>> lookup(es, src=5, dst=3, arr_ts=1)
    [Entry(arr_ts=None, src=None, dst=3, dep_ts=None, port=1)]
    """
    cand = [e if isinstance(e, Entry) else Entry(*e) for e in entries_at_node]
    cand = [e for e in cand if e.dst == dst and (e.arr_ts is None or e.arr_ts == arr_ts)]
    chosen = [e for e in cand if e.src is not None and e.src == src]
    if not chosen:
        chosen = [e for e in cand if e.src is None]
    exact = [e for e in chosen if e.arr_ts is not None]
    return exact if exact else [e for e in chosen if e.arr_ts is None]
