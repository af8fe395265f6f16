"""Sweeps: a grid (or zip) of runs over architectures, their options, workload options,
loads and seeds, executed on a local process pool, a Dask cluster or Slurm, with every
point's results landing in one hive-partitioned results tree.

A sweep file (TOML) names what is fixed and what varies::

    arch = "rotornet"              # or a list: arch is then varied too
    duration = "1ms"
    mode = "grid"                  # grid: every combination; zip: the lists side by side

    [options]                      # fixed: architecture options and run options
    nodes = 8
    workload = "hadoop"

    [vary]                         # varied: any architecture option, load, seed, workload, ...
    load = [0.2, 0.4, 0.6]
    routing = ["vlb", "direct"]
    seed = [1, 2]

A run option ``mode`` in ``[options]`` or ``[vary]`` chooses the engine as ``opendcn run
--mode`` does: ``"packet"`` (default) or ``"flow"`` (:mod:`opendcn.network.flowsim`); the top-level
``mode`` is the sweep's own (grid or zip).

Each point is one run: ``od.arch.<arch>(**options)`` on the workload the run options
describe (``workload``, ``load``, ``pattern``, ``flows_file``, ``incast_degree``,
``incast_size``, ``flow_size``, ``mice_threshold``; as ``opendcn run``), for ``duration``
with ``seed``. Its **spec hash** is the SHA-256 of the point's canonical JSON (with the
opendcn version). Its results go to ``OUT/arch=A/<varied option>=V/.../seed=S/``:
``summary.json``, ``spec.json``, ``flows.parquet``, ``timeseries.parquet``, ``point.json``
(the point, its hash, wall time and the :func:`build_id` that computed it) and
``summary.parquet`` (one row: the point's parameters and the flattened summary). A point's
folder is written to a scratch name and renamed into place when complete, so an
interrupted or failed point leaves nothing half-written.

**Resuming**: a point whose folder holds a ``point.json`` with the same spec hash is
skipped. A point that fails (a bad option, an invariant violation, a killed worker) is
recorded in ``OUT/failed/<hash>.json`` with its error, and the sweep goes on; the next
run of the sweep tries it again. ``OUT/sweep.json`` lists every point and its status.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import hashlib
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

from ..errors import ConfigError

__all__ = ["Point", "Sweep", "load_sweep", "sweep", "run_point", "EXECUTORS", "flatten"]

#: options of a run that are not architecture options (as ``opendcn run`` takes them)
RUN_OPTIONS = {"workload": "hadoop", "load": 0.3, "pattern": "uniform", "flows_file": None,
               "incast_degree": 20, "incast_size": "1KB", "flow_size": None, "mice_threshold": "10KB",
               "active": 0.5, "flows": None, "mix": None, "mode": "packet", "fold_ranks": False,
               "coflow_interval": None}
#: run options added later: left out of a point's hash at their defaults, so that the
#: points stored before keep theirs
_LATER_DEFAULTS = {"mode": "packet", "fold_ranks": False, "coflow_interval": None}
#: the keys of one workload of a ``mix`` (each a Poisson workload, as the run options say)
MIX_KEYS = ("workload", "load", "pattern", "incast_degree", "incast_size", "flow_size", "active")
EXECUTORS = ("local", "dask", "slurm", "submitit-local")
_TOP = {"arch", "duration", "mode", "options", "vary", "seed", "out", "slurm"}

#: the Slurm resources a sweep may ask for (``[slurm]`` in the sweep file, ``--slurm-*`` on
#: the command line): name -> (submitit parameter, sbatch option)
SLURM_KEYS = {"time": ("timeout_min", "--time"), "partition": ("slurm_partition", "--partition"),
              "mem": ("mem_gb", "--mem"), "cpus": ("cpus_per_task", "--cpus-per-task"),
              "account": ("slurm_account", "--account")}


#: the time limit of a Slurm point unless the sweep asks for one (minutes)
SLURM_DEFAULT_MINUTES = 60


def signal_delay_s(timeout_min: int) -> int:
    """Seconds before its time limit that a Slurm job is warned (USR2): submitit's 90, or a
    quarter of a limit shorter than 6 minutes (at least 5 s), so the warning does not come
    as the job starts."""
    return int(min(90, max(5, timeout_min * 60 // 4)))

_SLURM_TIME_UNITS = {"s": 1 / 60, "min": 1, "h": 60, "d": 24 * 60}


def _slurm_minutes(v: Any, field: str) -> int:
    """A Slurm time limit in whole minutes (rounded up): minutes as a number, a number with
    s, min, h or d, or H:MM:SS."""
    import re

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        minutes = float(v)
    elif isinstance(v, str) and (m := re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|min|h|d)\s*", v)):
        minutes = float(m.group(1)) * _SLURM_TIME_UNITS[m.group(2)]
    elif isinstance(v, str) and (m := re.fullmatch(r"\s*(\d+):(\d{2}):(\d{2})\s*", v)):
        minutes = int(m.group(1)) * 60 + int(m.group(2)) + int(m.group(3)) / 60
    else:
        raise ConfigError(field, v, "expected a time limit such as 90min, 2h, 1d or 1:30:00 (or minutes)")
    if not minutes >= 1 / 60 or not math.isfinite(minutes):
        raise ConfigError(field, v, "must be positive")
    return max(1, math.ceil(minutes - 1e-9))


def slurm_params(opts: dict[str, Any] | None, field: str = "slurm") -> dict[str, Any]:
    """Check a sweep's Slurm resources (``time`` as 90min, 2h, 1d or 1:30:00, or minutes; ``mem`` as a size such as 8GB; ``cpus`` an integer >= 1; ``partition`` and
    ``account`` names) and turn them into submitit's parameters; ConfigError names the
    field (``slurm.<key>``) and its value."""
    from ..units import parse_size

    out: dict[str, Any] = {}
    for k, v in (opts or {}).items():
        if v is None:
            continue
        if k not in SLURM_KEYS:
            raise ConfigError(f"{field}.{k}", v, "unknown; expected " + ", ".join(SLURM_KEYS))
        name = SLURM_KEYS[k][0]
        if k == "time":
            out[name] = _slurm_minutes(v, f"{field}.time")
        elif k == "mem":
            b = parse_size(v, f"{field}.mem")
            if b < 10**8:
                raise ConfigError(f"{field}.mem", v, "must be at least 100MB")
            out[name] = max(1, math.ceil(b / 10**9))
        elif k == "cpus":
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{field}.cpus", v, "must be an integer >= 1")
            out[name] = v
        else:
            if not isinstance(v, str) or not v.strip() or any(c.isspace() for c in v):
                raise ConfigError(f"{field}.{k}", v, "expected a name without spaces")
            out[name] = v
    return out


_DIGESTS: dict[tuple[str, int, int], str] = {}


def _file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (cached by path, size and modification time)."""
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


