"""``BaseNetwork``: OpenOptics' network object, running on opendcn's packet engine.

The network is built like OpenOptics' (``connect``/``deploy_topo``, ``deploy_routing`` or
``add_time_flow_entry``, traffic builders) and runs in simulated time when ``start()`` is
called: the circuits become an ``opendcn.Network`` schedule, the time-flow entries its
tables or source routes, the traffic its flows. Defaults follow OpenOptics: 128 ms slices,
25 ms guardbands (the backend's: Mininet reads arrival slices that far ahead, with no dark
window; ns-3 and Tofino darken the guardband at the start of each slice), 1 Gbps links, one host per ToR,
one uplink; links have 1 us of propagation each way (host-ToR, ToR-OCS, OCS-ToR).

``start()`` runs the installed traffic until ``simulation_stop_s`` (default 2 s) and prints
a report; without installed traffic it pings between every pair of hosts (three echo
requests, one second apart) and prints who reached whom, as an interactive session's
``pingall`` would. Results stay available: ``net.result`` (the native
:class:`~opendcn.network.Result` of the last run), ``net.ping_results``, the installed
flows' ``stats()`` and ``net.device_manager``.

>>> from opendcn.openoptics import OpticalTopo, OpticalRouting
>>> net = BaseNetwork("doc", nb_node=4, backend="ns3", time_slice_duration_us=100, guardband_us=1, quiet=True)
>>> net.deploy_topo(OpticalTopo.round_robin(nb_node=4))
True
>>> net.deploy_routing(OpticalRouting.routing_direct(net.get_topo()), routing_mode="Per-hop")
True
>>> flows = net.udp_traffic().flow(0, 2, num_packets=1, start_s=0.00001).install()
>>> net.start()
>>> st = flows[0].stats()                     # 0-2 is up in slice 1: [100 us, 200 us)
>>> st.rx_packets, 100e-6 < 0.00001 + st.delay_avg_s < 200e-6
(1, True)
"""

from __future__ import annotations

import math
import sys
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path as FsPath
from typing import Any

import networkx as nx
import numpy as np

from .. import workload as _wl
from ..network.config import Config
from ..errors import ConfigError
from ..network.network import Network, Result
from ..network.timeflow import Circuit, Entry, Hop
from ..network.timeflow import Path as NativePath
from ._schedule import Schedule
from .DeviceManager import DeviceManager
from .TimeFlowTable import ANY, Path, TimeFlowEntry
from ._sent import PS as PS, Sent, seconds_ps  # PS: picoseconds per second (re-exported)
from .traffic import FlowStats, Spec, TcpTrafficGenerator, UdpFlowSpec, UdpTrafficGenerator

__all__ = ["BaseNetwork", "BACKENDS", "ConfigurationError"]


class ConfigurationError(ConfigError):
    """A backend refuses its configuration before deploying (OpenOptics' Tofino backend
    raises its ``ConfigurationError``, a ``ValueError``, for a guardband that fills the
    slice). A :class:`~opendcn.errors.ConfigError`: ``field`` and ``value`` name the input."""

#: backend names and the keyword arguments each accepts (as OpenOptics' backends do)
BACKENDS: dict[str, set[str]] = {
    "Mininet": {"link_delay_ms"},
    "ns3": {"link_delay_us", "host_link_delay_us", "ocs_link_delay_us", "cq_buffer_bytes", "simulation_stop_s",
            "snapshot_interval_us", "verify_sr_cur_node", "admission_control"},
    "Tofino": {"config_file", "remote_workdir", "skip_deploy", "build_p4", "tofino_repo"},
}
_ANNOUNCED: set[str] = set()
PING_BYTES = 64            # ICMP echo: 56 B of data + 8 B header
#: the backend's TCP retransmission timeout floor: ns-3's TcpSocketBase MinRto (1 s, the
#: ns-3 backend sets no TCP attribute), Linux's TCP_RTO_MIN (200 ms) on the Mininet and
#: Tofino backends' hosts. Segment size and congestion control stay the engine's (MSS from
#: the MTU, NewReno with 3 duplicate ACKs): ns-3's 536-B default segment is not mirrored.
TCP_MIN_RTO = {"ns3": "1s", "Mininet": "200ms", "Tofino": "200ms"}
#: links a packet may cross before it counts as caught in a routing loop (dropped as ``loop``)
LOOP_HOPS = 64
MAX_SAMPLES = 20_000       # time-series samples per run at most (the interval grows)


def _seconds_ps(s: float) -> int:
    return int(seconds_ps(s))


def _number(name: str, v: Any, *, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v) \
            or v < 0 or (positive and v == 0):
        raise ConfigError(name, v, "expected a positive number" if positive else "expected a number >= 0")
    return float(v)


class _PortTaken(ConfigError):
    """A circuit on a port already connected in its slice (``deploy_topo`` returns False)."""


