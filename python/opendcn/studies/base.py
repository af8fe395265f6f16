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

Every study module (``opendcn.studies.<paper>``) has the same entry point, :class:`Study`::

    study(out, *, quick=False, tors=None, duration=None, seed=1, reference=None,
          echo=print, executor="local", workers=None, scheduler=None, progress=False) -> int

It writes ``out/<paper>.json`` (its numbers, ``"claims"`` as :func:`claims_json` gives
them and ``"provenance"``), ``out/index.html`` (:func:`write_page`) and its plots, and
returns :func:`exit_code` of its claims: 0 when none failed.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

from ..errors import ConfigError, InvariantError
from ..experiments.sweeps import RUN_OPTIONS, Point, Sweep, build_id, process_pool, run_point, sweep

__all__ = ["Study", "Runner", "Loaded", "Reference", "RefPoint", "MissingReference", "reference_root", "Claim", "PASS",
           "FAIL", "NOT_CHECKABLE", "fmt", "text_table", "write_page", "write_json", "run_ok", "echo_study", "claims_json",
           "exit_code",
           "no_reference", "audit", "provenance_line"]

PASS, FAIL, NOT_CHECKABLE = "PASS", "FAIL", "NOT-CHECKABLE"


class Study(Protocol):
    """The entry point of every study (``opendcn.studies.<paper>.study``); returns 0 when no
    claim failed, 1 otherwise.

    - ``out``: the study's folder (its JSON, page and plots; its runs under ``out/runs``);
    - ``quick``: the small, fast version; ``tors`` / ``duration`` override the mode's size
      and per-point simulated time (each study says which sizes it takes);
    - ``seed``: the master seed of its runs;
    - ``reference``: ``"read"`` renders the page and verdicts from the study's reference
      records (``reproductions/<paper>/``) without running anything, ``"record"`` runs the
      full study and writes them (studies without records refuse both, :func:`no_reference`);
    - ``echo``: where its tables and claims are printed;
    - ``executor``, ``workers``, ``scheduler``, ``progress``: where and how the runs go, as
      ``opendcn sweep`` takes them."""

    def __call__(self, out: Path, *, quick: bool = False, tors: int | None = None, duration: str | None = None,
                 seed: int = 1, reference: str | None = None, echo: Callable[[str], None] = print,
                 executor: str = "local", workers: int | None = None, scheduler: str | None = None,
                 progress: bool | str = False) -> int: ...


def no_reference(paper: str, reference: str | None) -> None:
    """The check of a study that keeps no reference records: ``reference`` must be None."""
    if reference is not None:
        raise ConfigError("--reference" if reference == "read" else "--record", paper,
                          "no reference records for this study yet")


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
    def timeseries(self) -> Any:
        """The run's time series (pyarrow table; empty when the run sampled none)."""
        import pyarrow.parquet as pq

        f = self.folder / "timeseries.parquet"
        return pq.read_table(f) if f.exists() else None

    @property
    def drops(self) -> Any:
        """The run's drop records (``Result.drops``), or None when it kept none."""
        import pyarrow.parquet as pq

        f = self.folder / "drops.parquet"
        return pq.read_table(f) if f.exists() else None

    @property
    def pushbacks(self) -> Any:
        """The run's push-back messages (``Result.pushbacks``), or None when it kept none."""
        import pyarrow.parquet as pq

        f = self.folder / "pushbacks.parquet"
        return pq.read_table(f) if f.exists() else None

    @property
    def flows(self) -> Any:
        if self._flows is None:
            import pyarrow.parquet as pq

            self._flows = pq.read_table(self.folder / "flows.parquet")
        return self._flows


class MissingReference(LookupError):
    """A claim's point has no reference record (or a stale one: its spec changed)."""

    def __init__(self, label: str, why: str = "no reference record"):
        self.label, self.why = label, why
        super().__init__(f"{label}: {why}")


