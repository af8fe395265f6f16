"""Opera (NSDI'20) on the packet engine: one round robin on U rotor uplinks with staggered
reconfiguration, so that at every instant the ToRs form an expander; low-latency flows (<
``--cutoff``) are source-routed over a shortest path of the current slice with NDP (trimming
to headers, header/control priority, receiver pull pacing, initial window, return-to-sender);
bulk flows use RotorLB (direct when connected, two-hop VLB otherwise, host-side buffering).
``--paths K`` keeps up to K shortest paths per ToR pair and slice and draws one per packet,
as opera-sim does with its k-shortest path file (its published Figure 8-10 runs: 5 paths,
Figure 7: 1; see ``opendcn_core::expander`` for what opera-sim does, file by file).

It is an ordinary :class:`~opendcn.network.Network` built the OpenOptics way:
``deploy_topo`` with the rotor circuits of every superslice, ``deploy_routing("expander")``,
``transport("ndp<15MB,rotorlb")`` and a three-class trimming discipline on every port
(headers and control, NDP data, bulk) — all engine features any design can use.

Defaults are the paper's configuration: 108 ToRs x 6 rotor uplinks x 6 hosts (648
hosts), 10 Gb/s links, 500 ns per ToR-ToR hop, 1500 B packets (64 B header), 8-packet
queues, NDP initial window 20, cutoff 15 MB, reconfiguration r = 10 us, and the slice
timing of Opera's topology generator: eps = (h - 1)(p + 8 s) + 7 s for the longest
shortest path h, delta = p + s, superslice = eps + delta + r. The matchings are Opera's own
108 (``--matchings opera``, shipped with provenance in ``data/opera/SOURCES.md``) or, for
other sizes, a seeded 1-factorization (``--matchings generate``) or a file in the same
format.

Timing on the engine's schedule: superslice j is schedule slice j, whose first r is the
guardband of the rotor that takes its new matching there. A packet first routed at time t
follows the paths of the slice containing t - r: during the guardband of slice j it uses
slice j - 1's paths, which avoid exactly the rotor being reconfigured (Opera's rule that a
superslice's paths skip the rotor that reconfigures at its end, shifted by r).

``--flows-file`` reads the Opera/htsim trace format (``src_host dst_host bytes start_ns``)
unchanged; ``--stop-when ndp-done`` ends the run as soon as every flow has started and
every low-latency flow has finished (the paper's traces are replayed that way).

``Result.timeseries`` (every ``--sample-interval``, default 10 us, and at the end of the
run): one row per watched port (``--watch`` / ``net.watch``; ports 0..U-1 are the rotor
uplinks, U.. the host downlinks) with the bytes queued there and the bytes it sent in the
interval, read with ``net.buffer_usage(node, port)`` / ``net.bw_usage(node, port)``; and one
network-wide row per sample (node = port = -1) with queued/sent bytes over all ports,
trims, bounces, delivered bytes, congestion events, push-back messages and the bulk bytes
held at hosts.

OpenOptics services: ``--congestion-detection`` counts NDP data packets that find their
port's data class full (Opera trims them as always); ``--pushback`` also tells the source
ToR, whose hosts hold data for that destination ToR for the rest of the superslice.
``--flow-pausing`` (RotorLB already holds bulk flows at hosts until their circuit is up),
``--queue-estimation eqo`` and ``--buffer-offload`` (no calendar queues in Opera's ports)
are refused with a ConfigError saying why.

Side by side with the bespoke Opera engine this replaced (same fabric, traces until every
NDP flow is done): receiver-side FCTs of flows < 100 KB, p50/p90/p99, 5.4/13.0/16.4 us on
both for ``dm10_first50ms`` (NDP flows only) and 57.2/142.0/258.2 us here vs 58.2/145.5/253.1
there for ``ws10_first50ms``; see the issue notes for the full comparison and timings.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

import numpy as np

from .. import _core
from ..fabrics.topology import opera_matchings
from ..network.config import Config
from ..errors import ConfigError
from ..network.network import Network, Result, _engine_error
from ..network.timeflow import Circuit
from ..network.transport import parse_rule
from .options import AutoSize, AutoTime, FailureOptions, Float, Int, Rate, ServiceOptions, Size, Time, check_rule, opt
from . import register

DECISIONS = [
    "timing: superslice = eps + delta + r (Opera generator); on the engine's schedule the rotor "
    "taking a new matching is down for the first r of its slice; paths of a slice avoid the rotor "
    "that changes at the next boundary, and a packet routed during a guardband uses the previous "
    "slice's paths",
    "routing: source route fixed at the first ToR from that slice's shortest paths (one path per "
    "pair, BFS order); a packet whose next circuit is down, changed or would go down before its "
    "last bit is re-routed at that ToR over the current slice (never sent into it)",
    "ports: three strict-priority classes, headers and control (--header-queue bytes, default "
    "the data queue's bytes, as opera-sim), NDP data (--queue full packets; a data packet that "
    "finds it full is trimmed to its header) and bulk (RotorLB, bounded by its own pacing)",
    "NDP receiver: one pull pacer per host (--pull-pacer flow: per flow, as opera-sim) allowing one "
    "pull per full-packet time at the host link rate x --pull-rate; ACKs/NACKs sent at once, "
    "pulls as separate control packets",
    "NDP loss: a header finding the header class full returns to its sender, which resends; "
    "a dropped control packet is recovered by the flow's timeout --rto",
    "RotorLB: offer/accept per host pair of the ToR pair the newly configured rotor connects, "
    "when its new circuits come up, only while some host holds bulk data; a commitment of n "
    "packets is spread evenly over the hold ((U-1) x superslice + eps), at most 1/U of the NIC per "
    "rotor, lowest priority; a packet whose circuit no longer leads to its committed rack returns "
    "to its host (counted as packets dropped 'bulk_returned', nothing lost)",
    "a bulk flow whose hosts share a rack runs NDP through its ToR (RotorLB only moves data across "
    "rotor circuits); the flows column transport says what each flow ran",
    "time series: queued bytes = bytes waiting at a port (all classes, not the packet on the "
    "wire); --watch auto samples every port while ports x samples <= 2M rows, else only "
    "network-wide rows",
    "services: congestion = an NDP data packet finds its port's data class full (trimming is the "
    "response); push-back = one message per (port, source ToR, destination ToR) and superslice to "
    "the source ToR, arriving after one hop time per hop of the current path, whose hosts then "
    "hold data to that ToR until the superslice ends; flow pausing, EQO and buffer offloading "
    "refused (no meaning for Opera)",
    "FCT: last byte delivered at the receiver; flows column sender_fct_ps = when the sender held "
    "every ACK (what opera-sim prints; null for bulk flows)",
    "hop histograms: delivered data packets by ToR-to-ToR hops (bulk: a relayed packet counts "
    "both legs); the flows column hops counts the host downlink too",
]

#: the routing decision with --paths K > 1 (replaces DECISIONS[1])
DECISION_K_PATHS = (
    "routing: source route fixed at the first ToR from that slice's shortest paths: up to {k} per pair "
    "and slice (path 0 the BFS path, then Yen's order over the paths as short as the shortest, as "
    "opera-sim's k-shortest path file), one drawn uniformly per packet where it is first routed "
    "(opera-sim: per packet at the source NIC; a returned header draws again from the ToR returning "
    "it); a packet whose next circuit is down, changed or would go down before its last bit is "
    "re-routed at that ToR over the current slice (never sent into it), drawing again")


class OperaNetwork(Network):
    """A ready Opera network (a :class:`~opendcn.network.Network` with Opera's circuits,
    routing, transports and port disciplines installed); ``run(workload, duration, seed,
    ...)`` returns a Result. Flows run between hosts."""

    def __init__(self, o: OperaOptions):
        tors = o.nodes if o.tors is None else o.tors
        u, hpr = o.uplinks, o.hosts_per_tor
        if not 4 <= tors <= 256:
            raise ConfigError("--tors" if o.tors is not None else "--nodes", tors,
                              "must be 4..256 (the engine keeps every slice's shortest paths)")
        if u is None:
            u = next((d for d in (6, 5, 4, 3) if tors % d == 0), None)
            if u is None:
                raise ConfigError("--tors", tors, "no rotor count in 3..6 divides it; give --uplinks explicitly")
        if u < 2 or tors % u:
            raise ConfigError("--uplinks", u, f"must be >= 2 and divide --tors {tors}")
        if hpr < 1:
            raise ConfigError("--hosts-per-tor", hpr, "need at least one host per ToR")
        rate = o.link_rate
        pkt = o.mtu
        hdr = o.header
        if hdr <= 0:
            raise ConfigError("--header", o.header, "must be positive")
        if pkt <= hdr or pkt > 65_000:
            raise ConfigError("--mtu", o.mtu, f"must exceed the header ({hdr} B) and be at most 65000 B")
        if o.queue < 1:
            raise ConfigError("--queue", o.queue, "need at least one packet")
        hq = o.header_queue
        hi_cap = o.queue * pkt if hq is None else hq
        if hi_cap < hdr:
            raise ConfigError("--header-queue", hq, "must hold at least one header")
        if o.initial_window < 1:
            raise ConfigError("--initial-window", o.initial_window, "must be >= 1")
        if not 0 < o.pull_rate <= 100:
            raise ConfigError("--pull-rate", o.pull_rate, "must be in (0, 100]")
        reconf = o.reconfiguration
        if reconf <= 0:
            raise ConfigError("--reconfiguration", o.reconfiguration, "must be positive")
        rto = o.rto
        if rto <= 0:
            raise ConfigError("--rto", o.rto, "must be positive")
        sample = o.sample_interval
        if sample < 0:
            raise ConfigError("--sample-interval", o.sample_interval, "must be non-negative (0: no time series)")
        cutoff = o.cutoff
        rule = f"ndp<{_size_text(cutoff)},rotorlb" if str(o.transport).strip().lower() == "auto" else o.transport
        parse_rule(rule)  # a bad rule fails here, before the fabric is built
        which = o.matchings
        if which == "auto":
            which = "opera" if (tors, u) == (108, 6) else "generate"
        prop, host_prop = o.propagation, o.host_propagation
        ser = pkt * 8 * 10**12 // rate
        try:
            fab = _core.rotor_fabric(tors, u, opera_matchings(which, tors, u), int(o.matchings_seed),
                                     o.eps or 0, o.delta or 0, reconf, prop, ser, o.queue)
        except _core.EngineSpecError as e:
            raise _engine_error(e) from None
        d = int(fab["superslice_ps"])
        self.tors, self.u, self.hpr = tors, u, hpr
        self.superslice = d
        self.cutoff = cutoff
        self.matchings_source = which
        self.fabric_metrics = {
            "superslice_ps": d, "eps_ps": int(fab["eps_ps"]), "delta_ps": int(fab["delta_ps"]),
            # duty_cycle: the share of a superslice with every rotor up; link_duty_cycle: the
            # share of time one rotor link carries traffic (it is down for r once every u
            # superslices: the figure the Duo paper quotes for Opera, about 0.98)
            "reconf_ps": reconf, "cycle_ps": d * tors, "duty_cycle": 1 - reconf / d,
            "link_duty_cycle": 1 - reconf / (u * d),
            "max_path_hops": int(fab["max_path_hops"]),
            "rlb_hold_ps": (u - 1) * d + int(fab["eps_ps"]),
        }
        data_cap = o.queue * pkt
        bulk_cap = 64 * 10**6
        super().__init__(Config(nodes=tors, uplinks=u, link_rate=rate, propagation=prop,
                                hosts_per_node=hpr, host_link_rate=rate, host_propagation=host_prop,
                                slice=d, guardband=reconf, mtu=pkt - hdr, header=hdr,
                                buffer=hi_cap + data_cap + bulk_cap, sample_interval=sample), arch="opera")
        self.deploy_topo(_circuits(np.asarray(fab["peer"]).reshape(tors, tors, u)), slices=tors)
        self.deploy_routing("expander", paths_per_pair=o.paths)
        self.transport(rule, ndp_init_window=o.initial_window, ndp_rto=rto, ndp_queue=o.queue,
                       ctrl_bytes=hdr, pull_rate=o.pull_rate, pull_pacer=o.pull_pacer,
                       return_to_sender=o.return_to_sender,
                       pad_segments=o.pad_segments, bulk_slots=o.bulk_slots, nic_push=o.nic_push)
        self.port_discipline(None, classes=[hi_cap, data_cap, bulk_cap], trim=True)
        self.stop_when = o.stop_when
        self.net_series = sample > 0
        self._watch_opt = _parse_watch(o.watch, tors, u, hpr)
        self._watched: set[tuple[int, int]] = set()
        o.apply_services(self)
        o.apply_failures(self)
        self.paths = o.paths
        if o.paths > 1:
            # (absent with one path per pair: the summaries of --paths 1 stay as they were)
            self.arch_metrics["paths"] = o.paths
        self.arch_metrics.update(matchings=which, cutoff_bytes=cutoff, initial_window=o.initial_window,
                                 queue_pkts=o.queue, header_queue_bytes=hi_cap, transport_rule=rule,
                                 **self.fabric_metrics)

    # ------------------------------------------------------------------ services
    def services(self, **kw: Any) -> dict[str, Any]:
        """OpenOptics services on Opera (see the module doc): ``congestion_detection``
        counts NDP data packets that find their port's data class full (Opera's response
        is trimming, unchanged); ``pushback`` also tells the source ToR, whose hosts hold
        data for the congested destination ToR for the rest of the superslice.
        ``flow_pausing``, ``queue_estimation='eqo'`` and ``buffer_offload`` have no meaning
        on Opera and raise ConfigError."""
        before = dict(self._services)
        try:
            sv = super().services(**kw)
            if sv["flow_pausing"]:
                raise ConfigError("flow_pausing", True, "Opera already holds bulk flows (>= --cutoff) at their hosts "
                                  "until a direct circuit is up (RotorLB); choose which flows wait with --cutoff")
            if sv["elephant_bytes"] != before["elephant_bytes"]:
                raise ConfigError("elephant_threshold", kw.get("elephant_threshold"),
                                  "Opera classifies flows by size (--cutoff), not by PIAS flow aging")
            if sv["eqo_interval_ps"]:
                raise ConfigError("queue_estimation", "eqo", "Opera's ports are FIFO NDP classes whose exact "
                                  "occupancy decides trimming; there are no calendar queues to estimate")
            if sv["offload_queues"]:
                raise ConfigError("buffer_offload", sv["offload_queues"], "Opera's ports hold FIFO NDP classes, "
                                  "not per-slice calendar queues, and bulk data already waits on the hosts (RotorLB)")
        except ConfigError:
            self._services = before
            raise
        return sv

    # ------------------------------------------------------------------ monitoring
    def start(self, workload: Any, duration: Any, seed: int = 1, *, collect_tm: bool = False) -> None:
        """Choose the watched ports for this run (``--watch``), then build the engine."""
        from ..network.network import check_run_args

        duration_ps, _ = check_run_args(duration, seed)
        c = self.config
        if c.sample_interval <= 0:
            pairs: list[tuple[int, int]] = []
        elif self._watch_opt == "auto":
            samples = duration_ps // c.sample_interval + 1
            pairs = _all_ports(self) if self.n_ports * samples <= WATCH_AUTO_ROWS else []
        elif self._watch_opt == "all":
            pairs = _all_ports(self)
        else:
            pairs = list(self._watch_opt)
        if self._explicit_watch is None:
            self.watch_ports = np.array([self.gport(n, p) for n, p in pairs], dtype=np.int64)
            self._watched = set(pairs)
        super().start(workload, duration, seed, collect_tm=collect_tm)

    _explicit_watch: Any = None

    def watch(self, ports: Any) -> None:
        """Sample exactly these (node, port) pairs (None: back to ``--watch``)."""
        super().watch(ports)
        self._explicit_watch = None if ports is None else list(ports)
        if ports is not None:
            self._watched = {(int(n), int(p)) for n, p in ports}

    def _check_watched(self, node: int, port: int) -> None:
        self._last()
        if (node, port) not in self._watched:
            raise ConfigError("port", (node, port), "not sampled in the last run (see --watch / net.watch and "
                              "--sample-interval)")

    def buffer_usage(self, node: int, port: int, interval: Any = None) -> Any:
        self._check_watched(node, port)
        return super().buffer_usage(node, port, interval)

    def bw_usage(self, node: int, port: int, interval: Any = None) -> Any:
        self._check_watched(node, port)
        return super().bw_usage(node, port, interval)

    # ------------------------------------------------------------------ results
    def _arch_result(self, result: Result, o: dict[str, Any]) -> None:
        import pyarrow as pa

        from ..experiments.analysis import fct_stats

        flows = result.flows
        size = np.asarray(flows["size_bytes"], dtype=np.int64)
        tp = np.asarray(flows["transport"].to_pylist(), dtype=object)
        bulk = tp == "rotorlb"
        result.flows = flows = flows.append_column("bulk", pa.array(bulk))
        done = np.asarray(flows["completed"].to_numpy(zero_copy_only=False), dtype=bool)
        am = result.summary["arch_metrics"]
        pk = result.summary.get("packets", {})
        mice = result.summary["fct_us"].get("mice_threshold_bytes", 10_000)
        am["fct_us"] = fct_stats(flows, mice_threshold=mice,
                                 sizes={"low_latency": (0, self.cutoff), "bulk": (self.cutoff, float("inf")),
                                        "under_100KB": (0, 100_000)})
        am["low_latency_fct_us_percentiles"] = _percentiles(flows, ~bulk)
        am["small_fct_us_percentiles"] = _percentiles(flows, size < 100_000)
        am["sender_fct_us_percentiles"] = _percentiles(flows, size < 100_000, column="sender_fct_ps")
        ll = ~bulk & done
        # packets delivered by ToR-to-ToR hops (the engine counts the host downlink too)
        hist = [int(x) for x in o["delivered_pkts_by_hops"][1:]]
        while hist and hist[-1] == 0:
            hist.pop()
        am["ndp_hops_histogram"] = hist
        bh = [int(x) for x in o["bulk_pkts_by_hops"]]
        am["bulk_hops_histogram"] = {"direct": bh[2], "two_hop": bh[3], "more": int(sum(bh[4:]))}
        am.update(ndp_flows=int((~bulk).sum()), ndp_completed=int(ll.sum()), bulk_flows=int(bulk.sum()),
                  bulk_completed=int((bulk & done).sum()), stopped_early=int(bool(o.get("stopped", False))),
                  trims=int(pk.get("trims", 0)), bounces=int(pk.get("bounces", 0)),
                  retransmissions=int(pk.get("retransmitted", 0)), reroutes=int(o["reroutes"]),
                  rlb_slices=int(o["rlb_slices"]), rlb_committed_pkts=int(o["rlb_committed_pkts"]),
                  rlb_returns=int(o["rlb_returns"]), rlb_relayed_pkts=int(o["rlb_relayed_pkts"]),
                  rlb_host_bytes=int(o["rlb_host_bytes"]), decisions=self._decisions())
        result.spec_info.update(matchings=self.matchings_source, fabric=self.fabric_metrics)

    def _decisions(self) -> list[str]:
        if self.paths == 1:
            return DECISIONS
        return [DECISION_K_PATHS.format(k=self.paths) if i == 1 else d for i, d in enumerate(DECISIONS)]


#: --watch auto samples every port while ports x samples stays within this many rows
WATCH_AUTO_ROWS = 2_000_000


def _size_text(b: int) -> str:
    """A byte count as the shortest exact size with a unit (15000000 -> 15MB)."""
    for unit, k in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if b % k == 0:
            return f"{b // k}{unit}"
    return f"{b}B"


def _circuits(peer: np.ndarray) -> list[Circuit]:
    """The rotor circuits of every superslice: ``peer[slice, tor, rotor]`` is the ToR that
    rotor connects ``tor`` to (-1: none); rotor k is uplink k of both ToRs."""
    s_idx, a, k = np.nonzero(peer > np.arange(peer.shape[1])[None, :, None])
    b = peer[s_idx, a, k]
    return [Circuit(int(x), int(r), int(y), int(r), int(j)) for j, x, r, y in zip(s_idx, a, k, b)]


def _all_ports(net: OperaNetwork) -> list[tuple[int, int]]:
    return [(n, p) for n in range(net.tors) for p in range(net.u + net.hpr)]


def _parse_watch(v: Any, tors: int, u: int, hpr: int) -> Any:
    """--watch: auto, all, none, or node:port[,node:port...] (ports 0..U-1 uplinks, U.. hosts)."""
    s = str(v).strip().lower()
    if s in ("auto", "all"):
        return s
    if s == "none":
        return []
    pairs = []
    for item in s.split(","):
        try:
            node, port = (int(x) for x in item.split(":"))
        except ValueError:
            raise ConfigError("--watch", v, "expected auto, all, none or node:port[,node:port...]") from None
        if not (0 <= node < tors and 0 <= port < u + hpr):
            raise ConfigError("--watch", item, f"no such port (nodes 0..{tors - 1}, ports 0..{u + hpr - 1})")
        pairs.append((node, port))
    return pairs


def _percentiles(flows: Any, sel: np.ndarray, column: str = "fct_ps") -> dict[str, float]:
    done = np.asarray(flows["completed"].to_numpy(zero_copy_only=False), dtype=bool) & sel
    vals = flows[column]
    ok = ~np.asarray(vals.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    fct = np.asarray(vals.fill_null(0))[done & ok] / 1e6
    if len(fct) == 0:
        return {"count": 0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0}
    q = np.percentile(fct, [50, 90, 99, 99.9])
    return {"count": int(len(fct)), "p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2]),
            "p999": float(q[3]), "max": float(fct.max())}


class OperaOptions(ServiceOptions, FailureOptions):
    nodes: Int = opt(108, "number of ToRs (alias: tors)")
    tors: Int | None = opt(None, "number of ToRs")
    uplinks: Int | None = opt(None, "rotor uplinks per ToR (rotor switches); default the largest divisor of the "
                                    "ToR count in 3..6 (6 at 108 ToRs)")
    hosts_per_tor: Int = opt(6, "hosts below each ToR", ge=1)
    link_rate: Rate = opt("10Gbps", "rate of every link (host and ToR-ToR)", gt=0)
    propagation: Time = opt("500ns", "ToR-to-ToR propagation per hop")
    host_propagation: Time = opt("0ns", "host-to-ToR propagation (opera-sim: 0)")
    matchings: str = opt("auto", "rotor matchings: opera (Opera's 108x6), generate, or a file path; auto = "
                                 "opera at 108x6, else generate")
    eps: AutoTime = opt("auto", "epsilon part of a superslice (auto: longest path at full queues)")
    delta: AutoTime = opt("auto", "delta part of a superslice (auto: propagation + one packet)")
    reconfiguration: Time = opt("10us", "rotor reconfiguration time r", gt=0)
    mtu: Size = opt("1500B", "packet size on the wire, header included")
    header: Size = opt("64B", "header (and control packet) size", gt=0)
    queue: Int = opt(8, "NDP data queue per ToR port, in full packets", ge=1)
    paths: Int = opt(1, "shortest paths kept per ToR pair and slice, one drawn per packet (opera-sim's published "
                        "runs: 5 for Figures 8-10, 1 for Figure 7)", ge=1, le=16)
    header_queue: AutoSize = opt("auto", "header/control queue per port in bytes (auto: same bytes as the data "
                                         "queue)")
    cutoff: Size = opt("15MB", "flows of at least this size are bulk (RotorLB)")
    initial_window: Int = opt(20, "NDP initial window (packets)", ge=1)
    pull_rate: Float = opt(1.0, "receiver pull rate as a fraction of the host link rate", gt=0, le=100)
    pull_pacer: Literal["host", "flow"] = opt("host", "one pull pacer per receiving host (NDP) or per flow "
                                                      "(as opera-sim)")
    return_to_sender: bool = opt(True, "NDP: a header that finds the header queue full goes back to its sender "
                                       "(NDP's return-to-sender), else it is dropped")
    pad_segments: bool = opt(False, "every data packet of a flow of at least one MSS is a full MSS on the wire, "
                                    "its last one padded (as opera-sim's NDP)")
    bulk_slots: bool = opt(False, "the NIC serves RotorLB in full-packet slots while a host holds committed bulk "
                                  "packets, idle when none is due (as opera-sim's dummy packets): a low-latency "
                                  "packet waits for the slot in service")
    nic_push: bool = opt(False, "every 1 500 bytes of other traffic a host's NIC sends push one committed RotorLB "
                                "packet back to its queue (as opera-sim's RlbModule::NICpush)")
    rto: Time = opt("1ms", "NDP retransmission timeout (recovers dropped control packets)", gt=0)
    sample_interval: Time = opt("10us", "time-series sample interval (0: none)")
    watch: str = opt("auto", "ports sampled in the time series: auto (all while ports x samples <= 2M), all, "
                             "none, or node:port[,node:port...] (ports 0..U-1 rotor uplinks, U.. host downlinks)")
    transport: str = opt("auto", "transport rule by flow size (auto: 'ndp<CUTOFF,rotorlb', Opera's NDP below "
                                 "--cutoff and RotorLB above; e.g. ndp, ideal)")
    matchings_seed: Int = opt(1, "seed of generated matchings (--matchings generate)", ge=0)
    stop_when: Literal["duration", "ndp-done", "all-done"] = opt(
        "duration", "end the run at --duration, or once every flow started and every NDP flow (ndp-done) or "
        "every flow (all-done) finished")

    _rule = field_validator("transport")(check_rule)


@register("opera", "Opera: staggered rotors forming expander slices, NDP over multi-hop slice paths, RotorLB bulk",
          OperaOptions, tiny={"nodes": 8})
def build(o: OperaOptions) -> OperaNetwork:
    return OperaNetwork(o)
