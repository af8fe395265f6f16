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


#: OpenOptics' helpers that write P4 table entries or switch commands for its backends.
#: opendcn's engine has no P4 switches: the same network is built from the circuits and
#: time-flow entries themselves, so these names say what to use instead.
_SWITCH_TABLES = {
    "gen_ocs_commands": "the OCS schedule is the deployed circuits: net.deploy_topo(circuits), net.get_topo()",
    "gen_tor_commands": "the ToRs' tables are the deployed routing: net.deploy_routing(paths) or "
                        "net.add_time_flow_entry(node, entries)",
    "tor_table_ip_to_dst": "hosts are addressed by number (host i on ToR i // nb_host_per_tor)",
    "tor_table_arrive_at_dst": "a packet at its destination ToR goes to its host",
    "tor_table_verify_desired_node": "source routes are checked when they are deployed (ConfigError naming the path)",
    "tor_table_cal_port_slice_to_node": "a node-indexed step goes out of the next circuit to that node",
    "tor_table_routing_source": "net.deploy_routing(paths, routing_mode='Source') takes the paths",
    "tor_table_routing_per_hop": "net.deploy_routing(paths, routing_mode='Per-hop') takes the paths",
}


def __getattr__(name: str) -> Any:
    if name in _SWITCH_TABLES:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise ConfigError(f"utils.{name}", "P4 table entries",
                              f"opendcn runs no P4 switch; {_SWITCH_TABLES[name]}")
        refuse.__name__ = name
        refuse.__doc__ = f"Not available in opendcn: {_SWITCH_TABLES[name]}."
        return refuse
    raise AttributeError(f"module 'opendcn.openoptics.utils' has no attribute {name!r}")
