"""The architecture registry: every design opendcn runs, as a short script.

Each architecture module registers a builder with :func:`register`; ``opendcn run ARCH``
looks it up here and ``od.arch.<name>(**options)`` builds the same ready network from
Python, with the option names of the CLI (``--link-rate`` ↔ ``link_rate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ConfigError


@dataclass(frozen=True)
class Option:
    """One architecture option: CLI ``--name`` (dashes) ↔ Python keyword (underscores)."""

    name: str
    default: Any
    help: str
    kind: str = "str"              # "str", "int", "float", "bool", "choice", "time", "rate", "size"
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def convert(self, value: Any) -> Any:
        """Check and convert a CLI string or Python value; ConfigError names the option."""
        from ..units import parse_rate, parse_size, parse_time

        f = self.flag
        if value is None:
            return None
        try:
            if self.kind == "int":
                if isinstance(value, bool):
                    raise ValueError
                return int(value)
            if self.kind == "float":
                return float(value)
            if self.kind == "bool":
                if isinstance(value, bool):
                    return value
                if str(value).lower() in ("1", "true", "yes", "on"):
                    return True
                if str(value).lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError
        except (TypeError, ValueError):
            raise ConfigError(f, value, f"expected {self.kind}") from None
        if self.kind == "choice":
            if value not in self.choices:
                raise ConfigError(f, value, f"expected one of {', '.join(self.choices)}")
            return value
        if self.kind == "time":
            parse_time(value, f)
        if self.kind == "rate":
            parse_rate(value, f)
        if self.kind == "size":
            parse_size(value, f)
        return value


@dataclass(frozen=True)
class Arch:
    name: str
    description: str
    build: Callable[..., Any]
    options: tuple[Option, ...] = field(default_factory=tuple)
    #: options of the smallest meaningful instance (used by tests and examples)
    tiny: dict[str, Any] = field(default_factory=lambda: {"nodes": 8})

    def make(self, **kwargs: Any) -> Any:
        """Build a ready network from options (unknown or bad options raise ConfigError)."""
        known = {o.name: o for o in self.options}
        for k in kwargs:
            if k not in known:
                raise ConfigError("--" + k.replace("_", "-"), kwargs[k],
                                  f"unknown option of {self.name}; known: "
                                  + ", ".join(o.flag for o in self.options))
        values = {o.name: o.convert(kwargs.get(o.name, o.default)) for o in self.options}
        return self.build(**values)


REGISTRY: dict[str, Arch] = {}


def register(name: str, description: str, options: list[Option],
             tiny: dict[str, Any] | None = None) -> Callable:
    """Decorator: add a builder to the registry and expose it as ``od.arch.<name>``;
    ``tiny`` gives the options of its smallest meaningful instance (default 8 nodes)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        REGISTRY[name] = Arch(name, description, fn, tuple(options), dict(tiny or {"nodes": 8}))
        return fn

    return deco


def get(name: str) -> Arch:
    """The registered architecture ``name`` (ConfigError listing the known ones)."""
    if name not in REGISTRY:
        raise ConfigError("ARCH", name, f"unknown architecture; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def common_options(nodes: int, uplinks: int) -> list[Option]:
    """Options every architecture shares (the network's Config)."""
    return [
        Option("nodes", nodes, "number of nodes (ToRs) the fabric connects", "int"),
        Option("uplinks", uplinks, "uplinks per node", "int"),
        Option("link_rate", "100Gbps", "rate of every fabric link", "rate"),
        Option("propagation", "500ns", "propagation delay of a fabric link", "time"),
        Option("host_rate", None, "host-side bandwidth R per node (default uplinks x link rate)", "rate"),
        Option("hosts_per_node", 0, "hosts below each node (0: nodes are the endpoints)", "int"),
        Option("host_link_rate", None, "rate of a host link (default link rate)", "rate"),
        Option("buffer", "1MB", "buffer per egress port", "size"),
        Option("mtu", "1500B", "payload bytes per packet", "size"),
    ]


def service_options() -> list[Option]:
    """OpenOptics infrastructure services, offered by every traffic-oblivious architecture."""
    return [
        Option("congestion_detection", False, "count calendar queues that overflow their slice", "bool"),
        Option("pushback", False, "push back sources whose traffic finds its calendar queue full", "bool"),
        Option("flow_pausing", False, "hold elephants at the source until their circuit is up", "bool"),
        Option("elephant_threshold", "100KB", "PIAS flow-aging threshold for flow pausing", "size"),
        Option("queue_estimation", "exact", "calendar-queue occupancy for detection: exact, or OpenOptics' "
               "estimate (eqo)", "choice", ("exact", "eqo")),
        Option("eqo_interval", "50ns", "EQO update interval", "time"),
        Option("buffer_offload", 0, "calendar queues kept per ToR port; packets departing later wait "
               "on hosts below the ToR (0 = off; needs --hosts-per-node)", "int"),
    ]


def apply_services(net: Any, o: dict[str, Any]) -> None:
    """Switch the services chosen in ``o`` on ``net``."""
    net.services(congestion_detection=o["congestion_detection"], pushback=o["pushback"],
                 flow_pausing=o["flow_pausing"], elephant_threshold=o["elephant_threshold"],
                 queue_estimation=o["queue_estimation"],
                 eqo_interval=o["eqo_interval"] if o["queue_estimation"] == "eqo" else None,
                 buffer_offload=o["buffer_offload"])


def config_kwargs(o: dict[str, Any], *names: str) -> dict[str, Any]:
    """The Config fields among the options (None means: keep the Config default)."""
    keys = ["nodes", "uplinks", "link_rate", "propagation", "host_rate", "hosts_per_node",
            "host_link_rate", "buffer", "mtu", *names]
    return {k: o[k] for k in keys if k in o and o[k] is not None}


def _public(arch: Arch) -> Callable[..., Any]:
    def public(**kwargs: Any) -> Any:
        return arch.make(**kwargs)

    public.__name__ = arch.name
    public.__qualname__ = arch.name
    public.__doc__ = f"{arch.description}\n\nOptions: " + ", ".join(
        f"{o.name}={o.default!r}" for o in arch.options)
    return public


from . import clos, negotiator, opera, rotornet, shale, sirius  # noqa: E402,F401  (registration side effects)

# ``od.arch.<name>`` is the builder, not the module that defines it
for _name, _arch in REGISTRY.items():
    globals()[_name] = _public(_arch)
