"""Workloads: which flows enter the network, when, between which endpoints, how big.

A workload is a recipe; :meth:`Workload.generate` turns it into concrete
:class:`FlowArrays` for one network and one seed. What is modeled:

* **Flow sizes** come from an empirical flow-size distribution (:class:`CDF`), either a
  shipped one (``hadoop``, ``websearch``, ``datamining``, ``google``, ``keyvalue``,
  ``imc10``, ... — see :func:`list_workloads` and ``data/workloads/SOURCES.md``) or a
  user file with two whitespace-separated columns ``size_bytes cumulative_probability``.
  Each shipped table is sampled with the reading its source simulator used: ``"step"``
  (each listed size is a discrete value) or ``"lin"`` (ns-2 style linear interpolation
  between consecutive points).
* **Arrivals** (:func:`poisson`) form a network-wide Poisson process whose rate follows
  the NegotiaToR load definition ``L = F / (R * N * tau)``: ``F`` mean flow size (bits),
  ``R`` per-node host-side bandwidth (bit/s), ``N`` nodes, ``tau`` mean network-wide
  inter-arrival time. So flows arrive at ``1/tau = L * R * N / (8 * F_bytes)`` per second.
* **Endpoints and pairs** follow a pattern (:data:`PATTERNS`): ``uniform``,
  ``permutation``, ``incast``, ``all-to-all``, ``skewed``. Endpoints are numbered ``0..E-1``; with
  ``hosts_per_node = H > 0`` there are ``E = N * H`` endpoints and endpoint ``e`` lives on
  node ``e // H``; with ``H = 0`` the nodes themselves are the endpoints (``E = N``).
* **Explicit flows** (:func:`flows`, :func:`from_file`) replace the generator; files are
  CSV ``start,src,dst,bytes`` or the Opera/htsim format ``src dst bytes start_ns``.

Units: times are integer picoseconds (``start_ps``), sizes integer bytes (KB = 1000 B),
rates bit/s. All randomness comes from named streams of :mod:`opendcn.rng`
(``traffic.arrivals``, ``traffic.sizes``, ``traffic.pairs``, ``traffic.permutation``,
``traffic.incast``, ``traffic.skewed``), so the same seed always gives the same flows, and changing how many
draws one stream makes never changes the others. Every bad input raises
:class:`~opendcn.errors.ConfigError` naming the field (or file and line) and the value.

>>> wl = poisson("hadoop", load=0.3, pattern="uniform")
>>> fl = wl.generate(endpoints=16, hosts_per_node=0, rate_bps=100 * 10**9, nodes=16,
...                  duration_ps=10**9, seed=1)
>>> len(fl) > 0 and bool((fl.src != fl.dst).all())
True
"""

from __future__ import annotations

import abc
import functools
import math
import os
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeGuard

import numpy as np

from ..errors import ConfigError, check_memory
from ..rng import stream
from ..units import parse_size, parse_time

__all__ = [
    "CDF",
    "FlowArrays",
    "PATTERNS",
    "Workload",
    "flows",
    "from_file",
    "request_response",
    "ring_allreduce",
    "get_cdf",
    "list_workloads",
    "mix",
    "poisson",
    "rack_matrix",
    "fanout",
    "rank_trace",
    "RANK_TRACES",
]

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "workloads"

READINGS = ("step", "lin")

# Upper bound accepted for the load fraction (overload experiments go above 1).
MAX_LOAD = 10.0


@dataclass(frozen=True)
class _Named:
    file: str
    reading: str
    description: str


# Shipped flow-size distributions. The canonical file per workload follows the
# recommendation of data/workloads/SOURCES.md; ``reading`` is the one its source
# simulator samples with.
_NAMED: dict[str, _Named] = {
    "hadoop": _Named(
        "fb_hadoop_hpcc.cdf", "lin",
        "Meta/Facebook Hadoop, all traffic (Roy et al. SIGCOMM'15); HPCC FbHdp table, "
        "60% of flows <= 1KB, 92% of bytes in flows > 100KB, max 10MB"),
    "websearch": _Named(
        "websearch_pfabric.cdf", "lin",
        "DCTCP web search (Alizadeh et al. SIGCOMM'10); pFabric/pHost 11-point table "
        "x1460B, max 29.2MB"),
    "datamining": _Named(
        "datamining_pfabric.cdf", "lin",
        "VL2 data mining (Greenberg et al. SIGCOMM'09); pFabric/pHost table x1460B, "
        "max 973MB (Shale's heavy-tailed workload)"),
    "google": _Named(
        "homa_w3_google_allrpc.cdf", "step",
        "Google all-RPC, aggregated over all applications (Homa W3, SIGCOMM'18), "
        "max 15.2MB"),
    "keyvalue": _Named(
        "homa_w1_fb_keyvalue.cdf", "step",
        "Facebook key-value/memcached (Atikoglu et al. SIGMETRICS'12; Homa W1), "
        "max 100KB"),
    "imc10": _Named(
        "imc10_aditya_phost.cdf", "lin",
        "IMC'10 'aditya' distribution (Benson et al.; pHost/dcPIM table x1460B), "
        "max 3.08MB (Shale's short-flow workload)"),
    "searchrpc": _Named(
        "homa_w2_google_searchrpc.cdf", "step",
        "Google search RPCs (Homa W2), max 3.53MB"),
    "webserver": _Named(
        "fb_webserver_homa.cdf", "step",
        "Facebook web server, intra-cluster (Roy et al. SIGCOMM'15; Homa simulator "
        "table), max 1MB"),
    "cachefollower": _Named(
        "fb_cachefollower_homa.cdf", "step",
        "Facebook cache follower, intra-cluster (Roy et al. SIGCOMM'15; Homa simulator "
        "table), max 3.84MB"),
    "alistorage": _Named(
        "alistorage2019_hpcc.cdf", "lin",
        "Alibaba distributed storage 2019 (HPCC table), max 2MB"),
    "hadoop-homa": _Named(
        "homa_w4_fb_hadoop.cdf", "step",
        "Meta/Facebook Hadoop as Homa W4 (461 points, nearly the same as 'hadoop'), "
        "max 10MB"),
    "websearch-homa": _Named(
        "homa_w5_dctcp.cdf", "step",
        "DCTCP web search as Homa W5 (400-point expansion x1442B, heavier tail than "
        "'websearch'), max 28.8MB"),
    "websearch-opera": _Named(
        "websearch_opera.cdf", "step",
        "DCTCP web search as used by Opera/Duo (16-point re-digitisation), max 28.6MB"),
    "datamining-opera": _Named(
        "datamining_opera.cdf", "step",
        "VL2 data mining as used by Opera/Duo (17 points from 100B, 51% <= 1KB), max 1GB"),
    "hadoop-interrack": _Named(
        "fb_hadoop_interrack_opera.cdf", "step",
        "Facebook Hadoop inter-rack flows only (Opera/Duo table), max 223MB"),
}

_ALIASES = {"aditya": "imc10"}

PATTERNS: dict[str, str] = {
    "uniform": "Poisson arrivals; src uniform over endpoints, dst uniform over "
               "endpoints on another node",
    "permutation": "Poisson arrivals; a random node derangement fixed per run, "
                   "dst on node perm[node(src)]",
    "incast": "Poisson incast events; incast_degree senders on other nodes each send "
              "incast_size to one receiver at the same instant",
    "all-to-all": "at start, every endpoint sends flow_size bytes to every endpoint on "
                  "another node (load ignored)",
    "skewed": "Poisson arrivals among a random fraction `active` of the nodes (fixed per "
              "run); src and dst uniform over their endpoints, on two different active nodes; "
              "load per active node",
    "group-permutation": "Poisson arrivals; a rack sends to all racks of the next group "
                         "(pod) of group_size racks, uniformly (HPC)",
    "stencil-3d": "Poisson arrivals; racks on a 3-D torus, each sends to its neighbours "
                  "along every dimension, uniformly (HPC)",
    "storage": "Poisson arrivals; first half of the racks compute, second half storage; "
               "storage sends to compute only, compute half to compute, half to storage (HPC)",
    "bisection": "Poisson arrivals; a random half of the racks sends uniformly to the "
                 "other half and back (HPC)",
}

#: the HPC patterns, drawn rack to rack from :func:`rack_matrix`
RACK_PATTERNS = ("group-permutation", "stencil-3d", "storage", "bisection")


