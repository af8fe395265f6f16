"""Tests of opendcn.workload (flow-size CDFs, traffic generators, explicit flows) and
opendcn.rng (named random streams)."""

from __future__ import annotations

import hashlib
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from opendcn import rng as odrng
from opendcn import workload as wl
from opendcn.errors import ConfigError
import opendcn as od

G = 10**9
US = 10**6
MS = 10**9
S = 10**12


def gen(workload, *, nodes=16, hosts_per_node=0, rate_bps=100 * G, duration_ps=MS, seed=1):
    endpoints = nodes * max(1, hosts_per_node)
    return workload.generate(endpoints=endpoints, hosts_per_node=hosts_per_node,
                             rate_bps=rate_bps, nodes=nodes, duration_ps=duration_ps,
                             seed=seed)


def node_of(ep, hosts_per_node):
    return ep // max(1, hosts_per_node)


def empirical_load(fl, rate_bps, nodes, duration_ps):
    return fl.total_bytes * 8 / (rate_bps * nodes * duration_ps / S)


def assert_config_error(excinfo, *parts):
    msg = str(excinfo.value)
    for part in parts:
        assert str(part) in msg, f"{part!r} not in {msg!r}"


# --------------------------------------------------------------------------- shipped CDFs

_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def _parse_size(text):
    num, unit = text.split()
    return float(num) * _UNITS[unit]


def _sources_table():
    """file -> (lin mean, step mean) from the shipped SOURCES.md summary table."""
    text = (wl.DATA_DIR / "SOURCES.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| (\S+\.cdf) \|", line)
        if not m:
            continue
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) == 10:
            rows[cols[0]] = (_parse_size(cols[3]), _parse_size(cols[4]))
    return rows


NAMES = [d["name"] for d in wl.list_workloads()]


def test_required_named_workloads_and_their_files():
    info = {d["name"]: d for d in wl.list_workloads()}
    expected = {
        "hadoop": ("fb_hadoop_hpcc.cdf", "lin"),
        "websearch": ("websearch_pfabric.cdf", "lin"),
        "datamining": ("datamining_pfabric.cdf", "lin"),
        "google": ("homa_w3_google_allrpc.cdf", "step"),
        "keyvalue": ("homa_w1_fb_keyvalue.cdf", "step"),
        "imc10": ("imc10_aditya_phost.cdf", "lin"),
    }
    for name, (file, reading) in expected.items():
        assert info[name]["file"] == file
        assert info[name]["reading"] == reading
    for d in info.values():
        assert set(d) >= {"name", "description", "mean_bytes", "max_bytes", "reading", "file"}
        assert (wl.DATA_DIR / d["file"]).is_file()
        assert d["description"]
        assert 0 < d["mean_bytes"] <= d["max_bytes"]


@pytest.mark.parametrize("name", NAMES)
def test_named_cdf_mean_matches_sources_table(name):
    table = _sources_table()
    cdf = wl.get_cdf(name)
    file = Path(cdf.source).name
    assert file in table, f"{file} missing from shipped SOURCES.md summary table"
    lin_mean, step_mean = table[file]
    expected = lin_mean if cdf.reading == "lin" else step_mean
    assert cdf.mean == pytest.approx(expected, rel=0.005)
    other = cdf.with_reading("step" if cdf.reading == "lin" else "lin")
    expected_other = step_mean if cdf.reading == "lin" else lin_mean
    assert other.mean == pytest.approx(expected_other, rel=0.005)
    assert cdf.probs[-1] == 1.0


def test_sources_md_documents_every_shipped_file():
    table = _sources_table()
    shipped = {p.name for p in wl.DATA_DIR.glob("*.cdf")}
    assert shipped == set(table)
    text = (wl.DATA_DIR / "SOURCES.md").read_text(encoding="utf-8")
    for name in NAMES:
        assert f"`{name}`" in text


def _second_moment(cdf):
    s, p = cdf.sizes, cdf.probs
    m2 = p[0] * s[0] ** 2
    for i in range(1, len(s)):
        w = p[i] - p[i - 1]
        if cdf.reading == "step":
            m2 += w * s[i] ** 2
        else:
            a, b = s[i - 1], s[i]
            m2 += w * (a * a + a * b + b * b) / 3
    return m2


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("reading", ["native", "other"])
def test_sampled_mean_converges_to_cdf_mean(name, reading):
    cdf = wl.get_cdf(name)
    if reading == "other":
        cdf = cdf.with_reading("step" if cdf.reading == "lin" else "lin")
    n = 1_000_000
    x = cdf.sample(odrng.stream(7, "test.sizes"), n)
    assert x.dtype == np.int64 and x.shape == (n,)
    assert x.min() >= 1 and x.max() <= cdf.max_bytes
    sd = math.sqrt(max(_second_moment(cdf) - cdf.mean**2, 0.0))
    assert abs(x.mean() - cdf.mean) <= 5 * sd / math.sqrt(n) + 1e-6 * cdf.mean


