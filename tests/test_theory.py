"""Throughput bounds from theory, on short runs of small networks.

* RotorNet with pure VLB: every byte crosses the fabric twice and an uplink carries bits
  only during the up-time of a slice, so goodput <= duty / 2 (duty = 1 - guardband/slice).
* Direct (one-hop) routing under a permutation: a node meets its single destination in one
  of the N - 1 matchings, so goodput <= duty / (N - 1) with one uplink.
* A non-blocking Clos delivers what a permutation offers, at any load below 1.

Every run must also keep the engine's invariants: exact byte conservation, no optical
collisions, no guardband violations.
"""

from __future__ import annotations

import pytest

import opendcn as od

EPS = 1e-9


def build(name: str, **options) -> od.Network:
    """A ready network from the architecture registry (same options as the CLI)."""
    return od.arch.get(name).make(**options)


def assert_sound(s: dict) -> None:
    b = s["bytes"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"], b
    assert s["fabric"]["collisions"] == 0
    assert s["fabric"]["guardband_violations"] == 0
    assert s["invariants"]["ok"], s["invariants"]["errors"]
    assert sum(s["drops"].values()) == b["dropped"]


def duty(net: od.Network) -> float:
    c = net.config
    return 1 - c.guardband / c.slice


def offered_normalized(s: dict) -> float:
    """Offered payload bytes over the run's capacity (sim_time x R x N)."""
    cap = s["sim_time_s"] * s["host_rate_bps"] * s["nodes"] / 8
    return s["bytes"]["offered"] / cap


# ---------------------------------------------------------------------------------------
# RotorNet, pure VLB
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("load,flow_size", [(1.0, "100KB"), (1.5, "1MB")])
def test_rotornet_vlb_saturated_goodput_bound(load, flow_size):
    net = build("rotornet", nodes=8, uplinks=1, routing="vlb")
    d = duty(net)
    assert d == pytest.approx(0.9)
    r = net.run(od.workload.poisson(None, load, "uniform", flow_size=flow_size),
                duration="1ms", seed=1)
    s = r.summary
    assert_sound(s)
    assert offered_normalized(s) > 0.5 * d  # saturated: more offered than VLB can carry
    g = s["goodput_normalized"]
    assert g <= 0.5 * d + EPS
    # not vacuous: a saturated rotor with VLB carries a good part of its capacity
    assert g >= 0.25, (g, s["bytes"], s["drops"])
    hops = r.flows.column("hops").to_pylist()
    assert max(hops) <= 2
    done = [h for h, c in zip(hops, r.flows.column("completed").to_pylist()) if c]
    assert done and all(h == 2 for h in done)  # VLB never uses the direct circuit


def test_rotornet_vlb_below_capacity_delivers_offered():
    """Below duty / 2 VLB carries what is offered (minus what is still in flight)."""
    net = build("rotornet", nodes=8, uplinks=1, routing="vlb")
    r = net.run(od.workload.poisson(None, 0.3, "uniform", flow_size="100KB"), duration="1ms",
                seed=1)
    s = r.summary
    assert_sound(s)
    assert s["bytes"]["dropped"] == 0
    assert s["goodput_normalized"] <= 0.5 * duty(net) + EPS
    assert s["goodput_normalized"] >= 0.9 * offered_normalized(s)


# ---------------------------------------------------------------------------------------
# RotorNet, direct circuits, permutation
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("nodes", [8, 16])
def test_rotornet_direct_permutation_goodput_bound(nodes):
    net = build("rotornet", nodes=nodes, uplinks=1, routing="direct")
    bound = duty(net) / (nodes - 1)
    r = net.run(od.workload.poisson(None, 1.0, "permutation", flow_size="100KB"),
                duration="1ms", seed=2)
    s = r.summary
    assert_sound(s)
    assert offered_normalized(s) > bound
    g = s["goodput_normalized"]
    assert g <= bound + EPS
    assert g >= 0.6 * bound, (g, bound)
    assert max(r.flows.column("hops").to_pylist()) == 1
    assert s["bytes"]["dropped"] == 0  # one hop: sources are back-pressured, never dropped


# ---------------------------------------------------------------------------------------
# Clos, permutation
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("multipath", ["packet", "flow"])
@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_clos_permutation_delivers_offered(multipath, load):
    net = build("clos", nodes=8, uplinks=2, multipath=multipath)
    r = net.run(od.workload.poisson(None, load, "permutation", flow_size="10KB"),
                duration="1ms", seed=1)
    s = r.summary
    assert_sound(s)
    off = offered_normalized(s)
    assert off == pytest.approx(load, rel=0.1)  # the generator offers the load asked for
    g = s["goodput_normalized"]
    assert g <= off + EPS
    assert g >= 0.97 * off, (g, off)
    assert s["bytes"]["dropped"] == 0
    # a permutation never leaves a flow behind for long: almost every flow completes
    assert s["flows"]["completed"] >= 0.97 * s["flows"]["started"]
    assert set(r.flows.column("hops").to_pylist()) <= {0, 2}  # 0: not yet delivered
