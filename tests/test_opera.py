"""Opera on the packet engine: expander slices of staggered rotors, NDP over multi-hop
slice paths, RotorLB bulk. Tiny sizes (8 ToRs x 4 rotors x 2 hosts) except the
fabric-timing check. The flows column ``hops`` counts ToR-to-ToR hops plus the host
downlink."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opendcn as od

TINY = dict(tors=8, uplinks=4, hosts_per_tor=2)
PS_PER_BYTE = 800          # 10 Gb/s
PROP = 500_000             # 500 ns


def cli(*args: object) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "opendcn"
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=300)


def col(r, name):
    return np.asarray(r.flows[name].fill_null(-1) if r.flows[name].null_count else r.flows[name])


def test_paper_fabric_timing_and_shipped_matchings():
    """Opera's own 108 matchings give 5-hop expander slices; the superslice follows Opera's
    generator: eps = 4 (p + 8 s) + 7 s = 48.8 us, delta = p + s = 1.7 us, r = 10 us."""
    net = od.arch.opera()
    m = net.fabric_metrics
    assert net.matchings_source == "opera"
    assert m["max_path_hops"] == 5
    assert m["eps_ps"] == 48_800_000 and m["delta_ps"] == 1_700_000 and m["reconf_ps"] == 10_000_000
    assert m["superslice_ps"] == 60_500_000
    assert m["cycle_ps"] == 108 * 60_500_000
    assert net.config.endpoints == 648


# starts away from the guardband at each slice start (the first r = 10 us of the run too),
# so that every packet of the flow follows one slice's path
@pytest.mark.parametrize("size,start", [(1000, "13us"), (1436, "60us"), (14_360, "27us"), (30_000, "12us")])
@pytest.mark.parametrize("host_prop", ["0ns", "100ns"])
def test_idle_low_latency_flow_never_waits_for_a_circuit(size, start, host_prop):
    """Exact oracle on an idle network: the NIC serializes all packets back to back and
    they cross host link + `hops` ToR-ToR links + downlink store-and-forward; no wait for a
    circuit at any hop (the slice path is up when the packet gets there)."""
    net = od.arch.opera(**TINY, host_propagation=host_prop)
    r = net.run(od.workload.flows([(start, 0, 15, size)]), duration="2ms")
    s = r.summary
    assert s["flows"] == {"started": 1, "completed": 1}
    hops = int(col(r, "hops")[0]) - 1          # ToR-to-ToR hops
    assert 1 <= hops <= net.fabric_metrics["max_path_hops"]
    npk = -(-size // 1436)
    last = size - (npk - 1) * 1436 + 64
    hp = od.units.parse_time(host_prop, "x")
    s_full, s_last = 1500 * PS_PER_BYTE, last * PS_PER_BYTE
    if npk == 1:
        want = (hops + 2) * s_last + hops * PROP + 2 * hp
    else:  # the last (shorter) packet trails the previous full one at every store-and-forward hop
        want = (npk - 1) * s_full + (hops + 1) * s_full + s_last + hops * PROP + 2 * hp
    assert int(col(r, "fct_ps")[0]) == want
    am = s["arch_metrics"]
    assert am["trims"] == 0 and am["reroutes"] == 0 and am["retransmissions"] == 0
    assert sum(am["ndp_hops_histogram"]) == npk and am["ndp_hops_histogram"][hops] == npk


def test_bulk_uses_only_direct_or_two_hop_paths():
    flows = [(f"{i}us", i % 16, (i * 5 + 3) % 16, 400_000) for i in range(24) if (i % 16) // 2 != ((i * 5 + 3) % 16) // 2]
    net = od.arch.opera(**TINY, cutoff="100KB", stop_when="all-done")
    r = net.run(od.workload.flows(flows), duration="100ms")
    s = r.summary
    assert s["flows"]["completed"] == len(flows)
    assert bool(np.all(col(r, "bulk")))
    hops = col(r, "hops") - 1
    assert hops.min() >= 1 and hops.max() <= 2
    h = s["arch_metrics"]["bulk_hops_histogram"]
    assert h["more"] == 0 and h["direct"] > 0 and h["two_hop"] > 0
    assert s["bytes"]["delivered"] == sum(f[3] for f in flows)
    assert s["arch_metrics"]["ndp_hops_histogram"] == []


def test_a_bulk_packet_takes_a_full_packets_time_on_every_link():
    """RotorLB's packets carry data: each crosses the host uplink, one or two rotor
    circuits and its last host downlink with its payload and header on the wire (they once
    went at a 64-byte control packet's size, 23x too fast)."""
    flows = [("0us", 0, 9, 400_000), ("0us", 2, 13, 400_000)]
    r = od.arch.opera(**TINY, cutoff="100KB", stop_when="all-done").run(od.workload.flows(flows), duration="100ms")
    s = r.summary
    assert s["flows"]["completed"] == 2 and bool(np.all(col(r, "bulk")))
    wire = 800_000 + 64 * 2 * -(-400_000 // 1436)
    lc = s["link_classes"]
    assert lc["reconfigurable_optical"]["tx_bytes"] >= wire
    assert lc["host"]["tx_bytes"] >= wire
    assert s["invariants"]["ok"]


def test_incast_trims_and_every_byte_arrives_exactly_once():
    flows = [("1us", src, 0, 150_000) for src in range(2, 16)]
    r = od.arch.opera(**TINY).run(od.workload.flows(flows), duration="20ms")
    s, am = r.summary, r.summary["arch_metrics"]
    assert am["trims"] > 0 and am["retransmissions"] > 0 and s["packets"]["control"] > 0
    assert s["packets"]["trimmed"] == am["trims"] - am["bounces"]   # every trimmed header reached its receiver
    assert s["flows"]["completed"] == len(flows)
    assert np.all(np.asarray(r.flows["size_bytes"]) == 150_000)
    assert s["bytes"] == {"offered": 14 * 150_000, "delivered": 14 * 150_000, "dropped": 0, "in_flight": 0}
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert s["invariants"]["ok"]


def test_rotorlb_costs_nothing_without_bulk():
    r = od.arch.opera(**TINY).run(od.workload.poisson("websearch", load=0.2), duration="300us")
    am = r.summary["arch_metrics"]
    assert am["bulk_flows"] == 0 and am["rlb_slices"] == 0 and am["rlb_committed_pkts"] == 0
    r = od.arch.opera(**TINY, cutoff="10KB").run(od.workload.flows([("0us", 0, 9, 50_000)]), duration="5ms")
    assert r.summary["arch_metrics"]["rlb_slices"] >= 1


def test_conservation_invariants_and_determinism():
    wl = od.workload.poisson("websearch", load=0.3)
    kw = dict(**TINY, cutoff="1MB")
    a = od.arch.opera(**kw).run(wl, duration="1ms", seed=3).summary
    b = od.arch.opera(**kw).run(wl, duration="1ms", seed=3).summary
    c = od.arch.opera(**kw).run(wl, duration="1ms", seed=4).summary
    for s in (a, c):
        by = s["bytes"]
        assert by["offered"] == by["delivered"] + by["dropped"] + by["in_flight"]
        assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
        assert s["invariants"]["ok"]
    a.pop("wall_s"), b.pop("wall_s")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["trace_hash"] != c["trace_hash"]


def test_htsim_trace_replays_until_ndp_done(tmp_path):
    """The Opera/htsim flow format runs unchanged; --stop-when ndp-done ends the run at the
    last low-latency completion."""
    trace = tmp_path / "flows.htsim"
    trace.write_text("0 9 5000 1000\n3 12 200000 2000\n5 1 60000 2500\n14 2 2000000 4000")
    out = tmp_path / "s.json"
    p = cli("run", "opera", "--tors", 8, "--uplinks", 4, "--hosts-per-tor", 2, "--cutoff", "1MB",
            "--stop-when", "ndp-done", "--flows-file", trace, "--duration", "1s", "--summary-json", out)
    assert p.returncode == 0, p.stderr
    s = json.loads(out.read_text())
    am = s["arch_metrics"]
    assert s["flows"]["started"] == 4 and am["ndp_completed"] == 3 and am["bulk_flows"] == 1
    assert am["stopped_early"] == 1
    assert s["sim_time_s"] < 0.01
    assert am["low_latency_fct_us_percentiles"]["count"] == 3


@pytest.mark.parametrize("args", [
    ["--tors", 8, "--uplinks", 3],
    ["--tors", 3],
    ["--queue", 0],
    ["--matchings", "/nonexistent/matchings.txt"],
    ["--matchings", "opera", "--tors", 12],
    ["--stop-when", "never"],
    ["--initial-window", 0],
    ["--eps", "fast"],
    ["--header-queue", "10B"],
    ["--tors", 7],
    ["--tors", 300],
    ["--header", "0B"],
    ["--mtu", "70000B"],
])
def test_cli_bad_options_exit_2(args):
    p = cli("run", "opera", *args, "--duration", "10us")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "error" in p.stderr


def test_python_bad_options_raise_config_error():
    with pytest.raises(od.ConfigError) as e:
        od.arch.opera(tors=10, uplinks=4)
    assert e.value.field == "--uplinks"
    with pytest.raises(od.ConfigError) as e:
        od.arch.opera(**TINY, transport="ndp<1MB,warp")
    assert e.value.field == "--transport"
    with pytest.raises(od.ConfigError) as e:
        od.arch.opera(**TINY, pull_pacer="switch")
    assert e.value.field == "--pull-pacer"


@pytest.mark.parametrize("pacer", ["host", "flow"])
def test_pull_pacers_and_sender_completion(pacer):
    flows = [("2us", src, 1, 60_000) for src in (4, 6, 9, 12)] + [("3us", 14, 3, 5_000)]
    r = od.arch.opera(**TINY, pull_pacer=pacer).run(od.workload.flows(flows), duration="5ms")
    s = r.summary
    assert s["flows"]["completed"] == len(flows) and s["invariants"]["ok"]
    fct, sfct = col(r, "fct_ps"), col(r, "sender_fct_ps")
    assert np.all(sfct > fct)           # the last ACK reaches the sender after the last byte arrived
    assert s["packets"]["control"] > 0 and s["transport"]["ndp_pull_pacer"] == pacer


def test_paper_size_run_with_shipped_matchings():
    flows = [(f"{3 * i}us", (97 * i) % 648, (389 * i + 55) % 648, 2_000 + 7_919 * i) for i in range(1, 40)]
    r = od.arch.opera().run(od.workload.flows(flows), duration="3ms")
    s = r.summary
    assert s["flows"] == {"started": 39, "completed": 39}
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert max(s["arch_metrics"]["ndp_hops_histogram"] and range(len(s["arch_metrics"]["ndp_hops_histogram"]))) <= 5


# ---------------------------------------------------------------------------------------
# time series and monitoring
# ---------------------------------------------------------------------------------------
INCAST = dict(tors=8, uplinks=4, hosts_per_tor=4)


def _incast(size=30_000):
    """28 senders in the 7 other racks into host 0 (ToR 0, Network port U + 0 = 4)."""
    return od.workload.flows([(f"{1 + h % 3}us", h, 0, size) for h in range(4, 32)])


def _net_rows(r):
    ts = r.timeseries
    return ts.filter(np.asarray(ts["node"]) == -1)


def test_time_series_adds_up_and_buffer_usage():
    net = od.arch.opera(**INCAST, sample_interval="7us")
    r = net.run(_incast(), duration="3ms")
    s, am = r.summary, r.summary["arch_metrics"]
    ts = r.timeseries
    nodes, ports = np.asarray(ts["node"]), np.asarray(ts["port"])
    nw = _net_rows(r)
    t = np.asarray(nw["time_ps"])
    assert len(t) == 3_000_000_000 // 7_000_000 + 1 and t[-1] == 3_000_000_000    # last: end of the run
    # network-wide counters sum to the run's totals
    assert int(np.asarray(nw["delivered_bytes"]).sum()) == s["bytes"]["delivered"] == 28 * 30_000
    assert int(np.asarray(nw["trims"]).sum()) == am["trims"] > 0
    assert int(np.asarray(nw["bounces"]).sum()) == am["bounces"]
    # every port is watched (tiny network): port rows add up to the network rows
    port_rows = ts.filter(nodes >= 0)
    assert port_rows.num_rows == len(t) * 8 * 8
    assert int(np.asarray(port_rows["tx_bytes"]).sum()) == int(np.asarray(nw["tx_bytes"]).sum())
    assert port_rows["trims"].null_count == port_rows.num_rows
    # receiver downlink: tx bytes over samples = every data packet (payload + header) exactly
    # once plus the trimmed headers it forwarded
    bw = net.bw_usage(0, 4)
    assert int(np.asarray(bw["tx_bytes"]).sum()) == 28 * 30_000 + 64 * (28 * 21 + am["trims"] - am["bounces"])
    # its queue fills (incast) but never beyond data queue + header queue
    q = np.asarray(net.buffer_usage(0, 4)["queued_bytes"])
    assert 0 < q.max() <= 8 * 1500 + 8 * 1500
    assert np.asarray(net.buffer_usage(0, 4, interval="70us")["queued_bytes"]).max() == q.max()
    # an idle host port sends nothing
    assert int(np.asarray(net.bw_usage(0, 5)["tx_bytes"]).sum()) == 0
    assert set(zip(nodes[nodes >= 0].tolist(), ports[nodes >= 0].tolist())) == {(n, p) for n in range(8) for p in range(8)}


def test_watch_selects_ports_and_sampling_off_means_no_rows(tmp_path):
    net = od.arch.opera(**INCAST, sample_interval="10us", watch="0:4,3:1")
    r = net.run(_incast(), duration="500us")
    ts = r.timeseries
    got = set(zip(np.asarray(ts["node"]).tolist(), np.asarray(ts["port"]).tolist()))
    assert got == {(0, 4), (3, 1), (-1, -1)}
    with pytest.raises(od.ConfigError, match="not sampled"):
        net.buffer_usage(1, 1)
    net.watch([(2, 0)])
    net.run(_incast(), duration="500us")
    assert len(net.buffer_usage(2, 0)) == 50
    off = od.arch.opera(**INCAST, sample_interval="0s")
    r0 = off.run(_incast(), duration="500us")
    assert r0.timeseries.num_rows == 0
    assert r0.summary["trace_hash"] == r.summary["trace_hash"]    # sampling never changes the run
    with pytest.raises(od.ConfigError):
        od.arch.opera(**INCAST, watch="0:9")
    with pytest.raises(od.ConfigError):
        od.arch.opera(**INCAST, sample_interval="-1us")


# ---------------------------------------------------------------------------------------
# OpenOptics services
# ---------------------------------------------------------------------------------------
def test_congestion_detection_only_counts():
    base = od.arch.opera(**INCAST).run(_incast(), duration="3ms")
    det = od.arch.opera(**INCAST, congestion_detection=True).run(_incast(), duration="3ms")
    sb, sd = base.summary, det.summary
    assert sd["services"]["congestion_events"] == sb["arch_metrics"]["trims"] > 0
    assert sb["services"]["congestion_events"] == 0 and sd["services"]["pushback_messages"] == 0
    assert sd["trace_hash"] == sb["trace_hash"]
    assert sd["arch_metrics"] == sb["arch_metrics"]
    assert np.array_equal(col(det, "fct_ps"), col(base, "fct_ps"))


def test_pushback_reduces_trims_under_incast():
    base = od.arch.opera(**INCAST).run(_incast(), duration="3ms").summary
    r = od.arch.opera(**INCAST, pushback=True).run(_incast(), duration="3ms")
    s, sv = r.summary, r.summary["services"]
    assert sv["pushback"] and sv["congestion_detection"]           # push-back needs detection
    assert s["flows"]["completed"] == 28 and s["bytes"]["delivered"] == 28 * 30_000 and s["invariants"]["ok"]
    assert sv["pushback_messages"] > 0 and sv["paused_attempts"] > 0
    # push-back holds sources only for the rest of a superslice; NDP's pull clocking already
    # limits what they send after the first window, so trims stay of the same order
    assert s["arch_metrics"]["trims"] <= 1.5 * base["arch_metrics"]["trims"]
    nw = _net_rows(r)
    assert int(np.asarray(nw["pushback_messages"]).sum()) == sv["pushback_messages"]


@pytest.mark.parametrize("kw,field", [
    (dict(flow_pausing=True), "flow_pausing"),
    (dict(buffer_offload=2), "buffer_offload"),
    (dict(queue_estimation="eqo"), "queue_estimation"),
    (dict(elephant_threshold="1MB"), "elephant_threshold"),
])
def test_services_without_meaning_on_opera_are_rejected(kw, field):
    with pytest.raises(od.ConfigError) as e:
        od.arch.opera(**TINY, **kw)
    assert e.value.field == "--" + field.replace("_", "-")
    net = od.arch.opera(**TINY, congestion_detection=True)
    with pytest.raises(od.ConfigError):
        net.services(**kw)
    assert net.services()["congestion_detection"] is True and net.services()["flow_pausing"] is False


def test_cli_pushback_writes_time_series(tmp_path):
    import pyarrow.parquet as pq

    p = cli("run", "opera", *sum(([f"--{k.replace('_', '-')}", v] for k, v in INCAST.items()), []),
            "--pushback", "--pattern", "incast", "--incast-degree", 12, "--incast-size", "20KB", "--load", "0.2",
            "--sample-interval", "20us", "--duration", "400us", "--out", tmp_path / "r")
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["services"]["pushback"] is True and s["services"]["congestion_events"] == s["arch_metrics"]["trims"] > 0
    assert s["services"]["pushback_messages"] > 0
    ts = pq.read_table(tmp_path / "r" / "timeseries.parquet")
    assert ts.num_rows == 20 * (8 * 8 + 1)
    bad = cli("run", "opera", "--tors", 8, "--flow-pausing", "--duration", "10us")
    assert bad.returncode == 2 and "--flow-pausing" in bad.stderr


# ---------------------------------------------------------------------------------------
# the paper's own trace, at the paper's configuration
# ---------------------------------------------------------------------------------------
#: sender-side FCT p50 / p99 (us) of flows < 100 KB on dm10_first50ms until every NDP flow
#: is done, measured on the bespoke Opera engine this design replaced (same fabric, same
#: trace) and on Opera's own simulator (opera-sim, which prints sender-side FCTs)
BESPOKE_DM10 = (7.4, 19.2)
OPERA_SIM_DM10 = (8.1, 20.2)


def test_paper_trace_small_flows_match_the_replaced_engine_and_opera_sim():
    from importlib import resources

    trace = resources.files("opendcn").joinpath("data/opera/traces/dm10_first50ms.htsim")
    r = od.arch.opera(stop_when="ndp-done").run(od.workload.from_file(str(trace)), duration="2s")
    s, am = r.summary, r.summary["arch_metrics"]
    assert am["stopped_early"] == 1 and am["ndp_completed"] == am["ndp_flows"] == 479
    assert s["bytes"]["dropped"] == 0 and s["invariants"]["ok"]
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    size = np.asarray(r.flows["size_bytes"])
    sfct = col(r, "sender_fct_ps")
    small = sfct[(size < 100_000) & (sfct >= 0)] / 1e6
    assert len(small) == 404
    p50, p99 = np.percentile(small, [50, 99])
    for (ref50, ref99), tol in ((BESPOKE_DM10, 0.10), (OPERA_SIM_DM10, 0.15)):
        assert abs(p50 - ref50) <= tol * ref50 and abs(p99 - ref99) <= tol * ref99, (p50, p99, ref50, ref99)
    # bulk crossed at most two rotor hops
    assert am["bulk_hops_histogram"]["more"] == 0 and am["bulk_hops_histogram"]["two_hop"] > 0


# ---------------------------------------------------------------------------------------
# k shortest paths per pair (opera-sim's k-shortest path file, one drawn per packet)
# ---------------------------------------------------------------------------------------

def _slice0_paths(net):
    """{(a, b): paths} of slice 0 for every ToR pair, read from a started run's engine."""
    net.start(od.workload.flows([("13us", 0, 15, 1000)]), "1ms")
    sim = net._live.sim
    out = {(a, b): sim.expander_paths(a, b, 0) for a in range(net.tors) for b in range(net.tors) if a != b}
    assert all(sim.expander_path(a, b, 0) == ps[0] for (a, b), ps in out.items())
    net._live = None
    return out


def test_paths_per_pair_are_distinct_shortest_paths_and_one_is_the_old_path():
    one = _slice0_paths(od.arch.opera(**TINY))
    five = _slice0_paths(od.arch.opera(**TINY, paths=5))
    assert all(len(ps) == 1 for ps in one.values())
    multi = 0
    for pair, ps in five.items():
        assert 1 <= len(ps) <= 5
        assert ps[0] == one[pair][0]                              # path 0: the one path of --paths 1
        assert len({tuple(p) for p in ps}) == len(ps)             # distinct
        assert {len(p) for p in ps} == {len(one[pair][0])}        # all as short as the shortest
        multi += len(ps) > 1
    assert multi > 0
    with pytest.raises(od.ConfigError):
        od.arch.opera(**TINY, paths=0)
    with pytest.raises(od.ConfigError):
        od.arch.opera(**TINY, paths=17)


def test_paths_per_pair_spread_one_flows_packets_over_its_paths():
    """opera-sim draws a path per packet at the source: a flow between two racks with two
    shortest paths in slice 0 leaves its source ToR on both first hops; with one path per
    pair on one uplink only. The run stays exact and reproducible."""
    five = _slice0_paths(od.arch.opera(**TINY, paths=5))
    (a, b), ps = next(((pair, ps) for pair, ps in sorted(five.items()) if len({p[0] for p in ps}) > 1))
    hpr, ports = TINY["hosts_per_tor"], TINY["uplinks"] + TINY["hosts_per_tor"]
    flow = od.workload.flows([("13us", a * hpr, b * hpr, 20 * 1436)])   # 20 packets, well inside slice 0
    used = {}
    for k in (1, 5):
        net = od.arch.opera(**TINY, paths=k, sample_interval="5us", watch=",".join(f"{a}:{u}" for u in range(4)))
        r = net.run(flow, duration="200us")
        s = r.summary
        assert s["flows"]["completed"] == 1 and s["bytes"]["dropped"] == 0 and s["invariants"]["ok"]
        assert s["arch_metrics"]["reroutes"] == 0
        sent = {u: int(np.asarray(net.bw_usage(a, u)["tx_bytes"]).sum()) for u in range(4)}
        used[k] = {u for u, v in sent.items() if v >= 1500}
        again = od.arch.opera(**TINY, paths=k).run(flow, duration="200us").summary
        assert again["trace_hash"] == s["trace_hash"]
    first = {p[0] - a * ports for p in ps}
    assert len(used[1]) == 1 and used[1] <= first
    assert used[5] == first


@pytest.mark.parametrize("size,start", [(1437, "13us"), (14_361, "27us")])
def test_padded_segments_cost_what_full_packets_cost(size, start):
    """opera-sim's packet sizes (``NdpSrc::set_flowsize``): with ``pad_segments`` every
    packet of a flow of at least one MSS is a full MSS on the wire, so on an idle network a
    flow finishes exactly as one of whole packets (the oracle of the test above with the
    last packet full), while its payload counts as sent."""
    npk = -(-size // 1436)
    net = od.arch.opera(**TINY, pad_segments=True)
    r = net.run(od.workload.flows([(start, 0, 15, size)]), duration="2ms")
    s = r.summary
    assert s["flows"] == {"started": 1, "completed": 1} and s["bytes"]["delivered"] == size
    hops = int(col(r, "hops")[0]) - 1
    want = (npk - 1) * 1500 * PS_PER_BYTE + (hops + 2) * 1500 * PS_PER_BYTE + hops * PROP
    assert int(col(r, "fct_ps")[0]) == want
    assert s["transport"]["pad_segments"] is True
    plain = od.arch.opera(**TINY).run(od.workload.flows([(start, 0, 15, size)]), duration="2ms")
    assert int(col(plain, "fct_ps")[0]) < want


def test_bulk_slots_make_a_low_latency_packet_wait_for_the_slot_in_service():
    """opera-sim's NIC serves RotorLB in full-packet slots while its host holds committed
    bulk packets (a dummy packet when none is due): a small flow sent then waits for the
    slot in service, at most one full-packet time; without bulk slots it does not."""
    small = [("1ms", 0, 15, 1000), ("1.3ms", 0, 15, 1000), ("1.7ms", 0, 15, 1000)]
    bulk = [("0us", 0, 9, 30_000_000)]

    def sfct(flows, **kw):
        r = od.arch.opera(**TINY, **kw).run(od.workload.flows(flows), duration="2ms")
        assert r.summary["invariants"]["ok"]
        d = r.flows.to_pydict()
        return [t for t, n in zip(d["sender_fct_ps"], d["size_bytes"]) if n == 1000]

    alone = sfct(small)
    slots = sfct(bulk + small, bulk_slots=True)
    assert len(alone) == len(slots) == 3
    waits = [b - a for a, b in zip(alone, slots)]
    assert all(0 < w <= 1500 * PS_PER_BYTE for w in waits), waits
    assert sfct(small, bulk_slots=True) == alone          # no bulk held: no slot
