"""Bad input of every kind: each raises ``od.ConfigError`` (CLI: exit code 2) whose message
names the offending field and value, never crashes the process and never leaves a
half-written result behind (docs/contract.md#errors)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import opendcn as od
from opendcn import ConfigError, _core
from opendcn.errors import MISSING as NO_VALUE
from opendcn.network.timeflow import Circuit as C
from opendcn.network.timeflow import Entry as E

US = 10**6
RESULT_FILES = {"summary.json", "spec.json", "flows.parquet", "timeseries.parquet", "fabric.json"}


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def _squash(text: str) -> str:
    """Text without any whitespace: the CLI's console may wrap long messages."""
    return "".join(text.split())


def assert_names(message: str, *needles: object) -> None:
    for needle in needles:
        assert _squash(str(needle)) in _squash(message), \
            f"{needle!r} is not named in the message {message!r}"


def cli_cmd() -> list[str]:
    script = Path(sys.executable).parent / "opendcn"
    return [str(script)] if script.exists() else [sys.executable, "-m", "opendcn.cli"]


def cli(*args: object, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    return subprocess.run(cli_cmd() + [str(a) for a in args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def assert_usage_error(proc: subprocess.CompletedProcess, *needles: object) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    assert_names(proc.stderr, *needles)


def tiny_rotor(nodes: int = 4, uplinks: int = 1) -> od.Network:
    net = od.Network(od.Config(nodes=nodes, uplinks=uplinks, slice="2us", guardband="200ns"))
    net.deploy_topo(od.topology.round_robin(net.config, dimension=1))
    return net


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------
# Config fields
# ---------------------------------------------------------------------------------------
# (fields given, offending field, offending value)
BAD_CONFIGS = [
    # nodes
    ({"nodes": 1}, "nodes", 1),
    ({"nodes": 0}, "nodes", 0),
    ({"nodes": -3}, "nodes", -3),
    ({"nodes": "abc"}, "nodes", "abc"),
    ({"nodes": 2.5}, "nodes", 2.5),
    # uplinks
    ({"uplinks": 0}, "uplinks", 0),
    ({"uplinks": "x"}, "uplinks", "x"),
    # link_rate: no unit, wrong unit, a time, zero, negative, not a string
    ({"link_rate": "100"}, "link_rate", "100"),
    ({"link_rate": "100GB"}, "link_rate", "100GB"),
    ({"link_rate": "2us"}, "link_rate", "2us"),
    ({"link_rate": "fast"}, "link_rate", "fast"),
    ({"link_rate": "0Gbps"}, "link_rate", "0Gbps"),
    ({"link_rate": -1}, "link_rate", -1),
    ({"link_rate": 1.5}, "link_rate", 1.5),
    # slice
    ({"slice": "2xs"}, "slice", "2xs"),
    ({"slice": "2"}, "slice", "2"),
    ({"slice": "100Gbps"}, "slice", "100Gbps"),
    ({"slice": "0us"}, "slice", "0us"),
    ({"slice": -5}, "slice", -5),
    ({"slice": 2.0}, "slice", 2.0),
    # guardband: not shorter than the slice, negative, wrong unit
    ({"slice": "2us", "guardband": "2us"}, "guardband", "2us"),
    ({"slice": "2us", "guardband": "3us"}, "guardband", "3us"),
    ({"guardband": "-1ns"}, "guardband", "-1ns"),
    ({"guardband": "200nb"}, "guardband", "200nb"),
    # propagation
    ({"propagation": "-1ns"}, "propagation", "-1ns"),
    ({"propagation": [1]}, "propagation", [1]),
    ({"propagation": "500"}, "propagation", "500"),
    # host side
    ({"host_rate": "0Gbps"}, "host_rate", "0Gbps"),
    ({"host_rate": "1KB"}, "host_rate", "1KB"),
    ({"hosts_per_node": -1}, "hosts_per_node", -1),
    ({"hosts_per_node": "many"}, "hosts_per_node", "many"),
    ({"hosts_per_node": 2, "host_link_rate": "0Gbps"}, "host_link_rate", "0Gbps"),
    ({"host_link_rate": "1XB"}, "host_link_rate", "1XB"),
    ({"host_propagation": "1m"}, "host_propagation", "1m"),
    # buffer smaller than one packet, wrong unit
    ({"buffer": "1499B"}, "buffer", "1499B"),
    ({"buffer": "0B"}, "buffer", "0B"),
    ({"mtu": 1500, "header": 100, "buffer": 1550}, "buffer", 1550),
    ({"buffer": "1us"}, "buffer", "1us"),
    # packets
    ({"mtu": 0}, "mtu", 0),
    ({"mtu": "-1B"}, "mtu", "-1B"),
    ({"header": -1}, "header", -1),
    ({"header": "1Kbit"}, "header", "1Kbit"),
    # the rest
    ({"node_type": "switch"}, "node_type", "switch"),
    ({"sample_interval": "-1us"}, "sample_interval", "-1us"),
    ({"sample_interval": "10 Gbps"}, "sample_interval", "10 Gbps"),
    ({"reconfiguration_delay": "abc"}, "reconfiguration_delay", "abc"),
    ({"reconfiguration_delay": "-1us"}, "reconfiguration_delay", "-1us"),
    # unknown field
    ({"colour": "red"}, "colour", "red"),
    ({"nodes": 4, "slices": 3}, "slices", 3),
]
CONFIG_IDS = [f"{field}={value!r}" for _, field, value in BAD_CONFIGS]


@pytest.mark.parametrize("fields,field,value", BAD_CONFIGS, ids=CONFIG_IDS)
def test_config_from_dict_rejects(fields, field, value):
    with pytest.raises(ConfigError) as ei:
        od.Config.from_dict(fields)
    assert_names(str(ei.value), field, value)


@pytest.mark.parametrize("fields,field,value", BAD_CONFIGS, ids=CONFIG_IDS)
def test_config_constructor_rejects(fields, field, value):
    # the README's way of building a config: od.Config(...)
    with pytest.raises(ConfigError) as ei:
        od.Config(**fields)
    assert_names(str(ei.value), field, value)


@pytest.mark.parametrize("fields,field,value", BAD_CONFIGS, ids=CONFIG_IDS)
def test_config_json_file_rejects(tmp_path, fields, field, value):
    path = write(tmp_path / "net.json", json.dumps(fields))
    with pytest.raises(ConfigError) as ei:
        od.Config.from_file(path)
    assert_names(str(ei.value), field, value)


def _toml_value(v: object) -> str:
    return json.dumps(v)  # ints, floats, strings and lists of ints read the same in TOML


@pytest.mark.parametrize("fields,field,value", BAD_CONFIGS, ids=CONFIG_IDS)
def test_config_toml_file_rejects(tmp_path, fields, field, value):
    text = "".join(f"{k} = {_toml_value(v)}\n" for k, v in fields.items())
    path = write(tmp_path / "net.toml", text)
    with pytest.raises(ConfigError) as ei:
        od.Config.from_file(path)
    assert_names(str(ei.value), field, value)


@pytest.mark.parametrize("name,text", [
    ("trailing-comma.json", '{"nodes": 4, "slice": "2us",}'),
    ("truncated.json", '{"nodes": 4, "slice": '),
    ("unterminated.toml", 'nodes = 4\nslice = "2us\n'),
    ("no-equals.toml", 'nodes 4\n'),
])
def test_config_file_with_bad_syntax(tmp_path, name, text):
    path = write(tmp_path / name, text)
    with pytest.raises(ConfigError) as ei:
        od.Config.from_file(path)
    assert_names(str(ei.value), str(path), "line")


@pytest.mark.parametrize("text", ["[1, 2]", '"nodes"', "4"])
def test_config_json_file_not_a_mapping(tmp_path, text):
    path = write(tmp_path / "net.json", text)
    with pytest.raises(ConfigError) as ei:
        od.Config.from_file(path)
    assert_names(str(ei.value), "config", json.loads(text))


def test_config_file_missing(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as ei:
        od.Config.from_file(path)
    assert_names(str(ei.value), str(path))


@pytest.mark.parametrize("data", [[("nodes", 4)], None, "nodes=4", 42])
def test_config_from_dict_needs_a_mapping(data):
    with pytest.raises(ConfigError) as ei:
        od.Config.from_dict(data)
    assert_names(str(ei.value), "config", data)


def test_network_rejects_bad_config_and_fabric():
    with pytest.raises(ConfigError) as ei:
        od.Network({"nodes": 1})
    assert_names(str(ei.value), "nodes", 1)
    with pytest.raises(ConfigError) as ei:
        od.Network("a config")
    assert_names(str(ei.value), "config", "a config")
    with pytest.raises(ConfigError) as ei:
        od.Network(od.Config(nodes=4), fabric="wireless")
    assert_names(str(ei.value), "fabric", "wireless")


# ---------------------------------------------------------------------------------------
# circuits (net.deploy_topo)
# ---------------------------------------------------------------------------------------
def six_nodes() -> od.Network:
    return od.Network(od.Config(nodes=6, uplinks=3, slice="2us", guardband="200ns"))


@pytest.mark.parametrize("circuits,needles", [
    # port 1 of node 2 used twice in slice 4
    ([C(2, 1, 3, 1, 4), C(2, 1, 5, 2, 4)], ["circuits[1]", "slice 4", "node 2", "port 1"]),
    # the same port taken at its far end
    ([C(0, 0, 4, 2, 1), C(1, 0, 4, 2, 1)], ["circuits[1]", "slice 1", "node 4", "port 2"]),
    # a static circuit holds its ports in every slice, also in slice 3
    ([C(0, 2, 1, 2, None), C(0, 2, 3, 0, 3)], ["circuits[1]", "slice 3", "node 0", "port 2"]),
    # two static circuits on one port
    ([C(0, 1, 1, 1, None), C(5, 0, 0, 1, None)], ["circuits[1]", "node 0", "port 1"]),
], ids=["same-slice", "far-end", "static-vs-slotted", "static-vs-static"])
def test_deploy_topo_port_used_twice(circuits, needles):
    net = six_nodes()
    with pytest.raises(ConfigError) as ei:
        net.deploy_topo(circuits)
    assert_names(str(ei.value), *needles)


@pytest.mark.parametrize("circuit,needles", [
    (C(0, 0, 9, 0, 0), ["node 9"]),
    (C(6, 0, 1, 0, 2), ["node 6"]),
    (C(-1, 0, 1, 0, 0), ["node -1"]),
    (C(0, 0, 1, 7, 0), ["port 7", "node 1"]),
    (C(0, 3, 1, 0, 0), ["port 3", "node 0"]),
    (C(0, -1, 1, 0, 0), ["port -1"]),
    (C(3, 0, 3, 1, 0), ["node 3"]),
    (C(0, 0, 1, 0, -2), ["-2"]),
    (C(0, 0, 1, 0, "a"), ["'a'"]),
    (C(0.5, 0, 1, 0, 0), ["0.5"]),
    (C(0, 0, "1", 0, 0), ["'1'"]),
], ids=["node-out", "node-eq-N", "node-neg", "port-out-far", "port-out-near", "port-neg",
        "self-loop", "negative-slice", "slice-str", "node-float", "node-str"])
def test_deploy_topo_bad_circuit(circuit, needles):
    net = six_nodes()
    with pytest.raises(ConfigError) as ei:
        net.deploy_topo([C(4, 0, 5, 0, 0), circuit])      # the second circuit is bad
    assert_names(str(ei.value), "circuits[1]", *needles)


@pytest.mark.parametrize("circuits,value", [
    ([(0, 0, 1)], "(0, 0, 1)"),
    ([(0, 0, 1, 0, 0, 7)], "(0, 0, 1, 0, 0, 7)"),
    (["abc"], "abc"),
    ([None], "None"),
    (5, "5"),
    (None, "None"),
], ids=["short-tuple", "long-tuple", "string", "none-item", "not-iterable", "none"])
def test_deploy_topo_malformed_circuits(circuits, value):
    net = six_nodes()
    with pytest.raises(ConfigError) as ei:
        net.deploy_topo(circuits)
    assert_names(str(ei.value), "circuits", value)


def test_deploy_topo_electrical_fabric_takes_no_slotted_circuits():
    net = od.Network(od.Config(nodes=4), fabric="electrical")
    with pytest.raises(ConfigError) as ei:
        net.deploy_topo([C(0, 0, 1, 0, 0), C(2, 0, 3, 0, 1)])
    assert_names(str(ei.value), "circuits", "ts=0", "electrical")


def test_deploy_topo_bad_slice_durations():
    net = tiny_rotor()
    rr = od.topology.round_robin(net.config)
    with pytest.raises(ConfigError) as ei:
        net.deploy_topo(rr, slice_durations=["2us", "2us"])
    assert_names(str(ei.value), "slice_durations", 2)
    with pytest.raises(ConfigError) as ei:
        net.deploy_topo(rr, slice_durations=["2us", "100ns", "2us"])
    assert_names(str(ei.value), "slice_durations[1]", 100000)
    with pytest.raises(ConfigError) as ei:
        net.deploy_topo(rr, slice_durations=["2us", "2xs", "2us"])
    assert_names(str(ei.value), "slice_durations[1]", "2xs")


def test_rejected_deploy_topo_keeps_the_previous_topology():
    net = tiny_rotor()
    before = list(net.circuits)
    with pytest.raises(ConfigError):
        net.deploy_topo(before + [C(0, 0, 2, 0, 0)])  # port 0 of node 0 busy in slice 0
    assert net.circuits == before and net.slices == 3
    net.deploy_routing("direct")
    r = net.run(od.workload.flows([("0us", 0, 3, 3000)]), duration="20us")
    assert r.summary["flows"] == {"started": 1, "completed": 1}


# ---------------------------------------------------------------------------------------
# time-flow entries (net.add)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry,node,field,value", [
    (E(0, None, 3, 0, 1), 0, "port", 1),
    (E(0, None, 3, 0, -1), 0, "port", -1),
    (E(0, None, 7, 0, 0), 0, "dst", 7),
    (E(0, None, -1, 0, 0), 0, "dst", -1),
    (E(0, 9, 3, 0, 0), 0, "src", 9),
    (E(3, None, 3, 0, 0), 0, "arr_ts", 3),
    (E(-1, None, 3, 0, 0), 0, "arr_ts", -1),
    (E(0, None, 3, 5, 0), 0, "dep_ts", 5),
    (E(0, None, 3, 0, 0), 4, "node", 4),
    (E(0, None, 3, 0, 0), -1, "node", -1),
    # wrong types
    (E(0, None, "3", 0, 0), 0, "dst", "'3'"),
    (E(0, None, 3, 0, "0"), 0, "port", "'0'"),
    (E(0, None, 3, 0, 0.0), 0, "port", "0.0"),
    (E(0, None, 3, 0, True), 0, "port", "True"),
    (E("0", None, 3, 0, 0), 0, "arr_ts", "'0'"),
    (E(0, None, 3, 1.5, 0), 0, "dep_ts", "1.5"),
    (E(0, None, 3, 0, 0), "0", "node", "'0'"),
    (E(0, None, 3, 0, 0), None, "node", "None"),
], ids=lambda x: repr(x))
def test_add_rejects_bad_entry(entry, node, field, value):
    net = tiny_rotor()                       # 4 nodes, 1 port each, 3 slices
    with pytest.raises(ConfigError) as ei:
        net.add(entry, node)
    assert_names(str(ei.value), field, value)
    assert net.tables(0) == []               # nothing was installed


@pytest.mark.parametrize("entry", ["abc", 42, {"dst": 3}, [0, None, 3], None, 3.5],
                         ids=lambda x: repr(x))
def test_add_rejects_what_is_not_an_entry(entry):
    net = tiny_rotor()
    with pytest.raises(ConfigError) as ei:
        net.add(entry, 0)
    assert_names(str(ei.value), "entry", entry)
    assert net.tables(0) == []


def test_add_needs_table_routing():
    net = tiny_rotor()
    net.deploy_routing("vlb")
    with pytest.raises(ConfigError) as ei:
        net.add(E(None, None, 3, 2, 0), 0)
    assert_names(str(ei.value), "entry", "vlb")


# ---------------------------------------------------------------------------------------
# routing (net.deploy_routing)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,field,value", [
    ({"lookup": "table"}, "lookup", "table"),
    ({"lookup": None}, "lookup", "None"),
    ({"lookup": "HOP"}, "lookup", "HOP"),
    ({"multipath": "flowlet"}, "multipath", "flowlet"),
    ({"multipath": ""}, "multipath", "''"),
])
def test_deploy_routing_bad_lookup_or_multipath(kwargs, field, value):
    net = tiny_rotor()
    with pytest.raises(ConfigError) as ei:
        net.deploy_routing(od.routing.vlb(net.circuits), **kwargs)
    assert_names(str(ei.value), field, value)


