"""Self-contained HTML comparison report of several runs on one workload.

:func:`write_report` writes, into one directory:

- ``fct_cdf.png`` -- empirical CDF of the flow completion time (FCT, microseconds,
  log x axis) of every run's completed flows, one line per run;
- ``fct_p99_by_size.png`` -- 99th-percentile FCT (microseconds, log y axis) per
  flow-size bucket (bytes, KB = 1000 B), grouped bars, one bar per run;
- ``goodput.png`` -- ``goodput_normalized`` per run as bars and, when any run has a
  time series, a second panel over time: the delivered payload (Gbit/s, each byte once
  at its receiver) when every run recorded network rows (``net.net_series``), else the
  throughput summed over all nodes and ports (a packet counts once per hop);
- ``report.html`` -- title, run metadata, the comparison table of
  :func:`opendcn.experiments.analysis.compare_table`, an invariant check per run, the three plots
  embedded as base64 PNG data URIs and a short guide to reading them. It uses inline
  CSS only and loads nothing from the network.

Everything is rendered in memory first and each file is written to a temporary name
in the same directory and moved into place with :func:`os.replace`, so an error never
leaves a half-written file; ``report.html`` is written last. Plots use matplotlib's
Agg canvas directly (no pyplot, no global backend switch).
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .analysis import (
    DEFAULT_EDGES,
    TABLE_COLUMNS,
    check_invariants,
    compare_table,
    delivered_series,
    fct_cdf,
    goodput_series,
    result_label,
    size_buckets,
)

__all__ = ["write_report", "PLOT_FILES"]

#: File names of the plots, in the order they appear in the report.
PLOT_FILES = ("fct_cdf.png", "fct_p99_by_size.png", "goodput.png")

_OK, _FAIL = "\u2713", "\u2717"  # ✓ ✗

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.ok { color: #137333; font-weight: bold; text-align: center; }
td.fail { color: #c5221f; font-weight: bold; text-align: center; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #555; }
.meta { color: #444; }
code { background: #f6f6f6; padding: 0 0.2em; }
"""


# ----------------------------------------------------------------------------- files

def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# ----------------------------------------------------------------------------- plots

def _new_figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list]:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _color(i: int) -> str:
    return f"C{i % 10}"