@dataclass(frozen=True)
class Point:
    """One run of a sweep: the architecture, its options, the run options, duration and seed."""

    arch: str
    options: dict[str, Any]
    run: dict[str, Any]
    duration: str
    seed: int
    #: the names of the varied parameters (they name the point's folder, in this order)
    varied: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        # the packet engine is the default: its points keep the hash they had before
        # the engine could be chosen
        run = {k: v for k, v in sorted(self.run.items()) if not (k in _LATER_DEFAULTS and v == _LATER_DEFAULTS[k])}
        return {"arch": self.arch, "options": dict(sorted(self.options.items())),
                "run": run, "duration": self.duration, "seed": self.seed}

    @property
    def spec_hash(self) -> str:
        """SHA-256 of the point's canonical JSON and the opendcn version (16 hex digits)."""
        from .. import __version__

        d = self.as_dict()
        ff = d["run"].get("flows_file")
        if ff is not None and Path(ff).is_file():
            # a flow file is the point by its content, not by where it lies (a study's
            # points keep their hash across checkouts, machines and output folders)
            d["run"] = {**d["run"], "flows_file": "sha256:" + _file_digest(str(Path(ff).resolve()))}
        text = json.dumps({**d, "opendcn": __version__}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def value(self, name: str) -> Any:
        if name == "arch":
            return self.arch
        if name == "seed":
            return self.seed
        if name == "duration":
            return self.duration
        if name in self.run:
            return self.run[name]
        return self.options[name]

    def relpath(self) -> Path:
        """``arch=A/<varied>=V/.../seed=S`` (values URL-quoted where a path needs it); a
        point that varies nothing of a scalar kind (a study's single points) is
        ``arch=A/point=<spec hash>/seed=S``."""
        names = ["arch", *[n for n in self.varied if n not in ("arch", "seed", "flows", "mix")], "seed"]
        if len(names) == 2:
            return Path(f"arch={quote(self.arch, safe='.:+-@')}", f"point={self.spec_hash}", f"seed={self.seed}")
        return Path(*[f"{n}={quote(str(self.value(n)), safe='.:+-@')}" for n in names])

    def params(self) -> dict[str, Any]:
        """The point's parameters as flat columns (arch, seed, duration, every option;
        explicit flows and mixes as their description)."""
        out: dict[str, Any] = {"arch": self.arch, "seed": self.seed, "duration": self.duration}
        out.update({k: v for k, v in self.run.items() if v is not None and k not in ("flows", "mix")})
        if self.run.get("flows") is not None:
            out["flows"] = f"{len(self.run['flows'])} explicit flows"
            for k in ("workload", "load", "pattern"):
                out.pop(k, None)
        if self.run.get("mix") is not None:
            out["mix"] = json.dumps(self.run["mix"], sort_keys=True)
        out.update(self.options)
        return out


@dataclass
class Sweep:
    """A parsed sweep: its points (each checked against its architecture's options)."""

    points: list[Point]
    varied: tuple[str, ...]
    source: str = "<dict>"
    fixed: dict[str, Any] = field(default_factory=dict)
    #: the ``[slurm]`` table of the sweep file (checked, as submitit parameters)
    slurm: dict[str, Any] = field(default_factory=dict)


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def load_sweep(spec: str | os.PathLike[str] | dict[str, Any]) -> Sweep:
    """Parse a sweep file (TOML) or dict into its points; ConfigError names what is wrong
    (``sweep.<key>``) — an unknown architecture or option, an empty grid, zip lists of
    different lengths — before anything runs."""
    from .. import arch as archmod

    source = "<dict>"
    if not isinstance(spec, dict):
        source = str(spec)
        try:
            text = Path(spec).read_text()
        except OSError as e:
            raise ConfigError("sweep", source, f"cannot read: {e.strerror or e}") from None
        try:
            spec = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError("sweep", source, f"not valid TOML: {e}") from None
    unknown = set(spec) - _TOP
    if unknown:
        raise ConfigError("sweep." + sorted(unknown)[0], spec[sorted(unknown)[0]],
                          "unknown key; expected " + ", ".join(sorted(_TOP)))
    fixed = dict(spec.get("options", {}) or {})
    vary = dict(spec.get("vary", {}) or {})
    if not isinstance(fixed, dict) or not isinstance(vary, dict):
        raise ConfigError("sweep.options", fixed, "expected tables [options] and [vary]")
    mode = spec.get("mode", "grid")
    if mode not in ("grid", "zip"):
        raise ConfigError("sweep.mode", mode, "expected grid or zip")
    if "arch" not in spec and "arch" not in vary:
        raise ConfigError("sweep.arch", None, "name the architecture (arch = \"...\") or vary it")
    if "arch" in spec:
        if "arch" in vary:
            raise ConfigError("sweep.arch", spec["arch"], "given both fixed and in [vary]")
        archs = _as_list(spec["arch"])
        if len(archs) > 1:
            vary["arch"] = archs
        else:
            fixed["arch"] = archs[0]
    for k in ("seed", "duration"):
        if k in spec:
            if k in vary:
                raise ConfigError(f"sweep.{k}", spec[k], "given both fixed and in [vary]")
            fixed[k] = spec[k]
    both = set(fixed) & set(vary)
    if both:
        k = sorted(both)[0]
        raise ConfigError(f"sweep.vary.{k}", vary[k], "also fixed in [options]")
    for k, v in vary.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"sweep.vary.{k}", v, "expected a non-empty list of values")
    # the load's bound of `opendcn run` (its help: (0, 1]); an overload study is Python's
    for where, loads in (("sweep.options.load", [fixed["load"]] if "load" in fixed else []),
                         ("sweep.vary.load", vary.get("load", []))):
        for x in loads:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x <= 1:
                raise ConfigError(where, x, "a load is a number in (0, 1], as `opendcn run --load` (an overload "
                                            "study takes opendcn.workload.poisson, up to 10, from Python)")
    names = list(vary)
    if mode == "zip":
        lengths = {len(vary[k]) for k in names}
        if len(lengths) > 1:
            raise ConfigError("sweep.vary", {k: len(vary[k]) for k in names}, "zip needs lists of one length")
        combos = list(zip(*[vary[k] for k in names])) if names else [()]
    else:
        combos = list(itertools.product(*[vary[k] for k in names]))
    if not combos:
        raise ConfigError("sweep.vary", vary, "the grid is empty")
    points = []
    for combo in combos:
        values = {**fixed, **dict(zip(names, combo))}
        name = values.pop("arch")
        a = archmod.get(name)
        seed = values.pop("seed", 1)
        duration = str(values.pop("duration", "1ms"))
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError("sweep.seed", seed, "expected a non-negative integer")
        run = {k: values.pop(k, d) for k, d in RUN_OPTIONS.items()}
        # an input file named relative to where the sweep is submitted: made absolute here,
        # so a worker in another working directory reads the same file (the spec hash keeps
        # the file's digest, not its path)
        for k in ("flows_file", "workload"):
            v = run.get(k)
            if isinstance(v, str) and v and not os.path.isabs(v) and Path(v).is_file():
                run[k] = str(Path(v).resolve())
        if run["mode"] not in ("packet", "flow"):
            where = "sweep.vary.mode" if "mode" in vary else "sweep.options.mode"
            raise ConfigError(where, run["mode"], "expected packet or flow (the flow-level mode)")
        for k in values:
            if k not in a.model.model_fields:
                where = "sweep.vary." if k in vary else "sweep.options."
                raise ConfigError(where + k, values[k], f"not an option of {name} nor a run option; {name} takes "
                                  + ", ".join(sorted(a.model.model_fields)) + "; runs take "
                                  + ", ".join(sorted(RUN_OPTIONS)))
        points.append(Point(name, dict(values), run, duration, int(seed), tuple(names)))
    slurm = spec.get("slurm") or {}
    if not isinstance(slurm, dict):
        raise ConfigError("sweep.slurm", slurm, "expected a table [slurm] of time, partition, mem, cpus, account")
    return Sweep(points, tuple(names), source, fixed, slurm_params(slurm, "sweep.slurm"))


