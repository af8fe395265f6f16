"""The architecture registry: every design opendcn runs, as a short script.

Each architecture module registers a builder with :func:`register`; ``opendcn run ARCH``
looks it up here and ``od.arch.<name>(**options)`` builds the same ready network from
Python, with the option names of the CLI (``--link-rate`` ↔ ``link_rate``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from ..errors import ConfigError
from .options import ArchOptions, FabricOptions, Option, ServiceOptions, TransportOptions, user_value

__all__ = ["Arch", "REGISTRY", "register", "get", "ArchOptions", "FabricOptions", "ServiceOptions",
           "TransportOptions", "Option"]

Opts = TypeVar("Opts", bound=ArchOptions)


@dataclass(frozen=True)
class Arch(Generic[Opts]):
    """A registered architecture: its options model and the builder that takes them."""

    name: str
    description: str
    build: Callable[[Opts], Any]
    model: type[Opts]
    #: options of the smallest meaningful instance (used by tests and examples)
    tiny: dict[str, Any] = field(default_factory=lambda: {"nodes": 8})

    @property
    def options(self) -> tuple[Option, ...]:
        """The options as help, listings and docs show them (from the model)."""
        return self.model.options()

    def parse(self, **kwargs: Any) -> Opts:
        """Check and convert options (ConfigError naming the flag and the value given)."""
        for k in kwargs:
            if k not in self.model.model_fields:
                raise ConfigError("--" + k.replace("_", "-"), kwargs[k],
                                  f"unknown option of {self.name}; known: "
                                  + ", ".join(o.flag for o in self.options))
        return self.model(**kwargs)

    def make(self, **kwargs: Any) -> Any:
        """Build a ready network from options (unknown or bad options raise ConfigError)."""
        o = self.parse(**kwargs)
        try:
            return self.build(o)
        except ConfigError as e:
            raise user_value(e, self.model, kwargs) from None


REGISTRY: dict[str, Arch[Any]] = {}


def register(name: str, description: str, model: type[Opts],
             tiny: dict[str, Any] | None = None) -> Callable[[Callable[[Opts], Any]], Callable[[Opts], Any]]:
    """Decorator: add a builder (taking its options model) to the registry and expose it
    as ``od.arch.<name>``; ``tiny`` gives the options of its smallest meaningful instance
    (default 8 nodes)."""

    def deco(fn: Callable[[Opts], Any]) -> Callable[[Opts], Any]:
        model.arch_name = name
        REGISTRY[name] = Arch(name, description, fn, model, dict(tiny or {"nodes": 8}))
        return fn

    return deco


def get(name: str) -> Arch[Any]:
    """The registered architecture ``name`` (ConfigError listing the known ones)."""
    if name not in REGISTRY:
        raise ConfigError("ARCH", name, f"unknown architecture; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def _public(arch: Arch[Any]) -> Callable[..., Any]:
    """``od.arch.<name>``: keyword arguments and their defaults from the options model."""
    def public(**kwargs: Any) -> Any:
        return arch.make(**kwargs)

    public.__name__ = arch.name
    public.__qualname__ = arch.name
    params = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
              for o in arch.options]
    public.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    lines = [arch.description, "", "Options (as ``opendcn run " + arch.name + " --help`` lists them):"]
    for o in arch.options:
        extra = f" ({', '.join(o.choices)})" if o.choices else ""
        lines.append(f"    {o.name} ({o.kind}{extra}, default {o.default!r}): {o.help}")
    public.__doc__ = "\n".join(lines)
    return public


from . import clos, duo, hpc, negotiator, opera, rotornet, shale, sirius, ta  # noqa: E402,F401  (registration side effects)

# ``od.arch.<name>`` is the builder, not the module that defines it
for _name, _arch in REGISTRY.items():
    globals()[_name] = _public(_arch)
