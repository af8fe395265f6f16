"""opendcn: an open research framework for optical and reconfigurable datacenter networks.

>>> import opendcn as od
>>> net = od.Network(od.Config(nodes=4, uplinks=1, slice="10us"))
>>> net.deploy_topo(od.topology.round_robin(net.config, dimension=1))
>>> net.deploy_routing(od.routing.direct(net.circuits))
>>> len(net.circuits)                 # 3 slices x 2 circuits
6
>>> r = net.run(od.workload.poisson("hadoop", 0.3, "uniform"), duration="100us", seed=1)
>>> b = r.summary["bytes"]
>>> b["offered"] == b["delivered"] + b["dropped"] + b["in_flight"] and r.summary["flows"]["completed"] > 0
True
"""

from typing import Any

from . import workload
from ._core import __version__ as engine_version
from .errors import BufferWarning, ConfigError, DeadlockError, InvariantError, RouteWarning
from .fabrics import routing, topology
from .network import Circuit, Config, Entry, FixedFabric, Hop, Network, NetworkBase, Path, Result
from . import arch  # noqa: E402  (architectures import the names above)

__version__ = "0.1.0"

#: names loaded when first used (each pulls in scipy, DuckDB or the sweep executors: a
#: command line that needs none of them starts faster)
_LAZY = {"models": ("opendcn.models", None), "analysis": ("opendcn.experiments.analysis", None),
         "flowsim": ("opendcn.network.flowsim", None), "results": ("opendcn.experiments.db", "results"),
         "sweep": ("opendcn.experiments.sweeps", "sweep")}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = importlib.import_module(module)
        value = getattr(value, attr) if attr else value
        globals()[name] = value
        return value
    raise AttributeError(f"module 'opendcn' has no attribute {name!r}")

__all__ = [
    "BufferWarning", "RouteWarning", "Circuit", "Config", "ConfigError", "DeadlockError", "Entry", "FixedFabric", "Hop", "InvariantError", "Network",
    "NetworkBase", "Path", "results", "sweep",
    "Result", "analysis", "arch", "engine_version", "flowsim", "models", "routing", "topology", "workload",
]