# ------------------------------------------------------------------------------ one point
def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts to one level (``fct_us.mice.p99`` -> ``fct_us_mice_p99``); lists are
    kept as JSON text."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}".replace(".", "_").replace("-", "_").replace(" ", "_")
        if isinstance(v, dict):
            out.update(flatten(v, key + "_"))
        elif isinstance(v, (list, tuple)):
            out[key] = json.dumps(v)
        else:
            out[key] = v
    return out


def summary_row(point: Point, summary: dict[str, Any], wall: float) -> dict[str, Any]:
    """One row of the results database: the point's parameters, its hash, the headline
    metrics under short names, and every summary field flattened."""
    fct = summary.get("fct_us", {})
    params = point.params()
    row: dict[str, Any] = {k: (v if isinstance(v, (int, float, str, bool)) else str(v)) for k, v in params.items()}
    row.update({
        "param_names": list(params),
        "spec_hash": point.spec_hash,
        "point_wall_s": wall,
        "goodput": summary.get("goodput_normalized"),
        "p99_mice_us": fct.get("mice", {}).get("p99"),
        "mean_mice_us": fct.get("mice", {}).get("mean"),
        "p99_all_us": fct.get("all", {}).get("p99"),
        "mean_all_us": fct.get("all", {}).get("mean"),
    })
    for k, v in flatten(summary).items():
        row.setdefault(k, v)
    return row


