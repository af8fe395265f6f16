"""Duo's link classes in ``arch_metrics["link_classes"]``: the ToR uplinks split into the
static de Bruijn ports and the demand-aware (DA) ports from the per-port transmit counters,
checked against packet arithmetic at a tiny size and against the engine's own total."""

from __future__ import annotations

import math

import pytest

import opendcn as od

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
    assert lc["static"]["tx_bytes"] + lc["demand_aware"]["tx_bytes"] == eng["static_optical"]["tx_bytes"]
    assert lc["host"] == eng["host"]


@pytest.mark.parametrize("arch", ["duo", "segr"])
def test_classes_add_up_to_the_engines_uplink_bytes(arch):
    net = getattr(od.arch, arch)(nodes=8, rho="200us", delta="10us", sample_interval="50us")
    r = net.run(od.workload.poisson("websearch", load=0.4), duration="1ms", seed=2)
    lc = r.summary["arch_metrics"]["link_classes"]
    eng = r.summary["link_classes"]["static_optical"]
    assert lc["static"]["tx_bytes"] > 0 and lc["demand_aware"]["tx_bytes"] > 0
    assert lc["static"]["tx_bytes"] + lc["demand_aware"]["tx_bytes"] == eng["tx_bytes"]
    # the engine's utilisation is over all 8 uplinks; the classes' weighted by their ports
    k_s, k_d = lc["static"]["ports_per_tor"], lc["demand_aware"]["ports_per_tor"]
    assert (k_s, k_d) == (2, 6)
    assert (k_s * lc["static"]["utilisation"] + k_d * lc["demand_aware"]["utilisation"]) / 8 == \
        pytest.approx(eng["utilisation"])
    assert lc["demand_aware"]["tx_bytes"] == r.summary["arch_metrics"]["da_link_bytes"]["da"]


def test_no_da_classes_without_per_port_counters():
    net = od.arch.duo(nodes=8, rho="200us", delta="10us", sample_interval="0us")
    r = net.run(od.workload.poisson("websearch", load=0.2), duration="300us", seed=1)
    assert "link_classes" not in r.summary["arch_metrics"]