@pytest.mark.parametrize("name", ["google", "keyvalue", "hadoop", "websearch", "imc10"])
def test_step_sampling_returns_only_listed_sizes(name):
    cdf = wl.get_cdf(name, reading="step")
    x = cdf.sample(odrng.stream(3, "test.sizes"), 200_000)
    listed = set(np.maximum(1, np.rint(cdf.sizes)).astype(np.int64).tolist())
    assert set(np.unique(x).tolist()) <= listed
    # sizes with zero probability mass are never drawn
    masses = np.diff(np.concatenate([[0.0], cdf.probs]))
    never = {int(s) for s in cdf.sizes if masses[cdf.sizes == s].sum() == 0}
    assert not (set(np.unique(x).tolist()) & never)


def test_lin_sampling_interpolates_and_keeps_point_masses():
    cdf = wl.get_cdf("websearch")  # 15 % point mass at 8760 B, then linear segments
    x = cdf.sample(odrng.stream(3, "test.sizes"), 400_000)
    assert np.mean(x == 8760) == pytest.approx(0.15, abs=0.005)
    assert x.min() == 8760
    assert len(np.unique(x)) > 1000  # interpolated values, not just the 12 listed sizes
    # 5 % of flows fall between 8760 B and 18980 B (second segment), uniformly
    seg = x[(x > 8760) & (x <= 18980)]
    assert len(seg) / len(x) == pytest.approx(0.05, abs=0.003)
    assert seg.mean() == pytest.approx((8760 + 18980) / 2, rel=0.01)


@pytest.mark.parametrize("text, reading, mean", [
    ("100 0\n100 0.5\n200 1\n", "lin", 0.5 * 100 + 0.5 * 150),
    ("100 0\n100 0.5\n200 1\n", "step", 0.5 * 100 + 0.5 * 200),
    ("100 0.25\n200 1\n", "lin", 0.25 * 100 + 0.75 * 150),
    ("100 0.25\n200 1\n", "step", 0.25 * 100 + 0.75 * 200),
    # linear ramp from 0 B: values below 0.5 round to 0 and become 1 byte
    ("0 0\n1 1\n", "lin", 1.0),
    ("0 0\n4 1\n", "lin", (0.5 * 1 + 1 * 1 + 1 * 2 + 1 * 3 + 0.5 * 4) / 4),
])
def test_cdf_mean_is_exact(tmp_path, text, reading, mean):
    f = tmp_path / "t.cdf"
    f.write_text(text)
    cdf = wl.get_cdf(str(f), reading=reading)
    assert cdf.mean == pytest.approx(mean, rel=1e-12)
    x = cdf.sample(odrng.stream(1, "test"), 400_000)
    assert x.mean() == pytest.approx(mean, rel=0.01)


def test_cdf_file_allows_comments_and_blank_lines(tmp_path):
    f = tmp_path / "mine.cdf"
    f.write_text("# my distribution\n\n1000 0   # first\n\n2000 0.5\n4000 1.0\n")
    cdf = wl.get_cdf(str(f))
    assert cdf.reading == "lin" and cdf.name == "mine"
    assert list(cdf.sizes) == [1000, 2000, 4000]
    assert wl.get_cdf(f).mean == cdf.mean  # PathLike works too
    assert cdf.mean == pytest.approx(0.5 * 1500 + 0.5 * 3000)


def test_get_cdf_names_are_case_and_separator_insensitive():
    assert wl.get_cdf("Hadoop").name == "hadoop"
    assert wl.get_cdf("websearch_homa").name == "websearch-homa"
    assert wl.get_cdf("aditya").name == "imc10"
    cdf = wl.get_cdf("hadoop")
    assert wl.get_cdf(cdf) is cdf


def test_unknown_workload_name():
    with pytest.raises(ConfigError) as e:
        wl.get_cdf("hadop")
    assert e.value.field == "workload"
    assert_config_error(e, "workload", "hadop", "unknown workload", "hadoop", "websearch")
    with pytest.raises(ConfigError) as e:
        wl.poisson("nonexistent/file.cdf", 0.3)
    assert_config_error(e, "workload", "nonexistent/file.cdf")


@pytest.mark.parametrize("text, line, value, reason", [
    ("100 0\n200 0.6\n300 0.5\n400 1\n", 3, "0.5", "probabilities decrease"),
    ("100 0\n-200 0.5\n300 1\n", 2, "-200", "negative size"),
    ("100 0\nabc 0.5\n300 1\n", 2, "abc 0.5", "not a number"),
    ("100 0\n200 0.5\n300 0.9\n", 3, "0.9", "last cumulative probability"),
    ("100 0\n300 0.5\n200 1\n", 3, "200", "sizes decrease"),
    ("100 0\n200 1.5\n", 2, "1.5", "outside [0, 1]"),
    ("100 -0.1\n200 1\n", 1, "-0.1", "outside [0, 1]"),
    ("# only one row\n100 1\n", 2, "1", "at least 2 rows"),
    ("100 0\n200 0.5 7\n300 1\n", 2, "200 0.5 7", "expected 2 columns"),
    ("100 0\n200 nan\n300 1\n", 2, "200 nan", "finite"),
])
def test_malformed_cdf_files(tmp_path, text, line, value, reason):
    f = tmp_path / "bad.cdf"
    f.write_text(text)
    with pytest.raises(ConfigError) as e:
        wl.get_cdf(str(f))
    assert e.value.field == f"{f}:{line}"
    assert_config_error(e, "bad.cdf", f":{line}", value, reason)