def point_workload(r: dict[str, Any]) -> Any:
    """The workload of a point's run options: explicit ``flows`` ([start, src, dst,
    bytes] rows), a ``mix`` of Poisson workloads (dicts of :data:`MIX_KEYS`), or one
    workload as ``opendcn run`` builds it."""
    from .. import workload as wlmod
    from ..workload.run_options import make_workload

    if r.get("flows") is not None:
        wl = wlmod.flows(r["flows"])
        wl.description = f"{len(r['flows'])} explicit flows"
        return wl
    if r.get("mix") is not None:
        parts = []
        for i, m in enumerate(r["mix"]):
            bad = set(m) - set(MIX_KEYS)
            if bad:
                raise ConfigError(f"mix[{i}].{sorted(bad)[0]}", m[sorted(bad)[0]],
                                  "expected keys " + ", ".join(MIX_KEYS))
            d = {**{k: RUN_OPTIONS[k] for k in MIX_KEYS}, **m}
            w, _ = make_workload(str(d["workload"]), float(d["load"]), str(d["pattern"]), None,
                                 int(d["incast_degree"]), str(d["incast_size"]),
                                 None if d["flow_size"] is None else str(d["flow_size"]), float(d["active"]))
            parts.append(w)
        wl = wlmod.mix(*parts)
        wl.description = "mix of " + "; ".join(json.dumps(m, sort_keys=True) for m in r["mix"])
        return wl
    wl, desc = make_workload(str(r["workload"]), float(r["load"]), str(r["pattern"]),
                             None if r["flows_file"] is None else Path(r["flows_file"]),
                             int(r["incast_degree"]), str(r["incast_size"]),
                             None if r["flow_size"] is None else str(r["flow_size"]), float(r["active"]),
                             bool(r.get("fold_ranks", False)),
                             None if r.get("coflow_interval") is None else str(r["coflow_interval"]))
    wl.description = desc
    return wl


def run_point(point: Point, root: str) -> dict[str, Any]:
    """Run one point and write its folder under ``root`` (atomically); returns its record
    (``status`` ok or failed, with the error). Runs in a worker process."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .. import arch as archmod
    from ..errors import InvariantError

    t0 = time.perf_counter()
    rec: dict[str, Any] = {"hash": point.spec_hash, "path": str(point.relpath()), "point": point.as_dict(),
                           "build": build_id()}
    dest = Path(root) / point.relpath()
    try:
        net = archmod.get(point.arch).make(**point.options)
        r = point.run
        wl = point_workload(r)
        if r.get("mode", "packet") == "flow":
            from ..network import flowsim

            result = flowsim.run(net, wl, duration=point.duration, seed=point.seed, mice_threshold=r["mice_threshold"])
        else:
            result = net.run(wl, duration=point.duration, seed=point.seed, mice_threshold=r["mice_threshold"])
    except (ConfigError, InvariantError) as e:
        return {**rec, "status": "failed", "error": f"{type(e).__name__}: {e}",
                "wall_s": time.perf_counter() - t0}
    except Exception as e:  # noqa: BLE001 - a sweep records any failure of a point and goes on
        return {**rec, "status": "failed", "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc(), "wall_s": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.tmp-"))
    try:
        result.write(tmp / "r")
        for f in (tmp / "r").iterdir():
            os.replace(f, tmp / f.name)
        (tmp / "r").rmdir()
        row = summary_row(point, result.summary, wall)
        pq.write_table(pa.Table.from_pylist([row]), tmp / "summary.parquet")
        (tmp / "point.json").write_text(json.dumps({**rec, "status": "ok", "wall_s": wall}, indent=2,
                                                   sort_keys=True, default=str))
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {**rec, "status": "ok", "wall_s": wall, "goodput": result.summary["goodput_normalized"]}


@functools.cache
def build_id() -> str:
    """This installation's build: the opendcn version and 12 hex digits of a SHA-256 over
    the package's files (its Python modules, the compiled engine and the shipped data),
    e.g. ``0.1.0+3f2a9c01b7de``. Two processes with the same id run the same code on the
    same data, so their points may share a table; each stored point records the build
    that computed it, and a study's report says which builds its points come from."""
    from .. import __version__

    pkg = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*")):
        rel = f.relative_to(pkg).as_posix()
        if not f.is_file() or "__pycache__" in rel or rel.endswith((".pyc", ".pyo")):
            continue
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return f"{__version__}+{h.hexdigest()[:12]}"


