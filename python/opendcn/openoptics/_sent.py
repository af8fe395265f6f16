"""What a run of the compatibility layer sends, as columns: one row per engine flow (a UDP
datagram, a TCP connection, an echo reply), grouped by the traffic spec it belongs to.

A datagram stream is one spec with its datagrams as rows of numpy arrays, built at once
from the spec's numbers (``num_packets`` every ``interval_s``, or ``rate`` in datagrams of
``packet_size_bytes``), never one Python object per datagram; a spec's statistics read
its rows only and are kept once computed, so a million datagrams start in seconds and
every ``stats()`` call after the first is a lookup.

>>> from opendcn.openoptics.traffic import UdpFlowSpec
>>> spec = UdpFlowSpec(0, 1, 0.0, 1.0, 3, 1000, 0.25)
>>> s = Sent.of([spec], simulation_stop_s=0.6)
>>> s.start.tolist(), s.size.tolist()          # the third datagram is due at 0.5 s
([0, 250000000000, 500000000000], [1000, 1000, 1000])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError
from .traffic import FlowStats, OnOffFlowSpec, Spec, TcpBulkFlowSpec, UdpFlowSpec

PS = 10**12
UDP_IP_BYTES = 28          # UDP + IPv4 headers counted in tx/rx bytes


def seconds_ps(s: Any) -> Any:
    """Seconds (a float or an array of them) to whole picoseconds, rounded half to even
    as Python's ``round``."""
    if isinstance(s, np.ndarray):
        return np.rint(s * float(PS)).astype(np.int64)
    return int(round(float(s) * PS))


def _addr(host: int) -> str:
    return f"10.0.{host // 250}.{host % 250 + 1}"