class RefPoint:
    """A point as its reference record keeps it: the summary and the metrics the claims
    derive from the run's tables (``Runner.derive``); the tables themselves are not kept."""

    def __init__(self, record: dict[str, Any]):
        self.record = record
        self.summary: dict[str, Any] = record["summary"]
        self.derived: dict[str, Any] = record.get("derived", {})
        self.label: str = record["label"]


def reference_root(paper: str) -> Path:
    """``reproductions/<paper>`` of the source tree the command runs in (the first folder
    upwards from the working directory that has ``reproductions/``; else under it)."""
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "reproductions").is_dir():
            return d / "reproductions" / paper
    return here / "reproductions" / paper


class Reference:
    """Reference results of a study (``reproductions/<paper>/points/<label>.json``): per
    full-scale point, the exact point (architecture, options, run options, duration,
    seed), its spec hash, the build that computed it, its trace hash, its summary and the
    metrics its claims derive from its tables. ``mode``: ``read`` (a study renders its
    page and verdicts from the records, running nothing) or ``record`` (a study that runs
    its points writes their records)."""

    def __init__(self, root: str | Path, mode: str, only: tuple[str, ...] = (), missing: bool = False):
        if mode not in ("read", "record"):
            raise ConfigError("reference.mode", mode, "expected read or record")
        if only and mode != "record":
            raise ConfigError("--only", ",".join(only), "chooses the points --record runs again")
        if missing and mode != "record":
            raise ConfigError("--missing", True, "chooses the points --record runs: give --record")
        self.root, self.mode = Path(root), mode
        #: record mode: when given, only the points whose label starts with one of these are
        #: run and recorded again; every other point is read from its record
        self.only = tuple(only)
        #: record mode: run and record only the points without a complete record of their
        #: current spec; those with one are read from it (a study recorded across sittings;
        #: with ``only``, of those points only the ones whose label has such a prefix)
        self.missing = missing
        self._hashes: set[str] | None = None

    def recorded_specs(self) -> set[str]:
        """The spec hashes the stored records hold."""
        if self._hashes is None:
            self._hashes = set()
            for f in (self.root / "points").glob("*.json"):
                rec = json.loads(f.read_text())
                if rec.get("complete", True):
                    self._hashes.add(str(rec.get("spec_hash")))
        return self._hashes

    def chosen(self, label: str | None) -> bool:
        """Whether the point ``label`` is one ``--only`` names (every labelled point without it)."""
        return label is not None and (not self.only or label.startswith(self.only))

    def reads(self, label: str | None) -> bool:
        """Whether the point ``label`` comes from its record rather than a run (with
        ``missing``: whether it has a record; a stale one is run again)."""
        if self.mode == "read":
            return True
        chosen = self.chosen(label)
        if self.missing and chosen:
            f = self.file(str(label))
            return f.exists() and json.loads(f.read_text()).get("complete", True)
        return not chosen if (self.only or self.missing) else False

    def file(self, label: str) -> Path:
        return self.root / "points" / (label.replace("/", "__") + ".json")

    def load(self, label: str, p: Point) -> RefPoint:
        f = self.file(label)
        if not f.exists():
            if not self.root.is_dir():
                raise MissingReference(label, f"no reference records at {self.root} (they are kept in opendcn's "
                                              "source tree: run the command from inside it)")
            raise MissingReference(label)
        rec = json.loads(f.read_text())
        if rec.get("spec_hash") != p.spec_hash:
            raise MissingReference(label, f"stale reference record (recorded for spec {rec.get('spec_hash')}, "
                                          f"the study now runs {p.spec_hash})")
        return RefPoint(rec)

    def labels(self) -> list[str]:
        return sorted(f.stem.replace("__", "/") for f in (self.root / "points").glob("*.json"))

    def save(self, label: str, p: Point, folder: Path, derived: dict[str, Any], trim: tuple[str, ...] = (),
             complete: bool = True) -> Path:
        """Write a point's record; ``trim`` names ``arch_metrics`` keys left out of the
        stored summary (long series a study keeps only as derived metrics), listed in the
        record's ``trimmed``. ``complete=False``: written as soon as the point ran, before
        the study derived its metrics (``--missing`` runs it again if the study stops
        before it rewrites the record whole)."""
        summary = json.loads((folder / "summary.json").read_text())
        am = summary.get("arch_metrics", {})
        gone = [k for k in trim if k in am]
        for k in gone:
            del am[k]
        rec_file = folder / "point.json"
        build = json.loads(rec_file.read_text()).get("build") if rec_file.exists() else None
        point = p.as_dict()
        flows = point.get("run", {}).get("flows")
        elided = isinstance(flows, list) and len(flows) > 1000
        if elided:
            # a long explicit flow list (an all-to-all) is the study's to rebuild: the
            # record keeps its length and digest; the spec hash still pins the point
            text = json.dumps(flows, separators=(",", ":"))
            point["run"] = {**point["run"], "flows": {"elided": len(flows),
                                                      "sha256": hashlib.sha256(text.encode()).hexdigest()}}
        rec = {"label": label, "point": point, "spec_hash": p.spec_hash, "build": build,
               **({"point_elided": True} if elided else {}), **({} if complete else {"complete": False}),
               "trace_hash": summary.get("trace_hash"), "summary": summary, "derived": derived,
               **({"trimmed": [f"arch_metrics.{k}" for k in gone]} if gone else {})}
        f = self.file(label)
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".{f.name}.tmp")
        tmp.write_text(json.dumps(rec, indent=1, sort_keys=True, default=str) + "\n")
        tmp.replace(f)
        return f


