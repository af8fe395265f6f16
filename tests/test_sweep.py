"""Sweeps on every executor, resuming, failed points, the results database and the report."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import opendcn as od
from opendcn.experiments import db as results
from opendcn.experiments.sweeps import load_sweep, sweep
from opendcn.experiments.sweep_report import sweep_report, write_sweep_report

TINY = {"arch": "rotornet", "duration": "60us", "options": {"nodes": 4, "uplinks": 1},
        "vary": {"load": [0.2, 0.5], "routing": ["vlb", "direct"], "seed": [1, 2]}}


def _rows(root: Path) -> dict[str, dict]:
    """Each point's summary as written, without the wall-clock fields."""
    out = {}
    for f in sorted(root.rglob("summary.json")):
        s = json.loads(f.read_text())
        s.pop("wall_s")
        out[str(f.parent.relative_to(root))] = s
    return out


@pytest.fixture(scope="module")
def local_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep") / "local"
    recs = sweep(TINY, root, workers=2)
    return root, recs


def test_grid_points_and_partitions(local_tree):
    root, recs = local_tree
    assert [r["status"] for r in recs] == ["ok"] * 8
    paths = sorted(str(p.parent.relative_to(root)) for p in root.rglob("point.json"))
    assert len(paths) == 8 and "arch=rotornet/load=0.2/routing=vlb/seed=1" in paths
    for p in root.rglob("point.json"):
        for f in ("summary.json", "spec.json", "flows.parquet", "timeseries.parquet", "summary.parquet"):
            assert (p.parent / f).is_file()
    index = json.loads((root / "sweep.json").read_text())
    assert len(index["points"]) == 8 and {p["status"] for p in index["points"]} == {"ok"}


def test_dask_local_cluster_gives_identical_results(local_tree, tmp_path):
    root, _ = local_tree
    recs = sweep(TINY, tmp_path / "dask", executor="dask", workers=2)
    assert [r["status"] for r in recs] == ["ok"] * 8
    assert _rows(tmp_path / "dask") == _rows(root)


def test_submitit_local_executor(local_tree, tmp_path):
    root, _ = local_tree
    spec = {**TINY, "vary": {"load": [0.2], "routing": ["vlb"], "seed": [1]}}
    recs = sweep(spec, tmp_path / "sub", executor="submitit-local")
    assert [r["status"] for r in recs] == ["ok"]
    key = "arch=rotornet/load=0.2/routing=vlb/seed=1"
    assert _rows(tmp_path / "sub")[key] == _rows(root)[key]


def test_rerun_skips_done_points_and_reruns_a_deleted_one(local_tree, tmp_path):
    root, _ = local_tree
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    assert [r["status"] for r in sweep(TINY, copy, workers=2)] == ["skipped"] * 8
    gone = copy / "arch=rotornet/load=0.5/routing=direct/seed=2"
    before = (gone / "summary.json").read_text()
    shutil.rmtree(gone)
    recs = sweep(TINY, copy, workers=2)
    assert sorted(r["status"] for r in recs) == ["ok"] + ["skipped"] * 7
    assert next(r for r in recs if r["status"] == "ok")["path"] == str(gone.relative_to(copy))
    after = json.loads((gone / "summary.json").read_text())
    after.pop("wall_s")
    was = json.loads(before)
    was.pop("wall_s")
    assert after == was
    # a point whose parameters changed is not mistaken for done
    changed = {**TINY, "duration": "70us"}
    assert {r["status"] for r in sweep(changed, copy, workers=2)} == {"ok"}


def test_a_failed_point_is_recorded_and_the_rest_complete(tmp_path):
    spec = {**TINY, "vary": {"load": [0.2], "routing": ["vlb", "warp"], "seed": [1]}}
    recs = sweep(spec, tmp_path / "f", workers=2)
    by = {r["path"]: r for r in recs}
    bad = by["arch=rotornet/load=0.2/routing=warp/seed=1"]
    assert bad["status"] == "failed" and "ConfigError" in bad["error"] and "--routing" in bad["error"]
    assert by["arch=rotornet/load=0.2/routing=vlb/seed=1"]["status"] == "ok"
    assert not (tmp_path / "f/arch=rotornet/load=0.2/routing=warp").exists()   # nothing half-written
    assert json.loads((tmp_path / "f/failed" / f"{bad['hash']}.json").read_text())["error"] == bad["error"]
    assert not list((tmp_path / "f").rglob(".*tmp-*"))


