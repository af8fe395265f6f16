"""A dashboard of an OpenOptics network run by opendcn (``net.dashboard()``,
``net.start_monitor()``).

OpenOptics' dashboard is a live web service fed by its switches. A simulated network's
runs finish in seconds, so opendcn's is the run dashboard of ``opendcn dashboard``
(:mod:`opendcn.network.dashboard`: circuits per slice, the time-flow table, queues and
throughput over time, the FCT distribution; Plotly, one self-contained page) of the
network's last run, with what OpenOptics shows besides: the switches' counters and the
ping matrix of a ``pingall``. The last run is kept beside the page (``out/run``), so
``opendcn dashboard out/run`` shows it again.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["write_dashboard"]


def _counters(net: Any) -> str:
    metric = net.device_manager.get_device_metric()
    rows = "".join(f"<tr><td>{k}</td><td>{v['from_host']}</td><td>{v['delivered']}</td><td>{v['lost']}</td>"
                   f"<td>{sum(metric[k]['pq_depth'].values())}</td></tr>"
                   for k, v in net.device_manager.switch_counters().items())
    return ("<table><tr><th>switch</th><th>from its hosts</th><th>delivered to its hosts</th><th>lost</th>"
            f"<th>queued packets</th></tr>{rows}</table>")


def _pings(net: Any) -> str:
    import numpy as np
    import plotly.graph_objects as go

    if not net.ping_results:
        return "<p class='note'>No pingall yet.</p>"
    hosts = net.nb_node * net.nb_host_per_tor
    m = np.full((hosts, hosts), np.nan)
    for (a, b), xs in net.ping_results.items():
        got = [x for x in xs if x is not None]
        if got:
            m[a, b] = sum(got) / len(got)
    fig = go.Figure(go.Heatmap(z=m, x=[f"h{i}" for i in range(hosts)], y=[f"h{i}" for i in range(hosts)],
                               colorbar={"title": "ms"}, hovertemplate="%{y} -> %{x}: %{z:.3f} ms<extra></extra>"))
    fig.update_layout(title="Mean round-trip time of the last pingall (blank: no reply)", height=420,
                      yaxis_autorange="reversed")
    lost = sum(1 for xs in net.ping_results.values() for x in xs if x is None)
    total = sum(len(xs) for xs in net.ping_results.values())
    return (fig.to_html(full_html=False, include_plotlyjs=False)
            + f"<p class='note'>{total - lost} of {total} echo requests answered.</p>")


def write_dashboard(net: Any, out: str | os.PathLike[str] = "openoptics-dashboard") -> Path:
    """Write the dashboard of ``net``'s last run to ``out/index.html`` (the run itself to
    ``out/run``) and return the page's path; ``ConfigError`` before any run."""
    from ..network.dashboard import write_dashboard as run_dashboard

    if net.result is None:
        raise ConfigError("dashboard", "no run", "run the network (net.start(), a ping) first")
    out_dir = Path(out)
    net.result.write(out_dir / "run")
    title = f"OpenOptics network {net.name} ({net.backend} script) on opendcn"
    return run_dashboard(out_dir / "run", out_dir / "index.html", title=title,
                         extra=[("Switches (last run)", _counters(net)), ("Ping", _pings(net)),
                                ("Network", "<p>" + html.escape(
                                    f"{net.nb_node} ToRs x {net.nb_link} uplinks, {net.nb_host_per_tor} host(s) per "
                                    f"ToR, {net.nb_time_slices} slices of {net.time_slice_duration_us} us, guardband "
                                    f"{net.guardband_us} us, arch_mode {net.arch_mode}") + "</p>")])
