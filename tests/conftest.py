"""Shared test helpers.

Golden files: ``golden(name, got)`` compares ``got`` (a run's summary as JSON data, with its
``trace_hash``) with ``tests/golden/<name>.json``. A missing golden file is a failure;
``UPDATE_GOLDEN=1`` writes (or overwrites) the file from ``got`` instead, after an intended
change of behaviour, and the rewritten files are then reviewed and committed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"

#: most differing fields listed in one failure message
_MAX_DIFF_LINES = 30


def _diff(want: Any, got: Any, path: str = "") -> list[str]:
    """Paths at which two JSON values differ, each with both values."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got)):
            out += _diff(want.get(k, "<missing>"), got.get(k, "<missing>"), f"{path}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        out = []
        for i, (w, g) in enumerate(zip(want, got)):
            out += _diff(w, g, f"{path}[{i}]")
        return out
    return [] if want == got else [f"{path or '.'}: golden {want!r} != now {got!r}"]


def check_golden(name: str, got: dict[str, Any], *, indent: int = 2) -> None:
    """Assert that ``got`` equals ``tests/golden/<name>.json``.

    ``got`` is normalised through JSON first (tuples become lists, keys strings). It must
    hold the run's ``trace_hash``, which is compared first. With ``UPDATE_GOLDEN=1`` the file
    is (re)written from ``got`` (sorted keys, ``indent`` spaces, final newline); otherwise a
    missing file fails the test.
    """
    got = json.loads(json.dumps(got, sort_keys=True))
    assert "trace_hash" in got, f"golden {name}: the summary has no trace_hash"
    path = GOLDEN_DIR / f"{name}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=indent, sort_keys=True) + "\n")
    elif not path.exists():
        pytest.fail(f"golden file {path} is missing: create it with UPDATE_GOLDEN=1 and commit it",
                    pytrace=False)
    want = json.loads(path.read_text())
    diff = _diff(want, got)
    if not diff:
        return
    head = [] if want.get("trace_hash") == got["trace_hash"] else [
        f"trace_hash: golden {want.get('trace_hash')!r} != now {got['trace_hash']!r}"]
    lines = head + [d for d in diff if not d.startswith(".trace_hash:")]
    more = len(lines) - _MAX_DIFF_LINES
    shown = lines[:_MAX_DIFF_LINES] + ([f"... and {more} more"] if more > 0 else [])
    pytest.fail(f"{name} differs from {path.name} (UPDATE_GOLDEN=1 rewrites it after an intended "
                "change):\n" + "\n".join(shown), pytrace=False)


@pytest.fixture
def golden() -> Callable[..., None]:
    """The golden-file check :func:`check_golden`."""
    return check_golden


def interrupt_after(args: list[str], seconds: float, what: str) -> tuple[Any, str, float]:
    """Run ``python -m opendcn ARGS`` in its own process group, send SIGINT to the group
    after ``seconds`` (as a terminal's Ctrl-C), and return the process, its stderr and the
    seconds it took to exit after the signal. A pytest-xdist worker ignores SIGINT and a
    child would inherit that: the child restores the default handler."""
    import signal
    import subprocess
    import sys
    import time

    p = subprocess.Popen([sys.executable, "-m", "opendcn", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(seconds)
    assert p.poll() is None, f"the {what} ended before it could be interrupted"
    t0 = time.perf_counter()
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=120)
    return p, err, time.perf_counter() - t0
