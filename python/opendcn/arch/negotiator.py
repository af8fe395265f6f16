"""NegotiaToR (Liang et al., SIGCOMM'24): ToRs negotiate one-hop circuits every epoch
through an in-band control plane over one layer of AWGRs; piggybacked mice and PIAS
priorities bypass the scheduling delay.

Defaults are the paper's evaluation (§4.1): 128 ToRs x 8 ports of 100 Gb/s (2x speedup
over a 400 Gb/s host side), parallel network of 8 x 128-port AWGRs (or thin-clos of
64 x 16-port AWGRs), 10 ns guardband, 16 predefined slots of 60 ns (30 B control + 595 B
piggybacked payload), 30 scheduled slots of 90 ns (1125-B packets with a 10-B header) —
a 3.66 us epoch — and 2 us one-way ToR-ToR propagation. The engine and its documented
decisions: ``crates/opendcn-core/src/slotted/negotiator.rs``.

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

from typing import Any

from ..errors import ConfigError
from ..slotted import SlottedNetwork
from ..units import parse_rate, parse_size, parse_time
from . import Option, register

VARIANTS = ("base", "iterative:N", "relay", "data-size", "hol-delay", "stateful", "projector")


def _variant(v: Any, topology: str) -> str:
    """Validate ``--variant``: one of :data:`VARIANTS` (``iterative:N`` with N >= 1)."""
    v = str(v)
    if v.startswith("iterative:"):
        n = v.split(":", 1)[1]
        if not n.isdigit() or not 1 <= int(n) <= 64:
            raise ConfigError("--variant", v, "iterative:N needs a whole number of iterations N in 1..64")
        return f"iterative:{int(n)}"
    if v not in VARIANTS or v == "iterative:N":
        raise ConfigError("--variant", v, "expected one of " + ", ".join(VARIANTS))
    if v == "relay" and topology != "thin-clos":
        raise ConfigError("--variant", v, "the two-hop relay variant runs on --topology thin-clos only "
                          "(on the parallel network every port reaches every ToR)")
    return v


def _ports_and_rate(o: dict[str, Any]) -> tuple[int, int, int, int]:
    nodes = o["nodes"] if o.get("tors") is None else o["tors"]
    if o.get("tors") is not None and o["tors"] < 2:
        raise ConfigError("--tors", o["tors"], "need at least 2 ToRs")
    if nodes < 2:
        raise ConfigError("--nodes", nodes, "need at least 2 ToRs")
    ports = o["ports"]
    if not 1 <= ports <= 64:
        raise ConfigError("--ports", ports, "need 1..64 ports per ToR")
    host = parse_rate(o["host_rate"], "--host-rate")
    sp = o["speedup"]
    if not sp > 0:
        raise ConfigError("--speedup", sp, "must be positive")
    rate = host * sp / ports
    if abs(rate - round(rate)) > 1e-6 * rate or round(rate) <= 0:
        raise ConfigError("--speedup", sp, f"host rate x speedup / ports = {rate} bit/s is not a whole rate")
    return nodes, ports, host, int(round(rate))


def _nonneg_time(v: Any, flag: str, positive: bool = False) -> int:
    t = parse_time(v, flag)
    if t < 0 or (positive and t == 0):
        raise ConfigError(flag, v, "must be positive" if positive else "must be >= 0")
    return t


@register("negotiator", "NegotiaToR: on-demand one-hop AWGR circuits negotiated every epoch in-band (SIGCOMM'24)", [
    Option("nodes", 128, "number of ToRs (the endpoints)", "int"),
    Option("tors", None, "number of ToRs (same as --nodes)", "int"),
    Option("ports", 8, "uplink ports per ToR", "int"),
    Option("topology", "parallel", "AWGR fabric", "choice", ("parallel", "thin-clos")),
    Option("host_rate", "400Gbps", "host-side bandwidth R per ToR (load and goodput base)", "rate"),
    Option("speedup", 2.0, "uplink:host bandwidth ratio (port rate = host rate x speedup / ports)", "float"),
    Option("guardband", "10ns", "reconfiguration guardband at the start of each predefined slot", "time"),
    Option("predefined_slots", 16, "predefined slots per epoch (0: one round robin)", "int"),
    Option("predefined_slot", "60ns", "predefined slot length, guardband included", "time"),
    Option("control_bytes", "30B", "scheduling message + data header bytes per predefined slot", "size"),
    Option("scheduled_slots", 30, "scheduled slots per epoch", "int"),
    Option("scheduled_slot", "90ns", "scheduled slot length (one packet)", "time"),
    Option("header", "10B", "data header per scheduled packet", "size"),
    Option("propagation", "2us", "one-way ToR-ToR propagation delay", "time"),
    Option("pb", True, "piggyback one data packet per predefined slot (--no-pb: off)", "bool"),
    Option("pq", True, "PIAS priority queues at sources (--no-pq: off)", "bool"),
    Option("pias_first", "1KB", "PIAS: bytes of a flow at the highest priority", "size"),
    Option("pias_second", "9KB", "PIAS: next bytes at the middle priority", "size"),
    Option("request_threshold", 3, "with PB, request only above this many piggybacked packets queued", "int"),
    Option("transition_guard", False, "add a guardband at the predefined-to-scheduled retune", "bool"),
    Option("variant", "base", "scheduler variant: " + ", ".join(VARIANTS), "str"),
    Option("hol_alpha", 0.001, "alpha of the hol-delay variant", "float"),
    Option("fail_links", 0.0, "fraction of the 2 N S ToR-AWGR fibers that fail", "float"),
    Option("fail_at", "10ms", "failure instant", "time"),
    Option("recover_at", "20ms", "repair instant", "time"),
    Option("detect_epochs", 3, "epochs of evidence to detect a failure or a repair", "int"),
    Option("relay_threshold", "0B", "relay variant: lowest-priority bytes per destination above which a source "
           "asks for relay (0: one port's scheduled phase, 33450 B by default)", "size"),
    Option("relay_capacity", "0B", "relay variant: relay buffer per intermediate and final destination "
           "(0: two ports' scheduled phases)", "size"),
    Option("fault_relay", True, "thin-clos: relay scheduling messages and data around failed links "
           "(--no-fault-relay: affected pairs wait for the repair)", "bool"),
    Option("sample_interval", "10us", "time-series sample interval (0: none)", "time"),
])
def build(**o: Any) -> SlottedNetwork:
    nodes, ports, host, rate = _ports_and_rate(o)
    guard = _nonneg_time(o["guardband"], "--guardband")
    pre = _nonneg_time(o["predefined_slot"], "--predefined-slot", True)
    sched = _nonneg_time(o["scheduled_slot"], "--scheduled-slot", True)
    prop = _nonneg_time(o["propagation"], "--propagation", True)
    sample = _nonneg_time(o["sample_interval"], "--sample-interval")
    for k in ("predefined_slots", "scheduled_slots", "request_threshold"):
        if o[k] < 0:
            raise ConfigError("--" + k.replace("_", "-"), o[k], "must be >= 0")
    if o["detect_epochs"] < 1:
        raise ConfigError("--detect-epochs", o["detect_epochs"], "must be >= 1")
    if not 0.0 <= o["fail_links"] <= 1.0:
        raise ConfigError("--fail-links", o["fail_links"], "must be a fraction in [0, 1]")
    if not 0.0 <= o["hol_alpha"] <= 1.0:
        raise ConfigError("--hol-alpha", o["hol_alpha"], "must be in [0, 1]")
    t1 = parse_size(o["pias_first"], "--pias-first")
    t2 = t1 + parse_size(o["pias_second"], "--pias-second")
    if t1 <= 0 or t2 <= t1:
        raise ConfigError("--pias-first", o["pias_first"], "PIAS levels must be positive")
    fail_at = _nonneg_time(o["fail_at"], "--fail-at")
    recover_at = _nonneg_time(o["recover_at"], "--recover-at")
    if o["fail_links"] > 0 and recover_at <= fail_at:
        raise ConfigError("--recover-at", o["recover_at"], "must be after --fail-at")
    variant = _variant(o["variant"], o["topology"])
    if variant == "relay" and not o["pq"]:
        raise ConfigError("--variant", variant, "relays only the lowest PIAS priority: needs --pq")
    relay_thr = parse_size(o["relay_threshold"], "--relay-threshold")
    relay_cap = parse_size(o["relay_capacity"], "--relay-capacity")
    for flag, v in (("--relay-threshold", relay_thr), ("--relay-capacity", relay_cap)):
        if v < 0:
            raise ConfigError(flag, v, "must be >= 0")
    if o["topology"] == "thin-clos" and nodes >= ports and nodes % ports:
        raise ConfigError("--tors", nodes, f"thin-clos needs the ToR count to be a multiple of --ports ({ports})")
    params = dict(
        tors=nodes, ports=ports, topology=o["topology"], port_rate_bps=rate, guardband_ps=guard,
        pre_slots=o["predefined_slots"], pre_slot_ps=pre,
        ctrl_bytes=parse_size(o["control_bytes"], "--control-bytes"),
        sched_slots=o["scheduled_slots"], sched_slot_ps=sched,
        header_bytes=parse_size(o["header"], "--header"), prop_ps=prop, pb=o["pb"], pq=o["pq"],
        pias_t1=t1, pias_t2=t2, req_threshold_pkts=o["request_threshold"],
        transition_guard=o["transition_guard"], variant=variant, hol_alpha=float(o["hol_alpha"]),
        relay_threshold=relay_thr, relay_capacity=relay_cap, fault_relay=bool(o["fault_relay"]),
        fail_fraction=float(o["fail_links"]), fail_at_ps=fail_at, recover_at_ps=recover_at,
        detect_epochs=o["detect_epochs"], sample_ps=sample,
    )
    # validate the layout now (bad slot arithmetic is a ConfigError at build time)
    from .. import _core
    from ..network import _engine_error
    import numpy as np
    probe = dict(params, seed=0, duration_ps=1, **{k: np.zeros(0, dtype=np.int64) for k in
                                                     ("flow_start_ps", "flow_src", "flow_dst", "flow_size")})
    try:
        _core.NegotiatorSim(probe)
    except _core.EngineSpecError as e:
        err = _engine_error(e)
        raise ConfigError("--" + err.field.replace("_", "-"), err.value, err.reason) from None
    net = SlottedNetwork("negotiator", "negotiator", params, nodes=nodes, ports=ports, link_rate=rate,
                         host_rate=host, propagation=prop, slice_ps=max(sched, guard + 1), guardband=guard,
                         mtu=max(1, (sched * rate) // (8 * 10**12) - params["header_bytes"]),
                         header=params["header_bytes"], sample_interval=sample)
    net.arch_metrics.update(topology=o["topology"], pb=o["pb"], pq=o["pq"], variant=variant,
                            speedup=o["speedup"], port_rate_bps=rate)
    return net
