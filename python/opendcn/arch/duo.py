"""Duo and its baselines on the packet engine (Zerwas et al., "Duo: A High-Throughput
Reconfigurable Datacenter Network Using Local Routing and Control", POMACS 7(1), 2023).

Three architectures share one fabric: ``nodes`` ToRs, each with ``uplinks`` directed
uplinks (egress port i and ingress port i belong to spine switch i, §3), ``hosts_per_tor``
hosts below it, every link at ``link_rate``.

- ``duo``: Duo(n, k_s, k_d). The first k_s switches are static and build the de Bruijn
  backbone DB(k_s, d), n = k_s^d (§3.1, Obs. 1); the next k_d switches carry demand-aware
  (DA) links. Routing is greedy longest-prefix match over static and DA neighbours
  (Alg. 1) compiled to time-flow tables; equal-length ports are multipath, chosen per
  packet at every hop by default (the paper is silent; the authors' simulator draws one
  of a prefix's next hops at random for each packet; ``multipath="flow"`` hashes per
  flow). Every ρ the centralized Greedy-DA (Alg. 2, §3.2.1) reads the remaining
  bytes of the flows present (``net.demand()``), computes new DA matchings and
  reconfigures the changed links, which stay dark for δ; only the tables of the nodes
  whose DA ports changed are rebuilt (§3.1, local control).
- ``segr``: the segregated baseline (ProjecToR-like, §4.1.3): the same fabric and
  Greedy-DA, but a flow uses a DA link only if that link joins its source and destination
  ToRs directly; everything else is routed on the static de Bruijn links.
- ``exp``: a static directed ``uplinks``-regular expander from ``uplinks`` random
  matchings, k-shortest-path routing with one path fixed per flow when it arrives
  (§4.1.3).

All three use Duo's transports and queues (§3.3.3, §4.1.3): flows up to ``--f-th`` over
NDP, larger ones over TCP NewReno, and three priority classes on every ToR port — HIGH
(ACKs, NDP headers and pulls), MEDIUM (NDP data, trimmed when full), LOW (TCP data) —
served by strict priority (or by weight, ``--service weighted``).

``docs/arch/duo.md``, ``docs/arch/segr.md`` and ``docs/arch/exp.md`` state the decisions
taken where the paper is silent.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path as FsPath
from typing import Any, Literal

import numpy as np
from pydantic import field_validator, model_validator

from .. import _core
from ..fabrics import debruijn, distda, topology
from ..experiments.analysis import fct_stats
from ..network.config import Config
from ..errors import ConfigError
from ..network.network import Network, Result, _atomic_write, _engine_error, _Live, run_chunked
from .options import AutoInt, AutoRate, FailureOptions, Float, Int, LimitInt, Rate, Size, Time, TransportOptions, like, opt
from ..rng import stream
from ..network.timeflow import Circuit, Entry, Hop, Path
from . import register

#: flow-size buckets of the FCT statistics (bytes, [lo, hi)); the Duo paper's Fig. 9 reads
#: small flows, 1-15 MB (Opera's NDP range) and the bulk above
FCT_BUCKETS: dict[str, tuple[float, float]] = {
    "under_10KB": (0, 10_000), "10KB_100KB": (10_000, 100_000), "100KB_1MB": (100_000, 1_000_000),
    "1MB_15MB": (1_000_000, 15_000_000), "over_15MB": (15_000_000, math.inf),
}

#: the engine's reorder buckets (received - expected segment number), in order
REORDER_BUCKETS = ("<0", "0", "1-10", "11-100", "101-1000", ">1000")


# ---------------------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------------------
class _DuoFabricOptions(FailureOptions):
    """The fabric, transports and queues shared by duo, segr and exp."""

    nodes: Int = opt(64, "number of ToRs n", ge=2)
    uplinks: Int = opt(8, "directed uplinks k per ToR (k egress + k ingress ports; port i is on spine switch i)",
                       ge=1)
    hosts_per_tor: Int = opt(8, "hosts below each ToR", ge=1)
    link_rate: Rate = opt("10Gbps", "rate of every link (host and ToR-ToR)", gt=0)
    propagation: Time = opt("500ns", "ToR-to-ToR propagation per hop")
    host_propagation: Time = opt("0ns", "host-to-ToR propagation (Duo's htsim: 0)")
    mtu: Size = opt("1500B", "packet size on the wire, header included")
    header: Size = opt("64B", "header (and control packet) size", gt=0)
    queue: Int = opt(50, "bytes of each priority class (HIGH, MEDIUM, LOW) of a ToR port, in full packets", ge=1)
    f_th: Size = opt("1MB", "flows up to this size use NDP, larger ones TCP (0: every flow TCP, no priority split)")
    service: Literal["strict", "weighted"] = opt(
        "strict", "classes served by strict priority (the paper) or by weight (deficit round robin, the htsim fork)")
    weights: str = opt("1,3,1", "weighted service: full packets per round of HIGH, MEDIUM, LOW")
    tcp_dupack: Int = like(TransportOptions, "tcp_dupack", 3)
    tcp_init_cwnd: Int = like(TransportOptions, "tcp_init_cwnd", 10)
    tcp_init_ssthresh: LimitInt = like(TransportOptions, "tcp_init_ssthresh", 10)
    tcp_min_rto: Time = like(TransportOptions, "tcp_min_rto", "1ms")
    ndp_init_window: Int = like(TransportOptions, "ndp_init_window", 30)
    ndp_rto: Time = like(TransportOptions, "ndp_rto", "1ms")
    ndp_pull_rate: Float = like(TransportOptions, "ndp_pull_rate", 1.0)
    ndp_pull_pacer: Literal["host", "flow"] = like(TransportOptions, "ndp_pull_pacer", "host")
    ndp_return_to_sender: bool = like(TransportOptions, "ndp_return_to_sender", True)
    sample_interval: Time = opt("1ms", "time-series sample interval (RX volume over time, bytes per uplink; "
                                       "0: none)")

    @field_validator("weights")
    @classmethod
    def _weights(cls, v: str) -> str:
        parse_weights(v)
        return v

    @model_validator(mode="after")
    def _check_packet(self) -> "_DuoFabricOptions":
        if self.mtu <= self.header:
            raise ConfigError("--mtu", self.mtu, f"a packet must be larger than its header ({self.header} B)")
        return self


def parse_weights(v: Any) -> list[int]:
    """``"1,3,1"`` → ``[1, 3, 1]`` (three positive integers, ConfigError otherwise).

    >>> parse_weights("2, 3, 1")
    [2, 3, 1]
    """
    parts = [p.strip() for p in str(v).split(",")]
    if len(parts) != 3 or not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise ConfigError("--weights", v, "expected three positive integers HIGH,MEDIUM,LOW, e.g. 1,3,1")
    return [int(p) for p in parts]


class DuoOptions(_DuoFabricOptions):
    k_s: Int = opt(2, "static de Bruijn switches k_s (the alphabet b of DB(b, d); nodes must be k_s**d, d >= 2)",
                   ge=2)
    k_d: AutoInt = opt("auto", "demand-aware switches k_d (auto: uplinks - k_s)")
    rho: Time = opt("10ms", "Greedy-DA update period rho", gt=0)
    delta: Time = opt("100us", "reconfiguration delay delta: a changed DA link is dark this long")
    v_th: Size = opt("0B", "Greedy-DA serves only demands larger than this")
    warmup: Time = opt("0ns", "also measure the path mix, link use and duty cycle from this time on "
                              "(arch_metrics['after_warmup']; 0: not)", ge=0)
    multipath: Literal["flow", "packet"] = opt(
        "packet", "equal-length ports: per packet (random, at every hop, as the authors' htsim extension picks among "
                  "a prefix's next hops) or per-flow hash")
    da: Literal["greedy", "dist"] = opt(
        "greedy", "DA-link control: centralized Greedy-DA every rho (Alg. 2) or distributed DistDA (Alg. 3: "
                  "elephant detection at the destination, PortRequest / PortApprove messages over the static links)")
    elephant_period: Time = opt("1ms", "DistDA: sampling period of each destination's per-source rate filters", gt=0)
    elephant_gain: Float = opt(0.25, "DistDA: low-pass filter gain per sample (rate = (1 - g) rate + g sample)",
                               gt=0, le=1)
    elephant_rate: AutoRate = opt("auto", "DistDA: a source ToR is an elephant when its filtered rate (data "
                                          "packets > 255 B) exceeds this (auto: a tenth of --link-rate)")
    cooldown: Time = opt("200ms", "DistDA: a destination reports a source as elephant at most once per cooldown",
                         ge=0)
    reservation: Time = opt("200ms", "DistDA: an agreed DA port is reserved this long (r); afterwards a new "
                                     "request may claim it", ge=0)
    request_timeout: Time = opt("1ms", "DistDA: a PortRequest without answer is sent again after this", gt=0)

    @model_validator(mode="after")
    def _check(self) -> "DuoOptions":
        n, b = self.nodes, self.k_s
        d = _log(n, b)
        if d is None or d < 2:
            raise ConfigError("--nodes", n, f"Duo needs n = k_s**d ToRs with d >= 2 (k_s = {b}: "
                                             f"{', '.join(str(b ** x) for x in range(2, 5))}, ...)")
        if b > self.uplinks:
            raise ConfigError("--k-s", b, f"more static switches than uplinks ({self.uplinks})")
        if self.k_d is not None and not 0 <= self.k_d <= self.uplinks - b:
            raise ConfigError("--k-d", self.k_d, f"{self.uplinks - b} uplinks are left after k_s = {b} static "
                                                 f"switches (--uplinks {self.uplinks})")
        if self.elephant_rate is not None and self.elephant_rate < 0:
            raise ConfigError("--elephant-rate", self.elephant_rate, "must be >= 0 bit/s")
        if self.rho <= self.delta:
            raise ConfigError("--rho", self.rho, f"the update period must be longer than the reconfiguration delay "
                                                 f"({self.delta} ps): duty cycle (rho - delta) / rho <= 0")
        return self

    @property
    def da_switches(self) -> int:
        return self.uplinks - self.k_s if self.k_d is None else self.k_d


class ExpOptions(_DuoFabricOptions):
    k_paths: Int = opt(8, "k of k-shortest-path routing: paths per ToR pair, one fixed per flow", ge=1)
    topology_seed: Int = opt(1, "seed of the random matchings of the expander", ge=0)


def _log(n: int, b: int) -> int | None:
    """``d`` with ``b**d == n``, or None."""
    d, v = 0, 1
    while v < n:
        v *= b
        d += 1
    return d if v == n else None


# ---------------------------------------------------------------------------------------
# the shared fabric
# ---------------------------------------------------------------------------------------
def _config(o: _DuoFabricOptions, **extra: Any) -> Config:
    cap = o.queue * o.mtu
    return Config(nodes=o.nodes, uplinks=o.uplinks, link_rate=o.link_rate, propagation=o.propagation,
                  hosts_per_node=o.hosts_per_tor, host_link_rate=o.link_rate, host_propagation=o.host_propagation,
                  mtu=o.mtu - o.header, header=o.header, buffer=3 * cap, sample_interval=o.sample_interval, **extra)


def transport_rule(f_th: int) -> str:
    """The transport rule of a flow-size threshold: NDP up to ``f_th`` bytes, TCP above
    (``f_th`` = 0: every flow TCP).

    >>> transport_rule(1_000_000), transport_rule(0), transport_rule(1500)
    ('ndp<=1MB,tcp', 'tcp', 'ndp<=1500B,tcp')
    """
    if f_th <= 0:
        return "tcp"
    size = next((f"{f_th // k}{unit}" for unit, k in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)) if f_th % k == 0),
                f"{f_th}B")
    return f"ndp<={size},tcp"


def _setup_ports(net: Network, o: _DuoFabricOptions) -> None:
    """Duo's transports and its three priority classes on every ToR port (§3.3.3)."""
    net.transport(transport_rule(o.f_th), dupack=o.tcp_dupack, init_cwnd=o.tcp_init_cwnd,
                  init_ssthresh=o.tcp_init_ssthresh, min_rto=o.tcp_min_rto,
                  ndp_init_window=o.ndp_init_window, ndp_rto=o.ndp_rto, ctrl_bytes=o.header,
                  pull_rate=o.ndp_pull_rate, pull_pacer=o.ndp_pull_pacer, return_to_sender=o.ndp_return_to_sender)
    cap = o.queue * o.mtu
    weights = parse_weights(o.weights) if o.service == "weighted" else None
    net.port_discipline(None, classes=[cap, cap, cap], trim=True, weights=weights)
    net.watch([(v, p) for v in range(o.nodes) for p in range(o.uplinks)] if o.sample_interval else [])
    net.net_series = o.sample_interval > 0


