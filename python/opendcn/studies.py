"""What ``opendcn reproduce`` builds on: a paper's evaluation as points of the sweep runner.

A :class:`Runner` names each run of a study as a sweep point (architecture, options, run
options — a Poisson workload, explicit ``flows`` or a ``mix`` —, duration, seed), runs
the points it is given up front in parallel on any sweep executor (:meth:`Runner.prefetch`)
and hands back each point's stored result (:meth:`Runner.get`: summary and per-flow
records, read from the results tree). The tree lives under the study's output folder, so
an interrupted reproduction resumes where it stopped and ``opendcn query`` /
``opendcn report`` work on it like on any sweep.

A study's stated claims are :class:`Claim` s with a status ``PASS``, ``FAIL`` or
``NOT-CHECKABLE`` and the reason (the numbers the status comes from).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import ConfigError, InvariantError
from .sweeps import RUN_OPTIONS, Point, Sweep, run_point, sweep

__all__ = ["Runner", "Loaded", "Claim", "PASS", "FAIL", "NOT_CHECKABLE"]

PASS, FAIL, NOT_CHECKABLE = "PASS", "FAIL", "NOT-CHECKABLE"


@dataclass
class Claim:
    """One stated claim of a paper and what the reproduction found."""

    text: str
    status: str
    detail: str

    def line(self) -> str:
        return f"{self.status}  {self.text}  [{self.detail}]"


class Loaded:
    """A stored run: ``summary`` (dict) and ``flows`` (pyarrow table, read when used)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.summary: dict[str, Any] = json.loads((folder / "summary.json").read_text())
        self._flows: Any = None

    @property
    def spec_info(self) -> dict[str, Any]:
        return dict(json.loads((self.folder / "spec.json").read_text()))

    @property
    def flows(self) -> Any:
        if self._flows is None:
            import pyarrow.parquet as pq

            self._flows = pq.read_table(self.folder / "flows.parquet")
        return self._flows


class Runner:
    """Runs a study's points through the sweep runner into ``root``."""

    def __init__(self, root: str | Path, *, executor: str = "local", workers: int | None = None,
                 scheduler: str | None = None, progress: bool = False,
                 echo: Callable[[str], None] = print):
        self.root = Path(root)
        self.executor, self.workers, self.scheduler, self.progress = executor, workers, scheduler, progress
        self.echo = echo

    @staticmethod
    def point(arch: str, options: dict[str, Any], run: dict[str, Any] | None = None, duration: str = "1ms",
              seed: int = 1) -> Point:
        """A study point; ``run`` keys are run options (defaults as ``opendcn run``)."""
        r = dict(run or {})
        bad = set(r) - set(RUN_OPTIONS)
        if bad:
            raise ConfigError("run." + sorted(bad)[0], r[sorted(bad)[0]], "not a run option")
        return Point(arch, dict(options), {**RUN_OPTIONS, **r}, str(duration), int(seed))

    def prefetch(self, points: Iterable[Point]) -> None:
        """Run every point not yet stored, in parallel on the runner's executor."""
        uniq: dict[str, Point] = {}
        for p in points:
            uniq.setdefault(p.spec_hash, p)
        if not uniq:
            return
        recs = sweep(Sweep(list(uniq.values()), ()), self.root, executor=self.executor, workers=self.workers,
                     scheduler=self.scheduler, progress=self.progress)
        ran = sum(r["status"] == "ok" for r in recs)
        skipped = sum(r["status"] == "skipped" for r in recs)
        self.echo(f"  {len(recs)} runs: {ran} run now, {skipped} stored from before ({self.root})")

    def get(self, arch: str, options: dict[str, Any], run: dict[str, Any] | None = None, duration: str = "1ms",
            seed: int = 1) -> Loaded:
        """The stored result of a point (run now if it is not stored yet); a point that
        failed raises its error (ConfigError or InvariantError) with the point's path."""
        p = self.point(arch, options, run, duration, seed)
        folder = self.root / p.relpath()
        rec_file = folder / "point.json"
        if not (rec_file.exists() and json.loads(rec_file.read_text()).get("hash") == p.spec_hash):
            rec = sweep(Sweep([p], ()), self.root, executor="local", workers=1)[0]
            if rec["status"] == "failed":
                err = rec["error"]
                if err.startswith("InvariantError") or err.startswith("DeadlockError"):
                    raise InvariantError(f"{p.relpath()}: {err}")
                raise ConfigError(str(p.relpath()), p.as_dict()["options"], err)
        return Loaded(folder)

    def fresh(self, arch: str, options: dict[str, Any], run: dict[str, Any] | None = None, duration: str = "1ms",
              seed: int = 1) -> Loaded:
        """The point run again now, outside the stored tree (to check determinism)."""
        p = self.point(arch, options, run, duration, seed)
        tmp = Path(tempfile.mkdtemp(prefix="opendcn-fresh-"))
        rec = run_point(p, str(tmp))
        if rec["status"] != "ok":
            raise InvariantError(f"{p.relpath()}: {rec['error']}")
        return Loaded(tmp / p.relpath())
