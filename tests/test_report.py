"""Tests of opendcn.experiments.analysis (statistics over per-flow records) and opendcn.experiments.report."""

from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from opendcn.experiments import analysis, report
from opendcn.experiments.analysis import (
    compare_table,
    delivered_series,
    fct_cdf,
    fct_stats,
    format_table,
    goodput_series,
    rich_table,
    shale_edges,
    size_buckets,
)
from opendcn.experiments.report import write_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SIZES = [500, 5_000, 9_999, 10_000, 50_000, 500_000, 5_000_000, 20_000_000]


def make_flows(n: int = 400, seed: int = 7, incomplete_every: int = 7) -> pa.Table:
    """``n`` flows with random sizes from SIZES and random FCTs; every
    ``incomplete_every``-th flow did not complete."""
    rng = np.random.default_rng(seed)
    size = rng.choice(SIZES, size=n).astype(np.int64)
    start = rng.integers(0, 10**9, size=n, dtype=np.int64)
    fct = rng.integers(10**6, 10**9, size=n, dtype=np.int64)
    ideal = np.maximum(size * 80, 1).astype(np.int64)  # 100 Gbps serialization, ps
    completed = np.ones(n, dtype=bool)
    if incomplete_every:
        completed[::incomplete_every] = False
    fct_list = [int(f) if c else None for f, c in zip(fct, completed)]
    return pa.table({
        "flow_id": pa.array(np.arange(n, dtype=np.int64)),
        "src": pa.array(rng.integers(0, 16, size=n, dtype=np.int64)),
        "dst": pa.array(rng.integers(0, 16, size=n, dtype=np.int64)),
        "size_bytes": pa.array(size),
        "start_ps": pa.array(start),
        "finish_ps": pa.array([int(s) + f if f is not None else None
                               for s, f in zip(start, fct_list)], pa.int64()),
        "fct_ps": pa.array(fct_list, pa.int64()),
        "ideal_fct_ps": pa.array(ideal),
        "slowdown": pa.array([f / int(i) if f is not None else None
                              for f, i in zip(fct_list, ideal)], pa.float64()),
        "completed": pa.array(completed),
        "hops": pa.array(np.where(completed, 2, 0).astype(np.int64)),
    })


def empty_flows() -> pa.Table:
    return make_flows(n=0)


