"""``opendcn reproduce duo``: the evaluation of Duo (Zerwas et al., POMACS 7(1), 2023, §4)
on shortened runs of the packet engine, with the paper's stated trends checked.

Designs: ``duo`` (de Bruijn backbone + DA links, greedy LPM routing, Greedy-DA every ρ),
``segr`` (the same fabric, DA links only as direct one-hop links), ``exp`` (a static
8-regular expander, k-shortest paths) and ``opera`` at Duo's size (64 racks x 8 uplinks x
8 hosts, 10 Gb/s, 10 µs reconfiguration, NDP below 15 MB and RotorLB above, 5 expander
paths per ToR pair and slice: the configuration of Opera's published evaluation). Load is a fraction of the total ToR uplink capacity (= host-side bandwidth, 8
hosts x 10 Gb/s per ToR). Experiments:

- **permutation**: 500 KB flows, Poisson arrivals, a rack-level random permutation; the
  delivered throughput over the second half of each run (steady state) at the top load is
  compared with the DA share of the capacity k_d / k (Duo, SEGR) and with Opera's VLB
  bound (1/2 of the capacity); printed beside it: the throughput in each quarter of the
  run, and Duo and SEGR with equal-length ports hashed per flow (the default, as the
  authors' simulator does, draws a port per packet at every hop);
- **heavy-tailed workloads** (the Opera/Duo tables of data mining, web search and Hadoop
  inter-rack): delivered volume per design and load;
- **FCT by flow size** (data mining, 40 % load): p99 per bucket;
- **path length**: traffic-weighted mean ToR hops per design and load, Duo's one-hop DA
  share of the delivered payload and its DA ports' share of the wire bytes;
- **sensitivity** of Duo to ρ and the duty cycle ε = (ρ - δ) / ρ, and the effect of the
  NDP/TCP threshold f_th on the FCT of flows under 10 KB;
- **scale-out**: Duo, SEGR and EXP at three sizes;
- **skewed traffic**: a random share of the racks active, each at its full host-side rate
  (data mining sizes), Duo vs Opera.

Decisions (see the printed header): runs are short (the paper runs 10 s per point; 1 s of
Duo at 64 racks and 50 % load costs about 9 min of CPU here). Greedy-DA needs several
update periods per run, so quick mode scales ρ and δ by 1/10 together (ρ = 1 ms,
δ = 10 µs), keeping ε = 99 %; full mode keeps the paper's ρ = 10 ms and δ = 100 µs and
runs 100 ms (10 periods) per point. A ``duration`` override shorter than 4 ρ scales ρ to a
quarter of the run and δ to ρ / 100 (ε kept). Claims that depend on ρ (through the DA
links' reaction time) say so. Heavy-tailed workloads carry most of their bytes in flows
of tens to hundreds of MB that cannot finish in a short run: the delivered volume of a
short run is not the paper's 10-s steady state, and buckets with too few completed flows
are NOT-CHECKABLE, never read.

Which runs decide a heavy-tailed claim (delivered volume, FCT by size, path length and
one-hop share, sensitivity, f_th, scale-out, skewed traffic): only runs that can deliver
at least ``CARRYABLE`` = 0.85 of the bytes they offer (:func:`carryable`: a flow of S bytes
arriving in a run of T finishes at best if it arrives S / 10 Gb/s before the end). Data
mining's flows reach 1 GB, so a 20-ms run can deliver 3 % of its bytes, 100 ms 9 %, 1 s
45 %, the paper's 10 s 94 % (web search: 56 % at 20 ms, 99.7 % at the paper's 3 s); below
the threshold the network carries a fraction of the nominal load and the claim is
NOT-CHECKABLE with what was measured. Duo's and SEGR's path mix, path length and duty
cycle are read over [2 rho, end] (``warmup``): the first period runs on DA links set from
no demand, the first update serves the backlog they left.

Every run's invariants are checked (exact byte conservation, no optical collision, no
guardband violation) and one point is run twice to check determinism.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any, Callable

from ..errors import ConfigError
from .base import (open_reference, FAIL, NOT_CHECKABLE, PASS, Claim, Loaded, MissingReference, Reference, Runner, exit_code,
                   missing_reference, write_json)
from .base import fmt as _fmt
from .base import text_table as _table
from .base import write_page
from ..experiments.plots import figure, save
from ..units import parse_time

#: designs of the paper's main comparison
ARCHS = ("duo", "segr", "exp", "opera")
#: the Opera/Duo flow-size tables (Opera's simulator ships them; the Duo paper uses them)
WORKLOADS = {"datamining": "datamining-opera", "websearch": "websearch-opera", "hadoop": "hadoop-interrack"}
#: Opera's expander paths per ToR pair and slice: "the default configuration as provided
#: with the original paper" (§4.1.3) — Opera's published Figure 8-10 runs keep 5 shortest
#: paths per pair and slice and draw one per packet
OPERA_PATHS = 5
#: Duo's and SEGR's path mix, path length, link use and duty cycle are read after this many
#: update periods: during the first the DA links are Greedy-DA's answer to no demand
#: (random), and the first update serves a demand inflated by the backlog they left
WARMUP_PERIODS = 2
#: fewest completed flows in a size bucket for its p99 to be read
MIN_BUCKET = 20
#: claim texts, in the order they are printed and stored
CLAIMS = (
    "permutation: Duo and SEGR saturate near the DA share of capacity k_d/k",
    "permutation: Opera saturates near its VLB bound",
    "permutation: EXP far lower than Duo",
    "heavy-tailed workloads: Duo delivers the most",
    "heavy-tailed workloads: Opera and EXP align",
    "small flows: Duo has the lowest p99 FCT",
    "1-15 MB flows: Opera has a lower p99 FCT than Duo",
    "flows above 15 MB: the p99 FCT curves converge",
    "path length: Duo's is the shortest at low load",
    "path length: Duo's one-hop DA share falls as load grows",
    "sensitivity: delivered volume does not grow as the duty cycle falls",
    "f_th: flows under 10 KB have a higher p99 FCT without the NDP/TCP split (f_th = 0)",
    "scale-out: Duo's advantage over EXP and SEGR grows with n",
    "skewed traffic: Duo beats Opera when fewer than half of the racks are active",
    "skewed traffic: Opera catches up with Duo when half of the racks or more are active",
    "every run: exact conservation, 0 collisions, 0 guardband violations",
    "deterministic (same seed, same summary)",
)


def _is_pow2(n: int) -> bool:
    return n >= 4 and n & (n - 1) == 0


def plan(quick: bool, tors: int | None = None, duration: str | None = None, seed: int = 1) -> dict[str, Any]:
    """The study's parameters for a mode and the overrides (sizes, loads, ρ, δ, durations)."""
    n = tors or 64
    if not _is_pow2(n):
        raise ConfigError("tors", n, "Duo needs n = 2**d racks (k_s = 2, d >= 2): 16, 32, 64, 128, 256, ...")
    dur = duration or ("20ms" if quick else "100ms")
    dur_ps = parse_time(dur, "duration")
    # the permutation keeps every design near saturation: 2.5 s of CPU per simulated ms
    # for Duo at 80 % load, so quick mode runs it shorter (its 500 KB flows settle in
    # well under a millisecond)
    perm = duration or ("4ms" if quick else "100ms")
    rho, delta = (1_000_000_000, 10_000_000) if quick else (10_000_000_000, 100_000_000)
    scaled = "rho and delta / 10 (duty cycle kept)" if quick else "the paper's"
    short = min(dur_ps, parse_time(perm, "duration"))
    if short < 4 * rho:
        rho = max(short // 4, 1_000_000)
        delta = max(rho // 100, 1)
        scaled = "rho = duration / 4, delta = rho / 100 (duty cycle kept)"
    eps = (rho - delta) / rho
    if quick:
        loads = {"permutation": [0.3, 0.8], "datamining": [0.1, 0.4, 0.6], "websearch": [0.4], "hadoop": [0.4]}
        scale = [max(4, n // 4), max(4, n // 2), n]
        active = [0.125, 0.25, 0.5, 0.75]
        rhos = [max(rho // 10, 1_000_000), rho]
        epss = [0.5, 0.9, eps]
        fths = ["0B", "100KB", "1MB", "15MB"]
    else:
        ladder = [round(0.1 * k, 1) for k in range(1, 9)]
        loads = {"permutation": ladder, "datamining": ladder, "websearch": ladder, "hadoop": ladder}
        scale = [n, 2 * n, 4 * n]
        active = [0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 1.0]
        rhos = [rho // 10, rho, 5 * rho]
        epss = [0.5, 0.7, 0.9, eps]
        fths = ["0B", "100KB", "1MB", "15MB"]
    return {"tors": n, "uplinks": 8, "hosts_per_tor": 8, "k_s": 2, "k_d": 6, "duration": dur,
            "duration_ps": dur_ps, "perm_duration": perm, "perm_duration_ps": parse_time(perm, "duration"),
            "rho_ps": rho, "delta_ps": delta, "epsilon": eps, "rho_scaling": scaled,
            "loads": loads, "fct_load": 0.4, "opera_max_load": 0.6, "scale": scale, "active": active,
            "rhos_ps": rhos, "epsilons": epss, "f_ths": fths, "seed": seed}


def _eps_delta(rho: int, eps: float) -> int:
    """δ for a period ρ and duty cycle ε = (ρ - δ) / ρ (whole picoseconds)."""
    return max(0, round(rho * (1 - eps)))


def _row(label: str, r: Loaded, dur_ps: int, derive: Callable[..., Any] | None = None,
         **extra: Any) -> dict[str, Any]:
    s = r.summary
    derive = derive or (lambda x, _key, fn: fn(x))
    m = s.get("arch_metrics", {})
    b = s["bytes"]
    ok = bool(s["invariants"]["ok"]) and s["fabric"] == {"collisions": 0, "guardband_violations": 0} \
        and b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"]
    pm = m.get("path_mix") or {}
    # Duo and SEGR: the path metrics over [warm-up, end] when the run measured them
    st = m.get("after_warmup") or {}
    row = {"config": label, **extra, "goodput": float(s["goodput_normalized"]),
           "steady": derive(r, "steady", lambda x: _steady(x, dur_ps)),
           "delivered_gb": b["delivered"] / 1e9, "offered_gb": b["offered"] / 1e9,
           "mean_path_length": st.get("mean_path_length", m.get("mean_path_length")),
           "one_hop_share": pm.get("one_hop"),
           "one_hop_da_share": st.get("one_hop_da_share", m.get("one_hop_da_share")),
           "mixed_share": st.get("multi_hop_mixed_share", m.get("multi_hop_mixed_share")),
           "from_ms": st["from_ps"] / 1e9 if st else 0.0, "steady_duty_cycle": st.get("duty_cycle"),
           "da_wire_share": (m.get("da_link_bytes") or {}).get("share"), "duty_cycle": m.get("duty_cycle"),
           "completed": s["flows"]["completed"], "started": s["flows"]["started"],
           "reconf_drop_pkts": int(s["packets"]["dropped"].get("reconfiguration", 0))
           if isinstance(s.get("packets", {}).get("dropped"), dict) else None,
           "header_drops": int(s["packets"]["dropped"].get("header_overflow", 0))
           if isinstance(s.get("packets", {}).get("dropped"), dict) else None,
           "duplicate_gb": s.get("packets", {}).get("duplicate_bytes", 0) / 1e9,
           "da_util": ((m.get("link_classes") or {}).get("demand_aware") or {}).get("utilisation"),
           "trim_share": (s.get("packets", {}).get("trimmed", 0) / s["packets"]["sent"]
                          if s.get("packets", {}).get("sent") else None),
           "static_util": ((m.get("link_classes") or {}).get("static") or {}).get("utilisation"),
           "invariants_ok": ok, "wall_s": s["wall_s"]}
    if row["mean_path_length"] is None:
        row["mean_path_length"] = _path_length(s)
    if not b["delivered"]:
        # nothing delivered: no path to average over
        row.update(mean_path_length=None, one_hop_share=None, one_hop_da_share=None, mixed_share=None)
    return row


def _path_length(s: dict[str, Any]) -> float | None:
    """Traffic-weighted mean ToR-to-ToR hops from the summary (the engine counts the host
    downlink as one hop): for designs without Duo's metrics (Opera)."""
    by = {int(h): int(v) for h, v in s.get("delivered_bytes_by_hops", {}).items()}
    tot = sum(by.values())
    return sum((h - 1) * v for h, v in by.items()) / tot if tot else None


def _steady(r: Loaded, dur_ps: int) -> float:
    """Delivered throughput over the second half of the run, normalised to the total ToR
    uplink capacity (the network rows of the time series); the whole run's goodput if the
    run has no series."""
    s = r.summary
    f = r.folder / "timeseries.parquet"
    if not f.exists():
        return float(s["goodput_normalized"])
    import numpy as np
    import pyarrow.parquet as pq

    ts = pq.read_table(f, columns=["time_ps", "node", "delivered_bytes"])
    node = np.asarray(ts["node"])
    t = np.asarray(ts["time_ps"])[node == -1]
    v = np.asarray(ts["delivered_bytes"].fill_null(0))[node == -1]
    sel = t > dur_ps // 2
    if not sel.any():
        return float(s["goodput_normalized"])
    # the samples after the half: bytes delivered in (t_prev, t]
    t0 = t[~sel].max() if (~sel).any() else 0
    span = t[sel].max() - t0
    cap = s["goodput_normalized"] and s["bytes"]["delivered"] / s["goodput_normalized"] / dur_ps
    if not span or not cap:
        return float(s["goodput_normalized"])
    return float(v[sel].sum() / (cap * span))


def _quarters(r: Loaded, dur_ps: int) -> list[float] | None:
    """Delivered throughput in each quarter of the run (normalised to the uplink
    capacity): whether a short run has reached its steady state."""
    s = r.summary
    f = r.folder / "timeseries.parquet"
    if not f.exists() or not s["goodput_normalized"]:
        return None
    import numpy as np
    import pyarrow.parquet as pq

    ts = pq.read_table(f, columns=["time_ps", "node", "delivered_bytes"])
    node = np.asarray(ts["node"])
    t = np.asarray(ts["time_ps"])[node == -1]
    v = np.asarray(ts["delivered_bytes"].fill_null(0))[node == -1]
    cap = s["bytes"]["delivered"] / s["goodput_normalized"] / dur_ps        # bytes per ps of capacity
    out = []
    for q in range(4):
        lo, hi = q * dur_ps // 4, (q + 1) * dur_ps // 4
        sel = (t > lo) & (t <= hi)
        out.append(float(v[sel].sum() / (cap * (hi - lo))))
    return out


def _fct(r: Loaded) -> dict[str, Any]:
    from ..experiments.analysis import fct_stats
    from ..arch.duo import FCT_BUCKETS

    import numpy as np

    st = fct_stats(r.flows, sizes=FCT_BUCKETS)
    f = r.flows
    done = np.asarray(f["completed"])
    size = np.asarray(f["size_bytes"])
    rto = np.asarray(f["timeouts"].fill_null(0)) > 0
    # completed flows of the bucket that waited for a retransmission timeout
    return {b: {"count": st[b]["count"], "p99_us": st[b]["p99"],
                "with_timeout": int((done & rto & (size >= lo) & (size < hi)).sum())}
            for b, (lo, hi) in FCT_BUCKETS.items()}


def study(out: Path, *, quick: bool = False, tors: int | None = None, duration: str | None = None,
          seed: int = 1, reference: str | None = None, echo: Callable[[str], None] = print,
          executor: str = "local", workers: int | None = None, scheduler: str | None = None,
          progress: bool | str = False) -> int:
    """The study (see the module docstring; the signature is :class:`~.base.Study`).
    ``reference``: ``read`` renders it from the records under ``reproductions/duo/``
    (a section whose points are all recorded is judged; the claims of the others are
    NOT-CHECKABLE naming their first missing point), ``record`` runs the full study and
    writes them (``--missing``: the points without a record, each kept as it ends)."""
    ref = open_reference("duo", reference, quick or tors is not None or duration is not None)
    try:
        return _study(out, quick, tors, duration, seed, ref, echo, executor, workers, scheduler, progress)
    except MissingReference as e:
        return missing_reference("duo", out, CLAIMS, e, ref, echo, default=_jsonable)


def _study(out: Path, quick: bool, tors: int | None, duration: str | None, seed: int, ref: Reference | None,
           echo: Callable[[str], None], executor: str, workers: int | None, scheduler: str | None,
           progress: bool | str) -> int:
    P = plan(quick, tors, duration, seed)
    n, dur, dur_ps, seed = P["tors"], P["duration"], P["duration_ps"], P["seed"]
    rho, delta = P["rho_ps"], P["delta_ps"]
    kd_share = P["k_d"] / P["uplinks"]
    echo(f"reproduce duo ({'quick' if quick else 'full'}): {n} racks x {P['uplinks']} uplinks x "
         f"{P['hosts_per_tor']} hosts, 10 Gb/s, {dur} per point, permutation {P['perm_duration']} (the paper: "
         f"10 s); rho {rho / 1e9:g} ms, delta "
         f"{delta / 1e6:g} us ({P['rho_scaling']}), epsilon {P['epsilon']:.2f}; Opera: 10 us reconfiguration, "
         f"NDP < 15 MB, RotorLB above; workloads: Opera/Duo tables")
    def derivers(label: str) -> dict[str, Callable[[Loaded], Any]]:
        # what the claims read from a point's time series and flow table (see row(), fct);
        # computed as each point runs, so records made across sittings are complete
        span = P["perm_duration_ps"] if label.startswith("perm") else dur_ps
        d: dict[str, Callable[[Loaded], Any]] = {"steady": lambda r: _steady(r, span)}
        if label.startswith("perm"):
            d["quarters"] = lambda r: _quarters(r, span)
        if label.startswith(("wl/datamining/", "fth/")):
            d["fct"] = _fct
        return d

    R = Runner(out / "runs", executor=executor, workers=workers, scheduler=scheduler, progress=progress, echo=echo,
               reference=ref, derivers=derivers)
    sample = f"{max(dur_ps // 40, 1_000_000)}ps"
    perm_sample = f"{max(P['perm_duration_ps'] // 40, 1_000_000)}ps"

    def opts(arch: str, nodes: int = n, **kw: Any) -> dict[str, Any]:
        base: dict[str, Any] = {"nodes": nodes, "uplinks": P["uplinks"], "hosts_per_tor": P["hosts_per_tor"]}
        if arch in ("duo", "segr"):
            base.update(rho=f"{rho}ps", delta=f"{delta}ps", sample_interval=sample)
            # the path and link metrics are read over [2 rho, end] (see WARMUP_PERIODS)
            r_ = parse_time(kw.get("rho", f"{rho}ps"), "rho")
            base["warmup"] = f"{WARMUP_PERIODS * r_}ps"
        elif arch == "exp":
            base.update(sample_interval=sample)
        elif arch == "opera":
            base.update(paths=OPERA_PATHS)
        return {**base, **kw}

    def poisson(wl: str, load: float, **kw: Any) -> dict[str, Any]:
        return {"workload": WORKLOADS[wl], "load": load, "pattern": "uniform", **kw}

    perm_run = {"pattern": "permutation", "flow_size": "500KB"}
    S: dict[str, tuple[str, dict[str, Any], dict[str, Any], str]] = {}
    for load in P["loads"]["permutation"]:
        for a in ARCHS:
            S[f"perm/{a}@{load}"] = (a, opts(a, sample_interval=perm_sample) if a != "opera" else opts(a),
                                     {**perm_run, "load": load}, P["perm_duration"])
    # the routing's multipath granularity at the top permutation load: per packet (the
    # default: the authors' simulator draws one of a prefix's next hops per packet) vs a
    # per-flow hash
    top = max(P["loads"]["permutation"])
    for a in ("duo", "segr"):
        S[f"perm-flow/{a}@{top}"] = (a, opts(a, sample_interval=perm_sample, multipath="flow"),
                                       {**perm_run, "load": top}, P["perm_duration"])
    for wl in WORKLOADS:
        for load in P["loads"][wl]:
            for a in ARCHS:
                if a == "opera" and load > P["opera_max_load"] + 1e-9:
                    continue
                S[f"wl/{wl}/{a}@{load}"] = (a, opts(a), poisson(wl, load), dur)
    fl = P["fct_load"]
    base_key = f"wl/datamining/duo@{fl}"
    if base_key not in S:
        for a in ARCHS:
            S[f"wl/datamining/{a}@{fl}"] = (a, opts(a), poisson("datamining", fl), dur)
    for r_ in P["rhos_ps"]:
        for e in P["epsilons"]:
            S[f"sens/{r_}/{e}"] = ("duo", opts("duo", rho=f"{r_}ps", delta=f"{_eps_delta(r_, e)}ps"),
                                   poisson("datamining", fl), dur)
    for f_th in P["f_ths"]:
        S[f"fth/{f_th}"] = ("duo", opts("duo", **({} if f_th == "1MB" else {"f_th": f_th})),
                             poisson("datamining", fl), dur)
    for m in P["scale"]:
        for a in ("duo", "segr", "exp"):
            S[f"scale/{a}@{m}"] = (a, opts(a, nodes=m), poisson("datamining", fl), dur)
    for act in P["active"]:
        for a in ("duo", "opera"):
            S[f"skew/{a}@{act}"] = (a, opts(a), {"workload": WORKLOADS["datamining"], "load": 1.0,
                                                 "pattern": "skewed", "active": act}, dur)
    R.prefetch([R.point(*spec, seed=seed) for spec in S.values()], labels=list(S))

    def get(label: str) -> Loaded:
        return R.get(*S[label], seed=seed, label=label)

    all_rows: list[dict[str, Any]] = []
    #: reading records: the sections whose points are not all recorded yet, with the first
    #: missing point (their claims are NOT-CHECKABLE; the other sections are judged)
    missing: dict[str, str] = {}

    def row(label: str, span_ps: int = dur_ps, **extra: Any) -> dict[str, Any]:
        x = _row(label, get(label), span_ps, R.derive, **extra)
        all_rows.append(x)
        return x

    def section(name: str, build: Callable[[], Any], empty: Any) -> Any:
        if ref is None:
            return build()
        try:
            return build()
        except MissingReference as e:
            missing[name] = str(e)
            return empty

    # ---- permutation
    def permutation() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        perm = [row(f"perm/{a}@{L}", P["perm_duration_ps"], arch=a, load=L) for L in P["loads"]["permutation"]
                for a in ARCHS]
        for x in perm:
            q = R.derive(get(f"perm/{x['arch']}@{x['load']}"), "quarters",
                         lambda r: _quarters(r, P["perm_duration_ps"]))
            x["quarters"] = q
            x["q1"], x["q2"], x["q3"], x["q4"] = q if q else (None,) * 4
        spray = []
        for a in ("duo", "segr"):
            x = row(f"perm-flow/{a}@{top}", P["perm_duration_ps"], arch=a, load=top, multipath="flow")
            q = R.derive(get(f"perm-flow/{a}@{top}"), "quarters", lambda r: _quarters(r, P["perm_duration_ps"]))
            x["quarters"] = q
            x["q1"], x["q2"], x["q3"], x["q4"] = q if q else (None,) * 4
            spray.append(x)
        return perm, spray

    perm, spray = section("permutation", permutation, ([], []))
    echo("")
    echo("permutation (500 KB flows): goodput over the run, steady = second half, normalised to the uplink capacity")
    echo(_table(perm, ["arch", "load", "goodput", "steady", "q1", "q2", "q3", "q4", "mean_path_length",
                       "completed", "started", "invariants_ok"]))
    echo("  q1..q4: throughput in each quarter of the run (a rising q4 means the run is still in its transient)")
    echo(f"  the same at load {top} with equal-length ports hashed per flow (the default, as the authors' "
         "simulator does, draws one per packet at every hop):")
    echo(_table(spray, ["arch", "load", "multipath", "goodput", "steady", "q1", "q2", "q3", "q4", "invariants_ok"]))
    # ---- heavy-tailed workloads
    wl_rows: list[dict[str, Any]] = []

    def workload_rows(wl: str) -> list[dict[str, Any]]:
        return [row(f"wl/{wl}/{a}@{L}", workload=wl, arch=a, load=L)
                for L in sorted({*P["loads"][wl], *([fl] if wl == "datamining" else [])}) for a in ARCHS
                if f"wl/{wl}/{a}@{L}" in S]

    for wl in WORKLOADS:
        wl_rows += section(f"workload {wl}", functools.partial(workload_rows, wl), [])
    echo("")
    echo(f"heavy-tailed workloads: delivered volume (normalised goodput) and path length (Duo and SEGR: path "
         f"metrics and duty cycle over [{WARMUP_PERIODS} rho, end], from_ms; the others over the run)")
    echo(_table(wl_rows, ["workload", "arch", "load", "goodput", "delivered_gb", "offered_gb", "mean_path_length",
                          "one_hop_da_share", "mixed_share", "from_ms", "steady_duty_cycle", "da_wire_share",
                          "invariants_ok"]))
    # ---- FCT by size
    fct: dict[str, Any] = section("fct", lambda: {a: R.derive(get(f"wl/datamining/{a}@{fl}"), "fct", _fct)
                                                  for a in ARCHS}, {})
    fct_rows = [{"bucket": b, **{f"{a}_p99_us": fct[a][b]["p99_us"] if fct[a][b]["count"] else None for a in ARCHS},
                 **{f"{a}_n": fct[a][b]["count"] for a in ARCHS}} for b in fct.get("duo", {})]
    echo("")
    echo(f"p99 FCT (us) by flow size, data mining at {fl:.0%} load (n = completed flows)")
    echo(_table(fct_rows, ["bucket"] + [f"{a}_p99_us" for a in ARCHS] + [f"{a}_n" for a in ARCHS]))
    # ---- sensitivity
    sens = section("sensitivity", lambda: [
        row(f"sens/{r_}/{e}", rho_ms=r_ / 1e9, epsilon=round(e, 4), delta_us=_eps_delta(r_, e) / 1e6)
        for r_ in P["rhos_ps"] for e in P["epsilons"]], [])
    echo("")
    echo(f"sensitivity: Duo, data mining at {fl:.0%} load, update period rho x duty cycle epsilon")
    echo(_table(sens, ["rho_ms", "epsilon", "delta_us", "goodput", "duty_cycle", "mean_path_length",
                       "one_hop_da_share", "reconf_drop_pkts", "invariants_ok"]))

    def f_th_rows() -> list[dict[str, Any]]:
        fth = []
        for f_th in P["f_ths"]:
            x = row(f"fth/{f_th}", f_th=f_th)
            st = R.derive(get(f"fth/{f_th}"), "fct", _fct)
            x["under_10KB_p99_us"] = st["under_10KB"]["p99_us"]
            x["under_10KB_n"] = st["under_10KB"]["count"]
            x["10KB_100KB_p99_us"] = st["10KB_100KB"]["p99_us"]
            fth.append(x)
        return fth

    fth = section("f_th", f_th_rows, [])
    echo("")
    echo(f"f_th: Duo, data mining at {fl:.0%} load; p99 FCT of small flows")
    echo(_table(fth, ["f_th", "under_10KB_p99_us", "under_10KB_n", "10KB_100KB_p99_us", "goodput",
                      "invariants_ok"]))
    # ---- scale-out
    scale = section("scale-out", lambda: [row(f"scale/{a}@{m}", arch=a, nodes=m) for m in P["scale"]
                                          for a in ("duo", "segr", "exp")], [])
    echo("")
    echo(f"scale-out: data mining at {fl:.0%} load")
    echo(_table(scale, ["nodes", "arch", "goodput", "delivered_gb", "mean_path_length", "invariants_ok"]))
    # ---- skewed
    skew = section("skewed", lambda: [row(f"skew/{a}@{act}", arch=a, active=act) for act in P["active"]
                                      for a in ("duo", "opera")], [])
    echo("")
    echo("skewed traffic: a random share of the racks active, each at its full rate (data mining sizes)")
    echo(_table(skew, ["active", "arch", "goodput", "delivered_gb", "mean_path_length", "invariants_ok"]))
    if missing:
        echo("")
        echo("not yet recorded (these sections' claims are NOT-CHECKABLE): "
             + "; ".join(f"{k}: {v}" for k, v in missing.items()))

    # ---- the proof of concept's DistDA setting (§5)
    poc: dict[str, Any] = (poc_distda() if not R.reading else
                           {"title": "proof of concept (§5): not rendered from reference records", "rows": [],
                            "notes": []})
    echo("")
    echo(poc["title"])
    echo(_table(poc["rows"], ["time_ms", "duo40_gbps", "duo22_gbps", "duo22_da_share"]))
    for ln in poc["notes"]:
        echo("  " + ln)

    # ---- determinism: the smallest Duo point again, outside the stored tree
    det_label = f"scale/duo@{P['scale'][0]}"
    deterministic: bool | None = None
    if not R.reading:
        again = R.fresh(*S[det_label], seed=seed).summary
        first = get(det_label).summary
        deterministic = all(again[k] == first[k] for k in first if k != "wall_s")

    claims = _claims(P, perm + spray, wl_rows, fct, sens, fth, scale, skew, all_rows, kd_share, deterministic,
                     det_label, quick, missing)
    claims = _undecided(claims, P, quick)
    echo("")
    for c in claims:
        echo(c.line())
    out.mkdir(parents=True, exist_ok=True)
    data = {"mode": "reference" if R.reading else "quick" if quick else "full",
            "plan": {k: v for k, v in P.items()}, "archs": list(ARCHS), "workloads": WORKLOADS,
            "permutation": perm, "permutation_per_flow": spray, "workload_rows": wl_rows,
            "fct_p99_by_size": fct, "sensitivity": sens,
            "f_th": fth, "scale_out": scale, "skewed": skew, "poc_distda": poc,
            "runs": len({R.point(*v, seed=seed).spec_hash for v in S.values()}), "wall_s_total": sum(r["wall_s"] for r in all_rows)}
    prov = R.provenance()
    write_json(out, "duo", data, claims, prov, echo, default=_jsonable)
    _plots(out, P, perm, wl_rows, fct, sens, scale, skew)
    write_page(out, "reproduce duo", f"Duo, SEGR, EXP and Opera on opendcn's packet engine, {n} racks; see duo.json "
               "for every table.", claims,
               [("permutation", perm + spray, ["arch", "load", "multipath", "goodput", "steady", "mean_path_length"]),
                ("heavy-tailed workloads", wl_rows, ["workload", "arch", "load", "goodput", "delivered_gb",
                                                     "mean_path_length"]),
                ("scale-out", scale, ["nodes", "arch", "goodput", "delivered_gb", "mean_path_length"]),
                ("skewed traffic", skew, ["active", "arch", "goodput", "delivered_gb", "mean_path_length"])],
               sorted(f.name for f in out.glob("*.png")), provenance=prov)
    if ref is not None and ref.mode == "record":
        echo(f"recorded {R.save_reference()} reference points under {ref.root}")
    echo(f"\n{data['runs']} runs, {data['wall_s_total']:.0f} s of engine wall time (rows reusing a run counted "
         f"again); wrote {out / 'duo.json'} and plots under {out}")
    return exit_code(claims)


def _static_links(b: int, d: int) -> Callable[[int, int], set[tuple[int, int]]]:
    """The (node, port) links of the static greedy route between two ToRs of DB(b, d)."""
    from ..fabrics import debruijn

    st = debruijn.static_successors(b, d)
    tabs = debruijn.build_tables(st, b, d)

    def links(a: int, z: int) -> set[tuple[int, int]]:
        out, v = set(), a
        while v != z:
            p = debruijn.lookup(tabs[v], z)[0]
            out.add((v, p))
            v = int(st[p, v])
        return out
    return links


def _shared_link_pairs(b: int, d: int) -> list[tuple[int, int]]:
    """The first two ToR pairs (in node order, four distinct ToRs) whose static de Bruijn
    routes in DB(b, d) share a link: two elephants that contend on the backbone."""
    import itertools

    links = _static_links(b, d)
    n = b**d
    pairs = [(a, z) for a in range(n) for z in range(n) if a != z]
    for x, y in itertools.combinations(pairs, 2):
        if len({*x, *y}) == 4 and links(*x) & links(*y):
            return [x, y]
    raise ConfigError("poc", (b, d), "no two ToR pairs share a static link")


def poc_distda(duration: str = "20ms", bin_ms: float = 1.0) -> dict[str, Any]:
    """The proof of concept's setting (§5): 16 ToRs, 4 uplinks at 2.5 Gb/s, delta = 0,
    Duo(4,0) (a static DB(4,2)) vs Duo(2,2) (DB(2,4) + 2 DA switches) with DistDA
    (reservation and cooldown 200 ms), two long ToR-to-ToR elephants (4 hosts per ToR,
    one 2 GB flow per host pair) on the two ToR pairs whose DB(2,4) routes share a link:
    the delivered throughput over time, and the DA ports' share of the uplink bytes."""
    import numpy as np

    from .. import arch, workload

    hosts = 4
    pairs = _shared_link_pairs(2, 4)
    flows = workload.flows([["0us", a * hosts + h, z * hosts + h, 2_000_000_000] for a, z in pairs
                            for h in range(hosts)])
    bin_ps = round(bin_ms * 1e9)
    common = dict(nodes=16, uplinks=4, hosts_per_tor=hosts, link_rate="2.5Gbps", delta="0us",
                  sample_interval=f"{bin_ps}ps")
    duo = arch.get("duo")
    nets = {"duo40": duo.make(k_s=4, k_d=0, **common), "duo22": duo.make(k_s=2, k_d=2, da="dist", **common)}
    res = {k: n.run(flows, duration=duration, seed=1) for k, n in nets.items()}
    rows: list[dict[str, Any]] = []
    delivered: dict[str, tuple[Any, Any]] = {}
    da_bytes: dict[str, dict[int, tuple[int, int]]] = {}
    for k, r in res.items():
        ts = r.timeseries
        node = np.asarray(ts["node"])
        port = np.asarray(ts["port"])
        t = np.asarray(ts["time_ps"])
        net_rows = node == -1
        delivered[k] = (t[net_rows], np.asarray(ts["delivered_bytes"].fill_null(0))[net_rows])
        up = (node >= 0) & (port < 4)
        da = up & (port >= 2)
        tx = np.asarray(ts["tx_bytes"])
        da_bytes[k] = {int(x): (int(tx[da & (t == x)].sum()), int(tx[up & (t == x)].sum())) for x in np.unique(t[up])}
    for i, (tt, v) in enumerate(zip(*delivered["duo22"])):
        d40 = delivered["duo40"][1][i] if i < len(delivered["duo40"][1]) else 0
        on_da, allb = da_bytes["duo22"].get(int(tt), (0, 0))
        rows.append({"time_ms": tt / 1e9, "duo40_gbps": d40 * 8 / (bin_ps / 1e12) / 1e9,
                     "duo22_gbps": v * 8 / (bin_ps / 1e12) / 1e9, "duo22_da_share": on_da / allb if allb else 0.0})
    log = nets["duo22"].control_log()
    links = [e for e in log if e["event"] == "link"]
    l42 = _static_links(4, 2)
    shared42 = bool(l42(*pairs[0]) & l42(*pairs[1]))
    notes = [f"elephants: ToR pairs {pairs[0]} and {pairs[1]} (the first two whose DB(2,4) routes share a link; in "
             f"DB(4,2) they {'share one too' if shared42 else 'do not'}), 4 x 2 GB flows each, {duration}",
             "DistDA: " + "; ".join(f"link {e['src']}->{e['dst']} on DA port {e['port']} set at "
                                    f"{e['t_ps'] / 1e9:.3f} ms (request over {e['msg_hops']} static hops)"
                                    for e in links),
             "invariants: " + ", ".join(f"{k} {'ok' if r.summary['invariants']['ok'] else 'FAILED'}"
                                        for k, r in res.items())
             + f"; one-hop DA share of Duo(2,2)'s payload {res['duo22'].summary['arch_metrics']['one_hop_da_share']:.3f}"]
    return {"title": f"proof of concept (§5): 16 ToRs x 4 uplinks at 2.5 Gb/s, Duo(4,0) vs Duo(2,2) with DistDA, "
                     f"delivered Gb/s per {bin_ms:g} ms",
            "pairs": pairs, "rows": rows, "notes": notes, "log": log,
            "wall_s": {k: r.summary["wall_s"] for k, r in res.items()},
            "invariants_ok": all(r.summary["invariants"]["ok"] for r in res.values())}


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return str(v)


#: a heavy-tailed claim is decided only by runs that can deliver at least this share of
#: the bytes they offer (:func:`carryable`); the paper's 10-s runs of data mining: 0.945,
#: its 5-s scale-out runs: 0.89
CARRYABLE = 0.85
#: the paper's run per claim (§4.1.1: 10 s; web search 3 s, footnote 7; scale-out 5 s,
#: §4.2.7) and the workloads each claim reads (CLAIMS indices)
HEAVY_CLAIMS = {3: ("datamining", "websearch", "hadoop"), 4: ("datamining", "websearch", "hadoop"),
                5: ("datamining",), 6: ("datamining",), 7: ("datamining",), 8: ("datamining",), 9: ("datamining",),
                10: ("datamining",), 11: ("datamining",), 12: ("datamining",), 13: ("datamining",),
                14: ("datamining",)}
PAPER_RUN = {3: "10 s (web search 3 s)", 4: "10 s (web search 3 s)", 12: "5 s"}


def carryable(workload: str, duration_ps: int, rate_bps: float = 10e9, samples: int = 200_000) -> float:
    """The share of a workload's offered bytes that a run of ``duration_ps`` can deliver at
    all: a flow of S bytes arriving uniformly in the run finishes only if it arrives at
    least S / rate before the end, even alone at line rate, so the share is
    E[S (1 - S / (rate T))+] / E[S] (sizes drawn from the workload's CDF with a fixed seed).
    Data mining: 0.029 at 20 ms, 0.092 at 100 ms, 0.45 at 1 s, 0.945 at 10 s."""
    import numpy as np

    from ..workload.generators import get_cdf

    sizes = np.asarray(get_cdf(WORKLOADS.get(workload, workload)).sample(np.random.default_rng(1), samples), float)
    cap = rate_bps / 8 * duration_ps / 1e12
    return float((sizes * np.clip(1 - sizes / cap, 0, None)).sum() / sizes.sum()) if cap > 0 else 0.0


def _undecided(claims: list[Claim], P: dict[str, Any], quick: bool) -> list[Claim]:
    """The heavy-tailed claims whose runs cannot deliver most of what they offer become
    NOT-CHECKABLE: such a run compares the small flows and the first megabytes of the
    large ones at a fraction of the nominal load, not the paper's steady state."""
    out = []
    for i, c in enumerate(claims):
        wls = HEAVY_CLAIMS.get(i)
        dur_ps = P["duration_ps"]
        short = {w: carryable(w, dur_ps) for w in wls or ()}
        low = {w: v for w, v in short.items() if v < CARRYABLE}
        if c.status == NOT_CHECKABLE or not low:
            out.append(c)
            continue
        mode = "quick" if quick else "this run"
        out.append(Claim(c.text, NOT_CHECKABLE,
                         f"{mode}: needs runs that can carry the load they offer: a {P['duration']} run can deliver "
                         + ", ".join(f"{v:.3f} of the {w} bytes" for w, v in low.items())
                         + f" (flows to {'1 GB' if 'datamining' in low else 'hundreds of MB'} at 10 Gb/s; at least "
                         f"{CARRYABLE} needed; the paper runs {PAPER_RUN.get(i, '10 s')}), so the network carries a "
                         f"fraction of the nominal load; measured {c.status}: {c.detail}"))
    return out


def _claims(P: dict[str, Any], perm: list[dict[str, Any]], wl_rows: list[dict[str, Any]], fct: dict[str, Any],
            sens: list[dict[str, Any]], fth: list[dict[str, Any]], scale: list[dict[str, Any]],
            skew: list[dict[str, Any]], all_rows: list[dict[str, Any]], kd_share: float, deterministic: bool | None,
            det_label: str, quick: bool, missing: dict[str, str] | None = None) -> list[Claim]:
    """The claims, in :data:`CLAIMS` order. ``missing``: sections whose points have no
    reference record yet (their claims are NOT-CHECKABLE, naming the first missing point)."""
    C: list[Claim] = []
    missing = missing or {}

    def add(i: int, ok: bool | None, detail: str) -> None:
        C.append(Claim(CLAIMS[i], NOT_CHECKABLE if ok is None else PASS if ok else FAIL, detail))

    def unrecorded(ids: range, *sections: str) -> bool:
        # True (and the claims added as NOT-CHECKABLE) when one of their sections is missing
        gone = [f"{s}: {missing[s]}" for s in sections if s in missing]
        if gone:
            for i in ids:
                add(i, None, "reference: " + "; ".join(gone) + " (`opendcn reproduce duo --record --missing` "
                    "records the full study's points across sittings)")
        return bool(gone)

    rho_note = "depends on rho (DA links follow the demand once per period)"
    if not unrecorded(range(0, 3), "permutation"):
        top = max(P["loads"]["permutation"])
        pt = {r["arch"]: r for r in perm if r["load"] == top and "multipath" not in r}
        sp = {r["arch"]: r for r in perm if "multipath" in r}
        dseg = [pt["duo"]["steady"], pt["segr"]["steady"]]
        if top < kd_share:
            add(0, None, f"the top permutation load {top} is below k_d/k = {kd_share:.2f}: no saturation to observe")
        else:
            qs = "; ".join(f"{a} by quarter of the run " + ", ".join(f"{x:.3f}" for x in pt[a]["quarters"] or [])
                           for a in ("duo", "segr"))
            d = pt["duo"]
            add(0, all(abs(x - kd_share) <= 0.1 for x in dseg),
                f"steady throughput at load {top}: Duo {dseg[0]:.3f}, SEGR {dseg[1]:.3f} vs k_d/k = {kd_share:.2f} "
                f"(±0.10); {qs}; run {P['perm_duration']} (the first rho runs on DA links set from no demand); ports "
                f"hashed per flow instead of drawn per packet: Duo {sp['duo']['steady']:.3f}, SEGR "
                f"{sp['segr']['steady']:.3f}. Mechanism beyond k_d/k: Duo's DA ports {_fmt(d['da_util'])} busy over the "
                f"run, static {_fmt(d['static_util'])}; a permutation's reverse pairs have no DA link, so every flow's "
                f"ACKs and pulls return over the {P['k_s']}-port de Bruijn backbone, whose busiest ports overflow their "
                f"high-priority class ({d['header_drops']} header drops); senders then resend after the 1-ms RTO what "
                f"had arrived ({d['duplicate_gb']:.2f} GB of duplicates on the DA links), and 1500-B packets carry "
                f"1436 B of payload (k_d/k x 0.957 = {kd_share * 1436 / 1500:.3f} at best); {rho_note}")
        op = pt["opera"]
        vlb = 0.5
        add(1, abs(op["steady"] - vlb) <= 0.1 if top >= vlb else None,
            f"Opera steady throughput at load {top}: {op['steady']:.3f} vs the VLB bound 1/2 (±0.10). Mechanism: "
            f"500 KB flows are below Opera's 15 MB cutoff, so they run NDP over the expander ({OPERA_PATHS} shortest "
            f"paths per rack pair and slice, mean {_fmt(op['mean_path_length'])} ToR hops), never RotorLB's two-hop "
            f"paths to which the 1/2 bound belongs; the multi-hop paths through 8-packet queues trim "
            f"{_fmt(op.get('trim_share'))} of the data packets sent, many after they crossed upstream hops, and NDP shares "
            f"what gets through among every open flow (completed {op['completed']} of {op['started']})")
        add(2, pt["exp"]["steady"] <= 0.75 * pt["duo"]["steady"],
            f"steady throughput at load {top}: EXP {pt['exp']['steady']:.3f} vs Duo {pt['duo']['steady']:.3f} "
            f"('far lower' read as at most 3/4 of Duo's)")
    if not unrecorded(range(3, 5), *(f"workload {w}" for w in WORKLOADS)):
        # heavy-tailed: at every (workload, load), Duo's delivered volume is the largest
        groups: dict[tuple[str, float], dict[str, float]] = {}
        for r in wl_rows:
            groups.setdefault((r["workload"], r["load"]), {})[r["arch"]] = r["goodput"]
        live = {k: v for k, v in groups.items() if max(v.values()) > 0}
        add(3, all(v["duo"] >= max(v.values()) for v in live.values()) if live else None,
            "; ".join(f"{wl}@{L}: " + ", ".join(f"{a} {g:.4f}" for a, g in groups[(wl, L)].items())
                      for wl, L in sorted(groups)) + f" (short runs: transient, not the 10-s steady state; {rho_note})")
        al = [(k, v["opera"], v["exp"]) for k, v in sorted(live.items()) if "opera" in v]
        add(4, all(abs(o - e) <= 0.15 * max(o, e) for _, o, e in al) if al else None,
            "Opera vs EXP within 15 %: " + ", ".join(f"{wl}@{L}: {o:.4f} vs {e:.4f}" for (wl, L), o, e in al))
    if not unrecorded(range(5, 8), "fct"):
        # FCT by size: read only buckets with enough completed flows in every design compared

        def bucket(b: str, archs: tuple[str, ...]) -> dict[str, float] | None:
            if all(fct[a][b]["count"] >= MIN_BUCKET for a in archs):
                return {a: fct[a][b]["p99_us"] for a in archs}
            return None

        small = [b for b in ("under_10KB", "10KB_100KB") if bucket(b, ARCHS)]
        if small:
            res = {b: bucket(b, ARCHS) for b in small}
            add(5, all(v["duo"] <= min(v.values()) for v in res.values() if v),
                "; ".join(f"{b}: " + ", ".join(f"{a} {x:.1f}" for a, x in (v or {}).items()) for b, v in res.items())
                + "; completed flows that waited for a retransmission timeout (NDP/TCP RTO 1 ms): "
                + "; ".join(f"{b}: " + ", ".join(f"{a} {fct[a][b]['with_timeout']}" for a in ARCHS) for b in small))
        else:
            add(5, None, f"fewer than {MIN_BUCKET} completed small flows in some design")
        mid = bucket("1MB_15MB", ("duo", "opera"))
        counts = ", ".join(f"{a} {fct[a]['1MB_15MB']['count']}" for a in ("duo", "opera"))
        add(6, None if mid is None else mid["opera"] < mid["duo"],
            f"1-15 MB p99: Duo {mid['duo']:.0f} us, Opera {mid['opera']:.0f} us (completed: {counts})" if mid else
            f"fewer than {MIN_BUCKET} completed 1-15 MB flows (completed: {counts}); short runs also complete only the "
            "fastest of them")
        big = bucket("over_15MB", ARCHS)
        cnt = ", ".join(f"{a} {fct[a]['over_15MB']['count']}" for a in ARCHS)
        add(7, None if big is None else max(big.values()) <= 1.5 * min(big.values()),
            "p99 above 15 MB: " + ", ".join(f"{a} {x:.0f} us" for a, x in big.items()) + " (within 1.5x)" if big else
            f"fewer than {MIN_BUCKET} completed flows above 15 MB (completed: {cnt}); a 15 MB flow needs >= 12 ms at "
            f"10 Gb/s and a run of {P['duration']} completes only those that started early")
    if not unrecorded(range(8, 10), "workload datamining"):
        dm = [r for r in wl_rows if r["workload"] == "datamining"]
        low = min(r["load"] for r in dm)
        pl = {r["arch"]: r["mean_path_length"] for r in dm if r["load"] == low}
        add(8, None if pl.get("duo") is None else all(pl["duo"] < v for a, v in pl.items() if a != "duo" and v is not None),
            f"data mining at load {low}: " + ", ".join(f"{a} {_fmt(v)}" for a, v in pl.items())
            + f" (the paper at 20 %: Duo < 1.25, SEGR 1.3, Opera and EXP >= 2; Duo and SEGR measured over [{WARMUP_PERIODS} "
              f"rho, end]); {rho_note}")
        oh = sorted((r["load"], r["one_hop_da_share"]) for r in dm
                    if r["arch"] == "duo" and r["one_hop_da_share"] is not None)
        add(9, all(b[1] <= a[1] for a, b in zip(oh, oh[1:])) and oh[-1][1] < oh[0][1] if len(oh) >= 2 else None,
            "Duo share of the delivered payload on one-hop DA paths by load: "
            + ", ".join(f"{L}: {s:.3f}" for L, s in oh)
            + "; integrated multi-hop share: " + ", ".join(
                f"{r['load']}: {_fmt(r['mixed_share'])}" for r in sorted(dm, key=lambda r: r["load"]) if r["arch"] == "duo")
            + f" (the paper: one-hop DA > 0.9 below 40 %, about 0.56 at 80 %; IMH < 0.1 rising to 0.28; measured over "
              f"[{WARMUP_PERIODS} rho, end]); {rho_note}")
    if not unrecorded(range(10, 11), "sensitivity"):
        by_rho: dict[float, list[tuple[float, float]]] = {}
        for r in sens:
            by_rho.setdefault(r["rho_ms"], []).append((r["epsilon"], r["goodput"]))
        ok = True
        parts = []
        for r_, pts in sorted(by_rho.items()):
            pts.sort()
            ok &= all(a[1] <= b[1] * 1.02 for a, b in zip(pts, pts[1:]))
            parts.append(f"rho {r_:g} ms: " + ", ".join(f"eps {e:g} {g:.4f}" for e, g in pts))
        add(10, ok if any(r["goodput"] > 0 for r in sens) else None, "; ".join(parts) + " (2 % tolerance)")
    if not unrecorded(range(11, 12), "f_th"):
        f0 = next(r for r in fth if r["f_th"] == "0B")
        others = [r for r in fth if r["f_th"] != "0B"]
        if f0["under_10KB_n"] >= MIN_BUCKET and all(r["under_10KB_n"] >= MIN_BUCKET for r in others):
            add(11, all(f0["under_10KB_p99_us"] > r["under_10KB_p99_us"] for r in others),
                ", ".join(f"f_th {r['f_th']}: {r['under_10KB_p99_us']:.1f} us" for r in fth))
        else:
            add(11, None, f"fewer than {MIN_BUCKET} completed flows under 10 KB in some run")
    if not unrecorded(range(12, 13), "scale-out"):
        ratios = []
        for m in P["scale"]:
            g = {r["arch"]: r["goodput"] for r in scale if r["nodes"] == m}
            ratios.append((m, g["duo"] / g["exp"] if g["exp"] else math.inf,
                           g["duo"] / g["segr"] if g["segr"] else math.inf))
        finite = all(math.isfinite(x) for _, e, s_ in ratios for x in (e, s_))
        add(12, ratios[-1][1] > ratios[0][1] and ratios[-1][2] > ratios[0][2] if finite else None,
            "Duo/EXP and Duo/SEGR delivered: " + ", ".join(f"n={m}: {e:.3f}, {s:.3f}" for m, e, s in ratios)
            + f" (largest n vs smallest); {rho_note}")
    if not unrecorded(range(13, 15), "skewed"):
        sk: dict[float, dict[str, float]] = {}
        for r in skew:
            sk.setdefault(r["active"], {})[r["arch"]] = r["goodput"]
        below = [a for a in sk if a < 0.5 and max(sk[a].values()) > 0]
        add(13, all(sk[a]["duo"] > sk[a]["opera"] for a in below) if below else None,
            ", ".join(f"active {a:g}: Duo {v['duo']:.4f} vs Opera {v['opera']:.4f}" for a, v in sorted(sk.items()))
            + f"; {rho_note}")
        above = [a for a in sk if a >= 0.5 and max(sk[a].values()) > 0]
        add(14, any(sk[a]["opera"] >= sk[a]["duo"] for a in above) if above else None,
            "Opera at least Duo's delivered volume at some share >= 0.5: " + ", ".join(
                f"active {a:g}: Opera/Duo {sk[a]['opera'] / sk[a]['duo']:.3f}" for a in sorted(above) if sk[a]["duo"])
            + "; short runs of a heavy-tailed workload (the crossover of the paper's 10-s runs may need the steady state)")
    bad = [r["config"] for r in all_rows if not r["invariants_ok"]]
    add(15, False if bad else None if missing else True, f"{len(all_rows)} rows"
        + (f"; failed: {', '.join(bad)}" if bad else "")
        + (f"; not yet recorded: {', '.join(missing)}" if missing else ""))
    add(16, deterministic, f"{det_label} run twice" if deterministic is not None else
        "rendered from reference records, nothing run (tests/test_reference.py reruns a stored point)")
    return C


def _plots(out: Path, P: dict[str, Any], perm: list[dict[str, Any]], wl_rows: list[dict[str, Any]],
           fct: dict[str, Any], sens: list[dict[str, Any]], scale: list[dict[str, Any]],
           skew: list[dict[str, Any]]) -> None:
    def lines(ax: Any, rows: list[dict[str, Any]], x: str, y: str, key: str = "arch") -> None:
        for a in dict.fromkeys(r[key] for r in rows):
            pts = sorted((r[x], r[y]) for r in rows if r[key] == a and r[y] is not None)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=str(a))
        ax.grid(alpha=0.3)
        if rows:
            ax.legend(fontsize=7)

    # a section without its records yet has no plot (the page lists only the files there)
    if perm:
        _plot_permutation(out, P, perm, lines)
    if wl_rows:
        _plot_workloads(out, wl_rows, lines)
    if fct:
        _plot_fct(out, fct)
    if any(r["workload"] == "datamining" for r in wl_rows):
        _plot_path(out, wl_rows, lines)
    if sens:
        _plot_sens(out, sens, lines)
    if scale or skew:
        _plot_scale_skew(out, scale, skew, lines)


def _plot_permutation(out: Path, P: dict[str, Any], perm: list[dict[str, Any]], lines: Callable[..., None]) -> None:
    fig, ax = figure(5, 3.5)
    lines(ax, perm, "load", "steady")
    ax.axhline(P["k_d"] / P["uplinks"], ls="--", c="grey", lw=0.8)
    ax.set_xlabel("offered load")
    ax.set_ylabel("throughput (second half, normalised)")
    ax.set_title("permutation, 500 KB flows")
    save(fig, out / "permutation.png", title="Duo §4: throughput on a rack permutation")


def _plot_workloads(out: Path, wl_rows: list[dict[str, Any]], lines: Callable[..., None]) -> None:
    wls = list(dict.fromkeys(r["workload"] for r in wl_rows))
    fig, axes = figure(4 * len(wls), 3.3, len(wls), squeeze=False)
    for ax, w in zip(axes[0], wls):
        lines(ax, [r for r in wl_rows if r["workload"] == w], "load", "delivered_gb")
        ax.set_title(w)
        ax.set_xlabel("offered load")
        ax.set_ylabel("delivered (GB)")
    save(fig, out / "workloads.png", title="Duo §4: delivered volume on heavy-tailed workloads")


def _plot_fct(out: Path, fct: dict[str, Any]) -> None:
    fig, ax = figure(6, 3.5)
    buckets = list(next(iter(fct.values())))
    for a, st in fct.items():
        ax.plot(range(len(buckets)), [st[b]["p99_us"] if st[b]["count"] else float("nan") for b in buckets],
                marker="o", label=a)
    ax.set_xticks(range(len(buckets)), buckets, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("p99 FCT (us)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, out / "fct_by_size.png", title="Duo §4: p99 FCT by flow size (data mining, 40 % load)")


def _plot_path(out: Path, wl_rows: list[dict[str, Any]], lines: Callable[..., None]) -> None:
    fig, (a1, a2) = figure(8, 3.3, 2)
    dm = [r for r in wl_rows if r["workload"] == "datamining"]
    lines(a1, dm, "load", "mean_path_length")
    a1.set_xlabel("offered load")
    a1.set_ylabel("mean path length (ToR hops)")
    lines(a2, [r for r in dm if r["arch"] == "duo"], "load", "one_hop_da_share")
    a2.set_xlabel("offered load")
    a2.set_ylabel("Duo one-hop DA share")
    save(fig, out / "path_length.png", title="Duo §4: path length and Duo's one-hop DA share")


def _plot_sens(out: Path, sens: list[dict[str, Any]], lines: Callable[..., None]) -> None:
    fig, ax = figure(5, 3.5)
    lines(ax, sens, "epsilon", "goodput", key="rho_ms")
    ax.set_xlabel("duty cycle epsilon")
    ax.set_ylabel("goodput (normalised)")
    ax.set_title("sensitivity (legend: rho in ms)")
    save(fig, out / "sensitivity.png", title="Duo §4: sensitivity to rho and the duty cycle")


def _plot_scale_skew(out: Path, scale: list[dict[str, Any]], skew: list[dict[str, Any]],
                     lines: Callable[..., None]) -> None:
    fig, (a1, a2) = figure(8, 3.3, 2)
    lines(a1, scale, "nodes", "goodput")
    a1.set_xscale("log", base=2)
    a1.set_xlabel("racks n")
    a1.set_ylabel("goodput (normalised)")
    lines(a2, skew, "active", "goodput")
    a2.set_xlabel("share of racks active")
    a2.set_ylabel("goodput (normalised)")
    save(fig, out / "scale_skew.png", title="Duo §4: scale-out and skewed traffic")
