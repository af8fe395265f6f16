"""``opendcn reproduce openoptics`` end to end at a tiny size (16 ToRs for the §7 tests,
300 us per point): every claim present with a status, the invariants and determinism
checked, the JSON and the plots written; the workload helpers it builds on."""

from __future__ import annotations

import json

import pytest

from opendcn import studies as reproduce, workload
from opendcn.errors import ConfigError
from opendcn.studies.openoptics import CASE1, CLAIM_TEXTS

CLAIMS = [
    "Case I: traffic-aware designs' elephants (all-reduce >= 4 MB) near Clos (<= 1.5x)",
    "Case I: RotorNet (VLB) and Opera elephants about 2x Clos (1.5-3.0x)",
    "Case I: mice that wait for a circuit (Mordia direct, RotorNet VLB) have a longer tail than designs with an "
    "always-on path (Clos, c-Through electrical, Jupiter's engineered ring, Opera expander)",
    "Case I: the paper's exact mice ordering of the seven designs",
    "Case II: RotorNet direct routing + host flow pausing about half of Clos (0.4-0.6)",
    "Case II: RotorNet VLB much lower than direct (< 0.5x)",
    "Case II: hybrid rotor + 10 Gb/s electrical: reordering costs spurious retransmissions at dupack 3 and none at "
    "dupack 5",
    "Case II: analytic bound: wherever sender/electrical >= 5, dupack 5 still retransmits",
    "Case III: VLB tail FCT grows with the slice length",
    "Case III: UCMP tail FCT below VLB at every slice",
    "Case III: UCMP less sensitive to the slice length than VLB",
    "buffer: VLB >> UCMP >= HOHO (99.9th-percentile ToR buffer, no offloading; >> = at least 2x)",
    "buffer: offloading cuts VLB's ToR buffer several-fold (>= 3.0x)",
    "push-back: congestion detection + push-back eliminates loss for HOHO, UCMP and Opera at 70 % load",
    "every run: exact conservation, 0 collisions, 0 guardband violations",
    "deterministic (same seed, same summary)",
]


def test_reproduce_openoptics_tiny(tmp_path):
    lines: list[str] = []
    code = reproduce.run("openoptics", quick=True, out=tmp_path, echo=lines.append, tors=16, duration="300us")
    text = "\n".join(lines)
    assert code in (0, 1)
    for name in CLAIMS:
        status = [ln.split()[0] for ln in lines if ln.endswith("]") and f"  {name}  [" in ln]
        assert status and status[0] in ("PASS", "FAIL", "NOT-CHECKABLE"), name
    assert "PASS  every run: exact conservation" in text
    assert "PASS  deterministic" in text
    assert "NOT-CHECKABLE  Case I: the paper's exact mice ordering" in text
    data = json.loads((tmp_path / "openoptics.json").read_text())
    assert [c["claim"] for c in data["claims"]] == CLAIMS == CLAIM_TEXTS
    assert all(c["status"] in ("PASS", "FAIL", "NOT-CHECKABLE") and c["detail"] for c in data["claims"])
    assert [m["design"] for m in data["case1_mice"]] == list(CASE1)
    assert {a["size"] for a in data["case1_allreduce"]} == {"4MB"}
    assert all(a["ideal_time_us"] > 0 for a in data["case1_allreduce"])
    assert all(r["invariants_ok"] for key in ("case1_mice", "case1_allreduce", "case2", "case3", "buffer",
                                              "pushback", "case2_hybrid") for r in data[key])
    # the hybrid table: both thresholds at every row, the stated point among them
    st = data["settings"]["hybrid_stated"]
    assert st == {"electrical": "10Gbps", "sender": "40Gbps", "buffer": "1MB", "slice": "10us"}
    assert any(all(p[k] == st[k] for k in st) for p in data["case2_hybrid_pairs"])
    assert {x["dupack"] for x in data["case2_hybrid"]} == {3, 5}
    judged = [b for b in data["buffer"] if b["basis"] == "core 40 %"]
    assert {(b["routing"], b["offload"]) for b in judged} == {(r, o) for r in ("vlb", "ucmp", "hoho") for o in (0, 2)}
    hops = data["optical_hops"]
    assert set(hops) == {"vlb", "ucmp", "hoho", "opera"} and all(h >= 1 for h in hops.values())
    for b in judged:
        assert b["host_load"] == round(0.4 / hops[b["routing"]], 4)
    for basis, load in (("core 70 %", None), ("host 0.7", 0.7)):
        rows = [p for p in data["pushback"] if p["basis"] == basis]
        assert {(p["design"], p["pushback"]) for p in rows} == {(d, b) for d in ("hoho", "ucmp", "opera")
                                                                for b in (False, True)}
        assert all(p["host_load"] == (load or round(0.7 / hops[p["design"]], 4)) for p in rows)
    assert data["settings"]["big_tors"] == 16
    # every ToR of the §7 tests is a Tofino2: one 64 MB pool shared by its ports
    assert data["settings"]["shared_buffer"] == "64MB"
    # the push-back runs recorded their drops; the anatomy accounts for every one
    for a in data["pushback_anatomy"]:
        row = next(p for p in data["pushback"] if p["basis"] == "core 70 %" and p["design"] == a["design"]
                   and p["pushback"])
        assert a["drops"] == row["dropped"]
        if a["drops"]:
            assert a["at_optical_uplink"] + a["at_host_downlink"] + a["not_at_a_port"] == a["drops"]
            assert a["at_source_tor"] + a["at_relay_tor"] == a["drops"]
    assert "reproduce openoptics" in (tmp_path / "index.html").read_text()
    for f in ("case1.png", "case3.png", "buffer_pushback.png", "case2_hybrid.png"):
        assert (tmp_path / f).stat().st_size > 0, f


