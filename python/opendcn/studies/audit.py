"""Whether a study's reference records still hold: rerun stored points with this build.

A reference record (``reproductions/<paper>/points/<label>.json``) keeps the build that
computed it and its trace hash. Records accumulate over many builds; a record whose point
would now run differently (an engine fix since) is stale even though its spec hash, which
names the point and not the code, still matches. :func:`audit` reruns every stored point
whose recorded wall time is at most ``max_wall_s`` seconds and compares the trace hash
(and, for the reader, the goodput and drops). ``opendcn reproduce NAME --audit SECONDS``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from ..errors import ConfigError
from ..experiments.sweeps import Point, process_pool, run_point
from .base import reference_root, text_table

__all__ = ["audit", "AuditRow"]

AuditRow = dict[str, Any]


def _rerun(args: tuple[dict[str, Any], str]) -> AuditRow:
    rec, root = args
    p = Point(**{k: rec["point"][k] for k in ("arch", "options", "run", "duration", "seed")})
    row: AuditRow = {"label": rec["label"], "recorded_wall_s": rec["summary"].get("wall_s", 0.0),
                     "build": rec.get("build", "?")}
    if p.spec_hash != rec.get("spec_hash"):
        return {**row, "status": "spec changed", "detail": f"recorded {rec.get('spec_hash')}, now {p.spec_hash}"}
    out = run_point(p, root)
    if out["status"] != "ok":
        return {**row, "status": "failed", "detail": out.get("error", "")}
    now = json.loads((Path(root) / p.relpath() / "summary.json").read_text())
    then = rec["summary"]
    same = now.get("trace_hash") == rec.get("trace_hash")
    detail = "" if same else (f"goodput {then.get('goodput_normalized'):.4g} -> {now.get('goodput_normalized'):.4g}, "
                              f"dropped {then['packets'].get('dropped')} -> {now['packets'].get('dropped')}")
    return {**row, "status": "same" if same else "DIFFERS", "detail": detail, "wall_s": out["wall_s"]}


def audit(paper: str, *, max_wall_s: float, workers: int | None = None,
          echo: Callable[[str], None] = print) -> int:
    """Rerun the reference records of ``paper`` whose recorded wall time is at most
    ``max_wall_s`` and compare their trace hashes; prints a table, returns 1 when a record
    differs (or its point failed), else 0. Points that read a flow file the study writes
    at run time are listed as not rerunnable here."""
    if max_wall_s <= 0:
        raise ConfigError("--audit", max_wall_s, "expected a wall-time limit in seconds > 0")
    root = reference_root(paper)
    files = sorted((root / "points").glob("*.json"))
    if not files:
        raise ConfigError("reproduce", paper, f"no reference records at {root}")
    todo, rows = [], []
    for f in files:
        rec = json.loads(f.read_text())
        wall = float(rec["summary"].get("wall_s") or 0.0)
        base = {"label": rec["label"], "recorded_wall_s": wall, "build": rec.get("build", "?"), "detail": ""}
        ff = rec["point"]["run"].get("flows_file")
        if rec.get("point_elided"):
            rows.append({**base, "status": "not rerunnable", "detail": "the record keeps no point"})
        elif ff is not None and not Path(ff).is_file():
            rows.append({**base, "status": "not rerunnable", "detail": f"its flow file {ff} is written by the study"})
        elif wall > max_wall_s:
            rows.append({**base, "status": "not rerun", "detail": f"recorded wall time {wall:.0f} s > {max_wall_s:g} s"})
        else:
            todo.append(rec)
    with tempfile.TemporaryDirectory(prefix=f"opendcn-audit-{paper}-") as tmp:
        with process_pool(max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))) as pool:
            for i, row in enumerate(pool.map(_rerun, [(r, tmp) for r in todo])):
                rows.append(row)
                echo(f"  [{i + 1}/{len(todo)}] {row['label']}: {row['status']} {row['detail']}".rstrip())
    rows.sort(key=lambda r: r["label"])
    n = {s: sum(r["status"] == s for r in rows) for s in ("same", "DIFFERS", "failed", "spec changed")}
    echo(text_table([{**r, "recorded_wall_s": round(r["recorded_wall_s"], 1)} for r in rows],
                    ["label", "build", "recorded_wall_s", "status", "detail"]))
    echo(f"{paper}: {len(rows)} records, {n['same']} rerun and identical, {n['DIFFERS']} differ, {n['failed']} failed, "
         f"{n['spec changed']} with a changed spec, {len(rows) - len(todo)} not rerun")
    return 1 if n["DIFFERS"] or n["failed"] or n["spec changed"] else 0
