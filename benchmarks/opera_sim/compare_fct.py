"""Side by side: opendcn's `opera` against opera-sim's FCT output on one trace. Flows are
matched by (src, dst, size, start); both use sender-side FCTs (what opera-sim prints).

Usage: python compare_fct.py TRACE.htsim OPERA_SIM_OUTPUT.txt [option=value ...]
"""
import sys
import time
import numpy as np
import opendcn as od
trace, simout = sys.argv[1], sys.argv[2]
net = od.arch.opera(stop_when="ndp-done", **dict(a.split("=") for a in sys.argv[3:]))
t = time.time()
r = net.run(od.workload.from_file(trace), duration="2s")
wall = time.time() - t
f = r.flows
ours = {}
for src, dst, size, start, fct in zip(*(f[c].to_pylist() for c in ("src", "dst", "size_bytes", "start_ps", "sender_fct_ps"))):
    ours[(src, dst, size, start // 1000)] = fct
theirs = {}
for line in open(simout):
    if line.startswith("FCT "):
        _, a, b, sz, fct_ms, start_ms = line.split()
        theirs[(int(a), int(b), int(sz), round(float(start_ms) * 1e6))] = float(fct_ms) * 1e9  # ps
pairs = []
for k, v in theirs.items():
    # opera-sim prints the start with 6 decimals of ms (1 ns)
    if k in ours and ours[k] is not None:
        pairs.append((k[2], ours[k], v))
pairs = np.array(pairs, dtype=float)
print("ours: wall", round(wall, 2), "s; sim", r.summary["sim_time_s"], "flows done", r.summary["flows"])
print("matched NDP flows:", len(pairs), "of", len(theirs), "opera-sim completions")
for name, sel in (("< 100 KB", pairs[:, 0] < 100e3), ("all NDP", pairs[:, 0] < 15e6)):
    a, b = pairs[sel, 1] / 1e6, pairs[sel, 2] / 1e6
    q = [50, 90, 99, 99.9]
    print(f"{name}: n={sel.sum()} opendcn p50/p90/p99/p99.9 us = {np.round(np.percentile(a, q), 1).tolist()}  "
          f"opera-sim = {np.round(np.percentile(b, q), 1).tolist()}; median ratio {np.median(a / b):.3f}")
