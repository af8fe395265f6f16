"""`opendcn dashboard RUN_DIR`: one self-contained Plotly page of a run (circuits per slice,
the time-flow table, queues and throughput over time, the FCT distribution), written or
served on localhost; bad input gets a named error and exit 2."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import opendcn as od
from opendcn.network.dashboard import write_dashboard

EXE = Path(sys.executable).parent / "opendcn"


def _run_dir(tmp_path: Path, name: str = "r") -> Path:
    out = tmp_path / name
    r = subprocess.run([str(EXE), "run", "rotornet", "--nodes", "6", "--uplinks", "1", "--duration", "100us",
                        "--load", "0.3", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def test_a_run_folder_keeps_its_fabric_and_the_page_shows_every_section(tmp_path):
    run = _run_dir(tmp_path)
    fab = json.loads((run / "fabric.json").read_text())
    assert fab["slices"] == 5 and fab["circuits_total"] == len(fab["circuits"]) == 15 and fab["router"] == "vlb"
    r = subprocess.run([str(EXE), "dashboard", str(run), "--no-serve"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "dashboard.html" in r.stdout, r.stderr
    page = (run / "dashboard.html").read_text()
    for section in ("Circuits", "Time-flow table", "Queues", "Throughput", "Flow completion times"):
        assert f"<h2>{section}</h2>" in page
    assert page.count('class="plotly-graph-div"') == 4 and "Plotly.newPlot" in page
    assert "https://" not in page.split("</script>", 1)[1]          # the charts load nothing from the web


def test_table_routing_lists_its_time_flow_entries(tmp_path):
    net = od.Network(od.Config(nodes=4, uplinks=1, slice="10us"))
    net.deploy_topo(od.topology.round_robin(net.config, dimension=1))
    net.deploy_routing(od.routing.direct(net.circuits))
    res = net.run(od.workload.poisson("hadoop", 0.2), duration="60us")
    res.write(tmp_path / "t")
    fab = json.loads((tmp_path / "t" / "fabric.json").read_text())
    assert fab["router"] == "table" and fab["entries_total"] == len(fab["entries"]) > 0
    page = write_dashboard(tmp_path / "t").read_text()
    assert "<th>arrival slice</th>" in page and f"{fab['entries_total']} entries" in page


def test_bad_run_folders_get_a_named_error_and_exit_2(tmp_path):
    for arg, why in ((tmp_path / "nope", "no such folder"), (tmp_path, "not a run folder")):
        r = subprocess.run([str(EXE), "dashboard", str(arg), "--no-serve"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and "RUN_DIR" in r.stderr and why in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([str(EXE), "dashboard", str(tmp_path), "--port", "70000"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "--port" in r.stderr


def test_the_page_is_served_on_localhost_until_ctrl_c(tmp_path):
    run = _run_dir(tmp_path)
    p = subprocess.Popen([str(EXE), "dashboard", str(run), "--port", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL) and None)
    try:
        url = None
        t0 = time.time()
        while url is None and time.time() - t0 < 60:
            line = p.stdout.readline()
            m = re.search(r"serving (http://127\.0\.0\.1:\d+/dashboard\.html)", line)
            url = m.group(1) if m else None
        assert url, "no URL printed"
        body = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "Flow completion times" in body
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    assert "Traceback" not in err
