"""Reconfigurable networks for HPC (Teh et al., "Performance trade-offs in reconfigurable
networks for HPC", JOCN 14(6) 2022): wiring, controllers and routing tables shared by the
``trn``, ``prn``, ``dfplus``, ``expander_hyb`` and ``fattree`` architectures and by the
analytic models (:mod:`opendcn.models.hpc`).

What is here:

* **wiring** of every topology of the paper's Table 1 as plain link lists
  (:class:`Wiring`): the three-level fat tree, Dragonfly, Dragonfly+ / PRN-2L pods,
  PRN-Mesh pods, TRN-Flat (a Kautz digraph: the largest digraph of out-degree ``k/2``
  and diameter 3), TRN-3D and a random regular expander; :func:`diameter` measures the
  switch-hop diameter between ToRs by breadth-first search;
* **controllers**: maximum-weight bipartite matching (:func:`max_weight_matching`,
  scipy's assignment solver), stable matching (:func:`stable_matching`, Gale–Shapley),
  ``k`` circuits per ToR by ``k`` successive matchings on the remaining demand
  (:func:`trn_configuration`), the demand-oblivious rotor cycle (:func:`rotor_cycle`)
  and the pod-level throughput-maximising LP (:func:`prn_lp`, scipy/HiGHS) with its
  rounding and its decomposition into OCS permutations;
* **routing tables** as numpy columns (:class:`Tables`): ECMP on shortest paths, and the
  TAGO-like pod routing of PRN and Dragonfly+;
* the **channel dependency check** of a built network (:func:`channel_dependency_cycle`,
  :func:`channel_dependency_graph`, from :mod:`opendcn.fabrics.channels`): with the virtual-channel
  rule of each architecture (``docs/arch/*.md``), no cycle at Table 3's channel counts.

>>> m = max_weight_matching(np.array([[0, 5, 1], [2, 0, 7], [4, 3, 0]]))
>>> m.tolist()        # row i is matched to column m[i]
[1, 2, 0]
>>> kautz(2).switches, diameter(kautz(2))
(12, 3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .channels import channel_dependency_cycle, channel_dependency_graph
from ..errors import ConfigError, check_memory

if TYPE_CHECKING:
    from scipy import sparse


def linear_sum_assignment(*args: Any, **kw: Any) -> Any:
    """scipy's assignment solver (scipy.optimize is imported when first needed)."""
    from scipy.optimize import linear_sum_assignment as solve

    return solve(*args, **kw)


def linprog(*args: Any, **kw: Any) -> Any:
    """scipy's LP solver (HiGHS; scipy.optimize is imported when first needed)."""
    from scipy.optimize import linprog as solve

    return solve(*args, **kw)

__all__ = [
    "Wiring", "fattree", "dragonfly", "leaf_spine_pods", "prn_mesh", "kautz", "trn3d", "expander",
    "diameter", "max_weight_matching", "stable_matching", "blocking_pairs", "trn_configuration",
    "rotor_cycle", "prn_lp", "round_links", "permutations", "Tables", "ecmp_tables", "two_hop_wcmp_tables",
    "check_radix",
    "circuit_matrix", "two_hop_capacity", "trn_path_capacity", "prn_path_capacity",
    "channel_dependency_cycle", "channel_dependency_graph",
]


