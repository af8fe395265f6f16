"""The OpenOptics-style network object: deploy circuits and routes, run a workload.

A :class:`Network` describes the hardware (``Config``), the circuits deployed on it
(``deploy_topo``) and the routing (``deploy_routing`` / ``add``). ``run`` compiles all of
it to one plain-data spec, hands it to the Rust engine and returns a :class:`Result`.

Node layout inside the engine: nodes ``0..N-1`` are the fabric's nodes (ToRs, pods or
hosts), each with ``config.uplinks`` ports (optical, or electrical for packet-switched
fabrics) followed by one downlink port per host when hosts hang below nodes; switch nodes
(``switches > 0``, e.g. Clos spines) follow with ``switch_ports`` ports each. Flows start
and end only at endpoints (nodes, or hosts).
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path as FsPath
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from .. import _core
from ..experiments.analysis import fct_stats
from .config import Config
from ..errors import ConfigError, DeadlockError, InvariantError
from ..rng import stream
from .timeflow import Circuit, Entry, Path
from .transport import CODES as _TRANSPORT_CODES
from .transport import TransportSettings
from .transport import update as _update_transport
from ..units import parse_size, parse_time, tx_time_ps

_KIND = {"unused": 0, "optical": 1, "electrical": 2, "hostdown": 3}
BUILTIN_ROUTERS = ("vlb", "direct", "hoho", "ucmp", "expander")


def _engine_error(e: Exception) -> ConfigError:
    args: tuple[Any, ...] = tuple(getattr(e, "args", ()))
    if len(args) == 3:
        return ConfigError(str(args[0]), args[1], str(args[2]))
    return ConfigError("spec", str(e), "rejected by the engine")



def check_run_args(duration: Any, seed: Any) -> tuple[int, int]:
    """A run's duration in ps (positive) and seed (non-negative integer), or ConfigError."""
    duration_ps = parse_time(duration, "duration")
    if duration_ps <= 0:
        raise ConfigError("duration", duration, "must be positive")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ConfigError("seed", seed, "expected a non-negative integer")
    return duration_ps, int(seed)

class NetworkBase(abc.ABC):
    """What every network has, whatever engine runs it: a :class:`Config`, the
    architecture's name and metrics, OpenOptics' services, and one run pipeline.

    ``run`` = ``start`` + ``finish``. ``start`` generates the workload's flows for the
    network's endpoints and builds the engine; ``finish`` advances it to the end, checks
    the engine's invariants and returns a :class:`Result`. An engine plugs in through two
    hooks: :meth:`_engine` (build the engine from the flows) and :meth:`_result` (turn its
    output into a Result); :meth:`_advance` (how the run is stepped, e.g. a warm-up or a
    control loop) and :meth:`_arch_result` (an architecture's own metrics) are optional.
    """

    #: the engine can start flows when others finish (``FlowArrays`` dependencies)
    _dependencies = False

    def __init__(self, config: Config | dict[str, Any], *, arch: str = "custom"):
        if isinstance(config, dict):
            config = Config.from_dict(config)
        if not isinstance(config, Config):
            raise ConfigError("config", config, "expected an opendcn.Config or a dict")
        self.config = config
        self.arch = arch
        self.arch_metrics: dict[str, Any] = {}
        self._live: _Live | None = None
        self.last_result: Result | None = None
        self._services: dict[str, Any] = {"congestion_detection": False, "pushback": False,
                                          "flow_pausing": False, "elephant_bytes": 100_000,
                                          "eqo_interval_ps": 0, "offload_queues": 0}

    def services(self, *, congestion_detection: bool | None = None, pushback: bool | None = None,
                 flow_pausing: bool | None = None, elephant_threshold: Any = None,
                 queue_estimation: str | None = None, eqo_interval: Any = None,
                 buffer_offload: int | None = None) -> dict[str, Any]:
        """Switch OpenOptics' infrastructure services (§5.2) for traffic-oblivious fabrics:
        congestion detection (a calendar queue is full when a relayed packet no longer fits
        in the first occurrence of its departure slice), traffic push-back (the detecting
        node tells the packet's source, one propagation delay later, to stop sending to that
        destination until the congested slice has come round again) and host flow pausing
        (flows that have sent ``elephant_threshold`` bytes — PIAS flow aging — wait until
        their departure slice is the current one).

        ``queue_estimation="eqo"`` makes detection use OpenOptics' queue-occupancy
        estimate (a register per calendar queue, + packet size on enqueue, − bandwidth ×
        ``eqo_interval`` from the active queue every interval, default 50 ns) instead of
        the exact occupancy; the summary reports the estimation error.
        ``buffer_offload=N`` keeps N calendar queues per optical port in the ToR (the
        current slice and the next N − 1): packets departing later wait on a random host
        below the ToR and come back up when their slice enters the window (needs
        ``hosts_per_node`` ≥ 1). Returns the settings in force."""
        for name, v in (("congestion_detection", congestion_detection), ("pushback", pushback),
                        ("flow_pausing", flow_pausing)):
            if v is not None:
                if not isinstance(v, bool):
                    raise ConfigError(name, v, "expected True or False")
                self._services[name] = v
        if elephant_threshold is not None:
            self._services["elephant_bytes"] = parse_size(elephant_threshold, "elephant_threshold")
        if queue_estimation is not None:
            if queue_estimation not in ("exact", "eqo"):
                raise ConfigError("queue_estimation", queue_estimation, "expected exact or eqo")
            iv = parse_time(eqo_interval if eqo_interval is not None else "50ns", "eqo_interval")
            if queue_estimation == "eqo" and iv <= 0:
                raise ConfigError("eqo_interval", eqo_interval, "must be positive")
            self._services["eqo_interval_ps"] = iv if queue_estimation == "eqo" else 0
        elif eqo_interval is not None:
            raise ConfigError("eqo_interval", eqo_interval, "only with queue_estimation='eqo'")
        if buffer_offload is not None:
            if isinstance(buffer_offload, bool) or not isinstance(buffer_offload, int) or buffer_offload < 0:
                raise ConfigError("buffer_offload", buffer_offload, "expected a number of calendar queues >= 0")
            if buffer_offload and not self.config.hosts_per_node:
                raise ConfigError("buffer_offload", buffer_offload,
                                  "buffer offloading needs hosts below the nodes (hosts_per_node >= 1)")
            self._services["offload_queues"] = buffer_offload
        if self._services["pushback"]:
            self._services["congestion_detection"] = True
        return dict(self._services)

    # ------------------------------------------------------------------ running
    def start(self, workload: Any, duration: Any, seed: int = 1) -> None:
        """Generate ``workload``'s flows, build the engine and stand at t = 0."""
        duration_ps, seed = check_run_args(duration, seed)
        c = self.config
        flows = workload.generate(endpoints=c.endpoints, hosts_per_node=c.hosts_per_node,
                                  rate_bps=c.per_node_rate, nodes=c.nodes,
                                  duration_ps=duration_ps, seed=int(seed))
        flows.validate(c.endpoints)
        if getattr(flows, "waits", False) and not self._dependencies:
            raise ConfigError("flows.after", f"{self.arch}", "flow dependencies (a flow that starts when others "
                              "finish) run on the packet engine (opendcn.Network); this architecture's engine "
                              "starts flows at their start times only")
        if getattr(flows, "rate_bps", None) is not None and not self._dependencies:
            raise ConfigError("flows.rate", f"{self.arch}", "application rates (a TCP flow whose bytes are written "
                              "at a rate) run on the packet engine (opendcn.Network); this architecture's engine "
                              "has no TCP")
        cut = _Cut(flows, np.asarray(flows.start_ps) < duration_ps)
        t0 = time.perf_counter()
        try:
            sim = self._engine(cut, duration_ps, int(seed))
        except _core.EngineSpecError as e:
            raise self._spec_error(e) from None
        self._live = _Live(sim, cut, duration_ps, int(seed), t0,
                           getattr(workload, "description", repr(workload)))

    def run(self, workload: Any, duration: Any = "1ms", seed: int = 1, *,
            progress: bool = False, out: str | os.PathLike[str] | None = None,
            mice_threshold: Any = 10_000) -> "Result":
        """Run ``workload`` for ``duration`` of simulated time and return the result."""
        self.start(workload, duration, seed)
        return self.finish(progress=progress, out=out, mice_threshold=mice_threshold)

    def finish(self, *, progress: bool = False, out: str | os.PathLike[str] | None = None,
               mice_threshold: Any = 10_000) -> "Result":
        """Run a started simulation to its end, check invariants, build the result."""
        live = self._require_live()
        mice = parse_size(mice_threshold, "mice_threshold")
        self._advance(live, progress)
        wall = time.perf_counter() - live.t0
        o = self._output(live)
        self._live = None
        result = self._result(live, o, wall, mice)
        self._arch_result(result, o)
        return self._deliver(result, o, live.seed, out)

    # the hooks
    @abc.abstractmethod
    def _engine(self, flows: "_Cut", duration_ps: int, seed: int) -> Any:
        """Build the engine for ``flows`` (raises ``_core.EngineSpecError`` on a bad spec)."""

    @abc.abstractmethod
    def _result(self, live: "_Live", o: dict[str, Any], wall: float, mice: int) -> "Result":
        """Turn the engine's output into a :class:`Result`."""

    def _advance(self, live: "_Live", progress: Any) -> None:
        """Run the engine to the end of the run (with a progress bar if asked; a callable
        ``progress`` is the tick of a bar a control loop already shows)."""
        if callable(progress):
            run_chunked(live.sim, live.duration, progress)
        elif progress:
            _run_with_progress(live.sim, live.duration, self.arch)
        else:
            run_chunked(live.sim, live.duration)

    def _output(self, live: "_Live") -> dict[str, Any]:
        """The engine's output at the end of the run."""
        return dict(live.sim.output())

    def _arch_result(self, result: "Result", o: dict[str, Any]) -> None:
        """Add an architecture's own metrics to a finished run's result (no-op here)."""

    def _spec_error(self, e: Exception) -> ConfigError:
        """The ConfigError for an engine's rejection of a spec (the one error mapping)."""
        return _engine_error(e)

    def _require_live(self) -> "_Live":
        if self._live is None:
            raise ConfigError("network", "not started", "call net.start(workload, duration) first")
        return self._live

    def _deliver(self, result: "Result", o: dict[str, Any], seed: int,
                 out: str | os.PathLike[str] | None) -> "Result":
        """Keep a finished run's result, write it to ``out`` and check the engine's
        invariants (InvariantError names the architecture, the seed and every violation)."""
        self.last_result = result
        if out is not None:
            result.write(out)
        if o["invariant_errors"]:
            msg = f"{self.arch} seed {seed}: " + "; ".join(o["invariant_errors"])
            if any(e.startswith("deadlock") for e in o["invariant_errors"]):
                raise DeadlockError(msg)
            raise InvariantError(msg)
        return result

    # ------------------------------------------------------------------ monitoring
    def _last(self) -> "Result":
        if self.last_result is None:
            raise ConfigError("network", "no result", "run the network before reading its monitors")
        return self.last_result

    def buffer_usage(self, node: int, port: int, interval: Any = None) -> pa.Table:
        """Queued bytes at (node, port) over time (the maximum sample in each interval),
        from the last run's time series (sampled every ``config.sample_interval``)."""
        return self._last().port_series(node, port, "queued_bytes", interval, how="max")

    def bw_usage(self, node: int, port: int, interval: Any = None) -> pa.Table:
        """Bytes sent per interval at (node, port), from the last run's time series."""
        return self._last().port_series(node, port, "tx_bytes", interval, how="sum")





class FixedFabric(NetworkBase):
    """A network whose circuits and routing are the architecture's own (the slotted
    engines, Shale): it runs like every network but has no ``deploy_*`` methods. Errors
    of its engine's spec name the architecture's options (``--slot``)."""

    def _spec_error(self, e: Exception) -> ConfigError:
        err = _engine_error(e)
        return ConfigError("--" + err.field.replace("_", "-"), err.value, err.reason)


