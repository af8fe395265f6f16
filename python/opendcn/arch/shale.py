"""Shale (docs/arch/shale.md): an oblivious reconfigurable network on the EBS schedule.

N = m^h nodes with h coordinates; the schedule has h phases of m − 1 timeslots, in
which every node round-robins over the nodes differing only in that phase's
coordinate. Each node's 400 Gbps interface is ``lanes`` × ``lane_rate`` lanes whose
slots are staggered, so a new timeslot starts every slot/lanes (45.056 ns / 8 =
5.632 ns). Cells are fixed (256 B, 12 B header) and take a spraying semi-path (h hops,
first hop = current peer, then one random — ``spray``: least-loaded — neighbour per
phase) and a direct semi-path (≤ h hops). Forwarded cells go before new cells.
Congestion control: ``hbh`` hop-by-hop tokens per bucket ⟨destination, remaining
sprays⟩ with per-neighbour PIEO extraction; ``spray`` spray-short; ``hbh+spray`` both
(default); ``priority`` p = t + ℓ·E; ``none``. ``--interleave 4:0.4`` gives 40 % of the
timeslots to an h = 4 sub-schedule that carries the flows up to ``--cutoff`` (default:
the size that loads both sub-schedules equally). ``--fail-nodes F --fail-at T`` fails a
random fraction F of the nodes at T, ``--fail-links F`` a fraction of the neighbour links
(detection by missing cells, re-spraying, reset of direct hops, invalidation tokens that
stop upstream nodes and sources from sending towards a failure; ``--recover-at T``
brings every failed element back, with re-validation tokens).
``--cc isd|rd|ndp`` are the paper's end-to-end baselines (idealized sender-driven fair
share; receiver-driven PULLs; PULLs + trimming). ``Result.timeseries`` holds network-wide
samples (queued cells, largest node queue, unsent bytes, delivered bytes, goodput).
``summary["packets"]`` is the cell ledger with the packet engine's keys (``sent`` = new
cells + token-only cells, the latter also as ``control``; ``retransmitted``: NDP resends;
``trimmed``: trimmed cells whose NACK came back), checked every run against the cells
found in the engine's queues and on its links.

OpenOptics' infrastructure services (``--congestion-detection``, ``--pushback``,
``--flow-pausing``; ``summary["services"]`` as on rotornet): a forwarded cell joining a
per-neighbour queue that already holds the one cell the next occurrence of that timeslot
carries is a congestion event; push-back reaches the cell's source one propagation delay
later and pauses it towards the destination; paused elephants take no spraying hop (their
cells leave only when the timeslot's peer starts the direct semi-path, at most h hops).
``--queue-estimation eqo`` and ``--buffer-offload`` are rejected by name.

The engine is :mod:`opendcn_core::slotted::shale` (cell by cell, slot by slot over the
active set). Decisions where the paper is silent (docs/arch/shale.md#decisions) are listed in
the engine's module documentation and in ``arch_metrics["decisions"]``.

The load L = F / (R N τ) uses R = one cell's payload per timeslot, (cell − header) × 8 /
(slot / lanes) (244 B per 5.632 ns = 346.59 Gbps by default), unless ``--host-rate`` says
otherwise: L is then exactly the paper's load in cells per timeslot, the unit of its
throughput guarantee 1/(2h). (The lane rate alone, 400 Gbps × 244/256 = 381.25 Gbps,
ignores the guard band: L = 0.24 would offer 0.264 cells per timeslot, above 1/(2h) for h = 2.)
"""

from __future__ import annotations

import math
import time
from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator

import numpy as np
import pyarrow as pa

from .. import _core
from ..experiments.analysis import bucket_labels, shale_edges
from ..network.config import Config
from ..errors import ConfigError
from ..network.network import FixedFabric, Result, _Cut, _Live, core_summary, flows_table
from ..rng import stream
from ..units import parse_rate, parse_size, parse_time
from .options import Kind, AutoInt, AutoTime, Float, Int, Rate, ServiceOptions, Size, Time, opt
from . import register

CC_CHOICES = ("hbh+spray", "hbh", "spray", "priority", "isd", "rd", "ndp", "none")
ENGINES = ("auto", "window", "timeslot")

