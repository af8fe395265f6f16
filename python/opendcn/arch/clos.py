"""Clos: the non-blocking electrical baseline (a two-tier leaf–spine) with ECMP.

Each of the ``nodes`` ToRs has ``uplinks`` links, one to each of ``uplinks`` spine
switches (a spine has one port per ToR). With oversubscription 1 the uplink capacity of a
ToR equals its host-side bandwidth R = uplinks × link rate; ``--oversubscription k`` runs
the ToR–spine links at link rate / k. Routing is ECMP over the spines, per flow (hash) or
per packet, compiled to time-flow tables with wildcard slices (plain flow tables).

Transport: DCTCP by default (the datacenter baseline: every port marks ECN above
``--ecn-k`` queued bytes); ``--transport tcp|ndp|ideal`` or a size rule selects others.
"""

from __future__ import annotations

from typing import Literal

from ..fabrics import routing
from ..network.config import Config
from ..network.network import Network
from .options import FabricOptions, FailureOptions, Float, Int, TransportOptions, like, opt
from ..network.timeflow import Circuit
from . import register


class ClosOptions(TransportOptions, FailureOptions, FabricOptions):
    nodes: Int = like(FabricOptions, "nodes", 16)
    uplinks: Int = like(FabricOptions, "uplinks", 4)
    oversubscription: Float = opt(1.0, "host-side bandwidth / uplink bandwidth of a ToR", ge=1)
    multipath: Literal["packet", "flow", "adaptive"] = opt(
        "flow", "ECMP per flow (hash), per packet (random) or adaptive (per packet, the least-queued port)")
    transport: str = like(TransportOptions, "transport", "dctcp")


@register("clos", "Clos: non-blocking electrical leaf-spine baseline with ECMP", ClosOptions)
def build(o: ClosOptions) -> Network:
    cfg = Config.from_dict(o.config())
    n, u = cfg.nodes, cfg.uplinks
    spine_rate = int(o.link_rate / o.oversubscription)
    net = Network(cfg, fabric="electrical", switches=u, switch_ports=n,
                  switch_link_rate=spine_rate, arch="clos")
    circuits = [Circuit(t, s, n + s, t, None) for t in range(n) for s in range(u)]
    net.deploy_topo(circuits)
    net.deploy_routing(routing.ecmp(circuits, endpoints=range(n)), lookup="hop", multipath=o.multipath)
    o.apply_transport(net)
    o.apply_failures(net)
    net.arch_metrics["spines"] = u
    net.arch_metrics["oversubscription"] = o.oversubscription
    return net