def _no_data(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666")


def _render_fct_cdf(results: Sequence[Any], labels: list[str]) -> bytes:
    fig, (ax,) = _new_figure(8, 4.8)
    plotted = False
    for i, (r, label) in enumerate(zip(results, labels)):
        flows = getattr(r, "flows", None)
        if flows is None:
            continue
        x, y = fct_cdf(flows)
        pos = x > 0
        x, y = x[pos], y[pos]
        if x.size == 0:
            continue
        ax.plot(np.concatenate([[x[0]], x]), np.concatenate([[0.0], y]),
                drawstyle="steps-post", color=_color(i), label=label)
        plotted = True
    if plotted:
        ax.set_xscale("log")
        ax.legend(loc="lower right")
    else:
        _no_data(ax, "no completed flows")
    ax.set_xlabel("flow completion time (\u00b5s, log scale)")
    ax.set_ylabel("fraction of completed flows")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("FCT CDF (completed flows)")
    return _png(fig)


def _render_p99_by_size(results: Sequence[Any], labels: list[str],
                        edges: Sequence[float]) -> bytes:
    tables = [size_buckets(r.flows, edges) if getattr(r, "flows", None) is not None else None
              for r in results]
    bucket_names = bucket_count = None
    for t in tables:
        if t is not None:
            bucket_names = t.column("bucket").to_pylist()
            counts = np.asarray(t.column("count").to_numpy())
            bucket_count = counts if bucket_count is None else bucket_count + counts
    fig, (ax,) = _new_figure(9, 4.8)
    if bucket_names is None or bucket_count is None or not bucket_count.any():
        _no_data(ax, "no flows")
        keep = []
    else:
        keep = [j for j, c in enumerate(bucket_count) if c > 0]
    n = max(1, len(results))
    width = 0.8 / n
    plotted = False
    for i, (t, label) in enumerate(zip(tables, labels)):
        if t is None or not keep:
            continue
        p99 = t.column("p99_fct_us").to_pylist()
        xs = [k + (i - (n - 1) / 2) * width for k in range(len(keep))]
        hs = [p99[j] if p99[j] is not None and p99[j] > 0 else math.nan for j in keep]
        if all(math.isnan(h) for h in hs):
            continue
        ax.bar(xs, hs, width=width, color=_color(i), label=label)
        plotted = True
    if keep:
        assert bucket_names is not None  # keep is empty without buckets
        ax.set_xticks(range(len(keep)))
        ax.set_xticklabels([bucket_names[j] for j in keep])
    if plotted:
        ax.set_yscale("log")
        # beside the bars, never over them
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0.0)
    elif keep:
        _no_data(ax, "no completed flows")
    ax.set_xlabel("flow size bucket (KB = 1000 B)")
    ax.set_ylabel("99th-percentile FCT (\u00b5s, log scale)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.set_title("p99 FCT per flow-size bucket")
    return _png(fig)


def _render_goodput(results: Sequence[Any], labels: list[str]) -> bytes:
    # delivered payload over time when every run recorded it (each byte once, at its
    # receiver); otherwise the bytes sent on all ports (a packet counts once per hop)
    delivered = [delivered_series(getattr(r, "timeseries", None)) for r in results]
    by_receiver = all(t.size for t, _ in delivered)
    series = delivered if by_receiver else [goodput_series(getattr(r, "timeseries", None)) for r in results]
    has_series = any(t.size for t, _ in series)
    fig, axes = _new_figure(12 if has_series else 7, 4.5, ncols=2 if has_series else 1)
    ax = axes[0]
    values = [float(r.summary.get("goodput_normalized", 0.0)) for r in results]
    bars = ax.bar(range(len(values)), values, color=[_color(i) for i in range(len(values))])
    ax.bar_label(bars, labels=[f"{v:.3f}" for v in values], padding=2, fontsize=8)
    ax.set_xticks(range(len(values)))
    # long labels side by side run into each other: slant them
    slant = len(labels) > 4 or sum(len(x) for x in labels) > 48
    ax.set_xticklabels(labels, rotation=20 if slant else 0, ha="right" if slant else "center")
    ax.set_ylabel("goodput (fraction of N \u00d7 R)")
    ax.set_ylim(0, max([1.0] + values) * 1.1)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("normalized goodput")
    if has_series:
        ax2 = axes[1]
        for i, ((t, gbps), label) in enumerate(zip(series, labels)):
            if t.size:
                ax2.plot(t, gbps, color=_color(i), label=label, drawstyle="steps-pre")
        ax2.set_xlabel("simulated time (\u00b5s)")
        ax2.set_ylabel("delivered payload (Gbit/s)" if by_receiver else "throughput (Gbit/s, all ports)")
        ax2.set_ylim(bottom=0)
        ax2.grid(True, alpha=0.3)
        ax2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0.0)
        ax2.set_title("goodput over time" if by_receiver else "throughput over time")
    return _png(fig)


# ----------------------------------------------------------------------------- HTML

