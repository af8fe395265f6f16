"""``goodput_normalized`` is delivered payload / (run x N x R), R the host-side rate of the
load definition, and stays within [0, 1] on every engine when the offered load is at most
the host side: each engine is driven at load 1 with its most demanding pattern (the
slotted fabrics have a 2x speedup and hold every offered byte at their ToRs, so they could
deliver more than the host side only if more were offered)."""

from __future__ import annotations

import pytest

import opendcn as od

RUNS = {
    "clos": ("clos", dict(nodes=8, uplinks=2), "permutation", "hadoop"),
    "rotornet-vlb": ("rotornet", dict(nodes=8, uplinks=2, routing="vlb"), "uniform", "hadoop"),
    "opera": ("opera", dict(nodes=16, uplinks=4), "uniform", "websearch"),
    "negotiator": ("negotiator", dict(nodes=16, ports=4), "uniform", "hadoop"),
    "negotiator-thin-clos": ("negotiator", dict(nodes=16, ports=4, topology="thin-clos"), "permutation", "hadoop"),
    "sirius-direct-first": ("sirius", dict(nodes=16, ports=4), "uniform", "hadoop"),
    "sirius-baseline": ("sirius", dict(nodes=16, ports=4, cc="grant", relay="all"), "permutation", "hadoop"),
    "shale": ("shale", dict(nodes=16, h=2), "uniform", "imc10"),
    "trn-flow": ("trn", dict(nodes=8, radix=8), "permutation", "websearch"),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_goodput_is_a_share_of_the_host_side(name):
    arch, opts, pattern, cdf = RUNS[name]
    s = od.arch.get(arch).make(**opts).run(od.workload.poisson(cdf, 1.0, pattern), duration="100us",
                                           seed=1).summary
    assert s["invariants"]["ok"], s["invariants"]["errors"]
    g = s["goodput_normalized"]
    cap = s["sim_time_s"] * s["host_rate_bps"] / 8 * s["nodes"]
    assert g == pytest.approx(s["bytes"]["delivered"] / cap)
    assert 0.0 < g <= 1.0, g
    # what was offered bounds it too (conservation)
    assert g <= s["bytes"]["offered"] / cap + 1e-12
