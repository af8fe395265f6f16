"""Duo, SEGR and EXP as ready architectures (Zerwas et al., "Duo", POMACS 2023): the
Greedy-DA control loop inside simulated time, local table updates, the duty cycle, the
baselines' path properties, Duo's transports and queues, metrics, the skewed workload,
and bad input. Tiny sizes: 8 ToRs, a few milliseconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import opendcn as od
from opendcn.fabrics import debruijn
from opendcn.arch.duo import DuoNetwork, ExpNetwork, expander_matchings, k_shortest_paths
from opendcn.network.timeflow import Entry


def cli(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "opendcn"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "opendcn.cli"]
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def _ledgers_exact(s: dict) -> None:
    """Zero lost payload and both ledger balances exact (docs/engine.md#the-ledger-two-balances)."""
    b = s["bytes"]
    assert b["dropped"] == 0 and sum(s["drops"].values()) == 0, s["drops"]
    assert b["offered"] == b["delivered"] + b["in_flight"]
    p = s["packets"]
    assert p["sent"] == p["delivered"] + sum(p["dropped"].values()) + p["trimmed"] + p["in_flight"]
    assert s["invariants"] == {"ok": True, "errors": []}
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}


@pytest.fixture(scope="module")
def busy_runs():
    """Every design at 8 ToRs x 4 hosts under websearch at 90 % load, DA updates every 1 ms."""
    out = {}
    for name in ("duo", "segr", "exp"):
        kw = {"rho": "1ms"} if name != "exp" else {}
        net = od.arch.get(name).make(nodes=8, hosts_per_tor=4, **kw)
        out[name] = (net, net.run(od.workload.poisson("websearch", load=0.9), duration="6ms", seed=2))
    return out


# ---------------------------------------------------------------------------------------
# transports, queues, ledgers
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["duo", "segr", "exp"])
def test_no_payload_is_lost_with_ndp_and_tcp(busy_runs, name):
    net, r = busy_runs[name]
    s = r.summary
    _ledgers_exact(s)
    # the run is busy enough to lose packets: transports recovered every one of them
    dropped = s["packets"]["dropped"]
    assert dropped["class_overflow"] > 0 and s["packets"]["retransmitted"] > 0
    if name != "exp":
        assert dropped["reconfiguration"] > 0, "packets queued on a reconfigured DA port are dropped"
    # flows up to f_th run NDP, larger ones TCP
    size = np.asarray(r.flows["size_bytes"])
    tp = np.asarray(r.flows["transport"].to_pylist())
    assert set(tp[size <= 1_000_000]) == {"ndp"} and set(tp[size > 1_000_000]) == {"tcp"}
    t = s["transport"]
    assert (t["tcp_dupack"], t["tcp_init_cwnd"], t["tcp_min_rto_us"], t["ndp_init_window"], t["ctrl_bytes"]) == \
        (3, 10, 1000.0, 30, 64)


def test_three_priority_classes_on_every_tor_port():
    net = od.arch.duo(nodes=8, queue=50)
    cap = 50 * 1500
    assert net.config.mtu + net.config.header == 1500
    disc = {gp: d for gp, d in net._disc.items()}
    assert len(disc) == net.n_ports
    assert all(d["classes"] == [cap, cap, cap] and d["trim"] and "weights" not in d for d in disc.values())
    w = od.arch.duo(nodes=8, service="weighted", weights="2,3,1")
    assert all(d["weights"] == [2, 3, 1] for d in w._disc.values())
    assert od.arch.duo(nodes=8, f_th=0)._transport.rule.text == "tcp"


def test_weighted_service_and_no_priority_split_run_clean():
    for kw in ({"service": "weighted"}, {"f_th": 0}):
        r = od.arch.duo(nodes=8, hosts_per_tor=2, rho="1ms", **kw).run(
            od.workload.poisson("websearch", load=0.5), duration="3ms", seed=1)
        _ledgers_exact(r.summary)
        assert r.summary["flows"]["completed"] > 0
        if "f_th" in kw:
            assert set(r.flows["transport"].to_pylist()) == {"tcp"}


def test_deterministic_for_a_seed():
    def once(seed):
        net = od.arch.duo(nodes=8, hosts_per_tor=2, rho="1ms")
        r = net.run(od.workload.poisson("datamining", load=0.6), duration="4ms", seed=seed)
        s = dict(r.summary)
        s.pop("wall_s")
        return s, net.control_log(), r.flows
    a, la, fa = once(3)
    b, lb, fb = once(3)
    assert a == b and la == lb and fa.equals(fb)
    c, lc, _ = once(4)
    assert c["trace_hash"] != a["trace_hash"]


