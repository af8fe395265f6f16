"""Sweeps whose workers run elsewhere: a real Dask scheduler and worker in another working
directory, and a worker that cannot see the output folder (the probe)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from opendcn.experiments.sweeps import sweep

TINY = {"arch": "rotornet", "duration": "60us", "options": {"nodes": 4, "uplinks": 1},
        "vary": {"load": [0.2, 0.5], "routing": ["vlb", "direct"], "seed": [1, 2]}}


def test_dask_workers_in_another_directory_write_under_a_relative_out(tmp_path, monkeypatch):
    """An external Dask scheduler with a worker started in another working directory: a
    relative ``--out`` still puts every point where the client reads it (before, each worker
    wrote relative to its own directory and the client reported success over nothing)."""
    import os
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bindir = Path(sys.executable).parent
    other, client = tmp_path / "worker_cwd", tmp_path / "client_cwd"
    other.mkdir()
    client.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    sched = subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                              "--no-dashboard"], cwd=other, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([str(bindir / "dask"), "worker", f"tcp://127.0.0.1:{port}", "--nworkers", "1",
                               "--nthreads", "1", "--no-dashboard"], cwd=other, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from distributed import Client

        deadline = time.time() + 60
        while True:
            try:
                with Client(f"tcp://127.0.0.1:{port}", timeout=5) as c:
                    if c.scheduler_info()["workers"]:
                        break
            except OSError:
                pass
            assert time.time() < deadline, "the Dask worker did not come up"
            time.sleep(0.5)
        monkeypatch.chdir(client)
        spec = {**TINY, "vary": {"load": [0.2, 0.5], "routing": ["vlb"], "seed": [1]}}
        recs = sweep(spec, "rel_out", executor="dask", scheduler=f"tcp://127.0.0.1:{port}")
        assert [r["status"] for r in recs] == ["ok", "ok"]
        assert len(list((client / "rel_out").rglob("summary.json"))) == 2
        assert not (other / "rel_out").exists()
    finally:
        worker.terminate()
        sched.terminate()
        worker.wait(timeout=30)
        sched.wait(timeout=30)


def test_a_worker_that_cannot_see_the_out_folder_stops_the_sweep_before_any_point(tmp_path):
    """The probe: a worker writes a file under OUT and the client reads it; a worker that
    writes into its own copy of the folder (another machine) is a named error, and no
    point has run."""
    from opendcn.errors import ConfigError
    from opendcn.experiments import sweeps as sw

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    class OtherMachine:
        def submit(self, fn, path):
            return fn(str(elsewhere / Path(path).name))

        def result(self, f):
            return f

    (tmp_path / "out").mkdir()
    with pytest.raises(ConfigError, match="do not share this folder") as e:
        sw._probe(OtherMachine(), tmp_path / "out")
    assert e.value.field == "--out"
    assert not list((tmp_path / "out").iterdir())        # the probe leaves nothing behind

