"""A dashboard of an OpenOptics network run by opendcn: one self-contained HTML page.

OpenOptics' dashboard is a live web service fed by its switches. A simulated network's
runs finish in seconds, so opendcn's dashboard is a page written after each run
(``net.start_monitor(out)`` before running, or :func:`write_dashboard` after): the
network, the circuits of every slice, the switches' counters and metrics, every uplink's
queue over the run, the ping matrix of a ``pingall``, and the flows' statistics. The
page carries its images inline (nothing to serve) and is rewritten whole at each run
(written to a temporary file, then renamed).
"""

from __future__ import annotations

import base64
import html
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_dashboard"]

#: flows listed in the table (the page stays readable for a million datagrams)
MAX_FLOW_ROWS = 200


def _png(fig: Any) -> str:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode()


def _figure(w: float, h: float, rows: int = 1, cols: int = 1) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, cols, squeeze=False)


def _img(b64: str, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r.get(c)))}</td>" for c in cols) + "</tr>"
                   for r in rows)
    return f'<div class="scroll"><table><tr>{head}</tr>{body}</table></div>'


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def _topology(net: Any) -> str:
    """One small drawing per slice (up to 24): nodes on a circle, an arrow per circuit."""
    slices = sorted(net.slice_to_topo)[:24]
    if not slices:
        return "<p>No circuit deployed.</p>"
    cols = min(6, len(slices))
    rows = -(-len(slices) // cols)
    fig, axes = _figure(2.1 * cols, 2.1 * rows, rows, cols)
    n = net.nb_node
    ang = 2 * np.pi * np.arange(n) / n
    xy = np.c_[np.cos(ang), np.sin(ang)]
    for k, ax in enumerate(axes.ravel()):
        ax.set_axis_off()
        if k >= len(slices):
            continue
        ts = slices[k]
        ax.set_title(f"slice {ts}", fontsize=9)
        ax.scatter(xy[:, 0], xy[:, 1], s=60, color="#1f77b4", zorder=3)
        for i in range(n):
            ax.annotate(str(i), xy[i] * 1.18, ha="center", va="center", fontsize=7)
        for a, b in net.slice_to_topo[ts].edges():
            ax.annotate("", xy=xy[b] * 0.92, xytext=xy[a] * 0.92,
                        arrowprops={"arrowstyle": "->", "color": "#d62728", "lw": 0.8})
        ax.set_xlim(-1.35, 1.35)
        ax.set_ylim(-1.35, 1.35)
        ax.set_aspect("equal")
    more = f" (the first 24 of {len(net.slice_to_topo)})" if len(net.slice_to_topo) > 24 else ""
    return _img(_png(fig), "circuits per slice") + (f"<p>Slices shown{more}.</p>" if more else "")


def _queues(net: Any) -> str:
    """Every uplink's queued bytes over the last run (the largest ToRs' lines named)."""
    if net.result is None or net._native is None or net.arch_mode == "TA":
        return "<p>No traffic-oblivious run yet (a traffic-aware run keeps its queues at the hosts).</p>"
    fig, axes = _figure(9, 3.2)
    ax = axes[0][0]
    drawn = 0
    for node in range(net.nb_node):
        for port in range(net.nb_link):
            t = net.device_manager.queue_occupancy(node, port)
            x = np.asarray(t["time_ps"].to_pylist(), float) / 1e9
            y = np.asarray(t["queued_bytes"].to_pylist(), float)
            if len(x) and y.max() > 0:
                ax.plot(x, y / 1e3, lw=0.8, label=f"tor{node} port {port}" if drawn < 12 else None)
                drawn += 1
    if not drawn:
        return "<p>No uplink queued a byte during the last run.</p>"
    ax.set_xlabel("simulated time (ms)")
    ax.set_ylabel("queued (KB)")
    ax.set_ylim(bottom=0)
    ax.set_title("bytes queued at each ToR uplink (all its calendar queues)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _img(_png(fig), "queue occupancy")


def _pings(net: Any) -> str:
    if not net.ping_results:
        return "<p>No pingall yet.</p>"
    hosts = net.nb_node * net.nb_host_per_tor
    m = np.full((hosts, hosts), np.nan)
    for (a, b), xs in net.ping_results.items():
        got = [x for x in xs if x is not None]
        if got:
            m[a, b] = sum(got) / len(got)
    fig, axes = _figure(4.6, 3.8)
    ax = axes[0][0]
    im = ax.imshow(m, cmap="viridis")
    ax.set_xlabel("to host")
    ax.set_ylabel("from host")
    ax.set_title("mean round-trip time (ms); blank: no reply")
    fig.colorbar(im, ax=ax)
    lost = sum(1 for xs in net.ping_results.values() for x in xs if x is None)
    total = sum(len(xs) for xs in net.ping_results.values())
    return _img(_png(fig), "ping matrix") + f"<p>{total - lost} of {total} echo requests answered.</p>"


def write_dashboard(net: Any, out: str | os.PathLike[str] = "openoptics-dashboard") -> Path:
    """Write the dashboard of ``net`` (an OpenOptics ``BaseNetwork``) to ``out/index.html``
    and return its path."""
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    r = net.result
    info = [{"name": net.name, "backend": net.backend, "mode": net.arch_mode, "ToRs": net.nb_node,
             "uplinks": net.nb_link, "hosts per ToR": net.nb_host_per_tor, "slices": net.nb_time_slices,
             "slice (us)": net.time_slice_duration_us, "guardband (us)": net.guardband_us,
             "simulated (s)": None if r is None else r.summary["sim_time_s"],
             "wall (s)": None if r is None else r.summary["wall_s"]}]
    counters = [{"switch": k, **v} for k, v in net.device_manager.switch_counters().items()]
    metric = net.device_manager.get_device_metric()
    for row in counters:
        m = metric[row["switch"]]
        row["queued packets"] = sum(m["pq_depth"].values())
    flows = []
    for s in net.get_flow_stats()[:MAX_FLOW_ROWS]:
        flows.append({"protocol": s.protocol, "src": s.src_ip, "dst": s.dst_ip, "dst port": s.dst_port,
                      "tx packets": s.tx_packets, "rx packets": s.rx_packets, "lost": s.lost_packets,
                      "delay avg (ms)": s.delay_avg_s * 1e3, "fct (ms)": s.fct_s * 1e3,
                      "throughput (Mb/s)": s.throughput_bps / 1e6})
    drops = {} if r is None else {k: v for k, v in r.summary["packets"]["dropped"].items() if v}
    parts = [
        "<h2>Network</h2>", _table(info, list(info[0])),
        "<h2>Circuits</h2>", _topology(net),
        "<h2>Switches (last run)</h2>", _table(counters, ["switch", "from_host", "delivered", "lost",
                                                          "queued packets"]),
        "<p>Dropped by the network: " + (", ".join(f"{k} {v}" for k, v in sorted(drops.items())) or "none") + "</p>",
        "<h2>Uplink queues</h2>", _queues(net),
        "<h2>Ping</h2>", _pings(net),
        f"<h2>Flows ({'the first ' + str(MAX_FLOW_ROWS) + ' of ' if len(flows) == MAX_FLOW_ROWS else ''}"
        "the last run's)</h2>",
        _table(flows, list(flows[0])) if flows else "<p>The last run carried no installed traffic (a ping or pingall, or none yet).</p>",
    ]
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>opendcn: "
            f"{html.escape(net.name)}</title><style>body{{font-family:sans-serif;max-width:1200px;margin:1em auto;}}"
            "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:2px 6px;}"
            ".scroll{overflow-x:auto;max-height:32em;overflow-y:auto}img{max-width:100%}</style></head><body>"
            f"<h1>OpenOptics network {html.escape(net.name)} on opendcn</h1>"
            "<p>Written after the last run; every figure is in simulated time.</p>" + "".join(parts) +
            "</body></html>")
    path = out_dir / "index.html"
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".index.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
