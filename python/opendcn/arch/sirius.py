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
``ideal`` keeps the earlier idealization (credits known instantly, queues never above the
cap) for comparison.

OpenOptics' infrastructure services (``--congestion-detection``, ``--pushback``,
``--flow-pausing``, same names and ``summary["services"]`` fields as rotornet): a relay
cell that reaches its intermediate and finds the queue towards its destination already
holding the one cell the next round-robin slot carries is a congestion event; push-back
rides the intermediate's next round-robin cell to the source, which then starts no cell
towards that destination until the congested slot has carried the queue ahead; flow
pausing sends elephants (PIAS aging) on their direct circuit only. ``--queue-estimation eqo``
(slot queues are counted exactly) and ``--buffer-offload`` (ToR endpoints, no hosts) are
rejected by name.

Defaults follow the NegotiaToR paper's baseline: 128 ToRs x 8 ports of 100 Gb/s
(``--speedup 2`` over a 400 Gb/s host side), 2 us propagation. Sirius' own slot, cell and
congestion-control parameters are not in the seed papers; the engine's documented choices
are in ``crates/opendcn-core/src/slotted/sirius.rs``.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..slotted import SlottedNetwork
from ..units import parse_size
from . import Option, apply_services, register, service_options
from .negotiator import _nonneg_time, _ports_and_rate


@register("sirius", "Sirius-like: thin-clos AWGRs, cyclic round robin, VLB relay with intermediate congestion control", [
    Option("nodes", 128, "number of ToRs (the endpoints)", "int"),
    Option("tors", None, "number of ToRs (same as --nodes)", "int"),
    Option("ports", 8, "uplink ports per ToR", "int"),
    Option("host_rate", "400Gbps", "host-side bandwidth R per ToR (load and goodput base)", "rate"),
    Option("speedup", 2.0, "uplink:host bandwidth ratio (port rate = host rate x speedup / ports)", "float"),
    Option("slot", "100ns", "timeslot, guardband included", "time"),
    Option("guardband", "10ns", "reconfiguration guardband at the start of each slot", "time"),
    Option("header", "10B", "cell header bytes", "size"),
    Option("propagation", "2us", "one-way ToR-ToR propagation delay", "time"),
    Option("pq", True, "PIAS priority queues at sources (--no-pq: off)", "bool"),
    Option("pias_first", "1KB", "PIAS: bytes of a flow at the highest priority", "size"),
    Option("pias_second", "9KB", "PIAS: next bytes at the middle priority", "size"),
    Option("relay_cap", 8, "relay threshold (cells) per intermediate per final destination", "int"),
    Option("cc", "inband", "intermediate congestion control: inband (occupancy piggybacked on round-robin "
           "cells, one cycle + propagation old) or ideal (instant credits)", "choice", ("inband", "ideal")),
    Option("sample_interval", "10us", "time-series sample interval (0: none)", "time"),
    *service_options(),
])
def build(**o: Any) -> SlottedNetwork:
    nodes, ports, host, rate = _ports_and_rate(o)
    slot = _nonneg_time(o["slot"], "--slot", True)
    guard = _nonneg_time(o["guardband"], "--guardband")
    prop = _nonneg_time(o["propagation"], "--propagation", True)
    sample = _nonneg_time(o["sample_interval"], "--sample-interval")
    if guard >= slot:
        raise ConfigError("--guardband", o["guardband"], "must be shorter than --slot")
    if o["cc"] not in ("inband", "ideal"):
        raise ConfigError("--cc", o["cc"], "expected inband or ideal")
    if o["relay_cap"] < 1:
        raise ConfigError("--relay-cap", o["relay_cap"], "must be >= 1")
    if nodes >= ports and nodes % ports:
        raise ConfigError("--tors", nodes, f"thin-clos needs the ToR count to be a multiple of --ports ({ports})")
    header = parse_size(o["header"], "--header")
    t1 = parse_size(o["pias_first"], "--pias-first")
    t2 = t1 + parse_size(o["pias_second"], "--pias-second")
    if t1 <= 0 or t2 <= t1:
        raise ConfigError("--pias-first", o["pias_first"], "PIAS levels must be positive")
    payload = ((slot - guard) * rate) // (8 * 10**12) - header
    if payload <= 0:
        raise ConfigError("--slot", o["slot"], "leaves no room for a cell payload")
    params = dict(tors=nodes, ports=ports, port_rate_bps=rate, slot_ps=slot, guardband_ps=guard,
                  header_bytes=header, prop_ps=prop, pq=o["pq"], pias_t1=t1, pias_t2=t2,
                  relay_cap=o["relay_cap"], cc=o["cc"], sample_ps=sample)
    net = SlottedNetwork("sirius", "sirius", params, nodes=nodes, ports=ports, link_rate=rate,
                         host_rate=host, propagation=prop, slice_ps=slot, guardband=guard,
                         mtu=payload, header=header, sample_interval=sample)
    net.arch_metrics.update(topology="thin-clos", pq=o["pq"], speedup=o["speedup"], port_rate_bps=rate,
                            cc=o["cc"])
    apply_services(net, o)
    return net
