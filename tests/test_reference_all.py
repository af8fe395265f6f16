"""``reproduce all --reference``: one page and one roll-up across the studies' records."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_reproduce_all_from_the_records_writes_one_page_with_the_roll_up(tmp_path):
    """``reproduce all --reference``: every study rendered from its records (a study whose
    records are missing says so, claim by claim, and runs nothing), and out/index.html + out/rollup.json with the papers' claims per study and
    the tool's own checks counted apart."""
    from opendcn import studies as reproduce
    from opendcn.studies.base import TOOL_CHECKS

    lines: list[str] = []
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        reproduce.run("all", out=tmp_path, echo=lines.append, reference="read")
    finally:
        os.chdir(cwd)
    roll = json.loads((tmp_path / "rollup.json").read_text())
    by = {r["study"]: r for r in roll["studies"]}
    assert set(by) == set(reproduce.NAMES)
    for n in reproduce.REFERENCED:
        assert by[n]["mode"] == "reference" and by[n]["tool_checks"] >= 2, n
        paper = by[n]["PASS"] + by[n]["FAIL"] + by[n]["NOT-CHECKABLE"]
        claims = json.loads((tmp_path / n / f"{n}.json").read_text())["claims"]
        assert paper + by[n]["tool_checks"] == len(claims), n
        tools = [c for c in claims if str(c["claim"]).startswith(TOOL_CHECKS)]
        # a tool check passes only when it was checked: NOT-CHECKABLE ones are counted apart
        assert by[n]["tool_checks_ok"] == sum(c["status"] == "PASS" for c in tools), n
        assert by[n]["tool_checks_nc"] == sum(c["status"] == "NOT-CHECKABLE" for c in tools), n
    page = (tmp_path / "index.html").read_text()
    assert all(f"href='{n}/index.html'" in page for n in reproduce.REFERENCED)
    assert roll["total"]["PASS"] == sum(r["PASS"] for r in roll["studies"])
