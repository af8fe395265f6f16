"""``opendcn reproduce opera``: the published data it compares with, the Figure-10 traffic it
generates, how it measures throughput, and the exact-size transport term it needs. (The
study itself runs Opera's 108 x 6 x 6 fabric: minutes, so it runs in ``reproduce``, not
here.)"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import opendcn as od
from opendcn import studies as reproduce
from opendcn.errors import ConfigError
from opendcn.studies.opera import (DATA, PUBLISHED_THROUGHPUT, downlink_utilisation, mix_trace, published_fct,
                                   window_throughput)
from opendcn.network.transport import parse_rule
from opendcn.workload import get_cdf

PUBLISHED_SHA256 = "b4c586f37705274630b16fb2af3b3c825ec164121c34c403a93c88ca571e1fca"


def test_published_output_is_the_shipped_file_and_covers_the_short_traces():
    raw = (DATA / "opera_sim_fct_dm10_first250ms.txt").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == PUBLISHED_SHA256
    pub = published_fct()
    assert len(pub) == 2524
    for trace in ("dm10_first50ms", "dm10_first250ms"):
        keys = []
        for line in (DATA / "traces" / f"{trace}.htsim").read_text().splitlines():
            a, b, size, start = (int(x) for x in line.split())
            keys.append((a, b, size, start))
        found = sum(k in pub for k in keys)
        # every flow of the trace that opera-sim finished (all but the bulk still running)
        assert found >= 0.99 * len(keys), (trace, found, len(keys))
    assert all(v > 0 for v in pub.values())
    assert sorted(PUBLISHED_THROUGHPUT.values(), reverse=True) == [PUBLISHED_THROUGHPUT[k]
                                                                  for k in sorted(PUBLISHED_THROUGHPUT)]


def _read(path):
    return np.array([[int(x) for x in ln.split()] for ln in path.read_text().splitlines()])


def test_mix_trace_is_the_figure_10_traffic(tmp_path):
    tors, hpr, load, warm, end, rate = 4, 2, 0.5, 10**9, 200 * 10**9, 10e9
    p = mix_trace(tmp_path, load, warm, end, rate, seed=1, tors=tors, hpr=hpr)
    f = _read(p)
    src, dst, size, start = f.T
    assert (src // hpr != dst // hpr).all()                      # inter-rack only
    shuffle = (size == 100_000) & (start == warm // 1000)
    hosts = tors * hpr
    assert shuffle.sum() >= hosts * (hosts - hpr)
    pairs = {(a, b) for a, b in zip(src[shuffle], dst[shuffle])}
    assert len(pairs) == hosts * (hosts - hpr)                   # every inter-rack pair once
    ll = ~shuffle
    offered = size[ll].sum() * 8 / (hosts * rate * end / 1e12)
    assert abs(offered / load - 1) < 0.3, offered
    # websearch sizes (Opera's table, sampled in steps)
    assert set(size[ll].tolist()) <= set(get_cdf("websearch-opera").sizes.astype(int).tolist()) | {100_000}
    # deterministic: same arguments, same file; another load, another file
    assert mix_trace(tmp_path, load, warm, end, rate, seed=1, tors=tors, hpr=hpr) == p
    assert mix_trace(tmp_path, 0.1, warm, end, rate, seed=1, tors=tors, hpr=hpr) != p


def test_window_throughput_is_what_the_hosts_received():
    net = od.arch.opera(nodes=8, uplinks=4, hosts_per_tor=2, sample_interval="10us")
    flows = [(0, s, (s + 4) % 16, 30_000) for s in range(16)]
    r = net.run(od.workload.flows(flows), duration="2ms")
    assert r.summary["bytes"]["delivered"] == 16 * 30_000
    thr = window_throughput(r.timeseries, 0, 2 * 10**9, 16, 10e9)
    assert thr == pytest.approx(16 * 30_000 * 8 / (16 * 10e9 * 2e-3))
    # nothing is received before the flows start
    assert window_throughput(r.timeseries, 2 * 10**9, 3 * 10**9, 16, 10e9) == 0


def test_downlink_utilisation_counts_every_byte_the_tors_send_their_hosts():
    """opera-sim's unit: data with its headers and the control packets to the senders, on
    the ToRs' host downlinks, read from the watched ports (uplinks excluded)."""
    down = ",".join(f"{t}:{4 + h}" for t in range(8) for h in range(2))
    net = od.arch.opera(nodes=8, uplinks=4, hosts_per_tor=2, sample_interval="10us", watch=down)
    flows = [(0, s, (s + 4) % 16, 30_000) for s in range(16)]
    r = net.run(od.workload.flows(flows), duration="2ms")
    pkts = 16 * -(-30_000 // 1436)
    util = downlink_utilisation(r.timeseries, 0, 2 * 10**9, 4, 16, 10e9)
    payload = window_throughput(r.timeseries, 0, 2 * 10**9, 16, 10e9)
    # the bytes the ToR-to-host links sent over the run, retransmissions and trimmed headers too
    sent = r.summary["link_classes"]["host"]["tx_bytes"]
    assert util == pytest.approx(sent * 8 / (16 * 10e9 * 2e-3), rel=1e-12)
    assert sent >= 16 * 30_000 + 64 * pkts and util > payload
    assert downlink_utilisation(r.timeseries, 0, 2 * 10**9, 6, 16, 10e9) == 0    # no such downlinks


def test_exact_size_transport_term():
    rule = parse_rule("rotorlb=100KB,ndp<30MB,rotorlb")
    assert rule.assign([100_000, 99_999, 100_001, 31_000_000]).tolist() == [5, 3, 3, 5]
    net = od.arch.opera(nodes=8, uplinks=4, hosts_per_tor=2, transport="rotorlb=100KB,ndp<30MB,rotorlb")
    r = net.run(od.workload.flows([(0, 0, 5, 100_000), (0, 1, 6, 99_999), (0, 2, 9, 100_001)]), duration="5ms")
    d = r.flows.to_pydict()
    assert d["transport"] == ["rotorlb", "ndp", "ndp"] and all(d["completed"])
    for bad in ("ndp=,tcp", "ndp=x,tcp", "rotorlb=100KB"):
        with pytest.raises(ConfigError) as e:
            parse_rule(bad)
        assert e.value.field == "transport"


def test_reproduce_opera_runs_the_papers_size_only(tmp_path):
    with pytest.raises(ConfigError) as e:
        reproduce.run("opera", quick=True, out=tmp_path, tors=16)
    assert e.value.field == "tors"
    with pytest.raises(ConfigError) as e:
        reproduce.run("opera", quick=True, out=tmp_path, duration="100us")
    assert e.value.field == "duration"
    assert not (tmp_path / "runs").exists()
