"""Admission control (OpenOptics' per-hop ADM) and flow dependencies on the packet engine,
checked with exact oracles on tiny networks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opendcn as od
from opendcn import workload as W
from opendcn.openoptics import OpticalRouting as R
from opendcn.openoptics import Toolbox
from opendcn.network.timeflow import Circuit, Entry, Hop
from opendcn.network.timeflow import Path as OdPath

US = 1_000_000          # ps
SER = 800_000           # 1000 B at 10 Gb/s
PROP = 500_000


# --------------------------------------------------------------------- admission control
def _adm_net(adm: bool, *, source: bool = False) -> od.Network:
    """Four nodes, two ports each, three slices (9, 9 and 5 us; 1 us guardband; 1000 B
    packets at 10 Gb/s take 0.8 us, so slices 0 and 1 carry 10 packets, slice 2 five).
    Slice 0: nodes 0 and 3 both send into node 1 (its ports 0 and 1); slice 1: node 1's
    port 0 reaches node 2; slice 2: its port 1 does. Node 1 routes packets for node 2
    that arrived in slice 0 by port 0 in slice 1, those of slices 1 and 2 by port 1 in
    slice 2. Every port buffers 10 packets."""
    cfg = od.Config(nodes=4, uplinks=2, link_rate="10Gbps", slice="9us", guardband="1us", propagation="500ns",
                    mtu=1000, header=0, buffer=10_000, sample_interval="1us")
    n = od.Network(cfg, admission_control=adm)
    n.deploy_topo([Circuit(0, 0, 1, 0, 0), Circuit(3, 0, 1, 1, 0), Circuit(1, 0, 2, 0, 1), Circuit(1, 1, 2, 1, 2)],
                  slice_durations=["9us", "9us", "5us"])
    if source:
        n.deploy_routing([OdPath(0, 2, None, (Hop(0, 0, 0), Hop(1, 0, 1))),
                          OdPath(3, 2, None, (Hop(3, 0, 0), Hop(1, 0, 1)))], lookup="source")
    else:
        n.deploy_routing({0: [Entry(None, None, 2, 0, 0)], 3: [Entry(None, None, 2, 0, 0)],
                          1: [Entry(0, None, 2, 1, 0), Entry(1, None, 2, 2, 1), Entry(2, None, 2, 2, 1)]})
    return n


def _run(net: od.Network, sizes: tuple[int, int]) -> od.Result:
    return net.run(W.flows([(0, 0, 2, sizes[0]), (0, 3, 2, sizes[1])]), duration="100us")


def _ledgers_exact(s: dict) -> None:
    b, p = s["bytes"], s["packets"]
    assert s["invariants"]["ok"], s["invariants"]["errors"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    assert p["sent"] == p["delivered"] + sum(p["dropped"].values()) + p["trimmed"] + p["in_flight"]
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}


def _port_tx(r: od.Result, node: int, port: int) -> int:
    t = r.timeseries.to_pydict()
    return sum(v for n, q, v in zip(t["node"], t["port"], t["tx_bytes"]) if (n, q) == (node, port))


def test_a_full_slice_sends_the_packet_by_the_next_slices_entry():
    # 15 packets reach node 1 in slice 0, all routed to slice 1, which carries 10 (and
    # port 0 buffers 10): without admission control the last 5 overflow port 0's buffer;
    # with it they take the entry of arrival slice 1 (port 1, slice 2, which carries 5)
    off = _run(_adm_net(False), (10_000, 5_000))
    s = off.summary
    _ledgers_exact(s)
    assert (s["bytes"]["delivered"], s["packets"]["dropped"]["buffer_overflow"]) == (10_000, 5)
    assert "adm_fail" not in s["packets"]["dropped"] and "admission_control" not in s
    assert _port_tx(off, 1, 1) == 0

    on = _run(_adm_net(True), (10_000, 5_000))
    s = on.summary
    _ledgers_exact(s)
    assert (s["bytes"]["delivered"], s["bytes"]["dropped"]) == (15_000, 0)
    assert s["admission_control"] == {"applies": True, "deferred_packets": 5, "adm_fail_packets": 0}
    assert s["packets"]["dropped"]["adm_fail"] == 0
    assert (_port_tx(on, 1, 0), _port_tx(on, 1, 1)) == (10_000, 5_000)
    # slice 1 (9-18 us) is up from 10 us: ten packets, the last arriving at 10 + 9 x 0.8 +
    # 0.8 + 0.5 us; slice 2 (18-23 us) is up from 19 us: the fifth deferred packet arrives
    # at 19 + 4 x 0.8 + 0.8 + 0.5 us
    fin = sorted(on.flows["finish_ps"].to_pylist())
    assert fin == [10 * US + 9 * SER + SER + PROP, 19 * US + 4 * SER + SER + PROP]


def test_a_packet_that_fits_no_slice_of_the_cycle_is_dropped_as_adm_fail():
    # 20 packets: 10 go in slice 1, 5 are deferred to slice 2, the last 5 find slices 1
    # and 2 (the entries of arrival slices 1 and 2) full: adm_fail
    on = _run(_adm_net(True), (10_000, 10_000))
    s = on.summary
    _ledgers_exact(s)
    assert (s["bytes"]["delivered"], s["bytes"]["dropped"]) == (15_000, 5_000)
    assert s["packets"]["dropped"]["adm_fail"] == 5 and s["packets"]["dropped"]["buffer_overflow"] == 0
    assert s["drops"]["adm_fail"] == 5_000
    assert s["admission_control"] == {"applies": True, "deferred_packets": 5, "adm_fail_packets": 5}
    off = _run(_adm_net(False), (10_000, 10_000)).summary
    assert (off["bytes"]["delivered"], off["packets"]["dropped"]["buffer_overflow"]) == (10_000, 10)


def test_admission_control_is_deterministic():
    a = _run(_adm_net(True), (10_000, 10_000)).summary
    b = _run(_adm_net(True), (10_000, 10_000)).summary
    assert a["trace_hash"] == b["trace_hash"] and a["packets"] == b["packets"]


def test_source_routes_are_not_subject_to_admission_control():
    off = _run(_adm_net(False, source=True), (10_000, 5_000)).summary
    on = _run(_adm_net(True, source=True), (10_000, 5_000)).summary
    _ledgers_exact(on)
    assert on["trace_hash"] == off["trace_hash"] and on["bytes"] == off["bytes"]
    assert on["admission_control"] == {"applies": False, "deferred_packets": 0, "adm_fail_packets": 0}
    assert on["packets"]["dropped"]["buffer_overflow"] == 5


def test_a_source_node_waits_instead_of_dropping():
    # node 0 alone sends 15 packets to node 2 over three 9 us slices: port 0 reaches node 2
    # in slice 0, port 1 in slice 2; packets arriving in slices 0 and 1 go by port 0 in
    # slice 0, those of slice 2 by port 1 in slice 2. Slice 0 carries 10 packets.
    cfg = od.Config(nodes=3, uplinks=2, link_rate="10Gbps", slice="9us", guardband="1us", propagation="500ns",
                    mtu=1000, header=0, buffer=100_000, sample_interval=0)
    res = {}
    for adm in (False, True):
        n = od.Network(cfg, admission_control=adm)
        n.deploy_topo([Circuit(0, 0, 2, 0, 0), Circuit(0, 1, 2, 1, 2)])
        n.deploy_routing({0: [Entry(0, None, 2, 0, 0), Entry(1, None, 2, 0, 0), Entry(2, None, 2, 2, 1)]})
        r = n.run(W.flows([(0, 0, 2, 15_000)]), duration="100us")
        _ledgers_exact(r.summary)
        assert r.summary["bytes"]["delivered"] == 15_000 and r.summary["bytes"]["dropped"] == 0
        res[adm] = (r.flows["finish_ps"][0].as_py(), r.summary.get("admission_control"))
    # without: the last five wait at the source until slice 0 has passed, then take slice
    # 0's next occurrence (27-36 us, up from 28 us)
    assert res[False] == (28 * US + 4 * SER + SER + PROP, None)
    # with: the source takes the entry of arrival slice 2 at once (18-27 us, up from 19 us)
    assert res[True] == (19 * US + 4 * SER + SER + PROP, {"applies": True, "deferred_packets": 5,
                                                          "adm_fail_packets": 0})


def test_admission_control_takes_a_bool():
    n = _adm_net(True)
    n.admission_control = "yes"
    with pytest.raises(od.ConfigError, match="admission_control"):
        _run(n, (1000, 1000))


def _cli(*args: object) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "opendcn"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "opendcn.cli"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=300)


def test_rotornet_offers_admission_control(tmp_path):
    a = od.arch.get("rotornet")
    s = a.make(nodes=8, uplinks=2, admission_control=True).run(W.poisson("hadoop", 0.5), "100us").summary
    _ledgers_exact(s)
    assert s["admission_control"]["applies"] and "adm_fail" in s["packets"]["dropped"]
    with pytest.raises(od.ConfigError, match="admission-control"):
        a.make(nodes=8, routing="vlb", tables=True, lookup="source", admission_control=True)
    ok = _cli("run", "rotornet", "--nodes", 8, "--uplinks", 2, "--admission-control", "--duration", "50us",
              "--out", tmp_path / "r")
    assert ok.returncode == 0, ok.stderr
    assert '"admission_control"' in (tmp_path / "r" / "summary.json").read_text()
    bad = _cli("run", "rotornet", "--nodes", 8, "--tables", "--lookup", "source", "--admission-control",
               "--duration", "50us")
    assert bad.returncode == 2 and "--admission-control" in bad.stderr


def test_ucmp_defers_a_packet_its_full_slice_refuses():
    """OpenOptics §5.2: the response to a full calendar queue is "deferring the packet to
    a later time slice (HOHO; UCMP)": with admission control UCMP takes a later slice's
    decision within its class, and its packets keep to the hop bound."""
    net = od.arch.rotornet(nodes=16, uplinks=4, hosts_per_node=4, slice="300us", routing="ucmp", max_hop=3,
                           shared_buffer="64MB", admission_control=True)
    s = net.run(W.poisson("hadoop", 0.5), "1ms", seed=1).summary
    _ledgers_exact(s)
    assert s["admission_control"]["applies"] and s["admission_control"]["deferred_packets"] > 0
    assert max(int(h) for h, b in s["delivered_bytes_by_hops"].items() if b) <= 3 + 1


def test_the_openoptics_flag_maps_to_admission_control():
    # two ToRs joined in both slices; 25 datagrams of 1000 B (1054 B on the wire, 8.432 us
    # at 1 Gb/s) from host 0 arrive at its ToR 1 us apart from 11.08 us: slice 0 (up
    # 1-100 us) carries the first ten; with admission control the next eleven take the
    # entry of arrival slice 1 (up 101-200 us), the last four fit nowhere (adm_fail)
    ser, hop = 1054 * 8 * 1000, 1054 * 8 * 10 + 1_000_000          # 1 Gb/s uplink; 100 Gb/s + 1 us host link
    t0 = 10 * US + hop
    first = sum(1 for k in range(25) if t0 + (k + 1) * ser <= 100 * US)
    second = sum(1 for k in range(25) if 101 * US + (k + 1) * ser <= 200 * US)
    assert (first, second) == (10, 11)
    got = {}
    for adm in (False, True):
        net = Toolbox.BaseNetwork("adm", nb_node=2, backend="ns3", time_slice_duration_us=100, guardband_us=1,
                                  quiet=True, ocs_tor_link_bw_gbps=1, tor_host_link_bw_gbps=100,
                                  simulation_stop_s=0.01, admission_control=adm)
        assert net.deploy_topo([[0, 0, 1, 0, 0], [1, 0, 1, 0, 0]])
        assert net.deploy_routing(R.routing_direct(net.get_topo()), routing_mode="Per-hop")
        f = net.udp_traffic().flow(0, 1, num_packets=25, interval_s=1e-6, start_s=10e-6,
                                   packet_size_bytes=1000).install()
        net.start()
        st = f[0].stats()
        assert net.result is not None and net.result.summary["invariants"]["ok"]
        arrive = sorted(int(t) for t in net._sent.finish if t >= 0)
        got[adm] = (st.rx_packets, st.lost_packets, [int(t // (100 * US)) for t in arrive])
        assert ("admission_control" in net.result.summary) == adm
    assert got[False][:2] == (25, 0) and all(s % 2 == 0 for s in got[False][2])
    assert got[True][:2] == (first + second, 25 - first - second)
    assert got[True][2] == [0] * first + [1] * second


def test_the_openoptics_flag_warns_with_source_routing():
    net = Toolbox.BaseNetwork("adm", nb_node=2, backend="ns3", time_slice_duration_us=100, guardband_us=1,
                              quiet=True, simulation_stop_s=0.001, admission_control=True)
    net.deploy_topo([[0, 0, 1, 0, 0], [1, 0, 1, 0, 0]])
    net.deploy_routing(R.routing_direct(net.get_topo()), routing_mode="Source")
    net.udp_traffic().flow(0, 1, num_packets=1, start_s=1e-5).install()
    with pytest.warns(RuntimeWarning, match="admission_control"):
        net.start()


# --------------------------------------------------------------------- flow dependencies
def _pair(routing: str = "direct", **kw) -> od.Network:
    cfg = od.Config(nodes=2, uplinks=1, link_rate="10Gbps", propagation="500ns", mtu=1000, header=0,
                    sample_interval=0, **kw)
    n = od.Network(cfg)
    n.deploy_topo([Circuit(0, 0, 1, 0)])
    n.deploy_routing(od.routing.ecmp(n.circuits) if routing == "ecmp" else routing)
    return n


def test_a_two_step_chain_finishes_after_both_transfers_and_the_gap():
    # an idle link: a flow of k 1000 B packets takes k x 0.8 us + 0.5 us
    r = _pair().run(W.flows([(0, 0, 1, 10_000), (0, 1, 0, 5_000, 0, "2us")]), duration="100us")
    t1, t2, gap = 10 * SER + PROP, 5 * SER + PROP, 2 * US
    assert r.flows["start_ps"].to_pylist() == [0, t1 + gap]
    assert r.flows["finish_ps"].to_pylist() == [t1, t1 + gap + t2]
    assert r.flows["fct_ps"].to_pylist() == [t1, t2]
    s = r.summary
    _ledgers_exact(s)
    assert s["flows"] == {"started": 2, "completed": 2, "dependent": 1, "not_started": 0}


def test_a_flow_waits_for_its_last_dependency_and_its_own_start():
    # flow 2 waits for 0 and 1 (1 finishes last); flow 3 waits for 0 but not before 50 us
    r = _pair().run(W.flows([(0, 0, 1, 10_000), (0, 1, 0, 20_000), (0, 0, 1, 1_000, [0, 1]),
                             ("50us", 1, 0, 1_000, [0])]), duration="100us")
    st, fin = r.flows["start_ps"].to_pylist(), r.flows["finish_ps"].to_pylist()
    assert fin[:2] == [10 * SER + PROP, 20 * SER + PROP]
    assert st[2] == fin[1] and st[3] == 50 * US
    assert fin[2] == st[2] + SER + PROP and fin[3] == 50 * US + SER + PROP


def test_flows_whose_dependencies_never_finish_are_reported_as_not_started():
    # the admission scenario drops 5 of flow 1's packets: it never finishes
    net = _adm_net(True)
    r = net.run(W.flows([(0, 0, 2, 10_000), (0, 3, 2, 10_000), (0, 2, 0, 1_000, [1]), (0, 2, 3, 1_000, [2])]),
                duration="100us")
    s = r.summary
    _ledgers_exact(s)
    assert s["flows"] == {"started": 2, "completed": 0, "dependent": 2, "not_started": 2}
    assert r.flows["start_ps"].to_pylist()[2:] == [None, None]
    assert r.flows["completed"].to_pylist()[2:] == [False, False]


def test_a_dependency_that_starts_after_the_run_takes_its_dependents_along():
    r = _pair().run(W.flows([(0, 0, 1, 1_000), ("200us", 0, 1, 1_000), (0, 1, 0, 1_000, [1]),
                             (0, 1, 0, 1_000, [0])]), duration="100us")
    assert r.flows["flow_id"].to_pylist() == [0, 1]            # flows 1 and 2 are cut; 3 becomes 1
    assert r.flows["start_ps"].to_pylist() == [0, SER + PROP]
    assert r.summary["flows"]["not_started"] == 0


def test_synchronous_ring_allreduce_on_four_nodes_orders_every_step():
    cfg = od.Config(nodes=4, uplinks=1, link_rate="10Gbps", propagation="500ns", mtu=1000, header=0,
                    sample_interval=0)
    n = od.Network(cfg)
    n.deploy_topo([Circuit(i, 0, (i + 1) % 4, 0, None, True) for i in range(4)])
    n.deploy_routing("direct")
    entries = W.ring_allreduce(range(4), "40KB", sync=True)
    assert len(entries) == 2 * 3 * 4
    r = n.run(W.flows(entries), duration="1ms")
    _ledgers_exact(r.summary)
    st = np.array(r.flows["start_ps"].to_pylist())
    fin = np.array(r.flows["finish_ps"].to_pylist())
    assert r.summary["flows"]["completed"] == 24
    chunk = 10 * SER + PROP                                     # 10 KB per chunk on an idle ring link
    for k in range(6):
        for i in range(4):
            f = k * 4 + i
            assert fin[f] - st[f] == chunk
            if k:
                assert st[f] == fin[(k - 1) * 4 + (i - 1) % 4]     # after its step-(k-1) receive
    assert fin.max() == 6 * chunk
    again = n.run(W.flows(entries), duration="1ms").summary
    assert again["trace_hash"] == r.summary["trace_hash"]
    # the pipelined builder (kept): one flow of 2(n-1) chunks per ring link, all at once
    p = n.run(W.flows(W.ring_allreduce(range(4), "40KB")), duration="1ms")
    assert p.flows["finish_ps"].to_pylist() == [60 * SER + PROP] * 4


def test_coupled_request_response():
    entries = W.request_response(0, [1], 1000, "20us", 2, coupled=True, gap="1us")
    assert entries == [[0, 1, 0, 1000], [0, 0, 1, 1000, [0], 1_000_000],
                       [20_000_000, 1, 0, 1000], [20_000_000, 0, 1, 1000, [2], 1_000_000]]
    r = _pair().run(W.flows(entries), duration="100us")
    st, fin = r.flows["start_ps"].to_pylist(), r.flows["finish_ps"].to_pylist()
    one = SER + PROP
    assert st == [0, one + US, 20 * US, 20 * US + one + US]
    assert fin == [one, 2 * one + US, 20 * US + one, 20 * US + 2 * one + US]


@pytest.mark.parametrize("entries, field, words", [
    ([(0, 0, 1, 10, 0)], "flows[0].after", "itself"),
    ([(0, 0, 1, 10, [1]), (0, 1, 0, 10, 0)], "flows[0].after", "cycle"),
    ([(0, 0, 1, 10), (0, 1, 0, 10, [2]), (0, 0, 1, 10, [3]), (0, 1, 0, 10, 1)], "flows[1].after", "cycle"),
    ([(0, 0, 1, 10, 5)], "flows[0].after", "unknown flow 5"),
    ([(0, 0, 1, 10, "x")], "flows[0].after", "flow id"),
    ([(0, 0, 1, 10, [], "1us")], "flows[0].gap", "after"),
])
def test_bad_dependencies_name_the_flow(entries, field, words):
    with pytest.raises(od.ConfigError) as e:
        W.flows(entries)
    assert e.value.field == field and words in str(e.value)


def test_flow_arrays_check_dependencies_and_keep_their_order():
    fa = W.FlowArrays(np.array([5, 0]), np.array([0, 1]), np.array([1, 0]), np.array([10, 10]),
                      after_ptr=np.array([0, 0, 1]), after_ids=np.array([0]))
    assert fa.start_ps.tolist() == [5, 0] and fa.deps(1) == [0]      # not re-sorted
    bad = W.FlowArrays(np.array([0, 0]), np.array([0, 1]), np.array([1, 0]), np.array([10, 10]),
                       after_ptr=np.array([0, 1, 2]), after_ids=np.array([1, 0]))
    with pytest.raises(od.ConfigError, match="cycle"):
        bad.validate(2)
    both = W.FlowArrays.concat([fa, fa])
    assert both.after_ids.tolist() == [0, 2] and both.after_ptr.tolist() == [0, 0, 1, 1, 2]


def test_dependencies_from_a_csv_file(tmp_path):
    f = tmp_path / "deps.csv"
    f.write_text("start,src,dst,bytes,after,gap\n0,0,1,10KB,,\n0,1,0,5KB,0,2us\n0,0,1,1KB,0;1,\n")
    fa = W.from_file(f).generate(endpoints=2, hosts_per_node=0, rate_bps=10**10, nodes=2, duration_ps=10**8,
                                 seed=1)
    assert [fa.deps(i) for i in range(3)] == [[], [0], [0, 1]] and fa.gap_ps.tolist() == [0, 2 * US, 0]
    f.write_text("start,src,dst,bytes,after\n0,0,1,10KB,1\n0,1,0,5KB,0\n")
    with pytest.raises(od.ConfigError, match="cycle") as e:
        W.from_file(f)
    assert e.value.field.endswith(":2 after")


def test_engines_without_dependencies_refuse_them():
    wl = W.flows([(0, 0, 1, 1000), (0, 1, 0, 1000, 0)])
    with pytest.raises(od.ConfigError, match="packet engine"):
        od.arch.get("negotiator").make(nodes=8).run(wl, "10us")


# --------------------------------------------------------------------- co-flow barriers
class _Given(W.Workload):
    """These flows, whatever the network."""

    def __init__(self, fa: W.FlowArrays):
        self.fa = fa

    def _generate(self, ctx):
        return self.fa


def _coflows() -> W.FlowArrays:
    # A, B: co-flow 0; F: in none; C (gap 2 us), D (not before 20 us): co-flow 1; E: co-flow 2
    return W.FlowArrays(np.array([0, 0, 0, 0, 0, 20 * US]), np.array([0, 1, 1, 0, 0, 1]),
                        np.array([1, 0, 0, 1, 1, 0]), np.array([10_000, 2_000, 1_000, 1_000, 1_000, 1_000]),
                        gap_ps=np.array([0, 0, 0, 2 * US, 0, 0]), coflow=np.array([0, 0, -1, 1, 2, 1]))


def test_a_coflow_starts_when_the_last_flow_of_the_one_before_arrives():
    r = _pair("ecmp").run(_Given(_coflows()), duration="100us")
    _ledgers_exact(r.summary)
    a = 10 * SER + PROP                      # co-flow 0 ends with A (B: 2 x 0.8 + 0.5 us)
    c0 = a + 2 * US                          # C: after the barrier and its gap
    d0 = 20 * US                             # D: after the barrier, not before its start
    e0 = d0 + SER + PROP                     # E: when D, the last of co-flow 1, has arrived
    assert r.flows["start_ps"].to_pylist() == [0, 0, 0, c0, e0, d0]
    assert r.flows["finish_ps"].to_pylist() == [a, 2 * SER + PROP, 3 * SER + PROP, c0 + SER + PROP,
                                                e0 + SER + PROP, d0 + SER + PROP]
    assert r.summary["flows"] == {"started": 6, "completed": 6, "coflows": 3, "dependent": 3, "not_started": 0}
    assert r.summary["trace_hash"] == _pair("ecmp").run(_Given(_coflows()), duration="100us").summary["trace_hash"]
    # the flow-level mode starts the flows at the same times (each alone on its link
    # while it is sent: exact against the packet engine)
    f = od.flowsim.run(_pair("ecmp"), _Given(_coflows()), duration="100us")
    assert f.flows["start_ps"].to_pylist() == r.flows["start_ps"].to_pylist()
    assert f.flows["finish_ps"].to_pylist() == r.flows["finish_ps"].to_pylist()
    assert f.summary["flows"]["coflows"] == 3 and f.summary["flows"]["not_started"] == 0


def test_a_coflow_that_reaches_past_the_end_is_cut_with_every_later_one():
    for run in (lambda w: _pair("ecmp").run(w, duration="15us"), lambda w: od.flowsim.run(_pair("ecmp"), w, duration="15us")):
        r = run(_Given(_coflows()))
        # D starts at 20 us: co-flow 1 is cut whole, and co-flow 2 behind it
        assert r.flows["size_bytes"].to_pylist() == [10_000, 2_000, 1_000]
        assert r.summary["flows"]["completed"] == 3 and r.summary["bytes"]["offered"] == 13_000


def test_unfinished_coflows_hold_the_next_back_in_both_modes():
    # co-flow 1 (C, D) is still sending at the end: co-flow 2 never starts
    for run in (lambda w: _pair("ecmp").run(w, duration="20500ns"),
                lambda w: od.flowsim.run(_pair("ecmp"), w, duration="20500ns")):
        s = run(_Given(_coflows())).summary
        assert s["flows"]["not_started"] == 1 and s["flows"]["started"] == 5
        assert s["bytes"]["offered"] == 15_000


def test_rank_trace_coflows_align_the_poisson_arrivals():
    kw = dict(endpoints=2048, hosts_per_node=16, rate_bps=100 * 10**9, nodes=128, duration_ps=50 * US, seed=3)
    plain = W.rank_trace("amr", 0.3, flow_size="20KB").generate(**kw)
    cf = W.rank_trace("amr", 0.3, flow_size="20KB", coflow_interval="4us").generate(**kw)
    # the same flows, each moved back to the start of its 4-us interval, one co-flow per
    # interval that has flows, numbered in time order
    assert (cf.src == plain.src).all() and (cf.dst == plain.dst).all() and (cf.size == plain.size).all()
    assert (cf.start_ps == plain.start_ps // (4 * US) * (4 * US)).all()
    k = cf.start_ps // (4 * US)
    assert (np.diff(cf.coflow) >= 0).all() and cf.coflow[0] == 0
    assert ((np.diff(cf.coflow) == 1) == (np.diff(k) > 0)).all()
    assert cf.coflow[-1] == len(np.unique(k)) - 1
    assert "co-flows every 4000000 ps" in repr(W.rank_trace("amr", 0.3, coflow_interval="4us"))


def test_rank_trace_aligned_arrivals_without_barriers_and_a_fixed_length_trace():
    """The authors' setting: co-flow arrivals aligned, no barrier between co-flows (each
    starts at kT whatever the network has finished); ``arrivals_until`` ends the trace
    inside a longer run."""
    kw = dict(endpoints=2048, hosts_per_node=16, rate_bps=100 * 10**9, nodes=128, duration_ps=50 * US, seed=3)
    barrier = W.rank_trace("amr", 0.3, flow_size="20KB", coflow_interval="4us").generate(**kw)
    open_ = W.rank_trace("amr", 0.3, flow_size="20KB", coflow_interval="4us", coflow_barrier=False).generate(**kw)
    assert (open_.start_ps == barrier.start_ps).all() and (open_.src == barrier.src).all()
    assert open_.coflow is None and barrier.coflow is not None
    short = W.rank_trace("amr", 0.3, flow_size="20KB", arrivals_until="20us").generate(**kw)
    plain = W.rank_trace("amr", 0.3, flow_size="20KB").generate(**kw)
    assert 0 < len(short) < len(plain) and short.start_ps.max() < 20 * US
    assert (short.start_ps == plain.start_ps[:len(short)]).all()
    assert "without barriers" in repr(W.rank_trace("amr", 0.3, coflow_interval="auto", coflow_barrier=False))
    with pytest.raises(od.ConfigError, match="arrivals_until"):
        W.rank_trace("amr", 0.3, arrivals_until="0us")
    with pytest.raises(od.ConfigError, match="coflow_barrier"):
        W.rank_trace("amr", 0.3, coflow_barrier="no")


@pytest.mark.parametrize("make, field, words", [
    (lambda: W.rank_trace("amr", 0.3, coflow_interval="0us"), "coflow_interval", "positive"),
    (lambda: W.rank_trace("amr", 0.3, coflow_interval="soon"), "coflow_interval", ""),
    (lambda: W.FlowArrays(np.zeros(2), np.array([0, 1]), np.array([1, 0]), np.array([1, 1]),
                          coflow=np.array([0, 2])), "flows.coflow", "co-flow 1 has no flow"),
    (lambda: W.FlowArrays(np.zeros(2), np.array([0, 1]), np.array([1, 0]), np.array([1, 1]),
                          coflow=np.array([0, -2])), "flows[1].coflow", ">= 0"),
    (lambda: W.FlowArrays(np.zeros(2), np.array([0, 1]), np.array([1, 0]), np.array([1, 1]),
                          coflow=np.array([0, 1, 1])), "flows.coflow", "one co-flow id per flow"),
    (lambda: W.FlowArrays(np.zeros(2), np.array([0, 1]), np.array([1, 0]), np.array([1, 1]),
                          after_ptr=np.array([0, 0, 1]), after_ids=np.array([0]), coflow=np.array([0, 1])),
     "flows.coflow", "cannot be combined"),
    (lambda: W.FlowArrays.concat([_coflows(), _coflows()]), "mix", "one chain"),
])
def test_bad_coflows_name_the_field(make, field, words):
    with pytest.raises(od.ConfigError) as e:
        make()
    assert e.value.field == field and words in str(e.value)


def test_engines_without_barriers_refuse_coflows():
    with pytest.raises(od.ConfigError, match="packet engine"):
        od.arch.get("negotiator").make(nodes=8).run(W.rank_trace("amr", 0.3, flow_size="10KB", fold=True,
                                                                 coflow_interval="10us"), "100us")


def _cli(*args: object) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "opendcn"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "opendcn.cli"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, timeout=300)


def test_cli_runs_a_rank_trace_with_coflows_in_both_modes():
    import json

    base = ["run", "trn", "--nodes", "8", "--radix", "8", "--pattern", "trace:amr", "--fold-ranks",
            "--flow-size", "50KB", "--coflow-interval", "5us", "--duration", "100us", "--summary-json", "-"]
    got = {}
    for mode in ("packet", "flow"):
        p = _cli(*base, "--mode", mode)
        assert p.returncode == 0, p.stderr
        s = json.loads(p.stdout)
        got[mode] = s["flows"]
        assert s["invariants"]["ok"] and s["flows"]["coflows"] > 1 and s["flows"]["not_started"] > 0
        assert s["bytes"]["offered"] == s["bytes"]["delivered"] + s["bytes"]["in_flight"]
    # both modes lift the same barriers here (the same co-flows start)
    assert got["packet"]["started"] == got["flow"]["started"]
    assert got["packet"]["coflows"] == got["flow"]["coflows"]


@pytest.mark.parametrize("args, needles", [
    (["--coflow-interval", "5us"], ["--coflow-interval", "5us", "trace:NAME"]),
    (["--fold-ranks"], ["--fold-ranks", "trace:NAME"]),
    (["--pattern", "trace:amr", "--coflow-interval", "-5us"], ["--coflow-interval", "-5us"]),
    (["--pattern", "trace:amr"], ["trace.rank", "1727", "--fold-ranks"]),
    (["--pattern", "trace:nope"], ["trace", "nope"]),
])
def test_cli_rank_trace_errors_name_the_option(args, needles):
    p = _cli("run", "trn", "--nodes", "8", "--radix", "8", "--duration", "10us", *args)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    flat = " ".join(p.stderr.split())
    for n in needles:
        assert n in flat, (n, flat)


def test_auto_coflows_hold_one_flow_per_endpoint_on_average():
    # 64 endpoints at 10 Gb/s, 20 KB flows at load 0.5: a flow per endpoint every
    # 20 KB x 8 / (0.5 x 10 Gb/s) = 32 us
    kw = dict(endpoints=64, hosts_per_node=8, rate_bps=80 * 10**9, nodes=8, duration_ps=3200 * US, seed=2)
    cf = W.rank_trace("amr", 0.5, flow_size="20KB", fold=True, coflow_interval="auto").generate(**kw)
    T = 32 * US
    assert (cf.start_ps % T == 0).all()
    n = cf.coflow.max() + 1
    assert 95 <= n <= 100                       # 100 intervals of 32 us, nearly all with flows
    per = np.bincount(cf.coflow)
    assert 0.9 * 64 <= per.mean() <= 1.05 * 64     # 64 a co-flow less the rank pairs folded onto one host
    assert "one flow per endpoint" in repr(W.rank_trace("amr", 0.5, coflow_interval="auto"))


def test_the_flow_level_mode_runs_dependencies_as_the_packet_engine():
    # flow 2 waits for 0 and 1 (1 arrives last); flow 3 for 0, not before 50 us
    wl = W.flows([(0, 0, 1, 10_000), (0, 1, 0, 20_000), (0, 0, 1, 1_000, [0, 1]), ("50us", 1, 0, 1_000, [0], "2us")])
    p = _pair("ecmp").run(wl, duration="100us")
    f = od.flowsim.run(_pair("ecmp"), wl, duration="100us")
    assert f.flows["start_ps"].to_pylist() == p.flows["start_ps"].to_pylist()
    assert f.flows["finish_ps"].to_pylist() == p.flows["finish_ps"].to_pylist()
    assert f.summary["flows"]["dependent"] == 2 and f.summary["flows"]["not_started"] == 0
