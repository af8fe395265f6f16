"""``opendcn reproduce shale`` end to end at a tiny size (16 nodes: h = 1, 2 and 4 exist;
2 000 timeslots per loaded run): every claim has a status and its numbers, the runs' own
checks hold, the JSON, plots and HTML page are written."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from opendcn import studies as reproduce
from opendcn.errors import ConfigError
from opendcn.studies.shale import CCS

CLAIMS = [
    "intrinsic latency 2h(N^(1/h) - 1) timeslots",
    "worst-case throughput 1/(2h)",
    "interleaving: a sub-schedule with a share f of the timeslots carries f of its throughput",
    "spray-short and hop-by-hop + spray are the best congestion controls",
    "priority hurts the tail",
    "ISD and RD are close to no congestion control",
    "NDP is decent but worse",
    "active buckets and the PIEO length grow slowly with N",
    "throughput falls roughly in proportion to the failed fraction up to 8 %",
    "every run: exact conservation, 0 collisions, 0 guardband violations",
    "deterministic (same seed, same summary and trace hash)",
]


def test_reproduce_shale_tiny(tmp_path):
    lines: list[str] = []
    code = reproduce.run("shale", quick=True, out=tmp_path, echo=lines.append, tors=16, duration="11.264us",
                         workers=1)
    assert code in (0, 1)
    text = "\n".join(lines)
    data = json.loads((tmp_path / "shale.json").read_text())
    assert [c["claim"][:len(p)] for c, p in zip(data["claims"], CLAIMS)] == CLAIMS
    assert all(c["status"] in ("PASS", "FAIL", "NOT-CHECKABLE") and c["detail"] for c in data["claims"])
    for c in data["claims"]:
        assert f"{c['status']}  {c['claim']}  [{c['detail']}]" in text
    # the runs' own checks and determinism hold at any size
    assert data["claims"][-2]["status"] == "PASS" and data["claims"][-1]["status"] == "PASS"
    assert data["nodes"] == 16 and data["timeslots"] == 2000
    tables = {k: v for k, v in data.items() if isinstance(v, list) and k != "claims"}
    cc = next(v for k, v in tables.items() if k.startswith("congestion control"))
    assert [r["cc"] for r in cc] == list(CCS)
    lat = next(v for k, v in tables.items() if k.startswith("idle network"))
    assert [r["h"] for r in lat] == [1, 2, 4]
    # epochs of the schedule: h (N^(1/h) - 1) timeslots
    assert [r["epoch_timeslots"] for r in lat] == [15, 6, 4]
    fails = next(v for k, v in tables.items() if k.startswith("node failures"))
    assert fails[0]["fraction"] == 0.0 and fails[0]["relative"] == 1.0
    # every failure point carries its transient analysis against the failure-free run
    assert all({"steady", "transient_us", "projected_paper"} <= set(r) for r in fails[1:])
    tf = next(v for k, v in tables.items() if "token fields" in k)
    assert [r["token_fields"] for r in tf] == ["oldest", "one-each"]
    assert tf[0]["proportional"] == fails[-1]["proportional"]
    html = (tmp_path / "index.html").read_text()
    imgs = re.findall(r"<img src='([^']+)'", html)
    assert imgs and all((tmp_path / i).stat().st_size > 0 for i in imgs)
    assert html.count("<tr>") > 30 and "PASS" in html
    # resumable: a second run reads every point from the tree
    again: list[str] = []
    reproduce.run("shale", quick=True, out=tmp_path, echo=again.append, tors=16, duration="11.264us", workers=1)
    assert any(re.search(r"0 run now, \d+ stored from before", ln) for ln in again)
    # the report says which build computed its points: all by this one here
    prov = data["provenance"]
    assert prov["points_from_other_builds"] == 0 and list(prov["points_by_build"]) == [prov["this_build"]]
    line = f"builds: all {prov['points_by_build'][prov['this_build']]} points computed by this build"
    assert line in text and line in html


@pytest.mark.parametrize("tors,field", [(20, "tors"), (64, "tors")])
def test_reproduce_shale_needs_a_fourth_power(tmp_path, tors, field):
    with pytest.raises(ConfigError) as e:
        reproduce.run("shale", quick=True, out=tmp_path, tors=tors)
    assert e.value.field == field and "fourth power" in str(e.value)
    assert not (tmp_path / "runs").exists()


def test_reproduce_shale_cli_bad_size_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "opendcn", "reproduce", "shale", "--tors", "20", "--out",
                        str(tmp_path / "o")], capture_output=True, text=True)
    assert p.returncode == 2 and "fourth power" in p.stderr + p.stdout
    assert not (tmp_path / "o").exists()


def test_failure_transient_projection_reproduces_the_run_itself():
    """Projected to the run's own length, the transient analysis gives back the measured
    whole-run ratio (an exact oracle), and a longer run comes closer to the steady state."""
    import numpy as np

    from opendcn.studies.shale import TAU, failure_transient

    t = np.arange(1, 101) * 100 * TAU                      # 100 samples of 100 timeslots
    base = np.full(100, 1000.0)
    fail = np.r_[np.zeros(10), np.full(90, 900.0)]          # nothing for 10 samples, then live share x base
    whole = fail.sum() / (0.9 * base.sum())
    r = failure_transient(t, base, fail, 0.9, paper_timeslots=10_000)
    assert r["settled"] and r["steady"] == 1.0 and r["deficit_bytes"] == 9000.0
    assert r["transient_us"] == round(10 * 100 * TAU / 1e6, 3)
    assert abs(r["projected_paper"] - whole) < 1e-12
    assert failure_transient(t, base, fail, 0.9, paper_timeslots=100_000)["projected_paper"] == 0.99
    # catching up after the failure (last quarters above 1): projected at pace 1, a lower
    # bound; at the run's own length it is again the measured whole-run ratio
    up = np.r_[np.zeros(10), np.full(40, 900.0), np.full(50, 1000.0)]
    r = failure_transient(t, base, up, 0.9, paper_timeslots=10_000)
    assert r["settled"] and r["steady"] > 1.1 and r["deficit_bytes"] == 4000.0
    assert abs(r["projected_paper"] - up.sum() / (0.9 * base.sum())) < 1e-6      # printed to 6 places
    # still falling in the second half: no projection
    ramp = np.linspace(900.0, 300.0, 100)
    r = failure_transient(t, base, ramp, 0.9)
    assert not r["settled"] and r["projected_paper"] is None