@pytest.mark.parametrize("name", ["ecmp", "VLB", "valiant", ""])
def test_deploy_routing_unknown_builtin(name):
    net = tiny_rotor()
    with pytest.raises(ConfigError) as ei:
        net.deploy_routing(name)
    assert_names(str(ei.value), "routing", repr(name))


def test_deploy_routing_builtin_before_topology():
    net = od.Network(od.Config(nodes=4))
    with pytest.raises(ConfigError) as ei:
        net.deploy_routing("direct")
    assert_names(str(ei.value), "routing", "direct", "deploy_topo")


@pytest.mark.parametrize("paths,field,value", [
    ([1, 2], "paths[0]", 1),
    (["vlb"], "paths[0]", "vlb"),
    (42, "paths", 42),
    (None, "paths", None),
], ids=["ints", "list-of-str", "not-iterable", "none"])
def test_deploy_routing_bad_paths(paths, field, value):
    net = tiny_rotor()
    with pytest.raises(ConfigError) as ei:
        net.deploy_routing(paths)
    assert_names(str(ei.value), field, value)


# ---------------------------------------------------------------------------------------
# flow-size distribution files (--workload PATH)
# ---------------------------------------------------------------------------------------
BAD_CDFS = [
    ("decreasing-prob", "100 0.5\n200 0.3\n300 1\n", ":2", "0.3"),
    ("decreasing-size", "100 0.2\n50 0.5\n300 1\n", ":2", "50"),
    ("negative-size", "100 0.5\n-200 0.7\n300 1\n", ":2", "-200"),
    ("non-numeric", "100 0.5\nabc 0.7\n300 1\n", ":2", "abc"),
    ("prob-above-one", "100 0.5\n200 1.5\n300 1\n", ":2", "1.5"),
    ("last-prob-not-one", "# sizes\n100 0.5\n200 0.7\n300 0.9\n", ":4", "0.9"),
    ("three-columns", "100 0.5 7\n300 1\n", ":1", "100 0.5 7"),
    ("one-row", "100 1\n", "", "1"),
]


