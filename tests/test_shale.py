"""Shale (docs/arch/shale.md): schedule, routing bounds, throughput, hop-by-hop invariant,
failures, conservation, determinism, CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import opendcn as od
from opendcn.arch import get
from opendcn.errors import ConfigError

CLI = [sys.executable, "-m", "opendcn.cli"]


def make(**kw):
    return get("shale").make(**kw)


def check_books(s):
    b = s["bytes"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert s["invariants"]["ok"], s["invariants"]["errors"]
    assert s["arch_metrics"]["hbh_violations"] == 0


# ------------------------------------------------------------------ schedule

@pytest.mark.parametrize("n,h", [(16, 2), (64, 3), (16, 1), (81, 4), (16, 4)])
def test_schedule_is_a_permutation_per_slot_and_meets_each_neighbour_once(n, h):
    net = make(nodes=n, h=h)
    m = round(n ** (1 / h))
    e = h * (m - 1)
    peers = net.peers(e)
    for row in peers:
        assert sorted(row.tolist()) == list(range(n))
        assert (row != np.arange(n)).all()
    # over one epoch every node meets exactly the nodes differing in one coordinate
    digits = np.array([[(x // m**i) % m for i in range(h)] for x in range(n)])
    for x in range(0, n, max(1, n // 7)):
        met = sorted(peers[:, x].tolist())
        want = sorted(y for y in range(n) if (digits[y] != digits[x]).sum() == 1)
        assert met == want


def test_h1_is_the_single_round_robin():
    n = 16
    peers = make(nodes=n, h=1).peers(3 * (n - 1))
    for t, row in enumerate(peers):
        assert row.tolist() == [(x + t % (n - 1) + 1) % n for x in range(n)]


# ------------------------------------------------------------------ one cell

@pytest.mark.parametrize("n,h", [(16, 2), (64, 3), (16, 1), (81, 4)])
@pytest.mark.parametrize("epochs_of_propagation", [0, 1, 3])
def test_idle_network_one_cell_latency_and_hops(n, h, epochs_of_propagation):
    m = round(n ** (1 / h))
    e = h * (m - 1)
    slot_ps = 45_056
    prop_ps = epochs_of_propagation * e * slot_ps   # a whole number of epochs
    net = make(nodes=n, h=h, lanes=1, propagation=f"{prop_ps}ps")
    p_slots = prop_ps // slot_ps
    rng = np.random.default_rng(7)
    for trial in range(12):
        src = int(rng.integers(n))
        dst = int((src + 1 + rng.integers(n - 1)) % n)
        start = int(rng.integers(0, 5 * e)) * slot_ps + int(rng.integers(slot_ps))
        wl = od.workload.flows([(start, src, dst, 100)])
        r = net.run(wl, duration=f"{start + (2 * e + 2 * h * (p_slots + 1) + 4) * slot_ps}ps", seed=trial)
        s = r.summary
        check_books(s)
        f = r.flows.to_pylist()[0]
        assert f["completed"], (src, dst, start)
        hops = f["hops"]
        assert 1 <= hops <= 2 * h
        first_slot = -(-start // slot_ps)
        latency_slots = (f["finish_ps"] - first_slot * slot_ps) / slot_ps
        assert latency_slots <= 2 * h * (m - 1) + hops * p_slots + 1e-9, (src, dst, latency_slots)
        # the lone cell exists from its first timeslot to its arrival: the time-averaged
        # cells in flight over the run's timeslots is exactly its latency / run length
        run_slots = -(-(start + (2 * e + 2 * h * (p_slots + 1) + 4) * slot_ps) // slot_ps)
        eng = s["arch_metrics"]["engine"]
        assert eng["mean_cells_in_flight"] * run_slots == pytest.approx(latency_slots, abs=1e-6)


# ------------------------------------------------------------------ load

def _perm_run(n, h, load, duration, **kw):
    net = make(nodes=n, h=h, **kw)
    wl = od.workload.poisson(None, load, "permutation", flow_size="50KB")
    return net.run(wl, duration=duration, seed=3)


@pytest.mark.parametrize("n,h", [(16, 2), (64, 3)])
def test_load_just_under_the_worst_case_limit_is_delivered(n, h):
    load = 0.96 / (2 * h)
    r = _perm_run(n, h, load, "150us")
    s = r.summary
    check_books(s)
    b = s["bytes"]
    # everything offered before the last few path latencies has arrived
    start = np.asarray(r.flows["start_ps"])
    done = np.asarray(r.flows["completed"])
    assert done[start < 100e6].mean() > 0.97
    assert b["delivered"] / b["offered"] > 0.85
    # sustained: delivered goodput tracks the offered load
    assert s["goodput_normalized"] > 0.8 * load


def test_load_is_in_cells_per_timeslot():
    # R = one cell payload per timeslot (guard band excluded): L = 1 is one cell per timeslot
    net = make(nodes=16, h=2)
    assert net.tau == 5632
    assert 243.999 < net.rate * net.tau / 8e12 <= 244


def test_load_just_under_the_bound_is_stable_with_uniform_traffic():
    # 0.96/(2h) of the line in cells per timeslot: the sources' backlog stays bounded and the
    # second half of the run delivers the offered load. (With R = lane rate x payload / cell,
    # the old default that ignored the guard band, the same L offered 0.264 cells per
    # timeslot, above what h = 2 carries with uniform traffic at 1 024+ nodes.)
    load = 0.96 / 4
    net = make(nodes=64, h=2, sample="20us")
    r = net.run(od.workload.poisson(None, load, "uniform", flow_size="10KB"), duration="240us", seed=2)
    check_books(r.summary)
    ts = r.timeseries.to_pydict()
    half = len(ts["time_ps"]) // 2
    unsent = ts["unsent_bytes"]
    gp = sum(ts["goodput_normalized"][half:]) / (len(ts["time_ps"]) - half)
    offered_per_sample = load * net.rate / 8 * 20e-6 * 64
    assert gp > 0.97 * load, gp
    assert max(unsent[half:]) < 2 * offered_per_sample, unsent


def test_hop_by_hop_holds_at_most_budget_cells_per_bucket_per_upstream():
    # T = T_F = 1: a node never holds two cells of one bucket from the same neighbour
    r = _perm_run(16, 2, 0.24, "60us", token_budget="1", first_hop_budget="1")
    s = r.summary
    check_books(s)
    assert s["arch_metrics"]["token_budget"] == 1
    assert s["arch_metrics"]["engine"]["tokens_sent"] > 0
    assert s["arch_metrics"]["hbh_violations"] == 0


@pytest.mark.parametrize("cc", ["none", "hbh", "spray", "hbh+spray", "priority", "isd", "rd", "ndp"])
def test_every_cc_conserves_and_is_deterministic(cc):
    net = make(nodes=64, h=3, cc=cc)
    wl = od.workload.poisson("imc10", 0.2, "uniform")
    a = net.run(wl, duration="30us", seed=5).summary
    b = net.run(wl, duration="30us", seed=5).summary
    check_books(a)
    assert a["bytes"]["delivered"] > 0
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b
    c = net.run(wl, duration="30us", seed=6).summary
    assert c["trace_hash"] != a["trace_hash"]


# ------------------------------------------------------------------ end-to-end baselines

def _incast(senders, dst, size, start=0):
    return od.workload.flows([(start, s, dst, size) for s in senders])


def test_ndp_trims_at_the_queue_cap_and_retransmits_everything():
    senders = [x for x in range(64) if x != 9][:30]
    wl = _incast(senders, 9, 40_000)
    kw = dict(nodes=64, h=2, initial_window=60)
    ndp = make(cc="ndp", ndp_queue=2, **kw).run(wl, duration="300us", seed=1)
    rd = make(cc="rd", **kw).run(wl, duration="300us", seed=1)
    for r in (ndp, rd):
        check_books(r.summary)
        assert r.summary["flows"]["completed"] == 30
        assert r.summary["bytes"]["delivered"] == 30 * 40_000
    t = ndp.summary["arch_metrics"]["transport"]
    assert t["trimmed_cells"] > 0 and t["resent_bytes"] > 0
    # every trimmed cell's payload came back and was resent
    assert (t["trimmed_cells"] - 30) * 244 <= t["resent_bytes"] <= t["trimmed_cells"] * 244
    assert rd.summary["arch_metrics"]["transport"]["trimmed_cells"] == 0
    # trimming keeps the queues at the cap: one more cell per queue at most
    assert ndp.summary["arch_metrics"]["engine"]["max_buffer_cells"] < \
        rd.summary["arch_metrics"]["engine"]["max_buffer_cells"]


def test_rd_never_has_more_than_its_window_in_the_network():
    # cells of a flow in the network + its unused credits never exceed W: pulls are only
    # sent for delivered cells. So total buffered cells <= flows x W at every moment.
    senders = [x for x in range(64) if x != 9][:20]
    wl = _incast(senders, 9, 60_000)
    w = 3
    rd = make(nodes=64, h=2, cc="rd", initial_window=w, pull_every=2).run(wl, duration="2ms", seed=1)
    none = make(nodes=64, h=2, cc="none").run(wl, duration="2ms", seed=1)
    for r in (rd, none):
        check_books(r.summary)
        assert r.summary["flows"]["completed"] == 20
    assert rd.summary["arch_metrics"]["engine"]["max_buffer_cells"] <= 20 * w
    assert max(rd.timeseries["buffered_cells"].to_pylist()) <= 20 * w
    assert none.summary["arch_metrics"]["engine"]["max_buffer_cells"] > 20 * w
    t = rd.summary["arch_metrics"]["transport"]
    # one PULL per 2 delivered cells of a flow, except after its last cell
    cells = -(-60_000 // 244)
    assert t["pulls_sent"] == 20 * ((cells - 1) // 2)


def test_isd_caps_a_lone_flow_at_its_receiver_share():
    # one 200 KB flow on an idle network: ISD sends at most 1.25/(2h) cells per timeslot
    # (plus one cell of burst), `none` at up to one cell per timeslot
    cells = -(-200_000 // 244)
    wl = od.workload.flows([(0, 3, 12, 200_000)])
    isd = make(nodes=16, h=2, cc="isd").run(wl, duration="100us", seed=1)
    none = make(nodes=16, h=2, cc="none").run(wl, duration="100us", seed=1)
    for r in (isd, none):
        check_books(r.summary)
    f_isd = isd.flows.to_pylist()[0]
    f_none = none.flows.to_pylist()[0]
    assert f_isd["completed"] and f_none["completed"]
    tau = 5632
    cap = 1.25 / 4
    assert f_isd["fct_ps"] >= (cells - 1) / cap * tau
    # without the cap the same flow beats the capped rate by a wide margin
    assert f_none["fct_ps"] < 0.7 * (cells - 1) / cap * tau
    assert isd.summary["arch_metrics"]["transport"]["isd_cap"] == 1.25


def test_interleaving_two_sub_schedules():
    net = make(nodes=16, h=2, interleave="4:0.4")
    peers = net.peers(1000)
    assert all(sorted(r.tolist()) == list(range(16)) for r in peers)
    r = net.run(od.workload.poisson("imc10", 0.15, "uniform"), duration="40us", seed=2)
    s = r.summary
    check_books(s)
    il = s["arch_metrics"]["interleave"]
    assert il["h"] == 4 and il["share"] == 0.4 and il["cutoff_bytes"] > 0
    sizes = np.asarray(r.flows["size_bytes"])
    frac = sizes[sizes <= il["cutoff_bytes"]].sum() / sizes.sum()
    assert 0.15 < frac < 0.45  # equal utilization: 0.4*2 / (0.4*2 + 0.6*4) = 25 % of bytes


def test_metrics_present():
    r = _perm_run(16, 2, 0.2, "30us")
    am = r.summary["arch_metrics"]
    assert set(am["buffer_cells_percentiles"]) >= {"p50", "p99", "p99.9", "p99.99", "max"}
    assert am["max_active_buckets"] >= 1 and am["max_pieo_length"] >= 1
    assert am["destination_throughput"]["live_total"] > 0
    assert any(v.get("completed") for v in am["normalized_fct"].values())
    done = r.flows.filter(r.flows["completed"])
    assert min(done["slowdown"].to_pylist()) >= 1.0  # t / (F + P) is at least 1


# ------------------------------------------------------------------ failures

def _live_perm_flows(n, live, load, rate_bps, duration_ps, size, seed):
    rng = np.random.default_rng(seed)
    live = np.asarray(live)
    while True:
        perm = rng.permutation(len(live))
        if (perm != np.arange(len(live))).all():
            break
    per_node = load * rate_bps / 8 / 1e12  # bytes per ps
    out = []
    for i, s in enumerate(live):
        t = 0.0
        while True:
            t += rng.exponential(size / per_node)
            if t >= duration_ps:
                break
            out.append((int(t), int(s), int(live[perm[i]]), size))
    out.sort()
    return od.workload.flows(out)


@pytest.mark.parametrize("h,load", [(2, 0.2), (3, 0.12)])   # 80 % / 72 % of 1/(2h)
@pytest.mark.parametrize("frac", [0.04, 0.08])
def test_failed_nodes_keep_live_destination_throughput(frac, h, load):
    n, dur = 64, 120_000_000
    healthy = make(nodes=n, h=h)
    failing = make(nodes=n, h=h, fail_nodes=frac, fail_at="0us")
    failed = failing.failed_nodes(seed=1)
    assert len(failed) == round(frac * n)
    live = [x for x in range(n) if x not in set(failed.tolist())]
    rate = healthy.rate
    base = healthy.run(_live_perm_flows(n, range(n), load, rate, dur, 20_000, 1), duration=f"{dur}ps", seed=1)
    hurt = failing.run(_live_perm_flows(n, live, load, rate, dur, 20_000, 1), duration=f"{dur}ps", seed=1)
    for r in (base, hurt):
        check_books(r.summary)
    b0 = base.summary["arch_metrics"]["destination_throughput"]["live_total"]
    b1 = hurt.summary["arch_metrics"]["destination_throughput"]["live_total"]
    ratio = b1 / b0 / (1 - len(failed) / n)
    assert abs(ratio - 1) < 0.05, ratio
    assert hurt.summary["arch_metrics"]["failed_nodes"] == len(failed)


@pytest.mark.parametrize("frac,floor", [(0.04, 0.95), (0.08, 0.9)])
def test_failed_links_are_detected_and_routed_around(frac, floor):
    n, h, load, dur = 64, 2, 0.2, 120_000_000
    healthy = make(nodes=n, h=h)
    failing = make(nodes=n, h=h, fail_links=frac, fail_at="0us")
    links = failing.failed_links(seed=1)
    assert len(links) == round(frac * n * h * (round(n ** 0.5) - 1) / 2)
    m = 8
    for a, b in links.tolist():   # neighbours: differ in exactly one coordinate
        assert sum((a // m**p) % m != (b // m**p) % m for p in range(h)) == 1
    wl = _live_perm_flows(n, range(n), load, healthy.rate, dur, 20_000, 1)
    base = healthy.run(wl, duration=f"{dur}ps", seed=1)
    hurt = failing.run(wl, duration=f"{dur}ps", seed=1)
    for r in (base, hurt):
        check_books(r.summary)
    # cells sent before an end noticed the failure are lost, nothing after that
    assert hurt.summary["drops"]["failed_link"] > 0 and hurt.summary["drops"]["failed_node"] == 0
    assert hurt.summary["drops"]["failed_link"] < 0.01 * hurt.summary["bytes"]["offered"]
    b0 = base.summary["arch_metrics"]["destination_throughput"]["live_total"]
    b1 = hurt.summary["arch_metrics"]["destination_throughput"]["live_total"]
    assert floor <= b1 / b0 <= 1.01, b1 / b0
    assert hurt.summary["arch_metrics"]["failed_links"] == len(links)


def test_time_series_adds_up():
    r = _perm_run(16, 2, 0.2, "30us")
    ts = r.timeseries
    s = r.summary
    assert ts.num_rows >= 100
    assert sum(ts["delivered_bytes"].to_pylist()) == s["bytes"]["delivered"]
    assert sum(ts["tx_bytes"].to_pylist()) == s["packet_hops"] * 256
    t = ts["time_ps"].to_pylist()
    assert t == sorted(t) and t[-1] == -(-30_000_000 // 5632) * 5632   # the last timeslot run
    # at the end: queued cells + unsent bytes account for the bytes in flight
    last = ts.slice(ts.num_rows - 1).to_pylist()[0]
    assert last["unsent_bytes"] <= s["bytes"]["in_flight"] <= last["unsent_bytes"] + \
        (last["buffered_cells"] + 16 * 97) * 244   # + cells on the wires (≤ N × D)


@pytest.mark.parametrize("engine", ["window", "timeslot"])
def test_warmup_measures_the_timeslots_after_it(engine):
    # 16 nodes, h = 2: 20 us = 3 552 timeslots of 5.632 ns (the last one starting before
    # 20 us), 8 us of warm-up = 1 421 timeslots
    full = _perm_run(16, 2, 0.2, "20us", engine=engine).summary
    r = _perm_run(16, 2, 0.2, "20us", engine=engine, warmup="8us").summary
    st = r["arch_metrics"]["steady"]
    total = -(-20_000_000 // 5632)
    warm = -(-8_000_000 // 5632)
    assert st["from_ps"] == warm * 5632 and st["timeslots"] == total - warm
    # the warm-up changes nothing simulated
    assert r["packet_hops"] == full["packet_hops"] and r["bytes"] == full["bytes"]
    assert "steady" not in full["arch_metrics"]
    eng = r["arch_metrics"]["engine"]
    # whole-run cells in flight = the warm-up's and the steady part's, weighted by timeslots
    whole = eng["mean_cells_in_flight"] * total
    assert 0 < st["mean_cells_in_flight"] * st["timeslots"] < whole
    # the cell-hops after the warm-up: all but those of the first sample interval, which
    # ends where the warm-up does
    ts = _perm_run(16, 2, 0.2, "20us", engine=engine, warmup="8us", sample="8us").timeseries.to_pylist()
    assert ts[0]["time_ps"] == warm * 5632
    assert st["cell_hops"] == r["packet_hops"] - ts[0]["tx_bytes"] // 256 > 0
    assert st["wall_s"] > 0 and st["wall_us_per_timeslot"] == pytest.approx(st["wall_s"] / st["timeslots"] * 1e6)
    assert st["wall_ns_per_hop"] == pytest.approx(st["wall_s"] / st["cell_hops"] * 1e9)


@pytest.mark.parametrize("warmup", ["20us", "30us", "-1us"])
def test_warmup_not_shorter_than_the_run_is_refused(warmup):
    with pytest.raises(ConfigError, match="warmup"):
        _perm_run(16, 2, 0.2, "20us", warmup=warmup)


def test_active_buckets_count_distinct_buckets():
    r = _perm_run(64, 2, 0.2, "40us")
    am = r.summary["arch_metrics"]
    # distinct <destination, remaining sprays> per node <= per-neighbour bucket queues
    assert 1 <= am["max_active_buckets"] <= am["max_bucket_queues"]


@pytest.mark.parametrize("h", [2, 3])
def test_invalidation_tokens_stop_cells_to_a_failed_node_at_their_sources(h):
    # live sources send to every node, failed ones included; after the failure the nodes
    # next to it send {j, 0}, which spreads up to {j, h - 1} at every first hop: from then
    # on no cell for a failed node enters the network (its data waits at the source),
    # while without invalidation cells keep being dropped next to the failed node
    n = 64
    runs = {}
    for inv in (True, False):
        net = make(nodes=n, h=h, fail_nodes=0.05, fail_at="10us", invalidation=inv, sample="10us")
        failed = set(net.failed_nodes(seed=1).tolist())
        rng = np.random.default_rng(3)
        live = [x for x in range(n) if x not in failed]
        flows = []
        for i in range(3000):
            s = int(rng.choice(live))
            d = int((s + 1 + rng.integers(n - 1)) % n)
            flows.append((int(i * 50_000), s, d, 5_000))
        r = net.run(od.workload.flows(flows), duration="150us", seed=1)
        check_books(r.summary)
        runs[inv] = r
    on, off = runs[True], runs[False]
    def late(r):  # dropped bytes in the last 50 us
        return sum(r.timeseries["dropped_bytes"].to_pylist()[-5:])

    assert on.summary["arch_metrics"]["engine"]["invalidation_tokens"] > 0
    assert off.summary["arch_metrics"]["engine"]["invalidation_tokens"] == 0
    assert late(on) == 0
    assert late(off) > 0
    assert on.summary["bytes"]["dropped"] < off.summary["bytes"]["dropped"]
    # live destinations are served as before
    assert on.summary["arch_metrics"]["destination_throughput"]["live_total"] >= \
        0.98 * off.summary["arch_metrics"]["destination_throughput"]["live_total"]


@pytest.mark.parametrize("h", [2, 3])
def test_recovery_revalidates_every_invalidation_and_ends_the_drops(h):
    n = 64
    rng = np.random.default_rng(3)
    flows = []
    for i in range(3000):
        s = int(rng.integers(n))
        flows.append((int(i * 50_000), s, int((s + 1 + rng.integers(n - 1)) % n), 5_000))
    runs = {}
    for rec in (None, "60us"):
        net = make(nodes=n, h=h, fail_nodes=0.05, fail_links=0.03, fail_at="10us", recover_at=rec,
                   sample="10us")
        r = net.run(od.workload.flows(flows), duration="150us", seed=1)
        check_books(r.summary)
        runs[rec] = r
    down, back = runs[None], runs["60us"]
    eb, ed = back.summary["arch_metrics"]["engine"], down.summary["arch_metrics"]["engine"]
    assert eb["invalidation_tokens"] > 0
    # every invalidation is undone by exactly one re-validation; none is left
    assert eb["revalidation_tokens"] == eb["invalidation_tokens"]
    assert eb["invalidations_held"] == 0 and ed["invalidations_held"] > 0
    # from one interval after the recovery on, nothing is dropped (failed sources and
    # destinations are back), while the permanent failure keeps dropping flows of dead sources
    assert sum(back.timeseries["dropped_bytes"].to_pylist()[7:]) == 0
    assert sum(down.timeseries["dropped_bytes"].to_pylist()[7:]) > 0
    # data for recovered destinations, held at the sources meanwhile, is delivered
    assert back.timeseries["unsent_bytes"].to_pylist()[-1] < 0.1 * down.timeseries["unsent_bytes"].to_pylist()[-1]
    assert back.summary["flows"]["completed"] > down.summary["flows"]["completed"]
    assert back.summary["arch_metrics"]["recover_at_ps"] == 60_000_000


def test_failure_mid_run_drops_and_conserves():
    net = make(nodes=64, h=2, fail_nodes=0.05, fail_at="10us")
    r = net.run(od.workload.poisson("imc10", 0.15, "uniform"), duration="40us", seed=4)
    s = r.summary
    check_books(s)
    assert s["bytes"]["dropped"] > 0 and s["drops"]["failed_node"] > 0


# ------------------------------------------------------------------ CLI

def test_cli_runs_and_prints_summary():
    out = subprocess.run(CLI + ["run", "shale", "--nodes", "16", "--h", "2", "--duration", "20us",
                                "--summary-json", "-"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert s["arch"] == "shale" and s["nodes"] == 16
    check_books(s)


@pytest.mark.parametrize("args", [
    ["--nodes", "15"],
    ["--h", "5"],
    ["--cc", "tcp"],
    ["--cc", "ndp", "--ndp-queue", "0"],
    ["--cc", "isd", "--isd-cap", "-1"],
    ["--cc", "rd", "--initial-window", "x"],
    ["--interleave", "3:0.4"],
    ["--interleave", "4:1.5"],
    ["--token-budget", "0"],
    ["--fail-nodes", "1.5"],
    ["--fail-links", "1.5"],
    ["--fail-nodes", "0.1", "--fail-at", "5us", "--recover-at", "2us"],
    ["--sample", "-3us"],
    ["--slot", "30ns"],
    ["--lanes", "0"],
    ["--warmup", "9us"],
])
def test_cli_bad_options_exit_2(args):
    out = subprocess.run(CLI + ["run", "shale", "--duration", "5us", *args], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2, (args, out.stdout, out.stderr)


def test_python_api_bad_option_raises_config_error():
    with pytest.raises(ConfigError):
        make(nodes=10, h=2)
    with pytest.raises(ConfigError):
        make(cc="tcp")


# ------------------------------------------------------------------ golden summaries

GOLDEN_RUNS = {
    "shale-64-h2-hbh+spray": dict(nodes=64, h=2),
    "shale-81-h4-hbh-interleave": dict(nodes=81, h=4, cc="hbh", interleave="2:0.3"),
    "shale-64-h3-priority": dict(nodes=64, h=3, cc="priority"),
    "shale-64-h2-ndp-fail": dict(nodes=64, h=2, cc="ndp", ndp_queue=3, fail_nodes=0.05, fail_links=0.03,
                                 fail_at="10us"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_RUNS))
def test_golden_summary(name, golden):
    """Whole summaries (and the network-wide time series) are stable: engine changes that
    should not change behaviour (speed work) keep them bit-identical."""
    r = make(**GOLDEN_RUNS[name]).run(od.workload.poisson("imc10", 0.2, "uniform"), duration="40us", seed=1)
    got = dict(r.summary)
    got.pop("wall_s")
    got["timeseries"] = {c: r.timeseries[c].to_pylist() for c in ("buffered_cells", "unsent_bytes",
                                                                  "delivered_bytes")}
    got = json.loads(json.dumps(got, sort_keys=True))
    assert got["flows"]["started"] > 10
    golden(name, got, indent=1)


# ------------------------------------------------------------------ the two engines

@pytest.mark.parametrize("opts", [
    {"nodes": 64, "h": 2},
    {"nodes": 81, "h": 2, "interleave": "4:0.4", "cc": "hbh"},
    {"nodes": 64, "h": 3, "cc": "none", "lanes": 1},
    {"nodes": 16, "h": 1, "cc": "spray", "propagation": "50ns"},
])
def test_window_and_timeslot_engines_agree(opts):
    wl = od.workload.poisson("imc10", load=0.5)
    runs = {}
    for eng in ("window", "timeslot"):
        r = make(engine=eng, **opts).run(wl, duration="40us", seed=4)
        s = dict(r.summary)
        check_books(s)
        assert s["arch_metrics"].pop("engine_mode") == eng
        s.pop("wall_s")
        runs[eng] = (s, r.flows.to_pylist(), r.timeseries.to_pylist())
    w, t = runs["window"], runs["timeslot"]
    assert w[0]["packet_hops"] > 1000 and w[0]["flows"]["completed"] > 10
    assert w == t


@pytest.mark.parametrize("opts", [
    {"nodes": 64, "h": 2},
    {"nodes": 81, "h": 2, "interleave": "4:0.4", "cc": "hbh"},
    {"nodes": 16, "h": 1, "cc": "spray", "propagation": "50ns"},
])
def test_window_engine_threads_change_nothing_but_wall_time(opts):
    wl = od.workload.poisson("imc10", load=0.5)
    runs = []
    for threads in (1, 2, 3, 7):
        r = make(threads=threads, **opts).run(wl, duration="40us", seed=4)
        s = dict(r.summary)
        assert s["arch_metrics"]["engine_mode"] == "window"
        check_books(s)
        s.pop("wall_s")
        runs.append((s, r.flows.to_pylist(), r.timeseries.to_pylist()))
    assert runs[0][0]["packet_hops"] > 1000
    assert all(x == runs[0] for x in runs[1:])


def test_threads_must_be_a_positive_count():
    for bad in (0, -2, "two"):
        with pytest.raises(ConfigError) as e:
            make(nodes=16, threads=bad)
        assert e.value.field == "--threads"


def test_auto_engine_and_what_the_window_engine_refuses():
    wl = od.workload.poisson("websearch", load=0.3)
    assert make(nodes=16).run(wl, duration="5us").summary["arch_metrics"]["engine_mode"] == "window"
    assert make(nodes=16, cc="priority").run(wl, duration="5us").summary["arch_metrics"]["engine_mode"] == "timeslot"
    for bad in ({"cc": "ndp"}, {"fail_nodes": 0.1}, {"pushback": True, "congestion_detection": True}):
        with pytest.raises(ConfigError) as e:
            make(nodes=16, engine="window", **bad).run(wl, duration="5us")
        assert e.value.field == "--engine"
    with pytest.raises(ConfigError) as e:
        make(nodes=16, engine="fast")
    assert e.value.field == "--engine"


def test_token_fields_one_each_changes_only_what_headers_carry():
    """--token-fields one-each under node failures: a different run (headers carry a
    hop-by-hop token beside an invalidation), the same conservation and checks; a bad value
    is a ConfigError naming the option; without failures it changes nothing."""
    wl = od.workload.poisson("imc10", 0.2, "uniform")
    runs = {tf: od.arch.shale(nodes=256, h=2, fail_nodes=0.08, fail_at="2us", token_fields=tf)
            .run(wl, duration="20us", seed=1).summary for tf in ("oldest", "one-each")}
    a, b = runs["oldest"], runs["one-each"]
    assert a["trace_hash"] != b["trace_hash"]
    assert a["bytes"]["offered"] == b["bytes"]["offered"]
    for s in (a, b):
        assert s["bytes"]["offered"] == s["bytes"]["delivered"] + s["bytes"]["dropped"] + s["bytes"]["in_flight"]
        assert s["fabric"]["collisions"] == 0 and s["fabric"]["guardband_violations"] == 0
    assert (a["arch_metrics"]["token_fields"], b["arch_metrics"]["token_fields"]) == ("oldest", "one-each")
    quiet = [od.arch.shale(nodes=64, h=2, token_fields=tf).run(wl, duration="5us", seed=1).summary["trace_hash"]
             for tf in ("oldest", "one-each")]
    assert quiet[0] == quiet[1]
    with pytest.raises(od.ConfigError) as e:
        od.arch.shale(nodes=16, token_fields="newest")
    assert e.value.field == "--token-fields" and e.value.value == "newest"
