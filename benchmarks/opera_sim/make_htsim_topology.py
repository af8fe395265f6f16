"""Write the topology file that Opera's public htsim simulator (TritonNetworking/opera-sim,
`htsim_ndp_dynexpTopology -topfile`) reads, for exactly the fabric opendcn's `opera` builds:
the same staggered circuits of Opera's shipped matchings, the same ε/δ/r timing and the
same one-path-per-pair source routes, so both simulators run the same network.

Format (documented by opera-sim's topology generator): a header line (hosts, downlinks,
uplinks, ToRs), a line (slices, ε, δ, r in ps), per slice (ε, δ, r of every superslice)
the ToR each (ToR, uplink) reaches (-1 while reconfiguring), then per slice the ToR queues
of one path per ToR pair (uplink queues numbered from `downlinks`).

Usage: python make_htsim_topology.py OUT.txt
"""
import sys
import numpy as np
import opendcn as od
net = od.arch.opera()
sim = net._sim(dict(seed=1, flow_start_ps=np.zeros(0, np.int64), flow_src=np.zeros(0, np.int64),
                    flow_dst=np.zeros(0, np.int64), flow_size=np.zeros(0, np.int64)))
m = net.fabric_metrics
N, u, h = 108, 6, 6
D, eps, dl, r = m["superslice_ps"], m["eps_ps"], m["delta_ps"], m["reconf_ps"]
out = open(sys.argv[1], "w")
out.write(f"{N*h} {h} {u} {N}\n{3*N} {eps} {dl} {r}")
for s in range(N):
    t_up = s * D + 1
    t_r = s * D + eps + dl + 1
    up = []
    rr = []
    for tor in range(N):
        for k in range(u):
            p = sim.peer(tor, k, t_up)
            up.append(tor if p < 0 else p)
            rr.append(-1 if (s - k) % u == u - 1 else up[-1])
    for line in (up, up, rr):
        out.write("\n" + " ".join(map(str, line)))
for s in range(N):
    t = s * D + 1
    for os_ in range(3):
        out.write(f"\n{3*s+os_}")
        for a in range(N):
            for b in range(N):
                if a != b:
                    out.write(f"\n{a} {b} " + " ".join(str(h + x) for x in sim.slice_path(a, b, t)))
out.close()
