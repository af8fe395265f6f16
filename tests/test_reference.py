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
    with pytest.raises(ConfigError, match="--tors"):
        reproduce.run("shale", out=tmp_path, reference="read", tors=16)


def test_shale_renders_from_its_records_or_names_the_first_missing_one(tmp_path):
    """Shale keeps reference records too: without them every claim is NOT-CHECKABLE and
    names what is missing, at once (its generated flow files are taken by the digests kept
    when they were recorded, never generated to render)."""
    import time

    from opendcn import studies as reproduce
    from opendcn.studies.shale import CLAIMS

    lines: list[str] = []
    cwd = os.getcwd()
    t0 = time.perf_counter()
    try:
        os.chdir(tmp_path)                   # a tree without reproductions/shale
        code = reproduce.run("shale", out=tmp_path / "out", reference="read", echo=lines.append)
    finally:
        os.chdir(cwd)
    assert time.perf_counter() - t0 < 60
    data = json.loads((tmp_path / "out" / "shale.json").read_text())
    assert [c["claim"] for c in data["claims"]] == list(CLAIMS) and code == 0
    assert all(c["status"] == "NOT-CHECKABLE" and "reference" in c["detail"] for c in data["claims"])
    assert not (tmp_path / "out" / "traces").exists()


def test_record_only_runs_the_named_points_and_reads_the_others(tmp_path):
    """``--record --only PREFIX``: the points whose label starts with PREFIX run again and
    are recorded; every other point comes from its record, and nothing else is written."""
    ref = Reference(tmp_path / "ref", "record")
    R = Runner(tmp_path / "runs", workers=1, echo=lambda _: None, reference=ref)
    a, b = _tiny(R, "tiny/a"), _tiny(R, "tiny/b", slice_="40us")
    assert R.save_reference() == 2
    before_b = (tmp_path / "ref" / "points" / "tiny__b.json").read_text()
    # record a second time, only tiny/a: tiny/b is read back, its record untouched
    rec_a = tmp_path / "ref" / "points" / "tiny__a.json"
    rec_a.write_text(rec_a.read_text().replace(a.summary["trace_hash"], "0" * 16))
    part = Runner(tmp_path / "runs2", workers=1, echo=lambda _: None,
                  reference=Reference(tmp_path / "ref", "record", only=("tiny/a",)))
    assert part.reads("tiny/b") and not part.reads("tiny/a")
    got_b = _tiny(part, "tiny/b", slice_="40us")
    assert isinstance(got_b, RefPoint) and got_b.summary == b.summary
    _tiny(part, "tiny/a")
    assert part.save_reference() == 1
    assert json.loads(rec_a.read_text())["trace_hash"] == a.summary["trace_hash"]
    assert (tmp_path / "ref" / "points" / "tiny__b.json").read_text() == before_b
    with pytest.raises(Exception, match="--only"):
        Reference(tmp_path / "ref", "read", only=("tiny/a",))


def test_only_is_refused_without_record_and_for_a_study_that_cannot_refresh_single_records(tmp_path):
    from opendcn import studies
    from opendcn.errors import ConfigError

    with pytest.raises(ConfigError, match="--only"):
        studies.run("openoptics", out=tmp_path, reference="read", only=("pb/",))
    with pytest.raises(ConfigError, match="--only"):
        studies.run("negotiator", out=tmp_path, reference="record", only=("x/",))


def test_a_flow_file_is_part_of_a_point_by_its_content_not_its_path(tmp_path):
    a, b = tmp_path / "a.htsim", tmp_path / "elsewhere" / "b.htsim"
    b.parent.mkdir()
    a.write_text("0 1 1000 0\n")
    b.write_text("0 1 1000 0\n")
    pa = Point("rotornet", {"nodes": 4}, {"flows_file": str(a)}, "50us", 1)
    pb = Point("rotornet", {"nodes": 4}, {"flows_file": str(b)}, "50us", 1)
    assert pa.spec_hash == pb.spec_hash
    b.write_text("0 2 1000 0\n")
    pb2 = Point("rotornet", {"nodes": 4}, {"flows_file": str(b)}, "50us", 1)
    assert pb2.spec_hash != pa.spec_hash