def reference(flows: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """FCT (us) and size (bytes) of the completed flows, computed independently."""
    fct, size = [], []
    for row in flows.to_pylist():
        if row["completed"] and row["fct_ps"] is not None:
            fct.append(row["fct_ps"] / 1e6)
            size.append(row["size_bytes"])
    return np.array(fct, dtype=np.float64), np.array(size, dtype=np.int64)


def np_stats(x: np.ndarray) -> dict:
    return {"count": len(x), "mean": float(np.mean(x)),
            "p50": float(np.percentile(x, 50, method="linear")),
            "p99": float(np.percentile(x, 99, method="linear"))}


def assert_stats(got: dict, want: dict) -> None:
    assert got["count"] == want["count"]
    for k in ("mean", "p50", "p99"):
        assert got[k] == pytest.approx(want[k], rel=1e-12), k


def make_summary(flows: pa.Table, arch: str, **over: Any) -> dict:
    stats = fct_stats(flows)
    n_done = int(np.sum(flows.column("completed").to_numpy(zero_copy_only=False)))
    s = {
        "arch": arch, "seed": 1, "nodes": 16, "sim_time_s": 0.001, "wall_s": 0.5,
        "events": 12345,
        "flows": {"started": flows.num_rows, "completed": n_done},
        "bytes": {"offered": 1000, "delivered": 900, "dropped": 60, "in_flight": 40},
        "goodput_normalized": 0.25,
        "fct_us": stats,
        "fabric": {"collisions": 0, "guardband_violations": 0},
        "drops": {"buffer_overflow": 50, "failed_link": 10},
    }
    s.update(over)
    return s


@dataclass
class Run:
    summary: dict
    flows: pa.Table
    timeseries: pa.Table | None = None
    label: str | None = None


@dataclass
class BareRun:  # no .label, no .timeseries attributes
    summary: dict
    flows: pa.Table


# ----------------------------------------------------------------------------- fct_stats

def test_fct_stats_matches_numpy():
    flows = make_flows()
    fct, size = reference(flows)
    assert len(fct) == 400 - len(range(0, 400, 7))
    got = fct_stats(flows)
    assert set(got) == {"mice", "all"}
    assert_stats(got["all"], np_stats(fct))
    assert_stats(got["mice"], np_stats(fct[size < 10_000]))
    assert isinstance(got["all"]["count"], int)
    assert all(isinstance(got["all"][k], float) for k in ("mean", "p50", "p99"))


def test_fct_stats_known_values():
    # FCTs 1..100 us, all completed, sizes alternate 1000 (mice) / 20000.
    n = 100
    fct_ps = [(i + 1) * 10**6 for i in range(n)]
    flows = pa.table({
        "size_bytes": pa.array([1000 if i % 2 == 0 else 20_000 for i in range(n)], pa.int64()),
        "fct_ps": pa.array(fct_ps, pa.int64()),
        "completed": pa.array([True] * n),
    })
    got = fct_stats(flows)
    assert got["all"] == {"count": 100, "mean": 50.5, "p50": 50.5,
                          "p99": pytest.approx(99.01)}
    # mice: 1, 3, ..., 99 us
    assert got["mice"]["count"] == 50
    assert got["mice"]["mean"] == pytest.approx(50.0)
    assert got["mice"]["p50"] == pytest.approx(50.0)
    assert got["mice"]["p99"] == pytest.approx(1 + 0.99 * 49 * 2)


def test_mice_split_by_threshold():
    flows = make_flows()
    fct, size = reference(flows)
    # 9_999 B is a mouse, 10_000 B is not (strictly smaller than the threshold).
    got = fct_stats(flows)
    assert got["mice"]["count"] == int(np.sum(size <= 9_999))
    assert got["mice"]["count"] == int(np.sum(np.isin(size, [500, 5_000, 9_999])))
    for thr in (1, 5_001, 10_001, 10**9):
        got = fct_stats(flows, mice_threshold=thr)
        sel = fct[size < thr]
        if sel.size:
            assert_stats(got["mice"], np_stats(sel))
        else:
            assert got["mice"] == {"count": 0, "mean": 0.0, "p50": 0.0, "p99": 0.0}
        assert_stats(got["all"], np_stats(fct))


def test_fct_stats_extra_size_classes():
    flows = make_flows()
    fct, size = reference(flows)
    got = fct_stats(flows, sizes={"elephants": (1_000_000, math.inf), "mid": (10_000, 1_000_000)})
    assert set(got) == {"mice", "all", "elephants", "mid"}
    assert_stats(got["elephants"], np_stats(fct[size >= 1_000_000]))
    assert_stats(got["mid"], np_stats(fct[(size >= 10_000) & (size < 1_000_000)]))
    with pytest.raises(ValueError, match="reserved"):
        fct_stats(flows, sizes={"all": (0, 1)})
    with pytest.raises(ValueError, match="lo < hi"):
        fct_stats(flows, sizes={"x": (5, 5)})


@pytest.mark.parametrize("flows", [
    empty_flows(),
    make_flows(n=20, incomplete_every=1),  # nothing completed
])
def test_fct_stats_empty_gives_zeros_not_nan(flows):
    got = fct_stats(flows)
    zero = {"count": 0, "mean": 0.0, "p50": 0.0, "p99": 0.0}
    assert got == {"mice": zero, "all": zero}
    json.dumps(got, allow_nan=False)  # valid JSON: no NaN anywhere


def test_completed_flag_and_null_fct_both_required():
    flows = pa.table({
        "size_bytes": pa.array([100, 100, 100, 100], pa.int64()),
        "fct_ps": pa.array([1_000_000, None, 3_000_000, 4_000_000], pa.int64()),
        "completed": pa.array([True, True, False, None]),
    })
    got = fct_stats(flows)["all"]
    assert got["count"] == 1 and got["mean"] == 1.0


# ----------------------------------------------------------------------------- buckets

def test_size_buckets_partition_and_stats():
    flows = make_flows()
    fct, size = reference(flows)
    t = size_buckets(flows)
    assert t.column_names[:1] == ["bucket"]
    for col in ("bucket", "count", "completed", "mean_fct_us", "p50_fct_us", "p99_fct_us",
                "p99_slowdown"):
        assert col in t.column_names
    assert t.column("bucket").to_pylist() == ["<10KB", "10KB-100KB", "100KB-1MB", "1MB-10MB",
                                              ">=10MB"]
    assert sum(t.column("count").to_pylist()) == flows.num_rows
    assert sum(t.column("completed").to_pylist()) == len(fct)

    all_sizes = np.asarray(flows.column("size_bytes").to_numpy())
    slow_all = flows.column("slowdown").to_pylist()
    edges = [0, 10_000, 100_000, 1_000_000, 10_000_000, math.inf]
    rows = t.to_pylist()
    for row, lo, hi in zip(rows, edges, edges[1:]):
        assert row["count"] == int(np.sum((all_sizes >= lo) & (all_sizes < hi)))
        sel = fct[(size >= lo) & (size < hi)]
        assert row["completed"] == len(sel)
        assert sel.size > 0
        assert row["mean_fct_us"] == pytest.approx(np.mean(sel), rel=1e-12)
        assert row["p50_fct_us"] == pytest.approx(np.percentile(sel, 50), rel=1e-12)
        assert row["p99_fct_us"] == pytest.approx(np.percentile(sel, 99), rel=1e-12)
        slow = [s for s, z in zip(slow_all, all_sizes) if s is not None and lo <= z < hi]
        assert row["p99_slowdown"] == pytest.approx(np.percentile(slow, 99), rel=1e-12)


def test_size_buckets_bucket_without_completed_flows_is_null():
    flows = make_flows()
    t = size_buckets(flows, edges=[0, 100, 10**10])
    first, second = t.to_pylist()
    assert first["bucket"] == "<100B" and first["count"] == 0 and first["completed"] == 0
    assert first["p99_fct_us"] is None and first["p99_slowdown"] is None
    assert second["count"] == flows.num_rows
    t = size_buckets(empty_flows())
    assert t.num_rows == 5 and sum(t.column("count").to_pylist()) == 0


def test_size_buckets_rejects_bad_edges():
    flows = make_flows()
    with pytest.raises(ValueError, match="increasing"):
        size_buckets(flows, edges=[0, 10, 10])
    with pytest.raises(ValueError, match="outside"):
        size_buckets(flows, edges=[0, 1000])


def test_shale_edges_powers_of_four():
    e = shale_edges(20_000_000)
    assert e == [0, 4_000, 16_000, 64_000, 256_000, 1_024_000, 4_096_000, 16_384_000, math.inf]
    assert shale_edges(100) == [0, 4_000, math.inf]
    assert shale_edges(16_000)[-2] == 16_000
    flows = make_flows()
    t = size_buckets(flows, edges=shale_edges(max(SIZES)))
    labels = t.column("bucket").to_pylist()
    assert labels[:3] == ["<4KB", "4KB-16KB", "16KB-64KB"]
    assert labels[-1] == ">=16.384MB"
    assert sum(t.column("count").to_pylist()) == flows.num_rows
    with pytest.raises(ValueError):
        shale_edges(-1)


# ----------------------------------------------------------------------------- CDF

def test_fct_cdf_monotone_ending_at_one():
    flows = make_flows()
    fct, _ = reference(flows)
    x, y = fct_cdf(flows)
    assert len(x) == len(y) == len(fct)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)
    assert y[-1] == 1.0 and y[0] == pytest.approx(1 / len(fct))
    assert x[0] == pytest.approx(fct.min()) and x[-1] == pytest.approx(fct.max())
    np.testing.assert_allclose(x, np.sort(fct))


