"""The ``opendcn`` command line: run, archs, workloads, bench, demo, reproduce, models.

Bad input of any kind exits with code 2 and a message naming the option and value;
an engine invariant violation exits with code 3.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from .errors import MISSING, ConfigError, InvariantError
from .workload.run_options import make_workload

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="opendcn: packet-level simulation of optical and reconfigurable datacenter networks.")
err = Console(stderr=True)
out = Console()


_RUN_FIELDS = {"duration", "seed", "load", "pattern", "mice_threshold", "workload", "incast_degree", "active",
               "incast_size", "flow_size", "interval", "coflow_interval", "fold_ranks"}


def _fail(e: Exception, code: int) -> None:
    if isinstance(e, ConfigError) and e.field in _RUN_FIELDS:
        e = ConfigError("--" + e.field.replace("_", "-"), e.value, e.reason)
    err.print(f"[bold red]error:[/bold red] {e}", highlight=False)
    raise typer.Exit(code)


def _check_out(out_dir: Optional[Path], summary_json: Optional[str], force: bool = False) -> None:
    """Refuse output paths that cannot be written before spending time on a run, and a
    folder that holds an earlier run's results unless ``force``."""
    def blocked(p: Path) -> Optional[Path]:
        for q in [p, *p.parents]:
            if q.exists():
                return None if q.is_dir() else q
        return None

    if out_dir is not None:
        if out_dir.exists() and not out_dir.is_dir():
            raise ConfigError("--out", str(out_dir), "exists and is not a directory")
        earlier = [n for n in ("summary.json", "spec.json", "flows.parquet") if (out_dir / n).exists()]
        if earlier and not force:
            raise ConfigError("--out", str(out_dir), f"holds an earlier run's results ({', '.join(earlier)}): give "
                                                     "--force to replace them, or another folder")
        b = blocked(out_dir.parent)
        if b is not None:
            raise ConfigError("--out", str(out_dir), f"{b} is a file")
    if summary_json and summary_json != "-":
        p = Path(summary_json)
        if p.is_dir():
            raise ConfigError("--summary-json", summary_json, "is a directory")
        b = blocked(p.parent)
        if b is not None:
            raise ConfigError("--summary-json", summary_json, f"{b} is a file")


