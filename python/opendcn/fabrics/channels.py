"""Virtual channels of a lossless (``credit``) network and their dependency graph.

A packet that holds a buffer slot of channel ``c`` on the link out of port ``g`` and
waits for a slot of channel ``c'`` on the link out of port ``q`` (its next hop) makes the
channel ``(g, c)`` depend on ``(q, c')``. If the graph of these dependencies over every
hop pair any packet can take is acyclic, credit-based flow control cannot deadlock
(Dally and Seitz); a cycle is the shape a deadlock takes.

:func:`channel_dependency_graph` builds that graph from a built network exactly as the
packet engine routes and picks channels: the tables (a node's entries for the packet's
source first, else its wildcard entries; every candidate of a per-packet multipath
choice is taken) or the source routes, the circuits in force, and the channel rule —
hop count by default, or the routing's rule set with
:meth:`opendcn.network.Network.vc_rule`. :func:`channel_dependency_cycle` returns a
cycle of it, or None.

>>> import opendcn as od
>>> net = od.Network(od.Config(nodes=4, uplinks=1))
>>> net.deploy_topo([od.Circuit(i, 0, (i + 1) % 4, 0, None, True) for i in range(4)])
>>> net.deploy_routing({i: [od.Entry(None, None, d, None, 0) for d in range(4) if d != i] for i in range(4)})
>>> net.transport("credit", vcs=2)["credit_vcs"]
2
>>> channel_dependency_cycle(net)      # a ring on 2 hop-indexed channels: channel 1 wraps
[(0, 0, 1), (1, 0, 1), (2, 0, 1), (3, 0, 1)]
>>> net.transport(vcs=3)["credit_vcs"]       # paths of at most 3 links: one channel each
3
>>> channel_dependency_cycle(net) is None
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConfigError

__all__ = ["channel_dependency_graph", "channel_dependency_cycle", "dependency_edges"]


def _expand(lo: np.ndarray, cnt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, index) pairs for ranges ``lo[i] .. lo[i] + cnt[i]``."""
    own = np.repeat(np.arange(len(lo)), cnt)
    start = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
    return own, start + np.arange(int(cnt.sum()))


def _next_vc(prev_g: np.ndarray, prev_c: np.ndarray, q: np.ndarray, cls: np.ndarray, step: int | None,
             k: int) -> np.ndarray:
    """The engine's channel on port ``q`` for packets whose previous link left through
    ``prev_g`` on channel ``prev_c`` (``prev_g < 0``: the first link, channel 0)."""
    first = prev_g < 0
    if step is None:
        inc = np.ones(len(q), np.int64)                       # hop count
    else:
        bit = (8 * cls[np.maximum(prev_g, 0)] + cls[q]).astype(np.uint64)
        inc = ((np.uint64(step) >> bit) & np.uint64(1)).astype(np.int64)
    return np.where(first, 0, np.minimum(prev_c + inc, k - 1))