def test_the_run_mode_is_a_sweep_parameter(tmp_path):
    """``mode`` chooses the engine per point; packet points keep the hash they had
    before the mode could be chosen; a flow point's summary says so."""
    spec = {"arch": "fattree", "duration": "60us", "options": {"nodes": 8, "radix": 8, "hosts_per_rack": 2},
            "vary": {"mode": ["packet", "flow"]}}
    recs = sweep(spec, tmp_path / "m", workers=1)
    by = {r["path"]: r for r in recs}
    assert {r["status"] for r in recs} == {"ok"}
    flow = json.loads((tmp_path / "m/arch=fattree/mode=flow/seed=1/summary.json").read_text())
    packet = json.loads((tmp_path / "m/arch=fattree/mode=packet/seed=1/summary.json").read_text())
    assert flow["mode"] == "flow" and packet.get("mode", "packet") == "packet"
    assert flow["bytes"]["offered"] == packet["bytes"]["offered"]
    plain = load_sweep({**spec, "vary": {"seed": [1]}}).points[0]
    assert by["arch=fattree/mode=packet/seed=1"]["hash"] == plain.spec_hash
    cols, rows = results.query(tmp_path / "m", "select mode, bytes_delivered from runs order by mode")
    assert [r[0] for r in rows] == ["flow", "packet"]
    with pytest.raises(od.ConfigError) as e:
        load_sweep({**spec, "vary": {"mode": ["fluid"]}})
    assert e.value.field == "sweep.vary.mode"


def test_query_returns_the_numbers_of_the_summaries(local_tree):
    root, _ = local_tree
    cols, rows = results.query(root, "select path, goodput, p99_mice_us, bytes_delivered, seed, load, routing "
                                     "from runs order by path")
    assert len(rows) == 8
    for path, goodput, p99, delivered, seed, load, routing in rows:
        s = json.loads((root / path / "summary.json").read_text())
        assert goodput == s["goodput_normalized"] and p99 == s["fct_us"]["mice"]["p99"]
        assert delivered == s["bytes"]["delivered"] and seed == s["seed"]
        assert f"load={load}" in path and f"routing={routing}" in path
    cols, rows = results.query(root, "select path, sum(flows) from fct_by_size group by path order by path")
    for path, n in rows:
        assert n == json.loads((root / path / "summary.json").read_text())["flows"]["started"]
    rel = od.results(root)
    assert len(rel.fetchall()) == 8
    assert rel.filter("load > 0.3").aggregate("count(*)").fetchall() == [(4,)]
    cols, rows = results.query(root, "select * from goodput_vs_load")
    assert len(rows) == 4 and "goodput" in cols


def test_report_references_only_existing_files_and_labels_every_axis(local_tree, tmp_path):
    root, _ = local_tree
    figs, page = sweep_report(root)
    for name, fig in figs.items():
        for ax in fig.axes:
            if not ax.get_visible() or not ax.axison:
                continue                                # the grid's free cell: the legend
            assert ax.get_xlabel() and ax.get_ylabel(), name
            assert "(" in ax.get_ylabel() or ax.get_ylabel().startswith("fraction"), (name, ax.get_ylabel())
    out = write_sweep_report(root, tmp_path / "rep")
    html = out.read_text()
    # self-contained: every image embedded, nothing loaded from elsewhere
    refs = re.findall(r"(?:src|href)=['\"]([^'\"]+)['\"]", html)
    assert refs and all(r.startswith("data:image/png;base64,") for r in refs)
    files = re.findall(r"data-file='([^']+)'", html)
    assert len(files) == len(refs) and all((out.parent / f).is_file() for f in files)
    assert {"by_load.png", "by_routing.png"} <= set(files)
    # the per-parameter plots are a grid at page width (not one thin row), each titled, and
    # every table scrolls inside its own box
    for name in ("by_load.png", "by_routing.png"):
        w, h = figs[name].get_size_inches()
        assert w <= 14 and h >= 3.5 and figs[name]._suptitle is not None
    assert html.count("<div class='scroll'><table>") == html.count("<table>")


def _cli(*args, cwd=None):
    exe = Path(sys.executable).parent / "opendcn"
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("text, field", [
    ("arch = \"rotornet\"\n[vary\n", "sweep"),
    ("arch = \"rotornet\"\n[options]\nwarp = 3\n", "sweep.options.warp"),
    ("arch = \"rotornet\"\n[vary]\nload = []\n", "sweep.vary.load"),
    ("arch = \"nosuchnet\"\n", "ARCH"),
    ("arch = \"rotornet\"\nsped = 3\n", "sweep.sped"),
])
def test_bad_sweep_files_are_named_errors(tmp_path, text, field):
    f = tmp_path / "s.toml"
    f.write_text(text)
    with pytest.raises(od.ConfigError) as e:
        load_sweep(f)
    assert e.value.field == field
    p = _cli("sweep", f, "--out", tmp_path / "o", "--no-progress")
    assert p.returncode == 2 and field in p.stderr
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").rglob("point.json"))