def stored_build(root: Path, point: Point) -> str | None:
    """The build that computed a stored point (``None``: not stored, or stored before
    points recorded their build)."""
    try:
        rec = json.loads((root / point.relpath() / "point.json").read_text())
    except (OSError, ValueError):
        return None
    return rec.get("build") if rec.get("hash") == point.spec_hash else None


def done_points(root: Path, points: Sequence[Point]) -> set[str]:
    """Hashes of the points whose complete results are already under ``root``."""
    done = set()
    for p in points:
        f = root / p.relpath() / "point.json"
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if rec.get("hash") == p.spec_hash and rec.get("status") == "ok" and (f.parent / "summary.parquet").exists():
            done.add(p.spec_hash)
    return done


# ------------------------------------------------------------------------------ executors
class _Futures:
    """Executors whose results arrive as ``concurrent.futures`` futures."""

    def as_completed(self, futures: Iterable[Any]) -> Iterable[Any]:
        return cf.as_completed(list(futures))

    @staticmethod
    def result(f: Any) -> Any:
        return f.result()

    def cancel(self, futures: Iterable[Any]) -> None:
        for f in futures:
            f.cancel()


def process_pool(workers: int) -> cf.ProcessPoolExecutor:
    """A pool of ``workers`` processes started from a fork server: a worker forked from a
    process that already runs threads (a test runner, the engine's, a BLAS's) can inherit
    native state in a broken form and crash when the collector frees it."""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["opendcn"])
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx)


class _Local(_Futures):
    """A pool of worker processes on this machine (default: one per core)."""

    def __init__(self, workers: int | None):
        self.pool = process_pool(workers or os.cpu_count() or 1)
        self.stopped = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.pool.submit(fn, *args)

    def cancel(self, futures: Iterable[Any]) -> None:
        """Ctrl-C: cancel what has not started and stop the workers now (a point under way
        is abandoned, its folder left without a summary, and runs again next time)."""
        for f in futures:
            f.cancel()
        self.stopped = True
        for proc in list(getattr(self.pool, "_processes", {}).values()):
            proc.terminate()

    def close(self) -> None:
        self.pool.shutdown(wait=not self.stopped, cancel_futures=True)


class _Dask:
    """A Dask distributed scheduler at ``address``, or a LocalCluster of worker processes."""

    def __init__(self, address: str | None, workers: int | None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - a dependency of opendcn
            raise ConfigError("--executor", "dask", "needs the 'distributed' package") from None
        self.cluster = None
        if address:
            try:
                self.client = Client(address, timeout="10s")
            except (OSError, TimeoutError) as e:
                raise ConfigError("--scheduler", address, f"no Dask scheduler answers there ({e})") from None
        else:
            try:
                self.cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                            processes=True, dashboard_address=None)
            except Exception as e:  # noqa: BLE001 - e.g. a __main__ that worker processes cannot import
                raise ConfigError("--executor", "dask", f"could not start a local Dask cluster ({e}); run from "
                                  "a script file or the CLI, or give --scheduler") from None
            self.client = Client(self.cluster)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.client.submit(fn, *args, pure=False)

    def as_completed(self, futures: Iterable[Any]) -> Iterable[Any]:
        from distributed import as_completed

        return as_completed(list(futures))

    @staticmethod
    def result(f: Any) -> Any:
        return f.result()

    def cancel(self, futures: Iterable[Any]) -> None:
        self.client.cancel(list(futures))

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _quiet_submitit() -> None:
    """submitit's logger writes its warnings to stdout as well as stderr, and warns at every
    status poll when Slurm has no accounting (``sacct`` needs slurmdbd), a case this
    executor handles itself (see ``_Submitit._wait``): stderr only, without that one."""
    import logging

    log = logging.getLogger("submitit")
    for h in list(log.handlers):
        if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is not sys.stderr \
                and getattr(h, "stream", None) is not None and h.level < logging.WARNING:
            h.setLevel(logging.CRITICAL + 1)          # its stdout handler: nothing
    if not any(getattr(f, "name", "") == "opendcn.sacct" for f in log.filters):
        f = logging.Filter()
        f.name = "opendcn.sacct"
        f.filter = lambda rec: "Bypassing sacct error" not in rec.getMessage()  # type: ignore[method-assign,assignment]
        log.addFilter(f)


