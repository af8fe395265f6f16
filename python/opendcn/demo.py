"""``make demo``: four designs on one workload, a table and a report.

RotorNet with VLB, RotorNet with direct circuits, a non-blocking Clos and Opera, all with
the same ToRs, the same host-side bandwidth R per ToR and the same Hadoop workload at the
same load (same seed), so their FCTs and goodput compare directly. RotorNet and Clos send
from their ToRs (the same flows); Opera's flows run between its hosts, ``uplinks`` below
each ToR at the link rate, so R is the same. Each runs the transport its design uses:
RotorNet holds data at the sources until the schedule admits it (back-pressured
injection, RotorLB's host buffering), Clos runs DCTCP, Opera NDP below 15 MB and RotorLB
above; none loses payload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import arch, workload
from .experiments.analysis import compare_table, format_table
from .experiments.report import write_report


#: result subfolder of the runs without a routing option
_SUB = {"clos": "ecmp", "opera": "ndp-rotorlb"}


def run_demo(out_dir: Path, *, duration: str = "2ms", nodes: int = 32, load: float = 0.3,
             seed: int = 1, console: Any = None) -> Path:
    uplinks = 4
    runs: list[tuple[str, str, dict[str, Any]]] = [
        ("RotorNet (VLB)", "rotornet", {"routing": "vlb"}),
        ("RotorNet (direct)", "rotornet", {"routing": "direct"}),
        ("Clos (ECMP, DCTCP)", "clos", {"transport": "dctcp"}),
        ("Opera (NDP + RotorLB)", "opera", {"hosts_per_tor": uplinks, "link_rate": "100Gbps"}),
    ]
    results = []
    wl = workload.poisson("hadoop", load=load, pattern="uniform")
    desc = f"Hadoop (Meta, Roy et al. 2015), uniform, load {load}, {nodes} nodes x {uplinks} x 100Gbps, {duration}, seed {seed}"
    wl.description = desc
    for label, name, opts in runs:
        net = arch.get(name).make(nodes=nodes, uplinks=uplinks, **opts)
        # network-wide samples (delivered payload per interval) for the goodput-over-time plot
        net.net_series = True
        if console is not None:
            console.print(f"running {label} ...")
        r = net.run(wl, duration=duration, seed=seed, out=Path(out_dir) / name / opts.get("routing", _SUB.get(name, "default")))
        r.label = label
        r.summary["label"] = label
        results.append(r)
    rows = compare_table(results)
    if console is not None:
        # plain text: every cell whole, whatever the terminal width
        print(desc)
        print(format_table(rows), flush=True)
    path = write_report(results, out_dir, title="opendcn demo: RotorNet, Clos and Opera", workload_desc=desc)
    if console is not None:
        console.print(f"report: {path}")
        console.print("next: a grid of runs (architectures x loads x seeds) with a results database and a report:\n"
                      "  opendcn sweep examples/sweep_small.toml --out results/sweep\n"
                      "  opendcn query results/sweep \"select arch, load, avg(goodput), avg(p99_mice_us) "
                      "from runs group by all order by all\"\n"
                      "  opendcn report results/sweep", highlight=False)
    return path