# ---------------------------------------------------------------------------------------
# Greedy-DA inside the run
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def paper_timing():
    """rho = 10 ms, delta = 100 us (the paper's defaults), sampled every delta."""
    net = od.arch.duo(nodes=8, hosts_per_tor=4, sample_interval="100us")
    r = net.run(od.workload.poisson("datamining", load=0.7), duration="40ms", seed=1)
    return net, r


def test_duty_cycle_is_099_at_rho_10ms_delta_100us(paper_timing):
    net, r = paper_timing
    am = r.summary["arch_metrics"]
    log = net.control_log()
    assert [x["t_ps"] for x in log] == [10**10, 2 * 10**10, 3 * 10**10]
    assert all(x["changed"] > 0 for x in log), "every update changed some DA links"
    assert am["duty_cycle_target"] == pytest.approx(0.99)
    assert am["duty_cycle"] == pytest.approx(0.99, abs=1e-12)
    # unchanged links stay up, so the DA ports as a whole are usable more than 99 % of the time
    assert 0.99 < am["da_link_availability"] < 1.0
    assert all(x["routed_new_ps"] == x["t_ps"] + 100 * 10**6 for x in log)


def test_a_changed_da_link_carries_nothing_for_delta(paper_timing):
    """In the engine's own time series: a changed DA port sends nothing in (t, t + delta]
    but the packet whose transmission began at the very instant t (before the change, at
    the same time stamp; it is lost with the old circuit), and new links carry traffic
    afterwards."""
    net, r = paper_timing
    ts = r.timeseries
    node, port = np.asarray(ts["node"]), np.asarray(ts["port"])
    time, tx = np.asarray(ts["time_ps"]), np.asarray(ts["tx_bytes"])
    used_after = 0
    for rec in net.control_log():
        t = rec["t_ps"]
        for v, p in rec["changed_ports"]:
            sel = (node == v) & (port == p)
            dark = sel & (time > t) & (time <= t + 100 * 10**6)
            assert dark.sum() == 1 and tx[dark].sum() <= 1500, (t, v, p)
            used_after += int(tx[sel & (time > t + 100 * 10**6) & (time <= t + 10**10)].sum())
    assert used_after > 0


def test_greedy_da_runs_on_the_demand_and_updates_only_changed_nodes():
    net = od.arch.duo(nodes=8, hosts_per_tor=2, rho="1ms")
    before: dict[int, list] = {}
    seen = []

    def spy(live, _orig=net._install):
        tables = {v: list(net._rows[v].tolist()) for v in range(8)}
        if before:
            changed = {v for v in range(8) if tables[v] != before[v]}
            seen.append(changed)
            assert changed <= set(net.control_log()[-1]["updated_nodes"])
        before.clear()
        before.update(tables)
        _orig(live)

    net._install = spy
    # two long flows between fixed ToR pairs: Greedy-DA gives each its direct links
    flows = od.workload.flows([("0us", 0, 2 * 5, 30_000_000), ("0us", 3 * 2, 6 * 2, 30_000_000)])
    r = net.run(flows, duration="5ms", seed=1)
    _ledgers_exact(r.summary)
    assert any(seen)
    da = net.da
    for s, t in ((0, 5), (3, 6)):
        assert (da[:, s] == t).sum() >= 1, "a demand pair gets a direct DA link"
    # with only these two demands the links of the other ports stay parallel to static ones
    parallel = sum(int(da[i, v] in net.static[:, v]) for i in range(net.k_d) for v in range(8))
    assert parallel > 0
    # the tables in force equal a full rebuild from the links in use
    full = debruijn.build_tables(np.vstack([net.static, net.usable]), 2, 3)
    assert [t.entries for t in net.lpm_tables()] == [t.entries for t in full]


