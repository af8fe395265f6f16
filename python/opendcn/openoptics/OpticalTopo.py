"""OpenOptics' topology generators: circuits as ``[time_slice, node1, node2, port1, port2]``.

These follow OpenOptics' semantics, which differ from the native ``opendcn.fabrics.topology``:

- :func:`round_robin` keeps node 0 fixed and, after every slice, moves the last node of
  the list to the second place (slice 0 pairs 0-(N-1), 1-(N-2), ...); an odd count gets
  a dummy partner that idles. ``self_loop=True`` appends a slice in which every node is
  connected to itself (its port idles);
- :func:`opera` folds that schedule (with its self-loop slice) onto ``nb_link`` ports and
  staggers the ports, one reconfiguring per slice: ``nb_node`` slices, each circuit held
  for ``nb_link`` consecutive slices (``nb_link - 1`` with ``disable_last_ts``). Like
  OpenOptics, the order of the round robin's slices is kept;
- :func:`shale` runs one round robin per dimension, dimension ``d`` on port ``d``, all in
  the same slices;
- :func:`static_topo` is a random ``nb_link``-regular graph (seed 1) in slice 0;
- :func:`bipartite_matching` is the traffic-aware maximum-weight matching.

A circuit with ``node1 == node2`` holds the port (idle for that slice), and
``[ts, -1, -1, -1, -1]`` only says that slice ``ts`` exists (an empty guardband slice).

>>> round_robin(nb_node=4)
[[0, 0, 3, 0, 0], [0, 1, 2, 0, 0], [1, 0, 2, 0, 0], [1, 3, 1, 0, 0], [2, 0, 1, 0, 0], [2, 2, 3, 0, 0]]
>>> sorted({c[0] for c in opera(8, 4)}), len(opera(8, 4))
([0, 1, 2, 3, 4, 5, 6, 7], 144)
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..fabrics import topology as _native
from ..errors import ConfigError

__all__ = ["round_robin", "opera", "shale", "static_topo", "bipartite_matching", "from_schedule",
           "add_guardband", "topo_randomize_ts", "port_offset", "get_nb_time_slice_from_circuits",
           "get_nb_links_from_circuits", "draw_topo"]

Circuit = list[int]


def _int(name: str, v: Any, low: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ConfigError(name, v, f"expected an integer >= {low}")
    return int(v)


def _node_list(nb_node: Any, nodes: Any) -> list[int | None]:
    if nodes is None:
        if nb_node is None:
            raise ConfigError("nb_node", None, "give nb_node or nodes")
        return list(range(_int("nb_node", nb_node, 2)))
    got = [int(x) for x in np.asarray(nodes).ravel().tolist()]
    if len(got) < 2:
        raise ConfigError("nodes", nodes, "need at least 2 nodes")
    return list(got)


def round_robin(nb_node: int | None = None, nodes: Sequence[int] | None = None, port1: int = 0, port2: int = 0,
                start_time_slice: int = 0, self_loop: bool = False, guardband: bool = False) -> list[Circuit]:
    """A 1-D round robin (circle method) over ``nodes`` (default ``0..nb_node-1``) on ports
    ``port1``/``port2``, starting at ``start_time_slice`` (see the module documentation)."""
    ring = _node_list(nb_node, nodes)
    p1, p2 = _int("port1", port1), _int("port2", port2)
    t0 = _int("start_time_slice", start_time_slice)
    if len(ring) % 2:
        ring.append(None)            # the dummy partner: whoever meets it idles
    m = len(ring)
    out: list[Circuit] = []
    for r in range(m - 1):
        for i in range(m // 2):
            a, b = ring[i], ring[m - 1 - i]
            if a is not None and b is not None:
                out.append([t0 + r, a, b, p1, p2])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    if self_loop:
        out += [[t0 + m - 1, x, x, p1, p2] for x in ring if x is not None]
    return add_guardband(out) if guardband else out


def opera(nb_node: int, nb_link: int, nodes: Sequence[int] | None = None, disable_last_ts: bool = False,
          guardband: bool = False) -> list[Circuit]:
    """Opera's staggered rotor schedule in OpenOptics' form (see the module documentation)."""
    links = _int("nb_link", nb_link, 1)
    base = round_robin(nb_node, None if nodes is None else list(nodes), self_loop=True)
    folded = [[ts // links, a, b, ts % links, ts % links] for ts, a, b, _, _ in base]
    out = port_offset(folded, disable_last_ts)
    return add_guardband(out) if guardband else out


def shale(nb_node: int, h: int, nodes: Sequence[int] | None = None, guardband: bool = False) -> list[Circuit]:
    """Shale in OpenOptics' form: ``nb_node = r**h`` nodes on an h-dimensional grid; the
    round robin of each line of dimension ``d`` runs on port ``d``, all from slice 0."""
    dims = _int("h", h, 1)
    ids = _node_list(nb_node, nodes)
    n = len(ids)
    root = round(n ** (1.0 / dims))
    if root**dims != n:
        raise ConfigError("nb_node", n, f"must be a perfect {dims}-th power for a {dims}-dimensional Shale")
    cube = np.asarray(ids).reshape([root] * dims)
    out: list[Circuit] = []
    for d in range(dims):
        for rest in itertools.product(range(root), repeat=dims - 1):
            line = np.moveaxis(cube, d, -1)[rest] if dims > 1 else cube
            out += round_robin(nodes=line.tolist(), port1=d, port2=d)
    return add_guardband(out) if guardband else out


def static_topo(nb_node: int, nb_link: int = 1) -> list[Circuit]:
    """A static random ``nb_link``-regular graph (seed 1) as circuits of slice 0; a node's
    ``k``-th edge uses its port ``k``."""
    try:
        cs = _native.static(_int("nb_node", nb_node, 2), uplink=_int("nb_link", nb_link, 1), seed=1)
    except ConfigError as e:
        raise ConfigError({"uplink": "nb_link", "nodes": "nb_node"}.get(e.field, e.field), e.value, e.reason) from None
    return [[0, c.n1, c.n2, c.p1, c.p2] for c in cs]


def bipartite_matching(nb_node: int, nb_link: int, traffic_matrix: Mapping[tuple[int, int], float],
                       prev_circuits: list[Circuit] | None = None) -> list[Circuit] | None:
    """The traffic-aware topology: a maximum-weight matching (largest size first) of the
    nodes by their traffic both ways, ``traffic_matrix[(a, b)] + traffic_matrix[(b, a)]``,
    as circuits of slice 0 on port 0. Without traffic it returns ``prev_circuits``."""
    n = _int("nb_node", nb_node, 2)
    if nb_link != 1:
        raise ConfigError("nb_link", nb_link, "bipartite_matching builds one matching: one link per node")
    if not isinstance(traffic_matrix, Mapping):
        raise ConfigError("traffic_matrix", traffic_matrix, "expected a dict {(node1, node2): traffic}")
    tm = np.zeros((n, n))
    for key, v in traffic_matrix.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(0 <= int(x) < n for x in key)):
            raise ConfigError("traffic_matrix", key, f"keys are (node1, node2) pairs of nodes 0..{n - 1}")
        if int(key[0]) != int(key[1]):
            tm[int(key[0]), int(key[1])] += float(v)
    if not np.any(tm > 0):
        return prev_circuits
    return [[0, c.n1, c.n2, 0, 0] for c in _native.bipartite_matching(n, tm, uplink=1)]


def from_schedule(schedule_file: str, nb_node: int, nb_link: int) -> list[Circuit]:
    """Circuits from a text matrix of ``slices`` rows by ``nb_node * nb_link`` columns:
    entry ``[ts][node * nb_link + port]`` is the node that port reaches (-1: none, itself:
    idle). A circuit is listed once, with the port the far end uses back."""
    try:
        table = np.loadtxt(schedule_file, dtype=int, ndmin=2)
    except (OSError, ValueError) as e:
        raise ConfigError("schedule_file", schedule_file, f"cannot read an integer matrix: {e}") from None
    n, links = _int("nb_node", nb_node, 2), _int("nb_link", nb_link, 1)
    if table.shape[1] != n * links:
        raise ConfigError("schedule_file", schedule_file, f"expected {n * links} columns (nb_node x nb_link), "
                          f"found {table.shape[1]}")
    out: list[Circuit] = []
    seen: set[tuple[int, int, int]] = set()
    for ts, row in enumerate(table.tolist()):
        for a in range(n):
            for p in range(links):
                b = row[a * links + p]
                if b < 0 or (ts, a, p) in seen:
                    continue
                if b == a:
                    out.append([ts, a, a, p, p])
                    seen.add((ts, a, p))
                    continue
                q = next((q for q in range(links) if row[b * links + q] == a and (ts, b, q) not in seen), None)
                if q is None:
                    continue
                seen |= {(ts, a, p), (ts, b, q)}
                out.append([ts, a, b, p, q])
    return out


def _by_slice(circuits: Iterable[Sequence[int]]) -> dict[int, list[tuple[int, int, int, int]]]:
    per: dict[int, list[tuple[int, int, int, int]]] = defaultdict(list)
    for c in circuits:
        ts, a, b, p, q = (int(x) for x in c)
        per[ts].append((a, b, p, q))
    return per


def add_guardband(circuits: list[Circuit]) -> list[Circuit]:
    """Insert a guardband slice after every slice whose next slice (cyclically) changes
    some port's connection: in it the ports that change are idle and the others keep their
    circuit; a guardband in which every port changes is marked ``[ts, -1, -1, -1, -1]``."""
    per = _by_slice(circuits)
    order = sorted(per)
    if len(order) <= 1:
        return [list(c) for c in circuits]

    def links(ts: int) -> dict[tuple[int, int], int]:
        got = {}
        for a, b, p, q in per[ts]:
            got[(a, p)] = b
            got[(b, q)] = a
        return got

    out: list[Circuit] = []
    t = 0
    for i, ts in enumerate(order):
        out += [[t, a, b, p, q] for a, b, p, q in per[ts]]
        now, nxt = links(ts), links(order[(i + 1) % len(order)])
        moving = {k for k in now.keys() | nxt.keys() if now.get(k) != nxt.get(k)}
        if moving:
            t += 1
            kept = [[t, a, b, p, q] for a, b, p, q in per[ts] if (a, p) not in moving and (b, q) not in moving]
            out += kept or [[t, -1, -1, -1, -1]]
        t += 1
    return out


def topo_randomize_ts(circuits: list[Circuit], seed: int | None = None) -> list[Circuit]:
    """The same circuits with their slice numbers permuted at random (``seed``: a
    reproducible permutation), sorted by slice."""
    import random

    slices = sorted({int(c[0]) for c in circuits})
    shuffled = list(slices)
    random.Random(seed).shuffle(shuffled)
    new = dict(zip(slices, shuffled))
    return sorted(([new[int(c[0])], *c[1:]] for c in circuits), key=lambda c: c[0])


def port_offset(circuits: list[Circuit], disable_last_ts: bool = False) -> list[Circuit]:
    """Stagger ports: with ``T`` slices and ``L`` ports, a circuit of slice ``ts`` on port
    ``p`` is held in slices ``ts*L + p .. ts*L + p + L - 1`` (mod ``T*L``), one slice fewer
    with ``disable_last_ts``; both ends must use the same port."""
    t, links = get_nb_time_slice_from_circuits(circuits), get_nb_links_from_circuits(circuits)
    out: list[Circuit] = []
    for i, (ts, a, b, p, q) in enumerate(circuits):
        if p != q:
            raise ConfigError(f"circuits[{i}]", [ts, a, b, p, q], "port_offset needs the same port at both ends")
        span = links - 1 if disable_last_ts else links
        out += [[(ts * links + p + k) % (t * links), a, b, p, q] for k in range(span)]
    return out


def get_nb_time_slice_from_circuits(circuits: Iterable[Sequence[int]]) -> int:
    """Largest slice + 1 (at least 1)."""
    return max((int(c[0]) for c in circuits), default=0) + 1


def get_nb_links_from_circuits(circuits: Iterable[Sequence[int]]) -> int:
    """Largest port + 1 (at least 1)."""
    return max((max(int(c[3]), int(c[4])) for c in circuits), default=0) + 1


def draw_topo(slice_to_topo: Mapping[int, Any]) -> Any:
    """A matplotlib figure with one panel per slice: the nodes on a circle and the
    circuits of that slice (self-loops left out)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    slices = sorted(slice_to_topo)
    if not slices:
        raise ConfigError("slice_to_topo", slice_to_topo, "no slice to draw")
    nodes = sorted(slice_to_topo[slices[0]].nodes)
    angle = {v: 2 * math.pi * i / max(len(nodes), 1) for i, v in enumerate(nodes)}
    xy = {v: (math.cos(a), math.sin(a)) for v, a in angle.items()}
    fig, axes = plt.subplots(1, len(slices), figsize=(3 * len(slices), 3), squeeze=False)
    for ax, ts in zip(axes[0], slices):
        for a, b in slice_to_topo[ts].edges():
            if a != b:
                ax.plot([xy[a][0], xy[b][0]], [xy[a][1], xy[b][1]], color="0.6", lw=1.5, zorder=1)
        ax.scatter([xy[v][0] for v in nodes], [xy[v][1] for v in nodes], s=300, color="#1e3a8a", zorder=2)
        for v in nodes:
            ax.text(*xy[v], str(v), color="white", ha="center", va="center", zorder=3)
        ax.set_title(f"slice {ts}")
        ax.set_aspect("equal")
        ax.axis("off")
    return fig