class Network(NetworkBase):
    """A network to program and run (OpenOptics' ``OpticalNetwork``): deploy circuits
    and routes, choose transports, run on the packet engine.

    ``admission_control=True`` switches on OpenOptics' per-hop admission control (see
    the attribute of that name)."""

    _dependencies = True

    def __init__(self, config: Config | dict[str, Any], *, fabric: str = "optical",
                 switches: int = 0, switch_ports: int = 0, switch_link_rate: Any = None,
                 arch: str = "custom", electrical_ports: int = 0, admission_control: bool = False):
        super().__init__(config, arch=arch)
        config = self.config
        if fabric not in ("optical", "electrical"):
            raise ConfigError("fabric", fabric, "expected optical or electrical")
        if switches < 0 or (switches and switch_ports < 1):
            raise ConfigError("switches", switches, "switch nodes need switch_ports >= 1")
        if isinstance(electrical_ports, bool) or not isinstance(electrical_ports, int) \
                or not 0 <= electrical_ports <= config.uplinks:
            raise ConfigError("electrical_ports", electrical_ports, f"expected 0..{config.uplinks} (uplinks per node)")
        if electrical_ports and fabric != "optical":
            raise ConfigError("electrical_ports", electrical_ports, "a hybrid network has an optical fabric")
        #: hybrid networks: the last ``electrical_ports`` uplinks of every node are
        #: electrical (static links, e.g. to packet switches, whose ports are electrical too)
        self.electrical_ports = electrical_ports
        self.fabric = fabric
        self.switches = switches
        self.switch_ports = switch_ports
        self.switch_link_rate = config.link_rate if switch_link_rate is None else \
            _rate(switch_link_rate, "switch_link_rate")
        n, u, h = config.nodes, config.uplinks, config.hosts_per_node
        self.total_nodes = n + switches
        counts = [u + h] * n + [switch_ports] * switches
        self.port_offset = np.zeros(self.total_nodes + 1, dtype=np.int64)
        np.cumsum(counts, out=self.port_offset[1:])
        self.user_ports = np.array([u] * n + [switch_ports] * switches, dtype=np.int64)
        self.circuits: list[Circuit] = []
        self.slices = 1
        self._peer: np.ndarray | None = None      # (S, total ports) global peer ids
        self._static = True
        self._router = "table"
        self._multipath = "packet"
        self._expander_paths = 1
        self._compiled: dict[int, list[Entry]] = {}
        self._manual: list[tuple[int, Entry]] = []
        self._routes: list[tuple[int, int, int | None, list[tuple[int, int | None]]]] = []
        self._paths: list[Path] | None = None
        self.watch_ports: np.ndarray | None = None
        self._transport = TransportSettings()
        #: credit: each global port's class for the routing's virtual-channel rule (None:
        #: channels by hop count; see :meth:`vc_rule`)
        self._vc_class: np.ndarray | None = None
        self._collect_tm = False
        self._disc: dict[int, dict[str, Any]] = {}
        self._loss: list[tuple[int, int]] = []
        self._pias: list[int] = []
        self._link_class: dict[int, int] = {}
        #: end the run early: "duration", "ndp-done" (every flow started and every flow
        #: not on RotorLB finished) or "all-done"
        self.stop_when = "duration"
        #: network-wide rows (node = port = -1) in the time series
        self.net_series = False
        #: record up to this many dropped packets one by one, with every push-back message
        #: (``Result.drops``, ``Result.pushbacks``); 0: off
        self.log_drops = 0
        #: hold packets that find no route at a node until new tables or circuits give
        #: them one, instead of dropping them as ``no_route`` (OpenOptics' paused
        #: traffic-aware calendar queues). None (auto): on for a static optical schedule
        #: with hop-by-hop routing — a traffic-aware fabric, whose routes a control loop
        #: may add during the run; off otherwise. True is refused where no route can
        #: appear later (a cyclic schedule, an electrical fabric, source routes).
        self.hold_unrouted: bool | None = None
        self._holding = False
        #: links a packet may cross: a node that would relay it further drops it as
        #: ``loop`` (a routing loop; the reason is listed in the summary only with a
        #: limit). None: no limit (a looping packet stays in flight to the end of the run).
        self.hop_limit: int | None = None
        #: arrival slices read this far ahead (ps): a packet's arrival slice at its next hop,
        #: the slice its table lookup matches, is the slice at its arrival there plus this
        #: (OpenOptics' Mininet ToRs advance the ingress slice by the guardband, with no dark
        #: window). 0: the slice the packet was sent in (opendcn's own semantics).
        self.lookahead: int = 0
        #: OpenOptics' per-hop admission control (its ns-3 backend's ``admission_control``):
        #: at every node, a packet whose routing decision (port, departure slice) finds that
        #: slice's calendar queue without room for it in the slice's next occurrence
        #: (bandwidth x the up-time left, after what is queued there) takes the decision
        #: the table gives for the next arrival slices, in order, until one has room; if
        #: none within a cycle has, it is dropped (``adm_fail``). A source node never drops:
        #: its packet waits as it would without admission control. Applies to hop-by-hop
        #: routing (tables, ``vlb``, ``direct``, ``hoho``) on a cyclic schedule; source
        #: routes (``lookup="source"``, ``ucmp``, ``expander``) and static fabrics are
        #: unaffected. Off by default: a packet whose slice is full waits for the slice's
        #: next occurrence (or is dropped as ``buffer_overflow`` when its port is full).
        self.admission_control = admission_control

    # ------------------------------------------------------------------ topology
    def _port_kinds(self) -> np.ndarray:
        """Engine kind code of every global port's fabric side (host ports excluded)."""
        P = int(self.port_offset[-1])
        kind = np.zeros(P, dtype=np.int64)
        fab = _KIND[self.fabric]
        n, u, e = self.config.nodes, self.config.uplinks, self.electrical_ports
        for node in range(self.total_nodes):
            a = int(self.port_offset[node])
            nu = int(self.user_ports[node])
            kind[a:a + nu] = fab
            if e and node < n:
                kind[a + u - e:a + u] = _KIND["electrical"]
            elif e:
                kind[a:a + nu] = _KIND["electrical"]  # switch nodes of a hybrid network
        return kind

    @property
    def n_ports(self) -> int:
        return int(self.port_offset[-1])

    def gport(self, node: int, port: int) -> int:
        """Global port id of ``port`` of ``node``."""
        return int(self.port_offset[node] + port)

    def deploy_topo(self, circuits: Sequence[Circuit], *, slices: int | None = None,
                    slice_durations: Sequence[Any] | None = None, queued: str = "reroute",
                    at: Any = None, drain: bool = False) -> None:
        """Check circuits against the fabric and install them (raises ``ConfigError``).

        Circuits with ``ts`` set form a cyclic schedule of ``slices`` slices (default:
        max ts + 1) of ``config.slice`` each (or ``slice_durations``); ``ts=None``
        circuits are static. During a run (control loops) the new circuits replace the
        old ones after ``config.reconfiguration_delay``; packets queued on a port whose
        circuit changes are routed again at their node (``queued="reroute"``: routes are
        installed before circuits change) or dropped (``queued="drop"``, reason
        ``reconfiguration``; end-to-end transports send them again). ``at`` (during a
        run only) is the simulated time of the change, default the engine's current time
        (the last event run; a control loop that stepped to ``t`` passes ``at=t``).

        ``drain=True`` (a static schedule during a run) makes the change a drain → switch →
        undrain: from ``at`` no packet enters the network, the packets in it finish their
        trip under the old circuits and tables (``queued="drop"``: those queued on a
        changed port are dropped instead), then the circuits change and the tables
        deployed since the call take effect at the same instant, the changed circuits are
        down for the delay, and the sources resume. No packet is routed by a mixture of
        old and new tables and none is on a changed circuit when it switches.

        A circuit given as a plain list or tuple is read in the field order
        ``(n1, p1, n2, p2, ts)``; errors about such a circuit say so.
        """
        if queued not in ("reroute", "drop"):
            raise ConfigError("queued", queued, "expected reroute or drop")
        if not isinstance(drain, bool):
            raise ConfigError("drain", drain, "expected True or False")
        if circuits is not None and not isinstance(circuits, (str, bytes, list)):
            try:
                circuits = list(circuits)
            except TypeError:
                pass  # _as_circuits says what was expected
        given = circuits
        circuits = _as_circuits(circuits)
        try:
            self._deploy_topo(circuits, slices, slice_durations, queued, at, drain)
        except ConfigError as e:
            raise _plain_circuit_hint(e, given) from None
        if self._live is None:
            self._check_fits()
            self._check_buffers()

    #: a schedule whose slices cannot carry one packet is refused before it runs (the
    #: OpenOptics layer sets this for a backend that runs such a configuration and says so)
    undeliverable_ok = False

    def _check_fits(self) -> None:
        """A schedule whose longest slice cannot carry one packet (or no byte at all) delivers
        nothing over its circuits: every packet would be dropped as oversize or wait for
        ever. Refused before it runs, naming the setting that is furthest from typical."""
        c = self.config
        if self._static or self.fabric == "electrical" or not self.slices or self.undeliverable_ok:
            return
        longest = max(self._durations or [c.slice])
        up = max(0, longest - c.guardband)
        per_slice = up * c.link_rate // 8 // 10**12
        pkt = int(c.mtu + c.header)
        if per_slice >= pkt:
            return
        need_rate = -(-pkt * 8 * 10**12 // max(up, 1))
        if c.link_rate < 10**9:
            field, value, hint = "link_rate", f"{c.link_rate} bit/s", \
                f"; a packet needs at least {need_rate / 1e9:.3g} Gb/s in that up-time (10Mbps is 10^7 bit/s)"
        elif c.mtu + c.header > 9216:
            field, value, hint = "mtu", f"{c.mtu} B", ""
        elif c.guardband * 2 >= longest:
            field, value, hint = "guardband", f"{c.guardband} ps", ""
        else:
            field, value, hint = "slice", f"{longest} ps", ""
        raise ConfigError(field, value,
                          f"the longest slice ({longest / 1e6:g} us, guardband {c.guardband / 1e6:g} us) is up "
                          f"{up / 1e6:g} us, which carries {per_slice} B at {c.link_rate:,} bit/s: less than one "
                          f"packet ({pkt} B, MTU + header), so nothing crosses the circuits (every packet would be "
                          f"dropped as oversize){hint}")

    def buffer_check(self) -> str | None:
        """What is wrong with the switches' buffers for this schedule, or None: a calendar
        port must be able to hold what one slice of its circuit sends (the slice's up-time
        x the link rate), else packets that wait for a later slice are dropped under load.
        With a shared pool the most one queue can hold is alpha / (1 + alpha) x the pool
        (the dynamic threshold with every other queue empty)."""
        c = self.config
        if self._static or self.fabric == "electrical" or not self.slices:
            return None
        d = max(self._durations or [c.slice])
        up = max(0, d - c.guardband)
        per_slice = up * c.link_rate // 8 // 10**12
        if c.shared_buffer is not None:
            a = c.alphas[0]
            most = int(a * c.shared_buffer / (1 + a))
            what = (f"a shared {c.shared_buffer / 1e6:g} MB pool at alpha {a:g} lets one queue hold at most "
                    f"{most / 1e6:.3g} MB (alpha / (1 + alpha) x pool)")
        else:
            most = int(c.buffer)
            what = f"the per-port buffer is {most / 1e6:.3g} MB"
        if most >= per_slice:
            return None
        return (f"buffer: {what}, less than what one slice of a circuit sends ({per_slice / 1e6:.3g} MB = "
                f"{up / 1e6:g} us up x {c.link_rate / 1e9:g} Gb/s): packets queued for a later slice will be "
                f"dropped under load (give a larger buffer, or a shared one such as a Tofino2's 64MB)")

    def _check_buffers(self) -> None:
        import warnings

        from ..errors import BufferWarning

        msg = self.buffer_check()
        if msg:
            warnings.warn(BufferWarning(msg), stacklevel=3)

    def _deploy_topo(self, circuits: list[Circuit], slices: int | None,
                     slice_durations: Sequence[Any] | None, queued: str, at: Any = None,
                     drain: bool = False) -> None:
        from ..fabrics.topology import schedule_table

        maxp = int(self.user_ports.max()) if len(self.user_ports) else 0
        for i, c in enumerate(circuits):
            for node, port in ((c.n1, c.p1), (c.n2, c.p2)):
                if not (isinstance(node, (int, np.integer)) and 0 <= node < self.total_nodes):
                    raise ConfigError(f"circuits[{i}]", c, f"slice {c.ts}: node {node} out of range "
                                      f"0..{self.total_nodes - 1}")
                if not (isinstance(port, (int, np.integer)) and 0 <= port < self.user_ports[node]):
                    raise ConfigError(f"circuits[{i}]", c, f"slice {c.ts}: port {port} of node {node} "
                                      f"out of range 0..{self.user_ports[node] - 1}")
        if self.electrical_ports:
            kinds = self._port_kinds()
            for i, c in enumerate(circuits):
                k1 = kinds[self.gport(c.n1, c.p1)] == _KIND["electrical"]
                k2 = kinds[self.gport(c.n2, c.p2)] == _KIND["electrical"]
                if k1 != k2:
                    raise ConfigError(f"circuits[{i}]", c, "a circuit joins two electrical or two optical ports "
                                      f"(port {c.p1} of node {c.n1} is {'electrical' if k1 else 'optical'}, "
                                      f"port {c.p2} of node {c.n2} is {'electrical' if k2 else 'optical'})")
                if k1 and (c.ts is not None or c.directed):
                    raise ConfigError(f"circuits[{i}]", c, "electrical links are static (ts=None) and two-way")
        table = schedule_table(circuits, self.total_nodes, maxp, slices)
        s = table.shape[0]
        static = all(c.ts is None for c in circuits)
        if self.fabric == "electrical" and not static:
            raise ConfigError("circuits", next(c for c in circuits if c.ts is not None),
                              "an electrical fabric takes static circuits (ts=None) only")
        # remap uniform (node*maxp + port) ids to this network's global port ids
        node_of = np.arange(self.total_nodes * maxp) // max(maxp, 1)
        port_of = np.arange(self.total_nodes * maxp) % max(maxp, 1)
        valid = port_of < self.user_ports[node_of]
        g = np.full(self.total_nodes * maxp, -1, dtype=np.int64)
        g[valid] = self.port_offset[node_of[valid]] + port_of[valid]
        peer = np.full((s, self.n_ports), -1, dtype=np.int64)
        src_cols = np.nonzero(valid)[0]
        vals = table[:, src_cols]
        mapped = np.where(vals >= 0, g[np.maximum(vals, 0)], -1)
        peer[:, g[src_cols]] = mapped
        durations = None
        if slice_durations is not None:
            durations = [parse_time(d, f"slice_durations[{i}]") for i, d in enumerate(slice_durations)]
            if len(durations) != s:
                raise ConfigError("slice_durations", len(durations), f"expected {s} durations, one per slice")
            for i, d in enumerate(durations):
                if d <= self.config.guardband:
                    raise ConfigError(f"slice_durations[{i}]", d, "slice must be longer than the guardband")
        if self._live is not None and self.electrical_ports or (self._live is not None and self.fabric == "electrical"):
            kinds = self._port_kinds()
            def wires(cs: Sequence[Circuit]) -> set[tuple[int, int, int, int]]:
                return {(c.n1, c.p1, c.n2, c.p2) for c in cs
                        if kinds[self.gport(c.n1, c.p1)] == _KIND["electrical"]}
            if wires(circuits) != wires(self.circuits):
                raise ConfigError("circuits", "electrical links", "electrical links are static: a running network "
                                  "keeps them as they are (only optical circuits change)")
        if self._live is not None:
            # run-time reconfiguration: same kind of schedule, same number of slices
            if static != self._static or s != self.slices:
                raise ConfigError("circuits", f"{s} slices", f"a running network keeps its schedule's shape "
                                  f"({self.slices} {'static' if self._static else 'cyclic'} slices)")
            if durations is not None:
                raise ConfigError("slice_durations", slice_durations, "slice durations cannot change during a run")
            when = self._live.sim.now if at is None else parse_time(at, "at")
            if when < self._live.sim.now:
                raise ConfigError("at", at, f"before the engine's current time ({self._live.sim.now} ps)")
            try:
                if drain and not static:
                    raise ConfigError("drain", True, "a drained reconfiguration needs a static schedule "
                                      "(a cyclic one switches at slice boundaries)")
                self._live.sim.reconfigure(when, peer.reshape(-1).astype(np.int64),
                                           self.config.reconfiguration_delay, queued == "drop", drain)
            except _core.EngineSpecError as e:
                raise _engine_error(e) from None
            self.circuits = list(circuits)
            self._peer = peer
            self._rx_only = self._receive_only(peer)
            self._paths = None
            return
        if at is not None:
            raise ConfigError("at", at, "a change time applies to a running network only")
        if drain:
            raise ConfigError("drain", drain, "a drained reconfiguration applies to a running network only")
        self.circuits = list(circuits)
        self._peer = peer
        self._rx_only = self._receive_only(peer)
        self.slices = s
        self._static = static
        self._durations = durations
        self._paths = None

    @staticmethod
    def _receive_only(peer: np.ndarray) -> np.ndarray:
        """(slices, ports) mask: the port receives on a directed circuit and sends nothing."""
        rx = np.zeros(peer.shape, dtype=bool)
        for s in range(peer.shape[0]):
            q = peer[s]
            senders = np.flatnonzero(q >= 0)
            rx[s, q[senders]] = True
        return rx & (peer < 0)

    def _check_sends(self, node: int, port: int, dep: int | None, field: str, value: Any) -> None:
        """A route must not send into the receiving end of a directed circuit."""
        rx = getattr(self, "_rx_only", None)
        if rx is None:
            return
        gp = self.gport(node, port)
        bad = rx[:, gp].all() if dep is None else (dep < rx.shape[0] and rx[dep, gp])
        if bad:
            where = "in every slice" if dep is None else f"in slice {dep}"
            raise ConfigError(field, value, f"port {port} of node {node} only receives {where} "
                              "(the far end of a directed circuit): nothing can be sent through it")

    # ------------------------------------------------------------------ routing
    def deploy_routing(self, paths: Sequence[Path] | Path | str | Mapping[int, Sequence[Entry]], lookup: str = "hop",
                       multipath: str = "packet", *, max_hop: int = 10, alpha: float = 1.0,
                       partial: bool = False, paths_per_pair: int = 1) -> None:
        """Install routes: a list of paths (or one path, e.g. from
        ``od.routing.earliest_path``) compiled to time-flow tables (``lookup="hop"``)
        or to source routes (``lookup="source"``), or a built-in router name: ``"vlb"``,
        ``"direct"`` (decide exactly as the compiled tables would), ``"hoho"`` (per hop,
        earliest path with at most ``max_hop`` hops; 10 by default, as UCMP's simulator
        computes its paths), ``"ucmp"`` (source routed, earliest
        paths chosen by flow age with weight ``alpha`` on extra hops) or ``"expander"``
        (Opera: source routed over a shortest path of the current slice's expander; up to
        ``paths_per_pair`` shortest paths per pair and slice, one drawn per packet, or per
        flow with ``multipath="flow"``, where it is first routed).

        On a cyclic schedule, paths must say in which slice every hop leaves when its port's
        circuit changes with the slice (paths of ``ecmp`` or ``ksp`` on the union graph do
        not: use ``ksp(..., per_slice=True)``), and the paths of every (source, destination)
        pair must cover every arrival slice of the network's cycle, or a packet arriving in
        a missing slice would have no route; both raise ``ConfigError`` naming the path or
        the slice. ``partial=True`` accepts paths that leave slices uncovered (packets
        arriving there are dropped as ``no_route``)."""
        from ..fabrics.routing import compile_paths, compile_routes

        if lookup not in ("hop", "source"):
            raise ConfigError("lookup", lookup, "expected hop or source")
        if multipath not in ("packet", "flow", "adaptive"):
            raise ConfigError("multipath", multipath, "expected packet, flow or adaptive")
        self._multipath = multipath
        if isinstance(paths, dict):
            # compiled tables {node: [Entry]} (e.g. routing.first_hop_tables)
            tables: dict[int, list[Entry]] = {}
            for node, es in paths.items():
                checked = []
                for e in es:
                    if not isinstance(e, Entry):
                        raise ConfigError(f"tables[{node}]", e, "expected opendcn.Entry items")
                    self._check_entry(e, node)
                    checked.append(e)
                tables[int(node)] = checked
            self._compiled, self._routes, self._router, self._paths = tables, [], "table", None
            if self._live is not None:
                try:
                    self._live.sim.set_tables(self._table_columns())
                except _core.EngineSpecError as e:
                    raise _engine_error(e) from None
            return
        if isinstance(paths, str):
            if paths not in BUILTIN_ROUTERS:
                raise ConfigError("routing", paths, f"unknown built-in router; known: {', '.join(BUILTIN_ROUTERS)}")
            if self._peer is None:
                raise ConfigError("routing", paths, "deploy_topo must come before a built-in router")
            if not (isinstance(max_hop, int) and 1 <= max_hop <= 16):
                raise ConfigError("max_hop", max_hop, "expected an integer 1..16")
            if not (isinstance(alpha, (int, float)) and alpha >= 0):
                raise ConfigError("alpha", alpha, "expected a non-negative number")
            if not (isinstance(paths_per_pair, int) and 1 <= paths_per_pair <= 16):
                raise ConfigError("paths_per_pair", paths_per_pair, "expected an integer 1..16")
            if paths_per_pair != 1 and paths != "expander":
                raise ConfigError("paths_per_pair", paths_per_pair, "only the expander router keeps several paths per pair")
            self._expander_paths = paths_per_pair
            self._router = paths
            self._max_hop = max_hop
            self._alpha = float(alpha)
            self._compiled = {}
            self._routes = []
            return
        if isinstance(paths, Path):
            paths = [paths]
        if paths is None:
            raise ConfigError("paths", paths, "expected a list of opendcn.Path or a built-in router name")
        try:
            paths = list(paths)  # type: ignore[arg-type]  # (a mapping of tables returned above)
        except TypeError:
            raise ConfigError("paths", paths, "expected a list of opendcn.Path or a built-in router name") from None
        if not isinstance(partial, bool):
            raise ConfigError("partial", partial, "expected True or False")
        for i, p in enumerate(paths):
            if not isinstance(p, Path):
                raise ConfigError(f"paths[{i}]", p, "expected an opendcn.Path")
            for h in p.hops:
                self._check_sends(h.node, h.port, h.dep_ts, f"paths[{i}]", p)
        self._check_cyclic_paths(paths, partial)
        self._paths = paths
        if lookup == "hop":
            self._compiled = compile_paths(paths, lookup="hop")
            self._routes = []
            self._router = "table"
        else:
            self._routes = compile_routes(paths)
            self._compiled = {}
            self._router = "source"
        if self._live is not None:
            if self._router != "table":
                raise ConfigError("lookup", lookup, "run-time route changes use hop lookup")
            try:
                self._live.sim.set_tables(self._table_columns())
            except _core.EngineSpecError as e:
                raise _engine_error(e) from None

    def _check_cyclic_paths(self, paths: list[Path], partial: bool) -> None:
        """On a cyclic schedule: every hop through a port whose circuit changes with the
        slice names its departure slice, and (unless ``partial``) every (src, dst) pair's
        paths cover every arrival slice of the cycle."""
        if self._static or self.fabric == "electrical" or self._peer is None:
            return
        peer = self._peer
        changing = np.any(peer != peer[:1], axis=0) | np.any(peer < 0, axis=0)
        for i, p in enumerate(paths):
            for j, h in enumerate(p.hops):
                if h.dep_ts is None and 0 <= h.node < self.total_nodes and 0 <= h.port < self.user_ports[h.node] \
                        and changing[self.gport(h.node, h.port)]:
                    raise ConfigError(f"paths[{i}]", p, f"hop {j} leaves node {h.node} by port {h.port} without a "
                                      f"departure slice, but that port's circuit changes with the slice (a cyclic "
                                      f"schedule of {self.slices} slices): it would take whichever circuit is up. "
                                      "Route slice by slice, e.g. od.routing.ksp(net, per_slice=True)")
        if partial:
            return
        covered: dict[tuple[int, int], set[int]] = {}
        everything = set(range(self.slices))
        for p in paths:
            got = covered.setdefault((p.src, p.dst), set())
            if p.ts is None:
                got |= everything
            elif isinstance(p.ts, (int, np.integer)):
                got.add(int(p.ts) % self.slices)
        for (src, dst), got in sorted(covered.items()):
            if got != everything:
                miss = min(everything - got)
                have = ", ".join(map(str, sorted(got)))
                raise ConfigError("paths", f"slice {miss}", f"no path from node {src} to node {dst} for packets "
                                  f"arriving in slice {miss}: the network cycles through {self.slices} slices "
                                  f"(0..{self.slices - 1}) and these paths cover slice(s) {have} only. Compute "
                                  "paths over the network's own cycle (e.g. od.routing.direct(net), or "
                                  "slices=net.slices), or pass partial=True to drop such packets as no_route")

    def add(self, entry: Entry, node: int) -> None:
        """Install one time-flow entry at ``node`` by hand (validated)."""
        if not isinstance(entry, Entry):
            try:
                entry = Entry(*entry)
            except TypeError:
                raise ConfigError("entry", entry, "expected Entry(arr_ts, src, dst, dep_ts, port)") from None
        self._check_entry(entry, node)
        if self._router != "table":
            raise ConfigError("entry", entry, f"routing is the built-in {self._router!r} router; "
                              "hand-written entries need table routing")
        self._manual.append((node, entry))

    def _check_entry(self, e: Entry, node: int) -> None:
        def is_int(x: Any) -> bool:
            return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

        if not is_int(node) or not 0 <= node < self.total_nodes:
            raise ConfigError("node", node, f"node out of range 0..{self.total_nodes - 1}")
        if not is_int(e.dst) or not 0 <= e.dst < self.total_nodes:
            raise ConfigError("entry.dst", e.dst, f"node out of range 0..{self.total_nodes - 1}")
        if e.src is not None and (not is_int(e.src) or not 0 <= e.src < self.total_nodes):
            raise ConfigError("entry.src", e.src, f"node out of range 0..{self.total_nodes - 1}")
        if not is_int(e.port) or not 0 <= e.port < self.user_ports[node]:
            raise ConfigError("entry.port", e.port, f"node {node} has ports 0..{self.user_ports[node] - 1}")
        for name in ("arr_ts", "dep_ts"):
            v = getattr(e, name)
            if v is not None and (not is_int(v) or not 0 <= v < self.slices):
                raise ConfigError(f"entry.{name}", v, f"slice out of range 0..{self.slices - 1} (or None)")
        self._check_sends(node, e.port, e.dep_ts, "entry", e)

    def tables(self, node: int) -> list[Entry]:
        """The time-flow table of ``node`` (local port numbers). For a built-in router the
        table is materialized with the reference compiler (small networks only)."""
        if not 0 <= node < self.total_nodes:
            raise ConfigError("node", node, f"node out of range 0..{self.total_nodes - 1}")
        compiled = self._reference_tables() if self._router in BUILTIN_ROUTERS else self._compiled
        out = list(compiled.get(node, []))
        out += [e for n, e in self._manual if n == node]
        return out

    def _reference_tables(self) -> dict[int, list[Entry]]:
        from ..fabrics import routing

        if self._router == "vlb":
            paths = routing.vlb(self.circuits)
        elif self._router == "direct":
            paths = routing.direct(self.circuits)
        elif self._router == "hoho":
            paths = routing.hoho(self.circuits, self._max_hop)
        else:
            paths = routing.ucmp(self.circuits, self._max_hop)
        return routing.compile_paths(paths, lookup="hop")

    def export_tables(self, path: str | os.PathLike[str]) -> None:
        """Write every node's time-flow table as JSON: {node: [{arr_ts, src, dst, dep_ts, port}]}."""
        data = {str(n): [e._asdict() for e in self.tables(n)] for n in range(self.total_nodes)}
        _atomic_write(FsPath(path), json.dumps(data, indent=1))

    def _table_columns(self) -> dict[str, np.ndarray]:
        rows = [(n, e) for n, es in sorted(self._compiled.items()) for e in es] + self._manual
        def col(f):  # noqa: E306
            return np.array([f(n, e) for n, e in rows], dtype=np.int64) if rows else np.zeros(0, np.int64)
        w = lambda v: -1 if v is None else v  # noqa: E731
        return {
            "tf_node": col(lambda n, e: n), "tf_arr": col(lambda n, e: w(e.arr_ts)),
            "tf_src": col(lambda n, e: w(e.src)), "tf_dst": col(lambda n, e: e.dst),
            "tf_dep": col(lambda n, e: w(e.dep_ts)),
            "tf_port": col(lambda n, e: self.gport(n, e.port)),
        }

    def transport(self, rule: Any = None, **params: Any) -> dict[str, Any]:
        """Choose the end-to-end transport of each flow by a rule on its size, and set the
        transports' parameters (see :mod:`opendcn.network.transport`)::

            net.transport("dctcp", ecn_k="30KB")
            net.transport("ndp<1MB,tcp", dupack=3, min_rto="1ms")

        Parameters: ``dupack``, ``init_cwnd``, ``init_ssthresh`` (TCP's initial slow-start
        threshold in packets; default unlimited), ``min_rto``, ``rto`` (initial), ``max_rto``,
        ``dctcp_g``, ``ecn_k`` (DCTCP marking threshold of every port), ``ndp_init_window``,
        ``ndp_rto``, ``return_to_sender``, ``ndp_queue`` (packets per NDP data/header class),
        ``pull_rate`` (NDP pulls per full-packet time of the receiver link), ``pull_pacer``
        (``"host"``: one pull pacer per receiving host; ``"flow"``: one per flow),
        ``pad_segments`` (every data packet of a flow of at least one MSS a full MSS on the
        wire, as htsim's NDP), ``bulk_slots`` (RotorLB served by the NIC in full-packet
        slots, idle when no bulk packet is due, as opera-sim), ``nic_push`` (every 1 500 bytes of
        other traffic a NIC sends push a committed RotorLB packet back, as opera-sim),
        ``ctrl_bytes``; for ``credit``: ``credit_bytes`` (per link and virtual channel),
        ``vcs`` (virtual channels), ``deadlock_timeout``. Returns the settings in force."""
        known = {"dupack", "init_cwnd", "init_ssthresh", "min_rto", "rto", "max_rto", "dctcp_g", "ecn_k", "ndp_init_window",
                 "ndp_rto", "return_to_sender", "ndp_queue", "ctrl_bytes", "credit_bytes", "vcs",
                 "deadlock_timeout", "pull_rate", "pull_pacer", "pad_segments", "bulk_slots",
                 "nic_push"}
        for k in params:
            if k not in known:
                raise ConfigError(k, params[k], f"unknown transport parameter; known: {', '.join(sorted(known))}")
        _update_transport(self._transport, rule=rule, **params)
        return self._transport.describe(int(self.config.buffer))

    def vc_rule(self, port_class: Any = None, escalate: Any = ()) -> None:
        """Let the routing choose the virtual channels of a ``credit`` network.

        By default a packet's n-th fabric link uses channel n (the last channel beyond).
        With a rule, every port has a class (0..7) and a packet starts on channel 0; on
        each later link it keeps the channel of its previous link, or goes one up (capped
        at the last channel) when the pair (class of the port its previous link left
        through, class of the port it takes now) is in ``escalate``. Per-packet multipath
        is unchanged: the channel follows from the ports a packet crosses, whichever
        candidate it picks. For example, on leaf–spine pods joined by global links
        (classes 0 up, 1 down, 2 global), ``escalate=[(1, 0), (2, 2)]`` moves a packet to
        channel 1 where it climbs out of an intermediate pod or takes a second global
        link in a row.

        ``port_class``: ``{(node, port): class}`` (unlisted ports class 0), or an integer
        array with one class per global port (:meth:`gport` order); None restores
        channels by hop count. :func:`opendcn.fabrics.channels.channel_dependency_cycle` checks
        that a rule and the routes leave no cycle of channel dependencies."""
        if port_class is None:
            self._vc_class = None
            self._transport.credit_vc_step = None
            return
        P = self.n_ports
        if isinstance(port_class, np.ndarray):
            cls = np.asarray(port_class)
            if cls.shape != (P,) or not np.issubdtype(cls.dtype, np.integer):
                raise ConfigError("port_class", f"array of shape {cls.shape}",
                                  f"expected one integer class per global port ({P})")
            cls = cls.astype(np.int64)
        else:
            if not hasattr(port_class, "items"):
                raise ConfigError("port_class", type(port_class).__name__,
                                  "expected {(node, port): class} or an array over the global ports")
            cls = np.zeros(P, np.int64)
            for key, c in port_class.items():
                try:
                    node, port = (int(x) for x in key)
                except (TypeError, ValueError):
                    raise ConfigError("port_class", key, "keys are (node, port) pairs") from None
                if not 0 <= node < self.total_nodes or not 0 <= port < self.user_ports[node]:
                    raise ConfigError("port_class", (node, port), "no such port")
                if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
                    raise ConfigError(f"port_class[{node}, {port}]", c, "expected an integer class 0..7")
                cls[self.gport(node, port)] = int(c)
        bad = np.flatnonzero((cls < 0) | (cls > 7))
        if len(bad):
            raise ConfigError("port_class", int(cls[bad[0]]), "expected classes 0..7")
        step = 0
        for pair in escalate:
            try:
                a, b = pair
            except (TypeError, ValueError):
                raise ConfigError("escalate", pair, "expected (class, class) pairs") from None
            for x in (a, b):
                if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= x <= 7:
                    raise ConfigError("escalate", pair, "expected (class, class) pairs of classes 0..7")
            step |= 1 << (8 * int(a) + int(b))
        self._vc_class = cls
        self._transport.credit_vc_step = step

    def _checked_hop_limit(self) -> int:
        h = self.hop_limit
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 1 <= h <= 65_535:
            raise ConfigError("hop_limit", h, "expected links 1..65535 (None: no limit)")
        return int(h)

    def _checked_lookahead(self) -> int:
        la = self.lookahead
        if isinstance(la, bool) or not isinstance(la, (int, np.integer)) or la < 0:
            raise ConfigError("lookahead", la, "expected picoseconds >= 0")
        return int(la)

    def port_discipline(self, ports: Sequence[tuple[int, int]] | None = None, *,
                        classes: Sequence[Any] | None = None, ecn_k: Any = None,
                        trim: bool | None = None, weights: Sequence[int] | None = None) -> None:
        """Set how ports queue and serve packets (default: the transports' needs).

        ``classes``: byte caps of strict-priority classes, highest first (class 0 holds
        control packets and trimmed headers, class 1 NDP data, class 2 other data; a port
        with fewer classes puts the lower ones in its last), e.g. Duo's
        ``["75KB", "75KB", "75KB"]``; ``ecn_k``: ECN marking threshold (bytes, 0 = off);
        ``trim``: cut NDP data that finds its class full to a header; ``weights``: one
        positive weight per class for weighted service (deficit round robin, a weight of w
        serves w full packets per round) instead of strict priority. ``ports``: (node,
        port) pairs, default every port. Priority classes and trimming apply to
        electrical, host and static optical ports."""
        gps: Sequence[int]
        if ports is None:
            gps = range(self.n_ports)
        else:
            listed: list[int] = []
            for node, port in ports:
                if not 0 <= node < self.total_nodes or not 0 <= port < self.port_offset[node + 1] - self.port_offset[node]:
                    raise ConfigError("ports", (node, port), "no such port")
                listed.append(self.gport(node, port))
            gps = listed
        d: dict[str, Any] = {}
        if classes is not None:
            caps = [parse_size(c, f"classes[{i}]") for i, c in enumerate(classes)]
            if not 1 <= len(caps) <= 8:
                raise ConfigError("classes", list(classes), "expected 1 to 8 class caps")
            for i, c in enumerate(caps):
                if c <= 0:
                    raise ConfigError(f"classes[{i}]", classes[i], "every priority class needs a positive byte cap")
            d["classes"] = caps
        if ecn_k is not None:
            if isinstance(ecn_k, (int, float)) and not isinstance(ecn_k, bool) and ecn_k < 0:
                raise ConfigError("ecn_k", ecn_k, "must be >= 0 bytes")
            d["ecn_k"] = parse_size(ecn_k, "ecn_k")
        if trim is not None:
            if not isinstance(trim, bool):
                raise ConfigError("trim", trim, "expected True or False")
            d["trim"] = trim
        if weights is not None:
            ws = list(weights)
            for i, w in enumerate(ws):
                if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1:
                    raise ConfigError(f"weights[{i}]", w, "expected a positive integer weight")
            n = len(d.get("classes", [])) or None
            if n is not None and len(ws) != n:
                raise ConfigError("weights", ws, f"expected one weight per class ({n})")
            d["weights"] = [int(w) for w in ws]
        for gp in gps:
            self._disc.setdefault(int(gp), {}).update(d)

    def _disc_columns(self, kind: np.ndarray, cyclic: bool) -> dict[str, np.ndarray]:
        """Per-port discipline arrays: the transports' defaults, then explicit settings."""
        t = self._transport
        names = t.rule.names
        P = self.n_ports
        c = self.config
        ecn = np.zeros(P, dtype=np.int64)
        trim = np.zeros(P, dtype=np.int64)
        weighted = np.zeros(P, dtype=np.int64)
        wts: dict[int, list[int]] = {}
        ncls = np.zeros(P, dtype=np.int64)
        caps: list[list[int]] = [[] for _ in range(P)]
        # a served cyclic optical port sends only while its circuit is up; it needs routes
        # that can be re-decided at a node when a circuit goes (the expander router)
        servable = ~((kind == _KIND["optical"]) & cyclic & (self._router != "expander")) & (kind != _KIND["unused"])
        if "dctcp" in names:
            ecn[kind != _KIND["unused"]] = t.ecn_k
        if "ndp" in names:
            q = t.ndp_queue_packets * (int(c.mtu) + int(c.header))
            default = [q, q] + ([c.port_buffer] if names - {"ndp"} else [])
            for gp in np.nonzero(servable)[0].tolist():
                caps[gp] = list(default)
                trim[gp] = 1
        if self._pias:
            # PIAS: control and headers in class 0, level i data in class 1 + i
            k = len(self._pias) + 2
            for gp in np.nonzero(servable)[0].tolist():
                if not caps[gp]:
                    caps[gp] = [c.port_buffer] * k
        for gp, d in self._disc.items():
            if "ecn_k" in d:
                ecn[gp] = d["ecn_k"]
            if "trim" in d:
                trim[gp] = int(d["trim"])
            if "classes" in d:
                caps[gp] = list(d["classes"]) if len(d["classes"]) > 1 else []
            if "weights" in d:
                if len(d["weights"]) != len(caps[gp]):
                    raise ConfigError("weights", d["weights"], f"expected one weight per priority class "
                                      f"({len(caps[gp])}) of the port")
                weighted[gp] = 1
                wts[gp] = d["weights"]
            if (trim[gp] or len(caps[gp]) > 1) and not servable[gp]:
                node = int(np.searchsorted(self.port_offset, gp, side="right") - 1)
                raise ConfigError("port_discipline", (node, int(gp - self.port_offset[node])),
                                  "priority classes and trimming need an electrical, host or static optical port")
        credit = np.zeros(P, dtype=np.int64)
        if "credit" in names:
            if (kind == _KIND["optical"]).any() and cyclic:
                raise ConfigError("transport", t.rule.text, "credit-based flow control needs links that stay up "
                                  "(electrical or static optical), not a cyclic optical schedule")
            credit[servable] = 1
        if not (ecn.any() or trim.any() or any(caps) or credit.any()):
            return {}
        for gp in range(P):
            ncls[gp] = len(caps[gp])
        flat = [x for cs in caps for x in cs]
        return {"port_ecn_k": ecn, "port_trim": trim, "port_classes": ncls,
                "class_cap": np.array(flat, dtype=np.int64), "port_credit": credit,
                "port_weighted": weighted,
                "class_weight": np.array([w for gp in sorted(wts) for w in wts[gp]], dtype=np.int64)}

    def pias(self, thresholds: Sequence[Any]) -> None:
        """PIAS-style priorities: a source tags a data packet with level i while its flow
        has sent fewer than ``thresholds[i]`` bytes (the last level beyond), and every
        electrical, host and static optical port serves control and headers first, then
        the levels in order (strict priority, one class per level). ``[]`` turns it off.
        Example: ``net.pias(["10KB", "100KB", "1MB"])``."""
        ts = [parse_size(t, f"thresholds[{i}]") for i, t in enumerate(thresholds)]
        if any(t <= 0 for t in ts) or any(b <= a for a, b in zip(ts, ts[1:])):
            raise ConfigError("thresholds", list(thresholds), "expected increasing positive sizes")
        if len(ts) > 6:
            raise ConfigError("thresholds", list(thresholds), "at most 6 thresholds (8 classes per port)")
        self._pias = ts

    def inject_loss(self, losses: Sequence[tuple[int, int]]) -> None:
        """Drop the first copy of these data segments: (flow id, segment number) pairs,
        segments counting MTU-sized packets of the flow from 0. Each is dropped where it
        first arrives after leaving its source (drop reason ``injected``); a transport
        then recovers it. For tests and loss studies."""
        out = []
        for i, item in enumerate(losses):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise ConfigError(f"losses[{i}]", item, "expected (flow id, segment)")
            f, q = item
            for name, v in (("flow", f), ("segment", q)):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                    raise ConfigError(f"losses[{i}].{name}", v, "expected a non-negative integer")
            out.append((int(f), int(q)))
        self._loss = out

    def watch(self, ports: Sequence[tuple[int, int]] | None) -> None:
        """Sample these (node, port) pairs in the time series (default: all ports when
        the network has at most 4096 ports)."""
        if ports is None:
            self.watch_ports = None
            return
        g = []
        for node, port in ports:
            if not 0 <= node < self.total_nodes or not 0 <= port < self.port_offset[node + 1] - self.port_offset[node]:
                raise ConfigError("watch", (node, port), "no such port")
            g.append(self.gport(node, port))
        self.watch_ports = np.array(g, dtype=np.int64)

    # ------------------------------------------------------------------ spec
    def _spec(self, flows: Any, duration_ps: int, seed: int, collect_tm: bool) -> dict[str, Any]:
        c = self.config
        self._holding = self._hold()
        n, u, h = c.nodes, c.uplinks, c.hosts_per_node
        P = self.n_ports
        kind = np.zeros(P, dtype=np.int64)
        rate = np.zeros(P, dtype=np.int64)
        prop = np.zeros(P, dtype=np.int64)
        buf = np.full(P, c.port_buffer, dtype=np.int64)
        peer = np.full(P, -1, dtype=np.int64)
        kind[:] = self._port_kinds()
        for node in range(self.total_nodes):
            a = int(self.port_offset[node])
            nu = int(self.user_ports[node])
            rate[a:a + nu] = c.link_rate if node < n else self.switch_link_rate
            prop[a:a + nu] = c.propagation
        if self.switches:
            # links between nodes and switches run at the switch link rate on both ends (in a
            # hybrid network: the electrical uplinks only)
            e = self.electrical_ports or u
            for node in range(n):
                a = int(self.port_offset[node])
                rate[a + u - e:a + u] = self.switch_link_rate
        endpoints = c.endpoints
        ep_node = np.arange(n, dtype=np.int64) if not h else np.repeat(np.arange(n, dtype=np.int64), h)
        ep_down = np.full(endpoints, -1, dtype=np.int64)
        if h:
            host_rate = c.host_link_rate or c.link_rate
            for node in range(n):
                a = int(self.port_offset[node]) + u
                kind[a:a + h] = _KIND["hostdown"]
                rate[a:a + h] = host_rate
                prop[a:a + h] = c.host_propagation
                peer[a:a + h] = np.arange(node * h, node * h + h)
                ep_down[node * h:node * h + h] = np.arange(a, a + h)
        if self._peer is None:
            raise ConfigError("circuits", None, "deploy_topo must be called before run")
        if self.electrical_ports:
            # electrical links take their (static) peers from the circuits
            row = self._peer[0]
            sel = (row >= 0) & (kind == _KIND["electrical"])
            peer[sel] = row[sel]
        if self.fabric == "electrical":
            row = self._peer[0]
            sel = row >= 0
            peer[sel] = row[sel]
            slice_ps = np.zeros(0, dtype=np.int64)
            sched_peer = np.zeros(0, dtype=np.int64)
        elif self._static:
            slice_ps = np.zeros(0, dtype=np.int64)
            sched_peer = self._peer[0].copy()
        else:
            d = self._durations or [c.slice] * self.slices
            slice_ps = np.array(d, dtype=np.int64)
            sched_peer = self._peer.reshape(-1).copy()
        if self.watch_ports is not None:
            watch = self.watch_ports
        elif P <= 4096:
            watch = np.arange(P, dtype=np.int64)
        else:
            watch = np.zeros(0, dtype=np.int64)
        spec: dict[str, Any] = {
            "nodes": self.total_nodes, "port_offset": self.port_offset.astype(np.int64),
            "port_kind": kind, "port_rate_bps": rate, "port_prop_ps": prop,
            "port_buffer_bytes": buf, "port_peer": peer,
            "slice_ps": slice_ps, "guardband_ps": 0 if self._static else c.guardband,
            "sched_peer": sched_peer,
            "hosts_mode": bool(h), "ep_node": ep_node,
            "ep_rate_bps": np.full(endpoints, c.endpoint_rate, dtype=np.int64),
            "ep_prop_ps": np.full(endpoints, c.host_propagation if h else 0, dtype=np.int64),
            "ep_down_port": ep_down,
            "router": self._router, "multipath": self._multipath,
            "max_hop": int(getattr(self, "_max_hop", 10)), "ucmp_alpha": float(getattr(self, "_alpha", 1.0)),
            "expander_paths": int(getattr(self, "_expander_paths", 1)),
            "flow_start_ps": flows.start_ps.astype(np.int64), "flow_src": flows.src.astype(np.int64),
            "flow_dst": flows.dst.astype(np.int64), "flow_size": flows.size.astype(np.int64),
            "mtu_bytes": int(c.mtu), "header_bytes": int(c.header), "seed": int(seed),
            "sample_interval_ps": int(c.sample_interval), "watch_ports": watch,
            "collect_tm": bool(collect_tm),
            "stop_when": str(self.stop_when), "net_series": bool(self.net_series),
            "log_drops": int(self.log_drops),
            "hold_unrouted": self._holding,
            **({} if self.hop_limit is None else {"hop_limit": self._checked_hop_limit()}),
            **({"lookahead_ps": self._checked_lookahead()} if self.lookahead else {}),
            "admission_control": self._admission(),
            **self._services,
        }
        if c.shared_buffer is not None:
            spec["shared_buffer_bytes"] = np.full(self.total_nodes, int(c.shared_buffer), dtype=np.int64)
            spec["buffer_alpha"] = c.alphas
        if getattr(flows, "after_ids", None) is not None:
            spec["flow_dep_ptr"] = np.asarray(flows.after_ptr, dtype=np.int64)
            spec["flow_dep_ids"] = np.asarray(flows.after_ids, dtype=np.int64)
            spec["flow_gap_ps"] = np.asarray(flows.gap_ps, dtype=np.int64)
        if getattr(flows, "coflow", None) is not None:
            spec["flow_coflow"] = np.asarray(flows.coflow, dtype=np.int64)
            if flows.gap_ps is not None:
                spec["flow_gap_ps"] = np.asarray(flows.gap_ps, dtype=np.int64)
        if getattr(flows, "rate_bps", None) is not None:
            spec["flow_app_rate_bps"] = np.asarray(flows.rate_bps, dtype=np.int64)
        names = self._transport.rule.names
        if names != {"ideal"}:
            spec["flow_transport"] = self._transport.rule.assign(flows.size)
            spec.update(self._transport.spec())
            if "credit" in names:
                cb = self._transport.credit_bytes
                spec["credit_bytes"] = int(cb if cb is not None else c.buffer // self._transport.credit_vcs)
                if self._vc_class is not None:
                    spec["port_vc_class"] = self._vc_class
                    spec["credit_vc_step"] = int(self._transport.credit_vc_step or 0)
        spec.update(self._disc_columns(kind, not self._static and self.fabric != "electrical"))
        if self._pias:
            spec["pias_thresholds"] = np.array(self._pias, dtype=np.int64)
        if self._link_class:
            lc = np.full(P, -1, dtype=np.int64)
            for gp, cls in self._link_class.items():
                lc[gp] = cls
            spec["port_link_class"] = lc
        if self._loss:
            spec["loss_flow"] = np.array([x[0] for x in self._loss], dtype=np.int64)
            spec["loss_seq"] = np.array([x[1] for x in self._loss], dtype=np.int64)
        if self._router == "table":
            spec.update(self._table_columns())
        elif self._router == "source":
            rs = self._routes
            spec["rt_src"] = np.array([r[0] for r in rs], dtype=np.int64)
            spec["rt_dst"] = np.array([r[1] for r in rs], dtype=np.int64)
            spec["rt_ts"] = np.array([-1 if r[2] is None else r[2] for r in rs], dtype=np.int64)
            spec["rt_len"] = np.array([len(r[3]) for r in rs], dtype=np.int64)
            hops = [(self._route_port(r, i, hp), -1 if dep is None else dep)
                    for r in rs for i, (hp, dep) in enumerate(r[3])]
            spec["hop_port"] = np.array([x[0] for x in hops], dtype=np.int64)
            spec["hop_dep"] = np.array([x[1] for x in hops], dtype=np.int64)
        return spec

    def _admission(self) -> bool:
        a = self.admission_control
        if not isinstance(a, bool):
            raise ConfigError("admission_control", a, "expected True or False")
        return a

    def _admission_applies(self) -> bool:
        """Whether admission control acts in this network (hop-by-hop routing or UCMP's per-hop class, cyclic)."""
        return self._admission() and not self._static and self.fabric == "optical" \
            and self._router in ("table", "vlb", "direct", "hoho", "ucmp")

    def _hold(self) -> bool:
        """Whether the engine holds packets without a route (see ``hold_unrouted``)."""
        h = self.hold_unrouted
        can = self.fabric == "optical" and self._static and self._router != "source"
        if h is None:
            return can
        if not isinstance(h, bool):
            raise ConfigError("hold_unrouted", h, "expected True, False or None (auto)")
        if h and not can:
            why = ("source routes are fixed at the start of the run" if self._router == "source" else
                   "an electrical fabric's links never change" if self.fabric != "optical" else
                   "on a cyclic schedule a missing route is missing in every cycle (deploy_routing "
                   "refuses such paths unless partial=True)")
            raise ConfigError("hold_unrouted", h, f"nothing can give a held packet a route: {why}")
        return h

    def _route_port(self, route: tuple, i: int, port: int) -> int:
        """Global port of hop ``i`` of a source route (the hop's node is found by walking)."""
        node = route[0]
        for j in range(i):
            gp = self.gport(node, route[3][j][0])
            dep = route[3][j][1]
            node = self._peer_node(gp, dep)
        return self.gport(node, port)

    def _peer_node(self, gp: int, dep: int | None) -> int:
        assert self._peer is not None, "deploy_topo comes first"
        row = self._peer[0 if dep is None else dep]
        q = int(row[gp])
        if q < 0:
            raise ConfigError("routes", (gp, dep), "source route uses a port with no circuit in that slice")
        return int(np.searchsorted(self.port_offset, q, side="right") - 1)

    # ------------------------------------------------------------------ running
    def start(self, workload: Any, duration: Any, seed: int = 1, *, collect_tm: bool = False) -> None:
        """Build the engine for ``workload`` and stand at t = 0 (for control loops);
        ``collect_tm`` counts injected bytes per node pair from the start."""
        self._collect_tm = collect_tm
        super().start(workload, duration, seed)

    def _engine(self, flows: "_Cut", duration_ps: int, seed: int) -> Any:
        sim = _core.Simulator(self._spec(flows, duration_ps, seed, self._collect_tm))
        events = list(getattr(self, "_failures", []))
        rnd = getattr(self, "_random_failures", None)
        if rnd is not None:
            frac, at, rec, node_frac = rnd
            at_ps = parse_time(at, "fail_at") if at is not None else duration_ps // 3
            if frac > 0:
                links = self.fabric_links()
                k = max(1, round(frac * len(links)))
                pick = stream(1, "failures").choice(len(links), size=k, replace=False)
                chosen = [links[int(i)] for i in sorted(pick)]
                events += self._failure_events(chosen, at_ps, rec)
                self.arch_metrics["failed_links"] = [list(x) for x in chosen]
            if node_frac > 0:
                n_all = int(self.total_nodes)
                k = max(1, round(node_frac * n_all))
                nodes = sorted(int(i) for i in stream(1, "failures.nodes").choice(n_all, size=k, replace=False))
                events += self._node_failure_events(nodes, at_ps, rec)
                self.arch_metrics["failed_nodes"] = nodes
            self.arch_metrics["fail_at_ps"] = at_ps
            self.arch_metrics["recover_at_ps"] = None if rec is None else parse_time(rec, "recover_at")
        for gps, at_ps, down in events:
            sim.fail_ports(at_ps, gps, down)
        return sim

    def random_failures(self, fraction: float, at: Any = None, recover_at: Any = None, *,
                        nodes: float = 0.0) -> None:
        """Fail a ``fraction`` of the fabric links (at least one when > 0; chosen with the
        named stream ``failures``) and a fraction ``nodes`` of the nodes, switches
        included (stream ``failures.nodes``; see :meth:`fail_nodes`) at ``at`` (default:
        a third into the run) and bring them back at ``recover_at`` (default: never), in
        every run of this network: the same elements in every run."""
        for field, v in (("fail_links", fraction), ("fail_nodes", nodes)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v < 1:
                raise ConfigError(field, v, "expected a fraction in [0, 1)")
        if (fraction > 0 or nodes > 0) and "credit" in self._transport.rule.names:
            raise ConfigError("fail_links" if fraction > 0 else "fail_nodes", fraction if fraction > 0 else nodes,
                              "a lossless (credit) network cannot lose a link's packets")
        self._random_failures = (float(fraction), at, recover_at, float(nodes)) if fraction > 0 or nodes > 0 else None

    def fail_nodes(self, nodes: Sequence[int], at: Any, recover_at: Any = None) -> None:
        """Fail whole nodes (ToRs or switches) at ``at`` and, with ``recover_at``, bring
        them back then: every port of a failed node fails as in :meth:`fail_links` — its
        fabric links (both ends, so neighbours stop sending into it) and, at a ToR, the
        ports down to its hosts. Packets queued at it are dropped (``failed_link``);
        packets that reach it on the wire find no way on and are dropped too; its hosts
        are cut off until it recovers. Same timing rules as :meth:`fail_links`."""
        self._schedule_failures(self._node_failure_events(nodes, _fail_at(at), recover_at))

    def _node_failure_events(self, nodes: Sequence[int], at_ps: int,
                             recover_at: Any) -> list[tuple[np.ndarray, int, bool]]:
        items = list(nodes)
        if not items:
            raise ConfigError("nodes", items, "name at least one node")
        links: list[tuple[int, int]] = []
        host_ports: list[int] = []
        for i, v in enumerate(items):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < self.total_nodes:
                raise ConfigError(f"nodes[{i}]", v, f"not a node of this network: expected 0..{self.total_nodes - 1}")
            v = int(v)
            links += [(v, p) for p in range(int(self.user_ports[v]))]
            host_ports += range(int(self.port_offset[v]) + int(self.user_ports[v]), int(self.port_offset[v + 1]))
        ev = self._failure_events(links, at_ps, recover_at)
        gps = np.union1d(ev[0][0], np.asarray(host_ports, np.int64)).astype(np.int64)
        return [(gps, t, down) for _, t, down in ev]

    def fail_links(self, links: Sequence[tuple[int, int]], at: Any, recover_at: Any = None) -> None:
        """Fail fabric links at simulated time ``at`` and, with ``recover_at``, bring them
        back then. ``links`` are (node, port) ends of fabric links; the far end of a static
        link fails with it. From ``at`` nothing is sent into a failed link: packets queued
        on it are dropped (``failed_link``), a router with several candidates uses the
        others, and a packet whose only way on is a failed link is dropped
        (``failed_link``); on a cyclic (rotor) fabric the slices that connect a port to a
        failed one are not used either. Packets already on the wire arrive. End-to-end
        transports recover what they can. Failure is detected at once (DECIDE: no
        detection delay). Call before ``start`` (every run of the network) or during a
        started run (``at`` not in the past); not with the lossless ``credit`` transport."""
        self._schedule_failures(self._failure_events(links, _fail_at(at), recover_at))

    def _schedule_failures(self, events: list[tuple[np.ndarray, int, bool]]) -> None:
        """Failure events into the running engine, or kept for every run's start."""
        if self._live is not None:
            for gp, t, down in events:
                try:
                    self._live.sim.fail_ports(t, gp, down)
                except _core.EngineSpecError as e:
                    raise _engine_error(e) from None
        else:
            self._failures = getattr(self, "_failures", []) + events

    def _failure_events(self, links: Sequence[tuple[int, int]], at_ps: int,
                        recover_at: Any) -> list[tuple[np.ndarray, int, bool]]:
        rec_ps = None if recover_at is None else parse_time(recover_at, "recover_at")
        if rec_ps is not None and rec_ps <= at_ps:
            raise ConfigError("recover_at", recover_at, f"must come after fail_at ({at_ps} ps)")
        if "credit" in self._transport.rule.names:
            raise ConfigError("fail_links", list(links), "a lossless (credit) network cannot lose a link's packets")
        peers: dict[tuple[int, int], tuple[int, int]] = {}
        for c in self.circuits:
            if c.ts is None:
                peers[(c.n1, c.p1)] = (c.n2, c.p2)
                peers[(c.n2, c.p2)] = (c.n1, c.p1)
        gps: set[int] = set()
        for i, item in enumerate(links):
            try:
                node, port = (int(x) for x in item)
            except (TypeError, ValueError):
                raise ConfigError(f"links[{i}]", item, "expected a (node, port) pair") from None
            if not (0 <= node < self.total_nodes and 0 <= port < int(self.user_ports[node])):
                raise ConfigError(f"links[{i}]", item, "not a fabric port of a node of this network")
            gps.add(self.gport(node, port))
            if (node, port) in peers:
                gps.add(self.gport(*peers[(node, port)]))
        arr = np.asarray(sorted(gps), dtype=np.int64)
        return [(arr, at_ps, True)] + ([(arr, rec_ps, False)] if rec_ps is not None else [])

    def fabric_links(self) -> list[tuple[int, int]]:
        """One (node, port) end of every fabric link: each static link once (its lower
        end), and every port of a cyclic (rotor) fabric."""
        out: set[tuple[int, int]] = set()
        for c in self.circuits:
            if c.n1 == c.n2:
                continue
            if c.ts is None:
                out.add(min((c.n1, c.p1), (c.n2, c.p2)))
            else:
                out.add((c.n1, c.p1))
                out.add((c.n2, c.p2))
        return sorted(out)

    def _advance(self, live: "_Live", progress: bool) -> None:
        super()._advance(live, progress)
        if live.sim.stopped:
            live.duration = int(live.sim.now)  # the stop condition held before the duration
        if self.net_series:
            live.sim.final_sample()

    def _output(self, live: "_Live") -> dict[str, Any]:
        o = live.sim.output()
        o["stopped"] = bool(live.sim.stopped)
        return o

    def _result(self, live: "_Live", o: dict[str, Any], wall: float, mice: int) -> "Result":
        return Result.build(self, live, o, wall, mice)

    def collect_every(self, interval: Any, until: Any = None) -> Iterator[np.ndarray]:
        """Advance a started run by ``interval`` at a time and yield the traffic matrix
        (bytes injected per (src node, dst node)) of each interval; a control loop may
        call ``deploy_topo``/``deploy_routing`` between steps."""
        live = self._require_live()
        step = parse_time(interval, "interval")
        if step <= 0:
            raise ConfigError("interval", interval, "must be positive")
        end = live.duration if until is None else min(parse_time(until, "until"), live.duration)
        sim = live.sim
        sim.set_collect_tm(True)
        while sim.now + step <= end:
            _run_to(sim, sim.now + step)
            yield self._tm(sim.take_tm())

    def collect(self, interval: Any) -> np.ndarray:
        """Advance a started run by ``interval`` and return that interval's traffic matrix."""
        live = self._require_live()
        step = parse_time(interval, "interval")
        live.sim.set_collect_tm(True)
        _run_to(live.sim, min(live.sim.now + step, live.duration))
        return self._tm(live.sim.take_tm())

    def demand(self) -> np.ndarray:
        """Remaining bytes (not yet delivered) per (source node, destination node) of the
        flows that have started and not completed, at the current simulated time of a
        started run: the input of a demand-aware controller (an N x N int64 matrix)."""
        live = self._require_live()
        return self._tm(live.sim.demand())

    def flow_progress(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per flow of the started run's workload (in its order), at the current simulated
        time: the finish time in ps (-1: not finished, or not started), the payload bytes
        its source has sent (first transmissions) and the bytes delivered. Flows that
        start after the end of the run count as not started."""
        live = self._require_live()
        fin, sent, got = live.sim.flow_progress()
        keep = live.flows.keep
        out_fin = np.full(len(keep), -1, dtype=np.int64)
        out_sent = np.zeros(len(keep), dtype=np.int64)
        out_got = np.zeros(len(keep), dtype=np.int64)
        out_fin[keep], out_sent[keep], out_got[keep] = fin, sent, got
        return out_fin, out_sent, out_got

    # ------------------------------------------------------------------ control messages
    def send_message(self, src: int, dst: int, tag: int = 0, size: Any = None,
                     path: Sequence[tuple[int, int]] | None = None) -> int:
        """Send a control message from node ``src`` to node ``dst`` now, in a started run
        (docs/engine.md#control-messages): a real packet of ``size`` wire bytes (default
        the transports' control-packet size) that the source node's control plane puts
        on its egress port, routed by the current tables — or along ``path``, a list of
        (node, port) hops from ``src`` — queued in the highest priority class, crossing
        links with their delays, dropped like any packet (nothing resends it). ``tag``
        (an integer >= 0) comes back with it. Returns the message id; its delivery ends
        :meth:`run_until` at that moment."""
        live = self._require_live()
        nodes = self.total_nodes
        for name, v in (("src", src), ("dst", dst)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < nodes:
                raise ConfigError(name, v, f"expected a node 0..{nodes - 1}")
        if src == dst:
            raise ConfigError("dst", dst, "a message goes to another node than its source")
        if isinstance(tag, bool) or not isinstance(tag, (int, np.integer)) or not 0 <= tag < 2**64:
            raise ConfigError("tag", tag, "expected an integer in [0, 2**64)")
        b = self._transport.ctrl_bytes if size is None else parse_size(size, "size")
        full = int(self.config.mtu) + int(self.config.header)
        if not 0 < b <= full:
            raise ConfigError("size", size, f"a message is one packet: 1 to {full} bytes")
        gps: list[int] | None = None
        if path is not None:
            gps = []
            for i, hop in enumerate(path):
                try:
                    node, port = (int(x) for x in hop)
                except (TypeError, ValueError):
                    raise ConfigError(f"path[{i}]", hop, "expected a (node, port) pair") from None
                if not (0 <= node < nodes and 0 <= port < self.port_offset[node + 1] - self.port_offset[node]):
                    raise ConfigError(f"path[{i}]", hop, "no such port")
                if i == 0 and node != src:
                    raise ConfigError("path[0]", hop, f"the path starts at node {src}")
                gps.append(self.gport(node, port))
        try:
            return int(live.sim.send_message(int(src), int(dst), int(tag), int(b), gps))
        except _core.EngineSpecError as e:
            raise _engine_error(e) from None

    def run_until(self, t: Any) -> list["Message"]:
        """Advance a started run to simulated time ``t`` (at most its duration), stopping
        early at the first delivery of a control message; returns the messages delivered
        since the last call (empty when ``t`` was reached without one). The run's clock is
        ``net.now`` afterwards."""
        live = self._require_live()
        t_ps = parse_time(t, "t")
        if t_ps < live.sim.now:
            raise ConfigError("t", t, f"the run is already at {live.sim.now} ps")
        live.sim.run_until(min(t_ps, live.duration))
        return [Message(*m) for m in live.sim.take_messages()]

    @property
    def now(self) -> int:
        """The simulated time of a started run (ps)."""
        return int(self._require_live().sim.now)

    def count_received(self, larger_than: Any = 255) -> None:
        """From now on, count per (source node, destination node) the data packets of more
        than ``larger_than`` wire bytes (default 255 B: no ACK, pull or trimmed header)
        that reach their destination node (None: stop); read with :meth:`take_received`."""
        live = self._require_live()
        if larger_than is None:
            live.sim.count_received(None)
            return
        b = parse_size(larger_than, "larger_than")
        if b < 0:
            raise ConfigError("larger_than", larger_than, "must be >= 0 bytes")
        live.sim.count_received(b)

    def take_received(self) -> tuple[np.ndarray, np.ndarray]:
        """Wire bytes and packets counted (:meth:`count_received`) since the last call, as
        two N x N int64 matrices (source node, destination node)."""
        live = self._require_live()
        n = self.config.nodes
        by = np.zeros((n, n), dtype=np.int64)
        pk = np.zeros((n, n), dtype=np.int64)
        for a, b, v, k in live.sim.take_received():
            by[a, b] += v
            pk[a, b] += k
        return by, pk

    def set_link_class(self, ports: Sequence[tuple[int, int]], link_class: str) -> None:
        """Count the fabric ports ``ports`` ((node, port) pairs) in the link class
        ``link_class`` (``electrical``, ``static_optical`` or ``reconfigurable_optical``)
        instead of the one their fabric gives: in the link-class bytes and utilisation and
        in the classes a packet crossed. E.g. the ports of a static schedule that a
        controller reconfigures are reconfigurable. Applies from the next run."""
        names = {"electrical": 0, "static_optical": 1, "reconfigurable_optical": 2}
        if link_class not in names:
            raise ConfigError("link_class", link_class, f"expected one of {', '.join(names)}")
        gps = []
        for node, port in ports:
            if not 0 <= node < self.total_nodes or not 0 <= port < int(self.user_ports[node]):
                raise ConfigError("ports", (node, port), "not a fabric port of a node of this network")
            gps.append(self.gport(node, port))
        for gp in gps:
            self._link_class[gp] = names[link_class]

    def _tm(self, triples: list[tuple[int, int, int]]) -> np.ndarray:
        n = self.config.nodes
        tm = np.zeros((n, n), dtype=np.int64)
        for a, b, v in triples:
            tm[a, b] += v
        return tm

#: link classes by bit, as ``Message.classes`` and the engine's class sets number them
LINK_CLASS_BITS = ("electrical", "static_optical", "reconfigurable_optical")


class Message(NamedTuple):
    """A delivered control message (:meth:`Network.send_message`)."""

    id: int
    time_ps: int
    src: int
    dst: int
    tag: int
    sent_ps: int
    hops: int
    #: link classes crossed, a bit set (bit 0 electrical, 1 static optical, 2 reconfigurable)
    classes: int

    @property
    def link_classes(self) -> tuple[str, ...]:
        return tuple(n for i, n in enumerate(LINK_CLASS_BITS) if self.classes >> i & 1)


def _run_to(sim: Any, t: int) -> None:
    """Run the engine to ``t`` through any message deliveries on the way (an engine
    without messages returns None: one call)."""
    while sim.run_until(t):
        pass


class _Cut:
    """Flows restricted to those that start before the end of the run (with
    dependencies: whose earliest start is before the end and whose dependencies are
    kept — a flow after one that starts after the end would start after it too; the
    dependency ids are renumbered)."""

    def __init__(self, flows: Any, keep: np.ndarray):
        keep = np.array(keep, dtype=bool)
        self.after_ptr: np.ndarray | None = None
        self.after_ids: np.ndarray | None = None
        self.gap_ps: np.ndarray | None = None
        self.coflow: np.ndarray | None = None
        if getattr(flows, "coflow", None) is not None:
            # co-flows are kept whole, and only while every one before them is kept
            cf = np.asarray(flows.coflow, dtype=np.int64)
            m = int(cf.max()) + 1
            whole = np.ones(m, dtype=bool)
            np.logical_and.at(whole, cf[cf >= 0], keep[cf >= 0])
            whole = np.logical_and.accumulate(whole)
            keep &= (cf < 0) | whole[np.maximum(cf, 0)]
            self.coflow = cf[keep]
            if not (self.coflow >= 0).any():
                self.coflow = None
            elif flows.gap_ps is not None:
                self.gap_ps = np.asarray(flows.gap_ps, dtype=np.int64)[keep]
        if getattr(flows, "has_deps", False):
            n = len(keep)
            deps = [flows.deps(i) for i in range(n)]
            users: list[list[int]] = [[] for _ in range(n)]
            waiting = [len(d) for d in deps]
            for i, d in enumerate(deps):
                for j in d:
                    users[j].append(i)
            ready = [i for i in range(n) if not waiting[i]]
            while ready:       # in an order where dependencies come first (no cycles: validated)
                g = ready.pop()
                if keep[g] and any(not keep[j] for j in deps[g]):
                    keep[g] = False
                for h in users[g]:
                    waiting[h] -= 1
                    if not waiting[h]:
                        ready.append(h)
            new = np.cumsum(keep) - 1
            kept = np.flatnonzero(keep)
            ptr = np.zeros(len(kept) + 1, dtype=np.int64)
            np.cumsum([len(deps[i]) for i in kept], out=ptr[1:])
            self.after_ptr = ptr
            self.after_ids = np.array([new[j] for i in kept for j in deps[i]], dtype=np.int64)
            self.gap_ps = np.asarray(flows.gap_ps, dtype=np.int64)[keep]
        rate = getattr(flows, "rate_bps", None)
        self.rate_bps: np.ndarray | None = None if rate is None else np.asarray(rate, dtype=np.int64)[keep]
        self.keep = keep
        self.start_ps = np.asarray(flows.start_ps)[keep]
        self.src = np.asarray(flows.src)[keep]
        self.dst = np.asarray(flows.dst)[keep]
        self.size = np.asarray(flows.size)[keep]


class _Live:
    def __init__(self, sim: Any, flows: _Cut, duration: int, seed: int, t0: float, wl: str):
        self.sim, self.flows, self.duration, self.seed, self.t0, self.workload = sim, flows, duration, seed, t0, wl


def _plain_circuit_hint(e: ConfigError, given: Any) -> ConfigError:
    """A circuit given as a plain list or tuple was read as ``(n1, p1, n2, p2, ts)``: when
    it is the one refused, say so (OpenOptics writes ``[ts, n1, n2, p1, p2]``)."""
    import re

    m = re.fullmatch(r"circuits\[(\d+)\]", e.field)
    try:
        item = list(given)[int(m.group(1))] if m else None
    except (TypeError, IndexError):
        item = None
    if item is None or isinstance(item, Circuit):
        return e
    return ConfigError(e.field, item, f"{e.reason}; a plain list or tuple is read as (n1, p1, n2, p2, ts) — "
                       "OpenOptics-style [ts, n1, n2, p1, p2] circuits are converted by opendcn.openoptics "
                       "(or build opendcn.Circuit(n1, p1, n2, p2, ts) by name)")


def _as_circuits(circuits: Any) -> list[Circuit]:
    """Check the shape of a circuit list (ranges are checked against the network)."""
    if circuits is None or isinstance(circuits, (str, bytes)):
        raise ConfigError("circuits", circuits, "expected a list of opendcn.Circuit")
    try:
        items = list(circuits)
    except TypeError:
        raise ConfigError("circuits", circuits, "expected a list of opendcn.Circuit") from None
    out = []
    for i, c in enumerate(items):
        if isinstance(c, Circuit):
            out.append(c)
        elif isinstance(c, (tuple, list)) and len(c) in (4, 5):
            out.append(Circuit(*c))
        else:
            raise ConfigError(f"circuits[{i}]", c, "expected Circuit(n1, p1, n2, p2, ts) (in this field order; "
                              "OpenOptics-style [ts, n1, n2, p1, p2] circuits are converted by opendcn.openoptics)")
    return out


def _tx_vec(nbytes: np.ndarray, rate_bps: int) -> np.ndarray:
    """Serialization times (ps, rounded up) of an array of sizes at one rate."""
    num = 8 * 10**12
    if num % rate_bps == 0:
        return nbytes.astype(np.int64) * (num // rate_bps)
    return np.array([tx_time_ps(int(b), rate_bps) for b in nbytes], dtype=np.int64)


def _ideal_fct(c: Config, f: Any, size: np.ndarray) -> np.ndarray:
    """FCT of each flow alone on an idle network whose circuit is always up, over one
    fabric hop: the endpoint paces all but the last packet at its rate, then the last
    packet crosses every link store-and-forward (host link, fabric link, host downlink
    with hosts below nodes; same-node host pairs skip the fabric). A lower bound for
    every architecture whose paths have at least one fabric hop."""
    if len(size) == 0:
        return np.zeros(0, np.int64)
    npk = -(-size // c.mtu)
    wire = size + npk * c.header
    last = size - (npk - 1) * c.mtu + c.header
    ideal = _tx_vec(wire - last, c.endpoint_rate)
    if c.hosts_per_node:
        hl = c.host_link_rate or c.link_rate
        same = (np.asarray(f.src) // c.hosts_per_node) == (np.asarray(f.dst) // c.hosts_per_node)
        ideal = ideal + 2 * _tx_vec(last, hl) + 2 * c.host_propagation
        ideal = ideal + np.where(same, 0, _tx_vec(last, c.link_rate) + c.propagation)
    else:
        ideal = ideal + _tx_vec(last, c.link_rate) + c.propagation
    return ideal


def _rate(v: Any, field: str) -> int:
    from ..units import parse_rate
    return parse_rate(v, field)


#: wall time one call into the engine should take: Ctrl-C acts and a progress bar moves
#: between calls
CHUNK_WALL_S = 0.2


def run_chunked(sim: Any, end: int, tick: Any = None) -> None:
    """Run the engine to ``end`` in calls of about :data:`CHUNK_WALL_S` of wall time each
    (the simulated span of the next call scaled from the last one's speed), so that Ctrl-C
    stops a run within about that time and ``tick(t)`` (a progress bar) is called after
    each; the events and results are those of one call."""
    t = min(int(getattr(sim, "now", 0) or 0), end)
    span = max(1, end // 10_000)
    while t < end:
        nxt = min(end, t + span)
        w0 = time.perf_counter()
        _run_to(sim, nxt)
        dt = time.perf_counter() - w0
        t = nxt
        if tick is not None:
            tick(t)
        # aim the next call at CHUNK_WALL_S, growing at most 4x at a time
        span = max(1, int(span * min(4.0, CHUNK_WALL_S / max(dt, 1e-4))))


def _run_with_progress(sim: Any, end: int, label: str) -> None:
    with progress_ticker(end, label, True) as tick:
        run_chunked(sim, end, tick)


@contextlib.contextmanager
def progress_ticker(end: int, label: str, on: Any) -> Iterator[Any]:
    """A progress bar over simulated time up to ``end`` (rich: the time simulated and an
    ETA), as the tick ``tick(t)`` that :func:`run_chunked` calls; None when ``on`` is
    false. A callable ``on`` is a bar already shown: it is passed through."""
    if callable(on):
        yield on
        return
    if not on:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn(f"[bold]{label}[/bold]"), BarColumn(),
                  TextColumn("{task.fields[simt]}"), TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task("run", total=end, simt="0 us")
        yield lambda t: bar.update(task, completed=t, simt=f"{t / 1e6:,.0f} us simulated")


def _atomic_write(path: FsPath, data: str | bytes) -> None:
    """Write ``data`` to a scratch file next to ``path`` and move it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def flows_table(c: Config, f: Any, o: dict[str, Any], *, ideal: np.ndarray | None = None,
                extra: dict[str, Any] | None = None) -> pa.Table:
    """The per-flow records (docs/contract.md#per-flow-records) of flows ``f`` from an engine
    output, for every engine: ``ideal`` replaces the packet-level ideal FCT (an engine with
    its own unit, e.g. cells), ``extra`` adds engine-specific columns at the end."""
    nflows = len(f.size)
    finish = np.asarray(o["flow_finish_ps"], dtype=np.int64)
    done = finish >= 0
    start = f.start_ps.astype(np.int64)
    unstarted = np.zeros(nflows, dtype=bool)
    if (getattr(f, "after_ids", None) is not None or getattr(f, "coflow", None) is not None) and "flow_start_ps" in o:
        # with dependencies or barriers the engine decides when a flow starts (-1: it never did)
        start = np.asarray(o["flow_start_ps"], dtype=np.int64)
        unstarted = start < 0
    size = f.size.astype(np.int64)
    fct = np.where(done, finish - start, 0)
    if ideal is None:
        ideal = _ideal_fct(c, f, size)
    slowdown = np.where(done, fct / np.maximum(ideal, 1), 0.0)
    mask = ~done
    return pa.table({
        "flow_id": pa.array(np.arange(nflows, dtype=np.int64)),
        "src": pa.array(f.src.astype(np.int64)),
        "dst": pa.array(f.dst.astype(np.int64)),
        "size_bytes": pa.array(size),
        "start_ps": pa.array(start, mask=unstarted),
        "finish_ps": pa.array(finish, mask=mask),
        "fct_ps": pa.array(fct, mask=mask),
        "ideal_fct_ps": pa.array(ideal),
        "slowdown": pa.array(slowdown, mask=mask),
        "completed": pa.array(done),
        "hops": pa.array(np.asarray(o["flow_hops"], dtype=np.int64)),
        **({"retransmits": pa.array(np.asarray(o["flow_retx"], dtype=np.int64)),
            "timeouts": pa.array(np.asarray(o["flow_timeouts"], dtype=np.int64))} if "flow_retx" in o else {}),
        **({"sender_fct_ps": _sender_fct(o["flow_acked_ps"], start)} if "flow_acked_ps" in o else {}),
        **{k: pa.array(v) for k, v in (extra or {}).items()},
    })


#: network-wide counters of the time series (null on port rows)
NET_SERIES = ("trims", "bounces", "delivered_bytes", "bulk_host_bytes", "congestion_events", "pushback_messages")


def _fail_at(at: Any) -> int:
    at_ps = parse_time(at, "fail_at")
    if at_ps < 0:
        raise ConfigError("fail_at", at, "must not be negative")
    return at_ps


def _with_net_rows(ts: pa.Table, ser: dict[str, Any]) -> pa.Table:
    """Append network-wide rows (node = port = -1: bytes queued at all ports, bytes they
    sent in the interval, and the counters of NET_SERIES, null on the port rows)."""
    m = len(ser["time_ps"])
    k = ts.num_rows
    minus = np.full(m, -1, dtype=np.int64)
    cols: dict[str, Any] = {}
    for c in ("time_ps", "node", "port", "queued_bytes", "tx_bytes"):
        extra = minus if c in ("node", "port") else np.asarray(ser[c], dtype=np.int64)
        cols[c] = pa.array(np.concatenate([np.asarray(ts[c], dtype=np.int64), extra]))
    mask = np.concatenate([np.ones(k, dtype=bool), np.zeros(m, dtype=bool)])
    for c in NET_SERIES:
        vals = np.concatenate([np.zeros(k, dtype=np.int64), np.asarray(ser[c], dtype=np.int64)])
        cols[c] = pa.array(vals, mask=mask)
    return pa.table(cols)


def _sender_fct(acked: Any, start: np.ndarray) -> pa.Array:
    """When each flow's sender held an acknowledgement of every byte, from its start (what
    Opera's simulator prints); null for flows without one (ideal flows, unfinished)."""
    a = np.asarray(acked, dtype=np.int64)
    return pa.array(a - start, mask=a < 0)


def core_summary(*, arch: str, seed: int, nodes: int, endpoints: int, duration_ps: int, wall: float,
                 o: dict[str, Any], flows: pa.Table, mice: int, rate_bps: int, workload: str) -> dict[str, Any]:
    """The summary fields every engine reports (docs/contract.md#summary), from an engine output dict
    with the common counters; architectures add ``arch_metrics`` and their own fields."""
    sim_s = duration_ps / 1e12
    capacity_bytes = sim_s * rate_bps * nodes / 8
    return {
        "arch": arch,
        "seed": seed,
        "nodes": nodes,
        "endpoints": endpoints,
        "sim_time_s": sim_s,
        "wall_s": round(wall, 4),
        "events": int(o["events"]),
        "packet_hops": int(o["packet_hops"]),
        "flows": {"started": int(o["flows_started"]), "completed": int(o["flows_completed"])},
        "bytes": {"offered": int(o["bytes_offered"]), "delivered": int(o["bytes_delivered"]),
                  "dropped": int(o["bytes_dropped"]), "in_flight": int(o["bytes_in_flight"])},
        "goodput_normalized": float(o["bytes_delivered"] / capacity_bytes) if capacity_bytes else 0.0,
        "fct_us": fct_stats(flows, mice_threshold=mice),
        "fabric": {"collisions": int(o["collisions"]),
                   "guardband_violations": int(o["guardband_violations"])},
        "drops": {k: int(v) for k, v in o["drops"].items()},
        "invariants": {"ok": not o["invariant_errors"], "errors": list(o["invariant_errors"])},
        "host_rate_bps": int(rate_bps),
        "workload": workload,
        "trace_hash": f"{int(o['trace_hash']):016x}",
    }


def packet_metrics(o: dict[str, Any]) -> dict[str, Any]:
    """The packet ledger and packet-level metrics of an engine output (empty if it has none)."""
    if "packets" not in o:
        return {}
    pk = o["packets"]
    lat = o["latency"]
    cap = o["class_capacity_bytes"]
    tx = o["class_tx_bytes"]
    hops = list(o["delivered_by_hops"])
    while len(hops) > 1 and hops[-1] == 0:
        hops.pop()
    cls_names = {1: "electrical", 2: "static_optical", 3: "electrical+static_optical", 4: "reconfigurable_optical",
                 5: "electrical+reconfigurable_optical", 6: "static_optical+reconfigurable_optical", 7: "all"}
    by_class = {cls_names[i]: int(v) for i, v in enumerate(o["delivered_by_class"]) if i and v}
    return {
        "packets": {k: ({kk: int(vv) for kk, vv in v.items()} if isinstance(v, dict) else int(v)) for k, v in pk.items()},
        "latency_us": {"count": int(lat["count"]), "mean": float(lat["mean_ps"]) / 1e6,
                       "p50": int(lat["p50_ps"]) / 1e6, "p99": int(lat["p99_ps"]) / 1e6},
        "reorder": {k: int(v) for k, v in o["reorder"].items()},
        "delivered_bytes_by_hops": {str(i): int(v) for i, v in enumerate(hops) if v},
        "delivered_bytes_by_link_class": by_class,
        "link_classes": {k: {"tx_bytes": int(tx[k]), "utilisation": (tx[k] / cap[k]) if cap[k] else 0.0}
                         for k in tx if cap[k]},
        # control messages of a controller (Network.send_message), when it sent any
        **({"messages": {k: int(v) for k, v in o["messages"].items()}} if o.get("messages", {}).get("sent") else {}),
    }


def _drop_tables(port_offset: np.ndarray, d: dict[str, Any]) -> tuple[pa.Table, pa.Table]:
    """The engine's drop log as two tables with node-local port numbers and reason names."""
    def local(gp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        gp = np.asarray(gp, dtype=np.int64)
        node = np.where(gp >= 0, np.searchsorted(port_offset, np.maximum(gp, 0), side="right") - 1, -1)
        return node, np.where(gp >= 0, gp - port_offset[np.maximum(node, 0)], -1)

    names = np.asarray(_core.DROP_REASONS, dtype=object)
    _, port = local(d["gport"])
    drops = pa.table({"time_ps": d["time_ps"], "node": d["node"], "port": port, "dep": d["dep"],
                      "src_node": d["src_node"], "dst_node": d["dst_node"], "flow": d["flow"],
                      "reason": pa.array(names[np.asarray(d["reason"], dtype=np.int64)].tolist(), type=pa.string()),
                      "hops": d["hops"]})
    pnode, pport = local(d["pb_gport"])
    pushbacks = pa.table({"sent_ps": d["pb_sent_ps"], "arrive_ps": d["pb_arrive_ps"], "src_node": d["pb_src_node"],
                          "dst_node": d["pb_dst_node"], "until_ps": d["pb_until_ps"], "node": pnode, "port": pport,
                          "dep": d["pb_dep"]})
    return drops, pushbacks


#: circuits and time-flow entries a run directory keeps at most (beyond: counted, not listed)
FABRIC_RECORD_MAX = 5_000


def _fabric_record(net: "Network") -> dict[str, Any]:
    """The circuits (``[n1, p1, n2, p2, ts]``, ts -1: every slice) and, with table
    routing, the time-flow entries (``[node, arrival slice, src, dst, departure slice,
    port]``, -1: any) of a run, each kept up to :data:`FABRIC_RECORD_MAX` rows."""
    circ = [[c.n1, c.p1, c.n2, c.p2, -1 if c.ts is None else c.ts] for c in net.circuits]
    rec: dict[str, Any] = {"nodes": int(net.total_nodes), "slices": int(net.slices), "router": net._router,
                           "circuits": circ[:FABRIC_RECORD_MAX], "circuits_total": len(circ), "entries": None,
                           "entries_total": 0}
    if net._router == "table":
        try:
            t = net._table_columns()
        except Exception:  # noqa: BLE001 - a subclass without Python tables keeps none
            return rec
        node = np.asarray(t["tf_node"], dtype=np.int64)
        port = np.asarray(t["tf_port"], dtype=np.int64) - net.port_offset[node] if len(node) else node
        cols = [node, t["tf_arr"], t["tf_src"], t["tf_dst"], t["tf_dep"], port]
        n = len(node)
        rec["entries_total"] = n
        rec["entries"] = np.stack([np.asarray(c, dtype=np.int64)[:FABRIC_RECORD_MAX] for c in cols], 1).tolist() \
            if n else []
    return rec


class Result:
    """What a run returns: ``summary`` (dict), ``flows`` and ``timeseries`` (pyarrow)."""

    def __init__(self, summary: dict[str, Any], flows: pa.Table, timeseries: pa.Table,
                 spec_info: dict[str, Any], drops: pa.Table | None = None, pushbacks: pa.Table | None = None):
        self.summary = summary
        self.flows = flows
        self.timeseries = timeseries
        self.spec_info = spec_info
        #: with ``net.log_drops``: one row per dropped packet (time_ps, node, port — the
        #: port whose buffer refused it, -1 otherwise — dep: its departure slice, -1 any,
        #: src_node, dst_node, flow, reason, hops) and one per push-back message (sent_ps,
        #: arrive_ps at the source node, src_node, dst_node, until_ps, node / port / dep of
        #: the congested calendar queue); None when not recorded
        self.drops = drops
        self.pushbacks = pushbacks
        self.label = summary.get("label", summary["arch"])
        #: the fabric the run used (circuits per slice and, for table routing, its
        #: time-flow entries; see :func:`_fabric_record`), written as ``fabric.json``;
        #: None where the engine keeps none (the slotted engines)
        self.fabric: dict[str, Any] | None = None

    @staticmethod
    def build(net: Network, live: _Live, o: dict[str, Any], wall: float, mice: int) -> "Result":
        c = net.config
        flows = flows_table(c, live.flows, o)
        gp = o["ts_port"]
        node = np.searchsorted(net.port_offset, gp, side="right") - 1 if len(gp) else gp
        ts = pa.table({
            "time_ps": pa.array(o["ts_time_ps"].astype(np.int64)),
            "node": pa.array(np.asarray(node, dtype=np.int64)),
            "port": pa.array((gp - net.port_offset[node]).astype(np.int64) if len(gp) else gp),
            "queued_bytes": pa.array(o["ts_queued_bytes"].astype(np.int64)),
            "tx_bytes": pa.array(o["ts_tx_bytes"].astype(np.int64)),
        })
        if net.net_series:
            ts = _with_net_rows(ts, o["series"])
        summary = core_summary(arch=net.arch, seed=live.seed, nodes=c.nodes, endpoints=c.endpoints,
                               duration_ps=live.duration, wall=wall, o=o, flows=flows, mice=mice,
                               rate_bps=c.per_node_rate, workload=live.workload)
        summary.update({
            "services": {**{k: v for k, v in net._services.items()},
                         "congestion_events": int(o["congestion_events"]),
                         "pushback_messages": int(o["pushback_msgs"]),
                         "paused_attempts": int(o["paused_attempts"]),
                         **({"eqo_samples": int(o["eqo_samples"]),
                             "eqo_mean_abs_error_bytes": round(float(o["eqo_mean_abs_error"]), 1),
                             "eqo_max_abs_error_bytes": int(o["eqo_max_abs_error"]),
                             "eqo_mean_error_bytes": round(float(o["eqo_mean_error"]), 1)}
                            if net._services["eqo_interval_ps"] else {}),
                         **({"offloaded_packets": int(o["offloaded_packets"]),
                             "offloaded_bytes": int(o["offloaded_bytes"]),
                             "offload_peak_host_bytes": int(o["offload_peak_host_bytes"]),
                             "offload_refused": int(o["offload_refused"])}
                            if net._services["offload_queues"] else {})},
            "arch_metrics": dict(net.arch_metrics),
            **packet_metrics(o),
            "transport": net._transport.describe(int(c.buffer)),
        })
        if getattr(live.flows, "coflow", None) is not None:
            cf = np.asarray(live.flows.coflow)
            summary["flows"]["coflows"] = int(cf.max()) + 1
            summary["flows"]["dependent"] = int((cf > 0).sum())
            # flows whose barrier had not lifted by the end never started
            summary["flows"]["not_started"] = int(len(live.flows.size) - int(o["flows_started"]))
        if getattr(live.flows, "after_ids", None) is not None:
            ptr = np.asarray(live.flows.after_ptr)
            summary["flows"]["dependent"] = int((np.diff(ptr) > 0).sum())
            # flows whose dependencies had not all finished by the end never started
            summary["flows"]["not_started"] = int(len(live.flows.size) - int(o["flows_started"]))
        if c.shared_buffer is not None:
            summary["buffer"] = {"model": "shared", "pool_bytes": int(c.shared_buffer), "alpha": c.alphas,
                                 "peak_pool_bytes": int(o["shared_peak_bytes"]),
                                 "peak_pool_node": int(o["shared_peak_node"])}
        if net._router == "ucmp":
            # packets whose route was chosen again at a hop that missed its planned slice
            summary["ucmp_deferred_packets"] = int(o["adm_deferred"])
        if net._admission():
            summary["admission_control"] = {"applies": net._admission_applies(),
                                            "deferred_packets": int(o["adm_deferred"]),
                                            "adm_fail_packets": int(o["packets"]["dropped"].get("adm_fail", 0))}
        if net._holding:
            h = o["hold"]
            summary["held"] = {k: int(h[k]) for k in ("packets", "bytes", "peak_packets", "peak_bytes", "total",
                                                       "released", "overflow", "refused")}
            summary["held"]["peak_bytes_by_node"] = {str(i): int(v) for i, v in enumerate(h["peak_bytes_by_node"]) if v}
        if "transport" not in flows.column_names:
            names = {v: k for k, v in _TRANSPORT_CODES.items()}
            codes = o["flow_transport"] if "flow_transport" in o else net._transport.rule.assign(live.flows.size)
            flows = flows.append_column("transport", pa.array([names[int(x)] for x in codes], type=pa.string()))
        info = {"config": c.model_dump(), "arch": net.arch, "fabric": net.fabric, "router": net._router,
                "multipath": net._multipath, "slices": net.slices, "switches": net.switches,
                "duration_ps": live.duration, "seed": live.seed,
                "port_offset": net.port_offset.tolist()}
        drops = pushbacks = None
        if "drop_log" in o:
            drops, pushbacks = _drop_tables(net.port_offset, o["drop_log"])
            summary["drop_log"] = {"recorded": drops.num_rows, "unlogged": int(o["drop_log"]["unlogged"]),
                                   "pushbacks": pushbacks.num_rows}
        res = Result(summary, flows, ts, info, drops, pushbacks)
        res.fabric = _fabric_record(net)
        return res

    def write(self, out: str | os.PathLike[str]) -> FsPath:
        """Write spec.json, summary.json, flows.parquet and timeseries.parquet into ``out``
        (all files are written to a scratch folder first and moved in at the end)."""
        import pyarrow.parquet as pq

        out = FsPath(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = FsPath(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp-"))
        try:
            (tmp / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True))
            (tmp / "spec.json").write_text(json.dumps(self.spec_info, indent=2, sort_keys=True, default=str))
            pq.write_table(self.flows, tmp / "flows.parquet")
            pq.write_table(self.timeseries, tmp / "timeseries.parquet")
            logs = []
            for name, t in (("drops.parquet", self.drops), ("pushbacks.parquet", self.pushbacks)):
                if t is not None:
                    pq.write_table(t, tmp / name)
                    logs.append(name)
            if self.fabric is not None:
                (tmp / "fabric.json").write_text(json.dumps(self.fabric, separators=(",", ":")))
                logs.append("fabric.json")
            out.mkdir(parents=True, exist_ok=True)
            for f in ("spec.json", "flows.parquet", "timeseries.parquet", *logs, "summary.json"):
                os.replace(tmp / f, out / f)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return out

    def port_series(self, node: int, port: int, column: str, interval: Any = None,
                    how: str = "sum") -> pa.Table:
        """One port's sampled ``column`` over time, optionally re-binned to ``interval``
        (``how`` = "sum" for counters such as tx_bytes, "max" for levels)."""
        t = self.timeseries
        sel = (np.asarray(t["node"]) == node) & (np.asarray(t["port"]) == port)
        times = np.asarray(t["time_ps"])[sel]
        vals = np.asarray(t[column])[sel]
        if interval is not None:
            step = parse_time(interval, "interval")
            if step <= 0:
                raise ConfigError("interval", interval, "must be positive")
            bins = (times - 1) // step
            ub, inv = np.unique(bins, return_inverse=True)
            agg = np.zeros(len(ub), dtype=np.int64)
            if how == "sum":
                np.add.at(agg, inv, vals)
            else:
                np.maximum.at(agg, inv, vals)
            times, vals = (ub + 1) * step, agg
        return pa.table({"time_ps": pa.array(times.astype(np.int64)),
                         column: pa.array(vals.astype(np.int64))})
