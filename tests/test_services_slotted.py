"""OpenOptics infrastructure services on the slotted cell engines (Sirius, Shale):
congestion detection on the slot queues, push-back to the cell's source, flow pausing
(elephants on direct paths only); EQO and buffer offloading rejected by name."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import opendcn as od


def _incast(senders=15, size=5_000_000):
    return od.workload.flows([("0us", i, 0, size) for i in range(1, senders + 1)])


def _sirius(**kw):
    # 16 ToRs x 4 ports: W = 4 slots per cycle, L = ceil((90 ns + 500 ns) / 100 ns) = 6
    return od.arch.sirius(nodes=16, ports=4, propagation="500ns", **kw)


def _check(s):
    assert s["invariants"]["ok"], s["invariants"]
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    b = s["bytes"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]


def test_sirius_pushback_bounds_the_relay_queues():
    # incast of 15 sources with the relay threshold out of the way (cc never blocks):
    # without push-back the intermediates' queues for ToR 0 grow with the run; with it
    # they stay under the feedback bound whatever the duration
    peak = {}
    for dur in ("40us", "80us", "160us"):
        for pb in (False, True):
            s = _sirius(relay_cap=10**6, pushback=pb).run(_incast(), duration=dur).summary
            _check(s)
            assert s["bytes"]["dropped"] == 0          # Sirius never drops by design
            peak[dur, pb] = s["arch_metrics"]["max_relay_queue_cells"]
            sv = s["services"]
            if pb:
                assert sv["congestion_events"] > 0 and sv["pushback_messages"] == sv["congestion_events"]
                assert sv["paused_attempts"] > 0
            else:
                assert sv["congestion_events"] == sv["pushback_messages"] == sv["paused_attempts"] == 0
    assert peak["80us", False] > 1.5 * peak["40us", False] > 500
    assert peak["80us", True] == peak["160us", True]
    # each of the 14 other sources reaches an intermediate once a cycle (W = 4) and hears
    # back within 2 L + W = 16 slots: at most 16 / 4 + 1 = 5 cells each in one loop
    assert peak["160us", True] <= 14 * 5


@pytest.mark.parametrize("make, extra", [
    (lambda **kw: _sirius(**kw), {}),
    (lambda **kw: _sirius(cc="ideal", **kw), {}),
    (lambda **kw: od.arch.shale(nodes=16, **kw), {}),
    (lambda **kw: od.arch.shale(nodes=16, cc="ndp", **kw), {}),
])
def test_detection_alone_only_counts(make, extra):
    wl = od.workload.poisson("hadoop", load=0.6)
    plain = make().run(wl, duration="30us", seed=3).summary
    det = make(congestion_detection=True).run(wl, duration="30us", seed=3).summary
    assert det["services"]["congestion_events"] > 0
    assert det["services"]["pushback_messages"] == det["services"]["paused_attempts"] == 0
    for k in ("bytes", "flows", "fct_us", "drops", "trace_hash", "fabric"):
        assert det[k] == plain[k], k
    # (Shale: detection runs on the timeslot engine, the plain run on the window engine)
    drop = {"engine_mode"}
    assert ({k: v for k, v in det["arch_metrics"].items() if k not in drop}
            == {k: v for k, v in plain["arch_metrics"].items() if k not in drop})


def test_shale_pushback_bounds_node_queues():
    # incast without hop-by-hop tokens: queued cells grow with the run without push-back,
    # and stay near one level with it
    peak = {}
    for dur in ("10us", "40us"):
        for pb in (False, True):
            s = od.arch.shale(nodes=16, cc="none", pushback=pb).run(_incast(), duration=dur).summary
            _check(s)
            assert s["bytes"]["dropped"] == 0
            peak[dur, pb] = s["arch_metrics"]["engine"]["max_buffer_cells"]
            if pb:
                sv = s["services"]
                assert sv["congestion_events"] > 0 and sv["pushback_messages"] == sv["congestion_events"]
                assert sv["paused_attempts"] > 0
    assert peak["40us", False] > 3 * peak["10us", False]
    assert peak["40us", True] < 1.5 * peak["10us", True]
    assert peak["40us", True] * 5 < peak["40us", False]


def test_sirius_flow_pausing_keeps_elephants_off_relays():
    # one 200 KB flow 0 -> 5: without pausing Sirius spreads it over every intermediate;
    # with pausing only the bytes sent before it aged past 10 KB (at most one cell per
    # port in the slot it crossed the threshold) are relayed, the rest waits for its
    # direct circuit
    wl = od.workload.flows([("0us", 0, 5, 200_000)])
    plain = _sirius().run(wl, duration="100us").summary
    paused = _sirius(flow_pausing=True, elephant_threshold="10KB").run(wl, duration="100us").summary
    for s in (plain, paused):
        _check(s)
        assert s["flows"]["completed"] == 1
    am0, am1 = plain["arch_metrics"], paused["arch_metrics"]
    assert am0["relay_first_hop_bytes"] > 100_000
    cell = am1["cell_payload_bytes"]
    assert 0 < am1["relay_first_hop_bytes"] < 10_000 + 4 * cell
    assert am1["direct_bytes"] + am1["relay_first_hop_bytes"] == 200_000
    assert paused["services"]["paused_attempts"] > 0


def test_shale_flow_pausing_sends_elephants_on_the_direct_semipath():
    # 16 = 4^2 nodes: 0 = (0,0) and 15 = (3,3) differ in both coordinates, so the direct
    # semi-path has 2 hops and a sprayed cell up to 2h = 4. With threshold 0 every cell
    # of the flow is an elephant's: it leaves only in a timeslot whose peer starts the
    # direct semi-path, and no cell takes more than h hops
    wl = od.workload.flows([("0us", 0, 15, 50_000), ("0us", 5, 10, 50_000)])
    plain = od.arch.shale(nodes=16).run(wl, duration="20us")
    paused = od.arch.shale(nodes=16, flow_pausing=True, elephant_threshold="0B").run(wl, duration="20us")
    for r in (plain, paused):
        _check(r.summary)
        assert r.summary["flows"]["completed"] == 2
    assert max(plain.flows.column("hops").to_pylist()) > 2
    assert max(paused.flows.column("hops").to_pylist()) <= 2
    assert paused.summary["services"]["paused_attempts"] > 0


@pytest.mark.parametrize("arch", ["sirius", "shale"])
def test_all_services_keep_invariants_and_determinism(arch):
    kw = dict(nodes=16, pushback=True, flow_pausing=True, elephant_threshold="20KB")
    if arch == "sirius":
        kw["ports"] = 4
    wl = od.workload.poisson("hadoop", load=0.7)
    a = getattr(od.arch, arch)(**kw).run(wl, duration="30us", seed=5).summary
    b = getattr(od.arch, arch)(**kw).run(wl, duration="30us", seed=5).summary
    _check(a)
    assert a["services"]["congestion_detection"] and a["services"]["pushback"]
    assert a["services"]["congestion_events"] > 0 and a["services"]["paused_attempts"] > 0
    assert a["trace_hash"] == b["trace_hash"] and a["services"] == b["services"] and a["bytes"] == b["bytes"]


@pytest.mark.parametrize("arch", ["sirius", "shale"])
@pytest.mark.parametrize("kw, field, reason", [
    (dict(buffer_offload=2), "--buffer-offload", "no hosts"),
    (dict(buffer_offload=-1), "--buffer-offload", "greater than or equal to 0"),
    (dict(queue_estimation="eqo"), "--queue-estimation", "exactly"),
    (dict(queue_estimation="guess"), "--queue-estimation", "expected one of"),
    (dict(pushback="maybe"), "--pushback", "valid boolean"),
])
def test_rejected_service_options(arch, kw, field, reason):
    with pytest.raises(od.ConfigError, match=field) as e:
        getattr(od.arch, arch)(nodes=16, **kw)
    assert reason in str(e.value)


def test_negotiator_offers_no_services():
    net = od.arch.negotiator(nodes=16, ports=4)
    with pytest.raises(od.ConfigError, match="services"):
        net.services(pushback=True)


@pytest.mark.parametrize("arch, extra", [("sirius", ["--ports", "4", "--propagation", "500ns"]), ("shale", [])])
def test_cli_runs_services_and_rejects_bad_values(tmp_path, arch, extra):
    base = [sys.executable, "-m", "opendcn", "run", arch, "--nodes", "16", *extra,
            "--duration", "40us", "--load", "0.8"]
    p = subprocess.run(base + ["--pushback", "--flow-pausing", "--elephant-threshold", "20KB",
                               "--out", str(tmp_path / "r")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    sv = s["services"]
    assert sv["pushback"] and sv["flow_pausing"] and sv["elephant_bytes"] == 20_000
    assert sv["congestion_events"] == sv["pushback_messages"] > 0
    for bad, word in ((["--buffer-offload", "2"], "--buffer-offload"), (["--queue-estimation", "eqo"], "--queue-estimation"),
                      (["--buffer-offload", "lots"], "buffer-offload")):
        q = subprocess.run(base + bad + ["--out", str(tmp_path / "b")], capture_output=True, text=True)
        assert q.returncode == 2 and word in q.stderr, (bad, q.stderr)
        assert not (tmp_path / "b").exists()
