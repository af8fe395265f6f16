"""Optical topologies as lists of circuits, and the feasibility check of a schedule.

What is modeled: a fabric is a set of bidirectional port-to-port circuits
``Circuit(n1, p1, n2, p2, ts)`` (see :mod:`opendcn.network.timeflow`). A traffic-oblivious (TO)
fabric cycles through ``S`` time slices ``0..S-1``; a circuit with an integer ``ts`` exists
only in that slice of every cycle, a circuit with ``ts=None`` exists in every slice
(static or traffic-aware fabrics). Nodes are numbered ``0..N-1`` and ports ``0..P-1`` on
every node; the *global port id* of port ``p`` of node ``n`` is ``n * P + p``.

Simplifications: every node has the same number of ports ``P``; slices are abstract
indices (their duration, the guardband and reconfiguration delay live in
:class:`opendcn.network.config.Config`, in picoseconds); a port carries at most one circuit per
slice, which is exactly what :func:`schedule_table` checks.

Schedule generators follow OpenOptics' ``round_robin(dimension, uplink)``: the 1-D round
robin of RotorNet/Opera/Sirius (Shale's SRRD) and the h-dimensional round robin of Shale
(EBS schedule).

>>> circuits = round_robin(4, dimension=1, uplink=1)
>>> [(c.n1, c.n2, c.ts) for c in circuits]
[(0, 1, 0), (2, 3, 0), (0, 2, 1), (1, 3, 1), (0, 3, 2), (1, 2, 2)]
>>> cycle_length(circuits)
3
>>> schedule_table(circuits, nodes=4, ports=1).tolist()
[[1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib import resources
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, check_memory
from ..network.timeflow import Circuit

__all__ = ["connect", "round_robin", "opera", "shale", "static", "bipartite_matching", "schedule_table",
           "cycle_length", "Circuit"]

# Placeholder for ``ts=None`` inside integer arrays (never a valid or user-given slice).
_STATIC = np.iinfo(np.int64).min
_MAX_CELLS = 2**28  # largest schedule table (slices x global ports) built in memory


def _is_int(v: object) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool)


def connect(n1: int, p1: int, n2: int, p2: int, ts: int | None = None) -> Circuit:
    """One circuit: port ``p1`` of node ``n1`` ↔ port ``p2`` of node ``n2`` in slice ``ts``.

    ``ts=None`` means the circuit exists in every slice. Nodes, ports and the slice must be
    integers ≥ 0 and the two nodes must differ; otherwise :class:`ConfigError` is raised.
    Whether the circuit fits a whole schedule is checked by :func:`schedule_table`.

    >>> connect(0, 1, 3, 0, ts=2)
    Circuit(n1=0, p1=1, n2=3, p2=0, ts=2, directed=False)
    """
    for name, v in (("n1", n1), ("p1", p1), ("n2", n2), ("p2", p2)):
        if not _is_int(v) or v < 0:
            raise ConfigError(name, v, "must be an integer >= 0")
    if ts is not None and (not _is_int(ts) or ts < 0):
        raise ConfigError("ts", ts, "must be an integer slice >= 0 or None (always)")
    if n1 == n2:
        raise ConfigError("n2", n2, f"a circuit cannot connect node {n1} to itself")
    return Circuit(int(n1), int(p1), int(n2), int(p2), None if ts is None else int(ts))


# ---------------------------------------------------------------------------------------
# round robin
# ---------------------------------------------------------------------------------------
def _circle_matchings(n: int) -> np.ndarray:
    """1-factorization of K_n by the circle method: int array (M, n // 2, 2) of local ids.

    Even ``n``: ``M = n - 1`` matchings; in matching ``r`` node 0 (the fixed node) pairs
    with node ``r + 1``; nodes ``1..n-1`` sit at positions ``node - 1`` of Z_{n-1} and
    positions ``(r + i)`` and ``(r - i)`` (mod n-1) pair for ``i = 1..(n-2)/2``.
    Odd ``n``: the construction runs on ``n + 1`` nodes with a virtual node ``n``; the node
    paired with it is idle, giving ``M = n`` matchings of ``(n - 1) / 2`` pairs.
    Pairs are ``(low, high)`` and sorted by ``low`` within each matching.
    """
    if n < 2:
        return np.zeros((0, 0, 2), dtype=np.int64)
    even = n if n % 2 == 0 else n + 1
    k = even - 1
    r = np.arange(k, dtype=np.int64)[:, None]
    i = np.arange(1, even // 2, dtype=np.int64)[None, :]
    a = np.concatenate([np.zeros((k, 1), np.int64), (r + i) % k + 1], axis=1)
    b = np.concatenate([r + 1, (r - i) % k + 1], axis=1)
    pairs = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=2)  # (k, even/2, 2)
    if n != even:  # drop the pair with the virtual node (id n, always the 'high' end)
        keep = pairs[:, :, 1] != n
        pairs = pairs[keep].reshape(k, even // 2 - 1, 2)
    order = np.argsort(pairs[:, :, 0], axis=1, kind="stable")
    return np.take_along_axis(pairs, order[:, :, None], axis=1)


def _integer_root(n: int, h: int) -> int | None:
    """``r`` with ``r ** h == n`` and ``r >= 2``, or None."""
    guess = int(round(n ** (1.0 / h)))
    for r in (guess - 1, guess, guess + 1):
        if r >= 2 and r**h == n:
            return r
    return None


def _matchings(n: int, h: int) -> np.ndarray:
    """Concatenated matchings of the h-D round robin: int array (M, pairs, 2) of node ids."""
    r = _integer_root(n, h) if h > 1 else n
    if r is None:
        raise ConfigError("nodes", n, f"must be a perfect {h}-th power (r**{h}) for a "
                                      f"{h}-dimensional round robin")
    local = _circle_matchings(r)  # (Mr, q, 2) digit values
    phases = []
    nodes = np.arange(n, dtype=np.int64)
    for i in range(h):
        weight = r**i
        base = nodes[(nodes // weight) % r == 0]  # one node per group: digit i == 0
        # (Mr, groups, q, 2) -> (Mr, groups*q, 2)
        ph = base[None, :, None, None] + local[:, None, :, :] * weight
        ph = ph.reshape(local.shape[0], -1, 2)
        order = np.argsort(ph[:, :, 0], axis=1, kind="stable")
        phases.append(np.take_along_axis(ph, order[:, :, None], axis=1))
    return np.concatenate(phases, axis=0)


def _nodes_uplinks(config: Any) -> tuple[int, int]:
    """(nodes, uplinks) of a Config, or (N, 1) for a plain number of nodes."""
    if _is_int(config):
        return int(config), 1
    try:
        return config.nodes, config.uplinks
    except AttributeError:
        raise ConfigError("config", config, "expected a Config or a number of nodes") from None


#: bytes a rotor circuit costs from its schedule to the running engine (measured: a 2 000-node
#: round robin, 2.0 M circuits, peaks at 1.05 GB in `opendcn run`)
CIRCUIT_BYTES = 500


def _check_schedule_memory(n: int, h: int) -> None:
    """A named error, before anything is allocated, for a round robin the machine cannot
    hold (its circuits grow as n squared for h = 1)."""
    r = _integer_root(n, h) if h > 1 else n
    if r is None:
        return                          # _matchings names the error
    per_phase = r - 1 if r % 2 == 0 else r
    circuits = h * per_phase * (n // 2)
    check_memory("nodes", n, circuits * CIRCUIT_BYTES,
                 f"a {h}-D round robin over {n} nodes ({circuits:,} circuits)")


def round_robin(config: Any, dimension: int = 1, uplink: int | None = None, *, order: str = "rounds",
                seed: int = 1) -> list[Circuit]:
    """OpenOptics' ``round_robin(dimension, uplink)``: a traffic-oblivious rotor schedule.

    ``config`` is a :class:`~opendcn.network.config.Config` (its ``nodes`` and ``uplinks`` are used)
    or simply the number of nodes ``N``. ``uplink`` (default ``config.uplinks``, or 1 for a
    plain ``N``) is the number of optical ports ``U`` per node.

    ``dimension=1`` (RotorNet, Opera, Sirius; Shale's SRRD): a 1-factorization of the
    complete graph on the ``N`` nodes by the circle method with node 0 fixed — ``N - 1``
    perfect matchings for even ``N``, ``N`` matchings with one idle node each for odd ``N``
    (a virtual node ``N`` is added and its partner idles). For ``N = 4`` the slices are
    ``{0-1, 2-3}``, ``{0-2, 1-3}``, ``{0-3, 1-2}`` (OpenOptics Fig. 2).

    ``dimension=h > 1`` (Shale's EBS schedule): ``N`` must be a perfect h-th power
    ``r**h``; node coordinates are its base-``r`` digits (digit ``i`` = ``(node // r**i) % r``).
    Phase ``i`` is the 1-D round robin over digit ``i`` (``r - 1`` matchings for even ``r``,
    ``r`` for odd), run in parallel in every group of nodes that differ only in digit
    ``i``; the schedule is phase 0, then phase 1, ... .

    With ``U`` ports the ``M`` matchings are spread over ports: slice ``s``, port ``p``
    carries matching ``s * U + p``; the cycle has ``ceil(M / U)`` slices and a port whose
    matching index is ``>= M`` idles in that slice. A circuit uses the same port number at
    both ends. Circuits are returned ordered by (slice, port, lower node).

    ``order`` (1-D only) says which matchings share a slice: ``"rounds"``, the circle
    method's consecutive rounds (node 0 then meets U consecutive nodes per slice, and the
    union of a slice's matchings is ring-like: a path inside one slice between far nodes
    takes up to about N / (2U) hops); ``"shuffled"``, the rounds in a random order drawn
    from ``seed`` first, so each slice's union is a random U-regular graph, an expander
    (what OpenOptics' multi-link ``opera()`` means to do: "Randomize topo by shuffling
    topologies to different time slices" before merging U rounds into one slice; its
    ``topo_randomize_ts`` returns the shuffled list, which ``opera()`` does not keep).

    >>> [(c.n1, c.p1, c.n2, c.ts) for c in round_robin(4, uplink=2)]
    [(0, 0, 1, 0), (2, 0, 3, 0), (0, 1, 2, 0), (1, 1, 3, 0), (0, 0, 3, 1), (1, 0, 2, 1)]
    """
    n, default_uplinks = _nodes_uplinks(config)
    if not _is_int(n) or n < 2:
        raise ConfigError("nodes", n, "need an integer number of nodes >= 2")
    if not _is_int(dimension) or dimension < 1:
        raise ConfigError("dimension", dimension, "must be an integer >= 1")
    u = default_uplinks if uplink is None else uplink
    if not _is_int(u) or u < 1:
        raise ConfigError("uplink", u, "must be an integer >= 1")
    n, h, u = int(n), int(dimension), int(u)
    _check_schedule_memory(n, h)
    mats = _matchings(n, h)  # (M, Q, 2)
    if order not in ("rounds", "shuffled"):
        raise ConfigError("order", order, "expected rounds or shuffled")
    if order == "shuffled":
        if h != 1:
            raise ConfigError("order", order, "shuffles the rounds of the 1-D round robin (dimension=1)")
        from ..rng import stream

        mats = mats[stream(seed, "topology.round_robin.order").permutation(mats.shape[0])]
    m_count, q = mats.shape[0], mats.shape[1]
    m = np.repeat(np.arange(m_count, dtype=np.int64), q)
    ts = (m // u).tolist()
    port = (m % u).tolist()
    a = mats[:, :, 0].reshape(-1).tolist()
    b = mats[:, :, 1].reshape(-1).tolist()
    return [Circuit(x, p, y, p, s) for x, y, p, s in zip(a, b, port, ts)]


def sorn(config: Any, tm: Any = None, copies: int = 2, uplink: int | None = None) -> list[Circuit]:
    """A semi-oblivious round robin (OpenOptics' ``sorn(TM)``): the 1-D round robin's
    ``M`` matchings share ``copies × M`` slots of a fixed cycle. Every matching keeps one
    slot (every pair stays connected once per cycle, so VLB still works); the other
    ``(copies − 1) × M`` slots go to matchings in proportion to the traffic of the pairs
    they connect (``tm[i][j] + tm[j][i]``, largest remainders, ties to the lower matching) —
    dense connections between hotspots, sparse elsewhere. ``tm=None`` gives the uniform
    schedule (each matching ``copies`` times). Slots of one matching are spread over the
    cycle (interleaved by rounds). The cycle length never changes, so a running network can
    be re-skewed with ``deploy_topo``.

    >>> len({c.ts for c in sorn(4, [[0, 9, 0, 0], [9, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])})
    6
    """
    n, default_uplinks = _nodes_uplinks(config)
    if not _is_int(copies) or copies < 1:
        raise ConfigError("copies", copies, "must be an integer >= 1")
    u = default_uplinks if uplink is None else uplink
    if not _is_int(u) or u < 1:
        raise ConfigError("uplink", u, "must be an integer >= 1")
    mats = _matchings(int(n), 1)
    m_count = mats.shape[0]
    extra = (copies - 1) * m_count
    if tm is None:
        counts = np.full(m_count, copies, dtype=np.int64)
    else:
        t = np.asarray(tm, dtype=float)
        if t.shape != (n, n) or not np.all(np.isfinite(t)) or np.any(t < 0):
            raise ConfigError("tm", getattr(t, "shape", tm), f"expected a non-negative {n}x{n} matrix")
        sym = t + t.T
        w = np.array([sym[mats[m, :, 0], mats[m, :, 1]].sum() for m in range(m_count)])
        if w.sum() <= 0:
            counts = np.full(m_count, copies, dtype=np.int64)
        else:
            share = w / w.sum() * extra
            base = np.floor(share).astype(np.int64)
            rest = extra - int(base.sum())
            order = np.lexsort((np.arange(m_count), -(share - base)))
            base[order[:rest]] += 1
            counts = base + 1
    # interleave: round k takes every matching that still has slots left
    seq: list[int] = []
    left = counts.copy()
    while left.any():
        for m in range(m_count):
            if left[m] > 0:
                seq.append(m)
                left[m] -= 1
    out = []
    for slot, m in enumerate(seq):
        ts, port = slot // u, slot % u
        for a, b in mats[m].tolist():
            out.append(Circuit(a, port, b, port, ts))
    return out


# ---------------------------------------------------------------------------------------
# feasibility / schedule table
# ---------------------------------------------------------------------------------------
def _normalize_slow(circuits: Sequence[Any]) -> list[tuple[int, int, int, int, int]]:
    """Per-circuit validation of shape and types (error path and odd inputs)."""
    rows = []
    for i, c in enumerate(circuits):
        try:
            fields = tuple(c)
        except TypeError:
            raise ConfigError(f"circuits[{i}]", c, "expected Circuit(n1, p1, n2, p2, ts)") from None
        if len(fields) == 4:
            fields = (*fields, None)
        if len(fields) == 6:
            if not isinstance(fields[5], (bool, np.bool_)):
                raise ConfigError(f"circuits[{i}]", c, f"directed must be True or False, got {fields[5]!r}")
            fields = fields[:5]
        if len(fields) != 5:
            raise ConfigError(f"circuits[{i}]", c, "expected Circuit(n1, p1, n2, p2, ts)")
        for name, v in zip(("n1", "p1", "n2", "p2"), fields[:4]):
            if not _is_int(v):
                raise ConfigError(f"circuits[{i}]", c, f"{name} must be an integer, got {v!r}")
        t = fields[4]
        if t is not None and not _is_int(t):
            raise ConfigError(f"circuits[{i}]", c, f"ts must be an integer slice or None, got {t!r}")
        vals = [int(v) for v in fields[:4]] + [_STATIC if t is None else int(t)]
        if any(abs(v) >= 2**62 for v in vals if v != _STATIC):
            raise ConfigError(f"circuits[{i}]", c, "value out of range")
        rows.append((vals[0], vals[1], vals[2], vals[3], vals[4]))
    return rows


def _as_array(circuits: Iterable[Any]) -> tuple[list[Any], np.ndarray]:
    """Circuits as an int64 array (C, 5); ``ts=None`` becomes ``_STATIC``."""
    circuits = circuits if isinstance(circuits, list) else list(circuits)
    if not circuits:
        return circuits, np.zeros((0, 5), dtype=np.int64)
    try:
        rows = [(c[0], c[1], c[2], c[3], _STATIC if c[4] is None else c[4]) for c in circuits]
        arr = np.array(rows)
        ok = arr.ndim == 2 and arr.shape[1] == 5 and arr.dtype.kind in "iu"
        if ok and not all(type(c) is Circuit for c in circuits):
            ok = all(len(c) == 5 for c in circuits)
        if ok:
            return circuits, arr.astype(np.int64, copy=False)
    except (TypeError, IndexError, ValueError, OverflowError):
        pass
    return circuits, np.array(_normalize_slow(circuits), dtype=np.int64).reshape(-1, 5)


def _slice_label(ts: int) -> str:
    return "every slice (ts=None)" if ts == _STATIC else f"slice {ts}"


def _directed_table(circuits: list[Any], arr: np.ndarray, g1: np.ndarray, g2: np.ndarray,
                    directed: np.ndarray, s_count: int, g_count: int, ports: int) -> np.ndarray:
    """The peer table of a schedule with directed circuits: a port may send on one
    circuit and receive on one circuit per slice (a two-way circuit does both on both
    ends); a second sender or receiver on a port in a slice is a conflict, reported at the
    later circuit."""
    table = np.full((s_count, g_count), -1, dtype=np.int64)
    send: dict[tuple[int, int], int] = {}
    recv: dict[tuple[int, int], int] = {}
    for i in range(arr.shape[0]):
        t = int(arr[i, 4])
        slices = range(s_count) if t == _STATIC else (t,)
        a, b = int(g1[i]), int(g2[i])
        uses = [(send, a, b), (recv, b, a)]
        if not directed[i]:
            uses += [(send, b, a), (recv, a, b)]
        for s_ in slices:
            for book, g, other in uses:
                j = book.get((s_, g))
                if j is not None:
                    node, port = divmod(g, ports)
                    role = "sends" if book is send else "receives"
                    raise ConfigError(f"circuits[{i}]", circuits[i],
                                      f"{_slice_label(t)}: port {port} of node {node} already {role} on "
                                      f"circuits[{j}]")
                book[(s_, g)] = i
                if book is send:
                    table[s_, g] = other
    return table


def cycle_length(circuits: Iterable[Any]) -> int:
    """Number of slices ``S`` of a schedule: largest ``ts`` + 1, or 1 if no circuit has one.

    >>> cycle_length([connect(0, 0, 1, 0, ts=4), connect(0, 1, 2, 0)])
    5
    """
    circuits, arr = _as_array(circuits)
    if arr.shape[0] == 0:
        return 1
    ts = arr[:, 4]
    timed = ts != _STATIC
    if np.any(timed & (ts < 0)):
        i = int(np.flatnonzero(timed & (ts < 0))[0])
        c = circuits[i]
        raise ConfigError(f"circuits[{i}]", c,
                          f"slice {int(ts[i])}: negative slice for port {int(arr[i, 1])} of "
                          f"node {int(arr[i, 0])}")
    return int(ts[timed].max()) + 1 if timed.any() else 1


def schedule_table(circuits: Iterable[Any], nodes: int, ports: int,
                   slices: int | None = None) -> np.ndarray:
    """Peer of every port in every slice, checking that the schedule is feasible.

    Returns an int64 array of shape ``(S, nodes * ports)``: entry ``[s, g]`` is the global
    port id (``node * ports + port``) connected to global port ``g`` in slice ``s``, or -1.
    ``S`` is ``slices`` if given, else :func:`cycle_length`. Static circuits (``ts=None``)
    fill every slice.

    Raises :class:`ConfigError` (field ``circuits[i]``, value the circuit, a reason naming
    slice, node and port). Checks run in two rounds and each reports its lowest-index
    offender: first each circuit on its own — malformed circuit, node out of
    ``0..nodes-1``, port out of ``0..ports-1``, self-loop, negative slice, slice
    ``>= slices`` — then conflicts: a port used by two circuits in one slice (a static
    circuit uses its ports in every slice), reported at the later of the two circuits.
    ``nodes``, ``ports`` and ``slices`` must be integers ≥ 1, and the table may hold at
    most 2**28 cells (a stray huge ``ts`` is reported instead of exhausting memory).

    >>> schedule_table([connect(0, 0, 1, 0, ts=1)], nodes=2, ports=1).tolist()
    [[-1, -1], [1, 0]]
    >>> schedule_table([connect(0, 0, 1, 0, ts=1), connect(1, 0, 0, 0, ts=1)], 2, 1)
    Traceback (most recent call last):
    ...
    opendcn.errors.ConfigError: circuits[1]: slice 1: port 0 of node 1 is already connected to node 0 (port 0, circuits[0]) (got Circuit(n1=1, p1=0, n2=0, p2=0, ts=1, directed=False))
    """
    for name, v in (("nodes", nodes), ("ports", ports)):
        if not _is_int(v) or v < 1:
            raise ConfigError(name, v, "must be an integer >= 1")
    if slices is not None and (not _is_int(slices) or slices < 1):
        raise ConfigError("slices", slices, "must be an integer >= 1 or None")
    nodes, ports = int(nodes), int(ports)
    circuits, arr = _as_array(circuits)
    n1, p1, n2, p2, ts = (arr[:, j] for j in range(5))
    static = ts == _STATIC

    # -- per-circuit checks: report the first offending circuit ------------------------
    bad_n = (n1 < 0) | (n1 >= nodes) | (n2 < 0) | (n2 >= nodes)
    bad_p = (p1 < 0) | (p1 >= ports) | (p2 < 0) | (p2 >= ports)
    bad_ts = ~static & (ts < 0)
    if slices is not None:
        bad_ts |= ~static & (ts >= slices)
    loop = n1 == n2
    bad = bad_n | bad_p | bad_ts | loop
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        c = circuits[i]
        a, pa, b, pb, t = (int(x) for x in arr[i])
        where = _slice_label(t)
        if bad_ts[i]:
            if t < 0:
                reason = f"{where}: negative slice for port {pa} of node {a}"
            else:
                assert slices is not None  # the only other way a slice is out of range
                reason = (f"{where}: outside the cycle of {slices} slices (0..{slices - 1}) "
                          f"for port {pa} of node {a}")
        elif bad_n[i]:
            node, port = (a, pa) if not 0 <= a < nodes else (b, pb)
            reason = f"{where}: node {node} (port {port}) is out of range 0..{nodes - 1}"
        elif bad_p[i]:
            node, port = (a, pa) if not 0 <= pa < ports else (b, pb)
            reason = f"{where}: port {port} of node {node} is out of range 0..{ports - 1}"
        else:
            reason = (f"{where}: port {pa} of node {a} is connected to port {pb} of the "
                      f"same node {a} (self-loop)")
        raise ConfigError(f"circuits[{i}]", c, reason)

    s_count = slices if slices is not None else (int(ts[~static].max()) + 1 if (~static).any() else 1)
    g_count = nodes * ports
    if s_count * g_count > _MAX_CELLS:
        if slices is None and static.all():
            # static circuits only (an electrical or static fabric): the table is one slice
            # of every port, too many ports for the engine's tables
            raise ConfigError("nodes", nodes, f"{nodes} nodes x {ports} ports = {g_count:,} ports: more than the "
                                              f"{_MAX_CELLS:,} port slots the engine's tables hold")
        if slices is None:
            i = int(np.argmax(np.where(static, -1, ts)))
            raise ConfigError(f"circuits[{i}]", circuits[i],
                              f"slice {int(ts[i])}: a cycle of {s_count} slices x {g_count} "
                              f"ports is too large (port {int(p1[i])} of node {int(n1[i])})")
        raise ConfigError("slices", slices, f"{slices} slices x {g_count} ports is too large")
    g1 = n1 * ports + p1
    g2 = n2 * ports + p2
    directed = np.array([bool(getattr(c, "directed", False)) for c in circuits], dtype=bool) \
        if any(type(c) is Circuit and c.directed for c in circuits) else None
    if directed is not None:
        return _directed_table(circuits, arr, g1, g2, directed, s_count, g_count, ports)

    # -- conflicts: a port used twice in one slice -------------------------------------
    idx = np.arange(arr.shape[0], dtype=np.int64)
    e_idx = np.concatenate([idx, idx])  # endpoint records: circuit index,
    e_g = np.concatenate([g1, g2])      # global port,
    e_peer = np.concatenate([g2, g1])   # peer global port,
    e_ts = np.concatenate([ts, ts])     # slice (or _STATIC)
    e_end = np.repeat(np.array([0, 1], dtype=np.int64), arr.shape[0])  # n1 side / n2 side
    e_static = e_ts == _STATIC
    conflicts: list[tuple[int, int, int, int, int]] = []  # (offender, end, other, ts, g)

    def dup_groups(key: np.ndarray, sel: np.ndarray) -> None:
        k, ci, end = key[sel], e_idx[sel], e_end[sel]
        ts_sel, g_sel = e_ts[sel], e_g[sel]
        if k.size < 2:
            return
        order = np.lexsort((ci, k))
        ks = k[order]
        dup = np.flatnonzero(ks[1:] == ks[:-1]) + 1
        if dup.size == 0:
            return
        # first record of each group of equal keys
        start = np.flatnonzero(np.concatenate([[True], ks[1:] != ks[:-1]]))
        first = start[np.searchsorted(start, dup, side="right") - 1]
        j = int(np.argmin(ci[order][dup] * 2 + end[order][dup]))
        d, f = order[dup[j]], order[first[j]]
        conflicts.append((int(ci[d]), int(end[d]), int(ci[f]), int(ts_sel[d]), int(g_sel[d])))

    timed_sel = ~e_static
    dup_groups(np.where(e_static, 0, e_ts) * g_count + e_g, timed_sel)  # timed, same slice
    dup_groups(e_g, e_static)                             # static vs static
    if e_static.any() and timed_sel.any():                # static vs timed, any slice
        st_g, st_i = e_g[e_static], e_idx[e_static]
        owner = np.full(g_count, -1, dtype=np.int64)
        owner[st_g[::-1]] = st_i[::-1]                    # lowest static circuit per port
        hit = timed_sel & (owner[e_g] >= 0)
        if hit.any():
            h = np.flatnonzero(hit)
            other = owner[e_g[h]]
            offender = np.maximum(other, e_idx[h])
            off_end = np.where(other > e_idx[h], (g1[other] != e_g[h]).astype(np.int64), e_end[h])
            j = int(np.argmin(offender * 2 + off_end))
            r = h[j]
            conflicts.append((int(offender[j]), int(off_end[j]), int(min(other[j], e_idx[r])),
                              int(e_ts[r]), int(e_g[r])))
    if conflicts:
        off, _, other, t, g = min(conflicts)
        node, port = divmod(g, ports)
        o = arr[other]
        peer, peer_port = (int(o[2]), int(o[3])) if int(o[0]) * ports + int(o[1]) == g \
            else (int(o[0]), int(o[1]))
        raise ConfigError(f"circuits[{off}]", circuits[off],
                          f"{_slice_label(t)}: port {port} of node {node} is already connected to "
                          f"node {peer} (port {peer_port}, circuits[{other}])")

    table = np.full((s_count, g_count), -1, dtype=np.int64)
    if timed_sel.any():
        table[e_ts[timed_sel], e_g[timed_sel]] = e_peer[timed_sel]
    if e_static.any():
        table[:, e_g[e_static]] = e_peer[e_static]
    return table


def de_bruijn(b: int, d: int, *, first_port: int = 0) -> list[Circuit]:
    """The static de Bruijn backbone DB(b, d) of Duo (Zerwas et al., POMACS 2023, §3.1) as
    directed static circuits: node ``v`` (``n = b**d`` nodes, labels ``(v_1, ..., v_d)`` in
    base ``b``) sends on port ``first_port + j`` to ``(v_2, ..., v_d, (v_1 + j) mod b)`` —
    static switch ``j`` is a directed perfect matching, received on the same port number.
    The ``b`` self-loops (constant words, all on switch 0) get no circuit: those ports are
    idle (:func:`opendcn.fabrics.debruijn.self_loop_ports`). Ordered by switch, then node.

    >>> [(c.n1, c.p1, c.n2) for c in de_bruijn(2, 2)]
    [(1, 0, 2), (2, 0, 1), (0, 1, 1), (1, 1, 3), (2, 1, 0), (3, 1, 2)]
    """
    from .debruijn import static_successors

    if not _is_int(first_port) or first_port < 0:
        raise ConfigError("first_port", first_port, "must be an integer >= 0")
    succ = static_successors(b, d).tolist()
    return [Circuit(v, first_port + j, w, first_port + j, None, True)
            for j, row in enumerate(succ) for v, w in enumerate(row) if v != w]


# ---------------------------------------------------------------------------------------
# the schedules of the architectures, and traffic-aware generators
# ---------------------------------------------------------------------------------------
def opera_matchings(which: str, tors: int, uplinks: int) -> np.ndarray:
    """Opera's rotor matchings as a flat int64 array (rows k, entry tor*uplinks + rotor):
    ``"opera"`` (Opera's own 108 x 6 file), a file in that format, or ``"generate"`` (an
    empty array: the engine generates them)."""
    if which == "generate":
        return np.zeros(0, dtype=np.int64)
    if which == "opera":
        text = resources.files("opendcn").joinpath("data/opera/ucmp_dyn_topo.txt").read_text()
        origin = "opera"
    else:
        p = Path(which)
        try:
            text = p.read_text()
        except OSError as e:
            raise ConfigError("--matchings", which, f"cannot read file: {e.strerror or e}") from None
        origin = which
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    try:
        head = [int(x) for x in lines[0]]
        rows = [[int(x) for x in ln] for ln in lines[2:]]
    except (ValueError, IndexError):
        raise ConfigError("--matchings", origin, "expected 'hosts downlinks uplinks tors', a slice line, then integer rows") from None
    if len(head) != 4 or head[2] != uplinks or head[3] != tors:
        raise ConfigError("--matchings", origin, f"file is for {head[3] if len(head) == 4 else '?'} ToRs x "
                          f"{head[2] if len(head) == 4 else '?'} uplinks, not --tors {tors} x --uplinks {uplinks}")
    if len(rows) != tors // uplinks or any(len(r) != tors * uplinks for r in rows):
        raise ConfigError("--matchings", origin, f"expected {tors // uplinks} rows of {tors * uplinks} ToR ids")
    return np.asarray(rows, dtype=np.int64).ravel()


def opera(config: Any, uplink: int | None = None, *, matchings: str = "auto",
          seed: int = 1) -> list[Circuit]:
    """Opera's rotor schedule (NSDI'20), as ``od.arch.opera`` deploys it: ``U`` rotor
    uplinks each cycle through ``N / U`` perfect matchings of a 1-factorization of the
    ``N`` ToRs, staggered so that exactly one rotor takes a new matching per slice; the
    cycle has ``N`` slices and rotor ``k`` is port ``k`` at both ends of its circuits.

    ``matchings``: ``"generate"`` (a seeded shuffle of the circle-method factorization;
    among the first assignments whose every slice is connected, the one with the shortest
    longest path, as Opera's generator keeps), ``"opera"`` (Opera's own 108 x 6 file), a
    file in that format, or ``"auto"`` (``opera`` for 108 ToRs x 6 uplinks, else
    ``generate``). ``uplink`` defaults to ``config.uplinks`` and must divide ``N``.

    >>> c = opera(8, uplink=4)
    >>> cycle_length(c), len(c)   # 8 slices x 4 rotors x 4 pairs, less the idle matching
    (8, 112)
    """
    from .. import _core

    n, default_uplinks = _nodes_uplinks(config)
    u = default_uplinks if uplink is None else uplink
    for name, v in (("nodes", n), ("uplink", u), ("seed", seed)):
        if not _is_int(v) or v < 0:
            raise ConfigError(name, v, "must be an integer >= 0")
    if n < 4:
        raise ConfigError("nodes", n, "Opera needs at least 4 ToRs")
    if u < 2 or n % u:
        raise ConfigError("uplink", u, f"must be >= 2 and divide the number of ToRs {n}")
    which = ("opera" if (n, u) == (108, 6) else "generate") if matchings == "auto" else matchings
    m = opera_matchings(which, int(n), int(u))
    try:
        # the timing arguments (reconfiguration, propagation, serialization, queue) do
        # not change which circuits exist
        fab = _core.rotor_fabric(int(n), int(u), m, int(seed), 0, 0, 10_000, 500_000, 1_200_000, 8)
    except _core.EngineSpecError as e:
        field, value, reason = e.args
        raise ConfigError(str(field), value, str(reason)) from None
    peer = np.asarray(fab["peer"]).reshape(n, n, u)
    s_idx, a, k = np.nonzero(peer > np.arange(n)[None, :, None])
    b = peer[s_idx, a, k]
    return [Circuit(int(x), int(r), int(y), int(r), int(j)) for j, x, r, y in zip(s_idx, a, k, b)]


def shale(config: Any, h: int = 2) -> list[Circuit]:
    """Shale's EBS schedule as ``od.arch.shale`` runs it, as directed circuits on one port:
    ``N = m**h`` nodes, node coordinates its base-``m`` digits; ``h`` phases of ``m - 1``
    slices; in slice ``i * (m - 1) + j - 1`` (phase ``i``, offset ``j = 1..m-1``) node
    ``x`` with digit ``c_i`` sends to the node that differs only in digit ``i``, which is
    ``(c_i + j) mod m``, and receives from the one whose digit is ``(c_i - j) mod m``.
    ``h = 1`` is the single round robin SRRD. (The h-dimensional *matchings* of
    OpenOptics' ``round_robin(dimension=h)`` are :func:`round_robin`.)

    >>> [(c.n1, c.n2, c.ts) for c in shale(4, h=1) if c.n1 == 0]
    [(0, 1, 0), (0, 2, 1), (0, 3, 2)]
    """
    n, _ = _nodes_uplinks(config)
    if not _is_int(h) or h < 1:
        raise ConfigError("h", h, "must be an integer >= 1")
    if not _is_int(n) or n < 2:
        raise ConfigError("nodes", n, "need an integer number of nodes >= 2")
    m = _integer_root(int(n), int(h)) if h > 1 else int(n)
    if m is None:
        raise ConfigError("nodes", n, f"must be a perfect {h}-th power (m**{h}) for h={h}")
    out = []
    for i in range(int(h)):
        w = m**i
        for j in range(1, m):
            t = i * (m - 1) + j - 1
            for x in range(int(n)):
                c = (x // w) % m
                y = x + ((c + j) % m - c) * w
                out.append(Circuit(x, 0, y, 0, t, True))
    return out


def static(config: Any, uplink: int | None = None, *, seed: int = 1) -> list[Circuit]:
    """A static expander: a random ``U``-regular graph on the ``N`` nodes
    (``networkx.random_regular_graph(U, N, seed)``, an expander with high probability) as
    circuits with ``ts=None``. Ports are given in the graph's edge order: a node's ``k``-th
    edge uses its port ``k``. ``U`` (default ``config.uplinks``) must be below ``N``, and
    ``U * N`` even.

    >>> c = static(6, uplink=2)
    >>> len(c), sorted({c.ts for c in c})
    (6, [None])
    """
    import networkx as nx

    n, default_uplinks = _nodes_uplinks(config)
    u = default_uplinks if uplink is None else uplink
    if not _is_int(n) or n < 2:
        raise ConfigError("nodes", n, "need an integer number of nodes >= 2")
    if not _is_int(u) or not 1 <= u < n:
        raise ConfigError("uplink", u, f"must be an integer 1..{n - 1}")
    if (u * n) % 2:
        raise ConfigError("uplink", u, f"a {u}-regular graph on {n} nodes needs an even uplink x nodes")
    if not _is_int(seed) or seed < 0:
        raise ConfigError("seed", seed, "must be an integer >= 0")
    g = nx.random_regular_graph(int(u), int(n), seed=int(seed))
    used = [0] * int(n)
    out = []
    for a, b in g.edges():
        out.append(Circuit(int(a), used[a], int(b), used[b], None))
        used[a] += 1
        used[b] += 1
    return out


def bipartite_matching(config: Any, tm: Any, uplink: int | None = None,
                       prev: Sequence[Circuit] | None = None) -> list[Circuit]:
    """Traffic-aware topology (c-Through's, OpenOptics' ``bipartite_matching``): a
    maximum-weight matching of the nodes, weighing each pair by its traffic both ways
    (``tm[i][j] + tm[j][i]``), among the matchings of largest size, as static circuits
    (``ts=None``) on port 0. With ``U`` uplinks (default ``config.uplinks``) port ``k``
    takes a maximum-weight matching of the pairs ports ``0..k-1`` did not connect. A
    traffic matrix without traffic returns ``prev`` (the circuits in force), or no
    circuits.

    >>> tm = [[0, 5, 0, 0], [0, 0, 0, 0], [0, 0, 0, 9], [0, 0, 1, 0]]
    >>> sorted((c.n1, c.n2) for c in bipartite_matching(4, tm))
    [(0, 1), (2, 3)]
    """
    import networkx as nx

    n, default_uplinks = _nodes_uplinks(config)
    u = default_uplinks if uplink is None else uplink
    if not _is_int(u) or not 1 <= u < n:
        raise ConfigError("uplink", u, f"must be an integer 1..{n - 1}")
    try:
        t = np.asarray(tm, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError("tm", tm, f"expected a {n}x{n} matrix of numbers") from None
    if t.shape != (n, n) or not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ConfigError("tm", getattr(t, "shape", tm), f"expected a non-negative {n}x{n} matrix")
    if not np.any(t > 0):
        return list(prev) if prev is not None else []
    w = t + t.T
    taken: set[tuple[int, int]] = set()
    out = []
    for port in range(int(u)):
        g = nx.Graph()
        g.add_nodes_from(range(n))
        g.add_weighted_edges_from((a, b, float(w[a, b])) for a in range(n) for b in range(a + 1, n)
                                  if (a, b) not in taken)
        pairs = sorted(tuple(sorted(e)) for e in nx.max_weight_matching(g, maxcardinality=True))
        for a, b in pairs:
            taken.add((a, b))
            out.append(Circuit(int(a), port, int(b), port, None))
    return out