#: label prefixes of the points ``--record --only`` runs again (set by :func:`~opendcn.studies.run`)
RECORD_ONLY: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("RECORD_ONLY", default=())
#: ``--record --missing``: run only the points without a record of their current spec
RECORD_MISSING: contextvars.ContextVar[bool] = contextvars.ContextVar("RECORD_MISSING", default=False)
#: the Slurm job options (time, partition, mem, cpus, account) of a study's runs with
#: ``executor="slurm"``, as ``opendcn sweep`` takes them (set by :func:`opendcn.studies.run`)
RUN_SLURM: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("RUN_SLURM", default={})


def open_reference(paper: str, reference: str | None, sized: bool) -> "Reference | None":
    """The study's reference records (``reproductions/<paper>/``) in mode ``reference``
    (None: none); refused when the study is not at its full scale (``sized``: a quick
    mode or a size or duration override). In record mode with :data:`RECORD_ONLY` set, only
    the points with those label prefixes run again; the others are read from their records."""
    if not reference:
        return None
    if sized:
        raise ConfigError("--reference" if reference == "read" else "--record", reference,
                          "reference records are the full-scale points: no --quick, --tors or --duration")
    rec = reference == "record"
    return Reference(reference_root(paper), reference, RECORD_ONLY.get() if rec else (),
                     missing=RECORD_MISSING.get() if rec else False)


def missing_reference(paper: str, out: Path, claim_texts: Sequence[str], e: Exception, ref: Reference | None,
                      echo: Callable[[str], None], **json_kw: Any) -> int:
    """A study rendered from reference records that lack a point: every claim
    NOT-CHECKABLE naming it, the JSON and page written, nothing run."""
    from ..experiments.sweeps import build_id

    claims = [Claim(t, NOT_CHECKABLE, f"reference: {e} (`opendcn reproduce {paper} --record` computes the full "
                                      "study's points)") for t in claim_texts]
    for c in claims:
        echo(c.line())
    out.mkdir(parents=True, exist_ok=True)
    prov: dict[str, Any] = {"reference": str(ref.root) if ref else None, "this_build": build_id(),
                            "points_by_build": {}, "points_from_other_builds": 0}
    write_json(out, paper, {"mode": "reference", "missing": str(e)}, claims, prov, echo, **json_kw)
    write_page(out, f"reproduce {paper}", f"{paper}: reference records missing.", claims, [], [], provenance=prov)
    return exit_code(claims)


