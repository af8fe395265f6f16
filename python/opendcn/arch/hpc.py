"""The networks of Teh et al., "Performance trade-offs in reconfigurable networks for HPC"
(JOCN 2022), on the packet engine with the lossless ``credit`` transport:

- ``trn`` — ToR-reconfigurable (TRN-Flat): every ToR's uplinks go to OCSes, one circuit
  per uplink; demand-aware (``--control da``: ``k`` successive maximum-weight or stable
  matchings) or rotating a fixed set of matchings (``--control rotor``, TRN-R); shortest
  paths on the circuits of at most 2 links (direct, else via one intermediate ToR), 2
  hop-indexed virtual channels;
- ``prn`` — pod-reconfigurable: racks of a pod on a leaf–spine (``--intra clos``, PRN-2L)
  or a full mesh (``--intra mesh``, PRN-M), pods joined by OCS circuits whose counts come
  from the throughput-maximising LP; TAGO-like routing, 2 virtual channels chosen by the
  routing (PRN-M: 3);
- ``dfplus`` — Dragonfly+ / Megafly (PRN-2L's static counterpart), TAGO-like, 2 VCs;
- ``expander_hyb`` — a static random regular expander with HYB (hybrid Valiant–ECMP)
  routing, 4 hop-indexed VCs (Valiant paths of at most 4 links);
- ``fattree`` — the non-blocking three-level fat tree, ECMP, 1 VC.

Racks are the engine's nodes (``--nodes``); spines, aggregation and core switches are
switch nodes behind them. The wiring, controllers and tables live in :mod:`opendcn.fabrics.hpc`.
Every network's routes and channel rule leave the channel dependency graph acyclic at
its channel count (:func:`opendcn.fabrics.hpc.channel_dependency_cycle`; the rules are in
``docs/arch/*.md``).
"""

from __future__ import annotations

import abc

import functools
import math
import time
import warnings
from typing import Any, Literal

import numpy as np
from pydantic import model_validator

from ..fabrics import hpc
from ..network.config import Config
from ..errors import ConfigError, RouteWarning
from ..network.network import Network, _Cut, _Live, progress_ticker, run_chunked
from .options import AutoInt, Float, Int, Rate, Size, Time, TransportOptions, like, opt
from ..rng import stream
from ..network.timeflow import Circuit, Entry, Hop, Path
from . import register


# ---------------------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------------------
class HpcOptions(TransportOptions):
    """Hardware and transport shared by the HPC networks (the paper's §6.A defaults; link
    and host-link delays from the authors' public evaluation scripts)."""

    nodes: Int = opt(128, "racks (ToRs), each a packet switch with its hosts below", ge=2)
    radix: Int = opt(32, "packet switch radix k (even, >= 4): k/2 ToR ports face hosts", ge=4)
    hosts_per_rack: AutoInt = opt("auto", "hosts below each ToR (auto: k/2)", ge=1)
    link_rate: Rate = opt("100Gbps", "rate of every link", gt=0)
    propagation: Time = opt("30ns", "propagation delay of a switch-to-switch link", ge=0)
    host_propagation: Time = opt("10ns", "propagation delay of a host link", ge=0)
    buffer: Size = opt("20KB", "buffer per switch egress port (the VOQ), split over the virtual channels", gt=0)
    mtu: Size = opt("1500B", "payload bytes per packet", gt=0)
    vcs: Int = opt(2, "virtual channels of the credit transport (the paper's Table 3)", ge=1, le=8)
    multipath: Literal["packet", "adaptive"] = opt(
        "packet", "per-packet load balancing: uniform among the candidates, or the least-queued one")
    transport: str = like(TransportOptions, "transport", "credit")

    @model_validator(mode="after")
    def _radix(self) -> "HpcOptions":
        hpc.check_radix(self.radix)
        return self

    @property
    def hosts(self) -> int:
        return self.radix // 2 if self.hosts_per_rack is None else self.hosts_per_rack

    @property
    def channels(self) -> int:
        """The virtual channels in force (``vcs``, its auto value resolved)."""
        return int(self.vcs) if self.vcs is not None else 2

    def config(self, uplinks: int, delay: int = 0) -> Config:
        return Config(nodes=self.nodes, uplinks=uplinks, link_rate=self.link_rate, propagation=self.propagation,
                      hosts_per_node=self.hosts, host_propagation=self.host_propagation, buffer=self.buffer,
                      mtu=self.mtu, reconfiguration_delay=delay)

    def apply(self, net: Network) -> None:
        """The transport: the rule and, for ``credit``, the virtual channels."""
        self.apply_transport(net)
        if "credit" in net._transport.rule.names:
            net.transport(vcs=self.channels)


class ReconfOptions(HpcOptions):
    """When a reconfigurable network's controller recomputes its circuits."""

    period: Time | None = opt(None, "reconfiguration period (none: one configuration, computed at the start "
                                    "from the run's traffic matrix, kept for the whole run)", gt=0)
    reconfiguration_delay: Time = opt("0ns", "time a changed circuit is down at each reconfiguration", ge=0)
    duty_cycle: Float | None = opt(None, "uptime / period (sets the delay to (1 - duty) x period)", gt=0, le=1)
    initial: Literal["expected", "oblivious"] = opt(
        "expected", "the first configuration: from the run's whole traffic matrix (the expected pattern, §6.B) or "
                    "demand-oblivious (TRN: matchings drawn without demand; PRN: pod links spread evenly), the "
                    "demand then followed from the first period on")

    @model_validator(mode="after")
    def _timing(self) -> "ReconfOptions":
        if self.duty_cycle is not None and self.period is None:
            raise ConfigError("--duty-cycle", self.duty_cycle, "a duty cycle needs a reconfiguration --period")
        if self.duty_cycle is not None and self.reconfiguration_delay:
            raise ConfigError("--duty-cycle", self.duty_cycle, "give either --duty-cycle or --reconfiguration-delay")
        if self.period is not None and self.delay >= self.period:
            raise ConfigError("--reconfiguration-delay", self.reconfiguration_delay,
                              "must be shorter than the reconfiguration period")
        return self

    @property
    def delay(self) -> int:
        if self.duty_cycle is not None and self.period is not None:
            return int(round((1.0 - self.duty_cycle) * self.period))
        return self.reconfiguration_delay