DECISIONS = [
    "schedule: at offset j of phase i a node sends to (c_i + j) mod m, receives from (c_i - j) mod m",
    "lanes: timeslot t starts on lane t mod lanes and runs schedule entry t (one entry per timeslot)",
    "hop delay: a cell sent in timeslot t is forwardable from t + ceil((slot + propagation) / timeslot)",
    "routing: spraying hop k+1 uses the phase after hop k's phase; direct hops fix differing "
    "coordinates in phase order after the last hop's phase; delivery on any hop reaching dst",
    "spraying cells are bound to a neighbour at enqueue (required by spray-short)",
    "spray-short ties: first least-loaded neighbour after a random start",
    "PIEO: first bucket with a credit; a bucket with cells left re-enters at the tail",
    "tokens return over the same sub-schedule; a dropped cell still returns its token",
    "token budgets auto: T = T_F = ceil(2 D / E) + 1 (one bucket can use a link every epoch)",
    "isd: n_d = flows to d with data not yet cut into cells; each may cut cells at cap / n_d "
    "(cap = 1.25/(2h) cells per timeslot), a burst of one cell allowed; random spraying, no tokens",
    "rd/ndp: per flow, initial window W (auto: ceil((2E + 2hD)/h) cells, one idle round trip at "
    "1/(2h)); the receiver returns one PULL worth 20 cells per 20 cells of that flow received; "
    "PULLs, trimmed headers and NACKs use the reserved header space: Shale routing through "
    "the schedule without queueing",
    "ndp: a forwarded cell joining a per-neighbour queue holding 100 cells is trimmed; the "
    "NACK returns its bytes (resent as a new cell) and one credit to the source",
    "priority: p = flow arrival timeslot + flow size in cells x epoch timeslots",
    "interleave: higher-h slots spread evenly (Bresenham); cutoff auto: bytes on each "
    "sub-schedule proportional to its slot share / h",
    "failures: random nodes (stream shale.failures), at most ceil(f m) per line (coordinate exchange); a spraying hop with no live neighbour is skipped; detection at the first missed cell; "
    "invalidation tokens {j, n} (one flag bit per token field, shared with hop-by-hop tokens; "
    "a header's two fields carry the link's oldest tokens of either kind, --token-fields "
    "one-each: one of each kind when both wait): "
    "sent by the node next to a failure to all neighbours as {j, 0}; a node whose phase "
    "neighbours all invalidated {j, n} sends {j, n+1} to the preceding phase; a node whose "
    "direct hop to j is invalidated sends {j, 0} to the phases whose direct path uses it; "
    "taken-back direct cells are reset to the first spraying hop (the node cannot tell a "
    "failed node from a failed link); recovery (--recover-at): all failed elements at once, "
    "noticed at the first cell received again, which triggers re-validation tokens undoing "
    "every invalidation (a node's re-validations of one destination leave in the order of "
    "n, then neighbour); hop-by-hop credits lost with cells on failed elements are reset "
    "at recovery; failed links: random neighbour pairs, both directions "
    "down, each end stops sending at the first missed cell; a cell whose direct hop needs a "
    "failed link (destination alive) is reset to its first spraying hop; cells sent into a "
    "failed link before detection are lost (drop reason failed_link)",
    "load: R = one cell payload per timeslot = payload x 8 / (slot / lanes) (346.59 Gbps by default; "
    "guard band excluded) unless --host-rate, so L is in cells per timeslot",
    "buffer occupancy: cells queued at a node (excl. unsent source data), time-weighted over "
    "node-timeslots",
]


def _int_or_auto(value: Any, flag: str) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        v = int(value)
    except (TypeError, ValueError):
        raise ConfigError(flag, value, "expected a positive integer or 'auto'") from None
    if v < 1:
        raise ConfigError(flag, value, "expected a positive integer or 'auto'")
    return v


def _root(n: int, h: int) -> int | None:
    r = round(n ** (1.0 / h))
    for c in (r - 1, r, r + 1):
        if c >= 2 and c ** h == n:
            return c
    return None


