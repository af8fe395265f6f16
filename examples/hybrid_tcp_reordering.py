"""TCP over a hybrid rotor + electrical fabric (OpenOptics §6, Case II): reordering and the
duplicate-ACK threshold.

Every node has one rotor uplink (a 1-D round-robin schedule) and one electrical uplink to
a packet switch. A data packet takes its direct circuit when that circuit is up in the slice it
arrives in, else the two-hop electrical path through the switch; ACKs (the other direction)
always cross the switch, so they stay in order. When a circuit comes up,
packets sent on it overtake the packets still crossing the switch, so the receiver sees a
few segments out of order: with the usual three duplicate ACKs TCP retransmits segments
that were never lost; a threshold of five rides the reordering out.

Run: ``python examples/hybrid_tcp_reordering.py``.
"""

from __future__ import annotations

import numpy as np

import opendcn as od
from opendcn.studies.openoptics import hybrid  # the fabric ``opendcn reproduce openoptics`` runs


def run(dupack: int, electrical: str = "25Gbps", buffer: str = "20KB", seed: int = 1) -> od.Result:
    net = hybrid(electrical=electrical, buffer=buffer)
    net.transport("tcp", dupack=dupack)
    flows = [(0, 0, 1, 4_000_000), (0, 2, 3, 4_000_000)]
    return net.run(od.workload.flows(flows), duration="3ms", seed=seed)


def main() -> None:
    print("electrical  buffer  dupack  retransmissions  dropped  mean FCT (us)  reordered segments")
    for el in ("10Gbps", "25Gbps", "50Gbps"):
        for buf in ("20KB", "1MB"):
            for d in (3, 5):
                r = run(d, el, buf)
                s = r.summary
                retx = int(np.asarray(r.flows["retransmits"]).sum())
                late = sum(v for k, v in s["reorder"].items() if k != "0")
                print(f"{el:>10}  {buf:>6}  {d:>6}  {retx:>15}  {sum(s['packets']['dropped'].values()):>7}  "
                      f"{s['fct_us']['all']['mean']:>13.0f}  {late:>18}")


if __name__ == "__main__":
    main()