class _Submitit(_Futures):
    """Slurm through submitit (``slurm``: the points go as one job array), or submitit's
    local executor (``submitit-local``)."""

    def __init__(self, folder: Path, kind: str, workers: int | None, slurm: dict[str, Any] | None):
        import submitit

        folder.mkdir(parents=True, exist_ok=True)
        self.kind = kind
        _quiet_submitit()
        if kind == "slurm":
            self.ex: Any = submitit.AutoExecutor(folder=str(folder), cluster="slurm")
            params = {"timeout_min": SLURM_DEFAULT_MINUTES, **(slurm or {})}
            # submitit warns a job (USR2) 90 s before its limit; a short limit gets a quarter
            # of it instead, so the warning does not come at once
            params.setdefault("slurm_signal_delay_s", signal_delay_s(params["timeout_min"]))
            self.ex.update_parameters(**params)
            if workers:
                self.ex.update_parameters(slurm_array_parallelism=workers)
        else:
            self.ex = submitit.LocalExecutor(folder=str(folder))
            self.ex.update_parameters(timeout_min=24 * 60)
        self.pool = cf.ThreadPoolExecutor(max_workers=64)
        self.jobs: dict[Any, Any] = {}
        self.stop = threading.Event()

    def _wait(self, job: Any) -> Any:
        """A job's result. Without Slurm accounting (no sacct) submitit learns a job's end
        only from its result file, so a job Slurm ended without one (cancelled, out of
        time, killed) is found here: gone from squeue for 30 s and still no result."""
        gone_since = unreachable_since = None
        while not self.stop.is_set():
            if job.done():
                return job.result()
            if self.kind == "slurm":
                try:
                    r = subprocess.run(["squeue", "-h", "-j", str(job.job_id)], capture_output=True, text=True,
                                       timeout=30)
                    ok = r.returncode == 0
                except (OSError, subprocess.TimeoutExpired):
                    ok, r = False, None
                now = time.monotonic()
                if not ok:
                    unreachable_since = unreachable_since or now
                    if now - unreachable_since > 120:
                        raise RuntimeError(f"Slurm has not answered squeue for 2 min while job {job.job_id} had no "
                                           f"result; its log: {job.paths.stderr}")
                elif r is not None and not r.stdout.strip():
                    unreachable_since = None
                    gone_since = gone_since or now
                    if now - gone_since > 30:
                        raise RuntimeError(f"Slurm job {job.job_id} ended without a result (cancelled, out of "
                                           f"time or killed); its log: {job.paths.stderr}")
                else:
                    unreachable_since = gone_since = None
            self.stop.wait(1.0)
        raise cf.CancelledError(f"job {job.job_id} cancelled")

    def _track(self, job: Any) -> Any:
        fut = self.pool.submit(self._wait, job)
        self.jobs[fut] = job
        return fut

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._track(self.ex.submit(fn, *args))

    def submit_many(self, fn: Callable[..., Any], argss: list[tuple[Any, ...]]) -> list[Any]:
        """Every call as one job array (Slurm) / one batch (local)."""
        with self.ex.batch():
            jobs = [self.ex.submit(fn, *a) for a in argss]
        return [self._track(job) for job in jobs]

    def cancel(self, futures: Iterable[Any]) -> None:
        """Cancel what was submitted (scancel for Slurm) and stop waiting for it."""
        pending = [f for f in futures if not f.done()]
        for f in pending:
            job = self.jobs.get(f)
            if job is not None:
                try:
                    job.cancel(check=False)
                except Exception:  # noqa: BLE001 - a job that ended meanwhile
                    pass
        self.stop.set()
        for f in pending:
            f.cancel()

    def close(self) -> None:
        self.stop.set()
        self.pool.shutdown(wait=False, cancel_futures=True)


