"""``opendcn reproduce NAME``: re-run a seed paper's evaluation, print a table, write
plots and a JSON of the numbers, and check the paper's stated claims (PASS / FAIL /
NOT-CHECKABLE each).

One module per paper (:data:`NAMES`), each with the same entry point ``study(...)``;
:mod:`.base` holds what they build on (the sweep-runner :class:`~.base.Runner`, reference
records, claims, the HTML page). :func:`run` is the registry ``opendcn reproduce`` calls.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ConfigError
from .base import RECORD_MISSING, RECORD_ONLY, RUN_SLURM, Study

__all__ = ["NAMES", "REFERENCED", "get", "run"]

NAMES = ("negotiator", "shale", "opera", "duo", "openoptics", "hpc")
#: the studies whose full-scale points are kept as reference records (reproductions/<name>/)
REFERENCED = ("openoptics", "duo", "hpc", "negotiator", "opera", "shale")
#: the studies whose records ``--record --only`` can refresh point by point
PARTIAL = ("openoptics", "opera", "hpc", "duo", "shale")


def get(name: str) -> Study:
    """The ``study`` function of ``name`` (see :data:`NAMES`; its signature is :class:`~.base.Study`)."""
    if name not in NAMES:
        raise ConfigError("NAME", name, f"nothing to reproduce under this name; known: {', '.join(NAMES)}, all")
    fn: Study = importlib.import_module(f".{name}", __name__).study
    return fn


def run(name: str, quick: bool = False, out: str | Path | None = None,
        echo: Callable[[str], None] = print, *, tors: int | None = None,
        duration: str | None = None, seed: int = 1, executor: str = "local", workers: int | None = None,
        scheduler: str | None = None, progress: bool | str = False, reference: str | None = None,
        only: Sequence[str] = (), missing: bool = False, slurm: dict[str, Any] | None = None) -> int:
    """Reproduce ``name`` (see :data:`NAMES`; ``all`` runs each in turn into
    ``out/<name>`` and writes ``out/index.html`` and ``out/rollup.json``: per study the papers'
    claims PASS / FAIL / NOT-CHECKABLE, the tool's own checks apart); returns 0 if no claim
    failed. ``tors`` / ``duration``
    override the mode's size and per-point duration (each study says which sizes it takes);
    ``seed`` is the master seed of the runs (1 by default, as the reference records). The runs go through the sweep runner (``executor``, ``workers``, ``scheduler`` as
    ``opendcn sweep``, and ``slurm``: its job options with ``executor="slurm"``) into
    ``out/runs``: an interrupted reproduction resumes.
    ``reference="read"`` renders the page and verdicts from the study's reference records
    (``reproductions/<name>/``, full-scale points kept in the source tree) without running
    anything; ``"record"`` runs the full study and writes those records (with ``only``, label
    prefixes: only those points run again and are recorded; the rest are read from their
    records; with ``missing``, only the points without a record of their current spec run,
    so a study too long for one sitting is recorded across several)."""
    if name != "all" and name not in NAMES:
        raise ConfigError("NAME", name, f"nothing to reproduce under this name; known: {', '.join(NAMES)}, all")
    out = Path(out) if out is not None else Path(f"results/reproduce-{name}")
    if out.exists() and not out.is_dir():
        raise ConfigError("--out", str(out), "exists and is not a directory")
    if tors is not None and tors < 2:
        raise ConfigError("tors", tors, "need at least 2")
    kw: dict[str, Any] = dict(quick=quick, tors=tors, duration=duration, seed=seed, echo=echo, executor=executor,
                              workers=workers, scheduler=scheduler, progress=progress)
    if reference is not None:
        if reference not in ("read", "record"):
            raise ConfigError("reference", reference, "expected read or record")
        without = [n for n in ([name] if name != "all" else NAMES) if n not in REFERENCED]
        if name != "all" and without:
            raise ConfigError("--reference" if reference == "read" else "--record", name,
                              f"no reference records for this study yet (studies with them: {', '.join(REFERENCED)})")
        if quick:
            raise ConfigError("--quick", True, "reference records are the full-scale points: drop --quick")
    if only and reference != "record":
        raise ConfigError("--only", ",".join(only), "chooses the points --record runs again: give --record")
    if only and name not in PARTIAL:
        raise ConfigError("--only", ",".join(only), f"refreshes single records of {', '.join(PARTIAL)} "
                          f"(got {name!r}: record it whole)")
    if missing and reference != "record":
        raise ConfigError("--missing", True, "chooses the points --record runs: give --record")
    token = RECORD_ONLY.set(tuple(only))
    from ..experiments.sweeps import slurm_params

    given = {k: v for k, v in (slurm or {}).items() if v is not None}
    if given and executor != "slurm":
        key = next(iter(given))
        raise ConfigError(f"--slurm-{key}", given[key], "applies to --executor slurm only")
    slurm_params(given, "--slurm")                    # checked before anything runs
    stoken = RUN_SLURM.set(given)
    mtoken = RECORD_MISSING.set(bool(missing))
    try:
        return _run(name, out, reference, kw)
    finally:
        RECORD_MISSING.reset(mtoken)
        RUN_SLURM.reset(stoken)
        RECORD_ONLY.reset(token)


def _run(name: str, out: Path, reference: str | None, kw: dict[str, Any]) -> int:
    if name == "all":
        from .base import rollup

        codes = []
        for n in NAMES:
            kw["echo"](f"== reproduce {n}")
            if reference is not None and n not in REFERENCED:
                # no records to read or write: listed as such, not run in full
                kw["echo"](f"   no reference records for {n}: not run (`opendcn reproduce {n}` runs it)")
                continue
            codes.append(get(n)(out / n, reference=reference, **kw))
        rollup(out, NAMES, kw["echo"])
        kw["echo"](f"wrote {out / 'index.html'} and {out / 'rollup.json'}")
        return max(codes) if codes else 0
    return get(name)(out, reference=reference, **kw)
