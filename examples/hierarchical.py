"""Hierarchical RDCN (OpenOptics Fig. 5d): traffic-oblivious inside racks, traffic-aware
between racks, on one fabric and one set of time-flow tables.

Hosts are the nodes. Port 0 of every host is on its rack's rotor (a 1-D round robin
among the rack's hosts); port 1 is on the core OCS, whose static circuits connect host k
of one rack to host k of another. Every ``period`` the core collects the rack-level
traffic matrix: the first racks − 1 core matchings are a round robin over racks (every
rack pair stays one core hop apart), the others follow the traffic, decomposed greedily
into matchings (repeated maximum-weight matching, Edmonds' algorithm — c-Through/BvN
style); host k's core port follows matching k. Routing is the earliest path across slices over all circuits (rotor + core), compiled
to per-hop time-flow tables, installed before the circuits change (the OpenOptics TA
workflow).

    .venv/bin/python examples/hierarchical.py --racks 4 --hosts 4 --duration 2ms
"""

from __future__ import annotations

import argparse

import networkx as nx
import numpy as np

import opendcn as od


def rack_rotor(racks: int, hosts: int) -> list[od.Circuit]:
    """Per rack, a 1-D round robin among its hosts on port 0 (same slices in every rack)."""
    out = []
    for c in od.topology.round_robin(hosts, dimension=1, uplink=1):
        for r in range(racks):
            out.append(od.Circuit(r * hosts + c.n1, 0, r * hosts + c.n2, 0, c.ts))
    return out


def core_matchings(rack_tm: np.ndarray, hosts: int) -> list[list[tuple[int, int]]]:
    """``hosts`` rack matchings: a round robin over racks first (connectivity), then a
    greedy decomposition of the rack TM (repeated maximum-weight matching)."""
    racks = rack_tm.shape[0]
    base: dict[int, list[tuple[int, int]]] = {}
    for c in od.topology.round_robin(racks, dimension=1, uplink=1):
        base.setdefault(c.ts, []).append((min(c.n1, c.n2), max(c.n1, c.n2)))
    out = [sorted(base[k]) for k in sorted(base)][:hosts]
    w = (rack_tm + rack_tm.T).astype(float) + 1.0
    for _ in range(hosts - len(out)):
        g = nx.Graph()
        for a in range(racks):
            for b in range(a + 1, racks):
                if w[a, b] > 0:
                    g.add_edge(a, b, weight=w[a, b])
        m = sorted(tuple(sorted(e)) for e in nx.max_weight_matching(g, maxcardinality=True))
        out.append(m)
        for a, b in m:
            w[a, b] = w[b, a] = w[a, b] / 4                 # served: next matchings look elsewhere
    return out


def core_circuits(matchings: list[list[tuple[int, int]]], hosts: int) -> list[od.Circuit]:
    return [od.Circuit(a * hosts + k, 1, b * hosts + k, 1, None)
            for k, m in enumerate(matchings) for a, b in m]


def routes(circuits: list[od.Circuit]) -> dict[int, list[od.Entry]]:
    """Per hop, the first hop of the earliest path from there (HOHO as time-flow tables)."""
    return od.routing.first_hop_tables(od.routing.hoho(circuits, max_hop=3))


def run(racks: int = 4, hosts: int = 4, duration: str = "2ms", period: str = "500us",
        load: float = 0.2, seed: int = 1) -> dict:
    n = racks * hosts
    cfg = od.Config(nodes=n, uplinks=2, slice="2us", guardband="200ns", reconfiguration_delay="20us")
    net = od.Network(cfg, arch="hierarchical")
    rotor = rack_rotor(racks, hosts)
    circuits = rotor + core_circuits(core_matchings(np.zeros((racks, racks)), hosts), hosts)
    net.deploy_topo(circuits)
    net.deploy_routing(routes(circuits))
    # rack-skewed traffic: each rack talks mostly to one partner rack
    wl = od.workload.poisson("hadoop", load=load, pattern="permutation")
    net.start(wl, duration=duration, seed=seed)
    changes = 0
    for tm in net.collect_every(period):
        rack_tm = tm.reshape(racks, hosts, racks, hosts).sum(axis=(1, 3))
        new = rotor + core_circuits(core_matchings(rack_tm, hosts), hosts)
        net.deploy_routing(routes(new))                    # routes first ...
        net.deploy_topo(new)                               # ... then circuits
        changes += 1
    result = net.finish()
    result.summary["arch_metrics"]["core_reconfigurations"] = changes
    return result.summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--racks", type=int, default=4)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--duration", default="2ms")
    ap.add_argument("--period", default="500us")
    a = ap.parse_args()
    s = run(a.racks, a.hosts, a.duration, a.period)
    print(f"goodput {s['goodput_normalized']:.3f}  flows {s['flows']['completed']}/{s['flows']['started']}  "
          f"mice p99 {s['fct_us']['mice']['p99']:.1f} us  drops {s['drops']}  "
          f"core reconfigurations {s['arch_metrics']['core_reconfigurations']}")


if __name__ == "__main__":
    main()
