"""benchmarks/opera_sim/make_htsim_topology.py: the opera-sim topology file it writes for
opendcn's default `opera` fabric is well formed (the format its docstring describes) and
the same on every run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import opendcn as od

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "opera_sim" / "make_htsim_topology.py"


def _ints(line: str) -> list[int]:
    return [int(x) for x in line.split(" ")]


def _distances(nb: np.ndarray) -> np.ndarray:
    """All-pairs hop counts of the undirected graph whose node v has neighbours nb[v]
    (-1: unreachable)."""
    n = len(nb)
    reach = np.eye(n, dtype=bool)
    dist = np.where(reach, 0, -1)
    frontier = reach
    d = 0
    while frontier.any():
        d += 1
        frontier = frontier[:, nb].any(axis=2) & ~reach
        dist[frontier] = d
        reach |= frontier
    return dist


def _numbers(chunk: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Lines of non-negative integers separated by single spaces: the integers and how
    many each line holds (parsed with numpy; the file has millions of them)."""
    c = np.frombuffer(chunk, np.uint8)
    nl = c == 10
    sep = nl | (c == 32)
    digit = (c >= 48) & (c <= 57)
    assert (sep | digit).all(), "a path line holds something else than digits and spaces"
    assert not sep[0] and not sep[-1] and not (sep[1:] & sep[:-1]).any(), "empty field in a path line"
    first = digit & ~np.concatenate([[False], digit[:-1]])
    last = digit & ~np.concatenate([digit[1:], [False]])
    tok = np.cumsum(first) - 1
    pos = np.flatnonzero(digit)
    place = 10.0 ** (np.flatnonzero(last)[tok[pos]] - pos)
    vals = np.rint(np.bincount(tok[pos], weights=(c[pos] - 48) * place)).astype(np.int64)
    line = np.cumsum(nl)[first]
    return vals, np.bincount(line, minlength=int(nl.sum()) + 1)


def _check_paths(chunk: bytes, up: np.ndarray, down: int, h: int, u: int) -> None:
    """One slice's path lines: one "a b q..." line per ordered ToR pair, whose uplink queues
    (numbered from h) lead from a to b over that slice's circuits, on a shortest path that
    avoids the rotor reconfiguring in the superslice."""
    n = len(up)
    vals, lens = _numbers(chunk)
    assert len(lens) == n * (n - 1)
    off = np.concatenate([[0], np.cumsum(lens)[:-1]])
    a, b, hops = vals[off], vals[off + 1], lens - 2
    assert ((a < n) & (b < n)).all(), "ToR id out of range in a path line"
    assert (a != b).all() and (hops >= 1).all(), "path line for a ToR to itself, or with no hop"
    assert (np.bincount(a * n + b, minlength=n * n) == 1 - np.eye(n, dtype=np.int64).ravel()).all(), \
        "not exactly one path per ordered ToR pair"
    cur = a.copy()
    for j in range(int(hops.max())):
        sel = hops > j
        q = vals[off[sel] + 2 + j]
        assert ((h <= q) & (q < h + u)).all(), f"queue outside the uplinks {h}..{h + u - 1}"
        assert (q - h != down).all(), "path uses the rotor that reconfigures in this superslice"
        nxt = up[cur[sel], q - h]
        assert (nxt != cur[sel]).all(), "path hop over a self-loop / missing circuit"
        cur[sel] = nxt
    assert (cur == b).all(), "path does not lead to its destination ToR"
    live = _distances(up[:, np.arange(u) != down])  # the slice's circuits but the reconfiguring rotor
    assert (hops == live[a, b]).all(), "path is not a shortest path of the slice"