def test_fct_cdf_downsampled():
    flows = make_flows(n=5000, incomplete_every=0)
    fct, _ = reference(flows)
    x, y = fct_cdf(flows, max_points=100)
    assert 2 <= len(x) <= 100 and len(x) == len(y)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)
    assert y[-1] == 1.0 and x[-1] == pytest.approx(fct.max()) and x[0] == pytest.approx(fct.min())
    # every point is on the exact CDF
    xs = np.sort(fct)
    for xi, yi in zip(x, y):
        assert np.searchsorted(xs, xi, side="right") / len(xs) >= yi - 1e-12


def test_fct_cdf_empty():
    x, y = fct_cdf(empty_flows())
    assert x.size == 0 and y.size == 0


# ----------------------------------------------------------------------------- time series

def make_timeseries() -> pa.Table:
    # interval 1 us; two ports on node 0 and one on node 1
    rows = [
        (1_000_000, 0, 0, 10, 1000), (1_000_000, 0, 1, 0, 500), (1_000_000, 1, 0, 0, 1000),
        (2_000_000, 0, 0, 0, 2500), (2_000_000, 0, 1, 5, 0), (2_000_000, 1, 0, 0, None),
        (3_000_000, 0, 0, 0, 0),
    ]
    cols = list(zip(*rows))
    return pa.table({
        "time_ps": pa.array(cols[0], pa.int64()), "node": pa.array(cols[1], pa.int64()),
        "port": pa.array(cols[2], pa.int64()), "queued_bytes": pa.array(cols[3], pa.int64()),
        "tx_bytes": pa.array(cols[4], pa.int64()),
    })