def check_radix(k: object, field: str = "--radix") -> int:
    """The switch radix ``k``: an even integer >= 4 (half the ports face hosts)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 4 or k % 2:
        raise ConfigError(field, k, "the switch radix must be an even integer >= 4 (k/2 ports face hosts)")
    return int(k)


# ---------------------------------------------------------------------------------------
# wiring
# ---------------------------------------------------------------------------------------
@dataclass
class Wiring:
    """A topology as a link list: switches ``0..switches-1``; ``hosts[s]`` endpoints hang
    below switch ``s``; ``links`` are (a, b) pairs (both directions, or a -> b only when
    ``directed``); parallel links repeat. ``groups[s]`` is the pod / group of a switch
    (-1: none), ``ocs_ports`` the ports that face optical circuit switches."""

    switches: int
    hosts: np.ndarray
    links: np.ndarray
    directed: bool = False
    groups: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ocs_ports: int = 0

    @property
    def endpoints(self) -> int:
        return int(self.hosts.sum())

    @property
    def tors(self) -> np.ndarray:
        """The switches with hosts below them."""
        return np.flatnonzero(self.hosts > 0)

    def degree(self) -> np.ndarray:
        """Network ports used per switch (a directed link uses one port at each end)."""
        d = np.zeros(self.switches, np.int64)
        if len(self.links):
            np.add.at(d, self.links[:, 0], 1)
            np.add.at(d, self.links[:, 1], 1)
        return d


def _links(pairs: Sequence[tuple[int, int]] | np.ndarray) -> np.ndarray:
    a = np.asarray(pairs, dtype=np.int64)
    return a.reshape(-1, 2)


def fattree(k: int, levels: int = 3) -> Wiring:
    """The non-blocking ``levels``-level fat tree of radix ``k`` (Table 1's FTn):
    ``(2n−1)(k/2)^(n−1)`` switches, ``2(k/2)^n`` endpoints, diameter ``2(n−1)``.

    ``k`` pods, each an ``h``-ary ``(n−1)``-tree (``h = k/2``; ``h^(n−2)`` switches per
    level labelled by base-``h`` words, a switch of level ``l`` linked to the switches of
    level ``l + 1`` whose words differ at most in digit ``l``), joined by ``h^(n−1)`` top
    switches: up port ``u`` of a pod's top-level switch ``s`` goes to top switch
    ``s·h + u``."""
    k = check_radix(k)
    h = k // 2
    n = levels
    if n < 2:
        raise ConfigError("levels", levels, "a fat tree has at least 2 levels")
    m = n - 1                      # levels inside a pod
    per_level = h ** (m - 1)       # switches per level of one pod
    per_pod = m * per_level
    top0 = k * per_pod
    words = np.arange(per_level)
    links = []
    for pod in range(k):
        base = pod * per_pod
        for lev in range(m - 1):
            digit = (words // h ** lev) % h
            for v in range(h):
                up = words + (v - digit) * h ** lev
                links.append(np.stack([base + lev * per_level + words, base + (lev + 1) * per_level + up], axis=1))
        for u in range(h):
            links.append(np.stack([base + (m - 1) * per_level + words, top0 + words * h + u], axis=1))
    switches = top0 + h ** (n - 1)
    hosts = np.zeros(switches, np.int64)
    for pod in range(k):
        hosts[pod * per_pod:pod * per_pod + per_level] = h
    groups = np.concatenate([np.repeat(np.arange(k), per_pod), np.full(h ** (n - 1), -1)])
    return Wiring(switches, hosts, np.concatenate(links), groups=groups)


def dragonfly(k: int) -> Wiring:
    """The canonical Dragonfly with one global link per router (Table 1's DF, h = 1):
    groups of ``a = k/2`` routers, each with ``k/2`` hosts, ``a − 1`` local links and one
    global link; ``a + 1`` groups, one global link between every two groups."""
    k = check_radix(k)
    a = k // 2
    g = a + 1
    links = []
    for grp in range(g):
        for r in range(a):
            for s in range(r + 1, a):
                links.append((grp * a + r, grp * a + s))
            other = (grp + r + 1) % g
            if grp < other:
                links.append((grp * a + r, other * a + (g - r - 2)))
    hosts = np.full(g * a, a, np.int64)
    return Wiring(g * a, hosts, _links(links), groups=np.repeat(np.arange(g), a))


def global_pairs(pods: int, uplinks: int) -> np.ndarray:
    """Static global wiring of ``pods`` groups with ``uplinks`` global ports each (DF+):
    rounds of a round-robin 1-factorization add one link per pod pair while both pods
    have a free port, so every pair gets ``⌊uplinks/(pods−1)⌋`` or one more links.
    Returns (pod a, port a, pod b, port b) rows; port ``o`` of a pod is its ``o``-th
    global port."""
    if pods < 2:
        return np.zeros((0, 4), np.int64)
    if uplinks < pods - 1:
        raise ConfigError("pods", pods, f"at most {uplinks + 1} pods: every pod pair needs a global link "
                                        f"and a pod has {uplinks} global ports")
    from .topology import _circle_matchings

    free = np.zeros(pods, np.int64)
    rows = []
    rounds = _circle_matchings(pods)
    while True:
        added = False
        for m in rounds:
            a, b = m[:, 0], m[:, 1]          # disjoint pairs: no pod twice in one matching
            ok = (free[a] < uplinks) & (free[b] < uplinks)
            if ok.any():
                a, b = a[ok], b[ok]
                rows.append(np.stack([a, free[a], b, free[b]], axis=1))
                free[a] += 1
                free[b] += 1
                added = True
        if not added:
            break
    return np.concatenate(rows).astype(np.int64) if rows else np.zeros((0, 4), np.int64)


@dataclass
class PodLayout:
    """Numbering of a two-level (leaf–spine) pod network: leaves ``0..R-1`` (racks), then
    spines ``R + pod * S + j``. Leaf port ``j`` ↔ spine ``j`` of its pod (down port =
    rack index in the pod); a spine's ports are ``r`` down ports then ``G`` global ports;
    global port ``o`` of a pod (``0..S*G-1``) is port ``r + o // S`` of spine ``o % S``
    (consecutive global ports on different spines)."""

    racks: int
    pods: int
    spines: int     # per pod (= leaf uplinks)
    glob: int       # global ports per spine

    @property
    def per_pod(self) -> int:
        return self.racks // self.pods

    @property
    def uplinks(self) -> int:
        """Global ports per pod."""
        return self.spines * self.glob

    def spine(self, pod: int | np.ndarray, j: int | np.ndarray) -> np.ndarray:
        return self.racks + np.asarray(pod) * self.spines + np.asarray(j)

    def global_port(self, pod: int | np.ndarray, o: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(spine node, local port) of global port ``o`` of ``pod``."""
        o = np.asarray(o)
        return self.spine(pod, o % self.spines), self.per_pod + o // self.spines

    def pod_of(self, node: np.ndarray) -> np.ndarray:
        node = np.asarray(node)
        return np.where(node < self.racks, node // max(self.per_pod, 1), (node - self.racks) // self.spines)


def leaf_spine_pods(k: int, pods: int | None = None, global_rows: np.ndarray | None = None) -> Wiring:
    """Dragonfly+ / PRN-2L: pods of ``k/2`` leaves (racks, ``k/2`` hosts each) and ``k/2``
    spines, leaf–spine complete bipartite inside a pod, ``k/2`` global ports per spine.
    ``pods`` defaults to the Table 1 size ``(k/2)² + 1`` (one global link per pod pair);
    ``global_rows`` (pod a, port a, pod b, port b) overrides the static global wiring."""
    k = check_radix(k)
    h = k // 2
    p = h * h + 1 if pods is None else pods
    lay = PodLayout(racks=p * h, pods=p, spines=h, glob=h)
    leaves = np.arange(lay.racks)
    links = [np.stack([leaves, lay.spine(leaves // h, j)], axis=1) for j in range(h)]
    rows = global_pairs(p, lay.uplinks) if global_rows is None else global_rows
    sa, _ = lay.global_port(rows[:, 0], rows[:, 1])
    sb, _ = lay.global_port(rows[:, 2], rows[:, 3])
    links.append(np.stack([sa, sb], axis=1))
    hosts = np.zeros(lay.racks + p * h, np.int64)
    hosts[:lay.racks] = h
    groups = np.concatenate([leaves // h, np.repeat(np.arange(p), h)])
    return Wiring(lay.racks + p * h, hosts, np.concatenate(links), groups=groups, ocs_ports=p * lay.uplinks)


def mesh_pod_size(k: int) -> tuple[int, int]:
    """PRN-Mesh pod shape of radix ``k``: ``a`` ToRs per pod, ``h`` inter-pod links per
    ToR with ``(a − 1) + h = k/2`` maximising the pod's uplinks ``a·h``
    (``a = k/4 + 1``, ``h = k/4`` when 4 divides k)."""
    k = check_radix(k)
    best = max(range(1, k // 2 + 1), key=lambda a: (a * (k // 2 + 1 - a), a))
    return best, k // 2 + 1 - best


def prn_mesh(k: int) -> Wiring:
    """PRN-Mesh at its Table 1 size: pods of ``a`` fully meshed ToRs, ``h`` inter-pod
    links per ToR, ``a·h + 1`` pods with one link between every two pods (the circuits
    one OCS configuration would set up)."""
    a, h = mesh_pod_size(k)
    p = a * h + 1
    links = []
    for pod in range(p):
        for i in range(a):
            for j in range(i + 1, a):
                links.append((pod * a + i, pod * a + j))
    rows = global_pairs(p, a * h)
    # global port o of a pod: ToR o % a, its (o // a)-th inter-pod port
    ta = rows[:, 0] * a + rows[:, 1] % a
    tb = rows[:, 2] * a + rows[:, 3] % a
    all_links = np.concatenate([_links(links), np.stack([ta, tb], axis=1)])
    hosts = np.full(p * a, k // 2, np.int64)
    return Wiring(p * a, hosts, all_links, groups=np.repeat(np.arange(p), a), ocs_ports=p * a * h)


def kautz(d: int, D: int = 3) -> Wiring:
    """The Kautz digraph K(d, D): words of length D over d + 1 letters with no two equal
    consecutive letters, an arc from ``s1..sD`` to ``s2..sD x``; ``d^D + d^(D−1)`` nodes of
    out-degree d, diameter D. TRN-Flat's Table 1 row is the OCS configuration that
    realises K(k/2, 3) with k/2 directed circuits per ToR (``d`` hosts per node here)."""
    words = [w for w in np.ndindex(*([d + 1] * D)) if all(w[i] != w[i + 1] for i in range(D - 1))]
    index = {w: i for i, w in enumerate(words)}
    links = [(index[w], index[w[1:] + (x,)]) for w in words for x in range(d + 1) if x != w[-1]]
    n = len(words)
    return Wiring(n, np.full(n, d, np.int64), _links(links), directed=True, ocs_ports=n * d)


def trn3d_dims(k: int) -> tuple[int, int, int]:
    """ToRs per dimension of TRN-3D with radix ``k``: the ``k/2`` uplinks split over three
    dimensions as evenly as possible, each dimension a full mesh of ``u_i + 1`` ToRs."""
    h = check_radix(k) // 2
    u = [h // 3 + (1 if i < h % 3 else 0) for i in range(3)]
    return u[0] + 1, u[1] + 1, u[2] + 1


def trn3d(k: int) -> Wiring:
    """TRN-3D: ToRs at the points of an ``X×Y×Z`` lattice (:func:`trn3d_dims`), each
    dimension's lines fully meshed by its own OCS (radix = the line length)."""
    X, Y, Z = trn3d_dims(k)
    n = X * Y * Z
    idx = np.arange(n).reshape(X, Y, Z)
    links = []
    for axis in range(3):
        lines = np.moveaxis(idx, axis, -1).reshape(-1, idx.shape[axis])
        m = lines.shape[1]
        for i in range(m):
            for j in range(i + 1, m):
                links.append(np.stack([lines[:, i], lines[:, j]], axis=1))
    return Wiring(n, np.full(n, k // 2, np.int64), np.concatenate(links), ocs_ports=n * (k // 2))


def expander(n: int, degree: int, hosts: int, seed: int = 1) -> Wiring:
    """A random ``degree``-regular expander on ``n`` ToRs (Jellyfish-like): the union of
    ``degree/2`` random cyclic permutations without fixed points, each giving every ToR
    two links (parallel links possible when ``degree ≥ n``); redrawn until connected."""
    from ..rng import stream

    if degree % 2 or degree < 2:
        raise ConfigError("degree", degree, "an expander's degree must be even and >= 2")
    if n < 3:
        raise ConfigError("nodes", n, "an expander needs at least 3 ToRs")
    rng = stream(seed, "hpc.expander")
    for _ in range(100):
        links = []
        for _ in range(degree // 2):
            order = rng.permutation(n)
            links.append(np.stack([order, np.roll(order, -1)], axis=1))
        w = Wiring(n, np.full(n, hosts, np.int64), np.concatenate(links))
        if np.isfinite(_dist(w)).all():
            return w
    raise ConfigError("nodes", n, "could not draw a connected expander")  # pragma: no cover


def _csr(w: Wiring) -> sparse.csr_matrix:
    from scipy import sparse
    a, b = w.links[:, 0], w.links[:, 1]
    if not w.directed:
        a, b = np.concatenate([a, b]), np.concatenate([b, a])
    m = sparse.csr_matrix((np.ones(len(a)), (a, b)), shape=(w.switches, w.switches))
    m.data[:] = 1.0
    return m


def _dist(w: Wiring, sources: np.ndarray | None = None) -> np.ndarray:
    from scipy.sparse.csgraph import shortest_path
    g = _csr(w)
    src = w.tors if sources is None else np.asarray(sources)
    return shortest_path(g, directed=True, unweighted=True, indices=src)


def diameter(w: Wiring, sources: Sequence[int] | np.ndarray | None = None) -> int:
    """Switch hops of the longest shortest path between two ToRs (switches with hosts),
    by breadth-first search from ``sources`` (default: every ToR; a subset gives the
    exact value when the wiring is symmetric under a map taking the subset to all ToRs).
    Unreachable pairs raise ConfigError."""
    tors = w.tors
    src = tors if sources is None else np.asarray(sources, np.int64)
    worst = 0
    for lo in range(0, len(src), 256):
        d = _dist(w, src[lo:lo + 256])[:, tors]
        if not np.isfinite(d).all():
            raise ConfigError("wiring", "disconnected", "some ToR cannot reach another")
        worst = max(worst, int(d.max()))
    return worst


# ---------------------------------------------------------------------------------------
# controllers
# ---------------------------------------------------------------------------------------
def max_weight_matching(w: np.ndarray, forbid_diagonal: bool = True, rng: np.random.Generator | None = None
                        ) -> np.ndarray:
    """A maximum-weight perfect matching of the rows onto the columns of ``w`` (scipy's
    ``linear_sum_assignment``): ``m[i]`` is the column of row ``i``. The diagonal is
    forbidden (a ToR has no circuit to itself). ``rng`` breaks ties among equal-weight
    matchings at random (rows and columns are permuted before solving)."""
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[0]
    rp = rng.permutation(n) if rng is not None else np.arange(n)
    cp = rng.permutation(n) if rng is not None else np.arange(n)
    x = w[np.ix_(rp, cp)]
    if forbid_diagonal:
        big = (np.abs(w).sum() + 1.0) * (n + 1)
        x = np.where(rp[:, None] == cp[None, :], -big, x)
    rows, cols = linear_sum_assignment(x, maximize=True)
    m = np.empty(n, np.int64)
    m[rp[rows]] = cp[cols]
    return m


def stable_matching(w: np.ndarray, forbid_diagonal: bool = True) -> np.ndarray:
    """Gale–Shapley stable matching of sources (rows, proposing) to destinations
    (columns): both sides rank their partners by the demand ``w[i, j]`` between them
    (higher first, ties by index). ``m[i]`` is the destination of source ``i``. With
    ``forbid_diagonal`` ``i`` never gets ``i``; then source ``i`` may be refused by every
    other destination, and it and destination ``i`` stay unmatched (``m[i] = -1``:
    completing the matching by a swap could create a blocking pair)."""
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[0]
    pref = np.argsort(-w, axis=1, kind="stable")          # sources' lists, best first
    if forbid_diagonal:
        pref = np.array([[j for j in row if j != i] for i, row in enumerate(pref)], dtype=np.int64)
    # rank[j, i]: how destination j ranks source i (lower = better)
    order = np.argsort(-w.T, axis=1, kind="stable")
    rank = np.empty((n, n), np.int64)
    rank[np.arange(n)[:, None], order] = np.arange(n)[None, :]
    nxt = np.zeros(n, np.int64)
    holder = np.full(n, -1, np.int64)     # destination -> source
    free = list(range(n - 1, -1, -1))
    while free:
        i = free.pop()
        if nxt[i] >= pref.shape[1]:
            continue          # refused by every other destination
        j = int(pref[i, nxt[i]])
        nxt[i] += 1
        cur = holder[j]
        if cur < 0:
            holder[j] = i
        elif rank[j, i] < rank[j, cur]:
            holder[j] = i
            free.append(int(cur))
        else:
            free.append(i)
    m = np.full(n, -1, np.int64)
    held = holder >= 0
    m[holder[held]] = np.flatnonzero(held)
    return m


def blocking_pairs(w: np.ndarray, m: np.ndarray, forbid_diagonal: bool = True) -> list[tuple[int, int]]:
    """Pairs (i, j) that both prefer each other to their partners in matching ``m``
    (preferences as in :func:`stable_matching`): empty for a stable matching."""
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[0]
    inv = np.full(n, -1, np.int64)
    inv[m[m >= 0]] = np.flatnonzero(m >= 0)

    def better(a_w: float, a: int, b_w: float, b: int) -> bool:   # a strictly preferred to b
        return (a_w, -a) > (b_w, -b)

    out = []
    for i in range(n):
        for j in range(n):
            if (forbid_diagonal and i == j) or m[i] == j:
                continue
            src_pref = m[i] < 0 or better(w[i, j], j, w[i, m[i]], int(m[i]))
            dst_pref = inv[j] < 0 or better(w[i, j], i, w[inv[j], j], int(inv[j]))
            if src_pref and dst_pref:
                out.append((i, j))
    return out


def trn_configuration(demand: np.ndarray, uplinks: int, capacity: float, *, matching: str = "weight",
                      rng: np.random.Generator | None = None) -> np.ndarray:
    """``uplinks`` matchings (``(uplinks, n)`` array; row ``u`` maps each ToR to the peer
    of its uplink ``u``, -1: none) chosen from an ``n×n`` demand matrix by successive matchings:
    each matching runs on the demand not yet served (``demand − circuits·capacity``,
    clipped at 0), so a heavy pair gets several circuits; a pair whose demand is served
    weighs ``demand / (circuits + 1)``, scaled below every unserved demand, so that spare
    uplinks follow the demand in proportion without taking circuits from unserved pairs. ``matching`` = ``"weight"`` (maximum weight) or
    ``"stable"`` (Gale–Shapley)."""
    d = np.asarray(demand, dtype=np.float64).copy()
    np.fill_diagonal(d, 0.0)
    n = d.shape[0]
    circuits = np.zeros((n, n), np.int64)
    out = np.empty((uplinks, n), np.int64)
    rows = np.arange(n)
    for u in range(uplinks):
        rem = np.clip(d - circuits * capacity, 0.0, None)
        spare = np.where(rem > 0, 0.0, d / (circuits + 1.0))
        if rem.max() > 0 and spare.max() > 0:
            # demand not yet served first; spare uplinks follow the demand they already serve
            # (scaled so that the spare terms of a whole matching stay below the smallest
            # remaining demand)
            spare *= rem[rem > 0].min() / (n * spare.max() * 2.0)
        wgt = rem + spare
        m = max_weight_matching(wgt, rng=rng) if matching == "weight" else stable_matching(wgt)
        out[u] = m
        ok = m >= 0
        circuits[rows[ok], m[ok]] += 1
    return out


def rotor_cycle(n: int, uplinks: int, rng: np.random.Generator) -> list[np.ndarray]:
    """TRN-R's fixed set of matchings: the ``n − 1`` cyclic shifts ``i → i + s (mod n)``,
    dealt at random into ``⌈(n−1)/uplinks⌉`` configurations of ``uplinks`` shifts each (a
    configuration short of shifts repeats some of its own), so that every ToR pair has a
    direct circuit once per cycle. Among 20 random deals the one whose configurations
    leave the fewest pairs beyond two hops is kept."""
    shifts = np.arange(1, n)
    c = max(1, math.ceil((n - 1) / uplinks))
    # two deals' configurations live at once (the best and the one being dealt)
    check_memory("nodes", n, 2 * c * uplinks * n * 8, f"TRN-R's {c} rotor configurations of {n} ToRs")
    best: tuple[int, list[np.ndarray]] | None = None
    for _ in range(20):
        deal = rng.permutation(shifts)
        confs = []
        far = 0
        for i in range(c):
            s = deal[i::c]
            s = np.resize(s, uplinks) if len(s) < uplinks else s[:uplinks]
            confs.append((np.arange(n)[None, :] + s[:, None]) % n)
            reach = np.zeros(n, bool)
            reach[s % n] = True
            reach[(s[:, None] + s[None, :]).ravel() % n] = True
            far += int((~reach[1:]).sum())
        if best is None or far < best[0]:
            best = (far, confs)
        if far == 0:
            break
    assert best is not None
    return best[1]


def _pod_demand(tm: np.ndarray, uplinks: int) -> np.ndarray:
    """A pod-level demand normalised to sum 1, its diagonal cleared (a zero matrix is
    treated as uniform); ConfigError when a pod's uplinks cannot reach every other pod."""
    t = np.asarray(tm, dtype=np.float64).copy()
    p = t.shape[0]
    np.fill_diagonal(t, 0.0)
    if uplinks < p - 1:
        raise ConfigError("pods", p, f"a pod has {uplinks} uplinks: at most {uplinks + 1} pods can each reach every "
                                     "other pod directly")
    if t.sum() <= 0:
        t = np.ones((p, p)) - np.eye(p)
    return t / t.sum()


def prn_lp(tm: np.ndarray, uplinks: int) -> tuple[np.ndarray, float]:
    """The pod-level throughput-maximising LP (relaxed link counts).

    Variables: ``x[a, b] >= 1`` directed links from pod ``a`` to pod ``b`` (a ≠ b) and the
    flow of every commodity ``(s, d)`` on its direct path and on each two-pod path via an
    intermediate pod. Constraints: every pod sends and receives on exactly ``uplinks``
    links; the flow on each pod pair fits its links (unit capacity per link); each
    commodity's paths carry ``λ · tm[s, d]``. Objective: maximise λ (the concurrent-flow
    scale factor). A zero traffic matrix is treated as uniform. Returns (x, λ)."""
    from scipy import sparse
    t = _pod_demand(tm, uplinks)
    p = t.shape[0]
    pairs = [(a, b) for a in range(p) for b in range(p) if a != b]
    pid = {pr: i for i, pr in enumerate(pairs)}
    nx_ = len(pairs)
    # path variables: for each commodity (s,d): direct, then via m
    paths: list[tuple[int, int, int]] = []     # (commodity idx, link1, link2 or -1)
    for (s, d) in pairs:
        c = pid[(s, d)]
        paths.append((c, pid[(s, d)], -1))
        for m in range(p):
            if m not in (s, d):
                paths.append((c, pid[(s, m)], pid[(m, d)]))
    npath = len(paths)
    nv = nx_ + npath + 1
    lam = nv - 1
    cost = np.zeros(nv)
    cost[lam] = -1.0
    # capacity: sum of path flows on link - x <= 0
    cr, cc, cv = [], [], []
    for k, (_, l1, l2) in enumerate(paths):
        for li in (l1, l2):
            if li >= 0:
                cr.append(li)
                cc.append(nx_ + k)
                cv.append(1.0)
    for li in range(nx_):
        cr.append(li)
        cc.append(li)
        cv.append(-1.0)
    a_ub = sparse.csr_matrix((cv, (cr, cc)), shape=(nx_, nv))
    b_ub = np.zeros(nx_)
    # equalities: demand (sum of paths - λ t = 0), out-degree, in-degree
    er, ec, ev = [], [], []
    for k, (c, _, _) in enumerate(paths):
        er.append(c)
        ec.append(nx_ + k)
        ev.append(1.0)
    for (s, d), c in pid.items():
        er.append(c)
        ec.append(lam)
        ev.append(-t[s, d])
    for (a, b), li in pid.items():
        er.append(nx_ + a)
        ec.append(li)
        ev.append(1.0)
        er.append(nx_ + p + b)
        ec.append(li)
        ev.append(1.0)
    a_eq = sparse.csr_matrix((ev, (er, ec)), shape=(nx_ + 2 * p, nv))
    b_eq = np.concatenate([np.zeros(nx_), np.full(2 * p, float(uplinks))])
    bounds = [(1.0, None)] * nx_ + [(0.0, None)] * npath + [(0.0, None)]
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - the LP is always feasible when uplinks >= p - 1
        raise ConfigError("pods", p, f"the PRN LP failed: {res.message}")
    x = np.zeros((p, p))
    for (a, b), li in pid.items():
        x[a, b] = res.x[li]
    return x, float(res.x[lam])


def prn_direct(tm: np.ndarray, uplinks: int) -> tuple[np.ndarray, float]:
    """The pod-level links in proportion to the demand, direct paths only (relaxed counts).

    The authors' allocation LP (TAGO's code) maximises the concurrent throughput λ over
    direct pod paths only: ``x[a, b] >= max(1, λ · tm[a, b])`` within each pod's uplinks.
    Its optimum gives every pair λ · tm links and leaves the other pods' spare links
    wherever the solver's vertex lands; here every pod uses all its ``uplinks`` (each OCS
    is a permutation), so the links beyond one per pair are spread in proportion to the
    demand: ``x = 1 + S`` with ``S`` the matrix scaling of ``tm`` (Sinkhorn) to row and column
    sums ``uplinks - (p - 1)``. A zero traffic matrix is treated as uniform. Returns
    (x, λ) with λ = min over pairs with demand of ``x / tm`` (``tm`` normalised to sum 1).

    >>> x, lam = prn_direct(np.array([[0, 3, 1], [1, 0, 3], [3, 1, 0]]), 6)
    >>> x.sum(axis=0).round(6).tolist(), x.sum(axis=1).round(6).tolist()
    ([6.0, 6.0, 6.0], [6.0, 6.0, 6.0])
    >>> bool(x[0, 1] > x[0, 2])
    True
    """
    t = _pod_demand(tm, uplinks)
    p = t.shape[0]
    off = ~np.eye(p, dtype=bool)
    spare = float(uplinks - (p - 1))
    # a vanishing uniform floor keeps the scaling defined where a row or column has no demand
    if spare <= 0:
        x = off.astype(np.float64)
        return x, float((x[t > 0] / t[t > 0]).min()) if (t > 0).any() else 0.0
    s = np.where(off, t + 1e-6 / (p * p), 0.0)
    for _ in range(100_000):
        s *= (spare / s.sum(axis=1))[:, None]
        s *= (spare / s.sum(axis=0))[None, :]
        if np.abs(s.sum(axis=1) - spare).max() <= 1e-9 * max(spare, 1.0):
            break
    x = np.where(off, 1.0 + s, 0.0)
    dem = t > 0
    lam = float((x[dem] / t[dem]).min()) if dem.any() else 0.0
    return x, lam


def round_links(x: np.ndarray, uplinks: int) -> np.ndarray:
    """Integer link counts near the relaxed ``x``: ``⌊x⌋ <= n <= ⌈x⌉``, at least 1 per
    pod pair, every row and column summing to ``uplinks`` (a transportation problem with
    integer bounds, whose basic solutions HiGHS returns are integral; the objective
    keeps the largest fractional parts)."""
    from scipy import sparse
    p = x.shape[0]
    pairs = [(a, b) for a in range(p) for b in range(p) if a != b]
    lo = np.array([max(1.0, math.floor(x[a, b] + 1e-9)) for a, b in pairs])
    hi = np.array([max(lo[i], math.ceil(x[a, b] - 1e-9)) for i, (a, b) in enumerate(pairs)])
    frac = np.array([x[a, b] - math.floor(x[a, b]) for a, b in pairs])
    er, ec = [], []
    for i, (a, b) in enumerate(pairs):
        er += [a, p + b]
        ec += [i, i]
    a_eq = sparse.csr_matrix((np.ones(len(er)), (er, ec)), shape=(2 * p, len(pairs)))
    res = linprog(-frac, A_eq=a_eq, b_eq=np.full(2 * p, float(uplinks)), bounds=list(zip(lo, hi)),
                  method="highs-ds")
    if res.status != 0:
        # bounds too tight (e.g. x itself infeasible): widen to [1, uplinks]
        res = linprog(-frac, A_eq=a_eq, b_eq=np.full(2 * p, float(uplinks)),
                      bounds=[(1.0, float(uplinks))] * len(pairs), method="highs-ds")
    n = np.zeros((p, p), np.int64)
    for i, (a, b) in enumerate(pairs):
        n[a, b] = int(round(res.x[i]))
    return n


def permutations(counts: np.ndarray) -> np.ndarray:
    """Decompose a non-negative integer matrix whose rows and columns all sum to ``U``
    into ``U`` permutations (König: a regular bipartite multigraph is a union of perfect
    matchings): ``(U, p)`` array, row ``o`` maps each pod to its peer on OCS ``o``."""
    from scipy import sparse
    from scipy.sparse.csgraph import maximum_bipartite_matching
    c = np.asarray(counts, np.int64).copy()
    p = c.shape[0]
    u = int(c.sum(axis=1)[0])
    if (c.sum(axis=1) != u).any() or (c.sum(axis=0) != u).any():
        raise ConfigError("counts", c.sum(axis=1).tolist(), "rows and columns must all have the same sum")
    out = np.empty((u, p), np.int64)
    for o in range(u):
        m = maximum_bipartite_matching(sparse.csr_matrix(c > 0), perm_type="column")
        out[o] = m
        c[np.arange(p), m] -= 1
    return out


# ---------------------------------------------------------------------------------------
# routing tables
# ---------------------------------------------------------------------------------------
@dataclass
class Tables:
    """Time-flow entries as columns (every slice wildcarded): at ``node``, a packet from
    ``src`` (-1: any) to ``dst`` may leave through local ``port``; rows of one (node, src,
    dst) are per-packet alternatives."""

    node: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    port: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence["Tables"]) -> "Tables":
        parts = [p for p in parts if len(p.node)]
        if not parts:
            z = np.zeros(0, np.int64)
            return cls(z, z, z, z)
        return cls(*(np.concatenate([getattr(p, f) for p in parts]).astype(np.int64)
                     for f in ("node", "src", "dst", "port")))

    @classmethod
    def of(cls, node: np.ndarray, src: np.ndarray | int, dst: np.ndarray, port: np.ndarray) -> "Tables":
        node = np.asarray(node, np.int64)
        return cls(node, np.broadcast_to(np.asarray(src, np.int64), node.shape).copy(),
                   np.asarray(dst, np.int64), np.asarray(port, np.int64))

    def __len__(self) -> int:
        return len(self.node)


def two_hop_wcmp_tables(peer_node: np.ndarray, n: int) -> Tables:
    """Weighted multipath over the direct path and every two-hop path of a pair, each path
    one equal share (the WCMP weights the authors' generator gives reconfigurable networks:
    the direct path and every path via one intermediate of a pair weigh the same):
    ``peer_node[v, p]`` is the node port ``p`` of ``v`` sends to (-1: none), nodes ``0..n-1``
    the racks. At its source (an exact-source entry) a packet for ``d`` picks per packet
    one of the ports that lead to ``d`` or to a node with a port to ``d`` (a port per path);
    at the intermediate (a wildcard-source entry) it takes a port to ``d``. A pair with no
    path of at most two links has no entry (its packets wait at their source).

    >>> t = two_hop_wcmp_tables(np.array([[1, 2], [2, 0], [0, 1]]), 3)   # a triangle, two ports each
    >>> sorted(zip(t.dst[t.src == 0].tolist(), t.port[t.src == 0].tolist()))   # 0 -> 1: direct, or via 2
    [(1, 0), (1, 1), (2, 0), (2, 1)]
    """
    peer = np.asarray(peer_node[:n], dtype=np.int64)
    u = peer.shape[1]
    adj = np.zeros((n, n), dtype=bool)
    v, p = np.nonzero((peer >= 0) & (peer < n))
    adj[v, peer[v, p]] = True
    node, src, dst, port = [], [], [], []
    for s_ in range(n):
        for q in range(u):
            mid = int(peer[s_, q])
            if mid < 0 or mid >= n:
                continue
            # the port is one path to mid itself and one to every node mid reaches
            targets = np.flatnonzero(adj[mid])
            targets = np.union1d(targets[targets != s_], [mid])
            node.append(np.full(len(targets), s_))
            src.append(np.full(len(targets), s_))
            dst.append(targets)
            port.append(np.full(len(targets), q))
    # transit: a packet at an intermediate goes to its destination directly
    for v_ in range(n):
        for q in range(u):
            d = int(peer[v_, q])
            if 0 <= d < n:
                node.append(np.array([v_]))
                src.append(np.array([-1]))
                dst.append(np.array([d]))
                port.append(np.array([q]))
    if not node:
        z = np.zeros(0, np.int64)
        return Tables(z, z, z, z)
    return Tables.of(np.concatenate(node), np.concatenate(src), np.concatenate(dst), np.concatenate(port))


def ecmp_tables(peer_node: np.ndarray, dests: np.ndarray, max_hops: int | None = None) -> Tables:
    """Shortest-path ECMP: ``peer_node[v, p]`` is the node port ``p`` of node ``v`` sends
    to (-1: none). At every node and for every destination in ``dests``, the ports whose
    peer is one hop closer to the destination (distances by BFS over the directed port
    graph), with a wildcard source. ``max_hops``: only nodes at most that many hops from
    the destination get entries (a packet farther away has no route; where the engine
    holds packets, it waits for one)."""
    from scipy import sparse
    from scipy.sparse.csgraph import shortest_path
    n, u = peer_node.shape
    vv, pp = np.nonzero(peer_node >= 0)
    g = sparse.csr_matrix((np.ones(len(vv)), (vv, peer_node[vv, pp])), shape=(n, n))
    g.data[:] = 1.0
    dests = np.asarray(dests, np.int64)
    # distances to each destination: BFS on the reversed graph from the destinations
    dist = shortest_path(g.T.tocsr(), directed=True, unweighted=True, indices=dests).T   # (n, len(dests))
    parts = []
    for p in range(u):
        q = peer_node[:, p]
        ok = q >= 0
        v = np.flatnonzero(ok)
        dv = dist[v]                       # (|v|, D)
        dq = dist[q[v]]
        good = np.isfinite(dv) & (dq == dv - 1) & (dv > 0)
        if max_hops is not None:
            good &= dv <= max_hops
        vi, di = np.nonzero(good)
        parts.append(Tables.of(v[vi], -1, dests[di], np.full(len(vi), p)))
    return Tables.concat(parts)


# ---------------------------------------------------------------------------------------
# path capacity (Teh et al. §6.D, Fig. 13)
# ---------------------------------------------------------------------------------------
def circuit_matrix(conf: np.ndarray, n: int | None = None) -> np.ndarray:
    """The ``n×n`` circuit-count matrix of a configuration given as ``(uplinks, n)``
    matchings (row ``u`` maps each unit to the peer of its uplink ``u``, -1: none):
    ``C[a, b]`` = directed circuits from ``a`` to ``b``.

    >>> circuit_matrix(np.array([[1, 2, 0], [1, 0, -1]])).tolist()
    [[0, 2, 0], [1, 0, 1], [1, 0, 0]]
    """
    conf = np.asarray(conf, np.int64)
    n = conf.shape[1] if n is None else n
    c = np.zeros((n, n), np.int64)
    u, a = np.nonzero(conf >= 0)
    np.add.at(c, (a, conf[u, a]), 1)
    return c


def two_hop_capacity(c: np.ndarray) -> np.ndarray:
    """Total path capacity between every ordered pair over direct circuits and paths
    through one intermediate: ``P[a, b] = C[a, b] + Σ_m min(C[a, m], C[m, b])``
    (``m ≠ a, b``; unit-capacity circuits). Paths through different intermediates share
    no circuit, so this is the pair's exact max-flow over paths of at most two hops.
    The diagonal is 0.

    >>> two_hop_capacity(np.array([[0, 2, 1], [0, 0, 1], [1, 0, 0]])).tolist()
    [[0, 2, 2], [1, 0, 1], [1, 1, 0]]
    """
    c = np.asarray(c, np.int64)
    off = c.copy()
    np.fill_diagonal(off, 0)
    via = np.minimum(off[:, :, None], off[None, :, :]).sum(axis=1)   # via[a, b] = Σ_m min(C[a,m], C[m,b])
    p = off + via
    np.fill_diagonal(p, 0)
    return p


def trn_path_capacity(conf: np.ndarray) -> np.ndarray:
    """Rack-pair path capacity of one TRN configuration (``(uplinks, racks)``
    matchings): direct circuits plus paths via one intermediate ToR
    (:func:`two_hop_capacity` of the circuit matrix), in unit-capacity circuits."""
    return two_hop_capacity(circuit_matrix(conf))


def prn_path_capacity(pod_links: np.ndarray, racks_per_pod: int, rack_uplinks: int) -> np.ndarray:
    """Rack-pair path capacity of one PRN configuration: ``pod_links[p, q]`` directed
    circuits between pods. Between racks of different pods, the pod-level two-hop
    capacity (:func:`two_hop_capacity` of the link counts), capped by the
    ``rack_uplinks`` of each rack into its pod (the intra-pod wiring is static and
    non-blocking); between racks of the same pod, the rack's uplinks. Units: circuits
    (every link has the same rate).

    >>> prn_path_capacity(np.array([[0, 3], [3, 0]]), 2, 2).tolist()
    [[0, 2, 2, 2], [2, 0, 2, 2], [2, 2, 0, 2], [2, 2, 2, 0]]
    """
    if isinstance(racks_per_pod, bool) or not isinstance(racks_per_pod, (int, np.integer)) or racks_per_pod < 1:
        raise ConfigError("racks_per_pod", racks_per_pod, "expected an integer >= 1")
    if isinstance(rack_uplinks, bool) or not isinstance(rack_uplinks, (int, np.integer)) or rack_uplinks < 1:
        raise ConfigError("rack_uplinks", rack_uplinks, "expected an integer >= 1")
    pod = np.minimum(two_hop_capacity(pod_links), rack_uplinks)
    np.fill_diagonal(pod, rack_uplinks)
    r = int(racks_per_pod)
    out = np.repeat(np.repeat(pod, r, axis=0), r, axis=1)
    np.fill_diagonal(out, 0)
    return out
