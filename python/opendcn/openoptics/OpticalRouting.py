"""OpenOptics' routing functions over ``net.get_topo()`` (slice -> graph), returning
:class:`~opendcn.openoptics.TimeFlowTable.Path` lists, with OpenOptics' semantics:

- :func:`routing_direct`: wait at the source for the next circuit to the destination
  (:func:`find_direct_path` per pair);
- :func:`routing_vlb`: **direct when a circuit to the destination is up in the arrival
  slice**, else one hop through port ``tor_to_ocs_port[ts % len]`` (``random=True``: a
  random port) to a node that then waits for its direct circuit (a node-indexed step);
- :func:`routing_hoho`: the earliest arrival over the slices, **any number of hops** by
  default (``max_hop`` bounds it);
- :func:`routing_ksp`: per slice, a shortest path over that slice's circuits, every hop in
  the arrival slice (Opera's routing);
- :func:`routing_direct_ta`: traffic-aware direct routing (one slice, port 0).

The searches run on opendcn's routing code (``opendcn.fabrics.routing``); ties between equally
early paths are broken by fewer hops, then lower ports and node ids.

>>> from opendcn.openoptics import OpticalTopo, Toolbox
>>> net = Toolbox.BaseNetwork("doc", nb_node=4, backend="ns3", quiet=True)
>>> net.deploy_topo(OpticalTopo.round_robin(nb_node=4))
True
>>> [(p.arrival_ts, p.steps[0].send_ts) for p in find_direct_path(net.get_topo(), 0, 2)]
[(0, 1), (1, 1), (2, 1)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx

from ..errors import ConfigError
from ..fabrics.routing import _earliest
from ._schedule import Schedule
from .TimeFlowTable import ANY, Path, Step

__all__ = ["find_send_port", "find_direct_path", "routing_direct", "routing_direct_next_node", "routing_hoho",
           "routing_vlb", "routing_vlb_all_random", "routing_ksp", "routing_direct_ta", "find_n_hop_path_node_pair",
           "remove_suboptimal_paths", "extend_paths_to_all_time_slice"]

Topo = Mapping[int, Any]


def find_send_port(topo: Any, src: int, dst: int) -> int | None:
    """The port through which ``src`` reaches ``dst`` in one slice's graph, or None."""
    if not topo.has_edge(src, dst):
        return None
    return topo[src][dst].get("port1")


def _pair(sched: Schedule, node1: Any, node2: Any) -> tuple[int, int]:
    for name, v in (("node1", node1), ("node2", node2)):
        if v not in sched.nodes:
            raise ConfigError(name, v, f"not a node of the topology (0..{max(sched.nodes)})")
    if node1 == node2:
        raise ConfigError("node2", node2, "must differ from node1")
    return int(node1), int(node2)


def _direct(sched: Schedule, a: int, b: int) -> list[Path]:
    out = []
    for arr in range(sched.S):
        hit = sched.next_direct(a, b, arr)
        if hit is None:
            return []
        port, ts = hit
        out.append(Path(a, arr, b, [Step(cur_node=a, send_port=port, send_ts=ts, send_node=b)]))
    return out


def find_direct_path(slice_to_topo: Topo, node1: int, node2: int) -> list[Path]:
    """Paths ``node1 -> node2`` for every arrival slice: wait for the next slice (this one
    included) in which they are connected. Empty if they never are."""
    sched = Schedule(slice_to_topo)
    a, b = _pair(sched, node1, node2)
    return _direct(sched, a, b)


def routing_direct(slice_to_topo: Topo) -> list[Path]:
    """Direct routing between every ordered pair of nodes (see :func:`find_direct_path`)."""
    sched = Schedule(slice_to_topo)
    return [p for a in sched.nodes for b in sched.nodes if a != b for p in _direct(sched, a, b)]


