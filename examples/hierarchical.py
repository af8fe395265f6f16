"""Hierarchical RDCN (OpenOptics Fig. 5d) on rack-skewed traffic: rotors inside racks, a
traffic-aware core OCS between racks (the ``hierarchical`` architecture; see
``docs/arch/hierarchical.md``).

    .venv/bin/python examples/hierarchical.py --racks 4 --hosts 4 --duration 2ms
"""

from __future__ import annotations

import argparse

import opendcn as od


def run(racks: int = 4, hosts: int = 4, duration: str = "2ms", period: str = "500us",
        load: float = 0.2, seed: int = 1) -> dict:
    net = od.arch.hierarchical(nodes=racks * hosts, racks=racks, period=period)
    wl = od.workload.poisson("hadoop", load=load, pattern="permutation")   # each rack talks to one partner
    return net.run(wl, duration=duration, seed=seed).summary


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
          f"core reconfigurations {s['arch_metrics']['reconfigurations']}")


if __name__ == "__main__":
    main()
