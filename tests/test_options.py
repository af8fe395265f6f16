"""Every architecture's options come from one model: the Python builder's keyword
arguments, the CLI options of ``opendcn run ARCH``, ``opendcn archs`` and the docs table
are compared with it here, and bad values fail in the model with a ConfigError naming the
flag and the value as given."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import typer

import opendcn as od
from opendcn import cli, docs
from opendcn.arch import REGISTRY
from opendcn.arch.options import ArchOptions

ARCHS = sorted(REGISTRY)
DOCS = Path(__file__).resolve().parents[1] / "docs" / "arch"


def _cli_command(name: str):
    group = typer.main.get_command(cli.app)
    run = group.commands["run"]  # type: ignore[attr-defined]
    return run.commands[name]


def _cli_flags(name: str) -> dict[str, object]:
    """The architecture's own CLI options: flag -> the click option."""
    cmd = _cli_command(name)
    out = {}
    for p in cmd.params:
        if p.name in cli.RUN_KEYS or p.name == "ctx":
            continue
        out[p.opts[0]] = p
    return out


@pytest.mark.parametrize("name", ARCHS)
def test_python_cli_and_docs_come_from_the_model(name):
    arch = REGISTRY[name]
    assert issubclass(arch.model, ArchOptions)
    model = list(arch.model.model_fields)
    # the Python builder: keyword-only arguments, in the model's option order, with its defaults
    sig = inspect.signature(getattr(od.arch, name))
    assert sorted(sig.parameters) == sorted(model)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values())
    for o in arch.options:
        assert sig.parameters[o.name].default == arch.model.model_fields[o.name].default
    # the CLI command: exactly the model's options, bools as --x/--no-x switches
    flags = _cli_flags(name)
    assert set(flags) == {o.flag for o in arch.options}
    for o in arch.options:
        p = flags[o.flag]
        assert p.name == o.name
        if o.kind == "bool":
            assert p.secondary_opts == ["--no-" + o.flag[2:]]
        assert o.help and o.help in p.help
    # the docs table: one row per option, in the same order, rendered from the same views
    text = (DOCS / f"{name}.md").read_text()
    table = docs.current_table(text)
    assert table == docs.options_table(arch)
    rows = [line.split("|")[1].strip().strip("`") for line in table.splitlines() if line.startswith("| `--")]
    assert rows == [o.flag for o in arch.options]


@pytest.mark.parametrize("name", ARCHS)
def test_every_option_has_help_and_a_unit_where_it_has_one(name):
    for o in REGISTRY[name].options:
        assert len(o.help) > 10, (name, o.name)
        if o.kind.split(" ")[0] in ("time", "rate", "size"):
            assert o.units, (name, o.name)
        if o.kind == "choice":
            assert o.choices and (o.default is None or o.default in o.choices), (name, o.name)


@pytest.mark.parametrize("name", ARCHS)
def test_defaults_validate_and_convert(name):
    """The model's defaults are valid values; times, rates and sizes are stored as integers."""
    arch = REGISTRY[name]
    o = arch.parse(**arch.tiny)
    for opt in arch.options:
        v = getattr(o, opt.name)
        if opt.kind in ("time", "rate", "size") and v is not None:
            assert isinstance(v, int) and not isinstance(v, bool), (name, opt.name, v)


@pytest.mark.parametrize("name", ARCHS)
def test_a_bad_value_names_the_flag_and_the_value_in_python(name):
    arch = REGISTRY[name]
    bad = {"int": "many", "float": "lots", "time": "3 parsecs", "rate": "fast", "size": "huge",
           "choice": "nosuchchoice", "bool": "perhaps"}
    for o in arch.options:
        if o.kind not in bad:
            continue
        with pytest.raises(od.ConfigError) as e:
            arch.make(**{**arch.tiny, o.name: bad[o.kind]})
        assert e.value.field == o.flag and e.value.value == bad[o.kind], (name, o.name, e.value)


def test_bounds_are_checked_once_in_the_model():
    with pytest.raises(od.ConfigError) as e:
        od.arch.rotornet(nodes=8, max_hop=0)
    assert e.value.field == "--max-hop" and e.value.value == 0
    with pytest.raises(od.ConfigError) as e:
        od.arch.clos(nodes=8, oversubscription=0.5)
    assert e.value.field == "--oversubscription"
    with pytest.raises(od.ConfigError) as e:
        od.arch.negotiator(nodes=16, fail_links=1.5)
    assert e.value.field == "--fail-links" and e.value.value == 1.5


def test_errors_after_conversion_show_the_value_as_given():
    """A check made on converted values (ps) still reports what the user typed."""
    with pytest.raises(od.ConfigError) as e:
        od.arch.rotornet(nodes=8, slice="1us", guardband="2us")
    assert e.value.field == "--guardband" and e.value.value == "2us"


def test_run_takes_a_typed_seed_and_load():
    cmd = _cli_command("rotornet")
    params = {p.name: p for p in cmd.params}
    ctx = cmd.make_context("rotornet", ["--seed", "7", "--load", "0.25"])
    assert ctx.params["seed"] == 7 and ctx.params["load"] == 0.25
    assert params["seed"].default == 1 and params["load"].default == 0.3
    with pytest.raises(Exception) as e:
        cmd.make_context("rotornet", ["--seed", "1x7"])
    assert "1x7" in str(e.value)


def _recording_ticker(seen: list[tuple[str, int]]):
    import contextlib

    @contextlib.contextmanager
    def ticker(end, label, on):
        if callable(on):
            yield on
        elif not on:
            yield None
        else:
            seen.append((label, -end))
            yield lambda t: seen.append((label, t))
    return ticker


@pytest.mark.parametrize("arch,opts,module", [
    ("cthrough", {"nodes": 8, "period": "200us"}, "opendcn.arch.ta"),
    ("trn", {"nodes": 8, "period": "200us"}, "opendcn.arch.hpc"),
])
def test_control_loops_move_one_progress_bar_to_the_end(monkeypatch, arch, opts, module):
    """A design whose controller acts every period shows one bar over the whole run,
    moved inside the periods and through the last one (not only after the control loop)."""
    import importlib

    import opendcn as od

    seen: list[tuple[str, int]] = []
    monkeypatch.setattr(importlib.import_module(module), "progress_ticker", _recording_ticker(seen))
    net = od.arch.get(arch).make(**opts)
    net.run(od.workload.poisson("hadoop", 0.3), duration="1ms", seed=1, progress=True)
    starts = [t for _, t in seen if t < 0]
    ticks = [t for _, t in seen if t >= 0]
    assert starts == [-10**9]                       # one bar, over the run's 1 ms
    assert len([t for t in ticks if t <= 200 * 10**6]) >= 1 and ticks == sorted(ticks)
    assert ticks[-1] == 10**9


def test_a_flow_level_run_moves_its_progress_bar_to_the_end(monkeypatch):
    import opendcn as od
    from opendcn.network import flowsim, network

    seen: list[tuple[str, int]] = []
    monkeypatch.setattr(network, "progress_ticker", _recording_ticker(seen))
    net = od.arch.get("trn").make(nodes=8)
    flowsim.run(net, od.workload.poisson("hadoop", 0.3), duration="1ms", seed=1, progress=True)
    assert seen[0] == ("trn (flow level)", -10**9) and seen[-1] == ("trn (flow level)", 10**9)
