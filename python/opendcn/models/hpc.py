"""Analytic models of Teh et al., "Performance trade-offs in reconfigurable networks for
HPC" (JOCN 14(6) 2022), §3–§5: the Moore bound, Table 1 (OCS radix, switch count,
endpoints and diameter as functions of the switch radix ``k``), Table 2 (the minimum OCS
radix at three system sizes), the power and cost models (§5) and the controller
compute-time benchmark (§4.C, Fig. 7). ``opendcn models hpc`` prints them.

Where the paper leaves a formula open the choice is stated here and in
``docs/models/hpc.md``.

>>> moore_bound(3, 2)          # the Petersen graph meets it
10
>>> row = table1(32)["PRN-2L"]
>>> row.ocs_radix, row.switches, row.endpoints, row.diameter
(257, 8224, 65792, 3)
>>> table2()["TRN-3D"]
(8, 19, 40)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError
from ..fabrics.hpc import check_radix, max_weight_matching, mesh_pod_size, prn_lp, stable_matching, trn3d_dims
from ..rng import stream

__all__ = ["moore_bound", "Row", "table1", "table1_exact", "SCALES", "table2", "PRICES", "POWER", "inventory",
           "power_w", "cost_usd", "scales_table", "controller_benchmark", "ARCHS"]

#: Table 1's columns
ARCHS = ("PRN-2L", "PRN-M", "TRN-Flat", "TRN-3D", "FT3", "DF", "DF+", "EXP")


def moore_bound(k: int, d: int) -> int:
    """Most nodes a graph of maximum degree ``k`` and diameter ``d`` can have:
    ``1 + k·((k−1)^d − 1)/(k − 2)`` for ``k > 2`` (``2d + 1`` for ``k = 2``)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ConfigError("k", k, "the degree must be an integer >= 2")
    if isinstance(d, bool) or not isinstance(d, int) or d < 0:
        raise ConfigError("d", d, "the diameter must be an integer >= 0")
    if k == 2:
        return 2 * d + 1
    return 1 + k * ((k - 1) ** d - 1) // (k - 2)


@dataclass(frozen=True)
class Row:
    """One column of Table 1: OCS radix (0: none), packet switches, endpoints, diameter
    (switch hops between two ToRs). Values are exact fractions where the printed formula
    is not an integer (TRN-3D's ``k/6 + 1``)."""

    ocs_radix: Fraction | int
    switches: Fraction | int
    endpoints: Fraction | int
    diameter: int


def _num(x: Fraction) -> Fraction | int:
    return int(x) if x.denominator == 1 else x


def table1(k: int, fat_tree_levels: int = 3) -> dict[str, Row]:
    """Table 1 as printed, for switch radix ``k`` (``k/2`` ports of a ToR face hosts).

    Decisions where the printed row is inconsistent: PRN-M's endpoints are ``k/2`` per
    switch (every PRN-M switch is a ToR), i.e. ``(k/2)·[(k/4+1)³ − k²/16 − k/4]``; the
    extracted ``(k²/2)[¼(k/4+1)³ − …]`` contradicts the row's own switch count. TRN-3D
    keeps the printed ``k/6 + 1`` (a fraction unless 6 divides k); :func:`table1_exact`
    gives the integer construction."""
    k = check_radix(k, "k")
    q = Fraction(k, 2)
    n = fat_tree_levels
    out = {
        "PRN-2L": Row(q * q + 1, Fraction(k) ** 3 / 4 + k, q ** 4 + q ** 2, 3),
        "PRN-M": Row(Fraction(k * (k + 4), 16) + 1, (Fraction(k, 4) + 1) ** 3 - Fraction(k * k, 16) - Fraction(k, 4),
                     q * ((Fraction(k, 4) + 1) ** 3 - Fraction(k * k, 16) - Fraction(k, 4)), 3),
        "TRN-Flat": Row(q * q * (q + 1), q * q * (q + 1), q ** 3 * (q + 1), 3),
        "TRN-3D": Row(Fraction(k, 6) + 1, (Fraction(k, 6) + 1) ** 3, q * (Fraction(k, 6) + 1) ** 3, 3),
        f"FT{n}": Row(0, (2 * n - 1) * q ** (n - 1), 2 * q ** n, 2 * (n - 1)),
        "DF": Row(0, q * q + q, q ** 3 + q * q, 3),
        "DF+": Row(0, Fraction(k) ** 3 / 4 + k, q ** 4 + q ** 2, 3),
        "EXP": Row(0, q ** 3 + q ** 2 + q + 1, q ** 4 + q ** 3 + q ** 2 + q, 3),
    }
    return {a: Row(_num(Fraction(r.ocs_radix)), _num(Fraction(r.switches)), _num(Fraction(r.endpoints)), r.diameter)
            for a, r in out.items()}


