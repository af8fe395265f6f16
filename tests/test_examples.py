"""Example scripts run at tiny sizes, semi-oblivious re-skewing, and run-time
reconfiguration of a cyclic schedule."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import opendcn as od

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
US, NS = 10**6, 10**3


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_semi_oblivious_example_runs_both_modes():
    out = _load("semi_oblivious").run(nodes=8, duration="1ms", period="250us", load=0.2)
    assert set(out) == {"round robin", "semi-oblivious"}
    for s in out.values():
        assert s["invariants"]["ok"] and s["fabric"] == {"collisions": 0, "guardband_violations": 0}
        assert s["flows"]["completed"] > 0


def test_hierarchical_example_reconfigures_the_core_without_losing_routes():
    s = _load("hierarchical").run(racks=4, hosts=3, duration="1ms", period="250us")
    assert s["invariants"]["ok"]
    assert s["drops"]["no_route"] == 0
    assert s["arch_metrics"]["reconfigurations"] == 3       # at 250, 500 and 750 us (not at the end)
    assert s["flows"]["completed"] > 0


def test_sorn_gives_hot_matchings_more_slots_and_keeps_every_pair():
    tm = np.zeros((8, 8))
    tm[0, 1] = 1000.0                      # one hot pair
    c = od.topology.sorn(8, tm, copies=3)
    slots = {}
    for x in c:
        slots.setdefault(tuple(sorted((x.n1, x.n2))), set()).add(x.ts)
    assert len({x.ts for x in c}) == 3 * 7                   # the cycle keeps its length
    assert all(len(v) >= 1 for v in slots.values()) and len(slots) == 28
    assert len(slots[(0, 1)]) == 1 + 2 * 7                  # all extra slots to the hot matching
    uniform = od.topology.sorn(8, None, copies=3)
    assert {len(v) for v in _pairs(uniform).values()} == {3}
    with pytest.raises(od.ConfigError, match="tm"):
        od.topology.sorn(8, np.ones((3, 3)))


def _pairs(c):
    out = {}
    for x in c:
        out.setdefault(tuple(sorted((x.n1, x.n2))), set()).add(x.ts)
    return out


def test_cyclic_reconfiguration_applies_at_the_next_slice_boundary():
    # OpenOptics Fig. 2 schedule; at 5 us swap slices 1 and 2 (0-3 moves to slice 1)
    cfg = od.Config(nodes=4, uplinks=1, slice="10us", guardband="200ns", propagation="500ns")
    rr = od.topology.round_robin(cfg, dimension=1)
    swapped = [od.Circuit(c.n1, c.p1, c.n2, c.p2, {0: 0, 1: 2, 2: 1}[c.ts]) for c in rr]
    net = od.Network(cfg)
    net.deploy_topo(rr)
    net.deploy_routing("direct")
    net.start(od.workload.flows([("6us", 0, 3, 100)]), duration="100us")
    net._live.sim.run_until(5 * US)
    net.deploy_topo(swapped)
    r = net.finish()
    row = r.flows.to_pylist()[0]
    assert row["finish_ps"] == 10 * US + 200 * NS + 8 * NS + 500 * NS
    assert r.summary["invariants"]["ok"]
    with pytest.raises(od.ConfigError, match="slices"):
        net2 = od.Network(cfg)
        net2.deploy_topo(rr)
        net2.deploy_routing("direct")
        net2.start(od.workload.flows([("6us", 0, 3, 100)]), duration="100us")
        net2.deploy_topo(od.topology.sorn(cfg, None, copies=2))   # 6 slices instead of 3


# ---------------------------------------------------------------------------------------
# examples/openoptics: scripts in OpenOptics' style
# ---------------------------------------------------------------------------------------
def _oo(name: str):
    spec = importlib.util.spec_from_file_location(f"oo_{name}", EXAMPLES / "openoptics" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main(quiet=True)


def test_openoptics_rotor_example_delivers_every_datagram_both_ways():
    out = _oo("rotor_direct_vs_vlb")
    for r in ("direct", "vlb"):
        assert out[r]["sent"] == out[r]["received"] == 8 * 7 * 10
        # a datagram waits at most a cycle of 7 slices of 50 us for its circuit
        assert 0 < out[r]["mean_delay_us"] < out[r]["max_delay_us"] <= 7 * 50 + 10


def test_openoptics_tcp_onoff_example_takes_bytes_over_rate():
    out = _oo("tcp_onoff_rates")
    for rate, m in out.items():
        assert m["rx_bytes"] == 250_000
        assert m["expected_ms"] <= m["fct_ms"] < 1.01 * m["expected_ms"]
        assert 0.99 * rate < m["throughput_mbps"] <= rate


def test_openoptics_traffic_aware_example_reconfigures_and_delivers():
    out = _oo("traffic_aware_matching")
    assert out["reconfigurations"] >= 1 and out["received"] == out["sent"] == 600


def test_openoptics_opera_example_answers_every_ping():
    out = _oo("opera_source_routing")
    assert out["pairs"] == 56 and out["answered"] == out["sent"] == 168 and out["slices"] == 8
