"""Opera (NSDI'20): one round robin on U rotor uplinks with staggered reconfiguration, so
that at every instant the ToRs form an expander; low-latency flows (< ``--cutoff``) are
source-routed over multi-hop shortest paths of the current slice with NDP (trimming to
headers, header/control priority, receiver pull pacing, initial window, return-to-sender);
bulk flows use RotorLB (direct when connected, two-hop VLB otherwise, host-side buffering).

Defaults are the paper's configuration: 108 ToRs x 6 rotor uplinks x 6 hosts (648
hosts), 10 Gb/s links, 500 ns per ToR-ToR hop, 1500 B packets (64 B header), 8-packet
queues, NDP initial window 20, cutoff 15 MB, reconfiguration r = 10 us, and the slice
timing of Opera's topology generator: ε = (h - 1)(p + 8 s) + 7 s for the longest
shortest path h, δ = p + s, superslice = ε + δ + r. The matchings are Opera's own 108
(``--matchings opera``, shipped with provenance in ``data/opera/SOURCES.md``) or, for
other sizes, a seeded 1-factorization (``--matchings generate``) or a file in the same
format.

``--flows-file`` reads the Opera/htsim trace format (``src_host dst_host bytes start_ns``)
unchanged; ``--stop-when ndp-done`` ends the run as soon as every flow has started and
every low-latency flow has finished (the paper's traces are replayed that way).

``Result.timeseries`` (every ``--sample-interval``, default 10 us, and at the end of the
run): one row per watched ToR port (``--watch`` / ``net.watch``; ports 0..U-1 are the rotor
uplinks, U.. the host downlinks) with the bytes queued there and the bytes it sent in the
interval, read with ``net.buffer_usage(node, port)`` / ``net.bw_usage(node, port)``; and one
network-wide row per sample (node = port = -1) with queued/sent bytes over all ToR ports,
trims, bounces, delivered bytes, congestion events, push-back messages and the bulk bytes
held at hosts.

OpenOptics services: ``--congestion-detection`` counts data packets that find their ToR
data queue full (Opera trims them as always); ``--pushback`` also sends a push-back message
to the source ToR, whose hosts hold new NDP data for that destination ToR for the rest of
the superslice. ``--flow-pausing`` (RotorLB already holds bulk flows at hosts until their
circuit is up), ``--queue-estimation eqo`` and ``--buffer-offload`` (no calendar queues in
Opera's FIFO NDP ports) are refused with a ConfigError saying why.

The engine and its documented decisions are in ``crates/opendcn-core/src/opera``.

Side by side with Opera's own simulator (opera-sim, built out of tree, fed the same
matchings and paths) on ``ws10_first50ms`` until every NDP flow is done, sender-side FCTs
(``sender_fct_ps``, what opera-sim prints) of flows < 100 KB: p50/p99 60/261 us here vs
68/304 us there; all NDP flows p50/p99 157/15 475 us vs 177/15 849 us; on
``dm10_first50ms`` small flows p50/p99 7.4/19.2 us vs 8.1/20.2 us. Bulk (RotorLB) flows
finish ~10-15 % sooner here. Wall time 14-16 s vs 552 s, peak memory ~0.12 GB vs 2.4 GB.
"""

from __future__ import annotations

import os
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from ..config import Config
from ..errors import ConfigError
from ..network import FixedFabric, Result, _Cut, _engine_error, _Live, check_run_args, core_summary, flows_table
from ..units import parse_rate, parse_size, parse_time
from . import Option, apply_services, register, service_options

