"""End-to-end transports of the packet engine, chosen per flow by a rule on its size.

A rule is a comma-separated list of terms read left to right; the first that matches a
flow decides its transport, and the last term (a bare name) catches the rest::

    "dctcp"              every flow uses DCTCP
    "ndp<1MB,tcp"        flows strictly smaller than 1 MB use NDP, the others TCP (Duo)
    "ndp<=15MB,ideal"    flows of at most 15 MB use NDP
    "rotorlb=100KB,ndp<30MB,rotorlb"
                         flows of exactly 100 KB use RotorLB (opera-sim's ``-rlbflow``),
                         the others NDP below 30 MB and RotorLB above

``<`` is strict and ``<=`` is not, ``=`` matches one size exactly; sizes take units
(KB = 1000 B). Transports:

- ``ideal`` — back-pressured injection at the host-side rate; a dropped packet is lost
  (the engine's behaviour for the theory checks);
- ``tcp`` — NewReno (slow start, congestion avoidance, fast retransmit after
  ``dupack`` duplicate ACKs, fast recovery, RTO with a minimum and back-off);
- ``dctcp`` — TCP whose window follows the fraction of ECN-marked ACKs (g = 1/16),
  with ports marking above ``ecn_k`` queued bytes;
- ``ndp`` — ports trim data to headers when the data class is full, headers and
  control are served first, the receiver paces pulls at its line rate;
- ``credit`` — a lossless network (HPC): injection as ``ideal``, and every fabric link
  sends only against credits for the next node's buffer, per virtual channel
  (``credit_bytes`` per link and channel, returned one propagation delay after the packet
  leaves that buffer). By default a packet's n-th link uses channel n (the last channel
  beyond), so with as many channels as the longest path has links the channel dependency
  graph is acyclic; ``Network.vc_rule`` lets the routing choose the channel instead (a
  step up on named port-class transitions, e.g. at an intermediate pod), and
  :func:`opendcn.fabrics.channels.channel_dependency_cycle` checks a network's routes for a
  cycle. A watchdog reports a deadlock (``od.DeadlockError`` naming the cycle of ports)
  instead of letting the run hang. ``credit`` applies to every flow or none.
- ``rotorlb`` — Opera's bulk transport: data waits in host memory and crosses only a
  direct circuit to its destination rack, or two via a relay host (Valiant), in the
  amounts an offer/accept step commits each time a rotor takes a new matching; a packet
  whose circuit no longer leads to the committed rack goes back to its holder. Needs
  hosts below nodes and the same number of rotor (optical) ports at every node.

Control packets (ACKs, NACKs, PULLs) are real packets of ``ctrl_bytes`` on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..units import parse_size, parse_time

#: transport name -> engine code
CODES = {"ideal": 0, "tcp": 1, "dctcp": 2, "ndp": 3, "credit": 4, "rotorlb": 5}


@dataclass(frozen=True)
class Rule:
    """A parsed transport rule: ``terms`` are (transport, op, bytes) tried in order,
    ``default`` is the transport of every flow no term matches."""

    text: str
    terms: tuple[tuple[str, str, int], ...]
    default: str

    def assign(self, sizes: Any) -> np.ndarray:
        """The engine transport code of each flow of the given sizes (bytes)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        codes = np.full(len(sizes), CODES[self.default], dtype=np.int64)
        decided = np.zeros(len(sizes), dtype=bool)
        for name, op, limit in self.terms:
            hit = (sizes < limit) if op == "<" else (sizes <= limit) if op == "<=" else (sizes == limit)
            hit &= ~decided
            codes[hit] = CODES[name]
            decided |= hit
        return codes

    @property
    def names(self) -> set[str]:
        return {t[0] for t in self.terms} | {self.default}


def _name(name: str, rule: str) -> str:
    n = name.strip().lower()
    if n in CODES:
        return n
    raise ConfigError("transport", rule, f"unknown transport {n!r} (expected {', '.join(CODES)})")


