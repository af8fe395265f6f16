"""The slotted engines (NegotiaToR, Sirius, Shale's window and timeslot engines) keep their
books with the packet engine's ledger, cells being their packets: every run checks the
payload balance ``offered == delivered + lost + in_flight`` and the cell balance
``sent == delivered + dropped + trimmed + in_flight`` (each in-flight figure counted from
the engine's state), and the summary reports ``packets`` with the packet engine's keys."""

from __future__ import annotations

import pytest

import opendcn as od


def _wl(kind: str = "hadoop", load: float = 0.6):
    return od.workload.poisson(kind, load, "uniform")


def check_ledger(s: dict) -> dict:
    assert s["invariants"]["ok"], s["invariants"]["errors"]
    b = s["bytes"]
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    p = s["packets"]
    assert all(isinstance(v, int) for k, v in p.items() if not isinstance(v, dict))
    dropped = sum(p["dropped"].values())
    assert p["sent"] == p["delivered"] + dropped + p["trimmed"] + p["in_flight"], p
    assert p["sent"] > 0 and p["delivered"] > 0
    assert p["ecn_marks"] == 0 and p["bounces"] == 0 and p["duplicate_bytes"] == 0
    # payload of dropped cells is lost payload (no slotted transport resends a dropped cell)
    assert sum(p["dropped_payload_bytes"].values()) <= b["dropped"]
    return p


@pytest.fixture(scope="module")
def packet_engine_keys() -> set[str]:
    r = od.arch.get("clos").make(nodes=8, uplinks=2).run(_wl(), duration="50us", seed=1)
    return set(r.summary["packets"])


RUNS = {
    "negotiator": ("negotiator", dict(nodes=16, ports=4)),
    "negotiator-thin-relay": ("negotiator", dict(nodes=16, ports=4, topology="thin-clos", variant="relay")),
    "negotiator-fail": ("negotiator", dict(nodes=16, ports=4, topology="thin-clos", fail_links=0.2,
                                           fail_at="10us", recover_at="40us")),
    "sirius": ("sirius", dict(nodes=16, ports=4)),
    "sirius-ideal-pushback": ("sirius", dict(nodes=16, ports=4, cc="ideal", pushback=True)),
    "sirius-grant-all": ("sirius", dict(nodes=16, ports=4, cc="grant", relay="all")),
    "sirius-fail": ("sirius", dict(nodes=16, ports=4, fail_links=0.1, fail_nodes=0.1, fail_at="10us",
                                   recover_at="40us")),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_awgr_engines_balance_their_cells(name, packet_engine_keys):
    arch, opts = RUNS[name]
    s = od.arch.get(arch).make(**opts).run(_wl(), duration="60us", seed=2).summary
    p = check_ledger(s)
    assert set(p) == packet_engine_keys
    assert p["control"] == 0 and p["retransmitted"] == 0 and p["trimmed"] == 0
    assert p["in_flight"] > 0  # cut off mid-traffic: relayed and late cells are counted
    if name == "negotiator-fail":
        assert p["dropped"]["link_failure"] > 0
        assert p["dropped_payload_bytes"]["link_failure"] == s["drops"]["link_failure"]
    if name == "sirius-fail":
        # a link loses only cells; a failed ToR also loses payload it never cut into cells
        assert p["dropped"]["failed_link"] > 0 and p["dropped"]["failed_node"] > 0
        assert p["dropped_payload_bytes"]["failed_link"] == s["drops"]["failed_link"]
        assert p["dropped_payload_bytes"]["failed_node"] < s["drops"]["failed_node"]


@pytest.mark.parametrize("opts", [
    dict(nodes=16, h=2, cc="hbh+spray"),
    dict(nodes=64, h=2, cc="ndp", ndp_queue=2),
    dict(nodes=64, h=2, cc="ndp", ndp_queue=3, fail_nodes=0.05, fail_links=0.03, fail_at="10us"),
    dict(nodes=16, h=2, cc="priority"),
])
def test_shale_balances_its_cells(opts, packet_engine_keys):
    s = od.arch.get("shale").make(**opts).run(_wl("imc10", 0.5), duration="40us", seed=3).summary
    p = check_ledger(s)
    assert set(p) == packet_engine_keys
    eng = s["arch_metrics"]["engine"]
    assert p["control"] == eng["token_only_cells"]
    assert p["sent"] == eng["new_cells"] + eng["token_only_cells"]
    if opts["cc"] == "ndp":
        assert p["trims"] == eng["trimmed_cells"] > 0
        assert 0 < p["trimmed"] <= p["trims"] and 0 < p["retransmitted"] <= p["trimmed"]
    if "fail_nodes" in opts:
        assert sum(p["dropped"].values()) > 0
        assert set(p["dropped"]) == set(s["drops"])


@pytest.mark.parametrize("opts", [dict(nodes=64, h=2), dict(nodes=81, h=2, interleave="4:0.4", cc="hbh")])
def test_shale_engines_keep_the_same_books(opts):
    got = {}
    for engine in ("window", "timeslot"):
        s = od.arch.get("shale").make(engine=engine, **opts).run(_wl("imc10", 0.5), duration="30us", seed=5).summary
        check_ledger(s)
        got[engine] = s["packets"]
    assert got["window"] == got["timeslot"]
    assert got["window"]["control"] > 0
