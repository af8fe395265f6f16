"""Duo's algorithms: the de Bruijn backbone, greedy longest-prefix-match routing and the
centralized demand-aware (DA) link scheduler.

What is modeled (Zerwas et al., "Duo: A High-Throughput Reconfigurable Datacenter Network
Using Local Routing and Control", POMACS 7(1), 2023): ``n = b**d`` ToRs named by their
base-``b`` labels ``(v_1, ..., v_d)`` (most significant symbol first). The static backbone
is the de Bruijn graph DB(b, d) — an edge ``v -> (v_2, ..., v_d, x)`` for every symbol
``x`` — built by ``b`` static switches, each a directed perfect matching (§3.1, Obs. 1).
``k_d`` reconfigurable switches add directed DA matchings. Routing is greedy: every node
keeps a longest-prefix-match table built from its neighbours' addresses only (Alg. 1),
so a DA link change rebuilds one node's table and nothing else (§3.1).

Choices this module makes where the paper leaves room:

* **Matchings.** The edges with one appended symbol ``x`` are not a matching (they are
  b-to-1). Static switch ``j`` instead maps ``v = (v_1, ..., v_d)`` to
  ``(v_2, ..., v_d, (v_1 + j) mod b)``: a bijection for every ``j``, and the ``b``
  switches together hold every de Bruijn edge exactly once (:func:`static_successors`).
* **Self-loops.** DB(b, d) has ``b`` self-loops, the constant words ``c...c``; with the
  matchings above they are all on switch 0. A self-loop port is *idle*: no static
  circuit is built on it (:func:`opendcn.fabrics.topology.de_bruijn` skips it), routing tables
  ignore it, and :func:`self_loop_ports` lists it so an architecture may give the port to
  something else. Nothing is lost: Alg. 1 with the self-loop included gives the same
  reduced table (Local wins the self-loop's full-length entry and the others are never a
  longest match), and without the static backbone a surviving self-loop entry would only
  send packets back to the node itself.
* **Tables.** An entry is a prefix (``length`` fixed leading symbols, the rest wildcards)
  with one or more egress ports; equal prefixes learnt from several ports are one entry
  with several equal-length ports (multipath, Fig. 4). The Local entry (own address,
  port :data:`LOCAL`) is a real entry (the ToR's own prefix, towards its hosts) and
  :func:`entry_count` counts it by default. Obs. 2 (``<= b*d`` entries in DB(b, d)) and
  Claim 1 (``<= (b+1)*d`` with one DA matching) hold with it counted; in DB(b, d) the
  bound ``b*d`` is reached exactly, so it would be loose by one without it.
* **Multipath order.** Ports of an entry are sorted ascending; "the first port" is the
  lowest, which is how :func:`greedy_route` breaks ties.
* **Greedy-DA (Alg. 2).** Demands are served largest first, ties by ``(s, t)`` ascending;
  a pass gives every selected pair at most one more link, and passes repeat until one
  adds nothing (so a pair may get a link on several switches). A pair is placed on a
  switch where the same link already exists when that switch's ports are free — the
  link then stays up and pays no reconfiguration delay (δ, §3.2) — otherwise on the
  lowest free switch. Leftover ports are filled per switch: existing links parallel to a
  static link are kept, then a maximum matching of links parallel to static links is
  added, then other existing links are kept, then the rest is matched at random
  (never a DA self-loop; a port stays unused only when a self-loop is all that is left).
  ``prefer_existing=False`` gives Alg. 2 literally; :func:`kept_links` tells which links
  stayed up.

Not modeled here: the IP embedding of labels (§3.3.2), the distributed DistDA protocol
(Alg. 3), and how a packet picks among multipath ports (per packet or per flow is the
engine's choice for several time-flow rows).

>>> b, d = 2, 3
>>> succ = static_successors(b, d)
>>> tables = build_tables(succ, b, d)
>>> [format_label(v, b, d) for v in greedy_route(0b011, 0b001, tables)]
['011', '110', '100', '001']
>>> render_table(tables[0b011])
[('011', (-1,)), ('110', (0,)), ('111', (1,)), ('10*', (0,)), ('0**', (0,))]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Final, NamedTuple

import numpy as np

from ..errors import ConfigError, InvariantError
from ..network.timeflow import Entry

__all__ = [
    "LOCAL", "UNUSED", "Prefix", "LpmTable",
    "label", "from_label", "format_label", "overlap", "db_distance",
    "static_successors", "self_loop_ports",
    "alg1_entries", "format_prefix", "build_table", "build_tables", "update_port", "lookup",
    "compile_entries", "flow_entries", "render_table", "format_table",
    "entry_count", "table_sizes", "greedy_route", "greedy_routes",
    "greedy_da", "kept_links",
]

LOCAL: Final = -1
"""Port of the Local entry: the packet has reached its destination ToR."""

UNUSED: Final = -1
"""Value of an unused egress port in a DA matching array."""

_MAX_NODES = 2**24  # largest b**d accepted (tables and matchings are built in memory)


def _is_int(v: object) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool)


def _check_bd(b: int, d: int) -> tuple[int, int]:
    if not _is_int(b) or b < 2:
        raise ConfigError("b", b, "the de Bruijn alphabet size must be an integer >= 2")
    if not _is_int(d) or d < 1:
        raise ConfigError("d", d, "the de Bruijn label length must be an integer >= 1")
    bi, di = int(b), int(d)
    if bi**di > _MAX_NODES:
        raise ConfigError("d", d, f"b**d = {bi}**{di} nodes is more than {_MAX_NODES}")
    return bi, di


def _check_node(name: str, v: int, n: int) -> int:
    if not _is_int(v) or not 0 <= v < n:
        raise ConfigError(name, v, f"must be a node id in 0..{n - 1}")
    return int(v)


# ---------------------------------------------------------------------------------------
# labels and distance
# ---------------------------------------------------------------------------------------
def label(v: int, b: int, d: int) -> tuple[int, ...]:
    """Label ``(v_1, ..., v_d)`` of node ``v``: its ``d`` base-``b`` digits, most
    significant first.

    >>> label(6, 2, 3)
    (1, 1, 0)
    """
    b, d = _check_bd(b, d)
    v = _check_node("v", v, b**d)
    out = [0] * d
    for i in range(d - 1, -1, -1):
        v, out[i] = divmod(v, b)
    return tuple(out)


def from_label(symbols: Sequence[int], b: int) -> int:
    """Node id of a label (inverse of :func:`label`).

    >>> from_label((1, 1, 0), 2)
    6
    """
    if not _is_int(b) or b < 2:
        raise ConfigError("b", b, "the de Bruijn alphabet size must be an integer >= 2")
    v = 0
    for x in symbols:
        if not _is_int(x) or not 0 <= x < b:
            raise ConfigError("symbols", tuple(symbols), f"every symbol must be in 0..{b - 1}")
        v = v * b + int(x)
    return v


def _symbol(x: int, b: int) -> str:
    return "0123456789abcdefghijklmnopqrstuvwxyz"[x] if b <= 36 else f"{x}."


def format_label(v: int, b: int, d: int) -> str:
    """Label as text: one character per symbol for ``b <= 36`` (``'011'``), else
    dot-terminated numbers.

    >>> format_label(3, 2, 3)
    '011'
    """
    return "".join(_symbol(x, b) for x in label(v, b, d))


def overlap(v: int, w: int, b: int, d: int) -> int:
    """Length of the longest suffix of ``v``'s label that is a prefix of ``w``'s
    (``d`` when ``v == w``).

    >>> overlap(0b011, 0b110, 2, 3)
    2
    """
    b, d = _check_bd(b, d)
    n = b**d
    v, w = _check_node("v", v, n), _check_node("w", w, n)
    return _overlap(v, w, b, d)


def _overlap(v: int, w: int, b: int, d: int) -> int:
    for length in range(d, 0, -1):
        if v % b**length == w // b ** (d - length):
            return length
    return 0


def db_distance(v: int, w: int, b: int, d: int) -> int:
    """de Bruijn distance: the fewest left shifts (hops in DB(b, d)) from ``v`` to ``w``,
    ``d - overlap(v, w)``; 0 when ``v == w``.

    >>> db_distance(0b011, 0b001, 2, 3), db_distance(0b011, 0b100, 2, 3)
    (3, 2)
    """
    return d - overlap(v, w, b, d)


# ---------------------------------------------------------------------------------------
# backbone
# ---------------------------------------------------------------------------------------
def static_successors(b: int, d: int) -> np.ndarray:
    """The ``b`` static matchings of DB(b, d) as an int64 array ``(b, n)``: entry
    ``[j, v]`` is the node that egress port ``j`` of ``v`` reaches,
    ``(v_2, ..., v_d, (v_1 + j) mod b)``. Every row is a permutation of ``0..n-1`` and the
    rows together hold each de Bruijn edge once; self-loops (``[0, c...c]``) included.

    >>> static_successors(2, 2).tolist()
    [[0, 2, 1, 3], [1, 3, 0, 2]]
    """
    b, d = _check_bd(b, d)
    n = b**d
    v = np.arange(n, dtype=np.int64)
    shifted = (v * b) % n
    first = v // b ** (d - 1)
    j = np.arange(b, dtype=np.int64)[:, None]
    return shifted[None, :] + (first[None, :] + j) % b


def self_loop_ports(b: int, d: int) -> list[tuple[int, int]]:
    """The idle static ports ``(node, matching)``: the self-loop of each constant word
    ``c...c``, all on matching 0.

    >>> self_loop_ports(2, 3)
    [(0, 0), (7, 0)]
    """
    b, d = _check_bd(b, d)
    ones = (b**d - 1) // (b - 1)  # the word 1...1
    return [(c * ones, 0) for c in range(b)]


# ---------------------------------------------------------------------------------------
# longest-prefix-match tables (Alg. 1)
# ---------------------------------------------------------------------------------------
class Prefix(NamedTuple):
    """A table key: the first ``length`` symbols of a destination equal ``value`` (their
    base-``b`` number); the remaining ``d - length`` symbols are wildcards."""

    length: int
    value: int


@dataclass(frozen=True)
class LpmTable:
    """The greedy-routing table of one node.

    ``neighbours``: egress port → neighbour node (the links the table was built from,
    self-loops excluded); ``raw``: port → the Alg. 1 entries learnt from it, kept so a
    port change rebuilds only that port's part (:func:`update_port`); ``entries``: the
    reduced table, prefix → ascending ports (the Local entry maps to ``(LOCAL,)``),
    longest prefixes first. Treat as read-only.
    """

    node: int
    b: int
    d: int
    neighbours: Mapping[int, int]
    raw: Mapping[int, tuple[Prefix, ...]]
    entries: Mapping[Prefix, tuple[int, ...]]


def alg1_entries(w: int, b: int, d: int) -> tuple[Prefix, ...]:
    """The ``d`` entries a neighbour ``w = (z_1, ..., z_d)`` contributes (Alg. 1): for
    ``j = 0..d-1`` the prefix ``(z_{j+1}, ..., z_d)`` followed by ``j`` wildcards, with
    path length ``j + 1`` (= ``d - length + 1``).

    >>> [format_prefix(p, 2, 3) for p in alg1_entries(0b110, 2, 3)]
    ['110', '10*', '0**']
    """
    b, d = _check_bd(b, d)
    w = _check_node("w", w, b**d)
    return tuple(Prefix(d - j, w % b ** (d - j)) for j in range(d))


def format_prefix(p: Prefix, b: int, d: int) -> str:
    """A prefix as text, wildcards as ``*`` (``'10*'``)."""
    fixed = "".join(_symbol(x, b) for x in label(p.value, b, p.length)) if p.length else ""
    return fixed + "*" * (d - p.length)


def _reduce(merged: Mapping[Prefix, tuple[int, ...]], b: int, d: int) -> dict[Prefix, tuple[int, ...]]:
    """Drop the entries that are never a longest match: prefix ``P`` is dropped when every
    destination starting with ``P`` matches a longer entry. Longest prefixes first."""
    keys = set(merged)
    memo: dict[Prefix, bool] = {}

    def covered(p: Prefix) -> bool:
        # every destination starting with p matches an entry at least as long as p
        if p in keys:
            return True
        if p.length == d:
            return False
        hit = memo.get(p)
        if hit is None:
            hit = all(covered(Prefix(p.length + 1, p.value * b + x)) for x in range(b))
            memo[p] = hit
        return hit

    kept = [p for p in merged if p.length == d
            or not all(covered(Prefix(p.length + 1, p.value * b + x)) for x in range(b))]
    kept.sort(key=lambda p: (-p.length, p.value))
    return {p: merged[p] for p in kept}


def _assemble(node: int, b: int, d: int, neighbours: dict[int, int],
              raw: dict[int, tuple[Prefix, ...]]) -> LpmTable:
    merged: dict[Prefix, set[int]] = {}
    for port, prefixes in raw.items():
        for p in prefixes:
            merged.setdefault(p, set()).add(port)
    table = {p: tuple(sorted(ports)) for p, ports in merged.items()}
    table[Prefix(d, node)] = (LOCAL,)  # Local wins a neighbour's full-length entry
    return LpmTable(node, b, d, dict(sorted(neighbours.items())), dict(sorted(raw.items())),
                    _reduce(table, b, d))


def build_table(v: int, neighbours: Iterable[tuple[int, int]], b: int, d: int) -> LpmTable:
    """Alg. 1 generalised: the reduced LPM table of node ``v`` whose egress ``port``
    reaches ``w`` for each ``(port, w)`` in ``neighbours`` (static and DA links alike,
    any number). A neighbour equal to ``v`` (a self-loop) contributes nothing.

    >>> t = build_table(0b011, [(0, 0b110), (1, 0b111), (2, 0b100)], 2, 3)
    >>> print(format_table(t))
    011 -> L
    100 -> 2
    110 -> 0
    111 -> 1
    00* -> 2
    10* -> 0
    0** -> 0,2
    """
    b, d = _check_bd(b, d)
    n = b**d
    v = _check_node("v", v, n)
    nb: dict[int, int] = {}
    for item in neighbours:
        try:
            port, w = item
        except (TypeError, ValueError):
            raise ConfigError("neighbours", item, "expected (port, neighbour) pairs") from None
        if not _is_int(port) or port < 0:
            raise ConfigError("neighbours", item, "the port must be an integer >= 0")
        w = _check_node("neighbours", w, n)
        if int(port) in nb:
            raise ConfigError("neighbours", item, f"port {port} of node {v} is listed twice")
        nb[int(port)] = w
    nb = {p: w for p, w in nb.items() if w != v}
    raw = {p: alg1_entries(w, b, d) for p, w in nb.items()}
    return _assemble(v, b, d, nb, raw)


def build_tables(succ: np.ndarray, b: int, d: int, *, first_port: int = 0) -> list[LpmTable]:
    """Tables of all nodes from a successor array ``(k, n)``: row ``i`` is egress port
    ``first_port + i`` (the static matchings, then the DA ones), entry ``[i, v]`` the node
    it reaches or ``-1`` (:data:`UNUSED`). Self-loops are ignored.

    >>> tables = build_tables(static_successors(2, 3), 2, 3)
    >>> lookup(tables[0b011], 0b001)
    [0]
    """
    b, d = _check_bd(b, d)
    n = b**d
    s = np.asarray(succ)
    if s.ndim != 2 or s.shape[1] != n or s.dtype.kind not in "iu" or s.size and (s.min() < -1 or s.max() >= n):
        raise ConfigError("succ", getattr(s, "shape", succ),
                          f"expected an integer (ports, {n}) array of nodes 0..{n - 1} or -1")
    rows = s.tolist()
    return [build_table(v, [(first_port + i, row[v]) for i, row in enumerate(rows) if row[v] >= 0], b, d)
            for v in range(n)]


def update_port(table: LpmTable, port: int, neighbour: int | None) -> LpmTable:
    """The table after egress ``port`` of ``table.node`` now reaches ``neighbour``
    (``None``: the port carries no link). Only that port's Alg. 1 entries are recomputed;
    the node's table is then merged and reduced again — the result equals a full
    :func:`build_table` of the new neighbour set. The other nodes' tables are unaffected
    (local control, §3.1).

    >>> t = build_tables(static_successors(2, 3), 2, 3)[0b011]
    >>> lookup(update_port(t, 2, 0b100), 0b001)
    [2]
    """
    b, d, v = table.b, table.d, table.node
    if not _is_int(port) or port < 0:
        raise ConfigError("port", port, "must be an integer >= 0")
    nb = dict(table.neighbours)
    raw = dict(table.raw)
    nb.pop(port, None)
    raw.pop(port, None)
    if neighbour is not None:
        w = _check_node("neighbour", neighbour, b**d)
        if w != v:
            nb[int(port)] = w
            raw[int(port)] = alg1_entries(w, b, d)
    return _assemble(v, b, d, nb, raw)


def lookup(table: LpmTable, dst: int) -> list[int]:
    """Ports of the longest entry matching ``dst`` (``[LOCAL]`` at the destination,
    ``[]`` if nothing matches). All of them lead to a neighbour at the least de Bruijn
    distance to ``dst`` (equal-length paths).

    >>> lookup(build_table(0b011, [(0, 0b110), (1, 0b111), (2, 0b100)], 2, 3), 0b010)
    [0, 2]
    """
    b, d = table.b, table.d
    dst = _check_node("dst", dst, b**d)
    for length in range(d, 0, -1):
        ports = table.entries.get(Prefix(length, dst // b ** (d - length)))
        if ports is not None:
            return list(ports)
    return []


def compile_entries(table: LpmTable) -> list[list[int]]:
    """The ports for every destination ``0..n-1``: ``out[t] == lookup(table, t)``.

    >>> compile_entries(build_tables(static_successors(2, 2), 2, 2)[1])
    [[0], [-1], [0], [1]]
    """
    b, d = table.b, table.d
    n = b**d
    owner = np.full(n, -1, dtype=np.int64)
    items = list(table.entries.items())
    for idx in sorted(range(len(items)), key=lambda i: items[i][0].length):
        p = items[idx][0]
        span = b ** (d - p.length)
        owner[p.value * span:(p.value + 1) * span] = idx
    return [list(items[i][1]) if i >= 0 else [] for i in owner.tolist()]


def flow_entries(table: LpmTable) -> list[Entry]:
    """The table as time-flow rows ``Entry(None, None, t, None, port)`` for every other
    destination ``t``; a multipath entry gives one row per port. The Local entry has no
    row.

    >>> flow_entries(build_tables(static_successors(2, 2), 2, 2)[1])[:2]
    [Entry(arr_ts=None, src=None, dst=0, dep_ts=None, port=0), Entry(arr_ts=None, src=None, dst=2, dep_ts=None, port=0)]
    """
    return [Entry(None, None, t, None, p)
            for t, ports in enumerate(compile_entries(table)) for p in ports if p != LOCAL]


def render_table(table: LpmTable) -> list[tuple[str, tuple[int, ...]]]:
    """The reduced table in prefix form, longest prefixes first: ``('0**', (0, 2))``;
    the Local entry has port ``LOCAL`` (-1)."""
    return [(format_prefix(p, table.b, table.d), ports) for p, ports in table.entries.items()]


def format_table(table: LpmTable) -> str:
    """:func:`render_table` as text lines ``'0** -> 0,2'`` (``L`` for Local)."""
    return "\n".join(f"{pre} -> " + ",".join("L" if p == LOCAL else str(p) for p in ports)
                     for pre, ports in render_table(table))


def entry_count(table: LpmTable, *, include_local: bool = True, rows: bool = False) -> int:
    """Entries of a reduced table: prefixes (``rows=True``: prefix-port pairs, one per
    multipath port), the Local entry included unless ``include_local=False``."""
    return sum(len(ports) if rows else 1 for ports in table.entries.values()
               if include_local or ports != (LOCAL,))


def table_sizes(tables: Sequence[LpmTable], *, include_local: bool = True,
                rows: bool = False) -> np.ndarray:
    """Per-node :func:`entry_count` as an int64 array.

    >>> table_sizes(build_tables(static_successors(2, 3), 2, 3)).tolist()
    [4, 6, 6, 5, 5, 6, 6, 4]
    """
    return np.array([entry_count(t, include_local=include_local, rows=rows) for t in tables],
                    dtype=np.int64)


# ---------------------------------------------------------------------------------------
# greedy routing
# ---------------------------------------------------------------------------------------
def _next_ports(tables: Sequence[LpmTable], v: int, dst: int) -> list[int]:
    ports = lookup(tables[v], dst)
    if not ports:
        raise ConfigError("dst", dst, f"node {v} has no table entry for it")
    return ports


def greedy_route(src: int, dst: int, tables: Sequence[LpmTable]) -> list[int]:
    """Nodes visited from ``src`` to ``dst`` (both included) following each node's LPM
    lookup, taking the lowest port of a multipath entry. ``tables[v]`` is node ``v``'s
    table (:func:`build_tables`). With the static backbone in place the de Bruijn distance
    to ``dst`` drops at every hop, so a route has at most ``d`` hops.

    >>> b, d = 2, 3
    >>> succ = np.vstack([static_successors(b, d), np.full((1, 8), -1)])
    >>> succ[2, 0b011] = 0b100                    # one DA link 011 -> 100 on port 2
    >>> greedy_route(0b011, 0b001, build_tables(succ, b, d))
    [3, 4, 1]
    """
    n = len(tables)
    v = _check_node("src", src, n)
    _check_node("dst", dst, n)
    path = [v]
    while v != dst:
        port = _next_ports(tables, v, dst)[0]
        v = tables[v].neighbours[port]
        path.append(v)
        if len(path) > n:
            raise InvariantError(f"greedy route {src} -> {dst} loops: {path}")
    return path


def greedy_routes(src: int, dst: int, tables: Sequence[LpmTable]) -> list[list[int]]:
    """Every route greedy routing may take from ``src`` to ``dst`` when a multipath entry
    may use any of its ports, as distinct node sequences in port order (parallel links to
    one neighbour give one route). The ports of an entry share its path-length bound, the
    neighbours' de Bruijn distance to ``dst``; a route may still come out shorter than
    another when a DA link further on makes a shortcut.

    >>> b, d = 2, 3
    >>> succ = np.vstack([static_successors(b, d), np.full((1, 8), -1)])
    >>> succ[2, 0b011] = 0b100
    >>> [[format_label(v, b, d) for v in r] for r in greedy_routes(0b011, 0b010, build_tables(succ, b, d))]
    [['011', '110', '101', '010'], ['011', '100', '001', '010']]
    """
    n = len(tables)
    _check_node("src", src, n)
    _check_node("dst", dst, n)
    out: list[list[int]] = []
    stack: list[list[int]] = [[int(src)]]
    while stack:
        path = stack.pop()
        v = path[-1]
        if v == dst:
            out.append(path)
            continue
        if len(path) > n:
            raise InvariantError(f"greedy route {src} -> {dst} loops: {path}")
        nxt = dict.fromkeys(tables[v].neighbours[p] for p in _next_ports(tables, v, dst))
        stack.extend([*path, w] for w in reversed(nxt))
    return out


# ---------------------------------------------------------------------------------------
# DA links: centralized greedy (Alg. 2)
# ---------------------------------------------------------------------------------------
def _check_matchings(name: str, a: object, k: int, n: int) -> np.ndarray:
    arr = np.asarray(a)
    if arr.shape != (k, n) or arr.dtype.kind not in "iu":
        raise ConfigError(name, getattr(arr, "shape", a), f"expected an integer ({k}, {n}) array")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < -1 or arr.max() >= n):
        raise ConfigError(name, arr.tolist(), f"entries must be nodes 0..{n - 1} or -1")
    for i, row in enumerate(arr.tolist()):
        seen: set[int] = set()
        for s, t in enumerate(row):
            if t < 0:
                continue
            if t in seen:
                raise ConfigError(name, row, f"switch {i}: ingress port of node {t} used twice")
            if name == "current" and t == s:
                raise ConfigError(name, row, f"switch {i}: node {s} linked to itself")
            seen.add(t)
    return arr


def _max_matching(left: list[int], adj: Mapping[int, list[int]]) -> dict[int, int]:
    """Maximum bipartite matching left → right (augmenting paths, tried in list order)."""
    match_l: dict[int, int] = {}
    match_r: dict[int, int] = {}
    for root in left:
        visited: set[int] = set()
        stack = [(root, iter(adj.get(root, ())))]
        path: list[tuple[int, int]] = []  # edge chosen at each stack level
        found = False
        while stack and not found:
            u, it = stack[-1]
            for r in it:
                if r in visited:
                    continue
                visited.add(r)
                path.append((u, r))
                w = match_r.get(r)
                if w is None:
                    found = True
                else:
                    stack.append((w, iter(adj.get(w, ()))))
                break
            else:
                stack.pop()
                if stack:
                    path.pop()
        if found:
            for u, r in path:
                match_l[u] = r
                match_r[r] = u
    return match_l


def greedy_da(demand: np.ndarray, k_d: int, current: np.ndarray | None,
              static_succ: np.ndarray | None, rng: np.random.Generator | int, *,
              v_th: float = 0.0, passes: int | None = None,
              prefer_existing: bool = True, fill: bool = True) -> np.ndarray:
    """Centralized Greedy-DA-links (Alg. 2, §3.2.1): the new DA matchings as an int64
    array ``(k_d, n)`` — entry ``[i, s]`` is the node that egress port ``i`` of ``s``
    reaches through DA switch ``i``, or ``-1``; each row is a directed matching.

    ``demand[s, t]`` (bytes, ``n x n``, non-negative) is the demand estimate; the
    ``k_d * n`` largest entries above ``v_th`` with ``s != t`` are served largest first
    (ties by ``(s, t)``), each on the first switch whose egress port of ``s`` and ingress
    port of ``t`` are free — or, with ``prefer_existing``, first on a switch where
    ``current`` already has the link ``s -> t``. Passes repeat (at most ``passes``, None:
    until a pass adds nothing), each giving a pair at most one more link. Free ports are
    then matched per switch, parallel to a static link of ``static_succ`` (``(b, n)``, as
    from :func:`static_successors`; None: no preference) where possible, otherwise at
    random with ``rng`` (a ``numpy.random.Generator`` or a seed). With
    ``prefer_existing``, links of ``current`` whose ports are still free are kept (parallel
    ones before new parallel ones, others before random ones). ``fill=False`` stops after
    the demand links (the other ports stay ``-1``). Bad input raises
    :class:`ConfigError` naming the argument.

    >>> dem = np.zeros((4, 4)); dem[0, 1] = 10; dem[0, 2] = 5
    >>> greedy_da(dem, 1, None, None, 0, fill=False).tolist()   # 0 -> 1 takes egress 0 of node 0
    [[1, -1, -1, -1]]
    """
    if not _is_int(k_d) or k_d < 0:
        raise ConfigError("k_d", k_d, "the number of DA switches must be an integer >= 0")
    k_d = int(k_d)
    try:
        dem = np.asarray(demand, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError("demand", demand, "expected a numeric n x n matrix") from None
    if dem.ndim != 2 or dem.shape[0] != dem.shape[1] or dem.shape[0] < 1:
        raise ConfigError("demand", dem.shape, "expected a square n x n matrix")
    if not np.all(np.isfinite(dem)) or np.any(dem < 0):
        bad = np.argwhere(~np.isfinite(dem) | (dem < 0))[0]
        raise ConfigError("demand", float(dem[bad[0], bad[1]]),
                          f"entry [{bad[0]}, {bad[1]}] must be finite and >= 0")
    n = dem.shape[0]
    if not isinstance(v_th, Real) or not v_th >= 0:
        raise ConfigError("v_th", v_th, "the demand threshold must be a number >= 0")
    if passes is not None and (not _is_int(passes) or passes < 1):
        raise ConfigError("passes", passes, "must be an integer >= 1 or None")
    cur = (np.full((k_d, n), -1, dtype=np.int64) if current is None
           else _check_matchings("current", current, k_d, n))
    static: list[list[int]] = []
    if static_succ is not None:
        st = np.asarray(static_succ)
        if st.ndim != 2 or st.shape[1] != n:
            raise ConfigError("static_succ", getattr(st, "shape", static_succ),
                              f"expected an integer (b, {n}) array")
        static = _check_matchings("static_succ", st, st.shape[0], n).tolist()
    if isinstance(rng, np.random.Generator):
        gen = rng
    elif _is_int(rng) and rng >= 0:
        gen = np.random.default_rng(int(rng))
    else:
        raise ConfigError("rng", rng, "expected a numpy.random.Generator or a seed >= 0")

    out = [[-1] * n for _ in range(k_d)]
    if k_d == 0:
        return np.zeros((0, n), dtype=np.int64)
    busy_in = [[False] * n for _ in range(k_d)]
    old = cur.tolist()

    # -- demand links, largest first ----------------------------------------------------
    s_idx, t_idx = np.nonzero((dem > v_th) & ~np.eye(n, dtype=bool))
    order = np.lexsort((t_idx, s_idx, -dem[s_idx, t_idx]))[:k_d * n]
    pairs = list(zip(s_idx[order].tolist(), t_idx[order].tolist()))
    done = 0
    while passes is None or done < passes:
        added = False
        for s, t in pairs:
            free = [i for i in range(k_d) if out[i][s] < 0 and not busy_in[i][t]]
            if not free:
                continue
            same = [i for i in free if old[i][s] == t] if prefer_existing else []
            i = same[0] if same else free[0]
            out[i][s] = t
            busy_in[i][t] = True
            added = True
        done += 1
        if not added:
            break

    if not fill:
        return np.array(out, dtype=np.int64)

    # -- leftover ports, switch by switch -------------------------------------------------
    parallel = [set(row[s] for row in static) - {s} for s in range(n)]
    for i in range(k_d):
        row, busy = out[i], busy_in[i]

        def link(s: int, t: int) -> None:
            row[s] = t
            busy[t] = True

        if prefer_existing:
            for s in range(n):
                t = old[i][s]
                if row[s] < 0 and t >= 0 and not busy[t] and t in parallel[s]:
                    link(s, t)
        egress = [s for s in range(n) if row[s] < 0]
        adj = {s: [t for t in dict.fromkeys(r[s] for r in static) if t != s and not busy[t]]
               for s in egress}
        for s, t in _max_matching(egress, adj).items():
            link(s, t)
        if prefer_existing:
            for s in range(n):
                t = old[i][s]
                if row[s] < 0 and t >= 0 and not busy[t]:
                    link(s, t)
        egress = [s for s in range(n) if row[s] < 0]
        ingress = [t for t in range(n) if not busy[t]]
        targets = [ingress[k] for k in gen.permutation(len(ingress)).tolist()]
        m = len(egress)
        if m > 1:
            for k in range(m):  # swap a self-loop with the next pair: both end loop-free
                if egress[k] == targets[k]:
                    j = (k + 1) % m
                    targets[k], targets[j] = targets[j], targets[k]
        for s, t in zip(egress, targets):
            if s != t:
                link(s, t)
    return np.array(out, dtype=np.int64)


def kept_links(current: np.ndarray | None, new: np.ndarray) -> np.ndarray:
    """Boolean ``(k_d, n)``: the DA link on egress port ``i`` of ``s`` is the same before
    and after (it stays up, no reconfiguration delay). A changed port with a link in
    ``new`` is retuned and unusable for the reconfiguration delay δ.

    >>> kept_links(np.array([[1, -1, 0]]), np.array([[1, 2, -1]])).tolist()
    [[True, False, False]]
    """
    nw = np.asarray(new, dtype=np.int64)
    if current is None:
        return np.zeros(nw.shape, dtype=bool)
    cur = np.asarray(current, dtype=np.int64)
    if cur.shape != nw.shape:
        raise ConfigError("current", cur.shape, f"expected the shape of new, {nw.shape}")
    return (cur == nw) & (nw >= 0)
