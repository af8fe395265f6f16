"""RotorNet (OpenOptics Fig. 5a): a 1-D round-robin rotor schedule with VLB, direct,
HOHO or UCMP routing.

Each node has ``uplinks`` rotor uplinks; the schedule cycles through the N−1 matchings of
a round robin (``uplinks`` matchings per slice). Routing ``vlb`` sprays each packet to a
neighbour of the current slice (never the destination) and the intermediate waits for its
direct circuit to the destination; ``direct`` waits at the source for the direct circuit.
Both run as built-in routers, or compiled to per-node time-flow tables with ``--tables``
(identical decisions; the tables are materialized, so use it on small networks).
``hoho`` takes, at every hop, the first hop of the earliest path across slices (at most
``--max-hop`` hops); ``ucmp`` source-routes each packet on an earliest path chosen by the
age of its flow (young flows: lowest latency; aged flows: fewest hops). Sources defer a
packet whose departure slice is already full to a later slice.

Transport (DECIDE): ``ideal`` by default. RotorNet's own transport, RotorLB, holds bulk
data at hosts and sends it direct or through one relay rack; it runs on the packet engine
(``--hosts-per-node 2 --transport rotorlb``) but needs hosts below the nodes, while this
architecture's nodes are the endpoints by default. The engine's back-pressured injection
(a source never pushes a packet its slice cannot carry) is the stand-in then.
``--transport tcp|dctcp|ndp`` makes every flow reliable (relayed packets lost at full
calendar queues are sent again).
"""

from __future__ import annotations

from typing import Any

from .. import routing, topology
from ..config import Config
from ..errors import ConfigError
from ..network import Network
from ..transport import apply_transport, transport_options
from . import Option, apply_services, common_options, config_kwargs, register, service_options


@register("rotornet", "RotorNet: 1-D round-robin rotor schedule, VLB or direct routing", [
    *common_options(nodes=16, uplinks=2),
    Option("slice", "2us", "time slice (circuit hold time, guardband included)", "time"),
    Option("guardband", "200ns", "reconfiguration guardband at the start of each slice", "time"),
    Option("routing", "vlb", "routing scheme", "choice", ("vlb", "direct", "hoho", "ucmp")),
    Option("max_hop", 3, "most hops of a HOHO/UCMP path", "int"),
    Option("ucmp_alpha", 1.0, "UCMP: weight of extra hops against latency (x flow-age time)", "float"),
    Option("tables", False, "compile the routes to per-node time-flow tables", "bool"),
    Option("lookup", "hop", "table lookup: per hop or source routed (with --tables)", "choice", ("hop", "source")),
    Option("multipath", "packet", "multipath choice per packet or per flow", "choice", ("packet", "flow")),
    *service_options(),
    *transport_options("ideal"),
])
def build(**o: Any) -> Network:
    cfg = Config.from_dict(config_kwargs(o, "slice", "guardband"))
    net = Network(cfg, arch="rotornet")
    net.deploy_topo(topology.round_robin(cfg, dimension=1))
    if o["tables"]:
        if o["routing"] not in ("vlb", "direct"):
            raise ConfigError("--tables", True, f"compiled tables are offered for vlb and direct, not {o['routing']}")
        paths = routing.vlb(net.circuits) if o["routing"] == "vlb" else routing.direct(net.circuits)
        net.deploy_routing(paths, lookup=o["lookup"], multipath=o["multipath"])
    else:
        net.deploy_routing(o["routing"], multipath=o["multipath"], max_hop=o["max_hop"], alpha=o["ucmp_alpha"])
    apply_services(net, o)
    apply_transport(net, o)
    net.arch_metrics["routing"] = o["routing"]
    net.arch_metrics["cycle_slices"] = net.slices
    duty = 1 - cfg.guardband / cfg.slice
    net.arch_metrics["duty_cycle"] = duty
    return net