def test_reproduce_opera_renders_its_records_with_the_verdicts_they_decide(tmp_path):
    from opendcn import studies as reproduce

    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        reproduce.run("opera", out=tmp_path, echo=lambda _: None, reference="read")
    finally:
        os.chdir(cwd)
    data = json.loads((tmp_path / "opera.json").read_text())
    assert data["mode"] == "reference" and len(data["mix"]) == 8 and data["fct"][0]["matched_flows"] > 1000
    status = [c["status"] for c in data["claims"]]
    assert status[-1] == "NOT-CHECKABLE" and status.count("NOT-CHECKABLE") == 1    # determinism only
    assert data["fct_ws10"]["flows"] == data["fct_ws10"]["opera_sim_flows"] > 5000
    # the Figure-10 points fall with the load, in opera-sim's unit (every byte on the host downlinks)
    thr = [x["throughput"] for x in data["mix"]]
    assert all(a > b for a, b in zip(thr, thr[1:]))
    assert all(x["throughput"] > x["payload_throughput"] for x in data["mix"])
    assert not any((tmp_path / "runs").rglob("summary.json"))



def test_record_missing_runs_only_the_points_without_a_complete_record(tmp_path):
    """`reproduce NAME --record --missing`: a point with a record of its spec is read, one
    without is run and its record written at once (marked incomplete until the study
    derives its metrics and rewrites it), a stale one is run again."""
    first = Runner(tmp_path / "runs1", workers=1, echo=lambda _: None, reference=Reference(tmp_path / "ref", "record"))
    a = _tiny(first, "tiny/a")
    first.save_reference()

    R = Runner(tmp_path / "runs2", workers=1, echo=lambda _: None,
               reference=Reference(tmp_path / "ref", "record", missing=True))
    assert isinstance(_tiny(R, "tiny/a"), RefPoint)                   # recorded: read, not run
    assert not (tmp_path / "runs2").exists()
    b = _tiny(R, "tiny/b", slice_="40us")                             # no record: run, kept at once
    rec_b = json.loads((tmp_path / "ref" / "points" / "tiny__b.json").read_text())
    assert rec_b["complete"] is False and rec_b["trace_hash"] == b.summary["trace_hash"]
    assert not R.reference.reads("tiny/b")                            # incomplete: a later sitting runs it
    R.save_reference()
    assert "complete" not in json.loads((tmp_path / "ref" / "points" / "tiny__b.json").read_text())
    assert R.reference.reads("tiny/b")

    stale = Runner(tmp_path / "runs3", workers=1, echo=lambda _: None,
                   reference=Reference(tmp_path / "ref", "record", missing=True))
    again = _tiny(stale, "tiny/a", slice_="30us")                     # record of another spec: run again
    assert not isinstance(again, RefPoint) and again.summary["trace_hash"] != a.summary["trace_hash"]

    only = Reference(tmp_path / "ref", "record", only=("tiny/c",), missing=True)
    assert only.reads("tiny/b") and not only.reads("tiny/c")          # outside --only: read; inside, missing: run
    picky = Runner(tmp_path / "runs4", workers=1, echo=lambda _: None, reference=only)
    with pytest.raises(MissingReference):                              # outside --only and without a record:
        _tiny(picky, "tiny/z", slice_="60us")                          # missing, never run
    assert not (tmp_path / "runs4").exists()
    with pytest.raises(Exception, match="--missing"):
        Reference(tmp_path / "ref", "read", missing=True)