# --------------------------------------------------------------------------- flows


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True, eq=False)
class FlowArrays:
    """Concrete flows as parallel numpy arrays, sorted by start time.

    ``start_ps`` (uint64, picoseconds, ascending; flows with equal start keep the order
    in which they were generated), ``src`` / ``dst`` (int64 endpoint numbers) and
    ``size`` (int64 bytes, > 0). Construction coerces the dtypes, stable-sorts by start
    when needed and makes the arrays read-only.

    **Dependencies** (optional, packet engine only): flow ``i`` starts only when the flows
    ``after_ids[after_ptr[i]:after_ptr[i + 1]]`` have finished (their last byte reached
    the receiver), at the last one's finish + ``gap_ps[i]``, and not before its
    ``start_ps`` (then the earliest it may start). Flows with dependencies are **not**
    re-sorted: a flow's id, which ``after_ids`` names, is its position, as given.

    **Co-flow barriers** (optional; packet engine and flow-level mode): ``coflow[i]`` is
    the co-flow of flow ``i`` (-1: none), ids dense from 0. Every flow of co-flow
    ``c >= 1`` starts only when every flow of co-flow ``c - 1`` has finished (a barrier),
    at that time + ``gap_ps[i]`` (0 without gaps), and not before its ``start_ps``. Flows
    stay sorted by start (the barriers name co-flows, not positions). Not combined with
    per-flow dependencies.

    **Application rates** (optional; packet engine, TCP and DCTCP flows): ``rate_bps[i]``
    > 0 is the rate at which flow ``i``'s application writes its bytes (an iperf-like
    on-off source): a segment goes only once its last byte has been written, so the flow
    takes at least ``size x 8 / rate`` however fast the network is; 0: every byte is there
    from the start.
    """

    start_ps: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    after_ptr: np.ndarray | None = None
    after_ids: np.ndarray | None = None
    gap_ps: np.ndarray | None = None
    coflow: np.ndarray | None = None
    rate_bps: np.ndarray | None = None

    @property
    def has_deps(self) -> bool:
        """Whether some flow waits for others by per-flow dependencies."""
        return self.after_ids is not None and len(self.after_ids) > 0

    @property
    def has_coflows(self) -> bool:
        """Whether the flows form co-flows separated by barriers."""
        return self.coflow is not None

    @property
    def waits(self) -> bool:
        """Whether some flow may start only when others have finished (dependencies or
        co-flow barriers)."""
        return self.has_deps or self.has_coflows

    def deps(self, i: int) -> list[int]:
        """The flows flow ``i`` waits for."""
        if self.after_ptr is None or self.after_ids is None:
            return []
        return [int(x) for x in self.after_ids[int(self.after_ptr[i]):int(self.after_ptr[i + 1])]]

    def __post_init__(self) -> None:
        start = np.asarray(self.start_ps)
        if start.size and start.dtype.kind in "if" and (start < 0).any():
            raise ConfigError("flows.start_ps", int(start[start < 0][0]),
                              "start times must be non-negative")
        start = np.ascontiguousarray(start, dtype=np.uint64)
        src = np.ascontiguousarray(self.src, dtype=np.int64)
        dst = np.ascontiguousarray(self.dst, dtype=np.int64)
        size = np.ascontiguousarray(self.size, dtype=np.int64)
        lengths = {len(start), len(src), len(dst), len(size)}
        if len(lengths) != 1 or any(a.ndim != 1 for a in (start, src, dst, size)):
            raise ConfigError("flows", (start.shape, src.shape, dst.shape, size.shape),
                              "start_ps, src, dst and size must be 1-D arrays of equal length")
        rate = None
        if self.rate_bps is not None:
            rate = np.ascontiguousarray(self.rate_bps, dtype=np.float64)
            if rate.ndim != 1 or len(rate) != len(start):
                raise ConfigError("flows.rate", rate.shape, f"expected one rate per flow ({len(start)})")
            bad = np.flatnonzero(~np.isfinite(rate) | (rate < 0))
            if len(bad):
                raise ConfigError(f"flows[{int(bad[0])}].rate", float(rate[bad[0]]),
                                  "an application rate is >= 0 bit/s (0: none)")
            rate = np.ceil(rate).astype(np.int64)
            if not (rate > 0).any():
                rate = None
        coflow = None
        if self.coflow is not None:
            coflow = np.ascontiguousarray(self.coflow, dtype=np.int64)
            if coflow.ndim != 1 or len(coflow) != len(start):
                raise ConfigError("flows.coflow", coflow.shape, f"expected one co-flow id per flow ({len(start)})")
            if (coflow < -1).any():
                i = int(np.flatnonzero(coflow < -1)[0])
                raise ConfigError(f"flows[{i}].coflow", int(coflow[i]), "a co-flow id is >= 0 (-1: none)")
            if self.after_ids is not None and len(self.after_ids):
                raise ConfigError("flows.coflow", "after", "co-flow barriers and per-flow dependencies cannot be "
                                  "combined")
            ids = np.unique(coflow[coflow >= 0])
            if len(ids) and ids[-1] != len(ids) - 1:
                miss = int(np.setdiff1d(np.arange(ids[-1] + 1), ids)[0])
                raise ConfigError("flows.coflow", miss, f"co-flow ids must be dense from 0: co-flow {miss} has no "
                                  f"flow (largest id {int(ids[-1])})")
            if not len(ids):
                coflow = None          # no flow in a co-flow: plain flows
        deps = (self.after_ptr is not None or self.after_ids is not None or self.gap_ps is not None) \
            and not (coflow is not None and (self.after_ids is None or not len(self.after_ids)))
        cgap = None
        if coflow is not None and self.gap_ps is not None:
            cgap = np.ascontiguousarray(self.gap_ps, dtype=np.int64)
            if cgap.ndim != 1 or len(cgap) != len(start):
                raise ConfigError("flows.gap", len(cgap), f"expected one gap per flow ({len(start)})")
            if (cgap < 0).any():
                i = int(np.flatnonzero(cgap < 0)[0])
                raise ConfigError(f"flows[{i}].gap", int(cgap[i]), "a gap must not be negative")
        if deps:
            n = len(start)
            ptr = np.ascontiguousarray(self.after_ptr if self.after_ptr is not None else np.zeros(n + 1), dtype=np.int64)
            ids = np.ascontiguousarray(self.after_ids if self.after_ids is not None else np.zeros(0), dtype=np.int64)
            gap = np.ascontiguousarray(self.gap_ps if self.gap_ps is not None else np.zeros(n), dtype=np.int64)
            if ptr.ndim != 1 or len(ptr) != n + 1 or (n + 1 and (ptr[0] != 0 or ptr[-1] != len(ids))) \
                    or (np.diff(ptr) < 0).any():
                raise ConfigError("flows.after", len(ptr), f"expected {n + 1} non-decreasing offsets from 0 to "
                                  f"{len(ids)}")
            if gap.ndim != 1 or len(gap) != n:
                raise ConfigError("flows.gap", len(gap), f"expected one gap per flow ({n})")
            if (gap < 0).any():
                i = int(np.flatnonzero(gap < 0)[0])
                raise ConfigError(f"flows[{i}].gap", int(gap[i]), "a gap must not be negative")
            if not len(ids):
                deps = False  # nothing waits: the flows are plain flows (sorted as usual)
        if not deps and start.size > 1 and (start[1:] < start[:-1]).any():
            order = np.argsort(start, kind="stable")
            start, src, dst, size = start[order], src[order], dst[order], size[order]
            if rate is not None:
                rate = rate[order]
            if coflow is not None:
                coflow = coflow[order]
                cgap = cgap[order] if cgap is not None else None
        if rate is not None:
            rate.flags.writeable = False
        object.__setattr__(self, "rate_bps", rate)
        for name, carr in (("coflow", coflow), ("gap_ps", cgap)):
            if carr is not None or name == "coflow":
                if carr is not None:
                    carr = carr.copy()
                    carr.flags.writeable = False
                object.__setattr__(self, name, carr)
        for name, arr in (("start_ps", start), ("src", src), ("dst", dst), ("size", size)):
            if arr.base is not None or arr is getattr(self, name):
                arr = arr.copy()
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        for name in ("after_ptr", "after_ids", "gap_ps"):
            if name == "gap_ps" and coflow is not None:
                continue               # set above with the co-flows
            dep_arr: np.ndarray | None = None
            if deps:
                dep_arr = {"after_ptr": ptr, "after_ids": ids, "gap_ps": gap}[name].copy()
                dep_arr.flags.writeable = False
            object.__setattr__(self, name, dep_arr)

    def __len__(self) -> int:
        return int(self.start_ps.shape[0])

    def __repr__(self) -> str:
        return f"FlowArrays({len(self)} flows, {self.total_bytes} bytes)"

    @property
    def total_bytes(self) -> int:
        """Sum of all flow sizes in bytes."""
        return int(self.size.sum(dtype=np.int64)) if len(self) else 0

    @classmethod
    def empty(cls) -> FlowArrays:
        """No flows."""
        z = np.zeros(0, dtype=np.int64)
        return cls(np.zeros(0, dtype=np.uint64), z, z, z)

    @classmethod
    def concat(cls, parts: Sequence[FlowArrays]) -> FlowArrays:
        """All flows of ``parts``, stable-sorted by start (ties keep part order); when a
        part has dependencies, in part order (ids shifted by the flows before)."""
        parts = list(parts)
        if not parts:
            return cls.empty()
        cols = (np.concatenate([p.start_ps for p in parts]), np.concatenate([p.src for p in parts]),
                np.concatenate([p.dst for p in parts]), np.concatenate([p.size for p in parts]))
        if any(p.rate_bps is not None for p in parts):
            if any(p.has_deps or p.has_coflows for p in parts):
                raise ConfigError("mix", "rate", "application rates cannot be mixed with dependencies or co-flows")
            rate = np.concatenate([p.rate_bps if p.rate_bps is not None else np.zeros(len(p), np.int64)
                                   for p in parts])
            return cls(*cols, rate_bps=rate)
        with_cf = [i for i, p in enumerate(parts) if p.has_coflows]
        if len(with_cf) > 1:
            raise ConfigError("mix", [repr(parts[i]) for i in with_cf],
                              "at most one workload may have co-flow barriers (they form one chain)")
        if with_cf and any(p.has_deps for p in parts):
            raise ConfigError("mix", "after", "co-flow barriers and per-flow dependencies cannot be combined")
        if with_cf:
            cf = np.concatenate([p.coflow if p.coflow is not None else np.full(len(p), -1, np.int64) for p in parts])
            cgaps = [p.gap_ps if p.gap_ps is not None else np.zeros(len(p), np.int64) for p in parts]
            return cls(*cols, gap_ps=np.concatenate(cgaps), coflow=cf)
        if not any(p.has_deps for p in parts):
            return cls(*cols)
        ptrs: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
        ids: list[np.ndarray] = []
        gaps: list[np.ndarray] = []
        base = 0
        for p in parts:
            n = len(p)
            ptr = p.after_ptr if p.after_ptr is not None else np.zeros(n + 1, dtype=np.int64)
            ptrs.append(ptr[1:] + sum(int(len(x)) for x in ids))
            ids.append((p.after_ids if p.after_ids is not None else np.zeros(0, dtype=np.int64)) + base)
            gaps.append(p.gap_ps if p.gap_ps is not None else np.zeros(n, dtype=np.int64))
            base += n
        return cls(*cols, after_ptr=np.concatenate(ptrs), after_ids=np.concatenate(ids), gap_ps=np.concatenate(gaps))

    def validate(self, endpoints: int) -> None:
        """Check every flow against a network with ``endpoints`` endpoints.

        Raises :class:`ConfigError` (fields ``flows.src``, ``flows.dst``, ``flows.size``)
        naming the first offending value and its flow index.
        """
        if not _is_int(endpoints) or endpoints < 1:
            raise ConfigError("endpoints", endpoints, "must be a positive integer")
        for name, arr in (("src", self.src), ("dst", self.dst)):
            bad = np.flatnonzero((arr < 0) | (arr >= endpoints))
            if bad.size:
                i = int(bad[0])
                raise ConfigError(f"flows.{name}", int(arr[i]),
                                  f"endpoint out of range 0..{endpoints - 1} (flow {i})")
        same = np.flatnonzero(self.src == self.dst)
        if same.size:
            i = int(same[0])
            raise ConfigError("flows.dst", int(self.dst[i]),
                              f"flow {i} has src == dst")
        bad = np.flatnonzero(self.size <= 0)
        if bad.size:
            i = int(bad[0])
            raise ConfigError("flows.size", int(self.size[i]),
                              f"flow sizes must be positive (flow {i})")
        if self.has_deps:
            check_dependencies([self.deps(i) for i in range(len(self))], "flows[{}].after")


def check_dependencies(after: Sequence[Sequence[int]], field: "str | Callable[[int], str]") -> None:
    """Flow dependencies are well formed: every id names a flow (``0..len - 1``), no flow
    waits for itself, directly or through a cycle. ``ConfigError`` names the flow with
    ``field.format(i)`` (e.g. ``flows[3].after``) or ``field(i)``."""
    name: Callable[[int], str] = field.format if isinstance(field, str) else field
    n = len(after)
    for i, deps in enumerate(after):
        for d in deps:
            if not _is_int(d) or not 0 <= d < n:
                raise ConfigError(name(i), list(deps), f"unknown flow {d!r} (flow ids are 0..{n - 1})")
            if d == i:
                raise ConfigError(name(i), list(deps), f"flow {i} cannot start after itself")
    # Kahn: flows left once every flow whose dependencies are all done has been removed
    # are on a cycle or wait for one
    waiting = [len(set(d)) for d in after]
    users: list[list[int]] = [[] for _ in range(n)]
    for i, deps in enumerate(after):
        for d in set(deps):
            users[d].append(i)
    ready = [i for i in range(n) if waiting[i] == 0]
    while ready:
        g = ready.pop()
        for h in users[g]:
            waiting[h] -= 1
            if waiting[h] == 0:
                ready.append(h)
    if any(waiting):
        cur = next(i for i in range(n) if waiting[i])
        seen: list[int] = []
        while cur not in seen:
            seen.append(cur)
            cur = next(int(d) for d in after[cur] if waiting[d])
        cycle = seen[seen.index(cur):] + [cur]
        raise ConfigError(name(cur), list(after[cur]), "a cycle of dependencies: flow "
                          + " after ".join(map(str, cycle)) + " (none of them could ever start)")


# --------------------------------------------------------------------------- CDFs


def _check_reading(reading: object) -> str:
    if reading not in READINGS:
        raise ConfigError("reading", reading, "must be 'step' or 'lin'")
    return reading  # type: ignore[return-value]


def _rounded(x: Fraction) -> int:
    """Size a sampled value becomes: round half to even, at least 1 byte."""
    return max(1, round(x))


def _int_floor_integral(a: Fraction, b: Fraction) -> Fraction:
    """Exact integral of floor(t) dt over [a, b], a <= b."""
    ka, kb = math.floor(a), math.floor(b)
    if ka == kb:
        return ka * (b - a)
    middle = (kb - 1) * kb // 2 - ka * (ka + 1) // 2  # sum of k for ka < k < kb
    return ka * (ka + 1 - a) + middle + kb * (b - kb)


