"""Types of the compiled engine module ``opendcn._core`` (``crates/opendcn-py``).

Every simulator is built from a spec dict (scalars, strings and 1-D ``int64`` numpy
columns, as the Python side assembles them) and returns its results as a dict from
``output()``. Times are integer picoseconds. A spec (or argument) the engine cannot run
raises :class:`EngineSpecError` with ``args == (field, value, reason)``, from every
simulator and function here; an engine bug raises :class:`EngineInternalError`.
``tests/test_stubs.py`` checks this file against the compiled module with
``mypy.stubtest`` and checks the return types on live objects.
"""

from typing import Any, final

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "EngineInternalError",
    "EngineSpecError",
    "NegotiatorSim",
    "ShaleSimulator",
    "Simulator",
    "SiriusSim",
    "__version__",
    "DROP_REASONS",
    "coo_to_csr",
    "flow_rates",
    "negotiator_match",
    "rotor_fabric",
    "shale_peers",
    "state_graph",
    "state_shares",
]

__version__: str
DROP_REASONS: list[str]

class EngineSpecError(ValueError):
    """A simulation spec the engine cannot run: ``args == (field, value, reason)``."""

class EngineInternalError(RuntimeError):
    """An engine bug stopped the simulation."""

@final
class Simulator:
    """The packet engine (time-flow tables, source routes, VLB/direct/HoHo/UCMP/expander
    routers; ideal, TCP, DCTCP, NDP, credit and RotorLB transports)."""

    def __new__(cls, spec: dict[str, Any]) -> Simulator: ...
    @property
    def now(self) -> int:
        """Current simulated time (ps)."""
    @property
    def stopped(self) -> bool:
        """True once the run ended early by its stop condition (``stop_when``)."""
    def run_until(self, t_ps: int) -> bool:
        """Run all events up to and including ``t_ps``, with the GIL released; stops early,
        right after the event, when a control message is delivered (``now`` is then its
        delivery time) and returns True then."""
    def final_sample(self) -> None:
        """Close the time series with a last sample at the current time (end of the run)."""
    def expander_path(self, a: int, b: int, idx: int) -> list[int]:
        """Expander routing: global ports of slice ``idx``'s path from node ``a`` to ``b``."""
    def expander_paths(self, a: int, b: int, idx: int) -> list[list[int]]:
        """Expander routing: global ports of every path slice ``idx`` keeps from ``a`` to ``b``."""
    def output(self) -> dict[str, Any]:
        """Counters, per-flow columns, time series and invariant errors."""
    def candidates(self, node: int, src: int, dst: int, arr: int, hops: int = 0) -> list[tuple[int, int]]:
        """Candidate (global port, departure slice or -1) actions at ``node`` for a packet
        from ``src`` to ``dst`` arriving in slice ``arr`` (-1: any) that has crossed ``hops``
        links (HOHO keeps a path within its hop bound)."""
    def reconfigure(self, at_ps: int, peer: NDArray[np.int64], delay_ps: int, drop_queued: bool = False,
                    drain: bool = False) -> None:
        """Install a new static peer table (-1 = no circuit) at ``at_ps`` (``drain``: drain, switch
        circuits and pending tables at once, undrain)."""
    def fail_ports(self, at_ps: int, ports: NDArray[np.int64], down: bool) -> None:
        """Fail (``down``) or recover the fabric ports ``ports`` (global ids) at ``at_ps``."""
    def fail_log(self) -> list[tuple[int, int, int]]:
        """Port-down intervals so far: (global port, from ps, until ps; 2**64 - 1 while down)."""
    def demand(self) -> list[tuple[int, int, int]]:
        """Remaining bytes per (source node, destination node) of unfinished started flows."""
    def flow_progress(self) -> tuple[NDArray[np.int64], NDArray[np.uint64], NDArray[np.uint64]]:
        """Per flow, now: finish time (-1: not finished), payload bytes sent, bytes delivered."""
    def set_tables(self, spec: dict[str, Any]) -> None:
        """Replace the time-flow tables (``tf_*`` int64 columns; -1 = wildcard)."""
    def set_collect_tm(self, on: bool) -> None:
        """Count injected bytes per (src node, dst node) from now on (or stop)."""
    def take_tm(self) -> list[tuple[int, int, int]]:
        """The traffic matrix since the last call: (src node, dst node, bytes)."""
    def port_bytes(self, port: int) -> int:
        """Bytes queued at a global port right now."""
    def send_message(self, src: int, dst: int, tag: int, size: int, path: list[int] | None = None) -> int:
        """Send a control message of ``size`` wire bytes from node ``src`` to node ``dst`` now,
        routed by the tables (or along ``path``, global ports); returns its id."""
    def take_messages(self) -> list[tuple[int, int, int, int, int, int, int, int]]:
        """Messages delivered since the last call: (id, time ps, src, dst, tag, sent ps, hops,
        link-class bits)."""
    def count_received(self, larger_than: int | None) -> None:
        """Count data packets of more than ``larger_than`` wire bytes reaching their destination
        node, per node pair, from now on (None: stop)."""
    def take_received(self) -> list[tuple[int, int, int, int]]:
        """Received counters since the last call: (src node, dst node, wire bytes, packets)."""

