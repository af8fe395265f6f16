"""Failures on the Sirius engine (``--fail-links`` / ``--fail-nodes``, ``net.fail_links`` /
``net.fail_nodes``): nothing leaves or enters a failed port, what is lost is counted by
reason, throughput comes back within a few cycles of the repair, runs are deterministic
and bad input is refused by name."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import opendcn as od
from opendcn.errors import ConfigError

US = 1_000_000
N = 16
# every ToR sends to every other: the fabric stays saturated for the whole run
ALL_TO_ALL = [(0, s, d, 3_000_000) for s in range(N) for d in range(N) if s != d]


def _net(**kw):
    return od.arch.sirius(tors=N, ports=4, propagation="500ns", sample_interval="500ns", failure_bin="500ns", **kw)


def _ledger(s: dict) -> None:
    assert s["invariants"] == {"ok": True, "errors": []}
    b, p = s["bytes"], s["packets"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    # every lost byte has its reason, and every dropped cell's payload is lost payload
    assert b["dropped"] == sum(s["drops"].values())
    assert p["sent"] == p["delivered"] + sum(p["dropped"].values()) + p["in_flight"]
    for why, cells in p["dropped"].items():
        assert p["dropped_payload_bytes"][why] <= s["drops"][why]
        assert cells > 0
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}


def _mean(series: dict, lo_ps: int, hi_ps: int) -> float:
    t = np.asarray(series["time_us"]) * US       # bin ends
    v = np.asarray(series["normalized"])
    width = t[1] - t[0]
    sel = (t - width >= lo_ps) & (t <= hi_ps)
    assert sel.sum() >= 4
    return float(v[sel].mean())


def test_nothing_enters_a_failed_link_and_throughput_comes_back():
    fail, rec = 40 * US, 70 * US
    r = _net(fail_links=0.1, fail_at="40us", recover_at="70us").run(od.workload.flows(ALL_TO_ALL), duration="100us")
    base = _net().run(od.workload.flows(ALL_TO_ALL), duration="100us")
    s, m = r.summary, r.summary["arch_metrics"]
    _ledger(s)
    assert len(m["failed_links"]) == round(0.1 * N * 4)
    assert (m["fail_at_ps"], m["recover_at_ps"]) == (fail, rec)
    # per-port counters: not one cell out of or into a failed port while it is down;
    # it carries cells before and after; the cells sent towards it before their sender
    # knew are its losses, and they are the run's failed_link drops
    ports = m["failed_port_cells"]
    assert sorted([p["node"], p["port"]] for p in ports) == m["failed_links"]
    for p in ports:
        assert p["out"][1] == 0 and p["in"][1] == 0, p
        assert min(p["out"][0], p["out"][2], p["in"][0], p["in"][2]) > 0, p
    lost = sum(p["lost"] for p in ports)
    assert lost > 0 and s["packets"]["dropped"] == {"failed_link": lost} == {"failed_link": m["cells_lost_to_failures"]}
    assert set(s["drops"]) == {"failed_link"}
    # a sender stops within one cycle plus the report lag (slots)
    assert m["cells_sent_after_failure_max_slots"] <= m["failure_detect_max_slots"]
    # the delivered-bandwidth series is the receive series of the same bins
    bw = m["delivered_bandwidth"]
    assert bw["bin_ps"] == 500_000
    assert bw["normalized"] == pytest.approx(m["rx_bandwidth_series"]["normalized"], abs=1e-5)
    ref = base.summary["arch_metrics"]["rx_bandwidth_series"]
    before = _mean(bw, 20 * US, fail - US)
    assert before == pytest.approx(_mean(ref, 20 * US, fail - US), rel=1e-9)  # the same run until the failure
    assert _mean(bw, fail + 5 * US, rec) < 0.9 * before                     # the outage costs throughput
    # back to the level of the run without failure, bin by bin, within a few cycles of
    # the repair: the detection bound, two cycles and one propagation delay (22 slots)
    slot, cycle = m["slot_ps"], m["cycle_slots"]
    t = np.asarray(bw["time_us"]) * US
    v, w = np.asarray(bw["normalized"]), np.asarray(ref["normalized"])
    off = (t > rec) & (np.abs(v - w) > 0.03 * w)
    back = int(t[off].max())                                                # end of the last bin off the level
    assert rec < back <= rec + (m["failure_detect_max_slots"] + 2 * cycle) * slot + 500_000, (back - rec) / slot
    after = _mean(bw, back, 95 * US)
    assert after == pytest.approx(before, rel=0.03), (after, before)
    assert after == pytest.approx(_mean(ref, back, 95 * US), rel=0.03)
    assert m["bandwidth_after_recovery"] == pytest.approx(before, rel=0.05)
    assert m["bandwidth_during_failure"] < 0.9 * m["bandwidth_before_failure"]


def test_failed_tors_lose_what_they_hold_by_reason():
    net = _net()
    net.fail_nodes([3, 11], at="30us", recover_at="60us")
    # two flows start at the failed ToRs while they are down, two after the repair
    flows = ALL_TO_ALL + [(40 * US, 3, 7, 50_000), (45 * US, 11, 2, 20_000),
                          (65 * US, 3, 9, 200_000), (65 * US, 11, 4, 200_000)]
    r = net.run(od.workload.flows(flows), duration="90us")
    s, m = r.summary, r.summary["arch_metrics"]
    _ledger(s)
    assert m["failed_nodes"] == [3, 11] and m["failed_links"] == []
    assert s["drops"]["failed_node"] > 0
    # the flows that start at a failed ToR are lost whole
    f = r.flows.to_pydict()
    delivered = net.last_sim.output()["flow_delivered"]
    late = [i for i, (t, src) in enumerate(zip(f["start_ps"], f["src"])) if 30 * US <= t < 60 * US and src in (3, 11)]
    assert len(late) == 2 and all(delivered[i] == 0 and not f["completed"][i] for i in late)
    assert f["completed"][-2:] == [True, True]                                 # the repaired ToRs send again
    assert s["drops"]["failed_node"] >= 70_000
    # the failed ToRs' ports: silent while down, busy before and after (the new flows,
    # relayed cells)
    ports = m["failed_port_cells"]
    assert sorted({p["node"] for p in ports}) == [3, 11] and len(ports) == 8
    for p in ports:
        assert p["out"][1] == 0 and p["in"][1] == 0, p
        assert p["out"][2] > 0 and p["in"][2] > 0, p
    # per flow: nothing is delivered twice or invented; the flow columns add up
    assert all(d <= z for d, z in zip(delivered, f["size_bytes"]))
    assert int(delivered.sum()) == s["bytes"]["delivered"]


def test_deterministic_for_a_seed_and_unchanged_without_failures():
    wl = od.workload.poisson("hadoop", 0.6, "uniform")
    a = _net(fail_links=0.1, fail_nodes=0.1, fail_at="50us", recover_at="100us").run(wl, duration="150us", seed=4).summary
    b = _net(fail_links=0.1, fail_nodes=0.1, fail_at="50us", recover_at="100us").run(wl, duration="150us", seed=4).summary
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b
    assert a["arch_metrics"]["failed_nodes"] and a["arch_metrics"]["failed_links"]
    plain = _net().run(wl, duration="150us", seed=4).summary
    assert plain["trace_hash"] != a["trace_hash"]
    assert "failed_link" not in plain["drops"] and "failed_node" not in plain["packets"]["dropped"]
    assert not {k for k in plain["arch_metrics"] if "fail" in k or k == "delivered_bandwidth"}
    # a failure after the end of the run changes nothing
    late = _net()
    late.fail_links([(0, 1)], at="200us")
    s = late.run(wl, duration="150us", seed=4).summary
    assert s["trace_hash"] == plain["trace_hash"] and s["bytes"] == plain["bytes"]


def test_default_failure_time_is_a_third_into_the_run():
    r = _net(fail_nodes=0.1).run(od.workload.flows(ALL_TO_ALL), duration="60us")
    m = r.summary["arch_metrics"]
    assert m["fail_at_ps"] == 20 * US and m["recover_at_ps"] is None
    assert len(m["failed_nodes"]) == 2 and m["bandwidth_after_recovery"] is None
    assert m["failure_end_ps"] == -1


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "opendcn", "run", "sirius", "--tors", "16", "--ports", "4",
                           *[str(a) for a in args]], capture_output=True, text=True, timeout=120)


def test_cli_run_with_failures():
    p = _cli("--fail-links", "0.1", "--fail-nodes", "0.1", "--fail-at", "40us", "--recover-at", "80us",
             "--failure-bin", "2us", "--duration", "120us", "--summary-json", "-")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    m = s["arch_metrics"]
    assert len(m["failed_links"]) == 6 and len(m["failed_nodes"]) == 2
    assert m["delivered_bandwidth"]["bin_ps"] == 2 * US and len(m["delivered_bandwidth"]["normalized"]) == 60
    assert s["invariants"]["ok"]


def test_bad_failures_are_refused():
    net = _net()
    for links in ([(16, 0)], [(0, 4)], [(0,)], [(0, -1)], ["ab"]):
        with pytest.raises(ConfigError) as e:
            net.fail_links(links, at="10us")
        assert e.value.field == "links[0]", links
    with pytest.raises(ConfigError) as e:
        net.fail_links([(0, 0)], at="20us", recover_at="10us")
    assert e.value.field == "recover_at"
    with pytest.raises(ConfigError) as e:
        net.fail_nodes([16], at="10us")
    assert e.value.field == "nodes[0]"
    with pytest.raises(ConfigError) as e:
        net.fail_nodes([1], at="-1us")
    assert e.value.field == "fail_at"
    for kw, field in (({"fail_links": 1.5}, "--fail-links"), ({"fail_links": -0.1}, "--fail-links"),
                      ({"fail_nodes": 1.0}, "--fail-nodes"), ({"fail_nodes": -0.5}, "--fail-nodes"),
                      ({"fail_links": 0.1, "fail_at": "30us", "recover_at": "20us"}, "--recover-at"),
                      ({"fail_at": "30us"}, "--fail-at"), ({"failure_bin": "0ns"}, "--failure-bin")):
        with pytest.raises(ConfigError) as e:
            od.arch.sirius(tors=N, ports=4, **kw)
        assert e.value.field == field, kw
    neg = od.arch.negotiator(tors=N, ports=4)
    with pytest.raises(ConfigError) as e:
        neg.fail_links([(0, 0)], at="10us")
    assert e.value.field == "fail_links"
    # not while a run is under way: the failures are part of its spec
    net.start(od.workload.flows(ALL_TO_ALL), duration="10us")
    with pytest.raises(ConfigError):
        net.fail_nodes([1], at="5us")
    net.finish()


@pytest.mark.parametrize("args", [["--fail-links", "0.1", "--fail-at", "300us", "--recover-at", "200us"],
                                  ["--fail-at", "300us"], ["--fail-links", "2"], ["--fail-nodes", "-0.1"]])
def test_cli_bad_failure_options_exit_2(tmp_path, args):
    p = _cli("--duration", "100us", "--out", tmp_path / "o", *args)
    assert p.returncode == 2, p.stderr
    assert not (tmp_path / "o").exists()