def slurm_dry_run(sw: Sweep, out: Path, slurm: dict[str, Any], workers: int | None) -> str:
    """What ``--executor slurm`` would submit for the points of ``sw`` not yet done under
    ``out``: the job array's sbatch options and its tasks, one per point. Nothing is
    written."""
    root = Path(out).resolve()
    done = done_points(root, sw.points) if root.is_dir() else set()
    todo = [p for p in sw.points if p.spec_hash not in done]
    params = {"timeout_min": SLURM_DEFAULT_MINUTES, **sw.slurm, **slurm}
    opts = []
    for key, (name, flag) in SLURM_KEYS.items():
        if name not in params:
            continue
        v = params[name]
        # spelled as submitit writes them into the job script
        if key == "mem":
            opts.append(f"#SBATCH {flag}={v}GB")
        else:
            opts.append(f"#SBATCH {flag}={v}")
        if key == "time":
            opts.append(f"#SBATCH --signal=USR2@{signal_delay_s(v)}")
    if todo:
        opts.append(f"#SBATCH --array=0-{len(todo) - 1}" + (f"%{workers}" if workers else ""))
    lines = [f"dry run: {len(todo)} of {len(sw.points)} points would be submitted to Slurm as one job array "
             f"(results under {root}; {len(sw.points) - len(todo)} already done), and first one probe job that "
             "checks the workers see that folder", *opts]
    lines += [f"  task {i}: {p.relpath()}" for i, p in enumerate(todo)]
    return "\n".join(lines)


def _executor(kind: str, out: Path, workers: int | None, scheduler: str | None,
              slurm: dict[str, Any] | None) -> Any:
    if kind == "local":
        return _Local(workers)
    if kind == "dask":
        return _Dask(scheduler, workers)
    if kind in ("slurm", "submitit-local"):
        return _Submitit(out / "submitit", kind, workers, slurm)
    raise ConfigError("--executor", kind, "expected one of " + ", ".join(EXECUTORS))