@pytest.mark.parametrize("name,text,where,value", BAD_CDFS, ids=[c[0] for c in BAD_CDFS])
def test_poisson_rejects_bad_cdf_file(tmp_path, name, text, where, value):
    path = write(tmp_path / f"{name}.cdf", text)
    with pytest.raises(ConfigError) as ei:
        od.workload.poisson(str(path), load=0.3, pattern="uniform")
    assert_names(str(ei.value), f"{path}{where}", value)
    with pytest.raises(ConfigError) as ei:
        od.workload.poisson(path, load=0.3, pattern="uniform")   # a Path works the same
    assert_names(str(ei.value), f"{path}{where}", value)


@pytest.mark.parametrize("name,text,where,value", BAD_CDFS, ids=[c[0] for c in BAD_CDFS])
def test_cli_rejects_bad_cdf_file(cli_results, name, text, where, value):
    proc, folder = cli_results[f"cdf-{name}"]
    path = folder / f"{name}.cdf"
    assert_usage_error(proc, f"{path}{where}", value)
    assert sorted(p.name for p in folder.iterdir()) == [path.name]


def test_poisson_unknown_workload_name_or_missing_file(tmp_path):
    for value in ["hadoopp", str(tmp_path / "missing.cdf")]:
        with pytest.raises(ConfigError) as ei:
            od.workload.poisson(value, load=0.3)
        assert_names(str(ei.value), "workload", value)


