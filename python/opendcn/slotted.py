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
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from . import _core
from .config import Config
from .errors import ConfigError
from .network import FixedFabric, NetworkBase, Result, _Cut, _Live, core_summary, flows_table

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

    def _engine(self, flows: _Cut, duration_ps: int, seed: int) -> Any:
        spec = dict(self.params)
        if self.engine == "sirius":
            spec.update(self._services)
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
    summary["arch_metrics"] = metrics
    params = {k: v for k, v in net.params.items()}
    info = {"config": c.model_dump(), "arch": net.arch, "engine": net.engine, "params": params,
            "duration_ps": live.duration, "seed": live.seed}
    return Result(summary, flows, ts, info)
