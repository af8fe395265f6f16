"""``opendcn report DIR``: a self-contained HTML report of a sweep (or of any results tree).

For every varied parameter (arch first, seeds averaged) the report plots, against that
parameter, one line per combination of the other varied parameters:

- goodput (normalised to the offered capacity N R);
- p99 FCT of mice and of all flows (us);
- p99 slowdown (FCT / ideal FCT);
- mean bytes queued in the network (KB, from the time series, where runs sampled it);

with the aggregated table below the plots (scrolling sideways inside its box when it is
wider than the page); then the FCT CDF of every group and the p99 FCT per flow-size
bucket. The plots are embedded in ``report.html`` (the page loads nothing) and also
written as PNG files beside it. Files are written to scratch names and moved into place,
the page last.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..errors import ConfigError
from ..network.network import _atomic_write
from .db import _param_columns, _q, connect
from .plots import from_zero

__all__ = ["write_sweep_report"]

_METRICS = [  # (column expression over runs, label with unit, log scale)
    ("goodput", "goodput (normalised to N x R)", False),
    ("p99_mice_us", "p99 FCT of mice (us)", True),
    ("p99_all_us", "p99 FCT of all flows (us)", True),
    ("p99_slowdown", "p99 slowdown (FCT / ideal)", True),
    ("mean_queued_kb", "mean bytes queued in the network (KB)", False),
]

_CSS = """body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}
figure{margin:0 0 1em 0}figure img{max-width:100%;height:auto}
.scroll{overflow-x:auto;max-width:100%;margin-bottom:2em}"""


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf)
    return buf.getvalue()


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v))


def _table(cols: list[str], rows: list[tuple[Any, ...]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _label(keys: list[str], values: tuple[Any, ...]) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(keys, values)) or "all runs"


def _img(name: str, png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f"<figure><img src='data:image/png;base64,{data}' data-file='{html.escape(name)}' "
            f"alt='{html.escape(alt)}'></figure>")


def write_sweep_report(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """Write ``report.html`` and its plots for the results tree ``path`` (into ``out``,
    default the tree itself); returns the page's path."""
    figures, page = sweep_report(path)
    dest = Path(out) if out is not None else Path(path)
    dest.mkdir(parents=True, exist_ok=True)
    for name, fig in figures.items():
        _atomic_write(dest / name, _png(fig))
    _atomic_write(dest / "report.html", page.encode())
    return dest / "report.html"


