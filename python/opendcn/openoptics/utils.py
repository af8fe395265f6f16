"""OpenOptics' helper functions that scripts call directly.

>>> metric_to_matrix({"tor0": {"pq_depth": {(0, 2): 5}}, "tor1": {"pq_depth": {}}})
{(0, 2): 5}
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .TimeFlowTable import Path, TimeFlowEntry, TimeFlowHop

__all__ = ["metric_to_matrix", "path2entries"]


def metric_to_matrix(metric: dict[str, Any]) -> dict[tuple[int, int], int]:
    """The traffic matrix of a traffic-aware network from its device metrics:
    ``{(src node, dst node): packets waiting}``, the queue id being the destination."""
    tm: dict[tuple[int, int], int] = {}
    for name, m in metric.items():
        if not str(name).startswith("tor"):
            raise ConfigError("metric", name, "expected switch names tor<i>")
        src = int(str(name)[3:])
        for (port, queue), depth in m.get("pq_depth", {}).items():
            tm[(src, int(queue))] = int(depth)
    return tm


def path2entries(paths: list[Path], routing_mode: str, arch_mode: str = "TO") -> dict[int, list[TimeFlowEntry]]:
    """Paths as time-flow entries per source node: per hop, the first step only; with
    source routing, every step. In a traffic-aware network the queue (``send_ts``) of a
    hop is the destination."""
    if routing_mode not in ("Per-hop", "Source"):
        raise ConfigError("routing_mode", routing_mode, "expected 'Per-hop' or 'Source'")
    if arch_mode not in ("TO", "TA"):
        raise ConfigError("arch_mode", arch_mode, "expected 'TO' or 'TA'")
    out: dict[int, list[TimeFlowEntry]] = {}
    for i, p in enumerate(paths):
        steps = p.steps[:1] if routing_mode == "Per-hop" else p.steps
        hops = []
        for s in steps:
            if s.step_type == "node":
                if arch_mode == "TA":
                    raise ConfigError(f"paths[{i}]", p, "traffic-aware paths send through ports, not to nodes")
                hops.append(TimeFlowHop(cur_node=s.cur_node, send_node=s.send_node))
            else:
                hops.append(TimeFlowHop(cur_node=s.cur_node, send_port=s.send_port,
                                        send_ts=s.send_ts if arch_mode == "TO" else p.dst))
        out.setdefault(p.src, []).append(TimeFlowEntry(p.dst, p.arrival_ts, hops))
    return out
