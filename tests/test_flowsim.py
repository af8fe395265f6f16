"""The flow-level mode (opendcn.network.flowsim): the max-min solver against hand-computed
allocations and its invariants, the fractional routing against the tables, exact flow
times, reconfiguration, the packet engine as the reference, bad input."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

import opendcn as od
from opendcn.network import flowsim
from opendcn.cli import app
from opendcn.errors import ConfigError, InvariantError

SMALL = dict(nodes=8, radix=8, hosts_per_rack=2)


# ------------------------------------------------------------------- the max-min solver
def test_three_flows_over_two_links():
    # a on link 0, b on both, c on link 1: link 1 (4) is the bottleneck of b and c
    r = flowsim.maxmin(sp.csr_matrix([[1, 0], [1, 1], [0, 1]]), [10.0, 4.0])
    assert r.tolist() == [8.0, 2.0, 2.0]


def test_parking_lot():
    # one long flow over three links, one short flow on each link
    A = sp.csr_matrix([[1, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert flowsim.maxmin(A, [1.0, 1.0, 1.0]).tolist() == [0.5, 0.5, 0.5, 0.5]
    # unequal links: the long flow is held at 0.5 by link 0, the short ones take the rest
    assert flowsim.maxmin(A, [1.0, 2.0, 3.0]).tolist() == [0.5, 0.5, 1.5, 2.5]


def test_a_split_flow_fills_each_path_with_its_share():
    # flow 0 split evenly over links 0 and 1, flow 1 on link 0: link 0 fills at 1.5 t = 1
    r = flowsim.maxmin(sp.csr_matrix([[0.5, 0.5], [1.0, 0.0]]), [1.0, 1.0])
    assert r == pytest.approx([2 / 3, 2 / 3], rel=1e-12)
    # alone, the split flow gets both links: 0.5 t = 1 on each
    assert flowsim.maxmin(sp.csr_matrix([[0.5, 0.5]]), [1.0, 1.0]).tolist() == [2.0]


def test_blocked_flows_and_down_links_get_nothing():
    A = sp.csr_matrix([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 1]])
    r = flowsim.maxmin(A, [3.0, 0.0, 10.0], blocked=np.array([False, False, False, True]))
    assert r.tolist() == [1.5, 0.0, 1.5, 0.0]


@pytest.mark.parametrize("seed", range(5))
def test_maxmin_invariants_on_random_instances(seed):
    rng = np.random.default_rng(seed)
    F, L = 60, 25
    A = sp.random(F, L, density=0.12, random_state=seed, format="csr")
    A.data[:] = rng.choice([1.0, 0.5, 0.25], size=A.nnz)
    for f in np.flatnonzero(np.diff(A.indptr) == 0):       # every flow crosses a link
        A = A.tolil()
        A[f, rng.integers(L)] = 1.0
        A = A.tocsr()
    cap = rng.uniform(1, 10, L)
    r = flowsim.maxmin(A, cap)
    load = flowsim.link_loads(A, r)
    assert (load <= cap * (1 + 1e-9)).all()                      # no link over capacity
    sat = load >= cap * (1 - 1e-9)
    Ad = A.toarray()
    for f in range(F):                                           # every flow is bottlenecked
        on = np.flatnonzero(Ad[f] > 0)
        assert any(sat[lk] and r[f] >= r[Ad[:, lk] > 0].max() * (1 - 1e-9) for lk in on), f


@pytest.mark.parametrize("seed", range(6))
def test_native_rates_equal_the_reference_bit_for_bit(seed):
    """The native solver (opendcn_core::maxmin) against the numpy progressive filling on
    random routing matrices (split shares, shared up/downlinks, dead links, blocked
    flows): the same rates to the last bit."""
    from opendcn import _core

    rng = np.random.default_rng(seed)
    pairs, P, E = 30, 40, 12
    R = sp.random(pairs, P, density=0.15, random_state=seed, format="csr")
    R.data[:] = rng.choice([1.0, 0.5, 0.25, 1 / 3], size=R.nnz)
    cap = np.concatenate([rng.uniform(1, 10, P), rng.uniform(5, 20, 2 * E)])
    cap[rng.integers(P, size=2)] = 0.0
    F = 80
    pair = rng.integers(pairs, size=F).astype(np.int64)
    src, dst = rng.integers(E, size=F), rng.integers(E, size=F)
    blocked = rng.random(F) < 0.1
    up, down = (P + src).astype(np.int64), (P + E + dst).astype(np.int64)
    got, over = _core.flow_rates(pair, up, down, blocked, R.indptr.astype(np.int64), R.indices.astype(np.int32),
                                 R.data.astype(np.float64), cap)
    cnt = (R.indptr[pair + 1] - R.indptr[pair]).astype(np.int64)
    rows = np.repeat(np.arange(F), cnt + 2)
    cols = np.concatenate([np.concatenate([R.indices[R.indptr[p]:R.indptr[p + 1]], [u, d]])
                           for p, u, d in zip(pair, up, down)]).astype(np.int64)
    vals = np.concatenate([np.concatenate([R.data[R.indptr[p]:R.indptr[p + 1]], [1.0, 1.0]]) for p in pair])
    want = flowsim._maxmin(rows, cols, vals, F, cap.copy(), blocked.copy())
    assert got.tobytes() == want.tobytes()
    assert not over
    assert (got[blocked] == 0).all() and (got[~blocked] > 0).any()


@pytest.mark.parametrize("arch", ["prn", "fattree", "dfplus"])
def test_native_state_graph_equals_the_reference(arch, monkeypatch):
    """The routing matrix's state graph from the native kernel and from numpy: the same
    states, edges and order (so the same routing matrix, bit for bit)."""
    from opendcn import _core

    got: list = []

    def spy(key, gport, up, nxt, N, T, pid):
        ref = real(key, gport, up, nxt, N, T, pid)
        nat = _core.state_graph(key, gport, np.ascontiguousarray(up, bool), nxt.astype(np.int64), N, T, pid,
                                flowsim.MAX_HOPS)
        got.append((ref, nat))
        return ref

    real = flowsim._state_graph
    monkeypatch.setattr(flowsim, "NATIVE", False)
    monkeypatch.setattr(flowsim, "_state_graph", spy)
    net = getattr(od.arch, arch)(**dict(SMALL, nodes=16))
    flowsim.routing_matrix(net)
    assert got
    for ref, nat in got:
        assert ref[5] == nat[5] is False
        assert len(ref[0]) > 16 * 15 and len(ref[2]) > len(ref[0])
        for a, b in zip(ref[:5], nat[:5]):
            assert np.array_equal(np.asarray(a, np.int64), b)


@pytest.mark.parametrize("arch", ["prn", "fattree", "dfplus", "expander_hyb"])
def test_native_routing_matrix_equals_the_reference(arch, monkeypatch):
    """The routing matrix, reachability and path lengths from the native state graph and
    share propagation and from numpy: bit for bit, with and without failed ports."""
    net = getattr(od.arch, arch)(**dict(SMALL, nodes=16))
    rng = np.random.default_rng(3)
    for down in (None, rng.random(net.n_ports) < 0.1):
        nat = flowsim.routing_paths(net, down)
        with monkeypatch.context() as m:
            m.setattr(flowsim, "NATIVE", False)
            ref = flowsim.routing_paths(net, down)
        for a, b in ((nat[0], ref[0]), (nat[2], ref[2])):
            assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            assert a.data.tobytes() == b.data.tobytes()
        assert np.array_equal(nat[1], ref[1])
        assert nat[0].nnz > 16 * 15 and nat[1].sum() > 0
        if down is not None:
            # nothing is routed over a port that is down
            assert not down[nat[0].indices[nat[0].data > 0]].any()


def test_the_engines_csr_conversion_equals_scipys():
    """The routing matrix's CSR conversion: scipy's arrays exactly (index types too) when a
    (row, column) repeats at most twice; beyond that the repeats are summed in input order
    (scipy's order is unspecified), so equal up to rounding."""
    from scipy import sparse

    from opendcn import _core

    rng = np.random.default_rng(5)
    n, m = 50, 40
    rows = rng.integers(0, n, 3000)
    cols = rng.integers(0, m, 3000)
    vals = rng.random(3000)
    k = rows * m + cols
    _, first, counts = np.unique(k, return_index=True, return_counts=True)
    twice = np.isin(k, k[first[counts <= 2]])            # the entries of pairs seen at most twice
    for sel, exact in ((twice, True), (np.ones(len(k), bool), False)):
        a = sparse.csr_matrix((vals[sel], (rows[sel], cols[sel])), shape=(n, m))
        ip, ix, d = _core.coo_to_csr(rows[sel], cols[sel], vals[sel], n)
        b = sparse.csr_matrix((d, ix, ip), shape=(n, m))
        assert (a.indptr.dtype, a.indices.dtype) == (b.indptr.dtype, b.indices.dtype)
        assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
        if exact:
            assert a.data.tobytes() == b.data.tobytes()
        else:
            assert counts.max() >= 3 and np.allclose(a.data, b.data, rtol=1e-12, atol=0)
    # repeats summed left to right
    ip, ix, d = _core.coo_to_csr(np.array([1, 1, 1]), np.array([2, 2, 2]), np.array([0.1, 0.2, 0.3]), 2)
    assert ip.tolist() == [0, 0, 1] and ix.tolist() == [2] and d.tolist() == [(0.1 + 0.2) + 0.3]
    with pytest.raises(ValueError, match="row 2 outside"):
        _core.coo_to_csr(np.array([2]), np.array([0]), np.array([1.0]), 2)


@pytest.mark.parametrize("arch,kw", [("prn", {}), ("trn", {"period": "20us"})])
def test_runs_with_the_native_solver_match_the_reference(arch, kw, monkeypatch):
    wl = od.workload.poisson("hadoop", 0.5, "uniform")
    a = flowsim.run(arch, wl, duration="150us", seed=2, **kw, **dict(SMALL, nodes=16)).summary
    monkeypatch.setattr(flowsim, "NATIVE", False)
    b = flowsim.run(arch, wl, duration="150us", seed=2, **kw, **dict(SMALL, nodes=16)).summary
    assert a["trace_hash"] == b["trace_hash"] and a["bytes"] == b["bytes"]
    assert a["flowsim"]["rate_computations"] > 5


def test_maxmin_rejects_a_flow_on_no_link():
    with pytest.raises(ConfigError) as e:
        flowsim.maxmin(sp.csr_matrix([[1.0, 0.0], [0.0, 0.0]]), [1.0, 1.0])
    assert e.value.field == "A"
    with pytest.raises(ConfigError) as e:
        flowsim.maxmin(sp.csr_matrix([[1.0]]), [-1.0])
    assert e.value.field == "cap"


# ------------------------------------------------------------------- routes
def _conservation(net, R, reach, down=None):
    """Every reachable pair sends a share 1 out of its source rack and receives 1 at its
    destination; at every other node what comes in goes out; nothing on a down port."""
    N, T = net.config.nodes, net.total_nodes
    peer = net._peer[0]
    pnode = np.searchsorted(net.port_offset, np.arange(net.n_ports), side="right") - 1
    R = R.tocsr()
    for s in range(N):
        for d in range(N):
            if s == d:
                continue
            row = R.getrow(s * N + d)
            if not reach[s * N + d]:
                assert row.nnz == 0
                continue
            if down is not None:
                assert not down[row.indices].any()
            out = np.zeros(T)
            inn = np.zeros(T)
            np.add.at(out, pnode[row.indices], row.data)
            np.add.at(inn, pnode[peer[row.indices]], row.data)
            net_out = out - inn
            assert net_out[s] == pytest.approx(1.0)
            assert net_out[d] == pytest.approx(-1.0)
            others = np.ones(T, bool)
            others[[s, d]] = False
            assert np.abs(net_out[others]).max() < 1e-9


@pytest.mark.parametrize("arch,kw", [("trn", SMALL), ("prn", dict(SMALL, nodes=16)), ("dfplus", dict(SMALL, nodes=16)),
                                     ("fattree", dict(SMALL, nodes=16)), ("prn", dict(SMALL, nodes=12, intra="mesh")),
                                     ("expander_hyb", dict(SMALL, nodes=16, overprovision=1, ecmp_fraction=1.0))])
def test_routes_conserve_each_pair(arch, kw):
    net = getattr(od.arch, arch)(**kw)
    R, reach = flowsim.routing_matrix(net)
    assert reach.reshape(net.config.nodes, -1)[~np.eye(net.config.nodes, dtype=bool)].all()
    _conservation(net, R, reach)


def test_fat_tree_spreads_over_every_core_path():
    # 16 racks of radix 8: 4 pods of 4 edges; between pods 4 aggregation x 4 cores
    net = od.arch.fattree(**dict(SMALL, nodes=16))
    R, _ = flowsim.routing_matrix(net)
    row = R.getrow(0 * 16 + 15)
    assert sorted(set(np.round(row.data, 12))) == [1 / 16, 1 / 4]   # 4 aggregation, 16 core links
    assert row.sum() == pytest.approx(4.0)                          # four switch hops


def test_down_ports_are_avoided_and_dead_ends_pruned():
    net = od.arch.trn(**SMALL)
    R0, _ = flowsim.routing_matrix(net)
    # take down every uplink of rack 0 but one
    down = np.zeros(net.n_ports, bool)
    off = int(net.port_offset[0])
    down[off:off + net.config.uplinks - 1] = True
    R, reach = flowsim.routing_matrix(net, down)
    _conservation(net, R, reach, down)
    last = off + net.config.uplinks - 1
    q = int(net.peer_nodes()[0, net.config.uplinks - 1])
    # the last uplink's peer is still reached, over that uplink only; pairs elsewhere are
    # untouched where their routes never cross rack 0's uplinks
    assert reach[q] and R.getrow(q).indices.tolist()[0] == last
    assert (R.getrow(q).toarray()[0, off:off + net.config.uplinks] == [0] * (net.config.uplinks - 1) + [1]).all()
    untouched = [s * 8 + d for s in range(1, 8) for d in range(8) if s != d
                 and not R0.getrow(s * 8 + d).toarray()[0, off:off + net.config.uplinks].any()]
    assert untouched and reach[untouched].all()
    assert (R[untouched] != R0[untouched]).nnz == 0
    # with every uplink of rack 0 down, rack 0 reaches nobody and nobody's routes cross it
    down[off:off + net.config.uplinks] = True
    R, reach = flowsim.routing_matrix(net, down)
    assert not reach[1:8].any() and reach[8 + 2]
    _conservation(net, R, reach, down)
    assert R0.nnz > 0


def test_time_sliced_networks_are_refused():
    net = od.arch.rotornet(nodes=8)
    with pytest.raises(ConfigError) as e:
        flowsim.run(net, od.workload.poisson("hadoop", 0.1), duration="10us")
    assert e.value.field == "network"


# ------------------------------------------------------------------- runs: exact flow times
def test_a_flow_alone_runs_at_the_host_link_rate():
    """Fat tree of 16 racks (4 pods): between pods a route has 4 switch links. A flow's
    last packets arrive 740 ns after its last byte leaves: 2 x 10 ns host and 4 x 30 ns
    switch propagation, 5 store-and-forward packet times of 120 ns."""
    wl = od.workload.flows([("0us", 0, 31, 1_000_000), ("1us", 0, 31, 1_000_000), ("1us", 2, 9, 500_000),
                            ("2us", 4, 9, 500_000)])
    r = flowsim.run(od.arch.fattree(**dict(SMALL, nodes=16)), wl, duration="1ms")
    f = r.flows
    fin = np.asarray(f["finish_ps"]).tolist()
    lat = 740_000
    # flow 0 alone at 100 Gb/s: 80 us; flow 1 (same hosts) waits behind it: 80 us more;
    # flows 2 and 3 share host 9's downlink from 2 us: 1 us alone (12.5 KB), then 50 Gb/s
    assert fin[0] == 80_000_000 + lat and fin[1] == 160_000_000 + lat
    assert fin[2] == 80_000_000 + lat
    assert fin[3] == 81_000_000 + lat
    s = r.summary
    assert s["mode"] == "flow" and s["flows"] == {"started": 4, "completed": 4}
    assert s["bytes"]["offered"] == s["bytes"]["delivered"] == 3_000_000
    assert s["flow_throughput_gbps"]["count"] == 4


def test_a_lone_flow_fills_its_path_in_the_time_series_and_counts_its_hops():
    """One 1-MB flow between pods of a 16-rack fat tree: every byte crosses 4 switch
    links (spread over the paths) and the ToR port down to its host, 125 KB per 10-us
    sample at 100 Gb/s; 4 fabric hops + 1 down to the host (as the packet engine
    counts them)."""
    wl = od.workload.flows([("0us", 0, 31, 1_000_000)])
    net = od.arch.fattree(**dict(SMALL, nodes=16))
    r = flowsim.run(net, wl, duration="100us")
    assert np.asarray(r.flows["hops"]).tolist() == [5]
    assert r.summary["delivered_bytes_by_hops"] == {"5": 1_000_000}
    ts = r.timeseries
    node, port = np.asarray(ts["node"]), np.asarray(ts["port"])
    tx, t = np.asarray(ts["tx_bytes"]), np.asarray(ts["time_ps"])
    links = ts.filter(pa.compute.greater_equal(ts["node"], 0))
    per_port: dict[tuple[int, int], int] = {}
    for n_, p_, b in zip(links["node"].to_pylist(), links["port"].to_pylist(), links["tx_bytes"].to_pylist()):
        if b:
            per_port[(n_, p_)] = per_port.get((n_, p_), 0) + b
    # 4 switch links per byte (spread over the fat tree's paths) + the host's port
    assert sum(per_port.values()) == 5_000_000
    down = int(net.user_ports[15]) + 1                      # rack 15's port down to host 31
    assert per_port[(15, down)] == 1_000_000
    assert [v for k, v in per_port.items() if k != (15, down)] and max(
        v for k, v in per_port.items() if k != (15, down)) < 1_000_000
    # samples every 10 us; 125 000 B per full sample while the flow runs (80 us)
    first = (node == 15) & (port == down)
    assert t[first].tolist() == list(range(10_000_000, 100_000_001, 10_000_000))
    assert tx[first].tolist() == [125_000] * 8 + [0, 0]
    net_rows = node == -1
    assert int(np.asarray(ts["delivered_bytes"].fill_null(0))[net_rows].sum()) == 1_000_000
    assert r.summary["flowsim"]["sample_interval_ps"] == 10_000_000


@pytest.mark.parametrize("arch", ["fattree", "dfplus"])
def test_delivered_bytes_by_hops_agree_with_the_packet_engine(arch):
    """Same routes, same flows: the share of the delivered bytes at each hop count is
    the packet engine's within 2 points (the fluid model splits per-packet multipath
    exactly, the packets only on average)."""
    wl = od.workload.poisson("hadoop", 0.3)
    rf = flowsim.run(arch, wl, duration="300us", seed=1, **SMALL)
    rp = od.arch.get(arch).make(**SMALL).run(wl, duration="300us", seed=1)
    hf, hp = rf.summary["delivered_bytes_by_hops"], rp.summary["delivered_bytes_by_hops"]
    assert set(hf) == set(hp) and len(hf) >= 2
    assert sum(hf.values()) == rf.summary["bytes"]["delivered"]
    for k in hf:
        assert hf[k] / sum(hf.values()) == pytest.approx(hp[k] / sum(hp.values()), abs=0.02)
    ts = rf.timeseries
    net_rows = np.asarray(ts["node"]) == -1
    assert int(np.asarray(ts["delivered_bytes"].fill_null(0))[net_rows].sum()) == rf.summary["bytes"]["delivered"]


def test_long_runs_keep_at_most_max_samples():
    r = flowsim.run("trn", od.workload.poisson("hadoop", 0.1), duration="30ms", seed=1, **SMALL)
    assert r.summary["flowsim"]["sample_interval_ps"] == 15_000_000
    assert int((np.asarray(r.timeseries["node"]) == -1).sum()) == flowsim.MAX_SAMPLES


def test_bytes_conserve_and_links_hold_their_capacity():
    wl = od.workload.poisson(None, 0.6, "uniform", flow_size="300KB")
    r = flowsim.run("prn", wl, duration="300us", seed=3, **dict(SMALL, nodes=16))
    b = r.summary["bytes"]
    assert b["offered"] == b["delivered"] + b["in_flight"] and b["dropped"] == 0
    assert 0 < b["delivered"] < b["offered"]
    assert r.summary["invariants"]["ok"]
    done = np.asarray(r.flows["completed"])
    assert (np.asarray(r.flows["fct_ps"].fill_null(0))[done] >= np.asarray(r.flows["size_bytes"])[done] * 80).all()


def test_runs_are_deterministic_per_seed():
    wl = od.workload.poisson("hadoop", 0.4, "uniform")
    a = flowsim.run("trn", wl, duration="100us", seed=5, period="20us", **SMALL).summary
    b = flowsim.run("trn", wl, duration="100us", seed=5, period="20us", **SMALL).summary
    c = flowsim.run("trn", wl, duration="100us", seed=6, period="20us", **SMALL).summary
    assert a["trace_hash"] == b["trace_hash"] and a["bytes"] == b["bytes"]
    assert a["trace_hash"] != c["trace_hash"]


# ------------------------------------------------------------------- reconfiguration
def test_unchanged_circuits_stay_up_through_reconfigurations():
    """One long flow: the demand-aware controller keeps serving its rack pair, so its
    circuits never change and the flow never waits (80 us per MB) although every
    reconfiguration takes 5 us."""
    wl = od.workload.flows([("0us", 0, 5, 2_000_000)])
    net = od.arch.trn(**SMALL)
    r = flowsim.run(net, wl, duration="1ms", period="10us", reconfiguration_delay="5us")
    # direct circuit: 2 x 10 ns + 30 ns propagation, 2 x 120 ns store and forward
    assert int(np.asarray(r.flows["fct_ps"])[0]) == 160_000_000 + 290_000
    # the period given to the run is the one in force (and the network keeps its own)
    assert r.summary["arch_metrics"]["period_ps"] == 10_000_000 and net.controller.period is None
    # other ToRs' idle uplinks are matched again (ties broken at random), rack 0's never
    assert r.summary["arch_metrics"]["reconfigurations"] > 0
    net_log = [ends for _, ends in net.controller.log]
    assert net_log
    assert not any(node == 0 for ends in net_log for node, _ in ends)


def test_reconfiguration_delay_costs_throughput():
    """TRN-R cycles two matchings; during each delay the changed circuits are down and
    the flows reroute over what is up (or wait). A shorter duty cycle lowers the mean
    flow throughput; every reconfiguration is counted."""
    kw = dict(SMALL, overprovision=1, control="rotor")
    wl = od.workload.poisson(None, 0.5, "uniform", flow_size="200KB")
    full = flowsim.run("trn", wl, duration="400us", period="20us", **kw).summary
    half = flowsim.run("trn", wl, duration="400us", period="20us", duty_cycle=0.5, **kw).summary
    assert full["arch_metrics"]["reconfigurations"] == half["arch_metrics"]["reconfigurations"] == 19
    assert half["arch_metrics"]["duty_cycle"] == 0.5 and half["arch_metrics"]["period_ps"] == 20_000_000
    assert half["flowsim"]["reconfiguration_delay_ps"] == 10_000_000
    assert half["flow_throughput_gbps"]["mean"] < 0.9 * full["flow_throughput_gbps"]["mean"]
    assert half["flowsim"]["routings"] == 1 + 2 * 19 and full["flowsim"]["routings"] == 1 + 19


def test_the_controller_is_shared_with_the_packet_engine():
    """Flow and packet runs configure the same first circuits (same controller, same seed)."""
    wl = od.workload.poisson(None, 0.3, "permutation", flow_size="100KB")
    a, b = od.arch.trn(**SMALL), od.arch.trn(**SMALL)
    a.run(wl, duration="20us", seed=2)
    flowsim.run(b, wl, duration="20us", seed=2)
    assert set(a.circuits) == set(b.circuits)


# ------------------------------------------------------------------- against the packet engine
def _mean_both(rp, rf):
    """Mean flow throughput (Gb/s) of the flows both runs completed."""
    def thr(r):
        done = np.asarray(r.flows["completed"])
        fct = np.asarray(r.flows["fct_ps"].fill_null(1))
        return done, np.asarray(r.flows["size_bytes"]) * 8e3 / np.maximum(fct, 1)
    dp, xp = thr(rp)
    df, xf = thr(rf)
    both = dp & df
    assert both.sum() > 50
    return xp[both].mean(), xf[both].mean()


@pytest.mark.parametrize("pattern,period", [("permutation", None), ("permutation", "100us"), ("permutation", "1ms"),
                                            ("uniform", None), ("uniform", "1ms")])
def test_flow_throughput_matches_the_packet_engine(pattern, period):
    """Average flow throughput (bits / transfer time) of the flow mode within 10 % of the
    packet engine's (lossless credit transport), TRN at 8 racks x 2 hosts, load 0.3. A
    packet run that reconfigures under load may lose packets on a switched circuit (the
    engine does not drain ports yet): the flows both runs completed are compared. (Uniform
    traffic with periods of 100 us or less stalls the packet run: docs/flowsim.md.)"""
    kw = dict(SMALL, **({"period": period} if period else {}))
    wl = od.workload.poisson(None, 0.3, pattern, flow_size="500KB")
    net = od.arch.trn(**kw)
    try:
        rp = net.run(wl, duration="2ms", seed=1)
    except InvariantError:
        rp = net.last_result
    rf = flowsim.run(od.arch.trn(**kw), wl, duration="2ms", seed=1)
    p, f = _mean_both(rp, rf)
    assert f == pytest.approx(p, rel=0.10), (p, f)
    assert flowsim.mean_flow_throughput(rf) == pytest.approx(rf.summary["flow_throughput_gbps"]["mean"])


# ------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw,field,value", [
    ({"period": "-5us"}, "period", "-5us"),
    ({"period": "10us", "duty_cycle": 1.5}, "duty_cycle", 1.5),
    ({"period": "10us", "duty_cycle": 0}, "duty_cycle", 0),
    ({"period": "10us", "reconfiguration_delay": "10us"}, "reconfiguration_delay", "10us"),
    ({"reconfiguration_delay": "-1us"}, "reconfiguration_delay", "-1us"),
    ({"duty_cycle": 0.5}, "duty_cycle", 0.5),
])
def test_bad_timing_of_a_built_network(kw, field, value):
    with pytest.raises(ConfigError) as e:
        flowsim.run(od.arch.trn(**SMALL), od.workload.poisson("hadoop", 0.1), duration="10us", **kw)
    assert e.value.field == field and e.value.value == value


