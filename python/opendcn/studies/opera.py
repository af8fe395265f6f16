"""``opendcn reproduce opera``: Opera (Mellette et al., NSDI'20) against its simulator's own
published output, on opendcn's packet engine.

Two experiments, each run as points of the sweep runner on ``od.arch.opera`` at the paper's
configuration (108 ToRs x 6 rotor uplinks x 6 hosts, 10 Gb/s links, Opera's matchings,
NDP below the cutoff and RotorLB above):

- **small-flow FCT**: the datamining trace at 10 % load (``dm10``: the flows of Opera's
  10-second trace that start in its first 50 ms, quick, or 250 ms, full) replayed until
  every NDP flow is done; the sender-side FCT of every flow under 100 KB is matched, flow by
  flow, with the FCT that opera-sim printed for it in the run published with the paper
  (``data/opera/opera_sim_fct_dm10_first250ms.txt``, provenance in ``data/opera/SOURCES.md``:
  the same trace run in full, Figure 7). Checked: p50 and p99 within 10 %, run as opera-sim
  runs: its per-flow pull pacer (``--pull-pacer flow``), its packet sizes (``--pad-segments``:
  ``NdpSrc::set_flowsize`` makes every packet of a flow of at least one MSS a full MSS) and
  its NIC's bulk slots (``--bulk-slots``: ``PriorityQueue`` serves RotorLB in 1 500-B slots,
  a dummy packet when none is due, ``RlbModule::NICpull``) and its NIC push-back
  (``--nic-push``: a committed bulk packet pushed back for every 1 500 B of other traffic,
  ``RlbModule::NICpush``); the per-flow pacer alone and
  opendcn's defaults are printed beside it. One path per pair, as that run
  (``Figure7_datamining/opera/sim/run.sh``: ``-topfile dynexp_N=108_k=12_1path.txt``).
- **throughput against load** (Figure 10): an all-to-all shuffle of 100-KB flows between
  every pair of hosts in different racks (RotorLB: opera-sim's ``-rlbflow 100000``) on top of
  websearch low-latency traffic (NDP, Poisson, uniform over inter-rack host pairs) at a
  fraction of the host capacity; throughput is what the ToRs send their hosts, over the
  host capacity, during the shuffle. Checked against the points the paper's plot script lists
  (``Figure10_combined_shuffle_websearch/plotter.m``: 0.97 at 0.01 %, 0.93 at 1 %, ..., 0.50
  at 10 %): each within 0.1, and falling as the low-latency load grows. Five shortest paths
  per ToR pair and slice, one drawn per packet (``--paths 5``), as the published run
  (``Figure10_combined_shuffle_websearch/opera/sim/run.sh``: ``-topfile
  dynexp_N=108_k=12_5paths.txt``; opera-sim draws ``random() % npaths`` per packet at the
  source NIC, ``src/opera/queue.cpp``).

DECIDE (printed with the results): the shuffle starts after 100 ms of low-latency traffic
in the full study, as in the published run (``.../opera/traffic_gen/generate_traffic.m``: "all
bulk flows start 100 ms into the simulation"), 5 ms in quick mode, which therefore cannot
decide the throughput claim (the 10 % point gives 0.620 after 10 ms and 0.559 after 100 ms:
websearch's long flows are still building up); throughput is measured over the shuffle's
first 30 ms (10 ms quick) after its first millisecond, the published figure being read off
opera-sim's utilisation plot (``plotter.m``: "hand-entered the throughputs processed using
process_FCT_and_UTIL.m"), in its units: every byte the ToRs send on their host downlinks
(headers and control packets included, opera-sim's ``UtilMonitor``) over those links'
capacity, from the watched downlink ports; the payload received is printed beside it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError
from ..rng import stream
from .base import (FAIL, NOT_CHECKABLE, PASS, Claim, MissingReference, Reference, Runner, echo_study, exit_code,
                   missing_reference, open_reference, run_ok, write_json, write_page)
from ..experiments.plots import figure, save
from ..units import parse_time

__all__ = ["study", "PUBLISHED_THROUGHPUT", "published_fct", "mix_trace", "window_throughput", "downlink_utilisation",
           "FIG10_PATHS", "CLAIMS"]

DATA = Path(__file__).resolve().parents[1] / "data" / "opera"
#: opera-sim Figure 10 (its plotter.m): websearch load -> throughput of Opera
PUBLISHED_THROUGHPUT = {0.0001: 0.97, 0.01: 0.93, 0.025: 0.87, 0.05: 0.76, 0.07: 0.70, 0.08: 0.66, 0.09: 0.62,
                        0.1: 0.50}
HOSTS_PER_TOR, TORS = 6, 108
SHUFFLE_BYTES = 100_000
#: shortest paths per ToR pair and slice of opera-sim's published Figure 8-10 runs
#: (dynexp_N=108_k=12_5paths.txt); its Figure 7 run used one (dynexp_N=108_k=12_1path.txt)
FIG10_PATHS = 5
#: opera-sim's published FCTs of the 10 % websearch run (Figure 9, 5 paths), over the flows
#: under 100 KB of each shipped cut of its trace: (flows, p50 us, p99 us). Read from
#: ``Figure9_websearch/opera/sim/FCT_cwnd20_10perc_LL_5paths.txt`` of opera-sim's repository
#: (commit c09861386c21b5f53cfa80e5dacbbe02483d4918, blob 9dabdb0aa6f765cbc31b64352e42eaa1b1f59b53,
#: 43 070 flows of the 1-s trace), every small flow of the cut found there
PUBLISHED_WS10 = {"ws10_first50ms": (1206, 74.463, 233.216), "ws10_first250ms": (5810, 83.929, 268.094)}
#: the small-flow FCT runs: ``opera-sim`` as opera-sim runs (the judged one: per-flow pull
#: pacer, its packet sizes and its NIC's bulk slots), ``flow`` with only its pull pacer,
#: ``host`` opendcn's defaults
FCT_VARIANTS: dict[str, dict[str, Any]] = {
    "opera-sim": {"pull_pacer": "flow", "pad_segments": True, "bulk_slots": True, "nic_push": True},
    "flow": {"pull_pacer": "flow"},
    "host": {"pull_pacer": "host"},
}
#: the study's claims at full scale, in order (a page rendered from incomplete reference
#: records lists each as NOT-CHECKABLE)
CLAIMS = [
    "small flows (< 100 KB) of dm10_first250ms: sender-side FCT p50 and p99 within 10 % of opera-sim's published "
    "run (same flows, matched one by one)",
    "websearch (ws10_first250ms, Figure 9): small-flow (< 100 KB) sender-side FCT p50 and p99 within 10 % of "
    "opera-sim's published run",
    "shuffle + websearch (Figure 10): throughput falls as the low-latency load grows, each point within 0.1 of the "
    "published one",
    "every run: exact conservation, 0 collisions, 0 guardband violations",
    "deterministic (same seed, same summary and trace hash)",
]


def published_fct() -> dict[tuple[int, int, int, int], float]:
    """opera-sim's published FCTs of the dm10 flows starting in the first 250 ms:
    (src host, dst host, bytes, start ns) -> sender-side FCT in ps."""
    out: dict[tuple[int, int, int, int], float] = {}
    for line in (DATA / "opera_sim_fct_dm10_first250ms.txt").read_text().splitlines():
        if line.startswith("FCT "):
            _, a, b, size, fct_ms, start_ms = line.split()
            out[(int(a), int(b), int(size), round(float(start_ms) * 1e6))] = float(fct_ms) * 1e9
    return out


def mix_trace(folder: Path, load: float, warm_ps: int, end_ps: int, rate_bps: float, seed: int, *,
              tors: int = TORS, hpr: int = HOSTS_PER_TOR) -> Path:
    """The Figure-10 traffic as an htsim flow file (``src dst bytes start_ns``): websearch
    Poisson flows over inter-rack host pairs at ``load`` of the host capacity from t = 0,
    and at ``warm_ps`` one 100-KB flow between every pair of hosts in different racks."""
    from ..workload import get_cdf

    cdf = get_cdf("websearch-opera")
    hosts = tors * hpr
    rng = stream(seed, f"reproduce.opera.mix.{load}")
    lam = hosts * load * rate_bps / 8 / cdf.mean                 # flows per second, network-wide
    n = int(rng.poisson(lam * end_ps / 1e12))
    starts = np.sort(rng.uniform(0, end_ps / 1000, size=n)).astype(np.int64)   # ns
    sizes = cdf.sample(rng, n)
    src = rng.integers(hosts, size=n)
    # uniform over the hosts of the other racks
    off = rng.integers(hosts - hpr, size=n)
    first = (src // hpr) * hpr
    dst = np.where(off < first, off, off + hpr)
    lines = [f"{a} {b} {s} {t}" for a, b, s, t in zip(src.tolist(), dst.tolist(), sizes.tolist(), starts.tolist())]
    w_ns = warm_ps // 1000
    lines += [f"{a} {b} {SHUFFLE_BYTES} {w_ns}" for a in range(hosts) for b in range(hosts)
              if a // hpr != b // hpr]
    text = "\n".join(lines)
    h = hashlib.sha256(text.encode()).hexdigest()[:12]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"mix_{load:g}_{h}.htsim"
    if not path.exists():
        tmp = folder / f".{path.name}.tmp"
        tmp.write_text(text)
        tmp.replace(path)
    return path


def window_throughput(timeseries: Any, lo_ps: int, hi_ps: int, hosts: int, rate_bps: float) -> float:
    """What the hosts received in the samples ending in (lo_ps, hi_ps], over the hosts'
    capacity in that time (the network-wide rows, node -1, of a packet run's series)."""
    t = timeseries.to_pydict()
    tt = np.asarray(t["time_ps"])
    dv = np.asarray([x if x is not None else 0 for x in t["delivered_bytes"]], float)
    sel = (np.asarray(t["node"]) == -1) & (tt > lo_ps) & (tt <= hi_ps)
    return float(dv[sel].sum() * 8 / (hosts * rate_bps * (hi_ps - lo_ps) / 1e12))


def downlink_utilisation(timeseries: Any, lo_ps: int, hi_ps: int, uplinks: int, hosts: int, rate_bps: float) -> float:
    """opera-sim's throughput (its ``UtilMonitor``): every byte the ToRs sent on their host
    downlinks (headers and control packets included) in the samples ending in (lo_ps, hi_ps],
    over those links' capacity; read from the watched ports (local index >= ``uplinks``)."""
    t = timeseries.to_pydict()
    tt, node, port = np.asarray(t["time_ps"]), np.asarray(t["node"]), np.asarray(t["port"])
    tx = np.asarray([x if x is not None else 0 for x in t["tx_bytes"]], float)
    sel = (node >= 0) & (port >= uplinks) & (tt > lo_ps) & (tt <= hi_ps)
    return float(tx[sel].sum() * 8 / (hosts * rate_bps * (hi_ps - lo_ps) / 1e12))


def study(out: Path, *, quick: bool = False, tors: int | None = None, duration: str | None = None,
          seed: int = 1, reference: str | None = None, echo: Callable[[str], None] = print,
          executor: str = "local", workers: int | None = None, scheduler: str | None = None,
          progress: bool | str = False) -> int:
    """The study (see the module docstring; the signature is :class:`~.base.Study`).
    ``reference``: ``read`` renders it from the records under ``reproductions/opera/``
    (every claim NOT-CHECKABLE naming what is missing when a record is), ``record`` runs the
    full study and writes them."""
    if tors is not None:
        raise ConfigError("tors", tors, "Opera's study runs the paper's 108 ToRs (the traces name its 648 hosts)")
    ref = open_reference("opera", reference, quick or duration is not None)
    try:
        return _study(out, quick, duration, seed, ref, echo, executor, workers, scheduler, progress)
    except MissingReference as e:
        return missing_reference("opera", out, CLAIMS, e, ref, echo)


def _fct_row(r: Any, pacer: str, theirs: dict[tuple[int, int, int, int], float]) -> dict[str, Any]:
    """Percentiles of the sender-side FCTs of the small flows matched with opera-sim's."""
    d = r.flows.to_pydict()
    ours, pub = [], []
    for a, b, size, start, fct in zip(d["src"], d["dst"], d["size_bytes"], d["start_ps"], d["sender_fct_ps"]):
        k = (a, b, size, start // 1000)
        if size < 100_000 and fct is not None and k in theirs:
            ours.append(fct)
            pub.append(theirs[k])
    o, p = np.asarray(ours, float) / 1e6, np.asarray(pub, float) / 1e6
    row: dict[str, Any] = {"pull_pacer": pacer, "matched_flows": len(o)}
    for q in (50, 90, 99):
        row[f"p{q}_us"] = float(np.percentile(o, q)) if len(o) else None
        row[f"opera_sim_p{q}_us"] = float(np.percentile(p, q)) if len(p) else None
    row["median_ratio"] = float(np.median(o / p)) if len(o) else None
    return row


def _small_fct(r: Any) -> dict[str, Any]:
    """Count and percentiles of the sender-side FCTs of the completed flows under 100 KB."""
    d = r.flows.to_pydict()
    v = np.asarray([f for n, f in zip(d["size_bytes"], d["sender_fct_ps"]) if n < 100_000 and f is not None],
                   float) / 1e6
    return {"flows": len(v), "p50_us": float(np.percentile(v, 50)) if len(v) else 0.0,
            "p99_us": float(np.percentile(v, 99)) if len(v) else 0.0}


def _mix_metrics(r: Any, lo_ps: int, end_ps: int, rate: float) -> dict[str, Any]:
    """What the Figure-10 claim reads from a mix point's tables: opera-sim's throughput (host
    downlinks, every byte) and the payload received over the window, and the shares of the
    shuffle and the low-latency flows completed."""
    thr = window_throughput(r.timeseries, lo_ps, end_ps, TORS * HOSTS_PER_TOR, rate)
    util = downlink_utilisation(r.timeseries, lo_ps, end_ps, HOSTS_PER_TOR, TORS * HOSTS_PER_TOR, rate)
    fl = r.flows.to_pydict()
    bulk = np.asarray(fl["size_bytes"]) == SHUFFLE_BYTES
    done = np.asarray(fl["completed"], bool)
    return {"throughput": util, "payload_throughput": thr, "shuffle_done": float(done[bulk].mean()), "ll_flows": int((~bulk).sum()),
            "ll_done": float(done[~bulk].mean()) if (~bulk).any() else None}


def _study(out: Path, quick: bool, duration: str | None, seed: int, ref: Reference | None,
           echo: Callable[[str], None], executor: str, workers: int | None, scheduler: str | None,
           progress: bool | str) -> int:
    trace = "dm10_first50ms" if quick else "dm10_first250ms"
    loads = [0.01, 0.05, 0.1] if quick else sorted(PUBLISHED_THROUGHPUT)
    warm_ps = parse_time("5ms" if quick else "100ms", "warmup")
    window_ps = parse_time(duration or ("10ms" if quick else "30ms"), "duration")
    if window_ps < parse_time("1ms", "duration"):
        raise ConfigError("duration", duration, "the throughput window needs at least 1ms")
    end_ps = warm_ps + window_ps
    rate = 10e9
    echo(f"reproduce opera ({'quick' if quick else 'full'}): {trace} until NDP is done; shuffle + websearch at "
         f"loads {loads}, shuffle at {warm_ps / 1e9:g} ms, throughput over {window_ps / 1e9:g} ms")
    R = Runner(out / "runs", executor=executor, workers=workers, scheduler=scheduler, progress=progress, echo=echo,
               reference=ref)
    S: dict[str, tuple[str, dict[str, Any], dict[str, Any], str]] = {}
    trace_file = str(DATA / "traces" / f"{trace}.htsim")
    for variant, kw in FCT_VARIANTS.items():
        S[f"fct/{variant}"] = ("opera", {"stop_when": "ndp-done", **kw}, {"flows_file": trace_file}, "10s")
    # the ToRs' host downlinks, where opera-sim's monitor counts its throughput
    downlinks = ",".join(f"{t}:{HOSTS_PER_TOR + h}" for t in range(TORS) for h in range(HOSTS_PER_TOR))
    ws = "ws10_first50ms" if quick else "ws10_first250ms"
    # every websearch flow is low-latency: the published run's cutoff is 30 MB (Figure9_websearch/opera/sim/run.sh:
    # -cutoff 30000000), above the trace's largest flow (28.6 MB)
    S["fct/ws10"] = ("opera", {"stop_when": "ndp-done", **FCT_VARIANTS["opera-sim"], "paths": FIG10_PATHS,
                               "cutoff": "30MB"},
                     {"flows_file": str(DATA / "traces" / f"{ws}.htsim")}, "10s")
    for load in loads:
        path = mix_trace(out / "traces", load, warm_ps, end_ps, rate, seed)
        S[f"mix/{load}"] = ("opera", {"transport": "rotorlb=100KB,ndp<30MB,rotorlb", "pull_pacer": "flow",
                                      "paths": FIG10_PATHS, "sample_interval": "1ms", "watch": downlinks},
                            {"flows_file": str(path)}, f"{end_ps}ps")
    R.prefetch(R.point(*spec, seed=seed) for spec in S.values())

    def get(label: str) -> Any:
        return R.get(*S[label], seed=seed, label=label)

    every_ok: list[bool] = []
    claims: list[Claim] = []
    # ---- small-flow FCT against opera-sim's published run
    theirs = published_fct()
    fct_rows: list[dict[str, Any]] = []
    for variant, kw in FCT_VARIANTS.items():
        r = get(f"fct/{variant}")
        every_ok.append(run_ok(r.summary))
        row = {"setting": variant,
               **R.derive(r, "fct", lambda r_: _fct_row(r_, str(kw.get("pull_pacer", "host")), theirs)),
               "wall_s": r.summary["wall_s"]}
        fct_rows.append(row)
    f0 = fct_rows[0]
    if f0["matched_flows"]:
        r50 = f0["p50_us"] / f0["opera_sim_p50_us"]
        r99 = f0["p99_us"] / f0["opera_sim_p99_us"]
        claims.append(Claim(f"small flows (< 100 KB) of {trace}: sender-side FCT p50 and p99 within 10 % of opera-sim's "
                            "published run (same flows, matched one by one)",
                            PASS if abs(r50 - 1) <= 0.1 and abs(r99 - 1) <= 0.1 else FAIL,
                            f"{f0['matched_flows']} flows; p50 {f0['p50_us']:.1f} vs {f0['opera_sim_p50_us']:.1f} us "
                            f"(x{r50:.3f}), p99 {f0['p99_us']:.1f} vs {f0['opera_sim_p99_us']:.1f} us (x{r99:.3f}); "
                            "run as opera-sim runs: one path per pair, per-flow pull pacer, every packet of a flow of at "
                            "least one MSS a full MSS on the wire (`--pad-segments`) and the NIC serving RotorLB in "
                            "full-packet slots, idle when no bulk packet is due (`--bulk-slots`), pushing a committed "
                            "bulk packet back for every 1 500 B of other traffic it sends (`--nic-push`, "
                            "RlbModule::NICpush); side by side on the same "
                            "fabric (benchmarks/opera_sim, opera-sim built from its repository) six isolated flows of "
                            "1 000 B to 50 KB then finish to the picosecond as in opera-sim, and a 1 000-B flow sent while "
                            "its host holds bulk data takes 0.80 us longer in both; without these (" + ", ".join(
                                f"{x['setting']}: p50 x{x['p50_us'] / x['opera_sim_p50_us']:.3f}, p99 "
                                f"x{x['p99_us'] / x['opera_sim_p99_us']:.3f}" for x in fct_rows[1:]
                                if x["matched_flows"]) + "). The p99 gap that remains has two parts, measured on "
                            "dm10_first50ms (404 small flows; opendcn 19.5 us, opera-sim on opendcn's fabric 20.2 us, "
                            "published 21.6 us): the topology realization (setting, unpublished: the published run used "
                            "opera-sim's 1-path topology file, a random realization of the matchings that its repository "
                            "does not hold, opendcn UCMP's published matchings, data/opera/SOURCES.md), 1.4 us; and 0.7 us "
                            "between the engines on the same fabric, where 13 % of the small flows finish at the same "
                            "picosecond and the rest within -1.4 to +1.1 us (5th-95th percentile), about one bulk packet "
                            "(1.2 us) either way: a small flow waits for the bulk slot in service or not depending on "
                            "where RotorLB's packets fall, which the two engines schedule differently (opendcn paces a "
                            "commitment evenly over the hold, opera-sim fills its commit queues slot by slot, "
                            "RlbModule::enqueue_commit); defect, fixed: RotorLB's bulk packets went at a 64-byte "
                            "control packet's size, as run before p50 x0.949, p99 x0.890"))
    else:
        claims.append(Claim(f"small flows (< 100 KB) of {trace}: FCT within 10 % of opera-sim's published run", FAIL,
                            "no flow matched the published output"))
    r = get("fct/ws10")
    every_ok.append(run_ok(r.summary))
    ws_row = {"setting": f"{ws}, opera-sim, {FIG10_PATHS} paths", **R.derive(r, "fct", _small_fct),
              "wall_s": r.summary["wall_s"]}
    n_pub, p50_pub, p99_pub = PUBLISHED_WS10[ws]
    ws_row.update(opera_sim_flows=n_pub, opera_sim_p50_us=p50_pub, opera_sim_p99_us=p99_pub)
    w50, w99 = ws_row["p50_us"] / p50_pub, ws_row["p99_us"] / p99_pub
    ws_text = (f"websearch ({ws}, Figure 9): small-flow (< 100 KB) sender-side FCT p50 and p99 within 10 % of "
               "opera-sim's published run")
    if quick:
        claims.append(Claim(ws_text, NOT_CHECKABLE,
                            f"{ws_row['flows']} flows; p50 x{w50:.3f}, p99 x{w99:.3f}; needs the full study's 250-ms "
                            "cut: the published p99 of the small flows itself moves by 15 % between the trace's first "
                            "50 ms (233 us) and its first 250 ms (268 us), more than the 10 % band"))
    else:
        claims.append(Claim(ws_text,
                            PASS if abs(w50 - 1) <= 0.1 and abs(w99 - 1) <= 0.1 else FAIL,
                            f"{ws_row['flows']} flows (opera-sim {n_pub}); p50 {ws_row['p50_us']:.1f} vs {p50_pub:.1f} us "
                            f"(x{w50:.3f}), p99 {ws_row['p99_us']:.1f} vs {p99_pub:.1f} us (x{w99:.3f}); run as the "
                            f"datamining claim's opera-sim setting with {FIG10_PATHS} paths per pair and every websearch flow "
                            "low-latency (NDP), as the published run (Figure9_websearch/opera/sim/run.sh: -topfile "
                            "dynexp_N=108_k=12_5paths.txt -cutoff 30000000, above the trace's largest flow of 28.6 MB), "
                            "against the published per-flow output's percentiles over the same flows "
                            "(FCT_cwnd20_10perc_LL_5paths.txt); side by side with opera-sim's binary on opendcn's 5-path "
                            "fabric (ws10_first50ms, its 1 206 small flows) p50 68.0 vs 68.9 us, p99 280 vs 293 us. "
                            "Setting, fixed: this point first ran with opendcn's 15 MB cutoff, which "
                            "moves 286 flows of 15-28.6 MB to RotorLB and off the small flows' paths: p50 x0.683, p99 "
                            "x0.827"))
    # ---- throughput of the shuffle + websearch mixes
    mix_rows: list[dict[str, Any]] = []
    hosts = TORS * HOSTS_PER_TOR
    for load in loads:
        r = get(f"mix/{load}")
        every_ok.append(run_ok(r.summary))
        lo = warm_ps + parse_time("1ms", "x")       # the shuffle's first millisecond is its ramp
        mm = R.derive(r, "mix", lambda r_: _mix_metrics(r_, lo, end_ps, rate))
        # where the capacity went: bulk (RotorLB) payload delivered over the shuffle's time,
        # low-latency payload over the run, and what NDP costs the rotor uplinks (mean hops)
        am = r.summary["arch_metrics"]
        bh = am["bulk_hops_histogram"]
        cap_bytes_per_ps = hosts * rate / 8 / 1e12
        bulk_share = (bh["direct"] + bh["two_hop"] + bh["more"]) * (1500 - 64) / (cap_bytes_per_ps * (end_ps - warm_ps))
        ll_bytes = r.summary["bytes"]["delivered"] - (bh["direct"] + bh["two_hop"] + bh["more"]) * (1500 - 64)
        ll_share = ll_bytes / (cap_bytes_per_ps * end_ps)
        nh = am["ndp_hops_histogram"]
        hops = sum(i * n for i, n in enumerate(nh)) / max(sum(nh), 1)
        mix_rows.append({"websearch_load": load, "throughput": mm["throughput"],
                         "payload_throughput": mm["payload_throughput"],
                         "published": PUBLISHED_THROUGHPUT[load], "shuffle_done": mm["shuffle_done"],
                         "ll_flows": mm["ll_flows"], "ll_done": mm["ll_done"],
                         "bulk_share": bulk_share, "ll_share": ll_share, "ndp_hops": hops,
                         "uplink_load": bulk_share + ll_share * hops, "rlb_committed_pkts": am["rlb_committed_pkts"],
                         "rlb_returns": am["rlb_returns"], "rlb_relayed_pkts": am["rlb_relayed_pkts"],
                         "trims": am["trims"], "dropped_bytes": r.summary["bytes"]["dropped"],
                         "wall_s": r.summary["wall_s"]})
    close = all(abs(x["throughput"] - x["published"]) <= 0.1 for x in mix_rows)
    falls = all(a["throughput"] > b["throughput"] for a, b in zip(mix_rows, mix_rows[1:]))
    fig10 = "shuffle + websearch (Figure 10): throughput falls as the low-latency load grows, each point within 0.1 " \
            "of the published one"
    figures = ", ".join(f"{100 * x['websearch_load']:g} %: {x['throughput']:.3f} vs {x['published']:.2f}" for x in mix_rows)
    anatomy = ", ".join(f"{100 * x['websearch_load']:g} %: bulk {x['bulk_share']:.2f} + low-latency {x['ll_share']:.2f} "
                        f"x {x['ndp_hops']:.1f} hops, {x['rlb_returns']} bulk packets returned" for x in mix_rows)
    if quick:
        claims.append(Claim(fig10, NOT_CHECKABLE,
                            f"{figures}; needs the full study: the published run starts the shuffle after 100 ms of "
                            f"websearch traffic, quick mode after {warm_ps / 1e9:g} ms, and the 10 % point moves by 0.06 "
                            "between a 10-ms and a 100-ms warm-up"))
    else:
        claims.append(Claim(fig10, PASS if close and falls else FAIL,
                            f"{figures}; the shuffle after {warm_ps / 1e9:g} ms of websearch traffic as in the published "
                            f"run, {FIG10_PATHS} shortest paths per ToR pair and slice, one drawn per packet (opera-sim's "
                            "dynexp_N=108_k=12_5paths.txt). Mechanism: RotorLB's bulk is the lowest class at the rotor "
                            "uplinks, so the low-latency packets, each crossing about 3 rotor hops, go first and the bulk "
                            "packets a host committed for a matching that have not left when it changes go back to their "
                            "host, whose NIC time they used (payload shares of the uplinks and returns: " + anatomy + "). "
                            "Side by side with opera-sim's own binary on a 24-rack Opera (the same mix scaled, one path, "
                            "benchmarks/opera_sim), ToR-to-host utilisation over the shuffle's 7-17 ms: at 10 % websearch "
                            "opendcn 0.714, opera-sim 0.702, returned bulk packets 322 477 and 301 873; at 0.01 % 0.899 "
                            "and 0.911 (4 278 and 2 878 returns); on the paper's 108-rack fabric with 5 paths and this "
                            "study's 10 % mix opera-sim's binary measures 0.584 over the same window after the same "
                            "100-ms warm-up (every byte on the host downlinks, as here: opendcn 0.604), and 0.650 with "
                            "the shuffle after 10 ms (opendcn 0.620 payload). "
                            "What remains at 10 % (0.604 against 0.50) is the published run's own realization (class: "
                            "unpublished: its topology file dynexp_N=108_k=12_5paths.txt, a random realization, and its "
                            "flow file flows_10percLLload_100kBshuffle_1sec_648hosts.htsim are not in the stored snapshot "
                            "of opera-sim's repository), where opera-sim's own binary on opendcn's realization also "
                            "reads 0.58 against the published 0.50: the two engines differ by 0.02 at this point and "
                            "opendcn's 0.604 is 0.004 beyond the 0.1 band; the figure itself was read by hand off a "
                            "utilisation plot ('hand-entered', plotter.m). Defect, fixed: RotorLB's bulk packets went at a 64-byte "
                            "control packet's size on every link, so bulk never queued behind low-latency traffic and "
                            "throughput stayed flat (as run before: 0.903 at 0.01 % to 0.876 at 10 %, no bulk packet "
                            "returned)"))
    claims.append(Claim("every run: exact conservation, 0 collisions, 0 guardband violations",
                        PASS if all(every_ok) else FAIL, f"{len(every_ok)} runs"))
    if R.reads(f"mix/{loads[0]}"):
        claims.append(Claim("deterministic (same seed, same summary and trace hash)", NOT_CHECKABLE,
                            "rendered from reference records, nothing run (tests/test_reference.py reruns a stored "
                            "point and compares its summary and trace hash)"))
    else:
        again = R.fresh(*S[f"mix/{loads[0]}"], seed=seed)
        first = get(f"mix/{loads[0]}")
        same = (again.summary["trace_hash"] == first.summary["trace_hash"]
                and again.summary["bytes"] == first.summary["bytes"])
        claims.append(Claim("deterministic (same seed, same summary and trace hash)", PASS if same else FAIL,
                            f"the {loads[0]} mix run twice"))
    if not quick:
        assert [c.text for c in claims] == CLAIMS, "CLAIMS lists the study's claims in order"
    sections = [
        (f"{ws}: sender-side FCT of flows under 100 KB, opendcn vs opera-sim (published percentiles)", [ws_row],
         ["setting", "flows", "opera_sim_flows", "p50_us", "opera_sim_p50_us", "p99_us", "opera_sim_p99_us", "wall_s"]),
        (f"{trace}: sender-side FCT of flows under 100 KB, opendcn vs opera-sim (published)", fct_rows,
         ["setting", "pull_pacer", "matched_flows", "p50_us", "opera_sim_p50_us", "p90_us", "opera_sim_p90_us", "p99_us",
          "opera_sim_p99_us", "median_ratio", "wall_s"]),
        ("100-KB shuffle + websearch: throughput (bytes the ToRs sent on their host downlinks, headers and control "
         "packets included, over their capacity, as opera-sim's monitor; payload_throughput: payload received) "
         "during the shuffle; bulk_share: "
         "RotorLB payload over the shuffle, ll_share: low-latency payload over the run, uplink_load: bulk + "
         "low-latency x NDP hops", mix_rows,
         ["websearch_load", "throughput", "published", "shuffle_done", "ll_flows", "ll_done", "bulk_share", "ll_share",
          "ndp_hops", "uplink_load", "payload_throughput", "rlb_committed_pkts", "rlb_returns", "trims",
          "dropped_bytes", "wall_s"]),
    ]
    echo_study(echo, sections, claims)
    out.mkdir(parents=True, exist_ok=True)
    data = {"mode": "reference" if R.reading else "quick" if quick else "full", "trace": trace, "loads": loads, "warmup_ps": warm_ps, "window_ps": window_ps, "seed": seed,
            "fct": fct_rows, "fct_ws10": ws_row, "mix": mix_rows}
    prov = R.provenance()
    write_json(out, "opera", data, claims, prov, echo)
    images = _plots(out, mix_rows)
    write_page(out, "reproduce opera", "Opera on opendcn's packet engine against opera-sim's published output.",
               claims, sections, images, provenance=prov)
    echo(f"\nwrote {out / 'opera.json'}, {out / 'index.html'} and plots under {out}")
    if ref is not None and ref.mode == "record":
        echo(f"recorded {R.save_reference()} reference points under {ref.root}")
    return exit_code(claims)


def _plots(out: Path, mix_rows: list[dict[str, Any]]) -> list[str]:
    fig, ax = figure(5, 3.5)
    pub = sorted(PUBLISHED_THROUGHPUT.items())
    ax.plot([100 * k for k, _ in pub], [v for _, v in pub], "k--o", label="opera-sim (published)")
    ax.plot([100 * x["websearch_load"] for x in mix_rows], [x["throughput"] for x in mix_rows], "o-", label="opendcn")
    ax.set_xscale("log")
    ax.set_xlabel("websearch load (% of host capacity)")
    ax.set_ylabel("throughput (received / host capacity)")
    ax.set_ylim(0, 1)
    ax.legend()
    save(fig, out / "throughput_vs_load.png", dpi=110,
         title="Opera Fig. 10: shuffle throughput against websearch load")
    return ["throughput_vs_load.png"]
