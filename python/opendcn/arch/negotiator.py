"""NegotiaToR (Liang et al., SIGCOMM'24): ToRs negotiate one-hop circuits every epoch
through an in-band control plane over one layer of AWGRs; piggybacked mice and PIAS
priorities bypass the scheduling delay.

Defaults are the paper's evaluation (§4.1): 128 ToRs x 8 ports of 100 Gb/s (2x speedup
over a 400 Gb/s host side), parallel network of 8 x 128-port AWGRs (or thin-clos of
64 x 16-port AWGRs), 10 ns guardband, 16 predefined slots of 60 ns (30 B control + 595 B
piggybacked payload), 30 scheduled slots of 90 ns (1125-B packets with a 10-B header) —
a 3.66 us epoch — and 2 us one-way ToR-ToR propagation. The engine and its documented
decisions: ``crates/opendcn-core/src/slotted/negotiator/``.

Scheduler variants (``--variant``, the paper's §3.5 / App. A.2): ``base``;
``iterative:N`` (N matching iterations, 3 more epochs of scheduling delay each);
``relay`` (thin-clos only: traffic-aware two-hop relay of lowest-priority backlogs,
``--relay-threshold``, ``--relay-capacity``); ``data-size`` and ``hol-delay``
(informative requests); ``stateful`` (pending-bytes matrix at destinations);
``projector`` (ProjecToR-like per-port requests, oldest bundle first). Link failures
(``--fail-links``) on thin-clos are relayed through an intermediate ToR
(``--no-fault-relay``: affected pairs wait for the repair).
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from ..errors import ConfigError
from .options import ArchOptions, Float, Int, Rate, Size, Time, like, opt
from ..network.slotted import SlottedNetwork
from . import register

VARIANTS = ("base", "iterative:N", "relay", "data-size", "hol-delay", "stateful", "projector")


class AwgrOptions(ArchOptions):
    """Options shared by the slotted AWGR fabrics (NegotiaToR, Sirius)."""

    nodes: Int = opt(128, "number of ToRs (the endpoints)", ge=2)
    tors: Int | None = opt(None, "number of ToRs (same as --nodes)", ge=2)
    ports: Int = opt(8, "uplink ports per ToR", ge=1, le=64)
    host_rate: Rate = opt("400Gbps", "host-side bandwidth R per ToR (load and goodput base)", gt=0)
    speedup: Float = opt(2.0, "uplink:host bandwidth ratio (port rate = host rate x speedup / ports)", gt=0)
    guardband: Time = opt("10ns", "reconfiguration guardband at the start of each slot")
    header: Size = opt("10B", "header bytes per cell or packet")
    propagation: Time = opt("2us", "one-way ToR-ToR propagation delay", gt=0)
    pq: bool = opt(True, "PIAS priority queues at sources (--no-pq: off)")
    pias_first: Size = opt("1KB", "PIAS: bytes of a flow at the highest priority", gt=0)
    pias_second: Size = opt("9KB", "PIAS: next bytes at the middle priority", gt=0)
    sample_interval: Time = opt("10us", "time-series sample interval (0: none)")

    @property
    def n_tors(self) -> int:
        """The ToR count (``--tors`` if given, else ``--nodes``)."""
        return self.nodes if self.tors is None else self.tors

    @property
    def port_rate(self) -> int:
        """Rate of one uplink port: host rate x speedup / ports (bit/s)."""
        return int(round(self.host_rate * self.speedup / self.ports))

    @model_validator(mode="after")
    def _check_awgr(self) -> "AwgrOptions":
        rate = self.host_rate * self.speedup / self.ports
        if abs(rate - round(rate)) > 1e-6 * rate or round(rate) <= 0:
            raise ConfigError("--speedup", self.speedup,
                              f"host rate x speedup / ports = {rate} bit/s is not a whole rate")
        return self

    def check_thin_clos(self) -> None:
        """A thin-clos fabric needs the ToR count to be a multiple of the port count."""
        n, p = self.n_tors, self.ports
        if n >= p and n % p:
            raise ConfigError("--tors", n, f"thin-clos needs the ToR count to be a multiple of --ports ({p})")


class NegotiatorOptions(AwgrOptions):
    topology: Literal["parallel", "thin-clos"] = opt("parallel", "AWGR fabric")
    guardband: Time = opt("10ns", "reconfiguration guardband at the start of each predefined slot")
    predefined_slots: Int = opt(16, "predefined slots per epoch (0: one round robin)", ge=0)
    predefined_slot: Time = opt("60ns", "predefined slot length, guardband included", gt=0)
    control_bytes: Size = opt("30B", "scheduling message + data header bytes per predefined slot")
    scheduled_slots: Int = opt(30, "scheduled slots per epoch", ge=0)
    scheduled_slot: Time = opt("90ns", "scheduled slot length (one packet)", gt=0)
    header: Size = like(AwgrOptions, "header", "10B")
    pb: bool = opt(True, "piggyback one data packet per predefined slot (--no-pb: off)")
    request_threshold: Int = opt(3, "with PB, request only above this many piggybacked packets queued", ge=0)
    transition_guard: bool = opt(False, "add a guardband at the predefined-to-scheduled retune")
    variant: str = opt("base", "scheduler variant: " + ", ".join(VARIANTS))
    hol_alpha: Float = opt(0.001, "alpha of the hol-delay variant", ge=0, le=1)
    fail_links: Float = opt(0.0, "fraction of the 2 N S ToR-AWGR fibers that fail", ge=0, le=1)
    fail_at: Time = opt("10ms", "failure instant")
    recover_at: Time = opt("20ms", "repair instant")
    detect_epochs: Int = opt(3, "epochs of evidence to detect a failure or a repair", ge=1)
    relay_threshold: Size = opt("0B", "relay variant: lowest-priority bytes per destination above which a "
                                      "source asks for relay (0: one port's scheduled phase, 33450 B by default)")
    relay_capacity: Size = opt("0B", "relay variant: relay buffer per intermediate and final destination "
                                     "(0: two ports' scheduled phases)")
    fault_relay: bool = opt(True, "thin-clos: relay scheduling messages and data around failed links "
                                  "(--no-fault-relay: affected pairs wait for the repair)")

    @field_validator("variant")
    @classmethod
    def _variant(cls, v: str) -> str:
        v = str(v)
        if v.startswith("iterative:"):
            n = v.split(":", 1)[1]
            if not n.isdigit() or not 1 <= int(n) <= 64:
                raise ConfigError("--variant", v, "iterative:N needs a whole number of iterations N in 1..64")
            return f"iterative:{int(n)}"
        if v not in VARIANTS or v == "iterative:N":
            raise ConfigError("--variant", v, "expected one of " + ", ".join(VARIANTS))
        return v

    @model_validator(mode="after")
    def _check(self) -> "NegotiatorOptions":
        if self.variant == "relay" and self.topology != "thin-clos":
            raise ConfigError("--variant", self.variant, "the two-hop relay variant runs on --topology thin-clos "
                              "only (on the parallel network every port reaches every ToR)")
        if self.variant == "relay" and not self.pq:
            raise ConfigError("--variant", self.variant, "relays only the lowest PIAS priority: needs --pq")
        if self.fail_links > 0 and self.recover_at <= self.fail_at:
            raise ConfigError("--recover-at", self.recover_at, "must be after --fail-at")
        if self.topology == "thin-clos":
            self.check_thin_clos()
        return self


@register("negotiator", "NegotiaToR: on-demand one-hop AWGR circuits negotiated every epoch in-band (SIGCOMM'24)",
          NegotiatorOptions)
def build(o: NegotiatorOptions) -> SlottedNetwork:
    nodes, rate = o.n_tors, o.port_rate
    params = dict(
        tors=nodes, ports=o.ports, topology=o.topology, port_rate_bps=rate, guardband_ps=o.guardband,
        pre_slots=o.predefined_slots, pre_slot_ps=o.predefined_slot, ctrl_bytes=o.control_bytes,
        sched_slots=o.scheduled_slots, sched_slot_ps=o.scheduled_slot,
        header_bytes=o.header, prop_ps=o.propagation, pb=o.pb, pq=o.pq,
        pias_t1=o.pias_first, pias_t2=o.pias_first + o.pias_second, req_threshold_pkts=o.request_threshold,
        transition_guard=o.transition_guard, variant=o.variant, hol_alpha=float(o.hol_alpha),
        relay_threshold=o.relay_threshold, relay_capacity=o.relay_capacity, fault_relay=o.fault_relay,
        fail_fraction=float(o.fail_links), fail_at_ps=o.fail_at, recover_at_ps=o.recover_at,
        detect_epochs=o.detect_epochs, sample_ps=o.sample_interval,
    )
    sched = o.scheduled_slot
    net = SlottedNetwork("negotiator", "negotiator", params, nodes=nodes, ports=o.ports, link_rate=rate,
                         host_rate=o.host_rate, propagation=o.propagation, slice_ps=max(sched, o.guardband + 1),
                         guardband=o.guardband, mtu=max(1, (sched * rate) // (8 * 10**12) - o.header),
                         header=o.header, sample_interval=o.sample_interval)
    net.check_spec()  # bad slot arithmetic is a ConfigError at build time
    net.arch_metrics.update(topology=o.topology, pb=o.pb, pq=o.pq, variant=o.variant,
                            speedup=o.speedup, port_rate_bps=rate)
    return net
