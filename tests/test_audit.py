"""`opendcn reproduce NAME --audit SECONDS`: stored reference records rerun with this build;
a record whose point now runs differently is named and the exit code says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from opendcn.studies.base import audit
from opendcn.studies.base import Reference, Runner

EXE = Path(sys.executable).parent / "opendcn"


def _record(root: Path) -> Path:
    R = Runner(root / "runs", workers=1, echo=lambda _: None,
               reference=Reference(root / "reproductions" / "opera", "record"))
    R.get("rotornet", {"nodes": 4, "uplinks": 1, "slice": "20us"}, {"load": 0.3}, "50us", 1, label="tiny/a")
    R.get("rotornet", {"nodes": 4, "uplinks": 1, "slice": "40us"}, {"load": 0.3}, "50us", 1, label="tiny/b")
    R.save_reference()
    return root / "reproductions" / "opera" / "points"


def test_audit_reruns_records_and_names_the_one_that_no_longer_matches(tmp_path, monkeypatch):
    pts = _record(tmp_path)
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    assert audit("opera", max_wall_s=60, workers=1, echo=lines.append) == 0
    assert "2 rerun and identical, 0 differ" in lines[-1]

    f = pts / "tiny__b.json"                         # a record from a build that ran it otherwise
    rec = json.loads(f.read_text())
    rec["trace_hash"] = "0" * 16
    f.write_text(json.dumps(rec))
    lines.clear()
    assert audit("opera", max_wall_s=60, workers=1, echo=lines.append) == 1
    assert "1 rerun and identical, 1 differ" in lines[-1]
    assert any("tiny/b" in x and "DIFFERS" in x for x in lines)

    rec["summary"]["wall_s"] = 1e6                   # too long to rerun here: listed, not judged
    f.write_text(json.dumps(rec))
    lines.clear()
    assert audit("opera", max_wall_s=60, workers=1, echo=lines.append) == 0
    assert any("tiny/b" in x and "not rerun" in x for x in lines)


def test_audit_on_the_cli_refuses_bad_input_with_exit_2(tmp_path):
    r = subprocess.run([str(EXE), "reproduce", "opera", "--audit", "0"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "--audit" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([str(EXE), "reproduce", "nosuch", "--audit", "5"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "nosuch" in r.stderr
    r = subprocess.run([str(EXE), "reproduce", "opera", "--audit", "5"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "no reference records" in r.stderr
