"""Analytic models of the seed papers (``opendcn models NAME`` prints their tables).

- :mod:`opendcn.models.hpc` — scalability, power, cost and controller compute time of
  rack- and pod-reconfigurable HPC networks (Teh et al., JOCN 2022).
"""

from . import hpc

__all__ = ["hpc"]
