"""Every registered architecture at a tiny size, from Python and from the CLI, and the
CLI's listing, bench and demo commands (docs/contract.md#cli and docs/contract.md#python-api)."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import opendcn as od

ARCHS = sorted(od.arch.REGISTRY)
NODES = 8


def tiny_nodes(name: str) -> int:
    """The node count of an architecture's smallest meaningful instance."""
    return od.arch.get(name).tiny.get("nodes", NODES)
DURATION = "100us"
SHIPPED = ("hadoop", "websearch", "datamining", "google", "keyvalue", "imc10")
PATTERNS = ("uniform", "permutation", "incast", "all-to-all")


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def cli_cmd() -> list[str]:
    script = Path(sys.executable).parent / "opendcn"
    return [str(script)] if script.exists() else [sys.executable, "-m", "opendcn.cli"]


def cli(*args: object, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    return subprocess.run(cli_cmd() + [str(a) for a in args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def _squash(text: str) -> str:
    return "".join(text.split())


def is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_summary(s: dict, *, arch: str, nodes: int, seed: int, sim_time_s: float) -> None:
    assert s["arch"] == arch
    assert is_int(s["seed"]) and s["seed"] == seed
    assert is_int(s["nodes"]) and s["nodes"] == nodes
    assert is_num(s["sim_time_s"]) and s["sim_time_s"] == pytest.approx(sim_time_s)
    assert is_num(s["wall_s"]) and s["wall_s"] >= 0
    assert is_int(s["events"]) and s["events"] > 0
    f = s["flows"]
    assert is_int(f["started"]) and is_int(f["completed"]) and 0 < f["completed"] <= f["started"]
    b = s["bytes"]
    for k in ("offered", "delivered", "dropped", "in_flight"):
        assert is_int(b[k]) and b[k] >= 0, k
    assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    assert b["delivered"] > 0
    assert is_num(s["goodput_normalized"]) and 0 < s["goodput_normalized"]
    for group in ("mice", "all"):
        st = s["fct_us"][group]
        assert is_int(st["count"]) and st["count"] >= 0
        for k in ("mean", "p50", "p99"):
            assert is_num(st[k]) and st[k] >= 0, (group, k)
    assert s["fct_us"]["all"]["count"] == f["completed"]
    assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
    assert isinstance(s["drops"], dict)
    assert all(isinstance(k, str) and is_int(v) and v >= 0 for k, v in s["drops"].items())
    assert sum(s["drops"].values()) == b["dropped"]
    assert isinstance(s.get("arch_metrics", {}), dict)


def workload():
    return od.workload.poisson("hadoop", load=0.3, pattern="uniform")


# ---------------------------------------------------------------------------------------
# every architecture
# ---------------------------------------------------------------------------------------
def test_registry_has_the_shipped_architectures():
    assert {"rotornet", "clos"} <= set(ARCHS)
    for name in ARCHS:
        a = od.arch.get(name)
        assert a.name == name and a.description
        flags = [o.flag for o in a.options]
        assert "--nodes" in flags and len(flags) == len(set(flags))


@pytest.mark.parametrize("name", ARCHS)
def test_arch_builder_from_python(name):
    build = getattr(od.arch, name, None)
    assert callable(build), f"od.arch.{name} is {build!r}, not a builder"
    net = build(nodes=tiny_nodes(name))
    assert isinstance(net, od.NetworkBase)
    result = net.run(workload(), duration=DURATION, seed=1)
    check_summary(result.summary, arch=name, nodes=tiny_nodes(name), seed=1, sim_time_s=100e-6)
    assert result.flows.num_rows == result.summary["flows"]["started"]


@pytest.mark.parametrize("name", ARCHS)
def test_arch_builder_takes_every_listed_option_at_its_default(name):
    a = od.arch.get(name)
    net = a.make(**{o.name: o.default for o in a.options if o.name != "nodes"}, nodes=4)
    r = net.run(od.workload.flows([("0us", 0, 3, 3000), ("1us", 2, 1, 40_000)]), duration="200us")
    assert r.summary["flows"] == {"started": 2, "completed": 2}
    assert r.summary["bytes"]["delivered"] == 43_000
    assert r.summary["fabric"] == {"collisions": 0, "guardband_violations": 0}


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    """``opendcn run ARCH --nodes 8 --duration 100us --summary-json -`` for every arch."""
    base = tmp_path_factory.mktemp("archs")
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {name: pool.submit(cli, "run", name, "--nodes", tiny_nodes(name), "--duration", DURATION,
                                     "--summary-json", "-", cwd=base) for name in ARCHS}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("name", ARCHS)
def test_arch_cli_summary_json(cli_runs, name):
    proc = cli_runs[name]
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)                 # nothing but the JSON on stdout
    check_summary(summary, arch=name, nodes=tiny_nodes(name), seed=1, sim_time_s=100e-6)


@pytest.mark.parametrize("name", ARCHS)
def test_arch_cli_and_python_agree(cli_runs, name):
    proc = cli_runs[name]
    assert proc.returncode == 0, proc.stderr
    cli_summary = json.loads(proc.stdout)
    # the CLI defaults: hadoop, load 0.3, uniform, seed 1
    py = od.arch.get(name).make(nodes=tiny_nodes(name)).run(workload(), duration=DURATION, seed=1).summary
    for key in ("arch", "seed", "nodes", "sim_time_s", "events", "flows", "bytes",
                "goodput_normalized", "fct_us", "fabric", "drops"):
        assert cli_summary[key] == py[key], key


# ---------------------------------------------------------------------------------------
# listings
# ---------------------------------------------------------------------------------------
def _arch_blocks(text: str) -> dict[str, str]:
    """``opendcn archs`` output split into one block of text per architecture."""
    lines = text.splitlines()
    starts = [(i, line.split()[0]) for i, line in enumerate(lines)
              if line and not line[0].isspace() and line.split()[0] in ARCHS]
    blocks = {}
    for k, (i, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        blocks[name] = "\n".join(lines[i:end])
    return blocks


def test_archs_lists_every_architecture_and_option():
    proc = cli("archs")
    assert proc.returncode == 0, proc.stderr
    blocks = _arch_blocks(proc.stdout)
    assert set(blocks) == set(ARCHS)
    for name in ARCHS:
        block = _squash(blocks[name])
        a = od.arch.get(name)
        assert _squash(a.description) in block
        for o in a.options:
            assert o.flag in block, (name, o.flag)
            for choice in o.choices:
                assert choice in block, (name, o.flag, choice)


def test_archs_shows_option_defaults():
    proc = cli("archs")
    assert proc.returncode == 0, proc.stderr
    blocks = _arch_blocks(proc.stdout)
    for name in ARCHS:
        a = od.arch.get(name)
        block = _squash(blocks[name])
        flags = [o.flag for o in a.options]
        for k, o in enumerate(a.options):
            if o.default is None:
                continue
            start = block.index(o.flag) + len(o.flag)
            nxt = [block.find(f, start) for f in flags[k + 1:] if block.find(f, start) >= 0]
            segment = block[start:min(nxt)] if nxt else block[start:]
            assert _squash(str(o.default)) in segment, (name, o.flag, o.default, segment)


def test_workloads_lists_distributions_and_patterns():
    proc = cli("workloads")
    assert proc.returncode == 0, proc.stderr
    words = set(re.findall(r"[A-Za-z0-9][A-Za-z0-9_-]*", proc.stdout))
    for name in SHIPPED:
        assert name in words, name
    for w in od.workload.list_workloads():
        assert w["name"] in words, w["name"]
    for p in PATTERNS:
        assert p in words, p
    for p in od.workload.PATTERNS:
        assert p in words, p


# ---------------------------------------------------------------------------------------
# bench and demo
# ---------------------------------------------------------------------------------------
@pytest.mark.long      # a timing run (13 s): make test-long
def test_bench_quick_json_clos():
    proc = cli("bench", "--quick", "--json", "--only", "clos-128-hadoop-50%")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)                    # stdout is exactly one JSON list
    assert isinstance(rows, list) and rows
    for row in rows:
        assert isinstance(row["scenario"], str) and "clos" in row["scenario"]
        assert is_int(row["packet_hops"]) and row["packet_hops"] > 0
        assert is_int(row["events"]) and row["events"] > 0
        for k in ("sim_time_s", "wall_s", "packet_hops_per_s", "peak_rss_mb"):
            assert is_num(row[k]) and row[k] > 0, k
        assert row["packet_hops_per_s"] == pytest.approx(row["packet_hops"] / row["wall_s"], rel=1e-6)


def test_bench_flow_level_scenario(monkeypatch):
    """A flow-level scenario runs through flowsim and reports its solver and routing
    figures (a 16-rack PRN on a synthetic pattern standing in for the 128-rack traces)."""
    from opendcn import bench

    monkeypatch.setitem(bench.SCENARIOS, "prn-flow-tiny", ("prn", {"nodes": 16, "radix": 8, "hosts_per_rack": 2,
                                                                   "period": "50us", "mode": "flow"},
                                                           "pattern:bisection:30KB", 0.3, "200us", "200us"))
    row = bench.run_one("prn-flow-tiny", quick=True)
    assert row["mode"] == "flow" and row["packet_hops"] == 0 and row["invariants_ok"]
    assert row["events"] > 0 and row["rate_computations"] > 0 and row["routings"] == 4
    assert row["wall_s_per_sim_ms"] == pytest.approx(row["wall_s"] / 0.2)


# long: the 128-node bench scenario twice (about 30 CPU-s); best_run's choice is checked by
# test_bench_keeps_the_run_with_the_fastest_timed_part, the bench CLI's JSON by test_bench_quick_json_clos
@pytest.mark.long
def test_bench_repeat_keeps_the_fastest_run():
    proc = cli("bench", "--quick", "--json", "--only", "clos-128-hadoop-50%", "--repeat", "2")
    assert proc.returncode == 0, proc.stderr
    for row in json.loads(proc.stdout):
        runs = row["wall_s_runs"]
        assert len(runs) == 2 and row["wall_s"] == min(runs)
        assert row["packet_hops_per_s"] == pytest.approx(row["packet_hops"] / row["wall_s"], rel=1e-6)


def test_bench_keeps_the_run_with_the_fastest_timed_part():
    from opendcn.bench import best_run

    plain = [{"wall_s": 3.0}, {"wall_s": 2.0}, {"wall_s": 2.5}]
    assert best_run(plain) == {"wall_s": 2.0, "wall_s_runs": [3.0, 2.0, 2.5]}
    # with a warm-up the timed part decides, not the whole run
    warm = [{"wall_s": 5.0, "steady": {"wall_s": 2.0}}, {"wall_s": 4.0, "steady": {"wall_s": 2.5}}]
    best = best_run(warm)
    assert best["wall_s"] == 5.0 and best["steady"]["wall_s"] == 2.0
    assert best["wall_s_runs"] == [5.0, 4.0] and best["steady_wall_s_runs"] == [2.0, 2.5]
    assert "wall_s_runs" not in warm[0]


def test_shale_scaling_compares_growth_of_wall_time_and_cells_in_flight():
    from opendcn.bench import shale_scaling

    def row(n, h, us, cells, wall, hops):
        return {"scenario": f"shale-scaling-{n}-h{h}", "nodes": n, "h": h, "wall_us_per_timeslot": us,
                "mean_cells_in_flight": cells, "wall_s": wall, "packet_hops": hops, "timeslots": 1000}

    rows = [row(10000, 2, 30.0, 2500.0, 3.0, 10**7), row(4096, 2, 10.0, 1000.0, 1.0, 4 * 10**6),
            row(50625, 2, 200.0, 15000.0, 20.0, 5 * 10**7), row(4096, 4, 10.0, 1000.0, 1.0, 10**6)]
    sc = shale_scaling(rows)
    got = {(x["h"], x["nodes"]): x for x in sc}
    assert len(sc) == 4
    # growth is relative to the smallest size of the same h
    assert got[(2, 4096)]["wall_growth"] == 1.0 and got[(2, 4096)]["holds"]
    assert got[(2, 10000)]["wall_growth"] == 3.0 and got[(2, 10000)]["cells_growth"] == 2.5
    assert not got[(2, 10000)]["holds"]
    assert got[(2, 50625)]["wall_growth"] == 20.0 and got[(2, 50625)]["cells_growth"] == 15.0
    assert got[(2, 10000)]["wall_ns_per_hop"] == pytest.approx(300.0)
    assert got[(4, 4096)]["wall_ns_per_hop"] == pytest.approx(1000.0)
    # the engine's work: cell-hops per timeslot, against the cells in flight
    assert got[(2, 10000)]["cell_hops_per_timeslot"] == 10**4 and got[(2, 10000)]["hops_growth"] == 2.5
    assert got[(2, 10000)]["work_holds"]
    assert got[(2, 50625)]["hops_growth"] == 12.5 and got[(2, 50625)]["work_holds"]
    # a run with a warm-up is compared on the timeslots after it
    steady = {"wall_us_per_timeslot": 20.0, "mean_cells_in_flight": 3000.0, "wall_s": 2.0, "cell_hops": 10**7,
              "timeslots": 250}
    rows[0] = {**rows[0], "steady": steady}
    got = {(x["h"], x["nodes"]): x for x in shale_scaling(rows)}
    assert got[(2, 10000)]["wall_growth"] == 2.0 and got[(2, 10000)]["cells_growth"] == 3.0
    assert got[(2, 10000)]["holds"] and got[(2, 10000)]["wall_ns_per_hop"] == pytest.approx(200.0)
    assert got[(2, 4096)]["wall_us_per_timeslot"] == 10.0
    # 4 × the hops per timeslot of the whole run: grows faster than the cells (× 3)
    assert got[(2, 10000)]["hops_growth"] == 10.0 and not got[(2, 10000)]["work_holds"]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "report"
    proc = cli("demo", "--out", out, "--duration", "200us", "--nodes", 8)
    return proc, out


DEMO_RUNS = ("RotorNet (VLB)", "RotorNet (direct)", "Clos (ECMP, DCTCP)")


def test_demo_writes_report_with_embedded_images(demo_run):
    proc, out = demo_run
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text()
    srcs = re.findall(r"<img[^>]*\bsrc=\"([^\"]*)\"", html)
    embedded = [s for s in srcs if s.startswith("data:image/")]
    assert len(embedded) >= 3, srcs
    assert embedded == srcs, "every image is embedded in the page"
    for src in embedded:
        head, data = src.split(",", 1)
        assert head.endswith(";base64")
        raw = base64.b64decode(data, validate=True)
        assert raw.startswith(b"\x89PNG\r\n\x1a\n") or raw.lstrip().startswith((b"<svg", b"<?xml"))
        assert len(raw) > 1000
    # every run's results sit next to the report, with clean invariants
    summaries = [json.loads(p.read_text()) for p in sorted(out.rglob("summary.json"))]
    assert len(summaries) >= 3
    for s in summaries:
        assert s["nodes"] == 8 and s["sim_time_s"] == pytest.approx(200e-6)
        assert s["fabric"] == {"collisions": 0, "guardband_violations": 0}
        b = s["bytes"]
        assert b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
        assert b["dropped"] == 0, "every design of the demo runs without losing payload"
        p = s["packets"]
        assert p["sent"] == p["delivered"] + sum(p["dropped"].values()) + p["trimmed"] + p["in_flight"]
    assert {s["arch"] for s in summaries} >= {"rotornet", "clos", "opera"}
    assert {s["transport"]["rule"] for s in summaries} == {"ideal", "dctcp", "ndp<15MB,rotorlb"}


def test_demo_prints_a_comparison_table(demo_run):
    proc, _ = demo_run
    assert proc.returncode == 0, proc.stderr
    assert "report.html" in proc.stdout
    # the table's rows (box-drawn or plain) are the lines that name a run or its numbers;
    # no cell may be cut short ("…"), and every run is named in it, word for word
    table = [line for line in proc.stdout.splitlines()
             if line.strip() and not line.startswith(("running ", "report:"))]
    text = "\n".join(table)
    assert "\u2026" not in text and "..." not in text, f"truncated cells:\n{text}"
    words = set(text.replace("│", " ").replace("┃", " ").split())
    for label in DEMO_RUNS:
        for word in label.split():
            assert word in words, f"{label!r} is not readable in the printed table:\n{text}"