def _auto_pods(o: HpcOptions, pods: int | None) -> tuple[int, int]:
    """(pods, racks per pod): ``pods`` given, or enough pods of at most k/2 racks (>= 2)."""
    p = pods if pods is not None else max(2, math.ceil(o.nodes / (o.radix // 2)))
    if p < 2:
        raise ConfigError("--pods", p, "need at least 2 pods")
    if o.nodes % p:
        raise ConfigError("--pods", p, f"the pods must divide the racks (--nodes {o.nodes})")
    return p, o.nodes // p


# ---------------------------------------------------------------------------------------
# the network: tables as columns, a controller stepping the run
# ---------------------------------------------------------------------------------------
class HpcNetwork(Network):
    """A packet-engine network whose routes are :class:`~opendcn.fabrics.hpc.Tables` columns and
    whose circuits a controller may recompute during the run (``controller``)."""

    controller: Any = None
    #: per-packet choice among the table's candidates ("packet" or "adaptive")
    _mp: str = "packet"

    def set_tables(self, t: hpc.Tables) -> None:
        """Install routing tables (also during a run)."""
        self._hpc_tables = t
        self._router = "table"
        self._compiled = {}
        self._routes = []
        self._paths = None
        self._multipath = self._mp
        if self._live is not None:
            self._live.sim.set_tables(self._table_columns())

    def _table_columns(self) -> dict[str, np.ndarray]:
        t = getattr(self, "_hpc_tables", None)
        if t is None:
            return super()._table_columns()
        wild = np.full(len(t), -1, np.int64)
        return {"tf_node": t.node, "tf_arr": wild, "tf_src": t.src, "tf_dst": t.dst, "tf_dep": wild,
                "tf_port": self.port_offset[t.node] + t.port}

    def tables(self, node: int) -> list[Entry]:
        t = getattr(self, "_hpc_tables", None)
        if t is None:
            return super().tables(node)
        sel = np.flatnonzero(t.node == node)
        return [Entry(None, None if t.src[i] < 0 else int(t.src[i]), int(t.dst[i]), None, int(t.port[i]))
                for i in sel]

    def _engine(self, flows: _Cut, duration_ps: int, seed: int) -> Any:
        if self.controller is not None:
            self.controller.start(self, flows, seed, duration_ps)
        return super()._engine(flows, duration_ps, seed)

    def _advance(self, live: _Live, progress: bool) -> None:
        period = self.controller.period if self.controller is not None else None
        if period is None:
            super()._advance(live, progress)
            return
        sim = live.sim
        t = period
        with progress_ticker(live.duration, self.arch, progress) as tick:
            while t < live.duration and not sim.stopped:
                run_chunked(sim, t, tick)
                if sim.stopped:
                    break
                self.controller.step(self)
                t += period
            run_chunked(sim, live.duration, tick)
        if sim.stopped:
            live.duration = int(sim.now)
        if self.net_series:
            sim.final_sample()

    def _arch_result(self, result: Any, o: dict[str, Any]) -> None:
        if self.controller is not None:
            result.summary["arch_metrics"].update(self.controller.metrics())
            sw = [tuple(int(x) for x in t) for t in o.get("switches", [])]
            self.controller.switches = sw
            drain = [b - a for a, b, _ in sw]
            result.summary["arch_metrics"].update({
                "switches": len(sw), "drain_us_mean": (sum(drain) / len(drain) / 1e6) if drain else 0.0,
                "drain_us_max": (max(drain) / 1e6) if drain else 0.0,
                "injections_refused_while_draining": int(o.get("drain_refused", 0)),
                "draining_at_end": bool(o.get("draining", False))})

    def _port_kinds(self) -> np.ndarray:
        """Switch ports an electrical fabric leaves unconnected (a core switch uses one
        port per pod) are unused, not electrical."""
        kind = super()._port_kinds()
        if self.fabric == "electrical" and self._peer is not None:
            kind[(self._peer[0] < 0) & (kind == 2)] = 0
        return kind

    def peer_nodes(self) -> np.ndarray:
        """``(nodes, ports)``: the node each port sends to under the current circuits (-1: none)."""
        assert self._peer is not None
        row = self._peer[0]
        width = int(self.user_ports.max())
        out = np.full((self.total_nodes, width), -1, np.int64)
        for v in range(self.total_nodes):
            a = int(self.port_offset[v])
            q = row[a:a + int(self.user_ports[v])]
            out[v, :len(q)] = np.where(q >= 0, np.searchsorted(self.port_offset, q, side="right") - 1, -1)
        return out


def _rack_tm(net: Network, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Bytes per (source rack, destination rack) of flows between hosts."""
    h = net.config.hosts_per_node
    n = net.config.nodes
    tm = np.zeros((n, n), np.float64)
    np.add.at(tm, (np.asarray(src) // h, np.asarray(dst) // h), np.asarray(size, np.float64))
    np.fill_diagonal(tm, 0.0)
    return tm


class Controller(abc.ABC):
    """Recomputes circuits (and the routes on them) from the demand, at the start of the
    run and then every ``period`` (None: only at the start)."""

    def __init__(self, period: int | None, initial: str = "expected"):
        self.period = period
        #: the first configuration: "expected" (from the run's whole traffic matrix) or
        #: "oblivious" (computed from no demand)
        self.initial = initial
        self.reconfigurations = 0
        self.changed_circuits = 0
        self.compute_s = 0.0
        self.log: list[tuple[int, list[tuple[int, int]]]] = []

    def start(self, net: HpcNetwork, flows: _Cut, seed: int, duration_ps: int) -> None:
        """The first configuration, from the run's whole traffic matrix (the expected
        pattern; ``initial="oblivious"``: from no demand), served until the first
        reconfiguration (or the end of the run)."""
        self.rng = stream(seed, "hpc.controller")
        self.reset()
        t0 = time.perf_counter()
        horizon = min(self.period, duration_ps) if self.period is not None else duration_ps
        tm = _rack_tm(net, flows.src, flows.dst, flows.size)
        demand = tm
        if self.initial == "oblivious":
            tm = np.zeros_like(tm)
        self.apply(net, self.compute(net, tm, horizon), first=True)
        self.compute_s += time.perf_counter() - t0
        #: the run's rack-level traffic matrix (bytes) the first configuration served
        self.start_demand = demand
        self.unrouted = unrouted_pairs(net, demand)
        if self.unrouted[0] and self.period is None:
            pairs, share = self.unrouted
            warnings.warn(RouteWarning(
                f"routes: {pairs} rack pairs with traffic ({100 * share:.1f} % of the offered bytes) have no route in "
                f"the configuration {net.arch} computed at the start: their messages wait at the source and are "
                "never delivered (the configuration is fixed for the run)"), stacklevel=2)

    def reset(self) -> None:
        self.reconfigurations = 0
        self.changed_circuits = 0
        self.compute_s = 0.0
        #: (time ps, sending (node, port) pairs whose circuit changed) per reconfiguration
        self.log = []
        #: per drained reconfiguration applied: (requested, switched, circuits up) in ps
        self.switches: list[tuple[int, ...]] = []

    def step(self, net: HpcNetwork) -> None:
        """One reconfiguration of a packet run: the demand still to deliver (the engine's
        :meth:`~opendcn.network.Network.demand`), served over the next period."""
        assert net._live is not None
        self.reconfigure(net, net.demand().astype(np.float64), int(net._live.sim.now))

    def reconfigure(self, net: HpcNetwork, demand: np.ndarray, now_ps: int) -> list[tuple[int, int]]:
        """One reconfiguration at ``now_ps`` from ``demand`` (bytes still to deliver per
        rack pair), served over the next period; the packet engine and the flow-level
        mode (:mod:`opendcn.network.flowsim`) both step the controller through here. A
        demand-aware controller keeps its circuits when nothing is waiting. Returns the
        sending (node, port) ends whose circuit changed (empty: nothing changed)."""
        assert self.period is not None
        t0 = time.perf_counter()
        changed: list[tuple[int, int]] = []
        if demand.sum() > 0 or not self.demand_aware:
            changed = self.apply(net, self.compute(net, demand, self.period), first=False, now_ps=now_ps)
        self.compute_s += time.perf_counter() - t0
        return changed

    demand_aware = True

    @abc.abstractmethod
    def compute(self, net: HpcNetwork, demand: np.ndarray, horizon_ps: int) -> Any:
        """Implemented by each controller."""

    @abc.abstractmethod
    def circuits(self, net: HpcNetwork, state: Any) -> list[Circuit]:
        """Implemented by each controller."""

    @abc.abstractmethod
    def routes(self, net: HpcNetwork) -> hpc.Tables:
        """Implemented by each controller."""

    def apply(self, net: HpcNetwork, state: Any, first: bool, now_ps: int = 0) -> list[tuple[int, int]]:
        """Deploy the circuits of ``state`` and the routes on them. During a packet run
        this is a drained reconfiguration: the network drains (sources wait, packets in it
        finish under the old circuits and tables), circuits and tables switch at one
        instant, the changed circuits are down for the delay, then the sources resume
        (the flow-level mode applies the change at ``now_ps``). Returns the sending (node,
        port) ends of the circuits that went away or came (a reconfiguration, not the
        first configuration, is logged at ``now_ps``)."""
        new = self.circuits(net, state)
        changed: list[tuple[int, int]] = []
        if not first:
            old = set(net.circuits)
            gone = old - set(new)
            if not gone:
                return []
            self.reconfigurations += 1
            self.changed_circuits += len(gone)
            ends = sorted({(c.n1, c.p1) for c in gone} | {(c.n2, c.p2) for c in gone if not c.directed})
            self.log.append((int(now_ps), ends))
            came = set(new) - old
            changed = sorted(set(ends) | {(c.n1, c.p1) for c in came} | {(c.n2, c.p2) for c in came if not c.directed})
        net.deploy_topo(new, queued="reroute", drain=not first and net._live is not None)
        net.set_tables(self.routes(net))
        return changed

    #: (rack pairs with traffic but no route, their share of the offered bytes) in the
    #: first configuration
    unrouted: tuple[int, float] = (0, 0.0)

    def metrics(self) -> dict[str, Any]:
        return {"reconfigurations": self.reconfigurations, "changed_circuits": self.changed_circuits,
                "controller_wall_s": round(self.compute_s, 4),
                "period_ps": self.period, "unrouted_pairs_at_start": self.unrouted[0],
                "unrouted_bytes_share_at_start": round(self.unrouted[1], 6)}


def unrouted_pairs(net: "HpcNetwork", tm: np.ndarray) -> tuple[int, float]:
    """Rack pairs ``(s, d)`` with traffic in ``tm`` (bytes, racks x racks) whose source
    rack has no table entry towards ``d`` under the installed routes, and their share of
    the bytes: such packets wait at the source for a route that a fixed configuration
    never gives."""
    t = getattr(net, "_hpc_tables", None)
    n = tm.shape[0]
    if t is None or not len(t) or tm.sum() <= 0:
        return 0, 0.0
    at = (t.node < n) & (t.dst >= 0) & (t.dst < n)
    has = np.zeros((n, n), bool)
    has[t.node[at], t.dst[at]] = True
    want = tm > 0
    np.fill_diagonal(want, False)
    miss = want & ~has
    return int(miss.sum()), float(tm[miss].sum() / tm[want].sum()) if want.any() else 0.0


# ---------------------------------------------------------------------------------------
# TRN
# ---------------------------------------------------------------------------------------
class TrnOptions(ReconfOptions):
    nodes: Int = like(ReconfOptions, "nodes", 128)
    control: Literal["da", "rotor"] = opt(
        "da", "circuits from the demand (da: successive matchings) or a fixed rotating set of matchings (rotor, TRN-R)")
    matching: Literal["weight", "stable"] = opt(
        "weight", "DA matching: maximum weight (centralised) or stable (Gale-Shapley)")
    overprovision: Int = opt(2, "uplinks per ToR = overprovision x k/2 (the paper's cost equalisation: 2)", ge=1)
    routing: Literal["minimal", "two-hop-wcmp"] = opt(
        "minimal", "minimal: direct where a circuit exists, else via an intermediate (shortest paths of at most "
        "2 links); two-hop-wcmp: the direct path and every two-hop path of a pair in equal shares (the WCMP "
        "weights of the authors' configuration generator)")

    @model_validator(mode="after")
    def _rotor(self) -> "TrnOptions":
        if self.control == "rotor" and self.period is None:
            raise ConfigError("--period", None, "rotor control (TRN-R) moves to its next matchings every period")
        return self


class TrnController(Controller):
    def __init__(self, o: TrnOptions):
        super().__init__(o.period, o.initial)
        self.o = o
        self.uplinks = o.overprovision * (o.radix // 2)
        self.phase = 0
        self.cycle: list[np.ndarray] | None = None
        self.rng = stream(1, "hpc.controller")

    def reset(self) -> None:
        super().reset()
        self.phase = 0
        self.cycle = None
        self.demand_aware = self.o.control == "da"

    def compute(self, net: HpcNetwork, demand: np.ndarray, horizon_ps: int) -> np.ndarray:
        n = net.config.nodes
        if self.o.control == "rotor":
            if self.cycle is None:
                self.cycle = hpc.rotor_cycle(n, self.uplinks, self.rng)
            conf = self.cycle[self.phase % len(self.cycle)]
            self.phase += 1
            return conf
        # bytes one circuit carries until the next reconfiguration
        cap = float(net.config.link_rate) / 8 * horizon_ps / 1e12
        return hpc.trn_configuration(demand, self.uplinks, cap, matching=self.o.matching, rng=self.rng)

    def circuits(self, net: HpcNetwork, state: np.ndarray) -> list[Circuit]:
        return [Circuit(int(i), u, int(state[u, i]), u, None, True)
                for u in range(state.shape[0]) for i in range(state.shape[1]) if state[u, i] >= 0]

    def routes(self, net: HpcNetwork) -> hpc.Tables:
        # direct, else via one intermediate ToR (the paper's VLB-like routing): shortest
        # paths of at most as many links as channels (Table 3's 2), each link on its own
        # hop-indexed channel
        if self.o.routing == "two-hop-wcmp":
            return hpc.two_hop_wcmp_tables(net.peer_nodes(), net.config.nodes)
        return hpc.ecmp_tables(net.peer_nodes(), np.arange(net.config.nodes), max_hops=self.o.channels)

    def metrics(self) -> dict[str, Any]:
        return {**super().metrics(), "control": self.o.control, "matching": self.o.matching,
                "uplinks_per_tor": self.uplinks, "routing": self.o.routing}


@register("trn", "TRN: ToR-reconfigurable HPC network (OCS between ToR uplinks; demand-aware or rotor)",
          TrnOptions, tiny={"nodes": 8})
def build_trn(o: TrnOptions) -> HpcNetwork:
    ctl = TrnController(o)
    net = HpcNetwork(o.config(ctl.uplinks, o.delay), arch="trn")
    net._mp = o.multipath
    net.controller = ctl
    # until the run starts, the first rotor configuration stands in
    first = hpc.rotor_cycle(o.nodes, ctl.uplinks, stream(1, "hpc.initial"))[0]
    net.deploy_topo(ctl.circuits(net, first))
    net.set_tables(ctl.routes(net))
    o.apply(net)
    net.arch_metrics.update({"uplinks_per_tor": ctl.uplinks, "ocs_radix": o.nodes, "vcs": o.vcs,
                             "duty_cycle": (1 - o.delay / o.period) if o.period else 1.0})
    return net


# ---------------------------------------------------------------------------------------
# pods: PRN (2L and mesh) and Dragonfly+
# ---------------------------------------------------------------------------------------
class PodOptions(HpcOptions):
    nodes: Int = like(HpcOptions, "nodes", 128)
    pods: AutoInt = opt("auto", "pods (auto: racks / (k/2), at least 2); must divide the racks", ge=2)


class PrnOptions(ReconfOptions, PodOptions):
    intra: Literal["clos", "mesh"] = opt("clos", "racks inside a pod: two-level leaf-spine (PRN-2L) or full mesh (PRN-M)")
    lp: Literal["direct", "two-hop"] = opt(
        "direct", "links between pods: in proportion to the demand over direct pod paths (the authors' TAGO "
                  "allocation LP) or from a concurrent-flow LP over direct and two-pod paths")
    # widened to "auto" here only (PRN-M's count depends on --intra): see ``channels``
    vcs: AutoInt = opt(  # type: ignore[assignment]
        "auto", "virtual channels of the credit transport (auto: Table 3's 2 for PRN-2L; 3 for PRN-M, whose "
                "indirect paths cross two pod meshes)", ge=1, le=8)

    @property
    def channels(self) -> int:
        if self.vcs is not None:
            return int(self.vcs)
        return 3 if self.intra == "mesh" else 2

    @model_validator(mode="after")
    def _shape(self) -> "PrnOptions":
        p, r = _auto_pods(self, self.pods)
        h = self.radix // 2
        if self.intra == "clos" and r > h:
            raise ConfigError("--pods", p, f"{r} racks per pod exceed the k/2 = {h} down ports of a spine")
        if self.intra == "mesh" and r - 1 >= h:
            raise ConfigError("--pods", p, f"a mesh pod of {r} racks leaves no inter-pod port "
                                           f"(a ToR has k/2 = {h} network ports)")
        return self


#: virtual-channel classes of the pod networks' ports (:meth:`Network.vc_rule`): a leaf's
#: port up to a spine (PRN-2L, DF+) or to another ToR of its pod (PRN-M), a spine's port
#: down to a leaf, and a port on a link between pods (OCS circuit or global link)
VC_LOCAL, VC_DOWN, VC_GLOBAL = 0, 1, 2


def clos_pod_vc_rule(net: Network, lay: hpc.PodLayout) -> None:
    """TAGO's two channels on leaf–spine pods (PRN-2L, DF+): channel 0 up to the first
    link between pods and down into the next pod; channel 1 from where the packet climbs
    out of an intermediate pod (a leaf's up port after a spine's down port) or takes a
    second link between pods in a row (global after global). Within a channel every
    path is up, across, down, so the dependencies cannot close a cycle."""
    cls = np.full(net.n_ports, VC_LOCAL, np.int64)
    r = lay.per_pod
    for pod in range(lay.pods):
        for j in range(lay.spines):
            a = int(net.port_offset[int(lay.spine(pod, j))])
            cls[a:a + r] = VC_DOWN
            cls[a + r:a + r + lay.glob] = VC_GLOBAL
    net.vc_rule(cls, escalate=[(VC_DOWN, VC_LOCAL), (VC_GLOBAL, VC_GLOBAL)])


def mesh_pod_vc_rule(net: Network, racks: int, per_pod: int) -> None:
    """Fully meshed pods (PRN-M): one channel up after every link between pods (the
    mesh hop of an intermediate pod then uses channel 1 and the destination pod's mesh
    hop after an indirect path channel 2, so an indirect path needs 3 channels; with
    2, the mesh links of a pod carry both an intermediate's and a destination's last
    hop on channel 1, which closes cycles)."""
    cls = np.full(net.n_ports, VC_LOCAL, np.int64)
    for v in range(racks):
        a = int(net.port_offset[v])
        cls[a + per_pod - 1:a + int(net.config.uplinks)] = VC_GLOBAL
    net.vc_rule(cls, escalate=[(VC_GLOBAL, VC_LOCAL), (VC_GLOBAL, VC_GLOBAL)])


def _pod_layout(o: HpcOptions, p: int, r: int) -> hpc.PodLayout:
    h = o.radix // 2
    return hpc.PodLayout(racks=o.nodes, pods=p, spines=h, glob=h)


def _global_peer(rows: np.ndarray, p: int, uplinks: int, directed_perm: np.ndarray | None) -> np.ndarray:
    """``(pods, uplinks)``: the pod each global port sends to."""
    if directed_perm is not None:
        return directed_perm.T.copy()
    out = np.full((p, uplinks), -1, np.int64)
    out[rows[:, 0], rows[:, 1]] = rows[:, 2]
    out[rows[:, 2], rows[:, 3]] = rows[:, 0]
    return out


def clos_pod_tables(lay: hpc.PodLayout, gpeer: np.ndarray) -> hpc.Tables:
    """TAGO-like routing on leaf–spine pods joined by global links (``gpeer[pod, o]``: the
    pod global port ``o`` leads to). A leaf sends its own packets over all spines of its
    pod (intra-pod ECMP) and packets passing through only to spines with a link to the
    destination pod; a spine with links to the destination pod uses them (direct path);
    a spine without forwards its own pod's packets over all its global ports (indirect
    path via an intermediate pod) and packets passing through down to any leaf."""
    R, P, S = lay.racks, lay.pods, lay.spines
    r = lay.per_pod
    parts: list[hpc.Tables] = []
    leaves = np.arange(R)
    lpod = leaves // r
    # spine (pod, j) global ports: o = g*S + j -> peer pod gpeer[pod, o]
    direct = np.zeros((P, S, P), bool)
    for pod in range(P):
        for o in range(lay.uplinks):
            q = gpeer[pod, o]
            if q >= 0:
                direct[pod, o % S, q] = True
    for d in range(R):
        qd = d // r
        # leaves (each block below in the row order of one table per port)
        same = lpod == qd
        src_l = leaves[(leaves != d) & same]
        parts.append(hpc.Tables.of(np.tile(src_l, S), -1, np.full(S * len(src_l), d),
                                   np.repeat(np.arange(S), len(src_l))))
        other = leaves[~same]
        okm = direct[lpod[other], :, qd]                    # (other leaves, spine)
        oks = [other[okm[:, j]] for j in range(S)]
        node = np.concatenate([x for j in range(S) for x in (oks[j], other)])
        src = np.concatenate([x for j in range(S) for x in (np.full(len(oks[j]), -1), other)])
        port = np.concatenate([np.full(len(oks[j]) + len(other), j) for j in range(S)])
        parts.append(hpc.Tables.of(node, src, np.full(len(node), d), port))
    for pod in range(P):
        pod_leaves = np.arange(pod * r, pod * r + r)
        for j in range(S):
            sp = int(lay.spine(pod, j))
            # down to the own pod's leaves
            parts.append(hpc.Tables.of(np.full(r, sp), -1, pod_leaves, np.arange(r)))
            ports_to = {q: [r + o // S for o in range(j, lay.uplinks, S) if gpeer[pod, o] == q] for q in range(P)}
            all_glob = [r + o // S for o in range(j, lay.uplinks, S) if gpeer[pod, o] >= 0]
            for q in range(P):
                if q == pod:
                    continue
                dst = np.arange(q * r, q * r + r)
                if ports_to[q]:
                    k = len(ports_to[q])
                    parts.append(hpc.Tables.of(np.full(k * r, sp), -1, np.tile(dst, k), np.repeat(ports_to[q], r)))
                else:
                    # passing through: down to any leaf of this pod
                    parts.append(hpc.Tables.of(np.full(r * r, sp), -1, np.tile(dst, r), np.repeat(np.arange(r), r)))
                    # own pod's packets: via an intermediate pod
                    s_, d_ = np.meshgrid(pod_leaves, dst, indexing="ij")
                    k = len(all_glob)
                    parts.append(hpc.Tables.of(np.full(k * s_.size, sp), np.tile(s_.ravel(), k),
                                               np.tile(d_.ravel(), k), np.repeat(np.asarray(all_glob, np.int64),
                                                                                 s_.size)))
    return hpc.Tables.concat(parts)


def mesh_pod_tables(R: int, P: int, h_ocs: int, gpeer: np.ndarray) -> hpc.Tables:
    """TAGO-like routing on fully meshed pods (PRN-M): leaf port ``i`` (``i < r − 1``) goes
    to the ``i``-th other leaf of its pod, port ``r − 1 + c`` is its ``c``-th OCS port
    (pod global port ``o = c·r + index``). A ToR with links to the destination pod uses
    them; otherwise it sends over the mesh to the pod's ToRs that have such links, and a
    ToR's own packets may also leave through its own OCS ports (indirect path)."""
    r = R // P
    parts: list[hpc.Tables] = []

    def mesh_port(i: int, j: int) -> int:
        return j if j < i else j - 1

    for pod in range(P):
        ocs_to = np.full((r, h_ocs), -1, np.int64)
        for c in range(h_ocs):
            for i in range(r):
                ocs_to[i, c] = gpeer[pod, c * r + i]
        for i in range(r):
            v = pod * r + i
            for j in range(r):
                if j != i:
                    parts.append(hpc.Tables.of(np.array([v]), -1, np.array([pod * r + j]),
                                               np.array([mesh_port(i, j)])))
            for q in range(P):
                if q == pod:
                    continue
                dst = np.arange(q * r, q * r + r)
                mine = [r - 1 + c for c in range(h_ocs) if ocs_to[i, c] == q]
                if mine:
                    for port in mine:
                        parts.append(hpc.Tables.of(np.full(r, v), -1, dst, np.full(r, port)))
                    continue
                mates = [mesh_port(i, j) for j in range(r) if j != i and (ocs_to[j] == q).any()]
                for port in mates:
                    parts.append(hpc.Tables.of(np.full(r, v), -1, dst, np.full(r, port)))
                own = mates + [r - 1 + c for c in range(h_ocs) if ocs_to[i, c] >= 0]
                for port in own:
                    parts.append(hpc.Tables.of(np.full(r, v), v, dst, np.full(r, port)))
    return hpc.Tables.concat(parts)


class PrnController(Controller):
    def __init__(self, o: PrnOptions, pods: int, racks_per_pod: int):
        super().__init__(o.period, o.initial)
        self.o = o
        self.pods = pods
        self.r = racks_per_pod
        h = o.radix // 2
        self.uplinks = h * h if o.intra == "clos" else racks_per_pod * (h - (racks_per_pod - 1))
        self.lam = 0.0
        self.links: np.ndarray | None = None
        self.perm: np.ndarray | None = None
        #: the static circuits inside the pods, and the leaf-spine numbering (PRN-2L)
        self.intra: list[Circuit] = []
        self.lay = hpc.PodLayout(racks=o.nodes, pods=pods, spines=h, glob=h)

    def pod_tm(self, tm: np.ndarray) -> np.ndarray:
        p, r = self.pods, self.r
        return tm.reshape(p, r, p, r).sum(axis=(1, 3))

    def compute(self, net: HpcNetwork, demand: np.ndarray, horizon_ps: int) -> np.ndarray:
        lp = hpc.prn_direct if self.o.lp == "direct" else hpc.prn_lp
        x, self.lam = lp(self.pod_tm(demand), self.uplinks)
        self.links = hpc.round_links(x, self.uplinks)
        return hpc.permutations(self.links)

    def circuits(self, net: HpcNetwork, perm: np.ndarray) -> list[Circuit]:
        self.perm = perm
        out = list(self.intra)
        for o in range(perm.shape[0]):
            for a in range(self.pods):
                b = int(perm[o, a])
                na, pa = self.gport(a, o)
                nb, pb = self.gport(b, o)
                out.append(Circuit(na, pa, nb, pb, None, True))
        return out

    def gport(self, pod: int, o: int) -> tuple[int, int]:
        if self.o.intra == "clos":
            n, p = self.lay.global_port(pod, o)
            return int(n), int(p)
        return pod * self.r + o % self.r, self.r - 1 + o // self.r

    def routes(self, net: HpcNetwork) -> hpc.Tables:
        assert self.perm is not None
        gpeer = self.perm.T.copy()
        if self.o.intra == "clos":
            return clos_pod_tables(self.lay, gpeer)
        return mesh_pod_tables(self.o.nodes, self.pods, self.uplinks // self.r, gpeer)

    def metrics(self) -> dict[str, Any]:
        return {**super().metrics(), "pods": self.pods, "racks_per_pod": self.r, "pod_uplinks": self.uplinks,
                "lp_throughput": round(self.lam, 6), "lp": self.o.lp, "intra": self.o.intra,
                "pod_links_min": int(self.links[~np.eye(self.pods, dtype=bool)].min()) if self.links is not None else 0}


@register("prn", "PRN: pod-reconfigurable HPC network (leaf-spine or mesh pods, LP-chosen OCS links between pods)",
          PrnOptions, tiny={"nodes": 16})
def build_prn(o: PrnOptions) -> HpcNetwork:
    p, r = _auto_pods(o, o.pods)
    h = o.radix // 2
    ctl = PrnController(o, p, r)
    if o.intra == "clos":
        lay = ctl.lay
        net = HpcNetwork(o.config(h, o.delay), switches=p * h, switch_ports=r + h, arch="prn")
        ctl.intra = [Circuit(leaf, j, int(lay.spine(leaf // r, j)), leaf % r) for leaf in range(o.nodes)
                     for j in range(h)]
    else:
        net = HpcNetwork(o.config(h, o.delay), arch="prn")
        ctl.intra = [Circuit(pod * r + i, j - 1, pod * r + j, i) for pod in range(p) for i in range(r)
                     for j in range(i + 1, r)]
    net._mp = o.multipath
    net.controller = ctl
    # until the run starts: the LP's answer for uniform traffic
    ctl.rng = stream(1, "hpc.initial")
    ctl.apply(net, ctl.compute(net, np.zeros((o.nodes, o.nodes)), 1), first=True)
    o.apply(net)
    if o.intra == "clos":
        clos_pod_vc_rule(net, ctl.lay)
    else:
        mesh_pod_vc_rule(net, o.nodes, r)
    net.arch_metrics.update({"pods": p, "racks_per_pod": r, "pod_uplinks": ctl.uplinks, "ocs_radix": p,
                             "vcs": o.channels, "duty_cycle": (1 - o.delay / o.period) if o.period else 1.0})
    return net


class DfPlusOptions(PodOptions):
    @model_validator(mode="after")
    def _shape(self) -> "DfPlusOptions":
        p, r = _auto_pods(self, self.pods)
        h = self.radix // 2
        if r > h:
            raise ConfigError("--pods", p, f"{r} racks per group exceed the k/2 = {h} down ports of a spine")
        if p - 1 > h * h:
            raise ConfigError("--pods", p, f"at most (k/2)^2 + 1 = {h * h + 1} groups")
        return self


@register("dfplus", "Dragonfly+ (Megafly): leaf-spine groups with static global links, TAGO-like routing",
          DfPlusOptions, tiny={"nodes": 16})
def build_dfplus(o: DfPlusOptions) -> HpcNetwork:
    p, r = _auto_pods(o, o.pods)
    h = o.radix // 2
    lay = _pod_layout(o, p, r)
    net = HpcNetwork(o.config(h), fabric="electrical", switches=p * h, switch_ports=r + h, arch="dfplus")
    net._mp = o.multipath
    rows = hpc.global_pairs(p, lay.uplinks)
    circuits = [Circuit(leaf, j, int(lay.spine(leaf // r, j)), leaf % r) for leaf in range(o.nodes) for j in range(h)]
    for a, oa, b, ob in rows:
        na, pa = lay.global_port(int(a), int(oa))
        nb, pb = lay.global_port(int(b), int(ob))
        circuits.append(Circuit(int(na), int(pa), int(nb), int(pb)))
    net.deploy_topo(circuits)
    net.set_tables(clos_pod_tables(lay, _global_peer(rows, p, lay.uplinks, None)))
    o.apply(net)
    clos_pod_vc_rule(net, lay)
    counts = np.zeros((p, p), np.int64)
    np.add.at(counts, (rows[:, 0], rows[:, 2]), 1)
    counts = counts + counts.T
    net.arch_metrics.update({"groups": p, "racks_per_group": r, "global_links": int(len(rows)), "vcs": o.vcs,
                             "group_links_min": int(counts[~np.eye(p, dtype=bool)].min())})
    return net


# ---------------------------------------------------------------------------------------
# expander with HYB routing
# ---------------------------------------------------------------------------------------
class ExpanderOptions(HpcOptions):
    nodes: Int = like(HpcOptions, "nodes", 128)
    vcs: Int = like(HpcOptions, "vcs", 4)
    overprovision: Int = opt(2, "network ports per ToR = overprovision x k/2 (the paper's cost equalisation: 2)", ge=1)
    ecmp_fraction: Float = opt(0.6, "HYB: share of a pair's paths that are shortest (ECMP); the rest are Valiant "
                                    "paths via random intermediate ToRs", gt=0, le=1)
    wiring_seed: Int = opt(1, "seed of the random regular wiring (the run's --seed draws the traffic)", ge=0)


def hyb_paths(peer: np.ndarray, ecmp_fraction: float, rng: np.random.Generator,
              max_hops: int | None = None) -> list[Path]:
    """HYB routes on a static graph (``peer[v, p]``: the ToR port ``p`` of ``v`` leads to):
    every shortest path of a pair (ECMP), plus ``V = round(E·(1−f)/f)`` Valiant paths
    through distinct random intermediate ToRs (a random shortest path to the
    intermediate, then a random shortest path on, the two together a simple path of at
    most ``max_hops`` links; intermediates that allow none are skipped), ``E`` being the
    pair's ECMP paths."""
    from scipy import sparse
    from scipy.sparse.csgraph import shortest_path

    n, u = peer.shape
    vv, pp = np.nonzero(peer >= 0)
    g = sparse.csr_matrix((np.ones(len(vv)), (vv, peer[vv, pp])), shape=(n, n))
    g.data[:] = 1.0
    dist = shortest_path(g, directed=True, unweighted=True)

    @functools.lru_cache(maxsize=None)
    def all_sp(s: int, d: int) -> list[tuple[Hop, ...]]:
        if s == d:
            return [()]
        out: list[tuple[Hop, ...]] = []
        for p in range(u):
            q = int(peer[s, p])
            if q >= 0 and dist[q, d] == dist[s, d] - 1:
                out.extend((Hop(s, p, None),) + rest for rest in all_sp(q, d))
        return out

    paths: list[Path] = []
    for s in range(n):
        for d in range(n):
            if s == d:
                continue
            ecmp = all_sp(s, d)
            paths.extend(Path(s, d, None, hops) for hops in ecmp)
            if ecmp_fraction >= 1:
                continue
            v = max(1, int(round(len(ecmp) * (1 - ecmp_fraction) / ecmp_fraction)))
            found = 0
            for m in rng.permutation(n):
                if found == v:
                    break
                m = int(m)
                if m in (s, d) or (max_hops is not None and dist[s, m] + dist[m, d] > max_hops):
                    continue
                # a Valiant path is a simple path: its first leg avoids d, its second leg
                # meets the first only at m (a shortest path to m may run through d)
                legs_a = [x for x in all_sp(s, m) if all(h.node != d for h in x)]
                if not legs_a:
                    continue
                a = legs_a[rng.integers(len(legs_a))]
                seen = {h.node for h in a}
                legs_b = [y for y in all_sp(m, d) if all(h.node == m or h.node not in seen for h in y)]
                if not legs_b:
                    continue
                paths.append(Path(s, d, None, a + legs_b[rng.integers(len(legs_b))]))
                found += 1
    return paths


@register("expander_hyb", "Static expander (Jellyfish-like) with HYB hybrid Valiant-ECMP routing, 2x over-provisioned",
          ExpanderOptions, tiny={"nodes": 8})
def build_expander(o: ExpanderOptions) -> HpcNetwork:
    deg = o.overprovision * (o.radix // 2)
    w = hpc.expander(o.nodes, deg, o.hosts, seed=o.wiring_seed)
    net = HpcNetwork(o.config(deg), fabric="electrical", arch="expander_hyb")
    used = np.zeros(o.nodes, np.int64)
    circuits = []
    for a, b in w.links:
        circuits.append(Circuit(int(a), int(used[a]), int(b), int(used[b])))
        used[a] += 1
        used[b] += 1
    net.deploy_topo(circuits)
    peer = np.full((o.nodes, deg), -1, np.int64)
    for c in circuits:
        peer[c.n1, c.p1] = c.n2
        peer[c.n2, c.p2] = c.n1
    # Valiant paths no longer than the channels: hop-indexed channels then cover them
    paths = hyb_paths(peer, o.ecmp_fraction, stream(o.wiring_seed, "hpc.hyb"), max_hops=o.vcs)
    net.deploy_routing(paths, lookup="source", multipath=o.multipath)
    o.apply(net)
    net.arch_metrics.update({"degree": deg, "diameter": hpc.diameter(w), "vcs": o.vcs,
                             "routes": len(net._routes), "ecmp_fraction": o.ecmp_fraction})
    return net


# ---------------------------------------------------------------------------------------
# fat tree
# ---------------------------------------------------------------------------------------
class FatTreeOptions(HpcOptions):
    nodes: Int = like(HpcOptions, "nodes", 128)
    vcs: Int = like(HpcOptions, "vcs", 1)

    @model_validator(mode="after")
    def _shape(self) -> "FatTreeOptions":
        p, r = _fat_pods(self)
        if p > self.radix:
            raise ConfigError("--nodes", self.nodes, f"a three-level fat tree of radix {self.radix} has at most "
                                                      f"{self.radix * self.radix // 2} racks")
        return self


def _fat_pods(o: HpcOptions) -> tuple[int, int]:
    h = o.radix // 2
    p = math.ceil(o.nodes / h)
    if o.nodes % p:
        raise ConfigError("--nodes", o.nodes, f"the racks must split evenly into pods of at most k/2 = {h}")
    return p, o.nodes // p


def fattree_circuits(racks: int, k: int) -> tuple[list[Circuit], int, int, int]:
    """Non-blocking three-level fat tree of radix ``k`` over ``racks`` edge switches:
    ``P = ⌈racks/(k/2)⌉`` pods of ``r`` edges and ``k/2`` aggregation switches (each edge
    to every aggregation switch of its pod), and — with more than one pod — ``k/2`` groups
    of ``r`` core switches, core ``c`` of group ``j`` linked once to aggregation switch
    ``j`` of every pod (an aggregation switch has as many up as down ports). Nodes: edges
    ``0..racks−1``, aggregation ``racks + pod·k/2 + j``, cores after them. Returns
    (circuits, switch nodes, switch ports, pods)."""
    h = k // 2
    p = math.ceil(racks / h)
    r = racks // p
    circuits = []
    agg0 = racks
    core0 = racks + p * h
    for e in range(racks):
        for j in range(h):
            circuits.append(Circuit(e, j, agg0 + (e // r) * h + j, e % r))
    if p > 1:
        for pod in range(p):
            for j in range(h):
                for c in range(r):
                    circuits.append(Circuit(agg0 + pod * h + j, r + c, core0 + j * r + c, pod))
    switches = p * h + (h * r if p > 1 else 0)
    ports = max(2 * r if p > 1 else r, p if p > 1 else 0)
    return circuits, switches, ports, p


@register("fattree", "Non-blocking three-level fat tree with ECMP (the HPC reference)", FatTreeOptions,
          tiny={"nodes": 32})
def build_fattree(o: FatTreeOptions) -> HpcNetwork:
    h = o.radix // 2
    circuits, switches, ports, p = fattree_circuits(o.nodes, o.radix)
    net = HpcNetwork(o.config(h), fabric="electrical", switches=switches, switch_ports=ports, arch="fattree")
    net._mp = o.multipath
    net.deploy_topo(circuits)
    net.set_tables(hpc.ecmp_tables(net.peer_nodes(), np.arange(o.nodes)))
    o.apply(net)
    net.arch_metrics.update({"pods": p, "switches": o.nodes + switches, "vcs": o.vcs})
    return net