def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt_seconds(s: Any) -> str:
    if not isinstance(s, (int, float)) or isinstance(s, bool):
        return "\u2013"
    if s == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("\u00b5s", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale:
            return f"{s / scale:.6g} {unit}"
    return f"{s / 1e-12:.6g} ps"


def _mark(ok: bool) -> str:
    return f'<td class="{"ok" if ok else "fail"}">{_OK if ok else _FAIL}</td>'


def _metadata_html(results: Sequence[Any], labels: list[str], workload_desc: str) -> str:
    seeds = {r.summary.get("seed") for r in results}
    sims = {r.summary.get("sim_time_s") for r in results}
    lines = []
    if workload_desc:
        lines.append(f"<p class=\"meta\"><b>Workload:</b> {_e(workload_desc)}</p>")
    if len(seeds) == 1:
        lines.append(f"<p class=\"meta\"><b>Seed:</b> {_e(next(iter(seeds)))}</p>")
    if len(sims) == 1:
        lines.append(f"<p class=\"meta\"><b>Simulated time:</b> {_e(_fmt_seconds(next(iter(sims))))}</p>")
    rows = []
    for r, label in zip(results, labels):
        s = r.summary
        rows.append(
            "<tr>"
            f"<td>{_e(label)}</td><td>{_e(s.get('arch', ''))}</td>"
            f"<td class=\"num\">{_e(s.get('seed', ''))}</td>"
            f"<td class=\"num\">{_e(s.get('nodes', ''))}</td>"
            f"<td class=\"num\">{_e(_fmt_seconds(s.get('sim_time_s')))}</td>"
            f"<td class=\"num\">{_e(_fmt_seconds(s.get('wall_s')))}</td>"
            f"<td class=\"num\">{_e(s.get('events', ''))}</td>"
            "</tr>")
    lines.append(
        "<table><thead><tr><th>run</th><th>arch</th><th>seed</th><th>nodes</th>"
        "<th>sim time</th><th>wall time</th><th>events</th></tr></thead><tbody>"
        + "".join(rows) + "</tbody></table>")
    return "\n".join(lines)


def _comparison_html(rows: list[dict]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for _, h, _, _ in TABLE_COLUMNS)
    body = []
    for r in rows:
        cells = []
        for key, _, fmt, num in TABLE_COLUMNS:
            if key == "invariants_ok":
                cells.append(_mark(bool(r[key])))
            else:
                cls = ' class="num"' if num else ""
                cells.append(f"<td{cls}>{_e(fmt(r))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table id=\"comparison\"><thead><tr>{head}</tr></thead><tbody>"
            + "\n".join(body) + "</tbody></table>")


def _invariants_html(results: Sequence[Any], labels: list[str]) -> str:
    rows = []
    for r, label in zip(results, labels):
        s = r.summary
        inv = check_invariants(s)
        b = s.get("bytes") or {}
        fab = s.get("fabric") or {}
        drops = s.get("drops") or {}
        drop_txt = ", ".join(f"{k}: {v}" for k, v in sorted(drops.items())) or "none"
        rows.append(
            "<tr>"
            f"<td>{_e(label)}</td>"
            f"<td class=\"num\">{_e(b.get('offered', '?'))} = {_e(b.get('delivered', '?'))}"
            f" + {_e(b.get('dropped', '?'))} + {_e(b.get('in_flight', '?'))}</td>"
            f"{_mark(inv['conservation'])}"
            f"<td>{_e(drop_txt)}</td>{_mark(inv['drops'])}"
            f"<td class=\"num\">{_e(fab.get('collisions', '?'))}</td>{_mark(inv['collisions'])}"
            f"<td class=\"num\">{_e(fab.get('guardband_violations', '?'))}</td>"
            f"{_mark(inv['guardband'])}"
            "</tr>")
    return ("<table id=\"invariants\"><thead><tr><th>run</th>"
            "<th>offered = delivered + dropped + in_flight (B)</th><th></th>"
            "<th>drops by reason (B)</th><th></th>"
            "<th>collisions</th><th></th><th>guardband violations</th><th></th>"
            "</tr></thead><tbody>" + "\n".join(rows) + "</tbody></table>")


def _flat_metrics(m: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """An architecture's metrics as (name, value) rows: nested dicts by dotted names,
    lists of numbers on one row, lists of text one row per item."""
    rows: list[tuple[str, str]] = []
    for k, v in m.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            rows += _flat_metrics(v, name + ".")
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, str) for x in v):
            rows += [(f"{name} [{i + 1}]", x) for i, x in enumerate(v)]
        elif isinstance(v, (list, tuple)):
            shown = ", ".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in v[:24])
            rows.append((name, shown + (f", ... ({len(v)} values)" if len(v) > 24 else "")))
        elif isinstance(v, float):
            rows.append((name, f"{v:.6g}"))
        else:
            rows.append((name, str(v)))
    return rows


def _arch_metrics_html(results: Sequence[Any], labels: list[str]) -> str:
    items = []
    for r, label in zip(results, labels):
        m = r.summary.get("arch_metrics")
        if isinstance(m, dict) and m:
            body = "".join(f"<tr><td><code>{_e(k)}</code></td><td class=\"num\">{_e(v)}</td></tr>"
                           for k, v in _flat_metrics(m))
            items.append(f"<details><summary><b>{_e(label)}</b>: {len(m)} metrics</summary>"
                         f"<table class=\"metrics\"><thead><tr><th>metric</th><th>value</th></tr></thead>"
                         f"<tbody>{body}</tbody></table></details>")
    if not items:
        return ""
    return "<h2>Architecture-specific metrics</h2>\n" + "\n".join(items)


