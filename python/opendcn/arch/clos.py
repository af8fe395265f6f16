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

from typing import Any

from .. import routing
from ..config import Config
from ..errors import ConfigError
from ..network import Network
from ..timeflow import Circuit
from ..units import parse_rate
from ..transport import apply_transport, transport_options
from . import Option, common_options, config_kwargs, register


@register("clos", "Clos: non-blocking electrical leaf-spine baseline with ECMP", [
    *common_options(nodes=16, uplinks=4),
    Option("oversubscription", 1.0, "host-side bandwidth / uplink bandwidth of a ToR", "float"),
    Option("multipath", "flow", "ECMP per flow (hash), per packet (random) or adaptive (per packet, the least-queued port)", "choice", ("packet", "flow", "adaptive")),
    *transport_options("dctcp"),
])
def build(**o: Any) -> Network:
    if not o["oversubscription"] >= 1.0:
        raise ConfigError("--oversubscription", o["oversubscription"], "must be >= 1")
    cfg = Config.from_dict(config_kwargs(o))
    n, u = cfg.nodes, cfg.uplinks
    spine_rate = int(parse_rate(o["link_rate"], "--link-rate") / o["oversubscription"])
    net = Network(cfg, fabric="electrical", switches=u, switch_ports=n,
                  switch_link_rate=spine_rate, arch="clos")
    circuits = [Circuit(t, s, n + s, t, None) for t in range(n) for s in range(u)]
    net.deploy_topo(circuits)
    net.deploy_routing(routing.ecmp(circuits, endpoints=range(n)), lookup="hop", multipath=o["multipath"])
    apply_transport(net, o)
    net.arch_metrics["spines"] = u
    net.arch_metrics["oversubscription"] = o["oversubscription"]
    return net
