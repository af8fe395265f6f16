"""Sweeps on a real single-node Slurm (Debian's slurm-wlm and munge, started by
tests/slurm/start.sh; `.ci/run` installs them): the points go as one job array with the
resources asked for, a failing point is reported as failed, Ctrl-C cancels what was
submitted, --dry-run submits nothing, and without sbatch the CLI stops with a named error
and leaves nothing behind. Skipped, with the reason, where Slurm cannot start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from opendcn.experiments.sweeps import load_sweep, slurm_dry_run, sweep

HERE = Path(__file__).parent
EXE = Path(sys.executable).parent / "opendcn"
TINY = {"arch": "clos", "duration": "20us", "options": {"nodes": 4, "uplinks": 2},
        "vary": {"load": [0.1, 0.2]}}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    d = tmp_path_factory.mktemp("slurm")
    # start.sh bounds each of its steps (about 70 s at worst) and says why it failed; a
    # machine where Slurm cannot start skips these tests with that reason (shown by -rs)
    try:
        r = subprocess.run(["bash", str(HERE / "slurm" / "start.sh"), str(d)], capture_output=True, text=True,
                           timeout=120)
        why = (r.stdout + r.stderr).strip() if r.returncode != 0 else ""
    except subprocess.TimeoutExpired as e:
        why = f"start.sh did not finish in 120 s: {e.stdout!r} {e.stderr!r}"
    if why:
        subprocess.run(["bash", str(HERE / "slurm" / "stop.sh"), str(d)], timeout=30)
        pytest.skip(f"no test Slurm: {why}")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(d / "slurm.conf")
    yield d
    subprocess.run(["bash", str(HERE / "slurm" / "stop.sh"), str(d)], timeout=30)
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old


def _squeue() -> list[str]:
    r = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True, timeout=30)
    return [x for x in r.stdout.splitlines() if x.strip()]


def test_a_sweep_runs_as_one_job_array_with_the_resources_asked_for(slurm, tmp_path, capfd):
    out = tmp_path / "sw"
    recs = sweep({**TINY, "slurm": {"cpus": 1}}, out, executor="slurm", slurm={"time": "5min", "mem": "1GB"})
    # submitit's own log lines stay off stdout, and its warning at every status poll
    # without Slurm accounting is not repeated
    printed, warned = capfd.readouterr()
    assert "submitit" not in printed and "Bypassing sacct error" not in warned
    assert [r["status"] for r in recs] == ["ok", "ok"]
    assert all((out / r["path"] / "summary.json").is_file() for r in recs)
    # submitit names an array task's log <array id>_<task>_<rank>_log.out (the probe job
    # before it, <job id>_<rank>_log.out): both points are tasks of one array
    tasks = sorted(p.name for p in (out / "submitit").glob("*_*_0_log.out"))
    assert len(tasks) == 2 and len({n.split("_")[0] for n in tasks}) == 1, tasks
    array_id = tasks[0].split("_")[0]
    script = next(p for p in (out / "submitit").glob("*_submission.sh") if p.name.startswith(array_id)).read_text()
    assert "#SBATCH --time=5" in script and "#SBATCH --mem=1GB" in script and "#SBATCH --cpus-per-task=1" in script
    assert "#SBATCH --signal=USR2@75" in script          # a quarter of a 5-minute limit, not 90 s
    assert "#SBATCH --array=0-1" in script
    # resumable: nothing is submitted again
    assert [r["status"] for r in sweep(TINY, out, executor="slurm")] == ["skipped", "skipped"]


def test_a_point_that_fails_on_its_worker_is_reported_failed(slurm, tmp_path):
    flows = tmp_path / "flows.csv"
    flows.write_text("start_ps,src,dst,size_bytes\n0,0,1,1000\n")
    spec = {"arch": "clos", "duration": "20us", "options": {"nodes": 4, "uplinks": 2},
            "vary": {"flows_file": [str(flows)]}}
    sw = load_sweep(spec)
    flows.unlink()                         # gone by the time the job runs
    recs = sweep(sw, tmp_path / "sw", executor="slurm", slurm={"time": "5min"})
    assert recs[0]["status"] == "failed" and recs[0]["error"]
    assert (tmp_path / "sw" / "failed").is_dir()


def test_ctrl_c_cancels_the_submitted_jobs(slurm, tmp_path):
    spec = tmp_path / "long.toml"
    spec.write_text('arch = "clos"\nduration = "5s"\n[options]\nnodes = 16\nuplinks = 2\n'
                    '[vary]\nload = [0.5, 0.6, 0.7]\n')
    p = subprocess.Popen([str(EXE), "sweep", str(spec), "--out", str(tmp_path / "sw"), "--executor", "slurm",
                          "--slurm-time", "10min"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ},
                         # a pytest-xdist worker ignores SIGINT and a child would inherit that
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.time()
    while time.time() - t0 < 60 and not any("_" in j for j in _squeue()):
        time.sleep(0.5)
    assert any("_" in j for j in _squeue()), "the array was not submitted"
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    assert "cancelled" in err and "Traceback" not in err
    t0 = time.time()
    while time.time() - t0 < 30 and _squeue():
        time.sleep(0.5)
    assert _squeue() == []


def test_dry_run_prints_the_array_and_submits_nothing(tmp_path):
    toml = tmp_path / "s.toml"
    toml.write_text('arch = "clos"\nduration = "20us"\n[options]\nnodes = 4\nuplinks = 2\n[vary]\nload = [0.1, 0.2, 0.3]\n'
                    '[slurm]\ntime = "2h"\npartition = "long"\n')
    r = subprocess.run([str(EXE), "sweep", str(toml), "--out", str(tmp_path / "o"), "--executor", "slurm",
                        "--dry-run", "--slurm-mem", "8GB", "--workers", "2"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    # spelled as submitit writes the job script (minutes, GB), with the warning before the limit
    for line in ("#SBATCH --time=120", "#SBATCH --signal=USR2@90", "#SBATCH --partition=long", "#SBATCH --mem=8GB",
                 "#SBATCH --array=0-2%2"):
        assert line in r.stdout, r.stdout
    assert r.stdout.count("  task ") == 3
    assert not (tmp_path / "o").exists()
    text = slurm_dry_run(load_sweep(toml), tmp_path / "o", {}, None)
    assert "#SBATCH --array=0-2\n" in text + "\n"


def test_without_sbatch_the_cli_stops_with_a_named_error_and_leaves_nothing(tmp_path):
    toml = tmp_path / "s.toml"
    toml.write_text('arch = "clos"\nduration = "20us"\n[options]\nnodes = 4\nuplinks = 2\n[vary]\nload = [0.1]\n')
    env = {**os.environ, "PATH": str(EXE.parent)}
    r = subprocess.run([str(EXE), "sweep", str(toml), "--out", str(tmp_path / "o"), "--executor", "slurm"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and "sbatch is not on PATH" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("opt,value,field", [("--slurm-time", "soon", "--slurm.time"), ("--slurm-mem", "8", "--slurm.mem"),
                                             ("--slurm-partition", "a b", "--slurm.partition")])
def test_bad_slurm_options_are_named_errors(tmp_path, opt, value, field):
    toml = tmp_path / "s.toml"
    toml.write_text('arch = "clos"\nduration = "20us"\n[options]\nnodes = 4\n[vary]\nload = [0.1]\n')
    r = subprocess.run([str(EXE), "sweep", str(toml), "--out", str(tmp_path / "o"), "--executor", "slurm", "--dry-run",
                        opt, value], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and field in r.stderr and "Traceback" not in r.stderr, r.stderr
    bad = tmp_path / "b.toml"
    bad.write_text(toml.read_text() + '[slurm]\ngpus = 1\n')
    with pytest.raises(Exception) as e:
        load_sweep(bad)
    assert getattr(e.value, "field", "") == "sweep.slurm.gpus"
    assert json.dumps(load_sweep(toml).slurm) == "{}"