def routing_direct_next_node(slice_to_topo: Topo) -> list[Path]:
    """Direct routing written as node-indexed steps: for every pair and arrival slice, one
    step "on to the destination by its next circuit", which the network resolves into a
    port and slice when the routes are deployed. (Used by an upstream example; the function
    is not part of OpenOptics' own package.)"""
    sched = Schedule(slice_to_topo)
    out = []
    for a in sched.nodes:
        for b in sched.nodes:
            if a != b and sched.next_direct(a, b, 0) is not None:
                out += [Path(a, arr, b, [Step(cur_node=a, step_type="node", send_node=b)]) for arr in range(sched.S)]
    return out


def _as_steps(sched: Schedule, native: Any) -> list[Step]:
    hops = native.hops
    steps = []
    for i, h in enumerate(hops):
        nxt = hops[i + 1].node if i + 1 < len(hops) else native.dst
        steps.append(Step(cur_node=h.node, send_port=h.port, send_ts=h.dep_ts, send_node=nxt))
    return steps


def routing_hoho(slice_to_topo: Topo, max_hop: int | None = None) -> list[Path]:
    """HOHO: for every source, destination and arrival slice, the path that arrives
    earliest, waiting at any node; unbounded hops unless ``max_hop`` is given."""
    sched = Schedule(slice_to_topo)
    if max_hop is None:
        bound = max(len(sched.nodes) - 1, 1)
    elif isinstance(max_hop, bool) or not isinstance(max_hop, int) or max_hop < 1:
        raise ConfigError("max_hop", max_hop, "expected None (unbounded) or an integer >= 1")
    else:
        bound = max_hop
    out = []
    for a in sched.nodes:
        for b in sched.nodes:
            if a == b:
                continue
            for arr in range(sched.S):
                p = _earliest(sched.view, a, b, arr, bound)
                if p is not None:
                    out.append(Path(a, arr, b, _as_steps(sched, p)))
    return out


def routing_vlb(slice_to_topo: Topo, tor_to_ocs_port: Sequence[int], random: bool = False) -> list[Path]:
    """Valiant load balancing the OpenOptics way (see the module documentation)."""
    sched = Schedule(slice_to_topo)
    if isinstance(tor_to_ocs_port, (str, bytes)) or not isinstance(tor_to_ocs_port, Sequence) \
            or not tor_to_ocs_port or not all(isinstance(p, int) and p >= 0 for p in tor_to_ocs_port):
        raise ConfigError("tor_to_ocs_port", tor_to_ocs_port, "expected a non-empty list of ports, e.g. net.tor_ocs_ports")
    if not isinstance(random, bool):
        raise ConfigError("random", random, "expected True or False")
    out = []
    for a in sched.nodes:
        for b in sched.nodes:
            if a == b:
                continue
            for ts in range(sched.S):
                port = sched.port_to(a, b, ts)
                if port is not None:
                    out.append(Path(a, ts, b, [Step(cur_node=a, send_port=port, send_ts=ts, send_node=b)]))
                    continue
                first = Step(cur_node=ANY, send_port=ANY, send_ts=ANY) if random else \
                    Step(cur_node=a, send_port=tor_to_ocs_port[ts % len(tor_to_ocs_port)], send_ts=ts)
                out.append(Path(a, ts, b, [first, Step(cur_node=ANY, step_type="node", send_node=b)]))
    return out


def routing_vlb_all_random(slice_to_topo: Topo, tor_to_ocs_port: Sequence[int]) -> list[Path]:
    """Valiant load balancing without a direct shortcut: in every arrival slice a packet
    leaves on the first of ``tor_to_ocs_port`` to whichever node that port reaches in the
    slice (its intermediate, even when the destination has a circuit of its own), and the
    intermediate sends it on when it has a circuit to the destination. A packet whose
    first hop reaches its destination is delivered there."""
    sched = Schedule(slice_to_topo)
    if isinstance(tor_to_ocs_port, (str, bytes)) or not isinstance(tor_to_ocs_port, Sequence) \
            or not tor_to_ocs_port or not all(isinstance(p, int) and p >= 0 for p in tor_to_ocs_port):
        raise ConfigError("tor_to_ocs_port", tor_to_ocs_port, "expected a non-empty list of ports, e.g. net.tor_ocs_ports")
    out = []
    for a in sched.nodes:
        for b in sched.nodes:
            if a == b:
                continue
            for ts in range(sched.S):
                out.append(Path(a, ts, b, [Step(cur_node=a, send_port=tor_to_ocs_port[0], send_ts=ts),
                                           Step(cur_node=ANY, step_type="node", send_node=b)]))
    return out


