"""Validated network configuration (OpenOptics' static JSON config, as a pydantic model).

Times, rates and sizes are given with units (``"2us"``, ``"100Gbps"``, ``"1MB"``) and are
stored as integers: picoseconds, bits per second and bytes.

>>> cfg = Config(nodes=4, uplinks=1, link_rate="100Gbps", slice="10us")
>>> cfg.slice, cfg.host_rate, cfg.per_node_rate  # no host_rate: R = uplinks x link_rate
(10000000, None, 100000000000)
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from ..errors import ConfigError
from ..units import parse_rate, parse_size, parse_time

Time = Annotated[int, BeforeValidator(lambda v: parse_time(v, "time"))]
Rate = Annotated[int, BeforeValidator(lambda v: parse_rate(v, "rate"))]
Size = Annotated[int, BeforeValidator(lambda v: parse_size(v, "size"))]


class Config(BaseModel):
    """Static description of a network: nodes, ports, links, slices and endpoints.

    ``nodes`` are what the optical fabric connects (ToRs, pods or hosts). With
    ``hosts_per_node = 0`` every node is itself an endpoint with ideal injection at
    ``host_rate``; otherwise ``hosts_per_node`` hosts hang below each node on links of
    ``host_link_rate`` and flows run between hosts.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: int = 8
    uplinks: int = 1
    link_rate: Rate = parse_rate("100Gbps")
    slice: Time = parse_time("2us")
    guardband: Time = parse_time("200ns")
    propagation: Time = parse_time("500ns")
    host_rate: Rate | None = None
    hosts_per_node: int = 0
    host_link_rate: Rate | None = None
    host_propagation: Time = 0
    buffer: Size = parse_size("1MB")
    #: one buffer pool per switch (ToR or electrical switch) shared by its ports, with
    #: dynamic-threshold admission (Choudhury and Hahne): a queue may grow to
    #: ``buffer_alpha`` x the free part of the pool. None: every port has its own
    #: ``buffer``. With a pool, ``buffer`` is not a per-port limit of the switches.
    shared_buffer: Size | None = None
    #: the dynamic threshold's alpha, one number, or one per priority class (class 0 first)
    buffer_alpha: float | tuple[float, ...] = 1.0
    mtu: Size = 1500
    header: Size = 0
    node_type: Literal["tor", "host", "pod", "rack"] = "tor"
    sample_interval: Time = parse_time("10us")
    reconfiguration_delay: Time = 0

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise _config_error(e, data) from None

    @model_validator(mode="after")
    def _check(self) -> "Config":
        if self.nodes < 2:
            raise ValueError("nodes: need at least 2 nodes")
        if self.uplinks < 1:
            raise ValueError("uplinks: need at least 1 uplink")
        if self.link_rate <= 0:
            raise ValueError("link_rate: must be positive")
        if self.slice <= 0:
            raise ValueError("slice: must be positive")
        if self.guardband >= self.slice:
            raise ValueError(f"guardband: must be shorter than the slice "
                             f"({self.guardband} ps >= {self.slice} ps)")
        if self.hosts_per_node < 0:
            raise ValueError("hosts_per_node: must be >= 0")
        if self.mtu <= 0:
            raise ValueError("mtu: must be positive")
        if self.buffer < self.mtu + self.header:
            raise ValueError("buffer: must hold at least one packet ")
        if self.shared_buffer is not None and self.shared_buffer < self.mtu + self.header:
            raise ValueError(f"shared_buffer: must hold at least one packet ({self.shared_buffer} B)")
        alphas = self.buffer_alpha if isinstance(self.buffer_alpha, tuple) else (self.buffer_alpha,)
        if not alphas or len(alphas) > 8 or any(not (a > 0 and a < float("inf")) for a in alphas):
            raise ValueError(f"buffer_alpha: expected positive numbers, one or one per class (at most 8), "
                             f"got {self.buffer_alpha}")
        if self.host_link_rate is not None and self.host_link_rate <= 0:
            raise ValueError("host_link_rate: must be positive")
        if self.host_rate is not None and self.host_rate <= 0:
            raise ValueError("host_rate: must be positive")
        if self.sample_interval < 0:
            raise ValueError("sample_interval: must be >= 0")
        return self

    # -- derived quantities -------------------------------------------------------------
    @property
    def port_buffer(self) -> int:
        """A switch port's static byte limit: its ``buffer``, or with a shared pool the pool
        (the dynamic threshold is then what limits a queue)."""
        return int(self.shared_buffer) if self.shared_buffer is not None else int(self.buffer)

    @property
    def alphas(self) -> list[float]:
        """``buffer_alpha`` as a list (one per class, or one for all)."""
        a = self.buffer_alpha
        return [float(x) for x in a] if isinstance(a, tuple) else [float(a)]

    @property
    def endpoint_rate(self) -> int:
        """Injection rate of one endpoint (bit/s): host link rate, or R for node endpoints."""
        if self.hosts_per_node:
            return self.host_link_rate or self.link_rate
        return self.per_node_rate

    @property
    def per_node_rate(self) -> int:
        """R of the load definition: host-side bandwidth of one node (bit/s)."""
        if self.host_rate is not None:
            return self.host_rate
        if self.hosts_per_node:
            return self.hosts_per_node * (self.host_link_rate or self.link_rate)
        return self.uplinks * self.link_rate

    @property
    def endpoints(self) -> int:
        """Number of traffic endpoints (nodes, or hosts when hosts hang below nodes)."""
        return self.nodes * self.hosts_per_node if self.hosts_per_node else self.nodes

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Config":
        """Validate a plain dict; any problem raises :class:`ConfigError`."""
        if not isinstance(data, dict):
            raise ConfigError("config", data, "expected a mapping of fields")
        try:
            return cls(**data)
        except ConfigError:
            raise
        except TypeError as e:
            raise ConfigError("config", data, str(e)) from None

    @classmethod
    def from_file(cls, path: str | Path) -> "Config":
        """Read a ``.json`` or ``.toml`` file."""
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise ConfigError("config", str(path), f"cannot read: {e.strerror}") from None
        try:
            data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
            raise ConfigError("config", str(path), f"not valid {p.suffix[1:] or 'json'}: {e}") from None
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> "Config":
        """A copy with some fields changed (validated)."""
        return Config.from_dict({**self.model_dump(), **changes})


def _config_error(e: ValidationError, data: dict[str, Any]) -> ConfigError:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ())) or "config"
    msg = str(err.get("msg", "invalid"))
    ctx = err.get("ctx") or {}
    inner = ctx.get("error")
    if isinstance(inner, ConfigError):
        return ConfigError(loc, inner.value, inner.reason)
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
        # messages from _check start with the field name
        field, _, rest = msg.partition(": ")
        if field in Config.model_fields:
            return ConfigError(field, data.get(field), rest)
    if err.get("type") == "extra_forbidden":
        return ConfigError(loc, err.get("input"), "unknown field")
    return ConfigError(loc, err.get("input", data.get(loc)), msg)