def test_reproduce_openoptics_rejects_bad_sizes(tmp_path):
    with pytest.raises(ConfigError):
        reproduce.run("openoptics", quick=True, out=tmp_path, tors=10)
    with pytest.raises(ConfigError):
        reproduce.run("openoptics", quick=True, out=tmp_path, tors=16, duration="soon")


def test_ring_allreduce_flows():
    fl = workload.ring_allreduce([3, 1, 2], "900KB", start="5us")
    assert fl == [[5_000_000, 3, 1, 1_200_000], [5_000_000, 1, 2, 1_200_000], [5_000_000, 2, 3, 1_200_000]]
    assert len(workload.flows(fl).generate(endpoints=4, hosts_per_node=0, rate_bps=10**11, nodes=4,
                                           duration_ps=10**9, seed=1)) == 3
    with pytest.raises(ConfigError, match="ring_allreduce.endpoints"):
        workload.ring_allreduce([1], "1MB")
    with pytest.raises(ConfigError, match="ring_allreduce.endpoints"):
        workload.ring_allreduce([1, 1], "1MB")
    with pytest.raises(ConfigError, match="ring_allreduce.size"):
        workload.ring_allreduce([0, 1], 0)


def test_request_response_flows():
    fl = workload.request_response(0, [1, 2, 3], "4.2KB", "3us", 2, response_size=100)
    assert len(fl) == 12
    assert [e[0] for e in fl] == sorted(e[0] for e in fl)
    assert [e for e in fl if e[0] == 1_000_000] == [[1_000_000, 2, 0, 4200], [1_000_000, 0, 2, 100]]
    with pytest.raises(ConfigError, match="request_response.clients"):
        workload.request_response(0, [0, 1], 100, "1us", 1)
    with pytest.raises(ConfigError, match="request_response.interval"):
        workload.request_response(0, [1], 100, 0, 1)
    with pytest.raises(ConfigError, match="request_response.count"):
        workload.request_response(0, [1], 100, "1us", 0)


def test_pushback_anatomy_classifies_each_drop():
    import pyarrow as pa

    from opendcn.studies.openoptics import pushback_anatomy

    # uplinks 0..5, host downlinks 6..11; pair (0, 3) is paused from t=100 to t=1000 by a
    # message sent at 50 from node 2 port 1 slice 4, and told again at 2000
    drops = pa.table({"time_ps": [80, 150, 3000], "node": [2, 0, 3], "port": [1, 2, 7], "dep": [4, 4, -1],
                      "src_node": [0, 0, 0], "dst_node": [3, 3, 3], "flow": [1, 1, 1],
                      "reason": ["buffer_overflow"] * 3, "hops": [2, 1, 3]})
    pbs = pa.table({"sent_ps": [50, 1900], "arrive_ps": [100, 2000], "src_node": [0, 0], "dst_node": [3, 3],
                    "until_ps": [1000, 5000], "node": [2, 2], "port": [1, 1], "dep": [4, 4]})
    a = pushback_anatomy(drops, pbs, 6)
    assert (a["drops"], a["pushbacks"]) == (3, 2)
    assert (a["at_optical_uplink"], a["at_host_downlink"], a["not_at_a_port"]) == (2, 1, 0)
    assert (a["at_source_tor"], a["at_relay_tor"]) == (1, 2)
    assert a["pair_paused_at_drop"] == 2            # t=150 (first message) and t=3000 (second)
    assert a["same_queue_pushed_before"] == 1        # only the drop at node 2 port 1 slice 4
    assert a["source_never_told_after"] == 1         # the drop at 3000: no message after it
    assert a["source_told_after_us_p50"] == pytest.approx((20 + 1850) / 2 / 1e6)