# ------------------------------------------------------------------------------- run
def _param(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _number(kind: type, what: str) -> Any:
    """A typer parser for a number option whose error names the value given."""
    def parse(value: Any) -> Any:
        if isinstance(value, kind):
            return value
        try:
            return kind(value)
        except (TypeError, ValueError):
            raise typer.BadParameter(f"expected {what} (got {value!r})") from None
    return parse


def _run_params() -> list[inspect.Parameter]:
    """The options of ``opendcn run ARCH`` that every architecture shares (workload, output)."""
    return [
        _param("duration", str, typer.Option("1ms", metavar="TIME", help="simulated time")),
        _param("seed", int, typer.Option(1, parser=_number(int, "a whole number"), metavar="INT",
                                         help="master seed (>= 0)")),
        _param("out_dir", Optional[Path], typer.Option(None, "--out", metavar="DIR",
                                                       help="write summary, spec and Parquet tables here")),
        _param("force", bool, typer.Option(False, "--force", help="replace the results an earlier run left in --out")),
        _param("summary_json", Optional[str], typer.Option(None, metavar="PATH",
                                                           help="write the summary JSON to this path (- = stdout)")),
        _param("progress", Optional[bool], typer.Option(None, "--progress/--no-progress", help="show a progress bar")),
        _param("mice_threshold", str, typer.Option("10KB", metavar="SIZE", help="flows smaller than this are mice")),
        _param("workload", str, typer.Option("hadoop", help="shipped CDF name or path to a CDF file")),
        _param("load", float, typer.Option(0.3, parser=_number(float, "a number"), metavar="FLOAT",
                                           help="offered load L = F / (R N tau), in (0, 1]")),
        _param("pattern", str, typer.Option("uniform", help="uniform, permutation, incast, all-to-all, skewed, "
                                                           "an HPC pattern (stencil-3d, ...), or trace:NAME "
                                                           "(an HPC rank-pair trace: amg, amr, minidft, "
                                                           "fb_hadoop, or a file)")),
        _param("fold_ranks", bool, typer.Option(False, "--fold-ranks", help="trace: rank r on endpoint r mod "
                                                                            "endpoints")),
        _param("coflow_interval", Optional[str], typer.Option(
            None, metavar="TIME", help="trace: align arrivals into co-flows every TIME (auto: one flow per "
                                       "endpoint per co-flow), each behind a barrier (the one before has finished)")),
        _param("flows_file", Optional[Path], typer.Option(None, metavar="PATH",
                                                          help="explicit flows (CSV start,src,dst,bytes or htsim)")),
        _param("incast_degree", int, typer.Option(20, parser=_number(int, "a whole number"), metavar="INT",
                                                  help="senders per incast")),
        _param("incast_size", str, typer.Option("1KB", metavar="SIZE", help="bytes per incast sender")),
        _param("flow_size", Optional[str], typer.Option(None, metavar="SIZE",
                                                        help="fixed flow size (all-to-all, or instead of a CDF)")),
        _param("active", float, typer.Option(0.5, parser=_number(float, "a number"), metavar="FLOAT",
                                             help="skewed pattern: fraction of the nodes that are active")),
        _param("mode", str, typer.Option("packet", metavar="[packet|flow]",
                                         help="packet: the packet engine; flow: flow-level max-min fair rates "
                                              "(opendcn.network.flowsim, static or controller-driven circuits)")),
    ]


RUN_KEYS = frozenset(p.name for p in _run_params())


def _arch_params(arch: Any) -> list[inspect.Parameter]:
    """The CLI options of an architecture, generated from its options model. Values are
    passed on as typed and checked by the model (one place for every check)."""
    params = []
    panel = f"Options of {arch.name}"
    for o in arch.options:
        default = "" if o.default is None else (str(o.default).lower() if isinstance(o.default, bool)
                                                 else str(o.default))
        extra = []
        if o.choices:
            extra.append("one of " + ", ".join(o.choices))
        if o.units:
            extra.append(o.units)
        if o.bounds:
            extra.append(o.bounds)
        text = o.help + (f" ({'; '.join(extra)})" if extra else "")
        if o.kind == "bool":
            params.append(_param(o.name, Optional[bool], typer.Option(
                None, f"{o.flag}/--no-{o.flag[2:]}", help=text, show_default=default, rich_help_panel=panel)))
        else:
            metavar = "[" + "|".join(o.choices) + "]" if o.choices else o.kind.split(" ")[0].upper()
            params.append(_param(o.name, Optional[str], typer.Option(
                None, o.flag, metavar=metavar, help=text, show_default=default or False, rich_help_panel=panel)))
    return params


def _unknown(arch: Any, args: list[str]) -> ConfigError:
    """The error for the first argument that no option of ``arch`` took."""
    a = args[0]
    if not a.startswith("--"):
        return ConfigError("argument", a, f"unexpected argument for {arch.name}")
    name, eq, val = a.partition("=")
    shown: object = val if eq else (args[1] if len(args) > 1 and not args[1].startswith("--") else MISSING)
    return ConfigError(name, shown, f"unknown option of {arch.name}; known: "
                       + ", ".join(sorted(o.flag for o in arch.options)))


def _run_arch(arch: Any, ctx: typer.Context, kw: dict[str, Any]) -> None:
    run_kw = {k: kw.pop(k) for k in list(kw) if k in RUN_KEYS}
    opts = {k: v for k, v in kw.items() if v is not None}
    summary_json = run_kw["summary_json"]
    out_dir = run_kw["out_dir"]
    try:
        for k, v in {**run_kw, **opts}.items():
            if isinstance(v, str) and v.startswith("--") and k != "summary_json":
                raise ConfigError("--" + k.replace("_", "-"), None, f"missing value (next came {v})")
        if ctx.args:
            raise _unknown(arch, list(ctx.args))
        if run_kw["mode"] not in ("packet", "flow"):
            raise ConfigError("--mode", run_kw["mode"], "expected packet or flow")
        if not 0 < run_kw["load"] <= 1:
            raise ConfigError("--load", run_kw["load"], "must be in (0, 1] (an overload study takes "
                                                        "opendcn.workload.poisson, up to 10, from Python)")
        _check_out(out_dir, summary_json, run_kw["force"])
        net = _made_with_warnings(arch, opts)
        wl, desc = make_workload(run_kw["workload"], run_kw["load"], run_kw["pattern"], run_kw["flows_file"],
                                 run_kw["incast_degree"], run_kw["incast_size"], run_kw["flow_size"],
                                 run_kw["active"], run_kw["fold_ranks"], run_kw["coflow_interval"])
        wl.description = desc
        progress = run_kw["progress"]
        show = progress if progress is not None else (sys.stderr.isatty() and summary_json != "-")
        with _route_warnings_printed():
            if run_kw["mode"] == "flow":
                from .network import flowsim

                result = flowsim.run(net, wl, duration=run_kw["duration"], seed=run_kw["seed"], out=out_dir,
                                     mice_threshold=run_kw["mice_threshold"], progress=show)
            else:
                result = net.run(wl, duration=run_kw["duration"], seed=run_kw["seed"], progress=show, out=out_dir,
                                 mice_threshold=run_kw["mice_threshold"])
    except KeyboardInterrupt:
        live = getattr(locals().get("net"), "_live", None)
        now = getattr(getattr(live, "sim", None), "now", None)
        at = f" at {now / 1e6:,.1f} us of {run_kw['duration']} simulated" if isinstance(now, int) else ""
        where = (f"; nothing was written to {out_dir} (results are written when a run ends)" if out_dir
                 else "; nothing was written")
        err.print(f"interrupted{at}{where}")
        raise typer.Exit(130) from None
    except ConfigError as e:
        _fail(e, 2)
    except InvariantError as e:
        _fail(e, 3)
    s = result.summary
    if summary_json == "-":
        sys.stdout.write(json.dumps(s, indent=2, sort_keys=True) + "\n")
        return
    if summary_json:
        from .network.network import _atomic_write
        try:
            _atomic_write(Path(summary_json), json.dumps(s, indent=2, sort_keys=True))
        except OSError as e:
            _fail(ConfigError("--summary-json", summary_json, f"cannot write: {e.strerror}"), 2)
    _print_summary(s)


class _route_warnings_printed:
    """During a run: a RouteWarning (traffic without a route, found when the run starts)
    is printed on standard error as ``warning: ...`` at once, before the packets move."""

    def __enter__(self) -> None:
        import warnings

        from .errors import RouteWarning

        self._old = warnings.showwarning
        old = self._old

        def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            if isinstance(category, type) and issubclass(category, RouteWarning):
                sys.stderr.write(f"warning: {message}\n")
            else:
                old(message, category, filename, lineno, file, line)

        warnings.showwarning = show

    def __exit__(self, *exc: Any) -> None:
        import warnings

        warnings.showwarning = self._old


def _made_with_warnings(arch: Any, opts: dict[str, Any]) -> Any:
    """``arch.make(**opts)``, printing the configuration warnings it raises (a buffer that
    cannot hold one slice) on standard error, once each, before the run."""
    import warnings

    from .errors import BufferWarning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", BufferWarning)
        net = arch.make(**opts)
    shown: set[str] = set()
    for w in seen:
        text = str(w.message)
        if issubclass(w.category, BufferWarning) and text not in shown:
            shown.add(text)
            sys.stderr.write(f"warning: {text}\n")
        elif not issubclass(w.category, BufferWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return net


def arch_command(arch: Any) -> Any:
    """The function behind ``opendcn run ARCH``: its signature (the shared run options and
    the architecture's own, from its options model) is what the command line parses."""
    def command(ctx: typer.Context, **kw: Any) -> None:
        _run_arch(arch, ctx, kw)

    command.__name__ = arch.name
    command.__doc__ = f"{arch.description}."
    ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    command.__signature__ = inspect.Signature([ctx_param, *_run_params(), *_arch_params(arch)])  # type: ignore[attr-defined]
    return command


run_app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                      help="Run one architecture on one workload (opendcn run ARCH --help lists its options).")


def _register_run_commands() -> None:
    from . import arch as archmod

    for name in sorted(archmod.REGISTRY):
        run_app.command(name, context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
                        short_help=archmod.REGISTRY[name].description)(arch_command(archmod.REGISTRY[name]))


_register_run_commands()
app.add_typer(run_app, name="run")


def _print_summary(s: dict[str, Any]) -> None:
    t = Table(title=f"{s['arch']} — {s.get('workload', '')}", show_header=False)
    t.add_row("mode", s.get("mode", "packet"))
    t.add_row("simulated / wall", f"{s['sim_time_s'] * 1e3:g} ms / {s['wall_s']:.2f} s")
    t.add_row("events / packet-hops", f"{s['events']:,} / {s['packet_hops']:,}")
    t.add_row("flows completed / started", f"{s['flows']['completed']:,} / {s['flows']['started']:,}")
    t.add_row("goodput (normalized)", f"{s['goodput_normalized']:.4f}")
    if "flow_throughput_gbps" in s:
        ft = s["flow_throughput_gbps"]
        t.add_row("flow throughput mean / p50 (Gb/s)", f"{ft['mean']:.2f} / {ft['p50']:.2f}  (n={ft['count']})")
    for k in ("mice", "all"):
        f = s["fct_us"][k]
        t.add_row(f"FCT {k} mean / p99 (us)", f"{f['mean']:.2f} / {f['p99']:.2f}  (n={f['count']})")
    b = s["bytes"]
    t.add_row("bytes offered = delivered + dropped + in flight",
              f"{b['offered']:,} = {b['delivered']:,} + {b['dropped']:,} + {b['in_flight']:,}")
    t.add_row("collisions / guardband violations",
              f"{s['fabric']['collisions']} / {s['fabric']['guardband_violations']}")
    drops = {k: v for k, v in s["drops"].items() if v}
    t.add_row("drops (bytes)", ", ".join(f"{k}={v:,}" for k, v in drops.items()) or "none")
    st = s.get("arch_metrics", {}).get("steady")
    if st:
        t.add_row(f"after the warm-up ({st['from_ps'] / 1e6:g} us): wall per timeslot / per cell-hop",
                  f"{st['wall_us_per_timeslot']:.2f} us / {st['wall_ns_per_hop']:.0f} ns "
                  f"({st['mean_cells_in_flight']:,.0f} cells in flight)")
    out.print(t)


@app.command()
def archs() -> None:
    """List architectures and their options."""
    from . import arch as archmod

    for name in sorted(archmod.REGISTRY):
        a = archmod.REGISTRY[name]
        typer.echo(f"{name} — {a.description}")
        for o in a.options:
            extra = [("|".join(o.choices)) if o.choices else o.kind]
            if o.units:
                extra.append(o.units)
            if o.bounds:
                extra.append(o.bounds)
            typer.echo(f"    {o.flag:<22} {o.help} ({'; '.join(extra)}) [default: {o.default}]")


@app.command()
def workloads() -> None:
    """List the shipped flow-size distributions and traffic patterns."""
    from . import workload as wl

    t = Table(title="flow-size distributions (KB = 1000 B)")
    for c in ("name", "mean", "max", "reading", "description"):
        t.add_column(c)
    for w in wl.list_workloads():
        t.add_row(w["name"], f"{w['mean_bytes'] / 1e3:,.2f} KB", f"{w['max_bytes'] / 1e6:,.3f} MB",
                  w["reading"], w["description"])
    out.print(t)
    out.print("[bold]patterns[/bold]")
    for k, v in wl.PATTERNS.items():
        out.print(f"    {k:<14} {v}", highlight=False)
    out.print("    trace:NAME     Poisson arrivals placed on an HPC rank-pair trace's pairs by their byte "
              f"probabilities ({', '.join(wl.RANK_TRACES)}, or a file); --fold-ranks places rank r on endpoint "
              "r mod endpoints; --coflow-interval TIME|auto aligns the arrivals into co-flows behind barriers",
              highlight=False)


@app.command()
def bench(quick: bool = typer.Option(False, "--quick", help="short scenarios"),
          as_json: bool = typer.Option(False, "--json", help="print a JSON list"),
          only: Optional[str] = typer.Option(None, help="run only scenarios whose name contains this"),
          repeat: int = typer.Option(1, help="rounds over the scenarios; each keeps its least wall time (after any warm-up)")) -> None:
    """Standard performance scenarios: packet-hops/s, events/s, wall time, peak memory."""
    from .bench import run_all

    try:
        rows = run_all(quick=quick, only=only, progress=not as_json, repeat=repeat)
    except ConfigError as e:
        _fail(e, 2)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    head = ("scenario", "sim", "wall s", "events", "packet-hops", "Mhops/s", "Mev/s", "peak MB")
    lines = [head] + [(r["scenario"], f"{r['sim_time_s'] * 1e3:g}ms", f"{r['wall_s']:.2f}", f"{r['events']:,}",
                       f"{r['packet_hops']:,}", f"{r['packet_hops_per_s'] / 1e6:.2f}",
                       f"{r['events_per_s'] / 1e6:.2f}", f"{r['peak_rss_mb']:.0f}") for r in rows]
    widths = [max(len(x[i]) for x in lines) for i in range(len(head))]
    for k, x in enumerate(lines):
        typer.echo("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(x, widths))))
        if k == 0:
            typer.echo("  ".join("-" * w for w in widths))
    from .bench import shale_scaling

    sc = shale_scaling(rows)
    if sc:
        typer.echo("")
        typer.echo("Shale scaling: growth from the smallest size of wall time per timeslot vs mean cells in flight")
        typer.echo("(and of the engine's work, cell-hops per timeslot: exact, untouched by the machine's load)")
        for x in sc:
            typer.echo(f"  h={x['h']} N={x['nodes']:>6}: {x['wall_us_per_timeslot']:9.1f} us/timeslot "
                       f"(x{x['wall_growth']:.2f}), {x['mean_cells_in_flight']:12,.0f} cells in flight "
                       f"(x{x['cells_growth']:.2f}) {'holds' if x['holds'] else 'grows faster'}; "
                       f"{x['wall_ns_per_hop']:.0f} ns per cell-hop; work x{x['hops_growth']:.2f} "
                       f"{'holds' if x['work_holds'] else 'grows faster'}")


@app.command()
def demo(out_dir: Path = typer.Option(Path("results"), "--out", help="where the report goes"),
         duration: str = typer.Option("2ms", help="simulated time per architecture"),
         nodes: int = typer.Option(32, help="nodes (ToRs)"),
         load: float = typer.Option(0.3, help="offered load"),
         seed: int = typer.Option(1, help="seed"),
         force: bool = typer.Option(False, "--force", help="write into a folder that holds a run's results")) -> None:
    """RotorNet (VLB), RotorNet (direct), Clos and Opera on one Hadoop workload: table + report
    (a demo's own earlier report in --out is replaced)."""
    from .demo import run_demo

    try:
        _check_out(out_dir, None, force)
        run_demo(out_dir, duration=duration, nodes=nodes, load=load, seed=seed, console=out)
    except ConfigError as e:
        _fail(e, 2)
    except InvariantError as e:
        _fail(e, 3)


#: the Slurm job options `sweep` and `reproduce` share (the time limit's help differs)
_SLURM_PARTITION = typer.Option(None, "--slurm-partition", help="Slurm: partition")
_SLURM_MEM = typer.Option(None, "--slurm-mem", help="Slurm: memory per point (e.g. 8GB)")
_SLURM_CPUS = typer.Option(None, "--slurm-cpus", help="Slurm: CPUs per point")
_SLURM_ACCOUNT = typer.Option(None, "--slurm-account", help="Slurm: account to charge")


@app.command()
def reproduce(name: str = typer.Argument(..., help="what to reproduce (negotiator, shale, opera, duo, openoptics, "
                                                   "hpc, or all)"),
              quick: bool = typer.Option(False, "--quick", help="small, fast version"),
              out_dir: Optional[Path] = typer.Option(None, "--out", help="results folder (default results/reproduce-NAME)"),
              tors: Optional[int] = typer.Option(None, help="override the size: ToRs (negotiator: a multiple of 8, >= 16; duo: a power "
                                                        "of two; openoptics: its §7 tests, a multiple of 4, >= 8; hpc: racks "
                                                        "of the packet part, 8..32, a multiple of 4) or nodes (shale: a "
                                                        "perfect fourth power)"),
              duration: Optional[str] = typer.Option(None, help="override the simulated time per point"),
              seed: int = typer.Option(1, help="master seed of the study's runs"),
              executor: str = typer.Option("local", help="where the runs go: local, dask, slurm, submitit-local"),
              workers: Optional[int] = typer.Option(None, help="worker processes (default one per core)"),
              scheduler: Optional[str] = typer.Option(None, help="Dask scheduler address"),
              reference: bool = typer.Option(False, "--reference", help="render the page and verdicts from the "
                                             "study's reference records (reproductions/NAME/: its full-scale points, "
                                             "kept in the source tree) without running anything"),
              record: bool = typer.Option(False, "--record", help="run the full study and write its reference records "
                                          "(reproductions/NAME/)"),
              only: Optional[list[str]] = typer.Option(None, "--only", help="with --record: run and record again only "
                                                       "the points whose label starts with this (repeatable); the "
                                                       "others are read from their records"),
              missing: bool = typer.Option(False, "--missing", help="with --record: run and record only the points "
                                           "without a record of their current spec (the others are read from "
                                           "theirs; with --only, of the points it names), each record written "
                                           "as its point finishes: a study recorded across sittings"),
              slurm_time: Optional[str] = typer.Option(None, "--slurm-time", help="with --executor slurm: time limit "
                                                       "per point (e.g. 90min, 2h; default 60min)"),
              slurm_partition: Optional[str] = _SLURM_PARTITION, slurm_mem: Optional[str] = _SLURM_MEM,
              slurm_cpus: Optional[int] = _SLURM_CPUS, slurm_account: Optional[str] = _SLURM_ACCOUNT,
              audit: Optional[float] = typer.Option(None, "--audit", metavar="SECONDS",
                                                    help="rerun, with this build, every reference record whose "
                                                         "recorded wall time is at most SECONDS and say which no "
                                                         "longer give their trace hash (exit 1 if any)")) -> None:
    """Re-run a seed paper's evaluation: table, plots, JSON and PASS/FAIL trend checks."""
    from . import studies as rep

    try:
        if audit is not None:
            if reference or record or quick:
                raise ConfigError("--audit", audit, "reruns the stored records: give it without --reference, --record "
                                                    "or --quick")
            from .studies.base import audit as run_audit

            from .studies.base import reference_root

            papers = ("openoptics", "opera", "duo", "hpc", "negotiator", "shale")
            if name != "all" and name not in papers:
                raise ConfigError("name", name, f"expected one of {', '.join(papers)} or all")
            names = [name] if name != "all" else [n for n in papers if (reference_root(n) / "points").is_dir()]
            code = max(run_audit(n, max_wall_s=audit, workers=workers) for n in names)
            raise typer.Exit(code)
        if reference and record:
            raise ConfigError("--record", True, "--reference reads the records, --record writes them: give one")
        # checked once here, not by every point of the study
        if seed < 0:
            raise ConfigError("--seed", seed, "seed must be a non-negative integer")
        if duration is not None:
            from .units import parse_time

            if parse_time(duration, "--duration") <= 0:
                raise ConfigError("--duration", duration, "must be a positive time")
        code = rep.run(name, quick=quick, out=out_dir if out_dir is not None else Path(f"results/reproduce-{name}"),
                       tors=tors, duration=duration, seed=seed, executor=executor, workers=workers, scheduler=scheduler,
                       progress=True if sys.stderr.isatty() else "lines",
                       reference="read" if reference else "record" if record else None, only=tuple(only or ()),
                       missing=missing, slurm={"time": slurm_time, "partition": slurm_partition, "mem": slurm_mem,
                                               "cpus": slurm_cpus, "account": slurm_account})
    except ConfigError as e:
        _fail(e, 2)
    except InvariantError as e:
        _fail(e, 3)
    except KeyboardInterrupt:
        where = out_dir if out_dir is not None else Path(f"results/reproduce-{name}")
        typer.echo(f"interrupted: the points that finished are kept under {where}"
                   f"{'/<study>' if name == 'all' else ''}/runs (records written so far stay in reproductions/ "
                   "with --record); run the same command again to resume", err=True)
        raise typer.Exit(130) from None
    if code:
        raise typer.Exit(code)


@app.command()
def sweep(file: Path = typer.Argument(..., help="sweep file (TOML: arch and duration, then the tables options and vary; examples/sweep_small.toml)"),
          out_dir: Path = typer.Option(Path("results/sweep"), "--out", help="results tree (resumable)"),
          executor: str = typer.Option("local", help="local (process pool), dask, slurm or submitit-local"),
          workers: Optional[int] = typer.Option(None, help="worker processes (local / Dask LocalCluster); "
                                                           "default one per core"),
          scheduler: Optional[str] = typer.Option(None, help="Dask scheduler address (default: a LocalCluster)"),
          progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="show a progress bar"),
          slurm_time: Optional[str] = typer.Option(None, "--slurm-time", help="Slurm: time limit per point (e.g. "
                                                   "90min, 2h; default 60min or the sweep file's \\[slurm] time)"),
          slurm_partition: Optional[str] = _SLURM_PARTITION, slurm_mem: Optional[str] = _SLURM_MEM,
          slurm_cpus: Optional[int] = _SLURM_CPUS, slurm_account: Optional[str] = _SLURM_ACCOUNT,
          dry_run: bool = typer.Option(False, "--dry-run", help="with --executor slurm: print the job array that "
                                       "would be submitted (its sbatch options and one task per point not yet "
                                       "done) and submit nothing")) -> None:
    """Run a grid of runs (architectures x options x loads x seeds); skips points already done.
    With --executor slurm the points go as one job array (--workers: at most that many at
    once); Ctrl-C cancels what was submitted."""
    from .experiments.sweeps import load_sweep, slurm_dry_run, slurm_params
    from .experiments.sweeps import sweep as run_sweep

    try:
        show: bool | str = progress if progress is not None else (True if sys.stderr.isatty() else "lines")
        slurm = {"time": slurm_time, "partition": slurm_partition, "mem": slurm_mem, "cpus": slurm_cpus,
                 "account": slurm_account}
        if dry_run:
            if executor != "slurm":
                raise ConfigError("--dry-run", True, "shows what --executor slurm would submit; give --executor slurm")
            typer.echo(slurm_dry_run(load_sweep(file), out_dir, slurm_params(slurm, "--slurm"), workers))
            return
        if executor != "slurm" and any(v is not None for v in slurm.values()):
            name = next(k for k, v in slurm.items() if v is not None)
            raise ConfigError(f"--slurm-{name}", slurm[name], "applies to --executor slurm only")
        recs = run_sweep(file, out_dir, executor=executor, workers=workers, scheduler=scheduler, progress=show,
                         slurm=slurm)
    except ConfigError as e:
        _fail(e, 2)
    except KeyboardInterrupt:
        typer.echo("interrupted: the points not yet finished were cancelled (Slurm: scancel); the finished ones "
                   f"are under {out_dir}; run the same command again to resume", err=True)
        raise typer.Exit(130) from None
    counts = {k: sum(r["status"] == k for r in recs) for k in ("ok", "skipped", "failed")}
    typer.echo(f"{len(recs)} points: {counts['ok']} run, {counts['skipped']} already done, "
               f"{counts['failed']} failed -> {out_dir}")
    for r in recs:
        if r["status"] == "failed":
            typer.echo(f"  failed {r['path']}: {r['error']}")
    if counts["failed"]:
        raise typer.Exit(1)


@app.command()
def query(results_dir: Path = typer.Argument(..., metavar="DIR", help="results tree"),
          sql: str = typer.Argument(..., help="SQL over the views runs, flows, timeseries, fct_by_size, "
                                              "goodput_vs_load"),
          fmt: str = typer.Option("table", "--format", help="table, csv or json")) -> None:
    """Answer a question about a results tree with SQL (DuckDB reads it in place)."""
    from .experiments import db as results

    try:
        if fmt not in ("table", "csv", "json"):
            raise ConfigError("--format", fmt, "expected table, csv or json")
        cols, rows = results.query(results_dir, sql)
    except ConfigError as e:
        _fail(e, 2)
    if fmt == "json":
        sys.stdout.write(json.dumps([dict(zip(cols, r)) for r in rows], default=str, indent=1) + "\n")
    elif fmt == "csv":
        import csv

        w = csv.writer(sys.stdout)
        w.writerow(cols)
        w.writerows(rows)
    else:
        t = Table()
        for c in cols:
            t.add_column(c)
        for r in rows:
            t.add_row(*[f"{v:.6g}" if isinstance(v, float) else str(v) for v in r])
        out.print(t)


@app.command()
def report(results_dir: Path = typer.Argument(..., metavar="DIR", help="results tree (a sweep's --out)"),
           out_dir: Optional[Path] = typer.Option(None, "--out", help="where report.html goes (default DIR)")) -> None:
    """Write a self-contained HTML report of a sweep: metrics against every varied parameter."""
    from .experiments.sweep_report import write_sweep_report

    try:
        page = write_sweep_report(results_dir, out_dir)
    except ConfigError as e:
        _fail(e, 2)
    typer.echo(f"wrote {page}")


@app.command()
def dashboard(run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="a run's folder (opendcn run --out, a "
                                                                           "sweep point)"),
              port: int = typer.Option(8001, help="serve it on http://127.0.0.1:PORT (0: a free port)"),
              serve: bool = typer.Option(True, "--serve/--no-serve", help="serve the page until Ctrl-C, or only "
                                                                          "write it"),
              out: Optional[Path] = typer.Option(None, "--out", help="the page (default RUN_DIR/dashboard.html)")) -> None:
    """A dashboard of one run: circuits per slice, the time-flow table, queues and throughput over time, the FCT
    distribution (Plotly, one self-contained page)."""
    from .network import dashboard as dash

    try:
        if not 0 <= port <= 65_535:
            raise ConfigError("--port", port, "expected 0..65535")
        page = dash.write_dashboard(run_dir, out)
        typer.echo(f"wrote {page}")
        if not serve:
            return
        server = dash.serve(page, port)
    except ConfigError as e:
        _fail(e, 2)
    url = f"http://127.0.0.1:{server.server_address[1]}/{page.name}"
    typer.echo(f"serving {url} (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        typer.echo("stopped")
    finally:
        server.server_close()


models_app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                         help="Analytic models of the seed papers: tables of scale, power, cost and compute time.")
app.add_typer(models_app, name="models")