class BaseNetwork:
    """An OpenOptics network (see the module documentation for what runs where)."""

    def __init__(self, name: str, nb_node: int, nb_link: int = 1, nb_host_per_tor: int = 1, backend: str = "Mininet",
                 time_slice_duration_us: float | None = None, time_slice_duration_ms: float | None = None,
                 guardband_us: float | None = None, guardband_ms: float | None = None, arch_mode: str = "TO",
                 use_webserver: bool = True, ocs_tor_link_bw_gbps: float = 1.0, tor_host_link_bw_gbps: float = 1.0,
                 quiet: bool = False, **backend_kwargs: Any):
        for field, v in (("nb_node", nb_node), ("nb_link", nb_link), ("nb_host_per_tor", nb_host_per_tor)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(field, v, "expected an integer >= 1")
        if nb_node < 2:
            raise ConfigError("nb_node", nb_node, "need at least 2 nodes")
        if backend not in BACKENDS:
            raise ConfigError("backend", backend, f"expected one of {', '.join(BACKENDS)}")
        unknown = sorted(set(backend_kwargs) - BACKENDS[backend])
        if unknown:
            raise ConfigError(unknown[0], backend_kwargs[unknown[0]], f"not an option of the {backend} backend "
                              f"(it takes {', '.join(sorted(BACKENDS[backend])) or 'none'})")
        if time_slice_duration_us is not None and time_slice_duration_ms is not None:
            raise ConfigError("time_slice_duration_ms", time_slice_duration_ms,
                              "give time_slice_duration_us or time_slice_duration_ms, not both")
        if guardband_us is not None and guardband_ms is not None:
            raise ConfigError("guardband_ms", guardband_ms, "give guardband_us or guardband_ms, not both")
        if arch_mode not in ("TO", "TA"):
            raise ConfigError("arch_mode", arch_mode, "expected 'TO' (traffic-oblivious) or 'TA' (traffic-aware)")
        if time_slice_duration_us is not None:
            self.time_slice_duration_us = int(_number("time_slice_duration_us", time_slice_duration_us, positive=True))
        elif time_slice_duration_ms is not None:
            self.time_slice_duration_us = int(_number("time_slice_duration_ms", time_slice_duration_ms,
                                                      positive=True) * 1000)
        else:
            self.time_slice_duration_us = 128_000
        if guardband_us is not None:
            self.guardband_us = int(_number("guardband_us", guardband_us))
        elif guardband_ms is not None:
            self.guardband_us = int(_number("guardband_ms", guardband_ms) * 1000)
        else:
            self.guardband_us = 25_000
        self.ocs_tor_link_bw_gbps = _number("ocs_tor_link_bw_gbps", ocs_tor_link_bw_gbps, positive=True)
        self.tor_host_link_bw_gbps = _number("tor_host_link_bw_gbps", tor_host_link_bw_gbps, positive=True)
        self.name, self.backend = name, backend
        self.nb_node, self.nb_link, self.nb_host_per_tor = nb_node, nb_link, nb_host_per_tor
        self.arch_mode = arch_mode
        self.calendar_queue_mode = 0 if arch_mode == "TO" else 1
        self.use_webserver = bool(use_webserver)
        self.tor_ocs_ports = list(range(nb_link))
        self.host_tor_port = 0
        self.tor_host_port = nb_link
        self.slice_to_topo: dict[int, nx.DiGraph] = {}
        self.nb_time_slices = 1
        self.quiet = quiet
        self._kw = dict(backend_kwargs)
        self._warned_ports = False
        self._check_backend_kwargs()
        self.simulation_stop_s = float(self._kw.get("simulation_stop_s", 2.0))
        self.admission_control = bool(self._kw.get("admission_control", False))
        self._mode: str | None = None
        self._hop_tables: dict[int, dict[tuple[int, int], list[tuple[int, int | None]]]] = {}
        self._routes: dict[tuple[int, int, int], list[list[tuple[int, int, int | None]]]] = {}
        self._ta_routes: set[tuple[int, int]] = set()
        self._ignored = 0
        self._traffic: list[Spec] = []
        self._port = 9000
        #: the rows of the last run (datagrams, TCP flows, echo replies), as columns
        self._sent: Sent | None = None
        #: the rows of the run under way, in the engine's flow order (read live by
        #: DeviceManager.switch_counters)
        self._running: Sent | None = None
        self._native: Network | None = None
        self._paused = False
        self._pending: list[Any] | None = None
        self.result: Result | None = None
        self.ping_results: dict[tuple[int, int], list[float | None]] = {}
        self.device_manager = DeviceManager(self)
        if backend not in _ANNOUNCED:
            _ANNOUNCED.add(backend)
            self._say(f"opendcn.openoptics: the {backend!r} backend runs on opendcn's packet engine, in simulated "
                      "time; the script itself is unchanged. Thank you for trying it.")
        if backend == "Tofino" and self.guardband_us >= self.time_slice_duration_us:
            # as OpenOptics' Tofino backend, before anything is deployed
            raise ConfigurationError("guardband_us", self.guardband_us,
                                     f"not shorter than time_slice_duration_us ({self.time_slice_duration_us}): no "
                                     "payload can cross the OCS; lower guardband_us or raise "
                                     "time_slice_duration_us when constructing BaseNetwork")
        if self.guardband_us >= self.time_slice_duration_us and arch_mode == "TO" and backend == "Mininet":
            warnings.warn(f"guardband ({self.guardband_us} us) is not shorter than the time slice "
                          f"({self.time_slice_duration_us} us): on the Mininet backend the guardband is a look-ahead "
                          f"(a ToR reads a packet's arrival slice at its arrival plus the guardband, no dark window), "
                          f"so packets are matched about {self.guardband_us // self.time_slice_duration_us} slices "
                          "ahead of their arrival", RuntimeWarning, stacklevel=2)
        elif self.guardband_us >= self.time_slice_duration_us and arch_mode == "TO":
            warnings.warn(f"guardband ({self.guardband_us} us) is not shorter than the time slice "
                          f"({self.time_slice_duration_us} us): no circuit is ever up, so no packet crosses the "
                          "optical fabric in this run", RuntimeWarning, stacklevel=2)

    def __str__(self) -> str:
        return self.name

    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text)

    def _check_backend_kwargs(self) -> None:
        for k in ("link_delay_us", "host_link_delay_us", "ocs_link_delay_us", "simulation_stop_s",
                  "snapshot_interval_us", "link_delay_ms"):
            if k in self._kw:
                _number(k, self._kw[k], positive=k in ("simulation_stop_s", "snapshot_interval_us"))
        cq = self._kw.get("cq_buffer_bytes")
        if cq is not None and (isinstance(cq, bool) or not isinstance(cq, int) or cq <= 0):
            raise ConfigError("cq_buffer_bytes", cq, "expected a positive number of bytes")

    # ------------------------------------------------------------------ topology
    def connect(self, time_slice: int, node1: int, node2: int, port1: int = 0, port2: int = 0,
                unidirectional: bool = False) -> bool:
        """Connect ``port1`` of ``node1`` and ``port2`` of ``node2`` in ``time_slice``;
        False (and a message) when one of the ports is taken in that slice."""
        self._check_circuit("time_slice", time_slice, node1, node2, port1, port2)
        for ts in range(time_slice + 1):
            if ts not in self.slice_to_topo:
                g = nx.DiGraph()
                g.add_nodes_from(range(self.nb_node))
                self.slice_to_topo[ts] = g
        g = self.slice_to_topo[time_slice]
        taken = g.graph.setdefault("taken", set())
        if (node1, port1) in taken or (node2, port2) in taken:
            self._say(f"connect: slice {time_slice}: port {port1} of node {node1} or port {port2} of node {node2} "
                      "is already connected")
            return False
        taken |= {(node1, port1), (node2, port2)}
        g.add_edge(node1, node2, port1=port1, port2=port2)
        if not unidirectional:
            g.add_edge(node2, node1, port1=port2, port2=port1)
        return True

    def disconnect(self, time_slice: int, node1: int, node2: int, port1: int = 0, port2: int = 0,
                   unidirectional: bool = False) -> bool:
        """Remove a circuit; False (and a message) when it does not exist."""
        g = self.slice_to_topo.get(time_slice)
        if g is None or not g.has_edge(node1, node2) or g[node1][node2].get("port1") != port1 \
                or g[node1][node2].get("port2") != port2:
            self._say(f"disconnect: slice {time_slice} has no circuit from port {port1} of node {node1} "
                      f"to port {port2} of node {node2}")
            return False
        g.remove_edge(node1, node2)
        if not unidirectional and g.has_edge(node2, node1):
            g.remove_edge(node2, node1)
        g.graph.setdefault("taken", set()).difference_update({(node1, port1), (node2, port2)})
        return True

    def _check_circuit(self, field: str, ts: Any, n1: Any, n2: Any, p1: Any, p2: Any, value: Any = None) -> None:
        def bad(v: Any) -> bool:
            return isinstance(v, bool) or not isinstance(v, (int, np.integer))

        what = value if value is not None else None
        if bad(ts) or ts < 0:
            raise ConfigError(field, what if what is not None else ts, "the time slice must be an integer >= 0")
        for name, v in (("node1", n1), ("node2", n2)):
            if bad(v) or not 0 <= v < self.nb_node:
                raise ConfigError(field if what is not None else name, what if what is not None else v,
                                  f"{name} {v!r} is not a node 0..{self.nb_node - 1} (nb_node={self.nb_node})")
        for name, v in (("port1", p1), ("port2", p2)):
            if bad(v) or v < 0:
                raise ConfigError(field if what is not None else name, what if what is not None else v,
                                  f"{name} {v!r} is not a port number >= 0")
        if max(p1, p2) >= self.nb_link and not self._warned_ports:
            # OpenOptics accepts such circuits; a ToR has no such uplink, so they carry nothing
            self._warned_ports = True
            warnings.warn(f"circuits on ports >= nb_link={self.nb_link} are kept in the topology but the ToRs "
                          f"have no such uplink: they carry no traffic", RuntimeWarning, stacklevel=3)

    def deploy_topo(self, circuits: Sequence[Sequence[int]] = (), start_fresh: bool = False) -> bool:
        """Deploy circuits ``[time_slice, node1, node2, port1, port2]`` (and those added
        with :meth:`connect`); True on success, ``ConfigError`` naming ``circuits[i]``
        otherwise. During a traffic-aware run it reconfigures the running fabric."""
        if isinstance(circuits, (str, bytes)) or not isinstance(circuits, Sequence):
            raise ConfigError("circuits", circuits, "expected a list of [time_slice, node1, node2, port1, port2]")
        items = list(circuits)
        for i, c in enumerate(items):
            if isinstance(c, (str, bytes)) or not isinstance(c, Sequence) or len(c) != 5:
                raise ConfigError(f"circuits[{i}]", c, "expected [time_slice, node1, node2, port1, port2] "
                                  "(OpenOptics' field order)")
            ts, a, b, p, q = c
            if (a, b, p, q) == (-1, -1, -1, -1):
                self._check_circuit(f"circuits[{i}]", ts, 0, 0, 0, 0, value=c)
                continue
            self._check_circuit(f"circuits[{i}]", ts, a, b, p, q, value=c)
        if self._pending is not None or self._native is not None and self._native._live is not None:
            return self._reconfigure(items)
        before = {ts: g.copy() for ts, g in self.slice_to_topo.items()}
        for ts, g in before.items():
            g.graph["taken"] = set(self.slice_to_topo[ts].graph.get("taken", set()))
        try:
            return self._deploy(items, start_fresh)
        except _PortTaken as e:
            # as OpenOptics: a circuit on a port already connected in its slice fails the
            # deployment with a message and False (here nothing of it stays deployed)
            self.slice_to_topo = before
            self._say(f"{e}\nTopology deployment failed (nothing was deployed).")
            return False
        except ConfigError:
            self.slice_to_topo = before         # a refused deployment changes nothing
            raise

    def _deploy(self, items: list[Any], start_fresh: bool) -> bool:
        if start_fresh:
            self.slice_to_topo = {}
        last = -1
        for i, (ts, a, b, p, q) in enumerate(items):
            last = max(last, int(ts))
            if a == -1:
                continue
            g = self.slice_to_topo.get(int(ts))
            taken = g.graph.get("taken", set()) if g is not None else set()
            if (a, p) in taken or (b, q) in taken:
                port, node = (p, a) if (a, p) in taken else (q, b)
                raise _PortTaken(f"circuits[{i}]", list(items[i]), f"slice {ts}: port {port} of node {node} is "
                                 "already connected in that slice")
            self.connect(int(ts), int(a), int(b), int(p), int(q))
        for ts in range(last + 1):
            if ts not in self.slice_to_topo:
                g = nx.DiGraph()
                g.add_nodes_from(range(self.nb_node))
                self.slice_to_topo[ts] = g
        if not self.slice_to_topo:
            raise ConfigError("circuits", items, "no time slice to deploy")
        if self.arch_mode == "TA" and len(self.slice_to_topo) != 1:
            raise ConfigError("circuits", f"{len(self.slice_to_topo)} slices", "a traffic-aware network has one slice")
        self.nb_time_slices = len(self.slice_to_topo)
        self._native = None
        return True

    # ------------------------------------------------------------------ devices
    def create_nodes(self) -> None:
        """Create the ToRs and hosts (OpenOptics hands them to its backend; here they are
        the engine's, built when the network starts): checks what they need, changes
        nothing."""
        self._say(f"Creating {self.nb_node} ToRs with {self.nb_host_per_tor} host(s) each and {self.nb_link} "
                  "optical uplink(s)...")

    def setup_ocs(self) -> list[tuple[int, int, int]]:
        """The OCS's forwarding entries for the deployed topology: ``(time_slice, ocs_port1,
        ocs_port2)`` per circuit, an OCS port being ``port * nb_node + node``
        (:meth:`cal_node_port_to_ocs_port`). The engine's optical schedule is the same
        topology, so nothing else is loaded."""
        if not self.slice_to_topo:
            raise ConfigError("deploy_topo", "not called", "deploy a topology before setting up the OCS")
        entries = []
        for ts in sorted(self.slice_to_topo):
            seen: set[tuple[int, int]] = set()
            for a, b, attr in self.slice_to_topo[ts].edges(data=True):
                x, y = self.cal_node_port_to_ocs_port(a, attr["port1"]), self.cal_node_port_to_ocs_port(b, attr["port2"])
                if (y, x) not in seen:          # a duplex circuit is one OCS entry
                    seen.add((x, y))
                    entries.append((ts, x, y))
        self.ocs_entries = entries
        return entries

    def cal_node_port_to_ocs_port(self, node_id: int, port_id: int) -> int:
        """The OCS port that ``port_id`` of ToR ``node_id`` connects to."""
        return port_id * self.nb_node + node_id

    def setup_nodes(self) -> dict[int, dict[str, Any]]:
        """Load the ToRs' utility tables (OpenOptics: the host-address-to-ToR map, the
        arrive-at-destination entry, the desired-node check and the calendar port per
        slice and peer). The engine applies the same rules itself; the tables are returned
        (and kept as ``node_tables``) to look at: per ToR, ``ip_to_tor``, its host port and,
        per slice, the peer of each uplink."""
        if not self.slice_to_topo:
            raise ConfigError("deploy_topo", "not called", "deploy a topology before setting up the nodes")
        self._say("Setting up switch tables...")
        hpt = self.nb_host_per_tor
        ip_to_tor = {self._addr(n * hpt + h): n for n in range(self.nb_node) for h in range(hpt)}
        tables: dict[int, dict[str, Any]] = {}
        for n in range(self.nb_node):
            slots = {ts: {int(attr["port1"]): int(b) for a, b, attr in g.edges(data=True) if a == n}
                     for ts, g in sorted(self.slice_to_topo.items())}
            tables[n] = {"ip_to_tor": ip_to_tor, "host_port": self.tor_host_port, "slice_port_to_node": slots}
        self.node_tables = tables
        return tables

    def get_topo(self, time_slice: int | None = None) -> Any:
        """``{slice: graph}``, or one slice's graph (None if it does not exist)."""
        if time_slice is None:
            return self.slice_to_topo
        return self.slice_to_topo.get(time_slice)

    # ------------------------------------------------------------------ routing
    def _schedule(self) -> Schedule:
        if not self.slice_to_topo:
            raise ConfigError("deploy_topo", "not called", "deploy a topology before routing")
        return Schedule(self.slice_to_topo)

    def _set_mode(self, mode: Any) -> str:
        if mode not in ("Per-hop", "Source"):
            raise ConfigError("routing_mode", mode, "expected 'Per-hop' or 'Source'")
        if self._mode is not None and self._mode != mode:
            raise ConfigError("routing_mode", mode, f"this network already routes {self._mode!r}: one run uses "
                              "either per-hop tables or source routes (start_fresh=True replaces them)")
        self._mode = mode
        return mode

    def add_time_flow_entry(self, node_id: int, entries: list[TimeFlowEntry] | TimeFlowEntry,
                            routing_mode: str = "Per-hop") -> bool:
        """Install entries at ``node_id``: per hop, each entry's first hop; with source
        routing, all of its hops (stamped into the packet at ``node_id``). True on success."""
        if isinstance(entries, TimeFlowEntry):
            entries = [entries]
        if not isinstance(entries, list) or not all(isinstance(e, TimeFlowEntry) for e in entries):
            raise ConfigError("entries", entries, "expected a TimeFlowEntry or a list of TimeFlowEntry")
        if isinstance(node_id, bool) or not isinstance(node_id, int) or not 0 <= node_id < self.nb_node:
            raise ConfigError("node_id", node_id, f"expected a node 0..{self.nb_node - 1}")
        mode = self._set_mode(routing_mode)
        sched = self._schedule()
        for i, e in enumerate(entries):
            field = f"entries[{i}]"
            if not isinstance(e.dst, int) or not 0 <= e.dst < self.nb_node or e.dst == node_id:
                raise ConfigError(field, e, f"dst must be a node 0..{self.nb_node - 1} other than node_id {node_id}")
            arrivals = range(sched.S) if e.arrival_ts is None else [e.arrival_ts]
            if e.arrival_ts is not None and (not isinstance(e.arrival_ts, int) or not 0 <= e.arrival_ts < sched.S):
                raise ConfigError(field, e, f"arrival_ts must be None or a slice 0..{sched.S - 1}")
            for arr in arrivals:
                hops = [(h.cur_node, h.send_port_or_node, arr if e.arrival_ts is None and not h.by_node
                         else (ANY if h.by_node else h.send_ts)) for h in e.hops]
                if mode == "Per-hop":
                    self._add_hop_entry(sched, node_id, e.dst, arr, hops[0], field, e)
                else:
                    self._add_route(sched, node_id, e.dst, arr, hops, field, e)
        return True

    def deploy_routing(self, paths: list[Path], routing_mode: str = "Per-hop", arch_mode: str = "TO",
                       start_fresh: bool = False) -> bool:
        """Deploy OpenOptics paths (per-hop: each path's first step at its source; source
        routing: the whole path). True on success, ``ConfigError`` naming ``paths[i]``."""
        if isinstance(paths, Path):
            paths = [paths]
        if not isinstance(paths, list) or not all(isinstance(p, Path) for p in paths):
            raise ConfigError("paths", type(paths).__name__, "expected a list of OpenOptics Path objects")
        if arch_mode not in ("TO", "TA"):
            raise ConfigError("arch_mode", arch_mode, "expected 'TO' or 'TA'")
        if arch_mode != self.arch_mode:
            raise ConfigError("arch_mode", arch_mode, f"the network was built with arch_mode={self.arch_mode!r}")
        if start_fresh:
            self._hop_tables, self._routes, self._ta_routes, self._mode = {}, {}, set(), None
        mode = self._set_mode(routing_mode)
        sched = self._schedule()
        if arch_mode == "TA":
            for i, p in enumerate(paths):
                if not p.steps or p.steps[0].step_type != "port":
                    raise ConfigError(f"paths[{i}]", p, "traffic-aware paths send through a port")
                self._ta_routes.add((int(p.src), int(p.dst)))
            if self._native is not None and self._native._live is not None:
                self._native.deploy_routing(self._ta_tables())
            return True
        for i, p in enumerate(paths):
            field = f"paths[{i}]"
            if not p.steps:
                raise ConfigError(field, p, "a path needs at least one step")
            for name, v in (("src", p.src), ("dst", p.dst)):
                if not isinstance(v, int) or not 0 <= v < self.nb_node:
                    raise ConfigError(field, p, f"{name} must be a node 0..{self.nb_node - 1}")
            arrivals = range(sched.S) if p.arrival_ts is None else [p.arrival_ts]
            if p.arrival_ts is not None and (not isinstance(p.arrival_ts, int) or not 0 <= p.arrival_ts < sched.S):
                raise ConfigError(field, p, f"arrival_ts must be None or a slice 0..{sched.S - 1}")
            for arr in arrivals:
                hops: list[tuple[Any, Any, Any]] = []
                for s in p.steps:
                    if s.step_type == "node":
                        hops.append((s.cur_node, s.send_node, ANY))
                    else:
                        dep = arr if p.arrival_ts is None else s.send_ts
                        hops.append((s.cur_node, s.send_port, dep))
                if mode == "Per-hop":
                    self._add_hop_entry(sched, p.src, p.dst, arr, hops[0], field, p)
                else:
                    self._add_route(sched, p.src, p.dst, arr, hops, field, p)
        self._native = None
        return True

    def _resolve(self, sched: Schedule, node: int, dst: int, arr: int, hop: tuple[Any, Any, Any], field: str,
                 what: Any) -> list[tuple[int, Any, int | None]]:
        """The (port, slice, next node) choices of one hop taken at ``node`` by a packet
        that arrived there in slice ``arr``; next node None: a loop-back (stay)."""
        cur, port_or_node, ts = hop
        if cur not in (None, ANY) and cur != node:
            raise ConfigError(field, what, f"a step for node {cur} is taken at node {node}")
        if ts == ANY and port_or_node == ANY:            # a random port, now
            ups = sched.ports_up(node, arr)
            if not ups:
                return [(0, arr, None)]
            return [(p, arr, b) for p, b in ups]
        if ts == ANY:                                     # on to a node by its next circuit
            target = int(port_or_node)
            hit = sched.next_direct(node, target, arr)
            if hit is None:
                raise ConfigError(field, what, f"node {node} never has a circuit to node {target}")
            return [(hit[0], hit[1], target)]
        if ts is None:
            ts = arr
        if not isinstance(port_or_node, int) or not 0 <= port_or_node < self.nb_link:
            raise ConfigError(field, what, f"port {port_or_node!r} is not an uplink 0..{self.nb_link - 1}")
        if not isinstance(ts, int) or not 0 <= ts < sched.S:
            raise ConfigError(field, what, f"send_ts {ts!r} is not a slice 0..{sched.S - 1}")
        peer = sched.peer(node, port_or_node, ts)
        if peer is None:
            if sched.is_loop(node, port_or_node, ts) or not sched.ports_up(node, ts):
                return [(port_or_node, ts, None)]         # loops back: the packet stays
            raise ConfigError(field, what, f"port {port_or_node} of node {node} has no circuit in slice {ts}")
        return [(port_or_node, ts, peer)]

    def _add_hop_entry(self, sched: Schedule, node: int, dst: int, arr: int, hop: Any, field: str, what: Any) -> None:
        table = self._hop_tables.setdefault(node, {})
        if (dst, arr) in table:
            self._ignored += 1
            return
        choices: list[tuple[int, int | None]] = []
        for port, ts, nxt in self._resolve(sched, node, dst, arr, hop, field, what):
            if nxt is None:            # a loop-back: wait here for the next circuit to dst
                hit = sched.next_direct(node, dst, ts)
                if hit is None:
                    continue
                port, ts = hit
            choices.append((port, ts))
        table[(dst, arr)] = choices

    def _add_route(self, sched: Schedule, src: int, dst: int, arr: int, hops: list[Any], field: str,
                   what: Any) -> None:
        if (src, dst, arr) in self._routes:
            self._ignored += 1
            return
        routes: list[list[tuple[int, int, int | None]]] = []

        def walk(node: int, t: Any, k: int, acc: list[tuple[int, int, int | None]]) -> None:
            if k == len(hops):
                if node != dst:
                    raise ConfigError(field, what, f"the path ends at node {node}, not at its destination {dst}")
                routes.append(acc)
                return
            for port, ts, nxt in self._resolve(sched, node, dst, t, hops[k], field, what):
                if nxt is None:
                    walk(node, ts, k + 1, acc)
                elif nxt == dst:
                    routes.append(acc + [(node, port, ts)])
                else:
                    walk(nxt, ts, k + 1, acc + [(node, port, ts)])

        walk(src, arr, 0, [])
        if any(not r for r in routes):
            raise ConfigError(field, what, "the path never leaves its source")
        self._routes[(src, dst, arr)] = routes

    # ------------------------------------------------------------------ traffic
    def udp_traffic(self, **defaults: Any) -> UdpTrafficGenerator:
        """A UDP traffic builder (every backend)."""
        return UdpTrafficGenerator(self.nb_node * self.nb_host_per_tor, self.simulation_stop_s, self, **defaults)

    def tcp_traffic(self, **defaults: Any) -> TcpTrafficGenerator:
        """A TCP traffic builder (every backend)."""
        return TcpTrafficGenerator(self.nb_node * self.nb_host_per_tor, self.simulation_stop_s, self, **defaults)

    def _next_port(self) -> int:
        self._port += 1
        return self._port - 1

    def _install(self, specs: list[Spec]) -> None:
        self._traffic += specs

    # ------------------------------------------------------------------ the native network
    def _config(self) -> Config:
        kw = self._kw
        if self.backend == "Mininet":
            link = float(kw.get("link_delay_ms", 0.001)) * 1000
            host_us = ocs_us = link
        else:
            link = float(kw.get("link_delay_us", 1))
            host_us = float(kw.get("host_link_delay_us", link))
            ocs_us = float(kw.get("ocs_link_delay_us", link))
        slice_ps = self.time_slice_duration_us * 10**6
        gb_ps = self.guardband_us * 10**6
        if self.arch_mode == "TA" or self.backend == "Mininet":
            gb_ps = 0                      # Mininet: the guardband is a look-ahead (_lookahead_ps)
        elif gb_ps >= slice_ps:
            gb_ps = slice_ps - 1           # circuits never up (OpenOptics warns the same)
        cq = int(kw.get("cq_buffer_bytes", 1_048_576))
        return Config(nodes=self.nb_node, uplinks=self.nb_link, link_rate=int(round(self.ocs_tor_link_bw_gbps * 1e9)),
                      slice=slice_ps, guardband=gb_ps, propagation=int(round(2 * ocs_us * 1e6)),
                      hosts_per_node=self.nb_host_per_tor, host_link_rate=int(round(self.tor_host_link_bw_gbps * 1e9)),
                      host_propagation=int(round(host_us * 1e6)), buffer=max(cq * self.nb_time_slices, 4096),
                      mtu=1448, header=54, sample_interval=0)

    def _native_circuits(self) -> list[Circuit]:
        out = []
        for ts, g in self.slice_to_topo.items():
            for a, b, attr in g.edges(data=True):
                p, q = attr["port1"], attr["port2"]
                if a == b or max(p, q) >= self.nb_link:
                    continue
                two_way = g.has_edge(b, a) and g[b][a].get("port1") == q
                if two_way and (a, p) > (b, q):
                    continue
                out.append(Circuit(int(a), int(p), int(b), int(q), None if self.arch_mode == "TA" else int(ts),
                                   not two_way))
        return out

    def _build(self, sample_ps: int) -> Network:
        cfg = self._config().replace(sample_interval=sample_ps)
        net = Network(cfg, arch=f"openoptics:{self.name}", admission_control=self.admission_control)
        # a guardband that fills the slice: OpenOptics' ns-3 backend runs it (no circuit is
        # ever up; the constructor has said so), so the engine does not refuse it
        net.undeliverable_ok = self.arch_mode == "TO" and self.guardband_us >= self.time_slice_duration_us
        if self.backend == "Mininet" and self.arch_mode == "TO":
            # OpenOptics' Mininet ToRs have no dark window: they pick a packet's arrival slice
            # at its arrival plus the guardband (in whole ms, as its backend floors it) plus
            # the link delay (tor_switch.cpp: "equivalent to ending the current time slice
            # earlier")
            la_ms = self.guardband_us // 1000 + float(self._kw.get("link_delay_ms", 0))
            net.lookahead = int(round(la_ms * 1e9))
        if self.admission_control and self._mode == "Source":
            # as OpenOptics' ns-3 backend: admission control is a per-hop mechanism
            warnings.warn("admission_control=True has no effect with source routing (routing_mode='Source'): "
                          "a source-routed packet keeps the slices its route names", RuntimeWarning, stacklevel=4)
        if not self.slice_to_topo:
            raise ConfigError("deploy_topo", "not called", "deploy a topology before start()")
        net.deploy_topo(self._native_circuits(), slices=None if self.arch_mode == "TA" else self.nb_time_slices)
        if self.arch_mode == "TA":
            net.deploy_routing(self._ta_tables())
        elif self._mode == "Source":
            paths = [NativePath(s, d, arr, tuple(Hop(n, p, t) for n, p, t in r))
                     for (s, d, arr), rs in sorted(self._routes.items()) for r in rs]
            net.deploy_routing(paths, lookup="source", partial=True)
        else:
            tables: dict[int, list[Entry]] = {}
            for node, table in sorted(self._hop_tables.items()):
                tables[node] = [Entry(arr, None, dst, dep, port) for (dst, arr), acts in sorted(table.items())
                                for port, dep in acts]
            net.deploy_routing(tables)
        return net

    def _ta_tables(self) -> dict[int, list[Entry]]:
        """Traffic-aware tables: a node sends to a destination through the port whose
        circuit leads there now (a destination without one has no entry)."""
        sched = self._schedule()
        tables: dict[int, list[Entry]] = defaultdict(list)
        for src, dst in sorted(self._ta_routes):
            port = sched.port_to(src, dst, 0)
            if port is not None:
                tables[src].append(Entry(None, None, dst, None, port))
        return dict(tables)

    # ------------------------------------------------------------------ running
    def _flows_of(self, specs: Sequence[Spec]) -> Sent:
        sent = Sent.of(specs, self.simulation_stop_s, self.tor_host_link_bw_gbps * 1e9)
        sent.check_hosts(self.nb_node * self.nb_host_per_tor)
        return sent

    def _transport(self, sent: Sent) -> str:
        is_tcp = sent.is_tcp()
        tcp, udp = sent.size[is_tcp], sent.size[~is_tcp]
        if not len(tcp):
            return "ideal"
        if not len(udp):
            return "tcp"
        if int(udp.max()) < int(tcp.min()):
            return f"ideal<{int(tcp.min())}B,tcp"
        raise ConfigError("traffic", "tcp and udp", "TCP flows no larger than the largest UDP datagram cannot share "
                          "a run with it (the engine picks transports by flow size)")

    def _run_once(self, sent: Sent, duration_ps: int, control: Callable[[Network], None] | None) -> Result:
        samples = max(1, min(MAX_SAMPLES, duration_ps // max(1, self._snapshot_ps())))
        net = self._build(sample_ps=max(duration_ps // samples, 1))
        net.hop_limit = LOOP_HOPS
        net.transport(self._transport(sent), dupack=3, min_rto=TCP_MIN_RTO[self.backend])
        # the engine's flows in start order (stable); an echo reply is a flow that starts
        # when its request has arrived (a dependency)
        order = np.argsort(sent.start, kind="stable")
        pos = np.empty(len(order), np.int64)
        pos[order] = np.arange(len(order))
        ro = sent.reply_of[order]
        after = [[int(pos[r])] if r >= 0 else [] for r in ro.tolist()] if (ro >= 0).any() else None
        rates = sent.rate[order]
        shift = self._phase_ps()
        wl = _wl.flows_from_arrays(sent.start[order].astype(np.uint64) + np.uint64(shift), sent.src[order],
                                   sent.dst[order], sent.size[order], after=after,
                                   rate_bps=rates if rates.any() else None)
        self._native = net
        net.start(wl, duration_ps + shift, seed=1)
        self._running = sent.keep(order)
        try:
            if control is not None:
                control(net)
            result = net.finish()
        finally:
            self._running = None

        def col(name: str) -> np.ndarray:
            a = result.flows[name].to_numpy(zero_copy_only=False)
            if a.dtype.kind == "f":
                return np.where(np.isnan(a), -1, a).astype(np.int64)
            return np.asarray(a, dtype=np.int64)

        finish, start, retx = col("finish_ps"), col("start_ps"), col("retransmits")
        sent.finish[order] = np.where(finish >= 0, finish - shift, -1)
        sent.retx[order] = np.maximum(retx, 0)
        # a reply's start: when its request arrived (-1: it never did)
        rep = ro >= 0
        sent.start[order[rep]] = np.where(start[rep] >= 0, start[rep] - shift, -1)
        return result

    def _phase_ps(self) -> int:
        """The ns-3 backend's slice phase: its OCS goes dark for the guardband at the *end*
        of each slice (its ToRs budget a slice's bytes to arrive before that), where the
        engine darkens the *start*. The two are the same schedule shifted by the guardband:
        the run starts the guardband into the engine's time, so the script's time t is the
        engine's t + guardband (its slice k's window [kS, (k+1)S - g) is the engine's up
        window [kS + g, (k+1)S)). Times the script sees are its own; ``net.result`` keeps
        the engine's."""
        if self.backend != "ns3" or self.arch_mode != "TO":
            return 0
        return min(self.guardband_us * 10**6, self.time_slice_duration_us * 10**6 - 1)

    def _snapshot_ps(self) -> int:
        us = self._kw.get("snapshot_interval_us", self.time_slice_duration_us)
        return int(float(us) * 10**6)

    def _simulate(self, sent: Sent, duration_ps: int, control: Callable[[Network], None] | None = None) -> Result:
        """Run the rows; an echo server's reply to each request is a flow that the engine
        starts when the request has arrived (a flow dependency), so one run gives both
        directions. A reply whose request is lost, or arrives after the end, is not sent
        (it is not kept)."""
        rows = sent.with_replies()
        result = self._run_once(rows, duration_ps, control)
        self._sent = rows.keep((rows.reply_of < 0) | (rows.start >= 0))
        return result

    def start(self) -> None:
        """Run the network (see the module documentation). As OpenOptics' Mininet and
        Tofino backends open their CLI here, a script run at an interactive terminal with
        one of those backends gets the ``OpenOptics>`` prompt after the run (not when its
        input is not a terminal, nor with ``quiet=True``)."""
        if self.arch_mode == "TA":
            self.start_traffic_aware()          # opens the prompt itself
            return
        if not self._traffic:
            self._ping_all()
        else:
            packets = self._flows_of(self._traffic)
            self.result = self._simulate(packets, _seconds_ps(self.simulation_stop_s))
            self._report()
            self._monitor()
        self._cli_at_a_terminal()

    def _cli_at_a_terminal(self) -> None:
        if self.backend in ("Mininet", "Tofino") and not self.quiet and sys.stdin is not None and sys.stdin.isatty():
            self.start_cli()

    def _ping_specs(self, rounds: int, gap_s: float, t0: float) -> list[UdpFlowSpec]:
        hosts = self.nb_node * self.nb_host_per_tor
        return [UdpFlowSpec(a, b, t0, t0 + rounds * gap_s, rounds, PING_BYTES, gap_s, "echo", None, None, 0, "ping")
                for a in range(hosts) for b in range(hosts) if a != b]

    _ping_bytes = PING_BYTES

    def _ping_pair(self, src: int, dst: int, count: int, gap_s: float) -> list[float | None]:
        """``count`` echo requests from host ``src`` to ``dst``, ``gap_s`` apart, run now:
        each one's round-trip time in ms (None: no reply by the end of the run)."""
        cycle_s = self.nb_time_slices * self.time_slice_duration_us / 1e6
        t0 = 0.01
        spec = UdpFlowSpec(src, dst, t0, t0 + count * gap_s, count, PING_BYTES, gap_s, "echo", None, None, 0, "ping")
        end = t0 + count * gap_s + 4 * cycle_s + 1.0
        keep, self.simulation_stop_s = self.simulation_stop_s, end
        try:
            self.result = self._simulate(self._flows_of([spec]), _seconds_ps(end))
        finally:
            self.simulation_stop_s = keep
        out = [rtt for _, _, rtt in self._rtts()]
        self._monitor()
        return out

    def _rtts(self) -> list[tuple[int, int, float | None]]:
        """The echo requests of the last run in row order: source, destination and the
        round-trip time in ms (None: no reply by the end of the run)."""
        sent = self._sent
        if sent is None:
            return []
        reply = sent.replies_of()
        req = np.flatnonzero(sent.reply_of < 0)
        r = reply[req]
        back = r >= 0
        back[back] = sent.finish[r[back]] >= 0
        rtt = np.where(back, (sent.finish[np.maximum(r, 0)] - sent.start[req]) / 1e9, np.nan)
        return [(a, b, None if not ok else x) for a, b, ok, x in
                zip(sent.src[req].tolist(), sent.dst[req].tolist(), back.tolist(), rtt.tolist())]

    def start_cli(self) -> None:
        """An interactive session on this network (:class:`~opendcn.openoptics.OpticalCLI.OpticalCLI`):
        ``h0 ping h1``, ``pingall``, ``connect``, ``disconnect``, metrics; every command that
        sends traffic runs it in simulated time."""
        from .OpticalCLI import OpticalCLI

        OpticalCLI(self)

    def dashboard(self, out: str = "openoptics-dashboard") -> str:
        """Write the dashboard of the last run (:mod:`opendcn.openoptics.dashboard`: circuits
        per slice, the time-flow table, queues and throughput over time, the FCT
        distribution, the switches' counters and the pings; one self-contained page) to
        ``out/index.html`` and return its path."""
        from .dashboard import write_dashboard

        return str(write_dashboard(self, out))

    def start_monitor(self, out: str = "openoptics-dashboard") -> str:
        """Keep the dashboard (:meth:`dashboard`) of this network: written again after every
        run (``start()``, a ping, ``pingall``). Returns the page's path."""
        self._monitor_dir = out
        path = FsPath(out) / "index.html"
        if self.result is not None:
            path = FsPath(self.dashboard(out))
        self._say(f"*** opendcn: dashboard at {path} (written after every run)")
        return str(path)

    def _monitor(self) -> None:
        if getattr(self, "_monitor_dir", None) is not None:
            self.dashboard(self._monitor_dir)

    def stop_network(self) -> None:
        """End the session: a simulated network holds no processes or switches to stop, so
        this only says so; the results of the last run stay readable."""
        self._say("*** opendcn: the network ran in simulated time; nothing to stop")

    def _ping_all(self, rounds: int = 3, gap_s: float = 1.0, control: Any = None, duration_s: float | None = None) -> None:
        cycle_s = self.nb_time_slices * self.time_slice_duration_us / 1e6
        specs = self._ping_specs(rounds, gap_s, 0.01)
        end = duration_s if duration_s is not None else 0.01 + rounds * gap_s + 4 * cycle_s + 1.0
        keep, self.simulation_stop_s = self.simulation_stop_s, end
        try:
            packets = self._flows_of(specs)
            self.result = self._simulate(packets, _seconds_ps(end), control)
        finally:
            self.simulation_stop_s = keep
        hosts = self.nb_node * self.nb_host_per_tor
        rtt: dict[tuple[int, int], list[float | None]] = {(a, b): [] for a in range(hosts) for b in range(hosts)
                                                          if a != b}
        for a, b, x in self._rtts():
            rtt.setdefault((a, b), []).append(x)
        self.ping_results = rtt
        self._say(f"*** opendcn: ping between every pair of {hosts} hosts ({rounds} echo requests each, "
                  f"{gap_s:g} s apart, {self.nb_time_slices} slices of {self.time_slice_duration_us / 1000:g} ms)")
        got = total = 0
        for a in range(hosts):
            marks = []
            for b in range(hosts):
                if a == b:
                    continue
                ok = len([x for x in rtt[(a, b)] if x is not None])
                got += ok
                total += len(rtt[(a, b)])
                marks.append(f"h{b}" if ok else "X")
            self._say(f"h{a} -> {' '.join(marks)}")
        lost = total - got
        held = self.result.summary.get("held", {}).get("packets", 0) if self.result is not None else 0
        pct = round(100 * lost / total) if total else 0
        self._say(f"*** Results: {pct}% dropped ({got}/{total} received)" if not held else
                  f"*** Results: {pct}% not answered ({got}/{total} received; {held} packets still held at a ToR "
                  "when the run ended, waiting for a circuit: held, not dropped)")
        for (a, b), xs in sorted(rtt.items()):
            vals = [x for x in xs if x is not None]
            if vals:
                self._say(f"    h{a}->h{b}: {len(vals)}/{len(xs)} replies, rtt min/avg/max "
                          f"{min(vals):.3f}/{sum(vals) / len(vals):.3f}/{max(vals):.3f} ms")
        self._report_drops()
        self._monitor()

    def _report_drops(self) -> None:
        if self.result is None:
            return
        held = self.result.summary.get("held", {}).get("packets", 0)
        if held:
            self._say(f"    {held} packets still held at the end of the run (waiting at a ToR for a circuit or a "
                      "route; not dropped)")
        drops = {k: v for k, v in self.result.summary["packets"]["dropped"].items() if v}
        if drops:
            why = ", ".join(f"{k} {v}" for k, v in sorted(drops.items()))
            self._say(f"    packets dropped by the network: {why}")
            if drops.get("loop"):
                self._say(f"    (loop: packets the routing sent round in circles, dropped after {LOOP_HOPS} links: "
                          "check the entries of the nodes they cross)")
        if not self._hop_tables and not self._routes and not self._ta_routes:
            self._say("    (no routing deployed: every packet is dropped as no_route)")
        if self._ignored:
            self._say(f"    ({self._ignored} entries matched an entry already installed and were ignored; "
                      "the first one stays)")

    # ------------------------------------------------------------------ statistics
    def _addr(self, host: int) -> str:
        return f"10.0.{host // 250}.{host % 250 + 1}"

    def _stats_of(self, spec: Any, reverse: bool = False) -> FlowStats:
        assert self._sent is not None
        mss = self._native.config.mtu if self._native is not None else 1500
        return self._sent.stats(spec, reverse, mss)

    def _flow_stats(self, spec: Any) -> FlowStats | None:
        if self._sent is None or not self._sent.has(spec):
            return None
        return self._stats_of(spec)

    def get_flow_stats(self) -> list[FlowStats]:
        """Statistics of every flow of the last run (echo flows: both directions)."""
        out: list[FlowStats] = []
        if self._sent is None:
            return out
        for spec in self._traffic:
            if self._sent.has(spec):
                out.append(self._stats_of(spec))
                if spec.mode == "echo":
                    out.append(self._stats_of(spec, reverse=True))
        return out

    def _report(self) -> None:
        r = self.result
        if r is None:
            return
        self._say("=" * 72)
        self._say(f"  opendcn run of {self.name!r} ({self.backend} script on opendcn's packet engine)")
        self._say("=" * 72)
        self._say(f"  simulated {self.simulation_stop_s:g} s; {self.nb_time_slices} slices of "
                  f"{self.time_slice_duration_us} us, guardband {self.guardband_us} us; wall {r.summary['wall_s']} s")
        per = self.device_manager.switch_counters()
        self._say(f"  {'switch':<8}{'from_host':>11}{'delivered':>11}{'lost':>8}")
        for name, c in per.items():
            self._say(f"  {name:<8}{c['from_host']:>11}{c['delivered']:>11}{c['lost']:>8}")
        self._report_drops()
        stats = self.get_flow_stats()
        if len(stats) <= 32:
            for s in stats:
                delay = "" if math.isnan(s.delay_avg_s) else (
                    f" delay avg/min/max {s.delay_avg_s * 1e3:.3f}/{s.delay_min_s * 1e3:.3f}/{s.delay_max_s * 1e3:.3f} ms")
                self._say(f"  {s.protocol} {s.src_ip} -> {s.dst_ip}:{s.dst_port}  tx {s.tx_packets} rx {s.rx_packets} "
                          f"lost {s.lost_packets}{delay} fct {s.fct_s * 1e3:.3f} ms")
        tx = sum(s.tx_packets for s in stats)
        rx = sum(s.rx_packets for s in stats)
        # lost: what never arrived (a TCP segment sent again is counted in tx, not lost)
        lost = sum(s.lost_packets for s in stats)
        self._say(f"  totals: {len(stats)} flow directions, tx {tx}, rx {rx}, lost {lost}")
        self._say("=" * 72)

    # ------------------------------------------------------------------ traffic-aware
    def pause_calendar_queue(self) -> None:
        """Traffic-aware: hold traffic while the circuits change; the circuits deployed
        until :meth:`activate_calendar_queue` are applied as one reconfiguration."""
        self._require_ta_run("pause_calendar_queue")
        self._paused = True
        self._pending = []

    def activate_calendar_queue(self) -> None:
        """Traffic-aware: apply the circuits deployed since :meth:`pause_calendar_queue`
        (routes first, then circuits; packets queued on a changed circuit are routed again
        once it is up) and let every destination with a circuit send."""
        self._require_ta_run("activate_calendar_queue")
        pending, self._pending, self._paused = self._pending, None, False
        if pending:
            self._reconfigure(pending[-1])

    def _require_ta_run(self, what: str) -> None:
        if self.arch_mode != "TA":
            raise ConfigError("arch_mode", self.arch_mode, f"{what} is for traffic-aware networks (arch_mode='TA')")
        if self._native is None or self._native._live is None:
            raise ConfigError(what, "no run", "calendar queues are controlled during a traffic-aware run "
                              "(inside start_traffic_aware)")

    def _reconfigure(self, circuits: list[Any]) -> bool:
        if self._pending is not None:
            self._pending.append(circuits)
            return True
        self.slice_to_topo = {}
        for ts, a, b, p, q in circuits:
            if a != -1 and a != b:
                self.connect(int(ts), int(a), int(b), int(p), int(q))
        if not self.slice_to_topo:
            g = nx.DiGraph()
            g.add_nodes_from(range(self.nb_node))
            self.slice_to_topo[0] = g
        assert self._native is not None
        self._native.deploy_routing(self._ta_tables())
        self._native.deploy_topo(self._native_circuits())
        self.reconfigurations += 1
        return True

    reconfigurations: int = 0

    def start_traffic_aware(self, topo_func: Callable[..., Any] | None = None,
                            routing_func: Callable[..., Any] | None = None, routing_mode: str | None = None,
                            update_interval: float = 1) -> bool:
        """Run a traffic-aware network: every ``update_interval`` seconds of simulated time
        read the traffic matrix (bytes waiting per destination, ``DeviceManager``), ask
        ``topo_func(nb_node=, nb_link=, traffic_matrix=, prev_circuits=)`` for circuits
        and, when they change, reconfigure (pause, deploy, activate). Runs the installed
        traffic, or the ping sweep of ``start()``. Returns True."""
        if self.nb_link != 1:
            raise ConfigError("nb_link", self.nb_link, "traffic-aware networks take one link per node")
        if self.arch_mode != "TA":
            raise ConfigError("arch_mode", self.arch_mode, "start_traffic_aware needs arch_mode='TA'")
        step = _number("update_interval", update_interval, positive=True)
        if routing_mode is not None:
            self._set_mode(routing_mode)

        def control(net: Network) -> None:
            from .utils import metric_to_matrix

            prev: Any = []
            live = net._live
            assert live is not None
            while net._live is not None and live.sim.now + _seconds_ps(step) <= live.duration:
                net.collect(_seconds_ps(step))
                if topo_func is None:
                    continue
                tm = metric_to_matrix(self.device_manager.get_device_metric())
                circuits = topo_func(nb_node=self.nb_node, nb_link=self.nb_link, traffic_matrix=tm, prev_circuits=prev)
                if circuits is not None and circuits != prev:
                    prev = circuits
                    self.pause_calendar_queue()
                    self.deploy_topo(circuits, start_fresh=True)
                    self.activate_calendar_queue()
                    if routing_func is not None:
                        self.deploy_routing(routing_func(self.get_topo()), routing_mode=self._mode or "Per-hop",
                                            arch_mode="TA", start_fresh=True)

        self.reconfigurations = 0
        initial = {ts: g.copy() for ts, g in self.slice_to_topo.items()}
        try:
            if self._traffic:
                packets = self._flows_of(self._traffic)
                self.result = self._simulate(packets, _seconds_ps(self.simulation_stop_s), control)
                self._report()
                self._monitor()
            else:
                self._ping_all(rounds=3, gap_s=step, control=control, duration_s=0.01 + 3 * step + 2 * step + 0.5)
            self._say(f"    traffic-aware control loop: {self.reconfigurations} reconfiguration(s) "
                      f"(every {step:g} s of simulated time)")
        finally:
            self.slice_to_topo = initial
        self._cli_at_a_terminal()            # as OpenOptics: the prompt after the run
        return True