class Runner:
    """Runs a study's points through the sweep runner into ``root``. With a
    :class:`Reference` in ``read`` mode it runs nothing: :meth:`get` returns the points'
    records (:class:`RefPoint`) or raises :class:`MissingReference`; in ``record`` mode
    every labelled point read is recorded with what :meth:`derive` computed from it."""

    def __init__(self, root: str | Path, *, executor: str = "local", workers: int | None = None,
                 scheduler: str | None = None, progress: bool | str = False,
                 echo: Callable[[str], None] = print, reference: Reference | None = None,
                 trim: tuple[str, ...] = (),
                 derivers: Callable[[str], dict[str, Callable[[Any], Any]]] | None = None):
        self.reference = reference
        #: label -> the metrics (key -> function of the loaded run) the study derives from
        #: that point's tables: given, a point recorded with ``--missing`` gets them as soon
        #: as it has run, and its record is complete (a study recorded across sittings
        #: whose claims read time series or flow tables); without, such a record is written
        #: incomplete and only the study's end completes it
        self.derivers = derivers
        #: records written as their points ran (``--missing``)
        self.saved_now = 0
        #: ``arch_metrics`` keys left out of the summaries reference records keep
        self.trim = tuple(trim)
        #: record mode: label -> (point, folder, derived metrics)
        self._recorded: dict[str, tuple[Point, Path, dict[str, Any]]] = {}
        self.root = Path(root)
        self.executor, self.workers, self.scheduler, self.progress = executor, workers, scheduler, progress
        self.slurm = dict(RUN_SLURM.get())
        self.echo = echo
        #: points read by :meth:`get`, by the build that computed them (``unrecorded``:
        #: stored before points recorded their build)
        self.builds: dict[str, int] = {}

    @staticmethod
    def point(arch: str, options: dict[str, Any], run: dict[str, Any] | None = None, duration: str = "1ms",
              seed: int = 1) -> Point:
        """A study point; ``run`` keys are run options (defaults as ``opendcn run``)."""
        r = dict(run or {})
        bad = set(r) - set(RUN_OPTIONS)
        if bad:
            raise ConfigError("run." + sorted(bad)[0], r[sorted(bad)[0]], "not a run option")
        return Point(arch, dict(options), {**RUN_OPTIONS, **r}, str(duration), int(seed))

    @property
    def reading(self) -> bool:
        """True when the runner renders from reference records (runs nothing)."""
        return self.reference is not None and self.reference.mode == "read"

    def reads(self, label: str | None) -> bool:
        """True when the point ``label`` comes from its reference record, not from a run."""
        return self.reference is not None and self.reference.reads(label)

    def prefetch(self, points: Iterable[Point], labels: Sequence[str | None] | None = None) -> None:
        """Run every point not yet stored, in parallel on the runner's executor (none when
        reading records). ``labels`` (one per point) name the points' reference records:
        recording with ``--missing``, only the points without a complete record run, each
        one's record written as soon as it has run (a study recorded across sittings loses
        only the points under way when it stops); recording with
        ``--only`` and no labels, each chosen point runs when read."""
        ref = self.reference
        if self.reading or (ref is not None and ref.only and labels is None):
            return
        pts = list(points)
        labs: list[str | None] = list(labels) if labels is not None else [None] * len(pts)
        if len(labs) != len(pts):
            raise ValueError("prefetch: one label per point")
        have = ref.recorded_specs() if ref is not None and ref.missing else set()
        uniq: dict[str, tuple[Point, str | None]] = {}
        for p, lab in zip(pts, labs):
            if ref is not None and lab is not None and ref.reads(lab):
                continue            # read from its record
            if ref is not None and ref.only and (lab is None or not lab.startswith(ref.only)):
                continue
            if p.spec_hash not in have or lab is not None:
                uniq.setdefault(p.spec_hash, (p, lab))
        if not uniq:
            return
        todo = list(uniq.values())
        on_done = None
        if ref is not None and ref.missing:
            label_of = {p.spec_hash: lab for p, lab in todo}

            def on_done(p: Point, r: dict[str, Any]) -> None:
                # kept as soon as the point has run: a study stopped later loses no point
                lab = label_of.get(p.spec_hash)
                if lab is not None and r["status"] == "ok":
                    self._save_now(lab, p, self.root / p.relpath())
        recs = sweep(Sweep([p for p, _ in todo], ()), self.root, executor=self.executor, workers=self.workers,
                     scheduler=self.scheduler, progress=self.progress, on_done=on_done, slurm=self.slurm or None)
        if ref is not None and ref.missing:
            for (p, lab), r in zip(todo, recs):
                if lab is not None and r["status"] == "skipped":
                    self._save_now(lab, p, self.root / p.relpath())    # stored under --out from before
        ran = sum(r["status"] == "ok" for r in recs)
        skipped = sum(r["status"] == "skipped" for r in recs)
        self.echo(f"  {len(recs)} runs: {ran} run now, {skipped} stored from before ({self.root})")

    def get(self, arch: str, options: dict[str, Any], run: dict[str, Any] | None = None, duration: str = "1ms",
            seed: int = 1, *, label: str | None = None) -> Any:
        """The stored result of a point (run now if it is not stored yet); a point that
        failed raises its error (ConfigError or InvariantError) with the point's path.
        ``label`` names the point in reference records."""
        p = self.point(arch, options, run, duration, seed)
        if self.reference is not None and self.reference.reads(label):
            if label is None:
                raise MissingReference(str(p.relpath()), "an unlabelled point has no reference record")
            try:
                ref = self.reference.load(label, p)
            except MissingReference:
                if not (self.reference.missing and self.reference.chosen(label)):
                    raise
                ref = None          # a stale record of a chosen point: --missing runs it again
            if ref is not None:
                b = str(ref.record.get("build") or "unrecorded")
                self.builds[b] = self.builds.get(b, 0) + 1
                return ref
        folder = self.root / p.relpath()
        if label is not None and self.reference is not None:
            self._recorded.setdefault(label, (p, folder, {}))
        rec_file = folder / "point.json"
        rec = json.loads(rec_file.read_text()) if rec_file.exists() else {}
        if rec.get("hash") != p.spec_hash:
            rec = sweep(Sweep([p], ()), self.root, executor="local", workers=1)[0]
            if rec["status"] == "failed":
                err = rec["error"]
                if err.startswith("InvariantError") or err.startswith("DeadlockError"):
                    raise InvariantError(f"{p.relpath()}: {err}")
                raise ConfigError(str(p.relpath()), p.as_dict()["options"], err)
        if label is not None and self.reference is not None and self.reference.missing:
            # recorded across sittings: kept at once, so a study stopped later loses no run
            self._save_now(label, p, folder)
        b = str(rec.get("build") or "unrecorded")
        self.builds[b] = self.builds.get(b, 0) + 1
        return Loaded(folder)

    def _save_now(self, label: str, p: Point, folder: Path) -> None:
        """``--missing``: the record of a point that has just run, complete when the study
        names what it derives from the point (:attr:`derivers`)."""
        assert self.reference is not None
        self.saved_now += 1
        if self.derivers is None:
            self.reference.save(label, p, folder, {}, self.trim, complete=False)
            return
        run = Loaded(folder)
        derived = {k: fn(run) for k, fn in self.derivers(label).items()}
        self.reference.save(label, p, folder, derived, self.trim)

    def derive(self, r: Any, key: str, fn: Callable[[Any], Any]) -> Any:
        """``fn(r)``: a metric a claim derives from a point's tables (time series, flows,
        drop log). From a reference record, its stored value; when recording, stored with
        the point's record."""
        if isinstance(r, RefPoint):
            if key not in r.derived:
                raise MissingReference(r.label, f"its record lacks the derived metric {key!r}")
            return r.derived[key]
        v = fn(r)
        for _, folder, derived in self._recorded.values():
            if getattr(r, "folder", None) == folder:
                derived[key] = v
        return v

    def save_reference(self) -> int:
        """Record mode: write the records of every labelled point read; how many records
        this recording wrote (with those written as their points ran)."""
        if self.reference is None or self.reference.mode != "record":
            return 0
        for label, (p, folder, derived) in self._recorded.items():
            self.reference.save(label, p, folder, derived, self.trim)
        return len(self._recorded) + self.saved_now

    def provenance(self) -> dict[str, Any]:
        """Which builds computed the points read so far, against the build reading them
        (see :func:`~opendcn.experiments.sweeps.build_id`): a resumed study may mix points of
        earlier builds, and its report says so."""
        me = build_id()
        extra = {"reference": str(self.reference.root)} if self.reading and self.reference is not None else {}
        return {**extra, "this_build": me, "points_by_build": dict(sorted(self.builds.items())),
                "points_from_other_builds": sum(n for b, n in self.builds.items() if b != me)}

    def fresh(self, arch: str, options: dict[str, Any], run: dict[str, Any] | None = None, duration: str = "1ms",
              seed: int = 1) -> Loaded:
        """The point run again now, outside the stored tree (to check determinism)."""
        p = self.point(arch, options, run, duration, seed)
        tmp = Path(tempfile.mkdtemp(prefix="opendcn-fresh-"))
        rec = run_point(p, str(tmp))
        if rec["status"] != "ok":
            raise InvariantError(f"{p.relpath()}: {rec['error']}")
        return Loaded(tmp / p.relpath())


