"""DistDA, Duo's distributed DA-link control (Zerwas et al., "Duo", POMACS 2023, Alg. 3,
§3.2.2 and the proof of concept of §5), as a controller driven by the packet engine.

Every destination ToR t watches, per source ToR s, the rate of the data packets of more
than 255 B it receives from s (ACKs, pulls and trimmed headers are smaller), through a
low-pass filter sampled every ``period``: ``rate <- (1 - gain) * rate + gain * sample``.
When the filtered rate exceeds ``threshold`` and t has not reported s within the last
``cooldown``, t reports s as an elephant and queues it. For the first queued elephant, t
sends s a **PortRequest** listing its free DA ingress ports; s answers **PortApprove(i)**
for the first listed port whose DA egress port is free at s — and sets the DA link
(s, t, i) at once, reserving its egress port for ``reservation`` — or **DeclineRequest**.
On the answer t reserves the port (approve) and goes on with its next elephant. A port
is free when its reservation has run out: links are never torn down proactively, only
when a new request claims a port (the link that used it goes). The messages are real
packets of the packet engine, sent along the static de Bruijn route (they queue in the
HIGH class, take the links' time and can be lost: a request without an answer after
``timeout`` is sent again, and s answers a request it has answered before the same way).

Decisions where the paper is silent (``docs/arch/duo.md``):

- one PortRequest outstanding per destination; the ports it lists stay locked until the
  answer, so an ingress port is never offered to two sources at once;
- the ports listed: every free DA ingress port of t, the one already joined to s first
  (a renewal), then ports without a link, then the others by the filtered rate of the
  source they now serve (lowest first); s takes the first that is free at s;
- an elephant that already has a reserved link to t is not requested again; one that
  finds no free port at t waits in t's queue until a port frees or its cooldown ends; one
  whose filtered rate fell below the threshold meanwhile is dropped from the queue;
- DistDA starts with no DA links: a link exists only once a PortApprove set it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: message kinds, in the low two bits of a message tag (the rest is the request id)
REQUEST, APPROVE, DECLINE = 0, 1, 2
KIND_NAMES = {REQUEST: "request", APPROVE: "approve", DECLINE: "decline"}


@dataclass(frozen=True)
class DistParams:
    """DistDA's parameters (times in ps, rates in bit/s)."""

    period: int
    gain: float
    threshold_bps: float
    cooldown: int
    reservation: int
    timeout: int
    #: only data packets larger than this (wire bytes) are counted
    larger_than: int = 255


@dataclass
class _Request:
    rid: int
    t: int
    s: int
    ports: list[int]
    sent: int
    deadline: int
    tries: int = 1
    answer: tuple[int, int] | None = None     # (kind, port) once s has answered
    answered_at: int | None = None