_HOW_TO_READ = """
<p><b>FCT</b> (flow completion time) is <code>finish &minus; start</code> of a flow, in
microseconds; only completed flows enter the FCT statistics and the CDF (the table
shows how many flows completed out of those that started). <b>Mice</b> are flows below
the mice threshold (10&nbsp;KB unless the run said otherwise). Percentiles use numpy's
linear interpolation. The size-bucket plot shows, for each flow-size bucket
(KB&nbsp;=&nbsp;1000&nbsp;B), the 99th-percentile FCT of the completed flows of that
bucket; a missing bar means no flow of that bucket completed.</p>
<p><b>Goodput</b> is normalized to the host-side capacity: delivered payload bytes
divided by <code>N &times; R &times; simulated time</code> (N nodes, R per-node
host-side bandwidth). The throughput-over-time panel, when present, sums the bytes
sent on all ports of all nodes per sampling interval.</p>
<p><b>Invariants</b> every correct run satisfies: byte conservation
<code>offered = delivered + dropped + in_flight</code> exactly, the drop breakdown by
reason sums to the dropped bytes, and zero optical <b>collisions</b> (two
transmissions on one output in one slice) and zero <b>guardband violations</b> (bits
sent while a circuit is not up). &#x2713; means the invariant holds, &#x2717; that the
run is wrong.</p>
"""


def _img(name: str, png: bytes, alt: str, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f"<figure><img src=\"data:image/png;base64,{data}\" alt=\"{_e(alt)}\" "
            f"data-file=\"{_e(name)}\"><figcaption>{caption}</figcaption></figure>")


def write_report(results: Sequence[Any], out_dir: str | os.PathLike,
                 title: str = "opendcn comparison", workload_desc: str = "", *,
                 size_edges: Sequence[float] | None = None) -> Path:
    """Write ``out_dir/report.html`` and its plots; return the path of the HTML file.

    ``results`` are run results (objects with ``.summary`` and ``.flows``, optionally
    ``.timeseries`` and ``.label``), typically several architectures on one workload.
    ``out_dir`` is created if needed. The PNGs ``fct_cdf.png``, ``fct_p99_by_size.png``
    and ``goodput.png`` are written next to the HTML and also embedded in it, so the
    HTML alone is complete. ``workload_desc`` is shown in the run metadata;
    ``size_edges`` (bytes) overrides the flow-size buckets of the p99 plot (default
    0, 10 KB, 100 KB, 1 MB, 10 MB, inf; see :func:`opendcn.experiments.analysis.shale_edges`).
    Files are written atomically; on error no partial file is left behind.
    """
    results = list(results)
    if not results:
        raise ValueError("results: need at least one run to report on (got an empty list)")
    out = Path(out_dir)
    labels = [result_label(r) for r in results]
    rows = compare_table(results)
    edges = DEFAULT_EDGES if size_edges is None else size_edges

    pngs = {
        PLOT_FILES[0]: _render_fct_cdf(results, labels),
        PLOT_FILES[1]: _render_p99_by_size(results, labels, edges),
        PLOT_FILES[2]: _render_goodput(results, labels),
    }
    figures = "\n".join([
        _img(PLOT_FILES[0], pngs[PLOT_FILES[0]], "FCT CDF",
             "Empirical CDF of the flow completion time of completed flows (log x)."),
        _img(PLOT_FILES[1], pngs[PLOT_FILES[1]], "p99 FCT per flow-size bucket",
             "99th-percentile FCT per flow-size bucket (log y)."),
        _img(PLOT_FILES[2], pngs[PLOT_FILES[2]], "goodput",
             "Normalized goodput per run; throughput over time when a time series "
             "was recorded."),
    ])
    doc = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{_e(title)}</h1>
<h2>Runs</h2>
{_metadata_html(results, labels, workload_desc)}
<h2>Comparison</h2>
{_comparison_html(rows)}
<h2>Invariants</h2>
{_invariants_html(results, labels)}
{_arch_metrics_html(results, labels)}
<h2>Plots</h2>
{figures}
<h2>How to read this report</h2>
{_HOW_TO_READ}
</body>
</html>
"""
    out.mkdir(parents=True, exist_ok=True)
    for name, png in pngs.items():
        _atomic_write(out / name, png)
    report = out / "report.html"
    _atomic_write(report, doc.encode("utf-8"))
    return report