@final
class ShaleSimulator:
    """The Shale engine (cell by cell, timeslot by timeslot)."""

    def __new__(cls, d: dict[str, Any]) -> ShaleSimulator: ...
    @property
    def now(self) -> int: ...
    @property
    def engine(self) -> str:
        """The engine serving this run: ``"window"`` or ``"timeslot"``."""
    @property
    def tau_ps(self) -> int: ...
    @property
    def hop_delay(self) -> int: ...
    def progress(self) -> tuple[int, int, int]:
        """(timeslots run, cell-hops, sum over the timeslots run of the cells alive)."""
    def peer(self, x: int, t: int) -> int:
        """The node ``x`` sends to in timeslot ``t``."""
    def run_until(self, t_ps: int) -> None: ...
    def output(self) -> dict[str, Any]: ...

@final
class NegotiatorSim:
    """The NegotiaToR engine."""

    def __new__(cls, spec: dict[str, Any]) -> NegotiatorSim: ...
    @property
    def now(self) -> int: ...
    def run_until(self, t_ps: int) -> None: ...
    def output(self) -> dict[str, Any]: ...
    def pair_epochs(self, src: int, dst: int) -> tuple[int, int]:
        """(first request epoch, first accepted epoch) of pair (src -> dst); -1 = never."""
    def predefined_peer(self, epoch: int, slot: int, tor: int, port: int) -> int:
        """Destination of egress ``port`` of ``tor`` in predefined ``slot`` of ``epoch`` (-1 idle)."""

@final
class SiriusSim:
    """The Sirius engine."""

    def __new__(cls, spec: dict[str, Any]) -> SiriusSim: ...
    @property
    def now(self) -> int: ...
    def run_until(self, t_ps: int) -> None: ...
    def output(self) -> dict[str, Any]: ...

def shale_peers(nodes: int, h: int, slots: int, h_hi: int = 0, num: int = 0, den: int = 1) -> list[list[int]]:
    """Peer table of an EBS schedule (optionally interleaved): row t = the node each node
    sends to in timeslot t."""

def rotor_fabric(
    tors: int, uplinks: int, matchings: NDArray[np.int64], seed: int, eps_ps: int, delta_ps: int,
    reconf_ps: int, prop_ps: int, ser_ps: int, queue_pkts: int
) -> dict[str, Any]:
    """Opera's rotor fabric: per-superslice peer ToR of every (tor, rotor) (-1: none), the
    timing (eps, delta, superslice; 0 = auto from the longest path), the longest path and
    the matchings used (empty ``matchings``: generated from ``seed``)."""

def flow_rates(
    pair: NDArray[np.int64], up: NDArray[np.int64], down: NDArray[np.int64], blocked: NDArray[np.bool_],
    indptr: NDArray[np.int64], indices: NDArray[np.int32], data: NDArray[np.float64], cap: NDArray[np.float64]
) -> tuple[NDArray[np.float64], bool]:
    """Max-min fair rates (bit/s) of a flow-level run's active flows (their rack pairs'
    rows of the routing matrix ``indptr / indices / data``, then their uplink and
    downlink), and whether a link ends above its capacity; bit-identical to
    ``flowsim._maxmin``."""

def state_graph(
    key: NDArray[np.int64], gport: NDArray[np.int64], up: NDArray[np.bool_], nxt: NDArray[np.int64], n: int,
    t: int, pid: NDArray[np.int64], max_hops: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], bool]:
    """The (rack pair, node) states of the flow-level routing matrix and their edges:
    ``(st_pair, st_node, ef, ep, et, looped)``, array for array ``flowsim._state_graph``."""

def state_shares(
    st_pair: NDArray[np.int64], st_node: NDArray[np.int64], ef: NDArray[np.int64], ep: NDArray[np.int64],
    et: NDArray[np.int64], n_pid: int, n: int, max_hops: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64], NDArray[np.int64],
           NDArray[np.float64], NDArray[np.bool_]]:
    """The routing matrix entries from the state graph: ``(rows, cols, vals, h_rows, h_cols,
    h_vals, reach)``, value for value ``flowsim._state_shares``."""

def coo_to_csr(
    rows: NDArray[np.int64], cols: NDArray[np.int64], vals: NDArray[np.float64], n_rows: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """A CSR matrix of ``n_rows`` rows from COO entries: ``(indptr, indices, data)``,
    columns ascending per row, repeated (row, column) entries summed in input order."""

def negotiator_match(
    tors: int, ports: int, topology: str, seed: int, requests: list[tuple[int, int]], rounds: int = 1
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """One NegotiaToR matching round: (grants [(dst, port, src)], accepts [(src, port, dst)])."""