# ---------------------------------------------------------------------------------------
# flows files (--flows-file PATH)
# ---------------------------------------------------------------------------------------
BAD_FLOWS = [
    ("dst-beyond-network", "start,src,dst,bytes\n0us,0,1,1000\n1us,0,9,1000\n", ":3", "dst", "9"),
    ("src-beyond-network", "0us,0,1,1000\n0us,4,1,1000\n", ":2", "src", "4"),
    ("negative-size", "0us,0,1,-5\n", ":1", "bytes", "-5"),
    ("zero-size", "0us,0,1,0\n", ":1", "bytes", "0"),
    ("bad-time-unit", "0xs,0,1,1000\n", ":1", "start", "0xs"),
    ("negative-start", "-5us,0,1,1000\n", ":1", "start", "-5us"),
    ("three-columns", "0us,0,1\n", ":1", "columns", "0us,0,1"),
    ("five-columns", "0us,0,1,1000,7\n", ":1", "columns", "0us,0,1,1000,7"),
    ("non-numeric-src", "0us,a,1,1000\n", ":1", "src", "a"),
    ("wrong-header", "time,from,to,size\n0us,0,1,1000\n", ":1", "start", "time"),
    ("src-equals-dst", "0us,2,2,1000\n", ":1", "dst", "2"),
]


