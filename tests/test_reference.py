"""Reference results (``reproductions/<paper>/``): a study's full-scale points kept in the
source tree as small records, rendered by ``opendcn reproduce <paper> --reference``; a
stored point rerun now must give the summary its record keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from opendcn.studies.base import MissingReference, Reference, RefPoint, Runner
from opendcn.experiments.sweeps import Point, run_point

ROOT = Path(__file__).resolve().parents[1]
RECORDS = sorted((ROOT / "reproductions").glob("*/points/*.json"))


def _tiny(R: Runner, label: str, slice_: str = "20us"):
    return R.get("rotornet", {"nodes": 4, "uplinks": 1, "slice": slice_}, {"load": 0.3}, "50us", 1, label=label)


def test_a_recorded_point_is_read_back_with_its_derived_metrics(tmp_path):
    ref = Reference(tmp_path / "ref", "record")
    R = Runner(tmp_path / "runs", workers=1, echo=lambda _: None, reference=ref)
    r = _tiny(R, "tiny/a")
    assert R.derive(r, "delivered", lambda x: x.summary["bytes"]["delivered"]) == r.summary["bytes"]["delivered"]
    assert R.save_reference() == 1
    rec = json.loads((tmp_path / "ref" / "points" / "tiny__a.json").read_text())
    assert rec["trace_hash"] == r.summary["trace_hash"] and rec["point"]["arch"] == "rotornet"

    reader = Runner(tmp_path / "nothing", echo=lambda _: None, reference=Reference(tmp_path / "ref", "read"))
    got = _tiny(reader, "tiny/a")
    assert isinstance(got, RefPoint) and got.summary == r.summary
    assert reader.derive(got, "delivered", lambda x: 1 / 0) == r.summary["bytes"]["delivered"]
    assert not (tmp_path / "nothing").exists()           # reading runs nothing
    with pytest.raises(MissingReference, match="stale"):
        _tiny(reader, "tiny/a", slice_="40us")           # the study now runs another spec
    with pytest.raises(MissingReference, match="no reference record"):
        _tiny(reader, "tiny/b")
    with pytest.raises(MissingReference, match="lacks the derived metric"):
        reader.derive(got, "other", lambda x: 0)


@pytest.mark.skipif(not RECORDS, reason="no reference records in this tree")
def test_the_cheapest_stored_reference_point_still_gives_its_record(tmp_path):
    """Rerun the stored point with the fewest events: a summary that no longer matches
    means the record is stale (refresh it with `reproduce <paper> --record`)."""
    recs = [json.loads(f.read_text()) for f in RECORDS]
    rec = min((r for r in recs if not r.get("point_elided")), key=lambda r: r["summary"].get("events", 0))
    p = Point(**{k: rec["point"][k] for k in ("arch", "options", "run", "duration", "seed")})
    assert p.spec_hash == rec["spec_hash"], f"{rec['label']}: the point's spec changed since it was recorded"
    out = run_point(p, str(tmp_path))
    assert out["status"] == "ok", out
    now = json.loads((tmp_path / p.relpath() / "summary.json").read_text())
    for key in rec.get("trimmed", []):                  # long series the record leaves out
        section, name = key.split(".", 1)
        now[section].pop(name, None)
    assert now["trace_hash"] == rec["trace_hash"], rec["label"]
    drop = ("wall_s",)
    assert {k: v for k, v in now.items() if k not in drop} == {k: v for k, v in rec["summary"].items() if k not in drop}


def test_reproduce_renders_from_the_records_without_running(tmp_path):
    from opendcn import studies as reproduce

    lines: list[str] = []
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        code = reproduce.run("openoptics", out=tmp_path, echo=lines.append, reference="read")
    finally:
        os.chdir(cwd)
    assert code in (0, 1)
    data = json.loads((tmp_path / "openoptics.json").read_text())
    assert data["mode"] == "reference" and "reference" in data["provenance"]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("summary.json"))
    status = {c["claim"]: c["status"] for c in data["claims"]}
    assert status["deterministic (same seed, same summary)"] == "NOT-CHECKABLE"
    for c in data["claims"]:
        if c["status"] == "NOT-CHECKABLE" and c["detail"].startswith("reference:"):
            assert "--record" in c["detail"]


def test_reference_needs_the_full_scale_and_a_study_with_records(tmp_path):
    from opendcn import studies as reproduce
    from opendcn.errors import ConfigError

    with pytest.raises(ConfigError, match="--quick"):
        reproduce.run("openoptics", quick=True, out=tmp_path, reference="read")
    with pytest.raises(ConfigError, match="no reference records"):
        reproduce.run("shale", out=tmp_path, reference="read")
