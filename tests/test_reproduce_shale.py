"""``opendcn reproduce shale`` end to end at a tiny size (16 nodes: h = 1, 2 and 4 exist;
2 000 timeslots per loaded run): every claim has a status and its numbers, the runs' own
checks hold, the JSON, plots and HTML page are written."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from opendcn import reproduce
from opendcn.errors import ConfigError
from opendcn.reproduce_shale import CCS

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
    html = (tmp_path / "index.html").read_text()
    imgs = re.findall(r"<img src='([^']+)'", html)
    assert imgs and all((tmp_path / i).stat().st_size > 0 for i in imgs)
    assert html.count("<tr>") > 30 and "PASS" in html
    # resumable: a second run reads every point from the tree
    again: list[str] = []
    reproduce.run("shale", quick=True, out=tmp_path, echo=again.append, tors=16, duration="11.264us", workers=1)
    assert any(re.search(r"0 run now, \d+ stored from before", ln) for ln in again)


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
