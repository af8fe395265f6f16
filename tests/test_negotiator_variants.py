"""The NegotiaToR variants of docs/arch/negotiator.md#variants — iterative matching, traffic-aware
two-hop relay (thin-clos), stateful scheduling and the ProjecToR-like scheduler — each
checked on its defining behaviour, plus conservation, conflict-free fabric use and
determinism for every variant."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opendcn as od
from opendcn.errors import ConfigError

EPOCH = 3_660_000


def neg(**kw):
    kw.setdefault("tors", 16)
    kw.setdefault("ports", 8)
    return od.arch.negotiator(**kw)


def cli(*args):
    exe = Path(sys.executable).parent / "opendcn"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "opendcn.cli"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=120)


def _rows(r):
    f = r.flows
    return list(zip(f["src"].to_pylist(), f["dst"].to_pylist(), f["size_bytes"].to_pylist(),
                    f["hops"].to_pylist(), f["fct_ps"].to_pylist()))


# ------------------------------------------------------------------------------ iterative
@pytest.mark.parametrize("n", [1, 3, 5])
def test_iterative_each_extra_iteration_adds_three_epochs(n):
    net = neg(variant=f"iterative:{n}", pb=False)
    r = net.run(od.workload.flows([("0us", 0, 9, 1_000_000)]), duration="80us")
    assert r.summary["arch_metrics"]["scheduling_delay_epochs"] == 2 + 3 * (n - 1)
    assert net.last_sim.pair_epochs(0, 9) == (0, 2 + 3 * (n - 1))
    assert r.summary["invariants"]["ok"]


def test_iterative_fills_ports_a_single_iteration_leaves_unmatched():
    # saturated all-to-all, no speedup (the paper evaluates iterations without it)
    sat = od.workload.poisson(None, 1.0, "all-to-all", flow_size="20MB")
    frac = {}
    for v in ("base", "iterative:3", "iterative:5"):
        m = neg(tors=32, variant=v, speedup=1.0).run(sat, duration="300us").summary["arch_metrics"]
        frac[v] = m["matched_port_fraction"]
    n = 32
    assert frac["base"] == pytest.approx(1 - (1 - 1 / n) ** n, abs=0.04)   # one RRM round
    assert frac["iterative:3"] > frac["base"] + 0.15
    assert frac["iterative:5"] > frac["iterative:3"]
    assert frac["iterative:5"] <= 1.0


# ------------------------------------------------------------------------------ stateful
def test_stateful_grants_only_pairs_with_pending_bytes():
    # 100 KB: requested in three consecutive epochs (the pipeline) but the first grants
    # already cover it; base grants all 8 ports in every process, stateful only as many
    # scheduled phases (33450 B each) as the destination's matrix shows pending bytes
    out = {}
    for v in ("base", "stateful"):
        net = neg(variant=v)
        r = net.run(od.workload.flows([("0us", 0, 9, 100_000)]), duration="60us")
        assert r.summary["flows"]["completed"] == 1 and r.summary["invariants"]["ok"]
        out[v] = r.summary["arch_metrics"]
    assert out["base"]["grants"] == 3 * 8
    # pending after the first epoch's 8 piggybacked packets: 100000 - 8 x 595 = 95240 B
    assert out["stateful"]["grants"] == -(-95_240 // 33_450) == 3
    assert out["stateful"]["stateful_requests_not_granted"] > 0
    assert out["stateful"]["scheduled_idle_port_slots"] < out["base"]["scheduled_idle_port_slots"]


def test_stateful_delivers_everything_under_load():
    wl = od.workload.poisson("hadoop", load=0.7, pattern="uniform")
    r = neg(tors=32, variant="stateful").run(wl, duration="600us", seed=3)
    s = r.summary
    assert s["invariants"]["ok"] and s["arch_metrics"]["stateful_requests_not_granted"] > 0
    # nothing is starved: every flow that started before the last 100 us has finished
    f = r.flows
    early = np.asarray(f["start_ps"]) < 500_000_000
    assert np.asarray(f["completed"].to_numpy(zero_copy_only=False))[early].mean() > 0.97


# ------------------------------------------------------------------------------ ProjecToR-like
@pytest.mark.parametrize("first", [1, 2])
def test_projector_grants_the_oldest_bundle_first(first):
    other = 3 - first
    flows = [("0us", first, 0, 1_000_000), ("1us", other, 0, 1_000_000)]
    net = neg(variant="projector")
    r = net.run(od.workload.flows(flows), duration="300us")
    a, b = net.last_sim.pair_epochs(first, 0), net.last_sim.pair_epochs(other, 0)
    fin = {src: fct for src, _, _, _, fct in _rows(r)}
    # the older backlog holds every port of ToR 0 until it is served; the younger waits
    assert a[1] < b[1] and b[1] >= a[1] + 4
    assert fin[first] < fin[other] + 1_000_000
    # base NegotiaToR matching shares the destination's ports between the two at once
    net = neg(variant="base")
    net.run(od.workload.flows(flows), duration="300us")
    a, b = net.last_sim.pair_epochs(first, 0), net.last_sim.pair_epochs(other, 0)
    assert abs(b[1] - a[1]) <= 1


def test_projector_requests_one_destination_per_port():
    wl = od.workload.poisson("hadoop", load=0.9, pattern="uniform")
    m = neg(tors=32, variant="projector").run(wl, duration="400us", seed=2).summary["arch_metrics"]
    # one iteration, request-grant: every grant is accepted (a port requested one bundle)
    assert m["grants"] > 0 and m["accepts"] == m["grants"] and m["match_ratio"] == 1.0


# ------------------------------------------------------------------------------ relay
RELAY_FLOWS = [("0us", 0, 9, 2_000_000), ("0us", 0, 9, 500), ("5us", 0, 9, 5000), ("0us", 0, 10, 40_000),
               ("3us", 1, 9, 9000), ("0us", 4, 20, 300_000)]


def test_relay_moves_only_elephant_data_over_exactly_two_hops():
    res = {}
    for v in ("base", "relay"):
        r = neg(tors=32, topology="thin-clos", variant=v).run(od.workload.flows(RELAY_FLOWS), duration="400us")
        assert r.summary["flows"]["completed"] == len(RELAY_FLOWS) and r.summary["invariants"]["ok"]
        res[v] = (r.summary["arch_metrics"], {(s, d, z): (h, f) for s, d, z, h, f in _rows(r)})
    m, rows = res["relay"]
    thr = m["relay_threshold_bytes"]
    assert thr == 30 * 1115
    for (s, d, size), (hops, _) in rows.items():
        # relay only for lowest-priority data (beyond 1 KB + 9 KB) above the threshold
        assert hops == (2 if size - 10_000 > thr else 1), (s, d, size, hops)
    assert m["relay_first_hop_bytes"] == m["relay_second_hop_bytes"] > 0
    assert m["max_relay_queue_bytes"] <= m["relay_capacity_bytes"]
    # the hot pair is no longer limited to its one direct port
    assert rows[(0, 9, 2_000_000)][1] < 0.5 * res["base"][1][(0, 9, 2_000_000)][1]
    # mice are untouched
    assert rows[(0, 9, 500)] == res["base"][1][(0, 9, 500)]


def test_relay_is_thin_clos_only():
    with pytest.raises(ConfigError) as e:
        neg(variant="relay")
    assert e.value.field == "--variant"
    with pytest.raises(ConfigError):
        neg(topology="thin-clos", variant="relay", pq=False)
    p = cli("run", "negotiator", "--variant", "relay", "--duration", "10us", "--summary-json", "-")
    assert p.returncode == 2 and "thin-clos" in p.stderr


# ------------------------------------------------------------------------------ every variant
VARIANTS = [dict(variant="iterative:3", speedup=1.0), dict(variant="iterative:5", speedup=1.0),
            dict(variant="iterative:3", topology="thin-clos"), dict(variant="relay", topology="thin-clos"),
            dict(variant="stateful"), dict(variant="stateful", topology="thin-clos"),
            dict(variant="projector"), dict(variant="projector", topology="thin-clos"),
            # with link failures (and the thin-clos relay around them)
            dict(variant="iterative:3", fail_links=0.05, fail_at="50us", recover_at="200us"),
            dict(variant="relay", topology="thin-clos", fail_links=0.05, fail_at="50us", recover_at="200us"),
            dict(variant="stateful", topology="thin-clos", fail_links=0.05, fail_at="50us", recover_at="200us"),
            dict(variant="projector", fail_links=0.05, fail_at="50us", recover_at="200us")]


@pytest.mark.parametrize("kw", VARIANTS)
def test_variants_conserve_bytes_never_collide_and_are_deterministic(kw):
    wl = od.workload.poisson("hadoop", load=0.8, pattern="uniform")
    a = neg(tors=32, **kw).run(wl, duration="300us", seed=5).summary
    b = neg(tors=32, **kw).run(wl, duration="300us", seed=5).summary
    bb = a["bytes"]
    assert bb["offered"] == bb["delivered"] + bb["dropped"] + bb["in_flight"]
    assert bb["delivered"] > 0 and a["flows"]["completed"] > 0
    assert set(a["drops"]) <= {"link_failure"} and (bb["dropped"] == 0) == ("fail_links" not in kw)
    assert a["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert a["invariants"] == {"ok": True, "errors": []}
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b


@pytest.mark.parametrize("v", ["iterative:3", "relay", "stateful", "projector"])
def test_cli_runs_every_variant(v):
    p = cli("run", "negotiator", "--tors", 16, "--topology", "thin-clos", "--variant", v,
            "--duration", "100us", "--summary-json", "-")
    assert p.returncode == 0, p.stderr
    assert f'"variant": "{v}"' in p.stdout


@pytest.mark.parametrize("v", ["iterative:0", "iterative:x", "iterative:", "iterative:65", "nonesuch"])
def test_bad_variants_exit_2(v):
    p = cli("run", "negotiator", "--variant", v, "--duration", "10us", "--summary-json", "-")
    assert p.returncode == 2 and "--variant" in p.stderr, p.stderr