def _check_topology(data: bytes) -> None:
    """The file describes opendcn's default `opera` fabric in the format of the script's
    docstring."""
    net = od.arch.opera()
    m = net.fabric_metrics
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
    starts = np.concatenate([[0], ends + 1])
    ends = np.concatenate([ends, [len(data)]])

    def lines(i: int, j: int | None = None) -> bytes:  # bytes of lines i..j (newlines between)
        return data[starts[i]:ends[i if j is None else j]]

    # header: hosts, downlinks (hosts per ToR), uplinks (rotors), ToRs
    hosts, h, u, n = _ints(lines(0).decode())
    assert (hosts, h, u, n) == (net.tors * net.hpr, net.hpr, net.u, net.tors) == (648, 6, 6, 108)
    # slices (ε, δ, r of every superslice of one cycle) and their lengths in ps
    slices, eps, delta, r = _ints(lines(1).decode())
    supers = m["cycle_ps"] // m["superslice_ps"]
    assert supers == n and slices == 3 * supers
    assert (eps, delta, r) == (m["eps_ps"], m["delta_ps"], m["reconf_ps"])
    assert eps + delta + r == m["superslice_ps"] and min(eps, delta, r) > 0
    assert len(starts) == 2 + slices + slices * (1 + n * (n - 1)), "wrong number of lines"

    # per slice, the ToR each (ToR, uplink) reaches, entry tor*u + uplink; -1 while reconfiguring
    mat = np.array([_ints(ln) for ln in lines(2, 1 + slices).decode().split("\n")])
    assert mat.shape == (slices, n * u)
    mat = mat.reshape(supers, 3, n, u)
    up, dl, rr = mat[:, 0], mat[:, 1], mat[:, 2]
    assert ((0 <= up) & (up < n)).all(), "ToR id out of range in an ε line"
    assert (dl == up).all(), "the δ slice must keep the ε slice's circuits"
    tors = np.arange(n)
    downs = []
    for s in range(supers):
        for k in range(u):  # every rotor's matching pairs ToRs: a permutation that is its own inverse
            col = up[s, :, k]
            assert (np.sort(col) == tors).all(), f"superslice {s} rotor {k}: not a permutation"
            assert (col[col] == tors).all(), f"superslice {s} rotor {k}: not a pairing (a->b but b-/->a)"
        off = [k for k in range(u) if (rr[s, :, k] == -1).all()]
        assert len(off) == 1, f"superslice {s}: one rotor reconfigures during r, got {off}"
        on = np.arange(u) != off[0]
        assert (rr[s][:, on] == up[s][:, on]).all(), f"superslice {s}: r slice changes a live rotor"
        downs.append(off[0])
    # staggered: the rotors reconfigure in turn, and only the one that reconfigured changes matching
    assert downs == [(downs[0] + s) % u for s in range(supers)]
    for s in range(supers):
        changed = [k for k in range(u) if (up[(s + 1) % supers, :, k] != up[s, :, k]).any()]
        assert changed == [downs[s]], f"superslice {s} -> {s + 1}: rotors {changed} changed"
    # over one cycle the matchings connect every pair of distinct ToRs
    a = np.repeat(tors, u * supers).reshape(n, u * supers)
    b = up.transpose(1, 0, 2).reshape(n, u * supers)
    assert len({(x, y) for x, y in zip(a.ravel().tolist(), b.ravel().tolist()) if x < y}) == n * (n - 1) // 2

    # per slice: its index, then one path per ordered ToR pair
    start = 2 + slices
    size = 1 + n * (n - 1)
    checked: dict[int, bytes] = {}
    for i in range(slices):
        first = start + i * size
        assert lines(first) == str(i).encode(), f"slice header {lines(first)!r}, expected {i}"
        s = i // 3
        paths = lines(first + 1, first + size - 1)
        if checked.get(s) != paths:  # the three slices of a superslice usually share paths
            _check_paths(paths, up[s], downs[s], h, u)
            checked[s] = paths


def test_make_htsim_topology_writes_a_well_formed_reproducible_file(tmp_path):
    outs = [tmp_path / "opera_a.txt", tmp_path / "opera_b.txt"]
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), str(o)], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for o in outs]
    for p in procs:  # two runs side by side (about 2.5 s each)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    data = outs[0].read_bytes()
    assert data == outs[1].read_bytes(), "two runs wrote different files"
    _check_topology(data)