def test_record_missing_prefetch_writes_each_rounds_records_as_it_ends(tmp_path):
    """A study's labelled prefetch under --missing runs only the points without a record
    and keeps each one's record as soon as its round of workers ends, before the study
    reads anything (an interrupted recording keeps what it ran)."""
    first = Runner(tmp_path / "runs1", workers=1, echo=lambda _: None, reference=Reference(tmp_path / "ref", "record"))
    _tiny(first, "tiny/a")
    first.save_reference()
    R = Runner(tmp_path / "runs2", workers=1, echo=lambda _: None,
               reference=Reference(tmp_path / "ref", "record", missing=True))
    spec = {"nodes": 4, "uplinks": 1}
    pts = [R.point("rotornet", {**spec, "slice": s}, {"load": 0.3}, "50us", 1) for s in ("20us", "30us", "40us")]
    R.prefetch(pts, labels=["tiny/a", "tiny/c", "tiny/d"])
    recs = {f.name: json.loads(f.read_text()) for f in (tmp_path / "ref" / "points").glob("*.json")}
    assert set(recs) == {"tiny__a.json", "tiny__c.json", "tiny__d.json"}
    assert "complete" not in recs["tiny__a.json"]                          # read, not run
    assert recs["tiny__c.json"]["complete"] is False and recs["tiny__d.json"]["complete"] is False
    assert not (tmp_path / "runs2" / pts[0].relpath()).exists() and (tmp_path / "runs2" / pts[1].relpath()).exists()


def test_record_missing_with_derivers_writes_complete_records_as_points_run(tmp_path):
    """A study that names what it derives from each point's tables (Duo: the steady
    throughput, the quarters, the FCT by size) gets complete records from --missing
    rounds: an interrupted recording keeps usable records, read back with their metrics."""
    seen: list[str] = []

    def derivers(label: str):
        seen.append(label)
        return {"delivered": lambda r: r.summary["bytes"]["delivered"],
                "flows": lambda r: int(len(r.flows))}

    R = Runner(tmp_path / "runs", workers=1, echo=lambda _: None, derivers=derivers,
               reference=Reference(tmp_path / "ref", "record", missing=True))
    spec = {"nodes": 4, "uplinks": 1}
    pts = [R.point("rotornet", {**spec, "slice": s}, {"load": 0.3}, "50us", 1) for s in ("20us", "30us")]
    R.prefetch(pts, labels=["tiny/a", "tiny/b"])
    assert seen == ["tiny/a", "tiny/b"]
    for lab in ("tiny__a", "tiny__b"):
        rec = json.loads((tmp_path / "ref" / "points" / f"{lab}.json").read_text())
        assert "complete" not in rec and rec["derived"]["delivered"] == rec["summary"]["bytes"]["delivered"] > 0
        assert rec["derived"]["flows"] == rec["summary"]["flows"]["started"]
    # the study stopped there: a reader renders the two points without running anything
    reader = Runner(tmp_path / "nothing", echo=lambda _: None, reference=Reference(tmp_path / "ref", "read"))
    got = _tiny(reader, "tiny/b", slice_="30us")
    assert reader.derive(got, "flows", lambda x: 1 / 0) == got.summary["flows"]["started"]
    assert not (tmp_path / "nothing").exists()


@pytest.mark.skipif(not (ROOT / "reproductions" / "shale" / "points").is_dir(), reason="no Shale records in this tree")
def test_shale_judges_each_section_from_the_records_it_has(tmp_path):
    """Shale's full study is recorded across sittings: a section whose points are all
    recorded is judged (the end-host state's scale points are), every other claim is
    NOT-CHECKABLE naming a missing point; nothing is run or generated."""
    from opendcn import studies as reproduce
    from opendcn.studies.shale import CLAIMS

    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        reproduce.run("shale", out=tmp_path, reference="read", echo=lambda _: None)
    finally:
        os.chdir(cwd)
    data = json.loads((tmp_path / "shale.json").read_text())
    got = {c["claim"][:40]: c for c in data["claims"]}
    assert len(data["claims"]) == len(CLAIMS)
    scale = got[CLAIMS[7][:40]]
    assert scale["status"] in ("PASS", "FAIL") and "active buckets x" in scale["detail"]
    for c in data["claims"]:
        assert c["status"] in ("PASS", "FAIL") or "reference" in c["detail"] or "rendered from" in c["detail"]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "traces").exists()
