"""A dashboard of one run: ``opendcn dashboard RUN_DIR`` (and ``net.dashboard()`` in the
OpenOptics layer).

The page is built from what a run directory keeps (``opendcn run --out``, a sweep point,
``Result.write``): the circuits of every slice and the time-flow entries
(``fabric.json``), every watched port's queue and the throughput over time
(``timeseries.parquet``), the flow completion times (``flows.parquet``) and the summary.
Its charts are Plotly figures with plotly.js inlined, so the page is one file that works
offline; ``opendcn dashboard`` serves it on ``localhost`` (or only writes it with
``--no-serve``).
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError

__all__ = ["load_run", "write_dashboard", "serve"]

#: time-flow entries listed on the page (the record keeps up to 5 000)
MAX_ENTRY_ROWS = 500
#: ports drawn one by one in the queue chart (the busiest; the rest are in the total)
MAX_PORT_LINES = 12


def load_run(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """A run directory's summary, spec, flows, time series and fabric record (None when
    the run kept none); ``ConfigError`` naming the folder when it is not a run."""
    import pyarrow.parquet as pq

    d = Path(run_dir)
    if not d.is_dir():
        raise ConfigError("RUN_DIR", str(d), "no such folder")
    if not (d / "summary.json").is_file():
        raise ConfigError("RUN_DIR", str(d), "not a run folder (no summary.json; opendcn run --out writes one)")
    try:
        run: dict[str, Any] = {"dir": d, "summary": json.loads((d / "summary.json").read_text())}
        run["spec"] = json.loads((d / "spec.json").read_text()) if (d / "spec.json").is_file() else {}
        run["fabric"] = json.loads((d / "fabric.json").read_text()) if (d / "fabric.json").is_file() else None
    except json.JSONDecodeError as e:
        raise ConfigError("RUN_DIR", str(d), f"unreadable JSON ({e})") from None
    run["flows"] = pq.read_table(d / "flows.parquet") if (d / "flows.parquet").is_file() else None
    run["timeseries"] = pq.read_table(d / "timeseries.parquet") if (d / "timeseries.parquet").is_file() else None
    return run


def _fig_html(fig: Any) -> str:
    return str(fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def _note(text: str) -> str:
    return f"<p class='note'>{html.escape(text)}</p>"


def _circuits(fab: dict[str, Any] | None) -> str:
    import plotly.graph_objects as go

    if fab is None:
        return _note("This run kept no fabric record (a slotted engine, or a run written before opendcn kept one).")
    circ = fab.get("circuits") or []
    if not circ:
        return _note("No circuit: an electrical or empty fabric.")
    slices = max(1, int(fab.get("slices", 1)))
    ends = sorted({(c[0], c[1]) for c in circ} | {(c[2], c[3]) for c in circ})
    row = {e: i for i, e in enumerate(ends)}
    z = np.full((len(ends), slices), np.nan)
    for n1, p1, n2, p2, ts in circ:
        for t in (range(slices) if ts < 0 else [ts % slices]):
            z[row[(n1, p1)], t] = n2
            z[row[(n2, p2)], t] = n1
    fig = go.Figure(go.Heatmap(z=z, x=[f"slice {t}" for t in range(slices)],
                               y=[f"node {n} port {p}" for n, p in ends], colorscale="Viridis",
                               colorbar={"title": "peer node"},
                               hovertemplate="%{y}, %{x}: to node %{z}<extra></extra>"))
    fig.update_layout(title="Circuits: the node each port reaches in each slice (blank: none)",
                      height=max(320, min(900, 14 * len(ends) + 140)), margin={"l": 130})
    more = (f"{fab['circuits_total']} circuits, the first {len(circ)} drawn. "
            if fab.get("circuits_total", len(circ)) > len(circ) else "")
    return _fig_html(fig) + (_note(more) if more else "")


def _entries(fab: dict[str, Any] | None) -> str:
    if fab is None:
        return ""
    rows = fab.get("entries")
    if rows is None:
        return _note(f"Routing: {fab.get('router')} (the engine computes each hop; no time-flow table to list).")
    if not rows:
        return _note("No time-flow entry.")
    w = lambda v: "any" if v < 0 else str(v)  # noqa: E731
    body = "".join(f"<tr><td>{n}</td><td>{w(a)}</td><td>{w(s)}</td><td>{d}</td><td>{w(dep)}</td><td>{p}</td></tr>"
                   for n, a, s, d, dep, p in rows[:MAX_ENTRY_ROWS])
    total = fab.get("entries_total", len(rows))
    return ("<div class='scroll'><table><tr><th>node</th><th>arrival slice</th><th>src</th><th>dst</th>"
            f"<th>departure slice</th><th>port</th></tr>{body}</table></div>"
            + _note(f"{total} entries" + (f", the first {min(MAX_ENTRY_ROWS, len(rows))} listed." if total >
                                          min(MAX_ENTRY_ROWS, len(rows)) else ".")))


def _series(ts: Any) -> tuple[str, str]:
    import plotly.graph_objects as go

    if ts is None or ts.num_rows == 0:
        msg = _note("The run sampled no port (sample_interval 0, or no port watched).")
        return msg, msg
    t = np.asarray(ts["time_ps"], dtype=np.int64)
    node = np.asarray(ts["node"], dtype=np.int64)
    port = np.asarray(ts["port"], dtype=np.int64)
    q = np.asarray(ts["queued_bytes"], dtype=np.float64)
    tx = np.asarray(ts["tx_bytes"], dtype=np.float64)
    real = port >= 0
    t, node, port, q, tx = t[real], node[real], port[real], q[real], tx[real]
    times = np.unique(t)
    key = node * 100_000 + port
    peaks = {k: q[key == k].max() for k in np.unique(key)}
    busiest = sorted(peaks, key=lambda k: -peaks[k])[:MAX_PORT_LINES]
    qf = go.Figure()
    for k in busiest:
        sel = key == k
        qf.add_trace(go.Scatter(x=t[sel] / 1e6, y=q[sel] / 1e3, mode="lines", name=f"node {k // 100_000} port "
                                f"{k % 100_000}"))
    qf.update_layout(title=f"Bytes queued at the {len(busiest)} busiest watched ports", xaxis_title="time (us)",
                     yaxis_title="queued (KB)", yaxis_rangemode="tozero", height=420)
    step = float(np.diff(times).min()) if len(times) > 1 else float(times[0] or 1)
    per = np.array([tx[t == x].sum() for x in times])
    tf = go.Figure(go.Scatter(x=times / 1e6, y=per * 8 / (step / 1e12) / 1e9, mode="lines", name="all watched"))
    tf.update_layout(title="Throughput of the watched ports (bits sent per sampling interval)",
                     xaxis_title="time (us)", yaxis_title="Gb/s", yaxis_rangemode="tozero", height=380)
    return _fig_html(qf), _fig_html(tf)


def _fct(flows: Any, mice_bytes: int | None) -> str:
    import plotly.graph_objects as go

    if flows is None or flows.num_rows == 0:
        return _note("No flow.")
    fct = np.asarray(flows["fct_ps"].to_numpy(zero_copy_only=False), dtype=np.float64)
    size = np.asarray(flows["size_bytes"], dtype=np.float64)
    done = np.isfinite(fct) & (fct >= 0)
    if not done.any():
        return _note(f"None of the {flows.num_rows} flows finished.")
    fig = go.Figure()
    groups: list[tuple[str, np.ndarray]] = [("all flows", done)]
    if mice_bytes:
        groups += [(f"flows <= {mice_bytes} B", done & (size <= mice_bytes)),
                   (f"flows > {mice_bytes} B", done & (size > mice_bytes))]
    for name, sel in groups:
        v = np.sort(fct[sel]) / 1e6
        if len(v):
            fig.add_trace(go.Scatter(x=v, y=np.arange(1, len(v) + 1) / len(v), mode="lines", name=f"{name} ({len(v)})"))
    fig.update_layout(title=f"Flow completion times: {int(done.sum())} of {flows.num_rows} flows finished",
                      xaxis_title="FCT (us, log)", xaxis_type="log", yaxis_title="share of finished flows",
                      height=420)
    return _fig_html(fig)


def _facts(run: dict[str, Any]) -> str:
    s = run["summary"]
    b = s.get("bytes", {})
    rows = [("architecture", s.get("arch")), ("workload", s.get("workload")),
            ("simulated", f"{s.get('sim_time_s')} s"), ("wall", f"{s.get('wall_s')} s"),
            ("goodput (of host capacity)", s.get("goodput_normalized")),
            ("bytes offered / delivered / dropped / in flight",
             f"{b.get('offered')} / {b.get('delivered')} / {b.get('dropped')} / {b.get('in_flight')}"),
            ("invariants", "ok" if s.get("invariants", {}).get("ok") else "VIOLATED")]
    drops = {k: v for k, v in s.get("packets", {}).get("dropped", {}).items() if v}
    rows.append(("packets dropped", ", ".join(f"{k} {v}" for k, v in sorted(drops.items())) or "none"))
    return "<table>" + "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                               for k, v in rows) + "</table>"


def write_dashboard(run_dir: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
                    title: str | None = None, extra: Sequence[tuple[str, str]] = ()) -> Path:
    """Write the dashboard of the run in ``run_dir`` to ``out`` (default
    ``run_dir/dashboard.html``; written whole, then renamed) and return its path.
    ``extra``: more sections as (heading, HTML)."""
    from plotly.offline import get_plotlyjs

    run = load_run(run_dir)
    s = run["summary"]
    queues, thr = _series(run["timeseries"])
    sections = [("Run", _facts(run)), ("Circuits", _circuits(run["fabric"])),
                ("Time-flow table", _entries(run["fabric"])), ("Queues", queues), ("Throughput", thr),
                ("Flow completion times", _fct(run["flows"], 10_000)), *extra]
    name = title or f"opendcn run: {s.get('arch')} ({run['dir'].name})"
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>" + html.escape(name) + "</title>"
            "<style>body{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em}"
            "table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
            ".scroll{overflow:auto;max-height:30em}.note{color:#555}</style>"
            f"<script>{get_plotlyjs()}</script></head><body><h1>{html.escape(name)}</h1>"
            + "".join(f"<h2>{html.escape(h)}</h2>{body}" for h, body in sections) + "</body></html>")
    path = Path(out) if out is not None else run["dir"] / "dashboard.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def serve(page: Path, port: int = 8001) -> Any:
    """An HTTP server on ``127.0.0.1:port`` for ``page``'s folder (call
    ``serve_forever()``; ``server_address`` has the port, 0 picks a free one)."""
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(page.parent))
    try:
        return ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as e:
        raise ConfigError("--port", port, f"cannot listen there ({e.strerror})") from None