def test_goodput_series_known_values():
    t, gbps = goodput_series(make_timeseries())
    np.testing.assert_allclose(t, [1.0, 2.0, 3.0])
    # 2500 B in 1 us = 20 Gbit/s
    np.testing.assert_allclose(gbps, [20.0, 20.0, 0.0])
    t, frac = goodput_series(make_timeseries(), rate_normalizer_bps=16 * 100e9)
    np.testing.assert_allclose(frac, [20e9 / 1.6e12, 20e9 / 1.6e12, 0.0])
    # rows in any order give the same series
    shuffled = make_timeseries().take(pa.array([6, 3, 0, 5, 1, 4, 2]))
    np.testing.assert_allclose(goodput_series(shuffled)[1], [20.0, 20.0, 0.0])


def test_goodput_series_empty():
    empty = make_timeseries().slice(0, 0)
    for ts in (empty, None):
        t, g = goodput_series(ts)
        assert t.size == 0 and g.size == 0
    with pytest.raises(ValueError):
        goodput_series(make_timeseries(), rate_normalizer_bps=0)


# ----------------------------------------------------------------------------- comparison

def test_check_invariants():
    flows = make_flows(n=10)
    assert analysis.check_invariants(make_summary(flows, "a")) == {
        "conservation": True, "drops": True, "collisions": True, "guardband": True, "all": True}
    bad = make_summary(flows, "a", bytes={"offered": 1000, "delivered": 900, "dropped": 60,
                                          "in_flight": 39},
                       fabric={"collisions": 2, "guardband_violations": 0})
    inv = analysis.check_invariants(bad)
    assert not inv["conservation"] and not inv["collisions"] and inv["guardband"]
    assert not inv["all"]
    assert not analysis.check_invariants({"arch": "x"})["all"]


def test_compare_table_values_and_labels():
    f1, f2 = make_flows(seed=1), make_flows(seed=2, incomplete_every=5)
    s1 = make_summary(f1, "rotornet", goodput_normalized=0.31)
    s2 = make_summary(f2, "negotiator", label="negotiator-2", drops={},
                      bytes={"offered": 10, "delivered": 10, "dropped": 0, "in_flight": 0},
                      fabric={"collisions": 0, "guardband_violations": 3})
    s3 = make_summary(f1, "static")
    del s3["fct_us"]  # falls back to computing from the flows
    rows = compare_table([Run(s1, f1, label="RotorNet"), BareRun(s2, f2), BareRun(s3, f1)])
    assert [r["label"] for r in rows] == ["RotorNet", "negotiator-2", "static"]
    assert [r["arch"] for r in rows] == ["rotornet", "negotiator", "static"]
    r1, r2, r3 = rows
    assert r1["flows_started"] == 400 and r1["flows_completed"] == s1["flows"]["completed"]
    assert r1["goodput_normalized"] == 0.31
    st = fct_stats(f1)
    assert r1["mice_mean_fct_us"] == st["mice"]["mean"]
    assert r1["mice_p99_fct_us"] == st["mice"]["p99"]
    assert r1["all_mean_fct_us"] == st["all"]["mean"]
    assert r1["all_p99_fct_us"] == st["all"]["p99"]
    assert r1["drops_bytes"] == 60 and r1["collisions"] == 0 and r1["invariants_ok"] is True
    assert r2["drops_bytes"] == 0 and r2["guardband_violations"] == 3
    assert r2["invariants_ok"] is False
    assert r3["all_p99_fct_us"] == st["all"]["p99"]


def test_format_table_and_rich_table():
    f = make_flows()
    rows = compare_table([Run(make_summary(f, "rotornet"), f),
                          Run(make_summary(f, "a-much-longer-name"), f)])
    text = format_table(rows)
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("arch") and set(lines[1]) <= {"-", " "}
    assert "rotornet" in lines[2] and "a-much-longer-name" in lines[3]
    assert f"{rows[0]['all_p99_fct_us']:.2f}" in lines[2]
    assert "0.2500" in lines[2] and "ok" in lines[2]
    # right-aligned numeric columns end at the same position on every line
    ends = {line.index("0.2500") + 6 for line in lines[2:]}
    assert len(ends) == 1
    assert len(format_table([]).splitlines()) == 2

    from rich.console import Console
    table = rich_table(rows)
    assert table.row_count == 2 and len(table.columns) == len(analysis.TABLE_COLUMNS)
    console = Console(record=True, width=200)
    console.print(table)
    assert "a-much-longer-name" in console.export_text()


# ----------------------------------------------------------------------------- report

def report_runs() -> list:
    f1, f2 = make_flows(seed=1), make_flows(seed=2, incomplete_every=3)
    ok = make_summary(f1, "rotornet", goodput_normalized=0.31,
                      arch_metrics={"match_ratio": 0.875})
    bad = make_summary(f2, "negotiator", fabric={"collisions": 4, "guardband_violations": 0})
    return [Run(ok, f1, timeseries=make_timeseries(), label="RotorNet <vlb>"),
            BareRun(bad, f2)]


