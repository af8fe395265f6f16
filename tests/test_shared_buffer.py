"""A switch buffer shared by its ports (dynamic thresholds), and the deploy-time warning
for buffers that cannot hold one slice."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

import opendcn as od
from opendcn import workload as W

POOL = 1_000_000


def _incast(shared: bool, alpha: float = 1.0) -> od.Network:
    """Two ToRs joined by one static 100 Gb/s circuit; four hosts below ToR 0 send to one
    host below ToR 1, so ToR 0's uplink queue takes 4 x 100 Gb/s in and 100 Gb/s out.
    ToR 0 has 5 ports (1 uplink + 4 host downlinks)."""
    kw = dict(shared_buffer=POOL, buffer_alpha=alpha) if shared else dict(buffer=POOL // 5)
    cfg = od.Config(nodes=2, uplinks=1, link_rate="100Gbps", hosts_per_node=4, sample_interval="1us", **kw)
    net = od.Network(cfg)
    net.deploy_topo([od.Circuit(0, 0, 1, 0, None)])
    net.deploy_routing({0: [od.Entry(None, None, 1, None, 0)], 1: [od.Entry(None, None, 0, None, 0)]})
    return net


def _run(net: od.Network):
    flows = [(0, h, 4, 3_000_000) for h in range(4)]
    return net.run(W.flows(flows), duration="300us", seed=1)


def _peak_uplink(r) -> int:
    t = r.timeseries.to_pydict()
    q = [b for n, p, b in zip(t["node"], t["port"], t["queued_bytes"]) if n == 0 and p == 0]
    return int(max(q))


def test_an_incast_port_of_a_shared_buffer_holds_more_than_an_even_split():
    shared, split = _run(_incast(True)), _run(_incast(False))
    for r in (shared, split):
        b = r.summary["bytes"]
        assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    # an even split gives the uplink pool / 5; the shared pool lets it grow towards half the pool
    assert _peak_uplink(split) <= POOL // 5
    peak = _peak_uplink(shared)
    assert peak > 2 * (POOL // 5), peak
    # the dynamic threshold bounds it: q + w <= alpha (B - Q), so q <= alpha B / (1 + alpha)
    assert peak <= POOL // 2 + 1500
    s = shared.summary["buffer"]
    assert s["model"] == "shared" and s["pool_bytes"] == POOL and s["alpha"] == [1.0]
    assert peak <= s["peak_pool_bytes"] <= POOL
    assert "buffer" not in split.summary  # per-port buffers: the summary is as before


def test_alpha_sets_where_one_congested_queue_settles():
    lo, hi = _peak_uplink(_run(_incast(True, 0.25))), _peak_uplink(_run(_incast(True, 4.0)))
    # alpha B / (1 + alpha): 0.2 B and 0.8 B
    assert 0.15 * POOL <= lo <= 0.2 * POOL + 1500
    assert 0.7 * POOL <= hi <= 0.8 * POOL + 1500


def test_the_run_is_deterministic_with_a_shared_buffer():
    a, b = _run(_incast(True)).summary, _run(_incast(True)).summary
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b


@pytest.mark.parametrize("kw,field", [(dict(shared_buffer="100B"), "shared_buffer"),
                                      (dict(shared_buffer="1MB", buffer_alpha=0), "buffer_alpha"),
                                      (dict(shared_buffer="1MB", buffer_alpha=(1.0,) * 9), "buffer_alpha")])
def test_bad_shared_buffer_settings_are_named(kw, field):
    with pytest.raises(od.ConfigError) as e:
        od.Config(nodes=4, **kw)
    assert e.value.field == field


def test_a_buffer_smaller_than_one_slice_warns_with_the_numbers():
    with pytest.warns(od.BufferWarning, match=r"1 MB.*3\.75 MB = 299\.8 us up x 100 Gb/s"):
        od.arch.rotornet(nodes=8, uplinks=2, slice="300us")
    with pytest.warns(od.BufferWarning, match=r"shared 4 MB pool at alpha 1 lets one queue hold at most 2 MB"):
        od.arch.rotornet(nodes=8, uplinks=2, slice="300us", shared_buffer="4MB")
    with warnings.catch_warnings():
        warnings.simplefilter("error", od.BufferWarning)
        od.arch.rotornet(nodes=8, uplinks=2, slice="300us", shared_buffer="64MB")
        od.arch.rotornet(nodes=8, uplinks=2, slice="2us")


def test_the_cli_prints_the_buffer_warning_and_refuses_a_bad_alpha():
    exe = [sys.executable, "-m", "opendcn", "run", "rotornet", "--nodes", "8", "--uplinks", "2", "--slice", "300us",
           "--duration", "20us", "--no-progress"]
    p = subprocess.run(exe, capture_output=True, text=True)
    assert p.returncode == 0
    assert p.stderr.count("warning: buffer: the per-port buffer is 1 MB") == 1
    p = subprocess.run(exe + ["--shared-buffer", "64MB", "--buffer-alpha", "0"], capture_output=True, text=True)
    assert p.returncode == 2 and "--buffer-alpha" in p.stderr and "Traceback" not in p.stderr


def test_a_packet_its_full_calendar_queue_rejects_triggers_a_push_back():
    """OpenOptics §5.2: 'a rejected packet triggers a push-back message containing the
    time slice of the queue': every drop at a calendar port's full buffer comes with a
    push-back for its (source, destination) from that port and slice, sent when it drops."""
    with pytest.warns(od.BufferWarning):
        net = od.arch.rotornet(nodes=8, uplinks=2, hosts_per_node=2, slice="50us", buffer="60KB", routing="hoho",
                               pushback=True, log_drops=100_000)
    r = net.run(W.poisson("hadoop", load=0.6, pattern="uniform"), duration="1ms", seed=3)
    d, p = r.drops.to_pydict(), r.pushbacks.to_pydict()
    at_ports = [k for k in range(len(d["time_ps"])) if 0 <= d["port"][k] < 2 and d["reason"][k] == "buffer_overflow"]
    assert len(at_ports) > 10
    sent = {(p["sent_ps"][k], p["src_node"][k], p["dst_node"][k], p["node"][k], p["port"][k], p["dep"][k])
            for k in range(len(p["sent_ps"]))}
    for k in at_ports:
        key = (d["time_ps"][k], d["src_node"][k], d["dst_node"][k], d["node"][k], d["port"][k], d["dep"][k])
        assert key in sent, key
    assert r.summary["drop_log"] == {"recorded": len(d["time_ps"]), "unlogged": 0, "pushbacks": len(p["sent_ps"])}


def test_deferral_is_the_congestion_that_pushes_back():
    """OpenOptics App. B: with congestion detection 'packets are deferred to later time
    slices when the primary queue is full' and 'push-back engages once the primary queue is
    full': a packet that admission control defers sends a push-back for its primary queue."""
    net = od.arch.rotornet(nodes=8, uplinks=2, hosts_per_node=2, slice="50us", shared_buffer="64MB", routing="hoho",
                           admission_control=True, pushback=True, log_drops=10)
    s = net.run(W.poisson("hadoop", load=0.6, pattern="uniform"), duration="1ms", seed=3).summary
    deferred = s["admission_control"]["deferred_packets"] + s["admission_control"]["adm_fail_packets"]
    assert deferred > 100
    assert s["services"]["congestion_events"] >= deferred
    assert s["services"]["pushback_messages"] >= deferred
    assert s["drop_log"]["pushbacks"] == s["services"]["pushback_messages"]


def test_a_push_back_pauses_its_pair_until_the_congested_slice_ends():
    """OpenOptics §5.2: the message contains 'the time slice of the queue', 'preventing them
    from sending traffic to the destination switch during that time slice': each pause ends
    with the first occurrence of the congested queue's slice at or after the detection,
    never a cycle later."""
    with pytest.warns(od.BufferWarning):
        net = od.arch.rotornet(nodes=8, uplinks=2, hosts_per_node=2, slice="50us", buffer="60KB", routing="hoho",
                               pushback=True, log_drops=100_000)
    slice_ps, cycle = 50_000_000, 4                       # 7 peers over 2 uplinks: 4 slices
    r = net.run(W.poisson("hadoop", load=0.6, pattern="uniform"), duration="1ms", seed=3)
    p = r.pushbacks.to_pydict()
    assert len(p["sent_ps"]) > 10
    for sent, until, dep in zip(p["sent_ps"], p["until_ps"], p["dep"]):
        cur = sent // slice_ps
        first = cur + (dep - cur) % cycle                 # the queue's slice, next occurrence
        assert until == (first + 1) * slice_ps, (sent, until, dep)
        assert until - sent <= cycle * slice_ps