def test_cli_sweep_query_report_and_unreachable_scheduler(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('arch = "rotornet"\nduration = "40us"\n[options]\nnodes = 4\nuplinks = 1\n[vary]\nload = [0.2, 0.4]\n')
    p = _cli("sweep", f, "--out", tmp_path / "o", "--no-progress")
    assert p.returncode == 0, p.stderr
    assert "2 points: 2 run" in p.stdout
    q = _cli("query", tmp_path / "o", "select load, goodput from runs order by load", "--format", "json")
    assert q.returncode == 0, q.stderr
    rows = json.loads(q.stdout)
    assert [r["load"] for r in rows] == [0.2, 0.4]
    assert _cli("report", tmp_path / "o").returncode == 0 and (tmp_path / "o" / "report.html").is_file()
    bad = _cli("query", tmp_path / "o", "select nosuchcolumn from runs")
    assert bad.returncode == 2 and "nosuchcolumn" in bad.stderr
    dead = _cli("sweep", f, "--out", tmp_path / "d", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9",
                "--no-progress")
    assert dead.returncode == 2 and "--scheduler" in dead.stderr
    assert not list((tmp_path / "d").rglob("point.json"))


def test_a_second_sweep_into_a_tree_being_written_is_refused(tmp_path):
    """While one process sweeps into a tree (it holds the tree's .lock), another sweep or
    study into the same tree is a named error (CLI exit 2) and writes no point; once the
    first is done, the tree takes sweeps again."""
    import fcntl
    import os

    root = tmp_path / "o"
    root.mkdir()
    spec = {**TINY, "vary": {"load": [0.2], "seed": [1]}}
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)       # the other process
        with pytest.raises(od.ConfigError) as e:
            sweep(spec, root, workers=1)
        assert e.value.field == "--out" and "writing into it" in str(e.value)
        f = tmp_path / "s.toml"
        f.write_text('arch = "rotornet"\nduration = "40us"\n[options]\nnodes = 4\nuplinks = 1\n')
        p = _cli("sweep", f, "--out", root, "--no-progress")
        assert p.returncode == 2 and "--out" in p.stderr
        assert not list(root.rglob("point.json"))
    finally:
        os.close(fd)
    assert [r["status"] for r in sweep(spec, root, workers=1)] == ["ok"]


def test_every_point_records_the_build_that_computed_it(local_tree, tmp_path):
    from opendcn.studies.base import Runner, provenance_line
    from opendcn.experiments.sweeps import build_id

    root, recs = local_tree
    me = build_id()
    assert re.fullmatch(r"\d+\.\d+\.\d+\+[0-9a-f]{12}", me) and build_id() == me
    assert {r["build"] for r in recs} == {me}
    assert {json.loads(p.read_text())["build"] for p in root.rglob("point.json")} == {me}
    # the index names the build of skipped points too (read from their point.json)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    assert [r["status"] for r in sweep(TINY, copy, workers=2)] == ["skipped"] * 8
    assert {p["build"] for p in json.loads((copy / "sweep.json").read_text())["points"]} == {me}
    # a study says which builds computed the points it read; a point stored by another
    # build (or before points recorded theirs) is counted apart and named
    R = Runner(tmp_path / "study")
    opts = {"nodes": 4, "uplinks": 1, "routing": "vlb"}
    R.get("rotornet", opts, {"load": 0.2}, "60us")
    assert R.provenance() == {"this_build": me, "points_by_build": {me: 1}, "points_from_other_builds": 0}
    assert provenance_line(R.provenance()) == f"builds: all 1 points computed by this build ({me})"
    (p,) = (tmp_path / "study").rglob("point.json")
    rec = json.loads(p.read_text())
    rec["build"] = "0.0.9+000000000000"
    p.write_text(json.dumps(rec))
    R2 = Runner(tmp_path / "study")
    R2.get("rotornet", opts, {"load": 0.2}, "60us")           # read, not run again
    R2.get("rotornet", opts, {"load": 0.5}, "60us")
    prov = R2.provenance()
    assert prov["points_by_build"] == {me: 1, "0.0.9+000000000000": 1} and prov["points_from_other_builds"] == 1
    assert "1 of 2 points were computed by another build" in provenance_line(prov)
    assert "1 by 0.0.9+000000000000" in provenance_line(prov)


def test_progress_lines_say_each_point_and_the_time_left(tmp_path, capsys):
    """Output that is not a terminal gets one line per finished point, with an ETA."""
    spec = {**TINY, "vary": {"load": [0.2, 0.5], "routing": ["vlb"], "seed": [1]}}
    sweep(spec, tmp_path / "lines", workers=1, progress="lines")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2
    assert err[0].startswith("[1/2] arch=rotornet/load=0.2/routing=vlb/seed=1 ok (eta ")
    assert err[1] == "[2/2] arch=rotornet/load=0.5/routing=vlb/seed=1 ok"