def table1_exact(k: int) -> dict[str, Row]:
    """Integer versions of the rows whose printed formula is fractional or a bound:
    TRN-3D with the ``k/2`` uplinks split over three dimensions as evenly as possible
    (OCS radix = the longest line) and PRN-M with its integer pod shape; the others as
    :func:`table1` (with ``k`` divisible by 4 PRN-M agrees exactly)."""
    out = dict(table1(k))
    X, Y, Z = trn3d_dims(k)
    out["TRN-3D"] = Row(max(X, Y, Z), X * Y * Z, (k // 2) * X * Y * Z, 3)
    a, h = mesh_pod_size(k)
    pods = a * h + 1
    out["PRN-M"] = Row(pods, pods * a, pods * a * (k // 2), 3)
    return out


#: system sizes of Table 2 / §5 (servers): small ≈ 8k, medium, large ≈ 1M. The text
#: calls medium "≈ 50k", but Table 2's medium radices (391 pods of 256 servers, 6250 ToRs
#: of 16) are those of 100 000 servers, which is what is used here.
SCALES = {"small": 8192, "medium": 100_000, "large": 1_000_000}


def table2(k: int = 32, scales: dict[str, int] | None = None) -> dict[str, tuple[int, ...]]:
    """Minimum OCS radix per design at each scale (Table 2), EPS radix ``k``: the number
    of units an OCS must connect — ToRs for TRN-Flat, pods for PRN-2L (``(k/2)²`` servers)
    and PRN-M (``a·k/2``), ToRs per dimension (cube root of the ToRs) for TRN-3D."""
    k = check_radix(k, "k")
    sc = SCALES if scales is None else scales
    h = k // 2
    a, _ = mesh_pod_size(k)
    out = {}
    for name, unit in (("TRN-Flat", h), ("PRN-2L", h * h), ("PRN-M", a * h)):
        out[name] = tuple(math.ceil(n / unit) for n in sc.values())
    out["TRN-3D"] = tuple(_cube_root_ceil(math.ceil(n / h)) for n in sc.values())
    return out


def _cube_root_ceil(n: int) -> int:
    r = round(n ** (1 / 3))
    while r ** 3 < n:
        r += 1
    while r > 1 and (r - 1) ** 3 >= n:
        r -= 1
    return r


#: §5.B prices (USD): a 32-port 100 GbE packet switch (Mellanox SN2700), a 100 Gb/s
#: transceiver (EDR QSFP28)
PRICES = {"eps": 17_285.0, "transceiver": 555.0}
#: §5.A power (W): a 32-port packet switch, a 320-port MEMS OCS, a 100 Gb/s transceiver
POWER = {"eps": 136.0, "ocs": 90.0, "ocs_ports": 320, "transceiver": 2.2}


def inventory(design: str, servers: int, k: int = 32) -> dict[str, int]:
    """What a design needs for ``servers`` servers with radix-``k`` switches and ``k/2``
    servers per ToR: packet switches, transceivers and OCS ports.

    Decisions: one transceiver per switch port on a switch-to-switch or switch-to-OCS link
    (server links are copper, without transceivers); TRN (Flat or 3-D) = one switch per
    rack with its ``k/2`` uplinks on OCS ports; PRN-2L / DF+ = pods of ``k/2`` racks and
    ``k/2`` spines (leaf–spine links plus the spines' ``k/2`` global ports, on OCS ports
    for PRN); PRN-M = pods of ``a`` meshed ToRs with ``h`` OCS ports each; EXP = one
    switch per rack with ``k/2`` static links; FT = the smallest non-blocking fat tree
    (``n`` levels, ``(2n−1)·servers/k`` switches, ``n − 1`` layers of ``servers`` links)."""
    k = check_radix(k, "k")
    h = k // 2
    tors = math.ceil(servers / h)
    if design in ("TRN-Flat", "TRN-3D"):
        return {"eps": tors, "transceivers": tors * h, "ocs_ports": tors * h}
    if design in ("PRN-2L", "DF+"):
        pods = math.ceil(tors / h)
        spines = pods * h
        glob = spines * h
        return {"eps": pods * h + spines, "transceivers": 2 * pods * h * h + glob,
                "ocs_ports": glob if design == "PRN-2L" else 0}
    if design == "PRN-M":
        a, hm = mesh_pod_size(k)
        pods = math.ceil(tors / a)
        ocs = pods * a * hm
        return {"eps": pods * a, "transceivers": pods * a * (a - 1) + ocs, "ocs_ports": ocs}
    if design == "EXP":
        return {"eps": tors, "transceivers": tors * h, "ocs_ports": 0}
    if design == "FT":
        n = 2
        while 2 * h ** n < servers:
            n += 1
        return {"eps": math.ceil((2 * n - 1) * servers / k), "transceivers": 2 * (n - 1) * servers, "ocs_ports": 0}
    raise ConfigError("design", design, "expected one of TRN-Flat, TRN-3D, PRN-2L, PRN-M, DF+, EXP, FT")


def power_w(inv: dict[str, int]) -> float:
    """Watts: switches, transceivers and the 320-port OCS units the OCS ports fill."""
    units = math.ceil(inv["ocs_ports"] / POWER["ocs_ports"])
    return inv["eps"] * POWER["eps"] + inv["transceivers"] * POWER["transceiver"] + units * POWER["ocs"]


def cost_usd(inv: dict[str, int], delta: float = 1.0, k: int = 32) -> float:
    """Dollars: switches, transceivers and OCS ports at ``delta`` × the mean electrical
    port cost. Decision: the mean electrical port is the switch price over its ``k``
    ports (transceiver not included: it is counted on its own)."""
    if not isinstance(delta, (int, float)) or isinstance(delta, bool) or delta < 0:
        raise ConfigError("delta", delta, "expected a number >= 0")
    port = PRICES["eps"] / k
    return inv["eps"] * PRICES["eps"] + inv["transceivers"] * PRICES["transceiver"] + inv["ocs_ports"] * delta * port


def scales_table(k: int = 32, deltas: Sequence[float] = (0.5, 1.0, 1.5)) -> list[dict[str, Any]]:
    """Power and cost of every design at each scale of :data:`SCALES` (§5)."""
    rows = []
    for scale, n in SCALES.items():
        for design in ("TRN-Flat", "PRN-2L", "PRN-M", "DF+", "EXP", "FT"):
            inv = inventory(design, n, k)
            rows.append({"scale": scale, "servers": n, "design": design, **inv, "power_kw": power_w(inv) / 1e3,
                         **{f"cost_musd_d{d:g}": cost_usd(inv, d, k) / 1e6 for d in deltas}})
    return rows


def controller_benchmark(tor_counts: Sequence[int] = (64, 128, 256, 512), pod_counts: Sequence[int] = (4, 8, 16, 32),
                         repeats: int = 5, k: int = 32, seed: int = 1) -> list[dict[str, Any]]:
    """Wall time of the controllers against system size (§4.C, Fig. 7), on random
    traffic matrices (uniform entries, stream ``models.hpc.bench``): TRN's maximum-weight
    matching (scipy's assignment solver) and stable matching (Gale–Shapley) over ``n``
    ToRs of ``k/2`` servers, and PRN's throughput LP (scipy/HiGHS) over ``p`` pods of
    ``(k/2)²`` servers with ``(k/2)²`` uplinks each. One row per (method, size): mean and
    standard deviation of ``repeats`` runs."""
    k = check_radix(k, "k")
    h = k // 2
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ConfigError("repeats", repeats, "expected an integer >= 1")
    rng = stream(seed, "models.hpc.bench")
    rows = []

    def timed(method: str, units: int, servers: int, fn: Any, size: int) -> None:
        ts = []
        for _ in range(repeats):
            tm = rng.random((size, size))
            t0 = time.perf_counter()
            fn(tm)
            ts.append(time.perf_counter() - t0)
        rows.append({"method": method, "units": units, "servers": servers,
                     "mean_s": float(np.mean(ts)), "std_s": float(np.std(ts))})

    for n in tor_counts:
        timed("max-weight matching (TRN)", n, n * h, max_weight_matching, n)
        timed("stable matching (TRN)", n, n * h, stable_matching, n)
    for p in pod_counts:
        if p - 1 > h * h:
            raise ConfigError("pod_counts", p, f"at most (k/2)^2 + 1 = {h * h + 1} pods")
        timed("throughput LP (PRN)", p, p * h * h, lambda tm: prn_lp(tm, h * h), p)
    return rows
