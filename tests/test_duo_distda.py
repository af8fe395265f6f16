"""DistDA (Duo, Alg. 3) on the packet engine: elephant detection at the destination,
PortRequest / PortApprove / DeclineRequest as real control packets over the static de
Bruijn links, reservations and cooldown; and the engine's control messages they use.
Sizes of the paper's proof of concept: 16 ToRs, Duo(2,2), 2.5 Gb/s uplinks, delta = 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import opendcn as od
from opendcn.fabrics import debruijn

HOSTS = 4
SER64 = 64 * 8 * 1000 // 2.5      # ps: 64 B at 2.5 Gb/s
PROP = 500_000


def poc(**kw):
    o = dict(nodes=16, uplinks=4, k_s=2, hosts_per_tor=HOSTS, link_rate="2.5Gbps", delta="0us", da="dist")
    o.update(kw)
    return od.arch.duo(**o)


def elephants(pairs, size=2_000_000_000, start="0us"):
    """One flow per host pair of each ToR pair: a ToR-to-ToR elephant of HOSTS flows."""
    return od.workload.flows([[start, a * HOSTS + h, z * HOSTS + h, size] for a, z in pairs for h in range(HOSTS)])


def ledgers_exact(s):
    b = s["bytes"]
    assert b["dropped"] == 0 and b["offered"] == b["delivered"] + b["in_flight"]
    p = s["packets"]
    assert p["sent"] == p["delivered"] + sum(p["dropped"].values()) + p["trimmed"] + p["in_flight"]
    assert s["invariants"] == {"ok": True, "errors": []}
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    m = s["messages"]
    assert m["sent"] == m["delivered"] + m["dropped"] + m["in_flight"]


def static_hops(net, a, z):
    tabs = debruijn.build_tables(net.static, net.b, net.d)
    return len(debruijn.greedy_route(a, z, tabs)) - 1


def test_one_elephant_gets_its_da_link_after_the_request_round_trip():
    net = poc()
    s, t = 1, 9
    r = net.run(elephants([(s, t)]), duration="20ms", seed=1)
    sm = r.summary
    ledgers_exact(sm)
    log = net.control_log()
    ev = [e["event"] for e in log]
    assert ev == ["report", "request", "link", "approved"], log
    rep, req, link, ok = log
    # the destination detects at a sampling instant and asks at once
    assert rep["t_ps"] % od.units.parse_time("1ms") == 0 and (rep["dst"], rep["src"]) == (t, s)
    assert req["t_ps"] == rep["t_ps"] and req["ports"] == [0, 1]
    # the source sets the link when the request reaches it: no earlier than the request's
    # trip over the static route t -> s (serialization and propagation of every hop)
    h_req, h_ans = static_hops(net, t, s), static_hops(net, s, t)
    assert link["msg_hops"] == h_req and link["msg_classes"] == 0b010     # static optical links only
    assert link["t_ps"] >= req["t_ps"] + h_req * (SER64 + PROP)
    assert (link["src"], link["dst"], link["port"]) == (s, t, 0)
    assert ok["msg_hops"] == h_ans and ok["msg_classes"] == 0b010
    assert ok["t_ps"] >= link["t_ps"] + h_ans * (SER64 + PROP) and ok["rtt_ps"] == ok["t_ps"] - req["t_ps"]
    # two messages of 64 B, both delivered, in the packet ledger as control packets
    assert sm["messages"] == {"sent": 2, "delivered": 2, "dropped": 0, "in_flight": 0}
    dd = sm["arch_metrics"]["dist_da"]
    assert (dd["requests"], dd["approves"], dd["declines"], dd["links_set"], dd["links_at_end"]) == (1, 1, 0, 1, 1)
    assert net.da[0, s] == t and (net.da >= 0).sum() == 1
    # the elephant moved onto its one-hop DA link
    am = sm["arch_metrics"]
    assert am["one_hop_da_share"] > 0.85 and am["multi_hop_mixed_share"] == 0.0
    assert am["da_control"] == "dist" and am["duty_cycle"] is None


def _replay(net, log, k_d, n):
    """Replay the link events: every DA ingress port has at most one source at any time,
    and no port is claimed while a reservation of it holds."""
    r = net.dist_params.reservation
    da = np.full((k_d, n), -1)
    eg_since: dict[tuple[int, int], int] = {}
    in_since: dict[tuple[int, int], int] = {}
    for e in log:
        if e["event"] == "link":
            s, t, i, now = e["src"], e["dst"], e["port"], e["t_ps"]
            assert now >= eg_since.get((s, i), -r) + r, f"egress {s}:{i} claimed while reserved"
            assert now >= in_since.get((t, i), -r) + r, f"ingress {t}:{i} claimed while reserved"
            da[i, da[i] == t] = -1
            da[i, s] = t
            eg_since[(s, i)] = now
            for row in da:
                used = row[row >= 0]
                assert len(used) == len(set(used.tolist())), "an ingress port with two sources"
        elif e["event"] == "renew":
            eg_since[(e["src"], e["port"])] = e["t_ps"]
        elif e["event"] == "approved":
            in_since[(e["dst"], e["port"])] = e["t_ps"]
    return da


def test_reservations_decline_and_ports_are_never_assigned_twice():
    # one DA switch; source 1 has two elephants (to 9 and to 6): the second request finds
    # its only DA egress port reserved and is declined; after the reservation (5 ms) the
    # port may go to the other destination; and two sources to one destination (3 -> 9)
    # compete for its single ingress port
    net = poc(uplinks=3, reservation="5ms", cooldown="4ms")
    r = net.run(elephants([(1, 9), (1, 6), (3, 9)]), duration="40ms", seed=1)
    ledgers_exact(r.summary)
    log = net.control_log()
    ev = [e["event"] for e in log]
    assert "decline" in ev and "declined" in ev
    # a declined request was for a port reserved at the source at that moment
    for e in log:
        if e["event"] == "decline":
            prior = [x for x in log if x["event"] in ("link", "renew") and x["src"] == e["src"]
                     and x["t_ps"] <= e["t_ps"]]
            assert prior and e["t_ps"] < prior[-1]["t_ps"] + 5_000_000_000
    da = _replay(net, log, 1, 16)
    assert (da == net.da).all()
    links = [e for e in log if e["event"] == "link"]
    assert len(links) >= 2, "the port changed hands after its reservation"
    dd = r.summary["arch_metrics"]["dist_da"]
    assert dd["declines"] == ev.count("decline") and dd["links_set"] == len(links)


def test_cooldown_between_reports_of_a_pair():
    net = poc(cooldown="3ms", reservation="2ms")
    net.run(elephants([(1, 9), (5, 12)]), duration="20ms", seed=2)
    reports: dict[tuple[int, int], list[int]] = {}
    for e in net.control_log():
        if e["event"] == "report":
            reports.setdefault((e["dst"], e["src"]), []).append(e["t_ps"])
    assert set(reports) == {(9, 1), (12, 5)}
    for times in reports.values():
        assert len(times) >= 3
        assert all(b - a >= 3_000_000_000 for a, b in zip(times, times[1:]))
    # a pair whose link is still reserved is not requested again; once it has run out the
    # source renews the same link (no reconfiguration)
    ev = [e["event"] for e in net.control_log()]
    assert "renew" in ev
    assert net.last_result.summary["arch_metrics"]["dist_da"]["links_set"] == 2


def test_busy_network_loses_no_payload_and_is_deterministic():
    def once():
        net = poc(hosts_per_tor=2, elephant_rate="200Mbps", reservation="3ms", cooldown="3ms")
        r = net.run(od.workload.poisson("websearch", load=0.6), duration="15ms", seed=4)
        s = dict(r.summary)
        s.pop("wall_s")
        return s, net.control_log()
    a, la = once()
    ledgers_exact(a)
    dd = a["arch_metrics"]["dist_da"]
    assert dd["links_set"] > 3 and a["messages"]["sent"] > 6
    assert a["packets"]["control"] >= a["messages"]["sent"]
    assert a["flows"]["completed"] > 0
    b, lb = once()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and la == lb


def test_segr_with_dist():
    net = od.arch.segr(nodes=16, uplinks=4, k_s=2, hosts_per_tor=HOSTS, link_rate="2.5Gbps", delta="0us",
                       da="dist")
    r = net.run(elephants([(1, 9)]), duration="10ms", seed=1)
    ledgers_exact(r.summary)
    assert net.da[0, 1] == 9 and r.summary["arch_metrics"]["one_hop_da_share"] > 0.8


def test_a_new_link_is_routed_over_after_delta():
    net = poc(delta="100us")
    r = net.run(elephants([(1, 9)]), duration="10ms", seed=1)
    ledgers_exact(r.summary)
    link = next(e for e in net.control_log() if e["event"] == "link")
    assert net.usable[0, 1] == 9
    assert r.summary["arch_metrics"]["dist_da"]["links_set"] == 1
    assert link["t_ps"] > 1_000_000_000


@pytest.mark.parametrize("kw, field", [
    ({"elephant_rate": -1}, "--elephant-rate"),
    ({"cooldown": -1}, "--cooldown"),
    ({"cooldown": "-2ms"}, "--cooldown"),
    ({"reservation": -5}, "--reservation"),
    ({"elephant_gain": 1.5}, "--elephant-gain"),
    ({"elephant_period": "0us"}, "--elephant-period"),
    ({"request_timeout": 0}, "--request-timeout"),
    ({"da": "central"}, "--da"),
])
def test_bad_dist_options(kw, field):
    with pytest.raises(od.ConfigError) as e:
        poc(**kw)
    assert e.value.field == field


def _cli(*args):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "opendcn", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_cli_run_duo_dist(tmp_path):
    base = ["run", "duo", "--da", "dist", "--nodes", 16, "--uplinks", 4, "--k-s", 2, "--hosts-per-tor", 2,
            "--link-rate", "2.5Gbps", "--delta", "0us", "--elephant-rate", "300Mbps", "--duration", "5ms",
            "--workload", "websearch", "--load", 0.5]
    p = _cli(*base, "--summary-json", "-")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    am = s["arch_metrics"]
    assert am["da_control"] == "dist" and am["elephant_rate_bps"] == 300e6
    assert am["dist_da"]["messages"]["sent"] == s["messages"]["sent"] > 0
    bad = _cli(*base, "--reservation", "-1ms", "--summary-json", tmp_path / "x.json")
    assert bad.returncode == 2 and "--reservation" in bad.stderr
    assert not (tmp_path / "x.json").exists()


# ---------------------------------------------------------------------------------------
# the engine's control messages, from Python
# ---------------------------------------------------------------------------------------
def test_messages_from_python_follow_tables_or_a_path():
    net = poc(da="greedy", rho="1s")
    net.start(od.workload.flows([]), duration="1ms")
    path = [(9, int(p)) for p in [debruijn.lookup(debruijn.build_tables(net.static, 2, 4)[9], 1)[0]]]
    a = net.send_message(9, 1, tag=7)
    b = net.send_message(9, 1, tag=8, size="100B", path=path)     # dropped where the path ends
    got = net.run_until("1ms")
    assert [(m.id, m.tag, m.src, m.dst) for m in got] == [(a, 7, 9, 1)]
    assert got[0].time_ps == net.now < od.units.parse_time("1ms")
    assert got[0].link_classes in (("static_optical",), ("reconfigurable_optical",),
                                   ("static_optical", "reconfigurable_optical"))
    assert net.run_until("1ms") == [] and net.now == od.units.parse_time("1ms")
    for kw, field in [({"src": 99, "dst": 1}, "src"), ({"src": 1, "dst": 1}, "dst"),
                      ({"src": 1, "dst": 2, "size": "2KB"}, "size"), ({"src": 1, "dst": 2, "tag": -1}, "tag"),
                      ({"src": 1, "dst": 2, "path": [(2, 0)]}, "path[0]")]:
        with pytest.raises(od.ConfigError) as e:
            net.send_message(**kw)
        assert e.value.field == field
    s = net.finish().summary
    assert s["messages"] == {"sent": 2, "delivered": 1, "dropped": 1, "in_flight": 0}
    assert s["packets"]["dropped"]["no_route"] == 1 and b == 1


def test_a_lost_request_is_sent_again_until_it_arrives():
    # the first static link of the request's route t -> s fails from 0.5 ms to 3.2 ms:
    # the request sent at the first detection (1 ms) is lost, and sent again every
    # request timeout (1 ms) until the link is back
    net = poc()
    s, t = 1, 9
    tabs = debruijn.build_tables(net.static, net.b, net.d)
    port = debruijn.lookup(tabs[t], s)[0]
    net.fail_links([(t, port)], at="0.5ms", recover_at="3.2ms")
    r = net.run(elephants([(s, t)]), duration="10ms", seed=1)
    ledgers_exact(r.summary)
    log = net.control_log()
    tries = [e for e in log if e["event"] == "request"]
    assert [e["try"] for e in tries] == [1, 2, 3, 4] and {e["rid"] for e in tries} == {0}
    assert [e["t_ps"] for e in tries] == [1_000_000_000, 2_000_000_000, 3_000_000_000, 4_000_000_000]
    link = next(e for e in log if e["event"] == "link")
    assert 4_000_000_000 < link["t_ps"] < 4_100_000_000
    m = r.summary["messages"]
    assert m["dropped"] == 3 and r.summary["packets"]["dropped"]["failed_link"] >= 3
    assert r.summary["arch_metrics"]["dist_da"]["retries"] == 3


def test_a_repeated_request_is_answered_the_same_way():
    from opendcn.fabrics.distda import APPROVE, REQUEST, DistDA, DistParams

    sent, changes = [], []
    ctl = DistDA(4, 2, DistParams(period=1, gain=1.0, threshold_bps=0.0, cooldown=100, reservation=50, timeout=10),
                 lambda a, b, tag: sent.append((a, b, tag)), changes.append)
    rx = np.zeros((4, 4), dtype=np.int64)
    rx[1, 3] = 1000
    ctl.sample(1, rx)                      # 3 reports 1 and asks it for ports [0, 1]
    assert sent == [(3, 1, REQUEST)] and ctl.free_ingress(3, 1) == []
    ctl.on_message(5, 3, 1, REQUEST)       # at the source: link (1, 3, 0)
    ctl.on_message(6, 3, 1, REQUEST)       # the same request again (a resend)
    assert sent[1:] == [(1, 3, APPROVE), (1, 3, APPROVE)]
    assert changes == [[(1, 0, 3)]] and ctl.da[0, 1] == 3
    ctl.on_message(9, 1, 3, APPROVE)
    ctl.on_message(10, 1, 3, APPROVE)      # the second copy finds no pending request
    assert ctl.counts["stale_answers"] == 1 and ctl.in_res[3, 0] == 9 + 50
    assert ctl.free_ingress(3, 20) == [1] and ctl.free_ingress(3, 59) == [0, 1]