def _fabric_metrics(o: _DuoFabricOptions) -> dict[str, Any]:
    return {"uplinks": o.uplinks, "hosts_per_tor": o.hosts_per_tor, "f_th_bytes": o.f_th,
            "transport_rule": transport_rule(o.f_th), "queue_pkts": o.queue, "service": o.service,
            **({"weights": parse_weights(o.weights)} if o.service == "weighted" else {})}


def _tor_hops(result: Result, hosts: bool) -> dict[int, int]:
    """Delivered payload bytes by ToR-to-ToR hops (the engine also counts the host downlink)."""
    by = {int(h): int(v) for h, v in result.summary.get("delivered_bytes_by_hops", {}).items()}
    return {h - (1 if hosts else 0): v for h, v in by.items()}


def _da_link_classes(net: Network, s: dict[str, Any], o: dict[str, Any], tx: np.ndarray, port: np.ndarray,
                     up: np.ndarray, da: np.ndarray, da_ports: range) -> dict[str, Any]:
    """The ToR uplinks split into Duo's two link classes from the per-port transmit
    counters: ``static`` (the de Bruijn ports 0..k_s-1) and ``demand_aware`` (the DA ports
    k_s..k_s+k_d-1), each with its ports per ToR, wire bytes sent and utilisation (bytes /
    the ports' capacity over the run); ``host`` is the engine's host-link class. The engine
    classes the DA ports as reconfigurable optical and the de Bruijn ports (and any unused
    uplink) as static optical, so ``static`` + ``demand_aware`` = its two optical classes."""
    eng = s.get("link_classes", {})
    n, u = net.config.nodes, net.config.uplinks
    # capacity of one port over the run, as the engine counts it (rate x its clock)
    cap = o.get("class_capacity_bytes", {})
    optical = int(cap.get("static_optical", 0)) + int(cap.get("reconfigurable_optical", 0))
    per_port = optical / (n * u) if optical else 0.0
    out: dict[str, Any] = {}
    for name, sel, ports in (("static", up & (port < da_ports.start), da_ports.start),
                             ("demand_aware", da, len(da_ports))):
        b = int(tx[sel].sum())
        cap = per_port * n * ports
        out[name] = {"ports_per_tor": ports, "tx_bytes": b, "utilisation": b / cap if cap else 0.0}
    if "host" in eng:
        out["host"] = dict(eng["host"])
    return out