def test_rho_le_delta_k_s_k_d_nodes_and_f_th_are_checked():
    cases = [({"k_s": 1}, "--k-s", 1), ({"nodes": 12}, "--nodes", 12), ({"k_d": 7}, "--k-d", 7),
             ({"rho": "100us"}, "--rho", "100us"), ({"rho": "50us"}, "--rho", "50us"),
             ({"f_th": -1}, "--f-th", -1), ({"f_th": "-1MB"}, "--f-th", "-1MB"), ({"nodes": 2}, "--nodes", 2)]
    for name in ("duo", "segr"):
        for kw, flag, value in cases:
            with pytest.raises(od.ConfigError) as e:
                od.arch.get(name).make(**{"nodes": 8, **kw})
            assert e.value.field == flag and e.value.value == value, (kw, e.value)
    with pytest.raises(od.ConfigError) as e:
        od.arch.exp(nodes=8, f_th=-5)
    assert e.value.field == "--f-th" and e.value.value == -5
    with pytest.raises(od.ConfigError) as e:
        od.arch.duo(nodes=8, service="weighted", weights="1,0,1")
    assert e.value.field == "--weights"
    # a custom controller's demand matrix of the wrong shape
    with pytest.raises(od.ConfigError) as e:
        debruijn.greedy_da(np.zeros((8, 7)), 6, None, None, 0)
    assert e.value.field == "demand" and e.value.value == (8, 7)


