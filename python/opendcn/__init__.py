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

from . import models, workload
from ._core import __version__ as engine_version
from .errors import BufferWarning, ConfigError, DeadlockError, InvariantError
from .experiments import analysis
from .fabrics import routing, topology
from .network import Circuit, Config, Entry, FixedFabric, Hop, Network, NetworkBase, Path, Result
from . import arch  # noqa: E402  (architectures import the names above)
from .experiments.db import results  # noqa: E402
from .experiments.sweeps import sweep  # noqa: E402
from .network import flowsim  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "BufferWarning", "Circuit", "Config", "ConfigError", "DeadlockError", "Entry", "FixedFabric", "Hop", "InvariantError", "Network",
    "NetworkBase", "Path", "results", "sweep",
    "Result", "analysis", "arch", "engine_version", "flowsim", "models", "routing", "topology", "workload",
]