def path_classes(o: dict[str, Any], hosts: bool) -> dict[str, Any]:
    """The delivered payload by the kind of path it took, exact from the engine's count
    by (hops, link classes crossed) of every first delivery (DA ports are the
    reconfigurable class, de Bruijn and expander ports the static one):
    ``one_hop_da_share`` (one ToR-to-ToR hop, over a DA link), ``multi_hop_mixed_share``
    (two or more ToR hops, at least one over a DA link: the paper's integrated multi-hop
    paths; ``multi_hop_da_only_bytes`` is the part that used no static link) and
    ``static_only_share`` (static links only), summing to 1 over the payload that crossed
    at least one ToR-to-ToR link; payload delivered inside its rack is counted apart
    (``path_bytes["intra_rack"]``).

    >>> o = {"delivered_by_hops_class": [[0] * 8, [0] * 8, [0, 0, 0, 0, 100, 0, 0, 0],
    ...                                  [0, 0, 300, 0, 0, 0, 600, 0]]}
    >>> m = path_classes(o, hosts=True)
    >>> m["one_hop_da_share"], m["multi_hop_mixed_share"], m["static_only_share"]
    (0.1, 0.6, 0.3)
    """
    rows = o.get("delivered_by_hops_class") or []
    b = {"one_hop_da": 0, "multi_hop_mixed": 0, "multi_hop_da_only": 0, "static_only": 0, "intra_rack": 0}
    for h, row in enumerate(rows):
        tor_hops = h - (1 if hosts else 0)
        for cls, v in enumerate(row):
            if not v:
                continue
            if tor_hops <= 0:
                b["intra_rack"] += int(v)
            elif cls & 4 and tor_hops == 1:
                b["one_hop_da"] += int(v)
            elif cls & 4:
                b["multi_hop_mixed"] += int(v)
                if not cls & 3:
                    b["multi_hop_da_only"] += int(v)
            else:
                b["static_only"] += int(v)
    total = b["one_hop_da"] + b["multi_hop_mixed"] + b["static_only"]
    share = {f"{k}_share": b[k] / total if total else 0.0 for k in ("one_hop_da", "multi_hop_mixed", "static_only")}
    return {**share, "path_bytes": b}


def common_metrics(net: Network, result: Result, o: dict[str, Any], da_ports: range | None) -> dict[str, Any]:
    """The metrics the Duo paper compares designs by (§4.1): RX volume over time, p99 FCT
    per flow-size bucket, reordering, traffic-weighted mean path length, raw and
    normalised link utilisation and the bytes carried on DA links."""
    s = result.summary
    flows = result.flows
    out: dict[str, Any] = {}
    mice = s["fct_us"].get("mice_threshold_bytes", 10_000)
    out["fct_us_by_size"] = {k: v for k, v in fct_stats(flows, mice_threshold=mice, sizes=FCT_BUCKETS).items()
                             if k in FCT_BUCKETS}
    # reordering: received - expected segment number at transport receivers (engine buckets)
    ro = s.get("reorder", {})
    counts = [int(ro.get(b, 0)) for b in REORDER_BUCKETS]
    tot = sum(counts)
    cdf = np.cumsum(counts) / tot if tot else np.zeros(len(counts))
    out["reorder"] = {"buckets": list(REORDER_BUCKETS), "counts": counts, "cdf": [round(float(x), 6) for x in cdf],
                      "out_of_order_share": (tot - counts[1]) / tot if tot else 0.0}
    hops = _tor_hops(result, net.config.hosts_per_node > 0)
    delivered = sum(hops.values())
    p = sum(h * v for h, v in hops.items()) / delivered if delivered else 0.0
    out["mean_path_length"] = p
    out["delivered_bytes_by_tor_hops"] = {str(h): v for h, v in sorted(hops.items()) if v}
    out["path_mix"] = {"one_hop": hops.get(1, 0) / delivered if delivered else 0.0,
                       "multi_hop": sum(v for h, v in hops.items() if h >= 2) / delivered if delivered else 0.0}
    out.update(path_classes(o, net.config.hosts_per_node > 0))
    # raw utilisation of the ToR uplinks: both optical classes (de Bruijn and DA ports)
    tx_b, cap_b = o.get("class_tx_bytes", {}), o.get("class_capacity_bytes", {})
    opt = ("static_optical", "reconfigurable_optical")
    cap_o = sum(int(cap_b.get(k, 0)) for k in opt)
    u = sum(int(tx_b.get(k, 0)) for k in opt) / cap_o if cap_o else 0.0
    out["link_utilisation"] = {"u": u, "u_normalised": u / p if p else 0.0}
    # RX volume over time: the network-wide rows of the time series
    ts = result.timeseries
    if ts.num_rows:
        node = np.asarray(ts["node"])
        net_rows = node == -1
        out["rx_volume"] = {"time_ps": np.asarray(ts["time_ps"])[net_rows].tolist(),
                            "bytes": np.asarray(ts["delivered_bytes"].fill_null(0))[net_rows].tolist()}
        if da_ports is not None:
            port = np.asarray(ts["port"])
            tx = np.asarray(ts["tx_bytes"])
            up = (node >= 0) & (port < net.config.uplinks)
            da = up & (port >= da_ports.start) & (port < da_ports.stop)
            total = int(tx[up].sum())
            out["da_link_bytes"] = {"da": int(tx[da].sum()), "all_uplinks": total,
                                    "share": float(tx[da].sum() / total) if total else 0.0}
            out["link_classes"] = _da_link_classes(net, s, o, tx, port, up, da, da_ports)
    return out