# ------------------------------------------------------------------------ printing a study
def fmt(v: Any, nd: int = 3) -> str:
    """One table cell: floats with ``nd`` decimals, booleans as ok / FAIL, None as -."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "ok" if v else "FAIL"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def text_table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    """``rows`` as a right-aligned plain-text table of the columns ``cols``."""
    cells = [list(cols)] + [[fmt(r.get(c)) for c in cols] for r in rows]
    w = [max(len(x[i]) for x in cells) for i in range(len(cols))]
    lines = ["  ".join(x[i].rjust(w[i]) for i in range(len(cols))) for x in cells]
    lines.insert(1, "  ".join("-" * w[i] for i in range(len(cols))))
    return "\n".join(lines)


def echo_study(echo: Callable[[str], None], sections: list[tuple[str, list[dict[str, Any]], list[str]]],
               claims: list[Claim]) -> None:
    """Print each section's table under its caption, then the claims, one line each."""
    for caption, rows, cols in sections:
        echo("")
        echo(caption)
        echo(text_table(rows, cols))
    echo("")
    for c in claims:
        echo(c.line())


def claims_json(claims: list[Claim]) -> list[dict[str, str]]:
    """The claims as every study's JSON holds them (its ``"claims"``): one object per claim,
    in the study's order, ``{"claim": the paper's statement, "status": "PASS" | "FAIL" |
    "NOT-CHECKABLE", "detail": what was measured (the numbers the status comes from)}``."""
    return [{"claim": c.text, "status": c.status, "detail": c.detail} for c in claims]


