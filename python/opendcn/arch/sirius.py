"""Sirius-like traffic-oblivious baseline (NegotiaToR's TO baseline): thin-clos of
passive AWGRs with tunable lasers, a static cyclic round robin, fixed timeslots with a
10 ns guardband, VLB relay through intermediate ToRs with congestion control of the
intermediate queues, PIAS priority at sources only.

Congestion control (``--cc``): ``inband`` (default) is what Sirius can build — an
intermediate's queue occupancy per final destination reaches a source only piggybacked on
the cell the intermediate sends it in the round robin, so it is one round-robin cycle plus
the propagation delay old; a source sends a relay cell for d to m only while its last
report of m's queue for d plus its own cells sent since is below ``--relay-cap`` cells
(default 8 = twice the report loop of 4 cycles at 128 x 8; queues may overshoot it).
DECIDE: the report is not free: every cell carries one count per final destination
(``--report-bits`` each, by default enough for 0..2 x ``--relay-cap``: 5 bits, 80 B at
128 ToRs), charged as header bytes on top of ``--header``, so the cell payload shrinks
(1035 B instead of 1115 B at the defaults). ``--cc ideal`` carries no report.
``ideal`` keeps the earlier idealization (credits known instantly, queues never above the
cap) for comparison. ``grant`` is a request-grant protocol (the congestion control NegotiaToR
§3.2 ascribes to the traffic-oblivious designs, "similar to NegotiaToR Matching's minimalist
request-grant mechanism"): each cell's header carries one request from its sender to its
receiver (a relay cell for one destination d) and the receiver answers in its next
round-robin cell to the sender with a grant when its queue for d, the cells on their way and
those it granted stay below ``--relay-cap``; a relay cell leaves only on a grant, in the
first slot to that intermediate once the grant has arrived. Direct cells need no grant.
DECIDE: a request names one destination (the sender's highest-priority one, round robin,
with more cells waiting than requests out); the header pays for a request and a grant
(2 x ceil(log2 N) bits, ``--report-bits`` sets their total); a grant its source cannot use
is returned at once.

Relay rule (``--relay``): ``direct-first`` (default) sends a source's data for the slot's
peer direct and relays only other destinations' cells through it; ``all`` is Valiant load
balancing for every cell, as Sirius and the traffic-oblivious designs NegotiaToR compares
with ("spreading data across the network before routing it to the final destination",
NEG §2; under all-to-all its receivers get "intermediate traffic ... that needs to be
forwarded", NEG A.3): the slot's peer is the intermediate of whatever cell is next (highest
priority, destinations round robin), direct only when the peer is that cell's destination.

OpenOptics' infrastructure services (``--congestion-detection``, ``--pushback``,
``--flow-pausing``, same names and ``summary["services"]`` fields as rotornet): a relay
cell that reaches its intermediate and finds the queue towards its destination already
holding the one cell the next round-robin slot carries is a congestion event; push-back
rides the intermediate's next round-robin cell to the source, which then starts no cell
towards that destination until the congested slot has carried the queue ahead; flow
pausing sends elephants (PIAS aging) on their direct circuit only. ``--queue-estimation eqo``
(slot queues are counted exactly) and ``--buffer-offload`` (ToR endpoints, no hosts) are
rejected by name.

Failures (``--fail-links F`` of the N x S ToR ports, ``--fail-nodes F`` of the ToRs, at
``--fail-at``, back at ``--recover-at``; or ``net.fail_links([(tor, port), ...], at,
recover_at)`` / ``net.fail_nodes([...], ...)``): a failed port sends and receives nothing,
cells sent towards it before their sender knows are lost (``failed_link``); a failed ToR
loses what it holds (``failed_node``). Senders learn of a failure, and of the repair, from
the round-robin cells (a missing one means down): within one cycle plus the report lag.
VLB relays only through intermediates that report their onward circuit up. The summary
gains the delivered bandwidth per ``--failure-bin`` around the failure
(docs/arch/sirius.md#failures).

Defaults follow the NegotiaToR paper's baseline: 128 ToRs x 8 ports of 100 Gb/s
(``--speedup 2`` over a 400 Gb/s host side), 2 us propagation. Sirius' own slot, cell and
congestion-control parameters are not in the seed papers; the engine's documented choices
are in ``crates/opendcn-core/src/slotted/sirius.rs``.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import model_validator

from ..errors import ConfigError
from .options import AutoInt, AutoTime, FailureOptions, Float, Int, ServiceOptions, Size, Time, like, opt
from ..network.slotted import SlottedNetwork
from . import register
from .negotiator import AwgrOptions


class SiriusOptions(ServiceOptions, FailureOptions, AwgrOptions):
    slot: Time = opt("100ns", "timeslot, guardband included", gt=0)
    guardband: Time = like(AwgrOptions, "guardband", "10ns")
    header: Size = like(AwgrOptions, "header", "10B")
    relay_cap: Int = opt(8, "relay threshold (cells) per intermediate per final destination", ge=1)
    cc: Literal["inband", "ideal", "grant"] = opt("inband", "intermediate congestion control: inband "
                                                  "(occupancy piggybacked on round-robin cells, one cycle + "
                                                  "propagation old), ideal (instant credits) or grant "
                                                  "(request-grant in the cell headers)")
    relay: Literal["direct-first", "all"] = opt("direct-first", "relay rule: direct-first (a source's data for "
                                                "the slot's peer goes direct, other destinations' cells relay "
                                                "through it) or all (Valiant for every cell: the slot's peer is "
                                                "the intermediate of whatever cell is next)")
    report_bits: AutoInt = opt("auto", "bits per destination of the occupancy report an inband cell carries, "
                                       "charged as header bytes (N x bits / 8); auto: enough for 0..2 x "
                                       "--relay-cap with inband, 0 with ideal; with grant: the bits of a "
                                       "request and a grant together (auto: 2 x ceil(log2 N))")
    fail_nodes: Float = opt(0.0, "fraction of the ToRs that fail (random, stream 'failures.nodes'), with the links",
                            ge=0, lt=1)
    failure_bin: AutoTime = opt("auto", "bin width of the delivered-bandwidth series of a failure run; auto: "
                                        "whole round-robin cycles, at most 2000 bins")

    @model_validator(mode="after")
    def _check(self) -> "SiriusOptions":
        if self.guardband >= self.slot:
            raise ConfigError("--guardband", self.guardband, "must be shorter than --slot")
        self.check_thin_clos()
        if self.report_bits is not None and self.report_bits < 0:
            raise ConfigError("--report-bits", self.report_bits, "must be >= 0")
        if self.payload <= 0:
            raise ConfigError("--slot", self.slot, "leaves no room for a cell payload")
        if self.failure_bin is not None and self.failure_bin <= 0:
            raise ConfigError("--failure-bin", self.failure_bin, "must be positive")
        return self

    def apply_failures(self, net: SlottedNetwork) -> None:
        """Fail ``--fail-links`` of the ToR ports and ``--fail-nodes`` of the ToRs in every run."""
        net.failure_bin = self.failure_bin
        if self.fail_links or self.fail_nodes:
            net.random_failures(self.fail_links, self.fail_at, self.recover_at, nodes=self.fail_nodes)
        elif (self.fail_at is not None or self.recover_at is not None) \
                and not {"fail_links", "fail_nodes"} & self.model_fields_set:
            # an explicit zero fraction (a sweep's baseline point) means no failure
            raise ConfigError("--fail-at" if self.fail_at is not None else "--recover-at",
                              self.given("fail_at" if self.fail_at is not None else "recover_at"),
                              "needs --fail-links or --fail-nodes")

    @property
    def report_bytes(self) -> int:
        """Bytes of the occupancy report on every cell: one count per final destination."""
        bits = self.report_bits
        if self.cc == "grant":
            total = 2 * max(1, math.ceil(math.log2(self.n_tors))) if bits is None else bits
            return math.ceil(total / 8)
        if bits is None:
            bits = math.ceil(math.log2(2 * self.relay_cap + 1)) if self.cc == "inband" else 0
        return math.ceil(self.n_tors * bits / 8)

    @property
    def cell_header(self) -> int:
        """Header bytes of a cell: ``--header`` plus the occupancy report."""
        return self.header + self.report_bytes

    @property
    def payload(self) -> int:
        """Cell payload bytes: what one slot carries at the port rate, less the header."""
        return ((self.slot - self.guardband) * self.port_rate) // (8 * 10**12) - self.cell_header


@register("sirius", "Sirius-like: thin-clos AWGRs, cyclic round robin, VLB relay with intermediate congestion "
          "control", SiriusOptions)
def build(o: SiriusOptions) -> SlottedNetwork:
    nodes, rate = o.n_tors, o.port_rate
    params = dict(tors=nodes, ports=o.ports, port_rate_bps=rate, slot_ps=o.slot, guardband_ps=o.guardband,
                  header_bytes=o.cell_header, prop_ps=o.propagation, pq=o.pq, pias_t1=o.pias_first,
                  pias_t2=o.pias_first + o.pias_second, relay_cap=o.relay_cap, cc=o.cc, relay=o.relay,
                  sample_ps=o.sample_interval)
    net = SlottedNetwork("sirius", "sirius", params, nodes=nodes, ports=o.ports, link_rate=rate,
                         host_rate=o.host_rate, propagation=o.propagation, slice_ps=o.slot,
                         guardband=o.guardband, mtu=o.payload, header=o.cell_header,
                         sample_interval=o.sample_interval)
    net.arch_metrics.update(topology="thin-clos", pq=o.pq, speedup=o.speedup, port_rate_bps=rate, cc=o.cc, relay=o.relay,
                            report_bytes=o.report_bytes, cell_payload_bytes=o.payload)
    o.apply_services(net)
    o.apply_failures(net)
    return net