@pytest.mark.parametrize("name,text,where,field,value", BAD_FLOWS, ids=[c[0] for c in BAD_FLOWS])
def test_from_file_rejects_bad_flows(tmp_path, name, text, where, field, value):
    path = write(tmp_path / f"{name}.csv", text)
    net = tiny_rotor(nodes=4)
    with pytest.raises(ConfigError) as ei:
        net.run(od.workload.from_file(path), duration="20us")
    assert_names(str(ei.value), f"{path}{where}", field, value)


@pytest.mark.parametrize("name,text,where,field,value", BAD_FLOWS, ids=[c[0] for c in BAD_FLOWS])
def test_cli_rejects_bad_flows_file(cli_results, name, text, where, field, value):
    proc, folder = cli_results[f"flows-{name}"]
    path = folder / f"{name}.csv"
    assert_usage_error(proc, f"{path}{where}", field, value)
    assert sorted(p.name for p in folder.iterdir()) == [path.name]


def test_missing_flows_file(tmp_path):
    path = tmp_path / "nope.csv"
    with pytest.raises(ConfigError) as ei:
        od.workload.from_file(path)
    assert_names(str(ei.value), str(path))
    proc = cli("run", "rotornet", "--nodes", 4, "--duration", "20us", "--flows-file", path)
    assert_usage_error(proc, str(path))


@pytest.mark.parametrize("entries,field,value", [
    ([("0xs", 0, 1, 1000)], "flows[0].start", "0xs"),
    ([("0us", 0, 1, 1000), ("1us", -1, 1, 1000)], "flows[1].src", -1),
    ([("0us", 0, 1, -5)], "flows[0].bytes", -5),
    ([("0us", 0, 1)], "flows[0]", "('0us', 0, 1)"),
    ([("0us", 0, 9, 1000)], "dst", 9),
])
def test_explicit_flows_rejected(entries, field, value):
    net = tiny_rotor(nodes=4)
    with pytest.raises(ConfigError) as ei:
        net.run(od.workload.flows(entries), duration="20us")
    assert_names(str(ei.value), field, value)


# ---------------------------------------------------------------------------------------
# run options through the Python API
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,field,value", [
    ({"duration": "10xs"}, "duration", "10xs"),
    ({"duration": "0us"}, "duration", "0us"),
    ({"duration": "10"}, "duration", "10"),
    ({"seed": -1}, "seed", -1),
    ({"seed": "1"}, "seed", "'1'"),
    ({"mice_threshold": "10xb"}, "mice_threshold", "10xb"),
])
def test_run_rejects_bad_options(tmp_path, kwargs, field, value):
    net = tiny_rotor()
    net.deploy_routing("direct")
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as ei:
        net.run(od.workload.flows([("0us", 0, 3, 3000)]), **{"duration": "20us", **kwargs}, out=out)
    assert_names(str(ei.value), field, value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kwargs,field,value", [
    ({"load": -0.5}, "load", -0.5),
    ({"load": 0}, "load", 0),
    ({"load": 50}, "load", 50),
    ({"load": "high"}, "load", "high"),
    ({"pattern": "zigzag"}, "pattern", "zigzag"),
])
def test_poisson_rejects_bad_options(kwargs, field, value):
    with pytest.raises(ConfigError) as ei:
        od.workload.poisson("hadoop", **{"load": 0.3, **kwargs})
    assert_names(str(ei.value), field, value)


@pytest.mark.parametrize("kwargs,field,value", [
    ({"nodes": "abc"}, "--nodes", "abc"),
    ({"link_rate": "100GB"}, "--link-rate", "100GB"),
    ({"routing": "ecmp"}, "--routing", "ecmp"),
    ({"slice": "2xs"}, "--slice", "2xs"),
    ({"bogus": 3}, "--bogus", 3),
])
def test_arch_builder_rejects_bad_options(kwargs, field, value):
    with pytest.raises(ConfigError) as ei:
        od.arch.get("rotornet").make(**kwargs)
    assert_names(str(ei.value), field, value)


def test_unknown_architecture_in_python():
    with pytest.raises(ConfigError) as ei:
        od.arch.get("nosuchnet")
    assert_names(str(ei.value), "nosuchnet")