def write_json(out: Path, paper: str, data: dict[str, Any], claims: list[Claim], provenance: dict[str, Any],
               echo: Callable[[str], None], default: Callable[[Any], Any] | None = None) -> Path:
    """``out/<paper>.json``: the study's numbers ``data``, then its ``"claims"``
    (:func:`claims_json`) and ``"provenance"`` (:meth:`Runner.provenance`, whose line is
    printed); ``default`` converts what JSON cannot hold."""
    echo(provenance_line(provenance))
    f = out / f"{paper}.json"
    f.write_text(json.dumps({**data, "claims": claims_json(claims), "provenance": provenance}, indent=2,
                            default=default))
    return f


def exit_code(claims: list[Claim]) -> int:
    """What a study returns: 0 when no claim failed (NOT-CHECKABLE ones do not fail), else 1."""
    return 0 if all(c.status != FAIL for c in claims) else 1


def run_ok(s: dict[str, Any]) -> bool:
    """A run's own checks: its invariants, no collision or guardband violation, and the
    byte balance as the summary reports it (each term counted by the engine)."""
    b = s["bytes"]
    return bool(s["invariants"]["ok"]) and s["fabric"].get("collisions", 0) == 0 \
        and s["fabric"].get("guardband_violations", 0) == 0 \
        and b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]


