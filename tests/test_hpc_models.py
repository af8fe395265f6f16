"""The analytic models of the HPC study (Teh et al., JOCN 2022): the Moore bound by its
definition, Table 1's formulas against brute-force counts of the built topologies
(switches, endpoints, diameter by breadth-first search), Table 2, power and cost, and the
controller benchmark."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

import opendcn as od
from opendcn.fabrics import hpc
from opendcn.models import hpc as m


def moore_by_count(k: int, d: int) -> int:
    """Nodes within distance d of a root when every node has k neighbours and no two
    paths meet: the root, k at distance 1, k(k-1)^(i-1) at distance i."""
    return 1 + sum(k * (k - 1) ** (i - 1) for i in range(1, d + 1))


@pytest.mark.parametrize("k,d", [(2, 3), (3, 1), (3, 2), (4, 2), (7, 2), (16, 3), (32, 3)])
def test_moore_bound_is_its_definition(k, d):
    assert m.moore_bound(k, d) == moore_by_count(k, d)


def test_moore_bound_is_met_by_the_petersen_and_complete_graphs():
    for g, k, d in ((nx.petersen_graph(), 3, 2), (nx.complete_graph(8), 7, 1)):
        assert max(dict(g.degree()).values()) == k and nx.diameter(g) == d
        assert m.moore_bound(k, d) == g.number_of_nodes()
    with pytest.raises(od.ConfigError):
        m.moore_bound(1, 2)


def _sources(w: hpc.Wiring, k: int) -> np.ndarray | None:
    """Every ToR of a wiring with at most 700 ToRs; otherwise a seeded sample of 32 ToRs
    (the BFS from them gives a lower bound of the diameter, which must already reach the
    formula; the wirings are regular enough that every ToR sees the same)."""
    tors = w.tors
    if len(tors) <= 700:
        return None
    return np.random.default_rng(1).choice(tors, size=32, replace=False)


@pytest.mark.parametrize("k", [32, 64])
def test_table1_against_built_wirings(k):
    t = m.table1_exact(k)
    h = k // 2
    pods = hpc.leaf_spine_pods(k)     # DF+, and PRN-2L with one circuit per pod pair
    builds = {
        "PRN-2L": (pods, h * h + 1),
        "DF+": (pods, 0),
        "PRN-M": (hpc.prn_mesh(k), None),
        "FT3": (hpc.fattree(k), 0),
        "DF": (hpc.dragonfly(k), 0),
        "TRN-3D": (hpc.trn3d(k), max(hpc.trn3d_dims(k))),
        "TRN-Flat": (hpc.kautz(h) if k == 32 else None, None),
    }
    seen = set()
    for name, (w, ocs) in builds.items():
        if w is None:
            continue
        if id(w) in seen:
            assert ocs == t[name].ocs_radix, name
            continue
        seen.add(id(w))
        row = t[name]
        assert w.switches == row.switches, name
        assert w.endpoints == row.endpoints, name
        if name == "PRN-M":
            ocs = len(set(w.groups.tolist()))
        if name == "TRN-Flat":
            ocs = w.switches          # one OCS port per ToR per uplink: the radix is the ToR count
        assert ocs == row.ocs_radix, name
        # every switch uses at most its radix: k/2 host ports plus its links (a directed
        # circuit uses the sending port of one uplink and the receiving port of another)
        ports = np.bincount(w.links[:, 0], minlength=w.switches) if w.directed else w.degree()
        assert (ports + w.hosts <= k).all(), name
        assert hpc.diameter(w, _sources(w, k)) == row.diameter, name


def test_table1_trn_flat_at_k64_by_sampled_bfs():
    w = hpc.kautz(32)
    row = m.table1(64)["TRN-Flat"]
    assert (w.switches, w.endpoints) == (row.switches, row.endpoints)
    assert (np.bincount(w.links[:, 0]) == 32).all() and (np.bincount(w.links[:, 1]) == 32).all()
    assert hpc.diameter(w, np.random.default_rng(2).choice(w.switches, 24, replace=False)) == 3


@pytest.mark.parametrize("k", [32, 64])
def test_table1_printed_rows_match_the_integer_constructions(k):
    printed, exact = m.table1(k), m.table1_exact(k)
    for name in ("PRN-2L", "PRN-M", "TRN-Flat", "FT3", "DF", "DF+"):
        assert printed[name] == exact[name], name
    # TRN-3D: k/6 + 1 per dimension is a fraction; the integer split is within one ToR per dimension
    x = printed["TRN-3D"].ocs_radix
    assert abs(float(x) - exact["TRN-3D"].ocs_radix) < 1
    assert math.isclose(float(printed["TRN-3D"].switches), float(x) ** 3)


@pytest.mark.parametrize("k", [32, 64])
def test_exp_row_is_the_directed_moore_bound_beyond_any_undirected_diameter_3_graph(k):
    d = k // 2
    row = m.table1(k)["EXP"]
    assert row.switches == sum(d ** i for i in range(4))
    assert row.endpoints == d * row.switches
    # more nodes than the (undirected) Moore bound allows at diameter 3: a built expander of
    # that size cannot reach diameter 3
    assert row.switches > m.moore_bound(d, 3)


def test_exp_row_size_cannot_be_built_with_diameter_3():
    d = 4                                                    # k = 8
    n = m.table1(8)["EXP"].switches
    w = hpc.expander(n, d, 4, seed=1)
    assert w.switches == n and w.endpoints == m.table1(8)["EXP"].endpoints
    assert hpc.diameter(w) > 3


def _nx_diameter(net: od.Network, tors: int) -> int:
    g = nx.DiGraph()
    for c in net.circuits:
        g.add_edge(c.n1, c.n2)
        if not c.directed:
            g.add_edge(c.n2, c.n1)
    return max(nx.single_source_shortest_path_length(g, s)[t] for s in range(tors) for t in range(tors))


@pytest.mark.parametrize("name,kw,row", [
    ("fattree", {"nodes": 32}, "FT3"),
    ("dfplus", {"nodes": 68}, "DF+"),
    ("prn", {"nodes": 68}, "PRN-2L"),
    ("prn", {"nodes": 21, "intra": "mesh", "pods": 7}, "PRN-M"),
])
def test_table1_against_the_built_architectures_at_k8(name, kw, row):
    """The architectures themselves, built at Table 1's size for k = 8: switch nodes,
    endpoints and diameter (networkx BFS over the deployed circuits)."""
    net = getattr(od.arch, name)(radix=8, **kw)
    r = m.table1(8)[row]
    assert net.total_nodes == r.switches
    assert net.config.endpoints == r.endpoints
    assert _nx_diameter(net, net.config.nodes) == r.diameter
    if name == "prn":
        assert net.arch_metrics["ocs_radix"] == r.ocs_radix


def test_table1_trn_flat_the_built_trn_realises_a_kautz_configuration():
    """TRN-Flat at k = 8: 80 ToRs with 4 OCS uplinks each; the OCSes can set up the Kautz
    digraph K(4, 3), whose diameter is Table 1's 3."""
    r = m.table1(8)["TRN-Flat"]
    net = od.arch.trn(radix=8, nodes=r.switches, overprovision=1)
    assert net.total_nodes == r.switches == r.ocs_radix and net.config.endpoints == r.endpoints
    w = hpc.kautz(4)
    used = np.zeros(w.switches, np.int64)
    circuits = []
    for a, b in w.links:
        circuits.append(od.Circuit(int(a), int(used[a]), int(b), int(used[a]), None, True))
        used[a] += 1
    # uplink u of every ToR sends on OCS u: its arcs must form a permutation per uplink
    per_uplink = {}
    for c in circuits:
        per_uplink.setdefault(c.p1, []).append(c.n2)
    if all(len(set(v)) == len(v) for v in per_uplink.values()):
        net.deploy_topo(circuits)
        assert _nx_diameter(net, r.switches) == 3
    else:   # the arcs by out-port are not permutations: decompose by König instead
        adj = np.zeros((w.switches, w.switches), np.int64)
        np.add.at(adj, (w.links[:, 0], w.links[:, 1]), 1)
        perms = hpc.permutations(adj)
        net.deploy_topo([od.Circuit(i, u, int(perms[u, i]), u, None, True)
                         for u in range(4) for i in range(w.switches)])
        assert _nx_diameter(net, r.switches) == 3