@pytest.mark.parametrize("kw,flag,value", [
    ({"period": "-5us"}, "--period", "-5us"),
    ({"period": "10us", "duty_cycle": 1.5}, "--duty-cycle", 1.5),
])
def test_bad_timing_by_name_names_the_option(kw, flag, value):
    with pytest.raises(ConfigError) as e:
        flowsim.run("trn", od.workload.poisson("hadoop", 0.1), duration="10us", **kw, **SMALL)
    assert e.value.field == flag and e.value.value == value


def test_bad_run_arguments():
    wl = od.workload.poisson("hadoop", 0.1)
    with pytest.raises(ConfigError) as e:
        flowsim.run("nope", wl, duration="10us")
    assert e.value.field == "arch"
    with pytest.raises(ConfigError) as e:
        flowsim.run("trn", wl, duration="-1us", **SMALL)
    assert e.value.field == "duration"
    with pytest.raises(ConfigError) as e:
        flowsim.run(od.arch.fattree(**dict(SMALL, nodes=16)), wl, duration="10us", period="10us")
    assert e.value.field == "period"
    with pytest.raises(ConfigError) as e:
        flowsim.run(od.arch.trn(**SMALL), wl, duration="10us", nodes=8)
    assert e.value.field == "nodes"


# ------------------------------------------------------------------- CLI
def test_cli_flow_mode(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "trn", "--mode", "flow", "--nodes", "8", "--radix", "8",
                                   "--hosts-per-rack", "2", "--period", "50us", "--duration", "200us",
                                   "--summary-json", "-", "--out", str(out)])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["mode"] == "flow" and s["arch"] == "trn" and s["flows"]["completed"] > 0
    assert json.loads((out / "summary.json").read_text())["trace_hash"] == s["trace_hash"]
    assert (out / "flows.parquet").is_file()


@pytest.mark.parametrize("args,flag", [(["--mode", "fluid"], "--mode"),
                                       (["--mode", "flow", "--period", "-5us"], "--period"),
                                       (["--mode", "flow", "--period", "10us", "--duty-cycle", "0"], "--duty-cycle")])
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, args, flag):
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "trn", "--nodes", "8", "--radix", "8", "--duration", "20us",
                                   "--out", str(out), *args])
    assert res.exit_code == 2, res.output
    assert flag in res.output
    assert not out.exists()
