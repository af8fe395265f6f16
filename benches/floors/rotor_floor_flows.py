"""Write the flows of the ``rotornet-108x6-vlb-websearch-40%`` bench scenario for the
measuring kernel ``benches/floors/rotor_floor.rs``.

``python benches/floors/rotor_floor_flows.py DURATION_MS OUT`` writes little-endian records
(start ps u64, source u32, destination u32, size u64): the same workload, sizes and seed
that ``opendcn bench`` gives the engine (108 nodes, host rate 6 x 100 Gb/s, seed 1).
"""
import sys

import numpy as np

from opendcn import workload


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: rotor_floor_flows.py DURATION_MS OUT")
    duration_ps = int(float(sys.argv[1]) * 1e9)
    fl = workload.poisson("websearch", load=0.4).generate(
        endpoints=108, hosts_per_node=0, rate_bps=600 * 10**9, nodes=108, duration_ps=duration_ps, seed=1)
    rec = np.zeros(len(fl.start_ps), dtype=[("t", "<u8"), ("s", "<u4"), ("d", "<u4"), ("z", "<u8")])
    rec["t"], rec["s"], rec["d"], rec["z"] = fl.start_ps, fl.src, fl.dst, fl.size
    rec.tofile(sys.argv[2])
    print(f"{len(rec)} flows, {int(rec['z'].sum())} bytes")


if __name__ == "__main__":
    main()