# ---------------------------------------------------------------------------------------
# Duo and SEGR
# ---------------------------------------------------------------------------------------
class DuoNetwork(Network):
    """A ready Duo (``segregated=False``) or SEGR network: the de Bruijn backbone on the
    first ``k_s`` uplinks, DA links on the next ``k_d``, greedy LPM tables, Duo's
    transports and queues, and the Greedy-DA control loop inside the run (``run``
    steps the engine one update period at a time)."""

    #: the progress bar's update, called by the engine's chunked runs (None: no bar)
    _tick: Any = None

    def __init__(self, o: DuoOptions, *, segregated: bool = False):
        n, b = o.nodes, o.k_s
        d = _log(n, b)
        assert d is not None, "checked by DuoOptions"
        super().__init__(_config(o, reconfiguration_delay=o.delta), arch="segr" if segregated else "duo")
        self.segregated = segregated
        self.b, self.d, self.k_d = b, d, o.da_switches
        self.rho, self.delta, self.v_th = o.rho, o.delta, o.v_th
        #: the start of the steady-state window (0: none) and the engine's counters then
        self.warmup = o.warmup
        self._snap: dict[str, Any] | None = None
        #: the DA-link control: "greedy" (Alg. 2, every rho) or "dist" (DistDA, Alg. 3)
        self.da_mode = o.da
        self.dist_params = distda.DistParams(
            period=o.elephant_period, gain=float(o.elephant_gain),
            threshold_bps=float(o.link_rate / 10 if o.elephant_rate is None else o.elephant_rate),
            cooldown=o.cooldown, reservation=o.reservation, timeout=o.request_timeout)
        self._dist: distda.DistDA | None = None
        #: the static matchings: entry [j, v] is the node egress port j of v reaches
        self.static = debruijn.static_successors(b, d)
        _setup_ports(self, o)
        self._multipath = o.multipath
        self._records: list[dict[str, Any]] = []
        #: DA link time (link x ps) routed over and deployed, since (ps), links routed and deployed now
        self._avail = [0, 0, 0, 0, 0]
        self._end = 0            # the last run's end (ps)
        # the DA ports are the reconfigurable links (metrics and the packets' link classes)
        self.set_link_class([(v, p) for v in range(n) for p in self.da_ports], "reconfigurable_optical")
        self._configure(seed=1)
        self.arch_metrics.update(_fabric_metrics(o), k_s=b, k_d=self.k_d, de_bruijn={"b": b, "d": d},
                                 delta_ps=o.delta, multipath=o.multipath, da_control=o.da,
                                 routes_use_new_links="after delta")
        if o.da == "greedy":
            self.arch_metrics.update(rho_ps=o.rho, v_th_bytes=o.v_th, duty_cycle_target=(o.rho - o.delta) / o.rho)
        else:
            p = self.dist_params
            self.arch_metrics.update(elephant_period_ps=p.period, elephant_gain=p.gain,
                                     elephant_rate_bps=p.threshold_bps, elephant_packets_larger_than=p.larger_than,
                                     cooldown_ps=p.cooldown, reservation_ps=p.reservation,
                                     request_timeout_ps=p.timeout)

    # ------------------------------------------------------------------ configuration
    @property
    def da_ports(self) -> range:
        """The DA egress (and ingress) port numbers of every ToR."""
        return range(self.b, self.b + self.k_d)

    @property
    def da(self) -> np.ndarray:
        """The deployed DA matchings ``(k_d, n)``: entry ``[i, s]`` is the ToR that DA
        port ``k_s + i`` of ``s`` reaches (-1: none)."""
        return self._da.copy()

    @property
    def usable(self) -> np.ndarray:
        """The DA links the routing uses now (a changed link only after δ)."""
        return self._usable.copy()

    def _circuits(self, da: np.ndarray) -> list[Circuit]:
        out = topology.de_bruijn(self.b, self.d)
        out += [Circuit(s, self.b + i, int(t), self.b + i, None, True)
                for i, row in enumerate(da.tolist()) for s, t in enumerate(row) if t >= 0]
        return out

    def _configure(self, seed: int) -> None:
        """The configuration at t = 0 for a run with ``seed``: Greedy-DA on an empty demand
        (DA links parallel to static ones where possible, the rest at random), installed
        before the run starts (no reconfiguration delay)."""
        n = self.config.nodes
        self._rng = stream(seed, "duo.greedy_da")
        if self.da_mode == "dist":
            # DistDA: no DA link until a PortApprove sets one
            self._da = np.full((self.k_d, n), -1, dtype=np.int64)
        else:
            self._da = debruijn.greedy_da(np.zeros((n, n), dtype=np.int64), self.k_d, None, self.static, self._rng,
                                          v_th=float(self.v_th))
        self._usable = self._da.copy()
        self.deploy_topo(self._circuits(self._da))
        succ = np.vstack([self.static, self._usable])
        self._lpm = debruijn.build_tables(self.static if self.segregated else succ, self.b, self.d)
        self._rows: dict[int, np.ndarray] = {v: self._node_rows(v) for v in range(n)}
        # compiled tables {node: [Entry]} (checked entry by entry; the annotation lists paths only)
        tables = {v: self._entries(v) for v in range(n)}
        self.deploy_routing(tables, multipath=self._multipath)  # type: ignore[arg-type]

    def _node_rows(self, v: int) -> np.ndarray:
        """Node ``v``'s time-flow rows as an int64 array of (src or -1, dst, port)."""
        per_dst = debruijn.compile_entries(self._lpm[v])
        rows = [(-1, t, p) for t, ports in enumerate(per_dst) for p in ports if p != debruijn.LOCAL]
        if self.segregated:
            # a DA link serves only the flows it joins directly: exact-source rows win over
            # the wildcard static rows for packets that start at v
            rows += [(v, int(t), self.b + i) for i, t in enumerate(self._usable[:, v].tolist()) if t >= 0]
        return np.array(rows, dtype=np.int64).reshape(-1, 3)

    def _entries(self, v: int) -> list[Entry]:
        return [Entry(None, None if s < 0 else s, t, None, p) for s, t, p in self._rows[v].tolist()]

    def _table_columns(self) -> dict[str, np.ndarray]:
        """The engine's table columns from the per-node rows (numpy; the reference
        compiler's output, without the per-entry Python work)."""
        parts = [self._rows[v] for v in sorted(self._rows)]
        counts = [len(r) for r in parts]
        rows = np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.int64)
        node = np.repeat(np.arange(len(parts), dtype=np.int64), counts)
        cols = {"tf_node": node, "tf_arr": np.full(len(node), -1, dtype=np.int64), "tf_src": rows[:, 0].copy(),
                "tf_dst": rows[:, 1].copy(), "tf_dep": np.full(len(node), -1, dtype=np.int64),
                "tf_port": self.port_offset[node] + rows[:, 2]}
        if self._manual:
            w = lambda x: -1 if x is None else x  # noqa: E731
            extra = {"tf_node": [n for n, _ in self._manual], "tf_arr": [w(e.arr_ts) for _, e in self._manual],
                     "tf_src": [w(e.src) for _, e in self._manual], "tf_dst": [e.dst for _, e in self._manual],
                     "tf_dep": [w(e.dep_ts) for _, e in self._manual],
                     "tf_port": [self.gport(n, e.port) for n, e in self._manual]}
            cols = {k: np.concatenate([v, np.asarray(extra[k], dtype=np.int64)]) for k, v in cols.items()}
        return cols

    def _update_routes(self, changes: list[tuple[int, int, int | None]]) -> set[int]:
        """Apply DA port changes ``(node, da index, new neighbour or None)`` to the routing
        of the nodes concerned only (local control): their LPM tables (Duo, one port at a
        time, :func:`opendcn.fabrics.debruijn.update_port`) or direct rows (SEGR). Returns the
        nodes whose tables changed."""
        dirty: set[int] = set()
        for s, i, t in changes:
            self._usable[i, s] = -1 if t is None else t
            if not self.segregated:
                self._lpm[s] = debruijn.update_port(self._lpm[s], self.b + i, t)
            dirty.add(s)
        for s in dirty:
            self._rows[s] = self._node_rows(s)
            self._compiled[s] = self._entries(s)
        return dirty

    def _install(self, live: _Live) -> None:
        try:
            live.sim.set_tables(self._table_columns())
        except _core.EngineSpecError as e:
            raise _engine_error(e) from None

    # ------------------------------------------------------------------ running
    def start(self, workload: Any, duration: Any, seed: int = 1, *, collect_tm: bool = False) -> None:
        """Configure the DA links of t = 0 for this run's seed, then build the engine."""
        from ..network.network import check_run_args

        _, seed = check_run_args(duration, seed)
        self._configure(seed)
        self._records = []
        self._dist = None
        super().start(workload, duration, seed, collect_tm=collect_tm)

    def _advance(self, live: _Live, progress: bool) -> None:
        if self.da_mode == "dist":
            self._advance_dist(live, progress)
        else:
            self._advance_greedy(live, progress)

    def _run_to(self, live: _Live, t: int) -> None:
        """Run the engine to ``t``, stopping at the warm-up's end on the way to take the
        counters the steady-state metrics start from."""
        sim = live.sim
        w = self.warmup
        if self._snap is None and 0 < w <= t and w < live.duration and sim.now <= w:
            run_chunked(sim, w, self._tick)
            if sim.stopped:
                return
            self._avail_step(w)
            o = sim.output()
            self._snap = {"t_ps": int(w), "hops_class": [list(r) for r in o["delivered_by_hops_class"]],
                          "avail": list(self._avail[:2])}
        run_chunked(sim, t, self._tick)

    def _advance_greedy(self, live: _Live, progress: bool) -> None:
        """Greedy-DA inside simulated time: step the engine one update period ρ at a time;
        at every t = kρ read the demand, compute the new DA matchings, take the changed
        links out of the routing and reconfigure them (dark until t + δ, packets queued on
        them dropped), and at t + δ route over the new links."""
        sim = live.sim
        end = live.duration
        bar = _Progress(end, self.arch) if progress else None
        # the bar moves with every call of the engine (about 0.2 s of wall time), not only
        # once per update period rho, so it shows an ETA
        self._tick = bar.update if bar else None
        self._avail = [0, 0, 0, int((self._usable >= 0).sum()), int((self._da >= 0).sum())]
        self._snap = None
        t = (sim.now // self.rho + 1) * self.rho  # the first update after the engine's clock
        while t < end and not sim.stopped:
            self._run_to(live, t)
            if bar:
                bar.update(t)
            if sim.stopped:
                break
            changes = self._reconfigure(live, t)
            up = t + self.delta
            if changes and up < min(t + self.rho, end):
                self._run_to(live, up)
                if sim.stopped:
                    break
                self._activate(live, up, changes)
            t += self.rho
        self._run_to(live, end)
        self._finish_advance(live, bar)

    # ------------------------------------------------------------------ DistDA
    def _static_path(self, a: int, b: int) -> list[int]:
        """The global ports of the static de Bruijn route from ToR ``a`` to ToR ``b``
        (greedy routing over the static links only: DistDA's messages take it)."""
        key = (a, b)
        got = self._msg_paths.get(key)
        if got is None:
            got, v = [], a
            while v != b:
                port = debruijn.lookup(self._static_lpm[v], b)[0]
                got.append(self.gport(v, port))
                v = int(self.static[port, v])
            self._msg_paths[key] = got
        return got

    def _advance_dist(self, live: _Live, progress: bool) -> None:
        """DistDA inside simulated time: every elephant period the destinations sample
        their receive-rate filters; the engine stops at every delivery of a PortRequest,
        PortApprove or DeclineRequest so the agents answer at that instant; a link set at
        t is routed over from t + δ."""
        sim = live.sim
        end = live.duration
        bar = _Progress(end, self.arch) if progress else None
        self._tick = bar.update if bar else None
        self._static_lpm = debruijn.build_tables(self.static, self.b, self.d)
        self._msg_paths: dict[tuple[int, int], list[int]] = {}
        header = int(self._transport.ctrl_bytes)
        acts: list[tuple[int, list[tuple[int, int, int]]]] = []     # (time, links to route over)

        def send(src: int, dst: int, tag: int) -> None:
            try:
                sim.send_message(src, dst, tag, header, self._static_path(src, dst))
            except _core.EngineSpecError as e:
                raise _engine_error(e) from None

        def set_links(changes: list[tuple[int, int, int | None]]) -> None:
            now = int(sim.now)
            self._avail_step(now)
            new = [(s, i, t) for s, i, t in changes if t is not None]
            if self.delta == 0:
                self._update_routes(changes)
            else:
                # the routing stops using the changed ports now, takes the new links at t + δ
                self._update_routes([(s, i, None) for s, i, _ in changes])
                acts.append((now + self.delta, new))
            self._install(live)
            self._da = ctl.da.copy()
            self.deploy_topo(self._circuits(self._da), queued="drop", at=now)
            self._avail_step(now)

        ctl = distda.DistDA(self.config.nodes, self.k_d, self.dist_params, send, set_links)
        self._dist = ctl
        self._avail = [0, 0, 0, int((self._usable >= 0).sum()), int((self._da >= 0).sum())]
        period = self.dist_params.period
        sim.count_received(self.dist_params.larger_than)
        next_sample = (sim.now // period + 1) * period
        while not sim.stopped:
            t = min(next_sample, ctl.next_timer(), min((a for a, _ in acts), default=end), end)
            if sim.run_until(t):
                now = int(sim.now)
                for m in sim.take_messages():
                    ctl.on_message(now, int(m[2]), int(m[3]), int(m[4]), int(m[6]), int(m[7]))
                continue
            now = int(sim.now)
            if sim.stopped or now >= end:
                break
            if bar:
                bar.update(now)
            for a, links in [x for x in acts if x[0] <= now]:
                acts.remove((a, links))
                # a link replaced within δ is not routed over
                live_links: list[tuple[int, int, int | None]] = [(s, i, d) for s, i, d in links
                                                                 if int(self._da[i, s]) == d]
                if live_links:
                    self._avail_step(now)
                    self._update_routes(live_links)
                    self._install(live)
                    self._avail_step(now)
            ctl.on_timers(now)
            if now >= next_sample:
                rx = np.zeros((self.config.nodes, self.config.nodes), dtype=np.int64)
                for a_, b_, by, _ in sim.take_received():
                    rx[a_, b_] += by
                ctl.sample(now, rx)
                next_sample += period
        self._finish_advance(live, bar)

    def _finish_advance(self, live: _Live, bar: "_Progress | None") -> None:
        """End of a controller loop: close the bar, account the links' availability up
        to the end (or the stop), take the last sample."""
        sim, end = live.sim, live.duration
        if bar:
            bar.close()
        self._avail_step(min(end, sim.now) if sim.stopped else end)
        self._end = int(sim.now) if sim.stopped else end
        if sim.stopped:
            live.duration = int(sim.now)
        if self.net_series:
            sim.final_sample()

    def _avail_step(self, now: int) -> None:
        a = self._avail
        a[0] += a[3] * (now - a[2])
        a[1] += a[4] * (now - a[2])
        a[2] = now
        a[3] = int((self._usable >= 0).sum())
        a[4] = int((self._da >= 0).sum())

    def _reconfigure(self, live: _Live, t: int) -> list[tuple[int, int, int]]:
        """One Greedy-DA step at time ``t``; returns the new links (node, index, neighbour)
        still to be routed over once they are up."""
        dem = self.demand()
        new = debruijn.greedy_da(dem, self.k_d, self._da, self.static, self._rng, v_th=float(self.v_th))
        changed = new != self._da
        idx, src = np.nonzero(changed)
        rec: dict[str, Any] = {"t_ps": t, "changed": int(len(src)), "kept": int((~changed & (new >= 0)).sum()),
                               "changed_ports": [(int(s), self.b + int(i)) for i, s in zip(idx.tolist(), src.tolist())],
                               "updated_nodes": sorted({int(s) for s in src.tolist()}),
                               "demand_pairs": int((dem > self.v_th).sum()),
                               "demand_links": int(((new >= 0) & (dem[np.arange(dem.shape[0]), np.maximum(new, 0)]
                                                                  > self.v_th)).sum()),
                               "routed_new_ps": None}
        self._records.append(rec)
        if not len(src):
            return []
        self._avail_step(t)
        pending = [(int(s), int(i), int(new[i, s])) for i, s in zip(idx.tolist(), src.tolist()) if new[i, s] >= 0]
        if self.delta == 0:
            self._update_routes([(int(s), int(i), None if new[i, s] < 0 else int(new[i, s]))
                                 for i, s in zip(idx.tolist(), src.tolist())])
            pending_now: list[tuple[int, int, int]] = []
            rec["routed_new_ps"] = t
        else:
            # the routing stops using the changed links now and takes the new ones at t + δ
            self._update_routes([(int(s), int(i), None) for i, s in zip(idx.tolist(), src.tolist())])
            pending_now = pending
        self._install(live)
        self._da = new
        self.deploy_topo(self._circuits(new), queued="drop", at=t)
        self._avail_step(t)
        return pending_now

    def _activate(self, live: _Live, now: int, changes: list[tuple[int, int, int]]) -> None:
        """At t + δ: route over the new links (only the nodes they leave from)."""
        self._avail_step(now)
        self._update_routes([(s, i, t) for s, i, t in changes])
        self._install(live)
        self._avail_step(now)
        self._records[-1]["routed_new_ps"] = now

    # ------------------------------------------------------------------ tables
    def lpm_tables(self) -> list[debruijn.LpmTable]:
        """Every ToR's greedy-routing table now (SEGR: the static ones; its direct DA rows
        are in :meth:`tables`)."""
        return list(self._lpm)

    def prefix_tables(self) -> dict[int, dict[str, Any]]:
        """Every ToR's LPM table in prefix form: ``{node: {"label", "entries": [{"prefix",
        "ports"}]}}`` (port -1: Local, the ToR's own hosts); SEGR adds its ``direct`` DA
        rows (destination label → port)."""
        out: dict[int, dict[str, Any]] = {}
        for v, t in enumerate(self._lpm):
            item: dict[str, Any] = {"label": debruijn.format_label(v, self.b, self.d),
                                    "entries": [{"prefix": pre, "ports": list(ports)}
                                                for pre, ports in debruijn.render_table(t)]}
            if self.segregated:
                item["direct"] = [{"dst": debruijn.format_label(int(w), self.b, self.d), "port": self.b + i}
                                  for i, w in enumerate(self._usable[:, v].tolist()) if w >= 0]
            out[v] = item
        return out

    def export_tables(self, path: str | os.PathLike[str], form: str = "flow") -> None:
        """Write every node's table as JSON: ``form="flow"`` the time-flow entries (as
        :meth:`Network.export_tables`), ``form="prefix"`` the LPM tables in prefix form
        (:meth:`prefix_tables`)."""
        if form == "flow":
            super().export_tables(path)
            return
        if form != "prefix":
            raise ConfigError("form", form, "expected flow or prefix")
        data = {str(v): t for v, t in self.prefix_tables().items()}
        _atomic_write(FsPath(path), json.dumps(data, indent=1))

    # ------------------------------------------------------------------ results
    def control_log(self) -> list[dict[str, Any]]:
        """Greedy-DA: one record per step of the last run: its time, the DA links changed
        and kept, the changed (node, port) pairs, the nodes whose tables were rebuilt, the
        ToR pairs with demand, the links serving one, and when the routing took the new
        links (``routed_new_ps``; None: no change, or the run ended first).

        DistDA: one record per agent action, in order (``t_ps``, ``event``): ``report``
        (destination ``dst`` reports source ``src`` as elephant, its ``rate_bps``),
        ``request`` (``rid``, the ``ports`` offered, ``try``), ``decline`` and ``renew`` /
        ``link`` (at the source: the link (src, dst, port) kept or set, and the link it
        replaced), ``approved`` / ``declined`` (the answer back at the destination, with
        the round trip ``rtt_ps``)."""
        if self.da_mode == "dist":
            return [dict(r) for r in (self._dist.log if self._dist else [])]
        return [dict(r) for r in self._records]

    def _arch_result(self, result: Result, o: dict[str, Any]) -> None:
        am = result.summary["arch_metrics"]
        am.update(common_metrics(self, result, o, self.da_ports))
        # packets whose ToR port was reconfigured while they crossed their host link: the
        # ToR forwarded them by its tables on arrival (SEGR then never takes a DA link that
        # is not the flow's own)
        am["rerouted_at_tor"] = int(o.get("rerouted_at_tor", 0))
        end = self._end
        if self.da_mode == "dist":
            self._dist_result(result, o)
            return
        # achieved duty cycle: over the update periods in which links changed, the share of
        # the period in which the routing used the new links
        up = total = 0
        for r in self._records:
            if not r["changed"]:
                continue
            stop = min(r["t_ps"] + self.rho, end)
            total += stop - r["t_ps"]
            if r["routed_new_ps"] is not None:
                up += max(0, stop - r["routed_new_ps"])
        steps = len(self._records)
        am["greedy_da"] = {
            "steps": steps, "steps_with_changes": sum(1 for r in self._records if r["changed"]),
            "links_changed": sum(r["changed"] for r in self._records),
            "mean_links_changed": sum(r["changed"] for r in self._records) / steps if steps else 0.0,
            "mean_links_kept": sum(r["kept"] for r in self._records) / steps if steps else 0.0,
            "mean_demand_links": sum(r["demand_links"] for r in self._records) / steps if steps else 0.0,
            "reconfiguration_drops_bytes": int(result.summary["drops"].get("reconfiguration", 0)),
        }
        am["duty_cycle"] = up / total if total else 1.0
        self._link_metrics(result)
        if self._snap is not None:
            am["after_warmup"] = self._steady_metrics(result, o)

    def _steady_metrics(self, result: Result, o: dict[str, Any]) -> dict[str, Any]:
        """The path mix, mean path length, link use and duty cycle over [warm-up, end]:
        the engine's counters at the end less those at the warm-up's end (exact), the
        per-port transmit counters of the time series after it, and the update periods
        that start after it."""
        assert self._snap is not None
        w, end = self._snap["t_ps"], self._end
        hosts = self.config.hosts_per_node > 0
        now = o.get("delivered_by_hops_class") or []
        then = self._snap["hops_class"]
        diff = [[int(a) - int(then[h][c]) if h < len(then) else int(a) for c, a in enumerate(row)]
                for h, row in enumerate(now)]
        pc = path_classes({"delivered_by_hops_class": diff}, hosts)
        tot = sum(sum(r) for r in diff)
        mean = (sum(max(h - (1 if hosts else 0), 0) * sum(r) for h, r in enumerate(diff)) / tot) if tot else None
        out: dict[str, Any] = {"from_ps": w, "to_ps": end, "mean_path_length": mean, **pc}
        up = total = 0
        for r in self._records:
            if not r["changed"] or r["t_ps"] < w:
                continue
            stop = min(r["t_ps"] + self.rho, end)
            total += stop - r["t_ps"]
            if r["routed_new_ps"] is not None:
                up += max(0, stop - r["routed_new_ps"])
        out["duty_cycle"] = up / total if total else 1.0
        out["periods"] = sum(1 for r in self._records if r["t_ps"] >= w)
        a0, a1 = self._snap["avail"]
        out["da_link_availability"] = ((self._avail[0] - a0) / (self._avail[1] - a1)
                                       if self._avail[1] > a1 else 1.0)
        ts = result.timeseries
        if ts.num_rows:
            t = np.asarray(ts["time_ps"])
            node = np.asarray(ts["node"])
            port = np.asarray(ts["port"])
            tx = np.asarray(ts["tx_bytes"])
            after = (t > w) & (node >= 0)
            n = self.config.nodes
            span = (end - w) / 1e12
            cap = float(self.config.link_rate) / 8 * span
            for name, sel, k in (("static", after & (port < self.da_ports.start), self.da_ports.start),
                                 ("demand_aware", after & (port >= self.da_ports.start) & (port < self.da_ports.stop),
                                  len(self.da_ports))):
                out.setdefault("link_utilisation", {})[name] = float(tx[sel].sum()) / (cap * n * k) if cap and k else None
        return out

    def _link_metrics(self, result: Result) -> None:
        am = result.summary["arch_metrics"]
        end = self._end
        k_links = self.k_d * self.config.nodes
        # the share of the deployed DA links' time in which the routing used them (kept links
        # never go dark, so this is at least the duty cycle)
        am["da_link_availability"] = self._avail[0] / self._avail[1] if self._avail[1] else 1.0
        am["da_ports_linked"] = self._avail[1] / (k_links * end) if k_links and end else 0.0
        sizes = debruijn.table_sizes(self._lpm)
        am["table_entries"] = {"max": int(sizes.max()), "mean": float(sizes.mean()),
                               "rows_max": int(max(len(r) for r in self._rows.values()))}
        result.spec_info.update(de_bruijn={"b": self.b, "d": self.d}, da_final=self._da.tolist())

    def _dist_result(self, result: Result, o: dict[str, Any]) -> None:
        """DistDA's metrics: what the agents did, its messages and their round trips."""
        am = result.summary["arch_metrics"]
        ctl = self._dist
        log = ctl.log if ctl else []
        rtts = [r["rtt_ps"] for r in log if r["event"] in ("approved", "declined")]
        m = o.get("messages", {})
        am["dist_da"] = {
            **(ctl.counts if ctl else {}),
            "messages": {k: int(v) for k, v in m.items()},
            "answer_rtt_us": {"count": len(rtts), "mean": float(np.mean(rtts)) / 1e6 if rtts else None,
                              "max": max(rtts) / 1e6 if rtts else None},
            "links_at_end": int((self._da >= 0).sum()),
            "reconfiguration_drops_bytes": int(result.summary["drops"].get("reconfiguration", 0)),
        }
        # no update period: the duty cycle is the share of the DA links' time routed over
        am["duty_cycle"] = None
        self._link_metrics(result)


class _Progress:
    """A progress bar over simulated time (rich), advanced by the control loop."""

    def __init__(self, end: int, label: str):
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn(f"[bold]{label}[/bold]"), BarColumn(), TextColumn("{task.fields[simt]}"),
                            TimeRemainingColumn(), transient=True)
        self.bar.start()
        self.task = self.bar.add_task("run", total=end, simt="0 us")

    def update(self, t: int) -> None:
        self.bar.update(self.task, completed=t, simt=f"{t / 1e6:,.0f} us simulated")

    def close(self) -> None:
        self.bar.stop()


@register("duo", "Duo: de Bruijn backbone + demand-aware links, greedy LPM routing, Greedy-DA every rho",
          DuoOptions, tiny={"nodes": 8})
def build_duo(o: DuoOptions) -> DuoNetwork:
    net = DuoNetwork(o)
    o.apply_failures(net)
    return net


@register("segr", "SEGR: Duo's fabric and Greedy-DA, DA links only for the flows they join directly",
          DuoOptions, tiny={"nodes": 8})
def build_segr(o: DuoOptions) -> DuoNetwork:
    net = DuoNetwork(o, segregated=True)
    o.apply_failures(net)
    return net


# ---------------------------------------------------------------------------------------
# EXP: a static expander with k-shortest paths
# ---------------------------------------------------------------------------------------
def expander_matchings(n: int, k: int, seed: int) -> np.ndarray:
    """``k`` random directed perfect matchings without self-loops as an int64 array
    ``(k, n)`` (entry ``[i, v]``: the node egress port ``i`` of ``v`` reaches), redrawn
    until their union is strongly connected.

    >>> m = expander_matchings(8, 3, 1)
    >>> m.shape, bool((m != np.arange(8)).all())
    ((3, 8), True)
    """
    if n < 2:
        raise ConfigError("--nodes", n, "an expander needs at least 2 ToRs")
    rng = stream(seed, "exp.matchings")
    for _ in range(1000):
        rows = []
        for _ in range(k):
            while True:
                p = rng.permutation(n)
                if not (p == np.arange(n)).any():
                    rows.append(p)
                    break
        m = np.array(rows, dtype=np.int64)
        if _strongly_connected(m):
            return m
    raise ConfigError("--topology-seed", seed, f"no strongly connected {k}-regular expander on {n} ToRs found")


def _strongly_connected(m: np.ndarray) -> bool:
    n = m.shape[1]
    for succ in (m, np.argsort(m, axis=1)):  # forward edges, then reversed
        seen = np.zeros(n, dtype=bool)
        seen[0] = True
        frontier = np.array([0])
        while len(frontier):
            nxt = np.unique(succ[:, frontier].ravel())
            nxt = nxt[~seen[nxt]]
            seen[nxt] = True
            frontier = nxt
        if not seen.all():
            return False
    return True


def k_shortest_paths(succ: np.ndarray, k: int) -> dict[tuple[int, int], list[list[tuple[int, int]]]]:
    """The ``k`` shortest loop-free paths of every ordered pair of a directed multigraph
    given as successor rows ``succ[port, node]``: ``{(s, t): [[(node, port), ...], ...]}``.

    Paths are port sequences (parallel links are distinct paths), listed by hop count,
    then in depth-first order over ascending ports; a pair with fewer than ``k`` loop-free
    paths gets all of them. Each length is enumerated with a distance bound towards ``t``,
    so the work is proportional to the paths kept.

    >>> ring = np.array([[1, 2, 3, 0], [3, 0, 1, 2]])        # port 0 clockwise, 1 back
    >>> k_shortest_paths(ring, 2)[(0, 2)]
    [[(0, 0), (1, 0)], [(0, 1), (3, 1)]]
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigError("k", k, "must be an integer >= 1")
    ports, n = succ.shape
    rows = succ.tolist()
    out_edges = [[(p, rows[p][v]) for p in range(ports) if rows[p][v] >= 0 and rows[p][v] != v] for v in range(n)]
    preds: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for _, w in out_edges[v]:
            preds[w].append(v)
    out: dict[tuple[int, int], list[list[tuple[int, int]]]] = {}
    for t in range(n):
        # hops from every node to t (reverse BFS)
        dist = [-1] * n
        dist[t] = 0
        frontier = [t]
        while frontier:
            nxt = []
            for w in frontier:
                for v in preds[w]:
                    if dist[v] < 0:
                        dist[v] = dist[w] + 1
                        nxt.append(v)
            frontier = nxt
        for s in range(n):
            if s == t or dist[s] < 0:
                continue
            got: list[list[tuple[int, int]]] = []
            length = dist[s]
            while len(got) < k and length < n:
                _paths_of_length(s, t, length, out_edges, dist, k - len(got), got)
                length += 1
            out[(s, t)] = got
    return out


def _paths_of_length(s: int, t: int, length: int, out_edges: list[list[tuple[int, int]]], dist: list[int],
                     want: int, got: list[list[tuple[int, int]]]) -> None:
    """Append up to ``want`` loop-free s→t paths of exactly ``length`` hops (DFS order)."""
    start = len(got)
    path: list[tuple[int, int]] = []
    on = {s}

    def dfs(v: int, left: int) -> bool:
        if left == 0:
            if v == t:
                got.append(list(path))
                return len(got) - start >= want
            return False
        for p, w in out_edges[v]:
            if w in on or dist[w] < 0 or dist[w] > left - 1 or (w == t and left > 1):
                continue
            path.append((v, p))
            on.add(w)
            if dfs(w, left - 1):
                return True
            on.discard(w)
            path.pop()
        return False

    dfs(s, length)


class ExpNetwork(Network):
    """A ready EXP network: a static directed expander of ``uplinks`` random matchings,
    k-shortest-path source routes with one path per flow (per-flow hash among the
    pair's k paths, chosen when the flow's first packet leaves its ToR), Duo's
    transports and queues."""

    def __init__(self, o: ExpOptions):
        super().__init__(_config(o), arch="exp")
        n, k = o.nodes, o.uplinks
        self.matchings = expander_matchings(n, k, o.topology_seed)
        self.deploy_topo([Circuit(v, i, int(w), i, None, True)
                          for i, row in enumerate(self.matchings.tolist()) for v, w in enumerate(row)])
        self.k_paths = o.k_paths
        ksp = k_shortest_paths(self.matchings, o.k_paths)
        self.paths = [Path(s, t, None, tuple(Hop(v, p, None) for v, p in hops))
                      for (s, t), ps in sorted(ksp.items()) for hops in ps]
        self.deploy_routing(self.paths, lookup="source", multipath="flow")
        _setup_ports(self, o)
        lengths = np.array([len(p.hops) for p in self.paths])
        self.arch_metrics.update(_fabric_metrics(o), k_paths=o.k_paths, topology_seed=o.topology_seed,
                                 routing="k shortest paths, one per flow (hash)",
                                 paths={"count": len(self.paths), "mean_hops": float(lengths.mean()),
                                        "max_hops": int(lengths.max())})

    def _arch_result(self, result: Result, o: dict[str, Any]) -> None:
        result.summary["arch_metrics"].update(common_metrics(self, result, o, None))
        result.spec_info.update(matchings=self.matchings.tolist())


@register("exp", "EXP: static directed expander of random matchings, k-shortest paths, one path per flow",
          ExpOptions, tiny={"nodes": 8})
def build_exp(o: ExpOptions) -> ExpNetwork:
    net = ExpNetwork(o)
    o.apply_failures(net)
    return net


__all__ = ["DuoOptions", "ExpOptions", "DuoNetwork", "ExpNetwork", "FCT_BUCKETS", "common_metrics",
           "expander_matchings", "k_shortest_paths", "parse_weights", "transport_rule"]
