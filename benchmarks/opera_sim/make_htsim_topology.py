"""Write the topology file that Opera's public htsim simulator (TritonNetworking/opera-sim,
`htsim_ndp_dynexpTopology -topfile`) reads, for exactly the fabric opendcn's `opera` builds:
the same staggered circuits of Opera's shipped matchings, the same ε/δ/r timing and the
same one-path-per-pair source routes, so both simulators run the same network.

Format (documented by opera-sim's topology generator): a header line (hosts, downlinks,
uplinks, ToRs), a line (slices, ε, δ, r in ps), per slice (ε, δ, r of every superslice)
the ToR each (ToR, uplink) reaches (-1 while reconfiguring), then per slice the ToR queues
of one path per ToR pair (uplink queues numbered from `downlinks`).

Usage: python make_htsim_topology.py OUT.txt [TORS [PATHS]]
(TORS other than 108: `opera --tors TORS --matchings generate`; PATHS shortest paths per
ToR pair and slice, as `opera --paths`, one line each as opera-sim's k-shortest-path files)
"""
import sys

import numpy as np

import opendcn as od

TORS = int(sys.argv[2]) if len(sys.argv) > 2 else 108
PATHS = int(sys.argv[3]) if len(sys.argv) > 3 else 1
net = od.arch.opera(**({} if TORS == 108 else {"tors": TORS, "matchings": "generate"}), paths=PATHS)
net.start(od.workload.flows([]), duration=1)  # the engine of exactly this fabric, no flows
sim = net._live.sim
m = net.fabric_metrics
N, u, h = net.tors, net.u, net.hpr  # 108, 6, 6: the defaults of `opera`
D, eps, dl, r = m["superslice_ps"], m["eps_ps"], m["delta_ps"], m["reconf_ps"]
# the rotor circuits of every superslice, peer[s, tor, k] (-1: none)
peer = np.full((N, N, u), -1, dtype=np.int64)
for c in net.circuits:
    peer[c.ts, c.n1, c.p1] = c.n2
    peer[c.ts, c.n2, c.p2] = c.n1
out = open(sys.argv[1], "w")
out.write(f"{N*h} {h} {u} {N}\n{3*N} {eps} {dl} {r}")
for s in range(N):
    up = []
    rr = []
    for tor in range(N):
        for k in range(u):
            p = int(peer[s, tor, k])
            up.append(tor if p < 0 else p)
            rr.append(-1 if (s - k) % u == u - 1 else up[-1])
    for line in (up, up, rr):
        out.write("\n" + " ".join(map(str, line)))


def path_lines(s, pairs, names):
    """The lines "a b queue..." of every ToR pair for superslice s (its expander's paths)."""
    parts = []
    for a, b, pre in pairs:
        for path in (sim.expander_paths(a, b, s) if PATHS > 1 else [sim.expander_path(a, b, s)]):
            p = tuple(int(g) % (u + h) for g in path)  # each ToR: u uplinks, h hosts
            if p not in names:  # a few hundred distinct rotor paths for 1.2M path lines
                names[p] = " ".join(str(h + x) for x in p)
            parts += (pre, names[p])
    return "".join(parts)


pairs = [(a, b, f"\n{a} {b} ") for a in range(N) for b in range(N) if a != b]
names = {}
for s in range(N):
    block = path_lines(s, pairs, names)  # the three slices of a superslice share it
    for os_ in range(3):
        out.write(f"\n{3*s+os_}{block}")
out.close()
