"""Statistics over a run's per-flow records and time series; pure functions, no I/O.

Inputs are the tables a run produces (see the contract):

- *flows*: a ``pyarrow.Table`` with at least ``size_bytes`` (int64, bytes),
  ``fct_ps`` (int64 picoseconds, null when not completed), ``completed`` (bool) and,
  for the slowdown column of :func:`size_buckets`, ``slowdown`` (float64, null when not
  completed).
- *timeseries*: a ``pyarrow.Table`` (may be empty) with ``time_ps`` (int64 ps),
  ``node``, ``port`` and ``tx_bytes`` (bytes sent in the interval ending at ``time_ps``).

Units of the results:

- flow completion times (FCT = finish - start of a flow) are in **microseconds**
  (float); sizes in **bytes** (KB = 1000 B); throughput in **Gbit/s** (1e9 bit/s);
  times of a series in **microseconds**.
- Only *completed* flows (``completed`` true and ``fct_ps`` not null) enter FCT
  statistics; ``count`` is the number of such flows.
- Percentiles use numpy's ``"linear"`` method (``numpy.percentile(x, q,
  method="linear")``): the value at rank ``(n - 1) * q / 100`` of the sorted sample,
  linearly interpolated between its two neighbours.
- An empty set of flows gives ``count`` 0 and ``0.0`` for every statistic, never NaN,
  so that the results can go into the JSON summary.

Functions:

- :func:`fct_stats` -- count/mean/p50/p99 FCT of mice (``size_bytes < mice_threshold``)
  and of all completed flows, as in the summary's ``fct_us``.
- :func:`size_buckets` -- the same statistics (plus p99 slowdown) per flow-size bucket;
  :func:`shale_edges` gives Shale-style powers-of-4 bucket edges.
- :func:`fct_cdf` -- empirical CDF of the FCT of completed flows.
- :func:`goodput_series` -- throughput over time summed over all nodes and ports.
- :func:`check_invariants` -- the engine invariants of one summary, as booleans.
- :func:`compare_table`, :func:`format_table`, :func:`rich_table` -- one comparison row
  per run, and its rendering for a terminal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "DEFAULT_EDGES",
    "DEFAULT_MICE_THRESHOLD",
    "PERCENTILE_METHOD",
    "TABLE_COLUMNS",
    "bucket_labels",
    "check_invariants",
    "compare_table",
    "delivered_series",
    "fct_cdf",
    "fct_stats",
    "format_size",
    "format_table",
    "goodput_series",
    "result_label",
    "rich_table",
    "shale_edges",
    "size_buckets",
]

#: Flows strictly smaller than this many bytes are mice (contract default: 10 KB).
DEFAULT_MICE_THRESHOLD = 10_000
#: Default flow-size bucket edges in bytes: 0, 10 KB, 100 KB, 1 MB, 10 MB, infinity.
DEFAULT_EDGES: tuple[float, ...] = (0, 10_000, 100_000, 1_000_000, 10_000_000, math.inf)
#: numpy percentile method used for every percentile in this module.
PERCENTILE_METHOD: Final = "linear"

_PS_PER_US = 1e6


# ----------------------------------------------------------------------------- helpers

def _column_np(table: pa.Table, name: str, dtype: Any, fill: Any = None) -> np.ndarray:
    """Column ``name`` of ``table`` as a numpy array of ``dtype``; nulls replaced by
    ``fill`` (the column must have no nulls when ``fill`` is None)."""
    col = table.column(name)
    if fill is not None:
        col = pc.fill_null(col, fill)
    return np.asarray(col.to_numpy(), dtype=dtype)


def _completed(flows: pa.Table) -> pa.Table:
    """The rows of ``flows`` whose flow completed and has a completion time."""
    done = pc.and_(pc.fill_null(flows.column("completed"), False),
                   pc.is_valid(flows.column("fct_ps")))
    return flows.filter(done)


def _fct_us(flows: pa.Table) -> np.ndarray:
    """FCT in microseconds (float64) of every row of ``flows`` (rows must be completed)."""
    return _column_np(flows, "fct_ps", np.float64) / _PS_PER_US


def _summary_stats(values: np.ndarray) -> dict[str, float | int]:
    """``{count, mean, p50, p99}`` of ``values``; zeros (not NaN) when it is empty."""
    n = int(values.size)
    if n == 0:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p99": 0.0}
    p50, p99 = np.percentile(values, [50, 99], method=PERCENTILE_METHOD)
    return {"count": n, "mean": float(np.mean(values)), "p50": float(p50), "p99": float(p99)}


def _check_edges(edges: Sequence[float]) -> list[float]:
    out = [float(e) for e in edges]
    if len(out) < 2:
        raise ValueError(f"edges: need at least two bucket edges (got {list(edges)!r})")
    if any(math.isnan(e) for e in out) or any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"edges: must be strictly increasing numbers (got {list(edges)!r})")
    return out


def format_size(nbytes: float) -> str:
    """A byte count as a short exact label with decimal units: 4000 -> ``"4KB"``,
    1024000 -> ``"1.024MB"``, 500 -> ``"500B"``, infinity -> ``"inf"``."""
    if math.isinf(nbytes):
        return "inf"
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.6g}{unit}"
    return f"{nbytes:.6g}B"


def bucket_labels(edges: Sequence[float]) -> list[str]:
    """Labels of the half-open buckets ``[edges[i], edges[i+1])``: ``"<10KB"`` for a
    bucket starting at 0, ``">=10MB"`` for one ending at infinity, ``"10KB-100KB"``
    otherwise (``"all"`` for ``[0, inf)``)."""
    e = _check_edges(edges)
    labels = []
    for lo, hi in zip(e, e[1:]):
        if lo <= 0 and math.isinf(hi):
            labels.append("all")
        elif lo <= 0:
            labels.append(f"<{format_size(hi)}")
        elif math.isinf(hi):
            labels.append(f">={format_size(lo)}")
        else:
            labels.append(f"{format_size(lo)}-{format_size(hi)}")
    return labels


# ----------------------------------------------------------------------------- FCT

def fct_stats(flows: pa.Table, *, mice_threshold: int = DEFAULT_MICE_THRESHOLD,
              sizes: Mapping[str, tuple[float, float]] | None = None) -> dict[str, dict]:
    """FCT statistics of the completed flows, in microseconds, as the summary's ``fct_us``.

    Returns ``{"mice": {...}, "all": {...}}`` where each entry is ``{"count": int,
    "mean": float, "p50": float, "p99": float}``: ``count`` completed flows, their mean,
    median and 99th-percentile FCT (numpy ``"linear"`` percentiles). ``mice`` are the
    completed flows with ``size_bytes < mice_threshold`` (bytes); ``all`` every completed
    flow. An empty set gives count 0 and 0.0 statistics (never NaN).

    ``sizes`` optionally adds more size classes: a mapping ``name -> (lo, hi)`` in
    bytes, each class holding the completed flows with ``lo <= size_bytes < hi``
    (``hi`` may be ``math.inf``); its entry is added to the result under ``name``
    (``"mice"`` and ``"all"`` may not be reused).
    """
    done = _completed(flows)
    fct = _fct_us(done)
    size = _column_np(done, "size_bytes", np.int64)
    out: dict[str, dict] = {
        "mice": _summary_stats(fct[size < mice_threshold]),
        "all": _summary_stats(fct),
    }
    for name, bounds in (sizes or {}).items():
        if name in ("mice", "all"):
            raise ValueError(f"sizes: class name {name!r} is reserved")
        lo, hi = (float(b) for b in bounds)
        if not hi > lo:
            raise ValueError(f"sizes[{name!r}]: need lo < hi (got {bounds!r})")
        out[name] = _summary_stats(fct[(size >= lo) & (size < hi)])
    return out


def shale_edges(max_size: float) -> list[float]:
    """Shale-style powers-of-4 bucket edges in bytes: ``0, 4 kB, 16 kB, 64 kB, ...``.

    The finite edges are ``4000 * 4**k`` (KB = 1000 B) up to the largest one not above
    ``max_size`` (at least 4 kB), and the last edge is infinity, so the buckets
    partition every flow and the top bucket ``[4000 * 4**k, inf)`` holds exactly the
    flows of ``[4000 * 4**k, 4000 * 4**(k+1))`` when ``max_size`` is the largest flow.
    """
    if max_size is None or not max_size >= 0:
        raise ValueError(f"max_size: must be a non-negative number of bytes (got {max_size!r})")
    edges: list[float] = [0, 4000]
    while edges[-1] * 4 <= max_size:
        edges.append(edges[-1] * 4)
    edges.append(math.inf)
    return edges


def size_buckets(flows: pa.Table, edges: Sequence[float] | None = None) -> pa.Table:
    """Per-flow-size-bucket statistics.

    Buckets are the half-open byte ranges ``[edges[i], edges[i+1])``; ``edges`` defaults
    to :data:`DEFAULT_EDGES` (0, 10 KB, 100 KB, 1 MB, 10 MB, inf) and may be e.g.
    :func:`shale_edges`. Every flow (completed or not) must fall into one bucket, else
    ``ValueError``; the buckets therefore partition the flows.

    Columns: ``bucket`` (label, see :func:`bucket_labels`), ``lo_bytes``, ``hi_bytes``
    (float64 bucket bounds), ``count`` (flows in the bucket), ``completed`` (completed
    flows among them), ``mean_fct_us``, ``p50_fct_us``, ``p99_fct_us`` (FCT of the
    completed flows, microseconds) and ``p99_slowdown`` (99th percentile of
    ``slowdown`` = FCT / ideal FCT of the completed flows). The statistics are null for
    a bucket without completed flows.
    """
    e = _check_edges(DEFAULT_EDGES if edges is None else edges)
    labels = bucket_labels(e)
    all_sizes = _column_np(flows, "size_bytes", np.float64)
    outside = (all_sizes < e[0]) | (all_sizes >= e[-1])
    if outside.any():
        bad = all_sizes[outside][0]
        raise ValueError(f"edges: flow of {bad:.0f} bytes lies outside [{e[0]}, {e[-1]})")
    done = _completed(flows)
    fct = _fct_us(done)
    sizes = _column_np(done, "size_bytes", np.float64)
    if "slowdown" in done.column_names:
        slow_valid = np.asarray(pc.is_valid(done.column("slowdown")).to_numpy(), dtype=bool)
        slow = _column_np(done, "slowdown", np.float64, fill=0.0)
    else:
        slow_valid = np.zeros(fct.size, dtype=bool)
        slow = np.zeros(fct.size, dtype=np.float64)

    cols: dict[str, list] = {k: [] for k in ("count", "completed", "mean_fct_us", "p50_fct_us",
                                             "p99_fct_us", "p99_slowdown")}
    for lo, hi in zip(e, e[1:]):
        cols["count"].append(int(((all_sizes >= lo) & (all_sizes < hi)).sum()))
        sel = (sizes >= lo) & (sizes < hi)
        f = fct[sel]
        cols["completed"].append(int(f.size))
        if f.size:
            p50, p99 = np.percentile(f, [50, 99], method=PERCENTILE_METHOD)
            cols["mean_fct_us"].append(float(np.mean(f)))
            cols["p50_fct_us"].append(float(p50))
            cols["p99_fct_us"].append(float(p99))
        else:
            for k in ("mean_fct_us", "p50_fct_us", "p99_fct_us"):
                cols[k].append(None)
        s = slow[sel & slow_valid]
        cols["p99_slowdown"].append(
            float(np.percentile(s, 99, method=PERCENTILE_METHOD)) if s.size else None)

    return pa.table({
        "bucket": pa.array(labels, pa.string()),
        "lo_bytes": pa.array(e[:-1], pa.float64()),
        "hi_bytes": pa.array(e[1:], pa.float64()),
        "count": pa.array(cols["count"], pa.int64()),
        "completed": pa.array(cols["completed"], pa.int64()),
        "mean_fct_us": pa.array(cols["mean_fct_us"], pa.float64()),
        "p50_fct_us": pa.array(cols["p50_fct_us"], pa.float64()),
        "p99_fct_us": pa.array(cols["p99_fct_us"], pa.float64()),
        "p99_slowdown": pa.array(cols["p99_slowdown"], pa.float64()),
    })


def fct_cdf(flows: pa.Table, max_points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of the FCT of the completed flows.

    Returns ``(x_us, y)``: ``x_us`` the sorted FCTs in microseconds, ``y[i]`` the
    fraction of completed flows with FCT <= ``x_us[i]`` (so ``y`` rises to exactly
    1.0). With more than ``max_points`` flows the points are downsampled at evenly
    spaced ranks, always keeping the first and the last point. No completed flows give
    two empty arrays.
    """
    if max_points < 2:
        raise ValueError(f"max_points: need at least 2 (got {max_points!r})")
    x = np.sort(_fct_us(_completed(flows)))
    n = x.size
    y = np.arange(1, n + 1, dtype=np.float64) / n if n else np.empty(0, dtype=np.float64)
    if n > max_points:
        idx = np.unique(np.round(np.linspace(0, n - 1, max_points)).astype(np.int64))
        x, y = x[idx], y[idx]
    return x, y


