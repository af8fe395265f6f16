"""The OpenOptics-style network API: a :class:`Network` on a :class:`Config`, the circuits
and time-flow entries it deploys, and what it runs them on.

- :mod:`.config` — the hardware (OpenOptics' static config, validated);
- :mod:`.timeflow` — circuits, paths and time-flow table entries;
- :mod:`.network` — ``Network`` (deploy circuits and routes, run a workload) and its
  :class:`Result`;
- :mod:`.transport` — the end-to-end transports, chosen per flow by a rule;
- :mod:`.slotted` — fabrics whose control plane runs in the slotted cell engine;
- :mod:`.flowsim` — the flow-level mode (max-min fair rates) for second-long runs.
"""

from .config import Config
from .network import FixedFabric, Network, NetworkBase, Result
from .timeflow import Circuit, Entry, Hop, Path

__all__ = ["Circuit", "Config", "Entry", "FixedFabric", "Hop", "Network", "NetworkBase", "Path", "Result"]
