"""Slotted AWGR fabrics (NegotiaToR, Sirius) run on the slot-by-slot cell engine.

A :class:`SlottedNetwork` is a :class:`~opendcn.network.FixedFabric` whose fabric is fixed by
the architecture (parallel or thin-clos AWGRs with tunable lasers) and whose control
plane runs inside the engine (``opendcn_core::slotted``); circuits and routes are not
deployed by hand. ``run`` has the same signature and returns the same
:class:`~opendcn.network.Result` (summary fields, per-flow columns) as every network.
ToRs are the endpoints: flows start and end at ToRs; load and goodput are normalized to
the host-side bandwidth R per ToR.

Time series (``Result.timeseries``): one row per ToR per sample interval with
``queued_bytes`` (at the interval end), ``tx_bytes`` (payload sent on any hop) and
``rx_bytes`` (payload received as final destination — the receiver bandwidth);
``port`` is -1 (per-ToR rows).

``summary["packets"]`` is the engine's cell ledger with the packet engine's keys: cells
sent (cut at a source), delivered, dropped by reason and in flight (relayed cells at an
intermediate, cells arriving after the end), checked every run against the queues.

Sirius' failures (:meth:`SlottedNetwork.fail_links`, :meth:`SlottedNetwork.fail_nodes`,
``--fail-links`` / ``--fail-nodes``; docs/arch/sirius.md#failures) add
``arch_metrics["delivered_bandwidth"]`` (payload delivered per bin, normalized to N x R),
the mean before / during / after, and the cell counters of every port that was down.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from .. import _core
from .config import Config
from ..errors import ConfigError
from .network import FixedFabric, NetworkBase, Result, _Cut, _Live, core_summary, flows_table
from ..rng import stream
from ..units import parse_time

__all__ = ["SlottedNetwork", "incast_stats", "fct_in_epochs", "slotted_services", "services_summary",
           "packets_summary"]


def slotted_services(net: NetworkBase, engine: str, *, queue_estimation: str | None = None,
                     buffer_offload: int | None = None, **kw: Any) -> dict[str, Any]:
    """:meth:`Network.services` on a slotted cell engine: congestion detection counts
    the cells of a slot queue exactly (``queue_estimation="eqo"``, an estimate of a packet
    switch's calendar-queue bytes, is rejected) and the endpoints are ToRs with no hosts
    below them (``buffer_offload`` > 0 is rejected)."""
    if queue_estimation not in (None, "exact"):
        if queue_estimation != "eqo":
            raise ConfigError("queue_estimation", queue_estimation, "expected exact or eqo")
        raise ConfigError("queue_estimation", queue_estimation,
                          f"{engine} counts the cells of every slot queue exactly; EQO (an estimate of a "
                          "packet switch's calendar-queue bytes) has no slotted counterpart")
    if buffer_offload is not None and buffer_offload is not False and buffer_offload != 0:
        if isinstance(buffer_offload, bool) or not isinstance(buffer_offload, int) or buffer_offload < 0:
            raise ConfigError("buffer_offload", buffer_offload, "expected a number of calendar queues >= 0")
        raise ConfigError("buffer_offload", buffer_offload,
                          f"{engine}'s endpoints are ToRs with no hosts below them to hold offloaded cells")
    return NetworkBase.services(net, **kw)


def services_summary(settings: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    """``summary["services"]`` of a slotted run: the settings and the engine's counters
    (moved out of ``metrics``)."""
    return {**settings,
            "congestion_events": int(metrics.pop("svc_congestion_events", 0)),
            "pushback_messages": int(metrics.pop("svc_pushback_msgs", 0)),
            "paused_attempts": int(metrics.pop("svc_paused_attempts", 0))}


def packets_summary(o: dict[str, Any]) -> dict[str, Any]:
    """``summary["packets"]`` of a cell engine: its cell ledger with the packet engine's
    keys (``sent == delivered + sum(dropped) + trimmed + in_flight``), as ints."""
    return {k: ({kk: int(vv) for kk, vv in v.items()} if isinstance(v, dict) else int(v))
            for k, v in o["packets"].items()}


class SlottedNetwork(FixedFabric):
    """A NegotiaToR or Sirius network: ``engine`` is ``"negotiator"`` or ``"sirius"``,
    ``params`` the engine spec fields (already converted to ps / bytes / bps)."""

    def __init__(self, arch: str, engine: str, params: dict[str, Any], *, nodes: int, ports: int,
                 link_rate: int, host_rate: int, propagation: int, slice_ps: int, guardband: int,
                 mtu: int, header: int, sample_interval: int):
        cfg = Config(nodes=nodes, uplinks=ports, link_rate=link_rate, host_rate=host_rate,
                     propagation=propagation, slice=slice_ps, guardband=min(guardband, slice_ps - 1),
                     mtu=mtu, header=header, buffer=max(mtu + header, 10**9),
                     sample_interval=sample_interval)
        super().__init__(cfg, arch=arch)
        if engine not in ("negotiator", "sirius"):
            raise ConfigError("engine", engine, "expected negotiator or sirius")
        self.engine = engine
        self.params = dict(params)
        self.last_sim: Any = None
        #: Sirius' failure groups: (links [(node, port)], nodes, at_ps, recover_at_ps or None)
        self._fail_groups: list[tuple[list[tuple[int, int]], list[int], int, int | None]] = []
        self._random_failures: tuple[float, float, Any, Any] | None = None
        #: bin width (ps) of the delivered-bandwidth series of a failure run (None: auto)
        self.failure_bin: int | None = None
        self._fail_run: list[tuple[list[tuple[int, int]], list[int], int, int | None]] = []

    def check_spec(self) -> None:
        """Have the engine check the parameters now (bad slot arithmetic is a ConfigError
        naming the option at build time, not at the first run)."""
        probe = dict(self.params, seed=0, duration_ps=1, **{k: np.zeros(0, dtype=np.int64) for k in
                                                           ("flow_start_ps", "flow_src", "flow_dst", "flow_size")})
        cls = _core.NegotiatorSim if self.engine == "negotiator" else _core.SiriusSim
        try:
            cls(probe)
        except _core.EngineSpecError as e:
            raise self._spec_error(e) from None


    def services(self, **kw: Any) -> dict[str, Any]:
        """OpenOptics' infrastructure services on the Sirius cell engine (see
        :func:`slotted_services`); NegotiaToR schedules on demand and offers none."""
        if self.engine != "sirius":
            raise ConfigError("services", self.arch, "OpenOptics' services are for traffic-oblivious "
                              "fabrics; NegotiaToR schedules every slot on demand")
        return slotted_services(self, "sirius", **kw)

    # ------------------------------------------------------------------ failures (Sirius)
    def _sirius_only(self, field: str, value: Any) -> None:
        if self.engine != "sirius":
            raise ConfigError(field, value, "NegotiaToR has its own failure model (--fail-links, --fail-at, "
                              "--recover-at, --detect-epochs on negotiator)")
        if self._live is not None:
            raise ConfigError(field, value, "failures are part of a run's spec: set them before start")

    def fabric_links(self) -> list[tuple[int, int]]:
        """Sirius: every (ToR, port) whose port reaches the AWGR fabric (on thin-clos with
        fewer ToRs than ports, ports >= the ToR count reach nothing)."""
        n, s = self.config.nodes, self.config.uplinks
        g = n if n < s else s
        return [(x, p) for x in range(n) for p in range(g)]

    @staticmethod
    def _fail_times(at: Any, recover_at: Any) -> tuple[int, int | None]:
        at_ps = parse_time(at, "fail_at")
        if at_ps < 0:
            raise ConfigError("fail_at", at, "must not be negative")
        rec_ps = None if recover_at is None else parse_time(recover_at, "recover_at")
        if rec_ps is not None and rec_ps <= at_ps:
            raise ConfigError("recover_at", recover_at, f"must come after fail_at ({at_ps} ps)")
        return at_ps, rec_ps

    def fail_links(self, links: Sequence[tuple[int, int]], at: Any, recover_at: Any = None) -> None:
        """Sirius: fail ports of ToRs — ``links`` are (ToR, port) pairs, each port with its
        egress and ingress fibers — at simulated time ``at`` and bring them back at
        ``recover_at`` (default: never), in every run of this network. Nothing leaves or
        reaches a failed port; cells sent towards it before their sender knows are lost
        (``failed_link``); senders learn of a failure and of a repair from the round-robin
        cells (docs/arch/sirius.md#failures). Call before ``start``; may be called again
        (each call is one failure group)."""
        self._sirius_only("fail_links", links)
        at_ps, rec_ps = self._fail_times(at, recover_at)
        ok = set(self.fabric_links())
        out = []
        for i, item in enumerate(links):
            try:
                node, port = (int(x) for x in item)
            except (TypeError, ValueError):
                raise ConfigError(f"links[{i}]", item, "expected a (node, port) pair") from None
            if (node, port) not in ok or isinstance(item, (str, bytes)):
                raise ConfigError(f"links[{i}]", item, f"not a fabric port: ToRs 0..{self.config.nodes - 1}, "
                                  f"ports 0..{max(p for _, p in ok)}")
            out.append((node, port))
        if not out:
            raise ConfigError("links", list(links), "name at least one (node, port)")
        self._fail_groups.append((out, [], at_ps, rec_ps))

    def fail_nodes(self, nodes: Sequence[int], at: Any, recover_at: Any = None) -> None:
        """Sirius: fail ToRs at ``at`` and bring them back (empty) at ``recover_at``
        (default: never). A failed ToR sends and receives nothing; what it holds at the
        failure (its source queues, relayed cells), the cells that reach it and the flows
        that start at it are lost (``failed_node``). Call before ``start``."""
        self._sirius_only("fail_nodes", nodes)
        at_ps, rec_ps = self._fail_times(at, recover_at)
        out = []
        for i, x in enumerate(nodes):
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= int(x) < self.config.nodes:
                raise ConfigError(f"nodes[{i}]", x, f"not a ToR: expected 0..{self.config.nodes - 1}")
            out.append(int(x))
        if not out:
            raise ConfigError("nodes", list(nodes), "name at least one ToR")
        self._fail_groups.append(([], out, at_ps, rec_ps))

    def random_failures(self, fraction: float, at: Any = None, recover_at: Any = None, *,
                        nodes: float = 0.0) -> None:
        """Sirius: fail a ``fraction`` of the fabric links (:meth:`fabric_links`, at least
        one when > 0; named stream ``failures``) and a fraction ``nodes`` of the ToRs
        (stream ``failures.nodes``) at ``at`` (default: a third into the run), back at
        ``recover_at`` (default: never), in every run of this network — the same
        elements in every run, as on the packet engine."""
        self._sirius_only("fail_links", fraction)
        for field, v in (("fail_links", fraction), ("fail_nodes", nodes)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise ConfigError(field, v, "expected a fraction in [0, 1)")
        if at is not None:
            self._fail_times(at, recover_at)
        elif recover_at is not None:
            parse_time(recover_at, "recover_at")
        self._random_failures = (float(fraction), float(nodes), at, recover_at) if fraction or nodes else None

    def _failure_plan(self, duration_ps: int) -> list[tuple[list[tuple[int, int]], list[int], int, int | None]]:
        groups = list(self._fail_groups)
        if self._random_failures is not None:
            frac, nfrac, at, rec = self._random_failures
            at_ps = parse_time(at, "fail_at") if at is not None else duration_ps // 3
            rec_ps = None if rec is None else parse_time(rec, "recover_at")
            if rec_ps is not None and rec_ps <= at_ps:
                raise ConfigError("recover_at", rec, f"must come after fail_at ({at_ps} ps)")
            links: list[tuple[int, int]] = []
            if frac:
                cand = self.fabric_links()
                k = max(1, round(frac * len(cand)))
                links = [cand[int(i)] for i in sorted(stream(1, "failures").choice(len(cand), size=k, replace=False))]
            picked: list[int] = []
            if nfrac:
                n = self.config.nodes
                k = max(1, round(nfrac * n))
                picked = sorted(int(x) for x in stream(1, "failures.nodes").choice(n, size=k, replace=False))
            groups.append((links, picked, at_ps, rec_ps))
        return groups

    def _failure_spec(self, duration_ps: int) -> dict[str, Any]:
        groups = self._failure_plan(duration_ps)
        self._fail_run = groups
        if not groups:
            return {}
        def col(v: list[int]) -> np.ndarray:
            return np.asarray(v, dtype=np.int64)

        link_rows = [(x, p, at, -1 if rec is None else rec) for links, _, at, rec in groups for x, p in links]
        node_rows = [(x, at, -1 if rec is None else rec) for _, nodes, at, rec in groups for x in nodes]
        ln, lp, la, lu = (list(c) for c in zip(*link_rows)) if link_rows else ([], [], [], [])
        nx, na, nu = (list(c) for c in zip(*node_rows)) if node_rows else ([], [], [])
        bin_ps = self.failure_bin
        if bin_ps is None:  # whole round-robin cycles, at most 2000 bins
            n, s = self.config.nodes, self.config.uplinks
            cycle = (1 if n < s else n // s) * int(self.params["slot_ps"])
            bin_ps = cycle * max(1, -(-duration_ps // (2000 * cycle)))
        return dict(fail_link_node=col(ln), fail_link_port=col(lp), fail_link_at_ps=col(la),
                    fail_link_until_ps=col(lu), fail_node=col(nx), fail_node_at_ps=col(na),
                    fail_node_until_ps=col(nu), fail_bin_ps=int(bin_ps))

    def _engine(self, flows: _Cut, duration_ps: int, seed: int) -> Any:
        spec = dict(self.params)
        if self.engine == "sirius":
            spec.update(self._services)
            spec.update(self._failure_spec(duration_ps))
        spec.update(seed=seed, duration_ps=duration_ps,
                    flow_start_ps=np.ascontiguousarray(flows.start_ps, dtype=np.int64),
                    flow_src=np.ascontiguousarray(flows.src, dtype=np.int64),
                    flow_dst=np.ascontiguousarray(flows.dst, dtype=np.int64),
                    flow_size=np.ascontiguousarray(flows.size, dtype=np.int64))
        cls = _core.NegotiatorSim if self.engine == "negotiator" else _core.SiriusSim
        return cls(spec)

    def _result(self, live: _Live, o: dict[str, Any], wall: float, mice: int) -> Result:
        self.last_sim = live.sim
        return _build(self, live, o, wall, mice)


def fct_in_epochs(flows: pa.Table, epoch_ps: int, mice_threshold: int) -> dict[str, float]:
    """Mice FCT statistics in epochs, and the share of mice done within two epochs."""
    done = np.asarray(flows["completed"].to_numpy(zero_copy_only=False), dtype=bool)
    size = np.asarray(flows["size_bytes"])
    fct = np.asarray(flows["fct_ps"].fill_null(0))
    sel = done & (size < mice_threshold)
    if not sel.any() or epoch_ps <= 0:
        return {"count": 0, "mean": 0.0, "p99": 0.0, "within_2_epochs": 0.0}
    x = fct[sel] / epoch_ps
    return {"count": int(sel.sum()), "mean": float(x.mean()), "p99": float(np.percentile(x, 99)),
            "within_2_epochs": float((x <= 2.0).mean())}


def incast_stats(flows: pa.Table) -> dict[str, float]:
    """Incast finish time: flows with the same start instant and destination form one
    incast (≥ 2 senders); finish time = last finish − start (completed incasts only)."""
    start = np.asarray(flows["start_ps"])
    dst = np.asarray(flows["dst"])
    if len(start) == 0:
        return {"events": 0, "completed": 0, "mean_us": 0.0, "p99_us": 0.0}
    fin = np.asarray(flows["finish_ps"].fill_null(-1))
    key = np.stack([start, dst], axis=1)
    uniq, inv, cnt = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    ev = cnt >= 2
    if not ev.any():
        return {"events": 0, "completed": 0, "mean_us": 0.0, "p99_us": 0.0}
    last = np.full(len(uniq), -1, dtype=np.int64)
    np.maximum.at(last, inv, fin)
    undone = np.zeros(len(uniq), dtype=bool)
    np.logical_or.at(undone, inv, fin < 0)
    ok = ev & ~undone
    t = (last[ok] - uniq[ok, 0]) / 1e6
    return {"events": int(ev.sum()), "completed": int(ok.sum()),
            "mean_us": float(t.mean()) if len(t) else 0.0,
            "p99_us": float(np.percentile(t, 99)) if len(t) else 0.0}


def failure_metrics(groups: list[tuple[list[tuple[int, int]], list[int], int, int | None]],
                    metrics: dict[str, Any], series: dict[str, Any], duration_ps: int,
                    capacity_bps: int) -> dict[str, Any]:
    """``arch_metrics`` of a Sirius failure run: what failed and when (the packet engine's
    ``failed_links`` / ``fail_at_ps`` / ``recover_at_ps``, plus ``failed_nodes`` and the
    groups), the delivered bandwidth per bin normalized to N x R (``delivered_bandwidth``)
    and its mean over the whole bins of three windows as long as the outage (from the
    first failure to the last recovery, or to the end): just before it, during it and
    just after it (``bandwidth_before_failure`` / ``_during_failure`` /
    ``_after_recovery``; None for a window with no whole bin), and the cells counted on
    every port that was down
    (``failed_port_cells``: out of / into the port before, during and after its outages,
    and lost at it)."""
    links = sorted({x for g in groups for x in g[0]})
    nodes = sorted({x for g in groups for x in g[1]})
    recs = [g[3] for g in groups]
    out: dict[str, Any] = {
        "failed_links": [list(x) for x in links], "failed_nodes": nodes,
        "fail_at_ps": min(g[2] for g in groups),
        "recover_at_ps": None if any(r is None for r in recs) else max(r for r in recs if r is not None),
        "failure_groups": [{"links": [list(x) for x in g[0]], "nodes": g[1], "at_ps": g[2], "recover_at_ps": g[3]}
                           for g in groups],
    }
    cols = {k[len("failure_port_"):]: np.asarray(v, dtype=np.int64) for k, v in series.items()
            if k.startswith("failure_port_")}
    if cols:
        out["failed_port_cells"] = [
            {"node": int(cols["node"][j]), "port": int(cols["port"][j]),
             "out": [int(cols[f"out_{w}"][j]) for w in ("before", "during", "after")],
             "in": [int(cols[f"in_{w}"][j]) for w in ("before", "during", "after")],
             "lost": int(cols["lost"][j])} for j in range(len(cols["node"]))]
    bins = np.asarray(series.get("failure_delivered_bytes", []), dtype=np.float64)
    bin_ps = int(metrics.get("failure_bin_ps", 0))
    if len(bins) and bin_ps:
        lo = np.arange(len(bins), dtype=np.int64) * bin_ps
        hi = np.minimum(lo + bin_ps, duration_ps)
        norm = bins * 8 / ((hi - lo) / 1e12) / capacity_bps
        out["delivered_bandwidth"] = {"bin_ps": bin_ps, "time_us": [round(float(x) / 1e6, 4) for x in hi],
                                      "normalized": [round(float(x), 5) for x in norm]}
        start = int(metrics["failure_start_ps"])
        end = int(metrics["failure_end_ps"])

        def mean(sel: np.ndarray) -> float | None:
            t = float((hi[sel] - lo[sel]).sum())
            return round(float(bins[sel].sum()) * 8 / (t / 1e12) / capacity_bps, 5) if t > 0 else None

        stop = end if end >= 0 else duration_ps
        span = stop - start
        out["bandwidth_before_failure"] = mean((lo >= start - span) & (hi <= start))
        out["bandwidth_during_failure"] = mean((lo >= start) & (hi <= stop))
        out["bandwidth_after_recovery"] = mean((lo >= end) & (hi <= end + span)) if end >= 0 else None
    return out


def _build(net: SlottedNetwork, live: _Live, o: dict[str, Any], wall: float, mice: int) -> Result:
    c = net.config
    flows = flows_table(c, live.flows, o)
    ts = pa.table({
        "time_ps": pa.array(np.asarray(o["ts_time_ps"], dtype=np.int64)),
        "node": pa.array(np.asarray(o["ts_node"], dtype=np.int64)),
        "port": pa.array(np.full(len(o["ts_node"]), -1, dtype=np.int64)),
        "queued_bytes": pa.array(np.asarray(o["ts_queued_bytes"], dtype=np.int64)),
        "tx_bytes": pa.array(np.asarray(o["ts_tx_bytes"], dtype=np.int64)),
        "rx_bytes": pa.array(np.asarray(o["ts_rx_bytes"], dtype=np.int64)),
    })
    metrics: dict[str, Any] = dict(net.arch_metrics)
    for k, v in o["metrics"].items():
        metrics[k] = int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)
    epoch = int(metrics.get("epoch_ps", 0))
    if epoch:
        metrics["mice_fct_epochs"] = fct_in_epochs(flows, epoch, mice)
    metrics["incast"] = incast_stats(flows)
    # receiver bandwidth over time, all ToRs, normalized to N x R
    rx = np.asarray(o["ts_rx_bytes"], dtype=np.int64)
    t_ps = np.asarray(o["ts_time_ps"], dtype=np.int64)
    if len(rx) and c.sample_interval > 0:
        per = rx.reshape(-1, c.nodes).sum(axis=1)
        times = t_ps.reshape(-1, c.nodes)[:, 0]
        widths = np.diff(np.concatenate([[0], times]))
        norm = per * 8 / (np.maximum(widths, 1) / 1e12) / (c.per_node_rate * c.nodes)
        if len(norm) <= 20_000:
            metrics["rx_bandwidth_series"] = {"time_us": [round(x / 1e6, 4) for x in times.tolist()],
                                              "normalized": [round(float(x), 5) for x in norm]}
    summary = core_summary(arch=net.arch, seed=live.seed, nodes=c.nodes, endpoints=c.nodes,
                           duration_ps=live.duration, wall=wall, o=o, flows=flows, mice=mice,
                           rate_bps=c.per_node_rate, workload=live.workload)
    summary["packets"] = packets_summary(o)
    if net.engine == "sirius":
        summary["services"] = services_summary(net._services, metrics)
        if net._fail_run:
            metrics.update(failure_metrics(net._fail_run, metrics, o.get("series", {}), live.duration,
                                           c.per_node_rate * c.nodes))
    summary["arch_metrics"] = metrics
    params = {k: v for k, v in net.params.items()}
    info = {"config": c.model_dump(), "arch": net.arch, "engine": net.engine, "params": params,
            "duration_ps": live.duration, "seed": live.seed}
    return Result(summary, flows, ts, info)
