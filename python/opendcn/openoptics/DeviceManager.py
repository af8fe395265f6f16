"""Monitoring of an OpenOptics network running on opendcn (``net.device_manager``).

- :meth:`DeviceManager.get_device_metric`: per switch ``"tor<i>"``, ``pq_depth`` (packets
  waiting, keyed ``(port, queue)``), ``pq_latency`` (not measured: empty) and
  ``drop_ctr``. In a traffic-aware run the queue is the destination node (bytes of its
  flows not yet delivered, in packets); in a traffic-oblivious run it is the port's
  calendar queues taken together (``queue`` 0), as the engine measures a port;
- :meth:`DeviceManager.switch_counters`: per switch, packets from its hosts, packets
  delivered to its hosts, and packets of its hosts that were lost;
- :meth:`DeviceManager.queue_occupancy`: bytes queued at one port over the last run.

``drop_ctr`` counts the packets lost among those a switch's hosts sent (the engine
reports drops by reason, not by the switch where they happen).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ConfigError

__all__ = ["DeviceManager"]


class DeviceManager:
    """Reads the network a :class:`~opendcn.openoptics.Toolbox.BaseNetwork` runs.

    The constructor takes OpenOptics' arguments, ``DeviceManager(backend, tor_ocs_ports,
    nb_queue, event_publisher=None)``: on opendcn the network object is its own backend
    (there are no switch processes to connect to), so ``backend`` is the ``BaseNetwork``
    (``net.device_manager`` is made this way); ``tor_ocs_ports`` (a ToR's OCS ports, a
    sequence of port numbers; default the network's uplinks) and ``nb_queue`` (queues per
    port; default the network's slices, or its nodes in a traffic-aware network) are kept
    as attributes, as OpenOptics keeps them; ``event_publisher`` (the dashboard's feed) is
    accepted and unused: ``net.start_monitor()`` writes the page after each run.

    >>> from opendcn.openoptics import Toolbox
    >>> net = Toolbox.BaseNetwork("dm", nb_node=4, backend="ns3", quiet=True)
    >>> dm = DeviceManager(net, [0], nb_queue=1)
    >>> dm.tor_ocs_ports, dm.nb_queue, dm.switch_counters()["tor0"]
    ([0], 1, {'from_host': 0, 'delivered': 0, 'lost': 0})
    """

    def __init__(self, backend: Any, tor_ocs_ports: Any = None, nb_queue: Any = None, event_publisher: Any = None):
        from .Toolbox import BaseNetwork

        if not isinstance(backend, BaseNetwork):
            raise ConfigError("backend", type(backend).__name__,
                              "pass the BaseNetwork: on opendcn the network is its own backend "
                              "(or use net.device_manager)")
        if tor_ocs_ports is None:
            tor_ocs_ports = list(range(backend.nb_link))
        if isinstance(tor_ocs_ports, (str, bytes)) or not hasattr(tor_ocs_ports, "__len__") or not all(
                isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in tor_ocs_ports):
            raise ConfigError("tor_ocs_ports", tor_ocs_ports, "expected a sequence of port numbers")
        if nb_queue is None:
            nb_queue = backend.nb_time_slices if backend.arch_mode == "TO" else backend.nb_node
        if isinstance(nb_queue, bool) or not isinstance(nb_queue, int) or nb_queue < 1:
            raise ConfigError("nb_queue", nb_queue, "expected a positive count")
        self.tor_ocs_ports = list(tor_ocs_ports)
        self.nb_queue = nb_queue
        self.event_publisher = event_publisher
        self._net: Any = backend
        self.event_publisher = event_publisher

    def switch_counters(self) -> dict[str, dict[str, int]]:
        """``{"tor<i>": {"from_host", "delivered", "lost"}}`` over the last run's packets,
        or, during a run (a traffic-aware control loop), over the packets of the run under
        way so far: sent by their host and delivered by now. A packet counts as lost only
        once the run has ended (until then it may still be on its way), so ``lost`` is 0
        during a run."""
        net = self._net
        out = {f"tor{i}": {"from_host": 0, "delivered": 0, "lost": 0} for i in range(net.nb_node)}
        running = net._running
        native = net._native
        h = net.nb_host_per_tor
        if running is not None and native is not None and native._live is not None:
            fin, sent, _ = native.flow_progress()
            fin, sent = np.asarray(fin), np.asarray(sent)
            src_tor = np.bincount(running.src[sent > 0] // h, minlength=net.nb_node)
            dst_tor = np.bincount(running.dst[fin >= 0] // h, minlength=net.nb_node)
            for i in range(net.nb_node):
                out[f"tor{i}"]["from_host"] = int(src_tor[i])
                out[f"tor{i}"]["delivered"] = int(dst_tor[i])
            return out
        if net._sent is None:
            return out
        return net._sent.switch_counters(h, net.nb_node)

    def get_device_metric(self) -> dict[str, dict[str, Any]]:
        """The metrics of every switch now (during a run) or at the end of the last run."""
        net = self._net
        native = net._native
        live = native is not None and native._live is not None
        lost = {k: v["lost"] for k, v in self.switch_counters().items()}
        out: dict[str, dict[str, Any]] = {f"tor{i}": {"pq_depth": {}, "pq_latency": {}, "drop_ctr": lost[f"tor{i}"]}
                                          for i in range(net.nb_node)}
        if native is None:
            return out
        pkt = native.config.mtu + native.config.header
        if net.arch_mode == "TA":
            if live:
                tm = native.demand()
                for a in range(net.nb_node):
                    for b in range(net.nb_node):
                        if a != b and tm[a, b] > 0:
                            out[f"tor{a}"]["pq_depth"][(0, b)] = math.ceil(int(tm[a, b]) / pkt)
            return out
        for node in range(net.nb_node):
            for port in range(net.nb_link):
                gp = native.gport(node, port)
                if live:
                    queued = native._live.sim.port_bytes(gp)
                elif net.result is not None:
                    t = self.queue_occupancy(node, port)
                    col = t["queued_bytes"].to_pylist()
                    queued = col[-1] if col else 0
                else:
                    queued = 0
                out[f"tor{node}"]["pq_depth"][(port, 0)] = math.ceil(queued / pkt)
        return out

    def queue_occupancy(self, node: int, port: int, interval: Any = None) -> Any:
        """Bytes queued at uplink ``port`` of ``node`` (all its calendar queues) over the
        last run: a pyarrow table ``time_ps``, ``queued_bytes`` (``interval``: the largest
        sample per interval)."""
        net = self._net
        if net.result is None or net._native is None:
            raise ConfigError("device_manager", "no run", "run the network (net.start()) first")
        if not 0 <= node < net.nb_node or not 0 <= port < net.nb_link:
            raise ConfigError("port", (node, port), f"expected node 0..{net.nb_node - 1}, port 0..{net.nb_link - 1}")
        return net.result.port_series(node, port, "queued_bytes", interval, how="max")

    def get_ocs_metric(self) -> dict[str, Any]:
        """Not available: OpenOptics reads per-port schedule hit and miss counters from its
        P4 optical switch; opendcn's circuits are the engine's schedule, which counts no
        per-port packets. A packet that finds no circuit is dropped as ``no_circuit`` in
        ``net.result.summary['packets']['dropped']``, and the bytes each ToR uplink sent are
        ``net.result.port_series(node, port, 'tx_bytes')``."""
        raise ConfigError("get_ocs_metric", "OCS hit/miss counters",
                          "opendcn runs no P4 optical switch: packets without a circuit are counted as no_circuit "
                          "in net.result.summary['packets']['dropped'], per-uplink bytes are "
                          "net.result.port_series(node, port, 'tx_bytes')")

    def set_active_queue(self, sw_name: str, active_qid: int) -> None:
        """Not available: opendcn's engine rotates calendar queues with the schedule, and a
        traffic-aware network is paused and activated with ``net.pause_calendar_queue()`` /
        ``net.activate_calendar_queue()``."""
        raise ConfigError("set_active_queue", (sw_name, active_qid), "opendcn rotates calendar queues with the "
                          "schedule; use net.pause_calendar_queue() / net.activate_calendar_queue() in "
                          "traffic-aware runs")