@dataclass
class DistDA:
    """The state of every ToR's DistDA agent (``n`` ToRs, ``k_d`` DA switches).

    The network gives two callables: ``send(src, dst, tag)`` sends a control message now,
    ``set_links(changes)`` applies DA link changes ``[(s, i, t or None)]`` now. The network
    calls :meth:`sample` every ``params.period`` with the bytes received per (s, t) in the
    period, :meth:`on_message` at each delivery and :meth:`on_timers` at
    :meth:`next_timer`."""

    n: int
    k_d: int
    params: DistParams
    send: Callable[[int, int, int], None]
    set_links: Callable[[list[tuple[int, int, int | None]]], None]
    #: DA links: ``da[i, s]`` the ToR that DA port i of s reaches (-1: none)
    da: np.ndarray = field(init=False)
    log: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        n, k = self.n, self.k_d
        self.da = np.full((k, n), -1, dtype=np.int64)
        self.rate = np.zeros((n, n))                       # filtered rate [s, t], bit/s
        self.report_until = np.zeros((n, n), dtype=np.int64)   # [t, s]: cooldown end
        self.in_res = np.zeros((n, k), dtype=np.int64)     # [t, i]: ingress reserved until
        self.eg_res = np.zeros((n, k), dtype=np.int64)     # [s, i]: egress reserved until
        self.queue: list[list[tuple[int, int]]] = [[] for _ in range(n)]   # per t: (s, reported at)
        self.pending: list[_Request | None] = [None] * n
        self._msg: dict[str, int] = {}
        self.requests: list[_Request] = []
        self.counts = {"samples": 0, "reports": 0, "requests": 0, "retries": 0, "approves": 0, "renewals": 0,
                       "declines": 0, "links_set": 0, "links_taken_down": 0, "stale_answers": 0,
                       "expired_in_queue": 0, "fell_below_threshold": 0}

    # ------------------------------------------------------------------ inputs
    def sample(self, now: int, rx_bytes: np.ndarray) -> None:
        """A sampling instant: ``rx_bytes[s, t]`` wire bytes of data packets of more than
        ``larger_than`` bytes received by t from s in the last period."""
        p = self.params
        self.counts["samples"] += 1
        sample = rx_bytes.astype(float) * 8e12 / p.period
        self.rate = (1 - p.gain) * self.rate + p.gain * sample
        hot = self.rate > p.threshold_bps
        np.fill_diagonal(hot, False)
        # [s, t] above the threshold and t's cooldown for s over
        due = hot & (self.report_until.T <= now)
        for t in range(self.n):
            srcs = np.nonzero(due[:, t])[0]
            if not len(srcs):
                continue
            # the fastest first (ties: lower id)
            for s in sorted(srcs.tolist(), key=lambda s: (-self.rate[s, t], s)):
                self.report_until[t, s] = now + p.cooldown
                self.counts["reports"] += 1
                self.log.append({"t_ps": now, "event": "report", "dst": t, "src": s, "rate_bps": float(self.rate[s, t])})
                if all(q != s for q, _ in self.queue[t]):
                    self.queue[t].append((s, now))
        for t in range(self.n):
            self._issue(t, now)

    def on_message(self, now: int, src: int, dst: int, tag: int, hops: int = 0, classes: int = 0) -> None:
        """A control message from ``src`` reached ``dst`` at ``now`` (after ``hops`` links
        of the link classes ``classes``, a bit set: recorded in the log)."""
        rid, kind = divmod(int(tag), 4)
        req = self.requests[rid]
        self._msg = {"msg_hops": int(hops), "msg_classes": int(classes)}
        if kind == REQUEST:
            self._at_source(now, req)
            return
        # at the destination: the answer to its request
        pend = self.pending[dst]
        if pend is None or pend.rid != rid:
            self.counts["stale_answers"] += 1
            return
        self.pending[dst] = None
        port = req.answer[1] if req.answer else -1
        if kind == APPROVE:
            self.in_res[dst, port] = now + self.params.reservation
        self.log.append({"t_ps": now, "event": "approved" if kind == APPROVE else "declined", "rid": rid,
                         "dst": dst, "src": req.s, "port": port, "rtt_ps": now - req.sent, **self._msg})
        req.answered_at = now
        self._issue(dst, now)

    def next_timer(self) -> int:
        """The earliest request deadline (a large value: none)."""
        return min((r.deadline for r in self.pending if r is not None), default=2**62)

    def on_timers(self, now: int) -> None:
        """Send again the requests whose answer is overdue; retry queued elephants."""
        for t, r in enumerate(self.pending):
            if r is not None and r.deadline <= now:
                r.tries += 1
                r.deadline = now + self.params.timeout
                self.counts["retries"] += 1
                self.log.append({"t_ps": now, "event": "request", "rid": r.rid, "dst": t, "src": r.s,
                                 "ports": list(r.ports), "try": r.tries})
                self.send(t, r.s, r.rid * 4 + REQUEST)

    # ------------------------------------------------------------------ the agents
    def free_ingress(self, t: int, now: int) -> list[int]:
        """t's DA ingress ports that are neither reserved nor offered in a pending request."""
        pend = self.pending[t]
        locked = set(pend.ports) if pend is not None else set()
        return [i for i in range(self.k_d) if i not in locked and self.in_res[t, i] <= now]

    def _order(self, t: int, s: int, ports: list[int]) -> list[int]:
        def key(i: int) -> tuple[int, float, int]:
            if self.da[i, s] == t:
                return (0, 0.0, i)
            srcs = np.nonzero(self.da[i] == t)[0]
            if not len(srcs):
                return (1, 0.0, i)
            return (2, float(self.rate[int(srcs[0]), t]), i)
        return sorted(ports, key=key)

    def _issue(self, t: int, now: int) -> None:
        """Destination t sends a PortRequest for its next queued elephant, if it can."""
        if self.pending[t] is not None:
            return
        q = self.queue[t]
        while q:
            s, at = q[0]
            if now >= at + self.params.cooldown:
                q.pop(0)
                self.counts["expired_in_queue"] += 1
                continue
            if self.rate[s, t] <= self.params.threshold_bps:
                q.pop(0)
                self.counts["fell_below_threshold"] += 1
                continue
            if any(self.da[i, s] == t and self.in_res[t, i] > now for i in range(self.k_d)):
                q.pop(0)           # a known elephant: its link is reserved
                continue
            ports = self.free_ingress(t, now)
            if not ports:
                return             # it waits for a port
            q.pop(0)
            rid = len(self.requests)
            req = _Request(rid, t, s, self._order(t, s, ports), now, now + self.params.timeout)
            self.requests.append(req)
            self.pending[t] = req
            self.counts["requests"] += 1
            self.log.append({"t_ps": now, "event": "request", "rid": rid, "dst": t, "src": s,
                             "ports": list(req.ports), "try": 1})
            self.send(t, s, rid * 4 + REQUEST)
            return

    def _at_source(self, now: int, req: _Request) -> None:
        """Source s answers a PortRequest (the same way again for a repeated one)."""
        s, t = req.s, req.t
        if req.answer is None:
            port = next((i for i in req.ports if self.eg_res[s, i] <= now), None)
            if port is None:
                req.answer = (DECLINE, -1)
                self.counts["declines"] += 1
                self.log.append({"t_ps": now, "event": "decline", "rid": req.rid, "dst": t, "src": s, **self._msg})
            else:
                req.answer = (APPROVE, port)
                self.eg_res[s, port] = now + self.params.reservation
                self.counts["approves"] += 1
                self._set_link(now, s, port, t, req.rid)
        self.send(s, t, req.rid * 4 + req.answer[0])

    def _set_link(self, now: int, s: int, i: int, t: int, rid: int) -> None:
        """Set DA link (s, t, i): s's egress port i now reaches t; the link that used t's
        ingress port i before (from another source) goes."""
        old_t = int(self.da[i, s])
        if old_t == t:
            self.counts["renewals"] += 1
            self.log.append({"t_ps": now, "event": "renew", "rid": rid, "src": s, "dst": t, "port": i, **self._msg})
            return
        changes: list[tuple[int, int, int | None]] = [(s, i, t)]
        olds = [int(x) for x in np.nonzero(self.da[i] == t)[0] if x != s]
        for o in olds:
            self.da[i, o] = -1
            changes.append((o, i, None))
        self.da[i, s] = t
        self.counts["links_set"] += 1
        self.counts["links_taken_down"] += len(olds) + (old_t >= 0)
        self.log.append({"t_ps": now, "event": "link", "rid": rid, "src": s, "dst": t, "port": i,
                         "replaced_dst": old_t if old_t >= 0 else None, "replaced_src": olds[0] if olds else None,
                         **self._msg})
        self.set_links(changes)


__all__ = ["DistDA", "DistParams", "REQUEST", "APPROVE", "DECLINE", "KIND_NAMES"]
