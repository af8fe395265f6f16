"""Write the flows of the ``fattree-128x16-credit-permutation-50%`` bench scenario for the
measuring kernel ``benches/floors/credit_floor.rs``.

``python benches/floors/credit_floor_flows.py DURATION_MS OUT`` writes little-endian records
(start ps u64, source host u32, destination host u32, size u64): the same workload, sizes
and seed that ``opendcn bench`` gives the engine (128 racks x 16 hosts at 100 Gb/s, rack
permutation, 100 KB messages at 50 % injection, seed 1).
"""
import sys

import numpy as np

from opendcn import arch, workload


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: credit_floor_flows.py DURATION_MS OUT")
    duration_ps = int(float(sys.argv[1]) * 1e9)
    c = arch.get("fattree").make(nodes=128).config
    fl = workload.poisson(None, 0.5, "permutation", flow_size="100KB").generate(
        endpoints=c.endpoints, hosts_per_node=c.hosts_per_node, rate_bps=c.per_node_rate, nodes=c.nodes,
        duration_ps=duration_ps, seed=1)
    keep = np.asarray(fl.start_ps) < duration_ps
    rec = np.zeros(int(keep.sum()), dtype=[("t", "<u8"), ("s", "<u4"), ("d", "<u4"), ("z", "<u8")])
    rec["t"], rec["s"], rec["d"], rec["z"] = (np.asarray(x)[keep] for x in (fl.start_ps, fl.src, fl.dst, fl.size))
    rec.tofile(sys.argv[2])
    print(f"{len(rec)} flows, {int(rec['z'].sum())} bytes")


if __name__ == "__main__":
    main()
