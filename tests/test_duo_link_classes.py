"""Duo's link classes in ``arch_metrics["link_classes"]``: the ToR uplinks split into the
static de Bruijn ports and the demand-aware (DA) ports from the per-port transmit counters,
checked against packet arithmetic at a tiny size and against the engine's own classes (it
counts the DA ports as reconfigurable optical, the de Bruijn ports as static optical); and
the exact split of the delivered payload by path kind (one-hop DA, mixed, static only)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import opendcn as od
from opendcn.fabrics import debruijn

MSS, HDR = 1436, 64          # payload and header of a full 1500-B packet (Duo's defaults)


def test_segr_one_flow_over_its_direct_da_link_exact():
    # 4 racks, k_s = 2 static switches and one DA switch; rho longer than the run: the DA
    # links of t = 0 stay (no reconfiguration)
    net = od.arch.segr(nodes=4, uplinks=3, hosts_per_tor=1, f_th="0B", rho="1s", delta="0us",
                       sample_interval="100us")
    da, static = net.da, net.static
    s = 0
    t = int(da[0, s])
    assert t != s
    size = 10 * MSS
    r = net.run(od.workload.flows([["0us", s, t, size]]), duration="1ms", seed=1)
    f = r.flows.to_pylist()[0]
    assert f["completed"] and f["retransmits"] == 0
    pkts = math.ceil(size / MSS)
    # SEGR: the data of a flow from s to t take the direct DA link s -> t (one ToR hop);
    # TCP acknowledges every packet with a header-sized ACK, from t back to s: over the DA
    # link t -> s if there is one, else over the static de Bruijn path (its hop count)
    ack_da = int(da[0, t]) == s
    hops_back = 0
    if not ack_da:
        # breadth-first over the static matchings only
        frontier, seen = {t}, {t}
        while s not in frontier:
            frontier = {int(static[j, v]) for v in frontier for j in range(static.shape[0])} - seen
            seen |= frontier
            hops_back += 1
    lc = r.summary["arch_metrics"]["link_classes"]
    assert lc["demand_aware"]["tx_bytes"] == pkts * (MSS + HDR) + (pkts * HDR if ack_da else 0)
    assert lc["static"]["tx_bytes"] == (0 if ack_da else pkts * HDR * hops_back)
    assert (lc["static"]["ports_per_tor"], lc["demand_aware"]["ports_per_tor"]) == (2, 1)
    # utilisation: bytes / (ports x racks x 10 Gb/s x 1 ms)
    cap = 10e9 * 1e-3 / 8
    assert lc["demand_aware"]["utilisation"] == pytest.approx(lc["demand_aware"]["tx_bytes"] / (1 * 4 * cap))
    assert lc["static"]["utilisation"] == pytest.approx(lc["static"]["tx_bytes"] / (2 * 4 * cap))
    eng = r.summary["link_classes"]
    assert lc["static"]["tx_bytes"] == eng.get("static_optical", {}).get("tx_bytes", 0)
    assert lc["demand_aware"]["tx_bytes"] == eng["reconfigurable_optical"]["tx_bytes"]
    assert lc["host"] == eng["host"]
    # every payload byte crossed its one DA link only
    am = r.summary["arch_metrics"]
    assert (am["one_hop_da_share"], am["multi_hop_mixed_share"], am["static_only_share"]) == (1.0, 0.0, 0.0)
    assert am["path_bytes"]["one_hop_da"] == size
    assert r.summary["delivered_bytes_by_link_class"] == {"reconfigurable_optical": size}


@pytest.mark.parametrize("arch", ["duo", "segr"])
def test_classes_add_up_to_the_engines_uplink_bytes(arch):
    net = getattr(od.arch, arch)(nodes=8, rho="200us", delta="10us", sample_interval="50us")
    r = net.run(od.workload.poisson("websearch", load=0.4), duration="1ms", seed=2)
    lc = r.summary["arch_metrics"]["link_classes"]
    so = r.summary["link_classes"]["static_optical"]
    ro = r.summary["link_classes"]["reconfigurable_optical"]
    assert lc["static"]["tx_bytes"] > 0 and lc["demand_aware"]["tx_bytes"] > 0
    assert (lc["static"]["tx_bytes"], lc["demand_aware"]["tx_bytes"]) == (so["tx_bytes"], ro["tx_bytes"])
    k_s, k_d = lc["static"]["ports_per_tor"], lc["demand_aware"]["ports_per_tor"]
    assert (k_s, k_d) == (2, 6)
    assert lc["static"]["utilisation"] == pytest.approx(so["utilisation"])
    assert lc["demand_aware"]["utilisation"] == pytest.approx(ro["utilisation"])
    # the raw utilisation u is over all 8 uplinks: the classes weighted by their ports
    am = r.summary["arch_metrics"]
    assert (k_s * so["utilisation"] + k_d * ro["utilisation"]) / 8 == pytest.approx(am["link_utilisation"]["u"])
    assert lc["demand_aware"]["tx_bytes"] == am["da_link_bytes"]["da"]


def test_no_da_classes_without_per_port_counters():
    net = od.arch.duo(nodes=8, rho="200us", delta="10us", sample_interval="0us")
    r = net.run(od.workload.poisson("websearch", load=0.2), duration="300us", seed=1)
    assert "link_classes" not in r.summary["arch_metrics"]


def _path_kind(net, s, t):
    """The kind of every s -> t route of the routing (one-hop DA, mixed, static only), if
    all of its equal-length routes are of one kind (else None), and whether they use DA
    links only."""
    b, da, static = net.b, net.da, net.static
    kinds = set()

    def walk(v, used):
        if v == t:
            kinds.add(("static_only" if not any(used) else "one_hop_da" if len(used) == 1 else "multi_hop_mixed",
                       len(used) > 1 and all(used)))
            return
        for p in sorted({int(p) for src, d, p in net._rows[v].tolist() if d == t and src in (-1, s)}):
            walk(int(static[p, v]) if p < b else int(da[p - b, v]), used + [p >= b])

    walk(s, [])
    return kinds.pop() if len(kinds) == 1 else None


def test_path_split_is_exact_against_the_routes(monkeypatch):
    # DB(2,3) with one DA switch whose links at t = 0 are shortcuts (a fixed matching in
    # place of Greedy-DA's empty-demand answer); rho longer than the run: they stay
    fixed = np.array([[5, 2, 7, 4, 1, 6, 3, 0]])
    monkeypatch.setattr(debruijn, "greedy_da", lambda *a, **k: fixed.copy())
    net = od.arch.duo(nodes=8, uplinks=3, hosts_per_tor=1, rho="1s", delta="0us", sample_interval="0us")
    assert (net.da == fixed).all()
    want = {"one_hop_da": 0, "multi_hop_mixed": 0, "static_only": 0, "multi_hop_da_only": 0}
    flows, k = [], 0
    for s in range(8):
        for t in range(8):
            kind = _path_kind(net, s, t) if s != t else None
            if kind is None:
                continue
            size = 20_000 + 1_000 * k
            k += 1
            flows.append([f"{5 * k}us", s, t, size])
            want[kind[0]] += size
            want["multi_hop_da_only"] += size if kind[1] else 0
    assert all(want[k] > 0 for k in ("one_hop_da", "multi_hop_mixed", "static_only")), want
    r = net.run(od.workload.flows(flows), duration="5ms", seed=1)
    assert r.summary["flows"]["completed"] == len(flows)
    am = r.summary["arch_metrics"]
    got = am["path_bytes"]
    assert {k: got[k] for k in want} == want and got["intra_rack"] == 0
    total = sum(want[k] for k in ("one_hop_da", "multi_hop_mixed", "static_only"))
    for k in ("one_hop_da", "multi_hop_mixed", "static_only"):
        assert am[f"{k}_share"] == want[k] / total
    assert am["one_hop_da_share"] + am["multi_hop_mixed_share"] + am["static_only_share"] == pytest.approx(1.0)


def test_segr_packets_whose_port_changes_on_the_host_link_are_forwarded_by_the_new_tables():
    """A packet's ToR port is chosen when its host admits it; Greedy-DA may reconfigure that
    port while the packet crosses its host link. The ToR then forwards it by the tables in
    force (``rerouted_at_tor``), so SEGR's delivered payload never crosses a DA link on a
    multi-hop path — before, one such packet took its old DA port to a ToR that was no
    longer its destination (seed 5 here: a mixed share of 5.1e-5)."""
    net = od.arch.get("segr").make(nodes=8, hosts_per_tor=2, rho="1ms")
    r = net.run(od.workload.poisson("websearch", load=0.6), duration="6ms", seed=5)
    s, am = r.summary, r.summary["arch_metrics"]
    assert am["rerouted_at_tor"] > 0
    assert am["multi_hop_mixed_share"] == 0.0
    assert am["one_hop_da_share"] + am["static_only_share"] == pytest.approx(1.0)
    b, p = s["bytes"], s["packets"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"] and b["dropped"] == 0
    assert p["sent"] == p["delivered"] + sum(p["dropped"].values()) + p["trimmed"] + p["in_flight"]