# ---------------------------------------------------------------------------------------
# CLI options
# ---------------------------------------------------------------------------------------
BAD_CLI = [
    (["run", "nosuchnet"], ["nosuchnet"]),
    (["run", "rotornet", "--bogus", "3"], ["--bogus", "3"]),
    (["run", "rotornet", "--bogus=3"], ["--bogus", "3"]),
    (["run", "clos", "--slice", "2us"], ["--slice", "2us"]),
    (["run", "rotornet", "--nodes", "abc"], ["--nodes", "abc"]),
    (["run", "rotornet", "--nodes", "2.5"], ["--nodes", "2.5"]),
    (["run", "rotornet", "--nodes", "1"], ["nodes", "1"]),
    (["run", "rotornet", "--nodes"], ["--nodes"]),
    (["run", "rotornet", "--duration", "10xs"], ["--duration", "10xs"]),
    (["run", "rotornet", "--duration", "10"], ["--duration", "10"]),
    (["run", "rotornet", "--duration", "-5us"], ["--duration", "-5us"]),
    (["run", "rotornet", "--duration", "0us"], ["--duration", "0us"]),
    (["run", "rotornet", "--load", "abc"], ["--load", "abc"]),
    (["run", "rotornet", "--load", "-0.5"], ["--load", "-0.5"]),
    (["run", "rotornet", "--load", "0"], ["--load", "0"]),
    (["run", "rotornet", "--load", "50"], ["--load", "50"]),
    (["run", "rotornet", "--load", "1.5"], ["--load", "1.5"]),
    (["run", "rotornet", "--link-rate", "10Mbps"], ["--link-rate", "oversize"]),
    (["run", "rotornet", "--link-rate", "10 mbps"], ["--link-rate", "10Mbps"]),
    (["run", "rotornet", "--link-rate", "10GBps"], ["--link-rate", "80Gbps"]),
    (["run", "rotornet", "--buffer", "1Mb"], ["--buffer", "1MB", "0.125MB"]),
    (["run", "rotornet", "--pattern", "zigzag"], ["--pattern", "zigzag"]),
    (["run", "rotornet", "--routing", "ecmp"], ["--routing", "ecmp"]),
    (["run", "rotornet", "--lookup", "table"], ["--lookup", "table"]),
    (["run", "clos", "--multipath", "flowlet"], ["--multipath", "flowlet"]),
    (["run", "clos", "--oversubscription", "0.5"], ["--oversubscription", "0.5"]),
    (["run", "rotornet", "--link-rate", "100GB"], ["--link-rate", "100GB"]),
    (["run", "rotornet", "--link-rate", "fast"], ["--link-rate", "fast"]),
    (["run", "rotornet", "--slice", "1us", "--guardband", "2us"], ["guardband", "2us"]),
    (["run", "rotornet", "--seed", "1x7"], ["--seed", "1x7"]),
    (["run", "rotornet", "--seed", "-1"], ["--seed", "-1"]),
    (["run", "rotornet", "--mice-threshold", "10xb"], ["--mice-threshold", "10xb"]),
    (["run", "rotornet", "--workload", "hadoopp"], ["--workload", "hadoopp"]),
    (["run", "rotornet", "--pattern", "all-to-all"], ["--flow-size"]),
    (["run", "rotornet", "--flow-size", "-5KB"], ["--flow-size", "-5KB"]),
    (["run", "rotornet", "--tables", "maybe"], ["maybe"]),
    (["bench", "--only", "nosuchscenario"], ["--only", "nosuchscenario"]),
    (["reproduce", "opera", "--quick", "--seed", "-1"], ["--seed", "-1"]),
    (["run", "clos", "--nodes", "20000", "--duration", "10us"], ["--nodes", "port slots", "20000"]),
    (["run", "opera", "--nodes", "20000", "--duration", "10us"], ["--nodes", "4..256", "20000"]),
    # the engines' state refused before it is allocated (it would abort the process)
    (["run", "negotiator", "--tors", "60000", "--predefined-slots", "7500", "--duration", "10us"],
     ["--tors", "60000", "per-pair state", "GB"]),
    (["run", "shale", "--nodes", "1000000", "--duration", "10us"], ["--nodes", "1000000", "GB"]),
    (["run", "hierarchical", "--nodes", "4096", "--duration", "10us"], ["--nodes", "4096", "paths", "GB"]),
    (["run", "trn", "--nodes", "100000", "--duration", "10us"], ["--nodes", "100000", "rotor configurations", "GB"]),
    (["reproduce", "opera", "--quick", "--duration", "0us"], ["--duration", "0us"]),
    (["reproduce", "opera", "--quick", "--slurm-time", "2h"], ["--slurm-time", "2h", "--executor slurm"]),
    (["reproduce", "opera", "--quick", "--executor", "slurm", "--slurm-mem", "10KB"], ["slurm.mem", "10KB", "100MB"]),
    (["bench", "--only", "clos", "--repeat", "0"], ["--repeat", "0"]),
    (["demo", "--duration", "10xs"], ["--duration", "10xs"]),
    (["demo", "--nodes", "1"], ["nodes", "1"]),
]


def _cli_args(args: list[str], out: Path) -> list[str]:
    if args[0] == "run" and "--nodes" not in args:
        args = args[:2] + ["--nodes", "4"] + args[2:]
    if args[0] == "run" and "--duration" not in args:
        args = args + ["--duration", "20us"]
    if args[0] in ("run", "demo"):
        args = args + ["--out", str(out)]
    return args


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory):
    """Every failing CLI invocation of this module, run concurrently (each is a fresh
    process); maps a case name to (CompletedProcess, the folder it ran in)."""
    base = tmp_path_factory.mktemp("cli")
    jobs: dict[str, tuple[list[str], Path]] = {}
    for name, text, _, _ in BAD_CDFS:
        folder = base / f"cdf-{name}"
        folder.mkdir()
        path = write(folder / f"{name}.cdf", text)
        jobs[f"cdf-{name}"] = (["run", "rotornet", "--nodes", "4", "--duration", "20us",
                                "--workload", str(path), "--out", str(folder / "out")], folder)
    for name, text, *_ in BAD_FLOWS:
        folder = base / f"flows-{name}"
        folder.mkdir()
        path = write(folder / f"{name}.csv", text)
        jobs[f"flows-{name}"] = (["run", "rotornet", "--nodes", "4", "--duration", "20us",
                                  "--flows-file", str(path), "--out", str(folder / "out")], folder)
    for i, (args, _) in enumerate(BAD_CLI):
        folder = base / f"opt-{i}"
        folder.mkdir()
        jobs[f"opt-{i}"] = (_cli_args(list(args), folder / "out"), folder)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {k: pool.submit(cli, *args, cwd=folder) for k, (args, folder) in jobs.items()}
        return {k: (f.result(), jobs[k][1]) for k, f in futures.items()}


