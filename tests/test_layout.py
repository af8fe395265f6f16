"""The package's import rules (DESIGN.md, "A layout that shows this"): imports run one way.

Read from the sources with ``ast`` (nothing is imported): every ``import`` and ``from ...
import`` of every module of ``python/opendcn``, lazy ones inside functions included.

- no module imports the command line (``opendcn.cli``) but ``opendcn.__main__``;
- a fabric (``opendcn.fabrics``: topology, routing, ...) imports no architecture;
- the studies are the top: only the command line imports them;
- nothing below the studies and the experiments (network, fabrics, workload, models,
  architectures, the OpenOptics layer) imports them, but for the pure statistics of
  ``opendcn.experiments.analysis`` that a run's summary is computed with.

And every study has the one entry point ``study(...)`` of :class:`opendcn.studies.base.Study`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "python" / "opendcn"


def _name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every opendcn module or name ``path`` imports (``from a import b`` gives ``a`` and ``a.b``)."""
    mod = _name(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out |= {f"{target}.{a.name}" for a in node.names}
    return {m for m in out if m == "opendcn" or m.startswith("opendcn.")}


MODULES = {_name(p): _imports(p) for p in sorted(PKG.rglob("*.py"))}


def _under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _offenders(importers: tuple[str, ...], imported: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(f"{m} imports {d}" for m, deps in MODULES.items() if _under(m, *importers)
                  for d in deps if _under(d, *imported) and not _under(d, *allowed) and not _under(m, *imported))


def test_the_walk_sees_the_package():
    assert {"opendcn.cli", "opendcn.fabrics.topology", "opendcn.studies.negotiator"} <= set(MODULES)
    assert "opendcn.studies" in MODULES["opendcn.cli"]      # lazy, inside a command


def test_no_module_imports_the_cli():
    bad = sorted(f"{m} imports {d}" for m, deps in MODULES.items() if m not in ("opendcn.cli", "opendcn.__main__")
                 for d in deps if _under(d, "opendcn.cli"))
    assert bad == []


def test_fabrics_import_no_architecture():
    assert _offenders(("opendcn.fabrics",), ("opendcn.arch",)) == []


def test_only_the_cli_imports_the_studies():
    bad = sorted(f"{m} imports {d}" for m, deps in MODULES.items()
                 if not _under(m, "opendcn.studies") and m != "opendcn.cli"
                 for d in deps if _under(d, "opendcn.studies"))
    assert bad == []


@pytest.mark.parametrize("layer", ["opendcn.network", "opendcn.fabrics", "opendcn.workload", "opendcn.models",
                                   "opendcn.arch", "opendcn.openoptics"])
def test_lower_layers_import_no_experiment_or_study(layer):
    assert _offenders((layer,), ("opendcn.experiments", "opendcn.studies"),
                      allowed=("opendcn.experiments.analysis",)) == []


def test_every_study_has_the_one_signature():
    from opendcn import studies
    from opendcn.studies.base import Study

    want = inspect.signature(Study.__call__)
    want = want.replace(parameters=list(want.parameters.values())[1:])       # less self
    for name in studies.NAMES:
        fn = importlib.import_module(f"opendcn.studies.{name}").study
        assert inspect.signature(fn) == want, name
        assert studies.get(name) is fn
    assert {p.stem for p in (PKG / "studies").glob("*.py")} == {*studies.NAMES, "__init__", "base"}