# ----------------------------------------------------------------------------- time series

def goodput_series(timeseries: pa.Table | None,
                   rate_normalizer_bps: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Throughput over time, summed over every node and port of the time series.

    ``tx_bytes`` of all rows with the same ``time_ps`` are added; the interval of a
    sample is ``time_ps`` minus the previous sample time (0 for the first one). Returns
    ``(time_us, gbps)``: the interval end times in microseconds and the rate
    ``8 * bytes / interval`` in Gbit/s. With ``rate_normalizer_bps`` (for example
    ``N * R``, the aggregate host-side bandwidth in bit/s) the second array is instead
    that rate divided by the normalizer (a fraction). Note that if the series records
    every link, bytes of multi-hop packets are counted once per hop. An empty or absent
    series gives two empty arrays.
    """
    if timeseries is None or timeseries.num_rows == 0:
        return np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64)
    if rate_normalizer_bps is not None and not rate_normalizer_bps > 0:
        raise ValueError(f"rate_normalizer_bps: must be positive (got {rate_normalizer_bps!r})")
    ts = timeseries.select(["time_ps", "tx_bytes"])
    ts = ts.filter(pc.is_valid(ts.column("time_ps")))
    agg = ts.group_by("time_ps").aggregate([("tx_bytes", "sum")]).sort_by("time_ps")
    t = _column_np(agg, "time_ps", np.int64)
    b = _column_np(agg, "tx_bytes_sum", np.float64, fill=0)
    dt_ps = np.diff(t, prepend=0).astype(np.float64)
    keep = dt_ps > 0  # a sample at t=0 has no interval
    t, b, dt_ps = t[keep], b[keep], dt_ps[keep]
    bps = b * 8.0 / (dt_ps / 1e12)
    rate = bps / rate_normalizer_bps if rate_normalizer_bps is not None else bps / 1e9
    return t.astype(np.float64) / _PS_PER_US, rate


def delivered_series(timeseries: pa.Table | None) -> tuple[np.ndarray, np.ndarray]:
    """Delivered payload over time: the network-wide rows (``node == -1``) of a series
    recorded with ``net.net_series`` carry ``delivered_bytes`` per interval. Returns
    ``(time_us, gbps)`` like :func:`goodput_series`: each payload byte counts once, at
    its receiver, whatever the hops it took (the measure to compare designs by); two
    empty arrays without such rows."""
    empty = np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64)
    if timeseries is None or timeseries.num_rows == 0 or "delivered_bytes" not in timeseries.column_names:
        return empty
    net = timeseries.filter(pc.and_(pc.equal(timeseries.column("node"), -1),
                                    pc.is_valid(timeseries.column("delivered_bytes"))))
    if net.num_rows == 0:
        return empty
    net = net.sort_by("time_ps")
    t = _column_np(net, "time_ps", np.int64)
    b = _column_np(net, "delivered_bytes", np.float64, fill=0)
    dt_ps = np.diff(t, prepend=0).astype(np.float64)
    keep = dt_ps > 0
    t, b, dt_ps = t[keep], b[keep], dt_ps[keep]
    return t.astype(np.float64) / _PS_PER_US, b * 8.0 / (dt_ps / 1e12) / 1e9


# ----------------------------------------------------------------------------- comparison

def _get(d: Mapping | None, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(d, Mapping) or key not in d:
            return default
        d = d[key]
    return d


def check_invariants(summary: Mapping) -> dict[str, bool]:
    """The engine invariants of one run summary, each True when it holds.

    - ``conservation``: ``bytes.offered == delivered + dropped + in_flight`` exactly;
    - ``drops``: the ``drops`` breakdown by reason sums to ``bytes.dropped``;
    - ``collisions``: ``fabric.collisions == 0``;
    - ``guardband``: ``fabric.guardband_violations == 0``;
    - ``all``: every one of the above. A missing field counts as a violation.
    """
    b = _get(summary, "bytes", default={})
    parts = [_get(b, k) for k in ("offered", "delivered", "dropped", "in_flight")]
    conservation = all(isinstance(p, int) and not isinstance(p, bool) for p in parts) \
        and parts[0] == parts[1] + parts[2] + parts[3]
    drops = _get(summary, "drops")
    drops_ok = isinstance(drops, Mapping) and isinstance(parts[2], int) \
        and sum(drops.values()) == parts[2]
    collisions = _get(summary, "fabric", "collisions") == 0
    guardband = _get(summary, "fabric", "guardband_violations") == 0
    out = {"conservation": bool(conservation), "drops": bool(drops_ok),
           "collisions": bool(collisions), "guardband": bool(guardband)}
    out["all"] = all(out.values())
    return out


def result_label(result: Any) -> str:
    """Display name of a run: its ``.label`` attribute, else ``summary["label"]``, else
    ``summary["arch"]``."""
    label = getattr(result, "label", None)
    if label:
        return str(label)
    summary = getattr(result, "summary", None) or {}
    return str(summary.get("label") or summary.get("arch") or "?")


def compare_table(results: Sequence[Any]) -> list[dict]:
    """One row per run for a comparison table.

    ``results`` are objects with ``.summary`` (the summary dict) and ``.flows`` (the
    per-flow table), optionally ``.timeseries`` and ``.label``. Each row has ``label``,
    ``arch``, ``flows_completed``, ``flows_started``, ``goodput_normalized``,
    ``mice_mean_fct_us``, ``mice_p99_fct_us``, ``all_mean_fct_us``, ``all_p99_fct_us``
    (microseconds, from the summary's ``fct_us``; computed from ``.flows`` with
    :func:`fct_stats` when the summary lacks them), ``drops_bytes`` (``bytes.dropped``,
    else the sum of ``drops``), ``collisions``, ``guardband_violations`` and
    ``invariants_ok`` (``check_invariants(summary)["all"]``).
    """
    rows = []
    for r in results:
        s = r.summary
        fct = s.get("fct_us")
        if not (isinstance(fct, Mapping) and "mice" in fct and "all" in fct):
            fct = fct_stats(r.flows)
        dropped = _get(s, "bytes", "dropped")
        if dropped is None:
            dropped = sum((s.get("drops") or {}).values())
        rows.append({
            "label": result_label(r),
            "arch": s.get("arch", ""),
            "flows_completed": _get(s, "flows", "completed", default=0),
            "flows_started": _get(s, "flows", "started", default=0),
            "goodput_normalized": float(s.get("goodput_normalized", 0.0)),
            "mice_mean_fct_us": float(fct["mice"]["mean"]),
            "mice_p99_fct_us": float(fct["mice"]["p99"]),
            "all_mean_fct_us": float(fct["all"]["mean"]),
            "all_p99_fct_us": float(fct["all"]["p99"]),
            "drops_bytes": dropped,
            "collisions": _get(s, "fabric", "collisions", default=0),
            "guardband_violations": _get(s, "fabric", "guardband_violations", default=0),
            "invariants_ok": check_invariants(s)["all"],
        })
    return rows


def _fmt_float(digits: int) -> Callable[[Any], str]:
    return lambda v: f"{v:.{digits}f}"


#: Columns of the comparison table: (row key, header, formatter of a whole row, numeric?).
TABLE_COLUMNS: list[tuple[str, str, Callable[[dict], str], bool]] = [
    ("label", "arch", lambda r: str(r["label"]), False),
    ("flows_completed", "flows done/started",
     lambda r: f"{r['flows_completed']}/{r['flows_started']}", True),
    ("goodput_normalized", "goodput", lambda r: _fmt_float(4)(r["goodput_normalized"]), True),
    ("mice_mean_fct_us", "mice mean us", lambda r: _fmt_float(2)(r["mice_mean_fct_us"]), True),
    ("mice_p99_fct_us", "mice p99 us", lambda r: _fmt_float(2)(r["mice_p99_fct_us"]), True),
    ("all_mean_fct_us", "all mean us", lambda r: _fmt_float(2)(r["all_mean_fct_us"]), True),
    ("all_p99_fct_us", "all p99 us", lambda r: _fmt_float(2)(r["all_p99_fct_us"]), True),
    ("drops_bytes", "drops B", lambda r: str(r["drops_bytes"]), True),
    ("collisions", "collisions", lambda r: str(r["collisions"]), True),
    ("guardband_violations", "gb viol", lambda r: str(r["guardband_violations"]), True),
    ("invariants_ok", "invariants", lambda r: "ok" if r["invariants_ok"] else "FAIL", False),
]


def format_table(rows: Sequence[dict]) -> str:
    """Rows of :func:`compare_table` as a plain-text table aligned for a terminal:
    a header line, a rule, one line per row (numbers right-aligned), no trailing
    newline."""
    cells = [[fmt(r) for _, _, fmt, _ in TABLE_COLUMNS] for r in rows]
    headers = [h for _, h, _, _ in TABLE_COLUMNS]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    numeric = [num for *_, num in TABLE_COLUMNS]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out.extend(line(c) for c in cells)
    return "\n".join(out)


def rich_table(rows: Sequence[dict], title: str | None = None):
    """Rows of :func:`compare_table` as a ``rich.table.Table`` (same columns as
    :func:`format_table`; failed invariants in red)."""
    from rich.table import Table

    table = Table(title=title)
    for _, header, _, num in TABLE_COLUMNS:
        table.add_column(header, justify="right" if num else "left")
    for r in rows:
        values = [fmt(r) for _, _, fmt, _ in TABLE_COLUMNS]
        values[-1] = "[green]ok[/green]" if r["invariants_ok"] else "[bold red]FAIL[/bold red]"
        table.add_row(*values)
    return table
