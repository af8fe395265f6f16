"""NegotiaToR (docs/arch/negotiator.md) on the slotted engine: matching, epoch timing, the
scheduling pipeline, piggybacking, matching efficiency, invariants, failures, CLI."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opendcn as od
from opendcn import _core

EPOCH = 3_660_000  # ps: 16 x 60 ns + 30 x 90 ns
PROP = 2_000_000


def cli(*args):
    exe = Path(sys.executable).parent / "opendcn"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "opendcn.cli"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=120)


def neg(**kw):
    kw.setdefault("tors", 16)
    kw.setdefault("ports", 8)  # 8 x 100 Gb/s over 400 Gb/s: the paper's port rate
    return od.arch.negotiator(**kw)


# ------------------------------------------------------------------------------ matching
@pytest.mark.parametrize("topology,tors,ports", [("parallel", 24, 4), ("parallel", 9, 8),
                                                  ("thin-clos", 32, 4), ("thin-clos", 16, 8)])
def test_matching_never_assigns_a_port_twice(topology, tors, ports):
    rnd = random.Random(11)
    for case in range(60):
        density = rnd.choice([0.05, 0.2, 0.5, 1.0])
        reqs = [(s, d) for s in range(tors) for d in range(tors) if s != d and rnd.random() < density]
        grants, accepts = _core.negotiator_match(tors, ports, topology, case, reqs, rounds=1 + case % 3)
        req = set(reqs)
        w = tors // ports if topology == "thin-clos" else tors
        g_dst_port = [(d, p) for d, p, _ in grants]
        assert len(g_dst_port) == len(set(g_dst_port)), "a destination port granted twice"
        for d, p, s in grants:
            assert (s, d) in req, "grant without a request"
            if topology == "thin-clos":
                assert p == (d // w - s // w) % (tors // w), "grant on a port that cannot reach"
        gset = {(s, p, d) for d, p, s in grants}
        src_port = [(s, p) for s, p, _ in accepts]
        assert len(src_port) == len(set(src_port)), "a source port accepted twice"
        rx = [(d, p) for _, p, d in accepts]
        assert len(rx) == len(set(rx)), "two sources on one destination port"
        assert all(a in gset for a in accepts), "accept without a grant"
        # every source port that got a grant accepts one (ACCEPT never idles a granted port)
        assert {(s, p) for s, p, _ in gset} == set(src_port)


def test_shared_grant_ring_wraps_when_fewer_sources_request():
    grants, accepts = _core.negotiator_match(16, 8, "parallel", 1, [(3, 7)])
    assert sorted(p for _, p, _ in grants) == list(range(8))   # all 8 ports granted to ToR 3
    assert len(accepts) == 8


# ------------------------------------------------------------------------------ timing
def _first_slot(sim, epoch, src, dst, ports=8, slots=16):
    for k in range(slots):
        for p in range(ports):
            if sim.predefined_peer(epoch, k, src, p) == dst:
                return k
    raise AssertionError("pair not connected in the predefined phase")


@pytest.mark.parametrize("topology", ["parallel", "thin-clos"])
@pytest.mark.parametrize("start_ps", [0, 1_000_000, 5_123_456])
def test_piggybacked_mouse_fct_is_exact_epoch_arithmetic(topology, start_ps):
    net = neg(topology=topology)
    r = net.run(od.workload.flows([(f"{start_ps}ps", 0, 9, 500)]), duration="20us")
    assert r.summary["arch_metrics"]["epoch_ps"] == EPOCH
    sim = net.last_sim
    # the first predefined slot at or after the arrival in which 0 and 9 are connected
    e = start_ps // EPOCH
    while True:
        k = _first_slot(sim, e, 0, 9)
        tx = e * EPOCH + k * 60_000 + 10_000
        if tx >= start_ps:
            break
        e += 1
    finish = tx + (30 + 500) * 80 + PROP            # 30 B control + payload at 100 Gb/s
    assert r.flows["finish_ps"][0].as_py() == finish
    assert r.flows["fct_ps"][0].as_py() == finish - start_ps


def test_without_piggybacking_data_waits_for_the_three_epoch_pipeline():
    net = neg(pb=False)
    r = net.run(od.workload.flows([("0us", 0, 9, 5000)]), duration="30us")
    m = r.summary["arch_metrics"]
    assert m["epoch_ps"] == EPOCH and m["predefined_slot_ps"] == 12_400   # 10 ns + 30 B
    req, data = net.last_sim.pair_epochs(0, 9)
    assert (req, data) == (0, 2)
    # data leaves at the start of scheduled(2); 5 packets on 5 ports; the longest (1125 B)
    finish = 2 * EPOCH + 16 * 12_400 + 1125 * 80 + PROP
    assert r.flows["finish_ps"][0].as_py() == finish
    assert r.flows["fct_ps"][0].as_py() >= 2 * EPOCH


def test_newly_backlogged_pairs_are_scheduled_two_epochs_after_their_first_request():
    net = neg(tors=16, ports=8)
    r = net.run(od.workload.poisson("hadoop", load=0.9, pattern="uniform"), duration="400us", seed=3)
    assert r.summary["invariants"]["ok"]
    seen = 0
    for s in range(16):
        for d in range(16):
            if s != d:
                req, data = net.last_sim.pair_epochs(s, d)
                if data >= 0:
                    assert req >= 0 and data >= req + 2, (s, d, req, data)
                    seen += 1
    assert seen > 20


def test_piggybacking_delivers_at_least_one_packet_per_pair_per_epoch():
    n = 12
    flows = [("0us", s, d, 2_000_000) for s in range(n) for d in range(n) if s != d]
    net = neg(tors=n, ports=4, speedup=1.0)          # 4 x 100 Gb/s: 595-B piggyback
    dur = 40 * EPOCH
    r = net.run(od.workload.flows(flows), duration=f"{dur}ps")
    m = r.summary["arch_metrics"]
    assert m["pb_payload_bytes"] == 595
    o = net.last_sim.output()
    pre_phase = 16 * 60_000
    epochs_arrived = (dur - pre_phase - PROP) // EPOCH + 1   # epochs whose PB has arrived
    assert np.all(o["flow_delivered"] >= 595 * epochs_arrived)
    assert m["pb_packets"] >= len(flows) * (dur // EPOCH)


# ------------------------------------------------------------------------------ matching efficiency
@pytest.mark.parametrize("topology,tors,ports,n,tol", [("parallel", 32, 8, 32, 0.04),
                                                        ("thin-clos", 128, 8, 16, 0.02)])
def test_saturated_match_ratio_matches_the_model(topology, tors, ports, n, tol):
    sat = od.workload.poisson(None, 1.0, "all-to-all", flow_size="20MB")
    r = neg(tors=tors, ports=ports, topology=topology).run(sat, duration="300us")
    expect = 1 - (1 - 1 / n) ** n
    assert r.summary["arch_metrics"]["match_ratio"] == pytest.approx(expect, abs=tol)
    assert r.summary["invariants"]["ok"]


# ------------------------------------------------------------------------------ invariants
@pytest.mark.parametrize("kw", [dict(topology="parallel"), dict(topology="thin-clos"),
                                dict(pb=False, pq=False), dict(variant="data-size"),
                                dict(variant="hol-delay"), dict(speedup=1.0),
                                dict(transition_guard=True), dict(predefined_slots=0)])
def test_conservation_no_collisions_no_guardband_violations_deterministic(kw):
    wl = od.workload.poisson("hadoop", load=0.8, pattern="uniform")
    a = neg(**kw).run(wl, duration="300us", seed=5).summary
    b = neg(**kw).run(wl, duration="300us", seed=5).summary
    bb = a["bytes"]
    assert bb["offered"] == bb["delivered"] + bb["dropped"] + bb["in_flight"]
    assert bb["delivered"] > 0 and a["flows"]["completed"] > 0
    assert a["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert a["invariants"] == {"ok": True, "errors": []}
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b


def test_pq_and_pb_cut_mice_tail_latency():
    wl = od.workload.poisson("hadoop", load=0.9, pattern="uniform")
    p99 = {}
    for pb, pq in ((False, False), (True, True)):
        p99[(pb, pq)] = neg(pb=pb, pq=pq).run(wl, duration="500us", seed=2).summary["fct_us"]["mice"]["p99"]
    assert p99[(True, True)] < p99[(False, False)] / 3


# ------------------------------------------------------------------------------ failures
def test_link_failures_are_detected_excluded_and_recovered():
    net = neg(tors=16, ports=8, fail_links=0.05, fail_at="200us", recover_at="600us", detect_epochs=3)
    r = net.run(od.workload.poisson("hadoop", load=0.5, pattern="uniform"), duration="1ms", seed=4)
    m = r.summary["arch_metrics"]
    assert m["failed_links"] == round(0.05 * 2 * 16 * 8)
    assert m["detections"] >= 1 and m["recoveries"] >= 1
    assert 3 <= m["mean_detection_epochs"] <= 6
    assert set(r.summary["drops"]) <= {"link_failure"}
    b = r.summary["bytes"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    assert r.summary["fabric"] == {"collisions": 0, "guardband_violations": 0}
    # receiver bandwidth time series exists (per ToR rows)
    assert r.timeseries.num_rows == 16 * 100 and "rx_bytes" in r.timeseries.column_names


def test_thin_clos_relays_around_failed_links_and_delivers_every_byte():
    # traffic starts after the failures are detected; the repair comes after the run
    n = 16
    flows = [("100us", s, d, 30_000) for s in range(n) for d in range(n) if s != d]
    res = {}
    for relay in (True, False):
        net = neg(tors=n, topology="thin-clos", fail_links=0.05, fail_at="5us", recover_at="50ms",
                  fault_relay=relay)
        res[relay] = net.run(od.workload.flows(flows), duration="1ms").summary
    on, off = res[True], res[False]
    # pairs whose only port-to-port path failed wait for the repair without relay ...
    assert off["flows"]["completed"] < len(flows)
    # ... and deliver every byte through an intermediate ToR with it
    assert on["flows"]["completed"] == len(flows)
    assert on["bytes"]["delivered"] == on["bytes"]["offered"] and on["bytes"]["dropped"] == 0
    m = on["arch_metrics"]
    assert m["fault_relay_bytes"] == 30_000 * (len(flows) - off["flows"]["completed"])
    assert m["max_detoured_pairs"] >= len(flows) - off["flows"]["completed"]
    assert on["fabric"] == {"collisions": 0, "guardband_violations": 0} and on["invariants"]["ok"]


# ------------------------------------------------------------------------------ CLI
def test_cli_run_summary_json():
    p = cli("run", "negotiator", "--tors", 16, "--ports", 4, "--duration", "200us", "--summary-json", "-")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["arch"] == "negotiator" and s["nodes"] == 16
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert 0 < s["arch_metrics"]["match_ratio"] <= 1
    p2 = cli("run", "negotiator", "--tors", 16, "--topology", "thin-clos", "--no-pb", "--no-pq",
             "--duration", "100us", "--summary-json", "-")
    assert p2.returncode == 0, p2.stderr
    s2 = json.loads(p2.stdout)
    assert s2["arch_metrics"]["pb"] is False and s2["arch_metrics"]["topology"] == "thin-clos"


@pytest.mark.parametrize("args", [
    ["--topology", "ring"],
    ["--variant", "iterative:0"],
    ["--variant", "relay"],
    ["--tors", 10, "--ports", 4, "--topology", "thin-clos"],
    ["--tors", 128, "--predefined-slots", 4],
    ["--predefined-slot", "12ns"],
    ["--guardband", "-1ns"],
    ["--speedup", "0"],
    ["--fail-links", "2"],
    ["--fail-links", "0.1", "--fail-at", "2ms", "--recover-at", "1ms"],
    ["--no-such-option", "1"],
])
def test_cli_bad_options_exit_2(args):
    p = cli("run", "negotiator", *args, "--duration", "10us", "--summary-json", "-")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "error" in p.stderr


def test_reproduce_unknown_name_exits_2():
    p = cli("reproduce", "nonesuch", "--quick")
    assert p.returncode == 2 and "nonesuch" in p.stderr
