"""OpenOptics' time-flow table objects, as its scripts build them.

- :class:`TimeFlowHop`: one action of an entry — at ``cur_node`` (255: any node, no
  check) send through ``send_port`` in slice ``send_ts``, or, given ``send_node``
  instead of a port, to that node by its next direct circuit (``send_ts`` 255 marks this
  node-indexed form).
- :class:`TimeFlowEntry`: at a node, packets to ``dst`` that arrived in slice
  ``arrival_ts`` (None: any slice) take ``hops`` — the first one only with per-hop
  routing, all of them (stamped into the packet) with source routing.
- :class:`Step` and :class:`Path`: what the routing functions return; a path from ``src``
  to ``dst`` for packets arriving in ``arrival_ts``, one step per transmission. Two paths
  are equal when their ``(src, dst, arrival_ts)`` are.

>>> e = TimeFlowEntry(dst=1, arrival_ts=0, hops=TimeFlowHop(cur_node=0, send_port=0, send_ts=2))
>>> e.hops[0].send_port_or_node, e.hops[0].send_ts
(0, 2)
>>> Path(0, 2, 1, [Step(0, send_port=0, send_ts=1, send_node=1)]) == Path(0, 2, 1, [])
True
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

__all__ = ["TimeFlowHop", "TimeFlowEntry", "Step", "Path", "ANY"]

#: OpenOptics' marker for "any" (no node check, a random port, a node-indexed hop)
ANY = 255


class TimeFlowHop:
    """One hop of a time-flow entry (see the module documentation)."""

    def __init__(self, cur_node: int | None = None, send_port: int | None = None,
                 send_node: int | None = None, send_ts: int | None = None):
        self.cur_node = ANY if cur_node is None else cur_node
        if send_port is not None:
            self.send_port_or_node = send_port
            self.send_ts = send_ts
        elif send_node is not None:
            self.send_port_or_node = send_node
            self.send_ts = ANY
        else:
            raise ConfigError("send_port", None, "a TimeFlowHop needs send_port or send_node")

    @property
    def by_node(self) -> bool:
        """True when the hop names the next node rather than a port and slice."""
        return self.send_ts == ANY

    def __repr__(self) -> str:
        at = "any node" if self.cur_node == ANY else f"node {self.cur_node}"
        if self.by_node:
            return f"<hop at {at}: on to node {self.send_port_or_node} by its next circuit>"
        return f"<hop at {at}: port {self.send_port_or_node} in slice {self.send_ts}>"

    __str__ = __repr__


class TimeFlowEntry:
    """A time-flow table entry: ``dst``, ``arrival_ts`` (None: any) and its hops."""

    def __init__(self, dst: int, arrival_ts: int | None = None,
                 hops: list[TimeFlowHop] | TimeFlowHop | None = None):
        self.dst = dst
        self.arrival_ts = arrival_ts
        if isinstance(hops, TimeFlowHop):
            self.hops = [hops]
        elif isinstance(hops, list) and all(isinstance(h, TimeFlowHop) for h in hops):
            self.hops = list(hops)
        else:
            raise ConfigError("hops", hops, "expected a TimeFlowHop or a list of TimeFlowHop")

    def __repr__(self) -> str:
        arr = "any slice" if self.arrival_ts is None else f"slice {self.arrival_ts}"
        return f"<entry to node {self.dst}, arriving in {arr}: {', '.join(map(repr, self.hops))}>"

    __str__ = __repr__


class Step:
    """One transmission of a path: at ``cur_node`` send through ``send_port`` in slice
    ``send_ts`` (``step_type="port"``), or to ``send_node`` by its next direct circuit
    (``step_type="node"``). ``send_node`` is also filled in on port steps, for reading."""

    def __init__(self, cur_node: int | None = None, step_type: str = "port", send_port: int | None = None,
                 send_ts: int | None = None, send_node: int | None = None):
        if step_type not in ("port", "node"):
            raise ConfigError("step_type", step_type, "expected 'port' or 'node'")
        self.cur_node = cur_node
        self.step_type = step_type
        self.send_port = send_port
        self.send_ts = send_ts
        self.send_node = send_node

    def __repr__(self) -> str:
        at = "any node" if self.cur_node in (None, ANY) else f"node {self.cur_node}"
        if self.step_type == "node":
            return f"<step at {at}: on to node {self.send_node} by its next circuit>"
        return f"<step at {at}: port {self.send_port} in slice {self.send_ts} to node {self.send_node}>"

    __str__ = __repr__


class Path:
    """A route from ``src`` to ``dst`` for packets that arrive in slice ``arrival_ts``."""

    def __init__(self, src: int, arrival_ts: int | None, dst: int, steps: list[Step]):
        self.src = src
        self.arrival_ts = arrival_ts
        self.dst = dst
        self.steps = steps

    def _key(self) -> tuple[Any, Any, Any]:
        return (self.src, self.dst, self.arrival_ts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Path):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: Path) -> bool:
        return self._key() < other._key()

    def __repr__(self) -> str:
        steps = ", ".join(map(repr, self.steps))
        return f"<path {self.src} -> {self.dst} arriving in slice {self.arrival_ts}: {steps}>"

    __str__ = __repr__
