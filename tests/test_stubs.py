"""The type stub of the compiled module, ``opendcn/_core.pyi``, matches ``opendcn._core``:
every class, method, property, function and constant, with the same parameter names and
defaults (``mypy.stubtest``), and it ships with ``py.typed`` beside the module."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import numpy as np

import opendcn
from opendcn import _core


def test_stub_and_marker_ship_beside_the_module():
    here = Path(_core.__file__).parent
    assert here == Path(opendcn.__file__).parent
    assert (here / "_core.pyi").is_file()
    assert (here / "py.typed").is_file()


def test_stubtest_finds_no_difference(tmp_path):
    # in a scratch directory, so that mypy's cache and the repository's source tree stay out
    out = subprocess.run([sys.executable, "-m", "mypy.stubtest", "opendcn._core"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    report = out.stdout + out.stderr
    assert out.returncode == 0, report
    assert "Success: no issues found in 1 module" in report, report


# ---------------------------------------------------------------------------------------
# return types: stubtest compares names and parameters only, so the values the engine
# returns are checked here against the stub's annotations, on the objects the package makes
# ---------------------------------------------------------------------------------------
def _stub_namespace() -> dict:
    text = (Path(_core.__file__).parent / "_core.pyi").read_text()
    ns: dict = {"__name__": "_core_stub"}
    exec(compile("from __future__ import annotations\n" + text, "_core.pyi", "exec"), ns)
    return ns


def _conforms(value, hint) -> bool:
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if hint in (int, str, bool, float):
        return type(value) is hint
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if origin is tuple:
        return (isinstance(value, tuple) and len(value) == len(args)
                and all(_conforms(v, a) for v, a in zip(value, args)))
    if origin is dict:
        return isinstance(value, dict) and all(_conforms(k, args[0]) and _conforms(v, args[1])
                                               for k, v in value.items())
    if origin is np.ndarray:  # NDArray[dtype]
        (scalar,) = typing.get_args(args[1])
        return isinstance(value, np.ndarray) and value.dtype == scalar
    raise AssertionError(f"no check for annotation {hint!r}")


#: arguments of each query method (every other method of the stub is in MUTATORS)
QUERIES = {
    # the last Simulator built is Opera's (expander router)
    "Simulator": {"output": (), "candidates": (0, 0, 1, -1), "demand": (), "flow_progress": (), "take_tm": (), "port_bytes": (0,),
                  "expander_path": (0, 3, 0), "expander_paths": (0, 3, 0), "fail_log": (), "run_until": (0,), "take_messages": (),
                  "take_received": ()},
    "ShaleSimulator": {"output": (), "progress": (), "peer": (0, 5)},
    "NegotiatorSim": {"output": (), "pair_epochs": (0, 1), "predefined_peer": (0, 0, 0, 0)},
    "SiriusSim": {"output": ()},
}
#: methods that change the simulation: called (where harmless) with these arguments, or
#: not at all (None); they return None
MUTATORS = {"run_until": lambda sim: (sim.now,), "set_collect_tm": lambda sim: (False,),
            "final_sample": lambda sim: (), "reconfigure": None, "set_tables": None,
             "fail_ports": None, "send_message": None, "count_received": lambda sim: (None,)}


def test_return_types_match_the_stub(monkeypatch):
    ns = _stub_namespace()
    made: dict[str, object] = {}

    def keep(name, real):
        def make(spec):
            made[name] = sim = real(spec)  # the last one built: the one that ran
            return sim
        return make

    for name in QUERIES:
        monkeypatch.setattr(_core, name, keep(name, getattr(_core, name)))
    wl = opendcn.workload.poisson("hadoop", 0.3, "uniform")
    for arch in ("rotornet", "opera", "shale", "negotiator", "sirius"):
        opendcn.arch.get(arch).make(**opendcn.arch.get(arch).tiny).run(wl, duration="20us", seed=1)
    assert sorted(made) == sorted(QUERIES)

    checked = []
    for cname, queries in QUERIES.items():
        cls, sim = ns[cname], made[cname]
        for attr, member in vars(cls).items():
            if attr.startswith("__") or not callable(getattr(member, "fget", member)):
                continue
            if isinstance(member, property):
                value, want = getattr(sim, attr), typing.get_type_hints(member.fget, ns)["return"]
            elif attr in queries:
                value = getattr(sim, attr)(*queries[attr])
                want = typing.get_type_hints(member, ns)["return"]
            else:
                assert attr in MUTATORS, f"{cname}.{attr}: add it to QUERIES or MUTATORS"
                if MUTATORS[attr] is None:
                    continue
                value, want = getattr(sim, attr)(*MUTATORS[attr](sim)), type(None)
            assert _conforms(value, want), f"{cname}.{attr} returned {value!r}, the stub says {want}"
            checked.append(f"{cname}.{attr}")
    assert len(checked) >= 25, checked

    for fn, args in ((_core.shale_peers, (16, 2, 7)), (_core.shale_peers, (16, 2, 7, 4, 300, 1000)),
                     (_core.negotiator_match, (8, 4, "thin-clos", 3, [(0, 1), (2, 1), (5, 6)], 2)),
                     (_core.rotor_fabric, (8, 4, np.zeros(0, np.int64), 1, 0, 0, 10_000_000, 500_000, 1_200_000, 8))):
        want = typing.get_type_hints(ns[fn.__name__], ns)["return"]
        value = fn(*args)
        assert _conforms(value, want), f"{fn.__name__} returned {value!r}, the stub says {want}"
    assert isinstance(_core.__version__, str) and issubclass(_core.EngineSpecError, ValueError)