DECISIONS = [
    "timing: superslice = eps + delta + r (Opera generator); the reconfiguring rotor keeps its old "
    "matching during eps + delta and is down for r; paths of a superslice avoid it",
    "routing: source route fixed at the first ToR from the current superslice's shortest paths "
    "(one path per pair, BFS order); a packet whose next circuit is down, changed or would go down "
    "before its last bit is re-routed at that ToR over the current slice (never sent into it)",
    "NDP queues: data queue = --queue full packets; header/control queue = --header-queue bytes "
    "(default the same bytes, as opera-sim); trimming picks the arrival or the last queued packet "
    "with probability 1/2; headers/control served 640 B : 1500 B against data",
    "NDP receiver: one pull pacer per host (--pull-pacer flow: per flow, as opera-sim) allowing one "
    "pull per full-packet time at the host link rate x --pull-rate; ACK/NACK sent at once, carrying "
    "the pull when the pacer is free, else a PULL is queued (arrival order)",
    "NDP loss: a header finding the header queue full returns to its sender, which resends at once; "
    "a dropped control packet is recovered by a per-flow timeout --rto",
    "RotorLB: offer/accept per host pair of the ToR pair the newly configured rotor connects, "
    "at each superslice start, only while some host holds bulk data; a commitment of n packets is "
    "spread evenly over the hold, at most 1/U of the NIC per rotor, lowest priority; a packet whose circuit no longer leads to its committed rack "
    "returns to its host",
    "time series: queued bytes = bytes waiting at a port (data + header/control + bulk, not the packet on "
    "the wire); --watch auto samples every port while ports x samples <= 2M rows, else only network-wide rows",
    "services: congestion = an NDP data packet finds its ToR data queue full (trimming is the response); "
    "push-back = one message per (port, source ToR, destination ToR) and superslice to the source ToR, "
    "forwarded to its hosts, which hold new NDP data to that ToR until the superslice ends; flow pausing, "
    "EQO and buffer offloading refused (no meaning for Opera)",
    "FCT: last byte delivered at the receiver; flows column sender_fct_ps = when the sender held "
    "every ACK (what opera-sim prints)",
]


def _load_matchings(which: str, tors: int, uplinks: int) -> np.ndarray:
    """Matchings as a flat int64 array (rows k, entry tor*uplinks + rotor); empty = generate."""
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


def _time(o: dict[str, Any], key: str, auto: bool = False) -> int:
    v = o[key]
    flag = "--" + key.replace("_", "-")
    if auto and (v is None or str(v).strip().lower() == "auto"):
        return 0
    t = parse_time(v, flag)
    if t < 0:
        raise ConfigError(flag, v, "must be non-negative")
    return t