class Sent:
    """The rows of a run (see the module documentation). Columns: ``spec`` (index into
    :attr:`specs`), ``src``, ``dst``, ``size`` (bytes), ``start`` (ps; a reply's is when
    its request arrived, -1 if it never did), ``seq``, ``reply_of`` (the request's row, -1
    for a request), ``rate`` (a TCP flow's application rate in bit/s, 0: none),
    ``finish`` (ps, -1: not delivered), ``retx`` (segments a TCP sender sent again)."""

    COLUMNS = ("spec", "src", "dst", "size", "start", "seq", "reply_of", "rate", "finish", "retx")

    def __init__(self, specs: Sequence[Spec], cols: dict[str, np.ndarray]):
        self.specs = list(specs)
        self.index = {id(s): i for i, s in enumerate(self.specs)}
        for name in self.COLUMNS:
            setattr(self, name, cols[name])
        self._groups: list[np.ndarray] | None = None
        self._stats: dict[tuple[int, bool], FlowStats] = {}

    spec: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    start: np.ndarray
    seq: np.ndarray
    reply_of: np.ndarray
    rate: np.ndarray
    finish: np.ndarray
    retx: np.ndarray

    def __len__(self) -> int:
        return len(self.src)

    @classmethod
    def of(cls, specs: Sequence[Spec], simulation_stop_s: float, host_link_bps: float = 1e9) -> Sent:
        """The rows the specs send before ``simulation_stop_s``: a UDP train's datagrams
        (none at or after its stop), a UDP on-off stream's datagrams at its rate (the last
        one shorter where ``max_bytes`` ends it), one row per TCP flow (bulk without a size:
        what the host link carries until its stop; on-off: the bytes its application writes
        at its rate, sent at that rate)."""
        parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, float]] = []   # spec, start s, size, seq, rate
        for i, spec in enumerate(specs):
            if isinstance(spec, UdpFlowSpec):
                k = np.arange(spec.num_packets, dtype=np.int64)
                t = spec.start_s + k * spec.interval_s
                n = int(np.argmin(t < min(spec.stop_s, simulation_stop_s))) if len(t) and \
                    not (t < min(spec.stop_s, simulation_stop_s)).all() else len(t)
                parts.append((i, t[:n], np.full(n, spec.packet_size_bytes, np.int64), k[:n], 0.0))
            elif isinstance(spec, OnOffFlowSpec) and spec.protocol == "udp":
                gap = spec.packet_size_bytes * 8 / spec.rate_bps
                end = min(spec.stop_s, simulation_stop_s)
                cand = max(0, int((end - spec.start_s) / gap) + 2) if end > spec.start_s else 0
                k = np.arange(cand, dtype=np.int64)
                t = spec.start_s + k * gap
                ok = t < end
                n = int(np.argmin(ok)) if len(ok) and not ok.all() else len(ok)
                size = np.full(n, spec.packet_size_bytes, np.int64)
                if spec.max_bytes:
                    m = -(-spec.max_bytes // spec.packet_size_bytes)       # datagrams until max_bytes is sent
                    n = min(n, m)
                    size = size[:n]
                    if n == m:
                        size[-1] = spec.max_bytes - (m - 1) * spec.packet_size_bytes
                parts.append((i, t[:n], size, k[:n], 0.0))
            elif isinstance(spec, TcpBulkFlowSpec):
                size_b = spec.size_bytes or int(host_link_bps / 8 * spec.duration_s)
                parts.append((i, np.array([spec.start_s]), np.array([size_b], np.int64), np.zeros(1, np.int64), 0.0))
            else:
                end = min(spec.stop_s, simulation_stop_s)
                offered = int(spec.rate_bps / 8 * max(end - spec.start_s, 0.0))
                size_b = min(offered, spec.max_bytes) if spec.max_bytes else offered
                parts.append((i, np.array([spec.start_s]), np.array([max(size_b, 1)], np.int64),
                              np.zeros(1, np.int64), float(spec.rate_bps)))
        n_all = sum(len(p[1]) for p in parts)
        cols = {
            "spec": np.concatenate([np.full(len(p[1]), p[0], np.int64) for p in parts]) if parts else np.zeros(0, np.int64),
            "src": np.concatenate([np.full(len(p[1]), specs[p[0]].src, np.int64) for p in parts])
            if parts else np.zeros(0, np.int64),
            "dst": np.concatenate([np.full(len(p[1]), specs[p[0]].dst, np.int64) for p in parts])
            if parts else np.zeros(0, np.int64),
            "size": np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, np.int64),
            "start": np.concatenate([seconds_ps(np.asarray(p[1], np.float64)) for p in parts])
            if parts else np.zeros(0, np.int64),
            "seq": np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, np.int64),
            "reply_of": np.full(n_all, -1, np.int64),
            "rate": np.concatenate([np.full(len(p[1]), p[4]) for p in parts]) if parts else np.zeros(0),
            "finish": np.full(n_all, -1, np.int64),
            "retx": np.zeros(n_all, np.int64),
        }
        return cls(specs, cols)

    def check_hosts(self, hosts: int) -> None:
        if hosts and len(self) and (self.src.max() >= hosts or self.dst.max() >= hosts):
            raise ConfigError("traffic", "host", "a flow names a host outside the network")

    def with_replies(self) -> Sent:
        """These rows and, after them, one reply per request of an echo spec (from its
        destination back to its source, started by the engine when the request arrives)."""
        echo = np.array([s.mode == "echo" for s in self.specs], dtype=bool)
        req = np.flatnonzero(echo[self.spec] & (self.reply_of < 0)) if len(self) else np.zeros(0, np.int64)
        cols = {}
        for name in self.COLUMNS:
            a = getattr(self, name)
            cols[name] = np.concatenate([a, a[req]])
        n = len(self)
        cols["src"][n:], cols["dst"][n:] = self.dst[req], self.src[req]
        cols["reply_of"][n:] = req
        cols["finish"][:] = -1
        cols["retx"][:] = 0
        return Sent(self.specs, cols)

    def keep(self, mask: np.ndarray) -> Sent:
        """The rows where ``mask`` holds (the requests keep their row numbers when only
        replies after them are dropped)."""
        return Sent(self.specs, {name: getattr(self, name)[mask] for name in self.COLUMNS})

    def is_tcp(self) -> np.ndarray:
        tcp = np.array([s.protocol == "tcp" for s in self.specs], dtype=bool)
        return tcp[self.spec] if len(self) else np.zeros(0, bool)

    # ------------------------------------------------------------------ per spec
    def rows(self, spec: Any) -> np.ndarray:
        """The rows of ``spec`` (its requests and replies), in row order."""
        i = self.index.get(id(spec))
        if i is None:
            return np.zeros(0, np.int64)
        if self._groups is None:
            order = np.argsort(self.spec, kind="stable")
            cuts = np.searchsorted(self.spec[order], np.arange(len(self.specs) + 1))
            self._groups = [order[cuts[j]:cuts[j + 1]] for j in range(len(self.specs))]
        return self._groups[i]

    def has(self, spec: Any) -> bool:
        return len(self.rows(spec)) > 0

    def stats(self, spec: Any, reverse: bool = False, mss: int = 1500) -> FlowStats:
        """The statistics of one direction of ``spec`` (reverse: its echo replies), computed
        once per run."""
        key = (self.index[id(spec)], reverse)
        if key not in self._stats:
            self._stats[key] = self._compute(spec, reverse, mss)
        return self._stats[key]

    def _compute(self, spec: Any, reverse: bool, mss: int) -> FlowStats:
        rows = self.rows(spec)
        mine = rows[(self.reply_of[rows] >= 0) == reverse]
        src, dst = (spec.dst, spec.src) if reverse else (spec.src, spec.dst)
        nan = float("nan")
        fin = self.finish[mine]
        got = fin >= 0
        done = mine[got]
        udp = spec.protocol != "tcp"
        over = UDP_IP_BYTES if udp else 0
        tx_b = int(self.size[mine].sum()) + over * len(mine)
        rx_b = int(self.size[done].sum()) + over * len(done)
        sport, dport = 49152 + (spec.port or 0) % 16384, spec.port or 0
        if udp:
            f_done = self.finish[done]
            by_arrival = np.argsort(f_done, kind="stable")
            # sums in arrival order, one after the other (as the per-datagram figures were)
            delays = ((f_done[by_arrival] - self.start[done][by_arrival]) / PS).tolist()
            jitter = (sum(abs(x - y) for x, y in zip(delays[1:], delays)) / (len(delays) - 1)
                      if len(delays) > 1 else nan)
            first_rx = int(f_done.min()) if len(done) else 0
            last_rx = int(f_done.max()) if len(done) else 0
            span = (last_rx - first_rx) / PS
            tput = rx_b * 8 / max(span, 1e-9) if len(done) > 1 else nan
            fct = (last_rx - int(self.start[mine].min())) / PS if len(done) else nan
            return FlowStats(_addr(src), _addr(dst), sport, dport, "udp", len(mine), len(done), len(mine) - len(done),
                             tx_b, rx_b, sum(delays) / len(delays) if delays else nan,
                             min(delays) if delays else nan, max(delays) if delays else nan, jitter, fct, tput)
        p = int(mine[0])
        ok = bool(len(done))
        fct = (int(self.finish[p]) - int(self.start[p])) / PS if ok else nan
        # segments: the flow's MSS-sized pieces (the last shorter), sent once each plus
        # the retransmissions; received: all of them once the flow has finished
        segs = -(-int(self.size[p]) // mss)
        rx_pk = segs if ok else 0
        return FlowStats(_addr(src), _addr(dst), sport, dport, "tcp", segs + int(self.retx[p]), rx_pk, segs - rx_pk,
                         tx_b, rx_b, nan, nan, nan, nan, fct, rx_b * 8 / fct if ok and fct > 0 else nan)

    # ------------------------------------------------------------------ counters
    def switch_counters(self, tor_of_host: np.ndarray | int, tors: int) -> dict[str, dict[str, int]]:
        """Per ToR: rows sent by its hosts, delivered to its hosts, and not delivered (lost,
        counted at the sender's ToR)."""
        h = tor_of_host
        st = self.src // h
        dt = self.dst // h
        got = self.finish >= 0
        sent = np.bincount(st, minlength=tors)
        deliv = np.bincount(dt[got], minlength=tors)
        lost = np.bincount(st[~got], minlength=tors)
        return {f"tor{i}": {"from_host": int(sent[i]), "delivered": int(deliv[i]), "lost": int(lost[i])}
                for i in range(tors)}

    def replies_of(self) -> np.ndarray:
        """Per row, the row of its reply (-1: none)."""
        out = np.full(len(self), -1, np.int64)
        r = np.flatnonzero(self.reply_of >= 0)
        out[self.reply_of[r]] = r
        return out

