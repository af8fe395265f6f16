"""A workload from the run options of ``opendcn run`` (and of a sweep point): the shipped
CDF or file, the load, the pattern and its parameters, a rank trace or a flows file.

The command line and the sweep runner both build their workloads here, so a point of a
sweep runs exactly the workload ``opendcn run`` would with the same options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..errors import ConfigError
from . import generators as wl

__all__ = ["make_workload"]


def make_workload(workload: str, load: float, pattern: str, flows_file: Optional[Path],
                  incast_degree: int, incast_size: str, flow_size: Optional[str],
                  active: float = 0.5, fold_ranks: bool = False,
                  coflow_interval: Optional[str] = None) -> tuple[Any, str]:
    """The workload these run options describe and a one-line description of it (as
    ``opendcn run`` prints it); a bad combination raises ConfigError naming the option."""
    if not pattern.startswith("trace:"):
        if coflow_interval is not None:
            raise ConfigError("coflow_interval", coflow_interval, "co-flow barriers apply to rank traces "
                              "(--pattern trace:NAME)")
        if fold_ranks:
            raise ConfigError("fold_ranks", True, "folding applies to rank traces (--pattern trace:NAME)")
    if flows_file is not None:
        return wl.from_file(flows_file), f"flows from {flows_file}"
    if pattern.startswith("trace:"):
        name = pattern[len("trace:"):]
        w = wl.rank_trace(name, load, None if flow_size else workload, flow_size=flow_size, fold=fold_ranks,
                          coflow_interval=coflow_interval)
        every = ("of one flow per endpoint" if str(coflow_interval).strip().lower() == "auto"
                 else f"every {coflow_interval}")
        extra = (", folded" if fold_ranks else "") + (f", co-flows {every}" if coflow_interval else "")
        return w, f"rank trace {name}, {flow_size or workload}, load {load}{extra}"
    if pattern == "incast":
        w = wl.poisson(None, load, "incast", incast_degree=incast_degree, incast_size=incast_size)
        return w, f"incast degree {incast_degree} x {incast_size}, load {load}"
    if pattern == "all-to-all":
        if flow_size is None:
            raise ConfigError("--flow-size", None, "all-to-all needs --flow-size")
        return wl.poisson(None, load, "all-to-all", flow_size=flow_size), f"all-to-all {flow_size}"
    kw: dict[str, Any] = {"flow_size": flow_size} if flow_size else {}
    if pattern == "skewed":
        kw["active"] = active
    w = wl.poisson(None if flow_size else workload, load, pattern, **kw)
    extra = f", active {active}" if pattern == "skewed" else ""
    return w, f"{flow_size or workload}, {pattern}{extra}, load {load}"
