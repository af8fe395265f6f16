"""Flow-level simulation: max-min fair rates over capacitated links, for runs of seconds.

The packet engine follows every packet; at 2 048 hosts x 100 Gb/s a second of simulated
time is out of its reach. This mode follows flows instead (docs/flowsim.md):

* **links** are directed and capacitated: every fabric port with a circuit (ToR
  uplinks, OCS circuits, switch links) at its link rate, and each endpoint's uplink and
  downlink (host NIC) at the endpoint rate;
* **routing** is fractional: a flow between two racks is split over the network's
  routes exactly as the packet engine's per-packet load balancing splits its packets —
  uniformly among the candidates of the time-flow table at every hop (the engine's
  lookup precedence: entries for the packet's source before wildcard ones), or
  uniformly among the source routes of the pair. ``A[f, l]`` is the share of flow ``f``
  that crosses link ``l`` (1 for its host links);
* **rates** are max-min fair (:func:`maxmin`, progressive filling on the sparse matrix
  ``A``): every flow's rate rises at the same pace until a link it crosses saturates;
  with split flows a link fills at ``sum_f A[f, l] · rate_f``;
* **events**: rates are recomputed at flow arrivals, flow departures, reconfigurations
  and the instants circuits come up again; in between, flows progress linearly (no time
  step);
* **reconfigurable circuits**: the controllers of :mod:`opendcn.arch.hpc` (TRN's
  successive matchings or rotor cycle, PRN's LP) configure from the run's whole traffic
  matrix at the start and from the bytes still to deliver at every period, through the
  same :meth:`~opendcn.arch.hpc.Controller.reconfigure` the packet engine calls. The
  ports whose circuit changed are down for the reconfiguration delay; meanwhile packets
  avoid them: at every hop the candidates on a down circuit, or leading to a node from
  which the destination cannot be reached over circuits that are up, are dropped from the
  split; a rack pair with no route left waits (rate 0) until the circuits come up.

``run`` returns the same :class:`~opendcn.network.Result` as a packet run (per-flow
table, summary with ``"mode": "flow"``); ``opendcn run ARCH --mode flow`` is the CLI.

>>> import scipy.sparse as sp
>>> A = sp.csr_matrix([[1, 0], [1, 1], [0, 1]])   # three flows over two links
>>> maxmin(A, [10.0, 4.0]).tolist()
[8.0, 2.0, 2.0]
"""

from __future__ import annotations

import hashlib
import heapq
import os
import time
from collections import deque
from typing import Any

import numpy as np
import pyarrow as pa
from scipy import sparse

from .. import _core
from ..errors import ConfigError, InvariantError
from ..units import parse_size, parse_time

__all__ = ["maxmin", "run", "routing_matrix", "routing_paths", "mean_flow_throughput", "link_loads"]

#: hops a route may take before it is declared a loop
MAX_HOPS = 16
#: most samples of a flow-level run's time series (the interval grows for long runs)
MAX_SAMPLES = 2000
#: the native kernels (``opendcn_core::maxmin``): rates bit-identical to :func:`_maxmin`,
#: the routing state graph array for array :func:`_state_graph`; False runs the numpy
#: references (the tests compare the two)
NATIVE = True


# ---------------------------------------------------------------------------------------
# the max-min solver
# ---------------------------------------------------------------------------------------
def maxmin(A: Any, cap: Any, *, blocked: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates of the flows (rows of ``A``) on links of capacity ``cap``
    (columns of ``A``), by progressive filling.

    ``A[f, l] >= 0`` is the share of flow ``f``'s rate that crosses link ``l`` (1 for a
    flow on one path; ``1/k`` for each of ``k`` paths a flow is split over evenly). All
    unfrozen flows rise together; link ``l`` saturates when ``sum_f A[f, l] · r_f`` reaches
    ``cap[l]``; the flows crossing a saturated link freeze at their rate. Flows in
    ``blocked``, and flows crossing a link of capacity 0, get 0. A flow crossing no link
    would be unbounded: ConfigError.

    Every flow's rate is then bottlenecked: it crosses a saturated link on which no flow
    has a larger rate (the max-min property), and no link is over its capacity.
    """
    A = sparse.csr_matrix(A, dtype=np.float64)
    F, L = A.shape
    cap = np.asarray(cap, dtype=np.float64)
    if cap.shape != (L,):
        raise ConfigError("cap", cap.shape, f"expected one capacity per link ({L})")
    if (cap < 0).any() or not np.isfinite(cap).all():
        raise ConfigError("cap", float(cap.min()), "link capacities must be finite and >= 0")
    if A.nnz and (A.data < 0).any():
        raise ConfigError("A", float(A.data.min()), "link shares must be >= 0")
    A.eliminate_zeros()
    frozen = np.zeros(F, bool) if blocked is None else np.asarray(blocked, bool).copy()
    empty = np.diff(A.indptr) == 0
    if (empty & ~frozen).any():
        raise ConfigError("A", int(np.flatnonzero(empty & ~frozen)[0]),
                          "a flow that crosses no link has no max-min rate (unbounded)")
    rows = np.repeat(np.arange(F), np.diff(A.indptr))
    return _maxmin(rows, A.indices.astype(np.int64), A.data, F, cap, frozen)


def _maxmin(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, F: int, cap: np.ndarray,
            frozen: np.ndarray) -> np.ndarray:
    """Progressive filling on the entries (flow, link, share) of ``A``; ``frozen`` flows
    get 0. Each round works on the entries of the flows still rising only: the shares of
    the rising flows per link (kept: a frozen flow's shares come off), the smallest
    increment that saturates a link, the flows of the saturated links frozen at the
    level reached."""
    L = len(cap)
    rate = np.zeros(F)
    dead = cap <= 0
    if dead.any():
        frozen[rows[dead[cols]]] = True
    keep = ~frozen[rows]
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    rem = cap.copy()
    level = 0.0
    # the rising shares per link, summed in entry order; a frozen flow's shares come off
    # (flows ascending, entries in order), a link without rising entries gets exactly 0
    w = np.bincount(cols, weights=vals, minlength=L)
    cnt = np.bincount(cols, minlength=L)
    while len(rows):
        live = np.flatnonzero(w > 0)      # every share is positive: the links with entries
        wl = w[live]
        share = rem[live] / wl
        inc = max(float(share.min()), 0.0)
        level += inc
        rem[live] -= inc * wl
        satl = live[share <= inc * (1 + 1e-12) + 1e-300]
        rem[satl] = 0.0
        np.maximum(rem, 0.0, out=rem)
        sat = np.zeros(L, bool)
        sat[satl] = True
        new = rows[sat[cols]]
        rate[new] = level
        frozen[new] = True
        keep = ~frozen[rows]
        off = ~keep                       # the entries of the flows frozen now, in order
        np.subtract.at(w, cols[off], vals[off])
        np.subtract.at(cnt, cols[off], 1)
        w[cnt == 0] = 0.0
        rows, cols, vals = rows[keep], cols[keep], vals[keep]
    return rate


def link_loads(A: Any, rate: np.ndarray) -> np.ndarray:
    """Load of every link: ``sum_f A[f, l] · rate_f``."""
    return np.asarray(sparse.csr_matrix(A).T @ np.asarray(rate, np.float64)).ravel()


def _expand(lo: np.ndarray, cnt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, index) of every item of the ranges ``[lo, lo + cnt)``."""
    owner = np.repeat(np.arange(len(lo)), cnt)
    idx = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]).astype(np.int64), cnt) \
        + np.arange(int(cnt.sum()))
    return owner, idx