def test_cdf_constructor_validation():
    with pytest.raises(ConfigError):
        wl.CDF([1, 2], [0.5, 0.4])
    with pytest.raises(ConfigError) as e:
        wl.CDF([1, 2], [0, 1], reading="cubic")
    assert_config_error(e, "reading", "cubic")
    cdf = wl.CDF([10, 20], [0, 1], reading="step", name="tiny")
    assert cdf.mean == 20 and cdf.name == "tiny"


def test_sample_count_validation():
    with pytest.raises(ConfigError):
        wl.get_cdf("hadoop").sample(odrng.stream(1, "x"), -1)
    assert len(wl.get_cdf("hadoop").sample(odrng.stream(1, "x"), 0)) == 0


# --------------------------------------------------------------------------- rng


def test_streams_are_deterministic_and_distinct():
    a = odrng.stream(5, "traffic.sizes").random(8)
    assert np.array_equal(a, odrng.stream(5, "traffic.sizes").random(8))
    assert not np.array_equal(a, odrng.stream(6, "traffic.sizes").random(8))
    assert not np.array_equal(a, odrng.stream(5, "traffic.arrivals").random(8))
    assert np.array_equal(odrng.stream(2**70, "x").random(3), odrng.stream(2**70, "x").random(3))


def test_streams_are_independent():
    # Draws on one stream never change another stream's numbers.
    b1 = odrng.stream(1, "b").random(5)
    a = odrng.stream(1, "a")
    a.random(1000)
    b2 = odrng.stream(1, "b").random(5)
    assert np.array_equal(b1, b2)


@pytest.mark.parametrize("seed", [-1, 1.5, "1", True])
def test_stream_seed_validation(seed):
    with pytest.raises(ConfigError) as e:
        odrng.stream(seed, "x")
    assert_config_error(e, "seed")


def _digest(fl):
    h = hashlib.sha256()
    for arr in (fl.start_ps, fl.src, fl.dst, fl.size):
        h.update(arr.tobytes())
    return h.hexdigest()