def _segment_mean(a: Fraction, b: Fraction) -> Fraction:
    """Exact E[max(1, round(X))] for X uniform on [a, b], 0 <= a < b.

    max(1, round(x)) = floor(max(x, 1/2) + 1/2) almost everywhere for x >= 0.
    """
    half = Fraction(1, 2)
    total = Fraction(0)
    lo = a
    if a < half:
        lo = min(b, half)
        total += lo - a  # value 1 on [a, min(b, 1/2))
    if b > lo:
        total += _int_floor_integral(lo + half, b + half)
    return total / (b - a)


class CDF:
    """An empirical flow-size distribution ``P[size <= x]``.

    ``sizes`` (bytes, non-decreasing, >= 0) and ``probs`` (cumulative, non-decreasing in
    [0, 1], last = 1) describe the table; ``reading`` says how it is sampled:

    * ``"step"``: the first listed size whose cumulative probability is >= u, i.e. each
      size ``s_i`` has probability ``p_i - p_{i-1}`` (Homa, Opera/Duo, netbench);
    * ``"lin"``: linear interpolation between consecutive points (ns-2
      ``EmpiricalRandomVariable``: pFabric, pHost, ExpressPass, HPCC); a size listed twice
      is a point mass, and the first size carries the first row's probability.

    Sampled sizes are rounded to integers (half to even) and are at least 1 byte;
    :attr:`mean` is the exact mean of exactly that sampled distribution.
    """

    def __init__(self, sizes: Iterable[float], probs: Iterable[float], *,
                 reading: str = "lin", name: str = "custom", source: str = "",
                 description: str = ""):
        s = np.array(list(sizes) if not isinstance(sizes, np.ndarray) else sizes,
                     dtype=np.float64)
        p = np.array(list(probs) if not isinstance(probs, np.ndarray) else probs,
                     dtype=np.float64)
        where = source or name
        if s.ndim != 1 or s.shape != p.shape:
            raise ConfigError(where, (s.shape, p.shape),
                              "sizes and probabilities must be 1-D of equal length")
        if s.size < 2:
            raise ConfigError(where, int(s.size), "a CDF needs at least 2 rows")
        if not (np.isfinite(s).all() and np.isfinite(p).all()):
            raise ConfigError(where, "nan/inf", "sizes and probabilities must be finite")
        if (s < 0).any():
            raise ConfigError(where, float(s[s < 0][0]), "sizes must be non-negative")
        if (p < 0).any() or (p > 1).any():
            raise ConfigError(where, float(p[(p < 0) | (p > 1)][0]),
                              "probabilities must be in [0, 1]")
        if (np.diff(s) < 0).any():
            i = int(np.flatnonzero(np.diff(s) < 0)[0]) + 1
            raise ConfigError(where, float(s[i]), f"sizes decrease at row {i + 1}")
        if (np.diff(p) < 0).any():
            i = int(np.flatnonzero(np.diff(p) < 0)[0]) + 1
            raise ConfigError(where, float(p[i]), f"probabilities decrease at row {i + 1}")
        if abs(p[-1] - 1.0) > 1e-6:
            raise ConfigError(where, float(p[-1]), "last cumulative probability must be 1")
        p[-1] = 1.0
        s.flags.writeable = False
        p.flags.writeable = False
        self.sizes = s
        self.probs = p
        self.reading = _check_reading(reading)
        self.name = name
        self.source = source
        self.description = description
        self._step_values = np.maximum(1, np.rint(s)).astype(np.int64)
        self._step_values.flags.writeable = False

    # -- construction -----------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | os.PathLike, reading: str = "lin",
                  name: str | None = None, description: str = "") -> CDF:
        """Load a ``size_bytes cumulative_probability`` file (whitespace separated;
        blank lines and ``#`` comments allowed).

        Raises :class:`ConfigError` whose field is ``"<file>:<line>"`` for a malformed
        row (wrong column count, non-numeric, negative size, decreasing sizes or
        probabilities, probability outside [0, 1]), a last probability that is not 1
        (tolerance 1e-6) or fewer than 2 rows.
        """
        _check_reading(reading)
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError("workload", str(path), "no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError("workload", str(path), f"cannot read file: {e}") from None
        sizes: list[float] = []
        probs: list[float] = []
        last_line = 0
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            where = f"{path}:{lineno}"
            cols = line.split()
            if len(cols) != 2:
                raise ConfigError(where, raw.strip(),
                                  f"expected 2 columns 'size_bytes cumulative_probability', "
                                  f"got {len(cols)}")
            try:
                size, prob = float(cols[0]), float(cols[1])
            except ValueError:
                raise ConfigError(where, raw.strip(), "not a number") from None
            if not (math.isfinite(size) and math.isfinite(prob)):
                raise ConfigError(where, raw.strip(), "not a finite number")
            if size < 0:
                raise ConfigError(where, cols[0], "negative size")
            if not 0.0 <= prob <= 1.0:
                raise ConfigError(where, cols[1], "probability outside [0, 1]")
            if sizes and size < sizes[-1]:
                raise ConfigError(where, cols[0],
                                  f"sizes decrease (previous row has {sizes[-1]:g})")
            if probs and prob < probs[-1]:
                raise ConfigError(where, cols[1],
                                  f"probabilities decrease (previous row has {probs[-1]:g})")
            sizes.append(size)
            probs.append(prob)
            last_line = lineno
        if len(sizes) < 2:
            raise ConfigError(f"{path}:{max(last_line, 1)}", len(sizes),
                              "a CDF file needs at least 2 rows")
        if abs(probs[-1] - 1.0) > 1e-6:
            raise ConfigError(f"{path}:{last_line}", probs[-1],
                              "last cumulative probability must be 1")
        return cls(sizes, probs, reading=reading, name=name or path.stem,
                   source=str(path), description=description)

    @classmethod
    def named(cls, name: str, reading: str | None = None) -> CDF:
        """A shipped distribution by name (see :func:`list_workloads`), sampled with its
        source's reading unless ``reading`` overrides it."""
        key = _canonical_name(name)
        if key is None:
            raise ConfigError("workload", name,
                              f"unknown workload; known: {', '.join(_NAMED)}")
        cdf = _load_named(key)
        if reading is not None and reading != cdf.reading:
            return cdf.with_reading(reading)
        return cdf

    def with_reading(self, reading: str) -> CDF:
        """The same table sampled with another reading (``"step"`` or ``"lin"``)."""
        return CDF(self.sizes, self.probs, reading=_check_reading(reading), name=self.name,
                   source=self.source, description=self.description)

    # -- statistics and sampling ------------------------------------------------

    @functools.cached_property
    def mean(self) -> float:
        """Exact mean size in bytes of :meth:`sample`'s distribution (same reading,
        same rounding), computed from the table."""
        sizes = [Fraction(float(x)) for x in self.sizes]
        probs = [Fraction(float(x)) for x in self.probs]
        total = probs[0] * _rounded(sizes[0])
        for i in range(1, len(sizes)):
            w = probs[i] - probs[i - 1]
            if w == 0:
                continue
            if self.reading == "step" or sizes[i] == sizes[i - 1]:
                total += w * _rounded(sizes[i])
            else:
                total += w * _segment_mean(sizes[i - 1], sizes[i])
        return float(total)

    @property
    def max_bytes(self) -> int:
        """Largest size that can be sampled."""
        return int(self._step_values[-1])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` flow sizes (int64 bytes, >= 1) drawn with ``rng`` under :attr:`reading`.

        Vectorized: one uniform draw per flow, u in (0, 1].
        """
        if not _is_int(n) or n < 0:
            raise ConfigError("n", n, "sample count must be a non-negative integer")
        u = 1.0 - rng.random(int(n))
        if len(u) <= _SAMPLE_BLOCK:
            return self._sizes_at(u)
        # blocks of a million keep each numpy call short, so a Ctrl-C during a large run's
        # workload is answered at once; the draws are the same either way
        return np.concatenate([self._sizes_at(u[k:k + _SAMPLE_BLOCK]) for k in range(0, len(u), _SAMPLE_BLOCK)])

    def _sizes_at(self, u: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.probs, u, side="left")
        np.minimum(i, len(self.probs) - 1, out=i)
        if self.reading == "step":
            return self._step_values[i]
        im1 = np.maximum(i - 1, 0)
        p0, p1 = self.probs[im1], self.probs[i]
        s0, s1 = self.sizes[im1], self.sizes[i]
        denom = p1 - p0
        frac = (u - p0) / np.where(denom > 0, denom, 1.0)
        x = s0 + (s1 - s0) * np.clip(frac, 0.0, 1.0)
        x = np.where(i == 0, self.sizes[0], x)
        return np.maximum(1, np.rint(x)).astype(np.int64)

    def __repr__(self) -> str:
        return (f"CDF({self.name!r}, reading={self.reading!r}, rows={len(self.sizes)}, "
                f"mean={self.mean:.1f}B, max={self.max_bytes}B)")


_SAMPLE_BLOCK = 1 << 20


def _canonical_name(name: object) -> str | None:
    if not isinstance(name, str):
        return None
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    return key if key in _NAMED else None


@functools.lru_cache(maxsize=None)
def _load_named(key: str) -> CDF:
    info = _NAMED[key]
    return CDF.from_file(DATA_DIR / info.file, reading=info.reading, name=key,
                         description=info.description)


def get_cdf(name_or_path: CDF | str | os.PathLike, reading: str | None = None) -> CDF:
    """Resolve a flow-size distribution.

    ``name_or_path`` is a :class:`CDF` (returned as is), a shipped workload name
    (``"hadoop"``, ...; sampled with its source's reading) or a path to a
    ``size_bytes cumulative_probability`` file (sampled ``"lin"`` unless ``reading``
    says otherwise). Unknown names that are not existing files raise
    ``ConfigError("workload", name, "unknown workload; known: ...")``.
    """
    if reading is not None:
        _check_reading(reading)
    if isinstance(name_or_path, CDF):
        if reading is not None and reading != name_or_path.reading:
            return name_or_path.with_reading(reading)
        return name_or_path
    if isinstance(name_or_path, str):
        if _canonical_name(name_or_path) is not None:
            return CDF.named(name_or_path, reading)
        if name_or_path and Path(name_or_path).is_file():
            return CDF.from_file(name_or_path, reading=reading or "lin")
        raise ConfigError("workload", name_or_path,
                          f"unknown workload; known: {', '.join(_NAMED)} "
                          f"(or a path to a 'size_bytes cumulative_probability' file)")
    if isinstance(name_or_path, os.PathLike):
        return CDF.from_file(name_or_path, reading=reading or "lin")
    raise ConfigError("workload", name_or_path,
                      "expected a workload name, a CDF file path or a CDF object")


def list_workloads() -> list[dict]:
    """The shipped flow-size distributions, for listings: one dict per workload with
    ``name``, ``description``, ``mean_bytes`` (under its reading), ``max_bytes``,
    ``reading`` and ``file`` (name of the data file)."""
    out = []
    for key, info in _NAMED.items():
        cdf = _load_named(key)
        out.append({"name": key, "description": info.description,
                    "mean_bytes": cdf.mean, "max_bytes": cdf.max_bytes,
                    "reading": info.reading, "file": info.file})
    return out


# --------------------------------------------------------------------------- generators


@dataclass(frozen=True)
class _Ctx:
    endpoints: int
    hosts_per_node: int
    rate_bps: int
    nodes: int
    duration_ps: int
    seed: int
    prefix: str = ""

    @property
    def hosts(self) -> int:
        """Endpoints per node."""
        return max(1, self.hosts_per_node)

    def rng(self, name: str) -> np.random.Generator:
        return stream(self.seed, self.prefix + name)

    def child(self, prefix: str) -> _Ctx:
        return _Ctx(self.endpoints, self.hosts_per_node, self.rate_bps, self.nodes,
                    self.duration_ps, self.seed, self.prefix + prefix)


def _int_param(value: object, field: str, minimum: int) -> int:
    if not _is_int(value) or value < minimum:
        raise ConfigError(field, value, f"must be an integer >= {minimum}")
    return int(value)


class Workload(abc.ABC):
    """A recipe for flows; :meth:`generate` makes them for one network and seed."""

    #: an optional human description (summaries fall back to the class name)
    description: str

    def generate(self, *, endpoints: int, hosts_per_node: int, rate_bps: int, nodes: int,
                 duration_ps: int, seed: int) -> FlowArrays:
        """Concrete flows, sorted by start time.

        ``endpoints`` = number of traffic endpoints (``nodes`` when ``hosts_per_node``
        is 0, else ``nodes * hosts_per_node``; endpoint ``e`` lives on node
        ``e // hosts_per_node``); ``rate_bps`` = R, the per-node host-side bandwidth;
        generated flows start in ``[0, duration_ps)``; ``seed`` is the master seed.
        """
        nodes = _int_param(nodes, "nodes", 1)
        hpn = _int_param(hosts_per_node, "hosts_per_node", 0)
        endpoints = _int_param(endpoints, "endpoints", 1)
        if endpoints != nodes * max(1, hpn):
            raise ConfigError("endpoints", endpoints,
                              f"must equal nodes * max(1, hosts_per_node) = "
                              f"{nodes * max(1, hpn)}")
        ctx = _Ctx(endpoints=endpoints, hosts_per_node=hpn,
                   rate_bps=_int_param(rate_bps, "rate_bps", 1), nodes=nodes,
                   duration_ps=_int_param(duration_ps, "duration_ps", 0),
                   seed=_int_param(seed, "seed", 0))
        return self._generate(ctx)

    @abc.abstractmethod
    def _generate(self, ctx: _Ctx) -> FlowArrays:
        """Generate flows; named random streams come from ``ctx.rng(name)``."""

    def __add__(self, other: Workload) -> Workload:
        return mix(self, other)


#: bytes a flow costs: its columns here and in the engine's flow table (a bound used to
#: refuse, before drawing, a workload the machine cannot hold)
FLOW_BYTES = 256


def _poisson_times(rng: np.random.Generator, rate_per_ps: float, t0: int,
                   t_end: int) -> np.ndarray:
    """Arrival instants (uint64 ps) of a Poisson process of rate ``rate_per_ps`` in
    ``[t0, t_end)``, drawn in chunks until the end is passed."""
    span = t_end - t0
    if span <= 0 or rate_per_ps <= 0:
        return np.zeros(0, dtype=np.uint64)
    expected = span * rate_per_ps
    # a flow costs its columns here and its record in the engine: refuse before drawing
    check_memory("duration", f"{t_end / 1e6:g}us", int(expected * FLOW_BYTES),
                 f"about {expected:,.0f} flows (the load over the duration)")
    chunk = int(min(max(expected * 1.02 + 6.0 * math.sqrt(expected) + 64, 64), 1 << 22))
    mean_gap = 1.0 / rate_per_ps
    pieces = []
    t = 0.0
    while True:
        ts = t + np.cumsum(rng.exponential(mean_gap, chunk))
        if ts[-1] >= span:
            pieces.append(ts[: np.searchsorted(ts, span, side="left")])
            break
        pieces.append(ts)
        t = float(ts[-1])
    times = np.floor(np.concatenate(pieces))
    # floor keeps them < span; guard the float edge anyway
    times = times[times < span]
    return times.astype(np.uint64) + np.uint64(t0)


def _derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random permutation of 0..n-1 without fixed points (n >= 2)."""
    ident = np.arange(n)
    while True:
        perm = rng.permutation(n)
        if not (perm == ident).any():
            return perm


def _distinct_rows(rng: np.random.Generator, rows: int, m: int, k: int) -> np.ndarray:
    """``rows`` independent uniform k-subsets of 0..m-1, each row sorted ascending."""
    if rows == 0:
        return np.zeros((0, k), dtype=np.int64)
    if k * k <= 16 * m:
        # Floyd's algorithm, vectorized over rows.
        out = np.empty((rows, k), dtype=np.int64)
        for col, j in enumerate(range(m - k, m)):
            t = rng.integers(0, j + 1, rows)
            if col:
                dup = (out[:, :col] == t[:, None]).any(axis=1)
                t[dup] = j
            out[:, col] = t
    else:
        # Random keys: the k smallest of m uniform keys per row.
        per = max(1, (1 << 22) // m)
        parts = []
        for lo in range(0, rows, per):
            keys = rng.random((min(per, rows - lo), m))
            parts.append(np.argpartition(keys, k - 1, axis=1)[:, :k])
        out = np.concatenate(parts).astype(np.int64)
    out.sort(axis=1)
    return out


def _draw_sizes(flow_size: int | None, cdf: CDF | None, ctx: _Ctx, n: int) -> np.ndarray:
    """``n`` flow sizes: the fixed size, or draws from the CDF (stream traffic.sizes)."""
    if flow_size is not None:
        return np.full(n, flow_size, dtype=np.int64)
    assert cdf is not None
    return cdf.sample(ctx.rng("traffic.sizes"), n)


class _Poisson(Workload):
    def __init__(self, cdf: CDF | None, load: float, pattern: str, incast_degree: int,
                 incast_size: int, flow_size: int | None, start_ps: int, active: float = 1.0,
                 group_size: int | None = None):
        self.active = active
        self.group_size = group_size
        self.cdf = cdf
        self.load = load
        self.pattern = pattern
        self.incast_degree = incast_degree
        self.incast_size = incast_size
        self.flow_size = flow_size
        self.start_ps = start_ps

    def __repr__(self) -> str:
        what = self.cdf.name if self.cdf is not None else f"flow_size={self.flow_size}"
        extra = ""
        if self.pattern == "incast":
            what = f"incast_size={self.incast_size}"
            extra = f", incast_degree={self.incast_degree}"
        if self.pattern == "all-to-all":
            return f"poisson(all-to-all, flow_size={self.flow_size}, start={self.start_ps}ps)"
        if self.pattern == "skewed":
            extra = f", active={self.active}"
        return f"poisson({what}, load={self.load}, pattern={self.pattern!r}{extra})"

    @property
    def mean_flow_bytes(self) -> float:
        """Mean flow size F (bytes) used by the load definition."""
        if self.flow_size is not None:
            return float(self.flow_size)
        if self.pattern == "incast":
            return float(self.incast_size)
        assert self.cdf is not None
        return self.cdf.mean

    def _rate_per_ps(self, ctx: _Ctx, bytes_per_arrival: float) -> float:
        # L = F / (R N tau)  =>  1/tau = L R N / (8 F)  [per second]
        return self.load * ctx.rate_bps * ctx.nodes / (8.0 * bytes_per_arrival) / 1e12

    def _generate(self, ctx: _Ctx) -> FlowArrays:
        if ctx.nodes < 2:
            raise ConfigError("nodes", ctx.nodes,
                              f"pattern {self.pattern!r} needs at least 2 nodes")
        if self.pattern == "all-to-all":
            return self._all_to_all(ctx)
        if self.pattern == "incast":
            return self._incast(ctx)
        if self.pattern == "skewed":
            return self._skewed(ctx)
        times = _poisson_times(ctx.rng("traffic.arrivals"),
                               self._rate_per_ps(ctx, self.mean_flow_bytes),
                               self.start_ps, ctx.duration_ps)
        n = times.size
        sizes = _draw_sizes(self.flow_size, self.cdf, ctx, n)
        h, nn = ctx.hosts, ctx.nodes
        rng = ctx.rng("traffic.pairs")
        src = rng.integers(0, ctx.endpoints, n)
        if self.pattern in RACK_PATTERNS:
            m = rack_matrix(self.pattern, nn, group_size=self.group_size, seed=ctx.seed)
            dnode = _draw_rows(m, src // h, rng)
        elif self.pattern == "uniform":
            dnode = (src // h + rng.integers(1, nn, n)) % nn
        else:  # permutation
            perm = _derangement(ctx.rng("traffic.permutation"), nn)
            dnode = perm[src // h]
        dst = dnode * h + (rng.integers(0, h, n) if h > 1 else 0)
        return FlowArrays(times, src, dst, sizes)

    def _skewed(self, ctx: _Ctx) -> FlowArrays:
        # the active nodes: round(active * N), at least 2, a uniform subset fixed per run;
        # the load applies to them (each offers load x R), so 1.0 is every active node at
        # its full host-side rate
        m = min(ctx.nodes, max(2, round(self.active * ctx.nodes)))
        nodes = np.sort(ctx.rng("traffic.skewed").permutation(ctx.nodes)[:m])
        rate = self.load * ctx.rate_bps * m / (8.0 * self.mean_flow_bytes) / 1e12
        times = _poisson_times(ctx.rng("traffic.arrivals"), rate, self.start_ps, ctx.duration_ps)
        n = times.size
        sizes = _draw_sizes(self.flow_size, self.cdf, ctx, n)
        h = ctx.hosts
        rng = ctx.rng("traffic.pairs")
        si = rng.integers(0, m, n)
        di = (si + rng.integers(1, m, n)) % m
        src = nodes[si] * h + (rng.integers(0, h, n) if h > 1 else 0)
        dst = nodes[di] * h + (rng.integers(0, h, n) if h > 1 else 0)
        return FlowArrays(times, src, dst, sizes)

    def _incast(self, ctx: _Ctx) -> FlowArrays:
        h = ctx.hosts
        others = ctx.endpoints - h
        k = self.incast_degree
        if k > others:
            raise ConfigError("incast_degree", k,
                              f"must be at most the number of endpoints on other nodes "
                              f"({others})")
        times = _poisson_times(ctx.rng("traffic.arrivals"),
                               self._rate_per_ps(ctx, float(k * self.incast_size)),
                               self.start_ps, ctx.duration_ps)
        ne = times.size
        recv = ctx.rng("traffic.pairs").integers(0, ctx.endpoints, ne)
        cand = _distinct_rows(ctx.rng("traffic.incast"), ne, others, k)
        lo = (recv // h * h)[:, None]
        senders = np.where(cand >= lo, cand + h, cand)
        return FlowArrays(np.repeat(times, k), senders.ravel(), np.repeat(recv, k),
                          np.full(ne * k, self.incast_size, dtype=np.int64))

    def _all_to_all(self, ctx: _Ctx) -> FlowArrays:
        if self.start_ps >= ctx.duration_ps:
            return FlowArrays.empty()
        assert self.flow_size is not None
        h, e = ctx.hosts, ctx.endpoints
        m = e - h
        src = np.repeat(np.arange(e, dtype=np.int64), m)
        c = np.tile(np.arange(m, dtype=np.int64), e)
        lo = src // h * h
        dst = np.where(c >= lo, c + h, c)
        start = np.full(e * m, self.start_ps, dtype=np.uint64)
        return FlowArrays(start, src, dst, np.full(e * m, self.flow_size, dtype=np.int64))


def _positive_size(value: object, field: str) -> int:
    if isinstance(value, np.integer):
        value = int(value)
    size = parse_size(value, field=field)
    if size <= 0:
        raise ConfigError(field, value, "size must be positive")
    return size


def poisson(cdf: CDF | str | os.PathLike | None, load: float, pattern: str = "uniform", *,
            incast_degree: int = 20, incast_size: int | str = "1KB",
            flow_size: int | str | None = None, start: int | str = "0us",
            active: float = 0.5, group_size: int | None = None) -> Workload:
    """Open-loop traffic: a network-wide Poisson arrival process at load ``load``.

    ``cdf`` is a :class:`CDF`, a shipped workload name or a CDF file path (may be None for
    ``incast`` and ``all-to-all``, or when ``flow_size`` fixes every flow's size).
    ``load`` L in (0, 10] follows NegotiaToR's ``L = F / (R * N * tau)``: flows arrive at
    ``L * R * N / (8 * F)`` per second, F the mean flow size in bytes. ``pattern``:

    * ``uniform`` — src uniform over endpoints, dst uniform over endpoints on another node;
    * ``permutation`` — a random node derangement ``perm`` (fixed per run, from the
      seed); src uniform, dst uniform among the endpoints of node ``perm[node(src)]``;
    * ``incast`` — Poisson incast events (F = ``incast_degree * incast_size`` per
      event); each picks a receiver endpoint and ``incast_degree`` distinct senders on
      other nodes, each sending ``incast_size`` bytes at the event instant;
    * ``all-to-all`` — at ``start`` every endpoint sends ``flow_size`` bytes (required)
      to every endpoint on another node; ``load`` is ignored;
    * ``skewed`` — skewed connectivity (Duo, Zerwas et al. POMACS 2023, §4.2.8): a
      uniform random subset of ``round(active * N)`` nodes (at least 2, fixed per run)
      is active; src and dst are uniform over the endpoints of two different active
      nodes, and ``load`` applies to the active nodes only (flows arrive at
      ``L * R * N_active / (8 * F)`` per second; 1.0 = every active node at full rate).
    * the HPC patterns of Teh et al. (JOCN 2022, §6.B) — ``group-permutation``,
      ``stencil-3d``, ``storage``, ``bisection`` — pick the destination rack from the
      source rack's row of :func:`rack_matrix` (``group_size``: racks per group for
      ``group-permutation``, default a eighth of the racks), then a host in it.

    Arrivals begin at ``start`` (a time with unit, or int picoseconds) and stop at the
    run's duration.
    """
    if pattern not in PATTERNS:
        raise ConfigError("pattern", pattern, f"unknown pattern; known: {', '.join(PATTERNS)}")
    if pattern != "all-to-all":
        if (isinstance(load, (bool, np.bool_)) or not isinstance(load, (int, float, np.number))
                or not math.isfinite(float(load)) or not 0 < float(load) <= MAX_LOAD):
            raise ConfigError("load", load, f"load must be a number in (0, {MAX_LOAD:g}]")
        load = float(load)
    if (isinstance(active, (bool, np.bool_)) or not isinstance(active, (int, float, np.number))
            or not 0 < float(active) <= 1):
        raise ConfigError("active", active, "the share of active nodes must be a number in (0, 1]")
    if not _is_int(incast_degree) or incast_degree < 1:
        raise ConfigError("incast_degree", incast_degree, "must be an integer >= 1")
    isize = _positive_size(incast_size, "incast_size")
    fsize = None if flow_size is None else _positive_size(flow_size, "flow_size")
    if isinstance(start, np.integer):
        start = int(start)
    start_ps = parse_time(start, field="start")
    resolved = None if cdf is None else get_cdf(cdf)
    if group_size is not None and (not _is_int(group_size) or group_size < 1):
        raise ConfigError("group_size", group_size, "must be an integer >= 1")
    if pattern in ("uniform", "permutation", "skewed") + RACK_PATTERNS:
        if resolved is None and fsize is None:
            raise ConfigError("workload", cdf,
                              f"pattern {pattern!r} needs a flow-size distribution "
                              f"(or flow_size)")
        if resolved is not None and fsize is not None:
            raise ConfigError("flow_size", flow_size,
                              "give either a flow-size distribution or flow_size, not both")
    if pattern == "all-to-all" and fsize is None:
        raise ConfigError("flow_size", flow_size, "required for pattern 'all-to-all'")
    return _Poisson(resolved, load, pattern, int(incast_degree), isize, fsize, start_ps, float(active),
                    None if group_size is None else int(group_size))


# --------------------------------------------------------------------------- HPC patterns


def _draw_rows(m: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One column per entry of ``rows``, drawn from that row of the stochastic matrix ``m``."""
    cum = np.cumsum(m, axis=1)
    cum[:, -1] = 1.0
    u = rng.random(len(rows))
    return (cum[rows] < u[:, None]).sum(axis=1).astype(np.int64)


def _grid3(n: int) -> tuple[int, int, int]:
    """The most cubic X*Y*Z = n (X <= Y <= Z)."""
    best = (1, 1, n)
    for x in range(1, round(n ** (1 / 3)) + 2):
        if n % x:
            continue
        for y in range(x, int(math.isqrt(n // x)) + 1):
            if (n // x) % y == 0:
                z = n // x // y
                if max(x, y, z) - min(x, y, z) < max(best) - min(best):
                    best = (x, y, z)
    return best


def rack_matrix(pattern: str, nodes: int, *, group_size: int | None = None, seed: int = 1) -> np.ndarray:
    """The rack-to-rack pattern of Teh et al. (JOCN 2022, §6.B) as a row-stochastic
    ``nodes × nodes`` matrix (row = source rack, zero diagonal):

    * ``permutation`` — a random derangement (stream ``traffic.permutation``), f̄ = 1;
    * ``uniform`` — every other rack equally, f̄ = N − 1;
    * ``group-permutation`` — groups of ``group_size`` consecutive racks (default N/8,
      the paper's 8 pods); a rack sends to all racks of the next group equally;
    * ``stencil-3d`` — racks at the points of the most cubic X×Y×Z torus; a rack sends
      to its (up to 6 distinct) neighbours ±1 along each dimension equally;
    * ``storage`` — racks ``0..N/2−1`` compute, the rest storage; storage sends to the
      compute racks equally, compute sends half to the other compute racks and half to
      the storage racks;
    * ``bisection`` — a random balanced split (stream ``traffic.bisection``); each rack
      sends to the racks of the other half equally.

    >>> rack_matrix("group-permutation", 4, group_size=2)
    array([[0. , 0. , 0.5, 0.5],
           [0. , 0. , 0.5, 0.5],
           [0.5, 0.5, 0. , 0. ],
           [0.5, 0.5, 0. , 0. ]])
    >>> fanout(rack_matrix("stencil-3d", 64))
    6.0
    """
    n = _int_param(nodes, "nodes", 2)
    m = np.zeros((n, n))
    if pattern == "uniform":
        m[:] = 1.0
    elif pattern == "permutation":
        perm = _derangement(stream(seed, "traffic.permutation"), n)
        m[np.arange(n), perm] = 1.0
    elif pattern == "group-permutation":
        g = group_size if group_size is not None else n // 8
        if not _is_int(g) or g < 1 or n % g or n // g < 2:
            raise ConfigError("group_size", g, f"the groups must split the {n} racks into at least 2 equal groups")
        grp = np.arange(n) // g
        m[:] = ((grp[None, :] == (grp[:, None] + 1) % (n // g))).astype(float)
    elif pattern == "stencil-3d":
        dims = _grid3(n)
        idx = np.arange(n).reshape(dims)
        for axis in range(3):
            if dims[axis] < 2:
                continue
            for step in (1, -1):
                nb = np.roll(idx, step, axis=axis)
                m[idx.ravel(), nb.ravel()] = 1.0
    elif pattern == "storage":
        half = n // 2
        if half < 2:
            raise ConfigError("nodes", n, "the storage pattern needs at least 4 racks")
        comp, stor = np.arange(half), np.arange(half, n)
        m[np.ix_(stor, comp)] = 1.0 / half
        m[np.ix_(comp, comp)] = 0.5 / (half - 1)
        m[np.ix_(comp, stor)] = 0.5 / (n - half)
    elif pattern == "bisection":
        order = stream(seed, "traffic.bisection").permutation(n)
        a, b = order[: n // 2], order[n // 2:]
        m[np.ix_(a, b)] = 1.0
        m[np.ix_(b, a)] = 1.0
    else:
        raise ConfigError("pattern", pattern, "unknown rack pattern; known: uniform, permutation, "
                          + ", ".join(RACK_PATTERNS))
    np.fill_diagonal(m, 0.0)
    return m / m.sum(axis=1, keepdims=True)


def fanout(matrix: np.ndarray) -> float:
    """Fan-out f̄ of a rack-level traffic matrix: the mean number of non-zero entries in
    the rows that have any (Teh et al. §6.B).

    >>> fanout(np.array([[0, 1, 0], [1, 0, 0], [1, 2, 0]]))
    1.3333333333333333
    """
    nz = (np.asarray(matrix) != 0).sum(axis=1)
    nz = nz[nz > 0]
    return float(nz.mean()) if len(nz) else 0.0


# --------------------------------------------------------------------------- rank-pair traces

HPC_DIR = Path(__file__).resolve().parents[1] / "data" / "hpc"

#: shipped rank-pair matrices of Teh et al.'s HPC traces (data/hpc/SOURCES.md)
RANK_TRACES = {"amg": "teh2022_hpc_AMG.pdf.txt.gz", "amr": "teh2022_hpc_AMR.pdf.txt",
               "minidft": "teh2022_hpc_MiniDFT.pdf.txt", "fb_hadoop": "tago_facebook_2699.txt.gz"}


def _read_text(path: Path) -> str:
    import gzip

    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError("trace", str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError("trace", str(path), f"cannot read file: {e}") from None


def _read_sampled_pairs(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TAGO's Facebook Hadoop samples (``0 <unix time> <src id> <dst id> <bytes>``, ids
    from 1): the bytes of each (src, dst) pair over the whole trace, as probabilities,
    ids made ranks from 0."""
    agg: dict[tuple[int, int], int] = {}
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
        cols = line.split()
        if not cols:
            continue
        try:
            if len(cols) != 5:
                raise ValueError
            a, b, n = int(cols[2]) - 1, int(cols[3]) - 1, int(cols[4])
        except ValueError:
            raise ConfigError(f"{path}:{lineno}", line, "expected '0 <time> <src id> <dst id> <bytes>'") from None
        if a < 0 or b < 0 or n < 0:
            raise ConfigError(f"{path}:{lineno}", line, "ids must be >= 1 and bytes >= 0")
        agg[(a, b)] = agg.get((a, b), 0) + n
    pairs = sorted(k for k, v in agg.items() if v > 0)
    if not pairs:
        raise ConfigError("trace", str(path), "no pair with bytes")
    w = np.array([agg[k] for k in pairs], dtype=np.float64)
    return (np.array([k[0] for k in pairs], np.int64), np.array([k[1] for k in pairs], np.int64), w / w.sum())


def _read_rank_pairs(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if path.name.startswith("tago_facebook"):
        return _read_sampled_pairs(path)
    text = _read_text(path)
    src, dst, prob = [], [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cols = line.split(",")
        if len(cols) != 4:
            raise ConfigError(f"{path}:{lineno}", line, "expected 'pair_id,src,dst,probability'")
        try:
            a, b, p = int(cols[1]), int(cols[2]), float(cols[3])
        except ValueError:
            raise ConfigError(f"{path}:{lineno}", line, "src and dst must be integer ranks, the probability a number") from None
        if a < 0 or b < 0 or not (math.isfinite(p) and p >= 0):
            raise ConfigError(f"{path}:{lineno}", line, "ranks must be >= 0 and the probability finite and >= 0")
        src.append(a)
        dst.append(b)
        prob.append(p)
    if not prob or sum(prob) <= 0:
        raise ConfigError("trace", str(path), "no rank pair with a positive probability")
    pr = np.asarray(prob, dtype=np.float64)
    return np.asarray(src, np.int64), np.asarray(dst, np.int64), pr / pr.sum()


#: ``rank_trace(coflow_interval="auto")``: one flow per endpoint per co-flow on average
AUTO_COFLOW = -1


class _RankTrace(Workload):
    """Poisson flow arrivals placed on rank pairs by their byte probabilities."""

    def __init__(self, name: str, src: np.ndarray, dst: np.ndarray, prob: np.ndarray, cdf: CDF | None,
                 flow_size: int | None, load: float, fold: bool = False, coflow_interval: int | None = None,
                 coflow_barrier: bool = True, arrivals_until: int | None = None):
        self.arrivals_until = arrivals_until
        self.name, self.src, self.dst, self.prob = name, src, dst, prob
        self.cdf, self.flow_size, self.load, self.fold = cdf, flow_size, load, fold
        self.coflow_interval = coflow_interval
        self.coflow_barrier = coflow_barrier
        self.ranks = int(max(src.max(), dst.max())) + 1

    def __repr__(self) -> str:
        return (f"rank_trace({self.name!r}, load={self.load}, {len(self.prob)} pairs, {self.ranks} ranks"
                + (", folded" if self.fold else "")
                + (", co-flows of one flow per endpoint" if self.coflow_interval == AUTO_COFLOW
                   else f", co-flows every {self.coflow_interval} ps" if self.coflow_interval else "")
                + (", aligned arrivals without barriers" if self.coflow_interval and not self.coflow_barrier else "")
                + (f", arrivals until {self.arrivals_until} ps" if self.arrivals_until is not None else "") + ")")

    def _placed(self, endpoints: int) -> tuple[np.ndarray, np.ndarray]:
        """Source and destination endpoints of the pairs: rank r on endpoint r, or on
        r mod endpoints when folded."""
        if self.fold:
            return self.src % endpoints, self.dst % endpoints
        self._check(endpoints)
        return self.src, self.dst

    @property
    def mean_flow_bytes(self) -> float:
        return float(self.flow_size) if self.flow_size is not None else (self.cdf.mean if self.cdf else 0.0)

    def rack_matrix(self, hosts_per_node: int, nodes: int) -> np.ndarray:
        """Byte probabilities per (source rack, destination rack): rank r on host r."""
        h = max(1, hosts_per_node)
        src, dst = self._placed(nodes * h)
        m = np.zeros((nodes, nodes))
        np.add.at(m, (src // h, dst // h), self.prob)
        np.fill_diagonal(m, 0.0)
        return m

    def fanout(self, hosts_per_node: int, nodes: int) -> float:
        """Fan-out f̄ of the rack-level matrix (pairs within one rack do not count)."""
        return fanout(self.rack_matrix(hosts_per_node, nodes))

    def _check(self, endpoints: int) -> None:
        if self.ranks > endpoints:
            bad = int(self.src.max() if self.src.max() >= endpoints else self.dst.max())
            raise ConfigError("trace.rank", bad, f"rank unknown to a network of {endpoints} endpoints "
                              f"(the trace {self.name} has ranks 0..{self.ranks - 1}: one per host; "
                              f"fold=True (--fold-ranks) places rank r on endpoint r mod {endpoints})")

    def _generate(self, ctx: _Ctx) -> FlowArrays:
        psrc, pdst = self._placed(ctx.endpoints)
        rate = self.load * ctx.rate_bps * ctx.nodes / (8.0 * self.mean_flow_bytes) / 1e12
        end = ctx.duration_ps if self.arrivals_until is None else min(ctx.duration_ps, self.arrivals_until)
        times = _poisson_times(ctx.rng("traffic.arrivals"), rate, 0, end)
        n = times.size
        pick = ctx.rng("traffic.pairs").choice(len(self.prob), size=n, p=self.prob)
        src, dst = psrc[pick], pdst[pick]
        keep = src != dst
        sizes = _draw_sizes(self.flow_size, self.cdf, ctx, n)
        if not self.coflow_interval:
            return FlowArrays(times[keep], src[keep], dst[keep], sizes[keep])
        # aligned co-flows: the arrivals of [kT, (k+1)T) all start at kT, as co-flow k
        # (numbered densely over the intervals that have flows), behind a barrier
        T = np.uint64(self.coflow_interval if self.coflow_interval != AUTO_COFLOW
                      else max(1, round(ctx.endpoints / rate)))    # one flow per endpoint on average
        k = times[keep] // T
        if not self.coflow_barrier:
            return FlowArrays(k * T, src[keep], dst[keep], sizes[keep])
        _, cf = np.unique(k, return_inverse=True)
        return FlowArrays(k * T, src[keep], dst[keep], sizes[keep], coflow=cf.astype(np.int64))


def rank_trace(trace: str | os.PathLike, load: float, cdf: CDF | str | os.PathLike | None = "websearch", *,
               flow_size: int | str | None = None, fold: bool = False,
               coflow_interval: int | str | None = None, coflow_barrier: bool = True,
               arrivals_until: int | str | None = None) -> Workload:
    """Flows of an HPC application's rank-pair traffic matrix (Teh et al., JOCN 2022):
    ``trace`` is a shipped name (:data:`RANK_TRACES`: ``amg``, ``amr``, ``minidft``, and
    ``fb_hadoop``, the Facebook Hadoop samples of the authors' TAGO repository, 2 699
    endpoints, aggregated into a byte matrix) or a file ``pair_id,src,dst,probability``
    (``#`` comments; ``.gz`` allowed). Rank ``r`` runs on endpoint ``r`` (a rank the
    network does not have is a ConfigError naming it), or with ``fold`` on endpoint
    ``r mod endpoints``.
    Flows arrive as a Poisson process at ``load`` (as :func:`poisson`), each on a rank pair
    drawn by its byte probability, with a size from ``cdf`` (default ``websearch``, as the
    authors' NetBench runs) or ``flow_size``. ``.fanout(hosts_per_node, nodes)`` is the
    rack-level fan-out f̄.

    ``coflow_interval`` (a time, e.g. ``"100us"``) aligns the arrivals into co-flows
    separated by barriers, as an MPI application's communication phases (Teh et al.
    §6.A: "co-flow arrivals aligned to emulate barriers"): the flows the Poisson process
    brings in ``[kT, (k+1)T)`` form one co-flow and all start at ``kT``, but not before
    every flow of the co-flow before has finished (:class:`FlowArrays` ``coflow``). While
    the network keeps up, the offered load is ``load``, as without barriers; when it does
    not, the barriers slow the application down instead of letting a backlog grow.
    ``coflow_barrier=False`` keeps the alignment and drops the barrier: co-flow k starts
    at kT whatever the network has finished (open loop; the offered load stays ``load``
    and a backlog grows where the network cannot keep up). That is the authors' setting:
    "we emulate barrier/synchronous communications to a limited degree by aligning co-flow
    arrivals in the trace. We recognize that this may not fully capture the
    inter-dependencies between synchronous flows" (Teh et al. §6.A; NetBench replays
    the arrivals it is given).
    **DECIDE:** the paper states the alignment, not its period; ``T`` is a parameter.
    ``arrivals_until`` (a time) ends the arrivals there, a trace of fixed length in a run
    that may last longer (the run then measures how long the network takes to carry it).
    ``"auto"`` takes ``T`` = endpoints / arrival rate: each co-flow holds one flow per
    endpoint on average (every rank sends one message per phase; with the web-search
    sizes at load 0.3 on 100 Gb/s hosts, 649 µs), which ``reproduce hpc`` uses. Runs on
    the packet engine and in the flow-level mode.

    >>> wl = rank_trace("minidft", load=0.3)
    >>> wl.ranks, round(wl.fanout(16, 256), 2)
    (3885, 11.5)
    """
    name = str(trace)
    key = name.strip().lower()
    path = HPC_DIR / RANK_TRACES[key] if key in RANK_TRACES else Path(trace)
    if key not in RANK_TRACES and not path.is_file():
        raise ConfigError("trace", name, f"unknown trace; shipped: {', '.join(RANK_TRACES)} (or a file path)")
    if (isinstance(load, (bool, np.bool_)) or not isinstance(load, (int, float, np.number))
            or not math.isfinite(float(load)) or not 0 < float(load) <= MAX_LOAD):
        raise ConfigError("load", load, f"load must be a number in (0, {MAX_LOAD:g}]")
    src, dst, prob = _read_rank_pairs(path)
    fsize = None if flow_size is None else _positive_size(flow_size, "flow_size")
    resolved = None if fsize is not None or cdf is None else get_cdf(cdf)
    if resolved is None and fsize is None:
        raise ConfigError("workload", cdf, "a rank trace needs a flow-size distribution (or flow_size)")
    if not isinstance(fold, (bool, np.bool_)):
        raise ConfigError("fold", fold, "expected True or False")
    interval = None
    if isinstance(coflow_interval, str) and coflow_interval.strip().lower() == "auto":
        interval = AUTO_COFLOW
    elif coflow_interval is not None:
        interval = parse_time(coflow_interval, field="coflow_interval")
        if interval <= 0:
            raise ConfigError("coflow_interval", coflow_interval, "must be a positive time")
    if not isinstance(coflow_barrier, (bool, np.bool_)):
        raise ConfigError("coflow_barrier", coflow_barrier, "expected True or False")
    until = None
    if arrivals_until is not None:
        until = parse_time(arrivals_until, field="arrivals_until")
        if until <= 0:
            raise ConfigError("arrivals_until", arrivals_until, "must be a positive time")
    return _RankTrace(key if key in RANK_TRACES else path.name, src, dst, prob, resolved, fsize, float(load),
                      bool(fold), interval, bool(coflow_barrier), until)


class _Mix(Workload):
    def __init__(self, parts: Sequence[Workload]):
        self.parts = tuple(parts)

    def __repr__(self) -> str:
        return f"mix({', '.join(map(repr, self.parts))})"

    def _generate(self, ctx: _Ctx) -> FlowArrays:
        # The first part keeps the plain stream names, so adding parts never changes
        # its flows; later parts get their own streams.
        out = [p._generate(ctx if i == 0 else ctx.child(f"mix{i}/"))
               for i, p in enumerate(self.parts)]
        return FlowArrays.concat(out)


def mix(*workloads: Workload) -> Workload:
    """Several workloads at once (e.g. ``hadoop`` background plus incasts): the union of
    their flows, stable-sorted by start. The first keeps the plain random streams,
    each later one draws from its own (``mix<i>/traffic.*``)."""
    if not workloads:
        raise ConfigError("mix", (), "needs at least one workload")
    for i, w in enumerate(workloads):
        if not isinstance(w, Workload):
            raise ConfigError(f"mix[{i}]", w, "not a workload")
    return _Mix(workloads)


# --------------------------------------------------------------------------- explicit flows


class _Explicit(Workload):
    """Fixed flows; ``where(i)`` names flow ``i`` in error messages."""

    def __init__(self, start: np.ndarray, src: np.ndarray, dst: np.ndarray,
                 size: np.ndarray, labels: "Sequence[str] | _IndexLabels", origin: str,
                 after: Sequence[Sequence[int]] | None = None, gap: np.ndarray | None = None,
                 rate: np.ndarray | None = None):
        self.rate = rate
        self.start = start
        self.src = src
        self.dst = dst
        self.size = size
        self.labels = labels
        self.origin = origin
        self.after = after
        self.gap = gap

    def __repr__(self) -> str:
        return f"flows({self.origin}, {len(self.start)} flows)"

    def _generate(self, ctx: _Ctx) -> FlowArrays:
        for name, arr in (("src", self.src), ("dst", self.dst)):
            bad = np.flatnonzero(arr >= ctx.endpoints)
            if bad.size:
                i = int(bad[0])
                raise ConfigError(f"{self.labels[i]}{name}", int(arr[i]),
                                  f"unknown endpoint; the network has endpoints "
                                  f"0..{ctx.endpoints - 1}")
        same = np.flatnonzero(self.src == self.dst)
        if same.size:
            i = int(same[0])
            raise ConfigError(f"{self.labels[i]}dst", int(self.dst[i]), "src == dst")
        if self.after is not None and any(self.after):
            ptr = np.zeros(len(self.after) + 1, dtype=np.int64)
            np.cumsum([len(a) for a in self.after], out=ptr[1:])
            ids = np.array([d for a in self.after for d in a], dtype=np.int64)
            return FlowArrays(self.start, self.src, self.dst, self.size, after_ptr=ptr, after_ids=ids,
                              gap_ps=self.gap, rate_bps=self.rate)
        return FlowArrays(self.start, self.src, self.dst, self.size, rate_bps=self.rate)


def _endpoint(value: object, field: str) -> int:
    if not _is_int(value) or value < 0:
        raise ConfigError(field, value, "expected a non-negative integer endpoint")
    return int(value)


def flows(entries: Iterable[Sequence[object]], *, rate: Sequence[object] | None = None) -> Workload:
    """Explicit flows: each entry is ``(start, src, dst, bytes)`` with ``start`` a time
    with unit (``"5us"``) or int picoseconds and ``bytes`` an int or a size with unit
    (``"64KB"``). Bad entries raise :class:`ConfigError` naming ``flows[i].start`` etc.
    Flows are returned sorted by start (stable); none is dropped, whatever the duration.

    **Dependencies** (packet engine): an entry ``(start, src, dst, bytes, after)`` or
    ``(start, src, dst, bytes, after, gap)`` starts only when the flows ``after`` (a flow
    id or a list of ids; a flow's id is its entry's index) have finished — their last
    byte reached the receiver — at the last one's finish plus ``gap`` (a time, default
    0), and not before its ``start``. The engine starts it then (an event, no polling).
    An unknown id, a flow after itself or a cycle raise :class:`ConfigError` naming
    ``flows[i].after``. With dependencies the flows keep the order given (flow ``i`` of
    the result is entry ``i``); a flow whose dependencies do not all finish by the end of
    the run never starts (summary ``flows.not_started``; its ``start_ps`` is null).

    **Application rates** (packet engine, TCP flows): ``rate``, one entry per flow, a bit
    rate (``"100Mbps"``, a number of bit/s, or None / 0 for none) at which the flow's
    application writes its bytes: the flow then takes at least ``bytes x 8 / rate``.

    >>> wl = flows([(0, 0, 1, "1MB"), ("1us", 1, 2, "1MB", 0), (0, 2, 0, "10KB", [0, 1], "5us")])
    >>> flows([(0, 0, 1, "1MB")], rate=["100Mbps"]).rate.tolist()
    [100000000]
    """
    entries = list(entries)
    rates = None
    if rate is not None:
        if isinstance(rate, (str, bytes)) or not isinstance(rate, Sequence) or len(rate) != len(entries):
            raise ConfigError("flows.rate", rate if isinstance(rate, (str, bytes)) else f"{len(rate)} rates"
                              if isinstance(rate, Sequence) else rate, f"expected one rate per flow ({len(entries)})")
        from ..units import parse_rate

        def one(i: int, r: object) -> int:
            if r is None:
                return 0
            if isinstance(r, (int, float, np.integer, np.floating)) and not isinstance(r, bool):
                if not math.isfinite(float(r)) or r < 0:
                    raise ConfigError(f"flows[{i}].rate", r, "expected a rate >= 0 bit/s (0: none)")
                return int(math.ceil(float(r)))
            return parse_rate(r, f"flows[{i}].rate")

        rates = np.array([one(i, r) for i, r in enumerate(rate)], dtype=np.int64)
    starts, srcs, dsts, sizes = [], [], [], []
    after: list[list[int]] = []
    gaps: list[int] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, (str, bytes)) or not isinstance(entry, Sequence) or len(entry) not in (4, 5, 6):
            raise ConfigError(f"flows[{i}]", entry, "expected (start, src, dst, bytes[, after[, gap]])")
        start, src, dst, size = entry[:4]
        if isinstance(start, np.integer):
            start = int(start)
        starts.append(parse_time(start, field=f"flows[{i}].start"))
        srcs.append(_endpoint(src, f"flows[{i}].src"))
        dsts.append(_endpoint(dst, f"flows[{i}].dst"))
        sizes.append(_positive_size(size, f"flows[{i}].bytes"))
        deps = entry[4] if len(entry) > 4 else None
        if deps is None:
            deps = []
        elif _is_int(deps):
            deps = [deps]
        elif isinstance(deps, (str, bytes)) or not isinstance(deps, Iterable):
            raise ConfigError(f"flows[{i}].after", deps, "expected a flow id or a list of flow ids")
        deps = list(deps)
        for d in deps:
            if not _is_int(d):
                raise ConfigError(f"flows[{i}].after", deps, f"flow ids are integers, not {d!r}")
        after.append(sorted({int(d) for d in deps}))
        g = entry[5] if len(entry) > 5 else 0
        if isinstance(g, np.integer):
            g = int(g)
        gaps.append(parse_time(g, field=f"flows[{i}].gap"))
        if gaps[-1] and not after[-1]:
            raise ConfigError(f"flows[{i}].gap", entry[5], "a gap needs flows to wait for (after)")
    labels = _IndexLabels("flows[{}].")
    deps_given = any(after)
    if deps_given:
        check_dependencies(after, "flows[{}].after")
    return _Explicit(np.array(starts, dtype=np.uint64), np.array(srcs, dtype=np.int64),
                     np.array(dsts, dtype=np.int64), np.array(sizes, dtype=np.int64),
                     labels, "list", after if deps_given else None,
                     np.array(gaps, dtype=np.int64) if deps_given else None, rates)


def flows_from_arrays(start_ps: Any, src: Any, dst: Any, size: Any, *, after: Sequence[Sequence[int]] | None = None,
                      rate_bps: Any = None) -> Workload:
    """Explicit flows from arrays (start in picoseconds, endpoints, bytes; ``after``: per
    flow the ids of the flows it waits for, as :func:`flows`; ``rate_bps``: per flow an
    application rate in bit/s, 0 for none), checked as a whole rather than row by row: a
    million flows take a fraction of a second where :func:`flows` parses each entry.

    >>> len(flows_from_arrays([0, 5], [0, 1], [1, 0], [1500, 3000]).generate(
    ...     endpoints=2, hosts_per_node=0, rate_bps=10**9, nodes=2, duration_ps=10, seed=1))
    2
    """
    start = np.asarray(start_ps)
    if start.size and start.dtype.kind in "if" and (start < 0).any():
        raise ConfigError("flows.start_ps", int(start[start < 0][0]), "start times must be non-negative")
    arrs = [np.ascontiguousarray(start, dtype=np.uint64)] + [np.ascontiguousarray(a, dtype=np.int64)
                                                              for a in (src, dst, size)]
    if len({len(a) for a in arrs}) != 1:
        raise ConfigError("flows", tuple(len(a) for a in arrs), "start_ps, src, dst and size must have equal length")
    for name, a in (("src", arrs[1]), ("dst", arrs[2])):
        if (a < 0).any():
            i = int(np.flatnonzero(a < 0)[0])
            raise ConfigError(f"flows[{i}].{name}", int(a[i]), "expected a non-negative integer endpoint")
    if (arrs[3] <= 0).any():
        i = int(np.flatnonzero(arrs[3] <= 0)[0])
        raise ConfigError(f"flows[{i}].bytes", int(arrs[3][i]), "size must be positive")
    deps = None
    if after is not None and any(after):
        if len(after) != len(arrs[0]):
            raise ConfigError("flows.after", len(after), f"expected one list per flow ({len(arrs[0])})")
        deps = [sorted({int(d) for d in a}) for a in after]
        check_dependencies(deps, "flows[{}].after")
    rate = None
    if rate_bps is not None:
        r = np.asarray(rate_bps, dtype=np.float64)
        if r.shape != arrs[0].shape or not np.isfinite(r).all() or (r < 0).any():
            raise ConfigError("flows.rate", r.shape, f"expected one rate >= 0 bit/s per flow ({len(arrs[0])})")
        rate = np.ceil(r).astype(np.int64) if r.any() else None
    return _Explicit(arrs[0], arrs[1], arrs[2], arrs[3], _IndexLabels("flows[{}]."), "arrays", deps,
                     np.zeros(len(arrs[0]), dtype=np.int64) if deps else None, rate)


def ring_allreduce(endpoints: Sequence[int], size: object, start: object = 0, *, sync: bool = False,
                   gap: object = 0) -> list[list[Any]]:
    """The traffic of a ring all-reduce (as Gloo's ring algorithm) of ``size`` bytes over
    ``endpoints`` (in ring order, at least 2, distinct), as explicit flow entries for
    :func:`flows` or the ``flows`` run option.

    A ring all-reduce of S bytes on n members runs 2(n - 1) steps (n - 1 reduce-scatter,
    n - 1 all-gather); in every step each member sends one chunk of ceil(S / n) bytes to
    its successor.

    * ``sync=False`` (pipelined, ``[start_ps, src, dst, bytes]``): each member sends its
      2(n - 1) chunks to its successor as one flow of 2(n - 1) * ceil(S / n) bytes, all
      starting at ``start``: the bandwidth term of the ring's time, without the per-step
      wait of a synchronous implementation.
    * ``sync=True`` (synchronous, ``[start_ps, src, dst, bytes, after]``): one flow per
      (step, ring link), 2(n - 1) * n flows; flow ``k * n + i`` is member i's step-k
      send to member i + 1. **DECIDE (dependency rule):** member i's step k + 1 starts
      when its step-k *receive* has finished — the flow from member i - 1 in step k — plus
      ``gap`` (a per-step compute time, default 0); it does not wait for its own step-k
      send (as a ring member forwards the chunk it has just received and reduced, while
      its NIC may still be sending). Step 0 starts at ``start``. The all-reduce finishes
      when the last flow of step 2(n - 1) - 1 does.

    >>> ring_allreduce([0, 1, 2, 3], "800KB")[:2]
    [[0, 0, 1, 1200000], [0, 1, 2, 1200000]]
    >>> ring_allreduce([0, 1, 2, 3], "800KB", sync=True)[3:6]
    [[0, 3, 0, 200000, []], [0, 0, 1, 200000, [3]], [0, 1, 2, 200000, [0]]]
    """
    members = [_endpoint(e, f"ring_allreduce.endpoints[{i}]") for i, e in enumerate(endpoints)]
    if len(members) < 2:
        raise ConfigError("ring_allreduce.endpoints", list(endpoints), "a ring needs at least 2 members")
    if len(set(members)) != len(members):
        raise ConfigError("ring_allreduce.endpoints", members, "members must be distinct")
    if not isinstance(sync, bool):
        raise ConfigError("ring_allreduce.sync", sync, "expected True or False")
    n = len(members)
    total = _positive_size(size, "ring_allreduce.size")
    t0 = parse_time(start, field="ring_allreduce.start")
    g = parse_time(gap, field="ring_allreduce.gap")
    if g and not sync:
        raise ConfigError("ring_allreduce.gap", gap, "a per-step gap needs sync=True")
    chunk = -(-total // n)
    if not sync:
        return [[t0, members[i], members[(i + 1) % n], 2 * (n - 1) * chunk] for i in range(n)]
    out: list[list[Any]] = []
    for k in range(2 * (n - 1)):
        for i in range(n):
            after = [] if k == 0 else [(k - 1) * n + (i - 1) % n]
            row: list[Any] = [t0, members[i], members[(i + 1) % n], chunk, after]
            if g and k:
                row.append(g)
            out.append(row)
    return out


def request_response(server: int, clients: Sequence[int], size: object, interval: object, count: int, *,
                     start: object = 0, response_size: object | None = None,
                     coupled: bool = False, gap: object = 0) -> list[list[Any]]:
    """Memcached-like request/response traffic as explicit flow entries: every client
    sends ``count`` requests of ``size`` bytes to ``server``, one every ``interval``, the
    clients staggered evenly over one interval (client k of n starts at
    ``start + k * interval / n``); the server answers each with a flow of
    ``response_size`` bytes (default: ``size``, a GET of the value a SET stored).

    * ``coupled=False`` (``[start_ps, src, dst, bytes]``): the response starts at the same
      instant as its request; each direction is timed on its own.
    * ``coupled=True`` (``[start_ps, src, dst, bytes, after]``): the response starts when
      its request has finished (its last byte reached the server), plus ``gap`` (the
      server's processing time, default 0): it follows its request in the list and names
      it in ``after``. A response's FCT is then measured from its own start; the
      request-to-response time is the response's finish minus the request's start.

    >>> request_response(0, [1, 2], 4200, "1ms", 1)
    [[0, 1, 0, 4200], [0, 0, 1, 4200], [500000000, 2, 0, 4200], [500000000, 0, 2, 4200]]
    >>> request_response(0, [1, 2], 4200, "1ms", 1, coupled=True)[:2]
    [[0, 1, 0, 4200], [0, 0, 1, 4200, [0]]]
    """
    srv = _endpoint(server, "request_response.server")
    cl = [_endpoint(c, f"request_response.clients[{i}]") for i, c in enumerate(clients)]
    if not cl:
        raise ConfigError("request_response.clients", list(clients), "needs at least one client")
    if srv in cl:
        raise ConfigError("request_response.clients", cl, f"the server {srv} cannot be a client")
    req = _positive_size(size, "request_response.size")
    resp = req if response_size is None else _positive_size(response_size, "request_response.response_size")
    iv = parse_time(interval, field="request_response.interval")
    if iv <= 0:
        raise ConfigError("request_response.interval", interval, "must be positive")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError("request_response.count", count, "expected an integer >= 1")
    t0 = parse_time(start, field="request_response.start")
    if not isinstance(coupled, bool):
        raise ConfigError("request_response.coupled", coupled, "expected True or False")
    g = parse_time(gap, field="request_response.gap")
    if g and not coupled:
        raise ConfigError("request_response.gap", gap, "a server processing gap needs coupled=True")
    out: list[list[Any]] = []
    for j in range(count):
        for k, c in enumerate(cl):
            t = t0 + j * iv + k * iv // len(cl)
            out.append([t, c, srv, req])
            out.append([t, srv, c, resp])
    out.sort(key=lambda e: e[0])
    if coupled:
        # each response follows its request (stable sort keeps every pair adjacent)
        for i in range(1, len(out), 2):
            out[i] = out[i] + ([[i - 1], g] if g else [[i - 1]])
    return out


class _IndexLabels:
    """Lazy labels ``fmt.format(i)`` (explicit-flow error prefixes)."""

    def __init__(self, fmt: str, numbers: Sequence[int] | None = None):
        self.fmt = fmt
        self.numbers = numbers

    def __getitem__(self, i: int) -> str:
        return self.fmt.format(i if self.numbers is None else self.numbers[i])


_DECIMAL = re.compile(r"^[0-9]*\.?[0-9]+$")


def _digits(tok: str) -> bool:
    return tok.isascii() and tok.isdigit()


def from_file(path: str | os.PathLike) -> Workload:
    """Explicit flows from a file, in one of two formats:

    * CSV ``start,src,dst,bytes`` (optional header line ``start,src,dst,bytes``):
      ``start`` a time with unit (``5us``) or an integer number of picoseconds,
      ``bytes`` an integer or a size with unit (``64KB``); with the header line
      ``start,src,dst,bytes,after[,gap]``, the columns ``after`` (ids of the flows this
      one waits for, separated by ``;`` or spaces, empty for none; a flow's id is its
      data row's index from 0) and ``gap`` (a time), as the entries of :func:`flows`;
    * Opera/htsim (detected when the file has no comma): whitespace-separated
      ``src dst bytes start_ns`` per line;
    * htsim's connection matrix (detected by its ``Nodes N`` line): ``Nodes N``,
      ``Connections C``, then per flow ``src->dst [id I] start PS size B [prio P]``
      (``start`` in picoseconds, as htsim's ``ConnectionMatrix::load`` reads it; ``id`` and
      ``prio`` are accepted and not used). Flows started by htsim's triggers, its failure
      lines and its endless flows (``size 0``) are refused by name.

    Blank lines and ``#`` comments are allowed. Malformed lines raise
    :class:`ConfigError` whose field is ``"<file>:<line> <column>"``; endpoints beyond the
    network are reported the same way when flows are generated.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("flows-file", str(p), "no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError("flows-file", str(p), f"cannot read file: {e}") from None
    first_line = next((ln.split("#", 1)[0].split() for ln in text.splitlines() if ln.split("#", 1)[0].strip()), [])
    if first_line[:1] == ["Nodes"]:
        return _connection_matrix(p, text)
    csv = "," in text
    starts: list[int] = []
    srcs: list[int] = []
    dsts: list[int] = []
    sizes: list[int] = []
    lines: list[int] = []
    after: list[list[int]] = []
    gaps: list[int] = []
    first = True
    width = 4
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{p}:{lineno}"
        if csv:
            cols = [c.strip() for c in line.split(",")]
            if first and [c.lower() for c in cols] == ["start", "src", "dst", "bytes", "after", "gap"][:len(cols)] \
                    and len(cols) >= 4:
                first = False
                width = len(cols)
                continue
            first = False
            if len(cols) != width:
                raise ConfigError(where, raw.strip(),
                                  f"expected {width} comma-separated columns "
                                  f"{','.join(['start', 'src', 'dst', 'bytes', 'after', 'gap'][:width])}, got "
                                  f"{len(cols)}" + ("" if width > 4 else " (the columns after,gap need the header "
                                                    "line start,src,dst,bytes,after[,gap])"))
            t_tok, s_tok, d_tok, b_tok = cols[:4]
            deps: list[int] = []
            for tok in (cols[4].replace(";", " ").split() if len(cols) > 4 else []):
                if not _digits(tok):
                    raise ConfigError(f"{where} after", cols[4], "expected flow ids (integers from 0) separated "
                                      "by ';' or spaces")
                deps.append(int(tok))
            after.append(sorted(set(deps)))
            g_tok = cols[5] if len(cols) > 5 else ""
            gaps.append(0 if not g_tok else int(g_tok) if _digits(g_tok) else parse_time(g_tok, field=f"{where} gap"))
            start = int(t_tok) if _digits(t_tok) else parse_time(t_tok, field=f"{where} start")
            size = int(b_tok) if _digits(b_tok) else parse_size(b_tok, field=f"{where} bytes")
        else:
            cols = line.split()
            if len(cols) != 4:
                raise ConfigError(where, raw.strip(),
                                  f"expected 4 whitespace-separated columns "
                                  f"'src dst bytes start_ns', got {len(cols)}")
            s_tok, d_tok, b_tok, t_tok = cols
            if _digits(t_tok):
                start = int(t_tok) * 1000
            else:
                start = _decimal_ns_to_ps(t_tok, f"{where} start_ns")
            if not _digits(b_tok):
                raise ConfigError(f"{where} bytes", b_tok,
                                  "expected a positive integer number of bytes")
            size = int(b_tok)
        if not _digits(s_tok):
            raise ConfigError(f"{where} src", s_tok, "expected a non-negative integer endpoint")
        if not _digits(d_tok):
            raise ConfigError(f"{where} dst", d_tok, "expected a non-negative integer endpoint")
        if size <= 0:
            raise ConfigError(f"{where} bytes", b_tok, "flow size must be positive")
        starts.append(start)
        srcs.append(int(s_tok))
        dsts.append(int(d_tok))
        sizes.append(size)
        lines.append(lineno)
    deps_given = any(after)
    if gaps and any(gaps) and not deps_given:
        raise ConfigError(f"{p}:{lines[next(i for i, g in enumerate(gaps) if g)]} gap", "gap",
                          "a gap needs flows to wait for (after)")
    if deps_given:
        # errors name the flow's line
        check_dependencies(after, lambda i: f"{p}:{lines[i]} after")
    return _Explicit(np.array(starts, dtype=np.uint64), np.array(srcs, dtype=np.int64),
                     np.array(dsts, dtype=np.int64), np.array(sizes, dtype=np.int64),
                     _IndexLabels(f"{p}:{{}} ", lines), str(p), after if deps_given else None,
                     np.array(gaps, dtype=np.int64) if deps_given else None)


def _connection_matrix(p: Path, text: str) -> Workload:
    """htsim's connection matrix (see :func:`from_file`)."""
    starts: list[int] = []
    srcs: list[int] = []
    dsts: list[int] = []
    sizes: list[int] = []
    lines: list[int] = []
    declared: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        tok = raw.split("#", 1)[0].split()
        if not tok:
            continue
        where = f"{p}:{lineno}"
        if tok[0] in ("Nodes", "Connections", "Triggers", "Failures"):
            if len(tok) != 2 or not _digits(tok[1]):
                raise ConfigError(where, raw.strip(), f"expected '{tok[0]} <count>'")
            if tok[0] in ("Triggers", "Failures") and int(tok[1]):
                raise ConfigError(where, raw.strip(), f"htsim's {tok[0].lower()} are not supported: give every "
                                                      "flow a start time (dependencies: the CSV format's after "
                                                      "column)")
            declared[tok[0]] = int(tok[1])
            continue
        if tok[0] in ("trigger", "failure"):
            raise ConfigError(where, raw.strip(), f"htsim's {tok[0]} lines are not supported")
        if "->" not in tok[0]:
            raise ConfigError(where, raw.strip(), "expected 'src->dst start PS size BYTES' (htsim connection matrix)")
        s_tok, d_tok = tok[0].split("->", 1)
        if not (_digits(s_tok) and _digits(d_tok)):
            raise ConfigError(f"{where} src->dst", tok[0], "expected two non-negative integer endpoints")
        fields: dict[str, str] = {}
        i = 1
        while i < len(tok):
            key = tok[i]
            if key == "addon":
                raise ConfigError(f"{where} addon", key, "htsim's trigger options are not supported")
            if key not in ("start", "size", "id", "prio", "trigger", "send_done_trigger", "recv_done_trigger"):
                raise ConfigError(f"{where} {key}", raw.strip(), "unknown field; expected start, size, id, prio")
            if i + 1 >= len(tok):
                raise ConfigError(f"{where} {key}", raw.strip(), "missing value")
            if key.endswith("trigger"):
                raise ConfigError(f"{where} {key}", tok[i + 1], "htsim's triggers are not supported: give the flow a "
                                                                "start time (dependencies: the CSV format's after column)")
            fields[key] = tok[i + 1]
            i += 2
        if "start" not in fields:
            raise ConfigError(f"{where} start", raw.strip(), "every flow needs a start time (picoseconds)")
        if "size" not in fields:
            raise ConfigError(f"{where} size", raw.strip(), "every flow needs a size (bytes)")
        st = fields["start"]
        try:
            dec = Decimal(st)
        except InvalidOperation:
            raise ConfigError(f"{where} start", st, "expected a number of picoseconds") from None
        if dec < 0 or dec != dec.to_integral_value():
            raise ConfigError(f"{where} start", st, "expected a whole, non-negative number of picoseconds")
        if not _digits(fields["size"]) or int(fields["size"]) == 0:
            raise ConfigError(f"{where} size", fields["size"], "expected a positive number of bytes (htsim's size 0, "
                                                               "an endless flow, has no completion time)")
        starts.append(int(dec))
        srcs.append(int(s_tok))
        dsts.append(int(d_tok))
        sizes.append(int(fields["size"]))
        lines.append(lineno)
    if "Connections" in declared and declared["Connections"] != len(starts):
        raise ConfigError(f"{p} Connections", declared["Connections"], f"the file lists {len(starts)} connections")
    n = declared.get("Nodes")
    bad = next((i for i in range(len(starts)) if n is not None and max(srcs[i], dsts[i]) >= n), None)
    if bad is not None:
        raise ConfigError(f"{p}:{lines[bad]} src->dst", f"{srcs[bad]}->{dsts[bad]}", f"beyond 'Nodes {n}'")
    return _Explicit(np.array(starts, dtype=np.uint64), np.array(srcs, dtype=np.int64),
                     np.array(dsts, dtype=np.int64), np.array(sizes, dtype=np.int64),
                     _IndexLabels(f"{p}:{{}} ", lines), str(p), None, None)


def _decimal_ns_to_ps(tok: str, field: str) -> int:
    if not _DECIMAL.match(tok):
        raise ConfigError(field, tok, "expected a non-negative number of nanoseconds")
    try:
        ps = Decimal(tok) * 1000
    except InvalidOperation:  # pragma: no cover - regex guards this
        raise ConfigError(field, tok, "not a number") from None
    if ps != ps.to_integral_value():
        raise ConfigError(field, tok, "not a whole number of picoseconds")
    return int(ps)