# ------------------------------------------------------------------------------ the sweep
def sweep(spec: str | os.PathLike[str] | dict[str, Any] | Sweep, out: str | os.PathLike[str], *,
          executor: str = "local", workers: int | None = None, scheduler: str | None = None,
          slurm: dict[str, Any] | None = None, progress: bool | str = False,
          on_done: Callable[[Point, dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run every point of ``spec`` not already done under ``out``; returns one record per
    point (``status``: ok, skipped or failed, with ``error``). ``progress``: a bar (True),
    one line per point on stderr (``"lines"``) or nothing. Failed points are also
    written to ``out/failed/<hash>.json``; ``out/sweep.json`` lists every point.
    ``on_done(point, record)`` is called in this process as each point that runs ends
    (a study keeping what it ran before the others finish)."""
    sw = spec if isinstance(spec, Sweep) else load_sweep(spec)
    # absolute: a worker of a Dask or Slurm executor runs in its own working directory,
    # and a relative folder would put its results there
    root = Path(out).resolve()
    if root.exists() and not root.is_dir():
        raise ConfigError("--out", str(root), "exists and is not a directory")
    if executor not in EXECUTORS:
        raise ConfigError("--executor", executor, "expected one of " + ", ".join(EXECUTORS))
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ConfigError("--workers", workers, "must be >= 1")
    hashes = [p.spec_hash for p in sw.points]
    if len(set(hashes)) != len(hashes):
        raise ConfigError("sweep.vary", sw.source, "two points of the sweep are the same run")
    slurm = {**sw.slurm, **slurm_params(slurm, "--slurm")}
    if executor == "slurm" and shutil.which("sbatch") is None:
        # before anything is created: no results folder, no lock, no submitit folder
        raise ConfigError("--executor", "slurm", "sbatch is not on PATH (no Slurm client here): run where "
                          "Slurm's commands are, or use --executor local or dask; --dry-run shows what would "
                          "be submitted")
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive(root):
        return _sweep_locked(sw, root, executor, workers, scheduler, slurm, progress, on_done)


@contextlib.contextmanager
def _exclusive(root: Path) -> Iterator[None]:
    """Hold ``root/.lock`` while a sweep writes into ``root``: a second process that starts
    a sweep or study into the same tree gets a ConfigError, instead of running the same
    points at the same time. (A file system without locks, as some NFS mounts, gives no
    such protection; the sweep runs anyway.)"""
    try:
        import fcntl
    except ImportError:                  # not POSIX
        yield
        return
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError("--out", str(root), "another sweep or study is writing into it now "
                              "(it holds the directory's .lock)") from None
        except OSError:
            pass
        yield
    finally:
        os.close(fd)


def _sweep_locked(sw: Sweep, root: Path, executor: str, workers: int | None, scheduler: str | None,
                  slurm: dict[str, Any] | None, progress: bool | str,
                  on_done: Callable[[Point, dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    done = done_points(root, sw.points)
    records: dict[str, dict[str, Any]] = {p.spec_hash: {"hash": p.spec_hash, "path": str(p.relpath()),
                                                        "status": "skipped"} for p in sw.points
                                          if p.spec_hash in done}
    todo = [p for p in sw.points if p.spec_hash not in done]
    failed_dir = root / "failed"
    bar = _bar(progress, len(sw.points), len(done))
    if todo:
        ex = _executor(executor, root, workers, scheduler, slurm)
        futures = {}
        try:
            if executor != "local":
                _probe(ex, root)
            if hasattr(ex, "submit_many"):
                futures = dict(zip(ex.submit_many(run_point, [(p, str(root)) for p in todo]), todo))
            else:
                for p in todo:
                    futures[ex.submit(run_point, p, str(root))] = p
            for f in ex.as_completed(futures):
                p = futures[f]
                try:
                    rec = ex.result(f)
                except Exception as e:  # noqa: BLE001 - a killed worker fails its point only
                    rec = {"hash": p.spec_hash, "path": str(p.relpath()), "point": p.as_dict(),
                           "status": "failed", "error": f"{type(e).__name__}: {e}"}
                if rec["status"] == "ok" and not (root / p.relpath() / "summary.json").exists():
                    # the worker says it wrote the point, but not where this sweep reads it
                    rec = {**rec, "status": "failed",
                           "error": f"ResultsMissing: the worker reported the point done but {root / p.relpath()} "
                                    "has no summary.json (a worker on another machine or file system writes its "
                                    "own copy of this folder: give --out on storage every worker shares)"}
                records[p.spec_hash] = rec
                if rec["status"] == "failed":
                    failed_dir.mkdir(exist_ok=True)
                    (failed_dir / f"{p.spec_hash}.json").write_text(json.dumps(rec, indent=2, default=str))
                else:
                    (failed_dir / f"{p.spec_hash}.json").unlink(missing_ok=True)
                bar.advance(rec)
                if on_done is not None:
                    on_done(p, rec)
        except KeyboardInterrupt:
            ex.cancel(futures)
            raise
        finally:
            bar.close()
            ex.close()
            _write_index(root, sw, records)
    else:
        bar.close()
        _write_index(root, sw, records)
    return [records[p.spec_hash] for p in sw.points]


def _write_probe(path: str) -> str:
    """Run on a worker: write ``path`` and say where the worker runs."""
    import socket

    Path(path).write_text(f"{socket.gethostname()} {os.getcwd()}\n")
    return f"{socket.gethostname()}:{os.getcwd()}"


def _probe(ex: Any, root: Path) -> None:
    """Before any point runs: a worker writes a file under ``root`` and the client reads
    it, or the sweep stops with a named error (its workers would write their results into
    a tree this client does not see)."""
    import uuid

    f = root / f".probe-{uuid.uuid4().hex}"
    try:
        fut = ex.submit(_write_probe, str(f))
        try:
            where = ex.result(fut)
        except KeyboardInterrupt:
            ex.cancel([fut])            # Ctrl-C while the probe waits (e.g. a queued Slurm job): scancel it
            raise
        seen = f.exists()
    except Exception as e:  # noqa: BLE001 - any failure of the probe is the named error below
        raise ConfigError("--out", str(root), f"the executor's workers could not write into it "
                                              f"({type(e).__name__}: {e})") from None
    finally:
        f.unlink(missing_ok=True)
    if not seen:
        raise ConfigError("--out", str(root), f"a worker ({where}) wrote a probe into it that this client cannot "
                                              "read: the workers do not share this folder; give --out on storage "
                                              "every worker and this client see")


def _write_index(root: Path, sw: Sweep, records: dict[str, dict[str, Any]]) -> None:
    index = {"source": sw.source, "varied": list(sw.varied), "fixed": sw.fixed,
             "points": [{"hash": p.spec_hash, "path": str(p.relpath()), **p.as_dict(),
                         "status": records.get(p.spec_hash, {}).get("status", "not run"),
                         "build": records.get(p.spec_hash, {}).get("build") or stored_build(root, p),
                         **({"error": records[p.spec_hash]["error"]} if "error" in records.get(p.spec_hash, {})
                            else {})}
                        for p in sw.points]}
    from ..network.network import _atomic_write

    _atomic_write(root / "sweep.json", json.dumps(index, indent=2, default=str))


class _bar:
    """A whole-sweep progress bar with an ETA (rich; ``on`` True), one line per finished
    point on stderr with an ETA (``on == "lines"``: output that is not a terminal), or
    nothing."""

    def __init__(self, on: bool | str, total: int, done: int):
        self.progress: Any = None
        self.lines = on == "lines"
        self.total, self.count, self.t0, self.ran = total, done, time.perf_counter(), 0
        if not on or self.lines:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(TextColumn("[bold]sweep[/bold]"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[failed]} failed"), TimeRemainingColumn())
        self.progress.start()
        self.task = self.progress.add_task("sweep", total=total, completed=done, failed=0)
        self.failed = 0

    def advance(self, rec: dict[str, Any]) -> None:
        if self.lines:
            import sys

            self.count += 1
            self.ran += 1
            left = self.total - self.count
            eta = (time.perf_counter() - self.t0) / self.ran * left
            err = f": {rec.get('error', '')[:200]}" if rec["status"] == "failed" else ""
            print(f"[{self.count}/{self.total}] {rec.get('path', '')} {rec['status']}{err}"
                  + (f" (eta {eta:.0f} s)" if left else ""), file=sys.stderr, flush=True)
            return
        if self.progress is None:
            return
        self.failed += rec["status"] == "failed"
        self.progress.update(self.task, advance=1, failed=self.failed)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
