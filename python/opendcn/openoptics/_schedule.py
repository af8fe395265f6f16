"""A schedule read from OpenOptics' ``slice_to_topo`` (slice -> networkx graph whose edges
carry ``port1``/``port2``), with the lookups the routing functions and the compiler of
time-flow entries need."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from ..errors import ConfigError
from ..network.timeflow import Circuit


class Schedule:
    """Per slice and node, the ports that lead to another node; self-loops are idle ports."""

    def __init__(self, slice_to_topo: Mapping[int, Any]):
        if not isinstance(slice_to_topo, Mapping) or not slice_to_topo:
            raise ConfigError("slice_to_topo", slice_to_topo, "expected {time slice: graph}, as net.get_topo() gives")
        slices = sorted(slice_to_topo)
        if slices != list(range(len(slices))):
            raise ConfigError("slice_to_topo", slices, "time slices must be 0..S-1")
        self.S = len(slices)
        nodes: set[int] = set()
        self.links: list[dict[int, list[tuple[int, int, int]]]] = []   # [ts][node] -> (port, peer, peer port)
        self.loops: list[set[tuple[int, int]]] = []                      # [ts] -> {(node, port)}
        for ts in slices:
            g = slice_to_topo[ts]
            nodes |= set(g.nodes)
            per: dict[int, list[tuple[int, int, int]]] = {}
            loops: set[tuple[int, int]] = set()
            for a, b, attr in g.edges(data=True):
                p, q = int(attr.get("port1", 0)), int(attr.get("port2", 0))
                if a == b:
                    loops.add((int(a), p))
                else:
                    per.setdefault(int(a), []).append((p, int(b), q))
            for v in per.values():
                v.sort()
            self.links.append(per)
            self.loops.append(loops)
        self.nodes = sorted(int(v) for v in nodes)

    @cached_property
    def circuits(self) -> list[Circuit]:
        """Directed native circuits, one per directed edge (both ways for a two-way one)."""
        return [Circuit(a, p, b, q, ts, True) for ts, per in enumerate(self.links)
                for a, conns in per.items() for p, b, q in conns]

    @cached_property
    def view(self) -> Any:
        from ..fabrics.routing import _View

        return _View(self.circuits, self.S)

    def peer(self, node: int, port: int, ts: int) -> int | None:
        """The node that ``port`` of ``node`` reaches in slice ``ts`` (None: idle or none)."""
        for p, b, _ in self.links[ts % self.S].get(node, ()):
            if p == port:
                return b
        return None

    def is_loop(self, node: int, port: int, ts: int) -> bool:
        return (node, port) in self.loops[ts % self.S]

    def ports_up(self, node: int, ts: int) -> list[tuple[int, int]]:
        """(port, peer) of the ports of ``node`` that lead to another node in slice ``ts``."""
        return [(p, b) for p, b, _ in self.links[ts % self.S].get(node, ())]

    def port_to(self, node: int, dst: int, ts: int) -> int | None:
        """The lowest port of ``node`` leading to ``dst`` in slice ``ts``, or None."""
        return next((p for p, b, _ in self.links[ts % self.S].get(node, ()) if b == dst), None)

    def next_direct(self, node: int, dst: int, arr: int) -> tuple[int, int] | None:
        """(port, slice) of the first circuit ``node`` -> ``dst`` at or after slice ``arr``
        (cyclically), or None when they are never connected."""
        for k in range(self.S):
            ts = (arr + k) % self.S
            p = self.port_to(node, dst, ts)
            if p is not None:
                return p, ts
        return None
