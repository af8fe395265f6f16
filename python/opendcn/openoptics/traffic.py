"""OpenOptics' traffic builders (``net.udp_traffic()``, ``net.tcp_traffic()``) and the
per-flow statistics a run gives back.

A UDP flow is a train of datagrams (``num_packets`` every ``interval_s`` from ``start_s``,
none at or after ``stop_s``), kept as one flow with its datagrams as columns
(:mod:`opendcn.openoptics._sent`); each datagram runs on the engine as a one-packet flow
(ideal transport), so its one-way delay is exact. An echo flow also sends every datagram
that arrives back to its source. A TCP bulk flow is one flow of ``size_bytes`` on the
engine's TCP (NewReno); without ``size_bytes`` it offers what the host link can carry
until ``stop_s``. On-off flows send at ``rate`` (UDP: datagrams at that pace; TCP: one flow
of the bytes the application offers).

>>> b = UdpTrafficGenerator(nb_node=4, stop_s=1.0).echo(0, 1, num_packets=3, interval_s=0.01)
>>> [(s.mode, s.num_packets, s.start_s) for s in b.flows]
[('echo', 3, 0.05)]
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigError

__all__ = ["UdpFlowSpec", "TcpBulkFlowSpec", "OnOffFlowSpec", "FlowStats", "InstalledTraffic",
           "UdpTrafficGenerator", "TcpTrafficGenerator", "parse_bitrate"]

_UNITS = {"": 1.0, "b": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgKMG]?)\s*(?:bps|bit/s|bits/s|b/s)?\s*$")


def parse_bitrate(value: Any, field: str = "rate", *, default_unit: str = "bps") -> float:
    """A bit rate in bit/s from a number or text such as ``"10Mbps"`` or ``"1G"``; a bare
    number (or text without a unit) is in ``default_unit`` (``"bps"``, ``"kbps"``,
    ``"Mbps"``, ``"Gbps"``), as OpenOptics' ``parse_bitrate``.

    >>> parse_bitrate("10Mbps"), parse_bitrate(5, default_unit="Mbps"), parse_bitrate("2", default_unit="kbps")
    (10000000.0, 5000000.0, 2000.0)
    """
    unit_m = _RATE.match("1" + str(default_unit))
    if not isinstance(default_unit, str) or not unit_m:
        raise ConfigError("default_unit", default_unit, "expected a unit such as bps, kbps, Mbps or Gbps")
    scale = _UNITS[unit_m.group(2).lower()]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        rate = float(value) * scale
    else:
        m = _RATE.match(str(value))
        if not m:
            raise ConfigError(field, value, "expected a rate such as 10Mbps, 500kbit/s or 1G")
        unit_given = m.group(2) or re.search(r"(bps|bit/s|bits/s|b/s)\s*$", str(value))
        rate = float(m.group(1)) * (_UNITS[m.group(2).lower()] if unit_given else scale)
    if not rate > 0 or not math.isfinite(rate):
        raise ConfigError(field, value, "must be positive")
    return rate


@dataclass(frozen=True)
class UdpFlowSpec:
    """A UDP datagram train (``mode`` ``"client-server"`` or ``"echo"``)."""

    src: int
    dst: int
    start_s: float
    stop_s: float
    num_packets: int
    packet_size_bytes: int
    interval_s: float
    mode: str = "client-server"
    size_bytes: int | None = None
    rate_bps: float | None = None
    port: int | None = None
    name: str | None = None
    protocol = "udp"

    @property
    def duration_s(self) -> float:
        return self.stop_s - self.start_s

    def with_port(self, port: int) -> UdpFlowSpec:
        return replace(self, port=port)


@dataclass(frozen=True)
class TcpBulkFlowSpec:
    """A TCP bulk transfer (``size_bytes`` None: as much as fits until ``stop_s``)."""

    src: int
    dst: int
    start_s: float
    stop_s: float
    size_bytes: int | None = None
    chunk_size_bytes: int = 1024
    port: int | None = None
    name: str | None = None
    protocol = "tcp"
    mode = "bulk"

    @property
    def duration_s(self) -> float:
        return self.stop_s - self.start_s

    def with_port(self, port: int) -> TcpBulkFlowSpec:
        return replace(self, port=port)


@dataclass(frozen=True)
class OnOffFlowSpec:
    """A constant-rate flow over TCP or UDP (``max_bytes`` 0: no cap)."""

    src: int
    dst: int
    protocol: str
    start_s: float
    stop_s: float
    rate_bps: float
    max_bytes: int = 0
    packet_size_bytes: int = 1024
    port: int | None = None
    name: str | None = None
    mode = "onoff"

    @property
    def duration_s(self) -> float:
        return self.stop_s - self.start_s

    def with_port(self, port: int) -> OnOffFlowSpec:
        return replace(self, port=port)


Spec = UdpFlowSpec | TcpBulkFlowSpec | OnOffFlowSpec


@dataclass(frozen=True)
class FlowStats:
    """End-to-end statistics of one direction of a flow (seconds, bytes, bit/s; ``nan``
    where undefined). Delays are per datagram for UDP; the engine keeps no per-segment
    delays for TCP, whose delays are ``nan`` (its ``fct_s`` and throughput are exact)."""

    src_ip: str
    dst_ip: str
    src_port: int
    dst_port: int
    protocol: str
    tx_packets: int
    rx_packets: int
    lost_packets: int
    tx_bytes: int
    rx_bytes: int
    delay_avg_s: float
    delay_min_s: float
    delay_max_s: float
    jitter_avg_s: float
    fct_s: float
    throughput_bps: float


@dataclass(frozen=True)
class InstalledTraffic:
    """An installed flow; ``stats()`` gives its :class:`FlowStats` once the network has run."""

    spec: Spec
    apps: Any = None
    _net: Any = None

    def stats(self) -> FlowStats | None:
        if self._net is None:
            return None
        return self._net._flow_stats(self.spec)


def _iter_matrix(matrix: Any) -> Iterable[tuple[int, int, Any]]:
    if isinstance(matrix, Mapping):
        for key, value in matrix.items():
            if not isinstance(key, tuple) or len(key) != 2:
                raise ConfigError("matrix", key, "keys of a traffic matrix are (src, dst) pairs")
            yield int(key[0]), int(key[1]), value
        return
    if not isinstance(matrix, Sequence) and not hasattr(matrix, "tolist"):
        raise ConfigError("matrix", matrix, "expected {(src, dst): rate} or a square list of rates")
    rows = matrix.tolist() if hasattr(matrix, "tolist") else matrix
    for i, row in enumerate(rows):
        items = row.items() if isinstance(row, Mapping) else enumerate(row)
        for j, value in items:
            yield i, int(j), value


class _Builder:
    """Validation and the one-time install shared by both builders."""

    protocol = ""

    def __init__(self, nb_node: int, stop_s: float, owner: Any = None, **defaults: Any):
        self._nb_node = nb_node
        self._stop_s = stop_s
        self._owner = owner
        self._defaults = defaults
        self._flows: list[Spec] = []
        self._installed = False

    @property
    def flows(self) -> tuple[Spec, ...]:
        return tuple(self._flows)

    def _mutable(self) -> None:
        if self._installed:
            raise ConfigError("traffic", "installed", "cannot add traffic after install()")

    def _pair(self, src: Any, dst: Any) -> tuple[int, int]:
        for name, v in (("src", src), ("dst", dst)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < self._nb_node:
                raise ConfigError(name, v, f"expected a host 0..{self._nb_node - 1}")
        if src == dst:
            raise ConfigError("dst", dst, "must differ from src")
        return int(src), int(dst)

    def _times(self, start_s: Any, stop_s: Any, duration_s: Any, natural_end: float | None = None) -> tuple[float, float]:
        start = float(start_s)
        if not start >= 0:
            raise ConfigError("start_s", start_s, "must be >= 0")
        if stop_s is not None and duration_s is not None:
            raise ConfigError("duration_s", duration_s, "give stop_s or duration_s, not both")
        if duration_s is not None:
            if not float(duration_s) > 0:
                raise ConfigError("duration_s", duration_s, "must be positive")
            stop = start + float(duration_s)
        elif stop_s is not None:
            stop = float(stop_s)
        elif natural_end is not None:
            stop = natural_end
        else:
            stop = self._stop_s
        if not stop > start:
            raise ConfigError("stop_s", stop_s if stop_s is not None else stop, f"must be after start_s ({start})")
        return start, stop

    def _positive(self, name: str, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ConfigError(name, v, "must be a positive integer")
        return v

    def _onoff(self, protocol: str, src: int, dst: int, rate: Any, start_s: Any, stop_s: Any, duration_s: Any,
               size_bytes: Any, packet_size_bytes: Any, port: Any, name: Any) -> OnOffFlowSpec:
        a, b = self._pair(src, dst)
        start, stop = self._times(start_s, stop_s, duration_s)
        cap = 0 if size_bytes is None else self._positive("size_bytes", size_bytes)
        pkt = self._positive("packet_size_bytes", packet_size_bytes)
        bps = parse_bitrate(rate) if rate is not None else (cap * 8.0 / (stop - start) if cap else 1e6)
        return OnOffFlowSpec(a, b, protocol, start, stop, bps, cap, pkt, port, name)

    def install(self) -> list[InstalledTraffic]:
        """Hand the flows to the network (once); returns one handle per flow."""
        if self._installed:
            raise ConfigError("traffic", "installed", "a traffic builder is installed once")
        self._installed = True
        resolved = []
        for spec in self._flows:
            if spec.port is None and self._owner is not None:
                spec = spec.with_port(self._owner._next_port())
            resolved.append(spec)
        self._flows = resolved
        if self._owner is not None:
            self._owner._install(resolved)
        return [InstalledTraffic(s, None, self._owner) for s in resolved]

    def describe(self) -> list[dict[str, Any]]:
        """One dict per flow, for printing or saving."""
        rows = []
        for i, s in enumerate(self._flows):
            row = {k: getattr(s, k) for k in s.__dataclass_fields__}
            row.update(name=s.name or f"flow{i}", protocol=s.protocol, mode=s.mode, duration_s=s.duration_s)
            rows.append(row)
        return rows


class UdpTrafficGenerator(_Builder):
    """UDP traffic: ``flow`` (one way), ``echo``, ``onoff``, ``bidirectional``,
    ``many_to_one``, ``all_to_all`` and ``from_matrix``; ``install()`` at the end."""

    protocol = "udp"

    def flow(self, src: int, dst: int, *, rate: Any = None, packets_per_second: Any = None, start_s: float = 0.05,
             stop_s: float | None = None, duration_s: float | None = None, size_bytes: int | None = None,
             num_packets: int | None = None, interval_s: float | None = None, packet_size_bytes: int = 1024,
             port: int | None = None, name: str | None = None) -> UdpTrafficGenerator:
        """One one-way datagram train."""
        self._mutable()
        self._flows.append(self._udp("client-server", src, dst, rate, packets_per_second, start_s, stop_s,
                                     duration_s, size_bytes, num_packets, interval_s, packet_size_bytes, port, name))
        return self

    constant_rate = flow

    def echo(self, src: int, dst: int, *, rate: Any = None, packets_per_second: Any = None, start_s: float = 0.05,
             stop_s: float | None = None, duration_s: float | None = None, size_bytes: int | None = None,
             num_packets: int | None = None, interval_s: float | None = None, packet_size_bytes: int = 1024,
             port: int | None = None, name: str | None = None) -> UdpTrafficGenerator:
        """A datagram train whose every datagram ``dst`` sends back to ``src`` on arrival."""
        self._mutable()
        self._flows.append(self._udp("echo", src, dst, rate, packets_per_second, start_s, stop_s, duration_s,
                                     size_bytes, num_packets, interval_s, packet_size_bytes, port, name))
        return self

    def onoff(self, src: int, dst: int, *, rate: Any = None, start_s: float = 0.05, stop_s: float | None = None,
              duration_s: float | None = None, size_bytes: int | None = None, packet_size_bytes: int = 1024,
              port: int | None = None, name: str | None = None) -> UdpTrafficGenerator:
        """Datagrams at a constant ``rate`` (capped at ``size_bytes``)."""
        self._mutable()
        self._flows.append(self._onoff("udp", src, dst, rate, start_s, stop_s, duration_s, size_bytes,
                                       packet_size_bytes, port, name))
        return self

    def bidirectional(self, a: int, b: int, **kwargs: Any) -> UdpTrafficGenerator:
        """``a -> b`` and ``b -> a``."""
        return self.flow(a, b, **kwargs).flow(b, a, **kwargs)

    def many_to_one(self, sources: Iterable[int], dst: int, **kwargs: Any) -> UdpTrafficGenerator:
        """One flow from every source (other than ``dst``) to ``dst``."""
        for s in sources:
            if int(s) != int(dst):
                self.flow(int(s), int(dst), **kwargs)
        return self

    def all_to_all(self, nodes: Iterable[int] | None = None, *, include_self: bool = False,
                   **kwargs: Any) -> UdpTrafficGenerator:
        """One flow per ordered pair of ``nodes`` (default: every host)."""
        ids = list(range(self._nb_node) if nodes is None else nodes)
        for s in ids:
            for d in ids:
                if int(s) != int(d):
                    self.flow(int(s), int(d), **kwargs)
                elif include_self:
                    raise ConfigError("include_self", include_self, "a host does not send to itself here")
        return self

    def from_matrix(self, matrix: Any, *, skip_zero: bool = True, include_self: bool = False,
                    **kwargs: Any) -> UdpTrafficGenerator:
        """One flow per non-zero entry of a traffic matrix of rates (``{(src, dst): rate}``
        or ``matrix[src][dst]``)."""
        clash = {"rate", "packets_per_second", "interval_s"} & set(kwargs)
        if clash:
            raise ConfigError(sorted(clash)[0], kwargs[sorted(clash)[0]], "from_matrix takes the rates from the matrix")
        for s, d, v in _iter_matrix(matrix):
            if s == d or v is None:
                continue
            if skip_zero and isinstance(v, (int, float)) and float(v) == 0:
                continue
            self.flow(s, d, rate=v, **kwargs)
        return self

    def _udp(self, mode: str, src: Any, dst: Any, rate: Any, pps: Any, start_s: Any, stop_s: Any, duration_s: Any,
             size_bytes: Any, num_packets: Any, interval_s: Any, packet_size_bytes: Any, port: Any,
             name: Any) -> UdpFlowSpec:
        a, b = self._pair(src, dst)
        pkt = self._positive("packet_size_bytes", packet_size_bytes)
        given = [k for k, v in (("rate", rate), ("packets_per_second", pps), ("interval_s", interval_s)) if v is not None]
        if len(given) > 1:
            raise ConfigError(given[1], locals()[{"rate": "rate", "packets_per_second": "pps",
                                                   "interval_s": "interval_s"}[given[1]]],
                              "give one of rate, packets_per_second and interval_s")
        bps = None
        if rate is not None:
            bps = parse_bitrate(rate)
            gap = pkt * 8.0 / bps
        elif pps is not None:
            if not float(pps) > 0:
                raise ConfigError("packets_per_second", pps, "must be positive")
            gap = 1.0 / float(pps)
        elif interval_s is not None:
            gap = float(interval_s)
            if not gap > 0:
                raise ConfigError("interval_s", interval_s, "must be positive")
        else:
            gap = 0.01
        if size_bytes is not None and num_packets is not None:
            raise ConfigError("num_packets", num_packets, "give size_bytes or num_packets, not both")
        if size_bytes is not None:
            num_packets = -(-self._positive("size_bytes", size_bytes) // pkt)
        if num_packets is not None:
            self._positive("num_packets", num_packets)
        start = float(start_s)
        natural = start + num_packets * gap if num_packets is not None else None
        start, stop = self._times(start_s, stop_s, duration_s, natural)
        count = int(num_packets) if num_packets is not None else max(1, math.floor((stop - start) / gap))
        return UdpFlowSpec(a, b, start, stop, count, pkt, gap, mode, size_bytes, bps, port, name)


class TcpTrafficGenerator(_Builder):
    """TCP traffic: ``bulk`` and ``onoff``; ``install()`` at the end."""

    protocol = "tcp"

    def bulk(self, src: int, dst: int, *, size_bytes: int | None = None, chunk_size_bytes: int = 1024,
             start_s: float = 0.05, stop_s: float | None = None, duration_s: float | None = None,
             port: int | None = None, name: str | None = None) -> TcpTrafficGenerator:
        """One bulk transfer of ``size_bytes`` (None: until ``stop_s``)."""
        self._mutable()
        a, b = self._pair(src, dst)
        if size_bytes is not None:
            self._positive("size_bytes", size_bytes)
        self._positive("chunk_size_bytes", chunk_size_bytes)
        start, stop = self._times(start_s, stop_s, duration_s)
        self._flows.append(TcpBulkFlowSpec(a, b, start, stop, size_bytes, chunk_size_bytes, port, name))
        return self

    def onoff(self, src: int, dst: int, *, rate: Any = None, start_s: float = 0.05, stop_s: float | None = None,
              duration_s: float | None = None, size_bytes: int | None = None, packet_size_bytes: int = 1024,
              port: int | None = None, name: str | None = None) -> TcpTrafficGenerator:
        """A TCP flow offered at a constant ``rate`` (capped at ``size_bytes``)."""
        self._mutable()
        self._flows.append(self._onoff("tcp", src, dst, rate, start_s, stop_s, duration_s, size_bytes,
                                       packet_size_bytes, port, name))
        return self