def sweep_report(path: str | os.PathLike[str]) -> tuple[dict[str, Figure], str]:
    """The report's figures (by file name) and its HTML page, in memory."""
    con = connect(path)
    n = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    if n == 0:
        raise ConfigError("DIR", str(path), "holds no sweep runs (no summary.parquet files)")
    params = [p for p in _param_columns(con) if p != "seed"]
    cols = {r[0] for r in con.execute("DESCRIBE runs").fetchall()}
    # per-run extras: p99 slowdown (flows) and mean queued bytes (network-wide samples)
    con.execute("""CREATE TEMP TABLE extra AS SELECT r.path,
        (SELECT quantile_cont(slowdown, 0.99) FROM flows f WHERE f.path = r.path AND f.completed) AS p99_slowdown,
        (SELECT avg(q) / 1e3 FROM (SELECT time_ps, sum(queued_bytes) AS q FROM timeseries t
            WHERE t.path = r.path AND t.port >= 0 GROUP BY time_ps)) AS mean_queued_kb
        FROM runs r""")
    files: dict[str, Figure] = {}
    sections = []
    distinct = {p: con.execute(f"SELECT count(DISTINCT {_q(p)}) FROM runs").fetchone()[0] for p in params}
    for x in [p for p in params if distinct[p] > 1]:
        others = [p for p in params if p != x]
        keys = ", ".join(_q(c) for c in [*others, x])
        agg = ", ".join(f"avg({m}) AS {m}" for m, _, _ in _METRICS)
        sql = (f"SELECT {keys}, count(*) AS runs, {agg} FROM runs JOIN extra USING (path) "
               f"GROUP BY {keys} ORDER BY {keys}")
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
        ncols = 3
        nrows = math.ceil(len(_METRICS) / ncols)
        fig = Figure(figsize=(13, 3.8 * nrows))
        grid = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for extra_ax in grid[len(_METRICS):]:
            extra_ax.set_visible(False)
        axes = grid[:len(_METRICS)]
        groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for r in rows:
            groups.setdefault(tuple(r[:len(others)]), []).append(r)
        numeric = all(isinstance(r[len(others)], (int, float)) for r in rows)
        for ax, (m, label, log) in zip(axes, _METRICS):
            k = names.index(m)
            for g, rs in groups.items():
                xs = [r[len(others)] for r in rs]
                ys = [np.nan if r[k] is None else r[k] for r in rs]
                if numeric:
                    ax.plot(xs, ys, marker="o", label=_label(others, g))
                else:
                    ax.plot([str(v) for v in xs], ys, marker="o", label=_label(others, g))
            ax.set_xlabel(x if x not in ("load",) else "offered load (fraction of N x R)")
            ax.set_ylabel(label)
            if log and any(r[k] and r[k] > 0 for r in rows):
                ax.set_yscale("log")
            ax.grid(True, alpha=0.3)
        if len(groups) > 1:
            # the free cell of the grid holds the legend, clear of every line
            handles, labs = axes[0].get_legend_handles_labels()
            holder = grid[len(_METRICS)] if len(grid) > len(_METRICS) else axes[0]
            holder.set_visible(True)
            if holder is not axes[0]:
                holder.axis("off")
            holder.legend(handles, labs, fontsize=8, loc="upper left", title=", ".join(others))
        for ax in axes:
            from_zero(ax)
        fig.suptitle(f"metrics against {x} (means over seeds)", fontsize=11)
        fig.tight_layout()
        name = f"by_{x}.png"
        files[name] = fig
        sections.append(f"<h2>Against {html.escape(x)}</h2>{_img(name, _png(fig), f'metrics against {x}')}"
                        f"<div class='scroll'>{_table(names, rows)}</div>")
    # FCT CDF and p99 by size bucket, one group per combination of the varied parameters
    gkeys: list[str] = params or ["arch"]
    gsel = ", ".join(f"r.{_q(c)}" for c in gkeys)
    fl = con.execute(f"SELECT {gsel}, f.fct_ps / 1e6 FROM flows f JOIN runs r USING (path) "
                     f"WHERE f.completed ORDER BY {gsel}").fetchall()
    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    per: dict[tuple[Any, ...], list[float]] = {}
    for r in fl:
        per.setdefault(tuple(r[:-1]), []).append(r[-1])
    for g, v in per.items():
        fct = np.sort(np.asarray(v))
        ax.plot(fct, np.arange(1, len(fct) + 1) / len(fct), label=_label(gkeys, g))
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of completed flows")
    ax.grid(True, alpha=0.3)
    if len(per) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    files["fct_cdf.png"] = fig
    cur = con.execute(f"SELECT {gsel}, b.bucket, sum(b.flows) AS flows, avg(b.p99_fct_us) AS p99_fct_us "
                      f"FROM fct_by_size b JOIN runs r USING (path) GROUP BY {gsel}, b.bucket "
                      f"ORDER BY {gsel}, min(b.bucket)")
    bnames = [d[0] for d in cur.description]
    order = ["<10KB", "10KB-100KB", "100KB-1MB", "1MB-10MB", ">=10MB"]
    # the table's rows by group, then by size (SQL orders the bucket names as text)
    got = cur.fetchall()
    first = {g: i for i, g in reversed(list(enumerate(tuple(r[:len(gkeys)]) for r in got)))}
    brows = sorted(got, key=lambda r: (first[tuple(r[:len(gkeys)])],
                                       order.index(r[len(gkeys)]) if r[len(gkeys)] in order else len(order)))
    buckets = [b for b in order if any(r[len(gkeys)] == b for r in brows)]
    fig = Figure(figsize=(8, 4.5))
    ax = fig.subplots()
    gl = sorted({tuple(r[:len(gkeys)]) for r in brows}, key=str)
    width = 0.8 / max(1, len(gl))
    for i, g in enumerate(gl):
        found = [next((r[-1] for r in brows if tuple(r[:len(gkeys)]) == g and r[len(gkeys)] == b), None)
                 for b in buckets]
        ys = [np.nan if v is None else v for v in found]
        ax.bar(np.arange(len(buckets)) + i * width, ys, width, label=_label(gkeys, g))
    ax.set_xticks(np.arange(len(buckets)) + 0.4 - width / 2, buckets)
    ax.set_xlabel("flow size (bytes, KB = 1000 B)")
    ax.set_ylabel("p99 FCT (us, mean over seeds)")
    ax.set_yscale("log")
    if len(gl) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    files["fct_p99_by_size.png"] = fig
    failed = sorted(p.name for p in (Path(path) / "failed").glob("*.json")) if (Path(path) / "failed").is_dir() else []
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>opendcn sweep report</title>"
            f"<style>{_CSS}</style></head><body><h1>Sweep report: {html.escape(str(path))}</h1>"
            f"<p>{n} runs; varied: {html.escape(', '.join(_param_columns(con)) or 'nothing')}; "
            f"{len(failed)} failed points{' (' + html.escape(', '.join(failed)) + ')' if failed else ''}. "
            "Values are means over seeds.</p>" + "".join(sections)
            + "<h2>FCT distribution</h2>" + _img("fct_cdf.png", _png(files["fct_cdf.png"]), "FCT CDF")
            + "<h2>p99 FCT by flow size</h2>"
            + _img("fct_p99_by_size.png", _png(files["fct_p99_by_size.png"]), "p99 FCT by size")
            + f"<div class='scroll'>{_table(bnames, brows)}</div></body></html>")
    if "goodput" not in cols:  # pragma: no cover - every sweep row has it
        raise ConfigError("DIR", str(path), "runs have no goodput column")
    return files, page