def dependency_edges(net: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """The channel dependencies of ``net`` as ``(from, to, vcs)``: channel ids
    ``g · vcs + c`` (global port ``g``, channel ``c``), one row per distinct dependency."""
    if net._peer is None:
        raise ConfigError("network", net.arch, "deploy circuits (deploy_topo) before checking channel dependencies")
    if net.slices != 1:
        raise ConfigError("network", net.arch, f"the channel check models static circuits; this network cycles "
                                               f"{net.slices} time slices")
    t = net._transport
    k = int(t.credit_vcs)
    step = t.credit_vc_step
    P = net.n_ports
    cls = net._vc_class if net._vc_class is not None else np.zeros(P, np.int64)
    peer = net._peer[0]
    pnode = np.searchsorted(net.port_offset, np.arange(P), side="right") - 1
    nxt = np.where(peer >= 0, pnode[np.maximum(peer, 0)], -1)
    if net._router == "source":
        return _source_edges(net, nxt, cls, step, k) + (k,)
    if net._router != "table":
        raise ConfigError("routing", net._router, "the channel check follows tables or source routes, not a "
                                                  "built-in router")
    cols = net._table_columns()
    if len(cols["tf_node"]) and ((cols["tf_arr"] >= 0).any() or (cols["tf_dep"] >= 0).any()):
        raise ConfigError("routing", net.arch, "the channel check needs tables without time slices")
    return _table_edges(net, cols, nxt, cls, step, k) + (k,)


def _table_edges(net: Any, cols: dict[str, np.ndarray], nxt: np.ndarray, cls: np.ndarray, step: int | None,
                 k: int) -> tuple[np.ndarray, np.ndarray]:
    N = int(net.config.nodes)
    P = int(net.n_ports)
    node, src, dst = (np.asarray(cols[c], np.int64) for c in ("tf_node", "tf_src", "tf_dst"))
    gport = np.asarray(cols["tf_port"], np.int64)
    # entries sorted by (node, dst, src + 1): an exact source before the wildcard (0)
    key = (node * N + dst) * (N + 1) + (src + 1)
    order = np.argsort(key, kind="stable")
    key, gport = key[order], gport[order]
    # a packet's source matters only where some node has entries for it and its
    # destination; elsewhere the states of all sources merge (source N: none matches)
    exact = np.zeros((N + 1, N), bool)
    ex = src >= 0
    exact[src[ex], dst[ex]] = True
    s0, d0 = np.nonzero(~np.eye(N, dtype=bool))
    # a state: (pair, port its last link left through or -1 at the source, channel)
    st_p = s0 * N + d0
    st_g = np.full(len(st_p), -1, np.int64)
    st_c = np.zeros(len(st_p), np.int64)
    seen = np.sort((st_p * (P + 1) + st_g + 1) * k + st_c)
    froms: list[np.ndarray] = []
    tos: list[np.ndarray] = []
    while len(st_p):
        s, d = st_p // N, st_p % N
        v = np.where(st_g < 0, s, nxt[np.maximum(st_g, 0)])
        k1 = np.where(s < N, (v * N + d) * (N + 1) + (s + 1), -1)
        k0 = (v * N + d) * (N + 1)
        lo1, hi1 = np.searchsorted(key, k1, "left"), np.searchsorted(key, k1, "right")
        lo0, hi0 = np.searchsorted(key, k0, "left"), np.searchsorted(key, k0, "right")
        use1 = hi1 > lo1
        own, ent = _expand(np.where(use1, lo1, lo0), np.where(use1, hi1 - lo1, hi0 - lo0))
        q = gport[ent]
        ok = nxt[q] >= 0                       # a port without a circuit leads nowhere
        own, q = own[ok], q[ok]
        g, c = st_g[own], st_c[own]
        c2 = _next_vc(g, c, q, cls, step, k)
        dep = g >= 0
        froms.append(g[dep] * k + c[dep])
        tos.append(q[dep] * k + c2[dep])
        p2 = st_p[own]
        s2, d2 = p2 // N, p2 % N
        p2 = np.where(exact[s2, d2], p2, N * N + d2)
        # the next states: not yet seen, and not at their destination
        nk = np.unique((p2 * (P + 1) + q + 1) * k + c2)
        pos = np.minimum(np.searchsorted(seen, nk), max(len(seen) - 1, 0))
        nk = nk[seen[pos] != nk] if len(seen) else nk
        seen = np.union1d(seen, nk)
        st_c = nk % k
        rest = nk // k
        st_g = rest % (P + 1) - 1
        st_p = rest // (P + 1)
        alive = nxt[st_g] != st_p % N
        st_p, st_g, st_c = st_p[alive], st_g[alive], st_c[alive]
    return _unique_edges(froms, tos, P * k)


def _source_edges(net: Any, nxt: np.ndarray, cls: np.ndarray, step: int | None,
                  k: int) -> tuple[np.ndarray, np.ndarray]:
    P = int(net.n_ports)
    routes = net._routes
    if any(ts is not None or any(dep is not None for _, dep in hops) for _, _, ts, hops in routes):
        raise ConfigError("routing", net.arch, "the channel check needs source routes without time slices")
    n = len(routes)
    length = np.array([len(r[3]) for r in routes], np.int64)
    ports = np.full((n, int(length.max()) if n else 0), -1, np.int64)
    for i, r in enumerate(routes):
        ports[i, :len(r[3])] = [h[0] for h in r[3]]
    # every route walked hop by hop, all routes at once
    v = np.array([r[0] for r in routes], np.int64)
    g = np.full(n, -1, np.int64)
    c = np.zeros(n, np.int64)
    froms: list[np.ndarray] = []
    tos: list[np.ndarray] = []
    for h in range(ports.shape[1]):
        on = (length > h) & (v >= 0)
        q = np.where(on, net.port_offset[np.maximum(v, 0)] + ports[:, h], 0)
        c2 = _next_vc(g, c, q, cls, step, k)
        dep = on & (g >= 0)
        froms.append(g[dep] * k + c[dep])
        tos.append(q[dep] * k + c2[dep])
        v = np.where(on, nxt[q], -1)
        g = np.where(on, q, -1)
        c = c2
    return _unique_edges(froms, tos, P * k)


def _unique_edges(froms: list[np.ndarray], tos: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    if not froms:
        z = np.zeros(0, np.int64)
        return z, z
    e = np.unique(np.concatenate(froms).astype(np.int64) * n + np.concatenate(tos).astype(np.int64))
    return e // n, e % n


def _label(net: Any, ch: int, k: int) -> tuple[int, int, int]:
    g, c = divmod(int(ch), k)
    node = int(np.searchsorted(net.port_offset, g, side="right") - 1)
    return node, g - int(net.port_offset[node]), c


def channel_dependency_graph(net: Any) -> Any:
    """The channel dependency graph of ``net`` (a networkx ``DiGraph``) over channels
    labelled ``(node, port, channel)``: the channel of the link out of local ``port`` of
    ``node``."""
    import networkx as nx

    a, b, k = dependency_edges(net)
    g = nx.DiGraph()
    g.add_edges_from((_label(net, x, k), _label(net, y, k)) for x, y in zip(a.tolist(), b.tolist()))
    return g


def channel_dependency_cycle(net: Any) -> list[tuple[int, int, int]] | None:
    """A cycle of the channel dependency graph of ``net`` as ``(node, port, channel)``
    in dependency order, starting from its smallest channel; None when the graph is
    acyclic (no packet the routes allow can take part in a deadlock)."""
    import networkx as nx
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    a, b, k = dependency_edges(net)
    n = int(net.n_ports) * k
    if len(a) == 0:
        return None
    loops = a[a == b]
    if len(loops):
        return [_label(net, int(loops.min()), k)]
    # only a strongly connected component of two or more channels holds a cycle
    m = sparse.csr_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    _, comp = connected_components(m, directed=True, connection="strong")
    size = np.bincount(comp)
    big = np.flatnonzero(size[comp[a]] > 1)
    if len(big) == 0:
        return None
    first = int(comp[a[big].min()])
    sel = big[(comp[a[big]] == first) & (comp[b[big]] == first)]
    sub = nx.DiGraph()
    sub.add_edges_from(zip(a[sel].tolist(), b[sel].tolist()))
    cyc = [int(u) for u, _ in nx.find_cycle(sub, source=int(a[sel].min()))]
    i = cyc.index(min(cyc))
    return [_label(net, x, k) for x in cyc[i:] + cyc[:i]]
