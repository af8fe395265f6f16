"""Typed architecture options: each architecture declares its options once, as a pydantic
model, and everything else is generated from that model.

An architecture's options class (a subclass of :class:`ArchOptions`) gives every option
its type (with a unit for times, rates and sizes), default, bounds and help text. From it
come the Python builder ``od.arch.<name>(**options)`` (its signature), the CLI command
``opendcn run <name> --help``, the listing ``opendcn archs`` and the options table of
``docs/arch/<name>.md``. Values are checked in one place, the model: a bad value raises
:class:`~opendcn.errors.ConfigError` naming the option's flag (``--link-rate``), the value
as given, and the reason.

Times, rates and sizes are given with units (``"2us"``, ``"100Gbps"``, ``"1MB"``; a bare
integer is picoseconds, bit/s or bytes) and are stored as integers. The shared groups
(:class:`FabricOptions`, :class:`ServiceOptions`, :class:`TransportOptions`) are mixed
into the architectures that offer them.

>>> class Demo(ArchOptions):
...     slot: Time = opt("100ns", "timeslot, guardband included", gt=0)
...     ports: Int = opt(8, "ports per node", ge=1)
>>> Demo(slot="1us").slot, Demo().ports
(1000000, 8)
>>> Demo(ports=0)
Traceback (most recent call last):
...
opendcn.errors.ConfigError: --ports: Input should be greater than or equal to 1 (got 0)
>>> [(o.flag, o.default, o.kind, o.bounds) for o in Demo.options()]
[('--slot', '100ns', 'time', '> 0'), ('--ports', 8, 'int', '>= 1')]
"""

from __future__ import annotations

import copy
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Union

import annotated_types as at
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, ValidationError, field_validator,
                      model_validator)

from ..errors import ConfigError
from ..units import parse_rate, parse_size, parse_time

__all__ = ["ArchOptions", "Option", "opt", "like", "FailureOptions", "Int", "Float", "Time", "Rate", "Size", "AutoTime",
           "AutoSize", "AutoInt", "AutoRate", "LimitInt", "Kind", "check_rule", "FabricOptions", "ServiceOptions", "TransportOptions", "flag"]


@dataclass(frozen=True)
class Kind:
    """Marks an option type with the name shown in help and docs (``time``, ``rate``, ...)."""

    name: str