def routing_ksp(slice_to_topo: Topo) -> list[Path]:
    """Opera-style routing: in every slice, for every pair, a shortest path over the
    circuits of that slice, all hops in that slice. A pair not connected within a slice has
    no path for it (said once per slice on standard output, as OpenOptics does)."""
    sched = Schedule(slice_to_topo)
    out = []
    for ts in range(sched.S):
        g = nx.DiGraph()
        g.add_nodes_from(sched.nodes)
        for a, conns in sched.links[ts].items():
            for _, b, _ in conns:
                g.add_edge(a, b)
        missing = 0
        for a in sched.nodes:
            for b in sched.nodes:
                if a == b:
                    continue
                try:
                    walk = nx.shortest_path(g, a, b)
                except nx.NetworkXNoPath:
                    missing += 1
                    continue
                steps = []
                for u, v in zip(walk, walk[1:]):
                    steps.append(Step(cur_node=u, send_port=sched.port_to(u, v, ts), send_ts=ts, send_node=v))
                out.append(Path(a, ts, b, steps))
        if missing:
            print(f"routing_ksp: slice {ts} leaves {missing} node pair(s) without a path")
    return out


def routing_direct_ta(slice_to_topo: Topo) -> list[Path]:
    """Traffic-aware direct routing: every pair sends through port 0, where its packets
    wait in the queue of their destination until a circuit to it is configured."""
    sched = Schedule(slice_to_topo)
    if sched.S != 1:
        raise ConfigError("slice_to_topo", f"{sched.S} slices", "traffic-aware routing takes a single time slice")
    return [Path(a, 0, b, [Step(cur_node=a, send_port=0)]) for a in sched.nodes for b in sched.nodes if a != b]


def find_n_hop_path_node_pair(slice_to_topo: Topo, src: int, dst: int, max_hop: int) -> list[Path]:
    """For every arrival slice, the earliest path ``src -> dst`` with at most ``max_hop``
    hops (a slice with none takes the next slice's path: its packets wait)."""
    sched = Schedule(slice_to_topo)
    a, b = _pair(sched, src, dst)
    found = [Path(a, arr, b, _as_steps(sched, p)) for arr in range(sched.S)
             if (p := _earliest(sched.view, a, b, arr, max_hop)) is not None]
    if not found:
        raise ConfigError("max_hop", max_hop, f"no path from node {a} to node {b} within {max_hop} hops")
    return extend_paths_to_all_time_slice(found, sched.S)


def _duration(p: Path, nb_ts: int) -> int:
    last = p.steps[-1].send_ts if p.steps else p.arrival_ts
    return (int(last or 0) - int(p.arrival_ts or 0)) % nb_ts


def remove_suboptimal_paths(paths: list[Path], nb_ts: int) -> list[Path]:
    """Per arrival slice, the path whose last step leaves earliest (then fewest steps)."""
    best: dict[Any, Path] = {}
    for p in paths:
        cur = best.get(p.arrival_ts)
        if cur is None or (_duration(p, nb_ts), len(p.steps)) < (_duration(cur, nb_ts), len(cur.steps)):
            best[p.arrival_ts] = p
    return list(best.values())


def extend_paths_to_all_time_slice(paths: list[Path], nb_ts: int) -> list[Path]:
    """Paths of one pair for every arrival slice: a slice without a path of its own uses
    the next slice's path (cyclically) — its packets wait for it."""
    if not paths:
        raise ConfigError("paths", paths, "no path to extend")
    own = {p.arrival_ts: p for p in paths}
    out = []
    for ts in range(nb_ts):
        src = next(own[(ts + k) % nb_ts] for k in range(nb_ts) if (ts + k) % nb_ts in own)
        if src.arrival_ts == ts:
            out.append(src)
        else:
            out.append(Path(src.src, ts, src.dst, list(src.steps)))
    return out
