"""Parsing of times, rates and sizes with units; the only place that converts them.

Inside opendcn time is an integer number of picoseconds, rates are bits per second and
sizes are bytes (KB = 1000 B, KiB = 1024 B).

>>> parse_time("3.66us")
3660000
>>> parse_rate("100Gbps")
100000000000
>>> parse_size("1.5KB")
1500
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from .errors import ConfigError

_TIME = {"ps": 1, "ns": 10**3, "us": 10**6, "µs": 10**6, "ms": 10**9, "s": 10**12}
#: rates in bits per second, units case-exact (a lower-case b is a bit)
_RATE = {"bps": 1, "kbps": 10**3, "Kbps": 10**3, "Mbps": 10**6, "Gbps": 10**9, "Tbps": 10**12}
#: sizes in bytes, units case-exact (an upper-case B is a byte; KB = kB = 1000 B)
_SIZE = {"B": 1, "kB": 1000, "KB": 1000, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
_PREFIX = {"": "", "k": "k", "K": "K", "m": "M", "M": "M", "g": "G", "G": "G", "t": "T", "T": "T"}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ]+)\s*$")


def _parse(value: object, table: dict[str, int], field: str, kind: str,
           case_insensitive: bool) -> int:
    if isinstance(value, bool):
        raise ConfigError(field, value, f"expected a {kind} with a unit")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(field, value, f"{kind} must be non-negative")
        return value
    if not isinstance(value, str):
        raise ConfigError(field, value, f"expected a {kind} with a unit such as {next(iter(table))!r}")
    m = _NUM.match(value)
    if not m:
        raise ConfigError(field, value,
                          f"expected a {kind}: a number and one of {', '.join(table)}")
    unit = m.group(2).lower() if case_insensitive else m.group(2)
    if unit not in table:
        hint = _suggest(m.group(1), m.group(2), kind)
        raise ConfigError(field, value, f"unknown unit {m.group(2)!r}; "
                          + (hint if hint else f"use one of {', '.join(table)}"))
    try:
        exact = Decimal(m.group(1)) * table[unit]
    except InvalidOperation as e:  # pragma: no cover - regex guards this
        raise ConfigError(field, value, f"not a number: {e}") from None
    if exact != exact.to_integral_value():
        raise ConfigError(field, value, f"{kind} is not a whole number of base units")
    return int(exact)


def _suggest(num: str, unit: str, kind: str) -> str:
    """What a unit that is not one of the kind's probably meant, with the value written in
    one that is ("" when nothing close)."""
    if kind == "time":
        low = unit.lower()
        return f"did you mean '{num}{low}'?" if low in _TIME else ""
    m = re.fullmatch(r"([kKmMgGtT]?)([bB])(ps|/s)?", unit) if kind == "rate" else \
        re.fullmatch(r"([kKmMgGtT]?)([bB])", unit)
    mi = re.fullmatch(r"([kKmMgG])i([bB])", unit)
    if kind == "size" and mi:
        return f"did you mean '{num}{mi.group(1).upper()}iB'? (sizes are in bytes)"
    if m is None:
        return ""
    prefix, b = _PREFIX[m.group(1)], m.group(2)
    if kind == "rate":
        if b == "B":
            bits = Decimal(num) * 8
            return (f"{unit} would be bytes per second; rates are in bits per second: did you mean "
                    f"'{bits.normalize():f}{prefix}bps' ({num} {prefix}B/s)?")
        return f"did you mean '{num}{prefix}bps'?"
    if b == "b":
        nbytes = Decimal(num) / 8
        return (f"{unit} would be bits; sizes are in bytes: did you mean '{num}{prefix}B', or "
                f"'{nbytes.normalize():f}{prefix}B' ({num} {prefix}bit)?")
    return f"did you mean '{num}{prefix}B'?"


def parse_time(value: object, field: str = "time") -> int:
    """A time (``"2us"``; a bare int is picoseconds) → integer picoseconds."""
    return _parse(value, _TIME, field, "time", case_insensitive=False)


def parse_rate(value: object, field: str = "rate") -> int:
    """A rate (``"100Gbps"``; a bare int is bit/s) → integer bits per second."""
    return _parse(value, _RATE, field, "rate", case_insensitive=False)


def parse_size(value: object, field: str = "size") -> int:
    """A size (``"1.5KB"``; a bare int is bytes) → integer bytes (KB = 1000 B)."""
    return _parse(value, _SIZE, field, "size", case_insensitive=False)


def tx_time_ps(size_bytes: int, rate_bps: int) -> int:
    """Serialization time of ``size_bytes`` at ``rate_bps``, rounded up to 1 ps."""
    return -(-size_bytes * 8 * 10**12 // rate_bps)


def fmt_time(ps: int) -> str:
    """Human-readable time with the largest unit that keeps the value ≥ 1."""
    for unit, scale in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if ps >= scale:
            return f"{ps / scale:g}{unit}"
    return f"{ps}ps"
