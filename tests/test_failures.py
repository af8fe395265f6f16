"""Link and node failures on the packet engine (``Network.fail_links`` / ``fail_nodes``,
``--fail-links`` / ``--fail-nodes``): nothing is
sent into a failed link, transports recover what was lost, throughput comes back after
recovery, the ledgers balance, bad input is refused."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import opendcn as od
from opendcn.errors import ConfigError

US = 1_000_000


def _port_tx(r, node, port):
    ts = r.timeseries.to_pydict()
    sel = [(t, b) for t, n, p, b in zip(ts["time_ps"], ts["node"], ts["port"], ts["tx_bytes"])
           if n == node and p == port]
    return np.array([t for t, _ in sel]), np.array([b or 0 for _, b in sel])


def _delivered(r):
    ts = r.timeseries.to_pydict()
    sel = [(t, b) for t, n, b in zip(ts["time_ps"], ts["node"], ts["delivered_bytes"]) if n == -1]
    return np.array([t for t, _ in sel]), np.array([b or 0 for _, b in sel], dtype=float)


def _clos(transport="dctcp"):
    net = od.arch.clos(nodes=8, uplinks=2, transport=transport)
    net.net_series = True            # network-wide delivered bytes per sample
    return net


def test_nothing_is_sent_into_a_failed_link_and_dctcp_recovers():
    net = _clos()
    link = net.fabric_links()[0]
    peer = next((c.n2, c.p2) if (c.n1, c.p1) == link else (c.n1, c.p1) for c in net.circuits
                if link in ((c.n1, c.p1), (c.n2, c.p2)))
    net.watch([link, peer])
    net.fail_links([link], at="200us", recover_at="500us")
    flows = [(0, s, d, 2_000_000) for s in range(8) for d in range(8) if s != d]
    r = net.run(od.workload.flows(flows), duration="2ms")
    s = r.summary
    assert s["invariants"]["ok"]
    b = s["bytes"]
    assert b["dropped"] == 0 and b["offered"] == b["delivered"] + b["in_flight"]   # nothing lost for good
    assert s["packets"]["dropped"]["failed_link"] > 0          # the link's queue was lost ...
    assert s["packets"]["retransmitted"] > 0                   # ... and resent
    for end in (link, peer):
        t, tx = _port_tx(r, *end)
        # a sample covers the interval before its time: the samples inside the outage
        assert tx[(t > 200 * US + 10 * US) & (t <= 500 * US)].sum() == 0, end
        assert tx[t <= 200 * US].sum() > 0 and tx[t > 500 * US + 10 * US].sum() > 0, end
    # after recovery, throughput is back at the level of the same run without the failure
    # (the flows finish one by one, so the level falls in both)
    base = _clos().run(od.workload.flows(flows), duration="2ms")
    (t, d), (tb, db) = _delivered(r), _delivered(base)
    assert (t == tb).all()
    win = (t > 600 * US) & (t <= 700 * US)
    during = (t > 300 * US) & (t <= 500 * US)
    assert d[win].mean() >= 0.9 * db[win].mean(), (d[win].mean(), db[win].mean())
    assert d[during].mean() < db[during].mean()                 # the outage cost throughput
    assert r.summary["flows"]["completed"] == base.summary["flows"]["completed"]
    assert r.summary["trace_hash"] == net.run(od.workload.flows(flows), duration="2ms").summary["trace_hash"]


def test_the_option_fails_a_fraction_of_links_in_every_run():
    net = od.arch.clos(nodes=8, uplinks=2, transport="tcp", fail_links=0.25, fail_at="100us", recover_at="300us")
    wl = od.workload.poisson("hadoop", 0.4, "uniform")
    r1 = net.run(wl, duration="600us", seed=2)
    r2 = net.run(wl, duration="600us", seed=2)
    m = r1.summary["arch_metrics"]
    assert len(m["failed_links"]) == round(0.25 * len(net.fabric_links()))
    assert m["fail_at_ps"] == 100 * US and m["recover_at_ps"] == 300 * US
    assert r1.summary["trace_hash"] == r2.summary["trace_hash"]
    assert r1.summary["bytes"]["dropped"] == 0 and r1.summary["invariants"]["ok"]
    # without failures the drop table has no failed_link entry (summaries stay as they were)
    plain = od.arch.clos(nodes=8, uplinks=2, transport="tcp").run(wl, duration="100us", seed=2)
    assert "failed_link" not in plain.summary["packets"]["dropped"]


def test_rotor_fabric_avoids_the_slices_of_a_failed_uplink():
    net = od.arch.rotornet(nodes=8, uplinks=2, routing="vlb", slice="20us")
    net.watch([(3, 0)])
    net.fail_links([(3, 0)], at="100us")
    r = net.run(od.workload.poisson("hadoop", 0.3, "uniform"), duration="500us")
    s = r.summary
    assert s["invariants"]["ok"]
    b = s["bytes"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    t, tx = _port_tx(r, 3, 0)
    assert tx[t > 100 * US + 20 * US].sum() == 0 and tx[t <= 100 * US].sum() > 0
    assert "failed_link" in s["packets"]["dropped"]


def test_a_failed_switch_sends_and_receives_nothing_and_tcp_recovers():
    """An aggregation switch of the 8-rack Clos fails from 200 to 500 us: none of its
    ports sends, no neighbour sends into it, what it held is lost and resent, and after
    it recovers the network carries what the same run without the failure carries."""
    net = _clos()
    sw = net.config.nodes                          # the first switch node
    ports = [(sw, p) for p in range(int(net.user_ports[sw]))]
    ends = ports + [next((c.n2, c.p2) if (c.n1, c.p1) == e else (c.n1, c.p1) for c in net.circuits
                         if e in ((c.n1, c.p1), (c.n2, c.p2))) for e in ports]
    net.watch(ends)
    net.fail_nodes([sw], at="200us", recover_at="500us")
    flows = [(0, s, d, 2_000_000) for s in range(8) for d in range(8) if s != d]
    r = net.run(od.workload.flows(flows), duration="2ms")
    s = r.summary
    assert s["invariants"]["ok"]
    b = s["bytes"]
    assert b["dropped"] == 0 and b["offered"] == b["delivered"] + b["in_flight"]
    assert s["packets"]["dropped"]["failed_link"] > 0 and s["packets"]["retransmitted"] > 0
    for end in ends:
        t, tx = _port_tx(r, *end)
        assert tx[(t > 200 * US + 10 * US) & (t <= 500 * US)].sum() == 0, end
        assert tx[t > 500 * US + 10 * US].sum() > 0, end
    base = _clos().run(od.workload.flows(flows), duration="2ms")
    (t, d), (tb, db) = _delivered(r), _delivered(base)
    assert (t == tb).all()
    win = (t > 600 * US) & (t <= 700 * US)
    assert d[win].mean() >= 0.9 * db[win].mean()
    assert r.summary["flows"]["completed"] == base.summary["flows"]["completed"]


def test_the_option_fails_a_fraction_of_nodes_in_every_run():
    net = od.arch.clos(nodes=8, uplinks=2, transport="tcp", fail_nodes=0.1, fail_at="100us", recover_at="300us")
    wl = od.workload.poisson("hadoop", 0.4, "uniform")
    r1, r2 = net.run(wl, duration="600us", seed=2), net.run(wl, duration="600us", seed=2)
    m = r1.summary["arch_metrics"]
    assert len(m["failed_nodes"]) == round(0.1 * net.total_nodes) and "failed_links" not in m
    assert m["fail_at_ps"] == 100 * US and m["recover_at_ps"] == 300 * US
    assert r1.summary["trace_hash"] == r2.summary["trace_hash"]
    assert r1.summary["bytes"]["dropped"] == 0 and r1.summary["invariants"]["ok"]
    assert r1.summary["packets"]["dropped"].get("failed_link", 0) > 0


def test_bad_failures_are_refused():
    net = _clos()
    with pytest.raises(ConfigError) as e:
        net.fail_links([(0, 0)], at="200us", recover_at="100us")
    assert e.value.field == "recover_at"
    with pytest.raises(ConfigError) as e:
        net.fail_links([(0, 99)], at="200us")
    assert e.value.field == "links[0]"
    with pytest.raises(ConfigError) as e:
        net.fail_links([(0,)], at="200us")
    assert e.value.field == "links[0]"
    hpc = od.arch.trn(nodes=8, radix=8)
    with pytest.raises(ConfigError) as e:
        hpc.fail_links([(0, 0)], at="1us")
    assert e.value.field == "fail_links"
    with pytest.raises(ConfigError) as e:
        od.arch.clos(nodes=8, fail_links=1.5)
    assert e.value.field == "--fail-links"
    with pytest.raises(ConfigError) as e:
        net.fail_nodes([net.total_nodes], at="1us")
    assert e.value.field == "nodes[0]"
    with pytest.raises(ConfigError) as e:
        net.fail_nodes([], at="1us")
    assert e.value.field == "nodes"
    with pytest.raises(ConfigError) as e:
        od.arch.clos(nodes=8, fail_nodes=-0.1)
    assert e.value.field == "--fail-nodes"


@pytest.mark.parametrize("args", [["--fail-links", "0.1", "--fail-at", "300us", "--recover-at", "200us"],
                                  ["--fail-at", "300us"], ["--fail-links", "-0.1"]])
def test_cli_bad_failure_options_exit_2(tmp_path, args):
    p = subprocess.run([sys.executable, "-m", "opendcn", "run", "clos", "--nodes", "8", "--duration", "100us",
                        "--out", str(tmp_path / "o"), *args], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("arch", ["clos", "sirius"])
def test_a_zero_failure_fraction_with_a_failure_time_is_the_run_without_failures(tmp_path, arch):
    """A sweep over the failed fraction with a fixed failure time has a baseline point at
    0: an explicit zero fraction means no failure (a time given without any fraction is
    still a named error)."""
    from opendcn.experiments.sweeps import sweep

    spec = {"arch": arch, "duration": "60us",
            "options": {"nodes": 8, "load": 0.3, "fail_at": "20us", "recover_at": "40us"},
            "vary": {"fail_links": [0.0, 0.25]}}
    recs = sweep(spec, tmp_path / "s", workers=1)
    assert {r["status"] for r in recs} == {"ok"}, [r.get("error") for r in recs]
    zero = json.loads((tmp_path / f"s/arch={arch}/fail_links=0.0/seed=1/summary.json").read_text())
    sweep({"arch": arch, "duration": "60us", "options": {"nodes": 8, "load": 0.3}}, tmp_path / "p", workers=1)
    plain = json.loads(next((tmp_path / "p").rglob("summary.json")).read_text())
    assert zero["trace_hash"] == plain["trace_hash"] and zero["bytes"] == plain["bytes"]
    some = json.loads((tmp_path / f"s/arch={arch}/fail_links=0.25/seed=1/summary.json").read_text())
    assert some["trace_hash"] != zero["trace_hash"]
    with pytest.raises(od.ConfigError) as e:
        getattr(od.arch, arch)(nodes=8, fail_at="20us")
    assert e.value.field in ("--fail-at", "--fail-links")
