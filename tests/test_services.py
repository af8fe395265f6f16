"""OpenOptics infrastructure services on a rotor fabric: congestion detection (exact or
estimated occupancy), traffic push-back, host flow pausing and buffer offloading."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import opendcn as od


def _hoho(**kw):
    # at most 3 hops: with 2 uplinks a slice's circuits form rings, and HOHO's longer paths
    # inside a slice (the default bound, 10) spread this load so that nothing overflows
    return od.arch.rotornet(nodes=16, uplinks=2, routing="hoho", max_hop=3, **kw)


def _run(net, load=0.5):
    return net.run(od.workload.poisson("hadoop", load=load), duration="1ms", seed=2).summary


def test_pushback_on_hoho_at_high_load_means_zero_drops():
    without = _run(_hoho(), load=0.7)
    with_pb = _run(_hoho(pushback=True), load=0.7)
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


def _fig2(hosts=0, **services):
    # OpenOptics Fig. 2: 4 nodes, 1 uplink, N0 reaches N3 directly in slice 2 of 3
    net = od.Network(od.Config(nodes=4, uplinks=1, slice="10us", guardband="200ns",
                               propagation="500ns", hosts_per_node=hosts, sample_interval="1us"))
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
    with pytest.raises(od.ConfigError, match="pushback"):
        net.services(pushback="yes")
    with pytest.raises(od.ConfigError, match="elephant_threshold"):
        net.services(elephant_threshold="10 apples")


# ---- queue-occupancy estimation (EQO) and buffer offloading to hosts


def test_offloaded_packet_on_idle_network_returns_just_in_time():
    # one 1 KB packet from host 0 (below N0) to host 3 (below N3) at t = 0: its direct
    # circuit is slice 2, two slices ahead. With a one-queue window the ToR sends it down
    # to its only host, which sends it back so that it reaches the ToR as slice 2 starts:
    # the flow finishes exactly when it does without offloading.
    flows = od.workload.flows([("0us", 0, 3, 1000)])
    plain = _fig2(hosts=1).run(flows, duration="60us")
    off = _fig2(hosts=1, buffer_offload=1).run(flows, duration="60us")
    for r in (plain, off):
        assert r.summary["flows"]["completed"] == 1 and r.summary["invariants"]["ok"]
    sv = off.summary["services"]
    assert sv["offloaded_packets"] == 1 and sv["offloaded_bytes"] >= 1000
    assert sv["offload_refused"] == 0
    assert off.flows.column("finish_ps")[0].as_py() == plain.flows.column("finish_ps")[0].as_py()
    # a window of three queues covers the whole cycle: nothing is offloaded
    assert _fig2(hosts=1, buffer_offload=3).run(flows, duration="60us").summary["services"]["offloaded_packets"] == 0


def _vlb(**kw):
    return od.arch.rotornet(nodes=16, uplinks=2, routing="vlb", hosts_per_node=2, **kw)


def _load(net):
    return net.run(od.workload.poisson("hadoop", load=0.4), duration="1ms", seed=2)


def test_offloading_keeps_tor_buffers_to_the_window():
    plain = _load(_vlb())
    off = _load(_vlb(buffer_offload=2))
    assert plain.summary["drops"]["buffer_overflow"] > 0     # relayed traffic overflows ToR buffers
    assert off.summary["bytes"]["dropped"] == 0               # hosts absorb the far-future slices
    sv = off.summary["services"]
    assert sv["offloaded_packets"] > 0 and sv["offload_peak_host_bytes"] > 0
    for r in (plain, off):
        assert r.summary["invariants"]["ok"]
        assert r.summary["fabric"] == {"collisions": 0, "guardband_violations": 0}
    # deterministic for a seed
    again = _load(_vlb(buffer_offload=2))
    assert again.summary["trace_hash"] == off.summary["trace_hash"]


def test_eqo_estimate_drives_pushback_and_reports_its_error():
    hoho = lambda **kw: od.arch.rotornet(nodes=16, uplinks=2, routing="hoho", **kw)  # noqa: E731
    run = lambda net: net.run(od.workload.poisson("hadoop", load=0.5), duration="1ms", seed=2).summary  # noqa: E731
    exact = run(hoho(congestion_detection=True))
    est = run(hoho(congestion_detection=True, queue_estimation="eqo"))
    sv = est["services"]
    assert sv["eqo_interval_ps"] == 50_000 and sv["eqo_samples"] > 0
    assert 0 <= sv["eqo_mean_abs_error_bytes"] <= sv["eqo_max_abs_error_bytes"]
    assert sv["congestion_events"] > 0
    # detection alone (exact or estimated) changes nothing but the counters
    for k in ("bytes", "flows", "trace_hash"):
        assert est[k] == exact[k]
    pb = run(hoho(pushback=True, queue_estimation="eqo", eqo_interval="20ns"))
    assert pb["services"]["eqo_interval_ps"] == 20_000
    assert pb["bytes"]["dropped"] == 0 and pb["invariants"]["ok"]


def test_eqo_register_is_exact_for_a_queue_that_drains_at_line_rate():
    # no guard band and a slice that holds a whole number of packets: a queue that is
    # always served at line rate is estimated to within one update interval of bytes
    net = od.Network(od.Config(nodes=4, uplinks=1, slice="12us", guardband="0ns", propagation="500ns"))
    net.deploy_topo(od.topology.round_robin(net.config, dimension=1))
    net.deploy_routing("vlb")
    net.services(congestion_detection=True, queue_estimation="eqo", eqo_interval="50ns")
    r = net.run(od.workload.poisson("hadoop", load=0.3), duration="500us", seed=1)
    sv = r.summary["services"]
    assert sv["eqo_samples"] > 0
    assert sv["eqo_max_abs_error_bytes"] <= 100e9 / 8 * 50e-9 + 1500 + 64


@pytest.mark.parametrize("kw, field", [
    (dict(buffer_offload=2), "--buffer-offload"),           # no hosts below the nodes
    (dict(hosts_per_node=1, buffer_offload=-1), "--buffer-offload"),
    (dict(queue_estimation="guess"), "--queue-estimation"),
    (dict(queue_estimation="eqo", eqo_interval="0ns"), "--eqo-interval"),
])
def test_bad_service_options(kw, field):
    with pytest.raises(od.ConfigError, match=field):
        od.arch.rotornet(nodes=8, uplinks=1, **kw)


def test_cli_services_and_bad_value(tmp_path):
    cmd = [sys.executable, "-m", "opendcn", "run", "rotornet", "--nodes", "8", "--uplinks", "1",
           "--hosts-per-node", "1", "--buffer-offload", "2", "--queue-estimation", "eqo",
           "--congestion-detection", "--duration", "200us", "--load", "0.3", "--out", str(tmp_path / "r")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["services"]["offload_queues"] == 2 and "offloaded_packets" in s["services"]
    assert "eqo_samples" in s["services"]
    bad = subprocess.run(cmd[:-2] + ["--buffer-offload", "lots", "--out", str(tmp_path / "b")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "buffer-offload" in bad.stderr
    assert not (tmp_path / "b").exists()