def test_table2_minimum_ocs_radix():
    t = m.table2(32)
    assert t["TRN-3D"] == (8, 19, 40)
    assert t["PRN-2L"] == (32, 391, 3907)
    assert t["TRN-Flat"] == (512, 6250, 62500)
    for name, v in t.items():
        assert list(v) == sorted(v), name


def test_power_and_cost_models():
    inv = m.inventory("TRN-Flat", 8192)
    assert inv == {"eps": 512, "transceivers": 8192, "ocs_ports": 8192}
    assert m.power_w(inv) == pytest.approx(512 * 136 + 8192 * 2.2 + math.ceil(8192 / 320) * 90)
    assert m.cost_usd(inv, 1.5) == pytest.approx(512 * 17285 + 8192 * 555 + 8192 * 1.5 * 17285 / 32)
    rows = m.scales_table()
    for scale in m.SCALES:
        by = {r["design"]: r for r in rows if r["scale"] == scale}
        # the paper's trends: TRN about twice as power- and cost-efficient as PRN; fat trees cost most
        assert 1.8 < by["PRN-2L"]["power_kw"] / by["TRN-Flat"]["power_kw"] < 2.6
        assert 1.6 < by["PRN-2L"]["cost_musd_d1"] / by["TRN-Flat"]["cost_musd_d1"] < 2.6
        assert by["FT"]["cost_musd_d1"] == max(r["cost_musd_d1"] for r in by.values())
    with pytest.raises(od.ConfigError):
        m.inventory("torus", 100)


