"""Exact analytical oracles of the engine model (OpenOptics Fig. 2/3).

Every expected time below is computed by hand from the engine model documented in
``crates/opendcn-core/src/sim.rs``: integer picoseconds, serialization
``ceil(bytes * 8e12 / rate)``, store-and-forward ports, a packet is sent on a circuit only
if its whole serialization fits in ``[slice start + guardband, slice end)``, and the finish
time is departure + serialization + propagation of each hop. With nodes as endpoints the
first packet enters its egress port at the flow's start; later packets are paced at the
host rate R.

Reference network: 4 nodes, 1 uplink, 1-D round robin, 10 us slices, 200 ns guardband,
500 ns propagation, 100 Gbps. Slices: 0 = {0-1, 2-3}, 1 = {0-2, 1-3}, 2 = {0-3, 1-2}; the
cycle is 30 us.
"""

from __future__ import annotations

import pytest

import opendcn as od

NS = 1_000
US = 1_000_000
SLICE = 10 * US
GB = 200 * NS
PROP = 500 * NS
RATE = 100 * 10**9
CYCLE = 3 * SLICE


def ser(nbytes: int, rate: int = RATE) -> int:
    """Serialization time in ps, rounded up (the engine's rule)."""
    return -(-nbytes * 8 * 10**12 // rate)


# hand-checked constants the oracles below rely on
assert ser(100) == 8 * NS
assert ser(1500) == 120 * NS
assert ser(1000) == 80 * NS


def cfg(**kw) -> od.Config:
    base = dict(nodes=4, uplinks=1, link_rate="100Gbps", slice="10us", guardband="200ns",
                propagation="500ns")
    base.update(kw)
    return od.Config(**base)


def rotor(config: od.Config | None = None, routing: str = "direct") -> od.Network:
    """The reference rotor network with compiled direct routing (or no routing)."""
    net = od.Network(config or cfg())
    rr = od.topology.round_robin(net.config, dimension=1)
    net.deploy_topo(rr)
    if routing == "direct":
        net.deploy_routing(od.routing.direct(rr))
    return net


def run(net: od.Network, flows, duration: str = "200us") -> od.Result:
    result = net.run(od.workload.flows(flows), duration=duration, seed=1)
    assert_sound(result.summary)
    return result


def assert_sound(s: dict) -> None:
    b = s["bytes"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert s["invariants"]["ok"], s["invariants"]["errors"]


def rows(result: od.Result) -> list[dict]:
    return result.flows.to_pylist()


def only(result: od.Result) -> dict:
    (row,) = rows(result)
    assert row["completed"], row
    assert row["fct_ps"] == row["finish_ps"] - row["start_ps"]
    return row


# ---------------------------------------------------------------------------------------
# one packet, direct circuit
# ---------------------------------------------------------------------------------------
def test_round_robin_reference_schedule():
    rr = od.topology.round_robin(cfg(), dimension=1)
    assert [(c.n1, c.n2, c.ts) for c in rr] == [(0, 1, 0), (2, 3, 0), (0, 2, 1), (1, 3, 1),
                                                (0, 3, 2), (1, 2, 2)]


@pytest.mark.parametrize("how", ["entry", "compiled"])
def test_single_packet_waits_for_direct_circuit(how):
    """N0 -> N3 at t=0: the 0-3 circuit is slice 2; the packet leaves at 20 us + guardband."""
    if how == "entry":
        net = rotor(routing="none")
        net.add(od.Entry(None, None, 3, 2, 0), 0)
    else:
        net = rotor()
    r = run(net, [("0us", 0, 3, 100)])
    row = only(r)
    assert row["finish_ps"] == 2 * SLICE + GB + ser(100) + PROP == 20_708_000
    assert row["hops"] == 1
    s = r.summary
    assert s["packet_hops"] == 1
    assert s["flows"] == {"started": 1, "completed": 1}
    assert s["bytes"] == {"offered": 100, "delivered": 100, "dropped": 0, "in_flight": 0}


def test_two_hop_entries_via_n1():
    """N0 leaves in slice 0 towards N1; N1 waits for its slice-1 circuit to N3."""
    net = rotor(routing="none")
    net.add(od.Entry(None, None, 3, 0, 0), 0)
    net.add(od.Entry(None, None, 3, 1, 0), 1)
    r = run(net, [("0us", 0, 3, 100)])
    row = only(r)
    at_n1 = GB + ser(100) + PROP
    assert at_n1 == 708_000 < SLICE  # arrives at N1 within slice 0, waits for slice 1
    assert row["finish_ps"] == SLICE + GB + ser(100) + PROP == 10_708_000
    assert row["hops"] == 2
    assert r.summary["packet_hops"] == 2


def test_arrival_slice_entries_select_the_route():
    """Entries keyed by arrival slice: a packet reaching N0 in slice 1 uses the slice-1
    entry (via N2, which meets N3 in slice 0 of the next cycle), one reaching it in slice 0
    the direct slice-2 entry."""
    net = rotor(routing="none")
    net.add(od.Entry(0, None, 3, 2, 0), 0)   # arrived in slice 0 -> direct in slice 2
    net.add(od.Entry(1, None, 3, 1, 0), 0)   # arrived in slice 1 -> to N2 in slice 1
    net.add(od.Entry(None, None, 3, 0, 0), 2)  # N2 -> N3 in slice 0
    r = run(net, [("0us", 0, 3, 100), ("15us", 0, 3, 100)])
    a, b = rows(r)
    assert a["finish_ps"] == 2 * SLICE + GB + ser(100) + PROP
    assert a["hops"] == 1
    # leaves N0 at 15 us (slice 1 is up), reaches N2 at 15.508 us, waits for slice 0 at 30 us
    assert b["finish_ps"] == CYCLE + GB + ser(100) + PROP == 30_708_000
    assert b["hops"] == 2


# ---------------------------------------------------------------------------------------
# waiting for the slice
# ---------------------------------------------------------------------------------------
def fct_direct(start_ps: int, nbytes: int, dst: int = 3) -> int:
    r = run(rotor(), [(start_ps, 0, dst, nbytes)])
    return only(r)["fct_ps"]


@pytest.mark.parametrize("offset", [0, 100 * NS, GB])
def test_one_slice_early_waits_exactly_one_slice_longer(offset):
    """Injected in slice 1 (one slice before the 0-3 circuit) vs in slice 2 itself, both
    at the same offset within the guardband: the early one waits exactly one slice more."""
    early = fct_direct(SLICE + offset, 100)
    on_time = fct_direct(2 * SLICE + offset, 100)
    assert on_time == GB - offset + ser(100) + PROP
    assert early - on_time == SLICE


@pytest.mark.parametrize("start,nbytes,departure", [
    (0, 100, 2 * SLICE + GB),                          # slice 0: wait for slice 2
    (25 * US, 100, 25 * US),                           # inside slice 2, after the guardband
    (2 * SLICE + 100 * NS, 100, 2 * SLICE + GB),       # inside the guardband: wait for it
    (30 * US - 120 * NS, 1500, 30 * US - 120 * NS),    # serialization ends exactly at the slice end
    (30 * US - 120 * NS + 1, 1500, CYCLE + 2 * SLICE + GB),  # 1 ps too late: a whole cycle
    (29_999_000, 1500, CYCLE + 2 * SLICE + GB),        # 29.999 us: next occurrence of slice 2
    (30 * US, 100, CYCLE + 2 * SLICE + GB),            # slice 0 of the next cycle
])
def test_direct_departure_time(start, nbytes, departure):
    r = run(rotor(), [(start, 0, 3, nbytes)])
    row = only(r)
    assert row["finish_ps"] == departure + ser(nbytes) + PROP
    assert row["hops"] == 1


def test_packet_that_does_not_fit_waits_whole_cycle():
    fits = fct_direct(30 * US - 120 * NS, 1500)
    late = fct_direct(29_999_000, 1500)
    assert fits == 120 * NS + PROP
    assert late == (CYCLE + 2 * SLICE + GB - 29_999_000) + 120 * NS + PROP


# ---------------------------------------------------------------------------------------
# multi-packet flows on an idle direct path
# ---------------------------------------------------------------------------------------
def test_multi_packet_flow_back_to_back_from_guardband():
    """N0 -> N1 (slice 0), 10 x 1500 B at t = 0: R = link rate, so the port sends back to
    back from the end of the guardband."""
    r = run(rotor(), [("0us", 0, 1, 15_000)])
    row = only(r)
    assert row["finish_ps"] == GB + 10 * ser(1500) + PROP == 1_900_000
    assert r.summary["packet_hops"] == 10


def test_multi_packet_flow_with_partial_last_packet():
    """10 000 B = 6 x 1500 B + 1000 B, starting at 1 us (slice 0 already up)."""
    r = run(rotor(), [("1us", 0, 1, 10_000)])
    row = only(r)
    assert row["finish_ps"] == 1 * US + 6 * ser(1500) + ser(1000) + PROP == 2_300_000
    assert r.summary["packet_hops"] == 7


def test_multi_packet_flow_paced_by_slower_host_rate():
    """host_rate 50 Gbps < link rate: packet k enters the port at 1 us + k * 240 ns and the
    idle port sends it at once; the last one finishes 120 ns + 500 ns later."""
    r = run(rotor(cfg(host_rate="50Gbps")), [("1us", 0, 1, 15_000)])
    row = only(r)
    assert ser(1500, 50 * 10**9) == 240 * NS
    assert row["finish_ps"] == 1 * US + 9 * ser(1500, 50 * 10**9) + ser(1500) + PROP == 3_780_000


def test_multi_packet_flow_split_across_cycles():
    """20 x 1500 B from 9 us on the slice-0 circuit: 8 packets fit before 10 us
    (9 us + 8 x 120 ns = 9.96 us), the other 12 leave back to back from 30.2 us."""
    r = run(rotor(), [("9us", 0, 1, 30_000)])
    row = only(r)
    assert 9 * US + 8 * ser(1500) <= SLICE < 9 * US + 9 * ser(1500)
    assert row["finish_ps"] == CYCLE + GB + 12 * ser(1500) + PROP == 32_140_000


@pytest.mark.parametrize("start", [0, 1, CYCLE, CYCLE + 1])
def test_flow_longer_than_its_slice_resumes_next_cycle(start):
    """100 x 1500 B on the slice-0 circuit N0 -> N1 starting in (or exactly at the start
    of) slice 0: 81 packets fit in the up-time ((10 us - 200 ns) / 120 ns = 81.7), the other
    19 leave back to back when slice 0 comes round again, one cycle later."""
    r = run(rotor(), [(start, 0, 1, 150_000)])
    row = only(r)
    cycle_start = (start // CYCLE) * CYCLE
    assert cycle_start <= start < cycle_start + GB  # the first packet waits for the guardband
    assert (SLICE - GB) // ser(1500) == 81
    resume = cycle_start + CYCLE + GB
    assert row["finish_ps"] == resume + 19 * ser(1500) + PROP
    assert row["finish_ps"] - cycle_start == 32_980_000


@pytest.mark.parametrize("second_start", [0, 4 * NS, 1 * US])
def test_two_flows_to_different_destinations_use_their_own_slices(second_start):
    """N0 -> N1 (slice 0) at t = 0 and N0 -> N2 (slice 1), one packet each. The second flow
    may start while the endpoint is still pacing the first packet (0 or 4 ns < 8 ns)."""
    r = run(rotor(), [("0us", 0, 1, 100), (second_start, 0, 2, 100)])
    a, b = rows(r)
    assert a["finish_ps"] == GB + ser(100) + PROP
    assert b["finish_ps"] == SLICE + GB + ser(100) + PROP


def test_header_bytes_count_on_the_wire():
    net = rotor(cfg(header=40))
    r = run(net, [("25us", 0, 3, 100)])
    row = only(r)
    assert ser(140) == 11_200
    assert row["finish_ps"] == 25 * US + ser(140) + PROP
    b = r.summary["bytes"]
    assert b["delivered"] == b["offered"] == 100  # payload bytes only


# ---------------------------------------------------------------------------------------
# static circuits (ts=None)
# ---------------------------------------------------------------------------------------
def static_net(circuits, **kw) -> od.Network:
    net = od.Network(cfg(**kw))
    net.deploy_topo(circuits)
    net.deploy_routing(od.routing.ecmp(circuits))
    return net


def test_static_circuit_single_packet():
    net = static_net([od.Circuit(0, 0, 1, 0, None), od.Circuit(2, 0, 3, 0, None)])
    r = run(net, [("0us", 0, 1, 100)])
    row = only(r)
    assert row["finish_ps"] == ser(100) + PROP == 508_000
    assert row["hops"] == 1


def test_static_circuit_with_hand_entry():
    net = od.Network(cfg())
    net.deploy_topo([od.Circuit(0, 0, 3, 0, None), od.Circuit(1, 0, 2, 0, None)])
    net.add(od.Entry(None, None, 3, None, 0), 0)
    r = run(net, [("3us", 0, 3, 1500)])
    assert only(r)["finish_ps"] == 3 * US + ser(1500) + PROP


def test_static_circuit_multi_packet_flow():
    net = static_net([od.Circuit(0, 0, 1, 0, None), od.Circuit(2, 0, 3, 0, None)])
    r = run(net, [("0us", 0, 1, 15_000)])
    assert only(r)["finish_ps"] == 10 * ser(1500) + PROP == 1_700_000


def test_static_two_hop_line():
    """0 - 1 - 2 on static circuits (2 ports each): store and forward at node 1."""
    line = [od.Circuit(0, 0, 1, 0, None), od.Circuit(1, 1, 2, 0, None)]
    net = static_net(line, uplinks=2)
    r = run(net, [("0us", 0, 2, 100)])
    row = only(r)
    assert row["finish_ps"] == 2 * (ser(100) + PROP) == 1_016_000
    assert row["hops"] == 2


def test_ideal_fct_is_a_lower_bound_on_an_idle_static_circuit():
    """A lone flow on an idle single-hop static circuit is as fast as the network allows:
    its FCT can never be below the ideal FCT (slowdown >= 1)."""
    net = static_net([od.Circuit(0, 0, 1, 0, None), od.Circuit(2, 0, 3, 0, None)])
    r = run(net, [("0us", 0, 1, 100), ("0us", 2, 3, 15_000)])
    for row in rows(r):
        assert row["completed"]
        assert row["ideal_fct_ps"] <= row["fct_ps"], row
        assert row["slowdown"] >= 1.0, row


# ---------------------------------------------------------------------------------------
# hosts below ToRs
# ---------------------------------------------------------------------------------------
HOST_RATE = 25 * 10**9
HOST_PROP = 100 * NS


def hosts_net() -> od.Network:
    return rotor(cfg(hosts_per_node=2, host_link_rate="25Gbps", host_propagation="100ns"))


def test_hosts_packet_waits_at_tor_for_circuit():
    """Host 0 (ToR 0) -> host 6 (ToR 3) at t = 0: host link, wait for slice 2 at ToR 0,
    fabric hop, then the 25 Gbps downlink of ToR 3."""
    r = run(hosts_net(), [("0us", 0, 6, 100)])
    row = only(r)
    assert ser(100, HOST_RATE) == 32 * NS
    at_tor = ser(100, HOST_RATE) + HOST_PROP
    assert at_tor < SLICE
    expected = 2 * SLICE + GB + ser(100) + PROP + ser(100, HOST_RATE) + HOST_PROP
    assert row["finish_ps"] == expected == 20_840_000
    assert r.summary["packet_hops"] == 3  # host uplink, fabric link, host downlink


def test_hosts_packet_in_its_slice():
    """Host 1 (ToR 0) -> host 7 (ToR 3) at 25 us: no waiting anywhere."""
    r = run(hosts_net(), [("25us", 1, 7, 100)])
    row = only(r)
    expected = 2 * (ser(100, HOST_RATE) + HOST_PROP) + ser(100) + PROP
    assert row["fct_ps"] == expected == 772_000


def test_hosts_two_packets_pipeline_through_the_downlink():
    """3000 B = 2 x 1500 B at 25 us: the 25 Gbps host links are the bottleneck; the second
    packet waits for the first on the ToR 3 downlink."""
    r = run(hosts_net(), [("25us", 1, 7, 3000)])
    row = only(r)
    h, f = ser(1500, HOST_RATE), ser(1500)
    assert h == 480 * NS
    first_at_tor3 = 25 * US + h + HOST_PROP + f + PROP
    second_at_tor3 = 25 * US + 2 * h + HOST_PROP + f + PROP
    downlink_free = first_at_tor3 + h
    assert second_at_tor3 == downlink_free  # the second packet arrives as the first leaves
    assert row["finish_ps"] == max(second_at_tor3, downlink_free) + h + HOST_PROP == 27_260_000
    assert r.summary["packet_hops"] == 6


def test_hosts_same_tor_flow_skips_the_fabric():
    """Host 0 -> host 1 (both on ToR 0): host link up, then the downlink."""
    r = run(hosts_net(), [("0us", 0, 1, 100)])
    row = only(r)
    assert row["finish_ps"] == 2 * (ser(100, HOST_RATE) + HOST_PROP) == 264_000


# ---------------------------------------------------------------------------------------
# electrical Clos
# ---------------------------------------------------------------------------------------
def clos(**kw) -> od.Network:
    # the oracles check the forwarding model, so no transport packets (ACKs) are added
    return od.arch.get("clos").make(**{"transport": "ideal", **kw})


@pytest.mark.parametrize("multipath", ["packet", "flow"])
def test_clos_single_packet_two_hops(multipath):
    r = run(clos(nodes=4, uplinks=2, multipath=multipath), [("0us", 0, 3, 100)], duration="20us")
    row = only(r)
    assert row["finish_ps"] == 2 * (ser(100) + PROP) == 1_016_000
    assert row["hops"] == 2
    assert r.summary["packet_hops"] == 2


def test_clos_per_flow_multi_packet():
    """Per-flow ECMP pins 10 x 1500 B to one 100 Gbps uplink (R = 200 Gbps injects faster):
    the uplink sends back to back from t = 0, the spine forwards each packet on arrival."""
    r = run(clos(nodes=4, uplinks=2, multipath="flow"), [("0us", 0, 3, 15_000)], duration="20us")
    row = only(r)
    n = 10
    assert row["finish_ps"] == (n + 1) * ser(1500) + 2 * PROP == 2_320_000
    assert r.summary["packet_hops"] == 2 * n
