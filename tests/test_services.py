"""OpenOptics infrastructure services on a rotor fabric: congestion detection, traffic
push-back and host flow pausing."""

from __future__ import annotations

import opendcn as od


def _hoho(**kw):
    return od.arch.rotornet(nodes=16, uplinks=2, routing="hoho", **kw)


def _run(net, load=0.5):
    return net.run(od.workload.poisson("hadoop", load=load), duration="1ms", seed=2).summary


def test_pushback_on_hoho_at_high_load_means_zero_drops():
    without = _run(_hoho())
    with_pb = _run(_hoho(pushback=True))
    assert without["bytes"]["dropped"] > 0          # HOHO alone overflows buffers here
    assert with_pb["bytes"]["dropped"] == 0
    sv = with_pb["services"]
    assert sv["congestion_detection"] and sv["pushback"]
    assert sv["congestion_events"] > 0 and sv["pushback_messages"] == sv["congestion_events"]
    assert sv["paused_attempts"] > 0
    for s in (without, with_pb):
        assert s["invariants"]["ok"]
        assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}


def test_congestion_detection_alone_only_counts():
    plain = _run(_hoho())
    detect = _run(_hoho(congestion_detection=True))
    assert detect["services"]["congestion_events"] > 0
    assert detect["services"]["pushback_messages"] == 0
    # detection without a response changes nothing else
    for k in ("bytes", "flows", "fct_us", "drops", "trace_hash"):
        assert detect[k] == plain[k]


def _fig2(**services):
    net = od.Network(od.Config(nodes=4, uplinks=1, slice="10us", guardband="200ns",
                               propagation="500ns", sample_interval="1us"))
    net.deploy_topo(od.topology.round_robin(net.config, dimension=1))
    net.deploy_routing("direct")
    net.services(**services)
    return net


def test_flow_pausing_holds_an_elephant_until_its_circuit_is_up():
    # 200 KB from N0 to N3 (direct circuit in slice 2 of 3): without pausing the source
    # queues the flow for slice 2 while slice 0 and 1 run; with pausing (threshold 10 KB)
    # all but the first 10 KB wait at the host until slice 2 starts
    flows = od.workload.flows([("0us", 0, 3, 200_000)])
    plain = _fig2()
    r0 = plain.run(flows, duration="200us")
    paused = _fig2(flow_pausing=True, elephant_threshold="10KB")
    r1 = paused.run(flows, duration="200us")
    for r in (r0, r1):
        assert r.summary["flows"]["completed"] == 1 and r.summary["invariants"]["ok"]
    q0 = max(plain.buffer_usage(0, 0).column("queued_bytes").to_pylist())
    q1 = max(paused.buffer_usage(0, 0).column("queued_bytes").to_pylist())
    assert q1 < q0
    assert r1.summary["services"]["paused_attempts"] > 0
    # holding at the host does not delay the flow: the circuit carries it at line rate
    assert r1.flows.column("finish_ps")[0].as_py() <= r0.flows.column("finish_ps")[0].as_py() + 10**6


def test_services_reject_bad_values():
    net = _fig2()
    import pytest
    with pytest.raises(od.ConfigError, match="pushback"):
        net.services(pushback="yes")
    with pytest.raises(od.ConfigError, match="elephant_threshold"):
        net.services(elephant_threshold="10 apples")