@models_app.command("hpc")
def models_hpc(radix: int = typer.Option(32, help="packet switch radix k of the scale, power and cost tables"),
               bench: bool = typer.Option(True, "--bench/--no-bench", help="time the controllers (Fig. 7)"),
               repeats: int = typer.Option(3, help="runs per controller benchmark point"),
               pods: str = typer.Option("4,8,16", help="pod counts of the LP benchmark"),
               tors: str = typer.Option("64,128,256,512", help="ToR counts of the matching benchmarks"),
               as_json: bool = typer.Option(False, "--json", help="print one JSON object")) -> None:
    """TRN vs PRN for HPC (Teh et al., JOCN 2022): Moore bound, Tables 1 and 2, power and cost, controller time."""
    from .models import hpc as m

    try:
        def ints(text: str, flag: str) -> list[int]:
            try:
                return [int(x) for x in text.split(",") if x.strip()]
            except ValueError:
                raise ConfigError(flag, text, "expected comma-separated integers") from None

        t1 = {k: m.table1(k) for k in sorted({32, 64, radix})}
        t2 = m.table2(radix)
        sc = m.scales_table(radix)
        bn = m.controller_benchmark(ints(tors, "--tors"), ints(pods, "--pods"), repeats, radix) if bench else []
    except ConfigError as e:
        flags = {"k": "--radix", "repeats": "--repeats", "pod_counts": "--pods"}
        _fail(ConfigError(flags.get(e.field, e.field), e.value, e.reason), 2)
    if as_json:
        doc = {"moore_bound": {f"k={k},d={d}": m.moore_bound(k, d) for k in (16, 32) for d in (1, 2, 3)},
               "table1": {str(k): {a: {f: str(getattr(r, f)) for f in ("ocs_radix", "switches", "endpoints", "diameter")}
                                   for a, r in rows.items()} for k, rows in t1.items()},
               "table2": {a: dict(zip(m.SCALES, v)) for a, v in t2.items()}, "scales": sc, "controllers": bn}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    t = Table(title="Moore bound M(k, d) = 1 + k((k-1)^d - 1)/(k-2)")
    for c in ("k", "d=1", "d=2", "d=3"):
        t.add_column(c)
    for k in (8, 16, 32):
        t.add_row(str(k), *(f"{m.moore_bound(k, d):,}" for d in (1, 2, 3)))
    out.print(t)
    for k, rows in t1.items():
        t = Table(title=f"Table 1 at k = {k} (fractions where the printed formula is not an integer)")
        for c in ("", "OCS radix", "switches", "endpoints", "diameter"):
            t.add_column(c)
        for a, r in rows.items():
            t.add_row(a, *(f"{float(v):,.6g}" if not isinstance(v, int) else f"{v:,}"
                           for v in (r.ocs_radix, r.switches, r.endpoints)), str(r.diameter))
        out.print(t)
    t = Table(title=f"Table 2: minimum OCS radix (k = {radix})")
    t.add_column("")
    for name, n in m.SCALES.items():
        t.add_column(f"{name} ({n:,} servers)")
    for a, v in t2.items():
        t.add_row(a, *(f"{x:,}" for x in v))
    out.print(t)
    t = Table(title="Power and cost (section 5): OCS port = delta x switch price / k")
    for c in ("scale", "design", "switches", "transceivers", "OCS ports", "power kW", "M$ d=0.5", "M$ d=1",
              "M$ d=1.5"):
        t.add_column(c)
    for x in sc:
        t.add_row(x["scale"], x["design"], f"{x['eps']:,}", f"{x['transceivers']:,}", f"{x['ocs_ports']:,}",
                  f"{x['power_kw']:,.1f}", f"{x['cost_musd_d0.5']:,.2f}", f"{x['cost_musd_d1']:,.2f}",
                  f"{x['cost_musd_d1.5']:,.2f}")
    out.print(t)
    if bn:
        t = Table(title=f"Controller compute time (mean of {repeats} random matrices)")
        for c in ("method", "units", "servers", "mean ms", "std ms"):
            t.add_column(c)
        for x in bn:
            t.add_row(x["method"], str(x["units"]), f"{x['servers']:,}", f"{x['mean_s'] * 1e3:,.2f}",
                      f"{x['std_s'] * 1e3:,.2f}")
        out.print(t)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except MemoryError:
        # (the sizes the engines and routers can estimate are refused before they are built)
        err.print("[bold red]error:[/bold red] out of memory: this run needs more memory than the machine has; "
                  "make it smaller (--nodes, --duration, --load)", highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
