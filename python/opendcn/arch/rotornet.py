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

``--admission-control`` switches on OpenOptics' per-hop admission control
(``Network.admission_control``): a relayed packet whose departure slice has no room
left takes the route of the next arrival slices instead of waiting a cycle, and is
dropped (``adm_fail``) when no slice of the cycle has room.
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from ..fabrics import routing, topology
from ..network.config import Config
from ..errors import ConfigError
from ..network.network import Network
from .options import FabricOptions, FailureOptions, Float, Int, ServiceOptions, Time, TransportOptions, like, opt
from . import register


class RotorNetOptions(TransportOptions, ServiceOptions, FailureOptions, FabricOptions):
    nodes: Int = like(FabricOptions, "nodes", 16)
    uplinks: Int = like(FabricOptions, "uplinks", 2)
    slice: Time = opt("2us", "time slice (circuit hold time, guardband included)", gt=0)
    guardband: Time = opt("200ns", "reconfiguration guardband at the start of each slice")
    routing: Literal["vlb", "direct", "hoho", "ucmp"] = opt("vlb", "routing scheme")
    # (UCMP's simulator computes its 108-ToR paths with MAX_HOP = 10, ht-gong/UCMP
    # topologies/ucmp/optiroute.py; OpenOptics' routing_hoho is unbounded by default)
    max_hop: Int = opt(10, "most hops of a HOHO/UCMP path", ge=1, le=16)
    ucmp_alpha: Float = opt(1.0, "UCMP: weight of extra hops against latency (x flow-age time)", ge=0)
    tables: bool = opt(False, "compile the routes to per-node time-flow tables")
    lookup: Literal["hop", "source"] = opt("hop", "table lookup: per hop or source routed (with --tables)")
    multipath: Literal["packet", "flow"] = opt("packet", "multipath choice per packet or per flow")
    rotor_order: Literal["rounds", "shuffled"] = opt("rounds", "which round-robin matchings share a slice with "
                                                     "several uplinks: consecutive rounds (a slice's circuits form a "
                                                     "ring-like graph) or shuffled (each slice an expander, as "
                                                     "OpenOptics' multi-link round robin means to be; what paths "
                                                     "inside a slice, HOHO's and UCMP's, cross)")
    admission_control: bool = opt(False, "OpenOptics' per-hop admission control: a packet whose slice is full takes "
                                         "a later slice's route, else is dropped (adm_fail); not with --lookup source")

    @model_validator(mode="after")
    def _check(self) -> "RotorNetOptions":
        if self.tables and self.routing not in ("vlb", "direct"):
            raise ConfigError("--tables", True, f"compiled tables are offered for vlb and direct, not {self.routing}")
        if self.admission_control and self.tables and self.lookup == "source":
            raise ConfigError("--admission-control", True, "admission control acts at every hop on hop-by-hop "
                              "routes (vlb, direct, hoho, ucmp); --lookup source routes are fixed at the source")
        return self


@register("rotornet", "RotorNet: 1-D round-robin rotor schedule, VLB or direct routing", RotorNetOptions)
def build(o: RotorNetOptions) -> Network:
    cfg = Config.from_dict(o.config(slice=o.slice, guardband=o.guardband))
    net = Network(cfg, arch="rotornet", admission_control=o.admission_control)
    net.deploy_topo(topology.round_robin(cfg, dimension=1, order=o.rotor_order))
    if o.tables:
        paths = routing.vlb(net.circuits) if o.routing == "vlb" else routing.direct(net.circuits)
        net.deploy_routing(paths, lookup=o.lookup, multipath=o.multipath)
    else:
        net.deploy_routing(o.routing, multipath=o.multipath, max_hop=o.max_hop, alpha=o.ucmp_alpha)
    o.apply_services(net)
    o.apply_transport(net)
    o.apply_failures(net)
    net.arch_metrics["routing"] = o.routing
    net.arch_metrics["cycle_slices"] = net.slices
    duty = 1 - cfg.guardband / cfg.slice
    net.arch_metrics["duty_cycle"] = duty
    return net