def test_controller_benchmark_rows():
    rows = m.controller_benchmark(tor_counts=(16, 32), pod_counts=(4,), repeats=2)
    assert [(r["method"].split()[0], r["units"]) for r in rows] == [
        ("max-weight", 16), ("stable", 16), ("max-weight", 32), ("stable", 32), ("throughput", 4)]
    assert all(r["mean_s"] > 0 for r in rows)
    assert rows[-1]["servers"] == 4 * 256


def test_models_cli_prints_tables_and_rejects_a_bad_radix():
    from typer.testing import CliRunner

    from opendcn.cli import app

    r = CliRunner().invoke(app, ["models", "hpc", "--no-bench", "--json"])
    assert r.exit_code == 0, r.output
    import json
    doc = json.loads(r.output)
    assert doc["table1"]["32"]["PRN-2L"]["switches"] == "8224"
    assert doc["table2"]["TRN-3D"] == {"small": 8, "medium": 19, "large": 40}
    bad = CliRunner().invoke(app, ["models", "hpc", "--radix", "7", "--no-bench"])
    assert bad.exit_code == 2 and "--radix" in bad.output


def test_max_weight_matching_is_the_optimum_by_enumeration():
    rng = np.random.default_rng(3)
    for n in (3, 5, 6):
        w = rng.integers(0, 50, (n, n)).astype(float)
        best = max(sum(w[i, p[i]] for i in range(n)) for p in itertools.permutations(range(n))
                   if all(p[i] != i for i in range(n)))
        mt = hpc.max_weight_matching(w, rng=np.random.default_rng(n))
        assert sorted(mt.tolist()) == list(range(n)) and all(mt[i] != i for i in range(n))
        assert sum(w[i, mt[i]] for i in range(n)) == best
