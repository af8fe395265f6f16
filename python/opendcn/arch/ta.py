"""Traffic-aware architectures (OpenOptics §6): each a packet-engine network with its own
control loop inside simulated time.

Every ``--period`` the control loop reads what the design's controller can know — the
traffic matrix of the period (bytes injected per node pair) or the demand (bytes not yet
delivered of the flows present) — computes new circuits, installs the routes first and
then the circuits (OpenOptics' TA workflow; packets queued on a changed port are routed
again at their node), and circuits that change are down for ``--reconfiguration``.

- ``cthrough`` (c-Through): every ToR has one port on an optical circuit switch and one
  on an electrical packet switch (rate-limited, ``--electrical-rate``). Each period the
  OCS is set to the maximum-weight matching of the demand; a packet takes its circuit
  when its destination is the ToR's current circuit peer, else the electrical network.
  Circuits are directed by default (``--circuits directed``): an OCS switches a ToR's
  transmit and receive fibres separately, so the matching is of senders to receivers
  (an assignment), which lets one port per ToR carry a ring (OpenOptics §6, Case I: the
  TA designs "establish a ring topology using optical circuits that matches the traffic
  perfectly"); ``duplex`` pairs ToRs (Edmonds' matching of the symmetrised demand, the
  original c-Through's rack pairing), which covers at most half of a ring's links.
  DECIDE: the demand estimate is the bytes not yet delivered of the
  flows present (what c-Through reads from enlarged host socket buffers); the endpoints
  are the ToRs, whose back-pressured injection stands in for host buffering.
- ``mordia`` (Mordia): ``--uplinks`` OCS ports per ToR (default one), a TDMA schedule of
  ``--slots`` permutations per cycle rebuilt every period from the demand by a Birkhoff–von Neumann style
  decomposition: maximum-weight permutations are peeled off the demand (each takes the
  smallest entry it covers) and get slices in proportion to their weight (largest
  remainders); DECIDE: a full round robin (N − 1 slices) stays in every cycle so every
  pair has a circuit whatever the estimate (``--no-round-robin``: the demand slices
  only), and routing is direct (a packet waits for its
  pair's slice). DECIDE: with several ports the cycle's permutations run side by side,
  permutation j on port j mod u in slice j div u (a cycle of ceil((k + N - 1) / u)
  slices), as parallel OCSes would carry one schedule.
- ``jupiter`` (Jupiter topology engineering): blocks with ``--uplinks`` OCS ports each
  (``--circuits directed``: single fibres, a cycle through every block along the heaviest
  demand plus the pairs with the most demand per link, shortest paths; see
  :func:`engineer_directed`);
  every period the block topology is recomputed from the traffic matrix: one link per
  block pair, the remaining ports given to the pairs with the most traffic per link
  (degree-constrained greedy). Traffic takes direct links and one-transit paths (WCMP):
  DECIDE: a packet picks among the block's direct ports to its destination and, for
  transit, the ports to blocks with a direct link onward, weighted by listing each port
  once per path it carries (so a pair with k parallel links gets k shares); a packet in
  transit takes a direct port of the transit block (source-specific table entries), so a
  per-flow hash never bounces it between transit blocks.
- ``sorn`` (semi-oblivious RotorNet, OpenOptics Fig. 5c): a round robin whose slots are
  re-skewed toward the measured hot pairs every period (``od.topology.sorn``), UCMP
  routing over earliest paths.
- ``hierarchical`` (OpenOptics Fig. 5d): hosts are the nodes; traffic-oblivious rotors
  inside racks (port 0), a traffic-aware core OCS between racks (port 1: host k of a rack
  to host k of another) whose matchings follow the rack-level traffic; earliest-path
  routing over both compiled to per-hop time-flow tables.
"""

from __future__ import annotations

import abc
import warnings
from typing import Any, Literal

import numpy as np
from pydantic import model_validator

from ..fabrics import routing, topology
from ..network.config import Config
from ..errors import ConfigError, RouteWarning
from ..network.network import Network, _Live, progress_ticker, run_chunked
from .options import FabricOptions, Int, Rate, Time, TransportOptions, like, opt
from ..network.timeflow import Circuit, Entry
from . import register


