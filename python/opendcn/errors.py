"""The one named error of opendcn's public surface.

Every bad input (config field, circuit, time-flow entry, workload file, CLI option)
raises :class:`ConfigError` with a message that names the offending field and value.
The CLI turns it into exit code 2.
"""

from __future__ import annotations


class _Missing:
    """The value of a flag given without one: there is nothing to show."""

    def __repr__(self) -> str:
        return "MISSING"


#: ``ConfigError(field, MISSING, reason)``: the user gave no value at all (a bare flag);
#: the message then shows none. ``None`` is a value like any other and is shown.
MISSING = _Missing()


class ConfigError(ValueError):
    """Invalid user input. ``field`` names what was wrong, ``value`` what was given."""

    def __init__(self, field: str, value: object, reason: str):
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{field}: {reason}" if value is MISSING else f"{field}: {reason} (got {value!r})")


class InvariantError(RuntimeError):
    """A run broke an engine invariant (conservation, collisions, guardband).

    This is a bug in an architecture or in the engine, never a user error.
    """


class DeadlockError(InvariantError):
    """A lossless (credit-based) network deadlocked: ports wait for each other's credit
    in a cycle, which the message lists. A property of the design (routing without enough
    virtual channels), reported instead of letting the run hang."""


class RouteWarning(UserWarning):
    """A configuration whose routes leave some source–destination pairs of the run's
    traffic without a route: their packets wait at the source and are never delivered.
    Raised as a warning when the run starts (before any packet moves), with the counts;
    the CLI prints it."""


class BufferWarning(UserWarning):
    """A configuration whose port buffers cannot hold what one slice of a circuit sends:
    packets that wait for a later slice will be dropped under load. Raised as a warning at
    deploy time (``Network.deploy_topo``), with the numbers; the CLI prints it."""


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (``MemAvailable`` of
    ``/proc/meminfo``), or None where the system does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_memory(field: str, value: object, need: int, what: str) -> None:
    """Refuse, before allocating, a structure of about ``need`` bytes that the machine's
    available memory cannot hold: a ConfigError naming ``field`` and ``value`` with the
    estimate (``what`` says what would be built)."""
    avail = available_memory()
    if avail is not None and need > avail:
        raise ConfigError(field, value, f"{what} needs about {need / 1e9:.1f} GB, more than the "
                                        f"{avail / 1e9:.1f} GB of memory available")