def _no_bool(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError("expected a number, not true/false")
    return v


def _auto(parse: Any) -> Any:
    def conv(v: Any) -> Any:
        if v is None or (isinstance(v, str) and v.strip().lower() == "auto"):
            return None
        return parse(v)
    return conv


def _auto_int(v: Any) -> Any:
    if v is None or (isinstance(v, str) and v.strip().lower() == "auto"):
        return None
    return _no_bool(v)


Int = Annotated[int, BeforeValidator(_no_bool), Kind("int")]
Float = Annotated[float, BeforeValidator(_no_bool), Kind("float")]
Time = Annotated[int, BeforeValidator(lambda v: parse_time(v, "time")), Kind("time")]
Rate = Annotated[int, BeforeValidator(lambda v: parse_rate(v, "rate")), Kind("rate")]
Size = Annotated[int, BeforeValidator(lambda v: parse_size(v, "size")), Kind("size")]
#: ``"auto"`` (stored as None) or a time / size / integer
AutoTime = Annotated[Union[int, None], BeforeValidator(_auto(lambda v: parse_time(v, "time"))), Kind("time or auto")]
AutoSize = Annotated[Union[int, None], BeforeValidator(_auto(lambda v: parse_size(v, "size"))), Kind("size or auto")]
AutoInt = Annotated[Union[int, None], BeforeValidator(_auto_int), Kind("int or auto")]
AutoRate = Annotated[Union[int, None], BeforeValidator(_auto(lambda v: parse_rate(v, "rate"))), Kind("rate or auto")]


def _limit_int(v: Any) -> Any:
    if v is None or (isinstance(v, str) and v.strip().lower() in ("unlimited", "none")):
        return None
    return _no_bool(v)


#: an integer or ``"unlimited"`` (stored as None)
LimitInt = Annotated[Union[int, None], BeforeValidator(_limit_int), Kind("int or unlimited")]

_UNITS = {"time": "ps, ns, us, ms, s", "rate": "bps, Kbps, Mbps, Gbps, Tbps", "size": "B, KB, MB, GB, KiB, MiB"}


def flag(name: str) -> str:
    """The CLI flag of an option name (``link_rate`` -> ``--link-rate``)."""
    return "--" + name.replace("_", "-")


def opt(default: Any, help: str, *, ge: Any = None, gt: Any = None, le: Any = None, lt: Any = None) -> Any:
    """One option: its default (as a user would type it, e.g. ``"2us"``), help text and
    bounds (checked on the stored value: ps, bit/s, bytes, counts)."""
    return Field(default, description=help, ge=ge, gt=gt, le=le, lt=lt)


def like(model: type[BaseModel], name: str, default: Any) -> Any:
    """Option ``name`` of ``model`` with another default (an architecture's own default
    for a shared option, e.g. its node count); help and bounds are kept."""
    fi = copy.copy(model.model_fields[name])
    fi.default = default
    return fi


@dataclass(frozen=True)
class Option:
    """What help, listings and docs show of one option (generated from the model)."""

    name: str
    default: Any
    help: str
    kind: str = "str"
    choices: tuple[str, ...] = ()
    bounds: str = ""

    @property
    def flag(self) -> str:
        return flag(self.name)

    @property
    def units(self) -> str:
        """Accepted units of a time, rate or size option ("" for other kinds)."""
        return _UNITS.get(self.kind.split(" ")[0], "")


def _describe(annotation: Any) -> tuple[str, tuple[str, ...]]:
    """(kind, choices) of a field's annotation."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        base, *meta = typing.get_args(annotation)
        for m in meta:
            if isinstance(m, Kind):
                return m.name, ()
        return _describe(base)
    if origin is Literal:
        return "choice", tuple(str(a) for a in typing.get_args(annotation))
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _describe(args[0])
    if annotation is bool:
        return "bool", ()
    if annotation is int:
        return "int", ()
    if annotation is float:
        return "float", ()
    return "str", ()


def _bounds(metadata: list[Any]) -> str:
    parts = []
    for m in metadata:
        for cls, attr, sym in ((at.Ge, "ge", ">="), (at.Gt, "gt", ">"), (at.Le, "le", "<="), (at.Lt, "lt", "<")):
            if isinstance(m, cls):
                parts.append(f"{sym} {getattr(m, attr)}")
    return ", ".join(parts)


class ArchOptions(BaseModel):
    """Base of every architecture's options (frozen; unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    #: the architecture's registered name (set by :func:`opendcn.arch.register`)
    arch_name: ClassVar[str] = ""
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise option_error(type(self), e, data) from None
        self._raw = dict(data)

    @classmethod
    def options(cls) -> tuple[Option, ...]:
        """Every option: the fabric's, the architecture's own, then the services' and the
        transports' (each group in declaration order)."""
        def group(name: str) -> int:
            return 2 if name in TransportOptions.model_fields else 1 if name in ServiceOptions.model_fields else 0

        out = []
        for name, fi in sorted(cls.model_fields.items(), key=lambda kv: group(kv[0])):
            kind, choices = _describe(fi.rebuild_annotation())
            out.append(Option(name, fi.default, fi.description or "", kind, choices, _bounds(fi.metadata)))
        return tuple(out)

    def given(self, name: str) -> Any:
        """The value of option ``name`` as the user wrote it (for messages)."""
        return self._raw.get(name, type(self).model_fields[name].default)


def option_error(cls: type[BaseModel], e: ValidationError, data: dict[str, Any]) -> ConfigError:
    """The first problem of a validation error as a ConfigError naming the option's flag
    and the value as given."""
    err = e.errors()[0]
    loc = err.get("loc", ())
    name = str(loc[0]) if loc else ""
    inner = (err.get("ctx") or {}).get("error")
    if isinstance(inner, ConfigError):
        if not name:  # raised by a model validator: it names its field
            return user_value(inner, cls, data)
        return ConfigError(flag(name), data.get(name, cls.model_fields[name].default if name in cls.model_fields
                                                else None), inner.reason)
    msg = str(err.get("msg", "invalid"))
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if err.get("type") == "extra_forbidden":
        return ConfigError(flag(name), data.get(name), "unknown option")
    if err.get("type") == "literal_error":
        choices = _describe(cls.model_fields[name].rebuild_annotation())[1]
        msg = "expected one of " + ", ".join(choices)
    value = data.get(name, cls.model_fields[name].default if name in cls.model_fields else None)
    return ConfigError(flag(name) if name else "options", value, msg)


def user_value(e: ConfigError, cls: type[BaseModel], data: dict[str, Any]) -> ConfigError:
    """``e`` with the option's flag and the value as the user gave it, when ``e`` names
    an option of ``cls`` (errors raised after conversion carry ps / bytes / bit/s)."""
    name = e.field.lstrip("-").replace("-", "_")
    if name not in cls.model_fields:
        return e
    raw = data[name] if name in data else cls.model_fields[name].default
    return ConfigError(flag(name), raw, e.reason)


# ---------------------------------------------------------------------------- shared groups
class FabricOptions(ArchOptions):
    """The hardware of a packet-engine network (the fields of :class:`~opendcn.network.config.Config`)."""

    nodes: Int = opt(16, "number of nodes (ToRs) the fabric connects", ge=2)
    uplinks: Int = opt(1, "uplinks per node", ge=1)
    link_rate: Rate = opt("100Gbps", "rate of every fabric link", gt=0)
    propagation: Time = opt("500ns", "propagation delay of a fabric link")
    host_rate: Rate | None = opt(None, "host-side bandwidth R per node (default uplinks x link rate)", gt=0)
    hosts_per_node: Int = opt(0, "hosts below each node (0: nodes are the endpoints)", ge=0)
    host_link_rate: Rate | None = opt(None, "rate of a host link (default link rate)", gt=0)
    buffer: Size = opt("1MB", "buffer per egress port", gt=0)
    shared_buffer: Size | None = opt(None, "one buffer pool per switch shared by its ports (dynamic thresholds; "
                                           "e.g. 64MB, a Tofino2); replaces --buffer at the switches", gt=0)
    buffer_alpha: Float = opt(1.0, "dynamic-threshold alpha of a shared buffer: a queue may hold alpha x the "
                                   "pool's free bytes", gt=0)
    mtu: Size = opt("1500B", "payload bytes per packet", gt=0)

    def config(self, **extra: Any) -> dict[str, Any]:
        """The :class:`~opendcn.network.config.Config` fields (None: keep the Config default)."""
        keys = ("nodes", "uplinks", "link_rate", "propagation", "host_rate", "hosts_per_node",
                "host_link_rate", "buffer", "shared_buffer", "buffer_alpha", "mtu")
        out = {k: getattr(self, k) for k in keys if getattr(self, k) is not None}
        out.update({k: v for k, v in extra.items() if v is not None})
        return out


class ServiceOptions(ArchOptions):
    """OpenOptics' infrastructure services, offered by every traffic-oblivious architecture."""

    congestion_detection: bool = opt(False, "count calendar queues that overflow their slice")
    pushback: bool = opt(False, "push back sources whose traffic finds its calendar queue full")
    flow_pausing: bool = opt(False, "hold elephants at the source until their circuit is up")
    elephant_threshold: Size = opt("100KB", "PIAS flow-aging threshold for flow pausing")
    queue_estimation: Literal["exact", "eqo"] = opt(
        "exact", "calendar-queue occupancy for detection: exact, or OpenOptics' estimate (eqo)")
    eqo_interval: Time = opt("50ns", "EQO update interval", gt=0)
    buffer_offload: Int = opt(0, "calendar queues kept per ToR port; packets departing later wait on hosts "
                                 "below the ToR (0 = off; needs --hosts-per-node)", ge=0)

    log_drops: Int = opt(0, "record up to N dropped packets one by one, and every push-back message "
                            "(Result.drops / .pushbacks; drops.parquet, pushbacks.parquet under --out)", ge=0)

    def apply_services(self, net: Any) -> None:
        """Switch the chosen services on ``net``."""
        from ..network.network import Network

        if self.log_drops and not isinstance(net, Network):
            raise ConfigError("--log-drops", self.log_drops, "the slotted engines (Sirius, Shale) do not record drops "
                              "one by one; their summary counts them by reason")
        net.log_drops = int(self.log_drops)
        eqo = self.queue_estimation == "eqo"
        net.services(congestion_detection=self.congestion_detection, pushback=self.pushback,
                     flow_pausing=self.flow_pausing, elephant_threshold=self.elephant_threshold,
                     queue_estimation=self.queue_estimation, eqo_interval=self.eqo_interval if eqo else None,
                     buffer_offload=self.buffer_offload)


class FailureOptions(ArchOptions):
    """Link and node failures of a packet-engine network (``Network.fail_links``,
    ``Network.fail_nodes``)."""

    fail_links: Float = opt(0.0, "fraction of the fabric links that fail (random, stream 'failures')", ge=0, lt=1)
    fail_nodes: Float = opt(0.0, "fraction of the nodes, switches included, that fail with all their ports "
                                 "(random, stream 'failures.nodes'), failing and recovering with the links", ge=0, lt=1)
    fail_at: Time | None = opt(None, "when the links / nodes fail (default: a third into the run)")
    recover_at: Time | None = opt(None, "when the failed links / nodes recover (default: never)")

    @model_validator(mode="after")
    def _order(self) -> "FailureOptions":
        if self.fail_at is not None and self.recover_at is not None and self.recover_at <= self.fail_at:
            raise ConfigError("--recover-at", self.recover_at, f"must come after --fail-at ({self.fail_at} ps)")
        return self

    def apply_failures(self, net: Any) -> None:
        """Fail ``fail_links`` of ``net``'s fabric links in every run (``Network.random_failures``)."""
        if self.fail_links or self.fail_nodes or self.fail_at is not None or self.recover_at is not None:
            # an explicit zero fraction (the baseline point of a sweep over the fraction)
            # means no failure; a time without any fraction is a forgotten flag
            given = {"fail_links", "fail_nodes"} & self.model_fields_set
            if not self.fail_links and not self.fail_nodes and given:
                return
            if not self.fail_links and not self.fail_nodes:
                raise ConfigError("--fail-links", 0, "--fail-at / --recover-at need a fraction of links "
                                                     "(or --fail-nodes) to fail")
            net.random_failures(self.fail_links, self.fail_at, self.recover_at, nodes=self.fail_nodes)


def check_rule(v: str) -> str:
    """Validator of a transport-rule option (``auto`` is left to the architecture)."""
    from ..network.transport import parse_rule

    if str(v).strip().lower() != "auto":
        parse_rule(v)
    return v


class TransportOptions(ArchOptions):
    """The end-to-end transports of the packet engine (see :mod:`opendcn.network.transport`)."""

    transport: str = opt("ideal", "transport rule by flow size, e.g. dctcp, tcp, ndp, ideal, 'ndp<1MB,tcp' "
                                  "('<' strict, '<=' inclusive; the last term catches the rest)")
    tcp_dupack: Int = opt(3, "TCP duplicate-ACK threshold for fast retransmit", ge=1)
    tcp_init_cwnd: Int = opt(10, "TCP initial window (packets)", ge=1)
    tcp_init_ssthresh: LimitInt = opt("unlimited", "TCP initial slow-start threshold (packets, or unlimited: "
                                                   "slow start until the first loss)", ge=1, le=2**32 - 2)
    tcp_min_rto: Time = opt("1ms", "TCP minimum retransmission timeout", gt=0)
    tcp_rto: Time | None = opt(None, "TCP initial retransmission timeout (default: the minimum)", gt=0)
    ecn_k: Size = opt("30KB", "DCTCP: ports mark ECN above this many queued bytes", gt=0)
    ndp_init_window: Int = opt(20, "NDP initial window (packets)", ge=1)
    ndp_rto: Time = opt("1ms", "NDP retransmission timeout", gt=0)
    ndp_queue: Int = opt(8, "NDP: data and header classes of this many full packets per port", ge=1)
    ndp_pull_rate: Float = opt(1.0, "NDP: pulls per full-packet time of the receiver's link", gt=0, le=100)
    ndp_pull_pacer: Literal["host", "flow"] = opt("host", "NDP: one pull pacer per receiving host, or per flow "
                                                          "(as opera-sim)")
    ndp_return_to_sender: bool = opt(True, "NDP: a header that finds the header class full goes back to its "
                                           "sender (else it is dropped and the flow's timeout recovers it)")
    ctrl_bytes: Int = opt(64, "bytes of a control packet (ACK, NACK, PULL) and of a trimmed header", ge=1, le=9000)

    _rule = field_validator("transport")(check_rule)

    def apply_transport(self, net: Any) -> None:
        """Apply the chosen transport rule and parameters to ``net``."""
        net.transport(self.transport, dupack=self.tcp_dupack, init_cwnd=self.tcp_init_cwnd,
                      init_ssthresh=self.tcp_init_ssthresh,
                      min_rto=self.tcp_min_rto, rto=self.tcp_rto, ecn_k=self.ecn_k,
                      ndp_init_window=self.ndp_init_window, ndp_rto=self.ndp_rto, ndp_queue=self.ndp_queue,
                      pull_rate=self.ndp_pull_rate, pull_pacer=self.ndp_pull_pacer,
                      return_to_sender=self.ndp_return_to_sender, ctrl_bytes=self.ctrl_bytes)