def parse_rule(rule: Any) -> Rule:
    """Parse a transport rule (see the module doc); ConfigError names the rule."""
    if isinstance(rule, Rule):
        return rule
    if not isinstance(rule, str) or not rule.strip():
        raise ConfigError("transport", rule, "expected a rule such as 'dctcp' or 'ndp<1MB,tcp'")
    parts = [p.strip() for p in rule.split(",")]
    terms: list[tuple[str, str, int]] = []
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        if "<" in p or "=" in p:
            op = "<=" if "<=" in p else "<" if "<" in p else "="
            name, _, size = p.partition(op)
            if not size.strip():
                raise ConfigError("transport", rule, f"term {p!r}: a size must follow {op!r}")
            try:
                limit = parse_size(size.strip(), "transport")
            except ConfigError:
                raise ConfigError("transport", rule, f"term {p!r}: {size.strip()!r} is not a size") from None
            if limit <= 0:
                raise ConfigError("transport", rule, f"term {p!r}: the size must be positive")
            terms.append((_name(name, rule), op, limit))
            if last:
                raise ConfigError("transport", rule, "the last term must be a bare transport name "
                                  "(the transport of every other flow)")
        else:
            if not last:
                raise ConfigError("transport", rule, f"term {p!r} has no size limit, so it must be the last")
            r = Rule(rule, tuple(terms), _name(p, rule))
            if "credit" in r.names and r.names != {"credit"}:
                raise ConfigError("transport", rule, "credit-based flow control makes the whole network "
                                  "lossless: it cannot be mixed with other transports")
            return r
    raise ConfigError("transport", rule, "empty rule")