@pytest.mark.parametrize("i", range(len(BAD_CLI)), ids=[" ".join(a) for a, _ in BAD_CLI])
def test_cli_bad_option(cli_results, i):
    proc, folder = cli_results[f"opt-{i}"]
    assert_usage_error(proc, *BAD_CLI[i][1])
    assert list(folder.iterdir()) == [], "a failed command left files behind"


# ---------------------------------------------------------------------------------------
# nothing half-written
# ---------------------------------------------------------------------------------------
def test_failing_run_after_simulation_leaves_no_out_dir(tmp_path):
    # the bad --mice-threshold is only needed when the summary is built, after the run
    out = tmp_path / "res"
    proc = cli("run", "rotornet", "--nodes", 4, "--duration", "50us", "--mice-threshold", "1xB",
               "--out", out)
    assert_usage_error(proc, "--mice-threshold", "1xB")
    assert list(tmp_path.iterdir()) == []


def test_failing_run_keeps_previous_results_untouched(tmp_path):
    out = tmp_path / "res"
    ok = cli("run", "rotornet", "--nodes", 4, "--duration", "50us", "--out", out)
    assert ok.returncode == 0, ok.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(before) == RESULT_FILES
    bad = write(tmp_path / "bad.csv", "0us,0,9,1000\n")
    proc = cli("run", "rotornet", "--nodes", 4, "--duration", "50us", "--flows-file", bad,
               "--out", out, "--force")
    assert_usage_error(proc, str(bad), "9")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "res"]


def test_out_over_an_earlier_run_is_refused_unless_forced(tmp_path):
    out = tmp_path / "res"
    assert cli("run", "rotornet", "--nodes", 4, "--duration", "50us", "--out", out).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    proc = cli("run", "rotornet", "--nodes", 4, "--duration", "60us", "--out", out)
    assert_usage_error(proc, "--out", "--force")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    again = cli("run", "rotornet", "--nodes", 4, "--duration", "60us", "--out", out, "--force")
    assert again.returncode == 0, again.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} != before


def test_out_path_that_is_a_file_is_a_usage_error(tmp_path):
    target = write(tmp_path / "notadir", "keep me\n")
    proc = cli("run", "rotornet", "--nodes", 4, "--duration", "20us", "--out", target)
    assert_usage_error(proc, "--out", str(target))
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notadir"]


