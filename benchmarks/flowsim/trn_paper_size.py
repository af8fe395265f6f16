"""Flow-level mode at the HPC study's size: TRN-DA, 128 racks x 16 hosts, radix 32,
100 Gb/s, reconfigured every 100 ms over 2 s of simulated time (docs/flowsim.md).

    python benchmarks/flowsim/trn_paper_size.py [LOAD] [CDF] [DURATION]

Prints one JSON line: wall time, peak memory, flows, events, the solver's counters and
the mean flow throughput. Defaults: the FB Hadoop flow sizes (``hadoop``), uniform
pattern, load 3e-4, 2 s.
"""

from __future__ import annotations

import json
import resource
import sys
import time

import opendcn as od


def main() -> None:
    load = float(sys.argv[1]) if len(sys.argv) > 1 else 3e-4
    cdf = sys.argv[2] if len(sys.argv) > 2 else "hadoop"
    duration = sys.argv[3] if len(sys.argv) > 3 else "2s"
    net = od.arch.trn(nodes=128, radix=32, period="100ms")
    t0 = time.perf_counter()
    r = od.flowsim.run(net, od.workload.poisson(cdf, load, "uniform"), duration=duration, seed=1)
    s = r.summary
    print(json.dumps({"load": load, "cdf": cdf, "duration": duration, "wall_s": round(time.perf_counter() - t0, 1),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "flows": s["flows"], "events": s["events"], "flowsim": s["flowsim"],
                      "reconfigurations": s["arch_metrics"]["reconfigurations"],
                      "controller_wall_s": s["arch_metrics"]["controller_wall_s"],
                      "mean_flow_throughput_gbps": s["flow_throughput_gbps"]["mean"]}))


if __name__ == "__main__":
    main()