# ---------------------------------------------------------------------------------------
# routes as a fractional routing matrix
# ---------------------------------------------------------------------------------------
def _port_nodes(net: Any) -> np.ndarray:
    return np.searchsorted(net.port_offset, np.arange(net.n_ports), side="right") - 1


def routing_matrix(net: Any, down: np.ndarray | None = None) -> tuple[sparse.csr_matrix, np.ndarray]:
    """The network's current routes as ``(R, reachable)``: ``R[s·N + d, g]`` is the share
    of the traffic from rack ``s`` to rack ``d`` that leaves through global port ``g``
    (per-packet load balancing: uniform among the candidates at every hop, or among the
    source routes of the pair), ``reachable[s·N + d]`` whether any route is left. Ports in
    ``down`` (a boolean mask over global ports) carry nothing: candidates on them, and
    candidates leading only to dead ends, are left out of the split."""
    R, reach, _ = routing_paths(net, down)
    return R, reach


def routing_paths(net: Any, down: np.ndarray | None = None) -> tuple[sparse.csr_matrix, np.ndarray, sparse.csr_matrix]:
    """:func:`routing_matrix` and the path lengths: ``(R, reachable, H)`` with
    ``H[s·N + d, h]`` the share of the pair's traffic that crosses ``h`` fabric links."""
    if net._peer is None:
        raise ConfigError("network", net.arch, "deploy circuits (deploy_topo) before a flow-level run")
    if net.slices != 1:
        raise ConfigError("network", net.arch, f"the flow-level mode models static or reconfigured circuits; this "
                                               f"network cycles {net.slices} time slices")
    P = net.n_ports
    peer = net._peer[0]
    pnode = _port_nodes(net)
    up = peer >= 0
    if down is not None:
        up &= ~down
    nxt = np.where(peer >= 0, pnode[np.maximum(peer, 0)], -1)
    if net._router == "source":
        return _source_matrix(net, up, nxt, pnode)
    if net._router != "table":
        raise ConfigError("network", net.arch, f"the flow-level mode follows tables or source routes, not the "
                                               f"built-in router {net._router!r}")
    t = net._table_columns()
    if len(t["tf_node"]) and ((t["tf_arr"] >= 0).any() or (t["tf_dep"] >= 0).any()):
        raise ConfigError("network", net.arch, "the flow-level mode needs tables without time slices")
    return _table_matrix(net, t["tf_node"], t["tf_src"], t["tf_dst"], t["tf_port"], up, nxt, P)