@dataclass
class TransportSettings:
    """The transport rule and the parameters shared by the flows that use each transport.
    Times are ps, sizes bytes (the Python API and CLI take units)."""

    rule: Rule = field(default_factory=lambda: parse_rule("ideal"))
    ctrl_bytes: int = 64
    tcp_init_cwnd: int = 10
    #: initial slow-start threshold in packets (None: unlimited, slow start until the first loss)
    tcp_init_ssthresh: int | None = None
    tcp_dupack: int = 3
    tcp_min_rto_ps: int = 1_000_000_000
    tcp_init_rto_ps: int = 1_000_000_000
    tcp_max_rto_ps: int = 1_000_000_000_000
    dctcp_g: float = 1 / 16
    #: ECN marking threshold of every port when some flow uses DCTCP (0: off)
    ecn_k: int = 30_000
    ndp_init_window: int = 20
    ndp_rto_ps: int = 1_000_000_000
    ndp_return_to_sender: bool = True
    #: NDP ports: data and header classes of this many full packets each
    ndp_queue_packets: int = 8
    #: NDP pull pacing: pulls per full-packet time of the receiver link, one pacer per flow
    ndp_pull_rate: float = 1.0
    ndp_pacer_per_flow: bool = False
    #: every data packet of a flow of at least one MSS a full MSS on the wire (htsim's and
    #: opera-sim's packet sizes); RotorLB served by the NIC in full-packet slots, idle when
    #: no bulk packet is due (opera-sim's dummy packets)
    pad_segments: bool = False
    bulk_slots: bool = False
    #: every 1 500 bytes of other traffic a NIC sends push one committed RotorLB packet
    #: back to its queue (opera-sim's NICpush)
    nic_push: bool = False
    #: credit: bytes per (link, virtual channel) (None: the port buffer split over the
    #: channels), virtual channels, and the watchdog's patience
    credit_bytes: int | None = None
    credit_vcs: int = 1
    deadlock_timeout_ps: int = 100_000_000
    #: credit: the routing's virtual-channel rule as a bit mask (bit 8a + b: a packet goes
    #: one channel up from a port of class a to one of class b; see ``Network.vc_rule``);
    #: None: a packet's n-th link uses channel n
    credit_vc_step: int | None = None

    def spec(self) -> dict[str, Any]:
        """The engine's transport scalars."""
        return {"ctrl_bytes": self.ctrl_bytes, "tcp_init_cwnd": self.tcp_init_cwnd,
                "tcp_dupack": self.tcp_dupack, "tcp_min_rto_ps": self.tcp_min_rto_ps,
                "tcp_init_rto_ps": self.tcp_init_rto_ps, "tcp_max_rto_ps": self.tcp_max_rto_ps,
                "dctcp_g": float(self.dctcp_g), "ndp_init_window": self.ndp_init_window,
                "ndp_rto_ps": self.ndp_rto_ps, "ndp_return_to_sender": self.ndp_return_to_sender,
                "ndp_pull_rate": float(self.ndp_pull_rate), "ndp_pacer_per_flow": self.ndp_pacer_per_flow,
                "pad_segments": self.pad_segments, "bulk_slots": self.bulk_slots, "nic_push": self.nic_push,
                "credit_vcs": self.credit_vcs, "deadlock_timeout_ps": self.deadlock_timeout_ps,
                **({} if self.tcp_init_ssthresh is None else {"tcp_init_ssthresh": self.tcp_init_ssthresh})}

    def describe(self, buffer: int | None = None) -> dict[str, Any]:
        """The settings as the summary reports them (only what the rule uses); ``buffer``
        (the port buffer) resolves the default credit per link and channel."""
        names = self.rule.names
        d: dict[str, Any] = {"rule": self.rule.text}
        if names & {"tcp", "dctcp"}:
            d.update(tcp_init_cwnd=self.tcp_init_cwnd, tcp_dupack=self.tcp_dupack,
                     tcp_min_rto_us=self.tcp_min_rto_ps / 1e6, tcp_init_rto_us=self.tcp_init_rto_ps / 1e6,
                     tcp_max_rto_us=self.tcp_max_rto_ps / 1e6)
            if self.tcp_init_ssthresh is not None:
                d["tcp_init_ssthresh"] = self.tcp_init_ssthresh
        if "dctcp" in names:
            d.update(dctcp_g=self.dctcp_g, ecn_k_bytes=self.ecn_k)
        if "ndp" in names:
            d.update(ndp_init_window=self.ndp_init_window, ndp_rto_us=self.ndp_rto_ps / 1e6,
                     ndp_return_to_sender=self.ndp_return_to_sender, ndp_queue_packets=self.ndp_queue_packets,
                     ndp_pull_rate=self.ndp_pull_rate, ndp_pull_pacer="flow" if self.ndp_pacer_per_flow else "host")
        if "credit" in names:
            cb = self.credit_bytes if self.credit_bytes is not None else \
                (buffer // self.credit_vcs if buffer is not None else None)
            d.update(credit_bytes=cb, credit_vcs=self.credit_vcs,
                     credit_vc_rule="hop count" if self.credit_vc_step is None else "routing",
                     deadlock_timeout_us=self.deadlock_timeout_ps / 1e6)
        if names & {"tcp", "dctcp", "ndp"}:
            d["ctrl_bytes"] = self.ctrl_bytes
        if self.pad_segments:
            d["pad_segments"] = True
        if self.bulk_slots and "rotorlb" in names:
            d["bulk_slots"] = True
        if self.nic_push and "rotorlb" in names:
            d["nic_push"] = True
        return d


def _pos_int(v: Any, field: str, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
        raise ConfigError(field, v, f"expected an integer >= {minimum}")
    return int(v)


def _pos_time(v: Any, field: str) -> int:
    t = parse_time(v, field)
    if t <= 0:
        raise ConfigError(field, v, "must be positive")
    return t


def update(s: TransportSettings, *, rule: Any = None, dupack: Any = None, init_cwnd: Any = None,
           init_ssthresh: Any = None, min_rto: Any = None, rto: Any = None, max_rto: Any = None, dctcp_g: Any = None,
           ecn_k: Any = None, ndp_init_window: Any = None, ndp_rto: Any = None,
           return_to_sender: Any = None, ndp_queue: Any = None, ctrl_bytes: Any = None,
           credit_bytes: Any = None, vcs: Any = None, deadlock_timeout: Any = None,
           pull_rate: Any = None, pull_pacer: Any = None, pad_segments: Any = None,
           bulk_slots: Any = None, nic_push: Any = None) -> TransportSettings:
    """Check and apply the given settings to ``s`` (None keeps a value); returns ``s``."""
    if rule is not None:
        s.rule = parse_rule(rule)
    if dupack is not None:
        s.tcp_dupack = _pos_int(dupack, "tcp_dupack")
    if init_cwnd is not None:
        s.tcp_init_cwnd = _pos_int(init_cwnd, "tcp_init_cwnd")
    if init_ssthresh is not None:
        s.tcp_init_ssthresh = _pos_int(init_ssthresh, "tcp_init_ssthresh")
        if s.tcp_init_ssthresh > 2**32 - 2:
            raise ConfigError("tcp_init_ssthresh", init_ssthresh, "expected at most 4294967294 packets "
                              "(leave it unset for no limit)")
    if min_rto is not None:
        s.tcp_min_rto_ps = _pos_time(min_rto, "tcp_min_rto")
    if rto is not None:
        s.tcp_init_rto_ps = _pos_time(rto, "tcp_rto")
    elif min_rto is not None:
        s.tcp_init_rto_ps = max(s.tcp_init_rto_ps, s.tcp_min_rto_ps)
    if max_rto is not None:
        s.tcp_max_rto_ps = parse_time(max_rto, "tcp_max_rto")
    if s.tcp_max_rto_ps < s.tcp_min_rto_ps:
        raise ConfigError("tcp_max_rto", s.tcp_max_rto_ps, "must be at least the minimum RTO")
    if dctcp_g is not None:
        g = float(dctcp_g)
        if not 0 < g <= 1:
            raise ConfigError("dctcp_g", dctcp_g, "expected 0 < g <= 1")
        s.dctcp_g = g
    if ecn_k is not None:
        if isinstance(ecn_k, (int, float)) and not isinstance(ecn_k, bool) and ecn_k < 0:
            raise ConfigError("ecn_k", ecn_k, "must be >= 0 bytes")
        s.ecn_k = parse_size(ecn_k, "ecn_k")
    if ndp_init_window is not None:
        s.ndp_init_window = _pos_int(ndp_init_window, "ndp_init_window")
    if ndp_rto is not None:
        s.ndp_rto_ps = _pos_time(ndp_rto, "ndp_rto")
    for name, v in (("pad_segments", pad_segments), ("bulk_slots", bulk_slots), ("nic_push", nic_push)):
        if v is not None:
            if not isinstance(v, bool):
                raise ConfigError(name, v, "expected True or False")
            setattr(s, name, v)
    if return_to_sender is not None:
        if not isinstance(return_to_sender, bool):
            raise ConfigError("return_to_sender", return_to_sender, "expected True or False")
        s.ndp_return_to_sender = return_to_sender
    if ndp_queue is not None:
        s.ndp_queue_packets = _pos_int(ndp_queue, "ndp_queue")
    if pull_rate is not None:
        try:
            r = float(pull_rate)
        except (TypeError, ValueError):
            raise ConfigError("pull_rate", pull_rate, "expected a number in (0, 100]") from None
        if isinstance(pull_rate, bool) or not 0 < r <= 100:
            raise ConfigError("pull_rate", pull_rate, "expected a number in (0, 100]")
        s.ndp_pull_rate = r
    if pull_pacer is not None:
        if pull_pacer not in ("host", "flow"):
            raise ConfigError("pull_pacer", pull_pacer, "expected host or flow")
        s.ndp_pacer_per_flow = pull_pacer == "flow"
    if credit_bytes is not None:
        if isinstance(credit_bytes, (int, float)) and not isinstance(credit_bytes, bool) and credit_bytes <= 0:
            raise ConfigError("credit_bytes", credit_bytes, "must be positive (at least one full packet)")
        s.credit_bytes = parse_size(credit_bytes, "credit_bytes")
        if s.credit_bytes <= 0:
            raise ConfigError("credit_bytes", credit_bytes, "must be positive (at least one full packet)")
    if vcs is not None:
        s.credit_vcs = _pos_int(vcs, "vcs")
        if s.credit_vcs > 8:
            raise ConfigError("vcs", vcs, "at most 8 virtual channels")
    if deadlock_timeout is not None:
        s.deadlock_timeout_ps = _pos_time(deadlock_timeout, "deadlock_timeout")
    if ctrl_bytes is not None:
        s.ctrl_bytes = parse_size(ctrl_bytes, "ctrl_bytes")
        if s.ctrl_bytes <= 0:
            raise ConfigError("ctrl_bytes", ctrl_bytes, "must be positive")
    return s
