"""The results database: DuckDB reads a results tree in place (no import step).

A results tree is what ``opendcn sweep`` writes (``arch=A/<option>=V/.../seed=S/`` folders)
or any folder holding runs written with ``--out`` / ``Result.write``. :func:`connect`
opens an in-memory DuckDB connection with these views over it:

- ``runs``: one row per run with a ``summary.parquet`` (sweep points): its parameters
  (``arch``, ``seed``, ``load``, every architecture option), ``path`` (the run's folder,
  relative to the tree), ``spec_hash``, headline metrics (``goodput``, ``p99_mice_us``,
  ``mean_mice_us``, ``p99_all_us``, ``mean_all_us``) and every summary field flattened
  (``fct_us_mice_p99``, ``bytes_delivered``, ``drops_...``);
- ``flows``: every run's per-flow records with its ``path``;
- ``timeseries``: every run's samples with its ``path``;
- ``fct_by_size``: per run and flow-size bucket (``<10KB``, ``10KB-100KB``, ``100KB-1MB``,
  ``1MB-10MB``, ``>=10MB``), with the run's arch, load, seed and varied parameters: flows,
  completed, mean / p99 FCT (us), p99 slowdown (``smallest``: the bucket's smallest flow);
- ``goodput_vs_load``: per architecture, load and the other parameters, the mean goodput
  and p99 mice FCT over seeds.

:func:`results` returns the ``runs`` view as a DuckDB relation::

    rel = od.results("results/sweep")
    rel.filter("load > 0.3").aggregate("arch, avg(goodput)").fetchall()
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["connect", "results", "query", "VIEWS"]

VIEWS = ("runs", "flows", "timeseries", "fct_by_size", "goodput_vs_load")

_BUCKETS = """CASE WHEN size_bytes < 10000 THEN '<10KB' WHEN size_bytes < 100000 THEN '10KB-100KB'
    WHEN size_bytes < 1000000 THEN '100KB-1MB' WHEN size_bytes < 10000000 THEN '1MB-10MB' ELSE '>=10MB' END"""


def _root(path: str | os.PathLike[str]) -> Path:
    root = Path(path)
    if not root.is_dir():
        raise ConfigError("DIR", str(path), "no such results folder")
    return root.resolve()


def _lit(p: Path) -> str:
    return "'" + str(p).replace("'", "''") + "'"


def connect(path: str | os.PathLike[str]) -> Any:
    """An in-memory DuckDB connection with the views of :data:`VIEWS` over the tree."""
    import duckdb

    root = _root(path)
    con = duckdb.connect()
    prefix = len(str(root)) + 1
    have = {name: any(root.rglob(name)) for name in ("summary.parquet", "flows.parquet", "timeseries.parquet")}

    def rel(col: str) -> str:  # the run's folder relative to the tree, from a file name
        return f"regexp_replace(substr({col}, {prefix + 1}), '/[^/]*$', '')"

    if have["summary.parquet"]:
        con.execute(f"""CREATE VIEW runs AS SELECT * EXCLUDE (filename), {rel('filename')} AS path
            FROM read_parquet({_lit(root / '**' / 'summary.parquet')}, union_by_name = true,
                              hive_partitioning = false, filename = true)""")
    else:
        con.execute("CREATE VIEW runs AS SELECT NULL::VARCHAR AS path, NULL::VARCHAR AS arch, "
                    "NULL::DOUBLE AS goodput WHERE false")
    for table, name in (("flows", "flows.parquet"), ("timeseries", "timeseries.parquet")):
        if have[name]:
            con.execute(f"""CREATE VIEW {table} AS SELECT * EXCLUDE (filename), {rel('filename')} AS path
                FROM read_parquet({_lit(root / '**' / name)}, union_by_name = true,
                                  hive_partitioning = false, filename = true)""")
        else:
            con.execute(f"CREATE VIEW {table} AS SELECT NULL::VARCHAR AS path WHERE false")
    if have["flows.parquet"]:
        # each bucket with its run's architecture, load, seed and varied parameters
        run_cols = [r[0] for r in con.execute("DESCRIBE runs").fetchall()]
        keep = [c for c in dict.fromkeys(["arch", "load", "seed", *_param_columns(con)]) if c in run_cols
                and c != "path"] if have["summary.parquet"] else []
        sel = "".join(f"r.{_q(c)}, " for c in keep)
        con.execute(f"""CREATE VIEW fct_by_size AS SELECT {sel}b.* FROM (SELECT path, {_BUCKETS} AS bucket,
                count(*) AS flows, count(*) FILTER (WHERE completed) AS completed,
                avg(fct_ps) FILTER (WHERE completed) / 1e6 AS mean_fct_us,
                quantile_cont(fct_ps, 0.99) FILTER (WHERE completed) / 1e6 AS p99_fct_us,
                quantile_cont(slowdown, 0.99) FILTER (WHERE completed) AS p99_slowdown,
                min(size_bytes) AS smallest
            FROM flows GROUP BY path, bucket) b {"LEFT JOIN runs r USING (path)" if keep else ""}
            ORDER BY b.path, b.smallest""")
    else:
        con.execute("CREATE VIEW fct_by_size AS SELECT NULL::VARCHAR AS path WHERE false")
    cols = [r[0] for r in con.execute("DESCRIBE runs").fetchall()]
    if "load" in cols:
        params = [c for c in _param_columns(con) if c not in ("seed", "load")]
        keys = ", ".join(_q(c) for c in [*params, "load"])
        con.execute(f"""CREATE VIEW goodput_vs_load AS SELECT {keys}, count(*) AS runs,
                avg(goodput) AS goodput, avg(p99_mice_us) AS p99_mice_us, avg(p99_all_us) AS p99_all_us
            FROM runs GROUP BY {keys} ORDER BY {keys}""")
    else:
        con.execute("CREATE VIEW goodput_vs_load AS SELECT NULL::VARCHAR AS arch WHERE false")
    return con


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _param_columns(con: Any) -> list[str]:
    """The run parameters that differ between runs (what a sweep varied)."""
    cols = [r[0] for r in con.execute("DESCRIBE runs").fetchall()]
    try:
        names = con.execute("SELECT DISTINCT unnest(param_names) FROM runs").fetchall()
        params = [n[0] for n in names if n[0] in cols]
    except Exception:  # noqa: BLE001 - runs without a parameter list
        params = [c for c in ("arch", "seed", "load") if c in cols]
    out = []
    for c in params:
        if con.execute(f"SELECT count(DISTINCT {_q(c)}) FROM runs").fetchone()[0] > 1:
            out.append(c)
    if "arch" in cols and "arch" not in out:
        out.insert(0, "arch")
    return out


def varied(path: str | os.PathLike[str]) -> list[str]:
    """The parameters that differ between the runs of a tree (arch first)."""
    return _param_columns(connect(path))


_OPEN: list[Any] = []  # connections behind the relations handed out (a relation needs its connection)


def results(path: str | os.PathLike[str]) -> Any:
    """The ``runs`` view of a results tree as a DuckDB relation."""
    con = connect(path)
    _OPEN.append(con)
    return con.table("runs")


def query(path: str | os.PathLike[str], sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` against the views of a results tree: (column names, rows)."""
    import duckdb

    con = connect(path)
    try:
        cur = con.execute(sql)
    except duckdb.Error as e:
        raise ConfigError("SQL", sql, str(e).splitlines()[0]) from None
    if cur.description is None:
        return [], []
    return [d[0] for d in cur.description], cur.fetchall()