def linear_sum_assignment(*args: Any, **kw: Any) -> Any:
    """scipy's assignment solver (scipy.optimize is imported when first needed)."""
    from scipy.optimize import linear_sum_assignment as solve

    return solve(*args, **kw)


class TaOptions(TransportOptions, FabricOptions):
    """What every traffic-aware design has: a control period and a reconfiguration delay."""

    nodes: Int = like(FabricOptions, "nodes", 8)
    period: Time = opt("500us", "control period: circuits are recomputed this often", gt=0)
    reconfiguration: Time = opt("10us", "time a changed circuit is down")
    transport: str = like(TransportOptions, "transport", "tcp")
    warm: bool = opt(False, "start from the circuits the controller computes from the run's whole traffic matrix "
                            "(bytes per node pair of all its flows), set before t = 0: the state a controller "
                            "reaches on a workload that repeats, e.g. an iterated all-reduce")

    @model_validator(mode="after")
    def _check_period(self) -> "TaOptions":
        if self.reconfiguration >= self.period:
            raise ConfigError("--reconfiguration", self.reconfiguration, "must be shorter than --period")
        return self


class TrafficAware(Network, abc.ABC):
    """A network whose ``control`` hook runs every ``period`` of simulated time."""

    period_ps: int = 0
    needs_tm = True
    reconfigs = 0
    warm = False

    @abc.abstractmethod
    def control(self, tm: np.ndarray) -> None:
        """Act on the period's traffic matrix (or demand): new circuits and routes."""

    def _advance(self, live: _Live, progress: Any) -> None:
        sim = live.sim
        if self.needs_tm:
            sim.set_collect_tm(True)
        periods = 0
        t = 0
        # one bar over the whole run, moved inside the control periods too
        with progress_ticker(live.duration, self.arch, progress) as tick:
            while t + self.period_ps < live.duration and not sim.stopped:
                t += self.period_ps
                run_chunked(sim, t, tick)
                tm = self._tm(sim.take_tm()) if self.needs_tm else self.demand()
                self._control_at = t
                self.control(tm)
                periods += 1
            self._control_at = None
            self.arch_metrics["control_periods"] = periods
            super()._advance(live, tick or False)

    def _arch_result(self, result: Any, o: dict[str, Any]) -> None:
        result.summary["arch_metrics"]["reconfigurations"] = int(self.reconfigs)

    def _engine(self, flows: Any, duration_ps: int, seed: int) -> Any:
        """With ``warm``, the controller acts once before the engine exists on the bytes
        per node pair of all the run's flows (its circuits are static at t = 0: set
        before the run, not reconfigured in it)."""
        if self.warm:
            hpn = max(1, int(self.config.hosts_per_node))
            tm = np.zeros((self.config.nodes, self.config.nodes), dtype=np.int64)
            np.add.at(tm, (np.asarray(flows.src) // hpn, np.asarray(flows.dst) // hpn), np.asarray(flows.size))
            np.fill_diagonal(tm, 0)
            before = self.reconfigs
            self.control(tm)
            self.reconfigs = before
            self.arch_metrics["warm_start"] = True
        return super()._engine(flows, duration_ps, seed)

    _control_at: int | None = None

    def deploy_topo(self, circuits: Any, **kw: Any) -> None:
        """As :meth:`Network.deploy_topo`; inside the control loop the change happens at the
        period boundary the loop stepped to (not at the engine's last event before it)."""
        if self._live is not None and self._control_at is not None and kw.get("at") is None:
            kw["at"] = self._control_at
        super().deploy_topo(circuits, **kw)


def _edmonds(weight: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-weight matching of a symmetric weight matrix (pairs a < b, sorted)."""
    import networkx as nx
    n = weight.shape[0]
    g = nx.Graph()
    for a in range(n):
        for b in range(a + 1, n):
            if weight[a, b] > 0:
                g.add_edge(a, b, weight=float(weight[a, b]))
    return sorted(tuple(sorted(e)) for e in nx.max_weight_matching(g))  # type: ignore[misc]


def _assignment(weight: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-weight matching of senders to receivers (directed pairs a -> b, a != b,
    positive weight only, sorted): every node transmits to at most one node and receives
    from at most one.

    >>> _assignment(np.array([[0, 5, 0], [0, 0, 5], [5, 0, 0]]))
    [(0, 1), (1, 2), (2, 0)]
    """
    n = weight.shape[0]
    w = np.where(np.eye(n, dtype=bool), 0.0, weight.astype(float))
    rows, cols = linear_sum_assignment(-w)
    return sorted((int(a), int(b)) for a, b in zip(rows, cols) if a != b and w[a, b] > 0)


# ----------------------------------------------------------------------------- c-Through
class CThroughOptions(TaOptions):
    uplinks: Int = like(FabricOptions, "uplinks", 1)
    electrical_rate: Rate = opt("10Gbps", "rate of a ToR's link to the electrical packet switch", gt=0)
    circuits: Literal["directed", "duplex"] = opt(
        "directed", "OCS circuits: directed (a ToR's transmit fibre to one ToR, its receive fibre from "
        "another: the maximum-weight matching of senders to receivers) or duplex (ToR pairs: the maximum-weight "
        "matching of the symmetrised demand, c-Through's rack pairing)")

    @model_validator(mode="after")
    def _one_port(self) -> "CThroughOptions":
        if self.uplinks != 1:
            raise ConfigError("--uplinks", self.uplinks, "c-Through has one OCS port per ToR")
        return self


class CThrough(TrafficAware):
    needs_tm = False

    def setup(self, o: CThroughOptions) -> None:
        self.period_ps = o.period
        self.n = o.nodes
        self.directed = o.circuits == "directed"
        self.reconfigs = 0
        self.circuit_pairs = 0
        self.wires = [Circuit(i, 1, o.nodes, i, None) for i in range(o.nodes)]
        self.pairs: list[tuple[int, int]] = []
        self._install([])

    def _tables(self, pairs: list[tuple[int, int]]) -> dict[int, list[Entry]]:
        n = self.n
        # the ToR a packet at a can reach over a's OCS port: its transmit peer
        peer = {a: b for a, b in pairs} if self.directed else {a: b for a, b in pairs} | {b: a for a, b in pairs}
        tables: dict[int, list[Entry]] = {k: [] for k in range(n + 1)}
        for a in range(n):
            for b in range(n):
                if a != b:
                    tables[a].append(Entry(None, None, b, None, 0 if peer.get(a) == b else 1))
            tables[n].append(Entry(None, None, a, None, a))
        return tables

    def _install(self, pairs: list[tuple[int, int]]) -> None:
        circuits = [Circuit(a, 0, b, 0, None, self.directed) for a, b in pairs] + self.wires
        if self._live is None:
            self.deploy_topo(circuits)
            self.deploy_routing(self._tables(pairs))
        else:
            # routes first (only the circuits that stay keep traffic; a directed port that
            # only received may not be sent to before its new circuit exists) ...
            self.deploy_routing(self._tables(sorted(set(pairs) & set(self.pairs))))
            self.deploy_topo(circuits)             # ... then circuits, then their routes
            self.deploy_routing(self._tables(pairs))
        self.pairs = pairs

    def control(self, demand: np.ndarray) -> None:
        d = demand.astype(float)
        pairs = _assignment(d) if self.directed else _edmonds(d + d.T)
        if pairs != self.pairs:
            self.reconfigs += 1
            self._install(pairs)
        self.circuit_pairs += len(pairs)


@register("cthrough", "c-Through: electrical packet switch plus an OCS set every period to the maximum-weight "
          "matching of the demand", CThroughOptions)
def build_cthrough(o: CThroughOptions) -> Network:
    cfg = Config.from_dict(o.config(reconfiguration_delay=o.reconfiguration, uplinks=2))
    net = CThrough(cfg, switches=1, switch_ports=o.nodes, electrical_ports=1, switch_link_rate=o.electrical_rate,
                   arch="cthrough")
    net.setup(o)
    net.warm = o.warm
    o.apply_transport(net)
    net.arch_metrics.update(period_ps=o.period, electrical_rate_bps=o.electrical_rate)
    return net


# ----------------------------------------------------------------------------- Mordia
class MordiaOptions(TaOptions):
    uplinks: Int = like(FabricOptions, "uplinks", 1)
    slots: Int = opt(8, "demand-driven slices per cycle (a round robin of N - 1 slices is added, unless --no-round-robin)", ge=1)
    slice: Time = opt("10us", "TDMA slice, guardband included", gt=0)
    guardband: Time = opt("1us", "reconfiguration guardband at the start of each slice")
    multipath: Literal["packet", "flow"] = opt(
        "flow", "with several ports, a packet whose destination has circuits on more than one port in the same "
        "slice takes one per flow (a hash, as a switch's ECMP does) or per packet")
    round_robin: bool = opt(
        True, "keep a full round robin (N - 1 slices) in every cycle after the demand slices, so every pair has a "
              "circuit whatever the estimate (off: the cycle is the demand slices only; a pair without demand, "
              "e.g. a TCP flow's ACKs, may then have no circuit)")


def bvn(demand: np.ndarray, terms: int) -> list[tuple[np.ndarray, float]]:
    """Peel up to ``terms`` maximum-weight permutations off ``demand`` (no fixed points);
    each takes the smallest positive entry it covers (a sparse demand's permutations carry
    filler circuits where it has none). Returns (perm, weight) pairs.

    >>> d = np.array([[0, 3, 1], [1, 0, 3], [3, 1, 0]])
    >>> [(p.tolist(), w) for p, w in bvn(d, 4)]
    [([1, 2, 0], 3.0), ([2, 0, 1], 1.0)]
    """
    n = demand.shape[0]
    rest = demand.astype(float).copy()
    np.fill_diagonal(rest, 0.0)
    out = []
    for _ in range(terms):
        cost = np.where(np.eye(n, dtype=bool), 1e18, -rest)
        rows, cols = linear_sum_assignment(cost)
        vals = rest[rows, cols]
        if (rows == cols).any() or not (vals > 0).any():
            break
        w = float(vals[vals > 0].min())
        out.append((cols.copy(), w))
        rest[rows, cols] = np.maximum(vals - w, 0.0)
    return out


class Mordia(TrafficAware):
    needs_tm = False

    def setup(self, o: MordiaOptions) -> None:
        self.period_ps = o.period
        self.n, self.slots, self.u = o.nodes, o.slots, o.uplinks
        self.round_robin = o.round_robin
        #: slices per cycle: the cycle's k (+ N - 1) permutations, ``u`` at a time
        self.cycle = -(-(self.slots + (self.n - 1 if o.round_robin else 0)) // self.u)
        self.reconfigs = 0
        self.schedule = self._schedule(np.zeros((o.nodes, o.nodes)))
        self.deploy_topo(self.schedule, slices=self.cycle)
        self.deploy_routing("direct", multipath=o.multipath)

    def _schedule(self, demand: np.ndarray) -> list[Circuit]:
        n, k = self.n, self.slots
        rr = [np.array([(i + s) % n for i in range(n)]) for s in range(1, n)]
        terms = bvn(demand, k)
        perms: list[np.ndarray] = []
        if terms:
            w = np.array([t[1] for t in terms])
            share = w / w.sum() * k
            count = np.floor(share).astype(int)
            for i in np.argsort(-(share - count), kind="stable")[: k - count.sum()]:
                count[i] += 1
            for (p, _), c in zip(terms, count):
                perms += [p] * int(c)
        perms += [rr[i % len(rr)] for i in range(k - len(perms))]
        out = []
        # with several ports the cycle's permutations run side by side, one per port:
        # permutation j of the cycle on port j % u in slice j // u
        for j, p in enumerate(perms + (rr if self.round_robin else [])):
            s, port = divmod(j, self.u)
            out += [Circuit(i, port, int(p[i]), port, s, True) for i in range(n)]
        return out

    def control(self, demand: np.ndarray) -> None:
        new = self._schedule(demand)
        if new != self.schedule:
            self.reconfigs += 1
            self.schedule = new
            self.deploy_topo(new, slices=self.cycle)
        if not self.round_robin and self._live is None:
            # a warm start without the round robin: pairs with traffic (or its acknowledgements)
            # that no permutation of the cycle joins wait for a period's schedule to join them
            lit = np.zeros((self.n, self.n), dtype=bool)
            for c in self.schedule:
                lit[c.n1, c.n2] = True
            want = (demand > 0) | (demand.T > 0)
            np.fill_diagonal(want, False)
            missing = int((want & ~lit).sum())
            self.arch_metrics["pairs_without_circuit_at_start"] = missing
            if missing:
                warnings.warn(RouteWarning(
                    f"routes: {missing} node pairs with traffic or its acknowledgements have no circuit in Mordia's "
                    f"cycle without the round robin (--no-round-robin): their packets wait until a period's schedule "
                    f"joins them"), stacklevel=2)


@register("mordia", "Mordia: a TDMA schedule of OCS circuits rebuilt every period by a BvN decomposition of the "
          "demand", MordiaOptions)
def build_mordia(o: MordiaOptions) -> Network:
    cfg = Config.from_dict(o.config(slice=o.slice, guardband=o.guardband, reconfiguration_delay=o.reconfiguration))
    net = Mordia(cfg, arch="mordia")
    net.setup(o)
    net.warm = o.warm
    o.apply_transport(net)
    net.arch_metrics.update(period_ps=o.period, slots=o.slots, cycle_slices=net.cycle)
    return net


# ----------------------------------------------------------------------------- Jupiter
class JupiterOptions(TaOptions):
    uplinks: Int = like(FabricOptions, "uplinks", 14)
    period: Time = like(TaOptions, "period", "1ms")
    multipath: Literal["packet", "flow"] = opt("flow", "WCMP choice per packet or per flow (hash)")
    circuits: Literal["duplex", "directed"] = opt(
        "duplex", "OCS circuits: duplex (a link joins two blocks both ways; every block pair keeps one, so "
        "--uplinks >= nodes - 1; direct and one-transit paths) or directed (a block's transmit fibre to one "
        "block, its receive fibre from another, as a MEMS switches single fibres: a cycle through every block "
        "along the heaviest demand, the other ports to the pairs with the most demand per link; shortest "
        "paths, so --uplinks >= 1)")

    @model_validator(mode="after")
    def _ports(self) -> "JupiterOptions":
        if self.circuits == "duplex" and self.uplinks < self.nodes - 1:
            raise ConfigError("--uplinks", self.uplinks, f"duplex circuits need a link to every other block "
                                                         f"({self.nodes - 1}); --circuits directed needs one")
        return self


def engineer(tm: np.ndarray, ports: int) -> np.ndarray:
    """Links per block pair (symmetric): one per pair, then each remaining port pair to the
    pair with the most traffic per link whose blocks both have a free port.

    >>> engineer(np.array([[0, 9, 0], [9, 0, 0], [0, 0, 0]]), 3).tolist()
    [[0, 2, 1], [2, 0, 1], [1, 1, 0]]
    """
    n = tm.shape[0]
    links = np.ones((n, n), dtype=int) - np.eye(n, dtype=int)
    free = np.full(n, ports - (n - 1))
    w = (tm + tm.T).astype(float)
    while True:
        best, pair = -1.0, None
        for a in range(n):
            if free[a] <= 0:
                continue
            for b in range(a + 1, n):
                if free[b] > 0:
                    v = w[a, b] / links[a, b]
                    if v > best:
                        best, pair = v, (a, b)
        if pair is None:
            return links
        a, b = pair
        links[a, b] += 1
        links[b, a] += 1
        free[a] -= 1
        free[b] -= 1


def engineer_directed(tm: np.ndarray, ports: int) -> np.ndarray:
    """Directed links per block pair (``links[a, b]``: a's transmit fibres to b) with
    ``ports`` transmit and receive fibres per block. DECIDE (the paper's testbed Jupiter
    has one MEMS port per ToR, too few for a link to every block): first a cycle through
    every block, so every pair has a path, grown greedily along the heaviest demand (start
    at the heaviest pair, then the unvisited block the path's end sends most to; ties to
    the lower index); then each free transmit/receive fibre pair to the pair with the most
    demand per link (as :func:`engineer`); fibres that no demand asks for stay dark.

    >>> engineer_directed(np.array([[0, 0, 5], [5, 0, 0], [0, 5, 0]]), 1).tolist()
    [[0, 0, 1], [1, 0, 0], [0, 1, 0]]
    """
    n = tm.shape[0]
    w = np.asarray(tm, dtype=float).copy()
    np.fill_diagonal(w, -1.0)
    links = np.zeros((n, n), dtype=int)
    a0, b0 = divmod(int(np.argmax(w)), n) if w.max() > 0 else (0, 1)
    order, seen = [a0, b0], {a0, b0}
    while len(order) < n:
        row = w[order[-1]]
        nxt = max((k for k in range(n) if k not in seen), key=lambda k: (row[k], -k))
        order.append(nxt)
        seen.add(nxt)
    for a, b in zip(order, order[1:] + order[:1]):
        links[a, b] += 1
    tx = np.full(n, ports - 1)
    rx = np.full(n, ports - 1)
    while True:
        best, pair = 0.0, None
        for a in range(n):
            if tx[a] <= 0:
                continue
            for b in range(n):
                if b != a and rx[b] > 0 and w[a, b] / (links[a, b] + 1) > best:
                    best, pair = w[a, b] / (links[a, b] + 1), (a, b)
        if pair is None:
            return links
        a, b = pair
        links[a, b] += 1
        tx[a] -= 1
        rx[b] -= 1


def shortest_next_ports(links: np.ndarray) -> tuple[list[Circuit], dict[int, list[Entry]]]:
    """Directed circuits for ``links`` (a's transmit ports and b's receive ports numbered
    from 0 in pair order) and per-hop tables: at every block, to every destination, each
    transmit port whose far end is one hop nearer (hop counts over the directed links)."""
    n = links.shape[0]
    tx, rx = [0] * n, [0] * n
    circuits: list[Circuit] = []
    out: dict[int, list[tuple[int, int]]] = {a: [] for a in range(n)}      # a -> (port, far block)
    for a in range(n):
        for b in range(n):
            for _ in range(int(links[a, b])):
                circuits.append(Circuit(a, tx[a], b, rx[b], None, True))
                out[a].append((tx[a], b))
                tx[a] += 1
                rx[b] += 1
    # hop counts to each destination (BFS on the reversed graph)
    dist = np.full((n, n), -1, dtype=int)
    for d in range(n):
        dist[d, d] = 0
        frontier = [d]
        while frontier:
            nxt = []
            for v in frontier:
                for a in range(n):
                    if links[a, v] and dist[a, d] < 0:
                        dist[a, d] = dist[v, d] + 1
                        nxt.append(a)
            frontier = nxt
    tables: dict[int, list[Entry]] = {k: [] for k in range(n)}
    for a in range(n):
        for d in range(n):
            if a != d and dist[a, d] > 0:
                tables[a] += [Entry(None, None, d, None, p) for p, b in out[a] if dist[b, d] == dist[a, d] - 1]
    return circuits, tables


class Jupiter(TrafficAware):
    def setup(self, o: JupiterOptions) -> None:
        self.period_ps, self.n, self.u, self.multipath = o.period, o.nodes, o.uplinks, o.multipath
        self.directed = o.circuits == "directed"
        self.reconfigs = 0
        self.links = self._engineer(np.zeros((o.nodes, o.nodes)))
        self._install(self.links)

    def _engineer(self, tm: np.ndarray) -> np.ndarray:
        return engineer_directed(tm, self.u) if self.directed else engineer(tm, self.u)

    def _install(self, links: np.ndarray) -> None:
        if self.directed:
            dcircuits, dtables = shortest_next_ports(links)
            if self._live is not None:
                # a fibre's direction may turn: no route may name a port that is about to
                # only receive, so the routes go first (none: packets arriving now wait at
                # their ToR), then the circuits, then their routes (one instant: nothing moves)
                self.deploy_routing({k: [] for k in range(self.n)}, multipath=self.multipath)
            self.deploy_topo(dcircuits)
            self.deploy_routing(dtables, multipath=self.multipath)
            return
        n = self.n
        nxt = [0] * n
        circuits = []
        ports: dict[tuple[int, int], list[int]] = {}
        for a in range(n):
            for b in range(a + 1, n):
                for _ in range(int(links[a, b])):
                    circuits.append(Circuit(a, nxt[a], b, nxt[b], None))
                    ports.setdefault((a, b), []).append(nxt[a])
                    ports.setdefault((b, a), []).append(nxt[b])
                    nxt[a] += 1
                    nxt[b] += 1
        tables: dict[int, list[Entry]] = {k: [] for k in range(n)}
        for a in range(n):
            for d in range(n):
                if a == d:
                    continue
                direct = list(ports[(a, d)])
                use = list(direct)
                for k in range(n):
                    if k not in (a, d):
                        use += ports[(a, k)][: int(links[k, d])]
                # the source picks among direct and one-transit ports; a packet in transit
                # (another source: the wildcard entries, less specific) takes a direct port
                # only, so a per-flow hash can never bounce it between transit blocks
                tables[a] += [Entry(None, a, d, None, p) for p in sorted(set(use))]
                tables[a] += [Entry(None, None, d, None, p) for p in sorted(set(direct))]
        if self._live is None:
            self.deploy_topo(circuits)
            self.deploy_routing(tables, multipath=self.multipath)
        else:
            self.deploy_routing(tables, multipath=self.multipath)
            self.deploy_topo(circuits)

    def control(self, tm: np.ndarray) -> None:
        new = self._engineer(tm)
        if not np.array_equal(new, self.links):
            self.reconfigs += 1
            self.links = new
            self._install(new)


@register("jupiter", "Jupiter: block topology engineered from the traffic matrix every period, direct and "
          "one-transit paths", JupiterOptions)
def build_jupiter(o: JupiterOptions) -> Network:
    cfg = Config.from_dict(o.config(reconfiguration_delay=o.reconfiguration))
    net = Jupiter(cfg, arch="jupiter")
    net.setup(o)
    net.warm = o.warm
    o.apply_transport(net)
    net.arch_metrics.update(period_ps=o.period)
    return net


# ----------------------------------------------------------------------------- sorn
class SornOptions(TaOptions):
    nodes: Int = like(FabricOptions, "nodes", 16)
    uplinks: Int = like(FabricOptions, "uplinks", 1)
    slice: Time = opt("2us", "time slice, guardband included", gt=0)
    guardband: Time = opt("200ns", "reconfiguration guardband at the start of each slice")
    copies: Int = opt(3, "slots per matching in the cycle (one stays fixed, the rest follow the traffic)", ge=1)
    max_hop: Int = opt(2, "most hops of a UCMP path", ge=1)
    transport: str = like(TransportOptions, "transport", "ideal")


class Sorn(TrafficAware):
    def setup(self, o: SornOptions) -> None:
        self.period_ps, self.copies = o.period, o.copies
        self.reconfigs = 0
        self.deploy_topo(topology.sorn(self.config, None, copies=o.copies))
        self.deploy_routing("ucmp", max_hop=o.max_hop)

    def control(self, tm: np.ndarray) -> None:
        self.deploy_topo(topology.sorn(self.config, tm, copies=self.copies))
        self.reconfigs += 1


@register("sorn", "semi-oblivious RotorNet: round-robin slots re-skewed toward the measured hot pairs every "
          "period, UCMP routing", SornOptions, tiny={"nodes": 8})
def build_sorn(o: SornOptions) -> Network:
    cfg = Config.from_dict(o.config(slice=o.slice, guardband=o.guardband))
    net = Sorn(cfg, arch="sorn")
    net.setup(o)
    net.warm = o.warm
    o.apply_transport(net)
    net.arch_metrics.update(period_ps=o.period, copies=o.copies)
    return net


# ----------------------------------------------------------------------------- hierarchical
class HierarchicalOptions(TaOptions):
    nodes: Int = like(FabricOptions, "nodes", 16)
    uplinks: Int = like(FabricOptions, "uplinks", 2)
    racks: Int | None = opt(None, "racks (the nodes are hosts, nodes / racks per rack); default the most racks "
                                  "with at least racks - 1 hosts each", ge=2)
    slice: Time = opt("2us", "rotor slice inside racks, guardband included", gt=0)
    guardband: Time = opt("200ns", "rotor guardband at the start of each slice")
    reconfiguration: Time = like(TaOptions, "reconfiguration", "20us")
    transport: str = like(TransportOptions, "transport", "ideal")

    @property
    def n_racks(self) -> int:
        if self.racks is not None:
            return self.racks
        return max(r for r in range(2, self.nodes + 1)
                   if self.nodes % r == 0 and self.nodes // r >= max(2, r - 1))

    @model_validator(mode="after")
    def _layout(self) -> "HierarchicalOptions":
        if self.nodes < 4:
            raise ConfigError("--nodes", self.nodes, "need at least 2 racks of 2 hosts")
        if self.uplinks != 2:
            raise ConfigError("--uplinks", self.uplinks, "a host has one rotor port and one core port")
        r = self.n_racks
        if self.nodes % r or self.nodes // r < 2:
            raise ConfigError("--racks", r, f"must divide --nodes {self.nodes} into racks of >= 2 hosts")
        if self.nodes // r < r - 1:
            raise ConfigError("--racks", r, "need at least racks - 1 hosts per rack (one core matching each "
                              "keeps every rack pair connected)")
        return self


def core_matchings(rack_tm: np.ndarray, hosts: int) -> list[list[tuple[int, int]]]:
    """``hosts`` rack matchings: a round robin over racks first (every rack pair stays one
    core hop apart), then a greedy decomposition of the rack traffic (repeated
    maximum-weight matching, a served pair's weight divided by 4)."""
    racks = rack_tm.shape[0]
    base: dict[int | None, list[tuple[int, int]]] = {}
    for c in topology.round_robin(racks, dimension=1, uplink=1):
        base.setdefault(c.ts, []).append((min(c.n1, c.n2), max(c.n1, c.n2)))
    out = [sorted(base[k]) for k in sorted(base, key=lambda x: -1 if x is None else x)][:hosts]
    w = (rack_tm + rack_tm.T).astype(float) + 1.0
    for _ in range(hosts - len(out)):
        m = _edmonds(w)
        out.append(m)
        for a, b in m:
            w[a, b] = w[b, a] = w[a, b] / 4
    return out


class Hierarchical(TrafficAware):
    def setup(self, o: HierarchicalOptions) -> None:
        self.period_ps, self.racks, self.hosts = o.period, o.n_racks, o.nodes // o.n_racks
        self.reconfigs = 0
        self.rotor = []
        for c in topology.round_robin(self.hosts, dimension=1, uplink=1):
            for r in range(self.racks):
                self.rotor.append(Circuit(r * self.hosts + c.n1, 0, r * self.hosts + c.n2, 0, c.ts))
        circuits = self.rotor + self._core(np.zeros((self.racks, self.racks)))
        self.deploy_topo(circuits)
        self.deploy_routing(routing.first_hop_tables(routing.hoho(circuits, max_hop=3)))

    def _core(self, rack_tm: np.ndarray) -> list[Circuit]:
        h = self.hosts
        return [Circuit(a * h + k, 1, b * h + k, 1, None)
                for k, m in enumerate(core_matchings(rack_tm, h)) for a, b in m]

    def control(self, tm: np.ndarray) -> None:
        r, h = self.racks, self.hosts
        new = self.rotor + self._core(tm.reshape(r, h, r, h).sum(axis=(1, 3)))
        self.deploy_routing(routing.first_hop_tables(routing.hoho(new, max_hop=3)))   # routes first ...
        self.deploy_topo(new)                                                         # ... then circuits
        self.reconfigs += 1


@register("hierarchical", "hierarchical RDCN: rotors inside racks, a traffic-aware core OCS between racks, "
          "earliest-path tables", HierarchicalOptions, tiny={"nodes": 8})
def build_hierarchical(o: HierarchicalOptions) -> Network:
    cfg = Config.from_dict(o.config(slice=o.slice, guardband=o.guardband, reconfiguration_delay=o.reconfiguration))
    net = Hierarchical(cfg, arch="hierarchical")
    net.setup(o)
    net.warm = o.warm
    o.apply_transport(net)
    net.arch_metrics.update(period_ps=o.period, racks=o.n_racks)
    return net
