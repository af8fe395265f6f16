"""Workloads: which flows enter the network, when, between which endpoints, how big.

The generators, flow-size distributions and rank traces are in :mod:`.generators` (see its
docstring for what is modeled); :mod:`.run_options` builds a workload from the run
options of ``opendcn run`` and of sweep points. ``od.workload.<name>`` is the same object
as ``opendcn.workload.generators.<name>``.
"""

from .generators import (AUTO_COFLOW, CDF, DATA_DIR, HPC_DIR, MAX_LOAD, PATTERNS, RACK_PATTERNS, RANK_TRACES,
                         READINGS, FlowArrays, Workload, check_dependencies, fanout, flows, flows_from_arrays, from_file,
                         get_cdf, list_workloads, mix, poisson, rack_matrix, rank_trace, request_response, ring_allreduce)

__all__ = ["AUTO_COFLOW", "CDF", "DATA_DIR", "HPC_DIR", "MAX_LOAD", "PATTERNS", "RACK_PATTERNS", "RANK_TRACES",
           "READINGS", "FlowArrays", "Workload", "check_dependencies", "fanout", "flows", "flows_from_arrays",
           "from_file", "get_cdf", "list_workloads", "mix", "poisson", "rack_matrix", "rank_trace", "request_response", "ring_allreduce"]
