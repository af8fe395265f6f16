"""OpenOptics' Python API on opendcn's packet engine.

Scripts written for OpenOptics (NSDI'26) run with one change, the import::

    from opendcn.openoptics import Toolbox, OpticalTopo, OpticalRouting

Every backend name (``"Mininet"``, ``"ns3"``, ``"Tofino"``) runs on opendcn's engine, in
simulated time. What the layer follows (OpenOptics' semantics where they differ from the
native ``opendcn`` API), what ``start()`` does, and which upstream examples run with what
differences are in ``docs/openoptics.md``.
"""

from . import DeviceManager, OpticalCLI, OpticalRouting, OpticalTopo, TimeFlowTable, Toolbox, dashboard, utils

__all__ = ["DeviceManager", "OpticalCLI", "OpticalRouting", "OpticalTopo", "TimeFlowTable", "Toolbox", "dashboard",
           "utils"]