def test_generation_is_deterministic_across_processes():
    fl = gen(wl.poisson("hadoop", 0.5, "permutation"), hosts_per_node=2, seed=42)
    code = (
        "import hashlib\n"
        "from opendcn import workload as wl\n"
        "fl = wl.poisson('hadoop', 0.5, 'permutation').generate(endpoints=32,"
        " hosts_per_node=2, rate_bps=100*10**9, nodes=16, duration_ps=10**9, seed=42)\n"
        "h = hashlib.sha256()\n"
        "for a in (fl.start_ps, fl.src, fl.dst, fl.size): h.update(a.tobytes())\n"
        "print(h.hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == _digest(fl)


# --------------------------------------------------------------------------- generators


def _check_common(fl, endpoints, duration_ps):
    assert fl.start_ps.dtype == np.uint64
    assert fl.src.dtype == fl.dst.dtype == fl.size.dtype == np.int64
    assert len(fl) == len(fl.src) == len(fl.dst) == len(fl.size)
    assert np.all(np.diff(fl.start_ps.astype(np.int64)) >= 0)
    assert len(fl) == 0 or int(fl.start_ps.max()) < duration_ps
    assert np.all(fl.size > 0)
    fl.validate(endpoints)


@pytest.mark.parametrize("pattern", ["uniform", "permutation"])
@pytest.mark.parametrize("name, load, hpn", [
    ("hadoop", 0.3, 0), ("hadoop", 0.8, 4), ("google", 0.5, 0), ("websearch", 0.4, 2),
])
def test_poisson_empirical_load(pattern, name, load, hpn):
    nodes, rate = 16, 100 * G
    cdf = wl.get_cdf(name)
    # long enough for ~1e6 flows (enough for the heavy-tailed tables to average out)
    rate_flows = load * rate * nodes / (8 * cdf.mean)
    duration = int(1_000_000 / rate_flows * S)
    fl = gen(wl.poisson(name, load, pattern), nodes=nodes, hosts_per_node=hpn,
             rate_bps=rate, duration_ps=duration)
    _check_common(fl, nodes * max(1, hpn), duration)
    assert len(fl) == pytest.approx(1_000_000, rel=0.005)
    assert empirical_load(fl, rate, nodes, duration) == pytest.approx(load, rel=0.03)


def test_poisson_interarrivals_are_exponential():
    fl = gen(wl.poisson("keyvalue", 0.2), duration_ps=MS)
    gaps = np.diff(fl.start_ps.astype(np.float64))
    expected_gap = S / (0.2 * 100 * G * 16 / (8 * wl.get_cdf("keyvalue").mean))
    assert gaps.mean() == pytest.approx(expected_gap, rel=0.01)
    assert np.std(gaps) / gaps.mean() == pytest.approx(1.0, abs=0.02)  # CV of exponential


@pytest.mark.parametrize("hpn", [0, 1, 4])
def test_uniform_never_same_node_and_covers_all(hpn):
    nodes = 8
    fl = gen(wl.poisson("keyvalue", 0.3, "uniform"), nodes=nodes, hosts_per_node=hpn,
             duration_ps=MS // 10)
    e = nodes * max(1, hpn)
    _check_common(fl, e, MS // 10)
    assert np.all(node_of(fl.src, hpn) != node_of(fl.dst, hpn))
    assert set(np.unique(fl.src)) == set(range(e))
    assert set(np.unique(fl.dst)) == set(range(e))
    # destination node is uniform over the other nodes
    rel = (node_of(fl.dst, hpn) - node_of(fl.src, hpn)) % nodes
    counts = np.bincount(rel, minlength=nodes)
    assert counts[0] == 0
    assert counts[1:].min() / counts[1:].max() > 0.9


@pytest.mark.parametrize("nodes, hpn", [(2, 0), (3, 0), (16, 0), (8, 4)])
def test_permutation_is_a_node_derangement(nodes, hpn):
    fl = gen(wl.poisson("keyvalue", 0.5, "permutation"), nodes=nodes, hosts_per_node=hpn,
             duration_ps=MS // 10)
    _check_common(fl, nodes * max(1, hpn), MS // 10)
    sn, dn = node_of(fl.src, hpn), node_of(fl.dst, hpn)
    mapping = {}
    for s, d in zip(sn.tolist(), dn.tolist()):
        mapping.setdefault(s, set()).add(d)
    assert set(mapping) == set(range(nodes))
    assert all(len(v) == 1 for v in mapping.values())
    targets = [next(iter(v)) for v in mapping.values()]
    assert sorted(targets) == list(range(nodes))  # a permutation
    assert all(s != next(iter(d)) for s, d in mapping.items())  # without fixed points
    if hpn > 1:  # all hosts of the target node are used
        assert set(np.unique(fl.dst % hpn)) == set(range(hpn))


def test_permutation_depends_on_seed():
    maps = set()
    for seed in range(6):
        fl = gen(wl.poisson("keyvalue", 0.5, "permutation"), seed=seed, duration_ps=MS // 100)
        m = {}
        for s, d in zip(fl.src.tolist(), fl.dst.tolist()):
            m[s] = d
        maps.add(tuple(sorted(m.items())))
    assert len(maps) > 1


@pytest.mark.parametrize("nodes, hpn, degree", [(16, 0, 5), (8, 4, 20), (4, 0, 3), (6, 2, 10),
                                                (64, 0, 50)])
def test_incast_events(nodes, hpn, degree):
    load, rate, duration = 0.3, 100 * G, 10 * MS
    w = wl.poisson(None, load, "incast", incast_degree=degree, incast_size="4KB")
    fl = gen(w, nodes=nodes, hosts_per_node=hpn, rate_bps=rate, duration_ps=duration)
    _check_common(fl, nodes * max(1, hpn), duration)
    assert np.all(fl.size == 4000)
    assert len(fl) % degree == 0
    starts, idx, counts = np.unique(fl.start_ps, return_index=True, return_counts=True)
    assert np.all(counts == degree)
    for i in idx[:500]:
        ev = slice(i, i + degree)
        assert len(set(fl.dst[ev].tolist())) == 1
        assert len(set(fl.src[ev].tolist())) == degree
        rnode = node_of(fl.dst[i], hpn)
        assert np.all(node_of(fl.src[ev], hpn) != rnode)
    assert empirical_load(fl, rate, nodes, duration) == pytest.approx(load, rel=0.05)


def test_incast_degree_equal_to_all_other_endpoints():
    w = wl.poisson(None, 0.2, "incast", incast_degree=15, incast_size="1KB")
    fl = gen(w, nodes=16, duration_ps=MS // 10)
    assert len(fl) > 0
    for i in range(0, len(fl), 15):
        assert sorted(fl.src[i:i + 15].tolist() + [int(fl.dst[i])]) == list(range(16))


@pytest.mark.parametrize("nodes, hpn", [(8, 0), (4, 3), (5, 1)])
def test_all_to_all(nodes, hpn):
    h = max(1, hpn)
    e = nodes * h
    w = wl.poisson(None, 1.0, "all-to-all", flow_size="10KB", start="2us")
    fl = gen(w, nodes=nodes, hosts_per_node=hpn)
    _check_common(fl, e, MS)
    assert len(fl) == e * (e - h)
    assert np.all(fl.start_ps == 2 * US)
    assert np.all(fl.size == 10_000)
    pairs = set(zip(fl.src.tolist(), fl.dst.tolist()))
    assert len(pairs) == len(fl)
    assert np.all(node_of(fl.src, hpn) != node_of(fl.dst, hpn))
    # starting after the end of the run yields nothing
    late = wl.poisson(None, 1.0, "all-to-all", flow_size=1000, start="2ms")
    assert len(gen(late, nodes=nodes, hosts_per_node=hpn)) == 0


def test_poisson_start_offset():
    fl = gen(wl.poisson("keyvalue", 0.3, start="500us"), duration_ps=MS)
    assert int(fl.start_ps.min()) >= 500 * US
    assert empirical_load(fl, 100 * G, 16, MS - 500 * US) == pytest.approx(0.3, rel=0.03)


def test_fixed_flow_size_instead_of_cdf():
    fl = gen(wl.poisson(None, 0.4, flow_size="100KB"), duration_ps=10 * MS)
    assert np.all(fl.size == 100_000)
    assert empirical_load(fl, 100 * G, 16, 10 * MS) == pytest.approx(0.4, rel=0.03)


def test_cdf_argument_forms(tmp_path):
    f = tmp_path / "x.cdf"
    f.write_text("1000 0\n1000 1\n")
    a = gen(wl.poisson(str(f), 0.3))
    b = gen(wl.poisson(f, 0.3))
    c = gen(wl.poisson(wl.get_cdf(str(f)), 0.3))
    assert _digest(a) == _digest(b) == _digest(c)
    assert np.all(a.size == 1000)


def test_same_seed_same_flows_different_seed_different():
    w = wl.poisson("hadoop", 0.5, "uniform")
    a, b = gen(w, seed=3), gen(w, seed=3)
    for x, y in ((a.start_ps, b.start_ps), (a.src, b.src), (a.dst, b.dst), (a.size, b.size)):
        assert np.array_equal(x, y)
    c = gen(w, seed=4)
    assert _digest(a) != _digest(c)
    assert not np.array_equal(a.start_ps[:100], c.start_ps[:100])


def test_size_stream_does_not_affect_arrivals_or_pairs(tmp_path):
    # Same mean (2000 B) either way: arrivals and endpoints must be identical, only the
    # sizes differ — they come from different named streams.
    f = tmp_path / "two.cdf"
    f.write_text("1000 0\n1000 0.5\n3000 1\n")
    a = gen(wl.poisson(wl.get_cdf(str(f), reading="step"), 0.4), hosts_per_node=2)
    b = gen(wl.poisson(None, 0.4, flow_size=2000), hosts_per_node=2)
    assert np.array_equal(a.start_ps, b.start_ps)
    assert np.array_equal(a.src, b.src) and np.array_equal(a.dst, b.dst)
    assert set(np.unique(a.size).tolist()) == {1000, 3000}


def _rows(fl):
    return list(zip(fl.start_ps.tolist(), fl.src.tolist(), fl.dst.tolist(), fl.size.tolist()))


def test_mix_merges_and_keeps_first_workload_unchanged():
    base = wl.poisson("hadoop", 0.3)
    inc = wl.poisson(None, 0.1, "incast", incast_degree=4)
    alone = gen(base, duration_ps=MS)
    inc_alone = gen(inc, duration_ps=MS)
    both = gen(wl.mix(base, inc), duration_ps=MS)
    assert np.all(np.diff(both.start_ps.astype(np.int64)) >= 0)
    # the first part keeps its streams: its flows are exactly the stand-alone ones
    rest = Counter(_rows(both))
    rest.subtract(Counter(_rows(alone)))
    assert min(rest.values()) >= 0
    extra = sorted(rest.elements())
    assert len(extra) == len(both) - len(alone) > 0
    assert len(extra) % 4 == 0 and all(r[3] == 1000 for r in extra)
    assert all(c == 4 for c in Counter(r[0] for r in extra).values())
    # the second part draws from its own streams, not those of a stand-alone run
    assert extra != sorted(_rows(inc_alone))
    assert _digest(gen(base + inc, duration_ps=MS)) == _digest(both)


def test_mix_is_stable_for_ties():
    a = wl.flows([("1us", 0, 1, 100), ("2us", 0, 1, 101)])
    b = wl.flows([("1us", 2, 3, 200), ("0us", 2, 3, 201)])
    fl = gen(wl.mix(a, b), nodes=4)
    assert fl.size.tolist() == [201, 100, 200, 101]


def test_generation_speed():
    w = wl.poisson("hadoop", 0.5, "uniform")
    nodes, rate = 64, 100 * G
    duration = int(1_000_000 / (0.5 * rate * nodes / (8 * wl.get_cdf("hadoop").mean)) * S)
    gen(w, nodes=nodes, rate_bps=rate, duration_ps=duration // 100)  # warm-up
    t = time.perf_counter()
    fl = gen(w, nodes=nodes, rate_bps=rate, duration_ps=duration)
    elapsed = time.perf_counter() - t
    assert len(fl) == pytest.approx(1_000_000, rel=0.01)
    assert elapsed < 1.5, f"1e6 flows took {elapsed:.2f}s"


@pytest.mark.parametrize("kwargs, field, value", [
    (dict(cdf="hadoop", load=0), "load", "0"),
    (dict(cdf="hadoop", load=-0.5), "load", "-0.5"),
    (dict(cdf="hadoop", load=10.5), "load", "10.5"),
    (dict(cdf="hadoop", load=float("nan")), "load", "nan"),
    (dict(cdf="hadoop", load="0.3"), "load", "0.3"),
    (dict(cdf="hadoop", load=True), "load", "True"),
    (dict(cdf="hadoop", load=0.3, pattern="ring"), "pattern", "ring"),
    (dict(cdf=None, load=0.3, pattern="incast", incast_degree=0), "incast_degree", "0"),
    (dict(cdf=None, load=0.3, pattern="incast", incast_degree=2.5), "incast_degree", "2.5"),
    (dict(cdf=None, load=0.3, pattern="incast", incast_size="0B"), "incast_size", "0B"),
    (dict(cdf=None, load=0.3, pattern="incast", incast_size="-1KB"), "incast_size", "-1KB"),
    (dict(cdf=None, load=0.3, pattern="all-to-all"), "flow_size", "None"),
    (dict(cdf=None, load=0.3, pattern="all-to-all", flow_size=0), "flow_size", "0"),
    (dict(cdf=None, load=0.3, pattern="uniform"), "workload", "None"),
    (dict(cdf="hadoop", load=0.3, flow_size="1KB"), "flow_size", "1KB"),
    (dict(cdf="hadoop", load=0.3, start="5 parsecs"), "start", "5 parsecs"),
])
def test_poisson_validation(kwargs, field, value):
    cdf = kwargs.pop("cdf")
    load = kwargs.pop("load")
    with pytest.raises(ConfigError) as e:
        wl.poisson(cdf, load, **kwargs)
    assert e.value.field == field
    assert_config_error(e, field, value)


def test_incast_degree_too_large_for_network():
    w = wl.poisson(None, 0.3, "incast", incast_degree=16)
    with pytest.raises(ConfigError) as e:
        gen(w, nodes=16)
    assert_config_error(e, "incast_degree", "16", "15")
    # 4 nodes x 2 hosts: 6 endpoints on other nodes
    w = wl.poisson(None, 0.3, "incast", incast_degree=7)
    with pytest.raises(ConfigError):
        gen(w, nodes=4, hosts_per_node=2)


def test_all_to_all_ignores_load():
    w = wl.poisson(None, 0, "all-to-all", flow_size="1KB")
    assert len(gen(w, nodes=4)) == 12


def test_single_node_rejected():
    with pytest.raises(ConfigError) as e:
        gen(wl.poisson("hadoop", 0.3), nodes=1)
    assert_config_error(e, "nodes", "1")


@pytest.mark.parametrize("kwargs, field", [
    (dict(endpoints=15, hosts_per_node=0, rate_bps=G, nodes=16, duration_ps=MS, seed=1),
     "endpoints"),
    (dict(endpoints=16, hosts_per_node=-1, rate_bps=G, nodes=16, duration_ps=MS, seed=1),
     "hosts_per_node"),
    (dict(endpoints=16, hosts_per_node=0, rate_bps=0, nodes=16, duration_ps=MS, seed=1),
     "rate_bps"),
    (dict(endpoints=16, hosts_per_node=0, rate_bps=G, nodes=16, duration_ps=-1, seed=1),
     "duration_ps"),
    (dict(endpoints=16, hosts_per_node=0, rate_bps=G, nodes=16, duration_ps=MS, seed=-2),
     "seed"),
])
def test_generate_parameter_validation(kwargs, field):
    with pytest.raises(ConfigError) as e:
        wl.poisson("hadoop", 0.3).generate(**kwargs)
    assert e.value.field == field


def test_zero_duration_gives_no_flows():
    assert len(gen(wl.poisson("hadoop", 0.3), duration_ps=0)) == 0


# --------------------------------------------------------------------------- FlowArrays


def test_flowarrays_sorting_is_stable_and_dtypes():
    fl = wl.FlowArrays(np.array([5, 1, 5, 1]), [0, 1, 2, 3], [1, 2, 3, 0], [10, 20, 30, 40])
    assert fl.start_ps.tolist() == [1, 1, 5, 5]
    assert fl.size.tolist() == [20, 40, 10, 30]
    assert fl.start_ps.dtype == np.uint64 and fl.src.dtype == np.int64
    assert len(fl) == 4 and fl.total_bytes == 100
    assert not fl.size.flags.writeable
    with pytest.raises(AttributeError):
        fl.size = None  # frozen


def test_flowarrays_does_not_freeze_callers_arrays():
    size = np.array([10, 20], dtype=np.int64)
    wl.FlowArrays(np.array([0, 1], dtype=np.uint64), np.array([0, 1]), np.array([1, 0]), size)
    size[0] = 5  # still writeable


@pytest.mark.parametrize("src, dst, size, field, value", [
    ([0, 4], [1, 0], [1, 1], "flows.src", "4"),
    ([0, -1], [1, 0], [1, 1], "flows.src", "-1"),
    ([0, 1], [1, 7], [1, 1], "flows.dst", "7"),
    ([0, 2], [1, 2], [1, 1], "flows.dst", "src == dst"),
    ([0, 1], [1, 2], [1, 0], "flows.size", "0"),
    ([0, 1], [1, 2], [-3, 1], "flows.size", "-3"),
])
def test_flowarrays_validate(src, dst, size, field, value):
    fl = wl.FlowArrays(np.array([0, 1], dtype=np.uint64), src, dst, size)
    with pytest.raises(ConfigError) as e:
        fl.validate(4)
    assert e.value.field == field
    assert_config_error(e, field, value)


def test_flowarrays_length_mismatch():
    with pytest.raises(ConfigError):
        wl.FlowArrays(np.array([0], dtype=np.uint64), [0, 1], [1, 0], [1, 1])


# --------------------------------------------------------------------------- explicit flows


def test_flows_list():
    w = wl.flows([("5us", 1, 2, "64KB"), (0, 0, 3, 1000), ("5us", 3, 0, 1), ("2ms", 2, 1, 7)])
    fl = gen(w, nodes=4, duration_ps=MS)  # nothing dropped although 2ms > duration
    assert fl.start_ps.tolist() == [0, 5 * US, 5 * US, 2 * MS]
    assert fl.src.tolist() == [0, 1, 3, 2]
    assert fl.dst.tolist() == [3, 2, 0, 1]
    assert fl.size.tolist() == [1000, 64_000, 1, 7]
    assert len(gen(wl.flows([]), nodes=4)) == 0


@pytest.mark.parametrize("entries, field, value", [
    ([("5us", 0, 1, 10), ("5xs", 0, 1, 10)], "flows[1].start", "5xs"),
    ([("-5us", 0, 1, 10)], "flows[0].start", "-5us"),
    ([("5us", -1, 1, 10)], "flows[0].src", "-1"),
    ([("5us", 0, "x", 10)], "flows[0].dst", "x"),
    ([("5us", 0, 1, 10), ("5us", 0, 1, -10)], "flows[1].bytes", "-10"),
    ([("5us", 0, 1, 0)], "flows[0].bytes", "0"),
    ([("5us", 0, 1, "1 parsec")], "flows[0].bytes", "1 parsec"),
    ([("5us", 0, 1)], "flows[0]", "('5us', 0, 1)"),
    (["5us,0,1,10"], "flows[0]", "5us,0,1,10"),
])
def test_flows_list_validation(entries, field, value):
    with pytest.raises(ConfigError) as e:
        wl.flows(entries)
    assert e.value.field == field
    assert_config_error(e, field, value)


@pytest.mark.parametrize("entries, field, value", [
    ([("5us", 0, 1, 10), ("6us", 9, 1, 10)], "flows[1].src", "9"),
    ([("5us", 0, 4, 10)], "flows[0].dst", "4"),
    ([("5us", 2, 2, 10)], "flows[0].dst", "2"),
])
def test_flows_list_checked_against_network(entries, field, value):
    with pytest.raises(ConfigError) as e:
        gen(wl.flows(entries), nodes=4)
    assert e.value.field == field
    assert_config_error(e, field, value)


def test_from_file_csv(tmp_path):
    f = tmp_path / "flows.csv"
    f.write_text("start,src,dst,bytes\n"
                 "# a comment\n"
                 "5us,1,2,64KB\n"
                 "\n"
                 "1000, 0, 3, 1000   # integer start = picoseconds\n"
                 "1.5ns,3,0,1500\n")
    fl = gen(wl.from_file(f), nodes=4)
    assert fl.start_ps.tolist() == [1000, 1500, 5 * US]
    assert fl.src.tolist() == [0, 3, 1]
    assert fl.dst.tolist() == [3, 0, 2]
    assert fl.size.tolist() == [1000, 1500, 64_000]
    # header is optional
    g = tmp_path / "noheader.csv"
    g.write_text("0us,0,1,100\n")
    assert gen(wl.from_file(str(g)), nodes=2).size.tolist() == [100]


def test_from_file_htsim(tmp_path):
    f = tmp_path / "trace.htsim"
    f.write_text("62 66 560 182729\n585 596 400000 221013\n146 549 1870 247063\n"
                 "1 2 100 100\n7 8 10 0.5")  # no trailing newline, like Opera's cut files
    fl = gen(wl.from_file(f), nodes=108, hosts_per_node=6)
    assert fl.start_ps.tolist() == [500, 100_000, 182_729_000, 221_013_000, 247_063_000]
    assert fl.src.tolist() == [7, 1, 62, 585, 146]
    assert fl.dst.tolist() == [8, 2, 66, 596, 549]
    assert fl.size.tolist() == [10, 100, 560, 400_000, 1870]


@pytest.mark.parametrize("name, text, line, column, value", [
    ("f.csv", "0us,0,1,10\n5us,-1,2,10\n", 2, "src", "-1"),
    ("f.csv", "0us,0,x,10\n", 1, "dst", "x"),
    ("f.csv", "start,src,dst,bytes\n0us,0,1,-10\n", 2, "bytes", "-10"),
    ("f.csv", "0us,0,1,0\n", 1, "bytes", "0"),
    ("f.csv", "0us,0,1,10\n5xs,0,1,10\n", 2, "start", "5xs"),
    ("f.csv", "-5us,0,1,10\n", 1, "start", "-5us"),
    ("f.csv", "0us,0,1,ten\n", 1, "bytes", "ten"),
    ("f.csv", "0us,0,1\n", 1, "", "0us,0,1"),
    ("f.csv", "0us,0,1,10,3\n", 1, "", "0us,0,1,10,3"),
    ("f.htsim", "0 1 10 0\n0 1 10\n", 2, "", "0 1 10"),
    ("f.htsim", "0 1 -10 5\n", 1, "bytes", "-10"),
    ("f.htsim", "0 1 0 5\n", 1, "bytes", "0"),
    ("f.htsim", "0 -1 10 5\n", 1, "dst", "-1"),
    ("f.htsim", "0 1 10 5us\n", 1, "start_ns", "5us"),
    ("f.htsim", "0 1 10 0.0001\n", 1, "start_ns", "0.0001"),
    ("f.htsim", "0 1 1.5 3\n", 1, "bytes", "1.5"),
])
def test_from_file_malformed(tmp_path, name, text, line, column, value):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(ConfigError) as e:
        wl.from_file(f)
    expected_field = f"{f}:{line}" + (f" {column}" if column else "")
    assert e.value.field == expected_field
    assert_config_error(e, name, f":{line}", value)


@pytest.mark.parametrize("name, text, line, column, value", [
    ("f.csv", "0us,0,1,10\n1us,0,99,10\n", 2, "dst", "99"),
    ("f.csv", "0us,0,1,10\n\n1us,16,1,10\n", 3, "src", "16"),
    ("f.htsim", "3 3 10 0\n", 1, "dst", "3"),
])
def test_from_file_unknown_endpoint(tmp_path, name, text, line, column, value):
    f = tmp_path / name
    f.write_text(text)
    w = wl.from_file(f)
    with pytest.raises(ConfigError) as e:
        gen(w, nodes=16)
    assert e.value.field == f"{f}:{line} {column}"
    assert_config_error(e, name, f":{line}", value)


def test_from_file_missing():
    with pytest.raises(ConfigError) as e:
        wl.from_file("/nonexistent/flows.csv")
    assert_config_error(e, "flows-file", "/nonexistent/flows.csv")


# --------------------------------------------------------------------------- listings


def test_listings():
    assert set(wl.PATTERNS) >= {"uniform", "permutation", "incast", "all-to-all"}
    assert all(isinstance(v, str) and v for v in wl.PATTERNS.values())
    names = [d["name"] for d in wl.list_workloads()]
    assert len(names) == len(set(names))
    assert {"hadoop", "websearch", "datamining", "google", "keyvalue", "imc10"} <= set(names)


def test_htsim_connection_matrix_loads_with_its_picosecond_starts(tmp_path):
    """htsim's connection matrix (``Nodes`` / ``Connections`` / ``s->d id I start PS size
    B``), as its ConnectionMatrix::load reads it: start in picoseconds."""
    f = tmp_path / "flows.cm"
    f.write_text("# a comment\nNodes 8\nConnections 3\n0->5 id 1 start 0 size 100000\n"
                 "1->6 id 2 start 2000000 size 1500\n2->7 start 1000000.0 size 64000 prio 3\n")
    r = od.arch.rotornet(nodes=8).run(od.workload.from_file(f), duration="1ms")
    d = r.flows.to_pydict()
    got = sorted(zip(d["start_ps"], d["src"], d["dst"], d["size_bytes"]))
    assert got == [(0, 0, 5, 100000), (1_000_000, 2, 7, 64000), (2_000_000, 1, 6, 1500)]
    assert r.summary["flows"] == {"started": 3, "completed": 3}


@pytest.mark.parametrize("body,field", [
    ("Nodes 8\nConnections 2\n0->5 start 0 size 100\n", "Connections"),
    ("Nodes 8\nConnections 1\n0->9 start 0 size 100\n", "src->dst"),
    ("Nodes 8\nConnections 1\n0->5 start 0 size 0\n", "size"),
    ("Nodes 8\nConnections 1\n0->5 id 1 trigger 3 size 100\n", "trigger"),
    ("Nodes 8\nConnections 1\n0->5 start 1.5 size 100\n", "start"),
    ("Nodes 8\nConnections 1\n0->5 begin 0 size 100\n", "begin"),
    ("Nodes 8\nTriggers 1\nConnections 1\n0->5 start 0 size 100\n", ":2"),
])
def test_htsim_connection_matrix_errors_name_the_line_and_field(tmp_path, body, field):
    f = tmp_path / "bad.cm"
    f.write_text(body)
    with pytest.raises(od.ConfigError) as e:
        od.workload.from_file(f)
    assert field in e.value.field
