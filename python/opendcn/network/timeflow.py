"""Circuits, paths and time-flow table entries: the data at the center of opendcn.

A *circuit* ``Circuit(n1, p1, n2, p2, ts)`` connects port ``p1`` of node ``n1`` with port
``p2`` of node ``n2`` (both directions) during time slice ``ts`` of the cycle; ``ts=None``
means always (static or traffic-aware fabrics). With ``directed=True`` it carries only
``n1 → n2``: port ``p2`` receives on it and may send on another directed circuit.

A *time-flow entry* ``Entry(arr_ts, src, dst, dep_ts, port)`` installed at a node says:
a packet from ``src`` to ``dst`` that arrived in slice ``arr_ts`` leaves through ``port``
in slice ``dep_ts``. ``None`` slices (and ``src``) are wildcards; with both slices
wildcarded it is an ordinary flow-table entry. Several entries matching one packet are
multipath alternatives (chosen uniformly per packet, or by a per-flow hash). Specific
entries win: among the entries whose ``dst`` equals the packet's destination node and
whose ``arr_ts`` is the packet's arrival slice or a wildcard, those with ``src`` equal to
the packet's source node are used if any exist, else those with a wildcard ``src``; within
that set, exact ``arr_ts`` entries are used if any exist, else wildcard ones.

The *arrival slice* of a packet at a node is the slice in which the previous hop sent it
(for the first hop: the slice in which the packet reached its source node), so
propagation never shifts a lookup into the next slice.

A *path* ``Path(src, dst, ts, hops)`` is a route of a packet that enters the network at
``src`` in slice ``ts`` (``None`` = any slice): ``hops`` lists ``Hop(node, port, dep_ts)``
— at ``node`` leave through ``port`` in slice ``dep_ts``.

>>> Entry(arr_ts=0, src=None, dst=3, dep_ts=2, port=0)
Entry(arr_ts=0, src=None, dst=3, dep_ts=2, port=0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Circuit(NamedTuple):
    """Port ``p1`` of node ``n1`` ↔ port ``p2`` of node ``n2`` in slice ``ts`` (None: always);
    ``directed``: one way, ``n1 → n2`` only."""

    n1: int
    p1: int
    n2: int
    p2: int
    ts: int | None = None
    directed: bool = False


class Entry(NamedTuple):
    """Time-flow table entry: match {arr_ts, src, dst} → action {port, dep_ts}."""

    arr_ts: int | None
    src: int | None
    dst: int
    dep_ts: int | None
    port: int


class Hop(NamedTuple):
    """One hop of a path: at ``node`` leave via ``port`` in slice ``dep_ts`` (None: now)."""

    node: int
    port: int
    dep_ts: int | None


@dataclass(frozen=True)
class Path:
    """A route from ``src`` to ``dst`` for packets entering in slice ``ts`` (None: any)."""

    src: int
    dst: int
    ts: int | None
    hops: tuple[Hop, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "hops", tuple(Hop(*h) for h in self.hops))

    @property
    def nodes(self) -> list[int]:
        """Nodes visited, excluding the destination."""
        return [h.node for h in self.hops]