def test_the_example_sweeps_queries_run_and_fct_by_size_names_its_runs(tmp_path):
    """Every ``opendcn query`` in examples/sweep_small.toml's comment answers on that sweep
    (run here at 60 us), and fct_by_size carries each run's arch and load."""
    root_dir = Path(__file__).resolve().parents[1]
    text = (root_dir / "examples" / "sweep_small.toml").read_text()
    queries = re.findall(r'opendcn query \S+ "([^"]+)"', text)
    assert len(queries) >= 2
    spec = load_sweep(root_dir / "examples" / "sweep_small.toml")
    small = {"duration": "60us", "options": {"nodes": 4, "workload": "hadoop"},
             "vary": {"arch": ["rotornet", "clos"], "load": [0.3], "seed": [1]}}
    assert set(small["vary"]) <= set(spec.varied) | {"seed"}
    sweep(small, tmp_path / "s", workers=2)
    for q in queries:
        _, rows = results.query(tmp_path / "s", q)
        assert rows, q
    con = results.connect(tmp_path / "s")
    cols = [r[0] for r in con.execute("DESCRIBE fct_by_size").fetchall()]
    assert {"arch", "load", "bucket", "p99_fct_us"} <= set(cols)
    assert {r[0] for r in con.execute("SELECT DISTINCT arch FROM fct_by_size").fetchall()} == {"rotornet", "clos"}


def test_ctrl_c_stops_a_local_sweep_at_once(tmp_path):
    """SIGINT to the sweep's process group (what a terminal sends) while its workers run
    long points: exit 130 within seconds, the points under way abandoned (they run again
    next time), the index written."""
    from conftest import interrupt_after

    toml = tmp_path / "long.toml"
    toml.write_text('duration = "1s"\nmode = "grid"\n[options]\nnodes = 64\nuplinks = 4\n'
                    '[vary]\narch = ["rotornet"]\nload = [0.3, 0.5, 0.7]\n')
    out = tmp_path / "sw"
    p, err, took = interrupt_after(["sweep", str(toml), "--out", str(out), "--workers", "2"], 5, "sweep")
    assert took < 10.0, err
    assert p.returncode == 130 and "Traceback" not in err
    index = json.loads((out / "sweep.json").read_text())
    assert [x["status"] for x in index["points"]] == ["not run"] * 3


@pytest.mark.parametrize("spec, field", [
    ({"arch": "clos", "vary": {"load": [0.5, 1.5]}}, "sweep.vary.load"),
    ({"arch": "clos", "options": {"load": 0}}, "sweep.options.load"),
    ({"arch": "clos", "vary": {"load": ["high"]}}, "sweep.vary.load"),
])
def test_a_sweep_keeps_the_load_bound_of_run(spec, field):
    with pytest.raises(od.ConfigError) as e:
        load_sweep(spec)
    assert e.value.field == field and "(0, 1]" in str(e.value)


def test_a_relative_input_file_is_made_absolute_at_submission(tmp_path, monkeypatch):
    """A worker in another working directory reads the file the sweep names, not one of
    the same name beside it; the point's hash keeps the file's content."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.csv").write_text("start,src,dst,bytes\n0,0,5,1000\n")
    rel = load_sweep({"arch": "clos", "options": {"nodes": 8, "flows_file": "f.csv"}, "vary": {"seed": [1]}})
    p = rel.points[0]
    assert p.run["flows_file"] == str(tmp_path / "f.csv")
    absolute = load_sweep({"arch": "clos", "options": {"nodes": 8, "flows_file": str(tmp_path / "f.csv")},
                           "vary": {"seed": [1]}})
    assert absolute.points[0].spec_hash == p.spec_hash


def test_the_reports_size_table_is_in_size_order_within_each_group(local_tree):
    root, _ = local_tree
    _, page = sweep_report(root)
    table = page[page.rindex("<table"):].replace("&lt;", "<").replace("&gt;", ">")
    order = ["<10KB", "10KB-100KB", "100KB-1MB", "1MB-10MB", ">=10MB"]
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
    rows = [r for r in rows if any(c in order for c in r)]
    k = next(i for i, c in enumerate(rows[0]) if c in order)        # the bucket column
    by_group: dict[tuple[str, ...], list[int]] = {}
    for r in rows:
        by_group.setdefault(tuple(r[:k]), []).append(order.index(r[k]))
    assert any(len(v) > 1 for v in by_group.values())
    assert all(v == sorted(v) for v in by_group.values()), by_group