_PAGE_CSS = ("body{font-family:sans-serif;margin:2em;max-width:1300px}table{border-collapse:collapse;"
             "font-size:12px;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
             "th{background:#eee}td.l{text-align:left}.PASS{color:#060}.FAIL{color:#a00}"
             ".NOT-CHECKABLE{color:#666}img{max-width:100%;margin:0.5em}"
             ".scroll{overflow-x:auto;max-width:100%;margin-bottom:1.5em}.scroll table{margin-bottom:0}")


def provenance_line(prov: dict[str, Any]) -> str:
    """One line on the builds that computed a study's points (:meth:`Runner.provenance`)."""
    by = prov["points_by_build"]
    total = sum(by.values())
    if "reference" in prov:
        parts = ", ".join(f"{n} by {b}" for b, n in by.items())
        return f"reference records: {total} points read from {prov['reference']} ({parts or 'none'}); nothing was run"
    if prov["points_from_other_builds"] == 0:
        return f"builds: all {total} points computed by this build ({prov['this_build']})"
    parts = ", ".join(f"{n} by {b}" for b, n in by.items())
    return (f"builds: {prov['points_from_other_builds']} of {total} points were computed by another build than "
            f"this one ({prov['this_build']}): {parts}")


def write_page(out: Path, title: str, intro: str, claims: list[Claim],
               sections: list[tuple[str, list[dict[str, Any]], list[str]]], images: list[str],
               provenance: dict[str, Any] | None = None) -> Path:
    """``out/index.html``: the claims with their status and reason, each section's table,
    the plots ``images`` (file names in ``out``; names that do not exist are left out, so
    the page references only files that are there) and, given :meth:`Runner.provenance`,
    the builds that computed the points."""
    import html

    e = html.escape
    prov = f"<p>{e(provenance_line(provenance))}</p>" if provenance is not None else ""
    parts = [f"<!doctype html><meta charset='utf-8'><title>{e(title)}</title><style>{_PAGE_CSS}</style>",
             f"<h1>{e(title)}</h1><p>{e(intro)}</p>{prov}<h2>Claims</h2><table><tr><th>status</th><th>claim</th>"
             "<th>what was measured</th></tr>"]
    for c in claims:
        parts.append(f"<tr><td class='{e(c.status)}'>{e(c.status)}</td><td class='l'>{e(c.text)}</td>"
                     f"<td class='l'>{e(c.detail)}</td></tr>")
    parts.append("</table>")
    for caption, rows, cols in sections:
        # a table wider than the page scrolls inside its own box
        parts.append(f"<h2>{e(caption)}</h2><div class='scroll'><table><tr>"
                     + "".join(f"<th>{e(c)}</th>" for c in cols) + "</tr>")
        for r in rows:
            parts.append("<tr>" + "".join(f"<td>{e(fmt(r.get(c)))}</td>" for c in cols) + "</tr>")
        parts.append("</table></div>")
    imgs = [i for i in images if (out / i).exists()]
    if imgs:
        parts.append("<h2>Plots</h2>" + "".join(f"<img src='{e(i)}' alt='{e(i)}'>" for i in imgs))
    page = out / "index.html"
    tmp = out / ".index.html.tmp"
    tmp.write_text("\n".join(parts))
    tmp.replace(page)
    return page


#: the start of a claim that checks the tool itself (invariants, determinism), counted
#: apart from the papers' claims in a roll-up
TOOL_CHECKS = ("every run", "every packet run", "every finished run", "deterministic")