def _state_graph(key: np.ndarray, gport: np.ndarray, up: np.ndarray, nxt: np.ndarray, N: int, T: int,
                 pid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """The numpy reference of ``opendcn_core::maxmin::state_graph`` (the runs call the
    native one, :data:`NATIVE`): the (pair, node) states reachable from each pair's source
    rack and the edges (from state, port, to state) between them, breadth first."""
    looped = False
    st_pair, st_node = pid.copy(), pid // N
    kk = st_pair * T + st_node
    ko = np.argsort(kk)
    known_k, known_id = kk[ko], ko.astype(np.int64)
    e_from: list[np.ndarray] = []
    e_port: list[np.ndarray] = []
    e_to: list[np.ndarray] = []
    frontier = np.arange(len(st_pair))
    sp_l, nd_l = [st_pair], [st_node]
    total = len(st_pair)
    all_p, all_v = st_pair, st_node
    for _ in range(MAX_HOPS):
        if len(frontier) == 0:
            break
        p, v = all_p[frontier], all_v[frontier]
        s, d = p // N, p % N
        k1 = (v * N + d) * (N + 1) + (s + 1)
        k0 = (v * N + d) * (N + 1)
        lo1, hi1 = np.searchsorted(key, k1, "left"), np.searchsorted(key, k1, "right")
        lo0, hi0 = np.searchsorted(key, k0, "left"), np.searchsorted(key, k0, "right")
        use1 = hi1 > lo1
        lo = np.where(use1, lo1, lo0)
        cnt = np.where(use1, hi1 - lo1, hi0 - lo0)
        own, ent = _expand(lo, cnt)
        g = gport[ent]
        ok = up[g]
        own, g = own[ok], g[ok]
        w = nxt[g]
        e_from.append(frontier[own])
        e_port.append(g)
        ek = p[own] * T + w
        uniq, inv = np.unique(ek, return_inverse=True)
        pos = np.minimum(np.searchsorted(known_k, uniq), max(len(known_k) - 1, 0))
        found = known_k[pos] == uniq if len(known_k) else np.zeros(len(uniq), bool)
        ids_u = np.where(found, known_id[pos], -1)
        fresh = np.flatnonzero(~found)
        ids_u[fresh] = total + np.arange(len(fresh))
        e_to.append(ids_u[inv])
        newp, newv = uniq[fresh] // T, uniq[fresh] % T
        total += len(fresh)
        all_p, all_v = np.concatenate([all_p, newp]), np.concatenate([all_v, newv])
        sp_l.append(newp)
        nd_l.append(newv)
        mk = np.concatenate([known_k, uniq[fresh]])
        mi = np.concatenate([known_id, ids_u[fresh]])
        o2 = np.argsort(mk, kind="stable")
        known_k, known_id = mk[o2], mi[o2]
        newst = ids_u[fresh]
        frontier = newst[newv != newp % N]
    else:
        if len(frontier):
            looped = True
    st_pair = np.concatenate(sp_l)
    st_node = np.concatenate(nd_l)
    ef = np.concatenate(e_from) if e_from else np.zeros(0, np.int64)
    ep = np.concatenate(e_port) if e_port else np.zeros(0, np.int64)
    et = np.concatenate(e_to) if e_to else np.zeros(0, np.int64)
    return st_pair, st_node, ef, ep, et, looped


def _table_matrix(net: Any, node: np.ndarray, src: np.ndarray, dst: np.ndarray, gport: np.ndarray,
                  up: np.ndarray, nxt: np.ndarray, P: int) -> tuple[sparse.csr_matrix, np.ndarray, sparse.csr_matrix]:
    N = net.config.nodes
    # entries sorted by (node, dst, src + 1): the engine's lookup with its precedence
    key = (node.astype(np.int64) * N + dst) * (N + 1) + (src + 1)
    order = np.argsort(key, kind="stable")
    key, gport = key[order], gport[order].astype(np.int64)
    pairs = np.array([(s, d) for s in range(N) for d in range(N) if s != d], np.int64).reshape(-1, 2)
    pid = pairs[:, 0] * N + pairs[:, 1]
    # 1. the graph of (pair, node) states reachable from the source rack
    T = int(net.total_nodes)
    if NATIVE:
        st_pair, st_node, ef, ep, et, looped = _core.state_graph(key, gport, np.ascontiguousarray(up, bool),
                                                                 nxt.astype(np.int64), N, T, pid, MAX_HOPS)
    else:
        st_pair, st_node, ef, ep, et, looped = _state_graph(key, gport, up, nxt, N, T, pid)
    if looped:
        raise InvariantError(f"{net.arch}: routes loop (a packet still travels after {MAX_HOPS} hops)")
    if NATIVE:
        rows_a, cols_a, vals_a, hr, hc, hv, reach_src = _core.state_shares(st_pair, st_node, ef, ep, et, len(pid), N,
                                                                           MAX_HOPS)
        # the engine sorts and sums the entries (scipy's own conversion takes several
        # times longer here; the same arrays whenever no (pair, port) repeats more than
        # twice, and a fixed order of summation beyond that)
        indptr, indices, data = _core.coo_to_csr(rows_a, cols_a, vals_a, N * N)
        R = sparse.csr_matrix((data, indices, indptr), shape=(N * N, P))
        reach = np.zeros(N * N, bool)
        reach[pid] = reach_src
        return R, reach, _hop_matrix([hr], [hc], [hv], N)
    return _state_shares(st_pair, st_node, ef, ep, et, pid, N, P)


def _state_shares(st_pair: np.ndarray, st_node: np.ndarray, ef: np.ndarray, ep: np.ndarray, et: np.ndarray,
                  pid: np.ndarray, N: int, P: int) -> tuple[sparse.csr_matrix, np.ndarray, sparse.csr_matrix]:
    """The numpy reference of ``opendcn_core::maxmin::state_shares`` (the runs call the
    native one, :data:`NATIVE`): live states, then each pair's traffic pushed from its
    source state hop by hop, split evenly over each state's live edges."""
    # 2. live states: at the destination, or with an edge to a live state
    live = st_node == st_pair % N
    for _ in range(MAX_HOPS + 1):
        more = np.zeros(len(live), bool)
        more[ef[live[et]]] = True
        more |= live
        if (more == live).all():
            break
        live = more
    keep = live[et] & live[ef]
    ef, ep, et = ef[keep], ep[keep], et[keep]
    # 3. shares: uniform over the live candidates of each state, pushed from the source
    outdeg = np.bincount(ef, minlength=len(live)).astype(np.float64)
    order = np.argsort(ef, kind="stable")
    ef, ep, et = ef[order], ep[order], et[order]
    mass = np.zeros(len(live))
    mass[:len(pid)] = live[:len(pid)].astype(np.float64)
    rows, cols, vals = [], [], []
    h_rows, h_cols, h_vals = [], [], []
    cur = np.flatnonzero(mass > 0)
    starts = np.searchsorted(ef, np.arange(len(live)))
    for hop in range(1, MAX_HOPS + 2):
        cur = cur[(st_node[cur] != st_pair[cur] % N) & (outdeg[cur] > 0)]
        if len(cur) == 0:
            break
        own, e = _expand(starts[cur], outdeg[cur].astype(np.int64))
        m = mass[cur][own] / outdeg[cur][own]
        rows.append(st_pair[cur][own])
        cols.append(ep[e])
        vals.append(m)
        there = st_node[et[e]] == st_pair[et[e]] % N      # arrived: a path of `hop` links
        h_rows.append(st_pair[et[e]][there])
        h_cols.append(np.full(int(there.sum()), hop, np.int64))
        h_vals.append(m[there])
        nm = np.zeros(len(live))
        np.add.at(nm, et[e], m)
        mass[cur] = 0.0
        mass += nm
        cur = np.flatnonzero(nm > 0)
    R = sparse.csr_matrix((np.concatenate(vals) if vals else np.zeros(0),
                           (np.concatenate(rows) if rows else np.zeros(0, np.int64),
                            np.concatenate(cols) if cols else np.zeros(0, np.int64))), shape=(N * N, P))
    reach = np.zeros(N * N, bool)
    reach[pid] = live[:len(pid)]
    return R, reach, _hop_matrix(h_rows, h_cols, h_vals, N)


def _cat(parts: list[Any], dtype: Any) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


def _hop_matrix(rows: list[Any], cols: list[Any], vals: list[Any], N: int) -> sparse.csr_matrix:
    """Shares of each rack pair's traffic by path length (fabric links)."""
    return sparse.csr_matrix((_cat(vals, np.float64), (_cat(rows, np.int64), _cat(cols, np.int64))),
                             shape=(N * N, MAX_HOPS + 2))


def _source_matrix(net: Any, up: np.ndarray, nxt: np.ndarray,
                   pnode: np.ndarray) -> tuple[sparse.csr_matrix, np.ndarray, sparse.csr_matrix]:
    N = net.config.nodes
    off = net.port_offset
    count = np.zeros(N * N)
    rows, cols = [], []
    lengths: list[tuple[int, int]] = []
    for i, (s, d, ts, hops) in enumerate(net._routes):
        if ts is not None or any(dep is not None for _, dep in hops):
            raise ConfigError("network", net.arch, "the flow-level mode needs source routes without time slices")
        v, gs, ok = s, [], True
        for port, _ in hops:
            g = int(off[v] + port)
            if not up[g]:
                ok = False
                break
            gs.append(g)
            v = int(nxt[g])
        if not ok or v != d:
            continue
        count[s * N + d] += 1
        rows.extend([s * N + d] * len(gs))
        cols.extend(gs)
        lengths.append((s * N + d, len(gs)))
    r = np.asarray(rows, np.int64)
    vals = 1.0 / count[r] if len(r) else np.zeros(0)
    R = sparse.csr_matrix((vals, (r, np.asarray(cols, np.int64))), shape=(N * N, net.n_ports))
    hr = np.asarray([x[0] for x in lengths], np.int64)
    hc = np.asarray([x[1] for x in lengths], np.int64)
    if len(hc) and hc.max() > MAX_HOPS + 1:
        raise InvariantError(f"{net.arch}: a source route of {int(hc.max())} hops (at most {MAX_HOPS + 1})")
    H = _hop_matrix([hr], [hc], [1.0 / count[hr] if len(hr) else np.zeros(0)], N)
    return R, count > 0, H


# ---------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------
class _Links:
    """Capacities (bit/s) of the global ports, then each endpoint's uplink and downlink."""

    def __init__(self, net: Any):
        c = net.config
        pnode = _port_nodes(net)
        self.P = net.n_ports
        self.E = c.endpoints
        port_rate = np.where(pnode < c.nodes, float(c.link_rate), float(net.switch_link_rate))
        er = float(c.endpoint_rate)
        self.cap = np.concatenate([port_rate, np.full(2 * self.E, er)])
        self.hosts = max(1, c.hosts_per_node)
        self.N = c.nodes
        #: propagation (ps) of each port's link, then of the endpoint links
        hp = float(c.host_propagation) if c.hosts_per_node else 0.0
        self.prop = np.concatenate([np.full(self.P, float(c.propagation)), np.full(2 * self.E, hp)])
        self.host_prop = hp


def _check_time(value: Any, field: str, *, positive: bool) -> int:
    t = parse_time(value, field)
    if positive and t <= 0:
        raise ConfigError(field, value, "must be positive")
    if t < 0:
        raise ConfigError(field, value, "must be >= 0")
    return t


def run(network: Any, workload: Any, duration: Any = "1ms", seed: int = 1, *, period: Any = None,
        reconfiguration_delay: Any = None, duty_cycle: Any = None, out: str | os.PathLike[str] | None = None,
        mice_threshold: Any = 10_000, progress: bool = False, **options: Any) -> Any:
    """Run ``workload`` on ``network`` at flow level for ``duration`` of simulated time.

    ``network`` is a built network (``od.arch.trn(...)``, a :class:`~opendcn.Network`
    with static circuits and tables or source routes) or an architecture name whose
    ``options`` (and ``period``, ``reconfiguration_delay``, ``duty_cycle``) go to its
    options model, checked there. With a built network, ``period`` /
    ``reconfiguration_delay`` / ``duty_cycle`` override its controller's timing (a
    ``duty_cycle`` in (0, 1] sets the delay to (1 − duty) × period). Returns a
    :class:`~opendcn.network.Result` (``summary["mode"] == "flow"``), also written to
    ``out`` when given."""
    from .. import arch as archmod
    from .network import Network, _Cut, check_run_args, progress_ticker

    duration_ps, seed = check_run_args(duration, seed)
    mice = parse_size(mice_threshold, "mice_threshold")
    if isinstance(network, str):
        if network not in archmod.REGISTRY:
            raise ConfigError("arch", network, f"unknown architecture; known: {', '.join(sorted(archmod.REGISTRY))}")
        timing = {k: v for k, v in (("period", period), ("reconfiguration_delay", reconfiguration_delay),
                                    ("duty_cycle", duty_cycle)) if v is not None}
        net = archmod.REGISTRY[network].make(**options, **timing)
        ctl = getattr(net, "controller", None)
        per, delay = (ctl.period if ctl is not None else None), int(net.config.reconfiguration_delay)
    else:
        if options:
            raise ConfigError(next(iter(options)), next(iter(options.values())),
                              "architecture options go with an architecture name, not a built network")
        net = network
        if not isinstance(net, Network):
            raise ConfigError("network", type(net).__name__, "expected an architecture name or an opendcn.Network "
                              "with static or controller-driven circuits")
        ctl = getattr(net, "controller", None)
        per, delay = _timing(net, ctl, period, reconfiguration_delay, duty_cycle)
    c = net.config
    flows = workload.generate(endpoints=c.endpoints, hosts_per_node=c.hosts_per_node, rate_bps=c.per_node_rate,
                              nodes=c.nodes, duration_ps=duration_ps, seed=seed)
    flows.validate(c.endpoints)
    if getattr(flows, "rate_bps", None) is not None:
        raise ConfigError("flows.rate", "flow mode", "application rates (a TCP flow whose bytes are written at a "
                          "rate) run on the packet engine, not the flow-level mode")
    cut = _Cut(flows, np.asarray(flows.start_ps) < duration_ps)
    t0 = time.perf_counter()
    saved = None
    if ctl is not None:
        saved = (ctl.period,)
        ctl.period = per
        ctl.start(net, cut, seed, duration_ps)
    try:
        sim = _FlowSim(net, ctl, cut, duration_ps, per, delay)
        with progress_ticker(duration_ps, f"{getattr(net, 'arch', 'flow')} (flow level)", progress) as tick:
            sim.tick = tick
            sim.run()
        wall = time.perf_counter() - t0
        result = sim.result(seed, wall, mice, getattr(workload, "description", repr(workload)))
    finally:
        if ctl is not None and saved is not None:
            ctl.period = saved[0]
    net.last_result = result
    if out is not None:
        result.write(out)
    if result.summary["invariants"]["errors"]:
        raise InvariantError(f"{net.arch} seed {seed} (flow mode): " + "; ".join(result.summary["invariants"]["errors"]))
    return result


def _timing(net: Any, ctl: Any, period: Any, delay: Any, duty: Any) -> tuple[int | None, int]:
    per = ctl.period if ctl is not None else None
    d = int(net.config.reconfiguration_delay)
    if period is not None:
        if ctl is None:
            raise ConfigError("period", period, f"{net.arch} has no reconfiguration controller")
        per = _check_time(period, "period", positive=True)
    if duty is not None:
        if isinstance(duty, bool) or not isinstance(duty, (int, float)) or not 0 < float(duty) <= 1:
            raise ConfigError("duty_cycle", duty, "the duty cycle (uptime / period) must be in (0, 1]")
        if per is None:
            raise ConfigError("duty_cycle", duty, "a duty cycle needs a reconfiguration period")
        if delay is not None:
            raise ConfigError("duty_cycle", duty, "give either duty_cycle or reconfiguration_delay")
        d = int(round((1.0 - float(duty)) * per))
    elif delay is not None:
        d = _check_time(delay, "reconfiguration_delay", positive=False)
    if per is not None and d >= per:
        raise ConfigError("reconfiguration_delay", delay if delay is not None else d,
                          "must be shorter than the reconfiguration period")
    if ctl is not None and getattr(ctl.o, "control", None) == "rotor" and per is None:
        raise ConfigError("period", period, "rotor control (TRN-R) moves to its next matchings every period")
    return per, d


class _FlowSim:
    """The event loop: times in ps (float between events), rates in bytes/ps."""

    def __init__(self, net: Any, ctl: Any, cut: Any, duration: int, period: int | None, delay: int):
        self.net, self.ctl, self.duration, self.period, self.delay = net, ctl, duration, period, delay
        #: a progress bar's tick(t), called at most every 0.2 s of wall time (None: no bar)
        self.tick: Any = None
        self.links = _Links(net)
        self.start = np.asarray(cut.start_ps, np.int64)
        self.src = np.asarray(cut.src, np.int64)
        self.dst = np.asarray(cut.dst, np.int64)
        self.size = np.asarray(cut.size, np.int64)
        self.cut = cut
        h, N = self.links.hosts, self.links.N
        self.pair = (self.src // h) * N + self.dst // h
        self.same = (self.src // h) == (self.dst // h)
        self.qkey = self.src * int(net.config.endpoints) + self.dst
        c = net.config
        #: bits of a packet (a full one unless the flow is shorter): the flow's last
        #: packets still cross every link after the first store-and-forward, queued
        #: behind full packets at each hop
        self.last_bits = (np.minimum(self.size, c.mtu) + c.header) * 8.0
        self.latency = np.zeros(len(self.size))
        n = len(self.size)
        self.rem = self.size.astype(np.float64)
        self.finish = np.full(n, -1, np.int64)
        self.rate = np.zeros(n)               # bytes / ps of the active flows
        self.down = np.zeros(net.n_ports, bool)
        self.stats = {"events": 0, "rate_computations": 0, "solver_s": 0.0, "routing_s": 0.0, "routings": 0,
                      "max_active_flows": 0, "waiting_flow_events": 0, "isolated_updates": 0}
        self.errors: list[str] = []
        self.integrated = 0.0
        self.hosts_mode = bool(c.hosts_per_node)
        self.flow_hops = np.zeros(n, np.int64)
        self._init_waits(cut)
        self._init_series(c)
        self._route()

    def _init_waits(self, cut: Any) -> None:
        """Flows that start when others finish, as in the packet engine: ``waiting`` counts
        each flow's unfinished dependencies (plus one for the barrier before a co-flow
        ``c >= 1``); ``actual_start`` is when a flow started (-1: not yet)."""
        n = len(self.size)
        self.actual_start = np.full(n, -1, np.int64)
        self.gap = np.asarray(cut.gap_ps, np.int64) if getattr(cut, "gap_ps", None) is not None else np.zeros(n, np.int64)
        self.waiting = np.zeros(n, np.int64)
        self.dependents: list[list[int]] | None = None
        self.coflow = None
        if getattr(cut, "after_ids", None) is not None:
            ptr, ids = np.asarray(cut.after_ptr, np.int64), np.asarray(cut.after_ids, np.int64)
            self.after = (ptr, ids)
            self.waiting += np.diff(ptr)
            self.dependents = [[] for _ in range(n)]
            for i in range(n):
                for j in ids[ptr[i]:ptr[i + 1]].tolist():
                    self.dependents[j].append(i)
        if getattr(cut, "coflow", None) is not None:
            cf = np.asarray(cut.coflow, np.int64)
            self.coflow = cf
            m = int(cf.max()) + 1
            self.coflow_left = np.bincount(cf[cf >= 0], minlength=m)
            order = np.argsort(cf, kind="stable")
            bounds = np.searchsorted(cf[order], np.arange(m + 1))
            self.coflow_flows = [order[bounds[c]:bounds[c + 1]] for c in range(m)]
            self.waiting += cf > 0
        self.waiting_at_start = self.waiting.copy()

    def _finished(self, fin: np.ndarray, release: list[tuple[int, int]]) -> None:
        """Flows ``fin`` have finished (``self.finish`` set): the flows waiting for them
        whose last dependency or barrier this was are due at that finish + their gap (and
        not before their start); pushed onto the heap ``release`` as (time, flow)."""
        if self.dependents is not None:
            ptr, ids = self.after
            for f in fin.tolist():
                for h in self.dependents[f]:
                    # after the last dependency to arrive (they arrive in another order
                    # than their last bytes leave)
                    self._one_wait_less(h, lambda h=h: int(self.finish[ids[ptr[h]:ptr[h + 1]]].max()), release)
        if self.coflow is not None:
            for f in fin.tolist():
                c = int(self.coflow[f])
                if c < 0:
                    continue
                self.coflow_left[c] -= 1
                if self.coflow_left[c] == 0 and c + 1 < len(self.coflow_flows):
                    # the barrier lifts when the co-flow's last flow has arrived
                    last = int(self.finish[self.coflow_flows[c]].max())
                    for h in self.coflow_flows[c + 1].tolist():
                        self._one_wait_less(h, lambda: last, release)

    def _one_wait_less(self, h: int, last: Any, release: list[tuple[int, int]]) -> None:
        """Flow ``h`` waits for one dependency or barrier less; at none it is due at
        ``last()`` (when what it waited for arrived) + its gap, not before its start."""
        self.waiting[h] -= 1
        if self.waiting[h] == 0:
            heapq.heappush(release, (max(int(self.start[h]), last() + int(self.gap[h])), h))

    def _init_series(self, c: Any) -> None:
        """What the time series and the hop counts accumulate: the bytes each flow moved
        up to the last flush, per global port and in all since then (floats: the fluid
        model moves fractions of bytes), the delivered bytes by hop count."""
        net, P, N = self.net, self.links.P, self.links.N
        interval = int(c.sample_interval)
        #: samples at the configured interval, at most MAX_SAMPLES of them per run
        self.sample = max(interval, -(-self.duration // MAX_SAMPLES)) if interval > 0 else 0
        if net.watch_ports is not None:
            self.watch = np.asarray(net.watch_ports, np.int64)
        else:
            self.watch = np.arange(P, dtype=np.int64) if P <= 4096 else np.zeros(0, np.int64)
        self._snap = np.zeros(len(self.size))
        #: flows active at the last flush, and flows started since (the only ones that move)
        self._flush_active = np.zeros(0, np.int64)
        self._since: list[int] = []
        self._port_cum = np.zeros(P)
        self._port_out = np.zeros(P)
        self._deliv_cum = 0.0
        self._deliv_out = 0
        self.hop_bytes = np.zeros(MAX_HOPS + 3)
        self.series: list[tuple[int, np.ndarray, int]] = []
        #: the ToR port toward each endpoint (hosts mode), else -1
        self.down_port = np.full(self.links.E, -1, np.int64)
        if self.hosts_mode:
            h = self.links.hosts
            e = np.arange(self.links.E)
            node = e // h
            self.down_port = (np.asarray(net.port_offset, np.int64)[node]
                              + np.asarray(net.user_ports, np.int64)[node] + e % h)
        del N

    def _flush(self) -> None:
        """Account the bytes moved since the last flush on the routes in force: per
        global port (the fabric links of each rack pair's routes, and the ToR port down
        to the receiving host), per hop count, and in all."""
        # only flows active at the last flush or started since can have moved (a run with
        # barriers holds millions of flows that never start)
        cand = np.unique(np.concatenate([self._flush_active, np.asarray(self._since, np.int64)]))
        self._since = []
        self._flush_active = cand[self.finish[cand] < 0]
        moved = (self.size[cand] - self.rem[cand]) - self._snap[cand]
        pos = moved > 0
        nz = cand[pos]
        if len(nz) == 0:
            return
        m = moved[pos]
        self._snap[nz] += m
        N2 = self.links.N ** 2
        pm = np.bincount(self.pair[nz], weights=m, minlength=N2)
        cross = ~self.same[nz]
        pm_cross = np.bincount(self.pair[nz][cross], weights=m[cross], minlength=N2)
        # only the rows of the rack pairs that moved bytes (a product with all of R costs
        # its every entry: millions for PRN); zero rows add nothing, the sums are the same
        rows = np.flatnonzero(pm)
        self._port_cum += np.asarray(self.R[rows].T @ pm[rows]).ravel()
        if self.hosts_mode:
            self._port_cum += np.bincount(self.down_port[self.dst[nz]], weights=m, minlength=self.links.P)
        rows = np.flatnonzero(pm_cross)
        by_hops = np.asarray(self.H[rows].T @ pm_cross[rows]).ravel()
        by_hops[0] += float(m[~cross].sum())
        shift = 1 if self.hosts_mode else 0
        self.hop_bytes[shift:shift + len(by_hops)] += by_hops[:len(self.hop_bytes) - shift]
        self._deliv_cum += float(m.sum())

    def _record(self, t: int) -> None:
        """One sample at ``t``: the bytes of the interval that ends there (whole bytes,
        from the cumulative counts, so that the samples add up to the totals)."""
        self._flush()
        port_now = np.floor(self._port_cum + 1e-6)
        deliv_now = int(np.floor(self._deliv_cum + 1e-6))
        self.series.append((t, (port_now - self._port_out)[self.watch].astype(np.int64), deliv_now - self._deliv_out))
        self._port_out = port_now
        self._deliv_out = deliv_now

    def _route(self) -> None:
        t0 = time.perf_counter()
        if hasattr(self, "R"):
            self._flush()          # the bytes moved so far went over the old routes
        self.R, self.reach, self.H = routing_paths(self.net, self.down)
        # the routing matrix as the native solver reads it
        self._csr = (self.R.indptr.astype(np.int64), self.R.indices.astype(np.int32),
                     np.ascontiguousarray(self.R.data, dtype=np.float64))
        hc = self.H.tocoo()
        self.pair_hops = np.zeros(self.links.N ** 2, np.int64)     # the longest path of each pair
        np.maximum.at(self.pair_hops, hc.row[hc.data > 0], hc.col[hc.data > 0])
        # per rack pair, the expected propagation and store-and-forward time per bit
        # of the fabric links crossed (each port counted with its share)
        L = self.links
        self.pair_prop = self.R @ L.prop[:L.P]
        self.pair_sf = self.R @ (1.0 / np.maximum(L.cap[:L.P], 1.0))
        self._pair_cache: dict[int, tuple[np.ndarray, float]] = {}
        self.stats["routing_s"] += time.perf_counter() - t0
        self.stats["routings"] += 1

    def _latency(self, fl: np.ndarray) -> None:
        """Time from a flow's last byte leaving its source to its arrival (ps), on the
        routes in force when it starts: propagation of every link crossed and one
        packet's serialization at every link after the first (store and forward)."""
        L = self.links
        self.flow_hops[fl] = np.where(self.same[fl], 0, self.pair_hops[self.pair[fl]]) + int(self.hosts_mode)
        if not self.hosts_mode:
            # the nodes are the endpoints: the first link crossed is the source node's
            # fabric port (its bytes leave at the flow's rate), no host link at either end
            p = self.pair[fl]
            bits = self.last_bits[fl] * 1e12
            lat = self.pair_prop[p] + bits * self.pair_sf[p] - bits / float(self.net.config.link_rate)
            self.latency[fl] = np.maximum(lat, 1e-9)
            return
        if len(fl) == 1:
            f = int(fl[0])
            p1 = int(self.pair[f])
            bits = float(self.last_bits[f]) * 1e12
            v = 2 * L.host_prop + bits / float(L.cap[L.P + L.E + int(self.dst[f])])
            if not self.same[f]:
                v += float(self.pair_prop[p1]) + bits * float(self.pair_sf[p1])
            self.latency[f] = max(v, 1e-9)
            return
        p = self.pair[fl]
        fab = ~self.same[fl]
        down_rate = L.cap[L.P + L.E + self.dst[fl]]
        lat = 2 * L.host_prop + self.last_bits[fl] * 1e12 / down_rate
        lat = lat + np.where(fab, self.pair_prop[p] + self.last_bits[fl] * 1e12 * self.pair_sf[p], 0.0)
        self.latency[fl] = np.maximum(lat, 1e-9)

    def _rates(self, active: np.ndarray) -> None:
        self.stats["rate_computations"] += 1
        F = len(active)
        if F == 0:
            return
        t0 = time.perf_counter()
        L = self.links
        if F and NATIVE:
            pair = self.pair[active]
            blocked = ~self.same[active] & ~self.reach[pair]
            i64 = np.int64
            r, over = _core.flow_rates(pair.astype(i64, copy=False), (L.P + self.src[active]).astype(i64, copy=False),
                                       (L.P + L.E + self.dst[active]).astype(i64, copy=False), blocked, *self._csr,
                                       L.cap.astype(np.float64, copy=False))
            if over:
                self.errors.append("a link carries more than its capacity")
            self.rate[active] = r / 8e12
            self.stats["waiting_flow_events"] += int(blocked.sum())
        elif F:
            pair = self.pair[active]
            R = self.R
            fc = (R.indptr[pair + 1] - R.indptr[pair]).astype(np.int64)
            cnt = fc + 2
            ptr = np.concatenate([[0], np.cumsum(cnt)])
            own, ent = _expand(R.indptr[pair].astype(np.int64), fc)
            pos = ptr[:-1][own] + (ent - R.indptr[pair][own])
            nnz = int(ptr[-1])
            rows = np.repeat(np.arange(F), cnt)
            cols = np.empty(nnz, np.int64)
            vals = np.ones(nnz)
            cols[pos] = R.indices[ent] if len(ent) else cols[pos]
            vals[pos] = R.data[ent] if len(ent) else vals[pos]
            cols[ptr[:-1] + fc] = L.P + self.src[active]
            cols[ptr[:-1] + fc + 1] = L.P + L.E + self.dst[active]
            blocked = ~self.same[active] & ~self.reach[pair]
            # the links in use only (np.unique's sorted links and inverse, without sorting)
            mark = np.zeros(L.cap.shape[0], bool)
            mark[cols] = True
            used = np.flatnonzero(mark)
            cols = (np.cumsum(mark) - 1)[cols]
            cap = L.cap[used]
            r = _maxmin(rows, cols, vals, F, cap, blocked.copy())          # bit/s
            load = np.bincount(cols, weights=vals * r[rows], minlength=len(cap))
            if (load > cap * (1 + 1e-9) + 1e-3).any():
                self.errors.append("a link carries more than its capacity")
            self.rate[active] = r / 8e12
            self.stats["waiting_flow_events"] += int(blocked.sum())
        self.stats["solver_s"] += time.perf_counter() - t0

    def run(self) -> None:
        #: the flows that start at their time (in start order), and the heap of flows
        #: released by their dependencies or barrier (time, flow)
        timed = np.flatnonzero(self.waiting == 0)
        timed = timed[np.argsort(self.start[timed], kind="stable")]
        starts = self.start[timed].tolist()
        timed_ids = timed.tolist()
        n = len(timed_ids)
        release: list[tuple[int, int]] = []
        t = 0.0
        nxt_arr = 0
        active = np.zeros(0, np.int64)
        per = self.period
        next_reconf = float(per) if per is not None and self.ctl is not None else np.inf
        next_up = np.inf
        end = float(self.duration)
        full = True
        started: list[int] = []
        ended: list[int] = []
        self._users(active)
        #: per (source, destination) endpoint: the flows waiting behind the one being sent
        queues: dict[int, deque[int]] = {}
        next_sample = float(self.sample) if self.sample else np.inf
        tick_at = time.perf_counter() + 0.2
        while True:
            t_arr = float(starts[nxt_arr]) if nxt_arr < n else np.inf
            if release and release[0][0] < t_arr:
                t_arr = float(release[0][0])
            t_done = np.inf
            if len(active):
                r = self.rate[active]
                pos = r > 0
                if pos.any():
                    dt = self.rem[active[pos]] / r[pos]
                    k = int(np.argmin(dt))
                    t_done = t + float(dt[k])
            t_event = min(t_arr, t_done, next_reconf, next_up, end)
            if next_sample < t_event:
                # a sample: the flows move to it, nothing else changes
                if len(active):
                    step = self.rate[active] * (next_sample - t)
                    self.integrated += float(step.sum())
                    self.rem[active] -= step
                t = next_sample
                self._record(int(t))
                next_sample += self.sample
                continue
            t_new = t_event
            if len(active):
                step = self.rate[active] * (t_new - t)
                self.integrated += float(step.sum())
                self.rem[active] -= step
                if t_new == t_done:
                    self.rem[active[pos][k]] = 0.0
                gone = self.rem[active] <= 1e-6 * np.maximum(self.size[active], 1)
                if gone.any():
                    fin = active[gone]
                    self.finish[fin] = np.ceil(t_new + self.latency[fin]).astype(np.int64)
                    self.rem[fin] = 0.0
                    self.rate[fin] = 0.0
                    active = active[~gone]
                    ended.extend(fin.tolist())
                    if self.dependents is not None or self.coflow is not None:
                        self._finished(fin, release)
                    nxt_up = []
                    for f in fin.tolist():          # the next flow of each queue starts
                        q = queues.get(int(self.qkey[f]))
                        if q:
                            nxt_up.append(q.popleft())
                        else:
                            queues.pop(int(self.qkey[f]), None)
                    if nxt_up:
                        active = np.concatenate([active, np.array(nxt_up, np.int64)])
                        started.extend(nxt_up)
            t = t_new
            if t == next_sample and t < end:
                self._record(int(t))
                next_sample += self.sample
            if self.tick is not None and ((w := time.perf_counter()) >= tick_at or t >= end):
                self.tick(int(t))
                tick_at = w + 0.2
            if t >= end:
                break
            self.stats["events"] += 1
            if t == next_up:
                self.down[:] = False
                next_up = np.inf
                self._route()
                full = True
            if t == next_reconf:
                assert per is not None
                N = self.links.N
                demand = np.zeros(N * N)
                np.add.at(demand, self.pair[active], self.rem[active])
                demand = demand.reshape(N, N)
                np.fill_diagonal(demand, 0.0)
                changed = self.ctl.reconfigure(self.net, demand, int(t))
                if changed:
                    self.down[:] = False
                    if self.delay > 0:
                        off = self.net.port_offset
                        self.down[[int(off[v] + p) for v, p in changed]] = True
                        next_up = t + self.delay
                    self._route()
                    full = True
                next_reconf = t + per
            if t_arr <= t:
                hi = nxt_arr
                while hi < n and starts[hi] <= t:
                    hi += 1
                due = timed_ids[nxt_arr:hi]
                if release and release[0][0] <= t:
                    while release and release[0][0] <= t:
                        due.append(heapq.heappop(release)[1])
                    due.sort()         # flows sorted by start: in start order, then by id
                go = []
                self.actual_start[due] = int(t)
                self._since.extend(due)
                for f in due:                  # a flow waits behind its queue's earlier flows
                    k = int(self.qkey[f])
                    q = queues.get(k)
                    if q is None:
                        queues[k] = deque()
                        go.append(f)
                    else:
                        q.append(f)
                if go:
                    active = np.concatenate([active, np.array(go, np.int64)])
                    started.extend(go)
                nxt_arr = hi
            if started:
                self._latency(np.array(started, np.int64))
            if full:
                self._users(active)
                self._rates(active)
            elif started or ended:
                if self._isolated(started, ended):
                    self.stats["isolated_updates"] += 1
                else:
                    self._rates(active)
            self.stats["max_active_flows"] = max(self.stats["max_active_flows"], len(active))
            full = False
            started, ended = [], []
        self.active = active
        if self.sample:
            self._record(int(end))       # the last (possibly shorter) interval
        else:
            self._flush()

    def _fabric_of(self, p: int) -> tuple[np.ndarray, float]:
        """The fabric links of rack pair ``p`` on the current routes, and the rate at
        which the first of them fills for a flow alone (bit/s; inf: none)."""
        got = self._pair_cache.get(p)
        if got is None:
            R = self.R
            a, b = R.indptr[p], R.indptr[p + 1]
            cols = R.indices[a:b]
            lim = float((self.links.cap[cols] / R.data[a:b]).min()) if b > a else np.inf
            got = self._pair_cache[p] = (cols, lim)
        return got

    def _users(self, active: np.ndarray) -> None:
        """Active flows per link (on the current routes)."""
        L = self.links
        self.users = np.zeros(len(L.cap), np.int64)
        if len(active):
            p = self.pair[active]
            own, ent = _expand(self.R.indptr[p].astype(np.int64), (self.R.indptr[p + 1] - self.R.indptr[p]).astype(np.int64))
            self.users += np.bincount(self.R.indices[ent], minlength=len(L.cap))
            self.users += np.bincount(L.P + self.src[active], minlength=len(L.cap))
            self.users += np.bincount(L.P + L.E + self.dst[active], minlength=len(L.cap))

    def _isolated(self, started: list[int], ended: list[int]) -> bool:
        """Flows that leave or join without sharing a link with another active flow change
        no other rate (max-min fairness splits over the connected components of the
        flow-link graph): a joining one alone on its links gets the rate at which its
        first link fills. False (the caller solves again) as soon as one shares."""
        ok = True
        users, L = self.users, self.links
        for f in ended:
            cols, _ = self._fabric_of(int(self.pair[f]))
            up, down = L.P + int(self.src[f]), L.P + L.E + int(self.dst[f])
            users[cols] -= 1
            users[up] -= 1
            users[down] -= 1
            if users[up] or users[down] or (len(cols) and users[cols].any()):
                ok = False
        for f in started:
            p = int(self.pair[f])
            cols, lim = self._fabric_of(p)
            up, down = L.P + int(self.src[f]), L.P + L.E + int(self.dst[f])
            if users[up] or users[down] or (len(cols) and users[cols].any()) \
                    or (not self.same[f] and not self.reach[p]):
                ok = False
            users[cols] += 1
            users[up] += 1
            users[down] += 1
            if ok:
                self.rate[f] = min(lim, float(L.cap[up]), float(L.cap[down])) / 8e12
        return ok

    def result(self, seed: int, wall: float, mice: int, workload: str) -> Any:
        from .network import Result, core_summary, flows_table

        net, c = self.net, self.net.config
        done = self.finish >= 0
        on = self.actual_start >= 0           # offered: the flows that started
        if (done & ~on).any():
            self.errors.append(f"{int((done & ~on).sum())} flows finished without starting")
        offered = int(self.size[on].sum())
        rem = self.rem[on]
        delivered = int(self.size[done].sum()) + int(np.floor(self.size[on & ~done] - self.rem[on & ~done]).sum())
        if abs((offered - rem.sum()) - self.integrated) > 1e-6 * max(offered, 1) + 1.0:
            self.errors.append(f"bytes do not conserve: {offered} offered, {rem.sum():.1f} left, "
                               f"{self.integrated:.1f} moved")
        o = {"flow_finish_ps": self.finish, "flow_start_ps": self.actual_start, "flow_hops": self.flow_hops,
             "events": self.stats["events"], "packet_hops": 0, "flows_started": int(on.sum()),
             "flows_completed": int(done.sum()), "bytes_offered": offered, "bytes_delivered": delivered,
             "bytes_dropped": 0, "bytes_in_flight": offered - delivered, "collisions": 0,
             "guardband_violations": 0, "drops": {}, "invariant_errors": list(self.errors),
             "trace_hash": int.from_bytes(hashlib.blake2b(self.finish.tobytes(), digest_size=8).digest(), "little")}
        flows = flows_table(c, self.cut, o)
        flows = flows.append_column("transport", pa.array(["flow"] * len(self.size), type=pa.string()))
        summary = core_summary(arch=net.arch, seed=seed, nodes=c.nodes, endpoints=c.endpoints,
                               duration_ps=self.duration, wall=wall, o=o, flows=flows, mice=mice,
                               rate_bps=c.per_node_rate, workload=workload)
        arch_metrics = dict(net.arch_metrics)
        if self.ctl is not None:
            arch_metrics.update(self.ctl.metrics())
            arch_metrics["duty_cycle"] = (1 - self.delay / self.period) if self.period else 1.0
        summary.update({
            "mode": "flow",
            "arch_metrics": arch_metrics,
            "flow_throughput_gbps": _throughput_stats(flows),
            "flowsim": {"rate_computations": self.stats["rate_computations"],
                        "routings": self.stats["routings"],
                        "solver_wall_s": round(self.stats["solver_s"], 4),
                        "routing_wall_s": round(self.stats["routing_s"], 4),
                        "max_active_flows": self.stats["max_active_flows"],
                        "isolated_updates": self.stats["isolated_updates"],
                        "period_ps": self.period, "reconfiguration_delay_ps": self.delay},
        })
        if self.coflow is not None or self.dependents is not None:
            fs = summary.setdefault("flows", {})
            if self.coflow is not None:
                fs["coflows"] = int(self.coflow.max()) + 1
            fs["dependent"] = int((self.waiting_at_start > 0).sum())
            fs["not_started"] = int((self.actual_start < 0).sum())
        hops = np.floor(self.hop_bytes + 1e-6).astype(np.int64)
        if hops.sum() and delivered != hops.sum():
            hops[int(np.argmax(hops))] += delivered - int(hops.sum())   # whole bytes that add up
        summary["delivered_bytes_by_hops"] = {str(i): int(v) for i, v in enumerate(hops) if v}
        summary["flowsim"]["sample_interval_ps"] = self.sample
        ts = self._timeseries(delivered)
        info = {"config": c.model_dump(), "arch": net.arch, "mode": "flow", "duration_ps": self.duration,
                "seed": seed, "period_ps": self.period, "reconfiguration_delay_ps": self.delay}
        return Result(summary, flows, ts, info)


    def _timeseries(self, delivered: int) -> pa.Table:
        """The samples as the packet engine's time series: a row per watched port and
        sample (payload bytes sent in the interval; no queues in the fluid model), then
        the network rows (node = port = -1) with the bytes delivered in the interval
        (adding up to ``delivered``)."""
        from .network import NET_SERIES, _with_net_rows

        net = self.net
        m, W = len(self.series), len(self.watch)
        times = np.array([x[0] for x in self.series], np.int64)
        tx = np.concatenate([x[1] for x in self.series]) if m else np.zeros(0, np.int64)
        node = np.searchsorted(net.port_offset, self.watch, side="right") - 1 if W else self.watch
        ts = pa.table({"time_ps": pa.array(np.repeat(times, W)),
                       "node": pa.array(np.tile(np.asarray(node, np.int64), m)),
                       "port": pa.array(np.tile((self.watch - np.asarray(net.port_offset)[node]).astype(np.int64)
                                                if W else self.watch, m)),
                       "queued_bytes": pa.array(np.zeros(m * W, np.int64)),
                       "tx_bytes": pa.array(tx.astype(np.int64))})
        deliv = np.array([x[2] for x in self.series], np.int64)
        sent = tx.reshape(m, W).sum(axis=1) if W else np.zeros(m, np.int64)
        ser: dict[str, Any] = {"time_ps": times, "queued_bytes": np.zeros(m, np.int64), "tx_bytes": sent,
                               **{k: np.zeros(m, np.int64) for k in NET_SERIES}}
        if m:
            deliv[-1] += delivered - int(deliv.sum())   # the summary's whole-byte count per flow
        ser["delivered_bytes"] = deliv
        return _with_net_rows(ts, ser)


def _throughput_stats(flows: pa.Table) -> dict[str, Any]:
    done = np.asarray(flows["completed"])
    size = np.asarray(flows["size_bytes"])[done]
    fct = np.asarray(flows["fct_ps"].fill_null(0))[done]
    thr = size * 8 / np.maximum(fct, 1) * 1e12 / 1e9
    if len(thr) == 0:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p1": 0.0}
    return {"count": int(len(thr)), "mean": float(thr.mean()), "p50": float(np.percentile(thr, 50)),
            "p1": float(np.percentile(thr, 1))}


def mean_flow_throughput(result: Any) -> float:
    """Average flow throughput of a run's completed flows (Teh et al. §6.C: bits
    transferred / transfer time, per flow, averaged), in Gbit/s — for packet and flow
    runs alike."""
    return float(_throughput_stats(result.flows)["mean"])