def test_summary_json_path_under_a_file_is_a_usage_error(tmp_path):
    blocker = write(tmp_path / "blocker", "x")
    proc = cli("run", "rotornet", "--nodes", 4, "--duration", "20us",
               "--summary-json", blocker / "s.json")
    assert_usage_error(proc, "--summary-json", str(blocker / "s.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]


def test_successful_run_writes_every_result_file(tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "res"
    proc = cli("run", "rotornet", "--nodes", 4, "--duration", "100us", "--seed", 3,
               "--out", out, "--summary-json", "-")
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == RESULT_FILES
    assert [p.name for p in tmp_path.iterdir()] == ["res"]          # no scratch dirs left
    printed = json.loads(proc.stdout)
    assert json.loads((out / "summary.json").read_text()) == printed
    spec = json.loads((out / "spec.json").read_text())
    assert spec["seed"] == 3 and spec["duration_ps"] == 100 * US
    flows = pq.read_table(out / "flows.parquet")
    assert flows.num_rows == printed["flows"]["started"]
    for col in ("flow_id", "src", "dst", "size_bytes", "start_ps", "finish_ps", "fct_ps",
                "ideal_fct_ps", "slowdown", "completed"):
        assert col in flows.column_names
    assert sum(flows["completed"].to_pylist()) == printed["flows"]["completed"]
    ts = pq.read_table(out / "timeseries.parquet")
    assert ts.num_rows > 0 and "tx_bytes" in ts.column_names


def test_api_run_with_bad_input_writes_nothing(tmp_path):
    net = tiny_rotor()
    net.deploy_routing("direct")
    out = tmp_path / "res"
    with pytest.raises(ConfigError):
        net.run(od.workload.flows([("0us", 0, 7, 1000)]), duration="20us", out=out)
    assert list(tmp_path.iterdir()) == []
    r = net.run(od.workload.flows([("0us", 0, 3, 1000)]), duration="20us", out=out)
    assert {p.name for p in out.iterdir()} == RESULT_FILES
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(r.summary))


# ---------------------------------------------------------------------------------------
# the engine module: one error type for every engine
# ---------------------------------------------------------------------------------------

MISSING = "missing", "required spec field"


@pytest.mark.parametrize("call, args", [
    (lambda: _core.Simulator({}), ("port_offset", *MISSING)),
    (lambda: _core.ShaleSimulator({}), ("cc", *MISSING)),
    (lambda: _core.NegotiatorSim({}), ("variant", *MISSING)),
    (lambda: _core.SiriusSim({}), ("tors", *MISSING)),
    (lambda: _core.ShaleSimulator({"cc": 3}), ("cc", "3", "wrong type")),
    (lambda: _core.shale_peers(16, 0, 4),
     ("h", "0", "the schedule dimension must be 1..4 (2-bit remaining-sprays header field)")),
    (lambda: _core.shale_peers(10, 2, 4), ("nodes", "10", "must be a perfect 2-th power for h = 2")),
    (lambda: _core.negotiator_match(4, 1, "ring", 0, []), ("topology", "ring", "expected parallel or thin-clos")),
], ids=["Simulator", "ShaleSimulator", "NegotiatorSim", "SiriusSim", "ShaleSimulator-cc-type",
        "shale_peers-h", "shale_peers-nodes", "negotiator_match"])
def test_every_engine_raises_engine_spec_error(call, args):
    with pytest.raises(_core.EngineSpecError) as e:
        call()
    assert type(e.value) is _core.EngineSpecError and e.value.args == args


def test_an_unknown_flag_without_a_value_shows_no_made_up_value(tmp_path):
    """``--json`` (not an option) is named; there is no value to show, so none is."""
    p = subprocess.run([sys.executable, "-m", "opendcn", "run", "rotornet", "--nodes", "4", "--duration", "20us",
                        "--json", "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert p.returncode == 2
    assert "--json: unknown option of rotornet" in p.stderr and "None" not in p.stderr
    assert str(ConfigError("--x", NO_VALUE, "missing value")) == "--x: missing value"
    assert str(ConfigError("x", None, "bad")) == "x: bad (got None)"
    assert not (tmp_path / "o").exists()


def test_a_slice_that_cannot_carry_one_packet_is_refused_before_the_run():
    """10 Mb/s over a 1.8-us slice carries 2 B: every packet would be dropped as oversize,
    so the network is refused by name instead of delivering nothing."""
    with pytest.raises(ConfigError, match="oversize") as e:
        od.arch.get("rotornet").make(nodes=8, link_rate="10Mbps")
    assert e.value.field in ("link_rate", "--link-rate")
    od.arch.get("rotornet").make(nodes=8, link_rate="10Gbps")       # 2 250 B per slice: fine


@pytest.mark.parametrize("opts, field", [
    ({"link_rate": "1Kbps"}, "link_rate"),                            # a slice that carries no byte at all
    ({"slice": "201ns", "guardband": "200ns"}, "guardband"),          # up 1 ns: 12 B at 100 Gb/s
    ({"mtu": "100KB"}, "mtu"),                                       # 22 500 B per slice, packets of 100 KB
])
def test_a_slice_too_short_for_a_packet_names_the_setting_that_makes_it_so(opts, field):
    with pytest.raises(ConfigError, match="less than one packet") as e:
        od.arch.get("rotornet").make(nodes=8, **opts)
    assert e.value.field.lstrip("-").replace("-", "_") == field
    assert ("10Mbps is 10^7" in str(e.value)) == (field == "link_rate")


def test_a_schedule_the_memory_cannot_hold_is_a_named_error_before_it_is_built(monkeypatch):
    from opendcn import errors
    from opendcn.fabrics import topology

    monkeypatch.setattr(errors, "available_memory", lambda: 100_000_000)
    with pytest.raises(od.ConfigError, match=r"needs about [\d.]+ GB, more than the 0.1 GB") as e:
        topology.round_robin(2000)
    assert e.value.field == "nodes" and e.value.value == 2000
    assert len(topology.round_robin(100)) == 99 * 50       # a small one is built


def test_cli_nodes_beyond_memory_exits_2_at_once():
    import time

    t0 = time.perf_counter()
    proc = cli("run", "rotornet", "--nodes", 200_000, "--duration", "1us")
    assert_usage_error(proc, "--nodes", "200000", "GB")
    assert time.perf_counter() - t0 < 30


def test_ctrl_c_stops_a_long_run_within_a_second_and_says_nothing_was_written(tmp_path):
    """SIGINT during a run: exit 130 within about a second (the engine runs in calls of
    about 0.2 s of wall time), naming how far it got and that --out holds nothing."""
    import signal
    import time

    out = tmp_path / "partial"
    # (a pytest-xdist worker ignores SIGINT and a child would inherit that: restore it)
    p = subprocess.Popen([sys.executable, "-m", "opendcn", "run", "rotornet", "--nodes", "64", "--uplinks", "4",
                          "--duration", "1s", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4)
    assert p.poll() is None, "the run ended before it could be interrupted"
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    _, errtext = p.communicate(timeout=60)
    assert time.perf_counter() - t0 < 2.0
    assert p.returncode == 130 and "Traceback" not in errtext
    assert "interrupted" in errtext and "nothing was written" in errtext   # "at T of D" once the run began
    assert not out.exists()


def test_demo_refuses_a_folder_that_holds_a_runs_results(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    p = subprocess.run([sys.executable, "-m", "opendcn", "demo", "--out", str(tmp_path), "--duration", "10us"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "--out" in p.stderr and "--force" in p.stderr and "Traceback" not in p.stderr
    assert (tmp_path / "summary.json").read_text() == "{}"


def test_ctrl_c_stops_a_reproduction_and_says_where_its_points_are(tmp_path):
    from conftest import interrupt_after

    out = tmp_path / "rq"
    p, err, took = interrupt_after(["reproduce", "negotiator", "--quick", "--out", str(out)], 5, "reproduction")
    assert took < 10.0
    assert p.returncode == 130 and "Traceback" not in err
    assert f"kept under {out}/runs" in err and "resume" in err
