"""Virtual channels chosen by the routing (``Network.vc_rule``) and the channel
dependency check (``opendcn.fabrics.channels``): the engine follows the rule, the check finds
the cycles hop-indexed channels leave on a ring and accepts a dateline rule, and the
watchdog agrees with the check on both."""

from __future__ import annotations

import numpy as np
import pytest

import opendcn as od
from opendcn.fabrics.channels import channel_dependency_cycle, channel_dependency_graph, dependency_edges

RING_FLOWS = [(0, i, (i + 3) % 4, 2_000_000) for i in range(4)]  # every flow crosses 3 links


def _ring(vcs: int) -> od.Network:
    """A one-way ring of 4 directed circuits; every packet travels clockwise."""
    net = od.Network(od.Config(nodes=4, uplinks=1, link_rate="100Gbps", buffer="60KB"))
    net.deploy_topo([od.Circuit(i, 0, (i + 1) % 4, 0, None, True) for i in range(4)])
    net.deploy_routing({i: [od.Entry(None, None, d, None, 0) for d in range(4) if d != i] for i in range(4)})
    net.transport("credit", credit_bytes="3KB", vcs=vcs, deadlock_timeout="20us")
    return net


def _dateline(net: od.Network) -> None:
    """The classic dateline: a packet goes to channel 1 once it has crossed the link 3 -> 0."""
    net.vc_rule({(3, 0): 1}, escalate=[(1, 0)])


def test_hop_indexed_ring_on_two_channels_has_a_cycle_and_deadlocks():
    net = _ring(2)
    assert channel_dependency_cycle(net) == [(0, 0, 1), (1, 0, 1), (2, 0, 1), (3, 0, 1)]
    with pytest.raises(od.DeadlockError):
        net.run(od.workload.flows(RING_FLOWS), duration="2ms", seed=1)


def test_dateline_rule_on_two_channels_is_acyclic_and_completes():
    net = _ring(2)
    _dateline(net)
    assert channel_dependency_cycle(net) is None
    g = channel_dependency_graph(net)
    # channel 0 up to the dateline, channel 1 after it (and only after it)
    assert set(g.edges) == {((0, 0, 0), (1, 0, 0)), ((1, 0, 0), (2, 0, 0)), ((2, 0, 0), (3, 0, 0)),
                            ((3, 0, 0), (0, 0, 1)), ((0, 0, 1), (1, 0, 1))}
    # (3 KB of credit per channel: up to three flows share a link's channel 0 at ~22 Gb/s)
    r = net.run(od.workload.flows(RING_FLOWS), duration="6ms", seed=1)
    s = r.summary
    assert s["flows"]["completed"] == 4 and sum(s["packets"]["dropped"].values()) == 0
    assert s["transport"]["credit_vc_rule"] == "routing"
    assert s["bytes"]["offered"] == s["bytes"]["delivered"] == 8_000_000


def test_a_rule_that_never_escalates_keeps_every_packet_on_channel_0():
    """Three channels but a rule without a step: the ring deadlocks as on one channel."""
    net = _ring(3)
    assert channel_dependency_cycle(net) is None                 # hop count: 3 links, 3 channels
    net.vc_rule({}, escalate=[])
    assert channel_dependency_cycle(net) == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)]
    with pytest.raises(od.DeadlockError):
        net.run(od.workload.flows(RING_FLOWS), duration="2ms", seed=1)


def test_a_rule_stepping_on_every_hop_is_the_hop_count():
    """Every transition escalating is the default hop count: the same run, event for event."""
    wl = od.workload.flows([(0, 0, 3, 300_000), (0, 1, 0, 300_000), (1000, 2, 1, 200_000)])
    hop = _ring(3).run(wl, duration="500us", seed=3).summary
    net = _ring(3)
    net.vc_rule({}, escalate=[(0, 0)])
    rule = net.run(wl, duration="500us", seed=3).summary
    assert rule["trace_hash"] == hop["trace_hash"] and rule["bytes"] == hop["bytes"]
    assert hop["transport"]["credit_vc_rule"] == "hop count"
    net.vc_rule(None)                                              # back to the hop count
    assert net.run(wl, duration="500us", seed=3).summary["trace_hash"] == hop["trace_hash"]


def test_dependency_edges_of_source_routes():
    """Source routes: the dependencies are the consecutive hops of every route."""
    net = od.Network(od.Config(nodes=3, uplinks=2))
    net.deploy_topo([od.Circuit(0, 0, 1, 0), od.Circuit(1, 1, 2, 0), od.Circuit(2, 1, 0, 1)])
    net.deploy_routing([od.Path(0, 2, None, (od.Hop(0, 0, None), od.Hop(1, 1, None))),
                        od.Path(2, 1, None, (od.Hop(2, 1, None), od.Hop(0, 0, None)))], lookup="source")
    net.transport("credit", vcs=2)
    a, b, k = dependency_edges(net)
    assert k == 2
    label = [(divmod(int(x), 2), divmod(int(y), 2)) for x, y in zip(a, b)]
    g = net.gport
    assert sorted(label) == sorted([((g(0, 0), 0), (g(1, 1), 1)), ((g(2, 1), 0), (g(0, 0), 1))])
    assert channel_dependency_cycle(net) is None


@pytest.mark.parametrize("kw,field", [
    ({"port_class": {(9, 0): 1}}, "port_class"),
    ({"port_class": {(0, 0): 8}}, "port_class"),
    ({"port_class": {(0, 0): 1.5}}, "port_class[0, 0]"),
    ({"port_class": np.zeros(3, np.int64)}, "port_class"),
    ({"port_class": [1, 2]}, "port_class"),
    ({"port_class": {}, "escalate": [(0, 9)]}, "escalate"),
    ({"port_class": {}, "escalate": [0]}, "escalate"),
])
def test_bad_rules_name_the_field(kw, field):
    with pytest.raises(od.ConfigError) as e:
        _ring(2).vc_rule(**kw)
    assert e.value.field == field


def test_the_check_refuses_what_it_cannot_model():
    net = od.arch.rotornet(nodes=8, uplinks=2)
    with pytest.raises(od.ConfigError) as e:
        channel_dependency_cycle(net)
    assert e.value.field in ("network", "routing")