class OperaNetwork(FixedFabric):
    """A ready Opera network; ``run(workload, duration, seed, ...)`` returns a Result.
    Circuits (the rotor schedule) and routing (expander paths, RotorLB) are Opera's own;
    flows run between hosts."""

    engine = "opera"

    def __init__(self, **o: Any):
        tors = o["nodes"] if o["tors"] is None else o["tors"]
        u, hpr = o["uplinks"], o["hosts_per_tor"]
        if not 4 <= tors <= 256:
            raise ConfigError("--tors", tors, "must be 4..256 (the engine keeps every slice's shortest paths)")
        if u is None:
            u = next((d for d in (6, 5, 4, 3) if tors % d == 0), None)
            if u is None:
                raise ConfigError("--tors", tors, "no rotor count in 3..6 divides it; give --uplinks explicitly")
        if u < 2 or tors % u:
            raise ConfigError("--uplinks", u, f"must be >= 2 and divide --tors {tors}")
        if hpr < 1:
            raise ConfigError("--hosts-per-tor", hpr, "need at least one host per ToR")
        rate = parse_rate(o["link_rate"], "--link-rate")
        pkt = parse_size(o["mtu"], "--mtu")
        hdr = parse_size(o["header"], "--header")
        if hdr <= 0:
            raise ConfigError("--header", o["header"], "must be positive")
        if pkt <= hdr or pkt > 65_000:
            raise ConfigError("--mtu", o["mtu"], f"must exceed the header ({hdr} B) and be at most 65000 B")
        if o["queue"] < 1:
            raise ConfigError("--queue", o["queue"], "need at least one packet")
        hq = o["header_queue"]
        hi_cap = o["queue"] * pkt if hq in (None, "auto") else parse_size(hq, "--header-queue")
        if hi_cap < hdr:
            raise ConfigError("--header-queue", hq, "must hold at least one header")
        if o["initial_window"] < 1:
            raise ConfigError("--initial-window", o["initial_window"], "must be >= 1")
        if not 0 < o["pull_rate"] <= 100:
            raise ConfigError("--pull-rate", o["pull_rate"], "must be in (0, 100]")
        which = o["matchings"]
        if which == "auto":
            which = "opera" if (tors, u) == (108, 6) else "generate"
        self.tors, self.u, self.hpr = tors, u, hpr
        self.params = dict(
            tors=tors, uplinks=u, hosts_per_tor=hpr, matchings=_load_matchings(which, tors, u),
            link_rate_bps=rate, prop_ps=_time(o, "propagation"), host_prop_ps=_time(o, "host_propagation"),
            eps_ps=_time(o, "eps", True), delta_ps=_time(o, "delta", True), reconf_ps=_time(o, "reconfiguration"),
            packet_bytes=pkt, header_bytes=hdr, queue_pkts=o["queue"], hi_cap_bytes=hi_cap,
            cutoff_bytes=parse_size(o["cutoff"], "--cutoff"), initial_window=o["initial_window"],
            pull_rate=float(o["pull_rate"]), pull_pacer=o["pull_pacer"], rto_ps=_time(o, "rto"), stop=o["stop_when"])
        sample = parse_time(o["sample_interval"], "--sample-interval")
        if sample < 0:
            raise ConfigError("--sample-interval", o["sample_interval"], "must be non-negative (0: no time series)")
        self._watch_opt = _parse_watch(o["watch"], tors, u, hpr)
        if self.params["reconf_ps"] <= 0:
            raise ConfigError("--reconfiguration", o["reconfiguration"], "must be positive")
        if self.params["rto_ps"] <= 0:
            raise ConfigError("--rto", o["rto"], "must be positive")
        self.matchings_source = which
        # probe the fabric (validates the matchings, derives ε/δ and the longest path)
        probe = self._sim(dict(seed=1, sample_interval_ps=0, watch_ports=np.zeros(0, np.int64),
                               congestion_detection=False, pushback=False, flow_start_ps=np.zeros(0, np.int64), flow_src=np.zeros(0, np.int64),
                               flow_dst=np.zeros(0, np.int64), flow_size=np.zeros(0, np.int64)))
        m = probe.output()["metrics"]
        self.fabric_metrics = {k: (int(m[k]) if float(m[k]).is_integer() else float(m[k]))
                               for k in ("superslice_ps", "eps_ps", "delta_ps", "reconf_ps", "cycle_ps",
                                         "duty_cycle", "max_path_hops", "rlb_hold_ps", "rlb_max_pkts")}
        self.superslice = int(m["superslice_ps"])
        super().__init__(Config(nodes=tors, uplinks=u, link_rate=rate, propagation=self.params["prop_ps"],
                                hosts_per_node=hpr, host_link_rate=rate,
                                host_propagation=self.params["host_prop_ps"], slice=self.superslice,
                                guardband=self.params["reconf_ps"], mtu=pkt - hdr, header=hdr,
                                buffer=max(o["queue"] * pkt, pkt), sample_interval=sample), arch="opera")
        self._watched: set[tuple[int, int]] = set()
        apply_services(self, o)
        self.arch_metrics.update(matchings=which, cutoff_bytes=self.params["cutoff_bytes"],
                                 initial_window=o["initial_window"], queue_pkts=o["queue"],
                                 header_queue_bytes=hi_cap, **self.fabric_metrics)

    def _sim(self, extra: dict[str, Any]) -> Any:
        spec = dict(self.params)
        spec.update(extra)
        try:
            return _core.OperaSim(spec)
        except _core.EngineSpecError as e:
            raise _engine_error(e) from None

    # the fabric and routing are Opera's own
    _topo_reason = "Opera's circuits are its staggered rotor schedule"
    _routing_reason = "Opera routes over expander paths (NDP) and RotorLB"
    _start_reason = "Opera runs with net.run(...)"

    # ------------------------------------------------------------------ services
    def services(self, **kw: Any) -> dict[str, Any]:
        """OpenOptics services on Opera (see the module doc): ``congestion_detection``
        counts data packets that find their ToR data queue full (Opera's response is
        trimming, unchanged); ``pushback`` sends a push-back message from that ToR to the
        source ToR, whose hosts hold new NDP data for the congested destination ToR for
        the rest of the superslice. ``flow_pausing``, ``queue_estimation='eqo'`` and
        ``buffer_offload`` have no meaning on Opera and raise ConfigError."""
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
                raise ConfigError("queue_estimation", "eqo", "Opera's ToR ports are FIFO NDP queues whose exact "
                                  "occupancy decides trimming; there are no calendar queues to estimate")
            if sv["offload_queues"]:
                raise ConfigError("buffer_offload", sv["offload_queues"], "Opera's ToR ports hold one FIFO NDP queue, "
                                  "not per-slice calendar queues, and bulk data already waits on the hosts (RotorLB)")
        except ConfigError:
            self._services = before
            raise
        return sv

    # ------------------------------------------------------------------ monitoring
    def _engine_port(self, node: int, port: int) -> int:
        """Engine port id of (node, port): ports 0..U-1 are the rotor uplinks, U.. the hosts."""
        k = self.hpr + port if port < self.u else port - self.u
        return node * (self.u + self.hpr) + k

    def _watch_ids(self, duration_ps: int) -> np.ndarray:
        c = self.config
        if c.sample_interval <= 0:
            return np.zeros(0, dtype=np.int64)
        if self.watch_ports is not None:  # net.watch([...]): Network ids node*(U+H) + port
            ppt = self.u + self.hpr
            pairs = [(int(g) // ppt, int(g) % ppt) for g in self.watch_ports]
        elif self._watch_opt == "auto":
            n_ports = self.tors * (self.u + self.hpr)
            samples = duration_ps // c.sample_interval + 1
            pairs = _all_ports(self) if n_ports * samples <= WATCH_AUTO_ROWS else []
        elif self._watch_opt == "all":
            pairs = _all_ports(self)
        else:
            pairs = list(self._watch_opt)
        self._watched = set(pairs)
        return np.array([self._engine_port(n, p) for n, p in pairs], dtype=np.int64)

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

    def run(self, workload: Any, duration: Any = "1ms", seed: int = 1, *, progress: bool = False,
            out: str | os.PathLike[str] | None = None, mice_threshold: Any = 10_000) -> Result:
        """Run ``workload`` for at most ``duration`` of simulated time (less with
        ``--stop-when``) and return the result."""
        duration_ps, seed = check_run_args(duration, seed)
        mice = parse_size(mice_threshold, "mice_threshold")
        c = self.config
        flows = workload.generate(endpoints=c.endpoints, hosts_per_node=c.hosts_per_node, rate_bps=c.per_node_rate,
                                  nodes=c.nodes, duration_ps=duration_ps, seed=int(seed))
        flows.validate(c.endpoints)
        keep = np.asarray(flows.start_ps) < duration_ps
        cut = _Cut(flows, keep)
        watch = self._watch_ids(duration_ps)
        sv = self._services
        sim = self._sim(dict(seed=int(seed), sample_interval_ps=int(c.sample_interval), watch_ports=watch,
                             congestion_detection=bool(sv["congestion_detection"]), pushback=bool(sv["pushback"]),
                             flow_start_ps=np.ascontiguousarray(cut.start_ps, dtype=np.int64),
                             flow_src=np.ascontiguousarray(cut.src, dtype=np.int64),
                             flow_dst=np.ascontiguousarray(cut.dst, dtype=np.int64),
                             flow_size=np.ascontiguousarray(cut.size, dtype=np.int64)))
        t0 = time.perf_counter()
        if progress:
            from ..network import _run_with_progress
            _run_with_progress(sim, duration_ps, "opera")
        else:
            sim.run_until(duration_ps)
        sim.final_sample()
        wall = time.perf_counter() - t0
        o = sim.output()
        end = int(o["now_ps"]) if sim.stopped else duration_ps
        live = _Live(sim, cut, end, int(seed), t0, getattr(workload, "description", repr(workload)))
        result = self._result(live, o, wall, mice)
        return self._deliver(result, o, seed, out)

    def _timeseries(self, o: dict[str, Any]) -> Any:
        return _opera_timeseries(self, o)

    def _result(self, live: _Live, o: dict[str, Any], wall: float, mice: int) -> Result:
        import pyarrow as pa

        from ..analysis import fct_stats

        c = self.config
        flows = flows_table(c, live.flows, o)
        bulk = np.asarray(o["flow_bulk"], dtype=bool)
        acked = np.asarray(o["flow_acked_ps"], dtype=np.int64)
        start = np.asarray(flows["start_ps"], dtype=np.int64)
        flows = flows.append_column("bulk", pa.array(bulk)).append_column(
            "retransmissions", pa.array(np.asarray(o["flow_rtx"], dtype=np.int64))).append_column(
            "sender_fct_ps", pa.array(acked - start, mask=acked < 0))
        summary = core_summary(arch="opera", seed=live.seed, nodes=c.nodes, endpoints=c.endpoints,
                               duration_ps=live.duration, wall=wall, o=o, flows=flows, mice=mice,
                               rate_bps=c.per_node_rate, workload=live.workload)
        am: dict[str, Any] = dict(self.arch_metrics)
        for k, v in o["metrics"].items():
            am[k] = int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)
        cutoff = self.params["cutoff_bytes"]
        am["fct_us"] = fct_stats(flows, mice_threshold=mice,
                                 sizes={"low_latency": (0, cutoff), "bulk": (cutoff, float("inf")),
                                        "under_100KB": (0, 100_000)})
        am["low_latency_fct_us_percentiles"] = _percentiles(flows, ~bulk)
        am["small_fct_us_percentiles"] = _percentiles(flows, np.asarray(flows["size_bytes"]) < 100_000)
        hist = list(o["ndp_hops_hist"])
        while hist and hist[-1] == 0:
            hist.pop()
        am["ndp_hops_histogram"] = hist
        bh = list(o["bulk_hops_hist"])
        am["bulk_hops_histogram"] = {"direct": int(bh[1]), "two_hop": int(bh[2]), "more": int(sum(bh[3:]))}
        am["decisions"] = DECISIONS
        sv = self._services
        summary["services"] = {
            "congestion_detection": bool(sv["congestion_detection"]), "pushback": bool(sv["pushback"]),
            "flow_pausing": False, "eqo_interval_ps": 0, "offload_queues": 0,
            **{k: am.pop(k) for k in SERVICE_COUNTERS}}
        summary["arch_metrics"] = am
        ts = self._timeseries(o)
        params = {k: (v.tolist() if isinstance(v, np.ndarray) and k != "matchings" else v)
                  for k, v in self.params.items() if k != "matchings"}
        info = {"config": c.model_dump(), "arch": "opera", "engine": "opera", "params": params,
                "matchings": self.matchings_source, "duration_ps": live.duration, "seed": live.seed}
        return Result(summary, flows, ts, info)


SERVICE_COUNTERS = ("congestion_events", "pushback_messages", "pushback_received", "pushback_lost", "paused_packets")
#: --watch auto samples every port while ports x samples stays within this many rows
WATCH_AUTO_ROWS = 2_000_000
NET_SERIES = ("trims", "bounces", "delivered_bytes", "bulk_host_bytes", "congestion_events", "pushback_messages")


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


def _opera_timeseries(net: OperaNetwork, o: dict[str, Any]) -> Any:
    """Per watched port rows (queued bytes at the sample, bytes sent in the interval ending
    there), then network-wide rows (node = port = -1: queued bytes at all ToR ports, bytes
    they sent, and the network counters of NET_SERIES; null on port rows)."""
    import pyarrow as pa

    ppt = net.u + net.hpr
    gp = np.asarray(o["ts_port"], dtype=np.int64)
    k = gp % ppt
    port = np.where(k >= net.hpr, k - net.hpr, net.u + k)
    ser = o["series"]
    m = len(ser["time_ps"])
    minus = np.full(m, -1, dtype=np.int64)
    cols = {
        "time_ps": np.concatenate([o["ts_time_ps"], ser["time_ps"]]),
        "node": np.concatenate([gp // ppt, minus]), "port": np.concatenate([port, minus]),
        "queued_bytes": np.concatenate([o["ts_queued_bytes"], ser["queued_bytes"]]),
        "tx_bytes": np.concatenate([o["ts_tx_bytes"], ser["tx_bytes"]]),
    }
    t = {c: pa.array(np.asarray(v, dtype=np.int64)) for c, v in cols.items()}
    mask = np.concatenate([np.ones(len(gp), dtype=bool), np.zeros(m, dtype=bool)])
    for c in NET_SERIES:
        vals = np.concatenate([np.zeros(len(gp), dtype=np.int64), np.asarray(ser[c], dtype=np.int64)])
        t[c] = pa.array(vals, mask=mask)
    return pa.table(t)


def _percentiles(flows: Any, sel: np.ndarray) -> dict[str, float]:
    done = np.asarray(flows["completed"].to_numpy(zero_copy_only=False), dtype=bool) & sel
    fct = np.asarray(flows["fct_ps"].fill_null(0))[done] / 1e6
    if len(fct) == 0:
        return {"count": 0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0}
    q = np.percentile(fct, [50, 90, 99, 99.9])
    return {"count": int(len(fct)), "p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2]),
            "p999": float(q[3]), "max": float(fct.max())}


@register("opera", "Opera: staggered rotors forming expander slices, NDP over multi-hop slice paths, RotorLB bulk", [
    Option("nodes", 108, "number of ToRs (alias: tors)", "int"),
    Option("tors", None, "number of ToRs", "int"),
    Option("uplinks", None, "rotor uplinks per ToR (rotor switches); default the largest divisor of "
           "the ToR count in 3..6 (6 at 108 ToRs)", "int"),
    Option("hosts_per_tor", 6, "hosts below each ToR", "int"),
    Option("link_rate", "10Gbps", "rate of every link (host and ToR-ToR)", "rate"),
    Option("propagation", "500ns", "ToR-to-ToR propagation per hop", "time"),
    Option("host_propagation", "0ns", "host-to-ToR propagation (opera-sim: 0)", "time"),
    Option("matchings", "auto", "rotor matchings: opera (Opera's 108x6), generate, or a file path; "
           "auto = opera at 108x6, else generate", "str"),
    Option("eps", "auto", "epsilon part of a superslice (auto: longest path at full queues)", "str"),
    Option("delta", "auto", "delta part of a superslice (auto: propagation + one packet)", "str"),
    Option("reconfiguration", "10us", "rotor reconfiguration time r", "time"),
    Option("mtu", "1500B", "packet size on the wire, header included", "size"),
    Option("header", "64B", "header (and control packet) size", "size"),
    Option("queue", 8, "NDP data queue per ToR port, in full packets", "int"),
    Option("header_queue", "auto", "header/control queue per port in bytes (auto: same bytes as the data queue)", "str"),
    Option("cutoff", "15MB", "flows of at least this size are bulk (RotorLB)", "size"),
    Option("initial_window", 20, "NDP initial window (packets)", "int"),
    Option("pull_rate", 1.0, "receiver pull rate as a fraction of the host link rate", "float"),
    Option("pull_pacer", "host", "one pull pacer per receiving host (NDP) or per flow (as opera-sim)",
           "choice", ("host", "flow")),
    Option("rto", "1ms", "NDP retransmission timeout (recovers dropped control packets)", "time"),
    Option("sample_interval", "10us", "time-series sample interval (0: none)", "time"),
    Option("watch", "auto", "ports sampled in the time series: auto (all while ports x samples <= 2M), all, none, "
           "or node:port[,node:port...] (ports 0..U-1 rotor uplinks, U.. host downlinks)", "str"),
    *service_options(),
    Option("stop_when", "duration", "end the run at --duration, or once every flow started and every NDP flow "
           "(ndp-done) or every flow (all-done) finished", "choice", ("duration", "ndp-done", "all-done")),
], tiny={"nodes": 8})
def build(**o: Any) -> OperaNetwork:
    return OperaNetwork(**o)