def test_write_report(tmp_path):
    runs = report_runs()
    out = tmp_path / "nested" / "results"
    path = write_report(runs, out, title="my comparison", workload_desc="hadoop, load 0.3")
    assert path == out / "report.html" and path.is_file()
    for name in ("fct_cdf.png", "fct_p99_by_size.png", "goodput.png"):
        assert (out / name).read_bytes().startswith(PNG_SIGNATURE)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["report.html", "fct_cdf.png", "fct_p99_by_size.png", "goodput.png"])

    doc = path.read_text(encoding="utf-8")
    assert "<title>my comparison</title>" in doc
    assert "hadoop, load 0.3" in doc
    # labels are escaped, both table rows present
    assert "RotorNet &lt;vlb&gt;" in doc and "RotorNet <vlb>" not in doc
    assert "negotiator" in doc
    rows = compare_table(runs)
    for r in rows:
        assert f"{r['all_p99_fct_us']:.2f}" in doc
        assert f"{r['mice_mean_fct_us']:.2f}" in doc
        assert f"{r['flows_completed']}/{r['flows_started']}" in doc
    assert doc.count("<tr>") >= 2 * 3  # metadata, comparison and invariants rows
    # ✓ for the good run, ✗ for the one with collisions
    assert "\u2713" in doc and "\u2717" in doc
    assert "match_ratio" in doc
    # three embedded, valid PNGs equal to the files
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', doc)
    assert len(images) == 3
    files = [(out / n).read_bytes() for n in ("fct_cdf.png", "fct_p99_by_size.png", "goodput.png")]
    assert [base64.b64decode(i) for i in images] == files
    # self-contained: no scripts, no external resources
    assert "<script" not in doc.lower()
    assert "http://" not in doc and "https://" not in doc
    assert "<link" not in doc.lower()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_write_report_without_completed_flows_or_timeseries(tmp_path):
    f = make_flows(n=30, incomplete_every=1)
    run = BareRun(make_summary(f, "static"), f)
    path = write_report([run], tmp_path)
    doc = path.read_text(encoding="utf-8")
    assert doc.count("data:image/png;base64,") == 3
    assert (tmp_path / "goodput.png").read_bytes().startswith(PNG_SIGNATURE)


def test_write_report_error_leaves_nothing(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("render failed")
    monkeypatch.setattr(report, "_render_goodput", boom)
    out = tmp_path / "r"
    with pytest.raises(RuntimeError):
        write_report(report_runs(), out)
    assert not out.exists() or list(out.iterdir()) == []


def test_atomic_write_failure_keeps_old_file(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_text("old")

    def fail(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(report.os, "replace", fail)
    with pytest.raises(OSError):
        report._atomic_write(target, b"new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_write_report_needs_results(tmp_path):
    with pytest.raises(ValueError, match="results"):
        write_report([], tmp_path)


def test_delivered_series_counts_each_byte_once_at_its_receiver():
    import opendcn as od

    net = od.arch.get("rotornet").make(nodes=8, uplinks=2, routing="vlb")
    net.net_series = True
    r = net.run(od.workload.poisson("hadoop", load=0.3), duration="300us", seed=3)
    t, gbps = delivered_series(r.timeseries)
    assert t.size > 10
    dt_s = np.diff(np.concatenate([[0.0], t])) * 1e-6
    # the series integrates to the summary's delivered payload, exactly
    assert round(float((gbps * 1e9 / 8 * dt_s).sum())) == r.summary["bytes"]["delivered"]
    # VLB's packets cross two fabric links: the link-summed series carries more
    _, link_gbps = goodput_series(r.timeseries)
    assert link_gbps.sum() > 1.5 * gbps.sum()
    # a series without network rows has no delivered series
    assert delivered_series(make_timeseries())[0].size == 0


def test_architecture_metrics_are_a_table_per_run_not_a_raw_dict():
    rows = report._flat_metrics({"trims": 3, "fct_us": {"all": {"p99": 1.23456789}}, "hist": [0, 5, 2],
                                 "decisions": ["timing: x", "paths: y"], "share": 0.5})
    assert rows == [("trims", "3"), ("fct_us.all.p99", "1.23457"), ("hist", "0, 5, 2"),
                    ("decisions [1]", "timing: x"), ("decisions [2]", "paths: y"), ("share", "0.5")]
    long = report._flat_metrics({"h": list(range(30))})
    assert long[0][1].endswith("... (30 values)")
