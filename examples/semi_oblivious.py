"""Semi-oblivious RotorNet (OpenOptics Fig. 5c) against the plain round robin on a skewed
workload: the ``sorn`` architecture re-skews its round-robin slots toward the measured
hot pairs every period (see ``docs/arch/sorn.md``); with ``period`` longer than the run it
is the plain round robin.

    .venv/bin/python examples/semi_oblivious.py --nodes 16 --duration 4ms
"""

from __future__ import annotations

import argparse

import numpy as np

import opendcn as od


def skewed_workload(nodes: int, load: float, hot_pairs: int, seed: int) -> od.workload.Workload:
    """Uniform Hadoop background plus long flows between a few fixed node pairs."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(nodes)
    hot = [(int(perm[2 * i]), int(perm[2 * i + 1])) for i in range(hot_pairs)]
    elephants = od.workload.flows([(f"{10 * k}us", a, b, 2_000_000)
                                   for k in range(40) for a, b in hot])
    return od.workload.mix(od.workload.poisson("hadoop", load=load), elephants)


def run(nodes: int = 16, duration: str = "4ms", period: str = "500us", load: float = 0.2,
        hot_pairs: int = 2, seed: int = 1) -> dict[str, dict]:
    out = {}
    for mode, p in (("round robin", "1s"), ("semi-oblivious", period)):
        net = od.arch.sorn(nodes=nodes, period=p)
        out[mode] = net.run(skewed_workload(nodes, load, hot_pairs, seed), duration=duration, seed=seed).summary
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--duration", default="4ms")
    ap.add_argument("--period", default="500us")
    ap.add_argument("--load", type=float, default=0.2)
    a = ap.parse_args()
    for mode, s in run(a.nodes, a.duration, a.period, a.load).items():
        print(f"{mode:15s} goodput {s['goodput_normalized']:.3f}  flows {s['flows']['completed']}/"
              f"{s['flows']['started']}  all p99 FCT {s['fct_us']['all']['p99']:.1f} us  "
              f"drops {s['bytes']['dropped']} B")


if __name__ == "__main__":
    main()