class ShaleNetwork(FixedFabric):
    """A ready Shale network: ``run(workload, duration, seed, ...)`` returns a Result.
    Its circuits (the EBS schedule) and routing (spraying + direct semi-paths) are the
    architecture's own; ``config`` describes the lanes as uplinks."""

    engine = "shale"

    def __init__(self, o: ShaleOptions):
        self.o = o
        n, h = o.nodes, o.h
        if n < 2:
            raise ConfigError("--nodes", n, "need at least 2 nodes")
        if not 1 <= h <= 4:
            raise ConfigError("--h", h, "must be 1..4 (2-bit remaining-sprays field)")
        root = _root(n, h)
        if root is None:
            raise ConfigError("--nodes", n, f"must be a perfect {h}-th power (m^h) for --h {h}")
        self.m: int = root
        self.lanes = o.lanes
        if self.lanes < 1:
            raise ConfigError("--lanes", self.lanes, "must be >= 1")
        self.slot_ps = parse_time(o.slot, "--slot")
        self.guard_ps = parse_time(o.guardband, "--guardband")
        self.lane_rate = parse_rate(o.lane_rate, "--lane-rate")
        self.cell = parse_size(o.cell, "--cell")
        self.header = parse_size(o.header, "--header")
        self.prop_ps = parse_time(o.propagation, "--propagation")
        if self.slot_ps <= 0 or self.slot_ps % self.lanes:
            raise ConfigError("--slot", o.slot, f"must be a positive whole number of ps divisible by --lanes {self.lanes}")
        if not 0 <= self.guard_ps < self.slot_ps:
            raise ConfigError("--guardband", o.guardband, "must be shorter than the slot")
        if self.cell <= self.header or self.header < 0:
            raise ConfigError("--cell", o.cell, "must be larger than the header")
        ser = -(-self.cell * 8 * 10**12 // self.lane_rate)
        if ser + self.guard_ps > self.slot_ps:
            raise ConfigError("--slot", o.slot, f"a {self.cell} B cell takes {ser} ps at {o.given('lane_rate')}: "
                              "it does not fit the slot minus the guard band")
        self.tau = self.slot_ps // self.lanes
        self.d = -(-(self.slot_ps + self.prop_ps) // self.tau)
        self.payload = self.cell - self.header
        # interleaving
        self.h_hi, self.share = 0, 0.0
        if o.interleave not in (None, "", "none"):
            text = str(o.interleave)
            try:
                a, b = text.split(":")
                self.h_hi, self.share = int(a), float(b)
            except ValueError:
                raise ConfigError("--interleave", text, "expected H:FRACTION, e.g. 4:0.4") from None
            if not 1 <= self.h_hi <= 4 or self.h_hi == h:
                raise ConfigError("--interleave", text, f"the second h must be 1..4 and differ from --h {h}")
            if _root(n, self.h_hi) is None:
                raise ConfigError("--interleave", text, f"--nodes {n} is not a perfect {self.h_hi}-th power")
            if not 0 < self.share < 1:
                raise ConfigError("--interleave", text, "the fraction must be in (0, 1)")
        self.num = round(self.share * 1000) if self.h_hi else 0
        if self.h_hi and not 0 < self.num < 1000:
            raise ConfigError("--interleave", o.interleave, "the fraction must be in [0.001, 0.999]")
        self.cutoff = None if o.cutoff is None else parse_size(o.cutoff, "--cutoff")
        self.cc = o.cc
        self.epoch = h * (self.m - 1)
        epoch_real = self.epoch / (1 - self.num / 1000) if self.h_hi else self.epoch
        auto_t = math.ceil(2 * self.d / epoch_real) + 1
        tb = _int_or_auto(o.token_budget, "--token-budget")
        fb = _int_or_auto(o.first_hop_budget, "--first-hop-budget")
        self.t_budget = tb if tb is not None else auto_t
        self.tf_budget = fb if fb is not None else self.t_budget
        self.engine = str(o.engine)
        if self.engine not in ENGINES:
            raise ConfigError("--engine", self.engine, f"expected one of {', '.join(ENGINES)}")
        th = o.threads
        if isinstance(th, bool) or not isinstance(th, (int, np.integer)) or th < 1:
            raise ConfigError("--threads", th, "must be a whole number of threads, at least 1")
        self.threads = int(th)
        smp = o.sample
        if smp is None or str(smp).strip().lower() == "auto":
            self.sample_ps = None
        else:
            self.sample_ps = parse_time(smp, "--sample")
            if self.sample_ps <= 0:
                raise ConfigError("--sample", smp, "must be a positive time or 'auto'")
        # end-to-end baselines (docs/arch/shale.md#end-to-end-baselines): ISD cap, RD/NDP window, PULL size, NDP queue
        try:
            self.isd_share = float(o.isd_cap)
        except (TypeError, ValueError):
            raise ConfigError("--isd-cap", o.isd_cap, "expected a positive number") from None
        if not (math.isfinite(self.isd_share) and 0 < self.isd_share <= 10):
            raise ConfigError("--isd-cap", o.isd_cap, "expected a number in (0, 10]")
        self.pull_every = _int_or_auto(o.pull_every, "--pull-every") or 20
        self.ndp_queue = _int_or_auto(o.ndp_queue, "--ndp-queue") or 100
        rtt = 2 * h * self.d + 2 * epoch_real  # idle round trip, intrinsic latency both ways
        auto_w = math.ceil(rtt / h)  # one idle round trip at 1/(2h) of the line rate
        iw = _int_or_auto(o.initial_window, "--initial-window")
        self.init_window = iw if iw is not None else auto_w
        self.fail_frac = float(o.fail_nodes)
        if not 0 <= self.fail_frac < 1:
            raise ConfigError("--fail-nodes", o.fail_nodes, "fraction of nodes must be in [0, 1)")
        self.fail_at = parse_time(o.fail_at, "--fail-at")
        rec = o.recover_at
        self.recover_at = None if rec in (None, "", "none", "never") else parse_time(rec, "--recover-at")
        if self.recover_at is not None and self.recover_at <= self.fail_at:
            raise ConfigError("--recover-at", rec, "must be after --fail-at")
        wu = o.warmup
        self.warmup = None if wu in (None, "", "none") else parse_time(wu, "--warmup")
        if self.warmup is not None and self.warmup <= 0:
            raise ConfigError("--warmup", wu, "must be positive")
        inv = o.invalidation
        if not isinstance(inv, (bool, np.bool_)):
            raise ConfigError("--invalidation", inv, "expected true or false")
        self.invalidation = bool(inv)
        try:
            self.fail_link_frac = float(o.fail_links)
        except (TypeError, ValueError):
            raise ConfigError("--fail-links", o.fail_links, "expected a fraction in [0, 1)") from None
        if not 0 <= self.fail_link_frac < 1:
            raise ConfigError("--fail-links", o.fail_links, "fraction of links must be in [0, 1)")
        if o.host_rate is not None:
            self.rate = parse_rate(o.host_rate, "--host-rate")
        else:
            # one cell payload per timeslot (guard band excluded), floored to whole bit/s
            self.rate = self.payload * 8 * 10**12 // self.tau
        self.n, self.h = n, h
        super().__init__(Config(nodes=n, uplinks=self.lanes, link_rate=self.lane_rate, slice=self.slot_ps,
                                guardband=self.guard_ps, propagation=self.prop_ps, host_rate=self.rate,
                                mtu=self.payload, header=self.header), arch="shale")


    def services(self, **kw: Any) -> dict[str, Any]:
        """OpenOptics' infrastructure services on the Shale cell engine: congestion
        detection on the per-neighbour queues, push-back to the cell's source, flow pausing
        (elephants take the direct semi-path only); see the engine's module doc."""
        from ..network.slotted import slotted_services

        return slotted_services(self, "shale", **kw)

    # --------------------------------------------------------------- helpers
    def failed_nodes(self, seed: int = 1) -> np.ndarray:
        """The nodes that fail in a run with master ``seed`` (sorted)."""
        k = round(self.fail_frac * self.n)
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        # Random nodes, kept well distributed over the phase groups (lines) as Shale does by
        # exchanging coordinates of failed nodes: at most `cap` failed nodes per line,
        # cap = ceil(f m), raised only if no such set is found.
        rng = stream(int(seed), "shale.failures")
        m, h, n = self.m, self.h, self.n
        cap = max(1, math.ceil(self.fail_frac * m))
        while True:
            order = rng.permutation(n)
            count: dict[tuple[int, int], int] = {}
            chosen: list[int] = []
            for x in order.tolist():
                lines = [(p, x - ((x // m**p) % m) * m**p) for p in range(h)]
                if all(count.get(li, 0) < cap for li in lines):
                    chosen.append(x)
                    for li in lines:
                        count[li] = count.get(li, 0) + 1
                    if len(chosen) == k:
                        return np.sort(np.asarray(chosen, dtype=np.int64))
            cap += 1

    def failed_links(self, seed: int = 1) -> np.ndarray:
        """The node pairs (a < b, one row each, sorted) whose link fails in a run with master
        ``seed``: a fraction ``fail_links`` of the N h (m - 1) / 2 neighbour pairs of the
        (base) schedule, uniformly at random (stream shale.failures.links)."""
        m, h, n = self.m, self.h, self.n
        total = n * h * (m - 1) // 2
        k = round(self.fail_link_frac * total)
        if k == 0:
            return np.zeros((0, 2), dtype=np.int64)
        rng = stream(int(seed), "shale.failures.links")
        chosen: set[tuple[int, int]] = set()
        while len(chosen) < k:
            x = int(rng.integers(n))
            p = int(rng.integers(h))
            j = int(rng.integers(1, m))
            c = (x // m**p) % m
            y = x + (((c + j) % m) - c) * m**p
            chosen.add((min(x, y), max(x, y)))
        return np.asarray(sorted(chosen), dtype=np.int64).reshape(-1, 2)

    def peers(self, slots: int) -> np.ndarray:
        """Peer table: row t = the node each node sends to in timeslot t."""
        return np.asarray(_core.shale_peers(self.n, self.h, slots, self.h_hi, self.num, 1000), dtype=np.int64)

    def _cutoff(self, sizes: np.ndarray) -> int:
        if not self.h_hi:
            return 0
        if self.cutoff is not None:
            return self.cutoff
        if len(sizes) == 0:
            return 0
        s = self.num / 1000
        x = s * self.h / (s * self.h + (1 - s) * self.h_hi)
        srt = np.sort(sizes)
        cum = np.cumsum(srt)
        i = int(np.searchsorted(cum, x * cum[-1], side="left"))
        return int(srt[min(i, len(srt) - 1)])

    def _guarantee_den(self) -> int:
        """ISD cap = isd_cap x the receiver's worst-case throughput 1/(2h) (interleaved:
        s/(2 h_hi) + (1 - s)/(2 h)), as num / den cells per timeslot with num = isd_cap x 10^6."""
        if not self.h_hi:
            return 2 * self.h * 10**6
        s = self.num / 1000
        g = s / (2 * self.h_hi) + (1 - s) / (2 * self.h)
        return max(1, round(10**6 / g))

    def _sample_ps(self, duration_ps: int) -> int:
        if self.sample_ps is not None:
            return self.sample_ps
        # auto: about 200 samples, a whole number of timeslots
        return max(1, duration_ps // 200 // self.tau) * self.tau

    # --------------------------------------------------------------- running
    def _engine(self, flows: _Cut, duration_ps: int, seed: int) -> Any:
        src = flows.src.astype(np.int64)
        dst = flows.dst.astype(np.int64)
        size = flows.size.astype(np.int64)
        if np.any(src == dst):
            raise ConfigError("workload", "src == dst", "a flow must go to another node")
        if self.warmup is not None and self.warmup >= duration_ps:
            raise ConfigError("--warmup", self.warmup, f"must be shorter than the run ({duration_ps} ps)")
        cutoff = self._cutoff(size)
        failed = self.failed_nodes(seed)
        links = self.failed_links(seed)
        self.last_failed_links = len(links)
        self._run: dict[str, Any] = {"failed": failed, "cutoff": cutoff}
        spec = {
            "nodes": self.n, "h": self.h, "h_hi": self.h_hi, "inter_num": self.num, "inter_den": 1000,
            "cutoff_bytes": cutoff, "lanes": self.lanes, "slot_ps": self.slot_ps, "guard_ps": self.guard_ps,
            "lane_rate_bps": self.lane_rate, "cell_bytes": self.cell, "header_bytes": self.header,
            "prop_ps": self.prop_ps, "cc": self.cc, "token_budget": self.t_budget,
            "first_hop_budget": self.tf_budget,
            "isd_cap_num": round(self.isd_share * 10**6), "isd_cap_den": self._guarantee_den(),
            "init_window": self.init_window, "pull_every": self.pull_every, "ndp_queue": self.ndp_queue,
            "fail_nodes": failed, "fail_at_ps": self.fail_at,
            "fail_links": links.reshape(-1).astype(np.int64), "invalidation": bool(self.invalidation),
            "token_one_each": self.o.token_fields == "one-each",
            "recover_at_ps": 2**64 - 1 if self.recover_at is None else self.recover_at,
            "flow_start_ps": flows.start_ps.astype(np.int64), "flow_src": src, "flow_dst": dst, "flow_size": size,
            "seed": seed, "duration_ps": duration_ps, "sample_ps": self._sample_ps(duration_ps),
            "engine": self.engine, "threads": self.threads,
            **self._services,
        }
        sim = _core.ShaleSimulator(spec)
        self.last_engine = sim.engine
        return sim

    def _advance(self, live: _Live, progress: bool) -> None:
        """Run to the end; with ``--warmup``, time the steady part after the warm-up."""
        sim = live.sim
        self._steady_window: Any = None
        if self.warmup is not None:
            sim.run_until(self.warmup)
            a = (time.perf_counter(), sim.progress())
            super()._advance(live, progress)
            self._steady_window = (a, (time.perf_counter(), sim.progress()), sim.tau_ps)
        else:
            super()._advance(live, progress)

    @staticmethod
    def _steady(a: tuple, b: tuple, tau_ps: int) -> dict[str, Any]:
        """Speed and load between the end of the warm-up (a) and the end of the run (b),
        each (wall clock, (timeslots, cell-hops, sum of cells alive per timeslot))."""
        (w0, (t0, h0, l0)), (w1, (t1, h1, l1)) = a, b
        slots, hops, wall = t1 - t0, h1 - h0, w1 - w0
        return {"from_ps": t0 * tau_ps, "timeslots": slots, "wall_s": wall, "cell_hops": hops,
                "wall_us_per_timeslot": wall / slots * 1e6 if slots else 0.0,
                "wall_ns_per_hop": wall / hops * 1e9 if hops else 0.0,
                "mean_cells_in_flight": (l1 - l0) / slots if slots else 0.0}

    def _result(self, live: _Live, o: dict[str, Any], wall: float, mice: int) -> Result:
        f = live.flows
        size, dst = f.size.astype(np.int64), f.dst.astype(np.int64)
        failed, cutoff = self._run["failed"], self._run["cutoff"]
        finish = o["flow_finish_ps"]
        done = finish >= 0
        fct = np.where(done, finish - f.start_ps.astype(np.int64), 0)
        cells = -(-size // self.payload)
        p_slots = -(-self.prop_ps // self.tau)
        ideal = (cells + p_slots) * self.tau
        norm = np.where(done, fct / np.maximum(ideal, 1), 0.0)
        flows = flows_table(self.config, f, o, ideal=ideal, extra={"delivered_bytes": o["flow_delivered"]})
        ts = self._series(o["series"])
        sim_s = live.duration / 1e12
        from ..network.slotted import packets_summary, services_summary

        services = services_summary(self._services, o["metrics"])
        am = self._arch_metrics(o, size, dst, done, norm, failed, cutoff, sim_s)
        if self._steady_window is not None:
            am["steady"] = self._steady(*self._steady_window)
        summary = core_summary(arch="shale", seed=live.seed, nodes=self.n, endpoints=self.n,
                               duration_ps=live.duration, wall=wall, o=o, flows=flows, mice=mice,
                               rate_bps=self.rate, workload=live.workload)
        summary["packets"] = packets_summary(o)
        summary["services"] = services
        summary["arch_metrics"] = am
        info = {"arch": "shale", "options": self.o.model_dump(),
                "duration_ps": live.duration, "seed": live.seed, "failed_nodes": failed.tolist()}
        return Result(summary, flows, ts, info)

    def _series(self, ser: dict[str, np.ndarray]) -> pa.Table:
        """Network-wide time series (node = port = -1): levels at time_ps, counters over the
        interval ending at time_ps; goodput_normalized = delivered / (interval x N x R)."""
        t = np.asarray(ser["time_ps"], dtype=np.int64)
        dt = np.diff(np.concatenate([[0], t])) if len(t) else t
        deliv = np.asarray(ser["delivered_bytes"], dtype=np.int64)
        gp = np.where(dt > 0, deliv * 8 / np.maximum(dt, 1) / 1e-12 / (self.n * self.rate), 0.0)
        minus = np.full(len(t), -1, dtype=np.int64)
        return pa.table({
            "time_ps": pa.array(t), "node": pa.array(minus), "port": pa.array(minus),
            "queued_bytes": pa.array(np.asarray(ser["buffered_cells"], dtype=np.int64) * self.cell),
            "tx_bytes": pa.array(np.asarray(ser["cell_hops"], dtype=np.int64) * self.cell),
            "buffered_cells": pa.array(np.asarray(ser["buffered_cells"], dtype=np.int64)),
            "max_node_cells": pa.array(np.asarray(ser["max_node_cells"], dtype=np.int64)),
            "unsent_bytes": pa.array(np.asarray(ser["unsent_bytes"], dtype=np.int64)),
            "delivered_bytes": pa.array(deliv),
            "dropped_bytes": pa.array(np.asarray(ser["dropped_bytes"], dtype=np.int64)),
            "goodput_normalized": pa.array(gp.astype(np.float64)),
            "new_cells": pa.array(np.asarray(ser["new_cells"], dtype=np.int64)),
            "backlogged_sources": pa.array(np.asarray(ser["backlogged_sources"], dtype=np.int64)),
        })

    def _arch_metrics(self, o, size, dst, done, norm, failed, cutoff, sim_s) -> dict[str, Any]:
        eng = {k: (int(v) if float(v).is_integer() else float(v)) for k, v in o["metrics"].items()}
        # size-normalized FCT per flow-size bucket
        edges = shale_edges(float(size.max()) if len(size) else 0.0)
        labels = bucket_labels(edges)
        nfct = {}
        for i, lab in enumerate(labels):
            sel = (size >= edges[i]) & (size < edges[i + 1])
            v = norm[sel & done]
            st: dict[str, float | int] = {"count": int(sel.sum()), "completed": int((sel & done).sum())}
            if v.size:
                st.update(mean=float(v.mean()), p50=float(np.percentile(v, 50)),
                          p99=float(np.percentile(v, 99)), max=float(v.max()))
            nfct[lab] = st
        # per-node buffer occupancy percentiles (time-weighted over node-timeslots)
        hist = np.asarray(o["buffer_hist"], dtype=np.int64)
        bufp = {}
        tot = int(hist.sum())
        if tot:
            cum = np.cumsum(hist)
            for q in (50, 90, 99, 99.9, 99.99):
                bufp[f"p{q:g}"] = int(np.searchsorted(cum, q / 100 * tot, side="left"))
            bufp["max"] = int(eng.get("max_buffer_cells", len(hist) - 1))
        # destination throughput (delivered payload / (sim time x R)) per destination node
        deliv = np.bincount(dst, weights=o["flow_delivered"].astype(np.float64), minlength=self.n)
        live = np.ones(self.n, dtype=bool)
        live[failed] = False
        per = deliv / (sim_s * self.rate / 8) if sim_s else deliv
        active = np.zeros(self.n, dtype=bool)
        active[np.unique(dst)] = True
        sel = live & active
        dthr = {"live_total": float(per[live].sum()), "mean_active_live": float(per[sel].mean()) if sel.any() else 0.0,
                "min_active_live": float(per[sel].min()) if sel.any() else 0.0,
                "max": float(per.max()) if len(per) else 0.0}
        m_hi = _root(self.n, self.h_hi) if self.h_hi else None
        return {
            "h": self.h, "m": self.m, "epoch_timeslots": self.epoch, "lanes": self.lanes,
            "timeslot_ps": self.tau, "hop_delay_timeslots": self.d,
            "propagation_timeslots": int(-(-self.prop_ps // self.tau)),
            "intrinsic_latency_timeslots": 2 * self.epoch,
            "cc": self.cc, "token_budget": self.t_budget, "first_hop_budget": self.tf_budget,
            "transport": ({"isd_cap": self.isd_share, "initial_window": self.init_window,
                           "pull_every": self.pull_every, "ndp_queue": self.ndp_queue,
                           "pulls_sent": eng.get("pulls_sent", 0), "trimmed_cells": eng.get("trimmed_cells", 0),
                           "resent_bytes": eng.get("resent_bytes", 0)}
                          if self.cc in ("isd", "rd", "ndp") else None),
            "interleave": ({"h": self.h_hi, "m": m_hi, "share": self.num / 1000, "cutoff_bytes": cutoff}
                           if self.h_hi else None),
            "failed_nodes": int(len(failed)), "failed_links": int(self.last_failed_links),
            "token_fields": self.o.token_fields,
            "fail_at_ps": self.fail_at if len(failed) or self.last_failed_links else None,
            "recover_at_ps": self.recover_at,
            "normalized_fct": nfct,
            "buffer_cells_percentiles": bufp,
            "max_active_buckets": eng.get("max_active_buckets", 0),
            "max_bucket_queues": eng.get("max_bucket_queues", 0),
            "max_pieo_length": eng.get("max_pieo_length", 0),
            "hbh_violations": eng.get("hbh_violations", 0),
            "destination_throughput": dthr,
            "engine": eng,
            "engine_mode": getattr(self, "last_engine", None),
            "decisions": DECISIONS,
        }


def _never(v: Any) -> Any:
    if v is None or (isinstance(v, str) and v.strip().lower() in ("", "none", "never")):
        return None
    return parse_time(v, "time")


NeverTime = Annotated[Union[int, None], BeforeValidator(_never), Kind("time or never")]


class ShaleOptions(ServiceOptions):
    nodes: Int = opt(16, "number of nodes (a perfect h-th power)", ge=2)
    h: Int = opt(2, "schedule dimension h (1 = SRRD single round robin)", ge=1, le=4)
    lanes: Int = opt(8, "parallel lanes per node (staggered slots)", ge=1)
    lane_rate: Rate = opt("50Gbps", "rate of one lane", gt=0)
    slot: Time = opt("45.056ns", "lane slot, guard band included", gt=0)
    guardband: Time = opt("4.096ns", "guard band at the start of each slot")
    cell: Size = opt("256B", "cell size, header included", gt=0)
    header: Size = opt("12B", "cell header")
    propagation: Time = opt("500ns", "propagation delay of every link")
    cc: Literal["hbh+spray", "hbh", "spray", "priority", "isd", "rd", "ndp", "none"] = opt(
        "hbh+spray", "congestion control")
    interleave: str | None = opt(None, "H:FRACTION — interleave an h=H sub-schedule getting FRACTION of the "
                                       "slots (short flows)")
    cutoff: Size | None = opt(None, "flows up to this size use the interleaved higher-h sub-schedule "
                                    "(default: equal load)")
    token_budget: AutoInt = opt("auto", "hop-by-hop token budget T per (link, bucket), or auto")
    first_hop_budget: AutoInt = opt("auto", "first-hop token budget T_F, or auto (= T)")
    isd_cap: Float = opt(1.25, "isd: per-receiver cap as a multiple of 1/(2h) of the line rate", gt=0, le=10)
    initial_window: AutoInt = opt("auto", "rd/ndp: initial window in cells (auto: one idle round trip at 1/(2h))")
    pull_every: Int = opt(20, "rd/ndp: one PULL (worth this many cells) per this many cells received", ge=1)
    ndp_queue: Int = opt(100, "ndp: cells a per-neighbour queue holds before trimming", ge=1)
    fail_nodes: Float = opt(0.0, "fraction of nodes that fail", ge=0, lt=1)
    fail_links: Float = opt(0.0, "fraction of the neighbour links (node pairs) that fail", ge=0, lt=1)
    fail_at: Time = opt("0us", "when the nodes / links fail")
    recover_at: NeverTime = opt(None, "when every failed node and link recovers (default: never)")
    invalidation: bool = opt(True, "send invalidation tokens after failures (--no-invalidation: local "
                                   "detection only)")
    token_fields: Literal["oldest", "one-each"] = opt(
        "oldest", "what a cell header's two token fields carry while invalidations are queued: the link's oldest "
        "tokens, invalidations and hop-by-hop alike, or one of each kind when both wait (not in the paper)")
    warmup: Time | None = opt(None, "measure the engine's steady speed after this much simulated time "
                                    "(arch_metrics.steady: wall time per timeslot and per cell-hop, mean cells "
                                    "in flight)", gt=0)
    sample: AutoTime = opt("auto", "time-series sampling interval (auto: about 200 samples per run)")
    engine: Literal["auto", "window", "timeslot"] = opt(
        "auto", "window: node by node in windows of one hop delay (fast; no failures, services, priority or "
        "end-to-end transports); timeslot: every option; auto: window when it applies. Both give identical "
        "results")
    threads: Int = opt(1, "threads of the window engine (nodes are served in parallel within a window; the "
                          "results do not depend on the count; worth it from a few thousand nodes)", ge=1)
    host_rate: Rate | None = opt(None, "R of the load definition (default: one cell payload per timeslot, "
                                       "346.59 Gbps)", gt=0)


@register("shale", "Shale: EBS schedule of dimension h, spraying + direct semi-paths, hop-by-hop tokens",
          ShaleOptions, tiny={"nodes": 16})
def build(o: ShaleOptions) -> ShaleNetwork:
    net = ShaleNetwork(o)
    o.apply_services(net)
    return net