def rollup(out: Path, names: Sequence[str], echo: Callable[[str], None]) -> dict[str, Any]:
    """``out/index.html`` and ``out/rollup.json`` across the studies under ``out/<name>/``:
    per study the papers' claims PASS / FAIL / NOT-CHECKABLE and, apart, the tool's own
    checks, each study linked; printed as a table. A study whose JSON is missing (it
    stopped on an error) is listed as such."""
    import html

    rows: list[dict[str, Any]] = []
    for n in names:
        f = out / n / f"{n}.json"
        row: dict[str, Any] = {"study": n, "mode": None, "PASS": 0, "FAIL": 0, "NOT-CHECKABLE": 0,
                               "tool_checks_ok": 0, "tool_checks_nc": 0, "tool_checks": 0}
        if not f.exists():
            rows.append({**row, "mode": "no result"})
            continue
        data = json.loads(f.read_text())
        row["mode"] = data.get("mode")
        for c in data.get("claims", []):
            if str(c["claim"]).startswith(TOOL_CHECKS):
                row["tool_checks"] += 1
                # passed only when checked: a check rendered from records (determinism) or
                # waiting for its records is NOT-CHECKABLE, counted apart
                row["tool_checks_ok"] += c["status"] == PASS
                row["tool_checks_nc"] += c["status"] == NOT_CHECKABLE
            else:
                row[c["status"]] = row.get(c["status"], 0) + 1
        rows.append(row)
    total = {k: sum(r[k] for r in rows)
             for k in ("PASS", "FAIL", "NOT-CHECKABLE", "tool_checks_ok", "tool_checks_nc", "tool_checks")}

    def tool(r: dict[str, Any]) -> str:
        return f"{r['tool_checks_ok']}/{r['tool_checks']}" + (f" ({r['tool_checks_nc']} not checkable)"
                                                              if r["tool_checks_nc"] else "")

    out.mkdir(parents=True, exist_ok=True)
    (out / "rollup.json").write_text(json.dumps({"studies": rows, "total": total}, indent=2) + "\n")
    echo("")
    echo(text_table([{**r, "tool checks passed": tool(r)} for r in rows]
                    + [{"study": "all", "mode": "", **total, "tool checks passed": tool(total)}],
                    ["study", "mode", "PASS", "FAIL", "NOT-CHECKABLE", "tool checks passed"]))
    e = html.escape
    parts = [f"<!doctype html><meta charset='utf-8'><title>reproduce all</title><style>{_PAGE_CSS}</style>",
             "<h1>reproduce all</h1><p>The papers' claims per study (the tool's own checks — exact conservation, "
             "no collisions or guardband violations, determinism — counted apart).</p><table><tr><th>study</th>"
             "<th>mode</th><th>PASS</th><th>FAIL</th><th>NOT-CHECKABLE</th><th>tool checks passed</th></tr>"]
    for r in rows:
        link = f"<a href='{e(r['study'])}/index.html'>{e(r['study'])}</a>" if r["mode"] != "no result" \
            else e(r["study"])
        parts.append(f"<tr><td class='l'>{link}</td><td>{e(str(r['mode']))}</td><td class='PASS'>{r['PASS']}</td>"
                     f"<td class='FAIL'>{r['FAIL']}</td><td class='NOT-CHECKABLE'>{r['NOT-CHECKABLE']}</td>"
                     f"<td>{e(tool(r))}</td></tr>")
    parts.append(f"<tr><th>all</th><th></th><th>{total['PASS']}</th><th>{total['FAIL']}</th>"
                 f"<th>{total['NOT-CHECKABLE']}</th><th>{e(tool(total))}</th></tr>"
                 "</table>")
    tmp = out / ".index.html.tmp"
    tmp.write_text("\n".join(parts))
    tmp.replace(out / "index.html")
    return {"studies": rows, "total": total}


# ------------------------------------------------------------------ auditing the records
#: a row of :func:`audit`'s table
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
    """Whether a study's reference records still hold (``opendcn reproduce NAME --audit
    SECONDS``): a record keeps the build that computed it and its trace hash, records
    accumulate over many builds, and one whose point would now run differently (an engine
    fix since) is stale although its spec hash, which names the point and not the code,
    still matches. Rerun the reference records of ``paper`` whose recorded wall time is at most
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
