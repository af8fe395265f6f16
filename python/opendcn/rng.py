"""Named random streams derived from one master seed.

Every random decision in opendcn draws from a *named stream*: an independent
``numpy.random.Generator`` (PCG64) seeded by ``SeedSequence([seed, crc32(name)])``.
Two consequences:

* results depend only on the master seed and the stream names, never on process,
  platform or on the order in which streams are created;
* adding, removing or reordering draws on one stream (say ``"traffic.sizes"``) never
  changes the numbers another stream (say ``"traffic.arrivals"``) produces.

>>> a = stream(1, "traffic.sizes").random(3)
>>> b = stream(1, "traffic.sizes").random(3)
>>> bool((a == b).all())
True
"""

from __future__ import annotations

import zlib

import numpy as np

from .errors import ConfigError


def stream_key(name: str) -> int:
    """The 32-bit key (CRC-32 of the UTF-8 name) that identifies stream ``name``."""
    return zlib.crc32(name.encode("utf-8"))


def stream(seed: int, name: str) -> np.random.Generator:
    """An independent PCG64 generator for stream ``name`` under master ``seed``.

    ``seed`` must be a non-negative integer (any size); ``name`` is any string, e.g.
    ``"traffic.arrivals"``. The same ``(seed, name)`` always yields the same sequence.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError("seed", seed, "seed must be a non-negative integer")
    if not isinstance(name, str) or not name:
        raise ConfigError("stream", name, "stream name must be a non-empty string")
    ss = np.random.SeedSequence([int(seed), stream_key(name)])
    return np.random.Generator(np.random.PCG64(ss))