def test_cli_bad_input_exits_2_and_a_tiny_run_reports_duo_metrics(tmp_path):
    bad = cli("run", "duo", "--nodes", 8, "--k-d", 7, "--duration", "1ms")
    assert bad.returncode == 2 and "--k-d" in bad.stderr and "7" in bad.stderr
    ok = cli("run", "segr", "--nodes", 8, "--hosts-per-tor", 2, "--rho", "1ms", "--duration", "3ms",
             "--summary-json", "-", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    am = json.loads(ok.stdout)["arch_metrics"]
    assert am["greedy_da"]["steps"] == 2 and am["duty_cycle"] == pytest.approx(0.9)


# ---------------------------------------------------------------------------------------
# routing: Duo uses DA links anywhere on a path, SEGR only for the flow they join, EXP one path
# ---------------------------------------------------------------------------------------
def _da_candidates(net: DuoNetwork, live) -> list[tuple[int, int, int, int]]:
    """Every (node, src, dst, DA port) the engine's installed tables offer."""
    out = []
    da_gports = {net.gport(v, p): (v, p) for v in range(8) for p in net.da_ports}
    for v in range(8):
        for s in range(8):
            for t in range(8):
                if t == v:
                    continue
                for gp, _ in live.sim.candidates(v, s, t, -1):
                    if gp in da_gports:
                        out.append((v, s, t, da_gports[gp][1]))
    return out


@pytest.mark.parametrize("name", ["segr", "duo"])
def test_segr_uses_a_da_link_only_for_the_flow_it_joins(name):
    net = od.arch.get(name).make(nodes=8, hosts_per_tor=2, rho="1ms")
    checked = []

    def spy(live, _orig=net._install):
        _orig(live)
        use = net.usable
        cands = _da_candidates(net, live)
        transit = [c for c in cands if c[0] != c[1]]
        if name == "segr":
            assert not transit, f"SEGR forwards transit packets over DA links: {transit[:3]}"
            for v, s, t, p in cands:
                assert use[p - net.b, v] == t, "a DA port only towards the flow's destination"
            assert {(v, t) for v, _, t, _ in cands} == {(v, int(use[i, v])) for i in range(net.k_d)
                                                        for v in range(8) if use[i, v] >= 0}
        else:
            assert transit, "Duo's greedy routing uses DA links on multi-hop paths too"
        checked.append(len(cands))

    net._install = spy
    r = net.run(od.workload.poisson("websearch", load=0.6), duration="4ms", seed=5)
    _ledgers_exact(r.summary)
    assert len(checked) >= 3 and all(checked)


def test_exp_keeps_one_path_per_flow():
    """A fixed path per flow and FIFO ports: every segment arrives in order; spraying the
    same flows per packet over the k paths reorders them. The queues hold 200 packets so
    that nothing is lost (the reorder histogram also counts the gaps a loss leaves)."""
    flows = od.workload.flows([("0us", 0, 7 * 2, 2_000_000), ("0us", 2 * 2 + 1, 5 * 2, 600_000),
                               ("5us", 4 * 2, 1 * 2 + 1, 3_000_000), ("9us", 6 * 2, 3 * 2, 800_000)])

    def run(multipath):
        net = od.arch.exp(nodes=8, hosts_per_tor=2, queue=200)
        if multipath != "flow":
            net.deploy_routing(net.paths, lookup="source", multipath=multipath)
        return net, net.run(flows, duration="5ms", seed=1)

    net, r = run("flow")
    s = r.summary
    _ledgers_exact(s)
    assert s["flows"]["completed"] == 4 and s["packets"]["trims"] == 0
    assert sum(s["packets"]["dropped"].values()) == 0
    ro = s["reorder"]
    assert ro["0"] > 0 and sum(v for k, v in ro.items() if k != "0") == 0
    assert s["arch_metrics"]["reorder"]["out_of_order_share"] == 0
    # each flow's path is one of its pair's k shortest paths
    lengths: dict[tuple[int, int], set[int]] = {}
    for p in net.paths:
        lengths.setdefault((p.src, p.dst), set()).add(len(p.hops))
    for f in r.flows.to_pylist():
        assert f["hops"] - 1 in lengths[(f["src"] // 2, f["dst"] // 2)]
    assert all(len([p for p in net.paths if (p.src, p.dst) == k]) == 8 for k in lengths)
    _, sprayed = run("packet")
    assert sum(v for k, v in sprayed.summary["reorder"].items() if k != "0") > 0


def test_k_shortest_paths_are_shortest_and_loop_free():
    succ = expander_matchings(16, 3, 7)
    ksp = k_shortest_paths(succ, 4)
    g = nx.MultiDiGraph()
    for p in range(3):
        for v in range(16):
            g.add_edge(v, int(succ[p, v]), key=p)
    for (s, t), paths in ksp.items():
        assert len(paths) == 4
        lens = [len(x) for x in paths]
        assert lens == sorted(lens) and lens[0] == nx.shortest_path_length(g, s, t)
        for path in paths:
            nodes = [v for v, _ in path] + [t]
            assert len(set(nodes)) == len(nodes) and nodes[0] == s
            assert all(int(succ[p, v]) == w for (v, p), w in zip(path, nodes[1:]))
        # nothing shorter than the longest kept path is missing
        longest = lens[-1]
        simple = sum(1 for x in nx.all_simple_edge_paths(g, s, t, cutoff=longest - 1))
        assert simple <= 4 and simple == sum(1 for n in lens if n < longest)


# ---------------------------------------------------------------------------------------
# tables in prefix form, metrics, Opera at Duo's size, workloads
# ---------------------------------------------------------------------------------------
def test_export_tables_in_prefix_and_flow_form(tmp_path):
    net = od.arch.duo(nodes=8)
    net.export_tables(tmp_path / "p.json", form="prefix")
    data = json.loads((tmp_path / "p.json").read_text())
    assert set(data) == {str(v) for v in range(8)}
    for v, t in enumerate(net.lpm_tables()):
        assert data[str(v)]["label"] == debruijn.format_label(v, 2, 3)
        assert [(e["prefix"], tuple(e["ports"])) for e in data[str(v)]["entries"]] == debruijn.render_table(t)
        # the time-flow rows are the compiled LPM table
        assert net.tables(v) == debruijn.flow_entries(t)
    net.export_tables(tmp_path / "f.json")
    flow = json.loads((tmp_path / "f.json").read_text())
    assert flow["3"] == [e._asdict() for e in net.tables(3)]
    with pytest.raises(od.ConfigError):
        net.export_tables(tmp_path / "x.json", form="lpm")
    seg = od.arch.segr(nodes=8)
    entries = seg.tables(0)
    direct = [e for e in entries if e.src is not None]
    assert direct and all(isinstance(e, Entry) and e.src == 0 and e.port in seg.da_ports for e in direct)


def test_metrics(busy_runs):
    for name in ("duo", "segr", "exp"):
        net, r = busy_runs[name]
        s = r.summary
        am = s["arch_metrics"]
        assert set(am["fct_us_by_size"]) == {"under_10KB", "10KB_100KB", "100KB_1MB", "1MB_15MB", "over_15MB"}
        small = am["fct_us_by_size"]["under_10KB"]
        assert small["count"] > 0 and small["p99"] >= small["p50"] > 0
        ro = am["reorder"]
        assert ro["counts"] == [s["reorder"][b] for b in ro["buckets"]] and ro["cdf"][-1] == pytest.approx(1.0)
        hops = am["delivered_bytes_by_tor_hops"]
        assert sum(hops.values()) == s["bytes"]["delivered"]
        p = am["mean_path_length"]
        assert p == pytest.approx(sum(int(h) * v for h, v in hops.items()) / s["bytes"]["delivered"])
        assert am["path_mix"]["one_hop"] + am["path_mix"]["multi_hop"] == pytest.approx(1.0)
        u = am["link_utilisation"]
        assert 0 < u["u"] < 1 and u["u_normalised"] == pytest.approx(u["u"] / p)
        rx = am["rx_volume"]
        assert rx["time_ps"][:2] == [10**9, 2 * 10**9] and sum(rx["bytes"]) == s["bytes"]["delivered"]
        if name == "exp":
            assert p > 1.5 and "da_link_bytes" not in am
            continue
        da = am["da_link_bytes"]
        assert 0 < da["da"] < da["all_uplinks"]
        assert am["greedy_da"]["steps"] == 5 and am["duty_cycle"] == pytest.approx(0.9)
        # LPM tables stay within (k_s + k_d) * d prefixes (Claim 1 / Thm. 3.2: O(k log n))
        assert am["table_entries"]["max"] <= (2 + 6) * 3
    # the same demand: Duo's greedy routing takes DA shortcuts, SEGR only direct links
    assert busy_runs["duo"][1].summary["arch_metrics"]["mean_path_length"] < \
        busy_runs["exp"][1].summary["arch_metrics"]["mean_path_length"]


def test_opera_runs_at_duos_size():
    net = od.arch.opera(nodes=64, uplinks=8, hosts_per_tor=8)
    r = net.run(od.workload.poisson("datamining", load=0.3), duration="200us", seed=1)
    s = r.summary
    assert s["nodes"] == 64 and s["endpoints"] == 512 and s["flows"]["completed"] > 0
    am = s["arch_metrics"]
    # each rotor is dark for r = 10 us once per cycle of its U staggered superslices: the
    # per-link duty cycle Duo's paper quotes as about 98 % (§4.1.1)
    assert am["reconf_ps"] == 10**7
    assert 0.97 < 1 - am["reconf_ps"] / (8 * am["superslice_ps"]) < 0.99
    assert s["bytes"]["offered"] == s["bytes"]["delivered"] + s["bytes"]["in_flight"]


def test_skewed_workload_uses_a_fraction_of_the_racks():
    wl = od.workload.poisson("datamining", load=1.0, pattern="skewed", active=0.25)
    fl = wl.generate(endpoints=64 * 8, hosts_per_node=8, rate_bps=80 * 10**9, nodes=64, duration_ps=10**10, seed=3)
    src, dst = np.asarray(fl.src) // 8, np.asarray(fl.dst) // 8
    active = set(src.tolist()) | set(dst.tolist())
    assert len(active) == 16 and bool((src != dst).all())
    # load applies to the active racks: offered bytes ~ 16 racks x 80 Gb/s x 10 ms
    assert 0.3 < np.asarray(fl.size).sum() / (16 * 80e9 / 8 * 0.01) < 3
    again = wl.generate(endpoints=64 * 8, hosts_per_node=8, rate_bps=80 * 10**9, nodes=64, duration_ps=10**10,
                        seed=3)
    assert np.array_equal(again.src, fl.src) and np.array_equal(again.size, fl.size)
    for bad in (0, 1.5, "half", True):
        with pytest.raises(od.ConfigError) as e:
            od.workload.poisson("datamining", load=0.5, pattern="skewed", active=bad)
        assert e.value.field == "active"


def test_exp_is_a_regular_directed_expander():
    net = od.arch.exp(nodes=16, uplinks=4, k_paths=3)
    assert isinstance(net, ExpNetwork)
    m = net.matchings
    assert m.shape == (4, 16)
    for row in m:
        assert sorted(row.tolist()) == list(range(16)) and bool((row != np.arange(16)).all())
    assert all(c.directed and c.ts is None for c in net.circuits) and len(net.circuits) == 64
    again = od.arch.exp(nodes=16, uplinks=4, k_paths=3)
    assert np.array_equal(again.matchings, m)
    assert not np.array_equal(od.arch.exp(nodes=16, uplinks=4, k_paths=3, topology_seed=2).matchings, m)


def test_cli_lists_the_skewed_pattern():
    proc = cli("workloads")
    assert proc.returncode == 0 and "skewed" in proc.stdout


def test_deploy_topo_takes_the_time_of_a_run_time_change():
    net = od.arch.duo(nodes=8, hosts_per_tor=2)
    with pytest.raises(od.ConfigError) as e:
        net.deploy_topo(net.circuits, at="1ms")
    assert e.value.field == "at" and "running" in e.value.reason
    net.start(od.workload.poisson("websearch", load=0.3), duration="2ms", seed=1)
    live = net._live
    live.sim.run_until(10**9)
    with pytest.raises(od.ConfigError) as e:
        net.deploy_topo(net.circuits, queued="drop", at=live.sim.now - 1)
    assert e.value.field == "at"
    net.deploy_topo(net.circuits, queued="drop", at="1.5ms")
    r = net.finish()
    _ledgers_exact(r.summary)


def test_warmup_window_measures_the_steady_state_without_changing_the_run():
    """``warmup``: the path mix, mean path length, link use and duty cycle over
    [warm-up, end] from the engine's counters (the run itself is the same: same trace)."""
    wl = od.workload.poisson("datamining-opera", 0.4, "uniform")
    kw = dict(nodes=16, rho="1ms", delta="10us", sample_interval="500us")
    r = od.arch.duo(**kw, warmup="2ms").run(wl, duration="6ms", seed=1)
    plain = od.arch.duo(**kw).run(wl, duration="6ms", seed=1)
    assert r.summary["trace_hash"] == plain.summary["trace_hash"]
    assert "after_warmup" not in plain.summary["arch_metrics"]
    am = r.summary["arch_metrics"]
    st = am["after_warmup"]
    assert (st["from_ps"], st["to_ps"], st["periods"]) == (2_000_000_000, 6_000_000_000, 4)
    shares = st["one_hop_da_share"] + st["multi_hop_mixed_share"] + st["static_only_share"]
    assert shares == pytest.approx(1.0)
    # the window's bytes are the run's less the warm-up's: never more than the whole run's
    for k, v in st["path_bytes"].items():
        assert 0 <= v <= am["path_bytes"][k]
    assert sum(st["path_bytes"].values()) < sum(am["path_bytes"].values())
    assert st["duty_cycle"] == pytest.approx(0.99) and 0.99 <= st["da_link_availability"] <= 1
    assert 1 <= st["mean_path_length"] <= 4 and set(st["link_utilisation"]) == {"static", "demand_aware"}
    # a warm-up as long as the run leaves no window
    late = od.arch.duo(**kw, warmup="6ms").run(wl, duration="6ms", seed=1)
    assert "after_warmup" not in late.summary["arch_metrics"]


def test_cli_run_with_a_warmup_prints_its_summary(tmp_path):
    from typer.testing import CliRunner

    from opendcn.cli import app

    r = CliRunner().invoke(app, ["run", "duo", "--nodes", "16", "--duration", "3ms", "--rho", "1ms", "--delta", "10us",
                                 "--warmup", "2ms", "--load", "0.2", "--no-progress",
                                 "--summary-json", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["arch_metrics"]["after_warmup"]["from_ps"] == 2_000_000_000


def test_the_progress_bar_moves_with_the_engine_not_once_per_update_period(monkeypatch):
    """The bar is updated after every call of the engine (about 0.2 s of wall time each),
    so a long Duo run shows its progress and an ETA between two Greedy-DA updates."""
    import importlib

    duo_mod = importlib.import_module("opendcn.arch.duo")

    seen: list[int] = []
    monkeypatch.setattr(duo_mod._Progress, "__init__", lambda self, end, label: None)
    monkeypatch.setattr(duo_mod._Progress, "update", lambda self, t: seen.append(t))
    monkeypatch.setattr(duo_mod._Progress, "close", lambda self: None)
    net = od.arch.get("duo").make(nodes=16, rho="1ms", delta="10us")
    net.run(od.workload.poisson("hadoop", 0.3), duration="2ms", seed=1, progress=True)
    updates_in_first_period = [t for t in seen if t < 10**9]
    assert len(updates_in_first_period) >= 2, seen              # not only at t = rho
    assert seen == sorted(seen)


def test_ndp_pull_rate_and_return_to_sender_are_duo_options():
    """NDP's pull rate, return-to-sender and control size reach Duo's transport from its
    options (and the CLI): a slower pull rate changes the run, the defaults change nothing."""
    base = od.arch.get("duo").make(nodes=8).run(od.workload.poisson("hadoop", 0.3), "200us", seed=1).summary
    same = od.arch.get("duo").make(nodes=8, ndp_pull_rate=1.0, ndp_pull_pacer="host", ndp_return_to_sender=True)
    assert same.run(od.workload.poisson("hadoop", 0.3), "200us", seed=1).summary["trace_hash"] == base["trace_hash"]
    slow = od.arch.get("duo").make(nodes=8, ndp_pull_rate=0.5)
    assert slow.run(od.workload.poisson("hadoop", 0.3), "200us", seed=1).summary["trace_hash"] != base["trace_hash"]
    with pytest.raises(od.ConfigError, match="ndp_pull_rate|pull.rate"):
        od.arch.get("duo").make(nodes=8, ndp_pull_rate=0)
